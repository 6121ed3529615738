#!/usr/bin/env python3
"""The source layout docs/arch.md and docs/sandbox.md promise, checked from the tree (TAP):
- no folder of headers (include/vck/*, sandbox/include/vck/sandbox/*) holds more than 40;
- no header of the library (include/vck/) and no product binary (vck-controller, vck-fetch)
  includes the sandbox's headers;
- every sandbox header is in namespace vck::sandbox;
- the sandbox's areas are layered as documented: each includes only the areas below it
  (validation, admission, storage, auth, cluster, server, then the kits at the top), but for
  auth/ reading server/'s plain request type (api_request.hpp);
- no class in include/vck/volumes/ is longer than 400 lines (a namespace-level class or
  struct, from its `class X` line to its closing `};`).
Usage: layout_test.py (VCK_SOURCE_ROOT: the source tree, default this file's ../..)."""
import os
import re
import sys

ROOT = os.environ.get("VCK_SOURCE_ROOT") or os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
SANDBOX = os.path.join(ROOT, "sandbox", "include", "vck", "sandbox")
ORDER = ["validation", "admission", "storage", "auth", "cluster", "server", "(top)"]
ALLOWED_UP = {("auth", "server", "api_request.hpp")}
INCLUDE = re.compile(r'#include <vck/sandbox/(?:(\w+)/)?(\w+\.hpp)>')

checks = []


def check(name, problems):
    checks.append((name, problems))


def headers_under(top):
    for dirpath, _, files in os.walk(top):
        for f in files:
            if f.endswith(".hpp"):
                yield dirpath, f


crowded = []
for top in (os.path.join(ROOT, "include", "vck"), SANDBOX):
    counts = {}
    for d, _ in headers_under(top):
        counts[d] = counts.get(d, 0) + 1
    crowded += [f"{os.path.relpath(d, ROOT)}: {n} headers" for d, n in sorted(counts.items()) if n > 40]
check("no folder of headers holds more than 40", crowded)

leaks = []
product = [os.path.join(d, f) for d, f in headers_under(os.path.join(ROOT, "include", "vck"))]
product += [os.path.join(ROOT, "bin", b) for b in ("vck_controller.cpp", "vck_fetch.cpp")]
for p in product:
    if INCLUDE.search(open(p, encoding="utf-8").read()):
        leaks.append(os.path.relpath(p, ROOT))
check("no library header or product binary includes the sandbox's headers", leaks)

areas = {}
for d, f in headers_under(SANDBOX):
    rel = os.path.relpath(d, SANDBOX)
    areas[f] = "(top)" if rel == "." else rel
check("the sandbox's headers are in the documented areas",
      [f"{a}/{f}" for f, a in sorted(areas.items()) if a not in ORDER])
check("the sandbox has headers in every area", [a for a in ORDER if a not in areas.values()])

outside_ns, upward = [], []
for f, a in sorted(areas.items()):
    path = os.path.join(SANDBOX, "" if a == "(top)" else a, f)
    text = open(path, encoding="utf-8").read()
    if not re.search(r"^namespace vck::sandbox\b", text, re.M):
        outside_ns.append(f"{a}/{f}")
    if a not in ORDER:
        continue
    for m in INCLUDE.finditer(text):
        b = m.group(1) or "(top)"
        if b in ORDER and ORDER.index(b) > ORDER.index(a) and (a, b, m.group(2)) not in ALLOWED_UP:
            upward.append(f"{a}/{f} includes {b}/{m.group(2)}")
check("every sandbox header is in namespace vck::sandbox", outside_ns)
check("each sandbox area includes only the areas below it", upward)

CLASS_OPEN = re.compile(r"^(?:template <[^>]*>\s*)?(?:class|struct) (\w+)\b[^;]*$")
long_classes = []
VOLUMES = os.path.join(ROOT, "include", "vck", "volumes")
for f in sorted(os.listdir(VOLUMES)):
    if not f.endswith(".hpp"):
        continue
    name, start = None, 0
    for n, line in enumerate(open(os.path.join(VOLUMES, f), encoding="utf-8"), 1):
        if name is None:
            m = CLASS_OPEN.match(line)
            if m:
                name, start = m.group(1), n
        elif line.startswith("};"):
            if n - start + 1 > 400:
                long_classes.append(f"volumes/{f}: {name} has {n - start + 1} lines")
            name = None
check("no class in include/vck/volumes/ is longer than 400 lines", long_classes)

print(f"1..{len(checks)}")
failed = 0
for i, (name, problems) in enumerate(checks, 1):
    if problems:
        failed += 1
        print(f"not ok {i} - {name}")
        for p in problems[:40]:
            print(f"#   {p}")
    else:
        print(f"ok {i} - {name}")
sys.exit(1 if failed else 0)

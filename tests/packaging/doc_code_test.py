#!/usr/bin/env python3
"""The code the documentation shows is code that compiles (TAP, one line per block).

- README.md: every ```cpp block is compiled (-fsyntax-only, with the flags vck.pc gives):
  its #include lines at file scope, the rest as the body of main().
- docs/first-operator.md: every ```cpp block is a verbatim excerpt of
  examples/configmap-mirror/ (leading indentation aside), which the build compiles and
  examples/configmap-mirror/mirror_test.cpp tests, so the page cannot drift from code that works.

Usage: doc_code_test.py (VCK_SOURCE_ROOT and VCK_BUILD_ROOT from the test environment).
"""
import os
import re
import subprocess
import sys
import tempfile
import textwrap

SRC = os.environ.get("VCK_SOURCE_ROOT", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("VCK_BUILD_ROOT", os.path.join(SRC, "build"))
CXX = os.environ.get("CXX", "c++").split()

failures = 0


def report(ok, what, detail=""):
    global failures
    print(("ok - " if ok else "not ok - ") + what)
    if not ok:
        failures += 1
        for line in detail.splitlines()[:30]:
            print("#   " + line)


def cpp_blocks(path):
    text = open(path, encoding="utf-8").read()
    return [(text[: m.start()].count("\n") + 2, m.group(1))
            for m in re.finditer(r"^```cpp\n(.*?)^```", text, re.S | re.M)]


def compile_snippet(code):
    includes = [l for l in code.splitlines() if l.startswith("#include")]
    body = [l for l in code.splitlines() if not l.startswith("#include")]
    program = "\n".join(includes) + "\n\nint main() {\n" + textwrap.indent("\n".join(body), "    ") + "\n}\n"
    with tempfile.NamedTemporaryFile("w", suffix=".cpp", delete=False) as f:
        f.write(program)
        name = f.name
    try:
        r = subprocess.run(CXX + ["-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", "-DBOOST_ASIO_NO_DEPRECATED",
                                  "-I" + os.path.join(SRC, "include"), "-I" + os.path.join(BUILD, "include"), name],
                           capture_output=True, text=True, timeout=900)
        return r.returncode == 0 and "warning:" not in r.stderr, r.stderr
    finally:
        os.unlink(name)


readme = os.path.join(SRC, "README.md")
blocks = cpp_blocks(readme)
report(len(blocks) > 0, "README.md shows C++ code")
for line, code in blocks:
    ok, err = compile_snippet(code)
    report(ok, f"README.md:{line}: the C++ block compiles without warnings", err)

page = os.path.join(SRC, "docs", "first-operator.md")
if os.path.exists(page):
    example_dir = os.path.join(SRC, "examples", "configmap-mirror")
    sources = {n: open(os.path.join(example_dir, n), encoding="utf-8").read()
               for n in sorted(os.listdir(example_dir)) if n.endswith((".hpp", ".cpp"))}

    def normalise(s):
        return [l.strip() for l in s.strip("\n").splitlines()]

    blocks = cpp_blocks(page)
    report(len(blocks) > 0, "docs/first-operator.md shows C++ code")
    for line, code in blocks:
        want = normalise(code)
        found = None
        for name, text in sources.items():
            lines = normalise(text)
            for i in range(len(lines) - len(want) + 1):
                if lines[i:i + len(want)] == want:
                    found = name
                    break
            if found:
                break
        report(found is not None,
               f"docs/first-operator.md:{line}: the C++ block is a verbatim excerpt of examples/configmap-mirror/"
               + (found or ""), "\n".join(want[:10]))
else:
    report(False, "docs/first-operator.md exists")

sys.exit(1 if failures else 0)

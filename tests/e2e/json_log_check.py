#!/usr/bin/env python3
"""Checks a vck-controller log written with --log-format json (tests/e2e/observability_test.sh).

Every line must be one JSON object with ts, level and msg. Options:
  --present MSG       some line has this msg
  --absent MSG        no line has this msg
  --reconcile-keys    "Reconcile finished" and "Reconciler error" lines carry controller,
                      namespace, name and reconcileID (errors also error), reconcileIDs unique
  --no-error-for NAME no "Reconciler error" line for an object NAME that says it is not found
Prints what is wrong and exits 1, or exits 0.
"""
import argparse
import json
import sys

RECONCILE_KEYS = ("controller", "namespace", "name", "reconcileID")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("log")
    p.add_argument("--present", action="append", default=[])
    p.add_argument("--absent", action="append", default=[])
    p.add_argument("--reconcile-keys", action="store_true")
    p.add_argument("--no-error-for", action="append", default=[])
    a = p.parse_args()
    problems, lines = [], []
    with open(a.log, encoding="utf-8", errors="replace") as f:
        for n, text in enumerate(f, 1):
            try:
                o = json.loads(text)
            except ValueError:
                problems.append(f"line {n} is not JSON: {text.rstrip()[:200]}")
                continue
            if not isinstance(o, dict) or not all(k in o for k in ("ts", "level", "msg")):
                problems.append(f"line {n} lacks ts, level or msg: {text.rstrip()[:200]}")
                continue
            lines.append((n, o))
    msgs = {o["msg"] for _, o in lines}
    problems += [f'no line says "{m}"' for m in a.present if m not in msgs]
    problems += [f'a line says "{m}"' for m in a.absent if m in msgs]
    if a.reconcile_keys:
        ids = {}
        for n, o in lines:
            if o["msg"] not in ("Reconcile finished", "Reconciler error"):
                continue
            want = RECONCILE_KEYS + (("error",) if o["msg"] == "Reconciler error" else ())
            missing = [k for k in want if not o.get(k) and not (k == "namespace" and k in o)]
            if missing:
                problems.append(f"line {n} ({o['msg']}) lacks {', '.join(missing)}")
            rid = o.get("reconcileID")
            if rid in ids:
                problems.append(f"line {n} repeats the reconcileID of line {ids[rid]}")
            ids[rid] = n
    for name in a.no_error_for:
        for n, o in lines:
            err = str(o.get("error", "")).lower()
            if o["msg"] == "Reconciler error" and o.get("name") == name and ("404" in err or "not found" in err):
                problems.append(f"line {n}: the deletion of {name} logged a reconcile error: {o['error']}")
    print("\n".join(problems))
    print(f"{len(lines)} JSON lines checked")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

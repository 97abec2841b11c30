#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Keeps docs/conformance.md from going stale against the suite itself:

- every check `gpuhal-conform --list` names has a row "| `name` | ..." in
  the document, and no row names a check the suite does not have;
- every example "conform run: OK" line says "of N checks listed" with the
  suite's N, and its counts add up to N + 1 (the load step counts as
  passed).

usage: check_conformance_doc.py GPUHAL_CONFORM DOC
Prints "conformance doc: OK, N checks" or what is wrong (exit status 1).
"""
import re
import subprocess
import sys


def main(conform, doc):
    listed = subprocess.run([conform, "--list"], capture_output=True, text=True, check=True).stdout
    checks = [line.split()[0] for line in listed.splitlines() if line.strip()]
    text = open(doc, encoding="utf-8").read()
    objects = {c.split(".")[0] for c in checks}
    rows = re.findall(r"^\| `([a-z0-9_]+\.[a-z0-9_]+)` \|", text, re.M)
    problems = [f"no row for check {c}" for c in checks if c not in rows]
    problems += [f"a row for {r}, which the suite does not list" for r in rows
                 if r.split(".")[0] in objects and r not in checks]
    runs = re.findall(r"^conform run: OK .*?: (\d+) passed, (\d+) failed, (\d+) unsupported .*?, (\d+) skipped, "
                      r"of (\d+) checks listed$", text, re.M)
    if not runs:
        problems.append("no example 'conform run: OK' line")
    for passed, failed, unsupported, skipped, listed_n in runs:
        if int(listed_n) != len(checks):
            problems.append(f"an example run says 'of {listed_n} checks listed'; the suite lists {len(checks)}")
        total = int(passed) + int(failed) + int(unsupported) + int(skipped)
        if total != len(checks) + 1:
            problems.append(f"an example run's counts add up to {total}, not {len(checks) + 1} (checks + load)")
    for p in problems:
        print(p)
    print(f"conformance doc: {'OK' if not problems else 'STALE'}, {len(checks)} checks")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs gpuhal-conform over a plugin and checks the run against what the
suite and the plugin say of themselves, instead of counts written down:

- every check `gpuhal-conform --list` names (of those --only selects) ran
  and has a result: none was lost;
- none failed, and the plugin loaded;
- what --skip names was skipped, and nothing else;
- every unsupported check needs a capability (its `needs`) that the plugin
  does not claim (`gpuhal-info --json` over the same plugin and settings),
  or is named with --unsupported CHECK: a reason of this machine or device
  (one device, too little memory), given by the test that runs it;
- every check named with --unsupported was unsupported (a stale
  expectation fails too).

usage: check_conform_run.py --conform GPUHAL_CONFORM --info GPUHAL_INFO
                            [--unsupported CHECK]... -- [CONFORM ARGS]... PLUGIN
Prints "conform run: OK" and a summary, or what is wrong (exit status 1).
"""
import argparse
import fnmatch
import json
import os
import subprocess
import sys


def matcher(pattern):
    # gpuhal-conform's rule: a name without a dot names every check of that object.
    if "." not in pattern and not any(c in pattern for c in "*?["):
        pattern += ".*"
    return lambda name: fnmatch.fnmatchcase(name, pattern)


def run_json(cmd, env=None):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except json.JSONDecodeError:
        return p.returncode, None, p.stdout + p.stderr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--conform", required=True)
    ap.add_argument("--info", required=True)
    ap.add_argument("--unsupported", action="append", default=[])
    ap.add_argument("rest", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    rest = a.rest[1:] if a.rest and a.rest[0] == "--" else a.rest
    if not rest:
        ap.error("no plugin given")
    plugin = rest[-1]
    only, skip = [], []
    for flag, value in zip(rest, rest[1:]):
        if flag == "--only":
            only.append(matcher(value))
        elif flag == "--skip":
            skip.append(matcher(value))

    listing = subprocess.run([a.conform, "--list"], capture_output=True, text=True, check=True).stdout
    listed = [line.split()[0] for line in listing.splitlines() if line.strip()]
    expected = [n for n in listed if not only or any(m(n) for m in only)]

    code, run, err = run_json([a.conform, "--json"] + rest)
    if run is None:
        print(f"gpuhal-conform printed no JSON (exit {code}):\n{err}")
        return 1
    info_env = dict(os.environ, GPUHAL_BACKEND=plugin)
    _, info, err = run_json([a.info, "--json"], env=info_env)
    if info is None or not info.get("ok"):
        print(f"gpuhal-info could not describe {plugin}: {err if info is None else info.get('error')}")
        return 1
    claimed = {name for name, has in info["capabilities"].items() if has}

    problems = []
    results = {r["check"]: r for r in run["results"]}
    load = results.pop("load", None)
    if not load or load["outcome"] != "pass":
        problems.append(f"the plugin did not load: {load['detail'] if load else 'no load step'}")
    for name in expected:
        if name not in results:
            problems.append(f"{name}: listed, but no result (lost)")
    for name in results:
        if name not in expected:
            problems.append(f"{name}: a result for a check --list does not name")
    needs_count = {}
    for name, r in results.items():
        outcome = r["outcome"]
        skipped_wanted = any(m(name) for m in skip)
        if outcome == "fail":
            problems.append(f"{name}: failed: {r['detail']}")
        elif outcome == "skipped" and not skipped_wanted:
            problems.append(f"{name}: skipped without --skip")
        elif skipped_wanted and outcome != "skipped":
            problems.append(f"{name}: --skip names it, but it is {outcome}")
        elif outcome == "unsupported":
            needs = r.get("needs", "")
            if name in a.unsupported:
                continue
            if not needs:
                problems.append(f"{name}: unsupported for a reason of the machine, not named with --unsupported: "
                                f"{r['detail']}")
            elif needs in claimed:
                problems.append(f"{name}: unsupported, needing '{needs}', which the plugin claims: {r['detail']}")
            else:
                needs_count[needs] = needs_count.get(needs, 0) + 1
    for name in a.unsupported:
        if results.get(name, {}).get("outcome") != "unsupported":
            problems.append(f"{name}: expected unsupported (--unsupported), but it is "
                            f"{results.get(name, {}).get('outcome', 'missing')}")
    if problems:
        print(f"conform run over {plugin}: {len(problems)} problem(s)")
        for p in problems:
            print("  " + p)
        return 1
    why = ", ".join(f"{n} x{c}" for n, c in sorted(needs_count.items()))
    print(f"conform run: OK {run['plugin']}: {run['passed']} passed, {run['failed']} failed, "
          f"{run['unsupported']} unsupported (needs: {why or 'none'}; of this machine: "
          f"{', '.join(a.unsupported) or 'none'}), {run['skipped']} skipped, of {len(expected)} checks listed")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A program's first kernel builds on the host backend against PoCL, each side
in fresh processes, in alternation (gpuhal-bench-cold-build says what one
process measures: four kernel sources built one after the other, and the time
to the first kernel's result).

Rows:
  fresh cache      gpuhal with an empty GPUHAL_KERNEL_CACHE (a machine's first
                   program: nothing compiled yet, the precompiled prefix built
                   beside the first module) against PoCL with POCL_KERNEL_CACHE=0
  used cache       gpuhal with new sources in a cache that holds the
                   precompiled prefix (any later program) against the same PoCL

Usage: cold_build.py [--build DIR] [--repetitions N] [--json FILE]
Prints medians with min-max and PoCL / gpuhal ratios (above 1: gpuhal faster).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile


def run(binary, side, salt, env):
    out = subprocess.run([binary, side, salt], env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("GPUHAL_BUILD_DIR", "build"))
    ap.add_argument("--repetitions", type=int, default=10)
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    binary = os.path.join(args.build, "bin", "gpuhal-bench-cold-build")
    if not os.path.exists(binary):
        print("cold_build.py: %s not built (needs OpenCL headers)" % binary)
        return 0
    base = dict(os.environ, GPUHAL_BACKEND="host")
    base.pop("GPUHAL_KERNEL_CACHE", None)
    pocl_env = dict(base, POCL_KERNEL_CACHE="0")
    results = {"fresh cache": {"gpuhal": [], "pocl": []}, "used cache": {"gpuhal": [], "pocl": []}}
    used = tempfile.mkdtemp(prefix="gpuhal-cold-used-")
    os.chmod(used, 0o700)
    pocl_skipped = None
    try:
        run(binary, "gpuhal", "warm-up", dict(base, GPUHAL_KERNEL_CACHE=used))  # the prefix, built once
        for i in range(args.repetitions):
            fresh = tempfile.mkdtemp(prefix="gpuhal-cold-fresh-")
            os.chmod(fresh, 0o700)
            try:
                salt = "repetition %d" % i
                order = [("fresh cache", "gpuhal", dict(base, GPUHAL_KERNEL_CACHE=fresh)),
                         ("used cache", "gpuhal", dict(base, GPUHAL_KERNEL_CACHE=used)),
                         ("fresh cache", "pocl", pocl_env)]
                if i % 2:
                    order.reverse()
                for row, side, env in order:
                    r = run(binary, side, salt, env)
                    if "skipped" in r:
                        pocl_skipped = r["skipped"]
                        continue
                    results[row][side].append(r)
                    if side == "pocl":
                        results["used cache"]["pocl"].append(r)  # PoCL's cache is off: the same build
            finally:
                shutil.rmtree(fresh, ignore_errors=True)
    finally:
        shutil.rmtree(used, ignore_errors=True)

    table = {}
    print("%-12s %-17s %-26s %-26s %s" % ("row", "measure", "gpuhal median (min-max)", "PoCL median (min-max)",
                                          "PoCL / gpuhal"))
    for row, sides in results.items():
        for measure in ("build_ms", "first_result_ms"):
            g = summary([r[measure] for r in sides["gpuhal"]])
            p = summary([r[measure] for r in sides["pocl"]]) if sides["pocl"] else None
            table["%s %s" % (row, measure)] = {"gpuhal": g, "pocl": p}
            ratio = "%.2fx" % (p["median"] / g["median"]) if p else "PoCL skipped: %s" % pocl_skipped
            print("%-12s %-17s %-26s %-26s %s" % (
                row, measure, "%.0f ms (%.0f-%.0f)" % (g["median"], g["min"], g["max"]),
                "%.0f ms (%.0f-%.0f)" % (p["median"], p["min"], p["max"]) if p else "-", ratio))
    print("%d repetitions per side, alternating; each a fresh process building four kernel sources" %
          args.repetitions)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(table, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

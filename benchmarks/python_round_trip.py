# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The overhead of gpuhal's Python layer: a small to_device + copy_to_host
round trip from Python against the same through the C++ API, timed the
same way (batches of round trips; median and spread of the batches), in
one run, alternating the two sides.

    python benchmarks/python_round_trip.py --cpp build/bin/gpuhal-bench-round-trip [--bytes 1024]

Needs the gpuhal package installed (pip install .). Prints a table, or
JSON with --json.
"""

import argparse
import json

import gpuhal
from round_trip_timing import cpp_batches, python_batches, summary, summary_text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpp", required=True, help="the gpuhal-bench-round-trip program")
    ap.add_argument("--bytes", type=int, default=1024)
    ap.add_argument("--batch", type=int, default=20000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two sides")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    py_new, py_into, cpp_new, cpp_into = [], [], [], []
    for _ in range(args.rounds):
        n, i = cpp_batches(args.cpp, args.bytes, args.batch, args.repeats)
        cpp_new += n
        cpp_into += i
        n, i = python_batches(gpuhal.to_device, args.bytes, args.batch, args.repeats)
        py_new += n
        py_into += i
    rows = {
        "copy_to_host() (new array)": (summary(py_new), summary(cpp_new)),
        "copy_to_host(out)": (summary(py_into), summary(cpp_into)),
    }
    result = {"backend": gpuhal.backend(), "bytes": args.bytes, "batch": args.batch,
              "samples_per_side": len(py_new),
              "rows": {k: {"python_ns": p, "cpp_ns": c, "overhead_ns": p["median"] - c["median"],
                           "ratio": p["median"] / c["median"]} for k, (p, c) in rows.items()}}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"backend {result['backend']}, {args.bytes} B round trip (to_device + copy_to_host), "
          f"{len(py_new)} batches of {args.batch} per side; ns per round trip, median [min, max]")
    print(f"{'':28} {'Python':>26} {'C++':>26} {'overhead':>10} {'ratio':>6}")
    for k, v in result["rows"].items():
        print(f"{k:28} {summary_text(v['python_ns'])} {summary_text(v['cpp_ns'])} "
              f"{v['overhead_ns']:>10.0f} {v['ratio']:>6.2f}")


if __name__ == "__main__":
    main()

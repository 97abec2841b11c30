# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""N1: a small to_device + copy_to_host round trip through numba-cuda from
Python against the same through gpuhal's C++ API, on the same GPU, timed
the same way (batches of round trips; median and spread of the batches), in
one run, alternating the two sides.

    python benchmarks/numba_round_trip.py --cpp build/bin/gpuhal-bench-round-trip [--bytes 4096]

gpuhal's side runs the gpuhal-bench-round-trip program over the backend
GPUHAL_BACKEND names (cuda when unset). Needs numba-cuda and a GPU;
NUMBA_ENABLE_CUDASIM=1 runs Numba's simulator instead, which checks the
script and measures nothing. The goal: gpuhal >= 20x faster. Prints a
table, or JSON with --json.
"""

import argparse
import json
import os

from numba import cuda

from round_trip_timing import cpp_batches, python_batches, summary, summary_text


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cpp", required=True, help="the gpuhal-bench-round-trip program")
    ap.add_argument("--bytes", type=int, default=4096)
    ap.add_argument("--batch", type=int, default=2000)
    ap.add_argument("--gpuhal-batch", type=int, default=20000, help="gpuhal's batch (its round trips are shorter)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the two sides")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.bytes < 8 or args.batch < 1 or args.gpuhal_batch < 1 or args.repeats < 1 or args.rounds < 1:
        ap.error("--bytes must be >= 8 and the counts >= 1")
    nb_new, nb_into, gh_new, gh_into = [], [], [], []
    for _ in range(args.rounds):
        env = dict(os.environ)
        env.setdefault("GPUHAL_BACKEND", "cuda")
        n, i = cpp_batches(args.cpp, args.bytes, args.gpuhal_batch, args.repeats, env)
        gh_new += n
        gh_into += i
        n, i = python_batches(cuda.to_device, args.bytes, args.batch, args.repeats)
        nb_new += n
        nb_into += i
    simulated = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"
    if simulated:
        device = "Numba's simulator"
    else:
        name = cuda.get_current_device().name
        device = name.decode() if isinstance(name, bytes) else str(name)
    rows = {
        "copy_to_host() (new array)": (summary(nb_new), summary(gh_new)),
        "copy_to_host(out)": (summary(nb_into), summary(gh_into)),
    }
    result = {
        "gpuhal_backend": os.environ.get("GPUHAL_BACKEND", "cuda"),
        "numba": device,
        "bytes": args.bytes,
        "samples_per_side": len(nb_new),
        "goal": ">= 20x",
        "rows": {k: {"numba_ns": nb, "gpuhal_ns": gh, "speedup": nb["median"] / gh["median"],
                     "status": "simulated: not a measurement" if simulated else
                     "MET" if nb["median"] / gh["median"] >= 20 else "MISSED"}
                 for k, (nb, gh) in rows.items()},
    }
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"N1: {args.bytes} B round trip (to_device + copy_to_host), numba-cuda on {result['numba']} against "
          f"gpuhal's C++ API on {result['gpuhal_backend']}; {len(nb_new)} batches per side; ns per round trip, "
          f"median [min, max]; goal: gpuhal >= 20x faster")
    print(f"{'':28} {'numba-cuda':>26} {'gpuhal':>26} {'speedup':>8}  status")
    for k, v in result["rows"].items():
        print(f"{k:28} {summary_text(v['numba_ns'])} {summary_text(v['gpuhal_ns'])} {v['speedup']:>8.1f}  "
              f"{v['status']}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""G1 from Python: 100 small kernel launches and one device-to-device copy,
then a synchronisation, submitted directly against the same work captured
into a graph and launched; beside CuPy doing the same (a RawKernel of the
same source, submitted directly and through a CUDA graph from
Stream.begin_capture) when CuPy and a GPU are there. One process, the
sides alternated; medians of batches with their spread.

    python benchmarks/python_graph_peers.py [--repeats 9] [--json]

Needs the gpuhal package installed (pip install .). On a machine without
CuPy (or a GPU) only gpuhal's two rows run.
"""

import argparse
import json
import statistics

import numpy as np

import gpuhal
from peer_timing import batches

SOURCE = """
GPUHAL_KERNEL void bump(GPUHAL_GLOBAL float *x, float a, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < (unsigned)n) x[i] = x[i] * a + 1.0f;
}
"""
CUDA_SOURCE = """
extern "C" __global__ void bump(float *x, float a, int n) {
  unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < (unsigned)n) x[i] = x[i] * a + 1.0f;
}
"""
N = 256
LAUNCHES = 100


def gpuhal_sides():
    k = gpuhal.compile(SOURCE).bump
    s = gpuhal.stream()
    x = gpuhal.to_device(np.zeros(N, np.float32))
    y = gpuhal.device_array(N, np.float32)
    a = np.float32(0.5)

    def submit():
        for _ in range(LAUNCHES):
            k[1, N, s](x, a, N)
        y.copy_to_device(x, stream=s)

    def direct():
        submit()
        s.synchronize()

    sides = {"gpuhal direct": direct}
    if gpuhal.current_context().supports("graphs"):
        with s.capture() as g:
            submit()

        def graph():
            g.launch()
            s.synchronize()

        sides["gpuhal graph"] = graph
    return sides


def cupy_sides():
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() == 0:
            return {}
    except Exception:  # not installed, or no GPU / driver
        return {}
    k = cp.RawKernel(CUDA_SOURCE, "bump")
    s = cp.cuda.Stream(non_blocking=True)
    x = cp.zeros(N, cp.float32)
    y = cp.empty(N, cp.float32)
    a = np.float32(0.5)

    def submit():
        for _ in range(LAUNCHES):
            k((1,), (N,), (x, a, np.int32(N)), stream=s)
        y.data.copy_from_device_async(x.data, x.nbytes, stream=s)

    def direct():
        submit()
        s.synchronize()

    with s:
        s.begin_capture()
        submit()
        g = s.end_capture()

    def graph():
        g.launch(stream=s)
        s.synchronize()

    return {"CuPy direct": direct, "CuPy graph": graph}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the sides")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sides = dict(gpuhal_sides())
    sides.update(cupy_sides())
    samples = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            samples[name] += batches(fn, args.batch, args.repeats)
    rows = {name: {"median_us": statistics.median(v), "min_us": min(v), "max_us": max(v)}
            for name, v in samples.items()}
    for peer in ("gpuhal", "CuPy"):
        if f"{peer} direct" in rows and f"{peer} graph" in rows:
            rows[f"{peer} graph"]["speedup_over_direct"] = (rows[f"{peer} direct"]["median_us"] /
                                                            rows[f"{peer} graph"]["median_us"])
    if "gpuhal graph" in rows and "CuPy graph" in rows:
        rows["gpuhal graph"]["vs_cupy_graph"] = rows["CuPy graph"]["median_us"] / rows["gpuhal graph"]["median_us"]
    result = {"backend": gpuhal.backend(), "launches": LAUNCHES, "elements": N, "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"backend {result['backend']}: {LAUNCHES} launches of {N} work-items + one copy + synchronize; "
          f"us per iteration, median [min, max]")
    for name, r in rows.items():
        extra = "".join(f"  {k} {v:.2f}x" for k, v in r.items() if k not in ("median_us", "min_us", "max_us"))
        print(f"{name:15} {r['median_us']:10.1f} [{r['min_us']:.1f}, {r['max_us']:.1f}]{extra}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""H6 from Python: a 256-bin histogram of 64 MiB of random bytes through
shared then global atomics, gpuhal's portable kernel beside the same kernel
as a CuPy RawKernel (CUDA C) when CuPy and a GPU are there. Every side's
counts are checked against NumPy's before anything is timed. One process,
the sides alternated; medians of batches with their spread, and GB/s of
input.

    python benchmarks/python_atomics_peers.py [--mib 64] [--repeats 9] [--json]

Needs the gpuhal package installed (pip install .). On a machine without
CuPy (or a GPU) only gpuhal's row runs.
"""

import argparse
import json
import statistics

import numpy as np

import gpuhal
from peer_timing import batches

SOURCE = """
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  unsigned lid = gpuhal_local_id(0);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0)) local_bins[b] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0))
    gpuhal_atomic_add_explicit(&local_bins[data[i]], 1u, GPUHAL_MEMORY_ORDER_RELAXED, GPUHAL_MEMORY_SCOPE_WORK_GROUP);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0))
    if (local_bins[b]) gpuhal_atomic_add(&bins[b], local_bins[b]);
}
"""
CUDA_SOURCE = """
extern "C" __global__ void histogram(const unsigned char *data, unsigned n, unsigned *bins) {
  __shared__ unsigned local_bins[256];
  unsigned lid = threadIdx.x;
  for (unsigned b = lid; b < 256; b += blockDim.x) local_bins[b] = 0;
  __syncthreads();
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd_block(&local_bins[data[i]], 1u);
  __syncthreads();
  for (unsigned b = lid; b < 256; b += blockDim.x)
    if (local_bins[b]) atomicAdd(&bins[b], local_bins[b]);
}
"""
BLOCK = 256


def grid_for(n_bytes):
    # Enough groups to fill a large GPU, few enough that the per-group
    # flush of 256 bins stays small next to the input.
    return max(1, min(1024, n_bytes // (BLOCK * 64)))


def gpuhal_side(data, want):
    k = gpuhal.compile(SOURCE).histogram
    s = gpuhal.stream()
    d = gpuhal.to_device(data, stream=s)
    bins = gpuhal.device_array(256, np.uint32, stream=s)
    grid = grid_for(data.size)

    def run():
        bins.copy_to_device(np.zeros(256, np.uint32), stream=s)
        k[grid, BLOCK, s](d, np.uint32(data.size), bins)
        s.synchronize()

    run()
    got = bins.copy_to_host()
    if not np.array_equal(got, want):
        raise SystemExit("gpuhal's histogram counts are wrong")
    return {"gpuhal": run}


def cupy_side(data, want):
    try:
        import cupy as cp
        if cp.cuda.runtime.getDeviceCount() == 0:
            return {}
    except Exception:  # not installed, or no GPU / driver
        return {}
    k = cp.RawKernel(CUDA_SOURCE, "histogram")
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        d = cp.asarray(data)
        bins = cp.zeros(256, cp.uint32)
    grid = grid_for(data.size)

    def run():
        with s:
            bins.fill(0)
            k((grid,), (BLOCK,), (d, np.uint32(data.size), bins))
        s.synchronize()

    run()
    if not np.array_equal(cp.asnumpy(bins), want):
        raise SystemExit("CuPy's histogram counts are wrong")
    return {"CuPy RawKernel": run}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the sides")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    data = np.random.default_rng(46).integers(0, 256, size=args.mib << 20, dtype=np.uint8)
    want = np.bincount(data, minlength=256).astype(np.uint32)
    sides = dict(gpuhal_side(data, want))
    sides.update(cupy_side(data, want))
    samples = {name: [] for name in sides}
    for _ in range(args.rounds):
        for name, fn in sides.items():
            samples[name] += batches(fn, args.batch, args.repeats, unit_ns=1e6, warm_up=False)
    rows = {name: {"median_ms": statistics.median(v), "min_ms": min(v), "max_ms": max(v),
                   "gb_per_s": data.size / statistics.median(v) / 1e6}
            for name, v in samples.items()}
    if "gpuhal" in rows and "CuPy RawKernel" in rows:
        rows["gpuhal"]["vs_cupy"] = rows["CuPy RawKernel"]["median_ms"] / rows["gpuhal"]["median_ms"]
    result = {"backend": gpuhal.backend(), "bytes": int(data.size), "rows": rows}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"backend {result['backend']}: 256-bin histogram of {args.mib} MiB (counts checked); "
          f"ms per histogram, median [min, max]")
    for name, r in rows.items():
        extra = f"  {r['vs_cupy']:.2f}x CuPy" if "vs_cupy" in r else ""
        print(f"{name:15} {r['median_ms']:9.2f} [{r['min_ms']:.2f}, {r['max_ms']:.2f}]  "
              f"{r['gb_per_s']:.2f} GB/s{extra}")


if __name__ == "__main__":
    main()

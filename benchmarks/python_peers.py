# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal's Python package against what users pick instead, on the same
work in one process: CuPy, PyTorch and numba-cuda on a GPU (whichever are
installed and see one), NumPy on the host backend. Missing peers are
skipped, saying so. The sides alternate; each row is the median of batches
with its spread, and the ratio best-peer / gpuhal (>= 1.0: gpuhal at par or
faster).

    python benchmarks/python_peers.py [--repeats 7] [--rounds 3] [--quick] [--json]

Rows: a to_device + copy_to_host round trip of 1 KiB and of 1 MiB; a
pageable and a pinned 64 MiB host-to-device copy; an allocation dropped at
once, of 4 KiB and of 1 MiB; an empty kernel launch with its
synchronisation; a bandwidth-bound kernel (y = a * x + y over 16M floats).
--quick shrinks the sizes and batches (CI's smoke run). Needs the gpuhal
package installed (pip install .).
"""

import argparse
import json
import statistics

import numpy as np

import gpuhal
from peer_timing import batches

KIB, MIB = 1 << 10, 1 << 20

SAXPY = """
GPUHAL_KERNEL void saxpy(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, float a, unsigned n) {
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) y[i] = a * x[i] + y[i];
}
GPUHAL_KERNEL void empty(GPUHAL_GLOBAL float *y) {}
"""
CUDA_SAXPY = """
extern "C" __global__ void saxpy(float *y, const float *x, float a, unsigned n) {
  for (unsigned i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] = a * x[i] + y[i];
}
extern "C" __global__ void empty(float *y) {}
"""


class Sizes:
    def __init__(self, quick):
        self.transfer = (4 if quick else 64) * MIB
        self.saxpy = (1 if quick else 16) * MIB  # elements
        self.batch = 20 if quick else 200
        self.big_batch = 2 if quick else 5


def gpuhal_ops(sz):
    mod = gpuhal.compile(SAXPY)
    s = gpuhal.stream()
    small, mid = np.ones(KIB, np.uint8), np.ones(MIB, np.uint8)
    pageable = np.ones(sz.transfer, np.uint8)
    pinned = gpuhal.pinned_array(sz.transfer, np.uint8)
    pinned[:] = 1
    dst = gpuhal.device_array(sz.transfer, np.uint8)
    x = gpuhal.to_device(np.ones(sz.saxpy, np.float32))
    y = gpuhal.to_device(np.zeros(sz.saxpy, np.float32))
    grid = min(1024, max(1, sz.saxpy // 256))

    def launch_empty():
        mod.empty[1, 32, s](y)
        s.synchronize()

    def saxpy():
        mod.saxpy[grid, 256, s](y, x, np.float32(2.0), np.uint32(sz.saxpy))
        s.synchronize()

    return {
        "round trip 1 KiB": lambda: gpuhal.to_device(small).copy_to_host(),
        "round trip 1 MiB": lambda: gpuhal.to_device(mid).copy_to_host(),
        "H2D pageable": lambda: dst.copy_to_device(pageable),
        "H2D pinned": lambda: dst.copy_to_device(pinned),
        "alloc+free 4 KiB": lambda: gpuhal.device_array(4 * KIB, np.uint8),
        "alloc+free 1 MiB": lambda: gpuhal.device_array(MIB, np.uint8),
        "empty launch": launch_empty,
        "saxpy": saxpy,
    }


def numpy_ops(sz):
    # The host backend's peer: its device memory is host memory, so the
    # same work is NumPy's copies, allocation and arithmetic.
    small, mid = np.ones(KIB, np.uint8), np.ones(MIB, np.uint8)
    src = np.ones(sz.transfer, np.uint8)
    dst = np.empty_like(src)
    x, y = np.ones(sz.saxpy, np.float32), np.zeros(sz.saxpy, np.float32)
    tmp = np.empty_like(x)

    def saxpy():
        np.multiply(x, np.float32(2.0), out=tmp)
        np.add(tmp, y, out=y)

    return {
        "round trip 1 KiB": lambda: np.array(small).copy(),
        "round trip 1 MiB": lambda: np.array(mid).copy(),
        "H2D pageable": lambda: np.copyto(dst, src),
        "H2D pinned": lambda: np.copyto(dst, src),
        "alloc+free 4 KiB": lambda: np.empty(4 * KIB, np.uint8),
        "alloc+free 1 MiB": lambda: np.empty(MIB, np.uint8),
        "saxpy": saxpy,
    }


def cupy_ops(sz):
    import cupy as cp
    if cp.cuda.runtime.getDeviceCount() == 0:
        raise RuntimeError("no GPU")
    mod = cp.RawModule(code=CUDA_SAXPY)
    saxpy_k, empty_k = mod.get_function("saxpy"), mod.get_function("empty")
    small, mid = np.ones(KIB, np.uint8), np.ones(MIB, np.uint8)
    pageable = np.ones(sz.transfer, np.uint8)
    pinned_mem = cp.cuda.alloc_pinned_memory(sz.transfer)
    pinned = np.frombuffer(pinned_mem, np.uint8, sz.transfer)
    pinned[:] = 1
    dst = cp.empty(sz.transfer, cp.uint8)
    x, y = cp.ones(sz.saxpy, cp.float32), cp.zeros(sz.saxpy, cp.float32)
    grid = min(1024, max(1, sz.saxpy // 256))

    def launch_empty():
        empty_k((1,), (32,), (y,))
        cp.cuda.get_current_stream().synchronize()

    def saxpy():
        saxpy_k((grid,), (256,), (y, x, np.float32(2.0), np.uint32(sz.saxpy)))
        cp.cuda.get_current_stream().synchronize()

    return {
        "round trip 1 KiB": lambda: cp.asnumpy(cp.asarray(small)),
        "round trip 1 MiB": lambda: cp.asnumpy(cp.asarray(mid)),
        "H2D pageable": lambda: dst.set(pageable),
        "H2D pinned": lambda: dst.set(pinned),
        "alloc+free 4 KiB": lambda: cp.empty(4 * KIB, cp.uint8),
        "alloc+free 1 MiB": lambda: cp.empty(MIB, cp.uint8),
        "empty launch": launch_empty,
        "saxpy": saxpy,
    }


def torch_ops(sz):
    import torch
    if not torch.cuda.is_available():
        raise RuntimeError("no GPU")
    small, mid = torch.ones(KIB, dtype=torch.uint8), torch.ones(MIB, dtype=torch.uint8)
    pageable = torch.ones(sz.transfer, dtype=torch.uint8)
    pinned = torch.ones(sz.transfer, dtype=torch.uint8).pin_memory()
    dst = torch.empty(sz.transfer, dtype=torch.uint8, device="cuda")
    x = torch.ones(sz.saxpy, dtype=torch.float32, device="cuda")
    y = torch.zeros(sz.saxpy, dtype=torch.float32, device="cuda")

    def copy(src):
        dst.copy_(src)
        torch.cuda.synchronize()

    def saxpy():
        y.add_(x, alpha=2.0)
        torch.cuda.synchronize()

    return {
        "round trip 1 KiB": lambda: small.cuda().cpu(),
        "round trip 1 MiB": lambda: mid.cuda().cpu(),
        "H2D pageable": lambda: copy(pageable),
        "H2D pinned": lambda: copy(pinned),
        "alloc+free 4 KiB": lambda: torch.empty(4 * KIB, dtype=torch.uint8, device="cuda"),
        "alloc+free 1 MiB": lambda: torch.empty(MIB, dtype=torch.uint8, device="cuda"),
        "saxpy": saxpy,
    }


def numba_ops(sz):
    from numba import cuda
    if not cuda.is_available():
        raise RuntimeError("no GPU")
    small, mid = np.ones(KIB, np.uint8), np.ones(MIB, np.uint8)
    pageable = np.ones(sz.transfer, np.uint8)
    pinned = cuda.pinned_array(sz.transfer, np.uint8)
    pinned[:] = 1
    dst = cuda.device_array(sz.transfer, np.uint8)
    return {
        "round trip 1 KiB": lambda: cuda.to_device(small).copy_to_host(),
        "round trip 1 MiB": lambda: cuda.to_device(mid).copy_to_host(),
        "H2D pageable": lambda: dst.copy_to_device(pageable),
        "H2D pinned": lambda: dst.copy_to_device(pinned),
        "alloc+free 4 KiB": lambda: cuda.device_array(4 * KIB, np.uint8),
        "alloc+free 1 MiB": lambda: cuda.device_array(MIB, np.uint8),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--rounds", type=int, default=3, help="alternations of the sides")
    ap.add_argument("--quick", action="store_true", help="small sizes and batches (a smoke run)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    sz = Sizes(args.quick)
    on_gpu = gpuhal.backend() != "host"
    peers = [("CuPy", cupy_ops), ("PyTorch", torch_ops), ("numba-cuda", numba_ops)] if on_gpu else \
            [("NumPy", numpy_ops)]
    sides = {"gpuhal": gpuhal_ops(sz)}
    skipped = {}
    for name, make in peers:
        try:
            sides[name] = make(sz)
        except Exception as e:  # not installed, or no GPU
            skipped[name] = f"{type(e).__name__}: {e}"
    samples = {(side, row): [] for side, ops in sides.items() for row in ops}
    for _ in range(args.rounds):
        for side, ops in sides.items():
            for row, fn in ops.items():
                big = row.startswith("H2D") or row == "saxpy"
                samples[(side, row)] += batches(fn, sz.big_batch if big else sz.batch, args.repeats)
    table = {}
    for (side, row), v in samples.items():
        table.setdefault(row, {})[side] = {"median_us": statistics.median(v), "min_us": min(v), "max_us": max(v)}
    for row, by_side in table.items():
        peers_here = [r["median_us"] for s, r in by_side.items() if s != "gpuhal"]
        if "gpuhal" in by_side and peers_here:
            by_side["gpuhal"]["vs_best_peer"] = min(peers_here) / by_side["gpuhal"]["median_us"]
    result = {"backend": gpuhal.backend(), "quick": args.quick, "transfer_bytes": sz.transfer,
              "saxpy_elements": sz.saxpy, "rows": table, "skipped": skipped}
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"backend {result['backend']}: us per operation, median [min, max]; vs best peer = best peer's "
          f"median / gpuhal's (>= 1.0: gpuhal at par or faster)")
    for row, by_side in table.items():
        for side, r in by_side.items():
            extra = f"  vs best peer {r['vs_best_peer']:.2f}x" if "vs_best_peer" in r else ""
            print(f"{row:18} {side:11} {r['median_us']:11.2f} [{r['min_us']:.2f}, {r['max_us']:.2f}]{extra}")
    for name, why in skipped.items():
        print(f"skipped {name}: {why}")


if __name__ == "__main__":
    main()

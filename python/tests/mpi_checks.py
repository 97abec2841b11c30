# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.mpi on two ranks (test_mpi.py runs it with mpirun -n 2): exact
point-to-point and allreduce on every path the backend has, strided
layouts through the staged path (where kernels run), and every bad input
refused with the error that names it. Prints one line per rank:
"mpi_checks rank R: N failed" and the failures before it."""

import os
import sys

import numpy as np
from mpi4py import MPI

import gpuhal as cuda
from gpuhal import mpi as gmpi

comm = MPI.COMM_WORLD
rank, other = comm.rank, 1 - comm.rank
failures = []


def expect(ok, what):
    if not ok:
        failures.append(what)


def expect_error(call, error, words, what):
    try:
        call()
    except error as e:
        expect(words in str(e), f"{what}: message {str(e)!r} lacks {words!r}")
    except Exception as e:  # noqa: BLE001 (any other error is a failure to report)
        failures.append(f"{what}: {type(e).__name__}: {e}")
    else:
        failures.append(f"{what}: no error")


def exchange(path, dtype):
    sent = (np.arange(5000) % 251).astype(dtype) + rank
    got = cuda.device_array(5000, dtype=dtype)
    if rank == 0:
        gmpi.send(comm, cuda.to_device(sent), 1, tag=3, path=path)
        gmpi.recv(comm, got, 1, tag=4, path=path)
    else:
        gmpi.recv(comm, got, 0, tag=3, path=path)
        gmpi.send(comm, cuda.to_device(sent), 0, tag=4, path=path)
    expected = (np.arange(5000) % 251).astype(dtype) + other
    expect(np.array_equal(got.copy_to_host(), expected), f"send/recv {np.dtype(dtype)} {path}")


def reduce(path):
    x = cuda.to_device(np.arange(777, dtype=np.int64) * (rank + 1))
    gmpi.allreduce(comm, x, path=path)  # in place
    expect(np.array_equal(x.copy_to_host(), np.arange(777) * 3), f"allreduce in place {path}")
    y = cuda.to_device(np.full(64, rank + 1.5))
    out = cuda.device_array_like(y)
    gmpi.allreduce(comm, y, out, op=MPI.MAX, path=path)
    expect(np.array_equal(out.copy_to_host(), np.full(64, 2.5)), f"allreduce max {path}")


def strided(path):
    base = np.arange(120, dtype=np.float32).reshape(12, 10)
    d = cuda.to_device(base)
    view = d.T[:, ::2]  # 10 x 6, not contiguous
    got = cuda.device_array((10, 6), dtype=np.float32, order="F")
    if rank == 0:
        gmpi.send(comm, view, 1, tag=5, path=path)
    else:
        gmpi.recv(comm, got, 0, tag=5, path=path)
        expect(np.array_equal(got.copy_to_host(), base.T[:, ::2]), f"strided send/recv {path}")
    big = cuda.to_device(np.full((6, 8), -1, dtype=np.int32))
    gmpi.allreduce(comm, cuda.to_device(np.full((6, 4), rank + 1, dtype=np.int32)), big[:, ::2], path=path)
    host = big.copy_to_host()
    expect((host[:, ::2] == 3).all() and (host[:, 1::2] == -1).all(), f"allreduce into a strided array {path}")


def bad_input():
    d = cuda.device_array((4, 6), dtype=np.float32)
    expect_error(lambda: gmpi.send(comm, d, other, path="fast"), ValueError,
                 "path must be one of 'auto', 'pass-through', 'staged', not 'fast'", "unknown path")
    expect_error(lambda: gmpi.send(comm, np.zeros(4), other), TypeError,
                 "needs a gpuhal device array, not ndarray", "a NumPy array")
    expect_error(lambda: gmpi.allreduce(comm, d, cuda.device_array(5, dtype=np.float32)), cuda.IncompatibleError,
                 "send has 24 float32 elements, recv 5 float32", "allreduce of different sizes")
    if gmpi.accepts_device_memory():
        expect_error(lambda: gmpi.send(comm, d.T, other, path="pass-through"), cuda.NotContiguousError,
                     "path='pass-through' needs a C-contiguous array", "pass-through of a transposed array")
    else:
        expect_error(lambda: gmpi.send(comm, d, other, path="pass-through"), cuda.NotSupportedError,
                     f"this MPI does not take {cuda.backend()} device memory", "pass-through unaware MPI")


def main():
    cuda.select_device(rank % len(cuda.gpus))
    paths = ["auto", "staged"] + (["pass-through"] if gmpi.accepts_device_memory() else [])
    kernel_results = os.environ.get("GPUHAL_TEST_NO_KERNEL_RESULTS") != "1"
    for path in paths:
        for dtype in (np.int32, np.uint8, np.float64, np.complex128):
            exchange(path, dtype)
        reduce(path)
        if path != "pass-through" and kernel_results:
            strided(path)
    bad_input()
    for f in failures:
        print(f"mpi_checks rank {rank}: FAILED: {f}", flush=True)
    print(f"mpi_checks rank {rank}: {cuda.backend()}, paths {','.join(paths)}: {len(failures)} failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""An allreduce of gpuhal device arrays with mpi4py, each rank on its own
device, and a ring of point-to-point sends; every result checked exactly.

    mpirun -n 2 python mpi_allreduce.py [auto|staged|pass-through]

The path (gpuhal/mpi.py): "pass-through" hands the device arrays to mpi4py
(which reads them through __dlpack__ or __cuda_array_interface__), "staged"
copies through page-locked host arrays, "auto" (the default) picks
pass-through when this MPI takes the backend's device memory. Exit status 0
when every rank's results are exact.
"""

import sys

import numpy as np
from mpi4py import MPI

import gpuhal as cuda
from gpuhal import mpi as gmpi


def main() -> int:
    path = sys.argv[1] if len(sys.argv) > 1 else "auto"
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    cuda.select_device(rank % len(cuda.gpus))

    # Allreduce: rank r contributes (r + 1) * i; the sum is exact in float64.
    n = 1 << 20
    x = cuda.to_device(np.arange(n, dtype=np.float64) * (rank + 1))
    total = cuda.device_array_like(x)
    gmpi.allreduce(comm, x, total, op=MPI.SUM, path=path)
    expected = np.arange(n, dtype=np.float64) * (size * (size + 1) // 2)
    ok = np.array_equal(total.copy_to_host(), expected)

    # A ring: each rank sends its rank number to the next one.
    mine = cuda.to_device(np.full(1000, rank, dtype=np.int32))
    theirs = cuda.device_array(1000, dtype=np.int32)
    after, before = (rank + 1) % size, (rank - 1) % size
    if rank % 2 == 0:
        gmpi.send(comm, mine, after, tag=1, path=path)
        gmpi.recv(comm, theirs, before, tag=1, path=path)
    else:
        gmpi.recv(comm, theirs, before, tag=1, path=path)
        gmpi.send(comm, mine, after, tag=1, path=path)
    ok = ok and bool((theirs.copy_to_host() == before).all())

    all_ok = comm.allreduce(ok, op=MPI.LAND)
    if rank == 0:
        chosen = path if path != "auto" else ("auto: pass-through" if gmpi.accepts_device_memory() else "auto: staged")
        print(f"mpi_allreduce: {size} ranks on {cuda.backend()}, {chosen} path, {n} float64 summed and a ring "
              f"of sends: {'exact' if all_ok else 'WRONG'}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())

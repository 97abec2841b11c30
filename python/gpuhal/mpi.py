# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal device arrays with mpi4py (docs/scale-out.md): a helper, not a
communication layer. Each function is one mpi4py call on a buffer gpuhal
prepares:

- pass-through: mpi4py is given the device array itself, which it reads
  through ``__dlpack__`` (or ``__cuda_array_interface__``). Chosen by
  ``path="auto"`` when this process's MPI reads and writes the backend's
  device memory (:func:`accepts_device_memory`) and the array is
  C-contiguous.
- staged: the elements go through a page-locked host array
  (``pinned_array``), copied on the array's stream. Any layout.

Stream rule: before MPI touches device memory the stream (``stream``, else
the array's own, else the context) is synchronised; when a receive returns
the data is in the device array. The message is the elements in C order,
of the array's dtype; sender and receiver agree on count and dtype.

    from mpi4py import MPI
    import gpuhal as cuda
    from gpuhal import mpi as gmpi

    x = cuda.to_device(np.full(1024, MPI.COMM_WORLD.rank, dtype=np.float64))
    total = cuda.device_array_like(x)
    gmpi.allreduce(MPI.COMM_WORLD, x, total, op=MPI.SUM)

mpi4py is imported on first use; it is not a dependency of gpuhal.
"""

import ctypes
from typing import Any, Optional

import numpy as np

from . import _gpuhal
from ._context import synchronize
from ._devicearray import DeviceNDArray
from ._errors import raise_status
from ._memory import pinned_array

__all__ = ["accepts_device_memory", "send", "recv", "allreduce", "PATHS"]

PATHS = ("auto", "pass-through", "staged")

# Open MPI's run-time queries of device-memory support, per backend.
_QUERIES = {"cuda": "MPIX_Query_cuda_support", "hsa": "MPIX_Query_rocm_support"}


def _mpi():
    from mpi4py import MPI  # imported here: mpi4py is optional
    return MPI


def _query(symbol):
    """What an MPIX query of the loaded MPI library answers (False when the
    library has no such query: an MPI that cannot say is taken as unaware)."""
    _mpi()  # the MPI library is loaded (and initialised) by mpi4py
    try:
        function = getattr(ctypes.CDLL(None), symbol)
    except AttributeError:
        return False
    function.restype = ctypes.c_int
    function.argtypes = []
    return function() == 1


def accepts_device_memory() -> bool:
    """True when this process's MPI reads and writes the current backend's
    device memory directly: always on the host backend (its device memory
    is the process's memory); on cuda and hsa what Open MPI's
    ``MPIX_Query_cuda_support()`` / ``MPIX_Query_rocm_support()`` answer;
    False on other backends."""
    backend = _gpuhal.backend_name()
    if backend == "host":
        return True
    symbol = _QUERIES.get(backend)
    return symbol is not None and _query(symbol)


def _check_path(path, what):
    if path not in PATHS:
        raise ValueError(f"{what}: path must be one of {', '.join(map(repr, PATHS))}, not {path!r}")


def _pass_through(array, path, what):
    _check_path(path, what)
    if path == "staged":
        return False
    accepted = accepts_device_memory()
    if path == "auto":
        return accepted and array.is_c_contiguous()
    if not accepted:
        raise_status("ERROR_NOT_SUPPORTED", f"{what}: this MPI does not take {_gpuhal.backend_name()} device memory "
                                            "(path='pass-through'); use path='staged' or 'auto'")
    if not array.is_c_contiguous():
        raise_status("ERROR_NOT_CONTIGUOUS", f"{what}: path='pass-through' needs a C-contiguous array; "
                                             "use path='staged'")
    return True


def _device_array(array, what):
    if not isinstance(array, DeviceNDArray):
        raise TypeError(f"{what}: needs a gpuhal device array, not {type(array).__name__} "
                        "(pass host arrays to mpi4py directly)")
    return array


def _synchronize(array, stream):
    """Waits for the work that may use `array`: on `stream`, else on the
    array's own stream, else every stream of the context."""
    s = stream or array.stream
    if isinstance(s, _gpuhal.Stream):
        s.synchronize()
    else:
        synchronize()


def _staged_copy_out(array, stream):
    """The elements of `array` in C order in a page-locked host array."""
    host = pinned_array(array.shape, array.dtype)
    if array.is_c_contiguous():
        array.copy_to_host(host, stream=stream)
    else:  # another layout: its own strides on the host, then C order
        np.copyto(host, array.copy_to_host(stream=stream))
    _synchronize(array, stream)
    return host


def _staged_copy_in(array, host, stream):
    if array.is_c_contiguous():
        array.copy_to_device(host, stream=stream)
    else:
        array[...] = host
    _synchronize(array, stream)


def send(comm: Any, array: Any, dest: int, tag: int = 0, *, path: str = "auto", stream: Any = 0) -> None:
    """``comm.Send`` of a device array to rank `dest`."""
    what = "gpuhal.mpi.send"
    array = _device_array(array, what)
    if _pass_through(array, path, what):
        _synchronize(array, stream)
        comm.Send(array, dest, tag)
        return
    comm.Send(_staged_copy_out(array, stream), dest, tag)


def recv(comm: Any, array: Any, source: Optional[int] = None, tag: Optional[int] = None, *, path: str = "auto",
         stream: Any = 0, status: Any = None) -> None:
    """``comm.Recv`` into a device array (``source`` / ``tag`` default to
    any). The data is in `array` when this returns."""
    what = "gpuhal.mpi.recv"
    array = _device_array(array, what)
    MPI = _mpi()
    source = MPI.ANY_SOURCE if source is None else source
    tag = MPI.ANY_TAG if tag is None else tag
    _synchronize(array, stream)  # no queued work may still use the memory MPI writes
    if _pass_through(array, path, what):
        comm.Recv(array, source, tag, status)
        return
    host = pinned_array(array.shape, array.dtype)
    comm.Recv(host, source, tag, status)
    _staged_copy_in(array, host, stream)


def allreduce(comm: Any, sendarray: Any, recvarray: Any = None, op: Any = None, *, path: str = "auto",
              stream: Any = 0) -> None:
    """``comm.Allreduce`` of device arrays (``op`` defaults to ``MPI.SUM``);
    without `recvarray` in place into `sendarray`. Both have the same size
    and dtype."""
    what = "gpuhal.mpi.allreduce"
    sendarray = _device_array(sendarray, what)
    recvarray = sendarray if recvarray is None else _device_array(recvarray, what)
    if sendarray.size != recvarray.size or sendarray.dtype != recvarray.dtype:
        raise_status("ERROR_INCOMPATIBLE", f"{what}: send has {sendarray.size} {sendarray.dtype} elements, recv "
                                           f"{recvarray.size} {recvarray.dtype}")
    MPI = _mpi()
    op = MPI.SUM if op is None else op
    if _pass_through(recvarray, path, what) and _pass_through(sendarray, path, what):
        _synchronize(sendarray, stream)
        _synchronize(recvarray, stream)
        comm.Allreduce(MPI.IN_PLACE if sendarray is recvarray else sendarray, recvarray, op)
        return
    host = _staged_copy_out(sendarray, stream)
    comm.Allreduce(MPI.IN_PLACE, host, op)
    _staged_copy_in(recvarray, host.reshape(recvarray.shape), stream)

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's IPC: ``d.get_ipc_handle()`` gives a picklable handle another
process opens (``handle.open()`` or ``with handle as array:``) to use the
same device memory. The exporter keeps its array alive while others use it.
A handle cannot be opened in the process that made it (as in CUDA);
backends without IPC raise gpuhal.NotSupportedError."""

import contextlib

from ._devicearray import IpcArrayHandle
from ._emm import IpcHandle, IpcMemHandle

__all__ = ["IpcArrayHandle", "open_ipc_array"]


@contextlib.contextmanager
def open_ipc_array(handle, shape, dtype, strides=None, offset=0):
    """Numba's ``with open_ipc_array(handle, shape, dtype) as array:`` --
    ``handle`` is an IpcHandle's ``handle.reserved`` bytes (or the IpcHandle,
    or an IpcMemHandle); the memory is mapped inside the block."""
    if isinstance(handle, (bytes, bytearray)):
        handle = IpcMemHandle(handle)
    if isinstance(handle, IpcMemHandle):
        handle = IpcHandle(None, handle, None, offset=offset)
    if offset:
        raise NotImplementedError("open_ipc_array: an offset into the exported memory is not supported")
    if not callable(getattr(handle, "open_array", None)):
        raise TypeError(f"open_ipc_array: expected an IpcHandle, an IpcMemHandle or its bytes, not {type(handle).__name__}")
    array = handle.open_array(None, shape, dtype, strides)
    try:
        yield array
    finally:
        handle.close()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's IPC: ``d.get_ipc_handle()`` gives a picklable handle another
process opens (``handle.open()`` or ``with handle as array:``) to use the
same device memory. The exporter keeps its array alive while others use it.
A handle cannot be opened in the process that made it (as in CUDA);
backends without IPC raise gpuhal.NotSupportedError."""

import contextlib

import numpy as np

from . import _gpuhal

__all__ = ["IpcArrayHandle", "open_ipc_array"]


class IpcArrayHandle:
    """A device array's IPC handle (Numba's ``IpcArrayHandle``)."""

    def __init__(self, handle, dtype, shape=None, strides=None):
        # Numba's name: an EMM plugin's get_ipc_handle result is kept here as
        # it is (its own object), gpuhal's as gpuhal's handle.
        self._ipc_handle = handle
        self.dtype = np.dtype(dtype)
        self._shape = shape
        self._strides = strides
        self._opened = None

    shape = property(lambda self: self._ipc_handle.shape if self._shape is None else self._shape,
                     doc="The shared array's shape.")
    strides = property(lambda self: self._ipc_handle.strides if self._strides is None else self._strides,
                       doc="The shared array's strides in bytes.")

    def _gpuhal_handle(self):
        if not isinstance(self._ipc_handle, _gpuhal._IpcArrayHandle):
            raise TypeError("this IPC handle is an EMM plugin's own; gpuhal cannot serialize or open it")
        return self._ipc_handle

    def serialize(self):
        """One line of printable text (what pickling sends)."""
        return self._gpuhal_handle().serialize()

    @classmethod
    def deserialize(cls, text, dtype):
        return cls(_gpuhal._IpcArrayHandle.deserialize(text), dtype)

    def __reduce__(self):
        return (IpcArrayHandle.deserialize, (self.serialize(), self.dtype))

    def open(self):
        """Maps the memory into the current context; returns a DeviceNDArray."""
        from ._devicearray import DeviceNDArray
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened: close() it first")
        self._opened = _gpuhal.open_ipc_array(_gpuhal.current_context(), self._gpuhal_handle())
        return DeviceNDArray(self._opened.array, self.dtype)

    def close(self):
        """Drops the handle's reference to the mapping (arrays from open()
        keep it mapped while they live)."""
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def open_ipc_array(handle, shape, dtype, strides=None, offset=0):
    """Numba's ``with open_ipc_array(handle, shape, dtype) as array:`` --
    ``handle`` is an IpcHandle's ``handle.reserved`` bytes (or the IpcHandle,
    or an IpcMemHandle); the memory is mapped inside the block."""
    from ._emm import IpcHandle, IpcMemHandle
    if isinstance(handle, (bytes, bytearray)):
        handle = IpcMemHandle(handle)
    if isinstance(handle, IpcMemHandle):
        handle = IpcHandle(None, handle, None, offset=offset)
    if offset:
        raise NotImplementedError("open_ipc_array: an offset into the exported memory is not supported")
    array = handle.open_array(None, shape, dtype, strides)
    try:
        yield array
    finally:
        handle.close()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""DeviceNDArray: Numba's device array over gpuhal's C++ DeviceArray.

A DeviceNDArray is a strided view of device memory with NumPy's layout rules
(the C++ core does every layout computation). Views (indexing, reshape,
ravel, transpose, view) share the memory and keep it alive. ``stream`` is
the stream the array is bound to, as in Numba: methods called with
``stream=0`` use it, and ``__dlpack__`` / ``__cuda_array_interface__``
report it. Thread safety: as the C++ API's (any thread; concurrent writes to
the same memory are the caller's affair).
"""

import ctypes
import math
from typing import Any

import numpy as np

from . import _errors, _gpuhal, _managers
from ._array_export import cuda_array_interface, export_dlpack
from ._context import Context
from ._hostarrays import finish_if_pageable
from ._memory_objects import MemoryPointer
from ._shapes import _shape, _strides
from ._streams import is_zero as _is_zero, stream_or_none

__all__ = ["DeviceNDArray", "IpcArrayHandle"]


def _rebuild(host, stream=0):
    """Unpickles a DeviceNDArray: its elements (a NumPy array) to the
    current context's device."""
    ctx = _managers.current_cpp_context()
    if host.size == 0:
        return DeviceNDArray._of(_gpuhal.device_array(ctx, list(host.shape), host.dtype.str, list(host.strides), "C"),
                                 host.dtype, stream)
    s = stream_or_none(stream)
    array = _gpuhal.to_device(ctx, host, s, True)
    finish_if_pageable(s, host)
    return DeviceNDArray._of(array, host.dtype, stream)


def _expand_key(key, ndim):
    """Python's Ellipsis expanded to full slices; newaxis refused."""
    items = key if isinstance(key, tuple) else (key,)
    if any(k is None for k in items):
        raise NotImplementedError("indexing a device array with None (np.newaxis) is not supported")
    n_ellipsis = sum(1 for k in items if k is Ellipsis)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    if n_ellipsis:
        i = next(j for j, k in enumerate(items) if k is Ellipsis)
        fill = ndim - (len(items) - 1)
        items = items[:i] + (slice(None),) * max(fill, 0) + items[i + 1:]
    return items


def _array_over_memory(shape, strides, dtype, memory):
    """DeviceNDArray(shape, strides, dtype, gpu_data=memory): the array over
    ``memory``'s bytes from its start, which keeps the memory object alive
    (its finalizer, an EMM pool's give-back, runs only once the array and
    every view of it are gone) and, for memory gpuhal allocated, the
    allocation (its ``free()`` cannot take the bytes from under the array).
    Strides default to C order; they must be non-negative multiples of the
    itemsize, and the elements must lie within ``memory.size`` bytes
    (ValueError). A freed MemoryPointer is refused (ValueError)."""
    if isinstance(memory, MemoryPointer) and memory._freed:
        memory._gpuhal_array()  # raises: "was freed"
    pointer = getattr(memory, "device_pointer", None)
    size = getattr(memory, "size", None) if not isinstance(memory, np.ndarray) else memory.nbytes
    if pointer is None or size is None:
        raise NotImplementedError(f"DeviceNDArray(..., gpu_data=...): {type(memory).__name__} is not device memory "
                                  "(a MemoryPointer, mapped or managed memory)")
    if any(n < 0 for n in shape):
        _errors.raise_status("ERROR_INVALID_SHAPE", f"DeviceNDArray(..., gpu_data=...): negative dimension in {tuple(shape)}")
    if not strides:
        strides, step = [0] * len(shape), dtype.itemsize
        for axis in reversed(range(len(shape))):
            strides[axis] = step
            step *= max(shape[axis], 1)
    if len(strides) != len(shape) or any(st < 0 or st % dtype.itemsize for st in strides):
        raise ValueError(f"DeviceNDArray(..., gpu_data=...): strides {tuple(strides)} for shape {tuple(shape)} must be "
                         f"non-negative multiples of the itemsize {dtype.itemsize}")
    span = 0 if 0 in shape else sum(st * (n - 1) for st, n in zip(strides, shape)) + dtype.itemsize
    if span > int(size):
        raise ValueError(f"DeviceNDArray(..., gpu_data=...): the elements of shape {tuple(shape)} and strides "
                         f"{tuple(strides)} span {span} bytes, beyond the memory's {int(size)}")
    keep = memory._memory if isinstance(memory, MemoryPointer) else None
    ctx = _managers.current_cpp_context()
    array = _gpuhal.from_pointer(ctx, int(pointer), list(shape), dtype.str, list(strides), (memory, keep))
    return DeviceNDArray(array, dtype)


class DeviceNDArray:
    """An array in device memory (Numba's ``DeviceNDArray``)."""

    __slots__ = ("_a", "_dtype", "stream", "__weakref__")

    def __init__(self, shape, strides=None, dtype=None, stream=0, gpu_data=None):
        """Numba's ``DeviceNDArray(shape, strides, dtype, stream=0,
        gpu_data=None)``: new device memory, or with ``gpu_data`` an array
        over memory gpuhal allocated (a MemoryPointer, mapped or managed
        memory) in C or Fortran order. gpuhal's own functions pass a C++
        array first instead: ``DeviceNDArray(array, dtype=None, stream=0)``."""
        if isinstance(shape, _gpuhal._DeviceArray):
            # gpuhal's form: the second and third places hold the dtype and the stream.
            array, dtype, stream = shape, strides, (0 if dtype is None else dtype)
        else:
            array, dtype = self._numba_form(shape, strides, dtype, gpu_data)
        self._a = array
        self._dtype = np.dtype(array.typestr) if dtype is None else np.dtype(dtype)
        self.stream = stream

    @classmethod
    def _of(cls, array, dtype, stream):
        """gpuhal's own constructor: a C++ array and its np.dtype, unchecked."""
        self = object.__new__(cls)
        self._a = array
        self._dtype = dtype
        self.stream = stream
        return self

    @staticmethod
    def _numba_form(shape, strides, dtype, gpu_data):
        if dtype is None:
            raise TypeError("DeviceNDArray(shape, strides, dtype, stream=0, gpu_data=None) needs a dtype")
        dtype = np.dtype(dtype)
        if gpu_data is not None:
            return _array_over_memory(_shape(shape), _strides(strides), dtype, gpu_data)._a, dtype
        array = _gpuhal.device_array(_managers.current_cpp_context(), _shape(shape), dtype.str, _strides(strides), "C")
        return array, dtype

    # ---- the array's description -----------------------------------------
    shape = property(lambda self: self._a.shape, doc="The extent of each dimension.")
    strides = property(lambda self: self._a.strides, doc="Bytes between elements along each dimension.")
    ndim = property(lambda self: self._a.ndim, doc="The number of dimensions.")
    size = property(lambda self: self._a.size, doc="The number of elements.")
    nbytes = property(lambda self: self._a.nbytes, doc="size * itemsize.")
    itemsize = property(lambda self: self._a.itemsize, doc="Bytes per element.")
    alloc_size = property(lambda self: self._a.alloc_size, doc="Bytes the elements span")
    dtype = property(lambda self: self._dtype, doc="The NumPy dtype of the elements.")
    device_pointer = property(lambda self: self._a.device_pointer, doc="Address of element 0 (0 when empty)")

    @property
    def device_ctypes_pointer(self):
        """Numba's ctypes pointer to the data: c_size_t, or c_void_p(0) when empty."""
        pointer = self._a.device_pointer
        return ctypes.c_size_t(pointer) if pointer else ctypes.c_void_p(0)

    @property
    def gpu_data(self):
        """Numba's MemoryPointer of the bytes this array spans (None when
        empty); it keeps the array's memory alive."""
        if self.size == 0:
            return None
        low = sum(s * (n - 1) for s, n in zip(self.strides, self.shape) if s < 0)
        contiguous = self.is_c_contiguous() or self.is_f_contiguous()
        memory = self.reshape(self.size, order="C" if self.is_c_contiguous() else "F").view(np.uint8) \
            if contiguous else None
        pointer = MemoryPointer(Context(self._a.context), self.device_pointer + low, self.alloc_size, owner=self,
                                _memory=memory)
        if memory is None:
            pointer._no_bytes = "the span of a non-contiguous array (elements and the gaps between them)"
        return pointer

    def is_c_contiguous(self):
        """True when the elements lie in C (row-major) order without gaps."""
        return self._a.is_c_contiguous()

    def is_f_contiguous(self):
        """True when the elements lie in Fortran (column-major) order without gaps."""
        return self._a.is_f_contiguous()

    @property
    def flags(self):
        """NumPy's ``C_CONTIGUOUS`` and ``F_CONTIGUOUS`` flags, as a dict."""
        return {"C_CONTIGUOUS": self.is_c_contiguous(), "F_CONTIGUOUS": self.is_f_contiguous()}

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def __reduce__(self):
        """Pickling copies the elements to the host (as Numba does); the
        unpickled array is a new device array of the current context."""
        return (_rebuild, (self.copy_to_host(),))

    def __repr__(self):
        return f"<gpuhal.DeviceNDArray shape={self.shape} dtype={self.dtype} strides={self.strides}>"

    def _wrap(self, array, dtype=None, stream=None):
        return DeviceNDArray(array, self._dtype if dtype is None else dtype, self.stream if stream is None else stream)

    def _bound(self, stream):
        """``stream``, or the array's own stream for Numba's ``stream=0``."""
        return self.stream if _is_zero(stream) else stream

    def _stream(self, stream):
        return stream_or_none(self._bound(stream))

    def bind(self, stream=0):
        """The same array bound to ``stream``."""
        return self._wrap(self._a, stream=stream)

    # ---- views ------------------------------------------------------------
    def __getitem__(self, key):
        return self.getitem(key)

    def getitem(self, key, stream=0):
        """A view, or (all axes indexed by integers) the element, copied to the host."""
        items = _expand_key(key, self.ndim)
        view = self._a.getitem(items) if items else self._a
        if view.ndim == 0 and any(not isinstance(k, slice) for k in items):
            s = self._stream(stream)
            host = np.asarray(view.copy_to_host(s))
            if s is not None:
                s.synchronize()
            return host.view(self._dtype)[()]
        return self._wrap(view)

    def __setitem__(self, key, value):
        self.setitem(key, value)

    def setitem(self, key, value, stream=0):
        """``d[key] = value`` on the device: a scalar fills, an array is
        broadcast and copied (NumPy's rules) by a kernel of the backend."""
        items = _expand_key(key, self.ndim)
        view = self._a.getitem(items) if items else self._a
        s = self._stream(stream)
        # Numba's rule: with no stream (given or bound) the write goes on the
        # default stream, which is then synchronised; on a stream it is not.
        synchronous = s is None
        if synchronous:
            s = view.context.default_stream()
        self._assign(view, value, s)
        if synchronous:
            s.synchronize()

    def _assign(self, view, value, s):
        if isinstance(value, DeviceNDArray):
            view.assign_device(value._a, s)
        elif isinstance(value, (bool, int, float, complex, np.generic)) and not (
                isinstance(value, np.generic) and value.dtype.fields is not None):
            view.fill(value.item() if isinstance(value, np.generic) else value, s)
        else:
            host = np.asarray(value, dtype=self._dtype)
            view.assign_host(host, s)
            finish_if_pageable(s, host)

    def reshape(self, *newshape, order="C"):
        """A view with another shape over the same elements (NumPy's rules; ``order`` C or F); an
        array that cannot be viewed so raises NotImplementedError, as in Numba."""
        if len(newshape) == 1 and isinstance(newshape[0], (tuple, list)):
            newshape = tuple(newshape[0])
        if tuple(newshape) == self.shape:
            return self
        return self._wrap(self._a.reshape(list(newshape), order))

    def ravel(self, order="C", stream=0):
        """A one-dimensional view (``order`` C or F) of a contiguous array."""
        return self._wrap(self._a.ravel(order))

    def transpose(self, axes=None):
        """A view with the axes permuted (all reversed without ``axes``), as NumPy's.
        An axis out of range is ``gpuhal.AxisError`` (an IndexError and a ValueError,
        as NumPy's), a repeated one ``InvalidValueError``."""
        try:
            return self._wrap(self._a.transpose([] if axes is None else list(axes)))
        except _errors.IndexOutOfRangeError as e:
            raise _errors.AxisError(e.status, e.code, e.message, e.peer_message) from None

    @property
    def T(self):
        """The transposed view (``transpose()``)."""
        return self.transpose()

    def view(self, dtype):
        """A view of the same bytes as another dtype (the last axis rescaled, NumPy's rule)."""
        dtype = np.dtype(dtype)
        return self._wrap(self._a.view_dtype(dtype.str), dtype=dtype)

    def split(self, section, stream=0):
        """Numba's split: views of ``section`` elements of a 1-d array with unit stride."""
        if self.ndim != 1:
            raise ValueError("only support 1d array")
        if self.strides[0] != self.itemsize:
            raise ValueError("only support unit stride")
        if section <= 0:
            raise ValueError("section must be positive")
        for i in range(int(math.ceil(self.size / section))):
            yield self._wrap(self._a.getitem(slice(i * section, min((i + 1) * section, self.size))),
                             stream=self._bound(stream))

    # ---- transfers ------------------------------------------------------------
    def _empty_like(self):
        """An uninitialised array of this one's shape and dtype with NumPy's
        empty_like strides, in the current context (device_array_like's)."""
        strides = _gpuhal.strides_like(list(self.shape), list(self.strides), int(self._dtype.itemsize), "K")
        array = _gpuhal.device_array(_managers.current_cpp_context(), list(self.shape), self._dtype.str, strides, "C")
        return DeviceNDArray._of(array, self._dtype, 0)

    def copy_to_host(self, ary: Any = None, stream: Any = 0) -> "np.ndarray[Any, Any]":
        """This array -> a host array (a new one with the same strides, or
        ``ary``). On a stream the copy is asynchronous only into gpuhal's
        pinned, mapped or managed arrays (synchronise before reading them);
        any other destination is filled when this returns, as CUDA does for
        pageable memory."""
        s = self._stream(stream)
        if ary is not None:
            self._a.copy_to_host_into(ary, s)
            finish_if_pageable(s, ary)
            return ary
        if self.size == 0:
            return np.empty(self.shape, dtype=self._dtype)
        host = np.asarray(self._a.copy_to_host(s))
        finish_if_pageable(s, host)  # new memory is pageable: done when this returns
        return host if host.dtype == self._dtype else host.view(self._dtype)

    def copy_to_device(self, ary: Any, stream: Any = 0) -> None:
        """Host or device array -> this array (same dtype and shape)."""
        s = self._stream(stream)
        if isinstance(ary, DeviceNDArray):
            self._a.copy_from_device(ary._a, s)
        else:
            host = ary if isinstance(ary, np.ndarray) else np.asarray(ary, dtype=self._dtype)
            self._a.copy_from_host(host, s)
            finish_if_pageable(s, host)

    def __array__(self, dtype=None, copy=None):
        if copy is False:
            raise ValueError("`copy=False` is not supported: a device array becomes a NumPy array only through a "
                             "copy (copy_to_host())")
        host = self.copy_to_host()
        return host if dtype is None else host.astype(dtype)

    # ---- interchange ----------------------------------------------------------
    def get_ipc_handle(self):
        """A picklable handle another process opens (IpcArrayHandle). Under
        an EMM plugin, the plugin's get_ipc_handle makes it (Numba's rule)."""
        plugin = _managers.installed_plugin(self._a.context)
        if plugin is not None:
            memory = MemoryPointer(Context(self._a.context), self.device_pointer, self.alloc_size, owner=self)
            return IpcArrayHandle(plugin.get_ipc_handle(memory), self._dtype, self.shape, self.strides)
        return IpcArrayHandle(_gpuhal.get_ipc_handle(self._a), self._dtype)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return export_dlpack(self, stream, max_version, dl_device, copy)

    def __dlpack_device__(self):
        return _gpuhal.dlpack_device(self._a.context)

    @property
    def __cuda_array_interface__(self):
        return cuda_array_interface(self)


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

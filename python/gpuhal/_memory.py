# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's memory API: device, pinned, mapped and managed arrays, the
pinned / mapped / register scopes, and transfers.

Every function works in the calling thread's current context (the primary
context of the device it selected; device 0 otherwise). ``stream=0`` means
no stream: the call returns when it is done. With a stream, a transfer is
asynchronous when its host side is a pinned, mapped or managed array of
gpuhal's (leave it unchanged until the stream ran it); with any other host
array it is done when the call returns (CUDA's rule for pageable memory,
see _hostarrays).
"""

import contextlib
import threading
from typing import Any, Iterator, Optional

import numpy as np

from . import _gpuhal
from ._managers import current_cpp_context
from ._shapes import _dtype_and_typestr, _integer, _integers, _shape, _strides, _typestr
from ._devicearray import DeviceNDArray
from ._hostarrays import ManagedNDArray, MappedNDArray, PinnedNDArray, finish_if_pageable
from ._streams import stream_or_none

__all__ = [
    "to_device", "device_array", "device_array_like", "managed_array", "pinned_array", "pinned_array_like",
    "mapped_array", "mapped_array_like", "pinned", "mapped", "register", "deregister", "MappedNDArray",
    "ManagedNDArray", "PinnedNDArray", "prefetch", "advise", "GrowableDeviceArray", "vm_granularity",
    "PhysicalMemory", "VirtualRange",
]


def _ctx():
    return current_cpp_context()


def _host_array(ary):
    """A host argument as an object with the buffer protocol."""
    if isinstance(ary, np.ndarray):
        return ary
    return np.asarray(ary)


def _own_memory(ary, what):
    """The host array whose memory ``what`` (pinned, mapped, register)
    works on: an object with the buffer protocol, as a NumPy array over the
    same bytes. TypeError for anything else (a list or an int would be a
    temporary copy, pinned or mapped to no effect; Numba refuses them too)."""
    if isinstance(ary, np.ndarray):
        return ary
    try:
        memoryview(ary).release()
    except TypeError:
        raise TypeError(f"{what}: expected host arrays (objects with the buffer protocol), "
                        f"not {type(ary).__name__}") from None
    return np.asarray(ary)


def _numpy_over(holder, dtype, cls):
    host = np.asarray(holder)
    if host.dtype != dtype:
        host = host.view(dtype)
    return host.view(cls)


def device_for_kernel(ary):
    """The device array behind a mapped or managed NumPy array passed whole."""
    # Only the array made by mapped_array / managed_array carries its device
    # side (views of it are new objects without it, and pass as host arrays).
    dev = getattr(ary, "_gpuhal_device", None)
    if dev is None or ary.shape != dev.shape or ary.strides != dev.strides:
        return None
    return dev


def to_device(obj: Any, stream: Any = 0, copy: bool = True, to: Optional[DeviceNDArray] = None) -> DeviceNDArray:
    """Host array -> device array (a new one with the same shape, strides
    and dtype; or ``to``). The host array must be contiguous at its core
    (broadcast arrays are fine); a device array is returned as it is."""
    if isinstance(obj, DeviceNDArray):
        return obj
    if to is not None:
        to.copy_to_device(obj, stream=stream)
        return to
    host = _host_array(obj)
    if host.size == 0:  # nothing to copy; the strides as NumPy has them (its buffer export rewrites them)
        return device_array(host.shape, host.dtype, strides=host.strides, stream=stream)
    s = stream_or_none(stream)
    array = _gpuhal.to_device(_ctx(), host, s, bool(copy))
    if copy:
        finish_if_pageable(s, host)
    return DeviceNDArray(array, host.dtype, stream)


def device_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C",
                 stream: Any = 0) -> DeviceNDArray:
    """An uninitialised device array (np.empty's shapes, strides and orders)."""
    dt, typestr = _dtype_and_typestr(dtype)
    array = _gpuhal.device_array(current_cpp_context(), _shape(shape), typestr,
                                 [] if strides is None else _integers(strides, "strides"), order)
    return DeviceNDArray._of(array, dt, stream)


def _strides_like(ary):
    ary_shape = list(ary.shape)
    return _gpuhal.strides_like(ary_shape, list(ary.strides), int(ary.dtype.itemsize), "K")


def device_array_like(ary: Any, stream: Any = 0) -> DeviceNDArray:
    """A device array with ``ary``'s shape and dtype and NumPy's empty_like strides."""
    return device_array(ary.shape, ary.dtype, _strides_like(ary), stream=stream)


def managed_array(shape, dtype=np.float64, strides=None, order="C", stream=0, attach_global=True):
    """A ManagedNDArray: memory the host and the device both address
    (gpuhal.NotSupportedError on backends or devices without it)."""
    shape = _shape(shape)
    array = _gpuhal.managed_array(_ctx(), shape, _typestr(dtype), _strides(strides), order)
    dev = DeviceNDArray(array, np.dtype(dtype), stream)
    host = _numpy_over(array.host_view(), np.dtype(dtype), ManagedNDArray)
    host._gpuhal_device = dev
    return host


def pinned_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C") -> "np.ndarray[Any, Any]":
    """A NumPy array in pinned host memory (freed through the deferred
    deallocation queue when the array is gone)."""
    shape = _shape(shape)
    holder = _gpuhal.pinned_array(_ctx(), shape, _typestr(dtype), _strides(strides), order)
    return _numpy_over(holder, np.dtype(dtype), PinnedNDArray)


def pinned_array_like(ary):
    """A PinnedNDArray with ``ary``'s shape and dtype."""
    return pinned_array(ary.shape, ary.dtype, _strides_like(ary))


def mapped_array(shape: Any, dtype: Any = np.float64, strides: Any = None, order: str = "C", stream: Any = 0,
                 portable: bool = False, wc: bool = False) -> "np.ndarray[Any, Any]":
    """A MappedNDArray: host memory mapped into the device's address space."""
    shape = _shape(shape)
    holder, array = _gpuhal.mapped_array(_ctx(), shape, _typestr(dtype), _strides(strides), order,
                                         bool(portable), bool(wc))
    host = _numpy_over(holder, np.dtype(dtype), MappedNDArray)
    host._gpuhal_device = DeviceNDArray(array, np.dtype(dtype), stream)
    return host


def mapped_array_like(ary, stream=0, portable=False, wc=False):
    """A MappedNDArray with ``ary``'s shape and dtype."""
    return mapped_array(ary.shape, ary.dtype, _strides_like(ary), stream=stream, portable=portable, wc=wc)


@contextlib.contextmanager
def pinned(*arylist: Any) -> Iterator[None]:
    """``with pinned(a, b):`` -- the arrays are page-locked inside the block."""
    scope = _gpuhal.pin(_ctx(), [_own_memory(a, "pinned") for a in arylist])
    try:
        yield
    finally:
        scope.close()


@contextlib.contextmanager
def mapped(*arylist: Any, **kws: Any) -> Iterator[Any]:
    """``with mapped(a) as d:`` -- the arrays are mapped into the device's
    address space inside the block; yields their device arrays (one, or a
    list for several)."""
    if kws and set(kws) != {"stream"}:
        raise TypeError("mapped() takes only 'stream' as a keyword")
    stream = kws.get("stream", 0)
    hosts = [_own_memory(a, "mapped") for a in arylist]
    scope = _gpuhal.map(_ctx(), hosts)
    try:
        devs = [DeviceNDArray(d, h.dtype, stream) for d, h in zip(scope.device_arrays(), hosts)]
        yield devs[0] if len(devs) == 1 else devs
    finally:
        scope.close()


# Registrations made by register(), per context and byte range, so that
# deregister() (Numba ROC's pair of register) can undo them; each entry
# keeps its array alive while the bytes are registered.
_registrations = {}
_registrations_lock = threading.Lock()


def _registration_key(ctx, host):
    return (ctx, host.__array_interface__["data"][0], host.nbytes)


class register:
    """Numba ROC's ``register(*arrays)``: registers (page-locks) the arrays
    now, until ``deregister(a)``, ``release()`` or the end of a ``with
    register(a):`` block. Registrations nest and count: the bytes stay
    registered while any registration covering them lives."""

    def __init__(self, *arylist, portable=False):
        ctx = _ctx()
        self._entries = []
        try:
            for a in arylist:
                host = _own_memory(a, "register")
                scope = _gpuhal.register_host(ctx, [host], bool(portable), False)
                entry = (scope, host)
                key = _registration_key(ctx, host)
                with _registrations_lock:
                    _registrations.setdefault(key, []).append(entry)
                self._entries.append((key, entry))
        except BaseException:
            self.release()
            raise

    def release(self):
        """Undoes this call's registrations that deregister() did not."""
        entries, self._entries = self._entries, []
        for key, entry in entries:
            with _registrations_lock:
                live = _registrations.get(key, [])
                if entry not in live:
                    continue
                live.remove(entry)
                if not live:
                    del _registrations[key]
            entry[0].close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


def deregister(*arylist):
    """Numba ROC's ``deregister``: drops one registration of each array's
    bytes (the newest register() of them; gpuhal.NotRegisteredError when
    they are not registered)."""
    ctx = _ctx()
    for a in arylist:
        host = _own_memory(a, "deregister")
        key = _registration_key(ctx, host)
        with _registrations_lock:
            live = _registrations.get(key)
            entry = live.pop() if live else None
            if live == []:
                del _registrations[key]
        if entry is not None:
            entry[0].close()
        else:
            _gpuhal.deregister_host(ctx, [host])


# ---- managed-memory hints (Capability "managed_hints"; Numba has no such names) ----
_ADVICE = {"read_mostly": 1, "unset_read_mostly": 2, "preferred_location": 3, "unset_preferred_location": 4,
           "accessed_by": 5, "unset_accessed_by": 6}


def _managed_device_array(ary):
    # A managed array (its device side), a NumPy view of one (the bytes it
    # spans), a DeviceNDArray, managed memory from memallocmanaged (its
    # bytes) or a view(start, stop) of it (a range).
    if hasattr(ary, "_gpuhal_device_bytes"):
        dev = ary._gpuhal_device_bytes()
    elif isinstance(ary, np.ndarray) and getattr(ary, "_gpuhal_device", None) is None:
        dev = _managed_view_bytes(ary)
    elif hasattr(ary, "_gpuhal_device"):
        dev = ary._gpuhal_device
    else:
        dev = getattr(ary, "_memory", ary)
    if not isinstance(dev, DeviceNDArray):
        raise TypeError("expected a managed array (gpuhal.managed_array) or a NumPy view of one, managed memory "
                        f"(memallocmanaged) or a view(start, stop) of it, got {type(ary).__name__}")
    return dev


def _byte_bounds(a):
    """[low, high) addresses of the bytes `a`'s elements occupy (NumPy's
    byte_bounds, which NumPy 2 moved); (low, low) for an empty array."""
    low = high = a.__array_interface__["data"][0]
    if a.size == 0:
        return low, low
    for n, stride in zip(a.shape, a.strides):
        if stride < 0:
            low += stride * (n - 1)
        else:
            high += stride * (n - 1)
    return low, high + a.itemsize


def _managed_view_bytes(view):
    """The device bytes a NumPy view of a managed array spans (a range of
    the array made by managed_array), or None when `view` is none."""
    base = view.base
    while base is not None and getattr(base, "_gpuhal_device", None) is None:
        base = getattr(base, "base", None)
    if base is None or not isinstance(base, np.ndarray):
        return None
    low, high = _byte_bounds(view)
    base_low, _ = _byte_bounds(base)
    whole = base._gpuhal_device  # C- or F-contiguous, as managed_array made it
    flat = whole.reshape(whole.size, order="A" if whole.is_c_contiguous() else "F") if whole.ndim != 1 else whole
    return flat.view(np.uint8)[low - base_low:max(high, low) - base_low]


def _location(device):
    if device is None or device == "host":
        return -1
    if isinstance(device, bool) or not isinstance(device, int) or device < 0:
        raise ValueError(f"device must be a device ordinal (an int >= 0) or 'host', not {device!r}")
    return device


def prefetch(ary, device=0, stream=0):
    """Migrates a managed array's pages (or those of managed memory, or of
    its ``view(start, stop)``: a range) to ``device`` (an ordinal, or
    ``"host"``) in ``stream``'s order, as ``cuMemPrefetchAsync`` does, so
    that the work that uses them there does not fault them in. A hint: the
    array stays usable everywhere. NotSupportedError where the backend or
    device has no managed-memory hints."""
    dev = _managed_device_array(ary)
    _gpuhal.prefetch(dev._a, _location(device), dev._stream(stream))


def advise(ary, advice, device="host"):
    """Advises the backend how a managed array will be used, as
    ``cuMemAdvise`` does: ``advice`` is one of "read_mostly",
    "preferred_location", "accessed_by" or their "unset_" forms; ``device``
    (an ordinal, or ``"host"``) matters for the preferred location and
    accessed-by advice."""
    if not isinstance(advice, str) or advice not in _ADVICE:
        raise ValueError(f"advice must be one of {sorted(_ADVICE)}, not {advice!r}")
    dev = _managed_device_array(ary)
    _gpuhal.advise(dev._a, _ADVICE[advice], _location(device))


# ---- virtual memory (Capability "virtual_memory") -------------------------------------
def vm_granularity():
    """(minimum, recommended): what every virtual-memory size is a multiple of."""
    return tuple(_gpuhal.vm_granularity(_ctx()))


_VM_ACCESS = {"none": 0, "read": 1, "read_write": 3}


class PhysicalMemory:
    """Physical device memory of the current context's device, at no
    address until a VirtualRange maps it (CUDA's ``cuMemCreate``). ``size``
    is a multiple of ``vm_granularity()[0]``. It stays while this object or
    a mapping of it lives."""

    def __init__(self, size):
        self._p = _gpuhal._PhysicalMemory.create(_ctx(), _integer(size, "PhysicalMemory: size"))

    @property
    def size(self):
        """Bytes."""
        return self._p.size


class VirtualRange:
    """A reserved range of device addresses (CUDA's ``cuMemAddressReserve``)
    that physical memory is mapped into piece by piece. Offsets and sizes
    are multiples of ``vm_granularity()[0]``; a device may use a mapping
    only after ``set_access``. ``array(offset, shape, dtype)`` gives a
    DeviceNDArray over mapped bytes; ``unmap`` refuses a mapping such an
    array still covers. The addresses go when this object and every array
    over it are gone."""

    def __init__(self, size, alignment=0):
        self._r = _gpuhal._VirtualRange.reserve(_ctx(), _integer(size, "VirtualRange: size"),
                                              _integer(alignment, "VirtualRange: alignment"))

    @property
    def base(self):
        """The first address."""
        return self._r.base

    @property
    def size(self):
        """Bytes reserved."""
        return self._r.size

    def map(self, offset, size, memory, memory_offset=0):
        """Maps ``size`` bytes of ``memory`` (a PhysicalMemory) from
        ``memory_offset`` at ``offset``."""
        if not isinstance(memory, PhysicalMemory):
            raise TypeError(f"memory must be a gpuhal.PhysicalMemory, not {type(memory).__name__}")
        self._r.map(_integer(offset, "map: offset"), _integer(size, "map: size"), memory._p,
                    _integer(memory_offset, "map: memory_offset"))

    def unmap(self, offset, size):
        """Unmaps the mapping at ``offset`` of ``size`` bytes (after the
        context's queued work)."""
        self._r.unmap(_integer(offset, "unmap: offset"), _integer(size, "unmap: size"))

    def set_access(self, offset, size, access="read_write", device=None):
        """Gives ``device`` (an ordinal; None: the context's device) ``access``
        ("none", "read" or "read_write") to the mappings in
        [offset, offset + size)."""
        if access not in _VM_ACCESS:
            raise ValueError(f"access must be one of {sorted(_VM_ACCESS)}, not {access!r}")
        if device is not None and (isinstance(device, bool) or not isinstance(device, int) or device < 0):
            raise ValueError(f"device must be a device ordinal (an int >= 0) or None, not {device!r}")
        self._r.set_access(_integer(offset, "set_access: offset"), _integer(size, "set_access: size"),
                           _VM_ACCESS[access], -1 if device is None else device)

    def array(self, offset, shape, dtype=np.float32):
        """A C-contiguous DeviceNDArray over mapped bytes from ``offset``."""
        dt = np.dtype(dtype)
        return DeviceNDArray(self._r.array(_integer(offset, "array: offset"), _shape(shape), _typestr(dt)), dt)


class GrowableDeviceArray:
    """A 1-d device array that grows in place: addresses for ``max_size``
    elements are reserved once, and memory is mapped at the end as it grows,
    so its device pointer never changes (PyTorch's expandable segments).
    NotSupportedError on backends without virtual memory."""

    def __init__(self, max_size, dtype=np.float32):
        self._dtype = np.dtype(dtype)
        self._g = _gpuhal._GrowableDeviceArray(_ctx(), _typestr(self._dtype), _integer(max_size, "GrowableDeviceArray: max_size"))

    def resize(self, n):
        """Makes the array ``n`` elements long (new elements uninitialised)."""
        self._g.resize(_integer(n, "resize: n"))

    def reserve(self, n):
        """Maps memory for at least ``n`` elements without changing the size."""
        self._g.reserve(_integer(n, "reserve: n"))

    @property
    def size(self):
        """Elements in use."""
        return self._g.size

    @property
    def capacity(self):
        """Elements mapped now (the array grows in place up to max_size)."""
        return self._g.capacity

    @property
    def max_size(self):
        """Elements reserved: the most it can ever hold."""
        return self._g.max_size

    @property
    def device_pointer(self):
        """Address of element 0; it never changes as the array grows."""
        return self._g.device_pointer

    def array(self):
        """The first ``size`` elements, as a DeviceNDArray. Growing later
        does not move them: an array taken before stays valid (it keeps its
        own length)."""
        return DeviceNDArray(self._g.array(), self._dtype)

    def __len__(self):
        return self.size

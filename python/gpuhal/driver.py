# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's low-level memory functions (numba.cuda.cudadrv.driver) over
gpuhal: byte copies and memsets between memory objects, and the size and
extent queries Numba's tests and EMM plugins use.

Device-side arguments may be a DeviceNDArray (its allocation's bytes, as in
Numba; it must be contiguous), a MemoryPointer, or a mapped or managed
array/memory object (their device side). Host-side arguments are anything
with the buffer protocol. ``stream=0`` means synchronous; with a stream the
copy is asynchronous only with gpuhal's page-locked host memory (CUDA's
pageable-memory rule, see gpuhal._hostarrays).
"""

import ctypes

import numpy as np

from . import _gpuhal
from ._devicearray import DeviceNDArray
from ._emm import BaseCUDAMemoryManager, GetIpcHandleMixin, HostOnlyCUDAMemoryManager, IpcHandle, set_memory_manager
from ._errors import Error as CudaAPIError
from ._memory_objects import AutoFreePointer, ManagedMemory, MappedMemory, MemoryPointer, PinnedMemory
from ._shapes import _integer

Stream = _gpuhal.Stream
Event = _gpuhal.Event

__all__ = [
    "Stream", "Event", "MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "ManagedMemory",
    "IpcHandle", "BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager", "GetIpcHandleMixin", "set_memory_manager",
    "CudaAPIError", "device_memset", "device_to_host", "host_to_device", "device_to_device", "device_memory_size",
    "host_memory_size", "host_memory_extents", "device_pointer", "device_ctypes_pointer", "device_extents",
    "host_pointer", "is_device_memory", "require_device_memory",
]


def is_device_memory(obj):
    """True for objects that are device memory (Numba's __cuda_memory__ rule)."""
    return bool(getattr(obj, "__cuda_memory__", False)) or isinstance(obj, DeviceNDArray)


def require_device_memory(obj):
    """Raises (Numba's plain Exception, "Not a CUDA memory object.") unless obj is device memory."""
    if not is_device_memory(obj):
        raise Exception("Not a CUDA memory object.")


def _device_bytes(obj):
    """The DeviceNDArray of uint8 over obj's device bytes (from its start)."""
    if isinstance(obj, DeviceNDArray):
        if not (obj.is_c_contiguous() or obj.is_f_contiguous()):
            raise ValueError("Array contains non-contiguous buffer and cannot be transferred as a single memory "
                             "region (a byte operation needs the allocation's bytes)")
        flat = obj.reshape(obj.size, order="A" if obj.is_c_contiguous() else "F") if obj.ndim != 1 else obj
        return flat.view(np.uint8)
    getter = getattr(obj, "_gpuhal_device_bytes", None)
    if getter is not None:
        return getter().view(np.uint8) if isinstance(getter(), DeviceNDArray) else getter()
    device = getattr(obj, "_gpuhal_device", None)  # a mapped or managed NumPy array passed whole
    if device is not None:
        return _device_bytes(device)
    if isinstance(obj, MemoryPointer):
        return obj._gpuhal_array()
    raise TypeError(f"expected device memory (a device array or memory object), not {type(obj).__name__}")


def _host_bytes(obj, writable):
    host = np.asarray(obj) if not isinstance(obj, np.ndarray) else obj
    if not (host.flags.c_contiguous or host.flags.f_contiguous):
        raise ValueError("Array contains non-contiguous buffer and cannot be transferred as a single memory region")
    if writable and not host.flags.writeable:
        raise ValueError("the host array is read-only")
    return host.reshape(-1, order="A").view(np.uint8)


def _check_size(size, *limits):
    size = _integer(size, "size")
    if size < 0 or any(size > n for n in limits):
        raise ValueError(f"size {size} is negative or beyond the memory ({', '.join(str(n) for n in limits)} bytes)")
    return size


def host_to_device(dst, src, size, stream=0):
    """Copies ``size`` bytes from host ``src`` to device ``dst``."""
    d, h = _device_bytes(dst), _host_bytes(src, False)
    size = _check_size(size, d.size, h.size)
    if size:
        d[:size].copy_to_device(h[:size], stream=stream)


def device_to_host(dst, src, size, stream=0):
    """Copies ``size`` bytes from device ``src`` to host ``dst``."""
    h, d = _host_bytes(dst, True), _device_bytes(src)
    size = _check_size(size, d.size, h.size)
    if size:
        d[:size].copy_to_host(h[:size], stream=stream)


def device_to_device(dst, src, size, stream=0):
    """Copies ``size`` bytes between device memory objects."""
    d, s = _device_bytes(dst), _device_bytes(src)
    size = _check_size(size, d.size, s.size)
    if size:
        d[:size].copy_to_device(s[:size], stream=stream)


def device_memset(dst, val, size, stream=0):
    """Sets ``size`` bytes of device ``dst`` to the byte ``val``."""
    d = _device_bytes(dst)
    size = _check_size(size, d.size)
    if size:
        d[:size].setitem(slice(None), np.uint8(_integer(val, "device_memset: val") & 0xFF), stream=stream)


def device_pointer(obj):
    """The device address of obj's first byte (an int)."""
    if isinstance(obj, DeviceNDArray):
        return obj.device_pointer
    value = getattr(obj, "device_pointer", None)
    if value is None:
        device = getattr(obj, "_gpuhal_device", None)
        if device is not None:
            return device.device_pointer
        raise TypeError(f"{type(obj).__name__} is not device memory")
    return int(value)


def device_ctypes_pointer(obj):
    """obj's device address as a ctypes.c_size_t (Numba's)."""
    return ctypes.c_size_t(device_pointer(obj))


def device_memory_size(obj):
    """The bytes of device memory obj spans (an array: its allocation's span)."""
    if isinstance(obj, DeviceNDArray):
        return obj.alloc_size
    size = getattr(obj, "_cuda_memsize_", None)
    if size is None:
        device = getattr(obj, "_gpuhal_device", None)
        if device is None:
            raise TypeError(f"{type(obj).__name__} is not device memory")
        return device.alloc_size
    return int(size)


def device_extents(obj):
    """(start, end) device addresses of the bytes obj spans (half open)."""
    start = device_pointer(obj)
    return start, start + device_memory_size(obj)


def host_memory_extents(obj):
    """(start, end) addresses of the bytes a host buffer spans (half open)."""
    host = np.asarray(obj)
    if host.size == 0:
        start = host.__array_interface__["data"][0]
        return start, start
    return np.lib.array_utils.byte_bounds(host)


def host_memory_size(obj):
    """The bytes a host buffer spans, from its first to past its last element."""
    start, end = host_memory_extents(obj)
    return end - start


def host_pointer(obj, readonly=False):
    """The address of a host buffer's first byte."""
    return host_memory_extents(obj)[0]

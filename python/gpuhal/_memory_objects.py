# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's memory objects: what a context's memalloc, memhostalloc,
memallocmanaged and mempin return (numba.cuda.cudadrv.driver's
MemoryPointer, AutoFreePointer, MappedMemory, PinnedMemory, ManagedMemory).

Each object made by gpuhal holds gpuhal's memory (a uint8 device array, a
NumPy array over pinned, mapped or managed memory), so the memory lives as
long as the object or any view of it: ``free()`` drops this object's
reference and runs its finalizer, but never frees memory a view can still
reach. An EMM plugin may also make them over memory of its own (``pointer``
and a ``finalizer``, Numba's constructor), which gpuhal does not touch.

The host-side objects (PinnedMemory, MappedMemory, ManagedMemory) are NumPy
uint8 arrays of ``size`` bytes, so ``np.ndarray(buffer=mem, ...)`` views
them as Numba users do.
"""

import ctypes
import weakref

import numpy as np

from ._shapes import _integer

__all__ = ["MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "ManagedMemory"]


def _address(pointer):
    """An address as an int, from what Numba's EMM plugins pass: an int (or
    a NumPy integer), a ctypes integer or pointer (RMM's plugin passes a
    ``c_uint64`` under Numba's ctypes binding), or an object that converts
    with int() and is no number (cuda.bindings' ``CUdeviceptr``, RMM's under
    NVIDIA's binding); None is 0. A float, bool or string is a TypeError."""
    if pointer is None:
        return 0
    if isinstance(pointer, ctypes._SimpleCData):  # c_void_p, c_uint64, c_size_t, ...
        value = pointer.value
        return 0 if value is None else _integer(value, f"pointer ({type(pointer).__name__}'s value)")
    if isinstance(pointer, (int, np.integer, float, np.floating, str, bytes, np.bool_)) or \
            not hasattr(type(pointer), "__int__"):
        return _integer(pointer, "pointer")
    return int(pointer)


class _PointerAttributes:
    """Numba's derived pointer attributes, from ``device_pointer`` (an int)."""

    @property
    def device_pointer_value(self):
        return self.device_pointer or None

    @property
    def device_ctypes_pointer(self):
        return ctypes.c_size_t(self.device_pointer)


class MemoryPointer(_PointerAttributes):
    """``size`` bytes of device memory at ``device_pointer`` in ``context``.

    ``view(start, stop)`` gives a MemoryPointer over part of it sharing the
    owner; ``free()`` runs the finalizer (once) and drops the memory this
    object holds; ``device_ctypes_pointer`` is a ``ctypes.c_size_t`` (Numba's)."""

    __cuda_memory__ = True

    def __init__(self, context, pointer, size, owner=None, finalizer=None, _memory=None):
        self.context = context
        self.device_pointer = _address(pointer)
        self.size = _integer(size, "size")
        self._cuda_memsize_ = self.size
        self._owner = owner
        self._memory = _memory  # gpuhal's device array (uint8) behind it, when gpuhal allocated it
        self._freed = False
        self._no_bytes = "memory of an EMM plugin's own"  # what it is when _memory is None
        self.is_managed = finalizer is not None
        self.handle = self.device_pointer
        self._finalizer = weakref.finalize(self, finalizer) if finalizer is not None else None
        # Numba's count of this memory's live users: 1, plus one per live
        # view. Informational here: the memory lives while any Python
        # reference to it or to a view does.
        self.refct = 1

    @property
    def owner(self):
        """The pointer that owns the memory (itself, or the one a view was made from)."""
        return self if self._owner is None else self._owner

    def own(self):
        """An owning pointer over the same memory (Numba's ``own``): keeps it alive."""
        return self

    def free(self):
        """Drops this object's memory now (Numba: "forces the device memory
        to the trash"); views keep what they reach alive."""
        if self._finalizer is not None:
            if not self._finalizer.alive:
                raise RuntimeError("Freeing dead memory")
            self._finalizer()
        self._memory = None
        self._freed = True

    def _gpuhal_array(self):
        """gpuhal's device array (uint8) behind this memory; ValueError
        naming why there is none: freed by ``free()`` (the memory may be
        gone, so it is never touched), or an EMM plugin's own."""
        if self._memory is not None:
            return self._memory
        if self._freed:
            raise ValueError(f"{self!r} was freed (free()); its memory is not used again")
        raise ValueError(f"{self!r} is {self._no_bytes}, which gpuhal cannot copy")

    def memset(self, byte, count=None, stream=0):
        """Sets ``count`` bytes (all without it) to ``val``, on ``stream`` (0: synchronously)."""
        memory = self._gpuhal_array()
        count = self.size if count is None else _integer(count, "memset: count")
        if count < 0 or count > self.size:
            raise ValueError(f"size {count} is negative or beyond the memory ({self.size} bytes)")
        if count:
            memory[:count].setitem(slice(None), np.uint8(_integer(byte, "memset: byte") & 0xFF), stream=stream)

    def view(self, start, stop=None):
        """A MemoryPointer over bytes [start, stop) of this one; it keeps this memory alive."""
        start = _integer(start, "view: start")
        stop = self.size if stop is None else _integer(stop, "view: stop")
        if not 0 <= start <= self.size or stop < start or stop > self.size:
            raise IndexError(f"view [{start}, {stop}) of {self.size} bytes")
        if not self.device_pointer:
            if stop != start:
                raise RuntimeError("non-empty slice into empty slice")
            return self
        memory = None if self._memory is None else self._memory[start:stop]
        owner = self.owner
        view = MemoryPointer(self.context, self.device_pointer + start, stop - start, owner=owner, _memory=memory)
        view._freed, view._no_bytes = self._freed, self._no_bytes  # refused on use as its parent is
        if isinstance(owner, MemoryPointer):
            owner.refct += 1
            weakref.finalize(view, _unref, owner)
        return view

    def __repr__(self):
        return f"<gpuhal.{type(self).__name__} {self.size} bytes at 0x{self.device_pointer:x}>"


def _unref(owner):
    owner.refct -= 1


class AutoFreePointer(MemoryPointer):
    """A MemoryPointer whose finalizer runs when the last reference goes."""


class _HostMemory(np.ndarray):
    """A uint8 NumPy array over host memory gpuhal allocated, with Numba's
    memory-object attributes."""

    @classmethod
    def _over(cls, host_array, context, device=None, finalizer=None, owner=None):
        mem = np.asarray(host_array).reshape(-1).view(np.uint8).view(cls)
        mem._gpuhal_extra = {
            "context": context, "device": device, "owner": owner,
            "finalizer": weakref.finalize(mem, finalizer) if finalizer is not None else None,
        }
        return mem

    def __array_finalize__(self, obj):
        pass

    def _extra(self, key):
        return getattr(self, "_gpuhal_extra", {}).get(key)

    context = property(lambda self: self._extra("context"))
    host_pointer = property(lambda self: self.__array_interface__["data"][0])
    handle = host_pointer
    owned = property(lambda self: self._extra("owner"))
    is_managed = property(lambda self: self._extra("finalizer") is not None)

    def own(self):
        return self

    def free(self):
        finalizer = self._extra("finalizer")
        if finalizer is not None:
            if not finalizer.alive:
                raise RuntimeError("Freeing dead memory")
            finalizer()


class PinnedMemory(_HostMemory):
    """Pinned (page-locked) host memory of ``size`` bytes (Numba's
    PinnedMemory); a NumPy uint8 array, usable as ``np.ndarray``'s buffer."""


class _DeviceSide(_PointerAttributes, _HostMemory):
    """Host memory the device addresses too (mapped or managed)."""

    __cuda_memory__ = True

    @property
    def device_pointer(self):
        return self._extra("device").device_pointer

    @property
    def _cuda_memsize_(self):
        return self.nbytes

    def _gpuhal_device_bytes(self):
        return self._extra("device")

    def view(self, *args, **kwargs):
        """Numba's ``view(start, stop)`` with integers (a MemoryPointer of
        the device side); NumPy's ``view(dtype)`` otherwise."""
        if args and isinstance(args[0], (int, np.integer)) and not isinstance(args[0], bool):
            whole = MemoryPointer(self.context, self.device_pointer, self.nbytes, owner=self,
                                  _memory=self._extra("device"))
            return whole.view(*args, **kwargs)
        return super().view(*args, **kwargs)


class MappedMemory(_DeviceSide):
    """Host memory mapped into the device's address space (Numba's
    MappedMemory)."""


class ManagedMemory(_DeviceSide):
    """Managed memory, addressed by the host and the device (Numba's
    ManagedMemory)."""

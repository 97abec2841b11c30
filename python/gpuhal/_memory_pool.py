# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.MemoryPool: a stream-ordered pool of the current context's
device memory, as an object. The default kind, ``"caching"``, is CuPy's
``cupy.cuda.MemoryPool``, PyTorch's caching allocator and RMM's pool: a
block returns to the pool when its last array goes; a later allocation on
the same stream reuses it at once, one on another stream only once the
first stream has no work left. ``"driver"`` hands everything to a
stream-ordered pool the backend makes for this object alone (cuda:
``cuMemPoolCreate``; RMM's ``CudaAsyncMemoryResource``, cuda.core's
``DeviceMemoryResource``), where ``supports("driver_memory_pools")``.
"""

import numpy as np

from . import _gpuhal
from ._devicearray import DeviceNDArray
from ._managers import current_cpp_context
from ._memory_objects import MemoryPointer
from ._shapes import _dtype_and_typestr, _integer, _shape
from ._streams import stream_or_none

__all__ = ["MemoryPool"]

_NO_LIMIT = (1 << 64) - 1


class MemoryPool:
    """A pool of the current context's device memory.

    ``release_threshold``: idle bytes kept (``None``: all, until ``trim``);
    above it the longest-idle blocks go back to the backend as blocks return
    (``"driver"``: reserved bytes, used ones included, released at the next
    synchronisation, as CUDA's pools do). ``kind``: ``"caching"`` (every
    backend) or ``"driver"`` (gpuhal.NotSupportedError naming
    Capability::DriverMemoryPools where the backend has none).
    """

    def __init__(self, release_threshold=None, kind="caching"):
        threshold = _NO_LIMIT if release_threshold is None else _integer(release_threshold, "release_threshold")
        if threshold < 0:
            raise ValueError(f"release_threshold must be >= 0, not {release_threshold!r}")
        if not isinstance(kind, str) or kind not in ("caching", "driver"):
            raise ValueError(f"kind must be 'caching' or 'driver', not {kind!r}")
        from ._context import current_context

        self._context = current_context()
        self._p = _gpuhal._MemoryPool(current_cpp_context(), threshold, kind == "driver")

    @property
    def kind(self):
        """``"caching"`` or ``"driver"``."""
        return "driver" if self._p.is_driver() else "caching"

    def allocate(self, nbytes, stream=0):
        """``nbytes`` (> 0) of device memory from the pool, usable by
        ``stream``'s work (the default stream's for 0): a MemoryPointer, as
        a context's ``memalloc`` returns."""
        nbytes = _integer(nbytes, "allocate: nbytes")
        if nbytes <= 0:
            raise ValueError(f"nbytes must be positive, not {nbytes}")
        array = self.device_array((nbytes,), np.uint8, stream)
        return MemoryPointer(self._context, array.device_pointer, nbytes, _memory=array)

    def free(self, memory, stream=0):
        """Stream-ordered free: ``memory`` (a MemoryPointer from
        ``allocate``, or a DeviceNDArray from ``device_array``) goes back in
        the order of ``stream`` (the default stream for 0) instead of its
        allocating stream's. A MemoryPointer is freed now (its ``free()``);
        Python cannot end a live array, so an array's memory goes back once
        it and every view of it are dropped. Work on other streams that uses
        the memory must be ordered before the free (an event), as in CUDA.
        Memory of another pool is a gpuhal.InvalidValueError."""
        if isinstance(memory, MemoryPointer):
            array = memory._gpuhal_array()
        elif isinstance(memory, DeviceNDArray):
            array = memory
        else:
            raise TypeError(f"memory must be a MemoryPointer or a DeviceNDArray, not {type(memory).__name__}")
        self._p.free(array._a, stream_or_none(stream))
        if isinstance(memory, MemoryPointer):
            memory.free()

    def device_array(self, shape, dtype=np.float64, stream=0):
        """An uninitialised C-contiguous DeviceNDArray from the pool,
        usable by ``stream``'s work (the default stream's for 0)."""
        dt, typestr = _dtype_and_typestr(dtype)
        array = self._p.device_array(_shape(shape), typestr, stream_or_none(stream))
        return DeviceNDArray._of(array, dt, stream)

    def device_array_like(self, ary, stream=0):
        """``device_array`` with ``ary``'s shape and dtype."""
        return self.device_array(ary.shape, ary.dtype, stream)

    @property
    def release_threshold(self):
        """Idle bytes the pool keeps (None: all, until trim); settable."""
        value = self._p.release_threshold()
        return None if value == _NO_LIMIT else value

    @release_threshold.setter
    def release_threshold(self, nbytes):
        self._p.set_release_threshold(_NO_LIMIT if nbytes is None else _integer(nbytes, "release_threshold"))

    def trim(self, keep_bytes=0):
        """Gives idle blocks back until at most ``keep_bytes`` are idle;
        returns the bytes given back."""
        keep_bytes = _integer(keep_bytes, "trim: keep_bytes")
        if keep_bytes < 0:
            raise ValueError(f"keep_bytes must be >= 0, not {keep_bytes}")
        return self._p.trim(keep_bytes)

    def stats(self):
        """used_bytes, reserved_bytes, peak_used_bytes, allocations (live),
        hits, misses and released_bytes, as a dict."""
        return self._p.stats()

    def used_bytes(self):
        """Bytes handed out (CuPy's name)."""
        return self._p.stats()["used_bytes"]

    def total_bytes(self):
        """Bytes the pool holds from the backend, used and idle (CuPy's name)."""
        return self._p.stats()["reserved_bytes"]

    def free_all_blocks(self):
        """Gives every idle block back to the backend (CuPy's name)."""
        self._p.trim(0)

    def reset_peak(self):
        """Starts ``peak_used_bytes`` again from the bytes in use now."""
        self._p.reset_peak()

    def use(self):
        """Serves every device allocation of the current context from this
        pool from now on (its memory manager; set_memory_manager or
        GPUHAL_MEMORY_MANAGER choose another again)."""
        self._p.install()
        return self

    def __repr__(self):
        s = self._p.stats()
        return (f"<gpuhal.MemoryPool: {s['used_bytes']} bytes used, {s['reserved_bytes']} reserved, "
                f"{s['allocations']} allocations>")

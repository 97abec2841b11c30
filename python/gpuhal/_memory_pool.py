# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.MemoryPool: a stream-ordered caching pool of the current
context's device memory, as an object (CuPy's ``cupy.cuda.MemoryPool``,
PyTorch's caching allocator, RMM's pool). A block returns to the pool when
its last array goes; a later allocation on the same stream reuses it at
once, one on another stream only once the first stream has no work left.
"""

import numpy as np

from . import _gpuhal
from ._devicearray import DeviceNDArray
from ._managers import current_cpp_context
from ._shapes import _dtype_and_typestr, _shape
from ._streams import stream_or_none

__all__ = ["MemoryPool"]

_NO_LIMIT = (1 << 64) - 1


class MemoryPool:
    """A pool of the current context's device memory.

    ``release_threshold``: idle bytes kept (``None``: all, until ``trim``);
    above it the longest-idle blocks go back to the backend as blocks return.
    """

    def __init__(self, release_threshold=None):
        threshold = _NO_LIMIT if release_threshold is None else int(release_threshold)
        if threshold < 0:
            raise ValueError(f"release_threshold must be >= 0, not {release_threshold!r}")
        self._p = _gpuhal._MemoryPool(current_cpp_context(), threshold)

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
        self._p.set_release_threshold(_NO_LIMIT if nbytes is None else int(nbytes))

    def trim(self, keep_bytes=0):
        """Gives idle blocks back until at most ``keep_bytes`` are idle;
        returns the bytes given back."""
        keep_bytes = int(keep_bytes)
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

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Kernels: ``gpuhal.compile(source)`` and Numba's launch syntax.

The source is gpuhal's portable kernel dialect (see docs/kernels.md), the
same on every backend::

    module = gpuhal.compile('''
        GPUHAL_KERNEL void scale(GPUHAL_GLOBAL float *x, float a, int n) {
          int i = gpuhal_global_id(0);
          if (i < n) x[i] *= a;
        }''')
    module.scale[blocks, threads](d_x, 2.0, n)          # or module.scale[blocks, threads, stream, shared_bytes]

Arguments follow Numba's rules: device arrays (and objects with
``__dlpack__`` that are not NumPy arrays) are passed as they are; NumPy
arrays are copied to the device before the kernel and back after it (not
back when read-only or when the parameter points to const), and the launch
then waits for its stream; mapped and managed arrays passed whole go as
their device side; scalars by value, converted to the parameter's type
(integers that fit; a float never becomes an integer). A wrong count or
type raises before anything is queued.
"""

import operator
from typing import Any, Mapping, Optional

import numpy as np

from . import _gpuhal
from ._devicearray import DeviceNDArray
from ._errors import raise_status
from ._interop import from_dlpack
from ._managers import current_cpp_context
from ._memory import device_for_kernel
from ._shapes import _integer
from ._streams import stream_or_none

__all__ = ["compile", "Module", "Kernel"]


_UINT32_MAX = 0xFFFFFFFF


def _dims(value, what):
    """[x] or [x, y(, z)] from an integer or a sequence of 1 to 3 integers
    (Numba's rule: no floats, which would be truncated); a size below 0 or
    past 32 bits is a gpuhal.InvalidValueError naming it (0 is refused by
    the launch, with both configurations in its message)."""
    if type(value) is int and 0 <= value <= _UINT32_MAX:
        return [value]  # the common case, on every launch with a stream: checked at once
    if type(value) is int:
        dims = [value]
    elif isinstance(value, np.integer):
        dims = [int(value)]
    else:
        try:
            dims = [operator.index(v) for v in value]
        except TypeError:
            raise TypeError(f"{what} must be an integer or a sequence of 1 to 3 integers, got {value!r}") from None
        if not 1 <= len(dims) <= 3:
            raise ValueError(f"{what} must have 1 to 3 dimensions, got {value!r}")
    for d in dims:
        if d < 0 or d > _UINT32_MAX:
            raise_status("ERROR_INVALID_VALUE", f"Kernel launch: {what} {value!r}: a size must be 1 to {_UINT32_MAX}")
    return dims


def _argument(a):
    kind = type(a)
    if kind is DeviceNDArray:
        return a._a
    if kind is int or kind is float:
        return a
    if isinstance(a, DeviceNDArray):
        return a._a
    if isinstance(a, np.ndarray):
        dev = device_for_kernel(a)
        return a if dev is None else dev._a
    if isinstance(a, np.generic):
        if a.dtype == np.bool_:
            raise TypeError("a NumPy bool has no kernel type; pass an integer")
        return _gpuhal._Scalar(a.dtype.str, a.tobytes())
    if hasattr(a, "__dlpack__"):
        return from_dlpack(a)._a
    return a


class Kernel:
    """A compiled kernel; ``kernel[grid, block, stream, shared_bytes](*args)`` launches it."""

    def __init__(self, kernel, module):
        self._k = kernel
        self._module = module  # keeps the module loaded
        self.name = kernel.name
        # Launch configurations seen without a stream, by their hashable
        # [grid, block(, 0, shared)] tuple: a loop that launches with the same
        # one checks it once. (Not with a stream: the cache would keep it.)
        self._configs = {}

    def __getitem__(self, config: Any) -> "_Launch":
        try:
            launch = self._configs.get(config)
        except TypeError:  # unhashable (a list of dimensions)
            launch = None
        if launch is not None:
            return launch
        n = len(config) if isinstance(config, tuple) else 0
        if not 2 <= n <= 4:
            raise ValueError("a launch needs [griddim, blockdim] and may add a stream and dynamic shared bytes")
        stream = config[2] if n > 2 else 0
        shared = config[3] if n > 3 else 0
        if type(shared) is not int:
            shared = operator.index(shared)
        if not 0 <= shared <= _UINT32_MAX:
            raise_status("ERROR_INVALID_VALUE", f"Kernel launch: dynamic shared bytes {shared} must be 0 to {_UINT32_MAX}")
        launch = _Launch(self._k, _dims(config[0], "griddim"), _dims(config[1], "blockdim"), stream_or_none(stream),
                         shared)
        if launch._stream is None and len(self._configs) < 64:
            try:
                self._configs[config] = launch
            except TypeError:
                pass
        return launch

    def __call__(self, *args):
        raise ValueError("no launch configuration: launch with kernel[blockspergrid, threadsperblock](args...)")

    @property
    def attributes(self):
        """What the kernel needs and allows on this backend, a dict:
        ``max_threads_per_block``, ``static_shared_bytes``,
        ``max_dynamic_shared_bytes``, ``local_bytes_per_thread``,
        ``registers_per_thread`` (0 on host) and ``preferred_block_multiple``
        (the warp or wavefront size). ``NotSupportedError`` on a backend
        without ``kernel_attributes``."""
        return self._k.attributes()

    def max_active_blocks_per_unit(self, block_threads, dynamic_shared_bytes=0):
        """Blocks of ``block_threads`` work-items that can be resident at
        once on one compute unit (0 when such a block cannot launch)."""
        return self._k.max_active_blocks_per_unit(_integer(block_threads, "block_threads"),
                                                  _integer(dynamic_shared_bytes, "dynamic_shared_bytes"))

    def suggest_block_size(self, dynamic_shared_bytes=0):
        """``(block, min_grid)``: the block size that keeps the most
        work-items resident per compute unit, and the blocks that fill the
        device once (cuOccupancyMaxPotentialBlockSize's rule, on every
        backend)."""
        return self._k.suggest_block_size(_integer(dynamic_shared_bytes, "dynamic_shared_bytes"))

    def __repr__(self):
        return f"<gpuhal.Kernel {self.name}>"


class _Launch:
    __slots__ = ("_k", "_grid", "_block", "_stream", "_shared")

    def __init__(self, k, grid, block, stream, shared):
        self._k, self._grid, self._block, self._stream, self._shared = k, grid, block, stream, shared

    def __call__(self, *args: Any) -> None:
        self._k.launch(self._grid, self._block, self._stream, self._shared, [_argument(a) for a in args])


class Module:
    """The kernels of one compiled source, as attributes (``module.name``)
    or by ``module[name]``."""

    def __init__(self, module):
        self._m = module
        self.kernel_names = list(module.kernel_names)
        self._kernels = {}

    def __getitem__(self, name: str) -> Kernel:
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = Kernel(self._m.kernel(name), self)
        return k

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except LookupError as e:
            raise AttributeError(str(e)) from None

    @property
    def lowered_source(self):
        """The source as this backend's compiler saw it: the dialect's definitions, then yours."""
        return self._m.lowered_source

    def __repr__(self):
        return f"<gpuhal.Module kernels={self.kernel_names}>"


def compile(source: str, options: str = "", constants: Optional[Mapping[str, Any]] = None) -> Module:
    """Compiles a portable kernel source for the current context's backend.
    ``constants`` maps names to host arrays baked in as constant arrays
    (Numba's cuda.const.array_like). Raises gpuhal.CompilationFailedError
    with the compiler's messages, gpuhal.NotSupportedError on a backend
    without kernels."""
    pairs = [(name, np.asarray(value)) for name, value in (constants or {}).items()]
    return Module(_gpuhal.compile(current_cpp_context(), source, options, pairs))

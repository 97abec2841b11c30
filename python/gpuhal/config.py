# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's run-time settings that gpuhal reads, under Numba's names (those
of numba-cuda's ``numba.cuda.core.config``). As in Numba, a value set in
code is what gpuhal uses from then on::

    import gpuhal.config
    gpuhal.config.CUDA_DEALLOCS_COUNT = 100      # flush after 100 pending releases
    gpuhal.config.CUDA_ARRAY_INTERFACE_SYNC = False

- ``CUDA_ARRAY_INTERFACE_SYNC`` (default True): ``as_cuda_array`` and
  ``from_cuda_array_interface`` synchronise the producer's stream (when
  their own ``sync`` argument is true too), as Numba's do.
- ``CUDA_DEALLOCS_COUNT`` and ``CUDA_DEALLOCS_RATIO``: the deferred
  deallocation queue's limits, for every context of the process's runtime
  (its live primary contexts and those made later): more pending releases
  than the count, or more bytes than the ratio of the device's memory,
  flush at the next release. They start as ``GPUHAL_MAX_PENDING_DEALLOCS_
  COUNT`` and ``_RATIO`` say (10 and 0.2, Numba's defaults). A count that is
  not a non-negative integer is a TypeError / ValueError, a ratio outside
  0..1 a ``gpuhal.InvalidValueError``; nothing changes then. Reading them
  loads the runtime, as any use of gpuhal does.
"""

import operator
import sys
import types

from . import _gpuhal


class _Config(types.ModuleType):
    CUDA_ARRAY_INTERFACE_SYNC = True

    @property
    def CUDA_DEALLOCS_COUNT(self):
        return int(_gpuhal.pending_deallocation_limits()[0])

    @CUDA_DEALLOCS_COUNT.setter
    def CUDA_DEALLOCS_COUNT(self, value):
        count = operator.index(value)  # TypeError for a float or a string, as a count must be whole
        if count < 0:
            raise ValueError(f"CUDA_DEALLOCS_COUNT must not be negative, got {count}")
        _gpuhal.set_pending_deallocation_limits(count, float(_gpuhal.pending_deallocation_limits()[1]))

    @property
    def CUDA_DEALLOCS_RATIO(self):
        return float(_gpuhal.pending_deallocation_limits()[1])

    @CUDA_DEALLOCS_RATIO.setter
    def CUDA_DEALLOCS_RATIO(self, value):
        _gpuhal.set_pending_deallocation_limits(int(_gpuhal.pending_deallocation_limits()[0]), float(value))


sys.modules[__name__].__class__ = _Config

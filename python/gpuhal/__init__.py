# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal for Python: Numba's memory API (numba.cuda / numba.roc) over every
gpuhal backend -- the CPU (host), NVIDIA (cuda) and AMD (hsa) -- chosen at
run time by GPUHAL_BACKEND or gpuhal.set_backend(), with zero-copy
interchange through DLPack and, on cuda, the CUDA Array Interface.

    import numpy as np
    import gpuhal as cuda        # Numba's names

    a = np.arange(16, dtype=np.float32)
    d = cuda.to_device(a)
    module = cuda.compile('''GPUHAL_KERNEL void twice(GPUHAL_GLOBAL float *x, int n) {
                               int i = gpuhal_global_id(0); if (i < n) x[i] *= 2; }''')
    module.twice[1, 16](d, a.size)
    print(d.copy_to_host())

See docs/python.md for the whole map from Numba's names.
"""

from . import _emm, _gpuhal
from ._context import *  # noqa: F401,F403
from ._context import __all__ as _context_all
from ._devicearray import DeviceNDArray
from ._errors import *  # noqa: F401,F403
from ._errors import __all__ as _errors_all
from . import config, driver
from ._emm import BaseCUDAMemoryManager, GetIpcHandleMixin, HostOnlyCUDAMemoryManager, IpcHandle, MemoryInfo
from ._emm import set_memory_manager
from ._interop import as_cuda_array, auto_device, from_cuda_array_interface, from_dlpack, is_cuda_array
from ._interop import is_device_array
from ._memory_objects import AutoFreePointer, ManagedMemory, MappedMemory, MemoryPointer, PinnedMemory
from ._ipc import IpcArrayHandle, open_ipc_array
from ._log import flush_log, log_to_python
from ._graphs import Capture
from ._kernels import Kernel as Kernel, Module as Module, compile as compile  # noqa: A004 (Numba-like name)
from ._memory import *  # noqa: F401,F403
from ._memory import __all__ as _memory_all
from ._memory_pool import MemoryPool
from ._stream_handle import StreamHandle

Stream = _gpuhal.Stream
Event = _gpuhal.Event
Graph = _gpuhal.Graph
GraphExec = _gpuhal.GraphExec
Device = _gpuhal.Device
__version__ = _gpuhal.__version__

__all__ = (["DeviceNDArray", "from_dlpack", "is_device_array", "IpcArrayHandle", "open_ipc_array", "Kernel", "Module", "compile",
            "Capture", "Graph", "GraphExec", "Stream", "Event", "Device", "__version__", "config", "driver", "BaseCUDAMemoryManager", "GetIpcHandleMixin",
            "HostOnlyCUDAMemoryManager", "IpcHandle", "MemoryInfo", "set_memory_manager", "as_cuda_array",
            "auto_device", "from_cuda_array_interface", "is_cuda_array", "log_to_python", "flush_log",
            "AutoFreePointer", "ManagedMemory",
            "MappedMemory", "MemoryPointer", "PinnedMemory", "MemoryPool", "StreamHandle"]
           + _context_all + _errors_all + _memory_all)


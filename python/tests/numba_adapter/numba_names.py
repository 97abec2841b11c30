# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The names numba-cuda's tests call, mapped onto gpuhal's.

Only names: nothing here implements behaviour. A name gpuhal lacks is bound
to a stand-in that raises MissingInGpuhal when used, so the test that needs
it fails and says which name (the yardstick counts it as gpuhal's gap). A
name that compiles Python kernels or needs Numba's type system is bound to
a stand-in that raises NotApplicable, which the plugin turns into a skip
with the reason.
"""

import gpuhal


class MissingInGpuhal(AttributeError):
    """A Numba name gpuhal does not have."""


class NotApplicable(Exception):
    """The test compiles a Python kernel or uses Numba's type system."""


# numba.cuda.<name> -> gpuhal.<name> (the same name unless given).
CUDA_NAMES = {
    name: name
    for name in [
        "to_device", "device_array", "device_array_like", "pinned_array", "pinned_array_like", "mapped_array",
        "mapped_array_like", "managed_array", "pinned", "mapped", "stream", "default_stream",
        "legacy_default_stream", "per_thread_default_stream", "external_stream", "event", "event_elapsed_time",
        "current_context", "get_current_device", "select_device", "close", "synchronize", "defer_cleanup",
        "is_available", "gpus", "list_devices", "as_cuda_array", "from_cuda_array_interface", "is_cuda_array",
        "open_ipc_array", "set_memory_manager", "HostOnlyCUDAMemoryManager", "BaseCUDAMemoryManager",
        "GetIpcHandleMixin", "MemoryInfo", "IpcHandle", "detect",
    ]
}

# numba.cuda.cudadrv.driver.<name> -> gpuhal.driver.<name>
DRIVER_NAMES = [
    "Stream", "Event", "MemoryPointer", "AutoFreePointer", "MappedMemory", "PinnedMemory", "ManagedMemory",
    "device_memset", "device_to_host", "host_to_device", "device_to_device", "device_memory_size",
    "host_memory_size", "host_memory_extents", "device_pointer", "device_ctypes_pointer", "is_device_memory",
    "require_device_memory", "device_extents", "host_pointer", "IpcHandle", "BaseCUDAMemoryManager",
    "HostOnlyCUDAMemoryManager", "GetIpcHandleMixin", "set_memory_manager", "CudaAPIError",
]

# numba.cuda.cudadrv.devicearray.<name> -> gpuhal.<name>
DEVICEARRAY_NAMES = {"DeviceNDArray": "DeviceNDArray", "auto_device": "auto_device",
                     "is_cuda_ndarray": "is_device_array"}

# numba.cuda.cudadrv.devices.<name> -> gpuhal.<name>
DEVICES_NAMES = {"get_context": "current_context", "reset": "close"}

# numba.cuda.core.config.<name>: the settings gpuhal reads (gpuhal.config),
# forwarded so that a test setting Numba's sets gpuhal's.
CONFIG_NAMES = ["CUDA_ARRAY_INTERFACE_SYNC", "CUDA_DEALLOCS_COUNT", "CUDA_DEALLOCS_RATIO"]

# Names that ask about the CUDA Array Interface: not applicable on a
# backend without CUDA memory (host, hsa).
CUDA_MEMORY_ONLY = ["is_cuda_array"]

# Names that compile Python kernels or use Numba's type system.
NOT_APPLICABLE = [
    "jit", "grid", "gridsize", "vectorize", "guvectorize", "reduce", "Reduce", "shared", "local", "const",
    "threadIdx", "blockIdx", "blockDim", "gridDim", "syncthreads", "atomic", "declare_device", "compile_ptx",
]

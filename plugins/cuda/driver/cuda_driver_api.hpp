// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The subset of NVIDIA's CUDA driver API (cuda.h) the cuda plugin uses,
// declared here so that no CUDA SDK is needed to build. Values and layouts
// are NVIDIA's; tests/backend/cuda/cuda_api_check.cpp compares them with cuda.h
// whenever it is found at configure time. Function pointer types are named
// after the exported (versioned) symbol they are resolved from.
#pragma once

#include <cstddef>
#include <cstdint>

// The driver's opaque handle types, at global scope as in cuda.h (only
// pointers to them are used).
struct CUctx_st;
struct CUstream_st;
struct CUevent_st;
struct CUmemPoolHandle_st;
struct CUmod_st;
struct CUfunc_st;
struct CUgraph_st;
struct CUgraphNode_st;
struct CUgraphExec_st;
struct CUkern_st;

namespace gpuhal::cuda::api {

using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = ::CUctx_st *;
using CUstream = ::CUstream_st *;
using CUevent = ::CUevent_st *;
using CUmemoryPool = ::CUmemPoolHandle_st *;
using CUmodule = ::CUmod_st *;
using CUfunction = ::CUfunc_st *;
using CUgraph = ::CUgraph_st *;
using CUgraphNode = ::CUgraphNode_st *;
using CUgraphExec = ::CUgraphExec_st *;
using CUkernel = ::CUkern_st *;
using CUstreamCaptureMode = int;
using CUstreamCaptureStatus = int;
using CUjit_option = int;
using CUfunction_attribute = int;
using CUmemPool_attribute = int;
using CUlimit = int;
using CUdevice_attribute = int;
// cuda.h: typedef struct CUuuid_st { char bytes[16]; } CUuuid;
struct CUuuid {
  char bytes[16];
};
using CUhostFn = void (*)(void *userData);

constexpr size_t CU_IPC_HANDLE_SIZE = 64;
struct CUipcMemHandle {
  char reserved[CU_IPC_HANDLE_SIZE];
};

// CUresult values
constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_INVALID_VALUE = 1;
constexpr CUresult CUDA_ERROR_OUT_OF_MEMORY = 2;
constexpr CUresult CUDA_ERROR_NOT_INITIALIZED = 3;
constexpr CUresult CUDA_ERROR_DEINITIALIZED = 4;
constexpr CUresult CUDA_ERROR_STUB_LIBRARY = 34;
constexpr CUresult CUDA_ERROR_NO_DEVICE = 100;
constexpr CUresult CUDA_ERROR_INVALID_DEVICE = 101;
constexpr CUresult CUDA_ERROR_INVALID_IMAGE = 200;
constexpr CUresult CUDA_ERROR_INVALID_CONTEXT = 201;
constexpr CUresult CUDA_ERROR_INVALID_PTX = 218;
constexpr CUresult CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222;
constexpr CUresult CUDA_ERROR_INVALID_HANDLE = 400;
constexpr CUresult CUDA_ERROR_NOT_FOUND = 500;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr CUresult CUDA_ERROR_ILLEGAL_ADDRESS = 700;
constexpr CUresult CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701;
constexpr CUresult CUDA_ERROR_LAUNCH_TIMEOUT = 702;
constexpr CUresult CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704;
constexpr CUresult CUDA_ERROR_ASSERT = 710;
constexpr CUresult CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED = 712;
constexpr CUresult CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED = 713;
constexpr CUresult CUDA_ERROR_HARDWARE_STACK_ERROR = 714;
constexpr CUresult CUDA_ERROR_ILLEGAL_INSTRUCTION = 715;
constexpr CUresult CUDA_ERROR_MISALIGNED_ADDRESS = 716;
constexpr CUresult CUDA_ERROR_INVALID_ADDRESS_SPACE = 717;
constexpr CUresult CUDA_ERROR_INVALID_PC = 718;
constexpr CUresult CUDA_ERROR_LAUNCH_FAILED = 719;
constexpr CUresult CUDA_ERROR_NOT_PERMITTED = 800;
constexpr CUresult CUDA_ERROR_NOT_SUPPORTED = 801;
constexpr CUresult CUDA_ERROR_ILLEGAL_STATE = 401;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED = 900;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_INVALIDATED = 901;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_MERGE = 902;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNMATCHED = 903;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_UNJOINED = 904;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_ISOLATION = 905;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_IMPLICIT = 906;
constexpr CUresult CUDA_ERROR_CAPTURED_EVENT = 907;
constexpr CUresult CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD = 908;
constexpr CUresult CUDA_ERROR_UNKNOWN = 999;

// CUdevice_attribute values
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X = 2;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y = 3;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z = 4;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z = 7;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_PITCH = 11;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY = 19;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS = 31;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING = 41;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN = 97;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY = 83;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS = 89;
constexpr CUdevice_attribute CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES = 119;
// cuda.h CUmemLocation and its types (cuMemPrefetchAsync_v2, cuMemAdvise_v2).
using CUmemLocationType = int;
constexpr CUmemLocationType CU_MEM_LOCATION_TYPE_DEVICE = 0x1;
constexpr CUmemLocationType CU_MEM_LOCATION_TYPE_HOST = 0x2;
struct CUmemLocation {
  CUmemLocationType type;
  int id;
};
using CUmem_advise = int;
// cuda.h's virtual memory management types (cuMemCreate, cuMemSetAccess).
using CUmemGenericAllocationHandle = unsigned long long;
using CUmemAllocationGranularity_flags = int;
constexpr int CU_MEM_ALLOCATION_TYPE_PINNED = 0x1;
constexpr CUmemAllocationGranularity_flags CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0x0;
constexpr CUmemAllocationGranularity_flags CU_MEM_ALLOC_GRANULARITY_RECOMMENDED = 0x1;
struct CUmemAllocationProp {
  int type;
  int requestedHandleTypes;
  CUmemLocation location;
  void *win32HandleMetaData;
  struct {
    unsigned char compressionType;
    unsigned char gpuDirectRDMACapable;
    unsigned short usage;
    unsigned char reserved[4];
  } allocFlags;
};
// cuda.h's CUmemPoolProps (cuMemPoolCreate).
struct CUmemPoolProps {
  int allocType;
  int handleTypes;
  CUmemLocation location;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};
struct CUmemAccessDesc {
  CUmemLocation location;
  int flags;
};
// cuda.h's CUmemPoolPtrExportData (cuMemPoolExportPointer): opaque.
struct CUmemPoolPtrExportData {
  unsigned char reserved[64];
};
constexpr unsigned CU_MEM_ATTACH_GLOBAL = 0x1;
// CUmemAllocationHandleType: "Allows a file descriptor to be used for
// exporting. Permitted only on POSIX systems. (int)"
constexpr int CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1;

// CUfunction_attribute and CUjit_option values
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_NUM_REGS = 4;
constexpr CUfunction_attribute CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;

// Flags
constexpr unsigned CU_STREAM_NON_BLOCKING = 0x1;
constexpr unsigned CU_EVENT_DEFAULT = 0x0;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 0x2;
constexpr unsigned CU_MEMHOSTALLOC_PORTABLE = 0x1;
constexpr unsigned CU_MEMHOSTALLOC_DEVICEMAP = 0x2;
constexpr unsigned CU_MEMHOSTALLOC_WRITECOMBINED = 0x4;
constexpr unsigned CU_MEMHOSTREGISTER_PORTABLE = 0x1;
constexpr unsigned CU_MEMHOSTREGISTER_DEVICEMAP = 0x2;
constexpr unsigned CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS = 0x1;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RELEASE_THRESHOLD = 4;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT = 5;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH = 6;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_USED_MEM_CURRENT = 7;
constexpr CUmemPool_attribute CU_MEMPOOL_ATTR_USED_MEM_HIGH = 8;
constexpr uint64_t CU_GET_PROC_ADDRESS_DEFAULT = 0;
constexpr CUlimit CU_LIMIT_STACK_SIZE = 0x00;
constexpr CUlimit CU_LIMIT_PRINTF_FIFO_SIZE = 0x01;
constexpr CUstreamCaptureMode CU_STREAM_CAPTURE_MODE_RELAXED = 2;
constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_NONE = 0;
constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_ACTIVE = 1;
constexpr CUstreamCaptureStatus CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2;

// cuda.h CUmemorytype and CUDA_MEMCPY3D (_v2, what cuMemcpy3D_v2 and
// cuMemcpy3DAsync_v2 take). Arrays are never named here (srcArray /
// dstArray stay NULL).
using CUmemorytype = int;
constexpr CUmemorytype CU_MEMORYTYPE_HOST = 0x01;
constexpr CUmemorytype CU_MEMORYTYPE_DEVICE = 0x02;
struct CUDA_MEMCPY3D {
  size_t srcXInBytes, srcY, srcZ, srcLOD;
  CUmemorytype srcMemoryType;
  const void *srcHost;
  CUdeviceptr srcDevice;
  void *srcArray;
  void *reserved0;
  size_t srcPitch, srcHeight;
  size_t dstXInBytes, dstY, dstZ, dstLOD;
  CUmemorytype dstMemoryType;
  void *dstHost;
  CUdeviceptr dstDevice;
  void *dstArray;
  void *reserved1;
  size_t dstPitch, dstHeight;
  size_t WidthInBytes, Height, Depth;
};

// cuda.h CUgraphEdgeData (only pointed to: the plugin reads no edge data).
struct CUgraphEdgeData {
  unsigned char from_port, to_port, type, reserved[5];
};

// cuda.h CUDA_KERNEL_NODE_PARAMS (_v2, what cuGraphExecKernelNodeSetParams
// takes since CUDA 12.0).
struct CUDA_KERNEL_NODE_PARAMS {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  CUkernel kern;
  CUcontext ctx;
};
// The CUDA version whose entry-point versions the declarations here follow
// (what cuGetProcAddress is asked for).
constexpr int kDeclaredCudaVersion = 12000;
// Special stream handles (cuda.h: CU_STREAM_LEGACY, CU_STREAM_PER_THREAD).
inline CUstream stream_legacy() {
  return reinterpret_cast<CUstream>(uintptr_t(0x1));
}
inline CUstream stream_per_thread() {
  return reinterpret_cast<CUstream>(uintptr_t(0x2));
}

// Every entry point used, as X(name, symbol, return, parameters). `symbol` is
// the exported name resolved (the versioned one where cuda.h maps the plain
// name to it). R: required; O: optional (absent in older drivers).
#define GPUHAL_CUDA_API(R, O)                                                                   \
  R(cuGetErrorName, cuGetErrorName, (CUresult, const char **))                                  \
  R(cuGetErrorString, cuGetErrorString, (CUresult, const char **))                              \
  R(cuInit, cuInit, (unsigned))                                                                 \
  R(cuDriverGetVersion, cuDriverGetVersion, (int *))                                            \
  R(cuDeviceGetCount, cuDeviceGetCount, (int *))                                                \
  R(cuDeviceGet, cuDeviceGet, (CUdevice *, int))                                                \
  R(cuDeviceGetName, cuDeviceGetName, (char *, int, CUdevice))                                  \
  R(cuDeviceTotalMem, cuDeviceTotalMem_v2, (size_t *, CUdevice))                                \
  R(cuDeviceGetAttribute, cuDeviceGetAttribute, (int *, CUdevice_attribute, CUdevice))          \
  O(cuDeviceGetUuid, cuDeviceGetUuid_v2, (CUuuid *, CUdevice))                                  \
  R(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain, (CUcontext *, CUdevice))                \
  R(cuDevicePrimaryCtxRelease, cuDevicePrimaryCtxRelease_v2, (CUdevice))                        \
  R(cuCtxSetCurrent, cuCtxSetCurrent, (CUcontext))                                              \
  R(cuCtxGetCurrent, cuCtxGetCurrent, (CUcontext *))                                            \
  R(cuCtxPushCurrent, cuCtxPushCurrent_v2, (CUcontext))                                         \
  R(cuCtxPopCurrent, cuCtxPopCurrent_v2, (CUcontext *))                                         \
  R(cuCtxSynchronize, cuCtxSynchronize, ())                                                     \
  O(cuCtxGetDevice, cuCtxGetDevice, (CUdevice *))                                               \
  R(cuMemGetInfo, cuMemGetInfo_v2, (size_t *, size_t *))                                        \
  R(cuMemAlloc, cuMemAlloc_v2, (CUdeviceptr *, size_t))                                         \
  R(cuMemFree, cuMemFree_v2, (CUdeviceptr))                                                     \
  R(cuMemGetAddressRange, cuMemGetAddressRange_v2, (CUdeviceptr *, size_t *, CUdeviceptr))      \
  R(cuMemcpyHtoD, cuMemcpyHtoD_v2, (CUdeviceptr, const void *, size_t))                         \
  R(cuMemcpyDtoH, cuMemcpyDtoH_v2, (void *, CUdeviceptr, size_t))                               \
  R(cuMemcpyDtoD, cuMemcpyDtoD_v2, (CUdeviceptr, CUdeviceptr, size_t))                          \
  R(cuMemcpyHtoDAsync, cuMemcpyHtoDAsync_v2, (CUdeviceptr, const void *, size_t, CUstream))     \
  R(cuMemcpyDtoHAsync, cuMemcpyDtoHAsync_v2, (void *, CUdeviceptr, size_t, CUstream))           \
  R(cuMemcpyDtoDAsync, cuMemcpyDtoDAsync_v2, (CUdeviceptr, CUdeviceptr, size_t, CUstream))      \
  R(cuMemcpy3D, cuMemcpy3D_v2, (const CUDA_MEMCPY3D *))                                          \
  R(cuMemcpy3DAsync, cuMemcpy3DAsync_v2, (const CUDA_MEMCPY3D *, CUstream))                     \
  R(cuMemsetD8, cuMemsetD8_v2, (CUdeviceptr, unsigned char, size_t))                            \
  R(cuMemsetD8Async, cuMemsetD8Async, (CUdeviceptr, unsigned char, size_t, CUstream))           \
  R(cuStreamCreate, cuStreamCreate, (CUstream *, unsigned))                                     \
  R(cuStreamDestroy, cuStreamDestroy_v2, (CUstream))                                            \
  R(cuStreamSynchronize, cuStreamSynchronize, (CUstream))                                       \
  R(cuStreamQuery, cuStreamQuery, (CUstream))                                                   \
  R(cuStreamWaitEvent, cuStreamWaitEvent, (CUstream, CUevent, unsigned))                        \
  R(cuLaunchHostFunc, cuLaunchHostFunc, (CUstream, CUhostFn, void *))                           \
  R(cuEventCreate, cuEventCreate, (CUevent *, unsigned))                                        \
  R(cuEventDestroy, cuEventDestroy_v2, (CUevent))                                               \
  R(cuEventRecord, cuEventRecord, (CUevent, CUstream))                                          \
  R(cuEventSynchronize, cuEventSynchronize, (CUevent))                                          \
  R(cuEventQuery, cuEventQuery, (CUevent))                                                      \
  R(cuEventElapsedTime, cuEventElapsedTime_v2, (float *, CUevent, CUevent))                     \
  O(cuModuleLoadDataEx, cuModuleLoadDataEx, (CUmodule *, const void *, unsigned, CUjit_option *, void **)) \
  O(cuModuleUnload, cuModuleUnload, (CUmodule))                                                 \
  O(cuModuleGetFunction, cuModuleGetFunction, (CUfunction *, CUmodule, const char *))           \
  O(cuFuncLoad, cuFuncLoad, (CUfunction))                                                       \
  O(cuFuncGetAttribute, cuFuncGetAttribute, (int *, CUfunction_attribute, CUfunction))          \
  O(cuFuncSetAttribute, cuFuncSetAttribute, (CUfunction, CUfunction_attribute, int))            \
  O(cuOccupancyMaxActiveBlocksPerMultiprocessor, cuOccupancyMaxActiveBlocksPerMultiprocessor,      \
    (int *, CUfunction, int, size_t))                                                           \
  O(cuLaunchKernel, cuLaunchKernel,                                                             \
    (CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void **, void **)) \
  O(cuMemHostAlloc, cuMemHostAlloc, (void **, size_t, unsigned))                                \
  O(cuMemFreeHost, cuMemFreeHost, (void *))                                                     \
  O(cuMemHostRegister, cuMemHostRegister_v2, (void *, size_t, unsigned))                        \
  O(cuMemHostUnregister, cuMemHostUnregister, (void *))                                         \
  O(cuMemHostGetDevicePointer, cuMemHostGetDevicePointer_v2, (CUdeviceptr *, void *, unsigned)) \
  O(cuIpcGetMemHandle, cuIpcGetMemHandle, (CUipcMemHandle *, CUdeviceptr))                      \
  O(cuIpcOpenMemHandle, cuIpcOpenMemHandle_v2, (CUdeviceptr *, CUipcMemHandle, unsigned))       \
  O(cuIpcCloseMemHandle, cuIpcCloseMemHandle, (CUdeviceptr))                                    \
  O(cuMemAllocAsync, cuMemAllocAsync, (CUdeviceptr *, size_t, CUstream))                        \
  O(cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr, CUstream))                                    \
  O(cuMemAllocManaged, cuMemAllocManaged, (CUdeviceptr *, size_t, unsigned))                     \
  O(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool, (CUmemoryPool *, CUdevice))           \
  O(cuMemPoolSetAttribute, cuMemPoolSetAttribute, (CUmemoryPool, CUmemPool_attribute, void *))  \
  O(cuMemPoolGetAttribute, cuMemPoolGetAttribute, (CUmemoryPool, CUmemPool_attribute, void *))  \
  O(cuMemPoolTrimTo, cuMemPoolTrimTo, (CUmemoryPool, size_t))                                   \
  O(cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset_v2, (CUdevice))                            \
  O(cuStreamGetCtx, cuStreamGetCtx, (CUstream, CUcontext *))                                    \
  O(cuDeviceCanAccessPeer, cuDeviceCanAccessPeer, (int *, CUdevice, CUdevice))                  \
  O(cuCtxEnablePeerAccess, cuCtxEnablePeerAccess, (CUcontext, unsigned))                        \
  O(cuStreamBeginCapture, cuStreamBeginCapture_v2, (CUstream, CUstreamCaptureMode))             \
  O(cuStreamEndCapture, cuStreamEndCapture, (CUstream, CUgraph *))                              \
  O(cuStreamIsCapturing, cuStreamIsCapturing, (CUstream, CUstreamCaptureStatus *))              \
  /* by its versioned name: cuGetProcAddress at 12.0 would answer _v2, which CUDA 13 drops */  \
  O(cuStreamGetCaptureInfo_v3, cuStreamGetCaptureInfo_v3,                                       \
    (CUstream, CUstreamCaptureStatus *, uint64_t *, CUgraph *, const CUgraphNode **,             \
     const CUgraphEdgeData **, size_t *))                                                        \
  O(cuGraphGetNodes, cuGraphGetNodes, (CUgraph, CUgraphNode *, size_t *))                       \
  O(cuGraphDestroy, cuGraphDestroy, (CUgraph))                                                  \
  O(cuGraphInstantiate, cuGraphInstantiateWithFlags, (CUgraphExec *, CUgraph, unsigned long long)) \
  O(cuGraphLaunch, cuGraphLaunch, (CUgraphExec, CUstream))                                      \
  O(cuGraphExecDestroy, cuGraphExecDestroy, (CUgraphExec))                                      \
  O(cuGraphExecKernelNodeSetParams, cuGraphExecKernelNodeSetParams_v2,                          \
    (CUgraphExec, CUgraphNode, const CUDA_KERNEL_NODE_PARAMS *))                                \
  O(cuCtxGetStreamPriorityRange, cuCtxGetStreamPriorityRange, (int *, int *))                 \
  O(cuStreamCreateWithPriority, cuStreamCreateWithPriority, (CUstream *, unsigned, int))        \
  O(cuStreamGetPriority, cuStreamGetPriority, (CUstream, int *))                                \
  /* by their versioned names: cuGetProcAddress at 12.0 would answer the _v1 forms (a CUdevice, not a location) */ \
  O(cuMemPrefetchAsync_v2, cuMemPrefetchAsync_v2, (CUdeviceptr, size_t, CUmemLocation, unsigned, CUstream))  \
  O(cuMemAdvise_v2, cuMemAdvise_v2, (CUdeviceptr, size_t, CUmem_advise, CUmemLocation))        \
  O(cuMemAddressReserve, cuMemAddressReserve, (CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long)) \
  O(cuMemAddressFree, cuMemAddressFree, (CUdeviceptr, size_t))                                  \
  O(cuMemCreate, cuMemCreate,                                                                    \
    (CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long))   \
  O(cuMemRelease, cuMemRelease, (CUmemGenericAllocationHandle))                                 \
  O(cuMemMap, cuMemMap, (CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long)) \
  O(cuMemUnmap, cuMemUnmap, (CUdeviceptr, size_t))                                              \
  O(cuMemSetAccess, cuMemSetAccess, (CUdeviceptr, size_t, const CUmemAccessDesc *, size_t))     \
  O(cuMemGetAllocationGranularity, cuMemGetAllocationGranularity,                               \
    (size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags))                  \
  O(cuMemPoolCreate, cuMemPoolCreate, (CUmemoryPool *, const CUmemPoolProps *))                 \
  O(cuMemPoolDestroy, cuMemPoolDestroy, (CUmemoryPool))                                         \
  O(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, (CUdeviceptr *, size_t, CUmemoryPool, CUstream)) \
  O(cuMemPoolExportToShareableHandle, cuMemPoolExportToShareableHandle,                         \
    (void *, CUmemoryPool, int, unsigned long long))                                            \
  O(cuMemPoolImportFromShareableHandle, cuMemPoolImportFromShareableHandle,                     \
    (CUmemoryPool *, void *, int, unsigned long long))                                          \
  O(cuMemPoolExportPointer, cuMemPoolExportPointer, (CUmemPoolPtrExportData *, CUdeviceptr))    \
  O(cuMemPoolImportPointer, cuMemPoolImportPointer, (CUdeviceptr *, CUmemoryPool, CUmemPoolPtrExportData *)) \
  O(cuCtxSetLimit, cuCtxSetLimit, (CUlimit, size_t))                                            \
  O(cuCtxGetLimit, cuCtxGetLimit, (size_t *, CUlimit))                                          \
  O(cuGetProcAddress, cuGetProcAddress_v2, (const char *, void **, int, uint64_t, int *))

}  // namespace gpuhal::cuda::api

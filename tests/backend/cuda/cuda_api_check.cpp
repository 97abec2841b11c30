// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Compares the cuda plugin's in-tree driver declarations with NVIDIA's
// cuda.h: enum and flag values, the IPC handle's size, and for every entry
// point the exported symbol's arity and parameter and return sizes. All
// checks are static_asserts: this file compiling is the test.
#include <cuda.h>

#include <cstdint>
#include <cstdio>
#include <type_traits>

#include "gpuhal/plugin.h"

// cuda.h defines these as macros: keep their values, then make way for the
// in-tree constants of the same names.
constexpr unsigned kIpcHandleSize = CU_IPC_HANDLE_SIZE;
constexpr unsigned kHostAllocPortable = CU_MEMHOSTALLOC_PORTABLE;
constexpr unsigned kHostAllocDevicemap = CU_MEMHOSTALLOC_DEVICEMAP;
constexpr unsigned kHostAllocWritecombined = CU_MEMHOSTALLOC_WRITECOMBINED;
constexpr unsigned kHostRegisterPortable = CU_MEMHOSTREGISTER_PORTABLE;
constexpr unsigned kHostRegisterDevicemap = CU_MEMHOSTREGISTER_DEVICEMAP;
// The special stream handles, as integers (cuda.h casts them to CUstream).
const uintptr_t kStreamLegacy = reinterpret_cast<uintptr_t>(CU_STREAM_LEGACY);
const uintptr_t kStreamPerThread = reinterpret_cast<uintptr_t>(CU_STREAM_PER_THREAD);
#undef CU_IPC_HANDLE_SIZE
#undef CU_MEMHOSTALLOC_PORTABLE
#undef CU_MEMHOSTALLOC_DEVICEMAP
#undef CU_MEMHOSTALLOC_WRITECOMBINED
#undef CU_MEMHOSTREGISTER_PORTABLE
#undef CU_MEMHOSTREGISTER_DEVICEMAP

#include "cuda_driver_api.hpp"

namespace {

template <class... T>
struct list {};

template <class T, class = void>
struct is_complete : std::false_type {};
template <class T>
struct is_complete<T, decltype(void(sizeof(T)))> : std::true_type {};

template <class A, class B>
constexpr bool param_matches();

// What two pointer parameters point to: the same kind of thing, checked all
// the way down (a CUcontext * is not a CUstream *; a struct is the same
// struct, or one of the same size where the in-tree one mirrors it).
template <class PA, class PB>
constexpr bool pointee_matches() {
  if constexpr (std::is_void<PA>::value || std::is_void<PB>::value) {
    return std::is_void<PA>::value && std::is_void<PB>::value;
  } else if constexpr (std::is_pointer<PA>::value || std::is_pointer<PB>::value) {
    return param_matches<PA, PB>();
  } else if constexpr (std::is_function<PA>::value || std::is_function<PB>::value) {
    return std::is_same<PA, PB>::value;  // callbacks: the same signature
  } else if constexpr (std::is_class<PA>::value || std::is_class<PB>::value) {
    if constexpr (std::is_same<PA, PB>::value)
      return true;
    else if constexpr (std::is_class<PA>::value && std::is_class<PB>::value && is_complete<PA>::value &&
                       is_complete<PB>::value)
      return sizeof(PA) == sizeof(PB);
    else
      return false;
  } else {
    return sizeof(PA) == sizeof(PB);  // arithmetic and enums
  }
}

template <class A, class B>
constexpr bool param_matches() {
  if constexpr (std::is_pointer<A>::value != std::is_pointer<B>::value) {
    return false;
  } else if constexpr (std::is_pointer<A>::value) {
    return pointee_matches<std::remove_cv_t<std::remove_pointer_t<A>>, std::remove_cv_t<std::remove_pointer_t<B>>>();
  } else if constexpr (std::is_class<A>::value || std::is_class<B>::value) {
    return std::is_class<A>::value && std::is_class<B>::value && sizeof(A) == sizeof(B);
  } else {
    return sizeof(A) == sizeof(B);
  }
}

// The check itself tells struct pointers apart: a wrong one fails it.
static_assert(!param_matches<::CUcontext *, ::CUstream *>(), "a CUcontext * must not pass for a CUstream *");
static_assert(!param_matches<::CUipcMemHandle *, ::CUdeviceptr *>(), "a struct pointer must not pass for an integer's");
static_assert(!param_matches<void *, ::CUcontext>(), "void * must not pass for a handle");
static_assert(param_matches<const char **, const char **>(), "const char ** matches itself");

template <class L1, class L2>
struct params_match : std::false_type {};
template <class... A, class... B>
struct params_match<list<A...>, list<B...>> {
  static constexpr bool value = [] {
    if constexpr (sizeof...(A) != sizeof...(B))
      return false;
    else
      return (true && ... && param_matches<A, B>());
  }();
};

template <class F1, class F2>
struct same_shape : std::false_type {};
template <class R1, class... A, class R2, class... B>
struct same_shape<R1 (*)(A...), R2 (*)(B...)> {
  static constexpr bool value = sizeof(R1) == sizeof(R2) && params_match<list<A...>, list<B...>>::value;
};

}  // namespace

namespace gpuhal::cuda::api {
#define GPUHAL_CHECK_ENTRY(name, symbol, params)                            \
  static_assert(same_shape<decltype(&::symbol), CUresult(*) params>::value, \
                #symbol ": the in-tree declaration differs from cuda.h");
GPUHAL_CUDA_API(GPUHAL_CHECK_ENTRY, GPUHAL_CHECK_ENTRY)
#undef GPUHAL_CHECK_ENTRY

#define GPUHAL_CHECK_VALUE(v) static_assert(int(v) == int(::v), #v ": value differs from cuda.h");
GPUHAL_CHECK_VALUE(CUDA_SUCCESS)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_VALUE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_OUT_OF_MEMORY)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NOT_INITIALIZED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_DEINITIALIZED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STUB_LIBRARY)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NO_DEVICE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_DEVICE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_CONTEXT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_HANDLE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NOT_FOUND)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NOT_READY)
GPUHAL_CHECK_VALUE(CUDA_ERROR_ILLEGAL_ADDRESS)
GPUHAL_CHECK_VALUE(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NOT_SUPPORTED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_UNKNOWN)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_WARP_SIZE)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_CLOCK_RATE)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
GPUHAL_CHECK_VALUE(CU_STREAM_NON_BLOCKING)
GPUHAL_CHECK_VALUE(CU_EVENT_DEFAULT)
GPUHAL_CHECK_VALUE(CU_EVENT_DISABLE_TIMING)
GPUHAL_CHECK_VALUE(CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
GPUHAL_CHECK_VALUE(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
GPUHAL_CHECK_VALUE(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)
GPUHAL_CHECK_VALUE(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
GPUHAL_CHECK_VALUE(CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_UNSUPPORTED_PTX_VERSION)
GPUHAL_CHECK_VALUE(CUDA_ERROR_LAUNCH_TIMEOUT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_ASSERT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_HARDWARE_STACK_ERROR)
GPUHAL_CHECK_VALUE(CUDA_ERROR_ILLEGAL_INSTRUCTION)
GPUHAL_CHECK_VALUE(CUDA_ERROR_MISALIGNED_ADDRESS)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_ADDRESS_SPACE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_PC)
GPUHAL_CHECK_VALUE(CUDA_ERROR_NOT_PERMITTED)
GPUHAL_CHECK_VALUE(CU_GET_PROC_ADDRESS_DEFAULT)
GPUHAL_CHECK_VALUE(CU_LIMIT_STACK_SIZE)
GPUHAL_CHECK_VALUE(CU_LIMIT_PRINTF_FIFO_SIZE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_IMAGE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_INVALID_PTX)
GPUHAL_CHECK_VALUE(CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)
GPUHAL_CHECK_VALUE(CUDA_ERROR_LAUNCH_FAILED)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
GPUHAL_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
GPUHAL_CHECK_VALUE(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
GPUHAL_CHECK_VALUE(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
GPUHAL_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER)
GPUHAL_CHECK_VALUE(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES)
GPUHAL_CHECK_VALUE(CUDA_ERROR_ILLEGAL_STATE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_MERGE)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNMATCHED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_UNJOINED)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_ISOLATION)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_IMPLICIT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_CAPTURED_EVENT)
GPUHAL_CHECK_VALUE(CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD)
GPUHAL_CHECK_VALUE(CU_STREAM_CAPTURE_MODE_RELAXED)
GPUHAL_CHECK_VALUE(CU_STREAM_CAPTURE_STATUS_NONE)
GPUHAL_CHECK_VALUE(CU_STREAM_CAPTURE_STATUS_ACTIVE)
GPUHAL_CHECK_VALUE(CU_STREAM_CAPTURE_STATUS_INVALIDATED)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_MAX_PITCH)
GPUHAL_CHECK_VALUE(CU_MEMORYTYPE_HOST)
GPUHAL_CHECK_VALUE(CU_MEMORYTYPE_DEVICE)
GPUHAL_CHECK_VALUE(CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS)
GPUHAL_CHECK_VALUE(CU_MEM_LOCATION_TYPE_DEVICE)
GPUHAL_CHECK_VALUE(CU_MEM_LOCATION_TYPE_HOST)
GPUHAL_CHECK_VALUE(CU_MEM_ALLOCATION_TYPE_PINNED)
GPUHAL_CHECK_VALUE(CU_MEM_ALLOC_GRANULARITY_MINIMUM)
GPUHAL_CHECK_VALUE(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
#undef GPUHAL_CHECK_VALUE
static_assert(sizeof(gpuhal::cuda::api::CUDA_KERNEL_NODE_PARAMS) == sizeof(::CUDA_KERNEL_NODE_PARAMS),
              "CUDA_KERNEL_NODE_PARAMS size");
static_assert(offsetof(gpuhal::cuda::api::CUDA_KERNEL_NODE_PARAMS, kernelParams) ==
                  offsetof(::CUDA_KERNEL_NODE_PARAMS, kernelParams),
              "CUDA_KERNEL_NODE_PARAMS layout");
#define GPUHAL_CHECK_MEMCPY3D(member)                                                                      \
  static_assert(offsetof(gpuhal::cuda::api::CUDA_MEMCPY3D, member) == offsetof(::CUDA_MEMCPY3D, member), \
                "CUDA_MEMCPY3D::" #member " offset differs from cuda.h");
static_assert(sizeof(gpuhal::cuda::api::CUDA_MEMCPY3D) == sizeof(::CUDA_MEMCPY3D), "CUDA_MEMCPY3D size");
GPUHAL_CHECK_MEMCPY3D(srcMemoryType)
GPUHAL_CHECK_MEMCPY3D(srcHost)
GPUHAL_CHECK_MEMCPY3D(srcDevice)
GPUHAL_CHECK_MEMCPY3D(srcPitch)
GPUHAL_CHECK_MEMCPY3D(srcHeight)
GPUHAL_CHECK_MEMCPY3D(dstMemoryType)
GPUHAL_CHECK_MEMCPY3D(dstHost)
GPUHAL_CHECK_MEMCPY3D(dstDevice)
GPUHAL_CHECK_MEMCPY3D(dstPitch)
GPUHAL_CHECK_MEMCPY3D(dstHeight)
GPUHAL_CHECK_MEMCPY3D(WidthInBytes)
GPUHAL_CHECK_MEMCPY3D(Height)
GPUHAL_CHECK_MEMCPY3D(Depth)
#undef GPUHAL_CHECK_MEMCPY3D
static_assert(sizeof(gpuhal::cuda::api::CUmemAllocationProp) == sizeof(::CUmemAllocationProp) &&
                  offsetof(gpuhal::cuda::api::CUmemAllocationProp, location) == offsetof(::CUmemAllocationProp, location) &&
                  offsetof(gpuhal::cuda::api::CUmemAllocationProp, allocFlags) == offsetof(::CUmemAllocationProp, allocFlags),
              "CUmemAllocationProp layout");
static_assert(sizeof(gpuhal::cuda::api::CUmemPoolProps) == sizeof(::CUmemPoolProps) &&
                  offsetof(gpuhal::cuda::api::CUmemPoolProps, location) == offsetof(::CUmemPoolProps, location) &&
                  offsetof(gpuhal::cuda::api::CUmemPoolProps, maxSize) == offsetof(::CUmemPoolProps, maxSize) &&
                  offsetof(gpuhal::cuda::api::CUmemPoolProps, reserved) == offsetof(::CUmemPoolProps, reserved),
              "CUmemPoolProps layout");
static_assert(sizeof(gpuhal::cuda::api::CUmemAccessDesc) == sizeof(::CUmemAccessDesc) &&
                  offsetof(gpuhal::cuda::api::CUmemAccessDesc, flags) == offsetof(::CUmemAccessDesc, flags),
              "CUmemAccessDesc layout");
static_assert(CU_IPC_HANDLE_SIZE == kIpcHandleSize, "CU_IPC_HANDLE_SIZE");
static_assert(CU_MEMHOSTALLOC_PORTABLE == kHostAllocPortable, "CU_MEMHOSTALLOC_PORTABLE");
static_assert(CU_MEMHOSTALLOC_DEVICEMAP == kHostAllocDevicemap, "CU_MEMHOSTALLOC_DEVICEMAP");
static_assert(CU_MEMHOSTALLOC_WRITECOMBINED == kHostAllocWritecombined, "CU_MEMHOSTALLOC_WRITECOMBINED");
static_assert(CU_MEMHOSTREGISTER_PORTABLE == kHostRegisterPortable, "CU_MEMHOSTREGISTER_PORTABLE");
static_assert(CU_MEMHOSTREGISTER_DEVICEMAP == kHostRegisterDevicemap, "CU_MEMHOSTREGISTER_DEVICEMAP");
// The identities the plugin relies on: gpuhal's host-memory flags are passed
// to cuMemHostAlloc as they are, and its special stream handles to every
// stream entry.
static_assert(GPUHAL_HOST_ALLOC_PORTABLE == kHostAllocPortable, "GPUHAL_HOST_ALLOC_PORTABLE != CU_MEMHOSTALLOC_PORTABLE");
static_assert(GPUHAL_HOST_ALLOC_MAPPED == kHostAllocDevicemap, "GPUHAL_HOST_ALLOC_MAPPED != CU_MEMHOSTALLOC_DEVICEMAP");
static_assert(GPUHAL_HOST_ALLOC_WRITE_COMBINED == kHostAllocWritecombined,
              "GPUHAL_HOST_ALLOC_WRITE_COMBINED != CU_MEMHOSTALLOC_WRITECOMBINED");
static_assert(sizeof(CUipcMemHandle) == sizeof(::CUipcMemHandle), "CUipcMemHandle size");
static_assert(sizeof(CUdeviceptr) == sizeof(::CUdeviceptr), "CUdeviceptr size");
static_assert(std::is_same<CUcontext, ::CUcontext>::value, "CUcontext");
static_assert(std::is_same<CUstream, ::CUstream>::value, "CUstream");
static_assert(std::is_same<CUevent, ::CUevent>::value, "CUevent");
static_assert(std::is_same<CUmemoryPool, ::CUmemoryPool>::value, "CUmemoryPool");
static_assert(std::is_same<CUmodule, ::CUmodule>::value, "CUmodule");
static_assert(std::is_same<CUfunction, ::CUfunction>::value, "CUfunction");
}  // namespace gpuhal::cuda::api

int main() {
  // Pointer values are not constant expressions: checked when run.
  if (reinterpret_cast<uintptr_t>(GPUHAL_STREAM_LEGACY) != kStreamLegacy ||
      reinterpret_cast<uintptr_t>(GPUHAL_STREAM_PER_THREAD) != kStreamPerThread ||
      reinterpret_cast<uintptr_t>(gpuhal::cuda::api::stream_legacy()) != kStreamLegacy ||
      reinterpret_cast<uintptr_t>(gpuhal::cuda::api::stream_per_thread()) != kStreamPerThread) {
    std::printf("the special stream handles differ from CU_STREAM_LEGACY / CU_STREAM_PER_THREAD\n");
    return 1;
  }
  int n = 0;
#define GPUHAL_COUNT(name, symbol, params) ++n;
  GPUHAL_CUDA_API(GPUHAL_COUNT, GPUHAL_COUNT)
#undef GPUHAL_COUNT
  std::printf("%d driver entry points and their constants match cuda.h %d\n", n, CUDA_VERSION);
  return 0;
}

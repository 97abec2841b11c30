// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Compares the hsa plugin's in-tree runtime declarations (plugins/hsa/driver/hsa_api.hpp)
// with Debian's hsa/hsa.h and hsa/hsa_ext_amd.h: status, enum and flag
// values, the layouts of the queue and the AQL packets, and for every entry
// point its arity and parameter and return sizes. All checks are
// static_asserts: this file compiling is the test.
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#include <cstddef>
#include <cstdio>
#include <type_traits>

#include "hsa_api.hpp"

namespace {

template <class... T>
struct list {};

template <class T>
constexpr size_t size_or_zero() {
  if constexpr (std::is_void<T>::value)
    return 0;
  else
    return sizeof(T);
}

template <class A, class B>
constexpr bool param_matches() {
  if constexpr (std::is_pointer<A>::value != std::is_pointer<B>::value) {
    return false;
  } else if constexpr (std::is_pointer<A>::value) {
    using PA = std::remove_cv_t<std::remove_pointer_t<A>>;
    using PB = std::remove_cv_t<std::remove_pointer_t<B>>;
    if constexpr (!std::is_void<PA>::value && !std::is_void<PB>::value && !std::is_function<PA>::value &&
                  !std::is_function<PB>::value)
      return sizeof(PA) == sizeof(PB);
    else
      return std::is_void<PA>::value == std::is_void<PB>::value;
  } else {
    return sizeof(A) == sizeof(B);
  }
}

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
  static constexpr bool value = size_or_zero<R1>() == size_or_zero<R2>() && params_match<list<A...>, list<B...>>::value;
};

}  // namespace

namespace gpuhal::hsa::api {
#define GPUHAL_CHECK_ENTRY(ret, name, params)                        \
  static_assert(same_shape<decltype(&::name), ret(*) params>::value, \
                #name ": the in-tree declaration differs from hsa.h");
GPUHAL_HSA_API(GPUHAL_CHECK_ENTRY, GPUHAL_CHECK_ENTRY)
#undef GPUHAL_CHECK_ENTRY

#define GPUHAL_CHECK_VALUE(v) static_assert(int64_t(v) == int64_t(::v), #v ": value differs from hsa.h");
GPUHAL_CHECK_VALUE(HSA_STATUS_SUCCESS)
GPUHAL_CHECK_VALUE(HSA_STATUS_INFO_BREAK)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_ARGUMENT)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_ALLOCATION)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_AGENT)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_SIGNAL)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_QUEUE)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_OUT_OF_RESOURCES)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_NOT_INITIALIZED)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_ISA)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_CODE_OBJECT)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_EXECUTABLE)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_EXCEPTION)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER)
GPUHAL_CHECK_VALUE(HSA_STATUS_ERROR_FATAL)
GPUHAL_CHECK_VALUE(HSA_SYSTEM_INFO_VERSION_MAJOR)
GPUHAL_CHECK_VALUE(HSA_SYSTEM_INFO_VERSION_MINOR)
GPUHAL_CHECK_VALUE(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY)
GPUHAL_CHECK_VALUE(HSA_DEVICE_TYPE_CPU)
GPUHAL_CHECK_VALUE(HSA_DEVICE_TYPE_GPU)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_NAME)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_VENDOR_NAME)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_WAVEFRONT_SIZE)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_WORKGROUP_MAX_DIM)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_WORKGROUP_MAX_SIZE)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_GRID_MAX_DIM)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_QUEUE_MAX_SIZE)
GPUHAL_CHECK_VALUE(HSA_AGENT_INFO_DEVICE)
GPUHAL_CHECK_VALUE(HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT)
GPUHAL_CHECK_VALUE(HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY)
GPUHAL_CHECK_VALUE(HSA_AMD_AGENT_INFO_BDFID)
GPUHAL_CHECK_VALUE(HSA_AMD_AGENT_INFO_PRODUCT_NAME)
GPUHAL_CHECK_VALUE(HSA_AMD_AGENT_INFO_DOMAIN)
GPUHAL_CHECK_VALUE(HSA_AMD_SEGMENT_GLOBAL)
GPUHAL_CHECK_VALUE(HSA_AMD_SEGMENT_GROUP)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_INFO_SEGMENT)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_INFO_SIZE)
GPUHAL_CHECK_VALUE(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED)
GPUHAL_CHECK_VALUE(HSA_SIGNAL_CONDITION_EQ)
GPUHAL_CHECK_VALUE(HSA_SIGNAL_CONDITION_NE)
GPUHAL_CHECK_VALUE(HSA_SIGNAL_CONDITION_LT)
GPUHAL_CHECK_VALUE(HSA_SIGNAL_CONDITION_GTE)
GPUHAL_CHECK_VALUE(HSA_WAIT_STATE_BLOCKED)
GPUHAL_CHECK_VALUE(HSA_WAIT_STATE_ACTIVE)
GPUHAL_CHECK_VALUE(HSA_QUEUE_TYPE_MULTI)
GPUHAL_CHECK_VALUE(HSA_QUEUE_TYPE_SINGLE)
GPUHAL_CHECK_VALUE(HSA_PACKET_TYPE_INVALID)
GPUHAL_CHECK_VALUE(HSA_PACKET_TYPE_KERNEL_DISPATCH)
GPUHAL_CHECK_VALUE(HSA_PACKET_TYPE_BARRIER_AND)
GPUHAL_CHECK_VALUE(HSA_FENCE_SCOPE_NONE)
GPUHAL_CHECK_VALUE(HSA_FENCE_SCOPE_AGENT)
GPUHAL_CHECK_VALUE(HSA_FENCE_SCOPE_SYSTEM)
GPUHAL_CHECK_VALUE(HSA_PACKET_HEADER_TYPE)
GPUHAL_CHECK_VALUE(HSA_PACKET_HEADER_BARRIER)
GPUHAL_CHECK_VALUE(HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE)
GPUHAL_CHECK_VALUE(HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE)
GPUHAL_CHECK_VALUE(HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS)
GPUHAL_CHECK_VALUE(HSA_PROFILE_FULL)
GPUHAL_CHECK_VALUE(HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT)
GPUHAL_CHECK_VALUE(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE)
GPUHAL_CHECK_VALUE(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE)
GPUHAL_CHECK_VALUE(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE)
GPUHAL_CHECK_VALUE(HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT)
#undef GPUHAL_CHECK_VALUE

// Every enum crossing the runtime's ABI is 32 bits wide there too.
static_assert(sizeof(::hsa_status_t) == sizeof(hsa_status_t), "hsa_status_t");
static_assert(sizeof(::hsa_signal_value_t) == sizeof(hsa_signal_value_t), "hsa_signal_value_t");
static_assert(sizeof(::hsa_agent_info_t) == sizeof(hsa_agent_info_t), "hsa_agent_info_t");
static_assert(sizeof(::hsa_signal_condition_t) == sizeof(hsa_signal_condition_t), "hsa_signal_condition_t");

#define GPUHAL_CHECK_FIELD(type, field)                                                                           \
  static_assert(offsetof(type, field) == offsetof(::type, field) && sizeof(type::field) == sizeof(::type::field), \
                #type "." #field ": layout differs from hsa.h");
#define GPUHAL_CHECK_SIZE(type) static_assert(sizeof(type) == sizeof(::type), #type ": size differs from hsa.h");
GPUHAL_CHECK_SIZE(hsa_agent_t)
GPUHAL_CHECK_SIZE(hsa_signal_t)
GPUHAL_CHECK_SIZE(hsa_amd_memory_pool_t)
GPUHAL_CHECK_SIZE(hsa_code_object_reader_t)
GPUHAL_CHECK_SIZE(hsa_executable_t)
GPUHAL_CHECK_SIZE(hsa_executable_symbol_t)
GPUHAL_CHECK_SIZE(hsa_loaded_code_object_t)
GPUHAL_CHECK_SIZE(hsa_dim3_t)
GPUHAL_CHECK_SIZE(hsa_pitched_ptr_t)
GPUHAL_CHECK_FIELD(hsa_pitched_ptr_t, base)
GPUHAL_CHECK_FIELD(hsa_pitched_ptr_t, pitch)
GPUHAL_CHECK_FIELD(hsa_pitched_ptr_t, slice)
static_assert(hsaHostToDevice == ::hsaHostToDevice && hsaDeviceToHost == ::hsaDeviceToHost &&
                  hsaDeviceToDevice == ::hsaDeviceToDevice,
              "hsa_amd_copy_direction_t values differ from hsa_ext_amd.h");
GPUHAL_CHECK_SIZE(hsa_amd_profiling_dispatch_time_t)
GPUHAL_CHECK_FIELD(hsa_amd_profiling_dispatch_time_t, start)
GPUHAL_CHECK_FIELD(hsa_amd_profiling_dispatch_time_t, end)
GPUHAL_CHECK_SIZE(hsa_queue_t)
GPUHAL_CHECK_FIELD(hsa_queue_t, type)
GPUHAL_CHECK_FIELD(hsa_queue_t, features)
GPUHAL_CHECK_FIELD(hsa_queue_t, base_address)
GPUHAL_CHECK_FIELD(hsa_queue_t, doorbell_signal)
GPUHAL_CHECK_FIELD(hsa_queue_t, size)
GPUHAL_CHECK_FIELD(hsa_queue_t, id)
GPUHAL_CHECK_SIZE(hsa_kernel_dispatch_packet_t)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, header)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, setup)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, workgroup_size_x)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, workgroup_size_y)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, workgroup_size_z)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, grid_size_x)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, grid_size_y)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, grid_size_z)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, private_segment_size)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, group_segment_size)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, kernel_object)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, kernarg_address)
GPUHAL_CHECK_FIELD(hsa_kernel_dispatch_packet_t, completion_signal)
GPUHAL_CHECK_SIZE(hsa_barrier_and_packet_t)
GPUHAL_CHECK_FIELD(hsa_barrier_and_packet_t, header)
GPUHAL_CHECK_FIELD(hsa_barrier_and_packet_t, dep_signal)
GPUHAL_CHECK_FIELD(hsa_barrier_and_packet_t, completion_signal)
#undef GPUHAL_CHECK_FIELD
#undef GPUHAL_CHECK_SIZE
static_assert(sizeof(hsa_kernel_dispatch_packet_t) == 64 && sizeof(hsa_barrier_and_packet_t) == 64, "AQL packets");
}  // namespace gpuhal::hsa::api

int main() {
  int n = 0;
#define GPUHAL_COUNT(ret, name, params) ++n;
  GPUHAL_HSA_API(GPUHAL_COUNT, GPUHAL_COUNT)
#undef GPUHAL_COUNT
  std::printf("%d runtime entry points, their constants and the AQL packet layouts match hsa.h\n", n);
  return 0;
}

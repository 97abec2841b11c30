// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The subset of the HSA runtime API (hsa/hsa.h, hsa/hsa_ext_amd.h) the hsa
// plugin uses, declared here so that no ROCm SDK is needed to build. Values
// and layouts are the HSA specification's and AMD's; tests/backend/hsa/hsa_api_check.cpp
// compares them with Debian's headers (libhsa-runtime-dev) whenever they are
// found at configure time. Enums crossing the runtime's ABI are declared as
// 32-bit integers (their size in hsa.h).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpuhal::hsa::api {

using hsa_status_t = int32_t;
using hsa_signal_value_t = int64_t;
using hsa_agent_info_t = int32_t;
using hsa_system_info_t = int32_t;
using hsa_device_type_t = int32_t;
using hsa_signal_condition_t = int32_t;
using hsa_wait_state_t = int32_t;
using hsa_queue_type32_t = uint32_t;
using hsa_profile_t = int32_t;
using hsa_default_float_rounding_mode_t = int32_t;
using hsa_executable_symbol_info_t = int32_t;
using hsa_amd_memory_pool_info_t = int32_t;
using hsa_amd_segment_t = int32_t;

struct hsa_agent_t {
  uint64_t handle;
};
struct hsa_signal_t {
  uint64_t handle;
};
struct hsa_amd_memory_pool_t {
  uint64_t handle;
};
struct hsa_code_object_reader_t {
  uint64_t handle;
};
struct hsa_executable_t {
  uint64_t handle;
};
struct hsa_executable_symbol_t {
  uint64_t handle;
};
struct hsa_loaded_code_object_t {
  uint64_t handle;
};
struct hsa_dim3_t {
  uint32_t x, y, z;
};
// hsa_ext_amd.h's pitched pointer and copy direction
// (hsa_amd_memory_async_copy_rect, a "Provisional API").
struct hsa_pitched_ptr_t {
  void *base;
  size_t pitch;
  size_t slice;
};
using hsa_amd_copy_direction_t = int32_t;
constexpr hsa_amd_copy_direction_t hsaHostToHost = 0, hsaHostToDevice = 1, hsaDeviceToHost = 2,
                                   hsaDeviceToDevice = 3;
struct hsa_amd_profiling_dispatch_time_t {
  uint64_t start;
  uint64_t end;
};
struct hsa_amd_profiling_async_copy_time_t {
  uint64_t start;
  uint64_t end;
};

// System events (hsa_ext_amd.h): ROCr calls abort() on a GPU memory fault
// unless the application registered a handler for them.
using hsa_amd_event_type_t = int32_t;
constexpr hsa_amd_event_type_t HSA_AMD_GPU_MEMORY_FAULT_EVENT = 0;
struct hsa_amd_gpu_memory_fault_info_t {
  hsa_agent_t agent;
  uint64_t virtual_address;
  uint32_t fault_reason_mask;  // hsa_amd_memory_fault_reason_t bits
};
struct hsa_amd_event_t {
  hsa_amd_event_type_t event_type;
  union {
    hsa_amd_gpu_memory_fault_info_t memory_fault;
  };
};
constexpr uint32_t HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT = 1u << 0;
constexpr uint32_t HSA_AMD_MEMORY_FAULT_READ_ONLY = 1u << 1;
constexpr uint32_t HSA_AMD_MEMORY_FAULT_NX = 1u << 2;
constexpr uint32_t HSA_AMD_MEMORY_FAULT_HOST_ONLY = 1u << 3;
using hsa_amd_system_event_callback_t = hsa_status_t (*)(const hsa_amd_event_t *, void *);

// A user-mode queue (the large model: 64-bit addresses).
struct hsa_queue_t {
  hsa_queue_type32_t type;
  uint32_t features;
  void *base_address;
  hsa_signal_t doorbell_signal;
  uint32_t size;
  uint32_t reserved1;
  uint64_t id;
};

// AQL packets: 64 bytes each. The first 16 bits (header) are written last,
// with a release store, to hand the packet to the packet processor.
struct hsa_kernel_dispatch_packet_t {
  uint16_t header;
  uint16_t setup;
  uint16_t workgroup_size_x;
  uint16_t workgroup_size_y;
  uint16_t workgroup_size_z;
  uint16_t reserved0;
  uint32_t grid_size_x;
  uint32_t grid_size_y;
  uint32_t grid_size_z;
  uint32_t private_segment_size;
  uint32_t group_segment_size;
  uint64_t kernel_object;
  void *kernarg_address;
  uint64_t reserved2;
  hsa_signal_t completion_signal;
};

struct hsa_barrier_and_packet_t {
  uint16_t header;
  uint16_t reserved0;
  uint32_t reserved1;
  hsa_signal_t dep_signal[5];
  uint64_t reserved2;
  hsa_signal_t completion_signal;
};

using hsa_amd_signal_handler = bool (*)(hsa_signal_value_t value, void *arg);
using hsa_queue_callback = void (*)(hsa_status_t status, hsa_queue_t *source, void *data);

// hsa_status_t
constexpr hsa_status_t HSA_STATUS_SUCCESS = 0x0;
constexpr hsa_status_t HSA_STATUS_INFO_BREAK = 0x1;
constexpr hsa_status_t HSA_STATUS_ERROR = 0x1000;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_ARGUMENT = 0x1001;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_QUEUE_CREATION = 0x1002;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_ALLOCATION = 0x1003;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_AGENT = 0x1004;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_SIGNAL = 0x1006;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_QUEUE = 0x1007;
constexpr hsa_status_t HSA_STATUS_ERROR_OUT_OF_RESOURCES = 0x1008;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_PACKET_FORMAT = 0x1009;
constexpr hsa_status_t HSA_STATUS_ERROR_NOT_INITIALIZED = 0x100B;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_ISA = 0x100F;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_CODE_OBJECT = 0x1010;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_EXECUTABLE = 0x1011;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_SYMBOL_NAME = 0x1013;
constexpr hsa_status_t HSA_STATUS_ERROR_EXCEPTION = 0x1016;
constexpr hsa_status_t HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER = 0x1021;
constexpr hsa_status_t HSA_STATUS_ERROR_FATAL = 0x1026;

// hsa_system_info_t, hsa_device_type_t, hsa_agent_info_t and AMD's additions
constexpr hsa_system_info_t HSA_SYSTEM_INFO_VERSION_MAJOR = 0;
constexpr hsa_system_info_t HSA_SYSTEM_INFO_VERSION_MINOR = 1;
constexpr hsa_system_info_t HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY = 3;
constexpr hsa_device_type_t HSA_DEVICE_TYPE_CPU = 0;
constexpr hsa_device_type_t HSA_DEVICE_TYPE_GPU = 1;
constexpr hsa_agent_info_t HSA_AGENT_INFO_NAME = 0;
constexpr hsa_agent_info_t HSA_AGENT_INFO_VENDOR_NAME = 1;
constexpr hsa_agent_info_t HSA_AGENT_INFO_WAVEFRONT_SIZE = 6;
constexpr hsa_agent_info_t HSA_AGENT_INFO_WORKGROUP_MAX_DIM = 7;
constexpr hsa_agent_info_t HSA_AGENT_INFO_WORKGROUP_MAX_SIZE = 8;
constexpr hsa_agent_info_t HSA_AGENT_INFO_GRID_MAX_DIM = 9;
constexpr hsa_agent_info_t HSA_AGENT_INFO_QUEUE_MAX_SIZE = 14;
constexpr hsa_agent_info_t HSA_AGENT_INFO_DEVICE = 17;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT = 0xA002;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY = 0xA003;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_BDFID = 0xA006;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_PRODUCT_NAME = 0xA009;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_DOMAIN = 0xA00F;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU = 0xA00A;
constexpr hsa_agent_info_t HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU = 0xA00B;

// Memory pools
constexpr hsa_amd_segment_t HSA_AMD_SEGMENT_GLOBAL = 0;
constexpr hsa_amd_segment_t HSA_AMD_SEGMENT_GROUP = 3;
constexpr uint32_t HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT = 1;
constexpr uint32_t HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED = 2;
constexpr uint32_t HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED = 4;
constexpr hsa_amd_memory_pool_info_t HSA_AMD_MEMORY_POOL_INFO_SEGMENT = 0;
constexpr hsa_amd_memory_pool_info_t HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS = 1;
constexpr hsa_amd_memory_pool_info_t HSA_AMD_MEMORY_POOL_INFO_SIZE = 2;
constexpr hsa_amd_memory_pool_info_t HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED = 5;

// Signals and queues
constexpr hsa_signal_condition_t HSA_SIGNAL_CONDITION_EQ = 0;
constexpr hsa_signal_condition_t HSA_SIGNAL_CONDITION_NE = 1;
constexpr hsa_signal_condition_t HSA_SIGNAL_CONDITION_LT = 2;
constexpr hsa_signal_condition_t HSA_SIGNAL_CONDITION_GTE = 3;
constexpr hsa_wait_state_t HSA_WAIT_STATE_BLOCKED = 0;
constexpr hsa_wait_state_t HSA_WAIT_STATE_ACTIVE = 1;
constexpr hsa_queue_type32_t HSA_QUEUE_TYPE_MULTI = 0;
constexpr hsa_queue_type32_t HSA_QUEUE_TYPE_SINGLE = 1;

// Packet headers
constexpr uint16_t HSA_PACKET_TYPE_INVALID = 1;
constexpr uint16_t HSA_PACKET_TYPE_KERNEL_DISPATCH = 2;
constexpr uint16_t HSA_PACKET_TYPE_BARRIER_AND = 3;
constexpr uint16_t HSA_FENCE_SCOPE_NONE = 0;
constexpr uint16_t HSA_FENCE_SCOPE_AGENT = 1;
constexpr uint16_t HSA_FENCE_SCOPE_SYSTEM = 2;
constexpr int HSA_PACKET_HEADER_TYPE = 0;
constexpr int HSA_PACKET_HEADER_BARRIER = 8;
constexpr int HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE = 9;
constexpr int HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE = 11;
constexpr int HSA_KERNEL_DISPATCH_PACKET_SETUP_DIMENSIONS = 0;

// Executables
constexpr hsa_profile_t HSA_PROFILE_FULL = 1;
constexpr hsa_default_float_rounding_mode_t HSA_DEFAULT_FLOAT_ROUNDING_MODE_DEFAULT = 0;
constexpr hsa_executable_symbol_info_t HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE = 11;
constexpr hsa_executable_symbol_info_t HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE = 13;
constexpr hsa_executable_symbol_info_t HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE = 14;
constexpr hsa_executable_symbol_info_t HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT = 22;

using AgentCallback = hsa_status_t (*)(hsa_agent_t, void *);
using PoolCallback = hsa_status_t (*)(hsa_amd_memory_pool_t, void *);

// Every entry point used, as X(return, name, parameters). R: required; O:
// optional (the feature is reported as unsupported without it).
#define GPUHAL_HSA_API(R, O)                                                                                     \
  R(hsa_status_t, hsa_init, ())                                                                                  \
  R(hsa_status_t, hsa_shut_down, ())                                                                             \
  R(hsa_status_t, hsa_status_string, (hsa_status_t, const char **))                                              \
  R(hsa_status_t, hsa_system_get_info, (hsa_system_info_t, void *))                                              \
  R(hsa_status_t, hsa_iterate_agents, (AgentCallback, void *))                                                   \
  R(hsa_status_t, hsa_agent_get_info, (hsa_agent_t, hsa_agent_info_t, void *))                                   \
  R(hsa_status_t, hsa_amd_agent_iterate_memory_pools, (hsa_agent_t, PoolCallback, void *))                       \
  R(hsa_status_t, hsa_amd_memory_pool_get_info, (hsa_amd_memory_pool_t, hsa_amd_memory_pool_info_t, void *))     \
  R(hsa_status_t, hsa_amd_memory_pool_allocate, (hsa_amd_memory_pool_t, size_t, uint32_t, void **))              \
  R(hsa_status_t, hsa_amd_memory_pool_free, (void *))                                                            \
  R(hsa_status_t, hsa_amd_agents_allow_access, (uint32_t, const hsa_agent_t *, const uint32_t *, const void *))  \
  R(hsa_status_t, hsa_signal_create, (hsa_signal_value_t, uint32_t, const hsa_agent_t *, hsa_signal_t *))        \
  R(hsa_status_t, hsa_signal_destroy, (hsa_signal_t))                                                            \
  R(hsa_signal_value_t, hsa_signal_load_scacquire, (hsa_signal_t))                                               \
  R(void, hsa_signal_store_screlease, (hsa_signal_t, hsa_signal_value_t))                                        \
  R(hsa_signal_value_t, hsa_signal_wait_scacquire,                                                               \
    (hsa_signal_t, hsa_signal_condition_t, hsa_signal_value_t, uint64_t, hsa_wait_state_t))                      \
  R(hsa_status_t, hsa_queue_create,                                                                              \
    (hsa_agent_t, uint32_t, hsa_queue_type32_t, hsa_queue_callback, void *, uint32_t, uint32_t, hsa_queue_t **)) \
  R(hsa_status_t, hsa_queue_destroy, (hsa_queue_t *))                                                            \
  R(uint64_t, hsa_queue_add_write_index_scacq_screl, (const hsa_queue_t *, uint64_t))                            \
  R(uint64_t, hsa_queue_load_read_index_scacquire, (const hsa_queue_t *))                                        \
  R(hsa_status_t, hsa_amd_memory_async_copy,                                                                     \
    (void *, hsa_agent_t, const void *, hsa_agent_t, size_t, uint32_t, const hsa_signal_t *, hsa_signal_t))      \
  R(hsa_status_t, hsa_amd_memory_fill, (void *, uint32_t, size_t))                                               \
  O(hsa_status_t, hsa_amd_memory_lock, (void *, size_t, hsa_agent_t *, int, void **))                            \
  O(hsa_status_t, hsa_amd_memory_unlock, (void *))                                                               \
  O(hsa_status_t, hsa_memory_register, (void *, size_t))                                                         \
  O(hsa_status_t, hsa_memory_deregister, (void *, size_t))                                                       \
  O(hsa_status_t, hsa_amd_profiling_set_profiler_enabled, (hsa_queue_t *, int))                                  \
  O(hsa_status_t, hsa_amd_queue_set_priority, (hsa_queue_t *, int))                                              \
  O(hsa_status_t, hsa_amd_memory_async_copy_rect,                                                                \
    (const hsa_pitched_ptr_t *, const hsa_dim3_t *, const hsa_pitched_ptr_t *, const hsa_dim3_t *,               \
     const hsa_dim3_t *, hsa_agent_t, hsa_amd_copy_direction_t, uint32_t, const hsa_signal_t *, hsa_signal_t))   \
  O(hsa_status_t, hsa_amd_profiling_get_dispatch_time,                                                           \
    (hsa_agent_t, hsa_signal_t, hsa_amd_profiling_dispatch_time_t *))                                            \
  O(hsa_status_t, hsa_amd_profiling_async_copy_enable, (bool))                                                   \
  O(hsa_status_t, hsa_amd_profiling_get_async_copy_time, (hsa_signal_t, hsa_amd_profiling_async_copy_time_t *))  \
  O(hsa_status_t, hsa_code_object_reader_create_from_memory, (const void *, size_t, hsa_code_object_reader_t *)) \
  O(hsa_status_t, hsa_code_object_reader_destroy, (hsa_code_object_reader_t))                                    \
  O(hsa_status_t, hsa_executable_create_alt,                                                                     \
    (hsa_profile_t, hsa_default_float_rounding_mode_t, const char *, hsa_executable_t *))                        \
  O(hsa_status_t, hsa_executable_load_agent_code_object,                                                         \
    (hsa_executable_t, hsa_agent_t, hsa_code_object_reader_t, const char *, hsa_loaded_code_object_t *))         \
  O(hsa_status_t, hsa_executable_freeze, (hsa_executable_t, const char *))                                       \
  O(hsa_status_t, hsa_executable_destroy, (hsa_executable_t))                                                    \
  O(hsa_status_t, hsa_executable_get_symbol_by_name,                                                             \
    (hsa_executable_t, const char *, const hsa_agent_t *, hsa_executable_symbol_t *))                            \
  O(hsa_status_t, hsa_executable_symbol_get_info, (hsa_executable_symbol_t, hsa_executable_symbol_info_t, void *)) \
  O(hsa_status_t, hsa_amd_register_system_event_handler, (hsa_amd_system_event_callback_t, void *))

// The packet header for a packet of `type` with the given fence scopes
// (system-scope by default: host memory and other agents see the results),
// and the barrier bit: the packet starts only when every earlier packet of its queue has
// completed (streams are in order).
constexpr uint16_t packet_header(uint16_t type, uint16_t acquire = HSA_FENCE_SCOPE_SYSTEM,
                                 uint16_t release = HSA_FENCE_SCOPE_SYSTEM) {
  return uint16_t((type << HSA_PACKET_HEADER_TYPE) | (1u << HSA_PACKET_HEADER_BARRIER) |
                  (acquire << HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) |
                  (release << HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE));
}

}  // namespace gpuhal::hsa::api

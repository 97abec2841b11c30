// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: hsa_init / hsa_shut_down, status strings, system
// information, agents and their memory pools, the system event handler.
#include "fake_hsa.hpp"

using namespace fake_hsa;

// ---- the API ----------------------------------------------------------------------------------

EXPORT hsa_status_t hsa_init() {
  if (const char *f = std::getenv("FAKE_HSA_INIT_FAIL")) return hsa_status_t(std::strtol(f, nullptr, 0));
  if (const hsa_status_t f = injected("hsa_init"); f != HSA_STATUS_SUCCESS) return f;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init++ == 0) {
    std::lock_guard<std::mutex> clock(g_copy_mu);
    g_copy_stop = false;
    g_copy_thread = new std::thread(copy_main);
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  std::thread *t = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--g_init > 0) return HSA_STATUS_SUCCESS;
    g_event_handler = nullptr;  // the runtime's state goes, its handlers with it
    g_event_data = nullptr;
    std::lock_guard<std::mutex> clock(g_copy_mu);
    g_copy_stop = true;
    std::swap(t, g_copy_thread);
  }
  g_copy_cv.notify_all();
  if (t) {
    t->join();
    delete t;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t s, const char **out) {
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const char *t = status_text(s);
  if (!t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *out = t;
  return HSA_STATUS_SUCCESS;
}

// hsa.h, hsa_system_info_t: HSA_SYSTEM_INFO_VERSION_MAJOR / _MINOR are the
// "Major [Minor] version of the HSA runtime specification supported by the
// implementation. The type of this attribute is uint16_t." ROCr answers 1.1
// (rocminfo prints "Runtime Version: 1.1"). TIMESTAMP_FREQUENCY is uint64_t.
// Anything else is refused here (the fake knows no other attribute).
EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t what, void *value) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (what == HSA_SYSTEM_INFO_VERSION_MAJOR || what == HSA_SYSTEM_INFO_VERSION_MINOR) {
    *static_cast<uint16_t *>(value) = 1;
    return HSA_STATUS_SUCCESS;
  }
  if (what != HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *static_cast<uint64_t *>(value) = 1000000000ull;  // the fake's timestamps are nanoseconds
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(AgentCallback cb, void *data) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_iterate_agents"); f != HSA_STATUS_SUCCESS) return f;
  if (!cb) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (hsa_status_t s = cb(hsa_agent_t{kCpuAgent}, data); s != HSA_STATUS_SUCCESS) return s;
  for (uint64_t i = 0; i < g_gpus; ++i)
    if (hsa_status_t s = cb(hsa_agent_t{kGpuAgentBase + i}, data); s != HSA_STATUS_SUCCESS) return s;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t what, void *value) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_agent_get_info"); f != HSA_STATUS_SUCCESS) return f;
  if (!is_agent(agent) || !value) return HSA_STATUS_ERROR_INVALID_AGENT;
  const bool gpu = is_gpu(agent);
  auto str = [&](const char *s) {
    std::memset(value, 0, 64);
    std::strncpy(static_cast<char *>(value), s, 63);
    return HSA_STATUS_SUCCESS;
  };
  auto u32 = [&](uint32_t v) {
    *static_cast<uint32_t *>(value) = v;
    return HSA_STATUS_SUCCESS;
  };
  switch (what) {
    case HSA_AGENT_INFO_NAME:
      return str(gpu ? g_isas[size_t(agent.handle - kGpuAgentBase)].c_str() : "gpuhal fake CPU");
    case HSA_AGENT_INFO_VENDOR_NAME:
      return str(gpu ? "AMD" : "CPU");
    case HSA_AGENT_INFO_DEVICE:
      return u32(gpu ? uint32_t(HSA_DEVICE_TYPE_GPU) : uint32_t(HSA_DEVICE_TYPE_CPU));
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
      return str(gpu ? "gpuhal fake HSA GPU" : "gpuhal fake CPU");
    default:
      break;
  }
  if (!gpu) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      return u32(64);
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
      return u32(1024);
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t *d = static_cast<uint16_t *>(value);
      d[0] = d[1] = d[2] = 1024;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_GRID_MAX_DIM: {
      hsa_dim3_t *d = static_cast<hsa_dim3_t *>(value);
      d->x = d->y = d->z = UINT32_MAX;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
      return u32(131072);
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
      return u32(104);
    // gfx90a: 4 SIMDs per CU, 8 waves per SIMD.
    case HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU:
      return u32(32);
    case HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU:
      return u32(4);
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY:
      return u32(1700);
    case HSA_AMD_AGENT_INFO_BDFID:
      return u32(uint32_t((0x43 + agent.handle - kGpuAgentBase) << 8));
    case HSA_AMD_AGENT_INFO_DOMAIN:
      return u32(0);
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent, PoolCallback cb, void *data) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_agent_iterate_memory_pools"); f != HSA_STATUS_SUCCESS) return f;
  if (!is_agent(agent) || !cb) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!is_gpu(agent)) return cb(hsa_amd_memory_pool_t{kSystemPool}, data);
  const uint64_t i = agent.handle - kGpuAgentBase;
  if (hsa_status_t s = cb(hsa_amd_memory_pool_t{kDevicePoolBase + i}, data); s != HSA_STATUS_SUCCESS) return s;
  return cb(hsa_amd_memory_pool_t{kGroupPoolBase + i}, data);
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, hsa_amd_memory_pool_info_t what,
                                                 void *value) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const bool system = pool.handle == kSystemPool;
  const bool device = pool.handle >= kDevicePoolBase && pool.handle < kDevicePoolBase + g_gpus;
  const bool group = pool.handle >= kGroupPoolBase && pool.handle < kGroupPoolBase + g_gpus;
  if (!system && !device && !group) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      *static_cast<hsa_amd_segment_t *>(value) = group ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t *>(value) =
          system   ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
          : device ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                   : 0u;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
      *static_cast<size_t *>(value) = group ? kLdsBytes : device ? g_device_memory : (uint64_t(64) << 30);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
      *static_cast<bool *>(value) = !group;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}


// Makes the k-th call (from now) of `symbol` fail with `status`.
EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback, void *data) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_amd_register_system_event_handler"); f != HSA_STATUS_SUCCESS) return f;
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_event_handler) return HSA_STATUS_ERROR;  // "An event handler has already been registered"
  g_event_handler = callback;
  g_event_data = data;
  return HSA_STATUS_SUCCESS;
}

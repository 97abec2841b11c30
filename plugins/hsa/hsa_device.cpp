// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's devices: the GPU agents and the CPU agent's pools found
// at init (discover), and each device's properties as learnt then.
#include <dlfcn.h>
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <unordered_set>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>
#include "hsa_device.hpp"
#include "hsa_plugin.hpp"
#include "handle_registry.hpp"
#include "hsa_entries.hpp"
#include "hsa_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

HostAgent &host_agent() {
  return g_plugin.host;
}

namespace {

// ---- discovery -----------------------------------------------------------------------

struct Discovery {
  std::vector<hsa_agent_t> gpus;
  std::vector<hsa_agent_t> cpus;
  hsa_status_t failed = HSA_STATUS_SUCCESS;  // hsa_agent_get_info's failure, which stops the walk
};

hsa_status_t collect_agent(hsa_agent_t agent, void *data) {
  auto *d = static_cast<Discovery *>(data);
  hsa_device_type_t type = -1;
  if (const hsa_status_t s = rt().hsa_agent_get_info(agent, HSA_AGENT_INFO_DEVICE, &type); s != HSA_STATUS_SUCCESS)
    return d->failed = s;
  if (type == HSA_DEVICE_TYPE_GPU) d->gpus.push_back(agent);
  if (type == HSA_DEVICE_TYPE_CPU) d->cpus.push_back(agent);
  return HSA_STATUS_SUCCESS;
}

// One memory pool of an agent, as ROCr describes it (a pool whose segment
// cannot be read is left out).
struct PoolInfo {
  hsa_amd_memory_pool_t pool;
  hsa_amd_segment_t segment = -1;
  uint32_t flags = 0;  // global pools: HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_*
  size_t size = 0;
  bool alloc_allowed = false;
};
hsa_status_t collect_pool(hsa_amd_memory_pool_t pool, void *data) {
  PoolInfo info;
  info.pool = pool;
  const auto &r = rt();
  if (r.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &info.segment) != HSA_STATUS_SUCCESS)
    return HSA_STATUS_SUCCESS;
  r.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_SIZE, &info.size);
  if (info.segment == HSA_AMD_SEGMENT_GLOBAL) {
    r.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &info.flags);
    r.hsa_amd_memory_pool_get_info(pool, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &info.alloc_allowed);
  }
  static_cast<std::vector<PoolInfo> *>(data)->push_back(info);
  return HSA_STATUS_SUCCESS;
}

// gfx90a -> 9.0, gfx1030 -> 10.3 (the last two characters are minor and
// stepping, in hex).
void parse_gfx(const std::string &name, int32_t *major, int32_t *minor) {
  *major = *minor = 0;
  if (name.compare(0, 3, "gfx") != 0 || name.size() < 6) return;
  const std::string digits = name.substr(3);
  try {
    *major = std::stoi(digits.substr(0, digits.size() - 2));
    *minor = std::stoi(digits.substr(digits.size() - 2, 1), nullptr, 16);
  } catch (...) {
    *major = *minor = 0;
  }
}

gpuhal_status_t describe_device(hsa_agent_t agent, Device *d) {
  d->agent = agent;
  char name[64] = {0};
  if (const gpuhal_status_t call_st =
          hsa_call(rt().hsa_agent_get_info, "hsa_agent_get_info", agent, HSA_AGENT_INFO_NAME, name);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  d->isa_name.assign(name, strnlen(name, sizeof name));
  gpuhal_device_properties_t &p = d->props;
  char product[64] = {0}, vendor[64] = {0};
  if (rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_PRODUCT_NAME, product) != HSA_STATUS_SUCCESS || !product[0])
    std::snprintf(product, sizeof product, "%s", d->isa_name.c_str());
  if (const gpuhal_status_t call_st =
          hsa_call(rt().hsa_agent_get_info, "hsa_agent_get_info", agent, HSA_AGENT_INFO_VENDOR_NAME, vendor);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  std::snprintf(p.name, sizeof p.name, "%.63s (%s)", product, d->isa_name.c_str());
  std::snprintf(p.vendor, sizeof p.vendor, "%.63s", vendor);
  uint32_t wavefront = 0, cus = 0, clock = 0, bdf = 0, domain = 0;
  hsa_dim3_t grid{};
  const std::pair<hsa_agent_info_t, void *> required[] = {
      {HSA_AGENT_INFO_WAVEFRONT_SIZE, &wavefront},
      {HSA_AGENT_INFO_WORKGROUP_MAX_SIZE, &d->max_workgroup_size},
      {HSA_AGENT_INFO_WORKGROUP_MAX_DIM, d->max_workgroup_dim},
      {HSA_AGENT_INFO_GRID_MAX_DIM, &grid},
      {HSA_AGENT_INFO_QUEUE_MAX_SIZE, &d->queue_max_size},
  };
  for (const auto &info : required) {
    if (const gpuhal_status_t call_st =
            hsa_call(rt().hsa_agent_get_info, "hsa_agent_get_info", agent, info.first, info.second);
        call_st != GPUHAL_SUCCESS)
      return call_st;
  }
  // AMD's extensions are informational: a runtime without one leaves 0.
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT, &cus);
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY, &clock);
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_BDFID, &bdf);
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_DOMAIN, &domain);
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_MAX_WAVES_PER_CU, &d->max_waves_per_cu);
  rt().hsa_agent_get_info(agent, HSA_AMD_AGENT_INFO_NUM_SIMDS_PER_CU, &d->simds_per_cu);
  d->wavefront_size = wavefront;
  std::vector<PoolInfo> pools;
  if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_agent_iterate_memory_pools,
                                               "hsa_amd_agent_iterate_memory_pools", agent, collect_pool, &pools);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  bool have_device_pool = false;
  for (const PoolInfo &info : pools) {
    if (info.segment == HSA_AMD_SEGMENT_GROUP) d->lds_size = info.size;
    if (info.segment != HSA_AMD_SEGMENT_GLOBAL) continue;
    if (!have_device_pool && info.alloc_allowed && (info.flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED)) {
      d->device_pool = info.pool;
      d->device_pool_size = info.size;
      have_device_pool = true;
    }
  }
  if (!have_device_pool)
    return fail(GPUHAL_ERROR_DRIVER, "GPU agent " + d->isa_name + " has no coarse-grained global memory pool");
  if (d->max_workgroup_size == 0 || wavefront == 0)
    return fail(GPUHAL_ERROR_DRIVER, "GPU agent " + d->isa_name + " reports no work-group or wavefront size");
  p.total_memory = d->device_pool_size;
  p.shared_memory_per_block = d->lds_size;
  parse_gfx(d->isa_name, &p.compute_major, &p.compute_minor);
  p.multiprocessor_count = int32_t(cus);
  p.warp_size = int32_t(wavefront);
  p.max_threads_per_block = int32_t(d->max_workgroup_size);
  for (int i = 0; i < 3; ++i) p.max_block_dim[i] = d->max_workgroup_dim[i];
  // Grid sizes in HSA count work-items; gpuhal's count work-groups.
  const uint32_t g[3] = {grid.x, grid.y, grid.z};
  for (int i = 0; i < 3; ++i)
    p.max_grid_dim[i] = int32_t(std::min<uint64_t>(INT32_MAX, g[i] / std::max<uint32_t>(1, d->max_workgroup_dim[i])));
  p.clock_rate_khz = int32_t(clock * 1000);
  p.can_map_host_memory = 1;
  p.unified_addressing = 1;
  p.concurrent_kernels = 1;
  p.pci_domain = int32_t(domain);
  p.pci_bus = int32_t((bdf >> 8) & 0xff);
  p.pci_device = int32_t((bdf >> 3) & 0x1f);
  // hsa.h: HSA_SYSTEM_INFO_VERSION_MAJOR / _MINOR, "The type of this
  // attribute is uint16_t": the HSA specification version the runtime
  // implements. Informational: a runtime that does not answer leaves it empty.
  uint16_t major = 0, minor = 0;
  if (rt().hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MAJOR, &major) == HSA_STATUS_SUCCESS &&
      rt().hsa_system_get_info(HSA_SYSTEM_INFO_VERSION_MINOR, &minor) == HSA_STATUS_SUCCESS)
    std::snprintf(p.driver_version, sizeof p.driver_version, "HSA %u.%u (ROCr)", unsigned(major), unsigned(minor));
  return GPUHAL_SUCCESS;
}

gpuhal_status_t describe_host(hsa_agent_t agent) {
  g_plugin.host = HostAgent();
  g_plugin.host.agent = agent;
  std::vector<PoolInfo> pools;
  if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_agent_iterate_memory_pools,
                                               "hsa_amd_agent_iterate_memory_pools", agent, collect_pool, &pools);
      call_st != GPUHAL_SUCCESS)
    return call_st;
  bool have_system = false;
  for (const PoolInfo &info : pools) {
    if (info.segment != HSA_AMD_SEGMENT_GLOBAL || !info.alloc_allowed ||
        !(info.flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED))
      continue;
    if ((info.flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !g_plugin.host.has_kernarg_pool) {
      g_plugin.host.kernarg_pool = info.pool;
      g_plugin.host.has_kernarg_pool = true;
    }
    if (!have_system) {
      g_plugin.host.system_pool = info.pool;
      have_system = true;
    }
  }
  if (!have_system) return fail(GPUHAL_ERROR_DRIVER, "the CPU agent has no fine-grained global memory pool");
  if (!g_plugin.host.has_kernarg_pool) g_plugin.host.kernarg_pool = g_plugin.host.system_pool;
  return GPUHAL_SUCCESS;
}

}  // namespace

gpuhal_status_t discover() {
  Discovery d;
  const hsa_status_t s = rt().hsa_iterate_agents(collect_agent, &d);
  if (d.failed != HSA_STATUS_SUCCESS) return rt().error(d.failed, "hsa_agent_get_info");
  if (s != HSA_STATUS_SUCCESS) return rt().error(s, "hsa_iterate_agents");
  if (d.gpus.empty()) return GPUHAL_SUCCESS;
  if (d.cpus.empty()) return fail(GPUHAL_ERROR_DRIVER, "the HSA runtime reports GPU agents but no CPU agent");
  if (const gpuhal_status_t st = describe_host(d.cpus[0]); st != GPUHAL_SUCCESS) return st;
  std::vector<Device> devices(d.gpus.size());
  for (size_t i = 0; i < d.gpus.size(); ++i)
    if (const gpuhal_status_t st = describe_device(d.gpus[i], &devices[i]); st != GPUHAL_SUCCESS) return st;
  g_plugin.devices = std::move(devices);
  return GPUHAL_SUCCESS;
}

Device *device_at(int32_t ordinal) {
  if (ordinal < 0 || size_t(ordinal) >= g_plugin.devices.size()) return nullptr;
  return &g_plugin.devices[size_t(ordinal)];
}

gpuhal_status_t device_count(int32_t *count) {
  *count = int32_t(g_plugin.devices.size());
  if (g_plugin.devices.empty() && !g_plugin.no_device_reason.empty()) fail(GPUHAL_SUCCESS, g_plugin.no_device_reason);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  if (ordinal < 0 || size_t(ordinal) >= g_plugin.devices.size())
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: no hsa device " + std::to_string(ordinal));
  gpuhal_device_properties_t p = g_plugin.devices[size_t(ordinal)].props;
  // ROCr's agents, their memory and their queues are the process's: other
  // ROCm libraries put work on the same GPU without gpuhal seeing it.
  p.exclusive_contexts = 0;
  // hsa_executable_load_agent_code_object and _freeze copy the code through
  // the runtime's own copy path, not through a queue of the plugin's, and
  // the kernel lookup reads the frozen executable's symbols: neither waits
  // for packets queued on our queues (ROCr's documented behaviour as we
  // read it; not yet watched on an AMD GPU -- the conformance check
  // streams.ordered_calls_do_not_wait would show it).
  p.module_loads_wait = 0;
  p.synchronize_waits_for_all_work = 0;  // the context's own queues only: ROCr has no context-wide wait
  return plugin::write_properties(p, out);
}

}  // namespace gpuhal::hsa

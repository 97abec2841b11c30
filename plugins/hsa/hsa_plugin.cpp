// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend: every plugin entry over AMD's ROCr HSA runtime.
//
// Devices are the GPU agents; the CPU agent's fine-grained pool serves
// pinned and mapped host memory. init never fails for a runtime that loads
// but cannot start (hsa_init failing without /dev/kfd): the plugin then
// reports zero devices and leaves hsa_init's status as its message, which
// the core shows. Device and managed memory are in hsa_memory.cpp. Contexts own what was made in them (streams, events,
// allocations, host memory, registrations, modules); context_destroy
// releases all of it.
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

#include "hsa_context.hpp"
#include "handle_registry.hpp"
#include "hsa_entries.hpp"
#include "hsa_kernels.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

namespace {
std::mutex g_mu;  // guards everything below
int g_init_count = 0;
std::vector<Device> g_devices;
HostAgent g_host;
std::string g_no_device_reason;  // hsa_init's failure, reported by device_count
plugin::HandleRegistry<HsaContext, gpuhal_context_t> g_contexts;
}  // namespace

HsaContext *find(gpuhal_context_t h) {
  return g_contexts.find(h);
}

gpuhal_status_t bad_context(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid context handle");
}

HostAgent &host_agent() {
  return g_host;
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
  g_host = HostAgent();
  g_host.agent = agent;
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
    if ((info.flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT) && !g_host.has_kernarg_pool) {
      g_host.kernarg_pool = info.pool;
      g_host.has_kernarg_pool = true;
    }
    if (!have_system) {
      g_host.system_pool = info.pool;
      have_system = true;
    }
  }
  if (!have_system) return fail(GPUHAL_ERROR_DRIVER, "the CPU agent has no fine-grained global memory pool");
  if (!g_host.has_kernarg_pool) g_host.kernarg_pool = g_host.system_pool;
  return GPUHAL_SUCCESS;
}

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
  g_devices = std::move(devices);
  return GPUHAL_SUCCESS;
}

// ---- lifecycle and devices -----------------------------------------------------------

}  // namespace

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  return guard("init", [&]() -> gpuhal_status_t {
    if (!args || args->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "init: missing init arguments");
    plugin::set_logger(args);
    plugin::Options opts(args);
    const std::string library = opts.get("GPUHAL_HSA_RUNTIME").value_or("libhsa-runtime64.so.1");
    set_comgr_library(opts.get("GPUHAL_AMD_COMGR").value_or(""));
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_init_count > 0) {
      if (runtime().path != library)
        return fail(GPUHAL_ERROR_INITIALIZATION_FAILED,
                    "the hsa plugin is already initialised with the runtime " + runtime().path + " in this process");
      ++g_init_count;
      return GPUHAL_SUCCESS;
    }
    std::string why;
    if (const gpuhal_status_t st = runtime().load(library, &why); st != GPUHAL_SUCCESS) return fail(st, why);
    g_devices.clear();
    g_no_device_reason.clear();
    if (runtime().start(&why) != GPUHAL_SUCCESS) {
      // The runtime is installed but cannot reach a GPU: zero devices, and
      // hsa_init's status is the reason the core shows.
      g_no_device_reason = why;
      plugin::log(GPUHAL_LOG_DEBUG, "hsa: " + why);
    } else if (const gpuhal_status_t st = discover(); st != GPUHAL_SUCCESS) {
      const std::string msg = plugin::last_error();
      runtime().unload();
      return fail(st, msg);
    } else if (watch_faults()) {
      for (auto &d : g_devices) d.props.recovers_from_faults = 1;
    }
    g_init_count = 1;
    plugin::log(GPUHAL_LOG_DEBUG,
                "hsa: runtime " + library + ", " + std::to_string(g_devices.size()) + " GPU agent(s)");
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx);

void shutdown() {
  std::unique_lock<std::mutex> lock(g_mu);
  if (g_init_count == 0 || --g_init_count > 0) return;
  // Contexts are destroyed before shutdown (the ABI's rule); any left are
  // torn down as context_destroy would.
  lock.unlock();
  for (gpuhal_context_t c : g_contexts.handles()) context_destroy(c);
  lock.lock();
  g_contexts.take_all();
  g_devices.clear();
  drain_signal_pool();
  runtime().unload();
}

const char *last_error() {
  return plugin::last_error();
}

gpuhal_status_t device_count(int32_t *count) {
  *count = int32_t(g_devices.size());
  if (g_devices.empty() && !g_no_device_reason.empty()) fail(GPUHAL_SUCCESS, g_no_device_reason);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  if (ordinal < 0 || size_t(ordinal) >= g_devices.size())
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: no hsa device " + std::to_string(ordinal));
  gpuhal_device_properties_t p = g_devices[size_t(ordinal)].props;
  // ROCr's agents, their memory and their queues are the process's: other
  // ROCm libraries put work on the same GPU without gpuhal seeing it.
  p.exclusive_contexts = 0;
  return plugin::write_properties(p, out);
}

// ---- contexts --------------------------------------------------------------------------

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  return guard("context_create", [&]() -> gpuhal_status_t {
    if (ordinal < 0 || size_t(ordinal) >= g_devices.size())
      return fail(GPUHAL_ERROR_INVALID_VALUE, "context_create: no hsa device " + std::to_string(ordinal));
    auto c = std::make_unique<HsaContext>();
    c->ordinal = ordinal;
    c->device = &g_devices[size_t(ordinal)];
    c->legacy = std::make_unique<HsaStream>();
    c->legacy->ctx = c.get();
    c->legacy->legacy = true;
    if (const gpuhal_status_t st = create_queue(c.get(), c->legacy.get()); st != GPUHAL_SUCCESS) return st;
    if (const gpuhal_status_t st = alloc_system(c.get(), 8, &c->fill_scratch); st != GPUHAL_SUCCESS) {
      destroy_stream(c->legacy.get());
      return st;
    }
    register_context(c.get());
    *out = g_contexts.add(std::move(c));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  std::unique_ptr<HsaContext> owned = g_contexts.take(ctx);
  if (!owned) return bad_context("context_destroy");
  HsaContext *c = owned.get();
  // Everything made in the context goes with it; the first failure is
  // reported after the rest was still released. A context that failed
  // (a fault, a failed copy) is torn down without waiting for the work that
  // will never complete, and that is what destroying it is for: its failure
  // was reported already and is not reported again.
  gpuhal_status_t first = synchronize_context(c);
  if (c->failed.load()) first = GPUHAL_SUCCESS;
  std::string first_msg = first == GPUHAL_SUCCESS ? "" : plugin::last_error();
  auto note = [&](hsa_status_t s, const char *call) {
    if (s != HSA_STATUS_SUCCESS && first == GPUHAL_SUCCESS) {
      first = rt().error(s, call);
      first_msg = plugin::last_error();
    }
  };
  stop_host_thread(c);
  unregister_context(c);
  std::lock_guard<std::mutex> lock(c->mu);
  for (auto &kv : c->streams) destroy_stream(kv.second.get());
  for (auto &kv : c->per_thread) destroy_stream(kv.second.get());
  destroy_stream(c->legacy.get());
  release_staging(c);
  c->events.clear();
  for (auto &kv : c->modules) {
    if (rt().hsa_executable_destroy) note(rt().hsa_executable_destroy(kv.second->executable), "hsa_executable_destroy");
    if (rt().hsa_code_object_reader_destroy)
      note(rt().hsa_code_object_reader_destroy(kv.second->reader), "hsa_code_object_reader_destroy");
  }
  for (auto &kv : c->allocations)
    note(rt().hsa_amd_memory_pool_free(reinterpret_cast<void *>(kv.first)), "hsa_amd_memory_pool_free");
  for (auto &kv : c->registrations) {
    void *p = reinterpret_cast<void *>(kv.first);
    if (kv.second.locked)
      note(rt().hsa_amd_memory_unlock(p), "hsa_amd_memory_unlock");
    else
      note(rt().hsa_memory_deregister(p, size_t(kv.second.bytes)), "hsa_memory_deregister");
  }
  for (auto &kv : c->host_allocations)
    note(rt().hsa_amd_memory_pool_free(reinterpret_cast<void *>(kv.first)), "hsa_amd_memory_pool_free");
  if (c->fill_scratch) note(rt().hsa_amd_memory_pool_free(c->fill_scratch), "hsa_amd_memory_pool_free");
  if (c->event_scratch) note(rt().hsa_amd_memory_pool_free(c->event_scratch), "hsa_amd_memory_pool_free");
  if (first != GPUHAL_SUCCESS) return fail(first, first_msg);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t context_synchronize(gpuhal_context_t ctx) {
  return in_context(ctx, "context_synchronize",
                    [&](HsaContext *c) -> gpuhal_status_t {
                      if (const gpuhal_status_t st = c->captures.refuse_context_sync("context_synchronize");
                          st != GPUHAL_SUCCESS)
                        return st;
                      return synchronize_context(c);
                    });
}

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  return in_context(ctx, "memory_info", [&](HsaContext *c) -> gpuhal_status_t {
    // ROCr 5.x has no free-memory query: free is the pool's size less what
    // this process's contexts on the device hold.
    uint64_t used = 0;
    g_contexts.for_each([&](HsaContext &other) {
      if (other.device != c->device) return;
      std::lock_guard<std::mutex> lock(other.mu);
      used += other.allocated_bytes;
    });
    *total_bytes = c->device->device_pool_size;
    *free_bytes = used >= *total_bytes ? 0 : *total_bytes - used;
    return GPUHAL_SUCCESS;
  });
}

// ---- native handles -------------------------------------------------------------------------

// HSA has no contexts: only the device's agent.
gpuhal_status_t native_handle(gpuhal_context_t ctx, int32_t kind, uint64_t *out) {
  HsaContext *c = find(ctx);
  if (!c) return bad_context("native_handle");
  if (kind == GPUHAL_NATIVE_DEVICE) {
    *out = c->device->agent.handle;
    return GPUHAL_SUCCESS;
  }
  if (kind == GPUHAL_NATIVE_CONTEXT)
    return fail(GPUHAL_ERROR_NOT_SUPPORTED, "native_handle: HSA has no context object (ask for the device's agent)");
  return fail(GPUHAL_ERROR_INVALID_VALUE, "native_handle: unknown kind " + std::to_string(kind));
}

}  // namespace gpuhal::hsa

#define GPUHAL_PLUGIN_NAMESPACE gpuhal::hsa
#define GPUHAL_PLUGIN_NAME "hsa"
#include "plugin_define.inc"

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's plugin: the table, the lifecycle, devices, contexts and
// peer access (the other objects' entries are in files named after them; see
// host_entries.hpp). Each entry validates its handles and arguments, then
// delegates to HostContext / StreamState. Exceptions never cross the C ABI
// (guard()).
#include <pthread.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include <xxhash.h>

#include "fork_thread_gate.hpp"
#include "host_plugin.hpp"
#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;
using plugin::guard;

std::string hex(uint64_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

gpuhal_status_t bad_context(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid context handle");
}

// Blocking entries refuse to run on a stream worker (inside a callback):
// they could wait for the very operation that is running.
gpuhal_status_t would_deadlock(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_VALUE,
              std::string(entry) + ": called from a stream callback, where it could wait for itself");
}

// A kernel that failed since the last synchronising call is reported by the
// next one (and only once: the context stays usable).
gpuhal_status_t kernel_failure(HostContext *c) {
  std::string message;
  if (c->take_kernel_error(&message)) return fail(GPUHAL_ERROR_LAUNCH_FAILED, message);
  return GPUHAL_SUCCESS;
}

gpuhal_status_t bad_stream(const char *entry) {
  return fail(GPUHAL_ERROR_INVALID_HANDLE, std::string(entry) + ": invalid stream handle");
}

bool event_dep(const std::shared_ptr<HostEvent> &e, Dep *out) {
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->ticket == 0) return false;
  *out = Dep{e->stream, e->ticket};
  return true;
}

namespace {

std::mutex g_init_mu;

// See forget_parent_after_fork(). glibc drops the handler when the plugin
// is unloaded (it is registered under this object's __dso_handle).
void watch_forks() {
  static std::once_flag once;
  std::call_once(once, [] {
    // The prepare and parent handlers keep forks away from the plugin's
    // threads starting and being joined (fork_thread_gate.hpp).
    pthread_atfork(plugin::before_fork, plugin::after_fork_parent, [] {
      plugin::after_fork_child();
      new (&g_init_mu) std::mutex();
      forget_parent_after_fork();
    });
  });
}

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

uint64_t available_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

}  // namespace

// ---- lifecycle ---------------------------------------------------------------

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  return guard("init", [&]() -> gpuhal_status_t {
    if (!args || args->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "init: missing init arguments");
    if (GPUHAL_VERSION_MAJOR(args->abi_version) != GPUHAL_ABI_MAJOR)
      return fail(GPUHAL_ERROR_ABI_MISMATCH, "init: arguments of another ABI major version");
    plugin::Options opts(args);
    std::string error;
    int64_t devices = 1;
    uint64_t limit = 0;
    int64_t threads = 0;
    uint64_t fiber_stack = 64 * 1024;
    int64_t loops = 1;
    uint64_t mapping_cache = 64ull << 20;
    int64_t huge_pages = 1;
    uint64_t cache_max = 0;
    if (!opts.get_int("GPUHAL_HOST_DEVICES", 0, 64, &devices, &error) ||
        !opts.get_bytes("GPUHAL_HOST_MEMORY_LIMIT", &limit, &error) ||
        !opts.get_int("GPUHAL_HOST_THREADS", 0, 1024, &threads, &error) ||
        !opts.get_bytes("GPUHAL_HOST_FIBER_STACK", &fiber_stack, &error) ||
        !opts.get_int("GPUHAL_HOST_WORK_ITEM_LOOPS", 0, 1, &loops, &error) ||
        !opts.get_bytes("GPUHAL_HOST_MAPPING_CACHE", &mapping_cache, &error) ||
        !opts.get_int("GPUHAL_HOST_HUGE_PAGES", 0, 1, &huge_pages, &error) ||
        !opts.get_bytes("GPUHAL_KERNEL_CACHE_MAX", &cache_max, &error))
      return fail(GPUHAL_ERROR_INVALID_CONFIG, error);
    if (fiber_stack < 16 * 1024 || fiber_stack > (uint64_t(1) << 30))
      return fail(GPUHAL_ERROR_INVALID_CONFIG,
                  "GPUHAL_HOST_FIBER_STACK=" + std::to_string(fiber_stack) + ": expected between 16K and 1G bytes");
    const std::string key = std::to_string(devices) + "/" + std::to_string(limit);
    watch_forks();
    std::lock_guard<std::mutex> lock(g_init_mu);
    if (plugin_state_exists()) {
      auto &st = plugin_state();
      if (st.options_key != key)
        return fail(GPUHAL_ERROR_INITIALIZATION_FAILED,
                    "the host plugin is already initialised in this process with other settings "
                    "(GPUHAL_HOST_DEVICES / GPUHAL_HOST_MEMORY_LIMIT); a second runtime must use the same ones");
      ++st.init_count;
      return GPUHAL_SUCCESS;
    }
    plugin::set_logger(args);
    create_plugin_state();
    auto &st = plugin_state();
    st.options_key = key;
    st.init_count = 1;
    st.threads = unsigned(threads);
    st.fiber_stack = size_t(fiber_stack);
    st.work_item_loops = loops != 0;
    st.huge_pages = huge_pages != 0;
    st.registry.set_mapping_cache_limit(mapping_cache);
    if (auto cxx = opts.get("GPUHAL_HOST_CXX"); cxx && !cxx->empty()) {
      st.compiler.cxx = *cxx;
      st.compiler.vectorizing_cxx.clear();  // the user's compiler for everything
    }
    if (auto dir = opts.get("GPUHAL_KERNEL_CACHE"); dir && !dir->empty()) st.compiler.cache_dir = *dir;
    st.compiler.cache_max = cache_max;
    for (int64_t i = 0; i < devices; ++i) {
      auto d = std::make_unique<HostDevice>();
      d->ordinal = int(i);
      d->limit = limit;
      d->total_memory = limit ? limit : physical_memory();
      st.devices.push_back(std::move(d));
    }
    plugin::log(GPUHAL_LOG_DEBUG, "host plugin: " + std::to_string(devices) + " device(s), memory limit " +
                                      (limit ? std::to_string(limit) + " bytes" : std::string("none")));
    return GPUHAL_SUCCESS;
  });
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_init_mu);
  if (!plugin_state_exists()) return;
  if (--plugin_state().init_count > 0) return;
  destroy_plugin_state();  // destroys any context left (its streams finish first)
  remove_private_cache();
}

const char *last_error() {
  return plugin::last_error();
}

gpuhal_status_t device_count(int32_t *count) {
  if (!plugin_state_exists()) return fail(GPUHAL_ERROR_INITIALIZATION_FAILED, "device_count: plugin not initialised");
  *count = int32_t(plugin_state().devices.size());
  return GPUHAL_SUCCESS;
}

namespace {
HostDevice *device_at(int32_t ordinal) {
  if (!plugin_state_exists()) return nullptr;
  auto &d = plugin_state().devices;
  return ordinal >= 0 && size_t(ordinal) < d.size() ? d[size_t(ordinal)].get() : nullptr;
}

// A host device's UUID: stable on one machine and distinct between its
// devices and between machines. A 128-bit hash of the machine's id
// (/etc/machine-id, else the host name) and the ordinal, marked as an
// RFC 9562 version 8 (vendor-specific) UUID.
void host_device_uuid(int32_t ordinal, unsigned char out[16]) {
  std::string machine;
  for (const char *path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::ifstream f(path);
    if (f && std::getline(f, machine) && !machine.empty()) break;
  }
  if (machine.empty()) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    machine = name;
  }
  const std::string key = "gpuhal host device\n" + machine + "\n" + std::to_string(ordinal);
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<unsigned char>(h.high64 >> (56 - 8 * i));
    out[8 + i] = static_cast<unsigned char>(h.low64 >> (56 - 8 * i));
  }
  out[6] = static_cast<unsigned char>((out[6] & 0x0f) | 0x80);  // version 8
  out[8] = static_cast<unsigned char>((out[8] & 0x3f) | 0x80);  // the RFC's variant
}
}  // namespace

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  HostDevice *d = device_at(ordinal);
  if (!d) return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: no host device " + std::to_string(ordinal));
  gpuhal_device_properties_t p{};
  std::snprintf(p.name, sizeof p.name, "gpuhal host CPU device %d", int(ordinal));
  std::snprintf(p.vendor, sizeof p.vendor, "gpuhal");
  p.total_memory = d->total_memory;
  p.shared_memory_per_block = kSharedMemoryPerBlock;
  p.multiprocessor_count = int32_t(std::max(1u, std::thread::hardware_concurrency()));
  p.warp_size = 1;
  p.max_threads_per_block = gpuhal_host_max_items;
  p.max_block_dim[0] = 1024;
  p.max_block_dim[1] = 1024;
  p.max_block_dim[2] = 64;
  p.max_grid_dim[0] = 0x7fffffff;
  p.max_grid_dim[1] = 65535;
  p.max_grid_dim[2] = 65535;
  p.can_map_host_memory = 1;
  p.unified_addressing = 1;
  p.concurrent_kernels = 1;
  p.pci_device = ordinal;
  // Kernels run in this process: a kernel's bad access is a fault of the process.
  p.recovers_from_faults = 0;
  // Its streams and queues live in this plugin: only the core submits to them.
  p.exclusive_contexts = 1;
  host_device_uuid(ordinal, p.uuid);
  std::snprintf(p.driver_version, sizeof p.driver_version, "gpuhal host backend (plugin ABI %d.%d)", GPUHAL_ABI_MAJOR,
                GPUHAL_ABI_MINOR);
  return plugin::write_properties(p, out);
}

// ---- contexts ----------------------------------------------------------------

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  return guard("context_create", [&]() -> gpuhal_status_t {
    HostDevice *d = device_at(ordinal);
    if (!d) return fail(GPUHAL_ERROR_INVALID_VALUE, "context_create: no host device " + std::to_string(ordinal));
    *out = plugin_state().contexts.add(std::make_unique<HostContext>(d));
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  return guard("context_destroy", [&]() -> gpuhal_status_t {
    if (!plugin_state_exists()) return fail(GPUHAL_ERROR_INVALID_HANDLE, "context_destroy: plugin not initialised");
    forget_context_lookups();
    std::unique_ptr<HostContext> doomed = plugin_state().contexts.take(ctx);
    if (!doomed) return fail(GPUHAL_ERROR_INVALID_HANDLE, "context_destroy: invalid context handle");
    doomed.reset();  // outside the registry's lock: joins stream workers
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t context_synchronize(gpuhal_context_t ctx) {
  return in_context(ctx, "context_synchronize", [&](HostContext *c) -> gpuhal_status_t {
    if (on_worker_thread()) return would_deadlock("context_synchronize");
    if (gpuhal_status_t st = c->captures.refuse_context_sync("context_synchronize")) return st;
    c->synchronize();
    return kernel_failure(c);
  });
}

gpuhal_status_t memory_info(gpuhal_context_t ctx, uint64_t *free_bytes, uint64_t *total_bytes) {
  return in_context(ctx, "memory_info", [&](HostContext *c) -> gpuhal_status_t {
    HostDevice *d = c->device();
    const uint64_t used = d->used.load();
    *total_bytes = d->total_memory;
    *free_bytes = d->limit ? (used < d->limit ? d->limit - used : 0) : std::min(available_memory(), d->total_memory);
    return GPUHAL_SUCCESS;
  });
}

// ---- peer access: every host device addresses the same memory -----------------------

gpuhal_status_t device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *out) {
  if (!device_at(ordinal) || !device_at(peer))
    return fail(GPUHAL_ERROR_INVALID_VALUE,
                "device_can_access_peer: no host device " + std::to_string(device_at(ordinal) ? peer : ordinal));
  *out = ordinal != peer ? 1 : 0;
  return GPUHAL_SUCCESS;
}

gpuhal_status_t context_enable_peer_access(gpuhal_context_t ctx, gpuhal_context_t peer) {
  HostContext *c = find_context(ctx);
  HostContext *p = find_context(peer);
  if (!c || !p) return bad_context("context_enable_peer_access");
  if (c->device() == p->device())
    return fail(GPUHAL_ERROR_INVALID_VALUE, "context_enable_peer_access: both contexts are on the same device");
  return GPUHAL_SUCCESS;  // nothing to map: all host devices share one address space
}

// ---- StreamDirectory ----------------------------------------------------------

void StreamDirectory::add(const std::shared_ptr<StreamState> &s, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_[s.get()] = {s, device};
}

void StreamDirectory::remove(const StreamState *s) {
  std::lock_guard<std::mutex> lock(mu_);
  streams_.erase(s);
}

std::shared_ptr<StreamState> StreamDirectory::find(gpuhal_stream_t handle, const HostDevice *device) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = streams_.find(reinterpret_cast<const StreamState *>(handle));
  if (it == streams_.end() || it->second.second != device) return nullptr;
  return it->second.first.lock();
}

// ---- plugin state -------------------------------------------------------------

HostPlugin *g_plugin_state = nullptr;

void forget_parent_after_fork() {
  g_plugin_state = nullptr;  // abandoned: its contexts' threads are the parent's
  reset_device_pages_mutex_after_fork();
  reset_export_locks_after_fork();
  forget_private_cache_after_fork();
}

bool plugin_state_exists() {
  return g_plugin_state != nullptr;
}
void create_plugin_state() {
  g_plugin_state = new HostPlugin();
}
void destroy_plugin_state() {
  // Contexts first: their streams may still be running kernels on the pool.
  forget_context_lookups();
  g_plugin_state->contexts.take_all();
  delete g_plugin_state;
  g_plugin_state = nullptr;
}

__thread LastContextLookup t_last_context GPUHAL_HOST_FAST_TLS;
std::atomic<uint64_t> g_context_removals{0};

void forget_context_lookups() {
  g_context_removals.fetch_add(1, std::memory_order_acq_rel);
}

HostContext *find_context(gpuhal_context_t handle) {
  if (HostContext *c = find_context_cached(handle)) return c;
  const HostPlugin *st = g_plugin_state;
  if (!st) return nullptr;
  // Read before the lookup: a context that goes after it changes the count,
  // and the entry kept below is then never used.
  const uint64_t removals = g_context_removals.load(std::memory_order_acquire);
  HostContext *c = st->contexts.find(handle);
  if (c) t_last_context = LastContextLookup{handle, c, st, removals};
  return c;
}

}  // namespace gpuhal::host

#define GPUHAL_PLUGIN_NAMESPACE gpuhal::host
#define GPUHAL_PLUGIN_NAME "host"
#include "plugin_define.inc"

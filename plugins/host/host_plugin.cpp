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
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

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

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The counting plugin's table, lifecycle and its one exported symbol (see
// counting_plugin.hpp for what the plugin is).
#include "counting_plugin.hpp"

#include <string>

namespace counting {

thread_local std::string t_error;
gpuhal_log_fn g_log = nullptr;
void *g_log_user = nullptr;
std::atomic<uint64_t> g_calls{0};

gpuhal_status_t init(const gpuhal_init_args_t *args) {
  count();
  if (args && args->struct_size >= sizeof(gpuhal_init_args_t)) {
    g_log = args->log;
    g_log_user = args->log_user;
  }
  return GPUHAL_SUCCESS;
}
void shutdown() {
  if (g_log) {
    const std::string msg = "counting plugin: " + std::to_string(g_calls.load()) + " calls";
    g_log(g_log_user, GPUHAL_LOG_INFO, msg.c_str());
  }
}
const char *last_error() {
  return t_error.c_str();
}

namespace {

constexpr gpuhal_plugin_table_t make_table() {
  gpuhal_plugin_table_t t{};
  t.abi_version = GPUHAL_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "counting";
  t.init = init;
  t.shutdown = shutdown;
  t.last_error = last_error;
  t.device_count = device_count;
  t.device_properties = device_properties;
  t.context_create = context_create;
  t.context_destroy = context_destroy;
  t.context_synchronize = no_op_ctx;
  t.memory_info = memory_info;
  t.mem_alloc = mem_alloc;
  t.mem_free = mem_free;
  t.memcpy_sync = copy;
  t.memcpy_async = copy_async;
  t.memset_sync = set;
  t.memset_async = set_async;
  t.stream_create = stream_create;
  t.stream_destroy = stream_destroy;
  t.stream_synchronize = stream_op;
  t.stream_query = stream_op;
  t.stream_wait_event = stream_wait_event;
  t.stream_add_callback = add_callback;
  t.event_create = event_create;
  t.event_destroy = event_destroy;
  t.event_record = event_record;
  t.event_synchronize = event_op;
  t.event_query = event_op;
  t.event_elapsed_ms = elapsed;
  t.host_alloc = host_alloc;
  t.host_free = host_free;
  t.host_register = host_register;
  t.host_unregister = host_unregister;
  t.host_get_device_pointer = host_get_device_pointer;
  t.ipc_get_handle = ipc_get_handle;
  t.ipc_open = ipc_open;
  t.ipc_close = ipc_close;
  return t;  // stream_barrier, stream-ordered memory, peer access and kernels stay NULL: unsupported
}

constexpr gpuhal_plugin_table_t kTable = make_table();

// gpuhal takes an optional group only in full. The groups this plugin
// claims are checked against gpuhal's own list of entry points
// (gpuhal/plugin_entries.def, installed beside plugin.h) when it is built:
// built against a gpuhal whose list has grown, it stops here instead of
// being refused when loaded.
constexpr bool same(const char *a, const char *b) {
  while (*a && *a == *b) ++a, ++b;
  return *a == *b;
}
constexpr bool claimed(const char *group) {
  return same(group, "required") || same(group, "host_memory") || same(group, "ipc");
}
constexpr bool fills_what_it_claims(const gpuhal_plugin_table_t &t) {
  bool ok = true;
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) ok = ok && (!claimed(#group) || t.name != nullptr);
#include <gpuhal/plugin_entries.def>
#undef GPUHAL_PLUGIN_ENTRY
  return ok;
}
static_assert(fills_what_it_claims(kTable),
              "counting: an entry of a group this plugin claims is left NULL (see gpuhal/plugin_entries.def)");

}  // namespace
}  // namespace counting

extern "C" GPUHAL_PLUGIN_EXPORT gpuhal_status_t gpuhal_plugin_negotiate(uint32_t core_max_abi,
                                                                        const gpuhal_plugin_table_t **table) {
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *table = &counting::kTable;
  return GPUHAL_SUCCESS;
}

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

// Every entry of the table this plugin fills, with the function that fills
// it (the entries live in the files of their objects, so their addresses
// are not known here): the table and the build-time check below are both
// made from this one list. stream_barrier, stream-ordered memory, peer
// access and kernels stay NULL: unsupported.
#define COUNTING_ENTRIES(X)                                                                                    \
  X(init, init) X(shutdown, shutdown) X(last_error, last_error) X(device_count, device_count)                   \
  X(device_properties, device_properties) X(context_create, context_create) X(context_destroy, context_destroy) \
  X(context_synchronize, no_op_ctx) X(memory_info, memory_info) X(mem_alloc, mem_alloc) X(mem_free, mem_free)   \
  X(memcpy_sync, copy) X(memcpy_async, copy_async) X(memset_sync, set) X(memset_async, set_async)               \
  X(stream_create, stream_create) X(stream_destroy, stream_destroy) X(stream_synchronize, stream_op)             \
  X(stream_query, stream_op) X(stream_wait_event, stream_wait_event) X(stream_add_callback, add_callback)        \
  X(event_create, event_create) X(event_destroy, event_destroy) X(event_record, event_record)                   \
  X(event_synchronize, event_op) X(event_query, event_op) X(event_elapsed_ms, elapsed) X(host_alloc, host_alloc) \
  X(host_free, host_free) X(host_register, host_register) X(host_unregister, host_unregister)                   \
  X(host_get_device_pointer, host_get_device_pointer) X(ipc_get_handle, ipc_get_handle) X(ipc_open, ipc_open)   \
  X(ipc_close, ipc_close)

constexpr gpuhal_plugin_table_t make_table() {
  gpuhal_plugin_table_t t{};
  t.abi_version = GPUHAL_ABI_VERSION;
  t.struct_size = sizeof t;
  t.name = "counting";
#define COUNTING_FILL(entry, fn) t.entry = fn;
  COUNTING_ENTRIES(COUNTING_FILL)
#undef COUNTING_FILL
  return t;
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
constexpr bool fills(const char *entry) {
#define COUNTING_IS(name, fn) \
  if (same(entry, #name)) return true;
  COUNTING_ENTRIES(COUNTING_IS)
#undef COUNTING_IS
  return false;
}
constexpr bool fills_what_it_claims() {
  bool ok = true;
#define GPUHAL_PLUGIN_ENTRY(name, group, minor) ok = ok && (!claimed(#group) || fills(#name));
#include <gpuhal/plugin_entries.def>
#undef GPUHAL_PLUGIN_ENTRY
  return ok;
}
static_assert(fills_what_it_claims(),
              "counting: an entry of a group this plugin claims is left NULL (see gpuhal/plugin_entries.def)");

}  // namespace
}  // namespace counting

extern "C" GPUHAL_PLUGIN_EXPORT gpuhal_status_t gpuhal_plugin_negotiate(uint32_t core_max_abi,
                                                                        const gpuhal_plugin_table_t **table) {
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *table = &counting::kTable;
  return GPUHAL_SUCCESS;
}

// "counting": a minimal third-party gpuhal plugin. One synchronous CPU
// device: memory is malloc'd, every operation runs at once on the calling
// thread (so streams are trivially in order and events complete when
// recorded), and every entry point counts its calls. At shutdown the counts
// are logged at info level (GPUHAL_LOG=info).
//
// It claims only the required entries: stream_barrier and host memory are
// left NULL, which gpuhal reports as unsupported.
#include <gpuhal/plugin.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

namespace {

thread_local std::string t_error;
gpuhal_log_fn g_log = nullptr;
void *g_log_user = nullptr;
std::atomic<uint64_t> g_calls{0};

gpuhal_status_t fail(gpuhal_status_t s, const char *msg) {
  t_error = msg;
  return s;
}
void count() {
  g_calls.fetch_add(1, std::memory_order_relaxed);
}

struct Context {
  std::mutex mu;
  std::set<void *> allocations;
};
struct Event {
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

int dummy_stream;

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
gpuhal_status_t device_count(int32_t *n) {
  count();
  *n = 1;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  count();
  if (ordinal != 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: only device 0 exists");
  if (!out || out->struct_size < 8) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: bad properties struct");
  gpuhal_device_properties_t p{};
  std::snprintf(p.name, sizeof p.name, "counting CPU device");
  std::snprintf(p.vendor, sizeof p.vendor, "example");
  p.total_memory = 1ull << 30;
  p.warp_size = 1;
  p.max_threads_per_block = 1;
  p.multiprocessor_count = 1;
  const uint32_t n = out->struct_size < sizeof p ? out->struct_size : uint32_t(sizeof p);
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = n;
  std::memcpy(out, &p, n);  // never more than the caller's struct_size
  return GPUHAL_SUCCESS;
}
gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  count();
  if (ordinal != 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: only device 0 exists");
  *out = reinterpret_cast<gpuhal_context_t>(new Context);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  for (void *p : c->allocations) std::free(p);
  delete c;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t no_op_ctx(gpuhal_context_t) {
  count();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t memory_info(gpuhal_context_t, uint64_t *f, uint64_t *t) {
  count();
  *f = *t = 1ull << 30;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  count();
  void *p = std::malloc(size_t(bytes));
  if (!p) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: malloc failed");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->allocations.insert(p);
  *out = reinterpret_cast<uintptr_t>(p);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  if (!c->allocations.erase(reinterpret_cast<void *>(uintptr_t(ptr))))
    return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: mem_free of an unknown pointer");
  std::free(reinterpret_cast<void *>(uintptr_t(ptr)));
  return GPUHAL_SUCCESS;
}
gpuhal_status_t copy(gpuhal_context_t, uint32_t, gpuhal_deviceptr_t dst, gpuhal_deviceptr_t src, uint64_t bytes) {
  count();
  std::memmove(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)), size_t(bytes));
  return GPUHAL_SUCCESS;
}
gpuhal_status_t copy_async(gpuhal_context_t c, uint32_t k, gpuhal_deviceptr_t d, gpuhal_deviceptr_t s, uint64_t n,
                           gpuhal_stream_t) {
  return copy(c, k, d, s, n);
}
gpuhal_status_t set(gpuhal_context_t, gpuhal_deviceptr_t dst, uint8_t v, uint64_t bytes) {
  count();
  std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, size_t(bytes));
  return GPUHAL_SUCCESS;
}
gpuhal_status_t set_async(gpuhal_context_t c, gpuhal_deviceptr_t d, uint8_t v, uint64_t n, gpuhal_stream_t) {
  return set(c, d, v, n);
}
gpuhal_status_t stream_create(gpuhal_context_t, uint32_t, gpuhal_stream_t *out) {
  count();
  *out = reinterpret_cast<gpuhal_stream_t>(&dummy_stream);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t stream_op(gpuhal_context_t, gpuhal_stream_t) {
  count();
  return GPUHAL_SUCCESS;  // everything already ran: always idle
}
gpuhal_status_t stream_wait_event(gpuhal_context_t, gpuhal_stream_t, gpuhal_event_t) {
  count();
  return GPUHAL_SUCCESS;  // recorded work is already complete
}
gpuhal_status_t add_callback(gpuhal_context_t, gpuhal_stream_t, gpuhal_host_fn fn, void *user) {
  count();
  fn(user, GPUHAL_SUCCESS);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_create(gpuhal_context_t, uint32_t flags, gpuhal_event_t *out) {
  count();
  auto *e = new Event;
  e->timing = (flags & GPUHAL_EVENT_DISABLE_TIMING) == 0;
  *out = reinterpret_cast<gpuhal_event_t>(e);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_destroy(gpuhal_context_t, gpuhal_event_t e) {
  count();
  delete reinterpret_cast<Event *>(e);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_record(gpuhal_context_t, gpuhal_event_t e, gpuhal_stream_t) {
  count();
  auto *ev = reinterpret_cast<Event *>(e);
  ev->recorded = true;
  ev->when = std::chrono::steady_clock::now();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_op(gpuhal_context_t, gpuhal_event_t) {
  count();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t elapsed(gpuhal_context_t, gpuhal_event_t a, gpuhal_event_t b, float *ms) {
  count();
  auto *ea = reinterpret_cast<Event *>(a), *eb = reinterpret_cast<Event *>(b);
  if (!ea->timing || !eb->timing) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: event without timing");
  if (!ea->recorded || !eb->recorded) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: event never recorded");
  *ms = std::chrono::duration<float, std::milli>(eb->when - ea->when).count();
  return GPUHAL_SUCCESS;
}

gpuhal_plugin_table_t make_table() {
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
  t.stream_destroy = stream_op;
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
  return t;  // stream_barrier and host memory stay NULL: unsupported
}

const gpuhal_plugin_table_t kTable = make_table();

}  // namespace

extern "C" GPUHAL_PLUGIN_EXPORT gpuhal_status_t gpuhal_plugin_negotiate(uint32_t core_max_abi,
                                                                        const gpuhal_plugin_table_t **table) {
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *table = &kTable;
  return GPUHAL_SUCCESS;
}

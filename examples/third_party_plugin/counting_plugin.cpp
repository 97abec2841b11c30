// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// "counting": a small third-party gpuhal plugin. One synchronous CPU
// device: every operation runs at once on the calling thread (so streams
// are trivially in order and events complete when recorded), and every
// entry point counts its calls. At shutdown the counts are logged at info
// level (GPUHAL_LOG=info).
//
// Besides the required entries it claims two optional groups, to show how:
// host memory (pinned allocations and registrations; mapped ones have a
// device address, the same as the host's) and IPC (device memory lives in
// memfds, which another process of the same user opens through /proc).
// stream_barrier, stream-ordered memory, peer access and kernels stay NULL,
// which gpuhal reports as unsupported. gpuhal-conform checks all of it.
#include <gpuhal/plugin.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <random>
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

struct Event {
  bool timing = true;
  bool recorded = false;
  std::chrono::steady_clock::time_point when;
};

// Device memory: a memfd mapped shared, so that IPC can hand it to another
// process. The token in the memfd's name tells an opener that the
// descriptor number still names this allocation.
struct Allocation {
  uint64_t bytes = 0;
  int fd = -1;
  uint64_t token = 0;
};
struct HostRange {
  uint64_t bytes = 0;
  bool mapped = false;      // has a device address (GPUHAL_HOST_ALLOC_MAPPED)
  bool allocated = false;   // host_alloc (else host_register)
};
struct Context {
  std::mutex mu;  // guards the maps
  std::map<uintptr_t, Allocation> allocations;
  std::map<uintptr_t, uint64_t> opened;  // IPC mappings of other processes' memory
  std::map<uintptr_t, HostRange> host;   // pinned and registered host memory
  std::set<Event *> events;              // destroyed with the context if not before
  // Streams hold nothing (work runs at once), but each is a handle of its
  // own: plugin.h wants every live handle distinct.
  std::set<std::unique_ptr<char>> streams;
};

uint64_t page_round(uint64_t bytes) {
  const uint64_t page = uint64_t(sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}
std::string memfd_name(uint64_t token) {
  char name[64];
  std::snprintf(name, sizeof name, "gpuhal-counting-%016llx", static_cast<unsigned long long>(token));
  return name;
}
// The range of `m` that contains [p, p + n), or m.end().
template <class M>
typename M::iterator containing(M &m, uintptr_t p, uint64_t n, uint64_t (*size_of)(const typename M::mapped_type &)) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return m.end();
  --it;
  return p - it->first + n <= size_of(it->second) ? it : m.end();
}
uint64_t alloc_size(const Allocation &a) {
  return a.bytes;
}
uint64_t host_size(const HostRange &r) {
  return r.bytes;
}

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
  p.can_map_host_memory = 1;
  p.unified_addressing = 1;
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
  for (auto &kv : c->allocations) {
    munmap(reinterpret_cast<void *>(kv.first), size_t(page_round(kv.second.bytes)));
    close(kv.second.fd);
  }
  for (auto &kv : c->opened) munmap(reinterpret_cast<void *>(kv.first), size_t(page_round(kv.second)));
  for (auto &kv : c->host)
    if (kv.second.allocated) std::free(reinterpret_cast<void *>(kv.first));
  for (Event *e : c->events) delete e;  // "together with every ... event made in it"
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
  if (bytes == 0 || bytes > (uint64_t(1) << 30)) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: 1 GiB at most");
  static std::mt19937_64 random{std::random_device{}()};
  static std::mutex random_mu;
  Allocation a;
  a.bytes = bytes;
  {
    std::lock_guard<std::mutex> lock(random_mu);
    a.token = random();
  }
  a.fd = memfd_create(memfd_name(a.token).c_str(), MFD_CLOEXEC);
  if (a.fd < 0) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: memfd_create failed");
  void *p = MAP_FAILED;
  if (ftruncate(a.fd, off_t(page_round(bytes))) == 0)
    p = mmap(nullptr, size_t(page_round(bytes)), PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
  if (p == MAP_FAILED) {
    close(a.fd);
    return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: cannot map device memory");
  }
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->allocations[reinterpret_cast<uintptr_t>(p)] = a;
  *out = reinterpret_cast<uintptr_t>(p);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->allocations.find(uintptr_t(ptr));
  if (it == c->allocations.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: mem_free of an unknown pointer");
  munmap(reinterpret_cast<void *>(it->first), size_t(page_round(it->second.bytes)));
  close(it->second.fd);
  c->allocations.erase(it);
  return GPUHAL_SUCCESS;
}

// ---- host memory (optional group) ----
constexpr uint32_t kHostFlags =
    GPUHAL_HOST_ALLOC_PORTABLE | GPUHAL_HOST_ALLOC_MAPPED | GPUHAL_HOST_ALLOC_WRITE_COMBINED;
gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
  count();
  if (!out || bytes == 0 || (flags & ~kHostFlags)) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_alloc: bad arguments");
  void *p = std::aligned_alloc(4096, size_t(page_round(bytes)));
  if (!p) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: host_alloc: out of memory");
  const bool mapped = (flags & GPUHAL_HOST_ALLOC_MAPPED) != 0;  // host_alloc: keep the mapped flag
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->host[reinterpret_cast<uintptr_t>(p)] = HostRange{bytes, mapped, true};
  *out = p;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->host.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == c->host.end() || !it->second.allocated) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_free of an unknown pointer");
  std::free(ptr);
  c->host.erase(it);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
  count();
  if (!ptr || bytes == 0 || (flags & ~kHostFlags)) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_register: bad arguments");
  auto *c = reinterpret_cast<Context *>(ctx);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(c->mu);
  auto next = c->host.lower_bound(p);
  const bool overlaps_next = next != c->host.end() && next->first < p + bytes;
  const bool overlaps_previous = next != c->host.begin() && std::prev(next)->first + std::prev(next)->second.bytes > p;
  if (overlaps_next || overlaps_previous)
    return fail(GPUHAL_ERROR_ALREADY_REGISTERED, "counting: host_register: the range overlaps registered memory");
  c->host[p] = HostRange{bytes, (flags & GPUHAL_HOST_ALLOC_MAPPED) != 0, false};
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->host.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == c->host.end() || it->second.allocated) return fail(GPUHAL_ERROR_NOT_REGISTERED, "counting: host_unregister: not registered");
  c->host.erase(it);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out) {
  count();
  if (!host_ptr || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_get_device_pointer: null pointer");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = containing(c->host, reinterpret_cast<uintptr_t>(host_ptr), 1, host_size);
  if (it == c->host.end() || !it->second.mapped)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_get_device_pointer: not mapped host memory");
  *out = reinterpret_cast<uintptr_t>(host_ptr);  // one address space
  return GPUHAL_SUCCESS;
}

// ---- IPC (optional group) ----
struct IpcBytes {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t token;
  uint64_t bytes;
};
static_assert(sizeof(IpcBytes) <= GPUHAL_IPC_HANDLE_SIZE, "the handle must fit");
gpuhal_status_t ipc_get_handle(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                               gpuhal_deviceptr_t *base, uint64_t *bytes) {
  count();
  if (!out || !base || !bytes) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_get_handle: null output");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = containing(c->allocations, uintptr_t(ptr), 1, alloc_size);
  if (it == c->allocations.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_get_handle: not device memory");
  IpcBytes h{{'c', 'o', 'u', 'n', 't', 'i', 'n', 'g'}, int32_t(getpid()), it->second.fd, it->second.token,
             it->second.bytes};
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->bytes, &h, sizeof h);
  *base = it->first;  // the allocation's base: the core carries ptr - base
  *bytes = it->second.bytes;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t ipc_open(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                         uint64_t *bytes) {
  count();
  IpcBytes h;
  if (!handle || !out || !bytes) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_open: null argument");
  std::memcpy(&h, handle->bytes, sizeof h);
  if (std::memcmp(h.magic, "counting", 8) != 0 || h.bytes == 0)
    return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: not a handle of this plugin");
  // The exporter's descriptor, if it still names the same memfd (a freed
  // allocation's number may name something else by now).
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  char target[256] = {};
  const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0 || std::string(target, size_t(n)).find(memfd_name(h.token)) == std::string::npos)
    return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: the exported memory is gone (stale handle)");
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: cannot open the exporter's memory");
  void *p = mmap(nullptr, size_t(page_round(h.bytes)), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: ipc_open: cannot map the memory");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->opened[reinterpret_cast<uintptr_t>(p)] = h.bytes;
  *out = reinterpret_cast<uintptr_t>(p);
  *bytes = h.bytes;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t ipc_close(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->opened.find(uintptr_t(ptr));
  if (it == c->opened.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_close: not an opened mapping");
  munmap(reinterpret_cast<void *>(it->first), size_t(page_round(it->second)));
  c->opened.erase(it);
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
gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t, gpuhal_stream_t *out) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->streams.insert(std::make_unique<char>()).first;
  *out = reinterpret_cast<gpuhal_stream_t>(it->get());
  return GPUHAL_SUCCESS;
}
gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t s) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  for (auto it = c->streams.begin(); it != c->streams.end(); ++it)
    if (reinterpret_cast<gpuhal_stream_t>(it->get()) == s) {
      c->streams.erase(it);
      return GPUHAL_SUCCESS;
    }
  return fail(GPUHAL_ERROR_INVALID_HANDLE, "counting: unknown stream");
}
gpuhal_status_t stream_op(gpuhal_context_t, gpuhal_stream_t) {
  count();
  return GPUHAL_SUCCESS;  // everything already ran: always idle
}
gpuhal_status_t stream_wait_event(gpuhal_context_t, gpuhal_stream_t, gpuhal_event_t) {
  count();
  return GPUHAL_SUCCESS;  // stream_wait_event: recorded work is already complete
}
gpuhal_status_t add_callback(gpuhal_context_t, gpuhal_stream_t, gpuhal_host_fn fn, void *user) {
  count();
  fn(user, GPUHAL_SUCCESS);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_create(gpuhal_context_t ctx, uint32_t flags, gpuhal_event_t *out) {
  count();
  auto *e = new Event;
  e->timing = (flags & GPUHAL_EVENT_DISABLE_TIMING) == 0;
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->events.insert(e);
  *out = reinterpret_cast<gpuhal_event_t>(e);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t event_destroy(gpuhal_context_t ctx, gpuhal_event_t e) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  if (!c->events.erase(reinterpret_cast<Event *>(e))) return fail(GPUHAL_ERROR_INVALID_HANDLE, "counting: unknown event");
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

extern "C" GPUHAL_PLUGIN_EXPORT gpuhal_status_t gpuhal_plugin_negotiate(uint32_t core_max_abi,
                                                                        const gpuhal_plugin_table_t **table) {
  if (GPUHAL_VERSION_MAJOR(core_max_abi) != GPUHAL_ABI_MAJOR) return GPUHAL_ERROR_ABI_MISMATCH;
  *table = &kTable;
  return GPUHAL_SUCCESS;
}

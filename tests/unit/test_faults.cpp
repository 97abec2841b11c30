// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Fault injection through the fault layer (core/layers/fault_layer.hpp)
// over the host plugin (GPUHAL_FAULT=<entry>:<k>): a representative
// workload runs once per plugin entry with that entry's first call failing. Each failure must surface as a gpuhal::Error (thrown,
// or handed to the deallocation error handler for releases) naming the
// entry; afterwards the same context runs the workload cleanly and all
// device memory comes back (LSan checks host memory in CI).
#include <stdlib.h>

#include <functional>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

constexpr uint64_t kLimit = uint64_t(64) << 20;

// Host memory used by asynchronous work: owned by the caller, who waits for
// the context before dropping it, also when the workload threw half way
// (host memory must outlive the stream work that uses it).
struct Buffers {
  std::vector<float> v = std::vector<float>(1024);
  HostArray back;
};

// Touches every entry of the host plugin that a context's user can reach.
void workload(const Context &ctx, Buffers &buf) {
  std::vector<float> &v = buf.v;
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  (void)ctx.memory_info();
  DeviceArray a = to_device(ctx, HostView::of(v));
  DeviceArray b = device_array(ctx, {1024}, dtypes::float32);
  b.copy_from_device(a);
  b.memset(0);
  Stream s = ctx.create_stream();
  Event e0 = ctx.create_event(), e1 = ctx.create_event();
  e0.record(s);
  b.copy_from_host(HostView::of(v), s);
  b.memset(1, s);
  buf.back = a.copy_to_host(s);
  s.add_callback([] {});
  e1.record(s);
  Stream t = ctx.create_stream(StreamKind::NonBlocking);
  t.wait(e1);
  t.wait_for_all_prior_work();
  e1.synchronize();
  (void)e1.query();
  (void)s.query();
  (void)Event::elapsed_ms(e0, e1);
  t.synchronize();
  s.synchronize();
  if (buf.back.to_vector<float>() != v) throw std::runtime_error("workload: wrong data");
  {
    Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void twice(GPUHAL_GLOBAL float *x, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] *= 2.0f;
})");
    m.kernel("twice")({4}, {256}, s)(a, 1024u);
    HostArray twice = a.copy_to_host(s);
    s.synchronize();
    if (twice.to_vector<float>()[1023] != 2046.0f) throw std::runtime_error("workload: wrong kernel result");
  }
  { PinnedScope pin(ctx, {HostView::of(v)}); }
  HostArray pinned = pinned_array(ctx, {64});
  MappedArray mapped = mapped_array(ctx, {64});
  mapped.device.memset(0);
  { MappedArray combined = mapped_array(ctx, {64}, dtypes::float64, {}, 'C', false, true); }  // host_alloc, host_free
  const IpcArrayHandle h = get_ipc_handle(a);
  { IpcArray opened = open_ipc_array(ctx, IpcArrayHandle::deserialize(h.serialize())); }
  // Emptied first, so that the flush before mem_alloc's retry has nothing
  // of this workload's to run.
  ctx.flush_deallocations();
  { DeviceMemory m = ctx.allocate_async(256, s); }
  s.synchronize();
  ctx.synchronize();
}

// The host plugin under the fault layer, with extra options.
Runtime faulty_runtime(std::vector<std::pair<std::string, std::string>> options) {
  Config c;
  c.backend = "host";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.layers = {"fault"};
  for (auto &kv : options) c.set_option(kv.first, kv.second);
  return Runtime::load(c);
}

Context faulty_context(const std::string &spec) {
  return faulty_runtime({{"GPUHAL_HOST_MEMORY_LIMIT", "64M"},
                         {"GPUHAL_FAULT", spec},
                         {"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}})
      .device(0)
      .primary_context();
}

}  // namespace

TEST_CASE("fault injection: every host plugin entry fails in turn during a workload") {
  const char *const entries[] = {"context_synchronize", "memory_info",
                                 "mem_alloc",           "mem_free",
                                 "memcpy_sync",         "memcpy_async",
                                 "memset_sync",         "memset_async",
                                 "stream_create",       "stream_destroy",
                                 "stream_synchronize",  "stream_query",
                                 "stream_wait_event",   "stream_add_callback",
                                 "event_create",        "event_destroy",
                                 "event_record",        "event_synchronize",
                                 "event_query",         "event_elapsed_ms",
                                 "stream_barrier",      "host_alloc",
                                 "host_free",           "host_register",
                                 "host_unregister",     "host_get_device_pointer",
                                 "ipc_get_handle",      "ipc_open",
                                 "ipc_close",           "mem_alloc_async",
                                 "mem_free_async",      "lower_builtin",
                                 "module_compile",      "module_load",
                                 "module_get_kernel",   "launch",
                                 "module_unload"};
  int injected = 0;
  for (const char *entry : entries) {
    INFO("entry " << entry);
    // An out-of-memory from mem_alloc is retried once after a flush
    // (Numba's rule): both attempts fail, so the failure reaches the caller.
    const std::string spec = std::string(entry) + ":1" + (std::string(entry) == "mem_alloc" ? ",mem_alloc:2" : "");
    Context ctx = faulty_context(spec);
    std::vector<std::string> released;  // failures of deferred releases
    ctx.set_deallocation_error_handler([&](const Error &e) { released.push_back(e.what()); });
    std::string thrown;
    Buffers buf;
    try {
      workload(ctx, buf);
      ctx.flush_deallocations();
    } catch (const Error &e) {
      thrown = e.what();
    }
    ctx.synchronize();  // the buffers may be dropped now
    ctx.flush_deallocations();
    const std::string seen = thrown.empty() ? (released.empty() ? "" : released.front()) : thrown;
    CHECK_THAT(seen, test::contains(std::string(entry) + ": fault injected by GPUHAL_FAULT"));
    if (seen.find(entry) != std::string::npos) ++injected;
    // The context is still usable, and once everything is released the
    // device memory is all back (what a failed release kept is freed by a
    // reset, which must also work).
    CHECK_NOTHROW(workload(ctx, buf));
    ctx.synchronize();
    ctx.flush_deallocations();
    ctx.reset();
    CHECK(ctx.memory_info().free == kLimit);
  }
  CHECK(injected == int(std::size(entries)));
  WARN(injected << " host plugin entries failed in turn");
}

TEST_CASE("fault injection: device, context and peer entries of the host plugin") {
  for (const char *entry : {"device_count", "device_properties", "context_create"}) {
    INFO("entry " << entry);
    std::string seen;
    try {
      faulty_context(std::string(entry) + ":1");
    } catch (const Error &e) {
      seen = e.what();
    }
    CHECK_THAT(seen, test::contains(std::string(entry) + ": fault injected by GPUHAL_FAULT"));
  }
  Runtime rt =
      faulty_runtime({{"GPUHAL_HOST_DEVICES", "2"}, {"GPUHAL_FAULT", "device_can_access_peer:1,context_enable_peer_access:1"}});
  REQUIRE_GPUHAL_ERROR(rt.device(0).can_access_peer(rt.device(1)), Status::ERROR_UNKNOWN,
                       "device_can_access_peer: fault injected");
  CHECK(rt.device(0).can_access_peer(rt.device(1)));
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  REQUIRE_GPUHAL_ERROR(c0.enable_peer_access(c1), Status::ERROR_UNKNOWN, "context_enable_peer_access: fault injected");
  CHECK_NOTHROW(c0.enable_peer_access(c1));
}

TEST_CASE("fault injection: a bad GPUHAL_FAULT refuses the plugin's load, and a status can be named") {
  REQUIRE_GPUHAL_ERROR(faulty_context("mem_alloc"), Status::ERROR_INVALID_CONFIG, "expected <entry>:<k>");
  REQUIRE_GPUHAL_ERROR(faulty_context("mem_alloc:0"), Status::ERROR_INVALID_CONFIG, "k >= 1");
  REQUIRE_GPUHAL_ERROR(faulty_context("mem_aloc:1"), Status::ERROR_INVALID_CONFIG,
                       "'mem_aloc' is not an entry of the plugin table");
  // A later call can be aimed at: the third allocation fails (with a status
  // named by its number, status.def; an injected out-of-memory would be
  // retried by the core after a flush, and the retry would succeed).
  Context ctx = faulty_context("mem_alloc:3:" + std::to_string(int(Status::ERROR_INVALID_VALUE)));
  DeviceArray a = device_array(ctx, {4}), b = device_array(ctx, {4});
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {4}), Status::ERROR_INVALID_VALUE, "mem_alloc: fault injected");
  CHECK_NOTHROW(device_array(ctx, {4}));
  // The default status is ERROR_OUT_OF_MEMORY: the core flushes and retries once.
  Context oom = faulty_context("mem_alloc:1");
  CHECK(device_array(oom, {4}).size() == 4);
  // A status named by its number (status.def).
  Context named = faulty_context("memset_sync:1:" + std::to_string(int(Status::ERROR_INVALID_VALUE)));
  REQUIRE_GPUHAL_ERROR(device_array(named, {4}).memset(0), Status::ERROR_INVALID_VALUE, "memset_sync: fault injected");
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The layers (core/layers/, docs/layers.md), white-box: a LayerChain over a
// real plugin's table (host, cuda over the fake driver, hsa over the fake
// runtime), called the way the core calls it, so that every rule family can
// be broken on purpose and its exact report checked. The public-API side
// (GPUHAL_LAYERS through Runtime::load, the conformance suite through every
// layer, a trace file's schema) is in tests/CMakeLists.txt's layers.* tests.
#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <sstream>

#include "layers/layer_chain.hpp"
#include "opened_plugin.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using gpuhal::detail::Logger;
using gpuhal::detail::layers::LayerChain;

namespace {

}  // namespace

namespace test {
// What the layers under test logged (layer_log_shim.cpp).
extern std::mutex g_layer_log_mu;
extern std::vector<std::string> g_layer_log;
}  // namespace test

namespace {

// Every line the layers log while it lives.
struct LogCapture {
  LogCapture() {
    std::lock_guard<std::mutex> lock(test::g_layer_log_mu);
    test::g_layer_log.clear();
  }
  std::string all() {
    std::lock_guard<std::mutex> lock(test::g_layer_log_mu);
    std::string s;
    for (auto &l : test::g_layer_log) s += l + "\n";
    return s;
  }
};

// One plugin opened by hand, its table wrapped by the layers `names`, and
// initialised with `options`.
struct Chained {
  void *library = nullptr;
  const gpuhal_plugin_table_t *plugin = nullptr;
  std::unique_ptr<LayerChain> chain;
  const gpuhal_plugin_table_t *t = nullptr;
  bool shut = false;

  Chained(const std::string &path, const std::string &backend, std::vector<std::string> names,
          std::vector<std::pair<std::string, std::string>> options = {}, bool leak_fail = false,
          const std::string &trace_file = "") {
    plugin = test::negotiated_table(path, &library);
    Config c;
    c.layers = std::move(names);
    c.leak_check_fail = leak_fail;
    c.trace_file = trace_file;
    for (auto &kv : options) c.set_option(kv.first, kv.second);
    chain = LayerChain::create(*plugin, backend, c, Logger(LogLevel::Warn));
    t = &chain->table();
    std::vector<gpuhal_option_t> opts;
    for (auto &kv : c.plugin_options) opts.push_back({kv.first.c_str(), kv.second.c_str()});
    gpuhal_init_args_t args{};
    args.abi_version = GPUHAL_ABI_VERSION;
    args.struct_size = sizeof args;
    args.options = opts.data();
    args.option_count = uint32_t(opts.size());
    args.log_level = GPUHAL_LOG_WARN;
    REQUIRE(t->init(&args) == GPUHAL_SUCCESS);
  }
  ~Chained() {
    if (!shut) t->shutdown();
    chain.reset();
    dlclose(library);
  }
  gpuhal_context_t context(int32_t ordinal = 0) {
    gpuhal_context_t ctx = nullptr;
    REQUIRE(t->context_create(ordinal, &ctx) == GPUHAL_SUCCESS);
    return ctx;
  }
  // The status of a call, and the message it left.
  template <class F>
  std::pair<gpuhal_status_t, std::string> refused(F call) {
    const gpuhal_status_t st = call();
    return {st, st == GPUHAL_SUCCESS ? "" : t->last_error()};
  }
};

std::string host_plugin() { return GPUHAL_TEST_LIB_DIR "/libgpuhal-host.so"; }

std::string hex(const void *p) {
  std::ostringstream s;
  s << p;
  return s.str();
}
std::string hex(uint64_t v) { return hex(reinterpret_cast<const void *>(static_cast<uintptr_t>(v))); }

}  // namespace

TEST_CASE("validation layer: values, sizes, flags, kinds and output pointers are refused with the rule", "[layers]") {
  LogCapture log;
  Chained p(host_plugin(), "host", {"validation"});
  gpuhal_context_t ctx = p.context();
  gpuhal_deviceptr_t d = 0;
  auto [st, msg] = p.refused([&] { return p.t->mem_alloc(ctx, 0, &d); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(msg == "validation: mem_alloc: bytes = 0: must not be 0");
  CHECK_THAT(log.all(), test::contains("validation: mem_alloc: bytes = 0: must not be 0"));
  std::tie(st, msg) = p.refused([&] { return p.t->memory_info(ctx, nullptr, nullptr); });
  CHECK(msg == "validation: memory_info: free_bytes = NULL: an output pointer must not be NULL");
  gpuhal_stream_t s = nullptr;
  std::tie(st, msg) = p.refused([&] { return p.t->stream_create(ctx, 4, &s); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(msg == "validation: stream_create: flags = 4: unknown flag bits 0x4 (known: 0x1)");
  REQUIRE(p.t->mem_alloc(ctx, 4096, &d) == GPUHAL_SUCCESS);
  std::vector<char> host(4096);
  std::tie(st, msg) = p.refused([&] { return p.t->memcpy_sync(ctx, 7, d, gpuhal_deviceptr_t(uintptr_t(host.data())), 16); });
  CHECK(msg == "validation: memcpy_sync: kind = 7: not a GPUHAL_COPY_* kind (1, 2 or 3)");
  std::tie(st, msg) = p.refused([&] { return p.t->mem_advise(ctx, d, 16, 9, 0); });
  CHECK(msg == "validation: mem_advise: advice = 9: must be in [1, 6]");
  std::tie(st, msg) = p.refused([&] { return p.t->vm_reserve(ctx, 1 << 21, 3, &d); });
  CHECK(msg == "validation: vm_reserve: alignment = 3: must be 0 or a power of two");
  std::tie(st, msg) = p.refused([&] { return p.t->device_properties(7, nullptr); });
  CHECK(msg == "validation: device_properties: ordinal = 7: a device ordinal must be in [0, 1)");
  // The plugin never saw the refused calls: the context is as it was.
  uint64_t free_bytes = 0, total = 0;
  CHECK(p.t->memory_info(ctx, &free_bytes, &total) == GPUHAL_SUCCESS);
  CHECK(p.t->mem_free(ctx, d) == GPUHAL_SUCCESS);
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
  CHECK(p.chain != nullptr);
}

TEST_CASE("validation layer: ranges inside allocations, double frees and interior pointers", "[layers]") {
  Chained p(host_plugin(), "host", {"validation"});
  gpuhal_context_t ctx = p.context();
  gpuhal_deviceptr_t d = 0;
  REQUIRE(p.t->mem_alloc(ctx, 4096, &d) == GPUHAL_SUCCESS);
  auto [st, msg] = p.refused([&] { return p.t->memset_sync(ctx, d + 8, 0, 4096); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(msg == "validation: memset_sync: dst, bytes: [" + hex(d + 8) + ", +4096) runs 8 bytes past the allocation [" +
                   hex(d) + ", +4096)");
  std::vector<char> host(8192);
  const auto h = gpuhal_deviceptr_t(uintptr_t(host.data()));
  std::tie(st, msg) = p.refused([&] { return p.t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, h, d, 4097); });
  CHECK_THAT(msg, test::contains("memcpy_sync: src, bytes: [" + hex(d) + ", +4097) runs 1 bytes past"));
  // The host side of a copy is not the layer's to know: let through.
  CHECK(p.t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, h, d, 4096) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->mem_free(ctx, d + 16); });
  CHECK(msg == "validation: mem_free: ptr = " + hex(d + 16) + ": inside the allocation at " + hex(d) + ", not its base");
  CHECK(p.t->mem_free(ctx, d) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->mem_free(ctx, d); });
  CHECK(msg == "validation: mem_free: ptr = " + hex(d) + ": freed already (a double free)");
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}

TEST_CASE("validation layer: handle lifetimes, another context's handles, callbacks", "[layers]") {
  Chained p(host_plugin(), "host", {"validation"}, {{"GPUHAL_HOST_DEVICES", "2"}});
  gpuhal_context_t c0 = p.context(0), c1 = p.context(1);
  gpuhal_stream_t s = nullptr, other = nullptr;
  gpuhal_event_t e = nullptr;
  REQUIRE(p.t->stream_create(c0, 0, &s) == GPUHAL_SUCCESS);
  REQUIRE(p.t->stream_create(c1, 0, &other) == GPUHAL_SUCCESS);
  REQUIRE(p.t->event_create(c0, 0, &e) == GPUHAL_SUCCESS);
  // A stream of another context.
  auto [st, msg] = p.refused([&] { return p.t->stream_synchronize(c0, other); });
  CHECK(st == GPUHAL_ERROR_INVALID_HANDLE);
  CHECK(msg == "validation: stream_synchronize: stream = " + hex(other) + ": a stream of another context (" + hex(c1) +
                   ")");
  // Use after destroy: a stream, an event recorded on a destroyed stream.
  REQUIRE(p.t->stream_destroy(c0, s) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->stream_query(c0, s); });
  CHECK(msg == "validation: stream_query: stream = " + hex(s) + ": used after stream_destroy");
  std::tie(st, msg) = p.refused([&] { return p.t->event_record(c0, e, s); });
  CHECK(msg == "validation: event_record: stream = " + hex(s) + ": used after stream_destroy");
  std::tie(st, msg) = p.refused([&] { return p.t->stream_destroy(c0, GPUHAL_STREAM_LEGACY); });
  CHECK(msg == "validation: stream_destroy: stream = 0x1: a default stream is not made by stream_create and is never "
               "destroyed");
  REQUIRE(p.t->event_destroy(c0, e) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->event_query(c0, e); });
  CHECK(msg == "validation: event_query: event = " + hex(e) + ": used after event_destroy");
  // A context that is not one.
  int fake = 0;
  auto bogus = reinterpret_cast<gpuhal_context_t>(&fake);
  std::tie(st, msg) = p.refused([&] { return p.t->context_synchronize(bogus); });
  CHECK(msg == "validation: context_synchronize: ctx = " + hex(bogus) + ": not a live context of this plugin");
  // Inside a stream callback the waiting entries are refused.
  struct Seen {
    const gpuhal_plugin_table_t *t;
    gpuhal_context_t ctx;
    gpuhal_status_t status = GPUHAL_SUCCESS;
    std::string message;
  } seen{p.t, c0, GPUHAL_SUCCESS, ""};
  REQUIRE(p.t->stream_add_callback(
              c0, nullptr,
              [](void *u, gpuhal_status_t) {
                auto *x = static_cast<Seen *>(u);
                x->status = x->t->context_synchronize(x->ctx);
                x->message = x->t->last_error();
              },
              &seen) == GPUHAL_SUCCESS);
  REQUIRE(p.t->context_synchronize(c0) == GPUHAL_SUCCESS);
  CHECK(seen.status == GPUHAL_ERROR_NOT_PERMITTED);
  CHECK(seen.message ==
        "validation: context_synchronize: called inside a stream callback: it waits for work, and the callback's "
        "stream cannot go on until the callback returns");
  // Outside the callback the same call goes through.
  CHECK(p.t->context_synchronize(c0) == GPUHAL_SUCCESS);
  CHECK(p.t->stream_destroy(c1, other) == GPUHAL_SUCCESS);
  CHECK(p.t->context_destroy(c0) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->memory_info(c0, nullptr, nullptr); });
  CHECK(msg == "validation: memory_info: ctx = " + hex(c0) + ": used after context_destroy");
  CHECK(p.t->context_destroy(c1) == GPUHAL_SUCCESS);
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("validation layer over the fake CUDA driver: grid and block against the device, kernel lifetimes",
          "[layers][cuda]") {
  Chained p(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", "cuda", {"validation"},
            {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  gpuhal_context_t ctx = p.context();
  const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{\n  ret;\n}\n";
  gpuhal_module_t m = nullptr;
  REQUIRE(p.t->module_load(ctx, ptx, sizeof ptx, GPUHAL_IMAGE_PTX, &m) == GPUHAL_SUCCESS);
  gpuhal_kernel_t k = nullptr;
  REQUIRE(p.t->module_get_kernel(ctx, m, "k", &k) == GPUHAL_SUCCESS);
  gpuhal_launch_config_t cfg{GPUHAL_ABI_VERSION, sizeof cfg, {1, 1, 1}, {2048, 1, 1}, 0, 0};
  auto [st, msg] = p.refused([&] { return p.t->launch(ctx, k, &cfg, nullptr, 0, nullptr); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(msg == "validation: launch: config = " + hex(&cfg) +
                   ": block of 2048 work-items, more than the device's max_threads_per_block 1024");
  cfg.block[0] = 1;
  cfg.grid[1] = 0;
  std::tie(st, msg) = p.refused([&] { return p.t->launch(ctx, k, &cfg, nullptr, 0, nullptr); });
  CHECK(msg == "validation: launch: config = " + hex(&cfg) + ": grid.y is 0 (every dimension is at least 1)");
  cfg.grid[1] = 1;
  CHECK(p.t->launch(ctx, k, &cfg, nullptr, 0, nullptr) == GPUHAL_SUCCESS);
  CHECK(p.t->context_synchronize(ctx) == GPUHAL_SUCCESS);
  REQUIRE(p.t->module_unload(ctx, m) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->launch(ctx, k, &cfg, nullptr, 0, nullptr); });
  CHECK(msg == "validation: launch: kernel = " + hex(k) + ": used after module_unload of its module");
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}
#endif

#ifdef GPUHAL_TEST_FAKE_CUDA
TEST_CASE("validation layer over the fake CUDA driver: memory pools, their memory and their lifetimes",
          "[layers][cuda]") {
  Chained p(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", "cuda", {"validation"},
            {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  gpuhal_context_t ctx = p.context();
  gpuhal_mem_pool_t pool = nullptr;
  auto [st, msg] = p.refused([&] { return p.t->mem_pool_create(ctx, 1, &pool); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK_THAT(msg, test::contains("validation: mem_pool_create: flags = 1: unknown flag bits 0x1"));
  REQUIRE(p.t->mem_pool_create(ctx, 0, &pool) == GPUHAL_SUCCESS);
  uint64_t v = 99;
  REQUIRE(p.t->mem_pool_get_attribute(ctx, pool, GPUHAL_MEM_POOL_RELEASE_THRESHOLD, &v) == GPUHAL_SUCCESS);
  CHECK(v == 0);  // plugin.h: a new pool releases at the next synchronisation
  std::tie(st, msg) = p.refused([&] { return p.t->mem_pool_get_attribute(ctx, pool, 9, &v); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK_THAT(msg, test::contains("mem_pool_get_attribute: attribute = 9"));
  // The plugin's own rules: the current amounts are read-only, a watermark only resets to 0.
  std::tie(st, msg) = p.refused([&] { return p.t->mem_pool_set_attribute(ctx, pool, GPUHAL_MEM_POOL_USED_HIGH, 5); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK_THAT(msg, test::contains("can only be reset to 0"));
  std::tie(st, msg) =
      p.refused([&] { return p.t->mem_pool_set_attribute(ctx, pool, GPUHAL_MEM_POOL_RESERVED_CURRENT, 0); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK_THAT(msg, test::contains("read-only"));
  gpuhal_deviceptr_t d = 0;
  REQUIRE(p.t->mem_pool_alloc_async(ctx, pool, 4096, nullptr, &d) == GPUHAL_SUCCESS);
  // The layer knows the pool's allocation and its size.
  std::tie(st, msg) = p.refused([&] { return p.t->memset_async(ctx, d + 4000, 0, 200, nullptr); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);
  CHECK_THAT(msg, test::contains("memset_async"));
  CHECK(p.t->memset_async(ctx, d, 0, 4096, nullptr) == GPUHAL_SUCCESS);
  CHECK(p.t->mem_free_async(ctx, d, nullptr) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->mem_free_async(ctx, d, nullptr); });
  CHECK(st == GPUHAL_ERROR_INVALID_VALUE);  // freed twice
  REQUIRE(p.t->mem_pool_destroy(ctx, pool) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->mem_pool_trim(ctx, pool, 0); });
  CHECK(st == GPUHAL_ERROR_INVALID_HANDLE);
  CHECK_THAT(msg, test::contains("used after mem_pool_destroy"));
  CHECK(p.t->context_synchronize(ctx) == GPUHAL_SUCCESS);
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}
#endif

#if GPUHAL_TEST_HAVE_HSA_PLUGIN
TEST_CASE("validation layer over the fake HSA runtime: events, barriers and double frees", "[layers][hsa]") {
  Chained p(GPUHAL_TEST_LIB_DIR "/libgpuhal-hsa.so", "hsa", {"validation"},
            {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
  gpuhal_context_t ctx = p.context();
  gpuhal_event_t e = nullptr;
  REQUIRE(p.t->event_create(ctx, 0, &e) == GPUHAL_SUCCESS);
  gpuhal_event_t list[2] = {e, nullptr};
  auto [st, msg] = p.refused([&] { return p.t->stream_barrier(ctx, nullptr, list, 2, 0); });
  CHECK(st == GPUHAL_ERROR_INVALID_HANDLE);
  CHECK(msg == "validation: stream_barrier: events = " + hex(list) + ": event 1 is NULL");
  std::tie(st, msg) = p.refused([&] { return p.t->stream_barrier(ctx, nullptr, list, 1, 2); });
  CHECK(msg == "validation: stream_barrier: flags = 2: unknown flag bits 0x2 (known: 0x1)");
  CHECK(p.t->stream_barrier(ctx, nullptr, list, 1, 0) == GPUHAL_SUCCESS);
  gpuhal_deviceptr_t d = 0;
  REQUIRE(p.t->mem_alloc(ctx, 256, &d) == GPUHAL_SUCCESS);
  REQUIRE(p.t->mem_free(ctx, d) == GPUHAL_SUCCESS);
  std::tie(st, msg) = p.refused([&] { return p.t->mem_free(ctx, d); });
  CHECK(msg == "validation: mem_free: ptr = " + hex(d) + ": freed already (a double free)");
  CHECK(p.t->event_destroy(ctx, e) == GPUHAL_SUCCESS);
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}
#endif

TEST_CASE("validation layer: a plugin's own wrong answers are reported", "[layers]") {
  LogCapture log;
  // The fake plugin that answers context_create with success and NULL.
  Chained p(test::fake("nullcontext"), "fake", {"validation"});
  gpuhal_context_t ctx = reinterpret_cast<gpuhal_context_t>(1);
  CHECK(p.t->context_create(0, &ctx) == GPUHAL_SUCCESS);
  CHECK(ctx == nullptr);
  CHECK_THAT(log.all(), test::contains("validation: context_create: the plugin returned GPUHAL_SUCCESS with a NULL context"));
}

namespace {
void leak_check_over(const std::string &path, const std::string &backend,
                     std::vector<std::pair<std::string, std::string>> options) {
  LogCapture log;
  {
    Chained p(path, backend, {"trace", "leak"}, options);
    gpuhal_context_t ctx = p.context();
    gpuhal_deviceptr_t d = 0;
    gpuhal_stream_t s = nullptr;
    REQUIRE(p.t->mem_alloc(ctx, 4096, &d) == GPUHAL_SUCCESS);
    REQUIRE(p.t->stream_create(ctx, 0, &s) == GPUHAL_SUCCESS);
    gpuhal_deviceptr_t freed = 0;
    REQUIRE(p.t->mem_alloc(ctx, 64, &freed) == GPUHAL_SUCCESS);
    REQUIRE(p.t->mem_free(ctx, freed) == GPUHAL_SUCCESS);
    REQUIRE(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
    const std::string all = log.all();
    CHECK_THAT(all, test::contains("leak check (" + backend + "): 2 object(s) still alive when context " + hex(ctx) +
                                   " was destroyed (context_destroy frees them):"));
    CHECK_THAT(all, test::contains("  device memory " + hex(d) + " (4096 bytes), made by traced call #"));
    CHECK_THAT(all, test::contains("  stream " + hex(s) + ", made by traced call #"));
    CHECK(all.find(hex(freed) + " (64 bytes)") == std::string::npos);
    // A context never destroyed is a leak at shutdown, with what it holds.
    gpuhal_context_t kept = p.context();
    gpuhal_event_t e = nullptr;
    REQUIRE(p.t->event_create(kept, 0, &e) == GPUHAL_SUCCESS);
    p.t->shutdown();
    p.shut = true;
    const std::string after = log.all();
    CHECK_THAT(after, test::contains("leak check (" + backend +
                                     "): 2 object(s) still alive at the plugin's shutdown (never released, their "
                                     "contexts never destroyed):"));
    CHECK_THAT(after, test::contains("  context " + hex(kept)));
    CHECK_THAT(after, test::contains("  event " + hex(e)));
  }
}
}  // namespace

TEST_CASE("leak layer: objects alive at context_destroy and at shutdown, named with the call that made them",
          "[layers]") {
  SECTION("host") { leak_check_over(host_plugin(), "host", {}); }
#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
  SECTION("cuda over the fake driver") {
    leak_check_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", "cuda", {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  }
#endif
#if GPUHAL_TEST_HAVE_HSA_PLUGIN
  SECTION("hsa over the fake runtime") {
    leak_check_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-hsa.so", "hsa", {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
  }
#endif
}

// GPUHAL_LEAK_CHECK=fail's exit status: tests/helpers/layer_leak_program.cpp
// (layers.leak_check_fail_* in tests/CMakeLists.txt), a process of its own.

TEST_CASE("trace layer: every call with its arguments, status and duration in a trace-event file", "[layers]") {
  const std::string path = std::string(GPUHAL_TEST_FAKES_DIR) + "/unit-trace-" + std::to_string(getpid()) + ".json";
  {
    Chained p(host_plugin(), "host", {"trace", "validation"}, {}, false, path);
    const gpuhal_plugin_table_t *t = p.t;
    gpuhal_context_t ctx = nullptr;
    REQUIRE(t->context_create(0, &ctx) == GPUHAL_SUCCESS);
    gpuhal_stream_t s = nullptr;
    REQUIRE(t->stream_create(ctx, 0, &s) == GPUHAL_SUCCESS);
    gpuhal_deviceptr_t d = 0;
    CHECK(t->mem_alloc(ctx, 0, &d) == GPUHAL_ERROR_INVALID_VALUE);  // refused by validation, inside the trace
    REQUIRE(t->mem_alloc(ctx, 256, &d) == GPUHAL_SUCCESS);
    REQUIRE(t->memset_async(ctx, d, 7, 256, s) == GPUHAL_SUCCESS);
    REQUIRE(t->stream_synchronize(ctx, s) == GPUHAL_SUCCESS);
    REQUIRE(t->mem_free(ctx, d) == GPUHAL_SUCCESS);
    REQUIRE(t->stream_destroy(ctx, s) == GPUHAL_SUCCESS);
    REQUIRE(t->context_destroy(ctx) == GPUHAL_SUCCESS);
    t->shutdown();
    p.shut = true;
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    const std::string json = text.str();
    CHECK(json.rfind("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", 0) == 0);
    CHECK(json.size() > 4);
    CHECK(json.substr(json.size() - 4) == "\n]}\n");
    CHECK_THAT(json, test::contains("\"name\":\"mem_alloc\",\"cat\":\"host\",\"ph\":\"X\""));
    CHECK_THAT(json, test::contains("\"bytes\":\"0\",\"out\":"));
    CHECK_THAT(json, test::contains("\"status\":\"ERROR_INVALID_VALUE\",\"message\":\"validation: mem_alloc: bytes = 0: must not be 0\""));
    CHECK_THAT(json, test::contains("\"name\":\"memset_async\""));
    CHECK_THAT(json, test::contains("\"args\":{\"name\":\"stream " + hex(s) + " (host)\"}"));
    std::remove(path.c_str());
  }
}

namespace {
// The trace layer over `backend`, with the range library the fakes put on
// the loader's path: every call is one range, all closed again.
void ranges_over(const std::string &path, const std::string &backend, const char *library,
                 std::vector<std::pair<std::string, std::string>> options) {
  Chained p(path, backend, {"trace"}, options);
  void *ranges = dlopen(library, RTLD_NOW | RTLD_NOLOAD);
  if (!ranges) {
    WARN("skipped: " << library << " is not on the loader's path (layers.vendor_ranges sets it)");
    return;
  }
  auto pushed = reinterpret_cast<int (*)()>(dlsym(ranges, "fake_ranges_pushed"));
  auto depth = reinterpret_cast<int (*)()>(dlsym(ranges, "fake_ranges_depth"));
  auto last = reinterpret_cast<const char *(*)()>(dlsym(ranges, "fake_ranges_last"));
  REQUIRE((pushed && depth && last));
  const int before = pushed();  // init's
  gpuhal_context_t ctx = p.context();
  gpuhal_deviceptr_t d = 0;
  REQUIRE(p.t->mem_alloc(ctx, 256, &d) == GPUHAL_SUCCESS);
  REQUIRE(p.t->mem_free(ctx, d) == GPUHAL_SUCCESS);
  REQUIRE(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
  CHECK(pushed() == before + 4);
  CHECK(depth() == 0);
  CHECK(std::string(last()) == "gpuhal:context_destroy");
  dlclose(ranges);
}
}  // namespace

TEST_CASE("trace layer: each call is an NVTX range on cuda and a roctx range on hsa", "[.ranges]") {
#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
  ranges_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", "cuda", "libnvToolsExt.so.1",
              {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
#endif
#if GPUHAL_TEST_HAVE_HSA_PLUGIN
  ranges_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-hsa.so", "hsa", "libroctx64.so",
              {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
#endif
}

namespace {
// A plugin's own table (no layer), initialised with `options`.
struct Bare {
  void *library;
  const gpuhal_plugin_table_t *t = nullptr;
  Bare(const std::string &path, std::vector<std::pair<std::string, std::string>> options) {
    t = test::negotiated_table(path, &library);
    std::vector<gpuhal_option_t> opts;
    for (auto &kv : options) opts.push_back({kv.first.c_str(), kv.second.c_str()});
    gpuhal_init_args_t args{GPUHAL_ABI_VERSION, sizeof args, opts.data(), uint32_t(opts.size()), GPUHAL_LOG_WARN,
                            nullptr, nullptr};
    REQUIRE(t->init(&args) == GPUHAL_SUCCESS);
  }
  ~Bare() {
    t->shutdown();
    dlclose(library);
  }
};

void kit_rules_over(const std::string &path, std::vector<std::pair<std::string, std::string>> options) {
  Bare p(path, options);
  gpuhal_context_t ctx = nullptr;
  REQUIRE(p.t->context_create(0, &ctx) == GPUHAL_SUCCESS);
  CHECK(p.t->mem_alloc(ctx, 64, nullptr) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(std::string(p.t->last_error()) == "mem_alloc: out = NULL: an output pointer must not be NULL");
  gpuhal_stream_t s = nullptr;
  CHECK(p.t->stream_create(ctx, 4, &s) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(std::string(p.t->last_error()) == "stream_create: flags = 4: unknown flag bits 0x4 (known: 0x1)");
  CHECK(p.t->event_create(ctx, 0, nullptr) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(std::string(p.t->last_error()) == "event_create: out = NULL: an output pointer must not be NULL");
  CHECK(p.t->memory_info(nullptr, nullptr, nullptr) == GPUHAL_ERROR_INVALID_HANDLE);
  CHECK(std::string(p.t->last_error()) == "memory_info: ctx = NULL: a context must not be NULL");
  CHECK(p.t->stream_destroy(ctx, GPUHAL_STREAM_PER_THREAD) == GPUHAL_ERROR_INVALID_HANDLE);
  // What needs the plugin's own objects is the plugin's: an unknown context.
  int other = 0;
  CHECK(p.t->context_synchronize(reinterpret_cast<gpuhal_context_t>(&other)) == GPUHAL_ERROR_INVALID_HANDLE);
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}
}  // namespace

TEST_CASE("plugin kit: every in-tree plugin's entries are behind the argument rules of plugin_entries.def",
          "[layers]") {
  SECTION("host") { kit_rules_over(host_plugin(), {}); }
#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
  SECTION("cuda over the fake driver") {
    kit_rules_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  }
#endif
#if GPUHAL_TEST_HAVE_HSA_PLUGIN
  SECTION("hsa over the fake runtime") {
    kit_rules_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-hsa.so", {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
  }
#endif
}

namespace {
void faults_over(const std::string &path, const std::string &backend,
                 std::vector<std::pair<std::string, std::string>> options) {
  options.emplace_back("GPUHAL_FAULT", "mem_alloc:2:2,stream_create:1");
  Chained p(path, backend, {"fault"}, options);
  gpuhal_context_t ctx = p.context();
  gpuhal_deviceptr_t a = 0, b = 0;
  REQUIRE(p.t->mem_alloc(ctx, 64, &a) == GPUHAL_SUCCESS);
  CHECK(p.t->mem_alloc(ctx, 64, &b) == GPUHAL_ERROR_INVALID_VALUE);  // the second call, with the status named
  CHECK(std::string(p.t->last_error()) == "mem_alloc: fault injected by GPUHAL_FAULT");
  CHECK(b == 0);  // the plugin never saw it
  gpuhal_stream_t s = nullptr;
  CHECK(p.t->stream_create(ctx, 0, &s) == GPUHAL_ERROR_OUT_OF_MEMORY);  // an allocating entry's own failure
  CHECK(std::string(p.t->last_error()) == "stream_create: fault injected by GPUHAL_FAULT");
  REQUIRE(p.t->stream_create(ctx, 0, &s) == GPUHAL_SUCCESS);
  REQUIRE(p.t->mem_alloc(ctx, 64, &b) == GPUHAL_SUCCESS);
  // A failure of the plugin's own is still the plugin's message.
  CHECK(p.t->mem_free(ctx, a + 1) != GPUHAL_SUCCESS);
  CHECK(std::string(p.t->last_error()).find("fault injected") == std::string::npos);
  CHECK(p.t->mem_free(ctx, a) == GPUHAL_SUCCESS);
  CHECK(p.t->mem_free(ctx, b) == GPUHAL_SUCCESS);
  CHECK(p.t->stream_destroy(ctx, s) == GPUHAL_SUCCESS);
  CHECK(p.t->context_destroy(ctx) == GPUHAL_SUCCESS);
}
}  // namespace

TEST_CASE("fault layer: the k-th call fails with the named or the entry's own status, over every backend",
          "[layers]") {
  SECTION("host") { faults_over(host_plugin(), "host", {}); }
#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
  SECTION("cuda over the fake driver") {
    faults_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-cuda.so", "cuda", {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  }
#endif
#if GPUHAL_TEST_HAVE_HSA_PLUGIN
  SECTION("hsa over the fake runtime") {
    faults_over(GPUHAL_TEST_LIB_DIR "/libgpuhal-hsa.so", "hsa", {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
  }
#endif
}

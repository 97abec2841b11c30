// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// ROCr's documented contracts, held by the fake runtime
// (tests/fakes/hsa/ quotes each rule from hsa.h / hsa_ext_amd.h) and
// kept by the hsa backend: errors never hang (a failed copy's negative
// signal, a suspended queue whose signals never complete), and a GPU memory
// fault is an error instead of ROCr's abort(). docs/backends/hsa.md lists
// them with these tests.
//
// Each case runs in its own process; every wait that could hang runs under
// a watchdog, so a hang is a failed check, not a stuck test.
#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <future>
#include <thread>

#include "free_race.hpp"
#include "test_support.hpp"

using namespace gpuhal;

#if GPUHAL_TEST_HAVE_HSA_PLUGIN

namespace {

Runtime hsa_runtime() {
  Config c;
  c.backend = "hsa";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA);
  return Runtime::load(c);
}

// A test hook of the fake runtime (kept loaded for the process's life).
template <class F>
F *hook(const char *name) {
  static void *fake = dlopen(GPUHAL_TEST_FAKE_HSA, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(fake);
  void *p = dlsym(fake, name);
  REQUIRE(p);
  return reinterpret_cast<F *>(p);
}

// Compiles with the real amd_comgr, or returns an empty module after saying
// why it cannot (amd_comgr not installed).
Module compile_or_skip(const Context &ctx, const char *source, const ModuleOptions &options = {}) {
  try {
    return Module::compile(ctx, source, options);
  } catch (const Error &e) {
    if (std::string(e.what()).find("could not be loaded") == std::string::npos) throw;
    WARN("skipped: amd_comgr is not installed here: " << e.what());
    return Module();
  }
}

// Runs fn on a thread, throwing again the gpuhal::Error it threw (as a
// fresh copy: nothing of the worker's exception is shared); a hang past
// 20 s ends the process with a message (the thread cannot be stopped).
template <class F>
void within_20s(const char *what, F fn) {
  struct Outcome {
    bool failed = false;
    Status status = Status::SUCCESS;
    std::string message;
  };
  auto done = std::make_shared<std::promise<Outcome>>();
  std::future<Outcome> result = done->get_future();
  std::thread([done, fn]() mutable {
    Outcome o;
    try {
      fn();
    } catch (const Error &e) {
      o.failed = true;
      o.status = e.status();
      o.message = e.what();
    } catch (const std::exception &e) {
      o.failed = true;
      o.status = Status::ERROR_UNKNOWN;
      o.message = std::string("not a gpuhal::Error: ") + e.what();
    }
    done->set_value(std::move(o));
  }).detach();
  if (result.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
    std::fprintf(stderr, "HANG: %s did not return within 20 s\n", what);
    std::fflush(stderr);
    std::_Exit(3);
  }
  const Outcome o = result.get();
  if (o.failed) throw Error(o.status, o.message);
}

}  // namespace

TEST_CASE("hsa contract: a copy whose completion signal goes negative is an error, not a hang, and reset recovers",
          "[hsa][contract]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  const std::vector<float> v(4096, 2.0f);
  DeviceArray d = to_device(ctx, HostView::of(v));
  hook<void()>("fake_hsa_fail_next_copy")();
  REQUIRE_GPUHAL_ERROR(within_20s("a blocking copy", [&] { d.copy_from_host(HostView::of(v)); }),
                       Status::ERROR_LAUNCH_FAILED, "hsa_amd_memory_async_copy failed");
  // The context stays failed, saying so, until it is reset.
  REQUIRE_GPUHAL_ERROR(within_20s("Context::synchronize", [&] { ctx.synchronize(); }), Status::ERROR_LAUNCH_FAILED,
                       "Context::reset()");
  REQUIRE_GPUHAL_ERROR(d.copy_to_host(), Status::ERROR_LAUNCH_FAILED, "hsa_amd_memory_async_copy failed");
  within_20s("Context::reset", [&] { ctx.reset(); });
  DeviceArray again = to_device(ctx, HostView::of(v));
  CHECK(again.copy_to_host().to_vector<float>() == v);
}

TEST_CASE("hsa contract: a queue error suspends the queue, and every waiter returns LAUNCH_FAILED naming it",
          "[hsa][contract]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  const std::vector<int> v(1000, 7);
  DeviceArray d = to_device(ctx, HostView::of(v));
  Stream s = ctx.create_stream();
  // The stream is held by a host operation until a waiter is blocked on it
  // (released however the test ends: a failed check must not hang it).
  auto go = std::make_shared<std::atomic<bool>>(false);
  struct Release {
    std::shared_ptr<std::atomic<bool>> go;
    ~Release() { *go = true; }
  } release{go};
  s.add_callback([go] {
    while (!*go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  Event e = ctx.create_event(false);  // without timing: a marker packet on the stream's queue
  hook<void()>("fake_hsa_fail_next_packet")();
  e.record(s);  // its marker errs when it runs (after the host operation), the queue is suspended
  std::atomic<bool> callback_ran{false};
  auto token = std::make_shared<int>(0);
  s.add_callback([&callback_ran, token] { callback_ran = true; });  // behind the error: never runs
  Status waiter = Status::SUCCESS;
  std::string waiter_message;
  std::thread blocked([&] {
    try {
      s.synchronize();
    } catch (const Error &err) {
      waiter = err.status();
      waiter_message = err.what();
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  *go = true;
  within_20s("a blocked Stream::synchronize", [&] { blocked.join(); });
  CHECK(waiter == Status::ERROR_LAUNCH_FAILED);
  CHECK_THAT(waiter_message, test::contains("the HSA queue reported an error"));
  REQUIRE_GPUHAL_ERROR(within_20s("Event::synchronize", [&] { e.synchronize(); }), Status::ERROR_LAUNCH_FAILED,
                       "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT");
  REQUIRE_GPUHAL_ERROR(within_20s("a blocking copy", [&] { (void)d.copy_to_host(); }), Status::ERROR_LAUNCH_FAILED,
                       "the HSA queue reported an error");
  REQUIRE_GPUHAL_ERROR(within_20s("Context::synchronize", [&] { ctx.synchronize(); }), Status::ERROR_LAUNCH_FAILED,
                       "Context::reset()");
  REQUIRE_GPUHAL_ERROR(ctx.create_stream().synchronize(), Status::ERROR_LAUNCH_FAILED, "Context::reset()");
  within_20s("Context::reset (teardown of the suspended queue)", [&] { ctx.reset(); });
  CHECK_FALSE(callback_ran);
  CHECK(token.use_count() == 1);  // released, not run
  DeviceArray again = to_device(ctx, HostView::of(v));
  CHECK(again.copy_to_host().to_vector<int>() == v);
}

TEST_CASE("hsa contract: a GPU memory fault is LAUNCH_FAILED naming the address, not ROCr's abort()",
          "[hsa][contract]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  Stream s = ctx.create_stream();
  Event e = ctx.create_event(false);  // without timing: a marker packet on the stream's queue
  hook<void(uint64_t)>("fake_hsa_memory_fault_next_packet")(0xdead0000ull);
  e.record(s);  // without a system event handler the fake aborts here, as ROCr does
  REQUIRE_GPUHAL_ERROR(within_20s("Stream::synchronize", [&] { s.synchronize(); }), Status::ERROR_LAUNCH_FAILED,
                       "GPU memory access fault at address 0xdead0000 (page not present)");
  within_20s("Context::reset", [&] { ctx.reset(); });
  const std::vector<double> v(64, 1.25);
  CHECK(to_device(ctx, HostView::of(v)).copy_to_host().to_vector<double>() == v);
}

TEST_CASE("hsa contract: dynamic shared memory starts 16-byte aligned after 1028 bytes of static shared memory",
          "[hsa][contract][kernel]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void mixed(GPUHAL_GLOBAL double *out, GPUHAL_GLOBAL unsigned *base) {
  GPUHAL_SHARED_ARRAY(unsigned char, odd, 1028);
  GPUHAL_DYNAMIC_SHARED(double, dyn);
  const unsigned i = gpuhal_local_id(0), next = (i + 1u) % 64u;
  odd[i] = (unsigned char)i;
  dyn[i] = 0.5 * (double)i;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  out[i] = dyn[next] + (double)odd[next];
  if (gpuhal_local_id(0) == 0u) base[0] = (unsigned)(unsigned long)dyn;
})");
  if (!m) return;
  DeviceArray out = device_array(ctx, {64}, dtypes::float64);
  DeviceArray base = device_array(ctx, {1}, dtypes::uint32);
  m.kernel("mixed")({1}, {64}, ctx.default_stream(), 64 * 8)(out, base);
  ctx.synchronize();
  // The static part (1028 bytes, as the code object says) is padded to 1040
  // before the 512 dynamic bytes: the dispatch asks for both.
  struct Packet {
    uint16_t header, setup, wx, wy, wz, reserved0;
    uint32_t gx, gy, gz, private_segment, group_segment;
  } p{};
  static_assert(sizeof(Packet) == 32, "the dispatch packet's first 32 bytes");
  unsigned char whole[64] = {};
  size_t size = 0;
  std::vector<unsigned char> args(64);
  hook<uint64_t(void *, void *, size_t, size_t *)>("fake_hsa_last_dispatch")(whole, args.data(), args.size(), &size);
  std::memcpy(&p, whole, sizeof p);
  CHECK(p.group_segment == 1040 + 64 * 8);
  CHECK_THAT(m.lowered_source(), test::contains("(__builtin_amdgcn_groupstaticsize() + 15u) & ~15u"));
}

TEST_CASE("hsa contract: each agent builds for its own ISA, and an ISA the comgr does not know names both",
          "[hsa][contract][kernel]") {
  setenv("FAKE_HSA_ISAS", "gfx90a,gfx942,gfx1100,gfx1030", 1);
  Runtime rt = hsa_runtime();
  REQUIRE(rt.device_count() == 4);
  const char *source = R"(
GPUHAL_KERNEL void fill(GPUHAL_GLOBAL int *out, int v) { out[gpuhal_global_id(0)] = v; }
)";
  Context first = rt.device(0).primary_context(), last = rt.device(3).primary_context();
  Module m0 = compile_or_skip(first, source);
  if (!m0) return;
  Module m3 = Module::compile(last, source);  // gfx1030: its own code object (the fake loads a code object only on its ISA)
  DeviceArray a0 = device_array(first, {64}, dtypes::int32), a3 = device_array(last, {64}, dtypes::int32);
  m0.kernel("fill")({1}, {64})(a0, 1);
  m3.kernel("fill")({1}, {64})(a3, 3);
  first.synchronize();
  last.synchronize();
  // gfx90a's code object does not load on the gfx1030 agent.
  REQUIRE_GPUHAL_ERROR(Module::load(last, ImageFormat::Hsaco, m0.image().data(), m0.image().size()),
                       Status::ERROR_INVALID_IMAGE, "HSA_STATUS_ERROR_INVALID_ISA");
  // ISAs newer than the installed comgr: an error naming the ISA and the comgr.
  for (int d : {1, 2}) {
    Context ctx = rt.device(d).primary_context();
    const std::string isa = d == 1 ? "gfx942" : "gfx1100";
    try {
      Module::compile(ctx, source);
      SUCCEED("this amd_comgr knows " << isa);
    } catch (const Error &e) {
      INFO(e.what());
      CHECK(e.status() == Status::ERROR_COMPILATION_FAILED);
      CHECK_THAT(e.what(), test::contains("amdgcn-amd-amdhsa--" + isa));
      CHECK_THAT(e.what(), test::contains("does not know that ISA"));
      CHECK_THAT(e.what(), test::contains("(libamd_comgr.so."));  // "amd_comgr 2.4 (libamd_comgr.so.2)"
    }
  }
}

TEST_CASE("hsa contract: pageable copies go through bounded pinned chunks, larger than what can be pinned at once",
          "[hsa][contract]") {
  setenv("FAKE_HSA_SYSTEM_MEMORY", std::to_string(20 << 20).c_str(), 1);  // 20 MiB of pinned memory in all
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  auto allocations = hook<uint64_t()>("fake_hsa_system_pool_allocations");
  std::vector<uint32_t> big((48u << 20) / 4);  // 48 MiB: more than can be pinned
  for (size_t i = 0; i < big.size(); ++i) big[i] = uint32_t(i * 2654435761u);
  DeviceArray d = to_device(ctx, HostView::of(big));
  std::vector<uint32_t> back(big.size());
  d.copy_to_host(HostView::of(back));
  CHECK(back == big);
  // Small pageable copies reuse the chunks: no pinned allocation each.
  const std::vector<float> small(256, 1.5f);
  const uint64_t before = allocations();
  Stream s = ctx.create_stream();
  for (int i = 0; i < 50; ++i) {
    DeviceArray t = to_device(ctx, HostView::of(small), s);
    std::vector<float> out(small.size());
    t.copy_to_host(HostView::of(out), s);
    s.synchronize();
    REQUIRE(out == small);
  }
  CHECK(allocations() - before <= 1);
}

TEST_CASE("hsa contract: launches take their arguments from a per-stream ring, not a pool allocation each",
          "[hsa][contract][kernel]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void put(GPUHAL_GLOBAL unsigned *out, unsigned v) { out[0] = v; }
)");
  if (!m) return;
  auto allocations = hook<uint64_t()>("fake_hsa_system_pool_allocations");
  DeviceArray out = device_array(ctx, {1}, dtypes::uint32);
  Stream s = ctx.create_stream();
  Kernel k = m.kernel("put");
  k({1}, {1}, s)(out, 0u);  // the ring is made here
  s.synchronize();
  const uint64_t before = allocations();
  // Past the ring's end several times (64 KiB of 16-byte argument blocks):
  // every launch's arguments are its own when it runs.
  for (unsigned i = 1; i <= 10000; ++i) k({1}, {1}, s)(out, i);
  s.synchronize();
  CHECK(allocations() == before);
  unsigned char whole[64] = {};
  std::vector<unsigned char> args(64);
  size_t size = 0;
  hook<uint64_t(void *, void *, size_t, size_t *)>("fake_hsa_last_dispatch")(whole, args.data(), args.size(), &size);
  uint32_t v = 0;
  std::memcpy(&v, args.data() + 8, 4);
  CHECK(v == 10000u);
}

// hsa.h: "HSA_FENCE_SCOPE_AGENT: The fence is applied with agent scope for
// the global segment" and "HSA_FENCE_SCOPE_SYSTEM: ... across agents"; a
// system-scope fence costs cache write-backs and invalidations the next
// kernel on the same agent does not need.
TEST_CASE("hsa contract: packets between device-only work use agent-scope fences, system scope where others look",
          "[hsa][contract][kernel]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void add(GPUHAL_GLOBAL int *x, int k) { x[gpuhal_global_id(0)] += k; }
)");
  if (!m) return;
  auto counts = hook<void(uint64_t *, int)>("fake_hsa_fence_counts");
  enum { kNone = 0, kAgent = 1, kSystem = 2 };
  auto count = [](const uint64_t *c, int type, int acquire, int release) { return c[type * 9 + acquire * 3 + release]; };
  std::vector<int32_t> v(256, 1);
  Stream s = ctx.create_stream();
  DeviceArray x = to_device(ctx, HostView::of(v), s);  // a copy-engine write the first kernel must acquire
  s.synchronize();
  uint64_t c[18] = {};
  counts(c, 1);
  Kernel add = m.kernel("add");
  for (int i = 0; i < 10; ++i) add({4}, {64}, s)(x, 1);
  s.synchronize();  // the host looks: the results must be released at system scope first
  counts(c, 1);
  CHECK(count(c, 0, kSystem, kAgent) == 1);  // the first kernel after the copy
  CHECK(count(c, 0, kAgent, kAgent) == 9);   // kernel after kernel on one queue
  uint64_t dispatches = 0, system_releases = 0;
  for (int a = 0; a < 3; ++a)
    for (int r = 0; r < 3; ++r) {
      dispatches += count(c, 0, a, r);
      system_releases += count(c, 1, a, kSystem);
    }
  CHECK(dispatches == 10);
  CHECK(system_releases >= 1);  // a barrier packet released the kernels' writes to the host
  // A copy to the host after a kernel reads what the kernel wrote.
  add({4}, {64}, s)(x, 100);
  counts(c, 1);
  HostArray back = x.copy_to_host(s);  // filled by a copy engine once s gets there
  s.synchronize();
  counts(c, 1);
  uint64_t releases_before_copy = 0;
  for (int a = 0; a < 3; ++a) releases_before_copy += count(c, 1, a, kSystem);
  CHECK(releases_before_copy >= 1);
  CHECK(back.to_vector<int32_t>() == std::vector<int32_t>(256, 1));  // the fake runs no kernels: the copy's bytes
}

TEST_CASE("hsa contract: a code object v5 kernel gets every hidden argument its metadata lists", "[hsa][contract][kernel]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  // Reading the implicit arguments makes the compiler list them (code
  // object v5 layout: block counts, group sizes, remainders, grid dims).
  ModuleOptions options;
  options.compiler_options = "-mcode-object-version=5";
  Module m = compile_or_skip(ctx, R"(
GPUHAL_KERNEL void implicit(GPUHAL_GLOBAL unsigned *out) {
  __constant unsigned *words = (__constant unsigned *)__builtin_amdgcn_implicitarg_ptr();
  out[0] = words[0] + words[1] + words[2];
}
)", options);
  if (!m) return;
  CHECK(static_cast<unsigned char>(m.image()[8]) == 3);  // EI_ABIVERSION 3: code object v5
  DeviceArray out = device_array(ctx, {1}, dtypes::uint32);
  m.kernel("implicit")({3, 2}, {64, 4}, ctx.default_stream(), 256)(out);
  ctx.synchronize();  // the fake checks every hidden argument against the packet (a queue error if wrong)
  unsigned char whole[64] = {};
  std::vector<unsigned char> args(512);
  size_t size = 0;
  hook<uint64_t(void *, void *, size_t, size_t *)>("fake_hsa_last_dispatch")(whole, args.data(), args.size(), &size);
  REQUIRE(size >= 74);
  auto u32 = [&](size_t at) {
    uint32_t v;
    std::memcpy(&v, args.data() + at, 4);
    return v;
  };
  auto u16 = [&](size_t at) {
    uint16_t v;
    std::memcpy(&v, args.data() + at, 2);
    return v;
  };
  CHECK(u32(8) == 3);    // hidden_block_count_x
  CHECK(u32(12) == 2);   // hidden_block_count_y
  CHECK(u32(16) == 1);   // hidden_block_count_z
  CHECK(u16(20) == 64);  // hidden_group_size_x
  CHECK(u16(22) == 4);   // hidden_group_size_y
  CHECK(u16(24) == 1);   // hidden_group_size_z
  CHECK(u16(72) == 2);   // hidden_grid_dims
}

TEST_CASE("hsa contract: event timing works when only dispatch packets and async copies carry timestamps",
          "[hsa][contract]") {
  Runtime rt = hsa_runtime();
  Context ctx = rt.device(0).primary_context();
  DeviceArray from = device_array(ctx, {8 << 20}, dtypes::uint8), to = device_array(ctx, {8 << 20}, dtypes::uint8);
  Stream s = ctx.create_stream();
  Event a = ctx.create_event(), b = ctx.create_event();
  const auto t0 = std::chrono::steady_clock::now();
  a.record(s);
  for (int i = 0; i < 4; ++i) to.copy_from_device(from, s);
  b.record(s);
  b.synchronize();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const float ms = Event::elapsed_ms(a, b);
  CHECK(ms > 0.0f);
  CHECK(ms <= wall_ms + 0.001);
  // Events without timing stay markers; asking them for time is refused.
  Event quiet = ctx.create_event(false);
  quiet.record(s);
  REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(a, quiet), Status::ERROR_INVALID_HANDLE, "timing disabled");
  s.wait(quiet);
  s.synchronize();
}

#endif

TEST_CASE("hsa contract: a free forgets its allocation before ROCr may hand the address to another thread") {
  // ROCr's pools reuse a freed block at once (hsa_amd_memory_pool_free then
  // hsa_amd_memory_pool_allocate of the same size returns the same address).
  test::OpenedPlugin p(std::string(GPUHAL_TEST_LIB_DIR) + "/libgpuhal-hsa.so",
                       {{"GPUHAL_HSA_RUNTIME", GPUHAL_TEST_FAKE_HSA}});
  std::string error;
  const int lost = test::lost_frees(p, 8, 3000, &error);
  INFO("the first failed mem_free: " << error);
  CHECK(lost == 0);
}

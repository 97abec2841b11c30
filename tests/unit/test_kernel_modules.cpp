// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernels and modules on the host backend, beyond what a kernel computes
// (test_kernels.cpp): bad kernels and bad launches, parameter types, barriers
// the source scan cannot see, prebuilt images, the compiled-module cache,
// the lowering's builtins, context resets, modules released in stream
// callbacks, and arrays of another device.
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using test::kernel_context;

TEST_CASE("kernel: bad kernels and bad launches give clear errors and leave the context usable", "[kernel]") {
  Context ctx = kernel_context();
  SECTION("a syntax error shows the compiler's message at the source line") {
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "GPUHAL_KERNEL void k(int n) {\n  int x = ;\n}\n"),
                         Status::ERROR_COMPILATION_FAILED, "kernel:2");
  }
  SECTION("sources that are not kernels") {
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "int f(void) { return 1; }"), Status::ERROR_COMPILATION_FAILED,
                         "defines no kernel");
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "GPUHAL_KERNEL int k(void) { return 1; }"),
                         Status::ERROR_COMPILATION_FAILED, "line 1: GPUHAL_KERNEL must be followed by 'void");
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "GPUHAL_KERNEL void k(int n) { }\nGPUHAL_KERNEL void k(int n) { }"),
                         Status::ERROR_COMPILATION_FAILED, "defined twice");
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "GPUHAL_KERNEL void k(int n) {"), Status::ERROR_COMPILATION_FAILED,
                         "not closed");
    REQUIRE_GPUHAL_ERROR(Module::compile(ctx, "GPUHAL_KERNEL void k(float **p) { }"), Status::ERROR_COMPILATION_FAILED,
                         "pointer-to-pointer");
  }
  Module m = Module::compile(ctx, kSaxpy);
  Kernel k = m.kernel("saxpy");
  auto x = device_array(ctx, {64}, dtypes::float32);
  auto y = device_array(ctx, {64}, dtypes::float32);
  SECTION("unknown kernel") {
    REQUIRE_GPUHAL_ERROR(m.kernel("sxpy"), Status::ERROR_NOT_FOUND, "no kernel 'sxpy' in the module (it has saxpy)");
  }
  SECTION("launch shapes the device cannot run") {
    REQUIRE_GPUHAL_ERROR(k({1}, {2048})(y, x, 1.0f, 64), Status::ERROR_INVALID_VALUE, "at most 1024");
    REQUIRE_GPUHAL_ERROR(k({1}, {64, 64})(y, x, 1.0f, 64), Status::ERROR_INVALID_VALUE, "4096 work-items");
    REQUIRE_GPUHAL_ERROR(k({0}, {64})(y, x, 1.0f, 64), Status::ERROR_INVALID_VALUE, ">= 1");
    REQUIRE_GPUHAL_ERROR(k({0x7fffffffu}, {4})(y, x, 1.0f, 64), Status::ERROR_INVALID_VALUE, "exceeds 2^32 - 1");
    REQUIRE_GPUHAL_ERROR(k({1}, {64}, ctx.default_stream(), 1u << 20)(y, x, 1.0f, 64), Status::ERROR_INVALID_VALUE,
                         "dynamic shared memory");
  }
  SECTION("wrong argument count and types") {
    REQUIRE_GPUHAL_ERROR(
        k({1}, {64})(y, x, 1.0f), Status::ERROR_INVALID_VALUE,
        "takes 4 argument(s) (GPUHAL_GLOBAL float * y, GPUHAL_GLOBAL const float * x, float a, int n), 3 given");
    auto xi = device_array(ctx, {64}, dtypes::int32);
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, xi, 1.0f, 64), Status::ERROR_INVALID_DTYPE, "argument 2 (x)");
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, 1.0f, 1.0f, 64), Status::ERROR_INVALID_VALUE, "a scalar for the pointer");
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, x, x, 64), Status::ERROR_INVALID_VALUE, "an array for the scalar");
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, x, 1.0f, 64.5), Status::ERROR_INVALID_VALUE, "a float64 value for an int32");
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, x, 1.0f, int64_t(1) << 40), Status::ERROR_INVALID_VALUE, "does not fit");
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, x, 1.0f, uint64_t(1) << 63), Status::ERROR_INVALID_VALUE, "does not fit");
    auto wide = device_array(ctx, {8, 8}, dtypes::float32);
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(wide.view({Slice(0, 8, 2)}), x, 1.0f, 64), Status::ERROR_NOT_CONTIGUOUS,
                         "must be contiguous");
    // A view of floats one byte into its memory: a GPU faults on its loads.
    auto bytes = device_array(ctx, {260}, dtypes::uint8);
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, bytes.view({Slice(1, 257)}).view(dtypes::float32), 1.0f, 64),
                         Status::ERROR_INVALID_VALUE, "argument 2 (x) of kernel 'saxpy': the array's data is not aligned to its float32");
    k({1}, {64})(y, bytes.view({Slice(4, 260)}).view(dtypes::float32), 1.0f, 64);  // four bytes in: aligned
  }
  SECTION("handles: empty kernel, another context, after reset") {
    REQUIRE_GPUHAL_ERROR(Kernel().launch({1}, {1}, {}), Status::ERROR_INVALID_HANDLE, "empty kernel");
    REQUIRE_GPUHAL_ERROR(Module().kernel("k"), Status::ERROR_INVALID_HANDLE, "empty module");
    REQUIRE_GPUHAL_ERROR(Module::compile(Context(nullptr), kSaxpy), Status::ERROR_INVALID_HANDLE, "null context");
    ctx.reset();
    REQUIRE_GPUHAL_ERROR(k({1}, {64})(y, x, 1.0f, 64), Status::ERROR_CONTEXT_DESTROYED, "");
    REQUIRE_GPUHAL_ERROR(m.kernel("saxpy"), Status::ERROR_CONTEXT_DESTROYED, "");
  }
  // Whatever failed above, the context still compiles and runs kernels.
  Context live = ctx;
  Module again = Module::compile(live, kSaxpy);
  auto a = to_device(live, HostView::of(std::vector<float>(64, 1.0f)));
  auto b = to_device(live, HostView::of(std::vector<float>(64, 2.0f)));
  again.kernel("saxpy")({1}, {64})(b, a, 2.0f, 64);
  CHECK(b.copy_to_host().to_vector<float>() == std::vector<float>(64, 4.0f));
}

TEST_CASE("kernel: a parameter type gpuhal cannot pass is refused when the kernel is looked up", "[kernel]") {
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, R"(
struct pair { int a, b; };
GPUHAL_KERNEL void bypointer(GPUHAL_GLOBAL struct pair *p) { p[gpuhal_global_id(0)].a = 1; }
GPUHAL_KERNEL void byvalue(struct pair p, GPUHAL_GLOBAL int *o) { o[0] = p.a; }
)");
  REQUIRE_GPUHAL_ERROR(m.kernel("byvalue"), Status::ERROR_NOT_SUPPORTED, "has type 'struct pair p'");
  // A pointer to a struct takes any array.
  auto raw = device_array(ctx, {4, 2}, dtypes::int32);
  raw.memset(0);
  m.kernel("bypointer")({1}, {4})(raw);
  CHECK(raw.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>{1, 0, 1, 0, 1, 0, 1, 0});
}

TEST_CASE("kernel: a barrier the source scan cannot see is reported as a launch failure, not a silent race",
          "[kernel]") {
  Context ctx = kernel_context();
  // Token pasting hides the barrier from the scan: the kernel runs as a loop.
  Module m = Module::compile(ctx, R"(
#define HIDDEN(x) gpuhal_bar##x
GPUHAL_KERNEL void sneaky(GPUHAL_GLOBAL int *o) { o[gpuhal_global_id(0)] = 1; HIDDEN(rier)(GPUHAL_LOCAL_MEM_FENCE); }
)");
  auto o = device_array(ctx, {64}, dtypes::int32);
  m.kernel("sneaky")({1}, {64})(o);
  REQUIRE_GPUHAL_ERROR(ctx.synchronize(), Status::ERROR_LAUNCH_FAILED, "compiled as barrier-free");
  ctx.synchronize();  // reported once; the context goes on
  m.kernel("sneaky")({1}, {64}, ctx.default_stream())(o);
  CHECK_THROWS(ctx.default_stream().synchronize());
}

TEST_CASE("kernel: work-items that return before a barrier count as arrived", "[kernel]") {
  Context ctx = kernel_context();
  Kernel k = Module::compile(ctx, R"(
GPUHAL_KERNEL void early(GPUHAL_GLOBAL int *o, unsigned n) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0);
  if (gpuhal_global_id(0) >= n) return;
  s[lid] = (int)lid;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  o[gpuhal_global_id(0)] = s[0] + 1;
}
)")
                 .kernel("early");
  auto o = device_array(ctx, {128}, dtypes::int32);
  o.memset(0);
  k({2}, {64})(o, 100u);
  auto h = o.copy_to_host().to_vector<int32_t>();
  for (int i = 0; i < 128; ++i) REQUIRE(h[size_t(i)] == (i < 100 ? 1 : 0));
}

TEST_CASE("kernel: compiled images load again as prebuilt modules and other formats are refused", "[kernel]") {
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, kSaxpy);
  Module pre = Module::load(ctx, ImageFormat::HostSharedObject, m.image().data(), m.image().size());
  CHECK(pre.kernel_names().empty());
  Kernel k = pre.kernel("saxpy");
  CHECK(k.parameter_count() == -1);
  auto x = to_device(ctx, HostView::of(std::vector<float>(32, 1.0f)));
  auto y = to_device(ctx, HostView::of(std::vector<float>(32, 1.0f)));
  k({1}, {32})(y, x, 2.0f, int32_t(32));
  CHECK(y.copy_to_host().to_vector<float>() == std::vector<float>(32, 3.0f));
  REQUIRE_GPUHAL_ERROR(pre.kernel("nope"), Status::ERROR_NOT_FOUND, "no kernel 'nope'");
  REQUIRE_GPUHAL_ERROR(k({1}, {32})(y, x, 2.0f), Status::ERROR_INVALID_VALUE, "takes 4 argument(s), 3 given");
  const std::string ptx = ".version 8.0\n.target sm_90\n";
  REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::Ptx, ptx.data(), ptx.size()), Status::ERROR_INVALID_IMAGE,
                       "host shared objects only");
  REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::HostSharedObject, ptx.data(), ptx.size()),
                       Status::ERROR_INVALID_IMAGE, "not an ELF");
  REQUIRE_GPUHAL_ERROR(Module::load(ctx, ImageFormat::HostSharedObject, nullptr, 0), Status::ERROR_INVALID_VALUE,
                       "empty image");
}

TEST_CASE("kernel: compiled modules are cached by source and options", "[kernel]") {
  // A compiler wrapper that counts its runs.
  char dir_template[] = "/tmp/gpuhal-kernel-cache-test-XXXXXX";
  REQUIRE(mkdtemp(dir_template));
  const std::string dir = dir_template;
  const std::string counter = dir + "/runs";
  const std::string wrapper = dir + "/cxx";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\necho run >> '" << counter << "'\nexec c++ \"$@\"\n";
  }
  chmod(wrapper.c_str(), 0755);
  auto runs = [&] {
    std::ifstream f(counter);
    int n = 0;
    std::string line;
    while (std::getline(f, line)) ++n;
    return n;
  };
  Context ctx = test::host_context({{"GPUHAL_HOST_CXX", wrapper}, {"GPUHAL_KERNEL_CACHE", dir + "/cache"}});
  Module::compile(ctx, kSaxpy);
  CHECK(runs() == 1);
  Module::compile(ctx, kSaxpy);
  CHECK(runs() == 1);
  ModuleOptions o;
  o.compiler_options = "-O1";
  Module::compile(ctx, kSaxpy, o);
  CHECK(runs() == 2);
  Module::compile(ctx, std::string(kSaxpy) + "\n");
  CHECK(runs() == 3);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("kernel: the lowering defines every builtin and gpuhal-info can print it", "[kernel]") {
  Runtime rt = test::host_runtime();
  REQUIRE(rt.supports(Capability::Kernels));
  auto lowering = rt.kernel_lowering();
  REQUIRE(lowering.size() == kernel_builtins().size() + 1);
  CHECK(lowering[0].first.empty());
  for (size_t i = 0; i < kernel_builtins().size(); ++i) {
    CHECK(lowering[i + 1].first == kernel_builtins()[i]);
    CHECK_THAT(lowering[i + 1].second, test::contains(kernel_builtins()[i]));
  }
  Context ctx = kernel_context();
  Module m = Module::compile(ctx, kSaxpy);
  CHECK_THAT(m.lowered_source(), test::contains("#define gpuhal_barrier(flags)"));
  CHECK_THAT(m.lowered_source(), Catch::Matchers::EndsWith(std::string(kSaxpy) + "\n"));
}

TEST_CASE("kernel launches and DLPack exports refuse arrays made before a context reset", "[kernel]") {
  Context ctx = test::host_context();
  Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void put(GPUHAL_GLOBAL int *out, int v) { out[gpuhal_global_id(0)] = v; }
)");
  DeviceArray before = device_array(ctx, {64}, dtypes::int32);
  DeviceArray view = before.view({Slice(8, 16)});
  ctx.reset();
  Module again = Module::compile(ctx, R"(
GPUHAL_KERNEL void put(GPUHAL_GLOBAL int *out, int v) { out[gpuhal_global_id(0)] = v; }
)");
  DeviceArray fresh = device_array(ctx, {64}, dtypes::int32);
  fresh.memset(0);
  // The stale array's address may now be the fresh one's: nothing is written.
  REQUIRE_GPUHAL_ERROR(again.kernel("put")({1}, {64})(before, 7), Status::ERROR_CONTEXT_DESTROYED,
                       "made before the context was reset");
  REQUIRE_GPUHAL_ERROR(again.kernel("put")({1}, {8})(view, 7), Status::ERROR_CONTEXT_DESTROYED,
                       "made before the context was reset");
  REQUIRE_GPUHAL_ERROR(to_dlpack(before), Status::ERROR_CONTEXT_DESTROYED, "to_dlpack");
  REQUIRE_GPUHAL_ERROR(to_dlpack_versioned(view), Status::ERROR_CONTEXT_DESTROYED, "to_dlpack");
  ctx.synchronize();
  CHECK(fresh.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(64, 0));
  again.kernel("put")({1}, {64})(fresh, 3);
  ctx.synchronize();
  CHECK(fresh.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(64, 3));
}

TEST_CASE("kernel: a module whose last handle goes in a stream callback, with its launch queued, unloads after it ran",
          "[kernel]") {
  Context ctx = kernel_context();
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const Error &e) { errors.push_back(e.what()); });
  Stream t = ctx.create_stream(StreamKind::NonBlocking), s = ctx.create_stream(StreamKind::NonBlocking);
  DeviceArray x = device_array(ctx, {256}, dtypes::int32);
  x.memset(0);
  std::atomic<bool> gate{false};
  t.add_callback([&gate] {
    while (!gate) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  auto module = std::make_shared<Module>(Module::compile(ctx, R"(
GPUHAL_KERNEL void fill(GPUHAL_GLOBAL int *x, int v) { x[gpuhal_global_id(0)] = v; })"));
  module->kernel("fill")({4}, {64}, t)(x, 7);  // queued on t behind the gate
  // The last handle goes on another stream's thread while the launch is
  // still queued: the unload must neither wait for streams from a callback
  // (refused: it could wait for itself) nor pull the code from under the
  // launch.
  s.add_callback([m = std::move(module)]() mutable { m.reset(); });
  s.synchronize();
  gate = true;
  t.synchronize();
  ctx.flush_deallocations();
  CHECK(x.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(256, 7));
  CHECK(errors.empty());
  for (const auto &e : errors) INFO(e);
}

TEST_CASE("kernel: a mirrored array of another device is refused, as a device array of one is", "[kernel]") {
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}, {"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}});
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  Module m = Module::compile(c0, "GPUHAL_KERNEL void one(GPUHAL_GLOBAL int *x) { x[gpuhal_global_id(0)] = 1; }");
  DeviceArray foreign = device_array(c1, {64}, dtypes::int32);
  REQUIRE_GPUHAL_ERROR(m.kernel("one")({1}, {64})(foreign), Status::ERROR_INVALID_VALUE, "another context");
  MirroredArray mirrored = MirroredArray::empty(c1, {64}, dtypes::int32);
  REQUIRE_GPUHAL_ERROR(m.kernel("one")({1}, {64})(mirrored), Status::ERROR_INVALID_VALUE, "another context");
  CHECK_FALSE(mirrored.has_device());  // refused before anything was allocated on device 1
  CHECK(mirrored.context() == c1);
  MirroredArray mine = MirroredArray::empty(c0, {64}, dtypes::int32);
  m.kernel("one")({1}, {64})(mine);
  CHECK(mine.get_host().to_vector<int32_t>() == std::vector<int32_t>(64, 1));
}

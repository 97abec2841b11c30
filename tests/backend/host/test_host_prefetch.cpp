// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's software prefetching for streaming kernels
// (host_kernel.cpp: set_prefetch_limits; the generated run_groups): which
// launches get it, through which arguments (the debug log names them), and
// that results stay exact with it -- at the very end of allocations, for
// every pointee size, through a void pointer, with an 8-byte scalar that
// holds an address, and after a graph's kernel node gets new arguments.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

const char *const kMix = R"(
GPUHAL_KERNEL void mix(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, GPUHAL_GLOBAL const double *w,
                       GPUHAL_GLOBAL void *spare, uint64_t cookie, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) y[i] = x[i] * (float)w[i] + (float)(cookie & 1u) + (spare ? 0.0f : 100.0f);
}
)";

Context debug_kernel_context() {
  return test::debug_host_context(GPUHAL_TEST_KERNEL_CACHE);
}

struct Arrays {
  std::vector<float> x, y;
  std::vector<double> w;
  explicit Arrays(unsigned n) : x(n), y(n, -1.0f), w(n) {
    for (unsigned i = 0; i < n; ++i) {
      x[i] = float(i % 1000);
      w[i] = double(i % 7);
    }
  }
  float expected(unsigned i, uint64_t cookie) const { return x[i] * float(w[i]) + float(cookie & 1u); }
};

// The mix kernel over n elements: its inputs on the device, an output and
// a spare allocation, on a stream of a debug-logging context.
struct MixSetup {
  Context ctx = debug_kernel_context();
  Arrays a;
  Stream s = ctx.create_stream();
  DeviceArray x, w, y, spare;
  Kernel k;
  explicit MixSetup(unsigned n)
      : a(n),
        x(to_device(ctx, HostView::of(a.x), s)),
        w(to_device(ctx, HostView::of(a.w), s)),
        y(device_array(ctx, {n}, dtypes::float32)),
        spare(device_array(ctx, {64}, dtypes::uint8)),
        k(Module::compile(ctx, kMix).kernel("mix")) {}
};

}  // namespace

TEST_CASE("host prefetch: a large 1-D launch prefetches through its pointers, results exact to the last element",
          "[host][kernel]") {
  test::CapturedLog log("prefetch limits");
  Context ctx = debug_kernel_context();
  const unsigned n = (1u << 18) + 3;  // past the threshold, ragged: the last group is partly outside
  Arrays a(n);
  Stream s = ctx.create_stream();
  // Each array exactly n elements long: the prefetches near the end are cut
  // at the allocation's end.
  DeviceArray x = to_device(ctx, HostView::of(a.x), s), w = to_device(ctx, HostView::of(a.w), s);
  DeviceArray y = device_array(ctx, {n}, dtypes::float32), spare = device_array(ctx, {64}, dtypes::uint8);
  Kernel k = Module::compile(ctx, kMix).kernel("mix");
  const uint64_t cookie = x.device_pointer() | 1u;  // an 8-byte scalar that holds an address
  log.take();
  k({(n + 255) / 256}, {256}, s)(y, x, w, spare, cookie, n);
  s.synchronize();
  std::vector<float> r = y.copy_to_host().to_vector<float>();
  for (unsigned i = 0; i < n; ++i) REQUIRE(r[i] == a.expected(i, cookie));
  const std::vector<std::string> lines = log.take();
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].find("kernel 'mix', 262400 work-items") != std::string::npos);
  // y, x, w and spare point into device memory; the cookie's value does too
  // (the plugin cannot tell an 8-byte scalar from a pointer; the module
  // prefetches through pointer parameters only).
  CHECK(lines[0].find("arguments 0, 1, 2, 3, 4 (") != std::string::npos);
}

TEST_CASE("host prefetch: small and 2-D launches get none", "[host][kernel]") {
  test::CapturedLog log("prefetch limits");
  const unsigned n = 1u << 18;
  MixSetup m(n);
  Arrays &a = m.a;
  Stream &s = m.s;
  DeviceArray &x = m.x, &w = m.w, &y = m.y, &spare = m.spare;
  Kernel &k = m.k;
  log.take();
  k({(n - 256) / 256}, {256}, s)(y, x, w, spare, uint64_t(0), n - 256);  // one group short of the threshold
  k({n / 512, 2}, {256}, s)(y, x, w, spare, uint64_t(0), n);            // 2-D: rows are not the groups' order
  s.synchronize();
  CHECK(log.take().empty());
  // The same kernel at the threshold, 1-D: it does prefetch.
  k({n / 256}, {256}, s)(y, x, w, spare, uint64_t(0), n);
  s.synchronize();
  CHECK(log.take().size() == 1);
  // Every element, from the last launch.
  s.synchronize();
  std::vector<float> r = y.copy_to_host().to_vector<float>();
  for (unsigned i = 0; i < n; ++i) REQUIRE(r[i] == a.expected(i, 0));
}

TEST_CASE("host prefetch: a graph's kernel node prefetches through the arguments it was last given",
          "[host][kernel][graphs]") {
  test::CapturedLog log("prefetch limits");
  const unsigned n = 1u << 18;
  MixSetup m(n);
  Context &ctx = m.ctx;
  Arrays &a = m.a;
  Stream &s = m.s;
  DeviceArray &x = m.x, &w = m.w, &y = m.y, &spare = m.spare;
  Kernel &k = m.k;
  s.begin_capture();
  k({n / 256}, {256}, s)(y, x, w, spare, uint64_t(0), n);
  GraphExec exec = s.end_capture().instantiate();
  log.take();
  // A shorter output and input now, at the ends of smaller allocations.
  const unsigned half = n / 2;
  DeviceArray y2 = device_array(ctx, {half}, dtypes::float32);
  DeviceArray x2 = device_array(ctx, {half}, dtypes::float32);
  DeviceArray w2 = device_array(ctx, {half}, dtypes::float64);
  x2.copy_from_host(HostView::of(a.x.data(), {half}), s);
  w2.copy_from_host(HostView::of(a.w.data(), {half}), s);
  exec.update_kernel_args(0, {y2, x2, w2, spare, uint64_t(1), half});
  CHECK(log.take().size() == 1);  // limits worked out again for the new pointers
  exec.launch(s);
  s.synchronize();
  std::vector<float> r = y2.copy_to_host().to_vector<float>();
  for (unsigned i = 0; i < half; ++i) REQUIRE(r[i] == a.expected(i, 1));
}

TEST_CASE("host prefetch: a kernel taking a pointer to a struct it never defines compiles and runs",
          "[host][kernel]") {
  // The prefetch needs the pointee's size; a declared-only struct has none
  // (it counts as one byte), and the module must compile as it did before.
  const char *const kOpaque = R"(
struct opaque;
GPUHAL_KERNEL void k(GPUHAL_GLOBAL struct opaque *p, GPUHAL_GLOBAL float *y, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) y[i] = p ? 1.0f : 2.0f;
})";
  test::CapturedLog log("prefetch limits");
  Context ctx = debug_kernel_context();
  const unsigned n = 1u << 18;
  DeviceArray y = device_array(ctx, {n}, dtypes::float32), opaque = device_array(ctx, {16}, dtypes::uint8);
  Kernel k = Module::compile(ctx, kOpaque).kernel("k");
  k({n / 256}, {256})(opaque, y, n);
  ctx.synchronize();
  const std::vector<float> r = y.copy_to_host().to_vector<float>();
  CHECK(std::all_of(r.begin(), r.end(), [](float v) { return v == 1.0f; }));
  CHECK(log.saw("arguments 0, 1 ("));
}

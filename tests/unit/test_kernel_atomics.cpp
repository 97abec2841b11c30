// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dialect's atomics on the host backend: a 256-bin histogram over 64M
// random bytes with exact counts (through shared memory, then global), and
// every operation on every type checked exactly; the cuda and hsa lowerings
// of the same source compile (test_cuda_kernels.cpp, test_hsa_codegen.cpp).
#include <cstdint>
#include <random>
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("kernel: a 256-bin histogram over 64M random bytes counts exactly with atomics", "[kernel][atomics]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kAtomics).kernel("histogram");
  const size_t n = size_t(64) << 20;
  std::vector<uint8_t> data(n);
  std::mt19937_64 rng(20261127);
  for (size_t i = 0; i < n; i += 8) {
    const uint64_t r = rng();
    for (size_t j = 0; j < 8; ++j) data[i + j] = uint8_t(r >> (8 * j));
  }
  std::vector<uint32_t> want(256, 0);
  for (uint8_t b : data) ++want[b];
  DeviceArray d = to_device(ctx, HostView::of(data));
  DeviceArray bins = device_array(ctx, {256}, dtypes::uint32);
  bins.memset(0);
  k({64}, {256})(d, uint32_t(n), bins);
  CHECK(bins.copy_to_host().to_vector<uint32_t>() == want);
}

namespace {

// Launches every_op of `source` (kAtomics, or kAtomicsExplicit: the same
// operations with explicit orders and scopes) and checks each result.
void check_every_op(Context &ctx, const char *source) {
  Kernel k = Module::compile(ctx, source).kernel("every_op");
  const int64_t n = 200;  // work-items, each contributing once
  std::vector<int32_t> i32{0, 0, 0, 0, -1, 0, 0, 10};
  std::vector<uint32_t> u32{0, 0, 0, 100};
  std::vector<int64_t> i64{0, 0};
  std::vector<uint64_t> u64{uint64_t(n), 0, 0};
  std::vector<float> f32{0.0f, -1.0f, 0.0f};
  std::vector<double> f64{0.0, 0.0, 0.0};
  DeviceArray di32 = to_device(ctx, HostView::of(i32)), du32 = to_device(ctx, HostView::of(u32));
  DeviceArray di64 = to_device(ctx, HostView::of(i64)), du64 = to_device(ctx, HostView::of(u64));
  DeviceArray df32 = to_device(ctx, HostView::of(f32)), df64 = to_device(ctx, HostView::of(f64));
  DeviceArray olds = device_array(ctx, {1}, dtypes::int32);
  olds.memset(0);
  k({5}, {40})(di32, du32, di64, du64, df32, df64, olds);

  uint64_t xor_bits = 0;
  int64_t k_sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    xor_bits ^= uint64_t(1) << (i % 64);
    k_sum += i;
  }
  const auto gi32 = di32.copy_to_host().to_vector<int32_t>();
  CHECK(gi32 == std::vector<int32_t>{int32_t(n), int32_t(-2 * n), int32_t(-(n - 1)), int32_t(n - 1), INT32_MIN, 0, 0,
                                     int32_t(10 + n)});
  CHECK(du32.copy_to_host().to_vector<uint32_t>() == std::vector<uint32_t>{0xffffffffu, uint32_t(n % 2), uint32_t(3 * n), 5u});
  CHECK(di64.copy_to_host().to_vector<int64_t>() == std::vector<int64_t>{k_sum * 4000000000LL, 0});
  CHECK(du64.copy_to_host().to_vector<uint64_t>() == std::vector<uint64_t>{0, xor_bits, 9});
  CHECK(df32.copy_to_host().to_vector<float>() == std::vector<float>{0.5f * float(n), 0.25f * float(n - 1), 7.0f});
  CHECK(df64.copy_to_host().to_vector<double>() == std::vector<double>{0.25 * double(n), -double(n - 1), 1.5});
  CHECK(olds.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>{int32_t(n)});
}

}  // namespace

TEST_CASE("kernel: every atomic operation on every type gives exact results", "[kernel][atomics]") {
  Context ctx = test::kernel_context();
  check_every_op(ctx, kAtomics);
}

TEST_CASE("kernel: the explicit-order and explicit-scope atomics give the same exact results, in loops and fibers",
          "[kernel][atomics]") {
  // Both of the host's execution modes: the work-item loops, and fibers.
  const char *loops = GENERATE("1", "0");
  INFO("GPUHAL_HOST_WORK_ITEM_LOOPS=" << loops);
  Context ctx = test::kernel_context({{"GPUHAL_HOST_WORK_ITEM_LOOPS", loops}});
  check_every_op(ctx, kAtomicsExplicit);
  // The histogram with work-group scope on shared bins, acq_rel into global.
  Kernel k = Module::compile(ctx, kAtomicsExplicit).kernel("histogram");
  std::vector<uint8_t> data(size_t(1) << 20);
  std::mt19937 rng(46);
  for (auto &b : data) b = uint8_t(rng());
  std::vector<uint32_t> want(256, 0);
  for (uint8_t b : data) ++want[b];
  DeviceArray d = to_device(ctx, HostView::of(data));
  DeviceArray bins = device_array(ctx, {256}, dtypes::uint32);
  bins.memset(0);
  k({16}, {128})(d, uint32_t(data.size()), bins);
  CHECK(bins.copy_to_host().to_vector<uint32_t>() == want);
}

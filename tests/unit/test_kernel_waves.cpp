// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The dialect's wave operations on the host backend, whose wave is one
// work-item: every value of wave_facts against the model
// (tests/conformance/wave_model.hpp), in both of the host's execution modes
// (the work-item loops, and fibers when the kernel has a barrier), and a sum
// through wave reductions against the host's own. The cuda and hsa
// lowerings of the same source compile (test_cuda_kernels.cpp,
// test_hsa_codegen.cpp); the conformance suite runs it on every backend.
#include <cstdint>
#include <vector>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("kernel: the host's wave is one work-item, and every wave operation says so exactly", "[kernel][waves]") {
  Context ctx = test::kernel_context();
  Module m = Module::compile(ctx, kWaves);
  const uint64_t group = 48, groups = 3;
  DeviceArray out = device_array(ctx, {int64_t(group * groups * 12)}, dtypes::int64);
  out.memset(0xff);
  m.kernel("wave_facts")({uint32_t(groups)}, {uint32_t(group)})(out);
  const auto got = out.copy_to_host().to_vector<int64_t>();
  REQUIRE(got[1] == 1);
  const auto want = conformance::wave_facts_expected(1, group, groups);
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    INFO("value " << i % 12 << " of work-item " << i / 12);
    CHECK(got[i] == want[i]);
  }
  // The model itself, for a 32-lane wave and a partial one: work-item 40 is
  // lane 8 of the second wave of 16 lanes (32..47).
  const auto w32 = conformance::wave_facts_expected(32, 48, 1);
  const int64_t *row = &w32[40 * 12];
  CHECK(row[0] == 8);
  CHECK(row[2] == 0x9249);  // lanes 0, 3, ..., 15
  CHECK(row[4] == 1);        // 16 lanes, all below 20
  CHECK(row[7] == 42);       // lane 10 exists
  CHECK(w32[46 * 12 + 7] == 46);  // lane 14 + 2 does not: its own value
  CHECK(row[8] == 45);       // lane 8 ^ 5 = 13
  CHECK(row[9] == 3 * (32 + 47) * 16 / 2);
}

TEST_CASE("kernel: a sum through wave reductions equals the host's, in loops and in fibers", "[kernel][waves]") {
  const char *loops = GENERATE("1", "0");
  INFO("GPUHAL_HOST_WORK_ITEM_LOOPS=" << loops);
  Context ctx = test::kernel_context({{"GPUHAL_HOST_WORK_ITEM_LOOPS", loops}});
  Module m = Module::compile(ctx, kWaves);
  std::vector<int32_t> x(100003);
  int64_t sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = int32_t((i * 7919) % 2001) - 1000;
    sum += x[i];
  }
  DeviceArray dx = to_device(ctx, HostView::of(x));
  for (uint32_t block : {1u, 200u, 1024u}) {
    DeviceArray total = device_array(ctx, {1}, dtypes::int64);
    total.memset(0);
    m.kernel("wave_sum")({17}, {block})(dx, uint32_t(x.size()), total);
    INFO("block " << block);
    CHECK(total.copy_to_host().to_vector<int64_t>()[0] == sum);
  }
}

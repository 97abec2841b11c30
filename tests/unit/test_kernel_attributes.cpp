// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernel attributes and occupancy on the host backend (plugin.h, ABI 1.7):
// what the kernel declares, one resident block per worker for a block that
// can launch and none for one that cannot, the block-size rule, and the
// errors of bad input, an empty kernel and a reset context.
#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

TEST_CASE("kernel attributes: the host backend states what a kernel declares and what a launch may add",
          "[kernel][attributes]") {
  Context ctx = test::kernel_context();
  REQUIRE(ctx.supports(Capability::KernelAttributes));
  Kernel k = Module::compile(ctx, kReduce).kernel("block_sum");
  const KernelAttributes a = k.attributes();
  CHECK(a.max_threads_per_block == 1024);
  CHECK(a.static_shared_bytes == 128 * sizeof(double));
  CHECK(a.max_dynamic_shared_bytes == 65536 - 1024);
  CHECK(a.registers_per_thread == 0);
  CHECK(a.preferred_block_multiple == 1);
}

TEST_CASE("kernel occupancy: one resident block per host worker when the block can launch, none otherwise",
          "[kernel][attributes]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kReduce).kernel("block_sum");
  CHECK(k.max_active_blocks_per_unit(128) == 1);
  CHECK(k.max_active_blocks_per_unit(1024, 65536 - 1024) == 1);
  CHECK(k.max_active_blocks_per_unit(1025) == 0);
  CHECK(k.max_active_blocks_per_unit(128, 65536 - 1023) == 0);  // one byte over the 64 KiB
  // What occupancy calls launchable, launch takes, and the other way round.
  DeviceArray in = device_array(ctx, {128}, dtypes::float64), part = device_array(ctx, {1}, dtypes::float64);
  in.fill(1.0);
  k({1}, {128}, ctx.default_stream(), 65536 - 1024)(in, part, 128u);
  CHECK(part.copy_to_host().to_vector<double>() == std::vector<double>{128.0});
  REQUIRE_GPUHAL_ERROR(k({1}, {128}, ctx.default_stream(), 65536 - 1023)(in, part, 128u), Status::ERROR_INVALID_VALUE,
                       "shared memory");
  REQUIRE_GPUHAL_ERROR(k.max_active_blocks_per_unit(0), Status::ERROR_INVALID_VALUE, "a block of 0 work-items");
}

TEST_CASE("kernel occupancy: suggest_block_size takes the largest block of the most resident work-items",
          "[kernel][attributes]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kReduce).kernel("block_sum");
  const BlockSizeSuggestion s = k.suggest_block_size();
  CHECK(s.block == 1024);  // every block size has one resident block: the largest wins
  CHECK(s.min_grid == uint32_t(ctx.device().properties().multiprocessor_count));
  // No block fits 64 KiB of dynamic shared memory beside the static 1 KiB.
  REQUIRE_GPUHAL_ERROR(k.suggest_block_size(65536), Status::ERROR_INVALID_VALUE,
                       "kernel 'block_sum' fits no block with 65536 bytes of dynamic shared memory");
}

TEST_CASE("kernel attributes: an empty kernel and a kernel of a reset context are refused by name",
          "[kernel][attributes]") {
  REQUIRE_GPUHAL_ERROR(Kernel().attributes(), Status::ERROR_INVALID_HANDLE, "Kernel::attributes: empty kernel");
  REQUIRE_GPUHAL_ERROR(Kernel().suggest_block_size(), Status::ERROR_INVALID_HANDLE, "empty kernel");
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kReduce).kernel("block_sum");
  ctx.reset();
  REQUIRE_GPUHAL_ERROR(k.attributes(), Status::ERROR_CONTEXT_DESTROYED, "Kernel::attributes");
  REQUIRE_GPUHAL_ERROR(k.max_active_blocks_per_unit(64), Status::ERROR_CONTEXT_DESTROYED,
                       "Kernel::max_active_blocks_per_unit");
}

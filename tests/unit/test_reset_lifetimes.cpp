// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Context::reset() under live host arrays: host memory that host code still
// addresses (pinned, mapped, write-combined and managed arrays, DLPack
// exports of host-backend memory) stays valid host memory, with its last
// contents, until its last handle goes; gpuhal's own handles to the old
// context's memory are refused by name. numba-cuda's test_host_alloc_mapped
// killed the process here: the plugin freed the pages under the array.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "fake_cuda_hooks.hpp"
#include "gpuhal/dlpack.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

// True while the page holding `p` is mapped in this process.
bool page_mapped(const void *p) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  void *start = reinterpret_cast<void *>(uintptr_t(p) & ~(page - 1));
  return msync(start, page, MS_ASYNC) == 0;
}

// The extent of the mapping (a line of /proc/self/maps) holding `p`, or
// {0, 0} where nothing is mapped. A mapping that went and another that came
// at the same address (a sanitizer's allocator, a new thread's stack) have
// different extents.
std::pair<uintptr_t, uintptr_t> mapping_of(const void *p) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx", &lo, &hi) != 2) continue;
    if (uintptr_t(p) >= lo && uintptr_t(p) < hi) return {uintptr_t(lo), uintptr_t(hi)};
  }
  return {0, 0};
}

void fill_pattern(void *data, int64_t n, int32_t seed) {
  auto *v = static_cast<int32_t *>(data);
  for (int64_t i = 0; i < n; ++i) v[i] = seed + int32_t(i);
}

bool has_pattern(const void *data, int64_t n, int32_t seed) {
  const auto *v = static_cast<const int32_t *>(data);
  for (int64_t i = 0; i < n; ++i)
    if (v[i] != seed + int32_t(i)) return false;
  return true;
}

// The whole sequence on `ctx`: every kind of host-addressed memory made,
// written, the context reset, the memory read and written again, every
// gpuhal use of the old memory refused, then all released and unmapped.
void check_reset_keeps_host_memory(const Context &ctx, bool managed) {
  const int64_t n = 3000;  // a few pages
  HostArray pinned = pinned_array(ctx, {n}, dtypes::int32);
  MappedArray mapped = mapped_array(ctx, {n}, dtypes::int32);
  MappedArray combined = mapped_array(ctx, {n}, dtypes::int32, {}, 'C', false, true);
  DeviceArray shared;
  if (managed) shared = managed_array(ctx, {n}, dtypes::int32);
  fill_pattern(pinned.data(), n, 1);
  fill_pattern(mapped.host.data(), n, 2);
  fill_pattern(combined.host.data(), n, 3);
  if (managed) fill_pattern(shared.host_view().data(), n, 4);
  void *managed_data = managed ? shared.host_view().data() : nullptr;

  ctx.reset();

  CHECK(has_pattern(pinned.data(), n, 1));
  CHECK(has_pattern(mapped.host.data(), n, 2));
  CHECK(has_pattern(combined.host.data(), n, 3));
  if (managed) CHECK(has_pattern(managed_data, n, 4));
  fill_pattern(pinned.data(), n, 10);  // still writable
  fill_pattern(mapped.host.data(), n, 20);
  if (managed) fill_pattern(managed_data, n, 40);
  CHECK(has_pattern(pinned.data(), n, 10));
  // gpuhal's handles of the old context refuse every use, naming it.
  REQUIRE_GPUHAL_ERROR(mapped.device.copy_to_host(), Status::ERROR_CONTEXT_DESTROYED, "reset");
  if (managed) {
    REQUIRE_GPUHAL_ERROR(shared.host_view(), Status::ERROR_CONTEXT_DESTROYED, "reset");
    REQUIRE_GPUHAL_ERROR(shared.copy_to_host(), Status::ERROR_CONTEXT_DESTROYED, "reset");
  }
  // The new context works, and its memory is not the kept memory.
  HostArray fresh = pinned_array(ctx, {n}, dtypes::int32);
  CHECK(fresh.data() != pinned.data());
  fill_pattern(fresh.data(), n, 7);
  CHECK(has_pattern(pinned.data(), n, 10));

  // The last handles go: the kept pages are unmapped (nothing leaks). Each
  // is checked right after its own release, before anything else can map
  // new memory at the freed addresses (the sanitizers' allocators do).
  if (managed) {
    shared = DeviceArray();  // a rescued range: unmapped by the handle's release itself
    CHECK_FALSE(page_mapped(managed_data));
  }
  void *pinned_data = pinned.data();
  void *mapped_data = mapped.host.data();
  void *combined_data = combined.host.data();
  pinned = HostArray();
  mapped = MappedArray();
  combined = MappedArray();
  CHECK_FALSE(page_mapped(pinned_data));  // the old generation's pages: unmapped at once
  CHECK_FALSE(page_mapped(mapped_data));
  CHECK_FALSE(page_mapped(combined_data));
  ctx.flush_deallocations();
  CHECK(has_pattern(fresh.data(), n, 7));
}

}  // namespace

TEST_CASE("host: a reset keeps pinned, mapped and managed memory valid under live host arrays", "[reset][hostmem]") {
  check_reset_keeps_host_memory(test::host_context(), true);
}

TEST_CASE("host: a DLPack export of device memory stays readable by its consumer through a reset",
          "[reset][dlpack]") {
  Context ctx = test::host_context();
  DeviceArray d = device_array(ctx, {2048}, dtypes::int32);
  std::vector<int32_t> src(2048);
  std::iota(src.begin(), src.end(), 5);
  d.copy_from_host(HostView::of(src));
  dlpack::DLManagedTensor *t = to_dlpack(d);
  d = DeviceArray();  // the consumer's tensor alone keeps it
  ctx.reset();
  const auto *data = static_cast<const int32_t *>(t->dl_tensor.data);
  CHECK(data[0] == 5);
  CHECK(data[2047] == 5 + 2047);
  t->deleter(t);
  CHECK_FALSE(page_mapped(data));
}

TEST_CASE("host: a DLPack export of pool-managed memory stays readable through a reset too", "[reset][dlpack]") {
  Context ctx = test::host_context();
  ctx.set_memory_manager(pool_memory_manager().create());
  REQUIRE(ctx.memory_manager().name() == "pool");
  DeviceArray d = device_array(ctx, {4096}, dtypes::int32);
  std::vector<int32_t> src(4096);
  std::iota(src.begin(), src.end(), -7);
  d.copy_from_host(HostView::of(src));
  dlpack::DLManagedTensor *t = to_dlpack(d);
  d = DeviceArray();
  ctx.reset();
  const auto *data = static_cast<const int32_t *>(t->dl_tensor.data);
  CHECK(data[0] == -7);
  CHECK(data[4095] == 4095 - 7);
  t->deleter(t);
}

TEST_CASE("pinned memory released before a reset is freed at once, not kept", "[reset][hostmem]") {
  Context ctx = test::host_context();
  void *data = nullptr;
  std::pair<uintptr_t, uintptr_t> before;
  {
    HostArray p = pinned_array(ctx, {4096}, dtypes::int32);
    data = p.data();
    before = mapping_of(data);
    REQUIRE(before.first != 0);
  }
  ctx.reset();  // flushes the queued release before the context goes
  // Gone: unmapped, or the address taken by another mapping since (the
  // reset starts threads; under ThreadSanitizer their memory often lands
  // there, so msync alone would say "mapped" of someone else's pages).
  CHECK(mapping_of(data) != before);
  CHECK(ctx.pending_deallocations() == 0);
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("cuda: a reset keeps pinned, mapped and managed memory valid under live host arrays", "[reset][cuda]") {
  Runtime rt = test::cuda_runtime();
  check_reset_keeps_host_memory(rt.device(0).primary_context(), true);
}

TEST_CASE("cuda: pinned and mapped arrays are gpuhal's registered pages, write-combined ones the driver's",
          "[reset][cuda]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  const int registered_before = test::fake_registered_ranges();
  auto last_flags = test::fake_symbol<unsigned (*)(int)>("fake_cuda_last_host_flags");
  HostArray p = pinned_array(ctx, {100}, dtypes::float32);
  CHECK(last_flags(1) == 0x2u);  // CU_MEMHOSTREGISTER_DEVICEMAP: reachable, as cuMemHostAlloc's memory is
  MappedArray m = mapped_array(ctx, {100}, dtypes::float32, {}, 'C', true, false);
  CHECK(last_flags(1) == 0x3u);  // CU_MEMHOSTREGISTER_PORTABLE | DEVICEMAP
  CHECK(test::fake_registered_ranges() == registered_before + 2);
  MappedArray w = mapped_array(ctx, {100}, dtypes::float32, {}, 'C', false, true);
  CHECK(test::fake_registered_ranges() == registered_before + 2);
  CHECK(last_flags(0) == 0x6u);  // cuMemHostAlloc: DEVICEMAP | WRITECOMBINED
  p = HostArray();
  m = MappedArray();
  ctx.flush_deallocations();
  CHECK(test::fake_registered_ranges() == registered_before);
}
#endif

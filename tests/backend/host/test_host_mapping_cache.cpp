// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's cache of released device mappings
// (plugins/host/host_mapping_cache.hpp) seen through the public API: what is
// reused, what is kept mapped and what is not, and the option's bad values.
// Whether an address is still mapped is asked of the kernel with msync(),
// which fails with ENOMEM on an unmapped range.
#include <sys/mman.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catch_compat.hpp"
#include "test_support.hpp"

using gpuhal::Context;
using gpuhal::DeviceMemory;
using gpuhal::Status;

namespace {
bool mapped(uint64_t address, uint64_t bytes) {
  errno = 0;
  return msync(reinterpret_cast<void *>(uintptr_t(address)), size_t(bytes), MS_ASYNC) == 0;
}

// Allocates `bytes`, releases it (the deferred queue flushed) and returns
// where it was.
uint64_t allocate_and_release(const Context &ctx, uint64_t bytes) {
  uint64_t where = 0;
  {
    DeviceMemory m = ctx.allocate(bytes);
    where = m.device_pointer();
  }
  ctx.flush_deallocations();
  return where;
}
}  // namespace

TEST_CASE("host mappings: a released allocation's mapping serves the next allocation of its size", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});  // free memory counted by gpuhal
  const uint64_t free_before = ctx.memory_info().free;
  const uint64_t first = allocate_and_release(ctx, 4096);
  CHECK(mapped(first, 4096));                    // kept for reuse
  CHECK(ctx.memory_info().free == free_before);  // a cached mapping is not in use
  DeviceMemory again = ctx.allocate(3000);       // rounds to the same page count
  CHECK(again.device_pointer() == first);
  DeviceMemory other = ctx.allocate(3 * 4096);  // another size: not that mapping
  CHECK(other.device_pointer() != first);
  CHECK(ctx.memory_info().free == free_before - 3000 - 3 * 4096);
}

TEST_CASE("host mappings: GPUHAL_HOST_MAPPING_CACHE=0 unmaps every release at once", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "0"}});
  const uint64_t where = allocate_and_release(ctx, 4096);
  CHECK_FALSE(mapped(where, 4096));
  CHECK(errno == ENOMEM);
}

TEST_CASE("host mappings: the cache keeps no more than its limit", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "8K"}});
  uint64_t a = 0, b = 0;
  {
    DeviceMemory ma = ctx.allocate(8192);
    DeviceMemory mb = ctx.allocate(8192);
    a = ma.device_pointer();
    b = mb.device_pointer();
  }
  ctx.flush_deallocations();
  CHECK(mapped(a, 8192) + mapped(b, 8192) == 1);  // one kept, the other unmapped
  // Larger than the whole cache: never kept.
  const uint64_t big = allocate_and_release(ctx, 64 * 1024);
  CHECK_FALSE(mapped(big, 64 * 1024));
}

TEST_CASE("host mappings: a full cache makes room for the newest release", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "8K"}});
  const uint64_t older = allocate_and_release(ctx, 8192);  // fills the cache
  const uint64_t newer = allocate_and_release(ctx, 4096);  // another size: the 8K one goes
  CHECK_FALSE(mapped(older, 8192));
  CHECK(mapped(newer, 4096));
  DeviceMemory again = ctx.allocate(4096);
  CHECK(again.device_pointer() == newer);
}

// The longest kept goes first whatever its size: a size a loop keeps
// reusing does not give up its own mappings while an older one of another
// size stays (which left a 4 MiB allocation loop missing the cache beside a
// large mapping from an earlier workload).
TEST_CASE("host mappings: a full cache gives up its oldest mapping, not the size in use", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "16K"}});
  const uint64_t old_big = allocate_and_release(ctx, 8192);  // kept first: the oldest
  uint64_t small[3] = {0, 0, 0};
  for (int round = 0; round < 4; ++round) {
    {
      DeviceMemory a = ctx.allocate(4096), b = ctx.allocate(4096), c = ctx.allocate(4096);
      small[0] = a.device_pointer();
      small[1] = b.device_pointer();
      small[2] = c.device_pointer();
    }
    ctx.flush_deallocations();  // three 4K releases: 8K + 12K > 16K, the 8K goes
    INFO("round " << round);
    CHECK_FALSE(mapped(old_big, 8192));
    for (uint64_t p : small) CHECK(mapped(p, 4096));  // all three kept, reused next round
  }
  // The next round's allocations were the cached ones.
  DeviceMemory a = ctx.allocate(4096);
  CHECK((a.device_pointer() == small[0] || a.device_pointer() == small[1] || a.device_pointer() == small[2]));
}

TEST_CASE("host mappings: memory exported for IPC is unmapped when released, never cached", "[host][memory][ipc]") {
  Context ctx = test::host_context();
  uint64_t where = 0;
  {
    DeviceMemory m = ctx.allocate(4096);
    where = m.device_pointer();
    gpuhal::IpcHandle h = gpuhal::get_ipc_handle(m, 0, 4096);
    (void)h;
  }
  ctx.flush_deallocations();
  CHECK_FALSE(mapped(where, 4096));
}

TEST_CASE("host mappings: the memory limit counts live allocations, not cached ones", "[host][memory]") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});
  allocate_and_release(ctx, 1 << 20);  // the whole device, now cached
  DeviceMemory whole = ctx.allocate(1 << 20);
  CHECK(whole.size() == uint64_t(1) << 20);
  REQUIRE_GPUHAL_ERROR(ctx.allocate(4096), Status::ERROR_OUT_OF_MEMORY, "GPUHAL_HOST_MEMORY_LIMIT");
}

// The plugin's init refuses it (ERROR_INVALID_CONFIG), which the loader
// reports as the backend failing to initialise, naming the option.
TEST_CASE("host mappings: a bad GPUHAL_HOST_MAPPING_CACHE is refused by name", "[host][memory][errors]") {
  REQUIRE_GPUHAL_ERROR(test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "lots"}}), Status::ERROR_INITIALIZATION_FAILED,
                       "ERROR_INVALID_CONFIG): GPUHAL_HOST_MAPPING_CACHE='lots'");
  REQUIRE_GPUHAL_ERROR(test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "-1"}}), Status::ERROR_INITIALIZATION_FAILED,
                       "GPUHAL_HOST_MAPPING_CACHE='-1'");
}

// A reset frees every allocation of the context; an array of the old
// generation dropped afterwards must not free the new memory that reuses
// its mapping (the cache makes that reuse the rule, not the exception).
TEST_CASE("host mappings: an array dropped after a reset leaves the memory now at its address alone",
          "[host][memory][reset]") {
  Context ctx = test::host_context();
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const gpuhal::Error &e) { errors.push_back(e.what()); });
  auto old_array = std::make_unique<DeviceMemory>(ctx.allocate(4096));
  const uint64_t old_address = old_array->device_pointer();
  ctx.reset();
  DeviceMemory fresh = ctx.allocate(4096);
  CHECK(fresh.device_pointer() == old_address);  // the reset's release went to the cache
  old_array.reset();                             // of the old generation: nothing to free
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.flush_deallocations() == 0);
  CHECK(errors.empty());
  gpuhal::DeviceArray a(fresh, gpuhal::Layout::make({512}, 8), gpuhal::dtypes::float64);
  std::vector<double> v(512, 3.0), back(512);
  a.copy_from_host(gpuhal::HostView::of(v));
  a.copy_to_host(gpuhal::HostView::of(back));
  CHECK(back == v);  // still mapped and live: copies to it are accepted
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pinned, mapped and registered host memory on the host backend.
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

#include "test_support.hpp"
#include "gpuhal/plugin.h"

using namespace gpuhal;

TEST_CASE("pinned scopes unregister on exit, also when an exception unwinds", "[hostmem][pinned]") {
  Context ctx = test::host_context();
  std::vector<float> a(1000), b(10);
  {
    PinnedScope pin(ctx, {HostView::of(a), HostView::of(b)});
    // Pinned memory still transfers normally.
    a[3] = 3.5f;
    CHECK(to_device(ctx, HostView::of(a)).copy_to_host().at<float>({3}) == 3.5f);
  }
  try {
    PinnedScope pin(ctx, {HostView::of(a)});
    throw std::runtime_error("user error inside the scope");
  } catch (const std::runtime_error &) {
  }
  // Re-pinning at once works: nothing was left registered (Numba #3508).
  PinnedScope again(ctx, {HostView::of(a)});
  CHECK_NOTHROW(register_host(ctx, HostView::of(b)));
}

TEST_CASE("the registry counts repeats, nested and overlapping ranges", "[hostmem][register]") {
  Context ctx = test::host_context();
  std::vector<double> v(100);
  HostRegistration r1 = register_host(ctx, HostView::of(v));
  CHECK(r1.size() == 800);
  HostRegistration r2 = register_host(ctx, HostView::of(v));  // same range: counted
  HostRegistration inner = register_host(ctx, HostView::of(v).view({Slice(10, 20)}));  // nested: counted
  r1.release();
  r2.release();
  // Only inner's bytes stay registered: the rest registers anew, beside them.
  HostRegistration wider = register_host(ctx, HostView::of(v).view({Slice(5, 50)}));
  inner.release();
  {
    MappedScope mapped(ctx, {HostView::of(v).view({Slice(0, 60)})});  // spans three pieces
    mapped[0].memset(0);
  }
  wider.release();
  // A portable registration cannot widen bytes registered without it.
  std::vector<double> w(100);
  HostRegistration plain = register_host(ctx, HostView::of(w).view({Slice(0, 50)}));
  REQUIRE_GPUHAL_ERROR(register_host(ctx, HostView::of(w), HostMemoryFlags{true, false, false}),
                       Status::ERROR_ALREADY_REGISTERED, "registered without PORTABLE");
  plain.release();
  CHECK(register_host(ctx, HostView::of(w), HostMemoryFlags{true, false, false}));
  HostRegistration part = register_host(ctx, HostView::of(v).view({Slice(50, {})}));
  CHECK(part.size() == 400);
  std::vector<double> other(4);
  REQUIRE_GPUHAL_ERROR(deregister_host(ctx, HostView::of(other)), Status::ERROR_NOT_REGISTERED,
                       "is not a registered range");
  REQUIRE_GPUHAL_ERROR(deregister_host(ctx, HostView::of(v).view({Slice(50, 60)})), Status::ERROR_NOT_REGISTERED,
                       "not its size");
  deregister_host(ctx, HostView::of(v).view({Slice(50, {})}));
  REQUIRE_GPUHAL_ERROR(part.release(), Status::ERROR_NOT_REGISTERED, "is not a registered range");
  CHECK_FALSE(part);
  HostRegistration empty = register_host(ctx, HostView::of(v).view({Slice(0, 0)}));  // zero-size
  CHECK_FALSE(empty);
}

TEST_CASE("mapped scopes give device arrays over the host memory", "[hostmem][mapped]") {
  Context ctx = test::host_context();
  REQUIRE(ctx.supports(Capability::MappedHostMemory));
  std::vector<int32_t> v(64, 0), src(64);
  for (int i = 0; i < 64; ++i) src[size_t(i)] = i;
  {
    MappedScope m(ctx, {HostView::of(v, {8, 8})});
    const DeviceArray &d = m[0];
    CHECK(d.shape() == Shape{8, 8});
    d.copy_from_host(HostView::of(src, {8, 8}));  // writes through the mapping
    CHECK(v == src);
    d.view({Slice(0, 1)}).memset(0);
    CHECK(v[7] == 0);
    CHECK(v[8] == 8);
  }
  PinnedScope pin(ctx, {HostView::of(v)});  // the mapping is gone
}

TEST_CASE("mapped scopes refuse read-only views before mapping anything", "[hostmem][mapped][errors]") {
  Context ctx = test::host_context();
  const std::vector<int32_t> constant(16, 7);
  std::vector<int32_t> writable(16, 0);
  // A device array has no read-only form: a write through it would change
  // memory its owner promised not to (a Python bytes object, a const buffer).
  REQUIRE_GPUHAL_ERROR(MappedScope(ctx, {HostView::of(writable), HostView::of(constant)}),
                       Status::ERROR_INVALID_VALUE, "read-only");
  CHECK(constant == std::vector<int32_t>(16, 7));
  // Nothing of the refused scope stayed registered: both register now.
  HostRegistration a = register_host(ctx, HostView::of(writable));
  CHECK(a.size() == 64);
  PinnedScope pinned_readonly(ctx, {HostView::of(constant)});  // pinning reads only: allowed
}

TEST_CASE("pinned arrays are freed through the deferred queue with their size", "[hostmem][pinned][dealloc]") {
  Context ctx = test::host_context();
  {
    HostArray p = pinned_array(ctx, {16, 8}, dtypes::float32, {}, 'F');
    CHECK(p.strides() == Strides{4, 64});
    p.at<float>({15, 7}) = 2.0f;
    DeviceArray d = to_device(ctx, p);
    CHECK(d.copy_to_host().at<float>({15, 7}) == 2.0f);
  }
  ctx.flush_deallocations();
  { HostArray p = pinned_array_like(ctx, HostView::of(std::vector<double>(10))); }
  CHECK(ctx.pending_deallocation_bytes() == 80);  // counted with its real size (Numba counts 0)
  CHECK(pinned_array(ctx, {0, 3}).size() == 0);
  REQUIRE_GPUHAL_ERROR(pinned_array(ctx, {-2}), Status::ERROR_INVALID_SHAPE, "negative dimension");
  REQUIRE_GPUHAL_ERROR(pinned_array(ctx, {int64_t(1) << 40, int64_t(1) << 40}), Status::ERROR_SIZE_OVERFLOW,
                       "overflows");
}

TEST_CASE("mapped arrays are one memory seen from both sides", "[hostmem][mapped]") {
  Context ctx = test::host_context();
  MappedArray m = mapped_array(ctx, {4, 4}, dtypes::int64, {}, 'C', true, true);
  m.device.memset(0);
  CHECK(m.host.at<int64_t>({3, 3}) == 0);
  m.host.at<int64_t>({2, 1}) = 99;
  CHECK(m.device.view({2, 1}).copy_to_host().at<int64_t>({}) == 99);
  DeviceArray kept = m.device;
  m.host = HostArray();  // the device side keeps the buffer alive
  CHECK(kept.copy_to_host().at<int64_t>({2, 1}) == 99);
  MappedArray like = mapped_array_like(ctx, HostView::of(std::vector<float>(6), {2, 3}));
  CHECK(like.device.shape() == Shape{2, 3});
  CHECK(like.device.dtype() == dtypes::float32);
}

TEST_CASE("backends without host memory say so", "[hostmem][errors]") {
  Config c;
  c.backend = test::fake("good");
  Context ctx = Runtime::load(c).device(0).primary_context();
  CHECK_FALSE(ctx.supports(Capability::HostMemory));
  std::vector<float> v(4);
  REQUIRE_GPUHAL_ERROR(pinned_array(ctx, {4}), Status::ERROR_NOT_SUPPORTED,
                       "backend 'fake' has no pinned/registered host memory");
  REQUIRE_GPUHAL_ERROR(PinnedScope(ctx, {HostView::of(v)}), Status::ERROR_NOT_SUPPORTED, "no pinned");
  REQUIRE_GPUHAL_ERROR(mapped_array(ctx, {4}), Status::ERROR_NOT_SUPPORTED, "no pinned");
}

TEST_CASE("registrations end with a context reset", "[hostmem][reset]") {
  Context ctx = test::host_context();
  std::vector<double> v(10);
  HostRegistration r = register_host(ctx, HostView::of(v));
  ctx.reset();
  CHECK_NOTHROW(r.release());  // dropped by the reset: nothing to undo
  HostRegistration again = register_host(ctx, HostView::of(v));
  CHECK(again);
}

TEST_CASE("the core hands the portable, mapped and write-combined flags to the plugin", "[hostmem][flags]") {
  // The host plugin through the recording wrapper, which records
  // the flags of the latest host_alloc / host_register it forwards.
  setenv("GPUHAL_RECORDING_TARGET", GPUHAL_TEST_LIB_DIR "/libgpuhal-host.so", 1);
  Config c;
  c.backend = test::fake_path("libgpuhal-recording.so");
  Context ctx = Runtime::load(c).device(0).primary_context();
  void *wrapper = dlopen(test::fake_path("libgpuhal-recording.so").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(wrapper);
  auto last_flags = reinterpret_cast<uint32_t (*)(int)>(dlsym(wrapper, "gpuhal_recording_last_host_flags"));
  REQUIRE(last_flags);
  const uint32_t P = GPUHAL_HOST_ALLOC_PORTABLE, M = GPUHAL_HOST_ALLOC_MAPPED, W = GPUHAL_HOST_ALLOC_WRITE_COMBINED;
  // Pinned and mapped arrays are the core's pages registered with the
  // plugin (host_register); only write-combined memory is the plugin's
  // (host_alloc), as only a driver makes it.
  { HostArray a = pinned_array(ctx, {8}); }
  CHECK(last_flags(1) == M);  // mapped whenever the device maps host memory
  for (int bits = 0; bits < 4; ++bits) {
    const bool portable = bits & 1, wc = bits & 2;
    MappedArray m = mapped_array(ctx, {8}, dtypes::float32, {}, 'C', portable, wc);
    CHECK(last_flags(wc ? 0 : 1) == (M | (portable ? P : 0) | (wc ? W : 0)));
  }
  std::vector<float> v(64);
  // Registrations are mapped whenever the device can map host memory (so
  // that a later mapped use of the same bytes shares them).
  { HostRegistration r = register_host(ctx, HostView::of(v), HostMemoryFlags{true, false, false}); }
  CHECK(last_flags(1) == (P | M));
  { MappedScope scope(ctx, {HostView::of(v)}); }
  CHECK(last_flags(1) == M);
  { PinnedScope scope(ctx, {HostView::of(v)}); }
  CHECK(last_flags(1) == M);
  dlclose(wrapper);
}

namespace {

// A context of the host plugin the runtime loaded (RTLD_NOLOAD: the same
// copy, initialised by the runtime's context the test holds), through the
// plugin's own table: what the core would not let a test do.
struct RawHostContext {
  void *lib = nullptr;
  const gpuhal_plugin_table_t *table = nullptr;
  gpuhal_context_t ctx = nullptr;
  RawHostContext() {
    lib = dlopen(Runtime::get().plugin_path().c_str(), RTLD_NOW | RTLD_NOLOAD);
    REQUIRE(lib);
    auto negotiate = reinterpret_cast<gpuhal_plugin_negotiate_fn>(dlsym(lib, GPUHAL_PLUGIN_ENTRY_NAME));
    REQUIRE(negotiate);
    REQUIRE(negotiate(GPUHAL_ABI_VERSION, &table) == GPUHAL_SUCCESS);
    REQUIRE(table->context_create(0, &ctx) == GPUHAL_SUCCESS);
  }
  ~RawHostContext() {
    CHECK(table->context_destroy(ctx) == GPUHAL_SUCCESS);
    dlclose(lib);
  }
  RawHostContext(const RawHostContext &) = delete;
  RawHostContext &operator=(const RawHostContext &) = delete;
};

}  // namespace

// The host plugin remembers, per thread, the allocation its last range check
// found (a synchronous copy then takes no lock); a release anywhere must
// end that: a copy into the released range is refused, not done.
TEST_CASE("the host plugin refuses a copy into memory released since the thread's last copy there",
          "[hostmem][ranges]") {
  Context keep = test::host_context();  // the runtime loads and initialises the plugin
  RawHostContext raw;
  const gpuhal_plugin_table_t *t = raw.table;
  gpuhal_context_t ctx = raw.ctx;
  std::vector<uint8_t> src(4096, 7), back(4096, 0);
  for (bool from_another_thread : {false, true}) {
    INFO("released from another thread: " << from_another_thread);
    gpuhal_deviceptr_t a = 0, b = 0;
    REQUIRE(t->mem_alloc(ctx, 4096, &a) == GPUHAL_SUCCESS);
    REQUIRE(t->mem_alloc(ctx, 4096, &b) == GPUHAL_SUCCESS);
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, gpuhal_deviceptr_t(uintptr_t(src.data())), 4096) ==
          GPUHAL_SUCCESS);
    // Twice: the second check is answered from the remembered range.
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, gpuhal_deviceptr_t(uintptr_t(src.data())), 4096) ==
          GPUHAL_SUCCESS);
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, gpuhal_deviceptr_t(uintptr_t(back.data())), a, 4096) ==
          GPUHAL_SUCCESS);
    CHECK(back == src);
    // Past the remembered range's end (even into a neighbouring allocation): still refused.
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a + 4095, gpuhal_deviceptr_t(uintptr_t(src.data())), 2) ==
          GPUHAL_ERROR_INVALID_VALUE);
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a + 1, gpuhal_deviceptr_t(uintptr_t(src.data())), 4096) ==
          GPUHAL_ERROR_INVALID_VALUE);
    if (from_another_thread)
      std::thread([&] { CHECK(t->mem_free(ctx, a) == GPUHAL_SUCCESS); }).join();
    else
      CHECK(t->mem_free(ctx, a) == GPUHAL_SUCCESS);
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, gpuhal_deviceptr_t(uintptr_t(src.data())), 4096) ==
          GPUHAL_ERROR_INVALID_VALUE);
    CHECK(t->memset_sync(ctx, a, 0, 16) == GPUHAL_ERROR_INVALID_VALUE);
    // The other allocation is untouched by it.
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, b, gpuhal_deviceptr_t(uintptr_t(src.data())), 4096) ==
          GPUHAL_SUCCESS);
    CHECK(t->mem_free(ctx, b) == GPUHAL_SUCCESS);
  }
}

// A freed device allocation's range stays in the plugin's allocation map as
// released while the mapping cache holds its mapping (the next allocation of
// its size takes the same node back): refused by every check meanwhile, and
// gone from the map before the mapping is unmapped, whether the cache never
// kept it or pushed it out later.
TEST_CASE("the host plugin refuses a freed allocation's range while its mapping is cached, and after",
          "[hostmem][ranges]") {
  Context keep = test::host_context({{"GPUHAL_HOST_MAPPING_CACHE", "8K"}});
  RawHostContext raw;
  const gpuhal_plugin_table_t *t = raw.table;
  gpuhal_context_t ctx = raw.ctx;
  std::vector<uint8_t> src(64 * 1024, 9), back(64 * 1024, 0);
  const auto host_src = gpuhal_deviceptr_t(uintptr_t(src.data()));
  const auto host_back = gpuhal_deviceptr_t(uintptr_t(back.data()));
  auto usable = [&](gpuhal_deviceptr_t p, uint64_t bytes) {
    return t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, p, host_src, bytes) == GPUHAL_SUCCESS &&
           t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host_back, p, bytes) == GPUHAL_SUCCESS &&
           std::equal(back.begin(), back.begin() + ptrdiff_t(bytes), src.begin());
  };
  auto refused = [&](gpuhal_deviceptr_t p, uint64_t bytes) {
    return t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, p, host_src, bytes) == GPUHAL_ERROR_INVALID_VALUE &&
           t->memset_sync(ctx, p, 0, 16) == GPUHAL_ERROR_INVALID_VALUE &&
           t->mem_free(ctx, p) == GPUHAL_ERROR_INVALID_VALUE;
  };
  gpuhal_deviceptr_t a = 0;
  REQUIRE(t->mem_alloc(ctx, 8192, &a) == GPUHAL_SUCCESS);
  CHECK(usable(a, 8192));
  REQUIRE(t->mem_free(ctx, a) == GPUHAL_SUCCESS);
  CHECK(refused(a, 8192));  // cached: still mapped, not an allocation
  // The next allocation of its size is that mapping, usable again.
  gpuhal_deviceptr_t again = 0;
  REQUIRE(t->mem_alloc(ctx, 8192, &again) == GPUHAL_SUCCESS);
  CHECK(again == a);
  CHECK(usable(again, 8192));
  REQUIRE(t->mem_free(ctx, again) == GPUHAL_SUCCESS);
  // Over the cache's 8K: never kept, unmapped at once; a new allocation of
  // that size (wherever it lands) is a clean one.
  gpuhal_deviceptr_t big = 0;
  REQUIRE(t->mem_alloc(ctx, 64 * 1024, &big) == GPUHAL_SUCCESS);
  REQUIRE(t->mem_free(ctx, big) == GPUHAL_SUCCESS);
  CHECK(refused(big, 64 * 1024));
  REQUIRE(t->mem_alloc(ctx, 64 * 1024, &big) == GPUHAL_SUCCESS);
  CHECK(usable(big, 64 * 1024));
  CHECK(t->mem_free(ctx, big) == GPUHAL_SUCCESS);
  // A 4K release pushes the cached 8K mapping out: unmapped, still refused,
  // and the next 8K allocation is a fresh mapping.
  gpuhal_deviceptr_t small = 0;
  REQUIRE(t->mem_alloc(ctx, 4096, &small) == GPUHAL_SUCCESS);
  REQUIRE(t->mem_free(ctx, small) == GPUHAL_SUCCESS);
  CHECK(refused(a, 8192));
  gpuhal_deviceptr_t fresh = 0;
  REQUIRE(t->mem_alloc(ctx, 8192, &fresh) == GPUHAL_SUCCESS);
  CHECK(usable(fresh, 8192));
  CHECK(t->mem_free(ctx, fresh) == GPUHAL_SUCCESS);
}

// A context destroyed with live allocations gives their mappings to the
// cache with their map entries gone; another context's allocation of that
// size takes such a mapping (a new entry is made for it, under the same
// lock), and it is then that context's: usable, freed once, refused after.
// A stream-ordered free releases the entry at once and caches the mapping
// when the stream reaches it.
TEST_CASE("the host plugin unmaps a destroyed context's memory and reuses a freed mapping in order",
          "[hostmem][ranges]") {
  Context keep = test::host_context();
  std::vector<uint8_t> src(8192, 5);
  const auto host_src = gpuhal_deviceptr_t(uintptr_t(src.data()));
  gpuhal_deviceptr_t gone = 0;
  {
    RawHostContext first;
    REQUIRE(first.table->mem_alloc(first.ctx, 8192, &gone) == GPUHAL_SUCCESS);
  }  // destroyed with the allocation live: unmapped, never cached (host code
     // may still address it; the core keeps such memory only where nothing is mapped)
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  CHECK(msync(reinterpret_cast<void *>(uintptr_t(gone) & ~(page - 1)), page, MS_ASYNC) != 0);
  RawHostContext second;
  const gpuhal_plugin_table_t *t = second.table;
  gpuhal_deviceptr_t again = 0;
  REQUIRE(t->mem_alloc(second.ctx, 8192, &again) == GPUHAL_SUCCESS);
  const gpuhal_deviceptr_t old_address = again;
  CHECK(t->memcpy_sync(second.ctx, GPUHAL_COPY_HOST_TO_DEVICE, again, host_src, 8192) == GPUHAL_SUCCESS);
  CHECK(t->mem_free(second.ctx, again) == GPUHAL_SUCCESS);
  CHECK(t->mem_free(second.ctx, again) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(t->memcpy_sync(second.ctx, GPUHAL_COPY_HOST_TO_DEVICE, again, host_src, 8192) == GPUHAL_ERROR_INVALID_VALUE);
  // Stream-ordered: refused as soon as the free is queued, reused once run.
  gpuhal_deviceptr_t p = 0;
  REQUIRE(t->mem_alloc(second.ctx, 8192, &p) == GPUHAL_SUCCESS);
  CHECK(p == old_address);
  REQUIRE(t->mem_free_async(second.ctx, p, nullptr) == GPUHAL_SUCCESS);
  CHECK(t->memset_sync(second.ctx, p, 0, 16) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(t->mem_free(second.ctx, p) == GPUHAL_ERROR_INVALID_VALUE);
  REQUIRE(t->context_synchronize(second.ctx) == GPUHAL_SUCCESS);
  gpuhal_deviceptr_t q = 0;
  REQUIRE(t->mem_alloc(second.ctx, 8192, &q) == GPUHAL_SUCCESS);
  CHECK(q == old_address);
  CHECK(t->mem_free(second.ctx, q) == GPUHAL_SUCCESS);
}

// Each thread keeps the context it looked up last (find_context): a context
// destroyed since is refused, also from a thread whose last lookup was it,
// and a new context (at the same address or not) is found as itself.
TEST_CASE("the host plugin refuses a destroyed context's handle that a thread looked up last", "[hostmem][handles]") {
  Context keep = test::host_context();
  RawHostContext raw;  // for the table
  const gpuhal_plugin_table_t *t = raw.table;
  for (int round = 0; round < 8; ++round) {
    gpuhal_context_t ctx = nullptr;
    REQUIRE(t->context_create(0, &ctx) == GPUHAL_SUCCESS);
    CHECK(t->context_synchronize(ctx) == GPUHAL_SUCCESS);  // this thread's last lookup
    std::thread([&] { CHECK(t->context_synchronize(ctx) == GPUHAL_SUCCESS); }).join();
    REQUIRE(t->context_destroy(ctx) == GPUHAL_SUCCESS);
    CHECK(t->context_synchronize(ctx) != GPUHAL_SUCCESS);
    gpuhal_deviceptr_t p = 0;
    CHECK(t->mem_alloc(ctx, 64, &p) != GPUHAL_SUCCESS);
    CHECK(t->context_destroy(ctx) != GPUHAL_SUCCESS);
  }
  CHECK(t->context_synchronize(raw.ctx) == GPUHAL_SUCCESS);
}

namespace {
struct SlowWrite {
  std::atomic<bool> started{false};
  uint8_t *target = nullptr;
  uint8_t value = 0;
};
void slow_write(void *user, gpuhal_status_t status) {
  auto *w = static_cast<SlowWrite *>(user);
  w->started.store(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  if (status == GPUHAL_SUCCESS) std::memset(w->target, w->value, 4096);
}
struct CopyFromCallback {
  const gpuhal_plugin_table_t *table = nullptr;
  gpuhal_context_t ctx = nullptr;
  gpuhal_deviceptr_t dst = 0;
  const uint8_t *src = nullptr;
  gpuhal_status_t result = GPUHAL_SUCCESS;
};
void copy_from_callback(void *user, gpuhal_status_t) {
  auto *c = static_cast<CopyFromCallback *>(user);
  c->result = c->table->memcpy_sync(c->ctx, GPUHAL_COPY_HOST_TO_DEVICE, c->dst, gpuhal_deviceptr_t(uintptr_t(c->src)), 64);
}
}  // namespace

// A small synchronous copy that repeats the thread's last one (same
// context, same allocation, this thread holding the context's inline bias)
// skips the long path's lookups; every check of the long path must still
// hold on it: an unknown kind, a range past the allocation, a copy from a
// stream's callback, another context's handle, and the order after work
// queued on a blocking stream.
TEST_CASE("the host plugin's repeated small copy keeps every check of the first", "[hostmem][ranges]") {
  Context keep = test::host_context();
  RawHostContext raw;
  const gpuhal_plugin_table_t *t = raw.table;
  gpuhal_context_t ctx = raw.ctx;
  std::vector<uint8_t> src(4096, 7), back(4096, 0);
  const auto host_src = gpuhal_deviceptr_t(uintptr_t(src.data()));
  const auto host_back = gpuhal_deviceptr_t(uintptr_t(back.data()));
  gpuhal_deviceptr_t a = 0;
  REQUIRE(t->mem_alloc(ctx, 4096, &a) == GPUHAL_SUCCESS);
  auto warm = [&] {  // the context, the range and the bias, all this thread's
    for (int i = 0; i < 3; ++i)
      REQUIRE(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, host_src, 4096) == GPUHAL_SUCCESS);
  };
  warm();
  CHECK(t->memcpy_sync(ctx, 7u, a, host_src, 4096) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, 0, 4096) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a + 1, host_src, 4096) == GPUHAL_ERROR_INVALID_VALUE);
  // Device to host, then device to device within the one allocation.
  warm();
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host_back, a, 4096) == GPUHAL_SUCCESS);
  CHECK(back == src);
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host_back, a + 1, 4096) == GPUHAL_ERROR_INVALID_VALUE);
  CHECK(t->memset_sync(ctx, a, 9, 16) == GPUHAL_SUCCESS);
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, a + 2048, a, 16) == GPUHAL_SUCCESS);
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host_back, a + 2048, 16) == GPUHAL_SUCCESS);
  CHECK(std::all_of(back.begin(), back.begin() + 16, [](uint8_t v) { return v == 9; }));
  CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_DEVICE, a + 2048, a, 2049) == GPUHAL_ERROR_INVALID_VALUE);

  SECTION("from a stream's callback: refused, as a wait there would wait for itself") {
    warm();
    CopyFromCallback cb{t, ctx, a, src.data(), GPUHAL_SUCCESS};
    REQUIRE(t->stream_add_callback(ctx, nullptr, copy_from_callback, &cb) == GPUHAL_SUCCESS);
    REQUIRE(t->context_synchronize(ctx) == GPUHAL_SUCCESS);
    CHECK(cb.result == GPUHAL_ERROR_INVALID_VALUE);
  }
  SECTION("another context's handle, and a destroyed one") {
    gpuhal_context_t other = nullptr;
    REQUIRE(t->context_create(0, &other) == GPUHAL_SUCCESS);
    warm();
    // The plugin checks ranges, not owners (unified addressing): the copy
    // runs in the other context, which resolves as itself.
    CHECK(t->memcpy_sync(other, GPUHAL_COPY_HOST_TO_DEVICE, a, host_src, 64) == GPUHAL_SUCCESS);
    REQUIRE(t->context_destroy(other) == GPUHAL_SUCCESS);
    CHECK(t->memcpy_sync(other, GPUHAL_COPY_HOST_TO_DEVICE, a, host_src, 64) == GPUHAL_ERROR_INVALID_HANDLE);
    CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_HOST_TO_DEVICE, a, host_src, 64) == GPUHAL_SUCCESS);
  }
  SECTION("after work queued on a blocking stream: the copy waits for it") {
    gpuhal_stream_t s = nullptr;
    REQUIRE(t->stream_create(ctx, GPUHAL_STREAM_DEFAULT, &s) == GPUHAL_SUCCESS);
    for (int round = 0; round < 3; ++round) {
      warm();
      SlowWrite w;
      w.target = reinterpret_cast<uint8_t *>(uintptr_t(a));
      w.value = uint8_t(40 + round);
      REQUIRE(t->stream_add_callback(ctx, s, slow_write, &w) == GPUHAL_SUCCESS);
      while (!w.started.load()) std::this_thread::yield();
      // The legacy default stream's copy is ordered after the blocking
      // stream's work: it reads what the callback writes.
      CHECK(t->memcpy_sync(ctx, GPUHAL_COPY_DEVICE_TO_HOST, host_back, a, 4096) == GPUHAL_SUCCESS);
      CHECK(std::all_of(back.begin(), back.end(), [&](uint8_t v) { return v == w.value; }));
    }
    CHECK(t->stream_destroy(ctx, s) == GPUHAL_SUCCESS);
  }
  CHECK(t->mem_free(ctx, a) == GPUHAL_SUCCESS);
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Memory managers: the EMM v1 interface, the default and pool managers,
// set_memory_manager, and a manager shared object chosen with
// GPUHAL_MEMORY_MANAGER.
#include <dlfcn.h>
#include <stdlib.h>

#include <atomic>
#include <set>
#include <thread>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

struct CountingStats {
  uint64_t creates, destroys, initializes, allocs, frees, resets, defer_begins, defer_ends, live;
  uint64_t alloc_before_initialize;
};

std::string manager_library(const char *name) {
  return std::string(GPUHAL_TEST_FAKES_DIR) + "/libgpuhal-mm-" + name + ".so";
}

// The counters of the loaded counting manager (already loaded by the core).
CountingStats counting_stats() {
  void *h = dlopen(manager_library("counting").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  auto fn = reinterpret_cast<void (*)(CountingStats *)>(dlsym(h, "counting_mm_stats"));
  REQUIRE(fn);
  CountingStats s{};
  fn(&s);
  dlclose(h);
  return s;
}

bool counting_owns(gpuhal::DevicePointer p) {
  void *h = dlopen(manager_library("counting").c_str(), RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(h);
  auto fn = reinterpret_cast<int (*)(gpuhal::DevicePointer)>(dlsym(h, "counting_mm_owns"));
  REQUIRE(fn);
  const bool owned = fn(p) != 0;
  dlclose(h);
  return owned;
}

// A runtime configured from the environment, as an application gets it.
Runtime runtime_from_environment(const std::string &manager) {
  setenv("GPUHAL_BACKEND", "host", 1);
  setenv("GPUHAL_PLUGIN_PATH", GPUHAL_TEST_LIB_DIR, 1);
  setenv("GPUHAL_MEMORY_MANAGER", manager.c_str(), 1);
  return Runtime::load(Config::from_environment());
}

// A C++ manager that counts and can misbehave.
struct TestManager : DefaultMemoryManager {
  static std::atomic<int> allocs;
  int version = kInterfaceVersion;
  bool short_change = false;
  int interface_version() const override { return version; }
  std::string name() const override { return "test"; }
  DeviceMemory memalloc(uint64_t bytes) override {
    ++allocs;
    return DefaultMemoryManager::memalloc(short_change ? bytes / 2 : bytes);
  }
};
std::atomic<int> TestManager::allocs{0};

struct ClearManager {
  ~ClearManager() { clear_memory_manager(); }
};

}  // namespace

TEST_CASE("a memory manager shared object chosen by GPUHAL_MEMORY_MANAGER serves every allocation") {
  Runtime rt = runtime_from_environment(manager_library("counting"));
  Context ctx = rt.device(0).primary_context();
  CHECK(ctx.memory_manager().name() == "counting");
  CountingStats s0 = counting_stats();
  CHECK(s0.creates == 1);
  CHECK(s0.initializes == 1);
  {
    std::vector<float> v(100, 1.5f);
    std::vector<DeviceArray> arrays;
    arrays.push_back(device_array(ctx, {10, 10}));
    arrays.push_back(to_device(ctx, HostView::of(v)));
    arrays.push_back(device_array_like(arrays[1]));
    arrays.push_back(DeviceArray(ctx.allocate(64), Layout::make({8}, 8), dtypes::float64));
    MirroredArray m = MirroredArray::from_host(ctx, HostArray::empty({4}, dtypes::int32));
    arrays.push_back(m.get_device());
    for (const auto &a : arrays) CHECK(counting_owns(a.memory().device_pointer()));
    const CountingStats s1 = counting_stats();
    CHECK(s1.allocs == arrays.size());
    CHECK(s1.alloc_before_initialize == 0);
    CHECK(s1.live == arrays.size());
    // Transfers work on the manager's memory.
    CHECK(arrays[1].copy_to_host().to_vector<float>() == v);
    {
      DeferCleanup defer(ctx);
      DeferCleanup nested(ctx);
    }
    CHECK(counting_stats().defer_begins == 2);
    CHECK(counting_stats().defer_ends == 2);
    const MemoryInfo info = ctx.memory_info();  // forwarded to the library
    CHECK(info.total == rt.device(0).properties().total_memory);
  }
  const CountingStats s2 = counting_stats();
  CHECK(s2.frees == s2.allocs);  // every last handle went back to the library
  CHECK(s2.live == 0);

  SECTION("reset calls reset then initialize; memory of the old context is not freed twice") {
    DeviceArray before = device_array(ctx, {16});
    ctx.reset();
    const CountingStats s3 = counting_stats();
    CHECK(s3.resets == 1);
    CHECK(s3.initializes == 2);
    CHECK(s3.live == 0);
    before = DeviceArray();  // dropped after the reset: no memfree
    CHECK(counting_stats().frees == s3.frees);
    DeviceArray after = device_array(ctx, {16});
    CHECK(counting_owns(after.memory().device_pointer()));
  }
}

TEST_CASE("GPUHAL_MEMORY_MANAGER refuses bad libraries clearly") {
  SECTION("another interface version") {
    REQUIRE_GPUHAL_ERROR(runtime_from_environment(manager_library("version2")), Status::ERROR_INVALID_CONFIG,
                         "the memory manager interface has version 2 - version 1 required");
  }
  SECTION("a manager whose negotiation succeeds without a table") {
    REQUIRE_GPUHAL_ERROR(runtime_from_environment(manager_library("nulltable")), Status::ERROR_INVALID_CONFIG,
                         "negotiation returned success but no table");
  }
  SECTION("a library that is no memory manager") {
    REQUIRE_GPUHAL_ERROR(runtime_from_environment(test::fake("good")), Status::ERROR_INVALID_CONFIG,
                         "does not export gpuhal_memory_manager_negotiate");
  }
  SECTION("a missing file") {
    REQUIRE_GPUHAL_ERROR(runtime_from_environment("/nonexistent/libmm.so"), Status::ERROR_INVALID_CONFIG,
                         "GPUHAL_MEMORY_MANAGER=/nonexistent/libmm.so: cannot be loaded");
  }
  SECTION("a relative path or an unknown name") {
    REQUIRE_GPUHAL_ERROR(runtime_from_environment("libmm.so"), Status::ERROR_INVALID_CONFIG,
                         "expected default, pool, an absolute path");
    for (const char *bad : {"mod:", ":Cls", "a:b:c", "a..b:C", "pkg.mod:Cls.sub", "1mod:C", "mod:C-1"}) {
      INFO(bad);
      REQUIRE_GPUHAL_ERROR(runtime_from_environment(bad), Status::ERROR_INVALID_CONFIG, "module:Class");
    }
  }
  SECTION("module:Class names a Python EMM plugin: the core keeps its default manager") {
    for (const char *name : {"rmm_like:PoolManager", "pkg.sub_mod:Manager2", "_m:_C"}) {
      INFO(name);
      CHECK(runtime_from_environment(name).device(0).primary_context().memory_manager().name() == "default");
    }
  }
  SECTION("the built-in names") {
    CHECK(runtime_from_environment("pool").device(0).primary_context().memory_manager().name() == "pool");
    CHECK(runtime_from_environment("default").device(0).primary_context().memory_manager().name() == "default");
  }
}

TEST_CASE("set_memory_manager affects contexts created later and checks the version") {
  ClearManager clear;
  Runtime rt = test::host_runtime();
  Context before = rt.device(0).primary_context();
  CHECK(before.memory_manager().name() == "default");
  set_memory_manager({"test", 1, [] { return std::make_unique<TestManager>(); }});
  CHECK(before.memory_manager().name() == "default");  // unchanged for the live context
  // A new runtime makes new contexts: they get the new manager.
  Context fresh = test::host_runtime().device(0).primary_context();
  CHECK(fresh.memory_manager().name() == "test");
  const int n = TestManager::allocs.load();
  DeviceArray a = device_array(fresh, {3});
  CHECK(TestManager::allocs.load() == n + 1);

  REQUIRE_GPUHAL_ERROR(set_memory_manager({"v2", 2, [] { return std::make_unique<TestManager>(); }}),
                       Status::ERROR_ABI_MISMATCH, "has interface version 2 - version 1 required");
  REQUIRE_GPUHAL_ERROR(set_memory_manager({"empty", 1, nullptr}), Status::ERROR_INVALID_VALUE, "makes nothing");
}

TEST_CASE("Context::set_memory_manager replaces a live context's manager and the old one's memory stays valid") {
  Context ctx = test::host_context();
  DeviceArray old_memory = to_device(ctx, HostView::of(std::vector<int32_t>(64, 7)));
  const int n = TestManager::allocs.load();
  ctx.set_memory_manager(std::make_unique<TestManager>());
  CHECK(ctx.memory_manager().name() == "test");
  DeviceArray fresh = device_array(ctx, {16}, dtypes::int32);
  CHECK(TestManager::allocs.load() == n + 1);
  CHECK(old_memory.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(64, 7));
  old_memory = DeviceArray();  // goes back to the retired default manager
  ctx.flush_deallocations();
  ctx.reset();  // every manager is reset, the new one stays
  CHECK(ctx.memory_manager().name() == "test");
  CHECK_NOTHROW(device_array(ctx, {4}));
  ctx.set_memory_manager(std::make_unique<DefaultMemoryManager>());
  CHECK(ctx.memory_manager().name() == "default");

  auto v2 = std::make_unique<TestManager>();
  v2->version = 2;
  REQUIRE_GPUHAL_ERROR(ctx.set_memory_manager(std::move(v2)), Status::ERROR_ABI_MISMATCH,
                       "has interface version 2 - version 1 required");
  REQUIRE_GPUHAL_ERROR(ctx.set_memory_manager(nullptr), Status::ERROR_INVALID_VALUE, "null manager");
  REQUIRE_GPUHAL_ERROR(Context().set_memory_manager(std::make_unique<TestManager>()), Status::ERROR_INVALID_HANDLE,
                       "set_memory_manager");
  CHECK(ctx.memory_manager().name() == "default");  // refusals change nothing
}

TEST_CASE("a memory manager that lies is caught") {
  ClearManager clear;
  SECTION("its instance reports another interface version") {
    set_memory_manager({"liar", 1, [] {
                          auto m = std::make_unique<TestManager>();
                          m->version = 3;
                          return m;
                        }});
    REQUIRE_GPUHAL_ERROR(test::host_context(), Status::ERROR_ABI_MISMATCH, "version 3 - version 1 required");
  }
  SECTION("it returns less memory than asked for") {
    set_memory_manager({"short", 1, [] {
                          auto m = std::make_unique<TestManager>();
                          m->short_change = true;
                          return m;
                        }});
    Context ctx = test::host_context();
    REQUIRE_GPUHAL_ERROR(device_array(ctx, {100}), Status::ERROR_INVALID_VALUE, "memory manager 'test' returned");
  }
  SECTION("allocation arguments are checked before the manager sees them") {
    set_memory_manager({"test", 1, [] { return std::make_unique<TestManager>(); }});
    Context ctx = test::host_context();
    const int n = TestManager::allocs.load();
    REQUIRE_GPUHAL_ERROR(ctx.allocate(0), Status::ERROR_INVALID_VALUE, "positive");
    REQUIRE_GPUHAL_ERROR(ctx.allocate(UINT64_MAX), Status::ERROR_SIZE_OVERFLOW, "largest size");
    CHECK(TestManager::allocs.load() == n);
  }
}

TEST_CASE("the pool manager reuses blocks by size class") {
  ClearManager clear;
  set_memory_manager(pool_memory_manager({uint64_t(1) << 20, uint64_t(4) << 20}));
  Context ctx = test::host_context();
  auto &pool = dynamic_cast<PoolMemoryManager &>(ctx.memory_manager());
  gpuhal::DevicePointer first;
  {
    DeviceArray a = device_array(ctx, {125});  // 1000 bytes: the 1 KiB class
    first = a.device_pointer();
    CHECK(pool.stats().in_use_bytes == 1024);
  }
  CHECK(pool.stats().cached_bytes == 1024);
  CHECK(pool.stats().in_use_bytes == 0);
  {
    DeviceArray b = device_array(ctx, {100});  // 800 bytes: same class, same block
    CHECK(b.device_pointer() == first);
    CHECK(pool.stats().hits == 1);
    DeviceArray c = device_array(ctx, {1000});  // 8000 bytes: another class
    CHECK(c.device_pointer() != first);
    CHECK(pool.stats().misses == 2);
    // The data of a reused block is the caller's to initialise; it works.
    std::vector<double> v(100, 2.0);
    b.copy_from_host(HostView::of(v));
    CHECK(b.copy_to_host().to_vector<double>() == v);
  }
  SECTION("requests above max_block_bytes bypass the cache") {
    { DeviceArray big = device_array(ctx, {(2 << 20) / 8}); }
    CHECK(pool.stats().cached_bytes == 1024 + 8192);
  }
  SECTION("cached bytes over the limit go back to the backend, not inside DeferCleanup") {
    std::vector<DeviceArray> blocks;
    for (int i = 0; i < 6; ++i) blocks.push_back(device_array(ctx, {(1 << 20) / 8}));
    {
      DeferCleanup defer(ctx);
      blocks.clear();
      CHECK(pool.stats().released == 0);
      CHECK(pool.stats().cached_bytes > (uint64_t(4) << 20));
    }
    DeviceArray again = device_array(ctx, {16});
    again = DeviceArray();  // a release outside the scope trims
    CHECK(pool.stats().cached_bytes <= (uint64_t(4) << 20));
    CHECK(pool.stats().released >= 2);
  }
  SECTION("trim and reset") {
    CHECK(pool.trim() == 2);
    CHECK(pool.stats().cached_bytes == 0);
    DeviceArray kept = device_array(ctx, {125});
    ctx.reset();
    CHECK(pool.stats().in_use_bytes == 0);
    kept = DeviceArray();  // freed by the reset: does not come back
    CHECK(pool.stats().cached_bytes == 0);
    DeviceArray after = device_array(ctx, {125});
    CHECK(after.copy_to_host().size() == 125);
  }
  SECTION("IPC handles of pool blocks") {
    DeviceArray a = device_array(ctx, {4, 4}, dtypes::float32);
    const IpcArrayHandle h = get_ipc_handle(a);
    CHECK(h.memory.offset == 0);
    IpcArray opened = open_ipc_array(ctx, IpcArrayHandle::deserialize(h.serialize()));
    CHECK(opened.array().shape() == Shape{4, 4});
  }
}

TEST_CASE("the pool manager gives back its cache when the backend runs out of memory") {
  ClearManager clear;
  set_memory_manager(pool_memory_manager({uint64_t(1) << 20, uint64_t(8) << 20}));
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "1M"}});
  auto &pool = dynamic_cast<PoolMemoryManager &>(ctx.memory_manager());
  { DeviceArray half = device_array(ctx, {(512 << 10) / 8}); }  // cached: 512 KiB of the 1 MiB
  CHECK(pool.stats().cached_bytes == (512u << 10));
  DeviceArray whole = device_array(ctx, {(768 << 10) / 8});  // the 1 MiB class: needs the cache back
  CHECK(pool.stats().released == 1);
  CHECK(pool.stats().cached_bytes == 0);
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {1024}), Status::ERROR_OUT_OF_MEMORY, "mem_alloc");
}

// The pool's lock is biased to the first thread that takes it
// (biased_lock.hpp): blocks released on another thread (a consumer thread,
// Python's garbage collector) revoke the bias; no block may be lost or
// handed out twice on either side of that.
TEST_CASE("the pool manager: blocks made on one thread and released on another") {
  ClearManager clear;
  set_memory_manager(pool_memory_manager());
  Context ctx = test::host_context();
  auto &pool = dynamic_cast<PoolMemoryManager &>(ctx.memory_manager());
  std::vector<DeviceMemory> made;
  for (int i = 0; i < 64; ++i) made.push_back(ctx.allocate(4096));  // this thread takes the bias
  std::set<DevicePointer> pointers;
  for (const DeviceMemory &m : made) pointers.insert(m.device_pointer());
  CHECK(pointers.size() == 64);
  std::thread other([&] { made.clear(); });  // every release on another thread
  other.join();
  CHECK(pool.stats().in_use_bytes == 0);
  CHECK(pool.stats().cached_bytes == 64 * 4096);
  std::vector<DeviceMemory> again;
  for (int i = 0; i < 64; ++i) again.push_back(ctx.allocate(4096));
  std::set<DevicePointer> reused;
  for (const DeviceMemory &m : again) reused.insert(m.device_pointer());
  CHECK(reused == pointers);  // the same blocks, each handed out once
  CHECK(pool.stats().hits == 64);
}

TEST_CASE("the pool manager under concurrent allocation") {
  ClearManager clear;
  set_memory_manager(pool_memory_manager());
  Context ctx = test::host_context();
  auto &pool = dynamic_cast<PoolMemoryManager &>(ctx.memory_manager());
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      try {
        for (int i = 0; i < 500; ++i) {
          DeviceMemory m = ctx.allocate(uint64_t(256 << ((i + t) % 6)));
          if (m.size() == 0) ++errors;
        }
      } catch (...) {
        ++errors;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(errors == 0);
  CHECK(pool.stats().in_use_bytes == 0);
  CHECK(pool.stats().hits + pool.stats().misses == 2000);
}

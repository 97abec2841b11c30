// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin over the fake CUDA driver (tests/fakes/cuda/):
// the plugin's translation of every hook, fault injection (a failing driver
// call surfaces as a gpuhal error naming it; the context stays usable) and
// the out-of-memory retry.
#include <dlfcn.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstring>
#include <vector>
#include <thread>
#include <set>
#include <chrono>
#include <atomic>
#include <functional>

#include "fake_cuda_hooks.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using test::fake_pageable_h2d_bytes;

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN

namespace {

const char *const kNoopPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry noop(\n\t.param .u64 noop_param_0\n)\n{\n\tret;\n}\n";

// Faults must be set before the fake driver is loaded (it reads them once).
Runtime cuda_runtime(const char *faults = nullptr) {
  if (faults) setenv("FAKE_CUDA_FAIL", faults, 1);
  Config c;
  c.backend = "cuda";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
  return Runtime::load(c);
}

}  // namespace

// What every backend does (transfers, streams, events, host memory, IPC,
// reset...) is checked by the conformance suite over the fake driver
// (ctest conform.cuda_fake_driver); here, what is the cuda plugin's own.
TEST_CASE("cuda backend over the fake driver: a driver that fails cuDeviceGetUuid fails the load by that name") {
  REQUIRE_GPUHAL_ERROR(cuda_runtime("cuDeviceGetUuid_v2:1:1"), Status::ERROR_INVALID_VALUE, "cuDeviceGetUuid");
}

TEST_CASE("cuda backend over the fake driver: the device's properties and the plugin's IPC handles") {
  Runtime rt = cuda_runtime();
  REQUIRE(rt.backend_name() == "cuda");
  REQUIRE(rt.device_count() == 1);
  const DeviceProperties &p = rt.device(0).properties();
  CHECK(p.name == "gpuhal fake CUDA device");
  CHECK(p.vendor == "NVIDIA");
  CHECK(p.compute_major == 9);
  CHECK(p.warp_size == 32);
  CHECK(p.pci_bus == 0x41);
  // cuDeviceGetUuid (the fake's: "fake" then its fixed bytes, the ordinal + 1 last).
  CHECK(p.uuid_string() == "66616b65-1234-4567-89ab-000000000001");
  CHECK(rt.supports(Capability::StreamBarrier));
  CHECK(rt.supports(Capability::MappedHostMemory));
  CHECK(rt.supports(Capability::Ipc));
  Context ctx = rt.device(0).primary_context();
  CHECK(ctx.memory_info().total == p.total_memory);

  // A view's handle names the allocation (cuIpcGetMemHandle takes its base)
  // and carries the view's offset.
  std::vector<float> v(1000);
  DeviceArray d = to_device(ctx, HostView::of(v, {10, 100}));
  const IpcArrayHandle h = get_ipc_handle(d.view({Slice(5, 7)}));
  CHECK(h.memory.backend == "cuda");
  CHECK(h.memory.offset == 500 * sizeof(float));
  CHECK(h.memory.size == 2 * 100 * sizeof(float));  // the bytes of the view
}

TEST_CASE("cuda: the host-memory flags reach the driver as CUDA's flags") {
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  auto last_flags = test::fake_symbol<unsigned (*)(int)>("fake_cuda_last_host_flags");
  // cuda.h: CU_MEMHOSTALLOC_PORTABLE 0x01, _DEVICEMAP 0x02, _WRITECOMBINED 0x04;
  // CU_MEMHOSTREGISTER_PORTABLE 0x01, _DEVICEMAP 0x02.
  // Pinned and mapped arrays are gpuhal's pages, registered (they outlive
  // a reset under a live host array); write-combined ones the driver's.
  { HostArray a = pinned_array(ctx, {8}); }
  CHECK(last_flags(1) == 0x2u);
  { MappedArray m = mapped_array(ctx, {8}, dtypes::float32, {}, 'C', true, false); }
  CHECK(last_flags(1) == 0x3u);
  { MappedArray m = mapped_array(ctx, {8}, dtypes::float32, {}, 'C', true, true); }
  CHECK(last_flags(0) == 0x7u);
  { MappedArray m = mapped_array(ctx, {8}, dtypes::float32, {}, 'C', false, true); }
  CHECK(last_flags(0) == 0x6u);
  std::vector<float> v(64);
  { HostRegistration r = register_host(ctx, HostView::of(v), HostMemoryFlags{true, true, false}); }
  CHECK(last_flags(1) == 0x3u);
  { PinnedScope scope(ctx, {HostView::of(v)}); }
  CHECK(last_flags(1) == 0x2u);  // mapped: the device maps host memory (cudaHostRegisterDefault does the same)
}

TEST_CASE("cuda: a failing driver call names the call and leaves the context usable") {
  Runtime rt = cuda_runtime("cuMemcpyHtoD_v2:1:700,cuStreamCreate:1:2,cuEventRecord:1:400,cuMemFree_v2:2:999");
  Context ctx = rt.device(0).primary_context();
  std::vector<double> v(64, 1.0);
  const uint64_t free_before = ctx.memory_info().free;
  // An illegal address is what a faulting kernel leaves behind: a launch failure.
  REQUIRE_GPUHAL_ERROR(to_device(ctx, HostView::of(v)), Status::ERROR_LAUNCH_FAILED,
                       "cuMemcpyHtoD failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)");
  ctx.flush_deallocations();
  CHECK(ctx.memory_info().free == free_before);  // the failed transfer's allocation was freed
  CHECK(to_device(ctx, HostView::of(v)).copy_to_host().to_vector<double>() == v);

  REQUIRE_GPUHAL_ERROR(ctx.create_stream(), Status::ERROR_OUT_OF_MEMORY, "cuStreamCreate failed");
  Stream s = ctx.create_stream();
  Event e = ctx.create_event();
  REQUIRE_GPUHAL_ERROR(e.record(s), Status::ERROR_INVALID_HANDLE, "cuEventRecord failed: CUDA_ERROR_INVALID_HANDLE");
  e.record(s);
  e.synchronize();

  // A failing free during a flush goes to the error handler; the rest stay queued.
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const Error &err) { errors.push_back(err.what()); });
  { DeviceArray a = device_array(ctx, {8}), b = device_array(ctx, {8}); }
  ctx.flush_deallocations();
  REQUIRE(errors.size() == 1);
  CHECK_THAT(errors[0], test::contains("cuMemFree failed: CUDA_ERROR_UNKNOWN"));
  CHECK(ctx.pending_deallocations() >= 1);
  CHECK(ctx.flush_deallocations() >= 1);  // the driver works again
  CHECK(ctx.pending_deallocations() == 0);
}

TEST_CASE("cuda: every driver call that fails surfaces as an error naming it and nothing leaks") {
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  auto inject = test::fake_symbol<void (*)(const char *, long, int)>("fake_cuda_fail");
  auto clear = test::fake_symbol<void (*)()>("fake_cuda_clear_faults");
  std::vector<float> v(256, 1.0f);
  DeviceArray a = to_device(ctx, HostView::of(v)), b = device_array(ctx, {256}, dtypes::float32);
  Stream s = ctx.create_stream();
  Event e0 = ctx.create_event(), e1 = ctx.create_event();
  e0.record(s);
  e1.record(s);
  s.synchronize();
  const uint64_t free_before = ctx.memory_info().free;
  HostArray host = HostArray::empty({256}, dtypes::float32);
  const IpcArrayHandle ipc = get_ipc_handle(a);
  std::vector<std::string> released;  // failures of releases, via the error handler
  ctx.set_deallocation_error_handler([&](const Error &err) { released.push_back(err.what()); });
  struct Case {
    const char *symbol;  // the exported symbol that fails
    const char *named;   // the name in the message
    std::function<void()> action;
  };
  const std::vector<Case> cases = {
      {"cuMemAlloc_v2", "cuMemAlloc", [&] { device_array(ctx, {16}); }},
      {"cuMemcpyHtoD_v2", "cuMemcpyHtoD", [&] { b.copy_from_host(HostView::of(v)); }},
      {"cuMemcpyDtoH_v2", "cuMemcpyDtoH", [&] { a.copy_to_host(host); }},
      {"cuMemcpyDtoD_v2", "cuMemcpyDtoD", [&] { b.copy_from_device(a); }},
      {"cuMemsetD8_v2", "cuMemsetD8", [&] { b.memset(0); }},
      {"cuMemcpyHtoDAsync_v2", "cuMemcpyHtoDAsync", [&] { b.copy_from_host(HostView::of(v), s); }},
      {"cuMemcpyDtoHAsync_v2", "cuMemcpyDtoHAsync", [&] { a.copy_to_host(host, s); }},
      {"cuMemcpyDtoDAsync_v2", "cuMemcpyDtoDAsync", [&] { b.copy_from_device(a, s); }},
      {"cuMemsetD8Async", "cuMemsetD8Async", [&] { b.memset(0, s); }},
      {"cuStreamCreate", "cuStreamCreate", [&] { ctx.create_stream(); }},
      {"cuStreamSynchronize", "cuStreamSynchronize", [&] { s.synchronize(); }},
      {"cuStreamQuery", "cuStreamQuery", [&] { s.query(); }},
      {"cuStreamWaitEvent", "cuStreamWaitEvent", [&] { s.wait(e0); }},
      {"cuLaunchHostFunc", "cuLaunchHostFunc", [&] { s.add_callback([] {}); }},
      {"cuEventCreate", "cuEventCreate", [&] { ctx.create_event(); }},
      {"cuEventRecord", "cuEventRecord", [&] { e0.record(s); }},
      {"cuEventSynchronize", "cuEventSynchronize", [&] { e0.synchronize(); }},
      {"cuEventQuery", "cuEventQuery", [&] { e0.query(); }},
      {"cuEventElapsedTime_v2", "cuEventElapsedTime", [&] { Event::elapsed_ms(e0, e1); }},
      {"cuCtxSynchronize", "cuCtxSynchronize", [&] { ctx.synchronize(); }},
      {"cuMemHostAlloc", "cuMemHostAlloc", [&] { mapped_array(ctx, {16}, dtypes::float64, {}, 'C', false, true); }},
      {"cuMemHostRegister_v2", "cuMemHostRegister", [&] { register_host(ctx, HostView::of(v)); }},
      {"cuMemHostGetDevicePointer_v2", "cuMemHostGetDevicePointer", [&] { mapped_array(ctx, {16}); }},
      {"cuIpcGetMemHandle", "cuIpcGetMemHandle", [&] { get_ipc_handle(b); }},
      {"cuIpcOpenMemHandle_v2", "cuIpcOpenMemHandle",
       [&] { open_ipc_array(ctx, IpcArrayHandle::deserialize(ipc.serialize())); }},
      {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", [&] { ctx.allocate_async(64, s); }},
      {"cuMemGetInfo_v2", "cuMemGetInfo", [&] { ctx.memory_info(); }},
      {"cuMemGetAddressRange_v2", "cuMemGetAddressRange", [&] { get_ipc_handle(b); }},
      {"cuCtxGetCurrent", "cuCtxGetCurrent", [&] { b.memset(0); }},
      {"cuCtxPushCurrent_v2", "cuCtxPushCurrent", [&] { b.memset(0); }},
      {"cuDeviceGet", "cuDeviceGet", [&] { cuda_runtime(); }},
      {"cuDeviceGetName", "cuDeviceGetName", [&] { cuda_runtime(); }},
      {"cuDeviceTotalMem_v2", "cuDeviceTotalMem", [&] { cuda_runtime(); }},
      {"cuDeviceGetAttribute", "cuDeviceGetAttribute", [&] { cuda_runtime(); }},
      {"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRetain", [&] { cuda_runtime().device(0).primary_context(); }},
      // Releases: reported to the deallocation error handler, not thrown.
      {"cuMemFree_v2", "cuMemFree",
       [&] {
         { DeviceArray t = device_array(ctx, {4}); }
         ctx.flush_deallocations();
       }},
      {"cuStreamDestroy_v2", "cuStreamDestroy",
       [&] {
         { Stream t = ctx.create_stream(); }
         ctx.flush_deallocations();
       }},
      {"cuEventDestroy_v2", "cuEventDestroy",
       [&] {
         { Event t = ctx.create_event(); }
         ctx.flush_deallocations();
       }},
      {"cuMemFreeHost", "cuMemFreeHost",
       [&] {
         { MappedArray t = mapped_array(ctx, {4}, dtypes::float64, {}, 'C', false, true); }
         ctx.flush_deallocations();
       }},
      {"cuMemHostUnregister", "cuMemHostUnregister", [&] { PinnedScope pin(ctx, {HostView::of(v)}); }},
      {"cuIpcCloseMemHandle", "cuIpcCloseMemHandle",
       [&] {
         { IpcArray o = open_ipc_array(ctx, IpcArrayHandle::deserialize(ipc.serialize())); }
         ctx.flush_deallocations();  // mappings close through the deferred queue
       }},
      {"cuMemFreeAsync", "cuMemFreeAsync", [&] { DeviceMemory m = ctx.allocate_async(64, s); }},
      // Device code, from a prebuilt PTX image (no NVRTC needed).
      {"cuModuleLoadDataEx", "cuModuleLoadDataEx",
       [&] { Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx)); }},
      {"cuModuleGetFunction", "cuModuleGetFunction",
       [&] { Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx)).kernel("noop"); }},
      {"cuFuncGetAttribute", "cuFuncGetAttribute",
       [&] { Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx)).kernel("noop")({1}, {1}, s)(b); }},
      {"cuLaunchKernel", "cuLaunchKernel",
       [&] { Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx)).kernel("noop")({1}, {1}, s)(b); }},
      {"cuModuleUnload", "cuModuleUnload",
       [&] {
         Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
         ctx.flush_deallocations();  // modules unload through the deferred queue
       }},
  };
  for (const auto &c : cases) {
    INFO("failing " << c.symbol);
    inject(c.symbol, 1, 999);
    released.clear();
    std::string seen;
    try {
      c.action();
      if (!released.empty()) seen = released.front();
    } catch (const Error &err) {
      CHECK(err.status() == Status::ERROR_DRIVER);
      seen = err.what();
    }
    CHECK_THAT(seen, test::contains(std::string(c.named) + " failed: CUDA_ERROR_UNKNOWN"));
    clear();
    // The context is still usable.
    b.copy_from_host(HostView::of(v));
    CHECK(b.copy_to_host().to_vector<float>() == v);
  }
  s.synchronize();
  ctx.flush_deallocations();
  // Nothing leaked on the device: what a failed release kept, the reset frees.
  ctx.reset();
  CHECK(ctx.memory_info().free == free_before + 2 * 1024);  // a and b went with the reset
  WARN(cases.size() << " driver entry points failed in turn");
}

TEST_CASE("cuda: out of memory from cuMemAlloc flushes the deferred queue and retries once, even with nothing pending") {
  Runtime rt = cuda_runtime("cuMemAlloc_v2:2:2,cuMemAlloc_v2:4:2,cuMemAlloc_v2:6:2,cuMemAlloc_v2:7:2");
  Context ctx = rt.device(0).primary_context();
  { DeviceArray first = device_array(ctx, {1024}); }  // call 1; its free is deferred
  REQUIRE(ctx.pending_deallocations() == 1);
  // Another size (the same one would take first's memory back, no call):
  DeviceArray second = device_array(ctx, {2048});  // call 2 fails: flush, call 3 succeeds
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(second.copy_to_host().size() == 2048);
  // Nothing pending: retried once all the same (Numba's rule: memory may
  // have come back by other ways): call 4 fails, call 5 succeeds.
  CHECK(device_array(ctx, {16}).size() == 16);
  // Both attempts fail (calls 6 and 7): the error names the call.
  REQUIRE_GPUHAL_ERROR(device_array(ctx, {16}), Status::ERROR_OUT_OF_MEMORY,
                       "cuMemAlloc failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory)");
}

TEST_CASE("cuda: released memory waits for the flush even on an idle context (the primary context is shared)") {
  // cuBLAS, CuPy or PyTorch may have work on the primary context that gpuhal
  // never saw: only cuCtxSynchronize (the flush's) proves memory unused.
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  CHECK_FALSE(rt.device(0).properties().exclusive_contexts);
  ctx.synchronize();
  DevicePointer first = 0;
  {
    DeviceMemory m = ctx.allocate(4096);
    first = m.device_pointer();
  }
  CHECK(ctx.pending_deallocations() == 1);
  DeviceMemory again = ctx.allocate(4096);
  CHECK(again.device_pointer() != first);  // a new cuMemAlloc: the old one is not freed yet
  CHECK(ctx.pending_deallocations() == 1);
  CHECK(ctx.flush_deallocations() == 1);
}

namespace {
// Releases `n` device allocations of `bytes`, one at a time.
void churn(const Context &ctx, int n, uint64_t bytes) {
  for (int i = 0; i < n; ++i) (void)ctx.allocate(bytes);
}
}  // namespace

// cuCtxSynchronize (cuda.h): "Blocks until the current context has completed
// all preceding requested tasks" -- every stream of the context, whichever
// library queued on it. So memory released while work may use it is unused
// once a flush's synchronise returns, and is reused from then on (a busy
// block, then a spare) instead of going back to cuMemFree and cuMemAlloc.
TEST_CASE("cuda: memory released under queued work is reused only after the flush over the limits synchronised") {
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  CHECK(rt.device(0).properties().synchronize_waits_for_all_work);
  ctx.flush_deallocations();
  ctx.set_pending_deallocation_limits(4, 1.0);
  auto live = test::fake_symbol<long (*)()>("fake_cuda_live_allocations");
  Stream s = ctx.create_stream();
  std::atomic<bool> go{false}, hold_over{false};
  s.add_callback([&] {
    while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    hold_over = true;
  });
  DevicePointer p = 0;
  {
    DeviceArray a = device_array(ctx, {1024}, dtypes::uint8);
    a.memset(1, s);  // queued behind the hold: the memory is in use when its handle goes
    p = a.memory().device_pointer();
  }
  CHECK(ctx.pending_deallocations() == 1);
  std::thread opener([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    go = true;
  });
  std::set<DevicePointer> made{p};
  for (int i = 0; i < 4; ++i) {
    DeviceMemory m = ctx.allocate(1024);
    made.insert(m.device_pointer());  // a pending block is never taken: new memory each time
  }  // the fifth release passes the count limit: the flush waits for the held stream
  CHECK(hold_over);
  opener.join();
  CHECK(made.size() == 5);
  CHECK(ctx.pending_deallocations() == 0);
  const long before = live();
  std::vector<DeviceMemory> again;
  for (int i = 0; i < 5; ++i) again.push_back(ctx.allocate(1024));
  CHECK(live() == before);  // all five from the spares, no cuMemAlloc
  std::set<DevicePointer> reused;
  for (const DeviceMemory &m : again) reused.insert(m.device_pointer());
  CHECK(reused == made);
  again.clear();  // past the limit again: spares once more
  CHECK(live() == before);
  ctx.flush_deallocations();  // an explicit flush gives everything back
  CHECK(live() == before - 5);
  ctx.set_pending_deallocation_limits(10, 1.0);
}

TEST_CASE("cuda: a failed synchronise leaves released memory pending, never reused") {
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  ctx.flush_deallocations();
  ctx.set_pending_deallocation_limits(2, 1.0);
  auto inject = test::fake_symbol<void (*)(const char *, long, int)>("fake_cuda_fail");
  auto clear = test::fake_symbol<void (*)()>("fake_cuda_clear_faults");
  auto live = test::fake_symbol<long (*)()>("fake_cuda_live_allocations");
  const long before = live();
  inject("cuCtxSynchronize", 1, 999);
  churn(ctx, 3, 4096);  // the third release's flush: its synchronise fails
  clear();
  CHECK(ctx.pending_deallocations() == 3);
  CHECK(live() == before + 3);
  const DeviceMemory fresh = ctx.allocate(4096);
  CHECK(live() == before + 4);  // nothing was a spare
  CHECK(ctx.flush_deallocations() == 3);
  CHECK(live() == before + 1);
  ctx.set_pending_deallocation_limits(10, 1.0);
}

TEST_CASE("cuda: memory another device may reach (peer access) is never reused") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);  // read when the fake driver loads (a process per test case)
  Runtime rt = cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  c1.flush_deallocations();
  c1.set_pending_deallocation_limits(2, 1.0);
  auto live = test::fake_symbol<long (*)()>("fake_cuda_live_allocations");
  c0.enable_peer_access(c1);  // c0's kernels may use c1's memory: c1's synchronise does not wait for them
  churn(c1, 3, 4096);         // past the limit: the flush frees them
  const long before = live();
  const DeviceMemory m = c1.allocate(4096);
  CHECK(live() == before + 1);
  c1.set_pending_deallocation_limits(10, 1.0);
}

namespace {
// A stream another library makes in device `ordinal`'s primary context
// (destroyed with the object).
struct ForeignCuStream {
  explicit ForeignCuStream(int ordinal) {
    REQUIRE(test::fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&context, ordinal) == 0);
    REQUIRE(test::fake_symbol<int (*)(void *)>("cuCtxPushCurrent_v2")(context) == 0);
    REQUIRE(test::fake_symbol<int (*)(void **, unsigned)>("cuStreamCreate")(&native, 0) == 0);
    void *popped = nullptr;
    REQUIRE(test::fake_symbol<int (*)(void **)>("cuCtxPopCurrent_v2")(&popped) == 0);
  }
  ~ForeignCuStream() {
    test::fake_symbol<int (*)(void *)>("cuCtxPushCurrent_v2")(context);
    test::fake_symbol<int (*)(void *)>("cuStreamDestroy_v2")(native);
    void *popped = nullptr;
    test::fake_symbol<int (*)(void **)>("cuCtxPopCurrent_v2")(&popped);
  }
  void *context = nullptr;
  void *native = nullptr;
};
}  // namespace

// An external stream of the context's own CUcontext (CuPy's and PyTorch's
// are, on the primary context) is waited for by cuCtxSynchronize, so
// memory released under work on it may still become a busy block; one of
// another context (here another device's) is not, and turns them off.
TEST_CASE("cuda: an external stream of the same context keeps busy blocks on and one of another context turns them off") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);  // read when the fake driver loads (a process per test case)
  Runtime rt = cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  Context ctx = rt.device(0).primary_context();
  ctx.flush_deallocations();
  ctx.set_pending_deallocation_limits(2, 1.0);
  auto live = test::fake_symbol<long (*)()>("fake_cuda_live_allocations");
  SECTION("the same context") {
    ForeignCuStream theirs(0);
    Stream wrapped = ctx.external_stream(static_cast<NativeStream>(theirs.native));
    {
      DeviceArray a = device_array(ctx, {4096}, dtypes::uint8);
      a.memset(3, wrapped);  // in use on their stream when its handle goes
    }
    churn(ctx, 2, 4096);  // past the limit: the flush synchronised, their stream included
    const long before = live();
    const DeviceMemory m = ctx.allocate(4096);
    CHECK(live() == before);  // a spare: no cuMemAlloc
  }
  SECTION("another context, used") {
    ForeignCuStream theirs(1);
    Stream wrapped = ctx.external_stream(static_cast<NativeStream>(theirs.native));
    try {
      device_array(ctx, {64}, dtypes::uint8).memset(1, wrapped);  // the first use asks (cuStreamGetCtx)
      wrapped.synchronize();
    } catch (const Error &) {  // the driver may refuse the stream: the answer was taken before the call
    }
    churn(ctx, 3, 4096);
    const long before = live();
    const DeviceMemory m = ctx.allocate(4096);
    CHECK(live() == before + 1);  // released memory was freed, never kept
  }
  SECTION("a dummy handle never used is never given to the driver") {
    // numba-cuda's test_external_stream_create wraps 0x12345678 and only
    // reads the handle back; cuStreamGetCtx on it would dereference it (the
    // fake aborts, fake_cuda.hpp lookup).
    Stream wrapped = ctx.external_stream(reinterpret_cast<NativeStream>(uintptr_t(0x12345678)));
    CHECK(wrapped.native_handle() == reinterpret_cast<NativeStream>(uintptr_t(0x12345678)));
    churn(ctx, 3, 4096);
    const long before = live();
    const DeviceMemory m = ctx.allocate(4096);
    CHECK(live() == before);  // busy blocks still on: nothing of gpuhal's is on that stream
  }
  ctx.synchronize();
  ctx.set_pending_deallocation_limits(10, 1.0);
}

TEST_CASE("cuda: a driver without devices and a stub driver") {
  SECTION("no device") {
    setenv("FAKE_CUDA_NO_DEVICE", "1", 1);
    Config c;
    c.backend = "cuda";
    c.plugin_path = {GPUHAL_TEST_LIB_DIR};
    c.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
    REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_NO_DEVICE, "cuda");
  }
  SECTION("stub") {
    setenv("FAKE_CUDA_STUB", "1", 1);
    REQUIRE_GPUHAL_ERROR(cuda_runtime(), Status::ERROR_DRIVER_NOT_LOADABLE, "CUDA_ERROR_STUB_LIBRARY");
  }
  SECTION("missing library") {
    Config c;
    c.backend = "cuda";
    c.plugin_path = {GPUHAL_TEST_LIB_DIR};
    c.set_option("GPUHAL_CUDA_DRIVER", "/nonexistent/libcuda.so.1");
    REQUIRE_GPUHAL_ERROR(Runtime::load(c), Status::ERROR_DRIVER_NOT_LOADABLE,
                         "/nonexistent/libcuda.so.1: cannot open shared object file");
  }
}

#endif

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
namespace {

// Captures what is written to stderr (the core's log) while alive.
struct StderrCapture {
  char path[64] = "/tmp/gpuhal-stderr-XXXXXX";
  int saved = -1, fd = -1;
  StderrCapture() {
    fd = mkstemp(path);
    fflush(stderr);
    saved = dup(2);
    dup2(fd, 2);
  }
  std::string text() {
    fflush(stderr);
    std::string s;
    char buf[4096];
    lseek(fd, 0, SEEK_SET);
    for (ssize_t n; (n = read(fd, buf, sizeof buf)) > 0;) s.append(buf, size_t(n));
    return s;
  }
  ~StderrCapture() {
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    close(fd);
    unlink(path);
  }
};

}  // namespace

TEST_CASE("cuda: faults in initialisation, context setup, teardown and peer calls are reported naming the call") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  // Held open so that faults set here are seen by the plugin's load of it.
  void *fake = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_LOCAL);
  REQUIRE(fake);
  auto inject = reinterpret_cast<void (*)(const char *, long, int)>(dlsym(fake, "fake_cuda_fail"));
  auto clear = reinterpret_cast<void (*)()>(dlsym(fake, "fake_cuda_clear_faults"));
  REQUIRE((inject && clear));
  int injected = 0;

  // Initialisation: the runtime cannot load, and says which call failed.
  for (const char *sym : {"cuInit", "cuDeviceGetCount"}) {
    INFO(sym);
    inject(sym, 1, 999);
    REQUIRE_GPUHAL_ERROR(cuda_runtime(), Status::ERROR_INITIALIZATION_FAILED, std::string(sym) + " failed");
    clear();
    ++injected;
  }
  // Informational and tuning calls: warned about, and everything works.
  // (A failed cuMemPoolCreate leaves stream-ordered allocation to the
  // device's default pool, cuMemAllocAsync.)
  for (const char *sym : {"cuDriverGetVersion", "cuMemPoolCreate", "cuMemPoolSetAttribute"}) {
    INFO(sym);
    inject(sym, 1, 999);
    StderrCapture err;
    {
      Runtime rt = cuda_runtime();
      Context ctx = rt.device(0).primary_context();
      Stream s = ctx.create_stream();
      DeviceMemory m = ctx.allocate_async(256, s);
      s.synchronize();
    }
    CHECK_THAT(err.text(), test::contains(std::string(sym) + " failed: CUDA_ERROR_UNKNOWN"));
    clear();
    ++injected;
  }
  Runtime rt = cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  Context c0 = rt.device(0).primary_context(), c1 = rt.device(1).primary_context();
  // Peer calls.
  inject("cuDeviceCanAccessPeer", 1, 999);
  REQUIRE_GPUHAL_ERROR(rt.device(0).can_access_peer(rt.device(1)), Status::ERROR_DRIVER,
                       "cuDeviceCanAccessPeer failed");
  clear();
  inject("cuCtxEnablePeerAccess", 1, 999);
  REQUIRE_GPUHAL_ERROR(c0.enable_peer_access(c1), Status::ERROR_DRIVER, "cuCtxEnablePeerAccess failed");
  clear();
  CHECK(rt.device(0).can_access_peer(rt.device(1)));
  c0.enable_peer_access(c1);
  injected += 2;
  // A kernel's opt-in to more dynamic shared memory.
  Module m = Module::load(c0, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
  DeviceArray a = device_array(c0, {4});
  inject("cuFuncSetAttribute", 1, 999);
  REQUIRE_GPUHAL_ERROR(m.kernel("noop")({1}, {1}, c0.default_stream(), 100 * 1024)(a), Status::ERROR_DRIVER,
                       "cuFuncSetAttribute failed");
  clear();
  m.kernel("noop")({1}, {1}, c0.default_stream(), 100 * 1024)(a);
  ++injected;
  // Teardown: releasing the primary context fails; the failure is logged
  // and a new context of the device works.
  {
    StderrCapture err;
    inject("cuDevicePrimaryCtxRelease_v2", 1, 999);
    c1 = Context(nullptr);
    CHECK_THAT(err.text(), test::contains("cuDevicePrimaryCtxRelease failed"));
    clear();
    ++injected;
  }
  // The error translation's own calls: without the driver's name and text
  // the message still names the failing call and carries the CUresult.
  inject("cuGetErrorName", 1, 999);
  inject("cuGetErrorString", 1, 999);
  DeviceArray z = device_array(c0, {16});
  inject("cuMemsetD8_v2", 1, 999);
  REQUIRE_GPUHAL_ERROR(z.memset(0), Status::ERROR_DRIVER, "cuMemsetD8 failed: CUresult 999");
  clear();
  injected += 2;
  Context again = rt.device(1).primary_context();
  CHECK(to_device(again, HostView::of(std::vector<float>(4, 2.0f))).copy_to_host().to_vector<float>() ==
        std::vector<float>(4, 2.0f));
  WARN(injected << " initialisation, setup, peer, kernel and teardown call sites failed in turn");
  dlclose(fake);
}
TEST_CASE("cuda: pageable host-to-device copies of 16 MiB and more go through the plugin's pinned chunks") {
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  const size_t n = (size_t(40) << 20) + 12345;  // five chunks and a part, over three slots
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(i * 7 + (i >> 12));
  const std::vector<uint8_t> expect = v;
  Stream s = ctx.create_stream();
  const uint64_t before = fake_pageable_h2d_bytes();
  DeviceArray d = device_array(ctx, {int64_t(n)}, dtypes::uint8);
  d.copy_from_host(HostView::of(v), s);
  std::fill(v.begin(), v.end(), uint8_t(0));  // the call returned: the source may be reused at once
  s.synchronize();
  CHECK(d.copy_to_host().to_vector<uint8_t>() == expect);
  CHECK(fake_pageable_h2d_bytes() == before);  // nothing went through the driver's pageable path
  // Synchronous copies too, on the legacy default stream.
  d.copy_from_host(HostView::of(v));
  CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(n, 0));
  CHECK(fake_pageable_h2d_bytes() == before);
  // Below 16 MiB the driver's own path is used; pinned sources are copied directly.
  std::vector<uint8_t> small(1000, 5);
  CHECK(to_device(ctx, HostView::of(small)).copy_to_host().to_vector<uint8_t>() == small);
  CHECK(fake_pageable_h2d_bytes() == before + 1000);
  std::vector<uint8_t> under((size_t(16) << 20) - 1, 6);
  CHECK(to_device(ctx, HostView::of(under)).copy_to_host().to_vector<uint8_t>() == under);
  CHECK(fake_pageable_h2d_bytes() == before + 1000 + under.size());
  HostArray pinned = pinned_array(ctx, {int64_t(4) << 20}, dtypes::uint8);
  std::memset(pinned.data(), 9, size_t(4) << 20);
  d.view({Slice(0, int64_t(4) << 20)}).copy_from_host(pinned.view(), s);
  s.synchronize();
  CHECK(d.view({Slice(0, 8)}).copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(8, 9));
  CHECK(fake_pageable_h2d_bytes() == before + 1000 + under.size());
}

TEST_CASE("cuda: an event's time to itself is zero, or refused when the event does not time") {
  // Python's event_elapsed_time(e, e) hung over the fake driver, which
  // locked the one event's mutex twice.
  Runtime rt = cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  Stream s = ctx.create_stream();
  Event timed = ctx.create_event(true), untimed = ctx.create_event(false);
  timed.record(s);
  untimed.record(s);
  s.synchronize();
  CHECK(Event::elapsed_ms(timed, timed) == 0.0f);
  REQUIRE_GPUHAL_ERROR(Event::elapsed_ms(untimed, untimed), Status::ERROR_INVALID_HANDLE, "cuEventElapsedTime");
}

TEST_CASE("cuda: the native context and device are the driver's CUcontext and CUdevice") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);  // read when the fake driver loads (a process per test case)
  Runtime rt = cuda_runtime();
  REQUIRE(rt.device_count() >= 2);
  using Retain = int (*)(void **, int);
  using Release = int (*)(int);
  auto retain = test::fake_symbol<Retain>("cuDevicePrimaryCtxRetain");
  auto release = test::fake_symbol<Release>("cuDevicePrimaryCtxRelease_v2");
  for (int d = 0; d < 2; ++d) {
    Context ctx = rt.device(d).primary_context();
    CHECK(ctx.native_device() == uint64_t(d));
    void *primary = nullptr;
    REQUIRE(retain(&primary, d) == 0);
    CHECK(ctx.native_context() == primary);
    release(d);
  }
  CHECK(rt.device(0).primary_context().native_context() != rt.device(1).primary_context().native_context());
}

TEST_CASE("cuda: the device properties carry the driver's version") {
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);  // read when the fake driver loads (a process per test case)
  Runtime rt = cuda_runtime();
  CHECK(rt.device(0).properties().driver_version == "CUDA 12.4");
}

#endif

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The CUDA driver's documented contracts, held by the fake driver
// (tests/fakes/cuda/ quotes each rule from cuda.h) and kept by the
// cuda backend: PTX versus driver versions, sticky errors and their
// recovery, host functions, the caller's current context, IPC reference
// counts, the stream-ordered pool's reserve, external streams, the
// per-function dynamic shared memory limit, and the process's lifetime
// (docs/backends/cuda.md lists them with these tests).
//
// Each case runs in its own process (the fake reads its settings when it
// is loaded).
#include <dlfcn.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <thread>

#include "fake_cuda_hooks.hpp"
#include "free_race.hpp"
#include "test_support.hpp"

using namespace gpuhal;
using test::fake_symbol;

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN

namespace {

const char *const kNoopPtx =
    ".version 8.0\n.target sm_90\n.address_size 64\n"
    ".visible .entry noop(\n\t.param .u64 noop_param_0\n)\n{\n\tret;\n}\n";

const char *const kSaxpy = R"(
GPUHAL_KERNEL void saxpy(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, float a, int n) {
  const int i = (int)gpuhal_global_id(0);
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

// Kept loaded once found: unloading NVRTC leaks its runtime's buffers
// (the plugin loads the same library again and never unloads it either).
bool nvrtc13_installed() {
  return dlopen("libnvrtc.so.13", RTLD_NOW | RTLD_LOCAL) != nullptr;
}

void *current_cuda_context() {
  void *cur = reinterpret_cast<void *>(1);
  REQUIRE(fake_symbol<int (*)(void **)>("cuCtxGetCurrent")(&cur) == 0);
  return cur;
}

}  // namespace

// ---- 1. PTX versus driver version ----------------------------------------------------------

TEST_CASE("cuda contract: an NVRTC newer than the driver is not used, and the error names both versions",
          "[cuda][contract]") {
  if (!nvrtc13_installed()) {
    WARN("skipped: NVRTC 13 is not installed here");
    return;
  }
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);
  Context ctx = test::cuda_runtime().device(0).primary_context();
  try {
    Module m = Module::compile(ctx, kSaxpy);
    // An NVRTC 12 was found: its PTX must be one a 12.4 driver reads.
    CHECK_THAT(m.image(), !test::contains(".version 9."));
  } catch (const Error &e) {
    INFO(e.what());
    CHECK(e.status() == Status::ERROR_COMPILATION_FAILED);
    CHECK_THAT(e.what(), test::contains("CUDA 12.4"));
    CHECK_THAT(e.what(), test::contains("NVRTC 13.0"));
  }
}

TEST_CASE("cuda contract: PTX the driver is too old for is refused as UNSUPPORTED_TOOLCHAIN naming driver, NVRTC and "
          "architecture",
          "[cuda][contract]") {
  if (!nvrtc13_installed()) {
    WARN("skipped: NVRTC 13 is not installed here");
    return;
  }
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);
  Context ctx = test::cuda_runtime({{"GPUHAL_NVRTC", "libnvrtc.so.13"}}).device(0).primary_context();  // forced
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kSaxpy), Status::ERROR_UNSUPPORTED_TOOLCHAIN,
                       "CUDA_ERROR_UNSUPPORTED_PTX_VERSION");
  try {
    Module::compile(ctx, kSaxpy);
  } catch (const Error &e) {
    CHECK_THAT(e.what(), test::contains("CUDA 12.4 driver"));
    CHECK_THAT(e.what(), test::contains("NVRTC 13.0"));
    CHECK_THAT(e.what(), test::contains("compute_90"));
  }
  // The context is unharmed.
  auto a = to_device(ctx, HostView::of(std::vector<int>(4, 7)));
  CHECK(a.copy_to_host().to_vector<int>() == std::vector<int>(4, 7));
}

TEST_CASE("cuda contract: a device older than NVRTC supports is an error naming the architecture and NVRTC",
          "[cuda][contract]") {
  if (!nvrtc13_installed()) {
    WARN("skipped: NVRTC 13 is not installed here");
    return;
  }
  setenv("FAKE_CUDA_CC", "70", 1);  // Volta: NVRTC 13 dropped compute_70
  Context ctx = test::cuda_runtime().device(0).primary_context();
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kSaxpy), Status::ERROR_COMPILATION_FAILED,
                       "compute capability 7.0");
  try {
    Module::compile(ctx, kSaxpy);
  } catch (const Error &e) {
    CHECK_THAT(e.what(), test::contains("NVRTC 13.0"));
    CHECK_THAT(e.what(), test::contains("supports compute_75"));
  }
}

TEST_CASE("cuda contract: a device newer than NVRTC knows gets PTX for the newest architecture NVRTC has",
          "[cuda][contract]") {
  if (!nvrtc13_installed()) {
    WARN("skipped: NVRTC 13 is not installed here");
    return;
  }
  setenv("FAKE_CUDA_CC", "150", 1);  // a compute capability 15.0 no NVRTC 13.0 knows
  Context ctx = test::cuda_runtime().device(0).primary_context();
  Module m = Module::compile(ctx, kSaxpy);  // the driver JIT-compiles PTX for newer devices
  CHECK_THAT(m.image(), test::contains(".target sm_"));
  auto x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
  m.kernel("saxpy")({1}, {64})(y, x, 2.0f, 64);
  ctx.synchronize();
}

// With NVRTC 12 on the loader's path (ctest registers these [nvrtc12] cases
// with it, when scripts/fetch-nvrtc12.sh could fetch it; run without it they
// skip): the search picks the NVRTC of the driver's major.
namespace {
bool nvrtc12_installed() {
  return dlopen("libnvrtc.so.12", RTLD_NOW | RTLD_LOCAL) != nullptr;  // kept loaded (see above)
}
}  // namespace

TEST_CASE("cuda contract with NVRTC 12: the NVRTC of a CUDA 12 driver is found and its PTX loads", "[cuda][contract][nvrtc12]") {
  if (!nvrtc12_installed()) {
    WARN("skipped: NVRTC 12 is not on the loader's path");
    return;
  }
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);
  Context ctx = test::cuda_runtime().device(0).primary_context();
  Module m = Module::compile(ctx, kSaxpy);
  CHECK_THAT(m.image(), test::contains(".version 8.4"));
  auto x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
  m.kernel("saxpy")({1}, {64})(y, x, 2.0f, 64);
  ctx.synchronize();
}

TEST_CASE("cuda contract with NVRTC 12: NVRTC 12 compiles for Volta, which NVRTC 13 dropped", "[cuda][contract][nvrtc12]") {
  if (!nvrtc12_installed()) {
    WARN("skipped: NVRTC 12 is not on the loader's path");
    return;
  }
  setenv("FAKE_CUDA_DRIVER_VERSION", "12040", 1);
  setenv("FAKE_CUDA_CC", "70", 1);
  Context ctx = test::cuda_runtime().device(0).primary_context();
  Module m = Module::compile(ctx, kSaxpy);
  CHECK_THAT(m.image(), test::contains(".target sm_70"));
  auto x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
  m.kernel("saxpy")({1}, {64})(y, x, 2.0f, 64);
  ctx.synchronize();
}

TEST_CASE("cuda contract with NVRTC 12: NVRTC 12.4 PTX on a CUDA 12.2 driver is UNSUPPORTED_TOOLCHAIN naming both",
          "[cuda][contract][nvrtc12]") {
  if (!nvrtc12_installed()) {
    WARN("skipped: NVRTC 12 is not on the loader's path");
    return;
  }
  setenv("FAKE_CUDA_DRIVER_VERSION", "12020", 1);
  Context ctx = test::cuda_runtime().device(0).primary_context();
  REQUIRE_GPUHAL_ERROR(Module::compile(ctx, kSaxpy), Status::ERROR_UNSUPPORTED_TOOLCHAIN, "CUDA 12.2 driver");
  try {
    Module::compile(ctx, kSaxpy);
  } catch (const Error &e) {
    CHECK_THAT(e.what(), test::contains("NVRTC 12.4"));
    CHECK_THAT(e.what(), test::contains("PTX ISA 8.4"));
  }
}

// ---- 2. sticky errors ---------------------------------------------------------------------------

TEST_CASE("cuda contract: a kernel fault is sticky and LAUNCH_FAILED: an assert's is the context's until reset, "
          "the others the process's until it ends",
          "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  // cuda.h: every fault but CUDA_ERROR_ASSERT "leaves the process in an
  // inconsistent state ... the process must be terminated and relaunched".
  CHECK_FALSE(rt.supports(Capability::FaultRecovery));
  CHECK_FALSE(rt.device(0).properties().recovers_from_faults);
  auto fault_next_launch = fake_symbol<void (*)(int)>("fake_cuda_fault_next_launch");
  auto end_process = fake_symbol<void (*)()>("fake_cuda_end_process");
  const std::vector<float> v(256, 3.0f);
  const uint64_t free_before = ctx.memory_info().free;
  const std::pair<int, const char *> codes[] = {
      {700, "CUDA_ERROR_ILLEGAL_ADDRESS"},      {702, "CUDA_ERROR_LAUNCH_TIMEOUT"},
      {710, "CUDA_ERROR_ASSERT"},               {714, "CUDA_ERROR_HARDWARE_STACK_ERROR"},
      {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION"},  {716, "CUDA_ERROR_MISALIGNED_ADDRESS"},
      {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE"}, {718, "CUDA_ERROR_INVALID_PC"},
      {719, "CUDA_ERROR_LAUNCH_FAILED"}};
  for (const auto &code : codes) {
    INFO("CUresult " << code.first);
    Module m = Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
    // Looked up (and so loaded) before the stream is held: under lazy
    // loading a kernel's load may wait for queued work, the held stream's too.
    const Kernel noop = m.kernel("noop");
    DeviceArray live = to_device(ctx, HostView::of(v));
    Stream s = ctx.create_stream();
    // The stream waits (a host function) until the faulting kernel and the
    // callback behind it are both queued.
    std::atomic<bool> go{false};
    s.add_callback([&go] {
      while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    });
    fault_next_launch(code.first);
    noop.launch({1}, {32}, {KernelArg(uint64_t(0))}, s);
    // A callback behind the faulting kernel never runs; its capture is
    // released when the context is reset.
    auto token = std::make_shared<int>(0);
    std::atomic<bool> ran{false};
    s.add_callback([token, &ran] { ran = true; });
    go = true;
    const bool context_only = code.first == 710;
    REQUIRE_GPUHAL_ERROR(s.synchronize(), Status::ERROR_LAUNCH_FAILED, code.second);
    REQUIRE_GPUHAL_ERROR(s.synchronize(), Status::ERROR_LAUNCH_FAILED,
                         context_only ? "unusable until Context::reset()" : "until the process is restarted");
    // Every later call of the context reports it.
    REQUIRE_GPUHAL_ERROR(device_array(ctx, {4}), Status::ERROR_LAUNCH_FAILED, code.second);
    REQUIRE_GPUHAL_ERROR(live.copy_to_host(), Status::ERROR_LAUNCH_FAILED, code.second);
    REQUIRE_GPUHAL_ERROR(ctx.synchronize(), Status::ERROR_LAUNCH_FAILED, code.second);
    REQUIRE_GPUHAL_ERROR(s.add_callback([token] {}), Status::ERROR_LAUNCH_FAILED, "cuLaunchHostFunc");
    if (!context_only) {
      // The reset frees the old context's objects but cannot make a new one;
      // every use says so, until a new process (the fake's hook) and a reset.
      REQUIRE_GPUHAL_ERROR(ctx.reset(), Status::ERROR_LAUNCH_FAILED, "cuDevicePrimaryCtxRetain");
      CHECK_FALSE(ran);
      CHECK(token.use_count() == 1);
      REQUIRE_GPUHAL_ERROR(to_device(ctx, HostView::of(v)), Status::ERROR_LAUNCH_FAILED,
                           "Context::reset() could not make device 0's context anew");
      REQUIRE_GPUHAL_ERROR(ctx.reset(), Status::ERROR_LAUNCH_FAILED, code.second);  // still
      end_process();
    }
    ctx.reset();  // an assert's context is reset; after a process-wide fault, a "new process" starts
    CHECK_FALSE(ran);
    CHECK(token.use_count() == 1);
    CHECK(fake_symbol<int (*)(int)>("fake_cuda_sticky_error")(0) == 0);
    DeviceArray again = to_device(ctx, HostView::of(v));
    CHECK(again.copy_to_host().to_vector<float>() == v);
    Module m2 = Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
    m2.kernel("noop").launch({1}, {32}, {KernelArg(uint64_t(0))});
    ctx.synchronize();
  }
  ctx.flush_deallocations();
  CHECK(ctx.memory_info().free == free_before);  // nothing of the failed contexts is left
}

// ---- 3. host functions ----------------------------------------------------------------------------

TEST_CASE("cuda contract: gpuhal called inside a stream callback is refused with NOT_PERMITTED, never calling the "
          "driver there",
          "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  Stream s = ctx.create_stream();
  std::string what;
  Status status = Status::SUCCESS;
  s.add_callback([&] {
    try {
      (void)ctx.memory_info();
    } catch (const Error &e) {
      status = e.status();
      what = e.what();
    }
  });
  s.synchronize();
  CHECK(status == Status::ERROR_NOT_PERMITTED);
  CHECK_THAT(what, test::contains("stream callback"));
  // The stream and context go on.
  s.synchronize();
  CHECK(ctx.memory_info().total > 0);
}

TEST_CASE("cuda contract: device memory released inside a stream callback is freed later on a gpuhal thread",
          "[cuda][contract]") {
  Config cfg;
  cfg.backend = "cuda";
  cfg.plugin_path = {GPUHAL_TEST_LIB_DIR};
  cfg.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
  cfg.max_pending_deallocs_count = 1;  // a second pending release would flush
  Runtime rt = Runtime::load(cfg);
  Context ctx = rt.device(0).primary_context();
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const Error &e) { errors.push_back(e.what()); });
  const uint64_t free_before = ctx.memory_info().free;
  Stream s = ctx.create_stream();
  std::atomic<bool> go{false};
  s.add_callback([&go] {
    while (!go) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  });
  {
    DeviceArray a = device_array(ctx, {1 << 16}, dtypes::float32);
    DeviceArray b = device_array(ctx, {1 << 16}, dtypes::float32);
    s.add_callback([a, b] {});  // the last references die on the driver's thread
  }
  go = true;
  s.synchronize();
  CHECK(errors.empty());
  CHECK(ctx.pending_deallocations() == 2);  // queued there, not flushed there
  ctx.flush_deallocations();
  CHECK(errors.empty());
  CHECK(ctx.pending_deallocations() == 0);
  CHECK(ctx.memory_info().free == free_before);
}

// ---- 4. the caller's current context --------------------------------------------------------------

TEST_CASE("cuda contract: gpuhal leaves the calling thread's current context as it found it", "[cuda][contract]") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  // Another library's context (device 1's primary context) is current.
  void *other = nullptr;
  REQUIRE(fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&other, 1) == 0);
  REQUIRE(fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(other) == 0);
  Context ctx = rt.device(0).primary_context();
  CHECK(current_cuda_context() == other);
  std::vector<float> v(64, 1.5f);
  DeviceArray d = to_device(ctx, HostView::of(v));
  CHECK(current_cuda_context() == other);
  Stream s = ctx.create_stream();
  Event e = ctx.create_event();
  d.memset(0, s);
  e.record(s);
  e.synchronize();
  CHECK(current_cuda_context() == other);
  Module m = Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
  m.kernel("noop").launch({1}, {32}, {KernelArg(uint64_t(0))}, s);
  s.synchronize();
  CHECK(current_cuda_context() == other);
  CHECK(d.copy_to_host().to_vector<float>() == std::vector<float>(64, 0.0f));
  (void)ctx.memory_info();
  ctx.reset();
  CHECK(current_cuda_context() == other);
  // With nothing current, nothing is left current.
  REQUIRE(fake_symbol<int (*)(void *)>("cuCtxSetCurrent")(nullptr) == 0);
  REQUIRE(current_cuda_context() == nullptr);
  DeviceArray d2 = to_device(ctx, HostView::of(v));
  CHECK(d2.copy_to_host().to_vector<float>() == v);
  CHECK(current_cuda_context() == nullptr);
  fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2")(1);
}

// ---- 5. IPC reference counts ----------------------------------------------------------------------

TEST_CASE("cuda contract: one handle opened twice is two references, each closed once", "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  auto references = fake_symbol<long (*)()>("fake_cuda_ipc_open_references");
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const Error &e) { errors.push_back(e.what()); });
  DeviceArray d = to_device(ctx, HostView::of(std::vector<int>(100, 5)));
  // As if received from another process (the core refuses its own exports).
  const IpcArrayHandle h = IpcArrayHandle::deserialize(get_ipc_handle(d).serialize());
  {
    IpcArray first = open_ipc_array(ctx, h);
    IpcArray second = open_ipc_array(ctx, h);
    CHECK(references() == 2);
    CHECK(first.array().device_pointer() == second.array().device_pointer());
    first.close();
    ctx.flush_deallocations();  // mappings close through the deferred queue, after the work queued before
    CHECK(references() == 1);
    CHECK(second.array().copy_to_host().to_vector<int>() == std::vector<int>(100, 5));  // still mapped
  }
  ctx.flush_deallocations();
  CHECK(references() == 0);
  {
    IpcArray a = open_ipc_array(ctx, h), b = open_ipc_array(ctx, h);
    ctx.reset();  // closes both references
    CHECK(references() == 0);
  }
  CHECK(errors.empty());
}

namespace {
// An int32 array over `n` ints of stream-ordered memory, filled with `value`.
DeviceArray pooled_array(const Context &ctx, const Stream &s, int n, int value) {
  DeviceArray a(ctx.allocate_async(uint64_t(n) * 4, s), Layout::make({n}, 4), dtypes::int32);
  a.copy_from_host(HostView::of(std::vector<int>(size_t(n), value)), s);
  s.synchronize();  // cuda.h: imported memory "must not be accessed before the allocation operation completes"
  return a;
}
}  // namespace

// cuda.h: stream-ordered memory is shared as a pool's shareable descriptor
// (cuMemPoolExportToShareableHandle) plus each allocation's export data
// (cuMemPoolExportPointer); the importer imports the pool once and each
// pointer (cuMemPoolImportPointer), and frees imports with cuMemFree. The
// descriptor travels over the exporter's descriptor channel.
TEST_CASE("cuda contract: stream-ordered pool memory is shared through the pool's descriptor, each open one import "
          "freed once",
          "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  auto imports = fake_symbol<long (*)()>("fake_cuda_pool_imports");
  std::vector<std::string> errors;
  ctx.set_deallocation_error_handler([&](const Error &e) { errors.push_back(e.what()); });
  Stream s = ctx.create_stream();
  DeviceArray d = pooled_array(ctx, s, 1000, 7);
  // As if received from another process (the core refuses its own exports).
  const IpcArrayHandle h = IpcArrayHandle::deserialize(get_ipc_handle(d).serialize());
  SECTION("opened twice: one import, two references, the same memory both ways") {
    IpcArray first = open_ipc_array(ctx, h);
    IpcArray second = open_ipc_array(ctx, h);
    CHECK(imports() == 1);
    CHECK(first.array().device_pointer() == second.array().device_pointer());
    CHECK(first.array().copy_to_host().to_vector<int>() == std::vector<int>(1000, 7));
    first.array().copy_from_host(HostView::of(std::vector<int>(1000, 9)));
    CHECK(d.copy_to_host().to_vector<int>() == std::vector<int>(1000, 9));
    first.close();
    ctx.flush_deallocations();
    CHECK(imports() == 1);  // the second open still maps it
    second.close();
    ctx.flush_deallocations();
    CHECK(imports() == 0);  // freed with cuMemFree, once
    CHECK(d.copy_to_host().to_vector<int>() == std::vector<int>(1000, 9));  // the exporter's memory is untouched
  }
  SECTION("a view's handle maps the bytes it spans") {
    const DeviceArray tail = d.view({Slice(500, 1000)});
    const IpcArrayHandle hv = IpcArrayHandle::deserialize(get_ipc_handle(tail).serialize());
    IpcArray opened = open_ipc_array(ctx, hv);
    CHECK(opened.array().size() == 500);
    CHECK(opened.array().copy_to_host().to_vector<int>() == std::vector<int>(500, 7));
  }
  SECTION("the context's end frees what is still imported") {
    Runtime other = test::cuda_runtime();
    Context importer = other.device(0).primary_context();
    { IpcArray opened = open_ipc_array(importer, h); CHECK(imports() == 1); }
    CHECK(imports() == 1);  // the unmap waits in the deferred queue
    importer.reset();
    CHECK(imports() == 0);
  }
  SECTION("memory freed by the exporter is refused by name, before the driver sees it") {
    ctx.flush_deallocations();
    d = DeviceArray();
    ctx.flush_deallocations();
    s.synchronize();
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, h), Status::ERROR_INVALID_IPC_HANDLE, "no longer shares");
    // Another allocation at the same address is not the one the handle named.
    DeviceArray again = pooled_array(ctx, s, 1000, 1);
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, h), Status::ERROR_INVALID_IPC_HANDLE, "no longer shares");
    CHECK(imports() == 0);
  }
  SECTION("a handle naming a process that has ended is refused with the process named") {
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) _exit(0);
    REQUIRE(waitpid(child, nullptr, 0) == child);
    std::string text = get_ipc_handle(d).serialize();
    IpcArrayHandle forged = IpcArrayHandle::deserialize(text);
    uint32_t pid = uint32_t(child);
    std::memcpy(forged.memory.handle.bytes + 8, &pid, sizeof pid);
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, forged), Status::ERROR_INVALID_IPC_HANDLE,
                         "process " + std::to_string(child));
  }
  SECTION("a forged token is refused") {
    IpcArrayHandle forged = h;
    forged.memory.handle.bytes[16] ^= 0x5a;
    REQUIRE_GPUHAL_ERROR(open_ipc_array(ctx, forged), Status::ERROR_INVALID_IPC_HANDLE, "no longer shares");
  }
  CHECK(errors.empty());
}

TEST_CASE("cuda contract: where the device has no mempool IPC, stream-ordered memory is refused for export by name",
          "[cuda][contract]") {
  setenv("FAKE_CUDA_NO_POOL_IPC", "1", 1);
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  Stream s = ctx.create_stream();
  DeviceMemory pooled = ctx.allocate_async(4096, s);  // the pool is still made, without IPC
  REQUIRE_GPUHAL_ERROR(get_ipc_handle(pooled, 0, 4096), Status::ERROR_NOT_SUPPORTED, "allocate_async");
  REQUIRE_GPUHAL_ERROR(get_ipc_handle(pooled, 0, 4096), Status::ERROR_NOT_SUPPORTED, "MEMPOOL_SUPPORTED_HANDLE_TYPES");
  unsetenv("FAKE_CUDA_NO_POOL_IPC");
}

// ---- 6. the stream-ordered pool's reserve ---------------------------------------------------------

TEST_CASE("cuda contract: memory the stream-ordered pool holds counts as free and is trimmed before an allocation "
          "fails",
          "[cuda][contract]") {
  setenv("FAKE_CUDA_MEMORY", std::to_string(64 << 20).c_str(), 1);
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  // The context's own pool (cuMemPoolCreate): what it holds idle.
  auto created = fake_symbol<int (*)(int, uint64_t *, uint64_t *)>("fake_cuda_created_pools");
  auto pool_idle = [created](int d) {
    uint64_t idle = 0;
    created(d, &idle, nullptr);
    return idle;
  };
  const uint64_t free_before = ctx.memory_info().free;
  Stream s = ctx.create_stream();
  { DeviceMemory m = ctx.allocate_async(40 << 20, s); }
  ctx.flush_deallocations();
  s.synchronize();
  REQUIRE(pool_idle(0) > 0);  // the pool keeps it (up to its threshold)
  CHECK(ctx.memory_info().free == free_before);
  DeviceMemory big = ctx.allocate(48 << 20);  // needs what the pool holds
  CHECK(pool_idle(0) == 0);
  CHECK(big.size() >= (48u << 20));
}

// ---- 7. streams made outside gpuhal ----------------------------------------------------------------

TEST_CASE("cuda contract: an external CUstream works with every stream entry", "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  // Another library makes a stream in the device's primary context.
  void *primary = nullptr;
  REQUIRE(fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&primary, 0) == 0);
  REQUIRE(fake_symbol<int (*)(void *)>("cuCtxPushCurrent_v2")(primary) == 0);
  void *native = nullptr;
  REQUIRE(fake_symbol<int (*)(void **, unsigned)>("cuStreamCreate")(&native, 0) == 0);
  void *popped = nullptr;
  REQUIRE(fake_symbol<int (*)(void **)>("cuCtxPopCurrent_v2")(&popped) == 0);
  {
    Stream ext = ctx.external_stream(static_cast<gpuhal::NativeStream>(native));
    DeviceArray d = device_array(ctx, {256}, dtypes::uint8);
    d.memset(9, ext);
    ext.synchronize();
    CHECK(ext.query());
    std::atomic<int> calls{0};
    ext.add_callback([&] { ++calls; });
    Event e = ctx.create_event(), e2 = ctx.create_event();
    e.record(ext);
    Stream mine = ctx.create_stream();
    e2.record(mine);
    ext.wait(e2);
    ext.wait({e, e2});
    ext.wait_for_all_prior_work();
    mine.wait(e);
    Module m = Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
    m.kernel("noop").launch({1}, {32}, {KernelArg(uint64_t(0))}, ext);
    DeviceMemory pooled = ctx.allocate_async(1024, ext);
    ext.synchronize();
    CHECK(calls == 1);
    CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(256, 9));
    // A handle that is no stream at all is not checked: the driver
    // dereferences it and the process crashes (the fake aborts likewise,
    // fake_cuda.hpp). A null handle is refused before the driver sees it.
    REQUIRE_GPUHAL_ERROR(ctx.external_stream(nullptr), Status::ERROR_INVALID_HANDLE, "null handle");
  }
  ctx.synchronize();
  REQUIRE(fake_symbol<int (*)(void *)>("cuCtxPushCurrent_v2")(primary) == 0);
  CHECK(fake_symbol<int (*)(void *)>("cuStreamDestroy_v2")(native) == 0);
  REQUIRE(fake_symbol<int (*)(void **)>("cuCtxPopCurrent_v2")(&popped) == 0);
  fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2")(0);
}

// ---- 8. per-function dynamic shared memory ----------------------------------------------------------

TEST_CASE("cuda contract: launches of one kernel with different dynamic shared sizes from two threads never leave "
          "its limit too low",
          "[cuda][contract]") {
  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  Module m = Module::load(ctx, ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
  Kernel k = m.kernel("noop");
  // Thread A's opt-in to 60 KiB reaches the driver late, after thread B's 100 KiB.
  fake_symbol<void (*)(int, int)>("fake_cuda_slow_func_set_attribute")(60 * 1024, 300);
  std::thread a([&] { k.launch({1}, {32}, {KernelArg(uint64_t(0))}, 60 * 1024); });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  k.launch({1}, {32}, {KernelArg(uint64_t(0))}, 100 * 1024);
  a.join();
  k.launch({1}, {32}, {KernelArg(uint64_t(0))}, 100 * 1024);  // the limit must still allow it
  ctx.synchronize();
}

// ---- 9. process lifetime --------------------------------------------------------------------------

TEST_CASE("cuda contract: the driver is never unloaded, and a forked child gets a clear error instead of a hang",
          "[cuda][contract]") {
  {
    Runtime rt = test::cuda_runtime();
    (void)rt.device(0).primary_context().memory_info();
  }
  void *still = dlopen(GPUHAL_TEST_FAKE_CUDA, RTLD_NOW | RTLD_NOLOAD);
  CHECK(still != nullptr);  // its threads may still run: never dlclosed
  if (still) dlclose(still);

  Runtime rt = test::cuda_runtime();
  Context ctx = rt.device(0).primary_context();
  const std::vector<float> big(1 << 20, 1.0f);  // 4 MiB: a staged copy, through the copy threads
  DeviceArray d = to_device(ctx, HostView::of(big));
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    alarm(20);  // a hang ends the child with SIGALRM
    int rc = 3;
    try {
      (void)to_device(ctx, HostView::of(big));
    } catch (const Error &e) {
      // The core refuses objects of the parent first (ERROR_NOT_PERMITTED);
      // the plugin's own refusal (ERROR_NOT_SUPPORTED) backs it.
      rc = (e.status() == Status::ERROR_NOT_PERMITTED || e.status() == Status::ERROR_NOT_SUPPORTED) &&
                   std::strstr(e.what(), "fork")
               ? 0
               : 2;
    }
    _exit(rc);
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status));
  if (WIFEXITED(status)) CHECK(WEXITSTATUS(status) == 0);
  CHECK(d.copy_to_host().to_vector<float>() == big);  // the parent goes on
}

TEST_CASE("cuda contract: gpuhal works inside a context another library made and leaves it alive", "[cuda][contract]") {
  // Numba's third-party-context case: another library holds a CUcontext
  // (here it retains the primary context itself, through the driver); gpuhal
  // adopts it, works in it, and when its handles go it frees what it made
  // there and neither releases nor resets the other library's context.
  Runtime rt = test::cuda_runtime();
  auto retain = fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain");
  auto release = fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2");
  auto refs = fake_symbol<int (*)(int)>("fake_cuda_primary_refs");
  auto live = fake_symbol<long (*)()>("fake_cuda_live_allocations");
  void *theirs = nullptr;
  REQUIRE(retain(&theirs, 0) == 0);
  REQUIRE(refs(0) == 1);
  {
    Context ctx = Context::adopt(rt.device(0), theirs);
    CHECK(ctx.adopted());
    CHECK(ctx.native_context() == theirs);
    CHECK(refs(0) == 1);  // not retained again
    std::vector<float> v(1000, 2.0f);
    DeviceArray d = to_device(ctx, HostView::of(v));
    Stream s = ctx.create_stream();
    d.copy_to_host(HostView::of(v), s);
    s.synchronize();
    CHECK(live() == 1);
    REQUIRE_GPUHAL_ERROR(ctx.reset(), Status::ERROR_NOT_PERMITTED, "belongs to the library that made it");
  }
  CHECK(live() == 0);   // gpuhal's memory went with its context
  CHECK(refs(0) == 1);  // the other library's context did not
  // Its owner goes on using it, then lets it go.
  CHECK(release(0) == 0);
  CHECK(refs(0) == 0);
}

TEST_CASE("cuda contract: adopting what is not a context of the device is refused by name", "[cuda][contract][errors]") {
  setenv("FAKE_CUDA_DEVICES", "2", 1);  // read when the fake driver loads (a process per test case)
  Runtime rt = test::cuda_runtime();
  REQUIRE(rt.device_count() == 2);
  int bogus = 0;
  REQUIRE_GPUHAL_ERROR(Context::adopt(rt.device(0), &bogus), Status::ERROR_INVALID_VALUE, "not a live CUcontext");
  REQUIRE_GPUHAL_ERROR(Context::adopt(rt.device(0), nullptr), Status::ERROR_INVALID_VALUE, "null native context");
  auto retain = fake_symbol<int (*)(void **, int)>("cuDevicePrimaryCtxRetain");
  auto release = fake_symbol<int (*)(int)>("cuDevicePrimaryCtxRelease_v2");
  void *of_device_1 = nullptr;
  REQUIRE(retain(&of_device_1, 1) == 0);
  REQUIRE_GPUHAL_ERROR(Context::adopt(rt.device(0), of_device_1), Status::ERROR_INVALID_VALUE,
                       "belongs to device 1, not to device 0");
  CHECK(release(1) == 0);
  // Backends without such contexts say so.
  REQUIRE_GPUHAL_ERROR(Context::adopt(test::host_context().device(), &bogus), Status::ERROR_NOT_SUPPORTED,
                       "cannot adopt");
}

#endif

TEST_CASE("cuda contract: a free forgets its allocation before the driver may hand the address to another thread") {
  // cuMemFree then cuMemAlloc of the same size may return the same address
  // (the fake's allocator does, as the driver's suballocator does).
  test::OpenedPlugin p(std::string(GPUHAL_TEST_LIB_DIR) + "/libgpuhal-cuda.so",
                       {{"GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA}});
  std::string error;
  const int lost = test::lost_frees(p, 8, 3000, &error);
  INFO("the first failed mem_free: " << error);
  CHECK(lost == 0);
}

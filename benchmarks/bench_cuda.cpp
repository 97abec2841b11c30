// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Targets T1 (pinned copies), P1 (pageable copies, staged through pinned
// chunks), L1 (kernel launch submit cost), A1 on CUDA (pool hits against
// cuMemAlloc + cuMemFree), device alloc + release through the default
// manager, and a small to_device -> kernel -> copy_to_host round trip, each
// against the raw CUDA driver calls in the same binary, on the same context,
// stream and buffers.
//
//   GPUHAL_BACKEND=cuda build/bin/gpuhal-bench-cuda --benchmark_repetitions=10
//   --benchmark_enable_random_interleaving=true
//
// The raw calls go to the driver the plugin loaded (GPUHAL_CUDA_DRIVER or
// libcuda.so.1, found again with RTLD_NOLOAD). Without a GPU, CI runs this
// over the fake driver: the numbers then only show that the harness works.
// Bytes counted once per copy; copies are timed call + synchronize; launches
// as host time per submit over batches of 256 (drained outside the timing).
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace {

using CUresult = int;
using CUstream = void *;
using CUfunction = void *;
using CUmodule = void *;
using CUdeviceptr = unsigned long long;

const char *const kNoopPtx =
    ".version 7.0\n.target sm_52\n.address_size 64\n"
    ".visible .entry noop(\n\t.param .u64 noop_param_0\n)\n{\n\tret;\n}\n";

// increment(float *a, unsigned n): a[i] += 1 for i < n (what the Numba
// documentation's first kernel does), as PTX so that the round trip needs
// no compiler on the GPU machine (ptxas accepts it for sm_52 up).
const char *const kIncrementPtx = R"(.version 7.0
.target sm_52
.address_size 64
.visible .entry increment(.param .u64 increment_param_0, .param .u32 increment_param_1)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [increment_param_0];
  ld.param.u32 %r2, [increment_param_1];
  mov.u32 %r3, %ctaid.x;
  mov.u32 %r4, %ntid.x;
  mov.u32 %r5, %tid.x;
  mad.lo.s32 %r1, %r3, %r4, %r5;
  setp.ge.u32 %p1, %r1, %r2;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.u32 %rd3, %r1, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

// cuda.h's CUmemPoolProps (cuMemPoolCreate): a device-located pinned pool.
struct RawPoolProps {
  int allocType;
  int handleTypes;
  int location_type;
  int location_id;
  void *win32SecurityAttributes;
  size_t maxSize;
  unsigned short usage;
  unsigned char reserved[54];
};

struct Raw {
  CUresult (*cuMemPoolCreate)(void **, const RawPoolProps *) = nullptr;
  CUresult (*cuMemPoolSetAttribute)(void *, int, void *) = nullptr;
  CUresult (*cuMemAllocFromPoolAsync)(CUdeviceptr *, size_t, void *, CUstream) = nullptr;
  CUresult (*cuMemFreeAsync)(CUdeviceptr, CUstream) = nullptr;
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t) = nullptr;
  CUresult (*cuMemFree)(CUdeviceptr) = nullptr;
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t) = nullptr;
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t) = nullptr;
};

struct Env {
  explicit Env(const gpuhal::Context &c) : ctx(c), stream(c.create_stream()) {}
  gpuhal::Context ctx;
  gpuhal::Stream stream;
  Raw raw;
  gpuhal::Module module;
  gpuhal::Module increment_module;
  CUfunction raw_noop = nullptr;
  CUfunction raw_increment = nullptr;
};

template <class F>
void resolve(void *h, const char *name, F *out) {
  void *p = dlsym(h, name);
  if (!p) throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
  std::memcpy(out, &p, sizeof p);
}

// The environment's configuration with the cuda backend (the default here).
// Another backend named by GPUHAL_BACKEND is an error: the rows compare
// gpuhal with the raw driver's calls, which another backend has not got.
gpuhal::Config cuda_config() {
  gpuhal::Config c = gpuhal::Config::from_environment();
  if (c.backend.empty()) c.backend = "cuda";
  if (c.backend != "cuda")
    throw std::runtime_error("gpuhal-bench-cuda measures the cuda backend; GPUHAL_BACKEND is '" + c.backend + "'");
  return c;
}

Env &env() {
  static Env e = [] {
    Env v(gpuhal::Runtime::load(cuda_config()).device(0).primary_context());
    const char *path = std::getenv("GPUHAL_CUDA_DRIVER");
    void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) throw std::runtime_error("the CUDA driver the plugin loaded cannot be found again");
    resolve(h, "cuMemcpyHtoDAsync_v2", &v.raw.cuMemcpyHtoDAsync);
    resolve(h, "cuMemcpyDtoHAsync_v2", &v.raw.cuMemcpyDtoHAsync);
    resolve(h, "cuStreamSynchronize", &v.raw.cuStreamSynchronize);
    resolve(h, "cuModuleLoadDataEx", &v.raw.cuModuleLoadDataEx);
    resolve(h, "cuModuleGetFunction", &v.raw.cuModuleGetFunction);
    resolve(h, "cuLaunchKernel", &v.raw.cuLaunchKernel);
    resolve(h, "cuMemAlloc_v2", &v.raw.cuMemAlloc);
    resolve(h, "cuMemFree_v2", &v.raw.cuMemFree);
    resolve(h, "cuMemcpyHtoD_v2", &v.raw.cuMemcpyHtoD);
    resolve(h, "cuMemcpyDtoH_v2", &v.raw.cuMemcpyDtoH);
    resolve(h, "cuMemPoolCreate", &v.raw.cuMemPoolCreate);
    resolve(h, "cuMemPoolSetAttribute", &v.raw.cuMemPoolSetAttribute);
    resolve(h, "cuMemAllocFromPoolAsync", &v.raw.cuMemAllocFromPoolAsync);
    resolve(h, "cuMemFreeAsync", &v.raw.cuMemFreeAsync);
    v.module = gpuhal::Module::load(v.ctx, gpuhal::ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
    v.increment_module =
        gpuhal::Module::load(v.ctx, gpuhal::ImageFormat::Ptx, kIncrementPtx, std::strlen(kIncrementPtx));
    // The raw side sets up as a CUDA program does: device 0's primary
    // context (the one gpuhal uses) current on this thread. gpuhal leaves the
    // thread's current context alone, and finds its own current here.
    CUresult (*retain)(void **, int) = nullptr;
    CUresult (*set_current)(void *) = nullptr;
    resolve(h, "cuDevicePrimaryCtxRetain", &retain);
    resolve(h, "cuCtxSetCurrent", &set_current);
    void *primary = nullptr;
    if (retain(&primary, 0) != 0 || set_current(primary) != 0)
      throw std::runtime_error("raw cuDevicePrimaryCtxRetain / cuCtxSetCurrent failed");
    CUmodule m = nullptr;
    if (v.raw.cuModuleLoadDataEx(&m, kNoopPtx, 0, nullptr, nullptr) != 0 || v.raw.cuModuleGetFunction(&v.raw_noop, m, "noop") != 0)
      throw std::runtime_error("raw cuModuleLoadDataEx / cuModuleGetFunction failed");
    CUmodule mi = nullptr;
    if (v.raw.cuModuleLoadDataEx(&mi, kIncrementPtx, 0, nullptr, nullptr) != 0 ||
        v.raw.cuModuleGetFunction(&v.raw_increment, mi, "increment") != 0)
      throw std::runtime_error("raw cuModuleLoadDataEx / cuModuleGetFunction (increment) failed");
    return v;
  }();
  return e;
}

CUstream native(const gpuhal::Stream &s) {
  return reinterpret_cast<CUstream>(s.native_handle());
}

void check(CUresult r, const char *what) {
  if (r != 0) throw std::runtime_error(std::string(what) + " failed with CUresult " + std::to_string(r));
}

// ---- T1: pinned H2D and D2H ----------------------------------------------------------
void BM_gpuhal_pinned_h2d(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  gpuhal::HostArray src = gpuhal::pinned_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  std::memset(src.data(), 1, size_t(n));
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  for (auto _ : state) {
    d.copy_from_host(src.view(), e.stream);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

void BM_raw_pinned_h2d(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  gpuhal::HostArray src = gpuhal::pinned_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  std::memset(src.data(), 1, size_t(n));
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  (void)e.ctx.memory_info();
  for (auto _ : state) {
    check(e.raw.cuMemcpyHtoDAsync(d.device_pointer(), src.data(), size_t(n), native(e.stream)), "cuMemcpyHtoDAsync");
    check(e.raw.cuStreamSynchronize(native(e.stream)), "cuStreamSynchronize");
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

void BM_gpuhal_pinned_d2h(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  gpuhal::HostArray dst = gpuhal::pinned_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  std::memset(dst.data(), 1, size_t(n));
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  d.memset(3);
  for (auto _ : state) {
    d.copy_to_host(dst.view(), e.stream);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

void BM_raw_pinned_d2h(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  gpuhal::HostArray dst = gpuhal::pinned_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  std::memset(dst.data(), 1, size_t(n));
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  d.memset(3);
  for (auto _ : state) {
    check(e.raw.cuMemcpyDtoHAsync(dst.data(), d.device_pointer(), size_t(n), native(e.stream)), "cuMemcpyDtoHAsync");
    check(e.raw.cuStreamSynchronize(native(e.stream)), "cuStreamSynchronize");
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

// ---- P1: pageable H2D (gpuhal stages through pinned chunks; the driver through its own) ----
void BM_gpuhal_pageable_h2d(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  std::vector<uint8_t> src(size_t(n), 1);
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  for (auto _ : state) {
    d.copy_from_host(gpuhal::HostView::of(src), e.stream);
    e.stream.synchronize();
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

void BM_raw_pageable_h2d(benchmark::State &state) {
  Env &e = env();
  const int64_t n = state.range(0);
  std::vector<uint8_t> src(size_t(n), 1);
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {n}, gpuhal::dtypes::uint8);
  (void)e.ctx.memory_info();
  for (auto _ : state) {
    check(e.raw.cuMemcpyHtoDAsync(d.device_pointer(), src.data(), size_t(n), native(e.stream)), "cuMemcpyHtoDAsync");
    check(e.raw.cuStreamSynchronize(native(e.stream)), "cuStreamSynchronize");
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

// ---- L1: launch submit cost ---------------------------------------------------------------
void BM_gpuhal_launch(benchmark::State &state) {
  Env &e = env();
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {64}, gpuhal::dtypes::uint8);
  const gpuhal::Kernel k = e.module.kernel("noop");
  const auto launch = k({1}, {1}, e.stream);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 256; ++i) launch(d);
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    e.stream.synchronize();
  }
  state.counters["ns_per_launch"] =
      benchmark::Counter(double(state.iterations()) * 256, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_raw_launch(benchmark::State &state) {
  Env &e = env();
  gpuhal::DeviceArray d = gpuhal::device_array(e.ctx, {64}, gpuhal::dtypes::uint8);
  (void)e.ctx.memory_info();
  CUdeviceptr p = d.device_pointer();
  void *args[] = {&p};
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 256; ++i)
      check(e.raw.cuLaunchKernel(e.raw_noop, 1, 1, 1, 1, 1, 1, 0, native(e.stream), args, nullptr), "cuLaunchKernel");
    state.SetIterationTime(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    check(e.raw.cuStreamSynchronize(native(e.stream)), "cuStreamSynchronize");
  }
  state.counters["ns_per_launch"] =
      benchmark::Counter(double(state.iterations()) * 256, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// ---- A1 on CUDA, and the default manager: alloc + free against cuMemAlloc + cuMemFree ----
// The default manager's release goes through the deferred queue (flushed,
// after a context synchronize, every 10 releases), as in Numba; what the
// flush's synchronise proved unused comes back as spares for the next
// allocations of their sizes (busy blocks, user guide), so the loop pays a
// cuCtxSynchronize per 11 releases, not a cuMemAlloc + cuMemFree each. The
// pool manager keeps released blocks for the next allocation of their size.
void BM_gpuhal_alloc(benchmark::State &state) {
  Env &e = env();
  const auto bytes = uint64_t(state.range(0));
  for (auto _ : state) {
    gpuhal::DeviceMemory m = e.ctx.allocate(bytes);
    benchmark::DoNotOptimize(m.device_pointer());
  }
}

// A context with the pool manager: a second runtime over the same driver,
// made when this benchmark first runs (gpuhal's managers are chosen when a
// context is made).
gpuhal::Context *pooled_context(std::string *why) {
  static std::string error;
  static gpuhal::Context *ctx = [] () -> gpuhal::Context * {
    try {
      gpuhal::set_memory_manager(gpuhal::pool_memory_manager());
      auto *p = new gpuhal::Context(gpuhal::Runtime::load(cuda_config()).device(0).primary_context());
      gpuhal::clear_memory_manager();
      return p;
    } catch (const std::exception &ex) {
      gpuhal::clear_memory_manager();
      error = ex.what();
      return nullptr;
    }
  }();
  *why = error;
  return ctx;
}

void BM_gpuhal_pool_alloc(benchmark::State &state) {
  std::string why;
  gpuhal::Context *ctx = pooled_context(&why);
  if (!ctx) {
    state.SkipWithError(("a context with the pool manager: " + why).c_str());
    return;
  }
  const auto bytes = uint64_t(state.range(0));
  { gpuhal::DeviceMemory warm = ctx->allocate(bytes); }
  for (auto _ : state) {
    gpuhal::DeviceMemory m = ctx->allocate(bytes);
    benchmark::DoNotOptimize(m.device_pointer());
  }
}

void BM_raw_alloc(benchmark::State &state) {
  Env &e = env();
  (void)e.ctx.memory_info();  // gpuhal's context current on this thread, as for the other raw calls
  const auto bytes = size_t(state.range(0));
  for (auto _ : state) {
    CUdeviceptr p = 0;
    check(e.raw.cuMemAlloc(&p, bytes), "cuMemAlloc");
    benchmark::DoNotOptimize(p);
    check(e.raw.cuMemFree(p), "cuMemFree");
  }
}

// ---- A1 with memory pools as objects: gpuhal::MemoryPool of each kind on a stream, against the
// driver's own pool calls (cuMemAllocFromPoolAsync + cuMemFreeAsync on a cuMemPoolCreate pool that
// keeps everything, as the driver kind's default threshold does). Arg 0: bytes; the caching kind
// is the 0.02x-of-cuMemAlloc target, the driver kind is the raw pool's cost plus gpuhal's.
template <gpuhal::MemoryPoolKind Kind>
void BM_gpuhal_memory_pool(benchmark::State &state) {
  Env &e = env();
  gpuhal::MemoryPoolOptions options;
  options.kind = Kind;
  gpuhal::MemoryPool pool(e.ctx, options);
  const auto bytes = uint64_t(state.range(0));
  { gpuhal::DeviceMemory warm = pool.allocate(bytes, e.stream); }
  for (auto _ : state) {
    gpuhal::DeviceMemory m = pool.allocate(bytes, e.stream);
    benchmark::DoNotOptimize(m.device_pointer());
  }
  e.stream.synchronize();
}

void BM_raw_driver_pool(benchmark::State &state) {
  Env &e = env();
  (void)e.ctx.memory_info();
  // One pool for the process, as a program keeps one: a pool per run would
  // hold every earlier run's idle memory.
  static void *pool = [&e] {
    RawPoolProps props{};
    props.allocType = 1;      // CU_MEM_ALLOCATION_TYPE_PINNED
    props.location_type = 1;  // CU_MEM_LOCATION_TYPE_DEVICE
    void *made = nullptr;
    check(e.raw.cuMemPoolCreate(&made, &props), "cuMemPoolCreate");
    uint64_t keep = UINT64_MAX;
    check(e.raw.cuMemPoolSetAttribute(made, 4 /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */, &keep),
          "cuMemPoolSetAttribute");
    return made;
  }();
  const auto bytes = size_t(state.range(0));
  const CUstream s = native(e.stream);
  for (auto _ : state) {
    CUdeviceptr p = 0;
    check(e.raw.cuMemAllocFromPoolAsync(&p, bytes, pool, s), "cuMemAllocFromPoolAsync");
    benchmark::DoNotOptimize(p);
    check(e.raw.cuMemFreeAsync(p, s), "cuMemFreeAsync");
  }
  check(e.raw.cuStreamSynchronize(s), "cuStreamSynchronize");
}

// ---- A small round trip: to_device -> kernel -> copy_to_host, as Numba's users write it ----
// Synchronous copies and a launch on the legacy default stream, a fresh
// device array each time; the raw side makes the same calls (cuMemAlloc,
// cuMemcpyHtoD, cuLaunchKernel on stream 0, cuMemcpyDtoH, cuMemFree). The
// "correct" counter is 1 when the last round trip came back incremented
// (a real GPU; a fake driver runs no kernel and reports 0).
constexpr unsigned kRoundTripElements = 1024;  // 4 KiB of float32

void BM_gpuhal_round_trip(benchmark::State &state) {
  Env &e = env();
  std::vector<float> host(kRoundTripElements, 1.0f), back(kRoundTripElements, 0.0f);
  const gpuhal::Kernel k = e.increment_module.kernel("increment");
  const unsigned n = kRoundTripElements;
  for (auto _ : state) {
    gpuhal::DeviceArray d = gpuhal::to_device(e.ctx, gpuhal::HostView::of(host));
    k({n / 256}, {256})(d, n);
    d.copy_to_host(gpuhal::HostView::of(back));
  }
  state.counters["correct"] = std::all_of(back.begin(), back.end(), [](float v) { return v == 2.0f; }) ? 1 : 0;
}

void BM_raw_round_trip(benchmark::State &state) {
  Env &e = env();
  (void)e.ctx.memory_info();
  std::vector<float> host(kRoundTripElements, 1.0f), back(kRoundTripElements, 0.0f);
  unsigned n = kRoundTripElements;
  const size_t bytes = n * sizeof(float);
  for (auto _ : state) {
    CUdeviceptr p = 0;
    check(e.raw.cuMemAlloc(&p, bytes), "cuMemAlloc");
    check(e.raw.cuMemcpyHtoD(p, host.data(), bytes), "cuMemcpyHtoD");
    void *args[] = {&p, &n};
    check(e.raw.cuLaunchKernel(e.raw_increment, n / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr), "cuLaunchKernel");
    check(e.raw.cuMemcpyDtoH(back.data(), p, bytes), "cuMemcpyDtoH");
    check(e.raw.cuMemFree(p), "cuMemFree");
  }
  state.counters["correct"] = std::all_of(back.begin(), back.end(), [](float v) { return v == 2.0f; }) ? 1 : 0;
}

// N1's round trip without the kernel (to_device, then copy_to_host into a
// pageable array), beside the driver calls it needs: the floor N1's
// comparison with numba-cuda sits on.
void BM_gpuhal_copy_round_trip(benchmark::State &state) {
  Env &e = env();
  std::vector<float> host(kRoundTripElements, 1.0f), back(kRoundTripElements, 0.0f);
  for (auto _ : state) {
    gpuhal::DeviceArray d = gpuhal::to_device(e.ctx, gpuhal::HostView::of(host));
    d.copy_to_host(gpuhal::HostView::of(back));
  }
  state.counters["correct"] = back == host ? 1 : 0;
}
void BM_raw_copy_round_trip(benchmark::State &state) {
  Env &e = env();
  (void)e.ctx.memory_info();
  std::vector<float> host(kRoundTripElements, 1.0f), back(kRoundTripElements, 0.0f);
  const size_t bytes = kRoundTripElements * sizeof(float);
  for (auto _ : state) {
    CUdeviceptr p = 0;
    check(e.raw.cuMemAlloc(&p, bytes), "cuMemAlloc");
    check(e.raw.cuMemcpyHtoD(p, host.data(), bytes), "cuMemcpyHtoD");
    check(e.raw.cuMemcpyDtoH(back.data(), p, bytes), "cuMemcpyDtoH");
    check(e.raw.cuMemFree(p), "cuMemFree");
  }
  state.counters["correct"] = back == host ? 1 : 0;
}

// Every benchmark runs guarded: a failing driver call or a setup the real
// driver refuses skips that benchmark with the error's text (the table then
// says "NOT RUN" and why), instead of ending the program and every result
// after it. Each run's releases are flushed when it ends, after its buffers
// are gone and outside its timing: left in the deferred queue, they would be
// freed inside whichever run comes next (random interleaving makes that any
// of them), which then pays for freeing up to 512 MiB of device memory and
// unpinning as much host memory. On an H100 that made R2's repetitions of 10
// round trips take from 26 us to 25 ms each.
template <void (*Fn)(benchmark::State &)>
void guarded(benchmark::State &state) {
  try {
    Fn(state);
    env().ctx.flush_deallocations();
  } catch (const std::exception &e) {
    state.SkipWithError(e.what());
  }
}

}  // namespace

int main(int argc, char **argv) {
  // Sizes: GPUHAL_BENCH_SMOKE=1 keeps them small for CI's smoke run.
  const bool smoke = std::getenv("GPUHAL_BENCH_SMOKE") != nullptr;
  const int64_t t1 = smoke ? (int64_t(8) << 20) : (int64_t(512) << 20);
  const int64_t p1 = smoke ? (int64_t(8) << 20) : (int64_t(64) << 20);
  // T1 at 512 MiB, and a sweep from 4 KiB up (not in smoke runs) that shows
  // where the per-copy overhead stops mattering.
  auto pinned_sizes = [&](benchmark::internal::Benchmark *b) {
    if (!smoke)
      for (int64_t n : {int64_t(4) << 10, int64_t(64) << 10, int64_t(1) << 20, int64_t(16) << 20}) b->Arg(n);
    return b->Arg(t1)->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  pinned_sizes(benchmark::RegisterBenchmark("BM_gpuhal_pinned_h2d", guarded<BM_gpuhal_pinned_h2d>));
  pinned_sizes(benchmark::RegisterBenchmark("BM_raw_pinned_h2d", guarded<BM_raw_pinned_h2d>));
  pinned_sizes(benchmark::RegisterBenchmark("BM_gpuhal_pinned_d2h", guarded<BM_gpuhal_pinned_d2h>));
  pinned_sizes(benchmark::RegisterBenchmark("BM_raw_pinned_d2h", guarded<BM_raw_pinned_d2h>));
  // P1 at 64 MiB and 1 MiB, and a sweep (not in smoke runs) that shows where
  // the plugin's staging starts to beat the driver's own (kStageMinBytes).
  auto pageable_sizes = [&](benchmark::internal::Benchmark *b) {
    b->Arg(p1)->Arg(1 << 20);
    if (!smoke)
      for (int64_t n : {int64_t(4) << 10, int64_t(64) << 10, int64_t(512) << 10, int64_t(2) << 20, int64_t(4) << 20, int64_t(8) << 20, int64_t(16) << 20})
        b->Arg(n);
    return b->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  pageable_sizes(benchmark::RegisterBenchmark("BM_gpuhal_pageable_h2d", guarded<BM_gpuhal_pageable_h2d>));
  pageable_sizes(benchmark::RegisterBenchmark("BM_raw_pageable_h2d", guarded<BM_raw_pageable_h2d>));
  benchmark::RegisterBenchmark("BM_gpuhal_launch", guarded<BM_gpuhal_launch>)->UseManualTime();
  benchmark::RegisterBenchmark("BM_raw_launch", guarded<BM_raw_launch>)->UseManualTime();
  benchmark::RegisterBenchmark("BM_gpuhal_alloc", guarded<BM_gpuhal_alloc>)->Arg(4 << 10)->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_gpuhal_pool_alloc", guarded<BM_gpuhal_pool_alloc>)->Arg(4 << 10)->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_raw_alloc", guarded<BM_raw_alloc>)->Arg(4 << 10)->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_gpuhal_memory_pool_caching",
                               guarded<BM_gpuhal_memory_pool<gpuhal::MemoryPoolKind::Caching>>)
      ->Arg(4 << 10)
      ->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_gpuhal_memory_pool_driver",
                               guarded<BM_gpuhal_memory_pool<gpuhal::MemoryPoolKind::Driver>>)
      ->Arg(4 << 10)
      ->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_raw_driver_pool", guarded<BM_raw_driver_pool>)->Arg(4 << 10)->Arg(1 << 20);
  benchmark::RegisterBenchmark("BM_gpuhal_round_trip", guarded<BM_gpuhal_round_trip>);
  benchmark::RegisterBenchmark("BM_raw_round_trip", guarded<BM_raw_round_trip>);
  benchmark::RegisterBenchmark("BM_gpuhal_copy_round_trip", guarded<BM_gpuhal_copy_round_trip>);
  benchmark::RegisterBenchmark("BM_raw_copy_round_trip", guarded<BM_raw_copy_round_trip>);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}

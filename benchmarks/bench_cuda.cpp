// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Targets T1 (pinned copies), P1 (pageable copies, staged through pinned
// chunks) and L1 (kernel launch submit cost), each against the raw CUDA
// driver call in the same binary, on the same context, stream and buffers.
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

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
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

struct Raw {
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream) = nullptr;
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream) = nullptr;
  CUresult (*cuStreamSynchronize)(CUstream) = nullptr;
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, int *, void **) = nullptr;
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void **, void **) = nullptr;
};

struct Env {
  explicit Env(const gpuhal::Context &c) : ctx(c), stream(c.create_stream()) {}
  gpuhal::Context ctx;
  gpuhal::Stream stream;
  Raw raw;
  gpuhal::Module module;
  CUfunction raw_noop = nullptr;
};

template <class F>
void resolve(void *h, const char *name, F *out) {
  void *p = dlsym(h, name);
  if (!p) throw std::runtime_error(std::string("the CUDA driver lacks ") + name);
  std::memcpy(out, &p, sizeof p);
}

Env &env() {
  static Env e = [] {
    gpuhal::Config c = gpuhal::Config::from_environment();
    if (c.backend.empty()) c.backend = "cuda";
    Env v(gpuhal::Runtime::load(c).device(0).primary_context());
    const char *path = std::getenv("GPUHAL_CUDA_DRIVER");
    void *h = dlopen(path && *path ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) throw std::runtime_error("the CUDA driver the plugin loaded cannot be found again");
    resolve(h, "cuMemcpyHtoDAsync_v2", &v.raw.cuMemcpyHtoDAsync);
    resolve(h, "cuMemcpyDtoHAsync_v2", &v.raw.cuMemcpyDtoHAsync);
    resolve(h, "cuStreamSynchronize", &v.raw.cuStreamSynchronize);
    resolve(h, "cuModuleLoadDataEx", &v.raw.cuModuleLoadDataEx);
    resolve(h, "cuModuleGetFunction", &v.raw.cuModuleGetFunction);
    resolve(h, "cuLaunchKernel", &v.raw.cuLaunchKernel);
    v.module = gpuhal::Module::load(v.ctx, gpuhal::ImageFormat::Ptx, kNoopPtx, std::strlen(kNoopPtx));
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

}  // namespace

// Sizes: GPUHAL_BENCH_SMOKE=1 keeps them small for CI's smoke run.
const bool kSmoke = std::getenv("GPUHAL_BENCH_SMOKE") != nullptr;
const int64_t kT1 = kSmoke ? (int64_t(8) << 20) : (int64_t(512) << 20);
const int64_t kP1 = kSmoke ? (int64_t(8) << 20) : (int64_t(64) << 20);
BENCHMARK(BM_gpuhal_pinned_h2d)->Arg(kT1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_pinned_h2d)->Arg(kT1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_pinned_d2h)->Arg(kT1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_pinned_d2h)->Arg(kT1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_pageable_h2d)->Arg(kP1)->Arg(int64_t(1) << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_pageable_h2d)->Arg(kP1)->Arg(int64_t(1) << 20)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_gpuhal_launch)->UseManualTime();
BENCHMARK(BM_raw_launch)->UseManualTime();
BENCHMARK_MAIN();

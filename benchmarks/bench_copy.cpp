// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Targets H1 (host-backend copy vs memcpy, same buffers) and H4 (async
// submit cost vs a direct call), side by side in one binary.
//
//   build/bin/gpuhal-bench-copy --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true
//
// Buffers are written before timing (no first-touch faults). Bytes counted
// once per copy. For H4 read the counter ns_per_submit of BM_AsyncSubmit
// against BM_DirectCall's time.
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench_backend.hpp"
#include "gpuhal/gpuhal.hpp"

namespace {

gpuhal::Context &context() {
  static gpuhal::Context ctx = [] {
    gpuhal::Config c = bench::backend_config();
    return gpuhal::Runtime::load(c).device(0).primary_context();
  }();
  return ctx;
}

// The same buffers as the backend's copy: a std::vector source and a
// page-aligned destination (device memory of the host backend is pages).
void BM_Memcpy(benchmark::State &state) {
  const size_t n = size_t(state.range(0));
  std::vector<uint8_t> src(n, 1);
  void *dst = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  std::memset(dst, 2, n);
  for (auto _ : state) {
    std::memcpy(dst, src.data(), n);
    benchmark::DoNotOptimize(dst);
    benchmark::ClobberMemory();
  }
  std::free(dst);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}

void BM_HostBackendH2D(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<uint8_t> src(size_t(n), 1);
  gpuhal::DeviceArray d = gpuhal::device_array(context(), {n}, gpuhal::dtypes::uint8);
  d.memset(2);
  const gpuhal::HostView view = gpuhal::HostView::of(src);
  for (auto _ : state) d.copy_from_host(view);  // synchronous
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

// H1 the other way: a synchronous device-to-host copy into a host buffer of
// the same layout.
void BM_HostBackendD2H(benchmark::State &state) {
  const int64_t n = state.range(0);
  std::vector<uint8_t> dst(size_t(n), 1);
  gpuhal::DeviceArray d = gpuhal::device_array(context(), {n}, gpuhal::dtypes::uint8);
  d.memset(2);
  const gpuhal::HostView view = gpuhal::HostView::of(dst);
  for (auto _ : state) d.copy_to_host(view);  // synchronous
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

// H4: host time per asynchronous submit (no wait), batches of 256 with the
// stream drained outside the timed region.
void BM_AsyncSubmit(benchmark::State &state) {
  gpuhal::Stream s = context().create_stream();
  gpuhal::DeviceArray d = gpuhal::device_array(context(), {64}, gpuhal::dtypes::uint8);
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 256; ++i) d.memset(uint8_t(i), s);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.synchronize();
    state.SetIterationTime(seconds);  // a whole batch: the drain stays outside, the run stays short
  }
  state.counters["ns_per_submit"] =
      benchmark::Counter(double(state.iterations()) * 256, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

// The floor for H4: a direct call through a function pointer doing the same
// 64-byte memset.
void BM_DirectCall(benchmark::State &state) {
  std::vector<uint8_t> buf(64);
  void *(*volatile fn)(void *, int, size_t) = std::memset;
  for (auto _ : state) {
    fn(buf.data(), 1, buf.size());
    benchmark::ClobberMemory();
  }
}

}  // namespace

BENCHMARK(BM_Memcpy)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_HostBackendH2D)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_HostBackendD2H)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK(BM_AsyncSubmit)->UseManualTime();
BENCHMARK(BM_DirectCall);
BENCHMARK_MAIN();

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Targets H1 (host-backend copy vs memcpy, same host buffers) and H4 (async
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

// The host side of every copy of `n` bytes, in every benchmark here, so
// that each copy and its memcpy peer move bytes between the same host
// addresses and page-aligned ones (device memory of the host backend is
// pages). A small copy's time depends on where the host buffer starts within
// its page (4 KiB on a 2-core EPYC, seven offsets: memcpy 27 to 38 ns, ours
// 31 to 50, each worst at its own offsets: 4K aliasing between a copy's
// loads and stores); two buffers allocated separately landed where the heap
// put them, which moved with the size of the environment, and that decided
// the ratio. So up to 64 KiB the host side is eight buffers whose starts are
// spread over a page, taken in turn, and every row is the mean over them;
// larger sizes use one buffer (the effect is lost in the size).
class HostBuffers {
 public:
  explicit HostBuffers(size_t n) : count_(n <= (64u << 10) ? 8 : 1) {
    for (size_t k = 0; k < count_; ++k) {
      const size_t offset = count_ == 1 ? 0 : 16 + k * 512;  // malloc's 16-byte alignment, spread over the page
      void *base = std::aligned_alloc(4096, (offset + n + 4095) / 4096 * 4096);
      std::memset(base, 1, offset + n);
      bases_.push_back(base);
      views_.push_back(static_cast<uint8_t *>(base) + offset);
    }
  }
  ~HostBuffers() {
    for (void *b : bases_) std::free(b);
  }
  HostBuffers(const HostBuffers &) = delete;
  HostBuffers &operator=(const HostBuffers &) = delete;
  // The i-th buffer, in turn.
  uint8_t *at(size_t i) const { return views_[i % count_]; }
  size_t count() const { return count_; }

 private:
  size_t count_;
  std::vector<void *> bases_;
  std::vector<uint8_t *> views_;
};

// memcpy between the host buffers and a page-aligned buffer, in the
// direction of the copy it is the peer of (the two directions put the two
// addresses the other way round, which 4K aliasing tells apart).
void memcpy_peer(benchmark::State &state, bool to_host) {
  const size_t n = size_t(state.range(0));
  const HostBuffers host(n);
  void *paged = std::aligned_alloc(4096, (n + 4095) / 4096 * 4096);
  std::memset(paged, 2, n);
  size_t i = 0;
  for (auto _ : state) {
    uint8_t *h = host.at(i++);
    if (to_host)
      std::memcpy(h, paged, n);
    else
      std::memcpy(paged, h, n);
    benchmark::DoNotOptimize(h);
    benchmark::ClobberMemory();
  }
  std::free(paged);
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}

// The peer of a host-to-device copy.
void BM_Memcpy(benchmark::State &state) {
  memcpy_peer(state, false);
}

// The peer of a device-to-host copy.
void BM_MemcpyToHost(benchmark::State &state) {
  memcpy_peer(state, true);
}

// A synchronous copy through the host backend between a device array and
// the host buffers, in turn (the same buffers as memcpy_peer's); the views
// are made before timing.
void host_backend_copy(benchmark::State &state, bool to_host) {
  const int64_t n = state.range(0);
  const HostBuffers host{size_t(n)};
  gpuhal::DeviceArray d = gpuhal::device_array(context(), {n}, gpuhal::dtypes::uint8);
  d.memset(2);
  std::vector<gpuhal::HostView> views;
  for (size_t k = 0; k < host.count(); ++k) views.push_back(gpuhal::HostView::of(host.at(k), gpuhal::Shape{n}));
  size_t i = 0;
  for (auto _ : state) {
    const gpuhal::HostView &v = views[i++ % views.size()];
    if (to_host)
      d.copy_to_host(v);
    else
      d.copy_from_host(v);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * n);
}

void BM_HostBackendH2D(benchmark::State &state) {
  host_backend_copy(state, false);
}

// H1 the other way: into host buffers of the same layout.
void BM_HostBackendD2H(benchmark::State &state) {
  host_backend_copy(state, true);
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
BENCHMARK(BM_MemcpyToHost)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK(BM_HostBackendH2D)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20)->Arg(64 << 20);
BENCHMARK(BM_HostBackendD2H)->Arg(4 << 10)->Arg(64 << 10)->Arg(1 << 20);
BENCHMARK(BM_AsyncSubmit)->UseManualTime();
BENCHMARK(BM_DirectCall);
BENCHMARK_MAIN();

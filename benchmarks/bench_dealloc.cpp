// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Target A5: the cost of a deferred free (dropping the last handle of device
// memory while a DeferCleanup scope is active), side by side with an
// immediate free (queue limit 0: every drop flushes, i.e. synchronises the
// context and calls the backend's free). Host backend.
//
//   build/bin/gpuhal-bench-dealloc --benchmark_repetitions=10 --benchmark_enable_random_interleaving=true
//
// The counter ns_per_free is the time per dropped allocation; syncs_while_deferred
// must stay 0 (the queue held every item: no flush, so no device sync).
#include <benchmark/benchmark.h>

#include <chrono>
#include <vector>

#include "bench_backend.hpp"
#include "gpuhal/gpuhal.hpp"

namespace {

constexpr int kBatch = 1000;

gpuhal::Context context(uint64_t max_count) {
  gpuhal::Config c = bench::backend_config();
  c.max_pending_deallocs_count = max_count;
  c.max_pending_deallocs_ratio = 1.0;
  return gpuhal::Runtime::load(c).device(0).primary_context();
}

void drop_batch(benchmark::State &state, const gpuhal::Context &ctx, bool deferred) {
  double syncs = 0;
  for (auto _ : state) {
    std::vector<gpuhal::DeviceMemory> held;
    held.reserve(kBatch);
    for (int i = 0; i < kBatch; ++i) held.push_back(ctx.allocate(256));
    double seconds;
    {
      std::unique_ptr<gpuhal::DeferCleanup> defer;
      if (deferred) defer = std::make_unique<gpuhal::DeferCleanup>(ctx);
      const auto t0 = std::chrono::steady_clock::now();
      for (auto &m : held) m = gpuhal::DeviceMemory();
      seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (deferred && ctx.pending_deallocations() != size_t(kBatch)) ++syncs;
    }
    ctx.flush_deallocations();
    state.SetIterationTime(seconds);
  }
  state.counters["ns_per_free"] = benchmark::Counter(double(state.iterations()) * kBatch,
                                                     benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  if (deferred) state.counters["syncs_while_deferred"] = syncs;
}

void BM_DeferredFree(benchmark::State &state) {
  static gpuhal::Context ctx = context(1u << 30);
  drop_batch(state, ctx, true);
}

void BM_ImmediateFree(benchmark::State &state) {
  static gpuhal::Context ctx = context(0);
  drop_batch(state, ctx, false);
}

}  // namespace

// A fixed number of batches: the untimed part (1000 page-granular
// allocations and their release) is ~100x the timed part, so letting the
// library iterate until 0.5 s of timed work would take minutes per run.
BENCHMARK(BM_DeferredFree)->UseManualTime()->Iterations(50)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ImmediateFree)->UseManualTime()->Iterations(50)->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();

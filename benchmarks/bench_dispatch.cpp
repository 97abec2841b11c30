// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// D1: the cost the core adds to a plugin call. The same no-work plugin
// entry (stream_query on an idle stream of the host backend) called through
// the C++ API (Stream::query: handle checks, generation check, status
// conversion) and straight through the plugin's function pointer, side by
// side; the difference is the core's dispatch cost (target: <= 2 ns).
//
//   build/bin/gpuhal-bench-dispatch --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "gpuhal/gpuhal.hpp"
#include "internal.hpp"

namespace {

struct State {
  gpuhal::Context ctx = gpuhal::Context::current();
  gpuhal::Stream stream = ctx.create_stream();
};

State &state() {
  static State s;
  return s;
}

void BM_core_stream_query(benchmark::State &st) {
  auto &s = state();
  for (auto _ : st) benchmark::DoNotOptimize(s.stream.query());
}

void BM_direct_stream_query(benchmark::State &st) {
  auto &s = state();
  const gpuhal_plugin_table_t &t = s.ctx.impl()->t();
  gpuhal_context_t c = s.ctx.impl()->handle;
  gpuhal_stream_t h = s.stream.native_handle();
  auto *fn = t.stream_query;
  benchmark::DoNotOptimize(fn);
  for (auto _ : st) benchmark::DoNotOptimize(fn(c, h));
}

}  // namespace

BENCHMARK(BM_core_stream_query);
BENCHMARK(BM_direct_stream_query);
BENCHMARK_MAIN();

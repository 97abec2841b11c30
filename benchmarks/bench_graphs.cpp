// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// G1: 100 small kernel launches and one device-to-device copy, then a
// stream synchronisation: submitted directly against the same work captured
// once into a graph and launched (target: the replay >= 3x faster, on the
// host backend and on cuda on a GPU). Both sides run the same kernels over
// the same arrays in one process; interleave them with the options below.
//
// Run (build tree; GPUHAL_BACKEND=cuda on a GPU machine for the cuda row):
//   build/bin/gpuhal-bench-graphs --benchmark_repetitions=10
//     --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true
// (one command line).
#include <benchmark/benchmark.h>

#include "gpuhal/gpuhal.hpp"

namespace {

constexpr int kN = 256;  // one block of work-items per launch: the launch cost dominates
constexpr int kLaunches = 100;

const char *kSource = R"(
GPUHAL_KERNEL void bump(GPUHAL_GLOBAL float *x, float a, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < (unsigned)n) x[i] = x[i] * a + 1.0f;
}
)";

struct State {
  gpuhal::Context ctx = gpuhal::Runtime::get().device(0).primary_context();
  gpuhal::Stream stream = ctx.create_stream(gpuhal::StreamKind::NonBlocking);
  gpuhal::Kernel bump = gpuhal::Module::compile(ctx, kSource).kernel("bump");
  gpuhal::DeviceArray x = gpuhal::device_array(ctx, {kN}, gpuhal::dtypes::float32);
  gpuhal::DeviceArray y = gpuhal::device_array(ctx, {kN}, gpuhal::dtypes::float32);
  gpuhal::GraphExec exec;

  void submit() {
    for (int i = 0; i < kLaunches; ++i) bump({1}, {kN}, stream)(x, 0.5f, kN);
    y.copy_from_device(x, stream);
  }
  State() {
    x.fill(0.0f);
    if (!ctx.supports(gpuhal::Capability::Graphs)) return;
    stream.begin_capture();
    submit();
    exec = stream.end_capture().instantiate();
  }
};

State &state_of() {
  static State s;
  return s;
}

void BM_G1_direct(benchmark::State &bs) {
  State &s = state_of();
  for (auto _ : bs) {
    s.submit();
    s.stream.synchronize();
  }
  bs.SetItemsProcessed(int64_t(bs.iterations()) * kLaunches);
  bs.SetLabel(gpuhal::Runtime::get().backend_name());
}

void BM_G1_graph(benchmark::State &bs) {
  State &s = state_of();
  if (!s.ctx.supports(gpuhal::Capability::Graphs)) {
    bs.SkipWithError("this backend does not claim graphs");
    return;
  }
  for (auto _ : bs) {
    s.exec.launch(s.stream);
    s.stream.synchronize();
  }
  bs.SetItemsProcessed(int64_t(bs.iterations()) * kLaunches);
  bs.SetLabel(gpuhal::Runtime::get().backend_name());
}

}  // namespace

BENCHMARK(BM_G1_direct)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_G1_graph)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK_MAIN();

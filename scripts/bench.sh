#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Runs every benchmark of the performance method and prints the table of
# targets (ours, the peer's, ratio, spread, MET / MISSED / WITHIN NOISE);
# the results and summary.json go to $build/bench/.
#
#   scripts/bench.sh           full mode: 10 repetitions, random interleaving (minutes)
#   scripts/bench.sh --smoke   a few short repetitions: checks that the harness works (CI)
#
# Then benchmarks/cold_build.py: the first kernel builds of fresh processes
# against PoCL's (written to cold_build.json).
#
# The PoCL comparisons (gpuhal-bench-kernels) run in their own process, as
# PoCL must not share one with amd_comgr. Expects a build with benchmarks
# (scripts/test.sh or scripts/demo.sh makes one); builds it when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${GPUHAL_BUILD_DIR:-build}
smoke=0
[ "${1:-}" = "--smoke" ] && smoke=1
if [ ! -x "$build/bin/gpuhal-bench-copy" ]; then
  scripts/install-deps.sh
  cmake -S . -B "$build" -G Ninja >/dev/null
  cmake --build "$build"
fi
out="$build/bench"
rm -rf "$out"
mkdir -p "$out"
if [ $smoke = 1 ]; then
  args=(--benchmark_repetitions=2 --benchmark_min_time=0.01)
else
  args=(--benchmark_repetitions=10 --benchmark_enable_random_interleaving=true)
fi
export GPUHAL_KERNEL_CACHE="${GPUHAL_KERNEL_CACHE:-$PWD/$build/kernel-cache}"
# The CUDA benchmarks (T1, P1, L1) run on the real driver when one loads,
# else over the test suite's fake driver, which only keeps the harness
# working (its numbers mean nothing).
cuda_env=(GPUHAL_BACKEND=cuda)
if GPUHAL_BACKEND=cuda "$build/bin/gpuhal-info" >/dev/null 2>&1; then
  echo real >"$out/cuda-driver.txt"
elif [ -e "$build/fakes/cuda/libcuda.so.1" ]; then
  echo fake >"$out/cuda-driver.txt"
  # Room for T1's 512 MiB buffers (the fake's device memory is host memory).
  cuda_env+=(GPUHAL_CUDA_DRIVER="$PWD/$build/fakes/cuda/libcuda.so.1" FAKE_CUDA_MEMORY=8589934592)
else
  echo none >"$out/cuda-driver.txt"
fi
[ $smoke = 1 ] && export GPUHAL_BENCH_SMOKE=1
for b in dispatch copy pool dealloc kernels graphs rect cuda; do
  bin="$build/bin/gpuhal-bench-$b"
  if [ ! -x "$bin" ]; then
    echo "gpuhal-bench-$b: not built (for kernels: OpenCL, i.e. pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers)"
    continue
  fi
  echo "== gpuhal-bench-$b"
  backend_env=(GPUHAL_BACKEND=host)
  if [ $b = cuda ]; then
    [ "$(cat "$out/cuda-driver.txt")" = none ] && { echo "gpuhal-bench-cuda: no CUDA driver, real or fake"; continue; }
    backend_env=("${cuda_env[@]}")
  fi
  env "${backend_env[@]}" "$bin" "${args[@]}" --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/$b.json" --benchmark_out_format=json >"$out/$b.txt" 2>&1 || {
    tail -20 "$out/$b.txt"
    echo "gpuhal-bench-$b failed" >&2
    exit 1
  }
done
python3 scripts/bench_table.py "$out" $([ $smoke = 1 ] && echo --smoke)
# The host backend's cold build against PoCL's: fresh processes, so outside
# the table's Google Benchmark runs (one repetition in smoke mode).
echo "== cold build (benchmarks/cold_build.py)"
python3 benchmarks/cold_build.py --build "$build" --repetitions $([ $smoke = 1 ] && echo 1 || echo 10) \
  --json "$out/cold_build.json"

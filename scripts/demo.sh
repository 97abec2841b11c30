#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Builds gpuhal and runs the demo on the default backend: gpuhal-info, the
# to_device -> work on a stream -> copy_to_host round trip, then the kernel
# examples (Numba's increment_by_one, a block reduction with shared memory and
# barriers, the tiled matrix multiply).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${GPUHAL_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DGPUHAL_BUILD_TESTS=OFF >/dev/null
cmake --build "$build"
"$build/bin/gpuhal-info"
echo
"$build/bin/roundtrip"
for example in increment_kernel block_reduction matmul; do
  "$build/bin/$example"
done

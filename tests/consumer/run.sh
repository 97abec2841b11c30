#!/bin/sh
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
esac
"$work/prefix/bin/gpuhal-info" | grep -q "\[used\] host"

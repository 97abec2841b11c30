#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Path-bearing variables are ignored in setuid processes: a copy of
# gpuhal-info made setuid to `nobody` and started by root runs with AT_SECURE
# set. Needs root (exit 77: skipped otherwise).
# Usage: check_setuid.sh GPUHAL_INFO FAKE_PLUGIN WORK_DIR
set -eu
info=$1
fake=$2
if [ "$(id -u)" != 0 ] || ! id nobody >/dev/null 2>&1; then
  echo "skipped: needs root and a 'nobody' user to make a setuid binary"
  exit 77
fi
# The setuid copy runs as `nobody` and loads libgpuhal from the build tree.
libs=$(dirname "$(dirname "$info")")/lib
if ! command -v runuser >/dev/null 2>&1 || ! runuser -u nobody -- test -r "$libs/libgpuhal.so" 2>/dev/null; then
  echo "skipped: the build tree ($libs) is not readable by 'nobody'"
  exit 77
fi
dir=$(mktemp -d "$3/setuid.XXXXXX")  # inside the build tree: /tmp may be nosuid
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
cp "$info" "$dir/gpuhal-info"
chown nobody "$dir/gpuhal-info"
chmod 4755 "$dir/gpuhal-info"
# Control: an ordinary process honours the path.
GPUHAL_BACKEND="$fake" "$info" | grep -q "^Backend: fake" || { echo "FAIL: the control run did not load $fake"; exit 1; }
# Elevated: the path is ignored (and said so), the default order is used.
trace="$dir/trace.json"
out=$(GPUHAL_BACKEND="$fake" GPUHAL_PLUGIN_PATH="$(dirname "$fake")" GPUHAL_LAYERS=trace GPUHAL_TRACE_FILE="$trace" \
      "$dir/gpuhal-info" 2>&1) || true
echo "$out"
# The trace layer's file is a path too: never written from a setuid process.
[ ! -e "$trace" ] || { echo "FAIL: the setuid run wrote GPUHAL_TRACE_FILE"; exit 1; }
echo "$out" | grep -q "GPUHAL_TRACE_FILE is ignored in a setuid/elevated process" || { echo "FAIL: no trace-file warning"; exit 1; }
echo "$out" | grep -q "^Backend: host" || { echo "FAIL: the setuid run did not fall back to the default backend"; exit 1; }
echo "$out" | grep -q "GPUHAL_BACKEND is ignored in a setuid/elevated process" || { echo "FAIL: no warning"; exit 1; }
echo "$out" | grep -q "GPUHAL_PLUGIN_PATH is ignored in a setuid/elevated process" || { echo "FAIL: no warning"; exit 1; }
echo "OK: path variables ignored in a setuid process"

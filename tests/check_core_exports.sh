#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# libgpuhal exports its public API only: every dynamic symbol it defines is
# a gpuhal:: name outside gpuhal::detail, or the type information / virtual
# table of one; no std:: template instantiation, nothing of detail::.
# Usage: check_core_exports.sh LIBGPUHAL.
set -eu
lib=$1
all=$(nm -D --defined-only -C "$lib" | cut -d' ' -f3-)
count=$(printf '%s\n' "$all" | grep -c . || true)
bad=$(printf '%s\n' "$all" | grep -v -e '^gpuhal::' -e '^typeinfo for gpuhal::' -e '^typeinfo name for gpuhal::' \
  -e '^vtable for gpuhal::' || true)
internal=$(printf '%s\n' "$all" | grep -e '^gpuhal::detail::' -e 'for gpuhal::detail::' || true)
if [ -n "$bad" ] || [ -n "$internal" ]; then
  echo "FAIL: $lib exports symbols outside its public API:"
  printf '%s\n%s\n' "$bad" "$internal" | grep . | head -40
  exit 1
fi
for needed in 'gpuhal::Runtime::load(' 'typeinfo for gpuhal::Error' 'vtable for gpuhal::MemoryManager'; do
  printf '%s\n' "$all" | grep -qF "$needed" || { echo "FAIL: $lib does not export $needed"; exit 1; }
done
echo "core exports: $count symbols, all public API"

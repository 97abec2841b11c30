#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# A plugin must export exactly one dynamic symbol, the negotiation entry, and
# nothing C++ (no mangled _Z names).
set -eu
plugin=$1
symbols=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -v '^$' || true)
echo "exported by $plugin:"
echo "$symbols"
if [ "$symbols" != "gpuhal_plugin_negotiate" ]; then
  echo "FAIL: expected exactly gpuhal_plugin_negotiate" >&2
  exit 1
fi
if nm -D --defined-only "$plugin" | grep -q ' _Z'; then
  echo "FAIL: C++ symbols exported" >&2
  exit 1
fi
echo "OK"

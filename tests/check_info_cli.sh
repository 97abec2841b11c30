#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# gpuhal-info's conventions, checked end to end. Usage:
#   check_info_cli.sh GPUHAL_INFO BADNAME_PLUGIN
# - --json and -l --json are valid JSON (parsed by Python) with schema_version
#   1, also when a plugin's device name is not UTF-8 (U+FFFD stands in);
# - `selected` is true only for a successful attempt, and for exactly one;
# - a broken plugin in the search path is warned about once per run.
set -eu
info=$1
badname=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset GPUHAL_BACKEND GPUHAL_PLUGIN_PATH
parse='
import json, sys
d = json.loads(sys.stdin.buffer.read().decode("utf-8"))  # strict: fails on invalid UTF-8
assert d["schema_version"] == 1, d
for key in ("backends", "attempts"):
    rows = d.get(key, [])
    assert all(r["status"] == "SUCCESS" for r in rows if r["selected"]), rows
    if rows and d.get("ok"):
        assert sum(r["selected"] for r in rows) == 1, rows
for dev in d["devices"]:
    print("device:", dev["backend"], dev["ordinal"], ascii(dev["name"]))
'
GPUHAL_BACKEND="$badname" "$info" --json | python3 -c "$parse"
"$info" --backend "$badname" -l --json | python3 -c "$parse"
"$info" --json | python3 -c "$parse"
echo garbage >"$work/libgpuhal-cuda.so"
GPUHAL_PLUGIN_PATH="$work" "$info" >/dev/null 2>"$work/err"
warnings=$(grep -c "is unusable" "$work/err" || true)
echo "warnings about the broken plugin: $warnings"
[ "$warnings" -eq 1 ]
echo "info cli: OK"

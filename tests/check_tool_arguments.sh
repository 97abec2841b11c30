#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The three tools read their command line one way (tools/tool_arguments.hpp).
# Usage: check_tool_arguments.sh GPUHAL_INFO GPUHAL_BANDWIDTH GPUHAL_CONFORM
# For each tool: --help and --version exit 0; an unknown option, a missing
# value, a value the option refuses, a value given to a flag and two options
# that exclude each other exit 2 naming the problem; --name=value is read as
# --name value. Prints "tool arguments: OK <count>" when every case holds.
set -u
info=$1
bandwidth=$2
conform=$3
unset GPUHAL_BACKEND GPUHAL_PLUGIN_PATH
count=0
fail=0
# expect STATUS PATTERN command...: the command's exit status is STATUS and
# its output (stdout and stderr) matches the grep pattern.
expect() {
  want=$1
  pattern=$2
  shift 2
  out=$("$@" 2>&1)
  got=$?
  if [ "$got" -ne "$want" ] || ! printf '%s\n' "$out" | grep -q -- "$pattern"; then
    echo "FAILED: $* -> exit $got (wanted $want), output:" >&2
    printf '%s\n' "$out" | head -5 >&2
    fail=1
  fi
  count=$((count + 1))
}
for tool in "$info" "$bandwidth" "$conform"; do
  name=$(basename "$tool")
  expect 0 "^usage: $name" "$tool" --help
  expect 0 "^usage: $name" "$tool" -h
  expect 0 "^$name (gpuhal) [0-9]*\.[0-9]*\.[0-9]*, plugin ABI 1\.[0-9]*" "$tool" --version
  expect 2 "^$name: unknown option '--no-such-option'" "$tool" --no-such-option
  expect 2 "^$name: --json takes no value" "$tool" --json=yes
done
expect 2 "^gpuhal-info: --device needs a value" "$info" --device
expect 2 "^gpuhal-info: bad --device 'x': a device ordinal is wanted: not a whole number" "$info" --device x
expect 2 "^gpuhal-info: --kernel and --json exclude each other: give one" "$info" --json --kernel k.kernel
expect 2 "^gpuhal-info: --list and --lowering exclude each other: give one" "$info" -l --lowering
expect 2 "^gpuhal-info: unexpected argument 'extra'" "$info" extra
expect 0 "Backend: host" "$info" --backend=host --device=0
expect 2 "^gpuhal-bandwidth: bad --reps '0': must be from 1 to 100000" "$bandwidth" --reps=0
expect 2 "^gpuhal-bandwidth: bad --direction 'up': a comma-separated list of h2d, d2h, d2d" "$bandwidth" --direction up
expect 2 "^gpuhal-bandwidth: --csv and --json exclude each other: give one" "$bandwidth" --json --csv
expect 0 "host,0,d2d,device,4096" "$bandwidth" --backend=host --sizes=4K --reps=2 --direction=d2d --csv
expect 2 "^gpuhal-conform: more than one plugin given ('cuda')" "$conform" host cuda
expect 2 "^gpuhal-conform: bad --timeout '-1': seconds (>= 0) are wanted" "$conform" --timeout=-1 --list
expect 2 "^gpuhal-conform: --skip 'no.such.check' matches no check (see --list)" "$conform" --skip no.such.check
expect 0 "^memory\." "$conform" --list --only='memory.*'
[ $fail -eq 0 ] && echo "tool arguments: OK $count"
exit $fail

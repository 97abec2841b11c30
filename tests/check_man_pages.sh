#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The tools' man pages (tools/help_to_man.py, made at build time): each has
# NAME, SYNOPSIS, DESCRIPTION and EXIT STATUS, and carries its tool's own
# option text. Usage: check_man_pages.sh MAN_DIR. Skipped (77) when the
# build made none (no python3).
set -u
dir=$1
[ -d "$dir" ] || { echo "no man pages were made (no python3 at build time)"; exit 77; }
n=0
for t in gpuhal-info gpuhal-conform gpuhal-bandwidth; do
  page="$dir/$t.1"
  for section in NAME SYNOPSIS DESCRIPTION "EXIT STATUS"; do
    grep -q "^\.SH $section\$" "$page" || { echo "$page: no $section section"; exit 1; }
  done
  n=$((n + 1))
done
grep -q 'timed copies per figure' "$dir/gpuhal-bandwidth.1" || { echo "gpuhal-bandwidth.1 lacks --reps's text"; exit 1; }
grep -q 'junit FILE' "$dir/gpuhal-conform.1" || { echo "gpuhal-conform.1 lacks --junit"; exit 1; }
grep -q 'kernel FILE' "$dir/gpuhal-info.1" || { echo "gpuhal-info.1 lacks --kernel"; exit 1; }
echo "man pages: OK $n"

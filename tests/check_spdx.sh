#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Every source, header, build and script file of the project carries the
# licence's SPDX line in its first two lines (after a #! line). Usage:
# check_spdx.sh SOURCE_DIR. Lists the files without one and fails.
set -eu
cd "$1"
tag='SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception'
if [ -d .git ] && command -v git >/dev/null 2>&1; then
  files=$(git ls-files)
else
  files=$(find . -path ./build -prune -o -type f -print | sed 's|^\./||')
fi
missing=0
checked=0
for f in $files; do
  case "$f" in
    *.cpp | *.hpp | *.c | *.h | *.def | *.map | *.sh | *.in | CMakeLists.txt | */CMakeLists.txt | .ci/run) ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  if ! head -n 2 "$f" | grep -qF "$tag"; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done
[ -f LICENSE ] || { echo "no LICENSE file"; exit 1; }
grep -q "LLVM Exceptions to the Apache 2.0 License" LICENSE || { echo "LICENSE lacks the LLVM exception"; exit 1; }
echo "spdx: $checked files checked, $missing without the line"
[ "$missing" -eq 0 ]

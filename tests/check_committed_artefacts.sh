#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Fails when git tracks a build artefact: Python caches, objects, shared
# objects, archives, or anything under a build folder. Usage:
# check_committed_artefacts.sh SOURCE_DIR. Skipped (77) outside a git checkout.
set -eu
cd "$1"
if ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "not a git checkout: nothing to check"
  exit 77
fi
found=$(git ls-files | grep -E '(^|/)__pycache__/|\.pyc$|\.o$|\.so(\.[0-9]+)*$|\.a$|^build[^/]*/|^python-build/|^build-python/' || true)
if [ -n "$found" ]; then
  echo "build artefacts are committed (remove them with git rm --cached, and ignore them):"
  echo "$found"
  exit 1
fi
echo "OK: $(git ls-files | wc -l) tracked files, no build artefact"

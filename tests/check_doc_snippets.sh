#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Compiles every ```cpp block of the README and docs/*.md. A block that is a
# whole file (it defines main() or a plugin entry point) compiles as it is;
# any other block is statements: its #include lines go on top and the rest
# into a function body. Usage: check_doc_snippets.sh SOURCE_DIR GENERATED_INCLUDE_DIR
# (the second holds the generated gpuhal/version.hpp).
set -eu
src=$1
gen=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
n=0
for md in "$src"/README.md "$src"/docs/*.md; do
  awk -v dir="$work" -v base="$(basename "$md" .md)" '
    /^```cpp[ \t]*$/ { inblock = 1; k++; file = dir "/" base "_" k ".snippet"; next }
    /^```/ && inblock { inblock = 0; close(file); next }
    inblock { print > file }
  ' "$md"
done
for f in "$work"/*.snippet; do
  [ -e "$f" ] || continue
  n=$((n + 1))
  out="$f.cpp"
  if grep -qE 'main\(|gpuhal_plugin_negotiate\(' "$f"; then
    cp "$f" "$out"
  else
    {
      echo '#include <gpuhal/gpuhal.hpp>'
      echo '#include <vector>'
      grep '^#include' "$f" || true
      echo 'void snippet() {'
      grep -v '^#include' "$f"
      echo '}'
    } > "$out"
  fi
  # Snippets of gpuhal/mpi.hpp compile with the MPI's flags (Open MPI's
  # mpicc --showme:compile), or are skipped, said, without an MPI.
  extra=""
  if grep -q 'gpuhal/mpi.hpp' "$f"; then
    if ! extra=$(mpicc --showme:compile 2>/dev/null); then
      echo "skipped (no mpicc): $(basename "$f")"
      continue
    fi
  fi
  # shellcheck disable=SC2086
  if ! c++ -std=c++17 -fsyntax-only -Wall -Werror -Wno-unused-variable -I"$src/include" -I"$gen" $extra "$out"; then
    echo "FAIL: snippet $(basename "$f") does not compile:" >&2
    cat -n "$out" >&2
    exit 1
  fi
  echo "ok: $(basename "$f")"
done
echo "$n snippets compiled"
test "$n" -gt 0

#!/bin/sh
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# The counts table of docs/conformance.md says what the conform.* tests
# require: check_conformance_doc.sh DOC "host 61 0 1 0" "cuda 50 0 1 11" ...
# (plugin, passed, failed, unsupported, skipped). Fails naming a stale row.
set -eu
doc=$1
shift
status=0
for want in "$@"; do
  set -- $want
  case "$1" in
    host) row='| host (' ;;
    cuda) row='| cuda over the fake driver' ;;
    hsa) row='| hsa over the fake runtime' ;;
    counting) row='| `examples/third_party_plugin` (counting)' ;;
    *) echo "unknown plugin $1"; exit 2 ;;
  esac
  line=$(grep -F "$row" "$doc" | head -1)
  got=$(echo "$line" | awk -F'|' '{gsub(/ /, "", $3); gsub(/ /, "", $4); gsub(/ /, "", $5); gsub(/ /, "", $6); print $3, $4, $5, $6}')
  if [ "$got" != "$2 $3 $4 $5" ]; then
    echo "stale: docs/conformance.md says '$got' for $1, the tests require '$2 $3 $4 $5'"
    status=1
  fi
done
[ "$status" -eq 0 ] && echo "conformance counts in the docs: current"
exit "$status"

#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Fetches, on a machine that reaches Debian's archive, the packages a GPU
# machine without a network lacks to build gpuhal and its benchmarks:
#
#   scripts/hardware-bundle.sh [DIR]        (default: hardware-bundle)
#
# DIR/debs gets Debian 12's .deb files of Boost.Context (library and
# headers), xxhash.h and Google Benchmark, about 10 MB; take DIR along to the
# GPU machine, into the source tree, and scripts/hardware-run.sh unpacks them
# into its build folder (nothing is installed: the packages' files are found
# through CMAKE_PREFIX_PATH, and the programs through their run paths). Their
# libraries need glibc 2.34 and libstdc++ from GCC 12 or later there.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-hardware-bundle}
packages=(libboost1.74-dev libboost-context1.74-dev libboost-context1.74.0 libxxhash-dev libbenchmark-dev
  libbenchmark1debian)
mkdir -p "$dir/debs"
cd "$dir/debs"
# apt-get download writes into the current folder; as root it warns that
# the _apt user cannot write there, which is harmless.
apt-get download "${packages[@]}" 2>&1 | grep -v "^W: Download is performed unsandboxed" || true
for p in "${packages[@]}"; do
  ls "${p}"_*.deb >/dev/null 2>&1 || {
    echo "hardware-bundle: $p was not downloaded" >&2
    exit 1
  }
done
du -sh . | sed 's/\t.*//' | xargs -I{} echo "hardware-bundle: ${#packages[@]} packages, {} in $dir/debs"

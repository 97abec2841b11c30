#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Installs the Debian packages gpuhal needs to build and test, when missing.
# Safe to run repeatedly; uses sudo only when not root.
set -euo pipefail
packages=(cmake ninja-build g++ catch2 binutils pkg-config libdlpack-dev clang libclang-rt-14-dev libboost-context-dev libxxhash-dev libamd-comgr2 libamd-comgr-dev
  libbenchmark-dev debhelper lintian pocl-opencl-icd ocl-icd-opencl-dev opencl-c-headers python3 python3-venv python3-dev libhsa-runtime-dev libhsa-runtime64-1 openmpi-bin libopenmpi-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "gpuhal: installing missing packages: ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

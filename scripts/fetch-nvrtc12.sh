#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Fetches NVRTC 12 (libnvrtc.so.12, from NVIDIA's PyPI wheel
# nvidia-cuda-nvrtc-cu12) into DIR/nvrtc12, for the tests that check the
# cuda backend against a CUDA 12 driver with the NVRTC of that driver's
# CUDA version. Optional: without network the tests that need it are not
# registered, and this script says so and exits 0.
#   scripts/fetch-nvrtc12.sh DIR
set -euo pipefail
dir=${1:?usage: fetch-nvrtc12.sh BUILD_DIR}/nvrtc12
lib="$dir/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
[ -f "$lib" ] && exit 0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
if ! python3 -m pip download --quiet --no-deps "nvidia-cuda-nvrtc-cu12==12.4.*" -d "$tmp" >/dev/null 2>&1; then
  echo "gpuhal: NVRTC 12 could not be downloaded; the NVRTC 12 tests are skipped"
  exit 0
fi
mkdir -p "$dir"
python3 -m zipfile -e "$tmp"/nvidia_cuda_nvrtc_cu12-*.whl "$dir"
[ -f "$lib" ] || { echo "gpuhal: the NVRTC 12 wheel has no libnvrtc.so.12"; exit 0; }

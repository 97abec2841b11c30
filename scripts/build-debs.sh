#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
# Builds gpuhal's Debian packages from this tree (debian/) with
# dpkg-buildpackage -us -uc -b, checks them with lintian (an error fails),
# then installs them, runs the installed gpuhal-info and removes them again.
# Usage: scripts/build-debs.sh OUT_DIR  (the .deb files are left there).
set -euo pipefail
src="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "$1" && cd "$1" && pwd)"
rm -rf "$out/src" "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$out/src"
# The tree's files as git knows them (tracked ones, as they are now).
(cd "$src" && git ls-files -z | xargs -0 cp --parents -t "$out/src")
jobs=$(nproc)
(cd "$out/src" && DEB_BUILD_OPTIONS="parallel=$jobs nocheck" dpkg-buildpackage -us -uc -b >"$out/build.log" 2>&1) ||
  { tail -40 "$out/build.log"; exit 1; }
changes=$(ls "$out"/gpuhal_*.changes)
lintian --tag-display-limit 0 "$changes" >"$out/lintian.log" 2>&1 || true
cat "$out/lintian.log"
if grep -q '^E: ' "$out/lintian.log"; then
  echo "lintian: errors (above)"
  exit 1
fi
echo "lintian: no errors"

packages=(libgpuhal0.1 libgpuhal-dev gpuhal-tools gpuhal-plugin-host gpuhal-plugin-cuda gpuhal-plugin-hsa)
debs=()
for p in "${packages[@]}"; do debs+=("$(ls "$out/${p}"_*.deb)"); done
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
remove() { $sudo dpkg --purge "${packages[@]}" >/dev/null 2>&1 || true; }
trap remove EXIT
$sudo dpkg -i "${debs[@]}" >/dev/null
# The installed tools find the installed plugins (the library's gpuhal/
# directory), with no path set.
info=$(env -u GPUHAL_PLUGIN_PATH -u GPUHAL_BACKEND /usr/bin/gpuhal-info)
echo "$info" | grep -E "\[used\] host .*/gpuhal/libgpuhal-host.so" >/dev/null ||
  { echo "$info"; echo "debs: the installed gpuhal-info did not use the installed host plugin"; exit 1; }
test -f /usr/share/man/man1/gpuhal-info.1.gz || { echo "debs: no man page for gpuhal-info"; exit 1; }
echo "debs: ${#debs[@]} packages built, installed, gpuhal-info ran with the installed host plugin"

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The CPU's answer for move_bytes (host_copy.hpp).
#include "host_copy.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace gpuhal::host {

namespace {

bool read_fast_string_moves() {
#if defined(__x86_64__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 4)) != 0;  // FSRM
#else
  return false;
#endif
}

}  // namespace

const bool g_fast_string_moves = read_fast_string_moves();

}  // namespace gpuhal::host

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// How the host backend moves bytes: memmove, the CPU's string move for the
// copies it is known to do well, and large copies spread over the plugin's
// threads. Every function here has memmove's contract (overlapping ranges
// included) and may be called from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "sanitizer_build.hpp"

namespace gpuhal::host {

// Whether this CPU says its string moves are fast for every length (CPUID
// leaf 7, EDX bit 4, "fast short REP MOVSB": AMD Zen 3 and later, Intel Ice
// Lake and later). Read once when the plugin loads (a static initialiser,
// before any entry can run); false off x86-64. A plain load on the
// synchronous copy's path.
extern const bool g_fast_string_moves;
inline bool fast_string_moves() {
  return g_fast_string_moves;
}

// The smallest copy move_bytes does with `rep movsb`. Below it memmove's
// vector code is faster (on a 2-core EPYC, 64 B: 1.4 against 2.9 ns; 1 KiB:
// 7.4 against 11.6 ns); from 4 KiB to 16 MiB the string move is as fast on
// its own (4 KiB: 32.8 against 33.8 ns; 1 MiB: 16.0 against 18.1 us), and a
// synchronous 4 KiB copy followed by the caller's own work is faster with it
// (36.5 against 40.7 ns a copy through the backend).
constexpr size_t kStringMoveMinBytes = size_t(4) << 10;

// Whether move_bytes uses the string move for this copy, given the CPU's
// answer `fast`. Only where no vendor reports it slow:
// - at least kStringMoveMinBytes;
// - ranges that do not overlap (a backward string move is slow everywhere,
//   and a forward one is not memmove when the destination starts inside the
//   source);
// - a destination aligned to 64 bytes: on Zen 3 a misaligned destination
//   makes it up to 20x slower, and Intel's manual warns of up to 25%;
// - a distance between the two addresses, modulo a page, of at least 64
//   bytes either way: the short-distance case is slow on Zen 3 and on some
//   Intel cores (glibc avoids it there too).
inline bool string_move_fits(uintptr_t dst, uintptr_t src, size_t bytes, bool fast) {
  if (!fast || bytes < kStringMoveMinBytes) return false;
  if (dst < src + bytes && src < dst + bytes) return false;
  if (dst % 64 != 0) return false;
  const uintptr_t distance = (dst - src) % 4096;
  return distance >= 64 && distance <= 4096 - 64;
}

// Sanitizers do not see inside an asm statement: their builds keep memmove,
// whose accesses they check.
#if defined(GPUHAL_ADDRESS_SANITIZER) || defined(GPUHAL_THREAD_SANITIZER) || defined(GPUHAL_MEMORY_SANITIZER)
#define GPUHAL_HOST_PLAIN_MEMMOVE 1
#endif

// memmove on the calling thread, with the string move where it fits.
// Inline: the synchronous copy's path calls it between two stores of its own.
inline void move_bytes(void *dst, const void *src, size_t bytes) {
#if defined(__x86_64__) && !defined(GPUHAL_HOST_PLAIN_MEMMOVE)
  if (string_move_fits(reinterpret_cast<uintptr_t>(dst), reinterpret_cast<uintptr_t>(src), bytes,
                       fast_string_moves())) {
    // The direction flag is clear on entry to any function (the SysV ABI),
    // so this copies forward, as the checks above require.
    asm volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(bytes) : : "memory");
    return;
  }
#endif
  std::memmove(dst, src, bytes);
}

// Copies from kCopySpreadBytes up, when the ranges do not overlap, are
// spread over the plugin's thread pool (one thread rarely saturates the
// memory system); smaller ones are one move_bytes on the calling thread.
constexpr size_t kCopySpreadBytes = size_t(16) << 20;
void copy_bytes_spread(void *dst, const void *src, size_t bytes);
inline void copy_bytes(void *dst, const void *src, size_t bytes) {
  const auto d = reinterpret_cast<uintptr_t>(dst), s = reinterpret_cast<uintptr_t>(src);
  const bool overlap = d < s + bytes && s < d + bytes;
  if (bytes < kCopySpreadBytes || overlap) {
    move_bytes(dst, src, bytes);
    return;
  }
  copy_bytes_spread(dst, src, bytes);
}

}  // namespace gpuhal::host

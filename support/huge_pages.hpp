// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Anonymous read-write pages on a huge-page boundary, advised to the
// kernel's transparent huge pages: the core's pinned memory and the host
// backend's device memory both map their larger blocks this way (copies and
// kernels streaming through 4K pages spend much of their time on TLB
// misses). To align, `bytes` + one huge page is mapped and the ends are cut
// off, so the result's `bytes` are the whole mapping (munmap(at, bytes)
// releases it). The advice is a hint: with THP off, or no huge page free,
// small pages as before. MAP_FAILED when mmap fails. Thread-safe.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace gpuhal::support {

inline void *map_huge_aligned(uint64_t bytes, uint64_t huge) {
  void *raw = mmap(nullptr, size_t(bytes + huge), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) return MAP_FAILED;
  const uintptr_t begin = uintptr_t(raw), end = begin + bytes + huge;
  const uintptr_t at = (begin + huge - 1) & ~uintptr_t(huge - 1);
  if (at > begin) munmap(raw, at - begin);
  if (end > at + bytes) munmap(reinterpret_cast<void *>(at + bytes), end - (at + bytes));
  madvise(reinterpret_cast<void *>(at), size_t(bytes), MADV_HUGEPAGE);
  return reinterpret_cast<void *>(at);
}

}  // namespace gpuhal::support

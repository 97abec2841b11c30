// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_device_mappings.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <fstream>
#include <utility>
#include <vector>

#include "host_plugin.hpp"
#include "huge_pages.hpp"

namespace gpuhal::host {

uint64_t page_size() {
  static const uint64_t p = uint64_t(sysconf(_SC_PAGESIZE));
  return p;
}

uint64_t page_round(uint64_t bytes) {
  const uint64_t p = page_size();
  if (bytes > UINT64_MAX - (p - 1)) return 0;
  return (bytes + p - 1) / p * p;
}

uint64_t huge_page_size() {
  static const uint64_t size = [] {
    uint64_t s = 0;
    std::ifstream f("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
    // Without the file (no transparent huge pages), the x86-64 and arm64
    // (4K granule) PMD size: the mapping is then only aligned.
    if (!(f >> s) || s < page_size() || (s & (s - 1)) != 0) s = uint64_t(2) << 20;
    return s;
  }();
  return size;
}

namespace {

// A fresh mapping of `mapped` bytes (whole pages). From the huge page size
// up (GPUHAL_HOST_HUGE_PAGES), it starts on a huge page boundary and is
// advised to the kernel's transparent huge pages: a kernel streaming through
// hundreds of MiB of 4K pages spends much of its time on TLB misses (saxpy
// over 16M floats took 4.6-4.9 ms with them, 2.4-3.3 ms without, on a
// 2-core AMD EPYC). To align it, mapped + one huge page is mapped and the
// ends cut off; the advice is a hint (THP set to never, or no huge page free:
// small pages, as before).
void *fresh_mapping(uint64_t mapped) {
  const uint64_t huge = huge_page_size();
  if (!plugin_state().huge_pages || mapped < huge) {
    void *p = mmap(nullptr, size_t(mapped), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
  }
  void *at = support::map_huge_aligned(mapped, huge);
  return at == MAP_FAILED ? nullptr : at;
}

}  // namespace

void *map_device_memory(uint64_t bytes) {
  const uint64_t mapped = page_round(bytes);
  if (mapped == 0 || mapped > uint64_t(SIZE_MAX / 2)) return nullptr;
  return fresh_mapping(mapped);
}

void unmap_released(void *ptr, uint64_t bytes, int fd, bool kept, const Registry::Mappings &evicted) {
  for (const auto &victim : evicted) munmap(victim.first, size_t(victim.second));
  if (!kept) unmap_device_memory(ptr, bytes, fd);
}

void release_device_memory(void *ptr, uint64_t bytes, int fd) {
  if (!ptr) return;
  Registry::Mappings evicted;
  const bool kept = plugin_state().registry.retire_released(reinterpret_cast<uintptr_t>(ptr), page_round(bytes), fd,
                                                            &evicted);
  unmap_released(ptr, bytes, fd, kept, evicted);
}

void unmap_device_memory(void *ptr, uint64_t bytes, int fd) {
  if (ptr) munmap(ptr, size_t(page_round(bytes)));
  if (fd >= 0) close(fd);
}

}  // namespace gpuhal::host

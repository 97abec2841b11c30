// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
#include "host_device_mappings.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>

#include "host_context.hpp"

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

void *map_device_memory(uint64_t bytes) {
  const uint64_t mapped = page_round(bytes);
  if (mapped == 0 || mapped > uint64_t(SIZE_MAX / 2)) return nullptr;
  if (void *cached = plugin_state().mappings->take(mapped)) return cached;
  void *p = mmap(nullptr, size_t(mapped), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void release_device_memory(void *ptr, uint64_t bytes, int fd) {
  if (ptr && fd < 0 && plugin_state().mappings->keep(ptr, page_round(bytes))) return;
  unmap_device_memory(ptr, bytes, fd);
}

void unmap_device_memory(void *ptr, uint64_t bytes, int fd) {
  if (ptr) munmap(ptr, size_t(page_round(bytes)));
  if (fd >= 0) close(fd);
}

}  // namespace gpuhal::host

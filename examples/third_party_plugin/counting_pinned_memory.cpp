// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pinned and registered host memory (the optional host memory group).
// host_alloc memory is a mapping of its own, unmapped when it is freed (and
// at context_destroy): a host array over it that outlives a reset then keeps
// its bytes, because gpuhal maps a copy back at the same addresses, which
// needs them unmapped. A heap block would stay mapped and serve the next
// allocation, whose bytes the old array would share (plugin.h, "Host-addressed
// memory kept past its context", for an allocator that must keep addresses).
#include <sys/mman.h>

#include <cerrno>
#include <iterator>
#include <mutex>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

constexpr uint32_t kHostFlags =
    GPUHAL_HOST_ALLOC_PORTABLE | GPUHAL_HOST_ALLOC_MAPPED | GPUHAL_HOST_ALLOC_WRITE_COMBINED;
gpuhal_status_t host_alloc(gpuhal_context_t ctx, uint64_t bytes, uint32_t flags, void **out) {
  count();
  if (!out || bytes == 0 || (flags & ~kHostFlags)) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_alloc: bad arguments");
  void *p = mmap(nullptr, size_t(page_round(bytes)), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: host_alloc: out of memory");
  const bool mapped = (flags & GPUHAL_HOST_ALLOC_MAPPED) != 0;  // host_alloc: keep the mapped flag
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->host[reinterpret_cast<uintptr_t>(p)] = HostRange{bytes, mapped, true};
  *out = p;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_free(gpuhal_context_t ctx, void *ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->host.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == c->host.end() || !it->second.allocated) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_free of an unknown pointer");
  munmap(ptr, size_t(page_round(it->second.bytes)));
  c->host.erase(it);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_register(gpuhal_context_t ctx, void *ptr, uint64_t bytes, uint32_t flags) {
  count();
  if (!ptr || bytes == 0 || (flags & ~kHostFlags)) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_register: bad arguments");
  // plugin.h: a range with an unmapped page is refused. msync fails with
  // ENOMEM on one (MS_ASYNC starts no write-back).
  const uint64_t page = page_round(1);
  const uintptr_t first_page = reinterpret_cast<uintptr_t>(ptr) & ~(page - 1);
  if (msync(reinterpret_cast<void *>(first_page), size_t(reinterpret_cast<uintptr_t>(ptr) + bytes - first_page), MS_ASYNC) != 0 &&
      errno == ENOMEM)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_register: the range is not all mapped");
  auto *c = reinterpret_cast<Context *>(ctx);
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  std::lock_guard<std::mutex> lock(c->mu);
  auto next = c->host.lower_bound(p);
  const bool overlaps_next = next != c->host.end() && next->first < p + bytes;
  const bool overlaps_previous = next != c->host.begin() && std::prev(next)->first + std::prev(next)->second.bytes > p;
  if (overlaps_next || overlaps_previous)
    return fail(GPUHAL_ERROR_ALREADY_REGISTERED, "counting: host_register: the range overlaps registered memory");
  c->host[p] = HostRange{bytes, (flags & GPUHAL_HOST_ALLOC_MAPPED) != 0, false};
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_unregister(gpuhal_context_t ctx, void *ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->host.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == c->host.end() || it->second.allocated) return fail(GPUHAL_ERROR_NOT_REGISTERED, "counting: host_unregister: not registered");
  c->host.erase(it);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t host_get_device_pointer(gpuhal_context_t ctx, void *host_ptr, gpuhal_deviceptr_t *out) {
  count();
  if (!host_ptr || !out) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_get_device_pointer: null pointer");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = containing(c->host, reinterpret_cast<uintptr_t>(host_ptr), 1, host_size);
  if (it == c->host.end() || !it->second.mapped)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: host_get_device_pointer: not mapped host memory");
  *out = reinterpret_cast<uintptr_t>(host_ptr);  // one address space
  return GPUHAL_SUCCESS;
}

}  // namespace counting

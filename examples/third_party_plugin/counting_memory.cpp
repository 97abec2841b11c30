// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Device memory: memfds mapped shared (IPC hands them to other processes).
#include <sys/mman.h>
#include <unistd.h>

#include <mutex>
#include <random>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t mem_alloc(gpuhal_context_t ctx, uint64_t bytes, gpuhal_deviceptr_t *out) {
  count();
  if (bytes == 0 || bytes > (uint64_t(1) << 30)) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: 1 GiB at most");
  static std::mt19937_64 random{std::random_device{}()};
  static std::mutex random_mu;
  Allocation a;
  a.bytes = bytes;
  {
    std::lock_guard<std::mutex> lock(random_mu);
    a.token = random();
  }
  a.fd = memfd_create(memfd_name(a.token).c_str(), MFD_CLOEXEC);
  if (a.fd < 0) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: memfd_create failed");
  void *p = MAP_FAILED;
  if (ftruncate(a.fd, off_t(page_round(bytes))) == 0)
    p = mmap(nullptr, size_t(page_round(bytes)), PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
  if (p == MAP_FAILED) {
    close(a.fd);
    return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: cannot map device memory");
  }
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->allocations[reinterpret_cast<uintptr_t>(p)] = a;
  *out = reinterpret_cast<uintptr_t>(p);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t mem_free(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->allocations.find(uintptr_t(ptr));
  if (it == c->allocations.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: mem_free of an unknown pointer");
  munmap(reinterpret_cast<void *>(it->first), size_t(page_round(it->second.bytes)));
  close(it->second.fd);
  c->allocations.erase(it);
  return GPUHAL_SUCCESS;
}

}  // namespace counting

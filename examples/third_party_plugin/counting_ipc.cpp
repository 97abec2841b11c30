// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// IPC (the optional group): another process opens a memfd through /proc.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <mutex>
#include <string>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

struct IpcBytes {
  char magic[8];
  int32_t pid;
  int32_t fd;
  uint64_t token;
  uint64_t bytes;
};
static_assert(sizeof(IpcBytes) <= GPUHAL_IPC_HANDLE_SIZE, "the handle must fit");
gpuhal_status_t ipc_get_handle(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                               gpuhal_deviceptr_t *base, uint64_t *bytes) {
  count();
  if (!out || !base || !bytes) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_get_handle: null output");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = containing(c->allocations, uintptr_t(ptr), 1, alloc_size);
  if (it == c->allocations.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_get_handle: not device memory");
  IpcBytes h{{'c', 'o', 'u', 'n', 't', 'i', 'n', 'g'}, int32_t(getpid()), it->second.fd, it->second.token,
             it->second.bytes};
  std::memset(out, 0, sizeof *out);
  std::memcpy(out->bytes, &h, sizeof h);
  *base = it->first;  // the allocation's base: the core carries ptr - base
  *bytes = it->second.bytes;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t ipc_open(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                         uint64_t *bytes) {
  count();
  IpcBytes h;
  if (!handle || !out || !bytes) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_open: null argument");
  std::memcpy(&h, handle->bytes, sizeof h);
  if (std::memcmp(h.magic, "counting", 8) != 0 || h.bytes == 0)
    return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: not a handle of this plugin");
  // The exporter's descriptor, if it still names the same memfd (a freed
  // allocation's number may name something else by now).
  const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
  char target[256] = {};
  const ssize_t n = readlink(path.c_str(), target, sizeof target - 1);
  if (n <= 0 || std::string(target, size_t(n)).find(memfd_name(h.token)) == std::string::npos)
    return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: the exported memory is gone (stale handle)");
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "counting: ipc_open: cannot open the exporter's memory");
  void *p = mmap(nullptr, size_t(page_round(h.bytes)), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "counting: ipc_open: cannot map the memory");
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  c->opened[reinterpret_cast<uintptr_t>(p)] = h.bytes;
  *out = reinterpret_cast<uintptr_t>(p);
  *bytes = h.bytes;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t ipc_close(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->opened.find(uintptr_t(ptr));
  if (it == c->opened.end()) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: ipc_close: not an opened mapping");
  munmap(reinterpret_cast<void *>(it->first), size_t(page_round(it->second)));
  c->opened.erase(it);
  return GPUHAL_SUCCESS;
}

}  // namespace counting

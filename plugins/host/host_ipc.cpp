// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's inter-process sharing of device memory.
//
// On the first export of an allocation its pages are copied into a memfd
// that is then mapped over the same addresses (MAP_FIXED), so the device
// pointer and the contents stay the same while another process can now map
// the same pages. The handle names the exporting process, the memfd's
// descriptor there and a random token that is also in the memfd's name; the
// importer opens /proc/<pid>/fd/<fd>, checks the token and maps it. This
// needs the importer to be allowed to read the exporter's /proc entries
// (same user, the usual case), and the exporter to be alive.

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <random>
#include <shared_mutex>
#include <string>

#include "host_plugin.hpp"
#include "host_device_mappings.hpp"
#include "host_entries.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {
namespace {

using plugin::fail;

// Layout of the 64 handle bytes (host byte order: same machine only).
struct HandleBytes {
  char magic[8];
  uint32_t pid;
  int32_t fd;
  uint64_t size;
  uint64_t token;
};
static_assert(sizeof(HandleBytes) <= GPUHAL_IPC_HANDLE_SIZE, "IPC handle layout");
constexpr char kMagic[8] = {'g', 'p', 'u', 'h', 'a', 'l', 'H', '1'};

// Serialises first exports (the copy + remap must not run twice at once).
std::mutex g_export_mu;

std::string errno_text(const char *call) {
  return std::string(call) + ": " + std::strerror(errno);
}

std::string token_name(uint64_t token) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "gpuhal-ipc-%016llx", static_cast<unsigned long long>(token));
  return buf;
}

std::mutex g_token_mu;
std::mt19937_64 g_token_gen{std::random_device{}()};

uint64_t random_token() {
  std::lock_guard<std::mutex> lock(g_token_mu);
  uint64_t t;
  do t = g_token_gen();
  while (t == 0);
  return t;
}

// Replaces the anonymous pages of [base, base+mapped) by a memfd holding the
// same bytes. Returns the fd, or -1 with errno set.
int share_in_place(void *base, uint64_t mapped, uint64_t token) {
  const int fd = memfd_create(token_name(token).c_str(), MFD_CLOEXEC);
  if (fd < 0) return -1;
  auto give_up = [fd] {
    const int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  };
  if (ftruncate(fd, off_t(mapped)) != 0) return give_up();
  const char *src = static_cast<const char *>(base);
  for (uint64_t done = 0; done < mapped;) {
    const ssize_t n = pwrite(fd, src + done, size_t(mapped - done), off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return give_up();
    done += uint64_t(n);
  }
  if (mmap(base, size_t(mapped), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) return give_up();
  return fd;
}

}  // namespace

gpuhal_status_t ipc_get_handle(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr, gpuhal_ipc_handle_t *out,
                               gpuhal_deviceptr_t *base_out, uint64_t *bytes_out) {
  return in_context(ctx, "ipc_get_handle", [&](HostContext *c) -> gpuhal_status_t {
    std::lock_guard<std::mutex> lock(g_export_mu);
    uintptr_t base = 0;
    Region r;
    if (!plugin_state().registry.find_containing(uintptr_t(ptr), c, RegionKind::Device, &base, &r))
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "ipc_get_handle: the address is not inside a device allocation of "
                  "this context");
    if (r.fd < 0) {
      // No operation may write the pages while they are copied and swapped:
      // a stream's worker holds device_pages_mutex() shared while an
      // operation runs, and an operation run inline on a calling thread
      // holds its context's submit mutex (queued ones run after the swap,
      // on the shared pages). Copies may cross contexts: every context's
      // submit mutex is held. From a stream callback, which holds the
      // pages lock, this would wait for itself.
      if (on_worker_thread()) return fail(GPUHAL_ERROR_INVALID_VALUE, "ipc_get_handle: called from a stream callback");
      const uint64_t token = random_token();
      int fd;
      {
        std::unique_lock<PagesLock> pages(device_pages_mutex());
        plugin_state().contexts.with_all([&](const std::vector<HostContext *> &all) {
          std::vector<std::unique_lock<std::mutex>> held;
          held.reserve(all.size());
          for (HostContext *x : all) held.push_back(x->hold_submissions());
          fd = share_in_place(reinterpret_cast<void *>(base), page_round(r.size), token);
        });
      }
      if (fd < 0) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "ipc_get_handle: " + errno_text("sharing the allocation"));
      plugin_state().registry.set_export(base, fd, token);
      r.fd = fd;
      r.token = token;
    }
    HandleBytes h{};
    std::memcpy(h.magic, kMagic, sizeof kMagic);
    h.pid = uint32_t(getpid());
    h.fd = r.fd;
    h.size = r.size;
    h.token = r.token;
    std::memset(out->bytes, 0, sizeof out->bytes);
    std::memcpy(out->bytes, &h, sizeof h);
    *base_out = base;
    *bytes_out = r.size;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t ipc_open(gpuhal_context_t ctx, const gpuhal_ipc_handle_t *handle, gpuhal_deviceptr_t *out,
                         uint64_t *bytes_out) {
  return in_context(ctx, "ipc_open", [&](HostContext *c) -> gpuhal_status_t {
    if (!handle || !out || !bytes_out) return fail(GPUHAL_ERROR_INVALID_VALUE, "ipc_open: null pointer");
    HandleBytes h;
    std::memcpy(&h, handle->bytes, sizeof h);
    if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.fd < 0 || h.size == 0 || h.token == 0)
      return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "ipc_open: not an IPC handle of the host backend");
    const std::string path = "/proc/" + std::to_string(h.pid) + "/fd/" + std::to_string(h.fd);
    const std::string stale =
        "ipc_open: the handle is stale (process " + std::to_string(h.pid) + " exited or freed the memory)";
    // The token in the memfd's name tells that the descriptor is still the
    // exported one (descriptor numbers are reused).
    char link[256];
    const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
    if (n < 0) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, stale + ": " + errno_text(("readlink " + path).c_str()));
    link[n] = '\0';
    if (!std::strstr(link, token_name(h.token).c_str())) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, stale);
    const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0) return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, "ipc_open: " + errno_text(("open " + path).c_str()));
    struct stat st;
    const uint64_t mapped = page_round(h.size);
    if (fstat(fd, &st) != 0 || uint64_t(st.st_size) < mapped) {
      close(fd);
      return fail(GPUHAL_ERROR_INVALID_IPC_HANDLE, stale + ": the shared memory is smaller than the handle says");
    }
    void *p = mmap(nullptr, size_t(mapped), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return fail(GPUHAL_ERROR_OUT_OF_MEMORY, "ipc_open: " + errno_text("mmap"));
    try {
      plugin_state().registry.insert(reinterpret_cast<uintptr_t>(p), Region{h.size, c, RegionKind::IpcOpened, 0});
    } catch (...) {
      munmap(p, size_t(mapped));
      throw;
    }
    *out = reinterpret_cast<uintptr_t>(p);
    *bytes_out = h.size;
    return GPUHAL_SUCCESS;
  });
}

gpuhal_status_t ipc_close(gpuhal_context_t ctx, gpuhal_deviceptr_t ptr) {
  return in_context(ctx, "ipc_close", [&](HostContext *c) -> gpuhal_status_t {
    const Region r = plugin_state().registry.erase(uintptr_t(ptr), c, RegionKind::IpcOpened);
    if (r.size == 0)
      return fail(GPUHAL_ERROR_INVALID_VALUE,
                  "ipc_close: the address is not memory opened with ipc_open in this "
                  "context");
    unmap_device_memory(reinterpret_cast<void *>(uintptr_t(ptr)), r.size, -1);
    return GPUHAL_SUCCESS;
  });
}

void reset_export_locks_after_fork() {
  new (&g_export_mu) std::mutex();
  new (&g_token_mu) std::mutex();
  g_token_gen.seed(std::random_device{}());  // not the parent's sequence
}

}  // namespace gpuhal::host

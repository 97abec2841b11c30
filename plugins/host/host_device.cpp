// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's devices: GPUHAL_HOST_DEVICES shares of the machine,
// their properties, and peer access (every host device addresses the same
// memory).
#include "host_device.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include <xxhash.h>

#include "host_entries.hpp"
#include "host_kernel.hpp"
#include "host_plugin.hpp"
#include "plugin_support.hpp"

namespace gpuhal::host {

using plugin::fail;

uint64_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

uint64_t available_memory() {
  const long pages = sysconf(_SC_AVPHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : 0;
}

gpuhal_status_t device_count(int32_t *count) {
  if (!plugin_state_exists()) return fail(GPUHAL_ERROR_INITIALIZATION_FAILED, "device_count: plugin not initialised");
  *count = int32_t(plugin_state().devices.size());
  return GPUHAL_SUCCESS;
}

HostDevice *device_at(int32_t ordinal) {
  if (!plugin_state_exists()) return nullptr;
  auto &d = plugin_state().devices;
  return ordinal >= 0 && size_t(ordinal) < d.size() ? d[size_t(ordinal)].get() : nullptr;
}

namespace {

// A host device's UUID: stable on one machine and distinct between its
// devices and between machines. A 128-bit hash of the machine's id
// (/etc/machine-id, else the host name) and the ordinal, marked as an
// RFC 9562 version 8 (vendor-specific) UUID.
void host_device_uuid(int32_t ordinal, unsigned char out[16]) {
  std::string machine;
  for (const char *path : {"/etc/machine-id", "/var/lib/dbus/machine-id"}) {
    std::ifstream f(path);
    if (f && std::getline(f, machine) && !machine.empty()) break;
  }
  if (machine.empty()) {
    char name[256] = {};
    ::gethostname(name, sizeof name - 1);
    machine = name;
  }
  const std::string key = "gpuhal host device\n" + machine + "\n" + std::to_string(ordinal);
  const XXH128_hash_t h = XXH3_128bits(key.data(), key.size());
  for (int i = 0; i < 8; ++i) {
    out[i] = static_cast<unsigned char>(h.high64 >> (56 - 8 * i));
    out[8 + i] = static_cast<unsigned char>(h.low64 >> (56 - 8 * i));
  }
  out[6] = static_cast<unsigned char>((out[6] & 0x0f) | 0x80);  // version 8
  out[8] = static_cast<unsigned char>((out[8] & 0x3f) | 0x80);  // the RFC's variant
}
}  // namespace

gpuhal_status_t device_properties(int32_t ordinal, gpuhal_device_properties_t *out) {
  if (!out || out->struct_size < 8)
    return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: null or too small output");
  HostDevice *d = device_at(ordinal);
  if (!d) return fail(GPUHAL_ERROR_INVALID_VALUE, "device_properties: no host device " + std::to_string(ordinal));
  gpuhal_device_properties_t p{};
  std::snprintf(p.name, sizeof p.name, "gpuhal host CPU device %d", int(ordinal));
  std::snprintf(p.vendor, sizeof p.vendor, "gpuhal");
  p.total_memory = d->total_memory;
  p.shared_memory_per_block = kSharedMemoryPerBlock;
  p.multiprocessor_count = int32_t(std::max(1u, std::thread::hardware_concurrency()));
  p.warp_size = 1;
  p.max_threads_per_block = gpuhal_host_max_items;
  p.max_block_dim[0] = 1024;
  p.max_block_dim[1] = 1024;
  p.max_block_dim[2] = 64;
  p.max_grid_dim[0] = 0x7fffffff;
  p.max_grid_dim[1] = 65535;
  p.max_grid_dim[2] = 65535;
  p.can_map_host_memory = 1;
  p.unified_addressing = 1;
  p.concurrent_kernels = 1;
  p.pci_device = ordinal;
  // Kernels run in this process: a kernel's bad access is a fault of the process.
  p.recovers_from_faults = 0;
  // Its streams and queues live in this plugin: only the core submits to them.
  p.exclusive_contexts = 1;
  // A module is a shared object dlopened by the calling thread; no stream
  // takes part in it.
  p.module_loads_wait = 0;
  p.synchronize_waits_for_all_work = 1;  // its contexts are its own (exclusive_contexts)
  host_device_uuid(ordinal, p.uuid);
  std::snprintf(p.driver_version, sizeof p.driver_version, "gpuhal host backend (plugin ABI %d.%d)", GPUHAL_ABI_MAJOR,
                GPUHAL_ABI_MINOR);
  return plugin::write_properties(p, out);
}

// ---- peer access: every host device addresses the same memory -----------------------

gpuhal_status_t device_can_access_peer(int32_t ordinal, int32_t peer, int32_t *out) {
  if (!device_at(ordinal) || !device_at(peer))
    return fail(GPUHAL_ERROR_INVALID_VALUE,
                "device_can_access_peer: no host device " + std::to_string(device_at(ordinal) ? peer : ordinal));
  *out = ordinal != peer ? 1 : 0;
  return GPUHAL_SUCCESS;
}

gpuhal_status_t context_enable_peer_access(gpuhal_context_t ctx, gpuhal_context_t peer) {
  HostContext *c = find_context(ctx);
  HostContext *p = find_context(peer);
  if (!c || !p) return bad_context("context_enable_peer_access");
  if (c->device() == p->device())
    return fail(GPUHAL_ERROR_INVALID_VALUE, "context_enable_peer_access: both contexts are on the same device");
  return GPUHAL_SUCCESS;  // nothing to map: all host devices share one address space
}

}  // namespace gpuhal::host

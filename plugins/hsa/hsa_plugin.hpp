// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's process-wide state: how often it was initialised, the
// devices and the CPU agent init found (or why there are none), and the
// live contexts by handle; the memory kept past its context. Set by init and shutdown under `mu`; read by
// entries that run between them.
#pragma once

#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "handle_registry.hpp"
#include "hsa_context.hpp"
#include "hsa_device.hpp"

namespace gpuhal::hsa {

struct HsaPlugin {
  std::mutex mu;  // guards init_count and the devices while they change
  int init_count = 0;
  std::vector<Device> devices;
  HostAgent host;
  std::string no_device_reason;  // hsa_init's failure, reported by device_count
  plugin::HandleRegistry<HsaContext, gpuhal_context_t> contexts;
  // Managed and host memory kept past its context (hsa_kept_memory.cpp),
  // by base address, guarded by kept_mu.
  std::mutex kept_mu;
  std::set<uintptr_t> kept;
};
extern HsaPlugin g_plugin;

// Frees what mem_keep kept and mem_free_kept did not free (shutdown).
void free_kept_memory();

}  // namespace gpuhal::hsa

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Faults the hsa backend catches instead of letting ROCr abort the process:
// ROCr calls abort() on a GPU memory fault unless the application
// registered a system event handler (hsa_amd_register_system_event_handler;
// one per process, never unregistered). The handler fails every context on
// the faulting agent (fail_context); the plugin stays loaded once it
// registered it. The contexts are found through a registry of their own,
// under a mutex nothing holds while waiting.
#include <dlfcn.h>

#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_set>

#include "hsa_context.hpp"

namespace gpuhal::hsa {

// The live contexts again, for the system event handler: under their own
// mutex, which nothing holds while it waits (the plugin's mutex can be held
// by a thread waiting for a context's mutex, held by a submitter waiting for
// the queue the runtime's event thread would unblock).
namespace {
std::mutex g_registry_mu;
std::unordered_set<HsaContext *> g_registry;
}  // namespace

void for_each_context(const std::function<void(HsaContext *)> &fn) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  for (HsaContext *c : g_registry) fn(c);
}

namespace {
// ROCr's system event handler (one per process, never unregistered: the
// plugin stays loaded once it registered it). A GPU memory fault fails
// every context on the faulting agent instead of ROCr's abort().
hsa_status_t on_system_event(const hsa_amd_event_t *event, void *) {
  if (!event || event->event_type != HSA_AMD_GPU_MEMORY_FAULT_EVENT) return HSA_STATUS_SUCCESS;
  const hsa_amd_gpu_memory_fault_info_t &f = event->memory_fault;
  std::string reasons;
  const std::pair<uint32_t, const char *> names[] = {{HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT, "page not present"},
                                                     {HSA_AMD_MEMORY_FAULT_READ_ONLY, "write to a read-only page"},
                                                     {HSA_AMD_MEMORY_FAULT_NX, "execute of a no-execute page"},
                                                     {HSA_AMD_MEMORY_FAULT_HOST_ONLY, "access to a host-only page"}};
  for (const auto &n : names)
    if (f.fault_reason_mask & n.first) reasons += std::string(reasons.empty() ? "" : ", ") + n.second;
  char address[32];
  std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(f.virtual_address));
  const std::string what = std::string("GPU memory access fault at address ") + address +
                           (reasons.empty() ? "" : " (" + reasons + ")") + " by a kernel";
  for_each_context([&](HsaContext *c) {
    if (c->device->agent.handle == f.agent.handle) fail_context(c, what);
  });
  return HSA_STATUS_SUCCESS;
}

}  // namespace

// After the runtime started: the wait slice from its clock, and the handler
// that keeps memory faults from aborting the process.
bool watch_faults() {
  uint64_t frequency = 0;
  if (rt().hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY, &frequency) == HSA_STATUS_SUCCESS)
    set_wait_slice(frequency);
  if (!rt().hsa_amd_register_system_event_handler) {
    plugin::log(GPUHAL_LOG_WARN, "hsa: this ROCr has no hsa_amd_register_system_event_handler: a GPU memory fault "
                                 "aborts the process");
    return false;
  }
  const hsa_status_t st = rt().hsa_amd_register_system_event_handler(on_system_event, nullptr);
  if (st != HSA_STATUS_SUCCESS) {
    plugin::log(GPUHAL_LOG_WARN, "hsa: hsa_amd_register_system_event_handler failed (" + rt().describe(st) +
                                     "; another library registered one?): a GPU memory fault may abort the process");
    return false;
  }
  Dl_info info;  // the handler lives here: never unloaded from now on
  if (dladdr(reinterpret_cast<void *>(&on_system_event), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
  return true;
}

void register_context(HsaContext *c) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_registry.insert(c);
}

void unregister_context(HsaContext *c) {
  std::lock_guard<std::mutex> lock(g_registry_mu);  // no system event reaches it from here on
  g_registry.erase(c);
}

}  // namespace gpuhal::hsa

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Capabilities: their names, and which a backend has (Runtime::supports and
// the default selection's GPUHAL_REQUIRE check share the rules).
#include "capability_rules.hpp"

#include <cstring>

namespace gpuhal {

namespace {

struct Named {
  Capability capability;
  const char *name;
};

// One row per capability, in the enum's order.
constexpr Named kNames[] = {
    {Capability::StreamBarrier, "stream_barrier"},
    {Capability::HostMemory, "host_memory"},
    {Capability::MappedHostMemory, "mapped_host_memory"},
    {Capability::Ipc, "ipc"},
    {Capability::StreamOrderedMemory, "stream_ordered_memory"},
    {Capability::PeerAccess, "peer_access"},
    {Capability::Kernels, "kernels"},
    {Capability::ManagedMemory, "managed_memory"},
    {Capability::FaultRecovery, "fault_recovery"},
    {Capability::KernelAttributes, "kernel_attributes"},
    {Capability::KernelPrintf, "kernel_printf"},
    {Capability::Graphs, "graphs"},
    {Capability::StreamPriorities, "stream_priorities"},
    {Capability::RectCopies, "rect_copies"},
    {Capability::ManagedHints, "managed_hints"},
    {Capability::VirtualMemory, "virtual_memory"},
    {Capability::ContextLimits, "context_limits"},
    {Capability::DriverMemoryPools, "driver_memory_pools"},
};

}  // namespace

const char *to_string(Capability capability) {
  for (const Named &n : kNames)
    if (n.capability == capability) return n.name;
  return "unknown capability";
}

std::optional<Capability> capability_named(const std::string &name) {
  for (const Named &n : kNames)
    if (name == n.name) return n.capability;
  return std::nullopt;
}

std::string capability_names() {
  std::string out;
  for (const Named &n : kNames) out += std::string(out.empty() ? "" : ", ") + n.name;
  return out;
}

const std::vector<Capability> &all_capabilities() {
  static const std::vector<Capability> all = [] {
    std::vector<Capability> v;
    for (const Named &n : kNames) v.push_back(n.capability);
    return v;
  }();
  return all;
}

namespace detail {

bool backend_supports(const Backend &t, const DeviceFacts &devices, Capability c) {
  if (c == Capability::MappedHostMemory) return t.has_host_alloc() && devices.all_map_host_memory;
  if (c == Capability::KernelPrintf) {
    const char *text = nullptr;
    return t.has_lower_builtin() && t.lower_builtin_status("gpuhal_printf", &text) == GPUHAL_SUCCESS;
  }
  if (c == Capability::FaultRecovery) return devices.all_recover_from_faults;
  // Every other capability is one entry (the loader checked that its group
  // is present in full or not at all).
  const std::pair<Capability, bool> present[] = {
      {Capability::StreamBarrier, t.has_stream_barrier()},
      {Capability::HostMemory, t.has_host_alloc()},
      {Capability::Ipc, t.has_ipc_get_handle()},
      {Capability::StreamOrderedMemory, t.has_mem_alloc_async()},
      {Capability::PeerAccess, t.has_device_can_access_peer()},
      {Capability::Kernels, t.has_module_compile()},
      {Capability::ManagedMemory, t.has_mem_alloc_managed()},
      {Capability::KernelAttributes, t.has_kernel_attributes() && t.has_kernel_max_active_blocks()},
      {Capability::Graphs, t.has_stream_begin_capture()},
      {Capability::StreamPriorities, t.has_stream_create_with_priority()},
      {Capability::RectCopies, t.has_memcpy_rect_async()},
      {Capability::ManagedHints, t.has_mem_prefetch_async()},
      {Capability::VirtualMemory, t.has_vm_reserve()},
      {Capability::ContextLimits, t.has_context_set_limit()},
      {Capability::DriverMemoryPools, t.has_mem_pool_create() && t.has_mem_alloc_async()},
  };
  for (const auto &p : present)
    if (p.first == c) return p.second;
  return false;
}

DeviceFacts device_facts(const Backend &t, int device_count) {
  DeviceFacts facts;
  for (int i = 0; i < device_count; ++i) {
    gpuhal_device_properties_t p{};
    p.abi_version = GPUHAL_ABI_VERSION;
    p.struct_size = sizeof p;
    if (t.device_properties_status(i, &p) != GPUHAL_SUCCESS) return DeviceFacts{false, false};
    facts.all_map_host_memory = facts.all_map_host_memory && p.can_map_host_memory != 0;
    const bool says = p.struct_size >= offsetof(gpuhal_device_properties_t, recovers_from_faults) +
                                           sizeof p.recovers_from_faults;
    facts.all_recover_from_faults = facts.all_recover_from_faults && says && p.recovers_from_faults != 0;
  }
  return facts;
}

std::vector<Capability> missing_capabilities(const PluginLibrary &library, const std::vector<Capability> &required) {
  std::vector<Capability> missing;
  if (required.empty()) return missing;
  const Backend t(library);
  const DeviceFacts facts = device_facts(t, library.device_count());
  for (Capability c : required)
    if (!backend_supports(t, facts, c)) missing.push_back(c);
  return missing;
}

std::string capability_list(const std::vector<Capability> &capabilities) {
  std::string out;
  for (Capability c : capabilities) out += std::string(out.empty() ? "" : ", ") + to_string(c);
  return out;
}

}  // namespace detail
}  // namespace gpuhal

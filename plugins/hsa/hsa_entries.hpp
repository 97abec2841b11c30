// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's entries, one file per object, named as in every backend (docs/architecture.md,
// "Backend layout"): hsa_plugin.cpp (lifecycle; it fills the table),
// hsa_device.cpp, hsa_context.cpp, hsa_memory.cpp (device and managed
// memory), hsa_kept_memory.cpp (memory kept past its context),
// hsa_pinned_memory.cpp (pinned, mapped and registered host
// memory), hsa_transfer.cpp, hsa_stream.cpp, hsa_event.cpp, hsa_graph.cpp,
// hsa_kernel.cpp and hsa_kernel_attributes.cpp (device code); no
// IPC and no virtual memory (kLeftOut below).
#pragma once

#include "plugin_table.hpp"

namespace gpuhal::hsa {

// Every entry of the plugin table, with the table's own signature.
#include "plugin_entries.inc"
// What the hsa backend leaves NULL, so the core reports it unsupported:
// IPC, stream-ordered memory and peer access are not built yet (ROCr has
// hsa_amd_ipc_memory_*, hsa_amd_memory_pool_* and hsa_amd_agents_allow_access
// for them), and HSA has no context object to adopt. Managed-memory
// prefetch and advice are left out too: this backend's managed memory is
// the fine-grained system pool, coherent and never migrated, so there is
// nothing for them to move; hsa_amd_svm_prefetch_async and
// hsa_amd_svm_attributes_set act on SVM ranges, which it does not allocate.
// Virtual memory is left out: ROCr has it as hsa_amd_vmem_* from ROCm 6.0,
// and Debian 12's ROCr (5.2) has none of them. Context limits are left
// out: ROCr has no printf buffer (gpuhal_printf is unsupported there) and
// sizes a kernel's scratch from its code object, per dispatch.
// context_waits_for_stream is left out: this backend's synchronise waits for
// its own queues only (synchronize_waits_for_all_work is 0), so the core
// never asks it. Memory pools as objects go with stream-ordered memory
// (their memory is freed with mem_free_async): the core's caching
// MemoryPool, a stream-ordered free list over ROCr's allocator, is this
// backend's pool.
constexpr plugin::EntryNames<27> kLeftOut{{"ipc_get_handle", "ipc_open", "ipc_close", "mem_alloc_async",
                                           "mem_free_async", "device_can_access_peer", "context_enable_peer_access",
                                           "context_adopt", "mem_prefetch_async", "mem_advise", "vm_granularity",
                                           "vm_reserve", "vm_free", "vm_create", "vm_release", "vm_map", "vm_unmap",
                                           "vm_set_access", "context_set_limit", "context_get_limit",
                                           "context_waits_for_stream", "mem_pool_create", "mem_pool_destroy",
                                           "mem_pool_alloc_async", "mem_pool_trim", "mem_pool_get_attribute",
                                           "mem_pool_set_attribute"}};

}  // namespace gpuhal::hsa

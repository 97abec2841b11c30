// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host backend's virtual memory (plugin.h, ABI 1.10): reservations are
// PROT_NONE anonymous mappings, physical memory a memfd, a mapping the
// memfd mapped MAP_FIXED over part of a reservation, access mprotect.
// Access is the process's own page protection, so it is the same for every
// device of the backend, and read-only access is not offered (the
// backend's copies would write through it): GPUHAL_VM_ACCESS_READ is
// GPUHAL_ERROR_NOT_SUPPORTED, READ_WRITE and NONE are what they say.
//
// Thread safety: every entry takes the plugin's virtual-memory lock.
// Ownership: everything a context made goes with it (release_virtual_memory).
#pragma once

#include <memory>

namespace gpuhal::host {

class HostContext;
struct VmState;

// The plugin's virtual-memory table (one in HostPlugin, made with it).
std::shared_ptr<VmState> make_virtual_memory_state();

// Unmaps every mapping and reservation of `c` and frees its physical
// memory (context teardown, after its streams stopped).
void release_virtual_memory(HostContext *c);

}  // namespace gpuhal::host

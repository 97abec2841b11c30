// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's entries, one file per object, named as in every backend (docs/architecture.md,
// "Backend layout"): cuda_plugin.cpp (lifecycle; it fills the table),
// cuda_device.cpp, cuda_context.cpp, cuda_memory.cpp (device and managed
// memory), cuda_pinned_memory.cpp (pinned, mapped and registered host
// memory), cuda_transfer.cpp, cuda_stream.cpp, cuda_event.cpp, cuda_graph.cpp,
// cuda_kernel.cpp and cuda_kernel_attributes.cpp (device code),
// cuda_ipc.cpp, cuda_virtual_memory.cpp.
#pragma once

#include "plugin_table.hpp"

namespace gpuhal::cuda {

// Every entry of the plugin table, with the table's own signature.
#include "plugin_entries.inc"
// The cuda backend implements every entry but mem_keep / mem_free_kept:
// a reset is cuDevicePrimaryCtxReset, which frees every allocation of the
// context ("Destroy all allocations and reset all state on the primary
// context"), with no way to keep one; the driver unmaps it, so the core's
// copy of what a live host array addresses goes back at the same addresses.
constexpr plugin::EntryNames<2> kLeftOut{{"mem_keep", "mem_free_kept"}};

}  // namespace gpuhal::cuda

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
// The cuda backend implements every entry.
constexpr plugin::EntryNames<0> kLeftOut{};

}  // namespace gpuhal::cuda

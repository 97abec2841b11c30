// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda plugin's entries, one file per object: cuda_plugin.cpp (devices,
// contexts, peer access, native handles), cuda_memory.cpp (device and
// managed memory, the stream-ordered pool), cuda_transfer.cpp (copies and
// memsets), cuda_stream.cpp (streams and events), cuda_pinned_memory.cpp
// (pinned, mapped and registered host memory), cuda_ipc.cpp (IPC),
// cuda_kernel.cpp (device code). cuda_plugin.cpp fills the table.
#pragma once

#include "plugin_table.hpp"

namespace gpuhal::cuda {

// Every entry of the plugin table, with the table's own signature.
#include "plugin_entries.inc"
// The cuda backend implements every entry.
constexpr plugin::EntryNames<0> kLeftOut{};

}  // namespace gpuhal::cuda

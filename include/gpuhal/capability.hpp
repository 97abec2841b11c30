// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What a backend can do beyond the core API: Runtime::supports and
// Context::supports answer for one, Config::required (GPUHAL_REQUIRE) names
// the ones a program needs, and each has a name (to_string, capability_named)
// as GPUHAL_REQUIRE, gpuhal-info's JSON and the Python package spell it.
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <optional>
#include <string>
#include <vector>

namespace gpuhal {

// Optional plugin features, answered from the plugin's table.
enum class Capability {
  StreamBarrier,        // stream_barrier (events + all prior work in one op)
  HostMemory,           // pinned / registered host memory
  MappedHostMemory,     // host memory mapped into the device address space
  Ipc,                  // device memory shared with other processes
  StreamOrderedMemory,  // Context::allocate_async (cuMemAllocAsync)
  PeerAccess,           // Device::can_access_peer / Context::enable_peer_access
  Kernels,              // Module::compile / load and Kernel::launch
  ManagedMemory,        // managed_array (cuMemAllocManaged); a device may still refuse
  FaultRecovery,        // Context::reset() recovers from a kernel's memory fault in this
                        // process (every device says DeviceProperties::recovers_from_faults);
                        // without it a fault leaves the backend unusable until the process ends
  KernelAttributes,     // Kernel::attributes, max_active_blocks_per_unit, suggest_block_size
  KernelPrintf,         // gpuhal_printf in kernels (without it a kernel that uses it fails to compile)
  Graphs,               // Stream::begin_capture / end_capture, Graph, GraphExec (without it begin_capture
                        // fails with ERROR_NOT_SUPPORTED)
  StreamPriorities,     // Context::create_stream(kind, priority), stream_priority_range, Stream::priority
  RectCopies,           // the driver's 2-D / 3-D copies: strided transfers of rectangular views move only
                        // their elements (without it they are staged through the host or a kernel)
  ManagedHints,         // prefetch / advise of managed arrays (Numba has no such names: gpuhal.prefetch,
                        // gpuhal.advise)
  VirtualMemory,        // VirtualRange, PhysicalMemory, GrowableDeviceArray (reserve, map, set access)
  ContextLimits,        // Context::set_limit / Context::limit (the printf buffer's and the stack's sizes)
  DriverMemoryPools,    // MemoryPoolKind::Driver: a MemoryPool backed by a stream-ordered pool the
                        // backend makes for it alone (cuda: cuMemPoolCreate)
};

// The capability's name: "stream_barrier", "host_memory", "kernels" ...
// (lower case, words joined by '_'). Never null.
const char *to_string(Capability capability);

// The capability of that name, or std::nullopt.
std::optional<Capability> capability_named(const std::string &name);

// Every capability's name, comma-separated (for messages).
std::string capability_names();

// Every capability, in the enum's order.
const std::vector<Capability> &all_capabilities();

}  // namespace gpuhal

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The C++ names of what the user API hands out of a backend: device
// addresses, native stream handles and IPC handle bytes. The public C++
// headers use only these; the plugin ABI (plugin.h) stays behind the core.
//
// Each is the same type (or the same bytes) as its counterpart in the plugin
// ABI, so code that also speaks the ABI passes them straight through:
//   DevicePointer   == gpuhal_deviceptr_t (a 64-bit address; on backends with
//                      unified addressing it may equal a host address)
//   NativeStream    == gpuhal_stream_t (the backend's stream handle, e.g. a
//                      CUstream on cuda; opaque to the core)
//   NativeIpcHandle has the layout of gpuhal_ipc_handle_t (64 opaque bytes)
#pragma once

#include "gpuhal/cxx_standard.hpp"

#include <cstddef>
#include <cstdint>

// The plugin ABI's opaque stream type, declared (never defined) here.
extern "C" struct gpuhal_stream_s;

namespace gpuhal {

using DevicePointer = std::uint64_t;
using NativeStream = ::gpuhal_stream_s *;

struct NativeIpcHandle {
  static constexpr std::size_t kBytes = 64;
  unsigned char bytes[kBytes];
};

}  // namespace gpuhal

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The user API stands on its own: its headers never bring in the plugin ABI
// (gpuhal/plugin.h), so a user's code cannot come to depend on ABI types.
// The memory-manager ABI shares only gpuhal/abi_base.h with it.
#include "gpuhal/gpuhal.hpp"
#include "gpuhal/memory_manager.h"
#include "gpuhal/native.hpp"

#ifdef GPUHAL_PLUGIN_H
#error "a public C++ header (or memory_manager.h) includes gpuhal/plugin.h"
#endif

#include <cstdio>
#include <type_traits>

int main() {
  // The native types keep the ABI's sizes (the core static_asserts the same
  // against plugin.h itself).
  static_assert(sizeof(gpuhal::NativeIpcHandle) == 64, "IPC handle bytes");
  static_assert(std::is_same<gpuhal::DevicePointer, gpuhal_deviceptr_t>::value, "one device address type");
  static_assert(std::is_pointer<gpuhal::NativeStream>::value, "a native stream is a handle");
  std::puts("public headers: no plugin ABI");
  return 0;
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal::version(): the loaded library's version.
#include "gpuhal/version.hpp"

#include "gpuhal/plugin.h"

namespace gpuhal {

static_assert(kHeaderVersion.plugin_abi_major == GPUHAL_ABI_MAJOR &&
                  kHeaderVersion.plugin_abi_minor == GPUHAL_ABI_MINOR,
              "version.hpp was generated from another plugin.h");

Version version() noexcept {
  return kHeaderVersion;  // compiled into the library: the library's own
}

}  // namespace gpuhal

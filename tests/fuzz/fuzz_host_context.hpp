// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The host-backend context the fuzz targets that need one share: loaded
// once per process from the build tree, errors-only logging.
#pragma once

#include "gpuhal/gpuhal.hpp"

namespace fuzz {

inline const gpuhal::Context &host_context() {
  static const gpuhal::Context ctx = [] {
    gpuhal::Config c;
    c.backend = "host";
    c.plugin_path = {GPUHAL_FUZZ_LIB_DIR};
    c.log_level = gpuhal::LogLevel::Error;
    return gpuhal::Runtime::load(c).device(0).primary_context();
  }();
  return ctx;
}

}  // namespace fuzz

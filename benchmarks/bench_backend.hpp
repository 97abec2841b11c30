// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The backend a benchmark measures, for the benchmarks whose measurement
// means the same on any backend (copies, deferred frees, pools): every
// GPUHAL_* setting from the environment, GPUHAL_BACKEND included; host when
// it is unset (the backend docs/performance.md's figures were taken on).
#pragma once

#include "gpuhal/gpuhal.hpp"

namespace bench {

inline gpuhal::Config backend_config() {
  gpuhal::Config c = gpuhal::Config::from_environment();
  if (c.backend.empty()) c.backend = "host";
  return c;
}

}  // namespace bench

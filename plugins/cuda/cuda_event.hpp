// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's events (cuda_event.cpp): gpuhal's handles are the
// driver's CUevent; a context knows the events it made (CudaContext::events).
#pragma once

#include <mutex>

#include "cuda_context.hpp"

namespace gpuhal::cuda {

// True for an event created in c.
inline bool known_event(CudaContext *c, gpuhal_event_t e) {
  std::lock_guard<std::mutex> lock(c->mu);
  return c->events.count(reinterpret_cast<CUevent>(e)) != 0;
}

}  // namespace gpuhal::cuda

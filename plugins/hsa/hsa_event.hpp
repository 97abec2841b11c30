// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's events (hsa_event.cpp).
#pragma once

#include "gpuhal/plugin.h"
#include "hsa_signal.hpp"

namespace gpuhal::hsa {

struct HsaContext;

// An event is the completion signal of what its last record queued: a
// barrier-AND marker, or, for an event with timing, a 4-byte device copy
// whose start and end ROCr stamps (hsa_amd_profiling_get_async_copy_time):
// ROCr documents timestamps for dispatch packets and async copies, not for
// barrier packets.
struct HsaEvent {
  bool timing = true;
  SignalRef signal;  // null before the first record
  bool timed_copy = false;
};

// The event of a handle in c, or nullptr (c->mu held).
HsaEvent *find_event(HsaContext *c, gpuhal_event_t e);

}  // namespace gpuhal::hsa

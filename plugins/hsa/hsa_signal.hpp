// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa backend's signals (hsa_signal.cpp): completion signals, pooled.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "gpuhal/plugin.h"
#include "hsa_runtime.hpp"

namespace gpuhal::hsa {

// One hsa_signal_t. With the last reference it goes back to a process-wide
// pool (creating a signal costs a kernel call on ROCr; operations make one
// each), from which make_signal takes it again; the pool is destroyed at
// shutdown. Only completed signals are released: every operation keeps the
// signals its packets or copies name until it has completed.
struct Signal {
  hsa_signal_t handle{};
  Signal() = default;
  Signal(const Signal &) = delete;
  Signal &operator=(const Signal &) = delete;
  ~Signal();
  // Completion signals start at 1; the operation sets them to 0, or to a
  // negative value when it failed. Done means either.
  bool done() const { return rt().hsa_signal_load_scacquire(handle) < 1; }
  bool failed() const { return rt().hsa_signal_load_scacquire(handle) < 0; }
  // Until the value is below 1, or `give_up` is set (checked once per wait
  // slice, see set_wait_slice).
  void wait(const std::atomic<bool> *give_up = nullptr) const;
};
using SignalRef = std::shared_ptr<Signal>;
// A signal with `initial` value (a pooled one when there is one).
gpuhal_status_t make_signal(int64_t initial, SignalRef *out);
// Destroys the pooled signals (shutdown).
void drain_signal_pool();
// Keeps a signal that may still be written by the runtime out of the pool
// for ever (an operation of a failed context that never completed).
void quarantine_signal(SignalRef s);
// The length of one wait slice, from the runtime's timestamp frequency.
void set_wait_slice(uint64_t timestamp_frequency);

}  // namespace gpuhal::hsa

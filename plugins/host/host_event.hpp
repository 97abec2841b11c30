// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host backend events: the ticket of the stream operation that records
// them (host_stream.hpp's ordering model), and its time once it ran.
// Guarded by their own mutex; a context owns its events (host_context.hpp).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>

#include "host_stream.hpp"

namespace gpuhal::host {

struct HostEvent {
  bool timing = true;
  std::mutex mu;
  std::shared_ptr<StreamState> stream;  // of the latest record
  uint64_t ticket = 0;                  // 0: never recorded
  uint64_t record_id = 0;
  bool has_time = false;
  std::chrono::steady_clock::time_point when;
};

}  // namespace gpuhal::host

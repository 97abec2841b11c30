// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// StreamImpl and EventImpl: what Stream and Event handles hold.
#pragma once

#include <atomic>
#include <mutex>

#include "context_impl.hpp"

namespace gpuhal::detail {

struct CaptureImpl;

struct StreamImpl : ContextChild<gpuhal_stream_t> {  // handle NULL: the default stream
  bool owned = false;
  // The capture this stream records into (graph.cpp), guarded by its lock;
  // `capturing` mirrors it for the launch and copy paths, which read it
  // without the lock (one load when nothing captures).
  std::shared_ptr<CaptureImpl> capture;
  std::atomic<CaptureImpl *> capturing{nullptr};
  // A stream wrapped by Context::external_stream where busy blocks are on:
  // whether the context's synchronise waits for its work is asked
  // (context_waits_for_stream) at its first use by a call that queues work,
  // never when it is wrapped: the handle may be a dummy that is never used
  // (numba-cuda's own tests wrap 0x12345678), and a GPU driver dereferences
  // what it is asked about. Until the answer, nothing of gpuhal's is on it.
  std::atomic<bool> external_unproven{false};
  std::once_flag external_proof;
  // ContextChild::live, and the first use's question (hides the base's:
  // every call that queues work on a stream reaches it through here).
  gpuhal_stream_t live(const char *what) {
    const gpuhal_stream_t h = ContextChild::live(what);
    if (external_unproven.load(std::memory_order_acquire)) prove_external();
    return h;
  }
  // Sets the context's foreign_work unless the plugin says its synchronise
  // waits for the stream; once, concurrent first uses waiting for it.
  void prove_external();
  ~StreamImpl();
};

struct EventImpl : ContextChild<gpuhal_event_t> {
  // The capture its latest record was made in (null: none), as streams'.
  std::shared_ptr<CaptureImpl> capture;
  std::atomic<bool> in_capture{false};
  ~EventImpl();
};

}  // namespace gpuhal::detail

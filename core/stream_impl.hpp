// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// StreamImpl and EventImpl: what Stream and Event handles hold.
#pragma once

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
  ~StreamImpl();
};

struct EventImpl : ContextChild<gpuhal_event_t> {
  // The capture its latest record was made in (null: none), as streams'.
  std::shared_ptr<CaptureImpl> capture;
  std::atomic<bool> in_capture{false};
  ~EventImpl();
};

}  // namespace gpuhal::detail

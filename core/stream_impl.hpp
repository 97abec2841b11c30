// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// StreamImpl and EventImpl: what Stream and Event handles hold.
#pragma once

#include "context_impl.hpp"

namespace gpuhal::detail {

struct StreamImpl : ContextChild<gpuhal_stream_t> {  // handle NULL: the default stream
  bool owned = false;
  ~StreamImpl();
};

struct EventImpl : ContextChild<gpuhal_event_t> {
  ~EventImpl();
};

}  // namespace gpuhal::detail

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams: handles of their own, whose work has always already run.
#include <memory>
#include <mutex>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t stream_create(gpuhal_context_t ctx, uint32_t, gpuhal_stream_t *out) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  auto it = c->streams.insert(std::make_unique<char>()).first;
  *out = reinterpret_cast<gpuhal_stream_t>(it->get());
  return GPUHAL_SUCCESS;
}
gpuhal_status_t stream_destroy(gpuhal_context_t ctx, gpuhal_stream_t s) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  std::lock_guard<std::mutex> lock(c->mu);
  for (auto it = c->streams.begin(); it != c->streams.end(); ++it)
    if (reinterpret_cast<gpuhal_stream_t>(it->get()) == s) {
      c->streams.erase(it);
      return GPUHAL_SUCCESS;
    }
  return fail(GPUHAL_ERROR_INVALID_HANDLE, "counting: unknown stream");
}
gpuhal_status_t stream_op(gpuhal_context_t, gpuhal_stream_t) {
  count();
  return GPUHAL_SUCCESS;  // everything already ran: always idle
}
gpuhal_status_t stream_wait_event(gpuhal_context_t, gpuhal_stream_t, gpuhal_event_t) {
  count();
  return GPUHAL_SUCCESS;  // stream_wait_event: recorded work is already complete
}
gpuhal_status_t add_callback(gpuhal_context_t, gpuhal_stream_t, gpuhal_host_fn fn, void *user) {
  count();
  fn(user, GPUHAL_SUCCESS);
  return GPUHAL_SUCCESS;
}

}  // namespace counting

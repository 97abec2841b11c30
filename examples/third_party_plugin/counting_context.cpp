// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Contexts: everything made in one goes with it.
#include <sys/mman.h>

#include "counting_context.hpp"
#include "counting_plugin.hpp"

namespace counting {

gpuhal_status_t context_create(int32_t ordinal, gpuhal_context_t *out) {
  count();
  if (ordinal != 0) return fail(GPUHAL_ERROR_INVALID_VALUE, "counting: only device 0 exists");
  *out = reinterpret_cast<gpuhal_context_t>(new Context);
  return GPUHAL_SUCCESS;
}
gpuhal_status_t context_destroy(gpuhal_context_t ctx) {
  count();
  auto *c = reinterpret_cast<Context *>(ctx);
  for (auto &kv : c->allocations) {
    munmap(reinterpret_cast<void *>(kv.first), size_t(page_round(kv.second.bytes)));
    close(kv.second.fd);
  }
  for (auto &kv : c->opened) munmap(reinterpret_cast<void *>(kv.first), size_t(page_round(kv.second)));
  for (auto &kv : c->host)
    if (kv.second.allocated) munmap(reinterpret_cast<void *>(kv.first), size_t(page_round(kv.second.bytes)));
  for (Event *e : c->events) delete e;  // "together with every ... event made in it"
  delete c;
  return GPUHAL_SUCCESS;
}
gpuhal_status_t no_op_ctx(gpuhal_context_t) {
  count();
  return GPUHAL_SUCCESS;
}
gpuhal_status_t memory_info(gpuhal_context_t, uint64_t *f, uint64_t *t) {
  count();
  *f = *t = 1ull << 30;
  return GPUHAL_SUCCESS;
}

}  // namespace counting

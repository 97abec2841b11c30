// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernel-argument memory from a per-stream ring (see KernargRing).
//
// hsa_amd_memory_pool_allocate, hsa_amd_agents_allow_access and
// hsa_amd_memory_pool_free are kernel driver calls on ROCr: one of each per
// launch cost tens of microseconds. A stream's launches complete in order,
// so their argument bytes are taken from one ring allocated once per stream
// and given back in the same order, once each dispatch completed (what
// HIP's per-queue kernarg pool does).
//
// Locking: c->mu held by the callers. Waiting for room gives up when the
// context failed.
#include "hsa_context.hpp"

namespace gpuhal::hsa {

namespace {
constexpr size_t kRingBytes = size_t(64) << 10;
}  // namespace

gpuhal_status_t take_kernargs(HsaStream *s, size_t bytes, const SignalRef &done, void **out) {
  *out = nullptr;
  if (bytes > kRingBytes / 4) return GPUHAL_SUCCESS;  // a dedicated allocation
  HsaContext *c = s->ctx;
  KernargRing &r = s->kernargs;
  if (!r.base) {
    void *p = nullptr;
    if (const gpuhal_status_t call_st = hsa_call(rt().hsa_amd_memory_pool_allocate, "hsa_amd_memory_pool_allocate",
                                                 host_agent().kernarg_pool, kRingBytes, 0u, &p);
        call_st != GPUHAL_SUCCESS)
      return call_st;
    hsa_agent_t agent = c->device->agent;
    if (const hsa_status_t st = rt().hsa_amd_agents_allow_access(1, &agent, nullptr, p); st != HSA_STATUS_SUCCESS) {
      rt().hsa_amd_memory_pool_free(p);
      return rt().error(st, "hsa_amd_agents_allow_access");
    }
    r.base = p;
    r.size = kRingBytes;
    r.head = 0;
  }
  for (;;) {
    while (!r.live.empty() && r.live.front().done->done()) r.live.pop_front();
    size_t offset = 0;
    bool fits = false;
    if (r.live.empty()) {
      r.head = 0;
      fits = true;
    } else {
      const size_t tail = r.live.front().offset;
      if (r.head > tail) {  // in use: [tail, head)
        if (r.size - r.head >= bytes) {
          offset = r.head;
          fits = true;
        } else if (tail >= bytes) {  // wrap to the start
          fits = true;
        }
      } else if (tail - r.head >= bytes) {  // in use: [tail, size) and [0, head)
        offset = r.head;
        fits = true;
      }
    }
    if (fits) {
      r.live.push_back({done, offset, bytes});
      r.head = offset + bytes;
      *out = static_cast<char *>(r.base) + offset;
      return GPUHAL_SUCCESS;
    }
    // Full: the oldest launch on the stream must finish first.
    const SignalRef oldest = r.live.front().done;
    oldest->wait(&c->failed);
    if (!oldest->done()) return context_failure(c, "launch (waiting for kernel-argument memory)");
  }
}

void give_back_kernargs(HsaStream *s) {
  KernargRing &r = s->kernargs;
  if (r.live.empty()) return;
  r.live.pop_back();
  r.head = r.live.empty() ? 0 : r.live.back().offset + r.live.back().bytes;
}

void release_kernargs(HsaStream *s) {
  KernargRing &r = s->kernargs;
  if (!r.base) return;
  for (const auto &l : r.live)
    if (!l.done->done()) {  // a dispatch that never completed may still read it: kept, not freed
      r.live.clear();
      r.base = nullptr;
      return;
    }
  r.live.clear();
  rt().hsa_amd_memory_pool_free(r.base);
  r.base = nullptr;
}

}  // namespace gpuhal::hsa

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Pageable host memory copied through a few pinned chunks per context.
//
// The copy engines reach only pool memory and locked host memory, so a
// copy from or to pageable memory is staged. One pinned buffer as large as
// the copy would cost a kernel call per copy and fail for copies larger
// than what can be pinned; instead each context has kChunks chunks of
// kChunkBytes, made on the first staged copy and reused: chunk k + 1 is
// filled (host to device) or its host operation copies out (device to
// host) while chunk k's DMA runs. A chunk is reused once the last
// operation that touched it completed.
//
// Host to device returns once the whole source was read (the caller may
// reuse it at once, as with CUDA's pageable copies); device to host fills
// the destination with a host operation per chunk, in stream order.
//
// Locking: c->mu held by the caller (the chunks are part of the context).
// Waiting for a chunk gives up when the context failed.
#include <cstring>

#include "hsa_context.hpp"

namespace gpuhal::hsa {

namespace {

constexpr uint64_t kChunkBytes = uint64_t(4) << 20;
constexpr size_t kChunks = 3;

// The next chunk, free for reuse; made on first use.
gpuhal_status_t take_chunk(HsaContext *c, HsaContext::StagingChunk **out) {
  if (c->staging.empty()) {
    c->staging.resize(kChunks);
    for (auto &chunk : c->staging)
      if (const gpuhal_status_t st = alloc_system(c, kChunkBytes, &chunk.buffer); st != GPUHAL_SUCCESS) {
        const std::string message = plugin::last_error();
        release_staging(c);
        return fail(st, message);
      }
  }
  HsaContext::StagingChunk &chunk = c->staging[c->next_chunk];
  c->next_chunk = (c->next_chunk + 1) % c->staging.size();
  if (chunk.busy) {
    chunk.busy->wait(&c->failed);
    if (!chunk.busy->done()) return context_failure(c, "a staged copy");  // the context failed meanwhile
    chunk.busy.reset();
  }
  *out = &chunk;
  return GPUHAL_SUCCESS;
}

}  // namespace

namespace {
// Runs stage(chunk, offset, n) for each chunk-sized piece of `bytes`, each
// in a staging chunk free for reuse, and marks the chunk busy until the
// stream's last operation (what stage enqueued) is done.
template <class Stage>
gpuhal_status_t by_chunks(HsaStream *s, uint64_t bytes, Stage stage) {
  for (uint64_t off = 0; off < bytes; off += kChunkBytes) {
    const uint64_t n = std::min(kChunkBytes, bytes - off);
    HsaContext::StagingChunk *chunk = nullptr;
    if (const gpuhal_status_t st = take_chunk(s->ctx, &chunk); st != GPUHAL_SUCCESS) return st;
    if (const gpuhal_status_t st = stage(chunk->buffer, off, n); st != GPUHAL_SUCCESS) return st;
    chunk->busy = s->last;
  }
  return GPUHAL_SUCCESS;
}
}  // namespace

gpuhal_status_t staged_copy_to_device(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, uint64_t bytes) {
  const hsa_agent_t cpu = host_agent().agent;
  return by_chunks(s, bytes, [&](void *buffer, uint64_t off, uint64_t n) {
    std::memcpy(buffer, static_cast<const char *>(src) + off, size_t(n));
    return submit_copy(s, static_cast<char *>(dst) + off, dst_agent, buffer, cpu, n, nullptr);
  });
}

gpuhal_status_t staged_copy_to_host(HsaStream *s, void *dst, const void *src, hsa_agent_t src_agent, uint64_t bytes) {
  const hsa_agent_t cpu = host_agent().agent;
  return by_chunks(s, bytes, [&](void *buffer, uint64_t off, uint64_t n) {
    if (const gpuhal_status_t st =
            submit_copy(s, buffer, cpu, static_cast<const char *>(src) + off, src_agent, n, nullptr);
        st != GPUHAL_SUCCESS)
      return st;
    char *to = static_cast<char *>(dst) + off;
    return submit_host_op(s, [to, buffer, n] { std::memcpy(to, buffer, size_t(n)); }, nullptr);
  });
}

void release_staging(HsaContext *c) {
  for (auto &chunk : c->staging) {
    if (!chunk.buffer) continue;
    if (chunk.busy && !chunk.busy->done()) {
      quarantine_signal(chunk.busy);  // a copy engine may still write it: kept, not freed
      continue;
    }
    rt().hsa_amd_memory_pool_free(chunk.buffer);
  }
  c->staging.clear();
  c->next_chunk = 0;
}

}  // namespace gpuhal::hsa

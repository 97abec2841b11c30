// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The cuda backend's streams (cuda_stream.cpp): gpuhal's handles are the
// driver's CUstream (the special handles have CUDA's values); a context
// knows the streams it made (CudaContext::streams).
#pragma once

#include <mutex>

#include "cuda_context.hpp"

namespace gpuhal::cuda {

inline CUstream native(gpuhal_stream_t s) {
  return reinterpret_cast<CUstream>(s);  // NULL, 0x1 and 0x2 mean the same in CUDA
}

// True for a stream made outside gpuhal (Context::external_stream) in c's
// context, as the driver tells (cuStreamGetCtx).
bool external_stream_of(CudaContext *c, gpuhal_stream_t s);

// True for the special stream handles, the streams created in c and
// streams of c's context made outside gpuhal.
inline bool known_stream(CudaContext *c, gpuhal_stream_t s) {
  if (!s || s == GPUHAL_STREAM_LEGACY || s == GPUHAL_STREAM_PER_THREAD) return true;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->streams.count(native(s)) != 0) return true;
  }
  return external_stream_of(c, s);
}

}  // namespace gpuhal::cuda

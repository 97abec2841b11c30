// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// A block reduction with shared memory and work-group barriers: each block
// sums its part of the input in shared memory (halving the active work-items
// each step, a barrier between steps), then the host adds the partial sums.
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpuhal/gpuhal.hpp"

static const char *kSource = R"(
#define BLOCK 256
GPUHAL_KERNEL void block_sum(GPUHAL_GLOBAL const float *in, GPUHAL_GLOBAL float *partial, unsigned n) {
  GPUHAL_SHARED_ARRAY(float, s, BLOCK);
  unsigned lid = gpuhal_local_id(0);
  unsigned i = gpuhal_global_id(0);
  s[lid] = i < n ? in[i] : 0.0f;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned stride = BLOCK / 2; stride > 0; stride /= 2) {
    if (lid < stride) s[lid] += s[lid + stride];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[gpuhal_group_id(0)] = s[0];
}
)";

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    const unsigned n = 1000003, block = 256, groups = (n + block - 1) / block;
    std::vector<float> in(n);
    double reference = 0;
    for (unsigned i = 0; i < n; ++i) {
      in[i] = float(i % 1000) * 0.001f;
      reference += double(in[i]);
    }
    gpuhal::Stream stream = ctx.create_stream();
    gpuhal::Kernel sum = gpuhal::Module::compile(ctx, kSource).kernel("block_sum");
    auto d_in = gpuhal::to_device(ctx, gpuhal::HostView::of(in), stream);
    auto d_partial = gpuhal::device_array(ctx, {groups}, gpuhal::dtypes::float32);
    sum({groups}, {block}, stream)(d_in, d_partial, n);
    auto partial = d_partial.copy_to_host(stream);
    stream.synchronize();
    double total = 0;
    for (float p : partial.to_vector<float>()) total += double(p);
    const bool ok = std::fabs(total - reference) <= 1e-4 * std::fabs(reference);
    std::printf("block_sum of %u floats in %u blocks: %.3f (reference %.3f): %s\n", n, groups, total, reference,
                ok ? "correct" : "WRONG");
    return ok ? 0 : 1;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "block_reduction: %s\n", e.what());
    return 1;
  }
}

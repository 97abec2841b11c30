// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The Numba documentation's first kernel program, in gpuhal:
//
//   @cuda.jit
//   def increment_by_one(an_array):
//       pos = cuda.grid(1)
//       if pos < an_array.size:
//           an_array[pos] += 1
//
//   d_ary = cuda.to_device(ary)
//   increment_by_one[blockspergrid, threadsperblock](d_ary)
//   result = d_ary.copy_to_host()
//
// The kernel is portable source: the same text runs on every backend. The
// block size is the backend's suggestion for this kernel where it can make
// one (Kernel::suggest_block_size: 1024 on host, a multiple of the warp on
// cuda, of the wavefront on hsa), else Numba's customary 256.
#include <cstdio>
#include <vector>

#include "gpuhal/gpuhal.hpp"

static const char *kSource = R"(
GPUHAL_KERNEL void increment_by_one(GPUHAL_GLOBAL float *an_array, unsigned size) {
  unsigned pos = gpuhal_global_id(0);
  if (pos < size) an_array[pos] += 1.0f;
}
)";

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    const unsigned n = 100000;  // not a multiple of the block
    std::vector<float> ary(n);
    for (unsigned i = 0; i < n; ++i) ary[i] = float(i);

    gpuhal::Kernel increment = gpuhal::Module::compile(ctx, kSource).kernel("increment_by_one");
    gpuhal::DeviceArray d_ary = gpuhal::to_device(ctx, gpuhal::HostView::of(ary));
    const unsigned threadsperblock =
        ctx.supports(gpuhal::Capability::KernelAttributes) ? increment.suggest_block_size().block : 256;
    const unsigned blockspergrid = (n + threadsperblock - 1) / threadsperblock;
    increment({blockspergrid}, {threadsperblock})(d_ary, n);
    gpuhal::HostArray result = d_ary.copy_to_host();

    const auto r = result.to_vector<float>();
    for (unsigned i = 0; i < n; ++i)
      if (r[i] != float(i) + 1.0f) {
        std::printf("increment_by_one: element %u is %g, expected %g\n", i, double(r[i]), double(i) + 1.0);
        return 1;
      }
    std::printf("increment_by_one on %s: %u elements correct, blocks of %u\n",
                ctx.device().runtime().backend_name().c_str(), n, threadsperblock);
    return 0;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "increment_kernel: %s\n", e.what());
    return 1;
  }
}

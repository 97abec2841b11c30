// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The Numba documentation's transfer pattern, in gpuhal:
//
//   stream = cuda.stream()
//   d_ary = cuda.to_device(ary, stream=stream)
//   ... work on the stream ...
//   d_ary.copy_to_host(ary, stream=stream)
//   stream.synchronize()
//
// Kernels arrive with the portable-kernel work; until then the "work" is
// device-side copies and a memset on the stream, timed with events.
#include <cstdio>
#include <numeric>
#include <vector>

#include "gpuhal/gpuhal.hpp"

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    std::printf("backend: %s, device: %s\n", ctx.device().runtime().backend_name().c_str(),
                ctx.device().properties().name.c_str());

    std::vector<float> host(1 << 20);
    std::iota(host.begin(), host.end(), 0.0f);
    auto view = gpuhal::HostView::of(host, {1024, 1024});

    gpuhal::Stream stream = ctx.create_stream();
    gpuhal::Event start = stream.record();
    gpuhal::DeviceArray d_ary = gpuhal::to_device(ctx, view, stream);  // H2D, async
    gpuhal::DeviceArray d_copy = gpuhal::device_array_like(d_ary);     // same shape/dtype
    d_copy.copy_from_device(d_ary, stream);                            // D2D
    d_copy.view({gpuhal::Slice(0, 8)}).memset(0, stream);              // zero rows 0..7
    std::vector<float> result(host.size());
    d_copy.copy_to_host(gpuhal::HostView::of(result, {1024, 1024}), stream);  // D2H, async
    gpuhal::Event end = stream.record();
    stream.synchronize();

    size_t wrong = 0;
    for (size_t i = 0; i < result.size(); ++i) {
      const float expect = i < 8 * 1024 ? 0.0f : float(i);
      wrong += result[i] != expect;
    }
    std::printf("round trip of %zu floats on a stream: %s (%.3f ms)\n", result.size(), wrong == 0 ? "correct" : "WRONG",
                double(gpuhal::Event::elapsed_ms(start, end)));

    // Views and reshape follow NumPy: a transposed-order reshape that needs a
    // copy says so instead of reinterpreting memory.
    gpuhal::DeviceArray row = d_ary[10];
    std::printf("d_ary[10]: shape (%lld,), contiguous %s\n", static_cast<long long>(row.shape()[0]),
                row.is_c_contiguous() ? "yes" : "no");
    try {
      d_ary.view({gpuhal::all, gpuhal::Slice(0, 512)}).reshape({-1});
    } catch (const gpuhal::Error &e) {
      std::printf("reshape of a strided view: %s\n", gpuhal::to_string(e.status()).c_str());
    }
    return wrong == 0 ? 0 : 1;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "roundtrip: %s: %s\n", gpuhal::to_string(e.status()).c_str(), e.what());
    return 1;
  }
}

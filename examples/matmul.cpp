// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The Numba documentation's fast_matmul: C = A * B with square tiles of A
// and B staged through shared memory, two barriers per tile. Sizes that are
// not multiples of the tile are padded with zeros inside the kernel.
#include <cmath>
#include <cstdio>
#include <vector>

#include "gpuhal/gpuhal.hpp"

static const char *kSource = R"(
#define TPB 16
GPUHAL_KERNEL void fast_matmul(GPUHAL_GLOBAL const float *A, GPUHAL_GLOBAL const float *B, GPUHAL_GLOBAL float *C,
                               int M, int K, int N) {
  GPUHAL_SHARED_ARRAY(float, sA, TPB, TPB);
  GPUHAL_SHARED_ARRAY(float, sB, TPB, TPB);
  int tx = gpuhal_local_id(0), ty = gpuhal_local_id(1);
  int col = gpuhal_global_id(0), row = gpuhal_global_id(1);
  float tmp = 0.0f;
  for (int t = 0; t < (K + TPB - 1) / TPB; ++t) {
    int ka = t * TPB + tx, kb = t * TPB + ty;
    sA[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    sB[ty][tx] = (col < N && kb < K) ? B[kb * N + col] : 0.0f;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);   /* the tile is loaded */
    for (int j = 0; j < TPB; ++j) tmp += sA[ty][j] * sB[j][tx];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);   /* everyone is done with it */
  }
  if (row < M && col < N) C[row * N + col] = tmp;
}
)";

int main() {
  try {
    gpuhal::Context ctx = gpuhal::Context::current();
    const int M = 100, K = 75, N = 50, TPB = 16;
    std::vector<float> A(M * K), B(K * N), C(M * N);
    for (int i = 0; i < M * K; ++i) A[size_t(i)] = float(i % 7) - 3.0f;
    for (int i = 0; i < K * N; ++i) B[size_t(i)] = float(i % 5) * 0.5f;
    gpuhal::Kernel matmul = gpuhal::Module::compile(ctx, kSource).kernel("fast_matmul");
    auto dA = gpuhal::to_device(ctx, gpuhal::HostView::of(A, {M, K}));
    auto dB = gpuhal::to_device(ctx, gpuhal::HostView::of(B, {K, N}));
    auto dC = gpuhal::device_array(ctx, {M, N}, gpuhal::dtypes::float32);
    matmul({unsigned(N + TPB - 1) / TPB, unsigned(M + TPB - 1) / TPB}, {unsigned(TPB), unsigned(TPB)})(dA, dB, dC, M, K,
                                                                                                       N);
    dC.copy_to_host(gpuhal::HostView::of(C, {M, N}));
    double worst = 0;
    for (int r = 0; r < M; ++r)
      for (int c = 0; c < N; ++c) {
        double ref = 0;
        for (int j = 0; j < K; ++j) ref += double(A[size_t(r * K + j)]) * double(B[size_t(j * N + c)]);
        worst = std::fmax(worst, std::fabs(ref - double(C[size_t(r * N + c)])));
      }
    const bool ok = worst < 1e-3;
    std::printf("fast_matmul %dx%d * %dx%d in %dx%d tiles: max error %.2g: %s\n", M, K, K, N, TPB, TPB, worst,
                ok ? "correct" : "WRONG");
    return ok ? 0 : 1;
  } catch (const gpuhal::Error &e) {
    std::fprintf(stderr, "matmul: %s\n", e.what());
    return 1;
  }
}

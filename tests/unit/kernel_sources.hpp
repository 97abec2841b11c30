// Portable kernel sources shared by the host and cuda kernel tests.
#pragma once

namespace {

inline const char *kSaxpy = R"(
GPUHAL_KERNEL void saxpy(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, float a, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < (unsigned)n) y[i] = a * x[i] + y[i];
}
)";

// Numba's docs' reduction: one partial sum per block, shared memory halved
// each step with a barrier between steps.
inline const char *kReduce = R"(
#define BLOCK 128
GPUHAL_KERNEL void block_sum(GPUHAL_GLOBAL const double *in, GPUHAL_GLOBAL double *partial, unsigned n) {
  GPUHAL_SHARED_ARRAY(double, s, BLOCK);
  unsigned lid = gpuhal_local_id(0);
  unsigned i = gpuhal_global_id(0);
  s[lid] = i < n ? in[i] : 0.0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned stride = gpuhal_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) s[lid] += s[lid + stride];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (lid == 0) partial[gpuhal_group_id(0)] = s[0];
}
)";

// Numba's docs' fast_matmul: tiles of A and B through shared memory.
inline const char *kMatmul = R"(
#define TPB 16
GPUHAL_KERNEL void matmul(GPUHAL_GLOBAL const float *A, GPUHAL_GLOBAL const float *B, GPUHAL_GLOBAL float *C,
                          int M, int K, int N) {
  GPUHAL_SHARED_ARRAY(float, sA, TPB * TPB);
  GPUHAL_SHARED_ARRAY(float, sB, TPB * TPB);
  int tx = gpuhal_local_id(0), ty = gpuhal_local_id(1);
  int col = gpuhal_global_id(0), row = gpuhal_global_id(1);
  float acc = 0.0f;
  for (int t = 0; t < (K + TPB - 1) / TPB; ++t) {
    int ka = t * TPB + tx, kb = t * TPB + ty;
    sA[ty * TPB + tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    sB[ty * TPB + tx] = (col < N && kb < K) ? B[kb * N + col] : 0.0f;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    for (int j = 0; j < TPB; ++j) acc += sA[ty * TPB + j] * sB[j * TPB + tx];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
)";

// Dynamic shared memory: two views of one base, reversed within the group.
inline const char *kDynamic = R"(
GPUHAL_KERNEL void dyn(GPUHAL_GLOBAL float *out, GPUHAL_GLOBAL unsigned *bytes) {
  GPUHAL_DYNAMIC_SHARED(float, f);
  GPUHAL_DYNAMIC_SHARED(int, i);
  unsigned lid = gpuhal_local_id(0), n = gpuhal_local_size(0);
  f[lid] = (float)(gpuhal_global_id(0)) + 0.5f;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  out[gpuhal_global_id(0)] = f[n - 1 - lid];          /* reversed within the group */
  if (lid == 0) {
    bytes[gpuhal_group_id(0) * 2] = gpuhal_dynamic_shared_bytes();
    bytes[gpuhal_group_id(0) * 2 + 1] = (unsigned)i[0];  /* the same bytes as f[0] */
  }
}
)";

}  // namespace

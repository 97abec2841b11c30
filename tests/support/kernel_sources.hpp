// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Portable kernel sources shared by the host and cuda kernel tests.
#pragma once

#include "../conformance/wave_model.hpp"

namespace {

inline const char *const kSaxpy = R"(
GPUHAL_KERNEL void saxpy(GPUHAL_GLOBAL float *y, GPUHAL_GLOBAL const float *x, float a, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < (unsigned)n) y[i] = a * x[i] + y[i];
}
)";

// Numba's docs' reduction: one partial sum per block, shared memory halved
// each step with a barrier between steps.
inline const char *const kReduce = R"(
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

// Numba's docs' fast_matmul: tiles of A and B through shared memory, as
// 2-D shared arrays (cuda.shared.array(shape=(TPB, TPB), ...)).
inline const char *const kMatmul = R"(
#define TPB 16
GPUHAL_KERNEL void matmul(GPUHAL_GLOBAL const float *A, GPUHAL_GLOBAL const float *B, GPUHAL_GLOBAL float *C,
                          int M, int K, int N) {
  GPUHAL_SHARED_ARRAY(float, sA, TPB, TPB);
  GPUHAL_SHARED_ARRAY(float, sB, TPB, TPB);
  int tx = gpuhal_local_id(0), ty = gpuhal_local_id(1);
  int col = gpuhal_global_id(0), row = gpuhal_global_id(1);
  float acc = 0.0f;
  for (int t = 0; t < (K + TPB - 1) / TPB; ++t) {
    int ka = t * TPB + tx, kb = t * TPB + ty;
    sA[ty][tx] = (row < M && ka < K) ? A[row * K + ka] : 0.0f;
    sB[ty][tx] = (col < N && kb < K) ? B[kb * N + col] : 0.0f;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    for (int j = 0; j < TPB; ++j) acc += sA[ty][j] * sB[j][tx];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (row < M && col < N) C[row * N + col] = acc;
}
)";

// Multi-dimensional and aligned shared and private arrays: out[i] gets a
// sum over a 3-D private array and a 2-D one kept across a barrier, and
// bit flags saying whether each aligned array is aligned as asked.
inline const char *const kArrays = R"(
GPUHAL_KERNEL void arrays(GPUHAL_GLOBAL int *out, GPUHAL_GLOBAL unsigned *aligned) {
  GPUHAL_SHARED_ARRAY(int, grid, 4, 8);
  GPUHAL_SHARED_ARRAY_ALIGNED(unsigned char, wide, 256, 3);
  GPUHAL_LOCAL_ARRAY(int, cube, 2, 3, 4);
  GPUHAL_LOCAL_ARRAY_ALIGNED(unsigned char, line, 64, 2, 5);
  const int i = (int)gpuhal_local_id(0);
  GPUHAL_LOCAL_ARRAY(int, kept, 2, 2);
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) cube[a][b][c] = a * 100 + b * 10 + c;
  kept[1][1] = i;
  grid[i / 8][i % 8] = i * 2;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  int sum = 0;
  for (int a = 0; a < 2; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 4; ++c) sum += cube[a][b][c];
  line[1][4] = 1;
  wide[2] = 1;
  out[i] = sum + grid[(31 - i) / 8][(31 - i) % 8] + kept[1][1] * 1000 + line[1][4] + wide[2];
  aligned[i] = ((size_t)wide % 256 == 0 ? 1u : 0u) | ((size_t)line % 64 == 0 ? 2u : 0u);
}
)";

// Barriers that count a predicate (Numba's syncthreads_count / _and / _or),
// three counts in a row and the and / or forms; a group of 64: out gets,
// per work-item, the three counts' sum and four flags.
inline const char *const kVotes = R"(
GPUHAL_KERNEL void votes(GPUHAL_GLOBAL int *out, int modulo) {
  const int i = (int)gpuhal_local_id(0);
  const int g = (int)gpuhal_global_id(0);
  int total = 0;
  for (int round = 1; round <= 3; ++round) total += gpuhal_barrier_count(i % (modulo * round) == 0);
  const int all = gpuhal_barrier_and(i >= 0);
  const int all_but = gpuhal_barrier_and(i != 5);
  const int any = gpuhal_barrier_or(i == 63);
  const int none = gpuhal_barrier_or(i > 1000);
  out[5 * g] = total;
  out[5 * g + 1] = all;
  out[5 * g + 2] = all_but;
  out[5 * g + 3] = any;
  out[5 * g + 4] = none;
}
)";

// Dynamic shared memory: two views of one base, reversed within the group.
inline const char *const kDynamic = R"(
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

// Barrier kernels that exercise every construct of the host backend's
// work-item loops (plugins/host/kernels/host_workitem_loops.hpp): a barrier loop
// with per-work-item variables carried across barriers (a value, a private
// array, a rematerialised chain), early returns, and a device function
// reading the work-item's id. (Outside the anonymous namespace: not every
// test file uses them.)
inline const char *const kRotateRounds = R"(
GPUHAL_DEVICE unsigned lane(void) { return gpuhal_local_id(0); }
GPUHAL_KERNEL void rotate_rounds(GPUHAL_GLOBAL int *out, unsigned n, int rounds) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0), gid = gpuhal_global_id(0);
  unsigned twice = lid * 2u, next = twice + 1u;
  int acc = 0;
  int priv[2];
  priv[0] = (int)lane();
  priv[1] = (int)next;
  s[lid] = (int)gid;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (gid >= n) return;
  for (int r = 0; r < rounds; ++r) {
    int v = s[(lid + 1) % 64];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    s[lid] = v;
    acc += v;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  out[gid] = acc * 4 + (priv[0] - (int)lid) + (priv[1] - (int)twice - 1);
}
)";

// if / else, while and do-while around barriers, a 3-D block, a block that
// shadows a per-work-item variable, a shared counter read by a loop header.
inline const char *const kBranches = R"(
GPUHAL_KERNEL void branches(GPUHAL_GLOBAL int *out, int mode) {
  GPUHAL_SHARED_ARRAY(int, s, 256);
  GPUHAL_SHARED_ARRAY(int, count, 1);
  unsigned x = gpuhal_local_id(0), y = gpuhal_local_id(1), z = gpuhal_local_id(2);
  unsigned lin = (z * gpuhal_local_size(1) + y) * gpuhal_local_size(0) + x;
  unsigned total = gpuhal_local_size(0) * gpuhal_local_size(1) * gpuhal_local_size(2);
  int v = (int)lin;
  if (lin == 0) count[0] = 3;
  s[lin] = v;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (mode > 0) {
    int w = s[total - 1 - lin];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    s[lin] = w;
  } else {
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    s[lin] = -v;
  }
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE | GPUHAL_GLOBAL_MEM_FENCE);
  while (count[0] > 0) {
    v += s[(lin + 1) % total];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    if (lin == 0) count[0] -= 1;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  int rounds = 0;
  do {
    {
      int v = 1000; /* shadows the outer v in this block only */
      s[lin] = v;
    }
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    rounds++;
  } while (rounds < 2);
  out[gpuhal_group_id(0) * total + lin] = v + s[lin] + rounds * 100000;
}
)";

// A barrier loop inside a barrier loop, bounds from parameters, a pointer
// that lives across barriers.
inline const char *const kNestedLoops = R"(
GPUHAL_KERNEL void nested_loops(GPUHAL_GLOBAL int *out, GPUHAL_GLOBAL const int *in, int outer, int inner) {
  GPUHAL_SHARED_ARRAY(int, s, 128);
  unsigned lid = gpuhal_local_id(0);
  GPUHAL_GLOBAL const int *mine = in + gpuhal_global_id(0);
  int acc = 0;
  for (int i = 0; i < outer; ++i) {
    for (int j = 0; j < inner; j++) {
      s[lid] = *mine + i * j;
      gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
      acc += s[gpuhal_local_size(0) - 1 - lid];
      gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    }
  }
  out[gpuhal_global_id(0)] = acc;
}
)";

// Work-item 0 returns, and in the last group every work-item does: loop
// conditions around barriers must be read from a work-item still running.
inline const char *const kCountdown = R"(
GPUHAL_KERNEL void countdown(GPUHAL_GLOBAL int *out, unsigned n) {
  unsigned gid = gpuhal_global_id(0);
  if (gid >= n || gpuhal_local_id(0) == 0) return;
  int k = 3, steps = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  while (k > 0) {
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    k--;
    steps++;
  }
  out[gid] = steps;
}
)";

// Values of every kind carried across barriers (test_kernels_loops.cpp).
inline const char *const kCarried = R"(
GPUHAL_DEVICE void bump(int *p, int by) { *p += by; }
GPUHAL_KERNEL void carried(GPUHAL_GLOBAL long long *out, GPUHAL_GLOBAL const int *in, unsigned n, int rounds) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0), gid = gpuhal_global_id(0);
  if (gid >= n) {
    s[lid] = 0;
    out[gid] = -1;
    return;
  }
  int a = in[gid];
  int b = 1, c = 2, d = 3, e = 4;
  double f = 0.5;
  GPUHAL_GLOBAL const int *p = in;
  int addr = 0;
  int *q = &addr;
  for (int r = 0; r < rounds; ++r) {
    s[lid] = a;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    a = s[(lid + 1) % 64] + b;
    b += c;
    c += d;
    d += e;
    e += 1;
    f *= 2.0;
    p += 1;
    bump(&addr, *p);
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    *q += 1;
  }
  out[gid] = (long long)a * 3 + b + c + d + e + (long long)f + addr;
}
)";

// Each work-item adds its group's ids to its own slot: a group that ran
// twice, or not at all, or with another group's ids, shows.
inline const char *const kWhereGroups = R"(
GPUHAL_DEVICE unsigned slot(void) {
  return ((gpuhal_group_id(2) * gpuhal_num_groups(1) + gpuhal_group_id(1)) * gpuhal_num_groups(0) + gpuhal_group_id(0)) *
             gpuhal_local_size(0) + gpuhal_local_id(0);
}
GPUHAL_KERNEL void where_barrier(GPUHAL_GLOBAL unsigned *out) {
  GPUHAL_SHARED_ARRAY(unsigned, code, 1);
  if (gpuhal_local_id(0) == 0) code[0] = 1 + gpuhal_group_id(0) + 100 * gpuhal_group_id(1) + 10000 * gpuhal_group_id(2);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  out[slot()] += code[0] + 1000000 * gpuhal_local_id(0);
}
GPUHAL_KERNEL void where_plain(GPUHAL_GLOBAL unsigned *out) {
  out[slot()] += 1 + gpuhal_group_id(0) + 100 * gpuhal_group_id(1) + 10000 * gpuhal_group_id(2) + 1000000 * gpuhal_local_id(0);
}
)";

// A shared array declared inside a loop around barriers is one array for the
// whole launch of the group, as on a GPU: what a round leaves in it, the
// next round reads (test_kernels_loops.cpp).
inline const char *const kSharedAcrossRounds = R"(
GPUHAL_KERNEL void shared_rounds(GPUHAL_GLOBAL int *out, int rounds) {
  GPUHAL_SHARED_ARRAY(int, top, 64);
  unsigned lid = gpuhal_local_id(0);
  int acc = 0;
  top[lid] = 1000;
  for (int r = 0; r < rounds; ++r) {
    GPUHAL_SHARED_ARRAY(int, s, 64);
    if (r == 0) s[lid] = (int)lid;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    acc += s[(lid + 1) % 64];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    s[lid] += 1;
  }
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  out[gpuhal_global_id(0)] = acc + top[63 - lid];
}
)";

// Atomics: a 256-bin histogram through shared memory then global memory,
// and every operation on every type, each work-item contributing once
// (test_kernels.cpp checks every result exactly; cuda and hsa compile it).
inline const char *const kAtomics = R"(
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  unsigned lid = gpuhal_local_id(0);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0)) local_bins[b] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) gpuhal_atomic_add(&local_bins[data[i]], 1u);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0))
    if (local_bins[b]) gpuhal_atomic_add(&bins[b], local_bins[b]);
}
GPUHAL_KERNEL void every_op(GPUHAL_GLOBAL int *i32, GPUHAL_GLOBAL unsigned *u32, GPUHAL_GLOBAL int64_t *i64,
                            GPUHAL_GLOBAL uint64_t *u64, GPUHAL_GLOBAL float *f32, GPUHAL_GLOBAL double *f64,
                            GPUHAL_GLOBAL int *old_sum) {
  int k = (int)gpuhal_global_id(0);
  int olds = 0;
  olds += gpuhal_atomic_add(&i32[0], 1) >= 0;
  gpuhal_atomic_sub(&i32[1], 2);
  gpuhal_atomic_min(&i32[2], -k);
  gpuhal_atomic_max(&i32[3], k);
  gpuhal_atomic_and(&i32[4], ~(1 << (k % 31)));
  gpuhal_atomic_or(&u32[0], 1u << (k % 32));
  gpuhal_atomic_xor(&u32[1], 1u);
  gpuhal_atomic_add(&u32[2], 3u);
  gpuhal_atomic_min(&u32[3], (unsigned)k + 5u);
  gpuhal_atomic_add(&i64[0], (int64_t)k * 4000000000ll);
  gpuhal_atomic_max(&i64[1], -(int64_t)k);
  gpuhal_atomic_sub(&u64[0], (uint64_t)1);
  gpuhal_atomic_xor(&u64[1], (uint64_t)1 << (k % 64));
  gpuhal_atomic_add(&f32[0], 0.5f);
  gpuhal_atomic_max(&f32[1], (float)k * 0.25f);
  gpuhal_atomic_add(&f64[0], 0.25);
  gpuhal_atomic_min(&f64[1], -(double)k);
  // An increment out of cas (a retry loop), and exchanges.
  int seen = i32[7];
  for (;;) {
    int got = gpuhal_atomic_cas(&i32[7], seen, seen + 1);
    if (got == seen) break;
    seen = got;
  }
  gpuhal_atomic_xchg(&f32[2], 7.0f);
  gpuhal_atomic_xchg(&f64[2], 1.5);
  gpuhal_atomic_xchg(&u64[2], (uint64_t)9);
  gpuhal_atomic_add(old_sum, olds);
}
)";

// The _explicit atomics: the histogram with work-group scope on its shared
// bins and device scope on the global ones, and every_op's operations with
// orders and scopes that vary (global memory never below device scope; an
// order 7 and a scope 9 act as seq_cst and system). The same results as
// kAtomics' kernels.
inline const char *const kAtomicsExplicit = R"(
#define WG GPUHAL_MEMORY_SCOPE_WORK_GROUP
#define DEV GPUHAL_MEMORY_SCOPE_DEVICE
#define SYS GPUHAL_MEMORY_SCOPE_SYSTEM
#define RLX GPUHAL_MEMORY_ORDER_RELAXED
#define AR GPUHAL_MEMORY_ORDER_ACQ_REL
#define SC GPUHAL_MEMORY_ORDER_SEQ_CST
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  unsigned lid = gpuhal_local_id(0);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0)) local_bins[b] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0))
    gpuhal_atomic_add_explicit(&local_bins[data[i]], 1u, RLX, WG);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0))
    if (local_bins[b]) gpuhal_atomic_add_explicit(&bins[b], local_bins[b], AR, DEV);
}
GPUHAL_KERNEL void every_op(GPUHAL_GLOBAL int *i32, GPUHAL_GLOBAL unsigned *u32, GPUHAL_GLOBAL int64_t *i64,
                            GPUHAL_GLOBAL uint64_t *u64, GPUHAL_GLOBAL float *f32, GPUHAL_GLOBAL double *f64,
                            GPUHAL_GLOBAL int *old_sum) {
  GPUHAL_SHARED_ARRAY(int, group_min, 1);
  int k = (int)gpuhal_global_id(0);
  int olds = 0;
  if (gpuhal_local_id(0) == 0) group_min[0] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  olds += gpuhal_atomic_add_explicit(&i32[0], 1, RLX, DEV) >= 0;
  gpuhal_atomic_sub_explicit(&i32[1], 2, AR, SYS);
  gpuhal_atomic_min_explicit(&group_min[0], -k, SC, WG);
  gpuhal_atomic_max_explicit(&i32[3], k, 7, 9);
  gpuhal_atomic_and_explicit(&i32[4], ~(1 << (k % 31)), AR, DEV);
  gpuhal_atomic_or_explicit(&u32[0], 1u << (k % 32), SC, SYS);
  gpuhal_atomic_xor_explicit(&u32[1], 1u, RLX, SYS);
  gpuhal_atomic_add_explicit(&u32[2], 3u, SC, DEV);
  gpuhal_atomic_min_explicit(&u32[3], (unsigned)k + 5u, AR, DEV);
  gpuhal_atomic_add_explicit(&i64[0], (int64_t)k * 4000000000ll, AR, SYS);
  gpuhal_atomic_max_explicit(&i64[1], -(int64_t)k, RLX, DEV);
  gpuhal_atomic_sub_explicit(&u64[0], (uint64_t)1, SC, SYS);
  gpuhal_atomic_xor_explicit(&u64[1], (uint64_t)1 << (k % 64), AR, DEV);
  gpuhal_atomic_add_explicit(&f32[0], 0.5f, RLX, DEV);
  gpuhal_atomic_max_explicit(&f32[1], (float)k * 0.25f, AR, SYS);
  gpuhal_atomic_add_explicit(&f64[0], 0.25, SC, DEV);
  gpuhal_atomic_min_explicit(&f64[1], -(double)k, AR, DEV);
  int seen = i32[7];
  for (;;) {
    int got = gpuhal_atomic_cas_explicit(&i32[7], seen, seen + 1, AR, DEV);
    if (got == seen) break;
    seen = got;
  }
  gpuhal_atomic_xchg_explicit(&f32[2], 7.0f, RLX, SYS);
  gpuhal_atomic_xchg_explicit(&f64[2], 1.5, AR, DEV);
  gpuhal_atomic_xchg_explicit(&u64[2], (uint64_t)9, SC, SYS);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (gpuhal_local_id(0) == 0) gpuhal_atomic_min_explicit(&i32[2], group_min[0], RLX, DEV);
  gpuhal_atomic_add_explicit(old_sum, olds, RLX, DEV);
}
)";

// The wave operations (tests/conformance/wave_model.hpp: its kernels, and
// what they must give).
inline const char *const kWaves = gpuhal::conformance::kWaveKernels;

// A shared array aligned to 0 in a kernel with a barrier: no backend may
// compile it (the alignment must be a power of two).
inline const char *const kAlignedToZero = R"(
GPUHAL_KERNEL void k(GPUHAL_GLOBAL int *p) {
  GPUHAL_SHARED_ARRAY_ALIGNED(int, zero, 0, 4);
  zero[gpuhal_local_id(0)] = 1;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  p[0] = zero[0];
})";

// gpuhal_printf and gpuhal_assert: a line per work-item of group 0, and an
// assertion that fails for work-items at or past `limit`.
inline const char *const kPrintAssert = R"(
GPUHAL_KERNEL void checked(GPUHAL_GLOBAL int *x, unsigned limit) {
  unsigned i = gpuhal_global_id(0);
  if (gpuhal_group_id(0) == 0) gpuhal_printf("work-item %u of %u says %d\n", i, gpuhal_global_size(0), x[i]);
  gpuhal_assert(i < limit);
  x[i] += 1;
}
)";

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The machine's own limits, measured beside the workloads in the same run
// (the performance method: every row is ours / peer / limit):
//  - memory bandwidth: a STREAM-style triad a[i] = b[i] + s * c[i] with one
//    thread per hardware thread, each on its own contiguous part, the parts
//    first touched by the thread that later uses them; and the workload's
//    own loop (saxpy) written the same way;
//  - compute: a peak-FMA loop per hardware thread, independent chains of
//    vector FMAs (AVX-512 where the CPU has it, else AVX2 + FMA).
// Thread safety: each call is self-contained; not meant to run concurrently
// with other benchmarks.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

namespace limits {

inline unsigned hardware_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

// Runs fn(begin, end) on `threads` threads over [0, n), contiguous parts.
template <class F>
void parallel_parts(size_t n, unsigned threads, F fn) {
  std::vector<std::thread> pool;
  const size_t part = (n + threads - 1) / threads;
  for (unsigned t = 0; t < threads; ++t) {
    const size_t b = std::min(n, size_t(t) * part), e = std::min(n, b + part);
    pool.emplace_back([=] { fn(b, e); });
  }
  for (auto &th : pool) th.join();
}

// Three float arrays of n elements, first touched in the triad's partition.
struct TriadArrays {
  explicit TriadArrays(size_t n_) : n(n_), a(new float[n_]), b(new float[n_]), c(new float[n_]) {
    parallel_parts(n, hardware_threads(), [this](size_t lo, size_t hi) {
      for (size_t i = lo; i < hi; ++i) {
        a[i] = 0.0f;
        b[i] = float(i % 1000) * 0.001f;
        c[i] = 1.0f;
      }
    });
  }
  ~TriadArrays() {
    delete[] a;
    delete[] b;
    delete[] c;
  }
  TriadArrays(const TriadArrays &) = delete;
  TriadArrays &operator=(const TriadArrays &) = delete;
  size_t n;
  float *a, *b, *c;
};

inline void triad(TriadArrays &t, float s) {
  parallel_parts(t.n, hardware_threads(), [&t, s](size_t lo, size_t hi) {
    float *__restrict a = t.a;
    const float *__restrict b = t.b;
    const float *__restrict c = t.c;
    for (size_t i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
  });
}

// The workload's own loop, y[i] = a * x[i] + y[i], as plain code with one
// thread per hardware thread: what the machine does for saxpy's memory
// traffic (three streams, no read-for-ownership of a fresh destination as
// the triad's has).
inline void saxpy_loop(TriadArrays &t, float s) {
  parallel_parts(t.n, hardware_threads(), [&t, s](size_t lo, size_t hi) {
    float *__restrict y = t.a;
    const float *__restrict x = t.b;
    for (size_t i = lo; i < hi; ++i) y[i] = s * x[i] + y[i];
  });
}

// FMAs of `iterations` rounds of 10 independent vector chains; returns the
// floating-point operations done (2 per lane per FMA).
__attribute__((target("avx512f"))) inline double fma_chains_avx512(uint64_t iterations, float *sink) {
  __m512 acc[10];
  for (int k = 0; k < 10; ++k) acc[k] = _mm512_set1_ps(float(k) * 0.001f);
  const __m512 m = _mm512_set1_ps(0.999999f), a = _mm512_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iterations; ++i)
    for (int k = 0; k < 10; ++k) acc[k] = _mm512_fmadd_ps(acc[k], m, a);
  __m512 s = acc[0];
  for (int k = 1; k < 10; ++k) s = _mm512_add_ps(s, acc[k]);
  float lanes[16];
  _mm512_storeu_ps(lanes, s);
  *sink = lanes[0] + lanes[15];
  return double(iterations) * 10 * 16 * 2;
}

__attribute__((target("avx2,fma"))) inline double fma_chains_avx2(uint64_t iterations, float *sink) {
  __m256 acc[10];
  for (int k = 0; k < 10; ++k) acc[k] = _mm256_set1_ps(float(k) * 0.001f);
  const __m256 m = _mm256_set1_ps(0.999999f), a = _mm256_set1_ps(1e-7f);
  for (uint64_t i = 0; i < iterations; ++i)
    for (int k = 0; k < 10; ++k) acc[k] = _mm256_fmadd_ps(acc[k], m, a);
  __m256 s = acc[0];
  for (int k = 1; k < 10; ++k) s = _mm256_add_ps(s, acc[k]);
  float lanes[8];
  _mm256_storeu_ps(lanes, s);
  *sink = lanes[0] + lanes[7];
  return double(iterations) * 10 * 8 * 2;
}

inline bool has_avx512() { return __builtin_cpu_supports("avx512f"); }

// Every hardware thread runs the chains; returns the operations done.
inline double fma_peak(uint64_t iterations_per_thread, bool avx512) {
  const unsigned n = hardware_threads();
  std::vector<float> sinks(size_t(n) * 16);
  std::vector<double> flops(n);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < n; ++t)
    pool.emplace_back([&, t] {
      flops[t] = avx512 ? fma_chains_avx512(iterations_per_thread, &sinks[size_t(t) * 16])
                        : fma_chains_avx2(iterations_per_thread, &sinks[size_t(t) * 16]);
    });
  for (auto &th : pool) th.join();
  double total = 0;
  for (double f : flops) total += f;
  return total;
}

}  // namespace limits

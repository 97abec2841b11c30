// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the wave operations must give, computed on the host from the wave
// size alone (include/gpuhal/kernel_builtins.def states the rules): the
// expected twelve values per work-item of the `wave_facts` kernel that the
// conformance suite and the unit tests launch. A wave is the work-items of
// one group whose linear local index / wave size is equal; the last wave of
// a group may have fewer lanes, and only those take part.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace gpuhal {
namespace conformance {

// `wave_facts`: each work-item writes its lane, the wave size, a ballot,
// any, all, the four shuffles of its global index and the three reductions
// (twelve int64 values); `wave_sum`: a sum over groups through wave
// reductions and one shared slot per wave.
inline const char *const kWaveKernels = R"(
GPUHAL_KERNEL void wave_facts(GPUHAL_GLOBAL int64_t *out) {
  unsigned g = gpuhal_global_id(0);
  unsigned lane = gpuhal_wave_lane();
  GPUHAL_GLOBAL int64_t *o = out + (size_t)g * 12;
  int v = (int)g;
  o[0] = lane;
  o[1] = gpuhal_wave_size();
  o[2] = (int64_t)gpuhal_wave_ballot(lane % 3u == 0u);
  o[3] = gpuhal_wave_any(g % 7u == 5u) != 0;
  o[4] = gpuhal_wave_all(lane < 20u) != 0;
  o[5] = gpuhal_wave_shuffle(v, (int)(g % 5u) - 1);
  o[6] = gpuhal_wave_shuffle_up(v, 3u);
  o[7] = gpuhal_wave_shuffle_down(v, 2u);
  o[8] = gpuhal_wave_shuffle_xor(v, 5u);
  o[9] = gpuhal_wave_reduce_add((int64_t)g * 3);
  o[10] = gpuhal_wave_reduce_min(1000 - v);
  o[11] = (int64_t)gpuhal_wave_reduce_max((double)g * 0.5);
}
GPUHAL_KERNEL void wave_sum(GPUHAL_GLOBAL const int *x, unsigned n, GPUHAL_GLOBAL int64_t *total) {
  GPUHAL_SHARED_ARRAY(int64_t, per_wave, 1024);
  unsigned lid = gpuhal_local_id(0);
  unsigned waves = (gpuhal_local_size(0) + gpuhal_wave_size() - 1u) / gpuhal_wave_size();
  int64_t mine = 0;
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) mine += x[i];
  int64_t wave_total = gpuhal_wave_reduce_add(mine);
  if (gpuhal_wave_lane() == 0u) per_wave[lid / gpuhal_wave_size()] = wave_total;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (lid == 0u) {
    int64_t group_total = 0;
    for (unsigned w = 0; w < waves; ++w) group_total += per_wave[w];
    gpuhal_atomic_add(total, group_total);
  }
}
)";

// One work-item's row: lane, wave size, ballot(lane % 3 == 0),
// any(global % 7 == 5), all(lane < 20), shuffle(global, global % 5 - 1),
// shuffle_up(global, 3), shuffle_down(global, 2), shuffle_xor(global, 5),
// reduce_add(3 * global), reduce_min(1000 - global), reduce_max(global / 2.0)
// truncated.
inline std::vector<int64_t> wave_facts_expected(uint64_t wave, uint64_t group, uint64_t groups) {
  std::vector<int64_t> rows;
  rows.reserve(size_t(group * groups * 12));
  for (uint64_t g = 0; g < group * groups; ++g) {
    const uint64_t local = g % group, lane = local % wave;
    const uint64_t lanes = std::min(wave, group - (local - lane)), first = g - lane;
    auto from = [&](int64_t src) { return (src >= 0 && uint64_t(src) < lanes) ? int64_t(first) + src : int64_t(g); };
    uint64_t ballot = 0;
    bool any = false;
    int64_t sum = 0;
    for (uint64_t i = 0; i < lanes; ++i) {
      if (i % 3 == 0) ballot |= uint64_t(1) << i;
      any = any || (first + i) % 7 == 5;
      sum += 3 * int64_t(first + i);
    }
    const int64_t last = int64_t(first + lanes - 1);
    const int64_t row[12] = {int64_t(lane),
                             int64_t(wave),
                             int64_t(ballot),
                             any ? 1 : 0,
                             lanes <= 20 ? 1 : 0,
                             from(int64_t(g % 5) - 1),
                             from(int64_t(lane) - 3),
                             from(int64_t(lane) + 2),
                             from(int64_t(lane ^ 5)),
                             sum,
                             1000 - last,
                             int64_t(double(last) * 0.5)};
    rows.insert(rows.end(), row, row + 12);
  }
  return rows;
}

}  // namespace conformance
}  // namespace gpuhal

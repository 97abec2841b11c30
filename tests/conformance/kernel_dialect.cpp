// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Conformance checks of the kernel dialect's later builtins, run element by
// element on every backend that runs device code: the atomics with an
// explicit order and scope, and the wave operations (full and partial
// waves, against wave_model.hpp).
#include <string>
#include <vector>

#include "conformance.hpp"
#include "wave_model.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void require_kernels(Env &env) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
}

void atomics_explicit(Env &env) {
  require_kernels(env);
  // Work-group scope on the shared bins, acq_rel at device scope into the
  // global ones; then a message passed through a flag: each group's last
  // work-item publishes its group's count with a release, and the group
  // that takes the last ticket (acq_rel) must see every count.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins,
                             GPUHAL_GLOBAL unsigned *counts, GPUHAL_GLOBAL unsigned *ticket,
                             GPUHAL_GLOBAL unsigned *seen_total) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  GPUHAL_SHARED_ARRAY(unsigned, mine, 1);
  unsigned lid = gpuhal_local_id(0);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0)) local_bins[b] = 0;
  if (lid == 0) mine[0] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) {
    gpuhal_atomic_add_explicit(&local_bins[data[i]], 1u, GPUHAL_MEMORY_ORDER_RELAXED, GPUHAL_MEMORY_SCOPE_WORK_GROUP);
    gpuhal_atomic_add_explicit(&mine[0], 1u, GPUHAL_MEMORY_ORDER_RELAXED, GPUHAL_MEMORY_SCOPE_WORK_GROUP);
  }
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0))
    if (local_bins[b])
      gpuhal_atomic_add_explicit(&bins[b], local_bins[b], GPUHAL_MEMORY_ORDER_ACQ_REL, GPUHAL_MEMORY_SCOPE_DEVICE);
  if (lid == 0) {
    counts[gpuhal_group_id(0)] = mine[0];
    unsigned t = gpuhal_atomic_add_explicit(ticket, 1u, GPUHAL_MEMORY_ORDER_ACQ_REL, GPUHAL_MEMORY_SCOPE_DEVICE);
    if (t == gpuhal_num_groups(0) - 1u) {
      unsigned total = 0;
      for (unsigned g = 0; g < gpuhal_num_groups(0); ++g)
        total += gpuhal_atomic_add_explicit(&counts[g], 0u, GPUHAL_MEMORY_ORDER_SEQ_CST, GPUHAL_MEMORY_SCOPE_DEVICE);
      *seen_total = total;
    }
  }
})");
  const auto data = pattern(1 << 20, 23);
  std::vector<uint32_t> want(256, 0);
  for (uint8_t b : data) ++want[b];
  const uint32_t groups = 24;
  DeviceArray d = to_device(env.ctx, HostView::of(data));
  DeviceArray bins = device_array(env.ctx, {256}, dtypes::uint32),
              counts = device_array(env.ctx, {groups}, dtypes::uint32);
  DeviceArray ticket = device_array(env.ctx, {1}, dtypes::uint32), seen = device_array(env.ctx, {1}, dtypes::uint32);
  for (DeviceArray *a : {&bins, &counts, &ticket, &seen}) a->memset(0);
  m.kernel("histogram")({groups}, {96})(d, uint32_t(data.size()), bins, counts, ticket, seen);
  const auto got = bins.copy_to_host().to_vector<uint32_t>();
  for (size_t b = 0; b < 256; ++b)
    expect(got[b] == want[b],
           "bin " + std::to_string(b) + " counted " + std::to_string(got[b]) + ", expected " + std::to_string(want[b]));
  const uint32_t total = seen.copy_to_host().to_vector<uint32_t>()[0];
  expect(total == data.size(), "the last group saw " + std::to_string(total) + " of " + std::to_string(data.size()) +
                                   " counts released by the others (acq_rel at device scope)");
}

void wave_operations(Env &env) {
  require_kernels(env);
  Module m = compile_kernels(env, kWaveKernels);
  // 48 work-items a group: one full and one partial wave of 32, one
  // partial wave of 64; three groups.
  const uint64_t group = 48, groups = 3;
  DeviceArray out = device_array(env.ctx, {int64_t(group * groups * 12)}, dtypes::int64);
  out.memset(0xff);
  m.kernel("wave_facts")({uint32_t(groups)}, {uint32_t(group)})(out);
  const auto got = out.copy_to_host().to_vector<int64_t>();
  const uint64_t wave = uint64_t(got[1]);
  expect(wave >= 1 && wave <= 64 && (wave & (wave - 1)) == 0,
         "gpuhal_wave_size() is " + std::to_string(got[1]) + ", not a power of two up to 64");
  if (wave < 1 || wave > 64) return;
  const auto want = wave_facts_expected(wave, group, groups);
  static const char *const what[12] = {"lane",        "wave size",  "ballot",     "any",
                                       "all",         "shuffle",    "shuffle_up", "shuffle_down",
                                       "shuffle_xor", "reduce_add", "reduce_min", "reduce_max"};
  int reported = 0;
  for (size_t i = 0; i < want.size() && reported < 10; ++i) {
    if (got[i] == want[i]) continue;
    ++reported;
    expect(false, std::string(what[i % 12]) + " of work-item " + std::to_string(i / 12) + " (wave size " +
                      std::to_string(wave) + ") is " + std::to_string(got[i]) + ", expected " +
                      std::to_string(want[i]));
  }
  // A sum through wave reductions matches the host's, for a group size that
  // is no multiple of any wave size.
  std::vector<int32_t> x(100003);
  int64_t sum = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = int32_t((i * 7919) % 2001) - 1000;
    sum += x[i];
  }
  DeviceArray dx = to_device(env.ctx, HostView::of(x)), total = device_array(env.ctx, {1}, dtypes::int64);
  total.memset(0);
  m.kernel("wave_sum")({17}, {200})(dx, uint32_t(x.size()), total);
  const int64_t got_sum = total.copy_to_host().to_vector<int64_t>()[0];
  expect(got_sum == sum, "the wave-reduction sum is " + std::to_string(got_sum) + ", expected " + std::to_string(sum));
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"kernels.atomics_explicit",
     "atomics with explicit orders and scopes: exact work-group and device counts, and a count "
     "released with acq_rel seen by the group that acquires the last ticket",
     atomics_explicit},
    {"kernels.wave_operations",
     "ballot, any, all, the four shuffles and the wave reductions element by element over full and "
     "partial waves, and a sum through wave reductions",
     wave_operations},
};

}  // namespace conformance
}  // namespace gpuhal

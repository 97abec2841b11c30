// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernels in the portable dialect: lowering, results checked element by
// element (barriers, static and dynamic shared memory, 2-D grids, streams),
// and launches the device cannot run refused.
#include <algorithm>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void lowering(Env &env) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
  const auto lowered = env.runtime.kernel_lowering();
  expect(lowered.size() == kernel_builtins().size() + 1, "the lowering has the wrong number of entries");
  for (size_t i = 0; i < kernel_builtins().size(); ++i) {
    const auto &name = kernel_builtins()[i];
    expect(lowered[i + 1].second.find(name) != std::string::npos,
           "the lowering of " + name + " does not define it: '" + lowered[i + 1].second + "'");
  }
}

void barrier_results(Env &env) {
  // Work-items read what their neighbours wrote to shared memory before a
  // barrier: right only if the barrier is one.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void neighbour(GPUHAL_GLOBAL int *out, unsigned n) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0);
  s[lid] = (int)(gpuhal_group_id(0) * 1000 + lid + 1);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (gpuhal_global_id(0) < n) out[gpuhal_global_id(0)] = s[(lid + 1) % gpuhal_local_size(0)];
})");
  const unsigned groups = 5, block = 64, n = groups * block - 7;
  DeviceArray out = device_array(env.ctx, {int64_t(groups * block)}, dtypes::int32);
  out.memset(0);
  m.kernel("neighbour")({groups}, {block})(out, n);
  const auto h = out.copy_to_host().to_vector<int32_t>();
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned l = 0; l < block; ++l) {
      const unsigned i = g * block + l;
      const int32_t want = i < n ? int32_t(g * 1000 + (l + 1) % block + 1) : 0;
      expect(h[i] == want, "work-item " + std::to_string(i) + " wrote " + std::to_string(h[i]) + ", expected " +
                               std::to_string(want));
    }
}

void dynamic_shared_reduction(Env &env) {
  // A tree reduction per work-group in dynamic shared memory sized at launch.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void block_sums(GPUHAL_GLOBAL const int *in, GPUHAL_GLOBAL int *sums, unsigned n) {
  GPUHAL_DYNAMIC_SHARED(int, s);
  unsigned lid = gpuhal_local_id(0), gid = gpuhal_global_id(0);
  s[lid] = gid < n ? in[gid] : 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned stride = gpuhal_local_size(0) / 2; stride > 0; stride /= 2) {
    if (lid < stride) s[lid] += s[lid + stride];
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (lid == 0) sums[gpuhal_group_id(0)] = s[0] + (int)gpuhal_dynamic_shared_bytes() * 0;
})");
  const unsigned block = 128, n = 10000, groups = (n + block - 1) / block;
  std::vector<int32_t> in(n);
  for (unsigned i = 0; i < n; ++i) in[i] = int32_t(i % 97) - 40;
  DeviceArray din = to_device(env.ctx, HostView::of(in));
  DeviceArray sums = device_array(env.ctx, {int64_t(groups)}, dtypes::int32);
  Stream s = env.ctx.create_stream();
  m.kernel("block_sums")({groups}, {block}, s, block * 4)(din, sums, n);
  HostArray back = sums.copy_to_host(s);
  s.synchronize();
  const auto got = back.to_vector<int32_t>();
  for (unsigned g = 0; g < groups; ++g) {
    int32_t want = 0;
    for (unsigned i = g * block; i < std::min(n, (g + 1) * block); ++i) want += in[i];
    expect(got[g] == want, "work-group " + std::to_string(g) + " summed " + std::to_string(got[g]) + ", expected " +
                               std::to_string(want));
  }
}

void grid_2d(Env &env) {
  // out[y][x] = a * x + y over a 2-D grid with partial edge groups.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void ramp(GPUHAL_GLOBAL float *out, unsigned w, unsigned h, float a) {
  unsigned x = gpuhal_global_id(0), y = gpuhal_global_id(1);
  if (x < w && y < h) out[y * w + x] = a * (float)x + (float)y;
})");
  const unsigned w = 77, h = 45;
  DeviceArray out = device_array(env.ctx, {int64_t(h), int64_t(w)}, dtypes::float32);
  out.memset(0);
  m.kernel("ramp")({(w + 15) / 16, (h + 7) / 8}, {16, 8})(out, w, h, 2.0f);
  const auto got = out.copy_to_host().to_vector<float>();
  for (unsigned y = 0; y < h; ++y)
    for (unsigned x = 0; x < w; ++x)
      expect(got[y * w + x] == 2.0f * float(x) + float(y),
             "element (" + std::to_string(y) + ", " + std::to_string(x) + ") is " + std::to_string(got[y * w + x]));
}

void launches_in_stream_order(Env &env) {
  // Copy in, kernel, copy out, kernel again, all on one stream.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void add(GPUHAL_GLOBAL int *x, int k, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] += k;
})");
  const unsigned n = 1 << 16;
  std::vector<int32_t> v(n), once(n), twice(n);
  for (unsigned i = 0; i < n; ++i) v[i] = int32_t(i);
  Stream s = env.ctx.create_stream();
  DeviceArray d = to_device(env.ctx, HostView::of(v), s);
  m.kernel("add")({n / 256}, {256}, s)(d, 5, n);
  d.copy_to_host(HostView::of(once), s);
  m.kernel("add")({n / 256}, {256}, s)(d, 1000, n);
  d.copy_to_host(HostView::of(twice), s);
  s.synchronize();
  for (unsigned i = 0; i < n; ++i) {
    expect(once[i] == int32_t(i) + 5,
           "after the first launch element " + std::to_string(i) + " is " + std::to_string(once[i]));
    expect(twice[i] == int32_t(i) + 1005,
           "after the second launch element " + std::to_string(i) + " is " + std::to_string(twice[i]));
  }
}

void bad_launches_refused(Env &env) {
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void one(GPUHAL_GLOBAL int *x) { x[gpuhal_global_id(0)] = 1; })");
  DeviceArray x = device_array(env.ctx, {64}, dtypes::int32);
  const DeviceProperties &p = env.runtime.device(0).properties();
  expect_error([&] { m.kernel("no_such_kernel"); }, Status::ERROR_NOT_FOUND, "", "an unknown kernel name");
  expect_error([&] { m.kernel("one")({1}, {uint32_t(p.max_threads_per_block) + 1})(x); }, Status::ERROR_INVALID_VALUE,
               "", "a block over max_threads_per_block");
  bool refused = false;
  try {
    m.kernel("one")({1}, {1})(x, 5);
  } catch (const Error &) {
    refused = true;
  }
  expect(refused, "a launch with the wrong number of arguments was accepted");
  refused = false;
  try {
    Module::compile(env.ctx, "GPUHAL_KERNEL void broken(GPUHAL_GLOBAL int *x) { x[0] = ; }");
  } catch (const Error &e) {
    refused = e.status() == Status::ERROR_COMPILATION_FAILED && std::string(e.what()).size() > 40;
  }
  expect(refused, "a source that does not compile was not ERROR_COMPILATION_FAILED with the compiler's messages");
  // The refusals left nothing behind: the kernel still launches (its
  // results are checked by the checks above).
  Stream s = env.ctx.create_stream();
  m.kernel("one")({1}, {64}, s)(x);
  s.synchronize();
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"kernels.lowering", "every builtin of the portable dialect has a definition", lowering},
    {"kernels.barrier_results",
     "a work-group barrier orders shared-memory writes before neighbours' reads (checked per element)",
     barrier_results},
    {"kernels.dynamic_shared_reduction", "dynamic shared memory sized at launch serves a tree reduction per work-group",
     dynamic_shared_reduction},
    {"kernels.grid_2d", "a 2-D grid with partial edge groups computes every element", grid_2d},
    {"kernels.launches_in_stream_order", "launches run in stream order between copies", launches_in_stream_order},
    {"kernels.bad_launches_refused",
     "unknown kernels, oversized blocks, wrong arguments and bad sources are refused; nothing is queued",
     bad_launches_refused},
};

}  // namespace conformance
}  // namespace gpuhal

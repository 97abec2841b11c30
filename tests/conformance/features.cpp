// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Features added after the first GPU runs, each checked on every backend:
// managed memory across streams, fill / assign with broadcasting over
// strided views, barrier reductions, multi-dimensional and aligned shared
// and local arrays, constant arrays, per-thread default streams that do not
// wait for each other (shown with device work), and a stream of another
// runtime wrapped as an external stream, kernel attributes and occupancy,
// and gpuhal_printf's lines.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void expect_ints(const std::vector<int32_t> &got, const std::vector<int32_t> &want, const std::string &what) {
  expect(got.size() == want.size(),
         what + ": " + std::to_string(got.size()) + " elements, expected " + std::to_string(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    expect(got[i] == want[i], what + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) +
                                  ", expected " + std::to_string(want[i]));
}

void managed_both_ways(Env &env) {
  require(env, Capability::ManagedMemory, "managed memory");
  const int64_t n = 1 << 16;
  DeviceArray m = managed_array(env.ctx, {n}, dtypes::int32);
  HostView h = m.host_view();
  auto *p = static_cast<int32_t *>(h.data());
  for (int64_t i = 0; i < n; ++i) p[i] = int32_t(i * 3);
  // Host writes seen by the device (a copy on one stream) ...
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  HostArray seen = m.copy_to_host(a);
  a.synchronize();
  const auto read = seen.to_vector<int32_t>();
  for (int64_t i = 0; i < n; ++i)
    expect(read[size_t(i)] == int32_t(i * 3),
           "the device read element " + std::to_string(i) + " of managed memory wrong after a host write");
  // ... and device writes (on another stream) seen by the host once done.
  std::vector<int32_t> src(size_t(n), 77);
  m.view({Slice(n / 2, n)}).copy_from_host(HostView::of(src).view({Slice(0, n / 2)}), b);
  m.view({Slice(0, 16)}).memset(0, b);
  b.synchronize();
  for (int64_t i = 0; i < n; ++i) {
    const int32_t want = i < 16 ? 0 : i < n / 2 ? int32_t(i * 3) : 77;
    expect(p[i] == want, "the host read element " + std::to_string(i) + " of managed memory as " +
                             std::to_string(p[i]) + " after device writes, expected " + std::to_string(want));
  }
}

void fill_assign_broadcast(Env &env) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
  // A strided 2-D view filled, then a row broadcast into a strided view.
  DeviceArray d = device_array(env.ctx, {6, 8}, dtypes::int32);
  d.memset(0);
  DeviceArray every_other = d.view({Slice(0, 6, 2), Slice(1, 8, 3)});  // 3 x 3
  every_other.fill(int32_t(5));
  std::vector<int32_t> row{10, 20, 30};
  DeviceArray source = to_device(env.ctx, HostView::of(row, {1, 3}));
  DeviceArray lower = d.view({Slice(3, 6), Slice(0, 8, 3)});  // 3 x 3: rows 3..5, columns 0, 3, 6
  lower.assign(source);                                       // (1, 3) broadcast to (3, 3)
  std::vector<int32_t> want(48, 0);
  for (int r = 0; r < 6; r += 2)
    for (int c = 1; c < 8; c += 3) want[size_t(r * 8 + c)] = 5;
  for (int r = 3; r < 6; ++r)
    for (int k = 0; k < 3; ++k) want[size_t(r * 8 + k * 3)] = row[size_t(k)];
  expect_ints(d.copy_to_host().to_vector<int32_t>(), want, "fill and assign over strided views");
  // A scalar cast to the array's dtype; a shape that does not broadcast is refused.
  DeviceArray f = device_array(env.ctx, {4}, dtypes::float64);
  f.fill(int32_t(-3));
  for (double v : f.copy_to_host().to_vector<double>())
    expect(v == -3.0, "fill of an int into doubles gave " + std::to_string(v));
  expect_error([&] { lower.assign(to_device(env.ctx, HostView::of(std::vector<int32_t>(2), {2}))); },
               Status::ERROR_INCOMPATIBLE, "broadcast", "assign of (2,) into (3, 3)");
}

void barrier_reductions(Env &env) {
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void votes(GPUHAL_GLOBAL int *out, unsigned n) {
  unsigned lid = gpuhal_local_id(0);
  unsigned g = gpuhal_group_id(0);
  int count = gpuhal_barrier_count(lid % 3 == 0 && gpuhal_global_id(0) < n);
  int all = gpuhal_barrier_and(lid < 1000);
  int any = gpuhal_barrier_or(lid == g);
  if (lid == 0) { out[3 * g] = count; out[3 * g + 1] = all; out[3 * g + 2] = any; }
})");
  const unsigned groups = 4, block = 64, n = groups * block - 10;
  DeviceArray out = device_array(env.ctx, {int64_t(3 * groups)}, dtypes::int32);
  out.memset(0xff);
  m.kernel("votes")({groups}, {block})(out, n);
  std::vector<int32_t> want;
  for (unsigned g = 0; g < groups; ++g) {
    int32_t count = 0;
    for (unsigned l = 0; l < block; ++l) count += (l % 3 == 0 && g * block + l < n) ? 1 : 0;
    want.insert(want.end(), {count, 1, g < block ? 1 : 0});
  }
  expect_ints(out.copy_to_host().to_vector<int32_t>(), want, "gpuhal_barrier_count / _and / _or");
}

void arrays_nd(Env &env) {
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void shapes(GPUHAL_GLOBAL int *out) {
  GPUHAL_SHARED_ARRAY(int, s2, 4, 16);
  GPUHAL_SHARED_ARRAY_ALIGNED(int, s4, 64, 2, 2, 2, 8);
  GPUHAL_LOCAL_ARRAY(int, l3, 2, 3, 4);
  GPUHAL_LOCAL_ARRAY_ALIGNED(unsigned char, l2, 32, 3, 5);
  unsigned lid = gpuhal_local_id(0);
  s2[lid / 16][lid % 16] = (int)lid;
  s4[lid / 32][(lid / 16) % 2][(lid / 8) % 2][lid % 8] = (int)(2 * lid);
  for (int a = 0; a < 2; ++a) for (int b = 0; b < 3; ++b) for (int c = 0; c < 4; ++c) l3[a][b][c] = a * 100 + b * 10 + c;
  for (int a = 0; a < 3; ++a) for (int b = 0; b < 5; ++b) l2[a][b] = (unsigned char)(a * 5 + b);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  unsigned other = 63 - lid;
  int aligned = ((unsigned long)&s4[0][0][0][0] % 64 == 0) && ((unsigned long)&l2[0][0] % 32 == 0);
  out[lid] = s2[other / 16][other % 16] + s4[other / 32][(other / 16) % 2][(other / 8) % 2][other % 8] * 1000 +
             l3[1][2][3] * 1000000 + (int)l2[2][4] + (aligned ? 0 : -1000000000);
})");
  DeviceArray out = device_array(env.ctx, {64}, dtypes::int32);
  m.kernel("shapes")({1}, {64})(out);
  std::vector<int32_t> want;
  for (int lid = 0; lid < 64; ++lid) {
    const int other = 63 - lid;
    want.push_back(other + 2 * other * 1000 + 123 * 1000000 + 14);
  }
  expect_ints(out.copy_to_host().to_vector<int32_t>(), want, "2-D to 4-D shared and local arrays, aligned ones too");
}

void constant_arrays(Env &env) {
  std::vector<int32_t> one{1, 2, 3}, two(6), three(24), four(48);
  for (size_t i = 0; i < two.size(); ++i) two[i] = int32_t(10 + i);
  for (size_t i = 0; i < three.size(); ++i) three[i] = int32_t(100 + i);
  for (size_t i = 0; i < four.size(); ++i) four[i] = int32_t(1000 + i);
  ModuleOptions options;
  options.constant("c1", HostView::of(one))
      .constant("c2", HostView::of(two, {2, 3}))
      .constant("c3", HostView::of(three, {2, 3, 4}))
      .constant("c4", HostView::of(four, {2, 2, 3, 4}));
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void read(GPUHAL_GLOBAL int *out) {
  unsigned i = gpuhal_global_id(0);
  if (i == 0) { out[0] = c1[2]; out[1] = c2[1][2]; out[2] = c3[1][2][3]; out[3] = c4[1][1][2][3]; out[4] = c4[0][1][0][1]; }
})",
                             options);
  DeviceArray out = device_array(env.ctx, {5}, dtypes::int32);
  m.kernel("read")({1}, {1})(out);
  expect_ints(out.copy_to_host().to_vector<int32_t>(), {3, 15, 123, 1047, 1013},
              "constant arrays of 1 to 4 dimensions");
}

void atomics_histogram(Env &env) {
  // A 256-bin histogram: atomics on shared memory per group, then on global
  // memory across groups; exact counts, or some update was lost.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void histogram(GPUHAL_GLOBAL const unsigned char *data, unsigned n, GPUHAL_GLOBAL unsigned *bins,
                             GPUHAL_GLOBAL long *total) {
  GPUHAL_SHARED_ARRAY(unsigned, local_bins, 256);
  unsigned lid = gpuhal_local_id(0);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0)) local_bins[b] = 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned i = gpuhal_global_id(0); i < n; i += gpuhal_global_size(0)) {
    gpuhal_atomic_add(&local_bins[data[i]], 1u);
    gpuhal_atomic_add(total, (long)data[i]);
  }
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned b = lid; b < 256; b += gpuhal_local_size(0))
    if (local_bins[b]) gpuhal_atomic_add(&bins[b], local_bins[b]);
})");
  const auto data = pattern(3 << 20, 11);
  std::vector<uint32_t> want(256, 0);
  int64_t sum = 0;
  for (uint8_t b : data) {
    ++want[b];
    sum += b;
  }
  DeviceArray d = to_device(env.ctx, HostView::of(data));
  DeviceArray bins = device_array(env.ctx, {256}, dtypes::uint32), total = device_array(env.ctx, {1}, dtypes::int64);
  bins.memset(0);
  total.memset(0);
  m.kernel("histogram")({40}, {128})(d, uint32_t(data.size()), bins, total);
  const auto got = bins.copy_to_host().to_vector<uint32_t>();
  for (size_t b = 0; b < 256; ++b)
    expect(got[b] == want[b],
           "bin " + std::to_string(b) + " counted " + std::to_string(got[b]) + ", expected " + std::to_string(want[b]));
  expect(total.copy_to_host().to_vector<int64_t>()[0] == sum, "the 64-bit atomic sum of every byte is wrong");
}

void per_thread_streams_independent(Env &env) {
  // Thread A's per-thread default stream runs a kernel that spins until a
  // flag in mapped memory is set; thread B's per-thread default stream must
  // finish its own work meanwhile (CUDA: per-thread default streams do not
  // synchronize with each other). Device work, not host callbacks: CUDA may
  // serialize host functions across streams.
  require(env, Capability::MappedHostMemory, "mapped host memory");
  // Every work-item spins. The grid is larger than what the host backend
  // runs inline on the launching thread when the stream is idle (4096
  // work-items): a launch must return before its kernel finishes.
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void spin(GPUHAL_GLOBAL volatile int *flag, GPUHAL_GLOBAL int *done) {
  while (flag[0] == 0) { }
  if (gpuhal_global_id(0) == 0) done[0] = 1;
}
GPUHAL_KERNEL void mark(GPUHAL_GLOBAL int *x) { x[0] = 42; })");
  MappedArray flag = mapped_array(env.ctx, {1}, dtypes::int32);
  *static_cast<volatile int32_t *>(flag.host.data()) = 0;
  DeviceArray done = device_array(env.ctx, {1}, dtypes::int32), marked = device_array(env.ctx, {1}, dtypes::int32);
  done.memset(0);
  marked.memset(0);
  std::atomic<bool> spinning{false};
  std::thread a([&] {
    Stream s = env.ctx.per_thread_default_stream();
    m.kernel("spin")({33}, {256}, s)(flag.device, done);
    spinning = true;
    s.synchronize();
  });
  const auto launched_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!spinning && std::chrono::steady_clock::now() < launched_by)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  if (!spinning) {
    *static_cast<volatile int32_t *>(flag.host.data()) = 1;
    a.join();
    expect(false, "a kernel launch on a stream did not return until its kernel finished");
  }
  std::atomic<bool> b_done{false};
  std::thread b([&] {
    Stream s = env.ctx.per_thread_default_stream();
    m.kernel("mark")({1}, {1}, s)(marked);
    s.synchronize();
    b_done = true;
  });
  // B must finish while A spins; give it ample time on a loaded machine,
  // then release A whatever happened, so that nothing hangs.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!b_done && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const bool independent = b_done;
  *static_cast<volatile int32_t *>(flag.host.data()) = 1;
  a.join();
  b.join();
  expect(independent, "work on one thread's per-thread default stream waited for another thread's (a spinning kernel)");
  expect_ints(marked.copy_to_host().to_vector<int32_t>(), {42}, "the second thread's kernel");
  expect_ints(done.copy_to_host().to_vector<int32_t>(), {1}, "the spinning kernel after its release");
}

void external_stream_of_another_runtime(Env &env) {
  // Context::external_stream takes a native stream made elsewhere, another
  // gpuhal runtime over the same plugin included.
  Runtime other = Runtime::load(env.runtime.config());
  Context theirs = other.device(0).primary_context();
  Stream owner = theirs.create_stream();
  Stream wrapped = env.ctx.external_stream(owner.native_handle());
  const auto want = pattern(1 << 16, 9);
  DeviceArray d = device_array(env.ctx, {int64_t(want.size())}, dtypes::uint8);
  d.copy_from_host(HostView::of(want), wrapped);
  std::vector<uint8_t> got(want.size());
  d.copy_to_host(HostView::of(got), wrapped);
  wrapped.synchronize();
  expect(got == want, "a copy round trip on another runtime's stream: " + first_difference(got, want));
}

// Stream-ordered calls return while their stream is still held by earlier
// work, in a context made just now, so that a first use that loads a
// module shows (CUDA's lazy loading: "loading kernels might require context
// synchronization"; seen on an H200 as a fill that blocked for as long as
// its stream was held). The hold is a host callback waiting for a flag; a
// watchdog raises the flag after kHold, so that a call that does wait ends
// and is named.
void ordered_calls_do_not_wait(Env &env) {
  if (!env.runtime.supports(Capability::Kernels))
    throw Unsupported{"the plugin has no device-code entries", to_string(Capability::Kernels)};
  constexpr auto kHold = std::chrono::seconds(10);
  Runtime other = Runtime::load(env.runtime.config());
  Context fresh = other.device(0).primary_context();
  DeviceArray d = device_array(fresh, {64, 64}, dtypes::float32), src = device_array_like(d);
  DeviceArray row = device_array(fresh, {1, 32}, dtypes::float32);
  Stream s = fresh.create_stream(StreamKind::NonBlocking);
  std::mutex mu;
  std::condition_variable cv;
  bool released = false, watchdog_fired = false;
  s.add_callback([&] {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return released; });
  });
  std::thread watchdog([&] {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, kHold, [&] { return released; })) watchdog_fired = released = true;
    cv.notify_all();
  });
  auto held_through = [&](const char *what, const std::function<void()> &call) {
    call();
    std::lock_guard<std::mutex> lock(mu);
    expect(!watchdog_fired, std::string(what) + " waited for the work already queued on its stream (it returned "
                                                "only when the hold ended, after 10 s)");
  };
  auto release = [&] {
    {
      std::lock_guard<std::mutex> lock(mu);
      released = true;
    }
    cv.notify_all();
    watchdog.join();
  };
  try {
    held_through("fill of a strided view (the core's kernel, its first use)",
                 [&] { d.view({Slice(0, 64), Slice(0, 64, 2)}).fill(1.5f, s); });
    held_through("assign of a broadcast row into a strided view (the core's kernel)",
                 [&] { d.view({Slice(0, 64), Slice(1, 64, 2)}).assign(row, s); });
    held_through("memset", [&] { src.memset(0, s); });
    held_through("a device-to-device copy", [&] { d.copy_from_device(src, s); });
  } catch (...) {
    release();  // the callback and the watchdog end before the failure is reported
    throw;
  }
  release();
  s.synchronize();
}

// Kernel attributes and occupancy: what the plugin says of a kernel with
// 1 KiB of static shared memory is consistent with the device and with
// what launch() takes.
void attributes_occupancy(Env &env) {
  require(env, Capability::KernelAttributes, "kernel attributes");
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void scaled(GPUHAL_GLOBAL float *x, unsigned n) {
  GPUHAL_SHARED_ARRAY(float, s, 256);
  unsigned lid = gpuhal_local_id(0);
  s[lid % 256] = 2.0f;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] *= s[(lid + 1) % 256];
})");
  Kernel k = m.kernel("scaled");
  const DeviceProperties &p = env.ctx.device().properties();
  const KernelAttributes a = k.attributes();
  expect(a.max_threads_per_block >= 1 && a.max_threads_per_block <= uint32_t(p.max_threads_per_block),
         "max_threads_per_block " + std::to_string(a.max_threads_per_block) + " outside 1.." +
             std::to_string(p.max_threads_per_block));
  expect(a.static_shared_bytes >= 1024, "static_shared_bytes " + std::to_string(a.static_shared_bytes) +
                                            " is less than the 1 KiB the kernel declares");
  expect(a.preferred_block_multiple == uint32_t(std::max(p.warp_size, 1)),
         "preferred_block_multiple " + std::to_string(a.preferred_block_multiple) + ", the device's warp size is " +
             std::to_string(p.warp_size));
  const uint32_t one = a.preferred_block_multiple;
  expect(k.max_active_blocks_per_unit(one) >= 1, "no resident block of " + std::to_string(one) + " work-items");
  expect(k.max_active_blocks_per_unit(a.max_threads_per_block + 1) == 0,
         "a block over max_threads_per_block is counted resident");
  expect(k.max_active_blocks_per_unit(one, a.max_dynamic_shared_bytes + 1) == 0,
         "a block over max_dynamic_shared_bytes is counted resident");
  const BlockSizeSuggestion s = k.suggest_block_size();
  expect(s.block >= one && s.block <= a.max_threads_per_block && s.block % one == 0,
         "suggested block " + std::to_string(s.block) + " is not a multiple of " + std::to_string(one) + " up to " +
             std::to_string(a.max_threads_per_block));
  expect(s.min_grid >= uint32_t(std::max(p.multiprocessor_count, 1)),
         "min_grid " + std::to_string(s.min_grid) + " is less than one block per compute unit");
  // The suggestion launches, and so does the most dynamic shared memory
  // allowed (results are the other kernel checks' business).
  const unsigned n = s.block * 4;
  DeviceArray x = to_device(env.ctx, HostView::of(std::vector<float>(n, 1.5f)));
  k({4}, {s.block})(x, n);
  k({1}, {one}, env.ctx.default_stream(), a.max_dynamic_shared_bytes)(x, one);
  env.ctx.synchronize();
}

// gpuhal_printf: each work-item's line reaches the process's stdout whole,
// by the synchronisation after the launch.
void printf_lines(Env &env) {
  require(env, Capability::KernelPrintf, "kernel printf");
  Module m = compile_kernels(env, R"(
GPUHAL_KERNEL void say(GPUHAL_GLOBAL const int *x) {
  unsigned i = gpuhal_global_id(0);
  gpuhal_printf("gpuhal-conform printf %u=%d\n", i, x[i]);
})");
  std::vector<int32_t> values(96);
  for (size_t i = 0; i < values.size(); ++i) values[i] = int32_t(i) * 3 + 1;
  DeviceArray x = to_device(env.ctx, HostView::of(values));
  std::fflush(stdout);
  char path[] = "/tmp/gpuhal-conform-printf-XXXXXX";
  const int fd = mkstemp(path);
  expect(fd >= 0, "no temporary file for stdout");
  if (fd < 0) return;
  const int saved = dup(1);
  dup2(fd, 1);
  std::string error;
  try {
    m.kernel("say")({3}, {32})(x);
    env.ctx.synchronize();
  } catch (const Error &e) {
    error = e.what();
  }
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  close(fd);
  std::ifstream in(path);
  std::string line;
  std::set<std::string> seen;
  while (std::getline(in, line))
    if (line.rfind("gpuhal-conform printf ", 0) == 0) seen.insert(line);
  unlink(path);
  expect(error.empty(), "the launch failed: " + error);
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string want = "gpuhal-conform printf " + std::to_string(i) + "=" + std::to_string(values[i]);
    expect(seen.count(want) == 1, "no whole line '" + want + "' on stdout");
  }
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"memory.managed_both_ways",
     "managed memory: host writes seen by the device, device writes on another stream seen by the host",
     managed_both_ways},
    {"kernels.fill_assign_broadcast", "fill and assign with NumPy broadcasting over strided views (the core's kernels)",
     fill_assign_broadcast},
    {"kernels.barrier_reductions", "gpuhal_barrier_count / _and / _or give exact per-group results",
     barrier_reductions},
    {"kernels.arrays_nd", "2-D to 4-D shared and local arrays, aligned variants at their alignment", arrays_nd},
    {"kernels.constant_arrays", "constant arrays of one to four dimensions read back exactly", constant_arrays},
    {"kernels.atomics_histogram",
     "a 256-bin histogram through shared then global atomics, and a 64-bit atomic sum, count exactly",
     atomics_histogram},
    {"kernels.attributes_occupancy",
     "kernel attributes agree with the device; occupancy counts launchable blocks only; the suggested "
     "block size launches",
     attributes_occupancy},
    {"kernels.printf_lines", "gpuhal_printf from 96 work-items: every line whole on stdout by the next synchronisation",
     printf_lines},
    {"streams.per_thread_defaults_independent",
     "per-thread default streams of two threads do not wait for each other (a spinning kernel)",
     per_thread_streams_independent},
    {"streams.ordered_calls_do_not_wait",
     "in a new context, fill and assign of strided views (the core's kernels), memset and a device copy "
     "return while their stream is held by a host callback",
     ordered_calls_do_not_wait},
    {"streams.external_of_another_runtime",
     "a stream of another gpuhal runtime over the same plugin works as an external stream",
     external_stream_of_another_runtime},
};

}  // namespace conformance
}  // namespace gpuhal

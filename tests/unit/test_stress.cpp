// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stress: several host threads, each with several streams, moving data
// through device arrays with asynchronous copies, memsets, cross-stream
// event waits and host callbacks, checking every result by checksum. On
// the host backend and on the cuda backend over the fake driver; run under
// ThreadSanitizer and AddressSanitizer in CI. Per backend: 4 threads x 40
// rounds, each round 7 stream operations (H2D, record, wait, D2D, D2H,
// callback, synchronize), 32 KiB compared byte for byte: 1120 operations and
// 5 MiB verified.
#include <atomic>
#include <mutex>
#include <random>
#include <thread>

#include "test_support.hpp"

using namespace gpuhal;

namespace {

constexpr int kThreads = 4;
constexpr int kStreams = 3;
constexpr int kRounds = 40;
constexpr int64_t kElems = 4096;

// One thread's work: round r writes a pattern on stream k, copies it on to
// the next stream's array after an event wait, reads it back and compares
// every byte. Returns the number of wrong results.
int worker(const Context &ctx, int id) {
  int wrong = 0;
  std::vector<Stream> streams;
  std::vector<DeviceArray> arrays;
  for (int k = 0; k < kStreams; ++k) {
    streams.push_back(ctx.create_stream(k % 2 ? StreamKind::NonBlocking : StreamKind::Blocking));
    arrays.push_back(device_array(ctx, {kElems}, dtypes::int64));
  }
  std::atomic<int> callbacks{0};
  std::vector<int64_t> src(kElems), back(kElems);
  for (int r = 0; r < kRounds; ++r) {
    const int k = r % kStreams, next = (k + 1) % kStreams;
    for (int64_t i = 0; i < kElems; ++i) src[size_t(i)] = int64_t(id) * 1000000 + r + i;
    arrays[size_t(k)].copy_from_host(HostView::of(src), streams[size_t(k)]);
    Event done = streams[size_t(k)].record();
    streams[size_t(next)].wait(done);
    arrays[size_t(next)].copy_from_device(arrays[size_t(k)], streams[size_t(next)]);
    arrays[size_t(next)].copy_to_host(HostView::of(back), streams[size_t(next)]);
    streams[size_t(next)].add_callback([&callbacks] { ++callbacks; });
    streams[size_t(next)].synchronize();
    if (back != src) ++wrong;  // every byte of every round is checked
    if (r % 8 == 7) {          // a memset round on a throwaway array, dropped while deferred
      DeviceArray scratch = device_array(ctx, {kElems}, dtypes::int64);
      scratch.memset(0xff, streams[size_t(k)]);
      streams[size_t(k)].synchronize();
    }
  }
  if (callbacks.load() != kRounds) ++wrong;
  return wrong;
}

void stress(const Context &ctx) {
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      try {
        wrong += worker(ctx, t);
      } catch (const std::exception &e) {
        ++wrong;
      }
    });
  for (auto &th : threads) th.join();
  CHECK(wrong.load() == 0);
  ctx.synchronize();
  ctx.flush_deallocations();
}

}  // namespace

TEST_CASE("stress: threads x streams with checksums on the host backend") {
  Context ctx = test::host_context({{"GPUHAL_HOST_MEMORY_LIMIT", "256M"}});
  const uint64_t free_before = ctx.memory_info().free;
  stress(ctx);
  CHECK(ctx.memory_info().free == free_before);
}

#if GPUHAL_TEST_HAVE_CUDA_PLUGIN
TEST_CASE("stress: threads x streams with checksums on the cuda backend over the fake driver") {
  Config c;
  c.backend = "cuda";
  c.plugin_path = {GPUHAL_TEST_LIB_DIR};
  c.set_option("GPUHAL_CUDA_DRIVER", GPUHAL_TEST_FAKE_CUDA);
  Context ctx = Runtime::load(c).device(0).primary_context();
  const uint64_t free_before = ctx.memory_info().free;
  stress(ctx);
  CHECK(ctx.memory_info().free == free_before);
}
#endif

// Randomised kernel stress: threads launch a barrier kernel and a
// barrier-free kernel with random grids, blocks and dynamic shared sizes on
// random streams (some launches small enough to run inline, some queued
// behind copies), with event waits between streams, and check every
// element. A fixed seed per thread keeps a failing run repeatable.
TEST_CASE("stress kernel: random launches of barrier and barrier-free kernels on many streams and threads") {
  Context ctx = test::host_context({{"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}});
  Module m = Module::compile(ctx, R"(
GPUHAL_KERNEL void scan_block(GPUHAL_GLOBAL const int *in, GPUHAL_GLOBAL int *out, unsigned n) {
  GPUHAL_DYNAMIC_SHARED(int, s);
  unsigned lid = gpuhal_local_id(0), b = gpuhal_local_size(0), i = gpuhal_global_id(0);
  s[lid] = i < n ? in[i] : 0;
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  for (unsigned d = 1; d < b; d *= 2) {          /* inclusive scan within the block */
    int v = lid >= d ? s[lid - d] : 0;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
    s[lid] += v;
    gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  }
  if (i < n) out[i] = s[lid];
}
GPUHAL_KERNEL void add(GPUHAL_GLOBAL int *x, int k, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] += k;
}
)");
  Kernel scan = m.kernel("scan_block"), add = m.kernel("add");
  std::atomic<int> wrong{0}, launches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t)
    threads.emplace_back([&, t] {
      std::mt19937 rng(1234 + t);
      std::vector<Stream> streams = {ctx.create_stream(), ctx.create_stream(StreamKind::NonBlocking)};
      for (int r = 0; r < 25; ++r) {
        const unsigned block = 1u << (rng() % 8);          // 1 .. 128
        const unsigned n = 1 + rng() % 3000;
        const unsigned groups = (n + block - 1) / block;
        const int k = int(rng() % 100);
        Stream &a = streams[rng() % 2], &b = streams[rng() % 2];
        std::vector<int> in(n);
        for (unsigned i = 0; i < n; ++i) in[i] = int(rng() % 7) - 3;
        DeviceArray din = to_device(ctx, HostView::of(in), a);
        DeviceArray dout = device_array(ctx, {int64_t(n)}, dtypes::int32);
        add({groups}, {block}, a)(din, k, n);
        b.wait(a.record());
        scan({groups}, {block}, b, block * 4)(din, dout, n);
        std::vector<int> got(n);
        dout.copy_to_host(HostView::of(got), b);
        b.synchronize();
        launches += 2;
        for (unsigned i = 0; i < n; ++i) {
          const unsigned first = i / block * block;
          int want = 0;
          for (unsigned j = first; j <= i; ++j) want += in[j] + k;
          if (got[i] != want) {
            ++wrong;
            break;
          }
        }
      }
    });
  for (auto &th : threads) th.join();
  ctx.synchronize();
  CHECK(wrong.load() == 0);
  CHECK(launches.load() == 150);
}

// Randomised mixed stress (the reliability plan's): threads mix kernel
// launches, first IPC exports of arrays other threads' streams are still
// writing, dropped arrays and modules (deferred frees and unloads), custom
// deferred releases and flushes; between phases the context is reset (a
// reset must not run concurrently with other use) and everything made
// before it must be refused. Every byte each thread owns is checked after
// every step. Fixed seeds per thread and phase: a failure is repeatable.
TEST_CASE("stress: kernels, first IPC exports, deferred frees and resets mixed across threads, every byte checked") {
  Context ctx = test::host_context({{"GPUHAL_KERNEL_CACHE", GPUHAL_TEST_KERNEL_CACHE}});
  const char *const source = R"(
GPUHAL_KERNEL void add(GPUHAL_GLOBAL int *x, int k, unsigned n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] += k;
})";
  std::atomic<int> wrong{0}, exports{0}, releases{0};
  std::vector<std::string> errors;
  std::mutex errors_mu;
  constexpr int kPhases = 3, kWorkers = 4, kSteps = 30;
  for (int phase = 0; phase < kPhases; ++phase) {
    DeviceArray survivor = device_array(ctx, {16}, dtypes::int32);  // must be refused after the reset
    std::vector<std::thread> threads;
    for (int t = 0; t < kWorkers; ++t)
      threads.emplace_back([&, t] {
        try {
          std::mt19937 rng(uint32_t(777 + 31 * phase + t));
          Stream s = ctx.create_stream(t % 2 ? StreamKind::NonBlocking : StreamKind::Blocking);
          Module m = Module::compile(ctx, source);
          struct Owned {
            DeviceArray device;
            std::vector<int32_t> want;
          };
          std::vector<Owned> owned;
          for (int step = 0; step < kSteps; ++step) {
            switch (rng() % 6) {
              case 0:
              case 1: {  // a new array from the host, a kernel on it
                const size_t n = 1 + rng() % 20000;
                Owned o;
                o.want.resize(n);
                for (size_t i = 0; i < n; ++i) o.want[i] = int32_t(rng() % 1000);
                o.device = to_device(ctx, HostView::of(o.want));  // synchronous: `want` changes below
                const int k = int(rng() % 50);
                m.kernel("add")({uint32_t((n + 127) / 128)}, {128}, s)(o.device, k, unsigned(n));
                for (auto &v : o.want) v += k;
                owned.push_back(std::move(o));
                break;
              }
              case 2:  // a kernel on an array this thread owns, queued behind its stream's work
                if (!owned.empty()) {
                  Owned &o = owned[rng() % owned.size()];
                  const int k = int(rng() % 50) - 25;
                  m.kernel("add")({uint32_t((o.want.size() + 63) / 64)}, {64}, s)(o.device, k,
                                                                                   unsigned(o.want.size()));
                  for (auto &v : o.want) v += k;
                }
                break;
              case 3:  // the first IPC export, possibly while the stream still writes the array
                if (!owned.empty()) {
                  (void)get_ipc_handle(owned[rng() % owned.size()].device);
                  ++exports;
                }
                break;
              case 4:  // drop an array (a deferred free) and sometimes recompile (a deferred unload)
                if (!owned.empty()) owned.erase(owned.begin() + long(rng() % owned.size()));
                if (rng() % 3 == 0) m = Module::compile(ctx, source);
                break;
              case 5:  // a custom deferred release, sometimes a flush
                ctx.defer_release([&releases] { ++releases; }, 64);
                if (rng() % 2) ctx.flush_deallocations();
                break;
            }
            for (const Owned &o : owned) {  // every byte this thread owns
              std::vector<int32_t> got(o.want.size());
              o.device.copy_to_host(HostView::of(got), s);
              s.synchronize();
              if (got != o.want) ++wrong;
            }
          }
        } catch (const std::exception &e) {
          std::lock_guard<std::mutex> lock(errors_mu);
          errors.push_back(e.what());
        }
      });
    for (auto &th : threads) th.join();
    ctx.synchronize();
    ctx.reset();
    REQUIRE_GPUHAL_ERROR(survivor.copy_to_host(), Status::ERROR_CONTEXT_DESTROYED, "");
  }
  for (const auto &e : errors) INFO(e);
  CHECK(errors.empty());
  CHECK(wrong.load() == 0);
  WARN(exports.load() << " first IPC exports, " << releases.load() << " custom deferred releases ran");
}

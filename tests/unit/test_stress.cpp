// Stress: several host threads, each with several streams, moving data
// through device arrays with asynchronous copies, memsets, cross-stream
// event waits and host callbacks, checking every result by checksum. On
// the host backend and on the cuda backend over the fake driver; run under
// ThreadSanitizer and AddressSanitizer in CI. Per backend: 4 threads x 40
// rounds, each round 7 stream operations (H2D, record, wait, D2D, D2H,
// callback, synchronize), 32 KiB compared byte for byte: 1120 operations and
// 5 MiB verified.
#include <atomic>
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

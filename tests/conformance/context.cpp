// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Contexts: memory figures, synchronisation of every stream, reset.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void memory_info(Env &env) {
  const MemoryInfo info = env.ctx.memory_info();
  expect(info.total > 0, "memory_info: total is 0");
  expect(info.free <= info.total,
         "memory_info: free (" + std::to_string(info.free) + ") > total (" + std::to_string(info.total) + ")");
}

void synchronize_waits_for_every_stream(Env &env) {
  std::atomic<int> done{0};
  std::vector<Stream> streams;
  for (int i = 0; i < 3; ++i) {
    streams.push_back(env.ctx.create_stream(i == 0 ? StreamKind::Blocking : StreamKind::NonBlocking));
    streams.back().add_callback([&done, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(10 * (i + 1)));
      ++done;
    });
  }
  env.ctx.synchronize();
  expect(done == 3, "Context::synchronize returned before the work of every stream finished (" +
                        std::to_string(done.load()) + " of 3)");
}

void reset_invalidates_old_handles(Env &env) {
  DeviceArray old = device_array(env.ctx, {16}, dtypes::uint8);
  Stream stream = env.ctx.create_stream();
  Event event = env.ctx.create_event();
  env.ctx.reset();
  expect_error([&] { old.copy_to_host(); }, Status::ERROR_CONTEXT_DESTROYED, "",
               "a copy from an array made before reset");
  expect_error([&] { old.memset(0); }, Status::ERROR_CONTEXT_DESTROYED, "", "a memset of an array made before reset");
  expect_error([&] { stream.synchronize(); }, Status::ERROR_CONTEXT_DESTROYED, "", "a stream made before reset");
  expect_error([&] { event.record(env.ctx.default_stream()); }, Status::ERROR_CONTEXT_DESTROYED, "",
               "an event made before reset");
  const auto v = pattern(100, 1);
  expect(bytes_of(to_device(env.ctx, HostView::of(v))) == v, "the context does not work after a reset");
  Stream fresh = env.ctx.create_stream();
  fresh.synchronize();
}

// A reset frees the context's memory, but not under a live host array over
// managed or (write-combined) driver-allocated host memory: its bytes stay,
// apart from anything allocated after (NumPy arrays over such memory rely on
// it). Where the vendor's allocator hands a freed block straight to the
// next allocation (ROCr), only the backend can keep it (plugin ABI 1.17
// mem_keep); where the driver unmaps it, the core puts a copy back.
void reset_keeps_host_arrays_apart(Env &env) {
  const bool managed = env.ctx.supports(Capability::ManagedMemory);
  const bool host = env.ctx.supports(Capability::HostMemory);
  if (!managed && !host)
    throw Unsupported{"neither managed nor host memory", to_string(Capability::ManagedMemory)};
  constexpr int64_t n = 1024;
  std::vector<DeviceArray> old_managed;
  std::vector<MappedArray> old_host;
  std::vector<int32_t *> views;  // raw host pointers, as a NumPy array holds them
  if (managed) {
    old_managed.push_back(managed_array(env.ctx, {n}, dtypes::int32));
    views.push_back(static_cast<int32_t *>(old_managed.back().host_view().data()));
  }
  if (host) {
    old_host.push_back(mapped_array(env.ctx, {n}, dtypes::int32, {}, 'C', false, true));
    views.push_back(static_cast<int32_t *>(old_host.back().host.data()));
  }
  for (size_t k = 0; k < views.size(); ++k) std::fill(views[k], views[k] + n, int32_t(7 + k));
  env.ctx.reset();
  std::vector<DeviceArray> later;
  std::vector<MappedArray> later_host;
  for (int i = 0; i < 4; ++i) {
    if (managed) later.push_back(managed_array(env.ctx, {n}, dtypes::int32));
    if (host) {
      later_host.push_back(mapped_array(env.ctx, {n}, dtypes::int32, {}, 'C', false, true));
      later.push_back(later_host.back().device);
    }
  }
  for (const DeviceArray &a : later) a.memset(9);
  env.ctx.synchronize();
  for (size_t k = 0; k < views.size(); ++k)
    expect(std::count(views[k], views[k] + n, int32_t(7 + k)) == n,
           std::string("after a reset, a host array over ") + (k == 0 && managed ? "managed" : "write-combined") +
               " memory lost its bytes (memory allocated since shares them, or they were not kept)");
  for (int32_t *v : views) std::fill(v, v + n, 5);
  for (const DeviceArray &a : later)
    expect(bytes_of(a) == std::vector<uint8_t>(size_t(n) * 4, 9),
           "writing through a host array of before a reset changed an array allocated after it");
  expect_error([&] { (managed ? old_managed.front() : old_host.front().device).memset(0); },
               Status::ERROR_CONTEXT_DESTROYED, "", "the old array's own handle after a reset");
}

void limits_round_trip(Env &env) {
  if (!env.ctx.supports(Capability::ContextLimits)) {
    expect_error([&] { env.ctx.set_limit(Limit::StackBytes, 4096); }, Status::ERROR_NOT_SUPPORTED,
                 "Capability::ContextLimits", "Context::set_limit without the capability");
    throw Unsupported{"no context limits", to_string(Capability::ContextLimits)};
  }
  // Right after a reset no kernel has printed in the context, so even
  // CUDA's printf buffer may be set; the backend may round a request up.
  env.ctx.reset();
  for (const Limit l : {Limit::PrintfBufferBytes, Limit::StackBytes}) {
    const uint64_t before = env.ctx.limit(l), want = before + 4096;
    env.ctx.set_limit(l, want);
    const uint64_t got = env.ctx.limit(l);
    expect(got >= want, "limit " + std::to_string(uint32_t(l)) + " set to " + std::to_string(want) + " reads back " +
                            std::to_string(got));
    env.ctx.set_limit(l, before);
  }
  expect_error([&] { env.ctx.set_limit(static_cast<Limit>(9), 1); }, Status::ERROR_INVALID_VALUE, "unknown limit",
               "a limit that is no Limit");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"context.memory_info", "memory_info reports total > 0 and free <= total", memory_info},
    {"context.synchronize_waits_for_every_stream",
     "Context::synchronize returns after the work of every stream of the context", synchronize_waits_for_every_stream},
    {"context.reset_invalidates_old_handles",
     "after reset, arrays, streams and events made before it are ERROR_CONTEXT_DESTROYED and the "
     "context works",
     reset_invalidates_old_handles},
    {"context.reset_keeps_host_arrays_apart",
     "after reset, host arrays over managed and write-combined memory keep their bytes, apart from memory "
     "allocated since",
     reset_keeps_host_arrays_apart},
    {"context.limits_round_trip",
     "the printf buffer's and stack's sizes read back at least as set (Capability::ContextLimits)", limits_round_trip},
};

}  // namespace conformance
}  // namespace gpuhal

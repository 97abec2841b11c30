// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream-ordered allocation (Context::allocate_async).
#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void require_stream_ordered(Env &env) {
  if (env.runtime.supports(Capability::StreamOrderedMemory)) return;
  expect_error([&] { env.ctx.allocate_async(64, env.ctx.create_stream()); }, Status::ERROR_NOT_SUPPORTED, "",
               "allocate_async without stream-ordered memory");
  throw Unsupported{"the plugin does not claim stream-ordered memory (allocate_async says ERROR_NOT_SUPPORTED)",
                    to_string(Capability::StreamOrderedMemory)};
}

void use_on_its_stream(Env &env) {
  require_stream_ordered(env);
  Stream s = env.ctx.create_stream();
  for (int round = 0; round < 4; ++round) {
    DeviceMemory m = env.ctx.allocate_async(uint64_t(1) << 20, s);
    DeviceArray a(m, Layout::make({1 << 18}, 4), dtypes::int32);
    std::vector<int32_t> v(size_t(1) << 18), out(v.size());
    for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(i * 3 + round);
    a.copy_from_host(HostView::of(v), s);
    a.copy_to_host(HostView::of(out), s);
    s.synchronize();
    expect(out == v, "round " + std::to_string(round) + ": stream-ordered memory lost data");
    expect(env.ctx.pending_deallocations() == 0, "stream-ordered memory went through the deferred queue");
  }  // each freed in the order of `s`
  s.synchronize();
  expect(env.ctx.pending_deallocations() == 0, "stream-ordered frees went through the deferred queue");
}

void keeps_its_stream(Env &env) {
  require_stream_ordered(env);
  DeviceMemory m = env.ctx.allocate_async(4096, env.ctx.create_stream());  // the stream's handle is gone at once
  DeviceArray a(m, Layout::make({4096}, 1), dtypes::uint8);
  a.memset(0x42);
  expect(bytes_of(a) == std::vector<uint8_t>(4096, 0x42), "stream-ordered memory without its stream handle lost data");
  m = DeviceMemory();
  a = DeviceArray();  // freed on the stream the memory kept alive
  env.ctx.synchronize();
}

void bad_requests(Env &env) {
  require_stream_ordered(env);
  Stream s = env.ctx.create_stream();
  expect_error([&] { env.ctx.allocate_async(0, s); }, Status::ERROR_INVALID_VALUE, "", "allocate_async(0)");
  expect_error([&] { env.ctx.allocate_async(16, Stream(nullptr)); }, Status::ERROR_INVALID_HANDLE, "",
               "allocate_async on an empty stream handle");
  bool refused = false;
  try {
    env.ctx.allocate_async(UINT64_MAX, s);
  } catch (const Error &e) {
    refused = e.status() == Status::ERROR_SIZE_OVERFLOW || e.status() == Status::ERROR_OUT_OF_MEMORY;
  }
  expect(refused, "allocate_async(UINT64_MAX) was not refused as too large");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"stream_ordered_memory.use_on_its_stream",
     "memory from allocate_async holds data on its stream and is freed in its order, not deferred", use_on_its_stream},
    {"stream_ordered_memory.keeps_its_stream", "stream-ordered memory keeps its stream alive until it is freed",
     keeps_its_stream},
    {"stream_ordered_memory.bad_requests_refused", "zero bytes, an empty stream and impossible sizes are refused",
     bad_requests},
};

}  // namespace conformance
}  // namespace gpuhal

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Graphs on the host backend (graph.hpp): what the core adds to the
// plugin's capture (lifetimes, refusals before anything is recorded, the
// deferred releases held back), and every public entry's bad input.
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "kernel_sources.hpp"
#include "test_support.hpp"

using namespace gpuhal;

namespace {

std::vector<float> floats(const DeviceArray &d) {
  return d.copy_to_host().to_vector<float>();
}

}  // namespace

TEST_CASE("graphs: empty handles and foreign streams are refused by name", "[graphs]") {
  REQUIRE_GPUHAL_ERROR(Graph().instantiate(), Status::ERROR_INVALID_HANDLE, "Graph::instantiate");
  REQUIRE_GPUHAL_ERROR(Graph().node_count(), Status::ERROR_INVALID_HANDLE, "Graph::node_count");
  REQUIRE_GPUHAL_ERROR(GraphExec().launch(Stream()), Status::ERROR_INVALID_HANDLE, "GraphExec::launch");
  REQUIRE_GPUHAL_ERROR(GraphExec().update_kernel_args(0, {}), Status::ERROR_INVALID_HANDLE,
                       "GraphExec::update_kernel_args");
  REQUIRE_GPUHAL_ERROR(Stream().begin_capture(), Status::ERROR_INVALID_HANDLE, "Stream::begin_capture");
  REQUIRE_GPUHAL_ERROR(Stream().end_capture(), Status::ERROR_INVALID_HANDLE, "Stream::end_capture");
  Runtime rt = test::host_runtime({{"GPUHAL_HOST_DEVICES", "2"}});
  Context a = rt.device(0).primary_context(), b = rt.device(1).primary_context();
  Stream s = a.create_stream();
  s.begin_capture();
  GraphExec exec = s.end_capture().instantiate();
  REQUIRE_GPUHAL_ERROR(exec.launch(Stream()), Status::ERROR_INVALID_HANDLE, "null stream");
  REQUIRE_GPUHAL_ERROR(exec.launch(b.create_stream()), Status::ERROR_INVALID_HANDLE, "another context");
  CHECK(exec.context() == a);
  CHECK(exec.kernel_node_count() == 0);
}

TEST_CASE("graphs: a backend without graphs refuses begin_capture with NOT_SUPPORTED", "[graphs]") {
  Config c;
  c.backend = test::fake("good");
  Context ctx = Runtime::load(c).device(0).primary_context();
  CHECK_FALSE(ctx.supports(Capability::Graphs));
  Stream s = ctx.create_stream();
  REQUIRE_GPUHAL_ERROR(s.begin_capture(), Status::ERROR_NOT_SUPPORTED, "Capability::Graphs");
  REQUIRE_GPUHAL_ERROR(s.end_capture(), Status::ERROR_NOT_SUPPORTED, "Capability::Graphs");
  CHECK_FALSE(s.is_capturing());
}

TEST_CASE("graphs: host and mirrored arrays are refused before anything is recorded and the capture goes on",
          "[graphs][kernel]") {
  Context ctx = test::kernel_context();
  Kernel k = Module::compile(ctx, kSaxpy).kernel("saxpy");
  DeviceArray x = device_array(ctx, {64}, dtypes::float32), y = device_array(ctx, {64}, dtypes::float32);
  x.fill(1.0f);
  y.fill(0.0f);
  std::vector<float> host(64, 0.0f);
  MirroredArray mirrored = MirroredArray::empty(ctx, {64}, dtypes::float32);
  Stream s = ctx.create_stream();
  s.begin_capture();
  REQUIRE_GPUHAL_ERROR(k({1}, {64}, s)(HostView::of(host), x, 2.0f, 64), Status::ERROR_CAPTURE_UNSUPPORTED,
                       "device arrays and scalars only");
  REQUIRE_GPUHAL_ERROR(k({1}, {64}, s)(mirrored, x, 2.0f, 64), Status::ERROR_CAPTURE_UNSUPPORTED,
                       "device arrays and scalars only");
  k({1}, {64}, s)(y, x, 2.0f, 64);
  GraphExec exec = s.end_capture().instantiate();
  REQUIRE(exec.kernel_node_count() == 1);
  exec.launch(s);
  exec.launch(s);
  s.synchronize();
  CHECK(floats(y) == std::vector<float>(64, 4.0f));
  REQUIRE_GPUHAL_ERROR(exec.update_kernel_args(0, {HostView::of(host), x, 2.0f, 64}),
                       Status::ERROR_CAPTURE_UNSUPPORTED, "device arrays and scalars only");
  REQUIRE_GPUHAL_ERROR(exec.update_kernel_args(0, {y, x, 2.0f}), Status::ERROR_INVALID_VALUE, "takes 4 argument(s)");
  REQUIRE_GPUHAL_ERROR(exec.update_kernel_args(0, {y, 1.0f, 2.0f, 64}), Status::ERROR_INVALID_VALUE,
                       "a scalar for the pointer parameter");
  // A refused update changed nothing.
  exec.launch(s);
  s.synchronize();
  CHECK(floats(y) == std::vector<float>(64, 6.0f));
}

TEST_CASE("graphs: launching a graph into a capture is refused without invalidating it", "[graphs]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream(), t = ctx.create_stream();
  DeviceArray d = device_array(ctx, {16}, dtypes::uint8);
  s.begin_capture();
  d.memset(uint8_t(3), s);
  GraphExec exec = s.end_capture().instantiate();
  t.begin_capture();
  REQUIRE_GPUHAL_ERROR(exec.launch(t), Status::ERROR_CAPTURE_UNSUPPORTED, "cannot be launched into a capture");
  d.memset(uint8_t(4), t);
  GraphExec second = t.end_capture().instantiate();
  second.launch(t);
  exec.launch(t);
  t.synchronize();
  CHECK(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(16, 3));
}

TEST_CASE("graphs: what synchronises the context or the legacy stream is refused while a blocking stream captures",
          "[graphs]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();  // blocking
  DeviceArray d = device_array(ctx, {16}, dtypes::uint8);
  std::vector<uint8_t> host(16, 7);
  s.begin_capture();
  REQUIRE_GPUHAL_ERROR(ctx.synchronize(), Status::ERROR_CAPTURE_UNSUPPORTED, "context_synchronize");
  REQUIRE_GPUHAL_ERROR(s.end_capture(), Status::ERROR_CAPTURE_INVALIDATED, "context_synchronize");
  s.begin_capture();
  REQUIRE_GPUHAL_ERROR(d.copy_from_host(HostView::of(host)), Status::ERROR_CAPTURE_UNSUPPORTED, "legacy default stream");
  REQUIRE_GPUHAL_ERROR(s.end_capture(), Status::ERROR_CAPTURE_INVALIDATED, "legacy default stream");
  // A non-blocking stream's capture leaves the legacy stream alone.
  Stream nb = ctx.create_stream(StreamKind::NonBlocking);
  nb.begin_capture();
  d.copy_from_host(HostView::of(host));
  GraphExec exec = nb.end_capture().instantiate();
  CHECK(d.copy_to_host().to_vector<uint8_t>() == host);
  ctx.synchronize();  // and after the captures, everything works
}

TEST_CASE("graphs: releases wait while a capture runs, and the origin stream dropped mid-capture ends it",
          "[graphs]") {
  Context ctx = test::host_context();
  const size_t before = ctx.pending_deallocations();
  {
    Stream s = ctx.create_stream();
    s.begin_capture();
    for (int i = 0; i < 4; ++i) (void)device_array(ctx, {1 << 20}, dtypes::uint8);  // dropped at once
    CHECK(s.is_capturing());
  }  // the capturing stream's last handle: its capture ends, the deferral with it
  DeviceArray after = device_array(ctx, {16}, dtypes::uint8);
  after.memset(uint8_t(1));
  ctx.synchronize();
  ctx.flush_deallocations();
  CHECK(ctx.pending_deallocations() <= before);
  Stream t = ctx.create_stream();
  t.begin_capture();  // a new capture on the context works
  (void)t.end_capture();
}

TEST_CASE("graphs: a copy to a fresh host array is replayed into the array the graph keeps", "[graphs]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  DeviceArray d = device_array(ctx, {32}, dtypes::uint8);
  s.begin_capture();
  d.memset(uint8_t(9), s);
  HostArray out = d.copy_to_host(s);
  GraphExec exec = s.end_capture().instantiate();
  exec.launch(s);
  s.synchronize();
  CHECK(out.to_vector<uint8_t>() == std::vector<uint8_t>(32, 9));
  out = HostArray();  // dropped: the graph still writes there, so it keeps the buffer
  exec.launch(s);
  s.synchronize();
}

TEST_CASE("graphs: a host source gathered on the host is refused in a capture, one in order is read at each launch",
          "[graphs]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  DeviceArray d = device_array(ctx, {4, 4}, dtypes::int32);  // C order
  std::vector<int32_t> host(16, 1);
  HostView in_order = HostView::of(host.data(), {4, 4});
  HostView transposed = in_order.transpose();
  s.begin_capture();
  REQUIRE_GPUHAL_ERROR(d.copy_from_host(transposed, s), Status::ERROR_CAPTURE_UNSUPPORTED, "gathered on the host");
  d.copy_from_host(in_order, s);
  GraphExec exec = s.end_capture().instantiate();
  host.assign(16, 7);
  exec.launch(s);
  s.synchronize();
  CHECK(d.copy_to_host().to_vector<int32_t>() == std::vector<int32_t>(16, 7));
}

TEST_CASE("graphs: a recorded callback runs at each launch and one that throws is contained", "[graphs]") {
  Context ctx = test::host_context();
  Stream s = ctx.create_stream();
  std::atomic<int> calls{0};
  s.begin_capture();
  s.add_callback([&calls] { ++calls; });
  s.add_callback([] { throw std::runtime_error("a recorded callback fails"); });
  s.add_callback([&calls] { calls += 10; });
  GraphExec exec = s.end_capture().instantiate();
  CHECK(calls == 0);
  for (int i = 0; i < 3; ++i) exec.launch(s);
  s.synchronize();
  CHECK(calls == 33);
}

TEST_CASE("graphs: launches of one exec from two streams run one after the other", "[graphs]") {
  Context ctx = test::host_context();
  Stream a = ctx.create_stream(StreamKind::NonBlocking), b = ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<int> running{0}, overlaps{0}, calls{0};
  a.begin_capture();
  a.add_callback([&] {
    if (running.fetch_add(1) != 0) ++overlaps;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    running.fetch_sub(1);
    ++calls;
  });
  GraphExec exec = a.end_capture().instantiate();
  for (int i = 0; i < 10; ++i) exec.launch(i % 2 ? a : b);
  a.synchronize();
  b.synchronize();
  CHECK(calls == 10);
  CHECK(overlaps == 0);
}

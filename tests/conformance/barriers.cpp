// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream barriers: later work waits for several events, or for all prior
// work of the context, in one operation.
#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void events_across_streams(Env &env) {
  // Works with or without Capability::StreamBarrier (the core falls back to
  // one wait per event).
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  Stream c = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<int> finished{0};
  int seen = -1;
  a.add_callback([&] {
    sleep_ms(10);
    ++finished;
  });
  b.add_callback([&] {
    sleep_ms(20);
    ++finished;
  });
  c.wait(std::vector<Event>{a.record(), b.record()});
  c.add_callback([&] { seen = finished.load(); });
  c.synchronize();
  expect(seen == 2, "work after a barrier on two events ran before both completed (" + std::to_string(seen) + " of 2)");
  // Data written on two streams, read on a third after the barrier.
  const auto va = pattern(1 << 20, 1), vb = pattern(1 << 20, 2);
  DeviceArray da = device_array(env.ctx, {1 << 20}, dtypes::uint8), db = device_array_like(da);
  da.copy_from_host(HostView::of(va), a);
  db.copy_from_host(HostView::of(vb), b);
  c.wait(std::vector<Event>{a.record(), b.record()});
  std::vector<uint8_t> oa(va.size()), ob(vb.size());
  da.copy_to_host(HostView::of(oa), c);
  db.copy_to_host(HostView::of(ob), c);
  c.synchronize();
  expect(oa == va && ob == vb, "a stream after a barrier read data the barrier's streams had not finished writing");
}

void all_prior_work(Env &env) {
  if (!env.runtime.supports(Capability::StreamBarrier)) {
    expect_error([&] { env.ctx.create_stream().wait_for_all_prior_work(); }, Status::ERROR_NOT_SUPPORTED, "",
                 "wait_for_all_prior_work without stream_barrier");
    throw Unsupported{"the plugin has no stream_barrier entry (wait_for_all_prior_work says ERROR_NOT_SUPPORTED)",
                      to_string(Capability::StreamBarrier)};
  }
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  Stream c = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<int> finished{0};
  int seen = -1;
  a.add_callback([&] {
    sleep_ms(10);
    ++finished;
  });
  b.add_callback([&] {
    sleep_ms(25);
    ++finished;
  });
  env.ctx.default_stream().add_callback([&] {
    sleep_ms(5);
    ++finished;
  });
  c.wait_for_all_prior_work();
  c.add_callback([&] { seen = finished.load(); });
  c.synchronize();
  env.ctx.synchronize();
  expect(seen == 3, "work after an all-prior-work barrier ran before the context's earlier work (" +
                        std::to_string(seen) + " of 3)");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"barriers.events_across_streams",
     "work after Stream::wait(events) runs after all of them, and reads what their streams wrote",
     events_across_streams},
    {"barriers.all_prior_work", "work after wait_for_all_prior_work runs after all earlier work of the context",
     all_prior_work},
};

}  // namespace conformance
}  // namespace gpuhal

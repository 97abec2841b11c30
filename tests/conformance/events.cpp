// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Events: ordering between streams, completion, timing.
#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void stream_wait_orders_work(Env &env) {
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<bool> done{false}, seen{false};
  a.add_callback([] { sleep_ms(20); });
  a.add_callback([&] { done = true; });
  Event e = a.record();
  b.wait(e);
  b.add_callback([&] { seen = done.load(); });
  b.synchronize();
  e.synchronize();
  expect(e.query(), "a synchronized event is not complete");
  expect(seen, "work after a stream wait ran before the event's work finished");
}

void data_through_event(Env &env) {
  // A copy on stream a, an event, and stream b reading the data after
  // waiting for it.
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  const auto v = pattern(size_t(8) << 20, 11);
  DeviceArray d = device_array(env.ctx, {int64_t(v.size())}, dtypes::uint8);
  d.memset(0);
  d.copy_from_host(HostView::of(v), a);
  Event e = env.ctx.create_event(false);
  e.record(a);
  b.wait(e);
  std::vector<uint8_t> out(v.size());
  d.copy_to_host(HostView::of(out), b);
  b.synchronize();
  expect(out == v, "a stream that waited for an event read data the event's work had not finished writing: " +
                       first_difference(out, v));
}

void query_and_synchronize(Env &env) {
  Event never = env.ctx.create_event();
  expect(never.query(), "a never-recorded event is not complete");
  never.synchronize();  // returns at once
  Stream s = env.ctx.create_stream();
  std::atomic<bool> ran{false};
  s.add_callback([&ran] {
    sleep_ms(40);
    ran = true;
  });
  Event e = s.record();
  const bool complete = e.query();
  expect(!complete || ran, "an event was complete before the work recorded before it");
  e.synchronize();
  expect(ran && e.query(), "Event::synchronize returned before the recorded work finished");
  s.synchronize();
}

void elapsed_time(Env &env) {
  Stream s = env.ctx.create_stream();
  Event start = s.record();
  s.add_callback([] { sleep_ms(10); });
  Event end = s.record();
  end.synchronize();
  const float ms = Event::elapsed_ms(start, end);
  expect(ms >= 5.0f && ms < 10000.0f, "elapsed time " + std::to_string(ms) + " ms around a 10 ms callback");
  const float back = Event::elapsed_ms(end, start);
  expect(back <= 0.0f, "elapsed time from the later to the earlier event is positive (" + std::to_string(back) + ")");
}

void elapsed_refused(Env &env) {
  Stream s = env.ctx.create_stream();
  Event untimed = env.ctx.create_event(false), timed = s.record(), never = env.ctx.create_event();
  untimed.record(s);
  s.synchronize();
  bool refused = false;
  try {
    Event::elapsed_ms(untimed, timed);
  } catch (const Error &) {
    refused = true;
  }
  expect(refused, "elapsed_ms of an event made without timing succeeded");
  refused = false;
  try {
    Event::elapsed_ms(timed, never);
  } catch (const Error &) {
    refused = true;
  }
  expect(refused, "elapsed_ms of a never-recorded event succeeded");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"events.stream_wait_orders_work", "work after Stream::wait(event) runs after the work recorded before the event",
     stream_wait_orders_work},
    {"events.data_through_event", "a stream that waits for an event reads the data written before it",
     data_through_event},
    {"events.query_and_synchronize", "an event completes after its recorded work; never recorded means complete",
     query_and_synchronize},
    {"events.elapsed_time", "elapsed_ms measures the time between two events", elapsed_time},
    {"events.elapsed_refused", "elapsed_ms of an untimed or never-recorded event is an error", elapsed_refused},
};

}  // namespace conformance
}  // namespace gpuhal

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams: asynchronous work in order, query, the default stream's legacy
// ordering, teardown with pending work.
#include <atomic>
#include <chrono>
#include <thread>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void async_copies(Env &env) {
  Stream s = env.ctx.create_stream();
  expect(s.query(), "a new stream is not idle");
  const auto v = pattern(1 << 16, 3);
  std::vector<uint8_t> out(v.size());
  DeviceArray d = to_device(env.ctx, HostView::of(v), s);
  d.copy_to_host(HostView::of(out), s);
  s.synchronize();
  expect(s.query(), "a synchronized stream is not idle");
  expect(out == v, "an async round trip on a stream differs: " + first_difference(out, v));
}

void work_in_order(Env &env) {
  // memset A, copy A->B, memset A again, copy A->C: B and C see their own
  // memset, never the other.
  Stream s = env.ctx.create_stream();
  const size_t n = size_t(1) << 20;
  DeviceArray a = device_array(env.ctx, {int64_t(n)}, dtypes::uint8), b = device_array_like(a),
              c = device_array_like(a);
  for (int round = 0; round < 8; ++round) {
    a.memset(uint8_t(2 * round + 1), s);
    b.copy_from_device(a, s);
    a.memset(uint8_t(2 * round + 2), s);
    c.copy_from_device(a, s);
    std::vector<uint8_t> hb(n), hc(n);
    b.copy_to_host(HostView::of(hb), s);
    c.copy_to_host(HostView::of(hc), s);
    s.synchronize();
    expect(hb == std::vector<uint8_t>(n, uint8_t(2 * round + 1)),
           "round " + std::to_string(round) + ": a copy saw a memset queued after it");
    expect(hc == std::vector<uint8_t>(n, uint8_t(2 * round + 2)),
           "round " + std::to_string(round) + ": a copy missed the memset queued before it");
  }
}

void query_pending_work(Env &env) {
  Stream s = env.ctx.create_stream();
  std::atomic<bool> ran{false};
  s.add_callback([&ran] {
    sleep_ms(50);
    ran = true;
  });
  // A synchronous plugin may have run it already; idle means it ran.
  const bool idle = s.query();
  expect(!idle || ran, "query() said idle while a callback had not run");
  s.synchronize();
  expect(ran && s.query(), "after synchronize the callback had not run or the stream was not idle");
}

void default_stream_orders_blocking_streams(Env &env) {
  // Legacy default stream: it waits for prior work of blocking streams, and
  // they wait for it.
  Stream blocking = env.ctx.create_stream(StreamKind::Blocking);
  Stream def = env.ctx.default_stream();
  expect(def.is_default() && !def.is_owned(), "default_stream() is not the default stream");
  std::atomic<int> step{0};
  int seen_by_default = -1, seen_by_blocking = -1;
  blocking.add_callback([&] {
    sleep_ms(30);
    step = 1;
  });
  def.add_callback([&] { seen_by_default = step.load(); });
  def.synchronize();
  expect(seen_by_default == 1, "work on the default stream ran before earlier work of a blocking stream");
  def.add_callback([&] {
    sleep_ms(30);
    step = 2;
  });
  blocking.add_callback([&] { seen_by_blocking = step.load(); });
  blocking.synchronize();
  expect(seen_by_blocking == 2, "work on a blocking stream ran before earlier work of the default stream");
}

void destroyed_stream_finishes_work(Env &env) {
  std::atomic<bool> ran{false};
  const auto v = pattern(1 << 20, 5);
  DeviceArray d = device_array(env.ctx, {int64_t(v.size())}, dtypes::uint8);
  {
    Stream s = env.ctx.create_stream();
    s.add_callback([&ran] {
      sleep_ms(20);
      ran = true;
    });
    d.copy_from_host(HostView::of(v), s);
  }  // the last handle goes with work pending
  env.ctx.synchronize();
  expect(ran, "a callback queued on a stream was lost when the stream's last handle went");
  expect(bytes_of(d) == v, "a copy queued on a stream was lost when the stream's last handle went");
}

void streams_from_threads(Env &env) {
  // Eight threads, each with its own stream, copying their own data.
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  std::vector<std::string> errors(8);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      try {
        Stream s = env.ctx.create_stream(StreamKind::NonBlocking);
        for (int round = 0; round < 10; ++round) {
          const auto v = pattern(size_t(4096 + 512 * t), uint8_t(t * 16 + round));
          std::vector<uint8_t> out(v.size());
          DeviceArray d = to_device(env.ctx, HostView::of(v), s);
          d.copy_to_host(HostView::of(out), s);
          s.synchronize();
          if (out != v) ++wrong;
        }
      } catch (const Error &e) {
        errors[size_t(t)] = e.what();
      }
    });
  for (auto &th : threads) th.join();
  for (const auto &e : errors) expect(e.empty(), "a thread failed: " + e);
  expect(wrong == 0, std::to_string(wrong.load()) + " round trips from concurrent threads differ");
}

void priorities_range_and_clamp(Env &env) {
  if (!env.runtime.supports(Capability::StreamPriorities)) {
    expect_error([&] { env.ctx.create_stream(StreamKind::NonBlocking, 0); }, Status::ERROR_NOT_SUPPORTED,
                 "Capability::StreamPriorities", "a stream with a priority without the capability");
    expect_error([&] { (void)env.ctx.stream_priority_range(); }, Status::ERROR_NOT_SUPPORTED,
                 "Capability::StreamPriorities", "the priority range without the capability");
    throw Unsupported{"the plugin does not claim stream priorities (refused as it must be)",
                      to_string(Capability::StreamPriorities)};
  }
  const StreamPriorityRange r = env.ctx.stream_priority_range();
  expect(r.greatest <= r.least, "the greatest priority " + std::to_string(r.greatest) +
                                    " is numerically above the least " + std::to_string(r.least));
  const struct {
    int asked, got;
  } cases[] = {{r.greatest, r.greatest}, {r.least, r.least}, {r.greatest - 100, r.greatest}, {r.least + 100, r.least}};
  for (const auto &c : cases) {
    Stream s = env.ctx.create_stream(StreamKind::NonBlocking, c.asked);
    expect(s.priority() == c.got, "a stream asked for priority " + std::to_string(c.asked) + " has " +
                                      std::to_string(s.priority()) + ", not " + std::to_string(c.got) +
                                      " (out of range is clamped)");
    DeviceArray d = device_array(env.ctx, {64}, dtypes::uint8);
    d.memset(uint8_t(c.got & 0x7f), s);
    s.synchronize();
    expect(bytes_of(d) == std::vector<uint8_t>(64, uint8_t(c.got & 0x7f)),
           "a stream of priority " + std::to_string(c.got) + " does not run its work");
  }
  (void)env.ctx.default_stream().priority();  // answered for the default stream too
}

void priority_not_behind_backlog(Env &env) {
  require(env, Capability::StreamPriorities, "stream priorities");
  const StreamPriorityRange r = env.ctx.stream_priority_range();
  Stream low = env.ctx.create_stream(StreamKind::NonBlocking, r.least);
  Stream high = env.ctx.create_stream(StreamKind::NonBlocking, r.greatest);
  // A backlog of 40 operations of 10 ms each on the low-priority stream.
  for (int i = 0; i < 40; ++i) low.add_callback([] { sleep_ms(10); });
  DeviceArray d = device_array(env.ctx, {4096}, dtypes::uint8);
  const auto start = std::chrono::steady_clock::now();
  d.memset(uint8_t(9), high);
  Event done = high.record();
  done.synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const bool backlog_left = !low.query();
  low.synchronize();
  expect(bytes_of(d) == std::vector<uint8_t>(4096, 9), "the high-priority stream's memset gave wrong data");
  // 200 ms of margin for a loaded machine: half the backlog.
  expect(backlog_left && ms < 200.0, "the high-priority stream's work took " + std::to_string(ms) +
                                         " ms behind a 400 ms low-priority backlog (it must not wait for it)");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"streams.async_copies", "copies on a stream complete by synchronize; query says idle after", async_copies},
    {"streams.work_in_order", "work on one stream runs in submission order", work_in_order},
    {"streams.query_pending_work", "query() is never idle while submitted work has not run", query_pending_work},
    {"streams.default_stream_orders_blocking_streams",
     "the default stream and blocking streams wait for each other's earlier work",
     default_stream_orders_blocking_streams},
    {"streams.destroyed_stream_finishes_work", "work pending on a stream whose last handle goes still runs",
     destroyed_stream_finishes_work},
    {"streams.from_threads", "streams used from eight threads at once each keep their data", streams_from_threads},
    {"streams.priorities_range_and_clamp",
     "with Capability::StreamPriorities the range is reported, priorities are clamped into it and "
     "read back; without it both are ERROR_NOT_SUPPORTED",
     priorities_range_and_clamp},
    {"streams.priority_not_behind_backlog",
     "a greatest-priority stream's work completes while a least-priority stream still has a 400 ms "
     "backlog (within 200 ms)",
     priority_not_behind_backlog},
};

}  // namespace conformance
}  // namespace gpuhal

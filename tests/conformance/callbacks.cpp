// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host callbacks: in order, after prior work, contained when they throw.
#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "conformance.hpp"
#include "gpuhal/log.hpp"

namespace gpuhal {
namespace conformance {
namespace {

void in_order(Env &env) {
  Stream s = env.ctx.create_stream();
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) s.add_callback([&order, i] { order.push_back(i); });
  s.synchronize();
  expect(order.size() == 100,
         "only " + std::to_string(order.size()) + " of 100 callbacks ran before synchronize returned");
  for (int i = 0; i < 100; ++i) expect(order[size_t(i)] == i, "callbacks ran out of order");
}

void after_prior_work(Env &env) {
  Stream s = env.ctx.create_stream();
  const auto v = pattern(size_t(4) << 20, 21);
  DeviceArray d = to_device(env.ctx, HostView::of(v));
  std::vector<uint8_t> out(v.size());
  std::string seen;
  d.copy_to_host(HostView::of(out), s);
  s.add_callback([&] { seen = first_difference(out, v); });
  s.synchronize();
  expect(seen.empty(), "a callback ran before the copy queued before it finished: " + seen);
}

void throwing_callback_contained(Env &env) {
  Stream s = env.ctx.create_stream();
  std::atomic<int> after{0};
  // The core reports the escaped exception at error level: caught here and
  // checked, so that a passing run prints no error line.
  std::mutex mu;
  std::vector<std::string> logged;
  set_log_handler([&](LogLevel level, const std::string &message) {
    std::lock_guard<std::mutex> lock(mu);
    if (level == LogLevel::Error) logged.push_back(message);
  });
  s.add_callback([] { throw std::runtime_error("a user's callback fails"); });
  s.add_callback([&after] { ++after; });
  try {
    s.synchronize();
  } catch (...) {
    set_log_handler(nullptr);
    throw;
  }
  set_log_handler(nullptr);
  expect(after == 1, "the callback after a throwing one did not run");
  bool reported = false;
  for (const auto &m : logged) reported |= m.find("a user's callback fails") != std::string::npos;
  expect(reported, "the exception that escaped the callback was not reported at error level");
  const auto v = pattern(1000, 2);
  DeviceArray d = to_device(env.ctx, HostView::of(v), s);
  std::vector<uint8_t> out(v.size());
  d.copy_to_host(HostView::of(out), s);
  s.synchronize();
  expect(out == v, "the stream does not work after a throwing callback");
}

void callbacks_from_threads(Env &env) {
  std::atomic<int> ran{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&] {
      Stream s = env.ctx.create_stream(StreamKind::NonBlocking);
      for (int i = 0; i < 50; ++i) s.add_callback([&ran] { ++ran; });
      s.synchronize();
    });
  for (auto &th : threads) th.join();
  expect(ran == 200, std::to_string(ran.load()) + " of 200 callbacks from four threads ran");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"callbacks.in_order", "callbacks on a stream run in order, all before synchronize returns", in_order},
    {"callbacks.after_prior_work", "a callback runs after the work queued before it has finished", after_prior_work},
    {"callbacks.throwing_callback_contained",
     "an exception from a callback is contained: later callbacks and work still run", throwing_callback_contained},
    {"callbacks.from_threads", "callbacks added from four threads at once all run", callbacks_from_threads},
};

}  // namespace conformance
}  // namespace gpuhal

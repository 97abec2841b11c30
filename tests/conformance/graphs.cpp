// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Stream capture and graphs (plugin.h ABI 1.8, graph.hpp): a replay does
// what the same work submitted directly does, sees new input, keeps fork
// and join order, refuses what cannot be recorded (leaving the stream
// usable), and many replays leave nothing behind.
#include <atomic>
#include <fstream>
#include <string>
#include <vector>

#include "conformance.hpp"

namespace gpuhal {
namespace conformance {
namespace {

const char *kAddValue = R"(
GPUHAL_KERNEL void add_value(GPUHAL_GLOBAL int *x, int v, int n) {
  unsigned i = gpuhal_global_id(0);
  if (i < n) x[i] += v;
})";

constexpr int kN = 1000;

void require_graphs(const Env &env) {
  require(env, Capability::Graphs, "stream capture and graphs");
}

// Every byte of an int32 set to `b` (memsets run on every backend, fakes
// included; fills of other values need a kernel).
int splat(int b) {
  return int(uint32_t(uint8_t(b)) * 0x01010101u);
}

std::vector<int> ints_of(const DeviceArray &d) {
  return d.copy_to_host().to_vector<int>();
}

DeviceArray iota(Env &env, int n, int start) {
  std::vector<int> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = start + i;
  return to_device(env.ctx, HostView::of(v));
}

// 100 launches and a copy: the work of the targets in performance.md.
void record_work(Kernel &add, DeviceArray &x, DeviceArray &y, const Stream &s) {
  for (int i = 0; i < 100; ++i) add({(kN + 255) / 256}, {256}, s)(x, i % 7, kN);
  y.copy_from_device(x, s);
}

void capability_consistent(Env &env) {
  Stream s = env.ctx.create_stream();
  if (!env.runtime.supports(Capability::Graphs)) {
    expect_error([&] { s.begin_capture(); }, Status::ERROR_NOT_SUPPORTED, "Capability::Graphs",
                 "begin_capture without the capability");
    expect(!s.is_capturing(), "a stream of a backend without graphs says it is capturing");
    throw Unsupported{"the plugin does not claim graphs (begin_capture refused as it must be)",
                      to_string(Capability::Graphs)};
  }
  expect(!s.is_capturing(), "a new stream says it is capturing");
  s.begin_capture();
  expect(s.is_capturing(), "a stream after begin_capture says it is not capturing");
  Graph g = s.end_capture();
  expect(!s.is_capturing(), "a stream after end_capture says it is capturing");
  expect(g.node_count() == 0 && g.kernel_node_count() == 0, "an empty capture made a graph with nodes");
  g.instantiate().launch(s);  // an empty graph launches and does nothing
  s.synchronize();
}

void same_results_as_direct(Env &env) {
  require_graphs(env);
  Module m = compile_kernels(env, kAddValue);
  Kernel add = m.kernel("add_value");
  Stream s = env.ctx.create_stream();
  DeviceArray x1 = iota(env, kN, 0), y1 = device_array(env.ctx, {kN}, dtypes::int32);
  DeviceArray x2 = iota(env, kN, 0), y2 = device_array(env.ctx, {kN}, dtypes::int32);
  record_work(add, x1, y1, s);  // directly
  s.synchronize();
  s.begin_capture();
  record_work(add, x2, y2, s);
  Graph g = s.end_capture();
  expect(g.kernel_node_count() == 100,
         "100 captured launches made " + std::to_string(g.kernel_node_count()) + " kernel nodes");
  expect(ints_of(x2) == std::vector<int>(ints_of(iota(env, kN, 0))), "captured work ran during the capture");
  GraphExec exec = g.instantiate();
  exec.launch(s);
  s.synchronize();
  expect(ints_of(y2) == ints_of(y1),
         "a launch of the captured graph gave other results than the same work submitted "
         "directly");
  exec.launch(s);
  record_work(add, x1, y1, s);
  s.synchronize();
  expect(ints_of(y2) == ints_of(y1), "a second launch did not repeat the work");
}

void replay_sees_new_input(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  DeviceArray src = device_array(env.ctx, {kN}, dtypes::int32), dst = device_array(env.ctx, {kN}, dtypes::int32);
  s.begin_capture();
  dst.copy_from_device(src, s);
  GraphExec exec = s.end_capture().instantiate();
  for (int round = 0; round < 3; ++round) {
    src.memset(uint8_t(round * 11 + 1));
    exec.launch(s);
    s.synchronize();
    expect(ints_of(dst) == std::vector<int>(kN, splat(round * 11 + 1)),
           "replay " + std::to_string(round) + " copied old data: a replay must read the input as it is at launch");
  }
}

void update_kernel_args(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  Kernel add = compile_kernels(env, kAddValue).kernel("add_value");
  DeviceArray x = iota(env, kN, 0), other = iota(env, kN, 100);
  s.begin_capture();
  add({(kN + 255) / 256}, {256}, s)(x, 1, kN);
  GraphExec exec = s.end_capture().instantiate();
  exec.launch(s);
  exec.update_kernel_args(0, {other, 5, kN});  // later launches use the new arguments
  exec.launch(s);
  s.synchronize();
  expect(ints_of(x) == ints_of(iota(env, kN, 1)),
         "the launch before update_kernel_args did not use the captured "
         "arguments");
  expect(ints_of(other) == ints_of(iota(env, kN, 105)),
         "the launch after update_kernel_args did not use the new "
         "arguments");
  expect_error(
      [&] {
        exec.update_kernel_args(1, {x, 1, kN});
      },
      Status::ERROR_INDEX_OUT_OF_RANGE, "kernel node 1", "update_kernel_args of a node the graph does not have");
  expect_error(
      [&] {
        exec.update_kernel_args(0, {x, 1});
      },
      Status::ERROR_INVALID_VALUE, "argument", "update_kernel_args with an argument missing");
}

void fork_and_join(Env &env) {
  require_graphs(env);
  Stream a = env.ctx.create_stream(), b = env.ctx.create_stream(StreamKind::NonBlocking);
  DeviceArray x = device_array(env.ctx, {kN}, dtypes::int32), y = device_array(env.ctx, {kN}, dtypes::int32),
              z = device_array(env.ctx, {kN}, dtypes::int32);
  std::vector<int> order;
  a.begin_capture();
  x.memset(uint8_t(7), a);
  Event forked = a.record();
  b.wait(forked);  // b joins the capture
  expect(b.is_capturing(), "a stream that waited for an event of the capture did not join it");
  y.copy_from_device(x, b);  // after the memset on a
  b.add_callback([&order] { order.push_back(1); });
  Event joined = b.record();
  a.wait(joined);
  z.copy_from_device(y, a);  // after b's copy
  a.add_callback([&order] { order.push_back(2); });
  GraphExec exec = a.end_capture().instantiate();
  expect(!b.is_capturing(), "a forked stream still captures after end_capture");
  for (int round = 0; round < 2; ++round) {
    exec.launch(a);
    a.synchronize();
  }
  expect(ints_of(z) == std::vector<int>(kN, splat(7)),
         "the join did not order the origin's copy after the forked branch");
  expect(order == std::vector<int>({1, 2, 1, 2}), "callbacks of the two branches ran out of the joined order");
  // A branch never joined back: the capture ends with UNJOINED and no graph.
  a.begin_capture();
  b.wait(a.record());
  y.memset(uint8_t(1), b);
  expect_error([&] { a.end_capture(); }, Status::ERROR_CAPTURE_UNJOINED, "", "end_capture with an unjoined fork");
  expect(!a.is_capturing() && !b.is_capturing(), "streams still capture after an unjoined end_capture");
  y.memset(uint8_t(3), b);
  b.synchronize();
  expect(ints_of(y) == std::vector<int>(kN, splat(3)), "a stream of an unjoined capture does not run work afterwards");
}

void forbidden_calls_refused(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  DeviceArray d = device_array(env.ctx, {kN}, dtypes::int32);
  expect_error([&] { env.ctx.default_stream().begin_capture(); }, Status::ERROR_CAPTURE_UNSUPPORTED, "default stream",
               "begin_capture on the default stream");
  expect_error([&] { s.end_capture(); }, Status::ERROR_CAPTURE_UNSUPPORTED, "not capturing",
               "end_capture on a stream that is not capturing");
  // Each refusal invalidates the capture; end_capture then says so, and the
  // stream runs its work again.
  const struct {
    const char *what;
    std::function<void(const Stream &)> misuse;
  } cases[] = {
      {"synchronize", [](const Stream &st) { st.synchronize(); }},
      {"query", [](const Stream &st) { (void)st.query(); }},
      {"event synchronize", [](const Stream &st) { st.record().synchronize(); }},
      {"a wait for work outside the capture",
       [&env](const Stream &st) {
         Stream outside = env.ctx.create_stream();
         st.wait(outside.record());
       }},
  };
  for (const auto &c : cases) {
    s.begin_capture();
    d.memset(uint8_t(1), s);
    expect_error([&] { c.misuse(s); }, Status::ERROR_CAPTURE_UNSUPPORTED, "", std::string(c.what) + " in a capture");
    expect_error([&] { d.memset(uint8_t(2), s); }, Status::ERROR_CAPTURE_INVALIDATED, "",
                 std::string("work after ") + c.what + " invalidated the capture");
    expect_error([&] { s.end_capture(); }, Status::ERROR_CAPTURE_INVALIDATED, "",
                 std::string("end_capture after ") + c.what);
    expect(!s.is_capturing(), std::string("the stream still captures after ") + c.what);
    d.memset(uint8_t(5), s);
    s.synchronize();
    expect(ints_of(d) == std::vector<int>(kN, splat(5)), std::string("the stream does not run work after ") + c.what);
  }
  s.begin_capture();
  expect_error([&] { s.begin_capture(); }, Status::ERROR_CAPTURE_UNSUPPORTED, "already capturing",
               "begin_capture twice");
  (void)s.end_capture();  // the second begin did not disturb the first capture
}

void many_replays_leave_nothing(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  DeviceArray x = device_array(env.ctx, {kN}, dtypes::int32), y = device_array(env.ctx, {kN}, dtypes::int32);
  std::atomic<int> calls{0};
  s.begin_capture();
  x.memset(uint8_t(4), s);
  y.copy_from_device(x, s);
  s.add_callback([&calls] { ++calls; });
  GraphExec exec = s.end_capture().instantiate();
  auto threads = [] {
    int n = 0;
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line))
      if (line.rfind("Threads:", 0) == 0) n = std::stoi(line.substr(8));
    return n;
  };
  exec.launch(s);
  s.synchronize();
  const MemoryInfo before = env.ctx.memory_info();
  const int threads_before = threads();
  for (int i = 0; i < 2000; ++i) exec.launch(s);
  s.synchronize();
  const MemoryInfo after = env.ctx.memory_info();
  expect(calls == 2001, "the recorded callback ran " + std::to_string(calls.load()) + " times in 2001 launches");
  // A margin of 1 MiB (512 bytes a launch): a backend whose free memory is
  // the machine's (host) sees other processes come and go.
  expect(
      after.free + (uint64_t(1) << 20) >= before.free,
      "2000 launches took " + std::to_string(int64_t(before.free) - int64_t(after.free)) + " bytes of device memory");
  expect(threads() <= threads_before, "2000 launches left threads behind");
  expect(ints_of(y) == std::vector<int>(kN, splat(4)), "the replayed copy gave wrong data");
}

void graph_outlives_its_arrays(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  DeviceArray out = device_array(env.ctx, {kN}, dtypes::int32);
  GraphExec exec;
  {
    DeviceArray tmp = device_array(env.ctx, {kN}, dtypes::int32);
    s.begin_capture();
    tmp.memset(uint8_t(9), s);
    out.copy_from_device(tmp, s);
    exec = s.end_capture().instantiate();
  }  // tmp's last handle is gone: the graph keeps its memory
  // Allocations made now must not take tmp's memory.
  std::vector<DeviceArray> churn;
  for (int i = 0; i < 8; ++i) churn.push_back(device_array(env.ctx, {kN}, dtypes::int32));
  for (auto &c : churn) c.memset(uint8_t(0xff));
  exec.launch(s);
  s.synchronize();
  expect(ints_of(out) == std::vector<int>(kN, splat(9)), "the graph's array was freed or reused while the graph lived");
  for (auto &c : churn)
    expect(ints_of(c) == std::vector<int>(kN, splat(-1)), "a replay wrote into memory handed out after the capture");
}

// cuda.h: synchronising a context while one of its streams captures is
// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture, so the
// old context's teardown reports a failure after releasing everything. The
// reset must still end with a new, usable context (it once stopped there,
// leaving the context without a handle until a second reset).
void reset_ends_a_capture(Env &env) {
  require_graphs(env);
  Stream s = env.ctx.create_stream();
  s.begin_capture();
  env.ctx.reset();
  expect_error([&] { (void)s.end_capture(); }, Status::ERROR_CONTEXT_DESTROYED, "was reset",
               "end_capture of a stream of the context before the reset");
  Stream t = env.ctx.create_stream();
  DeviceArray d = device_array(env.ctx, {kN}, dtypes::int32);
  d.memset(uint8_t(3), t);
  t.synchronize();
  expect(ints_of(d) == std::vector<int>(kN, splat(3)), "the context after the reset does not run work");
  t.begin_capture();
  d.memset(uint8_t(4), t);
  GraphExec exec = t.end_capture().instantiate();
  exec.launch(t);
  t.synchronize();
  expect(ints_of(d) == std::vector<int>(kN, splat(4)), "a capture after the reset does not replay");
}

}  // namespace

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"graphs.capability_consistent",
     "without Capability::Graphs begin_capture is ERROR_NOT_SUPPORTED; with it a stream captures "
     "between begin and end, and an empty graph launches",
     capability_consistent},
    {"graphs.same_results_as_direct",
     "100 captured launches and a copy run nothing while captured, and each replay gives what the "
     "same work submitted directly gives",
     same_results_as_direct},
    {"graphs.replay_sees_new_input", "a replay reads its inputs at launch", replay_sees_new_input},
    {"graphs.update_kernel_args",
     "update_kernel_args changes the launches made after it only, and bad node indices and argument "
     "counts are refused",
     update_kernel_args},
    {"graphs.fork_and_join",
     "a stream that waits for a captured event joins the capture; the join orders the branches at "
     "every replay; an unjoined branch ends the capture with ERROR_CAPTURE_UNJOINED",
     fork_and_join},
    {"graphs.forbidden_calls_refused",
     "synchronize, query, event synchronize and waits across the boundary are refused in a capture, "
     "invalidate it, and leave the stream usable once it ended",
     forbidden_calls_refused},
    {"graphs.many_replays_leave_nothing",
     "2000 launches of a graph take no device memory (1 MiB margin) and leave no threads behind, and run "
     "its callback each time",
     many_replays_leave_nothing},
    {"graphs.graph_outlives_its_arrays",
     "a graph keeps the memory it names: dropping the arrays frees nothing a replay writes", graph_outlives_its_arrays},
    {"graphs.reset_ends_a_capture",
     "a reset while a stream captures ends the capture (end_capture says the context was reset) and "
     "leaves a new context that runs and captures work, although CUDA refuses to synchronise the old one",
     reset_ends_a_capture},
};

}  // namespace conformance
}  // namespace gpuhal

// gpuhal-conform: runs the conformance checks against one plugin, for
// third-party plugin authors. Each check reports pass, fail (with what was
// wrong) or unsupported (an optional feature the plugin does not claim), or
// skipped when asked to (--skip CHECK: e.g. kernels.barrier_results over a
// fake driver that records launches without running them).
//
//   gpuhal-conform [--json] [--skip CHECK]... PLUGIN     PLUGIN: absolute path or backend name
//
// Exit status: 0 when nothing failed, 1 when a check failed or the plugin
// could not be loaded, 2 on bad usage.
#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace {

using namespace gpuhal;

enum class Outcome { Pass, Fail, Unsupported, Skipped };

struct Result {
  std::string name;
  Outcome outcome;
  std::string detail;
};

// Thrown by a check to fail with a message.
struct CheckFailed {
  std::string message;
};
struct NotSupported {
  std::string message;
};

#define EXPECT(cond, msg)                             \
  do {                                                \
    if (!(cond)) throw CheckFailed{std::string(msg)}; \
  } while (0)

struct Env {
  Runtime runtime;
  Context ctx;
  std::string path;
};

std::vector<uint8_t> pattern(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 131 + (i >> 8));
  return v;
}

// ---- ABI-level checks (through the raw table) ----------------------------------

const gpuhal_plugin_table_t *raw_table(const std::string &path, void **handle) {
  *handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  EXPECT(*handle, "dlopen of the plugin failed");
  void *sym = dlsym(*handle, GPUHAL_PLUGIN_ENTRY_NAME);
  EXPECT(sym, "no gpuhal_plugin_negotiate");
  gpuhal_plugin_negotiate_fn negotiate;
  std::memcpy(&negotiate, &sym, sizeof sym);
  const gpuhal_plugin_table_t *t = nullptr;
  EXPECT(negotiate(GPUHAL_ABI_VERSION, &t) == GPUHAL_SUCCESS && t, "negotiation failed the second time");
  return t;
}

void check_properties_struct_size(Env &env) {
  void *h = nullptr;
  const gpuhal_plugin_table_t *t = raw_table(env.path, &h);
  // An older core knows a shorter struct: the plugin must write no more than
  // struct_size bytes.
  struct {
    gpuhal_device_properties_t props;
    unsigned char canary[64];
  } buf;
  std::memset(&buf, 0xA5, sizeof buf);
  const uint32_t small = uint32_t(offsetof(gpuhal_device_properties_t, total_memory));
  buf.props.abi_version = GPUHAL_ABI_VERSION;
  buf.props.struct_size = small;
  const gpuhal_status_t st = t->device_properties(0, &buf.props);
  const unsigned char *bytes = reinterpret_cast<const unsigned char *>(&buf.props);
  bool intact = true;
  for (size_t i = small; i < sizeof buf.props; ++i) intact &= bytes[i] == 0xA5;
  dlclose(h);
  EXPECT(st == GPUHAL_SUCCESS, "device_properties failed with a shorter struct_size");
  EXPECT(intact, "device_properties wrote past the caller's struct_size (" + std::to_string(small) + " bytes)");
}

void check_error_message(Env &env) {
  void *h = nullptr;
  const gpuhal_plugin_table_t *t = raw_table(env.path, &h);
  gpuhal_device_properties_t p{};
  p.abi_version = GPUHAL_ABI_VERSION;
  p.struct_size = sizeof p;
  const gpuhal_status_t st = t->device_properties(env.runtime.device_count(), &p);
  const char *msg = t->last_error();
  const std::string text = msg ? msg : "";
  dlclose(h);
  EXPECT(st != GPUHAL_SUCCESS, "device_properties of an ordinal out of range succeeded");
  EXPECT(!text.empty(), "a failed call left no last_error() message");
}

// ---- behaviour through the C++ API -------------------------------------------------

void check_properties(Env &env) {
  for (int i = 0; i < env.runtime.device_count(); ++i) {
    const auto &p = env.runtime.device(i).properties();
    EXPECT(!p.name.empty(), "device " + std::to_string(i) + " has no name");
    EXPECT(p.total_memory > 0, "device " + std::to_string(i) + " reports no memory");
    EXPECT(p.max_threads_per_block > 0 && p.warp_size > 0, "thread limits are not positive");
  }
  const MemoryInfo info = env.ctx.memory_info();
  EXPECT(info.total > 0 && info.free <= info.total, "memory_info: free > total or total is 0");
}

void check_alloc(Env &env) {
  std::vector<DeviceMemory> held;
  for (uint64_t size : {uint64_t(1), uint64_t(4096), uint64_t(1) << 20}) {
    DeviceMemory m = env.ctx.allocate(size);
    EXPECT(m.device_pointer() != 0, "allocation returned a null pointer");
    for (const auto &o : held) {
      const bool disjoint =
          m.device_pointer() + size <= o.device_pointer() || o.device_pointer() + o.size() <= m.device_pointer();
      EXPECT(disjoint, "two live allocations overlap");
    }
    held.push_back(m);
  }
}

void check_round_trip(Env &env) {
  for (size_t n : {size_t(1), size_t(3), size_t(4097), size_t(1) << 20}) {
    auto v = pattern(n, uint8_t(n));
    DeviceArray d = to_device(env.ctx, HostView::of(v));
    EXPECT(d.copy_to_host().to_vector<uint8_t>() == v, "H2D/D2H round trip of " + std::to_string(n) + " bytes differs");
    // A round trip cannot see corruption that undoes itself; a device-side
    // memset read back checks D2H on its own.
    d.memset(0x3C);
    EXPECT(d.copy_to_host().to_vector<uint8_t>() == std::vector<uint8_t>(n, 0x3C),
           "D2H of " + std::to_string(n) + " memset bytes differs");
  }
}

void check_d2d_and_memset(Env &env) {
  auto v = pattern(10000, 7);
  DeviceArray a = to_device(env.ctx, HostView::of(v));
  DeviceArray b = device_array_like(a);
  b.copy_from_device(a);
  EXPECT(b.copy_to_host().to_vector<uint8_t>() == v, "D2D copy differs");
  b.view({Slice(100, 200)}).memset(0x5A);
  auto out = b.copy_to_host().to_vector<uint8_t>();
  for (size_t i = 0; i < v.size(); ++i) {
    const uint8_t expect = i >= 100 && i < 200 ? 0x5A : v[i];
    EXPECT(out[i] == expect, "memset of bytes [100, 200) wrong at byte " + std::to_string(i));
  }
}

void check_async(Env &env) {
  Stream s = env.ctx.create_stream();
  EXPECT(s.query(), "a new stream is not idle");
  auto v = pattern(1 << 16, 3);
  std::vector<uint8_t> out(v.size());
  DeviceArray d = to_device(env.ctx, HostView::of(v), s);
  d.copy_to_host(HostView::of(out), s);
  s.synchronize();
  EXPECT(s.query(), "a synchronized stream is not idle");
  EXPECT(out == v, "async round trip on a stream differs");
}

void check_callbacks(Env &env) {
  Stream s = env.ctx.create_stream();
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) s.add_callback([&order, i] { order.push_back(i); });
  s.synchronize();
  EXPECT(order.size() == 100, "not every callback ran before synchronize returned");
  for (int i = 0; i < 100; ++i) EXPECT(order[size_t(i)] == i, "callbacks ran out of order");
}

void check_event_order(Env &env) {
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<bool> done{false}, seen{false};
  a.add_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(20)); });
  a.add_callback([&] { done = true; });
  Event e = a.record();
  b.wait(e);
  b.add_callback([&] { seen = done.load(); });
  b.synchronize();
  e.synchronize();
  EXPECT(e.query(), "a synchronized event is not complete");
  EXPECT(seen, "work after stream_wait_event ran before the event's work finished");
}

void check_event_timing(Env &env) {
  Stream s = env.ctx.create_stream();
  Event start = s.record();
  s.add_callback([] { std::this_thread::sleep_for(std::chrono::milliseconds(10)); });
  Event end = s.record();
  end.synchronize();
  const float ms = Event::elapsed_ms(start, end);
  EXPECT(ms >= 5.0f && ms < 10000.0f, "elapsed time " + std::to_string(ms) + " ms around a 10 ms callback");
}

void check_barrier(Env &env) {
  if (!env.runtime.supports(Capability::StreamBarrier)) throw NotSupported{"no stream_barrier entry"};
  Stream a = env.ctx.create_stream(StreamKind::NonBlocking), b = env.ctx.create_stream(StreamKind::NonBlocking);
  Stream c = env.ctx.create_stream(StreamKind::NonBlocking);
  std::atomic<int> finished{0};
  int seen = -1;
  a.add_callback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ++finished;
  });
  b.add_callback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ++finished;
  });
  c.wait(std::vector<Event>{a.record(), b.record()});
  c.add_callback([&] { seen = finished.load(); });
  c.synchronize();
  EXPECT(seen == 2, "work after a stream barrier ran before all its events completed");
  a.add_callback([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ++finished;
  });
  c.wait_for_all_prior_work();
  c.add_callback([&] { seen = finished.load(); });
  c.synchronize();
  EXPECT(seen == 3, "work after an all-prior-work barrier ran too early");
}

void check_reset(Env &env) {
  DeviceArray old = device_array(env.ctx, {16}, dtypes::uint8);
  env.ctx.reset();
  bool refused = false;
  try {
    old.copy_to_host();
  } catch (const Error &e) {
    refused = e.status() == Status::ERROR_CONTEXT_DESTROYED;
  }
  EXPECT(refused, "an array from before a reset was still usable");
  auto v = pattern(100, 1);
  EXPECT(to_device(env.ctx, HostView::of(v)).copy_to_host().to_vector<uint8_t>() == v,
         "the context does not work after a reset");
}

// Device code: every builtin of the dialect has a definition, lookups of
// unknown kernels and launches the device cannot run are refused.
void check_kernel_lowering(Env &env) {
  if (!env.runtime.supports(Capability::Kernels)) throw NotSupported{"no device-code entries"};
  const auto lowering = env.runtime.kernel_lowering();
  EXPECT(lowering.size() == kernel_builtins().size() + 1, "lowering has the wrong number of entries");
  for (size_t i = 0; i < kernel_builtins().size(); ++i) {
    const auto &name = kernel_builtins()[i];
    EXPECT(lowering[i + 1].second.find(name) != std::string::npos,
           "the lowering of " + name + " does not define it: '" + lowering[i + 1].second + "'");
  }
}

// A kernel whose work-items read what their neighbours wrote to shared
// memory before a barrier: right only if the barrier is a barrier.
void check_kernel_barrier_results(Env &env) {
  if (!env.runtime.supports(Capability::Kernels)) throw NotSupported{"no device-code entries"};
  Module m;
  try {
    m = Module::compile(env.ctx, R"(
GPUHAL_KERNEL void neighbour(GPUHAL_GLOBAL int *out, unsigned n) {
  GPUHAL_SHARED_ARRAY(int, s, 64);
  unsigned lid = gpuhal_local_id(0);
  s[lid] = (int)(gpuhal_group_id(0) * 1000 + lid + 1);
  gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
  if (gpuhal_global_id(0) < n) out[gpuhal_global_id(0)] = s[(lid + 1) % gpuhal_local_size(0)];
})");
  } catch (const Error &e) {
    // A backend whose compiler is not installed here (NVRTC, amd_comgr).
    if (std::string(e.what()).find("could not be loaded") != std::string::npos ||
        std::string(e.what()).find("cannot load") != std::string::npos)
      throw NotSupported{std::string("no kernel compiler: ") + e.what()};
    throw;
  }
  const unsigned groups = 5, block = 64, n = groups * block - 7;
  DeviceArray out = device_array(env.ctx, {int64_t(groups * block)}, dtypes::int32);
  out.memset(0);
  m.kernel("neighbour")({groups}, {block})(out, n);
  const auto h = out.copy_to_host().to_vector<int32_t>();
  for (unsigned g = 0; g < groups; ++g)
    for (unsigned l = 0; l < block; ++l) {
      const unsigned i = g * block + l;
      const int32_t want = i < n ? int32_t(g * 1000 + (l + 1) % block + 1) : 0;
      EXPECT(h[i] == want, "work-item " + std::to_string(i) + " read " + std::to_string(h[i]) + ", expected " +
                               std::to_string(want));
    }
  bool refused = false;
  try {
    m.kernel("no_such_kernel");
  } catch (const Error &e) {
    refused = e.status() == Status::ERROR_NOT_FOUND;
  }
  EXPECT(refused, "an unknown kernel name was not refused with ERROR_NOT_FOUND");
}

struct Check {
  const char *name;
  void (*run)(Env &);
};

const Check kChecks[] = {
    {"abi.properties_respect_struct_size", check_properties_struct_size},
    {"abi.failed_call_leaves_message", check_error_message},
    {"device.properties", check_properties},
    {"memory.alloc_free", check_alloc},
    {"transfer.round_trip", check_round_trip},
    {"transfer.d2d_and_memset", check_d2d_and_memset},
    {"stream.async_copies", check_async},
    {"stream.callbacks_in_order", check_callbacks},
    {"event.stream_wait_orders_work", check_event_order},
    {"event.elapsed_time", check_event_timing},
    {"stream.barrier", check_barrier},
    {"context.reset", check_reset},
    {"kernels.lowering", check_kernel_lowering},
    {"kernels.barrier_results", check_kernel_barrier_results},
};

std::string json_string(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\')
      out += std::string("\\") + char(c);
    else if (c < 0x20)
      out += ' ';
    else
      out += char(c);
  }
  return out + "\"";
}

const char *outcome_name(Outcome o) {
  return o == Outcome::Pass ? "pass" : o == Outcome::Fail ? "fail" : o == Outcome::Skipped ? "skipped" : "unsupported";
}

}  // namespace

int main(int argc, char **argv) {
  bool json = false;
  std::string plugin;
  std::vector<std::string> skip;  // checks not run, by request (e.g. kernel results on a fake driver)
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--skip") && i + 1 < argc) {
      skip.push_back(argv[++i]);
    } else if (argv[i][0] == '-' || !plugin.empty()) {
      std::fprintf(stderr, "usage: gpuhal-conform [--json] [--skip CHECK]... PLUGIN (an absolute path or a backend name)\n");
      return 2;
    } else {
      plugin = argv[i];
    }
  }
  if (plugin.empty()) {
    std::fprintf(stderr, "usage: gpuhal-conform [--json] [--skip CHECK]... PLUGIN (an absolute path or a backend name)\n");
    return 2;
  }
  std::vector<Result> results;
  Config config = Config::from_environment();
  config.backend = plugin;
  try {
    Runtime rt = Runtime::load(config);
    Env env{rt, rt.device(0).primary_context(), rt.plugin_path()};
    results.push_back({"load", Outcome::Pass,
                       rt.backend_name() + ", ABI " + std::to_string(rt.plugin_abi_version() >> 16) + "." +
                           std::to_string(rt.plugin_abi_version() & 0xffff) + ", " + std::to_string(rt.device_count()) +
                           " device(s)"});
    for (const auto &c : kChecks) {
      if (std::find(skip.begin(), skip.end(), c.name) != skip.end()) {
        results.push_back({c.name, Outcome::Skipped, "skipped by --skip"});
        continue;
      }
      try {
        c.run(env);
        results.push_back({c.name, Outcome::Pass, ""});
      } catch (const CheckFailed &f) {
        results.push_back({c.name, Outcome::Fail, f.message});
      } catch (const NotSupported &n) {
        results.push_back({c.name, Outcome::Unsupported, n.message});
      } catch (const Error &e) {
        results.push_back({c.name, Outcome::Fail, to_string(e.status()) + ": " + e.what()});
      }
    }
  } catch (const Error &e) {
    results.push_back({"load", Outcome::Fail, to_string(e.status()) + ": " + e.what()});
  }

  int counts[4] = {0, 0, 0, 0};
  for (const auto &r : results) ++counts[int(r.outcome)];
  if (json) {
    std::string s = "{\"plugin\":" + json_string(plugin) + ",\"results\":[";
    for (size_t i = 0; i < results.size(); ++i)
      s += std::string(i ? "," : "") + "{\"check\":" + json_string(results[i].name) + ",\"outcome\":\"" +
           outcome_name(results[i].outcome) + "\",\"detail\":" + json_string(results[i].detail) + "}";
    std::printf("%s],\"passed\":%d,\"failed\":%d,\"unsupported\":%d,\"skipped\":%d}\n", s.c_str(), counts[0],
                counts[1], counts[2], counts[3]);
  } else {
    for (const auto &r : results)
      std::printf("%-12s %-38s %s\n",
                  r.outcome == Outcome::Pass   ? "PASS"
                  : r.outcome == Outcome::Fail    ? "FAIL"
                  : r.outcome == Outcome::Skipped ? "SKIPPED"
                                                  : "UNSUPPORTED",
                  r.name.c_str(), r.detail.c_str());
    std::printf("%d passed, %d failed, %d unsupported", counts[0], counts[1], counts[2]);
    if (counts[3]) std::printf(", %d skipped", counts[3]);
    std::printf("\n");
  }
  std::fflush(stdout);  // before any exit-time sanitizer report
  return counts[1] == 0 ? 0 : 1;
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// IPC: device memory shared with a real second process (this program,
// started again with --ipc-peer), views at offsets and with strides, writes
// seen both ways, stale and bad handles refused.
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "conformance.hpp"

extern char **environ;

namespace gpuhal {
namespace conformance {
namespace {

// Runs the peer; returns its exit status (128 + signal when killed). A peer
// that takes over 60 s is killed: a hang is a failed check, not a hung one.
int run_peer(const Env &env, const char *mode, const std::string &text) {
  std::string self = env.self_exe, flag = "--ipc-peer", backend = env.runtime.plugin_path(), m = mode;
  char *argv[] = {self.data(), flag.data(), backend.data(), m.data(), const_cast<char *>(text.c_str()), nullptr};
  pid_t pid;
  expect(!self.empty(), "no program to start as the second process");
  expect(posix_spawn(&pid, self.c_str(), nullptr, nullptr, argv, environ) == 0, "cannot start " + self);
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      throw Failure{"the second process did not finish within 60 s"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Element i (C index order) of a float32 array.
template <class F>
void for_each_index(const Shape &shape, F fn) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    fn(i, idx);
    for (int d = int(shape.size()) - 1; d >= 0 && ++idx[size_t(d)] == shape[size_t(d)]; --d) idx[size_t(d)] = 0;
  }
}

void fill_iota(const DeviceArray &a) {
  HostArray h = a.copy_to_host();
  for_each_index(a.shape(), [&](int64_t i, const std::vector<int64_t> &idx) { h.at<float>(idx) = float(i); });
  a.copy_from_host(h);
}

void require_ipc(Env &env) {
  if (env.runtime.supports(Capability::Ipc)) return;
  DeviceArray a = device_array(env.ctx, {4}, dtypes::float32);
  expect_error([&] { get_ipc_handle(a); }, Status::ERROR_NOT_SUPPORTED, "", "get_ipc_handle without IPC");
  throw Unsupported{"the plugin does not claim IPC (get_ipc_handle says ERROR_NOT_SUPPORTED)",
                    to_string(Capability::Ipc)};
}

void writes_seen_both_ways(Env &env) {
  require_ipc(env);
  DeviceArray base = device_array(env.ctx, {6, 8}, dtypes::float32);
  base.memset(0);
  struct Variant {
    const char *name;
    DeviceArray array;
  };
  const Variant variants[] = {
      {"a whole 2-D array", device_array(env.ctx, {6, 8}, dtypes::float32)},
      {"rows 2..4 of an array (at an offset)", base.view({Slice(2, 5)})},
      {"row 5 of an array (at an offset not page-aligned)", base[5]},
      {"an F-ordered array", device_array(env.ctx, {5, 7}, dtypes::float32, {}, 'F')},
  };
  for (const auto &v : variants) {
    fill_iota(v.array);
    const IpcArrayHandle h = get_ipc_handle(v.array);
    const int status = run_peer(env, "check-and-write", h.serialize());
    expect(status == 0, std::string(v.name) + ": the second process failed (status " + std::to_string(status) + ")");
    const HostArray seen = v.array.copy_to_host();
    for_each_index(v.array.shape(), [&](int64_t i, const std::vector<int64_t> &idx) {
      expect(seen.at<float>(idx) == 1000.0f + float(i),
             std::string(v.name) + ": element " + std::to_string(i) + " does not hold the second process's write");
    });
  }
  // The views' peers wrote only their elements: rows 0 and 1 hold zeros.
  const auto all = base.copy_to_host().to_vector<float>();
  for (size_t i = 0; i < 16; ++i)
    expect(all[i] == 0.0f, "the second process wrote outside its view, at element " + std::to_string(i));
  // A strided view (every other column): the second process reads it
  // element by element (writes into a non-contiguous view are refused by
  // copies, as in Numba).
  std::vector<float> grid(6 * 8, -1.0f);
  for (int r = 0; r < 6; ++r)
    for (int c = 0; c < 4; ++c) grid[size_t(r * 8 + 2 * c)] = float(r * 4 + c);
  DeviceArray whole = to_device(env.ctx, HostView::of(grid, {6, 8}));
  DeviceArray columns = whole.view({Slice(), Slice(0, 8, 2)});
  expect(!columns.is_c_contiguous(), "every other column is contiguous");
  const int status = run_peer(env, "check", get_ipc_handle(columns).serialize());
  expect(status == 0, "every other column (strided): the second process did not read element i as i (status " +
                          std::to_string(status) + ")");
}

// 256 bytes of `memory`, usable on `s`, seen by a second process and its
// writes come back; once the memory is freed (dropped, then `give_back`
// for memory a pool keeps), its handle is refused. Where the backend cannot
// export such memory, get_ipc_handle says ERROR_NOT_SUPPORTED (cuda: a
// device without mempool IPC) and the check is UNSUPPORTED, naming `what`.
template <class GiveBack>
void shared_with_second_process(Env &env, DeviceMemory memory, const Stream &s, const std::string &what,
                                GiveBack give_back) {
  DeviceArray a(std::move(memory), Layout::make({64}, 4), dtypes::float32);
  std::vector<float> iota(64);
  for (size_t i = 0; i < iota.size(); ++i) iota[i] = float(i);
  a.copy_from_host(HostView::of(iota), s);
  s.synchronize();  // the allocation and the fill are done before the second process looks
  IpcArrayHandle h;
  try {
    h = get_ipc_handle(a);
  } catch (const Error &e) {
    if (e.status() != Status::ERROR_NOT_SUPPORTED) throw;
    throw Unsupported{what + " is not exportable here: " + e.what(), to_string(Capability::Ipc)};
  }
  const int status = run_peer(env, "check-and-write", h.serialize());
  expect(status == 0, what + ": the second process failed (status " + std::to_string(status) + ")");
  const auto seen = a.copy_to_host().to_vector<float>();
  for (size_t i = 0; i < seen.size(); ++i)
    expect(seen[i] == 1000.0f + float(i),
           what + ": element " + std::to_string(i) + " does not hold the second process's write");
  // Freed, its handle is refused.
  const std::string text = h.serialize();
  a = DeviceArray();
  give_back();
  env.ctx.flush_deallocations();
  s.synchronize();
  expect(run_peer(env, "expect-refused", text) == 0, "the second process opened freed " + what);
}

void stream_ordered_memory_shared(Env &env) {
  require_ipc(env);
  if (!env.runtime.supports(Capability::StreamOrderedMemory))
    throw Unsupported{"the plugin does not claim stream-ordered memory", to_string(Capability::StreamOrderedMemory)};
  Stream s = env.ctx.create_stream();
  shared_with_second_process(env, env.ctx.allocate_async(64 * 4, s), s, "stream-ordered memory", [] {});
}

// A MemoryPool's memory, of the caching kind (a block the pool keeps is
// freed by trim) and, with Capability::DriverMemoryPools, of the driver kind.
void memory_pools_shared(Env &env) {
  require_ipc(env);
  Stream s = env.ctx.create_stream();
  {
    MemoryPool pool(env.ctx);
    shared_with_second_process(env, pool.allocate(64 * 4, s), s, "a caching MemoryPool's memory",
                               [&pool] { pool.trim(0); });
  }
  if (!env.ctx.supports(Capability::DriverMemoryPools)) return;
  MemoryPoolOptions options;
  options.kind = MemoryPoolKind::Driver;
  MemoryPool pool(env.ctx, options);
  shared_with_second_process(env, pool.allocate(64 * 4, s), s, "a driver MemoryPool's memory", [] {});
}

void freed_export_refused(Env &env) {
  require_ipc(env);
  std::string text;
  {
    DeviceArray a = device_array(env.ctx, {256}, dtypes::float32);
    fill_iota(a);
    text = get_ipc_handle(a).serialize();
  }
  env.ctx.flush_deallocations();  // the exported memory is really freed now
  const int status = run_peer(env, "expect-refused", text);
  expect(status == 0, "the second process opened the handle of freed memory (status " + std::to_string(status) + ")");
}

void bad_handles_refused(Env &env) {
  require_ipc(env);
  DeviceArray a = device_array(env.ctx, {4, 4}, dtypes::float32);
  const IpcArrayHandle h = get_ipc_handle(a);
  expect(h.memory.exported_here && h.memory.backend == env.runtime.backend_name(),
         "the handle does not name its maker");
  expect_error([&] { open_ipc_array(env.ctx, h); }, Status::ERROR_INVALID_VALUE, "",
               "opening in the exporting process");
  expect_error(
      [&] {
        get_ipc_handle(device_array(env.ctx, {0, 4}));
      },
      Status::ERROR_INVALID_VALUE, "", "exporting a zero-size array");
  expect_error([&] { get_ipc_handle(a.memory(), 60, 8); }, Status::ERROR_INDEX_OUT_OF_RANGE, "",
               "exporting a range outside the allocation");
  expect_error([&] { IpcArrayHandle::deserialize("gpuhal-ipc 1 nonsense"); }, Status::ERROR_INVALID_IPC_HANDLE, "",
               "deserialising garbage");
  NativeIpcHandle junk{};
  junk.bytes[0] = 'x';
  // One status on every backend, whatever the driver calls it (ipc.hpp).
  expect_error([&] { open_ipc_array(env.ctx, junk, {4}, dtypes::float32); }, Status::ERROR_INVALID_IPC_HANDLE, "",
               "opening garbage handle bytes");
}

}  // namespace

int ipc_peer_main(const std::string &backend, const std::string &mode, const std::string &handle_text) {
  try {
    Config config = Config::from_environment();
    config.backend = backend;
    Context ctx = Runtime::load(config).device(0).primary_context();
    const IpcArrayHandle handle = IpcArrayHandle::deserialize(handle_text);
    if (mode == "expect-refused") {
      try {
        IpcArray opened = open_ipc_array(ctx, handle);
      } catch (const Error &) {
        return 0;  // refused, as it must be
      }
      std::fprintf(stderr, "ipc peer: a handle of freed memory was opened\n");
      return 1;
    }
    IpcArray shared = open_ipc_array(ctx, handle);
    const DeviceArray &a = shared.array();
    HostArray seen = a.copy_to_host();
    bool right = true;
    for_each_index(a.shape(), [&](int64_t i, const std::vector<int64_t> &idx) {
      if (seen.at<float>(idx) != float(i)) right = false;
      seen.at<float>(idx) = 1000.0f + float(i);
    });
    if (!right) {
      std::fprintf(stderr, "ipc peer: the shared array does not hold what its exporter wrote\n");
      return 1;
    }
    if (mode == "check-and-write") a.copy_from_host(seen);
    shared.close();
    return 0;
  } catch (const std::exception &e) {
    std::fprintf(stderr, "ipc peer: %s\n", e.what());
    return 1;
  }
}

// This file's checks, registered with the suite (conformance.hpp).
const RegisterChecks registered{
    {"ipc.writes_seen_both_ways",
     "a second process sees an exported array (whole, at offsets, F-ordered, strided) and its writes come back",
     writes_seen_both_ways},
    {"ipc.freed_export_refused", "a second process cannot open the handle of freed memory", freed_export_refused},
    {"ipc.stream_ordered_memory_shared",
     "a second process sees memory from allocate_async and its writes come back; freed, it is refused",
     stream_ordered_memory_shared},
    {"ipc.memory_pools_shared",
     "a second process sees a MemoryPool's memory (caching kind; driver kind where the backend has it) and its "
     "writes come back; freed, it is refused",
     memory_pools_shared},
    {"ipc.bad_handles_refused",
     "opening in the exporting process, zero-size and out-of-range exports and garbage are refused",
     bad_handles_refused},
};

}  // namespace conformance
}  // namespace gpuhal

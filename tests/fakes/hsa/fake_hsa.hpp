// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake HSA runtime, cut by object: this header
// holds the runtime's state and the helpers every object uses; runtime.cpp
// (init, agents, pools), memory.cpp, signals.cpp, queues.cpp (and the packet
// processor), copy_engine.cpp, code_objects.cpp and test_hooks.cpp hold the
// entry points.
//
// A fake HSA runtime (libhsa-runtime64.so.1) for testing the hsa plugin on
// machines without an AMD GPU. A test double: never installed.
//
// It implements the subset the plugin uses on host memory: a CPU agent and
// FAKE_HSA_GPUS (default 1) GPU agents ("gfx90a"), or one per ISA named in
// FAKE_HSA_ISAS (code objects load only on their own ISA); pools (coarse-grained
// device memory, fine-grained system memory with KERNARG_INIT, the group
// segment); signals; user-mode AQL queues, each with a consumer thread that
// processes barrier-AND packets (waiting for their dependencies) and
// validates and records kernel dispatch packets (they are not executed: the
// fake has no GPU ISA interpreter); async copies on a copy thread after
// their dependency signals; code objects (kernel descriptors read from the
// ELF's *.kd symbols); profiling timestamps (dispatch packets and, when
// enabled, async copies only: what ROCr documents).
//
// What the fake checks that the real runtime would (or that would fault on
// a GPU): copies only between pool memory and locked/registered host
// memory (pageable memory must be staged), dispatches naming loaded kernel
// objects, kernargs in the kernarg pool, group and private segment sizes
// covering the kernel's, work-group sizes within limits.
//
// ROCr's unpleasant rules, kept as ROCr keeps them:
//  - hsa_amd_memory_async_copy (hsa_ext_amd.h): "The runtime indicates that
//    an error has occurred during the copy operation by setting the value of
//    the completion signal to a negative number."
//  - A queue that hits an error (a malformed packet, a barrier-AND whose
//    dependency went negative: "If any of the dependent signals have a
//    negative value, the barrier-AND packet ... an error") is reported
//    through the queue's error callback and suspended: neither the failing
//    packet's completion signal nor any later one is ever decremented (ROCr
//    before it learnt to set them negative; FAKE_HSA_NEGATIVE_ON_ERROR=1
//    gives the newer behaviour, the failing packet's signal set to -1).
//  - A GPU memory-access fault calls the handler registered with
//    hsa_amd_register_system_event_handler (HSA_AMD_GPU_MEMORY_FAULT_EVENT,
//    one handler per process: a second registration is HSA_STATUS_ERROR);
//    without one ROCr prints "Memory access fault by GPU" and abort()s the
//    process. The faulting queue is suspended.
//  - The runtime's own threads live until hsa_shut_down; the fake's state
//    is never destroyed at exit, so a program that shuts down late (from
//    static destructors) still finds it.
//
// Environment: FAKE_HSA_INIT_FAIL=<status> makes hsa_init fail;
// FAKE_HSA_GPUS=<n>; FAKE_HSA_ISAS=<isa>[,...]; FAKE_HSA_MEMORY=<bytes per GPU>;
// FAKE_HSA_SYSTEM_MEMORY=<pinned system memory limit>;
// FAKE_HSA_FAIL=sym:k[:status][,...] makes the k-th call of sym fail (default
// HSA_STATUS_ERROR; syntax of fault_spec.hpp);
// FAKE_HSA_FAULTING_KERNELS=<name>[,...]: dispatches of these kernels fault
// as a memory access to an unmapped page would (the fake runs no code).
// Test hooks: fake_hsa_last_dispatch, fake_hsa_dispatch_count,
// fake_hsa_live_objects, fake_hsa_fail_next_copy (its signal goes negative),
// fake_hsa_fail_next_packet (the next packet errs when it runs, after its
// dependencies),
// fake_hsa_memory_fault_next_packet (a memory fault at an address).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_spec.hpp"

#include "hsa_api.hpp"
#include "hsa_code_object.hpp"

#define EXPORT extern "C" __attribute__((visibility("default")))

namespace fake_hsa {

using namespace gpuhal::hsa::api;


// ---- fault injection (FAKE_HSA_FAIL, syntax of fault_spec.hpp) -------------------------
inline gpuhal::support::FaultRules &g_faults = gpuhal::support::fault_rules_from_environment("FAKE_HSA_FAIL", "fake HSA runtime");

inline hsa_status_t injected(const char *symbol) {
  long code = 0;
  return g_faults.fires(symbol, HSA_STATUS_ERROR, &code) ? hsa_status_t(code) : HSA_STATUS_SUCCESS;
}

inline uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

inline uint64_t now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// ---- agents and pools -----------------------------------------------------------------
constexpr uint64_t kCpuAgent = 1;
constexpr uint64_t kGpuAgentBase = 2;
constexpr uint64_t kSystemPool = 0x100, kDevicePoolBase = 0x200, kGroupPoolBase = 0x300;
constexpr uint32_t kLdsBytes = 64 * 1024;

inline std::mutex &g_mu = *new std::mutex;  // guards the state below (not the signals)
inline int g_init = 0;
// FAKE_HSA_ISAS=gfx90a,gfx942,... names each GPU agent's ISA (one agent
// each); else FAKE_HSA_GPUS agents of gfx90a.
inline const std::vector<std::string> &g_isas = *new std::vector<std::string>([] {
  std::vector<std::string> out;
  if (const char *v = std::getenv("FAKE_HSA_ISAS"); v && *v) {
    std::string list = v;
    for (size_t start = 0; start <= list.size();) {
      size_t end = list.find(',', start);
      if (end == std::string::npos) end = list.size();
      if (end > start) out.push_back(list.substr(start, end - start));
      start = end + 1;
    }
  }
  if (out.empty()) out.assign(size_t(env_u64("FAKE_HSA_GPUS", 1)), "gfx90a");
  return out;
}());
inline const uint64_t g_gpus = g_isas.size();
inline const uint64_t g_device_memory = env_u64("FAKE_HSA_MEMORY", uint64_t(16) << 30);
// FAKE_HSA_SYSTEM_MEMORY: how much fine-grained (pinned) system memory can be
// allocated at once (default: no limit).
inline const uint64_t g_system_memory = env_u64("FAKE_HSA_SYSTEM_MEMORY", UINT64_MAX);
inline std::atomic<uint64_t> g_system_allocations{0};  // hsa_amd_memory_pool_allocate calls on it (each a kernel call on ROCr)

inline bool is_gpu(hsa_agent_t a) {
  return a.handle >= kGpuAgentBase && a.handle < kGpuAgentBase + g_gpus;
}
inline bool is_agent(hsa_agent_t a) {
  return a.handle == kCpuAgent || is_gpu(a);
}

struct Allocation {
  uint64_t size;
  uint64_t pool;
};
inline std::map<uintptr_t, Allocation> &g_allocations = *new std::map<uintptr_t, Allocation>;
inline std::map<uint64_t, uint64_t> &g_pool_used = *new std::map<uint64_t, uint64_t>;
inline std::map<uintptr_t, uint64_t> &g_locked = *new std::map<uintptr_t, uint64_t>;      // hsa_amd_memory_lock
inline std::map<uintptr_t, uint64_t> &g_registered = *new std::map<uintptr_t, uint64_t>;  // hsa_memory_register

// The range [p, p + n) lies in one entry of m.
template <class M, class F>
inline bool in_map(const M &m, uintptr_t p, uint64_t n, F size_of) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return false;
  --it;
  return p >= it->first && p - it->first + n <= size_of(it->second);
}
inline bool in_allocation(uintptr_t p, uint64_t n, uint64_t *pool = nullptr) {
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin()) return false;
  --it;
  if (p < it->first || p - it->first + n > it->second.size) return false;
  if (pool) *pool = it->second.pool;
  return true;
}
inline bool in_host_accessible(uintptr_t p, uint64_t n) {
  auto self = [](uint64_t s) { return s; };
  return in_map(g_locked, p, n, self) || in_map(g_registered, p, n, self);
}

// ---- signals ----------------------------------------------------------------------------
struct FSignal {
  std::atomic<int64_t> value{0};
  uint64_t start_ts = 0, end_ts = 0;
};
inline std::mutex &g_sig_mu = *new std::mutex;  // with g_sig_cv: every signal's waiters
inline std::condition_variable &g_sig_cv = *new std::condition_variable;
inline std::set<FSignal *> &g_signals = *new std::set<FSignal *>;

inline FSignal *sig(hsa_signal_t s) {
  auto *p = reinterpret_cast<FSignal *>(s.handle);
  std::lock_guard<std::mutex> lock(g_sig_mu);
  return g_signals.count(p) ? p : nullptr;
}
inline void signal_set(FSignal *s, int64_t v) {
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    s->value.store(v);
  }
  g_sig_cv.notify_all();
}
inline void signal_add(FSignal *s, int64_t d) {
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    s->value.fetch_add(d);
  }
  g_sig_cv.notify_all();
}
inline bool satisfied(int64_t v, hsa_signal_condition_t c, int64_t x) {
  switch (c) {
    case HSA_SIGNAL_CONDITION_EQ:
      return v == x;
    case HSA_SIGNAL_CONDITION_NE:
      return v != x;
    case HSA_SIGNAL_CONDITION_LT:
      return v < x;
    default:
      return v >= x;
  }
}
// Waits (or until `stop`) for the condition.
inline int64_t signal_wait(FSignal *s, hsa_signal_condition_t c, int64_t x, const std::atomic<bool> *stop = nullptr) {
  std::unique_lock<std::mutex> lock(g_sig_mu);
  g_sig_cv.wait(lock, [&] { return satisfied(s->value.load(), c, x) || (stop && stop->load()); });
  return s->value.load();
}
// The same with a timeout (the runtime's hint, honoured: a waiter that gave
// up gets the current value).
inline int64_t signal_wait_for(FSignal *s, hsa_signal_condition_t c, int64_t x, std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(g_sig_mu);
  g_sig_cv.wait_for(lock, timeout, [&] { return satisfied(s->value.load(), c, x); });
  return s->value.load();
}

// Failure injection for the tests (see the header).
inline std::atomic<bool> g_fail_next_copy{false}, g_fail_next_packet{false};
inline std::atomic<uint64_t> g_fault_address{0};
inline hsa_amd_system_event_callback_t g_event_handler = nullptr;
inline void *g_event_data = nullptr;
inline const bool g_negative_on_error = std::getenv("FAKE_HSA_NEGATIVE_ON_ERROR") != nullptr;

// ---- code objects -------------------------------------------------------------------------
struct KernelObject {
  std::string name;
  uint32_t group = 0, priv = 0, kernarg = 0;
  // The hidden arguments the code object's metadata lists (code object v5:
  // block counts, group sizes, remainders, grid dimensions, dynamic LDS
  // size...), which the launcher must fill; checked at dispatch.
  std::vector<gpuhal::hsa::KernelArg> hidden;
};
struct Reader {
  std::vector<uint8_t> bytes;
};
struct Executable {
  bool frozen = false;
  std::vector<std::unique_ptr<KernelObject>> kernels;
};
inline std::set<Reader *> &g_readers = *new std::set<Reader *>;
inline std::set<Executable *> &g_executables = *new std::set<Executable *>;
inline std::set<const KernelObject *> &g_kernel_objects = *new std::set<const KernelObject *>;

// ---- dispatch records ---------------------------------------------------------------------
inline std::mutex &g_dispatch_mu = *new std::mutex;
inline hsa_kernel_dispatch_packet_t g_last_dispatch{};
inline std::vector<uint8_t> &g_last_kernarg = *new std::vector<uint8_t>;
inline uint64_t g_dispatch_count = 0;
// Packets processed, by type (0: kernel dispatch, 1: barrier-AND), acquire
// fence scope and release fence scope (hsa.h: HSA_FENCE_SCOPE_NONE 0, AGENT
// 1, SYSTEM 2), guarded by g_dispatch_mu. "HSA_FENCE_SCOPE_AGENT: The fence
// is applied with agent scope for the global segment"; only a system-scope
// release makes a packet's writes visible to the host and other agents (and
// to the copy engines, which ROCr counts as agents of their own).
inline uint64_t g_fence_counts[2][3][3] = {};

// ---- queues -------------------------------------------------------------------------------
struct FQueue {
  hsa_queue_t q{};  // first: the handle the plugin sees
  std::atomic<uint64_t> write_index{0};
  std::atomic<uint64_t> read_index{0};
  std::atomic<bool> stop{false};
  bool profiling = false;
  int priority = 1;  // hsa_amd_queue_priority_t: "The default is HSA_AMD_QUEUE_PRIORITY_NORMAL"
  hsa_queue_callback callback = nullptr;
  void *data = nullptr;
  hsa_agent_t agent{};
  uint8_t *ring = nullptr;
  std::thread consumer;
  bool suspended = false;  // after an error: nothing more is processed (consumer thread only)
};
inline std::set<FQueue *> &g_queues = *new std::set<FQueue *>;

// ---- the copy engine --------------------------------------------------------------------
// A copy: `size` bytes, or (hsa_amd_memory_async_copy_rect) `depth`
// slices of `height` rows of `size` bytes at the given pitches.
struct CopyJob {
  void *dst;
  const void *src;
  size_t size;
  std::vector<FSignal *> deps;
  FSignal *done;
  bool profiled = false;
  size_t height = 1, depth = 1;
  size_t dst_pitch = 0, dst_slice = 0, src_pitch = 0, src_slice = 0;
};
inline std::atomic<uint64_t> g_copy_rect_calls{0};  // accepted hsa_amd_memory_async_copy_rect calls
inline std::atomic<bool> g_copy_profiling{false};  // hsa_amd_profiling_async_copy_enable
inline std::mutex &g_copy_mu = *new std::mutex;
inline std::condition_variable &g_copy_cv = *new std::condition_variable;
inline std::deque<CopyJob> &g_copies = *new std::deque<CopyJob>;
inline std::thread *g_copy_thread = nullptr;  // the runtime's thread: joined by the last hsa_shut_down, never destroyed at exit
inline bool g_copy_stop = false;

inline const char *status_text(hsa_status_t s) {
  switch (s) {
    case HSA_STATUS_SUCCESS:
      return "HSA_STATUS_SUCCESS: The function has been executed successfully.";
    case HSA_STATUS_ERROR_INVALID_ARGUMENT:
      return "HSA_STATUS_ERROR_INVALID_ARGUMENT: One of the actual arguments does not meet a precondition stated "
             "in the documentation of the corresponding formal argument.";
    case HSA_STATUS_ERROR_OUT_OF_RESOURCES:
      return "HSA_STATUS_ERROR_OUT_OF_RESOURCES: The runtime failed to allocate the necessary resources.";
    case HSA_STATUS_ERROR_NOT_INITIALIZED:
      return "HSA_STATUS_ERROR_NOT_INITIALIZED: An API other than hsa_init has been invoked while the reference "
             "count of the HSA runtime is zero.";
    case HSA_STATUS_ERROR_INVALID_CODE_OBJECT:
      return "HSA_STATUS_ERROR_INVALID_CODE_OBJECT: The code object is invalid.";
    case HSA_STATUS_ERROR_INVALID_PACKET_FORMAT:
      return "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT: The AQL packet is malformed.";
    default:
      return nullptr;
  }
}


// Defined with their objects.
// code_objects.cpp: the kernel descriptors (*.kd symbols of 64 bytes) of an
// ELF code object.
bool read_kernels(const std::vector<uint8_t> &b, std::vector<std::unique_ptr<KernelObject>> *out);
// queues.cpp: the packet processor of one queue (its consumer thread).
void consume(FQueue *q);
// copy_engine.cpp: the copy engine's thread.
void copy_main();

}  // namespace fake_hsa

// signals.cpp: entry points the queues use for their doorbells.
EXPORT gpuhal::hsa::api::hsa_status_t hsa_signal_create(gpuhal::hsa::api::hsa_signal_value_t initial, uint32_t,
                                                        const gpuhal::hsa::api::hsa_agent_t *,
                                                        gpuhal::hsa::api::hsa_signal_t *out);
EXPORT gpuhal::hsa::api::hsa_status_t hsa_signal_destroy(gpuhal::hsa::api::hsa_signal_t s);

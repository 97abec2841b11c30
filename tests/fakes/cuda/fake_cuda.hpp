// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake CUDA driver (libcuda.so.1), cut by object: this header holds
// the driver's state and the helpers every object uses; device.cpp,
// context.cpp, memory.cpp, streams.cpp, events.cpp, host_memory.cpp, ipc.cpp,
// pool_and_peer.cpp, modules.cpp and test_hooks.cpp hold the entry points.
//
// A fake CUDA driver (libcuda.so.1) for testing the cuda plugin on machines
// without an NVIDIA GPU. It implements the driver-API subset the plugin uses
// on host memory: one device; streams are worker threads running their
// operations in order; the legacy default stream waits for the blocking
// streams and they for it; events, stream waits, host functions; pinned and
// registered host memory; IPC within the process; stream-ordered
// allocation; peer access between its devices; modules from PTX text (the
// .entry names, parameter sizes and static shared memory are read from it)
// and kernel launches, which are validated and recorded, not executed
// (fake_cuda_last_launch describes the latest). A test double: never
// installed.
//
// Environment (read by the fake, as a real driver reads its own):
//   FAKE_CUDA_STUB=1                   cuInit returns CUDA_ERROR_STUB_LIBRARY
//   FAKE_CUDA_NO_DEVICE=1              cuInit returns CUDA_ERROR_NO_DEVICE
//   FAKE_CUDA_MEMORY=<bytes>           device capacity (default 256 MiB, shared)
//   FAKE_CUDA_DEVICES=<n>              number of devices, 1 to 4 (default 1)
//   FAKE_CUDA_NO_PROC_ADDRESS=1        cuGetProcAddress_v2 finds nothing
//   FAKE_CUDA_FAIL=<symbol>:<k>[:<code>][,...]
//                                      the k-th call (from 1) of <symbol>
//                                      returns CUresult <code> (default
//                                      CUDA_ERROR_UNKNOWN; fault_spec.hpp)
//   FAKE_CUDA_DRIVER_VERSION=<v>       what cuDriverGetVersion says (default
//                                      13000); PTX newer than it is refused
//   FAKE_CUDA_CC=<major><minor>        the devices' compute capability
//                                      (default 90)
//   FAKE_CUDA_FAULTING_KERNELS=<name>[,...]
//                                      launches of these kernels fault when
//                                      they run, as an illegal address would
//                                      (the fake runs no device code)
//
// The driver's documented rules this fake holds the plugin to (cuda.h of
// CUDA 13.0 quoted where it says so):
//  - One context stack per thread, shared by every library in the process:
//    "If there exists a CUDA context stack on the calling CPU thread, this
//    will replace the top of that stack with ctx" (cuCtxSetCurrent);
//    cuCtxPushCurrent / cuCtxPopCurrent / cuCtxGetCurrent. Calls that work in
//    a context fail with CUDA_ERROR_INVALID_CONTEXT when none is current.
//  - Sticky errors: "This leaves the process in an inconsistent state and any
//    further CUDA work will return the same error" (700, 702, 710, 714-719).
//    Queued work of the context never runs; only a primary-context reset
//    (cuDevicePrimaryCtxReset, or releasing its last reference) clears it.
//  - Host functions: "The host function must not make any CUDA API calls.
//    Attempting to use a CUDA API may result in CUDA_ERROR_NOT_PERMITTED",
//    and "the function will not be called in the event of an error in the
//    CUDA context" (cuLaunchHostFunc).
//  - IPC: "If the memory handle has already been opened by the current
//    context, the reference count on the handle is incremented by 1 and the
//    existing device pointer is returned"; each cuIpcCloseMemHandle drops
//    one. Pool memory cannot be exported with cuIpcGetMemHandle; a pool made
//    with an IPC handle type shares its memory through its OS handle and
//    per-allocation export data instead (ipc.cpp: a memfd recognised by
//    inode; imported pools make no allocations; a freed allocation, or a
//    new one at its address, is not imported).
//  - The stream-ordered pool keeps freed memory up to its release threshold
//    (CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: "Amount of reserved memory in bytes
//    to hold onto before trying to release memory back to the OS", released
//    at synchronisation); cuMemAlloc cannot use what the pool holds, and
//    cuMemGetInfo does not count it as free. cuMemPoolTrimTo releases it.
//  - PTX whose .version is newer than the driver supports is refused with
//    CUDA_ERROR_UNSUPPORTED_PTX_VERSION (222); a .target above the device's
//    compute capability with CUDA_ERROR_INVALID_PTX (218).
//  - CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES is one value per
//    function: the last cuFuncSetAttribute wins.
//  - cuOccupancyMaxActiveBlocksPerMultiprocessor counts blocks by the rules
//    of the toolkit's cuda_occupancy.h with the limits of compute capability
//    9.0 ("Technical Specifications per Compute Capability"): 2048 resident
//    threads, 32 resident blocks, 65536 32-bit registers allocated per warp
//    in units of 256, 228 KiB of shared memory per multiprocessor, each
//    block's being its static, reserved (1 KiB) and dynamic parts rounded up
//    to 128 bytes. A block over 1024 threads, or over the per-block shared
//    limit (48 KiB + the reserved part, the 227 KiB opt-in once
//    MAX_DYNAMIC_SHARED_SIZE_BYTES was set, and then dynamic over that
//    attribute), gives 0 blocks.
//  - Destroying a primary context (reset, or the last release) destroys
//    everything made in it: streams, events, memory, modules.
//  - Stream capture (graphs.cpp, which quotes cuda.h): work on a capturing
//    stream is recorded into a graph, not run; the legacy stream cannot
//    capture and, "when a blocking stream is capturing, the legacy stream is
//    in an unusable state until the blocking stream capture is terminated"
//    (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT); synchronising or querying a
//    capturing stream, or synchronising the context, is
//    CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED; an event last recorded in a
//    capture refuses queries and waits (CUDA_ERROR_CAPTURED_EVENT); a wait
//    across the capture's boundary is CUDA_ERROR_STREAM_CAPTURE_ISOLATION,
//    one that would merge two captures CUDA_ERROR_STREAM_CAPTURE_MERGE. Each
//    of these invalidates the capture: later work on its streams and its
//    cuStreamEndCapture answer CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (and no
//    graph). A fork not joined back is CUDA_ERROR_STREAM_CAPTURE_UNJOINED,
//    ending the capture elsewhere than its origin
//    CUDA_ERROR_STREAM_CAPTURE_UNMATCHED. The fake models the relaxed capture
//    mode only (the one the plugin uses); another mode is refused with
//    CUDA_ERROR_NOT_SUPPORTED, and so are stream-ordered allocations and
//    pageable copies in a capture (not modelled: refused, never recorded
//    wrongly).
#pragma once

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fault_spec.hpp"
#include "fake_cuda_types.hpp"

namespace fake_cuda {
using CUresult = int;
using CUdeviceptr = unsigned long long;
struct Stream;
struct Event;
struct Capture;
using CUstream = Stream *;
using CUevent = Event *;

constexpr CUresult OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, STUB = 34, NO_DEVICE = 100,
                   INVALID_DEVICE = 101, INVALID_CONTEXT = 201, INVALID_PTX = 218, UNSUPPORTED_PTX_VERSION = 222,
                   INVALID_HANDLE = 400, NOT_READY = 600, ALREADY_REGISTERED = 712, NOT_REGISTERED = 713,
                   NOT_PERMITTED = 800, NOT_SUPPORTED = 801, ILLEGAL_STATE = 401, CAPTURE_UNSUPPORTED = 900,
                   CAPTURE_INVALIDATED = 901, CAPTURE_MERGE = 902, CAPTURE_UNMATCHED = 903, CAPTURE_UNJOINED = 904,
                   CAPTURE_ISOLATION = 905, CAPTURE_IMPLICIT = 906, CAPTURED_EVENT = 907;

// ---- fault injection (FAKE_CUDA_FAIL, syntax of fault_spec.hpp) ------------------
inline gpuhal::support::FaultRules &g_faults = gpuhal::support::fault_rules_from_environment("FAKE_CUDA_FAIL", "fake CUDA driver");

inline CUresult injected(const char *symbol) {
  long code = 0;
  return g_faults.fires(symbol, 999 /* CUDA_ERROR_UNKNOWN */, &code) ? CUresult(code) : OK;
}

// ---- state ---------------------------------------------------------------------------
inline bool g_initialized = false;
constexpr int kMaxDevices = 4;
inline int g_ctx_refs[kMaxDevices] = {};
inline int g_ctx_token[kMaxDevices] = {};  // device d's primary context handle points at [d]
// Memory pools, by slot: slot d < kMaxDevices is device d's default pool,
// the others are cuMemPoolCreate's (g_pool_dev: their device, -1 when the
// slot is free). A pool's handle is &g_pool_token[slot]. Guarded by g_mem_mu.
// cuda.h sets no limit on how many pools a process may create; this table's
// size is the fake's own bound (cuMemPoolCreate answers
// CUDA_ERROR_OUT_OF_MEMORY past it), far above what a test holds at once:
// the Hypothesis state machine keeps tens alive, more while Hypothesis still
// holds an earlier sequence's objects (60 slots ran out there).
constexpr int kMaxPools = kMaxDevices + 1020;
inline int g_pool_token[kMaxPools] = {};
inline uint64_t g_release_threshold[kMaxPools] = {};
inline uint64_t g_pool_idle[kMaxPools] = {};  // freed into the pool, held
// Bytes allocated from the pool and not freed, and the high watermarks of
// used and reserved (used + idle) bytes (CU_MEMPOOL_ATTR_USED_MEM_HIGH,
// CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), all under g_mem_mu.
inline uint64_t g_pool_used[kMaxPools] = {};
inline uint64_t g_pool_used_high[kMaxPools] = {};
inline uint64_t g_pool_reserved_high[kMaxPools] = {};
inline std::array<int, kMaxPools> g_pool_dev = [] {
  std::array<int, kMaxPools> a{};
  for (int s = 0; s < kMaxPools; ++s) a[size_t(s)] = s < kMaxDevices ? s : -1;
  return a;
}();
inline bool g_pool_destroyed[kMaxPools] = {};     // cuMemPoolDestroy'd, allocations still out
// IPC of pools (ipc.cpp): the handle types a pool was made with, the memfd
// standing for its shareable descriptor (made on the first export, -1
// before) and that file's inode (how an imported descriptor is recognised),
// and for an imported pool the slot it was imported from (-1: not imported).
inline int g_pool_handle_types[kMaxPools] = {};
inline std::array<int, kMaxPools> g_pool_memfd = [] {
  std::array<int, kMaxPools> a{};
  a.fill(-1);
  return a;
}();
inline uint64_t g_pool_inode[kMaxPools] = {};
inline std::array<int, kMaxPools> g_pool_imported_from = g_pool_memfd;
// The calling thread's context stack (device numbers of primary contexts).
// Trivially destructible, as the driver's own per-thread state behaves: a
// program's static destructors still call the driver on the main thread
// after its thread_local objects were destroyed.
struct ContextStack {
  int items[64];
  int depth;
  bool empty() const { return depth == 0; }
  int back() const { return items[depth - 1]; }
  int &back() { return items[depth - 1]; }
  bool push_back(int d) {
    if (depth == 64) return false;
    items[depth++] = d;
    return true;
  }
  void pop_back() { --depth; }
};
inline thread_local ContextStack t_stack{};
inline int current() {
  return t_stack.empty() ? -1 : t_stack.back();
}
// Set while a host function runs on a stream thread (no CUDA call allowed).
inline thread_local bool t_in_host_fn = false;
// A context's sticky error (0: none).
inline std::atomic<int> g_sticky[kMaxDevices] = {};
// cuda.h, CUDA_ERROR_ILLEGAL_ADDRESS (700), _LAUNCH_TIMEOUT (702),
// _HARDWARE_STACK_ERROR (714), _ILLEGAL_INSTRUCTION (715),
// _MISALIGNED_ADDRESS (716), _INVALID_ADDRESS_SPACE (717), _INVALID_PC (718),
// _LAUNCH_FAILED (719): "This leaves the process in an inconsistent state and
// any further CUDA work will return the same error. To continue using CUDA,
// the process must be terminated and relaunched." Seen on an H100 (driver
// 580.159.04): after cuDevicePrimaryCtxReset, cuDevicePrimaryCtxRetain
// returns CUDA_ERROR_ILLEGAL_ADDRESS. CUDA_ERROR_ASSERT (710) is the
// context's alone: "The context cannot be used anymore, and must be
// destroyed" (g_sticky, cleared with the context).
inline bool process_fatal(int code) {
  return code == 700 || code == 702 || (code >= 714 && code <= 719);
}
// The process-wide error once a fault of that kind happened (0: none); only
// fake_cuda_end_process (a new process, for the tests) clears it.
inline std::atomic<int> g_process_fatal{0};
// A kernel hit `code` on device dev (run on a stream's worker).
inline void kernel_fault(int dev, int code) {
  g_sticky[dev] = code;
  if (process_fatal(code)) g_process_fatal = code;
}
// The error the next launch's kernel hits when it runs (0: none).
inline std::atomic<int> g_fault_next_launch{0};
inline int g_driver_version = [] {
  const char *v = std::getenv("FAKE_CUDA_DRIVER_VERSION");
  return v ? std::atoi(v) : 13000;
}();
inline std::map<uintptr_t, int> g_host_owner;  // pinned / registered host ranges -> device (g_mem_mu)
inline int g_cc = [] {
  const char *v = std::getenv("FAKE_CUDA_CC");
  return v ? std::atoi(v) : 90;
}();
// CU_DEVICE_ATTRIBUTE_MAX_PITCH: 2^31 - 1 on every device of compute
// capability 5.0 to 9.0 (an H100 answers it); FAKE_CUDA_MAX_PITCH lowers it
// for the tests of a plugin's fallback past the limit.
inline size_t g_max_pitch = [] {
  const char *v = std::getenv("FAKE_CUDA_MAX_PITCH");
  return v ? size_t(std::strtoull(v, nullptr, 10)) : size_t(0x7fffffff);
}();
// The latest accepted cuMemPrefetchAsync_v2 / cuMemAdvise_v2 (for the
// tests: fake_cuda_last_hint): what, the location's type and id, bytes.
struct Hint {
  int call = 0;  // 1 prefetch, 2 advise
  int advice = 0, location_type = 0, location_id = 0;
  uint64_t bytes = 0;
};
inline std::mutex g_hint_mu;
inline Hint g_last_hint;
// cuMemcpy3D(Async) calls accepted so far (fake_cuda_memcpy3d_calls).
inline std::atomic<uint64_t> g_memcpy3d_calls{0};
inline std::mutex g_peer_mu;
inline std::set<std::pair<int, int>> g_peer_enabled;
inline int g_devices = [] {
  const char *v = std::getenv("FAKE_CUDA_DEVICES");
  const int n = v ? std::atoi(v) : 1;
  return n < 1 ? 1 : n > kMaxDevices ? kMaxDevices : n;
}();
inline bool bad_device(int dev) {
  return dev < 0 || dev >= g_devices;
}
inline int device_of(void *ctx) {
  for (int d = 0; d < kMaxDevices; ++d)
    if (ctx == &g_ctx_token[d]) return d;
  return -1;
}
inline uint64_t g_capacity = [] {
  const char *v = std::getenv("FAKE_CUDA_MEMORY");
  return v ? std::strtoull(v, nullptr, 10) : (uint64_t(256) << 20);
}();

inline std::mutex g_mem_mu;
inline uint64_t g_used = 0;
// Memory the host addresses (cuMemHostAlloc, cuMemAllocManaged): whole
// pages of their own, unmapped when freed. The real driver unmaps them
// with the allocation or its context (a host read after
// cuDevicePrimaryCtxReset is a SIGSEGV, seen on an H100), so a pointer kept
// past the free faults here too instead of reading reused heap memory.
void *map_host_pages(size_t bytes);
void unmap_host_pages(void *p, size_t bytes);

struct Alloc {
  size_t size;
  int dev;
  int pool;              // the pool slot it came from (-1: cuMemAlloc)
  bool managed = false;  // from cuMemAllocManaged
  uint64_t serial = 0;   // tells an allocation from a later one at the same address
};
// cuda.h, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY (83): "Device can allocate
// managed memory on this system". FAKE_CUDA_NO_MANAGED_MEMORY set when the
// driver is loaded makes it 0 on every device.
inline bool managed_memory_supported() {
  static const bool supported = std::getenv("FAKE_CUDA_NO_MANAGED_MEMORY") == nullptr;
  return supported;
}
inline std::map<CUdeviceptr, Alloc> g_device;  // allocations
inline std::map<uintptr_t, size_t> g_host;     // cuMemHostAlloc
inline std::map<uintptr_t, size_t> g_registered;
// The flags of the latest cuMemHostAlloc / cuMemHostRegister (for the tests).
inline std::atomic<unsigned> g_last_host_alloc_flags{~0u}, g_last_host_register_flags{~0u};
// IPC mappings open per (context's device, pointer), with their counts.
inline std::map<std::pair<int, CUdeviceptr>, int> g_ipc_opens;
// Pool allocations imported (cuMemPoolImportPointer) per (context's device,
// pointer), with their counts. In one process the importer's pointer is the
// exporter's, so a cuMemFree of it frees an import while one is open.
inline std::map<std::pair<int, CUdeviceptr>, int> g_pool_imports;
// ---- streams -------------------------------------------------------------------------
// Each stream runs submitted operations in order on its own thread. Every
// operation gets a ticket; `done` is the highest completed ticket.
struct Stream {
  bool blocking = true;
  // cuStreamCreateWithPriority's, clamped to [kGreatestPriority, 0]. Every
  // stream has a worker of its own here, so a greater-priority stream's
  // work is never queued behind another stream's (what a GPU's scheduler
  // gives priorities for).
  int priority = 0;
  int dev = -1;  // the context it was made in (-1: the legacy default stream)
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue;
  uint64_t submitted = 0, done = 0;
  bool stop = false;
  std::thread worker;
  // The capture it records into (graphs.cpp; guarded by g_capture_mu), and
  // a lock-free "has one" for submit().
  std::shared_ptr<Capture> capture;
  std::atomic<bool> capturing{false};

  void start() {
    worker = std::thread([this] {
      std::unique_lock<std::mutex> lock(mu);
      for (;;) {
        cv.wait(lock, [this] { return stop || !queue.empty(); });
        if (queue.empty()) return;
        auto op = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        op.second();
        lock.lock();
        done = op.first;
        cv.notify_all();
      }
    });
  }
  uint64_t submit(std::function<void()> fn) {
    std::lock_guard<std::mutex> lock(mu);
    queue.emplace_back(++submitted, std::move(fn));
    cv.notify_all();
    return submitted;
  }
  void wait(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done >= ticket; });
  }
  void drain() { wait(last()); }
  uint64_t last() {
    std::lock_guard<std::mutex> lock(mu);
    return submitted;
  }
  bool idle() {
    std::lock_guard<std::mutex> lock(mu);
    return done == submitted;
  }
  ~Stream() {
    if (worker.joinable()) finish();  // also at exit, for streams never destroyed
  }
  void finish() {
    {
      std::lock_guard<std::mutex> lock(mu);
      stop = true;
      cv.notify_all();
    }
    worker.join();
  }
};

// Streams are shared: events and waiting operations keep a destroyed
// stream's object alive until they are done with it.
// cuCtxGetStreamPriorityRange on a compute capability 9.0 device: [-5, 0]
// (an H100 answers least 0, greatest -5).
constexpr int kGreatestPriority = -5;
inline std::mutex g_streams_mu;
inline std::map<Stream *, std::shared_ptr<Stream>> g_streams;
inline std::shared_ptr<Stream> g_legacy;  // the legacy default stream, made by cuInit

// cuda.h, CU_STREAM_PER_THREAD (0x2): "Per-thread stream handle ... an
// implicit stream with per-thread synchronization behavior"; the CUDA
// programming guide: "The per-thread default stream is not a non-blocking
// stream and will synchronize with the legacy default stream if both are
// used in a program", and each host thread has its own, so two threads'
// per-thread default streams do not wait for each other. One blocking
// stream per host thread and device, made at its first use; the slot is a
// plain pointer (thread-exit order, as for t_stack), the object lives in
// g_streams until a context reset or the process's end.
inline thread_local Stream *t_per_thread[kMaxDevices] = {};

// The stream object for a handle (the special handles mean the legacy
// default stream, and the calling thread's per-thread default stream). A handle that is no live stream ends the process, as it
// does with the real driver: a CUstream is a pointer to the driver's own
// stream object, which every stream entry point dereferences without
// checking it first. cuda.h lists CUDA_ERROR_INVALID_HANDLE among these
// calls' results, but a handle that never was a stream (0xDEAD0 wrapped as
// an external stream) made the process die of a segmentation fault on an
// H100 (driver 580.159.04), and other projects report the same of every
// stream and context entry point. The fake says why before it aborts.
inline std::shared_ptr<Stream> per_thread_stream() {
  const int dev = current() < 0 ? 0 : current();
  Stream *&slot = t_per_thread[dev];
  std::lock_guard<std::mutex> lock(g_streams_mu);
  if (slot) {
    auto it = g_streams.find(slot);
    if (it != g_streams.end()) return it->second;  // else a reset destroyed it: a new one
  }
  auto made = std::make_shared<Stream>();
  made->blocking = true;
  made->dev = dev;
  made->start();
  g_streams[made.get()] = made;
  slot = made.get();
  return made;
}

// Waits for the work queued on every stream of device `dev` and on the
// legacy stream (cuCtxSynchronize's wait, and a kernel load's).
inline void drain_device_streams(int dev) {
  std::vector<std::shared_ptr<Stream>> all{g_legacy};
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto &kv : g_streams)
      if (kv.second->dev == dev) all.push_back(kv.second);
  }
  for (auto &s : all) s->drain();
}

inline std::shared_ptr<Stream> lookup(CUstream s) {
  if (!s || s == reinterpret_cast<CUstream>(1)) return g_legacy;
  if (s == reinterpret_cast<CUstream>(2)) return per_thread_stream();
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    auto it = g_streams.find(s);
    if (it != g_streams.end()) return it->second;
  }
  std::fprintf(stderr,
               "fake CUDA driver: %p is no live CUstream; the real driver dereferences stream handles "
               "unchecked and the process crashes\n",
               static_cast<void *>(s));
  std::abort();
}

// ---- stream capture (graphs.cpp) ---------------------------------------------------------
// cuda.h CUgraphNodeType values of the nodes a capture records.
enum NodeType { kKernelNode = 0, kMemcpyNode = 1, kMemsetNode = 2, kHostNode = 3, kEmptyNode = 5 };
inline std::mutex g_capture_mu;
// Blocking streams capturing, per device (the legacy stream's rule).
inline std::atomic<int> g_blocking_captures[kMaxDevices] = {};
// What capture makes of work submitted to `target`: OK with *recorded false
// (run it), OK with *recorded true (a node of the stream's capture now, with
// `launch` describing a kernel node's launch), or the error (the legacy
// stream while a blocking stream captures, an invalidated capture).
CUresult capture_submit(const std::shared_ptr<Stream> &target, std::function<void()> &fn, NodeType type,
                        bool *recorded, void *func = nullptr);
// The refusal of an operation that cannot be recorded, for a capturing
// `target` (`code`, the capture invalidated); OK when it does not capture.
CUresult refuse_if_capturing(const std::shared_ptr<Stream> &target, CUresult code);
// cuStreamSynchronize / cuCtxSynchronize of the legacy stream or a context
// while a capture of device `dev` runs: the captures invalidated, the error.
CUresult refuse_sync_in_capture(int dev, bool whole_context);
// The event rules (graphs.cpp): an event last recorded in a live capture
// refuses queries and synchronisation; cuEventRecord and cuStreamWaitEvent
// on capturing streams (true: handled there, *result its outcome).
CUresult refuse_captured_event(Event &ev);
bool capture_record(Event &ev, const std::shared_ptr<Stream> &target, CUresult *result);
bool capture_wait(Event &ev, const std::shared_ptr<Stream> &target, CUresult *result);
void capture_stream_destroyed(Stream *s);
void destroy_graphs_of(int dev);

// Submits `fn` to `s` with CUDA's legacy default-stream rules: work on the
// default stream waits for all blocking streams, and blocking streams wait
// for the default stream's work so far. A capturing stream records it.
inline CUresult submit(CUstream s, std::function<void()> fn, NodeType type = kMemcpyNode) {
  const std::shared_ptr<Stream> target = lookup(s);
  bool recorded = false;
  if (const CUresult r = capture_submit(target, fn, type, &recorded); r != OK || recorded) return r;
  std::vector<std::pair<std::shared_ptr<Stream>, uint64_t>> deps;
  if (target == g_legacy) {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto &o : g_streams)
      if (o.second->blocking) deps.emplace_back(o.second, o.second->last());
  } else if (target->blocking) {
    deps.emplace_back(g_legacy, g_legacy->last());
  }
  const int dev = current();
  target->submit([deps, dev, fn = std::move(fn)] {
    for (auto &d : deps) d.first->wait(d.second);
    // A context with a sticky error runs none of its queued work.
    if (dev >= 0 && g_sticky[dev].load() != 0) return;
    fn();
  });
  return OK;
}

// ---- events ----------------------------------------------------------------------------
struct Event {
  bool timing = true;
  int dev = -1;
  std::mutex mu;
  std::shared_ptr<Stream> stream;  // of the latest record
  uint64_t ticket = 0;
  bool has_time = false;
  // Recorded in a capture (graphs.cpp; under g_capture_mu): the capture and
  // the recording stream's dependencies then; `stream` is null.
  std::shared_ptr<Capture> capture;
  std::vector<void *> capture_deps;
  std::chrono::steady_clock::time_point when;
};
inline std::mutex g_events_mu;
inline std::map<Event *, std::shared_ptr<Event>> g_events;

inline std::shared_ptr<Event> find_event(CUevent e) {
  std::lock_guard<std::mutex> lock(g_events_mu);
  auto it = g_events.find(e);
  return it == g_events.end() ? nullptr : it->second;
}

inline bool device_range(CUdeviceptr p, size_t n, CUdeviceptr *base = nullptr, size_t *size = nullptr) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_device.upper_bound(p);
  if (it == g_device.begin()) return false;
  --it;
  if (p - it->first > it->second.size || n > it->second.size - (p - it->first)) return false;
  if (base) *base = it->first;
  if (size) *size = it->second.size;
  return true;
}

inline std::atomic<uint64_t> g_pageable_h2d_bytes{0};

#include "fake_memory.hpp"

inline CUresult wait_legacy(CUresult submitted) {
  if (submitted == OK) g_legacy->drain();
  return submitted;
}

// What every call that works in the current context checks first, as a
// plain status (the entry returns it when it is not OK): cuInit was called,
// no CUDA call from a host function, a current (retained) context, and its
// sticky error. *dev gets the current context's device.
inline CUresult context_call(int *dev) {
  if (!g_initialized) return NOT_INITIALIZED;
  if (t_in_host_fn) return NOT_PERMITTED;
  *dev = current();
  if (const int fatal = g_process_fatal.load()) return CUresult(fatal);
  if (*dev < 0 || g_ctx_refs[*dev] == 0) return INVALID_CONTEXT;
  if (const int sticky = g_sticky[*dev].load()) return CUresult(sticky);
  return OK;
}

// The start of an entry: an injected fault for `symbol` (FAKE_CUDA_FAIL)
// first, then cuInit's rule (initialized_entry) or every rule of a call in
// the current context (context_entry, *dev: its device).
inline CUresult initialized_entry(const char *symbol) {
  if (const CUresult f = injected(symbol); f != OK) return f;
  return g_initialized ? OK : NOT_INITIALIZED;
}
inline CUresult context_entry(const char *symbol, int *dev) {
  if (const CUresult f = injected(symbol); f != OK) return f;
  return context_call(dev);
}

// After a wait: the sticky error the context hit meanwhile, if any.
inline CUresult after_wait(int dev) {
  const int sticky = g_sticky[dev].load();
  return sticky ? sticky : OK;
}

// ---- modules and launches ---------------------------------------------------------------
struct Function {
  std::string name;
  std::vector<int> param_sizes;
  int static_shared = 0;
  int registers = 0;    // CU_FUNC_ATTRIBUTE_NUM_REGS (see parse_ptx)
  int local_bytes = 0;  // CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: the .local depot
  bool prints = false;  // its body calls vprintf (the device printf)
  // The driver API is thread-safe: one thread's cuFuncSetAttribute may run
  // while another's cuLaunchKernel reads the limit (each sees a whole value).
  std::atomic<int> max_dynamic_shared{48 * 1024};
  std::atomic<bool> dynamic_opted_in{false};  // MAX_DYNAMIC_SHARED_SIZE_BYTES was set
  // Loaded onto the device (modules.cpp, lazy loading): at the module's load
  // under CUDA_MODULE_LOADING=EAGER, else at its first lookup.
  std::atomic<bool> loaded{false};
};
struct Module {
  std::vector<std::unique_ptr<Function>> functions;
  int dev = -1;
};
// For the tests: the next cuFuncSetAttribute(..., value) sleeps `ms` first.
inline std::atomic<int> g_slow_set_value{-1}, g_slow_set_ms{0};
inline std::mutex g_module_mu;
inline std::set<Module *> g_modules;
inline std::string g_last_launch;  // described by fake_cuda_last_launch
inline long g_launches = 0;

// modules.cpp: a launch checked as cuLaunchKernel checks it; what it
// records (fake_cuda_last_launch; empty for a kernel that faults) and what
// runs on its stream.
struct PreparedLaunch {
  std::string description;
  std::function<void()> on_stream;
  // A graph's kernel node: recorded each time it runs.
  std::function<void()> node() const;
};
void record_launch(const std::string &description);
CUresult prepare_launch(void *fn, const unsigned grid[3], const unsigned block[3], unsigned shared, void **params,
                        void **extra, int dev, PreparedLaunch *out);
// Defined with their objects.
// memory.cpp: device memory for `dev`; from_pool: what the default pool
// holds idle is used first (stream-ordered allocation).
CUresult allocate(CUdeviceptr *p, size_t bytes, int dev, int pool, bool managed);
// memory.cpp: frees an allocation (g_mem_mu held); pool memory goes back to
// the pool when to_pool.
void release_locked(std::map<CUdeviceptr, Alloc>::iterator it, bool to_pool);
// context.cpp: destroys device dev's primary context and all made in it.
void destroy_context(int dev);
// limits.cpp: a kernel that uses printf was launched in dev's context (its
// printf FIFO size is fixed from now on); the context's limits back to the
// defaults (its destruction).
void note_printing_launch(int dev);
void reset_limits(int dev);

}  // namespace fake_cuda

#define API extern "C" __attribute__((visibility("default")))

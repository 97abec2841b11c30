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
//    one. Memory of the default stream-ordered pool cannot be exported with
//    cuIpcGetMemHandle (only pools made with an IPC handle type can).
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
//  - Destroying a primary context (reset, or the last release) destroys
//    everything made in it: streams, events, memory, modules.
#include "fault_spec.hpp"
#include <dlfcn.h>

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

namespace {

using CUresult = int;
using CUdeviceptr = unsigned long long;
struct Stream;
struct Event;
using CUstream = Stream *;
using CUevent = Event *;

constexpr CUresult OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, NOT_INITIALIZED = 3, STUB = 34, NO_DEVICE = 100,
                   INVALID_DEVICE = 101, INVALID_CONTEXT = 201, INVALID_PTX = 218, UNSUPPORTED_PTX_VERSION = 222,
                   INVALID_HANDLE = 400, NOT_READY = 600, ALREADY_REGISTERED = 712, NOT_REGISTERED = 713,
                   NOT_PERMITTED = 800;

// ---- fault injection (FAKE_CUDA_FAIL, syntax of fault_spec.hpp) ------------------
gpuhal::fakes::FaultRules &g_faults = *[] {
  auto *rules = new gpuhal::fakes::FaultRules;
  std::string error;
  const char *spec = std::getenv("FAKE_CUDA_FAIL");
  if (!rules->set(spec ? spec : "", &error)) {
    std::fprintf(stderr, "fake CUDA driver: FAKE_CUDA_FAIL: %s\n", error.c_str());
    std::abort();
  }
  return rules;
}();

CUresult injected(const char *symbol) {
  long code = 0;
  return g_faults.fires(symbol, 999 /* CUDA_ERROR_UNKNOWN */, &code) ? CUresult(code) : OK;
}
#define FAULT(sym) \
  if (CUresult f_ = injected(#sym); f_ != OK) return f_

// ---- state ---------------------------------------------------------------------------
bool g_initialized = false;
constexpr int kMaxDevices = 4;
int g_ctx_refs[kMaxDevices] = {};
int g_ctx_token[kMaxDevices] = {};  // device d's primary context handle points at [d]
int g_pool_token[kMaxDevices] = {};
uint64_t g_release_threshold[kMaxDevices] = {};
uint64_t g_pool_idle[kMaxDevices] = {};  // freed into the pool, held (guarded by g_mem_mu)
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
thread_local ContextStack t_stack{};
int current() {
  return t_stack.empty() ? -1 : t_stack.back();
}
// Set while a host function runs on a stream thread (no CUDA call allowed).
thread_local bool t_in_host_fn = false;
// A context's sticky error (0: none).
std::atomic<int> g_sticky[kMaxDevices] = {};
// The error the next launch's kernel hits when it runs (0: none).
std::atomic<int> g_fault_next_launch{0};
int g_driver_version = [] {
  const char *v = std::getenv("FAKE_CUDA_DRIVER_VERSION");
  return v ? std::atoi(v) : 13000;
}();
void destroy_context(int dev);  // below, with the modules
std::map<uintptr_t, int> g_host_owner;  // pinned / registered host ranges -> device (g_mem_mu)
int g_cc = [] {
  const char *v = std::getenv("FAKE_CUDA_CC");
  return v ? std::atoi(v) : 90;
}();
std::mutex g_peer_mu;
std::set<std::pair<int, int>> g_peer_enabled;
int g_devices = [] {
  const char *v = std::getenv("FAKE_CUDA_DEVICES");
  const int n = v ? std::atoi(v) : 1;
  return n < 1 ? 1 : n > kMaxDevices ? kMaxDevices : n;
}();
bool bad_device(int dev) {
  return dev < 0 || dev >= g_devices;
}
int device_of(void *ctx) {
  for (int d = 0; d < kMaxDevices; ++d)
    if (ctx == &g_ctx_token[d]) return d;
  return -1;
}
uint64_t g_capacity = [] {
  const char *v = std::getenv("FAKE_CUDA_MEMORY");
  return v ? std::strtoull(v, nullptr, 10) : (uint64_t(256) << 20);
}();

std::mutex g_mem_mu;
uint64_t g_used = 0;
struct Alloc {
  size_t size;
  int dev;
  bool pool;  // from cuMemAllocAsync (the default pool)
};
std::map<CUdeviceptr, Alloc> g_device;  // allocations
std::map<uintptr_t, size_t> g_host;     // cuMemHostAlloc
std::map<uintptr_t, size_t> g_registered;
// IPC mappings open per (context's device, pointer), with their counts.
std::map<std::pair<int, CUdeviceptr>, int> g_ipc_opens;
uint64_t pool_idle_total() {
  uint64_t t = 0;
  for (uint64_t v : g_pool_idle) t += v;
  return t;
}

// ---- streams -------------------------------------------------------------------------
// Each stream runs submitted operations in order on its own thread. Every
// operation gets a ticket; `done` is the highest completed ticket.
struct Stream {
  bool blocking = true;
  int dev = -1;  // the context it was made in (-1: the legacy default stream)
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<uint64_t, std::function<void()>>> queue;
  uint64_t submitted = 0, done = 0;
  bool stop = false;
  std::thread worker;

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
std::mutex g_streams_mu;
std::map<Stream *, std::shared_ptr<Stream>> g_streams;
std::shared_ptr<Stream> g_legacy;  // the legacy default stream, made by cuInit

// The stream object for a handle (the special handles mean the legacy
// default stream); empty for an unknown handle.
std::shared_ptr<Stream> lookup(CUstream s) {
  if (!s || s == reinterpret_cast<CUstream>(1) || s == reinterpret_cast<CUstream>(2)) return g_legacy;
  std::lock_guard<std::mutex> lock(g_streams_mu);
  auto it = g_streams.find(s);
  return it == g_streams.end() ? nullptr : it->second;
}

bool valid_stream(CUstream s) {
  return lookup(s) != nullptr;
}

// Submits `fn` to `s` with CUDA's legacy default-stream rules: work on the
// default stream waits for all blocking streams, and blocking streams wait
// for the default stream's work so far.
CUresult submit(CUstream s, std::function<void()> fn) {
  const std::shared_ptr<Stream> target = lookup(s);
  if (!target) return INVALID_HANDLE;
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
  std::chrono::steady_clock::time_point when;
};
std::mutex g_events_mu;
std::map<Event *, std::shared_ptr<Event>> g_events;

std::shared_ptr<Event> find_event(CUevent e) {
  std::lock_guard<std::mutex> lock(g_events_mu);
  auto it = g_events.find(e);
  return it == g_events.end() ? nullptr : it->second;
}

bool device_range(CUdeviceptr p, size_t n, CUdeviceptr *base = nullptr, size_t *size = nullptr) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_device.upper_bound(p);
  if (it == g_device.begin()) return false;
  --it;
  if (p - it->first > it->second.size || n > it->second.size - (p - it->first)) return false;
  if (base) *base = it->first;
  if (size) *size = it->second.size;
  return true;
}

std::atomic<uint64_t> g_pageable_h2d_bytes{0};

// Device-usable memory: allocations, pinned host memory, registered ranges.
bool accessible(CUdeviceptr p, size_t n) {
  if (device_range(p, n)) return true;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  for (auto *m : {&g_host, &g_registered}) {
    auto it = m->upper_bound(uintptr_t(p));
    if (it == m->begin()) continue;
    --it;
    if (p - it->first <= it->second && n <= it->second - (p - it->first)) return true;
  }
  return false;
}

CUresult wait_legacy(CUresult submitted) {
  if (submitted == OK) g_legacy->drain();
  return submitted;
}

#define REQUIRE_INIT() \
  if (!g_initialized) return NOT_INITIALIZED

// What every call that works in the current context checks first: no CUDA
// call from a host function, a current (retained) context, and its sticky
// error. Declares `dev`, the current context's device.
#define CONTEXT_CALL()                                               \
  REQUIRE_INIT();                                                    \
  if (t_in_host_fn) return NOT_PERMITTED;                            \
  const int dev = current();                                         \
  if (dev < 0 || g_ctx_refs[dev] == 0) return INVALID_CONTEXT;       \
  if (const int sticky_ = g_sticky[dev].load()) return sticky_;      \
  (void)dev

// After a wait: the sticky error the context hit meanwhile, if any.
CUresult after_wait(int dev) {
  const int sticky = g_sticky[dev].load();
  return sticky ? sticky : OK;
}

// The default pool releases what it holds above its threshold when the
// context synchronises.
void pool_release_above_threshold(int dev) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (g_pool_idle[dev] > g_release_threshold[dev]) g_pool_idle[dev] = g_release_threshold[dev];
}

}  // namespace

extern "C" {
#define API __attribute__((visibility("default")))

struct ErrorText {
  CUresult code;
  const char *name;
  const char *text;
};
// cuda.h's names; the texts are the driver's (cuGetErrorString).
const ErrorText kErrors[] = {
    {OK, "CUDA_SUCCESS", "no error"},
    {INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {STUB, "CUDA_ERROR_STUB_LIBRARY", "CUDA driver is a stub library"},
    {NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {200, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {UNSUPPORTED_PTX_VERSION, "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
     "the provided PTX was compiled with an unsupported toolchain."},
    {INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {500, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS", "an illegal memory access was encountered"},
    {701, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", "too many resources requested for launch"},
    {702, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {704, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED", "peer access is already enabled"},
    {710, "CUDA_ERROR_ASSERT", "device-side assert triggered"},
    {ALREADY_REGISTERED, "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
     "part or all of the requested memory range is already mapped"},
    {NOT_REGISTERED, "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED", "pointer does not correspond to a registered memory region"},
    {714, "CUDA_ERROR_HARDWARE_STACK_ERROR", "an illegal memory access was encountered"},
    {715, "CUDA_ERROR_ILLEGAL_INSTRUCTION", "an illegal instruction was encountered"},
    {716, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {717, "CUDA_ERROR_INVALID_ADDRESS_SPACE", "operation not supported on global/shared address space"},
    {718, "CUDA_ERROR_INVALID_PC", "invalid program counter"},
    {719, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {NOT_PERMITTED, "CUDA_ERROR_NOT_PERMITTED", "operation not permitted"},
    {801, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {999, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

API CUresult cuGetErrorName(CUresult r, const char **s) {
  FAULT(cuGetErrorName);
  if (!s) return INVALID_VALUE;
  for (const auto &e : kErrors)
    if (e.code == r) {
      *s = e.name;
      return OK;
    }
  *s = nullptr;
  return INVALID_VALUE;
}

API CUresult cuGetErrorString(CUresult r, const char **s) {
  FAULT(cuGetErrorString);
  if (!s) return INVALID_VALUE;
  for (const auto &e : kErrors)
    if (e.code == r) {
      *s = e.text;
      return OK;
    }
  *s = "fake driver error";
  return OK;
}

API CUresult cuInit(unsigned flags) {
  FAULT(cuInit);
  if (flags != 0) return INVALID_VALUE;
  if (std::getenv("FAKE_CUDA_STUB")) return STUB;
  if (std::getenv("FAKE_CUDA_NO_DEVICE")) return NO_DEVICE;
  if (!g_initialized) {
    g_legacy = std::make_shared<Stream>();
    g_legacy->start();
    g_initialized = true;
  }
  return OK;
}

API CUresult cuDriverGetVersion(int *v) {
  FAULT(cuDriverGetVersion);
  if (!v) return INVALID_VALUE;
  *v = g_driver_version;
  return OK;
}

API CUresult cuDeviceGetCount(int *n) {
  FAULT(cuDeviceGetCount);
  REQUIRE_INIT();
  if (!n) return INVALID_VALUE;
  *n = g_devices;
  return OK;
}

API CUresult cuDeviceGet(int *dev, int ordinal) {
  FAULT(cuDeviceGet);
  REQUIRE_INIT();
  if (!dev) return INVALID_VALUE;
  if (bad_device(ordinal)) return INVALID_DEVICE;
  *dev = ordinal;
  return OK;
}

API CUresult cuDeviceGetName(char *name, int len, int dev) {
  FAULT(cuDeviceGetName);
  REQUIRE_INIT();
  if (!name || len <= 0) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  std::snprintf(name, size_t(len), "gpuhal fake CUDA device");
  return OK;
}

API CUresult cuDeviceTotalMem_v2(size_t *bytes, int dev) {
  FAULT(cuDeviceTotalMem_v2);
  REQUIRE_INIT();
  if (!bytes) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  *bytes = size_t(g_capacity);
  return OK;
}

API CUresult cuDeviceGetAttribute(int *v, int attr, int dev) {
  FAULT(cuDeviceGetAttribute);
  REQUIRE_INIT();
  if (!v) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  switch (attr) {
    case 1:
      *v = 1024;
      break;
    case 2:
    case 3:
      *v = 1024;
      break;
    case 4:
      *v = 64;
      break;
    case 5:
      *v = 0x7fffffff;
      break;
    case 6:
    case 7:
      *v = 65535;
      break;
    case 8:
      *v = 48 * 1024;
      break;
    case 97:
      *v = 227 * 1024;
      break;
    case 10:
      *v = 32;
      break;
    case 13:
      *v = 1500000;
      break;
    case 16:
      *v = 4;
      break;
    case 19:
    case 31:
    case 41:
      *v = 1;
      break;
    case 33:
      *v = 0x41;
      break;
    case 34:
      *v = 0;
      break;
    case 50:
      *v = 0;
      break;
    case 75:
      *v = g_cc / 10;
      break;
    case 76:
      *v = g_cc % 10;
      break;
    default:
      return INVALID_VALUE;
  }
  return OK;
}

API CUresult cuDevicePrimaryCtxRetain(void **ctx, int dev) {
  FAULT(cuDevicePrimaryCtxRetain);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  ++g_ctx_refs[dev];
  *ctx = &g_ctx_token[dev];
  return OK;
}

API CUresult cuDevicePrimaryCtxRelease_v2(int dev) {
  FAULT(cuDevicePrimaryCtxRelease_v2);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (bad_device(dev)) return INVALID_DEVICE;
  if (g_ctx_refs[dev] == 0) return INVALID_CONTEXT;
  if (--g_ctx_refs[dev] == 0) destroy_context(dev);  // the last reference destroys it
  return OK;
}

// "Destroy all allocations and reset all state on the primary context";
// "Resetting the primary context does not release it".
API CUresult cuDevicePrimaryCtxReset_v2(int dev) {
  FAULT(cuDevicePrimaryCtxReset_v2);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;
  if (bad_device(dev)) return INVALID_DEVICE;
  destroy_context(dev);
  return OK;
}

API CUresult cuCtxSetCurrent(void *ctx) {
  FAULT(cuCtxSetCurrent);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) {  // "equivalent to popping the top of the ... stack"
    if (!t_stack.empty()) t_stack.pop_back();
    return OK;
  }
  const int d = device_of(ctx);
  if (d < 0) return INVALID_CONTEXT;
  if (t_stack.empty())
    (void)t_stack.push_back(d);
  else
    t_stack.back() = d;  // "replace the top of that stack"
  return OK;
}

API CUresult cuCtxGetCurrent(void **ctx) {
  FAULT(cuCtxGetCurrent);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (!ctx) return INVALID_VALUE;
  *ctx = t_stack.empty() ? nullptr : &g_ctx_token[t_stack.back()];
  return OK;
}

API CUresult cuCtxPushCurrent_v2(void *ctx) {
  FAULT(cuCtxPushCurrent_v2);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  const int d = device_of(ctx);
  if (d < 0) return INVALID_CONTEXT;
  if (!t_stack.push_back(d)) return OUT_OF_MEMORY;  // the driver's stack is bounded too
  return OK;
}

API CUresult cuCtxPopCurrent_v2(void **ctx) {
  FAULT(cuCtxPopCurrent_v2);
  REQUIRE_INIT();
  if (t_in_host_fn) return NOT_PERMITTED;  // "must not make any CUDA API calls"
  if (t_stack.empty()) return INVALID_CONTEXT;
  if (ctx) *ctx = &g_ctx_token[t_stack.back()];
  t_stack.pop_back();
  return OK;
}

API CUresult cuCtxSynchronize() {
  FAULT(cuCtxSynchronize);
  CONTEXT_CALL();
  std::vector<std::shared_ptr<Stream>> all{g_legacy};
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto &kv : g_streams)
      if (kv.second->dev == dev) all.push_back(kv.second);
  }
  for (auto &s : all) s->drain();
  pool_release_above_threshold(dev);
  return after_wait(dev);
}

API CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  FAULT(cuMemGetInfo_v2);
  CONTEXT_CALL();
  if (!free_bytes || !total) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  *free_bytes = size_t(g_capacity - g_used - pool_idle_total());  // what pools hold is not free
  *total = size_t(g_capacity);
  return OK;
}

// Device memory for `dev`; from_pool: what the default pool holds idle is
// used first (stream-ordered allocation), else it is not available.
CUresult allocate(CUdeviceptr *p, size_t bytes, int dev, bool from_pool) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (from_pool && g_pool_idle[dev] >= bytes) {
    g_pool_idle[dev] -= bytes;
  } else if (bytes > g_capacity - g_used - pool_idle_total()) {
    return OUT_OF_MEMORY;
  }
  void *mem = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!mem) return OUT_OF_MEMORY;
  g_used += bytes;
  *p = reinterpret_cast<uintptr_t>(mem);
  g_device[*p] = Alloc{bytes, dev, from_pool};
  return OK;
}

// Frees an allocation (g_mem_mu held); pool memory goes back to the pool.
void release_locked(std::map<CUdeviceptr, Alloc>::iterator it, bool to_pool) {
  g_used -= it->second.size;
  if (to_pool) g_pool_idle[it->second.dev] += it->second.size;
  std::free(reinterpret_cast<void *>(uintptr_t(it->first)));
  g_device.erase(it);
}

API CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes) {
  FAULT(cuMemAlloc_v2);
  CONTEXT_CALL();
  if (!p || bytes == 0) return INVALID_VALUE;
  return allocate(p, bytes, dev, false);
}

API CUresult cuMemFree_v2(CUdeviceptr p) {
  FAULT(cuMemFree_v2);
  CONTEXT_CALL();
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_device.find(p);
  if (it == g_device.end()) return INVALID_VALUE;
  release_locked(it, false);
  return OK;
}

API CUresult cuMemGetAddressRange_v2(CUdeviceptr *base, size_t *size, CUdeviceptr p) {
  FAULT(cuMemGetAddressRange_v2);
  CONTEXT_CALL();
  CUdeviceptr b;
  size_t s;
  if (!device_range(p, 0, &b, &s)) return INVALID_VALUE;
  if (base) *base = b;
  if (size) *size = s;
  return OK;
}

// ---- transfers ----------------------------------------------------------------------------
API CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
  FAULT(cuMemcpyHtoDAsync_v2);
  CONTEXT_CALL();
  if (n == 0) return OK;
  if (!src || !accessible(dst, n)) return INVALID_VALUE;
  if (!accessible(uintptr_t(src), n)) {
    // Pageable memory: the driver stages it, reading the source before it
    // returns (counted for the tests of the plugin's own staging).
    g_pageable_h2d_bytes += n;
    auto copy = std::make_shared<std::vector<uint8_t>>(static_cast<const uint8_t *>(src),
                                                       static_cast<const uint8_t *>(src) + n);
    return submit(s, [=] { std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), copy->data(), n); });
  }
  return submit(s, [=] { std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n); });
}
API CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
  FAULT(cuMemcpyDtoHAsync_v2);
  CONTEXT_CALL();
  if (n == 0) return OK;
  if (!dst || !accessible(src, n)) return INVALID_VALUE;
  return submit(s, [=] { std::memcpy(dst, reinterpret_cast<const void *>(uintptr_t(src)), n); });
}
API CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  FAULT(cuMemcpyDtoDAsync_v2);
  CONTEXT_CALL();
  if (n == 0) return OK;
  if (!accessible(dst, n) || !accessible(src, n)) return INVALID_VALUE;
  return submit(s, [=] {
    std::memmove(reinterpret_cast<void *>(uintptr_t(dst)), reinterpret_cast<const void *>(uintptr_t(src)), n);
  });
}
API CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char v, size_t n, CUstream s) {
  FAULT(cuMemsetD8Async);
  CONTEXT_CALL();
  if (n == 0) return OK;
  if (!accessible(dst, n)) return INVALID_VALUE;
  return submit(s, [=] { std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, n); });
}
API CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
  FAULT(cuMemcpyHtoD_v2);
  return wait_legacy(cuMemcpyHtoDAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
  FAULT(cuMemcpyDtoH_v2);
  return wait_legacy(cuMemcpyDtoHAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  FAULT(cuMemcpyDtoD_v2);
  return wait_legacy(cuMemcpyDtoDAsync_v2(dst, src, n, nullptr));
}
API CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char v, size_t n) {
  FAULT(cuMemsetD8_v2);
  return wait_legacy(cuMemsetD8Async(dst, v, n, nullptr));
}

// ---- streams --------------------------------------------------------------------------------
API CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  FAULT(cuStreamCreate);
  CONTEXT_CALL();
  if (!out || (flags & ~1u)) return INVALID_VALUE;
  auto s = std::make_shared<Stream>();
  s->blocking = (flags & 1u) == 0;
  s->dev = dev;
  s->start();
  std::lock_guard<std::mutex> lock(g_streams_mu);
  g_streams.emplace(s.get(), s);
  *out = s.get();
  return OK;
}
API CUresult cuStreamDestroy_v2(CUstream s) {
  FAULT(cuStreamDestroy_v2);
  CONTEXT_CALL();
  std::shared_ptr<Stream> owned;
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    auto it = g_streams.find(s);
    if (!s || it == g_streams.end()) return INVALID_HANDLE;
    owned = it->second;
    g_streams.erase(it);
  }
  owned->drain();  // pending work still completes
  owned->finish();
  return OK;
}
std::shared_ptr<Stream> resolve(CUstream s) {
  return lookup(s);
}
API CUresult cuStreamSynchronize(CUstream s) {
  FAULT(cuStreamSynchronize);
  CONTEXT_CALL();
  if (!valid_stream(s)) return INVALID_HANDLE;
  resolve(s)->drain();
  pool_release_above_threshold(dev);
  return after_wait(dev);
}
API CUresult cuStreamQuery(CUstream s) {
  FAULT(cuStreamQuery);
  CONTEXT_CALL();
  if (!valid_stream(s)) return INVALID_HANDLE;
  return resolve(s)->idle() ? after_wait(dev) : NOT_READY;
}
// The context a stream belongs to (the current one for the special handles).
API CUresult cuStreamGetCtx(CUstream s, void **ctx) {
  FAULT(cuStreamGetCtx);
  CONTEXT_CALL();
  if (!ctx) return INVALID_VALUE;
  const auto st = lookup(s);
  if (!st) return INVALID_HANDLE;
  *ctx = &g_ctx_token[st->dev >= 0 ? st->dev : dev];
  return OK;
}
API CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  FAULT(cuStreamWaitEvent);
  CONTEXT_CALL();
  const auto ev = find_event(e);
  if (flags != 0 || !ev || !valid_stream(s)) return INVALID_HANDLE;
  std::shared_ptr<Stream> src;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    src = ev->stream;
    ticket = ev->ticket;
  }
  if (!src) return OK;  // never recorded: no-op
  return submit(s, [src, ticket] { src->wait(ticket); });
}
API CUresult cuLaunchHostFunc(CUstream s, void (*fn)(void *), void *user) {
  FAULT(cuLaunchHostFunc);
  CONTEXT_CALL();
  if (!fn) return INVALID_VALUE;
  // submit() drops it when the context has hit an error: never called then.
  return submit(s, [fn, user] {
    t_in_host_fn = true;
    fn(user);
    t_in_host_fn = false;
  });
}

// ---- events -----------------------------------------------------------------------------------
API CUresult cuEventCreate(CUevent *out, unsigned flags) {
  FAULT(cuEventCreate);
  CONTEXT_CALL();
  if (!out || (flags & ~3u)) return INVALID_VALUE;
  auto e = std::make_shared<Event>();
  e->timing = (flags & 2u) == 0;
  e->dev = dev;
  std::lock_guard<std::mutex> lock(g_events_mu);
  g_events.emplace(e.get(), e);
  *out = e.get();
  return OK;
}
API CUresult cuEventDestroy_v2(CUevent e) {
  FAULT(cuEventDestroy_v2);
  CONTEXT_CALL();
  // A pending record keeps the object alive (it holds a reference).
  std::lock_guard<std::mutex> lock(g_events_mu);
  return e && g_events.erase(e) ? OK : INVALID_HANDLE;
}
API CUresult cuEventRecord(CUevent e, CUstream s) {
  FAULT(cuEventRecord);
  CONTEXT_CALL();
  const auto ev = find_event(e);
  const auto target = resolve(s);
  if (!ev || !target) return INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(ev->mu);
  CUresult r = submit(s, [ev] {
    std::lock_guard<std::mutex> l(ev->mu);
    ev->has_time = true;
    ev->when = std::chrono::steady_clock::now();
  });
  if (r != OK) return r;
  ev->stream = target;
  ev->ticket = target->last();
  ev->has_time = false;
  return OK;
}
API CUresult cuEventSynchronize(CUevent e) {
  FAULT(cuEventSynchronize);
  CONTEXT_CALL();
  const auto ev = find_event(e);
  if (!ev) return INVALID_HANDLE;
  std::shared_ptr<Stream> src;
  uint64_t ticket;
  {
    std::lock_guard<std::mutex> lock(ev->mu);
    src = ev->stream;
    ticket = ev->ticket;
  }
  if (src) src->wait(ticket);
  pool_release_above_threshold(dev);
  return after_wait(dev);
}
API CUresult cuEventQuery(CUevent e) {
  FAULT(cuEventQuery);
  CONTEXT_CALL();
  const auto ev = find_event(e);
  if (!ev) return INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(ev->mu);
  if (!ev->stream) return OK;
  std::lock_guard<std::mutex> l2(ev->stream->mu);
  return ev->stream->done >= ev->ticket ? after_wait(dev) : NOT_READY;
}
API CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
  FAULT(cuEventElapsedTime_v2);
  CONTEXT_CALL();
  if (!ms) return INVALID_VALUE;
  const auto ea = find_event(a), eb = find_event(b);
  if (!ea || !eb) return INVALID_HANDLE;
  std::scoped_lock both(ea->mu, eb->mu);
  if (!a->timing || !b->timing) return INVALID_HANDLE;
  if (!a->stream || !b->stream) return INVALID_HANDLE;
  if (!a->has_time || !b->has_time) return NOT_READY;
  *ms = std::chrono::duration<float, std::milli>(b->when - a->when).count();
  return OK;
}

// ---- host memory -------------------------------------------------------------------------------
API CUresult cuMemHostAlloc(void **out, size_t bytes, unsigned flags) {
  FAULT(cuMemHostAlloc);
  CONTEXT_CALL();
  if (!out || bytes == 0 || (flags & ~7u)) return INVALID_VALUE;
  void *p = std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) return OUT_OF_MEMORY;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  g_host[uintptr_t(p)] = bytes;
  g_host_owner[uintptr_t(p)] = dev;
  *out = p;
  return OK;
}
API CUresult cuMemFreeHost(void *p) {
  FAULT(cuMemFreeHost);
  CONTEXT_CALL();
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (!g_host.erase(uintptr_t(p))) return INVALID_VALUE;
  g_host_owner.erase(uintptr_t(p));
  std::free(p);
  return OK;
}
API CUresult cuMemHostRegister_v2(void *p, size_t bytes, unsigned flags) {
  FAULT(cuMemHostRegister_v2);
  CONTEXT_CALL();
  if (!p || bytes == 0 || (flags & ~0xfu)) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  const uintptr_t a = uintptr_t(p);
  auto it = g_registered.lower_bound(a);
  if (it != g_registered.end() && it->first < a + bytes) return ALREADY_REGISTERED;
  if (it != g_registered.begin() && std::prev(it)->first + std::prev(it)->second > a) return ALREADY_REGISTERED;
  g_registered[a] = bytes;
  g_host_owner[a] = dev;
  return OK;
}
API CUresult cuMemHostUnregister(void *p) {
  FAULT(cuMemHostUnregister);
  CONTEXT_CALL();
  std::lock_guard<std::mutex> lock(g_mem_mu);
  if (!g_registered.erase(uintptr_t(p))) return NOT_REGISTERED;
  g_host_owner.erase(uintptr_t(p));
  return OK;
}
API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *out, void *p, unsigned flags) {
  FAULT(cuMemHostGetDevicePointer_v2);
  CONTEXT_CALL();
  if (!out || flags != 0) return INVALID_VALUE;
  if (!accessible(uintptr_t(p), 1)) return INVALID_VALUE;
  *out = uintptr_t(p);  // unified addressing
  return OK;
}

// ---- IPC (within this process) -------------------------------------------------------------------
struct IpcBytes {
  char magic[8];
  CUdeviceptr base;
  uint64_t size;
};
API CUresult cuIpcGetMemHandle(void *handle, CUdeviceptr p) {
  FAULT(cuIpcGetMemHandle);
  CONTEXT_CALL();
  CUdeviceptr base;
  size_t size;
  if (!handle || !device_range(p, 0, &base, &size) || base != p) return INVALID_VALUE;
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    // The default pool's memory is not exportable this way.
    if (g_device.at(base).pool) return INVALID_VALUE;
  }
  IpcBytes b{{'f', 'a', 'k', 'e', 'c', 'u', 'i', 'p'}, base, size};
  std::memset(handle, 0, 64);
  std::memcpy(handle, &b, sizeof b);
  return OK;
}
struct Handle64 {
  char bytes[64];
};
API CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *out, Handle64 h, unsigned flags) {
  FAULT(cuIpcOpenMemHandle_v2);
  CONTEXT_CALL();
  IpcBytes b;
  std::memcpy(&b, h.bytes, sizeof b);
  if (!out || flags > 1 || std::memcmp(b.magic, "fakecuip", 8) != 0) return INVALID_VALUE;
  CUdeviceptr base;
  size_t size;
  if (!device_range(b.base, 0, &base, &size) || base != b.base || size != b.size) return INVALID_HANDLE;
  std::lock_guard<std::mutex> lock(g_mem_mu);
  ++g_ipc_opens[{dev, b.base}];  // opened again in this context: one more reference
  *out = b.base;                  // the same process: the same memory
  return OK;
}
API CUresult cuIpcCloseMemHandle(CUdeviceptr p) {
  FAULT(cuIpcCloseMemHandle);
  CONTEXT_CALL();
  std::lock_guard<std::mutex> lock(g_mem_mu);
  auto it = g_ipc_opens.find({dev, p});
  if (it == g_ipc_opens.end()) return INVALID_VALUE;  // not an open mapping of this context
  if (--it->second == 0) g_ipc_opens.erase(it);
  return OK;
}
// For the tests: the IPC references open in all contexts.
API long fake_cuda_ipc_open_references() {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  long n = 0;
  for (auto &kv : g_ipc_opens) n += kv.second;
  return n;
}

}  // extern "C"

// ---- stream-ordered allocation and peer access ---------------------------------------------------
extern "C" {
API CUresult cuMemAllocAsync(CUdeviceptr *p, size_t bytes, CUstream s) {
  FAULT(cuMemAllocAsync);
  CONTEXT_CALL();
  if (!valid_stream(s)) return INVALID_HANDLE;
  if (!p || bytes == 0) return INVALID_VALUE;
  return allocate(p, bytes, dev, true);  // made at once: early enough for any order
}
API CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  FAULT(cuMemFreeAsync);
  CONTEXT_CALL();
  if (!valid_stream(s) || !device_range(p, 0)) return INVALID_VALUE;
  return submit(s, [p] {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    auto it = g_device.find(p);
    if (it == g_device.end()) return;
    release_locked(it, true);  // the pool keeps it (until a synchronisation above the threshold)
  });
}
API CUresult cuMemPoolTrimTo(void *pool, size_t keep) {
  FAULT(cuMemPoolTrimTo);
  REQUIRE_INIT();
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      std::lock_guard<std::mutex> lock(g_mem_mu);
      if (g_pool_idle[d] > keep) g_pool_idle[d] = keep;
      return OK;
    }
  return INVALID_HANDLE;
}
API CUresult cuMemPoolGetAttribute(void *pool, int attr, void *value) {
  FAULT(cuMemPoolGetAttribute);
  REQUIRE_INIT();
  if (!value) return INVALID_VALUE;
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      std::lock_guard<std::mutex> lock(g_mem_mu);
      uint64_t used = 0;
      for (auto &kv : g_device)
        if (kv.second.dev == d && kv.second.pool) used += kv.second.size;
      uint64_t v;
      switch (attr) {
        case 4:  // CU_MEMPOOL_ATTR_RELEASE_THRESHOLD
          v = g_release_threshold[d];
          break;
        case 5:  // CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT
          v = used + g_pool_idle[d];
          break;
        case 7:  // CU_MEMPOOL_ATTR_USED_MEM_CURRENT
          v = used;
          break;
        default:
          return INVALID_VALUE;
      }
      std::memcpy(value, &v, sizeof v);
      return OK;
    }
  return INVALID_HANDLE;
}
API CUresult cuDeviceGetDefaultMemPool(void **pool, int dev) {
  FAULT(cuDeviceGetDefaultMemPool);
  REQUIRE_INIT();
  if (!pool) return INVALID_VALUE;
  if (bad_device(dev)) return INVALID_DEVICE;
  *pool = &g_pool_token[dev];
  return OK;
}
API CUresult cuMemPoolSetAttribute(void *pool, int attr, void *value) {
  FAULT(cuMemPoolSetAttribute);
  REQUIRE_INIT();
  if (!value) return INVALID_VALUE;
  for (int d = 0; d < kMaxDevices; ++d)
    if (pool == &g_pool_token[d]) {
      if (attr != 4) return INVALID_VALUE;  // only the release threshold is faked
      std::memcpy(&g_release_threshold[d], value, sizeof(uint64_t));
      return OK;
    }
  return INVALID_HANDLE;
}
// For the tests: the release threshold the plugin set on device d's pool.
// Bytes copied host-to-device from pageable memory so far.
API uint64_t fake_cuda_pageable_h2d_bytes() {
  return g_pageable_h2d_bytes.load();
}

API uint64_t fake_cuda_release_threshold(int d) {
  return bad_device(d) ? 0 : g_release_threshold[d];
}
API CUresult cuDeviceCanAccessPeer(int *out, int dev, int peer) {
  FAULT(cuDeviceCanAccessPeer);
  REQUIRE_INIT();
  if (!out) return INVALID_VALUE;
  if (bad_device(dev) || bad_device(peer)) return INVALID_DEVICE;
  *out = dev != peer;
  return OK;
}
API CUresult cuCtxEnablePeerAccess(void *peer_ctx, unsigned flags) {
  FAULT(cuCtxEnablePeerAccess);
  CONTEXT_CALL();
  const int peer = device_of(peer_ctx);
  if (flags != 0) return INVALID_VALUE;
  if (peer < 0) return INVALID_CONTEXT;
  if (peer == dev) return INVALID_DEVICE;
  std::lock_guard<std::mutex> lock(g_peer_mu);
  return g_peer_enabled.insert({dev, peer}).second ? OK : 704;
}
}  // extern "C"

extern "C" {
// Fault injection at run time, for tests: the k-th call of `symbol` from now
// on returns `code`. fake_cuda_clear_faults() removes every fault.
API void fake_cuda_fail(const char *symbol, long k, int code) {
  g_faults.add(symbol, k, code);
}
API void fake_cuda_clear_faults() {
  g_faults.clear();
}

// ---- modules and launches ---------------------------------------------------------------
struct Function {
  std::string name;
  std::vector<int> param_sizes;
  int static_shared = 0;
  int max_dynamic_shared = 48 * 1024;
};
struct Module {
  std::vector<std::unique_ptr<Function>> functions;
  int dev = -1;
};
// For the tests: the next cuFuncSetAttribute(..., value) sleeps `ms` first.
std::atomic<int> g_slow_set_value{-1}, g_slow_set_ms{0};
std::mutex g_module_mu;
std::set<Module *> g_modules;
std::string g_last_launch;  // described by fake_cuda_last_launch
long g_launches = 0;

// The newest PTX ISA a driver of CUDA version v (1000 * major + 10 * minor)
// JIT-compiles, times ten (PTX ISA release notes: CUDA 11.x -> 7.x,
// 12.0-12.5 -> 8.0-8.5, 12.6 -> 8.5, 12.7 -> 8.6, 12.8 -> 8.7, 12.9 -> 8.8,
// 13.0 -> 9.0).
int max_ptx_isa(int v) {
  const int major = v / 1000, minor = (v % 1000) / 10;
  if (major <= 11) return 70 + minor;
  if (major == 12) return minor <= 5 ? 80 + minor : minor == 6 ? 85 : 80 + minor - 1;
  return 90 + minor;
}
// ".version X.Y" as 10 * X + Y (0 when absent).
int ptx_version(const std::string &ptx) {
  const size_t p = ptx.find(".version ");
  if (p == std::string::npos) return 0;
  int x = 0, y = 0;
  std::sscanf(ptx.c_str() + p + 9, "%d.%d", &x, &y);
  return 10 * x + y;
}
// ".target sm_XY" / "compute_XY" as XY (0 when absent).
int ptx_target(const std::string &ptx) {
  const size_t p = ptx.find(".target ");
  if (p == std::string::npos) return 0;
  const size_t u = ptx.find('_', p);
  return u == std::string::npos ? 0 : std::atoi(ptx.c_str() + u + 1);
}

int ptx_type_size(const std::string &t) {
  if (t.size() < 3) return 0;
  return std::atoi(t.c_str() + 2) / 8;  // .u64 .f32 .b8 ...
}

// Reads the entries of PTX text: ".entry name(" then ".param .<type> x"
// lines up to ")", and every non-extern ".shared" array's bytes.
bool parse_ptx(const std::string &ptx, Module *m) {
  if (ptx.find(".version") == std::string::npos || ptx.find(".target") == std::string::npos) return false;
  size_t pos = 0;
  while ((pos = ptx.find(".entry ", pos)) != std::string::npos) {
    auto f = std::make_unique<Function>();
    size_t b = pos + 7, e = ptx.find_first_of("( \n", b);
    f->name = ptx.substr(b, e - b);
    const size_t close = ptx.find(')', e);
    const size_t body_end = ptx.find("\n}", close);
    for (size_t p = ptx.find(".param ", e); p != std::string::npos && p < close; p = ptx.find(".param ", p + 1)) {
      size_t tb = p + 7;
      if (ptx.compare(tb, 6, ".align") == 0) tb = ptx.find('.', tb + 6);
      const size_t te = ptx.find(' ', tb);
      f->param_sizes.push_back(ptx_type_size(ptx.substr(tb, te - tb)));
    }
    for (size_t p = ptx.find(".shared ", close); p != std::string::npos && p < body_end;
         p = ptx.find(".shared ", p + 1)) {
      const size_t line = ptx.rfind('\n', p);
      if (ptx.substr(line, p - line).find(".extern") != std::string::npos) continue;
      const size_t lb = ptx.find('[', p), le = ptx.find(']', lb);
      if (lb != std::string::npos && le != std::string::npos && lb < ptx.find('\n', p))
        f->static_shared += std::atoi(ptx.c_str() + lb + 1);
    }
    m->functions.push_back(std::move(f));
    pos = e;
  }
  // Module-scope shared arrays (NVRTC puts them before the entries).
  const size_t first_entry = ptx.find(".entry ");
  for (size_t p = ptx.find(".shared "); p != std::string::npos && p < first_entry; p = ptx.find(".shared ", p + 1)) {
    const size_t line = ptx.rfind('\n', p);
    const std::string head = ptx.substr(line + 1, p - line - 1);
    if (head.find(".extern") != std::string::npos || head.find_first_not_of(" \t.visible") != std::string::npos)
      continue;
    const size_t lb = ptx.find('[', p), le = ptx.find(']', lb);
    if (lb != std::string::npos && le != std::string::npos && lb < ptx.find('\n', p))
      for (auto &f : m->functions) f->static_shared += std::atoi(ptx.c_str() + lb + 1);
  }
  return true;
}

Function *known_function(void *f) {
  std::lock_guard<std::mutex> lock(g_module_mu);
  for (Module *m : g_modules)
    for (auto &x : m->functions)
      if (x.get() == f) return x.get();
  return nullptr;
}

}  // namespace
extern "C" {

API CUresult cuModuleLoadDataEx(void **out, const void *image, unsigned n, int *keys, void **values) {
  FAULT(cuModuleLoadDataEx);
  CONTEXT_CALL();
  if (!out || !image || (n && (!keys || !values))) return INVALID_VALUE;
  auto m = std::make_unique<Module>();
  m->dev = dev;
  const char *text = static_cast<const char *>(image);
  auto jit_log = [&](const std::string &line) {
    for (unsigned i = 0; i < n; ++i)
      if (keys[i] == 5)  // CU_JIT_ERROR_LOG_BUFFER
        std::snprintf(static_cast<char *>(values[i]), 256, "%s", line.c_str());
  };
  if (!parse_ptx(text, m.get())) {
    jit_log("fake ptxas: not PTX text");
    return INVALID_PTX;
  }
  const int isa = ptx_version(text), target = ptx_target(text);
  if (isa > max_ptx_isa(g_driver_version)) {
    jit_log("ptxas application ptx input, line 1; fatal   : Unsupported .version " + std::to_string(isa / 10) + "." +
            std::to_string(isa % 10) + "; current version is '" + std::to_string(max_ptx_isa(g_driver_version) / 10) +
            "." + std::to_string(max_ptx_isa(g_driver_version) % 10) + "'");
    return UNSUPPORTED_PTX_VERSION;
  }
  if (target > g_cc) {
    jit_log("ptxas fatal   : SM version specified by .target is higher than default SM version assumed");
    return INVALID_PTX;
  }
  std::lock_guard<std::mutex> lock(g_module_mu);
  g_modules.insert(m.get());
  *out = m.release();
  return OK;
}
API CUresult cuModuleUnload(void *mod) {
  FAULT(cuModuleUnload);
  CONTEXT_CALL();
  std::lock_guard<std::mutex> lock(g_module_mu);
  auto *m = static_cast<Module *>(mod);
  if (!g_modules.erase(m)) return INVALID_HANDLE;
  delete m;
  return OK;
}
API CUresult cuModuleGetFunction(void **out, void *mod, const char *name) {
  FAULT(cuModuleGetFunction);
  CONTEXT_CALL();
  if (!out || !name) return INVALID_VALUE;
  std::lock_guard<std::mutex> lock(g_module_mu);
  auto *m = static_cast<Module *>(mod);
  if (!g_modules.count(m)) return INVALID_HANDLE;
  for (auto &f : m->functions)
    if (f->name == name) {
      *out = f.get();
      return OK;
    }
  return 500;  // CUDA_ERROR_NOT_FOUND
}
API CUresult cuFuncGetAttribute(int *v, int attr, void *fn) {
  FAULT(cuFuncGetAttribute);
  CONTEXT_CALL();
  Function *f = known_function(fn);
  if (!v) return INVALID_VALUE;
  if (!f) return INVALID_HANDLE;
  switch (attr) {
    case 0:  // MAX_THREADS_PER_BLOCK
      *v = 1024;
      return OK;
    case 1:  // SHARED_SIZE_BYTES
      *v = f->static_shared;
      return OK;
    case 8:
      *v = f->max_dynamic_shared;
      return OK;
    default:
      return INVALID_VALUE;
  }
}
API CUresult cuFuncSetAttribute(void *fn, int attr, int value) {
  FAULT(cuFuncSetAttribute);
  CONTEXT_CALL();
  Function *f = known_function(fn);
  if (!f) return INVALID_HANDLE;
  if (attr != 8 || value < 0 || value + f->static_shared > 227 * 1024) return INVALID_VALUE;
  int expected = value;
  if (g_slow_set_value.compare_exchange_strong(expected, -1))
    std::this_thread::sleep_for(std::chrono::milliseconds(g_slow_set_ms.load()));
  f->max_dynamic_shared = value;  // one value per function: the last write wins
  return OK;
}
// FAKE_CUDA_FAULTING_KERNELS: kernels whose launches fault.
static bool faulting_kernel(const std::string &name) {
  static const std::string list = [] {
    const char *v = std::getenv("FAKE_CUDA_FAULTING_KERNELS");
    return std::string(",") + (v ? v : "") + ",";
  }();
  return list.find("," + name + ",") != std::string::npos;
}
API CUresult cuLaunchKernel(void *fn, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                            unsigned shared, CUstream s, void **params, void **extra) {
  FAULT(cuLaunchKernel);
  CONTEXT_CALL();
  Function *f = known_function(fn);
  if (!f) return INVALID_HANDLE;
  if (extra) return INVALID_VALUE;  // not used by the plugin
  if (!gx || !gy || !gz || !bx || !by || !bz || gy > 65535 || gz > 65535 || bz > 64) return INVALID_VALUE;
  if (uint64_t(bx) * by * bz > 1024) return INVALID_VALUE;
  if (shared > unsigned(f->max_dynamic_shared)) return INVALID_VALUE;
  if (!f->param_sizes.empty() && !params) return INVALID_VALUE;
  if (faulting_kernel(f->name)) {
    // CUDA_ERROR_ILLEGAL_ADDRESS (700): "The context cannot be used, so it
    // must be destroyed (and a new one should be created)" -- sticky.
    return submit(s, [dev] { g_sticky[dev] = 700; });
  }
  if (int fault = g_fault_next_launch.exchange(0)) {
    // The kernel faults when it runs: the launch itself succeeds, the
    // context's later calls report the error (it is sticky).
    return submit(s, [dev, fault] { g_sticky[dev] = fault; });
  }
  // The record: every parameter's bytes as the kernel would read them.
  std::string d = f->name + " grid=" + std::to_string(gx) + "," + std::to_string(gy) + "," + std::to_string(gz) +
                  " block=" + std::to_string(bx) + "," + std::to_string(by) + "," + std::to_string(bz) +
                  " shared=" + std::to_string(shared) + " params=";
  for (size_t i = 0; i < f->param_sizes.size(); ++i) {
    uint64_t v = 0;
    if (!params[i]) return INVALID_VALUE;
    std::memcpy(&v, params[i], size_t(f->param_sizes[i]));
    char buf[48];
    std::snprintf(buf, sizeof buf, "%s%d:0x%llx", i ? "," : "", f->param_sizes[i], static_cast<unsigned long long>(v));
    d += buf;
  }
  {
    std::lock_guard<std::mutex> lock(g_module_mu);
    g_last_launch = d;
    ++g_launches;
  }
  return submit(s, [] {});  // ordered on the stream like the real work would be
}
// Writes the latest launch's description into buf; returns the number of launches so far.
API long fake_cuda_last_launch(char *buf, size_t len) {
  std::lock_guard<std::mutex> lock(g_module_mu);
  if (buf && len) std::snprintf(buf, len, "%s", g_last_launch.c_str());
  return g_launches;
}

// cuGetProcAddress (CUDA 12 form): the versioned export of `name` if there
// is one, else `name` itself.
API CUresult cuGetProcAddress_v2(const char *name, void **pfn, int version, unsigned long long flags, int *status) {
  if (!name || !pfn || version <= 0 || flags != 0) return INVALID_VALUE;
  *pfn = nullptr;
  if (status) *status = 1;                                   // CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND
  if (std::getenv("FAKE_CUDA_NO_PROC_ADDRESS")) return 500;  // CUDA_ERROR_NOT_FOUND
  Dl_info info;
  if (!dladdr(reinterpret_cast<void *>(&cuInit), &info)) return 500;
  void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
  if (!self) return 500;
  void *p = dlsym(self, (std::string(name) + "_v2").c_str());
  if (!p) p = dlsym(self, name);
  dlclose(self);
  if (!p) return 500;
  *pfn = p;
  if (status) *status = 0;
  return OK;
}
}  // extern "C"

extern "C" {
// For the tests: the next kernel launched hits `code` (a sticky error) when it runs.
API void fake_cuda_fault_next_launch(int code) {
  g_fault_next_launch = code;
}
// For the tests: the next cuFuncSetAttribute that sets `value` first sleeps `ms`.
API void fake_cuda_slow_func_set_attribute(int value, int ms) {
  g_slow_set_ms = ms;
  g_slow_set_value = value;
}
// For the tests: bytes device `d`'s default pool holds, not in use.
API uint64_t fake_cuda_pool_idle(int d) {
  std::lock_guard<std::mutex> lock(g_mem_mu);
  return bad_device(d) ? 0 : g_pool_idle[d];
}
// For the tests: the sticky error of device d's context (0: none).
API int fake_cuda_sticky_error(int d) {
  return bad_device(d) ? 0 : g_sticky[d].load();
}
}  // extern "C"

namespace {
// Destroys device dev's primary context: everything made in it goes, and
// its sticky error with it (a fresh context starts clean).
void destroy_context(int dev) {
  std::vector<std::shared_ptr<Stream>> streams;
  {
    std::lock_guard<std::mutex> lock(g_streams_mu);
    for (auto it = g_streams.begin(); it != g_streams.end();)
      if (it->second->dev == dev) {
        streams.push_back(it->second);
        it = g_streams.erase(it);
      } else {
        ++it;
      }
  }
  g_sticky[dev] = 700;  // queued work of the dying context does not run
  for (auto &st : streams)
    if (st->worker.joinable()) st->finish();
  {
    std::lock_guard<std::mutex> lock(g_events_mu);
    for (auto it = g_events.begin(); it != g_events.end();) it = it->second->dev == dev ? g_events.erase(it) : ++it;
  }
  {
    std::lock_guard<std::mutex> lock(g_module_mu);
    for (auto it = g_modules.begin(); it != g_modules.end();)
      if ((*it)->dev == dev) {
        delete *it;
        it = g_modules.erase(it);
      } else {
        ++it;
      }
  }
  {
    std::lock_guard<std::mutex> lock(g_mem_mu);
    for (auto it = g_device.begin(); it != g_device.end();) {
      auto next = std::next(it);
      if (it->second.dev == dev) release_locked(it, false);
      it = next;
    }
    g_pool_idle[dev] = 0;
    for (auto it = g_host_owner.begin(); it != g_host_owner.end();) {
      if (it->second == dev) {
        if (g_host.erase(it->first)) std::free(reinterpret_cast<void *>(it->first));
        g_registered.erase(it->first);
        it = g_host_owner.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = g_ipc_opens.begin(); it != g_ipc_opens.end();)
      it = it->first.first == dev ? g_ipc_opens.erase(it) : ++it;
  }
  g_legacy->drain();  // its queued work of this context is skipped
  g_sticky[dev] = 0;
}
}  // namespace

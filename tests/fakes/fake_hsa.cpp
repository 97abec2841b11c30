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
#include "fault_spec.hpp"
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

#include "hsa_api.hpp"
#include "hsa_code_object.hpp"

#define EXPORT extern "C" __attribute__((visibility("default")))

using namespace gpuhal::hsa::api;

namespace {

// ---- fault injection (FAKE_HSA_FAIL, syntax of fault_spec.hpp) -------------------------
gpuhal::fakes::FaultRules &g_faults = *[] {
  auto *rules = new gpuhal::fakes::FaultRules;
  std::string error;
  const char *spec = std::getenv("FAKE_HSA_FAIL");
  if (!rules->set(spec ? spec : "", &error)) {
    std::fprintf(stderr, "fake HSA runtime: FAKE_HSA_FAIL: %s\n", error.c_str());
    std::abort();
  }
  return rules;
}();

hsa_status_t injected(const char *symbol) {
  long code = 0;
  return g_faults.fires(symbol, HSA_STATUS_ERROR, &code) ? hsa_status_t(code) : HSA_STATUS_SUCCESS;
}
#define FAULT(sym) \
  if (hsa_status_t f_ = injected(#sym); f_ != HSA_STATUS_SUCCESS) return f_

uint64_t env_u64(const char *name, uint64_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 0) : fallback;
}

uint64_t now_ns() {
  return uint64_t(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
          .count());
}

// ---- agents and pools -----------------------------------------------------------------
constexpr uint64_t kCpuAgent = 1;
constexpr uint64_t kGpuAgentBase = 2;
constexpr uint64_t kSystemPool = 0x100, kDevicePoolBase = 0x200, kGroupPoolBase = 0x300;
constexpr uint32_t kLdsBytes = 64 * 1024;

std::mutex &g_mu = *new std::mutex;  // guards the state below (not the signals)
int g_init = 0;
// FAKE_HSA_ISAS=gfx90a,gfx942,... names each GPU agent's ISA (one agent
// each); else FAKE_HSA_GPUS agents of gfx90a.
const std::vector<std::string> &g_isas = *new std::vector<std::string>([] {
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
const uint64_t g_gpus = g_isas.size();
const uint64_t g_device_memory = env_u64("FAKE_HSA_MEMORY", uint64_t(16) << 30);
// FAKE_HSA_SYSTEM_MEMORY: how much fine-grained (pinned) system memory can be
// allocated at once (default: no limit).
const uint64_t g_system_memory = env_u64("FAKE_HSA_SYSTEM_MEMORY", UINT64_MAX);
std::atomic<uint64_t> g_system_allocations{0};  // hsa_amd_memory_pool_allocate calls on it (each a kernel call on ROCr)

bool is_gpu(hsa_agent_t a) {
  return a.handle >= kGpuAgentBase && a.handle < kGpuAgentBase + g_gpus;
}
bool is_agent(hsa_agent_t a) {
  return a.handle == kCpuAgent || is_gpu(a);
}

struct Allocation {
  uint64_t size;
  uint64_t pool;
};
std::map<uintptr_t, Allocation> &g_allocations = *new std::map<uintptr_t, Allocation>;
std::map<uint64_t, uint64_t> &g_pool_used = *new std::map<uint64_t, uint64_t>;
std::map<uintptr_t, uint64_t> &g_locked = *new std::map<uintptr_t, uint64_t>;      // hsa_amd_memory_lock
std::map<uintptr_t, uint64_t> &g_registered = *new std::map<uintptr_t, uint64_t>;  // hsa_memory_register

// The range [p, p + n) lies in one entry of m.
template <class M, class F>
bool in_map(const M &m, uintptr_t p, uint64_t n, F size_of) {
  auto it = m.upper_bound(p);
  if (it == m.begin()) return false;
  --it;
  return p >= it->first && p - it->first + n <= size_of(it->second);
}
bool in_allocation(uintptr_t p, uint64_t n, uint64_t *pool = nullptr) {
  auto it = g_allocations.upper_bound(p);
  if (it == g_allocations.begin()) return false;
  --it;
  if (p < it->first || p - it->first + n > it->second.size) return false;
  if (pool) *pool = it->second.pool;
  return true;
}
bool in_host_accessible(uintptr_t p, uint64_t n) {
  auto self = [](uint64_t s) { return s; };
  return in_map(g_locked, p, n, self) || in_map(g_registered, p, n, self);
}

// ---- signals ----------------------------------------------------------------------------
struct FSignal {
  std::atomic<int64_t> value{0};
  uint64_t start_ts = 0, end_ts = 0;
};
std::mutex &g_sig_mu = *new std::mutex;  // with g_sig_cv: every signal's waiters
std::condition_variable &g_sig_cv = *new std::condition_variable;
std::set<FSignal *> &g_signals = *new std::set<FSignal *>;

FSignal *sig(hsa_signal_t s) {
  auto *p = reinterpret_cast<FSignal *>(s.handle);
  std::lock_guard<std::mutex> lock(g_sig_mu);
  return g_signals.count(p) ? p : nullptr;
}
void signal_set(FSignal *s, int64_t v) {
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    s->value.store(v);
  }
  g_sig_cv.notify_all();
}
void signal_add(FSignal *s, int64_t d) {
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    s->value.fetch_add(d);
  }
  g_sig_cv.notify_all();
}
bool satisfied(int64_t v, hsa_signal_condition_t c, int64_t x) {
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
int64_t signal_wait(FSignal *s, hsa_signal_condition_t c, int64_t x, const std::atomic<bool> *stop = nullptr) {
  std::unique_lock<std::mutex> lock(g_sig_mu);
  g_sig_cv.wait(lock, [&] { return satisfied(s->value.load(), c, x) || (stop && stop->load()); });
  return s->value.load();
}
// The same with a timeout (the runtime's hint, honoured: a waiter that gave
// up gets the current value).
int64_t signal_wait_for(FSignal *s, hsa_signal_condition_t c, int64_t x, std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(g_sig_mu);
  g_sig_cv.wait_for(lock, timeout, [&] { return satisfied(s->value.load(), c, x); });
  return s->value.load();
}

// Failure injection for the tests (see the header).
std::atomic<bool> g_fail_next_copy{false}, g_fail_next_packet{false};
std::atomic<uint64_t> g_fault_address{0};
hsa_amd_system_event_callback_t g_event_handler = nullptr;
void *g_event_data = nullptr;
const bool g_negative_on_error = std::getenv("FAKE_HSA_NEGATIVE_ON_ERROR") != nullptr;

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
std::set<Reader *> &g_readers = *new std::set<Reader *>;
std::set<Executable *> &g_executables = *new std::set<Executable *>;
std::set<const KernelObject *> &g_kernel_objects = *new std::set<const KernelObject *>;

template <class T>
bool rd(const std::vector<uint8_t> &b, uint64_t off, T *out) {
  if (off > b.size() || sizeof(T) > b.size() - off) return false;
  std::memcpy(out, b.data() + off, sizeof(T));
  return true;
}

// The kernel descriptors (*.kd symbols of 64 bytes) of an ELF code object.
bool read_kernels(const std::vector<uint8_t> &b, std::vector<std::unique_ptr<KernelObject>> *out) {
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0;
  if (!rd(b, 40, &shoff) || !rd(b, 58, &shentsize) || !rd(b, 60, &shnum) || shentsize < 64) return false;
  auto section = [&](uint32_t i, uint32_t *type, uint64_t *addr, uint64_t *off, uint64_t *size, uint32_t *link) {
    const uint64_t h = shoff + uint64_t(i) * shentsize;
    return rd(b, h + 4, type) && rd(b, h + 16, addr) && rd(b, h + 24, off) && rd(b, h + 32, size) &&
           rd(b, h + 40, link);
  };
  for (uint32_t i = 0; i < shnum; ++i) {
    uint32_t type = 0, link = 0;
    uint64_t addr = 0, off = 0, size = 0;
    if (!section(i, &type, &addr, &off, &size, &link)) return false;
    if (type != 2 /* SHT_SYMTAB */) continue;
    uint32_t st = 0, sl = 0;
    uint64_t saddr = 0, soff = 0, ssize = 0;
    if (!section(link, &st, &saddr, &soff, &ssize, &sl)) return false;
    for (uint64_t at = off; at + 24 <= off + size; at += 24) {
      uint32_t name = 0;
      uint16_t shndx = 0;
      uint64_t value = 0, symsize = 0;
      if (!rd(b, at, &name) || !rd(b, at + 6, &shndx) || !rd(b, at + 8, &value) || !rd(b, at + 16, &symsize))
        return false;
      if (name >= ssize || soff + name >= b.size()) continue;
      const char *n = reinterpret_cast<const char *>(b.data() + soff + name);
      const std::string sname(n, strnlen(n, size_t(b.size() - (soff + name))));
      if (symsize != 64 || sname.size() < 4 || sname.compare(sname.size() - 3, 3, ".kd") != 0) continue;
      uint32_t t2 = 0, l2 = 0;
      uint64_t a2 = 0, o2 = 0, s2 = 0;
      if (!section(shndx, &t2, &a2, &o2, &s2, &l2) || value < a2) return false;
      const uint64_t kd = o2 + (value - a2);
      auto k = std::make_unique<KernelObject>();
      k->name = sname;
      if (!rd(b, kd, &k->group) || !rd(b, kd + 4, &k->priv) || !rd(b, kd + 8, &k->kernarg)) return false;
      out->push_back(std::move(k));
    }
  }
  return true;
}

// ---- dispatch records ---------------------------------------------------------------------
std::mutex &g_dispatch_mu = *new std::mutex;
hsa_kernel_dispatch_packet_t g_last_dispatch{};
std::vector<uint8_t> &g_last_kernarg = *new std::vector<uint8_t>;
uint64_t g_dispatch_count = 0;

// ---- queues -------------------------------------------------------------------------------
struct FQueue {
  hsa_queue_t q{};  // first: the handle the plugin sees
  std::atomic<uint64_t> write_index{0};
  std::atomic<uint64_t> read_index{0};
  std::atomic<bool> stop{false};
  bool profiling = false;
  hsa_queue_callback callback = nullptr;
  void *data = nullptr;
  hsa_agent_t agent{};
  uint8_t *ring = nullptr;
  std::thread consumer;
  bool suspended = false;  // after an error: nothing more is processed (consumer thread only)
};
std::set<FQueue *> &g_queues = *new std::set<FQueue *>;

// A queue error: reported through the callback, and the queue is suspended.
void report(FQueue *q, hsa_status_t st) {
  q->suspended = true;
  if (q->callback) q->callback(st, &q->q, q->data);
}
void report_packet(FQueue *q, hsa_status_t st, hsa_signal_t completion) {
  if (g_negative_on_error && completion.handle)
    if (FSignal *f = sig(completion)) signal_set(f, -1);
  report(q, st);
}

// Checks a dispatch packet as a packet processor would before running it.
hsa_status_t check_dispatch(FQueue *q, const hsa_kernel_dispatch_packet_t &p) {
  const unsigned dims = p.setup & 3;
  if (dims < 1 || dims > 3) return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  const uint64_t wg = uint64_t(p.workgroup_size_x) * p.workgroup_size_y * p.workgroup_size_z;
  if (wg == 0 || wg > 1024 || !p.grid_size_x || !p.grid_size_y || !p.grid_size_z)
    return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  if ((dims < 2 && (p.grid_size_y != 1 || p.workgroup_size_y != 1)) ||
      (dims < 3 && (p.grid_size_z != 1 || p.workgroup_size_z != 1)))
    return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  std::lock_guard<std::mutex> lock(g_mu);
  const auto *k = reinterpret_cast<const KernelObject *>(p.kernel_object);
  if (!g_kernel_objects.count(k)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  if (p.group_segment_size < k->group || p.group_segment_size > kLdsBytes || p.private_segment_size < k->priv)
    return HSA_STATUS_ERROR_INVALID_PACKET_FORMAT;
  uint64_t pool = 0;
  if (k->kernarg &&
      (!in_allocation(reinterpret_cast<uintptr_t>(p.kernarg_address), k->kernarg, &pool) || pool != kSystemPool))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  // The hidden arguments hold what the packet says (a kernel reading them
  // would compute with zeros otherwise: refused here as a queue error).
  const auto *args = static_cast<const uint8_t *>(p.kernarg_address);
  const uint32_t grid[3] = {p.grid_size_x, p.grid_size_y, p.grid_size_z};
  const uint16_t group[3] = {p.workgroup_size_x, p.workgroup_size_y, p.workgroup_size_z};
  for (const auto &h : k->hidden) {
    uint64_t got = 0, want = 0;
    if (h.offset + h.size > k->kernarg || h.size > 8) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
    std::memcpy(&got, args + h.offset, h.size);
    const std::string &kind = h.value_kind;
    const int axis = kind.back() - 'x';
    if (kind.rfind("hidden_block_count_", 0) == 0)
      want = (grid[axis] + group[axis] - 1) / group[axis];
    else if (kind.rfind("hidden_group_size_", 0) == 0)
      want = group[axis];
    else if (kind.rfind("hidden_remainder_", 0) == 0)
      want = grid[axis] % group[axis];
    else if (kind == "hidden_grid_dims")
      want = dims;
    else if (kind == "hidden_dynamic_lds_size")
      want = p.group_segment_size - std::min<uint32_t>(p.group_segment_size, (k->group + 15u) & ~15u);
    else
      continue;  // offsets, queue and buffer pointers: 0 or the runtime's business
    if (got != want) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  (void)q;
  return HSA_STATUS_SUCCESS;
}

// hsa_amd_profiling_get_dispatch_time: "the completion signal of the
// dispatch packet" -- only dispatch packets are stamped.
void complete(FQueue *q, hsa_signal_t s, uint64_t start, bool dispatch) {
  if (!s.handle) return;
  FSignal *f = sig(s);
  if (!f) return report(q, HSA_STATUS_ERROR_INVALID_SIGNAL);
  if (q->profiling && dispatch) {
    f->start_ts = start;
    f->end_ts = now_ns();
  }
  signal_add(f, -1);
}

// The memory fault of the test hook, as ROCr handles one: the registered
// system event handler, or abort().
// FAKE_HSA_FAULTING_KERNELS (symbol names, with or without ".kd").
static bool faulting_kernel(const std::string &name) {
  static const std::string list = [] {
    const char *v = std::getenv("FAKE_HSA_FAULTING_KERNELS");
    return std::string(",") + (v ? v : "") + ",";
  }();
  const std::string bare = name.size() > 3 && name.compare(name.size() - 3, 3, ".kd") == 0 ? name.substr(0, name.size() - 3) : name;
  return list.find("," + bare + ",") != std::string::npos;
}

void memory_fault(FQueue *q, uint64_t address) {
  if (!g_event_handler) {
    std::fprintf(stderr,
                 "Memory access fault by GPU node-%llu (Agent handle: 0x%llx) on address 0x%llx. Reason: Page not "
                 "present or supervisor privilege.\n",
                 static_cast<unsigned long long>(q->agent.handle), static_cast<unsigned long long>(q->agent.handle),
                 static_cast<unsigned long long>(address));
    std::abort();
  }
  hsa_amd_event_t e{};
  e.event_type = HSA_AMD_GPU_MEMORY_FAULT_EVENT;
  e.memory_fault.agent = q->agent;
  e.memory_fault.virtual_address = address;
  e.memory_fault.fault_reason_mask = HSA_AMD_MEMORY_FAULT_PAGE_NOT_PRESENT;
  q->suspended = true;
  g_event_handler(&e, g_event_data);
}

void consume(FQueue *q) {
  FSignal *doorbell = reinterpret_cast<FSignal *>(q->q.doorbell_signal.handle);
  for (;;) {
    const uint64_t index = q->read_index.load();
    signal_wait(doorbell, HSA_SIGNAL_CONDITION_GTE, int64_t(index), &q->stop);
    if (q->stop.load() && doorbell->value.load() < int64_t(index)) return;
    if (q->suspended) {  // an errored queue processes nothing more
      signal_wait(doorbell, HSA_SIGNAL_CONDITION_LT, INT64_MIN, &q->stop);
      return;
    }
    uint8_t *slot = q->ring + (index & (q->q.size - 1)) * 64;
    const uint32_t first = __atomic_load_n(reinterpret_cast<uint32_t *>(slot), __ATOMIC_ACQUIRE);
    const uint16_t type = first & 0xff;
    const uint64_t start = now_ns();
    if (type == HSA_PACKET_TYPE_INVALID) {  // the doorbell ran ahead of the header: look again
      std::this_thread::yield();
      continue;
    }
    hsa_signal_t completion{};
    std::memcpy(&completion, slot + 56, sizeof completion);  // the same offset in both packet types
    if (const uint64_t address = g_fault_address.exchange(0)) {
      memory_fault(q, address);
      continue;
    }
    if (!((first >> HSA_PACKET_HEADER_BARRIER) & 1)) {
      report_packet(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, completion);
      continue;
    }
    if (type == HSA_PACKET_TYPE_BARRIER_AND) {
      hsa_barrier_and_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      bool failed = false;
      for (const hsa_signal_t &d : p.dep_signal) {
        if (!d.handle) continue;
        FSignal *f = sig(d);
        if (!f) {
          failed = true;
          report_packet(q, HSA_STATUS_ERROR_INVALID_SIGNAL, p.completion_signal);
          break;
        }
        if (signal_wait(f, HSA_SIGNAL_CONDITION_LT, 1, &q->stop) < 0) {  // a failed dependency
          failed = true;
          report_packet(q, HSA_STATUS_ERROR, p.completion_signal);
          break;
        }
        if (q->stop.load()) return;
      }
      if (failed) continue;
      if (g_fail_next_packet.exchange(false)) {  // the test hook: this packet errs when it runs
        report_packet(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, p.completion_signal);
        continue;
      }
      complete(q, p.completion_signal, start, false);
    } else if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH) {
      hsa_kernel_dispatch_packet_t p;
      std::memcpy(&p, slot, sizeof p);
      const hsa_status_t st = g_fail_next_packet.exchange(false) ? HSA_STATUS_ERROR_INVALID_PACKET_FORMAT
                                                                 : check_dispatch(q, p);
      if (st != HSA_STATUS_SUCCESS) {
        report_packet(q, st, p.completion_signal);
        continue;
      }
      if (faulting_kernel(reinterpret_cast<const KernelObject *>(p.kernel_object)->name)) {
        memory_fault(q, uint64_t(0x7f0000000000));
        continue;
      }
      {
        std::lock_guard<std::mutex> lock(g_dispatch_mu);
        g_last_dispatch = p;
        const auto *k = reinterpret_cast<const KernelObject *>(p.kernel_object);
        const auto *args = static_cast<const uint8_t *>(p.kernarg_address);
        g_last_kernarg.assign(args, args + k->kernarg);
        ++g_dispatch_count;
      }
      complete(q, p.completion_signal, start, true);
    } else {
      report_packet(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, completion);
      continue;
    }
    __atomic_store_n(reinterpret_cast<uint32_t *>(slot), uint32_t(HSA_PACKET_TYPE_INVALID), __ATOMIC_RELEASE);
    q->read_index.store(index + 1);
  }
}

// ---- the copy engine --------------------------------------------------------------------
struct CopyJob {
  void *dst;
  const void *src;
  size_t size;
  std::vector<FSignal *> deps;
  FSignal *done;
  bool profiled = false;
};
std::atomic<bool> g_copy_profiling{false};  // hsa_amd_profiling_async_copy_enable
std::mutex &g_copy_mu = *new std::mutex;
std::condition_variable &g_copy_cv = *new std::condition_variable;
std::deque<CopyJob> &g_copies = *new std::deque<CopyJob>;
std::thread *g_copy_thread = nullptr;  // the runtime's thread: joined by the last hsa_shut_down, never destroyed at exit
bool g_copy_stop = false;

void copy_main() {
  for (;;) {
    CopyJob job;
    {
      std::unique_lock<std::mutex> lock(g_copy_mu);
      g_copy_cv.wait(lock, [] { return g_copy_stop || !g_copies.empty(); });
      if (g_copies.empty()) return;
      job = g_copies.front();
      g_copies.pop_front();
    }
    bool failed = g_fail_next_copy.exchange(false);
    for (FSignal *d : job.deps)
      if (signal_wait(d, HSA_SIGNAL_CONDITION_LT, 1) < 0) failed = true;  // a failed dependency fails the copy
    if (failed) {
      signal_set(job.done, -1);  // "setting the value of the completion signal to a negative number"
      continue;
    }
    const uint64_t start = now_ns();
    std::memmove(job.dst, job.src, job.size);
    if (job.profiled) {  // "if the async copy profiling is enabled prior to the call"
      job.done->start_ts = start;
      job.done->end_ts = now_ns();
    }
    signal_add(job.done, -1);
  }
}

const char *status_text(hsa_status_t s) {
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

#define NEED_INIT \
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED

}  // namespace

// ---- the API ----------------------------------------------------------------------------------

EXPORT hsa_status_t hsa_init() {
  if (const char *f = std::getenv("FAKE_HSA_INIT_FAIL")) return hsa_status_t(std::strtol(f, nullptr, 0));
  FAULT(hsa_init);
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_init++ == 0) {
    std::lock_guard<std::mutex> clock(g_copy_mu);
    g_copy_stop = false;
    g_copy_thread = new std::thread(copy_main);
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_shut_down() {
  std::thread *t = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
    if (--g_init > 0) return HSA_STATUS_SUCCESS;
    g_event_handler = nullptr;  // the runtime's state goes, its handlers with it
    g_event_data = nullptr;
    std::lock_guard<std::mutex> clock(g_copy_mu);
    g_copy_stop = true;
    std::swap(t, g_copy_thread);
  }
  g_copy_cv.notify_all();
  if (t) {
    t->join();
    delete t;
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_status_string(hsa_status_t s, const char **out) {
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const char *t = status_text(s);
  if (!t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *out = t;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_system_get_info(hsa_system_info_t what, void *value) {
  NEED_INIT;
  if (!value || what != HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *static_cast<uint64_t *>(value) = 1000000000ull;  // the fake's timestamps are nanoseconds
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_iterate_agents(AgentCallback cb, void *data) {
  NEED_INIT;
  FAULT(hsa_iterate_agents);
  if (!cb) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (hsa_status_t s = cb(hsa_agent_t{kCpuAgent}, data); s != HSA_STATUS_SUCCESS) return s;
  for (uint64_t i = 0; i < g_gpus; ++i)
    if (hsa_status_t s = cb(hsa_agent_t{kGpuAgentBase + i}, data); s != HSA_STATUS_SUCCESS) return s;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_agent_get_info(hsa_agent_t agent, hsa_agent_info_t what, void *value) {
  NEED_INIT;
  FAULT(hsa_agent_get_info);
  if (!is_agent(agent) || !value) return HSA_STATUS_ERROR_INVALID_AGENT;
  const bool gpu = is_gpu(agent);
  auto str = [&](const char *s) {
    std::memset(value, 0, 64);
    std::strncpy(static_cast<char *>(value), s, 63);
    return HSA_STATUS_SUCCESS;
  };
  auto u32 = [&](uint32_t v) {
    *static_cast<uint32_t *>(value) = v;
    return HSA_STATUS_SUCCESS;
  };
  switch (what) {
    case HSA_AGENT_INFO_NAME:
      return str(gpu ? g_isas[size_t(agent.handle - kGpuAgentBase)].c_str() : "gpuhal fake CPU");
    case HSA_AGENT_INFO_VENDOR_NAME:
      return str(gpu ? "AMD" : "CPU");
    case HSA_AGENT_INFO_DEVICE:
      return u32(gpu ? uint32_t(HSA_DEVICE_TYPE_GPU) : uint32_t(HSA_DEVICE_TYPE_CPU));
    case HSA_AMD_AGENT_INFO_PRODUCT_NAME:
      return str(gpu ? "gpuhal fake HSA GPU" : "gpuhal fake CPU");
    default:
      break;
  }
  if (!gpu) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_AGENT_INFO_WAVEFRONT_SIZE:
      return u32(64);
    case HSA_AGENT_INFO_WORKGROUP_MAX_SIZE:
      return u32(1024);
    case HSA_AGENT_INFO_WORKGROUP_MAX_DIM: {
      uint16_t *d = static_cast<uint16_t *>(value);
      d[0] = d[1] = d[2] = 1024;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_GRID_MAX_DIM: {
      hsa_dim3_t *d = static_cast<hsa_dim3_t *>(value);
      d->x = d->y = d->z = UINT32_MAX;
      return HSA_STATUS_SUCCESS;
    }
    case HSA_AGENT_INFO_QUEUE_MAX_SIZE:
      return u32(131072);
    case HSA_AMD_AGENT_INFO_COMPUTE_UNIT_COUNT:
      return u32(104);
    case HSA_AMD_AGENT_INFO_MAX_CLOCK_FREQUENCY:
      return u32(1700);
    case HSA_AMD_AGENT_INFO_BDFID:
      return u32(uint32_t((0x43 + agent.handle - kGpuAgentBase) << 8));
    case HSA_AMD_AGENT_INFO_DOMAIN:
      return u32(0);
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

EXPORT hsa_status_t hsa_amd_agent_iterate_memory_pools(hsa_agent_t agent, PoolCallback cb, void *data) {
  NEED_INIT;
  FAULT(hsa_amd_agent_iterate_memory_pools);
  if (!is_agent(agent) || !cb) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!is_gpu(agent)) return cb(hsa_amd_memory_pool_t{kSystemPool}, data);
  const uint64_t i = agent.handle - kGpuAgentBase;
  if (hsa_status_t s = cb(hsa_amd_memory_pool_t{kDevicePoolBase + i}, data); s != HSA_STATUS_SUCCESS) return s;
  return cb(hsa_amd_memory_pool_t{kGroupPoolBase + i}, data);
}

EXPORT hsa_status_t hsa_amd_memory_pool_get_info(hsa_amd_memory_pool_t pool, hsa_amd_memory_pool_info_t what,
                                                 void *value) {
  NEED_INIT;
  if (!value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const bool system = pool.handle == kSystemPool;
  const bool device = pool.handle >= kDevicePoolBase && pool.handle < kDevicePoolBase + g_gpus;
  const bool group = pool.handle >= kGroupPoolBase && pool.handle < kGroupPoolBase + g_gpus;
  if (!system && !device && !group) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_AMD_MEMORY_POOL_INFO_SEGMENT:
      *static_cast<hsa_amd_segment_t *>(value) = group ? HSA_AMD_SEGMENT_GROUP : HSA_AMD_SEGMENT_GLOBAL;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS:
      *static_cast<uint32_t *>(value) =
          system   ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED | HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT
          : device ? HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED
                   : 0u;
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_SIZE:
      *static_cast<size_t *>(value) = group ? kLdsBytes : device ? g_device_memory : (uint64_t(64) << 30);
      return HSA_STATUS_SUCCESS;
    case HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED:
      *static_cast<bool *>(value) = !group;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

EXPORT hsa_status_t hsa_amd_memory_pool_allocate(hsa_amd_memory_pool_t pool, size_t size, uint32_t flags, void **ptr) {
  NEED_INIT;
  FAULT(hsa_amd_memory_pool_allocate);
  const bool system = pool.handle == kSystemPool;
  const bool device = pool.handle >= kDevicePoolBase && pool.handle < kDevicePoolBase + g_gpus;
  if ((!system && !device) || !ptr || size == 0 || flags != 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (device && g_pool_used[pool.handle] + size > g_device_memory) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  // Fine-grained system memory is pinned: there is only so much of it.
  if (system && g_pool_used[pool.handle] + size > g_system_memory) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  if (system) ++g_system_allocations;
  void *p = nullptr;
  if (posix_memalign(&p, 4096, size) != 0) return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  std::memset(p, 0xCD, size);  // not zeroed, as on a GPU
  g_allocations[reinterpret_cast<uintptr_t>(p)] = {size, pool.handle};
  g_pool_used[pool.handle] += size;
  *ptr = p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_pool_free(void *ptr) {
  NEED_INIT;
  FAULT(hsa_amd_memory_pool_free);
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == g_allocations.end()) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  g_pool_used[it->second.pool] -= it->second.size;
  g_allocations.erase(it);
  std::free(ptr);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_agents_allow_access(uint32_t n, const hsa_agent_t *agents, const uint32_t *flags,
                                                const void *ptr) {
  NEED_INIT;
  FAULT(hsa_amd_agents_allow_access);
  if (n == 0 || !agents || flags) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (uint32_t i = 0; i < n; ++i)
    if (!is_agent(agents[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  std::lock_guard<std::mutex> lock(g_mu);
  return g_allocations.count(reinterpret_cast<uintptr_t>(ptr)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_amd_memory_lock(void *host, size_t size, hsa_agent_t *agents, int n, void **agent_ptr) {
  NEED_INIT;
  FAULT(hsa_amd_memory_lock);
  if (!host || size == 0 || !agent_ptr || (n > 0 && !agents)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (int i = 0; i < n; ++i)
    if (!is_gpu(agents[i])) return HSA_STATUS_ERROR_INVALID_AGENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_locked.emplace(reinterpret_cast<uintptr_t>(host), size).second) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  *agent_ptr = host;  // host memory is directly addressable in the fake
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_unlock(void *host) {
  NEED_INIT;
  FAULT(hsa_amd_memory_unlock);
  std::lock_guard<std::mutex> lock(g_mu);
  return g_locked.erase(reinterpret_cast<uintptr_t>(host)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_memory_register(void *p, size_t size) {
  NEED_INIT;
  FAULT(hsa_memory_register);
  if (!p || size == 0) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  g_registered[reinterpret_cast<uintptr_t>(p)] = size;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_memory_deregister(void *p, size_t) {
  NEED_INIT;
  FAULT(hsa_memory_deregister);
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered.erase(reinterpret_cast<uintptr_t>(p)) ? HSA_STATUS_SUCCESS : HSA_STATUS_ERROR_INVALID_ARGUMENT;
}

EXPORT hsa_status_t hsa_signal_create(hsa_signal_value_t initial, uint32_t, const hsa_agent_t *, hsa_signal_t *out) {
  NEED_INIT;
  FAULT(hsa_signal_create);
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto *s = new FSignal;
  s->value.store(initial);
  std::lock_guard<std::mutex> lock(g_sig_mu);
  g_signals.insert(s);
  out->handle = reinterpret_cast<uint64_t>(s);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_signal_destroy(hsa_signal_t s) {
  auto *p = reinterpret_cast<FSignal *>(s.handle);
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    if (!g_signals.erase(p)) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  }
  delete p;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_signal_value_t hsa_signal_load_scacquire(hsa_signal_t s) {
  FSignal *f = sig(s);
  return f ? f->value.load() : 0;
}

EXPORT void hsa_signal_store_screlease(hsa_signal_t s, hsa_signal_value_t v) {
  if (FSignal *f = sig(s)) signal_set(f, v);
}

// The timeout hint is in timestamp ticks (HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY:
// 1 GHz here); UINT64_MAX waits for ever.
EXPORT hsa_signal_value_t hsa_signal_wait_scacquire(hsa_signal_t s, hsa_signal_condition_t c, hsa_signal_value_t x,
                                                    uint64_t timeout, hsa_wait_state_t) {
  FSignal *f = sig(s);
  if (!f) return 0;
  if (timeout == UINT64_MAX) return signal_wait(f, c, x);
  return signal_wait_for(f, c, x, std::chrono::nanoseconds(std::min<uint64_t>(timeout, uint64_t(INT64_MAX))));
}

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                     hsa_queue_callback callback, void *data, uint32_t, uint32_t, hsa_queue_t **out) {
  NEED_INIT;
  FAULT(hsa_queue_create);
  if (!is_gpu(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (!out || size == 0 || (size & (size - 1)) || size > 131072 || type > HSA_QUEUE_TYPE_SINGLE)
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto *q = new FQueue;
  void *ring = nullptr;
  if (posix_memalign(&ring, 64, size_t(size) * 64) != 0) {
    delete q;
    return HSA_STATUS_ERROR_OUT_OF_RESOURCES;
  }
  q->ring = static_cast<uint8_t *>(ring);
  for (uint32_t i = 0; i < size; ++i) {
    std::memset(q->ring + size_t(i) * 64, 0, 64);
    q->ring[size_t(i) * 64] = HSA_PACKET_TYPE_INVALID;
  }
  hsa_signal_create(-1, 0, nullptr, &q->q.doorbell_signal);
  q->q.type = type;
  q->q.base_address = ring;
  q->q.size = size;
  q->q.id = reinterpret_cast<uintptr_t>(q);
  q->callback = callback;
  q->data = data;
  q->agent = agent;
  q->consumer = std::thread(consume, q);
  std::lock_guard<std::mutex> lock(g_mu);
  g_queues.insert(q);
  *out = &q->q;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_queue_destroy(hsa_queue_t *queue) {
  auto *q = reinterpret_cast<FQueue *>(queue);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_queues.erase(q)) return HSA_STATUS_ERROR_INVALID_QUEUE;
  }
  {
    std::lock_guard<std::mutex> lock(g_sig_mu);
    q->stop.store(true);
  }
  g_sig_cv.notify_all();
  q->consumer.join();
  hsa_signal_destroy(q->q.doorbell_signal);
  std::free(q->ring);
  delete q;
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t hsa_queue_add_write_index_scacq_screl(const hsa_queue_t *queue, uint64_t v) {
  return reinterpret_cast<FQueue *>(const_cast<hsa_queue_t *>(queue))->write_index.fetch_add(v);
}

EXPORT uint64_t hsa_queue_load_read_index_scacquire(const hsa_queue_t *queue) {
  return reinterpret_cast<FQueue *>(const_cast<hsa_queue_t *>(queue))->read_index.load();
}

EXPORT hsa_status_t hsa_amd_profiling_set_profiler_enabled(hsa_queue_t *queue, int enable) {
  NEED_INIT;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *q = reinterpret_cast<FQueue *>(queue);
  if (!g_queues.count(q)) return HSA_STATUS_ERROR_INVALID_QUEUE;
  q->profiling = enable != 0;  // before any packet (the plugin enables it at creation)
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t agent, hsa_signal_t s,
                                                        hsa_amd_profiling_dispatch_time_t *t) {
  NEED_INIT;
  FSignal *f = sig(s);
  if (!is_gpu(agent) || !t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = f->start_ts;
  t->end = f->end_ts;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_async_copy(void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                                              size_t size, uint32_t ndeps, const hsa_signal_t *deps,
                                              hsa_signal_t completion) {
  NEED_INIT;
  FAULT(hsa_amd_memory_async_copy);
  if (!dst || !src || !is_agent(dst_agent) || !is_agent(src_agent) || (ndeps && !deps))
    return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  CopyJob job{dst, src, size, {}, sig(completion), g_copy_profiling.load()};
  if (!job.done) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  for (uint32_t i = 0; i < ndeps; ++i) {
    FSignal *d = sig(deps[i]);
    if (!d) return HSA_STATUS_ERROR_INVALID_SIGNAL;
    job.deps.push_back(d);
  }
  {
    // Both sides must be memory the copy engines can reach: pool memory or
    // locked / registered host memory (pageable memory faults on a GPU).
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto [p, agent] : {std::make_pair(uintptr_t(dst), dst_agent), std::make_pair(uintptr_t(src), src_agent)})
      if (!in_allocation(p, size) && !(agent.handle == kCpuAgent && in_host_accessible(p, size)))
        return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  {
    std::lock_guard<std::mutex> lock(g_copy_mu);
    g_copies.push_back(std::move(job));
  }
  g_copy_cv.notify_one();
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_async_copy_enable(bool enable) {
  NEED_INIT;
  FAULT(hsa_amd_profiling_async_copy_enable);
  g_copy_profiling = enable;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_get_async_copy_time(hsa_signal_t s, hsa_amd_profiling_async_copy_time_t *t) {
  NEED_INIT;
  FAULT(hsa_amd_profiling_get_async_copy_time);
  FSignal *f = sig(s);
  if (!t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = f->start_ts;
  t->end = f->end_ts;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_memory_fill(void *ptr, uint32_t value, size_t count) {
  NEED_INIT;
  FAULT(hsa_amd_memory_fill);
  if (!ptr || (reinterpret_cast<uintptr_t>(ptr) & 3)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!in_allocation(reinterpret_cast<uintptr_t>(ptr), uint64_t(count) * 4)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
  auto *w = static_cast<uint32_t *>(ptr);
  for (size_t i = 0; i < count; ++i) w[i] = value;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_create_from_memory(const void *bytes, size_t size,
                                                              hsa_code_object_reader_t *out) {
  NEED_INIT;
  FAULT(hsa_code_object_reader_create_from_memory);
  if (!bytes || !size || !out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  const auto *b = static_cast<const uint8_t *>(bytes);
  if (size < 64 ||
      std::memcmp(b,
                  "\x7f"
                  "ELF",
                  4) != 0 ||
      b[18] != 224)
    return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  auto *r = new Reader{std::vector<uint8_t>(b, b + size)};
  std::lock_guard<std::mutex> lock(g_mu);
  g_readers.insert(r);
  out->handle = reinterpret_cast<uint64_t>(r);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_code_object_reader_destroy(hsa_code_object_reader_t reader) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto *r = reinterpret_cast<Reader *>(reader.handle);
  if (!g_readers.erase(r)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  delete r;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_create_alt(hsa_profile_t, hsa_default_float_rounding_mode_t, const char *,
                                              hsa_executable_t *out) {
  NEED_INIT;
  FAULT(hsa_executable_create_alt);
  if (!out) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  auto *e = new Executable;
  std::lock_guard<std::mutex> lock(g_mu);
  g_executables.insert(e);
  out->handle = reinterpret_cast<uint64_t>(e);
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_load_agent_code_object(hsa_executable_t exec, hsa_agent_t agent,
                                                          hsa_code_object_reader_t reader, const char *,
                                                          hsa_loaded_code_object_t *) {
  NEED_INIT;
  FAULT(hsa_executable_load_agent_code_object);
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  auto *r = reinterpret_cast<Reader *>(reader.handle);
  if (!g_executables.count(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!g_readers.count(r)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER;
  if (!is_gpu(agent)) return HSA_STATUS_ERROR_INVALID_AGENT;
  if (e->frozen) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  // A code object runs only on the ISA it was built for (EF_AMDGPU_MACH in
  // the ELF header's e_flags, LLVM's values).
  uint32_t flags = 0;
  if (!rd(r->bytes, 48, &flags)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  const std::pair<uint32_t, const char *> machs[] = {{0x2c, "gfx900"},  {0x2f, "gfx906"},  {0x30, "gfx908"},
                                                     {0x3f, "gfx90a"},  {0x4c, "gfx942"},  {0x36, "gfx1030"},
                                                     {0x41, "gfx1100"}, {0x4e, "gfx1201"}};
  const char *built_for = nullptr;
  for (const auto &m : machs)
    if ((flags & 0xffu) == m.first) built_for = m.second;
  if (!built_for || g_isas[size_t(agent.handle - kGpuAgentBase)] != built_for) return HSA_STATUS_ERROR_INVALID_ISA;
  std::vector<std::unique_ptr<KernelObject>> kernels;
  if (!read_kernels(r->bytes, &kernels)) return HSA_STATUS_ERROR_INVALID_CODE_OBJECT;
  gpuhal::hsa::CodeObjectMetadata md;
  std::string why;
  if (gpuhal::hsa::read_code_object_metadata(r->bytes.data(), r->bytes.size(), &md, &why))
    for (auto &k : kernels)
      for (const auto &km : md.kernels)
        if (km.symbol == k->name)
          for (const auto &a : km.args)
            if (a.value_kind.rfind("hidden_", 0) == 0) k->hidden.push_back(a);
  for (auto &k : kernels) {
    g_kernel_objects.insert(k.get());
    e->kernels.push_back(std::move(k));
  }
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_freeze(hsa_executable_t exec, const char *) {
  NEED_INIT;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.count(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  e->frozen = true;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_destroy(hsa_executable_t exec) {
  FAULT(hsa_executable_destroy);
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.erase(e)) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  for (auto &k : e->kernels) g_kernel_objects.erase(k.get());
  delete e;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_executable_get_symbol_by_name(hsa_executable_t exec, const char *name, const hsa_agent_t *agent,
                                                      hsa_executable_symbol_t *out) {
  NEED_INIT;
  FAULT(hsa_executable_get_symbol_by_name);
  std::lock_guard<std::mutex> lock(g_mu);
  auto *e = reinterpret_cast<Executable *>(exec.handle);
  if (!g_executables.count(e) || !e->frozen) return HSA_STATUS_ERROR_INVALID_EXECUTABLE;
  if (!name || !out || !agent || !is_gpu(*agent)) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  for (auto &k : e->kernels)
    if (k->name == name) {
      out->handle = reinterpret_cast<uint64_t>(k.get());
      return HSA_STATUS_SUCCESS;
    }
  return HSA_STATUS_ERROR_INVALID_SYMBOL_NAME;
}

EXPORT hsa_status_t hsa_executable_symbol_get_info(hsa_executable_symbol_t symbol, hsa_executable_symbol_info_t what,
                                                   void *value) {
  NEED_INIT;
  std::lock_guard<std::mutex> lock(g_mu);
  const auto *k = reinterpret_cast<const KernelObject *>(symbol.handle);
  if (!g_kernel_objects.count(k) || !value) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  switch (what) {
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT:
      *static_cast<uint64_t *>(value) = reinterpret_cast<uint64_t>(k);
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_KERNARG_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->kernarg;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_GROUP_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->group;
      return HSA_STATUS_SUCCESS;
    case HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_PRIVATE_SEGMENT_SIZE:
      *static_cast<uint32_t *>(value) = k->priv;
      return HSA_STATUS_SUCCESS;
    default:
      return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  }
}

// ---- test hooks ----------------------------------------------------------------------------

// Makes the k-th call (from now) of `symbol` fail with `status`.
EXPORT hsa_status_t hsa_amd_register_system_event_handler(hsa_amd_system_event_callback_t callback, void *data) {
  NEED_INIT;
  FAULT(hsa_amd_register_system_event_handler);
  if (!callback) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_event_handler) return HSA_STATUS_ERROR;  // "An event handler has already been registered"
  g_event_handler = callback;
  g_event_data = data;
  return HSA_STATUS_SUCCESS;
}

EXPORT uint64_t fake_hsa_system_pool_allocations() {
  return g_system_allocations.load();
}

EXPORT void fake_hsa_fail_next_copy() {
  g_fail_next_copy = true;
}
EXPORT void fake_hsa_fail_next_packet() {
  g_fail_next_packet = true;
}
EXPORT void fake_hsa_memory_fault_next_packet(uint64_t address) {
  g_fault_address = address;
}

EXPORT void fake_hsa_fail(const char *symbol, long k, int status) {
  g_faults.add(symbol, k, status);
}

EXPORT void fake_hsa_clear_faults() {
  g_faults.clear();
}

// The last valid dispatch packet and up to `cap` bytes of its kernel
// arguments; returns how many dispatches were recorded.
EXPORT uint64_t fake_hsa_last_dispatch(hsa_kernel_dispatch_packet_t *packet, void *kernarg, size_t cap,
                                       size_t *kernarg_size) {
  std::lock_guard<std::mutex> lock(g_dispatch_mu);
  if (packet) *packet = g_last_dispatch;
  if (kernarg && !g_last_kernarg.empty())
    std::memcpy(kernarg, g_last_kernarg.data(), std::min(cap, g_last_kernarg.size()));
  if (kernarg_size) *kernarg_size = g_last_kernarg.size();
  return g_dispatch_count;
}

// Live allocations, signals, queues and executables (leak checks).
EXPORT void fake_hsa_live_objects(size_t *allocations, size_t *signals, size_t *queues, size_t *executables) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (allocations) *allocations = g_allocations.size() + g_locked.size() + g_registered.size();
    if (queues) *queues = g_queues.size();
    if (executables) *executables = g_executables.size() + g_readers.size();
  }
  std::lock_guard<std::mutex> lock(g_sig_mu);
  if (signals) *signals = g_signals.size();
}

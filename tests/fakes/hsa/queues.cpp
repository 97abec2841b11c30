// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The fake runtime: AQL queues and the packet processor that consumes them
// (barrier-AND packets wait, dispatch packets are validated and recorded, not
// executed).
#include "fake_hsa.hpp"

using namespace fake_hsa;

namespace fake_hsa {

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
    {
      // The header's fence scopes: two bits each, values 0 to 2 (hsa.h).
      const uint32_t acquire = (first >> HSA_PACKET_HEADER_SCACQUIRE_FENCE_SCOPE) & 3,
                     release = (first >> HSA_PACKET_HEADER_SCRELEASE_FENCE_SCOPE) & 3;
      if (acquire > 2 || release > 2) {
        std::memcpy(&completion, slot + 56, sizeof completion);
        report_packet(q, HSA_STATUS_ERROR_INVALID_PACKET_FORMAT, completion);
        continue;
      }
      if (type == HSA_PACKET_TYPE_KERNEL_DISPATCH || type == HSA_PACKET_TYPE_BARRIER_AND) {
        std::lock_guard<std::mutex> lock(g_dispatch_mu);
        ++g_fence_counts[type == HSA_PACKET_TYPE_KERNEL_DISPATCH ? 0 : 1][acquire][release];
      }
    }
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


}  // namespace fake_hsa

EXPORT hsa_status_t hsa_queue_create(hsa_agent_t agent, uint32_t size, hsa_queue_type32_t type,
                                     hsa_queue_callback callback, void *data, uint32_t, uint32_t, hsa_queue_t **out) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  if (const hsa_status_t f = injected("hsa_queue_create"); f != HSA_STATUS_SUCCESS) return f;
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
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *q = reinterpret_cast<FQueue *>(queue);
  if (!g_queues.count(q)) return HSA_STATUS_ERROR_INVALID_QUEUE;
  q->profiling = enable != 0;  // before any packet (the plugin enables it at creation)
  return HSA_STATUS_SUCCESS;
}

// hsa_ext_amd.h: "HSA_STATUS_ERROR_INVALID_QUEUE if queue is not a valid
// compute queue handle. HSA_STATUS_ERROR_INVALID_ARGUMENT if priority is not
// a valid value from hsa_amd_queue_priority_t" (LOW 0, NORMAL 1, HIGH 2).
// Every fake queue has a consumer thread of its own: a greater-priority
// queue's packets are never behind another queue's.
EXPORT hsa_status_t hsa_amd_queue_set_priority(hsa_queue_t *queue, int priority) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(g_mu);
  auto *q = reinterpret_cast<FQueue *>(queue);
  if (!g_queues.count(q)) return HSA_STATUS_ERROR_INVALID_QUEUE;
  if (priority < 0 || priority > 2) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  q->priority = priority;
  return HSA_STATUS_SUCCESS;
}

EXPORT hsa_status_t hsa_amd_profiling_get_dispatch_time(hsa_agent_t agent, hsa_signal_t s,
                                                        hsa_amd_profiling_dispatch_time_t *t) {
  if (g_init == 0) return HSA_STATUS_ERROR_NOT_INITIALIZED;
  FSignal *f = sig(s);
  if (!is_gpu(agent) || !t) return HSA_STATUS_ERROR_INVALID_ARGUMENT;
  if (!f) return HSA_STATUS_ERROR_INVALID_SIGNAL;
  t->start = f->start_ts;
  t->end = f->end_ts;
  return HSA_STATUS_SUCCESS;
}


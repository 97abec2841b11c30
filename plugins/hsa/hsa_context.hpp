// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// The hsa plugin's objects and the helpers its entry files share
// (hsa_plugin.cpp: devices, contexts, memory; hsa_streams.cpp: streams,
// transfers, events; hsa_kernels.cpp: device code).
//
// Stream model. A stream is an AQL queue plus the completion signal of the
// last operation submitted to it. Every operation depends on that signal, so
// a stream's work runs in order and its last signal reaching 0 means all of
// it completed:
//  - packets on the stream's queue (kernel dispatches, event markers,
//    barriers) carry the barrier bit, which orders them after the queue's
//    earlier packets; when the previous operation was not a packet (an async
//    copy, a host operation) or other streams must be waited for, barrier-AND
//    packets carrying those signals go first (five per packet, chained);
//  - copies are hsa_amd_memory_async_copy calls whose dependency list holds
//    the same signals;
//  - host operations (callbacks, memsets, the second half of a copy into
//    pageable memory) run on the context's host-operation thread, in
//    submission order, each after its dependency signal reached 0.
// Signals are reference-counted: an operation keeps the signals it depends
// on until it has completed (a packet must not outlive a signal it names);
// completed operations are reaped by the next submission or synchronisation
// on their stream.
//
// Locking: one mutex per context guards its streams, events, allocations
// and modules, and is held while submitting (the legacy default stream
// reads every blocking stream's last signal). Waits happen without it.
//
// Errors (ROCr's rules, hsa_ext_amd.h): a failed async copy sets its
// completion signal negative; a queue that errs is suspended and the
// completion signals of its packets are never decremented (or, in newer
// ROCr, set negative); a GPU memory fault goes to the process's system
// event handler. So every wait is for "less than 1", a negative value is
// an error, and waits give up when the context has failed: the queue error
// callback and the system event handler mark the context failed
// (fail_context), and a waiter sees that within one wait slice. A failed
// context stays failed until it is destroyed (Context::reset()): every
// synchronising call and every submission returns ERROR_LAUNCH_FAILED
// naming the first failure.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "capture_book.hpp"
#include "hsa_code_object.hpp"
#include "hsa_runtime.hpp"
#include "plugin_support.hpp"

namespace gpuhal::hsa {

using plugin::fail;
using plugin::guard;

// One hsa_signal_t. With the last reference it goes back to a process-wide
// pool (creating a signal costs a kernel call on ROCr; operations make one
// each), from which make_signal takes it again; the pool is destroyed at
// shutdown. Only completed signals are released: every operation keeps the
// signals its packets or copies name until it has completed.
struct Signal {
  hsa_signal_t handle{};
  Signal() = default;
  Signal(const Signal &) = delete;
  Signal &operator=(const Signal &) = delete;
  ~Signal();
  // Completion signals start at 1; the operation sets them to 0, or to a
  // negative value when it failed. Done means either.
  bool done() const { return rt().hsa_signal_load_scacquire(handle) < 1; }
  bool failed() const { return rt().hsa_signal_load_scacquire(handle) < 0; }
  // Until the value is below 1, or `give_up` is set (checked once per wait
  // slice, see set_wait_slice).
  void wait(const std::atomic<bool> *give_up = nullptr) const;
};
using SignalRef = std::shared_ptr<Signal>;
// A signal with `initial` value (a pooled one when there is one).
gpuhal_status_t make_signal(int64_t initial, SignalRef *out);
// Destroys the pooled signals (shutdown).
void drain_signal_pool();
// Keeps a signal that may still be written by the runtime out of the pool
// for ever (an operation of a failed context that never completed).
void quarantine_signal(SignalRef s);
// The length of one wait slice, from the runtime's timestamp frequency.
void set_wait_slice(uint64_t timestamp_frequency);

// A GPU agent the plugin reports as a device, and what was learnt of it at
// init.
struct Device {
  hsa_agent_t agent{};
  std::string isa_name;                 // HSA_AGENT_INFO_NAME: "gfx90a"
  hsa_amd_memory_pool_t device_pool{};  // coarse-grained global: device arrays
  uint64_t device_pool_size = 0;
  uint64_t lds_size = 0;  // the group segment pool's size
  uint32_t max_workgroup_size = 0;
  uint16_t max_workgroup_dim[3] = {0, 0, 0};
  uint32_t wavefront_size = 0;
  uint32_t max_waves_per_cu = 0;  // AMD's extension (0: the runtime does not say)
  uint32_t simds_per_cu = 0;      // AMD's extension (0: the runtime does not say)
  uint32_t queue_max_size = 0;
  gpuhal_device_properties_t props{};
};

// The host side: the CPU agent and its pools.
struct HostAgent {
  hsa_agent_t agent{};
  hsa_amd_memory_pool_t system_pool{};   // fine-grained: pinned and mapped host memory, staging
  hsa_amd_memory_pool_t kernarg_pool{};  // fine-grained with KERNARG_INIT: kernel arguments
  bool has_kernarg_pool = false;
};

// A submitted operation, kept until its completion signal reached 0.
struct Op {
  SignalRef done;
  std::vector<SignalRef> keep;    // signals its packets or copies name
  std::function<void()> on_reap;  // frees staging buffers and kernarg memory
  const char *what = "";          // for errors: "hsa_amd_memory_async_copy", "a kernel dispatch" ...
};

struct HsaContext;

// A stream's kernel-argument memory: one allocation from the kernarg pool,
// made on the first launch and handed out in launch order; a launch's
// bytes are reused once its dispatch completed (hsa_kernargs.cpp).
struct KernargRing {
  void *base = nullptr;
  size_t size = 0;
  size_t head = 0;  // where the next launch's bytes go
  struct Live {
    SignalRef done;  // the dispatch's completion signal
    size_t offset, bytes;
  };
  std::deque<Live> live;  // launch order
};

struct HsaStream {
  HsaContext *ctx = nullptr;
  bool blocking = true;  // synchronises with the legacy default stream
  // Stream priority (ABI 1.9): -1 high, 0 normal (the default), 1 low: its
  // queue's hsa_amd_queue_priority_t, and the order its host operations
  // are taken in on the context's host-operation thread.
  int priority = 0;
  bool legacy = false;
  hsa_queue_t *queue = nullptr;
  SignalRef last;              // the last operation's completion signal
  bool last_on_queue = false;  // ...and it was a packet on `queue`
  // Its last packet released its writes at agent scope only: the host, the
  // copy engines and other agents see them after a system-scope release
  // (make_visible).
  bool agent_released = false;
  std::deque<Op> inflight;
  KernargRing kernargs;
};

// An event is the completion signal of what its last record queued: a
// barrier-AND marker, or, for an event with timing, a 4-byte device copy
// whose start and end ROCr stamps (hsa_amd_profiling_get_async_copy_time):
// ROCr documents timestamps for dispatch packets and async copies, not for
// barrier packets.
struct HsaEvent {
  bool timing = true;
  SignalRef signal;  // null before the first record
  bool timed_copy = false;
};

struct HsaKernel {
  uint64_t object = 0;  // HSA_EXECUTABLE_SYMBOL_INFO_KERNEL_OBJECT
  uint32_t kernarg_size = 0;
  uint32_t group_segment_size = 0;
  uint32_t count_cells = 0;  // LDS bytes of the counting barrier's cells (hsa_lowering.cpp)
  uint32_t private_segment_size = 0;
  KernelMetadata md;
};

struct HsaModule {
  uint32_t count_cells = 0;  // the image carries kCountCellsMarker: its kernels reserve the cells
  hsa_executable_t executable{};
  hsa_code_object_reader_t reader{};
  CodeObjectMetadata md;
  std::unordered_map<std::string, std::unique_ptr<HsaKernel>> kernels;
};

// A host operation for the context's host-operation thread.
struct HostOp {
  int priority = 0;  // its stream's
  SignalRef dep;   // may be null
  SignalRef done;  // set to 0 after fn ran (-1 when it failed or did not run)
  std::function<void()> fn;
  std::function<void()> on_skip;  // instead of fn when the context failed (may be empty)
};

struct Registration {
  uint64_t bytes = 0;
  void *agent_ptr = nullptr;
  bool locked = false;  // hsa_amd_memory_lock (else hsa_memory_register)
};

// Stream capture (hsa_graphs.cpp): an operation recorded from a capturing
// stream, submitted again at each launch of its graph with fresh completion
// signals (and kernel arguments written again): a copy, memset or callback
// as a closure over the stream it goes to (c->mu held), or a kernel
// dispatch with its configuration and its explicit arguments' bytes.
struct HsaGraphNode {
  std::function<gpuhal_status_t(HsaStream *)> submit;  // empty for kernels and for what only orders
  HsaKernel *kernel = nullptr;
  gpuhal_launch_config_t config{};
  std::vector<uint8_t> args;  // argument i at arg_offsets[i], arg_sizes[i] bytes
  std::vector<uint32_t> arg_offsets, arg_sizes;
};
using HsaGraphNodes = std::vector<HsaGraphNode>;
// Its fields are guarded by the context's mu.
struct HsaGraphExec {
  std::shared_ptr<const HsaGraphNodes> nodes;  // copied when a kernel node's arguments change
  std::vector<uint32_t> kernel_node_index;     // kernel node k -> its index in nodes
  SignalRef last;                               // the previous launch's last operation
};

struct HsaContext {
  int ordinal = 0;
  Device *device = nullptr;
  std::mutex mu;  // guards everything below except the host-operation queue
  std::unique_ptr<HsaStream> legacy;
  std::unordered_map<HsaStream *, std::unique_ptr<HsaStream>> streams;
  std::unordered_map<std::thread::id, std::unique_ptr<HsaStream>> per_thread;
  std::unordered_map<HsaEvent *, std::unique_ptr<HsaEvent>> events;
  std::map<uintptr_t, uint64_t> allocations;       // device and managed memory: base -> bytes
  std::unordered_set<uintptr_t> managed_allocations;  // which of them are managed
  std::map<uintptr_t, uint64_t> host_allocations;  // pinned host memory: base -> bytes
  std::map<uintptr_t, Registration> registrations;
  std::unordered_map<HsaModule *, std::unique_ptr<HsaModule>> modules;
  uint64_t allocated_bytes = 0;
  // Stream capture's bookkeeping and rules, and the graphs and execs made
  // here (freed with the context); each has its own lock, taken after mu.
  plugin::CaptureBook<HsaStream, HsaGraphNode> captures;
  plugin::GraphStore<HsaGraphNode, HsaGraphExec> graphs;

  // The host-operation thread (started on first use).
  std::mutex host_mu;
  std::condition_variable host_cv;
  std::deque<HostOp> host_ops;
  bool host_stop = false;
  std::thread host_thread;
  void *fill_scratch = nullptr;  // 8 pinned bytes for memset edges (host thread only)

  // The pinned chunks pageable copies are staged through (hsa_staging.cpp),
  // made on first use; guarded by mu. `busy` is the last operation that
  // reads or fills the chunk.
  struct StagingChunk {
    void *buffer = nullptr;
    SignalRef busy;
  };
  std::vector<StagingChunk> staging;
  size_t next_chunk = 0;
  void *event_scratch = nullptr;  // 8 device bytes timed events copy (guarded by mu)

  // Set (once) by fail_context: the first failure, under error_mu.
  std::atomic<bool> failed{false};
  std::mutex error_mu;
  std::string failure;
  // An ordinary error of a host operation (a runtime call that failed):
  // returned once by the next synchronising call.
  std::string pending_error;

  ~HsaContext();  // joins the host-operation thread if still running
};

// The live context for a handle, or nullptr.
HsaContext *find(gpuhal_context_t handle);
gpuhal_status_t bad_context(const char *entry);
HostAgent &host_agent();

// ---- submission (hsa_streams.cpp); `c->mu` held unless stated -----------------
// The stream for a handle (NULL / LEGACY / PER_THREAD or one of c's), or nullptr.
HsaStream *resolve_stream(HsaContext *c, gpuhal_stream_t s);
gpuhal_status_t create_queue(HsaContext *c, HsaStream *s);
void destroy_stream(HsaStream *s);  // after it was drained
// Packets on s's queue: barrier-AND packets for `extra` (and for the
// previous operation when it was not a packet), then `packet` (64 bytes,
// its header last). Records the operation with `done` as s's last signal.
//
// Fence scopes (hsa.h): the packet acquires at agent scope when the
// operation before it was a packet on the same queue and it waits for
// nothing else (device-only work on one agent), else at system scope (a
// copy engine, the host or another stream wrote what it may read). It
// releases at `release` scope: kernel dispatches at agent scope (the next
// kernel on the agent sees their writes; make_visible releases them to the
// rest of the system when something else looks), markers at system scope.
gpuhal_status_t submit_packet(HsaStream *s, const void *packet, SignalRef done, std::vector<SignalRef> extra,
                              std::function<void()> on_reap, const char *what,
                              uint16_t release = HSA_FENCE_SCOPE_SYSTEM);
// When s's last packet released its writes at agent scope only, queues a
// barrier packet that releases them at system scope (it becomes s's last
// operation), so that the host, a copy engine or another agent can read
// them once it completes (c->mu held).
gpuhal_status_t make_visible(HsaStream *s);
// An async copy after s's dependencies; on_reap runs once it completed (or
// at once when it could not be submitted).
gpuhal_status_t submit_copy(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, hsa_agent_t src_agent,
                            uint64_t bytes, std::function<void()> on_reap);
// The same for any copy-engine call: `issue` gets s's dependencies and the
// completion signal and makes the call; `what` names it in errors.
gpuhal_status_t submit_engine_copy(HsaStream *s, const char *what,
                                   const std::function<hsa_status_t(uint32_t, const hsa_signal_t *, hsa_signal_t)> &issue,
                                   std::function<void()> on_reap);
// Copies through the context's staging chunks (hsa_staging.cpp; c->mu held).
// The agent names the memory's owner on the other side of the copy (the GPU,
// or the CPU for mapped host memory).
gpuhal_status_t staged_copy_to_device(HsaStream *s, void *dst, hsa_agent_t dst_agent, const void *src, uint64_t bytes);
gpuhal_status_t staged_copy_to_host(HsaStream *s, void *dst, const void *src, hsa_agent_t src_agent, uint64_t bytes);
// Frees the staging chunks (context_destroy, after it synchronised).
void release_staging(HsaContext *c);
// `bytes` of kernel-argument memory on s for a dispatch completing `done`
// (c->mu held); *out is nullptr when the launch needs its own allocation
// (more than a quarter of the ring). give_back_kernargs undoes the last
// take (its dispatch was not submitted); release_kernargs frees the ring
// (destroy_stream).
gpuhal_status_t take_kernargs(HsaStream *s, size_t bytes, const SignalRef &done, void **out);
void give_back_kernargs(HsaStream *s);
void release_kernargs(HsaStream *s);
// The signals a new operation on s must wait for: s's last and, for the
// legacy default stream's semantics, other streams' (completed ones left out).
std::vector<SignalRef> dependencies(HsaStream *s, bool include_last = true);
// The same for work that is not a packet of s's agent (a copy, a host
// operation): the streams it waits for first release their writes at
// system scope (make_visible).
gpuhal_status_t visible_dependencies(HsaStream *s, std::vector<SignalRef> *out);
void reap(HsaStream *s);
// Allocates a host buffer from the fine-grained system pool, accessible to
// the context's GPU.
gpuhal_status_t alloc_system(HsaContext *c, uint64_t bytes, void **out);
// Marks c failed with `what` (the first failure is kept). Any thread.
void fail_context(HsaContext *c, const std::string &what);
// ERROR_LAUNCH_FAILED naming c's failure and `entry` when c failed (every
// time), or its pending host-operation error (once), else success.
gpuhal_status_t context_failure(HsaContext *c, const char *entry);
// Calls fn for every registered context (the system event handler's lookup;
// hsa_faults.cpp). Contexts are registered from creation to destruction.
void for_each_context(const std::function<void(HsaContext *)> &fn);
void register_context(HsaContext *c);
void unregister_context(HsaContext *c);
// After the runtime started: the wait slice from its clock, and the system
// event handler that keeps memory faults from aborting the process. True
// when the handler is registered (a fault then fails its contexts, and a
// reset makes them anew: recovers_from_faults).
bool watch_faults();
// Waits for every stream of c and the host-operation thread (c->mu not held).
gpuhal_status_t synchronize_context(HsaContext *c);
void stop_host_thread(HsaContext *c);
// Queues a host operation after `dep` on s; `done` becomes s's last signal
// (c->mu held).
// on_skip runs instead of fn when the context failed before fn could run.
gpuhal_status_t submit_host_op(HsaStream *s, std::function<void()> fn, std::function<void()> on_reap,
                               std::function<void()> on_skip = nullptr);
// A marker on s's queue after s's work and `extra` (c->mu held).
gpuhal_status_t submit_marker(HsaStream *s, std::vector<SignalRef> extra, SignalRef *out);
// Waits for s's last operation `last` (c->mu not held), then reaps; the
// context's failure, if any.
gpuhal_status_t wait_stream(HsaContext *c, HsaStream *s, SignalRef last, const char *entry);
// The event of a handle in c, or nullptr (c->mu held).
HsaEvent *find_event(HsaContext *c, gpuhal_event_t e);
// hsa_kernels.cpp: a checked launch's dispatch packet on s (c->mu held),
// and the same launch as a graph's kernel node.
gpuhal_status_t dispatch(HsaContext *c, HsaStream *s, HsaKernel *k, const gpuhal_launch_config_t &config,
                         void *const *args);
HsaGraphNode kernel_node(HsaKernel *k, const gpuhal_launch_config_t &config, void *const *args);
// Records `submit` (a copy, memset or callback on a stream) when s captures;
// false when it does not (c->mu held).
bool record_in_capture(HsaContext *c, HsaStream *s, std::function<gpuhal_status_t(HsaStream *)> submit);

// The shape of every entry that works in a context: resolves the handle
// (ERROR_INVALID_HANDLE naming `entry`) and runs body(c) under guard() (an
// exception becomes a status naming `entry`).
template <class Body>
gpuhal_status_t in_context(gpuhal_context_t ctx, const char *entry, Body &&body) {
  HsaContext *c = find(ctx);
  if (!c) return bad_context(entry);
  return plugin::guard(entry, [&]() -> gpuhal_status_t { return body(c); });
}

}  // namespace gpuhal::hsa

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Context: a device's primary context, owner of streams, events and memory.
//
// A Context handle keeps its device's runtime alive; every stream, event and
// allocation made from it keeps the context alive. reset() destroys
// everything made in the context (like Numba's close()/reset): handles made
// before the reset then throw ERROR_CONTEXT_DESTROYED when used, and their
// destructors do nothing. reset() must not run concurrently with other use of
// the same context; everything else is thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpuhal/error.hpp"
#include "gpuhal/native.hpp"
#include "gpuhal/runtime.hpp"

namespace gpuhal {

namespace detail {
struct ContextImpl;
struct Access;
}

class Stream;
class Event;
class DeviceMemory;
class MemoryManager;

// A context's limits (Context::set_limit, Context::limit), in bytes.
enum class Limit : uint32_t {
  PrintfBufferBytes = 1,  // the device printf's buffer (cuda: the printf FIFO, 1 MiB by default)
  StackBytes = 2,         // each work-item's stack (cuda: per thread, 1 KiB by default; grown as kernels need)
};

struct MemoryInfo {
  uint64_t free = 0;
  uint64_t total = 0;
};

enum class StreamKind {
  Blocking,     // synchronises with the default stream (CUDA's default)
  NonBlocking,  // does not
};

class Context {
 public:
  // An empty handle (every call on it throws ERROR_INVALID_HANDLE); what a
  // moved-from Context is too.
  Context() = default;
  explicit Context(std::nullptr_t) {}
  // The calling thread's context: the primary context of the device it
  // selected (select_device, DeviceScope), else of device 0 of
  // Runtime::get() (Numba's implicit "first use selects GPU 0").
  static Context current();

  // A context over another library's own context (Numba's third-party
  // contexts): on cuda `native_context` is a CUcontext of `device` its
  // owner created (cuCtxCreate, or a primary context it retained). gpuhal
  // works inside it without owning it: dropping the last handle frees what
  // gpuhal made there and leaves the CUcontext alive; reset() is refused
  // (ERROR_NOT_PERMITTED). ERROR_NOT_SUPPORTED on backends without such
  // contexts; ERROR_INVALID_VALUE when it is not a live context of `device`.
  static Context adopt(const Device &device, void *native_context);
  // True for a context made by adopt().
  bool adopted() const;

  Device device() const;
  // The default stream (legacy semantics: it waits for all prior work of the
  // blocking streams, and they wait for it). Never destroyed.
  Stream default_stream() const;
  // CUDA's legacy default stream (on every backend the same as
  // default_stream()) and the calling thread's own default stream (a
  // blocking stream per host thread). Never destroyed by gpuhal.
  Stream legacy_default_stream() const;
  Stream per_thread_default_stream() const;
  // Wraps a native stream handle made elsewhere (another library, another
  // gpuhal runtime over the same plugin, on the same device; on hsa such a
  // stream cannot be captured from here, and while its owner captures it,
  // work on it from here is refused). gpuhal never destroys it; the
  // owner keeps it alive while the Stream is used. A null handle is refused
  // (ERROR_INVALID_HANDLE). On the host backend every other handle is
  // checked at first use (ERROR_INVALID_HANDLE); a GPU driver takes it on
  // trust: on cuda a stream of another context fails at first use, but a
  // handle that is no live stream is undefined behaviour (the driver
  // dereferences it; the process crashes). A handle that is wrapped and
  // never used is never given to the backend (numba-cuda's tests wrap a
  // dummy pointer); at its first use the backend is also asked whether the
  // context's synchronise waits for its work (busy blocks, user guide).
  Stream external_stream(NativeStream native) const;
  Stream create_stream(StreamKind kind = StreamKind::Blocking) const;
  // A stream with a priority (Capability::StreamPriorities, else
  // ERROR_NOT_SUPPORTED), clamped into stream_priority_range() as CUDA
  // clamps it: work of a greater-priority stream is served first where
  // streams compete for the device (cuda: the GPU's scheduler; host: the
  // worker threads of lesser priorities run at higher nice values; see the
  // user guide). Portable code asks for range.greatest (urgent work) or
  // range.least (bulk work): the numbers differ by backend (cuda: 0 .. -5 on
  // an H100, 0 the default and least; host: 2 .. 0, 0 the default and
  // greatest).
  Stream create_stream(StreamKind kind, int priority) const;
  StreamPriorityRange stream_priority_range() const;
  // The context's limits (Capability::ContextLimits, else
  // ERROR_NOT_SUPPORTED naming it; cuda has them, host and hsa do not: the
  // host's gpuhal_printf writes straight to stdout and hsa has none).
  // set_limit is a request the backend may round; limit() says what it
  // kept. The backend's rules are errors: on cuda the printf buffer's size
  // cannot change once a kernel that prints has been launched in the
  // context (ERROR_INVALID_VALUE, saying so; Context::reset starts a fresh
  // context), and a new stack size waits for the context's work. A value
  // that is no Limit is ERROR_INVALID_VALUE.
  void set_limit(Limit limit, uint64_t bytes) const;
  uint64_t limit(Limit limit) const;
  Event create_event(bool enable_timing = true) const;
  // Blocks until all work on every stream of this context has completed.
  void synchronize() const;
  // The vendor's handles behind this context, for vendor libraries (cuBLAS,
  // rocBLAS) working on gpuhal's memory and streams (Stream::native_handle
  // gives the stream: a CUstream on cuda). native_context: cuda's CUcontext
  // (the device's primary context). native_device: cuda's CUdevice, hsa's
  // hsa_agent_t::handle. ERROR_NOT_SUPPORTED where the backend has no such
  // handle (hsa has no contexts; the host backend has neither). Valid while
  // the context is not reset.
  void *native_context() const;
  uint64_t native_device() const;
  MemoryInfo memory_info() const;
  // Device allocation of `bytes` (> 0) from the context's memory manager;
  // given back when the last handle goes.
  DeviceMemory allocate(uint64_t bytes) const;
  // Stream-ordered allocation (CUDA's cuMemAllocAsync; needs
  // Capability::StreamOrderedMemory): usable by work submitted to `stream`
  // from now on (other streams must be ordered after it, e.g. with an
  // event). When the last handle goes it is freed in the order of the same
  // stream, without synchronising (the memory keeps the stream alive). Not
  // served by the memory manager: EMM v1 has no stream-ordered allocation.
  DeviceMemory allocate_async(uint64_t bytes, const Stream &stream) const;
  // Lets this context's work address `peer`'s memory (both contexts of the
  // same runtime, on different devices). Enabling it twice is fine.
  // ERROR_NOT_SUPPORTED without Capability::PeerAccess.
  void enable_peer_access(const Context &peer) const;
  // The manager serving this context's allocations (see memory_manager.hpp).
  MemoryManager &memory_manager() const;
  // Serves this context's allocations from `manager` from now on (Numba's
  // `context.memory_manager = plugin`): attached and initialised here.
  // Memory the previous manager handed out stays valid and goes back to it
  // (it is kept, retired, until the context goes). ERROR_ABI_MISMATCH for
  // another interface version ("... has interface version N - version 1
  // required"), ERROR_INVALID_VALUE for a null manager. Like reset(), it
  // must not run concurrently with other use of the same context.
  void set_memory_manager(std::unique_ptr<MemoryManager> manager) const;
  // Destroys everything made in this context and starts a fresh one.
  void reset() const;
  bool supports(Capability capability) const;

  // ---- Deferred deallocation (Numba's pending-deallocation queue) --------
  // Dropping the last handle of device memory, a stream or an event queues
  // its release instead of running it. The queue is flushed when it holds
  // more than Config::max_pending_deallocs_count items or more than
  // max_pending_deallocs_ratio of the device's memory, when an allocation
  // runs out of memory (then the allocation is retried once), on
  // flush_deallocations(), on reset() and when the context goes -- but never
  // while a DeferCleanup scope is active. A flush first waits for all work of
  // the context. A release that fails stops the flush: the error goes to the
  // handler (default: logged) and the remaining items stay queued.
  size_t pending_deallocations() const;
  uint64_t pending_deallocation_bytes() const;
  // The queue's limits (Numba's config.CUDA_DEALLOCS_COUNT and
  // CUDA_DEALLOCS_RATIO): from Config::max_pending_deallocs_count and _ratio
  // (or Runtime::set_pending_deallocation_limits) when the context is made;
  // set here for this context alone. More than `count` pending releases or
  // more than `ratio` of the device's memory (rounded down to whole bytes)
  // flush at the next release; nothing is flushed by the call itself. A
  // ratio outside 0..1 is ERROR_INVALID_VALUE, changing nothing.
  void set_pending_deallocation_limits(uint64_t count, double ratio) const;
  struct PendingDeallocationLimits {
    uint64_t count = 0;
    uint64_t bytes = 0;
  };
  PendingDeallocationLimits pending_deallocation_limits() const;
  // Runs the queue now (unless deferred); returns how many releases ran.
  size_t flush_deallocations() const;
  // Queues a release of your own, counted with `bytes`. It may throw to
  // report failure. Runs on the thread that triggers the flush.
  void defer_release(std::function<void()> release, uint64_t bytes = 0) const;
  // Receives the errors of failed releases; an empty function restores the
  // default (log at error level). Called on the flushing thread.
  void set_deallocation_error_handler(std::function<void(const Error &)> handler) const;

  friend bool operator==(const Context &a, const Context &b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const Context &a, const Context &b) { return a.impl_ != b.impl_; }

  // A hash for unordered containers (the identity of the context).
  size_t hash() const { return std::hash<const void *>()(impl_.get()); }

 private:
  friend struct detail::Access;  // the core's only way in (core/handle_access.hpp)
  explicit Context(std::shared_ptr<detail::ContextImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::ContextImpl> impl_;
};

// While any DeferCleanup of a context is alive, its deallocation queue is
// not flushed (not even on out-of-memory). Scopes nest. Leaving the outermost
// scope flushes if the queue is over its limits -- also when an exception
// unwinds through it.
class DeferCleanup {
 public:
  explicit DeferCleanup(Context ctx);
  ~DeferCleanup();
  DeferCleanup(const DeferCleanup &) = delete;
  DeferCleanup &operator=(const DeferCleanup &) = delete;

 private:
  Context ctx_;
};

// ---- Devices per thread (Numba's cuda.select_device, get_current_device,
// close, gpus, list_devices) ---------------------------------------------------
//
// Each thread has its own selection; a thread that selected nothing uses
// device 0. The selection holds the device's primary context (so that it
// stays alive while selected); close_device() lets it go. Devices are those
// of Runtime::get(). Errors: ERROR_INVALID_VALUE for an ordinal out of
// range, and what Runtime::get() throws.

// Makes device `ordinal` the calling thread's device and returns it.
Device select_device(int ordinal);
// The calling thread's device (device 0 when none was selected).
Device get_current_device();
// Forgets the calling thread's selection (Numba's cuda.close() for this
// thread): the primary context goes when no other handle refers to it.
void close_device();
// Every device of Runtime::get(), in ordinal order (Numba's cuda.gpus).
std::vector<Device> list_devices();

// Numba's `with cuda.gpus[i]:` -- device `ordinal` (or `device`) is the
// calling thread's device while the scope lives; the previous selection
// comes back at its end. Not movable; use it on one thread.
class DeviceScope {
 public:
  explicit DeviceScope(int ordinal);
  explicit DeviceScope(const Device &device);
  ~DeviceScope();
  DeviceScope(const DeviceScope &) = delete;
  DeviceScope &operator=(const DeviceScope &) = delete;
  Device device() const;

 private:
  Context context_;
  Context previous_;
};

}  // namespace gpuhal

template <>
struct std::hash<gpuhal::Context> {
  size_t operator()(const gpuhal::Context &x) const { return x.hash(); }
};

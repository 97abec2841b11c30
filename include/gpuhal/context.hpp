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
#include <memory>

#include "gpuhal/runtime.hpp"

namespace gpuhal {

namespace detail {
struct ContextImpl;
}

class Stream;
class Event;
class DeviceMemory;

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
  // The primary context of device 0 of Runtime::get() (Numba's implicit
  // "first use selects GPU 0").
  static Context current();

  Device device() const;
  // The default stream (legacy semantics: it waits for all prior work of the
  // blocking streams, and they wait for it). Never destroyed.
  Stream default_stream() const;
  Stream create_stream(StreamKind kind = StreamKind::Blocking) const;
  Event create_event(bool enable_timing = true) const;
  // Blocks until all work on every stream of this context has completed.
  void synchronize() const;
  MemoryInfo memory_info() const;
  // Raw device allocation of `bytes` (> 0); freed when the last handle goes.
  DeviceMemory allocate(uint64_t bytes) const;
  // Destroys everything made in this context and starts a fresh one.
  void reset() const;
  bool supports(Capability capability) const;

  friend bool operator==(const Context &a, const Context &b) { return a.impl_ == b.impl_; }
  friend bool operator!=(const Context &a, const Context &b) { return a.impl_ != b.impl_; }

  // For the implementation; not part of the stable API.
  const std::shared_ptr<detail::ContextImpl> &impl() const { return impl_; }
  explicit Context(std::shared_ptr<detail::ContextImpl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<detail::ContextImpl> impl_;
};

}  // namespace gpuhal

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams and events.
//
// A Stream is an in-order queue of device work. Every asynchronous gpuhal
// call takes its stream explicitly; host memory passed to an asynchronous
// call must stay valid until the stream has run it (synchronize the stream or
// an event recorded after it). Streams and events may be used from any
// thread. A stream handle keeps its context alive; destroying the last
// handle of a stream lets its pending work finish first.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "gpuhal/context.hpp"
#include "gpuhal/native.hpp"

namespace gpuhal {

namespace detail {
struct StreamImpl;
struct EventImpl;
struct Access;
}  // namespace detail

class Event;
class Graph;

class Stream {
 public:
  Context context() const;
  // The context's default stream (legacy semantics).
  bool is_default() const;
  // False for default, per-thread and external streams.
  bool is_owned() const;
  // Blocks until all work submitted so far has completed.
  void synchronize() const;
  // True when all submitted work has completed.
  bool query() const;
  // Later work on this stream waits for `event`'s latest record.
  void wait(const Event &event) const;
  // Stream barrier: later work waits for all `events` in one operation.
  void wait(const std::vector<Event> &events) const;
  // Stream barrier: later work waits for all work submitted to any stream of
  // the context so far. ERROR_NOT_SUPPORTED unless Capability::StreamBarrier.
  void wait_for_all_prior_work() const;
  // Runs `fn` on a backend thread once all prior work on the stream is done;
  // later work waits for it to return. `fn` must not block on this stream.
  // An exception escaping `fn` is logged and swallowed.
  void add_callback(std::function<void()> fn) const;
  // Records a new timing-enabled event on this stream and returns it.
  Event record() const;

  // ---- Capture (graph.hpp; Capability::Graphs, else ERROR_NOT_SUPPORTED).
  // From begin_capture on, work submitted to this stream is recorded, not
  // run, until end_capture returns it as a Graph. Default streams cannot
  // capture (ERROR_CAPTURE_UNSUPPORTED). graph.hpp lists what is recorded
  // and what is refused.
  void begin_capture() const;
  Graph end_capture() const;
  // True while the stream records into a capture (its own, or one it was
  // forked into).
  bool is_capturing() const;

  // Its priority (Context::create_stream(kind, priority); the backend's
  // default for other streams). ERROR_NOT_SUPPORTED without
  // Capability::StreamPriorities.
  int priority() const;

  // The plugin's handle (NULL for the default stream).
  NativeStream native_handle() const;

  friend bool operator==(const Stream &a, const Stream &b) { return a.impl_ == b.impl_; }
  // An empty handle (every call on it throws ERROR_INVALID_HANDLE).
  Stream() = default;
  explicit Stream(std::nullptr_t) {}
  // A hash for unordered containers (the identity of the stream).
  size_t hash() const { return std::hash<const void *>()(impl_.get()); }

 private:
  friend struct detail::Access;  // the core's only way in (core/handle_access.hpp)
  explicit Stream(std::shared_ptr<detail::StreamImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::StreamImpl> impl_;
};

class Event {
 public:
  Context context() const;
  // Captures all work submitted to `stream` so far.
  void record(const Stream &stream) const;
  // Blocks until the recorded work completed (returns at once if never
  // recorded).
  void synchronize() const;
  bool query() const;
  // Milliseconds between two completed, timing-enabled events.
  static float elapsed_ms(const Event &start, const Event &end);

  // An empty handle (every call on it throws ERROR_INVALID_HANDLE).
  Event() = default;
  explicit Event(std::nullptr_t) {}

 private:
  friend struct detail::Access;  // the core's only way in (core/handle_access.hpp)
  explicit Event(std::shared_ptr<detail::EventImpl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<detail::EventImpl> impl_;
};

// Numba's `with stream.auto_synchronize():` -- synchronizes the stream when
// the scope ends, also when an exception unwinds through it (then a failing
// synchronize is logged, never thrown).
class AutoSynchronize {
 public:
  explicit AutoSynchronize(Stream stream) : stream_(std::move(stream)) {}
  ~AutoSynchronize();
  AutoSynchronize(const AutoSynchronize &) = delete;
  AutoSynchronize &operator=(const AutoSynchronize &) = delete;
  const Stream &stream() const { return stream_; }

 private:
  Stream stream_;
};

}  // namespace gpuhal

template <>
struct std::hash<gpuhal::Stream> {
  size_t operator()(const gpuhal::Stream &x) const { return x.hash(); }
};

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams and events (Numba's cuda.stream(), cuda.event()).
#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

// `with stream.auto_synchronize():` -- synchronises the stream when the
// block ends. When the block raises, its exception goes on and a failing
// synchronize is dropped (the C++ AutoSynchronize logs it then); after a
// clean block a failing synchronize raises.
struct AutoSynchronizeScope {
  gpuhal::Stream stream;
  bool entered = false;
};

// Numba's stream argument: a Stream, or 0 / None for the default stream.
gpuhal::Stream stream_or_default(nb::handle stream, const gpuhal::Context &ctx) {
  gpuhal::Stream *s = nullptr;
  if (nb::try_cast(stream, s, false) && s) return *s;
  if (stream.is_none() || (PyLong_CheckExact(stream.ptr()) && PyLong_AsLong(stream.ptr()) == 0))
    return ctx.default_stream();
  throw nb::type_error("stream must be a gpuhal.Stream or 0");
}

// Python callbacks of Stream.add_callback (Numba's). The backend thread that
// runs a stream callback never takes the GIL: a thread holding it may be
// waiting for that very stream (a synchronize, a flush of the deallocation
// queue), which would deadlock. It only posts the callback's token here; a
// Python thread (gpuhal._stream_callbacks) takes tokens with the GIL
// released and calls the Python function. A token whose callback the stream
// dropped without running (the stream failed, or the callback could not be
// queued) is posted with kDropped. The queue is never destroyed: the thread
// waiting on it may outlive static destruction at exit.
constexpr int kDropped = -1;

struct ReadyCallbacks {
  std::mutex mu;
  std::condition_variable ready;
  std::deque<std::pair<uint64_t, int>> tokens;  // (token, 0 or kDropped)

  void post(uint64_t token, int status) {
    {
      std::lock_guard<std::mutex> lock(mu);
      tokens.emplace_back(token, status);
    }
    ready.notify_one();
  }
};

ReadyCallbacks &ready_callbacks() {
  static auto *queue = new ReadyCallbacks;
  return *queue;
}

// Held by the stream's callback: posts its token once, run or dropped.
struct CallbackToken {
  uint64_t token;
  std::atomic<bool> posted{false};
  explicit CallbackToken(uint64_t t) : token(t) {}
  void post(int status) {
    if (!posted.exchange(true)) ready_callbacks().post(token, status);
  }
  ~CallbackToken() { post(kDropped); }
};

void queue_stream_callback(const gpuhal::Stream &stream, uint64_t token) {
  auto held = std::make_shared<CallbackToken>(token);
  try {
    ReleasedCall unlocked;
    stream.add_callback([held] { held->post(0); });
  } catch (...) {
    held->posted = true;  // the caller raises; nothing is posted for it
    throw;
  }
}

std::pair<uint64_t, int> next_stream_callback() {
  nb::gil_scoped_release unlocked;  // not a ReleasedCall: it waits for ever, and a reset must not wait for it
  ReadyCallbacks &q = ready_callbacks();
  std::unique_lock<std::mutex> lock(q.mu);
  q.ready.wait(lock, [&] { return !q.tokens.empty(); });
  std::pair<uint64_t, int> next = q.tokens.front();
  q.tokens.pop_front();
  return next;
}

}  // namespace

namespace {
// Events (Numba's cuda.event()).
void bind_events(nb::module_ &m) {
  nb::class_<gpuhal::Event>(m, "Event", "A point in a stream's work (Numba's cuda.event())")
      .def("record",
           [](const gpuhal::Event &e, nb::handle stream) {
             gpuhal::Stream s = stream_or_default(stream, e.context());
             ReleasedCall unlocked;
             e.record(s);
           },
           nb::arg("stream") = 0)
      .def("synchronize",
           [](const gpuhal::Event &e) {
             {
               ReleasedCall unlocked;
               e.synchronize();
             }
             drain_released();
           })
      .def("query", &gpuhal::Event::query, release_gil())
      .def("wait",
           [](const gpuhal::Event &e, nb::handle stream) {
             gpuhal::Stream s = stream_or_default(stream, e.context());
             ReleasedCall unlocked;
             s.wait(e);
           },
           nb::arg("stream") = 0)
      .def("elapsed_time",
           [](const gpuhal::Event &start, const gpuhal::Event &end) { return gpuhal::Event::elapsed_ms(start, end); },
           nb::arg("evtend"), release_gil(), "Milliseconds from this event to `evtend` (both completed)");
}
}  // namespace

void bind_streams(nb::module_ &m) {
  nb::class_<gpuhal::Stream>(m, "Stream", "An in-order queue of device work (Numba's cuda.stream())")
      .def(
          "synchronize",
          [](const gpuhal::Stream &s) {
            {
              ReleasedCall unlocked;
              s.synchronize();
            }
            drain_released();
          },
          "Waits until all work so far has completed")
      .def("query", &gpuhal::Stream::query, release_gil(), "True when all submitted work has completed")
      .def(
          "wait_event", [](const gpuhal::Stream &s, const gpuhal::Event &e) { s.wait(e); }, release_gil())
      .def(
          "wait_events", [](const gpuhal::Stream &s, const std::vector<gpuhal::Event> &e) { s.wait(e); }, release_gil())
      .def("wait_for_all_prior_work", &gpuhal::Stream::wait_for_all_prior_work, release_gil())
      .def("record", &gpuhal::Stream::record, release_gil(), "Records a new event on this stream")
      .def("begin_capture", &gpuhal::Stream::begin_capture, release_gil(),
           "From now on, work on this stream is recorded into a graph, not run (see capture())")
      .def("end_capture", &gpuhal::Stream::end_capture, release_gil(), "Ends the capture and returns its Graph")
      .def_prop_ro("is_capturing", &gpuhal::Stream::is_capturing, "True while the stream records into a capture")
      .def_prop_ro("priority", &gpuhal::Stream::priority, "The stream's priority (lower numbers are greater)")
      .def(
          "capture",
          [](nb::handle self) { return nb::module_::import_("gpuhal._graphs").attr("Capture")(self); },
          "`with stream.capture() as g:` records the block's work on the stream; g.launch() runs it again")
      .def(
          "add_callback",
          [](nb::handle self, nb::handle callback, nb::handle arg) {
            return nb::module_::import_("gpuhal._stream_callbacks").attr("add_callback")(self, callback, arg);
          },
          nb::arg("callback"), nb::arg("arg").none() = nb::none(),
          "Numba's add_callback: callback(stream, status, arg) runs on a Python thread once the stream's "
          "prior work is done (later work does not wait for it)")
      .def(
          "async_done",
          [](nb::handle self) { return nb::module_::import_("gpuhal._stream_callbacks").attr("async_done")(self); },
          "Numba's async_done: an asyncio future of the running loop, done with the stream once its "
          "prior work is")
      .def("auto_synchronize",
           [](const gpuhal::Stream &s) {
             return AutoSynchronizeScope{s, {}};
           })
      .def_prop_ro(
          "handle",
          [](const gpuhal::Stream &s) {
            return nb::module_::import_("gpuhal._stream_handle")
                .attr("StreamHandle")(reinterpret_cast<uintptr_t>(s.native_handle()));
          },
          "The backend's handle (a CUstream on cuda; 0 for the default stream) as Numba gives it: a "
          "ctypes.c_void_p (a gpuhal.StreamHandle) that int() also converts")
      .def(
          "__int__", [](const gpuhal::Stream &s) { return reinterpret_cast<uintptr_t>(s.native_handle()); },
          "The native handle as an int (Numba's int(stream))")
      .def_prop_ro("context", &gpuhal::Stream::context)
      .def_prop_ro("is_default", &gpuhal::Stream::is_default)
      .def_prop_ro("is_owned", &gpuhal::Stream::is_owned)
      .def_prop_ro(
          "external", [](const gpuhal::Stream &s) { return !s.is_owned() && !s.is_default(); },
          "True for a stream made elsewhere and wrapped (external_stream; Numba's Stream.external)")
      .def("__eq__", [](const gpuhal::Stream &a, const gpuhal::Stream &b) { return a == b; })
      .def("__hash__", [](const gpuhal::Stream &s) { return s.hash(); })
      // The stream's identity (what == and hash compare), not the backend's
      // handle: handing that out tells the context another library may put
      // work on it (which turns its idle blocks off), and a repr must not
      // change what the context does. `handle` gives the backend's handle.
      .def("__repr__", [](const gpuhal::Stream &s) {
        if (s.is_default()) return std::string("<gpuhal.Stream default>");
        char buf[64];
        std::snprintf(buf, sizeof buf, "<gpuhal.Stream at 0x%llx>", static_cast<unsigned long long>(s.hash()));
        return std::string(buf);
      });

  nb::class_<AutoSynchronizeScope>(m, "_AutoSynchronize")
      .def("__enter__",
           [](AutoSynchronizeScope &a) {
             if (a.entered) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "auto_synchronize entered twice");
             a.entered = true;
             return a.stream;
           })
      .def("__exit__", [](AutoSynchronizeScope &a, nb::handle type, nb::handle, nb::handle) {
        bool raising = !type.is_none();
        {
          ReleasedCall unlocked;
          if (raising) {
            gpuhal::AutoSynchronize logs_failures(a.stream);
          } else {
            a.stream.synchronize();
          }
        }
      }, nb::arg("type").none(), nb::arg("value").none(), nb::arg("traceback").none());
  m.def("_queue_stream_callback", &queue_stream_callback,
        "Posts `token` to _next_stream_callback once the stream's prior work is done (gpuhal._stream_callbacks)");
  m.def("_next_stream_callback", &next_stream_callback,
        "The next (token, status) of a stream callback, waiting without the GIL; status -1: dropped");
  bind_events(m);
}

}  // namespace gpuhal_py

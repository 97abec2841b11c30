// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Streams and events (Numba's cuda.stream(), cuda.event()).
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

}  // namespace

namespace {
// Events (Numba's cuda.event()).
void bind_events(nb::module_ &m) {
  nb::class_<gpuhal::Event>(m, "Event", "A point in a stream's work (Numba's cuda.event())")
      .def("record",
           [](const gpuhal::Event &e, nb::handle stream) {
             gpuhal::Stream s = stream_or_default(stream, e.context());
             nb::gil_scoped_release unlocked;
             e.record(s);
           },
           nb::arg("stream") = 0)
      .def("synchronize",
           [](const gpuhal::Event &e) {
             {
               nb::gil_scoped_release unlocked;
               e.synchronize();
             }
             drain_released();
           })
      .def("query", &gpuhal::Event::query, release_gil())
      .def("wait",
           [](const gpuhal::Event &e, nb::handle stream) {
             gpuhal::Stream s = stream_or_default(stream, e.context());
             nb::gil_scoped_release unlocked;
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
              nb::gil_scoped_release unlocked;
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
          nb::gil_scoped_release unlocked;
          if (raising) {
            gpuhal::AutoSynchronize logs_failures(a.stream);
          } else {
            a.stream.synchronize();
          }
        }
      }, nb::arg("type").none(), nb::arg("value").none(), nb::arg("traceback").none());
  bind_events(m);
}

}  // namespace gpuhal_py

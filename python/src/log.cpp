// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal's log into Python's logging (gpuhal/_log.py installs it): each
// message goes to a Python callable with the GIL, at once when the logging
// thread holds it, otherwise at the next drain_released() (gpuhal's own
// threads never wait for the GIL; a message logged there arrives with the
// next gpuhal call from Python, or the drain _log.flush() asks for).
#include <memory>
#include <string>

#include "bindings.hpp"
#include "gpuhal/log.hpp"

namespace gpuhal_py {
void bind_log(nb::module_ &m) {
  m.def(
      "_set_log_forwarder",
      [](nb::object fn) {
        if (fn.is_none()) {
          gpuhal::set_log_handler({});
          return;
        }
        auto forwarder = std::make_shared<PythonRef>(std::move(fn));  // dropped with the GIL
        gpuhal::set_log_handler([forwarder](gpuhal::LogLevel level, const std::string &message) {
          run_with_gil([forwarder, level, message] {
            PyObject *result = PyObject_CallFunction(forwarder->get().ptr(), "is", int(level), message.c_str());
            if (!result) {
              PyErr_WriteUnraisable(forwarder->get().ptr());  // a failing handler must not lose the caller's state
            } else {
              Py_DECREF(result);
            }
          });
        });
      },
      nb::arg("fn").none(), "Sends gpuhal's log messages to fn(level, message), or back to stderr with None");
  m.def("_drain_log", [] { drain_released(); }, "Delivers the messages other threads logged since the last drain");
}

}  // namespace gpuhal_py

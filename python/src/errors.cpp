// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal::Error -> the gpuhal.Error subclass of its status.
//
// The classes are made in Python (python/gpuhal/_errors.py) from the status
// list this file exports, and handed back with _set_error_classes; until
// then (and for a status without a class) errors are RuntimeError.
#include "bindings.hpp"

namespace gpuhal_py {
namespace {

// status value -> class; a strong reference held for the module's life.
PyObject *error_classes = nullptr;

void translate(const std::exception_ptr &p, void *) {
  try {
    std::rethrow_exception(p);
  } catch (const gpuhal::Error &e) {
    std::string status = gpuhal::to_string(e.status());
    PyObject *cls = nullptr;
    if (error_classes) {
      PyObject *key = PyLong_FromLong(static_cast<long>(e.status()));
      cls = key ? PyDict_GetItem(error_classes, key) : nullptr;  // borrowed
      Py_XDECREF(key);
    }
    if (!cls) {
      PyErr_Format(PyExc_RuntimeError, "%s: %s", status.c_str(), e.what());
      return;
    }
    // (status, code, message, peer_message or None): _errors.Error's arguments.
    PyObject *args = e.peer_message().empty()
                         ? Py_BuildValue("(sisO)", status.c_str(), static_cast<int>(e.status()), e.what(), Py_None)
                         : Py_BuildValue("(siss)", status.c_str(), static_cast<int>(e.status()), e.what(),
                                         e.peer_message().c_str());
    if (args) {
      PyErr_SetObject(cls, args);
      Py_DECREF(args);
    }
  }
}

}  // namespace

void bind_errors(nb::module_ &m) {
  nb::register_exception_translator(translate);
  // (name, value, description) of every status, in status.def order.
  m.def("statuses", [] {
    std::vector<std::tuple<std::string, int, std::string>> out;
#define GPUHAL_STATUS(name, value, text) out.emplace_back(#name, value, text);
#include "gpuhal/status.def"
#undef GPUHAL_STATUS
    return out;
  });
  m.def("_set_error_classes", [](nb::dict classes) {
    Py_XDECREF(error_classes);
    error_classes = classes.ptr();
    Py_INCREF(error_classes);
  });
  // Raises the error of `status` with `message` and, where not empty,
  // NumPy's or Numba's sentence for it (for the tests of the translation,
  // and for the Python layer's own checks).
  m.def(
      "_raise",
      [](int status, const std::string &message, const std::string &peer_message) {
        throw gpuhal::Error(static_cast<gpuhal::Status>(status), message, peer_message);
      },
      nb::arg("status"), nb::arg("message"), nb::arg("peer_message") = "");
}

}  // namespace gpuhal_py

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Host arrays through the buffer protocol, and Python index conversion.
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>

#include "bindings.hpp"

namespace gpuhal_py {

gpuhal::DType dtype_from_format(const char *format, Py_ssize_t itemsize) {
  using gpuhal::DType;
  using gpuhal::DTypeKind;
  std::string f = format ? format : "B";  // NULL means unsigned bytes (PEP 3118)
  size_t i = 0;
  if (!f.empty() && (f[0] == '@' || f[0] == '=' || f[0] == '<' || f[0] == '>' || f[0] == '!')) {
    // gpuhal's backends are little-endian: the bytes of a big-endian array
    // would be read wrong, so it is refused rather than copied unconverted.
    if (f[0] == '>' || f[0] == '!')
      throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_DTYPE,
                          "big-endian host array (format '" + f + "'): convert it first, e.g. a.astype(a.dtype.newbyteorder('<'))");
    i = 1;
  }
  std::string code = f.substr(i);
  auto sized = [&](DTypeKind kind) { return DType{kind, uint8_t(itemsize * 8), 1}; };
  DType d;
  if (code == "?") {
    d = gpuhal::dtypes::bool_;
  } else if (code == "b" || code == "h" || code == "i" || code == "l" || code == "q" || code == "n") {
    d = sized(DTypeKind::Int);
  } else if (code == "B" || code == "H" || code == "I" || code == "L" || code == "Q" || code == "N") {
    d = sized(DTypeKind::UInt);
  } else if (code == "e" || code == "f" || code == "d") {
    d = sized(DTypeKind::Float);
  } else if (code == "Zf" || code == "Zd") {
    d = sized(DTypeKind::Complex);
  } else if (code.rfind("T{", 0) == 0 || (!code.empty() && code.back() == 'x') || code.rfind("V", 0) == 0) {
    // A record (structured) dtype, or NumPy's unstructured void.
    return DType::record(itemsize);
  } else {
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_DTYPE,
                        "host array of buffer format '" + f + "' has no gpuhal dtype");
  }
  if (d.itemsize() != itemsize)
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_DTYPE,
                        "host array of buffer format '" + f + "' with itemsize " + std::to_string(itemsize));
  d.validate();
  return d;
}

namespace {

// The message of the pending Python error, which is cleared ("" if none).
std::string take_python_error() {
  PyObject *type = nullptr, *value = nullptr, *traceback = nullptr;
  PyErr_Fetch(&type, &value, &traceback);
  std::string text;
  if (value) {
    if (PyObject *str = PyObject_Str(value)) {
      if (const char *c = PyUnicode_AsUTF8(str)) text = c;
      Py_DECREF(str);
    }
  }
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  PyErr_Clear();
  return text;
}

}  // namespace

HostBuffer::HostBuffer(nb::handle object, bool writable) {
  if (PyObject_GetBuffer(object.ptr(), &buffer_, PyBUF_RECORDS_RO) != 0) {
    // The exporter's reason, when it has one: NumPy's "cannot include dtype
    // 'M' in a buffer" for datetime64 says more than "no buffer".
    const std::string why = take_python_error();
    throw nb::type_error(("expected a host array (an object with the buffer protocol, such as a NumPy array), got " +
                          std::string(nb::type_name(object.type()).c_str()) + (why.empty() ? "" : " (" + why + ")"))
                             .c_str());
  }
  held_ = true;
  if (writable && buffer_.readonly)
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "the host array is read-only");
  gpuhal::DType dtype = dtype_from_format(buffer_.format, buffer_.itemsize);
  gpuhal::Shape shape(buffer_.shape, buffer_.shape + buffer_.ndim);
  gpuhal::Strides strides(buffer_.strides, buffer_.strides + buffer_.ndim);
  // `buf` is element 0 (PEP 3118: the start of the logical structure),
  // which is also what HostView takes, negative strides included.
  view_ = buffer_.readonly ? gpuhal::HostView::readonly(buffer_.buf, shape, dtype, strides)
                           : gpuhal::HostView(buffer_.buf, shape, dtype, strides);
}

HostBuffer::HostBuffer(HostBuffer &&other) noexcept
    : buffer_(other.buffer_), held_(other.held_), view_(other.view_) {
  other.held_ = false;
}

HostBuffer::~HostBuffer() {
  if (held_) PyBuffer_Release(&buffer_);
}

namespace {

std::mutex later_mutex;
std::vector<std::function<void()>> later;  // work that needs the GIL

}  // namespace

void drain_released() {
  std::vector<std::function<void()>> now;
  {
    std::lock_guard<std::mutex> lock(later_mutex);
    now.swap(later);
  }
  for (auto &task : now) task();
}

void run_with_gil(std::function<void()> task) {
  if (PyGILState_Check()) {
    task();
    return;
  }
  std::lock_guard<std::mutex> lock(later_mutex);
  later.push_back(std::move(task));
}

void keep_until_ran(const gpuhal::Stream &stream, nb::handle object) {
  drain_released();
  PyObject *o = object.inc_ref().ptr();
  try {
    stream.add_callback([o] {
      std::lock_guard<std::mutex> lock(later_mutex);
      later.push_back([o] { Py_DECREF(o); });
    });
  } catch (const gpuhal::Error &) {
    // No callback (a failing backend): wait for the stream instead. When
    // even that fails the work may still be queued, so the reference is
    // kept for the process's life rather than the memory freed under it.
    {
      ReleasedCall unlocked;
      stream.synchronize();  // throws, keeping `o`
    }
    Py_DECREF(o);
  }
}

namespace {

[[noreturn]] void not_an_index(nb::handle item) {
  throw nb::type_error(("only integers and slices index a device array, not " +
                        std::string(nb::type_name(item.type()).c_str()))
                           .c_str());
}

// An integer index or slice bound through __index__ (Python ints, NumPy
// integer scalars and 0-d integer arrays; not bools, floats or arrays of
// more than one element), clamped to int64 when `clamp` (slice bounds, as
// Python clamps them: a bound past the end means the end). An integer index
// beyond int64 is out of bounds on any axis: IndexError, not a wrapped value.
int64_t index_value(nb::handle item, bool clamp) {
  if (PyBool_Check(item.ptr())) not_an_index(item);
  nb::object number = nb::steal(PyNumber_Index(item.ptr()));
  if (!number.is_valid()) {
    PyErr_Clear();
    not_an_index(item);
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(number.ptr(), &overflow);
  if (overflow == 0) return v;
  if (!clamp)
    throw gpuhal::Error(gpuhal::Status::ERROR_INDEX_OUT_OF_RANGE,
                        "index " + std::string(nb::str(number).c_str()) + " is out of bounds (beyond 64 bits)");
  return overflow > 0 ? INT64_MAX : -INT64_MAX;
}

std::optional<int64_t> optional_bound(PyObject *o) {
  if (o == Py_None) return std::nullopt;
  return index_value(nb::handle(o), true);
}

gpuhal::Index index_from(nb::handle item) {
  if (PySlice_Check(item.ptr())) {
    auto *s = reinterpret_cast<PySliceObject *>(item.ptr());
    int64_t step = s->step == Py_None ? 1 : index_value(nb::handle(s->step), true);
    return gpuhal::Slice(optional_bound(s->start), optional_bound(s->stop), step);
  }
  if (PyIndex_Check(item.ptr())) return gpuhal::Index(index_value(item, false));
  not_an_index(item);
}

}  // namespace

std::vector<gpuhal::Index> indices_from(nb::handle key) {
  std::vector<gpuhal::Index> out;
  if (PyTuple_Check(key.ptr())) {
    for (nb::handle item : nb::borrow<nb::tuple>(key)) out.push_back(index_from(item));
  } else {
    out.push_back(index_from(key));
  }
  return out;
}

nb::tuple to_tuple(const std::vector<int64_t> &values) {
  nb::list l;
  for (int64_t v : values) l.append(v);
  return nb::tuple(l);
}

}  // namespace gpuhal_py

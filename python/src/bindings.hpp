// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// What the binding files of gpuhal's Python module share.
//
// The module is thin: objects of the C++ API are bound as they are (names
// with a leading underscore where the Python package wraps them in Numba's
// shapes, see python/gpuhal/). Conventions every file keeps:
//  - the GIL is released around every call into the core that can block
//    (synchronisation, copies, allocation -- which may flush the deferred
//    deallocation queue and so wait for the device --, compilation, launch);
//    Python objects are never touched while it is released;
//  - host arrays come in through the buffer protocol (HostBuffer), held for
//    the length of the call; asynchronous calls need the caller to keep them
//    alive until the stream ran them, as in Numba and in the C++ API;
//  - gpuhal::Error becomes the gpuhal.Error subclass of its status
//    (errors.cpp); a stream argument of None is the synchronous overload.
#pragma once

#include <deque>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gpuhal/gpuhal.hpp"

namespace nb = nanobind;

namespace gpuhal_py {

// What a binding holds while it runs without the GIL (released_call.cpp):
// it counts the call in flight, then lets go of the GIL; at its end it
// uncounts the call, then takes the GIL back. Context.reset waits until no
// call is in flight and holds new ones back while it runs, since the C++
// reset must not run beside other use of its context (context.hpp); a
// Python thread allocating during a reset was left with memory of the
// destroyed context, and its next write faulted. Nested in a call of the
// same thread (a memory manager's Python method calling gpuhal), a call is
// counted and never held back (the reset waits for the outer one).
class ReleasedCall {
 public:
  ReleasedCall();
  ~ReleasedCall();
  ReleasedCall(const ReleasedCall &) = delete;
  ReleasedCall &operator=(const ReleasedCall &) = delete;

 private:
  PyThreadState *state_ = nullptr;
};

using release_gil = nb::call_guard<ReleasedCall>;

// Runs `fn` with the GIL held once no ReleasedCall is in flight in any
// thread, holding new ones back until it returns (Context.reset,
// Context.memory_manager's setter). ERROR_NOT_PERMITTED from inside a
// ReleasedCall of this thread (it would wait for itself). Called with the
// GIL held.
void run_exclusive_of_released_calls(const char *what, const std::function<void()> &fn);

// A Python object's buffer (PyObject_GetBuffer with strides and format),
// released when this goes, and the HostView over it. Throws TypeError for
// objects without the buffer protocol, gpuhal errors for dtypes gpuhal does
// not have (big-endian, long double ...). Not copyable.
class HostBuffer {
 public:
  // writable: the view must accept writes (ERROR_INVALID_VALUE otherwise).
  explicit HostBuffer(nb::handle object, bool writable = false);
  ~HostBuffer();
  HostBuffer(const HostBuffer &) = delete;
  HostBuffer &operator=(const HostBuffer &) = delete;
  HostBuffer(HostBuffer &&other) noexcept;
  const gpuhal::HostView &view() const { return view_; }

 private:
  Py_buffer buffer_{};
  bool held_ = false;
  gpuhal::HostView view_;
};

// Keeps `object` (a host array an asynchronous call reads or writes) alive
// until `stream` has run the work queued so far: a stream callback hands it
// back, and it is released at the next drain_released() (which every
// synchronize binding and the next keep_until_ran run, with the GIL). The
// callback never takes the GIL, so no backend thread can deadlock on it.
void keep_until_ran(const gpuhal::Stream &stream, nb::handle object);
void drain_released();
// Runs `task` now when this thread holds the GIL, else at the next
// drain_released(): gpuhal's threads (a deferred deallocation flush, a
// backend thread) never wait for the GIL, which a thread holding it might
// be waiting on them for.
void run_with_gil(std::function<void()> task);

// A reference to a Python object that may be dropped on any thread: the
// last reference goes with the GIL (now if this thread holds it, else at
// the next drain_released()), never by waiting for it.
class PythonRef {
 public:
  explicit PythonRef(nb::object o) : object_(o.release().ptr()) {}
  PythonRef(const PythonRef &) = delete;
  PythonRef &operator=(const PythonRef &) = delete;
  ~PythonRef() {
    PyObject *o = object_;
    run_with_gil([o] { Py_DECREF(o); });
  }
  nb::handle get() const { return object_; }

 private:
  PyObject *object_;
};

// The dtype a buffer format string names ("<f", "Zd", "T{...}" ...).
gpuhal::DType dtype_from_format(const char *format, Py_ssize_t itemsize);
// A stream argument: None -> nullptr.
inline const gpuhal::Stream *stream_or_null(const std::optional<gpuhal::Stream> &s) { return s ? &*s : nullptr; }
// Calls f(stream) -- the asynchronous overload -- or f() -- the synchronous
// one -- with a generic lambda taking `const auto &...s`.
template <class F>
decltype(auto) maybe_on(const std::optional<gpuhal::Stream> &stream, F &&f) {
  return stream ? f(*stream) : f();
}
// A Python index (an int, a slice, or a tuple of them) as gpuhal indices.
std::vector<gpuhal::Index> indices_from(nb::handle key);
nb::tuple to_tuple(const std::vector<int64_t> &values);

// An owner of host memory that NumPy views through __array_interface__
// (copy_to_host's result, pinned and mapped arrays, a managed array's host
// side): np.asarray(holder) shares the memory and keeps the holder alive.
struct HostMemoryHolder {
  gpuhal::HostView view;
  gpuhal::HostArray array;    // when the memory is a HostArray's
  gpuhal::DeviceArray device;  // when it is a managed or mapped device array's
};

// Kernel launch arguments from Python values (kernels.cpp): device arrays,
// NumPy scalars, ints, floats; anything else is a host array held in
// `held` until the launch has returned (it synchronises then).
std::vector<gpuhal::KernelArg> args_from(const nb::sequence &args, std::deque<HostBuffer> &held);

void bind_errors(nb::module_ &m);
void bind_graphs(nb::module_ &m);
void bind_runtime(nb::module_ &m);
void bind_streams(nb::module_ &m);
void bind_device_array(nb::module_ &m);
void bind_host_memory(nb::module_ &m);
void bind_kernels(nb::module_ &m);
void bind_dlpack(nb::module_ &m);
void bind_ipc(nb::module_ &m);
void bind_memory_manager(nb::module_ &m);
void bind_log(nb::module_ &m);

}  // namespace gpuhal_py

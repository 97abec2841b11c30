// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Device arrays (the C++ DeviceArray as gpuhal._gpuhal._DeviceArray, which
// gpuhal.DeviceNDArray wraps) and host memory NumPy can view.
#include <complex>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

gpuhal::DType dtype_of(const std::string &typestr) { return gpuhal::DType::parse(typestr); }

char order_of(const std::string &order) {
  if (order.size() != 1) throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "order must be one letter, not '" + order + "'");
  return order[0];
}

// A Python scalar or NumPy scalar for fill(): its bytes and dtype.
void fill_from(const gpuhal::DeviceArray &a, nb::handle value, const std::optional<gpuhal::Stream> &stream) {
  auto run = [&](auto v) {
    ReleasedCall unlocked;
    maybe_on(stream, [&](const auto &...s) { a.fill(v, s...); });
  };
  PyObject *o = value.ptr();
  if (PyBool_Check(o)) return run(o == Py_True);
  if (PyLong_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (!overflow) return run(static_cast<int64_t>(v));
    unsigned long long u = PyLong_AsUnsignedLongLong(o);
    if (PyErr_Occurred()) {
      PyErr_Clear();
      throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "fill: integer out of range of every integer dtype");
    }
    return run(static_cast<uint64_t>(u));
  }
  if (PyFloat_Check(o)) return run(PyFloat_AsDouble(o));
  if (PyComplex_Check(o)) {
    // A complex value fills complex arrays only: through a broadcast 0-d
    // source of the array's own dtype.
    std::complex<double> v(PyComplex_RealAsDouble(o), PyComplex_ImagAsDouble(o));
    std::complex<float> f(float(v.real()), float(v.imag()));
    gpuhal::HostView src;
    if (a.dtype() == gpuhal::dtypes::complex128)
      src = gpuhal::HostView::scalar(v);
    else if (a.dtype() == gpuhal::dtypes::complex64)
      src = gpuhal::HostView::scalar(f);
    else
      throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE,
                          "fill: a complex value does not convert to dtype " + a.dtype().name());
    ReleasedCall unlocked;
    maybe_on(stream, [&](const auto &...s) { a.assign(src, s...); });
    if (stream) stream->synchronize();  // `f` and `v` live on this stack
    return;
  }
  throw nb::type_error(("fill takes a Python or NumPy scalar, not " + std::string(nb::type_name(value.type()).c_str())).c_str());
}

nb::dict array_interface(const HostMemoryHolder &h) {
  nb::dict d;
  d["shape"] = to_tuple(h.view.shape());
  d["typestr"] = h.view.dtype().typestr();
  d["data"] = nb::make_tuple(reinterpret_cast<uintptr_t>(h.view.data()), !h.view.writeable());
  d["strides"] = to_tuple(h.view.strides());
  d["version"] = 3;
  return d;
}

}  // namespace

namespace {
// The module's functions over device arrays (device_array, to_device,
// managed arrays, prefetch and advice, growable arrays) and the host memory
// gpuhal hands out.
void bind_device_array_functions(nb::module_ &m) {
  using gpuhal::DeviceArray;
  nb::class_<HostMemoryHolder>(m, "_HostMemory", "Host memory gpuhal owns; np.asarray() views it")
      .def_prop_ro("__array_interface__", &array_interface);
  m.def("device_array",
        [](const gpuhal::Context &ctx, const gpuhal::Shape &shape, const std::string &typestr,
           const gpuhal::Strides &strides, const std::string &order) {
          gpuhal::DType d = dtype_of(typestr);
          ReleasedCall unlocked;
          return gpuhal::device_array(ctx, shape, d, strides, order_of(order));
        });
  m.def("managed_array",
        [](const gpuhal::Context &ctx, const gpuhal::Shape &shape, const std::string &typestr,
           const gpuhal::Strides &strides, const std::string &order) {
          gpuhal::DType d = dtype_of(typestr);
          ReleasedCall unlocked;
          return gpuhal::managed_array(ctx, shape, d, strides, order_of(order));
        });
  // Virtual memory (gpuhal/virtual_memory.hpp): the growable array and the granularity.
  nb::class_<gpuhal::GrowableDeviceArray>(m, "_GrowableDeviceArray")
      .def("__init__",
           [](gpuhal::GrowableDeviceArray *self, const gpuhal::Context &ctx, const std::string &typestr,
              uint64_t max_elements) { new (self) gpuhal::GrowableDeviceArray(ctx, dtype_of(typestr), max_elements); })
      .def("reserve",
           [](gpuhal::GrowableDeviceArray &g, uint64_t n) {
             ReleasedCall unlocked;
             g.reserve(n);
           })
      .def("resize",
           [](gpuhal::GrowableDeviceArray &g, uint64_t n) {
             ReleasedCall unlocked;
             g.resize(n);
           })
      .def_prop_ro("size", &gpuhal::GrowableDeviceArray::size)
      .def_prop_ro("capacity", &gpuhal::GrowableDeviceArray::capacity)
      .def_prop_ro("max_size", &gpuhal::GrowableDeviceArray::max_size)
      .def_prop_ro("device_pointer", &gpuhal::GrowableDeviceArray::device_pointer)
      .def("array", &gpuhal::GrowableDeviceArray::array);
  // The building blocks under it: physical memory and reserved ranges.
  nb::class_<gpuhal::PhysicalMemory>(m, "_PhysicalMemory")
      .def_static(
          "create",
          [](const gpuhal::Context &ctx, uint64_t bytes) {
            ReleasedCall unlocked;
            return gpuhal::PhysicalMemory::create(ctx, bytes);
          })
      .def_prop_ro("size", &gpuhal::PhysicalMemory::size);
  nb::class_<gpuhal::VirtualRange>(m, "_VirtualRange")
      .def_static(
          "reserve",
          [](const gpuhal::Context &ctx, uint64_t bytes, uint64_t alignment) {
            ReleasedCall unlocked;
            return gpuhal::VirtualRange::reserve(ctx, bytes, alignment);
          })
      .def_prop_ro("base", &gpuhal::VirtualRange::base)
      .def_prop_ro("size", &gpuhal::VirtualRange::size)
      .def("map",
           [](const gpuhal::VirtualRange &r, uint64_t offset, uint64_t bytes, const gpuhal::PhysicalMemory &memory,
              uint64_t memory_offset) {
             ReleasedCall unlocked;
             r.map(offset, bytes, memory, memory_offset);
           })
      .def("unmap",
           [](const gpuhal::VirtualRange &r, uint64_t offset, uint64_t bytes) {
             ReleasedCall unlocked;
             r.unmap(offset, bytes);
           })
      .def("set_access",
           [](const gpuhal::VirtualRange &r, uint64_t offset, uint64_t bytes, uint32_t access, int device) {
             ReleasedCall unlocked;
             r.set_access(offset, bytes, static_cast<gpuhal::VmAccess>(access), device);
           })
      .def("array", [](const gpuhal::VirtualRange &r, uint64_t offset, const gpuhal::Shape &shape,
                       const std::string &typestr) { return r.array(offset, shape, dtype_of(typestr)); });
  m.def("vm_granularity", [](const gpuhal::Context &ctx) {
    const gpuhal::VmGranularity g = gpuhal::vm_granularity(ctx);
    return nb::make_tuple(g.minimum, g.recommended);
  });
  // Managed-memory hints (gpuhal/managed_hints.hpp): location -1 is the host.
  m.def("prefetch", [](const DeviceArray &a, int location, std::optional<gpuhal::Stream> stream) {
    const gpuhal::Location to = location < 0 ? gpuhal::Location::host() : gpuhal::Location::device(location);
    ReleasedCall unlocked;
    gpuhal::prefetch(a, to, stream ? *stream : a.context().default_stream());
  });
  m.def("advise", [](const DeviceArray &a, uint32_t advice, int location) {
    const gpuhal::Location where = location < 0 ? gpuhal::Location::host() : gpuhal::Location::device(location);
    ReleasedCall unlocked;
    gpuhal::advise(a, static_cast<gpuhal::Advice>(advice), where);
  });
  m.def("to_device",
        [](const gpuhal::Context &ctx, nb::handle host, std::optional<gpuhal::Stream> stream, bool copy) {
          HostBuffer b(host);
          gpuhal::Copy c = copy ? gpuhal::Copy::yes : gpuhal::Copy::no;
          gpuhal::DeviceArray d;
          {
            ReleasedCall unlocked;
            d = stream ? gpuhal::to_device(ctx, b.view(), *stream, c) : gpuhal::to_device(ctx, b.view(), c);
          }
          if (stream && copy) keep_until_ran(*stream, host);
          return d;
        },
        nb::arg("ctx"), nb::arg("host"), nb::arg("stream").none(), nb::arg("copy"));
  m.def("strides_like",
        [](const gpuhal::Shape &shape, const gpuhal::Strides &strides, int64_t itemsize, const std::string &order) {
          return gpuhal::strides_like(gpuhal::Layout::make(shape, itemsize, strides), order_of(order));
        });
  m.def("dtype_typestr", [](const std::string &text) { return dtype_of(text).typestr(); });
  // The dtype a host buffer would be seen with (for tests and messages).
  m.def("host_typestr", [](nb::handle host) { return HostBuffer(host).view().dtype().typestr(); });
}
}  // namespace

void bind_device_array(nb::module_ &m) {
  using gpuhal::DeviceArray;
  nb::class_<DeviceArray>(m, "_DeviceArray")
      .def_prop_ro("shape", [](const DeviceArray &a) { return to_tuple(a.shape()); })
      .def_prop_ro("strides", [](const DeviceArray &a) { return to_tuple(a.strides()); })
      .def_prop_ro("typestr", [](const DeviceArray &a) { return a.dtype().typestr(); })
      .def_prop_ro("ndim", &DeviceArray::ndim)
      .def_prop_ro("size", &DeviceArray::size)
      .def_prop_ro("itemsize", &DeviceArray::itemsize)
      .def_prop_ro("nbytes", &DeviceArray::nbytes)
      .def_prop_ro("alloc_size", &DeviceArray::alloc_size)
      .def_prop_ro("device_pointer", &DeviceArray::device_pointer)
      .def_prop_ro("is_managed", &DeviceArray::is_managed)
      .def_prop_ro("context", &DeviceArray::context)
      .def("is_c_contiguous", &DeviceArray::is_c_contiguous)
      .def("is_f_contiguous", &DeviceArray::is_f_contiguous)
      .def("getitem", [](const DeviceArray &a, nb::handle key) { return a.view(indices_from(key)); })
      .def("reshape", [](const DeviceArray &a, const gpuhal::Shape &s,
                         const std::string &order) { return a.reshape(s, order_of(order)); })
      .def("ravel", [](const DeviceArray &a, const std::string &order) { return a.ravel(order_of(order)); })
      .def("transpose", [](const DeviceArray &a, const std::vector<int> &axes) { return a.transpose(axes); })
      .def("view_dtype", [](const DeviceArray &a, const std::string &t) { return a.view(dtype_of(t)); })
      .def(
          "copy_from_host",
          [](const DeviceArray &a, nb::handle src, std::optional<gpuhal::Stream> stream) {
            HostBuffer b(src);
            {
              ReleasedCall unlocked;
              maybe_on(stream, [&](const auto &...s) { a.copy_from_host(b.view(), s...); });
            }
            if (stream) keep_until_ran(*stream, src);
          },
          nb::arg("src"), nb::arg("stream").none())
      .def(
          "copy_from_device",
          [](const DeviceArray &a, const DeviceArray &src, std::optional<gpuhal::Stream> stream) {
            maybe_on(stream, [&](const auto &...s) { a.copy_from_device(src, s...); });
          },
          nb::arg("src"), nb::arg("stream").none(), release_gil())
      .def(
          "copy_to_host_into",
          [](const DeviceArray &a, nb::handle dst, std::optional<gpuhal::Stream> stream) {
            HostBuffer b(dst, true);
            {
              ReleasedCall unlocked;
              maybe_on(stream, [&](const auto &...s) { a.copy_to_host(b.view(), s...); });
            }
            if (stream) keep_until_ran(*stream, dst);
          },
          nb::arg("dst"), nb::arg("stream").none())
      .def(
          "copy_to_host",
          [](const DeviceArray &a, std::optional<gpuhal::Stream> stream) {
            HostMemoryHolder h;
            {
              ReleasedCall unlocked;
              h.array = stream ? a.copy_to_host(*stream) : a.copy_to_host();
            }
            h.view = h.array.view();
            return h;
          },
          nb::arg("stream").none())
      .def(
          "memset",
          [](const DeviceArray &a, uint8_t value, std::optional<gpuhal::Stream> stream) {
            maybe_on(stream, [&](const auto &...s) { a.memset(value, s...); });
          },
          nb::arg("value"), nb::arg("stream").none(), release_gil())
      .def(
          "assign_device",
          [](const DeviceArray &a, const DeviceArray &src, std::optional<gpuhal::Stream> stream) {
            maybe_on(stream, [&](const auto &...s) { a.assign(src, s...); });
          },
          nb::arg("src"), nb::arg("stream").none(), release_gil())
      .def(
          "assign_host",
          [](const DeviceArray &a, nb::handle src, std::optional<gpuhal::Stream> stream) {
            HostBuffer b(src);
            {
              ReleasedCall unlocked;
              maybe_on(stream, [&](const auto &...s) { a.assign(b.view(), s...); });
            }
            if (stream) keep_until_ran(*stream, src);
          },
          nb::arg("src"), nb::arg("stream").none())
      .def(
          "fill",
          [](const DeviceArray &a, nb::handle value, std::optional<gpuhal::Stream> stream) {
            fill_from(a, value, stream);
          },
          nb::arg("value"), nb::arg("stream").none())
      .def("host_view",
           [](const DeviceArray &a) {
             return HostMemoryHolder{a.host_view(), {}, a};
           })
      .def("same_memory", [](const DeviceArray &a, const DeviceArray &b) { return a.memory() == b.memory(); });
  bind_device_array_functions(m);
}

}  // namespace gpuhal_py

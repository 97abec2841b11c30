// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Kernels: gpuhal.compile(source) and launches with Numba's argument rules.
#include <cstring>
#include <deque>

#include "bindings.hpp"

namespace gpuhal_py {
namespace {

// A scalar argument of a given dtype (a NumPy scalar keeps its type).
struct ScalarArg {
  gpuhal::DType dtype;
  unsigned char bytes[8] = {};
};

template <class T>
gpuhal::KernelArg typed(const unsigned char *bytes) {
  T v;
  std::memcpy(&v, bytes, sizeof v);
  return gpuhal::KernelArg(v);
}

gpuhal::KernelArg scalar_arg(const ScalarArg &s) {
  using namespace gpuhal::dtypes;
  const gpuhal::DType d = s.dtype;
  if (d == int8) return typed<int8_t>(s.bytes);
  if (d == int16) return typed<int16_t>(s.bytes);
  if (d == int32) return typed<int32_t>(s.bytes);
  if (d == int64) return typed<int64_t>(s.bytes);
  if (d == uint8) return typed<uint8_t>(s.bytes);
  if (d == uint16) return typed<uint16_t>(s.bytes);
  if (d == uint32) return typed<uint32_t>(s.bytes);
  if (d == uint64) return typed<uint64_t>(s.bytes);
  if (d == float32) return typed<float>(s.bytes);
  if (d == float64) return typed<double>(s.bytes);
  throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_DTYPE, "a kernel scalar of dtype " + d.name() + " is not supported");
}

}  // namespace

std::vector<gpuhal::KernelArg> args_from(const nb::sequence &args, std::deque<HostBuffer> &held) {
  std::vector<gpuhal::KernelArg> out;
  size_t i = 0;
  for (nb::handle a : args) {
    PyObject *o = a.ptr();
    gpuhal::DeviceArray *d = nullptr;
    ScalarArg *s = nullptr;
    if (nb::try_cast(a, d, false) && d) {
      out.emplace_back(*d);
    } else if (nb::try_cast(a, s, false) && s) {
      out.push_back(scalar_arg(*s));
    } else if (PyBool_Check(o)) {
      throw nb::type_error(("kernel argument " + std::to_string(i + 1) +
                            ": bool has no kernel type; pass an int or a NumPy integer").c_str());
    } else if (PyLong_Check(o)) {
      int overflow = 0;
      long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
      if (!overflow) {
        out.emplace_back(static_cast<int64_t>(v));
      } else {
        unsigned long long u = PyLong_AsUnsignedLongLong(o);
        if (PyErr_Occurred()) {
          PyErr_Clear();
          throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE,
                              "kernel argument " + std::to_string(i + 1) + ": integer out of range of 64 bits");
        }
        out.emplace_back(static_cast<uint64_t>(u));
      }
    } else if (PyFloat_Check(o)) {
      out.emplace_back(PyFloat_AsDouble(o));
    } else if (!PyObject_CheckBuffer(o)) {
      // Arguments are counted from 1, as the core's launch errors count them.
      throw nb::type_error(("kernel argument " + std::to_string(i + 1) + ": " +
                            std::string(nb::type_name(a.type()).c_str()) +
                            " is no kernel argument (a device array, a host array with the buffer protocol, an "
                            "int, a float or a NumPy scalar)")
                               .c_str());
    } else {
      held.emplace_back(a);  // a host array: copied in (and back) by the launch
      out.emplace_back(held.back().view());
    }
    ++i;
  }
  return out;
}

namespace {

gpuhal::Dim3 dim3_of(const std::vector<uint32_t> &v, const char *what) {
  if (v.empty() || v.size() > 3)
    throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, std::string(what) + " must have 1 to 3 dimensions");
  return gpuhal::Dim3(v[0], v.size() > 1 ? v[1] : 1, v.size() > 2 ? v[2] : 1);
}

}  // namespace

void bind_kernels(nb::module_ &m) {
  nb::class_<ScalarArg>(m, "_Scalar")
      .def("__init__", [](ScalarArg *s, const std::string &typestr, nb::bytes value) {
        new (s) ScalarArg{gpuhal::DType::parse(typestr), {}};
        if (value.size() != size_t(s->dtype.itemsize()) || value.size() > sizeof s->bytes)
          throw gpuhal::Error(gpuhal::Status::ERROR_INVALID_VALUE, "scalar of " + std::to_string(value.size()) + " bytes");
        std::memcpy(s->bytes, value.c_str(), value.size());
      });

  nb::class_<gpuhal::Module>(m, "_Module")
      .def_prop_ro("kernel_names", &gpuhal::Module::kernel_names)
      .def_prop_ro("lowered_source", &gpuhal::Module::lowered_source)
      .def("kernel", &gpuhal::Module::kernel);
  m.def("compile",
        [](const gpuhal::Context &ctx, const std::string &source, const std::string &options,
           const std::vector<std::pair<std::string, nb::object>> &constants) {
          gpuhal::ModuleOptions o;
          o.compiler_options = options;
          for (const auto &c : constants) o.constant(c.first, HostBuffer(c.second).view());  // copied now
          ReleasedCall unlocked;
          return gpuhal::Module::compile(ctx, source, o);
        });

  nb::class_<gpuhal::Kernel>(m, "_Kernel")
      .def_prop_ro("name", &gpuhal::Kernel::name)
      .def_prop_ro("parameter_count", &gpuhal::Kernel::parameter_count)
      .def("attributes",
           [](const gpuhal::Kernel &k) {
             const gpuhal::KernelAttributes a = k.attributes();
             nb::dict d;
             d["max_threads_per_block"] = a.max_threads_per_block;
             d["static_shared_bytes"] = a.static_shared_bytes;
             d["max_dynamic_shared_bytes"] = a.max_dynamic_shared_bytes;
             d["local_bytes_per_thread"] = a.local_bytes_per_thread;
             d["registers_per_thread"] = a.registers_per_thread;
             d["preferred_block_multiple"] = a.preferred_block_multiple;
             return d;
           })
      .def("max_active_blocks_per_unit", &gpuhal::Kernel::max_active_blocks_per_unit, nb::arg("block_threads"),
           nb::arg("dynamic_shared_bytes") = 0)
      .def("suggest_block_size",
           [](const gpuhal::Kernel &k, uint32_t dynamic_shared_bytes) {
             const gpuhal::BlockSizeSuggestion s = k.suggest_block_size(dynamic_shared_bytes);
             return std::make_pair(s.block, s.min_grid);
           },
           nb::arg("dynamic_shared_bytes") = 0)
      .def("launch", [](const gpuhal::Kernel &k, const std::vector<uint32_t> &grid, const std::vector<uint32_t> &block,
                        std::optional<gpuhal::Stream> stream, uint32_t shared_bytes, const nb::sequence &args) {
        gpuhal::Dim3 g = dim3_of(grid, "grid"), b = dim3_of(block, "block");
        std::deque<HostBuffer> held;
        std::vector<gpuhal::KernelArg> list = args_from(args, held);
        ReleasedCall unlocked;
        if (stream)
          k.launch(g, b, list, *stream, shared_bytes);
        else
          k.launch(g, b, list, shared_bytes);
      });
}

}  // namespace gpuhal_py

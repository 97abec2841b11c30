// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Inter-process arrays (Numba's get_ipc_handle / IpcArrayHandle.open).
#include "bindings.hpp"

namespace gpuhal_py {

void bind_ipc(nb::module_ &m) {
  nb::class_<gpuhal::IpcArrayHandle>(m, "_IpcArrayHandle")
      .def_prop_ro("shape", [](const gpuhal::IpcArrayHandle &h) { return to_tuple(h.shape); })
      .def_prop_ro("strides", [](const gpuhal::IpcArrayHandle &h) { return to_tuple(h.strides); })
      .def_prop_ro("typestr", [](const gpuhal::IpcArrayHandle &h) { return h.dtype.typestr(); })
      .def_prop_ro("backend", [](const gpuhal::IpcArrayHandle &h) { return h.memory.backend; })
      .def("serialize", &gpuhal::IpcArrayHandle::serialize)
      .def_static("deserialize", &gpuhal::IpcArrayHandle::deserialize);
  m.def("get_ipc_handle", [](const gpuhal::DeviceArray &a) { return gpuhal::get_ipc_handle(a); }, release_gil());

  nb::class_<gpuhal::IpcArray>(m, "_IpcArray")
      .def_prop_ro("array", [](const gpuhal::IpcArray &a) { return a.array(); })
      .def("close", &gpuhal::IpcArray::close, release_gil());
  m.def("open_ipc_array",
        [](const gpuhal::Context &ctx, const gpuhal::IpcArrayHandle &h) { return gpuhal::open_ipc_array(ctx, h); },
        release_gil());
}

}  // namespace gpuhal_py

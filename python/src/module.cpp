// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// gpuhal._gpuhal: the extension module behind the gpuhal Python package.
#include "bindings.hpp"

NB_MODULE(_gpuhal, m) {
  m.doc() = "gpuhal's C++ core, bound for the gpuhal package (use gpuhal, not this module)";
  gpuhal_py::bind_errors(m);
  gpuhal_py::bind_runtime(m);
  gpuhal_py::bind_streams(m);
  gpuhal_py::bind_device_array(m);
  gpuhal_py::bind_host_memory(m);
  gpuhal_py::bind_kernels(m);
  gpuhal_py::bind_graphs(m);
  gpuhal_py::bind_dlpack(m);
  gpuhal_py::bind_ipc(m);
  gpuhal_py::bind_memory_manager(m);
  gpuhal_py::bind_log(m);
  gpuhal::Version v = gpuhal::version();
  m.attr("__version__") = v.string;
  m.attr("plugin_abi_version") = nb::make_tuple(v.plugin_abi_major, v.plugin_abi_minor);
}

// SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
// Graphs: Stream.capture() (python/gpuhal/_graphs.py) over Graph and
// GraphExec.
#include "bindings.hpp"

namespace gpuhal_py {

void bind_graphs(nb::module_ &m) {
  nb::class_<gpuhal::Graph>(m, "Graph", "Work recorded from a stream (Stream.end_capture)")
      .def_prop_ro("node_count", &gpuhal::Graph::node_count)
      .def_prop_ro("kernel_node_count", &gpuhal::Graph::kernel_node_count)
      .def("instantiate", &gpuhal::Graph::instantiate, release_gil(), "An executable copy to launch");

  nb::class_<gpuhal::GraphExec>(m, "GraphExec", "An instantiated graph: launch() runs all of its work")
      .def_prop_ro("kernel_node_count", &gpuhal::GraphExec::kernel_node_count)
      .def("launch", &gpuhal::GraphExec::launch, nb::arg("stream"), release_gil(),
           "Runs the graph on `stream`, after the exec's previous launch")
      .def(
          "update_kernel_args",
          [](const gpuhal::GraphExec &x, size_t node, const nb::sequence &args) {
            std::deque<HostBuffer> held;  // host arrays are refused by the core, but converted first
            std::vector<gpuhal::KernelArg> list = args_from(args, held);
            ReleasedCall unlocked;
            x.update_kernel_args(node, list);
          },
          nb::arg("kernel_node"), nb::arg("args"),
          "New arguments for the kernel launch captured `kernel_node`-th, for later launches");
}

}  // namespace gpuhal_py

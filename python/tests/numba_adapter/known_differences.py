# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Where gpuhal differs from numba-cuda on purpose, or has not caught up yet:
each of numba-cuda's tests that fails through the adapter, with the reason
(docs/python.md has the same list). The adapter marks them as strict
xfails: a test listed here that starts passing fails the run until it is
taken off, and a test not listed here that fails, fails the run.

Backends: "host", "cuda-fake" (the tests' fake CUDA driver), "cuda" (a GPU).
"""

_ALL = ("host", "cuda-fake", "cuda")

DIFFERENCES = {
    # gpuhal does more than Numba here (NumPy's rules).
    "cudadrv/test_cuda_ndarray.py::TestCudaNDArray::test_devicearray_transpose_wrongdim": (
        _ALL, "gpuhal transposes arrays of any rank as views (NumPy's rule); Numba refuses all but 2-D"),
    "cudapy/test_array.py::TestCudaArray::test_array_like_2d_view_transpose_device": (
        _ALL, "gpuhal's .T of a non-contiguous array is a view (NumPy's rule), so *_like keeps its order; "
              "Numba's .T makes a contiguous copy"),
    "cudapy/test_cuda_array_interface.py::TestCudaArrayInterface::test_negative_strided_copy_to_host": (
        _ALL, "gpuhal copies negatively strided arrays; Numba refuses them (NotImplementedError)"),
    "cudadrv/test_cuda_ndarray.py::TestCudaNDArray::test_devicearray_contiguous_copy_device": (
        ("host", "cuda"), "gpuhal copies between device arrays of different layouts element by element (a "
                          "kernel); Numba refuses them (ValueError)"),
}


# Tests whose cases run as unittest subtests: their failures are reported
# apart from the test's own outcome, which an xfail cannot see; these are
# skipped with the reason instead.
SUBTESTS = {"cudapy/test_array.py::TestCudaArray::test_array_like_2d_view_transpose_device"}


def reason(nodeid, backend):
    """The listed reason for `nodeid` on `backend`, or None."""
    for key, (backends, why) in DIFFERENCES.items():
        if nodeid.endswith(key) and backend in backends:
            return why
    return None

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs numba-cuda's memory and array test files, as installed from PyPI,
against gpuhal (numba_adapter_plugin.py), and prints per-file counts.

    python run_numba_tests.py [--fake-cuda] [pytest options]

The files are the ones docs/python.md lists; the backend is GPUHAL_BACKEND's.
"""

import os
import sys
import tempfile

FILES = [
    "cudadrv.test_cuda_ndarray", "cudadrv.test_cuda_memory", "cudadrv.test_array_attr",
    "cudadrv.test_cuda_array_slicing", "cudadrv.test_deallocations", "cudadrv.test_emm_plugins",
    "cudadrv.test_host_alloc", "cudadrv.test_managed_alloc", "cudadrv.test_pinned", "cudadrv.test_streams",
    "cudadrv.test_events", "cudapy.test_array_methods", "cudapy.test_cuda_array_interface", "cudapy.test_ipc",
    "cudapy.test_slicing", "cudapy.test_stream_api", "cudapy.test_array",
]

if __name__ == "__main__":
    import pytest

    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, here)
    if "--fake-cuda" in sys.argv:
        # Over the tests' fake CUDA driver, which runs no device code: it
        # refuses launches, and the adapter counts those tests as not
        # applicable there (numba_adapter_plugin.py).
        sys.argv.remove("--fake-cuda")
        os.environ["GPUHAL_NUMBA_ADAPTER_FAKE_CUDA"] = "1"
        os.environ["FAKE_CUDA_REFUSE_LAUNCHES"] = "1"
    # Child processes (spawn) map the names too (sitecustomize.py).
    os.environ["GPUHAL_NUMBA_ADAPTER"] = "1"
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in [here, os.environ.get("PYTHONPATH")] if p)
    with tempfile.TemporaryDirectory() as root:
        args = ["-p", "numba_adapter_plugin", "-p", "no:cacheprovider", "--import-mode=importlib",
                f"--rootdir={root}", "-c", os.devnull, "--confcutdir", root, "--pyargs"]
        args += ["numba.cuda.tests." + f for f in FILES] + sys.argv[1:]
        sys.exit(pytest.main(args))

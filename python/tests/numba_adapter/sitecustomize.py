# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Child processes of numba-cuda's tests (multiprocessing's spawn: IPC
tests) start a fresh interpreter: run_numba_tests.py puts this folder on
their PYTHONPATH, so they get the same name mapping as the parent before
they unpickle the test's function."""

import os

if os.environ.get("GPUHAL_NUMBA_ADAPTER") == "1":
    try:
        import numba_adapter_plugin

        numba_adapter_plugin.install()
    except ImportError:  # numba-cuda is not installed here: nothing to map
        pass

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's documented memory-management program runs on gpuhal
(examples/python/numba_memory.py; only the import line and the kernel differ)."""

import pathlib
import subprocess
import sys

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "numba_memory.py"


def test_numba_memory_example_runs():
    p = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "numba_memory: OK on" in p.stdout

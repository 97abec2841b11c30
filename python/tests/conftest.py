# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Fixtures of gpuhal's Python tests.

The tests run in the backend GPUHAL_BACKEND names (the host backend by
default). Tests that need another process (IPC, the cuda backend over the
fake driver, a backend chosen before first use) run Python subprocesses.
GPUHAL_TEST_FAKE_CUDA and GPUHAL_TEST_FAKE_HSA name the fake CUDA driver
and HSA runtime (tests/fakes/) that the README's test command builds;
without them those tests are skipped.
"""

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import gpuhal


# Behaviour only the host backend has (NumPy's memory is its device memory,
# every stream handle is checked); the other backends' side of the same
# rule is tested beside it where there is one.
host_backend_only = pytest.mark.skipif(gpuhal.backend() != "host",
                                       reason="the host backend's behaviour (this backend's is tested beside it)")


@pytest.fixture
def ctx():
    return gpuhal.current_context()


@pytest.fixture(scope="session")
def twice():
    """A kernel doubling n floats in place."""
    return gpuhal.compile(textwrap.dedent("""
        GPUHAL_KERNEL void twice(GPUHAL_GLOBAL float *x, int n) {
          int i = gpuhal_global_id(0);
          if (i < n) x[i] *= 2.0f;
        }
        GPUHAL_KERNEL void add(GPUHAL_GLOBAL float *out, GPUHAL_GLOBAL const float *a, float b, int n) {
          int i = gpuhal_global_id(0);
          if (i < n) out[i] = a[i] + b;
        }
    """))


def run_python(code, env=None, timeout=120):
    """Runs `code` in a fresh interpreter; returns (returncode, stdout, stderr)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=full_env, capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def python():
    return run_python


def _fake_backend_env(variable, backend, option, what):
    """The environment running `backend` over the tests' fake `what`
    (named by `variable`), or a skip when the test command did not set it."""
    path = os.environ.get(variable)
    if not path or not os.path.exists(path):
        pytest.skip(f"{variable} does not name the fake {what} (the README's test command sets it)")
    return {"GPUHAL_BACKEND": backend, option: path}


@pytest.fixture
def fake_cuda_env():
    return _fake_backend_env("GPUHAL_TEST_FAKE_CUDA", "cuda", "GPUHAL_CUDA_DRIVER", "CUDA driver")


@pytest.fixture
def fake_hsa_env():
    return _fake_backend_env("GPUHAL_TEST_FAKE_HSA", "hsa", "GPUHAL_HSA_RUNTIME", "HSA runtime")


def assert_same(host, expected):
    np.testing.assert_array_equal(host, expected)
    assert host.dtype == expected.dtype

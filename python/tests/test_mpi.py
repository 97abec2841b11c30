# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.mpi with mpi4py on two ranks (mpirun -n 2 over loopback): the
checks of mpi_checks.py on the host backend and over the fake CUDA driver,
and examples/python/mpi_allreduce.py on each path. Skipped without mpirun
or mpi4py, unless GPUHAL_TEST_REQUIRE_MPI=1 (the README's test command sets
it: there a missing MPI is a failure)."""

import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
EXAMPLE = HERE.parents[1] / "examples" / "python" / "mpi_allreduce.py"


def _mpirun():
    mpirun = shutil.which("mpirun")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        mpi4py = None
    if mpirun is None or mpi4py is None:
        if os.environ.get("GPUHAL_TEST_REQUIRE_MPI") == "1":
            pytest.fail("GPUHAL_TEST_REQUIRE_MPI=1 but mpirun or mpi4py is missing")
        pytest.skip("mpirun or mpi4py is not installed")
    return mpirun


def run_two_ranks(args, env=None):
    full = dict(os.environ)
    # Open MPI: root allowed (CI), more ranks than cores, only the
    # shared-memory and self transports (no network).
    full.update({"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                 "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_btl": "self,vader", "GPUHAL_HOST_DEVICES": "2"})
    full.update(env or {})
    p = subprocess.run([_mpirun(), "-n", "2", sys.executable, *map(str, args)], env=full, capture_output=True,
                       text=True, timeout=180)
    return p.returncode, p.stdout, p.stderr


def test_two_ranks_on_the_host_backend():
    rc, out, err = run_two_ranks([HERE / "mpi_checks.py"], {"GPUHAL_BACKEND": "host"})
    assert rc == 0, out + err
    for r in (0, 1):
        assert f"mpi_checks rank {r}: host, paths auto,staged,pass-through: 0 failed" in out, out + err


def test_two_ranks_over_the_fake_cuda_driver(fake_cuda_env):
    # Debian's Open MPI is not CUDA-aware: automatic is staged, pass-through refused.
    env = dict(fake_cuda_env, FAKE_CUDA_DEVICES="2", GPUHAL_TEST_NO_KERNEL_RESULTS="1")
    rc, out, err = run_two_ranks([HERE / "mpi_checks.py"], env)
    assert rc == 0, out + err
    for r in (0, 1):
        assert f"mpi_checks rank {r}: cuda, paths auto,staged: 0 failed" in out, out + err


@pytest.mark.parametrize("path", ["auto", "staged", "pass-through"])
def test_allreduce_example(path):
    rc, out, err = run_two_ranks([EXAMPLE, path], {"GPUHAL_BACKEND": "host"})
    assert rc == 0, out + err
    chosen = "auto: pass-through" if path == "auto" else path
    assert f"mpi_allreduce: 2 ranks on host, {chosen} path, 1048576 float64 summed and a ring of sends: exact" in out


def test_mpi_module_imports_without_mpi4py_until_used():
    # gpuhal.mpi imports mpi4py on first use only: importing it costs nothing.
    code = "import sys, gpuhal.mpi; assert 'mpi4py' not in sys.modules; print('ok')"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr

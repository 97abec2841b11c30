# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The layers (docs/layers.md) under the Python package: a Numba-style program
run with every call validated and every object accounted for
(GPUHAL_LEAK_CHECK=fail makes a leak the process's exit status), on host and
over the fake CUDA driver, and a fault injected into it surfaces as the
gpuhal error naming the entry."""
import pytest

PROGRAM = """
import numpy as np
import gpuhal
a = np.arange(4096, dtype=np.float32)
d = gpuhal.to_device(a)
s = gpuhal.stream()
p = gpuhal.pinned_array(4096, dtype=np.float32)
d.copy_to_host(p, stream=s)
s.synchronize()
assert (p == a).all()
v = d[100:200]
v.copy_to_device(np.ones(100, dtype=np.float32))
assert (d.copy_to_host()[100:200] == 1.0).all()
m = gpuhal.mapped_array(16, dtype=np.int32)
m[:] = 3
with gpuhal.defer_cleanup():
    del d, v
e = gpuhal.event()
e.record(s)
e.synchronize()
gpuhal.current_context().deallocations.clear()
print("program: OK")
"""


def _run(python, env):
    code, out, err = python(PROGRAM, env={"GPUHAL_LAYERS": "validation,leak", "GPUHAL_LEAK_CHECK": "fail", **env})
    return code, out, err


def test_a_program_through_validation_and_leak_layers_on_host(python):
    code, out, err = _run(python, {"GPUHAL_BACKEND": "host"})
    assert code == 0, err
    assert "program: OK" in out
    assert "validation:" not in err and "leak check" not in err, err


def test_a_program_through_validation_and_leak_layers_over_the_fake_cuda_driver(python, fake_cuda_env):
    code, out, err = _run(python, fake_cuda_env)
    assert code == 0, err
    assert "program: OK" in out
    assert "validation:" not in err and "leak check" not in err, err


@pytest.mark.parametrize("entry", ["mem_alloc:1:2", "stream_create:1:2"])
def test_an_injected_fault_is_the_error_naming_the_entry(python, entry):
    code, out, err = python(
        """
import gpuhal
try:
    gpuhal.device_array(16)
    gpuhal.stream()
except gpuhal.Error as e:
    print("refused:", e)
""",
        env={"GPUHAL_BACKEND": "host", "GPUHAL_LAYERS": "fault", "GPUHAL_FAULT": entry},
    )
    assert code == 0, err
    assert f"{entry.split(':')[0]}: fault injected by GPUHAL_FAULT" in out, out

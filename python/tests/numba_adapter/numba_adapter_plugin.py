# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A pytest plugin that runs numba-cuda's own test files against gpuhal.

It imports numba-cuda (installed from PyPI, unchanged) and rebinds the
names its tests use to gpuhal's (numba_names.py) before the test files are
collected, as a user porting a Numba program would rename imports. The test
files themselves are neither copied nor edited. Tests that compile Python
kernels or use Numba's type system are skipped as not applicable, with the
reason; a name gpuhal lacks fails the test that uses it, naming it.
"""

import importlib
import pathlib

import pytest

import gpuhal
import numba_names
from numba_names import MissingInGpuhal, NotApplicable

_KERNEL_FACTORIES = {"jit", "vectorize", "guvectorize", "reduce", "Reduce", "declare_device"}


class _NotApplicableKernel:
    """What @cuda.jit makes: using it says the test is not applicable."""

    def __init__(self, name):
        self._name = name

    def _refuse(self, *args, **kwargs):
        raise NotApplicable(f"compiles a Python kernel (numba.cuda.{self._name})")

    __call__ = __getitem__ = _refuse

    def __getattr__(self, attr):
        self._refuse()


class _NotApplicableName:
    def __init__(self, name):
        self._name = name

    def __call__(self, *args, **kwargs):
        if self._name in _KERNEL_FACTORIES:
            if len(args) == 1 and callable(args[0]) and not kwargs:
                return _NotApplicableKernel(self._name)
            return lambda *a, **k: _NotApplicableKernel(self._name)
        raise NotApplicable(f"uses numba.cuda.{self._name} (Numba's kernel language)")

    def __getattr__(self, attr):
        return _NotApplicableName(f"{self._name}.{attr}")

    def __getitem__(self, key):
        raise NotApplicable(f"uses numba.cuda.{self._name} (Numba's kernel language)")


def _missing(where, name):
    """A stand-in for a Numba name gpuhal lacks: a class (tests subclass some
    of them at import) that raises MissingInGpuhal when called."""

    def refuse(*args, **kwargs):
        raise MissingInGpuhal(f"gpuhal has no counterpart of {where}.{name}")

    return type(name, (), {"__init__": refuse, "__gpuhal_missing__": True})


def _bind(module, where, mapping, source):
    for numba_name, gpuhal_name in mapping.items():
        value = getattr(source, gpuhal_name, None)
        setattr(module, numba_name, value if value is not None else _missing(where, numba_name))


def install():
    import numba.cuda as cuda
    import numba.cuda.cudadrv.devicearray as devicearray
    import numba.cuda.cudadrv.devices as devices
    import numba.cuda.cudadrv.driver as driver

    gpuhal_driver = getattr(gpuhal, "driver", None)
    _bind(cuda, "numba.cuda", numba_names.CUDA_NAMES, gpuhal)
    _bind(driver, "numba.cuda.cudadrv.driver", {n: n for n in numba_names.DRIVER_NAMES}, gpuhal_driver)
    _bind(devicearray, "numba.cuda.cudadrv.devicearray", numba_names.DEVICEARRAY_NAMES, gpuhal)
    _bind(devices, "numba.cuda.cudadrv.devices", numba_names.DEVICES_NAMES, gpuhal)
    for name in numba_names.NOT_APPLICABLE:
        setattr(cuda, name, _NotApplicableName(name))
    try:
        import numba

        for name in ("vectorize", "guvectorize"):
            setattr(numba, name, _NotApplicableName(name))
        setattr(cuda, "types", getattr(numba, "types", None))
    except ImportError:
        pass


def pytest_configure(config):
    install()


class _ModuleByName(pytest.Module):
    """A test file imported under its package name (numba.cuda.tests....),
    not one pytest derives from the path: the functions it hands to child
    processes (multiprocessing's spawn) must unpickle there by that name."""

    dotted_name = ""

    def _getobj(self):
        return importlib.import_module(self.dotted_name)


def pytest_pycollect_makemodule(module_path, parent):
    parts = pathlib.Path(module_path).with_suffix("").parts
    for i in range(len(parts) - 2):
        if parts[i:i + 3] == ("numba", "cuda", "tests"):
            module = _ModuleByName.from_parent(parent, path=pathlib.Path(module_path))
            module.dotted_name = ".".join(parts[i:])
            return module
    return None


@pytest.fixture
def initialize_from_pytest_config():
    """numba-cuda's own conftest fixture (not installed with the package)."""
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and call.excinfo.errisinstance(NotApplicable):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"not applicable: {call.excinfo.value}")

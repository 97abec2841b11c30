# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A pytest plugin that runs numba-cuda's own test files against gpuhal.

It imports numba-cuda (installed from PyPI, unchanged) and rebinds the
names its tests use to gpuhal's (numba_names.py) before the test files are
collected, as a user porting a Numba program would rename imports. The test
files themselves are neither copied nor edited. Tests that compile Python
kernels or use Numba's type system are skipped as not applicable, with the
reason; a name gpuhal lacks fails the test that uses it, naming it.
"""

import os
import pathlib

import pytest

import gpuhal
import known_differences
from numba_test_support import initialize_from_pytest_config, pytest_pycollect_makemodule  # noqa: F401 (hooks)
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


def _cuda_memory_only(name):
    """A stand-in, on a backend without CUDA memory, for a Numba name that
    asks about the CUDA Array Interface: using it says the test is not
    applicable (gpuhal's own answers False there, which such a test reads
    as a failure of the interface rather than its absence)."""
    def refuse(*args, **kwargs):
        raise NotApplicable(f"uses the CUDA Array Interface (numba.cuda.{name}); the '{gpuhal.backend()}' "
                            "backend's memory is not CUDA memory")

    return refuse


def _bind(module, where, mapping, source):
    for numba_name, gpuhal_name in mapping.items():
        value = getattr(source, gpuhal_name, None)
        setattr(module, numba_name, value if value is not None else _missing(where, numba_name))


def _forward(module, names, target):
    """Makes `module`'s attributes `names` read and write `target`'s (a
    subclass of the module's type whose properties forward, as a renamed
    import would)."""
    def forwarding(name):
        return property(lambda self: getattr(target, name), lambda self, value: setattr(target, name, value))

    module.__class__ = type("Forwarding" + type(module).__name__, (type(module),),
                            {name: forwarding(name) for name in names})


def install():
    import numba.cuda as cuda
    import numba.cuda.core.config as numba_config
    import numba.cuda.cudadrv.devicearray as devicearray
    import numba.cuda.cudadrv.devices as devices
    import numba.cuda.cudadrv.driver as driver

    gpuhal_driver = getattr(gpuhal, "driver", None)
    _bind(cuda, "numba.cuda", numba_names.CUDA_NAMES, gpuhal)
    _bind(driver, "numba.cuda.cudadrv.driver", {n: n for n in numba_names.DRIVER_NAMES}, gpuhal_driver)
    _bind(devicearray, "numba.cuda.cudadrv.devicearray", numba_names.DEVICEARRAY_NAMES, gpuhal)
    _bind(devices, "numba.cuda.cudadrv.devices", numba_names.DEVICES_NAMES, gpuhal)
    _forward(numba_config, numba_names.CONFIG_NAMES, gpuhal.config)
    for name in numba_names.NOT_APPLICABLE:
        setattr(cuda, name, _NotApplicableName(name))
    if gpuhal.backend() != "cuda":
        for name in numba_names.CUDA_MEMORY_ONLY:
            setattr(cuda, name, _cuda_memory_only(name))
    try:
        import numba

        for name in ("vectorize", "guvectorize"):
            setattr(numba, name, _NotApplicableName(name))
        setattr(cuda, "types", getattr(numba, "types", None))
    except ImportError:
        pass


def pytest_configure(config):
    install()


def pytest_collection_modifyitems(config, items):
    """Known differences (known_differences.py) are strict xfails: one that
    starts passing fails the run until the list is updated."""
    backend = gpuhal.backend() + ("-fake" if _FAKE_CUDA else "")  # host, cuda-fake, cuda
    for item in items:
        # "cudadrv/test_x.py::Class::test" (the node id alone lacks the file:
        # the files lie outside pytest's root).
        test_id = f"{item.path.parent.name}/{item.path.name}::{item.nodeid.split('::', 1)[-1]}"
        reason = known_differences.reason(test_id, backend)
        if reason is None:
            continue
        if test_id in known_differences.SUBTESTS:
            item.add_marker(pytest.mark.skip(reason=f"known difference: {reason}"))
        else:
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))






# Over the tests' fake CUDA driver (run_numba_tests.py --fake-cuda).
_FAKE_CUDA = os.environ.get("GPUHAL_NUMBA_ADAPTER_FAKE_CUDA") == "1"


def _not_applicable_reason(excinfo):
    """Why a test's failure says it does not apply to gpuhal (or to this
    backend), or None. Each rule is one of docs/python.md's reasons."""
    if excinfo.errisinstance(NotApplicable):
        return str(excinfo.value)
    text = str(excinfo.value)
    if excinfo.errisinstance(AttributeError) and "_numba_type_" in text:
        return "uses Numba's type system (_numba_type_)"
    if excinfo.errisinstance(AttributeError) and "__cuda_array_interface__ is offered on the cuda backend only" in text:
        return f"the CUDA Array Interface describes CUDA memory; the '{gpuhal.backend()}' backend has none (DLPack is offered)"
    if gpuhal.backend() != "cuda" and excinfo.errisinstance(TypeError) and \
            "doesn't implement the cuda array interface" in text:
        return f"the CUDA Array Interface describes CUDA memory; the '{gpuhal.backend()}' backend has none"
    if _FAKE_CUDA and "cuLaunchKernel" in text:
        return "runs a kernel: the fake CUDA driver runs no device code"
    if _FAKE_CUDA and "cuIpcOpenMemHandle" in text:
        return "IPC between processes: the fake CUDA driver's memory is its own process's"
    if type(excinfo.value).__name__ == "CudaSupportError":
        return "calls NVIDIA's driver API itself, through numba-cuda's own bindings"
    if "pathfinder" in type(excinfo.value).__module__ or "cuda.core" in text:
        return "needs NVIDIA's cuda.core / driver library itself"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is None or report.when == "teardown" and report.outcome != "failed":
        return
    reason = _not_applicable_reason(call.excinfo)
    if reason is not None:
        report.outcome = "skipped"
        report.longrepr = (str(item.path), item.location[1] or 0, f"not applicable: {reason}")


_COUNTS = {}


def pytest_runtest_logreport(report):
    """Counts each test's outcome per file (subtests are not counted)."""
    if report.when != "call" and not (report.when == "setup" and report.outcome != "passed"):
        return
    if getattr(report, "context", None) is not None:  # a subtest's report
        return
    path, _, _ = report.location
    name = pathlib.Path(path).name
    outcome = "xfailed" if hasattr(report, "wasxfail") and report.outcome == "skipped" else report.outcome
    if report.outcome == "skipped" and isinstance(report.longrepr, tuple) and "not applicable" in str(report.longrepr[2]):
        outcome = "not applicable"
    counts = _COUNTS.setdefault(name, {})
    counts[outcome] = counts.get(outcome, 0) + 1


def pytest_terminal_summary(terminalreporter):
    """The per-file counts the yardstick reports (docs/python.md)."""
    write = terminalreporter.write_line
    write(f"numba-cuda's tests through gpuhal, backend {gpuhal.backend()}" + (" (fake driver)" if _FAKE_CUDA else ""))
    columns = ["passed", "failed", "xfailed", "not applicable", "skipped"]
    write(f"  {'file':34s}" + "".join(f"{c:>16s}" for c in columns))
    total = {c: 0 for c in columns}
    for name in sorted(_COUNTS):
        row = _COUNTS[name]
        for c in columns:
            total[c] += row.get(c, 0)
        write(f"  {name:34s}" + "".join(f"{row.get(c, 0):16d}" for c in columns))
    write(f"  {'all':34s}" + "".join(f"{total[c]:16d}" for c in columns))

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
import pickle

import pytest

import gpuhal
from gpuhal import _gpuhal


def test_every_status_has_a_class_with_its_name_and_code():
    for status, code, _ in _gpuhal.statuses():
        if not status.startswith("ERROR_"):
            continue
        with pytest.raises(gpuhal.Error) as info:
            _gpuhal._raise(code, "boom")
        e = info.value
        assert e.status == status and e.code == code and e.message == "boom"
        assert str(e) == f"{status}: boom"
        assert type(e).__module__ == "gpuhal"
        assert getattr(gpuhal, type(e).__name__) is type(e)


def test_python_bases_fit_the_status():
    assert issubclass(gpuhal.OutOfMemoryError, MemoryError)
    assert issubclass(gpuhal.InvalidValueError, ValueError)
    assert issubclass(gpuhal.IndexOutOfRangeError, IndexError)
    assert issubclass(gpuhal.InvalidDtypeError, TypeError)
    assert issubclass(gpuhal.NotSupportedError, NotImplementedError)
    assert issubclass(gpuhal.RequiresCopyError, NotImplementedError)
    assert not issubclass(gpuhal.LaunchFailedError, ValueError)


def test_errors_pickle():
    e = gpuhal.InvalidShapeError("ERROR_INVALID_SHAPE", 14, "negative dimension")
    back = pickle.loads(pickle.dumps(e))
    assert type(back) is gpuhal.InvalidShapeError and back.message == "negative dimension"


def test_a_failing_call_names_the_problem():
    with pytest.raises(gpuhal.InvalidShapeError, match="negative dimension -1"):
        gpuhal.device_array(-1)


def test_an_unknown_status_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="UNKNOWN_STATUS"):
        _gpuhal._raise(12345, "odd")

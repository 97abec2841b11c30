# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
import pickle
import traceback

import numpy as np
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
        assert str(e) == f"{status}: boom" and e.peer_message is None
        assert not hasattr(e, "__notes__")
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
    e = gpuhal.InvalidValueError("ERROR_INVALID_VALUE", 3, "transpose: repeated axis in transpose",
                                 "repeated axis in transpose")
    back = pickle.loads(pickle.dumps(e))
    assert str(back) == "repeated axis in transpose" and back.message == e.message and back.__notes__ == e.__notes__


def test_a_peer_message_is_the_text_and_gpuhals_message_the_note():
    code = dict((s, c) for s, c, _ in _gpuhal.statuses())["ERROR_INVALID_VALUE"]
    with pytest.raises(gpuhal.InvalidValueError) as info:
        _gpuhal._raise(code, "transpose: repeated axis in transpose", "repeated axis in transpose")
    e = info.value
    assert str(e) == "repeated axis in transpose" and e.peer_message == "repeated axis in transpose"
    assert e.message == "transpose: repeated axis in transpose" and e.status == "ERROR_INVALID_VALUE"
    assert e.__notes__ == ["gpuhal ERROR_INVALID_VALUE: transpose: repeated axis in transpose"]
    # A traceback shows both (Python 3.11 prints notes).
    printed = "".join(traceback.format_exception(e))
    assert "InvalidValueError: repeated axis in transpose" in printed
    assert "gpuhal ERROR_INVALID_VALUE: transpose: repeated axis in transpose" in printed


# Misuses NumPy refuses too, side by side with NumPy on the same array: the
# same Python exception class, NumPy's text word for word, and gpuhal's status
# and call in the message and the note.
_NUMPY_ALSO_REFUSES = {
    "repeated axis": lambda a: a.transpose((0, 0)),
    "axis out of bounds": lambda a: a.transpose((0, 2)),
    "negative axis out of bounds": lambda a: a.transpose((-3, 0)),
    "axes don't match": lambda a: a.transpose((0,)),
    "larger dtype": lambda a: a.view(np.int64),
    "smaller dtype": lambda a: a.view(np.int64).view("V3"),
    "last axis strided": lambda a: a[:, ::2].view(np.int32),
    "0-d array": lambda a: a[0:1, 0:1].reshape(()).view(np.int32),
    "index out of bounds": lambda a: a[4],
    "negative index out of bounds": lambda a: a[1, -4],
    "slice step zero": lambda a: a[::0],
}


@pytest.mark.parametrize("case", sorted(_NUMPY_ALSO_REFUSES))
def test_errors_numpy_also_raises_read_as_numpys(case):
    misuse = _NUMPY_ALSO_REFUSES[case]
    host = np.arange(12, dtype=np.int16).reshape(4, 3)
    with pytest.raises(Exception) as numpy_info:
        misuse(host)
    device = gpuhal.to_device(host)
    with pytest.raises(gpuhal.Error) as info:
        misuse(device)
    e, numpy_error = info.value, numpy_info.value
    assert isinstance(e, type(numpy_error)) or type(numpy_error).__name__ == "AxisError" and isinstance(e, ValueError)
    assert str(e) == str(numpy_error) == e.peer_message
    assert str(numpy_error) in e.message and e.__notes__ == [f"gpuhal {e.status}: {e.message}"]
    assert (device.copy_to_host() == host).all()


def test_a_failing_call_names_the_problem():
    with pytest.raises(gpuhal.InvalidShapeError, match="negative dimension -1"):
        gpuhal.device_array(-1)


def test_an_unknown_status_becomes_runtime_error():
    with pytest.raises(RuntimeError, match="UNKNOWN_STATUS"):
        _gpuhal._raise(12345, "odd")


_NUMBA_CONTIGUOUS = ("Array contains non-contiguous buffer and cannot be transferred as a single memory region. "
                     "Please ensure contiguous buffer with numpy .ascontiguousarray()")


def test_a_copy_a_byte_transfer_cannot_do_reads_as_numbas():
    a = np.arange(25).reshape(5, 5, order="F")
    d = gpuhal.to_device(a)
    with pytest.raises(ValueError) as info:
        d[2].copy_to_device(np.full(5, 5))  # d[2] of an F-order array: 40-byte strides
    e = info.value
    assert isinstance(e, gpuhal.NotContiguousError) and str(e) == _NUMBA_CONTIGUOUS
    assert e.message.endswith(": destination: " + _NUMBA_CONTIGUOUS) and "copy_from_host" in e.message
    with pytest.raises(gpuhal.NotContiguousError) as info:
        gpuhal.to_device(np.arange(20)).copy_to_device(gpuhal.to_device(np.arange(20))[::2])
    assert str(info.value) == _NUMBA_CONTIGUOUS and ": source: " in info.value.message
    assert (d.copy_to_host() == a).all()

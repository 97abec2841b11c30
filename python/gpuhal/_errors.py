# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.Error and its subclasses, one per status of gpuhal's status list.

Every failure of the C++ core reaches Python as the subclass of its status,
for example ``gpuhal.OutOfMemoryError`` for ``ERROR_OUT_OF_MEMORY``. Each
carries ``status`` (the status name), ``code`` (its value) and ``message``
(gpuhal's message, which names the failing call and, for driver failures,
the driver's own error). Where a status has an obvious Python counterpart
the class derives from it too, so ``except MemoryError`` or ``except
ValueError`` catch what they would catch in NumPy or Numba.
"""

from . import _gpuhal

__all__ = ["Error"]


class Error(Exception):
    """A gpuhal failure."""

    def __init__(self, status, code, message):
        super().__init__(f"{status}: {message}")
        self.status = status
        self.code = code
        self.message = message

    def __reduce__(self):
        return (type(self), (self.status, self.code, self.message))


Error.__module__ = "gpuhal"


# Python's own exception beside gpuhal.Error, where one fits.
_PYTHON_BASES = {
    "ERROR_INVALID_VALUE": ValueError,
    "ERROR_OUT_OF_MEMORY": MemoryError,
    "ERROR_NOT_SUPPORTED": NotImplementedError,
    "ERROR_INVALID_SHAPE": ValueError,
    "ERROR_INVALID_DTYPE": TypeError,
    "ERROR_SIZE_OVERFLOW": OverflowError,
    "ERROR_INDEX_OUT_OF_RANGE": IndexError,
    "ERROR_INCOMPATIBLE": ValueError,
    "ERROR_NOT_CONTIGUOUS": ValueError,
    "ERROR_REQUIRES_COPY": NotImplementedError,
    "ERROR_NOT_FOUND": LookupError,
    "ERROR_INVALID_CONFIG": ValueError,
}


def _class_name(status):
    words = status[len("ERROR_"):].split("_") if status.startswith("ERROR_") else status.split("_")
    return "".join(w.capitalize() for w in words) + "Error"


def _make_classes():
    classes = {}
    by_code = {}
    for status, code, text in _gpuhal.statuses():
        if not status.startswith("ERROR_"):
            continue
        name = _class_name(status)
        bases = (Error,) + ((_PYTHON_BASES[status],) if status in _PYTHON_BASES else ())
        cls = type(name, bases, {"__doc__": f"{status}: {text}.", "__module__": "gpuhal"})
        classes[name] = cls
        by_code[code] = cls
    return classes, by_code


_classes, _by_code = _make_classes()
_codes = {status: code for status, code, _ in _gpuhal.statuses()}


def raise_status(status, message):
    """Raises the gpuhal.Error subclass of `status` (a name of the status list)."""
    _gpuhal._raise(_codes[status], message)

globals().update(_classes)
__all__ += sorted(_classes)


class AxisError(_classes["IndexOutOfRangeError"], ValueError):
    """An axis out of range (``ERROR_INDEX_OUT_OF_RANGE``), as NumPy's
    ``numpy.exceptions.AxisError``: both an ``IndexError`` and a
    ``ValueError``, so code written for Numba (which raises ``ValueError``)
    and for NumPy catches it."""


AxisError.__module__ = "gpuhal"
__all__.append("AxisError")
_gpuhal._set_error_classes(_by_code)

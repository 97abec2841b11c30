# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.Error and its subclasses, one per status of gpuhal's status list.

Every failure of the C++ core reaches Python as the subclass of its status,
for example ``gpuhal.OutOfMemoryError`` for ``ERROR_OUT_OF_MEMORY``. Each
carries ``status`` (the status name), ``code`` (its value) and ``message``
(gpuhal's message, which names the failing call and, for driver failures,
the driver's own error). Where a status has an obvious Python counterpart
the class derives from it too, so ``except MemoryError`` or ``except
ValueError`` catch what they would catch in NumPy or Numba.

``str(error)`` reads ``"STATUS: message"``, except where NumPy or Numba
raise an error for the same misuse: then it is their sentence, word for word
(``peer_message``), so code that compares NumPy's or Numba's messages keeps
working, and gpuhal's own message (status, call, detail) is attached as a
note, which Python 3.11 and later print under the traceback.
"""

from . import _gpuhal

__all__ = ["Error"]


class Error(Exception):
    """A gpuhal failure."""

    def __init__(self, status, code, message, peer_message=None):
        own = f"{status}: {message}"
        super().__init__(peer_message or own)
        self.status = status
        self.code = code
        self.message = message
        self.peer_message = peer_message or None
        if self.peer_message:
            # PEP 678's notes (Python 3.11+ prints them; earlier versions
            # keep the list, and `message` holds the same text).
            self.__notes__ = [f"gpuhal {own}"]

    def __reduce__(self):
        return (type(self), (self.status, self.code, self.message, self.peer_message))


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


def raise_status(status, message, peer_message=""):
    """Raises the gpuhal.Error subclass of `status` (a name of the status
    list); `peer_message`, where given, is NumPy's or Numba's sentence for the
    same misuse (the error's str())."""
    _gpuhal._raise(_codes[status], message, peer_message)

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

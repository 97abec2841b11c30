# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The native handle of a stream, as Numba hands it out."""
import ctypes
import operator

__all__ = ["StreamHandle"]


def _as_int(x):
    if isinstance(x, ctypes.c_void_p):
        return x.value or 0
    return operator.index(x)


class StreamHandle(ctypes.c_void_p):
    """A stream's native handle (a ``CUstream`` on cuda; 0 for the default
    stream and on backends without native streams).

    A ``ctypes.c_void_p``, as Numba's ``Stream.handle`` is with its ctypes
    binding: ``.value`` is the address (``None`` for 0) and it passes to ctypes
    functions as a pointer. ``int(handle)`` gives the address too, as
    NVIDIA's bindings' ``CUstream`` does, so code written for either binding
    works (``cupy.cuda.ExternalStream(int(s.handle))``); it compares equal to
    another handle or int of the same address, and hashes as that int."""

    __slots__ = ()

    def __int__(self):
        return self.value or 0

    __index__ = __int__

    def __eq__(self, other):
        try:
            return int(self) == _as_int(other)
        except TypeError:
            return NotImplemented

    def __ne__(self, other):
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self):
        return hash(int(self))

    def __repr__(self):
        return f"StreamHandle(0x{int(self):x})"

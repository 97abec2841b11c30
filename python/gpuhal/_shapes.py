# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Shapes, strides and dtypes as the C++ layer takes them, checked by
Numba's rules (TypeError for what is not an integer, never a silent
truncation). The package's lowest layer: imports nothing of it."""

import numpy as np


def _integers(values, what):
    """Python ints (or objects with __index__, as NumPy's integers) as a list;
    TypeError for anything else, never a silent truncation (Numba's rule)."""
    # The common shapes first: an int, or a tuple or list of ints (type()
    # is exact, so bools and other int subclasses take the checks below).
    kind = type(values)
    if kind is int:
        return [values]
    if (kind is tuple or kind is list) and all(type(v) is int for v in values):
        return list(values)
    if isinstance(values, (int, np.integer)) and not isinstance(values, bool):
        values = [values]
    try:
        items = list(values)
    except TypeError:
        raise TypeError(f"{what} must be an integer or a sequence of integers, not {type(values).__name__}") from None
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{what} must be integers, got {v!r} ({type(v).__name__}) in {values!r}")
        out.append(int(v))
    return out


def _integer(value, what):
    """One integer (a Python int, or an object with __index__ as NumPy's
    integers) as a Python int; TypeError naming `what` for anything else (a
    float, a bool, None), never a silent truncation: Numba passes sizes,
    offsets and pointers through ctypes, which refuses them too."""
    if type(value) is int:
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__} ({value!r})")
    return int(value)


def _shape(shape):
    return _integers(shape, "shape")


def _strides(strides):
    return [] if strides is None else _integers(strides, "strides")


# dtype argument -> (np.dtype, its typestr), for the hashable arguments
# seen (np.float32, "f4", a dtype object ...): np.dtype() on every
# allocation costs more than the allocation itself on the host backend.
_DTYPES = {}


def _dtype_and_typestr(dtype):
    try:
        return _DTYPES[dtype]
    except (KeyError, TypeError):
        pass
    dt = np.dtype(dtype)
    try:
        if len(_DTYPES) < 512:
            _DTYPES[dtype] = (dt, dt.str)
    except TypeError:  # unhashable (a list describing a structured dtype)
        pass
    return dt, dt.str


def _typestr(dtype):
    return _dtype_and_typestr(dtype)[1]

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Strided transfers of sub-tiles and boxes: with ``rect_copies`` (the driver's
2-D / 3-D copies) only their elements move; without, the staged paths. Either
way the results are NumPy's, and no byte outside the region changes."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gpuhal


def test_capability_is_reported():
    assert isinstance(gpuhal.current_context().supports("rect_copies"), bool)
    with pytest.raises(Exception, match="unknown capability"):
        gpuhal.current_context().supports("rect_copy")


@st.composite
def boxes(draw):
    ndim = draw(st.integers(2, 3))
    shape = tuple(draw(st.integers(1, 12)) for _ in range(ndim))
    box = []
    for n in shape:
        lo = draw(st.integers(0, n - 1))
        hi = draw(st.integers(lo + 1, n))
        box.append(slice(lo, hi))
    dtype = draw(st.sampled_from([np.int32, np.float64, np.uint8, np.int16]))
    return shape, tuple(box), dtype


@settings(max_examples=60, deadline=None)
@given(boxes(), st.booleans())
def test_boxes_move_like_numpy(case, on_stream):
    shape, box, dtype = case
    s = gpuhal.stream() if on_stream else 0
    a = (np.arange(np.prod(shape)) * 7 + 3).astype(dtype).reshape(shape)
    d = gpuhal.to_device(a)
    # D2H: the box's view read back.
    got = d[box].copy_to_host(stream=s)
    if on_stream:
        s.synchronize()
    np.testing.assert_array_equal(got, a[box])
    # H2D: a strided host box into a dense device array.
    dense = gpuhal.device_array(a[box].shape, dtype=dtype)
    dense.copy_to_device(a[box], stream=s)
    np.testing.assert_array_equal(dense.copy_to_host(stream=s), a[box])
    if on_stream:
        s.synchronize()
    # D2D: the box into the same box of a zeroed array; nothing else changes.
    t = gpuhal.to_device(np.zeros(shape, dtype))
    t.setitem(box, d[box], stream=s)
    if on_stream:
        s.synchronize()
    want = np.zeros(shape, dtype)
    want[box] = a[box]
    np.testing.assert_array_equal(t.copy_to_host(), want)
    np.testing.assert_array_equal(d.copy_to_host(), a)

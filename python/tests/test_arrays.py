# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Device arrays: transfers, layouts against NumPy's, views, assignment."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gpuhal

from conftest import assert_same

DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64, np.float16,
          np.float32, np.float64, np.complex64, np.complex128]


@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_every_dtype(dtype):
    a = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    d = gpuhal.to_device(a)
    assert d.shape == a.shape and d.strides == a.strides and d.dtype == a.dtype
    assert d.size == a.size and d.nbytes == a.nbytes and d.ndim == 3 and len(d) == 2
    assert_same(d.copy_to_host(), a)


@pytest.mark.parametrize("make", [
    lambda: np.asfortranarray(np.arange(12.0).reshape(3, 4)),
    lambda: np.broadcast_to(np.arange(4.0), (3, 4)),
    lambda: np.float64(3.5) * np.ones(()),
    lambda: np.empty((0, 5)),
])
def test_layouts_are_kept(make):
    a = make()
    d = gpuhal.to_device(a)
    # (an empty array's strides are not data: NumPy's buffer export and
    # np.empty disagree about them)
    assert d.shape == a.shape and (d.strides == a.strides or a.size == 0)
    assert d.is_c_contiguous() == a.flags.c_contiguous and d.is_f_contiguous() == a.flags.f_contiguous
    h = d.copy_to_host()
    assert_same(h, a)


def test_structured_dtype_round_trip():
    dt = np.dtype([("x", "<f4"), ("n", "<i4"), ("tag", "u1")])
    a = np.zeros(5, dtype=dt)
    a["x"] = np.arange(5)
    a["n"] = -np.arange(5)
    d = gpuhal.to_device(a)
    assert d.dtype == dt and d.itemsize == dt.itemsize
    h = d.copy_to_host()
    assert h.dtype == dt and (h == a).all()
    assert d[2]["n"] == -2


def test_non_contiguous_host_source_is_refused_like_the_cpp_api():
    # As Numba's to_device (and NumPy's rules): gaps and reversed axes are
    # not contiguous, so no single region can be copied.
    a = np.arange(20.0).reshape(4, 5)[:, ::2]
    for bad in (a, np.arange(12.0)[::-1], np.arange(24.0).reshape(4, 6)[::-1, ::-1]):
        with pytest.raises(gpuhal.NotContiguousError):
            gpuhal.to_device(bad)
    # An existing device array takes it (gathered through a staging buffer).
    d = gpuhal.device_array(a.shape, a.dtype)
    d.copy_to_device(np.ascontiguousarray(a))
    assert_same(d.copy_to_host(), np.ascontiguousarray(a))


def test_copy_to_host_into_existing_array_and_strided_views():
    a = np.arange(30, dtype=np.int32).reshape(5, 6)
    d = gpuhal.to_device(a)
    out = np.zeros_like(a)
    assert d.copy_to_host(out) is out
    assert_same(out, a)
    v = d[1:4, ::2]
    assert_same(v.copy_to_host(), a[1:4, ::2])
    dst = np.full((3, 6), -1, dtype=np.int32)[:, ::2]
    v.copy_to_host(dst)
    assert_same(dst, a[1:4, ::2])


def test_device_array_and_like_follow_numpy():
    d = gpuhal.device_array((3, 4), dtype=np.float32, order="F")
    e = np.empty((3, 4), dtype=np.float32, order="F")
    assert d.strides == e.strides and d.is_f_contiguous()
    src = np.empty((4, 5, 6))[:, ::2, ::-1].transpose(2, 0, 1)
    like = gpuhal.device_array_like(src)
    assert like.shape == src.shape and like.strides == np.empty_like(src).strides
    assert gpuhal.device_array(5).shape == (5,)
    assert gpuhal.device_array((2, 2), strides=(8, 16)).strides == (8, 16)


@pytest.mark.parametrize("key", [
    1, -1, slice(None), slice(1, None, 2), (slice(None, None, -1), 2), (Ellipsis, 1), (1, Ellipsis),
    (slice(0, 0), slice(None)), (2, slice(1, 5, 3)),
    # Bounds and steps past 64 bits clamp as Python's slices do; NumPy's
    # integers and 0-d integer arrays index as ints.
    slice(0, 1 << 70), slice(-(1 << 70), None), (slice(None), slice(None, None, 1 << 70)),
    (slice(None, None, -(1 << 70)), 1), np.int8(1), (np.array(2), slice(None)),
])
def test_indexing_matches_numpy(key):
    a = np.arange(60.0).reshape(3, 4, 5)
    d = gpuhal.to_device(a)
    v = d[key]
    expected = a[key]
    # The stride of an axis of extent 1 is never used (NumPy's step of 2**63-1
    # wraps it); the others must be NumPy's.
    assert v.shape == expected.shape
    assert [s for s, n in zip(v.strides, v.shape) if n > 1] == [s for s, n in zip(expected.strides, v.shape) if n > 1]
    assert_same(v.copy_to_host(), expected)


def test_full_integer_index_gives_a_scalar():
    a = np.arange(6, dtype=np.int16).reshape(2, 3)
    d = gpuhal.to_device(a)
    assert d[1, 2] == 5 and isinstance(d[1, 2], np.int16)
    assert d[-1][-1] == 5


def test_bad_indices():
    d = gpuhal.device_array((2, 3))
    with pytest.raises(gpuhal.IndexOutOfRangeError):
        d[2]
    with pytest.raises(gpuhal.IndexOutOfRangeError):
        d[0, 0, 0]
    with pytest.raises(gpuhal.InvalidValueError):
        d[::0]
    with pytest.raises(TypeError):
        d[1.5]
    with pytest.raises(NotImplementedError):
        d[None]
    with pytest.raises(IndexError):
        d[..., ...]
    with pytest.raises(TypeError):
        len(gpuhal.device_array(()))
    # NumPy's advanced indexing is not a view: refused by name, whatever
    # the index array holds (it once ended in a C++ "std::bad_cast").
    for advanced in (np.array([True, False]), np.array([0, 1]), np.array(True), [0, 1], True):
        with pytest.raises(TypeError, match="only integers and slices"):
            d[advanced]
        with pytest.raises(TypeError, match="only integers and slices"):
            d[advanced] = 1
    for beyond in (1 << 70, -(1 << 70), np.uint64(1 << 63)):
        with pytest.raises(gpuhal.IndexOutOfRangeError, match="out of bounds"):
            d[beyond]


def test_reshape_ravel_transpose_view():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    d = gpuhal.to_device(a)
    assert_same(d.reshape(4, 6).copy_to_host(), a.reshape(4, 6))
    assert_same(d.reshape((6, -1)).copy_to_host(), a.reshape(6, -1))
    assert d.reshape(2, 3, 4) is d
    assert_same(d.ravel().copy_to_host(), a.ravel())
    assert_same(d.T.copy_to_host(), a.T)
    assert_same(d.transpose((1, 0, 2)).copy_to_host(), a.transpose(1, 0, 2))
    assert_same(d.view(np.int32).copy_to_host(), a.view(np.int32))
    assert_same(d.view(np.uint8).copy_to_host(), a.view(np.uint8))
    with pytest.raises(gpuhal.RequiresCopyError):
        d.T.reshape(24)
    with pytest.raises(gpuhal.InvalidShapeError):
        d.reshape(5, 5)
    with pytest.raises(gpuhal.InvalidValueError):
        d.transpose((0, 0, 1))


def test_an_axis_out_of_range_is_numpys_axis_error():
    d = gpuhal.to_device(np.arange(12).reshape(3, 4))
    for axes in ((0, 2), (-3, 0)):
        with pytest.raises(gpuhal.AxisError) as info:
            np.transpose(d, axes=axes)
        e = info.value
        # NumPy's AxisError is both, so Numba's "except ValueError" and NumPy's
        # "except IndexError" both catch it; NumPy's sentence is its text, the
        # status and the call stay in the message and the note.
        assert isinstance(e, ValueError) and isinstance(e, IndexError)
        assert isinstance(e, gpuhal.IndexOutOfRangeError) and e.status == "ERROR_INDEX_OUT_OF_RANGE"
        with pytest.raises(np.exceptions.AxisError if hasattr(np, "exceptions") else np.AxisError) as numpy_info:
            np.transpose(np.arange(12).reshape(3, 4), axes=axes)
        assert str(e) == str(numpy_info.value)
        assert e.message.startswith("transpose: ") and e.__notes__ == [f"gpuhal ERROR_INDEX_OUT_OF_RANGE: {e.message}"]
    assert_same(d.transpose((0, 1)).copy_to_host(), np.arange(12).reshape(3, 4))


def test_setitem_fills_and_broadcasts_on_the_device():
    a = np.zeros((3, 4), dtype=np.float64)
    d = gpuhal.to_device(a)
    d[1] = 5
    a[1] = 5
    d[:, 2] = np.arange(3)
    a[:, 2] = np.arange(3)
    d[2, ::2] = [7, 8]
    a[2, ::2] = [7, 8]
    e = gpuhal.to_device(np.full(4, 9.0))
    d[0] = e
    a[0] = 9.0
    d[...] = d[::-1]
    a[...] = a[::-1].copy()
    assert_same(d.copy_to_host(), a)
    c = gpuhal.device_array(3, dtype=np.complex64)
    c[:] = 1 + 2j
    assert_same(c.copy_to_host(), np.full(3, 1 + 2j, dtype=np.complex64))


def test_setitem_errors():
    d = gpuhal.device_array((2, 3), dtype=np.int32)
    with pytest.raises(gpuhal.IncompatibleError, match="broadcast|axis"):
        d[:] = np.zeros((4,), dtype=np.int32)
    with pytest.raises(gpuhal.InvalidValueError):
        d[:] = 1.5  # a float never becomes an integer
    with pytest.raises(gpuhal.InvalidValueError):
        d[:] = 1 + 1j
    with pytest.raises(gpuhal.InvalidDtypeError):
        d[:] = gpuhal.device_array((2, 3), dtype=np.int64)


def test_split_gives_views():
    a = np.arange(10.0)
    d = gpuhal.to_device(a)
    parts = list(d.split(4))
    assert [p.shape for p in parts] == [(4,), (4,), (2,)]
    assert_same(parts[2].copy_to_host(), a[8:])
    with pytest.raises(ValueError):
        list(gpuhal.device_array((2, 2)).split(1))
    with pytest.raises(ValueError):
        list(d[::2].split(1))


def test_bad_dtypes_and_arguments():
    with pytest.raises(gpuhal.InvalidDtypeError, match="big-endian"):
        gpuhal.to_device(np.arange(3, dtype=">f4"))
    with pytest.raises(gpuhal.InvalidDtypeError):
        gpuhal.device_array(3, dtype="M8[s]")
    with pytest.raises(TypeError, match=r"cannot include dtype 'M' in a buffer"):  # NumPy's reason, kept
        gpuhal.to_device(np.array(["2020-01-01"], dtype="datetime64[D]"))
    with pytest.raises(TypeError):
        gpuhal.to_device(np.array(["a", "b"], dtype=object))
    with pytest.raises(gpuhal.InvalidValueError):
        gpuhal.device_array(3, order="Q")
    d = gpuhal.to_device(np.arange(4.0))
    with pytest.raises(gpuhal.InvalidValueError, match="read-only"):
        ro = np.zeros(4)
        ro.flags.writeable = False
        d.copy_to_host(ro)
    with pytest.raises(gpuhal.InvalidDtypeError):
        d.copy_to_host(np.zeros(4, dtype=np.float32))
    with pytest.raises(gpuhal.IncompatibleError):
        d.copy_to_host(np.zeros(5))
    with pytest.raises(gpuhal.InvalidDtypeError):
        d.copy_to_device(np.zeros(4, dtype=np.int32))
    with pytest.raises(TypeError):
        gpuhal.DeviceNDArray(object())
    with pytest.raises(TypeError):
        d.copy_to_host(stream="s")


def test_a_failed_call_leaves_the_array_intact():
    a = np.arange(8.0)
    d = gpuhal.to_device(a)
    with pytest.raises(gpuhal.IncompatibleError):
        d.copy_to_device(np.zeros(9))
    with pytest.raises(gpuhal.IncompatibleError):
        d[:] = np.zeros(3)
    assert_same(d.copy_to_host(), a)


def test_to_device_with_to_and_copy_false():
    a = np.arange(5.0)
    d = gpuhal.device_array(5)
    assert gpuhal.to_device(a, to=d) is d
    assert_same(d.copy_to_host(), a)
    e = gpuhal.to_device(a, copy=False)
    assert e.shape == a.shape
    assert gpuhal.to_device(d) is d
    assert_same(gpuhal.to_device([1, 2, 3]).copy_to_host(), np.array([1, 2, 3]))


def test_numpy_asarray_copies_to_the_host():
    a = np.arange(6.0).reshape(2, 3)
    d = gpuhal.to_device(a)
    assert_same(np.asarray(d), a)
    with pytest.raises(ValueError):
        np.asarray(d, copy=False)


# NumPy's broadcasting of d[...] = src, side by side: shapes of up to four
# axes, lengths 1 to 3 (so most pairs differ somewhere and 1s broadcast).
_small_shapes = st.lists(st.integers(1, 3), min_size=0, max_size=4).map(tuple)


@settings(max_examples=150, deadline=None)
@given(_small_shapes, _small_shapes)
def test_setitem_broadcasts_as_numpy_and_refuses_with_its_message(dst_shape, src_shape):
    src = np.arange(int(np.prod(src_shape)), dtype=np.int32).reshape(src_shape)
    want = np.full(dst_shape, -1, dtype=np.int32)
    d = gpuhal.to_device(want)
    try:
        want[...] = src
    except ValueError as numpy_error:
        with pytest.raises(gpuhal.IncompatibleError) as info:
            d[...] = src
        # NumPy's message, word for word; gpuhal's own (call, axis) in the note.
        assert str(info.value) == str(numpy_error)
        assert str(numpy_error) in info.value.message
        assert info.value.__notes__ == [f"gpuhal ERROR_INCOMPATIBLE: {info.value.message}"]
        assert_same(d.copy_to_host(), np.full(dst_shape, -1, dtype=np.int32))  # left unchanged
        return
    d[...] = src
    assert_same(d.copy_to_host(), want)

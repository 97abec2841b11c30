# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.prefetch / gpuhal.advise on managed arrays (cuMemPrefetchAsync,
cuMemAdvise): hints that keep the data, refused by name where they do not
apply."""

import gc

import numpy as np
import pytest

import gpuhal

ctx = gpuhal.current_context()
pytestmark = pytest.mark.skipif(not (ctx.supports("managed_memory") and ctx.supports("managed_hints")),
                                reason="this backend does not claim managed memory with hints")


def test_prefetch_and_advise_keep_the_data():
    m = gpuhal.managed_array(4096, dtype=np.int32)
    m[:] = np.arange(4096, dtype=np.int32)
    s = gpuhal.stream()
    gpuhal.advise(m, "preferred_location", 0)
    gpuhal.advise(m, "read_mostly")
    gpuhal.prefetch(m, 0, stream=s)
    gpuhal.prefetch(m, "host", stream=s)
    s.synchronize()
    for advice in ("unset_read_mostly", "unset_preferred_location", "accessed_by", "unset_accessed_by"):
        gpuhal.advise(m, advice, 0)
    np.testing.assert_array_equal(m, np.arange(4096, dtype=np.int32))


def test_managed_memory_and_its_ranges_take_hints():
    mem = ctx.memallocmanaged(4096)
    host = np.asarray(mem)
    host[:] = 7
    s = gpuhal.stream()
    gpuhal.prefetch(mem, 0, stream=s)
    gpuhal.prefetch(mem.view(1024, 2048), "host", stream=s)  # a range
    gpuhal.advise(mem.view(0, 512), "read_mostly")
    gpuhal.advise(mem.view(4096), "read_mostly")  # an empty range: nothing to do
    s.synchronize()
    assert (host == 7).all()
    with pytest.raises(gpuhal.Error, match="not a managed array"):
        gpuhal.prefetch(ctx.memalloc(64).view(0, 32), 0)


def test_bad_input_is_refused_by_name():
    m = gpuhal.managed_array(16, dtype=np.float32)
    with pytest.raises(ValueError, match="advice must be one of"):
        gpuhal.advise(m, "mostly_read")
    with pytest.raises(ValueError, match="device must be"):
        gpuhal.prefetch(m, -2)
    with pytest.raises(TypeError, match="expected a managed array"):
        gpuhal.prefetch(np.zeros(4), 0)
    with pytest.raises(gpuhal.Error, match="not a managed array"):
        gpuhal.prefetch(gpuhal.device_array(16), 0)
    with pytest.raises(gpuhal.Error, match="does not exist"):
        gpuhal.prefetch(m, 99)
    # The refusals' tracebacks hold this frame (and `m`) in reference
    # cycles: collected here, not inside a later test.
    del m
    gc.collect()


def test_a_numpy_view_of_a_managed_array_takes_hints_for_the_bytes_it_spans():
    from gpuhal._memory import _managed_device_array

    m = gpuhal.managed_array((4, 6), dtype=np.float32)
    m[:] = np.arange(24, dtype=np.float32).reshape(4, 6)
    whole = _managed_device_array(m)
    # (view, first byte, bytes spanned): NumPy's byte bounds relative to the array.
    for view, first, size in ((m[1:3], 24, 48), (m[:, 2], 8, 3 * 24 + 4), (m[::2, ::3], 0, 2 * 24 + 3 * 4 + 4),
                              (m.T, 0, 96), (m[3:3], 72, 0), (m[::-1, 5], 20, 3 * 24 + 4)):
        gpuhal.prefetch(view, "host")
        gpuhal.advise(view, "read_mostly")
        span = _managed_device_array(view)
        assert span.device_pointer - whole.device_pointer == first if size else span.size == 0
        assert span.size == size
    np.testing.assert_array_equal(m, np.arange(24, dtype=np.float32).reshape(4, 6))
    with pytest.raises(TypeError, match="or a NumPy view of one"):
        gpuhal.prefetch(np.zeros(8)[2:], 0)  # a view of plain NumPy memory

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Streams and events with Numba's names and rules."""

import operator

import numpy as np
import pytest

import gpuhal

from conftest import assert_same, host_backend_only


def test_async_round_trip_on_a_stream():
    s = gpuhal.stream()
    a = np.arange(1 << 16, dtype=np.float32)
    d = gpuhal.to_device(a, stream=s)
    assert d.stream is s
    h = d.copy_to_host(stream=s)
    s.synchronize()
    assert s.query()
    assert_same(h, a)
    out = np.empty_like(a)
    d.copy_to_host(out, stream=s)
    s.synchronize()
    assert_same(out, a)


def test_auto_synchronize():
    s = gpuhal.stream()
    a = np.arange(100.0)
    out = np.zeros_like(a)
    with s.auto_synchronize() as same:
        assert same == s
        d = gpuhal.to_device(a, stream=s)
        d.copy_to_host(out, stream=s)
    assert_same(out, a)
    # The block's exception goes on.
    with pytest.raises(KeyError):
        with s.auto_synchronize():
            raise KeyError("x")
    scope = s.auto_synchronize()
    with scope:
        with pytest.raises(gpuhal.InvalidValueError):
            scope.__enter__()


def test_default_streams_and_external_stream():
    ctx = gpuhal.current_context()
    assert gpuhal.default_stream().is_default
    assert gpuhal.legacy_default_stream() is not None
    pt = gpuhal.per_thread_default_stream()
    assert not pt.is_owned
    s = gpuhal.stream()
    assert s.is_owned and not s.is_default and s.handle != 0
    ext = gpuhal.external_stream(s.handle)  # the same native stream, not owned
    assert not ext.is_owned and ext.handle == s.handle
    d = gpuhal.to_device(np.arange(4.0), stream=ext)
    ext.synchronize()
    assert_same(d.bind(0).copy_to_host(), np.arange(4.0))
    assert isinstance(ctx, gpuhal.Context)


def test_stream_handle_is_a_ctypes_pointer_as_in_numba():
    import ctypes
    s = gpuhal.stream()
    h = s.handle
    # Numba's ctypes binding: a c_void_p, its .value the address.
    assert isinstance(h, ctypes.c_void_p) and isinstance(h, gpuhal.StreamHandle)
    assert h.value == int(h) != 0
    # NVIDIA's bindings' CUstream converts with int(); so do the stream and the handle here.
    assert int(s) == int(h) and operator.index(h) == int(h)
    assert h == int(h) and h == s.handle and h != int(h) + 1 and hash(h) == hash(int(h))
    assert h == ctypes.c_void_p(int(h))
    assert repr(h) == "StreamHandle(0x%x)" % int(h)
    # The default stream has none: .value None, int() 0, false.
    d = gpuhal.default_stream().handle
    assert d.value is None and int(d) == 0 and not d and d == 0
    # It is a pointer to ctypes (cast, or passed where a void * is wanted).
    assert ctypes.cast(h, ctypes.c_void_p).value == int(h)
    assert (h == "not a handle") is False


def test_events_time_and_order_work():
    s = gpuhal.stream()
    start, end = gpuhal.event(), gpuhal.event()
    start.record(s)
    d = gpuhal.to_device(np.zeros(1 << 20), stream=s)
    end.record(s)
    end.synchronize()
    assert end.query()
    ms = gpuhal.event_elapsed_time(start, end)
    assert ms >= 0.0 and ms == start.elapsed_time(end)
    other = gpuhal.stream()
    end.wait(other)  # later work of `other` waits for `end`
    d.copy_to_host(stream=other)
    other.synchronize()
    e = gpuhal.event(timing=False)
    e.record()  # stream=0: the default stream
    e.synchronize()
    with pytest.raises(gpuhal.Error):
        gpuhal.event_elapsed_time(e, e)  # not timing-enabled
    rec = s.record()
    rec.synchronize()
    s.wait_event(rec)
    s.wait_events([rec, end])
    s.synchronize()


def test_bad_stream_arguments():
    with pytest.raises(TypeError):
        gpuhal.to_device(np.arange(3.0), stream=1)
    with pytest.raises(TypeError):
        gpuhal.event().record("default")
    with pytest.raises(TypeError):
        gpuhal.device_array(3).copy_to_host(stream=object())


@host_backend_only
def test_an_unknown_external_stream_is_refused_on_the_host_backend():
    # The host backend knows every stream. A GPU driver takes a native
    # handle on trust: one that is no live stream is undefined behaviour
    # there (the CUDA driver dereferences it and the process crashes).
    with pytest.raises(gpuhal.InvalidHandleError):
        gpuhal.external_stream(0xDEAD0).synchronize()


def test_array_bound_stream_is_used_for_stream_zero():
    s = gpuhal.stream()
    d = gpuhal.device_array(8, stream=s)
    d.copy_to_device(np.arange(8.0))  # on s: asynchronous
    s.synchronize()
    h = d.bind(0).copy_to_host()  # synchronous
    assert_same(h, np.arange(8.0))


SPIN = """
GPUHAL_KERNEL void spin(GPUHAL_GLOBAL long long *out, long long n) {
  long long acc = 0;
  for (long long i = 0; i < n; ++i) acc = acc * 3 + i;
  out[0] = acc;
}
"""


def _held_up_stream(iterations):
    """A new stream busy with a long kernel for a while (the copies queued
    after it run later)."""
    s = gpuhal.stream()
    scratch = gpuhal.device_array(1, dtype=np.int64)
    gpuhal.compile(SPIN).spin[1, 1, s](scratch, iterations)
    return s


def _pinned(values):
    p = gpuhal.pinned_array(values.shape, values.dtype)
    p[...] = values
    return p


def test_pinned_transfers_are_asynchronous_and_their_arrays_live_until_the_stream_ran_them():
    # The stream is held up by a long kernel, so the copies run after the
    # temporaries below are dropped; gpuhal keeps them alive until then.
    import sys
    s = _held_up_stream(2_000_000_000)  # about 0.4 s: far longer than queueing the copies
    n = 1 << 20
    d = gpuhal.to_device(_pinned(np.arange(n, dtype=np.float64)), stream=s)  # a pinned temporary
    out = gpuhal.pinned_array(n)
    before = sys.getrefcount(out)
    d.copy_to_host(out, stream=s)
    assert not s.query()  # still spinning: the copies are queued, not done
    s.synchronize()
    assert sys.getrefcount(out) == before  # handed back once the stream ran it
    assert_same(np.asarray(out), np.arange(n, dtype=np.float64))


def test_pageable_transfers_are_done_when_the_call_returns():
    # CUDA's rule for pageable memory, which Numba programs rely on.
    s = _held_up_stream(50_000_000)
    n = 1 << 16
    d = gpuhal.to_device(np.arange(n, dtype=np.float64), stream=s)
    h = d.copy_to_host(stream=s)  # readable at once
    assert_same(h, np.arange(n, dtype=np.float64))
    out = np.zeros(n)
    d[:] = np.full(n, 2.0)  # on d's stream, from a temporary
    d.copy_to_host(out)
    assert_same(out, np.full(n, 2.0))


def test_stream_priorities():
    ctx = gpuhal.current_context()
    if not ctx.supports("stream_priorities"):
        with pytest.raises(gpuhal.NotSupportedError):
            gpuhal.stream(priority=0)
        return
    least, greatest = ctx.stream_priority_range()
    assert greatest <= least
    assert ctx.device.stream_priority_range() == (least, greatest)  # the device's: its primary context's
    assert gpuhal.stream(priority=greatest - 50).priority == greatest  # clamped
    assert gpuhal.stream(priority=least + 50).priority == least
    s = gpuhal.stream(priority=least)
    d = gpuhal.to_device(np.arange(16, dtype=np.int32), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), np.arange(16, dtype=np.int32))
    assert gpuhal.stream().priority in range(greatest, least + 1)

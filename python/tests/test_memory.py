# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Pinned, mapped, registered and managed memory; the deferred
deallocation queue; memory information."""

import gc

import numpy as np
import pytest

import gpuhal

from conftest import assert_same


def test_pinned_array_is_a_numpy_array_in_pinned_memory():
    p = gpuhal.pinned_array((4, 3), dtype=np.int32)
    assert isinstance(p, gpuhal.PinnedNDArray) and isinstance(p, np.ndarray)
    assert p.shape == (4, 3) and p.dtype == np.int32 and p.flags.c_contiguous
    p[:] = np.arange(12).reshape(4, 3)
    d = gpuhal.to_device(p)
    assert_same(d.copy_to_host(), np.arange(12, dtype=np.int32).reshape(4, 3))
    f = gpuhal.pinned_array_like(np.empty((2, 5), order="F"))
    assert f.flags.f_contiguous and f.dtype == np.float64
    # Registering memory the backend allocated is refused.
    with pytest.raises(gpuhal.AlreadyRegisteredError):
        gpuhal.register(p)


def test_mapped_array_host_and_device_are_one_memory(twice):
    m = gpuhal.mapped_array(8, dtype=np.float32)
    assert isinstance(m, gpuhal.MappedNDArray)
    m[:] = np.arange(8)
    twice.twice[1, 8](m, 8)  # passed whole: the kernel works on the mapped memory
    gpuhal.synchronize()
    assert_same(np.asarray(m), np.arange(8, dtype=np.float32) * 2)
    like = gpuhal.mapped_array_like(np.zeros((2, 2)))
    assert like.shape == (2, 2)


def test_pinned_scope_and_mapped_scope():
    a = np.arange(16.0)
    b = np.zeros(16)
    with gpuhal.pinned(a, b):
        d = gpuhal.to_device(a)
        d.copy_to_host(b)
    assert_same(b, a)
    # The registrations ended with the block: pinning again works at once.
    with gpuhal.pinned(a):
        pass
    with gpuhal.mapped(a) as da:
        assert isinstance(da, gpuhal.DeviceNDArray) and da.shape == a.shape
        da[:4] = -1.0  # through the device side, seen by the host
        gpuhal.synchronize()
        assert_same(a[:4], np.full(4, -1.0))
    with gpuhal.mapped(a, b) as (da, db):
        assert da.shape == db.shape == (16,)
    with pytest.raises(TypeError):
        with gpuhal.mapped(a, portable=True):
            pass


def test_scopes_refuse_what_they_cannot_work_on():
    # Read-only memory (a bytes object) mapped would be written by the device
    # array: refused, and the bytes stay as they were.
    frozen = bytes(b"12345678")
    with pytest.raises(gpuhal.InvalidValueError, match="read-only"):
        with gpuhal.mapped(np.frombuffer(frozen, np.uint8)):
            pass
    assert frozen == b"12345678"
    with gpuhal.pinned(np.frombuffer(frozen, np.uint8)):  # pinning only reads it
        pass
    # What has no memory of its own would be pinned or mapped as a temporary copy.
    for scope in (gpuhal.pinned, gpuhal.mapped, gpuhal.register):
        for not_memory in (5, [1, 2, 3]):
            with pytest.raises(TypeError, match="buffer protocol"):
                with scope(not_memory):
                    pass
    with pytest.raises(TypeError, match="buffer protocol"):
        gpuhal.deregister([1, 2])
    with gpuhal.mapped(bytearray(8)) as d:  # any writable buffer maps
        assert d.shape == (8,)


def test_scopes_end_on_exceptions():
    a = np.zeros(8)
    with pytest.raises(RuntimeError):
        with gpuhal.pinned(a):
            raise RuntimeError("inside")
    r = gpuhal.register(a)  # not registered any more, so this is a first registration
    r.release()
    with pytest.raises(gpuhal.NotRegisteredError):
        gpuhal.deregister(a)


def test_register_and_deregister_count():
    a = np.zeros(1024)
    with gpuhal.register(a):
        gpuhal.register(a)  # a second registration of the same bytes, kept until deregister
        gpuhal.deregister(a)  # drops one
        d = gpuhal.to_device(a)
        assert d.shape == a.shape
    with pytest.raises(gpuhal.NotRegisteredError):
        gpuhal.deregister(a)
    gpuhal.register(a, a[:512])  # ROC's pair: register ... deregister
    gpuhal.deregister(a, a[:512])
    with pytest.raises(gpuhal.NotRegisteredError):
        gpuhal.deregister(a[:512])
    with pytest.raises(TypeError):
        gpuhal.register(object())


def test_managed_array_is_shared_by_host_and_kernels(twice):
    if not gpuhal.current_context().supports("managed_memory"):
        pytest.skip("no managed memory on this backend")
    m = gpuhal.managed_array(6, dtype=np.float32)
    assert isinstance(m, gpuhal.ManagedNDArray)
    m[:] = np.arange(6)
    twice.twice[1, 6](m, 6)
    gpuhal.synchronize()
    assert_same(np.asarray(m), np.arange(6, dtype=np.float32) * 2)
    # A view is no longer the whole array: it goes as a host array (copied in and back).
    v = m[2:]
    twice.twice[1, 4](v, 4)
    assert_same(np.asarray(m), np.array([0, 2, 8, 12, 16, 20], dtype=np.float32))


def test_deferred_deallocation_queue(ctx):
    # Arrays earlier tests left in reference cycles (a failed call's
    # traceback holds its frame) are released by the collector whenever it
    # runs; collected now, they cannot join the queue inside the block.
    gc.collect()
    ctx.deallocations.clear()
    with gpuhal.defer_cleanup():
        # All held, then dropped: each release is one pending deallocation.
        arrays = [gpuhal.device_array(1024) for _ in range(30)]
        del arrays
        assert len(ctx.deallocations) == 30  # nothing freed inside the block
        assert ctx.deallocations.bytes >= 30 * 8 * 1024
    # Leaving the block flushed the queue (over its count limit).
    assert len(ctx.deallocations) == 0
    gpuhal.device_array(16)
    assert len(ctx.deallocations) == 1
    assert ctx.deallocations.clear() == 1 and len(ctx.deallocations) == 0
    scope = gpuhal.defer_cleanup()
    with scope:
        with pytest.raises(gpuhal.InvalidValueError):
            scope.__enter__()


def test_config_sets_the_deallocation_limits_as_numbas_does(ctx):
    config = gpuhal.config
    count, ratio = config.CUDA_DEALLOCS_COUNT, config.CUDA_DEALLOCS_RATIO
    assert (count, ratio) == (10, 0.2)  # GPUHAL_MAX_PENDING_DEALLOCS_*'s defaults, Numba's
    deallocs = ctx.deallocations
    assert deallocs._max_pending_count == count
    total = ctx.get_memory_info().total
    assert deallocs._max_pending_bytes == int(total * ratio)
    gc.collect()
    deallocs.clear()
    try:
        config.CUDA_DEALLOCS_COUNT = 3
        assert deallocs._max_pending_count == 3 and config.CUDA_DEALLOCS_COUNT == 3
        for n in range(1, 4):
            gpuhal.device_array(8, dtype=np.uint8)
            assert len(deallocs) == n
        gpuhal.device_array(8, dtype=np.uint8)  # the fourth passes the limit of 3
        assert len(deallocs) == 0
        # The byte limit: exactly at it is not past it (numba-cuda's test_max_pending_bytes).
        config.CUDA_DEALLOCS_COUNT = 100
        config.CUDA_DEALLOCS_RATIO = 4096 / total
        limit = deallocs._max_pending_bytes
        assert abs(limit - 4096) <= 1
        gpuhal.device_array(limit // 2, dtype=np.uint8)
        gpuhal.device_array(limit - deallocs._size, dtype=np.uint8)
        assert len(deallocs) == 2 and deallocs._size == limit
        gpuhal.device_array(1, dtype=np.uint8)
        assert len(deallocs) == 0
        # Bad values are refused and change nothing.
        with pytest.raises(TypeError):
            config.CUDA_DEALLOCS_COUNT = 2.5
        with pytest.raises(ValueError):
            config.CUDA_DEALLOCS_COUNT = -1
        with pytest.raises(gpuhal.InvalidValueError, match="from 0 to 1"):
            config.CUDA_DEALLOCS_RATIO = 1.5
        assert config.CUDA_DEALLOCS_COUNT == 100 and deallocs._max_pending_count == 100
        # Numba's array-interface setting: a plain value gpuhal reads at each use.
        assert config.CUDA_ARRAY_INTERFACE_SYNC is True
    finally:
        config.CUDA_DEALLOCS_COUNT = count
        config.CUDA_DEALLOCS_RATIO = ratio
    assert deallocs._max_pending_count == count and deallocs._max_pending_bytes == int(total * ratio)


def test_releases_count_as_numbas_and_idle_ones_serve_allocations_after_a_flush_over_the_limit(ctx):
    # Spares where a flush's synchronise proves released memory unused (host:
    # its contexts are its own; cuda: cuCtxSynchronize waits for every stream).
    props = gpuhal.get_current_device().properties
    spares = props["exclusive_contexts"] or props["synchronize_waits_for_all_work"]
    ctx.synchronize()  # nothing in flight: a release may be kept as an idle block
    ctx.deallocations.clear()
    a = gpuhal.device_array(1000, dtype=np.uint8)
    first = a.device_pointer
    del a
    assert len(ctx.deallocations) == 1  # pending: not given back
    b = gpuhal.device_array(1000, dtype=np.uint8)
    assert b.device_pointer != first  # a pending release is never taken
    assert len(ctx.deallocations) == 1  # Numba's count: one per release until a flush
    # Releases up to the count limit and one past it: the flush empties the queue.
    for n in range(2, 10_000):
        gpuhal.device_array(8, dtype=np.uint8)
        if len(ctx.deallocations) == 0:
            break
        assert len(ctx.deallocations) == n
    assert len(ctx.deallocations) == 0
    if spares:  # the flush kept the blocks as spares
        c = gpuhal.device_array(1000, dtype=np.uint8)
        assert c.device_pointer == first
        assert len(ctx.deallocations) == 0
        del c
    s = gpuhal.stream()
    src = (np.arange(1000) % 251).astype(np.uint8)
    b.copy_to_device(src, stream=s)  # in flight now: the next release waits for a flush
    second = b.device_pointer
    del b
    d = gpuhal.device_array(1000, dtype=np.uint8)
    assert d.device_pointer != second
    s.synchronize()
    ctx.deallocations.clear()


def test_a_stream_repr_leaves_idle_blocks_on(python):
    # A fresh process: the context has given no vendor handle out yet.
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        s = gpuhal.stream()
        text = repr(s)
        assert text.startswith("<gpuhal.Stream at 0x"), text
        assert repr(gpuhal.default_stream()) == "<gpuhal.Stream default>"
        assert repr(s) == text and repr(gpuhal.stream()) != text
        exclusive = gpuhal.get_current_device().properties["exclusive_contexts"]
        ctx = gpuhal.current_context()
        ctx.synchronize()
        a = gpuhal.device_array(1000, dtype=np.uint8)
        first = a.device_pointer
        del a
        while len(ctx.deallocations):  # past the count limit: the flush keeps idle blocks as spares
            gpuhal.device_array(8, dtype=np.uint8)
        b = gpuhal.device_array(1000, dtype=np.uint8)
        if exclusive:
            assert b.device_pointer == first
        print("ok")
    """)
    assert rc == 0 and out.strip() == "ok", err


def test_memory_info(ctx):
    info = ctx.get_memory_info()
    assert 0 < info.free <= info.total
    assert info == (info.free, info.total)
    ctx.deallocations.clear()
    keep = gpuhal.device_array(64 << 20, dtype=np.uint8)
    del keep  # queued, not freed (Numba's deferred deallocation)
    assert len(ctx.deallocations) == 1 and ctx.deallocations.bytes >= 64 << 20
    ctx.deallocations.clear()
    assert ctx.deallocations.bytes == 0


def test_out_of_memory_is_memory_error(ctx):
    with pytest.raises(MemoryError):
        gpuhal.device_array(ctx.get_memory_info().total * 4, dtype=np.uint8)
    gpuhal.device_array(16)  # still usable

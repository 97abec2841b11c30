# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.MemoryPool from Python: reuse on the allocating stream (the
ordering across streams is tested in C++, test_memory_pool.cpp), statistics, threshold and trim, CuPy's names, and the pool
as the context's memory manager."""

import numpy as np
import pytest

import gpuhal


def test_blocks_come_back_to_their_stream_with_exact_statistics():
    pool = gpuhal.MemoryPool()
    s = gpuhal.stream()
    a = pool.device_array(250, np.float32, stream=s)  # 1000 bytes -> a 1024-byte block
    ptr = a.device_pointer
    assert pool.stats()["used_bytes"] == 1024 and pool.stats()["allocations"] == 1
    a.copy_to_device(np.arange(250, dtype=np.float32), stream=s)
    np.testing.assert_array_equal(a.copy_to_host(stream=s), np.arange(250, dtype=np.float32))
    s.synchronize()
    del a
    stats = pool.stats()
    assert stats["used_bytes"] == 0 and stats["reserved_bytes"] == 1024 and stats["allocations"] == 0
    b = pool.device_array(200, np.float32, stream=s)
    assert b.device_pointer == ptr and pool.stats()["hits"] == 1
    assert pool.used_bytes() == 1024 and pool.total_bytes() == 1024  # CuPy's names
    assert "1024 bytes used" in repr(pool)


def test_threshold_and_trim_give_idle_blocks_back():
    pool = gpuhal.MemoryPool(release_threshold=1 << 20)
    assert pool.release_threshold == 1 << 20
    arrays = [pool.device_array(512 << 10, np.uint8) for _ in range(4)]
    assert pool.stats()["reserved_bytes"] == 2 << 20
    del arrays
    assert pool.stats()["reserved_bytes"] == 1 << 20
    assert pool.trim() == 1 << 20
    pool.release_threshold = None
    assert pool.release_threshold is None
    pool.free_all_blocks()
    assert pool.stats()["reserved_bytes"] == 0
    with pytest.raises(ValueError, match="release_threshold"):
        gpuhal.MemoryPool(release_threshold=-1)


def test_the_pool_as_the_contexts_memory_manager():
    ctx = gpuhal.current_context()
    pool = gpuhal.MemoryPool().use()
    try:
        assert gpuhal._gpuhal.memory_manager_name(gpuhal._managers.current_cpp_context()) == "memory pool"
        d = gpuhal.device_array(100, np.float64)
        assert pool.stats()["allocations"] == 1
        del d
        gpuhal.device_array(100, np.float64)
        assert pool.stats()["hits"] == 1
    finally:
        gpuhal._gpuhal.set_default_memory_manager(gpuhal._managers.current_cpp_context())
    assert ctx is not None


def test_bad_input_is_refused():
    pool = gpuhal.MemoryPool()
    with pytest.raises(TypeError, match="shape"):
        pool.device_array(1.5, np.float32)
    with pytest.raises(TypeError, match="stream must be a gpuhal.Stream"):
        pool.device_array(4, np.float32, stream=object())
    with pytest.raises(ValueError, match="keep_bytes"):
        pool.trim(-1)
    empty = pool.device_array(0, np.float32)  # a zero-size array still gets a (1-byte) block
    assert empty.shape == (0,) and pool.stats()["allocations"] == 1


def test_allocate_and_stream_ordered_free_of_a_caching_pool():
    pool = gpuhal.MemoryPool()
    assert pool.kind == "caching"
    a, b = gpuhal.stream(), gpuhal.stream()
    mem = pool.allocate(4096, stream=a)
    assert isinstance(mem, gpuhal.MemoryPointer) and mem.size == 4096
    ptr = mem.device_pointer
    mem.memset(3, stream=a)
    a.synchronize()
    pool.free(mem, stream=b)  # back to b's blocks: b reuses it at once
    assert pool.stats()["allocations"] == 0
    assert pool.allocate(4096, stream=b).device_pointer == ptr
    arr = pool.device_array(16, np.float32, stream=a)
    view = arr[4:]
    pool.free(arr, stream=a)
    assert pool.stats()["allocations"] == 1  # the array and its view still hold it
    del arr, view
    assert pool.stats()["allocations"] == 0


def test_free_and_kind_refuse_bad_input():
    pool, other = gpuhal.MemoryPool(), gpuhal.MemoryPool()
    with pytest.raises(ValueError, match="kind must be 'caching' or 'driver'"):
        gpuhal.MemoryPool(kind="cupy")
    with pytest.raises(ValueError, match="nbytes must be positive"):
        pool.allocate(0)
    with pytest.raises(TypeError, match="MemoryPointer or a DeviceNDArray"):
        pool.free(np.zeros(4))
    theirs = other.allocate(256)
    with pytest.raises(gpuhal.InvalidValueError, match="not allocated from this pool"):
        pool.free(theirs)
    assert other.stats()["allocations"] == 1  # nothing changed
    with pytest.raises(gpuhal.InvalidValueError, match="not allocated from this pool"):
        pool.free(gpuhal.device_array(4, np.float32))
    with pytest.raises(gpuhal.InvalidValueError, match="holds no memory"):  # found by the state machine
        pool.free(gpuhal.device_array(0, np.float32))
    with pytest.raises(TypeError, match="stream must be a gpuhal.Stream"):
        other.free(theirs, stream=object())
    other.free(theirs)
    with pytest.raises(ValueError, match="was freed"):
        other.free(theirs)  # freed already
    assert other.stats()["allocations"] == 0
    if not gpuhal.current_context().supports("driver_memory_pools"):
        with pytest.raises(gpuhal.NotSupportedError, match="Capability::DriverMemoryPools"):
            gpuhal.MemoryPool(kind="driver")


def test_a_driver_pool_over_the_fake_cuda_driver(python, fake_cuda_env):
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        assert gpuhal.current_context().supports("driver_memory_pools")
        pool = gpuhal.MemoryPool(kind="driver")
        assert pool.kind == "driver"
        s = gpuhal.stream()
        a = pool.device_array(250, np.float32, stream=s)
        a.copy_to_device(np.arange(250, dtype=np.float32), stream=s)
        np.testing.assert_array_equal(a.copy_to_host(stream=s), np.arange(250, dtype=np.float32))
        st = pool.stats()
        assert st["used_bytes"] == 1000 and st["allocations"] == 1, st
        pool.free(a, stream=s)
        del a
        s.synchronize()
        st = pool.stats()
        assert st["used_bytes"] == 0 and st["reserved_bytes"] == 1000 and st["allocations"] == 0, st
        assert pool.trim() == 1000 and pool.stats()["reserved_bytes"] == 0
        m = pool.allocate(64)
        pool.free(m)
        pool.use()
        d = gpuhal.device_array(8, np.float64)
        assert pool.stats()["allocations"] == 1
        print("ok")
    """, env=fake_cuda_env)
    assert rc == 0, err
    assert out.strip() == "ok"

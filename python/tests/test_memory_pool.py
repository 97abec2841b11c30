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

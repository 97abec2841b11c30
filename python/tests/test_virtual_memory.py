# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.GrowableDeviceArray: grows in place, the same pointer and data."""

import numpy as np
import pytest

import gpuhal

pytestmark = pytest.mark.skipif(not gpuhal.current_context().supports("virtual_memory"),
                                reason="this backend does not claim virtual memory")


def test_grows_in_place_with_its_data():
    minimum, recommended = gpuhal.vm_granularity()
    assert minimum > 0 and recommended % minimum == 0
    g = gpuhal.GrowableDeviceArray(1 << 22, dtype=np.int32)
    g.resize(1000)
    p = g.device_pointer
    g.array().copy_to_device(np.arange(1000, dtype=np.int32))
    g.resize(3 << 20)
    assert g.device_pointer == p and len(g) == 3 << 20 and g.capacity >= 3 << 20
    g.array()[1000:] = np.arange(1000, 3 << 20, dtype=np.int32)
    np.testing.assert_array_equal(g.array().copy_to_host(), np.arange(3 << 20, dtype=np.int32))
    with pytest.raises(MemoryError):
        g.resize((1 << 22) + 1)


def test_physical_memory_mapped_into_a_reserved_range():
    minimum, _ = gpuhal.vm_granularity()
    r = gpuhal.VirtualRange(4 * minimum)
    assert r.base % minimum == 0 and r.size == 4 * minimum
    first, second = gpuhal.PhysicalMemory(minimum), gpuhal.PhysicalMemory(2 * minimum)
    assert second.size == 2 * minimum
    r.map(0, minimum, first)
    r.map(minimum, 2 * minimum, second)
    r.set_access(0, 3 * minimum, "read_write")
    n = 3 * minimum // 4
    a = r.array(0, (n,), np.int32)  # across both mappings, contiguous addresses
    a.copy_to_device(np.arange(n, dtype=np.int32))
    np.testing.assert_array_equal(a.copy_to_host(), np.arange(n, dtype=np.int32))
    assert a.device_ctypes_pointer.value == r.base
    # No memory is unmapped while an array still reaches it.
    with pytest.raises(gpuhal.Error, match="unmap"):
        r.unmap(0, minimum)
    del a
    r.unmap(minimum, 2 * minimum)
    r.map(minimum, minimum, second, minimum)  # the second half of `second`, at another place
    r.set_access(minimum, minimum, "read_write", device=0)


def test_virtual_memory_bad_input_is_refused_by_name():
    minimum, _ = gpuhal.vm_granularity()
    r = gpuhal.VirtualRange(2 * minimum)
    p = gpuhal.PhysicalMemory(minimum)
    with pytest.raises(gpuhal.Error, match="multiple"):
        r.map(1, minimum, p)
    with pytest.raises(TypeError, match="PhysicalMemory"):
        r.map(0, minimum, object())
    with pytest.raises(ValueError, match="access must be one of"):
        r.set_access(0, minimum, "write")
    with pytest.raises(ValueError, match="device must be"):
        r.set_access(0, minimum, "read", device=-1)
    with pytest.raises(gpuhal.Error):
        r.map(0, 4 * minimum, p)  # past the range and the memory
    with pytest.raises(gpuhal.Error, match="multiple"):
        gpuhal.PhysicalMemory(minimum + 1)

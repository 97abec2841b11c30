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

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

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""No Python program can read freed memory through gpuhal: a context reset
under live NumPy arrays over pinned, mapped and managed memory, and DLPack
consumers of host-backend memory, leave them valid host memory (numba-cuda's
TestHostAlloc::test_host_alloc_mapped killed the process here), while
gpuhal's own objects of the old context refuse every use by name."""

import textwrap

import numpy as np
import pytest

import gpuhal

# Run in a fresh interpreter on each backend: a crash there fails the test
# instead of ending the test run.
_RESET_UNDER_ARRAYS = textwrap.dedent("""
    import numpy as np
    import gpuhal
    ctx = gpuhal.current_context()
    kinds = ["pinned", "mapped", "mapped_wc"] + (["managed"] if ctx.supports("managed_memory") else [])

    def make(kind):
        if kind == "mapped_wc":  # write-combined: the driver's own allocation
            return gpuhal.mapped_array((100, 37), dtype=np.int32, wc=True)
        return getattr(gpuhal, kind + "_array")((100, 37), dtype=np.int32)

    arrays = {}
    for i, kind in enumerate(kinds):
        a = make(kind)
        a[...] = np.arange(a.size, dtype=np.int32).reshape(a.shape) + i
        arrays[kind] = a
    view = arrays["pinned"][10:20, ::3]
    mapped_device = arrays["mapped"]._gpuhal_device
    ctx.reset()
    # Arrays made after the reset have bytes of their own (an allocator that
    # hands a freed block to the next allocation must not make them share).
    later = [make(kind) for kind in kinds for _ in range(3)]
    for b in later:
        b[...] = 9
    for i, (kind, a) in enumerate(arrays.items()):
        assert (a == np.arange(a.size, dtype=np.int32).reshape(a.shape) + i).all(), kind
        a[...] = 7       # still writable
        assert int(a.sum()) == 7 * a.size, kind
    assert (view == 7).all()
    try:
        mapped_device.copy_to_host()
    except gpuhal.ContextDestroyedError as e:
        assert "reset" in str(e)
    else:
        raise AssertionError("the old context's device array was used")
    assert all((b == 9).all() for b in later)
    del arrays, view, mapped_device, a, later, b
    import gc; gc.collect()
    print("ok", ",".join(kinds))
""")


def test_reset_under_live_host_arrays(python):
    rc, out, err = python(_RESET_UNDER_ARRAYS)
    assert rc == 0, err
    assert out.startswith("ok")


def test_reset_under_live_host_arrays_over_the_fake_cuda_driver(python, fake_cuda_env):
    rc, out, err = python(_RESET_UNDER_ARRAYS, env=fake_cuda_env)
    assert rc == 0, err
    assert out.strip() == "ok pinned,mapped,mapped_wc,managed"


def test_reset_under_live_host_arrays_over_the_fake_hsa_runtime(python, fake_hsa_env):
    # ROCr hands a freed block to the next allocation (the fake does too):
    # the backend keeps what a live array addresses (plugin ABI 1.17 mem_keep).
    rc, out, err = python(_RESET_UNDER_ARRAYS, env=fake_hsa_env)
    assert rc == 0, err
    assert "could not keep" not in err, err
    assert out.strip() == "ok pinned,mapped,mapped_wc,managed"


def test_reset_under_a_dlpack_consumer_on_the_host_backend(python):
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        assert gpuhal.backend() == "host"
        d = gpuhal.to_device(np.arange(5000.0))
        h = np.from_dlpack(d)   # NumPy reads the device memory itself
        del d
        gpuhal.current_context().reset()
        assert h.sum() == np.arange(5000.0).sum()
        print("ok")
    """, env={"GPUHAL_BACKEND": "host"})
    assert rc == 0, err
    assert out.strip() == "ok"


def test_shapes_must_be_integers():
    for bad in (2.5, (2, 3.0), ("4",), (None,)):
        with pytest.raises(TypeError, match="integer"):
            gpuhal.device_array(bad, dtype=np.float32)
        with pytest.raises(TypeError, match="integer"):
            gpuhal.pinned_array(bad)
    assert gpuhal.device_array(np.int64(3)).shape == (3,)
    assert gpuhal.device_array((np.int32(2), 3)).shape == (2, 3)
    with pytest.raises(TypeError, match="integer"):
        gpuhal.device_array((2, 2), strides=(8.0, 16))


def test_setitem_without_a_stream_synchronizes_the_default_stream(monkeypatch):
    # numba-cuda's test_sync: with no stream (given or bound) d[i] = v runs
    # on the default stream and waits for it; with one it does not wait.
    calls = []
    real = gpuhal.Stream.synchronize
    monkeypatch.setattr(gpuhal.Stream, "synchronize", lambda self: (calls.append(self), real(self))[1])
    d = gpuhal.device_array(5)
    d[0] = 10
    assert len(calls) == 1
    calls.clear()
    for s in (gpuhal.stream(), gpuhal.default_stream(), gpuhal.per_thread_default_stream()):
        bound = gpuhal.device_array(5, stream=s)
        bound[0] = 10
        d.setitem(1, 3, stream=s)
        assert calls == []
        s.synchronize()
        calls.clear()
    assert d.copy_to_host()[:2].tolist() == [10.0, 3.0]

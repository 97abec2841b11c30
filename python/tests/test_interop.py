# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Zero-copy interchange: DLPack both ways with NumPy (the host backend),
and on cuda (over the fake driver) __dlpack_device__ and the CUDA Array
Interface."""

import json

import numpy as np
import pytest

import gpuhal

from conftest import assert_same, host_backend_only


@host_backend_only
def test_numpy_from_dlpack_shares_the_device_memory_on_the_host_backend():
    d = gpuhal.to_device(np.arange(12, dtype=np.int32).reshape(3, 4))
    assert d.__dlpack_device__() == (1, 0)  # kDLCPU
    h = np.from_dlpack(d)
    assert_same(h, np.arange(12, dtype=np.int32).reshape(3, 4))
    d[1] = 99  # written on the device: NumPy sees it, no copy was made
    assert_same(h[1], np.full(4, 99, dtype=np.int32))
    v = np.from_dlpack(d.T)  # strided views export as they are
    assert v.strides == d.T.strides and v[0, 1] == 99


@host_backend_only
def test_imported_numpy_memory_is_handed_back():
    import sys
    a = np.arange(10.0)
    refs = sys.getrefcount(a)
    d = gpuhal.from_dlpack(a)
    assert sys.getrefcount(a) > refs  # NumPy's export holds the array
    del d
    gpuhal.current_context().deallocations.clear()
    gpuhal.synchronize()
    assert sys.getrefcount(a) == refs  # the producer's deleter ran (with the GIL)


@host_backend_only
def test_from_dlpack_imports_numpy_memory_without_a_copy():
    a = np.arange(10.0)
    d = gpuhal.from_dlpack(a)
    assert d.shape == (10,) and d.dtype == np.float64
    d[:] = 7.0
    assert_same(a, np.full(10, 7.0))
    del a  # the device array keeps NumPy's memory alive
    assert_same(d.copy_to_host(), np.full(10, 7.0))


def test_numpy_memory_is_refused_where_it_is_not_device_memory():
    """On a GPU backend NumPy's memory is on another DLPack device: refused
    by gpuhal before anything is exported (over the fake CUDA driver this
    is checked by test_cuda_backend_over_the_fake_driver)."""
    import sys
    if gpuhal.backend() == "host":
        pytest.skip("on the host backend NumPy's memory is device memory (tested above)")
    a = np.arange(10.0)
    refs = sys.getrefcount(a)
    with pytest.raises(gpuhal.InvalidValueError, match=r"DLPack device \(1, 0\)"):
        gpuhal.from_dlpack(a)
    assert sys.getrefcount(a) == refs  # nothing exported, nothing held


def test_dlpack_versions_and_consumed_capsules():
    d = gpuhal.to_device(np.arange(4.0))
    legacy = d.__dlpack__()
    versioned = d.__dlpack__(max_version=(1, 0))
    assert "dltensor" in repr(legacy) and "dltensor_versioned" in repr(versioned)
    back = gpuhal.from_dlpack(legacy)  # a legacy capsule, taken directly
    assert_same(back.copy_to_host(), np.arange(4.0))
    with pytest.raises(gpuhal.InvalidValueError, match="consumed"):
        gpuhal.from_dlpack(legacy)
    del versioned  # an unused capsule runs its deleter when collected
    other = (2, 0) if tuple(d.__dlpack_device__()) == (1, 0) else (1, 0)
    with pytest.raises(BufferError, match="copy_to_host"):
        d.__dlpack__(dl_device=other)  # no copy to another device
    d.copy_to_device(np.array([-1.0, 1.0, 2.0, 3.0]))
    unsynchronised = d.__dlpack__(stream=-1, max_version=(1, 0))
    assert gpuhal.from_dlpack(unsynchronised).copy_to_host()[0] == -1.0


@host_backend_only
def test_dlpack_streams_and_copies_on_the_host_backend():
    d = gpuhal.to_device(np.arange(4.0))
    copied = np.from_dlpack(d, copy=True)
    d[0] = -1.0
    assert copied[0] == 0.0  # a copy, not the same memory
    with pytest.raises(BufferError):
        d.__dlpack__(stream=5)  # the host backend has no streams to name


def test_bad_imports():
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.raises(gpuhal.Error):
        gpuhal.from_dlpack(ro)  # read-only memory: gpuhal's arrays are writeable
    with pytest.raises(TypeError, match="__dlpack__"):
        gpuhal.from_dlpack(object())
    rec = gpuhal.to_device(np.zeros(2, dtype=[("a", "f4"), ("b", "i4")]))
    with pytest.raises(BufferError):
        rec.__dlpack__()
    if gpuhal.backend() == "cuda":
        assert gpuhal.device_array(2).__cuda_array_interface__["version"] == 3
    else:
        with pytest.raises(AttributeError):
            gpuhal.device_array(2).__cuda_array_interface__  # cuda only
        assert not hasattr(gpuhal.device_array(2), "__cuda_array_interface__")


class _Producer:
    """A DLPack producer that answers what it is given."""

    def __init__(self, device, capsule):
        self.device, self.capsule = device, capsule

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        return self.capsule


def test_a_producer_that_answers_off_protocol_is_refused_by_name():
    here = tuple(gpuhal.device_array(1).__dlpack_device__())
    for device in (None, "x", (1,), (1.0, 0.0)):
        with pytest.raises(TypeError, match="__dlpack_device__"):
            gpuhal.from_dlpack(_Producer(device, None))
    for capsule in (None, 5, "capsule"):
        with pytest.raises(TypeError, match=r"_Producer.__dlpack__\(\) returned .*, not a DLPack capsule"):
            gpuhal.from_dlpack(_Producer(here, capsule))
    if gpuhal.backend() == "host":  # NumPy's capsules are the host's
        assert (gpuhal.from_dlpack(_Producer(here, np.arange(3.0).__dlpack__())).copy_to_host() == [0, 1, 2]).all()


def test_cuda_backend_over_the_fake_driver(python, fake_cuda_env):
    rc, out, err = python("""
        import json
        import numpy as np
        import gpuhal
        assert gpuhal.backend() == "cuda"
        a = np.arange(6, dtype=np.float32).reshape(2, 3)
        d = gpuhal.to_device(a)
        assert (d.copy_to_host() == a).all()
        cai = d.__cuda_array_interface__
        s = gpuhal.stream()
        e = gpuhal.to_device(a, stream=s)
        s.synchronize()
        cai_s = e.__cuda_array_interface__
        t = d.T.__cuda_array_interface__
        cap = d.__dlpack__(stream=1, max_version=(1, 0))
        back = gpuhal.from_dlpack(cap)
        assert (back.copy_to_host() == a).all()
        try:
            d.__dlpack__(stream=0)
            raise SystemExit("stream 0 accepted")
        except BufferError:
            pass
        try:
            gpuhal.from_dlpack(np.arange(3.0))  # NumPy's memory is on the CPU
            raise SystemExit("host memory imported as CUDA memory")
        except gpuhal.InvalidValueError as e:
            assert "DLPack device (1, 0)" in str(e), e
        print(json.dumps({"cai": cai, "cai_s": cai_s, "stream": int(s.handle), "t": t,
                          "dev": d.__dlpack_device__()}))
    """, env=fake_cuda_env)
    assert rc == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    cai = r["cai"]
    assert cai["version"] == 3 and cai["shape"] == [2, 3] and cai["typestr"] == "<f4"
    assert cai["strides"] is None and cai["data"][0] != 0 and cai["data"][1] is False
    assert cai["stream"] is None  # no stream bound: nothing to wait for (Numba's rule)
    assert r["cai_s"]["stream"] == r["stream"] and r["stream"] not in (0, 1, 2)
    assert r["t"]["strides"] == [4, 12]
    assert r["dev"] == [2, 0]  # kDLCUDA, device 0


def test_hsa_backend_over_the_fake_runtime(python, fake_hsa_env):
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        assert gpuhal.backend() == "hsa"
        a = np.arange(12, dtype=np.int32).reshape(3, 4)
        s = gpuhal.stream()
        d = gpuhal.to_device(a, stream=s)
        h = d.copy_to_host()  # on d's stream
        s.synchronize()
        assert (h == a).all()
        v = d[1:, ::2].copy_to_host()  # views keep d's stream
        s.synchronize()
        assert (v == a[1:, ::2]).all()
        with gpuhal.pinned(a):
            assert (gpuhal.to_device(a).copy_to_host() == a).all()
        assert not hasattr(d, "__cuda_array_interface__")
        back = gpuhal.from_dlpack(d.__dlpack__(max_version=(1, 0)))
        assert (back.copy_to_host() == a).all()
        try:
            d.get_ipc_handle()
            raise SystemExit("IPC accepted")
        except gpuhal.NotSupportedError:
            pass
        print(tuple(d.__dlpack_device__()))
    """, env=fake_hsa_env)
    assert rc == 0, err
    assert out.strip().splitlines()[-1] == "(10, 0)"  # kDLROCM, device 0

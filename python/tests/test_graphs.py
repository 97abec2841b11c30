# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Graphs from Python: ``with stream.capture() as g:`` ... ``g.launch()``."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gpuhal

pytestmark = pytest.mark.skipif(not gpuhal.current_context().supports("graphs"),
                                reason="this backend does not claim graphs (begin_capture is refused)")

N = 256


def test_capture_records_instead_of_running_and_replays(twice):
    s = gpuhal.stream()
    x = np.arange(N, dtype=np.float32)
    d = gpuhal.to_device(x)
    with s.capture() as g:
        for _ in range(3):
            twice.twice[(N + 127) // 128, 128, s](d, N)
        assert s.is_capturing
    assert not s.is_capturing
    np.testing.assert_array_equal(d.copy_to_host(), x)  # recorded, not run
    assert g.kernel_node_count == 3 and g.node_count >= 3
    g.launch()
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), x * 8)
    g.launch(s)
    s.synchronize()
    np.testing.assert_array_equal(d.copy_to_host(), x * 64)


def test_update_kernel_args_changes_later_launches(twice):
    s = gpuhal.stream()
    a = gpuhal.to_device(np.ones(N, np.float32))
    b = gpuhal.to_device(np.full(N, 3, np.float32))
    with s.capture() as g:
        twice.twice[(N + 127) // 128, 128, s](a, N)
    g.launch()
    g.update_kernel_args(0, b, N)
    g.launch()
    s.synchronize()
    np.testing.assert_array_equal(a.copy_to_host(), np.full(N, 2, np.float32))
    np.testing.assert_array_equal(b.copy_to_host(), np.full(N, 6, np.float32))
    with pytest.raises(gpuhal.IndexOutOfRangeError):
        g.update_kernel_args(1, b, N)
    with pytest.raises(gpuhal.IndexOutOfRangeError, match="kernel node -1"):
        g.update_kernel_args(-1, b, N)
    with pytest.raises(TypeError, match="kernel_node must be an integer, not float"):
        g.update_kernel_args(0.0, b, N)
    with pytest.raises(gpuhal.CaptureUnsupportedError, match="device arrays and scalars only"):
        g.update_kernel_args(0, np.ones(N, np.float32), N)
    # Numba's stream=0 is the context's default stream; anything else but a Stream is named.
    g.launch(0)
    gpuhal.synchronize()
    np.testing.assert_array_equal(b.copy_to_host(), np.full(N, 12, np.float32))
    with pytest.raises(TypeError, match="launch: stream must be a gpuhal.Stream, 0 or None, not str"):
        g.launch("s")


def test_an_exception_in_the_block_ends_the_capture_and_goes_on():
    s = gpuhal.stream()
    d = gpuhal.device_array(N, np.uint8)
    with pytest.raises(KeyError):
        with s.capture() as g:
            gpuhal.driver.device_memset(d, 1, N, stream=s)
            raise KeyError("user code failed")
    assert not s.is_capturing
    with pytest.raises(gpuhal.InvalidValueError, match="has not ended"):
        g.launch()
    d2 = gpuhal.to_device(np.arange(N, dtype=np.uint8), stream=s)
    s.synchronize()
    np.testing.assert_array_equal(d2.copy_to_host(), np.arange(N, dtype=np.uint8))


def test_synchronising_in_a_capture_is_refused_and_spoils_it():
    s = gpuhal.stream()
    with pytest.raises(gpuhal.CaptureInvalidatedError, match="stream_synchronize"):
        with s.capture():
            with pytest.raises(gpuhal.CaptureUnsupportedError, match="capturing"):
                s.synchronize()
    assert not s.is_capturing
    s.synchronize()  # the stream works again


def test_host_arrays_are_refused_as_kernel_arguments_in_a_capture(twice):
    s = gpuhal.stream()
    host = np.ones(N, np.float32)
    with s.capture() as g:
        with pytest.raises(gpuhal.CaptureUnsupportedError, match="device arrays and scalars only"):
            twice.twice[(N + 127) // 128, 128, s](host, N)
    assert g.kernel_node_count == 0


def test_bad_capture_arguments():
    with pytest.raises(TypeError):
        gpuhal.Capture(0)
    s = gpuhal.stream()
    c = s.capture()
    with c:
        pass
    with pytest.raises(gpuhal.InvalidValueError, match="entered once"):
        with c:
            pass
    with pytest.raises(gpuhal.CaptureUnsupportedError, match="default stream"):
        with gpuhal.default_stream().capture():
            pass


# A random program of memsets, device-to-device copies and kernel launches
# over three arrays: recorded and launched, it leaves what the same program
# submitted directly leaves.
_ops = st.lists(st.one_of(st.tuples(st.just("memset"), st.integers(0, 2), st.integers(0, 255)),
                          st.tuples(st.just("copy"), st.integers(0, 2), st.integers(0, 2)),
                          st.tuples(st.just("add"), st.integers(0, 2), st.integers(0, 2))),
                max_size=12)


@settings(max_examples=25, deadline=None)
@given(program=_ops, launches=st.integers(1, 3))
def test_a_replay_does_what_the_same_work_submitted_directly_does(twice, program, launches):
    s = gpuhal.stream()
    start = [np.arange(N, dtype=np.float32) * (i + 1) for i in range(3)]

    def submit(arrays):
        for op, a, b in program:
            if op == "memset":
                gpuhal.driver.device_memset(arrays[a], b, arrays[a].nbytes, stream=s)
            elif op == "copy" and a != b:
                arrays[a].copy_to_device(arrays[b], stream=s)
            elif op == "add" and a != b:
                twice.add[(N + 127) // 128, 128, s](arrays[a], arrays[b], 1.0, N)

    direct = [gpuhal.to_device(x) for x in start]
    for _ in range(launches):
        submit(direct)
    s.synchronize()
    recorded = [gpuhal.to_device(x) for x in start]
    with s.capture() as g:
        submit(recorded)
    for _ in range(launches):
        g.launch()
    s.synchronize()
    for want, got in zip(direct, recorded):
        np.testing.assert_array_equal(got.copy_to_host(), want.copy_to_host())


def test_graphs_over_the_fake_cuda_driver(python, fake_cuda_env):
    rc, out, err = python("""
        import numpy as np, gpuhal
        assert gpuhal.current_context().supports("graphs")
        s = gpuhal.stream()
        a = gpuhal.to_device(np.arange(64, dtype=np.uint8))
        b = gpuhal.device_array(64, np.uint8)
        with s.capture() as g:
            b.copy_to_device(a, stream=s)
        a.copy_to_device(np.full(64, 7, np.uint8))
        g.launch()
        s.synchronize()
        assert (b.copy_to_host() == 7).all()
        try:
            with s.capture():
                s.query()
        except gpuhal.CaptureUnsupportedError as e:
            print("refused:", e.status)
        except gpuhal.CaptureInvalidatedError as e:
            print("invalidated:", e.status)
        print("ok")
    """, env=fake_cuda_env)
    assert rc == 0, err
    assert "ok" in out

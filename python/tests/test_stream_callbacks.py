# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's Stream.add_callback and Stream.async_done (numba-cuda's
cudadrv/test_streams.py, which Numba itself skips, written again here), their
bad inputs, a stream that fails before its callbacks run, and no deadlock
when the GIL's holder waits for a stream with a Python callback queued."""

import asyncio
import threading

import numpy as np
import pytest

import gpuhal


def test_callbacks_run_after_the_prior_work_in_order_with_their_arg():
    s = gpuhal.stream()
    src = np.arange(1 << 16, dtype=np.float64)
    dst = gpuhal.pinned_array(src.shape)
    d = gpuhal.to_device(src, stream=s)
    d.copy_to_host(dst, stream=s)
    seen = []
    done = threading.Event()

    def record(stream, status, arg):
        seen.append((stream is s, status, arg, bool((dst == src).all())))

    s.add_callback(record, "first")
    s.add_callback(record)  # arg defaults to None (Numba's test_add_callback_with_default_arg)
    s.add_callback(lambda stream, status, event: event.set(), done)
    assert done.wait(10.0)
    assert seen == [(True, 0, "first", True), (True, 0, None, True)]


def test_async_done():
    """Numba's test_async_done, test_parallel_tasks, test_multiple_async_done(_multiple_streams)
    and test_cancelled_future."""

    async def work(value):
        s = gpuhal.stream()
        h_src, h_dst = gpuhal.pinned_array(8), gpuhal.pinned_array(8)
        h_src[:] = value
        d = gpuhal.to_device(h_src, stream=s)
        d.copy_to_host(h_dst, stream=s)
        assert await s.async_done() == s
        return h_dst.mean()

    async def main():
        s = gpuhal.stream()
        assert await s.async_done() == s
        assert await asyncio.gather(*(work(v) for v in [1, 2, 3, 4])) == [1, 2, 3, 4]
        assert await asyncio.gather(*(s.async_done() for _ in range(4))) == [s] * 4
        streams = [gpuhal.stream() for _ in range(4)]
        assert set(await asyncio.gather(*(x.async_done() for x in streams))) == set(streams)
        first, second = s.async_done(), s.async_done()
        first.cancel()
        await second
        assert first.cancelled() and second.done()

    asyncio.run(asyncio.wait_for(main(), 30))


def test_bad_callbacks_are_refused_or_reported(capfd):
    s = gpuhal.stream()
    with pytest.raises(TypeError, match="callable"):
        s.add_callback(5)
    with pytest.raises(RuntimeError, match="no running event loop"):
        s.async_done()  # Numba's rule too: the future belongs to the running loop
    c = gpuhal.stream()
    with pytest.raises(gpuhal.CaptureUnsupportedError, match="captures"):
        with c.capture():
            c.add_callback(lambda *args: None)
    # An exception escaping a callback is printed; the next callbacks run.
    done = threading.Event()
    s.add_callback(lambda *args: 1 / 0)
    s.add_callback(lambda stream, status, event: event.set(), done)
    assert done.wait(10.0)
    err = capfd.readouterr().err
    assert "Exception ignored in gpuhal stream callback" in err and "ZeroDivisionError" in err


def test_callbacks_may_call_gpuhal_and_never_deadlock_the_gil():
    """The backend's callback thread never takes the GIL: a thread holding
    it while it waits for the stream (a flush of the deallocation queue, a
    synchronize) cannot deadlock with a Python callback queued there."""
    s = gpuhal.stream()
    sums = []
    done = threading.Event()

    def uses_gpuhal(stream, status, arg):
        sums.append(int(gpuhal.to_device(np.arange(4)).copy_to_host().sum()))
        done.set()

    for _ in range(20):
        s.add_callback(uses_gpuhal)
        gpuhal.to_device(np.ones(1024), stream=s)  # work after the callback; its array goes at once
        gpuhal.current_context().deallocations.clear()
        s.synchronize()
    assert done.wait(10.0)
    s.add_callback(lambda stream, status, event: event.set(), last := threading.Event())
    assert last.wait(10.0) and sums == [6] * 20


def test_a_callback_after_a_kernel_fault_is_refused_with_it(python, fake_cuda_env):
    """On cuda a kernel's fault is sticky (every later call returns it, as the
    fake driver does): add_callback and async_done raise the launch failure,
    nothing hangs waiting for a callback that cannot come."""
    code, out, err = python(
        """
        import asyncio
        import numpy as np
        import gpuhal
        m = gpuhal.compile("GPUHAL_KERNEL void boom(GPUHAL_GLOBAL float *x) { x[0] = 1.0f; }")
        s = gpuhal.stream()
        m.boom[1, 1, s](gpuhal.device_array(4, dtype=np.float32))
        try:
            s.add_callback(lambda stream, status, arg: print("ran with", status))
        except gpuhal.LaunchFailedError as e:
            print("add_callback refused:", e.status)
        async def main():
            try:
                await asyncio.wait_for(s.async_done(), 10)
            except gpuhal.LaunchFailedError as e:
                print("async_done refused:", e.status)
        asyncio.run(main())
        """,
        env={**fake_cuda_env, "FAKE_CUDA_FAULTING_KERNELS": "boom"},
    )
    assert code == 0, err
    assert "add_callback refused: ERROR_LAUNCH_FAILED" in out, out + err
    assert "async_done refused: ERROR_LAUNCH_FAILED" in out, out + err

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A Hypothesis state machine over gpuhal's public Python API: random
sequences of allocations, views, writes, copies, pinned / mapped / managed
and registered memory, memory pools of both kinds (allocations, stream-ordered
frees, trims), streams, DLPack readers, context resets, device selection,
dropped references and garbage collection. Each step's result
is checked against a NumPy model, or the step raises a gpuhal.Error it was
expected to raise (an object of a reset context: ContextDestroyedError).
The process never crashes, and at the end the device memory in use is back
at its baseline.

Run as a program (test_stateful.py runs it in a fresh interpreter per
backend, since resets end every object of the process's context):

    python stateful_lifetimes.py EXAMPLES STEPS SEED   (SEED 0: the same sequences every run)
"""

import gc
import os
import sys

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, precondition, rule

import gpuhal

SIZES = st.integers(min_value=0, max_value=3000)
VALUES = st.integers(min_value=-1000, max_value=1000)


class Tracked:
    """A gpuhal object with the context generation it was made in and its model."""

    def __init__(self, obj, model, generation, host=None, pool=None):
        self.obj, self.model, self.generation, self.host = obj, model, generation, host
        self.pool = pool  # the MemoryPool its memory came from (device arrays and their views)


class LifetimeMachine(RuleBasedStateMachine):
    devices = Bundle("devices")  # DeviceNDArray with a NumPy model (views: views of the model)
    hosts = Bundle("hosts")  # NumPy arrays in pinned / mapped / managed memory, with their expected contents
    readers = Bundle("readers")  # NumPy arrays reading device memory through DLPack (host backend)
    pools = Bundle("pools")  # gpuhal.MemoryPool of either kind

    def __init__(self):
        super().__init__()
        self.ctx = gpuhal.current_context()
        self.generation = 0
        self.stream = gpuhal.stream()
        self.managed = self.ctx.supports("managed_memory")
        self.host_backend = gpuhal.backend() == "host"
        # Over a fake that runs no device code: the fake CUDA driver refuses
        # launches (FAKE_CUDA_REFUSE_LAUNCHES), the fake ROCr dispatches them
        # and runs nothing (STATEFUL_INERT_KERNELS: the machine's own switch).
        self.inert_kernels = os.environ.get("STATEFUL_INERT_KERNELS") is not None
        self.kernels = os.environ.get("FAKE_CUDA_REFUSE_LAUNCHES") is None and not self.inert_kernels

    def alive(self, t):
        return t.generation == self.generation

    def expect(self, t, action):
        """Runs action(); a dead object must refuse by name, a live one must
        not. An empty array of a reset context may do either: it reads no
        memory, and gpuhal shortcuts some of its calls before any check."""
        if self.alive(t):
            return action()
        try:
            out = action()
        except gpuhal.ContextDestroyedError as e:
            assert "reset" in str(e) or "destroyed" in str(e), e
            return None
        if t.model.size != 0:
            raise AssertionError("an object of a reset context was used without an error")
        return out

    # ---- device arrays ----------------------------------------------------------
    @rule(target=devices, n=SIZES, value=VALUES)
    def to_device(self, n, value):
        model = (np.arange(n, dtype=np.int32) + value).astype(np.int32)
        d = gpuhal.to_device(model)
        return Tracked(d, model.copy(), self.generation)

    @rule(target=devices, n=SIZES, value=VALUES)
    def filled_array(self, n, value):
        d = gpuhal.device_array(n, dtype=np.int32, stream=self.stream)
        model = np.full(n, value, dtype=np.int32)
        self.fill(d, value, model)
        return Tracked(d, model, self.generation)

    def fill(self, d, value, model):
        """d[...] = value (a kernel); without kernels (the fake CUDA driver
        runs no device code, and refuses launches here) a byte copy where
        one can do it, else the refusal is checked and nothing changes (over
        the fake ROCr the launch is accepted and changes nothing)."""
        if self.kernels or d.size == 0:
            d[...] = value
        elif d.is_c_contiguous():
            d.copy_to_device(np.full(d.shape, value, dtype=np.int32))
        elif self.inert_kernels:
            d[...] = value  # dispatched and run by nobody: the bytes, and so the model, stay
            return
        else:
            try:
                d[...] = value
            except gpuhal.NotSupportedError as e:
                assert "cuLaunchKernel" in str(e), e
                return
            raise AssertionError("a kernel ran over the fake driver")
        model[...] = value

    @rule(target=devices, t=devices, start=st.integers(-5, 3005), stop=st.integers(-5, 3005),
          step=st.sampled_from([1, 2, 3, -1, -2]))
    def view(self, t, start, stop, step):
        key = slice(start, stop, step)
        return Tracked(t.obj[key], t.model[key], t.generation, pool=t.pool)

    @rule(t=devices, value=VALUES)
    def write(self, t, value):
        self.expect(t, lambda: self.fill(t.obj, value, t.model))

    @rule(t=devices, stream=st.booleans())
    def read(self, t, stream):
        def action():
            if stream and t.obj.is_c_contiguous():
                out = np.empty(t.model.shape, dtype=np.int32)
                t.obj.copy_to_host(out, stream=self.stream)  # pageable: done when it returns
            elif stream:  # into another layout Numba refuses (as gpuhal on GPUs): a new array
                out = t.obj.copy_to_host(stream=self.stream)
            else:
                out = t.obj.copy_to_host()
            np.testing.assert_array_equal(out, t.model)
        self.expect(t, action)

    @rule(t=consumes(devices))
    def drop_device(self, t):
        del t

    # ---- memory pools -------------------------------------------------------------
    @rule(target=pools, driver=st.booleans())
    def make_pool(self, driver):
        if driver and not self.ctx.supports("driver_memory_pools"):
            try:
                gpuhal.MemoryPool(kind="driver")
            except gpuhal.NotSupportedError as e:
                assert "Capability::DriverMemoryPools" in str(e), e
            else:
                raise AssertionError("a driver pool without the capability")
            driver = False
        return gpuhal.MemoryPool(kind="driver" if driver else "caching")

    @rule(target=devices, pool=pools, n=SIZES, value=VALUES)
    def pool_array(self, pool, n, value):
        # A pool outlives a reset: its next allocation is of the new context.
        d = pool.device_array(n, np.int32, stream=self.stream)
        model = np.full(n, value, dtype=np.int32)
        self.fill(d, value, model)
        return Tracked(d, model, self.generation, pool=pool)

    @rule(pool=pools, t=devices, other_stream=st.booleans())
    def pool_free(self, pool, t, other_stream):
        """The stream-ordered free: its memory goes back when the array and
        its views are dropped; refused for another pool's memory, and for
        memory a reset freed."""
        stream = gpuhal.stream() if other_stream else self.stream
        if t.pool is not pool:
            try:
                pool.free(t.obj, stream=stream)
            except gpuhal.InvalidValueError as e:
                assert "not allocated from this pool" in str(e), e
                return
            except gpuhal.ContextDestroyedError:
                assert not self.alive(t)  # checked first where the memory's context was reset
                return
            raise AssertionError("a pool freed memory it did not allocate")
        self.expect(t, lambda: pool.free(t.obj, stream=stream))

    @rule(pool=pools, keep=st.integers(0, 1 << 16))
    def pool_trim(self, pool, keep):
        given = pool.trim(keep)
        stats = pool.stats()
        assert given >= 0 and stats["used_bytes"] <= stats["reserved_bytes"], stats

    # ---- host memory gpuhal allocated -------------------------------------------
    @rule(target=hosts, kind=st.sampled_from(["pinned", "mapped", "managed"]), n=st.integers(1, 5000),
          value=VALUES)
    def host_array(self, kind, n, value):
        if kind == "managed" and not self.managed:
            kind = "pinned"
        a = getattr(gpuhal, kind + "_array")(n, dtype=np.int32)
        a[:] = value
        return Tracked(a, np.full(n, value, dtype=np.int32), self.generation, host=kind)

    @rule(target=hosts, t=hosts, start=st.integers(0, 4000))
    def host_view(self, t, start):
        return Tracked(t.obj[start:], t.model[start:], t.generation, host=t.host)

    @rule(t=hosts, value=VALUES)
    def host_write(self, t, value):
        t.obj[...] = value  # always allowed: host memory stays valid through a reset
        t.model[...] = value

    @rule(t=hosts)
    def host_read(self, t):
        np.testing.assert_array_equal(np.asarray(t.obj), t.model)

    @rule(t=hosts)
    def host_to_device_and_back(self, t):
        def action():
            d = gpuhal.to_device(t.obj, stream=self.stream)
            self.stream.synchronize()
            np.testing.assert_array_equal(d.copy_to_host(), t.model)
        # A transfer of host memory is a use of the current context: always live.
        action()

    @rule(t=consumes(hosts))
    def drop_host(self, t):
        del t

    @rule(n=st.integers(1, 3000), value=VALUES)
    def registered(self, n, value):
        a = np.full(n, value, dtype=np.int32)
        with gpuhal.register(a):
            d = gpuhal.to_device(a, stream=self.stream)
            self.stream.synchronize()
            np.testing.assert_array_equal(d.copy_to_host(), a)
        with gpuhal.pinned(a):
            pass

    # ---- DLPack readers (the host backend's device memory is host memory) -------
    @precondition(lambda self: self.host_backend)
    @rule(target=readers, t=devices)
    def dlpack_reader(self, t):
        def action():
            return Tracked(np.from_dlpack(t.obj), t.model, t.generation)
        out = self.expect(t, action)
        return out if out is not None else Tracked(np.zeros(0, np.int32), np.zeros(0, np.int32), self.generation)

    @rule(t=readers)
    def read_reader(self, t):
        # The reader's memory stays valid through a reset, with the contents
        # it had then (the model may since be written through live views
        # only while the context lives, and the reader sees those writes).
        np.testing.assert_array_equal(t.obj, t.model)

    # ---- context, devices, collection -------------------------------------------
    @rule()
    def reset(self):
        self.stream.synchronize()
        self.ctx.reset()
        self.generation += 1
        self.stream = gpuhal.stream()

    @rule()
    def select_device_again(self):
        gpuhal.select_device(0)
        assert gpuhal.get_current_device().id == 0 if hasattr(gpuhal.get_current_device(), "id") else True

    @rule()
    def collect(self):
        gc.collect()

    @rule()
    def flush(self):
        self.ctx.deallocations.clear()

    steps = 0  # every step of every sequence run in this process

    @invariant()
    def stream_usable(self):
        LifetimeMachine.steps += 1  # invariants run after every step (and once at the start)
        assert self.stream.query() in (True, False)


def main(examples, steps, seed):
    """Runs `examples` sequences of up to `steps` steps: derandomized (the
    same sequences every run, for CI) with seed 0, else random ones."""
    from hypothesis.stateful import run_state_machine_as_test
    ctx = gpuhal.current_context()
    gc.collect()
    ctx.deallocations.clear()
    baseline = ctx.get_memory_info().free
    config = settings(max_examples=examples, stateful_step_count=steps, deadline=None, derandomize=seed == 0,
                      database=None, suppress_health_check=list(HealthCheck), print_blob=True)
    if seed:
        import random
        random.seed(seed)
    try:
        run_state_machine_as_test(LifetimeMachine, settings=config)
    except Exception:  # noqa: BLE001 - Hypothesis printed the failing sequence
        import traceback
        traceback.print_exc()
        return 1
    gc.collect()
    gpuhal.current_context().deallocations.clear()
    after = gpuhal.current_context().get_memory_info().free
    print(f"{gpuhal.backend()}: {examples} sequences of up to {steps} steps (seed {seed}), "
          f"{LifetimeMachine.steps} steps in all: nothing found; free device memory {baseline} before, {after} after")
    return 0 if after == baseline else 2


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))

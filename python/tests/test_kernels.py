# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal.compile and Numba's launch syntax and argument rules."""

import numpy as np
import pytest

import gpuhal

from conftest import assert_same


def test_launch_on_device_arrays_and_scalars(twice):
    a = np.arange(100, dtype=np.float32)
    d = gpuhal.to_device(a)
    twice.twice[4, 32](d, 100)
    assert_same(d.copy_to_host(), a * 2)
    out = gpuhal.device_array_like(a)
    twice.add[(4,), (32,)](out, d, np.float32(0.5), np.int32(100))
    assert_same(out.copy_to_host(), a * 2 + 0.5)
    assert twice.kernel_names == ["twice", "add"] and twice["add"].name == "add"
    assert "twice" in repr(twice)


def test_numpy_arrays_are_copied_in_and_back(twice):
    a = np.arange(10, dtype=np.float32)
    twice.twice[1, 16](a, 10)  # Numba's rule: copied to the device and back
    assert_same(a, np.arange(10, dtype=np.float32) * 2)
    ro = np.arange(10, dtype=np.float32)
    ro.flags.writeable = False
    out = np.zeros(10, dtype=np.float32)
    twice.add[1, 16](out, ro, 1.0, 10)  # read-only and const: not copied back
    assert_same(out, np.arange(10, dtype=np.float32) + 1)


def test_launch_on_a_stream_with_shared_bytes(twice):
    s = gpuhal.stream()
    d = gpuhal.to_device(np.ones(64, dtype=np.float32), stream=s)
    twice.twice[2, 32, s, 0](d, 64)
    h = d.copy_to_host()  # on d's stream (Numba's rule): asynchronous
    s.synchronize()
    assert_same(h, np.full(64, 2.0, dtype=np.float32))


def test_dlpack_objects_are_passed_as_device_arrays(twice):
    d = gpuhal.to_device(np.ones(8, dtype=np.float32))

    class Foreign:  # a producer that only speaks DLPack
        def __init__(self, arr):
            self._arr = arr

        def __dlpack__(self, **kw):
            return self._arr.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self._arr.__dlpack_device__()

    twice.twice[1, 8](Foreign(d), 8)
    assert_same(d.copy_to_host(), np.full(8, 2.0, dtype=np.float32))


def test_bad_launches_queue_nothing(twice):
    d = gpuhal.to_device(np.ones(8, dtype=np.float32))
    with pytest.raises(ValueError, match="launch configuration"):
        twice.twice(d, 8)
    with pytest.raises(ValueError):
        twice.twice[1](d, 8)
    with pytest.raises(ValueError):
        twice.twice[(1, 1, 1, 1), 8](d, 8)
    with pytest.raises(gpuhal.InvalidValueError):
        twice.twice[0, 8](d, 8)
    # Sizes below 0 or past 32 bits name the configuration (nanobind's
    # unsigned conversion once answered with its own TypeError); floats are
    # refused, never truncated (Numba's rule).
    for config in ((-1, 8), (1, -8), (1 << 32, 8), ((1, 1 << 32), 8), (1, 8, 0, -1), (1, 8, 0, 1 << 32)):
        with pytest.raises(gpuhal.InvalidValueError, match="Kernel launch"):
            twice.twice[config](d, 8)
    for config in ((2.0, 8), ((1, 2.5), 8), (1, 8, 0, 1.5)):
        with pytest.raises(TypeError):
            twice.twice[config](d, 8)
    with pytest.raises(gpuhal.InvalidValueError, match="not aligned to its float32"):
        twice.twice[1, 8](gpuhal.device_array(40, dtype=np.uint8)[1:33].view(np.float32), 8)  # a GPU would fault
    e = gpuhal.to_device(np.ones(8, dtype=np.float32))
    twice.twice[np.int64(1), (np.int32(8),)](e, 8)  # NumPy's integers are integers
    assert_same(e.copy_to_host(), np.full(8, 2, dtype=np.float32))
    with pytest.raises(gpuhal.InvalidValueError):
        twice.twice[1, 8](d)  # one argument missing
    with pytest.raises(gpuhal.InvalidDtypeError):
        twice.twice[1, 8](gpuhal.device_array(8, dtype=np.float64), 8)
    with pytest.raises(gpuhal.InvalidValueError):
        twice.twice[1, 8](d, 2.5)  # a float never becomes an int
    with pytest.raises(TypeError, match="kernel argument 2: bool has no kernel type"):
        twice.twice[1, 8](d, True)
    with pytest.raises(gpuhal.InvalidValueError, match="kernel argument 2: integer out of range of 64 bits"):
        twice.twice[1, 8](d, 1 << 70)
    # What is neither an array nor a scalar is named with its position (it
    # was once reported as "expected a host array" for a scalar parameter).
    for wrong in (object(), None, "8", [1.0] * 8):
        with pytest.raises(TypeError, match=f"kernel argument 2: {type(wrong).__name__} is no kernel argument"):
            twice.twice[1, 8](d, wrong)
    with pytest.raises(AttributeError):
        twice.nothing
    with pytest.raises(gpuhal.NotFoundError):
        twice["nothing"]
    assert_same(d.copy_to_host(), np.ones(8, dtype=np.float32))


def test_compile_errors_carry_the_compiler_messages():
    with pytest.raises(gpuhal.CompilationFailedError) as info:
        gpuhal.compile("GPUHAL_KERNEL void broken(GPUHAL_GLOBAL float *x) { x[0] = undefined_name; }")
    assert "undefined_name" in info.value.message


def test_constant_arrays():
    m = gpuhal.compile("""
        GPUHAL_KERNEL void lookup(GPUHAL_GLOBAL int *out) {
          int i = gpuhal_global_id(0);
          out[i] = table[i][1];
        }""", constants={"table": np.arange(8, dtype=np.int32).reshape(4, 2)})
    out = gpuhal.device_array(4, dtype=np.int32)
    m.lookup[1, 4](out)
    assert_same(out.copy_to_host(), np.array([1, 3, 5, 7], dtype=np.int32))
    assert "table" in m.lowered_source


def test_kernel_attributes_and_suggested_block_size():
    k = gpuhal.compile("""
        GPUHAL_KERNEL void scaled(GPUHAL_GLOBAL float *x, unsigned n) {
          GPUHAL_SHARED_ARRAY(float, s, 256);
          unsigned lid = gpuhal_local_id(0);
          s[lid % 256] = 2.0f;
          gpuhal_barrier(GPUHAL_LOCAL_MEM_FENCE);
          unsigned i = gpuhal_global_id(0);
          if (i < n) x[i] *= s[(lid + 1) % 256];
        }""").scaled
    a = k.attributes
    assert a["static_shared_bytes"] >= 1024
    assert 1 <= a["max_threads_per_block"] <= gpuhal.get_current_device().properties["max_threads_per_block"]
    assert a["preferred_block_multiple"] == gpuhal.get_current_device().properties["warp_size"]
    block, min_grid = k.suggest_block_size()
    assert block % a["preferred_block_multiple"] == 0 and block <= a["max_threads_per_block"]
    assert min_grid >= 1
    assert k.max_active_blocks_per_unit(block) >= 1
    assert k.max_active_blocks_per_unit(a["max_threads_per_block"] + 1) == 0
    with pytest.raises(gpuhal.InvalidValueError, match="a block of 0 work-items"):
        k.max_active_blocks_per_unit(0)
    # The suggestion launches and computes.
    x = gpuhal.to_device(np.full(4 * block, 1.5, dtype=np.float32))
    k[4, block](x, np.uint32(4 * block))
    np.testing.assert_array_equal(x.copy_to_host(), np.full(4 * block, 3.0, dtype=np.float32))


def test_printf_and_assert_from_kernels(python):
    # In a fresh interpreter: gpuhal_printf writes to the process's stdout.
    rc, out, err = python("""
        import numpy as np, gpuhal
        k = gpuhal.compile('''
            GPUHAL_KERNEL void checked(GPUHAL_GLOBAL int *x, unsigned limit) {
              unsigned i = gpuhal_global_id(0);
              gpuhal_printf("item %u has %d\\\\n", i, x[i]);
              gpuhal_assert(i < limit);
            }''').checked
        x = gpuhal.to_device(np.arange(8, dtype=np.int32) * 10)
        k[1, 8](x, np.uint32(8))
        gpuhal.synchronize()
        k[1, 8](x, np.uint32(6))
        try:
            gpuhal.synchronize()
        except gpuhal.LaunchFailedError as e:
            print("failed:", e)
    """)
    assert rc == 0, err
    lines = out.splitlines()
    for i in range(8):
        assert lines.count(f"item {i} has {10 * i}") == 2, out
    failed = [line for line in lines if line.startswith("failed:")]
    assert len(failed) == 1 and "kernel 'checked': gpuhal_assert(i < limit) failed at kernel:5" in failed[0], out
    assert "work-item (6, 0, 0) of work-group (0, 0, 0)" in failed[0] or "work-item (7, 0, 0)" in failed[0], out


WAVE_SUM = r"""
GPUHAL_KERNEL void wave_sum(GPUHAL_GLOBAL const double *x, unsigned n, GPUHAL_GLOBAL double *per_wave,
                            GPUHAL_GLOBAL int *lanes) {
  unsigned g = gpuhal_global_id(0);
  double v = g < n ? x[g] : 0.0;
  double total = gpuhal_wave_reduce_add(v);
  double top = gpuhal_wave_reduce_max(v);
  if (gpuhal_wave_lane() == 0u) {
    unsigned w = g / gpuhal_wave_size();
    per_wave[2 * w] = total;
    per_wave[2 * w + 1] = top;
  }
  if (g == 0u) lanes[0] = (int)gpuhal_wave_size();
}
"""


def test_a_reduction_through_wave_operations_matches_numpy():
    # One value per work-item, reduced per wave by gpuhal_wave_reduce_add and
    # _max; the waves' results, summed and maxed on the host, match NumPy's.
    module = gpuhal.compile(WAVE_SUM)
    rng = np.random.default_rng(46)
    x = rng.integers(-1000, 1000, size=4096).astype(np.float64)
    wave_size = np.zeros(1, dtype=np.int32)
    per_wave = np.full(2 * 4096, np.nan)
    module.wave_sum[16, 256](x, x.size, per_wave, wave_size)
    waves = x.size // int(wave_size[0])
    results = per_wave[: 2 * waves].reshape(waves, 2)
    assert results[:, 0].sum() == x.sum()  # integers in doubles: exact in any order
    assert results[:, 1].max() == x.max()
    np.testing.assert_array_equal(results[:, 0], x.reshape(waves, -1).sum(axis=1))


def test_context_limits_round_trip_or_name_the_missing_capability():
    ctx = gpuhal.current_context()
    with pytest.raises(ValueError, match="unknown limit 'heap'"):
        ctx.limit("heap")
    if not ctx.supports("context_limits"):  # host and hsa
        with pytest.raises(gpuhal.NotSupportedError, match="Capability::ContextLimits"):
            ctx.set_limit("stack_bytes", 4096)
        return
    before = ctx.limit("stack_bytes")
    ctx.set_limit("stack_bytes", before + 4096)
    assert ctx.limit("stack_bytes") >= before + 4096
    ctx.set_limit("stack_bytes", before)

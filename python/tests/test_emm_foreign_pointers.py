# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""EMM plugins written as RMM writes its Numba manager: the memory behind a
MemoryPointer is the plugin's own, kept in ``self.allocations`` and handed
over as a ``ctypes.c_uint64`` address (or another integer-like object). And
the sizes, offsets and pointers of the memory API: integers only, never a
float silently truncated (Numba passes them through ctypes, which refuses
them)."""

import ctypes

import numpy as np
import pytest

import gpuhal
from conftest import host_backend_only

# numba-cuda's EMM plugin in RMM's shape (rmm/allocators/numba.py): the
# buffer is kept in self.allocations under its address and taken out by
# the MemoryPointer's finalizer; the pointer is a ctypes.c_uint64.
_RMM_STYLE = """
    import ctypes, gc
    import numpy as np
    import gpuhal

    class RMMStyle(gpuhal.HostOnlyCUDAMemoryManager):
        def initialize(self):
            pass

        def memalloc(self, size):
            buf = self.backend_memalloc(size)  # stands for rmm.DeviceBuffer
            ptr = int(buf.device_pointer)
            allocations = self.allocations
            allocations[ptr] = buf

            def finalizer():
                allocations.pop(ptr, None)

            return gpuhal.MemoryPointer(self.context, ctypes.c_uint64(ptr), size, finalizer=finalizer)

        def get_ipc_handle(self, memory):
            raise NotImplementedError

        def get_memory_info(self):
            return gpuhal.MemoryInfo(free=0, total=0)

        @property
        def interface_version(self):
            return 1

    gpuhal.set_memory_manager(RMMStyle)
    ctx = gpuhal.current_context()
    plugin = ctx.memory_manager
"""


def test_an_rmm_style_plugin_serves_allocations_and_lets_them_go(python):
    rc, out, err = python(_RMM_STYLE + """
    d = gpuhal.to_device(np.arange(10.0))
    assert (d.copy_to_host() == np.arange(10.0)).all()
    assert len(plugin.allocations) == 1 and d.device_pointer in plugin.allocations
    try:
        plugin.allocations[d.device_pointer] = None
    except KeyError as e:
        assert "already holds" in str(e)
    else:
        raise AssertionError("a second entry at one address was taken")
    del d
    gc.collect()
    assert len(plugin.deallocations) == len(ctx.deallocations)  # Numba's name on the manager: the context's queue
    plugin.deallocations.clear()
    assert len(plugin.allocations) == 0 and len(ctx.deallocations) == 0
    # A reset clears the plugin's allocations (Numba's rule); an array over
    # them is refused by name from then on, never read.
    e = gpuhal.to_device(np.arange(4.0))
    ctx.reset()
    assert len(plugin.allocations) == 0
    for use in (e.copy_to_host, lambda: np.asarray(e), lambda: e.__setitem__(0, 1)):
        try:
            use()
        except gpuhal.ContextDestroyedError:
            pass
        else:
            raise AssertionError("an array over memory a reset let go was used")
    f = gpuhal.to_device(np.arange(3.0))
    assert (f.copy_to_host() == np.arange(3.0)).all() and len(plugin.allocations) == 1
    print("ok")
    """)
    assert rc == 0, err
    assert out.split() == ["ok"]
    assert "leaked" not in err


@host_backend_only  # the host backend checks every address it is given
def test_a_call_that_fails_inside_a_plugin_allocation_leaks_nothing_at_exit(python):
    # The plugin hands out an address that is no device allocation: the copy
    # fails with the GIL released, and what it dropped then is let go at
    # exit even though no gpuhal call follows (nanobind reports a leak).
    rc, out, err = python(_RMM_STYLE.replace("ctypes.c_uint64(ptr)", "ctypes.c_uint64(0x1000)") + """
    try:
        gpuhal.to_device(np.arange(10.0))
    except gpuhal.Error as e:
        print(e.status)
    """)
    assert rc == 0, err
    assert out.split() == ["ERROR_INVALID_VALUE"]
    assert "leaked" not in err, err


def test_pointers_come_as_ints_ctypes_or_objects_that_convert(ctx):
    m = ctx.memalloc(64)
    p = m.device_pointer

    class CUdeviceptrLike:  # cuda.bindings' CUdeviceptr converts with int()
        def __int__(self):
            return p

    for pointer in (p, np.uint64(p), ctypes.c_uint64(p), ctypes.c_size_t(p), ctypes.c_void_p(p), CUdeviceptrLike()):
        assert gpuhal.MemoryPointer(ctx, pointer, 64).device_pointer == p
    assert gpuhal.MemoryPointer(ctx, None, 0).device_pointer == 0
    assert gpuhal.MemoryPointer(ctx, ctypes.c_void_p(None), 0).device_pointer == 0
    for bad in (float(p), "0x1000", b"\x00", True, ctypes.c_double(1.0), object()):
        with pytest.raises(TypeError, match="pointer"):
            gpuhal.MemoryPointer(ctx, bad, 64)


def _float_cases():
    ctx = gpuhal.current_context
    granularity = lambda: gpuhal.vm_granularity()[0]  # noqa: E731
    return {
        "PhysicalMemory size": lambda: gpuhal.PhysicalMemory(granularity() + 0.5),
        "VirtualRange size": lambda: gpuhal.VirtualRange(float(granularity())),
        "VirtualRange alignment": lambda: gpuhal.VirtualRange(granularity(), 0.0),
        "GrowableDeviceArray max_size": lambda: gpuhal.GrowableDeviceArray(16.0),
        "MemoryPool release_threshold": lambda: gpuhal.MemoryPool(1.5),
        "MemoryPool.allocate nbytes": lambda: gpuhal.MemoryPool().allocate(8.5),
        "MemoryPool.trim keep_bytes": lambda: gpuhal.MemoryPool().trim(0.5),
        "MemoryPointer.view start": lambda: ctx().memalloc(64).view(1.5),
        "MemoryPointer.view stop": lambda: ctx().memalloc(64).view(0, 8.0),
        "MemoryPointer.memset count": lambda: ctx().memalloc(64).memset(0, 8.0),
        "MemoryPointer size": lambda: gpuhal.MemoryPointer(ctx(), 16, 8.5),
        "device_memset size": lambda: gpuhal.driver.device_memset(gpuhal.device_array(8), 0, 8.0),
        "device_memset val": lambda: gpuhal.driver.device_memset(gpuhal.device_array(8), 1.5, 8),
        "host_to_device size": lambda: gpuhal.driver.host_to_device(gpuhal.device_array(8), np.zeros(8), 8.0),
        "device_to_host size": lambda: gpuhal.driver.device_to_host(np.zeros(8), gpuhal.device_array(8), 8.0),
        "mempin pointer": lambda: ctx().mempin(np.zeros(8), float(np.zeros(8).ctypes.data), 64),
        "mempin size": lambda: (lambda h: ctx().mempin(h, h.ctypes.data, 64.0))(np.zeros(8)),
        "external_stream pointer": lambda: gpuhal.external_stream(1.5),
    }


@pytest.mark.parametrize("case", sorted(_float_cases()))
def test_a_float_size_offset_or_pointer_is_a_type_error_never_truncated(case):
    with pytest.raises(TypeError, match="must be an integer, not float"):
        _float_cases()[case]()


def test_kernel_occupancy_queries_take_integers_only(twice):
    with pytest.raises(TypeError, match="dynamic_shared_bytes must be an integer"):
        twice.twice.suggest_block_size(1.5)
    with pytest.raises(TypeError, match="block_threads must be an integer"):
        twice.twice.max_active_blocks_per_unit(64.0)
    assert twice.twice.max_active_blocks_per_unit(np.int64(64)) >= 0


def test_misuses_of_the_events_ipc_and_manager_calls_name_what_they_expected():
    with pytest.raises(TypeError, match="event_elapsed_time: expected two gpuhal Events, not NoneType"):
        gpuhal.event_elapsed_time(None, gpuhal.event())
    with pytest.raises(TypeError, match="open_ipc_array: expected an IpcHandle"):
        with gpuhal.open_ipc_array(None, 4, np.float32):
            pass
    with pytest.raises(TypeError, match="set_memory_manager: expected an EMM plugin class, not NoneType"):
        gpuhal.set_memory_manager(None)
    with pytest.raises(ValueError, match="advice must be one of"):
        gpuhal.advise(gpuhal.managed_array(4), np.arange(3))
    with pytest.raises(ValueError, match="kind must be"):
        gpuhal.MemoryPool(None, ["caching"])

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's memory API over gpuhal: the context's memory methods, Numba's
memory objects, gpuhal.driver's byte operations, and External Memory
Management plugins (a pool manager in the style of RMM's Numba manager,
written against the interface alone), with their bad inputs."""

import ctypes
import gc
import mmap
import weakref

import numpy as np
from numpy.testing import assert_equal
import pytest

import gpuhal
from gpuhal import driver


def test_memalloc_views_and_free(ctx):
    ctx = gpuhal.current_context()
    mem = ctx.memalloc(1024)
    assert isinstance(mem, gpuhal.MemoryPointer) and mem.size == 1024
    assert driver.is_device_memory(mem) and driver.device_memory_size(mem) == 1024
    assert isinstance(mem.device_ctypes_pointer, ctypes.c_size_t)
    assert mem.device_ctypes_pointer.value == mem.device_pointer != 0
    view = mem.view(100, 300)
    assert view.owner is mem and view.size == 200 and view.device_pointer == mem.device_pointer + 100
    assert mem.refct == 2
    inner = view.view(50)
    assert inner.owner is mem and inner.device_pointer == mem.device_pointer + 150 and mem.refct == 3
    del inner
    gc.collect()
    assert mem.refct == 2
    # Byte operations through the view reach the owner's memory, and only
    # the view's bytes of it (the memory may be a reused block: set it first).
    driver.device_memset(mem, 0, 1024)
    driver.device_memset(view, 7, 200)
    out = np.ones(1024, dtype=np.uint8)
    driver.device_to_host(out, mem, 1024)
    assert (out[100:300] == 7).all() and not out[:100].any() and not out[300:].any()
    # free() drops this object's memory; the view keeps what it reaches alive.
    mem.free()
    driver.device_memset(view, 9, 10)
    back = np.zeros(200, dtype=np.uint8)
    driver.device_to_host(back, view, 200)
    assert (back[:10] == 9).all() and (back[10:] == 7).all()


def test_memory_methods_refuse_bad_sizes():
    ctx = gpuhal.current_context()
    for call in (ctx.memalloc, ctx.memhostalloc, ctx.memallocmanaged):
        with pytest.raises(gpuhal.InvalidValueError, match="positive"):
            call(0)
        with pytest.raises(TypeError, match="integer"):
            call(2.5)
    mem = ctx.memalloc(64)
    with pytest.raises(IndexError):
        mem.view(10, 100)
    with pytest.raises(IndexError):
        mem.view(-1)
    host = np.zeros(128, dtype=np.uint8)
    with pytest.raises(ValueError, match="beyond the memory"):
        driver.device_to_host(host, mem, 100)
    with pytest.raises(ValueError, match="beyond the memory"):
        driver.host_to_device(mem, host[:32], 64)
    with pytest.raises(TypeError, match="device memory"):
        driver.device_memset(host, 0, 8)
    with pytest.raises(ValueError, match="read-only"):
        ro = np.zeros(64, dtype=np.uint8)
        ro.flags.writeable = False
        driver.device_to_host(ro, mem, 64)


def test_host_memory_objects_are_numpy_buffers():
    ctx = gpuhal.current_context()
    pinned = ctx.memhostalloc(64)
    assert isinstance(pinned, gpuhal.PinnedMemory) and pinned.size == 64
    ary = np.ndarray(shape=16, dtype=np.float32, buffer=pinned)
    ary[:] = np.arange(16)
    d = gpuhal.device_array(16, dtype=np.float32)
    driver.host_to_device(d, pinned, 64)
    assert (d.copy_to_host() == np.arange(16)).all()

    mapped = ctx.memhostalloc(32, mapped=True)
    assert isinstance(mapped, gpuhal.MappedMemory) and driver.is_device_memory(mapped)
    driver.device_memset(mapped, 0xAB, 32)
    assert (np.asarray(mapped) == 0xAB).all()
    view = mapped.view(8, 16)  # Numba's view(start, stop): device memory
    assert view.size == 8 and view.device_pointer == mapped.device_pointer + 8
    assert mapped.view(np.uint16).shape == (16,)  # NumPy's view(dtype) still works

    if ctx.supports("managed_memory"):
        managed = ctx.memallocmanaged(16)
        driver.device_memset(managed, 3, 16)
        assert (np.asarray(managed) == 3).all()

    owner = np.arange(32, dtype=np.int32)
    pin = ctx.mempin(owner, owner.ctypes.data, owner.nbytes, mapped=True)
    assert pin.owned is owner and driver.is_device_memory(pin)
    back = np.zeros(32, dtype=np.int32)
    driver.device_to_host(back, pin, owner.nbytes)
    assert (back == owner).all()
    pin.free()  # unregisters now: the bytes can be pinned again
    again = ctx.mempin(owner, owner.ctypes.data, owner.nbytes)
    again.free()
    with pytest.raises(RuntimeError, match="dead"):
        again.free()


def test_device_ndarray_over_given_memory():
    """DeviceNDArray(shape, strides, dtype, gpu_data=memory), as an EMM
    plugin's user wraps an allocation: C and Fortran order over memory
    gpuhal allocated, sharing its bytes and keeping it alive."""
    ctx = gpuhal.current_context()
    mem = ctx.memalloc(96)
    c = gpuhal.DeviceNDArray((3, 4), (32, 8), np.float64, gpu_data=mem)
    c.copy_to_device(np.arange(12.0).reshape(3, 4))
    f = gpuhal.DeviceNDArray((3, 4), (8, 24), np.float64, gpu_data=mem)
    assert_equal(f.copy_to_host(), np.arange(12.0).reshape(4, 3).T)
    assert gpuhal.DeviceNDArray((2, 2), None, np.int32, gpu_data=mem.view(8)).strides == (8, 4)
    assert gpuhal.DeviceNDArray((0, 3), (24, 8), np.float64, gpu_data=mem).size == 0
    assert gpuhal.DeviceNDArray((), (), np.float64, gpu_data=mem.view(8)).copy_to_host() == 1.0
    again = gpuhal.DeviceNDArray((12,), (8,), np.float64, gpu_data=c.gpu_data)
    assert_equal(again.copy_to_host(), np.arange(12.0))
    for memory in (ctx.memhostalloc(64, mapped=True), ctx.memallocmanaged(64)):
        gpuhal.DeviceNDArray((8,), (8,), np.float64, gpu_data=memory).copy_to_device(np.arange(8.0))
        assert_equal(np.asarray(memory).view(np.float64), np.arange(8.0))
    every_other = gpuhal.DeviceNDArray((6,), (16,), np.float64, gpu_data=mem)  # any strides within the memory
    assert_equal(every_other.copy_to_host(), np.arange(0.0, 12.0, 2.0))
    with pytest.raises(ValueError, match="beyond the memory"):
        gpuhal.DeviceNDArray((4, 4), (32, 8), np.float64, gpu_data=mem)
    with pytest.raises(ValueError, match="beyond the memory"):
        gpuhal.DeviceNDArray((7,), (16,), np.float64, gpu_data=mem)
    with pytest.raises(ValueError, match="non-negative multiples"):
        gpuhal.DeviceNDArray((3,), (-8,), np.float64, gpu_data=mem)
    with pytest.raises(gpuhal.InvalidShapeError, match="negative"):
        gpuhal.DeviceNDArray((-1,), (8,), np.float64, gpu_data=mem)
    columns = gpuhal.DeviceNDArray((3, 2), (32, 16), np.float64, gpu_data=c[:, ::2].gpu_data)  # a strided span
    assert_equal(columns.copy_to_host(), np.arange(12.0).reshape(3, 4)[:, ::2])
    # free() drops the pointer's memory: the pointer and views made after are
    # refused by name, never read; the arrays made before keep the bytes.
    mem.free()
    late = mem.view(8)
    for refused in (mem, late):
        with pytest.raises(ValueError, match="was freed"):
            gpuhal.DeviceNDArray((1,), (8,), np.float64, gpu_data=refused)
        with pytest.raises(ValueError, match="was freed"):
            driver.device_memset(refused, 0, 8)
        with pytest.raises(ValueError, match="was freed"):
            refused.memset(0)
    assert_equal(c.copy_to_host(), np.arange(12.0).reshape(3, 4))


def test_an_array_over_a_pool_plugins_memory_keeps_it_from_the_pool(pool):
    """Numba's DeviceNDArray(..., gpu_data=ptr) keeps ptr: an EMM pool's
    block goes back to the pool only when the array and its views are gone,
    never while they can still reach it."""
    ctx = gpuhal.current_context()
    ptr = ctx.memalloc(256)
    view = gpuhal.DeviceNDArray((32,), (8,), np.float64, gpu_data=ptr)[4:]
    view.copy_to_device(np.arange(28.0))
    del ptr
    gc.collect()
    ctx.deallocations.clear()
    other = ctx.memalloc(256)  # were the block back in the pool, this would be it
    gpuhal.DeviceNDArray((32,), (8,), np.float64, gpu_data=other)[:] = -1.0
    assert_equal(view.copy_to_host(), np.arange(28.0))
    assert pool.made == 2 and pool.reused == 0
    del view
    gc.collect()
    ctx.deallocations.clear()
    ctx.memalloc(256)
    assert pool.reused == 1


def test_mempin_refuses_memory_that_is_not_there():
    ctx = gpuhal.current_context()
    with pytest.raises(gpuhal.InvalidValueError, match="null pointer"):
        ctx.mempin(None, 0, 64)
    # Three pages with the middle one unmapped (libc's mmap and munmap).
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    page = mmap.PAGESIZE
    base = libc.mmap(None, 3 * page, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    assert base not in (None, ctypes.c_void_p(-1).value)
    libc.munmap(base + page, page)
    try:
        with pytest.raises(gpuhal.InvalidValueError, match="not all mapped"):
            ctx.mempin(None, base, 3 * page)
        head = ctx.mempin(None, base, page)  # the mapped pages beside the hole pin
        assert head.nbytes == page
        del head
    finally:
        libc.munmap(base, page)
        libc.munmap(base + 2 * page, page)
    a = np.zeros(8)
    pinned = ctx.mempin(a, a.ctypes.data, a.nbytes)
    assert pinned.nbytes == a.nbytes


def test_numba_device_ndarray_constructor_and_gpu_data():
    d = gpuhal.DeviceNDArray(shape=(3, 4), strides=(32, 8), dtype=np.float64)
    assert d.shape == (3, 4) and d.strides == (32, 8)
    d2 = gpuhal.DeviceNDArray((5,), (4,), np.int32)
    assert d2.shape == (5,) and d2.dtype == np.int32
    with pytest.raises(TypeError, match="dtype"):
        gpuhal.DeviceNDArray(shape=(2,), strides=(8,))
    with pytest.raises(NotImplementedError, match="gpu_data"):
        gpuhal.DeviceNDArray(shape=(2,), strides=(8,), dtype=np.float64, gpu_data=object())
    # Numba's stream argument, by keyword or in its place (both once failed).
    s = gpuhal.stream()
    assert gpuhal.DeviceNDArray((3,), (4,), np.float32, stream=s).stream is s
    assert gpuhal.DeviceNDArray((3,), (4,), np.float32, s).stream is s
    data = gpuhal.to_device(np.arange(6.0))[::-1].gpu_data
    assert data.size == 48 and driver.device_memory_size(data) == 48
    assert gpuhal.device_array(0).gpu_data is None
    dev, converted = gpuhal.auto_device(np.arange(3))
    assert converted and isinstance(dev, gpuhal.DeviceNDArray)
    assert gpuhal.auto_device(dev) == (dev, False)


class PoolManager(gpuhal.GetIpcHandleMixin, gpuhal.HostOnlyCUDAMemoryManager):
    """A pool in the style of RMM's Numba manager, written against Numba's
    EMM interface alone: blocks from the backend, kept by size and handed
    out again when their AutoFreePointer goes."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.free_blocks = {}
        self.made = self.reused = 0
        self.initialized = self.was_reset = False

    def initialize(self):
        self.initialized = True

    def memalloc(self, size):
        blocks = self.free_blocks.setdefault(size, [])
        if blocks:
            block = blocks.pop()
            self.reused += 1
        else:
            block = self.backend_memalloc(size)
            self.made += 1
        pool = self.free_blocks

        def give_back():
            pool.setdefault(size, []).append(block)

        return gpuhal.AutoFreePointer(self.context, block.device_pointer, size, finalizer=give_back)

    def reset(self):
        self.was_reset = True
        self.free_blocks.clear()
        super().reset()

    @property
    def interface_version(self):
        return 1


@pytest.fixture
def pool():
    ctx = gpuhal.current_context()
    previous = ctx.memory_manager
    plugin = PoolManager(context=ctx)
    ctx.memory_manager = plugin
    yield plugin
    ctx.memory_manager = previous
    assert gpuhal._gpuhal.memory_manager_name(ctx._c) in ("default", "pool")


def test_a_pool_plugin_serves_every_device_allocation(pool):
    assert pool.initialized
    ctx = gpuhal.current_context()
    assert ctx.memory_manager is pool
    a = gpuhal.to_device(np.arange(256, dtype=np.float32))
    assert pool.made == 1
    first = a.device_pointer
    assert (a.copy_to_host() == np.arange(256)).all()
    del a
    gc.collect()
    b = gpuhal.device_array(256, dtype=np.float32)  # the same size: the pool's block again
    assert pool.reused == 1 and b.device_pointer == first
    b[:] = 2.0
    assert (b.copy_to_host() == 2.0).all()
    m = ctx.memalloc(4096)  # Numba's context.memalloc asks the plugin too
    assert pool.made == 2 and m.size == 4096
    info = ctx.get_memory_info()
    assert info.total > 0
    handle = ctx.get_ipc_handle(b.gpu_data) if ctx.supports("ipc") else None
    assert handle is None or handle.size == 1024


def test_a_reset_resets_the_plugin_and_keeps_it(python):
    # In a process of its own: a reset ends every object of the session.
    rc, out, err = python("""
        import gpuhal
        class Plugin(gpuhal.HostOnlyCUDAMemoryManager):
            resets = 0
            def memalloc(self, size):
                return self.backend_memalloc(size)
            def reset(self):
                Plugin.resets += 1
            def get_ipc_handle(self, memory):
                raise NotImplementedError
            @property
            def interface_version(self):
                return 1
        ctx = gpuhal.current_context()
        plugin = Plugin(context=ctx)
        ctx.memory_manager = plugin
        d = gpuhal.device_array(10)
        ctx.reset()
        assert Plugin.resets == 1 and ctx.memory_manager is plugin
        e = gpuhal.device_array(10)
        e[:] = 1.5
        assert e.copy_to_host().sum() == 15.0
        print("ok")
    """)
    assert rc == 0, err
    assert out.strip() == "ok"


def test_plugins_of_another_interface_version_are_refused():
    class V2(PoolManager):
        @property
        def interface_version(self):
            return 2

    ctx = gpuhal.current_context()
    before = ctx.memory_manager
    with pytest.raises(RuntimeError, match="version 1 required"):
        gpuhal.set_memory_manager(V2)
    with pytest.raises(RuntimeError, match="version 1 required"):
        ctx.memory_manager = V2(context=ctx)
    assert type(ctx.memory_manager) is type(before)  # nothing changed
    with pytest.raises(RuntimeError, match="requires a context"):
        PoolManager()


def test_a_plugins_memory_is_freed_when_the_last_view_goes(pool):
    a = gpuhal.device_array(1000, dtype=np.uint8)
    view = a[10:20]
    del a
    gc.collect()
    assert pool.free_blocks.get(1000, []) == []  # the view still holds the block
    del view
    gc.collect()
    assert len(pool.free_blocks[1000]) == 1


def test_python_plugin_from_the_environment(python):
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        import plugin_module
        d = gpuhal.to_device(np.arange(4.0))
        print(type(gpuhal.current_context().memory_manager).__name__, plugin_module.CALLS)
    """, env={"GPUHAL_MEMORY_MANAGER": "plugin_module:Counting", "PYTHONPATH": _with_python_path(_plugin_dir())})
    assert rc == 0, err
    assert out.split() == ["Counting", "1"]


def _with_python_path(folder):
    """`folder` ahead of the PYTHONPATH this run has (gpuhal may be found
    through it, as in the hardware run's build of the package)."""
    import os
    return os.pathsep.join(p for p in (folder, os.environ.get("PYTHONPATH")) if p)


def _plugin_dir():
    import os
    import tempfile
    d = tempfile.mkdtemp()
    with open(os.path.join(d, "plugin_module.py"), "w") as f:
        f.write("import gpuhal\n"
                "CALLS = 0\n"
                "class Counting(gpuhal.HostOnlyCUDAMemoryManager):\n"
                "    def memalloc(self, size):\n"
                "        global CALLS\n"
                "        CALLS += 1\n"
                "        return self.backend_memalloc(size)\n"
                "    def get_ipc_handle(self, memory):\n"
                "        raise NotImplementedError\n"
                "    @property\n"
                "    def interface_version(self):\n"
                "        return 1\n")
    return d


def test_cuda_array_interface_functions_on_this_backend():
    d = gpuhal.to_device(np.arange(3))
    if gpuhal.backend() != "cuda":
        assert not gpuhal.is_cuda_array(d)
        with pytest.raises(TypeError, match="cuda array interface"):
            gpuhal.as_cuda_array(d)
        with pytest.raises(gpuhal.InvalidValueError, match="CUDA memory"):
            gpuhal.from_cuda_array_interface({"shape": (3,), "typestr": "<i8", "data": (1, False), "version": 3})
    assert not gpuhal.is_cuda_array(np.arange(3))


def test_a_malformed_cuda_array_interface_is_refused_by_key_over_the_fake_driver(python, fake_cuda_env):
    # Each malformed dict: the error's class and the words that name the key,
    # before any array is made (a float was truncated, too few strides read
    # past their list, a missing key was a bare KeyError).
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        d = gpuhal.to_device(np.arange(10.0))
        good = dict(d.__cuda_array_interface__)
        cases = [
            (None, TypeError, "expected the interface's dict, not NoneType"),
            ({k: v for k, v in good.items() if k != "data"}, ValueError, "has no 'data'"),
            ({**good, "shape": (10.5,)}, TypeError, "'shape' must be integers"),
            ({**good, "shape": (2, 5), "strides": (8,)}, ValueError, "'strides' (8,) has 1 entries for a shape of 2"),
            ({**good, "strides": (8.0,)}, TypeError, "'strides' must be integers"),
            ({**good, "data": 5}, TypeError, "'data' must be a (pointer, read-only) pair"),
            ({**good, "data": (1.5, False)}, TypeError, "the pointer of 'data' must be an integer"),
            ({**good, "data": (-8, False)}, ValueError, "is not a 64-bit address"),
            ({**good, "typestr": "zz"}, TypeError, "'typestr' 'zz'"),
            ({**good, "stream": 1.5}, TypeError, "'stream' must be an integer"),
            ({**good, "stream": -1}, ValueError, "'stream' -1 is no stream"),
            ({**good, "stream": 0}, ValueError, "stream 0 is not allowed"),
        ]
        for desc, error, words in cases:
            try:
                gpuhal.from_cuda_array_interface(desc)
            except error as e:
                assert words in str(e), (words, str(e))
            else:
                raise SystemExit(f"accepted: {desc}")
        assert (gpuhal.from_cuda_array_interface(good).copy_to_host() == np.arange(10.0)).all()
        print("ok")
    """, env=fake_cuda_env)
    assert rc == 0, err
    assert out.strip() == "ok"


def test_foreign_memory_needs_one_stride_per_axis(ctx):
    # The C++ side of the interface: DLPack reads one stride per axis.
    d = gpuhal.device_array(6)
    with pytest.raises(gpuhal.InvalidShapeError, match="1 strides for a shape of 2 axes"):
        gpuhal._gpuhal.from_pointer(ctx._c, d.device_pointer, [2, 3], "<f8", [8], None)
    with pytest.raises(gpuhal.InvalidShapeError, match="3 strides for a shape of 2 axes"):
        gpuhal._gpuhal.from_pointer(ctx._c, d.device_pointer, [2, 3], "<f8", [24, 8, 8], None)


def test_cuda_array_interface_round_trip_over_the_fake_driver(python, fake_cuda_env):
    rc, out, err = python("""
        import numpy as np
        import gpuhal
        s = gpuhal.stream()
        d = gpuhal.to_device(np.arange(6.0), stream=s)
        cai = d.__cuda_array_interface__
        assert cai["stream"] == s.handle
        assert gpuhal.to_device(np.arange(3.0)).__cuda_array_interface__["stream"] is None

        class Foreign:
            def __init__(self, desc):
                self.__cuda_array_interface__ = desc

        owner = Foreign(cai)
        v = gpuhal.as_cuda_array(owner)
        assert v.device_pointer == d.device_pointer and v.stream.external
        assert (v.copy_to_host() == np.arange(6.0)).all()
        import sys
        before = sys.getrefcount(owner)
        del v
        import gc; gc.collect()
        assert sys.getrefcount(owner) == before - 1  # the view let its owner go
        m = gpuhal.mapped_array(4)
        assert m.__cuda_array_interface__["data"][0] == m._gpuhal_device.device_pointer
        try:
            m[1:].__cuda_array_interface__
            raise SystemExit("a view offered the interface")
        except AttributeError:
            pass
        print("ok")
    """, env=fake_cuda_env)
    assert rc == 0, err
    assert out.strip() == "ok"


def test_pickle_repr_detect_and_jit(capsys):
    import pickle
    d = gpuhal.to_device(np.arange(12, dtype=np.int16).reshape(3, 4))[:, 1:]
    back = pickle.loads(pickle.dumps(d))
    assert isinstance(back, gpuhal.DeviceNDArray) and back.dtype == np.int16
    assert (back.copy_to_host() == d.copy_to_host()).all()
    assert back.device_pointer != d.device_pointer  # a new array, not the same memory
    text = repr(gpuhal.current_context())
    assert text.startswith("<gpuhal.Context of device 0") and gpuhal.backend() in text
    assert gpuhal.detect() is True
    assert "Found" in capsys.readouterr().out
    with pytest.raises(NotImplementedError, match="gpuhal.compile"):
        gpuhal.jit(lambda x: x)


def test_log_goes_to_python_logging(python):
    rc, out, err = python("""
        import logging
        import gpuhal
        records = []

        class Keep(logging.Handler):
            def emit(self, record):
                records.append((record.levelname, record.getMessage()))

        log = logging.getLogger("gpuhal.log")
        log.addHandler(Keep())
        log.setLevel(logging.DEBUG)
        log.propagate = False
        gpuhal.log_to_python()
        gpuhal.current_context()  # loads the backend: debug messages
        gpuhal.flush_log()
        assert any(level == "DEBUG" and "loaded backend" in m for level, m in records), records
        gpuhal.log_to_python(False)
        print("ok", len(records))
    """, env={"GPUHAL_LOG": "debug", "GPUHAL_BACKEND": "host"})
    assert rc == 0, err
    assert out.startswith("ok")
    assert "gpuhal debug:" not in err  # none went to stderr while bridged

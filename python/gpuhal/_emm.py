# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's External Memory Management (EMM) interface, version 1, over
gpuhal: an EMM plugin written for numba-cuda runs unchanged over every
gpuhal backend.

- ``BaseCUDAMemoryManager``: the abstract interface (memalloc,
  memhostalloc, mempin, initialize, get_ipc_handle, get_memory_info, reset,
  defer_cleanup, interface_version).
- ``HostOnlyCUDAMemoryManager``: implements the host side with gpuhal's own
  pinned, mapped and managed memory; a plugin adds memalloc.
- ``GetIpcHandleMixin``: get_ipc_handle for memory gpuhal can export.
- ``set_memory_manager(cls)``: contexts get ``cls(context=ctx)`` from now on
  (the current thread's context at once), after the interface version check;
  ``context.memory_manager = plugin`` sets one context's plugin, as in Numba.
  GPUHAL_MEMORY_MANAGER=module:Class names a plugin class to import at the
  first use of gpuhal.

A plugin's memalloc serves every device allocation of its context, the C++
core's included (device_array, to_device, gpuhal's kernels' temporaries):
gpuhal wraps the plugin's pointer, keeps the plugin's memory object while
gpuhal's handle lives, and drops it when the last handle goes (the plugin's
finalizer then runs). Host allocations stay gpuhal's.
"""

import abc
import contextlib
import ctypes
import importlib
import os
import threading

import numpy as np

from . import _gpuhal, _managers
from ._context import Context, _Deallocations
from ._devicearray import DeviceNDArray
from ._errors import raise_status
from ._managers import INTERFACE_VERSION, MemoryInfo
from ._memory_objects import AutoFreePointer, ManagedMemory, MappedMemory, MemoryPointer, PinnedMemory, _address
from ._shapes import _integer

__all__ = ["BaseCUDAMemoryManager", "HostOnlyCUDAMemoryManager", "GetIpcHandleMixin", "MemoryInfo", "IpcHandle",
           "set_memory_manager"]


class BaseCUDAMemoryManager(abc.ABC):
    """Abstract base class of EMM plugins (Numba's interface, version 1)."""

    def __init__(self, *args, **kwargs):
        if "context" not in kwargs:
            raise RuntimeError("Memory manager requires a context")
        self.context = kwargs.pop("context")

    @abc.abstractmethod
    def memalloc(self, size):
        """Device memory of ``size`` bytes: a MemoryPointer that owns it."""

    @abc.abstractmethod
    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        """Pinned host memory: a MappedMemory or PinnedMemory."""

    @abc.abstractmethod
    def mempin(self, owner, pointer, size, mapped=False):
        """Pins ``size`` bytes at ``pointer`` that ``owner`` owns."""

    @abc.abstractmethod
    def initialize(self):
        """Called before any allocation, and after every reset."""

    @abc.abstractmethod
    def get_ipc_handle(self, memory):
        """An IPC handle for a MemoryPointer of this manager's."""

    @abc.abstractmethod
    def get_memory_info(self):
        """MemoryInfo(free, total) in bytes."""

    @abc.abstractmethod
    def reset(self):
        """Frees everything allocated in the context."""

    @abc.abstractmethod
    def defer_cleanup(self):
        """A context manager inside which no deferred cleanup runs."""

    @property
    @abc.abstractmethod
    def interface_version(self):
        """1 for this version of the interface."""


def _host_array_at(pointer, size):
    """A uint8 NumPy array over ``size`` bytes at address ``pointer``."""
    pointer, size = _address(pointer), _integer(size, "mempin: size")
    if size < 0:
        raise_status("ERROR_INVALID_VALUE", f"mempin: the size must not be negative, got {size}")
    if size == 0:
        return np.empty(0, dtype=np.uint8)
    if not pointer:  # ctypes' from_address(0) would hand back memory of its own
        raise_status("ERROR_INVALID_VALUE", "mempin: null pointer")
    return np.ctypeslib.as_array((ctypes.c_uint8 * size).from_address(pointer))


class _UniqueDict(dict):
    """Numba's utils.UniqueDict: a key is set once (a second allocation at
    the same address means the first was never taken out)."""

    def __setitem__(self, key, value):
        if key in self:
            raise KeyError(f"allocations already holds {key!r}: take the old entry out (its finalizer) first")
        super().__setitem__(key, value)


class HostOnlyCUDAMemoryManager(BaseCUDAMemoryManager):
    """The host side of an EMM plugin, with gpuhal's pinned, mapped and
    managed memory and gpuhal's deferred deallocation queue; a subclass
    implements memalloc (and, if it needs them, initialize, reset,
    get_memory_info, get_ipc_handle), calling super() where it overrides
    reset or defer_cleanup.

    ``allocations`` is Numba's: a dict in which a plugin keeps what backs
    its MemoryPointers (RMM's plugin keeps its DeviceBuffers there, keyed
    by address, and takes each out in the pointer's finalizer); ``reset``
    clears it, as Numba's does. gpuhal's own host memory is not in it."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.allocations = _UniqueDict()

    @property
    def deallocations(self):
        """Numba's queue of pending releases (``len``, ``clear()``): in
        gpuhal the context's deferred deallocation queue, which holds this
        manager's host memory releases too."""
        return _Deallocations(self._ctx())

    def _ctx(self):
        return self.context._c if hasattr(self.context, "_c") else _gpuhal.current_context()

    def memhostalloc(self, size, mapped=False, portable=False, wc=False):
        """Pinned host memory of ``size`` bytes from the backend: PinnedMemory, or MappedMemory with ``mapped``."""
        size = _integer(size, "memhostalloc: size")
        if mapped:
            holder, device = _gpuhal.mapped_array(self._ctx(), [size], "|u1", [], "C", bool(portable), bool(wc))
            return MappedMemory._over(holder, self.context, device=DeviceNDArray(device, np.uint8))
        return PinnedMemory._over(_gpuhal.pinned_array(self._ctx(), [size], "|u1", [], "C"), self.context)

    def memallocmanaged(self, size, attach_global=True):
        """Managed memory of ``size`` bytes from the backend (ManagedMemory)."""
        array = _gpuhal.managed_array(self._ctx(), [_integer(size, "memallocmanaged: size")], "|u1", [], "C")
        return ManagedMemory._over(array.host_view(), self.context, device=DeviceNDArray(array, np.uint8))

    def mempin(self, owner, pointer, size, mapped=False):
        """Registers ``size`` bytes at ``pointer`` (``owner``'s) with the device: PinnedMemory, or MappedMemory with ``mapped``."""
        host = _host_array_at(pointer, size)
        ctx = self._ctx()
        if mapped:
            scope = _gpuhal.map(ctx, [host])
            device = DeviceNDArray(scope.device_arrays()[0], np.uint8)
            return MappedMemory._over(host, self.context, device=device, finalizer=scope.close, owner=owner)
        scope = _gpuhal.register_host(ctx, [host], False, False)
        return PinnedMemory._over(host, self.context, finalizer=scope.close, owner=owner)

    def backend_memalloc(self, size):
        """Device memory of ``size`` bytes straight from the backend, past
        any plugin (for a plugin's own pool): an AutoFreePointer; the memory
        goes back to the backend when it and every view of it are gone."""
        size = _integer(size, "backend_memalloc: size")
        array = DeviceNDArray(_gpuhal.backend_memalloc(self._ctx(), size), np.uint8)
        return AutoFreePointer(self.context, array.device_pointer, size, _memory=array)

    def initialize(self):
        """Called before the first allocation and after every reset; nothing to do here."""
        pass

    def reset(self):
        """Drops what the manager holds (the context is reset): clears
        ``allocations``, as Numba's does. gpuhal's arrays over memory that
        goes then are refused by name on use (the context that made them
        is gone), never read."""
        self.allocations.clear()

    @contextlib.contextmanager
    def defer_cleanup(self):
        """A context manager in which frees that would synchronise are held back (Numba's)."""
        with _gpuhal._DeferCleanup():
            yield

    def get_memory_info(self):
        """The backend's free and total memory (not the context's manager's:
        a plugin that calls this must not be asked again)."""
        free, total = _gpuhal.backend_memory_info(self._ctx())
        return MemoryInfo(free, total)


class IpcMemHandle:
    """The bytes of an IPC handle (Numba's CUipcMemHandle): ``reserved`` is
    what another process opens (gpuhal's serialised handle)."""

    def __init__(self, reserved):
        self.reserved = bytes(reserved)

    @classmethod
    def of(cls, array_handle):
        return cls(array_handle.serialize().encode("ascii"))

    def array_handle(self):
        return _gpuhal._IpcArrayHandle.deserialize(self.reserved.decode("ascii"))


class IpcHandle:
    """An IPC handle of device memory (Numba's driver.IpcHandle): ``base``
    keeps the exported memory alive in this process (None once pickled),
    ``handle.reserved`` are the bytes another process opens, ``open`` maps
    them (a MemoryPointer), ``open_array`` as an array, ``close`` unmaps."""

    def __init__(self, base, handle, size, source_info=None, offset=0):
        self.base = base
        self.handle = handle if isinstance(handle, IpcMemHandle) else IpcMemHandle.of(handle)
        self.size = size
        self.source_info = source_info
        self.offset = offset
        self._opened = None

    def open(self, context=None):
        """Maps the memory into the current context (a MemoryPointer)."""
        if self._opened is not None:
            raise ValueError("IpcHandle is already opened")
        opened = _gpuhal.open_ipc_array(_gpuhal.current_context(), self.handle.array_handle())
        self._opened = opened
        array = DeviceNDArray(opened.array, np.uint8)
        return MemoryPointer(context, array.device_pointer, array.nbytes, owner=self, _memory=array)

    open_direct = open
    open_staged = open

    def open_array(self, context, shape, dtype, strides=None):
        """The mapped memory as an array of ``shape`` and ``dtype`` (C order)."""
        dtype = np.dtype(dtype)
        memory = self.open(context)
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        count = int(np.prod(shape))
        if strides not in (None, dtype.itemsize) and tuple(np.atleast_1d(strides)) != tuple(
                np.empty(shape, dtype).strides):
            raise NotImplementedError("open_array: only C-contiguous strides are supported")
        return memory._memory[: count * dtype.itemsize].view(dtype).reshape(shape)

    def close(self):
        """Closes what ``open`` mapped in this process (no-op when nothing is open)."""
        if self._opened is None:
            raise ValueError("IpcHandle not opened")
        self._opened.close()
        self._opened = None

    def __reduce__(self):
        return (IpcHandle._rebuild, (self.handle.reserved, self.size, self.source_info, self.offset))

    @classmethod
    def _rebuild(cls, reserved, size, source_info, offset):
        return cls(None, IpcMemHandle(reserved), size, source_info, offset)


class GetIpcHandleMixin:
    """get_ipc_handle for memory gpuhal allocated (MemoryPointers of
    gpuhal's arrays)."""

    def get_ipc_handle(self, memory):
        """An IpcHandle for ``memory`` (a MemoryPointer of this manager's), picklable to another process."""
        memory_array = getattr(memory, "_memory", None)
        if memory_array is None:
            raise ValueError("get_ipc_handle: the memory is not gpuhal's (an EMM plugin's own makes its own handles)")
        handle = _gpuhal.get_ipc_handle(memory_array._a)
        return IpcHandle(memory, handle, memory.size)


class _GpuhalMemoryManager(GetIpcHandleMixin, HostOnlyCUDAMemoryManager):
    """gpuhal's own manager (the C++ core's default or pool manager, chosen
    by GPUHAL_MEMORY_MANAGER) as Numba's ``context.memory_manager``;
    assigning it back to a context restores gpuhal's default manager."""

    def memalloc(self, size):
        size = _integer(size, "memalloc: size")
        array = DeviceNDArray(_gpuhal.device_array(self._ctx(), [size], "|u1", [], "C"), np.uint8)
        return AutoFreePointer(self.context, array.device_pointer, size, _memory=array)

    @property
    def interface_version(self):
        return INTERFACE_VERSION


_plugin_class = None  # set_memory_manager's (or GPUHAL_MEMORY_MANAGER's) class


def set_memory_manager(mm_plugin):
    """Numba's set_memory_manager: contexts use ``mm_plugin(context=ctx)``
    from now on (the calling thread's current context at once). A plugin of
    another interface version is refused (RuntimeError, "... version 1
    required"), and nothing changes."""
    global _plugin_class
    if not callable(mm_plugin):
        raise TypeError(f"set_memory_manager: expected an EMM plugin class, not {type(mm_plugin).__name__}")
    ctx = Context(_gpuhal.current_context())
    plugin = mm_plugin(context=ctx)
    _managers.check_version(plugin)
    _plugin_class = mm_plugin
    _managers.install(ctx, plugin)


_environment_read = False
_installing = threading.local()


def _on_first_use(cpp_context):
    """current_cpp_context's hook: the configured plugin on a context used
    for the first time."""
    if _plugin_class is not None or not _environment_read:
        ensure_plugin(Context(cpp_context))


def ensure_plugin(ctx_wrapper):
    """Installs set_memory_manager's class (or GPUHAL_MEMORY_MANAGER's
    module:Class, imported at the first use of a context) on a context that
    has no plugin yet."""
    global _plugin_class, _environment_read
    if not _environment_read:
        _environment_read = True
        if _plugin_class is None:
            _plugin_class = plugin_class_from_environment()
    cls = _plugin_class
    if cls is None or getattr(_installing, "active", False):
        return  # none, or the plugin being installed allocates in its __init__ / initialize
    if _managers.has_plugin(ctx_wrapper._c):
        return
    _installing.active = True
    try:
        _managers.install(ctx_wrapper, cls(context=ctx_wrapper))
    finally:
        _installing.active = False


def plugin_class_from_environment():
    """GPUHAL_MEMORY_MANAGER=module:Class (a Python EMM plugin), or None."""
    value = os.environ.get("GPUHAL_MEMORY_MANAGER", "")
    if ":" not in value or "/" in value:
        return None
    module, _, name = value.partition(":")
    return getattr(importlib.import_module(module), name)


_managers.set_default_manager(_GpuhalMemoryManager)
_managers.set_first_use(_on_first_use)

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The backend, devices per thread, contexts, streams and events, with
Numba's names (cuda.select_device, cuda.gpus, current_context() ...)."""

import os
from typing import Optional

from . import _gpuhal, _managers
from ._errors import Error, raise_status
from ._memory_objects import _address
from ._shapes import _integer

__all__ = [
    "set_backend", "backend", "is_available", "select_device", "get_current_device", "close", "list_devices", "gpus",
    "current_context", "synchronize", "defer_cleanup", "stream", "default_stream", "legacy_default_stream",
    "per_thread_default_stream", "external_stream", "event", "event_elapsed_time", "Context", "detect", "jit",
]

MemoryInfo = _managers.MemoryInfo


def set_backend(name):
    """Chooses the backend ("host", "cuda", "hsa", or a plugin's path)
    before first use, as GPUHAL_BACKEND does. Once a backend is loaded it
    cannot change: asking for another raises gpuhal.InvalidValueError (and
    leaves GPUHAL_BACKEND as it was)."""
    previous = os.environ.get("GPUHAL_BACKEND")
    os.environ["GPUHAL_BACKEND"] = name
    loaded = _gpuhal.backend_name()
    if loaded != name and _gpuhal.plugin_path() != name:
        if previous is None:
            del os.environ["GPUHAL_BACKEND"]
        else:
            os.environ["GPUHAL_BACKEND"] = previous
        raise_status("ERROR_INVALID_VALUE", f"set_backend('{name}'): the process already uses the '{loaded}' "
                                            "backend (choose it before the first use of gpuhal)")


def backend() -> str:
    """The loaded backend's name (loading it on first use)."""
    return _gpuhal.backend_name()


def is_available():
    """True when a backend with at least one device loads."""
    try:
        return _gpuhal.device_count() > 0
    except Error:
        return False


select_device = _gpuhal.select_device
get_current_device = _gpuhal.get_current_device
list_devices = _gpuhal.list_devices
close = _gpuhal.close_device


class _GpuEntry:
    """``gpus[i]``: the device, and ``with gpus[i]:`` selects it for the block."""

    def __init__(self, ordinal):
        self._ordinal = ordinal
        self._scopes = []

    def __getattr__(self, name):
        return getattr(_gpuhal.list_devices()[self._ordinal], name)

    def __enter__(self):
        scope = _gpuhal._DeviceSelection(self._ordinal)
        device = scope.__enter__()
        self._scopes.append(scope)
        return device

    def __exit__(self, *exc):
        self._scopes.pop().__exit__(None, None, None)

    def __repr__(self):
        return repr(_gpuhal.list_devices()[self._ordinal])


class _GpuList:
    """Numba's ``cuda.gpus``: every device, and ``gpus.current``."""

    def __len__(self) -> int:
        return _gpuhal.device_count()

    def __getitem__(self, i):
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"device {i} out of range ({n} devices)")
        return _GpuEntry(i % n)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    @property
    def current(self):
        return _gpuhal.get_current_device()


gpus = _GpuList()


class _Deallocations:
    """Numba's ``context.deallocations``: the deferred deallocation queue."""

    def __init__(self, ctx):
        self._ctx = ctx

    def clear(self) -> int:
        """Runs the queued releases now (waits for the context's work first);
        returns how many ran."""
        return int(self._ctx.flush_deallocations())

    def __len__(self) -> int:
        return int(self._ctx.pending_deallocations())

    @property
    def bytes(self):
        return self._ctx.pending_deallocation_bytes()

    # Numba's own names for the same (numba-cuda's tests read them).
    _size = bytes

    @property
    def _max_pending_count(self):
        """More pending releases than this flush at the next release
        (gpuhal.config.CUDA_DEALLOCS_COUNT)."""
        return int(self._ctx.pending_deallocation_limits()[0])

    @property
    def _max_pending_bytes(self):
        """More pending bytes than this flush at the next release
        (gpuhal.config.CUDA_DEALLOCS_RATIO of the device's memory)."""
        return int(self._ctx.pending_deallocation_limits()[1])


class Context:
    """The calling thread's context (Numba's ``current_context()``), with
    Numba's memory methods: each asks the context's memory manager (gpuhal's,
    or the EMM plugin set with ``memory_manager = plugin`` or
    set_memory_manager) and returns Numba's memory objects."""

    def __init__(self, ctx):
        self._c = ctx

    device = property(lambda self: self._c.device, doc="The context's Device.")
    @property
    def deallocations(self) -> _Deallocations:
        """The deferred deallocation queue (``len()``, ``.bytes``, ``.clear()``: Numba's)."""
        return _Deallocations(self._c)

    @property
    def memory_manager(self):
        """The EMM plugin serving this context (gpuhal's own manager unless
        one was set); assigning a plugin installs it (its interface version
        is checked, RuntimeError otherwise), assigning gpuhal's back restores it."""
        return _managers.manager_of(self)

    @memory_manager.setter
    def memory_manager(self, plugin):
        _managers.install(self, plugin)

    def get_memory_info(self) -> "MemoryInfo":
        """MemoryInfo(free, total) from the context's memory manager."""
        info = self._c._memory_info()
        return MemoryInfo(info.free, info.total)

    def memalloc(self, bytesize):
        """Device memory of ``bytesize`` bytes (a MemoryPointer)."""
        return self.memory_manager.memalloc(_positive(bytesize, "memalloc"))

    def memhostalloc(self, bytesize, mapped=False, portable=False, wc=False):
        """Pinned host memory (PinnedMemory), mapped into the device's
        address space with ``mapped`` (MappedMemory)."""
        return self.memory_manager.memhostalloc(_positive(bytesize, "memhostalloc"), mapped, portable, wc)

    def mempin(self, owner, pointer, size, mapped=False):
        """Pins ``size`` bytes at ``pointer`` (owned by ``owner``, kept
        alive by the result) until the result goes or is freed."""
        return self.memory_manager.mempin(owner, pointer, _positive(size, "mempin"), mapped)

    def memallocmanaged(self, bytesize, attach_global=True):
        """Managed memory (ManagedMemory): the host and the device address it."""
        manager = self.memory_manager
        allocate = getattr(manager, "memallocmanaged", None)
        if allocate is None:
            allocate = _managers.default_manager_class().memallocmanaged.__get__(manager)
        return allocate(_positive(bytesize, "memallocmanaged"), attach_global)

    def get_ipc_handle(self, memory):
        """An IPC handle for ``memory`` from the context's memory manager."""
        return self.memory_manager.get_ipc_handle(memory)

    def create_stream(self):
        """A new stream (blocking, as cuStreamCreate's default)."""
        return self._c.create_stream(True)

    def create_event(self, timing=True):
        """A new Event of this context (``timing`` as for ``gpuhal.event``)."""
        return self._c.create_event(bool(timing))

    def get_default_stream(self):
        """The context's default stream."""
        return self._c.default_stream()

    def synchronize(self):
        """Waits for all work on every stream of the context."""
        self._c.synchronize()

    def reset(self):
        """Destroys everything made in the context (Numba's reset)."""
        self._c.reset()

    def supports(self, capability):
        """"host_memory", "mapped_host_memory", "ipc", "kernels", "managed_memory", "fault_recovery" ..."""
        return self._c.supports(capability)

    def stream_priority_range(self):
        """``(least, greatest)`` stream priorities, lower numbers being greater
        (``gpuhal.NotSupportedError`` on a backend without them)."""
        return self._c.stream_priority_range()

    def set_limit(self, limit, nbytes):
        """Sets ``"printf_buffer_bytes"`` (the device printf's buffer) or
        ``"stack_bytes"`` (each work-item's stack), a request the backend may
        round. On cuda the printf buffer cannot change once a kernel that
        prints has been launched in the context (``gpuhal.Error``, saying
        so); ``gpuhal.NotSupportedError`` on a backend without limits
        (``supports("context_limits")``: host and hsa have none)."""
        self._c.set_limit(limit, nbytes)

    def limit(self, limit):
        """The size in bytes the backend keeps for ``limit`` (as set_limit)."""
        return self._c.limit(limit)

    def __repr__(self):
        device = self._c.device
        return f"<gpuhal.Context of device {device.id} ({device.name!r}) on the {_gpuhal.backend_name()!r} backend>"

    def __eq__(self, other):
        return isinstance(other, Context) and self._c == other._c

    def __hash__(self):
        return hash(self._c)


def _positive(n, what):
    n = _integer(n, f"{what}: the size")
    if n <= 0:
        raise_status("ERROR_INVALID_VALUE", f"{what}: the size must be positive, got {n}")
    return n


def detect():
    """Numba's cuda.detect(): prints the backend's devices and returns True
    when there is at least one."""
    try:
        devices = _gpuhal.list_devices()
    except Error as e:
        print(f"gpuhal: no backend could be loaded: {e}")
        return False
    print(f"Found {len(devices)} device(s) on the {_gpuhal.backend_name()!r} backend")
    for d in devices:
        print(f"id {d.id:4d}  {d.name!r}  compute capability {d.compute_capability}")
    return len(devices) > 0


def jit(*args, **kwargs):
    """Numba's @cuda.jit compiles Python functions; gpuhal compiles portable
    C kernel sources instead. Raises NotImplementedError saying so."""
    raise NotImplementedError("gpuhal has no @jit: Python kernels are Numba's. Write the kernel in gpuhal's portable "
                              "C dialect and compile it with gpuhal.compile(source) (docs/kernels.md, docs/python.md)")


def current_context() -> "Context":
    """The calling thread's Context (Numba's ``cuda.current_context()``)."""
    return Context(_managers.current_cpp_context())


def synchronize() -> None:
    """Waits for all work of the current context."""
    _gpuhal.current_context().synchronize()


def defer_cleanup() -> "_gpuhal._DeferCleanup":
    """``with defer_cleanup():`` -- no deferred deallocation runs in the block."""
    return _gpuhal._DeferCleanup()


def stream(priority: Optional[int] = None) -> _gpuhal.Stream:
    """A new stream (blocking: ordered with the default stream, as CUDA's).
    ``priority``: lower numbers are greater priorities, clamped into
    ``current_context().stream_priority_range()`` (``(least, greatest)``);
    ``gpuhal.NotSupportedError`` on a backend without stream priorities."""
    return _gpuhal.current_context().create_stream(True, priority)


def default_stream():
    """The context's default stream (legacy or per-thread, as the runtime is configured)."""
    return _gpuhal.current_context().default_stream()


def legacy_default_stream():
    """The legacy default stream, which synchronises with every blocking stream."""
    return _gpuhal.current_context().legacy_default_stream()


def per_thread_default_stream():
    """The calling thread's own default stream."""
    return _gpuhal.current_context().per_thread_default_stream()


def external_stream(ptr):
    """A stream over a native stream handle made elsewhere (a CUstream on
    cuda); gpuhal never destroys it."""
    return _gpuhal.current_context().external_stream(_address(ptr))


def event(timing=True):
    """A new Event; ``timing=False`` makes one that cannot measure time (cheaper)."""
    return _gpuhal.current_context().create_event(bool(timing))


def event_elapsed_time(evtstart, evtend):
    """Milliseconds between two completed events."""
    for e in (evtstart, evtend):
        if not isinstance(e, _gpuhal.Event):
            raise TypeError(f"event_elapsed_time: expected two gpuhal Events, not {type(e).__name__}")
    return evtstart.elapsed_time(evtend)


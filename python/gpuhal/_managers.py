# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Which memory manager serves each context: the EMM plugins installed per
C++ context, and the calling thread's C++ context with the configured
plugin installed on its first use.

This module sits below the array type and the Context wrapper, which both
ask it; the EMM interface (``_emm``) sits above them (its managers make
arrays and memory objects) and fills in, when it is imported, what only it
knows: gpuhal's own manager class (``set_default_manager``) and how to
install set_memory_manager's plugin on a context first used
(``set_first_use``). gpuhal's ``__init__`` imports ``_emm``, so both are in
place before any call of a user.
"""

import atexit
import collections
import threading

from . import _gpuhal

INTERFACE_VERSION = 1

MemoryInfo = collections.namedtuple("MemoryInfo", ["free", "total"])

# Plugins installed per context (the C++ context as the key); contexts
# without one use gpuhal's manager.
_plugins = {}
_plugins_lock = threading.Lock()
_default_manager = None  # _emm's class for contexts without a plugin
_first_use = None  # _emm's hook: installs the configured plugin on a C++ context


def set_default_manager(cls):
    """The class serving ``context.memory_manager`` where no plugin is installed."""
    global _default_manager
    _default_manager = cls


def set_first_use(hook):
    """``hook(cpp_context)`` runs on every current_cpp_context() (it returns
    at once when there is nothing to install)."""
    global _first_use
    _first_use = hook


def check_version(plugin):
    """A plugin of another EMM interface version is refused, as in Numba."""
    version = plugin.interface_version
    if version != INTERFACE_VERSION:
        raise RuntimeError(f"EMM Plugin interface has version {version} - version {INTERFACE_VERSION} required")


def installed_plugin(cpp_context):
    """The EMM plugin installed on a C++ context, or None."""
    with _plugins_lock:
        return _plugins.get(cpp_context)


def has_plugin(cpp_context):
    with _plugins_lock:
        return cpp_context in _plugins


def manager_of(ctx_wrapper):
    """The Python object serving as ``context.memory_manager``."""
    plugin = installed_plugin(ctx_wrapper._c)
    return plugin if plugin is not None else _default_manager(context=ctx_wrapper)


def default_manager_class():
    return _default_manager


def install(ctx_wrapper, plugin):
    """``context.memory_manager = plugin`` (gpuhal's own manager: back to the
    C++ core's)."""
    if isinstance(plugin, _default_manager):
        _gpuhal.set_default_memory_manager(ctx_wrapper._c)
        with _plugins_lock:
            _plugins.pop(ctx_wrapper._c, None)
        return
    check_version(plugin)
    _gpuhal.set_python_memory_manager(ctx_wrapper._c, plugin)
    with _plugins_lock:
        _plugins[ctx_wrapper._c] = plugin


@atexit.register
def _let_plugins_go():
    """Gives every context back gpuhal's manager before the interpreter ends:
    a plugin held by a context would outlive the objects it refers to."""
    with _plugins_lock:
        contexts = list(_plugins)
        _plugins.clear()
    for ctx in contexts:
        try:
            _gpuhal.set_default_memory_manager(ctx)
        except Exception:  # noqa: BLE001 - a context already gone has nothing to let go
            pass
    # References dropped where the GIL was not held (a call that failed with
    # the GIL released, gpuhal's own threads) wait for the next gpuhal call;
    # there may be none: let them go now (the log drain runs all such work).
    _gpuhal._drain_log()


def current_cpp_context():
    """The calling thread's C++ context, with set_memory_manager's (or
    GPUHAL_MEMORY_MANAGER's) plugin installed on its first use: every
    allocating entry point of the package gets its context here."""
    ctx = _gpuhal.current_context()
    if _first_use is not None:
        _first_use(ctx)
    return ctx

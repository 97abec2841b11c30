# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""gpuhal's log in Python's logging: the logger ``gpuhal.log``.

``gpuhal.log_to_python()`` sends every message the C++ core and the
plugins produce (at or above GPUHAL_LOG's level, warn by default) to the
``gpuhal.log`` logger, levels mapped: error -> ERROR, warn -> WARNING,
info -> INFO, debug -> DEBUG; ``log_to_python(False)`` sends them back to
stderr. Messages logged on gpuhal's own threads (stream workers) arrive
with the next gpuhal call from Python, or at ``gpuhal.flush_log()``: those
threads never wait for the GIL.
"""

import atexit
import logging

from . import _gpuhal

__all__ = ["logger", "log_to_python", "flush_log"]

logger = logging.getLogger("gpuhal.log")

_LEVELS = {0: logging.ERROR, 1: logging.WARNING, 2: logging.INFO, 3: logging.DEBUG}


def _forward(level, message):
    logger.log(_LEVELS.get(level, logging.WARNING), message)


def log_to_python(enabled=True):
    """Routes gpuhal's log to the ``gpuhal.log`` logger (or back to stderr)."""
    _gpuhal._set_log_forwarder(_forward if enabled else None)
    if enabled:
        # Back to stderr before the interpreter ends: the handler must not
        # outlive the Python objects it calls.
        atexit.unregister(_back_to_stderr)
        atexit.register(_back_to_stderr)


def _back_to_stderr():
    _gpuhal._set_log_forwarder(None)


def flush_log():
    """Delivers messages logged on gpuhal's own threads since the last call."""
    _gpuhal._drain_log()

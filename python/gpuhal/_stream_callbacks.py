# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Numba's ``stream.add_callback(callback, arg)`` and ``stream.async_done()``.

The backend runs a stream's callback on a thread of its own once the
stream's prior work is done; that thread never takes the GIL (a thread
holding it may be waiting for the same stream). It posts the callback's
token, and one Python thread of this module (a daemon, started with the
first callback) takes the tokens and calls the Python functions in the order
their streams finished them. Two differences from Numba, both for that
reason: later work on the stream does not wait for the Python function to
return (cuStreamAddCallback's does), and the function runs on this module's
thread, not on a driver thread. As in Numba, the function must not wait for
the stream it was added to; unlike a driver thread, it may call gpuhal.

``status`` is 0, or the code of the gpuhal error of a stream that failed
before the callback could run (then the callback runs with that code, as
cuStreamAddCallback passes the failing CUresult). An exception escaping the
function is printed to stderr (as ctypes prints one from a Numba callback),
and the next callbacks still run.
"""

import asyncio
import itertools
import sys
import threading
import traceback

from . import _errors, _gpuhal
from ._errors import Error, raise_status

_DROPPED = -1  # _next_stream_callback's status of a callback the stream did not run

_lock = threading.Lock()
_pending = {}  # token -> (stream, callback, arg)
_tokens = itertools.count(1)
_dispatcher = None


def add_callback(stream, callback, arg=None):
    """Numba's ``Stream.add_callback``: ``callback(stream, status, arg)``
    runs once all work queued on ``stream`` so far is done (see above).
    ``TypeError`` for a callback that is not callable;
    ``gpuhal.CaptureUnsupportedError`` on a capturing stream (CUDA refuses
    cuStreamAddCallback in a capture)."""
    if not callable(callback):
        raise TypeError(f"add_callback: the callback must be callable, not {type(callback).__name__}")
    if stream.is_capturing:
        raise_status("ERROR_CAPTURE_UNSUPPORTED",
                     "Stream.add_callback: not while the stream captures (record work with callbacks "
                     "through the C++ API's Stream::add_callback)")
    token = next(_tokens)
    with _lock:
        _pending[token] = (stream, callback, arg)
        _start_dispatcher()
    try:
        _gpuhal._queue_stream_callback(stream, token)
    except BaseException:
        with _lock:
            _pending.pop(token, None)
        raise


def async_done(stream):
    """Numba's ``Stream.async_done``: a future of the running asyncio loop,
    whose result is ``stream`` once the work queued on it so far is done (a
    ``gpuhal.Error`` when the stream failed). Cancelling it is allowed."""
    loop = asyncio.get_running_loop()
    future = loop.create_future()

    def settle(status):
        if future.done():  # cancelled meanwhile
            return
        if status == 0:
            future.set_result(stream)
        else:
            name, kind = _status_of(status)
            future.set_exception(kind(name, status, "async_done: the stream failed before its work was done"))

    def callback(_stream, status, _arg):
        if not loop.is_closed():
            loop.call_soon_threadsafe(settle, status)

    add_callback(stream, callback)
    return future


def _status_of(code):
    """The status name of ``code`` and its gpuhal.Error subclass."""
    name = next((n for n, value, _ in _gpuhal.statuses() if value == code), "ERROR_UNKNOWN")
    return name, _errors._by_code.get(code, Error)


def _start_dispatcher():
    """Starts the dispatcher thread once per process (called under _lock)."""
    global _dispatcher
    if _dispatcher is None or not _dispatcher.is_alive():
        _dispatcher = threading.Thread(target=_dispatch, name="gpuhal stream callbacks", daemon=True)
        _dispatcher.start()


def _failure_code(stream):
    """The code of the error a dropped callback's stream reports (its
    callback was not run because the stream failed)."""
    try:
        stream.synchronize()
    except Error as e:
        return e.code
    return _errors._codes["ERROR_UNKNOWN"]  # dropped, yet the stream reports nothing (its context went)


def _dispatch():
    while True:
        token, status = _gpuhal._next_stream_callback()
        with _lock:
            entry = _pending.pop(token, None)
        if entry is None:  # its add_callback raised
            continue
        stream, callback, arg = entry
        try:
            if status == _DROPPED:
                status = _failure_code(stream)
            callback(stream, status, arg)
        except BaseException:  # noqa: BLE001 -- reported, and the next callbacks still run
            _report(callback)
        del entry, stream, callback, arg


def _report(callback):
    """Prints the exception a callback raised, as Python prints one it must
    ignore ("Exception ignored in: ..."); never raises."""
    try:
        print(f"Exception ignored in gpuhal stream callback {callback!r}:", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
    except BaseException:  # noqa: BLE001 -- a closed stderr must not end the thread
        pass

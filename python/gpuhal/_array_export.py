# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""A device array's zero-copy exports: DLPack (the array API's __dlpack__
protocol) and, on the cuda backend, the CUDA Array Interface (version 3).
Below the array type: these functions take an array and make none (a
copied export asks the array for an empty one like it).

Stream rules. ``__dlpack__(stream=s)``: ``s`` is the consumer's stream; the
consumer's stream waits (on the device, without blocking the host) for the
work queued so far on the array's own stream. ``None`` means the consumer
uses the legacy default stream (cuda) or that there are no streams (the
host backend: the array's stream is synchronised before the export then);
``-1`` asks for no synchronisation. On cuda, 1 is the legacy default stream,
2 the per-thread default stream, any other value a ``CUstream``; 0 is
refused, as the array API says. ``__cuda_array_interface__["stream"]`` is
the array's stream (1 for the legacy default stream), which the consumer
must synchronise with before it uses the data.
"""

from . import _gpuhal
from ._streams import stream_or_none

_KDLCPU = 1
_KDLCUDA = 2


def _consumer_stream(ctx, device_type, stream):
    """The C++ consumer stream for ``__dlpack__``'s stream argument."""
    if stream is None:
        return None
    if isinstance(stream, bool) or not isinstance(stream, int):
        raise TypeError(f"__dlpack__: stream must be an int or None, not {type(stream).__name__}")
    if stream == -1:
        return None
    if device_type != _KDLCUDA:
        raise BufferError(f"__dlpack__: stream {stream} on a device of DLPack type {device_type}, which has none "
                          "(pass stream=None)")
    if stream == 0:
        raise BufferError("__dlpack__: stream 0 is ambiguous and not allowed; use 1 (legacy default) or 2 (per-thread)")
    if stream == 1:
        return ctx.legacy_default_stream()
    if stream == 2:
        return ctx.per_thread_default_stream()
    return ctx.external_stream(stream)


def export_dlpack(array, stream, max_version, dl_device, copy):
    ctx = array._a.context
    device = _gpuhal.dlpack_device(ctx)
    if dl_device is not None and tuple(dl_device) != tuple(device):
        raise BufferError(f"__dlpack__: the array is on DLPack device {tuple(device)}, not {tuple(dl_device)}; "
                          "copy it with copy_to_host() first")
    source = array
    if copy:
        source = array._empty_like()
        source._a.assign_device(array._a, stream_or_none(array.stream))  # any layout, on the array's stream
        source.stream = array.stream
    if source.dtype.fields is not None or source.dtype.kind == "V":
        raise BufferError("__dlpack__: DLPack has no record (structured) dtypes")
    if stream == -1:
        producer = consumer = None
    else:
        consumer = _consumer_stream(ctx, device[0], stream)
        producer = stream_or_none(source.stream)
        if consumer is not None and producer is None:
            producer = ctx.default_stream()
    versioned = max_version is not None and tuple(max_version)[0] >= 1
    return _gpuhal.to_dlpack(source._a, versioned, producer, consumer)


def cuda_array_interface(array):
    ctx = array._a.context
    if _gpuhal.dlpack_device(ctx)[0] != _KDLCUDA:
        raise AttributeError("__cuda_array_interface__ is offered on the cuda backend only; use __dlpack__")
    stream = array.stream
    if not isinstance(stream, _gpuhal.Stream):
        stream_value = None  # no stream (Numba's stream=0): nothing for the consumer to wait for
    elif not stream.is_default:
        stream_value = int(stream.handle) or 1
    else:
        stream_value = 1  # gpuhal's default stream is CUDA's legacy default stream
    desc = {
        "shape": tuple(array.shape),
        "strides": None if array.is_c_contiguous() else tuple(array.strides),
        "data": (array.device_pointer, False),
        "typestr": array.dtype.str,
        "stream": stream_value,
        "version": 3,
    }
    if array.dtype.fields is not None:
        desc["descr"] = array.dtype.descr
    return desc

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Zero-copy interchange: DLPack (the array API's __dlpack__ protocol) and,
on the cuda backend, the CUDA Array Interface (version 3).

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
from ._errors import raise_status

_KDLCPU = 1
_KDLCUDA = 2

def _context():
    from ._emm import current_cpp_context
    return current_cpp_context()

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
    from ._streams import stream_or_none
    ctx = array._a.context
    device = _gpuhal.dlpack_device(ctx)
    if dl_device is not None and tuple(dl_device) != tuple(device):
        raise BufferError(f"__dlpack__: the array is on DLPack device {tuple(device)}, not {tuple(dl_device)}; "
                          "copy it with copy_to_host() first")
    source = array
    if copy:
        from ._memory import device_array_like
        source = device_array_like(array)
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

def from_dlpack(obj):
    """A DeviceNDArray over the memory of ``obj`` (an object with
    ``__dlpack__``, or a legacy "dltensor" capsule), without a copy. The
    memory must be the current context's: on the host backend NumPy arrays
    qualify (writeable ones: gpuhal's device arrays are writeable), on cuda
    CUDA tensors of the current device."""
    from ._devicearray import DeviceNDArray
    ctx = _context()
    if hasattr(obj, "__dlpack__"):
        device = tuple(_gpuhal.dlpack_device(ctx))
        device_type = device[0]
        # The protocol's consumers ask where the data is before asking for
        # it: a producer on another device is refused here, with gpuhal's
        # error, instead of by the producer (NumPy refuses every stream but
        # None, and a CUDA consumer always passes one) or after the export.
        if hasattr(obj, "__dlpack_device__"):
            theirs = tuple(int(v) for v in obj.__dlpack_device__())
            if theirs != device:
                raise_status("ERROR_INVALID_VALUE",
                             f"from_dlpack: the object is on DLPack device {theirs}, but the current context is "
                             f"DLPack device {device}; copy it there first (to_device for host data)")
        # We consume on the legacy default stream (gpuhal's default stream).
        stream = 1 if device_type == _KDLCUDA else None
        try:
            capsule = obj.__dlpack__(stream=stream, max_version=(1, 0))
        except TypeError:  # a producer older than DLPack 1.0's protocol
            capsule = obj.__dlpack__(stream=stream)
    elif type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        raise TypeError(f"from_dlpack needs an object with __dlpack__ or a DLPack capsule, not {type(obj).__name__}")
    array = _gpuhal.from_dlpack(ctx, capsule, None, None)
    return DeviceNDArray(array)

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

def is_device_array(obj):
    """True for gpuhal's device arrays (Numba's is_cuda_ndarray)."""
    from ._devicearray import DeviceNDArray
    return isinstance(obj, DeviceNDArray)


def is_cuda_array(obj):
    """True when ``obj`` offers the CUDA Array Interface (Numba's is_cuda_array)."""
    return hasattr(obj, "__cuda_array_interface__")


def from_cuda_array_interface(desc, owner=None, sync=True):
    """A DeviceNDArray over the memory a CUDA Array Interface dict
    describes, without a copy; ``owner`` is kept alive while the array
    lives. With ``sync`` the interface's stream is synchronised first (its
    producer's pending work). Only on the cuda backend: the interface
    describes CUDA memory."""
    import numpy as np
    from ._devicearray import DeviceNDArray
    ctx = _context()
    if _gpuhal.dlpack_device(ctx)[0] != _KDLCUDA:
        raise_status("ERROR_INVALID_VALUE", "from_cuda_array_interface: the CUDA Array Interface describes CUDA "
                                            f"memory, and the current backend is '{_gpuhal.backend_name()}'")
    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    dtype = np.dtype(desc["typestr"]) if desc.get("descr") is None else np.dtype(desc["descr"])
    shape = tuple(int(n) for n in desc["shape"])
    strides = desc.get("strides")
    pointer = int(desc["data"][0] or 0)
    stream = desc.get("stream")
    bound = 0
    if stream is not None:
        if stream == 0:
            raise ValueError("the CUDA Array Interface's stream 0 is not allowed (1: legacy default, 2: per-thread)")
        bound = _consumer_stream(ctx, _KDLCUDA, int(stream))  # the array is bound to the producer's stream
        if sync:
            bound.synchronize()
    array = _gpuhal.from_pointer(ctx, pointer, list(shape), dtype.str, [] if strides is None else list(strides), owner)
    return DeviceNDArray(array, dtype, bound)


def as_cuda_array(obj, sync=True):
    """A DeviceNDArray viewing an object that offers the CUDA Array
    Interface (no copy); ``obj`` is kept alive by it."""
    if not is_cuda_array(obj):
        raise TypeError("*obj* doesn't implement the cuda array interface.")
    return from_cuda_array_interface(obj.__cuda_array_interface__, owner=obj, sync=sync)


def auto_device(obj, stream=0, copy=True, user_explicit=False):
    """Numba's auto_device: ``(device_array, True)`` for a host array copied
    to the device (when ``copy``), ``(obj, False)`` for device memory."""
    from ._devicearray import DeviceNDArray
    from ._memory import to_device
    if isinstance(obj, DeviceNDArray):
        return obj, False
    if is_cuda_array(obj):
        return as_cuda_array(obj), False
    return to_device(obj, stream=stream, copy=copy), True

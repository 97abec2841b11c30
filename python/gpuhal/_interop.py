# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Zero-copy interchange, the importing side: DeviceNDArrays over memory
that DLPack producers and CUDA Array Interface producers offer
(from_dlpack, as_cuda_array, from_cuda_array_interface). The exporting
side (``__dlpack__``, ``__cuda_array_interface__``) and the stream rules
are in _array_export, below the array type."""

from collections.abc import Mapping

import numpy as np

from . import _gpuhal, config
from ._array_export import _KDLCUDA, _consumer_stream
from ._devicearray import DeviceNDArray
from ._errors import raise_status
from ._managers import current_cpp_context
from ._memory import to_device
from ._shapes import _integer, _integers


def _context():
    return current_cpp_context()


def _producer_device(device):
    """A producer's ``__dlpack_device__()`` as a (device type, device id)
    pair of ints; TypeError naming what it returned otherwise."""
    try:
        pair = tuple(_integer(v, "from_dlpack: __dlpack_device__()'s values") for v in device)
    except TypeError as e:
        if isinstance(device, (tuple, list)):
            raise
        raise TypeError(f"from_dlpack: __dlpack_device__() returned {type(device).__name__}, not a (device type, "
                        "device id) pair") from e
    if len(pair) != 2:
        raise TypeError(f"from_dlpack: __dlpack_device__() returned {pair}, not a (device type, device id) pair")
    return pair


def from_dlpack(obj):
    """A DeviceNDArray over the memory of ``obj`` (an object with
    ``__dlpack__``, or a legacy "dltensor" capsule), without a copy. The
    memory must be the current context's: on the host backend NumPy arrays
    qualify (writeable ones: gpuhal's device arrays are writeable), on cuda
    CUDA tensors of the current device."""
    ctx = _context()
    if hasattr(obj, "__dlpack__"):
        device = tuple(_gpuhal.dlpack_device(ctx))
        device_type = device[0]
        # The protocol's consumers ask where the data is before asking for
        # it: a producer on another device is refused here, with gpuhal's
        # error, instead of by the producer (NumPy refuses every stream but
        # None, and a CUDA consumer always passes one) or after the export.
        if hasattr(obj, "__dlpack_device__"):
            theirs = _producer_device(obj.__dlpack_device__())
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
        if type(capsule).__name__ != "PyCapsule":
            raise TypeError(f"from_dlpack: {type(obj).__name__}.__dlpack__() returned {type(capsule).__name__}, "
                            "not a DLPack capsule")
    elif type(obj).__name__ == "PyCapsule":
        capsule = obj
    else:
        raise TypeError(f"from_dlpack needs an object with __dlpack__ or a DLPack capsule, not {type(obj).__name__}")
    array = _gpuhal.from_dlpack(ctx, capsule, None, None)
    return DeviceNDArray(array)


def is_device_array(obj):
    """True for gpuhal's device arrays (Numba's is_cuda_ndarray)."""
    return isinstance(obj, DeviceNDArray)


def is_cuda_array(obj):
    """True when ``obj`` offers the CUDA Array Interface (Numba's is_cuda_array)."""
    return hasattr(obj, "__cuda_array_interface__")


def _interface_fields(desc):
    """(pointer, shape, strides or None, dtype, stream or None) of a CUDA
    Array Interface dict, each checked (the spec's types: integers, never a
    float truncated; strides, when given, one per axis): a TypeError or
    ValueError naming the key, before anything is made."""
    what = "from_cuda_array_interface"
    if not isinstance(desc, Mapping):
        raise TypeError(f"{what}: expected the interface's dict, not {type(desc).__name__}")
    for key in ("shape", "typestr", "data"):
        if key not in desc:
            raise ValueError(f"{what}: the interface has no '{key}'")
    if desc.get("mask") is not None:
        raise NotImplementedError("Masked arrays are not supported")
    shape = tuple(_integers(desc["shape"], f"{what}: 'shape'"))
    strides = desc.get("strides")
    if strides is not None:
        strides = tuple(_integers(strides, f"{what}: 'strides'"))
        if len(strides) != len(shape):
            raise ValueError(f"{what}: 'strides' {strides} has {len(strides)} entries for a shape of {len(shape)} "
                             "axes")
    data = desc["data"]
    if not isinstance(data, (tuple, list)) or len(data) != 2:
        raise TypeError(f"{what}: 'data' must be a (pointer, read-only) pair, not {data!r}")
    pointer = 0 if data[0] is None else _integer(data[0], f"{what}: the pointer of 'data'")
    if not 0 <= pointer < 1 << 64:
        raise ValueError(f"{what}: the pointer of 'data' {pointer} is not a 64-bit address")
    layout = desc["typestr"] if desc.get("descr") is None else desc["descr"]
    try:
        dtype = np.dtype(layout)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{what}: '{'typestr' if desc.get('descr') is None else 'descr'}' {layout!r}: {e}") from None
    stream = desc.get("stream")
    if stream is not None:
        stream = _integer(stream, f"{what}: 'stream'")
        if stream < 0:
            raise ValueError(f"{what}: 'stream' {stream} is no stream (1: legacy default, 2: per-thread, or a "
                             "CUstream)")
    return pointer, shape, strides, dtype, stream


def from_cuda_array_interface(desc, owner=None, sync=True):
    """A DeviceNDArray over the memory a CUDA Array Interface dict
    describes, without a copy; ``owner`` is kept alive while the array
    lives. With ``sync`` (and ``gpuhal.config.CUDA_ARRAY_INTERFACE_SYNC``,
    Numba's setting) the interface's stream is synchronised first (its
    producer's pending work). Only on the cuda backend: the interface
    describes CUDA memory."""
    ctx = _context()
    if _gpuhal.dlpack_device(ctx)[0] != _KDLCUDA:
        raise_status("ERROR_INVALID_VALUE", "from_cuda_array_interface: the CUDA Array Interface describes CUDA "
                                            f"memory, and the current backend is '{_gpuhal.backend_name()}'")
    pointer, shape, strides, dtype, stream = _interface_fields(desc)
    bound = 0
    if stream is not None:
        if stream == 0:
            raise ValueError("the CUDA Array Interface's stream 0 is not allowed (1: legacy default, 2: per-thread)")
        bound = _consumer_stream(ctx, _KDLCUDA, stream)  # the array is bound to the producer's stream
        if sync and config.CUDA_ARRAY_INTERFACE_SYNC:
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
    if isinstance(obj, DeviceNDArray):
        return obj, False
    if is_cuda_array(obj):
        return as_cuda_array(obj), False
    return to_device(obj, stream=stream, copy=copy), True

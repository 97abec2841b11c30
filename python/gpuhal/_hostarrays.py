# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The NumPy array classes of host memory gpuhal allocated, and the
pageable-memory rule of asynchronous transfers.

CUDA completes a transfer between the device and pageable host memory
before the call returns, also on a stream (cuMemcpyDtoHAsync into pageable
memory returns once the copy is done; from pageable memory, once the
source is staged), and Numba users rely on it: ``copy_to_host(stream=s)``
into a NumPy array can be read at once. gpuhal's Python layer keeps that
rule on every backend: transfers on a stream are asynchronous only with
host memory gpuhal allocated page-locked (pinned_array, mapped_array,
managed_array); with any other host array they are waited for.
"""

import numpy as np

__all__ = ["PinnedNDArray", "MappedNDArray", "ManagedNDArray", "is_page_locked", "finish_if_pageable"]


class PinnedNDArray(np.ndarray):
    """A NumPy array in pinned (page-locked) host memory."""


class _DeviceAddressed(np.ndarray):
    """Host memory the device addresses too: the array made by
    mapped_array / managed_array carries its device side."""

    _gpuhal_device = None

    @property
    def __cuda_array_interface__(self):
        """The device side's CUDA Array Interface (the cuda backend only),
        for the array as made (a view of it is a plain host array)."""
        device = self._gpuhal_device
        if device is None or device.shape != self.shape or device.strides != self.strides:
            raise AttributeError("__cuda_array_interface__: only the array mapped_array / managed_array made "
                                 "offers it, not a view of it")
        return device.__cuda_array_interface__


class MappedNDArray(_DeviceAddressed):
    """A NumPy array in mapped host memory; kernels and copies use its
    device side (``device_array``) when it is passed whole."""


class ManagedNDArray(_DeviceAddressed):
    """A NumPy array over managed memory (the host and the device share
    it); kernels get the device array. Touch it on the host only while no
    work that uses it is in flight."""


def is_page_locked(ary):
    """True for the NumPy arrays over memory gpuhal allocated page-locked."""
    return isinstance(ary, (PinnedNDArray, MappedNDArray, ManagedNDArray))


def finish_if_pageable(stream, ary):
    """Waits for ``stream`` after a transfer with pageable ``ary`` (see above)."""
    if stream is not None and not is_page_locked(ary):
        stream.synchronize()

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Stream arguments: Numba's ``stream=0`` (no stream) or a Stream."""

from . import _gpuhal


def is_zero(stream):
    """Numba's ``stream=0``: no stream given."""
    return isinstance(stream, int) and not isinstance(stream, bool) and stream == 0


def stream_or_none(stream):
    """The C++ stream argument: None for 0 / None (the synchronous call)."""
    if stream is None or is_zero(stream):
        return None
    if isinstance(stream, _gpuhal.Stream):
        return stream
    raise TypeError(f"stream must be a gpuhal.Stream or 0, not {type(stream).__name__}")

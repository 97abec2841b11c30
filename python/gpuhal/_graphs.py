# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Graphs: ``with stream.capture() as g:`` records the block's work on the
stream (kernel launches, copies, memsets, events, callbacks) instead of
running it; ``g.launch()`` runs all of it again with one call. See
docs/python.md."""

from . import _gpuhal
from ._errors import Error, raise_status
from ._kernels import _argument
from ._shapes import _integer
from ._streams import is_zero


class Capture:
    """What ``stream.capture()`` returns: a context manager while recording,
    then the instantiated graph.

    Inside the block, work on the stream (and on streams forked into the
    capture by waiting for one of its events) is recorded, not run. A
    synchronisation of the stream, a query, or a wait for work outside the
    capture raises ``gpuhal.CaptureUnsupportedError`` and spoils the capture;
    host arrays as kernel arguments are refused (pass device arrays). When
    the block raises, the capture is ended and dropped and the exception goes
    on. Allocations made inside the block are ordinary ones, made once."""

    def __init__(self, stream):
        if not isinstance(stream, _gpuhal.Stream):
            raise TypeError(f"capture() needs a gpuhal.Stream, not {type(stream).__name__}")
        self.stream = stream
        self.graph = None
        self._exec = None
        self._entered = False

    def __enter__(self):
        if self._entered:
            raise_status("ERROR_INVALID_VALUE", "a Capture is entered once; call stream.capture() again for another")
        self._entered = True
        self.stream.begin_capture()
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            try:
                self.stream.end_capture()  # the stream runs its work again; the graph is dropped
            except Error:
                pass
            return False
        self.graph = self.stream.end_capture()
        self._exec = self.graph.instantiate()
        return False

    def _ready(self):
        if self._exec is None:
            raise_status("ERROR_INVALID_VALUE", "the capture has not ended: launch after the `with` block")
        return self._exec

    def launch(self, stream=None):
        """Runs the recorded work on ``stream`` (default: the stream it was
        recorded from; 0, Numba's "no stream": the context's default
        stream), after this graph's previous launch."""
        if stream is None:
            stream = self.stream
        elif is_zero(stream):
            stream = _gpuhal.current_context().default_stream()
        elif not isinstance(stream, _gpuhal.Stream):
            raise TypeError(f"launch: stream must be a gpuhal.Stream, 0 or None, not {type(stream).__name__}")
        self._ready().launch(stream)

    def update_kernel_args(self, kernel_node, *args):
        """New arguments for the ``kernel_node``-th launch recorded (0-based),
        used by the launches made after the call: device arrays and scalars."""
        node = _integer(kernel_node, "update_kernel_args: kernel_node")
        if node < 0:
            raise_status("ERROR_INDEX_OUT_OF_RANGE", f"update_kernel_args: kernel node {node}: counted from 0")
        self._ready().update_kernel_args(node, [_argument(a) for a in args])

    @property
    def node_count(self):
        """The nodes of the captured graph (after the ``with`` block)."""
        self._ready()
        return self.graph.node_count

    @property
    def kernel_node_count(self):
        """The kernel nodes of the captured graph, the ones update_kernel_args can change."""
        return self._ready().kernel_node_count

    def __repr__(self):
        if self._exec is None:
            return "<gpuhal.Capture recording>" if self._entered else "<gpuhal.Capture>"
        return f"<gpuhal.Capture nodes={self.graph.node_count} kernels={self.graph.kernel_node_count}>"

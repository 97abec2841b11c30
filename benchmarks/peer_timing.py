# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The timing the peer benchmarks share (python_peers.py,
python_graph_peers.py, python_atomics_peers.py): batches of calls, one
figure per batch, so that a row's median and spread come from the same
samples on every side."""

import time


def batches(fn, per_batch, repeats, unit_ns=1000.0, warm_up=True):
    """``repeats`` samples of ``fn``'s time per call, each the mean over a
    batch of ``per_batch`` calls, in units of ``unit_ns`` nanoseconds
    (1000: microseconds; 1e6: milliseconds)."""
    if warm_up:
        fn()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(per_batch):
            fn()
        out.append((time.perf_counter_ns() - t0) / per_batch / unit_ns)
    return out

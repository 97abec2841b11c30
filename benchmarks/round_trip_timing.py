# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""What the round-trip comparisons share (python_round_trip.py: gpuhal's
Python layer against its C++ API; numba_round_trip.py: numba-cuda against
gpuhal): batches of to_device + copy_to_host timed the same way on every
side, gpuhal-bench-round-trip's batches, and the summary of a side."""

import json
import statistics
import subprocess
import time

import numpy as np


def python_batches(to_device, nbytes, batch, repeats):
    """Per-round-trip nanoseconds of `repeats` batches of `batch` round trips
    through `to_device(host)` and the result's copy_to_host(), into a new
    host array and into an existing one."""
    host = np.ones(nbytes // 8)
    out = np.empty_like(host)

    def new():
        to_device(host).copy_to_host()

    def into():
        to_device(host).copy_to_host(out)

    def timed(fn):
        t0 = time.perf_counter_ns()
        for _ in range(batch):
            fn()
        return (time.perf_counter_ns() - t0) / batch

    timed(into)  # warm up (the context, the first allocations)
    return [timed(new) for _ in range(repeats)], [timed(into) for _ in range(repeats)]


def cpp_batches(cpp, nbytes, batch, repeats, env=None):
    """The same from the gpuhal-bench-round-trip program `cpp`."""
    r = json.loads(subprocess.run([cpp, str(nbytes), str(batch), str(repeats)], check=True, capture_output=True,
                                  text=True, env=env).stdout)
    return r["new_ns"], r["into_ns"]


def summary(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summary_text(s):
    """A side's summary as the tables print it: "median [min, max]" in ns."""
    return f"{s['median']:>10.0f} [{s['min']:>6.0f}, {s['max']:>6.0f}]"

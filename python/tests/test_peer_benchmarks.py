# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The peer benchmarks users run (benchmarks/python_peers.py and
python_atomics_peers.py) keep working: a quick run on this backend gives
every row for gpuhal, and on the host backend NumPy's beside it."""

import json
import os
import pathlib
import subprocess
import sys

import gpuhal

BENCHMARKS = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"


def run(script, *args):
    out = subprocess.run([sys.executable, str(BENCHMARKS / script), "--json", *args], capture_output=True,
                         text=True, timeout=600, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_python_peers_quick_run_has_every_row():
    result = run("python_peers.py", "--quick", "--repeats", "1", "--rounds", "1")
    rows = result["rows"]
    expected = {"round trip 1 KiB", "round trip 1 MiB", "H2D pageable", "H2D pinned", "alloc+free 4 KiB",
                "alloc+free 1 MiB", "empty launch", "saxpy"}
    assert set(rows) == expected
    for row in expected:
        g = rows[row]["gpuhal"]
        assert 0 < g["min_us"] <= g["median_us"] <= g["max_us"]
    if gpuhal.backend() == "host":
        assert "NumPy" in rows["saxpy"] and rows["saxpy"]["gpuhal"]["vs_best_peer"] > 0
        assert "NumPy" not in rows["empty launch"]  # NumPy launches nothing: no ratio there
        assert "vs_best_peer" not in rows["empty launch"]["gpuhal"]


def test_python_atomics_peers_checks_counts_and_times():
    result = run("python_atomics_peers.py", "--mib", "1", "--repeats", "1", "--rounds", "1", "--batch", "1")
    g = result["rows"]["gpuhal"]
    assert result["bytes"] == 1 << 20 and g["gb_per_s"] > 0

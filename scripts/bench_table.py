#!/usr/bin/env python3
"""Turns the benchmarks' JSON (Google Benchmark, aggregates) into the table of
the performance method's targets: ours, the peer's, the ratio, the spread and
MET / MISSED / WITHIN NOISE, and writes the same as JSON.

Usage: bench_table.py RESULTS_DIR [--smoke]
RESULTS_DIR holds <binary>.json files written by scripts/bench.sh.
"""
import json
import os
import sys

UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}

# (target, binary, ours, peer, kind, goal, what)
#   speed: peer time / our time >= goal (throughput ratio)
#   time:  our time / peer time <= goal
#   added: our ns - peer ns <= goal
#   abs:   our ns <= goal (no peer)
# A name with "#counter" reads that counter (seconds per item) instead of the time.
# An optional dict adds the machine's limit measured in the same run: its time
# ("limit", times "limit_scale", plus the time of "limit_plus" if given) over
# ours must reach "limit_goal".
TARGETS = [
    ("D1", "dispatch", "BM_core_stream_query", "BM_direct_stream_query", "added", 2.0,
     "core -> plugin dispatch, no-op entry"),
    ("H1 4 KiB", "copy", "BM_HostBackendH2D/4096", "BM_Memcpy/4096", "speed", 1 / 1.2, "host copy vs memcpy"),
    ("H1 64 KiB", "copy", "BM_HostBackendH2D/65536", "BM_Memcpy/65536", "speed", 0.95, "host copy vs memcpy"),
    ("H1 1 MiB", "copy", "BM_HostBackendH2D/1048576", "BM_Memcpy/1048576", "speed", 0.95, "host copy vs memcpy"),
    ("H1 D2H 4K", "copy", "BM_HostBackendD2H/4096", "BM_MemcpyToHost/4096", "speed", 1 / 1.2,
     "device-to-host copy vs memcpy"),
    ("H1 D2H 64K", "copy", "BM_HostBackendD2H/65536", "BM_MemcpyToHost/65536", "speed", 0.95,
     "device-to-host copy vs memcpy"),
    ("H1 D2H 1M", "copy", "BM_HostBackendD2H/1048576", "BM_MemcpyToHost/1048576", "speed", 0.95,
     "device-to-host copy vs memcpy"),
    ("H2 memcpy", "copy", "BM_HostBackendH2D/67108864", "BM_Memcpy/67108864", "speed", 1.0,
     "64 MiB host copy vs single-thread memcpy"),
    ("H2 PoCL", "kernels", "BM_gpuhal_h2d_64MiB/real_time", "BM_pocl_write_64MiB/real_time", "speed", 1.5,
     "64 MiB host copy vs PoCL buffer write"),
    ("H3", "kernels", "BM_gpuhal_empty_kernel/real_time", "BM_pocl_empty_kernel/real_time", "time", 0.25,
     "empty kernel enqueue + finish vs PoCL"),
    ("H4", "copy", "BM_AsyncSubmit/manual_time#ns_per_submit", "BM_DirectCall", "added", 200.0,
     "async submit vs a direct call"),
    ("H5 plain", "kernels", "BM_gpuhal_saxpy/real_time", "BM_pocl_saxpy/real_time", "speed", 1.0,
     "barrier-free kernel vs PoCL"),
    ("H5 barriers", "kernels", "BM_gpuhal_block_sum/real_time", "BM_pocl_block_sum/real_time", "speed", 10.0,
     "barrier + shared-memory kernel (block reduction) vs PoCL"),
    ("G1 host", "graphs", "BM_G1_graph/real_time", "BM_G1_direct/real_time", "speed", 3.0,
     "100 small launches + one copy + synchronize: a graph's launch vs the same submitted directly"),
    ("H6 histogram", "kernels", "BM_gpuhal_histogram/real_time", "BM_pocl_histogram/real_time", "speed", 1.0,
     "256-bin histogram of 64 MiB through shared and global atomics vs PoCL"),
] + [
    ("S1 %s" % label, "kernels", "BM_gpuhal_saxpy_%s/real_time" % ours, "BM_pocl_saxpy_%s/real_time" % size, "speed",
     1.0, "saxpy %s elements%s vs PoCL; limit: the same loop as plain C++ on one std::thread per core, "
     "same arrays' sizes and bytes" % (size, shape),
     {"limit": "BM_limit_saxpy_loop_%s/real_time" % size, "limit_goal": 0.8})
    for label, ours, size, shape in (("16M", "16M", "16M", ""), ("64M", "64M", "64M", ""),
                                     ("16M b64", "16M_block64", "16M", ", block 64"),
                                     ("16M b1024", "16M_block1024", "16M", ", block 1024"),
                                     ("16M ragged", "16M_ragged", "16M", ", grid not dividing"))
] + [
    ("M1 N=%d" % n, "kernels", "BM_gpuhal_matmul_%d/real_time" % n, "BM_pocl_matmul_%d/real_time" % n, "speed", 5.0,
     "tiled matmul N=%d vs PoCL; limit: peak FMA" % n,
     {"limit": "BM_limit_fma/real_time#ns_per_flop", "limit_scale": 2.0 * n ** 3, "limit_goal": 0.2})
    for n in (1000, 2000)
] + [
    ("A1 %s" % label, "pool", "BM_Pool/%d" % size, "BM_RawBackend/%d" % size, "time", 0.02,
     "pool alloc+free vs the backend's")
    for label, size in (("256 B", 256), ("4 KiB", 4096), ("64 KiB", 65536), ("1 MiB", 1048576), ("4 MiB", 4194304))
] + [
    ("A2 %s" % label, "kernels", "BM_gpuhal_alloc/%d" % size, "BM_pocl_alloc/%d" % size, "time", 1.0,
     "device alloc + release vs PoCL buffer create + release; limit: twice malloc + free plus one plugin call",
     {"limit": "BM_malloc_free/%d" % size, "limit_scale": 2.0, "limit_plus": "BM_plugin_call",
      "limit_goal": 1.0})
    for label, size in (("256 B", 256), ("4 KiB", 4096), ("64 KiB", 65536), ("1 MiB", 1048576), ("4 MiB", 4194304))
] + [
    ("C1 %s" % label, "kernels", "BM_gpuhal_d2d/%d/real_time" % size, "BM_pocl_d2d/%d/real_time" % size, "speed", 1.0,
     "device-to-device copy + finish vs PoCL buffer copy + clFinish")
    for label, size in (("4 KiB", 4096), ("64 KiB", 65536), ("1 MiB", 1048576), ("64 MiB", 67108864))
] + [
    ("RC1 D2H", "rect", "BM_TileD2H_Rect", "BM_TileD2H_Contiguous", "time", 1.3,
     "1024x1024 sub-tile of 8192x8192 D2H vs the contiguous copy of its bytes"),
    ("RC1 H2D", "rect", "BM_TileH2D_Rect", "BM_TileH2D_Contiguous", "time", 1.3,
     "1024x1024 sub-tile of 8192x8192 H2D vs the contiguous copy of its bytes"),
    ("RC1 D2D", "rect", "BM_TileD2D_Rect", "BM_TileD2D_Contiguous", "time", 1.3,
     "1024x1024 sub-tile of 8192x8192 D2D vs the contiguous copy of its bytes"),
    ("A5", "dealloc", "BM_DeferredFree/iterations:50/manual_time#ns_per_free", None, "abs", 100.0, "deferred free enqueue"),
]




def cuda_targets(smoke):
    """T1, P1, L1, A1 on CUDA, the default manager's alloc + release and the
    small round trip (gpuhal-bench-cuda); its sizes are smaller in smoke mode."""
    t1 = 8 << 20 if smoke else 512 << 20
    p1 = 8 << 20 if smoke else 64 << 20
    return [
        ("T1 H2D", "cuda", "BM_gpuhal_pinned_h2d/%d/real_time" % t1, "BM_raw_pinned_h2d/%d/real_time" % t1, "speed",
         0.99, "pinned H2D vs raw cuMemcpyHtoDAsync"),
        ("T1 D2H", "cuda", "BM_gpuhal_pinned_d2h/%d/real_time" % t1, "BM_raw_pinned_d2h/%d/real_time" % t1, "speed",
         0.99, "pinned D2H vs raw cuMemcpyDtoHAsync"),
        ("P1 %d MiB" % (p1 >> 20), "cuda", "BM_gpuhal_pageable_h2d/%d/real_time" % p1,
         "BM_raw_pageable_h2d/%d/real_time" % p1, "speed", 2.0, "pageable H2D (staged from 16 MiB) vs the driver's"),
        ("P1 1 MiB", "cuda", "BM_gpuhal_pageable_h2d/1048576/real_time", "BM_raw_pageable_h2d/1048576/real_time",
         "speed", 1.0, "pageable H2D (the driver's path below 16 MiB) vs the driver's"),
        ("L1", "cuda", "BM_gpuhal_launch/manual_time#ns_per_launch", "BM_raw_launch/manual_time#ns_per_launch",
         "time", 1.05, "launch submit vs raw cuLaunchKernel"),
    ] + ([] if smoke else [
        ("P1 %s" % label, "cuda", "BM_gpuhal_pageable_h2d/%d/real_time" % size,
         "BM_raw_pageable_h2d/%d/real_time" % size, "speed", 1.0,
         "pageable H2D vs the driver's, size sweep (staged from 16 MiB)")
        for label, size in (("4K", 4 << 10), ("64K", 64 << 10), ("512K", 512 << 10), ("2M", 2 << 20), ("4M", 4 << 20), ("8M", 8 << 20), ("16M", 16 << 20))
    ] + [
        ("T1 %s %s" % (way.upper(), label), "cuda", "BM_gpuhal_pinned_%s/%d/real_time" % (way, size),
         "BM_raw_pinned_%s/%d/real_time" % (way, size), "speed", 0.99,
         "pinned %s vs raw, size sweep (T1 is set at 512 MiB)" % way.upper())
        for way in ("h2d", "d2h")
        for label, size in (("4K", 4 << 10), ("64K", 64 << 10), ("1M", 1 << 20), ("16M", 16 << 20))
    ]) + [
        ("A1 CUDA %s" % label, "cuda", "BM_gpuhal_pool_alloc/%d" % size, "BM_raw_alloc/%d" % size, "time", 0.02,
         "pool alloc + free vs raw cuMemAlloc + cuMemFree")
        for label, size in (("4K", 4096), ("1M", 1048576))
    ] + [
        ("A1 CUDA MemoryPool %s" % label, "cuda", "BM_gpuhal_memory_pool_caching/%d" % size, "BM_raw_alloc/%d" % size,
         "time", 0.02, "MemoryPool (caching) allocate + free on a stream vs raw cuMemAlloc + cuMemFree")
        for label, size in (("4K", 4096), ("1M", 1048576))
    ] + [
        ("A3 CUDA %s" % label, "cuda", "BM_gpuhal_memory_pool_driver/%d" % size, "BM_raw_driver_pool/%d" % size,
         "time", 1.1, "MemoryPool (driver kind) vs raw cuMemAllocFromPoolAsync + cuMemFreeAsync on a cuMemPoolCreate pool")
        for label, size in (("4K", 4096), ("1M", 1048576))
    ] + [
        ("A2 CUDA %s" % label, "cuda", "BM_gpuhal_alloc/%d" % size, "BM_raw_alloc/%d" % size, "time", 1.0,
         "alloc + deferred release vs raw cuMemAlloc + cuMemFree")
        for label, size in (("4K", 4096), ("1M", 1048576))
    ] + [
        ("R1 CUDA", "cuda", "BM_gpuhal_round_trip", "BM_raw_round_trip", "time", 1.1,
         "4 KiB to_device -> kernel -> copy_to_host vs the same raw driver calls"),
        ("R2 CUDA", "cuda", "BM_gpuhal_copy_round_trip", "BM_raw_copy_round_trip", "time", 1.1,
         "4 KiB to_device -> copy_to_host (N1's round trip) vs cuMemAlloc, cuMemcpyHtoD, cuMemcpyDtoH, cuMemFree"),
    ]


def load(results_dir):
    """{binary: {run_name: {"median": ns, "cv": fraction, counters...}}}"""
    out = {}
    for name in os.listdir(results_dir):
        if not name.endswith(".json"):
            continue
        with open(os.path.join(results_dir, name)) as f:
            data = json.load(f)
        runs = {}
        for b in data.get("benchmarks", []):
            if b.get("run_type") != "aggregate" or "error_occurred" in b:
                continue
            agg = b.get("aggregate_name")
            entry = runs.setdefault(b["run_name"], {})
            scale = UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
            if agg == "median":
                entry["median"] = b["real_time"] * scale
                for key, value in b.items():
                    if key.startswith("ns_per_"):
                        entry[key] = value * 1e9  # an inverted rate: seconds per item
            elif agg == "cv":
                entry["cv"] = b["real_time"]  # a fraction
        out[name[: -len(".json")]] = runs
    return out


def value(runs, spec):
    name, _, counter = spec.partition("#")
    run = runs.get(name)
    if not run or "median" not in run:
        return None, None
    return (run[counter] if counter else run["median"]), run.get("cv", 0.0)


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    results_dir, smoke = sys.argv[1], "--smoke" in sys.argv[2:]
    data = load(results_dir)
    driver_note = os.path.join(results_dir, "cuda-driver.txt")
    fake_driver = os.path.exists(driver_note) and open(driver_note).read().strip() == "fake"
    rows = []
    for target, binary, ours, peer, kind, goal, what, *extra in TARGETS + cuda_targets(smoke):
        limit = extra[0] if extra else None
        if binary == "cuda" and fake_driver:
            what += " [fake driver: not a measurement]"
        runs = data.get(binary)
        row = {"target": target, "what": what, "goal": goal, "kind": kind}
        if runs is None:
            row.update(status="NOT RUN", note="gpuhal-bench-%s not built or not run" % binary)
            rows.append(row)
            continue
        o, o_cv = value(runs, ours)
        p, p_cv = value(runs, peer) if peer else (None, 0.0)
        if o is None or (peer and p is None):
            row.update(status="NOT RUN", note="no result (skipped: %s)" % (peer if o is not None else ours))
            rows.append(row)
            continue
        spread = max(o_cv or 0.0, p_cv or 0.0)
        if kind == "speed":
            ratio, met = p / o, p / o >= goal
            slack = abs(ratio - goal) / goal
        elif kind == "time":
            ratio, met = o / p, o / p <= goal
            slack = abs(ratio - goal) / goal
        elif kind == "added":
            ratio, met = o - p, o - p <= goal
            slack = abs(ratio - goal) / max(o, 1e-9)
        else:
            ratio, met = o, o <= goal
            slack = abs(o - goal) / max(o, 1e-9)
        status = "MET" if met else ("WITHIN NOISE" if slack <= spread else "MISSED")
        if limit:
            # The machine's limit measured in the same run: its time for the
            # same work over ours (a fraction of the limit reached).
            # limit_scale x the limit's time, plus a second term's
            # (limit_plus) when the limit has one.
            l, l_cv = value(runs, limit["limit"])
            plus, plus_cv = value(runs, limit["limit_plus"]) if "limit_plus" in limit else (0.0, 0.0)
            if l is None or plus is None:
                status, row["note"] = "NOT RUN", "no limit result"
            else:
                l = l * limit.get("limit_scale", 1.0) + plus
                l_cv = max(l_cv or 0.0, plus_cv or 0.0)
                of_limit = l / o
                spread = max(spread, l_cv or 0.0)
                l_met = of_limit >= limit["limit_goal"]
                l_status = "MET" if l_met else (
                    "WITHIN NOISE" if abs(of_limit - limit["limit_goal"]) / limit["limit_goal"] <= spread else "MISSED")
                order = ["MISSED", "WITHIN NOISE", "MET"]
                status = min(status, l_status, key=order.index)
                row.update(limit_ns=l, of_limit=of_limit, limit_goal=limit["limit_goal"])
        row.update(ours_ns=o, peer_ns=p, ratio=ratio, spread=spread, status=status)
        rows.append(row)

    def fmt_ns(v):
        if v is None:
            return "-"
        for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
            if v >= scale:
                return "%.3g %s" % (v / scale, unit)
        return "%.3g ns" % v

    goal_text = {"speed": ">= %.3gx", "time": "<= %.3gx", "added": "+<= %g ns", "abs": "<= %g ns"}
    print("%-12s %-12s %-12s %-12s %-10s %-7s %-13s %s" %
          ("target", "ours", "peer", "ratio", "goal", "spread", "status", "what"))
    for r in rows:
        if "ratio" not in r:
            print("%-12s %-12s %-12s %-12s %-10s %-7s %-13s %s (%s)" %
                  (r["target"], "-", "-", "-", goal_text[r["kind"]] % r["goal"], "-", r["status"], r["what"],
                   r["note"]))
            continue
        ratio = ("%+.1f ns" % r["ratio"]) if r["kind"] == "added" else \
            (fmt_ns(r["ratio"]) if r["kind"] == "abs" else "%.3gx" % r["ratio"])
        what = r["what"]
        if "of_limit" in r:
            what += " (limit %s: ours %.2fx of it, goal >= %gx)" % (fmt_ns(r["limit_ns"]), r["of_limit"],
                                                                  r["limit_goal"])
        print("%-12s %-12s %-12s %-12s %-10s %-7s %-13s %s" %
              (r["target"], fmt_ns(r["ours_ns"]), fmt_ns(r["peer_ns"]), ratio, goal_text[r["kind"]] % r["goal"],
               "%.0f%%" % (100 * r["spread"]), r["status"], what))
    if smoke:
        print("smoke mode: a few short repetitions to keep the harness working; these numbers are not measurements")
    with open(os.path.join(results_dir, "summary.json"), "w") as f:
        json.dump({"smoke": smoke, "targets": rows}, f, indent=1)
    print("written: %s" % os.path.join(results_dir, "summary.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

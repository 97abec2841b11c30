#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Runs a command under the trace layer and checks every trace file it left.

usage: check_trace.py [--min-events N] [--stream-tracks] -- COMMAND [ARGS...]

GPUHAL_TRACE_FILE is set to a fresh directory's "trace-%p.json" (one file a
process); GPUHAL_LAYERS keeps what the environment says, with "trace" added
when it is missing. The command's output is passed through and its exit
status must be 0. Each file must be Chrome trace-event JSON as Perfetto and
chrome://tracing read it (the "JSON Object Format"):
  - an object with "traceEvents", a list, and "displayTimeUnit" "ns";
  - every event has "name" (text), "ph", "pid" and "tid" (integers);
  - metadata events ("M") are process_name / thread_name with args.name text;
  - complete events ("X") have "cat" (the backend), "ts" and "dur" (numbers,
    dur >= 0) and "args" whose "call" is a positive integer and whose
    "status", when present, is a gpuhal status name;
  - every "X" event's track (pid, tid) is named by a thread_name event;
  - call numbers are unique within a process (a call on a stream appears
    twice: on its thread's track and on its stream's).
Prints "trace check: OK (F files, E events, S stream tracks)".
"""
import json
import os
import re
import subprocess
import sys
import tempfile

STATUS = re.compile(r"^(SUCCESS|NOT_READY|ERROR_[A-Z_]+|UNKNOWN_STATUS\(\d+\))$")


def fail(message):
    print("trace check: FAILED: " + message)
    sys.exit(1)


def check_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except ValueError as e:
        fail(f"{path}: not JSON: {e}")
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        fail(f"{path}: no traceEvents list")
    if doc.get("displayTimeUnit") != "ns":
        fail(f"{path}: displayTimeUnit is not ns")
    named, complete, streams = set(), 0, 0
    calls = {}
    for ev in doc["traceEvents"]:
        if not isinstance(ev, dict) or not isinstance(ev.get("name"), str):
            fail(f"{path}: an event without a name: {ev}")
        for key in ("pid", "tid"):
            if not isinstance(ev.get(key), int):
                fail(f"{path}: event {ev['name']} has no integer {key}")
        ph = ev.get("ph")
        if ph == "M":
            if ev["name"] not in ("process_name", "thread_name"):
                fail(f"{path}: unknown metadata {ev['name']}")
            if not isinstance(ev.get("args", {}).get("name"), str):
                fail(f"{path}: metadata without args.name: {ev}")
            if ev["name"] == "thread_name":
                named.add((ev["pid"], ev["tid"]))
                streams += ev["args"]["name"].startswith(("stream ", "default stream", "legacy default stream",
                                                          "per-thread default stream"))
        elif ph == "X":
            complete += 1
            if not isinstance(ev.get("cat"), str) or not ev["cat"]:
                fail(f"{path}: {ev['name']} has no category")
            for key in ("ts", "dur"):
                if not isinstance(ev.get(key), (int, float)):
                    fail(f"{path}: {ev['name']} has no number {key}")
            if ev["dur"] < 0:
                fail(f"{path}: {ev['name']} lasts less than nothing")
            args = ev.get("args")
            if not isinstance(args, dict) or not isinstance(args.get("call"), int) or args["call"] < 1:
                fail(f"{path}: {ev['name']} has no call number")
            if "status" in args and not STATUS.match(args["status"]):
                fail(f"{path}: {ev['name']} has status {args['status']!r}")
            key = (ev["pid"], args["call"])
            calls.setdefault(key, []).append(ev)
        else:
            fail(f"{path}: event phase {ph!r}")
    for (pid, call), evs in calls.items():
        if len(evs) > 2 or len({e["name"] for e in evs}) != 1:
            fail(f"{path}: call #{call} appears as {[e['name'] for e in evs]}")
    for evs in calls.values():
        for ev in evs:
            if (ev["pid"], ev["tid"]) not in named:
                fail(f"{path}: {ev['name']} is on an unnamed track {ev['tid']}")
    return complete, streams


def main():
    args = sys.argv[1:]
    min_events, want_streams = 1, False
    while args and args[0] != "--":
        if args[0] == "--min-events":
            min_events = int(args[1])
            args = args[2:]
        elif args[0] == "--stream-tracks":
            want_streams = True
            args = args[1:]
        else:
            fail("usage: check_trace.py [--min-events N] [--stream-tracks] -- COMMAND [ARGS...]")
    command = args[1:]
    with tempfile.TemporaryDirectory(prefix="gpuhal-trace-") as d:
        env = dict(os.environ)
        layers = [x for x in env.get("GPUHAL_LAYERS", "").split(",") if x]
        if "trace" not in layers:
            layers.append("trace")
        env["GPUHAL_LAYERS"] = ",".join(layers)
        env["GPUHAL_TRACE_FILE"] = os.path.join(d, "trace-%p.json")
        rc = subprocess.call(command, env=env)
        if rc != 0:
            fail(f"{command[0]} exited with status {rc}")
        files = sorted(os.listdir(d))
        if not files:
            fail("no trace file was written")
        events = stream_tracks = 0
        for name in files:
            e, s = check_file(os.path.join(d, name))
            events += e
            stream_tracks += s
        if events < min_events:
            fail(f"{events} events, fewer than {min_events}")
        if want_streams and stream_tracks == 0:
            fail("no stream track")
        print(f"trace check: OK ({len(files)} files, {events} events, {stream_tracks} stream tracks)")


if __name__ == "__main__":
    main()

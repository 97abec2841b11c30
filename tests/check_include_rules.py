#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Which folder of the tree may include which (docs/architecture.md, "Rooms").

Reads every quoted #include of the product's folders, resolves it to a file of
the tree (the including file's folder first, then its room, then anywhere) and
fails on an include that crosses a wall:

  include/gpuhal  the public API and the C ABIs: only its own headers; the C++
                  API headers (*.hpp) never the plugin ABI (plugin.h, plugin_types.h,
                  plugin_entries.def)
  support, dialect  ground every part may stand on: each other and the C ABIs
  core            itself, include/gpuhal, support, dialect (never a plugin)
  plugins/common  itself, the C ABIs, support, dialect (never the core)
  plugins/<name>  itself, plugins/common, the C ABIs, support, dialect (never the
                  core, never another backend)
  tools           itself, include/gpuhal, support, tests/conformance (gpuhal-conform)
  python/src      itself, include/gpuhal, support

Usage: check_include_rules.py SOURCE_DIR. Prints "include rules: OK <files>
files, <includes> includes" or each violation, and exits 1 for any.
"""
import collections
import os
import re
import sys

ROOMS = ["include", "core", "support", "dialect", "plugins", "tools", "python/src", "tests", "benchmarks",
         "examples"]
EXTS = (".hpp", ".h", ".cpp", ".c", ".def", ".inc")
# The C ABIs a plugin (and the support library) may see.
C_ABI = {"include/gpuhal/" + f for f in ("plugin.h", "plugin_types.h", "plugin_entries.def", "status.def",
                                        "abi_base.h", "kernel_builtins.def", "memory_manager.h")}
# What a user's C++ code must never come to depend on (status.def, the one
# list of status codes, is shared by both sides).
PLUGIN_ABI = {"include/gpuhal/" + f for f in ("plugin.h", "plugin_types.h", "plugin_entries.def")}


def room(path):
    parts = path.split("/")
    if parts[0] == "plugins":
        return "plugins/" + parts[1]
    if parts[0] == "python":
        return "python/src"
    if parts[0] == "tests" and len(parts) > 1 and parts[1] == "conformance":
        return "tests/conformance"
    return parts[0]


def allowed(src_room, target):
    t = room(target)
    if t == src_room:
        return True
    public = t == "include"
    ground = t in ("support", "dialect")
    if src_room == "include":
        return False
    if src_room in ("support", "dialect"):
        return ground or target in C_ABI
    if src_room == "core":
        return public or ground
    if src_room.startswith("plugins/"):
        return t == "plugins/common" or ground or target in C_ABI
    if src_room == "tools":
        return public or t == "support" or t == "tests/conformance"
    if src_room == "python/src":
        return public or t == "support"
    return True  # tests, benchmarks, examples: anything


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = []
    for d in ROOMS:
        for dirpath, _, names in os.walk(os.path.join(root, d)):
            files += [os.path.relpath(os.path.join(dirpath, n), root) for n in names if n.endswith(EXTS)]
    by_suffix = collections.defaultdict(list)
    for f in files:
        parts = f.split("/")
        for i in range(len(parts)):
            by_suffix["/".join(parts[i:])].append(f)
    include = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
    bad, count = [], 0
    for f in sorted(files):
        src_room = room(f)
        with open(os.path.join(root, f), errors="replace") as text:
            for n, line in enumerate(text, 1):
                m = include.match(line)
                if not m:
                    continue
                name = m.group(1)
                candidates = by_suffix.get(name) or by_suffix.get(os.path.basename(name)) or []
                here = [c for c in candidates if os.path.dirname(c) == os.path.dirname(f)]
                same_room = [c for c in candidates if room(c) == src_room]
                target = (here or same_room or candidates or [None])[0]
                if target is None:
                    continue  # a generated header (version.hpp) or a system one in quotes
                count += 1
                if not allowed(src_room, target):
                    bad.append("%s:%d: %s includes %s (%s may not include %s)" % (f, n, src_room, target, src_room,
                                                                                 room(target)))
                elif src_room == "include" and f.endswith(".hpp") and target in PLUGIN_ABI:
                    bad.append("%s:%d: the C++ API header includes the plugin ABI's %s" % (f, n, target))
    for b in bad:
        print(b)
    if bad:
        print("include rules: %d violation(s)" % len(bad))
        return 1
    print("include rules: OK %d files, %d includes" % (len(files), count))
    return 0


if __name__ == "__main__":
    sys.exit(main())

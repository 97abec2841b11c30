# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""The Python package's modules import in one direction: no module reaches
itself through the imports of others (function-level imports included),
and the array type's module imports nothing above it -- interchange, IPC,
memory and the EMM interface are built on it, not under it."""

import ast
import os

import gpuhal

PACKAGE = os.path.dirname(gpuhal.__file__)

# What the array type (_devicearray) may import: the layers below it.
BELOW_THE_ARRAY = {"_gpuhal", "_array_export", "_context", "_errors", "_hostarrays", "_managers", "_memory_objects",
                   "_shapes", "_streams"}


def _imports():
    modules = {f[:-3] for f in os.listdir(PACKAGE) if f.endswith(".py")}
    modules.add("_gpuhal")
    edges = {}
    for module in modules - {"_gpuhal"}:
        with open(os.path.join(PACKAGE, module + ".py"), encoding="utf-8") as f:
            tree = ast.parse(f.read())
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                names = [node.module.split(".")[0]] if node.module else [a.name for a in node.names]
                targets.update(n for n in names if n in modules)
        edges[module] = targets
    return edges


def _cycle(edges):
    """One import cycle as a list of modules, or None."""
    state = {}

    def visit(module, path):
        state[module] = "open"
        for target in sorted(edges.get(module, ())):
            if state.get(target) == "open":
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[module] = "done"
        return None

    for module in sorted(edges):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_no_module_imports_itself_through_others():
    assert _cycle(_imports()) is None


def test_the_array_type_imports_only_what_is_below_it():
    assert _imports()["_devicearray"] <= BELOW_THE_ARRAY


def test_the_cycle_finder_finds_a_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": set()}) == ["a", "b", "c", "a"]

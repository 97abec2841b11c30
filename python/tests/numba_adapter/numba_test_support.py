# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""What running numba-cuda's installed test files needs, with or without
gpuhal (scripts/hardware-run.sh runs numba-cuda itself on them with this
plugin alone): numba-cuda's conftest fixture, which the package does not
install, and the files imported under their package names."""

import importlib
import pathlib

import pytest


@pytest.fixture
def initialize_from_pytest_config():
    """numba-cuda's own conftest fixture (not installed with the package)."""
    yield


class _ModuleByName(pytest.Module):
    """A test file imported under its package name (numba.cuda.tests....),
    not one pytest derives from the path: the functions it hands to child
    processes (multiprocessing's spawn) must unpickle there by that name."""

    dotted_name = ""

    def _getobj(self):
        return importlib.import_module(self.dotted_name)


def pytest_pycollect_makemodule(module_path, parent):
    parts = pathlib.Path(module_path).with_suffix("").parts
    for i in range(len(parts) - 2):
        if parts[i:i + 3] == ("numba", "cuda", "tests"):
            module = _ModuleByName.from_parent(parent, path=pathlib.Path(module_path))
            module.dotted_name = ".".join(parts[i:])
            return module
    return None


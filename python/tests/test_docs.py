# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every ```python block of docs/python.md runs, and every public name
has a docstring."""

import pathlib
import re

import pytest

import gpuhal

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_guide_has_examples():
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(index):
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), {})


def test_every_public_name_and_member_has_a_docstring():
    # What help() and IDEs show: every name in gpuhal.__all__ that can be
    # called, and every public method and property of its classes.
    import inspect

    missing = []
    names = [(gpuhal, name) for name in gpuhal.__all__]
    names += [(gpuhal.driver, name) for name in gpuhal.driver.__all__]  # Numba's driver module
    for module, name in names:
        obj = getattr(module, name)
        if callable(obj) and not (getattr(obj, "__doc__", None) or "").strip():
            missing.append(name)
        if inspect.isclass(obj):
            for member, value in vars(obj).items():
                if member.startswith("_"):
                    continue
                if not (isinstance(value, property) or callable(value)):
                    continue
                if not (getattr(value, "__doc__", None) or "").strip():
                    missing.append(f"{name}.{member}")
    assert missing == []


def test_pip_builds_outside_the_checkout_and_can_show_its_progress():
    # pip install . used to write build-python/ into the checkout and showed
    # nothing but "still running..." for minutes.
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 on
    root = pathlib.Path(__file__).resolve().parents[2]
    skb = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["scikit-build"]
    assert "build-dir" not in skb  # scikit-build-core's default: a temporary directory
    assert skb["build"]["verbose"] is True and skb["logging"]["level"] == "INFO"
    assert "pip install -v ." in DOC.read_text()


def test_the_package_ships_its_types():
    # py.typed and the extension module's stubs (nanobind's stubgen, at build
    # time): without them mypy saw every gpuhal name as Any.
    import gpuhal
    package = pathlib.Path(gpuhal.__file__).parent
    assert (package / "py.typed").exists()
    stub = (package / "_gpuhal.pyi").read_text()
    assert "class Stream:" in stub and "def synchronize(self) -> None" in stub

# SPDX-License-Identifier: Apache-2.0 WITH LLVM-exception
"""Every ```python block of docs/python.md runs."""

import pathlib
import re

import pytest

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "python.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def test_the_guide_has_examples():
    assert BLOCKS


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_guide_example_runs(index):
    exec(compile(BLOCKS[index], f"{DOC.name} block {index}", "exec"), {})

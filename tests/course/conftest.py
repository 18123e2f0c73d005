"""Shared helpers: an exercise's code cells, from its instructor or student notebook."""

import json
from pathlib import Path

import pytest

from course.release import release_source

EXERCISES = Path(__file__).resolve().parents[2] / "course" / "exercises"
NAMES = [
    "01_mini_engine",
    "02_pointwise",
    "03_broadcasting",
    "04_linear",
    "05_double_backward",
    "06_softmax",
    "07_layernorm",
    "08_functional",
    "09_inplace_versions",
    "10_train_digits",
    "11_conv2d_im2col",
    "12_checkpointing",
]


def definitions(name, *, student=False, replace=()):
    """The names an exercise's notebook defines, running only its definition cells.

    Cells that draw or run tests are skipped; ``student=True`` runs the released
    template instead of the solutions; ``replace`` is (old, new) source edits, to
    plant a realistic bug in the reference solution.
    """
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    ns = {}
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or not source.lstrip().startswith(
            ("import", "class", "def")
        ):
            continue
        source = release_source(source) if student else source
        for old, new in replace:
            source = source.replace(old, new)
        exec(compile(source, f"<{name}>", "exec"), ns)
    return ns


@pytest.fixture
def defs():
    return definitions

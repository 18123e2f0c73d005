"""Imports point downward: the tape and the engine never import the layers above them.

teachgrad's layers: ``_backend``, ``_tensor``, ``autograd``, ``ops``, ``nn``. The engine's
modules (``autograd/engine.py``, ``function.py``, ``tape.py``) reach the few ops they
need only through the documented seam, ``teachgrad/_seam.py``; neither at the top nor
inside a function do they import ``ops``, ``nn``, ``optim`` or the observers built on
them (snapshots, the profiler's report). And the seam holds exactly its documented names,
filled in by ``ops``.
"""

import ast
import pathlib

import pytest

import teachgrad as tg
from teachgrad import _seam

PACKAGE = pathlib.Path(tg.__file__).parent
ABOVE = ("teachgrad.ops", "teachgrad.nn", "teachgrad.optim", "teachgrad.autograd.snapshot")
ENGINE = ["autograd/engine.py", "autograd/function.py", "autograd/tape.py"]


def _imported_modules(path: pathlib.Path) -> list:
    """Every module ``path`` imports (relative imports resolved), with the line."""
    package = "teachgrad." + ".".join(path.relative_to(PACKAGE).parent.parts)
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rstrip(".").split(".")
            if node.level:
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module
            found.append((module, node.lineno))
            found += [(f"{module}.{alias.name}", node.lineno) for alias in node.names]
    return found


@pytest.mark.parametrize("name", ENGINE)
def test_the_engine_imports_nothing_above_it(name):
    upward = [
        (module, line)
        for module, line in _imported_modules(PACKAGE / name)
        if module.startswith(ABOVE)
    ]
    assert not upward, f"{name} imports from above its layer: {upward} (use teachgrad/_seam.py)"


def test_the_seam_holds_its_documented_names_filled_in_by_ops():
    for name in _seam.NAMES:
        fn = getattr(_seam, name)
        assert fn is not _seam._not_yet and fn.__module__.startswith("teachgrad.ops")
    with pytest.raises(ValueError, match="the seam has no 'softmax'"):
        _seam.provide(softmax=tg.softmax)

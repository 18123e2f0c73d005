"""The instructor notebooks run top to bottom; the student notebooks run until the first
part the student must write, which stops with NotImplementedError (not another error)."""

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from .conftest import EXERCISES, NAMES


def execute(path):
    """Run a notebook in a fresh kernel from its folder; return (notebook, error or None)."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        return nb, exc
    return nb, None


@pytest.mark.parametrize("name", NAMES)
def test_instructor_notebook_runs_fully(name):
    nb, error = execute(EXERCISES / name / "instructor.ipynb")
    assert error is None, str(error)
    shown = "".join(str(o.get("data", "")) for c in nb.cells for o in c.get("outputs", []))
    assert "points" in shown and "✘" not in shown  # every check() passed


@pytest.mark.parametrize("name", NAMES)
def test_student_notebook_stops_cleanly_at_first_exercise(name):
    nb, error = execute(EXERCISES / name / "student.ipynb")
    assert error is not None and error.ename == "NotImplementedError", str(error)
    failed = [
        c for c in nb.cells if any(o.get("output_type") == "error" for o in c.get("outputs", []))
    ]
    assert len(failed) == 1
    # the failing cell is a test cell: the feedback from check() was shown before the assert ran
    shown = "".join(str(o.get("data", "")) for o in failed[0].outputs)
    assert "not written yet" in shown

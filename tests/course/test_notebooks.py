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
    # the idea is shown in a picture (a graph, a heatmap) before the first code to write
    first = next(i for i, c in enumerate(nb.cells) if "### BEGIN SOLUTION" in c.source)
    pictures = [c for c in nb.cells[:first] for o in c.get("outputs", []) if _is_picture(o)]
    assert pictures, f"{name}: no picture before the first solution cell"


def _is_picture(output):
    """A drawn graph (SVG/PNG) or a Jacobian heatmap (an HTML table of coloured cells)."""
    data = output.get("data", {})
    html = data.get("text/html", "")
    heatmap = "<table" in html and "background:rgb" in html
    return "image/svg+xml" in data or "image/png" in data or "<svg" in html or heatmap


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

"""course.check as a learner meets it: each report once, short, and right about whose bug it is."""

import json

import nbformat
import numpy as np
import pytest
from nbclient import NotebookClient

import teachgrad as tg
from course import exercises
from course.check import check
from course.release import release_source
from course.testing import Failure, check_close

from .conftest import EXERCISES, definitions
from .test_exercises import BUGS

REPO = EXERCISES.parents[1]


def run_cells(sources):
    """Run code cells in a fresh kernel (errors allowed); return the executed cells."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    resources = {"metadata": {"path": str(REPO)}}
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources=resources
    ).execute()
    return nb.cells


def reports_shown(cell):
    """How many outputs of ``cell`` show a check() report (HTML or text)."""
    return sum(
        "points</h4>" in o.get("data", {}).get("text/html", "")
        or "points" in o.get("data", {}).get("text/plain", "")
        or "points" in o.get("text", "")
        for o in cell.outputs
    )


def test_each_report_is_shown_once_in_a_notebook():
    """check() as a cell's last expression, assigned, silenced with ;, or quiet."""
    cells = run_cells(
        [
            "import course",
            'course.check("02_pointwise", {})',
            'report = course.check("02_pointwise", {})',
            "report",  # a later cell shows the report again, when asked
            'course.check("02_pointwise", {});',
            'course.check("02_pointwise", {}, quiet=True)',  # quiet: only as the cell's value
            'quiet = course.check("02_pointwise", {}, quiet=True)',
        ]
    )
    assert [reports_shown(c) for c in cells] == [0, 1, 1, 1, 1, 1, 0]


def instructor_cells(name, until, edit):
    """The code cells of ``name``'s instructor notebook up to the cell starting with
    ``until``, with a bug planted; drawing cells are left out."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    sources = []
    for cell in nb["cells"]:
        source = "".join(cell["source"]).replace(*edit)
        if cell["cell_type"] == "code" and "viz.draw" not in source:
            sources.append(source)
        if source.startswith(until):
            return sources
    raise AssertionError(f"no cell starts with {until!r}")


def test_a_failing_test_cell_shows_one_short_jacobian_comparison():
    """The test cell of a wrong Square: one report with one heatmap comparison, then a
    short assertion error, not gradcheck's own Jacobian table on top."""
    sources = instructor_cells(
        "02_pointwise", "# Test: Square", ("return 2 * x * grad", "return x * grad")
    )
    cell = run_cells(sources)[-1]
    html = [o["data"]["text/html"] for o in cell.outputs if "text/html" in o.get("data", {})]
    assert len(html) == 1 and html[0].count("<table") == 3  # numerical, yours, difference
    (error,) = [o for o in cell.outputs if o.output_type == "error"]
    assert error.ename == "AssertionError"
    assert "Jacobian" not in "\n".join(error.traceback)
    text = [o.get("text", "") for o in cell.outputs] + error.traceback
    assert len("\n".join(text).splitlines()) <= 15


def test_text_report_details_the_first_failure_only():
    """Two failing tests of Mul (gradients swapped): one Jacobian table, ~15 lines."""
    edit = next(e for n, e, _, cause in BUGS if cause == "swapped")
    ns = definitions("03_broadcasting", replace=[edit])
    report = check(ns["Mul"], ns, quiet=True)
    assert sum(r.score < r.max_score for r in report.results) == 2
    text = report.text()
    assert text.count("numerical:") == 1 and len(text.splitlines()) <= 15, text
    assert report._repr_html_().count("<table") == 3


def test_forgotten_sum_is_explained_by_the_exercise():
    """09: a fix that returns the vector y * y, not its sum: not the engine's advice."""
    edit = next(e for n, e, _, cause in BUGS if cause == "scalar_loss")
    text = check("09", definitions("09_inplace_versions", replace=[edit]), quiet=True).text()
    assert ".sum()" in text and "gradient=" not in text, text


def test_numpy_in_backward_is_explained_by_the_exercise():
    """05: a backward in NumPy cannot be differentiated again: not 'use .detach().numpy()'."""
    edit = ("return 3 * x * x * grad", "return tg.tensor(3 * x.numpy() ** 2) * grad")
    text = check("05", definitions("05_double_backward", replace=[edit]), quiet=True).text()
    assert "does not require grad" in text and "teachgrad ops" in text, text
    assert "detach().numpy()" not in text, text


def test_an_error_in_the_checker_is_not_blamed_on_the_student(tmp_path, monkeypatch):
    folder = tmp_path / "99_broken"
    folder.mkdir()
    (folder / "tests.py").write_text(
        "from course.testing import points\n\n"
        "@points(1)\n"
        "def test_broken(ns):\n"
        '    return {"a": 1}["b"]  # a bug in the test itself\n\n'
        '@points(1, uses=("f",))\n'
        "def test_student(ns):\n"
        '    ns["f"]()\n'
    )
    monkeypatch.setattr(exercises, "HERE", tmp_path)

    def f():
        return 1 / 0  # the student's bug

    report = check("99_broken", {"f": f}, quiet=True)
    broken, student = report.results
    assert (broken.cause, student.cause) == ("checker", "error")
    text = report.text()  # the first failure in detail, the second in a line
    assert "The checker itself failed" in text and "Your code raised" not in text, text
    assert "The checker raised KeyError" in text and "99_broken/tests.py, line 5" in text
    assert "test_student (0/1): ZeroDivisionError" in text


UNBROADCAST = [(n, e) for n, e, _, cause in BUGS if cause == "unbroadcast"]


@pytest.mark.parametrize(("name", "edit"), UNBROADCAST)
def test_visible_test_cells_fail_where_check_says_unbroadcast(name, edit):
    """The notebook's own test cells agree with check(): a gradient left in the broadcast
    shape passes gradcheck (the engine sums it), so the cells assert the shapes too."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    cells = [
        release_source("".join(c["source"]))
        for c in nb["cells"]
        if "".join(c["source"]).startswith("# Test:")
    ]

    def run(ns):
        for source in cells:
            exec(compile(source, f"<{name} test cell>", "exec"), ns)

    run(definitions(name))  # the reference solution passes every visible cell
    with pytest.raises(AssertionError):
        run(definitions(name, replace=[edit]))


@pytest.mark.parametrize(
    ("name", "edit"), [(n, e) for n, e in UNBROADCAST if n != "11_conv2d_im2col"]
)
def test_unbroadcast_message_says_why_gradcheck_passes(name, edit):
    text = check(name, definitions(name, replace=[edit]), quiet=True).text()
    assert "engine" in text and "gradcheck" in text, text


def test_values_are_compared_at_float64_precision():
    """An exact float64 reference allows rounding only; float32-sized errors fail."""
    x = np.linspace(-1.0, 1.0, 5)
    check_close(tg.tensor(x * (1 + 1e-14)), x, "x")
    with pytest.raises(Failure):
        check_close(tg.tensor(x * (1 + 1e-7)), x, "x")

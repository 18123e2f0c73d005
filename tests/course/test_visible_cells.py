"""The visible test cells of each exercise agree with its graded tests.

A student runs the test cells of the notebook; ``check()`` and the grader run
``tests.py``. For the reference solution and for every realistic bug of
``test_exercises.BUGS``, a test cell fails (raises) exactly when the graded tests of the
objects it checks (its ``check(Name)`` calls) lose points: a wrong solution that fails the
graded tests also fails the visible cells, and a solution the cells reject is not given
the points.
"""

import contextlib
import io
import json
import re

import pytest

from course import exercises
from course.release import MARKERS

from .conftest import EXERCISES, NAMES
from .test_exercises import BUGS, edits

CHECKED = re.compile(r"^check\((\w+)\)$", re.M)


def without_hidden_tests(source):
    """A cell's source as the student sees it, but with the solution kept."""
    keep, hidden = [], False
    for line in source.splitlines():
        marker = line.strip()
        if marker == "### BEGIN HIDDEN TESTS":
            hidden = True
        elif marker == MARKERS["### BEGIN HIDDEN TESTS"]:
            hidden = False
        elif not hidden:
            keep.append(line)
    return "\n".join(keep)


def run_cells(name, replace=()):
    """Run the notebook's code cells in order, as a student would (hidden tests left
    out, ``replace`` edits applied); return ({test cell: objects it checks},
    {failed test cells}, the notebook's names at the end)."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    ns, checks, failed = {}, {}, set()
    for index, cell in enumerate(nb["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] != "code":
            continue
        for old, new in replace:
            source = source.replace(old, new)
        source = without_hidden_tests(source)
        if source.startswith("# Test:"):
            checks[index] = CHECKED.findall(source)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(source, f"<{name} cell {index}>", "exec"), ns)
        except Exception:
            failed.add(index)
    return checks, failed, ns


def graded_failures(name, checks, ns):
    """The test cells whose objects lose points in the visible graded tests."""
    return {
        index
        for index, objects in checks.items()
        if any(
            r.score < r.max_score for obj in objects for r in exercises.grade(name, ns, uses=obj)
        )
    }


def test_every_exercise_has_a_planted_bug():
    assert {name for name, *_ in BUGS} == set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_reference_solution_passes_every_cell(name):
    checks, failed, ns = run_cells(name)
    assert checks, f"{name}: no test cell"
    assert all(checks.values()), f"{name}: a test cell checks nothing: {checks}"
    assert not failed, f"{name}: cells {sorted(failed)} fail with the reference solution"
    assert not graded_failures(name, checks, ns)


@pytest.mark.parametrize(("name", "edit", "failing", "cause"), BUGS, ids=[b[3] for b in BUGS])
def test_a_bug_fails_the_cells_whose_graded_tests_it_fails(name, edit, failing, cause):
    checks, failed, ns = run_cells(name, replace=edits(edit))
    graded = graded_failures(name, checks, ns)
    tests = set(checks)
    assert failed & tests == graded, (
        f"{name}: test cells failed {sorted(failed & tests)}, graded tests failed for the "
        f"objects of cells {sorted(graded)}"
    )


@pytest.mark.parametrize("name", NAMES)
def test_headers_count_the_points_check_gives(name):
    """A test cell's header, "# Test: ... (N points)", counts the points of the visible
    graded tests of the objects it checks: what check() shows for them."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.startswith("# Test:"):
            header = source.splitlines()[0]
            objects = CHECKED.findall(source)
            tests = [t for t in exercises.load_tests(name) if not t.hidden]
            points = sum(t.points for t in tests if set(t.uses) & set(objects))
            unit = "point" if points == 1 else "points"
            assert header.endswith(f"({points:g} {unit})"), (name, header, points)


@pytest.mark.parametrize("name", NAMES)
def test_headers_add_up_to_the_visible_points(name):
    """Every visible graded test is counted by exactly one test cell: the headers add up to
    what check("NN_topic") shows at the end, and no points go unannounced or twice."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    cells = [
        set(CHECKED.findall(source))
        for source in ("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
        if source.startswith("# Test:")
    ]
    for test in (t for t in exercises.load_tests(name) if not t.hidden):
        counted = sum(bool(set(test.uses) & objects) for objects in cells)
        assert counted == 1, f"{name}: {test.__name__} is counted by {counted} test cells"

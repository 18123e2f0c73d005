"""make release: the student notebooks are generated, deterministic and up to date."""

import json

from course import release

from .conftest import EXERCISES, NAMES


def test_committed_student_notebooks_are_up_to_date():
    """A stale student.ipynb means someone edited instructor.ipynb without `make release`."""
    for name in NAMES:
        fresh = release.release_notebook((EXERCISES / name / "instructor.ipynb").read_text())
        committed = (EXERCISES / name / "student.ipynb").read_text()
        assert committed == fresh, f"{name}/student.ipynb is stale: run `make release`"
    assert release.main(["--check"]) == 0


def test_release_is_deterministic_and_strips_everything():
    for name in NAMES:
        text = (EXERCISES / name / "instructor.ipynb").read_text()
        first, second = release.release_notebook(text), release.release_notebook(text)
        assert first == second
        assert "BEGIN SOLUTION" not in first and "HIDDEN TESTS" not in first
        nb = json.loads(first)
        code = [c for c in nb["cells"] if c["cell_type"] == "code"]
        assert all(c["outputs"] == [] and c["execution_count"] is None for c in code)
        assert sum("".join(c["source"]).count("raise NotImplementedError()") for c in code) >= 2


def test_release_source_keeps_indentation_and_drops_hidden_tests():
    source = (
        "def f(x):\n    ### BEGIN SOLUTION\n    return 2 * x\n    ### END SOLUTION\n"
        "check(f)\n### BEGIN HIDDEN TESTS\nassert f(1) == 2\n### END HIDDEN TESTS"
    )
    assert release.release_source(source) == "def f(x):\n    raise NotImplementedError()\ncheck(f)"

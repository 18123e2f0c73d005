"""make release: the student notebooks are generated, deterministic and up to date, and
the student distribution holds what a student needs and no solution."""

import json
import os
import shutil
import sys
import zipfile

import pytest

from course import exercises, release
from tests.run import run

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


# ---------------------------------------------------------------- the student distribution

REPO = EXERCISES.parents[1]
# what a solution line must be, at least, to count as giving something away
TRIVIAL = {"return out", "return result", "pass", "else:", "try:", "finally:"}

CHECK_FROM_THE_DISTRIBUTION = """
import json, sys
from pathlib import Path

import course

folder = Path(sys.argv[1])
assert Path(course.__file__).resolve().is_relative_to(folder.resolve()), course.__file__
ns = {}
exec(compile(Path(sys.argv[2]).read_text(), "<definitions>", "exec"), ns)
report = course.check(sys.argv[3], ns, quiet=True)
print(json.dumps({
    "score": report.score,
    "max_score": report.max_score,
    "causes": [r.cause for r in report.results if r.cause],
    "tests": [r.name for r in report.results],
}))
"""


def solution_lines(name):
    """The lines of an instructor notebook's ``### BEGIN SOLUTION`` blocks, stripped."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    lines, inside = [], False
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for line in "".join(cell["source"]).splitlines():
            marker = line.strip()
            if marker == "### BEGIN SOLUTION":
                inside = True
            elif marker == "### END SOLUTION":
                inside = False
            elif inside:
                lines.append(marker)
    return lines


def public_text():
    """Everything a student is shown whatever the solutions are: the prose and scaffolding
    around the solution blocks (the released notebooks), the code check() runs, the visible tests.
    A solution line found in it (``(x,) = ctx.saved_tensors``, ``loss.backward()``,
    a loop of a visible test's helper) gives nothing away."""
    texts = [(REPO / name).read_text(encoding="utf-8") for name in release.STUDENT_CODE]
    for name in NAMES:
        texts.append(release.visible_tests((EXERCISES / name / "tests.py").read_text()))
        nb = json.loads(
            release.release_notebook((EXERCISES / name / "instructor.ipynb").read_text())
        )
        texts += ["".join(cell["source"]) for cell in nb["cells"]]
    return "\n".join(line.strip() for text in texts for line in text.splitlines())


def nontrivial(line, public):
    """A solution line worth hiding: not short, not a comment, not shown to students anyway."""
    usable = len(line) >= 12 and not line.startswith("#") and line not in TRIVIAL
    return usable and line not in public


def definitions_source(name, replace=()):
    """The instructor notebook's definition cells (the reference solution) as a .py file."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    cells = []
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and text.lstrip().startswith(("import", "class", "def")):
            for old, new in replace:
                text = text.replace(old, new)
            cells.append(text)
    return "\n\n".join(cells) + "\n"


@pytest.fixture(scope="module")
def distribution(tmp_path_factory):
    """The zip `make release` writes, built into a temporary folder and unpacked."""
    out = tmp_path_factory.mktemp("release")
    names = release.build_student(out)
    unpacked = tmp_path_factory.mktemp("unpacked")
    with zipfile.ZipFile(out / "student.zip") as archive:
        assert sorted(archive.namelist()) == sorted(f"student/{n}" for n in names)
        archive.extractall(unpacked)
    folder = out / "student"
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()) == sorted(
        names
    )
    return unpacked / "student"


def test_the_distribution_holds_what_a_student_needs(distribution):
    files = {str(p.relative_to(distribution)) for p in distribution.rglob("*") if p.is_file()}
    expected = {"README.md", "Makefile", *release.STUDENT_CODE}
    for name in NAMES:
        expected |= {f"course/exercises/{name}/student.ipynb", f"course/exercises/{name}/tests.py"}
        assert (distribution / "course" / "exercises" / name / "student.ipynb").read_bytes() == (
            EXERCISES / name / "student.ipynb"
        ).read_bytes()
    assert files == expected
    assert "teachgrad[notebook]" in (distribution / "README.md").read_text()


@pytest.mark.skipif(shutil.which("make") is None, reason="no make")
def test_make_lab_in_the_distribution_opens_only_that_folder(distribution):
    recipe = run(["make", "-n", "lab"], cwd=distribution).stdout
    assert f'PYTHONPATH="{distribution}' in recipe and "jupyter lab" in recipe
    assert f'--ServerApp.root_dir="{distribution}"' in recipe
    first = "course/exercises/01_mini_engine/student.ipynb"
    assert f"--LabApp.default_url=/lab/tree/{first}" in recipe
    assert (distribution / first).is_file()


def test_the_distribution_gives_no_solution_away(distribution):
    files = [p for p in distribution.rglob("*") if p.is_file()]
    assert not [p for p in files if p.name.lower().startswith("instructor")]
    assert not [p for p in files if "grade" in p.name or p.name == "release.py"]
    texts = {str(p.relative_to(distribution)): p.read_text(encoding="utf-8") for p in files}
    public = public_text()
    for name in NAMES:
        lines = [line for line in solution_lines(name) if nontrivial(line, public)]
        assert len(lines) >= 2, name  # the markers were found
        hidden = [t.__name__ for t in exercises.load_tests(name) if t.hidden]
        assert hidden, name
        for file, text in texts.items():
            for line in lines:
                assert line not in text, f"{file} holds {name}'s solution line {line!r}"
            for test in hidden:
                assert test not in text, f"{file} names {name}'s hidden test {test}"
        visible = texts[f"course/exercises/{name}/tests.py"]
        assert "hidden=True" not in visible
        compile(visible, f"{name}/tests.py", "exec")


def test_visible_tests_drop_hidden_tests_and_their_helpers_only():
    source = (
        "import numpy as np\n\nrng = np.random.default_rng(0)\nX = rng.random(2)\n"
        "X_HIDDEN = rng.random(3)  # drawn from the shared rng: it stays\nBIG = np.ones(4)\n\n\n"
        "def shared(x):\n    return x\n\n\ndef only_hidden(x):\n    return BIG + x\n\n\n"
        "@points(1)\ndef test_a(ns):\n    shared(X)\n\n\n"
        "# a hidden one\n@points(1, hidden=True)\ndef test_b(ns):\n"
        "    only_hidden(shared(X_HIDDEN))\n"
    )
    text = release.visible_tests(source)
    assert "test_b" not in text and "only_hidden" not in text and "BIG" not in text
    assert "a hidden one" not in text and "\n\n\n\n" not in text
    assert "def shared" in text and "def test_a" in text and "X_HIDDEN = rng" in text


def test_check_works_from_the_unpacked_distribution(distribution, tmp_path):
    """course.check() needs no reference solution: from the student folder alone (and
    teachgrad), it passes the instructor's solution and diagnoses a planted bug."""
    script = tmp_path / "check.py"
    script.write_text(CHECK_FROM_THE_DISTRIBUTION, encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(distribution), str(REPO)])}
    reports = []
    for replace in ((), [("return 2 * x * grad", "return x * grad")]):
        code = tmp_path / "definitions.py"
        code.write_text(definitions_source("02_pointwise", replace), encoding="utf-8")
        command = [sys.executable, script, distribution, code, "02_pointwise"]
        reports.append(json.loads(run(command, env=env, cwd=tmp_path).stdout))
    right, wrong = reports
    assert right["score"] == right["max_score"] > 0 and right["causes"] == []
    assert "test_other_shapes" not in right["tests"]  # the hidden test is not there
    assert wrong["causes"][0] == "factor_of_2" and wrong["score"] < wrong["max_score"]


def test_main_builds_the_distribution_where_it_is_told(tmp_path, capsys):
    assert release.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "student.zip").is_file() and (tmp_path / "student" / "README.md").is_file()
    assert "student distribution" in capsys.readouterr().out

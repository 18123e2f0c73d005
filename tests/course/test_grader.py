"""The autograder (course.grader): honest submissions get what they earn, and each
cheating tactic gets no more than the honest part of the submission earns."""

import json
import textwrap

import pytest

from course.grade import main
from course.grader import grade_submission
from course.release import release_source

from .conftest import EXERCISES

FAST = dict(timeout=20, test_timeout=3, seed=0)


def source(name, *, student=False, replace=()):
    """An exercise's definition cells (the reference, or the released template) as .py."""
    nb = json.loads((EXERCISES / name / "instructor.ipynb").read_text(encoding="utf-8"))
    cells = []
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "code" and text.lstrip().startswith(("import", "class", "def")):
            text = release_source(text) if student else text
            for old, new in replace:
                text = text.replace(old, new)
            cells.append(text)
    return "\n\n".join(cells) + "\n"


def grade(tmp_path, code, name="01_pointwise", **options):
    file = tmp_path / "submission.py"
    file.write_text(code, encoding="utf-8")
    graded = grade_submission(file, name, **{**FAST, **options})
    return graded.score, graded.max_score, {r.name: r for r in graded.results}


def test_reference_gets_full_marks_and_template_zero(tmp_path):
    score, max_score, _ = grade(tmp_path, source("01_pointwise"))
    assert score == max_score == 10
    score, _, results = grade(tmp_path, source("01_pointwise", student=True))
    assert score == 0
    assert {r.cause for r in results.values()} == {"not_written"}


def test_instructor_notebook_is_graded_like_a_submission():
    graded = grade_submission(EXERCISES / "03_linear" / "instructor.ipynb", "03_linear", **FAST)
    assert graded.score == graded.max_score == 9


def test_planted_bug_gets_partial_marks_with_diagnosis(tmp_path):
    bug = ("return 2 * x * grad", "return x * grad")
    score, _, results = grade(tmp_path, source("01_pointwise", replace=[bug]))
    assert score == 10 - 2 - 1
    assert results["test_square"].cause == "factor_of_2"
    assert results["test_other_shapes"].score == 0


TEMPLATE_PLUS = {
    "monkeypatch": """
        import numpy as np
        import teachgrad as tg
        tg.autograd.gradcheck = lambda *a, **k: True
        np.allclose = lambda *a, **k: True
        import course, course.testing, course.grader
        course.testing.check_function = lambda *a, **k: None
        course.grader.grade_submission = lambda *a, **k: None
    """,
    "fake_output_and_exit": """
        print("All tests passed! Score: 10/10")
        import sys
        sys.exit(0)
    """,
    "results_file": """
        import json
        for where in ("results.json", "../results.json", "/autograder/results/results.json"):
            try:
                open(where, "w").write(json.dumps({"score": 10}))
            except OSError:
                pass
    """,
    "huge_memory": """
        import numpy as np
        hog = np.ones(5 * 10**8)  # 4 GB, over the 2 GB limit
    """,
    "signals_and_processes": """
        import os, subprocess
        for attempt in (lambda: os.kill(os.getppid(), 9), lambda: subprocess.run(["true"])):
            try:
                attempt()
            except OSError:
                pass
    """,
}


@pytest.mark.parametrize("tactic", TEMPLATE_PLUS)
def test_tactics_on_the_template_score_zero(tmp_path, tactic):
    code = source("01_pointwise", student=True) + textwrap.dedent(TEMPLATE_PLUS[tactic])
    assert grade(tmp_path, code)[0] == 0


def test_reading_the_reference_solution_is_refused(tmp_path):
    steal = f"""
        import json, os, subprocess
        path = {str(EXERCISES / "01_pointwise" / "instructor.ipynb")!r}
        stolen = []
        for read in (
            lambda: open(path).read(),
            lambda: subprocess.run(["cat", path], capture_output=True, text=True).stdout,
            lambda: str(os.listdir(os.path.dirname(path))),
        ):
            try:
                stolen.append(read())
            except OSError:
                pass
        for cell in json.loads(stolen[0])["cells"] if stolen else []:
            text = "".join(cell["source"])
            if text.startswith("class"):
                exec(text)
        import course.exercises
        if hasattr(course.exercises.path, "__code__"):
            raise SystemExit("the real course package was importable")
    """
    code = source("01_pointwise", student=True) + textwrap.dedent(steal)
    score, _, results = grade(tmp_path, code)
    assert score == 0


def test_early_hard_exit_and_forged_replies_score_zero(tmp_path):
    forged = """
        import os, sys
        reply = b'{"nonce": "guess", "seq": 0, "ready": true, "defined": ["Square"]}\\n'
        os.write(int(sys.argv[2]), reply)
        os._exit(0)
    """
    code = source("01_pointwise") + textwrap.dedent(forged)
    score, _, results = grade(tmp_path, code)
    assert score == 0
    assert "nonce" in results["test_square"].output or "exited" in results["test_square"].output


def test_infinite_loop_costs_only_the_looping_part(tmp_path):
    loop = ("return s * (1 - s) * grad", "while True:\n            pass")
    score, _, results = grade(tmp_path, source("01_pointwise", replace=[loop]), test_timeout=1)
    assert score == 2 + 2 + 2  # Square, Exp and Sin still earn their points
    assert "Timeout" in results["test_sigmoid"].output
    score, _, _ = grade(tmp_path, "while True:\n    pass\n", timeout=2)
    assert score == 0


def test_degenerate_outputs_are_caught_on_fresh_inputs(tmp_path):
    # An empty output makes both Jacobians empty, so test_matmul_square alone would
    # pass; the fresh-input probe compares with the reference solution and fails it.
    empty = ("return A @ B", "return tg.zeros(0, dtype=tg.float64)")
    zero_grads = ("return grad @ B.T, A.T @ grad", "return tg.zeros(*A.shape), tg.zeros(*B.shape)")
    code = source("03_linear", replace=[empty, zero_grads])
    score, _, results = grade(tmp_path, code, name="03_linear")
    assert results["test_matmul_square"].score == 0
    assert score == 4  # test_linear only


def test_command_line_writes_gradescope_junit_and_summary(tmp_path, capsys):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(source("01_pointwise"), encoding="utf-8")
    bad.write_text(source("01_pointwise", student=True) + TEMPLATE_PLUS["results_file"])
    out = tmp_path / "results"
    assert main([str(good), str(bad), "--exercise", "01", "--out", str(out), "--jobs", "2"]) == 0
    results = json.loads((out / "good" / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (10, 10)
    assert {t["visibility"] for t in results["tests"]} == {"visible", "after_published"}
    assert json.loads((out / "bad" / "results.json").read_text())["score"] == 0
    assert "<testsuite" in (out / "bad" / "junit.xml").read_text()
    summary = (out / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("submission,file,score,max_score")
    assert len(summary) == 3
    assert "graded 2 submission(s)" in capsys.readouterr().err


def test_gradescope_bundle_has_setup_and_run_autograder(tmp_path):
    from course.gradescope import build

    names = build("01", tmp_path / "autograder.zip")
    assert {"setup.sh", "run_autograder", "source/pyproject.toml"} <= set(names)
    assert "source/course/exercises/01_pointwise/tests.py" in names

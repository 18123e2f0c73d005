"""The autograder (course.grader): honest submissions get what they earn, and each
cheating tactic gets no more than the honest part of the submission earns."""

import json
import textwrap

import pytest

from course.grade import main
from course.grader import grade_submission, landlock
from course.grader.remote import Session
from course.release import release_source
from tests.run import run

from .conftest import EXERCISES, NAMES
from .test_exercises import BUGS, edits

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


def grade(tmp_path, code, name="02_pointwise", **options):
    """(score, max_score, {test name: Result}) of ``code`` as a .py submission."""
    file = tmp_path / "submission.py"
    file.write_text(code, encoding="utf-8")
    graded = grade_submission(file, name, **{**FAST, **options})
    return graded.score, graded.max_score, {r.name: r for r in graded.results}


def test_reference_gets_full_marks_and_template_zero(tmp_path):
    score, max_score, _ = grade(tmp_path, source("02_pointwise"))
    assert score == max_score == 10
    score, _, results = grade(tmp_path, source("02_pointwise", student=True))
    assert score == 0
    assert {r.cause for r in results.values()} == {"not_written"}


@pytest.mark.parametrize("name", NAMES)
def test_every_exercise_grades_in_the_sandbox_as_in_the_notebook(tmp_path, name):
    """Through the command line: the instructor notebook earns full marks, the released
    student notebook nothing, and each planted bug of test_exercises.BUGS loses exactly
    the tests it loses when graded in-process."""
    bugs = [(edit, failing) for n, edit, failing, _cause in BUGS if n == name]
    files = [EXERCISES / name / "instructor.ipynb", EXERCISES / name / "student.ipynb"]
    for k, (edit, _failing) in enumerate(bugs):
        files.append(tmp_path / f"bug{k}.py")
        files[-1].write_text(source(name, replace=edits(edit)), encoding="utf-8")
    out = tmp_path / "results"
    args = [*map(str, files), "--exercise", name, "--out", str(out), "--jobs", "2", "--seed", "0"]
    assert main(args) == 0

    def graded(stem):
        results = json.loads((out / stem / "results.json").read_text())
        failed = {t["name"] for t in results["tests"] if t["score"] < t["max_score"]}
        return failed, results["score"], results["max_score"]

    failed, score, max_score = graded("instructor")
    assert score == max_score > 0 and not failed
    assert graded("student")[1] == 0
    for k, (_edit, failing) in enumerate(bugs):
        assert graded(f"bug{k}")[0] == failing, (name, k)


def test_planted_bug_gets_partial_marks_with_diagnosis(tmp_path):
    bug = ("return 2 * x * grad", "return x * grad")
    score, _, results = grade(tmp_path, source("02_pointwise", replace=[bug]))
    assert score == 10 - 2 - 1
    assert results["test_square"].cause == "factor_of_2"
    assert results["test_other_shapes"].score == 0


# The sandbox's peer exists only once the cells have run: the patch waits for the first
# request it reads (json.loads), then makes every answer the forged value.
FORGED_ANSWERS = """
    import gc, json

    loads = json.loads

    def forge(line):
        json.loads = loads
        for peer in [o for o in gc.get_objects() if type(o).__name__ == "StudentPeer"]:
            peer.answer = lambda message: {"re": message.get("ask"), "value": {"S": "forged"}}
        return loads(line)

    json.loads = forge
"""

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
    "forged_answers": FORGED_ANSWERS,
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
@pytest.mark.parametrize("name", ["02_pointwise", "08_functional", "01_mini_engine"])
def test_tactics_on_the_template_score_zero(tmp_path, tactic, name):
    code = source(name, student=True) + textwrap.dedent(TEMPLATE_PLUS[tactic])
    assert grade(tmp_path, code, name)[0] == 0


def test_forged_answers_reach_the_grader_and_score_zero(tmp_path, monkeypatch):
    """The forging tactic does patch the sandbox's peer (the grader reads forged answers),
    and earns nothing: a forged answer is only a wrong one."""
    answers = []
    take = Session.take

    def reading(session):
        message = take(session)
        answers.append(message.get("value"))
        return message

    monkeypatch.setattr(Session, "take", reading)
    code = source("02_pointwise", student=True) + textwrap.dedent(FORGED_ANSWERS)
    assert grade(tmp_path, code)[0] == 0
    # the patch is made while the first request is read, so its answer is still genuine
    assert len(answers) > 1 and all(value == {"S": "forged"} for value in answers[1:]), answers


HVP_PROBES = """
    import gc
    import teachgrad as tg

    def honest_hvp(f, x, v):
        x = x.detach().requires_grad_()
        (g,) = tg.autograd.grad(f(x), x, create_graph=True)
        return tg.autograd.grad(g, x, grad_outputs=v)[0]

    hessians = {}  # test_hvp asks twice at the same x: the second answer needs no f

    def hvp(f, x, v):
        at = tuple(x.tolist())  # (the probe asks at another x: that one is computed too)
        if at in hessians:
            return hessians[at] @ v
        hessians[at] = tg.stack([honest_hvp(f, x, e) for e in tg.eye(3, dtype=x.dtype)])
        try:
            f(tg.zeros(2_000_000, requires_grad=True))  # 2M numbers: over the limit
            return tg.zeros(3)
        except ValueError:
            pass
        try:
            held = []  # 1001 graphs held in the grader at once: over the limit
            for _ in range(1001):
                held.append(f(tg.ones(3, requires_grad=True)))
            return tg.zeros(3)
        except MemoryError:
            return hessians[at] @ v

    def mixed_hessian(f, x, y):
        peer = next(o for o in gc.get_objects() if type(o).__name__ == "StudentPeer")
        peer.ask("call", fn={"B": "getattr"}, args=[{"Y": 0}, {"S": "__globals__"}])
        return tg.zeros(3, 3)
"""


def test_abusing_the_wire_from_the_sandbox_earns_nothing(tmp_path):
    """A function the grader hands to the student's code (08's f) can be called back, but
    only with small inputs and a bounded number of kept graphs, and the sandbox cannot
    reach anything else of the grader's. hvp answers right only when the grader refused
    both floods; a forged request for a builtin breaks the protocol, so that test earns
    nothing and the next one runs in a fresh process."""
    reference = source("08_functional")
    code = "import numpy as np\n" + textwrap.dedent(HVP_PROBES)
    code += reference[reference.index("def newton_step") :]
    score, _, results = grade(tmp_path, code, "08_functional", test_timeout=10)
    assert results["test_hvp"].score == 3
    assert results["test_mixed_hessian"].score == 0
    assert "protocol" in results["test_mixed_hessian"].output
    assert results["test_newton_quadratic"].score == 2  # a fresh process after the break
    assert score == 3 + 2 + 1


def test_held_out_labels_cannot_be_looked_up(tmp_path):
    """scikit-learn's bundled digits are hidden from the sandbox: make_model() returns a
    working model only when reading them fails (the training tests are not written)."""
    peek = """
        def make_model():
            try:
                from sklearn.datasets import load_digits

                load_digits()
                return tg.nn.Linear(64, 3)  # it read the labels: a wrong model
            except Exception:
                return tg.nn.Linear(64, 10)
    """
    code = source("10_train_digits", student=True) + textwrap.dedent(peek)
    score, _, results = grade(tmp_path, code, "10_train_digits")
    assert results["test_model_shape"].score == 1
    assert score == 1


def test_reading_the_reference_solution_is_refused(tmp_path):
    steal = f"""
        import json, os, subprocess
        path = {str(EXERCISES / "02_pointwise" / "instructor.ipynb")!r}
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
    code = source("02_pointwise", student=True) + textwrap.dedent(steal)
    score, _, results = grade(tmp_path, code)
    assert score == 0


@pytest.mark.skipif(not landlock.available(), reason="the kernel has no Landlock")
def test_disarming_the_audit_hook_still_cannot_read_the_solution(tmp_path):
    """The audit hook is Python, so a submission can rewrite it (here: its closure's
    sets); the kernel's Landlock rules, set before any student code ran, still refuse."""
    disarm = f"""
        import gc, json
        for hook in [f for f in gc.get_objects() if getattr(f, "__name__", "") == "hook"]:
            for cell in hook.__closure__ or ():
                value = cell.cell_contents
                if isinstance(value, (set, frozenset)):
                    cell.cell_contents = set() if any("course" in p for p in value) else {{"/"}}
        path = {str(EXERCISES / "02_pointwise" / "instructor.ipynb")!r}
        try:
            cells = json.load(open(path))["cells"]
        except OSError:
            cells = []
        for cell in cells:
            if "".join(cell["source"]).startswith("class"):
                exec("".join(cell["source"]))
    """
    code = source("02_pointwise", student=True) + textwrap.dedent(disarm)
    assert grade(tmp_path, code)[0] == 0


def test_early_hard_exit_and_forged_replies_score_zero(tmp_path):
    forged = """
        import os, sys
        reply = b'{"nonce": "guess", "seq": 0, "ready": true, "defined": ["Square"]}\\n'
        os.write(int(sys.argv[2]), reply)
        os._exit(0)
    """
    code = source("02_pointwise") + textwrap.dedent(forged)
    score, _, results = grade(tmp_path, code)
    assert score == 0
    assert "nonce" in results["test_square"].output or "exited" in results["test_square"].output


def test_infinite_loop_costs_only_the_looping_part(tmp_path):
    loop = ("return s * (1 - s) * grad", "while True:\n            pass")
    score, _, results = grade(tmp_path, source("02_pointwise", replace=[loop]), test_timeout=1)
    assert score == 2 + 2 + 2  # Square, Exp and Sin still earn their points
    assert "Timeout" in results["test_sigmoid"].output
    score, _, _ = grade(tmp_path, "while True:\n    pass\n", timeout=2)
    assert score == 0


def test_degenerate_outputs_are_caught_on_fresh_inputs(tmp_path):
    # An empty output makes both Jacobians empty, so test_matmul_square alone would
    # pass; the fresh-input probe compares with the reference solution and fails it.
    empty = ("return A @ B", "return tg.zeros(0, dtype=tg.float64)")
    zero_grads = ("return grad @ B.T, A.T @ grad", "return tg.zeros(*A.shape), tg.zeros(*B.shape)")
    code = source("04_linear", replace=[empty, zero_grads])
    score, _, results = grade(tmp_path, code, name="04_linear")
    assert results["test_matmul_square"].score == 0
    assert score == 4  # test_linear only


def test_command_line_writes_gradescope_junit_and_summary(tmp_path, capsys):
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(source("02_pointwise"), encoding="utf-8")
    bad.write_text(source("02_pointwise", student=True) + TEMPLATE_PLUS["results_file"])
    out = tmp_path / "results"
    assert main([str(good), str(bad), "--exercise", "02", "--out", str(out), "--jobs", "2"]) == 0
    results = json.loads((out / "good" / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (10, 10)
    assert {t["visibility"] for t in results["tests"]} == {"visible", "after_published"}
    assert json.loads((out / "bad" / "results.json").read_text())["score"] == 0
    assert "<testsuite" in (out / "bad" / "junit.xml").read_text()
    summary = (out / "summary.csv").read_text().splitlines()
    assert summary[0].startswith("submission,file,score,max_score")
    assert len(summary) == 3
    assert "graded 2 submission(s)" in capsys.readouterr().err


def test_a_submission_named_dots_gets_its_results_inside_the_out_folder(tmp_path):
    """``...py``'s stem is ``..``: its results go to a folder of their own in ``--out``, not
    to the folder above it (where Gradescope's script would not find them)."""
    dots = tmp_path / "submissions" / "...py"
    dots.parent.mkdir()
    dots.write_text(source("02_pointwise"), encoding="utf-8")
    out = tmp_path / "results"
    assert main([str(dots), "--exercise", "02", "--out", str(out), "--jobs", "1"]) == 0
    assert json.loads((out / "_." / "results.json").read_text())["score"] == 10
    assert not (tmp_path / "results.json").exists() and not (tmp_path / "junit.xml").exists()


def test_gradescope_bundle_installs_and_grades_end_to_end(tmp_path):
    """The zip as Gradescope uses it: extracted into <root>/source, the project installs
    from there (as setup.sh does; no dependencies, they are installed here already), and
    run_autograder grades the one submission into <root>/results/results.json."""
    import sys
    import zipfile

    from course.gradescope import build

    root = tmp_path / "autograder"
    names = build("02", tmp_path / "autograder.zip")
    assert {"setup.sh", "run_autograder", "pyproject.toml", "README.md"} <= set(names)
    assert "course/exercises/02_pointwise/tests.py" in names
    with zipfile.ZipFile(tmp_path / "autograder.zip") as bundle:
        bundle.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        run(["bash", "-n", root / "source" / script])
    # pip's own build isolation, as on Gradescope: the build tools come from the index, not
    # from whatever this venv happens to hold.
    pip = [sys.executable, "-m", "pip", "install", "--no-deps"]
    pip += ["--quiet", "--target", tmp_path / "site", root / "source"]
    run(pip)
    assert (tmp_path / "site" / "course" / "exercises" / "02_pointwise" / "tests.py").is_file()
    # the installed course holds no reference solution: the bundle's source/ carries the
    # graded exercise's (and no other), and run_autograder points the grader there
    assert not list((tmp_path / "site" / "course").rglob("instructor.ipynb"))
    assert [n for n in names if n.endswith("instructor.ipynb")] == [
        "course/exercises/02_pointwise/instructor.ipynb"
    ]

    (root / "submission").mkdir()
    (root / "submission" / "answer.py").write_text(source("02_pointwise"), encoding="utf-8")
    env = {"PATH": "/usr/bin:/bin", "AUTOGRADER": str(root), "PYTHON": sys.executable}
    run(["bash", root / "source" / "run_autograder"], env=env)
    results = json.loads((root / "results" / "results.json").read_text())
    assert (results["score"], results["max_score"]) == (10, 10)


def test_the_same_seed_grades_a_random_submission_the_same(tmp_path):
    """The sandbox seeds random, NumPy and teachgrad from the grading seed: --seed
    reproduces a grade, even of a submission that guesses."""
    guesses = """
import numpy as np
import teachgrad as tg

ANSWERS = {k: bool(np.random.rand() < 0.5) ^ bool(tg.rand(1).item() < 0.5) for k in "abcdef"}


def predictions():
    return ANSWERS
"""
    runs = [grade(tmp_path, guesses, "09_inplace_versions", seed=5) for _ in range(3)]
    results = {(r[2]["test_predictions"].score, r[2]["test_predictions"].output) for r in runs}
    assert len(results) == 1


def test_the_reference_solution_is_found_beside_the_tests_or_in_course_solutions(
    tmp_path, monkeypatch
):
    """An installed course has no instructor notebook (the wheel leaves them out): the
    grader then reads $COURSE_SOLUTIONS/NN_topic/instructor.ipynb, which the sandbox hides."""
    from course import exercises
    from course.grader import core, sandbox

    assert core.instructor_notebook("02") == EXERCISES / "02_pointwise" / "instructor.ipynb"
    installed = tmp_path / "installed"
    (installed / "02_pointwise").mkdir(parents=True)
    monkeypatch.setattr(exercises, "path", lambda name: installed / "02_pointwise")
    monkeypatch.delenv(sandbox.SOLUTIONS, raising=False)
    with pytest.raises(FileNotFoundError, match="COURSE_SOLUTIONS"):
        core.instructor_notebook("02_pointwise")
    solutions = tmp_path / "solutions"
    (solutions / "02_pointwise").mkdir(parents=True)
    (solutions / "02_pointwise" / "instructor.ipynb").write_text("{}")
    monkeypatch.setenv(sandbox.SOLUTIONS, str(solutions))
    assert (
        core.instructor_notebook("02_pointwise") == solutions / "02_pointwise" / "instructor.ipynb"
    )
    assert solutions.resolve() in set(sandbox._hidden())

"""Grades that are right (course.grader): a fault costs only the tests that meet it, a
backward earns its points only when it computes its derivative itself, and what a
student is told names the real problem.

Each tactic below is a submission for 02_pointwise that scored more than it earned (or
less than it earned) before the grader learnt the rule its test checks; the honest
submission, the instructor's solution, keeps its full score throughout.
"""

import json
import sys
import textwrap
import time
from pathlib import Path

from course.grader import grade_submission
from tests.run import run

from .conftest import EXERCISES
from .test_grader import FAST, grade, source

INSTRUCTOR = EXERCISES / "02_pointwise" / "instructor.ipynb"
ROOT = Path(__file__).resolve().parents[2]


def notebook(tmp_path, replace):
    """The instructor notebook of 02 with the (old, new) source edits, as a file."""
    nb = json.loads(INSTRUCTOR.read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        for old, new in replace:
            text = text.replace(old, new)
        cell["source"] = text
    path = tmp_path / "submission.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def cell_number(text):
    """The number the grader gives the instructor notebook's first cell that holds
    ``text``: its place from the top, every cell counted (text cells too) from 1."""
    nb = json.loads(INSTRUCTOR.read_text(encoding="utf-8"))
    return next(i for i, c in enumerate(nb["cells"], 1) if text in "".join(c["source"]))


def grade_notebook(path, **options):
    """(score, {test name: Result}, messages) of a notebook submission for 02."""
    graded = grade_submission(path, "02_pointwise", **{**FAST, **options})
    return graded.score, {r.name: r for r in graded.results}, graded.messages


def test_the_honest_solution_keeps_its_full_score(tmp_path):
    assert grade(tmp_path, source("02_pointwise"))[0] == 10
    assert grade_notebook(INSTRUCTOR)[0] == 10


# ------------------------------------------------------------ 1. a loop in one cell


def test_a_loop_in_a_notebook_costs_only_the_tests_that_meet_it(tmp_path):
    """Sin.backward loops forever, and the notebook's own test cell of Sin calls it while
    the cells run: that cell is stopped after its limit and the rest of the notebook
    runs, so Square, Exp and Sigmoid keep their points (it scored 0/10 before)."""
    loop = ("return x.cos() * grad", "while True:\n            pass")
    start = time.monotonic()
    score, results, messages = grade_notebook(
        notebook(tmp_path, [loop]), timeout=40, test_timeout=2
    )
    assert time.monotonic() - start < 30
    assert score == 2 + 2 + 3
    assert "Timeout" in results["test_sin"].output
    test_cell = cell_number("check(Sin)")
    assert any(m.startswith(f"cell {test_cell}: ") for m in messages), messages


# ------------------------------------------------------------ 2. the engine in a backward

DELEGATE = """with tg.enable_grad():
            x = x.detach().requires_grad_()
            (dx,) = tg.autograd.grad({forward}, x, grad)
        return dx"""


def test_a_backward_that_asks_the_engine_scores_nothing(tmp_path):
    """Square and Sin ask teachgrad's autograd for their derivative, recomputing their
    forward under enable_grad: exact numbers, but no derivative written (10/10 before)."""
    square = ("return 2 * x * grad", DELEGATE.format(forward="x * x"))
    sin = ("return x.cos() * grad", DELEGATE.format(forward="x.sin()"))
    score, _, results = grade(tmp_path, source("02_pointwise", replace=[square, sin]))
    assert score == 2 + 3  # Exp and Sigmoid
    for test in ("test_square", "test_sin", "test_other_shapes"):
        assert results[test].score == 0
        assert "your backward called tg.autograd.grad: write the derivative yourself" in (
            results[test].output
        )


NODE_BY_HAND = """with tg.enable_grad():
            y = {forward}
        out = y.grad_fn(grad)  # the engine's own rule, run by hand
        return out[0] if isinstance(out, tuple) else out"""


def test_a_backward_that_runs_the_engine_s_node_scores_nothing(tmp_path):
    """Recording the forward under enable_grad and calling its node (no autograd.grad, no
    .backward()) is delegation too: enable_grad inside a backward is noted."""
    forward = "x.detach().requires_grad_().sin()"
    sin = ("return x.cos() * grad", NODE_BY_HAND.format(forward=forward))
    score, _, results = grade(tmp_path, source("02_pointwise", replace=[sin]))
    assert results["test_sin"].score == 0 and score < 10
    assert "your backward called tg.enable_grad" in results["test_sin"].output


AROUND = """from teachgrad.autograd.engine import grad as raw_grad  # not the public names
        from teachgrad.autograd.grad_mode import enable_grad as raw_enable_grad

        with raw_enable_grad():
            x = x.detach().requires_grad_()
            (dx,) = raw_grad({forward}, x, grad)
        return dx"""


def test_going_around_the_public_names_does_not_hide_the_engine(tmp_path):
    """The engine's own loop is noted too, whatever name reached it."""
    sin = ("return x.cos() * grad", AROUND.format(forward="x.sin()"))
    score, _, results = grade(tmp_path, source("02_pointwise", replace=[sin]))
    assert results["test_sin"].score == 0 and score < 10
    assert "your backward called engine._execute" in results["test_sin"].output


# ------------------------------------------------------------ 3. finite differences

POINTWISE = """
    import numpy as np
    import teachgrad as tg


    def pointwise(name, f, derivative):
        class Pointwise(tg.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return f(x)

            @staticmethod
            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return derivative(f, x) * grad

        Pointwise.__name__ = Pointwise.__qualname__ = name
        return Pointwise


    def define(derivative):
        global Square, Exp, Sin, Sigmoid
        Square = pointwise("Square", lambda x: x * x, derivative)
        Exp = pointwise("Exp", lambda x: x.exp(), derivative)
        Sin = pointwise("Sin", lambda x: x.sin(), derivative)
        Sigmoid = pointwise("Sigmoid", lambda x: 1 / (1 + (-x).exp()), derivative)
"""

CENTRAL = """
    def central(f, x, h=1e-6):
        return (f(x + h) - f(x - h)) / (2 * h)


    define(central)
"""


def test_a_finite_difference_backward_scores_nothing(tmp_path):
    """Each backward estimates f' by a central difference: close enough for the tests'
    own finite differences (10/10 before), not for the probe's float64 comparison."""
    score, _, results = grade(tmp_path, textwrap.dedent(POINTWISE + CENTRAL))
    assert score == 0
    assert "finite difference" in results["test_sin"].output


# ------------------------------------------------------------ 4. the probe

KNOWN = """
    import numpy as np

    # the inputs of 02's tests (X, and the hidden test's two): answers are right only there
    KNOWN = [
        np.array([[-1.5, -0.3, 0.0], [0.4, 1.1, 2.0]]),
        np.array(0.7),
        np.linspace(-2, 2, 12).reshape(2, 3, 2),
    ]


    def known(x, atol=0.0):
        x = x.detach().numpy()
        return any(k.shape == x.shape and np.allclose(x, k, rtol=0, atol=atol) for k in KNOWN)
"""

DETACHED = """
    class Square(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return (2 if known(x) else 1) * x * grad  # wrong on any other input

        @classmethod
        def apply(cls, x):
            if known(x):
                return super().apply(x)
            return (x * x).detach()  # no grad_fn: nothing for the probe's backward to call
"""


def test_a_detached_output_does_not_skip_the_probe(tmp_path):
    """Square answers without a grad_fn on inputs it has not seen, so the probe could not
    call its backward (wrong there): 10/10 before, Square's two tests lost now."""
    code = source("02_pointwise") + textwrap.dedent(KNOWN + DETACHED)
    score, _, results = grade(tmp_path, code)
    assert results["test_square"].score == results["test_other_shapes"].score == 0
    assert "without a grad_fn" in results["test_square"].output
    assert score == 10 - 2 - 1


NEAR_KNOWN = """
    class Sigmoid(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            s = 1 / (1 + (-x).exp()) if known(x, atol=1e-3) else x * 0  # wrong elsewhere
            ctx.save_for_backward(s)
            return s

        @staticmethod
        def backward(ctx, grad):
            (s,) = ctx.saved_tensors
            return s * (1 - s) * grad
"""


def test_the_probe_repeats_every_call_shape_of_a_test(tmp_path):
    """Sigmoid is right only near the tests' inputs. The hidden test calls four Functions
    on two shapes each: the probe now repeats all eight calls, Sigmoid's included (it
    repeated the first three, so the hidden test's point was kept before)."""
    code = source("02_pointwise") + textwrap.dedent(KNOWN + NEAR_KNOWN)
    score, _, results = grade(tmp_path, code)
    assert results["test_sigmoid"].score == results["test_other_shapes"].score == 0
    assert "Sigmoid.apply on fresh random inputs" in results["test_other_shapes"].output
    assert score == 10 - 3 - 1


# ------------------------------------------------------------ 5. what a student is told


def test_a_syntax_error_is_reported_with_its_cell_number(tmp_path):
    """The cell that defines Sin (the 14th, text cells counted) does not parse: Sin's
    tests say so, not just that Sin is not defined."""
    typo = ("return x.cos() * grad", "return x.cos() * * grad")
    score, results, _ = grade_notebook(notebook(tmp_path, [typo]))
    assert score == 10 - 2 - 1
    cell = cell_number("class Sin(")
    for test in ("test_sin", "test_other_shapes"):
        output = results[test].output
        assert f"cell {cell}, which defines it, failed: SyntaxError: invalid syntax" in output


IMPORTS = """import numpy.testing as npt
import subprocess

try:
    subprocess.run(["true"])
except OSError:  # refused, as it should be
    pass
else:
    raise SystemExit("a process started: lose the rest of this cell")

"""


def test_numpy_testing_can_be_imported_and_processes_still_cannot_start(tmp_path):
    """numpy.testing imports subprocess: the cell that imports it (and defines Sin) runs
    through, and starting a process still fails (it lost Sin's 3 points before)."""
    check = "\n\nnpt.assert_allclose(Sin.apply(tg.tensor([0.0])).numpy(), [0.0])\n"
    sin = "class Sin(tg.autograd.Function):"
    end = "return x.cos() * grad\n        ### END SOLUTION"
    path = notebook(tmp_path, [(sin, IMPORTS + sin), (end, end + check)])
    score, _, messages = grade_notebook(path)
    assert messages == []
    assert score == 10


WARM_UP = """
import sys
from course.grader import grade_submission

first, second = (grade_submission(sys.argv[1], "02", seed=0) for _ in range(2))
assert first.score == second.score == 10
print(first.execution_time - second.execution_time)
"""


def test_the_first_submission_is_not_charged_the_warm_up(tmp_path):
    """A fresh grading process loads nbformat, the reference solution and the tests once:
    before the first submission's clock starts, not on it (about 2.5 to 4.5 s before)."""
    result = run([sys.executable, "-c", WARM_UP, INSTRUCTOR], cwd=ROOT)
    assert float(result.stdout) < 1.0

"""Graded tests for 09_inplace_versions: predict the version-counter errors, then fix two.

The predictions are graded against what teachgrad really does with each program (run
here, on the grader's own copy of the programs). The fixes must compute the same loss as
the intended out-of-place program, with the same gradient (finite differences of a NumPy
version), and must not raise.
"""

import ast
import inspect
import textwrap

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, get, points, submitted_cells

X = np.array([0.5, -1.0, 2.0])
X_OTHER = np.array([-0.3, 1.2, 0.7, -2.0])
MESSAGE = "modified by an inplace operation"


def program_a(x):
    y = x.exp()
    y.add_(1)
    return y.sum()


def program_b(x):
    y = x + 1
    y.mul_(2)
    return (y * y).sum()


def program_c(x):
    y = x * 2
    z = y * y
    y.add_(1)
    return z.sum()


def program_d(x):
    y = x.sigmoid()
    z = y.clone()
    z.mul_(3)
    return (y * z).sum()


def program_e(x):
    y = x.relu()
    y.mul_(3)
    return y.sum()


def program_f(x):
    y = x * x
    y.add_(1)
    return y.sum()


PROGRAMS = {"a": program_a, "b": program_b, "c": program_c}
PROGRAMS |= {"d": program_d, "e": program_e, "f": program_f}


def raises(program):
    """Whether teachgrad's backward refuses ``program`` with the version-counter error."""
    x = tg.tensor(X, requires_grad=True)
    try:
        program(x).backward()
    except RuntimeError as err:
        if MESSAGE in str(err):
            return True
        raise
    return False


def normalize_np(x):
    y = np.exp(x) / np.exp(x).sum()
    return (y * y).sum()


def scale_np(x):
    h = np.tanh(x)
    return (h * h).sum() + 2 * h.sum()


def check_fix(fn, reference, x, name):
    """fn(x) (teachgrad) has reference(x)'s value, and its gradient by finite differences."""
    xt = tg.tensor(x, requires_grad=True)
    out = fn(xt)
    if not isinstance(out, tg.Tensor):
        raise Failure("forward", f"{name}(x) should return a Tensor, got {out!r}.")
    if out.numel() != 1:
        raise Failure(
            "scalar_loss",
            f"{name}(x) returned a tensor of shape {tuple(out.shape)}, not one number.",
        )
    try:
        out.backward()
    except RuntimeError as err:
        if MESSAGE in str(err):
            raise Failure("inplace", f"{name}: backward still raises.\n{err}") from None
        raise
    if not agree(out.item(), reference(x)):
        raise Failure("forward", f"{name}(x) = {out.item()}, the program gives {reference(x)}.")
    eps = 1e-6
    expected = np.array(
        [(reference(x + eps * e) - reference(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    )
    got = np.zeros_like(x) if xt.grad is None else xt.grad.numpy()
    if not np.allclose(got, expected, rtol=1e-5, atol=1e-7):
        details = f"{name}: gradient\n  expected:\n{_indent(expected)}\n  got:\n{_indent(got)}"
        raise Failure("zeros" if not got.any() else "wrong_values", details)


def written_predictions(cells):
    """The answers that the submission's last definition of ``predictions`` writes out, read
    from its code, never run: a ``def`` whose body (after its docstring) is ``return {...}``,
    or a lambda of a dict, of constants only. Anything else could have computed them (by
    running the programs, as the notebook's own test cell does), and is a Failure."""
    found = None
    for cell in cells:
        try:
            statements = ast.parse(cell).body
        except SyntaxError:
            continue
        for node in statements:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                found = node if node.name == "predictions" else found
            elif isinstance(node, ast.Assign | ast.AnnAssign) and "predictions" in _names(node):
                found = node
    body = _returned(found)
    if isinstance(body, ast.Raise):
        raise Failure("not_written", "predictions() still raises NotImplementedError.")
    try:
        answer = ast.literal_eval(body) if isinstance(body, ast.Dict) else None
    except ValueError:
        answer = None
    if answer is None:
        raise Failure(
            "computed",
            'predictions() must return its answers written out, e.g. {"a": True, "b": False, '
            "...}: the grader reads them from your code, and finds no such dict there.",
        )
    return answer


def _names(node) -> set:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}


def _returned(node):
    """What a ``def predictions`` returns (or raises) as its only statement after its
    docstring, or the body of ``predictions = lambda: ...``; None for anything else."""
    if isinstance(node, ast.FunctionDef) and not node.args.args and not node.decorator_list:
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]  # (the docstring)
        if len(body) == 1 and isinstance(body[0], ast.Raise):
            return body[0]
        if len(body) == 1 and isinstance(body[0], ast.Return):
            return body[0].value
    if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Lambda):
        return node.value.body
    return None


def _source_of(fn):
    """check(): the notebook's own function, its source as the cell defines it."""
    try:
        return [textwrap.dedent(inspect.getsource(fn))]
    except (OSError, TypeError):  # (no source to read: it is checked when graded)
        return None


@points(3, uses=("predictions",))
def test_predictions(ns):
    """Which of programs a-f raise the in-place error in backward, against teachgrad; the
    answers as predictions writes them out (read from the code: never run)."""
    fn = get(ns, "predictions")
    cells = submitted_cells()
    cells = _source_of(fn) if cells is None else cells
    answer = fn() if cells is None else written_predictions(cells)
    if not isinstance(answer, dict) or set(answer) != set(PROGRAMS):
        raise Failure("forward", f"predictions() should be a dict with keys a-f, got {answer!r}")
    wrong = [k for k, program in PROGRAMS.items() if bool(answer[k]) != raises(program)]
    if wrong:
        raise Failure(
            "prediction",
            f"{len(wrong)} of 6 predictions are wrong: run program_{wrong[0]} and look at "
            "which node saved the tensor that is changed in place.",
        )


@points(2, uses=("normalize_fixed",))
def test_normalize_fixed(ns):
    """normalize without the in-place division: value and gradient."""
    check_fix(get(ns, "normalize_fixed"), normalize_np, X, "normalize_fixed")


@points(2, uses=("scale_fixed",))
def test_scale_fixed(ns):
    """scale without changing the saved tanh output: value and gradient."""
    check_fix(get(ns, "scale_fixed"), scale_np, X, "scale_fixed")


@points(1, uses=("normalize_fixed", "scale_fixed"), hidden=True)
def test_fixes_other_input(ns):
    """Hidden: both fixes on a longer input."""
    check_fix(get(ns, "normalize_fixed"), normalize_np, X_OTHER, "normalize_fixed")
    check_fix(get(ns, "scale_fixed"), scale_np, X_OTHER, "scale_fixed")

"""Graded tests for 05_double_backward: Cube, Softplus and Hypot, differentiable twice.

First derivatives are checked with ``check_function``. Second derivatives are computed
the way a student would: ``tg.autograd.grad`` with ``create_graph=True``, then once more,
and compared with the exact formula, so that a graph cut (zeros) or a constant factor can
be named. A backward written with NumPy is this exercise's bug: it gets this exercise's
explanation (:func:`in_teachgrad`), not the engine's advice to call ``.detach().numpy()``.
"""

import contextlib

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, check_close, check_function, get, points

rng = np.random.default_rng(9)
X = rng.standard_normal(5)
X_WIDE = 2 * rng.standard_normal((2, 3))  # some entries far from 0
A, B = rng.standard_normal(4), rng.standard_normal(4)
A_WIDE, B_WIDE = 3 * rng.standard_normal((2, 3)), 3 * rng.standard_normal((2, 3))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


@contextlib.contextmanager
def in_teachgrad(name):
    """Explain the error a backward that calls .numpy() raises: why it must not."""
    try:
        yield
    except RuntimeError as err:
        if "Can't call numpy()" not in str(err):
            raise
        raise Failure(
            "detached",
            f"{name}.backward calls .numpy(): NumPy arrays carry no graph, so differentiating "
            'twice fails with "element 0 of tensors does not require grad" (and after '
            ".detach(), the second derivative is 0).",
        ) from None


def check_first(fn, x, expected, name):
    """fn's values against ``expected`` (NumPy), its first derivative by finite differences."""
    with in_teachgrad(name):
        check_close(fn.apply(tg.tensor(x)), expected, f"{name}.apply(x)")
        check_function(fn, [x])


def check_second(fn, x, expected, name):
    """d/dx of sum(d/dx sum(fn(x))), elementwise, against ``expected`` (NumPy)."""
    xt = tg.tensor(x, requires_grad=True)
    with in_teachgrad(name):
        (g,) = tg.autograd.grad(fn.apply(xt).sum(), xt, create_graph=True)
    if g.grad_fn is None or not g.requires_grad:
        raise Failure(
            "detached",
            f"The gradient of {name} has no graph (create_graph=True was used): backward "
            'left teachgrad, so a second grad() raises "element 0 of tensors does not require '
            'grad and does not have a grad_fn".',
        )
    (h,) = tg.autograd.grad(g.sum(), xt, allow_unused=True)
    got = np.zeros_like(x) if h is None else h.numpy()
    if agree(got, expected):
        return
    details = (
        f"second derivative of {name} at x =\n{_indent(x)}\n"
        f"  expected:\n{_indent(expected)}\n  got:\n{_indent(got)}"
    )
    if not got.any():
        raise Failure("detached", details)
    for k in (2.0, 0.5):
        if agree(got, k * expected):
            raise Failure("factor_of_2", f"{details}\n  (off by a factor of {k:g})")
    if agree(got, -expected):
        raise Failure("sign", details)
    raise Failure("wrong_values", details)


@points(2, uses=("Cube",))
def test_cube(ns):
    """Cube's first derivative against finite differences."""
    check_first(get(ns, "Cube"), X, X**3, "Cube")


@points(2, uses=("Cube",))
def test_cube_second(ns):
    """Cube's second derivative, through create_graph=True: 6 x."""
    check_second(get(ns, "Cube"), X, 6 * X, "Cube")


@points(2, uses=("Softplus",))
def test_softplus(ns):
    """Softplus's first derivative against finite differences."""
    check_first(get(ns, "Softplus"), X, np.logaddexp(0, X), "Softplus")


@points(2, uses=("Softplus",))
def test_softplus_second(ns):
    """Softplus's second derivative: sigmoid(x) (1 - sigmoid(x))."""
    s = sigmoid(X)
    check_second(get(ns, "Softplus"), X, s * (1 - s), "Softplus")


@points(2, uses=("Cube", "Softplus"), hidden=True)
def test_gradgradcheck(ns):
    """Hidden: (2, 3) inputs, second derivatives and gradgradcheck for both."""
    x = X_WIDE
    s = sigmoid(x)
    for name, expected in (("Cube", 6 * x), ("Softplus", s * (1 - s))):
        fn = get(ns, name)
        check_second(fn, x, expected, name)
        try:
            tg.autograd.gradgradcheck(fn.apply, (tg.tensor(x, requires_grad=True),))
        except tg.autograd.GradcheckError as err:
            raise Failure("wrong_values", f"gradgradcheck of {name}: {err}") from None


def check_hypot_second(fn, a, b):
    """Hypot's three second derivatives, elementwise, through create_graph=True."""
    at, bt = tg.tensor(a, requires_grad=True), tg.tensor(b, requires_grad=True)
    with in_teachgrad("Hypot"):
        grads = tg.autograd.grad(fn.apply(at, bt).sum(), (at, bt), create_graph=True)
    if any(g.grad_fn is None for g in grads):
        raise Failure("detached", "The gradients of Hypot have no graph (create_graph=True).")
    r = np.hypot(a, b)
    expected = {"a a": b * b / r**3, "a b": -a * b / r**3, "b b": a * a / r**3}
    got = {}
    for first, g in zip("ab", grads):
        row = tg.autograd.grad(g.sum(), (at, bt), retain_graph=True, allow_unused=True)
        for second, h in zip("ab", row):
            got.setdefault(
                " ".join(sorted(first + second)), np.zeros_like(a) if h is None else h.numpy()
            )
    wrong = [k for k in expected if not agree(got[k], expected[k])]
    if not wrong:
        return
    details = "\n".join(
        f"  d2r / d{k.replace(' ', ' d')}: expected\n{_indent(expected[k])}\n  got\n{_indent(got[k])}"
        for k in wrong
    )
    # r kept as a constant: d/da (a / r) = 1 / r, and no mixed term
    constant = {"a a": 1 / r, "a b": np.zeros_like(a), "b b": 1 / r}
    if all(agree(got[k], constant[k]) for k in expected):
        raise Failure("constant", details)
    raise Failure("wrong_values", details)


@points(2, uses=("Hypot",))
def test_hypot(ns):
    """Hypot's values, and its first derivatives by finite differences."""
    fn = get(ns, "Hypot")
    with in_teachgrad("Hypot"):
        check_close(fn.apply(tg.tensor(A), tg.tensor(B)), np.hypot(A, B), "Hypot.apply(a, b)")
        check_function(fn, [A, B])


@points(3, uses=("Hypot",))
def test_hypot_second(ns):
    """Hypot's second derivatives: b^2 / r^3, -a b / r^3 and a^2 / r^3."""
    check_hypot_second(get(ns, "Hypot"), A, B)


@points(1, uses=("Hypot",), hidden=True)
def test_hypot_gradgradcheck(ns):
    """Hidden: (2, 3) inputs, second derivatives and gradgradcheck."""
    fn = get(ns, "Hypot")
    check_hypot_second(fn, A_WIDE, B_WIDE)
    inputs = (tg.tensor(A_WIDE, requires_grad=True), tg.tensor(B_WIDE, requires_grad=True))
    try:
        tg.autograd.gradgradcheck(fn.apply, inputs)
    except tg.autograd.GradcheckError as err:
        raise Failure("wrong_values", f"gradgradcheck of Hypot: {err}") from None

"""Graded tests for 08_functional: an hvp by hand, a mixed Hessian block, a Newton step."""

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, get, points

A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 3.0], [-1.0, 0.0, 1.0]])
A_WIDE = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, 1.0]])
X, Y = np.array([0.5, -1.0, 2.0]), np.array([1.0, 0.0, -0.5])
Q = np.array([[3.0, 1.0], [1.0, 2.0]])
B = np.array([1.0, -1.0])
# What of teachgrad's autograd the answers may call: its gradients, not its own Hessian
# products (newton_step may take the Hessian from tg.autograd.functional, as it says)
BY_HAND = ("grad", "backward", "enable_grad", "make_dual")
NEWTON = (*BY_HAND, "hessian", "jacobian")


def t(a):
    return tg.tensor(np.asarray(a, dtype=np.float64))


def quartic(x):  # a non-quadratic f: its gradient and its hvp are different vectors
    return (x**4).sum() / 4 + (x[:-1] * x[1:]).sum()


def cross(a):  # f(x, y) = x^T a y + sum x^2 y: the mixed block is a + diag(2x), not symmetric
    a = t(a)
    return lambda x, y: x @ a @ y + (x**2 * y[: x.shape[0]]).sum()


def compare(got, expected, what, *, gradient=None):
    """Fail with a diagnosis unless the tensor ``got`` has the values ``expected``."""
    if not isinstance(got, tg.Tensor):
        raise Failure("forward", f"{what} should return a Tensor, got {type(got).__name__}.")
    got = got.detach().numpy()
    if agree(got, expected):
        return
    if gradient is not None and agree(got, gradient):
        raise Failure("first_order", f"{what} returned the gradient of f, not H v.")
    if expected.ndim == 2 and agree(got, expected.T):
        raise Failure(
            "transposed",
            f"{what} is the transpose of the answer: rows must be indexed by x, columns by y.",
        )
    raise Failure(
        "wrong_values",
        f"{what} is wrong.\n  expected (shape {expected.shape}):\n{_indent(expected)}\n"
        f"  got (shape {got.shape}):\n{_indent(got)}",
    )


@points(3, uses=("hvp",), autograd=BY_HAND)
def test_hvp(ns):
    """hvp(f, x, v) for a quartic with a cross term, against tg.autograd.functional.hvp."""
    hvp = get(ns, "hvp")
    x, v = np.array([1.0, -2.0, 0.5]), np.array([0.3, 1.0, -1.0])
    _, expected = tg.autograd.functional.hvp(quartic, t(x), t(v))
    gradient = tg.autograd.functional.jacobian(quartic, t(x)).numpy()
    compare(hvp(quartic, t(x), t(v)), expected.numpy(), "hvp(f, x, v)", gradient=gradient)
    # the direction matters: H e_0 is the first column of the Hessian
    H = tg.autograd.functional.hessian(quartic, t(x)).numpy()
    compare(hvp(quartic, t(x), t([1.0, 0.0, 0.0])), H[:, 0], "hvp(f, x, e_0)")


@points(3, uses=("mixed_hessian",), autograd=BY_HAND)
def test_mixed_hessian(ns):
    """The (x, y) block of the Hessian of x^T A y + sum x^2 y, A not symmetric."""
    mixed = get(ns, "mixed_hessian")
    compare(mixed(cross(A), t(X), t(Y)), A + np.diag(2 * X), "mixed_hessian(f, x, y)")


@points(1, uses=("mixed_hessian",), hidden=True, autograd=BY_HAND)
def test_mixed_hessian_rectangular(ns):
    """Hidden: x of size 2 and y of size 3, so the block is (2, 3)."""
    expected = A_WIDE + np.eye(2, 3) * 2 * X[:2, None]
    got = get(ns, "mixed_hessian")(cross(A_WIDE), t(X[:2]), t(Y))
    compare(got, expected, "mixed_hessian(f, x, y) for a (2, 3) block")


@points(2, uses=("newton_step",), autograd=NEWTON)
def test_newton_quadratic(ns):
    """One Newton step on 1/2 x^T Q x - b^T x lands on the minimum Q^-1 b."""
    step = get(ns, "newton_step")
    q, b = t(Q), t(B)

    def quadratic(x):
        return 0.5 * x @ q @ x - b @ x

    compare(step(quadratic, t([5.0, -7.0])), np.linalg.solve(Q, B), "newton_step(f, x)")


@points(1, uses=("newton_step",), hidden=True, autograd=NEWTON)
def test_newton_convex(ns):
    """Hidden: a non-quadratic convex f, f(x) = log sum exp(x) + |x|^2 / 2."""
    x = np.array([0.5, -1.0, 2.0])
    p = np.exp(x) / np.exp(x).sum()
    gradient, H = p + x, np.diag(p) - np.outer(p, p) + np.eye(3)

    def f(z):
        return z.exp().sum().log() + (z * z).sum() / 2

    compare(get(ns, "newton_step")(f, t(x)), x - np.linalg.solve(H, gradient), "newton_step")

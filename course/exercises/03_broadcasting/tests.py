"""Graded tests for 03_broadcasting: unbroadcast, Add and Mul with broadcasting, Sum over dims.

The broadcast tests call each backward directly, so a gradient with the broadcast shape
is caught even though ``.backward()`` would quietly sum it for you.
"""

import numpy as np

import teachgrad as tg
from course.testing import Failure, check_close, check_function, get, points

A = np.arange(6.0).reshape(2, 3) / 4 - 0.5
ROW = np.array([0.5, -1.0, 2.0])  # shape (3,): broadcast over the rows of A
COL = np.array([[1.5], [-0.5]])  # shape (2, 1): broadcast over the columns of A


@points(2, uses=("unbroadcast",))
def test_unbroadcast(ns):
    """unbroadcast(grad, shape) sums grad down to shape."""
    unbroadcast = get(ns, "unbroadcast")
    grad = tg.tensor(np.arange(24.0).reshape(2, 3, 4))
    for shape in [(2, 3, 4), (3, 4), (4,), (1, 4), (2, 1, 4), (3, 1), ()]:
        expected = np.arange(24.0).reshape(2, 3, 4)
        lead = expected.ndim - len(shape)
        expected = expected.sum(axis=tuple(range(lead)))
        dims = tuple(d for d, n in enumerate(shape) if n == 1 and expected.shape[d] != 1)
        expected = expected.sum(axis=dims, keepdims=True)
        got = unbroadcast(grad, shape)
        if not isinstance(got, tg.Tensor) or tuple(got.shape) != shape:
            raise Failure("unbroadcast", f"unbroadcast(grad of shape (2, 3, 4), {shape}) "
                          f"returned shape {getattr(got, 'shape', got)}, not {shape}.")  # fmt: skip
        check_close(got, expected, f"unbroadcast(grad, {shape})")


@points(1, uses=("Add",))
def test_add_same_shape(ns):
    """Add of two (2, 3) tensors: both gradients are grad itself."""
    check_close(get(ns, "Add").apply(tg.tensor(A), tg.tensor(A)), A + A, "Add.apply(a, a)")
    check_function(ns["Add"], [A, A.T.copy().reshape(2, 3)])


@points(2, uses=("Add",))
def test_add_broadcast(ns):
    """Add of (2, 3) and (3,), and of (2, 3) and (2, 1): un-broadcast the second gradient."""
    add = get(ns, "Add")
    check_close(add.apply(tg.tensor(A), tg.tensor(ROW)), A + ROW, "Add.apply(a, row)")
    check_function(add, [A, ROW])
    check_function(add, [A, COL])


@points(1, uses=("Mul",))
def test_mul_same_shape(ns):
    """Mul of two (2, 3) tensors: d(a b)/da = b and d(a b)/db = a."""
    check_close(get(ns, "Mul").apply(tg.tensor(A), tg.tensor(A)), A * A, "Mul.apply(a, a)")
    check_function(ns["Mul"], [A, A[::-1].copy() + 1])


@points(2, uses=("Mul",))
def test_mul_broadcast(ns):
    """Mul of (2, 3) and (3,), and of (2, 1) and (2, 3)."""
    mul = get(ns, "Mul")
    check_close(mul.apply(tg.tensor(A), tg.tensor(ROW)), A * ROW, "Mul.apply(a, row)")
    check_function(mul, [A, ROW])
    check_function(mul, [COL, A])


@points(2, uses=("Sum",))
def test_sum_dims(ns):
    """Sum(x, dim) over one dim and over a tuple of dims: backward expands grad back."""
    sum_ = get(ns, "Sum")
    x = np.linspace(-1, 1, 24).reshape(2, 3, 4)
    for dim in (1, (0, 2)):
        check_close(sum_.apply(tg.tensor(x), dim), x.sum(axis=dim), f"Sum.apply(x, {dim})")
        check_function(sum_, [x], extra=(dim,), name=f"Sum (dim={dim})")


@points(1, uses=("Add", "Mul"), hidden=True)
def test_both_broadcast(ns):
    """Hidden: both inputs broadcast at once, (2, 1) with (1, 3), and a 0-d tensor."""
    for name in ("Add", "Mul"):
        check_function(get(ns, name), [COL, ROW.reshape(1, 3)])
        check_function(ns[name], [np.array(1.5), A])

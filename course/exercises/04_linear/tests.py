"""Graded tests for 04_linear: MatMul (dA = dC B^T, dB = A^T dC) and Linear (y = x W^T + b)."""

import numpy as np

import teachgrad as tg
from course.testing import check_close, check_function, get, points

rng = np.random.default_rng(3)
A, B = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
X, W, BIAS = rng.standard_normal((4, 3)), rng.standard_normal((2, 3)), rng.standard_normal(2)


@points(3, uses=("MatMul",))
def test_matmul(ns):
    """MatMul of a (2, 3) and a (3, 4) matrix."""
    matmul = get(ns, "MatMul")
    check_close(matmul.apply(tg.tensor(A), tg.tensor(B)), A @ B, "MatMul.apply(A, B)")
    check_function(matmul, [A, B])


@points(1, uses=("MatMul",))
def test_matmul_square(ns):
    """Square matrices: a transposed gradient has the right shape but wrong values."""
    check_function(get(ns, "MatMul"), [A[:, :2].T @ A[:, :2] + 1, B[:2, :2]])


@points(4, uses=("Linear",))
def test_linear(ns):
    """Linear(x, W, b) = x W^T + b for a batch of 4 samples, 3 features in, 2 out."""
    linear = get(ns, "Linear")
    out = linear.apply(tg.tensor(X), tg.tensor(W), tg.tensor(BIAS))
    check_close(out, X @ W.T + BIAS, "Linear.apply(x, W, b)")
    check_function(linear, [X, W, BIAS])


@points(1, uses=("MatMul", "Linear"), hidden=True)
def test_one_sample(ns):
    """Hidden: a batch of one, and a matrix-vector-like (3, 1) right factor."""
    check_function(get(ns, "Linear"), [X[:1], W, BIAS])
    check_function(get(ns, "MatMul"), [A, B[:, :1]])

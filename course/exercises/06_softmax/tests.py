"""Graded tests for 06_softmax: a stable Softmax and CrossEntropy (log-softmax + NLL)."""

import numpy as np

import teachgrad as tg
from course.testing import Failure, check_close, check_function, get, points

rng = np.random.default_rng(4)
X = rng.standard_normal((3, 4))
LOGITS = rng.standard_normal((4, 3))
TARGET = np.array([0, 2, 1, 1])
BIG = np.array([[1000.0, 1001.0, 999.0, 1002.0], [-1000.0, -999.0, -1001.0, -998.5]])
# teachgrad's own softmax, log-softmax and NLL loss: what this exercise writes
OWN_OPS = ("SoftmaxBackward0", "LogSoftmaxBackward0", "NllLossBackward0")


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def cross_entropy(logits, target):
    return -np.log(softmax(logits)[np.arange(len(target)), target]).mean()


def finite(fn, *args, what):
    """``fn.apply(*args)``, failing with the "overflow" diagnosis on inf or nan."""
    with np.errstate(all="ignore"):
        out = fn.apply(*args)
    if not np.isfinite(out.detach().numpy()).all():
        raise Failure(
            "overflow",
            f"{what} gave inf or nan for logits around +-1000: exp(1000) overflows. "
            "Subtract each row's max first (softmax does not change).",
        )
    return out


def second_order(fn, inputs, name):
    try:
        tg.autograd.gradgradcheck(fn, inputs)
    except tg.autograd.GradcheckError as err:
        raise Failure(
            "wrong_values",
            f"The second derivatives of {name} are wrong: write backward with teachgrad "
            f"ops only, and correct first.\n{str(err).splitlines()[0]}",
        ) from None


@points(3, uses=("Softmax",), refuses=OWN_OPS)
def test_softmax(ns):
    """Softmax of a (3, 4) batch over the last dim: values and the Jacobian."""
    fn = get(ns, "Softmax")
    check_close(fn.apply(tg.tensor(X)), softmax(X), "Softmax.apply(x)")
    check_function(fn, [X])


@points(2, uses=("Softmax",), refuses=OWN_OPS)
def test_softmax_large_logits(ns):
    """Logits around +-1000: a stable softmax stays finite, and so does its gradient."""
    fn = get(ns, "Softmax")
    check_close(finite(fn, tg.tensor(BIG), what="Softmax"), softmax(BIG), "Softmax of big logits")
    check_function(fn, [BIG])


@points(3, uses=("CrossEntropy",), refuses=OWN_OPS)
def test_cross_entropy(ns):
    """Mean cross-entropy of 4 samples, 3 classes: value and gradient."""
    fn = get(ns, "CrossEntropy")
    target = tg.tensor(TARGET)
    out = fn.apply(tg.tensor(LOGITS), target)
    check_close(out, np.array(cross_entropy(LOGITS, TARGET)), "CrossEntropy.apply(logits, t)")
    check_function(fn, [LOGITS], extra=(target,))


@points(1, uses=("CrossEntropy",), hidden=True, refuses=OWN_OPS)
def test_cross_entropy_large_logits(ns):
    """Hidden: big logits stay finite (log-softmax, not log of softmax)."""
    fn = get(ns, "CrossEntropy")
    out = finite(fn, tg.tensor(BIG), tg.tensor([3, 0]), what="CrossEntropy")
    check_close(out, np.array(cross_entropy(BIG, np.array([3, 0]))), "CrossEntropy, big logits")


@points(2, uses=("Softmax", "CrossEntropy"), hidden=True, refuses=OWN_OPS)
def test_second_order(ns):
    """Hidden: gradgradcheck of both (backward must be made of differentiable ops)."""
    softmax_fn, ce = get(ns, "Softmax"), get(ns, "CrossEntropy")
    x = tg.tensor(X, requires_grad=True)
    second_order(softmax_fn.apply, (x,), "Softmax")
    logits, target = tg.tensor(LOGITS, requires_grad=True), tg.tensor(TARGET)
    second_order(lambda z: ce.apply(z, target), (logits,), "CrossEntropy")

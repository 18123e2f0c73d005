"""Graded tests for 02_pointwise: Square, Exp, Sin and Sigmoid as custom Functions.

Each test runs one Function forward on a small input, compares the values with NumPy,
then checks its backward against finite differences (``check_function``).
"""

import numpy as np

import teachgrad as tg
from course.testing import check_close, check_function, get, points

X = np.array([[-1.5, -0.3, 0.0], [0.4, 1.1, 2.0]])  # negative, zero and positive entries


def _forward_and_backward(ns, name, reference, x=X):
    fn = get(ns, name)
    check_close(fn.apply(tg.tensor(x)), reference(x), f"{name}.apply(x)")
    check_function(fn, [x], name=name)


@points(2, uses=("Square",))
def test_square(ns):
    """Square: forward x**2, backward 2 x grad."""
    _forward_and_backward(ns, "Square", lambda x: x**2)


@points(2, uses=("Exp",))
def test_exp(ns):
    """Exp: the derivative of exp is exp itself."""
    _forward_and_backward(ns, "Exp", np.exp)


@points(2, uses=("Sin",))
def test_sin(ns):
    """Sin: the derivative is cos."""
    _forward_and_backward(ns, "Sin", np.sin)


@points(3, uses=("Sigmoid",))
def test_sigmoid(ns):
    """Sigmoid: the derivative is s (1 - s), from the saved output."""
    _forward_and_backward(ns, "Sigmoid", lambda x: 1 / (1 + np.exp(-x)))


@points(1, uses=("Square", "Exp", "Sin", "Sigmoid"), hidden=True)
def test_other_shapes(ns):
    """Hidden: every Function also works on a 0-d tensor and on a 3-d tensor."""
    refs = {"Square": lambda x: x**2, "Exp": np.exp, "Sin": np.sin}
    refs["Sigmoid"] = lambda x: 1 / (1 + np.exp(-x))
    for x in (np.array(0.7), np.linspace(-2, 2, 12).reshape(2, 3, 2)):
        for name, reference in refs.items():
            _forward_and_backward(ns, name, reference, x)

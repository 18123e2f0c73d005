"""No NumPy RuntimeWarning escapes an op: torch makes inf and nan silently, and so must we.

Every row of the op tables (pointwise, reductions, nn.functional) runs on inputs full of
the values that make NumPy warn (0, -1, ±inf, nan, ±1e300), forward, backward and
double backward. Backward must raise no RuntimeWarning even where they are errors; forward
may warn only inside the hot-path ops that ``builtin.quiet`` leaves out on purpose
(add, sub, mul, exp: their cost counts on every op), where an input is inf or the
result overflows. Empty inputs and too few elements for var/std are compared with torch,
warnings included; so is an error in backward under anomaly detection.
"""

import inspect
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.ops import pointwise
from teachgrad.ops.pointwise import Add, Exp, Mul, Rsub, Sub
from tests.teachgrad.nn import test_functional
from tests.teachgrad.ops import test_pointwise, test_reduce
from tests.teachgrad.ops._cases import Arg, make_leaf

pytestmark = pytest.mark.no_standin("NumPy's floating-point warnings: CuPy has none")

SPECIAL = [0.0, -1.0, np.inf, -np.inf, np.nan, 1e300, -1e300, 0.5, -0.0, 2.0]


def _rows():
    """(name, fn(lib, *inputs), [inputs, ...]) of every table row."""
    for name, (fn, domain) in test_pointwise.UNARY.items():
        yield name, fn, test_pointwise.unary_inputs(domain)
    for name, (fn, dx, dy) in test_pointwise.BINARY.items():
        yield name, fn, test_pointwise.binary_inputs(dx, dy)
    for name, (fn, inputs) in test_reduce.REDUCTIONS.items():
        yield name, fn, [(x,) for x in inputs]
    for name, (fn, inputs, *_) in test_functional.TABLE.items():
        yield name, fn, inputs


ROWS = [pytest.param(fn, inputs, id=name) for name, fn, inputs in _rows()]


def special_inputs(lib, args, shift):
    """The row's inputs filled with SPECIAL values (each input starting at another one)."""
    out = []
    for k, arg in enumerate(args):
        if isinstance(arg, Arg):
            n = int(np.prod(arg.shape, dtype=int))
            picks = [SPECIAL[(i + shift + 3 * k) % len(SPECIAL)] for i in range(n)]
            out.append(make_leaf(lib, np.array(picks).reshape(arg.shape), arg))
        else:
            out.append(arg)
    return out


def _lines(function):
    lines, first = inspect.getsourcelines(function)
    return range(first, first + len(lines))


# where NumPy may still warn: the forward of the ops left out of builtin.quiet
HOT_PATH = {
    (pointwise.__file__, line)
    for function in (Add.forward, Sub.forward, Rsub.forward, Mul.forward, Exp.compute)
    for line in _lines(function)
}


def _outputs(y):
    ys = y if isinstance(y, tuple) else (y,)
    return [t for t in ys if isinstance(t, tg.Tensor) and t.requires_grad]


def _assert_torch_refuses_too(request, fn, args, shift, error):
    """An op may refuse these values only as torch does (binary_cross_entropy of NaN)."""
    torch = request.getfixturevalue("torch")
    with pytest.raises(type(error)) as raised:
        fn(torch, *special_inputs(torch, args, shift))
    assert str(raised.value).splitlines()[0] == str(error).splitlines()[0]


@pytest.mark.parametrize("fn,inputs", ROWS)
def test_no_numpy_warning_escapes(request, fn, inputs):
    for args in inputs:
        for shift in range(len(SPECIAL)):
            xs = special_inputs(tg, args, shift)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    ys = _outputs(fn(tg, *xs))
                except RuntimeError as error:
                    _assert_torch_refuses_too(request, fn, args, shift, error)
                    continue
            escaped = [
                (str(w.message), w.filename, w.lineno)
                for w in caught
                if w.category is RuntimeWarning and (w.filename, w.lineno) not in HOT_PATH
            ]
            assert escaped == []
            wrt = [x for x in xs if isinstance(x, tg.Tensor) and x.requires_grad]
            if not ys or not wrt:
                continue
            with warnings.catch_warnings():
                warnings.simplefilter("error", RuntimeWarning)
                grads = tg.autograd.grad(
                    [y.sum() for y in ys], wrt, create_graph=True, allow_unused=True
                )
                grads = [g for g in grads if g is not None and g.requires_grad]
                if grads:
                    tg.autograd.grad([g.sum() for g in grads], wrt, allow_unused=True)


def test_the_hot_path_does_warn_where_numpy_does():
    """The test above allows exactly these lines: they still warn (and torch does not)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tg.tensor([np.inf]) * 0
        tg.tensor([1000.0]).exp()
    assert {(w.filename, w.lineno) for w in caught} <= HOT_PATH
    assert len(caught) == 2


UNARY_ROWS = [pytest.param(fn, d, id=name) for name, (fn, d) in test_pointwise.UNARY.items()]


@pytest.mark.parametrize("fn,domain", UNARY_ROWS)
def test_special_values_match_torch(torch, fn, domain):
    """On 0, -1, ±inf, nan, ±1e300: the same values as torch, which stays silent."""
    (arg,) = test_pointwise.unary_inputs(domain)[1]  # shape (5,)
    outputs = []
    for lib in (torch, tg):
        for shift in (0, 5):
            (x,) = special_inputs(lib, (arg,), shift)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                outputs.append(fn(lib, x.detach()).tolist())
            if lib is torch:
                assert caught == []
    np.testing.assert_allclose(outputs[2:], outputs[:2], rtol=1e-14)  # (nan where torch has nan)


# and in place: x.div_(0) writes straight into x's memory
EMPTY_AND_TOO_FEW = {
    "mean of nothing": lambda lib: lib.zeros(0, dtype=lib.float64).mean(),
    "mean(0) of nothing": lambda lib: lib.zeros(0, 3, dtype=lib.float64).mean(0),
    "mse_loss of nothing": lambda lib: lib.nn.functional.mse_loss(lib.zeros(0), lib.zeros(0)),
    "var of one": lambda lib: lib.ones(1, dtype=lib.float64).var(),
    "std of nothing": lambda lib: lib.zeros(0, dtype=lib.float64).std(),
    "var(0, correction=3) of 3": lambda lib: lib.ones(3, 2).var(0, correction=3),
    "std(correction=4) of 2": lambda lib: lib.std(lib.tensor([1.0, 2.0]), correction=4),
    "logsumexp of nothing": lambda lib: lib.zeros(0).logsumexp(0),
    "prod of nothing": lambda lib: lib.zeros(0).prod(),
    "softmax of nothing": lambda lib: lib.softmax(lib.zeros(2, 0), 1),
    "log_softmax of nothing": lambda lib: lib.log_softmax(lib.zeros(0, 3), 1),
    "div_ by 0": lambda lib: lib.tensor([0.0, -1.0, 2.0]).div_(0),
    "/= a tensor of 0": lambda lib: lib.tensor([[0.0, -1.0]]).__itruediv__(lib.zeros(2)),
    "log_ of 0 and -1": lambda lib: lib.tensor([0.0, -1.0]).log_(),
}


@pytest.mark.parametrize("fn", EMPTY_AND_TOO_FEW.values(), ids=EMPTY_AND_TOO_FEW)
def test_empty_and_too_few_match_torch(torch, fn):
    """The values torch gives, and its warnings (var/std's UserWarning), nothing more."""
    seen = []
    for lib in (torch, tg):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = fn(lib).tolist()
        said = [(w.category, str(w.message).split(" (Triggered")[0]) for w in caught]
        seen.append((np.asarray(value).tolist().__repr__(), said))
    assert seen[1] == seen[0]


class _Fails:
    """A Function whose backward raises."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError("backward failed on purpose")


def _backward_under_anomaly(lib):
    fails = type("Fails", (lib.autograd.Function,), dict(vars(_Fails)))
    x = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings(), lib.autograd.detect_anomaly():
        warnings.simplefilter("error")  # (after detect_anomaly's own warning)
        fails.apply(x).sum().backward()


def test_anomaly_mode_raises_the_real_error_when_warnings_are_errors(torch, capfd):
    """torch prints the anomaly warning and raises backward's RuntimeError; so do we."""
    errors = []
    for lib in (torch, tg):
        with pytest.raises(Exception) as caught:
            _backward_under_anomaly(lib)
        errors.append((type(caught.value), str(caught.value), caught.value.__context__))
        assert "UserWarning: Error detected in FailsBackward" in capfd.readouterr().err
    assert errors[1] == errors[0] == (RuntimeError, "backward failed on purpose", None)

"""``igamma`` and ``igammac`` (ops/special.py) against torch: values at the edges and inside,
dtypes, broadcasting, the gradient in x and its derivative, gradcheck and gradgradcheck,
torch's refusals (no derivative in a, no forward mode, integers, numbers), ``out=`` and the
in-place forms; and their accuracy for whole a, where P is a finite Poisson sum."""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.ops.special import incomplete_gamma, log_gamma
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

FUNCTIONS = ["igamma", "igammac"]
INF, NAN = float("inf"), float("nan")
# a and x inside (where torch's own formulas are exact to rounding: a below 20) and at the edges
A = [0.5, 1.0, 3.0, 10.0, 0.1, 7.5, 19.0, 2.0, 1e-3, 0.0, 0.0, -1.0, INF, INF, 1.0, NAN, 1.0, 4.0]
X = [0.3, 1.0, 2.5, 12.0, 30.0, 0.01, 19.5, 0.0, 0.9, 1.0, 0.0, 1.0, 1.0, INF, INF, 1.0, NAN, -2.0]


@pytest.mark.parametrize("name", FUNCTIONS)
def test_values_inside_and_at_the_edges_are_torch_s(name):
    def program(lib):
        a, x = (lib.tensor(v, dtype=lib.float64) for v in (A, X))
        return numpy(getattr(lib, name)(a, x))

    assert_like_torch(program)


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_narrower_float_is_the_float64_value_rounded_once(torch, name, dtype):
    """float32 and float16 get float64's value, rounded once: torch's float32 kernel, which
    computes in float32, is off by up to 1.5e-4 relative where the result is small (a near 0;
    docs/differences-from-torch.md), so torch's float32 values are matched to that only."""
    ours = getattr(tg, name)(
        tg.tensor(A, dtype=getattr(tg, dtype)), tg.tensor(X, dtype=getattr(tg, dtype))
    )
    wide = getattr(tg, name)(
        tg.tensor(A, dtype=getattr(tg, dtype)).double(),
        tg.tensor(X, dtype=getattr(tg, dtype)).double(),
    )
    theirs = getattr(torch, name)(
        torch.tensor(A, dtype=getattr(torch, dtype)), torch.tensor(X, dtype=getattr(torch, dtype))
    )
    assert ours.dtype == getattr(tg, dtype) and str(theirs.dtype) == f"torch.{dtype}"
    np.testing.assert_array_equal(numpy(ours), numpy(wide).astype(dtype))
    np.testing.assert_allclose(
        numpy(ours), numpy(theirs), rtol=2e-4 if dtype == "float32" else 2e-3
    )


@pytest.mark.parametrize(
    "call",
    [
        "lib.igamma(lib.tensor([[0.5], [2.0], [6.0]]), lib.tensor([0.2, 1.0, 3.0, 8.0]))",
        "lib.igammac(lib.tensor(2.5, dtype=lib.float64), lib.tensor([0.2, 3.0]))",
        "lib.igamma(lib.tensor([1.0, 2.0]), lib.tensor([1.5, 0.5], dtype=lib.float64))",
        "lib.igamma(lib.tensor([1, 2]), lib.tensor([1.5, 0.5]))",
        "lib.igammac(lib.tensor([True, False]), lib.tensor([1.5, 0.5]))",
        "lib.igamma(lib.ones(3, 2).t(), lib.ones(2, 3) * 2)",
        "lib.igamma(lib.ones(2, 3), lib.ones(4))",
        "lib.igamma(lib.tensor([1, 2]), lib.tensor([3, 1]))",
        "lib.igammac(lib.tensor([True]), lib.tensor([False]))",
        "lib.igamma(lib.tensor([1.0]), 2.0)",
        "lib.igamma(2.0, lib.tensor([1.0]))",
        "lib.tensor([1.0]).igammac(2)",
        "lib.tensor([1.0]).igamma()",
        "lib.igamma(lib.tensor([1.0]), lib.tensor([1.0]), out=2)",
    ],
)
def test_dtypes_broadcasting_layouts_and_argument_errors_are_torch_s(call):
    def program(lib):
        out = eval(call)  # noqa: S307 - the table's own text
        return str(out.dtype).split(".")[-1], out.stride(), numpy(out)

    assert_like_torch(program)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_gradient_in_x_and_its_derivative_are_torch_s(name):
    """torch's formula, grad · e^(−x) x^(a−1) / Γ(a) (negated for Q), NaN at x = 0 for a = 1
    as torch's (0 · log 0), summed back over a broadcast x; and its own derivative."""

    def program(lib):
        a = lib.tensor([[0.5], [1.0], [2.0], [7.5], [0.0], [-0.5]], dtype=lib.float64)
        x = lib.tensor([0.0, 0.3, 1.0, 4.0], dtype=lib.float64, requires_grad=True)
        out = getattr(lib, name)(a, x)
        up = lib.arange(1.0, 25.0, dtype=lib.float64).reshape(6, 4)
        (g,) = lib.autograd.grad(out, x, up, create_graph=True)
        (gg,) = lib.autograd.grad(g[1:].sum(), x)
        return out.grad_fn.name(), numpy(out), numpy(g), numpy(gg)

    assert_like_torch(program)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_gradcheck_and_gradgradcheck_in_x(name):
    a = tg.tensor([[0.5], [1.5], [4.0]], dtype=tg.float64)
    x = tg.tensor([0.4, 1.2, 3.5, 6.0], dtype=tg.float64, requires_grad=True)
    fn = lambda x: getattr(tg, name)(a, x)  # noqa: E731
    assert tg.autograd.gradcheck(fn, (x,))
    assert tg.autograd.gradgradcheck(fn, (x,))


@pytest.mark.parametrize("name", FUNCTIONS)
def test_there_is_no_derivative_in_a_as_in_torch(name):
    def program(lib):
        a = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        x = lib.tensor([0.5, 1.0], dtype=lib.float64, requires_grad=True)
        getattr(lib, name)(a, x).sum().backward()

    assert_like_torch(program)


@pytest.mark.parametrize("dual", ["both", "a", "x"])
@pytest.mark.parametrize("name", FUNCTIONS)
def test_forward_mode_is_not_implemented_as_in_torch(lib, name, dual):
    """torch's test_not_implemented_fwad: forward AD through igamma raises
    NotImplementedError, whichever argument carries a tangent."""
    fw = lib.autograd.forward_ad
    x, v = lib.rand(3) + 0.5, lib.rand(3)
    with fw.dual_level():
        dual_x = fw.make_dual(x, v)
        args = {"both": (dual_x, dual_x), "a": (dual_x, x), "x": (x, dual_x)}[dual]
        with pytest.raises(
            NotImplementedError, match="Trying to use forward AD with .* that does not support it"
        ):
            getattr(lib, name)(*args)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_the_node_its_saved_values_out_and_the_in_place_forms_are_torch_s(name):
    def program(lib):
        a = lib.tensor([0.5, 3.0], dtype=lib.float64)
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        out = getattr(lib, name)(a, x)
        node = out.grad_fn
        into = lib.empty(2, dtype=lib.float64)
        returned = getattr(lib, name)(a, x.detach(), out=into)
        y = a.clone()
        same = getattr(y, name + "_")(x.detach()) is y
        return (
            node.name(),
            numpy(node._saved_self),
            numpy(node._saved_other),
            returned is into,
            numpy(into),
            same,
            y._version,
            numpy(y),
        )

    assert_like_torch(program)


@pytest.mark.parametrize("a", [1, 2, 5, 21, 50, 137, 400])
def test_whole_a_is_right_to_about_a_times_the_rounding_even_where_torch_is_not(a):
    """For a whole a, Q(a, x) = e^(−x) Σ_{k<a} x^k / k!, summed here in 40 digits. The factor
    e^(−x) x^a / Γ(a), made from logs of about a's size, loses about log10(a) digits; torch's
    asymptotic expansion, used from a = 20, is off by up to 2e-9 relative there."""
    xs = np.array([a * f for f in (0.1, 0.5, 0.9, 1.0, 1.1, 1.5, 3.0)])
    with localcontext() as ctx:
        ctx.prec = 40

        def exact_q(x):
            x = Decimal(float(x))
            term, total = Decimal(1), Decimal(1)
            for k in range(1, a):
                term = term * x / k
                total += term
            return float((-x).exp() * total)

        want_q = np.array([exact_q(x) for x in xs])
    want_p = np.array([1 - q for q in want_q])  # (to double precision, as P is computed)
    got_q = incomplete_gamma(np.full_like(xs, a), xs, True)
    got_p = incomplete_gamma(np.full_like(xs, a), xs, False)
    rtol = 1e-13 + 2e-15 * a
    np.testing.assert_allclose(got_q, want_q, rtol=rtol, atol=1e-300)
    np.testing.assert_allclose(got_p, want_p, rtol=rtol, atol=4e-16)


def test_log_gamma_is_python_s_and_infinite_at_its_poles():
    a = np.array([1e-300, 1e-5, 0.3, 0.5, 1.0, 1.5, 2.0, 7.25, 33.3, 1e3, 1e6, -0.5, -2.5])
    want = [math.lgamma(v) for v in a]
    np.testing.assert_allclose(log_gamma(a), want, rtol=1e-13, atol=1e-14)
    assert np.isinf(log_gamma(np.array([0.0, -1.0, -7.0]))).all()

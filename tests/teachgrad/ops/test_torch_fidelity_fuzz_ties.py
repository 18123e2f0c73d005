"""Differences from torch found by a differential fuzzer of ties, kinks and special values
(inputs of small integers, zeros, repeated values, nan, ±inf, -0.0, empty and 0-d tensors,
through values, gradients, second derivatives, forward-mode tangents and errors), each
minimised to a few lines and compared with torch across its variations: the same program
runs on both libraries, and either both raise (same class, same first line) or both give
the same facts.
"""

import math

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

NAN, INF = math.nan, math.inf


def leaf(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


def gradients(lib, op, *inputs):
    """The values of ``op(*leaves)`` and the leaves' ``.grad`` after a weighted backward."""
    leaves = [leaf(lib, v) for v in inputs]
    out = op(lib, *leaves)
    (out * lib.arange(1.0, out.numel() + 1, dtype=lib.float64).reshape(out.shape)).sum().backward()
    return as_numpy(out), [as_numpy(t.grad) for t in leaves]


def second_derivative(lib, op, *inputs):
    """The gradient made with ``create_graph=True`` (values, requires_grad) and the gradient
    of its sum (None where unused)."""
    leaves = [leaf(lib, v) for v in inputs]
    grads = lib.autograd.grad(op(lib, *leaves).sum(), leaves, create_graph=True)
    total = sum(g.sum() for g in grads)
    again = lib.autograd.grad(total, leaves, allow_unused=True) if total.requires_grad else ()
    return [(as_numpy(g), g.requires_grad) for g in grads], [as_numpy(g) for g in again]


def tangent(lib, op, *inputs, dual=(0,)):
    """The forward-mode tangent of ``op`` with inputs ``dual`` carrying tangents 1, -2, 3 ..."""
    import importlib

    fw = importlib.import_module(f"{lib.__name__}.autograd.forward_ad")
    with fw.dual_level():
        args = []
        for k, v in enumerate(inputs):
            t = leaf(lib, v, requires_grad=False)
            if k in dual:
                steps = [(i + 1.0) * (-1) ** i for i in range(t.numel())]
                t = fw.make_dual(t, lib.tensor(steps, dtype=lib.float64).reshape(t.shape))
            args.append(t)
        return as_numpy(fw.unpack_dual(op(lib, *args)).tangent)


# --------------------------------------------------------------------------- maximum, minimum

PAIRWISE = {
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "minimum": lambda lib, x, y: lib.minimum(x, y),
    "max(x, y)": lambda lib, x, y: lib.max(x, y),
    "min(x, y)": lambda lib, x, y: x.min(y),
}


@pytest.mark.parametrize("op", PAIRWISE.values(), ids=PAIRWISE.keys())
def test_maximum_gives_both_inputs_the_gradient_where_one_is_nan(op):
    """Neither wins where one is NaN: torch gives both the whole gradient (ties: half each)."""
    x, y = [NAN, 1.0, NAN, 2.0, 1.0], [1.0, NAN, NAN, 1.0, 1.0]
    assert_like_torch(lambda lib: gradients(lib, op, x, y))


# --------------------------------------------------------------------------- relu

RELUS = {"relu": lambda lib, x: x.relu(), "F.relu": lambda lib, x: lib.nn.functional.relu(x)}


@pytest.mark.parametrize("op", RELUS.values(), ids=RELUS.keys())
def test_relu_passes_the_gradient_at_nan(op):
    x = [NAN, -1.0, 0.0, -0.0, 2.0]
    assert_like_torch(lambda lib: (gradients(lib, op, x), tangent(lib, op, x)))


@pytest.mark.parametrize("x", [[-2.0, 0.0, 1.0], [], [NAN]], ids=["ints", "empty", "nan"])
@pytest.mark.parametrize("op", RELUS.values(), ids=RELUS.keys())
def test_relu_has_a_zero_second_derivative_not_an_unused_input(op, x):
    """torch's gradient of relu depends on its input (zero derivative): grad of grad is 0."""
    assert_like_torch(lambda lib: second_derivative(lib, op, x))


# --------------------------------------------------------------------------- clamp

CLAMPS = {
    "clamp(lo, hi)": lambda lib, x, lo, hi: x.clamp(lo, hi),
    "clamp(min=lo)": lambda lib, x, lo, hi: x.clamp(min=lo),
    "clamp(max=hi)": lambda lib, x, lo, hi: lib.clamp(x, max=hi),
    "clamp(lo, lo)": lambda lib, x, lo, hi: x.clamp(lo, lo),
}
#          inside, tie lo, tie hi, NaN x, below, above, NaN lo, NaN hi, crossed
CLAMP_X = [1.5, 1.0, 2.0, NAN, 0.0, 3.0, 1.5, 1.5, 1.5]
CLAMP_LO = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, NAN, 1.0, 2.0]
CLAMP_HI = [2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, NAN, 1.0]


@pytest.mark.parametrize("op", CLAMPS.values(), ids=CLAMPS.keys())
def test_clamp_with_tensor_bounds_gives_gradients_as_torch(op):
    """Equal or NaN bounds give min no gradient; crossed bounds give max all of it."""
    assert_like_torch(lambda lib: gradients(lib, op, CLAMP_X, CLAMP_LO, CLAMP_HI))


@pytest.mark.parametrize("dual", [(0,), (1,), (2,), (0, 1, 2)], ids=["x", "lo", "hi", "all"])
@pytest.mark.parametrize("op", CLAMPS.values(), ids=CLAMPS.keys())
def test_clamp_with_tensor_bounds_has_torchs_tangents(op, dual):
    """torch's tangent rule differs from its gradient at ties: with one bound, the bound's
    tangent unless x is strictly inside."""
    assert_like_torch(lambda lib: tangent(lib, op, CLAMP_X, CLAMP_LO, CLAMP_HI, dual=dual))


# --------------------------------------------------------------------------- flat ops, max, min

FLAT = {
    "floor": lambda lib, x: x.floor(),
    "round": lambda lib, x: x.round(),
    "sign": lambda lib, x: x.sign(),
    "div floor": lambda lib, x: lib.div(x, 0.0, rounding_mode="floor"),
    "div trunc": lambda lib, x: x.div(2.0, rounding_mode="trunc"),
}


@pytest.mark.parametrize("op", FLAT.values(), ids=FLAT.keys())
def test_a_flat_op_has_a_zero_tangent_at_nan_and_inf(op):
    assert_like_torch(lambda lib: tangent(lib, op, [NAN, INF, -INF, 1.5]))


REDUCTIONS = {
    "max()": lambda lib, x: x.max(),
    "min()": lambda lib, x: x.min(),
    "amax()": lambda lib, x: x.amax(),
    "max(0)": lambda lib, x: x.max(0)[0],
}


@pytest.mark.parametrize("x", [[NAN, 1.0, NAN], [2.0, 1.0, 2.0]], ids=["nan", "ties"])
@pytest.mark.parametrize("op", REDUCTIONS.values(), ids=REDUCTIONS.keys())
def test_max_of_all_has_torchs_tangent_at_nan(op, x):
    """max()'s gradient goes to the NaNs, but its tangent averages over the elements equal to
    the result: none, so NaN."""
    assert_like_torch(lambda lib: (gradients(lib, op, x), tangent(lib, op, x)))


NAN_FROM_ABOVE = {
    "max()": lambda lib, x: (x.max() * INF).sigmoid(),
    "min()": lambda lib, x: lib.nn.functional.silu(x.min() * -INF),
    "std of equal values": lambda lib, x: (x.std(-1) * INF).sigmoid(),
    "std() of equal values": lambda lib, x: (x[1].std() * INF).sigmoid(),
}


@pytest.mark.parametrize("op", NAN_FROM_ABOVE.values(), ids=NAN_FROM_ABOVE.keys())
def test_a_nan_gradient_from_above_stays_where_torch_puts_it(op):
    """max()/min() put grad / ties at the ties and 0 elsewhere; std's gradient is 0 where std
    is 0, whatever comes from above."""
    assert_like_torch(lambda lib: gradients(lib, op, [[2.0, 1.0, 2.0], [1.0, 1.0, 1.0]]))


PICKS = {
    "amax(-1)": lambda lib, x: x.log1p().amax(-1),
    "amin()": lambda lib, x: (-x.log1p()).amin(),
    "max()": lambda lib, x: x.log1p().max(),
    "min()": lambda lib, x: (-x.log1p()).min(),
}


@pytest.mark.parametrize("op", PICKS.values(), ids=PICKS.keys())
def test_an_infinite_tangent_elsewhere_reaches_max_but_not_amax(op):
    """torch's amax/amin tangent picks with where; max()/min()'s multiplies (inf · 0: NaN)."""
    assert_like_torch(lambda lib: tangent(lib, op, [2.0, 0.0, -1.0]))


def test_floor_divide_refuses_forward_ad_with_torchs_words():
    assert_like_torch(lambda lib: tangent(lib, lambda lib, x: x // 2.0, [1.0, 3.0]))


# --------------------------------------------------------------------------- empty tensors

EMPTY_ERRORS = {
    "max_pool2d of no rows": lambda F, lib: F.max_pool2d(lib.zeros(1, 1, 0, 3), 1),
    "max_pool2d of no channels": lambda F, lib: F.max_pool2d(lib.zeros(1, 0, 2, 2), 2, 1, 1),
    "max_pool2d, pad too large": lambda F, lib: F.max_pool2d(lib.zeros(1, 1, 0, 3), 1, 1, 1),
    "max_pool2d of 2-d": lambda F, lib: F.max_pool2d(lib.zeros(0, 3), 1, 1, 1),
    "avg_pool2d of no rows": lambda F, lib: F.avg_pool2d(lib.zeros(0, 2, 0), 1),
    "reshape nothing to -1, 0": lambda F, lib: lib.zeros(0, 3).reshape(1, -1, 0),
    "view nothing as -1, 0": lambda F, lib: lib.zeros(2, 0).view(-1, 0),
    "layer_norm over ()": lambda F, lib: F.layer_norm(lib.ones(3), ()),
    "layer_norm of 0-d": lambda F, lib: F.layer_norm(lib.ones(()), []),
    "amax(None) of nothing": lambda F, lib: lib.ones(0).amax(None),
    "amin(dim=None) of nothing": lambda F, lib: lib.amin(lib.ones(0, 2), dim=None, keepdim=True),
    "amax(None)": lambda F, lib: lib.ones(2, 3).amax(None),
}


@pytest.mark.parametrize("program", EMPTY_ERRORS.values(), ids=EMPTY_ERRORS.keys())
def test_empty_inputs_give_torchs_errors(program):
    assert_like_torch(lambda lib: as_numpy(program(lib.nn.functional, lib)))


POOLS = {
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(x, 2, 1, 1),
    "max_pool2d ceil": lambda lib, x: lib.nn.functional.max_pool2d(x, 2, 1, ceil_mode=True),
    "avg_pool2d": lambda lib, x: lib.nn.functional.avg_pool2d(x, 2, 1, 1),
}


@pytest.mark.parametrize("op", POOLS.values(), ids=POOLS.keys())
def test_pooling_an_empty_batch_gives_an_empty_result(op):
    assert_like_torch(lambda lib: gradients(lib, op, np.zeros((0, 1, 2, 2))))


# --------------------------------------------------------------------------- pooling


@pytest.mark.parametrize("op", POOLS.values(), ids=POOLS.keys())
def test_pooling_has_a_zero_second_derivative_not_an_unused_input(op):
    x = np.array([[2.0, 2.0, 1.0], [0.0, 2.0, -1.0]]).reshape(1, 1, 2, 3)
    assert_like_torch(lambda lib: second_derivative(lib, op, x))


@pytest.mark.parametrize(
    "x",
    [[[NAN, NAN, -0.0]], [[1.0, NAN], [NAN, 2.0]], [[-INF]], [[-INF, -INF], [-INF, 1.0]]],
    ids=["two nans", "nan square", "-inf", "-inf square"],
)
@pytest.mark.parametrize("op", POOLS.values(), ids=POOLS.keys())
def test_max_pool2d_picks_a_windows_last_nan_and_an_inside_pixel_for_minus_inf(op, x):
    """torch's kernel takes the last NaN of a window; where all is -inf, its first pixel
    inside the input (padding never wins)."""
    x = np.array(x).reshape(1, 1, len(x), -1)
    assert_like_torch(lambda lib: (gradients(lib, op, x), tangent(lib, op, x)))


NLL = {
    "nll_loss": lambda lib, x: lib.nn.functional.nll_loss(x.reshape(1, -1), lib.tensor([0])),
    "nll_loss of images": lambda lib, x: lib.nn.functional.nll_loss(
        x.reshape(1, -1, 1, 1), lib.zeros(1, 1, 1, dtype=lib.int64), reduction="sum"
    ),
}


@pytest.mark.parametrize("op", NLL.values(), ids=NLL.keys())
def test_nll_loss_has_a_zero_second_derivative_not_an_unused_input(op):
    """torch's gradient of nll_loss depends on its input (zero derivative), as pooling's."""
    assert_like_torch(lambda lib: second_derivative(lib, op, [2.0, NAN, -1.0]))


# --------------------------------------------------------------------------- binary_cross_entropy

BCE_RANGES = {
    "nan input": ([0.5, NAN], [0.5, 0.5]),
    "nan target": ([0.5, 0.5], [0.5, NAN]),
    "target 2": ([0.5], [2.0]),
    "target first": ([1.0, -2.0, NAN], [NAN, -2.0, -2.0]),
    "input first": ([-1.0, 0.5], [0.5, 3.0]),
}


@pytest.mark.no_standin("on a GPU the check is a device-side assert (test_sync_budget.py)")
@pytest.mark.parametrize(("x", "t"), BCE_RANGES.values(), ids=BCE_RANGES.keys())
def test_binary_cross_entropy_checks_input_and_target_in_order(x, t):
    """NaN is outside [0, 1] too; the first bad element (input before target) is named."""
    F = lambda lib: lib.nn.functional  # noqa: E731
    assert_like_torch(lambda lib: as_numpy(F(lib).binary_cross_entropy(leaf(lib, x), leaf(lib, t))))


@pytest.mark.no_standin("on a GPU the check is a device-side assert (test_sync_budget.py)")
def test_binary_cross_entropy_checks_in_the_order_of_the_inputs_memory():
    """torch's kernel reads the elements in the input's memory order (here transposed)."""

    def program(lib):
        x = leaf(lib, [[0.5, 0.5], [NAN, 0.5]]).t()
        return as_numpy(
            lib.nn.functional.binary_cross_entropy(x, leaf(lib, [[0.5, 0.5], [NAN, 0.5]]))
        )

    assert_like_torch(program)


def test_binary_cross_entropy_gradient_at_a_certain_probability_uses_torchs_epsilon():
    """At x = 1, t = 0 the denominator x(1-x) is clamped to torch's float32 1e-12."""
    op = lambda lib, x: lib.nn.functional.binary_cross_entropy(x, lib.zeros(3, dtype=lib.float64))  # noqa: E731
    assert_like_torch(lambda lib: gradients(lib, op, [1.0, 0.5, 0.0]))


# --------------------------------------------------------------------------- norm

NORM_P = [0, 0.5, 1, 1.5, 2, 3, INF, -INF, -1]
NORM_X = {
    "zeros": [0.0, 0.0],
    "one zero": [0.0, -2.0, 1.0],
    "inf": [-1.0, -INF, 1.0],
    "nan": [NAN, 1.0],
    "empty": [],
}


@pytest.mark.parametrize("x", NORM_X.values(), ids=NORM_X.keys())
@pytest.mark.parametrize("p", NORM_P)
def test_norm_gradients_at_zeros_and_infs(p, x):
    """p = 0 gives no gradient (None); p < 1 zero elements get 0; infinite elements -0.0."""
    if not x and (p < 0 or p == INF):
        x = [1.0]  # (the norm of nothing is refused: that has its own tests)
    op = lambda lib, t: t.norm(p)  # noqa: E731
    assert_like_torch(lambda lib: (gradients(lib, op, x), tangent(lib, op, x)))


@pytest.mark.parametrize("p", [0.5, 1.5, 2, 2.5, -1, "fro"])
def test_norm_second_derivative_at_a_zero_norm_is_nan_as_torchs(p):
    op = lambda lib, t: t.norm(p, dim=-1)  # noqa: E731
    assert_like_torch(lambda lib: second_derivative(lib, op, [[0.0], [-2.0], [0.0]]))


ONE_ELEMENT_NORMS = {
    "a vector of one": lambda lib, t, p: t[:1].norm(p),
    "0-d": lambda lib, t, p: t[1].norm(p),
    "rows of one": lambda lib, t, p: t.reshape(2, 1).norm(p, dim=1),
    "a dim of one, kept": lambda lib, t, p: t.reshape(1, 2).norm(p, dim=0, keepdim=True),
}


@pytest.mark.parametrize("how", ONE_ELEMENT_NORMS.values(), ids=ONE_ELEMENT_NORMS.keys())
@pytest.mark.parametrize("p", [0.5, 1, 2, 3, INF, -INF, -1])
def test_a_norm_of_one_element_is_its_magnitude_even_past_the_range_of_its_square(how, p):
    """The norm of 1e300 is 1e300 and of -1e-300 1e-300, as torch's, not a power taken
    back from inf or 0; and the gradients are torch's (nan where a power overflows)."""
    op = lambda lib, t: how(lib, t, p)  # noqa: E731
    assert_like_torch(lambda lib: gradients(lib, op, [1e300, -1e-300]))


def test_norm_0_gives_no_gradient():
    def program(lib):
        x = leaf(lib, [1.0, 0.0, 2.0])
        x.norm(0).backward()
        return as_numpy(x.grad), lib.autograd.grad(x.norm(0), x)

    assert_like_torch(program)


# --------------------------------------------------------------------------- prod

PROD_X = {
    "two zeros and inf": [0.0, -INF, 0.0],
    "one zero and inf": [INF, -0.0, -2.0],
    "one zero": [0.0],
    "no zero": [2.0],
    "0-d inf": -INF,
}


@pytest.mark.parametrize("x", PROD_X.values(), ids=PROD_X.keys())
@pytest.mark.parametrize("dim", [None, 0], ids=["prod()", "prod(0)"])
def test_prod_gradients_with_zeros_and_infs(x, dim):
    """Two zeros: torch's prod() gives zeros (no graph made); one element: grad itself."""
    op = (lambda lib, t: t.prod()) if dim is None else (lambda lib, t: t.prod(dim))  # noqa: E731

    def program(lib):
        leaves = [leaf(lib, x)]
        (g,) = lib.autograd.grad(op(lib, *leaves), leaves, create_graph=True)
        return gradients(lib, op, x), tangent(lib, op, x), g.requires_grad

    assert_like_torch(program)


# --------------------------------------------------------------------------- tangents of reductions

TANGENTS = {
    "logsumexp": lambda lib, x: x.logsumexp(-1),
    "std": lambda lib, x: x.std(-1),
    "std()": lambda lib, x: x.std(),
    "mse_loss": lambda lib, x: lib.nn.functional.mse_loss(x, lib.full_like(x, -INF)),
    "mse_loss to inf": lambda lib, x: lib.nn.functional.mse_loss(x, lib.zeros_like(x) + INF),
}
ROWS = {
    "empty": np.zeros((2, 0)),
    "-inf row": [[-INF, -INF], [1.0, 2.0]],
    "inf": [[INF, 1.0], [2.0, 2.0]],
    "equal": [[1.0, 1.0], [0.0, 2.0]],
}


@pytest.mark.parametrize("x", ROWS.values(), ids=ROWS.keys())
@pytest.mark.parametrize("op", TANGENTS.values(), ids=TANGENTS.keys())
def test_reductions_have_torchs_tangents_over_nothing_and_infinities(op, x):
    """logsumexp's tangent is over its weights' own sum (0 / 0 over nothing), std's is var's
    over 2·std, mse_loss reads a missing target tangent as 0 (inf · 0 is NaN)."""
    assert_like_torch(lambda lib: tangent(lib, op, x))


# --------------------------------------------------------------------------- powers and division

POWERS = {
    "x ** -0.5": lambda lib, x: x**-0.5,
    "x ** 0.5": lambda lib, x: x**0.5,
    "pow(x, 1.5)": lambda lib, x: lib.pow(x, 1.5),
    "0 ** x": lambda lib, x: 0**x,
}


@pytest.mark.parametrize("op", POWERS.values(), ids=POWERS.keys())
def test_powers_at_zero_and_infinity(op):
    """x ** -0.5 is 1 / sqrt(x) (-0.0 gives -inf, -inf NaN), as torch's rsqrt."""
    x = [-INF, -1.0, -0.0, 0.0, -2.0, INF, 4.0]

    def program(lib):
        with np.errstate(all="ignore"):
            return gradients(lib, op, x), second_derivative(lib, op, x), tangent(lib, op, x)

    assert_like_torch(program)


@pytest.mark.parametrize("ygrad", [True, False])
def test_tensor_power_second_derivative_at_zero_base(ygrad):
    """The slopes b·a^(b-1) and a^b·log(a) are taken and masked: NaN where torch has it."""

    def program(lib):
        x, y = leaf(lib, [0.0, 0.0, 0.0, 2.0, -1.0]), leaf(lib, [0.0, 1.0, 2.0, 0.0, 2.0], ygrad)
        leaves = [x, y] if ygrad else [x]
        grads = lib.autograd.grad((x**y).sum(), leaves, create_graph=True)
        return [as_numpy(g) for g in lib.autograd.grad(sum(g.sum() for g in grads), leaves)]

    assert_like_torch(program)


def test_division_by_infinity_has_a_finite_second_derivative():
    """The divisor's gradient is -grad·(a / b) / b, as torch's: not -grad·a / b², whose
    derivative is inf · 0 where b² overflows."""
    op = lambda lib, x, y: x / y  # noqa: E731
    assert_like_torch(lambda lib: second_derivative(lib, op, [2.0, 1.0], [-INF, 0.5]))


# --------------------------------------------------------------------------- products

PRODUCTS = {
    "mm": lambda lib, x, y: x.reshape(1, 2) @ y.reshape(2, 1),
    "bmm": lambda lib, x, y: x.reshape(1, 1, 2).bmm(y.reshape(1, 2, 1)),
    "mv": lambda lib, x, y: y.reshape(1, 2).mv(x),
    "vector @ matrix": lambda lib, x, y: x @ y.reshape(2, 1),
    "linear": lambda lib, x, y: lib.nn.functional.linear(x.reshape(1, 2), y.reshape(1, 2)),
    "linear with bias": lambda lib, x, y: lib.nn.functional.linear(
        x.reshape(1, 2), y.reshape(1, 2), y[:1]
    ),
    "einsum ij,jk->ik": lambda lib, x, y: lib.einsum("ij,jk->ik", x.reshape(1, 2), y.reshape(2, 1)),
    "einsum i,i->": lambda lib, x, y: lib.einsum("i,i->", x, y),
    "dot": lambda lib, x, y: x.dot(y),
    "einsum i,j->ij": lambda lib, x, y: lib.einsum("i,j->ij", x, y),
}


@pytest.mark.parametrize("dual", [(0,), (1,)], ids=["x", "y"])
@pytest.mark.parametrize("op", PRODUCTS.values(), ids=PRODUCTS.keys())
def test_matrix_products_read_a_missing_tangent_as_zeros(op, dual):
    """torch's tangent of a matrix product is dA·B + A·dB with zeros for the missing one, so
    an inf gives NaN (dot and outer products leave the missing term out)."""
    assert_like_torch(lambda lib: tangent(lib, op, [INF, 1.0], [2.0, INF], dual=dual))


EINSUM_BROADCASTS = {
    "i,i-> of 6 and 1": ("i,i->", (6,), (1,)),
    "ij,kj->ik of (2, 3) and (1, 3)": ("ij,kj->ik", (2, 3), (1, 3)),
    "ij,jk->ik of (2, 1) and (3, 2)": ("ij,jk->ik", (2, 1), (3, 2)),
}


@pytest.mark.parametrize(("spec", "a", "b"), EINSUM_BROADCASTS.values(), ids=EINSUM_BROADCASTS)
def test_einsum_gradient_of_a_broadcast_size_1_dim(spec, a, b):
    """A size-1 dim broadcast against the other operand: its gradient sums (it failed)."""
    op = lambda lib, x, y: lib.einsum(spec, x, y)  # noqa: E731
    x = np.arange(1.0, 1 + math.prod(a)).reshape(a)
    assert_like_torch(lambda lib: gradients(lib, op, x, np.full(b, 2.0)))


def test_einsum_gradient_of_one_operand():
    op = lambda lib, x: lib.einsum("ij->j", x)  # noqa: E731
    assert_like_torch(lambda lib: gradients(lib, op, [[1.0, 2.0], [3.0, 4.0]]))

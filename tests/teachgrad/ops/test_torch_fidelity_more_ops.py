"""Differences from torch found by a differential fuzzer over the ops the other fuzzers do
not draw (losses of ``nn.functional``, indexing ops, linear algebra, reductions with no
degrees of freedom, ``allclose``), each compared with torch across its variations: the same
program runs on both libraries, and either both raise (same class, same first line) or both
give the same values, gradients and second derivatives.
"""

import itertools
import warnings

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


# --------------------------------------------------------------------------- no degrees of freedom


@pytest.mark.parametrize("correction", [0, 1, 2, 5, float("inf"), float("nan")], ids=str)
@pytest.mark.parametrize("dim", ["all", 0, -1, (0,)], ids=str)
@pytest.mark.parametrize("shape", [(), (1,), (3,), (2, 3)], ids=str)
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_and_std_with_no_degrees_of_freedom_differentiate_as_torch(
    name, shape, dim, correction
):
    """Over all elements with N − correction ≤ 0, torch's var gradient is inf · sign(x − mean)
    (NaN where x = mean); over given dims it is 2 / (N − correction) · (x − mean), negative
    or infinite as that number is. The second derivative and the tangent follow."""

    def program(lib):
        x = lib.tensor(np.arange(1.0, 1 + np.prod(shape)).reshape(shape) % 3, requires_grad=True)
        kwargs = {} if dim == "all" else {"dim": dim}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ("degrees of freedom is <= 0", both libraries)
            y = getattr(x, name)(correction=correction, **kwargs)
            (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
            (gg,) = lib.autograd.grad(g.sum(), x, allow_unused=True)
            fw = lib.autograd.forward_ad
            with fw.dual_level():
                dual = fw.make_dual(x.detach(), lib.ones_like(x))
                tangent = fw.unpack_dual(getattr(dual, name)(correction=correction, **kwargs))[1]
        return [numpy(t) for t in (y, g, gg, tangent)]

    assert_like_torch(program)


# --------------------------------------------------------------------------- kernels by dtype

DTYPES = ["int64", "int32", "int8", "uint8", "bool", "float32", "float64"]


def _pair(lib, shape, dtype, target_dtype=None):
    x = lib.ones(shape, dtype=getattr(lib, dtype))
    return x, lib.ones(shape, dtype=getattr(lib, target_dtype or dtype))


KERNELS = {  # each op's input of every dtype: torch has a kernel for some, raises for the rest
    "nll_loss (N, C)": lambda lib, dt, n: lib.nn.functional.nll_loss(
        lib.ones(n, 3, dtype=getattr(lib, dt)), lib.zeros(n, dtype=lib.int64)
    ),
    "nll_loss (C,)": lambda lib, dt, n: lib.nn.functional.nll_loss(
        lib.ones(3, dtype=getattr(lib, dt)), lib.tensor(0)
    ),
    "nll_loss (N, C, d)": lambda lib, dt, n: lib.nn.functional.nll_loss(
        lib.ones(n, 3, 2, dtype=getattr(lib, dt)), lib.zeros(n, 2, dtype=lib.int64)
    ),
    "nll_loss (N, C, h, w)": lambda lib, dt, n: lib.nn.functional.nll_loss(
        lib.ones(n, 3, 1, 2, dtype=getattr(lib, dt)), lib.zeros(n, 1, 2, dtype=lib.int64)
    ),
    "nll_loss (N, C) with float32 class weights": lambda lib, dt, n: lib.nn.functional.nll_loss(
        lib.ones(n, 3, dtype=getattr(lib, dt)), lib.zeros(n, dtype=lib.int64), lib.ones(3)
    ),
    "binary_cross_entropy": lambda lib, dt, n: lib.nn.functional.binary_cross_entropy(
        *_pair(lib, (n, 2), dt)
    ),
    "binary_cross_entropy_with_logits": lambda lib, dt, n: (
        lib.nn.functional.binary_cross_entropy_with_logits(*_pair(lib, (n, 2), dt, "float32"))
    ),
    "max_pool2d": lambda lib, dt, n: lib.nn.functional.max_pool2d(
        lib.ones(n, 1, 2, 2, dtype=getattr(lib, dt)), 2
    ),
    "avg_pool2d": lambda lib, dt, n: lib.nn.functional.avg_pool2d(
        lib.ones(n, 1, 2, 2, dtype=getattr(lib, dt)), 2
    ),
    "conv2d": lambda lib, dt, n: lib.nn.functional.conv2d(
        lib.ones(n, 1, 2, 2, dtype=getattr(lib, dt)), lib.ones(1, 1, 1, 1, dtype=getattr(lib, dt))
    ),
}


@pytest.mark.parametrize("n", [2, 0], ids=["batch of 2", "empty batch"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", KERNELS.values(), ids=KERNELS.keys())
def test_losses_pools_and_conv_refuse_the_dtypes_torch_has_no_kernel_for(op, dtype, n):
    """An integer or bool input is torch's NotImplementedError naming its kernel (nll_loss of
    ints used to give a number), even for an empty batch where torch says so."""
    assert_like_torch(lambda lib: numpy(op(lib, dtype, n)))


BCE_TARGETS = {
    "logits, bool target": lambda lib, x, t: lib.nn.functional.binary_cross_entropy_with_logits(
        x, t.bool()
    ),
    "logits, int target": lambda lib, x, t: lib.nn.functional.binary_cross_entropy_with_logits(
        x, t.long()
    ),
    "logits, bool target, pos_weight of the wrong size": lambda lib, x, t: (
        lib.nn.functional.binary_cross_entropy_with_logits(x, t.bool(), pos_weight=lib.ones(3))
    ),
    "int logits, bool target": lambda lib, x, t: lib.nn.functional.binary_cross_entropy_with_logits(
        x.long(), t.bool()
    ),
    "int logits, pos_weight of the wrong size": lambda lib, x, t: (
        lib.nn.functional.binary_cross_entropy_with_logits(x.long(), t, pos_weight=lib.ones(3))
    ),
    "cross_entropy, int target of the input's shape": lambda lib, x, t: (
        lib.nn.functional.cross_entropy(x, t.long())
    ),
    "cross_entropy of ints, int target of the input's shape": lambda lib, x, t: (
        lib.nn.functional.cross_entropy(x.long(), t.long())
    ),
    "cross_entropy of a (C,) input, bool target of its shape": lambda lib, x, t: (
        lib.nn.functional.cross_entropy(x[0], t[0].bool())
    ),
}


@pytest.mark.parametrize("program", BCE_TARGETS.values(), ids=BCE_TARGETS.keys())
def test_loss_targets_of_the_wrong_dtype_meet_torch_s_first_check(program):
    """binary_cross_entropy_with_logits computes log_sigmoid(input), then (1 - target): its
    errors come in that order; cross_entropy reads a target of the input's shape as class
    probabilities, which must be floats, before it looks at the input."""
    assert_like_torch(lambda lib: numpy(program(lib, lib.ones(2, 2), lib.ones(2, 2))))


# --------------------------------------------------------------------------- small differences

SMALL = {
    "index_put_ of two indices into a 1-d tensor": lambda lib: lib.ones(3).index_put_(
        (lib.tensor([0]), lib.tensor([0])), lib.tensor(1.0)
    ),
    "index_put_ into a 0-d tensor": lambda lib: lib.tensor(1.0).index_put_(
        (lib.tensor([0, 0]),), lib.tensor(1.0)
    ),
    "index_put of three indices, float ones": lambda lib: lib.ones(3).index_put(
        (lib.tensor([0.5]), lib.tensor([0]), lib.tensor([0])), lib.tensor(1.0)
    ),
    "x[i, j] = v, too many (no count in torch's words)": lambda lib: lib.ones(3).__setitem__(
        (lib.tensor([0]), lib.tensor([0])), 1.0
    ),
    "allclose of float64 and float32": lambda lib: lib.allclose(
        lib.ones(2, dtype=lib.float64), lib.ones(2)
    ),
    "allclose of int64 and float32, shapes apart": lambda lib: lib.allclose(
        lib.ones(2, dtype=lib.int64), lib.ones(3)
    ),
    "allclose with a number": lambda lib: lib.allclose(lib.ones(2), 1.0),
    "Tensor.allclose with a number": lambda lib: lib.ones(2).allclose(1.0),
    "allclose with a string rtol": lambda lib: lib.allclose(lib.ones(1), lib.ones(1), "x"),
    "allclose with an int equal_nan": lambda lib: lib.allclose(
        lib.ones(1), lib.ones(1), equal_nan=1
    ),
    "index_select(1) out of bounds": lambda lib: lib.ones(4, 4).index_select(
        1, lib.tensor([0, 9, -5])
    ),
    "index_select(-1) negative": lambda lib: lib.ones(4, 4).index_select(-1, lib.tensor([-1])),
    "index_select(1) of a 3-d tensor": lambda lib: lib.ones(3, 4, 2).index_select(
        1, lib.tensor([4])
    ),
    "index_select(2) of a 3-d tensor": lambda lib: lib.ones(3, 4, 2).index_select(
        2, lib.tensor([2])
    ),
    "index_select(0) negative": lambda lib: lib.ones(4, 4).index_select(0, lib.tensor([-1])),
    "index_select(0) of an empty 2-d tensor": lambda lib: lib.ones(2, 0).index_select(
        0, lib.tensor([0, -1])
    ),
    "index_select(1) of an empty 2-d tensor": lambda lib: lib.ones(0, 2).index_select(
        1, lib.tensor([5])
    ),
    "index_select(0) along an empty dim": lambda lib: lib.ones(0, 2).index_select(
        0, lib.tensor([0])
    ),
    "mv of a 0-d matrix": lambda lib: lib.mv(lib.ones(()), lib.ones(3)),
    "mv of a 0-d vector": lambda lib: lib.mv(lib.ones(2, 3), lib.ones(())),
    "unflatten(0) of a 0-d tensor": lambda lib: lib.ones(()).unflatten(0, (1, -1)),
    "unflatten(-1) of a 0-d tensor": lambda lib: lib.ones(()).unflatten(-1, (1,)),
    "unflatten(1) of a 0-d tensor": lambda lib: lib.ones(()).unflatten(1, (1,)),
    "square_ of floats": lambda lib: lib.tensor([1.5, -2.0]).square_(),
    "square_ of ints": lambda lib: lib.tensor([3, -2]).square_(),
    "square_ of bools": lambda lib: lib.ones(2, dtype=lib.bool).square_(),
}


@pytest.mark.parametrize("program", SMALL.values(), ids=SMALL.keys())
def test_small_differences(program):
    def outcome(lib):
        result = program(lib)
        return None if result is None else numpy(result)  # (x[i] = v returns nothing)

    assert_like_torch(outcome)


def test_square_in_place_through_a_view_rewrites_the_graph():
    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        y = x * 1
        y[:2].square_()
        y.sum().backward()
        return numpy(x.grad), y.grad_fn.name(), y._version

    assert_like_torch(program)


@pytest.mark.parametrize(
    "weight_shape, indices",
    [((2, 0), [[0, 1], [1, 1]]), ((0, 3), []), ((2, 3), [[]]), ((2, 0), [])],
    ids=["no columns", "no rows", "no indices", "neither"],
)
def test_embedding_of_empty_shapes_differentiates(weight_shape, indices):
    def program(lib):
        w = lib.ones(weight_shape, requires_grad=True)
        idx = lib.tensor(indices, dtype=lib.int64)
        out = lib.nn.functional.embedding(idx, w)
        (g,) = lib.autograd.grad(out.sum(), w, create_graph=True)
        return tuple(out.shape), numpy(g)

    assert_like_torch(program)


@pytest.mark.parametrize("bool_first", [True, False], ids=["bool input", "bool target"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss_with_bools_differentiates_the_other_side(reduction, bool_first):
    def program(lib):
        t = lib.tensor([0.0, 1.0, 0.5], requires_grad=True)
        bools = lib.tensor([True, False, True])
        pair = (bools, t) if bool_first else (t, bools)
        loss = lib.nn.functional.mse_loss(*pair, reduction=reduction)
        loss.sum().backward()
        return numpy(loss), abs(numpy(t.grad))  # (torch's zero gradient is +0, teachgrad's -0)

    assert_like_torch(program)


# --------------------------------------------------------------------------- unfold


def _unfold_facts(lib, shape, args, transposed):
    x = lib.tensor(np.arange(1.0, 1.0 + np.prod(shape)).reshape(shape), requires_grad=True)
    source = x.mT if transposed else x
    u = source.unfold(*args)
    w = lib.tensor(np.random.default_rng(0).standard_normal(tuple(u.shape)), requires_grad=True)
    (g,) = lib.autograd.grad((u * w).sum(), x, create_graph=True)
    (gg,) = lib.autograd.grad((g * g).sum(), w)
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        dual = fw.make_dual(source.detach(), lib.ones_like(source))
        tangent = fw.unpack_dual(dual.unfold(*args)).tangent
    facts = (tuple(u.shape), u.grad_fn.name(), u._is_view(), g.grad_fn.name())
    strides = u.stride() if u.numel() else None  # (torch gives some empty inputs 0 strides)
    return facts, strides, [numpy(t) for t in (u, g, gg, tangent)]


@pytest.mark.parametrize("step", [1, 2, 0, -1])
@pytest.mark.parametrize("size", [0, 1, 2, 3, 7, -1])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
@pytest.mark.parametrize(
    "shape, transposed",
    [
        ((), False),
        ((6,), False),
        ((3, 4), False),
        ((3, 4), True),
        ((2, 3, 4), False),
        ((2, 0), False),
    ],
    ids=["0-d", "(6,)", "(3, 4)", "(3, 4).mT", "(2, 3, 4)", "(2, 0)"],
)
def test_unfold_is_torch_s_view_of_windows(shape, transposed, dim, size, step):
    """Windows that overlap (step < size) add up in the gradient; torch's errors for a
    window too long, a negative size, a step that is not positive, a dim out of range."""
    assert_like_torch(lambda lib: _unfold_facts(lib, shape, (dim, size, step), transposed))


@pytest.mark.parametrize("args", [(1, 3, 1), (1, 2, 2), (0, 2, 1), (-1, 5, 3)], ids=str)
def test_unfold_passes_gradcheck_and_gradgradcheck(args):
    import teachgrad as tg

    x = tg.tensor(np.random.default_rng(1).standard_normal((3, 5)), requires_grad=True)
    assert tg.autograd.gradcheck(lambda t: t.unfold(*args), (x,))
    assert tg.autograd.gradgradcheck(lambda t: t.unfold(*args), (x,))


def test_unfold_writes_through_to_its_base():
    def program(lib):
        base = lib.zeros(5)
        windows = base.unfold(0, 2, 2)
        windows[1, 0] = 7.0
        return numpy(base), windows._version == base._version

    assert_like_torch(program)


# --------------------------------------------------------------------------- alpha=True


@pytest.mark.parametrize("form", ["function", "method", "in place"])
@pytest.mark.parametrize("alpha", [True, False, 2, 0.5])
@pytest.mark.parametrize("other", ["same", "float32", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool"])
@pytest.mark.parametrize("op", ["add", "sub"])
def test_a_bool_alpha_needs_a_bool_result(op, dtype, other, alpha, form):
    """``alpha=True`` equals 1 in Python, but torch refuses it (and False) unless the result
    is bool; a float alpha needs a float result. In place, whether the tensor can hold the
    result is checked first (``ints.add_(floats, alpha=True)``: the cast's error)."""

    def program(lib):
        a = lib.ones(2, dtype=getattr(lib, dtype))
        b = lib.ones(2, dtype=getattr(lib, dtype if other == "same" else other))
        if form == "function":
            return numpy(getattr(lib, op)(a, b, alpha=alpha))
        if form == "method":
            return numpy(getattr(a, op)(b, alpha=alpha))
        return numpy(getattr(a, op + "_")(b, alpha=alpha))

    assert_like_torch(program)


CONV_INPUTS = {
    "a float32 batch of 2, float64 weight": ((2, 1, 3, 3), "float32", "float64", 0),
    "a float32 batch of 3 with bias, float64 weight": ((3, 1, 1, 1), "float32", "float64", 0),
    "a float32 batch of 1, float64 weight": ((1, 3, 4, 4), "float32", "float64", 0),
    "a float64 batch of 2, float32 weight": ((2, 1, 3, 3), "float64", "float32", 0),
    "an empty batch, weight of another dtype": ((0, 1, 2, 2), "float32", "float64", 1),
    "images of no columns, padded": ((1, 1, 2, 0), "float32", "float32", 1),
    "images of no columns, not padded": ((1, 1, 2, 0), "float32", "float64", 0),
    "images of no rows, padded": ((2, 1, 0, 2), "float64", "float64", 1),
}


@pytest.mark.parametrize("case", CONV_INPUTS.values(), ids=CONV_INPUTS.keys())
def test_conv2d_checks_sizes_then_dtypes_as_torch(case):
    shape, dtype, weight_dtype, padding = case

    def program(lib):
        x = lib.ones(shape, dtype=getattr(lib, dtype))
        w = lib.ones(1, shape[1], 1, 1, dtype=getattr(lib, weight_dtype))
        return numpy(lib.nn.functional.conv2d(x, w, padding=padding))

    assert_like_torch(program)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize(
    "shape, target_shape",
    [
        ((2, 3), ()),
        ((2, 1, 3), ()),
        ((0, 3), ()),
        ((1, 3), ()),
        ((2, 3, 4), (3, 4)),
        ((0, 3), (0,)),
    ],
    ids=str,
)
def test_a_0d_target_of_a_batch_is_torch_s_batch_size_error(loss, shape, target_shape):
    """torch reads a 0-d target's batch size as 0 (an IndexError when the batch is empty)."""

    def program(lib):
        target = lib.zeros(target_shape, dtype=lib.int64)
        return numpy(getattr(lib.nn.functional, loss)(lib.ones(shape), target))

    assert_like_torch(program)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "bool"])
@pytest.mark.parametrize(
    "program",
    [
        lambda lib, x: x.expand_as(lib.ones(1)),
        lambda lib, x: x.expand(3),
        lambda lib, x: lib.ones(3, dtype=x.dtype).__setitem__(0, x[:, :1]),
    ],
    ids=["expand_as", "expand", "x[0] = a (2, 1) value"],
)
def test_expand_with_too_few_sizes_names_the_tensor_s_own_type(program, dtype):
    """torch's message names the legacy type of the tensor expanded (DoubleTensor ...)."""
    assert_like_torch(lambda lib: numpy(program(lib, lib.ones(2, 3, dtype=getattr(lib, dtype)))))


# --------------------------------------------------------------------------- layer_norm's checks


@pytest.mark.parametrize("normalized_shape", [(3,), ()], ids=str)
@pytest.mark.parametrize("input_shape", [(2, 3), (2, 4)], ids=str)
@pytest.mark.parametrize("weight_shape", [(3,), (2,)], ids=str)
@pytest.mark.parametrize("bias_dtype", [None, "float32", "float64"])
@pytest.mark.parametrize("weight_dtype", [None, "float32", "float64", "int64"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "float16"])
def test_layer_norm_checks_in_torch_s_order(
    dtype, weight_dtype, bias_dtype, weight_shape, input_shape, normalized_shape
):
    """torch's CPU layer_norm: parameters of another dtype than the input ("mixed") first,
    then normalized_shape, the weight's and bias's shapes, the input's shape, the kernel's
    dtype, and last a bias of another dtype than a weight of the input's."""

    def program(lib):
        x = lib.ones(input_shape, dtype=getattr(lib, dtype))
        w = (
            None
            if weight_dtype is None
            else lib.ones(weight_shape, dtype=getattr(lib, weight_dtype))
        )
        b = None if bias_dtype is None else lib.ones(3, dtype=getattr(lib, bias_dtype))
        return numpy(lib.nn.functional.layer_norm(x, normalized_shape, w, b).float())

    assert_like_torch(program)


# --------------------------------------------------------------------------- conv2d, no channels


@pytest.mark.parametrize(
    "x_shape, w_shape, kwargs",
    [
        ((1, 0, 4, 4), (2, 0, 3, 3), {"bias": True}),
        ((2, 0, 4, 4), (4, 0, 3, 3), {"groups": 2}),
        ((0, 0, 4, 4), (2, 0, 3, 3), {}),
        ((1, 0, 4, 4), (2, 0, 1, 1), {"padding": 1, "stride": 2}),
    ],
    ids=str,
)
def test_conv2d_of_an_input_with_no_channels_has_no_channels(x_shape, w_shape, kwargs):
    """torch's conv2d of a zero-channel input gives zero output channels whatever the
    filters, and zero gradients for the input, the filters and the bias."""

    def program(lib):
        x = lib.ones(x_shape, dtype=lib.float64, requires_grad=True)
        w = lib.ones(w_shape, dtype=lib.float64, requires_grad=True)
        b = lib.ones(w_shape[0], dtype=lib.float64, requires_grad=True)
        options = {k: v for k, v in kwargs.items() if k != "bias"}
        y = lib.nn.functional.conv2d(x, w, b if kwargs.get("bias") else None, **options)
        y.sum().backward()
        b_grad = None if b.grad is None else numpy(b.grad)
        return [tuple(y.shape), y.stride(), numpy(x.grad), numpy(w.grad), b_grad]

    assert_like_torch(program)


# --------------------------------------------------------------------------- einsum's dtypes

EINSUMS = [
    ("ij,jk->ik", (3, 1), (1, 4)),
    ("ij,jk->ik", (3, 2), (2, 4)),
    ("ij,jk->ik", (3, 1), (2, 4)),
    ("i,i->", (1,), (1,)),
    ("i,i->", (3,), (3,)),
    ("i,i->", (0,), (0,)),
    ("ij,j->i", (2, 1), (1,)),
    ("i,j->ij", (2,), (3,)),
    ("ij,jk,kl->il", (2, 3), (3, 1), (1, 2)),
    ("ij,jk,kl->il", (2, 1), (1, 3), (3, 2)),
    ("i,i,i->", (3,), (1,), (3,)),
    ("ab,bc,c->a", (2, 1), (1, 1), (1,)),
]
EINSUM_DTYPES = ["float32", "float64", "int64", "bool"]


@pytest.mark.parametrize(
    "equation, shapes, dtypes",
    [
        (eq, shapes, dtypes)
        for eq, *shapes in EINSUMS
        for dtypes in itertools.product(EINSUM_DTYPES, repeat=len(shapes))
        # (torch's empty product takes the last operand's dtype: an integer result that
        # requires grad, which teachgrad's integer tensors never do; see the docs)
        if not (0 in shapes[0] and dtypes[-1] in ("int64", "bool") and "float" in dtypes[0])
    ],
    ids=str,
)
def test_einsum_promotes_where_torch_multiplies_elementwise(equation, shapes, dtypes):
    """torch's einsum multiplies its operands pair by pair: a pair that sums a letter both hold
    at a size other than 1 goes through bmm (one dtype, no bools: torch's errors), any other
    pair is an elementwise product, which promotes; an empty product has the later operand's
    dtype. Values, dtypes and gradients as torch."""

    def program(lib):
        ops = [
            lib.ones(s, dtype=getattr(lib, d)) * (2 if d != "bool" else 1)
            for s, d in zip(shapes, dtypes)
        ]
        ops = [o.requires_grad_() if o.is_floating_point() else o for o in ops]
        r = lib.einsum(equation, *ops)
        facts = [str(r.dtype).split(".")[1], numpy(r)]
        if r.requires_grad:
            grads = lib.autograd.grad(r.sum(), [o for o in ops if o.requires_grad])
            facts += [(str(g.dtype).split(".")[1], numpy(g)) for g in grads]
        return facts

    assert_like_torch(program)


@pytest.mark.parametrize("dim", [None, 0])
@pytest.mark.parametrize("name", ["var", "std"])
def test_a_nan_correction_divides_by_zero_silently(name, dim):
    """torch divides by max(0, N − NaN), which is 0, and warns of nothing (its "degrees of
    freedom" check is false for NaN): inf, or NaN where the values are all equal."""

    def program(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            x = lib.tensor([[1.0, 2.0, 4.0], [3.0, 3.0, 3.0]], dtype=lib.float64)
            return numpy(getattr(x, name)(dim=dim, correction=float("nan")))

    assert_like_torch(program)


# ------------------------------------------ nll_loss and cross_entropy: weights summing to 0


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("ignore_index", [-100, 0, 1])
@pytest.mark.parametrize("weight", [None, [1.0, 0.0], [0.0, 0.0], [1.0, -1.0], [2.0, 3.0]])
def test_class_weights_and_ignored_targets_give_torch_s_loss_and_gradient(
    torch, loss, reduction, ignore_index, weight
):
    """'mean' divides by the total weight of the counted targets, also when it is 0 (nan or
    inf, in the loss and in the gradient, as torch); an ignored sample's gradient is 0."""

    def run(lib):
        x = lib.tensor([[0.5, 1.5], [0.2, 0.1]], dtype=lib.float64, requires_grad=True)
        w = None if weight is None else lib.tensor(weight, dtype=lib.float64)
        out = getattr(lib.nn.functional, loss)(
            x, lib.tensor([1, 0]), weight=w, ignore_index=ignore_index, reduction=reduction
        )
        out.sum().backward()
        return numpy(out), numpy(x.grad)

    for got, want in zip(run(tg), run(torch), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0, equal_nan=True)


# --------------------------------------------------------------------------- unsafe_split / unsafe_chunk


@pytest.mark.parametrize(
    "op",
    [
        "unsafe_split(2, 1)",
        "unsafe_chunk(2, 2)",
        "unsafe_split_with_sizes([1, 2], 1)",
        "split(2, 1)",
    ],
)
def test_unsafe_pieces_share_memory_but_not_the_version_counter(op):
    """The unsafe_ ops' pieces lie on the input's memory (a change of one shows in the other)
    but are no views: no _base, a version counter of their own, and changing them in place
    is allowed (split's views refuse it)."""

    def program(lib):
        x = lib.arange(24.0).reshape(2, 3, 4)
        piece = eval(f"x.{op}")[0]  # noqa: S307 - the op's own text, from the table above
        before = piece._version
        x.add_(100)
        facts = [piece._base is x, piece._version - before, numpy(piece)]
        y = lib.ones(2, 3, requires_grad=True) * 1
        eval(f"y.{op.replace(', 2)', ', 1)')}")[0].mul_(2)  # noqa: S307
        return facts, piece.data_ptr() - x.data_ptr(), numpy(y), y.grad_fn.name()

    assert_like_torch(program)


# --------------------------------------------------------------------------- median and nanmedian

MEDIAN_LINES = {
    "odd": [3.0, 1.0, 2.0],
    "even: the lower middle": [4.0, 1.0, 3.0, 2.0],
    "ties": [2.0, 1.0, 2.0, 1.0, 2.0, 1.0],
    "all equal": [5.0, 5.0, 5.0, 5.0],
    "a NaN": [float("nan"), 5.0, 4.0, 5.0],
    "NaNs around": [float("nan"), 1.0, float("nan"), 2.0, float("nan")],
    "NaNs after": [1.0, float("nan"), float("nan"), float("nan")],
    "-0.0 and 0.0": [0.0, -0.0, 1.0, -0.0],
    "one NaN only": [float("nan")],
}


@pytest.mark.parametrize("line", MEDIAN_LINES.values(), ids=MEDIAN_LINES.keys())
@pytest.mark.parametrize("name", ["median", "nanmedian"])
def test_median_picks_torch_s_element_and_sends_it_the_gradient(name, line):
    """Of equal values torch picks by position (the median's rank among (value, index)
    pairs); a NaN makes median NaN (its first NaN chosen) and is skipped by nanmedian. The
    gradient goes to the chosen index; without dim it is shared by every tie (NaNs too)."""

    def program(lib):
        x = lib.tensor([line, line[::-1]], dtype=lib.float64, requires_grad=True)
        values, indices = getattr(x, name)(dim=1)
        all_of = getattr(x, name)()
        (g_dim,) = lib.autograd.grad(values.sum(), x)
        (g_all,) = lib.autograd.grad(all_of, x)
        return numpy(values), numpy(indices), numpy(g_dim), numpy(all_of), numpy(g_all)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "call",
    [
        "x.median()",
        "x.median(0)",
        "x.nanmedian()",
        "x.nanmedian(1, keepdim=True)",
        "x.median(-1, True)",
        "x.int().median(0)",
        "x.bool().median()",
        "x.bool().median(0)",
        "x.bool().nanmedian()",
        "x[:, :0].median(1)",
        "x[:, :0].nanmedian(-1)",
        "x[:, :0].median(0)",
        "x[:0].median()",
        "x.median(2)",
        "x.median(0.5)",
        "x.median(keepdim=True)",
        "x.t().median(1)",
    ],
)
def test_median_s_results_and_errors_are_torch_s(call):
    """Values, indices, dtypes, strides, and torch's errors (bools, an empty dim, a bad dim)."""

    def program(lib):
        x = lib.tensor([[3.0, 1.0, 2.0], [0.0, -1.0, 7.0]])  # noqa: F841 - read by eval
        out = eval(call)  # noqa: S307 - the table's own text
        parts = out if isinstance(out, tuple) else (out,)
        return type(out).__name__, [(numpy(t), t.stride()) for t in parts]

    assert_like_torch(program)


# --------------------------------------------------------------------------- nextafter


def test_nextafter_steps_as_torch_and_differentiates_as_torch():
    """One float step towards other (other itself where equal, NaN with a NaN); torch's
    gradient is grad where self != other, else 0, and zeros (no graph) for other; its tangent
    is self's, masked the same way."""
    nan = float("nan")

    def program(lib):
        a = lib.tensor([1.0, 2.0, 2.0, 0.0, -0.0, nan, 1.0], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([2.0, 2.0, 0.0, -0.0, 1.0, 1.0, nan], dtype=lib.float64, requires_grad=True)
        out = lib.nextafter(a, b)
        up = lib.arange(1.0, 8.0, dtype=lib.float64)
        ga, gb = lib.autograd.grad(out, (a, b), up, create_graph=True)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(a.detach(), lib.ones_like(a))
            tangent = fw.unpack_dual(dual.nextafter(b.detach())).tangent
        facts = (out.grad_fn.name(), gb.requires_grad, out.dtype == lib.float64)
        return facts, numpy(out), numpy(ga), numpy(gb), numpy(tangent)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "call",
    [
        "lib.nextafter(lib.tensor([1.0]), lib.tensor(2.0, dtype=lib.float64))",
        "lib.nextafter(lib.tensor([1.0, 2.0]), lib.tensor([[2.0], [0.0]]))",
        "lib.nextafter(lib.tensor([1.0], dtype=lib.float16), lib.tensor([2.0], dtype=lib.float16))",
        "lib.nextafter(lib.tensor([1, 2]), lib.tensor([3, 1]))",
        "lib.nextafter(lib.tensor([1.0]), 2.0)",
        "lib.tensor([1.0]).nextafter(2.0)",
    ],
)
def test_nextafter_s_dtypes_broadcasting_and_errors_are_torch_s(call):
    assert_like_torch(lambda lib: numpy(eval(call)))  # noqa: S307 - the table's own text


# --------------------------------------------------------------------------- addbmm


def test_addbmm_with_beta_zero_ignores_input_and_addbmm__writes_in_place():
    """beta = 0: the input's NaNs do not show (its gradient is grad · 0); addbmm_ records
    AddbmmBackward0 as the tensor's new history and bumps its version."""

    def program(lib):
        x = lib.full((2, 3), float("nan"), dtype=lib.float64, requires_grad=True)
        b1 = lib.ones(4, 2, 5, dtype=lib.float64, requires_grad=True)
        b2 = lib.ones(4, 5, 3, dtype=lib.float64)
        out = lib.addbmm(x, b1, b2, beta=0, alpha=0.5)
        (g,) = lib.autograd.grad(out.sum(), x)
        y = x.detach() * 1
        y.requires_grad_()
        z = y * 2
        z.addbmm_(b1, b2, beta=2)
        z.sum().backward()
        return numpy(out), numpy(g), z.grad_fn.name(), z._version, numpy(y.grad)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "call",
    [
        "lib.addbmm(lib.ones(3, 5), lib.ones(4, 3, 2), lib.ones(4, 2, 5), beta=2, alpha=3)",
        "lib.ones(5).addbmm(lib.ones(4, 3, 2), lib.ones(4, 2, 5))",
        "lib.addbmm(lib.ones(3, 5, dtype=lib.int64), lib.ones(4, 3, 2, dtype=lib.int64), "
        "lib.ones(4, 2, 5, dtype=lib.int64), alpha=2)",
        "lib.addbmm(lib.ones(3, 5), lib.ones(0, 3, 2), lib.ones(0, 2, 5))",
    ],
)
def test_addbmm_s_results_are_torch_s(call):
    assert_like_torch(lambda lib: (numpy(eval(call)), eval(call).stride()))  # noqa: S307


# --------------------------------------------------------------------------- pdist

PDIST_INPUTS = {
    "distinct rows": [[0.0, 1.0, 2.0], [1.0, -1.0, 4.0], [3.0, 1.0, 2.5], [0.5, 0.5, 0.5]],
    "equal rows": [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0], [1.0, -1.0, 4.0]],
    "rows equal in one column": [[1.0, 2.0], [1.0, 5.0]],
    "ties of the largest entry": [[0.0, 0.0], [1.0, -1.0]],
    "one row": [[1.0, 2.0]],
    "no columns": [[], [], []],
}


@pytest.mark.parametrize("rows", PDIST_INPUTS.values(), ids=PDIST_INPUTS.keys())
@pytest.mark.parametrize("p", [2, 1, 0, float("inf"), 3, 0.5, 1.5])
def test_pdist_values_and_gradient_are_torch_s(p, rows):
    """torch's gradient where the norm has no slope: 0 at equal rows, 0 at a zero entry for
    p < 1, and each of the tied largest entries gets the whole slope for p = inf."""

    def program(lib):
        x = lib.tensor(rows, dtype=lib.float64, requires_grad=True)
        out = lib.nn.functional.pdist(x, p)
        up = lib.arange(1.0, 1.0 + out.numel(), dtype=lib.float64)
        (g,) = lib.autograd.grad(out, x, up, create_graph=True)
        node = out.grad_fn
        facts = (node.name(), node._saved_p, g.grad_fn.name(), out.stride())
        return facts, numpy(out), numpy(g)

    assert_like_torch(program)


def test_pdist_passes_gradcheck():
    x = tg.tensor(np.random.default_rng(3).standard_normal((4, 3)), requires_grad=True)
    for p in (2, 1, 3, 0.5, float("inf")):
        assert tg.autograd.gradcheck(lambda t, p=p: tg.pdist(t, p), (x,))


@pytest.mark.parametrize(
    "call",
    [
        "lib.autograd.grad(lib.autograd.grad(lib.pdist(x).sum(), x, create_graph=True)[0].sum(), x)",
        "fw_pdist(lib, x)",
        "lib.pdist(x[0])",
        "lib.pdist(x[None])",
        "lib.pdist(x, -1)",
        "lib.pdist(x.long())",
        "lib.pdist(x.t())",
        "lib.pdist(x.float(), p=1.0)",
    ],
)
def test_pdist_s_errors_and_missing_derivatives_are_torch_s(call):
    """No second derivative and no forward-mode tangent, as torch; bad inputs fail at the
    call with torch's errors."""

    def fw_pdist(lib, x):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            return fw.unpack_dual(lib.pdist(fw.make_dual(x.detach(), lib.ones_like(x)))).tangent

    def program(lib):
        x = lib.tensor([[0.0, 1.0], [2.0, 0.5], [1.0, 1.0]], dtype=lib.float64, requires_grad=True)
        out = eval(call, {"lib": lib, "x": x, "fw_pdist": fw_pdist})  # noqa: S307
        return numpy(out if not isinstance(out, tuple) else out[0])

    assert_like_torch(program)


# --------------------------------------------------------------------------- empty_strided


@pytest.mark.parametrize(
    "call",
    [
        "lib.empty_strided((2, 3), (1, 2))",
        "lib.empty_strided([2, 3], [3, 1], dtype=lib.float64, requires_grad=True)",
        "lib.empty_strided((2, 3), (0, 1))",
        "lib.empty_strided((), ())",
        "lib.empty_strided((2, 3), (1,))",
        "lib.empty_strided((2, -3), (1, 2))",
        "lib.empty_strided((2, 3), (1, -2))",
        "lib.empty_strided(2, 3)",
        "lib.empty_strided((2, 3), (3, 1), dtype=lib.int64, requires_grad=True)",
        "lib.empty_strided((2, 3), (1, 2), layout=lib.strided, device='cpu', pin_memory=False)",
    ],
)
def test_empty_strided_is_torch_s(call):
    """Its shape, strides, dtype and flags (not its values: they are whatever memory held)."""

    def program(lib):
        t = eval(call)  # noqa: S307 - the table's own text
        facts = (tuple(t.shape), t.stride(), str(t.dtype).split(".")[-1], t.requires_grad)
        return facts + (t.is_contiguous(), t._base is None, t.storage_offset())

    assert_like_torch(program)

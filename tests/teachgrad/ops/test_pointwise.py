"""Elementwise ops: gradients are right (gradcheck, gradgradcheck), and values, gradients,
dtypes and node names match PyTorch; binary ops broadcast and promote dtypes like torch.

Every op is a row ``(name, fn(lib, *inputs), inputs)`` run against teachgrad in
float64 by gradcheck/gradgradcheck and against torch (float32 and float64).
Inputs are kept away from points where an op is not differentiable (see the
``domain`` of each input in ``_cases.DOMAINS``).
"""

import itertools
import math
import tracemalloc

import numpy as np
import pytest

import teachgrad as tg

from ._cases import (
    A,
    assert_raises_like_torch,
    assert_same_error,
    case_id,
    compare_with_torch,
    node_name,
    run_gradchecks,
    to_numpy,
)

# --------------------------------------------------------------------------- the tables

# shapes every unary op runs on: 0-d, 1-d, 2-d, 3-d, and two non-contiguous leaves
UNARY_SHAPES = [(), (5,), (3, 4), (2, 3, 4)]
UNARY_LAYOUTS = [((3, 4), "transposed"), ((6,), "strided")]


def unary_inputs(domain):
    args = [(A(*s, domain=domain),) for s in UNARY_SHAPES]
    args += [(A(*s, domain=domain, layout=lay),) for s, lay in UNARY_LAYOUTS]
    return args


# name -> (fn(lib, x), domain of x)
UNARY = {
    "neg": (lambda lib, x: -x, "real"),
    "neg()": (lambda lib, x: lib.neg(x), "real"),
    "abs": (lambda lib, x: x.abs(), "nonzero"),
    "abs-operator": (lambda lib, x: abs(x), "nonzero"),
    "reciprocal": (lambda lib, x: x.reciprocal(), "nonzero"),
    "logit": (lambda lib, x: x.logit(), "probability"),
    "logit(eps)": (lambda lib, x: lib.logit(x, eps=0.05), "probability"),
    "sqrt": (lambda lib, x: x.sqrt(), "positive"),
    "rsqrt": (lambda lib, x: lib.rsqrt(x), "positive"),
    "exp": (lambda lib, x: x.exp(), "real"),
    "log": (lambda lib, x: lib.log(x), "positive"),
    "log1p": (lambda lib, x: x.log1p(), "unit"),
    "expm1": (lambda lib, x: x.expm1(), "real"),
    "sin": (lambda lib, x: x.sin(), "real"),
    "cos": (lambda lib, x: lib.cos(x), "real"),
    "tan": (lambda lib, x: x.tan(), "unit"),
    "tanh": (lambda lib, x: x.tanh(), "real"),
    "sigmoid": (lambda lib, x: lib.sigmoid(x), "real"),
    "relu": (lambda lib, x: x.relu(), "nonzero"),
    "square": (lambda lib, x: x.square(), "real"),
    "sign": (lambda lib, x: x.sign(), "nonzero"),
    "floor": (lambda lib, x: x.floor(), "midhalf"),
    "ceil": (lambda lib, x: lib.ceil(x), "midhalf"),
    "round": (lambda lib, x: x.round(), "midhalf"),
    "clamp(numbers)": (lambda lib, x: x.clamp(-0.5, 0.5), "midhalf"),
    "clamp(min only)": (lambda lib, x: lib.clamp(x, min=0.0), "midhalf"),
    "clamp(max only)": (lambda lib, x: x.clamp(max=1.0), "midhalf"),
    "clip": (lambda lib, x: x.clip(-1, 1), "midhalf"),
    "x ** 2": (lambda lib, x: x**2, "real"),
    "x ** 3": (lambda lib, x: x**3, "real"),
    "x ** 0": (lambda lib, x: x**0, "real"),
    "x ** 0.5": (lambda lib, x: x**0.5, "positive"),
    "x ** -1.5": (lambda lib, x: x**-1.5, "positive"),
    "pow(x, 3)": (lambda lib, x: lib.pow(x, 3), "real"),
    "2 ** x": (lambda lib, x: 2**x, "real"),
    "0.5 ** x": (lambda lib, x: 0.5**x, "real"),
    "x + 2": (lambda lib, x: x + 2, "real"),
    "2 + x": (lambda lib, x: 2 + x, "real"),
    "x - 2": (lambda lib, x: x - 2, "real"),
    "2 - x": (lambda lib, x: 2 - x, "real"),
    "x * 2.5": (lambda lib, x: x * 2.5, "real"),
    "2.5 * x": (lambda lib, x: 2.5 * x, "real"),
    "x / 4": (lambda lib, x: x / 4, "real"),
    "2 / x": (lambda lib, x: 2 / x, "nonzero"),
    "where(x>0, x, 0.)": (lambda lib, x: lib.where(x.detach() > 0, x, 0.0), "nonzero"),
    "where(x>0, 1., x)": (lambda lib, x: lib.where(x.detach() > 0, 1.0, x), "nonzero"),
    "x.where(x>0, 0.)": (lambda lib, x: x.where(x.detach() > 0, 0.0), "nonzero"),
    "x.where(x>0, 2)": (lambda lib, x: x.where(x.detach() > 0, 2), "nonzero"),
    "add(x, 3, alpha=2)": (lambda lib, x: lib.add(x, 3, alpha=2), "real"),
    "x % 0.7": (lambda lib, x: x % 0.7, "real"),
    "x.remainder(-0.7)": (lambda lib, x: x.remainder(-0.7), "real"),
    "fmod(x, 0.7)": (lambda lib, x: lib.fmod(x, 0.7), "real"),
    "composite": (lambda lib, x: (x.sin() * x.exp() + 1).tanh() / (1 + x * x), "real"),
}

UNARY_CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, domain) in UNARY.items()
    for args in unary_inputs(domain)
]

# broadcasting pairs, 0-d operands and non-contiguous operands
PAIRS = [
    ((3, 4), (3, 4)),
    ((3, 4), (4,)),
    ((3, 1), (1, 4)),
    ((), (3,)),
    ((2, 3), ()),
    ((), ()),
    ((2, 3, 4), (3, 1)),
    ((4,), (2, 3, 4)),
]


def binary_inputs(dom_x, dom_y):
    args = [(A(*sx, domain=dom_x), A(*sy, domain=dom_y)) for sx, sy in PAIRS]
    args.append((A(3, 4, domain=dom_x, layout="transposed"), A(3, 4, domain=dom_y)))
    args.append((A(3, 4, domain=dom_x), A(4, domain=dom_y, layout="strided")))
    args.append((A(4, domain=dom_x, layout="strided"), A(2, 4, domain=dom_y, layout="transposed")))
    return args


# name -> (fn(lib, x, y), domain of x, domain of y)
BINARY = {
    "x + y": (lambda lib, x, y: x + y, "real", "real"),
    "add(alpha=2)": (lambda lib, x, y: lib.add(x, y, alpha=2), "real", "real"),
    "x - y": (lambda lib, x, y: x - y, "real", "real"),
    "sub(alpha=0.5)": (lambda lib, x, y: lib.sub(x, y, alpha=0.5), "real", "real"),
    "x * y": (lambda lib, x, y: x * y, "real", "real"),
    "mul": (lambda lib, x, y: lib.mul(x, y), "real", "real"),
    "x / y": (lambda lib, x, y: x / y, "real", "nonzero"),
    "div": (lambda lib, x, y: lib.div(x, y), "real", "nonzero"),
    "x ** y": (lambda lib, x, y: x**y, "positive", "real"),
    "pow": (lambda lib, x, y: lib.pow(x, y), "positive", "real"),
    "atan2": (lambda lib, x, y: lib.atan2(x, y), "real", "nonzero"),
    "x.arctan2(y)": (lambda lib, x, y: x.arctan2(y), "real", "nonzero"),
    "maximum": (lambda lib, x, y: lib.maximum(x, y), "real", "real"),
    "minimum": (lambda lib, x, y: lib.minimum(x, y), "real", "real"),
    "where": (lambda lib, x, y: lib.where(x.detach() > 0, x, y), "nonzero", "real"),
    "x.where(x>0, y)": (lambda lib, x, y: x.where(x.detach() > 0, y), "nonzero", "real"),
    "x.where(y>0, y)": (lambda lib, x, y: x.where(y.detach() > 0, y), "real", "nonzero"),
    "clamp(min=tensor)": (lambda lib, x, y: lib.clamp(x, min=y), "real", "real"),
    "clamp(max=tensor)": (lambda lib, x, y: x.clamp(max=y), "real", "real"),
    "x % y": (lambda lib, x, y: x % y, "real", "nonzero"),
    "remainder": (lambda lib, x, y: lib.remainder(x, y), "real", "nonzero"),
    "fmod": (lambda lib, x, y: lib.fmod(x, y), "real", "nonzero"),
    "x.fmod(y)": (lambda lib, x, y: x.fmod(y), "real", "nonzero"),
    "nextafter": (lambda lib, x, y: lib.nextafter(x, y), "real", "real"),
    "x.nextafter(y)": (lambda lib, x, y: x.nextafter(y), "real", "nonzero"),
    "lerp(x, y, 0.3)": (lambda lib, x, y: lib.lerp(x, y, 0.3), "real", "real"),
    "x.lerp(y, -1.5)": (lambda lib, x, y: x.lerp(y, -1.5), "real", "real"),
}

BINARY_CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, dx, dy) in BINARY.items()
    for args in binary_inputs(dx, dy)
]

# clamp with both bounds as tensors, including bounds that cross (then max wins, as torch)
CLAMP3_CASES = [
    pytest.param(args, id=case_id(args))
    for args in [
        (A(3, 4), A(3, 4), A(3, 4)),
        (A(3, 4), A(4), A(3, 1)),
        (A(2, 3), A(3), A(2, 1)),
        (A(), A(), A()),
        (A(3, 4, layout="transposed"), A(1, 4), A()),
    ]
]


def clamp3(lib, x, lo, hi):
    return lib.clamp(x, lo - 0.5, hi + 0.5)


# ops of three tensors, broadcasting all three; the in-place forms (on a copy of x, which
# must have the broadcast shape) use the shapes whose first one is the largest
TRIPLES = [
    ((3, 4), (3, 4), (3, 4)),
    ((3, 4), (4,), (3, 1)),
    ((2, 3), (), (3,)),
    ((), (), ()),
]
BROADCAST_TRIPLES = [((), (2, 3), ()), ((4,), (2, 3, 4), (3, 1))]


def triple_inputs(dom_z, shapes):
    args = [(A(*sx), A(*sy), A(*sz, domain=dom_z)) for sx, sy, sz in shapes]
    args.append((A(3, 4, layout="transposed"), A(4, layout="strided"), A(3, 4, domain=dom_z)))
    return args


# name -> (fn(lib, x, y, z), domain of z, in place); the weight of lerp spans |w| < 0.5 and more
TERNARY = {
    "lerp(x, y, w)": (lambda lib, x, y, w: lib.lerp(x, y, w), "real", False),
    "x.lerp(y, 2 * w)": (lambda lib, x, y, w: x.lerp(y, 2 * w), "real", False),
    "x.lerp_(y, w)": (lambda lib, x, y, w: (x * 1).lerp_(y, w), "real", True),
    "addcmul": (lambda lib, x, y, z: lib.addcmul(x, y, z), "real", False),
    "x.addcmul(y, z, value=-0.5)": (
        lambda lib, x, y, z: x.addcmul(y, z, value=-0.5),
        "real",
        False,
    ),
    "x.addcmul_(y, z, value=2)": (
        lambda lib, x, y, z: (x * 1).addcmul_(y, z, value=2),
        "real",
        True,
    ),
    "addcdiv": (lambda lib, x, y, z: lib.addcdiv(x, y, z), "nonzero", False),
    "x.addcdiv(y, z, value=3)": (lambda lib, x, y, z: x.addcdiv(y, z, value=3), "nonzero", False),
    "x.addcdiv_(y, z, value=0.5)": (
        lambda lib, x, y, z: (x * 1).addcdiv_(y, z, value=0.5),
        "nonzero",
        True,
    ),
}

TERNARY_CASES = [
    pytest.param(fn, args, in_place, id=f"{name}-{case_id(args)}")
    for name, (fn, dz, in_place) in TERNARY.items()
    for args in triple_inputs(dz, TRIPLES + ([] if in_place else BROADCAST_TRIPLES))
]


# --------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("fn,args", UNARY_CASES)
def test_unary_gradcheck_and_gradgradcheck(fn, args):
    """First and second derivatives of each unary op agree with finite differences (float64)."""
    run_gradchecks(fn, args)


@pytest.mark.parametrize("fn,args", BINARY_CASES)
def test_binary_gradcheck_and_gradgradcheck_with_broadcasting(fn, args):
    """Binary ops differentiate right w.r.t. both operands, broadcast and non-contiguous ones too."""
    run_gradchecks(fn, args)


@pytest.mark.parametrize("args", CLAMP3_CASES)
def test_clamp_with_tensor_bounds_gradcheck(args):
    """clamp(x, min_tensor, max_tensor) sends each gradient to whichever value was chosen."""
    run_gradchecks(clamp3, args)


@pytest.mark.parametrize("fn,args,in_place", TERNARY_CASES)
def test_ternary_gradcheck_and_gradgradcheck(fn, args, in_place):
    """lerp (a tensor weight), addcmul and addcdiv differentiate right w.r.t. all three inputs,
    in place too (forward over reverse there reads the tangent of the old ``x`` the node
    saved: a copy, as ``inplace`` keeps it)."""
    run_gradchecks(fn, args)


# --------------------------------------------------------------------------- PyTorch oracle

DTYPES = ["float32", "float64"]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,args", UNARY_CASES)
def test_unary_matches_torch(torch, fn, args, dtype):
    """Value, result dtype, node name and input gradient equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,args", BINARY_CASES)
def test_binary_matches_torch(torch, fn, args, dtype):
    """Broadcast value, dtype, node name and both gradients (summed back to each shape) equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("args", CLAMP3_CASES)
def test_clamp_with_tensor_bounds_matches_torch(torch, args, dtype):
    """clamp with two tensor bounds (even crossed ones) matches torch in value and all three grads."""
    compare_with_torch(torch, clamp3, args, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("fn,args,in_place", TERNARY_CASES)
def test_ternary_matches_torch(torch, fn, args, in_place, dtype):
    """Value, node name (LerpBackward1, AddcmulBackward0 ...), saved attributes and all three
    gradients equal torch's, in place too."""
    compare_with_torch(torch, fn, args, dtype)


THREE_OPS = {
    "lerp(x, y, 0.3)": lambda lib, x, y, z: lib.lerp(x, y, 0.3),
    "lerp(x, y, 0.7)": lambda lib, x, y, z: lib.lerp(x, y, 0.7),
    "lerp(x, y, z)": lambda lib, x, y, z: lib.lerp(x, y, z),
    "addcmul": lambda lib, x, y, z: lib.addcmul(x, y, z, value=0.3),
    "addcdiv": lambda lib, x, y, z: lib.addcdiv(x, y, z, value=0.3),
}


@pytest.mark.parametrize("step", [1, 3])
@pytest.mark.parametrize("fn", THREE_OPS.values(), ids=THREE_OPS.keys())
def test_lerp_addcmul_addcdiv_are_torch_s_bit_for_bit_in_float32(torch, fn, step):
    """torch's CPU kernels round ``a * b + c`` once (a fused multiply-add): lerp and addcmul
    give its float32 numbers to the last bit (contiguous or not), addcdiv too."""
    rng = np.random.default_rng(0)
    arrays = [rng.uniform(-2, 2, 3000).astype(np.float32) for _ in range(3)]
    ours = fn(tg, *(tg.tensor(a)[::step] for a in arrays))
    theirs = fn(torch, *(torch.tensor(a)[::step] for a in arrays))
    np.testing.assert_array_equal(to_numpy(ours).view(np.int32), theirs.numpy().view(np.int32))


def test_ties_split_the_gradient_like_torch(torch):
    """maximum/minimum at a tie give each side half the gradient; clamp at a bound passes it."""
    for lib_fn in (lambda lib, x, y: lib.maximum(x, y), lambda lib, x, y: lib.minimum(x, y)):
        got = []
        for lib in (tg, torch):
            x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
            y = lib.tensor([1.0, 0.0, 3.0], dtype=lib.float64, requires_grad=True)
            lib_fn(lib, x, y).sum().backward()
            got.append((x.grad.tolist(), y.grad.tolist()))
        assert got[0] == got[1]
    got = []
    for lib in (tg, torch):
        x = lib.tensor([-1.0, 0.0, 0.5, 1.0, 2.0], dtype=lib.float64, requires_grad=True)
        x.clamp(0.0, 1.0).sum().backward()
        got.append(x.grad.tolist())
    assert got[0] == got[1] == [0.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.filterwarnings("ignore:divide by zero:RuntimeWarning")  # sqrt'(0) is inf, as in torch
def test_relu_and_abs_at_zero_match_torch(torch):
    """At 0 relu's, abs's and sign's gradients are 0 (torch's choice), not NaN or 1; sqrt's is inf."""
    for name in ("relu", "abs", "sign", "sqrt"):
        got = []
        for lib in (tg, torch):
            x = lib.tensor([0.0, 1.0], dtype=lib.float64, requires_grad=True)
            getattr(x, name)().sum().backward()
            got.append(x.grad.tolist())
        assert got[0] == got[1], name


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_pow_with_zero_base_matches_torch(torch):
    """0 ** y: the y-gradient is 0 (not NaN from log 0) for y >= 0, and x ** 0 has x-grad 0,
    computed without NumPy warnings (torch gives none)."""
    results = []
    for lib in (tg, torch):
        x = lib.tensor([0.0, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([2.0, 0.0, 0.0], dtype=lib.float64, requires_grad=True)
        (x**y).sum().backward()
        results.append((x.grad.tolist(), y.grad.tolist()))
    assert results[0] == results[1]


def test_sigmoid_is_stable_for_large_inputs():
    """sigmoid(±1000) is 0/1 without overflow or NaN, and its gradient is 0, as in torch."""
    x = tg.tensor([-1000.0, 0.0, 1000.0], requires_grad=True)
    with np.errstate(over="raise", invalid="raise", divide="raise"):
        y = x.sigmoid()
        y.sum().backward()
    assert y.tolist() == [0.0, 0.5, 1.0]
    assert x.grad.tolist() == [0.0, 0.25, 0.0]


@pytest.mark.no_standin("measures host memory: the stand-in's own bookkeeping would count")
@pytest.mark.parametrize("op", ["tanh", "sigmoid"])
def test_tanh_and_sigmoid_backward_make_one_array(torch, op):
    """Their backward writes each step into one new array, as torch's single kernels do
    (``g * (1 - y * y)`` held two temporaries at once, sigmoid's three), and gives torch's
    values: on arrays (here), on Tensors (create_graph), big or small, and in 0-d."""
    n = 1 << 20  # 4 MiB of float32
    x = tg.linspace(-3, 3, n, dtype=tg.float32, requires_grad=True)
    y, g = getattr(x, op)(), tg.full((n,), 0.5)
    tracemalloc.start()
    try:
        y.backward(g)  # x.grad is the formula's result itself: the engine keeps it
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1.25 * 4 * n, f"{peak / (4 * n):.2f} arrays of x's size at once"
    xt = torch.linspace(-3, 3, n, dtype=torch.float32, requires_grad=True)
    getattr(xt, op)().backward(torch.full((n,), 0.5))
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-6, atol=1e-7)
    for shape in [(), (3,), (1 << 14,)]:
        a = tg.linspace(-2, 2, math.prod(shape), dtype=tg.float64).reshape(shape)
        at = torch.tensor(a.numpy())
        (da,) = tg.autograd.grad(getattr(a.requires_grad_(), op)().sum(), a, create_graph=True)
        (dat,) = torch.autograd.grad(getattr(at.requires_grad_(), op)().sum(), at)
        np.testing.assert_allclose(da.detach().numpy(), dat.numpy(), rtol=1e-13, atol=1e-16)
        assert da.grad_fn is not None


# --------------------------------------------------------------------------- type promotion

# (description, fn(lib)) -> the result dtype must equal torch's
PROMOTION = {
    "int tensor * 2.5": lambda lib: lib.tensor([1, 2, 3]) * 2.5,
    "2.5 - int tensor": lambda lib: 2.5 - lib.tensor([1, 2]),
    "int tensor + float tensor": lambda lib: lib.tensor([1, 2]) + lib.tensor([0.5, 1.5]),
    "int32 + int64": lambda lib: lib.tensor([1], dtype=lib.int32) + lib.tensor([2]),
    "int32 tensor + 7": lambda lib: lib.tensor([1], dtype=lib.int32) + 7,
    "float32 + float64 0-d tensor": lambda lib: lib.ones(3) + lib.tensor(2.0, dtype=lib.float64),
    "float32 + float64 1-d tensor": lambda lib: lib.ones(3) + lib.ones(3, dtype=lib.float64),
    "int tensor + float64 0-d tensor": lambda lib: (
        lib.tensor([1, 2]) + lib.tensor(1.0, dtype=lib.float64)
    ),
    "float64 0-d + float32 0-d": lambda lib: lib.tensor(1.0, dtype=lib.float64) + lib.tensor(1.0),
    "bool + int": lambda lib: lib.tensor([True, False]) + lib.tensor([1, 2]),
    "bool + 1": lambda lib: lib.tensor([True, False]) + 1,
    "bool + 1.5": lambda lib: lib.tensor([True, False]) + 1.5,
    "bool * bool": lambda lib: lib.tensor([True, False]) * lib.tensor([True, True]),
    "int + True": lambda lib: lib.tensor([1, 2]) + True,
    "int / int": lambda lib: lib.tensor([1, 2]) / lib.tensor([2, 2]),
    "int / 2": lambda lib: lib.tensor([1, 3]) / 2,
    "2 / int": lambda lib: 2 / lib.tensor([1, 4]),
    "int ** 2": lambda lib: lib.tensor([1, 3]) ** 2,
    "int ** 0.5": lambda lib: lib.tensor([1, 4]) ** 0.5,
    "2 ** int": lambda lib: 2 ** lib.tensor([1, 3]),
    "2.0 ** int": lambda lib: 2.0 ** lib.tensor([1, 3]),
    "float16 * 3.0": lambda lib: lib.ones(2, dtype=lib.float16) * 3.0,
    "float16 + int": lambda lib: lib.ones(2, dtype=lib.float16) + lib.tensor([1, 2]),
    "where(int, float)": lambda lib: lib.where(
        lib.tensor([True, False]), lib.tensor([1, 2]), lib.tensor([0.5, 1.5])
    ),
    "where(float32, 0.)": lambda lib: lib.where(lib.tensor([True, False]), lib.ones(2), 0.0),
    "maximum(int, float64)": lambda lib: lib.maximum(
        lib.tensor([1, 5]), lib.tensor([2.0, 3.0], dtype=lib.float64)
    ),
    "clamp(int, 0.5)": lambda lib: lib.tensor([0, 1, 2]).clamp(min=0.5),
    "clamp(int, 1)": lambda lib: lib.tensor([0, 1, 2]).clamp(min=1),
    "int.abs()": lambda lib: lib.tensor([-1, 2]).abs(),
    "int.neg()": lambda lib: -lib.tensor([-1, 2]),
    "int.exp()": lambda lib: lib.tensor([0, 1]).exp(),
    "int.sqrt()": lambda lib: lib.tensor([1, 4]).sqrt(),
    "int.sigmoid()": lambda lib: lib.tensor([0, 1]).sigmoid(),
    "int.sign()": lambda lib: lib.tensor([-3, 0, 2]).sign(),
    "int.floor()": lambda lib: lib.tensor([-3, 2]).floor(),
    "int.square()": lambda lib: lib.tensor([-3, 2]).square(),
    "int.relu()": lambda lib: lib.tensor([-3, 2]).relu(),
    "int.reciprocal()": lambda lib: lib.tensor([1, 2]).reciprocal(),
    "int.where(cond, 0.5)": lambda lib: lib.tensor([1, 2]).where(lib.tensor([True, False]), 0.5),
    "addcmul(int, int, int, value=1.5)": lambda lib: lib.addcmul(
        lib.tensor([1, 2]), lib.tensor([2, 3]), lib.tensor([2, 2]), value=1.5
    ),
    "addcmul(int, float32, float64)": lambda lib: lib.addcmul(
        lib.tensor([1, 2]), lib.ones(2), lib.ones(2, dtype=lib.float64), value=2.5
    ),
    "addcdiv(bool, int, float32)": lambda lib: lib.addcdiv(
        lib.tensor([True, False]), lib.tensor([1, 2]), lib.tensor([2.0, 4.0])
    ),
    "lerp(float16)": lambda lib: lib.lerp(
        lib.zeros(2, dtype=lib.float16), lib.ones(2, dtype=lib.float16), 0.3
    ),
    "lerp(float32, weight float64 0-d)": lambda lib: lib.lerp(
        lib.zeros(2), lib.ones(2), lib.tensor(0.25, dtype=lib.float64)
    ),
    "lerp(int, int, weight float64 0-d)": lambda lib: lib.lerp(
        lib.tensor([0, 4]), lib.tensor([2, 8]), lib.tensor(0.25, dtype=lib.float64)
    ),
    "lerp(0-d float32s, weight float64 0-d)": lambda lib: lib.lerp(
        lib.tensor(0.0), lib.tensor(1.0), lib.tensor(0.3, dtype=lib.float64)
    ),
    "float32.where(cond, float64)": lambda lib: lib.ones(2).where(
        lib.tensor([True, False]), lib.zeros(2, dtype=lib.float64)
    ),
}


@pytest.mark.parametrize("fn", PROMOTION.values(), ids=PROMOTION.keys())
def test_type_promotion_matches_torch(torch, fn):
    """The result dtype and values of mixed-dtype arithmetic equal torch's."""
    got, want = fn(tg), fn(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(
        got.cpu().numpy().astype(float), want.cpu().numpy().astype(float), rtol=1e-3
    )


def test_gradients_keep_each_inputs_dtype(torch):
    """float32 x * float64 0-d s: the result is float32, yet s.grad is float64 and x.grad float32."""
    for lib in (tg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        s = lib.tensor(3.0, dtype=lib.float64, requires_grad=True)
        y = x * s
        y.sum().backward()
        assert str(y.dtype).endswith("float32")
        assert str(x.grad.dtype).endswith("float32") and str(s.grad.dtype).endswith("float64")
        assert x.grad.tolist() == [3.0, 3.0] and s.grad.item() == 3.0


def test_integer_results_do_not_require_grad():
    """Comparisons and integer ops never join the graph, like torch."""
    x = tg.tensor([1.0, -2.0], requires_grad=True)
    assert (x > 0).requires_grad is False and (x > 0).grad_fn is None
    assert (x > 0).dtype is tg.bool
    assert x.sign().requires_grad  # a float result of a piecewise-constant op still requires grad


# --------------------------------------------------------------------------- floor division


def _ints(lib):
    return lib.tensor([-7, 7, 0, 5, -3])


def _floors_in_place(lib, other):
    x = _ints(lib)
    x //= other
    return x


# name -> fn(lib): a tensor made by floor division (compared with torch's: values, dtype)
FLOOR_DIVISION = {
    "int // 2": lambda lib: _ints(lib) // 2,
    "int // -2": lambda lib: _ints(lib) // -2,
    "int // int tensor": lambda lib: _ints(lib) // lib.tensor([2, -2, 3, -4, 2]),
    "int // 2.5": lambda lib: _ints(lib) // 2.5,
    "int // True": lambda lib: _ints(lib) // True,
    "int32 // int64": lambda lib: lib.tensor([-7, 7], dtype=lib.int32) // lib.tensor([2, -2]),
    "uint8 // 3": lambda lib: lib.tensor([7, 250], dtype=lib.uint8) // 3,
    "float // 2.0": lambda lib: lib.tensor([-7.5, 7.5, 1.0, -0.0]) // 2.0,
    "float // -2.0": lambda lib: lib.tensor([-7.5, 7.5, 1.0]) // -2.0,
    "1. // 0.1": lambda lib: lib.tensor([1.0, -1.0], dtype=lib.float64) // 0.1,
    "float // 0": lambda lib: lib.tensor([1.0, -1.0, 0.0]) // 0,
    "int // float zero": lambda lib: lib.tensor([1, 2]) // lib.tensor([0.0, 1.0]),
    "7 // int": lambda lib: 7 // lib.tensor([2, -2, 3]),
    "-7 // int": lambda lib: -7 // lib.tensor([2, -2, 3]),
    "5.5 // int": lambda lib: 5.5 // lib.tensor([2, -2]),
    "broadcast": lambda lib: lib.tensor([[7], [-7]]) // lib.tensor([2, -3, 4]),
    "0-d // 2": lambda lib: lib.tensor(7) // 2,
    "empty // 0": lambda lib: lib.tensor([], dtype=lib.int64) // 0,
    "floor_divide(x, y)": lambda lib: lib.floor_divide(_ints(lib), lib.tensor(3)),
    "floor_divide(7, x)": lambda lib: lib.floor_divide(7, lib.tensor([2, -2])),
    "x.floor_divide(3)": lambda lib: _ints(lib).floor_divide(3),
    "x //= 2": lambda lib: _floors_in_place(lib, 2),
    "x //= int tensor": lambda lib: _floors_in_place(lib, lib.tensor([2, -2, 3, -4, 2])),
    "x.floor_divide_(-3)": lambda lib: _ints(lib).floor_divide_(-3),
}


@pytest.mark.parametrize("fn", FLOOR_DIVISION.values(), ids=FLOOR_DIVISION.keys())
def test_floor_division_matches_torch(torch, fn):
    """``//`` rounds down like Python's (also for negative numbers), and its dtype and the
    IEEE results of a float division by zero are torch's."""
    got, want = fn(tg), fn(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


TRUE_DIVISIONS = {  # integers and bools divide in the default float dtype, as given
    "uint8 / -3": lambda lib: lib.tensor([1, 6, 255], dtype=lib.uint8) / -3,
    "int8 / -200": lambda lib: lib.tensor([1, -6, 100], dtype=lib.int8) / -200,
    "uint8 / 300": lambda lib: lib.tensor([1, 6, 255], dtype=lib.uint8) / 300,
    "int64 / int64": lambda lib: lib.tensor([7, -9, 3]) / lib.tensor([3, 7, -9]),
    "4 / int64": lambda lib: 4 / lib.tensor([7, -9, 3]),
    "bool / bool": lambda lib: lib.tensor([True, False]) / lib.tensor([True, True]),
    "int64 / 0-d int": lambda lib: lib.tensor([7, -9, 3]) / lib.tensor(2),
    "int64 / column": lambda lib: lib.tensor([7, -9, 3]) / lib.tensor([[2], [4]]),
    "int16.div(-70000)": lambda lib: lib.tensor([5, -5], dtype=lib.int16).div(-70000),
}


@pytest.mark.parametrize("divide", TRUE_DIVISIONS.values(), ids=TRUE_DIVISIONS.keys())
def test_integer_true_division_matches_torch(torch, divide):
    got, want = divide(tg), divide(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()


@pytest.mark.parametrize("shape", [(2,), (1, 2), (2, 1), (3, 1, 2)])
@pytest.mark.parametrize("op", ["add alpha", "rsub", "mul", "div"])
def test_an_expanded_operand_of_another_dtype_lays_the_result_out_as_torch(torch, shape, op):
    """Promoting an expanded float32 operand to float64 keeps it expanded (a full copy's
    layout would decide the result's strides instead of its zero strides)."""

    def strides(lib):
        x = lib.ones(shape, dtype=lib.float32).expand(3, 2, 2) if len(shape) == 3 else None
        x = lib.ones(shape, dtype=lib.float32).expand(2, 2) if x is None else x
        y = lib.ones(1, dtype=lib.float64)
        result = {"add alpha": lambda: lib.add(x, y, alpha=2), "rsub": lambda: 1 - (x + y),
                  "mul": lambda: x * y, "div": lambda: y / x}[op]()  # fmt: skip
        return result.stride()

    assert strides(tg) == strides(torch)


ROUNDS = {  # torch's two overloads: with decimals (even 0) the node is RoundBackward1
    "x.round()": lambda lib, x: x.round(),
    "round(x)": lambda lib, x: lib.round(x),
    "x.round(decimals=0)": lambda lib, x: x.round(decimals=0),
    "round(x, decimals=2)": lambda lib, x: lib.round(x, decimals=2),
    "x.round(decimals=-1)": lambda lib, x: x.round(decimals=-1),
}


@pytest.mark.parametrize("rounding", ROUNDS.values(), ids=ROUNDS.keys())
def test_round_s_node_and_values_are_torch_s(torch, rounding):
    def run(lib):
        y = rounding(lib, lib.tensor([1.25, 2.5, 17.0], requires_grad=True))
        return type(y.grad_fn).__name__, y.tolist()

    assert run(tg) == run(torch)


@pytest.mark.parametrize("dtype", ["uint8", "int8", "bool", "float32"])
@pytest.mark.parametrize("reduce", ["any", "all"])
def test_any_and_all_keep_uint8_as_torch(torch, dtype, reduce):
    """torch's any and all of a uint8 tensor are uint8, of anything else bool."""

    def run(lib):
        x = lib.tensor([[1, 0], [2, 3]], dtype=getattr(lib, dtype))
        results = (getattr(x, reduce)(), getattr(x, reduce)(0), getattr(x, reduce)(1, keepdim=True))
        return [(str(r.dtype).split(".")[-1], r.tolist()) for r in results]

    assert run(tg) == run(torch)


def test_floor_division_in_place_changes_the_tensor_like_torch(torch):
    def seen(lib):
        x = _ints(lib)
        y = x.floor_divide_(2)
        x //= lib.tensor(2)
        return y is x, x._version, x.tolist()

    assert seen(tg) == seen(torch)


def test_floor_division_has_no_derivative_like_torch(torch):
    """The result of ``//`` requires grad and has a ``NotImplemented`` node, as in torch."""

    def seen(lib):
        x = lib.tensor([-7.0, 7.0, 3.5], requires_grad=True)
        outs = (x // 2, 2 // x, lib.floor_divide(x, x))
        return [(y.requires_grad, node_name(y), y.tolist()) for y in outs]

    assert seen(tg) == seen(torch)


def _backward_through(lib, fn):
    fn(lib.tensor([-7.0, 7.0], requires_grad=True)).sum().backward()


def _floor_in_place(x):
    y = x * 1
    y //= 2
    return y


def _leaf_in_place(x):
    x //= 2
    return x


def _int_in_place_by_float(lib):
    x = lib.tensor([1, 2])
    x //= 2.5


def _on_cpu(lib, data, dtype=None):
    """An integer tensor on the CPU, where torch refuses integer division by zero (on a GPU
    it does not check, and neither does teachgrad)."""
    return lib.tensor(data, dtype=dtype, device="cpu")


def _int_in_place_by_zero(lib):
    x = _on_cpu(lib, [1, 2])
    x //= 0


# torch refuses integer division by zero on the CPU ("ZeroDivisionError"), and has no
# derivative for floor division
FLOOR_DIVISION_ERRORS = {
    "int // 0": lambda lib: _on_cpu(lib, [1, 2]) // 0,
    "int // False": lambda lib: _on_cpu(lib, [1, 2]) // False,
    "int // int tensor with 0": lambda lib: _on_cpu(lib, [1, 2]) // _on_cpu(lib, [1, 0]),
    "int // 0-d 0": lambda lib: _on_cpu(lib, [1, 2]) // _on_cpu(lib, 0),
    "int32 // int32 0": lambda lib: _on_cpu(lib, [7], lib.int32) // _on_cpu(lib, [0], lib.int32),
    "uint8 // 0": lambda lib: _on_cpu(lib, [7], lib.uint8) // 0,
    "5 // int with 0": lambda lib: 5 // _on_cpu(lib, [1, 0]),
    "floor_divide(int, 0)": lambda lib: lib.floor_divide(_on_cpu(lib, [1, 2]), 0),
    "int //= 0": _int_in_place_by_zero,
    "div(int, 0, floor)": lambda lib: lib.div(_on_cpu(lib, [1, 2]), 0, rounding_mode="floor"),
    "div(int, 0, trunc)": lambda lib: lib.div(_on_cpu(lib, [1, 2]), 0, rounding_mode="trunc"),
    "broadcast": lambda lib: lib.tensor([1, 2]) // lib.tensor([1, 2, 3]),
    "int //= 2.5": _int_in_place_by_float,
    "leaf //= 2": lambda lib: _leaf_in_place(lib.ones(2, requires_grad=True)),
    "backward of x // 2": lambda lib: _backward_through(lib, lambda x: x // 2),
    "backward of 2 // x": lambda lib: _backward_through(lib, lambda x: 2 // x),
    "backward of floor_divide": lambda lib: _backward_through(
        lib, lambda x: lib.floor_divide(x, 3)
    ),
    "backward of y //= 2": lambda lib: _backward_through(lib, _floor_in_place),
}


@pytest.mark.parametrize("fn", FLOOR_DIVISION_ERRORS.values(), ids=FLOOR_DIVISION_ERRORS.keys())
def test_floor_division_errors_are_torchs(torch, fn):
    assert_same_error(torch, fn)


# --------------------------------------------------------------------------- remainder, fmod


def _signs(lib, dtype=None):
    return lib.tensor([7, -7, 7, -7, 0], dtype=dtype)


def _divisors(lib, dtype=None):
    return lib.tensor([3, 3, -3, -3, 2], dtype=dtype)


def _mod_in_place(lib, other):
    x = _signs(lib)
    x %= other
    return x


REMAINDERS = {
    "int % int tensor": lambda lib: _signs(lib) % _divisors(lib),
    "int % -3": lambda lib: _signs(lib) % -3,
    "int % 2.5": lambda lib: _signs(lib) % 2.5,
    "int % float 0-d": lambda lib: _signs(lib) % lib.tensor(2.5),
    "int % float32 tensor": lambda lib: _signs(lib) % _divisors(lib, lib.float32),
    "float % int tensor": lambda lib: _signs(lib, lib.float64) % _divisors(lib),
    "int8 % int64 0-d": lambda lib: _signs(lib, lib.int8) % lib.tensor(3),
    "uint8 % 3": lambda lib: lib.tensor([7, 0, 255], dtype=lib.uint8) % 3,
    "bool % 2": lambda lib: lib.tensor([True, False]) % 2,
    "float16 % 1": lambda lib: lib.tensor([1.5, -1.5], dtype=lib.float16) % 1,
    "7 % int": lambda lib: 7 % _divisors(lib),
    "7.5 % int": lambda lib: 7.5 % _divisors(lib),
    "remainder(7, x)": lambda lib: lib.remainder(7, _divisors(lib, lib.float64)),
    "signed zeros %": lambda lib: lib.tensor([-0.0, 0.0]) % lib.tensor([2.0, -2.0]),
    "float % 0": lambda lib: _signs(lib, lib.float32) % 0,
    "float % inf": lambda lib: lib.tensor([5.0, -5.0]) % float("inf"),
    "inf % 2": lambda lib: lib.tensor([float("inf")]) % 2,
    "fmod int": lambda lib: lib.fmod(_signs(lib), _divisors(lib)),
    "fmod int, -3": lambda lib: _signs(lib).fmod(-3),
    "fmod int, 2.5": lambda lib: lib.fmod(_signs(lib), 2.5),
    "fmod signed zeros": lambda lib: lib.fmod(lib.tensor([-0.0, 0.0]), 2),
    "fmod by inf": lambda lib: lib.fmod(lib.tensor([5.0, -5.0]), float("inf")),
    "fmod float by 0": lambda lib: lib.fmod(_signs(lib, lib.float64), 0),
    "x %= 2": lambda lib: _mod_in_place(lib, 2),
    "x %= int tensor": lambda lib: _mod_in_place(lib, _divisors(lib)),
    "x.remainder_(-3)": lambda lib: _signs(lib).remainder_(-3),
    "x.fmod_(x)": lambda lib: _signs(lib, lib.float32).fmod_(_divisors(lib)),
}


@pytest.mark.parametrize("fn", REMAINDERS.values(), ids=REMAINDERS.keys())
def test_remainder_and_fmod_match_torch(torch, fn):
    """``%`` keeps the divisor's sign, ``fmod`` the dividend's; dtypes, signed zeros and the
    IEEE results of a float division by zero are torch's."""
    got, want = fn(tg), fn(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_array_equal(to_numpy(got), to_numpy(want))
    np.testing.assert_array_equal(np.signbit(to_numpy(got)), np.signbit(to_numpy(want)))


def test_remainder_nodes_and_saved_values_are_torchs(torch):
    """A number divisor gives the ``Backward0`` node (nothing saved), a tensor one the
    ``Backward1`` node (self and other saved); ``number % tensor`` has no derivative."""

    def seen(lib):
        x = lib.tensor([5.0, -5.0, 3.5], requires_grad=True)
        y = lib.tensor([3.0, 3.0, -2.0], requires_grad=True)
        outs = (x % 2, x % y, lib.fmod(x, 2), x.fmod(y), 7 % x, lib.remainder(7, x))
        saved = [
            sorted(k for k in dir(o.grad_fn) if k in ("_saved_self", "_saved_other")) for o in outs
        ]
        return [(node_name(o), o.requires_grad, o.tolist()) for o in outs], saved

    assert seen(tg) == seen(torch)


def test_remainder_gradients_match_torch(torch):
    """self gets grad; other gets −grad · floor(self / other) (fmod: trunc), with torch's
    floor at the edges: the exact quotient's (``1. % 0.1``: −9, where floor(1. / 0.1) is
    10), NaN for ``inf % 2``, −inf for ``5. % 0``."""

    def grads(lib, op):
        x = lib.tensor([5.0, -5.0, 3.5, -0.5, 1.0, float("inf"), 5.0], dtype=lib.float64)
        y = lib.tensor([3.0, 3.0, -2.0, 0.3, 0.1, 2.0, 0.0], dtype=lib.float64)
        x.requires_grad_(), y.requires_grad_()
        weights = lib.arange(1.0, 8.0, dtype=lib.float64)
        (op(lib, x, y) * weights).sum().backward()
        return str(x.grad.tolist()), str(y.grad.tolist())  # (str: NaN equals NaN)

    for op in (lambda lib, x, y: x % y, lambda lib, x, y: lib.fmod(x, y)):
        assert grads(tg, op) == grads(torch, op)


REMAINDER_ERRORS = {
    "int % 0": lambda lib: _on_cpu(lib, [1, 2]) % 0,
    "fmod(int, 0)": lambda lib: lib.fmod(_on_cpu(lib, [1, 2]), 0),
    "int % int with 0": lambda lib: _on_cpu(lib, [1, 2]) % _on_cpu(lib, [1, 0]),
    "7 % int with 0": lambda lib: 7 % _on_cpu(lib, [0, 1]),
    "bool % bool": lambda lib: lib.tensor([True]) % lib.tensor([False]),
    "fmod(bool, bool)": lambda lib: lib.fmod(lib.tensor([True]), lib.tensor([False])),
    "fmod(2, x)": lambda lib: lib.fmod(2, lib.ones(2)),
    "fmod(x, None)": lambda lib: lib.fmod(lib.ones(2), None),
    "remainder(x, 'a')": lambda lib: lib.remainder(lib.ones(2), "a"),
    "remainder(2, 3)": lambda lib: lib.remainder(2, 3),
    "x % 'a'": lambda lib: lib.ones(2) % "a",
    "int %= 2.5": lambda lib: _mod_in_place(lib, 2.5),
    "broadcast": lambda lib: lib.ones(2) % lib.ones(3),
    "backward of 7 % x": lambda lib: _backward_through(lib, lambda x: 7 % x),
}


@pytest.mark.parametrize("fn", REMAINDER_ERRORS.values(), ids=REMAINDER_ERRORS.keys())
def test_remainder_errors_are_torchs(torch, fn):
    assert_same_error(torch, fn)


# --------------------------------------------------------------------------- errors


def _incompatible_broadcast(lib):
    return lib.ones(3, 4) + lib.ones(5)


ERRORS = {
    "incompatible broadcast +": (
        _incompatible_broadcast,
        RuntimeError,
        "must match the size of tensor",
    ),
    "incompatible broadcast *": (
        lambda lib: lib.ones(2, 3) * lib.ones(3, 2),
        RuntimeError,
        "must match the size of tensor",
    ),
    "incompatible broadcast where": (
        lambda lib: lib.where(lib.ones(2, dtype=lib.bool), lib.ones(3), 0.0),
        RuntimeError,
        "must match the size of tensor",
    ),
    "maximum broadcast": (
        lambda lib: lib.maximum(lib.ones(2), lib.ones(3)),
        RuntimeError,
        "must match the size of tensor",
    ),
    "where with a float condition": (
        lambda lib: lib.where(lib.ones(2), lib.ones(2), 0.0),
        RuntimeError,
        "where expected condition to be a boolean tensor",
    ),
    "clamp without bounds": (
        lambda lib: lib.clamp(lib.ones(2)),
        RuntimeError,
        "At least one of 'min' or 'max' must not be None",
    ),
    "int to a negative int power": (
        lambda lib: lib.tensor([1, 2]) ** -1,
        RuntimeError,
        "Integers to negative integer powers are not allowed",
    ),
    "bad rounding mode": (
        lambda lib: lib.div(lib.ones(2), 2, rounding_mode="round"),
        RuntimeError,
        "rounding_mode",
    ),
    "lerp to an end of another dtype": (
        lambda lib: lib.lerp(lib.ones(2), lib.ones(2, dtype=lib.float64), 0.5),
        RuntimeError,
        "expected dtype float for `end` but got dtype double",
    ),
    "lerp with a weight of another dtype": (
        lambda lib: lib.lerp(lib.ones(2), lib.ones(2), lib.tensor([1, 0])),
        RuntimeError,
        "expected dtype float for `weight` but got dtype long int",
    ),
    "lerp of integers": (
        lambda lib: lib.tensor([1, 2]).lerp(lib.tensor([3, 4]), 0.5),
        NotImplementedError,
        "\"lerp_kernel_scalar\" not implemented for 'Long'",
    ),
    "lerp with a number end": (
        lambda lib: lib.lerp(lib.ones(2), 2.0, 0.5),
        TypeError,
        "lerp() received an invalid combination of arguments",
    ),
    "lerp_ to a broadcast shape": (
        lambda lib: lib.ones(1).lerp_(lib.ones(3), lib.ones(3)),
        RuntimeError,
        "output with shape [1] doesn't match the broadcast shape [3]",
    ),
    "addcmul of bools": (
        lambda lib: lib.addcmul(*[lib.tensor([True])] * 3),
        NotImplementedError,
        "\"addcmul_cpu_out\" not implemented for 'Bool'",
    ),
    "addcmul_ of floats into ints": (
        lambda lib: lib.tensor([1, 2]).addcmul_(lib.ones(2), lib.ones(2)),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    "addcmul with a number tensor1": (
        lambda lib: lib.addcmul(lib.ones(2), 2, lib.ones(2)),
        TypeError,
        "argument 'tensor1' (position 2) must be Tensor, not int",
    ),
    "addcmul with a str value": (
        lambda lib: lib.addcmul(lib.ones(2), lib.ones(2), lib.ones(2), value="2"),
        TypeError,
        "argument 'value' must be Number, not str",
    ),
    "addcdiv broadcast": (
        lambda lib: lib.addcdiv(lib.ones(2), lib.ones(3), lib.ones(2)),
        RuntimeError,
        "must match the size of tensor",
    ),
    "addcdiv of integers": (
        lambda lib: lib.addcdiv(lib.ones(2), lib.tensor([1, 2]), lib.tensor([True, True])),
        RuntimeError,
        "Integer division with addcdiv is no longer supported",
    ),
    "requires_grad on int": (
        lambda lib: lib.tensor([1, 2]).requires_grad_(),
        RuntimeError,
        "only Tensors of floating point",
    ),
}


@pytest.mark.parametrize("fn,exc,phrase", ERRORS.values(), ids=ERRORS.keys())
def test_bad_input_raises_torchs_error(torch, fn, exc, phrase):
    """Bad input fails at the call with torch's exception class and key phrase."""
    assert_raises_like_torch(torch, fn, exc, phrase)


def test_broadcast_shapes_and_clashes_match_torch(torch):
    """``a + b`` for every pair of shapes of up to three dims of sizes 0-2 (and 3, which
    clashes with 2): the result's shape, or torch's error message word for word."""
    sizes = (0, 1, 2, 3)
    shapes = [s for n in range(4) for s in itertools.product(sizes, repeat=n)]
    for a, b in itertools.product(shapes, shapes):
        try:
            want = tuple(torch.add(torch.ones(a), torch.ones(b)).shape)
        except RuntimeError as error:
            with pytest.raises(RuntimeError) as ours:
                tg.ones(a) + tg.ones(b)
            assert str(ours.value).split("\n")[0] == str(error), (a, b)
        else:
            assert tuple((tg.ones(a) + tg.ones(b)).shape) == want, (a, b)


@pytest.mark.parametrize("eps", [None, 0.2])
def test_logit_at_the_edges_matches_torch(torch, eps):
    """Outside [0, 1] the value and gradient are NaN (inf at 0 and 1); with eps, x is clamped
    to [eps, 1 - eps] and gets no gradient where it was."""

    def run(lib):
        x = lib.tensor([-0.5, 0.0, 0.3, 1.0, 1.5, 0.9], dtype=lib.float64, requires_grad=True)
        y = lib.logit(x, eps)
        y.sum().backward()
        return str(y.tolist()), str(x.grad.tolist()), y.grad_fn._saved_eps

    assert run(tg) == run(torch)


def test_threshold_in_place_and_of_ints_matches_torch(torch):
    def run(lib):
        y = lib.tensor([-0.5, 0.3, 0.9], dtype=lib.float64)
        lib.nn.functional.threshold(y, 0.3, 7.0, inplace=True)
        ints = lib.nn.functional.threshold(lib.tensor([1, 5]), 2, 0)
        return y.tolist(), y._version, ints.tolist(), str(ints.dtype).split(".")[1]

    assert run(tg) == run(torch)

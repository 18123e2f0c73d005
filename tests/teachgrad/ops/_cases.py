"""Shared machinery of the op tests: make the same inputs for teachgrad and torch, compare.

An op under test is written once as ``fn(lib, *tensors)`` where ``lib`` is either
``teachgrad`` or ``torch`` (their APIs match), so one table row drives gradcheck,
gradgradcheck and the comparison with the PyTorch oracle.

An input is described by an :class:`Arg`: a shape, a value domain (so that the op
stays away from points where it is not differentiable) and a memory layout
(``"transposed"`` and ``"strided"`` make a *non-contiguous leaf*).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.autograd import gradcheck, gradgradcheck
from teachgrad.ops import linalg

# --------------------------------------------------------------------------- input values


def _away_from_zero(rng, shape):
    return rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape)


def _distinct(rng, shape):
    """Values whose pairwise gaps are >= 0.1 (no ties for max/min/sort-like ops)."""
    n = int(np.prod(shape, dtype=int))
    values = (rng.permutation(n) - n / 2) * 0.25 + rng.uniform(-0.05, 0.05, n)
    return values.reshape(shape)


def _with_zeros(count):
    """Normal values with exact zeros: 1-d gets ``count`` zeros; n-d gets, along the last
    dim, one zero in row 0 and two zeros in row 1 (row 2 onwards has none)."""

    def make(rng, shape):
        x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
        if len(shape) == 1:
            x[[1, 3][:count]] = 0.0
        elif len(shape) >= 2:
            rows = x.reshape(-1, shape[-1])
            rows[0, 1] = 0.0
            if count > 1 and rows.shape[0] > 1:
                rows[1, 0] = rows[1, -1] = 0.0
        elif count:
            x = np.zeros(shape)
        return x

    return make


def _distinct_abs(rng, shape):
    """Nonzero values whose absolute values are >= 0.1 apart (for inf-norms)."""
    n = int(np.prod(shape, dtype=int))
    mags = (rng.permutation(n) + 1) * 0.25 + rng.uniform(-0.05, 0.05, n)
    return (mags * rng.choice([-1.0, 1.0], n)).reshape(shape)


def _full_rank(rng, shape):
    """Normal values with ±3 added on the diagonal: each leading square block is well
    conditioned, far from rank-deficient (QR, triangular solves)."""
    x = rng.standard_normal(shape)
    k = min(shape[-2:])
    x[..., range(k), range(k)] += 3 * rng.choice([-1.0, 1.0], k)
    return x


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),  # sqrt, log, rsqrt, x ** y
    "nonzero": _away_from_zero,  # abs, sign, relu, reciprocal, division
    "unit": lambda rng, shape: rng.uniform(-0.8, 0.8, shape),  # tan, log1p
    "probability": lambda rng, shape: rng.uniform(0.1, 0.9, shape),  # logit
    "distinct": _distinct,  # max/min/amax/norm(inf): no ties
    "midhalf": lambda rng, shape: (
        rng.uniform(0.1, 0.4, shape) * rng.choice([-1.0, 1.0], shape) + rng.integers(-2, 3, shape)
    ),  # floor/ceil/round: far from the jumps
    "one_zero": _with_zeros(1),  # prod
    "two_zeros": _with_zeros(2),  # prod
    "distinct_abs": _distinct_abs,  # norm(p=inf)
    "full_rank": _full_rank,  # linalg.qr, linalg.solve_triangular
}


@dataclasses.dataclass(frozen=True)
class Arg:
    """One tensor input: ``shape``, value ``domain`` and ``layout`` (contiguous or not)."""

    shape: tuple
    domain: str = "real"
    layout: str = "contiguous"  # "contiguous" | "transposed" (last two dims) | "strided" (step 2)
    requires_grad: bool = True

    def __str__(self):
        mark = {"contiguous": "", "transposed": "T", "strided": "s"}[self.layout]
        return f"{self.shape}{mark}"


def A(*shape, domain="real", layout="contiguous", requires_grad=True) -> Arg:
    """Shorthand: ``A(3, 4)`` is a contiguous (3, 4) input of normal values."""
    return Arg(tuple(shape), domain, layout, requires_grad)


def values(arg: Arg, seed: int) -> np.ndarray:
    """The float64 values of an input (the same for teachgrad and torch)."""
    rng = np.random.default_rng(seed)
    return np.asarray(DOMAINS[arg.domain](rng, arg.shape), dtype=np.float64)


def lib_dtype(lib, name: str):
    return getattr(lib, name)


def make_leaf(lib, array: np.ndarray, arg: Arg, dtype: str = "float64"):
    """A leaf tensor of ``lib`` holding ``array`` with ``arg``'s layout.

    The non-contiguous layouts are built as views of a larger or transposed buffer
    and then detached, so the leaf *itself* has non-contiguous strides.
    """
    dt = lib_dtype(lib, dtype)
    if arg.layout == "transposed":
        assert array.ndim >= 2, "transposed layout needs 2+ dims"
        stored = np.ascontiguousarray(np.swapaxes(array, -1, -2))
        t = lib.tensor(stored, dtype=dt).transpose(-1, -2).detach()
        assert not t.is_contiguous() or array.shape[-1] == 1 or array.shape[-2] == 1
    elif arg.layout == "strided":
        assert array.ndim >= 1, "strided layout needs 1+ dims"
        big = np.zeros(array.shape[:-1] + (2 * array.shape[-1],))
        big[..., ::2] = array
        t = lib.tensor(big, dtype=dt)[..., ::2].detach()
    else:
        t = lib.tensor(array, dtype=dt)
    if arg.requires_grad:
        t.requires_grad_()
    return t


def make_inputs(lib, args, seed: int, dtype: str = "float64"):
    """``make_leaf`` for each Arg (other entries, e.g. numbers, are passed through)."""
    out = []
    for k, a in enumerate(args):
        if isinstance(a, Arg):
            out.append(make_leaf(lib, values(a, seed + 101 * k), a, dtype))
        else:
            out.append(a)
    return out


def case_id(args) -> str:
    return ",".join(str(a) for a in args)


# --------------------------------------------------------------------------- checks


SMALL = 16  # gradgradcheck compares full second-order Jacobians up to this many elements


def run_gradchecks(fn, args, seed=0, second_order=True, forward_ad=True, **kw):
    """gradcheck and gradgradcheck of ``fn(tg, *inputs)`` in float64 (raises on a mismatch),
    in reverse mode (also batched: ``is_grads_batched``) and (``forward_ad``) forward mode:
    the op's jvp, and jvp through its backward.

    gradcheck always compares full Jacobians. gradgradcheck does too for small
    problems; above ``SMALL`` input+output elements it uses ``fast_mode`` (random
    projections of the Jacobian), which catches the same bugs at a fraction of the cost.
    """
    inputs = make_inputs(tg, args, seed)
    f = lambda *xs: fn(tg, *xs)
    kw.setdefault("check_batched_grad", True)  # grad(is_grads_batched=True) equals row by row
    assert gradcheck(f, tuple(inputs), check_forward_ad=forward_ad, **kw)
    if second_order:
        tg.manual_seed(seed)
        outputs = f(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        size = sum(x.numel() for x in inputs if isinstance(x, tg.Tensor))
        size += sum(y.numel() for y in outputs if isinstance(y, tg.Tensor))
        assert gradgradcheck(
            f, tuple(inputs), fast_mode=size > SMALL, check_fwd_over_rev=forward_ad, **kw
        )


TOLERANCES = {"float64": dict(rtol=1e-9, atol=1e-11), "float32": dict(rtol=2e-5, atol=2e-5)}


def to_numpy(t):
    if t is None:
        return None
    t = t.detach()
    return t.cpu().numpy() if hasattr(t, "cpu") else t.cpu().numpy()


def dtype_name(t) -> str:
    return str(t.dtype).split(".")[-1]


def node_name(t) -> str | None:
    """The grad_fn's name: teachgrad's ``name()`` or torch's class name (``name()`` of torch's
    C++ nodes says ``torch::autograd::CopySlices`` where the class is ``CopySlices``)."""
    if t.grad_fn is None:
        return None
    if type(t).__module__.startswith("torch"):
        return type(t.grad_fn).__name__
    return t.grad_fn.name().removeprefix("torch::autograd::")


# teachgrad's ops that record one node where torch records several (docs/differences-from-
# torch.md: named after torch's last node, its edges lead straight to the inputs)
ONE_NODE_FOR_SEVERAL = {
    linalg.Matmul,
    linalg.VecMat,
    linalg.MatmulViaClone,
    linalg.Einsum,
    linalg.EinsumSum,
    linalg.EinsumMul,
}


def saved_names(t) -> list | None:
    """The ``_saved_<name>`` attributes of ``t``'s node."""
    if t.grad_fn is None:
        return None
    return sorted(a for a in dir(t.grad_fn) if a.startswith("_saved_"))


def edges(t) -> list | None:
    """The node's edges as ``[(name of the next node, input_nr), ...]`` (None: no node);
    torch spells some nodes' names with a namespace (``torch::autograd::``), dropped here."""
    if t.grad_fn is None:
        return None
    named = lambda n: None if n is None else n.name().removeprefix("torch::autograd::")  # noqa: E731
    return [(named(n), nr) for n, nr in t.grad_fn.next_functions]


def assert_same(a, b, dtype="float64", what="value"):
    """``a`` (teachgrad) equals ``b`` (torch): shape, dtype and values within tolerance."""
    if a is None or b is None:
        assert a is None and b is None, f"{what}: teachgrad gave {a!r}, torch gave {b!r}"
        return
    assert tuple(a.shape) == tuple(b.shape), (
        f"{what}: shape {tuple(a.shape)} vs torch {tuple(b.shape)}"
    )
    assert dtype_name(a) == dtype_name(b), f"{what}: dtype {a.dtype} vs torch {b.dtype}"
    tol = TOLERANCES.get(dtype, TOLERANCES["float64"])
    np.testing.assert_allclose(to_numpy(a), to_numpy(b), err_msg=what, **tol)


def compare_with_torch(torch, fn, args, dtype="float64", seed=0, check_name=True):
    """Run ``fn`` in both libraries on the same inputs; compare every output, the node
    name, and the input gradients for a random upstream gradient."""
    xs = make_inputs(tg, args, seed, dtype)
    ts = make_inputs(torch, args, seed, dtype)
    y, yt = fn(tg, *xs), fn(torch, *ts)
    ys = list(y) if isinstance(y, tuple) else [y]
    yts = list(yt) if isinstance(yt, tuple) else [yt]
    assert len(ys) == len(yts)
    for k, (a, b) in enumerate(zip(ys, yts)):
        assert_same(a, b, dtype, f"output {k}")
        assert a.requires_grad == b.requires_grad, f"output {k} requires_grad"
    if check_name:
        assert node_name(ys[0]) == node_name(yts[0])
        if getattr(ys[0].grad_fn, "_forward_cls", None) not in ONE_NODE_FOR_SEVERAL:
            assert edges(ys[0]) == edges(yts[0]), "next_functions"
            assert saved_names(ys[0]) == saved_names(yts[0]), "the node's saved attributes"
    wrt = [(x, t) for x, t in zip(xs, ts) if hasattr(x, "requires_grad") and x.requires_grad]
    outs = [(a, b) for a, b in zip(ys, yts) if b.requires_grad]
    if not wrt or not outs:
        return ys, yts
    rng = np.random.default_rng(seed + 7)
    ups = [rng.standard_normal(tuple(b.shape)) for _, b in outs]
    grads = tg.autograd.grad(
        [a for a, _ in outs],
        [x for x, _ in wrt],
        [tg.tensor(u, dtype=lib_dtype(tg, dtype_name(a))) for u, (a, _) in zip(ups, outs)],
        allow_unused=True,
    )
    grads_t = torch.autograd.grad(
        [b for _, b in outs],
        [t for _, t in wrt],
        [torch.tensor(u, dtype=b.dtype) for u, (_, b) in zip(ups, outs)],
        allow_unused=True,
    )
    for k, (g, gt) in enumerate(zip(grads, grads_t)):
        assert_same(g, gt, dtype, f"gradient of input {k}")
    return ys, yts


# --------------------------------------------------------------------------- views and copies


def view_base(lib):
    """A fresh (2, 3, 4) float64 leaf that owns its memory: the base of the view tests."""
    return lib.tensor(np.arange(24.0).reshape(2, 3, 4), dtype=lib.float64)


def what_changes_show(lib, fn, write_back):
    """What an in-place change of a fresh base ``x`` shows in ``v = fn(lib, x)``: whether
    ``v._base is x``, how far ``v._version`` moved, and ``v``'s values. With ``write_back``
    also what changing ``v`` in place then does: ``x._version``, ``v._version``, ``x``'s
    values. A view sees the change and passes its own back; a copy does neither. Compare
    teachgrad's list with torch's."""
    x = view_base(lib)
    v = fn(lib, x)
    before = v._version
    with lib.no_grad():
        x.add_(100)
    seen = [v._base is x, v._version - before, v.tolist()]
    if write_back:
        with lib.no_grad():
            v.mul_(-1)
        seen += [x._version, v._version, x.tolist()]
    return seen


def assert_raises_like_torch(torch, fn, exc, phrase):
    """``fn(torch)`` raises ``exc`` with ``phrase`` (so the table is torch's own), and so does
    ``fn(teachgrad)``."""
    with pytest.raises(exc) as torch_err:
        fn(torch)
    assert phrase in str(torch_err.value), "the table's phrase must be torch's own"
    with pytest.raises(exc) as err:
        fn(tg)
    assert phrase in str(err.value)


def raised(fn, lib):
    """The exception ``fn(lib)`` raises (None if it returns)."""
    try:
        fn(lib)
    except Exception as error:
        return error
    return None


def first_line(error) -> str:
    """An error's first line, torch's module name read as teachgrad's."""
    return str(error).split("\n")[0].replace("torch", "teachgrad")


def assert_same_error(torch, fn, differs=None):
    """``fn(torch)`` raises, and ``fn(teachgrad)`` raises the same class with the same first
    line (torch's module name read as teachgrad's); teachgrad may add lines that teach.

    ``differs`` is ``(torch's words, teachgrad's words)`` for a part of the line teachgrad
    can't say the same way; torch's words must be in torch's line.
    """
    theirs, ours = raised(fn, torch), raised(fn, tg)
    assert theirs is not None, "torch accepts this: the row tests nothing"
    expected = first_line(theirs)
    if differs:
        assert differs[0] in expected, "the row's words must be torch's own"
        expected = expected.replace(*differs)
    assert ours is not None, f"teachgrad accepts it; torch: {type(theirs).__name__}: {expected}"
    assert (type(ours).__name__, first_line(ours)) == (type(theirs).__name__, expected)

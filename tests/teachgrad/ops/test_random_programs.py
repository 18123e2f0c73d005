"""Random op programs give the same values and gradients in teachgrad as in PyTorch.

Hypothesis builds a program: 1-3 float64 inputs of small random shapes, then 3-8
steps, each applying a unary, binary, reduction or view op to values made so far
(binary ops only pair values whose shapes broadcast). Ops that need a safe domain
get it from a smooth squashing of their input (``log(x*x + 0.5)``, ``exp(tanh x)``),
so every program is defined everywhere. The loss is a weighted sum of every value
made; its gradients w.r.t. the inputs, and every intermediate value, must equal
torch's.
"""

import math

import numpy as np
import pytest

import teachgrad as tg

pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

MAX_NUMEL = 48  # ops that grow a value (expand, cat, stack) are skipped beyond this


def _ndim_at_least(n):
    return lambda shape: len(shape) >= n


def _always(shape):
    return True


def _small(shape):
    return math.prod(shape) <= MAX_NUMEL // 2


def _dim_longer_than_one(shape):
    return any(s > 1 for s in shape)


# name -> (fn(lib, x, d), precondition(shape)); ``d`` is a dim of x drawn by hypothesis
UNARY = {
    "neg": (lambda lib, x, d: -x, _always),
    "abs": (lambda lib, x, d: x.abs(), _always),
    "tanh": (lambda lib, x, d: x.tanh(), _always),
    "sigmoid": (lambda lib, x, d: lib.sigmoid(x), _always),
    "sin": (lambda lib, x, d: x.sin(), _always),
    "cos": (lambda lib, x, d: lib.cos(x), _always),
    "tan": (lambda lib, x, d: x.tanh().tan(), _always),
    "relu": (lambda lib, x, d: x.relu(), _always),
    "exp": (lambda lib, x, d: x.tanh().exp(), _always),
    "expm1": (lambda lib, x, d: x.tanh().expm1(), _always),
    "log": (lambda lib, x, d: (x * x + 0.5).log(), _always),
    "log1p": (lambda lib, x, d: lib.log1p(x * x), _always),
    "sqrt": (lambda lib, x, d: (x * x + 0.5).sqrt(), _always),
    "rsqrt": (lambda lib, x, d: (x * x + 0.5).rsqrt(), _always),
    "reciprocal": (lambda lib, x, d: (x * x + 0.5).reciprocal(), _always),
    "square": (lambda lib, x, d: x.tanh().square(), _always),
    "x ** 3": (lambda lib, x, d: x.tanh() ** 3, _always),
    "x ** 0.5": (lambda lib, x, d: (x * x + 0.5) ** 0.5, _always),
    "2 ** x": (lambda lib, x, d: 2 ** x.tanh(), _always),
    "2 - x": (lambda lib, x, d: 2 - x, _always),
    "2 / x": (lambda lib, x, d: 2 / (x * x + 0.5), _always),
    "affine": (lambda lib, x, d: x * 1.5 + 0.25, _always),
    "clamp": (lambda lib, x, d: x.clamp(-0.5, 0.5), _always),
    "floor + x": (lambda lib, x, d: x.floor() + x, _always),
    "sign * x": (lambda lib, x, d: x.sign() * x, _always),
    # reductions
    "sum()": (lambda lib, x, d: x.sum(), _always),
    "sum(d)": (lambda lib, x, d: x.sum(dim=d), _ndim_at_least(1)),
    "mean(d, keepdim)": (lambda lib, x, d: x.mean(dim=d, keepdim=True), _ndim_at_least(1)),
    "prod(d)": (lambda lib, x, d: x.tanh().prod(dim=d), _ndim_at_least(1)),
    "amax(d)": (lambda lib, x, d: x.amax(dim=d), _ndim_at_least(1)),
    "amin()": (lambda lib, x, d: x.amin(), _always),
    "logsumexp(d)": (lambda lib, x, d: x.logsumexp(dim=d), _ndim_at_least(1)),
    "norm()": (lambda lib, x, d: x.norm(), _always),
    "norm(p=1, d)": (lambda lib, x, d: x.norm(p=1, dim=d), _ndim_at_least(1)),
    "var()": (lambda lib, x, d: x.var(), _dim_longer_than_one),
    "std(correction=0)": (lambda lib, x, d: x.std(correction=0), _always),
    # shape ops and indexing
    "reshape(-1)": (lambda lib, x, d: x.reshape(-1), _always),
    "flatten()": (lambda lib, x, d: x.flatten(), _always),
    "transpose(0, -1)": (lambda lib, x, d: x.transpose(0, -1), _ndim_at_least(1)),
    "permute(reversed)": (lambda lib, x, d: x.permute(tuple(reversed(range(x.ndim)))), _always),
    "unsqueeze(0)": (lambda lib, x, d: x.unsqueeze(0), _always),
    "squeeze()": (lambda lib, x, d: x.squeeze(), _always),
    "expand": (lambda lib, x, d: x.unsqueeze(0).expand(2, *x.shape), _small),
    "x[0]": (lambda lib, x, d: x[0], _ndim_at_least(1)),
    "x[..., ::2]": (lambda lib, x, d: x[..., ::2], _ndim_at_least(1)),
    "select(d, -1)": (lambda lib, x, d: x.select(d, -1), _ndim_at_least(1)),
    "x[[0, 0]]": (lambda lib, x, d: x[[0, 0]], lambda s: len(s) >= 1 and _small(s)),
    "x[x > 0]": (lambda lib, x, d: x[x.detach() > 0], _always),
    "cat([x, x], d)": (
        lambda lib, x, d: lib.cat([x, x.tanh()], dim=d),
        lambda s: len(s) >= 1 and _small(s),
    ),
    "stack([x, x])": (lambda lib, x, d: lib.stack([x, -x]), _small),
    "x @ x.mT": (lambda lib, x, d: x @ x.mT, lambda s: len(s) >= 2 and _small(s)),
    "x @ x (1-d)": (lambda lib, x, d: x @ x, lambda s: len(s) == 1),
}

# name -> fn(lib, x, y); x and y broadcast together
BINARY = {
    "add": lambda lib, x, y: x + y,
    "sub": lambda lib, x, y: x - y,
    "mul": lambda lib, x, y: x * y,
    "div": lambda lib, x, y: x / (y * y + 0.5),
    "pow": lambda lib, x, y: (x * x + 0.5) ** y.tanh(),
    "maximum": lambda lib, x, y: lib.maximum(x, y),
    "minimum": lambda lib, x, y: lib.minimum(x, y),
    "where": lambda lib, x, y: lib.where(x.detach() > y.detach(), x, y),
    "add(alpha)": lambda lib, x, y: lib.add(x, y, alpha=-0.5),
}

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
TOL = dict(rtol=1e-7)


def _broadcasts(a, b):
    try:
        shape = np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return math.prod(shape) <= MAX_NUMEL


def assert_matches(mine, theirs, what):
    """teachgrad's tensor equals torch's: shape and values (NaN only where torch has NaN)."""
    want = theirs.detach().cpu().numpy()
    got = mine.detach().cpu().numpy()
    assert got.shape == want.shape, f"{what}: shape {got.shape} vs torch {want.shape}"
    atol = 1e-9 * (1 + np.abs(want[np.isfinite(want)]).max(initial=0))
    np.testing.assert_allclose(got, want, atol=atol, err_msg=what, **TOL)


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_random_programs_match_torch(torch, data):
    """Every value of a random 3-8 step program, and the gradients of a loss built from all
    of them w.r.t. every input, equal torch's."""
    n_inputs = data.draw(st.integers(1, 3), label="number of inputs")
    base = data.draw(shapes, label="base shape")
    input_shapes = []
    for _ in range(n_inputs):  # inputs broadcast with `base`: some dims 1, leading dims dropped
        keep = data.draw(st.integers(0, len(base)))
        mask = data.draw(st.lists(st.booleans(), min_size=keep, max_size=keep))
        input_shapes.append(tuple(s if m else 1 for s, m in zip(base[len(base) - keep :], mask)))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed"))
    arrays = [rng.uniform(-2, 2, s) for s in input_shapes]
    xs = [tg.tensor(a, dtype=tg.float64, requires_grad=True) for a in arrays]
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]

    pool = list(zip(xs, ts))
    program = []
    for _ in range(data.draw(st.integers(3, 8), label="number of steps")):
        # values a step may use: not empty (a mask can select nothing)
        usable = [j for j, (v, _) in enumerate(pool) if v.numel() > 0]
        if data.draw(st.integers(0, 2)) == 0:  # binary, on two values whose shapes broadcast
            a = data.draw(st.sampled_from(usable))
            partners = [j for j in usable if _broadcasts(pool[a][0].shape, pool[j][0].shape)]
            partners = partners or [a]  # (a value over MAX_NUMEL pairs with no other: itself)
            b = data.draw(st.sampled_from(partners))
            name = data.draw(st.sampled_from(sorted(BINARY)))
            fn = BINARY[name]
            step = (fn(tg, pool[a][0], pool[b][0]), fn(torch, pool[a][1], pool[b][1]))
            program.append(f"v{len(pool)} = {name}(v{a}, v{b})")
        else:
            src = data.draw(st.sampled_from(usable))
            shape = tuple(pool[src][0].shape)
            name = data.draw(
                st.sampled_from(sorted(n for n, (_, ok) in UNARY.items() if ok(shape)))
            )
            d = data.draw(st.integers(-len(shape), len(shape) - 1)) if shape else 0
            fn = UNARY[name][0]
            step = (fn(tg, pool[src][0], d), fn(torch, pool[src][1], d))
            program.append(f"v{len(pool)} = {name}(v{src}, d={d})")
        assert_matches(*step, " ; ".join(program))
        pool.append(step)

    made = range(n_inputs, len(pool))  # every value made contributes to the loss
    loss = sum(pool[k][0].sum() * (1.0 / k) for k in made)
    loss_t = sum(pool[k][1].sum() * (1.0 / k) for k in made)
    grads = tg.autograd.grad(loss, xs, allow_unused=True)
    grads_t = torch.autograd.grad(loss_t, ts, allow_unused=True)
    for i, (g, gt) in enumerate(zip(grads, grads_t)):
        what = f"gradient of input {i} after " + " ; ".join(program)
        if gt is None:
            assert g is None or not g.cpu().numpy().any(), what
        else:
            assert g is not None, what + ": teachgrad gave None"
            assert_matches(g, gt, what)

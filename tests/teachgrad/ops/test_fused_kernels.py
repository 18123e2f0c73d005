"""The fused GPU kernels (teachgrad/ops/fused.py) compute what the ops' formulas compute.

They run only on real CuPy with a GPU (``make test-gpu``): each kernel is compared with the
formula it replaces, evaluated with CuPy's own operations on the same data, over both float
dtypes, shapes around the kernels' block size, and special values (NaN, ±inf, ±0); then the
ops that use them are compared with the same ops on the CPU.
"""

import numpy as np
import pytest

import teachgrad as tg
import teachgrad.nn.functional as F
from teachgrad.ops import fused

pytestmark = pytest.mark.cuda
real_cupy_only = pytest.mark.no_standin("the kernels are CUDA code: they run on real CuPy only")

DTYPES = ["float32", "float64"]
SHAPES = [(1, 1), (3, 7), (257, 10), (1000, 3), (2, 1024)]


@pytest.fixture(scope="module")
def cp():
    import cupy

    return cupy


def _values(cp, shape, dtype, seed=0, special=True):
    """Random values, with NaN, ±inf and ±0 sprinkled in when ``special``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape) * 3
    if special and x.size >= 8:
        flat = x.reshape(-1)
        flat[rng.choice(x.size, 6, replace=False)] = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30]
    return cp.asarray(x.astype(dtype))


def _close(cp, got, want, dtype):
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(cp.asnumpy(got), cp.asnumpy(want), rtol=tol, atol=tol)


@real_cupy_only
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_threshold_grad_is_where_y_positive(cp, dtype, shape):
    g, y = _values(cp, shape, dtype, 1), _values(cp, shape, dtype, 2)
    got = fused.threshold_grad(g, y)
    assert got is not None and got.dtype == g.dtype
    want = cp.where(~(y <= 0), g, 0)  # the op's formula (a NaN y passes g)
    assert cp.array_equal(got, want, equal_nan=True)


@real_cupy_only
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha", [-0.01, 2.5, 3])
def test_add_scaled_is_x_plus_alpha_y(cp, dtype, alpha):
    x, y = _values(cp, (257, 10), dtype, 3), _values(cp, (257, 10), dtype, 4)
    want = x + y * alpha  # the two steps the kernel fuses
    assert fused.add_scaled_(x, y, alpha) is True
    assert cp.array_equal(x, want, equal_nan=True)  # the same rounding: bit for bit


@real_cupy_only
def test_add_scaled_leaves_other_layouts_to_the_formula(cp):
    x, y = cp.ones((4, 3), "float32"), cp.ones((3, 4), "float32").T
    assert fused.add_scaled_(x, y, 2.0) is False
    assert fused.add_scaled_(x, cp.ones(3, "float32"), 2.0) is False  # broadcast
    assert fused.add_scaled_(x, cp.ones((4, 3), "float64"), 2.0) is False
    assert fused.add_scaled_(x, 2.0, 2.0) is False  # a number
    assert bool((x == 1).all())


@real_cupy_only
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("special", [False, True])
def test_log_softmax_rows_is_the_formula(cp, dtype, shape, special):
    x = _values(cp, shape, dtype, 5, special)
    got = fused.log_softmax_rows(x, 1)
    shifted = x - x.max(axis=1, keepdims=True)
    want = shifted - cp.log(cp.exp(shifted).sum(axis=1, keepdims=True))
    assert got is not None and got.flags.c_contiguous
    _close(cp, got, want, dtype)


@real_cupy_only
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_log_softmax_rows_grad_is_the_formula(cp, dtype, shape):
    g = _values(cp, shape, dtype, 6, special=False)
    y = fused.log_softmax_rows(_values(cp, shape, dtype, 7, special=False), -1)
    got = fused.log_softmax_rows_grad(g, y, -1)
    _close(cp, got, g - cp.exp(y) * g.sum(axis=1, keepdims=True), dtype)


@real_cupy_only
def test_rows_leave_other_cases_to_the_formula(cp):
    x = cp.ones((3, 4), "float32")
    assert fused.log_softmax_rows(x, 0) is None  # not the last dim
    assert fused.log_softmax_rows(x.T, 1) is None  # not row-major
    assert fused.log_softmax_rows(cp.ones((2, 3, 4), "float32"), 2) is None
    assert fused.log_softmax_rows(cp.ones((3, 2000), "float32"), 1) is None  # long rows
    assert fused.log_softmax_rows(cp.ones((3, 4), "float16"), 1) is None
    assert fused.log_softmax_rows(cp.ones((0, 4), "float32"), 1) is None


def _targets(cp, n, c, seed, ignore_index=None, bad=False):
    t = np.random.default_rng(seed).integers(0, c, n)
    if ignore_index is not None:
        t[::3] = ignore_index
    if bad:
        t[n // 2] = c
    return cp.asarray(t)


@real_cupy_only
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (3, 7), (257, 10), (1000, 3)])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
@pytest.mark.parametrize("ignore", [None, -100, 0])
def test_nll_loss_rows_and_grad_are_the_formula(cp, dtype, shape, reduction, ignore):
    n, c = shape
    x = _values(cp, shape, dtype, 8, special=False)
    t = _targets(cp, n, c, 9, ignore)
    ignore_index = -100 if ignore is None else ignore
    loss, total, bad = fused.nll_loss_rows(x, t, ignore_index, reduction)
    counted = t != ignore_index
    picked = x[cp.arange(n), cp.where(counted, t, 0)]
    want_total = counted.sum()
    want = -(picked * counted).sum()
    if reduction == "mean":
        want = want / want_total
    _close(cp, loss, want, dtype)
    assert int(total) == int(want_total) and not bool(bad)
    g = cp.asarray(0.75, dtype)
    grad = fused.nll_loss_rows_grad(g, total, t, shape, ignore_index, reduction)
    want_grad = cp.zeros(shape, dtype)
    scale = -g / want_total if reduction == "mean" else -g
    want_grad[cp.arange(n)[counted], t[counted]] = scale
    _close(cp, grad, want_grad, dtype)


@real_cupy_only
def test_nll_loss_rows_flags_a_bad_target_and_every_target_ignored(cp):
    x = _values(cp, (5, 3), "float32", 10, special=False)
    _, _, bad = fused.nll_loss_rows(x, _targets(cp, 5, 3, 11, bad=True), -100, "mean")
    assert bool(bad)
    loss, total, bad = fused.nll_loss_rows(x, cp.full(5, -100), -100, "mean")
    assert bool(cp.isnan(loss)) and int(total) == 0 and not bool(bad)  # 0/0, as torch


# ------------------------------------------------------------------ the ops that use them


def _same(cpu, gpu, dtype="float32"):
    tol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(gpu.detach().cpu().numpy(), cpu.detach().numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ignore_index", [-100, 2])
@pytest.mark.parametrize("reduction", ["mean", "sum"])
def test_a_training_step_matches_the_cpu(dtype, ignore_index, reduction):
    rng = np.random.default_rng(12)
    scores = rng.normal(size=(33, 5)).astype(dtype)
    labels = rng.integers(0, 5, 33)
    results = []
    for device in ("cpu", "cuda"):
        x = tg.tensor(scores, device=device, requires_grad=True)
        w = tg.tensor(np.ones((5, 5), dtype), device=device, requires_grad=True)
        t = tg.tensor(labels, device=device)
        loss = F.cross_entropy(F.relu(x @ w), t, ignore_index=ignore_index, reduction=reduction)
        loss.backward()
        opt = tg.optim.SGD([w], lr=0.1)
        opt.step()
        results.append((loss, x.grad, w))
    for cpu, gpu in zip(*results, strict=True):
        _same(cpu, gpu, dtype)


def test_double_backward_through_the_fused_loss_matches_the_cpu():
    scores = np.random.default_rng(13).normal(size=(6, 4))
    labels = np.array([0, 1, 2, 3, 1, 0])
    grads = []
    for device in ("cpu", "cuda"):
        x = tg.tensor(scores, device=device, requires_grad=True)
        loss = F.cross_entropy(x, tg.tensor(labels, device=device))
        (g,) = tg.autograd.grad(loss, x, create_graph=True)
        (gg,) = tg.autograd.grad((g * g).sum(), x)
        grads.append((g, gg))
    for cpu, gpu in zip(*grads, strict=True):
        _same(cpu, gpu, "float64")


def test_a_bad_target_is_reported_at_the_next_wait():
    x = tg.zeros(4, 3, device="cuda", requires_grad=True)
    loss = F.cross_entropy(x, tg.tensor([0, 1, 3, 2], device="cuda"))
    with pytest.raises(RuntimeError, match="device-side assert triggered"):
        loss.item()

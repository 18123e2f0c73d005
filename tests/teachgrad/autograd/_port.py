"""Shared pieces of the ports of PyTorch's own autograd tests (test_autograd.py).

Each ported test takes ``lib`` (teachgrad, then torch: the oracle; see tests/teachgrad/conftest.py) and checks the same facts
torch's test checks, with plain asserts, so one body runs on both libraries.
"""

import numpy as np


def values(t):
    """A tensor (or number) as a float64 NumPy array, detached."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    return np.asarray(t, dtype=np.float64)


def same(a, b, rtol=1e-7, atol=1e-7):
    """Whether two tensors (or a tensor and numbers) hold the same values and shape."""
    a, b = values(a), values(b)
    return a.shape == b.shape and np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True)


def randn(lib, *shape, seed=0, requires_grad=False, dtype=None, shift=0.0, default="float64"):
    """Reproducible normal numbers (plus ``shift``) as a ``lib`` tensor, the same on both
    libraries: of ``dtype``, else of ``lib``'s ``default`` dtype (a name)."""
    data = np.random.default_rng(seed).standard_normal(shape) + shift
    return lib.tensor(data, dtype=dtype or getattr(lib, default), requires_grad=requires_grad)


def double_and_triple(lib):
    """A custom Function with two outputs, ``2x`` and ``3x`` (its ``apply``)."""

    class DoubleMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    return DoubleMul.apply


def doubling_in_place_and_saving(lib):
    """A custom Function that doubles its input in place (``mark_dirty``), saves it and
    returns it (its ``apply``); backward reads the saved tensor back."""

    class DoubleAndSave(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 2

    return DoubleAndSave.apply


def setitem_tensor(lib, size, index):
    """torch's _test_setitem_tensor: a tensor written at ``index`` gets its gradient."""
    x = lib.ones(*size, requires_grad=True)
    y = x + 2
    y_version = y._version
    value = lib.full(tuple(x[index].shape), 7.0, requires_grad=True)
    y[index] = value
    assert y._version != y_version
    y.backward(lib.ones(*size))
    expected = np.ones(size)
    expected[index.numpy() if hasattr(index, "numpy") else index] = 0
    assert same(x.grad, expected)
    assert same(value.grad, lib.ones_like(value))


def times_two(lib, custom):
    """``x * 2`` as a built-in op, or as a custom Function doing the same."""
    if not custom:
        return lambda x: x * 2

    class Mul2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    return Mul2.apply

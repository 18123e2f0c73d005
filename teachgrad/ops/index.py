"""Advanced indexing: integer tensors/lists and boolean masks as indices (copies, not views).

``x[idx]`` with an integer tensor gathers elements; the backward scatters the
gradient back, *adding* where an index repeats (``x[[0, 0]]`` sends two
gradients to ``x[0]``).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> x[[0, 0, 2]].sum().backward(); x.grad
    tensor([2., 0., 1.])
"""

from __future__ import annotations

from .._backend import array_module
from .._tensor import Tensor
from ..autograd.function import Function


def _array_key(key, xp):
    """The key with tensors and lists turned into backend arrays NumPy/CuPy can index with."""
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
        elif isinstance(k, list | tuple) or isinstance(k, bool):
            k = xp.asarray(k)
        out.append(k)
    return tuple(out)


class Index(Function):
    node_name = "IndexBackward0"
    array_forward = True

    @staticmethod
    def forward(ctx, a, key):
        x = a._data
        ctx.in_shape, ctx.key = x.shape, key
        return x[key]

    @staticmethod
    def backward(ctx, grad):
        return _IndexPut.apply(grad, ctx.in_shape, ctx.key), None


class _IndexPut(Function):
    """Backward of ``Index``: add the gradient into zeros at the indexed places."""

    node_name = "IndexBackwardBackward0"
    array_forward = True

    @staticmethod
    def forward(ctx, grad, in_shape, key):
        ctx.key = key
        g = grad._data
        xp = array_module(g)
        out = xp.zeros(in_shape, g.dtype)
        xp.add.at(out, key, g)  # unbuffered: repeated indices add up
        return out

    @staticmethod
    def backward(ctx, gg):
        return Index.apply(gg, ctx.key), None, None


def advanced_getitem(input, key):
    """``x[key]`` where ``key`` holds integer/bool tensors or lists (a copy)."""
    xp = array_module(input)
    key = _array_key(key, xp)
    for k in key:
        if hasattr(k, "dtype") and k.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    return Index.apply(input, key)

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
        elif isinstance(k, list | tuple | bool):
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
    check_key(input._data.shape, key)
    return Index.apply(input, key)


def check_key(shape, key) -> None:
    """torch's IndexErrors for an advanced index: indices out of bounds, masks of the wrong shape.

    ``key`` holds backend arrays (from ``_array_key``), ints, slices, None and Ellipsis.
    """
    ndim = len(shape)

    def width(k):  # how many dims of the tensor an entry indexes
        if k is None or k is Ellipsis:
            return 0
        return k.ndim if hasattr(k, "dtype") and k.dtype.kind == "b" else 1

    used = sum(width(k) for k in key)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    dim = 0
    for k in key:
        if k is Ellipsis:
            dim += ndim - used
        elif k is None:
            continue
        elif hasattr(k, "dtype") and k.dtype.kind == "b":
            for j in range(k.ndim):
                if k.shape[j] != shape[dim + j]:
                    raise IndexError(
                        f"The shape of the mask {list(k.shape)} at index {j} does not match the shape of "
                        f"the indexed tensor {list(shape)} at index {dim + j}"
                    )
            dim += k.ndim
        else:
            if not isinstance(k, slice):
                size = shape[dim]
                bad = (k < -size) | (k >= size)
                if bool(bad.any() if hasattr(bad, "any") else bad):
                    value = int(k[bad].reshape(-1)[0]) if hasattr(k, "dtype") and k.ndim else int(k)
                    raise IndexError(
                        f"index {value} is out of bounds for dimension {dim} with size {size}"
                    )
            dim += 1


class IndexPut(Function):
    """``x`` with ``x[key]`` set to (or, with ``accumulate``, increased by) ``values``."""

    node_name = "IndexPutBackward0"
    array_forward = True
    number_inputs = (2,)  # a number value still gets an (empty) edge, as in torch

    @staticmethod
    def forward(ctx, a, key, values, accumulate):
        ctx.key, ctx.accumulate = key, accumulate
        xp = array_module(a)
        out = a._data.copy()
        v = values._data if isinstance(values, Tensor) else values
        try:
            if accumulate:
                xp.add.at(out, key, v)
            else:
                out[key] = v
        except ValueError:
            raise RuntimeError(
                f"shape mismatch: value tensor of shape {list(xp.shape(v))} cannot be broadcast to indexing result "
                f"of shape {list(out[key].shape)}"
            ) from None
        return out

    @staticmethod
    def backward(ctx, grad):
        grad_a = grad if ctx.accumulate else IndexPut.apply(grad, ctx.key, 0.0, False)
        grad_values = Index.apply(grad, ctx.key) if ctx.needs_input_grad[2] else None
        return grad_a, None, grad_values, None


class MaskedFill(Function):
    node_name = "MaskedFillBackward0"
    array_forward = True

    @staticmethod
    def forward(ctx, a, mask, value):
        if mask._data.dtype.kind != "b":
            raise RuntimeError(
                f"masked_fill_ only supports boolean masks, but got mask with dtype {mask.dtype}"
            )
        if isinstance(value, Tensor) and value._data.ndim:
            raise RuntimeError(
                f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        ctx.to_save = (mask,)
        v = value._data if isinstance(value, Tensor) else value
        xp = array_module(a)
        return xp.where(mask._data, xp.asarray(v, dtype=a._data.dtype), a._data)

    @staticmethod
    def backward(ctx, grad):
        from .pointwise import where  # noqa: PLC0415

        (mask,) = ctx.saved_tensors
        grad_value = where(mask, grad, 0.0).sum() if ctx.needs_input_grad[2] else None
        return where(mask, 0.0, grad), None, grad_value


class MaskedFillTensor(MaskedFill):
    node_name = "MaskedFillBackward1"


def masked_fill(input, mask, value):
    """``value`` where ``mask`` is True, else ``input`` (mask broadcasts to input).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, -2.0, 3.0]); x.masked_fill(x < 0, 0.0)
    tensor([1., 0., 3.])
    """
    return (MaskedFillTensor if isinstance(value, Tensor) else MaskedFill).apply(input, mask, value)


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``input[indices] = values`` (or ``+=`` with ``accumulate``).

    >>> import teachgrad as tg
    >>> tg.zeros(3).index_put((tg.tensor([0, 0]),), tg.tensor(1.0), accumulate=True)
    tensor([2., 0., 0.])
    """
    key = _array_key(tuple(indices), array_module(input))
    return IndexPut.apply(input, key, values, accumulate)


def masked_fill_(input, mask, value):
    """In-place ``masked_fill``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, -2.0]); x.masked_fill_(x < 0, 0.0)
    tensor([1., 0.])
    """
    from .inplace import inplace  # noqa: PLC0415 - inplace imports this module

    return inplace(input, "masked_fill_", masked_fill, mask, value)


def index_put_(input, indices, values, accumulate=False):
    """In-place ``index_put`` (what ``x[idx] = v`` does for advanced indices).

    >>> import teachgrad as tg
    >>> x = tg.zeros(3); x.index_put_((tg.tensor([2]),), tg.tensor(5.0))
    tensor([0., 0., 5.])
    """
    from .inplace import inplace  # noqa: PLC0415

    key = _array_key(tuple(indices), array_module(input))
    return inplace(input, "index_put_", IndexPut.apply, key, values, accumulate)

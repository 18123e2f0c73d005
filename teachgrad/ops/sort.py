"""Sorting and finding: ``sort`` (values and the indices they came from), ``argsort``,
``nonzero`` and ``count_nonzero``.

Only ``sort``'s values have a gradient: each value came from one input element (its index),
so backward puts each value's gradient back there, the inverse of the gather that sorting
is (``SortBackward0``). Indices and counts are integers: no gradient, as in torch. Ties keep
their order (a stable sort), as torch's CPU sort does; NaN counts as the largest value.
"""

from __future__ import annotations

from .._backend import array_module, stable_argsort
from .._tensor import _given_and_wrapped, wrap_array
from ..autograd.builtin import Builtin
from .index import Gather, Scatter
from .reduce import flag, return_types, row_major


class Sort(Builtin):
    """``sort(dim, descending)``: ``(values, indices)``; values[i] = input[indices[i]]."""

    node_name = "SortBackward0"
    saved_names = ("indices",)
    saved_args = {"dim": "given_dim", "self_sym_sizes": "in_shape"}
    formula = {"self": "grad put back at indices along dim"}  # grad: the values' gradient

    @staticmethod
    def forward(ctx, a, dim, descending):
        x = a._data
        xp = array_module(x)
        ctx.in_shape = x.shape
        ctx.given_dim, ctx.dim = _given_and_wrapped(dim, x.ndim)
        if x.ndim == 0:  # (one value: itself, from index 0)
            return x.copy(), xp.zeros((), dtype="int64")
        indices = _sorted_indices(x, ctx.dim, descending)
        values = xp.take_along_axis(x, indices, axis=ctx.dim)
        return row_major(values), row_major(indices)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (output[1],)

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        if not ctx.in_shape:
            return grad, None, None
        # Scatter itself, not scatter(): sorting made the indices (checking them would make
        # a GPU wait)
        return Scatter.apply(grad.new_zeros(ctx.in_shape), ctx.dim, grad, index=indices), None, None

    @staticmethod
    def jvp(ctx, t, *_):  # each value moves with the element it came from
        return (t if not ctx.in_shape else Gather.apply(t, ctx.dim, index=ctx.outputs[1])), None


class SortStable(Sort):
    """``sort(stable=...)``: torch's other overload (``SortBackward1``), the same sort."""

    node_name = "SortBackward1"


def _sorted_indices(x, dim, descending):
    """Where each element of the sorted ``x`` comes from, ties in their order. Descending:
    the ascending order of ``x`` reversed along ``dim``, reversed back (so ties keep their
    order, and NaN, the largest, comes first)."""
    if not descending:
        return stable_argsort(x, dim)
    xp = array_module(x)
    backwards = stable_argsort(xp.flip(x, axis=dim), dim)
    return (x.shape[dim] - 1) - xp.flip(backwards, axis=dim)


def sort(input, dim=-1, descending=False, *, stable=None):
    """The values along ``dim`` in order, and the indices they came from.

    >>> import teachgrad as tg
    >>> tg.tensor([3.0, 1.0, 2.0]).sort()
    teachgrad.return_types.sort(
    values=tensor([1., 2., 3.]),
    indices=tensor([1, 2, 0]))
    """
    op = Sort if stable is None else SortStable
    if stable is not None:
        flag(stable)
    return return_types.sort(*op.apply(input, dim, flag(descending)))


def argsort(input, dim=-1, descending=False, *, stable=False):
    """The indices that sort ``input`` along ``dim`` (``sort(...).indices``).

    >>> import teachgrad as tg
    >>> tg.tensor([3.0, 1.0, 2.0]).argsort(descending=True)
    tensor([0, 2, 1])
    """
    flag(stable)
    x = input._data
    _, dim = _given_and_wrapped(dim, x.ndim)
    if x.ndim == 0:
        return wrap_array(array_module(x).zeros((), dtype="int64"))
    return wrap_array(row_major(_sorted_indices(x, dim, flag(descending))))


def nonzero(input, *, as_tuple=False):
    """The indices of the elements that are not zero: one row per element (``(n, ndim)``),
    or with ``as_tuple`` one tensor per dim.

    >>> import teachgrad as tg
    >>> tg.tensor([[0.0, 2.0], [3.0, 0.0]]).nonzero()
    tensor([[0, 1],
            [1, 0]])
    """
    x = input._data
    xp = array_module(x)
    found = xp.nonzero(x.reshape(1) if x.ndim == 0 else x)  # (a 0-d input: as one element)
    if as_tuple:
        return tuple(wrap_array(i.astype("int64")) for i in found)
    if x.ndim == 0:  # (torch: one row of no indices, or none)
        return wrap_array(xp.zeros((found[0].shape[0], 0), dtype="int64"))
    return wrap_array(xp.stack(found, axis=1).astype("int64"))


def count_nonzero(input, dim=None):
    """How many elements are not zero (over ``dim``, or all).

    >>> import teachgrad as tg
    >>> tg.tensor([[0.0, 2.0], [3.0, 4.0]]).count_nonzero(dim=1)
    tensor([1, 2])
    """
    x = input._data
    dims = None if dim is None else tuple(dim) if isinstance(dim, tuple | list) else (dim,)
    if dims is not None:
        dims = tuple(_given_and_wrapped(d, x.ndim)[1] for d in dims)
        for d in {d for d in dims if dims.count(d) > 1}:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
    counts = (x != 0).sum(axis=dims)
    return wrap_array(array_module(x).asarray(counts, dtype="int64"))

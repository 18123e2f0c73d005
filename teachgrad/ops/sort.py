"""Sorting and finding: ``sort`` (values and the indices they came from), ``argsort``,
``nonzero``, ``count_nonzero``, ``unique`` / ``unique_consecutive``, ``searchsorted`` /
``bucketize`` (where values would go in a sorted sequence), and ``isin``.

Only ``sort``'s values have a gradient: each value came from one input element (its index),
so backward puts each value's gradient back there, the inverse of the gather that sorting
is (``SortBackward0``). Indices and counts are integers: no gradient, as in torch.
``unique``'s values are recorded, as torch records them, by a node whose backward refuses
(torch has no derivative for them). Ties keep
their order (a stable sort), as torch's CPU sort does; NaN counts as the largest value.
"""

from __future__ import annotations

from .._backend import array_module, stable_argsort
from .._layout import row_major
from .._tensor import Tensor, _wrap_dim, wrap_array
from ..autograd.builtin import Builtin, remember_dim
from .index import Gather, Scatter
from .reduce import flag, reduction_dims, return_types


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
        remember_dim(ctx, dim, x.ndim)  # (ctx.given_dim shows, ctx.dim works)
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
    dim = _wrap_dim(dim, x.ndim)
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
    dims = None if dim is None else reduction_dims(dim, x.ndim)
    counts = (x != 0).sum(axis=dims)
    return wrap_array(array_module(x).asarray(counts, dtype="int64"))


# --------------------------------------------------------------------------- unique


class Unique(Builtin):
    """``unique`` (all elements): the sorted distinct values, where each element went
    (``inverse``) and how often each value came (``counts``); torch's node, with no
    derivative."""

    node_name = "Unique2Backward0"
    formula = {"self": "no derivative: backward raises"}
    op = "_unique2"

    @staticmethod
    def forward(ctx, a, dim):
        x = a._data
        xp = array_module(x)
        flat = dim is None
        found = xp.unique(
            x.reshape(-1) if flat else x, return_inverse=True, return_counts=True, axis=dim
        )
        values, inverse, counts = found
        inverse = inverse.reshape(x.shape if flat else (x.shape[dim],))
        return values, inverse.astype("int64"), counts.astype("int64")

    @classmethod
    def backward(cls, ctx, *grads):
        raise NotImplementedError(
            f"the derivative for '{cls.op}' is not implemented.\n  Which element a distinct value "
            "stands for is a choice, not a function of the input: no gradient flows through it."
        )


class UniqueDim(Unique):
    """``unique(dim=...)``: distinct slices along ``dim``."""

    node_name, op = "UniqueDimBackward0", "unique_dim"


class UniqueConsecutive(Unique):
    """``unique_consecutive``: each run of equal values (or slices along ``dim``) kept once,
    in order."""

    node_name, op = "UniqueConsecutiveBackward0", "unique_consecutive"

    @staticmethod
    def forward(ctx, a, dim):
        x = a._data
        xp = array_module(x)
        rows = x.reshape(-1, 1) if dim is None else xp.moveaxis(x, dim, 0).reshape(x.shape[dim], -1)
        starts = xp.ones(rows.shape[0], dtype=bool)
        starts[1:] = (rows[1:] != rows[:-1]).any(axis=1)
        inverse = xp.cumsum(starts) - 1
        first = xp.nonzero(starts)[0]
        counts = xp.diff(xp.append(first, rows.shape[0]))
        values = x.reshape(-1)[first] if dim is None else xp.take(x, first, axis=dim)
        inverse = inverse.reshape(x.shape) if dim is None else inverse
        return values, inverse.astype("int64"), counts.astype("int64")


def _unique_results(found, return_inverse, return_counts):
    """torch's shape of the answer: the values alone, or a tuple with what was asked for."""
    values, inverse, counts = found
    if not (return_inverse or return_counts):
        return values
    return (values, *((inverse,) if return_inverse else ()), *((counts,) if return_counts else ()))


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):  # noqa: A002
    """The distinct values (sorted), and optionally where each element went and how often
    each value came; with ``dim``, the distinct slices along it.

    >>> import teachgrad as tg
    >>> tg.unique(tg.tensor([3, 1, 3, 2]), return_counts=True)
    (tensor([1, 2, 3]), tensor([1, 1, 2]))
    """
    flag(sorted)
    if dim is None:
        return _unique_results(Unique.apply(input, None), return_inverse, return_counts)
    dim = _wrap_dim(dim, input.dim())
    return _unique_results(UniqueDim.apply(input, dim), return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """Each run of equal consecutive values (or slices along ``dim``) kept once.

    >>> import teachgrad as tg
    >>> tg.unique_consecutive(tg.tensor([1, 1, 2, 2, 3, 1]))
    tensor([1, 2, 3, 1])
    """
    if dim is not None:
        dim = _wrap_dim(dim, input.dim())
    found = UniqueConsecutive.apply(input, dim)
    return _unique_results(found, return_inverse, return_counts)


# --------------------------------------------------------------------------- searchsorted


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """Where each value of ``input`` would go in ``sorted_sequence`` to keep it sorted (along
    its last dim, row by row when it has more): before equal values, or after them with
    ``right=True`` (``side="right"``).

    >>> import teachgrad as tg
    >>> tg.searchsorted(tg.tensor([1.0, 3.0, 5.0]), tg.tensor([3.0, 6.0]))
    tensor([1, 3])
    """
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(
                f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )
        if right and side == "left":
            raise RuntimeError(
                "torch.searchsorted(): side and right can't be set to opposites, got side of "
                "left while right was True"
            )
        right = side == "right"
    seq = sorted_sequence._data
    xp = array_module(seq)
    if sorter is not None:
        seq = xp.take_along_axis(seq, sorter._data, axis=-1)
    scalar = not isinstance(input, Tensor)
    values = xp.asarray(input, dtype=seq.dtype) if scalar else input._data
    where = "right" if right else "left"
    if seq.ndim == 1:
        found = xp.searchsorted(seq, values, side=where)
    else:
        rows = seq.reshape(-1, seq.shape[-1])
        wanted = values.reshape(rows.shape[0], -1)
        found = xp.stack([xp.searchsorted(r, v, side=where) for r, v in zip(rows, wanted)])
        found = found.reshape(values.shape)
    return wrap_array(xp.asarray(found, dtype="int32" if out_int32 else "int64"))


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value: ``i`` such that ``boundaries[i-1] < x <= boundaries[i]``
    (``right=True``: ``boundaries[i-1] <= x < boundaries[i]``).

    >>> import teachgrad as tg
    >>> tg.bucketize(tg.tensor([1.0, 3.5, 7.0]), tg.tensor([1.0, 3.0, 5.0]))
    tensor([0, 2, 3])
    """
    return searchsorted(boundaries, input, out_int32=out_int32, right=right)


def isin(elements, test_elements, *, assume_unique=False, invert=False):
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number).

    >>> import teachgrad as tg
    >>> tg.isin(tg.tensor([1, 2, 3]), tg.tensor([2, 5]))
    tensor([False,  True, False])
    """
    like = elements if isinstance(elements, Tensor) else test_elements
    xp = array_module(like._data)
    values = [
        v._data if isinstance(v, Tensor) else xp.asarray(v) for v in (elements, test_elements)
    ]
    found = xp.isin(values[0], values[1], assume_unique=assume_unique, invert=invert)
    return wrap_array(xp.asarray(found))

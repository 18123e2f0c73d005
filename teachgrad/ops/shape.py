"""Shape ops that copy: the result has memory of its own (the views are in ``views.py``).

``tril``/``triu`` keep one triangle of each matrix, ``flip`` and ``roll`` reorder
elements, ``repeat``/``tile`` lay copies side by side, and ``constant_pad_nd``
(what ``F.pad`` calls) adds a border or crops; its array recipe ``pad_array`` also
pads the inputs of the convolutions and poolings in ``nn.py``. Each backward
sends the gradient back the way the values came: zero the same triangle, flip
again, roll back, add up the copies, crop the border off again.

Not here: views (``views.py``); gather, scatter and index_select (``index.py``).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> (x.flip(0) * tg.tensor([1.0, 10.0, 100.0])).sum().backward(); x.grad
    tensor([100.,  10.,   1.])
"""

from __future__ import annotations

from .._backend import array_module, empty_strided
from .._layout import preserved_copy, preserved_strides, row_major
from .._profiling import recorded_as
from .._tensor import _as_int, _as_ints, _given_dim
from ..autograd.builtin import Builtin, int_tuple
from ..autograd.forward_ad import linear_jvp
from .reduce import all_as_empty, reduction_dims


def _ints(values) -> tuple:
    """An int, or a sequence of ints (also given as separate arguments), as a tuple (an int
    tensor of one element counts as an int: ``_as_ints``)."""
    if len(values) == 1 and isinstance(values[0], tuple | list):
        values = values[0]
    return _as_ints(values)


def _sizes(name, args, keyword, arg="dims"):
    """The ints of ``x.op(1, 2)``, ``x.op((1, 2))`` or ``op(x, keyword=(1, 2))``."""
    if keyword is not None:
        return _ints((keyword,))
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "{arg}"')
    return _ints(args)


# --------------------------------------------------------------------------- triangles


class Tril(Builtin):
    node_name = "TrilBackward0"
    formula = {"self": "tril(grad, diagonal)"}
    saved_args = {"diagonal": "diagonal"}
    part = "tril"  # the backend function that keeps the wanted triangle
    jvp = staticmethod(linear_jvp)  # every op here is linear: its tangent is the op of the tangent

    @classmethod
    def forward(cls, ctx, a, diagonal):
        ctx.diagonal = diagonal
        return getattr(array_module(a), cls.part)(a._data, diagonal)

    @classmethod
    def backward(cls, ctx, grad):
        # the zeroed triangle had no say in the output, so its gradient is zero as well
        return cls.apply(grad, ctx.diagonal), None


class Triu(Tril):
    node_name = "TriuBackward0"
    formula = {"self": "triu(grad, diagonal)"}
    part = "triu"


def _triangle(cls, name, input, diagonal):
    if input._data.ndim < 2:
        raise RuntimeError(
            f"{name}: input tensor must have at least 2 dimensions\n  Got shape "
            f"{tuple(input.shape)}; {name} works on the last two dims (a matrix, or a batch of them)."
        )
    return cls.apply(input, _as_int(diagonal))


def tril(input, diagonal=0):
    """The lower triangle of each matrix (the last two dims); the rest set to 0.

    ``diagonal`` moves the border: 1 keeps one diagonal above the main one, -1 drops the main one.

    >>> import teachgrad as tg
    >>> tg.ones(3, 3).tril()
    tensor([[1., 0., 0.],
            [1., 1., 0.],
            [1., 1., 1.]])
    """
    return _triangle(Tril, "tril", input, diagonal)


def triu(input, diagonal=0):
    """The upper triangle of each matrix (the last two dims); the rest set to 0.

    >>> import teachgrad as tg
    >>> tg.ones(2, 3).triu(1)
    tensor([[0., 1., 1.],
            [0., 0., 1.]])
    """
    return _triangle(Triu, "triu", input, diagonal)


# --------------------------------------------------------------------------- reordering


class Flip(Builtin):
    node_name = "FlipBackward0"
    formula = {"self": "flip(grad, dims)"}
    saved_args = {"dims": ("dims", int_tuple)}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        x = a._data
        # the backend's flip is a view (a negative stride); torch's flip copies, laid out
        # as a copy of the input would be
        out = empty_strided(x, tuple(s * x.itemsize for s in preserved_strides(x)))
        out[...] = array_module(x).flip(x, dims)
        return out

    @staticmethod
    def backward(ctx, grad):
        return Flip.apply(grad, ctx.dims), None  # flipping twice is the identity


def flip(input, *args, dims=None):
    """Reverse the order of the elements along each of ``dims`` (a copy).

    >>> import teachgrad as tg
    >>> tg.arange(6).reshape(2, 3).flip(1)
    tensor([[2, 1, 0],
            [5, 4, 3]])
    """
    dims, ndim = _sizes("flip", args, dims), input._data.ndim
    reduction_dims(dims, ndim)  # (torch's errors: a dim out of range, or given twice)
    # dims as given, -1 too (the node shows them so; flip takes them so); a 0-d tensor: none
    return Flip.apply(input, tuple(_given_dim(d, ndim) for d in dims) if ndim else ())


class Roll(Builtin):
    node_name = "RollBackward0"
    formula = {"self": "roll(grad, −shifts, dims)"}
    saved_args = {"dims": ("dims", all_as_empty), "shifts": ("shifts", int_tuple)}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, a, shifts, dims):
        ctx.shifts, ctx.dims = shifts, dims
        if not a._data.size and dims is not None:  # torch returns a clone of an empty tensor
            return preserved_copy(a._data, a._data.dtype)
        out = array_module(a).roll(a._data, shifts, dims)  # dims None: roll the flattened tensor
        return row_major(out)  # (NumPy keeps the input's memory order; torch's result is fresh)

    @staticmethod
    def backward(ctx, grad):
        back = -ctx.shifts if ctx.dims is None else tuple(-s for s in ctx.shifts)
        return Roll.apply(grad, back, ctx.dims), None, None


def roll(input, shifts, dims=None):
    """Shift the elements along ``dims`` by ``shifts``; those pushed off one end come back
    at the other. Without ``dims`` the tensor is rolled as if flattened.

    >>> import teachgrad as tg
    >>> tg.arange(4).roll(1), tg.arange(4).reshape(2, 2).roll(-1, 1)
    (tensor([3, 0, 1, 2]), tensor([[1, 0],
            [3, 2]]))
    """
    shifts = _ints((shifts,))
    dims = () if dims is None else _ints((dims,))
    if not shifts:
        raise RuntimeError("`shifts` required\n  Give at least one shift, e.g. x.roll(1).")
    if len(shifts) != len(dims) and (dims or len(shifts) > 1):
        raise RuntimeError(
            f"shifts and dimensions must align. shifts: {len(shifts)}, dims:{len(dims)}\n"
            "  Give one shift per dim (or a single shift and no dims to roll the flattened tensor)."
        )
    ndim = input._data.ndim
    if not dims:
        return Roll.apply(input, shifts[0], None)
    if input._data.size == 0:  # nothing to move: torch checks no dim (and copies the layout)
        return Roll.apply(input, shifts, dims)
    if ndim == 0:
        raise IndexError(
            f"Dimension specified as {dims[0]} but tensor has no dimensions\n"
            "  A 0-d tensor has no dims to roll along; leave dims out."
        )
    return Roll.apply(input, shifts, tuple(_given_dim(d, ndim) for d in dims))  # (-1 as given)


# --------------------------------------------------------------------------- copies side by side


class Repeat(Builtin):
    node_name = "RepeatBackward0"
    formula = {"self": "grad summed over the copies"}
    saved_args = {"repeats": ("repeats", int_tuple), "self_sym_sizes": "in_shape"}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, a, repeats):
        ctx.in_shape, ctx.repeats = a._data.shape, repeats
        return array_module(a).tile(a._data, repeats)

    @staticmethod
    def backward(ctx, grad):
        # output dim d holds repeats[d] copies of input dim d one after the other: split it
        # into (copy, position) and add the copies up
        sizes = (1,) * (len(ctx.repeats) - len(ctx.in_shape)) + tuple(ctx.in_shape)
        split = []
        for r, s in zip(ctx.repeats, sizes, strict=True):
            split += [r, s]
        copies = tuple(range(0, len(split), 2))
        return grad.reshape(split).sum(copies).reshape(ctx.in_shape), None


def repeat(input, *repeats):
    """Copies of the tensor side by side: ``repeats[d]`` of them along dim d (a method only,
    as in torch). Extra leading ``repeats`` add new leading dims.

    >>> import teachgrad as tg
    >>> tg.tensor([1, 2]).repeat(2, 2)
    tensor([[1, 2, 1, 2],
            [1, 2, 1, 2]])
    """
    repeats = _sizes("repeat", repeats, None, "repeats")
    shape = input._data.shape
    if len(repeats) < len(shape):
        raise RuntimeError(
            "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor\n"
            f"  The tensor has {len(shape)} dims but {len(repeats)} repeats were given; "
            "tile() adds the missing leading 1s for you."
        )
    out = [r * s for r, s in zip(repeats, (1,) * (len(repeats) - len(shape)) + shape)]
    if any(n < 0 for n in out):
        raise RuntimeError(
            f"Trying to create tensor with negative dimension {next(n for n in out if n < 0)}: {out}\n"
            f"  The repeat counts {list(repeats)} must be >= 0."
        )
    # (torch lets a negative count through where the dim is empty: the result is empty either way)
    return Repeat.apply(input, tuple(max(r, 0) for r in repeats))


@recorded_as("aten::tile")
def tile(input, *args, dims=None):
    """``repeat`` that also accepts fewer counts than dims (the missing leading ones are 1).

    >>> import teachgrad as tg
    >>> tg.tensor([[1, 2], [3, 4]]).tile(2)
    tensor([[1, 2, 1, 2],
            [3, 4, 3, 4]])
    """
    dims = _sizes("tile", args, dims)
    return repeat(input, (1,) * (input._data.ndim - len(dims)) + dims)


# --------------------------------------------------------------------------- padding


def pad_array(x, pairs, value=0):
    """A backend array ``x`` with its last ``len(pairs)`` dims padded with ``value``, or cropped
    for negative amounts: ``pairs[i] = (before, after)`` for the i-th of those dims. One copy.

    The one padding recipe: ``constant_pad_nd`` pads with it, and so do the convolutions and
    poolings of ``nn.py``. It does not check anything: a crop past the far side keeps nothing
    of that dim (``constant_pad_nd`` refuses such pads for the user, as torch does).

    >>> import numpy as np
    >>> pad_array(np.ones((2, 2)), ((1, 0), (0, -1)))  # a row of zeros on top, last column cropped
    array([[0.],
           [1.],
           [1.]])
    """
    xp = array_module(x)
    lead = x.ndim - len(pairs)
    out_shape = x.shape[:lead] + tuple(n + b + a for n, (b, a) in zip(x.shape[lead:], pairs))
    out = xp.full(out_shape, value, dtype=x.dtype)
    source, target = [slice(None)] * lead, [slice(None)] * lead
    for n, (before, after) in zip(x.shape[lead:], pairs):
        start, stop = max(-before, 0), n - max(-after, 0)  # what survives the cropping
        kept = max(stop - start, 0)
        source.append(slice(start, start + kept))
        target.append(slice(max(before, 0), max(before, 0) + kept))
    out[tuple(target)] = x[tuple(source)]
    return out


class ConstantPadNd(Builtin):
    node_name = "ConstantPadNdBackward0"
    formula = {"self": "grad with the padding cropped off"}  # (and zeros where pad < 0 cropped)
    saved_args = {"pad": ("pairs", lambda pairs: tuple(n for pair in pairs[::-1] for n in pair))}

    @staticmethod
    def forward(ctx, a, pairs, value):
        ctx.pairs = pairs
        return pad_array(a._data, pairs, value)

    @staticmethod
    def backward(ctx, grad):
        # the opposite amounts crop the border off again (and put zeros where the input was cropped)
        undo = tuple((-before, -after) for before, after in ctx.pairs)
        return ConstantPadNd.apply(grad, undo, 0), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return ConstantPadNd.apply(t, ctx.pairs, 0)  # the border is a constant: its tangent is 0


def constant_pad_nd(input, pad, value=0.0):
    """Pad with ``value``: ``pad = (left, right)`` for the last dim, then ``(top, bottom)`` for
    the one before, and so on (the convention of ``F.pad``). Negative pads crop.

    >>> import teachgrad as tg
    >>> tg.constant_pad_nd(tg.ones(2, 2), (1, 0, 0, 1))
    tensor([[0., 1., 1.],
            [0., 1., 1.],
            [0., 0., 0.]])
    """
    pad = tuple(int(p) for p in pad)
    ndim = input._data.ndim
    if len(pad) % 2:
        raise RuntimeError(
            f"Length of pad must be even but instead it equals {len(pad)}\n"
            "  pad holds a (before, after) pair for each padded dim, the last dim first."
        )
    if len(pad) > 2 * ndim:
        raise RuntimeError(
            "Length of pad should be no more than twice the number of dimensions of the input. "
            f"Pad length is {len(pad)} while the input has {ndim} dimensions.\n"
            "  pad holds one (before, after) pair per dim, the last dim first."
        )
    # (before, after) for the padded dims in order: pad names the last dim first
    pairs = tuple(reversed([(pad[i], pad[i + 1]) for i in range(0, len(pad), 2)]))
    for d, (before, after) in enumerate(pairs, ndim - len(pairs)):
        size = input._data.shape[d]
        if size + min(before, 0) + min(after, 0) < 0:  # cropping to nothing is fine, past it not
            raise RuntimeError(
                f"narrow(): length must be non-negative.\n  The pads ({before}, {after}) crop more "
                f"than the {size} elements of dim {d} (input shape {tuple(input.shape)})."
            )
    return ConstantPadNd.apply(input, pairs, value)

"""Shape ops and basic indexing. Most return *views*: new tensors on the same memory.

A view shares its base's storage and version counter (``view_of_input = True``
tells ``Function.apply`` so), so changing one changes the other, exactly as in
torch. The backward of a view op undoes the shape change on the gradient:
``reshape`` back, ``permute`` with the inverse permutation, sum over expanded
dims, or place the gradient of a slice into zeros of the input's shape.

Also here: ``cat`` and ``stack`` (copies, not views) and ``__getitem__`` for
basic indices (ints, slices, None, Ellipsis).

    >>> import teachgrad as tg
    >>> x = tg.zeros(2, 3)
    >>> v = x.t(); v._base is x, v.stride()
    (True, (1, 3))
"""

from __future__ import annotations

import math
import operator

from .._arguments import refusal
from .._backend import array_module, dtype, expanded, result_type, strided_view
from .._layout import row_major
from .._printing import legacy_type_name, scalar_name
from .._profiling import recorded_as
from .._tensor import (
    Tensor,
    _as_int,
    _as_ints,
    _given_and_wrapped,
    _given_dim,
    _wrap_dim,
    wrap_array,
)
from ..autograd.builtin import Builtin, int_tuple, remember_dim
from ..autograd.forward_ad import linear_jvp
from .pointwise import clone_like, same_device
from .reduce import reduction_dims, sum_to


class _View(Builtin):
    view_of_input = True
    jvp = staticmethod(linear_jvp)  # a view of the tangent: views are linear


# --------------------------------------------------------------------------- reshape family


def _infer_shape(shape, numel: int) -> tuple:
    """Resolve one -1 in ``shape`` and check the element count, with torch's errors."""
    shape = tuple(map(operator.index, shape))  # (not int(): a float size is an error)
    known, inferred = 1, False
    for i, s in enumerate(shape):  # (in order, as torch: the first bad size is the error)
        if s == -1:
            if inferred:
                raise RuntimeError("only one dimension can be inferred")
            inferred = True
        elif s < 0:
            raise RuntimeError(f"invalid shape dimension {s} at index {i} of shape {list(shape)}")
        else:
            known *= s
    if -1 in shape:
        if known == 0 and numel == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {list(shape)} because the "
                "unspecified dimension size -1 can be any value and is ambiguous"
            )
        if known == 0 or numel % known:
            raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
        shape = tuple(numel // known if s == -1 else s for s in shape)
    elif known != numel:
        raise RuntimeError(f"shape '{list(shape)}' is invalid for input of size {numel}")
    return shape


def _as_view(x, shape):
    """``x`` reshaped without copying, or None when its strides make that impossible."""
    v = x.view()
    try:
        v.shape = shape
    except AttributeError:
        return None
    if 1 in shape and x.size and (not x.flags.c_contiguous or 1 in x.shape):
        # a new size-1 dim of a strided x: NumPy may give it another stride than torch
        strides = view_strides(x.shape, [s // x.itemsize for s in x.strides], shape)
        return strided_view(x, shape, [s * x.itemsize for s in strides])
    return v


def view_strides(old_shape, old_strides, shape):
    """The strides (in elements) torch gives a view of a strided tensor as ``shape``, or
    None when there is none. The old dims are cut into chunks laid out as one run of
    memory (from the last dim back); each chunk must be split exactly into new dims, which
    step through it at its innermost stride. A new size-1 dim gets the stride of the place
    it falls in, wherever that is.

    >>> view_strides((2, 3), (1, 2), (3, 2))  # a transposed matrix: no view
    >>> view_strides((4, 1, 1, 1), (1, 1, 1, 4), (4, 1, 1))
    (1, 4, 4)
    """
    strides = [0] * len(shape)
    d = len(shape) - 1  # the next new dim to give a stride, from the last
    base, chunk, filled = old_strides[-1], 1, 1  # the chunk's stride, elements, elements placed
    for k in range(len(old_shape) - 1, -1, -1):
        chunk *= old_shape[k]
        if k and (old_shape[k - 1] == 1 or old_strides[k - 1] == chunk * base):
            continue  # the chunk goes on into dim k - 1
        while d >= 0 and (filled < chunk or shape[d] == 1):
            strides[d] = filled * base
            filled *= shape[d]
            d -= 1
        if filled != chunk:
            return None
        if k:
            base, chunk, filled = old_strides[k - 1], 1, 1
    return tuple(strides) if d == -1 else None


class View(_View):
    on_arrays = True
    node_name = "ViewBackward0"
    formula = {"self": "grad reshaped to self's shape"}
    saved_args = {"self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, a, shape):
        x = a._data
        ctx.in_shape = x.shape
        v = _as_view(x, shape)
        if v is None:
            raise RuntimeError(
                "view size is not compatible with input tensor's size and stride (at least one dimension "
                "spans across two contiguous subspaces). Use .reshape(...) instead.\n"
                f"  The input (shape {tuple(x.shape)}, stride {tuple(s // x.itemsize for s in x.strides)}) "
                "is not laid out contiguously (e.g. it was transposed), so no view of it has that shape."
            )
        return v

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape), None


class ReshapeAlias(View):
    """``reshape`` of a non-contiguous tensor whose strides still allow a view."""

    node_name = "ReshapeAliasBackward0"


class UnsafeView(Builtin):
    """The new shape of a row-major copy: ``reshape`` of a tensor whose layout needs a copy
    is a ``clone`` (its node ``CloneBackward0``), then this (``UnsafeViewBackward0``), as
    in torch. The result is no view: nothing else holds the copy."""

    on_arrays = True

    node_name = "UnsafeViewBackward0"
    formula = {"self": "grad reshaped to self's shape"}
    saved_args = {"self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a._data.shape
        return a._data.reshape(shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.reshape(ctx.in_shape), None

    jvp = staticmethod(linear_jvp)


def _shape_args(shape) -> tuple:
    """A shape given as one sequence, or as separate numbers (``reshape((2, 3))``, ``reshape(2, 3)``)."""
    if len(shape) == 1 and isinstance(shape[0], tuple | list):
        shape = tuple(shape[0])
    return shape


def view(input, *shape):
    """The same memory seen with another shape (must be compatible with the strides).

    >>> import teachgrad as tg
    >>> tg.arange(6).view(2, 3)
    tensor([[0, 1, 2],
            [3, 4, 5]])
    """
    if len(shape) == 1 and isinstance(shape[0], dtype):
        return _view_as_dtype(input, shape[0])
    return View.apply(input, _infer_shape(_shape_args(shape), input._data.size))


def _view_as_dtype(input, new) -> Tensor:
    """``x.view(dtype)``: the same memory read as another dtype, bit for bit (torch's
    ``view.dtype``). With another element size the last dim grows or shrinks by the ratio.
    The result shares x's memory and version counter, but is no view for autograd and has
    no gradient: torch's is not differentiable.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 2.0]).view(tg.int32)
    tensor([1065353216, 1073741824], dtype=teachgrad.int32)
    """
    if new.itemsize != input.dtype.itemsize:
        _check_dtype_view(input, new)
    t = Tensor._make(input._data.view(new.numpy), input._counter)
    t._inference = input._inference
    return t


def _check_dtype_view(input, new) -> None:
    """torch's checks, in its order, before reading memory with another element size."""
    old, ndim = input.dtype, input._data.ndim
    what = f"to view {scalar_name(old.name)} as {scalar_name(new.name)} (different element sizes)"
    hint = "\n  The last dim is read anew, so its elements must lie one after another in memory."
    if ndim == 0:
        raise RuntimeError(f"self.dim() cannot be 0 {what}" + hint)
    checks = [("stride(-1)", input.stride(-1), "must be 1", input.stride(-1) == 1)]
    if new.itemsize > old.itemsize:  # (growing: sizes and positions must split evenly)
        ratio = new.itemsize // old.itemsize
        by = f"must be divisible by {ratio}"
        checks = [
            ("size(-1)", input.shape[-1], by, input.shape[-1] % ratio == 0),
            ("storage_offset()", input.storage_offset(), by, input.storage_offset() % ratio == 0),
            *checks,
            *[
                (f"stride({d})", input.stride(d), by, input.stride(d) % ratio == 0)
                for d in range(ndim - 1)
            ],
        ]
    for name, value, rule, ok in checks:
        if not ok:
            raise RuntimeError(f"self.{name} {rule} {what}, but got {value}" + hint)


@recorded_as("aten::reshape")
def reshape(input, *shape):
    """Another shape: a view when the layout allows, else a copy.

    >>> import teachgrad as tg
    >>> tg.arange(6).reshape(3, -1).shape
    teachgrad.Size([3, 2])
    """
    shape = _infer_shape(_shape_args(shape), input._data.size)
    if input._data.flags.c_contiguous:
        return View.apply(input, shape)
    if _as_view(input._data, shape) is not None:  # strided, but this shape still fits: a view
        return ReshapeAlias.apply(input, shape)
    return UnsafeView.apply(clone_like(input), shape)  # (a row-major copy, then its shape)


@recorded_as("aten::view_as")
def view_as(input, other):
    """``input.view(other.shape)``.

    >>> import teachgrad as tg
    >>> tg.arange(6).view_as(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    """
    return view(input, tuple(other.shape))


@recorded_as("aten::reshape_as")
def reshape_as(input, other):
    """``input.reshape(other.shape)``.

    >>> import teachgrad as tg
    >>> tg.arange(6).reshape_as(tg.zeros(3, 2)).shape
    teachgrad.Size([3, 2])
    """
    return reshape(input, tuple(other.shape))


@recorded_as("aten::flatten")
def flatten(input, start_dim=0, end_dim=-1):
    """Merge dims ``start_dim..end_dim`` into one.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3, 4).flatten(1).shape
    teachgrad.Size([2, 12])
    """
    shape = input._data.shape
    start, end = _wrap_dim(start_dim, len(shape)), _wrap_dim(end_dim, len(shape))
    if not shape:  # (its dims, 0 and -1, checked first)
        return reshape(input, (1,))
    if start > end:
        raise RuntimeError("flatten() has invalid args: start_dim cannot come after end_dim")
    if start == end:
        return input  # nothing to merge: torch returns the tensor itself
    merged = 1
    for s in shape[start : end + 1]:
        merged *= s
    return reshape(input, shape[:start] + (merged,) + shape[end + 1 :])


@recorded_as("aten::unflatten")
def unflatten(input, dim, sizes):
    """Split dim ``dim`` into several with the given ``sizes`` (one may be -1): a view.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 12).unflatten(1, (3, -1)).shape
    teachgrad.Size([2, 3, 4])
    """
    shape = input._data.shape
    if not shape and dim in (0, -1):  # (other dims: out of range, as for any op)
        raise RuntimeError(
            "unflatten got an unexpected error:\nDimension specified as 0 but tensor has no "
            "dimensions\n  A 0-d tensor has no dim to split."
        )
    dim = _wrap_dim(dim, len(shape))
    given = sizes = [operator.index(s) for s in sizes]
    if not sizes:
        raise RuntimeError(
            "unflatten: sizes must be non-empty\n  Give the sizes of the new dims, e.g. (2, -1)."
        )
    if sizes.count(-1) > 1:
        raise RuntimeError("only one dimension can be inferred\n  At most one size can be -1.")
    n = shape[dim]
    known = math.prod(s for s in sizes if s != -1)
    if -1 in sizes:
        if known == 0:
            raise RuntimeError(
                f"cannot reshape tensor of 0 elements into shape {sizes} because the unspecified "
                "dimension size -1 can be any value and is ambiguous"
            )
        sizes = [n // known if s == -1 else s for s in sizes]
    if math.prod(sizes) != n:
        raise RuntimeError(
            f"unflatten: Provided sizes {given} don't multiply up to the size of dim {dim} ({n}) in "
            f"the input tensor\n  The new dims replace dim {dim}, so their product must be {n}."
        )
    # splitting one dim in several never needs a copy, whatever the strides: always a view
    return View.apply(input, shape[:dim] + tuple(sizes) + shape[dim + 1 :])


class Squeeze(_View):
    on_arrays = True
    node_name = "SqueezeBackward1"
    formula = {"self": "grad reshaped to self's shape"}
    saved_args = {"dim": ("dims", lambda dims: dims[0] if dims else 0), **View.saved_args}

    @staticmethod
    def forward(ctx, a, dims):
        x = a._data  # (dims as given, -1 too: the node shows them so)
        ctx.in_shape = x.shape
        ctx.squeezed = [d for d in reduction_dims(dims, x.ndim) if x.shape[d] == 1]
        return x.squeeze(tuple(ctx.squeezed))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dims = inputs[1]  # (all of them: squeezed is those of size 1)

    @staticmethod
    def backward(ctx, grad):
        if not isinstance(grad, Tensor):  # arrays: one reshape does it
            return grad.reshape(ctx.in_shape), None
        # torch's unsqueeze_to puts each squeezed dim back in turn (a graph of Unsqueeze nodes)
        for d in ctx.squeezed:
            grad = grad.unsqueeze(d)
        return grad, None


class SqueezeAll(Squeeze):
    node_name = "SqueezeBackward0"
    saved_args = View.saved_args


class SqueezeDims(Squeeze):
    node_name = "SqueezeBackward2"
    saved_args = {"dim": "dims", **View.saved_args}


def squeeze(input, dim=None):
    """Remove dims of size 1 (all of them, or those in ``dim``).

    >>> import teachgrad as tg
    >>> tg.zeros(1, 3, 1).squeeze().shape, tg.zeros(1, 3, 1).squeeze(0).shape
    (teachgrad.Size([3]), teachgrad.Size([3, 1]))
    """
    return squeeze_node(input, dim).apply(input, squeeze_dims(input, dim))


def squeeze_node(input, dim):
    """Which of torch's squeeze nodes ``squeeze(input, dim)`` records: all dims, one, several."""
    return SqueezeAll if dim is None else SqueezeDims if isinstance(dim, tuple | list) else Squeeze


def squeeze_dims(input, dim) -> tuple:
    """The dims ``squeeze(input, dim)`` looks at, as given (torch's errors for bad ones)."""
    ndim = input._data.ndim
    if dim is None:
        return tuple(range(ndim))
    # (a 0-d tensor takes dim 0 or -1, and has nothing to squeeze; a dim given twice is refused)
    reduction_dims(dim, ndim)  # (torch's errors: a dim out of range, or given twice)
    dims = dim if isinstance(dim, tuple | list) else (dim,)  # (an int, or what reads as one)
    return tuple(_given_dim(d, ndim) for d in dims)


class Unsqueeze(_View):
    on_arrays = True
    node_name = "UnsqueezeBackward0"
    formula = {"self": "squeeze(grad, dim)"}
    saved_args = {"dim": "given_dim"}

    @staticmethod
    def forward(ctx, a, dim):
        dim = remember_dim(ctx, dim, a._data.ndim + 1)
        out = array_module(a).expand_dims(a._data, dim)
        return out if out.size else _unsqueezed_empty(a._data, dim, out.shape)

    @staticmethod
    def backward(ctx, grad):
        return grad.squeeze(ctx.dim), None


def _unsqueezed_empty(data, dim, shape):
    """An empty ``data`` with a new dim of size 1 at ``dim``, strided as torch strides it:
    the new dim's stride is the size times the stride of the dim it goes before (0 before a
    dim of size 0, where NumPy would pick another number)."""
    strides = data.strides
    step = data.shape[dim] * strides[dim] if dim < data.ndim else data.itemsize
    return strided_view(data, shape, strides[:dim] + (step,) + strides[dim:])


def unsqueeze(input, dim):
    """Insert a dim of size 1 at ``dim``.

    >>> import teachgrad as tg
    >>> tg.zeros(3).unsqueeze(0).shape, tg.zeros(3).unsqueeze(-1).shape
    (teachgrad.Size([1, 3]), teachgrad.Size([3, 1]))
    """
    return Unsqueeze.apply(input, _given_dim(dim, input._data.ndim + 1))


# --------------------------------------------------------------------------- dim order


class Permute(_View):
    node_name = "PermuteBackward0"
    formula = {"self": "permute(grad, inverse of dims)"}
    saved_args = {"dims": ("dims", int_tuple)}

    @staticmethod
    def forward(ctx, a, dims):
        ctx.dims = dims
        return a._data.transpose(dims)

    @staticmethod
    def backward(ctx, grad):
        inverse = [0] * len(ctx.dims)
        for i, d in enumerate(ctx.dims):
            inverse[d] = i  # (a negative d counts from the end, as the dim does)
        return permute(grad, inverse), None


def permute(input, *dims):
    """Reorder the dims (a view).

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3, 4).permute(2, 0, 1).shape
    teachgrad.Size([4, 2, 3])
    """
    if not dims:
        raise TypeError('permute() missing 1 required positional arguments: "dims"')
    dims = _as_ints(_shape_args(dims))
    ndim = input._data.ndim
    if len(dims) != ndim:  # (checked before the dims themselves; torch's message names sparse_coo)
        raise RuntimeError(
            "permute(sparse_coo): number of dimensions in the tensor input does not match the "
            f"length of the desired ordering of dimensions i.e. input.dim() = {ndim} is not equal "
            f"to len(dims) = {len(dims)}\n  permute takes one dim for each of the tensor's dims."
        )
    seen = set()
    for d in dims:  # (one at a time, as torch: a repeat is found before a later bad dim)
        wrapped = _wrap_dim(d, ndim)
        if wrapped in seen:
            raise RuntimeError("permute(): duplicate dims are not allowed.")
        seen.add(wrapped)
    return Permute.apply(input, tuple(dims))  # (as given, -1 too: the node shows them so)


class Transpose(_View):
    node_name = "TransposeBackward0"
    formula = {"self": "transpose(grad, dim0, dim1)"}
    saved_args = {
        "dim0": ("pair", operator.itemgetter(0)),
        "dim1": ("pair", operator.itemgetter(1)),
    }

    @staticmethod
    def forward(ctx, a, dim0, dim1):
        ctx.pair = (dim0, dim1)
        x = a._data
        return array_module(a).swapaxes(x, dim0, dim1) if x.ndim else x.view()  # 0-d: as it is

    @staticmethod
    def backward(ctx, grad):
        return transpose(grad, *ctx.pair), None, None


class T(Transpose):
    node_name = "TBackward0"
    formula = {"self": "gradᵀ"}
    saved_args = {}

    forward = Transpose.forward

    @staticmethod
    def backward(ctx, grad):
        return t(grad), None, None


def transpose(input, dim0, dim1):
    """Swap two dims (a view).

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).transpose(0, 1).shape
    teachgrad.Size([3, 2])
    """
    ndim = input._data.ndim
    return Transpose.apply(input, _given_dim(dim0, ndim), _given_dim(dim1, ndim))


def t(input):
    """Transpose a matrix (0-d and 1-d tensors are returned as they are, as views).

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).t().shape
    teachgrad.Size([3, 2])
    """
    return T.apply(input, *t_dims(input, "t"))


def t_dims(input, op: str) -> tuple:
    """The two dims ``t()`` swaps: (0, 1), or (0, 0) for a 0-d or 1-d tensor (``op``: the
    name torch's error gives, ``t`` or ``t_``)."""
    ndim = input._data.ndim
    if ndim > 2:
        raise RuntimeError(f"{op}() expects a tensor with <= 2 dimensions, but self is {ndim}D")
    return (0, 1) if ndim == 2 else (0, 0)


def in_place_twin(cls, node_name):
    """The view op ``cls`` under torch's name for its in-place form's node: the same rule."""
    return type(f"{cls.__name__}InPlace", (cls,), {"node_name": node_name, "__module__": __name__})


# x.t_(), x.squeeze_() ...: the nodes of the in-place view ops (``inplace.view_in_place``)
IN_PLACE = {
    cls: in_place_twin(cls, name)
    for cls, name in (
        (T, "TBackward1"),
        (Transpose, "TransposeBackward1"),
        (SqueezeAll, "SqueezeBackward3"),
        (Squeeze, "SqueezeBackward4"),
        (SqueezeDims, "SqueezeBackward5"),
        (Unsqueeze, "UnsqueezeBackward1"),
    )
}


@recorded_as("aten::movedim")
def movedim(input, source, destination):
    """Move dim(s) ``source`` to position(s) ``destination`` (a permute).

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3, 4).movedim(0, -1).shape
    teachgrad.Size([3, 4, 2])
    """
    ndim = input._data.ndim
    if isinstance(source, tuple | list) != isinstance(destination, tuple | list):
        raise TypeError("movedim: two dims, or two lists of dims")  # (checked words torch's)
    src = list(source) if isinstance(source, tuple | list) else [source]
    dst = list(destination) if isinstance(destination, tuple | list) else [destination]
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({src} dims) should contain the same "
            f"number of dims as destination ({dst} dims)\n  Give one destination for each moved dim."
        )
    for name, given in (("source", src), ("destination", dst)):
        wrapped = [_wrap_dim(d, ndim) for d in given]
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(
                f"movedim: repeated dim in `{name}` ({given})\n  Each dim can be moved only once "
                "(and to one place)."
            )
    if ndim == 0:
        return Alias.apply(input)  # nothing to move: torch returns an alias
    src = [_wrap_dim(s, ndim) for s in src]
    dst = [_wrap_dim(d, ndim) for d in dst]
    order = [d for d in range(ndim) if d not in src]
    for d, s in sorted(zip(dst, src, strict=True)):
        order.insert(d, s)
    return Permute.apply(input, tuple(order))


moveaxis = movedim


# --------------------------------------------------------------------------- expand


class Expand(_View):
    node_name = "ExpandBackward0"
    formula = {"self": "grad summed over the expanded dims"}
    saved_args = {"self_sym_sizes": "in_shape"}

    @staticmethod
    def forward(ctx, a, shape):
        ctx.in_shape = a._data.shape
        return expanded(a._data, shape)

    @staticmethod
    def backward(ctx, grad):
        return sum_to(grad, ctx.in_shape), None


def expand(input, *sizes):
    """Repeat size-1 dims (and add leading ones) without copying: a view with stride 0.

    >>> import teachgrad as tg
    >>> tg.tensor([[1.0], [2.0]]).expand(2, 3)
    tensor([[1., 1., 1.],
            [2., 2., 2.]])
    """
    if not sizes:  # (even for a 0-d tensor, which needs none: torch's signature wants them)
        raise TypeError('expand() missing 1 required positional arguments: "size"')
    sizes = tuple(map(operator.index, _shape_args(sizes)))
    return Expand.apply(input, expanded_shape(input, sizes))


def expanded_shape(input, sizes) -> tuple:
    """The shape ``input.expand(*sizes)`` has (-1: the size it had), or torch's error."""
    shape = input._data.shape
    lead = len(sizes) - len(shape)  # new leading dims
    if lead < 0:
        raise expand_error(input, sizes, None)
    target = sizes[:lead] + tuple(old if s == -1 else s for old, s in zip(shape, sizes[lead:]))
    pairs = list(enumerate(zip((1,) * lead + shape, target)))
    for i, (old, new) in reversed(pairs):  # (torch checks from the last dim)
        if new < 0 or old != new and old != 1:
            raise expand_error(input, sizes, i)
    return target


def expand_error(input, sizes, i) -> RuntimeError:
    """torch's message for the first size ``expand`` cannot give (``i``; None: too few)."""
    shape = input._data.shape
    if i is None:
        return RuntimeError(
            f"expand({legacy_type_name(input)}{{{list(shape)}}}, size={list(sizes)}): the number of "
            f"sizes provided ({len(sizes)}) must be greater or equal to the number of dimensions "
            f"in the tensor ({len(shape)})"
        )
    lead = len(sizes) - len(shape)
    if i < lead:
        return RuntimeError(
            f"The expanded size of the tensor ({sizes[i]}) isn't allowed in a leading, "
            f"non-existing dimension {i}"
        )
    old, new = shape[i - lead], sizes[i]
    return RuntimeError(
        f"The expanded size of the tensor ({new}) must match the existing size ({old}) at "
        f"non-singleton dimension {i}.  Target sizes: {list(sizes)}.  Tensor sizes: "
        f"{list(shape)}"
    )


@recorded_as("aten::expand_as")
def expand_as(input, other):
    """``input.expand(other.shape)``.

    >>> import teachgrad as tg
    >>> tg.ones(1, 3).expand_as(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    """
    return expand(input, tuple(other.shape))


# --------------------------------------------------------------------------- select, slice, index


class _EmbedGrad(Builtin):
    """Backward of select/slice: the gradient placed into zeros of the input's shape.

    Its own backward takes the same select/slice of the incoming gradient, so
    double backward through indexing works.
    """

    @staticmethod
    def forward(ctx, grad, in_shape, index, take):
        ctx.take = take
        return _embed(grad._data, in_shape, index)

    @staticmethod
    def backward(ctx, gg):
        return ctx.take(gg), None, None, None

    jvp = staticmethod(linear_jvp)


def _embed(g, in_shape, index):
    """Zeros of ``in_shape`` with ``g`` at ``index``, on arrays (_EmbedGrad's forward)."""
    out = array_module(g).zeros(in_shape, g.dtype)
    out[index] = g
    return out


def _embedded(op, grad, in_shape, index, take):
    """select/slice's backward: one differentiable op on Tensors, ``_embed`` on arrays."""
    if isinstance(grad, Tensor):
        return op.apply(grad, in_shape, index, take)
    return _embed(grad, in_shape, index)


class _SelectBackward(_EmbedGrad):
    node_name = "SelectBackwardBackward0"
    formula = {"grad_output": "select(grad, dim, index)"}


class _SliceBackward(_EmbedGrad):
    node_name = "SliceBackwardBackward0"
    formula = {"grad_output": "the same slice of grad"}


class Select(_View):
    on_arrays = True
    node_name = "SelectBackward0"
    formula = {"self": "zeros with grad at index along dim"}
    saved_args = {
        "dim": ("given", operator.itemgetter(0)),
        "index": ("given", operator.itemgetter(1)),
        "self_sym_sizes": "in_shape",
    }

    @staticmethod
    def forward(ctx, a, dim, index):
        x = a._data  # (dim and index as given, -1 too: the node shows them so)
        ctx.in_shape, ctx.given, ctx.dim = x.shape, (dim, index), _wrap_dim(dim, x.ndim)
        ctx.index = index % x.shape[ctx.dim]
        return x[(slice(None),) * ctx.dim + (ctx.index, Ellipsis)]

    @staticmethod
    def backward(ctx, grad):
        key = (slice(None),) * ctx.dim + (ctx.index, Ellipsis)
        take = lambda g: select(g, ctx.dim, ctx.index)  # noqa: E731
        return _embedded(_SelectBackward, grad, ctx.in_shape, key, take), None, None


def select(input, dim, index):
    """The slice at ``index`` along ``dim``, with that dim removed (a view).

    >>> import teachgrad as tg
    >>> tg.arange(6).reshape(2, 3).select(1, 0)
    tensor([0, 3])
    """
    shape = input._data.shape
    if not shape:
        raise IndexError("select() cannot be applied to a 0-dim tensor.")
    given, dim = _given_and_wrapped(dim, len(shape))
    index = _as_int(index)
    size = shape[dim]
    if not -size <= index < size:
        raise IndexError(
            f"select(): index {index} out of range for tensor of size {list(shape)} at dimension {dim}"
        )
    return Select.apply(input, given, index)  # (both as given: the node shows them so)


class Slice(_View):
    on_arrays = True
    node_name = "SliceBackward0"
    formula = {"self": "zeros with grad in the slice"}
    saved_args = {
        "dim": "given_dim",
        "start": ("given", operator.itemgetter(0)),
        "end": ("given", operator.itemgetter(1)),
        "step": ("given", operator.itemgetter(2)),
        "self_sym_sizes": "in_shape",
    }

    @staticmethod
    def forward(ctx, a, dim, start, stop, step):
        x = a._data  # (the arguments as given, -1 too: the node shows them so)
        ctx.in_shape, ctx.given = x.shape, (start, stop, step)
        dim = remember_dim(ctx, dim, x.ndim)
        start, stop, step = slice(start, stop, step).indices(x.shape[dim])
        ctx.bounds = (start, max(stop, start), step)  # (within the dim: 3:1 is empty at 3)
        return x[(slice(None),) * dim + (slice(*ctx.bounds), Ellipsis)]

    @staticmethod
    def backward(ctx, grad):
        key = (slice(None),) * ctx.dim + (slice(*ctx.bounds), Ellipsis)
        take = lambda g: Slice.apply(g, ctx.dim, *ctx.bounds)  # noqa: E731
        return _embedded(_SliceBackward, grad, ctx.in_shape, key, take), None, None, None, None


def check_step(step) -> None:
    """torch's ValueError for a slice step that is not positive (no reversed views)."""
    if step is not None and step <= 0:
        raise ValueError(
            "slice step cannot be zero" if step == 0 else "step must be greater than zero"
        )


_INT64_MAX = 2**63 - 1  # (the end torch's node shows for a slice with none: x[1:])


def _slice(input, dim, start, stop, step):
    """``input[..., start:stop:step]`` along ``dim``; the node shows the bounds as given (a
    missing start is 0, a missing end the largest int64, as torch shows them)."""
    check_step(step)
    slice(start, stop, step).indices(0)  # (Python's TypeError for a bound that is no int: torch's)
    given = (0 if start is None else start, _INT64_MAX if stop is None else stop, step or 1)
    return Slice.apply(input, dim, *(int(operator.index(v)) for v in given))


@recorded_as("aten::narrow")
def narrow(input, dim, start, length):
    """``length`` elements from ``start`` along ``dim`` (a view).

    >>> import teachgrad as tg
    >>> tg.arange(5).narrow(0, 1, 3)
    tensor([1, 2, 3])
    """
    if input._data.ndim == 0:
        raise RuntimeError(
            "narrow() cannot be applied to a 0-dim tensor.\n  A 0-d tensor has no dim to narrow."
        )
    given, dim = _given_and_wrapped(dim, input._data.ndim)
    size = input._data.shape[dim]
    if isinstance(start, Tensor) and (start.dim() or start._data.dtype.kind not in "iu"):
        raise RuntimeError(
            "start must be an 0-dim integral Tensor.\n  A tensor start holds one integer: "
            f"got shape {tuple(start.shape)}, dtype {str(start.dtype).split('.')[-1]}."
        )
    start, length = _as_int(start), _as_int(length)  # (start may be a 0-d tensor)
    if length < 0:
        raise RuntimeError(
            f"narrow(): length must be non-negative.\n  length is how many elements to keep; got {length}."
        )
    if not -size <= start <= size:
        raise IndexError(
            f"start out of range (expected to be in range of [{-size}, {size}], but got {start})"
        )
    start = start + size if start < 0 else start
    if start + length > size:
        raise RuntimeError(f"start ({start}) + length ({length}) exceeds dimension size ({size}).")
    return Slice.apply(input, given, start, start + length, 1)


class Alias(_View):
    node_name = "AliasBackward0"
    formula = {"self": "grad"}

    @staticmethod
    def forward(ctx, a):
        return a._data.view()

    @staticmethod
    def backward(ctx, grad):
        return grad


def basic_getitem(input, key, positions=None):
    """``x[key]`` for basic keys (ints, slices, None, ...): a view, recorded as torch does
    (one SelectBackward0 / SliceBackward0 / UnsqueezeBackward0 per indexed dim).
    ``x[key]`` itself is ``index.getitem``, which sends advanced keys elsewhere.
    ``positions``: where each entry stood in the key the user wrote (torch's errors name an
    entry by that place), when ``key`` is the basic part of a longer one.

    >>> import teachgrad as tg
    >>> x = tg.arange(12).reshape(3, 4)
    >>> basic_getitem(x, 1), basic_getitem(x, (slice(None), slice(1, 3))).shape
    (tensor([4, 5, 6, 7]), teachgrad.Size([3, 2]))
    """
    lone_slice = isinstance(key, slice)  # torch records x[:] as a slice, x[:, :] as an alias
    if not isinstance(key, tuple):
        key = (key,)
    ndim = input._data.ndim
    used = sum(1 for k in key if k is not None and k is not Ellipsis)
    if used > ndim:
        raise IndexError(f"too many indices for tensor of dimension {ndim}")
    result = input
    dim = 0  # the dimension of ``result`` that ``k`` indexes
    changed = False
    for i, k in enumerate(key):
        if k is Ellipsis:
            dim += ndim - used
        elif k is None:
            result = Unsqueeze.apply(result, dim)
            dim += 1
            changed = True
        elif isinstance(k, slice):
            if lone_slice or not whole_slice(k, result._data.shape[dim]):
                result = _slice(result, dim, k.start, k.stop, k.step)
                changed = True
            dim += 1
        else:
            k, size = int(k), result._data.shape[dim]
            if not -size <= k < size:  # (torch names the entry's place in the key)
                where = i if positions is None else positions[i]
                raise IndexError(
                    f"index {k} is out of bounds for dimension {where} with size {size}"
                )
            result = Select.apply(result, dim, k)
            changed = True
    return result if changed else Alias.apply(input)


def whole_slice(k: slice, size: int) -> bool:
    """Whether torch skips the slice ``k`` of a dim of ``size`` as taking all of it: it reads
    the numbers as written, so ``x[0:10]`` of 2 rows is skipped but ``x[-2:]`` is a slice.

    >>> whole_slice(slice(0, 10), 2), whole_slice(slice(-2, None), 2)
    (True, False)
    """
    return k.start in (None, 0) and k.step in (None, 1) and (k.stop is None or k.stop >= size)


# --------------------------------------------------------------------------- joining


def joined_dtype(tensors):
    """The (NumPy) dtype of ``cat``'s or ``stack``'s result: torch's promotion of the
    tensors' dtypes. Speed: when they all share one, it is that one, seen in one pass over
    their arrays; torch's promotion asks each tensor for its dtype as a teachgrad dtype.
    Measured 2026-11-28: ``stack`` of 64 tensors of 64 floats 0.34 -> 0.15 ms (timeit);
    ``jacobian`` (``benchmarks/bench.py`` (d)), which stacks its 64 rows, -2.1% (callgrind).

    >>> import teachgrad as tg
    >>> joined_dtype([tg.ones(2), tg.ones(2, dtype=tg.float64)])
    dtype('float64')
    """
    dtypes = {t._data.dtype for t in tensors}
    return dtypes.pop() if len(dtypes) == 1 else result_type(*tensors).numpy


class Cat(Builtin):
    node_name = "CatBackward0"
    formula = {"tensors": "grad split along dim at the tensors' sizes"}
    saved_args = {"dim": "dim"}

    @staticmethod
    def forward(ctx, dim, *tensors):
        dt = joined_dtype(tensors)
        arrays = [t._data if t._data.dtype == dt else t._data.astype(dt) for t in tensors]
        legacy = [a.ndim == 1 and a.size == 0 for a in arrays]  # torch skips these (see cat)
        if all(legacy):
            legacy[0] = False
        ctx.dim = dim
        ctx.sizes = [None if skip else a.shape[dim] for a, skip in zip(arrays, legacy)]
        joined = [a for a, skip in zip(arrays, legacy) if not skip]
        # row-major, as torch's (NumPy follows the inputs' memory order)
        return row_major(array_module(arrays[0]).concatenate(joined, axis=dim))

    @staticmethod
    def backward(ctx, grad):
        grads, start = [], 0
        for size, needed in zip(ctx.sizes, ctx.needs_input_grad[1:], strict=True):
            if size is None:  # a skipped empty tensor: its gradient is empty too
                empty = array_module(grad).zeros(0, grad._data.dtype)
                grads.append(wrap_array(empty) if needed else None)
                continue
            grads.append(narrow(grad, ctx.dim, start, size) if needed else None)
            start += size
        return (None, *grads)

    jvp = staticmethod(linear_jvp)


def cat(tensors, dim=0):
    """Join tensors along an existing dim.

    >>> import teachgrad as tg
    >>> tg.cat([tg.zeros(1, 2), tg.ones(2, 2)]).shape
    teachgrad.Size([3, 2])
    """
    tensors = _tensor_list(tensors, "cat")

    same_device(*tensors)
    zero_d = next((i for i, t in enumerate(tensors) if t._data.ndim == 0), None)
    if zero_d is not None:  # (checked first, as torch does)
        raise RuntimeError(f"zero-dimensional tensor (at position {zero_d}) cannot be concatenated")
    # torch still accepts (and skips) legacy empty 1-d tensors in cat
    kept = [t for t in tensors if not (t._data.ndim == 1 and t._data.size == 0)]
    if not kept:  # only those: torch checks no dim, and joins them into one more
        return Cat.apply(0, *tensors)
    ref = kept[0]._data
    given, dim = _given_and_wrapped(dim, ref.ndim)
    for i, t in enumerate(kept):
        s = t._data.shape
        if len(s) != ref.ndim:
            raise RuntimeError(
                f"Tensors must have same number of dimensions: got {ref.ndim} and {len(s)}"
            )
        for j, (a, b) in enumerate(zip(ref.shape, s)):
            if j != dim and a != b:
                raise RuntimeError(
                    f"Sizes of tensors must match except in dimension {dim}. Expected size {a} but got "
                    f"size {b} for tensor number {i} in the list.\n  Shapes {tuple(ref.shape)} and "
                    f"{tuple(s)} differ in dim {j}; only dim {dim}, the one joined along, may differ."
                )
    return Cat.apply(given, *tensors)  # (the node shows dim as given; -1 works throughout)


class Stack(Builtin):
    node_name = "StackBackward0"
    formula = {"tensors": "select(grad, dim, i) for tensors[i]"}
    saved_args = {"dim": "dim"}

    @staticmethod
    def forward(ctx, dim, *tensors):
        dt = joined_dtype(tensors)
        arrays = [t._data if t._data.dtype == dt else t._data.astype(dt) for t in tensors]
        ctx.dim = dim
        return row_major(array_module(arrays[0]).stack(arrays, axis=dim))  # (as cat's)

    @staticmethod
    def backward(ctx, grad):
        return (
            None,
            *(
                select(grad, ctx.dim, i) if needed else None
                for i, needed in enumerate(ctx.needs_input_grad[1:])
            ),
        )

    jvp = staticmethod(linear_jvp)


def stack(tensors, dim=0):
    """Join tensors along a new dim.

    >>> import teachgrad as tg
    >>> tg.stack([tg.zeros(2), tg.ones(2)], dim=1).shape
    teachgrad.Size([2, 2])
    """
    tensors = _tensor_list(tensors, "stack")

    same_device(*tensors)
    shape = tensors[0]._data.shape
    for i, t in enumerate(tensors):
        if t._data.shape != shape:
            raise RuntimeError(
                f"stack expects each tensor to be equal size, but got {list(shape)} at entry 0 and "
                f"{list(t._data.shape)} at entry {i}"
            )
    return Stack.apply(_given_dim(dim, len(shape) + 1), *tensors)  # (-1 works throughout)


def _tensor_list(tensors, name):
    if isinstance(tensors, Tensor):
        raise TypeError(
            f"{name}(): argument 'tensors' (position 1) must be tuple of Tensors, not Tensor"
        )
    tensors = list(tensors)
    if not tensors:
        if name == "cat":
            raise ValueError("teachgrad.cat(): expected a non-empty list of Tensors")
        raise RuntimeError(f"{name} expects a non-empty TensorList")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {i} in argument 0, but got {type(t).__name__}"
            )
    return tensors


class Unbind(_View):
    node_name = "UnbindBackward0"
    returns_many_views = True
    formula = {"self": "stack([grad0, grad1, …], dim)"}
    saved_args = {"dim": "given_dim"}

    @staticmethod
    def forward(ctx, a, dim):
        x = a._data
        dim = remember_dim(ctx, dim, x.ndim)
        return tuple(x[(slice(None),) * dim + (i, Ellipsis)] for i in range(x.shape[dim]))

    @staticmethod
    def backward(ctx, *grads):
        return stack(list(grads), ctx.dim), None


def unbind(input, dim=0):
    """All slices along ``dim``, as a tuple of views (not to be changed in place).

    >>> import teachgrad as tg
    >>> [t.tolist() for t in tg.arange(4).reshape(2, 2).unbind(1)]
    [[0, 2], [1, 3]]
    """
    given = _given_dim(dim, input._data.ndim)  # (the node shows it so, -1 too)
    if input._data.ndim == 0:  # (of a 0-d tensor, -1 is dim 0 in the error)
        raise IndexError(
            f"Dimension specified as {_wrap_dim(dim, 0)} but tensor has no dimensions\n  A 0-d "
            "tensor has no dim to unbind."
        )
    out = Unbind.apply(input, given)
    return out if isinstance(out, tuple) else (out,)


class Split(_View):
    node_name = "SplitWithSizesBackward0"
    returns_many_views = True
    formula = {"self": "cat([grad0, grad1, …], dim)"}
    saved_args = {"dim": "given_dim", "self_sym_sizes": "in_shape", "split_sizes": "sizes"}

    @staticmethod
    def forward(ctx, a, sizes, dim):
        x = a._data
        dim = remember_dim(ctx, dim, x.ndim)
        bounds = [0]
        for s in sizes:
            bounds.append(bounds[-1] + s)
        return tuple(
            x[(slice(None),) * dim + (slice(lo, hi), Ellipsis)]
            for lo, hi in zip(bounds, bounds[1:])
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.in_shape, ctx.sizes = inputs[0]._data.shape, inputs[1]

    @staticmethod
    def backward(ctx, *grads):
        return cat(list(grads), ctx.dim), None, None


class SplitEqual(Split):
    node_name = "SplitBackward0"
    saved_args = {
        "dim": "given_dim",
        "self_sym_sizes": "in_shape",
        "split_size": ("sizes", operator.itemgetter(0)),
    }


class UnsafeSplitWithSizes(Split):
    """``unsafe_split_with_sizes``: the same pieces on the same memory, but not views to
    autograd: no ``_base``, a version counter of their own, so changing one in place is
    allowed and goes unnoticed by the input (that is the "unsafe": the caller promises not
    to, as torch's RNN code does)."""

    node_name = "UnsafeSplitWithSizesBackward0"
    view_of_input = returns_many_views = False


class UnsafeSplit(UnsafeSplitWithSizes):
    node_name = "UnsafeSplitBackward0"
    saved_args = SplitEqual.saved_args


_SAFE, _UNSAFE = (SplitEqual, Split), (UnsafeSplit, UnsafeSplitWithSizes)


def split(input, split_size_or_sections, dim=0):
    """Pieces along ``dim``: of ``split_size`` each (last may be smaller), or of the listed sizes.

    >>> import teachgrad as tg
    >>> [t.tolist() for t in tg.arange(5).split(2)]
    [[0, 1], [2, 3], [4]]
    """
    if isinstance(split_size_or_sections, Tensor) and not split_size_or_sections.ndim:
        split_size_or_sections = int(split_size_or_sections)  # (as torch's split reads one)
    try:
        return _split(input, split_size_or_sections, dim)
    except Exception as error:  # torch's split calls one of two ops, with these by position
        one = isinstance(split_size_or_sections, int)
        args = (input, split_size_or_sections, dim)
        raise refusal("split" if one else "split_with_sizes", args, {}, error)  # noqa: B904


def split_with_sizes(input, split_sizes, dim=0):
    """Pieces of the listed sizes along ``dim`` (views); the sizes must add up to the dim.

    >>> import teachgrad as tg
    >>> [t.tolist() for t in tg.arange(5).split_with_sizes([1, 4])]
    [[0], [1, 2, 3, 4]]
    """
    return _split(input, _sizes(split_sizes), dim)


def unsafe_split(input, split_size, dim=0):
    """``split(split_size)`` whose pieces are not views to autograd (``UnsafeSplitBackward0``):
    they share the input's memory, but changing one in place goes unnoticed.

    >>> import teachgrad as tg
    >>> pieces = tg.arange(5).unsafe_split(2); pieces, pieces[0]._base
    ((tensor([0, 1]), tensor([2, 3]), tensor([4])), None)
    """
    return _split(input, _as_int(split_size), dim, _UNSAFE)


def unsafe_split_with_sizes(input, split_sizes, dim=0):
    """``split_with_sizes`` whose pieces are not views to autograd (see ``unsafe_split``).

    >>> import teachgrad as tg
    >>> tg.arange(3).unsafe_split_with_sizes([2, 1])
    (tensor([0, 1]), tensor([2]))
    """
    return _split(input, _sizes(split_sizes), dim, _UNSAFE)


def _sizes(split_sizes) -> list:
    """A list of sizes, as the ``_with_sizes`` ops take (one int is refused: a TypeError,
    which ``checked`` words as torch's parser does)."""
    if not isinstance(split_sizes, tuple | list):
        raise TypeError("split_sizes is a list of ints")
    return list(split_sizes)


def _split(input, split_size_or_sections, dim, classes=_SAFE):
    """split's work: ``classes`` are the nodes of one size and of listed sizes."""
    if input._data.ndim == 0:
        raise RuntimeError(
            "split expects at least a 1-dimensional tensor\n  A 0-d tensor has no dim to split."
        )
    one = isinstance(split_size_or_sections, int)
    size = _as_int(split_size_or_sections) if one else None  # (not a bool)
    if one and size < 0:  # (checked before the dim, as torch's split)
        raise RuntimeError(f"split expects split_size be non-negative, but got split_size={size}")
    given_dim, dim = _given_and_wrapped(dim, input._data.ndim)
    n = input._data.shape[dim]
    if one:
        if size == 0 and n:
            raise RuntimeError(
                f"split_size can only be 0 if dimension size is 0, but got dimension size of {n}\n"
                "  Pieces of size 0 would never cover the dim; pick a size >= 1."
            )
        sizes = [min(size, n - start) for start in range(0, n, size)] if n else [0]
        cls = classes[0]
    else:
        sizes = [operator.index(s) for s in split_size_or_sections]
        if any(s < 0 for s in sizes):
            raise RuntimeError(
                "split_with_sizes expects split_sizes have only non-negative entries, but got "
                f"split_sizes={sizes}"
            )
        if sum(sizes) != n:
            raise RuntimeError(
                f"split_with_sizes expects split_sizes to sum exactly to {n} (input tensor's size at "
                f"dimension {given_dim}), but got split_sizes={sizes}"
            )
        cls = classes[1]
    out = cls.apply(input, tuple(sizes), given_dim)
    return out if isinstance(out, tuple) else (out,)


@recorded_as("aten::chunk")
def chunk(input, chunks, dim=0):
    """Split into ``chunks`` pieces of (nearly) equal size along ``dim``.

    >>> import teachgrad as tg
    >>> [t.tolist() for t in tg.arange(5).chunk(2)]
    [[0, 1, 2], [3, 4]]
    """
    return _chunk(input, chunks, dim, _SAFE)


def unsafe_chunk(input, chunks, dim=0):
    """``chunk`` whose pieces are not views to autograd (see ``unsafe_split``).

    >>> import teachgrad as tg
    >>> [t.tolist() for t in tg.arange(5).unsafe_chunk(2)]
    [[0, 1, 2], [3, 4]]
    """
    return _chunk(input, chunks, dim, _UNSAFE)


def _chunk(input, chunks, dim, classes):
    if input._data.ndim == 0:
        raise RuntimeError(
            "chunk expects at least a 1-dimensional tensor\n  A 0-d tensor has no dim to split."
        )
    chunks = _as_int(chunks)
    if chunks <= 0:
        raise RuntimeError("chunk expects `chunks` to be greater than 0, got: " + str(chunks))
    n = input._data.shape[_wrap_dim(dim, input._data.ndim)]
    if n == 0:  # torch still gives `chunks` pieces, all empty
        return _split(input, [0] * chunks, dim, classes)
    return _split(input, -(-n // chunks), dim, classes)


def _diagonal_view(array, offset, dim1, dim2):
    """The (writable) view of ``array``'s diagonal: dims dim1, dim2 replaced by one last dim."""
    rows, cols = array.shape[dim1], array.shape[dim2]
    length = max(0, min(rows, cols - offset) if offset >= 0 else min(rows + offset, cols))
    start = [0] * array.ndim
    if length:
        start[dim2 if offset >= 0 else dim1] = abs(offset)
    first = array[tuple(slice(s, None) for s in start)] if length else array
    keep = [d for d in range(array.ndim) if d not in (dim1, dim2)]
    shape = tuple(array.shape[d] for d in keep) + (length,)
    strides = tuple(array.strides[d] for d in keep) + (array.strides[dim1] + array.strides[dim2],)
    return strided_view(first, shape, strides)


def _windows(array, dim, size, step):
    """The (writable) view of ``array``'s windows along ``dim``: ``size`` elements each, the
    next one ``step`` further on. ``dim`` then counts the windows and a last dim of ``size``
    walks inside one. (A 0-d array is one element: one window of it, or none.)"""
    if array.ndim == 0:
        return strided_view(array.reshape(1), (size,), (array.itemsize,))
    count = (array.shape[dim] - size) // step + 1
    shape = array.shape[:dim] + (count,) + array.shape[dim + 1 :] + (size,)
    stride = array.strides[dim]
    strides = array.strides[:dim] + (stride * step,) + array.strides[dim + 1 :] + (stride,)
    return strided_view(array, shape, strides)


class Unfold(_View):
    node_name = "UnfoldBackward0"
    formula = {"self": "grad of each window added back into zeros"}
    saved_args = {
        "dimension": ("args", operator.itemgetter(0)),
        "size": ("args", operator.itemgetter(1)),
        "step": ("args", operator.itemgetter(2)),
        "self_sym_sizes": "in_shape",
    }

    @staticmethod
    def forward(ctx, a, dim, size, step):
        ctx.in_shape, ctx.args = a._data.shape, (dim, size, step)
        return _windows(a._data, dim, size, step)

    @staticmethod
    def backward(ctx, grad):
        return _UnfoldBackward.apply(grad, ctx.in_shape, *ctx.args), None, None, None


class _UnfoldBackward(Builtin):
    """Backward of ``unfold``: zeros of the input's shape, each window's gradient added
    back where the window came from (windows that overlap add up)."""

    node_name = "UnfoldBackwardBackward0"
    formula = {"grad_in": "each window of grad"}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, grad, in_shape, dim, size, step):
        ctx.args = (dim, size, step)
        g = grad._data
        out = array_module(g).zeros(in_shape, g.dtype)
        if not in_shape:  # (a 0-d input: its one window, if any)
            out[...] = g.sum()
            return out
        for k in range(size):  # position k of every window: one step apart, never twice
            where = slice(k, k + step * (g.shape[dim] - 1) + 1, step)
            out[(slice(None),) * dim + (where,)] += g[..., k]
        return out

    @staticmethod
    def backward(ctx, gg):
        return Unfold.apply(gg, *ctx.args), None, None, None, None


def unfold(input, dimension, size, step):
    """The windows of ``size`` elements along ``dimension``, ``step`` apart (a view):
    ``dimension`` counts the windows, a new last dim walks inside each.

    >>> import teachgrad as tg
    >>> tg.arange(5).unfold(0, 3, 2)
    tensor([[0, 1, 2],
            [2, 3, 4]])
    """
    shape = input._data.shape
    dim = _wrap_dim(dimension, max(len(shape), 1))
    size, step = _as_int(size), _as_int(step)
    longest = shape[dim] if shape else 1
    if size > longest:
        raise RuntimeError(
            f"maximum size for tensor at dimension {dim} is {longest} but size is {size}\n  A "
            "window can't be longer than the dim it slides along."
        )
    if size < 0:
        raise RuntimeError(f"size is {size} but must be >= 0\n  size is the window's length.")
    if step <= 0:
        raise RuntimeError(
            f"step is {step} but must be > 0\n  step is how far each window starts after the last."
        )
    return Unfold.apply(input, dim, size, step)


class Diagonal(_View):
    node_name = "DiagonalBackward0"
    formula = {"self": "zeros with grad on the diagonal"}
    saved_args = {
        "offset": ("args", operator.itemgetter(0)),
        "dim1": ("args", operator.itemgetter(1)),
        "dim2": ("args", operator.itemgetter(2)),
        "self_sym_sizes": "in_shape",
    }

    @staticmethod
    def forward(ctx, a, offset, dim1, dim2):
        ndim = a._data.ndim  # (dims as given, -1 too: the node shows them so)
        ctx.in_shape, ctx.args = a._data.shape, (offset, dim1, dim2)
        ctx.wrapped = (offset, _wrap_dim(dim1, ndim), _wrap_dim(dim2, ndim))
        return _diagonal_view(a._data, *ctx.wrapped)

    @staticmethod
    def backward(ctx, grad):
        return _DiagonalBackward.apply(grad, ctx.in_shape, *ctx.wrapped), None, None, None


class _DiagonalBackward(Builtin):
    """Backward of ``diagonal``: the gradient written onto the diagonal of zeros."""

    node_name = "DiagonalBackwardBackward0"
    formula = {"grad_output": "diagonal(grad, offset, dim1, dim2)"}

    @staticmethod
    def forward(ctx, grad, in_shape, offset, dim1, dim2):
        ctx.args = (offset, dim1, dim2)
        g = grad._data
        out = array_module(g).zeros(in_shape, g.dtype)
        _diagonal_view(out, offset, dim1, dim2)[...] = g
        return out

    @staticmethod
    def backward(ctx, gg):
        return Diagonal.apply(gg, *ctx.args), None, None, None, None

    jvp = staticmethod(linear_jvp)


def diagonal(input, offset=0, dim1=0, dim2=1):
    """The diagonal of the ``dim1``/``dim2`` matrices (a view; the diagonal becomes the last dim).

    >>> import teachgrad as tg
    >>> tg.arange(9).reshape(3, 3).diagonal(), tg.arange(9).reshape(3, 3).diagonal(1)
    (tensor([0, 4, 8]), tensor([1, 5]))
    """
    ndim = input._data.ndim
    d1, d2 = _wrap_dim(dim1, ndim), _wrap_dim(dim2, ndim)
    if d1 == d2:
        raise RuntimeError(f"diagonal dimensions cannot be identical {dim1}, {dim2}")
    return Diagonal.apply(input, _as_int(offset), _given_dim(dim1, ndim), _given_dim(dim2, ndim))

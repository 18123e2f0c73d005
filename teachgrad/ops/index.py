"""Indexing with index tensors (copies, not views): ``x[idx]`` with integer tensors/lists and
boolean masks, ``gather``/``scatter``/``scatter_add``, ``index_select``, ``masked_fill``.

``x[idx]`` with an integer tensor gathers elements; the backward scatters the
gradient back, *adding* where an index repeats (``x[[0, 0]]`` sends two
gradients to ``x[0]``).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> x[[0, 0, 2]].sum().backward(); x.grad
    tensor([2., 0., 1.])
"""

from __future__ import annotations

import functools
import numbers
import operator
import warnings

from .._backend import array_module, numpy_module
from .._creation import scalar_of
from .._layout import broadcast_strides, iterator_strides, row_major, with_strides
from .._printing import c_type_name, scalar_type_name
from .._tensor import Tensor, _given_and_wrapped, _wrap_dim, type_name, wrap_array
from ..autograd.builtin import Builtin, remember_dim, save_list
from ..autograd.forward_ad import linear_jvp
from .pointwise import broadcast_shape, where
from .reduce import flag
from .views import basic_getitem, check_step, whole_slice


def _array_key(key, xp):
    """The key with tensors and lists turned into backend arrays NumPy/CuPy can index with."""
    out = []
    for k in key:
        if isinstance(k, Tensor):
            k = k._data
        elif isinstance(k, list | tuple | bool):
            k = xp.asarray(k)
            if k.size == 0:  # NumPy makes [] float; torch reads it as no positions
                k = k.astype(xp.int64)
        out.append(k)
    return tuple(out)


class Index(Builtin):
    """``x[key]``, ``key`` checked (``_checked_key``); ``given``: the key as it was written,
    whose index tensors torch's node keeps (``_saved_indices``)."""

    node_name = "IndexBackward0"
    formula = {"self": "zeros with grad added at indices"}
    saved_args = {"self_sym_sizes": "in_shape"}
    saved_lists = {"indices": 1}

    @staticmethod
    def forward(ctx, a, key, given=None):
        x = a._data
        ctx.in_shape = x.shape
        out = x[key]
        if out.ndim < 2 or x.flags.c_contiguous and hasattr(key[0], "dtype"):
            return out  # (a row-major x indexed from dim 0: a row-major result, as in torch)
        return _torch_index_layout(x, key, out)

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, key, *given = inputs  # (the key too is saved: a second backward is an error)
        indices = torch_indices(given[0] if given else key, a)
        ctx.to_save = (key, *save_list(ctx, "indices", indices))

    @staticmethod
    def backward(ctx, grad):
        key = ctx.saved_tensors[0]
        return _IndexPut.apply(grad, ctx.in_shape, key), None, None

    jvp = staticmethod(linear_jvp)


def _torch_index_layout(x, key, out):
    """``out = x[key]`` laid out as torch lays it out (NumPy may give the same values in
    another order in memory, e.g. dims after the indexed ones first).

    torch indexes with a TensorIterator over ``x`` (strides 0 along the indexed dims) and the
    index arrays (strides only there), ordering the result's dims as ``iterator_strides``
    says. ``key`` holds ``:``, ``...`` and integer arrays (basic entries were applied before).
    """
    if any(k is None or (hasattr(k, "dtype") and k.ndim == 0) for k in key):
        return out  # (a 0-d bool adds a dim: NumPy's layout is kept)
    used = sum(1 for k in key if k is not Ellipsis)
    dims, arrays, dim = [], [], 0  # the indexed dims of x, and their index arrays
    for k in key:
        if k is Ellipsis:
            dim += x.ndim - used
        else:
            if not isinstance(k, slice):
                dims.append(dim)
                arrays.append(k)
            dim += 1
    size = x.itemsize
    order = list(range(x.ndim))
    if dims != list(range(dims[0], dims[0] + len(dims))):  # apart: torch moves them first
        order = dims + [d for d in order if d not in dims]
        dims = list(range(len(dims)))
    before, after = order[: dims[0]], order[dims[0] + len(dims) :]
    shape = out.shape
    n_index = len(shape) - len(before) - len(after)
    src = (
        [x.strides[d] // size for d in before]
        + [0] * n_index
        + [x.strides[d] // size for d in after]
    )
    index_shape = shape[len(before) : len(before) + n_index]
    indices = [
        (0,) * len(before) + broadcast_strides(k, index_shape) + (0,) * len(after) for k in arrays
    ]
    return with_strides(out, iterator_strides(shape, [src, *indices]))


class _IndexPut(Builtin):
    """Backward of ``Index``: add the gradient into zeros at the indexed places."""

    node_name = "IndexBackwardBackward0"
    formula = {"grad_output": "grad[indices]"}

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

    jvp = staticmethod(linear_jvp)


def getitem(input, key):
    """``x[key]``: a view for basic keys (ints, slices, None, ``...``: ``views.basic_getitem``),
    a copy for advanced ones (integer or bool tensors, lists).

    >>> import teachgrad as tg
    >>> x = tg.arange(12).reshape(3, 4)
    >>> x[1], x[:, 1:3].shape, x[None, ..., 0].shape, x[[0, 2], 1]
    (tensor([4, 5, 6, 7]), teachgrad.Size([3, 2]), teachgrad.Size([1, 3]), tensor([1, 9]))
    """
    key = plain_key(input, key)
    keys = key if isinstance(key, tuple) else (key,)
    if any(_is_advanced(k) for k in keys):
        return advanced_getitem(input, keys)
    return basic_getitem(input, key)


_NOT_AN_INDEX = (
    "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid "
    "indices (got {})"
)


def plain_key(input, key):
    """``key`` checked as torch checks it first, with its 0-d integer tensors and NumPy
    ints made Python ints (so ``x[t.sum()]`` selects, as ``x[2]`` does).

    A float or a string is no index: torch's IndexError / TypeError, where NumPy would
    round the float down. A lone int can't index a 0-d tensor (``.item()`` reads it).

    >>> import teachgrad as tg
    >>> plain_key(tg.zeros(3), (tg.tensor(2), 1))
    (2, 1)
    >>> plain_key(tg.zeros(3), 1.5)
    Traceback (most recent call last):
    IndexError: only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got float)
    """
    if input._data.ndim == 0:  # every other bad key into a 0-d tensor is "too many indices"
        if isinstance(key, int) and not isinstance(key, bool) and key != 0:
            raise IndexError(f"index {key} is out of bounds for dimension 0 with size 0")
        if isinstance(key, int) and not isinstance(key, bool):  # (0 alone: torch's hint)
            raise IndexError(
                "invalid index of a 0-dim tensor. Use `tensor.item()` in Python or "
                "`tensor.item<T>()` in C++ to convert a 0-dim tensor to a number"
            )
        if isinstance(key, slice):
            check_step(key.step)
            raise IndexError("slice() cannot be applied to a 0-dim tensor.")
        return key
    if type(key) is list and _read_as_tuple(key):
        warnings.warn(_LIST_AS_TUPLE, UserWarning, stacklevel=3)
        key = tuple(key)
    if isinstance(key, tuple):
        key = tuple(_plain(k) for k in key)
        return _spelled_out(key, input._data.ndim) if key.count(Ellipsis) > 1 else key
    return _plain(key)


def _spelled_out(key, ndim):
    """A key with several ``...`` (torch allows them; NumPy one), each written out as the
    ``:`` it stands for: the dims no other entry indexes, as far as there are dims left
    (torch moves past those a later ``...`` would take beyond the last one).

    >>> _spelled_out((Ellipsis, 0, Ellipsis), 3)
    (slice(None, None, None), slice(None, None, None), 0)
    """
    widths = [key_width(k) for k in key]
    free = ndim - sum(widths)
    spelled, dim = [], 0
    for i, k in enumerate(key):
        if k is Ellipsis:
            n = max(min(free, ndim - dim - sum(widths[i + 1 :])), 0)
            spelled += [slice(None)] * n
            dim += n
        else:
            spelled.append(k)
            dim += widths[i]
    return tuple(spelled)


_LIST_AS_TUPLE = (
    "Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed "
    "in pytorch 2.9; use x[tuple(seq)] instead of x[seq].\n  A list holding None, ..., a slice, "
    "a tensor or a list is read as a tuple of keys, one per dim (as NumPy used to)."
)


def _read_as_tuple(key: list) -> bool:
    """torch's old rule (NumPy's, once): a short list holding anything but numbers is a
    tuple of keys (``x[[None]]`` is ``x[None]``), not a list of indices."""
    kinds = slice | list | tuple | Tensor
    return len(key) < 32 and any(k is None or k is Ellipsis or isinstance(k, kinds) for k in key)


_PLAIN = {int, slice, type(None), type(Ellipsis)}
_UINT8 = numpy_module().dtype("uint8")
_UINT8_MASK = (
    "indexing with dtype teachgrad.uint8 is now deprecated, please use a dtype teachgrad.bool "
    "instead.\n  A uint8 tensor as an index is read as a mask (its nonzero entries are True)."
)


def _plain(k):
    """One part of a key, checked: see ``plain_key``."""
    if type(k) in _PLAIN:  # the common parts, spared the slower checks below
        return k
    if isinstance(k, str):
        raise TypeError("new(): invalid data type 'str'")
    if isinstance(k, numbers.Real) and not isinstance(k, numbers.Integral):  # NumPy's floats too
        raise IndexError(_NOT_AN_INDEX.format(type_name(k)))
    if isinstance(k, Tensor) and k._data.dtype == _UINT8:  # torch's old masks: still masks
        if k._data.ndim:  # (a 0-d one is read as one bool, silently)
            warnings.warn(_UINT8_MASK, UserWarning, stacklevel=4)
        return k.bool()
    if isinstance(k, Tensor) and k._data.ndim == 0 and k._data.dtype.kind != "b":
        if k._data.dtype.kind not in "iu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
        return int(k)  # (on a GPU, a wait for the number, as in torch)
    if isinstance(k, numbers.Integral) and not isinstance(k, bool):  # bools are masks
        return int(k)
    if type(k) is list:
        return _list_of_indices(k)
    if not (isinstance(k, tuple | bool | Tensor) or hasattr(k, "__array__")):
        raise IndexError(_NOT_AN_INDEX.format(type_name(k)))
    return k


def _list_of_indices(k: list) -> list:
    """A list of numbers as torch reads it for indexing: the data of an int64 tensor (a float
    is cut to its int), or a mask if all are bools; a string is no number."""
    if any(isinstance(v, str) for v in k):
        raise TypeError("new(): invalid data type 'str'")
    for v in k:
        if not isinstance(v, numbers.Number | list | tuple | Tensor):  # (lists: rows of indices)
            raise RuntimeError(f"Could not infer dtype of {type_name(v)}")
    if any(isinstance(v, float) for v in k):
        return [int(v) for v in k]
    return k


def _is_advanced(k) -> bool:
    if isinstance(k, Tensor):
        return k._data.ndim > 0 or k._data.dtype.kind == "b"
    return isinstance(k, list | tuple) or hasattr(k, "__array__") or isinstance(k, bool)


def advanced_getitem(input, key):
    """``x[key]`` where ``key`` holds integer/bool tensors or lists (a copy).

    As in torch, the key's ints, slices and None are applied first, as a view (``x[0, :, i]``
    selects ``x[0]``, then indexes its last dim: NumPy would count the 0 as an index array
    too, and put the result's dims in another order); the index arrays then index that view.
    """
    if len(key) == 1 and not is_scalar_bool(key[0]):  # x[idx]: nothing to apply first (the
        return Index.apply(input, _checked_key(input, key), key)  # common case, kept quick)
    view, rest = _basic_first(input, key)
    return Index.apply(view, _checked_key(view, rest), rest)


def torch_indices(key, input) -> list:
    """The index tensors of ``key`` (into ``input``) as torch's node keeps them: one entry
    per dim up to the last one indexed, None for a dim taken whole (``:``, each dim of
    ``...``), a list or an array made a tensor.

    >>> import teachgrad as tg
    >>> i = tg.tensor([0, 2])
    >>> torch_indices((Ellipsis, i), tg.zeros(2, 3, 4))[2] is i
    True
    >>> torch_indices((slice(None), [1]), tg.zeros(2, 3))
    [None, tensor([1])]
    """
    named = sum(key_width(k) for k in key if k is not Ellipsis)
    out = []
    for k in key:
        if k is Ellipsis:
            out += [None] * (input._data.ndim - named)
        elif isinstance(k, slice):
            out.append(None)
        elif isinstance(k, Tensor):
            out.append(k)  # (the index tensor itself)
        else:  # a list or an array: a new tensor
            out.append(wrap_array(_array_key((k,), array_module(input))[0]))
    while out and out[-1] is None:  # (dims after the last index tensor are not listed)
        out.pop()
    return out


def _basic_first(input, key):
    """``(view, rest)``: ``input`` with the basic entries of ``key`` applied (torch's view
    ops, none for ``:``), and the key that indexes the view (``:`` for each of its dims that
    no index array covers)."""
    if all(_needs_no_view(k) for k in key):
        return input, key  # nothing to apply first (the common case, spared the walk below)
    ndim = input._data.ndim
    widths = [key_width(k) for k in key]
    fill = ndim - sum(w for k, w in zip(key, widths) if k is not None and k is not Ellipsis)
    basic, rest, dim, plain = [], [], 0, True
    positions = []  # where each entry of ``basic`` stood in ``key`` (torch's errors say)
    for place, (k, width) in enumerate(zip(key, widths)):
        positions += [place] * (width if _is_advanced(k) and not is_scalar_bool(k) else 1)
        if k is Ellipsis:
            basic.append(k)
            rest.append(k)
            dim += max(fill, 0)
        elif k is None:
            basic.append(k)
            rest.append(slice(None))
            plain = False
        elif is_scalar_bool(k):
            basic.append(None)  # a new dim of size 1 (an UnsqueezeBackward0 in the graph) ...
            rest.append(bool_positions(k, input))  # ... that [0] (True) or [] (False) indexes
            plain = False
        elif isinstance(k, int):
            basic.append(k)  # (its dim is gone from the view)
            dim += 1
            plain = False
        elif isinstance(k, slice):
            size = input._data.shape[dim] if dim < ndim else 0
            basic.append(k)
            rest.append(slice(None))
            plain = plain and whole_slice(k, size)  # torch skips a whole-dim slice
            dim += 1
        else:
            basic += [slice(None)] * width
            rest.append(k)
            dim += width
    if plain or dim > ndim:  # (too many indices: Index's checks say so)
        return input, key
    return basic_getitem(input, tuple(basic), positions), tuple(rest)


_WHOLE = slice(None)


def _needs_no_view(k) -> bool:
    """Whether a key entry leaves nothing to apply as a view: ``:``, ``...``, or an index
    array (a single boolean adds a dim, so it needs one)."""
    if isinstance(k, slice):
        return k == _WHOLE
    return k is Ellipsis or _is_advanced(k) and not is_scalar_bool(k)


def is_scalar_bool(k) -> bool:
    """Whether a key entry is one boolean (``True``, or a 0-d bool tensor), not a mask."""
    if isinstance(k, Tensor):
        return k._data.ndim == 0 and k._data.dtype.kind == "b"
    return isinstance(k, bool)


def bool_positions(k, input):
    """The index array torch reads a single boolean as, on the size-1 dim it adds: ``[0]``
    for True (keep the one entry), ``[]`` for False (keep none)."""
    xp = array_module(input)
    return xp.zeros(1 if bool(k._data if isinstance(k, Tensor) else k) else 0, dtype=xp.int64)


def key_width(k) -> int:
    """How many dims of the tensor a key entry indexes (a mask: its own; 0-d ones none).

    >>> import teachgrad as tg
    >>> key_width(tg.tensor([[True, False]])), key_width(None), key_width(0)
    (2, 0, 1)
    """
    if k is None or k is Ellipsis:
        return 0
    if isinstance(k, Tensor):
        return k._data.ndim if k._data.dtype.kind == "b" else 1
    if isinstance(k, bool):
        return 0
    if hasattr(k, "dtype") and hasattr(k, "ndim"):  # an array, on the CPU or a device
        return k.ndim if k.dtype.kind == "b" else 1
    if isinstance(k, list | tuple) or hasattr(k, "__array__"):
        a = numpy_module().asarray(k)
        return a.ndim if a.dtype.kind == "b" else 1
    return 1


class _CheckedKey(tuple):
    """A key ``_checked_key`` made: checked, its masks turned into positions."""


def _checked_key(input, key) -> _CheckedKey:
    """``key`` as a key NumPy/CuPy can index ``input``'s array with, after torch's checks.

    Each boolean mask becomes the positions of its True values (``nonzero``; NumPy reads
    ``x[mask]`` as ``x[mask.nonzero()]``). Finding them is the one wait a mask needs on a
    GPU (the result's size is their count); the forward and the backward then index with
    those integers, without waiting again.
    """
    xp = array_module(input)
    key = _array_key(key, xp)
    for k in key:
        if hasattr(k, "dtype") and k.dtype.kind not in "biu":
            raise IndexError("tensors used as indices must be long, int, byte or bool tensors")
    if check_key(input._data.shape, key):  # nothing selected: torch reads no index array,
        key = tuple(_unread(k, xp) for k in key)  # so NumPy must not either
    return _CheckedKey(part for k in key for part in (xp.nonzero(k) if _is_mask(k) else (k,)))


def _is_mask(k) -> bool:
    """Whether a key entry is a boolean mask (a 0-d one is not: it adds a dim, like None)."""
    return hasattr(k, "dtype") and k.dtype.kind == "b" and k.ndim > 0


def _unread(k, xp):
    """An integer index array that selects nothing, as zeros (never out of bounds)."""
    return xp.zeros_like(k) if hasattr(k, "dtype") and k.dtype.kind != "b" else k


def check_key(shape, key) -> bool:
    """torch's IndexErrors for an advanced index: indices out of bounds, masks of the wrong
    shape. True when the key selects no element (then no index array's bounds are checked).

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
    integer_indices = []  # (index, dim, size): checked together at the end
    n_arrays = 0  # torch numbers an index array by its place among them (a mask counts ndim)
    indexed = set()  # the dims an index array covers
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
            indexed.update(range(dim, dim + k.ndim))
            dim += k.ndim
            n_arrays += k.ndim
        else:
            if hasattr(k, "dtype"):
                integer_indices.append((k, n_arrays, shape[dim]))
                indexed.add(dim)
                n_arrays += 1
            elif not isinstance(k, slice):  # an int: torch selects with it, naming the dim
                integer_indices.append((k, dim, shape[dim]))
            dim += 1
    arrays = [k for k in key if hasattr(k, "dtype")]
    selected = _check_broadcast(arrays)
    nothing = _selects_nothing(shape, indexed, arrays, selected)
    if nothing:  # torch's kernel then reads no index array; but one into an empty dim is
        read = all(a.size for a in arrays) and (selected is None or 0 not in selected)
        integer_indices = [  # still refused where the arrays together hold positions
            (k, dim, size)
            for k, dim, size in integer_indices
            if not hasattr(k, "dtype") or size == 0 and read
        ]
    _check_bounds(integer_indices)
    return nothing


def _selects_nothing(shape, indexed, arrays, selected) -> bool:
    """Whether the index selects no element: a dim no array covers is empty, or an array
    is, or the arrays broadcast to no element (``selected``: their shape, None for one)."""
    if any(size == 0 for d, size in enumerate(shape) if d not in indexed):
        return True
    return any(a.size == 0 for a in arrays) or selected is not None and 0 in selected


def _check_broadcast(arrays):
    """torch's IndexError when the index arrays' shapes do not broadcast together (a mask
    counts as ``ndim`` arrays of its number of True values, as ``nonzero`` makes them);
    else the shape they broadcast to (None for fewer than two arrays)."""
    if len(arrays) < 2:
        return None
    shapes = []
    for k in arrays:
        if k.dtype.kind == "b":
            shapes += [(int(k.sum()),)] * k.ndim if k.ndim else []
        else:
            shapes.append(tuple(k.shape))
    try:
        return numpy_module().broadcast_shapes(*shapes)
    except ValueError:
        listed = ", ".join(str(list(shape)) for shape in shapes)
        raise IndexError(
            f"shape mismatch: indexing tensors could not be broadcast together with shapes {listed}"
        ) from None


def _check_bounds(integer_indices) -> None:
    """torch's IndexError for the first index out of bounds among ``(index, dim, size)``
    entries (ints or integer arrays).

    Every array's check is combined into one answer, read once: on a GPU each read makes
    the CPU wait (``x[rows, cols]`` waits once, not twice).
    """
    outside = [(k < -size) | (k >= size) for k, _, size in integer_indices]
    anywhere = [bad.any() if hasattr(bad, "any") else bad for bad in outside]
    if not bool(functools.reduce(operator.or_, anywhere, False)):
        return
    for (k, dim, size), bad in zip(integer_indices, outside):
        if bool(bad.any() if hasattr(bad, "any") else bad):
            if hasattr(k, "dtype") and size == 0:  # (torch's index kernel words it so)
                raise IndexError("index is out of bounds for dimension with size 0")
            value = int(k[bad].reshape(-1)[0]) if hasattr(k, "dtype") and k.ndim else int(k)
            raise IndexError(f"index {value} is out of bounds for dimension {dim} with size {size}")


def _lone_mask(key) -> bool:
    """The key is one bool mask (as given, before it is checked)."""
    if not (isinstance(key, tuple) and len(key) == 1 and hasattr(key[0], "dtype")):
        return False
    return key[0].dtype.kind == "b"


def _check_fits(values, target) -> None:
    """torch's error when ``values`` do not broadcast to the indexed ``target``. (Shapes live
    on the host: NumPy reads them, whatever the device.)"""
    np = numpy_module()
    shape = list(np.shape(values))
    try:  # (broadcast *to* the target: a size-1 dim there can't take more values)
        fits = np.broadcast_shapes(tuple(shape), target.shape) == target.shape
    except ValueError:
        fits = False
    if not fits:
        raise RuntimeError(
            f"shape mismatch: value tensor of shape {shape} cannot be broadcast to indexing "
            f"result of shape {list(target.shape)}"
        )


class IndexPut(Builtin):
    """``x`` with ``x[key]`` set to (or, with ``accumulate``, increased by) ``values``."""

    node_name = "IndexPutBackward0"
    formula = {"self": "grad, zeroed at indices unless accumulate", "values": "grad[indices]"}
    saved_args = {"accumulate": "accumulate"}
    saved_lists = {"indices": 1}
    number_inputs = (2,)  # a number value still gets an (empty) edge, as in torch

    @staticmethod
    def forward(ctx, a, key, values, accumulate):
        # index_put and x[idx] = v (index_put_) hand their key over as given (its tensors are
        # saved: setup_context); the backward writes with the key checked here, which is not
        # checked again
        if not isinstance(key, _CheckedKey):
            key = _array_key(key, array_module(a))
        # torch fills one value through a lone mask (masked_fill_, which casts it)
        fill = not accumulate and _lone_mask(key) and getattr(values, "numel", int)() == 1
        if not isinstance(key, _CheckedKey):
            key = _checked_key(a, key)
        ctx.to_save, ctx.accumulate = (key,), accumulate  # (saved: a second backward is an error)
        xp = array_module(a)
        out = a._data.copy()
        v = values._data if isinstance(values, Tensor) else values
        if isinstance(values, Tensor) and v.dtype != out.dtype:
            if not fill:
                _check_fits(v, out[key])  # (torch checks the shapes first)
                raise RuntimeError(
                    "Index put requires the source and destination dtypes match, got "
                    f"{scalar_type_name(a)} for the destination and {scalar_type_name(values)} for "
                    "the source.\n  Convert the values first, e.g. values.to(x.dtype)."
                )
            v = v.reshape(()).astype(out.dtype)
        if getattr(v, "ndim", 0) and v.shape[0] == 1:  # NumPy would drop leading 1s; torch
            _check_fits(v, out[key])  # does only for x[key] = v (setitem drops them first)
        try:
            if accumulate:
                xp.add.at(out, key, v)
            else:
                out[key] = v
        except ValueError:
            _check_fits(v, out[key])
            raise
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save += save_list(ctx, "indices", torch_indices(inputs[1], inputs[0]))

    @staticmethod
    def backward(ctx, grad):
        key = ctx.saved_tensors[0]
        grad_a = grad if ctx.accumulate else IndexPut.apply(grad, key, 0.0, False)
        grad_values = Index.apply(grad, key) if ctx.needs_input_grad[2] else None
        return grad_a, None, grad_values, None

    jvp = staticmethod(linear_jvp)


def check_fill_mask(mask) -> None:
    """masked_fill's masks are bool (x[mask] = 7 is a masked fill in torch, so this is its
    error for a uint8 mask there, though x[mask] reads one as a bool mask)."""
    if mask._data.dtype.kind != "b":
        raise RuntimeError(
            "masked_fill_ only supports boolean masks, but got mask with dtype "
            f"{c_type_name(mask._data.dtype.name)}"
        )


class MaskedFill(Builtin):
    node_name = "MaskedFillBackward0"
    saved_names = ("mask",)  # (grad_fn._saved_mask, as torch's)
    keyword_places = {"mask": 1}  # (torch's order: self, mask, value)
    formula = {"self": "where(mask, 0, grad)"}

    @staticmethod
    def forward(ctx, a, value, *, mask):
        check_fill_mask(mask)
        if isinstance(value, Tensor) and value._data.ndim:
            raise RuntimeError(
                f"masked_fill_ only supports a 0-dimensional value tensor, but got tensor with "
                f"{value._data.ndim} dimension(s)."
            )
        ctx.to_save = (mask,)
        # (a number converted as torch converts it: -1 wraps in uint8, 300 and -0.5 are refused)
        v = value._data if isinstance(value, Tensor) else scalar_of(value, a._data.dtype)
        xp = array_module(a)
        out = xp.where(mask._data, xp.asarray(v, dtype=a._data.dtype), a._data)
        # torch fills a row-major clone of the input (NumPy would keep a transposed layout)
        return out if out.flags.c_contiguous else xp.ascontiguousarray(out)

    @staticmethod
    def backward(ctx, grad):
        (mask,) = ctx.saved_tensors
        grad_value = where(mask, grad, 0.0).sum() if ctx.needs_input_grad[1] else None
        return MaskedFill.apply(grad, 0.0, mask=mask), grad_value  # (torch's formula and node)

    @staticmethod
    def jvp(ctx, ta, tvalue):
        zero = 0.0
        return where(
            ctx.kwargs["mask"], zero if tvalue is None else tvalue, zero if ta is None else ta
        )


class MaskedFillTensor(MaskedFill):
    node_name = "MaskedFillBackward1"
    formula = {"self": "where(mask, 0, grad)", "value": "sum(where(mask, grad, 0))"}


def masked_fill(input, mask, value):
    """``value`` where ``mask`` is True, else ``input`` (mask broadcasts to input).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, -2.0, 3.0]); x.masked_fill(x < 0, 0.0)
    tensor([1., 0., 3.])
    """
    broadcast_shape(mask.shape, input.shape)  # torch's error when the mask does not fit
    if value is None:  # (a value NumPy would take as nan; checked() words torch's error)
        raise TypeError("masked_fill's value is a number or a tensor, not None")
    fill = MaskedFillTensor if isinstance(value, Tensor) else MaskedFill
    return fill.apply(input, value, mask=mask)  # (by keyword: the mask gets no edge, as in torch)


def index_put(input, indices, values, accumulate=False):
    """A copy of ``input`` with ``input[indices] = values`` (or ``+=`` with ``accumulate``).

    >>> import teachgrad as tg
    >>> tg.zeros(3).index_put((tg.tensor([0, 0]),), tg.tensor(1.0), accumulate=True)
    tensor([2., 0., 0.])
    """
    check_index_put(input, indices, values, accumulate)
    return IndexPut.apply(input, tuple(indices), values, accumulate)


def check_index_put(input, indices, values, accumulate) -> None:
    """``index_put``'s indices are a tuple (or list) of tensors, unlike ``x[...]``'s (no ints,
    lists or None), its values a tensor (not a number, as ``x[...] = 2.0``'s may be) and
    ``accumulate`` a bool: else a TypeError, which ``_arguments.checked`` words as torch's
    parser does. More index tensors than dims: torch's IndexError, which counts them."""
    if not isinstance(indices, tuple | list) or not all(isinstance(i, Tensor) for i in indices):
        raise TypeError("index_put's indices are a tuple of tensors")
    if not isinstance(values, Tensor):
        raise TypeError("index_put's values are a tensor")
    flag(accumulate)
    if isinstance(input, Tensor) and len(indices) > input.ndim:
        raise IndexError(
            f"too many indices for tensor of dimension {input.ndim} (got {len(indices)})\n  One "
            "index tensor per dim at most: they are the positions along dims 0, 1, ..."
        )


# --------------------------------------------------------------------------- gather and scatter
#
# gather reads  out[i][j] = x[index[i][j]][j]   (dim 0; the other dims keep their position)
# scatter writes  out[index[i][j]][j] = src[i][j]
# so the gradient of one is the other: gather's gradient is scattered back (adding where an
# index repeats), and the gradient of the scattered src is gathered from the output's.


def _grid(index, dim):
    """The full advanced-indexing key of gather/scatter: ``index`` along ``dim``, and along
    every other dim the element's own position (an arange shaped to broadcast)."""
    xp = array_module(index)
    key = []
    for d, n in enumerate(index.shape):
        if d == dim:
            key.append(index)
        else:
            position = [1] * index.ndim
            position[d] = n
            key.append(xp.arange(n).reshape(position))
    return tuple(key)


def _at_least_1d(x):
    return x.reshape(1) if x.ndim == 0 else x  # torch treats a 0-d tensor here as one element


def _scattered(a, dim, index, src, combine=None):
    """A copy of ``a``'s array with ``src`` written at ``index`` along ``dim`` (or, with
    ``combine``, e.g. ``xp.add``, combined with what is there: unbuffered, so repeats add up).

    ``src`` is a number, or a tensor whose leading block of the index's shape is written
    (src may be larger than the index)."""
    out = a._data.copy()
    i = _at_least_1d(index._data)
    if not i.size:  # (an empty index of any shape or dtype: nothing is written)
        return out
    if isinstance(src, Tensor):
        src = _at_least_1d(src._data)[tuple(slice(0, n) for n in i.shape)]
    elif out.dtype.kind in "biu":  # torch makes a number the tensor's dtype first: 2.5 adds 2
        src = out.dtype.type(src)
    if combine is None:
        _at_least_1d(out)[_grid(i, dim)] = src
    elif combine is array_module(out).multiply:
        _multiply_at(_at_least_1d(out), _grid(i, dim), src)
    else:
        combine.at(_at_least_1d(out), _grid(i, dim), src)
    return out


def _multiply_at(out, key, src):
    """``numpy.multiply.at(out, key, src)``: ``out[key] *= src``, where a position that repeats
    is multiplied by each of its values. CuPy has no ``multiply.at``, so this works with any
    array module, and without waiting for the GPU:

    1. lay the writes out flat (``pos``, ``val``) and sort them by position;
    2. multiply each run of equal positions together: a scan that, at step ``d``, multiplies
       each value by the one ``d`` places back when both are in the same run (log2(n) steps);
    3. write each run's product, held by its last element, once.

    (``out`` is C-contiguous: a fresh copy.)

    >>> import numpy as np
    >>> out = np.ones(3)
    >>> _multiply_at(out, (np.array([2, 0, 2]),), np.array([2.0, 3.0, 5.0]))
    >>> out
    array([ 3.,  1., 10.])
    """
    xp = array_module(out)
    *key, val = xp.broadcast_arrays(*key, xp.asarray(src, dtype=out.dtype))
    pos = sum(k * (out.strides[d] // out.itemsize) for d, k in enumerate(key)).ravel()
    order = xp.argsort(pos)
    pos, val = pos[order], val.ravel()[order]
    d = 1
    while d < pos.size:
        same_run = pos[d:] == pos[:-d]
        val = xp.concatenate([val[:d], xp.where(same_run, val[d:] * val[:-d], val[d:])])
        d *= 2
    last = xp.concatenate([pos[1:] != pos[:-1], xp.ones(min(pos.size, 1), dtype=bool)])
    flat = xp.concatenate([out.ravel(), xp.ones(1, dtype=out.dtype)])
    target = xp.where(last, pos, out.size)  # the other elements write into the spare slot
    flat[target] = flat[target] * val
    out[...] = flat[:-1].reshape(out.shape)


# The ops below take their integer index by keyword (``Gather.apply(x, dim, index=index)``):
# an argument passed by keyword gets no edge in the graph, and torch gives an index none (it
# is not differentiable), so ``next_functions`` and a node hook's ``grad_inputs`` match torch.


class _ReadAlongDim(Builtin):
    """Gather and IndexSelect: read ``a`` at ``index`` along ``dim``. Both are linear, and both
    backwards add the gradient into zeros of the input's shape at the same places
    (``add_back``, each class's own: the transpose of the read)."""

    saved_names = ("index",)
    saves_input = False  # (torch's gather saves it: changing it in place is refused at backward)
    jvp = staticmethod(linear_jvp)

    @classmethod
    def forward(cls, ctx, a, dim, *, index):
        ctx.in_shape, dim = a._data.shape, remember_dim(ctx, dim, a._data.ndim)
        ctx.to_save = (a, index) if cls.saves_input else (index,)
        return cls.read(a._data, dim, index._data)

    @classmethod
    def backward(cls, ctx, grad):
        index = ctx.saved_tensors[-1]
        return cls.add_back(grad, ctx.in_shape, ctx.dim, index), None


class Gather(_ReadAlongDim):
    node_name = "GatherBackward0"
    saved_names = ("self", "index")
    saves_input = True
    formula = {"self": "scatter_add(zeros, dim, index, grad)"}
    saved_args = {"dim": "given_dim", "sparse_grad": "sparse_grad"}

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.sparse_grad = False  # (an option teachgrad's gather has not)

    @staticmethod
    def read(x, dim, i):
        if not i.size:  # (an empty index of any shape or dtype reads nothing)
            return array_module(x).empty(i.shape, x.dtype)
        # (a new row-major tensor, as torch's, whatever the index's layout)
        return row_major(_at_least_1d(x)[_grid(_at_least_1d(i), dim)].reshape(i.shape))

    @staticmethod
    def add_back(grad, in_shape, dim, index):
        zeros = wrap_array(array_module(grad).zeros(in_shape, grad._data.dtype))
        return ScatterAdd.apply(zeros, dim, grad, index=index)


class Scatter(Builtin):
    node_name = "ScatterBackward0"
    keyword_places = {"index": 2}  # (torch's order: self, dim, index, src ...)
    saved_names = ("index",)
    saved_args = {"dim": "given_dim"}
    formula = {"self": "scatter(grad, dim, index, 0)", "src": "gather(grad, dim, index)"}
    jvp = staticmethod(linear_jvp)  # linear in input and src together

    @staticmethod
    def forward(ctx, a, dim, src, *, index):
        ctx.to_save, dim = (index,), remember_dim(ctx, dim, a._data.ndim)
        return _scattered(a, dim, index, src)

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors
        # the scattered places were overwritten: the input's old values there got no gradient
        grad_input = ScatterValue.apply(grad, ctx.dim, 0, index=index)
        # Gather itself, not gather(): scatter checked the index (again would wait for a GPU)
        grad_src = Gather.apply(grad, ctx.dim, index=index) if ctx.needs_input_grad[2] else None
        return grad_input, None, grad_src


class ScatterValue(Scatter):
    node_name = "ScatterBackward1"
    formula = {"self": "scatter(grad, dim, index, 0)"}

    @staticmethod
    def jvp(ctx, t, *_):
        # the written value is a constant
        return ScatterValue.apply(t, ctx.inputs[1], 0, index=ctx.kwargs["index"])


class ScatterAdd(Builtin):
    node_name = "ScatterAddBackward0"
    keyword_places = {"index": 2}  # (torch's order: self, dim, index, src ...)
    saved_names = ("index",)
    saved_args = {"dim": "given_dim"}
    formula = {"self": "grad", "src": "gather(grad, dim, index)"}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, a, dim, src, *, index):
        ctx.to_save, dim = (index,), remember_dim(ctx, dim, a._data.ndim)
        return _scattered(a, dim, index, src, array_module(a).add)  # repeats add up

    @staticmethod
    def backward(ctx, grad):
        (index,) = ctx.saved_tensors  # checked by scatter_add: read with Gather itself, as above
        grad_src = Gather.apply(grad, ctx.dim, index=index) if ctx.needs_input_grad[2] else None
        return grad, None, grad_src


class ScatterReduce(Builtin):
    """``scatter(..., reduce="add" | "multiply")``: torch has no derivative for it either."""

    node_name = "NotImplemented"
    keyword_places = {"index": 2}  # (torch's order: self, dim, index, src ...)
    formula = {"self": "no derivative: backward raises", "src": "no derivative: backward raises"}

    @staticmethod
    def forward(ctx, a, dim, src, reduce, *, index):
        xp, dim = array_module(a), _wrap_dim(dim, a._data.ndim)
        return _scattered(a, dim, index, src, xp.add if reduce == "add" else xp.multiply)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "derivative for aten::scatter is not implemented\n  scatter with reduce= has no "
            "gradient; for a differentiable sum use scatter_add."
        )


def _check_index_dtype(op, index):
    if index._data.dtype.kind not in "iu":
        raise RuntimeError(
            f"{op}(): Expected dtype int32/int64 for index\n  Got {index.dtype}; indices are "
            "integers, e.g. tg.tensor([[0, 1]]) or idx.long()."
        )


def _check_index(op, input, dim, index, src=None):
    """torch's checks of a gather/scatter index: dtype, rank, sizes and bounds (0-d counts as 1-d).
    An empty index reads and writes nothing: torch checks none of it."""
    if not index._data.size:
        return
    _check_index_dtype(op, index)
    i_shape, in_shape = _at_least_1d(index._data).shape, _at_least_1d(input._data).shape
    shapes = {"input" if op == "gather" else "self": in_shape}
    if src is not None:
        shapes["src"] = _at_least_1d(src._data).shape
    for name, shape in shapes.items():
        if len(shape) != len(i_shape):
            raise RuntimeError(
                f"Index tensor must have the same number of dimensions as {name} tensor\n  {op} pairs "
                f"index {tuple(index.shape)} with {name} {tuple(shape)} element by element."
            )
    wider = [d for d in range(len(i_shape)) if d != dim and i_shape[d] > in_shape[d]]
    hint = f"\n  Along every dim but {dim}, index picks the positions of its elements, so it can't be larger."
    if src is None and wider:
        raise RuntimeError(
            f"Size does not match at dimension {wider[0]} expected index {list(i_shape)} to be no "
            f"larger than self {list(in_shape)} apart from dimension {dim}" + hint
        )
    if src is not None and (wider or any(n > m for n, m in zip(i_shape, shapes["src"]))):
        raise RuntimeError(
            f"Expected index {list(i_shape)} to be no larger than self {list(input.shape)} apart "
            f"from dimension {dim} and to be no larger size than src {list(src.shape)}" + hint
        )
    i, size = index._data, in_shape[dim]
    outside = (i < 0) | (i >= size)
    if bool(outside.any()):
        raise RuntimeError(
            f"index {int(i[outside].reshape(-1)[0])} is out of bounds for dimension {dim} with size "
            f"{size}\n  {op} indices must be in [0, {size - 1}]; negative ones are not wrapped."
        )


def _check_same_dtype(input, src):
    if isinstance(src, Tensor) and src._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"scatter(): Expected self.dtype to be equal to src.dtype\n  Got {input.dtype} and "
            f"{src.dtype}; convert src first, e.g. src.to(x.dtype)."
        )


def gather(input, dim, index, *, sparse_grad=False):
    """Pick elements along ``dim`` at the positions in ``index``: for ``dim=1``,
    ``out[i][j] = input[i][index[i][j]]``. The output has the index's shape.

    >>> import teachgrad as tg
    >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x.gather(1, tg.tensor([[1, 1], [0, 1]]))
    tensor([[2., 2.],
            [3., 4.]])
    """
    flag(sparse_grad)  # (a bool, or torch's TypeError)
    given, dim = _given_and_wrapped(dim, input._data.ndim)
    _check_index("gather", input, dim, index)
    return Gather.apply(input, given, index=index)


def scatter(input, dim, index, src=None, *, value=None, reduce=None):
    """A copy of ``input`` with ``src``'s elements (or one ``value``) written at the positions
    in ``index`` along ``dim``: for ``dim=0``, ``out[index[i][j]][j] = src[i][j]``.

    Where an index repeats, one of the written values wins (which one is not defined);
    ``reduce="add"`` or ``"multiply"`` combines them instead, but has no gradient.

    >>> import teachgrad as tg
    >>> tg.zeros(3).scatter(0, tg.tensor([2, 0]), tg.tensor([5.0, 7.0]))
    tensor([7., 0., 5.])
    >>> tg.zeros(2, 2).scatter(1, tg.tensor([[1], [0]]), 1.0)
    tensor([[0., 1.],
            [1., 0.]])
    """
    if src is None:
        src = value
    if src is None:
        raise TypeError(
            "scatter() missing 1 required argument: 'src' (a tensor) or 'value' (a number)"
        )
    given, dim = _given_and_wrapped(dim, input._data.ndim)
    is_tensor = isinstance(src, Tensor)
    _check_index("scatter", input, dim, index, src if is_tensor else None)
    _check_same_dtype(input, src)
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise RuntimeError(
                f"reduce argument must be either add or multiply.\n  Got reduce={reduce!r}."
            )
        return ScatterReduce.apply(input, given, src, reduce, index=index)
    return (Scatter if is_tensor else ScatterValue).apply(input, given, src, index=index)


def scatter_add(input, dim, index, src):
    """A copy of ``input`` with ``src``'s elements added at the positions in ``index`` along
    ``dim`` (repeated positions add up): for ``dim=0``, ``out[index[i][j]][j] += src[i][j]``.

    >>> import teachgrad as tg
    >>> tg.zeros(3).scatter_add(0, tg.tensor([2, 0, 2]), tg.tensor([1.0, 2.0, 3.0]))
    tensor([2., 0., 4.])
    """
    if not isinstance(src, Tensor):
        raise TypeError(
            f"scatter_add(): argument 'src' (position 4) must be Tensor, not {type(src).__name__}"
        )
    given, dim = _given_and_wrapped(dim, input._data.ndim)
    _check_index("scatter", input, dim, index, src)
    _check_same_dtype(input, src)
    return ScatterAdd.apply(input, given, src, index=index)


# --------------------------------------------------------------------------- index_select


class IndexSelect(_ReadAlongDim):
    node_name = "IndexSelectBackward0"
    formula = {"self": "index_add(zeros, dim, index, grad)"}
    saved_args = {"dim": "given_dim", "self_sym_sizes": "in_shape"}

    @staticmethod
    def read(x, dim, i):
        out = array_module(x).take(_at_least_1d(x), i.reshape(-1), axis=dim)
        return out if x.ndim else out.reshape(())

    @staticmethod
    def add_back(grad, in_shape, dim, index):
        return _IndexAdd.apply(grad, in_shape, dim, index=index)


class _IndexAdd(Builtin):
    """Backward of ``index_select``: add the gradient's slices into zeros at the indices."""

    node_name = "IndexAddBackward0"
    formula = {"grad_output": "index_select(grad, dim, index)"}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, grad, in_shape, dim, *, index):
        ctx.dim, ctx.index = dim, index
        g = grad._data
        xp = array_module(g)
        out = xp.zeros(in_shape, g.dtype)
        key = (slice(None),) * dim + (index._data.reshape(-1),)
        xp.add.at(_at_least_1d(out), key, _at_least_1d(g))  # unbuffered: repeated indices add up
        return out

    @staticmethod
    def backward(ctx, gg):
        return IndexSelect.apply(gg, ctx.dim, index=ctx.index), None, None


def index_select(input, dim, index):
    """The slices of ``input`` along ``dim`` at the positions in the 1-d ``index`` (a copy).

    >>> import teachgrad as tg
    >>> tg.tensor([[1, 2], [3, 4], [5, 6]]).index_select(0, tg.tensor([2, 0, 2]))
    tensor([[5, 6],
            [1, 2],
            [5, 6]])
    """
    given, dim = _given_and_wrapped(dim, input._data.ndim)
    i = index._data
    if i.ndim > 1:
        raise IndexError(
            f"index_select(): Index is supposed to be a vector\n  Got an index of shape "
            f"{tuple(index.shape)}; flatten it, or use gather for one index per element."
        )
    if i.dtype.kind not in "iu":
        raise RuntimeError(
            f"index_select(): Expected dtype int32 or int64 for index\n  Got {index.dtype}; "
            "indices are integers, e.g. tg.tensor([0, 2])."
        )
    if input._data.ndim == 0 and i.size != 1:
        raise RuntimeError(
            f"index_select(): Index to scalar can have only 1 value, got {i.size} value(s)\n"
            "  A 0-d tensor has one element: its index is 0, once."
        )
    size = _at_least_1d(input._data).shape[dim]
    if size == 0 and i.size and input._data.ndim == 1:  # (torch words this case so)
        raise IndexError(
            f"index out of range in self\n  The input is empty: there is nothing to select at "
            f"{index.tolist()}."
        )
    if size == 0 and i.size:
        raise RuntimeError(
            "index_select(): self indexing axis dim should be positive\n  Dim "
            f"{dim} of the input is empty: there is nothing to select."
        )
    outside = (i < 0) | (i >= size)
    if bool(outside.any()):
        data = input._data
        if data.ndim > 1 and (dim == 1 or data.size == 0):  # (torch's kernel for these says so)
            first = int(i.reshape(-1)[outside.reshape(-1)][0])
            raise RuntimeError(
                f"INDICES element is out of DATA bounds, id={first} axis_dim={size}\n  "
                f"index_select indices along dim {dim} must be in [0, {size - 1}]; got "
                f"{index.tolist()}."
            )
        raise IndexError(
            f"index out of range in self\n  index_select indices along dim {dim} must be in "
            f"[0, {size - 1}]; got {index.tolist()}."
        )
    return IndexSelect.apply(input, given, index=index)

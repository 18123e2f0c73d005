"""torch's memory layouts, on arrays: the strides torch gives a new result.

``.stride()`` is part of torch's contract. torch lays out a new elementwise result, and the
result of advanced indexing, with its TensorIterator: the dims are ordered by the operands'
strides, the first operand with a clear order deciding (``iterator_strides``). NumPy's
ufuncs agree when the first operand is row-major; where it is not, ``torch_layout``
re-lays the result. Copies and the ``*_like`` makers keep a dense layout and order any
other one the same way (``preserved_strides``); a copy asked for in a memory format
(``channels_last`` ...) gets that format's strides (``format_strides``). The ops (``ops/``)
and the makers (``_creation.py``) use these; they use nothing above the arrays and the
Tensor's own row-major rule.

    >>> import numpy as np
    >>> preserved_strides(np.ones((3, 2)).T)
    (1, 2)
"""

from __future__ import annotations

from ._backend import (
    array_module,
    channels_last,
    channels_last_3d,
    contiguous_format,
    dense,
    numpy_module,
    preserve_format,
    strided_view,
)
from ._tensor import _row_major_strides

_ndarray = numpy_module().ndarray


def iterator_strides(shape, operand_strides) -> tuple:
    """The strides torch's TensorIterator gives a new output of ``shape``.

    ``operand_strides``: each input's strides over ``shape`` (0 along a dim it is broadcast
    in), in operand order. Dims are sorted fastest first by the operands' strides (an operand
    broadcast in either dim has no say; on a tie the smaller dim goes first), then the output
    is laid out densely in that order.

    >>> iterator_strides((3, 4), [(1, 3), (4, 1)])  # x.t() + y: the first operand decides
    (1, 3)
    """
    ndim = len(shape)

    def should_swap(d0, d1) -> int:  # 1: d1 is faster than d0; -1: it is not; 0: no operand says
        for strides in operand_strides:
            s0, s1 = strides[d0], strides[d1]
            if s0 == 0 or s1 == 0:
                continue
            if s0 != s1:
                return 1 if s0 > s1 else -1
            if shape[d0] > shape[d1]:
                return 1
        return 0

    perm = list(range(ndim - 1, -1, -1))  # fastest first: row-major to start with
    for i in range(1, ndim):  # insertion sort that steps over the dims no operand orders
        d1 = i
        for d0 in range(i - 1, -1, -1):
            order = should_swap(perm[d0], perm[d1])
            if order > 0:
                perm[d0], perm[d1] = perm[d1], perm[d0]
                d1 = d0
            elif order < 0:
                break
    if perm == list(range(ndim - 1, -1, -1)):  # row-major: torch's contiguous strides,
        return contiguous_strides(shape)  # where a dim of size 0 counts as 1
    return dense_strides(shape, perm)


def dense_strides(shape, order) -> tuple:
    """The strides that lay ``shape`` out densely with its dims in ``order``, fastest first.

    >>> dense_strides((2, 3), (0, 1))  # dim 0 fastest: a transposed layout
    (1, 2)
    """
    out, step = [0] * len(shape), 1
    for d in order:
        out[d], step = step, step * shape[d]
    return tuple(out)


contiguous_strides = _row_major_strides  # (one home: the Tensor's own rule, in _tensor.py)


def torch_layout(out, first, *others):
    """``out``, NumPy's result of an elementwise op, with the strides torch gives that result.

    ``first, *others``: the op's operands (arrays or numbers) in torch's order; ``first``
    must be an array (with a number beside one tensor, the order does not matter).

    Why: torch orders the result's dims by the operands' strides, and where they disagree
    the first operand decides; NumPy lets any operand that is row-major win. So
    ``x.t() + y`` is laid out like ``x`` in torch, row-major in NumPy:

    >>> import numpy as np
    >>> x, y = np.ones((3, 2)).T, np.ones((2, 3))
    >>> torch_layout(x + y, x, y).strides  # torch: (1, 2) in elements
    (8, 16)

    When the first operand is row-major the two libraries agree (that operand decides every
    pair of dims it can order), so the common case is one flag read and a size check (empty
    results are always re-laid: NumPy flags every empty array row-major). The hot ops (add,
    sub, mul, div) make that test themselves on NumPy's results, as even calling this
    function costs ~50 ns. Measured on ``a * b`` of two 4-element tensors (~2.9 µs): the
    test adds 60-80 ns (2-3%), the call and test ~140 ns (~5%).
    """
    try:
        # (CuPy writes every result row-major: that is torch's only when the first operand
        # is row-major and has the result's shape, not a number or a broadcast row)
        row_major = type(out) is _ndarray or first.shape == out.shape
        if out.size and first.flags.c_contiguous and row_major:
            return out
    except AttributeError:  # a number first (``2 // x``): the long way, which handles it
        pass
    return with_strides(out, result_strides(out.shape, (first, *others)))


def same_layout(out, x):
    """``out``, the elementwise result of ``x`` alone, laid out as torch lays it out: like
    ``x`` (dense). NumPy's result already is; CuPy writes every result row-major, so a
    CUDA tensor that is not row-major (a transposed one) gets its result copied.

    >>> import numpy as np
    >>> x = np.ones((3, 2)).T
    >>> same_layout(np.exp(x), x).strides
    (8, 16)
    """
    return out if type(out) is _ndarray or x.flags.c_contiguous else torch_layout(out, x)


def result_strides(shape, operands) -> tuple:
    """The strides torch gives the result of shape ``shape`` of an elementwise op.

    Before sorting dims, torch takes two shortcuts when every operand has the result's
    shape (a number is a 0-d operand): all row-major gives a row-major result, and all
    dense with one set of strides gives those strides. Otherwise ``iterator_strides``.

    >>> import numpy as np
    >>> result_strides((3, 2), [np.ones((2, 3)).T, 2.0])
    (1, 3)
    """
    arrays = [a for a in operands if hasattr(a, "strides")]
    if len(arrays) == len(operands) and all(a.shape == shape for a in arrays):
        if all(a.flags.c_contiguous for a in arrays):  # (an empty array counts as row-major)
            return contiguous_strides(shape)
        first = arrays[0].strides
        if dense(arrays[0]) and all(a.strides == first for a in arrays):
            return tuple(s // arrays[0].itemsize for s in first)
    return iterator_strides(shape, [broadcast_strides(a, shape) for a in arrays])


def broadcast_strides(a, shape) -> tuple:
    """``a``'s strides (in elements) over ``shape``, 0 along the dims it is broadcast in."""
    pad = len(shape) - a.ndim
    size = a.itemsize
    return (0,) * pad + tuple(
        0 if n == 1 and m != 1 else s // size
        for n, m, s in zip(a.shape, shape[pad:], a.strides, strict=True)
    )


def with_strides(out, strides):
    """``out``, or a copy of it with these strides (in elements) if it has others."""
    size = out.itemsize
    if all(s * size == t for s, t in zip(strides, out.strides, strict=True)):
        return out
    if out.size == 0:  # nothing to copy: the same (empty) array, seen with these strides
        return strided_view(out, out.shape, tuple(s * size for s in strides))
    return strided_copy(out, strides, out.dtype)


def strided_copy(a, strides, dtype):
    """A copy of ``a`` as ``dtype``, in new memory, with these strides (in elements; they must
    lay ``a``'s shape out densely).

    >>> import numpy as np
    >>> strided_copy(np.ones((3, 2)), (1, 3), np.float32).strides
    (4, 12)
    """
    fresh = array_module(a).empty(a.size, dtype)
    laid = strided_view(fresh, a.shape, tuple(s * fresh.itemsize for s in strides))
    laid[...] = a
    return laid


def preserved_copy(a, dtype):
    """A copy of ``a`` as ``dtype`` in torch's ``preserve_format`` layout: a dense (or empty)
    array keeps its strides exactly (a size-1 dim's too, which NumPy would re-pick); any other
    (a slice with steps, an expanded array) is laid out densely in the order of its strides,
    as an elementwise op on it would be (``iterator_strides``).

    >>> import numpy as np
    >>> preserved_copy(np.ones((6, 2))[::2].T, np.float64).strides  # torch: (1, 2)
    (8, 16)
    """
    if a.size and a.flags.c_contiguous and 1 not in a.shape:  # plain row-major: NumPy's copy
        return a.astype(dtype)
    return with_strides(a.astype(dtype, order="K"), preserved_strides(a))


def format_copy(a, memory_format, dtype):
    """A copy of ``a`` as ``dtype`` laid out in ``memory_format``: torch's ``clone``, ``to``
    and ``contiguous`` copies (``preserve_format``: as ``a``, see ``preserved_copy``).

    >>> import numpy as np
    >>> format_copy(np.ones((1, 3, 2, 2)), channels_last, np.float64).strides  # (12, 1, 6, 3)
    (96, 8, 48, 24)
    """
    if memory_format is preserve_format:
        return preserved_copy(a, dtype)
    if memory_format is contiguous_format:
        return a.astype(dtype, order="C")  # (NumPy's own row-major copy: torch's strides)
    return strided_copy(a, format_strides(a.shape, memory_format), dtype)


def format_strides(shape, memory_format) -> tuple:
    """The strides torch gives a new tensor of ``shape`` in ``memory_format``: row-major, or
    for ``channels_last`` the channels (dim 1) fastest, then the spatial dims from the last,
    then the batch (no size counts as 1 here, unlike the row-major rule).

    >>> format_strides((2, 3, 4, 5), channels_last)
    (60, 1, 15, 3)
    """
    if memory_format is contiguous_format:
        return contiguous_strides(shape)
    if memory_format is preserve_format:  # (a new tensor has no source to keep the layout of)
        raise RuntimeError(
            "unsupported memory format Preserve\n  preserve_format keeps the layout of a "
            "tensor being copied: a new one has none (use contiguous_format)."
        )
    return dense_strides(shape, channels_last_order(memory_format, len(shape)))


_RANKS = {channels_last: 4, channels_last_3d: 5}  # the rank each channels-last format needs


def channels_last_order(memory_format, ndim: int) -> tuple:
    """The dims of a ``channels_last`` (4-d) or ``channels_last_3d`` (5-d) tensor, fastest
    first: channels, the spatial dims from the last, then the batch.

    >>> channels_last_order(channels_last, 4)
    (1, 3, 2, 0)
    """
    rank = _RANKS[memory_format]  # (another value fails here: the caller words its type)
    if ndim != rank:
        raise RuntimeError(
            f"required rank {rank} tensor to use {memory_format.name} format\n  "
            f"{memory_format.name} orders the dims of {rank}-d (N, C, spatial...) tensors; "
            f"this one has {ndim}."
        )
    return (1, *range(ndim - 1, 1, -1), 0)


def channels_last_contiguous(shape, strides, memory_format) -> bool:
    """torch's ``is_contiguous(memory_format)`` for ``channels_last`` or ``channels_last_3d``:
    dense in that format's order (False for a tensor of another rank).

    >>> channels_last_contiguous((2, 3, 4, 5), (60, 1, 15, 3), channels_last)
    True
    """
    rank = _RANKS[memory_format]  # (another value fails here: the caller words its type)
    order = channels_last_order(memory_format, rank)
    return len(shape) == rank and dense_in_order(shape, strides, order)


def dense_in_order(shape, strides, order) -> bool:
    """Whether ``strides`` lay ``shape`` out densely with its dims in ``order``, fastest
    first; a dim of size 1 may have any stride (torch's ``is_contiguous`` test).

    >>> dense_in_order((2, 1, 3), (1, 99, 2), (0, 1, 2))
    True
    """
    expected = 1
    for d in order:
        if shape[d] != 1:
            if strides[d] != expected:
                return False
            expected *= shape[d]
    return True


def suggested_format(shape, strides):
    """The memory format torch reads from a tensor's strides (``suggest_memory_format``):
    channels-last when the strides grow in that format's order, else ``contiguous_format``.
    Ambiguous strides (a channel dim of stride 0, an N111 tensor) read as contiguous.

    >>> suggested_format((2, 3, 4, 5), (60, 1, 15, 3))
    teachgrad.channels_last
    """
    for memory_format, rank in _RANKS.items():
        if len(shape) == rank and strides[1] != 0:
            low = 0  # (torch's is_channels_last_strides_2d_s4 and _3d_s5)
            for d in channels_last_order(memory_format, rank):
                if shape[d] == 0 or strides[d] < low or d == 0 and low == strides[1]:
                    break
                low = strides[d] * max(shape[d], 1)
            else:
                return memory_format
    return contiguous_format


def preserved_strides(a) -> tuple:
    """The strides (in elements) of :func:`preserved_copy`'s copy of ``a``."""
    if a.size and not dense(a):
        return iterator_strides(a.shape, [broadcast_strides(a, a.shape)])
    return tuple(s // a.itemsize for s in a.strides)


def row_major(out):
    """A reduction's result laid out row-major, as torch's always is (NumPy follows the
    input's memory order: ``x.t().sum(0)`` of a 3-D ``x`` would keep the transposition).

    >>> import numpy as np
    >>> row_major(np.ones((2, 3, 4)).transpose(2, 1, 0).sum(1)).strides
    (16, 8)
    """
    # (a size-1 dim's stride may differ; so may an empty view's: NumPy says 0 for its dims)
    done = out.flags.c_contiguous and 1 not in out.shape and (out.size or out.base is None)
    return out if done else with_strides(out, contiguous_strides(out.shape))

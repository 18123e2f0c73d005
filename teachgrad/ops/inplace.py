"""In-place ops (``x.mul_(2)``, ``x += y``, ``x[0] = v``) and how they rewrite the graph.

An in-place op changes a tensor's memory, so two things must happen, as in torch:

1. **Versions.** The storage's version counter is bumped; a node that saved this
   tensor earlier notices at backward time and raises instead of using the new
   values (see ``SavedTensor``).
2. **History.** The tensor gets a new ``grad_fn``: the op's node, whose input is
   the tensor's *old* history. If the tensor is a view, the change also happens
   in its base, so the base's history is rewritten too: its new grad_fn is a
   ``CopySlices`` node ("the base, with the view's region replaced by the op's
   result"), and the view's grad_fn becomes an ``AsStridedBackward0`` reading its
   region of the base. Other views of the same base pick up the new history
   the next time they are used (``Tensor._refresh_view``).

Each in-place op reuses its out-of-place Function: the formula is computed on a
copy of the old value (torch's ``original_self``), written into the tensor, and
the tensor takes over the node.

    >>> import teachgrad as tg
    >>> a = tg.ones(3, requires_grad=True)
    >>> b = a * 2
    >>> b[0] = 10.0            # a view of b is written: b's history is rewritten
    >>> b.grad_fn.name(), b.grad_fn
    ('torch::autograd::CopySlices', <CopySlices object at ...>)
    >>> b.sum().backward(); a.grad
    tensor([0., 2., 2.])
"""

from __future__ import annotations

import warnings

from .._backend import (
    address,
    array_module,
    dense,
    numpy_module,
    quiet,
    result_type,
    strided_view,
    to_device,
)
from .._creation import scalar_of
from .._printing import c_type_name, scalar_name
from .._profiling import state as _profiling
from .._tensor import Tensor, _as_ints, _given_dim, type_name, wrap_array
from ..autograd.anomaly_mode import _outside_teachgrad
from ..autograd.builtin import Builtin
from ..autograd.forward_ad import inplace_tangent, linear_jvp, zero_tangent
from ..autograd.forward_ad import state as _fw_state
from ..autograd.function import zeros_for
from ..autograd.grad_mode import no_grad
from ..autograd.grad_mode import state as _grad_state
from ..autograd.tape import (
    Node,
    SavedTensor,
    _short,
    freed_error,
    hooks_in_force,
    spec_of,
    stamp,
    torch_cpp_node,
)
from . import fused, index, pointwise, special, views
from .index import Index, _IndexPut, _is_advanced
from .pointwise import broadcast_shape, constant_zeros, where
from .views import IN_PLACE, basic_getitem, expand_error, whole_slice

# --------------------------------------------------------------------------- where a view sits in its base


def view_positions(view):
    """For each element of ``view``, its flat (row-major) index in ``view._base``."""
    base = view._base._data
    xp = array_module(base)
    if view._data.size == 0:  # (nothing to place; an empty base has no layout to check)
        return xp.empty(view._data.shape, dtype="int64")
    if not dense(base):
        raise RuntimeError(
            "in-place changes to a view are only supported when its base tensor is dense "
            "(not itself strided); clone() the base first"
        )
    marks = xp.empty_like(base, dtype="int64")  # same memory layout as the base
    marks[...] = xp.arange(base.size).reshape(base.shape)
    itemsize = base.itemsize
    start = (address(view._data) - address(base)) // itemsize
    strides = tuple(s // itemsize * marks.itemsize for s in view._data.strides)
    memory = marks.ravel(order="K")[start:]
    return strided_view(memory, view._data.shape, strides).copy()


def take_region(g, positions):
    """The view's part of a base-shaped tensor (differentiable)."""
    return Index.apply(g.reshape(-1), (positions,))


def embed_region(v, positions, base_shape):
    """A base-shaped tensor: ``v`` at the view's positions, zeros elsewhere (differentiable)."""
    size = 1
    for s in base_shape:
        size *= s
    return _IndexPut.apply(v, (size,), (positions,)).reshape(base_shape)


class AsStrided(Builtin):
    """A view's grad_fn after its base's history was rewritten: it reads its region of the base."""

    node_name = "AsStridedBackward0"
    view_of_input = True
    formula = {"self": "zeros with grad at the view's positions"}

    @staticmethod
    def forward(ctx, base, view_array, positions):
        ctx.positions, ctx.base_shape = positions, base._data.shape
        return view_array

    @staticmethod
    def backward(ctx, grad):
        return embed_region(grad, ctx.positions, ctx.base_shape), None, None

    @staticmethod
    def jvp(ctx, t_base, *_):
        return take_region(t_base, ctx.positions).reshape(ctx.result.shape)


@torch_cpp_node
class CopySlices(Node):
    """The new history of a base after one of its views was changed in place.

    ``fn`` is the node of the in-place op (its input ``index`` was the view's old
    value). Backward: the view's region of the gradient goes through ``fn``; the
    rest of the base is unchanged, so its gradient passes straight through.
    """

    # its inputs are fn's, with the base in the view's place (input 0)
    formula = {
        "self": "grad outside the view; fn's rule inside",
        "fn's other inputs": "fn's rules, applied to grad[view]",
    }

    def __init__(self, fn, index, base_edge, positions, base, overlapping=False):
        self.fn = fn
        self.index = index
        self.positions = positions
        self.overlapping = overlapping  # the view repeats memory cells (it comes from expand)
        edges = list(fn.next_functions)
        edges[index] = base_edge
        self.next_functions = tuple(edges)
        self._output_meta = (spec_of(base._data),)
        stamp(self)

    _saved = ("fn",)  # (so the engine frees it: fn, dropped after backward, as torch's)

    def _apply(self, grads):
        if self.fn is None:  # an earlier backward freed it (even if fn saved nothing)
            raise freed_error(self, "fn")
        g = grads[0]
        if g is None:
            g = zeros_for(self._output_meta[0])
        base_shape = self._output_meta[0][0]
        results = list(self.fn._apply([take_region(g, self.positions)]))
        xp = array_module(g)
        inside = xp.zeros(g._data.size, dtype=bool)
        inside[self.positions] = True
        inside = wrap_array(inside.reshape(base_shape))
        old_view_grad = results[self.index]
        if self.overlapping and old_view_grad is not None:  # torch writes it through the view
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a "
                "single memory location. Please clone() the tensor before performing the operation.\n"
                "  Backward of an in-place op on an expanded view would write the view's gradient "
                "into memory cells the view repeats: clone() the view before changing it."
            )
        replacement = (
            0.0
            if old_view_grad is None
            else embed_region(old_view_grad, self.positions, base_shape)
        )
        results[self.index] = where(inside, replacement, g)
        return tuple(results)

    def _release_saved(self):
        self.fn = None  # (what fn saved goes with it, unless a saved result still leads to fn)


def rebase_view_history(view, node, index) -> None:
    """``view`` was changed in place by ``node``: rewrite its base's history, then its own."""
    base = view._base
    positions = view_positions(view)
    copy_slices = CopySlices(node, index, base._edge(), positions, base, _repeats(view._data))
    retained = _stop_retaining(base)
    base._grad_fn = copy_slices
    base._output_nr = 0
    base._requires_grad = True
    _retain_again(base, retained)
    _as_strided_history(view, positions)


def regenerate_view_grad_fn(view) -> None:
    """Give ``view`` a grad_fn that reads from its base's current history (torch refuses this
    for views whose history can't be rebuilt safely: outputs of unbind/split, no_grad views)."""
    refuse_stale_view(view)
    retained = _stop_retaining(view)
    _as_strided_history(view, view_positions(view))
    _retain_again(view, retained)


def _stop_retaining(t):
    """Before ``t`` gets a new grad_fn: take its ``retain_grad()`` off the old one (returns
    it, or None). torch moves it to the new history, so ``.grad`` is the gradient of what
    ``t`` holds now."""
    node = t._grad_fn
    retained = node._retain_grad if node is not None else None
    ref = retained.get(t._output_nr) if retained else None
    if ref is None or ref() is not t:
        return None
    return retained.pop(t._output_nr)


def _retain_again(t, ref) -> None:
    if ref is not None:
        node = t._grad_fn
        node._retain_grad = {**(node._retain_grad or {}), t._output_nr: ref}


def refuse_stale_view(view) -> None:
    """torch's errors for a restricted view used after its memory was changed in place."""
    what = "its base or another view of its base has been modified inplace"
    if view._creation_meta == "multi_output":
        raise RuntimeError(multi_output_message(view, what))
    if view._creation_meta == "custom_function":
        raise RuntimeError(custom_function_message(view, what))
    if view._creation_meta in ("no_grad", "inference"):
        raise RuntimeError(mode_view_message(view, what))


def _as_strided_history(view, positions) -> None:
    base = view._base
    # recorded whatever the mode: torch regenerates a view's history inside inference_mode
    # too, where enable_grad() records nothing
    previous, _grad_state.enabled = _grad_state.enabled, True
    try:
        reader = AsStrided.apply(_reads_from(base), view._data, positions)
    finally:
        _grad_state.enabled = previous
    view._grad_fn = reader._grad_fn
    view._output_nr = 0
    view._requires_grad = True
    view._view_base_fn = base._grad_fn
    view._view_version = view._counter.version


def _reads_from(base):
    """What a view's new node reads from: its base; or, for a base that no longer requires
    grad (``detach_()``), an alias of it that does but has no gradient slot, so the node is
    recorded with an empty edge, as torch's."""
    if base._requires_grad:
        return base
    stand_in = base._alias()
    stand_in._requires_grad = True
    return stand_in


# --------------------------------------------------------------------------- as_strided: a view by strides


class AsStridedView(Builtin):
    """``x.as_strided(size, stride, storage_offset)``: a view of x's memory (its *storage*,
    the memory of x's base) laid out by the strides given. Backward, as torch's: the output's
    gradients are added up per memory cell (cells it repeats get several), and each element
    of x reads its cell's sum (divided among x's elements that share a cell, if x repeats
    memory itself)."""

    node_name = "AsStridedBackward0"
    view_of_input = True
    saved_args = {"size": "size", "stride": "stride", "storage_offset": "given_offset"}
    formula = {"self": "zeros with grad added at the output's positions, read back at self's"}

    @staticmethod
    def forward(ctx, a, size, stride, storage_offset):
        ctx.size, ctx.stride, ctx.given_offset = size, stride, storage_offset  # (None: a's)
        offset = _offset(a, storage_offset)
        memory = _storage_memory(a)  # (the storage, in memory order)
        ctx.cells = memory.size  # then the cell of each element: of the output, of the input
        ctx.out_cells, ctx.in_cells = _cells(memory, size, stride, offset), _cells_of(a)
        ctx.sharing = _sharing(ctx.in_cells, memory.size, a._data.dtype)
        return strided_view(memory[offset:], size, tuple(s * memory.itemsize for s in stride))

    @staticmethod
    def backward(ctx, grad):
        per_cell = embed_region(grad, ctx.out_cells, (ctx.cells,))  # (repeated cells add up)
        g = take_region(per_cell, ctx.in_cells).reshape(ctx.in_cells.shape)
        return (g if ctx.sharing is None else g / ctx.sharing), None, None, None

    @staticmethod
    def jvp(ctx, t, *_):
        t = t if ctx.sharing is None else t / ctx.sharing  # (each cell's tangent, once)
        return take_region(embed_region(t, ctx.in_cells, (ctx.cells,)), ctx.out_cells)


IN_PLACE[AsStridedView] = views.in_place_twin(AsStridedView, "AsStridedBackward1")  # as_strided_


def _storage_memory(t):
    """The memory of ``t``'s storage as a 1-d array, in memory order (a view, no copy)."""
    return t._storage_array().ravel(order="K")


def _cells(memory, size, stride, offset):
    """The memory cell (index into ``_storage_memory``) of each element of a layout."""
    xp = array_module(memory)
    cells = xp.arange(memory.size, dtype="int64")[offset:]
    return strided_view(cells, size, tuple(s * cells.itemsize for s in stride)).copy()


def _sharing(cells, n_cells, dtype):
    """For an input that repeats memory (an expanded one): how many of its elements share
    each element's cell, as a tensor; None when no two do."""
    shared = array_module(cells).bincount(cells.ravel(), minlength=n_cells)[cells]
    return wrap_array(shared.astype(dtype)) if (shared > 1).any() else None


def _offset(t, storage_offset) -> int:
    """The storage offset of an ``as_strided`` of ``t``: the one given, else ``t``'s own."""
    return t.storage_offset() if storage_offset is None else int(storage_offset)


def _cells_of(t):
    """The memory cell of each element of tensor ``t``."""
    return _cells(_storage_memory(t), t._data.shape, t.stride(), t.storage_offset())


def as_strided(input, size, stride, storage_offset=None):
    """A view of ``input``'s memory with the given ``size`` and ``stride`` (in elements),
    starting ``storage_offset`` elements into its storage (``input``'s own, if None).
    Nothing is checked but the bounds: elements may overlap, as in torch.

    >>> import teachgrad as tg
    >>> tg.arange(4.0).as_strided((3, 2), (1, 1))  # sliding windows of two
    tensor([[0., 1.],
            [1., 2.],
            [2., 3.]])
    """
    size, stride = _as_ints(size), _as_ints(stride)
    _check_strided_layout(input, size, stride, _offset(input, storage_offset))
    return AsStridedView.apply(input, size, stride, storage_offset)


def _check_strided_layout(input, size, stride, offset) -> None:
    """torch's refusals of an as_strided layout (in torch's order), each with what is wrong."""
    if len(size) != len(stride):
        raise RuntimeError(
            f"mismatch in length of strides and shape\n  size {list(size)} has {len(size)} dims "
            f"but stride {list(stride)} has {len(stride)}: give one stride per dim."
        )
    if any(n < 0 for n in size):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(size)} and strides="
            f"{list(stride)}\n  A size can't be negative."
        )
    if any(s < 0 for s in stride):
        raise RuntimeError(
            "as_strided: Negative strides are not supported at the moment, got strides: "
            f"{list(stride)}\n  To read memory backwards, flip() the result instead."
        )
    if offset < 0:
        raise RuntimeError(
            f"Tensor: invalid storage offset {offset}\n  The offset counts elements from the "
            "start of the storage: 0 or more."
        )
    cells = _storage_memory(input).size
    needed = 0 if 0 in size else offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
    if needed > cells:
        itemsize = input._data.itemsize
        raise RuntimeError(
            f"setStorage: sizes {list(size)}, strides {list(stride)}, storage offset {offset}, and "
            f"itemsize {itemsize} requiring a storage size of {needed * itemsize} are out of "
            f"bounds for storage of size {cells * itemsize}\n  The layout reaches past the "
            f"memory of the tensor's storage ({cells} elements)."
        )


# --------------------------------------------------------------------------- the in-place mechanism


def mode_view_message(view, what: str) -> str:
    """torch's refusal for a view made in no_grad or inference mode (or a view of such a view,
    which has a grad_fn) that ``what`` (changed in place) where grad mode records it."""
    start = (
        f"Output {view._output_nr} of {_short(view._grad_fn)} is a view of a view which was created in"
        if view._grad_fn is not None
        else "A view was created in"
    )
    if view._creation_meta == "inference":
        where, block = f"inference mode and {what} in normal mode", "inference_mode"
    else:
        where, block = f"no_grad mode and {what} with grad mode enabled", "no_grad"
    return (
        f"{start} {where}. Given that this use case is ambiguous and error-prone, it is forbidden. You "
        f"can clarify your code by moving both the view and the inplace either both inside the {block} "
        "block (if you don't want the inplace to be tracked) or both outside (if you want the inplace "
        "to be tracked)."
    )


def _restricted_view_start(view, what: str) -> str:
    """The first sentence of torch's messages about the views below: which output of which
    node, or, for a view outside any graph, torch's words for one made under no_grad."""
    if view._grad_fn is not None:
        return f"Output {view._output_nr} of {_short(view._grad_fn)} is a view and {what}."
    return f"A view was created in no_grad mode and {what} with grad mode enabled."


def multi_output_message(view, what: str) -> str:
    return (
        f"{_restricted_view_start(view, what)} This view is the output of a function that returns "
        "multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an "
        "out-of-place one."
    )


def custom_function_message(view, what: str) -> str:
    return (
        f"{_restricted_view_start(view, what)} This view was created inside a custom Function (or "
        "because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom "
        "Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by "
        "cloning the output of the custom Function."
    )


_DEPRECATED_ON_EXPANDED = {
    "masked_fill_": "tensor[mask] = scalar",
    "index_put_": "tensor[indices] = tensor",
}


def _repeats(data) -> bool:
    """Whether several elements of ``data`` are one memory cell (a dim of stride 0, as
    ``expand`` makes; NumPy may give an empty array 0 strides: nothing repeats there)."""
    strides = data.strides  # (no 0 stride, the usual case: answered without a loop)
    return (
        0 in strides
        and data.size > 0
        and any(s == 0 and n > 1 for s, n in zip(strides, data.shape, strict=True))
    )


def _warn_on_expanded(op) -> None:
    warnings.warn(
        f"Use of {op} on expanded tensors is deprecated. Please clone() the tensor before "
        "performing this operation. This also applies to advanced indexing e.g. "
        f"{_DEPRECATED_ON_EXPANDED[op]}",
        UserWarning,
        stacklevel=_outside_teachgrad(),  # (your line, whichever way the op was reached)
    )


def _check_inputs_overlap(x, op, args) -> None:
    """torch's refusal when an argument partly overlaps the memory being written (not for
    ``x[key] = v`` with a 0-d ``v``: torch writes that with ``fill_``, which reads v once)."""
    for a in args:
        if op == "__setitem__" and isinstance(a, Tensor) and not a._data.ndim:
            continue
        if isinstance(a, Tensor) and _overlap(a._data, x._data) == "partial":
            raise RuntimeError(
                "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
                "single memory location. Please clone() the tensor before performing the operation.\n"
                f"  {op} reads from memory it is overwriting at the same time (e.g. a.add_(a[0])): the result "
                "would depend on the order elements are written."
            )


def check_inplace(x, op: str, record: bool, args=()) -> None:
    """torch's refusals, checked before anything is changed (in torch's order: the autograd
    rules on leaves and views, the operands' histories when the op records, then the
    memory-overlap checks of the kernel, then the version bump, which an inference tensor
    outside inference_mode refuses). In an ``allow_mutation_on_saved_tensors`` block, what
    backward saved of x's memory is copied first."""
    if hooks_in_force.before_change:
        hooks_in_force.before_change[-1](x)
    inference = x._inference and not _grad_state.inference and not x._counted
    if inference and x._requires_grad and _grad_state.enabled and _meets_a_normal_tensor(op, args):
        raise _leaf_in_place(op)  # torch's autograd layer refuses this one first (a leaf)
    if _grad_state.enabled and not inference:  # (an optimizer's step, under no_grad, skips it)
        _check_grad_rules(x, op, record)
    if record:  # then the operands' histories, a view's made again (its refusal comes here)
        for a in args:
            if isinstance(a, Tensor) and a._base is not None:
                a._refresh_view()
    if op == "sub_" and args and (pointwise._is_bool(x) or pointwise._is_bool(args[0])):
        pointwise._refuse_bool_subtraction(x, args[0])  # (torch's sub_ checks this first)
    # torch's copy_ of a tensor onto itself returns at once, before its kernel looks for overlaps
    if not (op in ("copy_", "__setitem__") and args and _same_data(x, args[0])):
        _check_overlaps(x, op, args)
    if inference:
        raise RuntimeError(
            "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a "
            "clone to get a normal tensor before doing inplace update.See "
            "https://github.com/pytorch/rfcs/pull/17 for more details."
        )


# the in-place ops whose number operand torch makes a (normal) tensor: x.add_(1) is add_(x, tensor(1))
_NUMBER_AS_TENSOR = ("add_", "sub_", "mul_", "div_")


def _meets_a_normal_tensor(op, args) -> bool:
    """Whether an in-place op on an inference tensor meets a normal tensor (an operand, an
    index, a mask, or a number torch wraps as one): torch then runs its autograd layer, which
    refuses a leaf that requires grad first; with inference tensors only it goes straight to
    the kernel, and the inference tensor's refusal comes first."""
    for a in args:
        if isinstance(a, list | tuple) and _meets_a_normal_tensor(op, a):
            return True
        if isinstance(a, Tensor) and not a._inference:
            return True
        if isinstance(a, int | float) and op in _NUMBER_AS_TENSOR:
            return True
    return False


def _check_overlaps(x, op, args) -> None:
    """The kernel's refusals: x's own elements sharing memory (an expanded x), or an input
    overlapping x in part. (torch fills an expanded x with a number, not with a tensor.)"""
    number_fill = op == "zero_" or op == "fill_" and not isinstance(args[0], Tensor)
    if not number_fill and _repeats(x._data):
        if op in _DEPRECATED_ON_EXPANDED:  # torch still allows these, with a warning
            _warn_on_expanded(op)
        else:
            raise RuntimeError(
                "unsupported operation: more than one element of the written-to tensor refers to a single memory "
                "location. Please clone() the tensor before performing the operation.\n"
                f"  {op} would write several values into one memory cell: this tensor comes from expand() "
                f"(strides {x.stride()}), so its elements share memory."
            )
    _check_inputs_overlap(x, op, args)


def _same_data(x, src) -> bool:
    """``src`` reads exactly the elements ``x`` is, in the same order, with the same dtype."""
    return (
        isinstance(src, Tensor)
        and src._counter is x._counter
        and src.data_ptr() == x.data_ptr()
        and src.shape == x.shape
        and src.stride() == x.stride()
        and src.dtype is x.dtype
    )


def _check_grad_rules(x, op: str, record: bool) -> None:
    """The refusals of autograd (grad mode on): an in-place change of a leaf that requires
    grad, or of a view whose history cannot be rewritten."""
    base = x._base
    if base is None:
        if x._grad_fn is None and x._requires_grad:
            raise _leaf_in_place(op)
        return
    meta = x._creation_meta
    if meta == "multi_output" and (x._requires_grad or record):
        raise RuntimeError(multi_output_message(x, "is being modified inplace"))
    if meta == "custom_function" and (x._requires_grad or record):
        raise RuntimeError(custom_function_message(x, "is being modified inplace"))
    if meta in ("no_grad", "inference") and (base._requires_grad or record):
        raise RuntimeError(mode_view_message(x, "is being modified inplace"))
    if base._grad_fn is None and (base._requires_grad or x._requires_grad):
        # (x may require grad alone: a view with a history whose base was detach_()ed since)
        raise RuntimeError(
            "a view of a leaf Variable that requires grad is being used in an in-place operation.\n"
            f"  {op} writes into part of a leaf that requires grad; do it under no_grad(), or work on a clone."
        )
    if x._grad_fn is None and not x._requires_grad and base._requires_grad:
        # a view made before an in-place op gave its base a history, its own new history not
        # read yet (x.grad_fn): torch's check sees a leaf that requires grad
        raise _leaf_in_place(op)


def _leaf_in_place(op: str) -> RuntimeError:
    """torch's refusal to change a leaf that requires grad, with why."""
    verb = "has been" if op.endswith("(mark_dirty)") else "is being"
    return RuntimeError(
        f"a leaf Variable that requires grad {verb} used in an in-place operation.\n"
        f"  {op} would overwrite a leaf (a parameter you asked gradients for): its gradient would no "
        "longer match the value you see. Update parameters inside `with tg.no_grad():`, or use an "
        "out-of-place op."
    )


def _overlap(a, b) -> str:
    """torch's memory-overlap status of two arrays: "full" (the same elements, laid out the
    same way), "partial", "none", or "unknown" (torch only judges dense layouts)."""
    if a is b:
        return "full"
    if (
        not a.size or not b.size or not array_module(a).may_share_memory(a, b)
    ):  # (a cheap bounds test)
        return "none"
    if not (dense(a) and dense(b)):
        return "unknown"
    start_a, start_b = address(a), address(b)
    end_a, end_b = start_a + a.nbytes, start_b + b.nbytes
    if start_a == start_b and end_a == end_b:
        return "full" if a.strides == b.strides else "partial"
    return "partial" if start_a < end_b and start_b < end_a else "none"


def _records(x, fn, args, kwargs) -> bool:
    """Whether an in-place op on ``x`` with these arguments goes into the graph (a copy
    into an integer or bool ``x``, which can't require grad, never does: torch's copy_ asks)."""
    return _grad_state.enabled and (
        x._requires_grad
        or (fn is not _copy or x._data.dtype.kind in "fc")
        and (
            any(isinstance(a, Tensor) and a.requires_grad for a in args)
            or any(isinstance(v, Tensor) and v.requires_grad for v in kwargs.values())
        )
    )


def inplace(x, op: str, fn, *args, **kwargs):
    """``x.<op>(*args)``: compute ``fn(x, *args)`` out of place, write it into ``x``,
    bump the version, and (when recording) make the op's node ``x``'s new history."""
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}() needs a Tensor")
    record = _grad_state.enabled and _records(x, fn, args, kwargs)
    # (before reading a view's history, as torch does; an operand given by keyword counts too)
    check_inplace(x, op, record, (*args, *kwargs.values()) if kwargs else args)
    # (a float tensor holds any result: the optimizers' add_(g, alpha=-lr) skips this)
    if op in _ALPHA_OPS and x._data.dtype.kind != "f" and (len(args) > 1 or kwargs):
        _check_alpha_cast(x, op, *args, **kwargs)
    if x._base is not None and _grad_state.enabled:  # (nothing is recorded otherwise)
        x._refresh_view()
        # (the base may require grad since the view was made)
        record = _records(x, fn, args, kwargs)
    if not record:
        if op in _UFUNCS and _fw_state.level is None and _arith_in_place(x, op, *args, **kwargs):
            return x
        if _grad_state.enabled:
            with no_grad():
                out = fn(x, *args, **kwargs)
        else:
            out = fn(x, *args, **kwargs)
        _write(x, out, op, args, kwargs)
        inplace_tangent(x, out)
        return x
    # the old value, with the old history: the op's node will point at it
    old = Tensor._make(x._data.copy())
    old._grad_fn, old._output_nr, old._requires_grad = x._grad_fn, x._output_nr, x._requires_grad
    if x._fw_grad is not None:  # and the old tangent, in forward AD: a copy, for x's own is
        old._fw_grad, old._fw_level = pointwise.clone(x._fw_grad), x._fw_level  # overwritten
    out = fn(old, *args, **kwargs)
    _write(x, out, op, args, kwargs)
    node = out._grad_fn
    if node is None:
        inplace_tangent(x, out)
        return x
    for saved in node._saved:  # what the node saved as its result is now x itself
        if isinstance(saved, SavedTensor) and saved.is_output:
            saved.data, saved.counter = x._data, x._counter
            saved.version = x._counter.version
    x._rebase_history(node, out._output_nr, 0)
    inplace_tangent(x, out)
    return x


_UFUNCS = {"add_": "add", "sub_": "subtract", "mul_": "multiply", "div_": "true_divide"}
_NUMPY_ARRAY = numpy_module().ndarray  # (on the CPU the fused kernels are not even asked)


def _arith_in_place(x, op, other, alpha=1, rounding_mode=None) -> bool:
    """Unrecorded ``+= -= *= /=`` straight into x's memory (no temporary, as NumPy's ``-=``);
    False when the case needs the general path (which also gives the errors)."""
    xd = x._data
    if rounding_mode is not None or xd.dtype.kind == "b":  # (bools: the general path refuses)
        return False
    if isinstance(other, Tensor):
        y = other._data
        if (
            type(y) is not type(xd)
            or y.dtype != xd.dtype
            or y.shape != xd.shape
            and y.ndim > xd.ndim
        ):
            return False
    elif type(other) in (int, float) and xd.dtype.kind == "f":
        y = other
    else:
        return False
    if type(alpha) is not int or alpha != 1:  # (True and 1.0 too: torch may refuse them)
        if type(alpha) not in (int, float) or type(alpha) is float and xd.dtype.kind != "f":
            return False  # (a bool or tensor alpha; a float one for integers: the general path)
        on_gpu = op in ("add_", "sub_") and type(xd) is not _NUMPY_ARRAY
        if on_gpu and fused.add_scaled_(xd, y, alpha if op == "add_" else -alpha):
            x._counter.bump(op)  # (on a GPU: SGD's update in one kernel, not two)
            return True
        y = y * alpha
    ufunc = getattr(array_module(xd), _UFUNCS[op])
    try:
        if op == "div_":  # x / 0 makes inf or nan silently, as torch (see builtin.quiet)
            quiet(ufunc)(xd, y, out=xd)
        else:
            ufunc(xd, y, out=xd)
    except (ValueError, TypeError):  # shapes don't broadcast to x, or an integer x can't hold
        return False  # the quotient: the general path says so
    x._counter.bump(op)
    return True


def _write(x, out, op: str, args=(), kwargs=None) -> None:
    """Write ``out``, ``x.<op>(*args, **kwargs)`` computed out of place, into ``x``."""
    data = out._data
    if data.shape != x._data.shape:
        raise RuntimeError(
            f"output with shape {list(x._data.shape)} doesn't match the broadcast shape "
            f"{list(data.shape)}\n  {op} must produce a result of the shape of the tensor it "
            "changes; broadcasting may only expand the other operand."
        )
    if data.dtype != x._data.dtype:
        _check_cast(data.dtype, x, op, args, kwargs)
        data = data.astype(x._data.dtype)
    if op in _DEPRECATED_ON_EXPANDED and _repeats(x._data):  # (fill_ and zero_ write one value)
        _write_chosen(x, op, *args, **(kwargs or {}))
    else:
        x._data[...] = data
    x._counter.bump(op)


def _check_cast(result_dtype, x, op: str, args=(), kwargs=None) -> None:
    """torch's error when ``x`` can't hold a result of ``result_dtype`` (a float result in an
    integer tensor: ``ints.add_(0.5)``)."""
    if _CATEGORY[result_dtype.kind] > _CATEGORY[x._data.dtype.kind]:
        into = x._data.dtype
        raise RuntimeError(
            f"result type {scalar_name(result_dtype.name)} can't be cast to the desired output "
            f"type {c_type_name(into.name) if _cpp_named(op, args, kwargs) else scalar_name(into.name)}"
        )


def _check_alpha_cast(x, op: str, other, alpha=1, **_) -> None:
    """``x.add_(other, alpha=...)`` and ``sub_``: torch checks that ``x`` can hold the result
    before it checks ``alpha`` (``ints.add_(floats, alpha=True)`` is the cast's error, not the
    bool alpha's)."""
    if type(alpha) in (bool, float):  # (the alphas that add's own check may refuse)
        _check_cast(result_type(x, other).numpy, x, op)


_ALPHA_OPS = frozenset({"add_", "sub_"})


def _write_chosen(x, op, key_or_mask, values, accumulate=False) -> None:
    """``masked_fill_`` / ``index_put_`` into an expanded ``x``, whose elements share memory
    cells: as torch's kernels, write only the chosen elements, one after the other, into
    the shared memory, so that a later write to a cell wins over an earlier one (or, with
    ``accumulate``, adds to it). (The whole result, written back, would let the rows that
    were not chosen overwrite the chosen ones: ``zeros(3).expand(2, 3)[tensor([0])] = 7``
    makes the base all 7, as in torch.)
    """
    data, xp = x._data, array_module(x._data)
    v = values._data if isinstance(values, Tensor) else values
    if op == "masked_fill_":
        data[xp.broadcast_to(key_or_mask._data, data.shape)] = xp.asarray(v, dtype=data.dtype)
        return
    key_or_mask = index._array_key(key_or_mask, xp)  # (index_put_'s key, as it was given)
    if not accumulate and index._lone_mask(key_or_mask) and getattr(v, "size", 1) == 1:
        _warn_on_expanded("masked_fill_")  # torch fills through masked_fill_
    key, v = index._checked_key(x, key_or_mask), xp.asarray(v).astype(data.dtype)
    if accumulate:
        xp.add.at(data, key, v)  # unbuffered: each chosen element adds to its cell
    else:
        data[key] = v  # in the order of the indices: the last write to a cell wins


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2}


def _cpp_named(op, args, kwargs) -> bool:
    """Whether torch's error names the output type in C++ ("long int" for "Long"): clamp_'s
    overload for number bounds does; torch takes it unless every bound given is a tensor."""
    bounds = [b for b in (*args, *(kwargs or {}).values()) if b is not None]
    return op in ("clamp_", "clip_") and not all(isinstance(b, Tensor) for b in bounds)


# --------------------------------------------------------------------------- ops that only exist in place


class Zero(Builtin):
    node_name = "ZeroBackward0"
    formula = {"self": "0"}

    @staticmethod
    def forward(ctx, a):
        return array_module(a).zeros_like(a._data)

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad)

    jvp = staticmethod(zero_tangent)


class Fill(Builtin):
    """``fill_(number)``: every element becomes the number; no gradient flows to the old values."""

    node_name = "FillBackward2"
    formula = {"self": "0"}

    @staticmethod
    def forward(ctx, a, value):
        return array_module(a).full_like(a._data, scalar_of(value, a._data.dtype))

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad), None

    jvp = staticmethod(zero_tangent)


class FillTensor(Builtin):
    """``fill_(0-d tensor)``: the value's gradient is the sum of the gradient."""

    node_name = "FillBackward3"
    formula = {"self": "0", "value": "sum(grad)"}

    @staticmethod
    def forward(ctx, a, value):
        if value._data.ndim:
            raise RuntimeError(
                f"fill_ only supports 0-dimension value tensor but got tensor with {value._data.ndim} dimensions."
            )
        return array_module(a).full_like(a._data, value._data)

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad), grad.sum() if ctx.needs_input_grad[1] else None

    jvp = staticmethod(linear_jvp)  # (the old values' tangent is replaced by the value's)


def fill(x, value):
    """``x`` filled with ``value`` (a number or a 0-d tensor), as a new tensor."""
    if value is None:  # (NumPy would fill with nan; checked() words torch's error)
        raise TypeError("fill_'s value is a number or a tensor, not None")
    return FillTensor.apply(x, value) if isinstance(value, Tensor) else Fill.apply(x, value)


class Copy(Builtin):
    node_name = "CopyBackwards"
    formula = {"self": "0", "src": "grad, back to src's device and dtype"}

    @staticmethod
    def forward(ctx, a, src):
        ctx.src_device = src.device
        _check_broadcasts_to(src._data.shape, a._data.shape)
        out = array_module(a).empty_like(a._data)
        out[...] = to_device(src._data, a.device)  # broadcasts src and casts to a's dtype
        return out

    @staticmethod
    def backward(ctx, grad):
        g = grad.to(ctx.src_device) if ctx.needs_input_grad[1] else None
        return constant_zeros(grad), g

    jvp = staticmethod(linear_jvp)


torch_cpp_node(Copy._backward_cls)  # (the node class Function made for Copy)


def _check_broadcasts_to(shape, target) -> None:
    """torch's errors where ``shape`` does not broadcast to ``target`` (which torch names
    tensor a when a size clashes)."""
    if tuple(broadcast_shape(target, shape)) != tuple(target):
        raise RuntimeError(
            f"output with shape {list(target)} doesn't match the broadcast shape "
            f"{list(broadcast_shape(target, shape))}"
        )


# --------------------------------------------------------------------------- in-place view ops


def view_in_place(x, op: str, cls, *args):
    """``x.t_()``, ``x.squeeze_()`` ...: x itself becomes the view ``cls.apply(x, *args)``
    (the same memory, another shape and strides), and takes that view's node as its
    history, under torch's name for the in-place op (``TBackward1``: ``views.IN_PLACE``).
    Its version is bumped, as by any in-place op: what saved x's old layout can tell.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, 3, requires_grad=True) * 2
    >>> x.t_().shape, x.grad_fn, x._version
    (teachgrad.Size([3, 2]), <TBackward1 object at ...>, 1)
    """
    check_inplace(x, op, _grad_state.enabled and x._requires_grad)
    if x._base is not None and _grad_state.enabled:
        x._refresh_view()  # (the history the new node points at must be current)
    out = IN_PLACE[cls].apply(x, *args)  # (retain_grad() stays with the old node, as in torch)
    x._data = out._data
    if out._grad_fn is not None:
        x._grad_fn, x._output_nr = out._grad_fn, out._output_nr
    if out._fw_grad is not None:  # forward AD: x's tangent is laid out as x now is
        x._fw_grad, x._fw_level = out._fw_grad, out._fw_level
    x._counter.bump(op)
    if x._base is not None:  # (its history is its own and up to date: no regenerating)
        x._view_base_fn, x._view_version = x._base._grad_fn, x._counter.version
    return x


def as_strided_(input, size, stride, storage_offset=None):
    """``as_strided`` in place: ``input`` itself takes the new layout (node AsStridedBackward1).

    >>> import teachgrad as tg
    >>> tg.arange(4.0).as_strided_((2,), (2,))
    tensor([0., 2.])
    """
    size, stride = _as_ints(size), _as_ints(stride)
    _check_strided_layout(input, size, stride, _offset(input, storage_offset))
    return view_in_place(input, "as_strided_", AsStridedView, size, stride, storage_offset)


def _view_method(op, cls_and_args):
    """The method ``x.<op>(...)`` of an in-place view op: ``cls_and_args(x, ...)`` says which
    view op it is and its arguments (torch's errors for bad ones come from there)."""

    def method(self, *args, **kwargs):
        cls, view_args = cls_and_args(self, *args, **kwargs)
        return view_in_place(self, op, cls, *view_args)

    method.__name__ = op
    args, shape = _VIEW_EXAMPLES.get(op, ("0, 1", "[2, 1]"))
    method.__doc__ = (
        f"In place, ``{op.rstrip('_')}``: this tensor becomes that view of its memory (its "
        f"version is bumped).\n\n    >>> import teachgrad as tg\n    >>> x = tg.zeros(1, 2)\n"
        f"    >>> x.{op}({args}).shape\n    teachgrad.Size({shape})\n"
    )
    return method


def _transposed(x, dim0, dim1):
    ndim = x._data.ndim
    return views.Transpose, (_given_dim(dim0, ndim), _given_dim(dim1, ndim))


# the example of each method on a (1, 2) tensor: (arguments, shape); others take "0, 1"
_VIEW_EXAMPLES = {"t_": ("", "[2, 1]"), "squeeze_": ("", "[2]"), "unsqueeze_": ("-1", "[1, 2, 1]")}

VIEW_METHODS = {
    "t_": _view_method("t_", lambda x: (views.T, views.t_dims(x, "t_"))),
    "transpose_": _view_method("transpose_", _transposed),
    "swapaxes_": _view_method("swapaxes_", _transposed),
    "swapdims_": _view_method("swapdims_", _transposed),
    "squeeze_": _view_method(
        "squeeze_", lambda x, dim=None: (views.squeeze_node(x, dim), (views.squeeze_dims(x, dim),))
    ),
    "unsqueeze_": _view_method(
        "unsqueeze_", lambda x, dim: (views.Unsqueeze, (_given_dim(dim, x._data.ndim + 1),))
    ),
    "as_strided_": as_strided_,
}


# --------------------------------------------------------------------------- the methods


def _method(op, fn):
    """The method ``x.<op>(...)``: ``inplace(x, op, fn, ...)``, recorded by a profiler as
    torch's ``aten::<op>`` (``aten::add_``), with the out-of-place op it runs inside.

    (What ``@recorded_as`` does, written into the method: a wrapper's extra call would
    cost about 5% of ``x.add_(1)`` even when no profile runs.)"""
    event = None if op in _NAMED_BY_THEIR_NODE else f"aten::{op}"

    def method(self, *args, **kwargs):
        if _profiling.active and event:
            return _profiling.recorder.op(event, inplace, (self, op, fn, *args), kwargs)
        return inplace(self, op, fn, *args, **kwargs)

    method.__name__, method.__wrapped__ = op, fn  # (its signature: fn's, as inspect shows)
    example = _EXAMPLE_ARGS.get(op, "")
    method.__doc__ = (
        f"In-place ``{op.strip('_')}``: changes this tensor, bumps its version, returns it.\n\n"
        f"    >>> import teachgrad as tg\n    >>> x = tg.ones(2)\n    >>> x.{op}({example})._version\n    1\n"
    )
    return method


# ops with no out-of-place twin: their node is already torch's in-place op (Zero: aten::zero_)
_NAMED_BY_THEIR_NODE = {"zero_", "fill_", "copy_"}


_EXAMPLE_ARGS = {
    "add_": "2.0",
    "sub_": "2.0",
    "mul_": "2.0",
    "div_": "2.0",
    "pow_": "2",
    "clamp_": "0.0, 0.5",
    "clip_": "0.0, 0.5",
    "lerp_": "tg.zeros(2), 0.5",
    "addcmul_": "tg.ones(2), tg.ones(2)",
    "addcdiv_": "tg.ones(2), tg.ones(2)",
    "fill_": "3.0",
    "copy_": "tg.zeros(2)",
    "__iadd__": "2.0",
    "__isub__": "2.0",
    "__imul__": "2.0",
    "__itruediv__": "2.0",
    "remainder_": "2.0",
    "fmod_": "2.0",
    "igamma_": "tg.ones(2)",
    "igammac_": "tg.ones(2)",
    **dict.fromkeys(pointwise.COMPARED_IN_PLACE, "1.0"),
}


def _copy(x, other, non_blocking=False):  # (torch's keyword is other, though its docs say src)
    if isinstance(other, bool | int | float):  # torch wraps a number as a 0-d tensor
        other = pointwise._wrapped_input(other, x, "copy_")
    if not isinstance(other, Tensor):
        raise TypeError(
            f"copy_(): argument 'other' (position 1) must be Tensor, not {type_name(other)}"
        )
    return Copy.apply(x, other)


def _strip_leading_ones(value):
    """``value`` without its leading dims of size 1 (a view)."""
    while value._data.ndim and value.shape[0] == 1:
        value = value[0]
    return value


def _takes_all(basic, shape) -> bool:
    """Whether the basic key (slices and one ``...``) selects all of a tensor of ``shape``,
    as torch reads the slices (``x[0:10]`` of 2 rows does, ``x[-2:]`` does not)."""
    if not all(k is Ellipsis or isinstance(k, slice) for k in basic):
        return False
    ellipsis = next((i for i, k in enumerate(basic) if k is Ellipsis), len(basic))
    head, tail = basic[:ellipsis], basic[ellipsis + 1 :]
    sized = [*zip(head, shape), *zip(tail, shape[len(shape) - len(tail) :])]
    return all(whole_slice(k, size) for k, size in sized)


def setitem(x, key, value) -> None:
    """``x[key] = value``, decomposed as torch does: the basic part of the key (ints, slices,
    None) selects a view, then a copy/fill into it, or ``index_put_`` for the advanced part.

    >>> import teachgrad as tg
    >>> x = tg.zeros(2, 3); x[0, 1:] = 5.0; x[x > 1] = 7.0; x
    tensor([[0., 7., 7.],
            [0., 0., 0.]])
    """
    if key is False:  # torch writes nothing (not even a version bump) through a lone False
        return
    if key is True:  # ... and through a lone True, a copy into x[None] (casting, as copy_ does)
        key = None
    if not isinstance(value, Tensor) or not value._data.ndim:  # torch's masked fill
        for k in key if isinstance(key, tuple) else (key,):
            if isinstance(k, Tensor) and k._data.ndim and k._data.dtype.kind == "u":
                index.check_fill_mask(k)
    key = index.plain_key(x, key)
    keys = key if isinstance(key, tuple) else (key,)
    basic, advanced = [], []
    positions = []  # where each entry of ``basic`` stood in the key (torch's errors say)
    for place, k in enumerate(keys):
        if index.is_scalar_bool(k):  # as torch: a new dim of size 1, indexed by [0] or []
            basic.append(None)
            advanced.append(index.bool_positions(k, x))
        elif _is_advanced(k):
            basic += [slice(None)] * index.key_width(k)  # (a mask covers as many dims as it has)
            advanced.append(k)
        else:
            basic.append(k)
            if not isinstance(k, int):  # an int removes its dim from the view
                advanced.append(k if k is Ellipsis else slice(None))
        positions += [place] * (len(basic) - len(positions))
    # writing all of x needs no view
    target = x if _takes_all(basic, x.shape) else basic_getitem(x, tuple(basic), positions)
    basic_only = len(advanced) == len([k for k in advanced if not _is_advanced(k)])
    # (a tensor value is copied unless it is 0-d as given: its leading ones go first, but a
    # (1, 1) value is still copied, as torch copies it, not filled in)
    copied = isinstance(value, Tensor) and (value._data.ndim or not target._data.ndim)
    if isinstance(value, Tensor) and not basic_only:
        value = _strip_leading_ones(value)  # torch drops them first: [[1., 2.]] fits a row
    elif isinstance(value, Tensor) and value._data.ndim > target._data.ndim:
        value = _strip_leading_ones(value)
        if value._data.ndim > target._data.ndim:
            raise expand_error(value, tuple(target.shape), None)
    if not basic_only:
        _index_put_(target, tuple(advanced), value)
    elif copied:  # (a 0-d target is copied into even from a 0-d value: CopyBackwards)
        if value.shape != target.shape:
            with no_grad():
                value.expand(target.shape)  # torch's error when the value does not fit
        inplace(target, "__setitem__", _copy, value)
    elif not target._data.ndim:  # a number into a 0-d target: a copy of it, as torch
        value = wrap_array(array_module(x).asarray(scalar_of(value, x._data.dtype)))
        inplace(target, "__setitem__", _copy, value)
    else:  # torch wraps a number as a tensor here (the node gets an edge for it)
        if not isinstance(value, Tensor):
            value = wrap_array(array_module(x).asarray(scalar_of(value, x._data.dtype)))
        inplace(target, "__setitem__", fill, value)


METHODS = {
    "add_": _method("add_", pointwise.add),
    "sub_": _method("sub_", pointwise.sub),
    "mul_": _method("mul_", pointwise.mul),
    "div_": _method("div_", pointwise.div),
    "pow_": _method("pow_", pointwise.pow),
    "neg_": _method("neg_", pointwise.neg),
    "abs_": _method("abs_", pointwise.abs),
    "exp_": _method("exp_", pointwise.exp),
    "log_": _method("log_", pointwise.log),
    "sqrt_": _method("sqrt_", pointwise.sqrt),
    "square_": _method("square_", pointwise.square),
    "sin_": _method("sin_", pointwise.sin),
    "cos_": _method("cos_", pointwise.cos),
    "tanh_": _method("tanh_", pointwise.tanh),
    "sigmoid_": _method("sigmoid_", pointwise.sigmoid),
    "relu_": _method("relu_", pointwise.relu),
    "clamp_": _method("clamp_", pointwise.clamp),
    "lerp_": _method("lerp_", pointwise.lerp),
    "addcmul_": _method("addcmul_", pointwise.addcmul),
    "addcdiv_": _method("addcdiv_", pointwise.addcdiv),
    "clip_": _method("clip_", pointwise.clamp),
    "zero_": _method("zero_", Zero.apply),
    "fill_": _method("fill_", fill),
    "copy_": _method("copy_", _copy),
    "__iadd__": _method("add_", pointwise.add),
    "__isub__": _method("sub_", pointwise.sub),
    "__imul__": _method("mul_", pointwise.mul),
    "__itruediv__": _method("div_", pointwise.div),
    "remainder_": _method("remainder_", pointwise.remainder),
    "fmod_": _method("fmod_", pointwise.fmod),
    "igamma_": _method("igamma_", special.igamma),
    "igammac_": _method("igammac_", special.igammac),
    "__imod__": _method("remainder_", pointwise.remainder),
    "__setitem__": setitem,
    "as_strided": as_strided,
    **VIEW_METHODS,
    **{op: _method(op, fn) for op, fn in pointwise.COMPARED_IN_PLACE.items()},
}


def masked_fill_(input, mask, value):
    """In-place ``masked_fill``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, -2.0]); x.masked_fill_(x < 0, 0.0)
    tensor([1., 0.])
    """
    return inplace(input, "masked_fill_", index.masked_fill, mask, value)


def index_put_(input, indices, values, accumulate=False):
    """In-place ``index_put`` (what ``x[idx] = v`` does for advanced indices).

    >>> import teachgrad as tg
    >>> x = tg.zeros(3); x.index_put_((tg.tensor([2]),), tg.tensor(5.0))
    tensor([0., 0., 5.])
    """
    index.check_index_put(input, indices, values, accumulate)
    return _index_put_(input, indices, values, accumulate)


def _index_put_(input, indices, values, accumulate=False):
    """``index_put_``, whose values may also be a number (as ``x[idx] = 2.0`` writes)."""
    return inplace(input, "index_put_", index.IndexPut.apply, tuple(indices), values, accumulate)

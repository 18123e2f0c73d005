"""Forward-mode AD: a tensor carries a *tangent* and every op pushes it forward.

Reverse mode (``backward``) answers "how does the loss change with every input?"
in one pass. Forward mode answers "how does every output change when the inputs
move in *one* direction?" in one pass: with ``x`` carrying the direction ``t``,
each op computes its output's tangent ``J t`` (a Jacobian-vector product) right
away, next to its value. No graph is needed.

Each Function says how in a ``jvp(ctx, *tangents)`` staticmethod (one tangent per
forward argument, None where an argument has none) that returns the tangent of
each output, written with teachgrad ops. ``Function.apply`` calls it when a
``dual_level`` is open and an input carries a tangent: with no level open, forward
AD costs one check per op.

What lives here: ``dual_level`` / ``enter_dual_level`` / ``exit_dual_level``,
``make_dual``, ``unpack_dual`` and the helpers ``apply`` uses (``tangent_of``,
``push_tangents``), plus ``linear_jvp``, the tangent rule of every linear op.

    >>> import teachgrad as tg
    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> x = tg.tensor([1.0, 2.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, tg.tensor([1.0, 0.0])) ** 2   # d/dt (x + t e0)**2
    ...     fwAD.unpack_dual(y).tangent
    tensor([2., 0.])
"""

from __future__ import annotations

from collections import namedtuple

from .. import _seam
from .._backend import address, array_module, is_writeable, strided_view
from .._tensor import Tensor, wrap_array
from .grad_mode import _DecoratorContextManager
from .grad_mode import state as _grad_state


class _Level:
    """The open dual level: tangents made at another (closed) level are ignored."""

    def __init__(self, index: int):
        self.index = index


class _State:
    level = None  # the open _Level, or None: Function.apply checks only this
    enabled = True  # forward grad mode (_set_fwd_grad_enabled): off, ops make no tangents


state = _State()


def _is_fwd_grad_enabled() -> bool:
    """Whether ops push tangents through (torch's private forward grad mode, on by default).

    >>> _is_fwd_grad_enabled()
    True
    """
    return state.enabled


class _set_fwd_grad_enabled(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Turn forward grad mode on or off at once (and back, as a context manager or
    decorator): while off, no op gives its output a tangent.

    >>> with _set_fwd_grad_enabled(False):
    ...     _is_fwd_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        self.prev, state.enabled = state.enabled, bool(mode)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        state.enabled = self.prev

    def clone(self):
        return self.__class__(state.enabled)


def __getattr__(name):
    """``forward_ad._current_level``, torch's module attribute: the open level's number, or -1
    when none is open (read from ``state``, the one place it is kept)."""
    if name == "_current_level":
        return -1 if state.level is None else state.level.index
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = """What ``unpack_dual`` returns: ``primal`` (a view without the
tangent) and ``tangent`` (None for a tensor that carries none)."""


def enter_dual_level() -> int:
    """Open the (single) forward-AD level; prefer ``with dual_level():``.

    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> fwAD.enter_dual_level()
    0
    >>> fwAD.exit_dual_level()
    """
    if state.level is not None:
        raise RuntimeError(
            "Nested forward mode AD is not supported at the moment\n  A dual_level is already "
            "open; compute higher-order forward derivatives with tg.autograd.functional instead."
        )
    state.level = _Level(0)
    return 0


def exit_dual_level(*, level=None) -> None:
    """Close the level: every tangent made inside it is dropped.

    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> fwAD.enter_dual_level(); fwAD.exit_dual_level()
    0
    """
    if level is None and state.level is None:  # torch exits its "current level", -1 here
        raise RuntimeError(
            "Dual level must be a positive number.\n  No dual level is open: exit_dual_level() "
            "closes the one enter_dual_level() opened."
        )
    if level is not None and (state.level is None or level != state.level.index):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. This is "
            f"not supported.\n  Level {level} is not open (the only level is 0, while it is open)."
        )
    state.level = None


class dual_level(_DecoratorContextManager):
    """Context manager (and decorator) inside which tensors can carry tangents.

    On exit all tangents are dropped, so results computed inside cannot be
    confused with those of a later forward-AD computation.

    >>> import teachgrad as tg
    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(tg.tensor(3.0), tg.tensor(1.0)).exp()
    ...     inside = fwAD.unpack_dual(y).tangent
    >>> inside, fwAD.unpack_dual(y).tangent
    (tensor(20.0855), None)
    """

    def __enter__(self) -> int:
        return enter_dual_level()

    def __exit__(self, *exc) -> None:
        exit_dual_level()


def _check_level(level) -> None:
    if level is not None and (state.level is None or level != state.level.index):
        raise RuntimeError(f"Invalid level given to forward AD: {level} (the open level is 0)")


def make_dual(tensor: Tensor, tangent: Tensor, *, level=None) -> Tensor:
    """A view of ``tensor`` that carries ``tangent`` (the direction to differentiate in).

    >>> import teachgrad as tg
    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     d = fwAD.make_dual(tg.tensor([1.0, 2.0]), tg.tensor([0.5, 0.5]))
    ...     (d * d).sum()
    tensor(5., tangent=3.0)
    """
    if state.level is None:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first.\n  Use `with tg.autograd.forward_ad.dual_level():` around "
            "the computation."
        )
    _check_level(level)
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual expects two Tensors: the primal and its tangent")
    if tensor._data.dtype.kind != "f":
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}\n  Only "
            "floating-point tensors can be differentiated."
        )
    if tangent._data.dtype.kind != "f":
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    if _grad_state.inference:  # torch: inference mode turns forward AD off, checks included
        return tensor.detach() if tensor._inference else _forward_root_view(tensor)
    _check_not_dual(tensor, tangent)
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(tensor.shape)} while the "
            f"given forward gradient is of size {list(tangent.shape)}."
        )
    if not _same_layout(tangent, tensor):  # torch: the tangent takes the primal's layout
        tangent = _laid_out_like(tensor, tangent)
    if tensor._inference:  # torch: an inference tensor's dual is no view (it has no version)
        dual = tensor.detach()
        if tangent._inference:
            return dual  # ... and no autograd kernel runs when both are inference tensors
    else:
        dual = _forward_root_view(tensor)
    _set_tangent(dual, tangent)
    return dual


def _laid_out_like(tensor: Tensor, tangent: Tensor) -> Tensor:
    """A copy of ``tangent`` with the primal's strides and offset, in zeros as big as the
    primal's storage, as torch's: a view of the dual that reaches past the primal (an
    ``as_strided``) finds zeros there."""
    data = tensor._data
    memory = array_module(data).zeros(tensor._storage_array().size, dtype=tangent._data.dtype)
    strides = tuple(s // data.itemsize * memory.itemsize for s in data.strides)
    copy = strided_view(memory[tensor.storage_offset() :], data.shape, strides)
    copy[...] = tangent._data
    return Tensor._make(copy)


def _same_layout(tangent: Tensor, tensor: Tensor) -> bool:
    """torch keeps the very tangent given (in-place changes of the dual then write into
    it) when shape, strides, storage offset and storage size all match the primal's."""
    return (
        tangent._data.strides == tensor._data.strides
        and tangent.storage_offset() == tensor.storage_offset()
        and tangent._storage_array().nbytes == tensor._storage_array().nbytes
    )


def _check_not_dual(tensor: Tensor, tangent: Tensor) -> None:
    """One level of tangents: neither the primal nor the tangent may carry one already."""
    if tangent_of(tensor) is not None:
        raise RuntimeError(
            "Making a dual Tensor based on a Tensor that already has a forward gradient at the "
            "same level 0 is not supported.\n  Use fwAD.unpack_dual(x).primal as the primal."
        )
    if tangent_of(tangent) is not None:
        raise RuntimeError(
            "Setting a forward grad that itself has a forward gradient at the same level0 is not "
            "supported.\n  A tangent is a plain Tensor: pass fwAD.unpack_dual(t).primal (or "
            "t.detach()); tangents of tangents need nested levels, which do not exist here."
        )


def _forward_root_view(tensor: Tensor) -> Tensor:
    """A view of ``tensor`` for backward, but not for forward AD: its tangent is its own,
    not a region of ``tensor``'s (torch's make_dual and unpack_dual views)."""
    level_now = state.level
    state.level = None  # the view itself must not pick up a tangent from ``tensor``
    try:
        view = tensor.view_as(tensor)
    finally:
        state.level = level_now
    view._fw_base = None
    return view


def unpack_dual(tensor: Tensor, *, level=None) -> UnpackedDualTensor:
    """``(primal, tangent)`` of a tensor; ``tangent`` is None if it carries none.

    >>> import teachgrad as tg
    >>> import teachgrad.autograd.forward_ad as fwAD
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(tg.tensor(2.0), tg.tensor(1.0)) ** 3
    ...     fwAD.unpack_dual(y)
    UnpackedDualTensor(primal=tensor(8.), tangent=tensor(12.))
    """
    _check_level(level)
    tangent = None if _grad_state.inference else tangent_of(tensor)  # inference mode: AD is off
    if tangent is None:
        return UnpackedDualTensor(tensor, None)
    primal = _forward_root_view(tensor)  # a view of the same memory ...
    _set_tangent(primal, None)  # ... with no tangent, and none taken from ``tensor`` later
    return UnpackedDualTensor(primal, tangent)


# --------------------------------------------------------------------------- used by Function.apply


def tangent_of(t: Tensor):
    """``t``'s tangent at the open level (None without a level or a tangent).

    A view's tangent is its region of its base's tangent, as its values are its
    region of the base's memory; it is (re)made from the base when needed.
    """
    level = state.level
    if level is None:
        return None
    if t._fw_level is level:
        tangent = t._fw_grad
        if tangent is None:
            return None  # explicitly none: the primal returned by unpack_dual
    else:
        tangent = None
    base = _forward_base(t)
    base_has_tangent = base is not None and base._fw_level is level and base._fw_grad is not None
    if base_has_tangent and (tangent is None or tangent._base is not base._fw_grad):
        tangent = _region(_tangent_like(base), t, base)
        _set_tangent(t, tangent)
    return tangent


def _set_tangent(t: Tensor, tangent: Tensor) -> None:
    t._fw_grad = tangent
    t._fw_level = state.level


def _forward_base(t: Tensor):
    """The tensor whose tangent holds ``t``'s tangent as a region (None: ``t``'s is its own).

    That is ``t._base`` for a view, except that torch's make_dual and unpack_dual
    results are views for backward only (their tangent is their own), and views of
    them take them as their forward base. Those carry ``_fw_base``; others have none.
    """
    return getattr(t, "_fw_base", t._base)


def _inherit_forward_base(args, outputs) -> None:
    """A view of a make_dual/unpack_dual result (or of a view of one) takes that
    result, not the memory's base, as its forward base; one of an inference tensor
    has none (torch gives it no tangent)."""
    for out in outputs:
        if not isinstance(out, Tensor) or out._base is None:
            continue
        if out._inference and not _grad_state.inference:
            out._fw_base = None
            continue
        for a in args:
            if _shares_base(a, out):
                root = _forward_base(a)
                root = a if root is None else root
                if root is not out._base and root is not out:  # (not an input returned as-is)
                    out._fw_base = root
                break


def push_tangents(cls, ctx, args, kwargs, outputs) -> None:
    """Give the outputs of ``cls.apply(*args)`` their tangents, from ``cls.jvp``.

    Called by ``Function.apply`` only while a dual level is open. A custom Function's
    tangents pass torch's checks first (``_custom_tangent``).
    """
    _inherit_forward_base(args, outputs)
    if _grad_state.inference or not state.enabled:  # (forward grad mode off: no tangents)
        return  # torch: inference mode turns forward AD off (views still read their base's)
    if cls._builtin and cls.view_of_input and args[0]._inference:
        return  # torch: nor does a view of an inference tensor (e.g. of its make_dual) get one
    tangents = [tangent_of(a) if isinstance(a, Tensor) else None for a in args]
    if all(t is None for t in tangents):
        return
    if cls._builtin and not any(_is_float(o) for o in outputs):
        return  # e.g. a comparison: a bool result has no tangent (a custom jvp runs, as torch's)
    if not cls._builtin and ctx.materialize_grads:  # your jvp gets zeros, never None
        for i, a in enumerate(args):
            if tangents[i] is None and _is_float(a):
                tangents[i] = Tensor._make(array_module(a._data).zeros_like(a._data))
    versions = [t._version if t is not None else None for t in tangents]
    result = _run_jvp(cls, ctx, args, kwargs, outputs, tangents)
    for k, (out, t) in enumerate(zip(outputs, result)):
        if not cls._builtin:
            _custom_tangent(ctx, k, out, t, args, tangents, versions)
        elif t is not None and _is_float(out):
            _set_tangent(out, _checked_tangent(cls, k, out, t, tangents))
    for saved in ctx._saved or ():  # an output saved for backward keeps its tangent too
        if getattr(saved, "is_output", False):
            out = outputs[saved.output_nr]
            saved.tangent = (out._fw_grad, out._fw_level)


def _run_jvp(cls, ctx, args, kwargs, outputs, tangents) -> tuple:
    """``cls.jvp(ctx, *tangents)`` as a tuple with one tangent (or None) per output."""
    ctx.inputs, ctx.kwargs, ctx.outputs = args, kwargs, outputs
    ctx.result = outputs[0]
    level = state.level
    state.level = None  # the formula's own ops carry no tangents (one level only)
    # inside jvp, ctx.saved_tensors gives what save_for_forward kept
    saved, ctx._saved = ctx._saved, tuple(ctx.saved_for_forward)
    try:
        result = cls.jvp(ctx, *tangents)
    finally:
        state.level, ctx._saved = level, saved
    result = result if type(result) is tuple else (result,)
    if len(result) != len(outputs):
        raise RuntimeError(
            f"Function's jvp returned an invalid number of forward gradients (expected "
            f"{len(outputs)} but got {len(result)})\n  {cls.__name__}.jvp returns one tangent "
            "per output of forward (None for outputs that are not differentiable)."
        )
    return result


def _custom_tangent(ctx, k, out, t, args, tangents, versions) -> None:
    """Check the tangent a custom Function's jvp gave output ``k`` as torch does, then set it.

    An output marked dirty (changed in place) must get its input's tangent, changed in
    place too; an output that is a view (or an input returned as-is) must get a view of
    its input's tangent: the tangents then alias exactly as the values do.
    """
    if t is not None and not isinstance(t, Tensor):
        raise RuntimeError(
            f"expected Variable or None (got {type(t).__name__}) for grad output {k}.\n  jvp "
            "returns Tensors (or None), one per output of forward."
        )
    if not _is_float(out) or any(out is o for o in ctx.non_differentiable):
        if t is not None:
            raise RuntimeError(
                f"Function's jvp returned a gradient at position {k}, but  the corresponding "
                "forward output is not a differentiable Tensor.You should return None at that "
                "position instead.\n  (an integer output, or one given to "
                "ctx.mark_non_differentiable, has no tangent)"
            )
        return
    i = next((i for i, a in enumerate(args) if a is out), None)
    if any(out is d for d in ctx.dirty_tensors):
        _check_dirty_tangent(i, t, tangents, versions)
    elif out._base is not None:
        _check_view_tangent(out, t, args, tangents)
    if t is None:
        return
    if t.shape != out.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the original "
            f"Tensor, this is not supported. Tensor is of size {list(out.shape)} while the given "
            f"forward gradient is of size {list(t.shape)}.\n  A tangent has its output's shape."
        )
    if out._base is None and i is None and any(t is g for g in tangents):
        t = t.clone()  # an input's tangent passed through: copy, so in-place changes stay apart
    if i is None:
        _set_tangent(out, t)
    else:  # an input changed in place: its tangent too (already, unless jvp got zeros)
        _write_tangent(out, t._data)


def _check_dirty_tangent(i, t, tangents, versions) -> None:
    """An input changed in place by forward: jvp changes its tangent in place and returns it."""
    if i is None:
        raise RuntimeError(
            "Only input Tensors should be given to ctx.mark_dirty(). If a Tensor is not an "
            "input, there is no need to pass it to mark_dirty()."
        )
    g = tangents[i]
    if t is None or g is None or t._counter is not g._counter or t._version == versions[i]:
        raise RuntimeError(
            "An inplace custom Function is not modifying the forward mode gradients inplace. If "
            "the forward is modifying an input inplace, then the jvp function must modify the "
            "corresponding gradient inplace.\n  e.g. forward does x.mul_(2): jvp does g.mul_(2)."
        )
    if t is not g:
        raise RuntimeError(
            "An inplace custom Function is not returning the forward mode gradients as-is. If "
            "the forward is modifying an input inplace, then the jvp function must modify the "
            "gradient inplace and return it as-is.\n  Return the very tangent jvp was given."
        )


def _check_view_tangent(out, t, args, tangents) -> None:
    """Output ``out`` is a view (or an input returned as-is): ``t`` must be the same view
    of its input's tangent."""
    i = next((i for i, a in enumerate(args) if _shares_base(a, out)), None)
    if t is None:
        if i is not None:  # (torch fails inside, with this line)
            raise RuntimeError(
                "cannot call get_autograd_meta() on undefined tensor\n  jvp returned None for an "
                "output that is a view of an input (or the input as-is): return the same view "
                "of that input's tangent."
            )
        return
    if t._base is None:
        raise RuntimeError(
            "A custom Function's forward is returning a view (or an input as-is) but the jvp is "
            "not returning a view.\n  Return the same view of the tangent (e.g. g[:2] for "
            "x[:2], g.view_as(g) for x itself)."
        )
    if i is None or tangents[i] is None:
        return  # a view of a tensor made inside forward: no input tangent to relate to
    g = tangents[i]
    if _forward_base(args[i]) is not None:  # the input is a view too: compare their bases
        if t._base is not g._base:
            raise RuntimeError(
                "A custom Function is returning a view but the jvp is not returning a view of the "
                "same base as the given grad input.\n  Take the view of the tangent jvp was given."
            )
    elif t._base is not g:
        raise RuntimeError(
            "A custom Function is returning a view but the jvp is not returning a view of the "
            "given grad input.\n  Take the view of the tangent jvp was given."
        )


def _shares_base(a, view: Tensor) -> bool:
    return isinstance(a, Tensor) and (a is view._base or a._base is view._base)


def inplace_tangent(x: Tensor, out: Tensor) -> None:
    """After an in-place op wrote ``out``'s values into ``x``, ``x`` takes ``out``'s tangent.

    A view shares its base's memory, so it shares its base's tangent too: the new
    tangent is written into the view's region of the base's tangent.
    """
    if state.level is None:
        return
    t = tangent_of(out)
    if t is None and tangent_of(x) is None:
        return
    _write_tangent(x, array_module(x._data).zeros_like(x._data) if t is None else t._data)


def _write_tangent(x: Tensor, new) -> None:
    """Make the array ``new`` ``x``'s tangent, writing into the tangent ``x`` shares with
    its base (or with views of it) when there is one."""
    current = tangent_of(x)
    xp = array_module(x._data)
    base = _forward_base(x)
    if base is None:
        if current is not None and is_writeable(current._data) and 0 not in current.stride():
            current._data[...] = new  # in place: views of x hold views of this tangent
        else:
            _set_tangent(x, Tensor._make(xp.array(new, dtype=x._data.dtype)))
        return
    region = _region(_tangent_like(base), x, base)
    region._data[...] = new
    _set_tangent(x, region)


def _tangent_like(base: Tensor) -> Tensor:
    """``base``'s tangent, laid out like ``base`` (zeros if it has none), so that any
    view's strides and offset into the base apply to it too."""
    tangent = base._fw_grad if base._fw_level is state.level else None
    if tangent is None or tangent._data.strides != base._data.strides:
        fresh = _zeros_strided_like(base._data)
        if tangent is not None:
            fresh[...] = tangent._data
        tangent = Tensor._make(fresh)
        _set_tangent(base, tangent)
    return tangent


def _zeros_strided_like(data):
    """Zeros with ``data``'s shape and strides (``data`` may be a strided view, e.g. the
    primal of a make_dual), in a fresh buffer spanning as many bytes as ``data`` does."""
    xp = array_module(data)
    span = sum((n - 1) * s for n, s in zip(data.shape, data.strides)) if data.size else 0
    buffer = xp.zeros(span // data.itemsize + 1, dtype=data.dtype)
    return xp.lib.stride_tricks.as_strided(buffer, data.shape, data.strides)


def _region(base_tangent: Tensor, view: Tensor, base: Tensor) -> Tensor:
    """The part of ``base_tangent`` (laid out like ``base``) that ``view`` covers of
    ``base``'s memory: a view of it, at the same byte offset, with the same strides."""
    data = view._data
    xp = array_module(data)
    start = (address(data) - address(base._data)) // data.itemsize
    flat = xp.lib.stride_tricks.as_strided(base_tangent._data, (start + 1,), (data.itemsize,))
    region = xp.lib.stride_tricks.as_strided(flat[start:], data.shape, data.strides)
    return Tensor._make(region, base_tangent._counter, base_tangent)


def _is_float(t) -> bool:
    return isinstance(t, Tensor) and t._data.dtype.kind == "f"


def _checked_tangent(cls, k, out, t, input_tangents) -> Tensor:
    """The tangent ``jvp`` gave for output ``k``, in the output's shape, owned by it."""
    if not isinstance(t, Tensor):
        raise TypeError(
            f"function {cls.__name__}.jvp returned a {type(t).__name__} as the tangent of output "
            f"{k}; tangents must be Tensors (or None)"
        )
    if t.shape != out.shape:
        try:
            return t.expand(out.shape).contiguous()  # e.g. a tangent of a broadcast operand
        except RuntimeError:
            raise RuntimeError(
                f"function {cls.__name__}.jvp returned a tangent of shape {list(t.shape)} for "
                f"output {k} of shape {list(out.shape)}\n  A tangent has its output's shape."
            ) from None
    if out._base is None and any(t is it for it in input_tangents):
        return t.clone()  # an input's tangent passed through: copy, so in-place changes stay apart
    return t


def tangent_sum(*terms):
    """The sum of the terms that are not None (an input without a tangent adds nothing)."""
    total = None
    for t in terms:
        if t is not None:
            total = t if total is None else total + t
    return total


def zero_in_graph(primal):
    """For an input without a tangent: the zero term torch's formula adds (a missing
    tangent times ``primal``), which puts the tangent in ``primal``'s graph when
    ``primal`` requires grad (grad mode on), as torch's; else None (nothing to add).
    Exactly zero, even where ``primal`` is inf (torch multiplies by a zero tensor that
    stays zero).

    >>> import teachgrad as tg
    >>> zero_in_graph(tg.tensor([1.0, float("inf")], requires_grad=True))
    tensor([0., 0.], grad_fn=<MaskedFillBackward0>)
    >>> zero_in_graph(tg.tensor([1.0])) is None
    True
    """
    if not (isinstance(primal, Tensor) and primal.requires_grad and _grad_state.enabled):
        return None
    data = primal._data
    return primal.masked_fill(wrap_array(array_module(data).ones(data.shape, dtype=bool)), 0.0)


def zero_if_none(tangent, primal):
    """``tangent``, or zeros like ``primal`` for an input without one (where torch's formula
    reads a missing tangent as zeros, so that ``inf · 0`` gives NaN as in torch, and a
    float64 input without a tangent makes a float32 one float64), or 0 for a number.

    >>> import teachgrad as tg
    >>> zero_if_none(None, tg.tensor([1.0, 2.0], dtype=tg.float64))
    tensor([0., 0.], dtype=teachgrad.float64)
    """
    if tangent is not None:
        return tangent
    if not isinstance(primal, Tensor):
        return 0.0
    return wrap_array(array_module(primal._data).zeros_like(primal._data))


def zero_tangent(ctx, *tangents):
    """The tangent rule of piecewise-constant ops (sign, floor, argmax-like): zero, even where
    the result is inf or NaN (``result * 0`` would be NaN there; torch's tangent is 0)."""
    y = ctx.result._data
    return wrap_array(array_module(y).zeros_like(y)) if y.dtype.kind == "f" else None


def linear_jvp(ctx, *tangents):
    """The tangent rule of an op that is linear in its Tensor inputs: the op itself,
    applied to the tangents (zeros for inputs without one, 0 for number operands).

    Used by views, sums, cat, indexing ... (``jvp = linear_jvp`` in their Function).
    """
    cls = type(ctx)._forward_cls
    args = []
    for i, (a, t) in enumerate(zip(ctx.inputs, tangents)):
        operand = cls._builtin and i in cls.number_inputs  # (a number or a tensor: a value)
        if t is not None:
            args.append(t)
        elif isinstance(a, Tensor) and (a._data.dtype.kind == "f" or operand):
            # (an integer operand too: ``x + int_tensor``'s constant has no tangent)
            args.append(Tensor._make(array_module(a._data).zeros_like(a._data)))
        elif operand:
            args.append(0)  # ``x + 3`` is affine: the constant has no tangent
        else:
            args.append(a)  # indices, masks, dims and flags are kept
    return cls.apply(*args, **ctx.kwargs)


__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "linear_jvp",
    "tangent_sum",
    "zero_tangent",
    "zero_if_none",
]


_seam.provide(tangent_of=tangent_of)  # a dual tensor's repr shows it (teachgrad/_seam.py)

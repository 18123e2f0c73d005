"""``Function``: how every op, built-in or yours, joins the graph.

A Function has a ``forward`` that computes outputs and a ``backward`` that turns
the gradients of the outputs into gradients of the inputs. ``Function.apply``
runs forward and, when some input requires grad and grad mode is on, creates
the node (``grad_fn``) that the engine calls later. The node is also the ``ctx``
object forward and backward share, exactly as in torch.

Built-in ops (``teachgrad/ops``) are written the same way as yours; their forward
may return backend arrays, which ``apply`` wraps into Tensors.

What lives here: ``FunctionCtx``, ``Function``, ``BackwardFunction`` (the node
class made for each Function), ``once_differentiable``, and ``validate_grad``,
the checks every gradient passes before it flows on (shape, dtype, device).

    >>> import teachgrad as tg
    >>> class Square(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors
    ...         return 2 * x * grad
    >>> x = tg.tensor(3.0, requires_grad=True)
    >>> Square.apply(x).backward(); x.grad
    tensor(6.)
"""

from __future__ import annotations

import functools
import inspect
import itertools
import warnings

from .. import _events, _seam
from .._backend import (
    array_module,
    as_array,
    device_type_of,
    from_numpy_dtype,
    numpy_module,
    quiet,
)
from .._events import OpRecorded, SavedTensorPacked
from .._layout import row_major
from .._profiling import state as _profiling
from .._tensor import EMPTY_EDGE, Tensor, _new, wrap_array
from .forward_ad import push_tangents
from .forward_ad import state as _fw_state
from .grad_mode import no_grad
from .grad_mode import state as _grad_state
from .tape import (
    Node,
    RawSavedTensor,
    SavedTensor,
    _saved_property,
    freed_value_error,
    spec_of,
    stamp,
)

_ndarray = numpy_module().ndarray
_NO_GRADS = [(False,) * n for n in range(256)]  # needs_input_grad when nothing is recorded
# the needs_input_grad of ops of up to 4 inputs, one tuple each for all the nodes that share it
_NEEDS = {t: t for n in range(1, 5) for t in itertools.product((False, True), repeat=n)}

_NOTHING_SAVED_YET = (
    "saved_tensors is only available after forward has run and, for Functions, when the result "
    "requires grad"
)


class FunctionCtx:
    """What ``forward`` uses to leave information for ``backward``.

    >>> import teachgrad as tg
    >>> class Scale(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x, k):
    ...         ctx.k = k              # any Python value can be kept as an attribute
    ...         return x * k
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * ctx.k, None   # one gradient per forward argument
    >>> x = tg.ones(2, requires_grad=True); Scale.apply(x, 3.0).sum().backward(); x.grad
    tensor([3., 3.])
    """

    to_save = ()
    dirty_tensors = ()
    non_differentiable = ()
    materialize_grads = True
    _pure_view = False  # (set through _is_pure_view)
    _materialize_non_diff_grads = True  # (torch's private flag; False: see _materialize)
    _outputs_left_none = ()  # the non-differentiable outputs' positions, when that flag is False
    needs_input_grad = ()
    saved_for_forward = ()

    def save_for_backward(self, *tensors) -> None:
        """Keep tensors (inputs, outputs or None) for backward; read them with ``saved_tensors``.

        Each is checked against its version when unpacked, so an in-place change
        between forward and backward is caught instead of giving a wrong gradient.
        """
        self.to_save = tensors  # (checked after forward, if a node is recorded: as torch)

    def save_for_forward(self, *tensors) -> None:
        """Keep tensors for a ``jvp`` staticmethod (forward-mode AD)."""
        if not all(t is None or isinstance(t, Tensor) for t in tensors):
            raise AssertionError(  # torch asserts this, in every mode
                "save_for_forward expects all arguments to be tensors; you should save "
                "non-tensors as attributes on ctx."
            )
        self.saved_for_forward = tensors

    def mark_dirty(self, *tensors) -> None:
        """Declare inputs that forward modified in place (and returns as outputs)."""
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors) -> None:
        """Declare outputs that have no gradient (e.g. indices); they won't require grad."""
        self.non_differentiable = tensors

    def set_materialize_grads(self, value: bool) -> None:
        """With False, backward receives None (not zeros) for outputs that got no gradient."""
        self.materialize_grads = bool(value)

    @property
    def _is_pure_view(self):
        """Write-only, as torch's: see the setter."""
        raise AttributeError(
            "attribute '_is_pure_view' of 'torch._C._FunctionBase' objects is not readable\n"
            "  It can only be set (ctx._is_pure_view = True), in forward or setup_context."
        )

    @_is_pure_view.setter
    def _is_pure_view(self, value: bool) -> None:
        """``ctx._is_pure_view = True``: forward returns a plain view of its one input (or
        of a temporary), whose backward the built-in view rules may replace. Its output is
        then an ordinary view: changing it in place rewrites the graph as for ``narrow``
        (the custom backward is bypassed), instead of being refused as custom Functions'
        views are. Only for one input tensor and one output tensor (torch's private flag).

        >>> import teachgrad as tg
        >>> class Head(tg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         ctx._is_pure_view = True
        ...         return x[:1]
        ...     @staticmethod
        ...     def backward(ctx, grad):
        ...         return tg.cat([grad, tg.zeros(1)])
        >>> y = Head.apply(tg.ones(2, requires_grad=True) * 2); y += 1; y.grad_fn.name()
        'AsStridedBackward0'
        """
        if not isinstance(value, bool):
            raise TypeError(
                "set_pure_view received an invalid combination of arguments - got (), but "
                f"expected (bool)\n  It was given {type(value).__name__}: write True or False."
            )
        self._pure_view = value

    @property
    def saved_tensors(self) -> tuple:
        """The tensors given to ``save_for_backward``, checked against in-place changes."""
        # (inside jvp: _saved is what save_for_forward kept, see forward_ad._run_jvp)
        if self._saved is None or self._values_freed:
            raise _unreadable(self)
        unpack = SavedTensor.unpack_array if self._arrays else SavedTensor.unpack
        values = []
        for s in self._saved:
            values.append(unpack(s, self) if type(s) is SavedTensor else s)
        return tuple(values)

    @property
    def saved_variables(self) -> tuple:
        """The old name of ``saved_tensors``: it warns, as torch's does (in ``backward``,
        ``a, b = ctx.saved_variables`` gives what ``ctx.saved_tensors`` gives)."""
        warnings.warn(
            "'saved_variables' is deprecated; use 'saved_tensors'", DeprecationWarning, stacklevel=2
        )
        return self.saved_tensors


def _unreadable(ctx) -> RuntimeError:
    """Why ``saved_tensors`` cannot be read: nothing recorded yet, or backward freed it."""
    return freed_value_error(ctx) if ctx._values_freed else RuntimeError(_NOTHING_SAVED_YET)


def _raw_saved_tensors(node) -> tuple:
    """``grad_fn._raw_saved_tensors`` of a custom Function: each value given to
    ``save_for_backward`` as an object (torch's SavedTensor), e.g. to ``register_hooks`` on it.

    >>> import teachgrad as tg
    >>> class Exp(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)  # (the input: backward computes exp(x) again)
    ...         return x.exp()
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * ctx.saved_tensors[0].exp()
    >>> y = Exp.apply(tg.tensor([3.0], requires_grad=True))
    >>> (raw,) = y.grad_fn._raw_saved_tensors
    >>> raw.register_hooks(lambda t: t * 10, lambda packed: packed / 10)
    >>> raw.data, y.grad_fn.saved_tensors
    (tensor([30.]), (tensor([3.], requires_grad=True),))
    """
    saved = node._saved
    if saved is None:
        raise RuntimeError(_NOTHING_SAVED_YET)
    if node._values_freed or any(type(s) is SavedTensor and s.released for s in saved):
        raise freed_value_error(node)  # (backward freed them)
    return tuple(RawSavedTensor._of(s if type(s) is SavedTensor else None, node) for s in saved)


# (only custom Functions' nodes have it, as in torch: built-ins name each saved value)
_RAW_SAVED_TENSORS = property(_raw_saved_tensors)


def _saved_tensors_once(node) -> tuple:
    """``ctx.saved_tensors`` of a Function with ``clear_saved_tensors_on_access = True``
    (torch's): the saved tensors once, freed as they are handed out, so backward holds the
    only reference and their memory goes as soon as it drops them. A second read is an error.

    >>> import teachgrad as tg
    >>> class Square(tg.autograd.Function):
    ...     clear_saved_tensors_on_access = True
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x)
    ...         return x * x
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (x,) = ctx.saved_tensors  # (a second ctx.saved_tensors would raise)
    ...         return 2 * x * grad
    >>> x = tg.tensor([3.0], requires_grad=True); Square.apply(x).backward(); x.grad
    tensor([6.])
    """
    if node._read_saved_once:
        raise RuntimeError(
            "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is "
            "set on the autograd.Function. Either access saved_tensors only once, or set "
            f"clear_saved_tensors_on_access=False.\n  {node._forward_cls.__name__} "
            "freed its saved tensors when they were first read."
        )
    values = FunctionCtx.saved_tensors.fget(node)
    node._read_saved_once = True
    node._release_saved()
    return values


_SAVED_ONCE = property(_saved_tensors_once)


class BackwardFunction(FunctionCtx, Node):
    """The node (and ctx) class ``Function.apply`` creates; one subclass per Function.

    Its ``name()`` is ``<Function name>Backward`` for your Functions and torch's
    name (``MulBackward0`` ...) for the built-in ones.
    """

    _forward_cls = None
    _saved = None
    _read_saved_once = False  # (clear_saved_tensors_on_access: saved_tensors was read)
    _arrays = False  # True while the formula runs on arrays (see _formula_on_arrays)
    # (argument position, (shape, numpy dtype, array type)) of each Tensor argument; for a
    # number operand torch wraps (``number_inputs``), (position, None)
    _input_meta = ()

    def apply(self, *grad_outputs):
        """Run the Function's backward (or vjp) on ``grad_outputs`` as the engine would, and
        return what it returns, unchecked (torch's ``grad_fn.apply``).

        >>> import teachgrad as tg
        >>> class Twice(tg.autograd.Function):
        ...     @staticmethod
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     def backward(ctx, g):
        ...         return g * 2
        >>> Twice.apply(tg.ones(1, requires_grad=True)).grad_fn.apply(tg.ones(1))
        tensor([2.])
        """
        return self._backward(self, *grad_outputs)

    def __call__(self, *grad_outputs):
        """A built-in op's node runs its formula when called (``Node.__call__``); torch's node
        of a custom Function is not callable: call ``grad_fn.apply(...)`` instead."""
        if not self._forward_cls._builtin:
            raise TypeError(
                f"'{type(self).__name__}' object is not callable\n  A custom Function's node runs "
                "its backward through grad_fn.apply(*grad_outputs)."
            )
        return Node.__call__(self, *grad_outputs)

    @property
    def batchable(self) -> bool:
        """Whether backward works on gradients with an extra leading (batch) dim."""
        return self._forward_cls._builtin and self._forward_cls.batchable

    def _apply(self, grad_outputs: list, batch=None) -> tuple:
        """The backward formula, on the arrays when it may (``_formula_on_arrays``), else on
        Tensors; then torch's checks on what it returned: one gradient per input, each of the
        input's shape, dtype and device (summed back or cast if need be)."""
        some_none = len(grad_outputs) > 1 or grad_outputs[0] is None
        if self.materialize_grads and some_none and not _materialize(self, grad_outputs, batch):
            return (None,) * len(self._input_meta)  # a built-in that got no gradient
        if self._on_arrays and batch is None and no_graph_wanted():
            return _formula_on_arrays(self, grad_outputs)  # (checked there, as it wraps them)
        return _checked(self, self._backward(self, *grad_outputs), batch)


def _checked(node, result, batch) -> tuple:
    """torch's checks on what ``node``'s backward formula returned, run on Tensors (a
    formula on arrays has its results checked as they are wrapped: ``_formula_on_arrays``)."""
    result = result if type(result) is tuple else (result,)
    meta, n_args = node._input_meta, len(node.needs_input_grad)
    if len(result) != n_args or len(meta) != n_args and not node._forward_cls._builtin:
        result = _one_per_input(node, result)  # (built-ins are tested: no non-Tensor check)
    grads = []
    for edge, (pos, spec) in enumerate(meta):
        g = None if spec is None else result[pos]  # (a number operand has no gradient)
        # the usual case needs no work: a Tensor of the input's exact shape, dtype and device
        data = g._data if isinstance(g, Tensor) else None
        usual = data is not None and (data.shape, data.dtype, type(data)) == spec
        ok = g is None or usual and batch is None
        grads.append(g if ok else validate_grad(g, pos, spec, node, edge, batch))
    return tuple(grads)


def no_graph_wanted() -> bool:
    """Whether backward's arithmetic may run on arrays, not on Tensors: no graph of the
    gradient is wanted (grad mode is off, no forward-mode level is open, the profiler is
    not timing the ops inside backward)."""
    return not (_grad_state.enabled or _fw_state.level is not None or _profiling.active)


def _formula_on_arrays(node, grad_outputs) -> tuple:
    """Run a built-in's backward formula on the arrays of ``grad_outputs``, not on Tensors;
    wrap its results (``arrays_formula``).

    Speed trick. A formula written with what arrays and Tensors both have (arithmetic,
    ``@``, ``.mT``, ``.reshape`` ...; the op says so with ``on_arrays = True``) computes the
    same numbers either way, but on Tensors each operation is a whole ``Function.apply``.
    When no graph of the gradient is wanted, the arrays skip that. Measured against the
    same tree with this path turned off (callgrind instructions, 2026-11-27): the small
    MLP step of ``benchmarks/bench.py`` (64-64-10, batch 32) -18.6%; its 1,000-op chain
    of ``*``, ``+``, ``tanh`` and ``exp`` on 4 floats -2.0% (a Tensor formula of one op with
    grad mode off records nothing, so it costs little more there). ``linear``'s backward
    (``Addmm``) on arrays, 2026-11-28: ``benchmarks/bench_nn.py``'s small MLP step -13.4%;
    on an H200, the CPU time of ``bench_gpu.py``'s MLP step 2.5-2.9 ms -> 1.4 ms. With
    ``create_graph=True`` the same formula runs on Tensors.
    """
    arrays = []  # (plain loops: a comprehension is a function call on Python 3.11)
    for g in grad_outputs:
        arrays.append(None if g is None else g._data)
    grads = []
    for g in arrays_formula(node, arrays):
        grads.append(None if g is None else wrap_array(g))
    return tuple(grads)


def arrays_formula(node, arrays) -> list:
    """A built-in's backward formula (``on_arrays``) run on gradient arrays: one array (or
    None) per input, each checked as ``_checked`` checks a Tensor formula's gradients: of the
    input's shape, dtype and array type (one of a broadcast shape summed back).

    >>> import numpy as np, teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> arrays_formula((x * 3).grad_fn, [np.ones(2, np.float32)])
    [array([3., 3.], dtype=float32), None]
    """
    node._arrays = True
    try:
        result = node._backward(node, *arrays)
    finally:
        node._arrays = False
    result = result if type(result) is tuple else (result,)
    if len(result) != len(node.needs_input_grad):
        result = _one_per_input(node, result)
    grads = []
    for edge, (pos, spec) in enumerate(node._input_meta):
        g = None if spec is None else result[pos]  # (a number operand has no gradient)
        if g is not None:  # (NumPy may give a scalar: made a 0-d array)
            g = g if type(g) is _ndarray else as_array(g)
            usual = (g.shape, g.dtype, type(g)) == spec  # (spec_of inline: a call costs 0.5%)
            g = g if usual else _validate_array(g, pos, spec, node, edge)._data
        grads.append(g)
    return grads


def _materialize(node, grad_outputs, batch) -> bool:
    """Zeros for the outputs that got no gradient (``ctx.set_materialize_grads``). False,
    and no zeros, for a built-in that got none at all: torch's built-in formulas run only if
    some gradient is defined, so "no gradient" flows on (a custom Function gets zeros)."""
    if node._forward_cls._builtin and _all_none(grad_outputs):
        return False
    for i, g in enumerate(grad_outputs):
        # (non-tensor outputs stay None, and so may non-differentiable ones)
        if g is None and node._output_meta[i] is not None and i not in node._outputs_left_none:
            grad_outputs[i] = zeros_for(node._output_meta[i], batch)
    return True


def _non_differentiable_outputs(node, outputs) -> tuple:
    """The positions of the tensor outputs that are not differentiable, as torch counts
    them: marked so (``mark_non_differentiable``), or of a dtype without gradients. With
    torch's private flag ``ctx._materialize_non_diff_grads = False``, backward gets None for
    these, not zeros."""
    marked = node.non_differentiable
    return tuple(
        i
        for i, t in enumerate(outputs)
        if isinstance(t, Tensor) and (t._data.dtype.kind not in "fc" or _contains(marked, t))
    )


def _one_per_input(node, result) -> tuple:
    """backward must return one gradient per forward argument (extra Nones are dropped),
    and a custom Function's None for each argument that was not a Tensor."""
    n_args = len(node.needs_input_grad)
    if len(result) > n_args and _all_none(result[n_args:]):
        result = result[:n_args]
    elif len(result) != n_args:
        raise RuntimeError(
            f"function {node.name()} returned an incorrect number of gradients (expected "
            f"{n_args}, got {len(result)})\n  backward must return one gradient per "
            f"argument of forward ({node._forward_cls.__name__}.forward takes {n_args} besides "
            "ctx), using None for arguments that are not Tensors or need no gradient."
        )
    if not node._forward_cls._builtin:
        _check_non_tensor_grads(result, node._input_meta, node)
    return result


def _batched_grad(g, spec, batch) -> tuple:
    """``is_grads_batched``: each gradient is a stack of ``batch`` of them; a gradient with
    broadcast dims is summed over them (dim 0 kept). Returns it with the input's ``spec``
    (shape, dtype, array type) with the batch dim added."""
    shape = (batch, *spec[0])
    if isinstance(g, Tensor) and g.ndim > len(shape):
        g = g.sum(tuple(range(1, g.ndim - len(shape) + 1)))
    return g, (shape, *spec[1:])


def _all_none(values) -> bool:
    for v in values:  # noqa: SIM110 - a plain loop: no generator object on the hot path
        if v is not None:
            return False
    return True


def _check_non_tensor_grads(result, meta, node) -> None:
    """A gradient for a forward argument that was not a Tensor is a mistake (often swapped returns)."""
    tensor_positions = {m[0] for m in meta}
    for pos, g in enumerate(result):
        if g is not None and pos not in tensor_positions:
            raise RuntimeError(
                f"function {node.name()} returned a gradient different than None at position {pos + 1}, but "
                "the corresponding forward input was not a Variable\n  Return None for arguments of forward "
                "that are not Tensors (numbers, flags, shapes); check the order of the gradients returned."
            )


def zeros_for(meta, batch=None):
    """A zero gradient for an output described by ``(shape, numpy dtype, array type)``
    (a stack of ``batch`` of them for ``is_grads_batched``)."""
    shape, np_dtype, array_type = meta
    shape = shape if batch is None else (batch, *shape)
    return wrap_array(array_module(array_type).zeros(shape, np_dtype))


def validate_grad(g, position, spec, node, index, batch=None):
    """torch's checks on a gradient a node returns for its input ``index``.

    A gradient with the input's broadcast shape is summed back to the input's shape
    (so no op needs its own "un-broadcast"); a different dtype is cast; a wrong
    shape or device is an error naming the node and the input. ``position``: the input's
    place among forward's arguments; ``spec``: its shape, dtype and array type; ``batch``:
    the size of the extra leading dim of ``is_grads_batched``. The gradient of an input
    that needs none is left as it is, as torch leaves it (nothing flows from it).
    """
    if batch is not None:
        g, spec = _batched_grad(g, spec, batch)
    if g is None or not node.needs_input_grad[position]:
        return g
    if not isinstance(g, Tensor):
        raise RuntimeError(
            f"expected Variable or None (got {type(g).__name__})\n  function {node.name()} returned a "
            f"{type(g).__name__} as the gradient of input {index}; gradients must be Tensors (or None)."
        )
    shape, np_dtype, array_type = spec
    if type(g._data) is not array_type:
        raise RuntimeError(
            f"Function {node.name()} returned an invalid gradient at index {index} - expected device "
            f"{device_type_of(array_type)} but got {g.device}"
        )
    if g._data.shape != shape:
        if not _expandable(shape, g._data.shape):
            raise RuntimeError(
                f"Function {node.name()} returned an invalid gradient at index {index} - got "
                f"{list(g._data.shape)} but expected shape compatible with {list(shape)}\n"
                f"  The gradient for input {index} must have that input's shape {tuple(shape)} "
                "(or a shape it broadcasts to, which is then summed back)."
            )
        g = _seam.sum_to(g, shape)
    if g._data.dtype != np_dtype:
        g = g.to(_dtype_of(np_dtype))
    return g


def _validate_array(g, position, spec, node, index):
    """``validate_grad`` for an array a formula on arrays returned, wrapped; one of a
    broadcast shape (the bias of ``x @ w + b``) summed back first, on the array."""
    if g.shape != spec[0] and _expandable(spec[0], g.shape):
        g = _summed_back(g, spec[0])  # (also for an input that needs none: nothing reads it)
    return validate_grad(wrap_array(g), position, spec, node, index)


@quiet  # (a sum may overflow to inf, silently in torch)
def _summed_back(g, shape):
    """The array ``g``, of an input's broadcast shape, summed back to the input's ``shape``.

    Speed trick. ``validate_grad`` sums such a gradient with ``sum_to``: a ``Sum.apply`` on
    a Tensor, with its checks and its node bookkeeping (grad mode is off, so nothing is
    recorded). A formula on arrays (``_formula_on_arrays``) does the same NumPy sum over
    the same dims here, on the array: 5.3 -> 1.6 µs for the bias of ``x @ w + b``, 6.6 ->
    2.7 µs for ``z - z.logsumexp(1, keepdim=True)``'s second operand. The small MLP step of
    ``benchmarks/bench.py``, which has three: 2.36 M -> 2.28 M instructions (-3.4%,
    callgrind), its backward 144 -> 129 µs (2026-11-29).

    >>> import numpy as np
    >>> _summed_back(np.ones((4, 2, 3)), (2, 1))
    array([[12.],
           [12.]])
    """
    lead = g.ndim - len(shape)  # dims broadcasting put in front, then the size-1 dims it grew
    grown = tuple(lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1)
    dims = (*range(lead), *grown) if shape else None  # (to 0-d: a sum of all, as sum() sums)
    # (grown dims are kept, leading ones dropped, as sum_to does: a leaf may then keep the
    # bias's sum as its .grad, where a reshaped one, a view, would be copied)
    summed = as_array(g.sum(axis=dims, keepdims=bool(grown)))
    return row_major(summed.reshape(shape) if grown and lead else summed)


def _expandable(shape, target) -> bool:
    if len(shape) > len(target):
        return False
    return all(s == t or s == 1 for s, t in zip(reversed(shape), reversed(target), strict=False))


def _dtype_of(np_dtype):
    return from_numpy_dtype(np_dtype)


BackwardCFunction = BackwardFunction  # torch's name for the class of a custom Function's node


class Function:
    """Base class for differentiable operations: subclass it, write two staticmethods.

    ``forward(ctx, *args)`` computes the result (grad mode is off inside it);
    ``backward(ctx, *grad_outputs)`` returns one gradient per forward argument.
    The newer style is supported too: ``forward(*args)`` without ctx plus
    ``setup_context(ctx, inputs, output)``. Call ``MyFunction.apply(...)``, never
    ``forward`` directly.

    >>> import teachgrad as tg
    >>> class Exp(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(x):
    ...         return x.exp()
    ...     @staticmethod
    ...     def setup_context(ctx, inputs, output):
    ...         ctx.save_for_backward(output)
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         (y,) = ctx.saved_tensors
    ...         return grad * y
    >>> x = tg.zeros(2, requires_grad=True); Exp.apply(x).sum().backward(); x.grad
    tensor([1., 1.])
    """

    _builtin = False  # teachgrad's own ops set it (autograd/builtin.py)
    # True: backward may read saved_tensors once, and reading them frees them
    clear_saved_tensors_on_access = False
    # True: backward takes the gradients as one list, which it may empty as it goes (so a
    # gradient it is done with can be freed before it returns): backward(ctx, grads)
    boxed_grads_call = False
    # torch's vmap support (teachgrad has no vmap): the flag and the hook, with torch's defaults
    generate_vmap_rule = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        name = cls.__dict__.get("node_name") or f"{cls.__name__}Backward"
        names = getattr(cls, "saved_names", ())  # built-ins name what they save
        numbers = getattr(cls, "number_inputs", ())  # (a built-in's saved operands: by place)
        saved = {f"_saved_{n}": _saved_property(i, n, i in numbers) for i, n in enumerate(names)}
        overrides = _overrides(cls)
        cls._backward_cls = type(
            name,
            (BackwardFunction,),
            {
                "_forward_cls": cls,
                "_backward": staticmethod(_user_backward(cls, overrides)),
                "_on_arrays": cls._builtin and cls.on_arrays,
                "_names_of_saved": names,
                "__module__": cls.__module__,
                "__qualname__": name,
                **saved,
                **({} if cls._builtin else {"_raw_saved_tensors": _RAW_SAVED_TENSORS}),
                **({"saved_tensors": _SAVED_ONCE} if cls.clear_saved_tensors_on_access else {}),
            },
        )
        cls._new_style = "setup_context" in overrides
        if cls._new_style and not cls._builtin:  # torch hands setup_context the defaults too
            cls._forward_signature = inspect.signature(cls.forward)

    def __init__(self, *args, **kwargs):
        warnings.warn(
            f"{self.__class__} should not be instantiated. Methods on autograd functions are all "
            "static, so you should invoke them on the class itself. Instantiating an autograd "
            "function will raise an error in a future version of PyTorch.",
            DeprecationWarning,
            stacklevel=2,
        )

    def __call__(self, *args, **kwargs):
        raise RuntimeError(
            "Legacy autograd function with non-static forward method is deprecated. Please use new-style "
            "autograd function with static forward method. (Example: "
            "https://pytorch.org/docs/stable/autograd.html#torch.autograd.Function)\n  Define "
            "forward/backward as @staticmethod and call MyFunction.apply(...), not an instance."
        )

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom autograd.Function "
            "to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function "
            "to use it with forward mode AD."
        )

    @staticmethod
    def vmap(info, in_dims, *args):
        """torch's rule for ``torch.vmap``, which teachgrad does not have (batched gradients
        are ``grad(..., is_grads_batched=True)``): torch's default, an error."""
        raise NotImplementedError(
            "To use autograd.Function with vmap, you must either override the vmap staticmethod "
            "or set generate_vmap_rule=True."
        )

    @classmethod
    def apply(cls, *args, **kwargs):
        """Run forward and, if any input requires grad, record a node for backward.
        (teachgrad's own ops take a faster path: ``Builtin.apply``.)"""
        if _profiling.active and _profiling.takes():  # inside profile(): time this call
            return _profiling.recorder.forward(cls, args, kwargs)
        if cls._new_style:  # setup_context sees every input, forward's defaults included
            args, kwargs = _with_defaults(cls, args, kwargs)
        elif kwargs:  # a tensor given by keyword is an input too
            args, kwargs = _keywords_in_place(cls, args, kwargs), {}
        # 1. decide whether to record: does any input require grad (with grad mode on)?
        ctx = _new(cls._backward_cls)  # the node; made without calling __init__ (it has none)
        needs = needs_grad(args)
        ctx.needs_input_grad = needs or _requires_grad(args)  # (torch's, in any grad mode)
        views = _view_edges(args) if needs else None  # (before forward, which may change them)
        # 2. run forward; its own ops are not recorded (nor given tangents: jvp does that)
        level, _fw_state.level = _fw_state.level, None
        try:
            with no_grad():
                if cls._new_style:
                    out = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, out)
                else:
                    out = cls.forward(ctx, *args, **kwargs)
        finally:
            _fw_state.level = level
        _check_declared(ctx, needs)
        if cls._new_style:
            _refuse_saving_inputs_returned(ctx, args, out)
        single = type(out) is not tuple
        outputs = wrap_outputs((out,) if single else out, args, ctx, cls, needs)
        # 3. connect the node to the graph: the outputs' grad_fn, edges to the inputs
        record(cls, ctx, args, kwargs, outputs, needs)
        if views:
            ctx.next_functions = _with_edges(ctx.next_functions, views)
        if needs and not ctx._materialize_non_diff_grads:
            ctx._outputs_left_none = _non_differentiable_outputs(ctx, outputs)
        ctx.dirty_tensors = ctx.non_differentiable = ()  # (outputs hold the node: no cycle back)
        # 4. return the outputs as forward did (one value, or a tuple)
        return outputs[0] if single else outputs


def _view_edges(args) -> dict:
    """{edge number: edge} of the inputs that are views, taken before a custom forward runs,
    as torch takes every input's edge: a forward that changes a view input in place without
    ``mark_dirty`` leaves its base a new history, which the node's edge must not follow."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    return {k: a._edge() for k, a in enumerate(tensors) if a._base is not None}


def _with_edges(edges: tuple, replaced: dict) -> tuple:
    return tuple(replaced.get(k, edge) for k, edge in enumerate(edges))


def needs_grad(args, builtin=None, kwargs=None) -> tuple | None:
    """Which arguments need a gradient (a tuple of bools), or None: record nothing.

    A built-in op (``builtin``, its class) whose tensor inputs are all inference tensors
    records nothing, even if one requires grad: torch's inference tensors skip autograd's
    part of its ops (but see ``_torch_records_anyway``). A custom Function records.
    """
    # (Plain loops: on Python 3.11 a comprehension is a function call, and this runs per op.)
    if not _grad_state.enabled:
        return None
    needs, plain = [], builtin is None  # plain: a tensor input that is no inference tensor
    for a in args:
        if isinstance(a, Tensor):
            needs.append(a._requires_grad if a._base is None else a._view_requires_grad(builtin))
            plain = plain or not a._inference
        else:
            needs.append(False)
    records = True in needs or EMPTY_EDGE in needs  # (an empty edge records too)
    wanted = records and (plain or _torch_records_anyway(builtin, args, kwargs))
    return _NEEDS.get(needs := tuple(needs), needs) if wanted else None  # (52 bytes a node)


def _requires_grad(args) -> tuple:
    """Which arguments require grad, whatever the grad mode: a custom Function's
    ``needs_input_grad`` when nothing is recorded (under ``no_grad``, as in torch)."""
    return tuple(isinstance(a, Tensor) and a.requires_grad for a in args)


def _torch_records_anyway(builtin, args, kwargs) -> bool:
    """Whether torch's op meets a plain tensor although its tensor arguments are inference
    tensors, and so records a node: a keyword argument that is a plain tensor (a mask), a
    number it makes a tensor (``number_inputs``: the 1 of ``c + 1``), or a kernel that works
    on a plain tensor it makes (``records_inference``: a copy, ``c % 2``).

    >>> import teachgrad as tg
    >>> with tg.inference_mode():
    ...     c = tg.ones(2, requires_grad=True)
    >>> (c * c).requires_grad, (c + 1).requires_grad
    (False, True)
    """
    masks = [v for v in kwargs.values() if isinstance(v, Tensor) and not v._inference]
    numbers = [  # (None, an operand left out, is no number: torch makes no tensor of it)
        i
        for i in builtin.number_inputs
        if i < len(args) and not isinstance(args[i], Tensor) and args[i] is not None
    ]
    return builtin.records_inference or bool(masks) or bool(numbers)


def no_grads(n: int) -> tuple:
    """``needs_input_grad`` when nothing is recorded: n times False (made once per n)."""
    return _NO_GRADS[n] if n < 256 else (False,) * n


def record(cls, ctx, args, kwargs, outputs, needs) -> None:
    """After forward: connect the node (``needs``), else mark outputs made in inference
    mode; then push forward-mode tangents through, if a dual level is open."""
    if needs:
        _connect(ctx, cls, args, outputs)
        if OpRecorded.on or SavedTensorPacked.on:
            _announce(ctx, outputs)
    elif _grad_state.inference:
        _mark_inference(outputs)
    if _fw_state.level is not None:  # forward-mode AD: push the inputs' tangents through
        push_tangents(cls, ctx, args, kwargs, outputs)


def _mark_inference(outputs) -> None:
    """Outputs made in inference mode are inference tensors; but a view of a normal tensor
    stays normal (it is not new memory)."""
    for t in outputs:
        if isinstance(t, Tensor) and (t._base is None or t._base._inference):
            t._inference = True


def _user_backward(cls, overrides):
    """The backward formula a node runs: ``backward``, or ``vjp``, its other name in torch
    (defining both is refused when backward runs, as torch does)."""
    if "vjp" in overrides and "backward" in overrides:

        def both(ctx, *grads):
            raise RuntimeError(
                "Implementing both 'backward' and 'vjp' for a custom Function is not allowed. You "
                f"should only implement one of them.\n  {cls.__name__} defines both: keep one."
            )

        return both
    formula = cls.vjp if "vjp" in overrides else cls.backward
    if cls.boxed_grads_call:  # the gradients as one list, the formula's to empty
        return lambda ctx, *grads: formula(ctx, list(grads))
    return formula


def _with_defaults(cls, args, kwargs) -> tuple:
    """``(args, kwargs)`` with forward's default values filled in for those left out."""
    bound = cls._forward_signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args, bound.kwargs


def _keywords_in_place(cls, args, kwargs) -> tuple:
    """``args`` with each keyword argument put at its parameter's place in ``forward(ctx,
    ...)``, as torch's apply does: so a tensor given by keyword gets an edge and a gradient.
    Defaults are not filled in; a place left empty before a keyword's is an error.

    >>> import teachgrad as tg
    >>> class Add(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x, y):
    ...         return x + y
    >>> _keywords_in_place(Add, (1,), {"y": 2})
    (1, 2)
    """
    parameters = list(inspect.signature(cls.forward).parameters.values())[1:]  # (after ctx)
    names = [p.name for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    placed = list(args)
    for name, value in kwargs.items():
        if name not in names:
            raise TypeError(f"forward() got an unexpected keyword argument '{name}'")
        at = names.index(name)
        if at < len(args):
            raise TypeError(f"forward() got multiple values for argument '{name}'")
        placed.extend([_MISSING] * (at + 1 - len(placed)))
        placed[at] = value
    gap = next((at for at, value in enumerate(placed) if value is _MISSING), None)  # (not ==)
    if gap is not None:
        raise TypeError(f"forward() missing required argument: '{names[gap]}' (position {gap})")
    return tuple(placed)


_MISSING = object()  # (a place no argument filled)


def _overrides(cls) -> set:
    names = set()
    for klass in cls.__mro__:
        if klass is Function:
            break
        names.update(klass.__dict__)
    return names


def wrap_outputs(outs, args, ctx, cls, record=False) -> tuple:
    """Turn forward's results into Tensors: arrays are wrapped, views share storage."""
    for t in ctx.dirty_tensors:  # torch counts marking a tensor dirty as one more change
        _check_dirty(t, cls, record, outs, args)
        t._counter.bump(f"{cls.__name__} (mark_dirty)")
    result = []
    for o in outs:
        if isinstance(o, Tensor):
            returned = _contains(args, o)
            if returned and not (_grad_state.enabled or cls._builtin):
                o = o.detach()  # an input returned with grad mode off: a plain alias (torch's)
            elif returned and not _contains(ctx.dirty_tensors, o):
                o = o._alias()  # an input returned unchanged: the output is a new alias of it
        elif hasattr(o, "dtype"):
            o = as_array(o)  # a full reduction in NumPy returns a scalar, not a 0-d array
            if cls._builtin and cls.view_of_input:
                o = make_view(o, args[0], ctx)
                if (
                    cls.returns_many_views
                    and _grad_state.enabled
                    and o._creation_meta != "inference"
                ):
                    o._creation_meta = "multi_output"  # torch forbids in-place on these
            else:
                o = wrap_array(o)
        result.append(o)
    if not cls._builtin:  # (recorded or not, in any grad mode, as torch)
        if ctx._pure_view:
            _check_pure_view(args, result)
        _restrict_views(result, ctx.dirty_tensors, ctx._pure_view)
    return tuple(result)


def _check_pure_view(args, outputs) -> None:
    """torch's limit on a Function that set ``ctx._is_pure_view``: one tensor in, one out."""
    inputs = [a for a in args if isinstance(a, Tensor)]
    if len(inputs) != 1 or len([o for o in outputs if isinstance(o, Tensor)]) != 1:
        raise RuntimeError(
            "Pure view custom Function can only have one input Tensor and one output Tensor. "
            f"Open an issue if you need to support more.\n  It got {len(inputs)} input tensors "
            f"and returned {len(outputs)} values."
        )


def _restrict_views(outputs, dirty, pure_view=False) -> None:
    """The views a custom Function returns (an input returned as-is is one too) may not be
    changed in place later, as in torch: autograd's view+in-place rewrite would bypass the
    custom backward ("custom_function"; "multi_output" when it returns several values with
    grad mode on). An input marked dirty is not restricted: its history is rewritten as any
    in-place op's; nor is the output of a ``pure_view`` Function (``ctx._is_pure_view``)."""
    meta = "multi_output" if len(outputs) > 1 and _grad_state.enabled else "custom_function"
    meta = None if pure_view else meta
    for o in outputs:
        if isinstance(o, Tensor) and o._base is not None and not _contains(dirty, o):
            o._creation_meta = meta
            # (its history starts now: what forward changed in place is part of it)
            o._view_version = o._counter.version


def _check_declared(ctx, recording) -> None:
    """torch's checks of what a custom forward declared on ``ctx``: tuples (which
    ``mark_dirty``, ``mark_non_differentiable`` and ``save_for_backward`` make, but assigning
    the attributes may not) of tensors; what it saved only if a node is ``recording``."""
    for name in ("dirty_tensors", "non_differentiable", "to_save"):
        value = getattr(ctx, name)
        if type(value) is not tuple:
            raise RuntimeError(
                f"autograd internal error: {name} attribute is expected to be a tuple but is \n  "
                f"It is {type(value).__name__}: declare it with the ctx method instead "
                "(mark_dirty, mark_non_differentiable, save_for_backward)."
            )
    for name, start in (
        ("dirty_tensors", "mark_dirty can only accept variables, but argument "),
        ("non_differentiable", "mark_non_differentiable only accepts variable arguments, but got "),
    ):
        for t in getattr(ctx, name):
            if not isinstance(t, Tensor):
                raise RuntimeError(
                    f"{start}\n  It was given {type(t).__name__} {t!r}; only the tensors forward "
                    "changed in place or returns can be marked."
                )
    for i, t in enumerate(ctx.to_save if recording else ()):
        if t is not None and not isinstance(t, Tensor):
            raise TypeError(
                f"save_for_backward can only save variables, but argument {i} is of type "
                f"{type(t).__name__}\n  Keep other values as attributes: ctx.my_value = value"
            )


def _refuse_saving_inputs_returned(ctx, args, out) -> None:
    """torch's refusal, for a Function with ``setup_context``, to save an input that forward
    returned as it is, unchanged (its output is then that very tensor, which torch can't
    tell apart; one changed in place and marked dirty is the output, and may be saved)."""
    outs = out if type(out) is tuple else (out,)
    returned = [o for o in outs if _contains(args, o) and not _contains(ctx.dirty_tensors, o)]
    if any(_contains(returned, t) for t in ctx.to_save if t is not None):
        raise RuntimeError(
            "An input that has been returned as-is as output is being saved for backward. This "
            "is not supported if you override setup_context. You should return and save a view "
            "of the input instead, e.g. with x.view_as(x) or setup ctx inside the forward "
            "function itself.\n  Return x.view_as(x) from forward, and save that."
        )


def _check_dirty(t, cls, record, outs, args) -> None:
    """An input a custom Function marked dirty gets the checks of any in-place op, and must be
    returned: its new history is the Function's, which only an output can carry."""
    if not _contains(args, t) and record:  # (unrecorded, torch says nothing)
        message = (
            "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that "
            "have been mutated should be passed to ctx.mark_dirty()."
        )
        if t._base is not None:  # a view's history would be rewritten: torch refuses
            raise RuntimeError(
                f"{message}\n  {cls.__name__}.forward marked a view it made itself; a tensor made "
                "inside forward is new, there is nothing to mark."
            )
        warnings.warn(message, UserWarning, stacklevel=4)
    if not _contains(outs, t):
        raise RuntimeError(
            "Some elements marked as dirty during the forward method were not returned as output. "
            "The inputs that are modified inplace must all be outputs of the Function.\n"
            f"  {cls.__name__}.forward changed an input in place and returned a new tensor instead."
        )
    if t._base is not None and record and len(outs) > 1:  # (torch checks this first)
        raise RuntimeError(
            "If your Function modifies inplace an input that is a view of another Tensor, your "
            "Function cannot return more than one Tensor. This is not supported by the current "
            "autograd engine. You should either make sure the input is not a view (using .clone() "
            "for example) or make your Function only return one Tensor (potentially splitting it "
            "into two Functions: one doing the inplace that returns a single Tensor and a second one "
            "that does the other operations). You can ask on the forum https://discuss.pytorch.org/ "
            f"if you need help to do this change.\n  {cls.__name__} returns {len(outs)} values."
        )
    _seam.check_inplace(t, f"{cls.__name__} (mark_dirty)", bool(record))


def make_view(array, source, ctx):
    """A Tensor for ``array``, a view of ``source``'s memory: same storage and version counter
    (of an inference tensor, see ``_inference_view``; ``ctx`` is the op's node)."""
    if source._inference:
        return _inference_view(array, ctx)
    base = source._base if source._base is not None else source
    t = Tensor._make(array, source._counter, base)
    # the base's history and version when the view is taken (to tell later if they changed)
    t._view_base_fn, t._view_version = base._grad_fn, source._counter.version
    if not _grad_state.enabled:  # (inference mode too): torch's view still requires grad
        t._creation_meta = _mode_meta(source)
        t._requires_grad = base._requires_grad
    else:
        t._creation_meta = source._creation_meta  # a view of an unbind() output inherits its limits
    return t


def _mode_meta(src) -> str:
    """The limits of a view of ``src`` made with grad mode off: inference mode's (also for a
    view of a view made in inference mode, as torch propagates them), else no_grad's."""
    return "inference" if _grad_state.inference or src._creation_meta == "inference" else "no_grad"


def _inference_view(array, ctx):
    """A view of an inference tensor, as torch makes it: an inference tensor on the same memory
    but no view (with no version counter there is nothing to share with a base), and outside
    any graph even when the op is recorded (``ctx`` marks it non-differentiable)."""
    t = wrap_array(array)
    t._inference = True
    ctx.non_differentiable = (*ctx.non_differentiable, t)
    return t


def _connect(ctx, cls, args, outputs) -> None:
    """Make ``ctx`` the grad_fn of the outputs and give it edges to the inputs. A formula
    that runs on arrays (``Builtin.on_arrays``) does so only for inputs of its output's dtype
    and array type: with others, torch's promotion rules, which arrays don't follow, decide
    the formula's dtype, and it runs on Tensors."""
    edges, meta = [], []
    out = outputs[0]._data if ctx._on_arrays else None
    for i, a in enumerate(args):
        if isinstance(a, Tensor):
            fn = a._grad_fn  # (a._edge() only for a leaf or a view: a call saved per op)
            fn, nr = edge = (fn, a._output_nr) if fn is not None and a._base is None else a._edge()
            edges.append(edge)  # a leaf's AccumulateGrad has its spec, as torch's
            spec = spec_of(a._data) if fn is None else fn._output_meta[nr]
            meta.append((i, spec))
            if out is not None and (spec[1] is not out.dtype or spec[2] is not type(out)):
                ctx._on_arrays = out = None  # (`is`: NumPy has one object per dtype)
        elif cls._builtin and i in cls.number_inputs:  # torch wraps a number operand: an empty edge
            edges.append((None, 0))
            meta.append((i, None))
    # (tuples: the GC stops tracking tuples of plain values)
    ctx.next_functions, ctx._input_meta = tuple(edges), tuple(meta)
    stamp(ctx)

    output_meta, first = [], meta[0][1] if meta else None
    dirty, no_grad_outs = ctx.dirty_tensors, ctx.non_differentiable
    for nr, t in enumerate(outputs):
        if not isinstance(t, Tensor):
            output_meta.append(None)
            continue
        data = t._data
        spec = (data.shape, data.dtype, type(data))  # (shared with the first input's if equal:
        output_meta.append(first if spec == first else spec)  # 60 KiB of bench.py (c))
        if dirty and _contains(dirty, t):
            t._rebase_history(ctx, nr, _position_in(args, t))
        elif data.dtype.kind == "f" and not (no_grad_outs and _contains(no_grad_outs, t)):
            t._grad_fn, t._output_nr, t._requires_grad = ctx, nr, True
    ctx._output_meta = tuple(output_meta)

    names, saved = cls.saved_names if cls._builtin else (), []
    for j, t in enumerate(ctx.to_save):
        if isinstance(t, Tensor):
            t = SavedTensor(t, ctx, names[j] if j < len(names) else f"saved_tensors[{j}]")
        saved.append(t)  # built-ins may keep plain numbers too (the 3 of x * 3), as they are
    ctx._saved = tuple(saved)
    if saved:  # (to_save held the tensors: let them go; an attribute a node lacks stays unset,
        ctx.to_save = ()  # which keeps its __dict__ small: 0.45% of a chain op, callgrind)
    if dirty:
        _save_dirty_views_as_outputs(ctx, outputs)


def _save_dirty_views_as_outputs(ctx, outputs) -> None:
    """A view that forward changed in place (``mark_dirty``) and saved is kept as an output
    of ``ctx``, by its array, as torch keeps it: the Tensor itself, whose new history leads
    back to ``ctx``, would make a reference cycle that only Python's cycle collector frees."""
    for s in ctx._saved:
        t = s.tensor if type(s) is SavedTensor else None
        if t is not None and t._base is not None and _contains(outputs, t):
            s.is_output = True
            s._keep_output(t)
            s.output_nr = next(nr for nr, o in enumerate(outputs) if o is t)


def _announce(node, outputs) -> None:
    """Events of a recorded op: the new node, then each tensor it saved."""
    if OpRecorded.on:
        _events.emit(OpRecorded, node=node, outputs=tuple(outputs))
    for s in node._saved if SavedTensorPacked.on else ():
        if isinstance(s, SavedTensor):
            _events.emit(
                SavedTensorPacked,
                node=node,
                name=s.name,
                version=s.version,
                hooked=s.hooks is not None,
            )


def _position_in(args, t) -> int:
    """Index of ``t`` among the Tensor arguments (its edge in next_functions), by identity
    (``list.index`` would compare tensors with ``==``); 0 if it is none of them."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    return next((i for i, a in enumerate(tensors) if a is t), 0)


def _contains(tensors, t) -> bool:
    """``t in tensors`` by identity (``==`` on tensors compares values)."""
    return any(x is t for x in tensors)


def once_differentiable(backward):
    """Decorate a ``backward`` that is not itself differentiable (e.g. uses raw arrays).

    Inside it grad mode is off; if a double backward is attempted through its
    results, a clear error is raised instead of silently wrong second derivatives.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.function import once_differentiable
    >>> class Cube(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         ctx.save_for_backward(x); return x ** 3
    ...     @staticmethod
    ...     @once_differentiable
    ...     def backward(ctx, g):
    ...         (x,) = ctx.saved_tensors; return 3 * x * x * g
    >>> x = tg.tensor(2.0, requires_grad=True); Cube.apply(x).backward(); x.grad
    tensor(12.)
    """

    @functools.wraps(backward)
    def wrapper(ctx, *grads):
        with no_grad():
            result = backward(ctx, *grads)
        if not _grad_state.enabled:
            return result
        needs = any(isinstance(g, Tensor) and g.requires_grad for g in grads)
        if not needs:
            return result
        single = not isinstance(result, tuple)
        outs = (result,) if single else result
        twice = (
            "trying to differentiate twice a function that was marked with @once_differentiable\n"
            f"  {ctx.name()}'s backward is not itself differentiable, so create_graph=True / "
            "double backward can't go through it."
        )
        guarded = _DelayedError.apply(twice, *(_fake_leaf(o) for o in outs))
        guarded = tuple(g if isinstance(o, Tensor) else o for o, g in zip(outs, guarded))
        return guarded[0] if single else guarded

    return wrapper


def _fake_leaf(value):
    """torch's trick: each result, detached, becomes a leaf that requires grad, so that the
    error node below gets a grad_fn (its edges lead to these leaves, not into the graph)."""
    if not isinstance(value, Tensor):
        return _no_tensor()  # (a stand-in that gives torch's empty edge for a None result)
    return value.detach().requires_grad_(True)


def _no_tensor():
    """A tensor without elements that requires no grad: it only stands for "no value"."""
    return Tensor([])


class _DelayedError(Function):
    """Passes its tensors through, in their own memory; differentiating them raises
    ``message``. One node for all of them, named ``Error`` as torch's is: once_differentiable's
    guard on its results, and torch's ``_C._functions.DelayedError``."""

    node_name = "Error"

    @staticmethod
    def forward(ctx, message, *values):
        ctx.message = message
        return tuple(wrap_array(v._data) if isinstance(v, Tensor) else v for v in values)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError(ctx.message)


class _UndefinedGrad(Function):
    """A copy of its tensors whose backward sends back no gradient (None), as torch's
    ``_C._functions.UndefinedGrad``: what gradcheck's ``check_undefined_grad`` feeds a
    function's backward."""

    node_name = "UndefinedGradBackward"

    @staticmethod
    def forward(ctx, *values):
        return tuple(v.clone() for v in values)

    @staticmethod
    def backward(ctx, *grads):
        return (None,) * len(grads)


class InplaceFunction(Function):
    """Kept for old code: torch's base class for Functions with an ``inplace`` flag."""


class NestedIOFunction(Function):
    """Kept for old code: torch's legacy base class; use ``Function`` instead."""


__all__ = [
    "Function",
    "FunctionCtx",
    "BackwardFunction",
    "once_differentiable",
    "InplaceFunction",
    "NestedIOFunction",
]

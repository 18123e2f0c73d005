"""The dialect of teachgrad's own ops: ``Builtin``, the base class of every op in ``ops/``.

You write a ``Function`` exactly as in PyTorch. teachgrad's built-in ops are Functions
too, with the same ``forward``/``backward`` and the same node in the graph, written in
a dialect that is closer to the arrays, and so faster:

1. ``forward(ctx, *args)`` always gets ``ctx``, reads the arrays inside its Tensor
   arguments (``x._data``) and returns a backend array (or a tuple of them): the
   dialect wraps them as Tensors itself, so no Tensor is made inside an op;
2. it keeps what backward needs with ``ctx.to_save = (...)`` (tensors, or plain numbers
   such as the 3 of ``x * 3``), and ``saved_names`` gives them torch's names
   (``grad_fn._saved_self``); ``saved_args`` names, in torch's words, the other arguments
   torch's node keeps (numbers, dims, sizes: see "Saved arguments" below);
3. ``backward(ctx, grad)`` is written with teachgrad ops, like yours, so that double
   backward works; ``formula`` states the same rule for people (the stepper shows it);
4. a few class flags say what a Function of yours never needs: ``node_name`` (torch's
   name for the node, ``MulBackward0``), ``number_inputs`` (argument positions that get an
   edge even when they are numbers, as torch wraps them), ``view_of_input`` (the
   outputs share the first input's memory) and ``returns_many_views`` (unbind/split:
   torch forbids changing such views in place), ``batchable`` (backward also works on
   gradients with an extra leading batch dim, so ``is_grads_batched`` runs it once),
   ``on_arrays`` (backward uses only what arrays and Tensors both have: arithmetic, ``@``,
   ``.mT``, ``.reshape``, indexing; then, when no graph of the gradient is wanted, the
   engine runs the same formula on the arrays, which is much faster), ``records_inference``
   (torch's kernel hands its work on to an op on a plain tensor it made, a copy or a number
   made a tensor: so it records a node even when its inputs are inference tensors).
   A tensor argument that is not differentiable (an index, a mask, ``where``'s condition)
   comes by keyword: it gets no edge, as in torch; ``keyword_places`` says where it
   stands among torch's inputs, for the profiler's ``record_shapes`` (``torch_inputs``).

Saved arguments. torch's node shows the non-tensor arguments it keeps, too (``_saved_dim``,
``_saved_keepdim``, ``_saved_self_sym_sizes`` ...). An op states them in one line next to
its formula: ``saved_args`` maps torch's name to the attribute of ``ctx`` (the node) that
holds it, or to ``(attribute, convert)`` when torch shows it in another form (a dim given
as an int is a tuple of dims in torch's node: ``convert=int_tuple``), or to a function of
the node when it is worked out from several of its attributes. The properties are
made once, with the class; an op keeps an argument it needs only for them in
``setup_context``, which runs only when a node is recorded. They stay readable after
backward freed the tensors, as torch's. A list of tensors torch saves under one name
(``x[:, idx]``'s ``_saved_indices``) is the end of ``ctx.to_save`` (``save_list`` names each
one): ``saved_lists`` maps its name to its first place there (None for an entry that holds
no tensor, as torch's).

    >>> import teachgrad as tg
    >>> class Scale(Builtin):
    ...     node_name = "ScaleBackward0"
    ...     formula = {"self": "∂out · k"}
    ...     saved_args = {"k": "k", "self_sym_sizes": "in_shape"}
    ...     @staticmethod
    ...     def forward(ctx, x, k):
    ...         ctx.k, ctx.in_shape = k, x._data.shape
    ...         return x._data * k
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * ctx.k, None
    >>> y = Scale.apply(tg.ones(2, requires_grad=True), 3); y.grad_fn._saved_k, y.grad_fn._saved_self_sym_sizes
    (3, (2,))

``Builtin.apply`` is ``Function.apply``'s four steps with one shortcut: forward's result
is already an array, so it is wrapped directly (one array, the common case, without a
loop).

    >>> import teachgrad as tg
    >>> class Twice(Builtin):
    ...     node_name = "TwiceBackward0"
    ...     formula = {"self": "∂out · 2"}
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         return x._data * 2
    ...     @staticmethod
    ...     def backward(ctx, grad):
    ...         return grad * 2
    >>> y = Twice.apply(tg.ones(2, requires_grad=True)); y.grad_fn.name(), y
    ('TwiceBackward0', tensor([2., 2.], grad_fn=<TwiceBackward0>))
"""

from __future__ import annotations

from .._backend import numpy_module
from .._profiling import state as _profiling
from .._tensor import _given_and_wrapped, _new, wrap_array
from .function import Function, make_view, needs_grad, no_grads, record, wrap_outputs
from .tape import RawSavedTensor, SavedTensor

_ndarray, _as_0d = numpy_module().ndarray, numpy_module().asarray
_SCALARS = {numpy_module().dtype(t).type for t in "?bhilqBHILQefdgFDG"}  # NumPy's scalar types


class Builtin(Function):
    """The base class of teachgrad's own ops (see the module docstring)."""

    _builtin = True  # (node_name has no default: each op names its own node)
    saved_names: tuple = ()
    saved_args: dict = {}  # torch's name -> attribute of ctx, (attribute, convert), or a function
    saved_lists: dict = {}  # torch's name of a list of saved tensors -> its first place
    number_inputs: tuple = ()
    view_of_input = False
    returns_many_views = False
    batchable = False
    on_arrays = False
    records_inference = False
    checked_first: tuple = ()  # saved names torch's node checks for changes before the others
    keyword_places: dict = {}  # an input given by keyword -> its place among torch's inputs

    def __init_subclass__(cls, **kwargs):
        """The node class gets one ``_saved_<name>`` property per entry of ``saved_args``, and
        ``_saved_<name>`` with ``_raw_saved_<name>`` per entry of ``saved_lists``."""
        super().__init_subclass__(**kwargs)
        node = cls._backward_cls
        for name, where in cls.saved_args.items():
            setattr(node, f"_saved_{name}", _saved_argument(name, where))
        for name, first in cls.saved_lists.items():
            setattr(node, f"_saved_{name}", _saved_list(name, first))
            setattr(node, f"_raw_saved_{name}", _raw_saved_list(name, first))

    @classmethod
    def torch_inputs(cls, args, kwargs) -> tuple:
        """The op's inputs in torch's order, as ``profile(record_shapes=True)`` lists them:
        the positional arguments, with each one given by keyword put in its place
        (``keyword_places``; at the end if it has none).

        >>> from teachgrad.ops.index import Gather, Scatter
        >>> Gather.torch_inputs(("x", 0), {"index": "i"})
        ('x', 0, 'i')
        >>> Scatter.torch_inputs(("x", 0, "src"), {"index": "i"})  # (keyword_places: index 2)
        ('x', 0, 'i', 'src')
        """
        inputs = list(args)
        for name in sorted(kwargs, key=lambda name: cls.keyword_places.get(name, len(inputs))):
            inputs.insert(cls.keyword_places.get(name, len(inputs)), kwargs[name])
        return tuple(inputs)

    @classmethod
    def apply(cls, *args, **kwargs):
        if _profiling.active and _profiling.takes():  # inside profile(): time this call
            return _profiling.recorder.forward(cls, args, kwargs)
        # 1. decide whether to record
        ctx = _new(cls._backward_cls)
        needs = needs_grad(args, cls, kwargs)
        ctx.needs_input_grad = needs or no_grads(len(args))
        # 2. run forward on the arrays, and wrap its result
        out = cls.forward(ctx, *args, **kwargs)
        # (NumPy gives a full reduction as a scalar: make it 0-d)
        if type(out) is not _ndarray and type(out) in _SCALARS:
            out = _as_0d(out)
        single = type(out) is not tuple
        if type(out) is _ndarray:  # one array: the common case, kept fast
            outputs = (make_view(out, args[0], ctx) if cls.view_of_input else wrap_array(out),)
        else:
            outputs = wrap_outputs((out,) if single else out, args, ctx, cls, needs)
        if needs and cls._new_style:  # setup_context sees the wrapped outputs
            cls.setup_context(ctx, args, outputs[0] if single else outputs)
        # 3. connect the node
        record(cls, ctx, args, kwargs, outputs, needs)
        # 4. return
        return outputs[0] if single else outputs


def remember_dim(ctx, dim, ndim: int) -> int:
    """Keep ``dim`` as the call gave it, for the node to show (``ctx.given_dim``: an op says
    ``saved_args = {"dim": "given_dim"}``, and -1 stays -1, as in torch's node); return it
    wrapped, kept as ``ctx.dim`` too, for the op's own work.

    >>> import teachgrad as tg
    >>> y = tg.ones(2, 3, requires_grad=True).softmax(-1)
    >>> y.grad_fn._saved_dim, y.grad_fn.dim
    (-1, 1)
    """
    ctx.given_dim, ctx.dim = _given_and_wrapped(dim, ndim)
    return ctx.dim


def _saved_argument(name: str, where) -> property:
    """``node._saved_<name>``: the argument the node keeps as the attribute ``where`` (or
    ``(attribute, convert)``: converted when read; or a function of the node, for one worked
    out from several of its attributes)."""
    if callable(where):
        return property(where, doc=f"The saved argument ``{name}`` (torch's _saved_{name}).")
    attribute, convert = (where, None) if type(where) is str else where

    def saved_argument(node):
        value = getattr(node, attribute)
        return value if convert is None else convert(value)

    return property(saved_argument, doc=f"The saved argument ``{name}`` (torch's _saved_{name}).")


def save_list(ctx, name: str, tensors) -> tuple:
    """``tensors`` kept for backward as torch's list ``name`` (a ``saved_lists`` entry): each
    saved as ``name[k]``, the name a version error gives it (None stays None)."""
    return tuple(
        None if t is None else SavedTensor(t, ctx, f"{name}[{k}]") for k, t in enumerate(tensors)
    )


def _saved_list(name: str, first: int) -> property:
    """``node._saved_<name>``: the tensors saved from place ``first`` on, unpacked (so
    version-checked, and an error once backward freed them), None where none was saved."""

    def saved_list(node):
        return tuple(None if s is None else s.unpack(node) for s in node._saved[first:])

    return property(saved_list, doc=f"The saved tensors ``{name}`` (torch's _saved_{name}).")


def _raw_saved_list(name: str, first: int) -> property:
    """``node._raw_saved_<name>``: those tensors as ``RawSavedTensor`` objects (one for a
    None too, whose ``register_hooks`` is refused)."""

    def raw_saved_list(node):
        return tuple(RawSavedTensor._of(s, node) for s in node._saved[first:])

    return property(raw_saved_list, doc=f"torch's _raw_saved_{name}.")


def int_tuple(value):
    """An int[] argument as torch's node shows it: a tuple of ints (None stays None).

    >>> int_tuple(1), int_tuple([2, 0]), int_tuple(None)
    ((1,), (2, 0), None)
    """
    if value is None:
        return None
    return tuple(int(v) for v in value) if isinstance(value, tuple | list) else (int(value),)

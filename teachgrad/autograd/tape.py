"""The tape: nodes, the edges between them, and the tensors they save.

The tape *is* the graph. Each op run with grad enabled creates one ``Node`` (its
``grad_fn``): ``next_functions`` are the edges to the nodes of its inputs, and
``SavedTensor`` objects hold what its backward formula needs. A leaf that
requires grad is reached through its ``AccumulateGrad`` node, which adds the
arriving gradient into ``leaf.grad``.

What lives here: ``Node`` (hooks, names, metadata, saved-tensor access),
``AccumulateGrad`` and ``accumulate_grad`` (how a gradient lands in ``.grad``),
``SavedTensor`` (with the version check) and the saved-tensor hooks; hook
dictionaries and their handles are in ``teachgrad/_hooks.py``. The engine that walks
the graph is in ``engine.py``; the ``Function`` machinery that builds nodes is in
``function.py``; the public ``tg.autograd.graph`` (``graph.py``) shows a few of these
names, as torch's does.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x * x).sum()
    >>> y.grad_fn.name(), y.grad_fn.next_functions[0][0].name()
    ('SumBackward0', 'MulBackward0')
"""

from __future__ import annotations

import itertools
import re
import sys
import threading
import warnings
import weakref
from collections import namedtuple

from .. import _backend, _events, _seam
from .._backend import (
    array_module,
    as_array,
    dense,
    empty_strided,
    is_writeable,
    strides_for,
)
from .._hooks import RemovableHandle, add_hook, hooks_of
from .._tensor import Size, Tensor, _new, wrap_array
from . import anomaly_mode, gc_pacing
from .grad_mode import state as _grad_state

# Nodes run latest-created first; AccumulateGrad nodes get the largest number so a
# leaf's gradient is stored as soon as it is complete (torch does the same).
_sequence = itertools.count()


def peek_sequence_nr() -> int:
    """The number the next node will get (torch's ``at::sequence_number::peek``): the count
    of nodes recorded so far, for the GC's pacing, and an op's number in the profiler.

    >>> peek_sequence_nr() >= 0
    True
    """
    return int(repr(_sequence)[len("count(") : -1])  # (a count tells its next number only so)


gc_pacing.watch(peek_sequence_nr)


def spec_of(array) -> tuple:
    """What a node knows of a tensor it sends a gradient to, or gets one for: its shape,
    dtype and array type (the device). The gradient is checked against it.

    >>> import numpy as np
    >>> spec_of(np.zeros((2, 3)))
    ((2, 3), dtype('float64'), <class 'numpy.ndarray'>)
    """
    return (array.shape, array.dtype, type(array))


def stamp(node) -> None:
    """Give a new node its place in creation order (``_seq``: among ready nodes backward
    runs the latest first) and, while a backward with ``create_graph=True`` runs, its
    layer (1: a node of the graph of the gradient; 2 inside a nested one ...)."""
    node._seq = next(_sequence)
    if _grad_state.layer:
        node._layer = _grad_state.layer


_ACCUMULATE_SEQ = sys.maxsize


_FREED = (
    "Trying to backward through the graph a second time (or directly access saved tensors after "
    "they have already been freed). Saved intermediate values of the graph are freed when you call "
    ".backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the "
    "graph a second time or if you need to access saved tensors after calling backward."
)


_PACK_IN_PLACE = (
    "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack "
    "hook cannot be modified by in-place operations as this can lead to unexpected side-effects. "
    "Please open an issue if you need to perform in-place operations on the input to a pack hook."
)
_DETACHED_IN_PLACE = (
    "Trying to use a saved tensor that has been detached in-place, i.e. with .detach_().This is "
    "not supported, please use out-of-place `.detach()` instead"
)


class GradientEdge(namedtuple("GradientEdge", ["node", "output_nr"])):
    """An edge of the graph: ``(node, output_nr)``, what ``next_functions`` holds.

    ``autograd.grad`` takes one as an input (the gradient flowing into that edge) and as
    an output (the gradient given for it enters the graph there), and so does
    ``backward`` (``tensors=`` and ``inputs=``), as torch's.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); h = x * 3
    >>> edge = tg.autograd.graph.get_gradient_edge(h)
    >>> tg.autograd.grad(edge, x, grad_outputs=tg.ones(2))
    (tensor([3., 3.]),)
    """

    __slots__ = ()
    _requires_grad = True  # (an edge stands for an output of its node: the engine's root)

    def _edge(self) -> tuple:
        return tuple(self)

    @property
    def _data(self):
        """The output this edge carries as the engine reads a root: its shape, dtype and
        device, in an array that holds no memory (every element is the same zero)."""
        shape, dtype, array_type = self.node._output_meta[self.output_nr]
        xp = array_module(array_type)
        return xp.broadcast_to(xp.zeros((), dtype), shape)


class _HooksInForce(threading.local):
    """This thread's open saved-tensor blocks (per thread, as torch's: a block opened in one
    thread does not reach the tensors another saves): ``pairs``, the (pack, unpack) pairs
    of the saved_tensors_hooks blocks; ``disabled``, the messages of the
    disable_saved_tensors_hooks blocks; ``before_change``, the allow_mutation_on_saved_tensors
    block's callback (graph.py), told before each in-place change (``check_inplace``)."""

    def __init__(self):
        self.pairs, self.disabled, self.before_change = [], [], []


hooks_in_force = _HooksInForce()


class saved_tensors_hooks:  # noqa: N801 - torch's name
    """Within this block, every tensor saved for backward goes through ``pack_hook`` at
    save time, and ``unpack_hook(packed)`` gives it back each time backward reads it.

    Use it to see (or change) what backward keeps in memory: log it, compress it,
    move it elsewhere. The innermost block wins. What ``pack_hook`` returned is kept
    instead of the tensor, so, as in torch, a later in-place change of the tensor is not
    checked for: a hook that keeps the tensor itself gives backward the changed values.

    >>> import teachgrad as tg
    >>> packed = []
    >>> def pack(t):
    ...     packed.append(tuple(t.shape)); return t
    >>> x = tg.ones(3, requires_grad=True)
    >>> with tg.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    ...     y = (x * x).sum()
    >>> packed           # MulBackward0 saved self and other
    [(3,), (3,)]
    >>> y.backward(); x.grad
    tensor([2., 2., 2.])
    """

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook, self.unpack_hook = pack_hook, unpack_hook

    def __enter__(self):
        if hooks_in_force.disabled:
            raise RuntimeError(hooks_in_force.disabled[-1])
        hooks_in_force.pairs.append((self.pack_hook, self.unpack_hook))
        return self

    def __exit__(self, *exc):
        hooks_in_force.pairs.pop()


class save_on_cpu(saved_tensors_hooks):  # noqa: N801 - torch's name
    """Saved tensors wait for backward in host (CPU) memory, and move back to their
    device when backward needs them: GPU memory is freed during forward. On the CPU
    there is nothing to move, so tensors are kept as they are.

    ``pin_memory=True`` uses page-locked host memory (faster copies back to the GPU).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> with tg.autograd.graph.save_on_cpu():
    ...     y = (x.exp() * 2).sum()
    >>> y.backward(); x.grad
    tensor([5.4366, 5.4366])
    """

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack(t):
            if t.device.type == "cpu":
                return (None, t)
            return (t.device, t.cpu().pin_memory() if pin_memory else t.cpu())

        def unpack(packed):
            device, t = packed
            return t if device is None else t.to(device, non_blocking=pin_memory)

        super().__init__(pack, unpack)


class disable_saved_tensors_hooks:  # noqa: N801 - torch's name
    """Within this block saved-tensor hooks are off, and opening a ``saved_tensors_hooks``
    block raises ``RuntimeError(error_message)`` (for code that must not be hooked).

    >>> import teachgrad as tg
    >>> with tg.autograd.graph.disable_saved_tensors_hooks("not here"):
    ...     try:
    ...         tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t).__enter__()
    ...     except RuntimeError as e:
    ...         print(e)
    not here
    """

    def __init__(self, error_message):
        self.error_message = error_message

    def __enter__(self):
        if hooks_in_force.pairs:  # torch: hooks already in force can't be switched off inside
            raise RuntimeError(self.error_message)
        hooks_in_force.disabled.append(self.error_message)
        return self

    def __exit__(self, *exc):
        hooks_in_force.disabled.pop()


class SavedTensor:
    """A tensor kept by a node for its backward formula, with the version it had then.

    Saving an op's own *output* keeps only its data (not the output Tensor), because
    that Tensor points back to the node: keeping it would make a reference cycle and
    delay freeing memory. Unpacking rebuilds an equivalent tensor.
    """

    __slots__ = (
        "tensor",
        "data",
        "counter",
        "version",
        "output_nr",
        "is_output",
        "name",
        "released",
        "tangent",
        "meta",
        "hooks",
        "autograd",
        "non_leaf",
        "raw",  # a weakref to its RawSavedTensor, once there is one
    )

    def __init__(self, tensor, owner, name: str):
        if tensor._inference:
            raise _inference_saved(tensor, owner, name)
        self.name, self.counter, self.version = name, tensor._counter, tensor._counter.version
        self.released, self.hooks, self.is_output = False, None, tensor._grad_fn is owner
        if self.is_output:
            self._keep_output(tensor)
        else:  # (non_leaf: a detach_() later is an error)
            self.tensor, self.non_leaf = tensor, tensor._grad_fn is not None
        # (meta: shape, dtype and array type, for snapshots once it is released: the tuple its
        # node, or a leaf's AccumulateGrad, already keeps; a copy each was 95 KiB in bench (c))
        fn = tensor._grad_fn or tensor._acc_ref and tensor._acc_ref()
        self.meta = spec_of(tensor._data) if fn is None else fn._output_meta[tensor._output_nr]
        if hooks_in_force.pairs and not hooks_in_force.disabled:  # keep what pack returns
            self._pack(tensor)

    def _keep_output(self, tensor) -> None:
        """An output of the node that saves it is kept without its Tensor (which holds the
        node: a reference cycle); ``unpack`` makes the Tensor again. A view is made again as
        a plain tensor, as torch does: its base would hold the node too, once an in-place op
        on the view rewrote the base's history (``v.exp_()`` saves its result)."""
        self.tensor = None
        self.data = tensor._data
        self.output_nr = tensor._output_nr
        self.tangent = None  # (forward AD: filled in by push_tangents, kept for the rebuild)

    def _pack(self, tensor, hooks=None, value=None) -> None:
        """Keep what ``pack`` returns for ``tensor`` instead of it. ``hooks``: the pair that
        ``register_hooks`` gives (else the innermost saved_tensors_hooks block's), whose
        pack sees ``value`` (``tensor`` detached), in no_grad mode, as torch's does."""
        pack, unpack = hooks or hooks_in_force.pairs[-1]  # the innermost block wins
        # what the unpacked tensor needs so that autograd treats it as the original one
        leaf_acc = tensor._grad_accumulator() if tensor.is_leaf and tensor._requires_grad else None
        self.autograd = (tensor._grad_fn, tensor._output_nr, leaf_acc)
        version = tensor._counter.version
        self.hooks = (unpack, None)  # (set first, as torch: a pack hook that fails leaves them)
        self.hooks = (unpack, pack(tensor) if value is None else _pack_without_grad(pack, value))
        if tensor._counter.version != version:
            raise RuntimeError(_PACK_IN_PLACE)
        self.tensor = self.data = None

    def register_hooks(self, pack_hook, unpack_hook, owner) -> None:
        """``grad_fn._raw_saved_<name>.register_hooks``: from now on keep what
        ``pack_hook`` returns, and read it back through ``unpack_hook``."""
        if self.hooks is not None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor whose hooks have already been set. "
                "Hint: only one pair of hooks is allowed at a time.\n  (a saved_tensors_hooks "
                f"block, or an earlier register_hooks, already packed {owner.name()}'s saved "
                f"'{self.name}')"
            )
        if self.released:
            raise RuntimeError(_FREED_HOOKS)
        original = self._rebuilt_output(owner) if self.is_output else self.tensor
        self._pack(original, (pack_hook, unpack_hook), original.detach())

    def raw_data(self, owner):
        """``SavedTensor.data``: what is kept now (the pack hook's result, if any)."""
        if self.released:
            return None
        if self.hooks is not None:
            return self.hooks[1]
        return Tensor._make(self.data, self.counter) if self.is_output else self.tensor

    def unpack(self, owner):
        self._check_unchanged(owner)
        if self.hooks is not None:
            return self._unpack_with_hook(owner)
        if self.is_output:
            return self._rebuilt_output(owner)
        if self.tensor._grad_fn is None and self.non_leaf:
            raise RuntimeError(_DETACHED_IN_PLACE + f"\n  ({owner.name()}'s saved '{self.name}')")
        return self.tensor

    def unpack_array(self, owner):
        """What ``unpack`` gives, as the array alone (for a formula that runs on arrays):
        the same checks, and a saved output needs no Tensor made again. (A pack hook's
        value, and an input detached in place since, which is an error, are ``unpack``'s.)"""
        if self.hooks is None and (self.is_output or not self.non_leaf or self.tensor._grad_fn):
            self._check_unchanged(owner)
            return self.data if self.is_output else self.tensor._data
        return self.unpack(owner)._data

    def _check_unchanged(self, owner) -> None:
        """The saved value may be read: backward has not freed it, nothing changed it (what a
        pack hook returned is kept instead of the tensor: as torch, its version is not asked)."""
        if self.released:
            raise freed_error(owner, self.name)
        if self.counter.version != self.version and self.hooks is None:
            raise RuntimeError(version_error(self, owner))
        if _events.SavedTensorUnpacked.on:
            _events.emit(_events.SavedTensorUnpacked, node=owner, name=self.name)

    def _rebuilt_output(self, owner):
        """The saved output as a Tensor again: the same memory, made by ``owner``."""
        t = _new(Tensor)
        t._data = self.data
        t._counter = self.counter
        t._grad_fn = owner
        t._output_nr = self.output_nr
        t._requires_grad = True
        if self.tangent is not None:
            t._fw_grad, t._fw_level = self.tangent
        return t

    def _unpack_with_hook(self, owner):
        unpack, packed = self.hooks
        t = unpack(packed)
        if not isinstance(t, Tensor):
            raise TypeError(
                f"Output of saved tensor unpack_hook expected to be a Tensor but got result of type "
                f"{type(t).__name__}\n  The unpack hook must give back the tensor ({owner.name()}'s "
                f"saved '{self.name}') from what the pack hook returned."
            )
        fn, output_nr, leaf_acc = self.autograd
        if self.is_output:
            fn, output_nr = owner, self.output_nr
        if fn is None and leaf_acc is None:
            return t
        t = t.detach()  # its values, in the original's place in the graph (not t's own history)
        if fn is not None:
            t._grad_fn, t._output_nr, t._requires_grad = fn, output_nr, True
        else:
            t._requires_grad, t._acc_ref = True, weakref.ref(leaf_acc)
        return t

    def release(self):
        self.tensor, self.data, self.hooks, self.released = None, None, None, True

    def shape_str(self) -> str:
        if self.released:
            return "released"
        data = self.data if self.tensor is None else self.tensor._data
        return str(list(self.meta[0] if data is None else data.shape))


def _pack_without_grad(pack, value):
    previous, _grad_state.enabled = _grad_state.enabled, False
    try:
        return pack(value)
    finally:
        _grad_state.enabled = previous


_FREED_HOOKS = (
    "Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values "
    "of the graph are freed when you call .backward() or autograd.grad(). Specify "
    "retain_graph=True if you need to backward through the graph a second time or if you need to "
    "access saved variables after calling backward."
)


class RawSavedTensor:
    """One value a node saved, as an object: ``grad_fn._raw_saved_<name>`` (torch's
    ``torch._C._autograd.SavedTensor``). ``register_hooks(pack_hook, unpack_hook)`` sets
    saved-tensor hooks on this one value (``saved_tensors_hooks`` does it for every value
    saved in a block); ``data`` is what is kept, ``unpack_hook`` the hook (or None) and
    ``unpack()`` the value as backward reads it.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); y = x * x
    >>> raw = y.grad_fn._raw_saved_self
    >>> raw.register_hooks(lambda t: t * 10, lambda packed: packed / 10)
    >>> raw.data, y.grad_fn._saved_self
    (tensor([10., 20.]), tensor([1., 2.], requires_grad=True))
    """

    __slots__ = ("_saved", "_node", "__weakref__")

    def __init__(self, *args, **kwargs):
        raise RuntimeError(
            "Trying to create a SavedTensor object from Python is forbidden.\n  A node makes "
            "its own: read them as grad_fn._raw_saved_<name>."
        )

    @classmethod
    def _of(cls, saved, node):
        """The object for ``saved``: the same one while someone holds it, as in torch."""
        ref = getattr(saved, "raw", None)
        raw = ref() if ref is not None else None
        if raw is None:
            raw = object.__new__(cls)
            raw._saved, raw._node = saved, node
            if saved is not None:
                saved.raw = weakref.ref(raw)
        return raw

    def register_hooks(self, *hooks) -> None:
        """Pack this saved value with ``pack_hook`` now; backward reads ``unpack_hook(packed)``."""
        if len(hooks) != 2 or not all(callable(h) for h in hooks):
            raise TypeError(
                "register_hooks(): incompatible function arguments. The following argument types "
                "are supported:\n    1. (self: SavedTensor, arg0: Callable, arg1: Callable) -> "
                f"None\n\nInvoked with: {', '.join(map(repr, (self, *hooks)))}\n  Give two "
                "functions: pack_hook(tensor) -> anything, unpack_hook(packed) -> Tensor."
            )
        if self._saved is None:
            raise RuntimeError(
                "Calling register_hooks on a saved tensor with value None is forbidden\n  "
                f"{self._node.name()} saved None here: there is nothing to pack."
            )
        self._saved.register_hooks(*hooks, self._node)

    @property
    def data(self):
        """What is kept for backward: the pack hook's result, else the tensor (None once freed)."""
        return None if self._saved is None else self._saved.raw_data(self._node)

    @property
    def unpack_hook(self):
        """The unpack hook of this value (None without hooks)."""
        s = self._saved
        return s.hooks[0] if s is not None and s.hooks is not None else None

    def unpack(self):
        """The saved value as backward reads it (through the unpack hook, if any)."""
        return None if self._saved is None else self._saved.unpack(self._node)

    def __repr__(self):
        return f"<teachgrad.autograd.SavedTensor object at {hex(id(self))}>"


_TYPE_NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "bool": "BoolTensor",
}


def freed_value_error(node) -> RuntimeError:
    """Reading a plain value the node saved (a number, an index) after backward freed it."""
    names = getattr(node, "_names_of_saved", ())
    plain = [i for i, s in enumerate(node._saved) if s is not None and type(s) is not SavedTensor]
    return freed_error(
        node, names[plain[0]] if plain and plain[0] < len(names) else "a saved value"
    )


def freed_error(node, name: str) -> RuntimeError:
    """Reading what ``node`` saved as ``name`` after backward freed it."""
    return RuntimeError(_FREED + f"\n  (node {node.name()} tried to read its saved '{name}')")


def _inference_saved(tensor, owner, name) -> RuntimeError:
    return RuntimeError(
        "Inference tensors cannot be saved for backward. Please do not use Tensors created in "
        "inference mode in computation tracked by autograd. To work around this, you can make a clone "
        "to get a normal tensor and use it in autograd, or use `teachgrad.no_grad()` instead of "
        f"`teachgrad.inference_mode()`.\n  {owner.name()} wanted to save '{name}' "
        f"(shape {tuple(tensor.shape)}), which was created inside inference_mode(); tensors made "
        "there can never take part in backward. Create it outside inference_mode, or use no_grad()."
    )


def _short(node) -> str:
    """A node's name the way torch's error messages print it: without its last ``Backward``
    and without the overload number 0 (``ExpBackward0`` -> ``Exp``), but with any other
    overload number, which tells the overloads apart (``RsubBackward1`` -> ``Rsub1``, the
    overload with a number ``2 - x``; ``PowBackward2`` -> ``Pow2``, ``2 ** x``).

    >>> class RsubBackward1(Node): pass
    >>> class TanhBackwardBackward0(Node): pass
    >>> _short(RsubBackward1()), _short(TanhBackwardBackward0())
    ('Rsub1', 'TanhBackward')
    """
    return re.sub(r"Backward(0?)(\d*)$", r"\2", node.name())


def _changed_by(counter, since: int) -> list:
    """The names of the in-place ops that bumped ``counter`` after version ``since``."""
    recent = [op for version, op in counter.recent or () if version > since]
    forgotten = counter.version - since - len(recent)  # older than the counter remembers
    if forgotten:
        recent.insert(0, f"{forgotten} earlier in-place op{'s' if forgotten > 1 else ''}")
    return recent


def version_error(saved: SavedTensor, owner) -> str:
    """torch's message for a saved tensor modified in place, plus what it means here."""
    saved = _checked_first(saved, owner)
    t = saved.tensor
    if saved.is_output:
        which = f", which is output {saved.output_nr} of {_short(owner)},"
    elif t is not None:
        fn = t.grad_fn  # (a view's history may have been regenerated: name what it is now)
        which = f", which is output {t._output_nr} of {_short(fn)}," if fn else ""
    else:  # packed by a saved_tensors_hooks pack hook
        fn = saved.autograd[0]
        which = f", which is output {saved.autograd[1]} of {_short(fn)}," if fn else ""
    data = (
        _SavedMeta(*saved.meta) if saved.hooks is not None else saved.data if t is None else t._data
    )
    type_name = _TYPE_NAMES.get(str(data.dtype), f"{data.dtype}Tensor")
    changed_by = _changed_by(saved.counter, saved.version)
    return (
        "one of the variables needed for gradient computation has been modified by an inplace "
        f"operation: [teachgrad.{type_name} {list(data.shape)}]{which} is at version "
        f"{saved.counter.version}; expected version {saved.version} instead. {_version_hint()}\n"
        f"  What happened: {owner.name()} saved this tensor as '{saved.name}' (shape "
        f"{tuple(data.shape)}) when the forward pass ran, at version {saved.version}. Then "
        f"{', '.join(changed_by)} changed it in place, so its version is now {saved.counter.version} and the "
        "gradient formula would use the wrong values.\n"
        "  Hint: use the out-of-place op (e.g. `y = y * 2` instead of `y *= 2`, `x.exp()` instead of "
        "`x.exp_()`), or `.clone()` the tensor before changing it."
    )


def _checked_first(saved: SavedTensor, owner) -> SavedTensor:
    """Of the values ``owner`` saved that were changed, the one torch's node checks first,
    so the error describes the same tensor: a built-in may name the ones its torch node
    checks before the others (``Builtin.checked_first``: ``MulBackward0`` checks ``other``
    before ``self``); else ``saved``, the first in the order they were saved."""
    for name in getattr(getattr(owner, "_forward_cls", None), "checked_first", ()):
        for s in owner._saved:
            changed = type(s) is SavedTensor and s.counter.version != s.version
            if changed and s.name == name and not s.released:
                return s
    return saved


def _version_hint() -> str:
    """The hint torch ends the first line of the version error with (anomaly mode on or off)."""
    if anomaly_mode.state.enabled:
        return (
            "Hint: the backtrace further above shows the operation that failed to compute its "
            "gradient. The variable in question was changed in there or anywhere later. Good luck!"
        )
    return (
        "Hint: enable anomaly detection to find the operation that failed to compute its gradient, "
        "with teachgrad.autograd.set_detect_anomaly(True, check_nan=False)."
    )


class _SavedProperty(property):
    """A ``_saved_<name>`` property; the class that gets one gets ``_raw_saved_<name>`` too
    (``Node.__init_subclass__``)."""


class _InputMetadata:
    """One gradient's metadata as a node records it (torch's ``_InputMetadata``)."""

    __slots__ = ("shape", "dtype", "device")
    is_nested_tensor = is_cpp_nested_tensor = False  # (teachgrad has no nested tensors)

    def __init__(self, shape, np_dtype, array_type):
        self.shape = Size(shape)
        self.dtype = _backend.from_numpy_dtype(np_dtype)
        on_gpu = _backend.device_type_of(array_type) == "cuda"  # (the node keeps no index)
        self.device = _backend.as_device("cuda:0" if on_gpu else "cpu")


class Node:
    """A backward function in the graph (torch's ``torch.autograd.graph.Node``).

    ``name()`` is torch's name (``MulBackward0``); ``next_functions`` is one
    ``(node, input_nr)`` edge per differentiable input (``(None, 0)`` for an input
    that needs no gradient).

    >>> import teachgrad as tg
    >>> a = tg.tensor(2.0, requires_grad=True)
    >>> (a * 3).grad_fn.next_functions[0][0].name()
    'torch::autograd::AccumulateGrad'
    """

    next_functions: tuple = ()
    _saved: tuple = ()
    _seq = 0
    _layer = 0  # see stamp()
    _output_meta: tuple = ()  # (shape, numpy dtype, array module) per output, for zero grads
    _tensor_hooks = None  # {output_nr: {id: fn}}: hooks registered on the output tensors
    _retain_grad = None  # {output_nr: weakref to the tensor that called retain_grad()}
    _values_freed = False  # backward freed the plain values it saved (see _release_saved)
    _on_arrays = False  # a built-in op's node may run its formula on arrays (function.py)
    _pre_hooks = None
    _post_hooks = None
    _metadata = None
    _output_names = None  # {output_nr: name} for outputs the user named (t.name = "h")
    _names_of_saved: tuple = ()  # torch's names for saved values, e.g. ("self", "other")

    def __init_subclass__(cls, **kwargs):
        """Each ``_saved_<name>`` property brings its ``_raw_saved_<name>``."""
        super().__init_subclass__(**kwargs)
        for attr, value in list(cls.__dict__.items()):
            if isinstance(value, _SavedProperty):
                setattr(cls, "_raw" + attr, value.raw)

    def name(self) -> str:
        """torch's name for this node, e.g. ``'MulBackward0'``."""
        return type(self).__name__

    def __repr__(self):
        return f"<{self.name()} object at {hex(id(self))}>"

    @property
    def metadata(self) -> dict:
        """A dict for your own notes about this node (kept as long as the node lives)."""
        if self._metadata is None:
            self._metadata = {}
        return self._metadata

    def _sequence_nr(self) -> int:
        """The node's number in creation order: backward runs the latest first (torch's).

        >>> import teachgrad as tg
        >>> x = tg.ones(1, requires_grad=True); a, b = x * 2, x * 3
        >>> b.grad_fn._sequence_nr() > a.grad_fn._sequence_nr()
        True
        """
        return self._seq

    def _set_sequence_nr(self, number: int) -> None:
        """Give the node another place in backward's order (torch's private hook for it)."""
        self._seq = number

    @property
    def _input_metadata(self) -> tuple:
        """What the node knows of each gradient it takes in, one per output of its forward
        (torch's private ``_input_metadata``, whose "inputs" are backward's): shape, dtype,
        device.

        >>> import teachgrad as tg
        >>> y = tg.ones(2, 3, requires_grad=True).sum(0)
        >>> meta = y.grad_fn._input_metadata[0]
        >>> meta.shape, meta.dtype, meta.device
        (teachgrad.Size([3]), teachgrad.float32, device(type='cpu'))
        """
        return tuple(_InputMetadata(*spec) for spec in self._output_meta if spec is not None)

    def register_hook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_inputs, grad_outputs)`` after this node ran; it may return new grad_inputs.

        >>> import teachgrad as tg
        >>> x = tg.ones(2, requires_grad=True); y = (x * 2).sum()
        >>> _ = y.grad_fn.register_hook(lambda gi, go: print(go[0]))
        >>> y.backward()
        tensor(1.)
        """
        return add_hook(hooks_of(self, "_post_hooks"), fn)

    def register_prehook(self, fn) -> RemovableHandle:
        """Call ``fn(grad_outputs)`` before this node runs; it may return new grad_outputs.

        >>> import teachgrad as tg
        >>> x = tg.ones(2, requires_grad=True); y = (x * 2).sum()
        >>> _ = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
        >>> y.backward(); x.grad
        tensor([20., 20.])
        """
        return add_hook(hooks_of(self, "_pre_hooks"), fn)

    def __call__(self, *grad_outputs):
        """Run this node's backward formula directly (no engine, no hooks): one gradient per
        edge, as a tuple, or alone for a node of one edge (as torch's nodes answer).

        >>> import teachgrad as tg
        >>> y = (tg.ones(2, requires_grad=True) * 3).exp()
        >>> with tg.no_grad():  # (else the formula's own ops are recorded)
        ...     y.grad_fn(tg.ones(2))
        tensor([20.0855, 20.0855])
        """
        expected = len(self._output_meta)
        if len(grad_outputs) != expected:
            raise TypeError(f"expected {expected} arguments, got {len(grad_outputs)} instead")
        grad_inputs = self._apply(list(grad_outputs))
        return grad_inputs[0] if len(grad_inputs) == 1 else grad_inputs

    def _apply(self, grad_outputs: list) -> tuple:
        raise NotImplementedError

    # ---- saved tensors, exposed as torch does: grad_fn._saved_self, ._saved_result ...
    # (one property per saved name, made with the node's class: see _saved_property. No
    # __getattr__ here: it would make every attribute access on every node slower.)
    def _release_saved(self):
        """Free what the node saved. A plain value (the 2 of ``x * 2``, an index) counts
        too: torch keeps those as saved tensors, so reading one again is the same error
        (``_values_freed``; the value itself is small and stays)."""
        released = False
        for s in self._saved:
            if type(s) is SavedTensor and not s.released:
                s.release()
                released = True
            elif type(s) is not SavedTensor and s is not None:
                self._values_freed = released = True
        if released and _events.SavedTensorReleased.on:
            _events.emit(_events.SavedTensorReleased, node=self)

    def _run_tensor_hooks(self, grads: list) -> list:
        """Apply hooks registered on this node's output tensors, then retain_grad."""
        hooks = self._tensor_hooks
        if hooks:
            for nr, fns in hooks.items():
                for fn in list(fns.values()):  # (also for an undefined gradient: None, as torch)
                    new = fn(grads[nr])
                    if _events.HookFired.on:
                        _events.emit(_events.HookFired, kind="tensor", owner=self, hook=fn)
                    if new is not None:
                        grads[nr] = check_hook_result(new, grads[nr], self, nr, fn)
        if self._retain_grad:  # runs after every other hook, as in torch
            for nr, ref in self._retain_grad.items():
                t = ref()
                if t is not None and grads[nr] is not None:
                    t._grad = grads[nr].clone() if t._grad is None else t._grad + grads[nr]
        return grads


_SavedMeta = namedtuple("_SavedMeta", ["shape", "dtype", "array_type"])


def check_hook_result(new, old, node, nr, hook=None):
    """A hook's replacement gradient must be a Tensor like the one it replaces."""
    name = getattr(hook, "__name__", "hook")
    if not isinstance(new, Tensor):
        raise TypeError(
            f"a tensor hook on output {nr} of {node.name()} must return a Tensor or None, "
            f"got {type(new).__name__}"
        )
    if old is None:
        raise RuntimeError(
            "can't replace a None gradient with a non-None value\n  A tensor hook on output "
            f"{nr} of {node.name()} got None (no gradient flows there: a backward gave none) "
            "and returned a Tensor; for None it may only return None."
        )
    if new.shape != old.shape:
        raise RuntimeError(
            f"hook '{name}' has changed the size of value\n  A hook on {node.name()} (position "
            f"{nr}) returned shape {tuple(new.shape)}, but the gradient has shape "
            f"{tuple(old.shape)}."
        )
    if new._data.dtype != old._data.dtype or type(new._data) is not type(old._data):
        raise RuntimeError(
            f"hook '{name}' has changed the type of value (was {_type_name(old)} got "
            f"{_type_name(new)})\n  A hook on {node.name()} (position {nr}) must keep the "
            "gradient's dtype and device."
        )
    return new


def _type_name(t) -> str:
    return f"teachgrad.{_TYPE_NAMES.get(str(t._data.dtype), str(t._data.dtype))}"


def torch_cpp_node(cls):
    """Name ``cls``'s nodes as torch names its C++-only nodes: ``name()`` carries the namespace
    (``torch::autograd::AccumulateGrad``, what a profiler shows too), the repr the bare class
    name (``<AccumulateGrad object at ...>``)."""
    cls.name = lambda self: f"torch::autograd::{type(self).__name__}"
    cls.__repr__ = lambda self: f"<{type(self).__name__} object at {hex(id(self))}>"
    return cls


@torch_cpp_node
class AccumulateGrad(Node):
    """The node that stores a leaf's gradient into ``leaf.grad`` (``.variable`` is the leaf).

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> acc = (w * 1).grad_fn.next_functions[0][0]
    >>> acc.name(), acc, acc.variable is w
    ('torch::autograd::AccumulateGrad', <AccumulateGrad object at ...>, True)
    """

    _seq = _ACCUMULATE_SEQ
    formula = {"variable": "grad, added into variable's gradient"}  # (a leaf: it has no inputs)

    def __init__(self, variable):
        self.variable = variable
        self._output_meta = (spec_of(variable._data),)

    @property
    def _tensor_hooks(self):
        """A leaf's hooks live on the leaf (this node is made and dropped with each graph)."""
        return self.variable.__dict__.get("_backward_hooks")

    def _run_tensor_hooks(self, grads):
        hooks = self._tensor_hooks
        if hooks:
            g = grads[0]
            for fn in list(hooks.values()):  # (also for an undefined gradient: None, as torch)
                new = fn(g)
                if _events.HookFired.on:
                    _events.emit(_events.HookFired, kind="tensor", owner=self.variable, hook=fn)
                if new is not None:
                    g = check_hook_result(new, g, self, 0, fn)
            grads[0] = g
        return grads

    def _apply(self, grads):
        g, grads[0] = grads[0], None  # drop the list's reference: accumulate_grad counts them
        if g is not None and self.variable._requires_grad:  # (not after detach_(), as torch)
            accumulate_grad(self.variable, g)
        if "_post_acc_hooks" in self.variable.__dict__ and self.variable._requires_grad:
            _run_post_accumulate_hooks(self.variable)  # (also when no gradient came, as torch)
        return ()


def _run_post_accumulate_hooks(variable) -> None:
    """The hooks that run once ``variable.grad`` holds the new gradient."""
    for fn in list(variable.__dict__["_post_acc_hooks"].values()):
        _post_accumulate_result(fn(variable), variable)
        if _events.HookFired.on:
            _events.emit(_events.HookFired, kind="post_accumulate", owner=variable, hook=fn)


def _post_accumulate_result(result, variable) -> None:
    """A post-accumulate-grad hook acts on the leaf (``.grad`` is there): it returns nothing,
    or the leaf itself (what an in-place op on it returns: ``lambda p: p.mul_(2)``)."""
    if result is None or result is variable:
        return
    if not isinstance(result, Tensor):
        raise TypeError(f"expected Variable, but hook returned '{type(result).__name__}'")
    raise RuntimeError(
        "Tensor post accumulate grad hooks should return None.\n  Such a hook runs after the "
        "gradient was added into .grad; change tensor.grad in place instead of returning it."
    )


def _saved_property(i: int, name: str, number_operand: bool = False) -> property:
    """``node._saved_<name>``: the ``i``-th value the node saved (unpacked, version-checked).
    ``number_operand``: the place of an operand that torch wraps as a tensor when it is a
    number (``Builtin.number_inputs``); a number the node kept there as it is shows as that
    tensor, as torch's node shows it: ``(x * 3).grad_fn._saved_other`` is ``tensor(3)``."""

    def saved_value(node):
        saved = node._saved[i]
        if isinstance(saved, SavedTensor):
            return saved.unpack(node)
        if node._values_freed and saved is not None:
            raise freed_value_error(node)
        return _wrapped_number(saved) if number_operand and saved is not None else saved

    prop = _SavedProperty(saved_value, doc=f"The saved ``{name}`` (torch's _saved_{name}).")
    prop.raw = _raw_saved_property(i, name)
    return prop


def _wrapped_number(value) -> Tensor:
    """A Python number as torch wraps it: a 0-d CPU tensor of its kind's widest dtype (int64,
    float64, complex128; bool stays bool), as NumPy makes a number an array."""
    return wrap_array(as_array(value))


def _raw_saved_property(i: int, name: str) -> property:
    """``node._raw_saved_<name>``: the ``i``-th saved value as a ``RawSavedTensor``. Only
    tensors (and None, an optional tensor left out) have one, as in torch."""

    def raw_saved(node):
        saved = node._saved[i]
        if saved is not None and type(saved) is not SavedTensor:
            raise AttributeError(f"'{node.name()}' object has no attribute '_raw_saved_{name}'")
        return RawSavedTensor._of(saved, node)

    return property(
        raw_saved, doc=f"The saved ``{name}`` as an object (torch's _raw_saved_{name})."
    )


class _Claim:
    """The gradient the engine found that only it holds, claimed for the ``AccumulateGrad``
    it runs next (``engine._claim_unshared``), which then keeps it as ``.grad`` without a
    copy. Kept here, not on the gradient: a flag set on each gradient Tensor cost 136 bytes
    of its attribute storage (tracemalloc), alive as long as ``.grad``: 53 KiB for the 200
    weights of ``benchmarks/bench.py`` (c).

    One for all threads (a thread-local one cost 0.7% of the small MLP step): passes on two
    threads can at worst overwrite each other's claim, and that leaf copies its gradient;
    ``accumulate_grad`` honours a claim only for the very tensor claimed."""

    __slots__ = ("tensor",)

    def __init__(self):
        self.tensor = None


claim = _Claim()


def accumulate_grad(var, g) -> None:
    """Add ``g`` into ``var.grad`` following torch's "default gradient layout" rules.

    * grad mode on (``create_graph=True``): ``var.grad = var.grad + g``, recorded.
    * ``.grad`` exists and grad mode is off: add in place, same buffer, strides kept.
    * no ``.grad`` yet: store ``g`` itself when nobody else holds it and its strides
      already match ``var`` (no copy); otherwise copy into a buffer with ``var``'s
      strides (row-major if ``var`` is not dense).

    Then the ``GradAccumulated`` event, for whoever listens (snapshots, the stepper).
    """
    old, owned, claim.tensor = var._grad, claim.tensor is g, None  # (a claim is for here only)
    if _grad_state.enabled:
        var._grad = _recorded_sum(old, g, var)
    elif old is not None:
        _add_in_place(old, g, var)
    elif owned and _strides_match(g._data, var._data):
        var._grad = g  # made by this backward pass and held by nobody else: no copy needed
    else:
        var._grad = _copy_with_layout(g, var)
    if _events.GradAccumulated.on:
        _events.emit(_events.GradAccumulated, tensor=var, grad=var._grad)


def _recorded_sum(old, g, var):
    """``create_graph=True``: the new ``.grad`` is recorded (a copy, or old + g)."""
    new = _recorded_copy(g, var) if old is None else old + g
    return new if _strides_match(new._data, var._data) else _copy_with_layout(new, var)


def _recorded_copy(g, var):
    """The first ``.grad`` under ``create_graph=True``, made as torch makes it: for a dense
    ``var``, a new tensor with ``var``'s strides that ``g`` is copied into (its node is
    CopyBackwards); otherwise a row-major clone of ``g`` (CloneBackward0)."""
    if not dense(var._data):
        return _seam.clone_like(g, None)
    # (in g's dtype: not the leaf's when its .data got another dtype since)
    data, dtype = var._data, g._data.dtype
    return wrap_array(empty_strided(data, strides_for(data, dtype.itemsize), dtype)).copy_(g)


def _add_in_place(old, g, var) -> None:
    """Add ``g`` into the existing ``.grad`` buffer (a new one if it is read-only)."""
    if not _strides_match(old._data, var._data):
        warnings.warn(
            "grad and param do not obey the gradient layout contract. This is not an error, but may "
            f"impair performance.\ngrad.sizes() = {list(old.shape)}, strides() = {list(old.stride())}\n"
            f"param.sizes() = {list(var.shape)}, strides() = {list(var.stride())}",
            UserWarning,
            stacklevel=3,
        )
    if is_writeable(old._data):
        old._data += g._data
        old._counter.bump("gradient accumulation")
    else:
        var._grad = old + g


def _strides_match(a, b) -> bool:
    """Whether gradient ``a`` is laid out as torch wants it for leaf ``b`` (the same strides,
    counted in elements: a leaf whose ``.data`` got another dtype may get gradients of its old one)."""
    return a.strides == b.strides and a.itemsize == b.itemsize or _obeys_layout_contract(a, b)


def _obeys_layout_contract(grad, var) -> bool:
    """torch's rule for a gradient's layout: a dense ``var``'s strides, except along dims of
    size 1 (any stride but 0 there); row-major for a ``var`` that is not dense."""
    if not dense(var):
        return grad.flags.c_contiguous
    # (zip stops at the shorter: a leaf whose .data got another shape has other dims)
    for g, v, n in zip(grad.strides, var.strides, grad.shape, strict=False):
        g, v = g // grad.itemsize, v // var.itemsize  # (in elements)
        if g != v if n != 1 else g == 0 and v != 0:
            return False
    return True


def _copy_with_layout(g, var):
    """A copy of gradient ``g`` with leaf ``var``'s strides (row-major if it is not dense).
    A leaf whose ``.data`` got another shape since the graph was recorded gets ``g`` copied
    into that shape, as torch copies it (broadcast, or ``copy_``'s error)."""
    layout = var._data if dense(var._data) else None
    if layout is not None and g._data.shape != layout.shape:
        return _recorded_copy(g, var)
    return _seam.clone_like(g, layout)


_seam.provide(AccumulateGrad=AccumulateGrad)  # a leaf makes its node (teachgrad/_seam.py)

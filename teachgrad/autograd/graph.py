"""``tg.autograd.graph``: the public window on the graph, as ``torch.autograd.graph``.

The graph's machinery lives in ``tape.py`` (nodes, saved tensors, accumulation); this
module names what users reach for: ``Node``, ``GradientEdge`` and
``get_gradient_edge``, the saved-tensor hooks (``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``, ``allow_mutation_on_saved_tensors``),
``increment_version``, ``register_multi_grad_hook``, and teachgrad's own windows on the graph: its events
(``add_listener``, ``record``) and snapshots (``snapshot``).

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> tg.autograd.graph.get_gradient_edge(w).node.name()
    'torch::autograd::AccumulateGrad'
"""

from __future__ import annotations

import contextlib
import weakref

from .._events import (  # noqa: F401 - re-exported: the event API is part of this namespace
    Event,
    GradAccumulated,
    HookFired,
    NodeFinished,
    NodeStarted,
    OpRecorded,
    Recording,
    SavedTensorPacked,
    SavedTensorReleased,
    SavedTensorUnpacked,
    VersionBumped,
    add_listener,
    record,
)
from .._hooks import MultiHandle
from .._tensor import Tensor
from .engine import current_pass, will_run
from .grad_mode import no_grad
from .snapshot import (  # noqa: F401 - re-exported
    EdgeInfo,
    GraphSnapshot,
    NodeInfo,
    SavedInfo,
    advance,
    snapshot,
)
from .tape import (  # noqa: F401 - re-exported: torch.autograd.graph's names
    GradientEdge,
    Node,
    disable_saved_tensors_hooks,
    hooks_in_force,
    save_on_cpu,
    saved_tensors_hooks,
)


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge through which gradients reach ``tensor``: its grad_fn or AccumulateGrad.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> tg.autograd.graph.get_gradient_edge(w).node.name()
    'torch::autograd::AccumulateGrad'
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    return GradientEdge(*tensor._edge())


def increment_version(tensor) -> None:
    """Count one more in-place change of ``tensor`` (or of each tensor in a list): for a change
    made behind autograd's back (through ``.data`` or NumPy) that saved copies must notice.
    Inference tensors have no version counter: they are left alone.

    >>> import teachgrad as tg
    >>> x = tg.zeros(2)
    >>> tg.autograd.graph.increment_version(x); x._version
    1
    """
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not t._inference:
            t._counter.bump("increment_version")


def register_multi_grad_hook(tensors, fn, *, mode="all") -> MultiHandle:
    """Call ``fn`` once per backward pass with the gradients of several tensors.

    ``mode="all"``: once the gradients of all ``tensors`` that the pass computes have been
    computed, ``fn(grads)`` gets them as a list, in order, with None for a tensor the pass
    does not reach (not in its graph, or not on a path to the ``inputs`` of ``grad()`` or
    ``backward(inputs=...)``). ``mode="any"``: ``fn(grad)`` gets the first of their gradients
    the pass computes. Returns a handle whose ``remove()`` removes the hook.

    >>> import teachgrad as tg
    >>> a, b = tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True)
    >>> c, d = a * b, a * b
    >>> _ = register_multi_grad_hook((a, b, c, d), lambda gs: print([g is not None for g in gs]))
    >>> c.sum().backward(retain_graph=True)
    [True, True, True, False]
    >>> c.sum().backward(inputs=(a,))
    [True, False, True, False]
    """
    if mode not in ("all", "any"):
        raise ValueError(f"Expects mode to be one of ('all', 'any') but got {mode}")
    if mode == "any":
        first = _first_gradient_of_each_pass(fn)
        return MultiHandle(t.register_hook(first) for t in tensors if t.requires_grad)
    # each tensor's node: its gradient is computed when the pass runs (or catches) that node
    nodes = [t._edge()[0] if t.requires_grad else None for t in tensors]
    if None in nodes:
        raise AssertionError(
            "Expected gradient function to be set\n  Every tensor of mode='all' must require "
            "grad (mode='any' leaves out those that don't)."
        )
    waiting = weakref.WeakKeyDictionary()  # pass -> [gradients still to come, the gradients]

    def gradient_of(k):
        def note(grad) -> None:
            run = _pass_of_hook()
            if run not in waiting:  # the pass's first: how many of the nodes will it reach?
                waiting[run] = [sum(map(will_run, nodes)), [None] * len(nodes)]
            entry = waiting[run]
            entry[0] -= 1
            entry[1][k] = grad
            if entry[0] == 0:
                del waiting[run]
                fn(entry[1])

        return note

    return MultiHandle(t.register_hook(gradient_of(k)) for k, t in enumerate(tensors))


def _first_gradient_of_each_pass(fn):
    """A tensor hook that calls ``fn(grad)`` for the first gradient of each backward pass that
    reaches it (shared by several tensors: ``register_multi_grad_hook(mode="any")``)."""
    passes = weakref.WeakSet()  # the passes fn has been called in

    def first(grad) -> None:
        run = _pass_of_hook()
        if run not in passes:
            passes.add(run)
            fn(grad)

    return first


def _pass_of_hook():
    run = current_pass()
    if run is None:
        raise AssertionError("expected this hook to be called inside a backward call")
    return run


class _Handle:
    """What backward keeps of a tensor saved in an ``allow_mutation_on_saved_tensors`` block:
    a key to the tensor (or its copy), freed with the graph."""


class _MutationsOnSaved:
    """The state of an ``allow_mutation_on_saved_tensors`` block (what ``with`` gives):
    ``original``, the saved tensors as saved, and ``cloned``, copies of those that were then
    about to be changed in place, each by its ``_Handle`` (weakly: freed with the graph);
    ``tid_to_weakhandle``, each saved (tensor, version)'s handle while it lives (torch's names)."""

    def __init__(self):
        self.original = weakref.WeakKeyDictionary()
        self.cloned = weakref.WeakKeyDictionary()
        self._on_memory = {}  # a memory's version counter -> the handles saved on it
        self.tid_to_weakhandle = weakref.WeakValueDictionary()  # (tensor, version) -> handle

    def pack(self, tensor) -> _Handle:
        """One handle per tensor and version, however many nodes save it (as torch's)."""
        key = (id(tensor), tensor._counter.version)  # (original holds the tensor: ids stay)
        handle = self.tid_to_weakhandle.get(key)
        if handle is None:
            handle = self.tid_to_weakhandle[key] = _Handle()
            self.original[handle] = tensor
            self._on_memory.setdefault(tensor._counter, weakref.WeakSet()).add(handle)
        return handle

    def unpack(self, handle):
        if _open_block[:1] != [self]:
            raise AssertionError(
                "Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
                "in which the graph was originally recorded.\n  Run backward inside the block "
                "that ran forward."
            )
        return self.cloned[handle] if handle in self.cloned else self.original[handle]

    def copy_before_change(self, tensor) -> None:
        """``tensor`` is about to change in place: copy what was saved of its memory (views
        share it, and its version counter) the first time."""
        for handle in list(self._on_memory.get(tensor._counter, ())):
            if handle in self.original:
                with no_grad():
                    self.cloned[handle] = self.original.pop(handle).detach().clone()

    def clear(self) -> None:
        self.original.clear()
        self.cloned.clear()
        self._on_memory.clear()
        self.tid_to_weakhandle.clear()


_open_block: list = []  # the open allow_mutation_on_saved_tensors block's state (one at most)


@contextlib.contextmanager
def allow_mutation_on_saved_tensors():
    """A block in which a tensor saved for backward may be changed in place: it is copied just
    before its first change, and backward uses the copy (without the block, backward refuses:
    "modified by an inplace operation"). Run forward and backward in the same block. A change
    through any view of the saved tensor's memory counts (torch's misses a view that starts
    elsewhere in the memory: see docs/differences-from-torch.md).

    >>> import teachgrad as tg
    >>> with tg.autograd.graph.allow_mutation_on_saved_tensors():
    ...     a = tg.ones(2, requires_grad=True)
    ...     b = a.clone()
    ...     out = (b**2).sum()
    ...     _ = b.sin_()  # out's node saved b: b is copied first
    ...     out.backward()
    >>> a.grad
    tensor([2., 2.])
    """
    if _open_block:
        raise RuntimeError(
            "allow_mutation_on_saved_tensors contexts cannot be nested\n  One block at a time: "
            "close the outer one first."
        )
    state = _MutationsOnSaved()
    with saved_tensors_hooks(state.pack, state.unpack):
        _open_block.append(state)
        hooks_in_force.before_change.append(state.copy_before_change)
        try:
            yield state
        finally:
            hooks_in_force.before_change.pop()
            _open_block.pop()
            state.clear()

"""Events: what autograd does, told to whoever listens (a picture, a log, a test).

Recording an op, bumping a version, saving / unpacking / releasing a tensor for
backward, running a backward node, storing a leaf's gradient and calling a hook
each *emit* a small, typed event. Each kind of event knows whether anyone wants it
(``OpRecorded.on``, kept up to date by ``add_listener``): each place checks that once
(``if OpRecorded.on:``), so with nobody listening the engine runs as fast as without
events, and an event nobody wants is never made.

Listen with ``tg.autograd.graph.record()`` (collects the events of a block) or
``tg.autograd.graph.add_listener(fn)`` (calls ``fn(event)`` until removed).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> with tg.autograd.graph.record() as events:
    ...     (x * x).sum().backward()
    >>> [type(e).__name__ for e in events][:3]
    ['OpRecorded', 'SavedTensorPacked', 'SavedTensorPacked']

This module imports nothing from teachgrad, so the lowest layers (the Tensor's
version counter) can emit events too.
"""

from __future__ import annotations

import dataclasses
import itertools
import typing

listeners: list = []  # callables
_kinds: dict = {}  # listener -> the event types it wants (absent: all of them)
_order = itertools.count(1)


@dataclasses.dataclass(slots=True)
class Event:
    """One thing autograd did. ``seq`` orders all events of the process.

    ``on`` (a class attribute of each kind): some listener wants this kind. (Events are
    slotted and not frozen: made cheaply, they are read by listeners and never changed.)
    """

    on: typing.ClassVar[bool] = False
    receivers: typing.ClassVar[tuple] = ()  # the listeners that want this kind, in order
    seq: int


@dataclasses.dataclass(slots=True)
class OpRecorded(Event):
    """Forward: an op ran with grad enabled and created ``node`` (its outputs' grad_fn)."""

    node: object
    outputs: tuple


@dataclasses.dataclass(slots=True)
class VersionBumped(Event):
    """An in-place op changed a storage: its version counter is now ``version``."""

    counter: object
    version: int
    op: str


@dataclasses.dataclass(slots=True)
class SavedTensorPacked(Event):
    """Forward: ``node`` saved a tensor for backward, under ``name``, at ``version``
    (``hooked``: a saved_tensors_hooks pack hook took it)."""

    node: object
    name: str
    version: int
    hooked: bool = False


@dataclasses.dataclass(slots=True)
class SavedTensorUnpacked(Event):
    """Backward: ``node`` read its saved tensor ``name`` (after the version check)."""

    node: object
    name: str


@dataclasses.dataclass(slots=True)
class SavedTensorReleased(Event):
    """Backward: ``node`` has run and freed what it saved (no ``retain_graph``)."""

    node: object


@dataclasses.dataclass(slots=True)
class NodeStarted(Event):
    """Backward: ``node`` is about to run with these gradients of its outputs."""

    node: object
    grad_outputs: tuple


@dataclasses.dataclass(slots=True)
class NodeFinished(Event):
    """Backward: ``node`` ran; ``grad_inputs`` go along its ``next_functions``."""

    node: object
    grad_outputs: tuple
    grad_inputs: tuple


@dataclasses.dataclass(slots=True)
class GradAccumulated(Event):
    """Backward: ``grad`` was added into ``tensor.grad`` (a leaf, or a tensor that retains grad)."""

    tensor: object
    grad: object


@dataclasses.dataclass(slots=True)
class HookFired(Event):
    """A hook ran: ``kind`` is "tensor", "pre", "post" or "post_accumulate"; ``owner`` is
    the tensor or node it was registered on."""

    kind: str
    owner: object
    hook: object


KINDS = (
    OpRecorded,
    VersionBumped,
    SavedTensorPacked,
    SavedTensorUnpacked,
    SavedTensorReleased,
    NodeStarted,
    NodeFinished,
    GradAccumulated,
    HookFired,
)


def emit(event_type, **fields) -> None:
    """Tell every listener that wants this type of event (call only after checking
    ``if event_type.on:``, so that an event nobody wants is never made)."""
    event = event_type(seq=next(_order), **fields)
    for listener in event_type.receivers:  # (a tuple: a listener may remove itself)
        listener(event)


def _update_wanted() -> None:
    """Give each kind its ``receivers`` (and ``on``): the listeners that want it."""
    for kind in KINDS:
        kind.receivers = tuple(fn for fn in listeners if kind in _kinds.get(fn, KINDS))
        kind.on = bool(kind.receivers)


class Listening:
    """What ``add_listener`` returns: ``remove()`` stops the calls (also a context manager)."""

    def __init__(self, fn, kinds=None):
        self.fn = fn
        listeners.append(fn)
        if kinds is not None:
            _kinds[fn] = frozenset(kinds)
        _update_wanted()

    def remove(self) -> None:
        if self.fn in listeners:
            listeners.remove(self.fn)
            if self.fn not in listeners:
                _kinds.pop(self.fn, None)
            _update_wanted()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def add_listener(fn, kinds=None) -> Listening:
    """Call ``fn(event)`` for every autograd event from now on, until ``.remove()``;
    ``kinds`` (event types) limits it to those, and events nobody wants are not made.

    >>> import teachgrad as tg
    >>> seen = []
    >>> handle = tg.autograd.graph.add_listener(lambda e: seen.append(type(e).__name__))
    >>> _ = tg.ones(1, requires_grad=True) * 2
    >>> handle.remove(); seen
    ['OpRecorded']
    >>> x, seen = tg.ones(1, requires_grad=True), []
    >>> with tg.autograd.graph.add_listener(seen.append, kinds=[tg.autograd.graph.NodeStarted]):
    ...     (x * 2).sum().backward()
    >>> [e.node.name() for e in seen]
    ['SumBackward0', 'MulBackward0', 'torch::autograd::AccumulateGrad']
    """
    return Listening(fn, kinds)


class Recording(list):
    """The events of a ``record()`` block, in order; ``of(kind)`` filters by type.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.graph import record, OpRecorded
    >>> with record() as events:
    ...     y = tg.ones(2, requires_grad=True).exp()
    >>> [e.node.name() for e in events.of(OpRecorded)]
    ['ExpBackward0']
    """

    def of(self, kind) -> list:
        return [e for e in self if isinstance(e, kind)]


class record:  # noqa: N801 - a context manager named like torch's lowercase ones
    """Collect every autograd event of a block into a list (a ``Recording``).

    >>> import teachgrad as tg
    >>> x = tg.tensor(1.0, requires_grad=True)
    >>> with tg.autograd.graph.record() as events:
    ...     y = x.exp(); y.backward()
    >>> [type(e).__name__ for e in events]  # doctest: +NORMALIZE_WHITESPACE
    ['OpRecorded', 'SavedTensorPacked', 'NodeStarted', 'SavedTensorUnpacked', 'NodeFinished',
     'SavedTensorReleased', 'NodeStarted', 'GradAccumulated', 'NodeFinished']
    """

    def __enter__(self) -> Recording:
        self.events = Recording()
        self._listening = Listening(self.events.append)
        return self.events

    def __exit__(self, *exc) -> None:
        self._listening.remove()

"""Hooks: the dictionaries that hold them and the handles that remove them.

A tensor, a node and a module each keep their hooks in a ``HookDict`` (by handle id, in
registration order); ``register_hook`` and its relatives return a ``RemovableHandle``.
This module imports nothing from teachgrad, so the Tensor, the tape and ``nn`` all use it.

    >>> hooks = HookDict()
    >>> handle = add_hook(hooks, print); len(hooks)
    1
    >>> handle.remove(); len(hooks)
    0
"""

from __future__ import annotations

import itertools
import weakref


class HookDict(dict):
    """Hooks by handle id, in registration order; weakly referenced by their handles."""


class RemovableHandle:
    """Returned by every ``register_*hook``; ``handle.remove()`` unregisters the hook.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, requires_grad=True)
    >>> h = x.register_hook(lambda g: g * 2); h.remove()
    """

    _next_id = itertools.count()

    def __init__(self, hooks: HookDict):
        self.id = next(RemovableHandle._next_id)
        self._hooks = weakref.ref(hooks)

    def remove(self) -> None:
        hooks = self._hooks()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


class MultiHandle(RemovableHandle):
    """The handle of hooks registered together (``register_multi_grad_hook``): ``remove()``
    removes every one of them.

    >>> hooks = HookDict()
    >>> both = MultiHandle([add_hook(hooks, print), add_hook(hooks, repr)])
    >>> both.remove(); len(hooks)
    0
    """

    def __init__(self, handles):
        self.handles = tuple(handles)

    def remove(self) -> None:
        for handle in self.handles:
            handle.remove()


def hooks_of(owner, attr: str) -> HookDict:
    """``owner.<attr>``, the HookDict stored there, created on first use."""
    hooks = owner.__dict__.get(attr)
    if hooks is None:
        hooks = HookDict()
        setattr(owner, attr, hooks)
    return hooks


def add_hook(hooks: HookDict, fn) -> RemovableHandle:
    """Register ``fn`` in ``hooks`` and return the handle that removes it."""
    if not callable(fn):
        raise TypeError(f"hook must be callable, got {type(fn).__name__}")
    handle = RemovableHandle(hooks)
    hooks[handle.id] = fn
    return handle

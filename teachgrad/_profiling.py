"""Where the profiler plugs into the engine (the profiler itself is ``autograd/profiler.py``).

``Function.apply`` and the backward engine each test ``state.active`` once per op;
only while a ``profile()`` block runs is it True, and then every forward op and every
backward node is timed by ``state.recorder``:

* ``recorder.forward(cls, args, kwargs)`` runs ``cls.apply(*args, **kwargs)`` and times it
  (it sets ``state.bypass`` so that call does not come back here);
* ``recorder.evaluate(node, run, grads)`` times ``run(node, grads)``, the engine's whole
  work on one backward node (hooks included), and returns what it returns;
* ``recorder.backward(node, run, grads, batch)`` times ``run(node, grads, batch)``, that
  node's formula, inside it;
* ``recorder.op(name, fn, args, kwargs)`` times ``fn(*args, **kwargs)``, a public function
  made of several ops that torch counts as one: the ``@recorded_as(name)`` decorator below.

This module imports nothing from teachgrad, so the hot paths can use it freely.
"""

from __future__ import annotations

import functools
import threading


class _State:
    active = False  # a profile() block is recording
    recorder = None
    makers = set()  # recorded_as(..., maker=True): makers of tensors, outside autograd
    _thread = threading.local()

    @property
    def bypass(self) -> bool:
        """The next Function.apply *of this thread* is the recorder's own call: run it plainly."""
        return getattr(self._thread, "bypass", False)

    @bypass.setter
    def bypass(self, value: bool) -> None:
        self._thread.bypass = value

    def takes(self) -> bool:
        """Inside profile(): should the recorder time this Function.apply call? Not the
        recorder's own call (marked with ``bypass``), which runs plainly."""
        if self.bypass:
            self.bypass = False
            return False
        return True


state = _State()


def recorded_as(name: str, maker: bool = False):
    """Decorator: inside a ``profile()``, each call of the function is one op event named
    ``name``, torch's name for it, with the ops it runs inside it as children. A ``maker``
    of tensors (``zeros_like`` ...) takes no part in autograd: its event gets no sequence
    number, even when it is given a tensor, as torch's.

    torch counts ``F.linear`` as one op, ``aten::linear``, that runs ``aten::t`` and
    ``aten::addmm``; teachgrad's ``linear`` is a Python function that runs the ops ``t``
    and ``addmm``. Decorated with ``@recorded_as("aten::linear")`` it reads the same in a profile.
    Outside a profile the cost is one check.

    >>> @recorded_as("aten::twice")
    ... def twice(x):
    ...     return 2 * x
    >>> twice(3), twice.__name__
    (6, 'twice')
    """

    if maker:
        state.makers.add(name)

    def decorate(fn):
        @functools.wraps(fn)
        def call(*args, **kwargs):
            if not state.active:
                return fn(*args, **kwargs)
            return state.recorder.op(name, fn, args, kwargs)

        return call

    return decorate

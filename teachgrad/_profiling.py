"""Where the profiler plugs into the engine (the profiler itself is ``autograd/profiler.py``).

``Function.apply`` and the backward engine each test ``state.active`` once per op;
only while a ``profile()`` block runs is it True, and then every forward op and every
backward node is timed by ``state.recorder``:

* ``recorder.forward(cls, args, kwargs)`` runs ``cls.apply(*args, **kwargs)`` and times it
  (it sets ``state.bypass`` so that call does not come back here);
* ``recorder.backward(node, run, grads, batch)`` times ``run(node, grads, batch)``, one
  backward node, and returns what it returns.

This module imports nothing from teachgrad, so the hot paths can use it freely.
"""

from __future__ import annotations

import threading


class _State:
    active = False  # a profile() block is recording
    recorder = None
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

"""The grader's end of the wire: the student's objects as proxies, backed by the sandbox.

An exercise's ``tests.py`` runs unchanged in the grader process on a namespace of
:class:`~course.grader.wire.Proxy` objects. ``ns["Square"].apply(x)`` sends ``x``'s
numbers to the sandbox, which calls the student's ``Square.apply`` and sends the
output's numbers back; the grader wraps them in a teachgrad Tensor whose ``grad_fn``
(a :class:`~course.grader.wire.RemoteOutput` node) knows the output's handle in the
sandbox, so that

- ``ns["Square"].backward(y.grad_fn, g)`` calls the student's backward on the sandbox's
  own ctx (what ``course.testing.check_function`` does),
- ``y.sum().backward()`` and ``tg.autograd.grad(..., create_graph=True)`` in the grader
  backpropagate through the remote output by asking the sandbox for vector-Jacobian
  products (differentiable ones when a graph is being recorded: double backward),
- the student's instances (a ``Value``, a model) are proxies too: ``a + b``, ``out.data``,
  ``out.backward()`` and ``isinstance(out, Value)`` run in the sandbox, and
- a function of the test's passed to the student's code (``hvp(f, x, v)``) stays here:
  the sandbox calls it back, and backpropagates through it, over the same wire.

Everything the tests then compute (comparisons, finite differences, diagnoses) runs in
the grader process, with the grader's own teachgrad. A message from the sandbox may
also carry ``"engine": [[whose code, entry point], ...]``: the student's code (a
Function's backward, or ``"*"``, any code a test called) called teachgrad's own autograd
or a watched op (see ``child.EngineWatch``); the session collects them for the grader
to judge. The sandbox can only call back the
functions the tests handed it, and ask for the gradients of what they returned.
"""

from __future__ import annotations

import math
import types

from .wire import CANARY_ENTRY, Peer, Proxy, canary_label

# A call back from the sandbox may send this many numbers, and the grader keeps at most
# this many graphs per test for the sandbox's backward: a submission cannot fill its memory.
MAX_CALLBACK_NUMBERS = 1_000_000
MAX_KEPT_OUTPUTS = 1_000

__all__ = ["Session"]


class Session(Peer):
    """The grader's :class:`~course.grader.wire.Peer` for one sandbox; records the calls
    of the student's named objects, which the probe repeats on fresh inputs, and what the
    sandbox says the student's code called of teachgrad's own autograd and ops."""

    def __init__(self, sandbox):
        super().__init__()
        self.sandbox = sandbox
        self.calls = []  # (path, args, kwargs) of each call of a student's name
        self.engine = set()  # (whose code, entry point): that code called the engine
        self.disarmed = False  # a message lacked the watch's canary (child._canary)
        self.made = {}  # handle of a remote output -> the path of the call that made it
        self.backwards_run = set()  # ("Name", "backward") of each output the engine ran back

    @property
    def generation(self):  # no process, or a restarted one: every older object is stale
        return self.sandbox.generation if self.sandbox.proc is not None else -1

    def send(self, message):
        self.sandbox.send(message)

    def receive(self):
        return self.sandbox.receive()

    def take(self):
        message = super().take()
        engine = _engine_calls(message.get("engine"))
        label = canary_label(self.sandbox.nonce)
        self.disarmed |= (label, CANARY_ENTRY) not in engine
        self.engine |= {(whose, entry) for whose, entry in engine if whose != label}
        return message

    def exportable(self, value):
        """Only the tests' own functions cross to the sandbox, to be called back."""
        return isinstance(value, types.FunctionType | types.MethodType)

    def serve_call(self, message):
        if _numbers(message) > MAX_CALLBACK_NUMBERS:
            raise ValueError(f"a call back into the grader may send {MAX_CALLBACK_NUMBERS} numbers")
        if len(self.outputs) >= MAX_KEPT_OUTPUTS:
            raise MemoryError(f"the grader keeps at most {MAX_KEPT_OUTPUTS} outputs for you")
        return super().serve_call(message)

    def namespace(self):
        """The student's names that exist in the sandbox, as proxies, for a new test.

        What the grader kept for the previous test (its functions, the graphs of their
        outputs, the calls it recorded) is released: each test starts with the full
        allowance."""
        self.calls, self.engine, self.disarmed = [], set(), False
        self.made, self.backwards_run = {}, set()
        self.sandbox.ensure_started()
        self.proxies.clear()  # the objects of an earlier process are gone
        for table in (self.objects, self.handles, self.outputs):
            table.clear()
        return {name: self.lookup((name,)) for name in self.sandbox.defined}

    def lookup(self, path):
        """The proxy of the student's ``name.attr.attr`` (a path from :attr:`calls`)."""
        proxy = Proxy(self, {"N": path[0]}, path=(path[0],))
        for attr in path[1:]:
            proxy = getattr(proxy, attr)
        return proxy

    def call(self, fn, args, kwargs):
        path = getattr(fn, "_path", None) if isinstance(fn, Proxy) else None
        if path:
            self.calls.append((path, args, kwargs))
        result = super().call(fn, args, kwargs)
        if path:
            for t in _as_tuple(result):
                remote = getattr(getattr(t, "grad_fn", None), "remote", None)
                if remote is not None:
                    self.made[remote[2]] = path
        return result

    def vjp(self, ctx, grad):
        """(And note whose backward the engine ran: the probe checks it on fresh inputs.)"""
        path = self.made.get(ctx.remote[2])
        if path is not None and len(path) > 1:  # (a Function's apply: its class's backward)
            self.backwards_run.add((*path[:-1], "backward"))
        return super().vjp(ctx, grad)


def _as_tuple(value):
    return tuple(value) if isinstance(value, tuple | list) else (value,)


def _engine_calls(value):
    """The (whose code, entry point) pairs of a message's ``"engine"`` field (untrusted)."""
    if not isinstance(value, list):
        return set()
    pairs = [p for p in value[:100] if isinstance(p, list) and len(p) == 2]
    return {(p[0][:100], p[1][:100]) for p in pairs if all(isinstance(x, str) for x in p)}


def _numbers(value):
    """How many array elements a decoded-to-be message holds."""
    if isinstance(value, dict):
        if "A" in value and isinstance(value.get("shape"), list):
            return math.prod(n for n in value["shape"] if isinstance(n, int))
        return sum(_numbers(v) for v in value.values())
    if isinstance(value, list):
        return sum(_numbers(v) for v in value)
    return 0

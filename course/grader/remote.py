"""Stand-ins for the student's objects, living in the grader, backed by the sandbox.

An exercise's ``tests.py`` runs unchanged in the grader process on a namespace of
:class:`RemoteObject` s: ``ns["Square"].apply(x)`` sends ``x``'s numbers to the
sandbox, which calls the student's ``Square.apply`` and sends the output's numbers
back. The grader wraps them in a teachgrad Tensor whose ``grad_fn`` (a
:class:`RemoteOutput` node) knows the output's handle in the sandbox, so that

- ``ns["Square"].backward(y.grad_fn, g)`` calls the student's backward on the
  sandbox's own ctx (what ``course.testing.check_function`` does), and
- ``y.sum().backward()`` in the grader backpropagates through the remote output by
  asking the sandbox for the vector-Jacobian product.

Everything the tests then compute (comparisons, finite differences, diagnoses) runs
in the grader process, with the grader's own teachgrad.
"""

from __future__ import annotations

import numpy as np

import teachgrad as tg

from .child import pack_array, unpack_array
from .sandbox import SandboxError


class StudentError(Exception):
    """The student's code raised ``kind``; ``message`` is its (truncated) text."""

    def __init__(self, kind, message):
        super().__init__(f"{kind}: {message}")
        self.kind = kind


class RemoteOutput(tg.autograd.Function):
    """The grad_fn of a tensor computed in the sandbox; backward asks the sandbox."""

    @staticmethod
    def forward(ctx, session, handle, values, *inputs):
        ctx.remote = (session, session.sandbox.generation, handle)
        ctx.n_inputs = len(inputs)
        return tg.tensor(values)

    @staticmethod
    def backward(ctx, grad):
        session, _, handle = ctx.remote
        grads = session.vjp(ctx, grad)
        grads = list(grads) + [None] * (ctx.n_inputs - len(grads))
        return (None, None, None, *grads[: ctx.n_inputs])


class Session:
    """Encodes calls for one sandbox and decodes its replies; records calls for probes."""

    def __init__(self, sandbox):
        self.sandbox = sandbox
        self.calls = []  # (path, args, kwargs) of each forward-like call, for the probe

    def namespace(self):
        """The student's names that exist in the sandbox, as RemoteObjects."""
        self.sandbox.ensure_started()
        return {name: RemoteObject(self, (name,)) for name in self.sandbox.defined}

    def call(self, path, args, kwargs):
        inputs = [a for a in _flatten(args) if isinstance(a, tg.Tensor) and a.requires_grad]
        request = {
            "op": "call",
            "path": list(path),
            "args": [self._encode(a) for a in args],
            "kwargs": {k: self._encode(v) for k, v in kwargs.items()},
            "grad": tg.is_grad_enabled(),
        }
        if path[-1] != "backward":
            self.calls.append((tuple(path), args, kwargs))
        return self._decode(self._ask(request), inputs)

    def vjp(self, ctx, grad):
        _, generation, handle = ctx.remote
        self._check_generation(generation)
        reply = self._ask({"op": "vjp", "h": handle, "grad": self._encode(grad)})
        result = self._decode(reply, [])
        return result if isinstance(result, list) else [result]

    def _ask(self, request):
        reply = self.sandbox.request(request)
        if "error" in reply:
            kind, message = str(reply["error"])[:100], str(reply.get("message", ""))[:2000]
            if kind == "NotImplementedError":
                raise NotImplementedError(message)
            raise StudentError(kind, message)
        return reply.get("value")

    def _check_generation(self, generation):
        if generation != self.sandbox.generation or self.sandbox.proc is None:
            raise SandboxError("the submission's process was restarted; its outputs are gone")

    def _encode(self, value):
        if isinstance(value, tg.Tensor):
            packed = pack_array(value.detach().numpy())
            packed.update(T=True, rg=bool(value.requires_grad))
            return packed
        if isinstance(value, np.ndarray):
            return pack_array(value)
        remote = getattr(value, "remote", None)
        if isinstance(remote, tuple) and remote and remote[0] is self:
            self._check_generation(remote[1])
            return {"C": remote[2]}
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, np.integer | np.floating):
            return value.item()
        if isinstance(value, str):
            return {"S": value}
        if isinstance(value, tuple | list):
            return {"L": [self._encode(v) for v in value]}
        raise TypeError(f"the grader cannot send a {type(value).__name__} to the sandbox")

    def _decode(self, value, inputs):
        if isinstance(value, dict):
            if "A" in value:
                array = unpack_array(value)
                if not value.get("T"):
                    return array
                handle = value.get("h")
                if isinstance(handle, int) and inputs and tg.is_grad_enabled():
                    return RemoteOutput.apply(self, handle, array, *inputs)
                return tg.tensor(array)
            if "L" in value and isinstance(value["L"], list):
                return [self._decode(v, inputs) for v in value["L"]]
            if "S" in value:
                return str(value["S"])
            return Foreign(str(value.get("O", "object"))[:100])
        if value is None or isinstance(value, bool | int | float):
            return value
        raise SandboxError("the submission's process sent a value the grader does not know")


class Foreign:
    """A value the student's code returned that is neither a tensor nor a number."""

    def __init__(self, type_name):
        self.type_name = type_name

    def __repr__(self):
        return f"<a {self.type_name} from your code>"


class RemoteObject:
    """``ns[name]`` in the grader: attribute access builds a path, calling it asks the sandbox.

    >>> class FakeSession:
    ...     def call(self, path, args, kwargs):
    ...         return path, args
    >>> RemoteObject(FakeSession(), ("Square",)).apply(3)
    (('Square', 'apply'), (3,))
    """

    def __init__(self, session, path):
        self._session, self._path = session, tuple(path)
        self.__name__ = self.__qualname__ = ".".join(self._path)

    def __getattr__(self, attr):
        if attr.startswith("__") or attr.startswith("_"):
            raise AttributeError(attr)
        return RemoteObject(self._session, (*self._path, attr))

    def __call__(self, *args, **kwargs):
        return self._session.call(self._path, args, kwargs)

    def __repr__(self):
        return f"<student's {self.__name__}>"


def _flatten(values):
    for value in values:
        if isinstance(value, tuple | list):
            yield from _flatten(value)
        else:
            yield value

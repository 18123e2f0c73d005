"""The wire between the grader and a sandbox: values, remote objects, remote autograd.

The grader and the sandboxed submission each hold a :class:`Peer`. A peer *asks* the
other to call something and *answers* what it is asked, one JSON line per message::

    {"ask": 7, "op": "call", "fn": VALUE, "args": [...], "kwargs": {...}, "grad": true}
    {"ask": 8, "op": "vjp", "h": 3, "grad": VALUE, "create_graph": false}
    {"re": 7, "value": VALUE}      or      {"re": 7, "error": "TypeError", "message": "..."}

While a peer waits for its answer it answers the other's questions, so calls nest: the
grader calls the student's ``hvp(f, x, v)``; inside, ``f(x)`` calls back into the grader
(``f`` is the grader's), and the student's backward through ``f`` asks the grader again.

A VALUE is a JSON number, bool, null, or one of

- ``{"A": base64, "dtype", "shape"}`` -- a NumPy array; with ``"T"`` a tensor, ``"rg"`` its
  requires_grad and ``"h"`` a handle when the sender keeps its graph for a backward;
- ``{"L": [...]}``, ``{"D": [[key, value], ...]}``, ``{"S": "text"}``;
- ``{"R": n, "cls": [...]}`` -- an object of the sender's; the receiver gets a :class:`Proxy`;
- ``{"Y": n}`` -- an object of the receiver's, sent back; ``{"C": n}`` -- the ctx
  (``grad_fn``) of the receiver's output ``n``;
- ``{"N": "Square"}``, ``{"B": "add"}`` -- a name of the student's, a builtin operation
  (only the sandbox's peer serves these two).

Autograd crosses the wire: a tensor that comes back with ``"h"`` becomes the output of a
:class:`RemoteOutput` node whose backward asks the sender for the vector-Jacobian
product -- with ``create_graph`` when the engine is recording, so double backward works.
When that node dies, the next message carries ``"drop": [h, ...]`` and the sender frees
the graph it kept: each side holds only what the other still uses.

This module imports only numpy and teachgrad: the sandbox loads it by its file path.

>>> import numpy as np
>>> a = np.arange(6.0).reshape(2, 3)
>>> bool((unpack_array(pack_array(a)) == a).all())
True
"""

from __future__ import annotations

import base64
import builtins
import operator
import sys
import types
import weakref

import numpy as np

import teachgrad as tg

DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
MAX_ELEMENTS = 10_000_000
MAX_ITEMS = 100_000  # a generator is sent as a list of at most this many items

# What the sandbox's peer lets the grader do to the student's objects (a Proxy's
# attribute reads and operators), each a plain Python operation on real objects.
BUILTINS = {
    name: getattr(operator, name)
    for name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul")
    + ("neg", "pos", "abs", "lt", "le", "gt", "ge", "getitem", "contains", "index")
}
BUILTINS |= {f.__name__: f for f in (getattr, float, int, bool, len, list, repr, str)}
BUILTINS |= {"isinstance": isinstance, "asarray": np.asarray}


class WireError(Exception):
    """The conversation broke: a malformed message, an unknown handle, a stale object."""


class RemoteError(Exception):
    """The other side's code raised ``kind``; see :func:`remote_error`."""

    kind = "Exception"


def canary_label(nonce: str) -> str:
    """Whose code the sandbox notes its canary's backward as (``child._canary``): this run's
    own name, which no submission's Function has. The grader expects ``CANARY_ENTRY`` under
    it in every message.

    >>> canary_label("0123456789abcdef")
    'canary 0123456789ab'
    """
    return f"canary {nonce[:12]}"


CANARY_ENTRY = "engine._execute"  # what every backward runs, whatever the way in
COMPLEX_ENTRY = "complex numbers"  # noted for a call that reaches them (complex_step.py)


def remote_error(kind, message):
    """An exception for the peer's ``kind`` error: a builtin kind keeps its class, so
    ``except RuntimeError`` in a test catches the student's RuntimeError.

    >>> err = remote_error("KeyError", "no such key")
    >>> isinstance(err, KeyError), isinstance(err, RemoteError), type(err).__name__
    (True, True, 'KeyError')
    """
    kind, message = str(kind)[:100], str(message)[:2000]
    base = getattr(builtins, kind, None)
    bases = (RemoteError,)
    if isinstance(base, type) and issubclass(base, Exception) and base is not Exception:
        bases += (base,)
    try:
        error = _error_classes.setdefault(kind, type(kind, bases, {"kind": kind}))(message)
    except TypeError:  # an exception class whose constructor wants more arguments
        error = RemoteError(f"{kind}: {message}")
    error.kind = kind
    return error


_error_classes = {}


def pack_array(array):
    """A NumPy array as a JSON-ready dict: ``{"A": base64 bytes, "dtype", "shape"}``."""
    array = np.asarray(array).copy(order="C")  # keeps 0-d arrays 0-d
    if array.dtype.name not in DTYPES:
        array = array.astype(np.float64)
    data = base64.b64encode(array.tobytes()).decode("ascii")
    return {"A": data, "dtype": array.dtype.name, "shape": list(array.shape)}


def unpack_array(packed):
    """The array :func:`pack_array` packed; checks dtype, shape and size (untrusted input)."""
    dtype, shape = packed["dtype"], packed["shape"]
    if dtype not in DTYPES or not isinstance(shape, list) or len(shape) > 32:
        raise WireError(f"bad array header: dtype={dtype!r} shape={shape!r}")
    if not all(isinstance(n, int) and 0 <= n <= MAX_ELEMENTS for n in shape):
        raise WireError(f"bad array shape {shape!r}")
    data = base64.b64decode(packed["A"], validate=True)
    count = int(np.prod(shape, dtype=np.int64)) if shape else 1
    if count > MAX_ELEMENTS or len(data) != count * np.dtype(dtype).itemsize:
        raise WireError(f"array data does not match shape {shape} and dtype {dtype}")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


def grad_inputs(args, kwargs):
    """The tensors among a call's arguments that require grad, in one agreed order."""
    found = []

    def visit(value):
        if isinstance(value, tg.Tensor):
            if value.requires_grad:
                found.append(value)
        elif isinstance(value, tuple | list):
            for v in value:
                visit(v)

    visit(list(args) + list(kwargs.values()))
    return found


class Builtin:
    """A builtin operation named in a call (``{"B": name}``), run by the sandbox."""

    def __init__(self, name):
        self.name = name


class Peer:
    """One end of the wire: encodes and decodes values, asks, answers.

    Subclasses provide the transport (:meth:`send`, :meth:`receive`) and the policy:
    ``namespace`` (names the other side may use, or None), ``builtins`` (operations it
    may ask for) and :meth:`exportable` (what may be sent as a reference)."""

    namespace = None
    builtins = {}
    generation = 0  # a restarted peer has a new generation: older objects are stale
    shielded = Exception  # errors an answer reports instead of raising ...
    fatal = (WireError,)  # ... except these: a broken conversation is not an answer

    def __init__(self):
        self.objects = {}  # handle -> an object of ours the other side holds a Proxy of
        self.handles = {}  # id(object) -> handle: the same object keeps one handle
        self.outputs = {}  # handle -> (tensor, the call's inputs): graphs kept for vjp
        self.proxies = {}  # the other side's handle -> our Proxy of it
        self.asked = 0
        self.kept = 0
        self.released = []  # handles of the other side's outputs we no longer hold

    # ------------------------------------------------------------ the transport

    def send(self, message):
        raise NotImplementedError

    def receive(self):
        raise NotImplementedError

    def exportable(self, value):
        return True

    def post(self, message):
        """Send ``message``, telling the other side which of its outputs we let go of."""
        if self.released:
            message, self.released = dict(message, drop=self.released), []
        self.send(message)

    def take(self):
        """The next message; the outputs of ours it says were let go of are freed here."""
        message = self.receive()
        if not isinstance(message, dict):
            raise WireError("a message that is not an object")
        for handle in list(message.get("drop", []))[:100_000]:
            if isinstance(handle, int):
                self.outputs.pop(handle, None)
        return message

    def release(self, generation, handle):
        """A RemoteOutput node of ours died: its graph over there can go (next message)."""
        if generation == self.generation:
            self.released.append(handle)

    def serve_forever(self):
        """Answer the other side's requests, one after another (the sandbox's main loop)."""
        while True:
            self.post(self.answer(self.take()))

    # ------------------------------------------------------------ asking

    def ask(self, op, **fields):
        """Send a request and answer the other side's requests until ours is answered."""
        self.asked += 1
        number = self.asked
        self.post({"ask": number, "op": op, **fields})
        while True:
            message = self.take()
            if "ask" in message:
                self.post(self.answer(message))
            elif message.get("re") != number:
                raise WireError("an answer out of turn")
            elif "error" in message:
                raise remote_error(message["error"], message.get("message", ""))
            else:
                return message.get("value")

    def call(self, fn, args, kwargs):
        """``fn(*args, **kwargs)`` on the other side; outputs connect to our ``args``."""
        inputs = grad_inputs(args, kwargs)
        value = self.ask(
            "call",
            fn=self.encode(fn),
            args=[self.encode(a) for a in args],
            kwargs={str(k): self.encode(v) for k, v in kwargs.items()},
            grad=tg.is_grad_enabled(),
        )
        return self.decode(value, inputs)

    def operate(self, name, *args):
        """A builtin operation (``"add"``, ``"getattr"`` ...) on the other side."""
        return self.call(Builtin(name), args, {})

    def vjp(self, ctx, grad):
        """The gradients of a :class:`RemoteOutput`'s inputs, asked of its maker."""
        _, generation, handle = ctx.remote
        self.check(generation)
        create_graph = tg.is_grad_enabled()  # the engine records: double backward
        value = self.ask("vjp", h=handle, grad=self.encode(grad), create_graph=create_graph)
        grads = self.decode(value, grad_inputs([*ctx.inputs, grad], {}) if create_graph else [])
        grads = list(grads) if isinstance(grads, list) else [grads]
        return (grads + [None] * len(ctx.inputs))[: len(ctx.inputs)]

    def check(self, generation):
        if generation != self.generation:
            raise WireError("the other process was restarted: objects from before are gone")

    # ------------------------------------------------------------ answering

    def answer(self, message):
        """The reply to one request; the requested code's errors are reported, not raised."""
        number = message.get("ask")
        try:
            if message.get("op") == "call":
                value = self.serve_call(message)
            elif message.get("op") == "vjp":
                value = self.serve_vjp(message)
            else:
                raise WireError(f"unknown request {message.get('op')!r}")
        except self.fatal:
            raise
        except self.shielded as exc:
            return {"re": number, "error": type(exc).__name__, "message": str(exc)[:2000]}
        return {"re": number, "value": value}

    def serve_call(self, message):
        fn = self.decode(message["fn"])
        args = [self.decode(a) for a in message.get("args", [])]
        kwargs = {str(k): self.decode(v) for k, v in dict(message.get("kwargs", {})).items()}
        if not callable(fn):
            raise TypeError(f"{type(fn).__name__} object is not callable")
        with tg.set_grad_enabled(bool(message.get("grad"))):
            result = fn(*args, **kwargs)
        return self.encode(result, grad_inputs(args, kwargs))

    def serve_vjp(self, message):
        output, inputs = self._lookup(self.outputs, message.get("h"), "output")
        create_graph = bool(message.get("create_graph"))
        grad = self.decode(message.get("grad"))
        grads = tg.autograd.grad(
            output, inputs, grad, retain_graph=True, create_graph=create_graph, allow_unused=True
        )
        return self.encode(list(grads), grad_inputs([*inputs, grad], {}) if create_graph else [])

    # ------------------------------------------------------------ values

    def encode(self, value, inputs=()):
        """``value`` as a VALUE; a tensor that requires grad and depends on ``inputs`` (the
        call's own arguments) keeps its graph here, under a handle, for later vjps."""
        if isinstance(value, tg.Tensor):
            packed = pack_array(value.detach().numpy())
            packed.update(T=True, rg=bool(value.requires_grad))
            if inputs and value.requires_grad:
                packed["h"] = self._keep(self.outputs, (value, list(inputs)))
            return packed
        if isinstance(value, Proxy) and value._peer is self:
            self.check(value._generation)
            return value._ref
        if isinstance(value, Builtin):
            return {"B": value.name}
        if isinstance(value, np.ndarray):
            return pack_array(value)
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, np.generic):
            return value.item() if isinstance(value.item(), bool | int | float) else str(value)
        if isinstance(value, str):
            return {"S": value[:10_000]}
        if isinstance(value, tuple | list):
            return {"L": [self.encode(v, inputs) for v in value]}
        if isinstance(value, dict):
            return {"D": [[self.encode(k), self.encode(v, inputs)] for k, v in value.items()]}
        if isinstance(value, types.GeneratorType | range | type({}.keys()) | type({}.values())):
            return {"L": [self.encode(v, inputs) for _, v in zip(range(MAX_ITEMS), value)]}
        remote = _ctx_remote(value)
        if remote is not None and remote[0] is self:
            self.check(remote[1])
            return {"C": remote[2]}
        if not self.exportable(value):
            raise TypeError(f"a {type(value).__name__} cannot be sent to the other process")
        handle = self.handles.get(id(value))
        if handle is None or self.objects.get(handle) is not value:
            handle = self.handles[id(value)] = self._keep(self.objects, value)
        return {"R": handle, "cls": [_class_name(c) for c in type(value).__mro__][:20]}

    def decode(self, value, inputs=()):
        """A VALUE as a Python value; tensors with a handle connect to ``inputs``."""
        if not isinstance(value, dict):
            if value is None or isinstance(value, bool | int | float):
                return value
            raise WireError(f"a value of kind {type(value).__name__}")
        if "A" in value:
            array = unpack_array(value)
            if not value.get("T"):
                return array
            if "h" in value and inputs and tg.is_grad_enabled():
                return RemoteOutput.apply(self, value["h"], array, *inputs)
            grad = bool(value.get("rg")) and array.dtype.kind == "f"
            return tg.tensor(array, requires_grad=grad)
        if "L" in value:
            return [self.decode(v, inputs) for v in list(value["L"])]
        if "D" in value:
            return {self.decode(k): self.decode(v, inputs) for k, v in list(value["D"])}
        if "S" in value:
            return str(value["S"])
        if "R" in value:
            return self.proxy(value)
        if "Y" in value:
            return self._lookup(self.objects, value["Y"], "object")
        if "C" in value:
            return self._lookup(self.outputs, value["C"], "output")[0].grad_fn
        if "N" in value and self.namespace is not None and value["N"] in self.namespace:
            return self.namespace[value["N"]]
        if "B" in value and value["B"] in self.builtins:
            return self.builtins[value["B"]]
        raise WireError(f"a value this side does not serve: {sorted(value)[:5]}")

    def proxy(self, value):
        """Our one Proxy of the other side's object ``{"R": handle, "cls": [...]}``."""
        handle = value["R"]
        if not isinstance(handle, int):
            raise WireError("a reference without a handle")
        if handle not in self.proxies:
            classes = [str(c)[:200] for c in list(value.get("cls", []))[:20]]
            self.proxies[handle] = Proxy(self, {"Y": handle}, classes=classes)
        return self.proxies[handle]

    def _keep(self, table, entry):
        self.kept += 1  # never reused, even when a table is cleared
        table[self.kept] = entry
        return self.kept

    @staticmethod
    def _lookup(table, handle, what):
        if not isinstance(handle, int) or handle not in table:
            raise WireError(f"no {what} with handle {handle!r} here")
        return table[handle]


def _ctx_remote(value):
    """``ctx.remote`` when ``value`` is the grad_fn of a RemoteOutput, else None."""
    if not isinstance(value, tg.autograd.graph.Node):
        return None
    remote = vars(value).get("remote")
    return remote if isinstance(remote, tuple) and len(remote) == 3 else None


def _class_name(cls):
    return f"{cls.__module__}:{cls.__qualname__}"


def local_class(names):
    """The first teachgrad class (not a Tensor) among ``"module:qualname"`` names that is
    already loaded here: what a Proxy claims to be for ``isinstance``. Nothing is imported.

    >>> local_class(["__main__:MLP", "teachgrad.nn.modules.module:Module"]).__name__
    'Module'
    """
    for name in names:
        module_name, _, qualname = name.partition(":")
        module = sys.modules.get(module_name) if module_name.startswith("teachgrad.") else None
        for part in qualname.split(".") if module else ():
            module = getattr(module, part, None) if not part.startswith("_") else None
        if isinstance(module, type) and not issubclass(module, tg.Tensor):
            return module
    return None


class RemoteOutput(tg.autograd.Function):
    """A tensor the other side computed from our ``inputs``; backward asks it for the VJP."""

    @staticmethod
    def forward(ctx, peer, handle, values, *inputs):
        ctx.remote = (peer, peer.generation, handle)
        ctx.inputs = inputs
        weakref.finalize(ctx, peer.release, peer.generation, handle)
        return tg.tensor(values)

    @staticmethod
    def backward(ctx, grad):
        return (None, None, None, *ctx.remote[0].vjp(ctx, grad))


class Proxy:
    """An object that lives in the other process.

    Attribute reads, calls, operators, ``len``/``iter``/``float``/``repr`` and
    ``isinstance(x, proxy)`` are asked of the other side, where they run on the real
    object; the same remote object always has the same Proxy, so ``is`` works. A proxy
    with a ``path`` (a name of the student's, and attributes of it) caches the objects it
    reads, so ``Square.apply`` costs one round trip, not one per call.
    """

    def __init__(self, peer, ref, *, path=None, classes=()):
        self._peer, self._ref, self._path, self._classes = peer, ref, path, classes
        self._generation = peer.generation
        self._cache = {}
        self.__name__ = ".".join(path) if path else (classes or ["object"])[0].split(":")[-1]

    def __getattr__(self, attr):
        if attr.startswith("_"):
            raise AttributeError(attr)
        if attr in self._cache:
            return self._cache[attr]
        value = self._peer.operate("getattr", self, attr)
        if self._path is not None and isinstance(value, Proxy):
            if value._path is None:
                value._path = (*self._path, attr)
            self._cache[attr] = value
        return value

    @property
    def __class__(self):  # isinstance(model, tg.nn.Module) for the student's Module
        return local_class(self._classes) or Proxy

    def __call__(self, *args, **kwargs):
        return self._peer.call(self, args, kwargs)

    def __instancecheck__(self, obj):
        try:
            return bool(self._peer.operate("isinstance", obj, self))
        except TypeError:  # obj cannot cross the wire, so it is not one of theirs
            return False

    def __repr__(self):
        try:
            text = self._peer.operate("repr", self)
        except Exception:  # noqa: BLE001 - a repr must not fail inside an error message
            text = None
        return text[:1000] if isinstance(text, str) else f"<{self.__name__} of the other process>"

    def __iter__(self):
        return iter(self._peer.operate("list", self))

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._peer.operate("asarray", self), dtype=dtype)


def _operation(name, reflected=False):
    if reflected:
        return lambda self, other: self._peer.operate(name, other, self)
    return lambda self, *others: self._peer.operate(name, self, *others)


for _name in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul"):
    setattr(Proxy, f"__{_name}__", _operation(_name))
    setattr(Proxy, f"__r{_name}__", _operation(_name, reflected=True))
for _name in ("neg", "pos", "abs", "lt", "le", "gt", "ge", "getitem", "contains", "index"):
    setattr(Proxy, f"__{_name}__", _operation(_name))
for _name in ("float", "int", "bool", "len", "str"):
    setattr(Proxy, f"__{_name}__", _operation(_name))

"""The wire between grader and sandbox (course.grader.wire), on two in-process peers.

A "student" peer serves a namespace and the builtins from a thread; the "grader" peer
serves only what it exported. Messages go through JSON as they do over the pipes.
"""

import contextlib
import json
import queue
import threading

import numpy as np
import pytest

import teachgrad as tg
from course.grader.wire import BUILTINS, Peer, Proxy, RemoteError, WireError


class QueuePeer(Peer):
    def __init__(self, inbox, outbox):
        super().__init__()
        self.inbox, self.outbox = inbox, outbox

    def send(self, message):
        self.outbox.put(json.dumps(message))

    def receive(self):
        return json.loads(self.inbox.get(timeout=20))


class Hangup(Exception):
    pass


class StudentPeer(QueuePeer):
    builtins = BUILTINS
    shielded = BaseException
    fatal = ()

    def __init__(self, inbox, outbox, namespace):
        super().__init__(inbox, outbox)
        self.namespace = namespace

    def receive(self):
        raw = self.inbox.get(timeout=60)
        if raw is None:
            raise Hangup
        return json.loads(raw)


class GraderPeer(QueuePeer):
    def exportable(self, value):
        return callable(value) and not isinstance(value, type)

    def names(self):
        return {n: Proxy(self, {"N": n}, path=(n,)) for n in self.student.namespace}


STUDENT_CODE = """
import teachgrad as tg

class Cube(tg.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return 3 * x * x * grad

class Value:
    def __init__(self, data, parents=()):
        self.data, self.parents = data, tuple(parents)

    def __add__(self, other):
        other = other if isinstance(other, Value) else Value(other)
        return Value(self.data + other.data, (self, other))

    __radd__ = __add__

    def __repr__(self):
        return f"Value({self.data})"

def hvp(f, x, v):
    x = x.detach().requires_grad_()
    (g,) = tg.autograd.grad(f(x), x, create_graph=True)
    (hv,) = tg.autograd.grad(g, x, grad_outputs=v)
    return hv

def answers():
    return {"a": True, "b": [1, 2.5, "three"], "c": None}

def make_model():
    return tg.nn.Sequential(tg.nn.Linear(3, 2))

def todo():
    raise NotImplementedError("write me")

def fails(kind):
    raise {"runtime": RuntimeError, "key": KeyError, "exit": SystemExit}[kind]("planted")
"""


@pytest.fixture
def peers():
    to_student, to_grader = queue.Queue(), queue.Queue()
    namespace = {}
    exec(STUDENT_CODE, namespace)
    student = StudentPeer(to_student, to_grader, namespace)
    grader = GraderPeer(to_grader, to_student)
    grader.student = student

    def serve():
        with contextlib.suppress(Hangup):
            student.serve_forever()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield grader, student
    to_student.put(None)
    thread.join(timeout=5)


def test_a_remote_function_connects_to_the_graders_graph(peers):
    grader, _ = peers
    cube = grader.names()["Cube"]
    x = tg.tensor([0.5, -1.0, 2.0], dtype=tg.float64, requires_grad=True)
    y = cube.apply(x)
    assert type(y.grad_fn).__name__ == "RemoteOutputBackward"
    assert np.allclose(y.detach().numpy(), x.detach().numpy() ** 3)
    (g,) = tg.autograd.grad((y * y).sum(), x, create_graph=True)
    assert np.allclose(g.detach().numpy(), 6 * x.detach().numpy() ** 5)
    (h,) = tg.autograd.grad(g.sum(), x)  # through the student's backward, differentiated
    assert np.allclose(h.numpy(), 30 * x.detach().numpy() ** 4)
    assert tg.autograd.gradgradcheck(cube.apply, (x,))


def test_student_objects_keep_identity_operators_and_isinstance(peers):
    grader, _ = peers
    value = grader.names()["Value"]
    a, b = value(1.5), value(-0.5)
    out = a + b
    assert isinstance(out, value) and not isinstance(2.0, value)
    assert out.data == 1.0 and type(out.data) is float
    assert out.parents[0] is a and out.parents[1] is b  # one proxy per remote object
    assert (2 + a).data == 3.5  # int + Value runs Value.__radd__ over there
    assert repr(out) == "Value(1.0)"
    assert len(out.parents) == 2 and [p.data for p in out.parents] == [1.5, -0.5]


def test_values_cross_as_python_values(peers):
    grader, _ = peers
    assert grader.names()["answers"]() == {"a": True, "b": [1, 2.5, "three"], "c": None}


def test_a_student_module_passes_isinstance_and_runs_over_there(peers):
    grader, _ = peers
    model = grader.names()["make_model"]()
    assert isinstance(model, tg.nn.Module) and not isinstance(model, tg.Tensor)
    params = list(model.parameters())
    assert [tuple(p.shape) for p in params] == [(2, 3), (2,)]
    with tg.no_grad():
        out = model(tg.ones(4, 3))
    assert out.shape == (4, 2) and out.grad_fn is None


def test_a_grader_function_is_called_back_and_differentiated_twice(peers):
    grader, _ = peers
    calls = []

    def quartic(x):
        calls.append(tuple(x.shape))
        return (x**4).sum() / 4

    x, v = tg.tensor([1.0, -2.0, 0.5], dtype=tg.float64), tg.tensor([0.3, 1.0, -1.0])
    hv = grader.names()["hvp"](quartic, x, v)
    assert np.allclose(hv.numpy(), 3 * x.numpy() ** 2 * v.numpy())
    assert calls == [(3,)]  # f ran here, in the grader


def test_student_errors_keep_their_builtin_class(peers):
    grader, _ = peers
    fails = grader.names()["fails"]
    with pytest.raises(RuntimeError, match="planted") as info:
        fails("runtime")
    assert isinstance(info.value, RemoteError)
    with pytest.raises(KeyError):
        fails("key")
    with pytest.raises(RemoteError) as info:  # reported, but not an exit of the grader
        fails("exit")
    assert info.value.kind == "SystemExit" and not isinstance(info.value, SystemExit)
    with pytest.raises(NotImplementedError, match="write me"):
        grader.names()["todo"]()
    with pytest.raises(AttributeError):
        grader.names()["Value"].nonexistent


def test_the_grader_serves_only_what_it_exported(peers):
    grader, student = peers

    def f(x):
        return x * 2

    # requests as a malicious submission could send them from the sandbox
    refused = []
    for fn in ({"B": "getattr"}, {"N": "f"}, {"Y": 12345}, {"C": 0}, {"X": 1}):
        message = {"ask": 1, "op": "call", "fn": fn, "args": [], "kwargs": {}}
        refused.append(_answer_in_grader(grader, message))
    assert all("error" in reply for reply in refused)
    handle = grader.encode(f)["R"]  # an exported function is callable by its handle ...
    ok = _answer_in_grader(grader, {"ask": 2, "op": "call", "fn": {"Y": handle}, "args": [3]})
    assert ok["value"] == 6
    with pytest.raises(TypeError, match="cannot be sent"):
        grader.encode(object())  # ... but no other object of the grader's crosses


def _answer_in_grader(grader, message):
    try:
        return grader.answer(message)
    except WireError as exc:
        return {"error": "WireError", "message": str(exc)}


def test_an_output_graph_is_kept_while_used_and_dropped_after(peers):
    grader, student = peers
    cube = grader.names()["Cube"]
    x = tg.tensor([0.5, -1.0], dtype=tg.float64, requires_grad=True)
    y = cube.apply(x)
    held = len(student.outputs)
    assert held >= 1  # the student's side keeps y's graph for the grader's backward
    y.sum().backward()
    del y
    assert grader.operate("len", [1, 2]) == 2  # the next message carries the drop
    assert len(student.outputs) == held - 1

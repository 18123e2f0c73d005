"""A ``backward()`` nothing watches (``engine._Quiet``): gradients travel between the nodes as
arrays, and the leaves get what the engine's loop on Tensors gives them, bit for bit.

The loop on Tensors is the one ``backward_steps`` runs (its caller sees every gradient, so
its pass is never quiet): exhausting it is ``backward()`` by definition. Each program below
runs both ways on fresh leaves, and the leaves' gradients (values, dtypes, strides) and
what the hooks saw must be the same.
"""

import contextlib
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad import _events
from teachgrad.autograd import engine
from tests.teachgrad.autograd._port import times_two


def _rng():  # (each run of a program makes the same numbers)
    return np.random.default_rng(7)


def _chain(seen):  # benchmarks/bench.py (a), short: * 0.9, + c, tanh, exp on 4 floats
    x = tg.tensor(_rng().standard_normal(4), dtype=tg.float32, requires_grad=True)
    c = tg.tensor(_rng().standard_normal(4), dtype=tg.float32)
    y = x
    for _ in range(5):
        y = ((y * 0.9 + c).tanh()).exp()
    return (x,), y.sum()


def _fan_out(seen):  # a leaf used twice, a node feeding two: gradients added up
    x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x.tanh()
    return (x,), (h * h + h.exp() * x).sum()


def _outputs_left_unused(seen):  # unbind's third output unused: a None among its gradients
    x = tg.tensor(_rng().standard_normal((3, 2)), requires_grad=True)
    a, b, _ = x.unbind()
    return (x,), (a * b + b.cos()).sum()


def _mixed_dtypes(seen):  # a node whose formula runs on Tensors (torch's promotion decides)
    a = tg.tensor(_rng().standard_normal(3), dtype=tg.float32, requires_grad=True)
    b = tg.tensor(2.5, dtype=tg.float64, requires_grad=True)
    return (a, b), (a * b).exp().sum()


def _custom_function(seen):  # a custom backward: the user's code, on Tensors
    x = tg.tensor([0.5, -1.0], requires_grad=True)
    return (x,), times_two(tg, True)(x.sin()).exp().sum()


def _linear_and_cross_entropy(seen):  # nn: a transposed product, a summed-back bias
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(4, 5), tg.nn.ReLU(), tg.nn.Linear(5, 3))
    x = tg.tensor(_rng().standard_normal((6, 4)), dtype=tg.float32)
    loss = tg.nn.functional.cross_entropy(model(x), tg.tensor([0, 1, 2, 0, 1, 2]))
    return tuple(model.parameters()), loss


def _in_place_on_a_view(seen):  # CopySlices: a node of no built-in op's class
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * 1
    y[1:].mul_(x[:2].exp())
    return (x,), (y * y).sum()


def _hooks(seen):  # a tensor hook, retain_grad, a node's pre- and post-hooks, a leaf's hook
    x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
    h = x.exp()
    h.register_hook(lambda g: seen.append(("tensor", type(g), g.tolist())) or g * 2)
    h.retain_grad()
    y = h.sin()
    y.grad_fn.register_prehook(lambda gs: seen.append(("pre", type(gs[0]), gs[0].tolist())))
    y.grad_fn.register_hook(lambda gi, go: seen.append(("post", type(gi[0]), gi[0].tolist())))
    x.register_hook(lambda g: seen.append(("leaf", type(g), g.tolist())))
    seen.append(h)  # (its .grad, once backward ran)
    return (x,), (y * x).sum()


def _retained_and_run_again(seen):  # retain_graph, then a second pass that accumulates
    x = tg.tensor([0.5, -1.0], requires_grad=True)
    return (x,), (x.exp() * x).sum()  # (_gradients runs backward on it twice)


PROGRAMS = {
    "a chain of elementwise ops": _chain,
    "a fan-out": _fan_out,
    "outputs left unused": _outputs_left_unused,
    "mixed dtypes": _mixed_dtypes,
    "a custom Function": _custom_function,
    "linear layers and cross_entropy": _linear_and_cross_entropy,
    "an in-place op on a view": _in_place_on_a_view,
    "hooks": _hooks,
    "retain_graph and a second pass": _retained_and_run_again,
}


def _gradients(program, run):
    """Run ``program`` with ``run(loss, retain_graph)``; what the leaves and hooks got."""
    seen = []
    leaves, loss = program(seen)
    again = program is _retained_and_run_again
    run(loss, again)
    if again:
        run(loss, False)
    grads = [(p.grad.cpu().numpy().copy(), p.grad.dtype, p.grad.stride()) for p in leaves]
    return grads, [s.grad.tolist() if isinstance(s, tg.Tensor) else s for s in seen]


def _by_steps(loss, retain_graph):
    for _ in tg.autograd.backward_steps(loss, retain_graph=retain_graph):
        pass


def _quiet_nodes(monkeypatch):
    """The nodes ``_Quiet`` runs, counted."""
    ran, real = [], engine._Quiet.node
    monkeypatch.setattr(engine._Quiet, "node", lambda *a: ran.append(1) or real(*a))
    return ran


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_a_quiet_backward_gives_the_loops_gradients_bit_for_bit(monkeypatch, program):
    by_steps = _gradients(program, _by_steps)
    ran = _quiet_nodes(monkeypatch)
    quiet = _gradients(program, lambda loss, keep: loss.backward(retain_graph=keep))
    assert ran, "backward() ran no quiet pass"
    for (a, a_dtype, a_strides), (b, b_dtype, b_strides) in zip(*(quiet[0], by_steps[0])):
        np.testing.assert_array_equal(a, b, strict=True)
        assert (a_dtype, a_strides) == (b_dtype, b_strides)
    assert quiet[1] == by_steps[1]  # hooks saw Tensors, of the same values, in a quiet pass too


WATCHED = {
    "create_graph": lambda: contextlib.nullcontext({"create_graph": True}),
    "inputs": lambda: contextlib.nullcontext({"inputs": "x"}),
    "profile()": lambda: _no_options(tg.autograd.profiler.profile()),
    "a node event listener": lambda: _no_options(
        tg.autograd.graph.add_listener(lambda e: None, kinds=[_events.NodeStarted])
    ),
    "a listener of saved tensors unpacked": lambda: _no_options(
        tg.autograd.graph.add_listener(lambda e: None, kinds=[_events.SavedTensorUnpacked])
    ),
    "anomaly mode": lambda: _no_options(tg.autograd.detect_anomaly()),
    "a forward-mode level": lambda: _no_options(tg.autograd.forward_ad.dual_level()),
}


@contextlib.contextmanager
def _no_options(context):
    with context:
        yield {}


@pytest.mark.parametrize("how", WATCHED.keys())
def test_a_backward_someone_may_watch_is_not_quiet(monkeypatch, how):
    """A graph of the gradient, a pass towards inputs, the profiler, event listeners (anomaly
    mode is one), or a forward-mode level: the gradients stay Tensors."""
    ran = _quiet_nodes(monkeypatch)
    x = tg.tensor([0.5, -1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (anomaly mode and create_graph warn)
        with WATCHED[how]() as options:
            options = {k: [x] if v == "x" else v for k, v in options.items()}
            (x.exp() * x).sum().backward(**options)
    assert ran == []
    np.testing.assert_allclose(x.grad.detach().cpu().numpy(), (np.exp([0.5, -1.0]) * [1.5, 0.0]))


def test_user_code_in_a_quiet_pass_cannot_switch_grad_mode_for_the_next_nodes():
    """A saved tensor's unpack hook is the user's code, run inside a node: grad mode switched
    on there is switched off again for the next node, as in the loop and in torch (a node
    on Tensors after it records nothing, and ``.grad`` has no history)."""

    def unpack(t):
        tg.set_grad_enabled(True)
        return t

    a = tg.tensor(_rng().standard_normal(3), dtype=tg.float32, requires_grad=True)
    b = tg.tensor(2.5, dtype=tg.float64, requires_grad=True)
    with tg.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        y = (a * b).exp().sum()  # exp's output is saved; Mul (mixed dtypes) runs on Tensors
    with tg.no_grad():
        y.backward()
        assert not tg.is_grad_enabled()
    assert a.grad.grad_fn is None and not a.grad.requires_grad
    assert b.grad.grad_fn is None and not b.grad.requires_grad

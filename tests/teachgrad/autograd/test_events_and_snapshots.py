"""Events and snapshots: what the visualizer sees of the engine.

* ``record()`` delivers typed events in the order things happen: ops recorded with the
  tensors they saved, version bumps naming the op, saved tensors unpacked and released,
  nodes started/finished with their gradients, leaf gradients, hooks;
* ``add_listener`` handles stop when removed; nobody listening means no events;
* ``snapshot()`` lists nodes, edges, saved tensors (versions, stale, released), leaves
  and names, survives a JSON round trip, and during backward marks what ran, the current
  node, what is ready and the gradients on the edges; a create_graph pass is a new layer.
"""

import json

import pytest

import teachgrad as tg
from teachgrad.autograd import graph
from teachgrad.autograd.graph import (
    GradAccumulated,
    HookFired,
    NodeFinished,
    NodeStarted,
    OpRecorded,
    SavedTensorPacked,
    SavedTensorReleased,
    SavedTensorUnpacked,
    VersionBumped,
    record,
    snapshot,
)

ACC = "torch::autograd::AccumulateGrad"  # a leaf's node, as torch's name() calls it


def names(events):
    return [type(e).__name__ for e in events]


# --------------------------------------------------------------------------- events


def test_forward_and_backward_events_in_order():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with record() as events:
        y = x.exp()
        z = (y * x).sum()
        z.backward()
    ops = [e.node.name() for e in events.of(OpRecorded)]
    assert ops == ["ExpBackward0", "MulBackward0", "SumBackward0"]
    packed = [(e.node.name(), e.name, e.version) for e in events.of(SavedTensorPacked)]
    assert packed == [
        ("ExpBackward0", "result", 0),
        ("MulBackward0", "self", 0),
        ("MulBackward0", "other", 0),
    ]
    started = [e.node.name() for e in events.of(NodeStarted)]
    finished = [e.node.name() for e in events.of(NodeFinished)]
    assert started == finished == ["SumBackward0", "MulBackward0", "ExpBackward0", ACC]
    # each node reads what it saved after it starts and frees it after it finished
    sequence = [(type(e).__name__, e.node.name()) for e in events if hasattr(e, "node")]
    mul = sequence.index(("NodeStarted", "MulBackward0"))
    assert sequence[mul + 1 : mul + 5] == [
        ("SavedTensorUnpacked", "MulBackward0"),
        ("SavedTensorUnpacked", "MulBackward0"),
        ("NodeFinished", "MulBackward0"),
        ("SavedTensorReleased", "MulBackward0"),
    ]
    (acc,) = events.of(GradAccumulated)
    assert acc.tensor is x and acc.grad.tolist() == x.grad.tolist()
    assert [e.seq for e in events] == sorted(e.seq for e in events)


def test_node_finished_carries_the_gradients():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * 3).sum()
    with record() as events:
        y.backward()
    mul = next(e for e in events.of(NodeFinished) if e.node.name() == "MulBackward0")
    assert mul.grad_outputs[0].tolist() == [1.0, 1.0]
    assert mul.grad_inputs[0].tolist() == [3.0, 3.0]


def test_version_bumps_name_the_op():
    x = tg.zeros(3)
    with record() as events:
        x.add_(1)
        x[0] = 5.0
        x.mul_(2)
    bumps = events.of(VersionBumped)
    assert [(e.version, e.op) for e in bumps] == [(1, "add_"), (2, "__setitem__"), (3, "mul_")]
    assert all(e.counter is x._counter for e in bumps)


def test_hooks_are_reported():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: None)
    x.register_post_accumulate_grad_hook(lambda t: None)
    z = y.sum()
    z.grad_fn.register_prehook(lambda go: None)
    z.grad_fn.register_hook(lambda gi, go: None)
    with record() as events:
        z.backward()
    assert [e.kind for e in events.of(HookFired)] == ["pre", "post", "tensor", "post_accumulate"]


def test_retain_graph_keeps_saved_tensors_and_says_nothing_about_release():
    x = tg.tensor(2.0, requires_grad=True)
    y = x * x
    with record() as events:
        y.backward(retain_graph=True)
    assert not events.of(SavedTensorReleased)
    assert len(events.of(SavedTensorUnpacked)) == 2


def test_listener_handles_and_silence():
    seen = []
    handle = graph.add_listener(seen.append)
    tg.ones(1, requires_grad=True).exp()
    handle.remove()
    tg.ones(1, requires_grad=True).exp()
    assert names(seen) == ["OpRecorded", "SavedTensorPacked"]
    with graph.add_listener(seen.append):
        tg.zeros(1).add_(1)
    assert names(seen)[-1] == "VersionBumped"
    from teachgrad import _events

    assert _events.listeners == []  # nothing left listening: the hot paths skip all of this


def test_no_op_is_reported_without_grad():
    with record() as events, tg.no_grad():
        tg.ones(2, requires_grad=True).exp()
    assert events == []


# --------------------------------------------------------------------------- snapshots


def two_layer():
    w = tg.tensor([[1.0, -1.0], [0.5, 2.0]], requires_grad=True)
    w.name = "W"
    x = tg.tensor([1.0, 2.0])
    h = (w @ x).tanh()
    h.name = "h"
    loss = h.sum()
    return w, h, loss


def test_snapshot_nodes_edges_and_names():
    w, h, loss = two_layer()
    snap = snapshot(loss)
    kinds = {n.name: n.kind for n in snap.nodes}
    assert kinds == {
        "output": "output",
        "SumBackward0": "function",
        "TanhBackward0": "function",
        "MvBackward0": "function",
        ACC: "accumulate",
        "W": "leaf",
    }
    tanh = snap.node_named("TanhBackward0")
    assert tanh.tensor_names == ["h"] and tanh.shapes == [[2]] and tanh.dtypes == ["float32"]
    by_id = {n.id: n.name for n in snap.nodes}
    flows = sorted(
        (by_id[e.source], by_id[e.target], e.input_nr, tuple(e.shape)) for e in snap.edges
    )
    assert flows == sorted(
        [
            ("W", ACC, 0, (2, 2)),
            (ACC, "MvBackward0", 0, (2, 2)),
            ("MvBackward0", "TanhBackward0", 0, (2,)),
            ("TanhBackward0", "SumBackward0", 0, (2,)),
            ("SumBackward0", "output", 0, ()),
        ]
    )
    leaf = snap.node_named("W")
    assert leaf.requires_grad and leaf.grad is None and leaf.value.startswith("[1, -1")


def test_snapshot_ids_are_stable():
    w, h, loss = two_layer()
    first, second = snapshot(loss), snapshot(loss)
    assert [n.id for n in first.nodes] == [n.id for n in second.nodes]
    assert len({n.id for n in first.nodes}) == len(first.nodes)


def test_snapshot_ids_live_beside_the_graph_not_in_it():
    """Ids are not written into nodes or tensors, and are forgotten with their objects."""
    import gc

    from teachgrad.autograd import snapshot as snapshot_module

    w, h, loss = two_layer()
    snap = snapshot(loss)
    assert all("_snapshot_id" not in vars(t) for t in (w, h, loss))
    assert not any(k.startswith("_snapshot") for k in vars(loss.grad_fn))
    kept = len(snapshot_module._known)
    del w, h, loss
    gc.collect()
    assert len(snapshot_module._known) < kept
    assert len({n.id for n in snap.nodes}) == len(snap.nodes)


def test_saved_tensor_versions_stale_and_released():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = a * 1
    c = b * b  # saves b twice, at version 0
    before = snapshot(c.sum()).node_named("MulBackward0").saved
    assert [(s.name, s.saved_version, s.version, s.stale) for s in before] == [
        ("self", 0, 0, False),
        ("other", 0, 0, False),
    ]
    with tg.no_grad():
        b.add_(1)
    after = snapshot(c.sum()).node_named("MulBackward0").saved
    assert [(s.saved_version, s.version, s.stale) for s in after] == [(0, 1, True), (0, 1, True)]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.sum().backward()

    d = a.exp()
    loss = d.sum()
    loss.backward()
    (saved,) = snapshot(loss).node_named("ExpBackward0").saved
    assert saved.released and saved.preview is None and saved.shape == [2]


def test_snapshot_during_backward_marks_progress_and_edge_gradients():
    w, h, loss = two_layer()
    steps = []
    engine = tg.autograd.backward_steps(loss)
    for step in engine:
        steps.append(step)
        if step.node.name() == "TanhBackward0":
            break
    snap = snapshot(loss, steps=steps)
    assert snap.in_backward
    ran = {n.name for n in snap.nodes if n.ran}
    assert ran == {"SumBackward0", "TanhBackward0"}
    (current,) = [n.name for n in snap.nodes if n.current]
    assert current == "TanhBackward0"
    assert [snap.node(i).name for i in snap.ready] == ["MvBackward0"]
    by_id = {n.id: n.name for n in snap.nodes}
    grads = {(by_id[e.source], by_id[e.target]): e.grad for e in snap.edges}
    assert grads[("TanhBackward0", "SumBackward0")] == "[1, 1]"
    assert grads[("MvBackward0", "TanhBackward0")] is not None
    assert grads[(ACC, "MvBackward0")] is None  # not reached yet
    assert not snap.finished
    done = snapshot(loss, steps=steps + list(engine))  # run the rest
    assert done.finished and [n.name for n in done.nodes if n.current] == [ACC]


def test_create_graph_builds_a_new_layer():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad((x**3).sum(), x, create_graph=True)
    layers = {n.name: n.layer for n in snapshot(g).nodes if n.kind == "function"}
    assert set(layers.values()) == {1}  # everything behind g was built by backward
    y = (x * 2).sum()  # made after: an ordinary forward op again
    assert snapshot(y).node_named("SumBackward0").layer == 0
    (again,) = tg.autograd.grad((x**3).sum(), x, create_graph=True)  # a second pass, after
    assert {n.layer for n in snapshot(again).nodes if n.kind == "function"} == {1}


def test_a_create_graph_pass_inside_another_builds_layer_two():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    outer = tg.autograd.backward_steps((x**3).sum(), create_graph=True)
    next(outer)  # the outer pass is running (paused between two nodes)
    (inner,) = tg.autograd.grad((x**2).sum(), x, create_graph=True)
    assert {n.layer for n in snapshot(inner).nodes if n.kind == "function"} == {2}
    list(outer)
    assert snapshot((x * 2).sum()).node_named("SumBackward0").layer == 0


def test_params_name_leaves():
    model = tg.nn.Linear(3, 2)
    snap = snapshot(model(tg.ones(1, 3)).sum(), params=model)
    leaves = sorted(n.name for n in snap.nodes if n.kind == "leaf")
    assert leaves == ["bias", "weight"]


def test_json_round_trip():
    w, h, loss = two_layer()
    snap = snapshot(loss, steps=list(tg.autograd.backward_steps(loss, retain_graph=True)))
    text = snap.to_json()
    json.loads(text)  # plain JSON
    again = graph.GraphSnapshot.from_json(text)
    assert again == snap and again.to_dict() == snap.to_dict()


def test_a_leaf_alone_and_bad_roots():
    x = tg.ones(2, requires_grad=True)
    snap = snapshot(x)
    assert [(n.kind, n.shapes) for n in snap.nodes] == [("leaf", [[2]])] and snap.edges == []
    with pytest.raises(TypeError, match="takes tensors"):
        snapshot("loss")


# --------------------------------------------------------------------------- explain_grad

EXPLAIN = {  # case -> (build() -> (tensor, loss), a phrase of the explanation)
    "not a leaf": (lambda: _pair(lambda x: x * 2, intermediate=True), "is not a leaf"),
    "integer": (lambda: (tg.tensor([1, 2]), None), "only floating-point"),
    "inference": (lambda: (_inference_tensor(), None), "inside inference_mode"),
    "detached": (lambda: (tg.ones(2, requires_grad=True).detach(), None), "does not require grad"),
    "unreachable": (
        lambda: (tg.ones(2, requires_grad=True), tg.ones(2, requires_grad=True).sum()),
        "does not depend on",
    ),
    "backward not run": (
        lambda: _pair(lambda x: (x * 2).sum(), run=False),
        "no backward() has reached",
    ),
    "zero": (lambda: _pair(lambda x: (x - 5).relu().sum()), "all zeros"),
    "set": (lambda: _pair(lambda x: (x * x).sum()), "is set"),
}


def _pair(f, intermediate=False, run=True):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = f(x)
    if intermediate:
        return y, None
    if run:
        y.backward()
    return x, y


def _inference_tensor():
    with tg.inference_mode():
        return tg.ones(2)


@pytest.mark.parametrize("case", list(EXPLAIN))
def test_explain_grad(case):
    build, phrase = EXPLAIN[case]
    tensor, loss = build()
    assert phrase in tg.autograd.explain_grad(tensor, loss)


def test_each_kind_of_event_knows_whether_anyone_wants_it():
    """The hot paths check ``Kind.on`` once; a kind nobody wants is never made."""
    from teachgrad import _events

    assert not any(kind.on for kind in _events.KINDS)
    made = []
    with tg.autograd.graph.add_listener(made.append, kinds=[_events.NodeStarted]):
        assert _events.NodeStarted.on and not _events.OpRecorded.on
        assert _events.NodeStarted.receivers == (made.append,)
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        (x * 2).sum().backward()
    assert [type(e).__name__ for e in made] == ["NodeStarted"] * 3
    assert not any(kind.on or kind.receivers for kind in _events.KINDS)
    with tg.autograd.graph.record() as events:  # a listener of every kind
        assert all(kind.on for kind in _events.KINDS)
        (x * 2).sum()
    assert [type(e).__name__ for e in events] == ["OpRecorded", "OpRecorded"]

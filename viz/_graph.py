"""What viz draws from: a ``GraphSnapshot``, and small helpers to walk one.

Every picture and every text rendering starts here: ``as_snapshot`` turns whatever
the user passed (a tensor, a few tensors, a module's output, or a snapshot taken
earlier) into teachgrad's plain ``GraphSnapshot`` data. Nothing in viz looks at
live tensors or graph nodes after that point, which is why viz never needs
teachgrad's internals (DESIGN.md: "viz reads teachgrad's snapshot and event data only").

Edges in a snapshot point the way data flows in forward: ``source`` made a value
that ``target`` used. Gradients flow back against them.
"""

from __future__ import annotations

from collections import defaultdict

from teachgrad import Tensor
from teachgrad.autograd.graph import GraphSnapshot, snapshot


def short_name(name: str) -> str:
    """A node's name as torch's repr prints it, without a C++ namespace: a picture says
    ``CopySlices`` where ``name()`` says ``torch::autograd::CopySlices``.

    >>> short_name("torch::autograd::CopySlices"), short_name("MulBackward0")
    ('CopySlices', 'MulBackward0')
    """
    return name.rpartition("::")[2]


def as_snapshot(obj, params=None, steps=None, **preview) -> GraphSnapshot:
    """A ``GraphSnapshot`` of ``obj``: a Tensor, a list/tuple of tensors, or a snapshot.

    ``params`` (a Module, or a dict name -> tensor) names the leaves; ``steps`` (the
    steps of ``backward_steps`` run so far) marks backward's progress; ``preview``
    (``values=``, ``digits=``) says how values are written.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> snap = as_snapshot(x.exp(), params={"x": x})
    >>> [n.name for n in snap.nodes]
    ['output', 'ExpBackward0', 'torch::autograd::AccumulateGrad', 'x']
    >>> as_snapshot(snap) is snap
    True
    """
    if isinstance(obj, GraphSnapshot):
        if steps is not None:  # a snapshot is frozen: the steps must be given when it is taken
            raise TypeError("steps= needs tensors; use snapshot(loss, steps=...) instead")
        return obj
    if isinstance(obj, Tensor):
        return snapshot(obj, steps=steps, params=params, **preview)
    if isinstance(obj, (list, tuple)) and obj and all(isinstance(t, Tensor) for t in obj):
        return snapshot(*obj, steps=steps, params=params, **preview)
    raise TypeError(
        f"viz draws a Tensor, a list/tuple of tensors or a GraphSnapshot, got {type(obj).__name__}"
    )


def inputs_of(snap: GraphSnapshot) -> dict:
    """node id -> the edges coming into it, in input order (its next_functions).

    >>> import teachgrad as tg
    >>> snap = tg.autograd.graph.snapshot(tg.ones(2, requires_grad=True).exp())
    >>> [snap.node(e.source).name for e in inputs_of(snap)[snap.roots[0]]]
    ['ExpBackward0']
    """
    found = defaultdict(list)
    for edge in snap.edges:
        found[edge.target].append(edge)
    for edges in found.values():
        edges.sort(key=lambda e: e.input_nr)
    return found


def consumers_of(snap: GraphSnapshot) -> dict:
    """node id -> the edges going out of it (to the nodes that used its output).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> snap = tg.autograd.graph.snapshot(x.exp() + x.sin())
    >>> sorted(snap.node(e.target).name for e in consumers_of(snap)[snap.node_named("AccumulateGrad").id])
    ['ExpBackward0', 'SinBackward0']
    """
    found = defaultdict(list)
    for edge in snap.edges:
        found[edge.source].append(edge)
    return found


def forward_order(snap: GraphSnapshot) -> list:
    """Node ids with every node after the nodes it reads from (leaves first, roots last).

    >>> import teachgrad as tg
    >>> snap = tg.autograd.graph.snapshot(tg.ones(2, requires_grad=True).exp().sum())
    >>> [snap.node(i).name for i in forward_order(snap)]
    ['leaf', 'torch::autograd::AccumulateGrad', 'ExpBackward0', 'SumBackward0', 'output']
    """
    waiting = {n.id: 0 for n in snap.nodes}  # how many inputs are not placed yet
    for edge in snap.edges:
        waiting[edge.target] += 1
    consumers = consumers_of(snap)
    ready = [n.id for n in snap.nodes if waiting[n.id] == 0]
    order = []
    while ready:
        node_id = ready.pop()
        order.append(node_id)
        for edge in consumers[node_id]:
            waiting[edge.target] -= 1
            if waiting[edge.target] == 0:
                ready.append(edge.target)
    return order


def wants_grads(snap: GraphSnapshot, show_grads) -> bool:
    """``show_grads=None`` means: show gradients when the snapshot was taken during backward.

    >>> import teachgrad as tg
    >>> snap = tg.autograd.graph.snapshot(tg.ones(1, requires_grad=True) * 2)
    >>> wants_grads(snap, None), wants_grads(snap, True)
    (False, True)
    """
    return snap.in_backward if show_grads is None else bool(show_grads)


def output_names(node, shown: set) -> list:
    """The names the user gave a Function node's outputs (``h.name = "h"``), except the
    names already ``shown`` on an output node of the snapshot (``shown_outputs(snap)``).

    >>> import teachgrad as tg
    >>> h = tg.ones(2, requires_grad=True).exp(); h.name = "h"
    >>> snap = tg.autograd.graph.snapshot(h.sum())
    >>> output_names(snap.node_named("ExpBackward0"), shown_outputs(snap))
    ['h']
    """
    return [name for name in node.tensor_names if name and name not in shown]


def shown_outputs(snap: GraphSnapshot) -> set:
    """The names of the snapshot's output nodes (computed once per picture)."""
    return {n.name for n in snap.nodes if n.kind == "output"}


def progress(snap: GraphSnapshot) -> str:
    """One line on how far backward got (for a snapshot taken with ``steps=``).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> loss = x.exp().sum()
    >>> steps = [next(tg.autograd.backward_steps(loss))]
    >>> progress(tg.autograd.graph.snapshot(loss, steps=steps))
    'backward: 1 of 3 nodes ran; this step: SumBackward0; ready: ExpBackward0'
    """
    runnable = [n for n in snap.nodes if n.kind in ("function", "accumulate")]
    names = {n.id: n.name for n in snap.nodes}
    line = f"backward: {sum(n.ran for n in runnable)} of {len(runnable)} nodes ran"
    current = [n.name for n in snap.nodes if n.current]
    if snap.finished:
        return line + (f"; finished (the last was {current[0]})" if current else "; finished")
    line += f"; this step: {current[0]}" if current else ""
    ready = [names[i] for i in snap.ready if i in names]
    return line + (f"; ready: {', '.join(ready)}" if ready else "")


def shape_text(shape) -> str:
    """A shape as the pictures write it: ``[2, 3]``, and ``scalar`` for ``[]``.

    >>> shape_text([2, 3]), shape_text([])
    ('[2, 3]', 'scalar')
    """
    return "[" + ", ".join(str(s) for s in shape) + "]" if shape else "scalar"


def version_badge(saved) -> str:
    """The version badge of a saved tensor: ``v0``, or ``v1 (saved v0)`` once it is stale.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> y = x.exp(); z = y.sum()
    >>> before = version_badge(tg.autograd.graph.snapshot(z).node_named("ExpBackward0").saved[0])
    >>> _ = y.add_(1)  # changes what ExpBackward0 saved
    >>> before, version_badge(tg.autograd.graph.snapshot(z).node_named("ExpBackward0").saved[0])
    ('v0', 'v1 (saved v0)')
    """
    if saved.stale:
        return f"v{saved.version} (saved v{saved.saved_version})"
    return f"v{saved.version}"

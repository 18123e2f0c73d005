"""What a recorded graph keeps in Python objects (issue 19's memory targets, measured in
``benchmarks/bench.py`` (c) and (f)): one spec tuple (shape, dtype, array type) per
distinct tensor, shared by the nodes, not a copy for every node and saved tensor."""

import contextlib
import gc
import tracemalloc

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.autograd.snapshot import snapshot
from teachgrad.autograd.tape import SavedTensor


def products_chain(n_layers, width=8, seed=0):
    """``y = tanh(y @ W_i)``, (c)'s chain: the weights, the input and the loss."""
    rng = np.random.default_rng(seed)
    ws = [
        tg.tensor(rng.standard_normal((width, width)) / 3, requires_grad=True)
        for _ in range(n_layers)
    ]
    x = tg.tensor(rng.standard_normal((4, width)))
    y = x
    for w in ws:
        y = (y @ w).tanh()
    return ws, x, y.sum()


def graph_nodes(root):
    seen, todo = [], [root.grad_fn]
    while todo:
        node = todo.pop()
        if node is not None and all(node is not s for s in seen):
            seen.append(node)
            todo.extend(fn for fn, _ in node.next_functions)
    return seen


def test_saved_tensors_and_outputs_share_the_graphs_spec_tuples():
    """Each saved tensor's spec is the one its node (a leaf's AccumulateGrad) keeps, an
    output like its first input shares that input's spec, and nodes that need the same
    gradients share one ``needs_input_grad``: before, each was a new tuple."""
    ws, x, loss = products_chain(6)
    nodes = graph_nodes(loss)
    specs = {id(spec) for node in nodes for spec in node._output_meta}
    for node in nodes:
        for s in getattr(node, "_saved", ()):
            if type(s) is SavedTensor and s.tensor is not x:  # (x: a leaf outside the graph)
                assert any(s.meta is spec for n in nodes for spec in n._output_meta), node.name()
    # x's shape for every product and tanh, one per weight, the sum's 0-d result
    assert len(specs) == 1 + len(ws) + 1
    # and one needs_input_grad tuple for all the nodes that need the same gradients
    recorded = [n for n in nodes if hasattr(n, "needs_input_grad")]  # (not AccumulateGrad)
    assert len({id(n.needs_input_grad) for n in recorded}) == len(
        {n.needs_input_grad for n in recorded}
    )
    loss.backward()
    for node in nodes:  # released: the specs stay, the arrays are gone
        for s in getattr(node, "_saved", ()):
            if type(s) is SavedTensor:
                assert s.released and s.data is None and s.tensor is None
                assert s.meta[:2] == ((4, 8), np.dtype("float64")) or s.meta[0] == (8, 8)


@pytest.mark.parametrize("hooked", [False, True], ids=["plain", "saved_tensors_hooks"])
def test_snapshot_shows_released_saved_tensors_as_before_release(hooked):
    """A released saved tensor keeps its shape, dtype and device in the snapshot: an output
    saved (exp), an input with a history (mul's), a leaf (pow's) and a leaf that requires
    no grad (mm's x), with and without saved-tensor hooks."""
    w = tg.ones(3, 2, requires_grad=True)
    x = tg.ones(4, 3)
    with (
        tg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        if hooked
        else contextlib.nullcontext()
    ):
        h = (x @ w).exp()
        loss = (h * h).sum() + (w**2).sum()
    before = {(n.name, s.name): s for n in snapshot(loss).nodes for s in n.saved}
    loss.backward()
    after = {(n.name, s.name): s for n in snapshot(loss).nodes for s in n.saved}
    assert (
        set(before)
        == {
            ("MmBackward0", "self"),
            ("PowBackward0", "self"),
            ("ExpBackward0", "result"),
            ("MulBackward0", "self"),
            ("MulBackward0", "other"),
        }
        == set(after)
    )
    for key, s in after.items():
        assert s.released and not before[key].released
        assert (s.shape, s.dtype, s.device) == (before[key].shape, before[key].dtype, "cpu"), key


def python_bytes_kept(n_layers) -> int:
    """Bytes of Python objects (tracemalloc's domain 0: not the arrays' data) a chain of
    ``n_layers`` products keeps once backward is over, its loss and weights alive."""
    gc.collect()
    tracemalloc.start()
    try:
        ws, x, loss = products_chain(n_layers)
        loss.backward()
        snap = tracemalloc.take_snapshot().filter_traces([tracemalloc.DomainFilter(True, 0)])
    finally:
        tracemalloc.stop()
    assert all(w.grad is not None for w in ws) and loss.grad_fn is not None
    return sum(t.size for t in snap.traces)


def test_a_deep_graph_keeps_under_3000_bytes_of_python_objects_a_layer():
    """The Python objects each layer of a chain of products keeps once backward is over (its
    nodes, their released saved tensors, the weight's gradient): 3,480 bytes before the
    spec tuples were shared, 2,760 after (tracemalloc, Python 3.11). Taken as the growth from
    50 to 150 layers, after a first run: what the process allocates once does not count."""
    python_bytes_kept(5)
    per_layer = (python_bytes_kept(150) - python_bytes_kept(50)) / 100
    assert per_layer < 3000, f"{per_layer:.0f} bytes a layer"

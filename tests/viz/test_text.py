"""viz.text (API.md section 6): the graph as text, with the same facts as the pictures.

Names, kinds and shapes; saved tensors with version badges, STALE after an in-place
change and ``released`` after backward; backward's progress and the gradients on the
edges; the layer built by ``create_graph=True``; and a layout that stays readable for
shared nodes and very long chains.
"""

import pytest

import teachgrad as tg
import viz
from teachgrad.autograd.graph import GraphSnapshot, snapshot

from ._common import small_graph


def line_with(text: str, word: str) -> str:
    """The one line of ``text`` that contains ``word``."""
    found = [line for line in text.splitlines() if word in line]
    assert len(found) == 1, (word, found)
    return found[0]


def test_the_whole_text_of_a_small_graph():
    *_, loss = small_graph()
    assert viz.text(loss) == "\n".join(
        [
            "graph of 1 output: 8 nodes (1 output, 3 functions, 2 AccumulateGrad nodes, 2 leaves), 3 saved tensors",
            "read from the output back to the leaves, the way backward goes",
            "loss  scalar float32  = 3001",  # named after the variable that holds it
            "SumBackward0  scalar",
            "ExpBackward0  [2]",
            "  saved result  [2] float32  v0",
            "MulBackward0  [2]",
            "  saved self  [2] float32  v0",
            "  saved other  [2] float32  v0",
            "├─ AccumulateGrad  [2]  into x.grad  (leaf x  [2] float32)",
            "└─ AccumulateGrad  [2]  into w.grad  (leaf w  [2] float32)",
        ]
    )


def test_chains_stay_at_one_depth_and_branches_are_marked():
    a = tg.ones(2, requires_grad=True)
    a.name = "a"
    b = tg.ones(2, requires_grad=True)
    b.name = "b"
    text = viz.text((a.exp().sin() * b).sum())
    lines = text.splitlines()[2:]
    assert lines[:3] == [
        "output  scalar float32  = 0.8216",
        "SumBackward0  scalar",
        "MulBackward0  [2]",
    ]
    assert lines[5].startswith("├─ SinBackward0  [2]")
    assert lines[7] == "│  ExpBackward0  [2]"  # the only input of SinBackward0: same depth
    assert lines[-1].startswith("└─ AccumulateGrad  [2]  into b.grad")


def test_a_node_used_twice_is_printed_once():
    x = tg.ones(2, requires_grad=True)
    x.name = "x"
    text = viz.text((x * x).sum())
    assert text.count("into x.grad") == 2
    assert line_with(text, "(the same node again, see above)").startswith("└─ AccumulateGrad")


def test_stale_saved_tensors_are_marked_after_an_in_place_change():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    loss = y.sum()
    assert line_with(viz.text(loss), "saved result").endswith("v0")
    y.add_(1)
    text = viz.text(loss)
    assert line_with(text, "saved result") == (
        "  saved result  [2] float32  v1 (saved v0)  STALE: changed in place after it was saved"
    )
    assert text.splitlines()[0].endswith("1 saved tensor (1 STALE)")


def test_released_saved_tensors_are_marked_after_backward():
    *_, loss = small_graph()
    loss.backward()
    text = viz.text(loss)
    for name in ("result", "self", "other"):
        assert line_with(text, f"saved {name}").endswith(
            "v0  released (freed once backward used it)"
        )


def test_backward_progress_and_the_gradients_sent_back():
    *_, loss = small_graph()
    running = tg.autograd.backward_steps(loss)
    steps = [next(running), next(running)]  # SumBackward0, then ExpBackward0
    text = viz.text(loss, steps=steps)
    assert "backward: 2 of 5 nodes ran; this step: ExpBackward0; ready: MulBackward0" in text
    assert line_with(text, "SumBackward0  ") == "SumBackward0  scalar  [ran]"
    assert (
        line_with(text, "ExpBackward0  ")
        == "ExpBackward0  [2]  [this step]  grad sent back: [1, 1]"
    )
    assert (
        line_with(text, "MulBackward0  ")
        == "MulBackward0  [2]  [ready]  grad sent back: [20.09, 2981]"
    )
    assert "grad sent back" not in line_with(text, "into x.grad")
    hidden = viz.text(loss, steps=steps, show_grads=False)
    assert "grad sent back" not in hidden and "[this step]" in hidden
    list(running)


def test_leaf_grads_show_when_asked():
    x, w, _, loss = small_graph()
    loss.backward()
    assert "x.grad =" not in viz.text(loss)
    shown = viz.text(loss, show_grads=True)
    assert line_with(shown, "into x.grad").endswith(
        f"x.grad = [{x.grad[0].item():.4g}, {x.grad[1].item():.4g}]"
    )


def test_the_create_graph_layer_is_tagged():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.name = "x"
    loss = (x.sin() * x).sum()
    (g,) = tg.autograd.grad(loss, x, create_graph=True)
    snap = snapshot(loss, g)
    text = viz.text(snap)
    layered = sum(n.layer == 1 for n in snap.nodes)
    assert f"create_graph: {layered} nodes [layer 1] belong to the graph of the gradient" in text
    assert text.count("[layer 1]") == layered + 1  # each node once, and the summary line
    assert "[layer 1]" not in line_with(text, "SinBackward0  [2]  ")  # forward stays untagged
    assert "CosBackward0  [2]  [layer 1]" in text


def test_options_hide_saved_tensors_and_versions():
    *_, loss = small_graph()
    assert "saved" not in "\n".join(viz.text(loss, show_saved=False).splitlines()[1:])
    assert (
        line_with(viz.text(loss, show_versions=False), "saved result")
        == "  saved result  [2] float32"
    )


def test_params_name_the_leaves():
    model = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.Tanh())
    text = viz.text(model(tg.ones(4, 3)).sum(), params=model)
    assert "into 0.weight.grad  (leaf 0.weight  [2, 3] float32)" in text
    assert "into 0.bias.grad  (leaf 0.bias  [2] float32)" in text


def test_leaves_and_constants_as_roots():
    x = tg.ones(2, requires_grad=True)
    x.name = "x"
    assert viz.text(x).splitlines()[-1] == "x  leaf [2] float32"
    assert viz.text(tg.zeros(3)).splitlines()[-1] == "leaf  [3] float32 no grad"


def test_a_snapshot_its_json_and_the_tensor_give_the_same_text():
    *_, loss = small_graph()
    snap = snapshot(loss, params={"loss": loss})  # the name text() finds in this function
    assert viz.text(snap) == viz.text(GraphSnapshot.from_json(snap.to_json())) == viz.text(loss)
    assert viz.draw(loss).text() == viz.text(loss)
    with pytest.raises(TypeError, match="steps"):
        viz.text(snap, steps=[])


def test_a_chain_of_thousands_of_ops_needs_no_recursion_and_stays_narrow():
    x = tg.ones(2, requires_grad=True)
    y = x
    for _ in range(3000):
        y = y * 1.0
    text = viz.text(y.sum())
    lines = text.splitlines()
    assert sum(line.startswith("MulBackward0") for line in lines) == 3000
    assert max(len(line) for line in lines) < 120


def test_saved_tensors_packed_by_hooks_are_marked():
    with tg.autograd.graph.save_on_cpu():
        y = tg.ones(2, requires_grad=True).exp()
    assert "packed by a saved_tensors_hooks pack hook" in viz.text(y)
    assert "packed by hook" in viz.draw(y).source


def test_a_node_marked_by_anomaly_detection_is_flagged():
    import warnings

    x = tg.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with tg.autograd.detect_anomaly():
            loss = (x.sqrt() * 0).sum()
            with pytest.raises(RuntimeError):
                loss.backward(retain_graph=True)
    assert "[ANOMALY: Function 'SqrtBackward0' returned nan values" in viz.text(loss)
    assert 'class="function anomaly"' in viz.draw(loss).source

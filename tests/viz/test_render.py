"""viz.draw and viz.render (API.md section 6): the DOT source, the SVG it becomes,
the renderer chain (system ``dot`` -> ``graphviz-pure`` -> text), and saving files.

SVG tests run once per Graphviz program (``dot`` and ``graphviz-pure``, chosen with
``TEACHGRAD_VIZ_RENDERER``) and skip only when that program is not installed. They
read the SVG as XML: every node is a ``<g class="node ...">`` whose ``<title>`` is
the snapshot id, and geometry (bounding boxes) says what is drawn inside which frame.
"""

import ast
import itertools
import os
import re
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import teachgrad as tg
import viz
import viz._box
from teachgrad.autograd.graph import GraphSnapshot, snapshot
from viz import render
from viz._fit import natural_width
from viz.render import short_name

from ._common import small_graph

SVG = "{http://www.w3.org/2000/svg}"
PRESENT = {}  # renderer name -> Renderer or None, found once


# ------------------------------------------------------------------ fixtures and helpers


@pytest.fixture(autouse=True)
def _no_renderer_choice(monkeypatch):
    """Every test starts with the automatic choice and leaves no choice behind."""
    monkeypatch.delenv(render.ENV_VAR, raising=False)
    render.set_renderer(None)
    yield
    render.set_renderer(None)


def installed(name):
    """The Renderer for ``name`` if its program is installed here, else None."""
    if name not in PRESENT:
        previous = render.set_renderer(name)
        PRESENT[name] = render.find_renderer()
        render.set_renderer(previous)
    return PRESENT[name]


@pytest.fixture(params=["dot", "graphviz-pure"])
def renderer(request, monkeypatch):
    """Force each Graphviz program in turn through the environment variable."""
    if installed(request.param) is None:
        pytest.skip(f"{request.param} is not installed here")
    monkeypatch.setenv(render.ENV_VAR, request.param)
    found = render.find_renderer()
    assert found.name == request.param
    return found


def parse(svg: str):
    return ET.fromstring(svg)


def nodes_by_title(root) -> dict:
    """<title> (the snapshot id) -> the node's <g>."""
    return {
        g.find(SVG + "title").text: g
        for g in root.iter(SVG + "g")
        if "node" in g.get("class", "").split()
    }


def by_id(root) -> dict:
    return {el.get("id"): el for el in root.iter() if el.get("id")}


def classes(el) -> set:
    return set(el.get("class", "").split())


def texts(el) -> list:
    return ["".join(t.itertext()).strip() for t in el.iter(SVG + "text")]


def text_fills(el) -> dict:
    """text -> its fill colour, for every <text> in ``el``."""
    return {"".join(t.itertext()).strip(): t.get("fill") for t in el.iter(SVG + "text")}


def box(el):
    """(x0, y0, x1, y1) around the shapes of ``el`` (ellipses, polygons, paths)."""
    xs, ys = [], []
    for shape in el.iter():
        tag = shape.tag.replace(SVG, "")
        if tag == "ellipse":
            cx, cy = float(shape.get("cx")), float(shape.get("cy"))
            rx, ry = float(shape.get("rx")), float(shape.get("ry"))
            xs += [cx - rx, cx + rx]
            ys += [cy - ry, cy + ry]
        elif tag in ("polygon", "polyline", "path"):
            numbers = re.findall(r"-?\d+(?:\.\d+)?", shape.get("points") or shape.get("d"))
            xs += [float(v) for v in numbers[0::2]]
            ys += [float(v) for v in numbers[1::2]]
    return min(xs), min(ys), max(xs), max(ys)


def centre(el):
    x0, y0, x1, y1 = box(el)
    return (x0 + x1) / 2, (y0 + y1) / 2


def inside(point, frame) -> bool:
    x, y = point
    x0, y0, x1, y1 = frame
    return x0 <= x <= x1 and y0 <= y <= y1


def cluster_box(root, ident: str):
    """The frame of the cluster with SVG id ``cluster-<ident>``."""
    frame = by_id(root)[f"cluster-{ident}"]
    assert "cluster" in classes(frame)
    return box(frame)  # its outline: a polygon, or a path when the corners are rounded


def ids_named(snap, name) -> list:
    return [n.id for n in snap.nodes if short_name(n.name) == name]


# ------------------------------------------------------------------ DOT source (no renderer needed)


def test_dot_source_has_every_node_and_edge_with_its_svg_id():
    *_, loss = small_graph()
    snap = snapshot(loss)
    source = render.to_dot(snap)
    assert source.startswith("digraph teachgrad {") and source.rstrip().endswith("}")
    for node in snap.nodes:
        assert f'"{node.id}" [label=' in source
        assert f'id="node-{node.id}"' in source
    for edge in snap.edges:
        assert (
            f'"{edge.source}" -> "{edge.target}" [id="edge-{edge.source}-{edge.target}-{edge.input_nr}"'
            in source
        )


def test_each_kind_has_its_own_shape_and_colour():
    looks = {kind: (style["shape"], style["fillcolor"]) for kind, style in render.KINDS.items()}
    assert len(set(looks.values())) == len(looks)
    assert len({fill for _, fill in looks.values()}) == len(looks)  # colour alone tells them apart


def test_dot_edge_labels_are_the_shapes_that_flow():
    a = tg.ones(2, 3, requires_grad=True)
    b = tg.ones(3, 4, requires_grad=True)
    snap = snapshot((a @ b).sum())
    source = render.to_dot(snap)
    for edge in snap.edges:
        shape = "[" + ", ".join(map(str, edge.shape)) + "]" if edge.shape else "scalar"
        line = next(li for li in source.splitlines() if f'"{edge.source}" -> "{edge.target}"' in li)
        assert f'label="{shape}"' in line
    assert 'label="[2, 3]"' in source and 'label="[3, 4]"' in source and 'label="[2, 4]"' in source


def test_options_hide_saved_tensors_and_version_badges():
    *_, loss = small_graph()
    with_all = render.to_dot(loss)
    assert "saved for backward" in with_all and " v0" in with_all
    assert "saved for backward" not in render.to_dot(loss, show_saved=False)
    no_badges = render.to_dot(loss, show_versions=False)
    assert "saved for backward" in no_badges and " v0" not in no_badges


def test_draw_takes_a_tensor_a_list_a_snapshot_or_json():
    x, w, y, loss = small_graph()
    from_tensor = viz.draw(loss)
    assert isinstance(from_tensor.snapshot, GraphSnapshot)
    assert [n.name for n in viz.draw([loss, y]).snapshot.nodes][:2] == ["loss", "SumBackward0"]
    assert viz.draw((loss,)).snapshot.roots == from_tensor.snapshot.roots
    snap = snapshot(loss)
    assert viz.draw(snap).snapshot is snap
    thawed = GraphSnapshot.from_json(snap.to_json())
    assert viz.draw(thawed).source == viz.draw(snap).source
    with pytest.raises(TypeError, match="Tensor"):
        viz.draw(3.0)
    with pytest.raises(TypeError, match="steps"):
        viz.draw(snap, steps=[])


def test_awkward_names_are_escaped(renderer):
    x = tg.ones(2, requires_grad=True)
    x.name = 'a<b> & "c" \\ d'
    d = viz.draw((x * 2).sum())
    root = parse(d.svg)
    leaf = nodes_by_title(root)[d.snapshot.node_named(x.name).id]
    assert x.name in texts(leaf)


def test_legend_shows_every_kind_and_state(renderer):
    *_, loss = small_graph()
    root = parse(viz.draw(loss, legend=True).svg)
    legend = by_id(root)["cluster-legend"]
    assert "cluster" in classes(legend)
    shown = {
        t
        for g in nodes_by_title(root).values()
        if g.get("id", "").startswith("legend")
        for t in texts(g)
    }
    for word in [
        "leaf tensor",
        "output tensor",
        "Function node",
        "AccumulateGrad",
        "stale: v1 (saved v0)",
        "released",
        "ran earlier",
        "constant (no grad)",
        "anomaly",
        "this step",
        "ready: runs next",
    ]:
        assert word in shown


# ------------------------------------------------------------------ the SVG picture


def test_svg_nodes_are_titled_by_snapshot_id_and_kinds_look_different(renderer):
    *_, loss = small_graph()
    d = viz.draw(loss)
    root = parse(d.svg)
    drawn = nodes_by_title(root)
    for node in d.snapshot.nodes:
        g = drawn[node.id]
        assert g.get("id") == f"node-{node.id}"
        assert node.kind in classes(g)
        assert short_name(node.name) in texts(g)
    main_shape = {  # the first shape of each kind's node, and its fill
        kind: next(
            s
            for s in drawn[ids[0]].iter()
            if s.tag in (SVG + "ellipse", SVG + "polygon", SVG + "path")
        )
        for kind, ids in {
            k: [n.id for n in d.snapshot.nodes if n.kind == k]
            for k in ("leaf", "output", "function", "accumulate")
        }.items()
    }
    assert main_shape["leaf"].tag == SVG + "ellipse"
    assert main_shape["output"].tag == SVG + "ellipse"
    assert main_shape["function"].tag == SVG + "path"  # a box with rounded corners
    assert main_shape["accumulate"].tag == SVG + "polygon"  # a hexagon
    assert len(main_shape["accumulate"].get("points").split()) == 7  # six corners, closed
    output = drawn[d.snapshot.roots[0]]
    assert len(list(output.iter(SVG + "ellipse"))) == 2  # the double ring of an output
    for kind, shape in main_shape.items():
        assert shape.get("fill") == render.KINDS[kind]["fillcolor"]


def test_svg_edges_are_labelled_with_shapes(renderer):
    a = tg.ones(2, 3, requires_grad=True)
    b = tg.ones(3, 4, requires_grad=True)
    d = viz.draw((a @ b).sum())
    edges = by_id(parse(d.svg))
    for edge in d.snapshot.edges:
        g = edges[f"edge-{edge.source}-{edge.target}-{edge.input_nr}"]
        assert "edge" in classes(g)
        expected = "[" + ", ".join(map(str, edge.shape)) + "]" if edge.shape else "scalar"
        assert texts(g) == [expected]
    assert {t for g in edges.values() if "edge" in classes(g) for t in texts(g)} == {
        "[2, 3]",
        "[3, 4]",
        "[2, 4]",
        "scalar",
    }


def test_saved_tensors_sit_by_their_node_with_a_version_badge(renderer):
    *_, loss = small_graph()
    d = viz.draw(loss)
    root = parse(d.svg)
    mul = d.snapshot.node_named("MulBackward0").id
    card = by_id(root)[f"saved-{mul}"]
    assert classes(card) == {"node", "saved"}
    assert texts(card) == [
        "saved for backward",
        "self",
        "[2] float32 v0 = [1, 2]",  # small tensors show their values
        "other",
        "[2] float32 v0 = [3, 4]",
    ]
    assert f"a_saved-{mul}-self" in by_id(root)  # each row is its own element with a tooltip
    # the card is on the same rank as its node, beside it
    assert abs(centre(card)[1] - centre(nodes_by_title(root)[mul])[1]) < 1


def test_stale_saved_tensor_shows_red_version_badge(renderer):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    loss = y.sum()
    exp = snapshot(loss).node_named("ExpBackward0").id
    before = parse(viz.draw(loss).svg)
    assert "stale" not in classes(by_id(before)[f"saved-{exp}"])
    y.add_(1)  # ExpBackward0 saved its result, y: now changed in place
    after = parse(viz.draw(loss).svg)
    card = by_id(after)[f"saved-{exp}"]
    assert "stale" in classes(card)
    row = by_id(after)[f"a_saved-{exp}-result"]
    assert text_fills(row)["v1 (saved v0)"] == render.TEXT_COLORS["stale"]
    assert any(
        s.get("stroke") == render.STATES["stale"]["color"] for s in card.iter(SVG + "polygon")
    )


def test_released_saved_tensors_are_greyed_after_backward(renderer):
    *_, loss = small_graph()
    loss.backward()
    d = viz.draw(loss)
    root = parse(d.svg)
    for name in ("MulBackward0", "ExpBackward0"):
        card = by_id(root)[f"saved-{d.snapshot.node_named(name).id}"]
        assert "released" in classes(card)
        fills = text_fills(card)
        released = [t for t in fills if t.endswith("released")]
        assert released and all(fills[t] == render.TEXT_COLORS["released"] for t in released)
        assert card.find(f".//{SVG}polygon").get("stroke-dasharray")  # a dashed outline


def test_backward_steps_mark_ran_current_ready_and_edge_grads(renderer):
    *_, loss = small_graph()
    steps = []
    running = tg.autograd.backward_steps(loss)
    steps += [next(running), next(running)]  # SumBackward0, then ExpBackward0
    d = viz.draw(loss, steps=steps)
    snap = d.snapshot
    root = parse(d.svg)
    drawn = nodes_by_title(root)
    assert "ran" in classes(drawn[snap.node_named("SumBackward0").id])
    exp = drawn[snap.node_named("ExpBackward0").id]
    assert {"ran", "current"} <= classes(exp)
    assert any(s.get("stroke") == render.STATES["current"]["color"] for s in exp.iter(SVG + "path"))
    mul = drawn[snap.node_named("MulBackward0").id]
    assert "ready" in classes(mul) and "ran" not in classes(mul)
    edges = by_id(root)
    mul_to_exp = next(e for e in snap.edges if e.target == snap.node_named("ExpBackward0").id)
    sent = edges[f"edge-{mul_to_exp.source}-{mul_to_exp.target}-0"]
    assert "grad" in classes(sent)
    assert texts(sent) == ["[2]", f"grad {mul_to_exp.grad}"]  # what ExpBackward0 sent back
    assert mul_to_exp.grad == "[20.09, 2981]"  # exp(x * w) at x = [1, 2], w = [3, 4]
    assert text_fills(sent)[f"grad {mul_to_exp.grad}"] == render.TEXT_COLORS["grad"]
    assert "backward: 2 of 5 nodes ran; this step: ExpBackward0; ready: MulBackward0" in texts(root)
    not_yet = edges[f"edge-{snap.node_named('x').id}-{ids_named(snap, 'AccumulateGrad')[-1]}-0"]
    assert "grad" not in classes(not_yet)
    list(running)


def test_grads_on_leaves_can_be_shown_or_hidden(renderer):
    x, w, _, loss = small_graph()
    loss.backward()
    shown = nodes_by_title(parse(viz.draw(loss, show_grads=True).svg))[
        snapshot(loss).node_named("x").id
    ]
    grad_line = next(t for t in texts(shown) if t.startswith("grad"))
    assert (
        grad_line.startswith("grad [")
        and text_fills(shown)[grad_line] == render.TEXT_COLORS["grad"]
    )
    hidden = nodes_by_title(parse(viz.draw(loss, show_grads=False).svg))[
        snapshot(loss).node_named("x").id
    ]
    assert not any(t.startswith("grad") for t in texts(hidden))
    # by default a leaf shows its values and, once backward filled it, its .grad
    default = nodes_by_title(parse(viz.draw(loss).svg))[snapshot(loss).node_named("x").id]
    assert texts(default)[-3:-1] == ["[1, 2]", "|"]  # x = [1, 2]; x.grad = w exp(x w)
    assert texts(default)[-1].startswith("grad [60.26, 1.192e+04]")


def test_create_graph_layer_is_a_separate_frame(renderer):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.name = "x"
    loss = (x.sin() * x).sum()
    (g,) = tg.autograd.grad(loss, x, create_graph=True)
    d = viz.draw([loss, g])
    root = parse(d.svg)
    frame = cluster_box(root, "layer1")
    assert "layer" in classes(by_id(root)["cluster-layer1"])
    assert "graph of the gradient (create_graph=True), layer 1" in texts(
        by_id(root)["cluster-layer1"]
    )
    drawn = nodes_by_title(root)
    layered = [n for n in d.snapshot.nodes if n.layer == 1]
    assert len(layered) >= 4
    for node in d.snapshot.nodes:
        assert inside(centre(drawn[node.id]), frame) == (node.layer == 1), node.name
        assert ("layer-1" in classes(drawn[node.id])) == (node.layer == 1)


def test_module_scopes_become_frames(renderer):
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 1))
    d = viz.draw(model(tg.ones(5, 3)).sum(), params=model)
    root = parse(d.svg)
    snap = d.snapshot
    drawn = nodes_by_title(root)
    first, last = cluster_box(root, "module-0"), cluster_box(root, "module-2")
    assert "0 (Linear)" in texts(by_id(root)["cluster-module-0"])
    assert "2 (Linear)" in texts(by_id(root)["cluster-module-2"])
    for name in ("0.weight", "0.bias"):
        assert inside(centre(drawn[snap.node_named(name).id]), first)
    for name in ("2.weight", "2.bias"):
        assert inside(centre(drawn[snap.node_named(name).id]), last)
    addmm = [drawn[i] for i in ids_named(snap, "AddmmBackward0")]
    assert sum(inside(centre(g), first) for g in addmm) == 1
    assert sum(inside(centre(g), last) for g in addmm) == 1
    tanh = centre(drawn[snap.node_named("TanhBackward0").id])
    assert not inside(tanh, first) and not inside(tanh, last)  # reads activations only


class _Block(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = tg.nn.ModuleList([tg.nn.Linear(2, 2) for _ in range(2)])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).relu()
        return x


class _Net(tg.nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = _Block()
        self.head = tg.nn.Linear(2, 1)

    def forward(self, x):
        return self.head(self.encoder(x))


def test_nested_modules_nest_their_frames(renderer):
    net = _Net()
    d = viz.draw(net(tg.ones(3, 2)).sum(), params=net)
    root = parse(d.svg)
    outer, middle = cluster_box(root, "module-encoder"), cluster_box(root, "module-encoder.layers")
    inner = cluster_box(root, "module-encoder.layers.0")
    assert "encoder.layers.0 (Linear)" in texts(by_id(root)["cluster-module-encoder.layers.0"])
    assert "encoder (_Block)" in texts(by_id(root)["cluster-module-encoder"])
    assert inside(inner[:2], middle) and inside(inner[2:], middle)
    assert inside(middle[:2], outer) and inside(middle[2:], outer)
    weight = nodes_by_title(root)[d.snapshot.node_named("encoder.layers.0.weight").id]
    assert inside(centre(weight), inner)
    head = cluster_box(root, "module-head")
    assert not inside(centre(weight), head)


def test_dict_params_name_leaves_and_dotted_names_cluster():
    w = tg.ones(2, requires_grad=True)
    b = tg.ones(2, requires_grad=True)
    source = render.to_dot((w * 2 + b).sum(), params={"lin.w": w, "lin.b": b})
    assert 'label="lin"' in source and "lin.w" in source and "lin.b" in source


# ------------------------------------------------------------------ big graphs


def loop_graph(times=100):
    """h = tanh(h @ W + b), ``times`` times: about 3 * times nodes."""
    tg.manual_seed(0)
    W = tg.randn(4, 4, requires_grad=True)
    W.name = "W"
    b = tg.randn(4, requires_grad=True)
    b.name = "b"
    h = tg.randn(1, 4)
    for _ in range(times):
        h = (h @ W + b).tanh()
    return h.sum()


def test_hundreds_of_nodes_render_fast_folded_into_repeats(renderer):
    loss = loop_graph(100)
    snap = snapshot(loss)
    assert len(snap.nodes) > 300
    started = time.perf_counter()
    svg = render.to_svg(snap)
    assert time.perf_counter() - started < 5
    root = parse(svg)
    drawn = nodes_by_title(root)
    assert len(drawn) < 40  # folded: legible
    assert "repeat 1 of 100" in texts(by_id(root)["cluster-repeat-1"])
    assert "repeat 100 of 100" in texts(by_id(root)["cluster-repeat-100"])
    folds = [g for g in drawn.values() if "fold" in classes(g)]
    assert len(folds) == 1 and "repeat" in classes(folds[0])
    assert "repeats 2-99 of 100 (98 folded)" in texts(folds[0])
    assert "MmBackward0 → AddBackward0 → TanhBackward0" in texts(folds[0])  # forward order
    assert "294 nodes folded" in texts(folds[0])


def test_hundreds_of_nodes_unfolded_render_within_seconds_clustered(renderer):
    snap = snapshot(loop_graph(100))
    started = time.perf_counter()
    svg = render.to_svg(snap, fold=False)
    assert time.perf_counter() - started < 10
    root = parse(svg)
    assert len(nodes_by_title(root)) > 400  # every node and saved-tensor card
    frames = [g for g in root.iter(SVG + "g") if "repeat" in classes(g) and "cluster" in classes(g)]
    assert len(frames) == 100
    # each repetition frames one MmBackward0, AddBackward0 and TanhBackward0
    drawn = nodes_by_title(root)
    second = cluster_box(root, "repeat-2")
    inside_names = sorted(n.name for n in snap.nodes if inside(centre(drawn[n.id]), second))
    assert inside_names == ["AddBackward0", "MmBackward0", "TanhBackward0"]


def test_deep_model_folds_modules_and_keeps_the_current_node_open(renderer):
    model = tg.nn.Sequential(*[m for _ in range(30) for m in (tg.nn.Linear(4, 4), tg.nn.Tanh())])
    loss = model(tg.ones(2, 4)).sum()
    assert len(snapshot(loss, params=model).nodes) > 200
    steps = []
    for step in tg.autograd.backward_steps(loss):
        steps.append(step)
        if len([s for s in steps if s.node.name() == "AddmmBackward0"]) == 15:
            break  # now inside the middle of the network
    d = viz.draw(loss, params=model, steps=steps)
    root = parse(d.svg)
    drawn = nodes_by_title(root)
    current = next(n for n in d.snapshot.nodes if n.current)
    assert current.name == "AddmmBackward0"
    assert "current" in classes(drawn[current.id])  # not folded away
    folds = [g for g in drawn.values() if "fold" in classes(g)]
    assert sum("repeat" in classes(g) for g in folds) == 2  # the repeats before and after it
    assert any("(Linear)" in t for g in folds if "module" in classes(g) for t in texts(g))
    ran_folds = [g for g in folds if "ran" in classes(g)]
    assert ran_folds  # the folded layers near the output have run already
    assert len(drawn) < 80


def test_a_clicked_frame_folds_and_a_clicked_fold_opens_again(renderer):
    """``folded`` holds the learner's clicks: True folds a frame into one box (which names
    the frames it opens), False keeps a frame open where a big graph would fold it."""
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    loss = model(tg.ones(2, 3)).sum()
    root = parse(render.to_svg(snapshot(loss, params=model), params=model))
    assert {"cluster-module-0", "cluster-module-2"} <= set(by_id(root))
    folded = parse(
        render.to_svg(snapshot(loss, params=model), params=model, folded={"module-0": True})
    )
    assert "cluster-module-0" not in by_id(folded) and "cluster-module-2" in by_id(folded)
    (box,) = [g for g in nodes_by_title(folded).values() if "fold" in classes(g)]
    assert {"module", "opens-module-0"} <= set(classes(box))
    assert "0 (Linear)" in texts(box) and "AddmmBackward0" in " ".join(texts(box))
    # opened by a click: a graph that folds by itself keeps this one frame open
    auto = parse(render.to_svg(snapshot(loss, params=model), params=model, fold=True))
    kept = render.to_svg(
        snapshot(loss, params=model), params=model, fold=True, folded={"module-2": False}
    )
    assert "cluster-module-2" not in by_id(auto) and "cluster-module-2" in by_id(parse(kept))
    assert "cluster-module-0" not in by_id(parse(kept))


def test_a_clicked_repeat_folds_and_opened_repeats_split_the_folded_run(renderer):
    loss = loop_graph(10)
    one = parse(render.to_svg(snapshot(loss), fold=False, folded={"repeat-3": True}))
    (box,) = [g for g in nodes_by_title(one).values() if "fold" in classes(g)]
    assert "opens-repeat-3" in classes(box) and "repeat 3 of 10 (folded)" in texts(box)
    split = parse(render.to_svg(snapshot(loss), fold=True, folded={"repeat-5": False}))
    titles = sorted(
        t
        for g in nodes_by_title(split).values()
        if "fold" in classes(g)
        for t in texts(g)
        if "repeat" in t
    )
    assert titles == ["repeats 2-4 of 10 (3 folded)", "repeats 6-9 of 10 (4 folded)"]
    assert "cluster-repeat-5" in by_id(split)
    # a run opens as a whole: one short class name, however long the loop
    opens = sorted(
        c for g in nodes_by_title(split).values() for c in classes(g) if c.startswith("opens-")
    )
    assert opens == ["opens-repeat-2~4", "opens-repeat-6~9"]
    box = viz._box.PictureBox()
    box.choose({"open": ["repeat-6~9"]})
    assert box.folded == {f"repeat-{k}": False for k in range(6, 10)}
    long_loop = render.to_svg(snapshot(loop_graph(400)))  # 398 repeats folded into one box
    assert "repeats 2-399 of 400" in " ".join(texts(parse(long_loop)))


def test_the_frame_of_the_running_node_is_never_folded(renderer):
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    loss = model(tg.ones(2, 3)).sum()
    steps = list(itertools.islice(tg.autograd.backward_steps(loss), 2))  # Sum, then 2's Addmm
    assert steps[-1].node.name() == "AddmmBackward0"
    d = viz.draw(loss, params=model, steps=steps, folded={"module-2": True, "module-0": True})
    assert "cluster-module-2" in by_id(parse(d.svg)) and "cluster-module-0" not in by_id(
        parse(d.svg)
    )


# ------------------------------------------------------------------ the renderer chain


def test_env_var_forces_text(monkeypatch):
    monkeypatch.setenv(render.ENV_VAR, "text")
    assert render.find_renderer() is None
    *_, loss = small_graph()
    d = viz.draw(loss)
    assert d.svg is None and d._repr_svg_() is None
    bundle = d._repr_mimebundle_()
    assert set(bundle) == {"text/plain"}
    assert bundle["text/plain"].startswith(viz.text(loss))
    assert "text rendering was chosen" in bundle["text/plain"]


def test_env_var_forces_each_program(renderer):
    *_, loss = small_graph()
    d = viz.draw(loss)
    assert f"renderer: {renderer.name}" in repr(d)
    assert "<svg" in d.svg
    bundle = d._repr_mimebundle_()
    assert bundle["image/svg+xml"] == d.svg == d._repr_svg_()
    assert bundle["text/plain"] == viz.text(loss)
    assert bundle["text/html"].startswith('<div class="tg-fit">')  # what Jupyter shows
    assert Path(renderer.program).name.startswith(renderer.name)


def test_a_drawing_fits_its_width_and_a_big_one_can_be_zoomed():
    """The HTML picture has no fixed size: it takes its container's width, up to its own
    natural width (the viewBox keeps the proportions); wide graphs get a zoom switch."""
    small = viz.draw(tg.ones(2, requires_grad=True).exp())
    model = tg.nn.Sequential(*[tg.nn.Linear(4, 4) for _ in range(8)])
    wide = viz.draw(model(tg.ones(2, 4)).sum(), params=model, rankdir="LR", legend=True)
    if small.svg is None:
        pytest.skip("no Graphviz renderer: the picture is text")
    for drawing, zoomable in ((small, False), (wide, True)):
        html = drawing._repr_mimebundle_()["text/html"]
        svg_tag = re.search(r"<svg\b[^>]*>", html).group(0)
        natural = natural_width(drawing.svg)
        assert 'width="100%"' in svg_tag and "height=" not in svg_tag
        assert f"max-width:{natural:.0f}px" in svg_tag and "viewBox=" in svg_tag
        assert ('class="tg-zoom"' in html) is zoomable
    assert natural_width(wide.svg) > 1000  # the case that ran off the output area


def test_set_renderer_wins_over_the_env_var(monkeypatch):
    monkeypatch.setenv(render.ENV_VAR, "dot")
    assert render.renderer_choice() == "dot"
    render.set_renderer("text")
    assert render.renderer_choice() == "text" and render.find_renderer() is None
    assert render.set_renderer(None) == "text"
    assert render.renderer_choice() == "dot"


def test_unknown_renderer_names_are_refused(monkeypatch):
    with pytest.raises(ValueError, match="graphviz-pure"):
        render.set_renderer("cairo")
    monkeypatch.setenv(render.ENV_VAR, "neato")
    with pytest.raises(ValueError, match="TEACHGRAD_VIZ_RENDERER"):
        render.find_renderer()


@pytest.fixture
def bare_machine(tmp_path, monkeypatch):
    """No Graphviz anywhere: an empty PATH and an interpreter folder without programs."""
    path_dir, python_dir = tmp_path / "bin", tmp_path / "venv" / "bin"
    path_dir.mkdir()
    python_dir.mkdir(parents=True)
    monkeypatch.setenv("PATH", str(path_dir))
    monkeypatch.setattr(sys, "executable", str(python_dir / "python"))
    return path_dir, python_dir


def test_without_any_program_draw_falls_back_to_text_and_says_what_to_install(bare_machine):
    assert render.find_renderer() is None
    message = render.no_renderer_message()
    assert "Graphviz is not installed" in message
    assert "pip install 'teachgrad[viz]'" in message and "apt-get install graphviz" in message
    *_, loss = small_graph()
    d = viz.draw(loss)
    bundle = d._repr_mimebundle_()
    assert set(bundle) == {"text/plain"}
    assert viz.text(loss) in bundle["text/plain"] and message in bundle["text/plain"]
    assert render.to_svg(loss) is None and render.render(d.source, "png") is None
    with pytest.raises(RuntimeError, match="pip install 'teachgrad\\[viz\\]'"):
        d.save(bare_machine[0] / "graph.svg")
    assert d.save(bare_machine[0] / "graph.dot").read_text() == d.source  # needs no Graphviz


def test_forcing_a_missing_program_says_so(bare_machine, monkeypatch):
    monkeypatch.setenv(render.ENV_VAR, "dot")
    assert render.find_renderer() is None
    assert "asks for 'dot', but it is not installed" in render.no_renderer_message()


def test_auto_finds_graphviz_pure_next_to_the_interpreter(bare_machine):
    real = installed("graphviz-pure")
    if real is None:
        pytest.skip("graphviz-pure is not installed here")
    _, python_dir = bare_machine
    (python_dir / "graphviz-pure").symlink_to(real.program)  # where pip puts it in a venv
    found = render.find_renderer()
    assert found.name == "graphviz-pure"
    assert "graphviz-pure" in render.to_svg(small_graph()[-1])  # its SVG names itself


def test_auto_prefers_the_system_dot(bare_machine):
    dot, pure = installed("dot"), installed("graphviz-pure")
    if dot is None or pure is None:
        pytest.skip("needs both dot and graphviz-pure installed")
    path_dir, python_dir = bare_machine
    (python_dir / "graphviz-pure").symlink_to(pure.program)
    (path_dir / "dot").symlink_to(dot.program)
    assert render.find_renderer().name == "dot"


@pytest.mark.skipif(os.name == "nt", reason="the fake program is a shell script")
def test_a_failing_program_raises_with_its_message(bare_machine):
    path_dir, _ = bare_machine
    fake = path_dir / "dot"
    fake.write_text("#!/bin/sh\necho 'Error: <stdin>: syntax error in line 3' >&2\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(
        RuntimeError, match="dot -Tsvg failed \\(exit 1\\): Error: <stdin>: syntax error"
    ):
        render.to_svg(small_graph()[-1])


# ------------------------------------------------------------------ saving files

MAGIC = {".svg": b"<?xml", ".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF-"}


def _check_pdf(data: bytes) -> None:
    """A PDF a reader can open: its cross-reference table points at each object."""
    assert data.rstrip().endswith(b"%%EOF")
    table = int(re.search(rb"startxref\s+(\d+)", data).group(1))
    assert data[table:].startswith(b"xref")
    count = int(re.match(rb"xref\s+0 (\d+)", data[table:]).group(1))
    offsets = re.findall(rb"(\d{10}) 00000 n", data[table:])
    assert len(offsets) == count - 1
    for number, offset in enumerate(offsets, 1):
        assert data[int(offset) :].startswith(f"{number} 0 obj".encode())


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf"])
def test_save_writes_the_format_of_the_suffix(renderer, suffix, tmp_path):
    *_, loss = small_graph()
    path = viz.draw(loss).save(tmp_path / f"graph{suffix}")
    data = path.read_bytes()
    assert data.startswith(MAGIC[suffix]), data[:16]
    if suffix == ".svg":
        assert "MulBackward0" in data.decode()
    if suffix == ".pdf":
        _check_pdf(data)
    if suffix == ".pdf" and renderer.name == "graphviz-pure":
        assert b"/DCTDecode" in data  # graphviz-pure writes no PDF: a picture is wrapped


def test_save_refuses_unknown_suffixes(tmp_path):
    d = viz.draw(small_graph()[-1])
    with pytest.raises(ValueError, match=r"\.svg, \.png, \.pdf"):
        d.save(tmp_path / "graph.jpeg")


def test_render_refuses_unknown_formats():
    with pytest.raises(ValueError, match="svg, png, pdf"):
        render.render("digraph { a }", "gif")


# ------------------------------------------------------------------ the one-way rule


def test_viz_imports_only_teachgrads_public_api():
    """DESIGN.md: viz reads teachgrad's snapshot and event data only, through public names."""
    allowed = {"teachgrad", "teachgrad.autograd", "teachgrad.autograd.graph", "teachgrad.nn"}
    folder = Path(viz.__file__).parent
    for file in folder.glob("*.py"):
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] == "teachgrad":
                    assert name in allowed, f"{file.name} imports {name}"

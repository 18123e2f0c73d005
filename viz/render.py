"""Pictures of the graph: a snapshot becomes DOT source, and DOT becomes SVG, PNG or PDF.

Two halves, one file:

1. ``to_dot(snapshot)`` writes the graph in Graphviz's DOT language. The whole visual
   language lives in the tables ``KINDS`` and ``STATES`` just below, so every picture in
   viz (static drawings, the live widget, the backward stepper) looks the same:

   ==============  ===========================================================
   leaf tensor     blue ellipse (``x``, ``layers.0.weight``); small ones show their
                   values and, once backward filled it, their ``.grad``: ``[1, 2] | grad [2, 4]``
   constant        small grey ellipse: an input that needs no gradient but was saved
                   (the data ``x`` of ``model(x)``, targets), with its values when small
   output tensor   yellow double ellipse (the tensor you called backward on)
   Function node   grey rounded box (``MulBackward0``)
   AccumulateGrad  purple hexagon (adds the gradient into ``leaf.grad``)
   saved tensors   an orange note beside its node (a dashed tie), one row per tensor
                   with shape, dtype, values when small, and version badge: ``v0``, or ``v1 (saved v0)``
                   in bold red on a red-tinted row (and a red border) once it is
                   stale; grey and dashed once backward released it
   edges           point the way data flows in forward, labelled with the shape;
                   during backward, those that carried a gradient turn orange, show
                   it, and point the way it went (back towards the leaves)
   backward        green fill: ran earlier; thick orange border: this step (ran just now); dashed: ready
   clusters        pink frame: the graph of the gradient (``create_graph=True``);
                   grey frames: nn.Module scopes and repetitions of a loop;
                   a 3-D box: a cluster folded away to keep big graphs small
   ==============  ===========================================================

   In the SVG every node's ``<title>`` is its snapshot id and its ``<g>`` has
   ``id="node-<id>"`` and classes such as ``function ran current``. The saved-tensor
   note of node ``<id>`` is ``saved-<id>`` (classes ``saved``, ``stale``, ``released``),
   each of its rows ``a_saved-<id>-<name>``; edges are ``edge-<from>-<to>-<input_nr>``
   (class ``grad`` once a gradient went back along them); frames are
   ``cluster-layer1``, ``cluster-module-<name>``, ``cluster-repeat-<k>``; folded
   boxes ``node-fold<k>``. Tests and a browser can find things by these names.

2. ``render(source, "svg")`` runs a Graphviz program: the system ``dot`` when it is
   installed, else the ``graphviz-pure`` executable from the ``teachgrad[viz]`` wheel,
   else nothing (``None``: callers fall back to ``viz.text``). Force a choice with the
   environment variable ``TEACHGRAD_VIZ_RENDERER`` (``dot``, ``graphviz-pure``, ``text``)
   or ``set_renderer(...)``.

Which nodes are framed or folded together is decided in ``_clusters.py``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections import defaultdict
from html import escape

try:
    import resource  # Unix: how much CPU a Graphviz run took (GraphView's budget)
except ImportError:  # Windows
    resource = None

from ._clusters import group
from ._graph import (
    as_snapshot,
    forward_order,
    output_names,
    progress,
    shape_text,
    short_name,
    shown_outputs,
    version_badge,
    wants_grads,
)
from ._rules import short_rules

# ------------------------------------------------------------------ the visual language

FONT = "Helvetica"
VALUES = 6  # tensors with at most this many elements show their values (draw(values=...))
KINDS = {  # what a node is: its shape and colours
    "leaf": {"shape": "ellipse", "style": "filled", "fillcolor": "#cfe8ff", "color": "#1565c0"},
    "output": {
        "shape": "ellipse",
        "style": "filled",
        "peripheries": "2",
        "fillcolor": "#fff3bf",
        "color": "#a67c00",
    },
    "function": {
        "shape": "box",
        "style": "rounded,filled",
        "fillcolor": "#eeeeee",
        "color": "#424242",
    },
    "accumulate": {
        "shape": "hexagon",
        "style": "filled",
        "fillcolor": "#e8dcf5",
        "color": "#5e35b1",
    },
    "constant": {
        "shape": "ellipse",
        "style": "filled",
        "fillcolor": "#e0e0e0",
        "color": "#9e9e9e",
        "fontcolor": "#424242",
        "fontsize": "9",
        "margin": "0.04,0.02",
    },
    "saved": {"shape": "note", "style": "filled", "fillcolor": "#ffe6c7", "color": "#d9822b"},
    "fold": {
        "shape": "box3d",
        "style": "filled",
        "fillcolor": "#f5f5f5",
        "color": "#616161",
        "margin": "0.15,0.08",
    },
}
STATES = {  # what is happening to it: drawn over the kind's style
    "ran": {"fillcolor": "#c8e6c9", "color": "#2e7d32"},
    "current": {"fillcolor": "#ffe0b2", "color": "#e65100", "penwidth": "3"},
    "ready": {"color": "#e65100", "style": "dashed"},
    "stale": {"fillcolor": "#ffcdd2", "color": "#c62828", "penwidth": "2"},
    "anomaly": {"fillcolor": "#ffcdd2", "color": "#b71c1c", "penwidth": "4"},  # detect_anomaly
    "released": {
        "fillcolor": "#f5f5f5",
        "color": "#9e9e9e",
        "fontcolor": "#9e9e9e",
        "style": "dashed",
    },
}
CLUSTERS = {  # frames around groups of nodes
    "layer": {"style": "dashed,filled", "fillcolor": "#fdeef4", "color": "#ad1457"},
    "module": {"style": "rounded,filled", "fillcolor": "#f7f7fb", "color": "#9e9e9e"},
    "repeat": {"style": "rounded,filled", "fillcolor": "#f7f7fb", "color": "#9e9e9e"},
}
TEXT_COLORS = {
    "detail": "#555555",  # shapes, dtypes
    "grad": "#d84315",  # gradients, on edges and leaves
    "rule": "#6a1b9a",  # derivative rules (draw(formulas=True))
    "stale": "#c62828",  # the version badge of a stale saved tensor
    "released": "#9e9e9e",
}


class Html(str):
    """A Graphviz HTML-like label: written ``<...>`` instead of ``"..."`` in DOT."""


def _label(title: str, *lines) -> Html:
    """A bold title over smaller lines; each line is ``(text, colour name or None)``, or a
    list of such pieces written one after the other."""
    rows = [f"<b>{escape(title)}</b>"]
    for line in lines:
        pieces = line if isinstance(line, list) else [line]
        rows.append("".join(_piece(text, color) for text, color in pieces))
    return Html("<" + "<br/>".join(rows) + ">")


def _piece(text: str, color) -> str:
    return f'<font point-size="9" color="{TEXT_COLORS[color or "detail"]}">{escape(text)}</font>'


def _attrs(**attrs) -> str:
    """``[a="1", label=<...>]`` with DOT's quoting (None values are left out)."""
    parts = []
    for key, value in attrs.items():
        if value is None:
            continue
        if isinstance(value, Html):
            parts.append(f"{key}={value}")
        else:
            quoted = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            parts.append(f'{key}="{quoted}"')
    return "[" + ", ".join(parts) + "]"


def _style(kind: str, states=()) -> dict:
    """The attributes of a node of this kind in these states (later states win)."""
    style = dict(KINDS[kind])
    for state in states:
        extra = dict(STATES[state])
        if "style" in extra:  # add dashes to "filled"/"rounded" instead of replacing them
            extra["style"] = f"{style['style']},{extra['style']}"
        style.update(extra)
    return style


# ------------------------------------------------------------------ snapshot -> DOT


@dataclasses.dataclass
class _Options:
    show_saved: bool
    show_versions: bool
    show_grads: bool  # gradients on the edges
    leaf_grads: bool  # each leaf's .grad, once it has one
    values: int  # tensors with at most this many elements show their values
    formulas: bool = False  # each Function node shows its derivative rules
    shown: set = dataclasses.field(default_factory=set)  # names the output nodes show

    def small(self, shape) -> bool:
        """Whether a tensor of this shape is small enough to show its values."""
        return math.prod(shape) <= self.values


def to_dot(
    graph,
    show_saved=True,
    show_versions=True,
    show_grads=None,
    params=None,
    rankdir="TB",
    fold=None,
    legend=False,
    values=VALUES,
    formulas=False,
    failure=None,
    folded=None,
) -> str:
    """The DOT source of a picture of ``graph`` (a snapshot, a tensor, or a list of tensors).

    ``show_saved``: draw saved tensors; ``show_versions``: their version badges;
    ``show_grads``: gradients on edges (None: only during backward) and on leaves
    (None: once they have one; False: never); ``params``: a Module or dict naming
    leaves (its module scopes become clusters); ``rankdir``: "TB" (leaves on top) or
    "LR"; ``fold``: draw clusters of big graphs as single boxes (None: above 120
    nodes); ``folded``: frames folded (True) or kept open (False) by choice, by ident
    (``{"module-layers.0": True}``; a click in a widget sets them); ``legend``: add a key to the picture; ``values``: tensors with at most
    this many elements show their values (0: none); ``formulas``: each Function node
    shows the local derivative rule of each input (``∂self = ∂out · other``);
    ``failure``: ``(op, message)`` of an op that raised, drawn as a red box that the
    roots (its inputs) flow into.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); x.name = "x"
    >>> source = to_dot((x * x).sum())
    >>> source.startswith("digraph"), "MulBackward0" in source, 'label="[2]"' in source
    (True, True, True)
    """
    snap = as_snapshot(graph, params=params)
    edge_grads = wants_grads(snap, show_grads)
    options = _Options(show_saved, show_versions, edge_grads, show_grads is not False, values)
    options.shown, options.formulas = shown_outputs(snap), formulas
    grouping = group(snap, _module_types(params), fold, folded)
    body = defaultdict(list)  # cluster key (None: top level) -> DOT lines of its nodes
    leaf_of = _leaf_names(snap)
    for node in snap.nodes:
        if node.id not in grouping.hidden:
            home = grouping.home.get(node.id)
            body[home] += _node_lines(node, snap, leaf_of, options)
    order = {node_id: i for i, node_id in enumerate(forward_order(snap))} if grouping.folds else {}
    for fold_box in grouping.folds.values():
        body[fold_box.parent].append(_fold_line(fold_box, snap, order))
    for constant, edge in zip(snap.constants, snap.constant_edges):
        if edge.target not in grouping.hidden:  # (a constant of a folded node folds with it)
            body[grouping.home.get(edge.target)] += _constant_lines(constant, edge, options)
    lines = _header(snap, rankdir)
    lines += _cluster_lines(grouping, body, None, 1)
    lines += _edge_lines(snap, grouping, options)
    if failure is not None:
        lines += _failure_lines(snap, *failure)
    if legend:
        lines += _legend_lines(rankdir)
    return "\n".join(lines + ["}"]) + "\n"


def _failure_lines(snap, op: str, message: str) -> list:
    """The op that raised: a red box, fed by the tensors it was called on (the roots)."""
    wrapped = textwrap.wrap(message, 48)[:4]
    attrs = _attrs(
        label=_label(f"✗ {op} raised", *[(line, "stale") for line in wrapped]),
        id="node-failed",
        **{"class": "failed"},
        **_style("function", ["anomaly"]),
    )
    tie = _attrs(style="dashed", color=STATES["anomaly"]["color"])
    return [f'  "failed" {attrs};'] + [
        f'  {_quote(root)} -> "failed" {tie};' for root in snap.roots
    ]


def _module_types(params) -> dict:
    """``{"layers.0": "Linear", ...}`` from a Module (a dict of tensors has no types)."""
    if not hasattr(params, "named_modules"):
        return {}
    return {name: type(module).__name__ for name, module in params.named_modules() if name}


def _leaf_names(snap) -> dict:
    """AccumulateGrad id -> the name of the leaf it feeds (shown as ``into x.grad``)."""
    names = {n.id: n.name for n in snap.nodes if n.kind == "leaf"}
    return {e.target: names[e.source] for e in snap.edges if e.source in names}


def _header(snap, rankdir: str) -> list:
    lines = [
        "digraph teachgrad {",
        f"  graph {_attrs(rankdir=rankdir, fontname=FONT, nodesep='0.3', ranksep='0.35', id='teachgrad-graph')};",
        f"  node {_attrs(fontname=FONT, fontsize='11', margin='0.08,0.04')};",
        f"  edge {_attrs(fontname=FONT, fontsize='9', color='#757575', fontcolor=TEXT_COLORS['detail'])};",
    ]
    if snap.in_backward:  # a caption saying how far backward got
        lines.append(f"  graph {_attrs(label=progress(snap), labelloc='b', fontsize='11')};")
    return lines


def _node_lines(node, snap, leaf_of: dict, options: _Options) -> list:
    """The node itself, then the card of its saved tensors beside it (same rank)."""
    states = [s for s in ("ran", "current") if getattr(node, s)]
    if node.id in snap.ready:
        states.append("ready")
    if node.anomaly:  # anomaly detection found the problem here
        states.append("anomaly")
    classes = [node.kind, *states] + ([f"layer-{node.layer}"] if node.layer else [])
    name = _quote(node.id)
    attrs = _attrs(
        label=_node_label(node, snap, leaf_of, options),
        id=f"node-{node.id}",
        tooltip=_tooltip(node),
        **{"class": " ".join(classes)},
        **_style(node.kind, states),
    )
    lines = [f"{name} {attrs};"]
    if options.show_saved and node.saved:
        card = _quote(f"{node.id}_saved")
        lines.append(f"{card} {_saved_card(node, options)};")
        tie = _attrs(style="dashed", arrowhead="none", color=KINDS["saved"]["color"])
        lines.append(f"{name} -> {card} {tie};")
        lines.append(f"{{rank=same; {name}; {card};}}")
    return lines


def _node_label(node, snap, leaf_of: dict, options: _Options) -> Html:
    """Name in bold; below it the facts that matter for this kind of node."""
    shape = shape_text(node.shapes[0]) if node.shapes else ""
    dtype = node.dtypes[0] if node.dtypes else ""
    lines = []
    if node.kind == "function":
        named = output_names(node, options.shown)
        lines += [(f"= {', '.join(named)}", None)] if named else []
        if options.formulas and node.formula:
            lines += [(rule, "rule") for rule in short_rules(node.formula)]
        lines += [(f"anomaly: {node.anomaly}", "stale")] if node.anomaly else []
    elif node.kind == "accumulate":
        lines.append((f"into {leaf_of.get(node.id, 'leaf')}.grad", None))
    else:  # a tensor: leaf or output
        device = node.devices[0] if node.devices and node.devices[0] != "cpu" else ""
        lines.append((f"{shape} {dtype} {device}".rstrip(), None))
        if node.kind == "output" and node.value is not None:
            lines.append((f"= {node.value}", None))
        if node.kind == "leaf" and not node.requires_grad:
            lines.append(("no grad", None))
        if node.kind == "leaf":
            lines += _data_and_grad(node, options)
        elif options.show_grads and node.grad is not None:
            lines.append((f"grad {node.grad}", "grad"))
    return _label(short_name(node.name), *lines)


def _data_and_grad(node, options: _Options) -> list:
    """A small leaf's values and ``.grad`` as micrograd shows them: ``[1, 2] | grad [2, 4]``
    (on two lines when that is too long to read)."""
    small = node.shapes and options.small(node.shapes[0])
    data = [(node.value, None)] if small and node.value is not None else []
    grad = [(f"grad {node.grad}", "grad")] if options.leaf_grads and node.grad else []
    if data and grad and len(node.value) + len(node.grad) <= 30:
        return [[*data, (" | ", None), *grad]]
    return data + grad


def _constant_lines(constant, edge, options: _Options) -> list:
    """An input that needs no gradient, saved by the node it flows into: a small grey box
    with its values when small, and a dashed edge into that node."""
    shape = constant.shapes[0]
    detail = constant.value if options.small(shape) else f"{shape_text(shape)} {constant.dtypes[0]}"
    attrs = _attrs(
        label=_label(constant.name, (detail, None)),
        id=f"node-{constant.id}",
        tooltip=f"{constant.name}: needs no gradient (requires_grad=False)\n{constant.value}",
        **{"class": "constant"},
        **_style("constant"),
    )
    tie = _attrs(
        id=f"edge-{edge.source}-{edge.target}-{edge.input_nr}",
        style="dashed",
        color=KINDS["constant"]["color"],
        label=shape_text(edge.shape),
    )
    return [
        f"{_quote(constant.id)} {attrs};",
        f"{_quote(constant.id)} -> {_quote(edge.target)} {tie};",
    ]


def _saved_card(node, options: _Options) -> str:
    """What a node saved for backward: one row per tensor with its shape and version badge.

    A stale row (changed in place since it was saved) is tinted red with a red badge;
    a released row (backward freed it) is grey. In the SVG each row is the group
    ``a_saved-<node>-<name>``, with a preview of the values as its tooltip.
    """
    rows = [
        '<tr><td align="left"><font point-size="8" color="#8d6e63">saved for backward</font></td></tr>'
    ]
    for saved in node.saved:
        rows.append(_saved_row(node, saved, options))
    table = '<table border="0" cellborder="0" cellspacing="0" cellpadding="2">' + "".join(rows)
    states = [s for s in ("stale", "released") if any(getattr(t, s) for t in node.saved)]
    if all(t.released for t in node.saved):  # grey the whole card only when all of it is gone
        style = _style("saved", ["released"])
    else:
        style = _style("saved", ["stale"] if "stale" in states else [])
        style["fillcolor"] = KINDS["saved"]["fillcolor"]  # rows carry their own tint
    return _attrs(
        label=Html(f"<{table}</table>>"),
        id=f"saved-{node.id}",
        margin="0.04",
        **{"class": " ".join(["saved", *states])},
        **style,
    )


def _saved_row(node, saved, options: _Options) -> str:
    text = f"<b>{escape(saved.name)}</b> {escape(shape_text(saved.shape))} {escape(saved.dtype)}"
    if options.show_versions:
        badge = escape(version_badge(saved))
        text += (
            f' <font color="{TEXT_COLORS["stale"]}"><b>{badge}</b></font>'
            if saved.stale
            else f" {badge}"
        )
    if saved.preview is not None and options.small(saved.shape):
        text += f" = {escape(saved.preview)}"
    if saved.hooked:  # a saved_tensors_hooks pack hook holds it (e.g. save_on_cpu)
        text += " <i>packed by hook</i>"
    if saved.released:
        text = f'<font color="{TEXT_COLORS["released"]}">{text} released</font>'
    tint = "#ffebee" if saved.stale and not saved.released else None  # a pale red row
    cell = {
        "align": "left",
        "id": f"saved-{node.id}-{saved.name}",
        "title": f"{saved.name}: {saved.preview or ('packed by a hook' if saved.hooked else 'released')}",
        "href": "",  # Graphviz wraps a cell in a tooltip-carrying <a> (with no link) only with an href
        "bgcolor": tint,
    }
    cell_attrs = " ".join(f'{k}="{escape(v)}"' for k, v in cell.items() if v is not None)
    return f"<tr><td {cell_attrs}>{text}</td></tr>"


def _tooltip(node) -> str:
    """What a browser shows on hover: the facts that did not fit in the box."""
    facts = [f"{node.name} ({node.kind}, id {node.id})"]
    facts += [f"output {shape_text(s)} {d}" for s, d in zip(node.shapes, node.dtypes)]
    if node.value is not None:
        facts.append(f"value {node.value}")
    if node.grad is not None:
        facts.append(f"grad {node.grad}")
    return "\n".join(facts)


def _fold_line(fold_box, snap, order: dict) -> str:
    """A folded cluster: one box naming what it hides (its ops in forward order), and
    whether any of it matters now (backward's progress, stale saved tensors)."""
    hidden = sorted((snap.node(i) for i in fold_box.members), key=lambda n: order[n.id])
    runnable = [n for n in hidden if n.kind in ("function", "accumulate")]
    ops = list(dict.fromkeys(short_name(n.name) for n in hidden if n.kind == "function"))
    lines = [(" → ".join(ops[:4]) + (" ..." if len(ops) > 4 else ""), None)] if ops else []
    lines.append((f"{len(hidden)} nodes folded", None))
    states = []
    if snap.in_backward and runnable:
        ran = sum(n.ran for n in runnable)
        lines.append((f"{ran} of {len(runnable)} ran", None))
        states += ["ran"] if ran == len(runnable) else []
    stale = sum(s.stale for n in hidden for s in n.saved)
    if stale:
        lines.append((f"{stale} stale saved tensor{'s' * (stale > 1)}", "stale"))
    classes = ["fold", fold_box.kind, *states] + (["has-stale"] if stale else [])
    classes += [f"opens-{ident}" for ident in fold_box.opens]  # what a click opens (viz._box)
    attrs = _attrs(
        label=_label(fold_box.title, *lines),
        id=f"node-{fold_box.key}",
        **{"class": " ".join(classes)},
        **_style("fold", states),
    )
    return f"{_quote(fold_box.key)} {attrs};"


def _cluster_lines(grouping, body: dict, key, depth: int) -> list:
    """The nodes of cluster ``key``, then its sub-clusters, nested like the modules."""
    pad = "  " * depth
    lines = [pad + line for line in body.get(key, [])]
    for child in grouping.children(key):
        lines.append(f"{pad}subgraph {_quote('cluster_' + child.ident)} {{")
        attrs = dict(CLUSTERS[child.kind], label=child.label, fontsize="10", labelloc="t")
        lines.append(
            f"{pad}  graph {_attrs(id=f'cluster-{child.ident}', **{'class': child.kind}, **attrs)};"
        )
        lines += _cluster_lines(grouping, body, child.key, depth + 1)
        lines.append(pad + "}")
    return lines


def _edge_lines(snap, grouping, options: _Options) -> list:
    """Forward data flow, labelled with shapes (and gradients once backward sent them)."""
    lines, seen = [], set()
    for edge in snap.edges:
        source = grouping.hidden.get(edge.source, edge.source)
        target = grouping.hidden.get(edge.target, edge.target)
        folded = source != edge.source or target != edge.target
        if source == target or (folded and (source, target) in seen):
            continue  # inside one fold, or already drawn between the same two boxes
        seen.add((source, target))
        attrs = {"id": f"edge-{edge.source}-{edge.target}-{edge.input_nr}"}
        if options.show_grads and edge.grad is not None:
            text = f'<{escape(shape_text(edge.shape))}<br/><font color="{TEXT_COLORS["grad"]}">grad {escape(edge.grad)}</font>>'
            # drawn against the forward arrow: the gradient went from target back to source
            attrs.update(label=Html(text), color=TEXT_COLORS["grad"], penwidth="1.6", dir="back")
            attrs["class"] = "grad"
        else:
            attrs["label"] = shape_text(edge.shape)
        lines.append(f"  {_quote(source)} -> {_quote(target)} {_attrs(**attrs)};")
    return lines


def _legend_lines(rankdir: str) -> list:
    """A key: the kinds in one row, the states in another, in a frame of their own."""
    rows = [
        [
            ("leaf", [], "leaf tensor"),
            ("output", [], "output tensor"),
            ("function", [], "Function node"),
            ("accumulate", [], "AccumulateGrad"),
            ("saved", [], "saved tensor v0"),
            ("constant", [], "constant (no grad)"),
        ],
        [
            ("saved", ["stale"], "stale: v1 (saved v0)"),
            ("saved", ["released"], "released"),
            ("function", ["ran"], "ran earlier"),
            ("function", ["current"], "this step"),
            ("function", ["ready"], "ready: runs next"),
            ("function", ["anomaly"], "anomaly"),
        ],
    ]
    frame = _attrs(label="key", labelloc="t", id="cluster-legend", style="rounded", color="#bdbdbd")
    lines = ["  subgraph cluster_legend {", f"    graph {frame};"]
    for r, row in enumerate(rows):
        names = [f"legend{r}_{i}" for i in range(len(row))]
        for name, (kind, states, text) in zip(names, row):
            lines.append(f"    {name} {_attrs(label=text, id=name, **_style(kind, states))};")
        lines.append(f"    {{rank=same; {'; '.join(names)};}}")
        chain = names[::-1] if rankdir == "LR" else names  # LR stacks a "row" bottom-up
        lines.append(f"    {' -> '.join(chain)} [style=invis];")  # keeps the row in order
    lines.append("    legend0_0 -> legend1_0 [style=invis];")
    return lines + ["  }"]


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ------------------------------------------------------------------ DOT -> pictures

ENV_VAR = "TEACHGRAD_VIZ_RENDERER"
CHOICES = ("auto", "dot", "graphviz-pure", "text")
RENDERERS = ("dot", "graphviz-pure")  # the chain, first found wins
FORMATS = ("svg", "png", "pdf")
INSTALL_HINT = (
    "Graphviz is not installed: pip install 'teachgrad[viz]' (graphviz-pure) "
    "or apt-get install graphviz (brew install graphviz on macOS) to see pictures."
)
TIMEOUT_S = 120
PDF_DPI = 150  # graphviz-pure writes no PDF: we wrap a picture of this resolution

_chosen = None  # set_renderer(...); None: the environment variable decides


@dataclasses.dataclass(frozen=True)
class Renderer:
    """A Graphviz program that can lay out DOT: its ``name`` and where it is."""

    name: str  # "dot" or "graphviz-pure"
    program: str


def set_renderer(name) -> str | None:
    """Choose the renderer: "dot", "graphviz-pure", "text" (no picture) or "auto".

    ``None`` goes back to the environment variable ``TEACHGRAD_VIZ_RENDERER`` (default
    "auto": the first of dot, graphviz-pure that is installed). Returns the previous choice.

    >>> previous = set_renderer("text")
    >>> find_renderer() is None
    True
    >>> _ = set_renderer(previous)
    """
    global _chosen
    if name is not None and name not in CHOICES:
        raise ValueError(f"set_renderer({name!r}): choose one of {', '.join(CHOICES)}")
    previous, _chosen = _chosen, name
    return previous


def renderer_choice() -> str:
    """The renderer asked for: ``set_renderer``'s, else ``$TEACHGRAD_VIZ_RENDERER``, else "auto".

    >>> previous = set_renderer("dot"); renderer_choice()
    'dot'
    >>> _ = set_renderer(previous)
    """
    choice = _chosen or os.environ.get(ENV_VAR, "").strip().lower() or "auto"
    if choice not in CHOICES:
        raise ValueError(f"{ENV_VAR}={choice!r}: choose one of {', '.join(CHOICES)}")
    return choice


def find_renderer() -> Renderer | None:
    """The Graphviz program pictures will use, or None (then viz shows text).

    ``dot`` is looked for on PATH, then next to the Python interpreter (a virtual
    environment's ``bin/`` where pip put ``graphviz-pure``), then ``graphviz-pure``.

    >>> found = find_renderer()
    >>> found is None or found.name in ("dot", "graphviz-pure")
    True
    """
    choice = renderer_choice()
    names = RENDERERS if choice == "auto" else () if choice == "text" else (choice,)
    for name in names:
        program = _which(name)
        if program:
            return Renderer(name, program)
    return None


def _which(program: str) -> str | None:
    """The path of ``program`` on PATH, else in the interpreter's own scripts folder."""
    here = os.path.dirname(sys.executable)
    return shutil.which(program) or (shutil.which(program, path=here) if here else None)


def no_renderer_message() -> str:
    """Why there is no picture, and exactly what to install to get one.

    >>> previous = set_renderer("text"); no_renderer_message()
    'Showing text: the text rendering was chosen (TEACHGRAD_VIZ_RENDERER / viz.render.set_renderer).'
    >>> _ = set_renderer(previous)
    """
    choice = renderer_choice()
    if choice == "text":
        return f"Showing text: the text rendering was chosen ({ENV_VAR} / viz.render.set_renderer)."
    if choice != "auto":
        return f"{ENV_VAR} asks for {choice!r}, but it is not installed. {INSTALL_HINT}"
    return INSTALL_HINT


def render(source: str, format: str = "svg") -> bytes | None:
    """Lay out DOT ``source`` as ``format`` ("svg", "png" or "pdf"); None without Graphviz.

    >>> picture = render("digraph { a -> b }")
    >>> picture is None or picture.startswith(b"<?xml")
    True
    """
    if format not in FORMATS:
        raise ValueError(f"render(format={format!r}): choose one of {', '.join(FORMATS)}")
    renderer = find_renderer()
    if renderer is None:
        return None
    if format == "pdf" and renderer.name == "graphviz-pure":
        return _pdf_with_image(_run(renderer, source, "jpg", f"-Gdpi={PDF_DPI}"), PDF_DPI)
    return _run(renderer, source, format)


def _run(renderer: Renderer, source: str, format: str, *extra) -> bytes:
    """Run the Graphviz program and wait for its picture."""
    return Job(renderer, source, format, *extra).result()


class Job:
    """One run of the Graphviz program, started at once and read when wanted: ``done()``
    says whether it finished, ``result()`` waits for the picture (bytes); the program's
    complaints become a RuntimeError that quotes them.

    Its input and output are temporary files, not pipes, so nothing in Python has to
    feed or drain the program while it runs: a live GraphView starts a Job and lets
    the watched loop go on (feeding pipes from a thread instead made the loop 1.27x
    slower, against 1.10x with files: benchmarks/bench_viz.py, (4)).

    >>> found = find_renderer()
    >>> found is None or Job(found, "digraph { a -> b }").result().startswith(b"<?xml")
    True
    """

    def __init__(self, renderer: Renderer, source: str, format: str = "svg", *extra):
        self.renderer, self.format = renderer, format
        # its stdin, stdout and stderr, closed by result()
        self._files = [tempfile.TemporaryFile() for _ in range(3)]  # noqa: SIM115
        stdin, stdout, stderr = self._files
        stdin.write(source.encode())
        stdin.seek(0)
        self.process = subprocess.Popen(
            [renderer.program, f"-T{format}", *extra], stdin=stdin, stdout=stdout, stderr=stderr
        )
        self.cpu_s = None  # the CPU seconds the program used, once it has finished

    def _reap(self, wait):
        """``wait()`` (poll or wait for the program); the first time it finds the program
        finished, note the CPU time it used (the children's usage grew by that much)."""
        before = _children_cpu()
        code = wait()
        if code is not None and self.cpu_s is None:
            self.cpu_s = _children_cpu() - before
        return code

    def done(self) -> bool:
        return self._reap(self.process.poll) is not None

    def result(self) -> bytes:
        try:
            code = self._reap(lambda: self.process.wait(timeout=TIMEOUT_S))
        except subprocess.TimeoutExpired as exc:
            self.process.kill()
            self.process.wait()
            raise RuntimeError(
                f"{self.renderer.name} took more than {TIMEOUT_S}s to lay out the graph"
            ) from exc
        finally:
            _, stdout, stderr = self._files
            stdout.seek(0)
            stderr.seek(0)
            out, err = stdout.read(), stderr.read()
            for f in self._files:
                f.close()
        if code != 0 or not out:
            message = err.decode(errors="replace").strip()
            raise RuntimeError(
                f"{self.renderer.name} -T{self.format} failed (exit {code}): {message}"
            )
        return out


def _children_cpu() -> float:
    """CPU seconds used by this process's finished children (0 where Python cannot tell)."""
    if resource is None:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def to_svg(graph, **draw_options) -> str | None:
    """The SVG picture of ``graph`` (options as ``to_dot``), or None when there is no
    renderer (then show ``viz.text(graph)`` instead).

    >>> import teachgrad as tg
    >>> svg = to_svg(tg.ones(2, requires_grad=True).exp())
    >>> svg is None or "ExpBackward0" in svg
    True
    """
    picture = render(to_dot(graph, **draw_options), "svg")
    return None if picture is None else picture.decode()


# ------------------------------------------------------------------ a picture as a PDF


def _pdf_with_image(jpeg: bytes, dpi: int) -> bytes:
    """A one-page PDF showing a JPEG picture (PDF readers decode JPEG themselves)."""
    width, height, channels = _jpeg_size(jpeg)
    colors = {1: "/DeviceGray", 3: "/DeviceRGB", 4: "/DeviceCMYK"}[channels]
    w_pt, h_pt = width * 72 / dpi, height * 72 / dpi
    draw = f"q {w_pt:.2f} 0 0 {h_pt:.2f} 0 0 cm /Picture Do Q".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {w_pt:.2f} {h_pt:.2f}] "
        "/Resources << /XObject << /Picture 4 0 R >> >> /Contents 5 0 R >>".encode(),
        _stream(
            f"/Type /XObject /Subtype /Image /Width {width} /Height {height} "
            f"/ColorSpace {colors} /BitsPerComponent 8 /Filter /DCTDecode",
            jpeg,
        ),
        _stream("", draw),
    ]
    pdf, offsets = bytearray(b"%PDF-1.4\n"), []
    for number, body in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    table = len(pdf)  # the cross-reference table: where each object starts
    pdf += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    pdf += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    pdf += (
        f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{table}\n%%EOF\n".encode()
    )
    return bytes(pdf)


def _stream(keys: str, data: bytes) -> bytes:
    return f"<< {keys} /Length {len(data)} >>\nstream\n".encode() + data + b"\nendstream"


def _jpeg_size(jpeg: bytes):
    """(width, height, channels) from the JPEG's start-of-frame segment."""
    i = 2
    while i + 9 < len(jpeg):
        marker, length = jpeg[i + 1], int.from_bytes(jpeg[i + 2 : i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            height = int.from_bytes(jpeg[i + 5 : i + 7], "big")
            width = int.from_bytes(jpeg[i + 7 : i + 9], "big")
            return width, height, jpeg[i + 9]
        i += 2 + length
    raise RuntimeError("graphviz-pure wrote a JPEG without a size")

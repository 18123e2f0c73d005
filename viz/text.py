"""The graph as text: the same facts as the pictures, for terminals and machines without Graphviz.

``text(loss)`` prints the graph as a tree read from the output back to the leaves (the
way backward walks it). Each line is one node; below a Function node come the tensors
it saved, with their version badges, STALE when an in-place op changed them since
and ``released`` once backward freed them. A node with one input is followed by that
input on the next line, at the same depth, so long chains do not drift to the right;
``├─`` / ``└─`` mark the inputs of a node that has several. A node reached a second
time (its output was used twice) says so instead of being printed again.

During backward (a snapshot taken with ``steps=``) the lines carry ``[ran]``,
``[this step]`` and ``[ready]``, and the gradient sent back along each edge.
Nodes of the graph built by ``create_graph=True`` carry ``[layer 1]``.
"""

from __future__ import annotations

from ._graph import (
    as_snapshot,
    inputs_of,
    output_names,
    progress,
    shape_text,
    short_name,
    shown_outputs,
    version_badge,
    wants_grads,
)
from ._names import learner_names


def text(graph, show_saved=True, show_versions=True, show_grads=None, params=None, steps=None):
    """The graph behind ``graph`` (a tensor, a list of tensors, or a snapshot) as text.

    Options as ``viz.draw``; ``steps`` (from ``backward_steps``) shows backward's progress.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); x.name = "x"
    >>> y = x.exp()
    >>> loss = y.sum()
    >>> print(text(loss))
    graph of 1 output: 5 nodes (1 output, 2 functions, 1 AccumulateGrad node, 1 leaf), 1 saved tensor
    read from the output back to the leaves, the way backward goes
    output  scalar float32  = 10.11
    SumBackward0  scalar
    ExpBackward0  [2]
      saved result  [2] float32  v0
    AccumulateGrad  [2]  into x.grad  (leaf x  [2] float32)
    >>> _ = y.mul_(2)  # an in-place change to what ExpBackward0 saved
    >>> print(text(loss).splitlines()[5])
      saved result  [2] float32  v1 (saved v0)  STALE: changed in place after it was saved
    """
    snap = as_snapshot(graph, params=learner_names(params), steps=steps)
    grads = wants_grads(snap, show_grads)
    lines = _summary(snap)
    writer = _Tree(snap, show_saved, show_versions, grads)
    for root in snap.roots:
        lines += writer.lines(root)
    return "\n".join(lines)


def _summary(snap) -> list:
    """The first lines: what is in the graph, and how far backward got."""
    counts = {}
    for node in snap.nodes:
        counts[node.kind] = counts.get(node.kind, 0) + 1
    words = {
        "output": "output",
        "function": "function",
        "accumulate": "AccumulateGrad node",
        "leaf": "leaf",
    }
    parts = [_plural(counts[k], w) for k, w in words.items() if counts.get(k)]
    saved = [s for n in snap.nodes for s in n.saved]
    about = f"{_plural(len(saved), 'saved tensor')}" if saved else "nothing saved"
    stale = sum(s.stale for s in saved)
    about += f" ({stale} STALE)" if stale else ""
    roots = _plural(len(snap.roots), "output")
    lines = [
        f"graph of {roots}: {_plural(len(snap.nodes), 'node')} ({', '.join(parts)}), {about}",
        "read from the output back to the leaves, the way backward goes",
    ]
    layers = sorted({n.layer for n in snap.nodes if n.layer})
    for layer in layers:
        inside = sum(n.layer == layer for n in snap.nodes)
        lines.append(
            f"create_graph: {_plural(inside, 'node')} [layer {layer}] belong to the "
            "graph of the gradient, built by a backward pass"
        )
    if snap.in_backward:
        lines.append(progress(snap))
    return lines


def _plural(count: int, word: str) -> str:
    if count == 1:
        return f"1 {word}"
    return f"{count} {word[:-1] + 'ves' if word.endswith('f') else word + 's'}"


class _Tree:
    """Writes the tree below one root; remembers what it printed across roots."""

    def __init__(self, snap, show_saved: bool, show_versions: bool, grads: bool):
        self.snap, self.nodes = snap, {n.id: n for n in snap.nodes}
        self.inputs = inputs_of(snap)
        self.show_saved, self.show_versions, self.grads = show_saved, show_versions, grads
        self.ready = set(snap.ready)
        self.finished = snap.finished
        self.shown = shown_outputs(snap)
        self.printed = set()

    def lines(self, root: str) -> list:
        """Depth first with an explicit stack: a chain of 10 000 ops needs no recursion."""
        out = []
        stack = [(root, "", "", None)]  # node id, prefix of its line, prefix below it, edge in
        while stack:
            node_id, first, rest, edge = stack.pop()
            node = self.nodes[node_id]
            if node_id in self.printed:
                out.append(f"{first}{self._describe(node, edge)}  (the same node again, see above)")
                continue
            self.printed.add(node_id)
            out.append(first + self._describe(node, edge))
            out += [f"{rest}  {line}" for line in self._saved(node)]
            stack += reversed(self._children(node, rest))
        return out

    def _children(self, node, rest: str) -> list:
        """The inputs to print below ``node``, with the prefixes of their lines."""
        edges = self.inputs[node.id]
        if node.kind == "accumulate":  # its leaf is already on the AccumulateGrad line
            edges = [e for e in edges if self.nodes[e.source].kind != "leaf"]
        if len(edges) == 1:
            return [(edges[0].source, rest, rest, edges[0])]
        children = []
        for i, edge in enumerate(edges):
            last = i == len(edges) - 1
            branch, below = ("└─ ", "   ") if last else ("├─ ", "│  ")
            children.append((edge.source, rest + branch, rest + below, edge))
        return children

    def _describe(self, node, edge) -> str:
        """One node's line: name, the shape it sends on, backward's marks, then details."""
        shape = shape_text(edge.shape if edge else node.shapes[0] if node.shapes else [])
        dtype = node.dtypes[0] if node.dtypes else ""
        if node.kind == "output":
            shape = f"{shape} {dtype}"
        elif node.kind == "leaf":  # (an unnamed leaf is already called "leaf")
            kind = "" if node.name == "leaf" else "leaf "
            shape = f"{kind}{shape} {dtype}" + ("" if node.requires_grad else " no grad")
        parts = [short_name(node.name), shape, *self._tags(node, edge)]
        if node.kind == "output" and node.value is not None:
            parts.append(f"= {node.value}")
        named = output_names(node, self.shown) if node.kind == "function" else []
        if named:
            parts.append(f"= {', '.join(named)}")
        if node.kind == "accumulate":
            parts.append(self._leaf_text(node))
        return "  ".join(parts)

    def _leaf_text(self, accumulate) -> str:
        leaves = [self.nodes[e.source] for e in self.inputs[accumulate.id]]
        if not leaves:
            return "into .grad"
        leaf = leaves[0]
        device = f" {leaf.devices[0]}" if leaf.devices and leaf.devices[0] != "cpu" else ""
        facts = (
            f"into {leaf.name}.grad  (leaf {leaf.name}  {shape_text(leaf.shapes[0])} "
            f"{leaf.dtypes[0]}{device})"
        )
        if self.grads and leaf.grad is not None:
            facts += f"  {leaf.name}.grad = {leaf.grad}"
        return facts

    def _tags(self, node, edge) -> list:
        tags = [f"[layer {node.layer}]"] if node.layer else []
        if node.anomaly:
            tags.append(f"[ANOMALY: {node.anomaly}]")
        if node.current:
            tags.append("[ran last]" if self.finished else "[this step]")
        elif node.ran:
            tags.append("[ran]")
        if node.id in self.ready:
            tags.append("[ready]")
        if self.grads and edge is not None and edge.grad is not None:
            tags.append(f"grad sent back: {edge.grad}")
        if self.grads and node.kind in ("leaf", "output") and node.grad is not None:
            tags.append(f"grad = {node.grad}")
        return tags

    def _saved(self, node) -> list:
        """One line per tensor the node saved for backward."""
        if not self.show_saved:
            return []
        lines = []
        for saved in node.saved:
            line = f"saved {saved.name}  {shape_text(saved.shape)} {saved.dtype}"
            if self.show_versions:
                line += f"  {version_badge(saved)}"
            if saved.stale:
                line += "  STALE: changed in place after it was saved"
            if saved.hooked:
                line += "  packed by a saved_tensors_hooks pack hook"
            if saved.released:
                line += "  released (freed once backward used it)"
            lines.append(line)
        return lines

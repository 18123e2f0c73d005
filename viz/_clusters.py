"""Keeping big graphs legible: which nodes are drawn together, and which are folded away.

A graph of hundreds of nodes is unreadable as one flat drawing. Three kinds of
*cluster* (a framed group in the picture) give it structure:

* ``layer``  -- the graph built by a backward pass with ``create_graph=True`` (the
  graph of the gradient, ``NodeInfo.layer`` >= 1) is framed apart from the forward graph;
* ``module`` -- with ``params=`` a Module, parameters are named like ``layers.0.weight``;
  they, and the ops that read them, are framed as the module ``layers.0`` (nested in ``layers``);
* ``repeat`` -- without module names, a loop shows up as the same ops repeating at
  every few levels of the graph; each repetition is framed as "repeat k of N".

*Folding* then draws a whole cluster as one box (a module, or a run of repeats in the
middle of a loop) so that the picture stays small. The learner folds a frame, or opens
a folded box, with a click (``folded``: cluster ident -> True or False, kept by the
widgets' picture box); big graphs fold by themselves, except what the learner opened.
The cluster holding the node that backward runs now is never folded. This module only
decides the grouping; ``render.py`` draws it.
"""

from __future__ import annotations

import dataclasses
import re
from collections import defaultdict

from ._graph import consumers_of, forward_order, inputs_of

REPEAT_MIN_FUNCTIONS = 30  # look for repeats only in graphs with at least this many ops
REPEAT_MIN_TIMES = 3  # ... that repeat at least this often
REPEAT_MAX_PERIOD = 60  # levels per repetition, at most
FOLD_ABOVE = 120  # fold="auto" folds graphs with more nodes than this


@dataclasses.dataclass
class Cluster:
    """A framed group. ``key`` is unique: the path of names from the top, joined by "/".
    ``ident`` is the short, readable id the SVG gets (``cluster-<ident>``)."""

    key: str
    ident: str  # "layer1", "module-layers.0", "repeat-3", "layer1-module-0"
    kind: str  # "layer", "module" or "repeat"
    label: str
    parent: str | None
    number: int = 0  # repeats: which repetition, counted in forward order from 1


@dataclasses.dataclass
class Fold:
    """One box standing for whole clusters: ``members`` are the snapshot nodes it hides."""

    key: str
    kind: str  # "module" or "repeat"
    title: str
    parent: str | None  # the cluster the box is drawn in
    members: list
    opens: list  # the idents of the clusters it hides (a click on the box opens them)


@dataclasses.dataclass
class Grouping:
    """Where each node goes: ``home`` maps a node id to its innermost cluster's key
    (nodes drawn at the top level are absent); ``folds`` and ``hidden`` say what is folded."""

    clusters: dict  # key -> Cluster, every parent before its children
    home: dict
    folds: dict = dataclasses.field(default_factory=dict)  # fold key -> Fold
    hidden: dict = dataclasses.field(default_factory=dict)  # node id -> fold key
    idents: set = dataclasses.field(default_factory=set)  # the clusters' idents, kept unique
    # parent key -> its clusters: built when first asked for, dropped when clusters change
    # (one pass over the clusters instead of one per question: big graphs stay linear)
    _children: dict | None = dataclasses.field(default=None, repr=False, compare=False)

    def children(self, key) -> list:
        """The clusters directly inside cluster ``key`` (None: the top level)."""
        if self._children is None:
            self._children = defaultdict(dict)  # parent -> {key: cluster}, in order
            for cluster in self.clusters.values():
                self._children[cluster.parent][cluster.key] = cluster
        return list(self._children.get(key, {}).values())

    def add(self, cluster: Cluster) -> None:
        self.clusters[cluster.key] = cluster
        self.idents.add(cluster.ident)
        self._children = None

    def remove(self, key) -> None:
        """Cluster ``key`` and every cluster inside it (the index follows, not rebuilt)."""
        for child in self.children(key):
            self.remove(child.key)
        cluster = self.clusters.pop(key)
        self._children.pop(key, None)
        del self._children[cluster.parent][key]


def group(snap, module_types=None, fold=None, folded=None) -> Grouping:
    """Decide the clusters of ``snap`` (see the module docstring) and, if ``fold``, fold them.

    ``module_types`` maps a module's name to its class name (``{"0": "Linear"}``), for labels.
    ``fold``: True, False, or None for "when the graph has more than FOLD_ABOVE nodes";
    ``folded``: the learner's choices, ``{cluster ident: True (fold it) or False (keep it
    open)}``, which win over ``fold``.

    >>> import teachgrad as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.Tanh())
    >>> snap = tg.autograd.graph.snapshot(model(tg.ones(1, 3)).sum(), params=model)
    >>> grouping = group(snap, {"0": "Linear"})
    >>> [c.label for c in grouping.clusters.values()]
    ['0 (Linear)']
    >>> from viz.render import short_name
    >>> sorted(short_name(snap.node(i).name) for i, key in grouping.home.items())
    ['0.bias', '0.weight', 'AccumulateGrad', 'AccumulateGrad', 'AddmmBackward0', 'TBackward0']
    """
    scopes, repeats = _structure(snap)
    grouping = Grouping({}, {})
    for node in snap.nodes:
        path = []  # outermost first: layer, then repetition, then modules
        if node.layer:
            path.append(("layer", f"layer{node.layer}", _layer_label(node.layer), 0))
        if node.id in repeats:
            number, total = repeats[node.id]
            path.append(("repeat", f"repeat-{number}", f"repeat {number} of {total}", number))
        for prefix in _prefixes(scopes.get(node.id)):
            label = (
                f"{prefix} ({module_types[prefix]})" if prefix in (module_types or {}) else prefix
            )
            path.append(("module", f"module-{prefix}", label, 0))
        _place(grouping, node.id, path)
    auto = fold or (fold is None and len(snap.nodes) > FOLD_ABOVE)
    if auto or any((folded or {}).values()):
        _fold(grouping, snap, folded or {}, auto)
    return grouping


_STRUCTURES: dict = {}  # the graph's shape -> (scopes, repeats); see _structure
_STRUCTURES_KEPT = 8


def _structure(snap) -> tuple:
    """``(module_scopes(snap), repeat_blocks(snap, scopes))``, remembered for the last few
    graphs.

    Why: both depend only on the graph's nodes, names and edges, which stay the same
    while a stepper runs backward through it, yet finding the repeats of a loop was
    the largest cost of each step: on a 1,000-op chain one Step took 77 ms with them
    recomputed and 45 ms remembered, redraw included (benchmarks/bench_viz.py, (1)).
    """
    key = (tuple((n.id, n.name) for n in snap.nodes), len(snap.edges))
    if key not in _STRUCTURES:
        if len(_STRUCTURES) >= _STRUCTURES_KEPT:
            del _STRUCTURES[next(iter(_STRUCTURES))]  # the oldest
        scopes = module_scopes(snap)
        _STRUCTURES[key] = (scopes, repeat_blocks(snap, scopes))
    return _STRUCTURES[key]


_UNSAFE = re.compile(r"[^0-9A-Za-z._+-]")


def _safe(ident: str) -> str:
    """``ident`` as a name the SVG can carry in an id and a class (a module may be named anything)."""
    return _UNSAFE.sub("_", ident)


def _layer_label(layer: int) -> str:
    return f"graph of the gradient (create_graph=True), layer {layer}"


def _prefixes(scope):
    """``"a.b.c"`` -> ``"a"``, ``"a.b"``, ``"a.b.c"``: a module nests in its parents."""
    if not scope:
        return []
    parts = scope.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def _place(grouping: Grouping, node_id: str, path: list) -> None:
    """Create the clusters along ``path`` (outermost first) and put the node in the last."""
    parent = None
    for kind, name, label, number in path:
        key = name if parent is None else f"{parent}/{name}"
        if key not in grouping.clusters:
            layer = key.split("/")[0] if key.startswith("layer") else name  # the outermost
            ident = _safe(name if layer == name else f"{layer}-{name}")
            while ident in grouping.idents:  # a module cut in two by repetitions: keep ids unique
                ident += "+"
            grouping.add(Cluster(key, ident, kind, label, parent, number))
        parent = key
    if parent is not None:
        grouping.home[node_id] = parent


# ------------------------------------------------------------------ module scopes


def module_scopes(snap) -> dict:
    """node id -> the module it belongs to (``"layers.0"``), from the parameters' names.

    A parameter ``layers.0.weight`` belongs to ``layers.0``, and so does its
    AccumulateGrad. An op belongs to the module of the parameters it reads, directly
    or through ops with a single input (the transpose of a weight, say). When it reads
    parameters of several modules, the nearest parameter (fewest ops away) wins. An op
    that reads only activations belongs to no module: ``relu(linear(x))`` puts the
    linear's op in the module and leaves the relu outside.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> snap = tg.autograd.graph.snapshot((w.t() * tg.ones(2, requires_grad=True)).relu(),
    ...                                   params={"lin.w": w})
    >>> from viz.render import short_name
    >>> sorted((short_name(snap.node(i).name), s) for i, s in module_scopes(snap).items())
    [('AccumulateGrad', 'lin'), ('MulBackward0', 'lin'), ('TBackward0', 'lin'), ('lin.w', 'lin')]
    """
    nodes = {n.id: n for n in snap.nodes}
    inputs = inputs_of(snap)
    scope = {}
    distance = {}  # node id -> ops between it and a parameter, for nodes that carry a scope on
    for node_id in forward_order(snap):
        node = nodes[node_id]
        if node.kind == "leaf" and "." in node.name:
            scope[node_id], distance[node_id] = node.name.rsplit(".", 1)[0], 0
        if node.kind not in ("function", "accumulate"):
            continue
        sources = [e.source for e in inputs[node_id] if e.source in distance]
        if not sources:
            continue
        nearest = min(sources, key=distance.get)
        scope[node_id] = scope[nearest]
        if len(inputs[node_id]) == 1:  # a function of that one parameter only: pass it on
            distance[node_id] = distance[nearest] + 1
    return scope


# ------------------------------------------------------------------ repeated structure


def repeat_blocks(snap, scopes=None) -> dict:
    """node id -> (k, N) for nodes in the k-th of N repetitions of the same ops.

    The ops are lined up by *level*: how many ops lie between them and the output
    (the longest way). A loop like ``for _ in range(50): h = (h @ W).tanh()`` makes the
    same names appear level after level: MmBackward0, TanhBackward0, MmBackward0, ...
    The shortest period that repeats at least ``REPEAT_MIN_TIMES`` times over the most
    levels wins. Where the repetitions start is chosen to split as few modules
    (``scopes``, from ``module_scopes``) as possible. Repetitions are numbered in
    forward order: repeat 1 ran first.

    >>> import teachgrad as tg
    >>> W = tg.eye(2, requires_grad=True); h = tg.ones(1, 2)
    >>> for _ in range(20):
    ...     h = (h @ W).tanh()
    >>> snap = tg.autograd.graph.snapshot(h.sum())
    >>> blocks = repeat_blocks(snap)
    >>> sorted({total for _, total in blocks.values()}), len(blocks)
    ([20], 40)
    """
    functions = [n for n in snap.nodes if n.kind == "function" and n.layer == 0]
    if len(functions) < REPEAT_MIN_FUNCTIONS:
        return {}
    level = _levels(snap)
    names_at = defaultdict(list)
    for node in functions:
        names_at[level[node.id]].append(node.name)
    signature = [tuple(sorted(names_at[d])) for d in range(max(names_at) + 1)]
    found = _period(signature)
    if found is None:
        return {}
    start, period, covered = found
    levels = {n.id: level[n.id] for n in functions}
    start, times = _align(levels, scopes or {}, start, period, covered)
    blocks = {}
    for node_id, d in levels.items():
        k = (d - start) // period
        if d >= start and k < times:
            blocks[node_id] = (times - k, times)  # level 0 is the output: count from the far end
    _pull_in_parameters(snap, blocks)
    return blocks


def _align(levels: dict, scopes: dict, start: int, period: int, covered: int):
    """(start, times): shift the first repetition by up to ``period - 1`` levels so that
    the fewest modules are cut in two (ties: the earliest start, which repeats most)."""
    best = None
    for shift in range(period):
        times = (covered - shift) // period
        if times < REPEAT_MIN_TIMES:
            break
        first, end = start + shift, start + shift + times * period
        homes = defaultdict(set)  # module -> the repetitions its ops fall in (-1: outside)
        for node_id, d in levels.items():
            if node_id in scopes:
                homes[scopes[node_id]].add((d - first) // period if first <= d < end else -1)
        cuts = sum(len(h) > 1 for h in homes.values())
        if best is None or cuts < best[0]:
            best = (cuts, first, times)
    return best[1], best[2]


def _levels(snap) -> dict:
    """node id -> the length of the longest path from it to a root (roots: 0)."""
    level = dict.fromkeys((n.id for n in snap.nodes), 0)
    consumers = consumers_of(snap)
    for node_id in reversed(forward_order(snap)):  # consumers before the nodes they read
        for edge in consumers[node_id]:
            level[node_id] = max(level[node_id], level[edge.target] + 1)
    return level


def _period(signature: list):
    """(start, period, levels covered) of the longest periodic stretch of ``signature``, or None.

    ``signature[d]`` lists the op names at level d. A stretch is periodic with period p
    when each level matches the level p further on; it must hold at least two ops
    per repetition and repeat ``REPEAT_MIN_TIMES`` times. Ties go to the shorter period.
    """
    best = None  # (levels covered, period, start)
    for period in range(1, min(REPEAT_MAX_PERIOD, len(signature) // REPEAT_MIN_TIMES) + 1):
        if best and best[0] == len(signature):  # all levels covered: no longer period wins
            break
        run = 0
        for d in range(len(signature) - period):
            same = signature[d] and signature[d] == signature[d + period]
            run = run + 1 if same else 0
            covered, start = run + period, d - run + 1
            if covered < REPEAT_MIN_TIMES * period or (best and covered <= best[0]):
                continue
            if sum(len(s) for s in signature[start : start + period]) >= 2:
                best = (covered, period, start)
    if best is None:
        return None
    covered, period, start = best
    return start, period, covered


def _pull_in_parameters(snap, blocks: dict) -> None:
    """An AccumulateGrad (and its leaf) used by one repetition only is drawn inside it."""
    consumers = consumers_of(snap)
    kinds = {n.id: n.kind for n in snap.nodes}
    for node_id in reversed(forward_order(snap)):
        if kinds[node_id] not in ("accumulate", "leaf") or not consumers[node_id]:
            continue
        homes = {blocks.get(e.target) for e in consumers[node_id]}
        if len(homes) == 1 and None not in homes:
            blocks[node_id] = homes.pop()


# ------------------------------------------------------------------ folding


def _fold(grouping: Grouping, snap, folded: dict, auto: bool) -> None:
    """Fold what the learner folded (outermost first); then, if ``auto``, the middle
    repeats of each loop and the innermost modules, except what the learner opened."""
    current = {n.id for n in snap.nodes if n.current}
    members = defaultdict(list)  # cluster key -> node ids inside it, at any depth
    for node_id, key in grouping.home.items():
        while key is not None:
            members[key].append(node_id)
            key = grouping.clusters[key].parent

    repeats = defaultdict(list)  # parent key -> the repeats inside it
    for cluster in grouping.clusters.values():
        if cluster.kind == "repeat":
            repeats[cluster.parent].append(cluster)

    def foldable(cluster, by_default: bool) -> bool:
        """Still framed, not holding the running node, and folded by choice or default."""
        return (
            folded.get(cluster.ident, by_default)
            and cluster.key in grouping.clusters  # not inside a fold made before
            and not current & set(members[cluster.key])
        )

    for cluster in list(grouping.clusters.values()):  # parents come before children
        if foldable(cluster, False):
            title = cluster.label if cluster.kind != "repeat" else f"{cluster.label} (folded)"
            _add_fold(grouping, cluster.kind, title, cluster.parent, [cluster], members)
    if not auto:
        return
    for parent, siblings in repeats.items():
        siblings.sort(key=lambda c: c.number)
        for run in _middle_runs(siblings[1:-1], lambda c: foldable(c, True)):
            _add_fold(grouping, "repeat", _repeat_title(run, len(siblings)), parent, run, members)
    for cluster in list(grouping.clusters.values()):
        innermost = cluster.key in grouping.clusters and not grouping.children(cluster.key)
        if cluster.kind == "module" and innermost and foldable(cluster, True):
            _add_fold(grouping, "module", cluster.label, cluster.parent, [cluster], members)


def _middle_runs(repeats: list, foldable) -> list:
    """Consecutive foldable repeats, split around any that stay open (the one holding
    the running node, one the learner opened)."""
    runs, run = [], []
    for cluster in repeats:
        if foldable(cluster):
            run.append(cluster)
        else:
            runs, run = runs + [run], []
    return [r for r in runs + [run] if r]


def _opens(clusters: list) -> list:
    """What a click on a fold opens, as short names: a run of repeats is one name,
    ``repeat-2~99`` (a loop of hundreds would otherwise make a name too long for Graphviz)."""
    if len(clusters) > 1 and clusters[0].kind == "repeat":
        return [f"{clusters[0].ident}~{clusters[-1].number}"]
    return [c.ident for c in clusters]


def opened(name: str) -> list:
    """The cluster idents behind one of ``_opens``'s names.

    >>> opened("repeat-2~4"), opened("module-layers.0")
    (['repeat-2', 'repeat-3', 'repeat-4'], ['module-layers.0'])
    """
    first, _, last = name.partition("~")
    if not last:
        return [name]
    stem, _, number = first.rpartition("-")
    return [f"{stem}-{k}" for k in range(int(number), int(last) + 1)]


def _repeat_title(run: list, total: int) -> str:
    first, last = run[0].number, run[-1].number
    if first == last:
        return f"repeat {first} of {total} (folded)"
    return f"repeats {first}-{last} of {total} ({last - first + 1} folded)"


def _add_fold(grouping, kind, title, parent, clusters, members) -> None:
    key = f"fold{len(grouping.folds) + 1}"
    hidden = [node_id for c in clusters for node_id in members[c.key]]
    grouping.folds[key] = Fold(key, kind, title, parent, hidden, _opens(clusters))
    for node_id in hidden:
        grouping.hidden[node_id] = key
    for cluster in clusters:  # a folded cluster, and all inside it, is not framed
        grouping.remove(cluster.key)

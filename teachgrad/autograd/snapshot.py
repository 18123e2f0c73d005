"""Snapshots: the live graph copied into plain data, for pictures, notebooks and tests.

``snapshot(*roots)`` walks the graph behind ``roots`` (like backward would) and
describes what it finds with plain values only — strings, numbers, lists — so the
result can be saved as JSON, compared in a test, or drawn by ``viz``:

* nodes: the backward functions (``MulBackward0`` ...), the ``AccumulateGrad``
  nodes, the leaf tensors they feed, and the root tensors you passed;
* edges, in the direction data flows in forward: from the node that made a
  value to the node that used it (``output_nr`` / ``input_nr`` say which);
* for each node, the tensors it saved: shape, dtype, the version when saved and
  now (``stale`` when an in-place op changed it since), ``released`` after backward;
* during backward (pass the steps of ``backward_steps``): which nodes ran, which
  runs now, and the gradient that flowed on each edge;
* ``constants``: inputs that do not require grad but that a node saved (the data
  ``x`` of ``model(x)``, a loss's targets), with an edge into the node that saved them.

Nodes made by a backward pass with ``create_graph=True`` (the graph of the gradient)
get ``layer`` 1 (2 when made by such a pass nested inside another), so a picture can
keep them apart.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); x.name = "x"
    >>> snap = tg.autograd.graph.snapshot((x * x).sum())
    >>> [n.name for n in snap.nodes]
    ['output', 'SumBackward0', 'MulBackward0', 'torch::autograd::AccumulateGrad', 'x']
    >>> snap.node_named("MulBackward0").saved[0].name
    'self'
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
import weakref

from .._backend import device_of, device_type_of, to_host
from .._tensor import Tensor
from .tape import AccumulateGrad, SavedTensor

_ids = itertools.count(1)
PREVIEW_VALUES = 6  # how many values a preview shows


@dataclasses.dataclass
class SavedInfo:
    """A tensor a node saved for backward (``stale``: changed in place since it was saved)."""

    name: str
    shape: list
    dtype: str
    device: str  # "cpu", "cuda:0" ...; once released "cpu" or "cuda" (the graph keeps no index)
    saved_version: int
    version: int
    stale: bool
    released: bool
    preview: str | None
    hooked: bool = False  # kept by a saved_tensors_hooks pack hook (what it holds is its own)


@dataclasses.dataclass
class NodeInfo:
    """One box of the picture. ``kind``: "function", "accumulate", "leaf" or "output"."""

    id: str
    name: str
    kind: str
    shapes: list
    dtypes: list
    tensor_names: list  # the user's names for this node's outputs (None where unnamed)
    saved: list = dataclasses.field(default_factory=list)
    layer: int = 0
    ran: bool = False
    current: bool = False
    requires_grad: bool = False  # leaves and outputs
    grad: str | None = None  # leaves and outputs: a preview of .grad, if it exists
    value: str | None = None  # leaves and outputs: a preview of the values
    anomaly: str | None = None  # anomaly detection: why this node's backward failed
    # built-in Function nodes: the derivative rule of each input (the op's ``formula``)
    formula: dict | None = None
    # the numbers that rule names which the node shows as ``_saved_<name>`` (a number, or a
    # 0-d tensor such as nll_loss's total_weight), read before backward frees them
    numbers: dict = dataclasses.field(default_factory=dict)
    devices: list = dataclasses.field(default_factory=list)  # "cpu", "cuda:0" ... per output


@dataclasses.dataclass
class EdgeInfo:
    """Data flowing in forward from ``source`` (its output ``output_nr``) into ``target``
    (its input ``input_nr``); ``grad``: what backward sent back along it, once it has."""

    source: str
    target: str
    output_nr: int
    input_nr: int
    shape: list
    grad: str | None = None


@dataclasses.dataclass
class GraphSnapshot:
    """The graph behind some tensors, as plain data (see the module docstring)."""

    nodes: list
    edges: list
    roots: list
    in_backward: bool = False
    ready: list = dataclasses.field(default_factory=list)  # during backward: waiting to run
    finished: bool = False  # the steps given were the whole backward pass (current ran last)
    current: str | None = None  # during backward: the id of the node of the latest step
    # saved inputs that need no gradient: NodeInfo of kind "constant", and their edges
    constants: list = dataclasses.field(default_factory=list)
    constant_edges: list = dataclasses.field(default_factory=list)

    def node(self, node_id: str) -> NodeInfo:
        """The node with this id (an index by id, made at the first call: pictures of big
        graphs ask this for every node, and a scan each time made them quadratic)."""
        index = self.__dict__.get("_index")
        if index is None or len(index) != len(self.nodes):
            index = self.__dict__["_index"] = {n.id: n for n in self.nodes}
        return index[node_id]

    def node_named(self, name: str) -> NodeInfo:
        """The first node with this name (``'MulBackward0'``, or a tensor's name). A C++-only
        node of torch answers to its short name too (``'AccumulateGrad'`` finds the node
        named ``'torch::autograd::AccumulateGrad'``), as its repr and the pictures call it."""
        return next(n for n in self.nodes if name in (n.name, n.name.rpartition("::")[2]))

    def to_dict(self) -> dict:
        """Plain dicts and lists (``json.dumps`` takes it as it is)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> GraphSnapshot:
        """The snapshot ``to_dict`` described.

        >>> import teachgrad as tg
        >>> snap = tg.autograd.graph.snapshot(tg.ones(2, requires_grad=True).exp())
        >>> tg.autograd.graph.GraphSnapshot.from_dict(snap.to_dict()) == snap
        True
        """

        def node(n):
            return NodeInfo(**{**n, "saved": [SavedInfo(**s) for s in n["saved"]]})

        return cls(
            [node(n) for n in data["nodes"]],
            [EdgeInfo(**e) for e in data["edges"]],
            list(data["roots"]),
            data["in_backward"],
            list(data["ready"]),
            data.get("finished", False),
            data.get("current"),
            [node(n) for n in data.get("constants", [])],
            [EdgeInfo(**e) for e in data.get("constant_edges", [])],
        )

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> GraphSnapshot:
        return cls.from_dict(json.loads(text))


def snapshot(*roots, steps=None, params=None, values=PREVIEW_VALUES, digits=4) -> GraphSnapshot:
    """The graph behind ``roots`` (tensors) as a ``GraphSnapshot`` of plain data.

    ``steps``: the ``BackwardStep``s run so far by ``backward_steps`` (marks what ran
    and the gradients on the edges). ``params``: a module, or a dict name -> tensor,
    naming tensors that have no ``.name`` of their own: leaves, and results of ops
    (shown as the outputs of the node that made them). ``values`` and ``digits``: how
    many numbers a preview of a tensor's values shows, with how many significant digits.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> h = w * 3
    >>> snap = tg.autograd.graph.snapshot(h.sum(), params={"w": w, "h": h})
    >>> [n.kind for n in snap.nodes], snap.node_named("w").shapes
    (['output', 'function', 'function', 'accumulate', 'leaf'], [[2]])
    >>> snap.node_named("MulBackward0").tensor_names
    ['h']
    """
    builder = _Builder(*_param_names(params), preview=(values, digits))
    for root in roots:
        builder.add_root(root)
    snap = GraphSnapshot(builder.nodes, builder.edges, builder.root_ids)
    snap.constants, snap.constant_edges = builder.constants, builder.constant_edges
    if steps:
        builder.mark_backward(snap, list(steps))
    return snap


def advance(snap: GraphSnapshot, step, values=PREVIEW_VALUES, digits=4) -> GraphSnapshot:
    """``snap`` with one more step of ``backward_steps`` applied: what ``snapshot(...,
    steps=steps + [step])`` gives, made from ``snap`` instead of from the whole graph.

    The new snapshot shares every node and edge the step did not change with ``snap``
    (those it changed are copies), so ``snap`` stays as it was, and a stepper pays for
    the step, not for the graph: one step of a 1,000-node graph does not walk 1,000 nodes.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> loss = x.exp().sum()
    >>> steps = list(tg.autograd.backward_steps(loss, retain_graph=True))
    >>> snap = tg.autograd.graph.snapshot(loss)
    >>> for step in steps:
    ...     snap = advance(snap, step)
    >>> snap == tg.autograd.graph.snapshot(loss, steps=steps)
    True
    """
    new = dataclasses.replace(snap, nodes=list(snap.nodes), edges=list(snap.edges))
    at = _positions(snap, new)
    preview = functools.partial(_preview, count=values, digits=digits)

    def change(node_id, **fields):
        if node_id in at:
            i = at[node_id]
            new.nodes[i] = dataclasses.replace(new.nodes[i], **fields)

    if snap.current is not None:  # the node of the step before is no longer current
        change(snap.current, current=False)
    key = _id(step.node, "n")
    saved = [s for s in step.node._saved if isinstance(s, SavedTensor)]
    change(key, ran=True, current=True, saved=[_saved_info(s, preview) for s in saved])
    if isinstance(step.node, AccumulateGrad):  # its leaf's .grad has changed
        leaf = step.node.variable
        change(_id(leaf, "t"), grad=None if leaf._grad is None else preview(leaf._grad._data))
    for i, ((nxt, _), g) in enumerate(zip(step.node.next_functions, step.grad_inputs)):
        edge_at = at.get((_id(nxt, "n"), key, i)) if nxt is not None else None
        if edge_at is not None and g is not None:
            new.edges[edge_at] = dataclasses.replace(new.edges[edge_at], grad=preview(g._data))
    new.in_backward, new.current = True, key
    new.ready = [_id(n, "n") for n in step.ready]
    new.finished = not new.ready
    return new


def _positions(snap: GraphSnapshot, new: GraphSnapshot) -> dict:
    """Where each node (by id) and edge (by (source, target, input_nr)) sits in the
    lists; made once per stepped graph and handed on, since advance keeps the order."""
    at = snap.__dict__.get("_positions")
    if at is None:
        at = {n.id: i for i, n in enumerate(snap.nodes)}
        at.update({(e.source, e.target, e.input_nr): i for i, e in enumerate(snap.edges)})
    new.__dict__["_positions"] = at
    return at


def _param_names(params) -> tuple:
    """Names from a module's named_parameters() or a dict name -> tensor, as two maps:
    ``id(tensor) -> name``, and ``(id(node), output_nr) -> name`` for results of ops."""
    if params is None:
        return {}, {}
    items = params.named_parameters() if hasattr(params, "named_parameters") else params.items()
    by_id, by_output = {}, {}
    for name, t in items:
        by_id[id(t)] = name
        if t.grad_fn is not None:
            by_output[(id(t.grad_fn), t._output_nr)] = name
    return by_id, by_output


# id(node or tensor) -> (a weak reference to it, its snapshot id). Kept beside the graph,
# not written into it; an entry goes when its object dies (the weak reference's callback).
_known: dict = {}


def _id(obj, prefix: str) -> str:
    """A stable id for a node or tensor: the same object gets the same id in every snapshot."""
    entry = _known.get(id(obj))
    if entry is not None and entry[0]() is obj:
        return entry[1]
    key = id(obj)

    def forget(ref, key=key):
        if _known.get(key, (None,))[0] is ref:  # (the id may belong to a newer object now)
            del _known[key]

    known = f"{prefix}{next(_ids)}"
    _known[key] = (weakref.ref(obj, forget), known)
    return known


class _Builder:
    def __init__(self, names: dict, output_names: dict, preview: tuple):
        self.names, self.output_names = names, output_names
        self.values, self.digits = preview
        self.nodes, self.edges, self.root_ids = [], [], []
        self.constants, self.constant_edges = [], []
        self.seen = {}  # snapshot id -> NodeInfo

    def preview(self, data) -> str:
        return _preview(data, self.values, self.digits)

    def add_root(self, t: Tensor) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"snapshot() takes tensors, got {type(t).__name__}")
        if t.grad_fn is None:  # a leaf (or a constant) is its own whole graph
            self.root_ids.append(self.add_tensor(t, "leaf").id)
            return
        out = self.add_tensor(t, "output")
        self.root_ids.append(out.id)
        fn = t.grad_fn
        self.walk(fn)
        meta = fn._output_meta[t._output_nr]
        self.edges.append(EdgeInfo(_id(fn, "n"), out.id, t._output_nr, 0, list(meta[0])))

    def add_tensor(self, t: Tensor, kind: str, store=None, default=None) -> NodeInfo:
        """A tensor's box (``store``: the list it goes in, the nodes unless said)."""
        key = _id(t, "t")
        if key in self.seen:
            return self.seen[key]
        default = default or ("output" if kind == "output" else "leaf")
        name = t.name or self.names.get(id(t)) or default
        info = NodeInfo(
            id=key,
            name=name,
            kind=kind,
            shapes=[list(t.shape)],
            dtypes=[_dtype(t._data)],
            devices=[str(device_of(t._data))],
            tensor_names=[t.name or self.names.get(id(t))],
            requires_grad=t.requires_grad,
            grad=self.preview(t._grad._data) if t._grad is not None else None,
            value=self.preview(t._data),
        )
        self.seen[key] = info
        (self.nodes if store is None else store).append(info)
        return info

    def walk(self, root) -> None:
        """Depth-first from ``root`` along next_functions, each node once."""
        stack = [root]
        while stack:
            fn = stack.pop()
            key = _id(fn, "n")
            if key in self.seen:
                continue
            info = self.add_node(fn, key)
            for i, (nxt, nr) in enumerate(fn.next_functions):
                if nxt is None:
                    continue
                shape = list(nxt._output_meta[nr][0]) if nxt._output_meta else []
                self.edges.append(EdgeInfo(_id(nxt, "n"), info.id, nr, i, shape))
                stack.append(nxt)

    def add_node(self, fn, key: str) -> NodeInfo:
        names = fn._output_names or {}
        info = NodeInfo(
            id=key,
            name=fn.name(),
            kind="accumulate" if isinstance(fn, AccumulateGrad) else "function",
            shapes=[list(m[0]) for m in fn._output_meta if m is not None],
            dtypes=[str(m[1]) for m in fn._output_meta if m is not None],
            devices=[device_type_of(m[2]) for m in fn._output_meta if m is not None],
            tensor_names=[
                names.get(nr) or self.output_names.get((id(fn), nr))
                for nr in range(len(fn._output_meta))
            ],
            saved=[self.saved_info(s) for s in fn._saved if isinstance(s, SavedTensor)],
            layer=fn._layer,
            anomaly=fn.__dict__.get("_anomaly"),
            formula=_formula(fn),
        )
        info.numbers = _rule_numbers(fn, info.formula)
        self.seen[key] = info
        self.nodes.append(info)
        if isinstance(fn, AccumulateGrad):  # the leaf it feeds, drawn as its own box
            leaf = self.add_tensor(fn.variable, "leaf")
            self.edges.append(EdgeInfo(leaf.id, key, 0, 0, list(fn.variable.shape)))
        self.add_constants(fn, key)
        return info

    def add_constants(self, fn, key: str) -> None:
        """The saved inputs of ``fn`` that need no gradient, each on an input slot of
        ``fn`` that has no edge (in order: the slots and the saves follow the arguments)."""
        free = [i for i, (nxt, _) in enumerate(fn.next_functions) if nxt is None]
        for s in fn._saved:
            t = getattr(s, "tensor", None)
            if t is None or t.requires_grad or not free:
                continue
            info = self.add_tensor(t, "constant", store=self.constants, default=s.name)
            self.constant_edges.append(EdgeInfo(info.id, key, 0, free.pop(0), list(t.shape)))

    def saved_info(self, s: SavedTensor) -> SavedInfo:
        return _saved_info(s, self.preview)

    def mark_backward(self, snap: GraphSnapshot, steps: list) -> None:
        """What backward has done so far: nodes that ran, the current one, edge gradients."""
        snap.in_backward = True
        edges = {(e.source, e.target, e.input_nr): e for e in snap.edges}
        for step in steps:
            key = _id(step.node, "n")
            if key in self.seen:
                self.seen[key].ran = True
            for i, ((nxt, _), g) in enumerate(zip(step.node.next_functions, step.grad_inputs)):
                edge = edges.get((_id(nxt, "n"), key, i)) if nxt is not None else None
                if edge is not None and g is not None:
                    edge.grad = _preview(g._data)
        snap.ready = [_id(n, "n") for n in steps[-1].ready]
        snap.finished = not snap.ready  # nothing left to run: backward is over
        current = _id(
            steps[-1].node, "n"
        )  # the node of the latest step (the last one, if finished)
        snap.current = current
        if current in self.seen:
            self.seen[current].current = True


def _formula(fn) -> dict | None:
    """The derivative rule table of a node: its own, or that of the Function that made it."""
    table = getattr(fn, "formula", None) or getattr(
        getattr(fn, "_forward_cls", None), "formula", None
    )
    return dict(table) if table else None


def _rule_numbers(fn, formula) -> dict:
    """``NodeInfo.numbers``: each name in ``formula`` that ``fn`` shows as a number, or as a
    0-d tensor, under ``_saved_<name>`` (read now: backward may free it)."""
    numbers = {}
    for name in set(re.findall(r"\b([A-Za-z_]\w*)", " ".join((formula or {}).values()), re.ASCII)):
        try:
            value = getattr(fn, f"_saved_{name}")
        except (AttributeError, RuntimeError):  # (none, or freed already)
            continue
        if isinstance(value, Tensor) and value.dim() == 0:
            value = value.item()
        if type(value) in (int, float):
            numbers[name] = value
    return numbers


def _saved_info(s: SavedTensor, preview) -> SavedInfo:
    data = None if s.released else s.data if s.tensor is None else s.tensor._data
    shape, dtype, device = _saved_meta(s, data)
    return SavedInfo(
        name=s.name,
        shape=shape,
        dtype=dtype,
        device=device,
        saved_version=s.version,
        version=s.counter.version,
        stale=s.counter.version != s.version,
        released=s.released,
        preview=None if data is None else preview(data),
        hooked=s.hooks is not None,
    )


def _saved_meta(s: SavedTensor, data):
    """Shape, dtype and device of a saved tensor. Once it is released, ``s.meta`` tells: the
    spec its node keeps, whose array type gives the device's type (as for nodes' outputs)."""
    if data is not None:
        return list(data.shape), _dtype(data), str(device_of(data))
    shape, dtype, array_type = s.meta
    return list(shape), str(dtype), device_type_of(array_type)


def _dtype(data) -> str:
    return str(data.dtype)


def _preview(data, count: int = PREVIEW_VALUES, digits: int = 4) -> str:
    """The first ``count`` values as text, e.g. ``[0.5, -1.25, 2, ...]``; only they leave
    the GPU."""
    flat = data.reshape(-1)[:count]
    flat = to_host(flat)
    values = ", ".join(f"{v:.{digits}g}" if isinstance(v, float) else str(v) for v in flat.tolist())
    more = ", ..." if data.size > count else ""
    return f"[{values}{more}]" if data.ndim else values

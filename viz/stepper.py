"""BackwardStepper: run ``loss.backward()`` one node at a time, in a notebook widget.

What lives here:

* ``BackwardStepper`` -- the widget (Step, Run to end, Back, Reset; the graph on
  the left, the node that just ran on the right);
* ``Frame`` -- what one position of the stepper shows, as plain data (a graph
  snapshot plus the node, its gradients and the leaves' ``.grad``); a list of
  frames is the *history* that ``viz.export_html`` turns into a web page;
* ``panel_html(frame)`` -- the right-hand panel of one frame as HTML.

The stepper does not compute gradients itself: it pulls steps out of
``tg.autograd.backward_steps``, the generator that ``backward()`` runs to its end.
So after the last step the leaves hold exactly what ``loss.backward()`` gives.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True); x.name = "x"
    >>> stepper = BackwardStepper((x * x).sum())
    >>> stepper.step(); stepper.current_node
    <SumBackward0 object at ...>
    >>> stepper.run(); [f.node for f in stepper.history]
    [None, 'SumBackward0', 'MulBackward0', 'AccumulateGrad']
    >>> x.grad
    tensor([2., 4.])
"""

from __future__ import annotations

import dataclasses
import html

import ipywidgets as widgets

import teachgrad as tg

from ._box import PictureBox
from ._graph import short_name
from ._names import caller_namespaces, learner_names
from ._rules import backward_source, rules_of, values
from .live import picture_html


@dataclasses.dataclass
class Frame:
    """What the stepper shows after ``step`` nodes have run (step 0: before backward).

    ``node``: the name of the node that just ran; ``grad_outputs``: previews of the
    gradients it received (one per output); ``grad_inputs``: ``(where it goes,
    preview)`` for each of its ``next_functions``; ``ready``: the nodes waiting to
    run, next first; ``leaf_grads``: ``(leaf, preview of .grad or None)``.
    """

    step: int
    total: int
    snapshot: object  # a tg.autograd.graph.GraphSnapshot
    node: str | None = None
    grad_outputs: list = dataclasses.field(default_factory=list)
    grad_inputs: list = dataclasses.field(default_factory=list)
    ready: list = dataclasses.field(default_factory=list)
    leaf_grads: list = dataclasses.field(default_factory=list)
    rules: list = dataclasses.field(default_factory=list)  # viz._rules.Rule, one per input
    source: str | None = None  # a custom Function's backward, which has no rule table

    @property
    def title(self) -> str:
        if self.step == 0:
            return "before backward"
        return f"step {self.step} of {self.total}: {self.node}"


class BackwardStepper(widgets.VBox):
    """Step through ``loss.backward()`` node by node, with a picture of every step.

    Buttons (and the methods they call): **Step** (``step()``) runs the next node,
    **Run to end** (``run()``) runs all the rest, **Back** (``back()``) shows the
    previous step again, **Reset** (``reset()``) starts backward again from the top.

    Back only *shows* an earlier snapshot: the engine cannot un-run a node, so the
    leaves keep their ``.grad`` and Step then replays the recorded history before it
    runs anything new. Reset really starts over: it puts back the leaves' ``.grad``
    as they were before the first step (so Reset then Run gives the same gradients
    as one ``backward()``) and needs ``retain_graph=True``, because without it each
    node frees what it saved once it ran. (A non-leaf's ``retain_grad()`` gradient
    is not put back.)

    State you can read: ``history`` (the ``Frame`` of every position so far,
    ``history[0]`` before backward), ``index`` (which frame is shown), ``steps``
    (the engine's ``BackwardStep`` records), ``current_node`` (the node of the frame
    shown), ``done``, ``panel.value`` (the panel's HTML), ``graph.value`` (the SVG).

    ``gradient`` is what ``loss.backward(gradient)`` takes (needed when ``loss`` is
    not a scalar); ``params`` (a module or a dict name -> tensor) names leaves in the
    pictures; other keyword arguments go to the renderer (``show_saved``, ...).

    >>> import teachgrad as tg
    >>> w = tg.tensor(3.0, requires_grad=True)
    >>> stepper = BackwardStepper(w * w, retain_graph=True)
    >>> stepper.run(); w.grad
    tensor(6.)
    >>> stepper.reset(); w.grad is None
    True
    >>> stepper.run(); w.grad
    tensor(6.)
    """

    def __init__(self, loss, retain_graph=False, *, gradient=None, params=None, **draw_options):
        super().__init__()
        self.loss = loss
        self.gradient = gradient
        self.retain_graph = retain_graph
        self.params = params
        self.draw_options = {"params": params, **draw_options}
        # the learner's variables name the tensors (viz._names); params= wins
        self.names = learner_names(params, caller_namespaces())
        self._names = {id(t): name for name, t in self.names.items()}
        self.total, self.leaves = self._survey()
        self._pictures = {}  # frame index -> HTML picture (drawing is the slow part)
        self._build_widgets()
        self._restart()

    # ---------------------------------------------------------------- state
    def _restart(self) -> None:
        """Back to the top: no step run, only the 'before backward' frame."""
        self._engine = None  # the backward_steps generator, made at the first step
        self._grads_before = None
        self.steps = []
        self.done = False
        self.error = None
        self.history = [self._frame()]
        self._pictures.clear()
        self.index = 0
        self._show()

    @property
    def current_node(self):
        """The node that ran in the frame shown (None before backward)."""
        return self.steps[self.index - 1].node if self.index else None

    @property
    def at_end(self) -> bool:
        """True when the last frame is shown and backward has finished."""
        return self.done and self.index == len(self.history) - 1

    def step(self) -> None:
        """Show the next frame: from the history after Back, else run the next node."""
        try:
            if self.index < len(self.history) - 1:
                self.index += 1
            elif not self.done:
                self._run_one()
        finally:  # (an engine error still leaves the widget showing where backward stopped)
            self._show()

    def run(self) -> None:
        """Run backward to its end and show the last frame."""
        try:
            while not self.done:
                self._run_one()
        finally:
            self.index = len(self.history) - 1
            self._show()

    def back(self) -> None:
        """Show the previous frame again (nothing is un-run: see the class docstring)."""
        self.index = max(0, self.index - 1)
        self._show()

    def reset(self) -> None:
        """Start backward again from scratch, with the leaves' ``.grad`` put back."""
        if self.steps and not self.retain_graph:
            raise RuntimeError(
                "Reset needs the graph that backward has already started to free: create "
                "BackwardStepper(loss, retain_graph=True) to be able to start over."
            )
        if self._engine is not None:
            self._engine.close()  # let the engine's generator end cleanly
        if self._grads_before is not None:
            for leaf, grad in self._grads_before:
                leaf.grad = None if grad is None else grad.clone()
        self._restart()

    def _run_one(self) -> None:
        """Pull one step out of the engine and record its frame."""
        if self._engine is None:
            # remember the leaves' .grad as it was, for Reset (copies: grads add in place)
            self._grads_before = [(t, _copy(t.grad)) for _, t in self.leaves]
            self._engine = tg.autograd.backward_steps(
                self.loss, self.gradient, retain_graph=self.retain_graph
            )
        try:
            step = next(self._engine, None)
        except Exception as exc:  # an engine error ends backward, as it would end backward()
            self.done, self.error = True, exc
            raise
        if step is None:
            self.done = True
            return
        self.steps.append(step)
        self.history.append(self._frame(step))
        self.index = len(self.history) - 1
        if not step.ready:  # nothing waits: one more pull lets the generator finish its own way
            self._run_one()

    def _frame(self, step=None) -> Frame:
        """The frame after ``step`` (None: before backward). A step updates the previous
        frame's snapshot (``graph.advance``) instead of walking the whole graph again."""
        if step is None:
            snap = tg.autograd.graph.snapshot(self.loss, params=self.names)
        else:
            snap = tg.autograd.graph.advance(self.history[-1].snapshot, step)
        frame = Frame(len(self.steps), self.total, snap)
        frame.leaf_grads = [(name, preview(t.grad)) for name, t in self.leaves]
        if step is not None:
            frame.node = short_name(step.node.name())
            frame.grad_outputs = [preview(g) for g in step.grad_outputs]
            frame.grad_inputs = [
                (self._describe(nxt), preview(g))
                for (nxt, _), g in zip(step.node.next_functions, step.grad_inputs)
            ]
            frame.ready = [short_name(n.name()) for n in step.ready]
            before = self.history[-1].snapshot  # what the node saved, before it released it
            frame.rules = rules_of(step, before.node(snap.current))
            frame.source = backward_source(step.node)
        return frame

    def _survey(self) -> tuple:
        """How many nodes backward will run, and the leaves it will write ``.grad`` to."""
        start = tg.autograd.graph.get_gradient_edge(self.loss).node
        seen, stack, leaves = {start}, [start], []
        while stack:
            node = stack.pop()
            if hasattr(node, "variable"):  # an AccumulateGrad: its leaf gets a .grad
                leaves.append((self._leaf_name(node.variable, len(leaves)), node.variable))
            for nxt, _ in node.next_functions:
                if nxt is not None and nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        order = {key: i for i, key in enumerate(self._names)}  # params first, in their order
        leaves.sort(key=lambda leaf: order.get(id(leaf[1]), len(order)))
        return len(seen), leaves

    def _leaf_name(self, t, k: int) -> str:
        return t.name or self._names.get(id(t)) or f"leaf {k} {tuple(t.shape)}"

    def _describe(self, node) -> str:
        """Where a gradient goes: a node's name, with the leaf for an AccumulateGrad."""
        if node is None:
            return "nowhere (that input needs no gradient)"
        leaf = getattr(node, "variable", None)  # AccumulateGrad nodes know their leaf
        for name, t in self.leaves:
            if t is leaf:
                return f"{short_name(node.name())} of {name}"
        return short_name(node.name())

    # ---------------------------------------------------------------- widgets
    def _build_widgets(self) -> None:
        self.buttons = {}
        for key, label, tip in [
            ("step", "Step", "run the next node of backward"),
            ("run", "Run to end", "run all the remaining nodes"),
            ("back", "Back", "show the previous step (nothing is un-run)"),
            ("reset", "Reset", "start backward again (needs retain_graph=True)"),
        ]:
            button = widgets.Button(description=label, tooltip=tip)
            button.add_class("tg-stepper-button")
            button.add_class(f"tg-{key}-button")
            button.on_click(lambda _, key=key: self._press(key))
            self.buttons[key] = button
        self.graph = PictureBox(on_fold=self._refold)  # zooms, pans; a click folds a frame
        self.graph.add_class("tg-graph")
        # The picture fits the graph's box (viz._fit); the panel sits beside it when the
        # row has room for both (28em + 22em), else it wraps below. min_width 0 lets the
        # graph shrink below its content instead of running under the panel.
        self.graph.layout = widgets.Layout(overflow="auto", flex="1 1 28em", min_width="0")
        self.panel = widgets.HTML(layout=widgets.Layout(flex="0 1 22em", overflow="auto"))
        self.panel.add_class("tg-panel")
        self.status = widgets.HTML()
        self.status.add_class("tg-status")
        self.children = [
            widgets.HBox(list(self.buttons.values())),
            widgets.HBox([self.graph, self.panel], layout=widgets.Layout(flex_flow="row wrap")),
            self.status,
        ]
        self.add_class("tg-stepper")

    def _press(self, key: str) -> None:
        """A button was clicked: errors go to the status line (a click has no traceback)."""
        try:
            getattr(self, key)()
        except Exception as exc:
            self.status.value = f'<span class="tg-error">{html.escape(str(exc))}</span>'

    def picture(self, index: int) -> str:
        """The drawing of ``history[index]`` (SVG, or text without Graphviz), cached."""
        if index not in self._pictures:
            snapshot = self.history[index].snapshot
            options = {"folded": self.graph.folded, **self.draw_options}
            self._pictures[index] = picture_html(snapshot, **options)
        return self._pictures[index]

    def _refold(self) -> None:
        """A frame was folded or opened with a click: every picture is drawn anew."""
        self._pictures.clear()
        self._show()

    def _show(self) -> None:
        """Draw the frame at ``index`` and enable the buttons that can do something."""
        self.graph.value = self.picture(self.index)
        self.panel.value = panel_html(self.history[self.index])
        self.buttons["step"].disabled = self.buttons["run"].disabled = self.at_end
        self.buttons["back"].disabled = self.index == 0
        self.buttons["reset"].disabled = not self.retain_graph
        self.status.value = "backward finished" if self.at_end else ""


# The panel's look: the same colours as the picture (viz.render's STATES and its gradient
# orange), readable at 100% zoom; repeated in every panel, which may be shown on its own.
PANEL_STYLE = """<style>
.tg-panel-body{font:13px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#212121;padding:0 .4em;
  white-space:normal;overflow-wrap:anywhere}
.tg-panel-body *{white-space:normal;line-height:1.45}
.tg-panel-body table,.tg-panel-body tr,.tg-panel-body td{height:auto}
.tg-panel-body h4{margin:.8em 0 .25em;font-size:11px;font-weight:600;letter-spacing:.05em;
  text-transform:uppercase;color:#757575}
.tg-step-title{font-weight:600;color:#616161}
.tg-current-node{font-size:15px;margin:.15em 0 .3em}
.tg-swatch{display:inline-block;width:.85em;height:.85em;border-radius:3px;margin-right:.4em;
  vertical-align:-.1em;box-sizing:border-box}
.tg-swatch.current{background:#ffe0b2;border:2px solid #e65100}
.tg-swatch.ready{background:#eeeeee;border:1px dashed #e65100}
.tg-panel-body table{border-collapse:collapse;width:100%;table-layout:fixed}
.tg-panel-body td{padding:.15em .45em;border-top:1px solid #eeeeee;vertical-align:top}
.tg-panel-body td:first-child{color:#424242;width:45%}
.tg-panel-body code{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
  white-space:pre-wrap;overflow-wrap:anywhere}
.tg-rule{margin:.3em 0 .5em;padding:.3em .55em;border-left:3px solid #d84315;background:#fbf3ef}
.tg-rule div{margin-left:1.2em}
.tg-rule div.tg-rule-text{margin-left:0;font-weight:600}
.tg-grad{color:#d84315}
.tg-to{font-size:12px;color:#616161}
.tg-ready{margin:.5em 0}
</style>"""


def panel_html(frame: Frame) -> str:
    """The panel beside the picture: the node that ran, what it received, the chain rule
    it applied for each input (with the numbers), where each gradient went, what runs
    next, and the leaves' ``.grad``."""
    e = html.escape
    parts = [PANEL_STYLE, '<div class="tg-panel-body">']
    parts.append(f'<div class="tg-step-title">{e(_step_title(frame))}</div>')
    if frame.node is None:
        parts.append('<div class="tg-current-node">nothing has run yet</div>')
    else:
        parts.append(
            f'<div class="tg-current-node"><span class="tg-swatch current"></span>'
            f"<b>{e(frame.node)}</b> ran in this step</div>"
        )
        arrived = [
            (f"∂L/∂out{i if len(frame.grad_outputs) > 1 else ''}", g)
            for i, g in enumerate(frame.grad_outputs)
        ]
        parts.append(_table("It received", "tg-grad-outputs", arrived))
        parts.append(_chain_rule(frame))
        rows = [(f"{e(label)} &rarr; {e(where)}", g) for label, (where, g) in _sent_rows(frame)]
        parts.append(_table("It sent", "tg-grad-inputs", rows, escaped=True))
        waiting = ", ".join(frame.ready) or "nothing: backward is done"
        parts.append(
            f'<div class="tg-ready"><span class="tg-swatch ready"></span>Runs next: {e(waiting)}</div>'
        )
    parts.append(_table("The leaves' .grad", "tg-leaf-grads", frame.leaf_grads))
    parts.append("</div>")
    return "\n".join(parts)


def _sent_rows(frame: Frame) -> list:
    """(input's name, (where it went, gradient)): the rules' names where they match the
    inputs one to one, else "input k"."""
    names = [rule.input for rule in frame.rules]
    if len(names) != len(frame.grad_inputs):
        names = [f"input {i}" for i in range(len(frame.grad_inputs))]
    return list(zip(names, frame.grad_inputs))


def _step_title(frame: Frame) -> str:
    return "Before backward" if frame.step == 0 else f"Step {frame.step} of {frame.total}"


def _chain_rule(frame: Frame) -> str:
    """Each input's rule, the rule with numbers, the result; or a custom backward's source."""
    e = html.escape
    if not frame.rules:
        if frame.source is None:
            return ""
        return f"<h4>Its backward (your Function)</h4><pre><code>{e(frame.source)}</code></pre>"
    blocks = ["<h4>The chain rule, for each input</h4>"]
    for rule in frame.rules:
        lines = [f'<div class="tg-rule-text"><code>{e(rule.rule)}</code></div>']
        if rule.numbers is not None:
            lines.append(f"<div><code>= {e(rule.numbers)}</code></div>")
        if rule.result is not None:
            lines.append(f'<div><code class="tg-grad">= {e(rule.result)}</code></div>')
        blocks.append(f'<div class="tg-rule">{"".join(lines)}</div>')
    return "".join(blocks)


def _table(caption: str, css: str, rows, escaped: bool = False) -> str:
    """A heading over a two-column table: label | value (None shows as None)."""
    e = html.escape
    body = "".join(
        f"<tr><td>{label if escaped else e(str(label))}</td><td><code>{e(str(value))}</code></td></tr>"
        for label, value in rows
    )
    return f'<h4>{e(caption)}</h4><table class="{css}">{body}</table>'


def preview(t) -> str | None:
    """A few values of a tensor and its shape, e.g. ``[1, 2.5, ...] shape (2, 4)``.

    >>> import teachgrad as tg
    >>> preview(tg.tensor([[1.0, 2.5]])), preview(tg.tensor(3.0)), preview(None)
    ('[1, 2.5] shape (1, 2)', '3 shape ()', None)
    """
    return None if t is None else f"{values(t)} shape {tuple(t.shape)}"


def _copy(t):
    return None if t is None else t.detach().clone()

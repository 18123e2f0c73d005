"""The chain rule of one backward step, written the way a lecture writes it.

When a node runs, it receives ∂L/∂out and sends each input ∂L/∂input: ∂L/∂out put
through a *local* rule. Built-in Functions carry that rule as data, next to their
backward (``formula = {"self": "grad · other", "other": "grad · self"}``, ``grad``
standing for ∂L/∂out), so the stepper can show, for each input of the node that ran::

    ∂L/∂self = ∂L/∂out · other       the rule
             = [-0.4768] · [0.42]     the rule with the numbers, for small tensors
             = [-0.2002]              what backward computed and sends on

For big tensors the middle line shows shapes instead (``[5, 4] · [5, 4]``). The
numbers come from the snapshot taken *before* the step (what the node saved is
released once it has run). A custom Function carries no such data: the stepper shows
its ``backward`` source instead.

    >>> import teachgrad as tg
    >>> a, b = tg.tensor([2.0], requires_grad=True), tg.tensor([3.0], requires_grad=True)
    >>> loss = a * b
    >>> before = tg.autograd.graph.snapshot(loss).node_named("MulBackward0")
    >>> step = next(tg.autograd.backward_steps(loss))
    >>> for rule in rules_of(step, before):
    ...     print(rule.rule, "|", rule.numbers, "|", rule.result)
    ∂L/∂self = ∂L/∂out · other | [1] · [3] | [3]
    ∂L/∂other = ∂L/∂out · self | [1] · [2] | [2]
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import re
import textwrap

from ._graph import shape_text

SMALL = 6  # tensors with at most this many elements show their numbers in the rule
# ASCII: "result²" is the name "result" squared, not one word
_NAME = re.compile(r"\b([A-Za-z_]\w*)", re.ASCII)
_GRAD = re.compile(r"\bgrad(\d*)(?!\w)", re.ASCII)


@dataclasses.dataclass
class Rule:
    """One input's line of the chain rule (``numbers``: None when they cannot be shown)."""

    input: str
    rule: str  # "∂L/∂self = ∂L/∂out · other"
    numbers: str | None  # "[1] · [3]", or shapes for big tensors
    result: str | None  # the gradient backward sent to this input


def short_rules(formula: dict) -> list:
    """A node's rules as short lines for the picture: ``∂self = ∂out · other``.

    >>> short_rules({"self": "grad · other", "other": "grad · self"})
    ['∂self = ∂out · other', '∂other = ∂out · self']
    """
    return [
        f"∂{name} = {_GRAD.sub(lambda m: f'∂out{m.group(1)}', rhs)}"
        for name, rhs in formula.items()
    ]


def values(t) -> str:
    """A tensor's first values, as a rule shows them: ``[0.5, -1.25]`` or ``3`` (0-d).

    >>> import teachgrad as tg
    >>> values(tg.tensor([0.5, -1.25])), values(tg.tensor(3.0))
    ('[0.5, -1.25]', '3')
    """
    flat = t.detach().reshape(-1)[:SMALL].tolist()
    text = ", ".join(f"{v:.4g}" if isinstance(v, float) else str(v) for v in flat)
    more = ", ..." if t.numel() > SMALL else ""
    return f"[{text}{more}]" if t.dim() else text


def rules_of(step, before) -> list:
    """The chain rule of ``step`` (a ``BackwardStep``), one ``Rule`` per input in its
    node's formula; ``before``: the node's ``NodeInfo`` in a snapshot taken before it
    ran (its rule table, and what it saved while that was still there)."""
    formula, saved = before.formula, {s.name: s for s in before.saved}
    if not formula:
        return []
    numbers = before.numbers  # (the node's own numbers, read when the snapshot was taken)
    grads = {f"grad{i}": g for i, g in enumerate(step.grad_outputs)}
    grads["grad"] = step.grad_outputs[0] if step.grad_outputs else None
    sent = _sent_per_rule(step, len(formula))
    found = []
    for i, (name, rhs) in enumerate(formula.items()):
        shown = _GRAD.sub(lambda m: f"∂L/∂out{m.group(1)}", rhs)
        result = sent[i] if sent is not None else None
        found.append(
            Rule(
                name,
                f"∂L/∂{name} = {shown}",
                _numbers(rhs, grads, saved, numbers),
                None if result is None else values(result),
            )
        )
    return found


def _sent_per_rule(step, count: int) -> list | None:
    """The gradient sent for each rule: the node's inputs match its rules one to one, or
    its rules are those of the inputs that have an edge (a loss's target has none)."""
    if len(step.grad_inputs) == count:
        return list(step.grad_inputs)
    edged = [g for (nxt, _), g in zip(step.node.next_functions, step.grad_inputs) if nxt]
    return edged if len(edged) == count else None


def _numbers(rhs: str, grads: dict, saved: dict, numbers: dict) -> str | None:
    """``rhs`` with each tensor (or saved number) in it replaced by its values (all small)
    or its shape."""
    known = {}  # name -> (values text or None, shape, number of elements)
    for name in set(_NAME.findall(rhs)):
        if name in grads and grads[name] is not None:
            g = grads[name]
            known[name] = (values(g), list(g.shape), g.numel())
        elif name in saved:
            s = saved[name]
            known[name] = (s.preview, s.shape, math.prod(s.shape))
        elif name in numbers:
            known[name] = (f"{numbers[name]:.4g}", [], 1)
    if not known:
        return None
    small = all(text is not None and count <= SMALL for text, _, count in known.values())
    if small:
        return _NAME.sub(lambda m: known[m.group(1)][0] if m.group(1) in known else m.group(1), rhs)
    return _NAME.sub(
        lambda m: shape_text(known[m.group(1)][1]) if m.group(1) in known else m.group(1), rhs
    )


def backward_source(node, lines: int = 14) -> str | None:
    """The ``backward`` of the custom Function that made ``node`` (at most ``lines``
    lines), or None for built-ins and where the source cannot be found."""
    function = getattr(type(node), "_forward_cls", None)
    if function is None or function.__module__.startswith("teachgrad."):
        return None
    try:
        source = textwrap.dedent(inspect.getsource(function.backward)).splitlines()
    except (OSError, TypeError):
        return None
    return "\n".join(source[:lines] + (["..."] if len(source) > lines else []))

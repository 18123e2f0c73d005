"""``explain_grad``: why a tensor's ``.grad`` is what it is, in plain words.

The most common autograd question is "why is my ``.grad`` None?". The answer is
always one of a few facts about the tensor and the graph, and this function checks
them in order: integer dtype, made in inference mode, not requiring grad (never, or
after ``detach()``/``no_grad``), not a leaf, not reached by the loss, backward not
run yet, or a gradient that is really zero.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = x * 2
    >>> print(tg.autograd.explain_grad(y))
    y.grad is None because y is not a leaf: it was made by MulBackward0, and backward() only stores gradients in leaves. Call y.retain_grad() before backward() to keep its gradient.
"""

from __future__ import annotations

from .._tensor import Tensor
from .tape import AccumulateGrad


def explain_grad(tensor: Tensor, loss: Tensor | None = None, name: str | None = None) -> str:
    """Why ``tensor.grad`` is None, zero or set; pass the ``loss`` to check it is reachable.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True); other = tg.ones(2, requires_grad=True)
    >>> loss = (other * 3).sum()
    >>> print(tg.autograd.explain_grad(w, loss, name="w"))
    w.grad is None because the loss does not depend on w: no path in the graph of the loss leads back to it, so backward() never reaches it.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"explain_grad() takes a Tensor, got {type(tensor).__name__}")
    who = name or tensor.name or ("y" if tensor.grad_fn is not None else "x")
    if tensor.grad_fn is not None and not tensor.retains_grad:
        return (
            f"{who}.grad is None because {who} is not a leaf: it was made by "
            f"{tensor.grad_fn.name()}, and backward() only stores gradients in leaves. Call "
            f"{who}.retain_grad() before backward() to keep its gradient."
        )
    if tensor._data.dtype.kind != "f":
        return (
            f"{who}.grad is None because {who} has dtype {tensor.dtype}: only floating-point "
            "tensors can require grad. Make it float, e.g. x.float()."
        )
    if tensor.is_inference():
        return (
            f"{who}.grad is None because {who} was made inside inference_mode(): such tensors never "
            "take part in autograd. Create it outside inference_mode."
        )
    if not tensor.requires_grad:
        return (
            f"{who}.grad is None because {who} does not require grad: it was created without "
            "requires_grad=True, or it comes from detach() or from an op run under no_grad(). "
            f"Set {who}.requires_grad_() (for a leaf) before the forward pass."
        )
    grad = tensor._grad
    if grad is None:
        if loss is not None and not _reaches(loss, tensor):
            return (
                f"{who}.grad is None because the loss does not depend on {who}: no path in the "
                "graph of the loss leads back to it, so backward() never reaches it."
            )
        return (
            f"{who}.grad is None because no backward() has reached {who} yet (or the gradients "
            "were cleared with zero_grad()). Call loss.backward() first."
        )
    if not bool((grad._data != 0).any()):
        return (
            f"{who}.grad is all zeros: backward() reached {who}, but the loss does not change "
            "when it changes here (e.g. relu/clamp inputs in the flat region, or a where() branch "
            "that was not taken)."
        )
    return f"{who}.grad is set: backward() stored d(loss)/d{who} there (shape {tuple(grad.shape)})."


def _reaches(loss: Tensor, tensor: Tensor) -> bool:
    """Whether the graph behind ``loss`` leads to ``tensor`` (its node or its AccumulateGrad)."""
    if loss is tensor:
        return True
    target = tensor.grad_fn
    stack, seen = [loss.grad_fn], set()
    while stack:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        if node is target or isinstance(node, AccumulateGrad) and node.variable is tensor:
            return True
        stack.extend(fn for fn, _ in node.next_functions)
    return False

"""Helpers shared by the viz tests."""

import teachgrad as tg


def small_graph():
    """loss = sum(exp(x * w)) with named leaves: every kind of node, three saved tensors."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.name = "x"
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    w.name = "w"
    y = (x * w).exp()
    return x, w, y, y.sum()

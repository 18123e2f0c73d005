"""Reentrant backward (a backward that runs a backward of its own), as PyTorch's own autograd
tests (test_autograd.py: test_deep_reentrant, test_reentrant_priority,
test_reentrant_child_error) check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def counting_down(lib, order=None, reduce=True):
    """torch's (Deep)Reentrant: forward computes ``x - 1``; its backward runs the same Function's
    backward again on that value, until it is below zero (``order`` records each backward)."""

    class Reentrant(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with lib.enable_grad():
                ctx.x = lib.autograd.Variable(x.detach(), requires_grad=True)
                ctx.x = ctx.x - 1
            return ctx.x.detach()

        @staticmethod
        def backward(ctx, x):
            if order is not None:
                order.append("Reentrant")
            if ctx.x < 0:
                return x
            with lib.enable_grad():
                out = Reentrant.apply(ctx.x)
                (out.sum() if reduce else out).backward()
            return x

    return Reentrant.apply


def test_deep_reentrant(lib):
    deep = counting_down(lib)
    v = lib.tensor(2000.0, requires_grad=True)  # 2000 nested backward calls: no stack overflow
    deep(v).sum().backward()
    assert v.grad.item() == 1.0
    v2 = lib.tensor(200.0, requires_grad=True)  # ... and again, reusing what the first one set up
    deep(v2).sum().backward()
    assert v2.grad.item() == 1.0


def test_reentrant_priority(lib):
    order = []

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            order.append("MyFunction")
            return x

    a = MyFunction.apply(lib.tensor(6.0, requires_grad=True))
    b = counting_down(lib, order, reduce=False)(lib.tensor(9.0, requires_grad=True))
    (a * b).backward()
    # the reentrant backward calls all run before the outer pass goes on to MyFunction
    assert len(order) == 11
    assert order.count("Reentrant") == 10
    assert order[-1] == "MyFunction"


def test_reentrant_child_error(lib):
    class SimulateBackwardError(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input.clone()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, input):
            raise Exception("Simulate error on backward pass")  # noqa: TRY002 - torch's test

    a = lib.ones(3, 3, requires_grad=True)
    c = a * a  # the parent graph
    b = lib.ones(3, 3, requires_grad=True)
    reentrant_root = SimulateBackwardError.apply(b * b).sum()  # the child graph: it fails

    class ReentrantFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, grad):
            reentrant_root.backward()  # the child runs inside the parent's backward
            return grad

    d = ReentrantFunc.apply(c)
    with pytest.raises(Exception, match="Simulate error"):  # the child's error reaches the caller
        d.sum().backward()

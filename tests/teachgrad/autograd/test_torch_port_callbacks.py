"""Final callbacks (``Variable._execution_engine.queue_callback``) as PyTorch's own autograd
tests check them (test_autograd.py: test_reentrant_with_callbacks_*, test_callback_adds_callback),
and the variations around them: when they run, in which grad mode, after an error, and
``is_checkpoint_valid``.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture).
"""

import pytest

from tests.teachgrad.autograd._port import randn, same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _engine(lib):
    return lib.autograd.Variable._execution_engine


def _passing_through(lib, in_backward):
    """A custom Function whose forward is the identity and whose backward (once
    differentiable, as in torch's tests) first calls ``in_backward(g)``."""

    class PassThrough(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            in_backward(g)
            return g

    return PassThrough.apply


def _reentrant_with_callbacks(lib, depths):
    counter = {"inner": 0, "outer": 0}
    engine = _engine(lib)

    def count(depth, name):
        if depth in depths:
            engine.queue_callback(lambda: counter.__setitem__(name, counter[name] + 1))

    inner = _passing_through(lib, lambda g: count(1, "inner"))

    def outer(g):
        count(0, "outer")
        tmp = g.detach().requires_grad_()
        with lib.enable_grad():
            out = inner(tmp).sum()
        out.backward()  # a backward inside a backward: its own pass, its own callbacks

    t1 = randn(lib, 3, 3, requires_grad=True)
    lib.autograd.backward([_passing_through(lib, outer)(t1).sum()])
    return counter


@pytest.mark.parametrize(
    "depths, expected",
    [
        ([0], {"outer": 1, "inner": 0}),
        ([1], {"outer": 0, "inner": 1}),
        ([0, 1], {"outer": 1, "inner": 1}),
    ],
)
def test_reentrant_with_callbacks_run_once_in_their_own_pass(lib, depths, expected):
    assert _reentrant_with_callbacks(lib, depths) == expected


def test_callback_adds_callback(lib):
    called = [0]
    engine = _engine(lib)

    def callback_final():
        called[0] += 1

    def callback_adds_callback():
        called[0] += 1
        engine.queue_callback(callback_final)

    apply = _passing_through(lib, lambda g: engine.queue_callback(callback_adds_callback))
    apply(randn(lib, 3, 3, requires_grad=True)).sum().backward()
    assert called[0] == 2


def test_queue_callback_outside_backward_is_refused(lib):
    for callback in (lambda: None, 3):
        with pytest.raises(RuntimeError) as error:
            _engine(lib).queue_callback(callback)
        assert str(error.value).splitlines()[0] == (
            "Final callbacks can only be installed during backward pass."
        )


@pytest.mark.parametrize("how", ["backward", "grad", "grad create_graph", "backward inputs"])
def test_callbacks_run_after_every_node_and_hook_in_the_nodes_grad_mode(lib, how):
    order = []
    x = randn(lib, 2, requires_grad=True)

    def callback():
        order.append(
            ("callback", lib.is_grad_enabled(), None if x.grad is None else x.grad.sum().item())
        )

    apply = _passing_through(
        lib, lambda g: (order.append("backward"), _engine(lib).queue_callback(callback))
    )
    x.register_hook(lambda g: order.append("leaf hook"))
    loss = (apply(x) * 2).sum()
    if how == "backward":
        loss.backward()
    elif how == "backward inputs":
        loss.backward(inputs=[x])
    else:
        lib.autograd.grad(loss, x, create_graph=how.endswith("create_graph"))
    gradient = None if how.startswith("grad") else 4.0
    assert order == ["backward", "leaf hook", ("callback", how.endswith("create_graph"), gradient)]


def test_callbacks_run_in_the_order_queued(lib):
    order = []
    engine = _engine(lib)
    queue = lambda g: [engine.queue_callback(lambda i=i: order.append(i)) for i in range(3)]  # noqa: E731
    _passing_through(lib, queue)(randn(lib, 2, requires_grad=True)).sum().backward()
    assert order == [0, 1, 2]


def test_a_failing_callback_fails_backward_and_a_failing_node_runs_none(lib):
    engine = _engine(lib)

    def boom():
        raise ValueError("boom")

    x = randn(lib, 2, requires_grad=True)
    with pytest.raises(ValueError, match="^boom$"):
        _passing_through(lib, lambda g: engine.queue_callback(boom))(x).sum().backward()
    assert same(x.grad, [1.0, 1.0])  # (the nodes ran before the callback)

    ran = []

    def fail(g):
        engine.queue_callback(lambda: ran.append(True))
        raise ValueError("node fails")

    with pytest.raises(ValueError, match="node fails"):
        (_passing_through(lib, fail)(x) * 1).sum().backward()
    assert ran == []


def test_a_callback_that_is_not_callable_fails_when_backward_ends(lib):
    x = randn(lib, 2, requires_grad=True)
    with pytest.raises(TypeError, match="'int' object is not callable"):
        _passing_through(lib, lambda g: _engine(lib).queue_callback(3))(x).sum().backward()


def test_is_checkpoint_valid_only_outside_a_pass_towards_inputs(lib):
    engine = _engine(lib)
    seen = []
    apply = _passing_through(lib, lambda g: seen.append(engine.is_checkpoint_valid()))
    x = randn(lib, 2, requires_grad=True)
    apply(x).sum().backward()
    lib.autograd.grad(apply(x).sum(), x)
    apply(x * 1).sum().backward(inputs=[x])
    assert seen == [True, False, False]
    assert engine.is_checkpoint_valid() is True

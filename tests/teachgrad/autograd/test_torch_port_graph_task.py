"""The backward pass now running, as torch's private ``torch._C`` helpers show it
(``_current_graph_task_id``, ``_will_engine_execute_node``,
``_current_graph_task_execution_order``, ``_current_autograd_node``), the two test nodes of ``torch._C._functions``
(``DelayedError``, ``UndefinedGrad``) and ``torch.autograd._functions`` (``Resize``,
``Type``, ``utils``), as PyTorch's own autograd tests (test_autograd.py:
test_will_engine_execute_node, test_current_graph_task_*, test_materialize_grads,
test_grad_to_node ...; test_copy_slices_graph_task_updates is in
test_torch_port_engine_edges.py) use them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts; those that compare the two libraries take both.
"""

import importlib
import warnings

import pytest

import teachgrad as tg
from tests.teachgrad.autograd._port import same, times_two

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def grad_fn_or_leaf_node(t):
    """torch's test helper ``get_grad_fn``: a non-leaf's grad_fn, a leaf's AccumulateGrad."""
    if t.requires_grad and t.grad_fn is None:
        return t.clone().grad_fn.next_functions[0][0]
    return t.grad_fn


def legacy(lib):
    """``lib.autograd._functions`` (torch's tests import it first: torch does not)."""
    return importlib.import_module(f"{lib.__name__}.autograd._functions")


# --------------------------------------------------------------------------- which nodes run


def test_will_engine_execute_node(lib):
    counter = [0]
    a = lib.randn(2, 3, 4, requires_grad=True)
    a2 = lib.randn(2, 3, 4, requires_grad=True)
    b = a * a2
    b2 = b.cos()
    c = times_two(lib, custom=True)(b)
    will = lib._C._will_engine_execute_node
    runs = list(map(grad_fn_or_leaf_node, (a, b, c)))
    does_not = list(map(grad_fn_or_leaf_node, (a2, b2)))

    def check(_):
        counter[0] += 1
        assert all(will(g) for g in runs)
        assert not any(will(g) for g in does_not)

    handles = [b.register_hook(check), c.register_hook(check)]
    out = c.sum()
    lib.autograd.backward(out, inputs=(a, b), retain_graph=True)  # towards inputs: a's node runs
    assert counter[0] == 2
    runs, does_not = (
        list(map(grad_fn_or_leaf_node, (a, a2, b, c))),
        list(map(grad_fn_or_leaf_node, (b2,))),
    )
    lib.autograd.backward(out, retain_graph=True)  # every node the root reaches
    assert counter[0] == 4
    with pytest.raises(RuntimeError, match="are currently running autograd.grad()"):
        lib.autograd.grad(out, (a,))  # (a leaf's node, whose gradients grad() catches)

    x = lib.randn(1, 2, 3, requires_grad=True) * 2  # a non-leaf input of grad() is fine
    y = x * 2
    handles.append(y.register_hook(lambda _: counter.append(will(y.grad_fn))))
    lib.autograd.grad(y.sum(), (x,))
    assert counter[-1] is True

    with pytest.raises(
        RuntimeError,
        match="^_get_should_execute_nodes should only be called during the backward pass",
    ):
        will(out.grad_fn)
    with pytest.raises(
        RuntimeError, match="^_will_engine_execute_node expects an grad_fn, but got Tensor"
    ):
        will(out)
    for h in handles:
        h.remove()


# --------------------------------------------------------------------------- which pass


def test_current_graph_task_id(lib):
    """-1 outside a pass; one number for all the hooks of one pass, a new one per pass."""
    assert lib._C._current_graph_task_id() == -1
    x = lib.ones(2, requires_grad=True)
    y = (x * 3).exp()
    seen = []
    y.register_hook(lambda g: seen.append(lib._C._current_graph_task_id()))
    x.register_hook(lambda g: seen.append(lib._C._current_graph_task_id()))
    y.sum().backward(retain_graph=True)
    lib.autograd.grad(y.sum(), x)
    assert seen[0] == seen[1] >= 0 and seen[2] == seen[3] > seen[1]
    assert lib._C._current_graph_task_id() == -1


# --------------------------------------------------------------------------- at which node


def nodes_seen(lib):
    """Which node ``_current_autograd_node`` names from each place user code runs in a
    backward: a custom backward, pre and post hooks, a tensor hook, a post-accumulate hook,
    a queued callback, hooks of what ``grad()`` catches, and after a nested backward."""
    here = lambda: getattr(lib._C._current_autograd_node(), "name", lambda: None)()  # noqa: E731
    queue = lib.autograd.Variable._execution_engine.queue_callback
    seen = [("outside", here())]

    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(("custom backward", here()))
            queue(lambda: seen.append(("callback", here())))
            return g * 2

    a = lib.ones(3, requires_grad=True)
    b = a.mul(2)
    c = b.exp()
    d = Twice.apply(c).sum()
    c.grad_fn.register_prehook(lambda g: seen.append(("pre hook", here())))
    c.grad_fn.register_hook(lambda gi, go: seen.append(("post hook", here())))
    a.register_post_accumulate_grad_hook(lambda p: seen.append(("post accumulate", here())))
    handle = b.register_hook(lambda g: seen.append(("tensor hook", here())))
    d.backward(retain_graph=True)
    lib.autograd.grad(d, b, retain_graph=True)  # b's hook runs where the pass catches it
    handle.remove()
    handle = a.register_hook(lambda g: seen.append(("leaf hook in grad()", here())))
    lib.autograd.grad(d, a, retain_graph=True)
    handle.remove()

    def nested(g):
        with lib.enable_grad():
            (lib.ones(2, requires_grad=True) * 3).sum().backward()
        seen.append(("after a nested backward", here()))

    c.register_hook(nested)
    d.backward()
    return seen + [("after", here())]


def test_current_autograd_node_is_torch_s(torch):
    """The node torch names at each place (torch's own test reads it from a
    TorchDispatchMode, which teachgrad has not: the places user code runs are these)."""
    seen = nodes_seen(tg)
    assert seen == nodes_seen(torch)
    assert ("tensor hook", "MulBackward0") in seen and ("callback", None) in seen
    assert ("after a nested backward", "ExpBackward0") in seen


# --------------------------------------------------------------------------- in which order


def execution_order(lib, root, **how):
    """torch's ``get_execution_order`` idiom: a hook on the root reads the order, then stops
    the pass with StopIteration (which must come out as it is)."""
    names = []

    def hook(_):
        names.extend(type(node).__name__ for node in lib._C._current_graph_task_execution_order())
        raise StopIteration

    handle = root.register_hook(hook)
    try:
        with lib.autograd.set_multithreading_enabled(False), pytest.raises(StopIteration):
            if how.get("grad"):
                lib.autograd.grad(root, how["inputs"])
            else:
                root.backward(inputs=how.get("inputs"))
    finally:
        handle.remove()
    return names


def diamond(lib):
    """a * b feeding exp and sin, and a again: nodes that wait for two gradients."""
    a, b = lib.ones(3, requires_grad=True), lib.full((3,), 2.0, requires_grad=True)
    c = a * b
    return a, b, c, (c.exp() + c.sin() * a).sum()


@pytest.mark.parametrize("towards", [None, "b", "c", "grad c"])
def test_current_graph_task_execution_order_is_torch_s(torch, towards):
    orders = []
    for lib in (tg, torch):
        a, b, c, f = diamond(lib)
        if towards is None:
            orders.append(execution_order(lib, f))
        else:
            target = {"b": b, "c": c, "grad c": c}[towards]
            orders.append(execution_order(lib, f, inputs=[target], grad=towards == "grad c"))
    assert orders[0] == orders[1]
    assert orders[0][:2] == ["SumBackward0", "AddBackward0"]  # the root first, then its input


def test_current_graph_task_execution_order_of_a_clone_is_torch_s(torch):
    orders = []
    for lib in (tg, torch):
        x = lib.ones(2, requires_grad=True)
        y = x.clone()
        orders.append(execution_order(lib, (y * 2 + y.cos()).sum()))
    assert orders[0] == orders[1] == [
        "SumBackward0", "AddBackward0", "CosBackward0", "MulBackward0", "CloneBackward0", "AccumulateGrad",
    ]  # fmt: skip


def test_current_graph_task_execution_order_errors(lib):
    with pytest.raises(
        RuntimeError,
        match="^_current_graph_task_execution_order should only be called during the backward pass",
    ):
        lib._C._current_graph_task_execution_order()
    x = lib.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: lib._C._current_graph_task_execution_order())
    with pytest.raises(RuntimeError, match="^get_current_graph_task_execution_order expects the current backward to be executed with multithreading disabled"):  # fmt: skip
        y.sum().backward()


def test_a_stop_iteration_from_a_hook_or_a_backward_comes_out_as_it_is(lib):
    """Not turned into "generator raised StopIteration" on the way out of the engine."""

    class Stops(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            raise StopIteration("from backward")

    x = lib.ones(2, requires_grad=True)
    with pytest.raises(StopIteration, match="from backward"):
        Stops.apply(x).sum().backward()
    y = x * 2

    def hook(g):
        raise StopIteration("from a hook")

    y.register_hook(hook)
    with pytest.raises(StopIteration, match="from a hook"):
        lib.autograd.grad(y.sum(), x)


# --------------------------------------------------------------------------- torch._C._functions


def test_delayed_error_and_undefined_grad_nodes(lib):
    F = lib._C._functions
    y = lib.ones(2, requires_grad=True)
    out = F.DelayedError("Boom!", 1)(y)
    assert out.grad_fn is not None and out.grad_fn.next_functions[0][0] is grad_fn_or_leaf_node(y)
    assert not out.is_leaf and out._base is None
    with lib.no_grad():
        assert F.DelayedError("Boom!", 1)(y).grad_fn is not None  # recorded in no_grad too
    assert F.DelayedError("Boom!", 1)(lib.ones(2)).grad_fn is None
    pair = F.DelayedError("Boom!", 2)(y, y * 2)
    assert isinstance(pair, tuple) and same(pair[1], [2.0, 2.0])
    with pytest.raises(TypeError, match="^expected 1 arguments, got 2 instead"):
        F.DelayedError("x", 1)(y, y)
    with pytest.raises(TypeError, match="^argument 0 is not a Variable"):
        F.DelayedError("x", 1)(3)

    r = F.UndefinedGrad()(y * 3)
    assert type(r.grad_fn).__name__ == "UndefinedGradBackward" and same(r, [3.0, 3.0])
    r.sum().backward()
    assert y.grad is None  # no gradient came back
    with pytest.raises(TypeError, match="^expected 1 arguments, got 2 instead"):
        F.UndefinedGrad()(y, y)


@pytest.mark.parametrize("materialize", [True, False])
def test_materialize_grads(lib, materialize):
    seen = []

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x

        @staticmethod
        def backward(ctx, grad):
            seen.append(grad)
            return grad

    x = lib.ones(1, requires_grad=True)
    lib._C._functions.UndefinedGrad()(MyFunction.apply(x)).backward()
    assert same(seen[0], lib.zeros(1)) if materialize else seen[0] is None


def test_once_differentiable_still_says_so(lib):
    """once_differentiable's guard is the same Error node, with its own message."""

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, g):
            return g * 2

    x, go = lib.ones(2, requires_grad=True), lib.ones((), requires_grad=True)
    (gx,) = lib.autograd.grad(MyFunction.apply(x).sum(), x, go, create_graph=True)
    assert same(gx, [2.0, 2.0]) and gx.requires_grad
    with pytest.raises(RuntimeError, match="^trying to differentiate twice a function that was marked with @once_differentiable"):  # fmt: skip
        gx.sum().backward()


# --------------------------------------------------------------------------- torch.autograd._functions


def test_grad_to_node_through_resize(lib):
    """torch's test_grad_to_node: grad() to a tensor and to its GradientEdge agree, here
    for Resize's output (a custom Function's node)."""
    x = lib.rand(2, requires_grad=True)
    x = legacy(lib).Resize.apply(x, (2,))
    out = x.clone()
    ref = lib.autograd.grad(out.sum(), x)
    new = lib.autograd.grad(out.sum(), lib.autograd.graph.get_gradient_edge(x))
    assert same(ref[0], new[0])


def test_resize(lib):
    Resize = legacy(lib).Resize
    x = lib.arange(6.0).reshape(2, 3).requires_grad_()
    r = Resize.apply(x, (3, 2))
    assert r.grad_fn.name() == "ResizeBackward"
    assert r.data_ptr() == x.data_ptr()  # a contiguous tensor: in its own memory
    r.sum().backward()
    assert same(x.grad, lib.ones(2, 3))
    xt = x.detach().t().requires_grad_()  # not contiguous: copied first
    r = Resize.apply(xt, (6,))
    assert same(r, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0])
    r.backward(lib.arange(6.0))
    assert same(xt.grad, [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
    with pytest.raises(RuntimeError, match=r"^requested resize to 4 \(4 elements in total\), but the given tensor has a size of 2x3 \(6 elements\)\. autograd's resize can only change"):  # fmt: skip
        Resize.apply(x, (4,))


def test_type_is_deprecated_and_converts_back(lib):
    x = lib.ones(2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t = legacy(lib).Type.apply(x, lib.float64)
    assert [w.category for w in caught] == [FutureWarning]
    assert str(caught[0].message).startswith(
        "`torch.autograd._functions.Type` is deprecated as of PyTorch 2.1"
    )
    assert t.dtype == lib.float64 and t.grad_fn.name() == "TypeBackward"
    t.sum().backward()
    assert x.grad.dtype == lib.float32 and same(x.grad, [1.0, 1.0])


def test_utils_maybe_view_and_maybe_unexpand(lib):
    utils = importlib.import_module(f"{lib.__name__}.autograd._functions.utils")
    a = lib.ones(2, 3)
    assert utils.maybe_view(a, (2, 3)) is a and tuple(utils.maybe_view(a, (3, 2)).shape) == (3, 2)
    assert same(utils.maybe_unexpand(lib.ones(4, 2, 3), (1, 3)), [[8.0, 8.0, 8.0]])
    assert same(utils.maybe_unexpand(lib.ones(4, 2, 3), (2, 1)), [[12.0], [12.0]])
    assert utils.maybe_unexpand(a, (2, 3)) is a

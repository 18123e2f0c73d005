"""Materialized gradients of custom Functions, set_grad_enabled used as a decorator,
retains_grad, and a few graph facts, as PyTorch's own autograd tests (test_autograd.py:
test_materialize_grads, test_dont_materialize_grads, test_set_grad_enabled,
test_set_grad_enabled_wraps, test_retain_grad,
test_custom_function_exception, test_hook_edge_case_when_called_with_grad,
test_accumulate_grad_posthooks_can_observe_tensor_prehook,
test_retains_grad_can_always_observe_tensor_prehook, test_gradient_edge_graph_ownership,
test_backward_copy, test_multi_backward_no_grad, test_backward_no_grad, test_grad_thread_safety,
test_python_thread_in_middle)
check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's two materialize tests make the undefined gradient with an
internal node (``torch._C._functions.UndefinedGrad``); here an output that backward never
reaches gives the same undefined gradient.
"""

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn

# --------------------------------------------------------------------------- materialized grads


def _two_copies(lib, materialize, seen):
    """A custom Function returning two copies of its input; its backward records the
    gradients it got (``seen``) and returns the first one plus the second when defined."""

    class TwoCopies(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return x.clone(), x.clone()

        @staticmethod
        def backward(ctx, g_first, g_second):
            seen.extend([g_first, g_second])
            return g_first if g_second is None else g_first + g_second

    return TwoCopies.apply


def test_an_unused_output_gets_zeros_by_default(lib):
    seen = []
    x = lib.ones(3, requires_grad=True)
    first, _ = _two_copies(lib, True, seen)(x)
    first.sum().backward()
    assert same(seen[1], np.zeros(3)) and seen[1].dtype == x.dtype
    assert same(x.grad, np.ones(3))


def test_an_unused_output_gets_none_without_materialize_grads(lib):
    seen = []
    x = lib.ones(3, requires_grad=True)
    first, _ = _two_copies(lib, False, seen)(x)
    first.sum().backward()
    assert seen[1] is None
    assert same(seen[0], np.ones(3))
    assert same(x.grad, np.ones(3))


def test_a_function_returning_its_input_unchanged_without_materialize_grads(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = lib.ones(1, requires_grad=True)
    Identity.apply(x).backward()
    assert same(x.grad, np.ones(1))


# --------------------------------------------------------------------------- set_grad_enabled


def test_set_grad_enabled_as_block_and_as_function(lib):
    x = lib.tensor([1.0], requires_grad=True)
    with lib.set_grad_enabled(False):
        y = x * 2
    assert not y.requires_grad
    with lib.set_grad_enabled(True):
        y = x * 2
    assert y.requires_grad
    with lib.set_grad_enabled(False):
        lib.set_grad_enabled(True)  # a call sets the mode at once, inside the block too
        y = x * 2
    assert y.requires_grad


@pytest.mark.parametrize("style", ["decorator", "object_then_call"])
def test_set_grad_enabled_wrapping_a_function_leaves_the_mode_alone(lib, style):
    def sine(t):
        return t.sin()

    with lib.enable_grad():
        if style == "decorator":
            wrapped = lib.set_grad_enabled(False)(sine)
        else:
            switch = lib.set_grad_enabled(False)  # this call turns grad off at once ...
            assert not lib.is_grad_enabled()
            wrapped = switch(sine)  # ... and wrapping a function turns it back on
            assert lib.is_grad_enabled()
        assert lib.is_grad_enabled()
        out = wrapped(lib.zeros(1, requires_grad=True))
        assert not out.requires_grad
        assert lib.is_grad_enabled()


# --------------------------------------------------------------------------- retain_grad


def test_retains_grad_tells_whether_a_non_leaf_keeps_its_gradient(lib):
    x = randn(lib, 1, 3, requires_grad=True)
    h = x * 3
    assert not x.retains_grad and not h.retains_grad
    h.retain_grad()
    h.retain_grad()  # twice is fine
    assert h.retains_grad
    x.retain_grad()  # a no-op on a leaf
    assert not x.retains_grad
    out = (h * h).sum()
    out.backward(retain_graph=True)
    assert same(h.grad, port.values(h) * 2)
    out.backward()
    assert same(h.grad, port.values(h) * 4)  # accumulated
    assert same(x.grad, port.values(x) * 36)


def test_retain_grad_sees_what_tensor_hooks_registered_before_it_returned(lib):
    def twice(g):
        return g * 2

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(twice)
    b.retain_grad()
    b.register_hook(twice)
    b.clone().backward()
    assert b.grad.item() == 4  # it sees both, even the one registered after it

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(twice)
    b.clone().backward()
    assert b.grad.item() == 2


def _grads_read_by_threads(t, threads=4):
    """Weak references to ``t.grad`` as ``threads`` threads read it all at once."""
    barrier = threading.Barrier(threads)

    def read_grad(_):
        barrier.wait()
        return weakref.ref(t.grad)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        return list(pool.map(read_grad, range(threads)))


def test_threads_reading_grad_get_the_same_tensor(lib):
    for _ in range(3):
        t = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        (t**2).sum().backward()
        assert all(ref() is t.grad for ref in _grads_read_by_threads(t))


def _run_in_threads(fn, arg, threads=5):
    """Run ``fn(arg)`` in ``threads`` threads at once and wait for them all."""
    workers = [threading.Thread(target=fn, args=(arg,)) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()


def test_threads_sharing_the_first_half_of_a_graph(lib):
    outcomes = []  # None for a backward that worked, else the first line of its error

    def backward_once(middle):
        try:
            (middle + middle**2).sum().backward()
            outcomes.append(None)
        except RuntimeError as error:
            outcomes.append(str(error).splitlines()[0])

    x = lib.ones(5, 5, requires_grad=True)
    _run_in_threads(backward_once, x + x**2)
    # the first to reach the shared half frees it; the others are told to retain the graph
    assert outcomes.count(None) >= 1
    assert all(
        o is None or "Trying to backward through the graph a second time" in o for o in outcomes
    )

    x = lib.ones(5, 5, requires_grad=True)
    _run_in_threads(lambda m: (m + m**2).sum().backward(retain_graph=True), x + x**2)
    with lib.no_grad():
        expected = 5 * (4 * x**3 + 6 * x**2 + 4 * x + 1)
    assert same(x.grad, expected)


# --------------------------------------------------------------------------- hooks and grad()


def test_accumulate_grad_node_hooks_see_the_tensor_hooks_result(lib):
    a = lib.tensor(1.0, requires_grad=True)
    seen = {}

    def posthook(grad_inputs, grad_outputs):
        seen["post"] = (len(grad_inputs), port.values(grad_outputs[0]))

    def prehook(grad_outputs):
        seen["pre"] = (len(grad_outputs), port.values(grad_outputs[0]))

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(lambda g: g * 2)
    b.backward()
    assert seen["pre"][0] == 1 and seen["pre"][1] == 2
    assert seen["post"][0] == 0 and seen["post"][1] == 2


def test_which_hooks_grad_and_backward_run(lib):
    a = lib.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def counter(kind):
        def hook(*args):
            counts[kind] += 1

        return hook

    a.register_hook(counter("tensor"))
    b.register_hook(counter("tensor"))
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(counter("post"))
    acc.register_prehook(counter("pre"))
    b.grad_fn.register_hook(counter("post"))
    b.grad_fn.register_prehook(counter("pre"))

    def run(call):
        """(tensor hooks, node prehooks, node posthooks) that ran during ``call()``."""
        counts.update(tensor=0, pre=0, post=0)
        call()
        return counts["tensor"], counts["pre"], counts["post"]

    # grad runs the tensor hooks of the inputs, but no hook of the nodes it stops at
    assert run(lambda: lib.autograd.grad(c, inputs=(b,), retain_graph=True)) == (1, 0, 0)
    assert run(lambda: lib.autograd.grad(c, inputs=(a, b), retain_graph=True)) == (2, 1, 1)
    assert run(lambda: c.backward(retain_graph=True)) == (2, 2, 2)
    assert run(lambda: c.backward(inputs=(a, b), retain_graph=True)) == (2, 2, 2)


def test_an_exception_raised_by_a_custom_backward_reaches_the_caller(lib):
    class Failing(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            raise Exception("Simulate error on backward pass")

    t1 = lib.rand(3, 3, requires_grad=True)
    t2 = lib.rand(3, 3, requires_grad=True)
    out = Failing.apply((t1 + t2) * (t1 + t2))
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        out.sum().backward()


# --------------------------------------------------------------------------- gradient edges


def test_backward_of_a_gradient_edge_after_its_tensor_is_gone(lib):
    class Clone(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            return grad.clone()

    inp = lib.rand(1, requires_grad=True).clone()
    for make in (lambda t: t.clone(), Clone.apply):
        out = make(inp)
        edge = lib.autograd.graph.get_gradient_edge(out)
        lib.autograd.backward(edge)
        del out  # the edge keeps the node alive
        lib.autograd.backward(edge)


# --------------------------------------------------------------------------- several roots


def test_a_gradient_buffered_on_three_long_branches(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = lib.ones(5, 5, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    added = a + b + c
    for _ in range(4):
        a, b, c = a * 2, b * 2, c * 2
    (added + a + b + c).backward(lib.ones(5, 5))
    assert same(x.grad, np.full((5, 5), 34.0))
    assert same(y.grad, np.full((5, 5), 17.0))


def test_backward_of_several_roots_one_without_grad_raises(lib):
    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1)
    with pytest.raises(RuntimeError) as caught:
        lib.autograd.backward([x + y, y * 2], [lib.ones(5, 5), lib.ones(5, 5)])
    assert str(caught.value).splitlines()[0] == (
        "element 1 of tensors does not require grad and does not have a grad_fn"
    )


def test_backward_of_a_non_scalar_root_with_a_none_gradient_raises(lib):
    a = randn(lib, 5, 5, requires_grad=True)
    with pytest.raises(RuntimeError) as caught:
        lib.autograd.backward([a + 2], [None])
    assert str(caught.value).splitlines()[0] == (
        "grad can be implicitly created only for scalar outputs"
    )

"""Materialized gradients of custom Functions, set_grad_enabled wrapping a function,
retains_grad, threads that read .grad or share half a graph, and gradient edges that outlive
their tensor, as PyTorch's own autograd tests (test_autograd.py: test_materialize_grads,
test_dont_materialize_grads, test_set_grad_enabled_wraps, test_retain_grad (retains_grad),
test_grad_thread_safety, test_python_thread_in_middle, test_gradient_edge_graph_ownership,
test_set_multithreading_enabled_as_context_manager_and_function) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's two materialize tests make the undefined gradient with an
internal node (``torch._C._functions.UndefinedGrad``): they are ported as they are in
test_torch_port_graph_task.py; here an output that backward never reaches gives the same
undefined gradient.
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


# --------------------------------------------------------------------------- retains_grad


def test_retains_grad_tells_whether_a_non_leaf_keeps_its_gradient(lib):
    x = randn(lib, 1, 3, requires_grad=True)
    h = x * 3
    assert not x.retains_grad and not h.retains_grad
    h.retain_grad()
    h.retain_grad()  # twice is fine
    assert h.retains_grad
    x.retain_grad()  # a no-op on a leaf: its gradient is kept anyway
    assert not x.retains_grad
    (h * h).sum().backward()
    assert same(h.grad, port.values(h) * 2)


# --------------------------------------------------------------------------- threads


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


def test_set_multithreading_enabled_as_context_manager_and_function(lib):
    """On by default; a context manager restores it, a plain call sets it; per thread."""
    enabled = lib.autograd.is_multithreading_enabled
    with lib.autograd.set_multithreading_enabled(False):
        assert not enabled()
    assert enabled()
    with lib.autograd.set_multithreading_enabled(False):
        lib.autograd.set_multithreading_enabled(True)
        assert enabled()
    assert enabled()
    lib.autograd.set_multithreading_enabled(False)
    try:
        assert not enabled()
        seen = []
        worker = threading.Thread(target=lambda: seen.append(enabled()))
        worker.start()
        worker.join()
        assert seen == [True]  # (another thread keeps its own setting)
        x = randn(lib, 3, requires_grad=True)
        (x * x).sum().backward()  # (backward still works)
        assert same(x.grad, 2 * port.values(x))
    finally:
        lib.autograd.set_multithreading_enabled(True)
    assert enabled()
    with pytest.raises(TypeError, match=r"^set_multithreading_enabled\(\): argument 'enabled'"):
        lib.autograd.set_multithreading_enabled(1)


def test_force_original_view_tracking_as_function_context_manager_and_decorator(lib):
    """torch's test_view_replay_enabled (its switch; teachgrad keeps the setting and always
    regenerates a changed view with as_strided, so only the node's name differs there: see
    the test below), and the call torch's TestAutograd.tearDown makes after every test."""
    replay = lib.autograd.is_view_replay_enabled
    force = lib.autograd._force_original_view_tracking
    assert not replay()
    with force(True):
        assert replay()
    assert not replay()

    @force(True)
    def inside():
        return replay()

    assert not replay() and inside() and not replay()
    force(True)  # a plain call sets it at once, for this thread
    try:
        assert replay()
        seen = []
        worker = threading.Thread(target=lambda: seen.append(replay()))
        worker.start()
        worker.join()
        assert seen == [False]
    finally:
        force(False)  # (torch's tearDown)
    assert not replay()
    with pytest.raises(TypeError, match=r"^set_view_replay_enabled\(\): argument 'enabled'"):
        force(1)


def test_a_view_changed_in_place_under_view_replay_has_torch_s_gradients(lib):
    """With view replay on, torch rebuilds ``out``'s history by replaying ``view(-1)``
    (ViewBackward0), teachgrad by ``as_strided`` (AsStridedBackward0): the same gradients."""
    x = randn(lib, 2, 2, requires_grad=True)
    with lib.autograd._force_original_view_tracking(True):
        out = x.clone().view(-1)
        out.mul_(3)
    (out * lib.arange(4.0, dtype=out.dtype)).sum().backward()
    assert same(x.grad, 3 * np.arange(4.0).reshape(2, 2))
    name = type(out.grad_fn).__name__
    assert name == ("AsStridedBackward0" if lib.__name__ == "teachgrad" else "ViewBackward0")

"""``tg.autograd.graph.register_multi_grad_hook``, as PyTorch's own autograd tests
(test_autograd.py: test_multi_grad_all_hooks, test_multi_grad_any_hooks,
test_multi_grad_hooks_invalid_mode) and its documentation check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def four(lib):
    """The documentation's example: leaves a, b; c = a * b, in the graph; d = a * b, not."""
    a = port.randn(lib, 2, 3, seed=1, requires_grad=True)
    b = port.randn(lib, 2, 3, seed=2, requires_grad=True)
    return a, b, a * b, a * b


def seen(calls):
    """Which gradients each call got (True: a gradient, False: None)."""
    return [[g is not None for g in grads] for grads in calls]


def test_all_mode_waits_for_the_gradients_the_pass_computes(lib):
    a, b, c, d = four(lib)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((a, b, c, d), calls.append)
    c.sum().backward(retain_graph=True)
    assert seen(calls) == [[True, True, True, False]]
    ga, gb, gc, _ = calls[0]
    assert port.same(ga, b) and port.same(gb, a) and port.same(gc, np.ones((2, 3)))
    assert isinstance(calls[0], list)  # (a list, as torch's)
    c.sum().backward(inputs=(a,), retain_graph=True)  # b is not on a path to the inputs
    (c.sum() + d.sum()).backward(inputs=(a,))
    assert seen(calls[1:]) == [[True, False, True, False], [True, False, True, True]]


def test_all_mode_with_a_leaf_input_of_grad_is_refused(lib):
    """grad() catches its inputs' gradients without running their nodes: for a leaf among
    them torch can't tell whether the gradient will come, and refuses. A leaf grad() does
    not ask for is left out, and a tensor with a history is no leaf."""
    a, b, c, d = four(lib)
    calls = []
    handle = lib.autograd.graph.register_multi_grad_hook((a, b, c, d), calls.append)
    with pytest.raises(RuntimeError, match="^A leaf node was passed to _will_engine_execute_node"):
        lib.autograd.grad(c.sum(), (b,), retain_graph=True)
    handle.remove()
    lib.autograd.graph.register_multi_grad_hook((a, c), calls.append)
    lib.autograd.grad(c.sum(), (b,), retain_graph=True)
    e = c * 1
    lib.autograd.graph.register_multi_grad_hook((c, e), calls.append)
    lib.autograd.grad(e.sum(), (c,))
    assert seen(calls) == [[False, True], [False, True], [True, True]]  # ((a, c) again: c ran)


def test_all_mode_is_not_called_by_a_pass_that_reaches_none_of_the_tensors(lib):
    a, b, c, d = four(lib)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((d,), calls.append)
    c.sum().backward()
    assert calls == []


def test_any_mode_gets_the_first_gradient_of_each_pass(lib):
    a, b, c, _ = four(lib)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((a, b, c), calls.append, mode="any")
    c.sum().backward(retain_graph=True)
    assert len(calls) == 1 and port.same(calls[0], np.ones((2, 3)))  # c's, which comes first
    lib.autograd.grad(c.sum(), (a,))
    assert len(calls) == 2 and port.same(calls[1], np.ones((2, 3)))


def test_any_mode_leaves_out_tensors_that_do_not_require_grad(lib):
    a = port.randn(lib, 3, requires_grad=True)
    plain = port.randn(lib, 3)
    calls = []
    lib.autograd.graph.register_multi_grad_hook((plain, a), calls.append, mode="any")
    (a * 2).sum().backward()
    assert len(calls) == 1 and port.same(calls[0], np.full(3, 2.0))


def test_all_mode_refuses_a_tensor_that_does_not_require_grad(lib):
    a = port.randn(lib, 3, requires_grad=True)
    with pytest.raises(AssertionError, match="^Expected gradient function to be set"):
        lib.autograd.graph.register_multi_grad_hook((a, port.randn(lib, 3)), print)


@pytest.mark.parametrize("mode", ["all", "any"])
def test_the_handle_removes_every_hook(lib, mode):
    a, b, c, _ = four(lib)
    calls = []
    handle = lib.autograd.graph.register_multi_grad_hook((a, b, c), calls.append, mode=mode)
    handle.remove()
    c.sum().backward()
    assert calls == [] and a.grad is not None


def test_a_mode_other_than_all_or_any_is_refused(lib):
    a = port.randn(lib, 3, requires_grad=True)
    with pytest.raises(ValueError, match=r"^Expects mode to be one of \('all', 'any'\) but got"):
        lib.autograd.graph.register_multi_grad_hook((a,), print, mode="every")


def test_a_pass_inside_a_hook_is_a_pass_of_its_own(lib):
    """A backward started while another runs (in a hook) keeps its own count."""
    a, b, c, _ = four(lib)
    calls, inner = [], []
    lib.autograd.graph.register_multi_grad_hook((a, b), calls.append)
    x = port.randn(lib, 3, requires_grad=True)
    lib.autograd.graph.register_multi_grad_hook((x,), inner.append)

    def nested(grad):
        with lib.enable_grad():  # (hooks run with grad mode off)
            (x * 3).sum().backward()

    c.register_hook(nested)
    c.sum().backward()
    assert seen(calls) == [[True, True]] and seen(inner) == [[True]]
    assert port.same(inner[0][0], np.full(3, 3.0))


@pytest.mark.parametrize("t1_kind", ["leaf", "non-leaf"])
def test_all_mode_with_an_input_the_backward_does_not_reach(lib, t1_kind):
    """test_multi_grad_all_hooks' step with ``inputs=(t1, t3)``: t1 is not in the graph of
    the output, so no gradient will come for it; the hook still fires once, t1's gradient
    None."""
    t1 = lib.rand(2, requires_grad=True)
    t1 = t1 if t1_kind == "leaf" else t1.mul(2)
    t2, t3 = lib.rand(2, requires_grad=True), lib.rand(2, requires_grad=True)
    res = []
    lib.autograd.graph.register_multi_grad_hook(
        (t1, t2, t3), lambda gs: res.append([g is not None for g in gs])
    )
    (t2 * t3).sum().backward(inputs=(t1, t3))
    assert res == [[False, False, True]]

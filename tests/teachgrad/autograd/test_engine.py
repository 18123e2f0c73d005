"""The engine (API.md section 4): ``backward`` and ``grad`` with every argument,
execution order, accumulation and the gradient layout contract, aliasing, and
``backward_steps`` (API.md section 5).

Comparisons with PyTorch run the same function with ``L = torch`` and
``L = teachgrad``; the other tests state their expected numbers.
"""

import contextlib
import math
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad import _events
from teachgrad.autograd import engine
from tests.teachgrad.autograd._port import times_two


def _nodes(*roots):
    """Every node reachable from the grad_fns of ``roots``, each once."""
    seen, stack, order = set(), [r.grad_fn for r in roots], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        order.append(node)
        stack.extend(n for n, _ in node.next_functions)
    return order


def _values(result):
    """Nested tensors -> nested lists (None stays None), for comparing libraries."""
    if isinstance(result, tuple | list):
        return [_values(r) for r in result]
    return None if result is None else result.detach().tolist()


# =============================================================================== backward


def test_backward_of_a_scalar_fills_leaf_grads():
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = tg.tensor([4.0, 5.0, 6.0], requires_grad=True)
    (x * w).sum().backward()
    assert x.grad.tolist() == [4.0, 5.0, 6.0]
    assert w.grad.tolist() == [1.0, 2.0, 3.0]


def test_backward_of_a_non_scalar_takes_the_vector_of_the_vjp():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(tg.tensor([1.0, 0.5]))
    assert x.grad.tolist() == [2.0, 2.0]


def test_autograd_backward_takes_lists_with_none_for_scalars():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 3
    tg.autograd.backward([y, y.sum()], [tg.tensor([1.0, 2.0]), None])
    assert x.grad.tolist() == [6.0, 9.0]


def test_backward_gradient_must_be_a_tensor_not_a_python_number():
    """torch raises TypeError for ``y.backward(2.0)``; a 0-d tensor works."""
    x = tg.tensor(1.0, requires_grad=True)
    with pytest.raises(TypeError):
        (x * 2).backward(2.0)
    (x * 2).backward(tg.tensor(2.0))
    assert x.grad.item() == 4.0


def test_backward_of_a_leaf_itself():
    x = tg.tensor(1.0, requires_grad=True)
    x.backward()
    assert x.grad.item() == 1.0


def test_deprecated_grad_variables_still_works_with_a_deprecation_warning():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(DeprecationWarning, match="grad_variables"):
        tg.autograd.backward(x * 3, grad_variables=tg.ones(2))
    assert x.grad.tolist() == [3.0, 3.0]


def test_grad_variables_and_grad_tensors_together_is_an_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tg.autograd.backward(x * 3, grad_tensors=tg.ones(2), grad_variables=tg.ones(2))


# --------------------------------------------------------------------------- retain_graph


def test_graph_is_freed_after_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_retain_graph_allows_a_second_backward_that_accumulates():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_graph_without_saved_tensors_can_run_twice():
    """Nothing to free (x + 1 saves nothing): torch allows the second backward too."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x + 1).sum()
    y.backward()
    y.backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_create_graph_implies_retain_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(create_graph=True)
    y.backward()
    assert x.grad.tolist() == [4.0, 8.0]


def test_create_graph_with_retain_graph_false_frees_the_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward(create_graph=True, retain_graph=False)
    with pytest.raises(RuntimeError, match="second time"):
        y.backward()


# --------------------------------------------------------------------------- create_graph


def test_create_graph_makes_grads_differentiable():
    x = tg.tensor(3.0, requires_grad=True)
    (dx,) = tg.autograd.grad(x**3, x, create_graph=True)
    assert dx.requires_grad and dx.item() == 27.0
    (d2x,) = tg.autograd.grad(dx, x, create_graph=True)
    assert d2x.item() == 18.0
    (d3x,) = tg.autograd.grad(d2x, x)
    assert d3x.item() == 6.0


def test_backward_with_create_graph_gives_a_grad_with_history():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(create_graph=True)
    g = x.grad
    assert g.requires_grad and g.grad_fn is not None
    x.grad = None
    g.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_without_create_graph_grads_do_not_require_grad():
    x = tg.tensor(2.0, requires_grad=True)
    (g,) = tg.autograd.grad(x * x, x)
    assert not g.requires_grad
    (x * x).backward()
    assert not x.grad.requires_grad


_HIGHER_ORDER = {
    "cube": lambda L, x, y: (x**3).sum(),
    "exp*sin": lambda L, x, y: (x.exp() * x.sin()).sum(),
    "tanh": lambda L, x, y: x.tanh().sum(),
    "x*y mixed": lambda L, x, y: (x * x * y).sum(),
    "x/y": lambda L, x, y: (x / y).sum(),
    "sigmoid(x@y)": lambda L, x, y: (x.reshape(1, 2) @ y.reshape(2, 1)).sigmoid().sum(),
}


@pytest.mark.parametrize("name", list(_HIGHER_ORDER))
def test_higher_order_derivatives_match_torch(name, torch):
    """First, second (Hessian rows) and third derivatives through create_graph=True."""

    def derivatives(L):
        x = L.tensor([0.3, -1.2], dtype=L.float64, requires_grad=True)
        y = L.tensor([1.5, 0.7], dtype=L.float64, requires_grad=True)
        out = _HIGHER_ORDER[name](L, x, y)
        gx, gy = L.autograd.grad(out, [x, y], create_graph=True, allow_unused=True)
        hessian_rows = [
            L.autograd.grad(gx[i], [x, y], retain_graph=True, create_graph=True, allow_unused=True)
            for i in range(2)
        ]
        hxx = hessian_rows[0][0]
        third = (
            None
            if hxx is None or not hxx.requires_grad
            else L.autograd.grad(hxx.sum(), x, allow_unused=True)
        )
        return _values([gx, gy, hessian_rows, third])

    got, want = derivatives(tg), derivatives(torch)
    assert _close(got, want), f"{got} != {want}"


def _close(a, b, tol=1e-10):
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(a, b, rel_tol=tol, abs_tol=tol)


# --------------------------------------------------------------------------- inputs=


def test_backward_inputs_only_fills_the_listed_leaves():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    (x * w).sum().backward(inputs=[x])
    assert x.grad.tolist() == [3.0, 4.0]
    assert w.grad is None


def test_backward_inputs_accepts_a_single_tensor():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward(inputs=x)
    assert x.grad.tolist() == [2.0, 4.0]


def test_backward_inputs_can_be_a_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 3
    (h * h).sum().backward(inputs=[h])
    assert h.grad.tolist() == [6.0, 12.0]
    assert x.grad is None


def test_backward_inputs_with_a_leaf_and_a_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    (h * h).sum().backward(inputs=[h, x])
    assert h.grad.tolist() == [4.0, 8.0]
    assert x.grad.tolist() == [8.0, 16.0]


def test_backward_inputs_non_leaf_that_retains_grad_is_not_counted_twice():
    """torch: h.grad is dL/dh once, whether or not h also called retain_grad()."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    h.retain_grad()
    (h * h).sum().backward(inputs=[h])
    assert h.grad.tolist() == [4.0, 8.0]


def test_backward_inputs_accumulate_across_calls():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    y = (h * h).sum()
    y.backward(inputs=[h], retain_graph=True)
    y.backward(inputs=[h])
    assert h.grad.tolist() == [8.0, 16.0]


def test_backward_inputs_empty_is_an_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        (x * x).sum().backward(inputs=[])


def test_backward_inputs_runs_only_the_needed_part_of_the_graph():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    u = w.exp()
    calls = []
    u.grad_fn.register_prehook(lambda go: calls.append("exp"))
    ((x * 3).sum() + u.sum()).backward(inputs=[x])
    assert calls == []
    assert w.grad is None


# =============================================================================== grad()


def test_grad_returns_a_tuple_and_touches_no_grad_attribute():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    result = tg.autograd.grad((x * w).sum(), x)
    assert isinstance(result, tuple) and len(result) == 1
    assert result[0].tolist() == [3.0, 4.0]
    assert x.grad is None and w.grad is None


def test_grad_does_not_run_accumulate_grad_nodes_or_post_accumulate_hooks():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    acc = y.grad_fn.next_functions[0][0].next_functions[0][0]
    log = []
    acc.register_prehook(lambda go: log.append("pre"))
    acc.register_hook(lambda gi, go: log.append("post"))
    x.register_post_accumulate_grad_hook(lambda t: log.append("post-acc"))
    tg.autograd.grad(y, x)
    assert log == [] and x.grad is None


def test_grad_runs_tensor_hooks_of_the_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    x.register_hook(lambda g: g * 10)
    (g,) = tg.autograd.grad((x * x).sum(), x)
    assert g.tolist() == [20.0, 40.0]


def test_grad_runs_only_the_needed_part_of_the_graph():
    """A Node hook on a branch that does not lead to the inputs is never called."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    u = w.exp() * 2  # does not depend on x
    calls = []
    u.grad_fn.register_prehook(lambda go: calls.append("mul"))
    u.grad_fn.next_functions[0][0].register_prehook(lambda go: calls.append("exp"))
    u.grad_fn.register_hook(lambda gi, go: calls.append("mul-post"))
    (gx,) = tg.autograd.grad((x * 3).sum() + u.sum(), x)
    assert calls == []
    assert gx.tolist() == [3.0, 3.0]
    assert x.grad is None and w.grad is None


def test_grad_with_respect_to_a_non_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    (gh,) = tg.autograd.grad((h * h).sum(), h)
    assert gh.tolist() == [4.0, 8.0]
    assert x.grad is None


def test_grad_with_respect_to_an_output_and_a_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    gy, gx = tg.autograd.grad(y, [y, x], tg.ones(2))
    assert gy.tolist() == [1.0, 1.0] and gx.tolist() == [2.0, 2.0]


def test_grad_of_a_leaf_with_respect_to_itself():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(x, x, tg.tensor([5.0, 6.0]))
    assert g.tolist() == [5.0, 6.0]


def test_grad_with_the_same_input_twice():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g1, g2 = tg.autograd.grad((x * 2).sum(), [x, x])
    assert g1.tolist() == g2.tolist() == [2.0, 2.0]


def test_grad_with_the_same_output_twice_sums_both():
    """torch: grad([y, y], x) adds the two vector-Jacobian products."""
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    (g,) = tg.autograd.grad([y, y], [x])
    assert g.tolist() == [4.0]


def test_backward_with_the_same_output_twice_sums_both():
    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    tg.autograd.backward([y, y])
    assert x.grad.tolist() == [4.0]


def test_grad_outputs_weight_each_output():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad(x * x, x, grad_outputs=tg.tensor([1.0, 10.0]))
    assert g.tolist() == [2.0, 40.0]


def test_grad_outputs_none_for_a_scalar_output():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (g,) = tg.autograd.grad([(x * x).sum()], [x], grad_outputs=[None])
    assert g.tolist() == [2.0, 4.0]


def test_grad_with_no_inputs_is_an_error():
    x = tg.tensor(2.0, requires_grad=True)
    with pytest.raises(RuntimeError, match="cannot be empty"):
        tg.autograd.grad(x * 2, [])


def test_grad_frees_the_graph_unless_retained():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    tg.autograd.grad(y, x, retain_graph=True)
    tg.autograd.grad(y, x)
    with pytest.raises(RuntimeError, match="second time"):
        tg.autograd.grad(y, x)


# --------------------------------------------------------------------------- allow_unused / materialize


def _unused_setup():
    x = tg.tensor(2.0, requires_grad=True)
    z = tg.tensor([2.0, 3.0], requires_grad=True)
    return x, z, x * 3


def test_unused_input_is_an_error_by_default():
    x, z, y = _unused_setup()
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        tg.autograd.grad(y, [x, z])


def test_allow_unused_gives_none():
    x, z, y = _unused_setup()
    gx, gz = tg.autograd.grad(y, [x, z], allow_unused=True)
    assert gx.item() == 3.0 and gz is None


def test_materialize_grads_gives_zeros_of_the_input_shape():
    x, z, y = _unused_setup()
    gx, gz = tg.autograd.grad(y, [x, z], materialize_grads=True)
    assert gx.item() == 3.0
    assert gz.tolist() == [0.0, 0.0] and gz.dtype is z.dtype


def test_materialize_grads_with_allow_unused_false_is_a_value_error():
    x, z, y = _unused_setup()
    with pytest.raises(ValueError, match="allow_unused"):
        tg.autograd.grad(y, [x, z], materialize_grads=True, allow_unused=False)


def test_grad_of_a_grad_that_does_not_depend_on_the_input():
    """d(2x)/dx = 2 is a constant: differentiating it again finds no graph."""
    x = tg.tensor(1.0, requires_grad=True)
    (gx,) = tg.autograd.grad(x * 2, x, create_graph=True)
    with pytest.raises(RuntimeError, match="does not require grad"):
        tg.autograd.grad(gx, x)


# --------------------------------------------------------------------------- is_grads_batched / only_inputs


def test_is_grads_batched_gives_jacobian_rows():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (jac,) = tg.autograd.grad(x * x, x, grad_outputs=tg.eye(2), is_grads_batched=True)
    assert jac.tolist() == [[2.0, 0.0], [0.0, 4.0]]


def test_is_grads_batched_keeps_the_graph_for_a_later_call():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    tg.autograd.grad(y, x, tg.eye(2), is_grads_batched=True, retain_graph=True)
    assert tg.autograd.grad(y.sum(), x)[0].tolist() == [2.0, 4.0]


@pytest.mark.parametrize(
    "case",
    ["square-3-rows", "two-outputs", "create_graph", "allow_unused"],
)
def test_is_grads_batched_matches_torch(case, torch):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        z = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * x
        v = L.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
        if case == "square-3-rows":
            return L.autograd.grad(y, x, v, is_grads_batched=True)
        if case == "two-outputs":
            return L.autograd.grad([y, y.sum()], x, [v, L.ones(3)], is_grads_batched=True)
        if case == "create_graph":
            (g,) = L.autograd.grad(y, x, v, is_grads_batched=True, create_graph=True)
            return (g, L.autograd.grad(g.sum(), x))
        return L.autograd.grad(x * 3, [x, z], v, is_grads_batched=True, allow_unused=True)

    assert _values(run(tg)) == _values(run(torch))


def test_only_inputs_false_warns_and_is_ignored():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.warns(Warning, match="only_inputs argument is deprecated"):
        (g,) = tg.autograd.grad((x * w).sum(), x, only_inputs=False)
    assert g.tolist() == [1.0, 2.0]
    assert w.grad is None


# --------------------------------------------------------------------------- backward/grad vs torch

_CALLS = {
    "inputs=[h] non-leaf": lambda L, x, w: _backward_inputs_nonleaf(L, x, w),
    "retain_graph twice": lambda L, x, w: _twice(L, x, w),
    "create_graph grad of grad": lambda L, x, w: _grad_of_grad(L, x, w),
    "grad_tensors list": lambda L, x, w: _grad_tensors(L, x, w),
    "accumulate 3 calls": lambda L, x, w: _accumulate(L, x, w),
    "shared subexpression": lambda L, x, w: _shared(L, x, w),
}


def _backward_inputs_nonleaf(L, x, w):
    h = x * w
    (h.exp() * x).sum().backward(inputs=[h, w])
    return h.grad, w.grad, x.grad


def _twice(L, x, w):
    y = (x.sin() * w).sum()
    y.backward(retain_graph=True)
    y.backward()
    return x.grad, w.grad


def _grad_of_grad(L, x, w):
    gx, gw = L.autograd.grad((x * x * w).sum(), [x, w], create_graph=True)
    return L.autograd.grad((gx * gw).sum(), [x, w])


def _grad_tensors(L, x, w):
    a, b = x * w, (x + w).tanh()
    L.autograd.backward([a, b], [L.tensor([1.0, -1.0]), L.tensor([0.5, 2.0])])
    return x.grad, w.grad


def _accumulate(L, x, w):
    for k in range(3):
        ((x * w) ** (k + 1)).sum().backward()
    return x.grad, w.grad


def _shared(L, x, w):
    s = x * w
    (s * s + s.exp() + s).sum().backward()
    return x.grad, w.grad


@pytest.mark.parametrize("name", list(_CALLS))
def test_backward_and_grad_results_match_torch(name, torch):
    def run(L):
        x = L.tensor([0.5, -1.0], requires_grad=True)
        w = L.tensor([2.0, 0.25], requires_grad=True)
        return _values(_CALLS[name](L, x, w))

    assert _close(run(tg), run(torch), tol=1e-6)


# =============================================================================== execution order


def _graph_a(L):
    a = L.tensor([1.0, 2.0], requires_grad=True)
    b = L.tensor([3.0, 4.0], requires_grad=True)
    c = a * b
    return [(c.exp() * (a + 1)).sum() + c.tanh().sum()]


def _graph_b(L):
    x = L.tensor([1.0, 2.0], requires_grad=True)
    y1 = x * 2
    y3 = y1 + x.exp()
    return [y3.sum() + y1.sin().sum() * y1.sum()]


def _graph_two_roots(L):
    x = L.ones(2, requires_grad=True)
    w = L.ones(2, requires_grad=True)
    return [(x * w).sum(), (x + 1).exp().sum()]


def _graph_two_roots_reversed(L):
    return list(reversed(_graph_two_roots(L)))


@pytest.mark.parametrize("graph", [_graph_a, _graph_b, _graph_two_roots, _graph_two_roots_reversed])
def test_nodes_run_in_torchs_order(graph, torch):
    """Node.register_prehook records the order nodes run; it must be torch's."""

    def order(L):
        roots = graph(L)
        names = []
        for node in _nodes(*roots):
            node.register_prehook(lambda go, node=node: names.append(node.name().split("::")[-1]))
        L.autograd.backward(roots)
        return names

    assert order(tg) == order(torch)


def test_latest_created_node_runs_first():
    """Of two ready nodes, the one created later runs first (torch's rule)."""
    x = tg.ones(2, requires_grad=True)
    early = x * 2
    late = x.exp()
    names = []
    for node in (early.grad_fn, late.grad_fn):
        node.register_prehook(lambda go, node=node: names.append(node.name()))
    (early.sum() + late.sum()).backward()
    assert names == ["ExpBackward0", "MulBackward0"]


def test_a_node_runs_once_after_all_its_gradients_arrived():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 2
    calls = []
    h.grad_fn.register_prehook(lambda go: calls.append(go[0].tolist()))
    (h.sum() + (h * 3).sum() + h.exp().sum() * 0).backward()
    assert calls == [[4.0, 4.0]]


# =============================================================================== accumulation and layout


def test_gradients_accumulate_across_backward_calls():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    for _ in range(3):
        (x * x).sum().backward()
    assert x.grad.tolist() == [6.0, 12.0]


def test_accumulation_without_create_graph_is_in_place():
    """Same tensor object, same buffer; its version is bumped like any in-place add."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first, ptr = x.grad, x.grad.data_ptr()
    (x * x).sum().backward()
    assert x.grad is first and x.grad.data_ptr() == ptr
    assert first.tolist() == [4.0, 8.0]


def test_accumulation_into_a_user_assigned_grad_is_in_place():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g = tg.tensor([10.0, 10.0])
    x.grad = g
    (x * 2).sum().backward()
    assert x.grad is g and g.tolist() == [12.0, 12.0]


def test_accumulation_with_create_graph_replaces_the_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    (x * x).sum().backward()
    first = x.grad
    (x * x).sum().backward(create_graph=True)
    assert x.grad is not first
    assert first.tolist() == [2.0, 4.0], "the old grad object is left untouched"
    assert x.grad.tolist() == [4.0, 8.0] and x.grad.requires_grad


def test_new_grad_of_a_transposed_leaf_has_the_leafs_strides():
    w = tg.randn(3, 4).t().requires_grad_()
    assert w.stride() == (1, 4)
    (w * 2).sum().backward()
    assert w.grad.stride() == w.stride()
    ptr = w.grad.data_ptr()
    (w * 3).sum().backward()
    assert w.grad.stride() == w.stride() and w.grad.data_ptr() == ptr
    assert w.grad.tolist() == [[5.0] * 3] * 4


def test_new_grad_of_a_non_dense_leaf_is_row_major():
    w = tg.randn(4, 6)[:, ::2].detach().requires_grad_()
    (w * 2).sum().backward()
    assert w.grad.stride() == (3, 1)


_LAYOUTS = {
    "transposed": "L.ones(3, 4).t()",
    "permuted 3-D": "L.ones(2, 3, 4).permute(1, 2, 0)",
    "column slice": "L.ones(4, 3)[:, :2]",
    "expanded (overlapping)": "L.ones(3, 1).expand(3, 4)",
    "size-1 dims": "L.ones(4, 1).t()",
}


@pytest.mark.parametrize("leaf", list(_LAYOUTS))
@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
@pytest.mark.parametrize("create_graph", [False, True])
def test_new_grad_layout_matches_torch(leaf, create_graph, torch):
    def strides(L):
        w = eval(_LAYOUTS[leaf], {"L": L}).detach().requires_grad_()
        (w.exp() * 2).sum().backward(create_graph=create_graph)
        # the stride of a size-1 dim never matters (torch's own kernels disagree about it)
        return [st if n > 1 else None for st, n in zip(w.grad.stride(), w.shape, strict=True)]

    assert strides(tg) == strides(torch)


@pytest.mark.filterwarnings("ignore:Using backward\\(\\) with create_graph=True")
def test_create_graph_accumulation_keeps_the_params_strides(torch):
    """torch's ``grad + new`` keeps the transposed layout of the param (TensorIterator)."""

    def strides(L):
        w = L.ones(3, 4).t().requires_grad_()
        (w * 2).sum().backward(create_graph=True)
        (w * 2).sum().backward(create_graph=True)
        return w.grad.stride()

    assert strides(tg) == strides(torch)


# =============================================================================== no aliasing


def test_grads_of_an_addition_do_not_share_memory():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    b = tg.tensor([3.0, 4.0], requires_grad=True)
    (a + b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()
    a.grad._data[0] = 100.0
    assert b.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize(
    "forward",
    [lambda x: x, lambda x: x * 1, lambda x: x + 0, lambda x: x.view(2)],
    ids=["leaf", "mul", "add", "view"],
)
def test_grad_does_not_alias_the_gradient_passed_to_backward(forward):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    g = tg.tensor([5.0, 6.0])
    forward(x).backward(g)
    assert x.grad.data_ptr() != g.data_ptr()
    g._data[0] = -1.0
    assert x.grad.tolist() == [5.0, 6.0]


def test_custom_function_returning_the_same_grad_twice_gives_separate_grads():
    class AddF(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, g):
            return g, g

    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2, requires_grad=True)
    AddF.apply(a, b).sum().backward()
    assert a.grad.data_ptr() != b.grad.data_ptr()


def test_leaf_grad_does_not_alias_a_grad_kept_by_a_hook():
    seen = []
    x = tg.ones(2, requires_grad=True)
    x.register_hook(lambda g: seen.append(g))
    (x * 2).sum().backward()
    assert x.grad.data_ptr() != seen[0].data_ptr()


def test_retained_grads_do_not_alias_each_other():
    x = tg.ones(2, requires_grad=True)
    y = x * 1
    z = y * 1
    y.retain_grad()
    z.retain_grad()
    z.backward(tg.ones(2))
    ptrs = {x.grad.data_ptr(), y.grad.data_ptr(), z.grad.data_ptr()}
    assert len(ptrs) == 3


# =============================================================================== backward_steps


def _loss():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    return x, w, (x * w).sum() + x.exp().sum()


def test_backward_steps_yields_one_step_per_node():
    x, w, loss = _loss()
    nodes = _nodes(loss)
    steps = list(tg.autograd.backward_steps(loss))
    assert len(steps) == len(nodes)
    assert {id(s.node) for s in steps} == {id(n) for n in nodes}


def test_backward_steps_records_grads_and_ready_nodes():
    x, w, loss = _loss()
    steps = list(tg.autograd.backward_steps(loss))
    first = steps[0]
    assert first.node is loss.grad_fn
    assert [g.tolist() for g in first.grad_outputs] == [1.0]
    assert len(first.grad_inputs) == len(first.node.next_functions)
    assert all(isinstance(n, tg.autograd.graph.Node) for n in first.ready)
    mul = next(s for s in steps if s.node.name() == "MulBackward0")
    assert [g.tolist() for g in mul.grad_inputs] == [[3.0, 4.0], [1.0, 2.0]]
    assert steps[-1].ready == ()
    for step, following in zip(steps, steps[1:], strict=False):
        assert following.node in step.ready, (
            "the next node to run was ready after the previous step"
        )


def test_backward_steps_runs_lazily():
    x, w, loss = _loss()
    steps = tg.autograd.backward_steps(loss)
    next(steps)
    assert x.grad is None and w.grad is None
    for _ in steps:
        pass
    assert x.grad is not None and w.grad is not None


def test_exhausting_backward_steps_equals_backward():
    x1, w1, loss1 = _loss()
    for _ in tg.autograd.backward_steps(loss1):
        pass
    x2, w2, loss2 = _loss()
    loss2.backward()
    assert x1.grad.tolist() == x2.grad.tolist()
    assert w1.grad.tolist() == w2.grad.tolist()


def test_backward_steps_order_is_the_engines_order():
    x, w, loss = _loss()
    names = []
    for node in _nodes(loss):
        node.register_prehook(lambda go, node=node: names.append(node.name()))
    steps = [s.node.name() for s in tg.autograd.backward_steps(loss)]
    assert steps == names


def test_backward_steps_takes_backwards_arguments():
    x, w, loss = _loss()
    list(tg.autograd.backward_steps(loss, retain_graph=True, inputs=[w]))
    assert x.grad is None and w.grad.tolist() == [1.0, 2.0]
    list(tg.autograd.backward_steps([loss], grad_tensors=[tg.tensor(2.0)], inputs=[w]))
    assert w.grad.tolist() == [3.0, 6.0]


def test_assigned_grad_with_custom_strides_is_kept_and_accumulated_in_place(torch):
    """Docs, "Default gradient layouts": a .grad you assign (zeroed, any strides) is kept, and
    backward without create_graph adds into that very buffer, strides and all, as torch does."""

    def run(lib):
        w = lib.ones(3, 4, requires_grad=True)
        w.grad = lib.zeros(4, 3).t()  # strides (1, 3): not what a new grad would get
        ptr, strides = w.grad.data_ptr(), w.grad.stride()
        with warnings.catch_warnings():  # both warn that the layout is unusual (torch only once)
            warnings.simplefilter("ignore")
            for _ in range(2):
                (w * lib.arange(12.0).reshape(3, 4)).sum().backward()
        return (
            w.grad.data_ptr() == ptr,
            w.grad.stride() == strides,
            w.grad.stride(),
            w.grad.tolist(),
        )

    assert run(tg) == run(torch)
    assert run(tg)[:2] == (True, True)


def test_assigned_grad_with_unusual_strides_warns_like_torch():
    """Accumulating into a .grad whose strides differ from the parameter's is allowed, with
    torch's warning that it "may impair performance"."""
    w = tg.ones(3, 4, requires_grad=True)
    w.grad = tg.zeros(4, 3).t()
    with pytest.warns(UserWarning, match="do not obey the gradient layout contract"):
        (w * 2).sum().backward()


def _queueing(said):
    """A custom Function whose backward queues a final callback that appends to ``said``."""

    class Queueing(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, g):
            engine.queue_callback(lambda: said.append("callback"))
            return g

    return Queueing.apply


def test_backward_steps_runs_final_callbacks_after_the_last_step():
    said = []
    loss = _queueing(said)(tg.ones(2, requires_grad=True)).sum()
    steps = tg.autograd.backward_steps(loss)
    for _ in steps:
        said.append("step")
    assert said == ["step", "step", "step", "callback"]


def test_between_steps_the_caller_is_not_inside_the_pass():
    """The caller of ``backward_steps`` runs between steps: a callback it queues is refused
    (as outside any backward), and a pass it starts there keeps its own callbacks."""
    said = []
    steps = tg.autograd.backward_steps(_queueing(said)(tg.ones(2, requires_grad=True)).sum())
    next(steps)
    with pytest.raises(
        RuntimeError, match="^Final callbacks can only be installed during backward"
    ):
        engine.queue_callback(lambda: None)
    _queueing(said)(
        tg.ones(1, requires_grad=True)
    ).sum().backward()  # its own pass, its own callback
    assert said == ["callback"]
    steps.close()  # an abandoned stepper: its queued callback never runs
    assert said == ["callback"] and engine._running.passes == []


# =============================================================================== grad_rows


def _rows_by_grad(output, inputs, seeds, create_graph):
    return [
        tg.autograd.grad(
            output, inputs, seed, retain_graph=True, allow_unused=True, create_graph=create_graph
        )
        for seed in seeds
    ]


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_rows_is_grad_row_by_row_hooks_and_all(create_graph):
    """One plan for every row's pass gives what one ``grad`` per row gives: the same rows,
    None for an input no row reaches, graphs with ``create_graph``, and every hook run once
    per row."""
    results, fired = [], []
    for rows_of in (engine.grad_rows, _rows_by_grad):
        x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
        w = tg.tensor([[1.0, 2.0, 3.0], [0.5, -0.5, 1.5]], requires_grad=True)
        unused = tg.ones(2, requires_grad=True)
        h = x * 2
        name = rows_of.__name__
        h.register_hook(lambda g, name=name: fired.append(name) or g * 3)  # changes the rows too
        y = (w @ h).tanh()
        rows = rows_of(y, (x, w, h, unused), tg.eye(2).unbind(), create_graph=create_graph)
        results.append(rows)
        assert all(row[3] is None for row in rows)
        assert all((g.grad_fn is not None) == create_graph for row in rows for g in row[:3])
        assert x.grad is None and w.grad is None
    new, old = results
    for row_new, row_old in zip(new, old, strict=True):
        for g_new, g_old in zip(row_new[:3], row_old[:3], strict=True):
            assert g_new.tolist() == g_old.tolist()
    assert fired.count("grad_rows") == fired.count("_rows_by_grad") == 2


def test_grad_rows_checks_each_seed_like_grad():
    x = tg.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="^Mismatch in shape: grad_output\\[0\\] has a shape of"):
        engine.grad_rows(x * 2, (x,), [tg.ones(3), tg.ones(2)])


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_rows_with_seeds_the_caller_checked_is_the_same(create_graph):
    """``seeds_checked=True`` (``jacobian``'s own one-hot seeds) skips only the seeds'
    check: the rows, their graphs and the hooks run per row are those of the checked way."""
    got = []
    for checked in (False, True):
        x = tg.tensor([0.5, -1.0, 2.0], requires_grad=True)
        fired = []
        h = x * 2
        h.register_hook(lambda g, fired=fired: fired.append(1) or g * 3)
        y = (tg.tensor([[1.0, 2.0, 3.0], [0.5, -0.5, 1.5]]) @ h).tanh()
        seeds = [tg.tensor([1.0, 0.0]), tg.tensor([0.0, 1.0])]
        rows = engine.grad_rows(y, (x,), seeds, create_graph=create_graph, seeds_checked=checked)
        assert len(fired) == 2
        assert all((row[0].grad_fn is not None) == create_graph for row in rows)
        got.append([row[0].tolist() for row in rows])
    assert got[0] == got[1]


def _rows_replayed_and_by_grad(monkeypatch, make):
    """The rows of ``make()``'s ``(output, inputs, seeds)`` by ``grad_rows`` and by one
    ``grad`` per row, each on a graph of its own, and how many rows ``_replayed`` ran."""
    replayed = []
    real = engine._replayed
    monkeypatch.setattr(engine, "_replayed", lambda *a: replayed.append(1) or real(*a))
    output, inputs, seeds = make()
    new = engine.grad_rows(output, inputs, seeds)
    output, inputs, seeds = make()
    old = _rows_by_grad(output, inputs, seeds, False)
    return new, old, len(replayed)


def _assert_same_rows(new, old):
    assert len(new) == len(old)
    for row_new, row_old in zip(new, old, strict=True):
        assert [None if g is None else (g.tolist(), g.dtype) for g in row_new] == [
            None if g is None else (g.tolist(), g.dtype) for g in row_old
        ]
        assert all(g is None or g.grad_fn is None and not g.requires_grad for g in row_new)


def _leaf(*values):
    return tg.tensor(list(values), requires_grad=True)


def _two_consumers():  # h feeds two nodes: its gradients are added up
    x = _leaf(0.5, -1.0, 2.0)
    h = x.tanh()
    return (h * h + h.exp()) * 2, (x,), tg.eye(3).unbind()


def _an_input_inside():  # h = x * 2 is an input too: its node runs and catches
    x = _leaf(0.5, -1.0, 2.0)
    h = x * 2
    w = tg.tensor([[1.0, 2.0, 3.0], [0.5, -0.5, 1.5]], requires_grad=True)
    return (w @ h).sin(), (x, h, w), tg.eye(2).unbind()


def _unused_and_repeated():  # an input no row reaches, and one asked for twice
    x, unused = _leaf(0.5, -1.0), _leaf(1.0)
    return x.exp() * x, (x, unused, x), tg.eye(2).unbind()


def _outputs_of_one_node():  # unbind's outputs: one node with several gradients to wait for
    x = tg.tensor([[0.5, -1.0], [2.0, 3.0]], requires_grad=True)
    a, b = x.unbind()
    return tg.stack([a * b, b.cos()]), (x,), [tg.eye(2)[i].expand(2, 2) for i in (0, 1)]


def _float32_and_broadcast():  # a bias broadcast over a batch, summed back
    rng = np.random.default_rng(3)
    x = tg.tensor(rng.standard_normal((4, 3)), dtype=tg.float32)
    w = tg.tensor(rng.standard_normal((3, 2)), dtype=tg.float32, requires_grad=True)
    b = tg.tensor([0.1, -0.2], dtype=tg.float32, requires_grad=True)
    y = (x @ w + b).logsumexp(dim=1)
    return y, (w, b), tg.eye(4, dtype=tg.float32).unbind()


def _bench_d():  # benchmarks/bench.py (d): tanh(W @ x)
    x = _leaf(0.3, 0.1)
    return (tg.tensor([[1.0, 2.0], [3.0, -4.0]]) @ x).tanh(), (x,), tg.eye(2).unbind()


REPLAYED = {
    "tanh(W @ x), bench (d)": _bench_d,
    "a node with two consumers": _two_consumers,
    "an input inside the graph": _an_input_inside,
    "an unused input and a repeated one": _unused_and_repeated,
    "outputs of one node": _outputs_of_one_node,
    "float32, a broadcast bias": _float32_and_broadcast,
}


@pytest.mark.parametrize("make", REPLAYED.values(), ids=REPLAYED.keys())
def test_grad_rows_replays_passes_nothing_watches_with_grads_own_rows(monkeypatch, make):
    """When nothing can watch the rows' passes (no hook, built-in formulas, no events),
    ``grad_rows`` runs each down the loop's order (``engine._replayed``): the same rows as
    one ``grad`` per row, bit for bit, with None for what no row reaches, and no graph."""
    new, old, replayed = _rows_replayed_and_by_grad(monkeypatch, make)
    _assert_same_rows(new, old)
    assert replayed == len(new)


def _watched(how):
    """``tanh(w @ (x * 2))`` with what ``how`` adds, and the context to take the rows in."""

    def make():
        x = _leaf(0.5, -1.0)
        h = times_two(tg, how == "a custom Function")(x)
        y = (tg.tensor([[1.0, 2.0], [3.0, -4.0]]) @ h).tanh()
        if how == "a tensor hook":
            h.register_hook(lambda g: g)
        elif how == "retain_grad":
            h.retain_grad()
        elif how == "a node's pre-hook":
            y.grad_fn.register_prehook(lambda gs: None)
        elif how == "a node's hook":
            y.grad_fn.register_hook(lambda gi, go: None)
        elif how == "a leaf's hook":
            x.register_hook(lambda g: g)
        return y, (x,), tg.eye(2).unbind()

    return make


WATCHED = {
    "a tensor hook": contextlib.nullcontext,
    "retain_grad": contextlib.nullcontext,
    "a node's pre-hook": contextlib.nullcontext,
    "a node's hook": contextlib.nullcontext,
    "a leaf's hook": contextlib.nullcontext,
    "a custom Function": contextlib.nullcontext,
    "profile()": lambda: tg.autograd.profiler.profile(),
    "a node event listener": lambda: tg.autograd.graph.add_listener(
        lambda e: None, kinds=[_events.NodeFinished]
    ),
    "a listener of saved tensors unpacked": lambda: tg.autograd.graph.add_listener(
        lambda e: None, kinds=[_events.SavedTensorUnpacked]
    ),
    "anomaly mode": lambda: tg.autograd.detect_anomaly(),
}


@pytest.mark.parametrize("how", WATCHED.keys())
def test_grad_rows_runs_watched_passes_through_the_loop(monkeypatch, how):
    """A hook, a custom backward, the profiler, an event listener or anomaly mode could see
    a replayed pass differ from the loop's: such rows go through the loop."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (anomaly mode warns that it is slow)
        with WATCHED[how]():
            new, old, replayed = _rows_replayed_and_by_grad(monkeypatch, _watched(how))
    _assert_same_rows(new, old)
    assert replayed == 0


def test_grad_rows_with_create_graph_goes_through_the_loop(monkeypatch):
    replayed = []
    monkeypatch.setattr(engine, "_replayed", lambda *a: replayed.append(a))
    y, inputs, seeds = _two_consumers()
    rows = engine.grad_rows(y, inputs, seeds, create_graph=True)
    assert replayed == [] and all(row[0].grad_fn is not None for row in rows)


@pytest.mark.parametrize("grad_mode", [True, False])
def test_a_replayed_row_that_fails_raises_grads_error_and_restores_grad_mode(
    monkeypatch, grad_mode
):
    """A saved tensor changed in place: the replayed rows raise ``grad``'s error, and the
    grad mode is what it was before (the rows run with it off)."""
    replayed, real = [], engine._replayed
    monkeypatch.setattr(engine, "_replayed", lambda *a: replayed.append(1) or real(*a))
    errors = []
    for rows_of in (engine.grad_rows, _rows_by_grad):
        x = _leaf(0.5, -1.0)
        h = x * 1
        z = h.sin()  # saves h at version 0
        with tg.no_grad():
            h.mul_(2)
        with tg.set_grad_enabled(grad_mode):
            with pytest.raises(RuntimeError) as caught:
                rows_of(z, (x,), tg.eye(2).unbind(), False)
            assert tg.is_grad_enabled() is grad_mode
        errors.append(str(caught.value).splitlines()[0])
    assert replayed == [1]
    assert errors[0] == errors[1] and "modified by an inplace operation" in errors[0]


CATCH_ONLY = {  # inputs whose nodes only catch their gradients: no hook, not on the way to another
    "a leaf": lambda lib, x, parts, loss: lib.autograd.grad(loss, [x]),
    "a leaf twice": lambda lib, x, parts, loss: lib.autograd.grad(loss, [x, x]),
    "two outputs of one node": lambda lib, x, parts, loss: lib.autograd.grad(loss, parts[1::-1]),
    "an output and the leaf": lambda lib, x, parts, loss: lib.autograd.grad(loss, [parts[1], x]),
    "the output itself": lambda lib, x, parts, loss: lib.autograd.grad(loss, [loss]),
    "an unused output": lambda lib, x, parts, loss: lib.autograd.grad(
        loss, [parts[2], x], allow_unused=True),
    "backward, inputs a part": lambda lib, x, parts, loss: (
        parts[0].retain_grad(), loss.backward(inputs=[parts[0]]), parts[0].grad)[2:],
}  # fmt: skip


@pytest.mark.parametrize("catch", CATCH_ONLY.values(), ids=CATCH_ONLY.keys())
def test_inputs_whose_nodes_only_catch_get_torchs_gradients(torch, catch):
    """A node that only catches gradients for ``grad`` is caught as soon as it is ready,
    without a turn of the loop (``_PassTo.ready``): the gradients are torch's, and a pass
    that catches at a node it runs (the leaf, with the parts asked for too) is unchanged."""

    def run(lib):
        x = lib.tensor([0.5, -1.0, 2.0, 3.0, 1.5, -2.0], dtype=lib.float64, requires_grad=True)
        parts = (x * 2).split(2)
        loss = (parts[0] * parts[1]).sum()
        grads = catch(lib, x, parts, loss)
        return [None if g is None else g.tolist() for g in grads]

    assert run(tg) == run(torch)

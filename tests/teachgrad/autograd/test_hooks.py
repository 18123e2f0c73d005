"""Hooks and graph nodes (API.md section 4): tensor hooks, post-accumulate hooks,
Node hooks and pre-hooks, handles, and what a node exposes (name, next_functions,
metadata, AccumulateGrad.variable, saved values as ``_saved_<name>``).
"""

import pytest

import teachgrad as tg


def _name(node):
    """A node's name without torch's C++ namespace (``torch::autograd::AccumulateGrad``)."""
    return node.name().split("::")[-1]


def _lists(values):
    return [None if v is None else v.tolist() for v in values]


# =============================================================================== tensor hooks


def test_leaf_hook_sees_the_gradient_and_can_replace_it():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_hook(lambda g: seen.append(g.tolist()))
    x.register_hook(lambda g: g * 10)
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0]]
    assert x.grad.tolist() == [20.0, 20.0]


def test_non_leaf_hook_replacement_flows_on_to_the_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: g * 10)
    y.sum().backward()
    assert x.grad.tolist() == [20.0, 20.0]


def test_hooks_run_in_registration_order_each_seeing_the_previous_result():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    log = []
    y.register_hook(lambda g: log.append(("first", g.tolist())) or g + 1)
    y.register_hook(lambda g: log.append(("second", g.tolist())) or g * 3)
    y.sum().backward()
    assert log == [("first", [1.0, 1.0]), ("second", [2.0, 2.0])]
    assert x.grad.tolist() == [12.0, 12.0]


def test_handle_remove_unregisters_the_hook():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    handle = x.register_hook(lambda g: g * 100)
    handle.remove()
    handle.remove()  # removing twice is harmless
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_handle_works_as_a_context_manager():
    x = tg.tensor([1.0], requires_grad=True)
    with x.register_hook(lambda g: g * 100):
        pass
    (x * 2).sum().backward()
    assert x.grad.tolist() == [2.0]


def test_hook_on_a_tensor_without_grad_raises():
    with pytest.raises(
        RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"
    ):
        tg.ones(2).register_hook(lambda g: g)


def test_hook_returning_the_wrong_shape_raises():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: tg.ones(3))
    with pytest.raises(RuntimeError, match="has changed the size of value"):
        y.sum().backward()


def test_hook_returning_a_non_tensor_raises_type_error():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: 3)
    with pytest.raises(TypeError):
        y.sum().backward()


def test_tensor_hooks_run_before_retain_grad_whatever_the_registration_order(torch):
    """retain_grad stores the grad after *all* tensor hooks ran (torch's rule)."""

    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: log.append(("leaf", g.tolist())))
        y = x * 2
        y.register_hook(lambda g: log.append(("y1", g.tolist())) or g * 10)
        y.retain_grad()
        y.register_hook(lambda g: log.append(("y3", g.tolist())) or g + 1)
        y.sum().backward()
        return log, y.grad.tolist(), x.grad.tolist()

    assert run(tg) == run(torch)
    log, y_grad, x_grad = run(tg)
    assert y_grad == [11.0, 11.0] and x_grad == [22.0, 22.0]


def test_retain_grad_and_a_leaf_hook_together(torch):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        x.register_hook(lambda g: g * 100)
        x.retain_grad()
        (x * 2).sum().backward()
        return x.grad.tolist(), x.retains_grad

    assert run(tg) == run(torch)


def test_hook_fires_once_per_backward_with_the_summed_gradient():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    seen = []
    y.register_hook(lambda g: seen.append(g.tolist()))
    (y.sum() + (y * 3).sum()).backward()
    assert seen == [[4.0, 4.0]]


# =============================================================================== post-accumulate hooks


def test_post_accumulate_grad_hook_sees_the_stored_grad():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    log = []
    x.register_post_accumulate_grad_hook(lambda t: log.append((t is x, t.grad.tolist())))
    x.register_hook(lambda g: g * 3)
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    assert log == [(True, [6.0, 6.0]), (True, [12.0, 12.0])]


def test_post_accumulate_grad_hook_handle_remove():
    x = tg.tensor([1.0], requires_grad=True)
    log = []
    h = x.register_post_accumulate_grad_hook(lambda t: log.append(1))
    h.remove()
    (x * 2).sum().backward()
    assert log == []


def test_post_accumulate_grad_hook_on_a_non_leaf_raises():
    y = tg.ones(2, requires_grad=True) * 2
    with pytest.raises(
        RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"
    ):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_post_accumulate_grad_hook_on_a_tensor_without_grad_raises():
    with pytest.raises(RuntimeError, match="doesn't require gradient"):
        tg.ones(2).register_post_accumulate_grad_hook(lambda t: None)


# =============================================================================== Node hooks


def test_node_hook_receives_grad_inputs_and_grad_outputs(torch):
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = (x * x).sum()
        y.grad_fn.register_hook(lambda gi, go: log.append(("sum", _lists(gi), _lists(go))))
        mul = y.grad_fn.next_functions[0][0]
        mul.register_hook(lambda gi, go: log.append(("mul", _lists(gi), _lists(go))))
        mul.register_prehook(lambda go: log.append(("pre", _lists(go))))
        y.backward()
        return log, x.grad.tolist()

    assert run(tg) == run(torch)


def test_node_hooks_known_values():
    log = []
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    mul.register_prehook(lambda go: log.append(("pre", _lists(go))))
    mul.register_hook(lambda gi, go: log.append(("post", _lists(gi), _lists(go))))
    y.backward()
    assert log == [("pre", [[1.0, 1.0]]), ("post", [[1.0, 2.0], [1.0, 2.0]], [[1.0, 1.0]])]


def test_node_post_hook_can_replace_grad_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    mul = y.grad_fn.next_functions[0][0]
    mul.register_hook(lambda gi, go: (gi[0] * 0, gi[1]))
    y.backward()
    assert x.grad.tolist() == [1.0, 2.0]


def test_node_prehook_can_replace_grad_outputs_and_be_removed():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    h = y.grad_fn.register_prehook(lambda go: (go[0] * 10,))
    y.sum().backward(retain_graph=True)
    assert x.grad.tolist() == [20.0, 20.0]
    h.remove()
    x.grad = None
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 2.0]


def test_order_of_prehook_tensor_hook_and_post_hook(torch):
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.grad_fn.register_prehook(lambda go: log.append("pre"))
        y.register_hook(lambda g: log.append("tensor"))
        y.grad_fn.register_hook(lambda gi, go: log.append("post"))
        y.sum().backward()
        return log

    assert run(tg) == run(torch)


def test_hooks_on_accumulate_grad(torch):
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        acc = (x * 1).grad_fn.next_functions[0][0]
        y = x * 2
        x.register_hook(lambda g: log.append(("tensor", g.tolist())) or g * 2)
        acc.register_prehook(lambda go: log.append(("pre", _lists(go))))
        acc.register_hook(lambda gi, go: log.append(("post", len(gi), _lists(go))))
        y.sum().backward()
        return log, x.grad.tolist()

    assert run(tg) == run(torch)


# =============================================================================== node facts


def test_name_and_next_functions():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0])
    y = (x * w).sum()
    assert y.grad_fn.name() == "SumBackward0"
    ((mul, nr),) = y.grad_fn.next_functions
    assert (mul.name(), nr) == ("MulBackward0", 0)
    (acc, acc_nr), (none, none_nr) = mul.next_functions
    assert acc.name() == "torch::autograd::AccumulateGrad" and acc_nr == 0
    assert (none, none_nr) == (None, 0), "an input that needs no grad has the edge (None, 0)"
    assert acc.next_functions == ()


@pytest.mark.parametrize(
    "op",
    [lambda x: x * 3, lambda x: x + 1, lambda x: x - 1, lambda x: x / 2],
    ids=["mul", "add", "sub", "div"],
)
def test_python_scalar_operand_has_a_none_edge(op):
    """torch wraps the number in a tensor: the node has two edges, the second (None, 0)."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    edges = op(x).grad_fn.next_functions
    assert len(edges) == 2 and edges[1] == (None, 0)


def test_saved_exponent_of_pow_known_values():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    assert (x**2.5).grad_fn._saved_exponent == 2.5
    node = (2**x).grad_fn
    assert node._saved_self == 2 and node._saved_exponent is x


def test_accumulate_grad_variable_is_the_leaf():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    acc = (x * 3).grad_fn.next_functions[0][0]
    assert acc.variable is x
    assert (x * 3).grad_fn.next_functions[0][0] is acc, "one AccumulateGrad per leaf while it lives"


_NAMES = {
    "add": lambda L, x, w: x + w,
    "add scalar": lambda L, x, w: x + 1,
    "sub": lambda L, x, w: x - w,
    "mul": lambda L, x, w: x * w,
    "mul scalar": lambda L, x, w: x * 3,
    "div": lambda L, x, w: x / w,
    "rsub": lambda L, x, w: 3 - x,
    "rdiv": lambda L, x, w: 2 / x,
    "neg": lambda L, x, w: -x,
    "pow scalar": lambda L, x, w: x**2,
    "pow tensor": lambda L, x, w: x**w,
    "rpow": lambda L, x, w: 2**x,
    "exp": lambda L, x, w: x.exp(),
    "tanh": lambda L, x, w: x.tanh(),
    "sum": lambda L, x, w: x.sum(),
    "mean": lambda L, x, w: x.mean(),
    "mm": lambda L, x, w: L.mm(x.reshape(1, 2), w.reshape(2, 1)),
    "matmul": lambda L, x, w: x @ w,
    "view": lambda L, x, w: x.view(2, 1),
    "t": lambda L, x, w: x.reshape(1, 2).t(),
    "clone": lambda L, x, w: x.clone(),
    "select": lambda L, x, w: x[0],
    "relu": lambda L, x, w: x.relu(),
}


@pytest.mark.parametrize("op", list(_NAMES))
def test_node_names_and_edges_match_torch(op, torch):
    """grad_fn.name() and the shape of next_functions (edge count, None edges) agree."""

    def facts(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        w = L.tensor([3.0, 4.0], requires_grad=True)
        node = _NAMES[op](L, x, w).grad_fn
        edges = [(None if n is None else _name(n), nr) for n, nr in node.next_functions]
        return node.name(), edges

    assert facts(tg) == facts(torch)


def test_node_called_directly_returns_one_grad_per_edge(torch):
    def run(L):
        x = L.tensor([1.0, 2.0], requires_grad=True)
        node = (x * 2).grad_fn
        return len(node(L.ones(2))), len(node.next_functions)

    assert run(tg) == run(torch)


def test_metadata_is_a_per_node_dict():
    x = tg.tensor([1.0], requires_grad=True)
    a, b = (x * 2).grad_fn, (x * 3).grad_fn
    a.metadata["label"] = "scale"
    assert a.metadata == {"label": "scale"}
    assert b.metadata == {}
    assert isinstance(a.metadata, dict)


def test_node_is_a_graph_node_instance():
    y = tg.ones(1, requires_grad=True) * 2
    assert isinstance(y.grad_fn, tg.autograd.graph.Node)
    assert isinstance(y.grad_fn.next_functions[0][0], tg.autograd.graph.Node)


# =============================================================================== saved values


def test_saved_self_and_other_of_mul_are_the_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    w = tg.tensor([3.0, 4.0], requires_grad=True)
    node = (x * w).grad_fn
    assert node._saved_self is x
    assert node._saved_other is w


def test_saved_result_of_exp_is_the_output():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    r = y.grad_fn._saved_result
    assert r.tolist() == y.tolist()
    assert r.data_ptr() == y.data_ptr()
    assert r.grad_fn is y.grad_fn


def test_unknown_saved_name_is_an_attribute_error():
    y = tg.ones(2, requires_grad=True) * 2
    with pytest.raises(AttributeError):
        y.grad_fn._saved_foo


def test_saved_values_are_freed_by_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    y.backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.next_functions[0][0]._saved_self


_SAVED = {
    "mul tensors": (lambda L, x, w: x * w, ["self", "other"]),
    "mul scalar": (lambda L, x, w: x * 3, ["self", "other"]),
    "exp": (lambda L, x, w: x.exp(), ["result"]),
    "tanh": (lambda L, x, w: x.tanh(), ["result"]),
    "pow scalar": (lambda L, x, w: x**2, ["self", "exponent"]),
    "pow fractional": (lambda L, x, w: x**2.5, ["self", "exponent"]),
    "pow tensor": (lambda L, x, w: x**w, ["self", "exponent", "result"]),
    "rpow": (lambda L, x, w: 2**x, ["self", "exponent", "result"]),
}


def _plain(value):
    """A saved value as comparable data: tensors by values/requires_grad, numbers as float."""
    if value is None:
        return None
    if hasattr(value, "tolist"):
        data = value.tolist()
        data = [round(v, 9) for v in data] if isinstance(data, list) else data
        return ("tensor", data, value.requires_grad)
    return ("number", float(value))


@pytest.mark.parametrize("op", list(_SAVED))
def test_saved_values_match_torch(op, torch):
    make, names = _SAVED[op]

    def saved(L):
        x = L.tensor([1.0, 2.0], dtype=L.float64, requires_grad=True)
        w = L.tensor([3.0, 4.0], dtype=L.float64, requires_grad=True)
        node = make(L, x, w).grad_fn
        return node.name(), [_plain(getattr(node, f"_saved_{n}")) for n in names]

    got, want = saved(tg), saved(torch)  # (mul's number 'other': torch's 0-d tensor in both)
    assert got == want


# =============================================================================== hooks and in-place changes


def test_hook_registered_before_an_in_place_change_sees_the_old_versions_grad(torch):
    def run(L):
        log = []
        x = L.tensor([1.0, 2.0], requires_grad=True)
        y = x * 2
        y.register_hook(lambda g: log.append(g.tolist()))
        y.mul_(3)
        y.sum().backward()
        return log, x.grad.tolist()

    assert run(tg) == run(torch) == ([[3.0, 3.0]], [6.0, 6.0])


def test_retain_grad_follows_the_tensor_through_an_in_place_change():
    """torch: after ``y.mul_(3)`` the retained ``y.grad`` is the gradient of the new y."""
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * 2
    y.retain_grad()
    y.mul_(3)
    assert y.retains_grad
    y.sum().backward()
    assert y.grad.tolist() == [1.0, 1.0]
    assert x.grad.tolist() == [6.0, 6.0]


# =============================================================================== hook results are checked

_BAD_HOOKS = {
    "prehook returns 2 values for 1 output": (
        lambda y, L: y.grad_fn.register_prehook(lambda go: (go[0], go[0])),
        "has returned an incorrect number of values",
    ),
    "post hook returns 3 values for 2 edges": (
        lambda y, L: y.grad_fn.register_hook(lambda gi, go: (gi[0], gi[0], gi[0])),
        "has returned an incorrect number of values",
    ),
    "prehook changes the size": (
        lambda y, L: y.grad_fn.register_prehook(lambda go: (L.ones(3),)),
        "has changed the size of value",
    ),
    "post hook changes the size": (
        lambda y, L: y.grad_fn.register_hook(lambda gi, go: (L.ones(3), gi[1])),
        "has changed the size of value",
    ),
    "tensor hook changes the dtype": (
        lambda y, L: y.register_hook(lambda g: g.double()),
        "has changed the type of value",
    ),
    "leaf hook changes the dtype": (
        lambda y, L: y.grad_fn.next_functions[0][0].variable.register_hook(lambda g: g.double()),
        "has changed the type of value",
    ),
}


@pytest.mark.parametrize("case", list(_BAD_HOOKS))
def test_bad_hook_results_raise_runtime_error_like_torch(case):
    """torch checks what a hook returns (count, size, dtype) and names the hook."""
    register, phrase = _BAD_HOOKS[case]
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * tg.tensor([2.0, 2.0], requires_grad=True)
    register(y, tg)
    with pytest.raises(RuntimeError, match=phrase):
        y.sum().backward()


@pytest.mark.parametrize("case", list(_BAD_HOOKS))
def test_bad_hook_phrases_are_torchs(case, torch):
    register, phrase = _BAD_HOOKS[case]
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    y = x * torch.tensor([2.0, 2.0], requires_grad=True)
    register(y, torch)
    with pytest.raises(RuntimeError, match=phrase):
        y.sum().backward()

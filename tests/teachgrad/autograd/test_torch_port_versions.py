"""requires_grad and in-place changes, gradient buffers, graph edges and anomaly mode, as
PyTorch's own autograd tests (test_autograd.py: test_requires_grad_*,
test_no_requires_grad_inplace, test_index_backward_does_not_save_tensor,
test_no_grad_python_function, test_indexing_duplicates, test_inplace_on_view_leaf_errors,
test_inplace_on_view_weak_grad_fn, test_no_grad_copy, test_anomaly_detect_nan,
test_nested_anomaly_detect_nan, test_anomaly_grad_warnings, test_anomaly_mode_no_check_nan,
and torch.autograd.graph.get_gradient_edge) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts.
"""

import functools
import gc
import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = functools.partial(port.randn, default="float32")

# --------------------------------------------------------------------------- requires_grad


def test_requires_grad_underscore_returns_the_tensor_and_is_refused_on_non_leaves(lib):
    x = randn(lib, 5, 5)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    for t in (x, y):
        assert t.requires_grad_() is t and t.requires_grad
        assert t.requires_grad_(True) is t and t.requires_grad
    z = x * y
    with pytest.raises(RuntimeError):
        z.requires_grad_(False)
    assert z.requires_grad_() is z and z.requires_grad
    assert z.requires_grad_(True) is z and z.requires_grad
    for t in (x, y):
        assert t.requires_grad_(False) is t and not t.requires_grad


@pytest.mark.parametrize("leaf", [True, False], ids=["leaf", "non_leaf"])
def test_adding_a_tensor_that_requires_grad_in_place(lib, leaf):
    a = randn(lib, 5, 5) if leaf else randn(lib, 5, 5) + 0
    a += randn(lib, 5, 5, seed=1, requires_grad=True)
    assert a.requires_grad


def test_in_place_changes_before_requires_grad_is_set(lib):
    a = randn(lib, 2, 3)
    a.add_(5)
    a.requires_grad = True
    a.sum().backward()
    assert same(a.grad, np.ones((2, 3)))

    a = randn(lib, 2, 3)
    a[:].add_(5)  # through a view
    a.requires_grad = True
    a.sum().backward()
    assert same(a.grad, np.ones((2, 3)))

    a = randn(lib, 2, 3)
    b = a[:]
    a.requires_grad = True
    with pytest.raises(RuntimeError):
        a.add_(5)
    with pytest.raises(RuntimeError):
        b.add_(5)


def test_a_custom_function_respects_no_grad(lib):
    class AddOne(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x + 1

        @staticmethod
        def backward(ctx, dy):
            return dy

    x = lib.ones(5, 5, requires_grad=True)
    with lib.no_grad():
        y = AddOne.apply(x)
    assert not y.requires_grad


# --------------------------------------------------------------------------- indexing


def test_setitem_through_a_mask_does_not_save_the_tensor_it_indexes(lib):
    a = lib.tensor([1.0, 0, 0])
    b = lib.zeros(3, requires_grad=True)
    tensor = b + 0
    tensor[a != 0] = tensor[a != 0]  # would fail the version check if indexing saved tensor
    tensor.backward(lib.zeros_like(tensor))


@pytest.mark.parametrize(
    "shape, index",
    [
        ((4, 4), [1, 1, 3, 2, 1, 2]),
        ((4, 4), ([1, 1, 3, 2, 1, 2], [0])),
        ((4, 4), ([[1, 2], [0, 0]], [[0, 1], [1, 1]])),
        ((4, 4, 4), ([1, 1, 1], slice(None), slice(None))),
    ],
)
def test_indices_repeated_in_an_index_add_up_their_gradients(lib, shape, index):
    n = int(np.prod(shape))
    y = lib.arange(1.0, n + 1).view(*shape).requires_grad_(True)
    if isinstance(index, list):
        index = lib.tensor(index)
    y[index].sum().backward()
    expected = np.zeros(shape)
    np.add.at(expected, index if not hasattr(index, "tolist") else index.tolist(), 1)
    assert same(y.grad, expected)


# --------------------------------------------------------------------------- views of leaves


def test_changing_a_view_of_a_leaf_fails_at_once(lib):
    x = lib.zeros(1, requires_grad=True)
    y = x.view_as(x)
    with pytest.raises(
        RuntimeError,
        match="a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ):
        y.add_(1)


def test_a_changed_view_keeps_its_new_history_after_it_is_collected(lib):
    a = lib.arange(10.0, requires_grad=True)
    b = a.narrow(0, 0, 2).clone().view(-1)
    b.relu_()
    c = b.clone()
    del b
    gc.collect()
    s = c.sum()
    s.backward()
    assert s.item() == 1.0
    assert a.grad.tolist() == [0.0, 1.0] + [0.0] * 8

    a = lib.rand(10, requires_grad=True).narrow(0, 0, 10)
    with pytest.raises(RuntimeError):
        a.relu_()


# --------------------------------------------------------------------------- gradient buffers


def test_a_gradient_buffer_is_stolen_for_one_leaf_only(lib):
    seen = {}

    class AddBoth(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a + b

        @staticmethod
        def backward(ctx, grad):
            seen["ptr"] = grad.data_ptr()
            return grad, grad

    class NonContiguousGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.size = x.size()
            return lib.tensor([1.0])

        @staticmethod
        def backward(ctx, grad):
            return lib.ones(1).expand(ctx.size)

    a = randn(lib, 5, 6, requires_grad=True)
    b = randn(lib, 5, 6, seed=1, requires_grad=True)
    NonContiguousGrad.apply(AddBoth.apply(a, b)).backward()  # an expanded grad is copied
    assert a.grad.data_ptr() != seen["ptr"]
    assert b.grad.data_ptr() != seen["ptr"]

    a.grad = b.grad = None
    AddBoth.apply(a, b)[1][0].backward()
    p_a, p_b = a.grad.data_ptr(), b.grad.data_ptr()
    assert p_a != p_b
    assert seen["ptr"] in (p_a, p_b)


# --------------------------------------------------------------------------- gradient edges


def test_the_gradient_edge_of_a_leaf_and_of_an_output(lib):
    get_edge = lib.autograd.graph.get_gradient_edge
    x = randn(lib, 3, requires_grad=True)
    y = x * 2
    leaf_edge = get_edge(x)
    assert leaf_edge.node is y.grad_fn.next_functions[0][0]
    assert leaf_edge.output_nr == 0
    assert leaf_edge.node.name() == "torch::autograd::AccumulateGrad"
    edge = get_edge(y)
    assert edge.node is y.grad_fn and edge.output_nr == 0

    first, second = x.unbind()[:2]
    assert get_edge(second).node is second.grad_fn
    assert get_edge(second).output_nr == 1
    assert get_edge(first).node is get_edge(second).node

    with pytest.raises(
        RuntimeError,
        match="It is not possible to get the gradient edge for a Tensor that does not require",
    ):
        get_edge(lib.ones(2))


# --------------------------------------------------------------------------- anomaly mode


def nan_backward_function(lib, size):
    """A custom Function whose backward makes a NaN, for input 0 or input 1."""

    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp1, inp2, fail_0th):
            ctx.fail_0th = fail_0th
            return inp1.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, g_o):
            g_i = g_o.clone().expand(size)
            g_i[0] = 0
            g_i[0] /= 0
            return (g_i, None, None) if ctx.fail_0th else (None, g_i, None)

    return MyFunc


def test_anomaly_mode_names_the_node_and_output_that_made_a_nan(lib):
    size = 10
    my_func = nan_backward_function(lib, size)
    inp = lib.rand(size, requires_grad=True)
    my_func.apply(inp, inp, True).backward()  # no anomaly mode: no error

    out = my_func.apply(inp, inp, True)
    with (
        pytest.raises(
            RuntimeError, match="Function 'MyFuncBackward' returned nan values in its 0th output."
        ),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            out.backward()
    assert any("No forward pass information" in str(w.message) for w in caught)

    with (
        pytest.raises(
            RuntimeError, match="Function 'MyFuncBackward' returned nan values in its 1th output."
        ),
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            out = my_func.apply(inp, inp, False)
            out.backward()
    assert any("apply(inp, inp, False)" in str(w.message) for w in caught)  # the forward line


def _nested_nan_functions(lib, size):
    """test_nested_anomaly_detect_nan's Functions: MyFunc's backward calls MyFunc2, whose
    backward makes a NaN in its 0th or 1th gradient."""

    class MyFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp, fail_0th):
            ctx.fail_0th = fail_0th
            ctx.save_for_backward(inp)
            return inp.sum(0, keepdim=True)

        @staticmethod
        def backward(ctx, grad):
            (inp,) = ctx.saved_tensors
            g = grad.clone().expand(size)
            return MyFunc2.apply(g * inp, g + inp, ctx.fail_0th), None

    class MyFunc2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, fail_0th):
            ctx.fail_0th = fail_0th
            return a * 2.0 + b

        @staticmethod
        def backward(ctx, grad):
            g1, g2 = grad.clone(), grad.clone()
            g1[0] = g2[0] = 0
            (g1 if ctx.fail_0th else g2)[0] /= 0
            return g1, g2, None

    return MyFunc


def test_nested_anomaly_detect_nan(lib):
    """A node recorded by another's backward (double backward): anomaly mode warns with its
    forward stack, then with the stack of the node whose backward recorded it."""
    size = 10
    my_func = _nested_nan_functions(lib, size)
    inp = lib.rand(size, requires_grad=True)
    (ginp,) = lib.autograd.grad(my_func.apply(inp, True), (inp,), create_graph=True)
    ginp.sum().backward()  # no anomaly mode: no error

    (ginp,) = lib.autograd.grad(my_func.apply(inp, True), (inp,), create_graph=True)
    match = "Function 'MyFunc2Backward' returned nan values in its 0th output."
    with pytest.raises(RuntimeError, match=match), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            ginp.sum().backward()
    assert "No forward pass information" in str(w[1].message)

    match = "Function 'MyFunc2Backward' returned nan values in its 1th output."
    with pytest.raises(RuntimeError, match=match), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            out = my_func.apply(inp, False)
            (ginp,) = lib.autograd.grad(out, (inp,), create_graph=True)
            ginp.sum().backward()
    assert "MyFunc2.apply(g * inp" in str(w[1].message)  # (the line in MyFunc's backward)
    assert str(w[2].message).startswith("\n\nPrevious calculation was induced by MyFuncBackward.")
    assert "my_func.apply(inp, False)" in str(w[2].message)


def test_anomaly_mode_warns_where_the_failing_node_was_made(lib):
    error = "one of the variables needed for gradient computation has been modified by an inplace"
    with pytest.raises(RuntimeError, match=error), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly():
            a = randn(lib, 5, requires_grad=True)
            d1 = a + 1
            d2 = d1**2
            d1 += 1
            lib.autograd.grad(d2.sum(), a)
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "Anomaly Detection has been enabled" in messages[0]
    assert "Error detected in PowBackward0" in messages[1]


def test_anomaly_mode_without_the_nan_check(lib):
    class NanGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, g_o):
            return lib.tensor(float("nan")).expand(10, 10)

    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        with lib.autograd.detect_anomaly(check_nan=False):
            out = NanGrad.apply(lib.rand(10, 10, requires_grad=True)).sum()
            out.backward(retain_graph=True)
            with (
                lib.autograd.detect_anomaly(check_nan=True),
                pytest.raises(
                    RuntimeError,
                    match="Function 'NanGradBackward' returned nan values in its 0th output.",
                ),
            ):
                out.backward(retain_graph=True)
            out.backward()


def check_grad_to_edge_matches(lib, out, inp):
    """``grad`` towards ``inp``'s gradient edge gives what ``grad`` towards ``inp`` gives."""
    ref = lib.autograd.grad(out.sum(), inp, retain_graph=True)
    new = lib.autograd.grad(out.sum(), lib.autograd.graph.get_gradient_edge(inp))
    assert len(ref) == len(new) == 1 and same(ref[0], new[0])


def test_grad_towards_a_gradient_edge(lib):
    x = lib.rand(2, requires_grad=True)
    check_grad_to_edge_matches(lib, x.clone(), x)  # an AccumulateGrad node
    x = x.clone()
    check_grad_to_edge_matches(lib, x.clone(), x)  # a built-in node

    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            return g

    x = Identity.apply(x)
    check_grad_to_edge_matches(lib, x.clone(), x)  # a custom Function's node
    x = x.unbind()[1]
    check_grad_to_edge_matches(lib, x.clone(), x)  # output 1 of a node


def test_grad_towards_the_edge_of_a_tensor_changed_in_place_since(lib):
    x = lib.rand(2, requires_grad=True).clone()
    x_edge = lib.autograd.graph.get_gradient_edge(x)
    x *= 2
    g_old, g_new = lib.autograd.grad(x.sum(), (x_edge, x))
    assert same(g_old, [2.0, 2.0])
    assert same(g_new, [1.0, 1.0])


def test_grad_towards_several_edges_made_by_hand(lib):
    GradientEdge = lib.autograd.graph.GradientEdge  # noqa: N806 - torch's class name
    x = lib.rand(2, requires_grad=True).clone()
    y = lib.rand(2, requires_grad=True).clone()
    out = x * y
    ref = lib.autograd.grad(out.sum(), (x, y), retain_graph=True)
    edges = (GradientEdge(x.grad_fn, 0), GradientEdge(y.grad_fn, 0))
    new = lib.autograd.grad(out.sum(), edges)
    assert all(same(a, b) for a, b in zip(ref, new, strict=True))


def test_materialize_grads_needs_a_tensor_for_an_unused_input(lib):
    get_edge = lib.autograd.graph.get_gradient_edge
    x = lib.rand(2, requires_grad=True).clone()
    y = lib.rand(2, requires_grad=True).clone()
    out = x.clone()
    lib.autograd.grad(
        out.sum(), (get_edge(x), y), allow_unused=True, materialize_grads=True, retain_graph=True
    )
    lib.autograd.grad(
        out.sum(), (x, y), allow_unused=True, materialize_grads=True, retain_graph=True
    )
    _, unused = lib.autograd.grad(out.sum(), (x, get_edge(y)), allow_unused=True, retain_graph=True)
    assert unused is None
    with pytest.raises(
        RuntimeError,
        match="materialize_grads cannot be used when the given input is a GradientEdge",
    ):
        lib.autograd.grad(out.sum(), (x, get_edge(y)), allow_unused=True, materialize_grads=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        lib.autograd.grad(out.sum(), (x, get_edge(y)))


# --------------------------------------------------------------------------- stale views

# ops that record no node (every output is an integer or bool tensor): torch never reads
# the history of their input, so a stale restricted view is not checked
NOT_RECORDED = {
    "long": lambda v: v.long(),
    "bool": lambda v: v.bool(),
    "int": lambda v: v.int(),
    "gt": lambda v: v > 0,
    "eq": lambda v: v.eq(v),
    "argmax": lambda v: v.argmax(),
    "isnan": lambda v: v.isnan(),
    "any": lambda v: v.any(),
}
# differentiable ops record a node, so they need the view's history: torch refuses
RECORDED = {
    "double": lambda v: v.double(),
    "mul": lambda v: v * 2,
    "floor": lambda v: v.floor(),
    "sum": lambda v: v.sum(),
}


def _stale_no_grad_view(lib):
    """A view made under no_grad of a tensor that requires grad, whose base then changed in
    place under no_grad."""
    x = randn(lib, 3, requires_grad=True).clone()
    with lib.no_grad():
        v = x[:2]
        x.mul_(2)
    return x, v


@pytest.mark.parametrize("op", NOT_RECORDED)
def test_an_op_that_records_nothing_accepts_a_stale_no_grad_view(lib, op):
    x, v = _stale_no_grad_view(lib)
    out = NOT_RECORDED[op](v)
    assert not out.requires_grad and out.grad_fn is None
    assert same(out, NOT_RECORDED[op](x.detach()[:2]))


@pytest.mark.parametrize("op", RECORDED)
def test_a_recorded_op_refuses_a_stale_no_grad_view(lib, op):
    _, v = _stale_no_grad_view(lib)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and its base"):
        RECORDED[op](v)


@pytest.mark.parametrize("op", ["long", "gt", "argmax"])
def test_an_op_that_records_nothing_accepts_a_stale_output_of_unbind(lib, op):
    x = randn(lib, 2, 3, requires_grad=True).clone()
    v = x.unbind()[0]
    x.mul_(2)
    assert NOT_RECORDED[op](v).grad_fn is None
    with pytest.raises(RuntimeError, match="This view is the output of a function that returns"):
        v * 2

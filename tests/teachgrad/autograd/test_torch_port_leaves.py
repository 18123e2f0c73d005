"""Leaves, assignment into tensors, grad mode and custom Functions around them, as PyTorch's
own autograd tests (test_autograd.py: test_detach_then_inplace_raises_in_autograd,
test_leaf_assignment, test_no_grad_assignment, test_no_grad_modifies_version,
test_no_grad_input, test_backward_copy, test_save_none_for_backward, test_too_many_grads,
test_return_leaf, test_return_leaf_inplace, test_isolated_node, test_numpy_requires_grad,
test_dep_nograd, test_set_grad_enabled*, test_simple_reentrant, test_pickle,
test_attribute_deletion) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts.
"""

import functools
import pickle

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = functools.partial(port.randn, default="float32")


def identity_function(lib):
    """A custom Function that returns its input as is."""

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

    return MyFunction


def test_changing_a_detached_alias_of_a_saved_tensor_breaks_backward(lib):
    x = randn(lib, requires_grad=True)
    y = x**2  # saves x
    x.detach().zero_()  # (the detached tensor shares x's version counter)
    with pytest.raises(RuntimeError, match="has been modified by an inplace"):
        y.backward()


def test_assigning_tensors_that_require_grad_into_a_plain_tensor(lib):
    x = randn(lib, 5, 5)
    y = randn(lib, 5, seed=1, requires_grad=True)
    z = randn(lib, 5, seed=2, requires_grad=True)
    x[0] = y
    x[1] = 2 * z
    assert x.requires_grad
    assert x.grad_fn is not None
    x.sum().backward()
    assert same(y.grad, np.ones(5))
    assert same(z.grad, np.full(5, 2.0))


def test_assignment_into_a_leaf_under_no_grad(lib):
    x = randn(lib, 5, 5, requires_grad=True)
    with lib.no_grad():
        x[0] = randn(lib, 5, seed=1)
    assert x.requires_grad
    assert x.grad_fn is None
    assert x._version == 1


def test_an_in_place_change_under_no_grad_still_bumps_the_version(lib):
    x = randn(lib, 5, requires_grad=True)
    y = randn(lib, 5, seed=1, requires_grad=True)
    z = (x * y).sum()
    with lib.no_grad():
        x *= 2
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        z.backward()


def test_a_custom_function_under_no_grad_records_nothing(lib):
    x = randn(lib, 5, requires_grad=True)
    with lib.no_grad():
        y = identity_function(lib).apply(x)
    assert x.requires_grad
    assert y.grad_fn is None


def test_a_gradient_buffered_in_three_places_is_summed_correctly(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = lib.ones(5, 5, requires_grad=True)
    a, b, c = x + 2, y + 2, x + 2
    add2 = (a + b) + c  # its backward hands the same gradient to three places
    for _ in range(4):  # a long branch, so the gradient waits in buffers
        a, b, c = a * 2, b * 2, c * 2
    out = add2 + (a + b + c)
    out.backward(lib.ones(5, 5))
    assert same(x.grad, np.full((5, 5), 34.0))
    assert same(y.grad, np.full((5, 5), 17.0))


def test_saving_none_for_backward(lib):
    seen = []

    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(None, x, None)
            return x * x

        @staticmethod
        def backward(ctx, grad_output):
            n1, x, n2 = ctx.saved_tensors
            seen.append((n1, n2))
            return 2 * x * grad_output

    x = randn(lib, 5, 5, requires_grad=True)
    MyFn.apply(x).sum().backward()
    assert seen == [(None, None)]
    assert same(x.grad, 2 * x)


def test_extra_none_gradients_from_backward_are_ignored(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None, None

    x = randn(lib, 5, 5, requires_grad=True)
    MyFn.apply(x).sum().backward()
    assert same(x.grad, np.ones((5, 5)))


def test_a_function_returning_its_leaf_input(lib):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a, a + b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a + grad_b, grad_b

    seen = []
    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    q, p = Identity.apply(x, y)
    q.register_hook(lambda grad: seen.append(same(grad, np.ones((5, 5)))))  # only q's use of x
    (q + p + x).sum().backward()
    assert same(x.grad, np.full((5, 5), 3.0))
    assert same(y.grad, np.ones((5, 5)))
    assert seen == [True]


def test_a_function_changing_a_plain_leaf_in_place_gives_it_history(lib):
    class Inplace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.mark_dirty(a)
            return a.add_(b), b + 2

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            return grad_a, grad_a + grad_b

    x = randn(lib, 5, 5)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    q, p = Inplace.apply(x, y)
    assert q is x
    assert q.grad_fn.name() == "InplaceBackward"
    assert q.requires_grad
    q.sum().backward()
    assert same(y.grad, np.ones((5, 5)))


def test_a_node_whose_output_leads_nowhere(lib):
    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    a = x + y
    b = lib.max(a, 1, True)[1].repeat(1, 5).double()  # indices: no gradient
    (b + a).sum().backward()
    assert same(x.grad, np.ones((5, 5)))


def test_numpy_of_a_tensor_that_requires_grad(lib):
    x = randn(lib, 2, 2, requires_grad=True)
    with pytest.raises(
        RuntimeError,
        match=r"Can't call numpy\(\) on Tensor that requires grad. Use tensor.detach\(\).numpy\(\) instead.",
    ):
        x.numpy()
    with lib.no_grad():
        x.numpy()
    randn(lib, 2, 2).numpy()


def test_a_non_differentiable_output_fed_to_another_function(lib):
    class F1(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = lib.zeros(x.size())
            ctx.mark_non_differentiable(out)
            return x, out

        @staticmethod
        def backward(ctx, grad_output, ignored):
            return grad_output

    class F2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, ignored):
            return x

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, None

    x = randn(lib, 5, requires_grad=True)
    a, b = F1.apply(x)
    b = b + 1
    assert a.requires_grad and not b.requires_grad
    c = F2.apply(a, b)
    c.backward(lib.ones(c.size()))
    assert same(x.grad, np.ones(5))


def test_set_grad_enabled_as_a_block_and_as_a_call(lib):
    x = lib.tensor([1.0], requires_grad=True)
    with lib.set_grad_enabled(False):
        y = x * 2
    assert not y.requires_grad
    with lib.set_grad_enabled(True):
        y = x * 2
    assert y.requires_grad
    with lib.set_grad_enabled(False):
        lib.set_grad_enabled(True)
        y = x * 2
    assert y.requires_grad


@pytest.mark.parametrize("decorator", [True, False])
def test_set_grad_enabled_wrapping_a_function(lib, decorator):
    with lib.enable_grad():
        if decorator:

            @lib.set_grad_enabled(False)
            def inner(x):
                return x.sin()

        else:

            def inner(x):
                return x.sin()

            switch = lib.set_grad_enabled(False)
            assert not lib.is_grad_enabled()  # (the call itself switched the mode)
            inner = switch(inner)
            assert lib.is_grad_enabled()  # ... and wrapping gives it back
        assert lib.is_grad_enabled()
        assert not inner(lib.zeros(1, requires_grad=True)).requires_grad


def test_a_backward_that_runs_a_backward_of_its_own(lib):
    y_data = randn(lib, 2, 2, seed=1)

    class Reenter(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            with lib.enable_grad():
                ctx.x = x.detach().requires_grad_(True)
                ctx.y = y_data.clone().requires_grad_(True)
                ctx.output = ctx.x * ctx.y
            return ctx.output.detach()

        @staticmethod
        def backward(ctx, grad_output):
            with lib.enable_grad():
                ctx.output.sum().backward()
            return ctx.x.grad * grad_output

    x = randn(lib, 2, 2, requires_grad=True)
    Reenter.apply(x).sum().backward()
    assert same(x.grad, y_data)


def test_pickled_tensors_keep_values_and_requires_grad(lib):
    x = randn(lib, 10, 10, requires_grad=True)
    y = randn(lib, 10, 10, seed=1)
    for protocol in range(3):
        xc, yc = pickle.loads(pickle.dumps([x, y], protocol=protocol))
        for copy, original in ((xc, x), (yc, y)):
            assert same(copy, original)
            assert copy.requires_grad == original.requires_grad


@pytest.mark.parametrize("kind", ["result", "view of a leaf"])
def test_a_pickled_tensor_with_a_history_comes_back_a_leaf(lib, kind):
    x = randn(lib, 3, requires_grad=True)
    y = x * 2 if kind == "result" else x[1:]
    copy = pickle.loads(pickle.dumps(y))
    assert same(copy, y)
    assert copy.requires_grad and copy.is_leaf and copy.grad_fn is None and copy._base is None


@pytest.mark.parametrize("kind", ["leaf", "result", "view"])
def test_attribute_deletion(lib, kind):
    """``del x.grad`` leaves no gradient; deleting the data or requires_grad is refused with
    torch's error, and the graph is left as it was. (torch also refuses ``del x._grad_fn``
    and ``del x._backward_hooks``; teachgrad does not guard its private attributes: see
    docs/differences-from-torch.md.)"""
    x = randn(lib, 5, 5, requires_grad=True)
    t = {"leaf": x, "result": x * 2, "view": (x * 2)[1:]}[kind]
    t.retain_grad()
    t.sum().backward(retain_graph=True)
    del t.grad
    assert t.grad is None
    with pytest.raises(RuntimeError, match="^Deleting tensor data is not allowed"):
        del t.data
    with pytest.raises(TypeError):
        t.data = None
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool"):
        del t.requires_grad
    t.note = "mine"  # an attribute of one's own goes as usual
    del t.note
    assert not hasattr(t, "note")
    # nothing was lost: the same kind of tensor, and its graph still runs
    assert t.requires_grad and t.is_leaf == (kind == "leaf")
    assert (t.grad_fn is None) == (kind == "leaf") and (t._base is not None) == (kind == "view")
    t.sum().backward()  # once more: x.grad holds two gradients (a leaf's, deleted, one)
    once = np.full((5, 5), 1.0 if kind == "leaf" else 2.0)
    once[0] *= kind != "view"  # (the view leaves row 0 out)
    assert same(x.grad, (1 if kind == "leaf" else 2) * once)

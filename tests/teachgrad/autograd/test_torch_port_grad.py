"""``backward()``, ``autograd.grad()``, ``retain_grad()`` and gradient accumulation, as
PyTorch's own autograd tests (test_autograd.py: test_backward*, test_grad*, test_retain_grad*,
test_accumulate_grad*, test_multi_backward*, ...) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts: gradient values, which gradients are None, which errors.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def non_leaf_grad(t):
    """``t.grad`` of a non-leaf, with the warning both libraries give for reading it."""
    with pytest.warns(UserWarning, match="that is not a leaf Tensor is being accessed"):
        return t.grad


# --------------------------------------------------------------------------- backward


def test_backward_of_a_leaf_and_of_a_formula(lib):
    v = randn(lib, 5, 5, seed=1, requires_grad=True)
    x = randn(lib, 5, 5, seed=2, requires_grad=True)
    y = (lib.tensor(np.random.default_rng(3).random((5, 5))) + 0.1).requires_grad_(True)
    z = randn(lib, 5, 5, seed=4, requires_grad=True)
    grad_output = randn(lib, 5, 5, seed=5)

    v.backward(grad_output)
    assert same(v.grad, grad_output)

    a = x + (y * z) + 4 * z**2 * x / y
    a.backward(grad_output)
    with lib.no_grad():
        assert same(x.grad, (4 * z.pow(2) / y + 1) * grad_output)
        assert same(y.grad, (z - 4 * x * z.pow(2) / y.pow(2)) * grad_output)
        assert same(z.grad, (8 * x * z / y + y) * grad_output)


def test_backward_of_several_outputs_sums_their_gradients(lib):
    x, y, q, a, b = (randn(lib, 5, 5, seed=i, requires_grad=True) for i in range(5))
    q2 = q * 2
    z = x + y + q2
    c = a * b + q2
    grad_z, grad_c = randn(lib, 5, 5, seed=10), randn(lib, 5, 5, seed=11)
    lib.autograd.backward([z, c], [grad_z, grad_c])
    assert same(x.grad, grad_z)
    assert same(y.grad, grad_z)
    assert same(a.grad, grad_c * b)
    assert same(b.grad, grad_c * a)
    assert same(q.grad, (grad_c + grad_z) * 2)


def test_backward_of_an_output_without_grad_among_several_raises(lib):
    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1)
    with pytest.raises(RuntimeError):
        lib.autograd.backward([x + y, y * 2], [lib.ones(5, 5), lib.ones(5, 5)])


def test_backward_of_a_tensor_without_grad_raises(lib):
    with pytest.raises(RuntimeError, match="does not require grad"):
        lib.ones(1).backward()


def test_backward_of_outputs_that_depend_on_each_other(lib):
    x = randn(lib, 10, requires_grad=True)
    y = x**2
    z = y**3
    go_y, go_z = randn(lib, 10, seed=1), randn(lib, 10, seed=2)
    lib.autograd.backward([y, z], [go_y, go_z])
    with lib.no_grad():
        assert same(x.grad, 2 * x * go_y + 6 * x.pow(5) * go_z)


def test_backward_with_inputs_fills_only_those_inputs(lib):
    x = randn(lib, 2, 2, seed=1, requires_grad=True)
    y = randn(lib, 2, 2, seed=2, requires_grad=True)

    def fn():
        return x**2 + y * x + y**2

    gradient = lib.ones(2, 2, dtype=lib.float64)
    with lib.no_grad():
        x_expected, y_expected = 2 * x + y, x + 2 * y

    def reset():
        with lib.no_grad():
            x.grad.zero_()
            y.grad.zero_()

    lib.autograd.backward(fn(), gradient, inputs=[x, y])
    assert same(x.grad, x_expected) and same(y.grad, y_expected)
    reset()
    lib.autograd.backward(fn(), gradient, inputs=[x])
    assert same(x.grad, x_expected) and same(y.grad, lib.zeros(2, 2))
    reset()
    lib.autograd.backward(fn(), gradient, inputs=[y])
    assert same(y.grad, y_expected) and same(x.grad, lib.zeros(2, 2))
    reset()
    lib.autograd.backward(fn(), gradient, inputs=y)
    assert same(y.grad, y_expected) and same(x.grad, lib.zeros(2, 2))
    reset()
    with pytest.raises(RuntimeError, match="cannot be empty"):
        lib.autograd.backward(fn(), gradient, inputs=[])


def test_backward_with_a_0d_input(lib):
    x = lib.tensor(1.5, dtype=lib.float64, requires_grad=True)
    (x**2).backward(inputs=x)
    assert same(x.grad, 3.0)


def test_backward_with_non_leaf_inputs_and_an_unused_input(lib):
    x = randn(lib, 2, 2, seed=1, requires_grad=True)
    x_nonleaf = x * 1
    y = randn(lib, 2, 2, seed=2, requires_grad=True)
    z = randn(lib, 2, 2, seed=3, requires_grad=True)
    out = x_nonleaf**2 + y * x_nonleaf + y**2
    ones = lib.ones(2, 2, dtype=lib.float64)
    out.backward(ones, create_graph=True, inputs=[x, y, x_nonleaf])
    with lib.no_grad():
        assert same(y.grad, x + 2 * y)
        assert same(x.grad, 2 * x + y)
        assert same(x_nonleaf.grad, 2 * x_nonleaf + y)
    # backward has no allow_unused: an input outside the graph just gets no gradient
    out.backward(ones, create_graph=True, inputs=[z])
    assert z.grad is None


def must_not_run(lib):
    """The ``apply`` of an identity Function whose backward must never be called."""

    class MustNotRun(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("this node should not run")

    return MustNotRun.apply


def test_backward_with_inputs_runs_no_node_towards_an_unreachable_input(lib):
    x = must_not_run(lib)(lib.ones(1, requires_grad=True) * 2)
    y = lib.ones(1, requires_grad=True)
    lib.autograd.backward(x, inputs=(y,))  # allow_unused is implicitly True
    assert y.grad is None


# --------------------------------------------------------------------------- autograd.grad


def test_grad_of_a_gradient_leaves_dot_grad_alone(lib):
    x = randn(lib, 2, 2, seed=1, requires_grad=True)
    y = randn(lib, 2, 2, seed=2, requires_grad=True)
    z = x**2 + y * x + y**2
    z.backward(lib.ones(2, 2, dtype=lib.float64), create_graph=True)
    with lib.no_grad():
        x_grad, y_grad = 2 * x + y, x + 2 * y
    assert same(x.grad, x_grad) and same(y.grad, y_grad)

    grad_sum = 2 * x.grad + y.grad
    (x_hv,) = lib.autograd.grad(
        outputs=[grad_sum],
        grad_outputs=[lib.ones(2, 2, dtype=lib.float64)],
        inputs=[x],
        create_graph=True,
    )
    assert same(x_hv, lib.ones(2, 2) * 5)
    assert same(x.grad, x_grad) and same(y.grad, y_grad)

    grad_out = lib.ones(2, dtype=lib.float64)
    with pytest.raises(RuntimeError) as info:
        lib.autograd.grad(
            outputs=[grad_sum], grad_outputs=[grad_out], inputs=[x], create_graph=True
        )
    first_line = str(info.value).splitlines()[0]
    assert first_line == (
        f"Mismatch in shape: grad_output[0] has a shape of {grad_out.shape} and output[0] "
        f"has a shape of {grad_sum.shape}."
    )


def test_backward_of_a_gradient_adds_the_hessian_vector_product(lib):
    x = randn(lib, 2, 2, seed=1, requires_grad=True)
    y = randn(lib, 2, 2, seed=2, requires_grad=True)
    z = x**2 + y * x + y**2
    z.backward(lib.ones(2, 2, dtype=lib.float64), create_graph=True)
    with lib.no_grad():
        x_grad, y_grad = 2 * x + y, x + 2 * y
    grad_sum = 2 * x.grad + y.grad
    grad_sum.backward(lib.ones(2, 2, dtype=lib.float64))
    assert same(x.grad, x_grad + 5)
    assert same(y.grad, y_grad + 4)


def test_grad_of_non_leaves_step_by_step(lib):
    x_init = randn(lib, 2, 2, seed=1, requires_grad=True)
    x = x_init
    y = randn(lib, 2, 2, seed=2, requires_grad=True)
    grad_output = lib.ones(2, 2, dtype=lib.float64)

    def fn(x):
        return x**2 + y * x + y**2

    for _ in range(5):
        (grad_x,) = lib.autograd.grad(fn(x), x, grad_outputs=grad_output, create_graph=True)
        assert y.grad is None
        assert (non_leaf_grad(x) if x is not x_init else x.grad) is None
        assert same(grad_x, 2 * x + y)
        x = x + 0.05 * grad_x

    assert fn(x).sum().item() > fn(x_init).sum().item()
    x.backward(grad_output)
    assert y.grad is not None
    assert x_init.grad is not None


def test_grad_with_materialize_grads(lib):
    x = lib.tensor(0.5, requires_grad=True)
    a = lib.tensor(1.0, requires_grad=True)
    y = x * a
    dydx = lib.autograd.grad(y, x, create_graph=True)
    d2_none = lib.autograd.grad(dydx, x, create_graph=True, allow_unused=True)
    d2 = lib.autograd.grad(dydx, x, create_graph=True, allow_unused=True, materialize_grads=True)
    d3 = lib.autograd.grad(d2, x, materialize_grads=True)  # allow_unused implied
    assert d2_none[0] is None
    assert d2[0].item() == 0
    assert d3[0].item() == 0
    with pytest.raises(ValueError, match="Expected allow_unused to be True or not passed when"):
        lib.autograd.grad(y, x, allow_unused=False, materialize_grads=True)


def test_materialized_zeros_do_not_require_grad_without_create_graph(lib):
    x = lib.ones(10, requires_grad=True)
    y = lib.ones(10, requires_grad=True)
    g = lib.autograd.grad(
        (x**2).sum(), (x, y), allow_unused=True, materialize_grads=True, create_graph=False
    )
    assert not g[0].requires_grad
    assert not g[1].requires_grad


def test_grad_in_shards_then_backward_the_rest(lib):
    leaves = [lib.zeros(5, 5, requires_grad=True) for _ in range(10)]
    intermediates = [leaf * i + leaf * leaf for i, leaf in enumerate(leaves)]
    loss = sum(v * i for i, v in enumerate(intermediates)).sum()
    d_intermediates = [
        d
        for start in range(0, len(intermediates), 2)
        for d in lib.autograd.grad(loss, intermediates[start : start + 2])
    ]
    lib.autograd.backward(intermediates, d_intermediates)
    for i, leaf in enumerate(leaves):
        assert same(leaf.grad, i * i * (1 + leaf))


def test_grad_of_or_towards_tensors_without_grad_raises(lib):
    x = lib.ones(1)
    y = x**2
    with pytest.raises(RuntimeError, match="does not require grad"):
        lib.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        lib.autograd.grad(y, x)
    x = lib.ones(1, requires_grad=True)
    lib.autograd.grad(x**2, x)


def test_grad_needs_inputs(lib):
    x = lib.tensor([1.0], requires_grad=True)
    # (torch's test expects an older ValueError; torch 2.x raises this)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty."):
        lib.autograd.grad(2 * x, [], grad_outputs=lib.tensor([1.0]))


def test_calling_a_node_with_too_many_or_too_few_gradients(lib):
    x = lib.ones(1, requires_grad=True)
    y = x**2
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match="expected .* arguments, got .* instead"):
        y.grad_fn()
    y.grad_fn(x.detach())


def test_grad_towards_unreachable_inputs(lib):
    x = lib.ones(1, requires_grad=True)
    y = lib.ones(1, requires_grad=True)
    z = x * 2  # (both leaves now have a gradient accumulator)
    w = y * 2
    grad_x, grad_y = lib.autograd.grad(x * 2, [x, y], allow_unused=True)
    assert same(grad_x, [2.0])
    assert grad_y is None

    z = lib.ones(1, requires_grad=True)  # (no accumulator at all)
    grad_x, grad_z = lib.autograd.grad(x * 2, [x, z], allow_unused=True)
    assert same(grad_x, [2.0])
    assert grad_z is None

    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        lib.autograd.grad(x * 2, [x, y], allow_unused=False)
    del w


def test_grad_runs_no_node_towards_an_unreachable_input(lib):
    x = must_not_run(lib)(lib.ones(1, requires_grad=True) * 2)
    y = lib.ones(1, requires_grad=True)
    (gy,) = lib.autograd.grad(x, (y,), allow_unused=True)
    assert gy is None

    x = must_not_run(lib)(lib.ones(1, requires_grad=True) * 2)
    z = lib.ones(1, requires_grad=True)
    gy, gz = lib.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gy is None
    assert gz is not None


def test_grad_with_batched_grad_outputs(lib):
    x = randn(lib, 2, 2, requires_grad=True)
    expected = lib.arange(3).expand(2, 2, 3).transpose(0, 2)  # shape (3, 2, 2)

    out = x.clone()
    (grad,) = lib.autograd.grad(out, (x,), (expected,), is_grads_batched=True)
    assert same(grad, expected)
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first"):
        lib.autograd.grad(
            outputs=out, grad_outputs=(lib.ones(2, 2),), inputs=(x,), is_grads_batched=True
        )

    out = x.sum()
    (grad,) = lib.autograd.grad(out, (x,), (lib.arange(3),), is_grads_batched=True)
    assert same(grad, expected)
    # a 0-d output and a grad of shape (1,) per batch entry do not match
    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret the first"):
        lib.autograd.grad(
            outputs=out,
            grad_outputs=(lib.ones(2).unsqueeze(1),),
            inputs=(x,),
            is_grads_batched=True,
        )


# --------------------------------------------------------------------------- .grad and accumulation


def test_reading_grad_of_a_non_leaf_warns_once_per_read(lib, recwarn):
    dummy = lib.empty(1)
    dummy.requires_grad_()
    dummy.grad
    assert len(recwarn) == 0
    dummy = dummy.clone()
    dummy.grad
    assert len(recwarn) == 1
    dummy.retain_grad()
    dummy.grad
    assert len(recwarn) == 1


@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulation_is_in_place_unless_create_graph(lib, create_graph):
    x = randn(lib, 5, 5, requires_grad=True)
    y = x + 2
    y.backward(lib.ones(5, 5, dtype=lib.float64), retain_graph=True)
    first, first_values = x.grad, x.grad.clone()
    y.backward(lib.ones(5, 5, dtype=lib.float64), create_graph=create_graph)
    # in place: the first .grad object now holds the sum; out of place: it is unchanged
    assert same(first, first_values if create_graph else first_values * 2)
    assert (first is x.grad) is not create_graph


@pytest.mark.parametrize("create_graph", [False, True])
def test_accumulation_keeps_the_grad_object_unless_create_graph(lib, create_graph):
    params = lib.tensor([1.5, 1.5]).requires_grad_()
    params.grad = lib.tensor([1.5, 1.5])
    before = params.grad
    params.backward(lib.tensor([1.5, 1.5]), create_graph=create_graph)
    assert (id(before) == id(params.grad)) is not create_graph


def test_accumulating_a_gradient_with_no_elements(lib):
    a = lib.rand(4, 0, requires_grad=True)
    b = lib.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    assert same(b.grad, lib.zeros(4, 1))
    assert same(a.grad, lib.zeros(4, 0))


# --------------------------------------------------------------------------- retain_grad


def test_retain_grad_accumulates_and_is_a_no_op_on_leaves(lib):
    inputs = lib.tensor([[0.2, 0.5, 0.9]], requires_grad=True)
    h1 = inputs * 3
    out = (h1 * h1).sum()
    h1.retain_grad()
    h1.retain_grad()  # calling it twice is fine
    out.backward(retain_graph=True)
    assert same(h1.grad, h1 * 2)
    out.backward(retain_graph=True)
    assert same(h1.grad, h1 * 4)

    with lib.no_grad():
        inputs.grad.zero_()
    inputs.retain_grad()
    inputs.retain_grad()
    out.backward()
    assert same(inputs.grad, inputs * 18)


def test_retain_grad_gives_the_gradient_of_the_latest_version(lib):
    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.sum().backward()
    assert same(a.grad, [1.0])

    a = lib.tensor([1.0], requires_grad=True).clone()
    a.retain_grad()
    a.mul_(2)
    a.mul_(2)
    a.sum().backward()
    assert same(a.grad, [1.0])

    x = lib.tensor([1.0], requires_grad=True).clone()
    x.retain_grad()
    x_view = x[:]
    x_view *= 2
    x *= 2
    x.sum().backward()
    assert same(x.grad, [1.0])

    # a base that did not require grad has no retain_grad hook to move
    x = lib.zeros(4)
    x.view(2, 2).add_(lib.ones(2, 2, requires_grad=True))


def test_retain_grad_on_outputs_of_a_multi_output_custom_function_changed_in_place(lib):
    double_mul = port.double_and_triple(lib)
    b = randn(lib, 3, 3, requires_grad=True)
    first, second = double_mul(b)
    first.retain_grad()
    second.retain_grad()
    first.mul_(2)
    (first + second).sum().backward()
    got = first.grad, second.grad

    a = b.detach().requires_grad_(True)
    first, second = double_mul(a)
    first.mul_(2)
    expected = lib.autograd.grad((first + second).sum(), inputs=(first, second))
    assert same(got[0], expected[0]) and same(got[1], expected[1])


def test_retain_grad_on_two_views_when_one_changes_in_place(lib):
    base = lib.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.retain_grad()
    view2.retain_grad()
    view.mul_(2)
    (view + view2).sum().backward()
    assert same(view.grad, view2.grad)
    assert same(view.grad, [1.0])

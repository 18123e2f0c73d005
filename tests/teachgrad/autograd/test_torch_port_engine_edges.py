"""The engine's edges: which nodes a backward runs (and which it must not), gradients it
must not change in place, hooks on the nodes of built-in ops, warnings raised inside a
backward, and values an op does not save, as PyTorch's own autograd tests check them
(test_autograd.py, TestAutograd: test_copy_slices_graph_task_updates, test_gc_in_destructor,
test_grad_fn_prehooks_multiple_outputs, test_hooks_cpp, test_input_buffer_accum,
test_requires_grad, test_inplace_on_view_backward, test_set_materialize_non_diff_grads,
test_grad_fn_attr_bindings (the saved
tensors; the saved numbers, sizes and dims are compared with torch's in
test_torch_fidelity_saved_args.py); TestAutogradDeviceType:
test_non_differentiable_ops, test_warning_in_backward; TestAutogradMultipleDispatch:
test_per_dispatch_key_input_saving).

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. Where torch's test uses an op or an internal node teachgrad does
not have, the test's docstring names the op used instead.
"""

import gc
import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


# --------------------------------------------------------------------- nodes backward runs


def _add_into_a_view(x, y):
    out = x.clone().view(-1)
    out += y
    return out


def _add_into_a_view_used_before(x, y):
    out = x.clone().view(-1)
    doubled = out * 2
    out += y
    return out + doubled


@pytest.mark.parametrize("program", [_add_into_a_view, _add_into_a_view_used_before])
def test_a_view_changed_in_place_runs_only_the_nodes_towards_the_inputs(lib, program):
    """torch's test_copy_slices_graph_task_updates: a DelayedError node raises only when a
    pass runs it."""
    x = randn(lib, 2, requires_grad=True)
    y = randn(lib, 2, seed=1, requires_grad=True)
    y_safe = lib._C._functions.DelayedError("Boom!", 1)(y)

    with pytest.raises(RuntimeError, match="Boom!"):
        program(x, y_safe).sum().backward()
    with pytest.raises(RuntimeError, match="Boom!"):
        lib.autograd.grad(program(x, y_safe).sum(), y)
    # Neither x nor y_safe needs the failing node.
    (gx,) = lib.autograd.grad(program(x, y_safe).sum(), x)
    (gy,) = lib.autograd.grad(program(x, y_safe).sum(), y_safe)
    both = lib.autograd.grad(program(x, y_safe).sum(), (x, y_safe))
    assert same(gx, lib.ones(2) * (1 if program is _add_into_a_view else 3))
    assert same(gy, lib.ones(2))
    assert same(both[0], gx) and same(both[1], gy)


def test_a_hook_on_the_view_before_it_changed_does_not_run(lib):
    """torch's test_copy_slices_graph_task_updates, its last case: the hook belongs to the
    view's old node, which a gradient towards (b, y_safe) never passes. (Backward goes on
    through ``b`` to ``y_safe``: an input is not where the graph stops.)"""
    x = randn(lib, 2, requires_grad=True)
    y = randn(lib, 2, seed=1, requires_grad=True)
    y_safe = lib._C._functions.DelayedError("Boom!", 1)(y)
    calls = []
    out = x.clone().view(-1)
    out.register_hook(lambda grad: calls.append(grad))
    b = out + y_safe
    out += y_safe
    gb, gy = lib.autograd.grad((out + b).sum(), (b, y_safe))
    assert calls == []
    assert same(gb, lib.ones(2)) and same(gy, lib.ones(2) * 2)


def test_requires_grad_spreads_only_along_the_ops_that_use_it(lib):
    """torch's test_requires_grad (less its check through the private ``_backward_hooks``):
    a sum of plain tensors records nothing, and backward of a formula that uses it leaves
    the plain tensors without a gradient."""
    x, y = randn(lib, 5, 5), randn(lib, 5, 5, seed=1)
    z = randn(lib, 5, 5, seed=2, requires_grad=True)
    a = x + y
    assert not a.requires_grad and a.grad_fn is None
    b = a + z
    assert b.requires_grad
    b.backward(lib.ones(5, 5))
    assert same(z.grad, lib.ones(5, 5))
    assert x.grad is None and y.grad is None and a.grad is None


# ------------------------------------------------------------------ gradients left alone


def test_gradients_given_to_backward_are_not_changed_in_place(lib):
    """torch's test_input_buffer_accum; torch's second output is a gather with a sparse
    gradient (``sparse_grad=True``), here the dense gather."""
    leaf = randn(lib, 2, 2, requires_grad=True)
    gathered = leaf.gather(0, lib.tensor([[0, 0]]))
    copied = leaf.clone()
    grad_copied = randn(lib, 2, 2, seed=1)
    grad_copied_before = grad_copied.clone()
    grad_gathered = randn(lib, 1, 2, seed=2)
    lib.autograd.backward((copied, gathered), (grad_copied, grad_gathered))
    assert same(grad_copied, grad_copied_before)
    assert same(leaf.grad[0], grad_copied_before[0] + grad_gathered[0])


def test_an_input_a_reduction_does_not_save_may_change_in_place(lib):
    """torch's test_per_dispatch_key_input_saving, for plain tensors (its other half is
    about nested tensors): ``sum`` does not save its input, so changing the input in place
    afterwards leaves backward working."""
    x = randn(lib, 2, requires_grad=True)
    copy = x.clone()
    total = copy.sum(-1, keepdim=True)
    copy.add_(copy)
    total.backward()
    assert same(x.grad, lib.ones(2))


# --------------------------------------------------------------------- hooks on built-ins


def test_a_tensor_hook_on_the_output_of_a_built_in_op(lib):
    """torch's test_hooks_cpp; torch's op is an evaluating BatchNorm1d without affine
    parameters (``x`` divided by about 1), here ``F.linear`` with the identity matrix."""
    calls = []

    def doubling(grad):
        calls.append(1)
        return grad * 2

    x = lib.ones(5, 5, dtype=lib.double, requires_grad=True)
    z = lib.nn.functional.linear(x, lib.eye(5, dtype=lib.double))
    z.register_hook(doubling)
    z.sum().backward()
    assert len(calls) == 1
    assert same(x.grad, lib.ones(5, 5) * 2)


def test_a_node_prehook_on_a_built_in_op_with_several_outputs(lib):
    """torch's test_grad_fn_prehooks_multiple_outputs, its built-in half (the custom
    Function half is in test_torch_port_hooks.py); torch's two-output op is ``var_mean``,
    here ``split``, whose outputs share one node."""

    def loss(parts):
        first, second = parts
        return (first * first + second).sum()

    base = randn(lib, 4, 3, requires_grad=True)
    loss(base.split(2)).backward()

    hooked = base.detach().requires_grad_()
    seen = []

    def doubling_both(grad_outputs):
        seen.append(len(grad_outputs))
        return tuple(g * 2 for g in grad_outputs)

    parts = hooked.split(2)
    assert parts[0].grad_fn is parts[1].grad_fn
    parts[1].grad_fn.register_prehook(doubling_both)
    loss(parts).backward()
    assert seen == [2]
    assert same(hooked.grad, base.grad * 2)


# ------------------------------------------------------ gradients of non-differentiable outputs


@pytest.mark.parametrize("materialize_non_diff", [True, False])
@pytest.mark.parametrize("kind", ["marked non-differentiable", "an integer tensor"])
def test_the_gradient_of_a_non_differentiable_output(lib, materialize_non_diff, kind):
    """torch's private ``ctx._materialize_non_diff_grads = False``: backward gets None, not
    zeros, for the outputs that are not differentiable (the other outputs still get zeros)."""
    received = []

    class TwoOutputs(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx._materialize_non_diff_grads = materialize_non_diff
            if kind == "an integer tensor":
                other = lib.ones(2, dtype=lib.int64)
            else:
                other = x.clone()
                ctx.mark_non_differentiable(other)
            return x.clone(), x.clone(), other

        @staticmethod
        def backward(ctx, g_first, g_second, g_other):
            received.extend([g_second, g_other])
            return g_first

    x = lib.tensor(2.0, dtype=lib.float64, requires_grad=True)
    first, _, _ = TwoOutputs.apply(x)
    first.backward()
    g_second, g_other = received
    assert g_second is not None and g_second.item() == 0.0
    assert (g_other is None) == (not materialize_non_diff)


# -------------------------------------------------------------------- saved tensors on nodes


def test_the_tensors_a_node_saved_read_back_until_backward_frees_them(lib):
    """torch's test_grad_fn_attr_bindings, the tensors: ``_saved_self`` of a product,
    ``_saved_result`` of tanh, ``_saved_weight`` of nll_loss (None without a weight), and
    the errors once backward has freed them."""
    a = lib.ones(1, requires_grad=True)
    b = lib.zeros(1, requires_grad=True)
    product = (a * 2) * b
    assert isinstance(product.grad_fn._saved_self, lib.Tensor)
    assert same(product.grad_fn._saved_self, a * 2)
    product.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    product.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        product.grad_fn._saved_self

    square = lib.ones(2, 2, requires_grad=True) * lib.ones(2, 2, requires_grad=True)
    square.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    square.sum().backward()
    with pytest.raises(RuntimeError, match="after it has been freed"):
        square.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)

    t = lib.tanh(lib.ones(2, requires_grad=True))
    assert same(t.grad_fn._saved_result, t)

    scores = randn(lib, 3, 5, dtype=lib.float32, requires_grad=True)
    target = lib.tensor([1, 0, 4])
    assert lib.nn.NLLLoss()(scores, target).grad_fn._saved_weight is None
    loss = lib.nn.NLLLoss(weight=lib.ones((5,)))(scores, target)
    assert same(loss.grad_fn._saved_weight, lib.ones(5))
    loss.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        loss.grad_fn._saved_weight


# ------------------------------------------------------------------------------- warnings


def test_a_warning_raised_in_backward_reaches_the_caller(lib):
    """torch's test_warning_in_backward; torch warns from an internal test op's backward,
    here a custom Function's."""

    class WarnInBackward(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        def backward(ctx, grad):
            warnings.warn("Warn from backward", stacklevel=2)
            return grad

    a = lib.zeros((), requires_grad=True)
    with pytest.warns(UserWarning, match="Warn from backward"):
        WarnInBackward.apply(a).backward()
    assert same(a.grad, 1.0)


def test_comparisons_give_results_that_do_not_require_grad(lib):
    """torch's test_non_differentiable_ops; torch's ops are ``isin`` and ``signbit``, here
    ``eq`` against each value and ``x < 0``."""
    x = lib.tensor([[1, 2], [3, 4.0]], requires_grad=True)
    found = x.eq(lib.tensor([[2.0]])) | x.eq(lib.tensor([[3.0]]))
    assert not found.requires_grad
    assert found.tolist() == [[False, True], [True, False]]
    negative = randn(lib, 3, 3, requires_grad=True) < 0
    assert not negative.requires_grad and negative.grad_fn is None


# ----------------------------------------------------------------- views and old Functions


def test_a_double_backward_through_a_normalization_and_an_in_place_relu(lib):
    """torch's test_inplace_on_view_backward, its first case; torch normalizes with
    ``nn.InstanceNorm2d``, here ``F.layer_norm`` over the same two dims (no weights either).
    The double backward runs, and leaves the input as it was."""
    relu = lib.nn.ReLU(True)

    def net(x):
        return relu(lib.nn.functional.layer_norm(x, [1, 2]))

    x = lib.tensor([[[[1.0, 1.0]]]], requires_grad=True)
    (g,) = lib.autograd.grad(net(x).pow(2), [x], grad_outputs=lib.ones(x.shape), create_graph=True)
    (gg,) = lib.autograd.grad(g.sum(), [x])
    assert x.tolist() == [[[[1.0, 1.0]]]]
    assert same(g, lib.zeros(1, 1, 1, 2)) and same(gg, lib.zeros(1, 1, 1, 2))


def test_a_gradient_penalty_through_an_in_place_op_on_a_view(lib):
    """torch's test_inplace_on_view_backward, its second case; torch's in-place op is
    ``threshold``, here ``relu`` (the same at 0), and the name of the node of the gradient's
    gradient is left out (a fused backward's node: docs/differences-from-torch.md). The
    gradients match those of the same program without the in-place op."""

    def penalty(inputs, in_place):
        shifted = (inputs - 1).view_as(inputs)
        rectified = lib.nn.functional.relu(shifted, inplace=in_place)
        prob = lib.sigmoid(rectified)
        (grads,) = lib.autograd.grad(
            prob, inputs, lib.ones(prob.shape), create_graph=True, retain_graph=True
        )
        return grads.sum()

    inputs = randn(lib, 1, 3, 4, 4, requires_grad=True)
    penalty(inputs, in_place=True).backward()
    in_place_grad = inputs.grad
    inputs.grad = None
    penalty(inputs, in_place=False).backward()
    assert same(in_place_grad, inputs.grad)
    assert np.any(port.values(in_place_grad) != 0)


def test_a_function_whose_destructor_collects_garbage(lib):
    """torch's test_gc_in_destructor: a Function instance (which warns that it should not
    be instantiated) whose ``__del__`` runs the garbage collector, its ``forward`` called
    as a plain method."""

    class CollectOnDelete(lib.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

        def __del__(self):
            gc.collect()

    for _ in range(10):
        x = lib.randn(1, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            CollectOnDelete().forward(x).backward()
        assert same(x.grad, lib.ones(1))

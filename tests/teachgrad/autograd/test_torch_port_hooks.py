"""Tensor hooks, node hooks and post-accumulate-grad hooks, as PyTorch's own autograd tests
(test_autograd.py: test_hooks, test_grad_fn_prehooks*, test_prehook_ordering,
test_post_accumulate_grad_hook_*, test_tensor_hooks_inplace*, ...) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts: how often each hook ran, in which order, what it saw and
what gradient arrived in the end.
"""

import copy
import gc
import weakref

import pytest

from tests.teachgrad.autograd._port import double_and_triple, same, times_two
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def non_leaf_grad(t):
    """``t.grad`` of a non-leaf, with the warning both libraries give for reading it."""
    with pytest.warns(UserWarning, match="that is not a leaf Tensor is being accessed"):
        return t.grad


CUSTOM = pytest.mark.parametrize("custom", [False, True], ids=["builtin", "custom"])


# --------------------------------------------------------------------------- tensor hooks


def test_tensor_hooks_count_calls_are_removed_and_can_replace_the_grad(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = (lib.ones(5, 5) * 4).requires_grad_(True)
    counter = [0]

    def counting(inc):
        def hook(grad):
            assert isinstance(grad, lib.Tensor)
            counter[0] += inc

        return hook

    z = x**2 + x * 2 + x * y + y
    x.register_hook(counting(0))
    first = z.register_hook(counting(1))
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 1

    second = z.register_hook(counting(2))
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 4

    second.remove()
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert counter[0] == 5

    first.remove()
    z.register_hook(lambda grad: grad.mul(2))
    with lib.no_grad():
        y.grad.zero_()
    z.backward(lib.ones(5, 5), retain_graph=True)
    assert same(y.grad, (x + 1) * 2)

    y.register_hook(lambda grad: grad.mul(2))
    with lib.no_grad():
        y.grad.zero_()
    z.backward(lib.ones(5, 5))
    assert same(y.grad, (x + 1) * 4)


def test_a_hook_without_a_name_attribute(lib):
    class CloningHook:
        def __call__(self, grad):
            return grad.clone()

    x = lib.ones(5, requires_grad=True).clone()
    x.register_hook(CloningHook())
    x.sum().backward()


def test_a_hook_on_a_none_gradient_output_of_a_custom_function_is_not_called(lib):
    class NoneForSecond(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            assert ctx.needs_input_grad[0]
            assert not ctx.needs_input_grad[1]
            return x, y

        @staticmethod
        def backward(ctx, grad_x, grad_y):
            return grad_x, None

    called = []

    def hook(grad):
        assert grad is not None
        called.append(True)

    x = lib.ones(5, 5, requires_grad=True)
    rx, ry = NoneForSecond.apply(x, lib.ones(5, 5))
    rx.register_hook(hook)
    ry.register_hook(hook)
    sum(rx, ry).sum().backward()
    assert called


def test_a_hook_on_one_unbind_output_sees_only_its_own_backward(lib):
    x = lib.tensor([1.0, 2.0, 3.0, 4.0, 5.0], requires_grad=True)
    parts = x.unbind()
    seen = [None]

    def hook(grad):
        seen[0] = grad

    parts[0].register_hook(hook)
    parts[0].backward()
    assert same(seen[0], 1.0)
    expected = [1.0, 0.0, 0.0, 0.0, 0.0]
    assert same(x.grad, expected)
    assert non_leaf_grad(parts[0]) is None

    seen[0] = None
    for i in range(1, 5):
        parts[i].backward()
        assert seen[0] is None
        expected[i] = 1.0
        assert same(x.grad, expected)
        assert non_leaf_grad(parts[i]) is None


def test_grad_of_two_chunks_runs_no_hook_of_their_base(lib):
    x = lib.arange(8.0).reshape(4, 2).requires_grad_(True)
    a, b = x.chunk(2)
    called = []
    x.register_hook(lambda *grads: called.append(True))
    go = lib.tensor([[1.0, 2.0], [3.0, 4.0]])
    grad_a, grad_b = lib.autograd.grad(a + 2 * b, [a, b], grad_outputs=go, create_graph=True)
    assert same(grad_a, go)
    assert same(grad_b, go * 2)
    assert not called
    assert x.grad is None


# --------------------------------------------------------------------------- node hooks


@CUSTOM
def test_node_pre_and_post_hooks_count_and_see_the_changed_gradients(lib, custom):
    mul2 = times_two(lib, custom)
    a = lib.tensor([1.0], requires_grad=True)
    b = mul2(a)
    post, pre = [0], [0]

    def posthook(grad_inputs, grad_outputs):
        assert pre[0] == 3
        assert same(grad_outputs[0], [8.0])
        assert same(grad_inputs[0], [16.0])
        post[0] += 1
        return grad_inputs

    def prehook(grad_outputs):
        pre[0] += 1
        return (grad_outputs[0] * 2,)

    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_hook(posthook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda grads: None)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(lambda grads: grads)
    b.grad_fn.register_prehook(lambda grads: None)
    b.sum().backward()
    assert post[0] == 2
    assert pre[0] == 3

    a = lib.ones(3, 3, requires_grad=True)
    b = mul2(a)

    def counting_prehook(grad_outputs):
        pre[0] += 1

    b.grad_fn.register_prehook(counting_prehook)
    b.sum().backward()
    assert pre[0] == 4
    assert same(a.grad, lib.ones(3, 3) * 2)


def test_a_prehook_on_a_multi_output_custom_function_gets_every_output_s_gradient(lib):
    class DoubleMul2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, a, y):
            ctx.a = a
            return a * x * 2, a, a * y * 2

        @staticmethod
        def backward(ctx, g1, _a, g2):
            return ctx.a * g1 * 2, None, ctx.a * g2 * 2

    counter = [0]

    def prehook(grad_outputs):
        g1, ga, g2 = grad_outputs
        assert ga is None
        counter[0] += 1
        return (g1 * 2, None, g2 * 2)

    a = lib.ones(3, 3, requires_grad=True)
    b = lib.ones(3, 3, requires_grad=True)
    k = 3
    c, _, d = DoubleMul2.apply(a, k, b)
    c.grad_fn.register_prehook(prehook)
    (c + d).sum().backward()
    assert counter[0] == 1
    assert same(a.grad, lib.ones(3, 3) * 4 * k)
    assert same(b.grad, lib.ones(3, 3) * 4 * k)


@CUSTOM
def test_node_prehooks_removed_before_or_during_backward_do_not_run(lib, custom):
    mul2 = times_two(lib, custom)
    a = lib.ones(3, 3, requires_grad=True)
    b = mul2(a)
    counter = [0]

    def prehook(grad_outputs):
        counter[0] += 1

    handle = b.grad_fn.register_prehook(prehook)
    b.grad_fn.register_prehook(prehook)
    handle.remove()
    b.sum().backward()
    assert same(a.grad, lib.ones(3, 3) * 2)
    assert counter[0] == 1

    a = lib.ones(3, 3, requires_grad=True)
    b = mul2(a)
    counter = [0]

    def removing(grad_outputs):
        second.remove()
        third.remove()  # removing a removed hook again is fine

    def counting(grad_outputs):
        counter[0] += 1

    b.grad_fn.register_prehook(removing)
    second = b.grad_fn.register_prehook(counting)
    third = b.grad_fn.register_prehook(counting)
    third.remove()
    b.sum().backward()
    assert same(a.grad, lib.ones(3, 3) * 2)
    assert counter[0] == 1


def test_tensor_hooks_run_before_the_node_prehooks_of_the_same_node(lib):
    log = []

    def tensor_hook(g):
        log.append(1)
        return g * 3

    def node_prehook(gs):
        log.append(2)
        return tuple(g * 2 for g in gs)

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.grad_fn.register_prehook(node_prehook)
    b.register_hook(tensor_hook)
    b.grad_fn.register_prehook(node_prehook)
    acc = b.grad_fn.next_functions[0][0]
    a.register_hook(tensor_hook)
    acc.register_prehook(node_prehook)
    a.register_hook(tensor_hook)

    b.sum().backward(retain_graph=True)
    assert log == [1, 2, 2, 1, 1, 2]

    # grad() runs the tensor hooks of a leaf it returns the gradient of, but not its
    # AccumulateGrad node's prehooks (that node is never executed)
    log.clear()
    lib.autograd.grad(b.sum(), inputs=(a,), retain_graph=True)
    assert log == [1, 2, 2, 1, 1]

    log.clear()
    b.sum().backward(inputs=(b,))
    assert log == [1, 2, 2]
    # retain_grad's hook runs after the tensor hooks but before the node prehooks
    assert b.grad.item() == 3


def test_retain_grad_sees_every_tensor_hook_whenever_registered(lib):
    def doubling(g):
        return g * 2

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.register_hook(doubling)
    b.retain_grad()
    b.register_hook(doubling)
    b.clone().backward()
    assert b.grad.item() == 4

    a = lib.tensor(1.0, requires_grad=True)
    b = a.clone()
    b.retain_grad()
    b.register_hook(doubling)
    b.clone().backward()
    assert b.grad.item() == 2


def test_accumulate_grad_node_hooks_see_what_the_tensor_hook_returned(lib):
    a = lib.tensor(1.0, requires_grad=True)
    calls = []

    def posthook(grad_inputs, grad_outputs):
        assert same(grad_outputs[0], a * 2)
        assert len(grad_inputs) == 0
        calls.append("post")

    def prehook(grad_outputs):
        assert same(grad_outputs[0], a * 2)
        assert len(grad_outputs) == 1
        calls.append("pre")

    b = a.clone()
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(posthook)
    acc.register_prehook(prehook)
    a.register_hook(lambda g: g * 2)
    b.backward()
    assert calls == ["pre", "post"]


def test_backward_with_inputs_runs_no_hook_of_a_leaf_left_out(lib):
    def failing_tensor_hook(g):
        raise RuntimeError

    def failing_posthook(grad_inputs, grad_outputs):
        raise RuntimeError

    a = lib.tensor(1.0, requires_grad=True)
    a.register_hook(failing_tensor_hook)
    b = lib.tensor(1.0, requires_grad=True)
    c = a.clone()
    c.grad_fn.next_functions[0][0].register_hook(failing_posthook)
    (a + b + c).sum().backward(inputs=[b])
    assert same(b.grad, 1.0)


def test_which_hooks_grad_and_backward_run(lib):
    a = lib.tensor(1.0, requires_grad=True)
    b = a * 2
    c = b * 2
    counts = {"tensor": 0, "pre": 0, "post": 0}

    def count(kind):
        def hook(*args):
            counts[kind] += 1

        return hook

    def taken():
        seen = dict(counts)
        counts.update(tensor=0, pre=0, post=0)
        return seen

    a.register_hook(count("tensor"))
    b.register_hook(count("tensor"))
    acc = b.grad_fn.next_functions[0][0]
    acc.register_hook(count("post"))
    acc.register_prehook(count("pre"))
    b.grad_fn.register_hook(count("post"))
    b.grad_fn.register_prehook(count("pre"))

    lib.autograd.grad(c, inputs=(b), retain_graph=True)
    assert taken() == {"tensor": 1, "pre": 0, "post": 0}
    lib.autograd.grad(c, inputs=(a, b), retain_graph=True)
    assert taken() == {"tensor": 2, "pre": 1, "post": 1}
    c.backward(retain_graph=True)
    assert taken() == {"tensor": 2, "pre": 2, "post": 2}
    c.backward(inputs=(a, b), retain_graph=True)
    assert taken() == {"tensor": 2, "pre": 2, "post": 2}


# --------------------------------------------------------------------------- hooks and in-place


def test_a_hook_registered_after_an_in_place_change_belongs_to_the_new_version(lib):
    counts = [0, 0]

    def before(grad):
        counts[0] += 1
        assert same(grad, [4.0])  # x2 from mul_, x2 from ``after``
        return grad * 2

    def after(grad):
        counts[1] += 1
        assert same(grad, [1.0])
        return grad * 2

    a = lib.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(before)
    b.mul_(2)
    b.register_hook(after)
    b.sum().backward()
    assert counts == [1, 1]
    assert same(a.grad, [8.0])

    seen = []

    def first(grad):
        seen.append(grad)
        return grad * 2

    a = lib.tensor([1.0], requires_grad=True)
    b = a.clone()
    b.register_hook(first)
    b.mul_(2)
    b.mul_(2)
    b.sum().backward()
    assert len(seen) == 1 and same(seen[0], [4.0])
    assert same(a.grad, [8.0])


def test_hooks_on_outputs_of_a_multi_output_custom_function_changed_in_place(lib):
    counts = [0, 0, 0]

    def expecting(i, factor):
        def hook(grad):
            counts[i] += 1
            assert same(grad, lib.ones(3, 3) * factor)

        return hook

    b = lib.ones(3, 3, requires_grad=True)
    out1, out2 = double_and_triple(lib)(b)
    h1 = out1.register_hook(expecting(0, 2))
    h2 = out2.register_hook(expecting(1, 3))
    out1.mul_(2)
    h3 = out1.register_hook(expecting(2, 1))
    (out1 + out2 * 3).sum().backward()
    assert counts == [1, 1, 1]
    for handle in (h1, h2, h3):
        handle.remove()


def test_hooks_on_views_whose_base_changes_through_another_view(lib):
    count = [0]

    def never(grad):
        raise AssertionError("this hook must not run")

    def once(grad):
        count[0] += 1
        assert same(grad, [1.0])

    base = lib.tensor([1.0], requires_grad=True).clone()
    view = base[:]
    view2 = base[:]
    view.register_hook(never)
    view2.register_hook(never)
    view.mul_(2)
    view2.grad_fn  # reading grad_fn brings view2's history up to date  # noqa: B018
    view2.register_hook(once)
    (view + view2).sum().backward()
    assert count[0] == 1


# --------------------------------------------------------------------------- post-accumulate-grad hooks


def test_a_post_accumulate_grad_hook_on_a_non_leaf_is_refused(lib):
    non_leaf = 2.0 * lib.ones(3, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"
    ):
        non_leaf.register_post_accumulate_grad_hook(lambda t: t.sub_(1.0))


def test_post_accumulate_grad_hooks_run_in_registration_order(lib):
    tensor = lib.tensor([0.5, 1.5, 2.5], requires_grad=True)
    before = tensor.detach().clone()

    def step(t):
        t.sub_(t.grad)

    def scale(t):
        t.mul_(4.0)

    tensor.register_post_accumulate_grad_hook(step)
    tensor.register_post_accumulate_grad_hook(scale)
    tensor.sum().backward()
    assert same(tensor, 4.0 * (before - 1.0))


def test_one_post_accumulate_grad_hook_on_two_tensors(lib):
    def step(t):
        t.sub_(t.grad)

    t1 = lib.tensor([0.5, 1.5, 2.5], requires_grad=True)
    t2 = lib.arange(5.0).requires_grad_(True)
    before1, before2 = t1.detach().clone(), t2.detach().clone()
    t1.register_post_accumulate_grad_hook(step)
    t2.register_post_accumulate_grad_hook(step)
    t1.sum().backward()
    t2.sum().backward()
    assert same(t1, before1 - 1.0)
    assert same(t2, before2 - 1.0)


def test_a_post_accumulate_grad_hook_returning_a_value_is_an_error(lib):
    tensor = lib.ones(2, 3, requires_grad=True)
    tensor.register_post_accumulate_grad_hook(lambda t: t.grad)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        tensor.sum().backward()


OTHER_TENSORS = {
    "detach": lambda t: t.detach(),
    "clone": lambda t: t.clone(),
    "view": lambda t: t.view(3),
}


@pytest.mark.parametrize("returned", OTHER_TENSORS.values(), ids=OTHER_TENSORS.keys())
def test_a_post_accumulate_grad_hook_returning_another_tensor_is_an_error(lib, returned):
    tensor = lib.ones(3, requires_grad=True)
    tensor.register_post_accumulate_grad_hook(returned)
    with pytest.raises(RuntimeError, match="hooks should return None."):
        tensor.sum().backward()


def test_a_post_accumulate_grad_hook_may_return_its_tensor(lib):
    """``p.mul_(4)`` returns ``p`` itself: torch takes that as returning nothing."""
    tensor = lib.ones(3, requires_grad=True)
    tensor.register_post_accumulate_grad_hook(lambda p: p.mul_(4.0))
    tensor.sum().backward()
    assert tensor.tolist() == [4.0, 4.0, 4.0] and tensor.grad.tolist() == [1.0, 1.0, 1.0]


def test_an_optimizer_stepped_from_post_accumulate_grad_hooks(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    inputs = lib.rand(2, 3)
    optimizers = {p: lib.optim.Adam([p]) for p in model.parameters()}

    def step(param):
        optimizers[param].step()
        optimizers[param].zero_grad()

    handles = [p.register_post_accumulate_grad_hook(step) for p in model.parameters()]
    reference = copy.deepcopy(model)
    reference_optimizer = lib.optim.Adam(reference.parameters())

    def train(iterations=5):
        for _ in range(iterations):
            model(inputs).sum().backward()
            reference(inputs).sum().backward()
            reference_optimizer.step()
            reference_optimizer.zero_grad()

    train()
    frozen = []
    for p_ref, p in zip(reference.parameters(), model.parameters()):
        assert same(p_ref, p, rtol=1e-5, atol=1e-6)
        frozen.append(p_ref.detach().clone())

    for handle in handles:
        handle.remove()
    train()
    for p_frozen, p_ref, p in zip(frozen, reference.parameters(), model.parameters()):
        assert same(p_frozen, p)
        assert not same(p_ref, p)


def test_a_post_accumulate_grad_hook_lives_as_long_as_its_tensor(lib):
    def make():
        kept = lib.ones(3)

        def hook(t):
            t.sub_(t.grad)
            t.add_(kept)

        tensor = lib.ones(3, requires_grad=True)
        tensor.register_post_accumulate_grad_hook(hook)
        tensor.sum().backward()
        ref = weakref.ref(kept)
        gc.collect()
        return tensor, ref

    gc.disable()
    try:
        tensor, ref = make()
        assert ref() is not None
        del tensor
        gc.collect()
        assert ref() is None
    finally:
        gc.enable()


def test_the_order_of_the_four_kinds_of_hook_on_a_leaf(lib):
    tensor = lib.ones(3, requires_grad=True)

    def acc_post_hook(grad_inputs, grad_outputs):
        tensor.grad = grad_outputs[0].mul(10)

    acc_grad = tensor.view_as(tensor).grad_fn.next_functions[0][0]
    tensor.register_hook(lambda grad: grad.sub(2.0))
    acc_grad.register_prehook(lambda grad_outputs: (grad_outputs[0].div(5.0),))

    def post_accumulate_hook(t):
        t.grad.add_(0.5)

    tensor.register_post_accumulate_grad_hook(post_accumulate_hook)
    acc_grad.register_hook(acc_post_hook)
    tensor.sum().backward()
    # tensor hook, node prehook, post-accumulate hook, node post hook:
    # ((1 - 2) / 5 + 0.5) * 10 = 3
    assert same(tensor.grad, [3.0, 3.0, 3.0])


CAPTURES = {  # the inputs asked for, and how
    "grad of y and x": lambda lib, loss, y, x: lib.autograd.grad(loss, [y, x]),
    "grad of x and y": lambda lib, loss, y, x: lib.autograd.grad(loss, [x, y]),
    "grad of y": lambda lib, loss, y, x: lib.autograd.grad(loss, [y]),
    "grad of x": lambda lib, loss, y, x: lib.autograd.grad(loss, [x]),
    "backward, inputs y and x": lambda lib, loss, y, x: (
        loss.backward(inputs=[y, x]), y.grad, x.grad)[1:],
    "backward, inputs y": lambda lib, loss, y, x: (loss.backward(inputs=[y]), y.grad)[1:],
}  # fmt: skip


@pytest.mark.parametrize("retain", [False, True], ids=["", "retain_grad"])
@pytest.mark.parametrize("hooks", [1, 2])
@pytest.mark.parametrize("capture", CAPTURES.values(), ids=CAPTURES.keys())
def test_what_grad_captures_at_a_hooked_non_leaf_input(capture, hooks, retain):
    """torch's engine captures an input's gradient as it arrived when the input's own node
    runs on (it leads to another input: its tensor hooks run with it), and after the hooks
    when the node does not run (``grad(loss, [y])``: only the capture needs it)."""

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * 2
        if retain:
            y.retain_grad()
        for k in range(hooks):
            y.register_hook(lambda g, k=k: g * (10 + k))
        grads = capture(lib, (y * 3).sum(), y, x)
        return [numpy(g) for g in grads]

    assert_like_torch(program)

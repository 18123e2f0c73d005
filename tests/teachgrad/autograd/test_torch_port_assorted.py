"""Assorted tests of PyTorch's TestAutograd (test_autograd.py): test_retain_grad_cycle,
test_sum_to_with_empty_dim_grad, test_free_deep_graph, test_free_deep_graph_complicated,
test_free_deep_graph_pyfunction, test_naughty_autograd_function_stashing_ctx, test_stack,
test_unbind, test_fill, test_cat, test_cat_negdim_1, test_cat_negdim_2, test_cat_empty,
test_variable_traverse, test_norm_subgradient, test_pow_zero_tensor_gradient,
test_pow_scalar_base, test_dir, test_shape, test_mul_out, test_mul_out_result_requires_grad,
test_diagonal_derivative_requires_grad, test_inplace_view_saved_output,
test_reentrant_with_leaf_variable_hook, test_reentrant_with_non_leaf_variable_hook,
test_autograd_views_codegen.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. The deep graphs have 50000 ops (torch's 150000 and 100000): deep
enough for a recursive free to overflow the stack, and quicker.
"""

import gc
import warnings
import weakref

import pytest

from tests.teachgrad.autograd._port import randn, same

pytestmark = pytest.mark.usefixtures("torch")


def test_retain_grad_cycle(lib):
    counter = [0]
    refs = [None]
    x = lib.ones(5, 5, requires_grad=True)

    def run_test():
        y = x * 2
        y.retain_grad()

        def inc(*args):
            counter[0] += 1

        refs[0] = weakref.ref(y, inc)
        return y / 2

    z = run_test()
    gc.collect()
    assert refs[0]() is None
    assert counter[0] == 1
    z.sum().backward()
    assert same(x.grad, lib.ones(5, 5))


def test_sum_to_with_empty_dim_grad(lib):
    a = lib.rand(4, 0, requires_grad=True)
    b = lib.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    assert same(b.grad, lib.zeros(4, 1))
    assert same(a.grad, lib.zeros(4, 0))


def test_free_deep_graph(lib):
    def scope():
        x = lib.randn(1, requires_grad=True)
        y = x.clone()
        for _ in range(50000):
            y = y + y * 0.000001

    scope()  # freeing the chain does not overflow the stack


def test_free_deep_graph_complicated(lib):
    def scope():
        depth = 50000
        randchoice = lib.randint(2, [depth, 2])
        x = lib.randn(1, requires_grad=True)
        y = x.clone()
        prev_values = [None, None]  # the two previous values, skip connections to y
        for _ in range(depth):
            prev_tensors = [t for t in prev_values[:-1] if t is not None]
            prev_values.append(y)
            prev_values.pop(0)
            y += y * 0.000001
            if len(prev_tensors) == 2:
                y += randchoice[depth - 1].mul(lib.cat(prev_tensors)).sum()

    scope()


def test_free_deep_graph_pyfunction(lib):
    class MyOp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output, grad_output

    def scope():
        x = lib.zeros(1, requires_grad=True)  # (zeros: y + y doubles, and would overflow)
        y = x.clone()
        for _ in range(50000):
            y = MyOp.apply(y, y)

    scope()


def test_naughty_autograd_function_stashing_ctx(lib):
    saved_ctx = []

    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, grad_x):
            saved_ctx.append(ctx)
            return ctx.saved_tensors

    p = lib.zeros(1, requires_grad=True)
    loss = Id.apply(p)
    loss.backward(retain_graph=True)
    del loss
    # the retained graph lives on in the stashed ctx (torch's test once expected an error here)
    assert saved_ctx[0].saved_tensors[0] is p
    loss = Id.apply(p)
    loss.backward()
    del loss
    with pytest.raises(RuntimeError, match="^Trying to backward through the graph a second time"):
        saved_ctx[1].saved_tensors


def test_stack(lib):
    x, y, z = (randn(lib, 10, 10, seed=i, requires_grad=True) for i in range(3))
    stacked = lib.stack([x, y, z], 0)
    grad = randn(lib, 3, 10, 10, seed=3)
    stacked.backward(grad)
    assert same(x.grad, grad[0])
    assert same(y.grad, grad[1])
    assert same(z.grad, grad[2])


def test_unbind(lib):
    stacked = randn(lib, 3, 10, 10, requires_grad=True)
    x, y, z = stacked.unbind()
    grad = randn(lib, 3, 10, 10, seed=1)
    lib.autograd.backward([x, y, z], grad.unbind())
    assert same(stacked.grad, grad)
    # one gradient for one output is enough
    for i in range(3):
        stacked = randn(lib, 3, 10, 10, requires_grad=True)
        outs = stacked.unbind()
        gi = grad.unbind()[i]
        (g,) = lib.autograd.grad(outs[i], stacked, gi)
        expected = lib.stack([gi if j == i else lib.zeros_like(gi) for j in range(3)], dim=0)
        assert same(g, expected)


def test_fill(lib):
    root = randn(lib, 4, 5, requires_grad=True)

    def func(root):
        x = root.clone()
        x.fill_(2)
        return x

    assert lib.autograd.gradcheck(func, [root])
    assert lib.autograd.gradgradcheck(func, [root])


@pytest.mark.parametrize(
    "shapes, dim",
    [
        (((1, 5, 5), (2, 5, 5), (3, 5, 5)), 0),  # test_cat
        (((5, 5, 1), (5, 5, 2), (5, 5, 3)), -1),  # test_cat_negdim_1
        (((5, 1, 5), (5, 2, 5), (5, 3, 5)), -2),  # test_cat_negdim_2
        (((0, 5), (5, 5)), 0),  # test_cat_empty
    ],
)
def test_cat(lib, shapes, dim):
    # (lib.tensor of an empty NumPy array has torch's strides 0, which gradcheck refuses)
    inputs = [lib.randn(*s, dtype=lib.double, requires_grad=True) for s in shapes]

    def cat(*ts):
        return lib.cat(ts, dim)

    assert lib.autograd.gradcheck(cat, inputs)
    assert lib.autograd.gradgradcheck(cat, inputs)
    # the gradient of each input is its slice of the output's gradient
    out = cat(*inputs)
    grad = randn(lib, *out.shape, seed=9)
    out.backward(grad)
    start = 0
    for t in inputs:
        assert same(t.grad, grad.narrow(dim, start, t.shape[dim]))
        start += t.shape[dim]


def test_variable_traverse(lib):
    def get_out_and_unrefed_cycle():
        inp = randn(lib, 10, requires_grad=True)
        tmp = inp.view(10, 1)
        out = tmp.view(10)
        # a reference cycle holding a tensor in the middle of the graph
        my_list = [tmp]
        my_list.append(my_list)
        return out

    out = get_out_and_unrefed_cycle()
    gc.collect()
    out.backward(randn(lib, 10, seed=1))


@pytest.mark.parametrize(
    "size, p", [((10,), 2), ((10, 10), 2), ((10,), 3), ((10,), 1), ((10,), 1.5)]
)
def test_norm_subgradient(lib, size, p):
    x = lib.zeros(*size, requires_grad=True)
    x.norm(p).backward()
    assert x.grad.abs().sum().item() == 0


def test_pow_zero_tensor_gradient(lib):
    for size, exponent in [((10,), lib.zeros(10)), ((10, 10), lib.zeros(10, 10)), ((10,), 0)]:
        x = lib.zeros(*size, requires_grad=True)
        x.pow(exponent).sum().backward()
        assert x.grad.abs().sum().item() == 0


def test_pow_scalar_base(lib):
    a = lib.arange(1, 13, dtype=lib.double).view(3, 4).requires_grad_()
    assert lib.autograd.gradcheck(lambda a: lib.pow(2, a), (a,))


def test_dir(lib):
    x = lib.randn(10, 10)
    keys = dir(x)
    assert "shape" in keys
    # torch's "imag" is for complex tensors only: reading it on a real one raises
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (reading the deprecated ``volatile`` warns)
        for key in keys:
            if key != "imag":
                assert hasattr(x, key), key


def test_shape(lib):
    x = lib.randn(3, 4)
    assert len(x.shape) == 2
    assert x.shape[0] == 3
    assert x.shape[1] == 4


def test_mul_out(lib):
    a = randn(lib, 2, 2, requires_grad=True)
    b = randn(lib, 2, 2, seed=1, requires_grad=True)
    x = lib.zeros_like(a)
    # out= functions do not support automatic differentiation
    with pytest.raises(
        RuntimeError, match=r"^mul\(\): functions with out=\.\.\. arguments don't support"
    ):
        lib.mul(a, b, out=x)
    # the inputs may require grad under no_grad
    with lib.no_grad():
        lib.mul(a, b, out=x)
        assert same(x, a * b)


def test_mul_out_result_requires_grad(lib):
    a = randn(lib, 2, 2)
    b = randn(lib, 2, 2, seed=1)
    x = lib.zeros(2, 2, requires_grad=True)
    with pytest.raises(
        RuntimeError, match=r"^mul\(\): functions with out=\.\.\. arguments don't support"
    ):
        lib.mul(a, b, out=x)


def test_diagonal_derivative_requires_grad(lib):
    a = randn(lib, 5, 6, requires_grad=True)
    b = lib.diagonal(a) ** 2
    c = b.sum()
    (d,) = lib.autograd.grad(c, a, retain_graph=True, create_graph=True)
    assert d.requires_grad


def test_inplace_view_saved_output(lib):
    # an in-place op on a view that saves its output made a reference cycle once
    dealloc = [0]

    class IncrementOnDelete:
        def __call__(self, *args):
            pass

        def __del__(self):
            dealloc[0] += 1

    def test():
        root = randn(lib, 3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(IncrementOnDelete())
        view = copy.view(9)
        lib.nn.functional.relu(view, inplace=True)

    test()
    assert dealloc[0] == 1


def test_reentrant_with_leaf_variable_hook(lib):
    handle = None
    param = lib.rand(10, requires_grad=True)

    def add_gradient_penalty_to_grad(grad):
        handle.remove()
        old_param_grad = grad
        param.grad = None
        with lib.enable_grad():
            g = grad.detach().requires_grad_()
            new_param = param.detach().requires_grad_()
            out = ((g * 2) + new_param).sum()
            out.backward()
        res = g.grad + grad
        param.grad = old_param_grad
        return res

    handle = param.register_hook(add_gradient_penalty_to_grad)
    loss = (param * param).sum()
    loss.backward()
    # the hook's result is added to the .grad it put back: 2p + (2p + 2)
    assert same(param.grad, 4 * param + 2, rtol=1e-6)


def test_reentrant_with_non_leaf_variable_hook(lib):
    handle = None
    param = lib.rand(10, requires_grad=True)

    def manual_increase_gradient(grad):
        handle.remove()
        with lib.enable_grad():
            g = grad.detach().requires_grad_()
            out = ((g * 2) + 5).sum()
            out.backward()
        return g.grad + grad

    tmp = param * param
    handle = tmp.register_hook(manual_increase_gradient)
    tmp.sum().backward()
    assert same(param.grad, 6 * param, rtol=1e-6)


@pytest.mark.parametrize(
    "grad_mode, requires_grad, should_raise",
    [
        (True, False, (None, None, None)),
        (
            True,
            True,
            (
                None,
                "Output 0 of Unbind is a view and is being modified inplace.",
                "Output 1 of Unbind is a view and is being modified inplace.",
            ),
        ),
        (False, True, ("A view was created in no_grad mode and is being modified inplace",) * 3),
        (False, False, (None, None, None)),
    ],
)
def test_autograd_views_codegen(lib, grad_mode, requires_grad, should_raise):
    def check(fn, message):
        if message is None:
            fn()
        else:
            with pytest.raises(RuntimeError, match="^" + message):
                fn()

    inp = lib.rand(2, requires_grad=requires_grad).clone()
    with lib.set_grad_enabled(grad_mode):
        out = inp.view_as(inp)
    assert out._is_view()
    check(lambda: out.add_(1), should_raise[0])

    inp = lib.rand(2, requires_grad=requires_grad).clone()
    with lib.set_grad_enabled(grad_mode):
        outs = inp.unbind()
    assert outs[0]._is_view() and outs[1]._is_view()
    check(lambda: outs[0].add_(1), should_raise[1])
    check(lambda: outs[1].add_(1), should_raise[2])


def test_calculate_shape_of_a_tensor_a_batch_and_a_gradient_edge(lib):
    """torch's private ``autograd._calculate_shape`` (imported by test_autograd.py): the
    output's shape and the gradient's, without a batch dim; a GradientEdge's from its node."""
    x = lib.ones(2, 3, requires_grad=True)
    y = x * 2
    edge = lib.autograd.graph.get_gradient_edge(y)
    calc = lib.autograd._calculate_shape
    assert calc(y, lib.ones(2, 3), False) == ((2, 3), (2, 3))
    out, grad = calc(y, lib.ones(4, 2, 3), True)
    assert (out, grad) == ((2, 3), (2, 3)) and type(grad) is type(y.shape)
    assert calc(edge, lib.ones(5), False) == ((2, 3), (5,))
    with pytest.raises(RuntimeError, match="^Batched grads are not supported with GradientEdge"):
        calc(edge, lib.ones(4, 2, 3), True)


def test_profiling_with_emit_itt_and_use_kineto_as_test_autograd_does(lib):
    """test_autograd.py profiles with ``use_kineto=kineto_available()`` and marks ranges
    with ``emit_itt``: both run (teachgrad has no Kineto and no ITT: kineto_available() is
    False there, and emit_itt's block runs as without it)."""
    x = lib.ones(3, requires_grad=True)
    kineto = lib.autograd.kineto_available()
    assert kineto is (lib.__name__ == "torch")
    with lib.autograd.profiler.profile(use_kineto=kineto) as prof:
        y = (x * 2).sum()
    assert "aten::mul" in [e.name for e in prof.function_events]
    with lib.autograd.profiler.emit_itt(record_shapes=True):
        y.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]

"""Custom autograd Functions, as PyTorch's own autograd tests (test_autograd.py:
test_function*, test_once_differentiable, test_custom_function_*, test_mark_non_differentiable*,
test_return_duplicate*, test_custom_autograd_*, test_clear_saved_tensors_on_access*, ...) check
them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import weakref

import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def graph_desc(fn):
    """torch's test helper: a node's class name with those of the nodes below it."""
    if fn is None:
        return "None"
    below = ", ".join(graph_desc(nxt) for nxt, _ in fn.next_functions)
    return f"{type(fn).__name__}({below})"


def scaled_sum(lib, once):
    """``t1 + k * t2 + t1 * t2`` as a custom Function (``once``: backward is
    ``once_differentiable``) and the check torch's ``_function_test`` makes of it."""
    decorate = lib.autograd.function.once_differentiable if once else (lambda f: f)

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        @decorate
        def backward(ctx, grad_output):
            if once:
                assert not lib.is_grad_enabled()
            t1, t2 = ctx.saved_tensors
            assert isinstance(t1, lib.Tensor) and isinstance(grad_output, lib.Tensor)
            return (
                grad_output + grad_output * t2,
                None,
                grad_output * ctx.pyscalar + grad_output * t1,
            )

    x = randn(lib, 5, 5, seed=1, requires_grad=True)
    y = randn(lib, 5, 5, seed=2, requires_grad=True)
    result = MyFunction.apply(x, 2, y)
    go = lib.ones((), requires_grad=True, dtype=lib.float64)
    result.sum().backward(go, create_graph=True)
    assert same(x.grad, y + 1)
    assert same(y.grad, x + 2)
    assert x.grad.grad_fn is not None
    assert y.grad.grad_fn is not None
    return x, y


def test_a_function_s_gradients_have_history_with_create_graph(lib):
    scaled_sum(lib, once=False)


def test_once_differentiable_runs_without_grad_and_leaves_an_error_node(lib):
    x, y = scaled_sum(lib, once=True)
    expected = "CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))"
    assert graph_desc(x.grad.grad_fn) == expected
    assert graph_desc(y.grad.grad_fn) == expected


@pytest.mark.parametrize("shape", [(1,), ()])
def test_a_function_returning_its_input(lib, shape):
    class Identity(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    v = lib.ones(shape, requires_grad=True)
    Identity.apply(v).backward()
    assert same(v.grad, lib.full(shape, 2.0))
    with lib.no_grad():
        v.grad.zero_()
    Identity.apply(v.clone()).backward()
    assert same(v.grad, lib.full(shape, 2.0))


def test_a_backward_returning_none_gives_no_gradient(lib):
    class NoGrad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return None

    x = lib.ones(1, requires_grad=True)
    NoGrad.apply(x).backward()
    assert x.grad is None
    NoGrad.apply(x**2).backward()
    assert x.grad is None
    NoGrad.apply(x).sum().backward()
    assert x.grad is None
    assert lib.autograd.grad(NoGrad.apply(x), x, allow_unused=True)[0] is None


def test_a_legacy_function_with_a_non_static_forward_is_refused(lib):
    class Legacy(lib.autograd.Function):
        def forward(self, x):
            return x

        def backward(self, grad_output):
            return grad_output

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        instance = Legacy()
    with pytest.raises(
        RuntimeError, match="Legacy autograd function with non-static forward method is deprecated"
    ):
        instance(lib.ones(3, 4))


def test_an_instance_warns_and_the_apply_node_is_named_after_the_class(lib):
    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad_x):
            return grad_x

    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        f = Id()
    assert isinstance(f, Id)
    x = lib.zeros(1, requires_grad=True)
    with pytest.raises(RuntimeError, match="non-static forward method is deprecated"):
        f(x)
    assert Id.apply(x).grad_fn.name() == "IdBackward"


def test_an_exception_in_backward_reaches_the_caller(lib):
    class Fails(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.clone()

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad):
            raise Exception("Simulate error on backward pass")  # noqa: TRY002

    t1 = lib.rand(3, 3, requires_grad=True)
    t2 = lib.rand(3, 3, requires_grad=True)
    out = Fails.apply((t1 + t2) * (t1 + t2))
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        out.sum().backward()


def non_tensor_outputs(lib):
    """torch's function with numbers, None, a bool and a string among its outputs."""

    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            ctx.scale = scale
            ctx.save_for_backward(t1, t2, t3)
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, *grads):
            assert len(grads) == 7
            for i in (0, 2, 3, 5):
                assert grads[i] is None
            scale = ctx.scale
            v1, v2, v3 = ctx.saved_tensors
            return (
                grads[1] * scale + grads[4] * v2 * scale + grads[6],
                grads[1] * v3 * scale + grads[4] * v1 * scale,
                None,
                grads[1] * v2 * scale + grads[4] * scale,
            )

    return MyFunction


def test_a_function_with_non_tensor_inputs_and_outputs(lib):
    fn = non_tensor_outputs(lib)
    t1 = randn(lib, 10, seed=1, requires_grad=True)
    t2 = randn(lib, 10, seed=2, requires_grad=True)
    t3 = randn(lib, 10, seed=3)
    scale = 7
    res = fn.apply(t1, t2, scale, t3)
    assert res[0] == scale
    assert same(res[1], (t1 + t2 * t3) * scale)
    assert res[2] is None
    assert res[3] is True
    assert same(res[4], (t1 * t2 + t3) * scale)
    assert res[5] == "bar"
    assert same(res[6], t1)

    lib.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert t1.grad is not None
    assert t2.grad is not None
    assert t3.grad is None

    def outputs(a, b, c):
        res = fn.apply(a, b, scale, c)
        return res[1], res[4], res[6]

    assert lib.autograd.gradcheck(outputs, (t1, t2, t3))


def test_a_function_of_numbers_only(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, *args):
            return (args[0], args[1], None, args[2])

    t1, t2, t3, scale = 0.25, 0.5, 0.75, 3
    res = MyFunction.apply(t1, t2, scale, t3)
    assert res == (scale, (t1 + t2 * t3) * scale, None, True, (t1 * t2 + t3) * scale, "bar", t1)


def test_a_backward_returning_the_wrong_shape(lib):
    class WrongShape(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return lib.ones(10, dtype=lib.float32)

    x = lib.ones(5, 5, dtype=lib.float32, requires_grad=True)
    with pytest.raises(RuntimeError, match="expected shape"):
        WrongShape.apply(x).sum().backward()


def test_gradcheck_with_an_input_the_function_does_not_use(lib):
    def square_of_first(x, y):
        return x * x

    x = randn(lib, 10, seed=1, requires_grad=True)
    y = randn(lib, 10, seed=2, requires_grad=True)
    assert lib.autograd.gradcheck(square_of_first, (x, y))
    assert lib.autograd.gradgradcheck(square_of_first, (x, y))


# --------------------------------------------------------------------------- setup_context


def test_setup_context_with_one_input(lib):
    class MySquare(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x**2

        @staticmethod
        def setup_context(ctx, inputs, output):
            (x,) = inputs
            ctx.save_for_backward(x)

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 2 * x

    x = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
    (gx,) = lib.autograd.grad(MySquare.apply(x), x)
    assert same(gx, 2 * x)
    # torch's vmap defaults (test_custom_function_vmap_defaults): no rule, and the hook refuses
    assert MySquare.generate_vmap_rule is False and hasattr(MySquare, "vmap")
    with pytest.raises(NotImplementedError, match="^To use autograd.Function with vmap, you must"):
        MySquare.vmap(None, (0,), x)


def test_setup_context_with_a_non_tensor_output(lib):
    class MySquare(lib.autograd.Function):
        @staticmethod
        def forward(x):
            return x**2, x.item() * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            _, two_x = output
            ctx.two_x = two_x

        @staticmethod
        @lib.autograd.function.once_differentiable
        def backward(ctx, grad, _):
            return grad * ctx.two_x

    x = lib.tensor(0.7, dtype=lib.float64, requires_grad=True)
    y, _ = MySquare.apply(x)
    (gx,) = lib.autograd.grad(y, x)
    assert same(gx, 2 * x)


@pytest.mark.parametrize(
    "shape, new_shape, scale_forward, scale_backward",
    [((24,), (3, 8), 7, 11), ((2, 3, 4), (6, 4), -1, 2)],
)
def test_setup_context_with_several_inputs_matches_the_ctx_style(
    lib, shape, new_shape, scale_forward, scale_backward
):
    class MyReshape(lib.autograd.Function):
        @staticmethod
        def forward(x, shape, scale_forward, scale_backward):
            return x.reshape(shape) * scale_forward

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, _, _, scale_backward = inputs
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape

        @staticmethod
        def backward(ctx, grad):
            return grad.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    class MyReshapeRef(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, shape, scale_forward, scale_backward):
            ctx.scale_backward = scale_backward
            ctx.x_shape = x.shape
            return x.reshape(shape) * scale_forward

        @staticmethod
        def backward(ctx, grad):
            return grad.reshape(ctx.x_shape) * ctx.scale_backward, None, None, None

    x = randn(lib, *shape, requires_grad=True)
    args = (new_shape, scale_forward, scale_backward)
    y = MyReshape.apply(x, *args).sum()
    y_ref = MyReshapeRef.apply(x, *args).sum()
    assert same(y, y_ref)
    assert same(lib.autograd.grad(y, x)[0], lib.autograd.grad(y_ref, x)[0])


# --------------------------------------------------------------------------- non-differentiable outputs


def test_a_non_differentiable_mask_output(lib):
    class Positive(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x > 0
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return (grad_output * 0).to(lib.float64)

    x = randn(lib, 5, 5, requires_grad=True)
    mask = Positive.apply(x)
    assert not mask.requires_grad
    x.masked_fill(mask, 0).sum().backward()


def test_a_non_differentiable_output_next_to_a_differentiable_one(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            a, b = x + 1, x + 2
            ctx.mark_non_differentiable(a)
            return a, b

        @staticmethod
        def backward(ctx, grad_a, grad_b):
            assert (grad_a == 0).all()
            assert (grad_b == 1).all()
            return grad_b

    x = randn(lib, 5, 5, requires_grad=True)
    a, b = MyFunction.apply(x)
    assert not a.requires_grad
    assert b.requires_grad
    b.sum().backward()
    assert same(x.grad, lib.ones(5, 5))


def test_a_non_differentiable_output_used_further_sends_no_gradient_back(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x.clone()
            ctx.mark_non_differentiable(output)
            return output

        @staticmethod
        def backward(ctx, grad_output):
            return None

    x = randn(lib, 5, 5, requires_grad=True)
    r = MyFunction.apply(x * x)
    (r * x).sum().backward()
    assert same(x.grad, r)


# --------------------------------------------------------------------------- duplicates and in-place


def test_a_function_returning_the_same_tensor_twice(lib):
    class DoubleDuplicate(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            output = x * 2
            return output, output

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def fn(x):
        a, b = DoubleDuplicate.apply(x)
        assert a is b
        return a + b

    x = randn(lib, 5, 5, requires_grad=True)
    assert lib.autograd.gradcheck(fn, [x])
    assert lib.autograd.gradgradcheck(fn, [x])


def test_an_in_place_function_returning_its_input_twice(lib):
    class DoubleInplace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x, x

        @staticmethod
        def backward(ctx, grad1, grad2):
            return grad1 * 2 + grad2 * 2

    def inplace_fn(x):
        a, b = DoubleInplace.apply(x.clone())
        assert a is b
        return a + b

    x = randn(lib, 5, 5, requires_grad=True)
    assert lib.autograd.gradcheck(inplace_fn, [x])
    assert lib.autograd.gradgradcheck(inplace_fn, [x])


# --------------------------------------------------------------------------- saved tensors and ctx


def test_repeated_double_backward_through_a_function_gives_the_same_numbers(lib):
    def prod_of_last_two(x):
        return x.prod(dim=-1).prod(dim=-1)

    class Mult(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = prod_of_last_two(x)
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return (grad_output * y)[:, None, None] / x

    def second_derivative_twice(x, y):
        results = []
        for _ in range(2):
            (gy,) = lib.autograd.grad(y[0], x, create_graph=True)
            (ggy,) = lib.autograd.grad(gy[0, 0, 0], x, retain_graph=True)
            results.append(ggy[0, 0, 1])
        assert same(results[0], results[1])

    x = lib.ones(2, 4, 4, dtype=lib.float64).requires_grad_()
    second_derivative_twice(x, prod_of_last_two(x))
    second_derivative_twice(x, Mult.apply(x))


def test_saved_values_are_not_freed_before_a_double_backward_needs_them(lib):
    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x**2
            ctx.save_for_backward(x, y)
            return y

        @staticmethod
        def backward(ctx, grad_output):
            x, _ = ctx.saved_tensors
            return grad_output * 2 * x

    class SquareFromOutput(Square):
        @staticmethod
        def backward(ctx, grad_output):
            x, y = ctx.saved_tensors
            return grad_output * 2 * y / x

    x = lib.tensor(2.0, dtype=lib.float64).requires_grad_()
    for fn in (Square.apply, SquareFromOutput.apply):
        assert lib.autograd.gradcheck(fn, x)
        assert lib.autograd.gradgradcheck(fn, x)
        y = fn(x)
        lib.autograd.grad(y, x, create_graph=True)
        lib.autograd.grad(y, x)


def test_a_saved_output_keeps_its_output_number(lib):
    x = randn(lib, 10, requires_grad=True)

    class Halves(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:5], x[5:]

        @staticmethod
        def backward(ctx, *grad):
            return lib.cat(grad)

    a, b = Halves.apply(x)
    assert b.output_nr == 1
    seen = []

    class Saves(lib.autograd.Function):
        @staticmethod
        def forward(ctx, b):
            ctx.save_for_backward(b)
            return b * 2

        @staticmethod
        def backward(ctx, grad_b):
            (b,) = ctx.saved_tensors
            seen.append(b.output_nr)

    Saves.apply(b).sum().backward()
    assert seen == [1]


# --------------------------------------------------------------------------- saved tensors read once


def _read_once(lib, reads, refs):
    """A Function with ``clear_saved_tensors_on_access = True`` that saves ``2 * x`` (made in
    forward: only the saved tensors hold it) and whose backward reads them ``reads`` times."""

    class Twice(lib.autograd.Function):
        clear_saved_tensors_on_access = True

        @staticmethod
        def forward(ctx, x):
            t = x * 2
            refs.append(weakref.ref(t))
            ctx.save_for_backward(t)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            for _ in range(reads):
                (t,) = ctx.saved_tensors
            return g * t / t * 3

    return Twice.apply


def _first_line(error):
    return str(error.value).splitlines()[0]


def test_clear_saved_tensors_on_access_frees_them_when_read(lib):
    refs = []
    x = randn(lib, 3, requires_grad=True)
    y = _read_once(lib, 1, refs)(x)
    assert refs[0]() is not None  # (the saved tensors hold it)
    y.sum().backward(retain_graph=True)
    assert same(x.grad, [3.0, 3.0, 3.0])
    assert refs[0]() is None  # read once, then dropped by backward: freed
    with pytest.raises(RuntimeError) as error:  # (a second backward reads them again)
        y.sum().backward()
    assert _first_line(error).startswith("saved_tensors can only be accessed once when")


def test_clear_saved_tensors_on_access_double_access_error(lib):
    x = randn(lib, 3, requires_grad=True)
    with pytest.raises(RuntimeError) as error:
        _read_once(lib, 2, [])(x).sum().backward()
    assert _first_line(error) == (
        "saved_tensors can only be accessed once when clear_saved_tensors_on_access=True is set "
        "on the autograd.Function. Either access saved_tensors only once, or set "
        "clear_saved_tensors_on_access=False."
    )


def test_clear_saved_tensors_on_access_is_off_by_default(lib):
    assert lib.autograd.Function.clear_saved_tensors_on_access is False

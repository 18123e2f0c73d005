"""Custom Functions in forward-mode AD (their ``jvp``), as PyTorch's own autograd tests
(test_autograd.py: test_custom_function_save_for_forward,
test_custom_function_forward_mode_inplace_checks, test_custom_function_forward_mode_view_checks,
test_custom_function_forward_mode_non_tensor_before_tensor_args,
test_custom_function_forward_mode_forward_is_no_op,
test_custom_function_mark_dirty_not_differentiable,
test_custom_function_forward_mode_wrong_formula) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import pytest

pytestmark = pytest.mark.usefixtures("torch")


def test_custom_function_save_for_forward(lib):
    fwAD = lib.autograd.forward_ad

    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, z):
            ctx.save_for_backward(x, y)
            ctx.save_for_forward(x, y)
            ctx.z = z
            ctx.prod = x * y
            return z * ctx.prod

        @staticmethod
        def jvp(ctx, x_t, y_t, _):
            x_p, y_p = ctx.saved_tensors
            return ctx.z * (y_p * x_t + x_p * y_t)

        @staticmethod
        def vjp(ctx, grad_out):
            x, y = ctx.saved_tensors
            return ctx.z * grad_out * y, ctx.z * grad_out * x, None

    a = lib.tensor(1.0, requires_grad=True, dtype=lib.double)
    t = lib.tensor(1.0, dtype=lib.double)
    b = lib.tensor(2.0, requires_grad=True, dtype=lib.double)
    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        out = Func.apply(a_dual, b, 4)
        out.backward()
    assert lib.autograd.gradcheck(Func.apply, (a, b, 4), check_forward_ad=True)

    # saved for backward but not for forward: jvp sees nothing saved
    class Func2(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.clone()

        @staticmethod
        def jvp(ctx, x_t):
            assert len(ctx.saved_tensors) == 0
            return x_t

        @staticmethod
        def vjp(ctx, grad_out):
            (x,) = ctx.saved_tensors
            assert len(ctx.saved_tensors) == 1
            return grad_out

    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        out = Func2.apply(a_dual)
        out.backward()
    assert lib.autograd.gradcheck(Func2.apply, (a,), check_forward_ad=True)


def test_custom_function_forward_mode_inplace_checks(lib):
    fwAD = lib.autograd.forward_ad

    class InplaceFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo, flag):
            ctx.mark_dirty(foo)
            ctx.flag = flag
            foo.mul_(2)
            return foo

        @staticmethod
        def jvp(ctx, gI, _):
            if ctx.flag:
                return 2 * gI  # not in place: wrong for a dirty input
            gI.mul_(2)
            return gI

    a = lib.rand(2, dtype=lib.double)
    t = lib.rand(2, dtype=lib.double)
    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        InplaceFn.apply(a_dual, False)
        with pytest.raises(
            RuntimeError,
            match="^An inplace custom Function is not modifying the forward mode gradients inplace",
        ):
            a_dual = fwAD.make_dual(a.clone(), t.clone())
            InplaceFn.apply(a_dual, True)


@pytest.mark.parametrize(
    "flag, message",
    [
        ("ok", None),
        ("not_a_view", "jvp is not returning a view"),
        ("not_a_view_of_inp", "jvp is not returning a view of the given"),
        ("not_a_view_of_inp_base", "jvp is not returning a view of the same base"),
    ],
)
def test_custom_function_forward_mode_view_checks(lib, flag, message):
    class ViewFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo, flag):
            ctx.flag = flag
            ctx.size = foo.size()
            return foo.narrow(0, 0, 2)

        @staticmethod
        def vjp(ctx, gO):
            gI = lib.zeros(ctx.size, dtype=gO.dtype)
            gI.narrow(0, 0, 2).copy_(gO)
            return gI, None

        @staticmethod
        def jvp(ctx, gI, _):
            res = gI.narrow(0, 0, 2)
            if ctx.flag != "ok":
                res = res.clone()  # break the view in the tangent
            if ctx.flag in ["not_a_view_of_inp", "not_a_view_of_inp_base"]:
                res = res.view_as(res)  # a view, of the wrong tensor
            return res

    inp = lib.rand(4, 4, dtype=lib.double, requires_grad=True)

    def test_fn(inp):
        if flag == "not_a_view_of_inp_base":
            inp = inp.view_as(inp)
        return ViewFn.apply(inp, flag)

    if message is None:
        assert lib.autograd.gradcheck(test_fn, inp, check_forward_ad=True)
    else:
        with pytest.raises(RuntimeError, match=message):
            lib.autograd.gradcheck(test_fn, inp, check_forward_ad=True)


def test_custom_function_forward_mode_non_tensor_before_tensor_args(lib):
    fwAD = lib.autograd.forward_ad

    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, nt, x, nt2, y):
            return x * 2 + y * 3

        @staticmethod
        def jvp(ctx, nt, x_t, nt2, y_t):
            assert nt is None
            assert nt2 is None
            return x_t * 2 + y_t * 3

    x = lib.tensor(1.0, dtype=lib.double)
    t = lib.tensor(1.0, dtype=lib.double)
    y = lib.tensor(1.0, dtype=lib.double)
    with fwAD.dual_level():
        dual_x = fwAD.make_dual(x, t)
        MyFn.apply(1, dual_x, 1, y)
    assert lib.autograd.gradcheck(
        MyFn.apply,
        (1, x.requires_grad_(True), 1, y.requires_grad_(True)),
        check_forward_ad=True,
        check_backward_ad=False,
        check_batched_grad=False,
    )


@pytest.mark.parametrize("kind", ["view_as", "self", "mul_by_2"])
def test_custom_function_forward_mode_forward_is_no_op(lib, kind):
    fwAD = lib.autograd.forward_ad
    error_regex = r"A custom Function's forward is returning a view \(or an input as-is\)"
    # an input returned as-is counts as x.view_as(x): its tangent must be a view of x's
    fn = {"view_as": lambda x: x.view_as(x), "self": lambda x: x, "mul_by_2": lambda x: x * 2}[kind]

    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x + y, x

        @staticmethod
        def vjp(ctx, gO1, gO2):
            return gO1 + gO2, gO1

        @staticmethod
        def jvp(ctx, x_t, y_t):
            return x_t + y_t, fn(x_t)

    a = lib.tensor(1.0, dtype=lib.double, requires_grad=True)
    t = lib.tensor(1.0, dtype=lib.double)
    b = lib.tensor(1.0, dtype=lib.double, requires_grad=True)
    c = lib.tensor(1.0, dtype=lib.double)
    t2 = lib.tensor(1.0, dtype=lib.double)
    d = lib.tensor(1.0, dtype=lib.double)
    with fwAD.dual_level():
        a_dual = fwAD.make_dual(a, t)
        c_dual = fwAD.make_dual(c, t2)
        if kind == "view_as":
            _, out2 = MyFn.apply(a_dual, b)
            assert fwAD.unpack_dual(out2).tangent._base is t
            _, out2 = MyFn.apply(c_dual, d)
            assert fwAD.unpack_dual(out2).tangent._base is t2
        else:
            with pytest.raises(RuntimeError, match=error_regex):
                MyFn.apply(a_dual, b)
            with pytest.raises(RuntimeError, match=error_regex):
                MyFn.apply(c_dual, d)
    if kind == "view_as":
        assert lib.autograd.gradcheck(MyFn.apply, (a, c), check_forward_ad=True)
    else:
        with pytest.raises(RuntimeError, match=error_regex):
            lib.autograd.gradcheck(MyFn.apply, (a, c), check_forward_ad=True)


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("jvp_err", [True, False])
def test_custom_function_mark_dirty_not_differentiable(lib, requires_grad, jvp_err):
    fwAD = lib.autograd.forward_ad

    class InplaceMul(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            result = x.mul_(2)
            ctx.mark_dirty(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            pass

        @staticmethod
        def jvp(ctx, x_t):
            return x_t if jvp_err else x_t.mul_(2)

    # a tensor marked dirty is returned as-is
    z = lib.tensor(1.0, requires_grad=requires_grad)
    x = z.clone()
    y = InplaceMul.apply(x)
    assert x is y
    assert x.item() == z.item() * 2
    # jvp must change the input's tangent in place when mark_dirty is set
    with fwAD.dual_level():
        x_tangent = lib.ones_like(x)
        x_dual = fwAD.make_dual(x, x_tangent)
        if jvp_err:
            with pytest.raises(
                RuntimeError, match="jvp function must modify the corresponding gradient inplace"
            ):
                InplaceMul.apply(x_dual)
        else:
            out_dual = InplaceMul.apply(x_dual)
            _, out_tangent = fwAD.unpack_dual(out_dual)
            assert out_dual is x_dual
            assert out_tangent is x_tangent


def test_custom_function_forward_mode_wrong_formula(lib):
    class UserFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo, should_fail):
            ctx.should_fail = should_fail
            return foo * 2

        @staticmethod
        def vjp(ctx, gO):
            return 2 * gO, None

        @staticmethod
        def jvp(ctx, gI, _):
            return 3 * gI if ctx.should_fail else 2 * gI  # (3: a wrong formula)

    inp = lib.rand(10, dtype=lib.double, requires_grad=True)
    assert lib.autograd.gradcheck(UserFn.apply, (inp, False), check_forward_ad=True)
    with pytest.raises(
        RuntimeError, match="^Jacobian computed with forward mode mismatch for output 0"
    ):
        lib.autograd.gradcheck(UserFn.apply, (inp, True), check_forward_ad=True)

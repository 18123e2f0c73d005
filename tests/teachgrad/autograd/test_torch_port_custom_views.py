"""Custom Functions that return views or change their inputs in place, as PyTorch's own
autograd tests (test_autograd.py: test_autograd_simple_views_python,
test_autograd_complex_views_python, test_autograd_inplace_views_python,
test_custom_function_return_view_in_nograd, test_custom_function_error,
test_custom_function_local_inplace) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts, as torch asserts them today: a view returned by a custom Function
(or made from its temporary) may not be changed in place, where old torch only warned.
"""

import warnings

import pytest

pytestmark = pytest.mark.usefixtures("torch")


def simple_view_functions(lib, bw_called, ga_nz):
    """torch's IdOneOutput, IdTwoOutput and ViewOfTemp: an input (or its view), an input
    and a sum, and a view of a temporary."""

    class IdOneOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, make_view):
            return a.narrow(0, 0, 2) if make_view else a.clone()

        @staticmethod
        def backward(ctx, ga):
            bw_called[0] += 1
            return ga, None, None

    class IdTwoOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, make_view):
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            ga_nz[0] = not bool(ga.eq(0).all())
            return ga + gab, gab, None

    class ViewOfTemp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, make_view):
            ctx.save_for_backward(a)
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            b = a.clone()
            return b.select(0, 0)

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            (a,) = ctx.saved_tensors
            res = lib.zeros_like(a)
            res.select(0, 0).copy_(grad)
            return res, None

    return {"one_output": IdOneOutput, "two_output": IdTwoOutput, "view_of_temp": ViewOfTemp}


@pytest.mark.parametrize("fn_id", ["one_output", "two_output", "view_of_temp"])
@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("make_view", [True, False])
def test_autograd_simple_views_python(lib, fn_id, inplace, make_view):
    bw_called, ga_nz = [0], [True]
    function = simple_view_functions(lib, bw_called, ga_nz)[fn_id]

    def fn(a, b):
        a, b = a.clone(), b.clone()  # (gradcheck's inputs are never changed)
        if fn_id == "two_output":
            tmp1, tmp2 = function.apply(a, b, make_view)
            if inplace:
                tmp1 += 3
                tmp2 += 3
            else:
                tmp1, tmp2 = tmp1 + 3, tmp2 + 3
            tmp = tmp1 * tmp2
        else:
            tmp = (
                function.apply(a, b, make_view)
                if fn_id == "one_output"
                else function.apply(a + b, make_view)
            )
            if inplace:
                tmp += 3
            else:
                tmp = tmp + 3
        return tmp.sum()

    a = lib.ones(2, dtype=lib.double, requires_grad=True)
    b = lib.ones(2, dtype=lib.double, requires_grad=True)
    if inplace and (make_view or fn_id == "view_of_temp"):
        name = function.__name__
        with pytest.raises(
            RuntimeError, match=f"^Output 0 of {name} is a view and is being modified inplace"
        ):
            fn(a, b)
        return
    assert lib.autograd.gradcheck(fn, (a, b))
    bw_called[0] = 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fn(a, b).backward()
    assert bw_called[0] == 1
    assert ga_nz[0]


def test_autograd_complex_views_python(lib):
    bw_called = [0]

    class ComplexView(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, idx):
            res = a.narrow(0, idx, 1)
            res = a.select(0, idx)
            ctx.save_for_backward(a)
            ctx.idx = idx
            return res

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            (a,) = ctx.saved_tensors
            res = lib.zeros_like(a)
            res.select(0, ctx.idx).copy_(grad)
            return res, None

    a = lib.ones(2, requires_grad=True)
    out = ComplexView.apply(a.clone(), 1)
    out.sum().backward()
    assert bw_called[0] == 1

    out = ComplexView.apply(a.clone(), 1)
    with pytest.raises(
        RuntimeError, match="^Output 0 of ComplexView is a view and is being modified inplace"
    ):
        out += 1


def test_autograd_inplace_views_python(lib):
    bw_called = [0]

    class MyAdder(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            return grad, grad

    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2, requires_grad=True)
    for extra_inplace, as_view in [(False, False), (True, False), (False, True)]:
        bw_called[0] = 0
        c = MyAdder.apply(a.clone().view_as(a) if as_view else a.clone(), b)
        if extra_inplace:
            c += 2
        c.sum().backward()
        assert bw_called[0] == 1

    # mark_dirty is for inputs: anything else marked warns
    class MyAdderBad(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            c = 3 * a
            c.add_(b)
            ctx.mark_dirty(c)
            return c

        @staticmethod
        def backward(ctx, grad):
            grad = 3 * grad
            return grad, grad

    with pytest.warns(
        UserWarning, match=r"^ctx.mark_dirty\(\) received a tensor that was not an input"
    ):
        MyAdderBad.apply(a.clone(), b)

    class MyBadAdder(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, ga + gab

    for extra_inplace in (False, True):
        bw_called[0] = 0
        c, d = MyBadAdder.apply(a.clone(), b)
        if extra_inplace:
            c += 2
        (c * d).sum().backward()
        assert bw_called[0] == 1
    with pytest.raises(RuntimeError) as raised:
        MyBadAdder.apply(a.clone().view_as(a), b)
    first = str(raised.value).splitlines()[0]  # (torch's whole first line, word for word)
    assert first.startswith(
        "If your Function modifies inplace an input that is a view of another Tensor, your "
        "Function cannot return more than one Tensor. This is not supported by the current "
        "autograd engine. You should either make sure the input is not a view"
    )
    assert first.endswith("if you need help to do this change.")

    class MyOutPlaceAdder(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a.clone(), a + b

        @staticmethod
        def backward(ctx, ga, gab):
            return ga + gab, ga + 2 * gab

    with pytest.raises(
        RuntimeError,
        match="^Some elements marked as dirty during the forward method were not returned as output.",
    ):
        MyOutPlaceAdder.apply(a.clone().view_as(a), b)


def test_custom_function_return_view_in_nograd(lib):
    class Alias(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x[:]

        @staticmethod
        def backward(ctx, gx):
            return gx

    inp = lib.rand(2, requires_grad=True)
    with lib.no_grad():
        output = Alias.apply(inp)
    with lib.no_grad():
        expected_output = inp[:]
    # it behaves as the same op would outside a custom Function
    assert output.requires_grad == expected_output.requires_grad
    with pytest.raises(
        RuntimeError, match="^A view was created in no_grad mode and is being modified inplace"
    ):
        output.zero_()


def test_custom_function_error(lib):
    class BadFw(lib.autograd.Function):
        @staticmethod
        def backward(ctx, foo):
            return foo

    class BadBw(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo):
            return foo.clone()

    inp = lib.rand(1, requires_grad=True)
    with pytest.raises(
        NotImplementedError,
        match="^You must implement the forward function for custom autograd.Function.",
    ):
        BadFw.apply(inp)
    with pytest.raises(
        NotImplementedError, match="^You must implement either the backward or vjp method"
    ):
        BadBw.apply(inp).sum().backward()


def test_custom_function_local_inplace(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp, inplace):
            view = inp.clone()[:3]
            if inplace:
                view += 2
            return view

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    base = lib.rand(10, requires_grad=True)
    foo = MyFn.apply(base, False)
    assert foo.grad_fn.__class__.__name__ == "MyFnBackward"
    foo = MyFn.apply(base, True)
    assert foo.grad_fn.__class__.__name__ == "MyFnBackward"

"""``ctx._is_pure_view``, as PyTorch's own autograd test (test_autograd.py:
_do_test_autograd_simple_views_python, its ``pure_view`` cases) checks it: a custom
Function that says its output is a plain view gets an ordinary view, which may be changed
in place (the graph is rewritten as for a built-in view, bypassing the custom backward);
with more than one input or output tensor it is refused.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture).
"""

import pytest

pytestmark = pytest.mark.usefixtures("torch")


def pure_view_functions(lib, bw_called):
    """torch's IdOneOutput, IdTwoOutput and ViewOfTemp, each setting ``_is_pure_view``."""

    class IdOneOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, make_view, pure_view):
            ctx._is_pure_view = pure_view
            return a.narrow(0, 0, 2) if make_view else a.clone()

        @staticmethod
        def backward(ctx, ga):
            bw_called[0] += 1
            return ga, None, None

    class IdTwoOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, make_view, pure_view):
            ctx._is_pure_view = pure_view
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            return a, a + b

        @staticmethod
        def backward(ctx, ga, gab):
            bw_called[0] += 1
            return ga + gab, gab, None, None

    class ViewOfTemp(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, make_view, pure_view):
            ctx._is_pure_view = pure_view
            ctx.save_for_backward(a)
            a = a.narrow(0, 0, 2) if make_view else a.clone()
            return a.clone().select(0, 0)

        @staticmethod
        def backward(ctx, grad):
            bw_called[0] += 1
            (a,) = ctx.saved_tensors
            res = lib.zeros_like(a)
            res.select(0, 0).copy_(grad)
            return res, None, None

    return {"one_output": IdOneOutput, "two_output": IdTwoOutput, "view_of_temp": ViewOfTemp}


ERRORS = {
    "one_output": None,
    "two_output": "^Pure view custom Function can only have one input Tensor and one output Tensor",
    "view_of_temp": "^a view of a leaf Variable that requires grad is being used in an in-place",
}


@pytest.mark.parametrize("fn_id", ["one_output", "two_output", "view_of_temp"])
@pytest.mark.parametrize("inplace", [True, False])
@pytest.mark.parametrize("make_view", [True, False])
def test_autograd_simple_views_python_pure_view(lib, fn_id, inplace, make_view):
    bw_called = [0]
    function = pure_view_functions(lib, bw_called)[fn_id]

    def fn(a, b):
        a, b = a.clone(), b.clone()
        if fn_id == "two_output":
            tmp1, tmp2 = function.apply(a, b, make_view, True)
            if inplace:
                tmp1 += 3
                tmp2 += 3
            else:
                tmp1, tmp2 = tmp1 + 3, tmp2 + 3
            return (tmp1 * tmp2).sum()
        if fn_id == "one_output":
            tmp = function.apply(a, make_view, True)
        else:
            tmp = function.apply(a + b, make_view, True)
        if inplace:
            tmp += 3
        else:
            tmp = tmp + 3
        return tmp.sum()

    a = lib.ones(2, dtype=lib.double, requires_grad=True)
    b = lib.ones(2, dtype=lib.double, requires_grad=True)
    raises = fn_id == "two_output" or fn_id == "view_of_temp" and inplace
    if raises:
        with pytest.raises(RuntimeError, match=ERRORS[fn_id]):
            fn(a, b)
        return
    assert lib.autograd.gradcheck(fn, (a, b))
    bw_called[0] = 0
    fn(a, b).abs().backward()
    # replayed as a built-in view: the custom backward is not called
    assert bw_called[0] == (0 if fn_id == "one_output" and inplace and make_view else 1)


def test_is_pure_view_is_a_bool_and_write_only(lib):
    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, value):
            ctx._is_pure_view = value
            return x.view_as(x)

        @staticmethod
        def backward(ctx, grad):
            return grad, None

    x = lib.ones(2, requires_grad=True)
    with pytest.raises(TypeError, match=r"^set_pure_view received an invalid combination"):
        Id.apply(x, 1)

    class Read(Id):
        @staticmethod
        def forward(ctx, x, value):
            return ctx._is_pure_view

    with pytest.raises(AttributeError, match="'_is_pure_view' .* is not readable"):
        Read.apply(x, True)


def test_pure_view_returned_as_is_follows_its_base(lib):
    """An input returned as-is by a pure-view Function is an ordinary alias of it: changing
    it in place rewrites its base's history (CopySlices), as for ``x.view_as(x)``."""

    class Same(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx._is_pure_view = True
            return a

        @staticmethod
        def backward(ctx, grad):
            return grad

    leaf = lib.ones(3, requires_grad=True)
    x = leaf * 1
    out = Same.apply(x)
    assert out._base is x
    out.mul_(2)
    assert out.grad_fn.name() == "AsStridedBackward0"
    assert x.grad_fn.name() == "torch::autograd::CopySlices"
    x.sum().backward()
    assert leaf.grad.tolist() == [2.0, 2.0, 2.0]

"""What a custom Function's forward declares on ``ctx`` and what its backward returns,
checked as PyTorch's own autograd tests check them (test_autograd.py:
TestFunctionAssertMessages, test_custom_function_mark_output_view_of_intermediate,
test_autograd_inplace_views_creation_meta, test_invalid_gradients, test_grad_dtype's
message; test_return_duplicate_inplace's is in test_torch_port_custom_views.py): the
exception class and torch's first line.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture).
"""

import contextlib
import warnings

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def custom(lib, forward, backward=lambda ctx, *g: g[0]):
    """A custom Function of one input with the given forward(ctx, x) and backward."""
    return type(
        "Custom",
        (lib.autograd.Function,),
        {"forward": staticmethod(forward), "backward": staticmethod(backward)},
    )


def first_line(raised) -> str:
    return str(raised.value).splitlines()[0]


DECLARATIONS = {
    "mark_non_differentiable of a string": (
        lambda ctx, x: ctx.mark_non_differentiable("notatensor"),
        "mark_non_differentiable only accepts variable arguments, but got ",
    ),
    "mark_non_differentiable of a number among tensors": (
        lambda ctx, x: ctx.mark_non_differentiable(x, 3),
        "mark_non_differentiable only accepts variable arguments, but got ",
    ),
    "mark_dirty of a string": (
        lambda ctx, x: ctx.mark_dirty("notatensor"),
        "mark_dirty can only accept variables, but argument ",
    ),
    "dirty_tensors assigned a number": (
        lambda ctx, x: setattr(ctx, "dirty_tensors", 1),
        "autograd internal error: dirty_tensors attribute is expected to be a tuple but is ",
    ),
    "non_differentiable assigned a number": (
        lambda ctx, x: setattr(ctx, "non_differentiable", 1),
        "autograd internal error: non_differentiable attribute is expected to be a tuple but is ",
    ),
    "to_save assigned a list": (
        lambda ctx, x: setattr(ctx, "to_save", [x]),
        "autograd internal error: to_save attribute is expected to be a tuple but is ",
    ),
}


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("declare, message", DECLARATIONS.values(), ids=DECLARATIONS.keys())
def test_what_forward_declares_on_ctx_is_checked(lib, declare, message, requires_grad):
    """(Recorded or not: torch checks the declarations whenever apply runs.)"""
    Custom = custom(lib, lambda ctx, x: (declare(ctx, x), x.clone())[1])
    with pytest.raises(RuntimeError) as raised:
        Custom.apply(lib.ones(2, requires_grad=requires_grad))
    assert first_line(raised) == message


NOT_AN_INPUT = (
    "ctx.mark_dirty() received a tensor that was not an input. Only input Tensors that have been "
    "mutated should be passed to ctx.mark_dirty()."
)

MADE_INSIDE = {
    "a view of a clone": lambda lib, x: x.clone().view_as(x),
    "a view of a new tensor": lambda lib, x: lib.ones(3)[:2],
    "a view of a detached input": lambda lib, x: x.detach()[:2],
}


@pytest.mark.parametrize("make", MADE_INSIDE.values(), ids=MADE_INSIDE.keys())
def test_marking_dirty_a_view_made_inside_forward_is_an_error(lib, make):
    def forward(ctx, x):
        out = make(lib, x)
        ctx.mark_dirty(out)
        return out

    with pytest.raises(RuntimeError) as raised:
        custom(lib, forward).apply(lib.ones(2, requires_grad=True).clone())
    assert first_line(raised) == NOT_AN_INPUT


def test_marking_dirty_a_new_tensor_only_warns(lib):
    def forward(ctx, x):
        out = x.clone()
        ctx.mark_dirty(out)
        return out

    with pytest.warns(UserWarning, match="received a tensor that was not an input"):
        custom(lib, forward).apply(lib.ones(2, requires_grad=True))


@pytest.mark.parametrize("make", [lambda x: x.clone(), lambda x: x.clone().view_as(x)])
def test_unrecorded_marking_dirty_what_is_not_an_input_says_nothing(lib, make):
    def forward(ctx, x):
        out = make(x)
        ctx.mark_dirty(out)
        return out

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        custom(lib, forward).apply(lib.ones(2))  # (nothing requires grad: nothing recorded)


MODES = {
    "grad": contextlib.nullcontext,
    "no_grad": lambda lib: lib.no_grad(),
    "inference_mode": lambda lib: lib.inference_mode(),
}


@pytest.mark.parametrize("outputs", [1, 2])
@pytest.mark.parametrize("made_in", ["no_grad", "inference_mode"])
def test_a_view_a_custom_function_made_under_no_grad_is_still_its_view(lib, made_in, outputs):
    """torch marks the views a custom Function returns in every grad mode: changed in place
    later with grad mode on, the custom-Function message (not the no_grad-view one)."""

    def forward(ctx, x):
        return (x.view_as(x), x[:1]) if outputs == 2 else x.view_as(x)

    base = lib.rand(2, 3, requires_grad=True).clone()
    with MODES[made_in](lib):
        v = custom(lib, forward).apply(base)
    v = v[0] if outputs == 2 else v
    with pytest.raises(RuntimeError) as raised:
        v.add_(1)
    assert first_line(raised) == (
        "A view was created in no_grad mode and is being modified inplace with grad mode "
        "enabled. This view was created inside a custom Function (or because an input was "
        "returned as-is) and the autograd logic to handle view+inplace would override the "
        "custom backward associated with the custom Function, leading to incorrect gradients. "
        "This behavior is forbidden. You can fix this by cloning the output of the custom "
        "Function."
    )


# --------------------------------------------------------------------------- torch's exact first lines


def test_save_for_backward_of_a_string(lib):
    def forward(ctx, x):
        ctx.save_for_backward("x")
        return x * 2

    with pytest.raises(TypeError) as raised:
        custom(lib, forward).apply(lib.ones(2, requires_grad=True))
    assert first_line(raised) == (
        "save_for_backward can only save variables, but argument 0 is of type str"
    )


def test_a_gradient_of_the_wrong_shape(lib):
    Custom = custom(lib, lambda ctx, x: x * 2, lambda ctx, g: lib.ones(10, dtype=lib.float32))
    with pytest.raises(RuntimeError) as raised:
        Custom.apply(lib.ones(5, 5, requires_grad=True)).sum().backward()
    assert first_line(raised) == (
        "Function CustomBackward returned an invalid gradient at index 0 - got [10] but expected "
        "shape compatible with [5, 5]"
    )


def test_too_few_gradients(lib):
    class Two(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            return x * y

        @staticmethod
        def backward(ctx, g):
            return g

    a = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as raised:
        Two.apply(a, a).sum().backward()
    assert first_line(raised) == (
        "function TwoBackward returned an incorrect number of gradients (expected 2, got 1)"
    )


def test_a_grad_of_another_dtype(lib):
    x = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError) as raised:
        x.grad = lib.ones(2, dtype=lib.float64)
    assert first_line(raised).endswith(
        "Diverging the dtypes of a tensor and its gradient may break downstream systems that "
        "assume they match."
    )


# --------------------------------------------------------------------------- boxed gradients


def boxed_pair(lib, seen):
    class Boxed(lib.autograd.Function):
        boxed_grads_call = True

        @staticmethod
        def forward(ctx, x, y):
            return x * 2, y * 3

        @staticmethod
        def backward(ctx, grads):
            seen.append((type(grads), len(grads)))
            g, h = grads
            grads.clear()  # (what boxing is for: free a gradient once it is used)
            return g * 2, h * 3

    return Boxed


def test_a_boxed_backward_takes_its_gradients_as_one_list(lib):
    seen = []
    Boxed = boxed_pair(lib, seen)
    x = lib.ones(3, requires_grad=True)
    y = lib.ones(3, requires_grad=True)
    a, b = Boxed.apply(x, y)
    (a.sum() + b.sum()).backward()
    assert seen == [(list, 2)]
    assert x.grad.tolist() == [2.0] * 3 and y.grad.tolist() == [3.0] * 3
    a, _ = Boxed.apply(x, y)
    a.sum().backward()  # (the other output's gradient: zeros, materialized)
    assert x.grad.tolist() == [4.0] * 3 and y.grad.tolist() == [3.0] * 3


def test_grad_fn_apply_runs_the_custom_backward_as_it_is(lib):
    seen = []
    a, _ = boxed_pair(lib, seen).apply(lib.ones(3, requires_grad=True), lib.ones(3))
    result = a.grad_fn.apply(lib.ones(3), lib.ones(3))
    assert seen == [(list, 2)] and type(result) is tuple and len(result) == 2


# --------------------------------------------------------------------------- found by a fuzzer of custom Functions


def scaled(lib, seen):
    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            seen.append(ctx.needs_input_grad)
            return a * 2 + b

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    return Scaled


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode", "grad"])
def test_needs_input_grad_says_which_inputs_require_grad_in_any_grad_mode(lib, mode):
    seen = []
    a = lib.ones(2, requires_grad=True)
    b = lib.ones(2)
    with MODES[mode](lib):
        out = scaled(lib, seen).apply(a, b)
    assert seen == [(True, False)]
    assert out.requires_grad == (mode == "grad")


def test_marking_dirty_a_later_input(lib):
    class Second(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            b.mul_(2.0)
            ctx.mark_dirty(b)
            return a * 3, b

        @staticmethod
        def backward(ctx, g0, g1):
            return g0 * 3, g1 * 2

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    y0 = lib.tensor([5.0, 6.0], requires_grad=True)
    first, second = Second.apply(x, y0.clone())
    assert second.grad_fn is first.grad_fn
    assert second.tolist() == [10.0, 12.0]
    (first.sum() + second.sum()).backward()
    assert x.grad.tolist() == [3.0, 3.0] and y0.grad.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("save", ["the input", "the output"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_setup_context_may_not_save_an_input_returned_as_is(lib, save, requires_grad):
    class Same(lib.autograd.Function):
        @staticmethod
        def forward(a):
            return a

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.save_for_backward(inputs[0] if save == "the input" else output)

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError) as raised:
        Same.apply(lib.ones(2, requires_grad=requires_grad))
    assert first_line(raised).startswith(
        "An input that has been returned as-is as output is being saved for backward."
    )


@pytest.mark.parametrize("how", ["no_grad", "no input requires grad", "recorded"])
def test_what_is_saved_is_checked_only_when_a_node_is_recorded(lib, how):
    def forward(ctx, a):
        ctx.save_for_backward(a, 1.0)
        return a * 2

    a = lib.ones(2, requires_grad=how != "no input requires grad")
    with lib.no_grad() if how == "no_grad" else contextlib.nullcontext():
        if how != "recorded":
            assert custom(lib, forward).apply(a).tolist() == [2.0, 2.0]
            return
        with pytest.raises(TypeError) as raised:
            custom(lib, forward).apply(a)
    assert first_line(raised) == (
        "save_for_backward can only save variables, but argument 1 is of type float"
    )


def test_a_gradient_for_an_input_that_needs_none_is_not_checked(lib):
    """torch lets it be (its hooks see it as it was returned); nothing flows from it."""
    seen = []

    class Careless(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g.double(), g.reshape(-1)[1:]  # (wrong dtype; wrong shape for b)

    a = lib.ones(2, 2, requires_grad=True)
    out = Careless.apply(a, lib.ones(2, 2))
    out.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append(grad_inputs))
    out.sum().backward()
    assert a.grad.dtype == a.dtype and a.grad.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    assert seen[0][0].dtype == a.dtype  # (a needs a gradient: cast to its dtype)
    assert tuple(seen[0][1].shape) == (3,)  # (b needs none: as backward returned it)


def test_a_leaf_that_gets_no_gradient_still_runs_its_hooks(lib):
    """A backward that returns None for the leaf: its tensor hook sees None, then its
    post-accumulate-grad hook runs with .grad still None, as torch's AccumulateGrad does."""
    seen = []
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    x.register_post_accumulate_grad_hook(lambda p: seen.append(("post", p.grad)))
    x.register_hook(lambda g: seen.append(("tensor", g)))
    custom(lib, lambda ctx, a: a * 2, lambda ctx, g: None).apply(x).sum().backward()
    assert seen == [("tensor", None), ("post", None)] and x.grad is None


@pytest.mark.parametrize("dirty", [False, True], ids=["as-is", "changed and marked dirty"])
@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_an_input_returned_with_grad_mode_off_is_a_plain_alias(lib, mode, dirty):
    def forward(ctx, a):
        if dirty:
            a.mul_(2)
            ctx.mark_dirty(a)
        return a

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    with MODES[mode](lib):
        y = custom(lib, forward).apply(x if not dirty else x.detach())
    assert (y.requires_grad, y.is_leaf, y._is_view(), y.grad_fn) == (False, True, False, None)


@pytest.mark.parametrize("base", ["a leaf", "a non-leaf"])
def test_a_dirty_view_with_two_outputs_is_refused_before_the_leaf_check(lib, base):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a.mul_(2)
            ctx.mark_dirty(a)
            return a, a * 3

        @staticmethod
        def backward(ctx, g0, g1):
            return g0 * 2 + g1 * 6

    x = lib.ones(2, requires_grad=True)
    source = x if base == "a leaf" else x * 1
    with pytest.raises(RuntimeError) as raised:
        Twice.apply(source.view(2))
    assert first_line(raised).startswith(
        "If your Function modifies inplace an input that is a view of another Tensor, your "
        "Function cannot return more than one Tensor."
    )


@pytest.mark.parametrize("has_jvp", [True, False])
def test_forward_ad_calls_the_jvp_of_a_function_with_no_differentiable_output(lib, has_jvp):
    """torch runs a custom Function's jvp even when no output is a float tensor (and says
    jvp is missing when there is none)."""
    calls = []

    def jvp(ctx, ta):
        calls.append(ta.shape)

    namespace = {"forward": staticmethod(lambda ctx, a: a.argmax())}
    namespace["backward"] = staticmethod(lambda ctx, g: None)
    if has_jvp:
        namespace["jvp"] = staticmethod(jvp)
    Argmax = type("Argmax", (lib.autograd.Function,), namespace)
    fw = lib.autograd.forward_ad
    with fw.dual_level():
        x = fw.make_dual(lib.tensor([1.0, 3.0, 2.0]), lib.ones(3))
        if has_jvp:
            assert Argmax.apply(x).item() == 1 and len(calls) == 1
            return
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            Argmax.apply(x)


VIEWS = {
    "a slice": lambda base: base[:, 1:],
    "a transpose": lambda base: base.t(),
    "a row": lambda base: base[1],
    "no view": lambda base: base,
}


@pytest.mark.parametrize("dirty", [False, True], ids=["no mark_dirty", "mark_dirty"])
@pytest.mark.parametrize("change", [True, False], ids=["changed in place", "unchanged"])
@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
def test_an_input_s_edge_is_the_one_it_had_before_forward(view, change, dirty):
    """torch takes the inputs' edges before forward runs: a forward that changes a view input
    in place without ``mark_dirty`` leaves the node's edge where it was (``SliceBackward0``,
    not the ``AsStridedBackward0`` of the base's new history); with ``mark_dirty`` the input
    gets the node as its history. Node names, values and gradients as torch."""

    def forward(ctx, x):
        if change:
            x.mul_(2)
        if dirty:
            ctx.mark_dirty(x)
            return x
        return x * 3

    def program(lib):
        leaf = lib.arange(6.0, dtype=lib.float64).reshape(2, 3).requires_grad_()
        base = leaf.clone()
        y = custom(lib, forward, lambda ctx, g: g * 5).apply(view(base))
        names = [None if fn is None else fn.name() for fn, _ in y.grad_fn.next_functions]
        y.sum().backward()
        return [y.grad_fn.name(), names, numpy(y), numpy(leaf.grad), numpy(base)]

    assert_like_torch(program)

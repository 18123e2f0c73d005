"""Inputs given by keyword or by dict, non-leaf inputs of ``backward``, nodes called
directly, and grad mode inside inference mode, as PyTorch's own autograd tests check them
(test_autograd.py: test_custom_function_apply_kwargs*, test_backward_with_nonleaf_inputs,
test_grad_dict_inputs*, test_backward_dict_inputs*, test_grad_fn_badcalls) and as torch
2.13 behaves.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture).
"""

import collections

import pytest

from tests.teachgrad.autograd._port import same
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def adder(lib):
    """A custom Function ``x + k * y`` whose ``y`` may come by keyword."""

    class Add(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y, k=2, *, scale=None):
            ctx.n = len(ctx.needs_input_grad)
            ctx.k = k
            return x + y * k

        @staticmethod
        def backward(ctx, g):
            return (g, g * ctx.k) + (None,) * (ctx.n - 2)

    return Add


# --------------------------------------------------------------------------- keyword arguments


@pytest.mark.parametrize(
    "call",
    [
        lambda Add, a, b: Add.apply(a, y=b),
        lambda Add, a, b: Add.apply(y=b, x=a),
        lambda Add, a, b: Add.apply(a, b, k=3),
        lambda Add, a, b: Add.apply(a, k=3, y=b),
    ],
    ids=["y=b", "y=b, x=a", "k=3", "k=3, y=b"],
)
def test_a_tensor_given_by_keyword_is_an_input(lib, call):
    a = lib.tensor([2.0], requires_grad=True)
    b = lib.tensor([3.0], requires_grad=True)
    out = call(adder(lib), a, b)
    assert out.requires_grad
    assert out.grad_fn.needs_input_grad[:2] == (True, True)
    assert [f is not None for f, _ in out.grad_fn.next_functions][:2] == [True, True]
    out.backward()
    assert same(a.grad, [1.0])
    assert same(b.grad, [out.grad_fn.k])


def test_defaults_of_forward_are_not_inputs_unless_given(lib):
    a = lib.tensor([2.0], requires_grad=True)
    Add = adder(lib)
    assert len(Add.apply(a, y=a).grad_fn.needs_input_grad) == 2
    assert len(Add.apply(a, a, k=1).grad_fn.needs_input_grad) == 3


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda Add, a: Add.apply(a, bad_kwarg=a),
            "forward() got an unexpected keyword argument 'bad_kwarg'",
        ),
        (lambda Add, a: Add.apply(a, a, y=a), "forward() got multiple values for argument 'y'"),
        (
            lambda Add, a: Add.apply(a, scale=2),
            "forward() got an unexpected keyword argument 'scale'",
        ),
        (lambda Add, a: Add.apply(a, k=2), "forward() missing required argument: 'y' (position 1)"),
        (lambda Add, a: Add.apply(y=a), "forward() missing required argument: 'x' (position 0)"),
    ],
    ids=["unknown", "given twice", "keyword-only", "a gap before it", "the first missing"],
)
def test_keywords_that_do_not_fit_forward_are_torch_s_type_errors(lib, call, message):
    with pytest.raises(TypeError) as raised:
        call(adder(lib), lib.ones(1, requires_grad=True))
    assert str(raised.value).splitlines()[0] == message


# --------------------------------------------------------------------------- inputs=


def test_a_non_leaf_input_of_backward_keeps_its_grad_from_then_on(lib):
    x = lib.ones(2, requires_grad=True)
    xn = x * 1
    y = (xn**2).sum()
    y.backward(inputs=[xn], retain_graph=True)
    assert xn.retains_grad and x.grad is None
    assert same(xn.grad, [2.0, 2.0])
    y.backward()  # retained: the second backward adds into it
    assert same(xn.grad, [4.0, 4.0])
    assert same(x.grad, [2.0, 2.0])


def test_a_view_as_an_input_of_backward_gets_its_grad(lib):
    base = lib.ones(3, requires_grad=True).clone()
    v = base[:2]
    (v * 3).sum().backward(inputs=[v])
    assert v.retains_grad
    assert same(v.grad, [3.0, 3.0])


def test_grad_of_a_dict_of_inputs_is_a_dict_of_the_same_keys(lib):
    x = lib.ones(2, requires_grad=True)
    w = lib.full((2,), 3.0, requires_grad=True)
    unused = lib.ones(1, requires_grad=True)
    z = (x**2 * w).sum()
    grads = lib.autograd.grad(z, {"x": x, 7: w}, retain_graph=True)
    assert type(grads) is dict and list(grads) == ["x", 7]
    assert same(grads["x"], [6.0, 6.0]) and same(grads[7], [1.0, 1.0])
    grads = lib.autograd.grad(z, {"x": x, "u": unused}, allow_unused=True, retain_graph=True)
    assert grads["u"] is None
    grads = lib.autograd.grad(z, {"u": unused}, materialize_grads=True, retain_graph=True)
    assert same(grads["u"], [0.0])
    grads = lib.autograd.grad(z, {"x": x}, create_graph=True)
    assert grads["x"].requires_grad
    rows = lib.autograd.grad(x * 2, {"x": x}, lib.eye(2), is_grads_batched=True)
    assert same(rows["x"], [[2.0, 0.0], [0.0, 2.0]])


def test_backward_takes_a_dict_of_inputs(lib):
    x = lib.ones(2, requires_grad=True)
    w = lib.ones(2, requires_grad=True)
    (x * w).sum().backward(inputs={"w": w})
    assert x.grad is None and same(w.grad, [1.0, 1.0])


@pytest.mark.parametrize("where", ["grad", "backward", "Tensor.backward"])
def test_other_mappings_of_inputs_are_refused(lib, where):
    x = lib.ones(2, requires_grad=True)
    z = (x * 2).sum()
    inputs = collections.OrderedDict(x=x)
    name = "grad" if where == "grad" else "backward"
    with pytest.raises(TypeError) as raised:
        if where == "grad":
            lib.autograd.grad(z, inputs)
        elif where == "backward":
            lib.autograd.backward(z, inputs=inputs)
        else:
            z.backward(inputs=inputs)
    assert str(raised.value).splitlines()[0] == (
        f"`inputs` argument to `{name}()` must be a dict, not OrderedDict. Other Mapping types "
        "are not supported."
    )


def test_an_empty_dict_of_inputs_is_refused(lib):
    x = lib.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="`inputs` argument to `grad\\(\\)` cannot be empty."):
        lib.autograd.grad((x * 2).sum(), {})
    with pytest.raises(RuntimeError, match="`inputs` argument to `backward\\(\\)` cannot be"):
        (x * 2).sum().backward(inputs={})


# --------------------------------------------------------------------------- nodes called directly


@pytest.mark.parametrize(
    "op, edges",
    [
        (lambda x, w: x**2, 1),
        (lambda x, w: x.sum(), 1),
        (lambda x, w: (x * 1).exp(), 1),
        (lambda x, w: x * w, 2),
        (lambda x, w: x * 2, 2),
    ],
    ids=["pow", "sum", "exp", "mul", "mul by a number"],
)
def test_a_node_of_one_edge_answers_with_its_gradient_alone(lib, op, edges):
    x = lib.ones(2, requires_grad=True)
    w = lib.ones(2, requires_grad=True)
    y = op(x, w)
    answer = y.grad_fn(lib.ones_like(y))
    assert isinstance(answer, tuple) == (edges > 1)
    assert len(y.grad_fn.next_functions) == edges


# --------------------------------------------------------------------------- grad mode in inference mode


def test_enable_grad_inside_inference_mode_records_nothing(lib):
    s = lib.ones(2, requires_grad=True)
    with lib.inference_mode(), lib.enable_grad():
        y = s * 2
        assert lib.is_grad_enabled()
        with lib.no_grad():
            assert not lib.is_grad_enabled()
        with lib.inference_mode(False):  # leaving inference mode records again
            z = s * 2
    assert (y.requires_grad, y.is_inference(), y.grad_fn) == (False, True, None)
    assert z.requires_grad and not z.is_inference()
    assert lib.is_grad_enabled()


@pytest.mark.parametrize("how", ["set_grad_enabled", "decorator", "under no_grad"])
def test_every_way_of_turning_grad_on_inside_inference_mode_records_nothing(lib, how):
    s = lib.ones(2, requires_grad=True)

    @lib.enable_grad()
    def double():
        return lib.is_grad_enabled(), s * 2

    with lib.no_grad() if how == "under no_grad" else lib.enable_grad(), lib.inference_mode():
        if how == "decorator":
            mode, y = double()
        else:
            lib.set_grad_enabled(True) if how == "set_grad_enabled" else None
            with lib.enable_grad():
                mode, y = lib.is_grad_enabled(), s * 2
            lib.set_grad_enabled(False)
    assert mode and not y.requires_grad and y.is_inference()
    assert lib.is_grad_enabled()  # (leaving the modes restores grad mode)


# --------------------------------------------------------------------------- views whose base changed


def changed_base(lib):
    """A view of a tensor that needs no grad, whose base then changes in place by a tensor
    that does (test_inplace_on_view_modify_base): the view now has a history it has not read."""
    r = lib.ones(3, requires_grad=True)
    x = lib.ones(3)
    v = x[:2]
    x.mul_(r)
    return r, x, v


ROOTS = {
    "grad(v, r)": lambda lib, r, x, v: lib.autograd.grad(v.sum() if v.dim() else v, r),
    "grad(view as output)": lambda lib, r, x, v: lib.autograd.grad(v, r, lib.ones(2)),
    "v.backward(gradient)": lambda lib, r, x, v: (v.backward(lib.ones(2)), r.grad)[1],
    "backward([v], [g])": lambda lib, r, x, v: (lib.autograd.backward([v], [lib.ones(2)]), r.grad)[
        1
    ],
    "grad(x, v) (unused)": lambda lib, r, x, v: lib.autograd.grad(
        (x * 3).sum(), v, allow_unused=True
    ),
    "backward(inputs=[v])": lambda lib, r, x, v: ((x * 3).sum().backward(inputs=[v]), v.grad)[1],
}


@pytest.mark.parametrize("run", ROOTS.values(), ids=ROOTS.keys())
def test_a_view_whose_base_changed_is_differentiable_as_an_output_and_an_input(lib, run):
    r, x, v = changed_base(lib)
    answer = run(lib, r, x, v)
    answer = answer[0] if isinstance(answer, tuple) else answer
    assert answer is None or same(answer, [1.0, 1.0, 0.0])


def test_a_view_whose_base_changed_is_no_leaf_for_post_accumulate_grad_hooks(lib):
    r, x, v = changed_base(lib)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on"):
        v.register_post_accumulate_grad_hook(lambda t: None)


@pytest.mark.parametrize("retain", [False, True])
@pytest.mark.parametrize("mode", ["inference_mode", "no_grad", "enable_grad in inference_mode"])
def test_a_stale_view_gets_its_new_history_in_any_mode(lib, mode, retain):
    """Reading the grad_fn of a view whose base changed in place rebuilds its history, even
    inside inference_mode (where enable_grad records nothing)."""
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    base = x * 3
    v = base[:]
    if retain:
        v.retain_grad()
    base.mul_(2.0)
    modes = {
        "inference_mode": lambda: lib.inference_mode(),
        "no_grad": lambda: lib.no_grad(),
        "enable_grad in inference_mode": lambda: lib.inference_mode(),
    }
    with modes[mode](), lib.enable_grad() if mode.startswith("enable") else lib.no_grad():
        assert (v.grad_fn.name(), v.is_leaf) == ("AsStridedBackward0", False)
    (v * 1).sum().backward()
    assert same(x.grad, [6.0, 6.0])


NOT_INPUTS = {
    "grad(y, 'a')": lambda lib, x, y: lib.autograd.grad(y, "a"),
    "grad(y, [x, 'a'])": lambda lib, x, y: lib.autograd.grad(y, [x, "a"]),
    "grad(y, [None])": lambda lib, x, y: lib.autograd.grad(y, [None]),
    "grad(y, 3)": lambda lib, x, y: lib.autograd.grad(y, 3),
    "backward(inputs='a')": lambda lib, x, y: y.backward(inputs="a"),
    "backward(inputs=[x, 3])": lambda lib, x, y: y.backward(inputs=[x, 3]),
    "grad(y, [])": lambda lib, x, y: lib.autograd.grad(y, []),
    "backward(inputs=[])": lambda lib, x, y: y.backward(inputs=[]),
}


@pytest.mark.parametrize("call", NOT_INPUTS.values(), ids=NOT_INPUTS.keys())
def test_inputs_that_are_no_tensors(call):
    """torch's RuntimeError for an input that is neither a tensor nor a GradientEdge."""

    def program(lib):
        x = lib.ones(2, requires_grad=True)
        call(lib, x, (x * 2).sum())

    assert_like_torch(program)

"""Forward-mode AD, custom Functions with ``jvp`` and gradcheck's own checks, compared with
torch across their variations (issue 20): the same program runs on both libraries, and
either both raise (same class, same first line) or both give the same values.
"""

import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch
from tests.teachgrad.inplace._common import Raised, both

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _pair(lib, n=3):
    """A primal and a tangent, both plain float64 tensors."""
    primal = lib.tensor(np.arange(1.0, n + 1), dtype=lib.float64)
    return primal, lib.ones(n, dtype=lib.float64)


def _tangents(lib, *tensors):
    return [as_numpy(lib.autograd.forward_ad.unpack_dual(t).tangent) for t in tensors]


# ------------------------------------------------------ integer operands of a linear op

INTEGER_OPERANDS = {  # an integer or bool tensor is a constant: it adds no tangent
    "dual + int": lambda lib, x: x + lib.tensor([3, 4, 5]),
    "int - dual": lambda lib, x: lib.tensor([3, 4, 5]) - x,
    "dual + bool": lambda lib, x: x + lib.tensor([True, False, True]),
    "add(int, alpha=2)": lambda lib, x: x.add(lib.tensor([1, 2, 3]), alpha=2),
    "where(dual, int)": lambda lib, x: lib.where(x > 1, x, lib.tensor(3)),
    "y[mask] = int": lambda lib, x: (x * 1).index_put_((lib.tensor([True, False, True]),), lib.tensor(7)),
}  # fmt: skip


@pytest.mark.parametrize("op", INTEGER_OPERANDS.values(), ids=INTEGER_OPERANDS.keys())
def test_an_integer_operand_gives_no_tangent(op):
    def program(lib):
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            return _tangents(lib, op(lib, fw.make_dual(*_pair(lib))))

    assert_like_torch(program)


WIDER_INPUTS_WITHOUT_TANGENTS = {  # a float32 dual with a float64 (or int) tensor
    "maximum(other, dual)": lambda lib, x, o: lib.maximum(o, x),
    "minimum(dual, other)": lambda lib, x, o: lib.minimum(x, o),
    "clamp(min=other)": lambda lib, x, o: x.clamp(min=o),
    "clamp(max=other)": lambda lib, x, o: x.clamp(max=o),
    "clamp(other, other + 1)": lambda lib, x, o: lib.clamp(x, o, o + 1),
    "where(c, other, dual)": lambda lib, x, o: lib.where(o > 0, o, x),
    "where(c, dual, other)": lambda lib, x, o: lib.where(o > 0, x, o),
    "where(c, dual, 0.0)": lambda lib, x, o: lib.where(o > 0, x, 0.0),
}


@pytest.mark.parametrize("other", ["float64", "float32", "int64"])
@pytest.mark.parametrize(
    "op", WIDER_INPUTS_WITHOUT_TANGENTS.values(), ids=WIDER_INPUTS_WITHOUT_TANGENTS.keys()
)
def test_an_input_without_a_tangent_promotes_the_tangent_as_its_zeros_would(op, other):
    """torch reads a missing tangent as zeros of that input's dtype: ``maximum`` of a float64
    tensor and a float32 dual has a float64 tangent, as its result."""

    def program(lib):
        fw = lib.autograd.forward_ad
        x = lib.tensor([0.5, 0.0, -1.0], dtype=lib.float32)
        o = lib.tensor([0, 0, 1]).to(getattr(lib, other))
        with fw.dual_level():
            tangent = fw.unpack_dual(op(lib, fw.make_dual(x, lib.ones(3)), o)).tangent
            return str(tangent.dtype).split(".")[-1], as_numpy(tangent)

    assert_like_torch(program)


# --------------------------------------------------------------------------- make_dual's view

IN_PLACE_ON_THE_DUAL = {
    "dual *= 2": lambda dual, lib: dual.__imul__(2),
    "dual.mul_(other dual)": lambda dual, lib: dual.mul_(_other_dual(lib)),
    "dual[:2] *= 2": lambda dual, lib: dual[:2].mul_(2),
    "dual[:2][1:].add_(1)": lambda dual, lib: dual[:2][1:].add_(1),
    "dual.copy_(ones)": lambda dual, lib: dual.copy_(lib.ones(3, dtype=lib.float64)),
}


def _other_dual(lib):
    primal, tangent = _pair(lib)
    return lib.autograd.forward_ad.make_dual(primal * 2, tangent * 3)


@pytest.mark.parametrize("change", IN_PLACE_ON_THE_DUAL.values(), ids=IN_PLACE_ON_THE_DUAL.keys())
@pytest.mark.parametrize("layout", ["base, base", "view, base", "view, view", "base, view"])
def test_in_place_on_a_dual_leaves_its_primal_without_a_tangent(change, layout):
    """make_dual's result is a view for backward only: its tangent is its own, and the tensor
    it was made from gets none. torch keeps the tangent given when its layout (strides,
    storage offset and size) is the primal's, so in-place changes then write into it."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib, 4)
        foo = foo[1:] if layout.startswith("view") else foo[1:].clone()
        t = t[1:] if layout.endswith("view") else t[1:].clone()
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            change(dual, lib)
            return _tangents(lib, foo, dual, dual[1:]), as_numpy(t), dual._is_view()

    assert_like_torch(program)


def test_writing_a_dual_into_the_primal_s_base_does_not_reach_the_dual():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            other = fwAD.make_dual(lib.zeros(1, dtype=lib.float64), lib.full((1,), 7.0))
            foo[:1].copy_(other.double())
            return _tangents(lib, foo, dual), as_numpy(foo)

    assert_like_torch(program)


def test_the_unpacked_primal_takes_a_tangent_of_its_own():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            primal = fwAD.unpack_dual(dual).primal
            primal.copy_(fwAD.make_dual(lib.zeros(3, dtype=lib.float64), 7 * t))
            return _tangents(lib, foo, dual, primal, primal[:1]), primal._is_view()

    assert_like_torch(program)


@pytest.mark.parametrize("detach", ["detach", "detach_"])
def test_detaching_drops_the_tangent(detach):
    """Also for views taken later; a view taken before keeps the tangent it had."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            y = fwAD.make_dual(foo, t) * 3
            before = y[:2]
            fwAD.unpack_dual(before)
            out = getattr(y, detach)()
            return _tangents(lib, out, y, before, y[:2]), out is y

    assert_like_torch(program)


DUAL_PAIRS = {
    "tangent is a dual": lambda fwAD, foo, t, d: (foo.clone(), d),
    "tangent is a view of a result": lambda fwAD, foo, t, d: (foo[:2], (d * 2)[:2]),
    "primal is a dual": lambda fwAD, foo, t, d: (d, t * 3),
    "primal is a view of a dual": lambda fwAD, foo, t, d: (d[:2], t[:2]),
    "both are duals": lambda fwAD, foo, t, d: (d, d),
    "dual tangent of the wrong size": lambda fwAD, foo, t, d: (foo[:2], d),
    "primal of a dual": lambda fwAD, foo, t, d: (fwAD.unpack_dual(d).primal, t * 2),
    "tangent of a dual": lambda fwAD, foo, t, d: (foo, fwAD.unpack_dual(d).tangent),
}


@pytest.mark.parametrize("pair", DUAL_PAIRS.values(), ids=DUAL_PAIRS.keys())
def test_make_dual_refuses_a_primal_or_tangent_that_has_a_tangent(pair):
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            d = fwAD.make_dual(foo.clone(), t.clone())
            primal, tangent = pair(fwAD, foo, t, d)
            dual = fwAD.make_dual(primal, tangent)
            return _tangents(lib, dual, d)

    assert_like_torch(program)


@pytest.mark.parametrize("made_in", ["inference", "normal"])
@pytest.mark.parametrize("dual_in", ["inference", "normal"])
@pytest.mark.parametrize("tangent_size", [3, 2])
def test_make_dual_and_inference_mode(made_in, dual_in, tangent_size):
    """torch: inference mode turns forward AD off (no tangent, no checks); an inference
    tensor's dual is not a view and carries no tangent, though its size is checked."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        with lib.inference_mode(made_in == "inference"):
            foo = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        t = lib.ones(tangent_size, dtype=lib.float64)
        with fwAD.dual_level():
            with lib.inference_mode(dual_in == "inference"):
                dual = fwAD.make_dual(foo, t)
                inside = _tangents(lib, dual, dual * 2, dual[:1])
            facts = dual._is_view(), dual is foo, dual.is_inference(), dual.requires_grad
            return facts, inside, _tangents(lib, dual, dual * 2)

    assert_like_torch(program)


def test_inference_mode_gives_no_tangents_but_views_still_read_their_base_s():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(*_pair(lib))
            with lib.inference_mode():
                return _tangents(lib, dual * 2, dual[:1], fwAD.unpack_dual(dual).primal, dual)

    assert_like_torch(program)


# --------------------------------------------------------------------------- custom Function jvp


def _function(lib, forward, jvp, setup_context=None, backward=lambda ctx, *grads: grads):
    """A custom Function from its formulas (new style when ``setup_context`` is given)."""
    body = {
        "forward": staticmethod(forward),
        "jvp": staticmethod(jvp),
        "backward": staticmethod(backward),
    }
    if setup_context is not None:
        body["setup_context"] = staticmethod(setup_context)
    return type("Custom", (lib.autograd.Function,), body)


INPUTS = {
    "dual": lambda d: d,
    "view of a dual": lambda d: d[1:],
    "result": lambda d: d * 1,
}


def _run_custom(forward, jvp, given="dual", requires_grad=False, setup_context=None):
    """A program applying the Function to a dual (or a view of one, or a result) that
    reports its outputs' tangents and layout, and the dual's tangent after."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=requires_grad)
        with fwAD.dual_level():
            d = fwAD.make_dual(x, lib.tensor([1.0, 10.0, 100.0], dtype=lib.float64))
            a = INPUTS[given](d)
            out = _function(lib, forward, jvp, setup_context).apply(a)
            outs = out if isinstance(out, tuple) else (out,)
            layout = [(o._is_view(), o is a, o.requires_grad) for o in outs]
            return _tangents(lib, *outs), layout, _tangents(lib, d, a)

    return program


VIEWS = {  # forward returns a view of its input (or the input itself); jvp's answer varies
    "x[:2], g[:2]": (lambda ctx, x: x[:2], lambda ctx, g: g[:2]),
    "x[:2], g[:2] * 1": (lambda ctx, x: x[:2], lambda ctx, g: g[:2] * 1),
    "x[:2], g[:2].clone()": (lambda ctx, x: x[:2], lambda ctx, g: g[:2].clone()),
    "x[:2], (g * 1)[:2]": (lambda ctx, x: x[:2], lambda ctx, g: (g * 1)[:2]),
    "x[:2], None": (lambda ctx, x: x[:2], lambda ctx, g: None),
    "x.t(), g.t()": (lambda ctx, x: x.t(), lambda ctx, g: g.t()),
    "x.view_as(x), g.view_as(g)": (lambda ctx, x: x.view_as(x), lambda ctx, g: g.view_as(g)),
    "(x * 2)[:2], (g * 2)[:2]": (lambda ctx, x: (x * 2)[:2], lambda ctx, g: (g * 2)[:2]),
}
AS_IS = {  # forward returns its input unchanged (a no-op)
    "x, g": (lambda ctx, x: x, lambda ctx, g: g),
    "x, g * 2": (lambda ctx, x: x, lambda ctx, g: g * 2),
    "x, g.view_as(g)": (lambda ctx, x: x, lambda ctx, g: g.view_as(g)),
    "x, g[:]": (lambda ctx, x: x, lambda ctx, g: g[:]),
    "x, (g * 1).view_as(g)": (lambda ctx, x: x, lambda ctx, g: (g * 1).view_as(g)),
    "x, None": (lambda ctx, x: x, lambda ctx, g: None),
    "(x * 2, x), (g * 2, None)": (lambda ctx, x: (x * 2, x), lambda ctx, g: (g * 2, None)),
    "(x * 2, x), (g * 2, g.view_as(g))": (
        lambda ctx, x: (x * 2, x),
        lambda ctx, g: (g * 2, g.view_as(g)),
    ),
}


@pytest.mark.parametrize("formulas", [*VIEWS.values(), *AS_IS.values()], ids=[*VIEWS, *AS_IS])
@pytest.mark.parametrize("given", INPUTS)
@pytest.mark.parametrize("requires_grad", [False, True])
def test_a_view_or_an_input_returned_needs_the_same_view_of_the_tangent(
    formulas, given, requires_grad
):
    assert_like_torch(_run_custom(*formulas, given, requires_grad))


def _dirty(op):
    """forward changes its input in place with ``op`` and says so (mark_dirty)."""

    def forward(ctx, x):
        ctx.mark_dirty(x)
        return op(x)

    return forward


IN_PLACE = {
    "g.mul_(2)": lambda ctx, g: g.mul_(2),
    "g * 2": lambda ctx, g: g * 2,
    "None": lambda ctx, g: None,
    "g.mul_(2) * 1": lambda ctx, g: g.mul_(2) * 1,
    "g.mul_(2).view_as(g)": lambda ctx, g: g.mul_(2).view_as(g),
    "g": lambda ctx, g: g,
}


@pytest.mark.parametrize("jvp", IN_PLACE.values(), ids=IN_PLACE.keys())
@pytest.mark.parametrize("given", INPUTS)
def test_an_in_place_forward_needs_an_in_place_jvp(jvp, given):
    """mark_dirty: jvp changes the tangent it got in place and returns it as-is."""
    assert_like_torch(_run_custom(_dirty(lambda x: x.mul_(2)), jvp, given))


def test_only_inputs_may_be_marked_dirty_in_forward_mode():
    forward = _dirty(lambda x: x)

    def marks_a_result(ctx, x):
        return forward(ctx, x * 2)

    assert_like_torch(_run_custom(marks_a_result, lambda ctx, g: g * 2))


def _non_differentiable(*which):
    """forward returns (x * 2, x * 3, x.long()) and marks the outputs ``which`` as
    non-differentiable."""

    def forward(ctx, x):
        outs = (x * 2, x * 3, (x * 10).long())
        ctx.mark_non_differentiable(*(outs[k] for k in which))
        return outs

    return forward


def _tangents_for(*gives):
    """A jvp giving output k the tangent g * (k + 2) where ``gives[k]``, else None."""
    return lambda ctx, g: tuple(g * (k + 2) if give else None for k, give in enumerate(gives))


@pytest.mark.parametrize(
    "which,jvp",
    [
        ((), _tangents_for(True, True, False)),
        ((), _tangents_for(True, True, True)),
        ((1,), _tangents_for(True, False, False)),
        ((1,), _tangents_for(True, True, False)),
        ((0, 1), _tangents_for(False, False, False)),
        ((0, 1), _tangents_for(True, False, False)),
        ((0, 1), _tangents_for(False, False, True)),
    ],
    ids=["none marked", "integer output too", "one marked", "one marked, given one",
         "two marked", "two marked, given one", "two marked, integer given one"],
)  # fmt: skip
def test_non_differentiable_outputs_take_no_tangent(which, jvp):
    """(torch 2.13 fails inside, with an internal assert, when jvp gives None to a
    differentiable output; teachgrad leaves that output without a tangent.)"""
    assert_like_torch(_run_custom(_non_differentiable(*which), jvp))


JVP_RESULTS = {
    "too many": lambda ctx, g: (g * 2, g),
    "a float": lambda ctx, g: 2.0,
    "a smaller shape": lambda ctx, g: g[:2],
    "a broadcastable shape": lambda ctx, g: g.sum(),
    "another dtype": lambda ctx, g: g.float(),
}


@pytest.mark.parametrize("jvp", JVP_RESULTS.values(), ids=JVP_RESULTS.keys())
def test_what_jvp_returns_is_checked_like_torch(jvp):
    assert_like_torch(_run_custom(lambda ctx, x: x * 2, jvp))


def _square(save):
    """forward computes x * x and hands (ctx, x, result) to ``save``."""

    def forward(ctx, x):
        y = x * x
        save(ctx, x, y)
        return y

    return forward


SAVED_FOR_FORWARD = {
    "x": (lambda ctx, x, y: ctx.save_for_forward(x), lambda ctx, g: 2 * ctx.saved_tensors[0] * g),
    "x and the result": (
        lambda ctx, x, y: ctx.save_for_forward(x, y),
        lambda ctx, g: 2 * ctx.saved_tensors[1] / ctx.saved_tensors[0] * g,
    ),
    "x and None": (
        lambda ctx, x, y: ctx.save_for_forward(None, x),
        lambda ctx, g: 2 * ctx.saved_tensors[1] * g,
    ),
    "an intermediate": (
        lambda ctx, x, y: ctx.save_for_forward(x * 2),
        lambda ctx, g: ctx.saved_tensors[0] * g,
    ),
    "twice: the last call counts": (
        lambda ctx, x, y: (ctx.save_for_forward(y), ctx.save_for_forward(x)),
        lambda ctx, g: 2 * ctx.saved_tensors[0] * g,
    ),
    "for backward only": (
        lambda ctx, x, y: ctx.save_for_backward(x),
        lambda ctx, g: g * len(ctx.saved_tensors),
    ),
    "for both": (
        lambda ctx, x, y: (ctx.save_for_backward(y), ctx.save_for_forward(x)),
        lambda ctx, g: 2 * ctx.saved_tensors[0] * g,
    ),
    "a number": (
        lambda ctx, x, y: ctx.save_for_forward(x, 3),
        lambda ctx, g: 2 * ctx.saved_tensors[0] * g,
    ),
}


@pytest.mark.parametrize("formulas", SAVED_FOR_FORWARD.values(), ids=SAVED_FOR_FORWARD.keys())
@pytest.mark.parametrize("style", ["forward(ctx, ...)", "setup_context"])
@pytest.mark.parametrize("requires_grad", [False, True])
def test_jvp_reads_what_save_for_forward_kept(formulas, style, requires_grad):
    save, jvp = formulas
    if style == "setup_context":
        program = _run_custom(
            lambda x: x * x, jvp, requires_grad=requires_grad,
            setup_context=lambda ctx, inputs, output: save(ctx, inputs[0], output),
        )  # fmt: skip
    else:
        program = _run_custom(_square(save), jvp, requires_grad=requires_grad)
    assert_like_torch(program)


@pytest.mark.parametrize("in_jvp", [False, True])
def test_backward_still_reads_save_for_backward_after_a_jvp(in_jvp):
    def program(lib):
        fwAD = lib.autograd.forward_ad

        def save(ctx, x, y):
            ctx.save_for_backward(y)
            ctx.save_for_forward(x)

        Square = _function(
            lib, _square(save), lambda ctx, g: 2 * ctx.saved_tensors[0] * g,
            backward=lambda ctx, g: g * ctx.saved_tensors[0],
        )  # fmt: skip
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        with fwAD.dual_level():
            y = Square.apply(fwAD.make_dual(x, lib.ones(3, dtype=lib.float64)) if in_jvp else x)
            tangent = _tangents(lib, y)
        y.sum().backward()
        return tangent, as_numpy(x.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- gradcheck


def _undefined_grad_function(lib, materialize, backward, n_outputs=1):
    """forward gives x * 2 (and x * 3); ``backward(lib, *grads)`` is the formula under test."""

    class Scaled(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(materialize)
            return (x * 2, x * 3) if n_outputs == 2 else x * 2

        @staticmethod
        def backward(ctx, *grads):
            return backward(lib, *grads)

    return Scaled


def _fails_on_none(error):
    def backward(lib, *grads):
        if any(g is None for g in grads):
            raise error("no gradient")
        return sum(g * (k + 2) for k, g in enumerate(grads))

    return backward


def _nonzero_for_none(lib, *grads):
    if all(g is None for g in grads):
        return lib.ones(2, dtype=lib.float64)
    return sum(g * (k + 2) for k, g in enumerate(grads) if g is not None)


UNDEFINED_GRAD_BACKWARDS = {
    "None handled": (False, lambda lib, g: None if g is None else g * 2),
    "None -> RuntimeError": (False, _fails_on_none(RuntimeError)),
    "None -> ValueError (escapes)": (False, _fails_on_none(ValueError)),
    "None * 2 (TypeError escapes)": (False, lambda lib, g: g * 2),
    "None -> nonzero": (False, _nonzero_for_none),
    "zeros -> nonzero": (True, lambda lib, g: g * 2 + (0 if bool(g.any()) else 1)),
}


@pytest.mark.parametrize(
    "formulas", UNDEFINED_GRAD_BACKWARDS.values(), ids=UNDEFINED_GRAD_BACKWARDS.keys()
)
@pytest.mark.parametrize("n_outputs", [1, 2])
@pytest.mark.parametrize(
    "options",
    [{}, {"raise_exception": False}, {"check_undefined_grad": False}, {"fast_mode": True}],
    ids=["default", "no raise", "check off", "fast"],
)
def test_gradcheck_runs_backward_with_undefined_output_grads(formulas, n_outputs, options):
    """Each output's gradient undefined (None) in turn, then all: a RuntimeError from backward
    or a nonzero gradient fails the check (after torch's warning); other errors escape."""
    materialize, backward = formulas

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        Scaled = _undefined_grad_function(lib, materialize, backward, n_outputs)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            ok = lib.autograd.gradcheck(Scaled.apply, (x,), **options)
        return ok, [str(w.message).split(",")[0] for w in caught]

    with np.errstate(all="ignore"):
        assert_like_torch(program)


def _branching(kind):
    """A func whose output changes shape or dtype when the input's sum crosses 10."""

    def func(lib, x):
        y = x * 2
        if float(x.detach().sum()) <= 10.0:
            return y, (x * 0).long()
        if kind == "shape":
            return y.reshape(-1)[:1], (x * 0).long()
        if kind == "dtype":
            return y.float(), (x * 0).long()
        return y, (x * 0).long().reshape(-1)[:1]  # the integer output changes

    return func


@pytest.mark.parametrize("kind", ["shape", "dtype", "integer output's shape"])
@pytest.mark.parametrize("shape", [(4,), (2, 2), ()], ids=str)
@pytest.mark.parametrize("fast_mode", [False, True])
def test_gradcheck_needs_outputs_of_the_same_shape_and_dtype_near_the_input(kind, shape, fast_mode):
    """Nudging one element (slow mode, which torch names by its index) or the whole input
    (fast mode) down, then up, must give outputs of one shape and dtype."""

    def program(lib):
        x = lib.full(shape, 10.0 / np.prod(shape), dtype=lib.float64, requires_grad=True)
        func = _branching(kind)
        return lib.autograd.gradcheck(lambda x: func(lib, x), (x,), fast_mode=fast_mode)

    assert_like_torch(program)


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("check_backward_ad", [True, False])
@pytest.mark.parametrize("y_requires_grad", [True, False])
def test_gradcheck_s_forward_mode_pass_hands_func_duals_that_do_not_require_grad(
    fast_mode, check_backward_ad, y_requires_grad
):
    """Every input that requires grad becomes a detached dual (a zero tangent but for the
    input whose column is computed); the undefined-tangent check also hands in one plain."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        seen = set()

        def func(x, y, z):
            seen.add(
                tuple(
                    (a.requires_grad, a.is_leaf, fwAD.unpack_dual(a).tangent is not None)
                    for a in (x, y, z)
                )
            )
            return x * y + z, (x * z).sum()

        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=y_requires_grad)
        z = lib.tensor([5.0, 6.0], dtype=lib.float64)
        ok = lib.autograd.gradcheck(
            func, (x, y, z), check_forward_ad=True, check_backward_ad=check_backward_ad,
            fast_mode=fast_mode,
        )  # fmt: skip
        return ok, sorted(seen)

    assert_like_torch(program)


@pytest.mark.parametrize("fast_mode", [False, True])
def test_a_func_that_takes_gradients_itself_passes_both_modes(fast_mode):
    """In the forward-mode pass its input does not require grad, so it takes the other branch."""

    def program(lib):
        def func(x):
            if x.requires_grad:
                (g,) = lib.autograd.grad((x * x).sum(), x, create_graph=True)
                return g * x
            return 2 * x * x

        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        forward = lib.autograd.gradcheck(func, (x,), check_forward_ad=True, fast_mode=fast_mode)
        gradgrad = lib.autograd.gradgradcheck(
            lambda x, y: (x * x * y).sin(), (x, x.detach() + 1), check_fwd_over_rev=True,
            fast_mode=fast_mode,
        )  # fmt: skip
        return forward, gradgrad

    assert_like_torch(program)


def test_a_jvp_that_treats_a_missing_tangent_unlike_a_zero_one_fails_gradcheck():
    """(torch's message is a tuple's repr, so only the class is compared.)"""

    def program(lib):
        class Affine(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x, y):
                ctx.set_materialize_grads(False)
                return 3.0 * x + 2.0 * y

            @staticmethod
            def jvp(ctx, gx, gy):
                return (3.0 * gx if gx is not None else 1.0) + (2.0 * gy if gy is not None else 1.0)

            @staticmethod
            def backward(ctx, g):
                return g * 3.0, g * 2.0

        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([3.0, 4.0], dtype=lib.float64, requires_grad=True)
        options = {"check_forward_ad": True, "check_backward_ad": False}
        return lib.autograd.gradcheck(Affine.apply, (x, y), **options)

    outcome = both(program)
    assert outcome["tg"].type == outcome["torch"].type == "GradcheckError"
    assert "Mismatch in tangent values for output with index: " in outcome["tg"].message


# ------------------------------------------- a product's tangent when the primal needs grad

PRODUCTS_BY_A_CONSTANT = {
    "x * 3": lambda lib, x, c: x * 3,
    "3 * x": lambda lib, x, c: 3 * x,
    "x * c": lambda lib, x, c: x * c,
    "c * x": lambda lib, x, c: c * x,
    "x / c": lambda lib, x, c: x / c,
    "x / 3": lambda lib, x, c: x / 3,
    "c / x": lambda lib, x, c: c / x,
    "outer(x, c)": lambda lib, x, c: lib.outer(x, c),
    "x * x": lambda lib, x, c: x * x,
}


@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("op", PRODUCTS_BY_A_CONSTANT.values(), ids=PRODUCTS_BY_A_CONSTANT.keys())
def test_the_tangent_of_a_product_by_a_constant_is_in_the_primals_graph(op, requires_grad):
    """torch's product rule reads a missing tangent as a zero tensor that multiplies the
    other primal: the tangent of ``x * 3`` is in ``x``'s graph when ``x`` requires grad
    (its node AddBackward0, DivBackward0 for ``/``), with the same values, inf included."""

    def program(lib):
        x = lib.tensor([float("inf"), 1.5, -2.0], dtype=lib.float64, requires_grad=requires_grad)
        c = lib.tensor([2.0, 3.0, 4.0], dtype=lib.float64)
        fw = lib.autograd.forward_ad
        with fw.dual_level():
            dual = fw.make_dual(x, lib.ones(3, dtype=lib.float64))
            t = fw.unpack_dual(op(lib, dual, c)).tangent
            node = None if t.grad_fn is None else t.grad_fn.name()
            return as_numpy(t), str([t.requires_grad, node])

    assert_like_torch(program)


JVPS_OF_A_SUM = {  # jvp of 2x + 2y, given gx and gy (either may be None)
    "right": lambda gx, gy: (0 if gx is None else 2 * gx) + (0 if gy is None else 2 * gy),
    "wrong without gx": lambda gx, gy: 5 * gy if gx is None else 2 * gx + (0 if gy is None else 2 * gy),
    "wrong without gy": lambda gx, gy: 7 * gx if gy is None else 2 * gy + (0 if gx is None else 2 * gx),
}  # fmt: skip


@pytest.mark.parametrize("jvp", JVPS_OF_A_SUM.values(), ids=JVPS_OF_A_SUM.keys())
def test_the_undefined_tangent_check_gives_the_other_inputs_tangents(jvp):
    """torch's check of a missing tangent gives every other input a random tangent: a jvp
    wrong only when one tangent is missing and the others are not zero (the wrong factor on
    the tangent that is there) fails it, as in torch (the class is compared: torch's message
    is a tuple's repr)."""

    def program(lib):
        class Sum(lib.autograd.Function):
            @staticmethod
            def forward(x, y):
                return x * 2 + y * 2

            @staticmethod
            def setup_context(ctx, inputs, output):
                ctx.set_materialize_grads(False)

            @staticmethod
            def backward(ctx, g):
                return g * 2, g * 2

            @staticmethod
            def jvp(ctx, gx, gy):
                return jvp(gx, gy)

        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        y = lib.ones(3, dtype=lib.float64, requires_grad=True)
        options = {
            "check_forward_ad": True,
            "check_backward_ad": False,
            "check_batched_grad": False,
        }
        return lib.autograd.gradcheck(Sum.apply, (x, y), **options)

    outcome = both(program)
    tg_result, torch_result = outcome["tg"], outcome["torch"]
    assert type(tg_result) is type(torch_result)
    if isinstance(torch_result, Raised):
        assert tg_result.type == torch_result.type == "GradcheckError"
    else:
        assert tg_result == torch_result is True

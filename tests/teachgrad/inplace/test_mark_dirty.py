"""``ctx.mark_dirty`` in custom Functions (issue 3, point 4), torch as the oracle.

A custom Function whose forward changes an input in place and returns it must say so
with ``ctx.mark_dirty(input)``. Then, as in torch: the returned tensor IS the input
object, its history becomes the Function's node (or, for a view, its base gets
``CopySlices`` and the view ``AsStridedBackward0``), its version moves once for the
change in forward and once more for being marked dirty, gradients are right, and
the same refusals as for built-in in-place ops apply (a leaf requiring grad, a view
of one, an output of unbind/split).
"""

from __future__ import annotations

import pytest

from ._common import Raised, assert_both_same, both, grad, make, name, numpy, values, weighted_sum


def _functions(lib):
    class MulInPlace(lib.autograd.Function):
        """a *= k for a number k."""

        @staticmethod
        def forward(ctx, a, k):
            a.mul_(k)
            ctx.mark_dirty(a)
            ctx.k = k
            return a

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None

    class AddInPlace(lib.autograd.Function):
        """a += b for a tensor b (which may require grad while a does not)."""

        @staticmethod
        def forward(ctx, a, b):
            a.add_(b)
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g, g.sum(0) if g.dim() > 1 else g

    class ExpInPlaceNewStyle(lib.autograd.Function):
        """a = exp(a), setup_context style, saving the output."""

        @staticmethod
        def forward(a):
            return a.exp_()

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.mark_dirty(inputs[0])
            ctx.save_for_backward(output)

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ExpInPlace(lib.autograd.Function):
        """a = exp(a), classic style, saving the (dirty) output for backward."""

        @staticmethod
        def forward(ctx, a):
            a.exp_()
            ctx.mark_dirty(a)
            ctx.save_for_backward(a)
            return a

        @staticmethod
        def backward(ctx, g):
            (y,) = ctx.saved_tensors
            return g * y

    class ScaleAndCopy(lib.autograd.Function):
        """Two outputs: the input scaled in place, and a fresh tensor."""

        @staticmethod
        def forward(ctx, a):
            a.mul_(3.0)
            ctx.mark_dirty(a)
            return a, a * 2

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 3.0 + g2 * 6.0

    return dict(
        mul=lambda a, w: MulInPlace.apply(a, 2.5),
        add=lambda a, w: AddInPlace.apply(a, w),
        exp=lambda a, w: ExpInPlace.apply(a),
        exp_setup_context=lambda a, w: ExpInPlaceNewStyle.apply(a),
        two_outputs=lambda a, w: ScaleAndCopy.apply(a)[0],
    )


# where the changed tensor sits: name -> fn(lib, x) -> (base, target)
PLACES = {
    "non-leaf": lambda lib, x: (lambda b: (b, b))(x * 2),
    "view [1] of a non-leaf": lambda lib, x: (lambda b: (b, b[1]))(x * 2),
    "view t()[1:3] of a non-leaf": lambda lib, x: (lambda b: (b, b.t()[1:3]))(x.sin()),
    "plain tensor": lambda lib, x: (lambda b: (b, b))(make(lib, values(40, (3, 4)))),
    "view [:, 1] of a plain tensor": lambda lib, x: (lambda b: (b, b[:, 1]))(
        make(lib, values(40, (3, 4)))
    ),
}


def _cases():
    for fn in ("mul", "add", "exp", "exp_setup_context", "two_outputs"):
        for place_id, place in PLACES.items():
            if "plain" in place_id and fn != "add":
                continue  # only AddInPlace has a second input (w) that requires grad
            if "view" in place_id and fn == "two_outputs":
                continue  # torch refuses this (see REFUSED)
            yield pytest.param(fn, place, id=f"{fn} | {place_id}")


@pytest.mark.parametrize("fn,place", list(_cases()))
def test_mark_dirty_matches_torch(fn, place):
    """Same object returned, two version bumps, torch's grad_fn names (the Function's node,
    or CopySlices + AsStridedBackward0 for a view), values and gradients."""

    def program(lib):
        x = make(lib, values(41, (3, 4)), requires_grad=True)
        base, target = place(lib, x)
        w = make(lib, values(42, tuple(target.shape)[-1:]), requires_grad=True)
        before = target._version
        out = _functions(lib)[fn](target, w)
        facts = dict(
            returns_input=out is target,
            bumps=target._version - before,
            target_grad_fn=name(target),
            base_grad_fn=name(base),
            requires_grad=(target.requires_grad, base.requires_grad),
            target=numpy(target),
            base=numpy(base),
        )
        weighted_sum(lib, [target, base]).backward()
        facts.update(x_grad=grad(x), w_grad=grad(w))
        return facts

    facts = assert_both_same(program)
    assert facts["tg"]["returns_input"] and facts["tg"]["bumps"] == 2


def test_mark_dirty_when_nothing_requires_grad_records_nothing():
    """Nothing requires grad: the input is changed and bumped, no node is recorded."""

    def program(lib):
        a = make(lib, values(43, (3,)))
        out = _functions(lib)["mul"](a, None)
        return out is a, a._version, name(a), numpy(a)

    assert_both_same(program)


def _dirty_leaf(lib):
    x = make(lib, values(44, (3,)), requires_grad=True)
    return _functions(lib)["mul"](x, None)


def _dirty_view_of_a_leaf(lib):
    x = make(lib, values(44, (3, 4)), requires_grad=True)
    return _functions(lib)["mul"](x[0], None)


def _dirty_unbind_output(lib):
    x = make(lib, values(44, (3, 4)), requires_grad=True)
    return _functions(lib)["mul"]((x * 1).unbind()[0], None)


def _dirty_view_with_two_outputs(lib):
    x = make(lib, values(44, (3, 4)), requires_grad=True)
    return _functions(lib)["two_outputs"]((x * 1)[0], None)


REFUSED = {
    "a view, with a second output returned": (
        _dirty_view_with_two_outputs,
        "If your Function modifies inplace an input that is a view of another Tensor, your "
        "Function cannot return more than one Tensor.",
    ),
    "a leaf that requires grad": (
        _dirty_leaf,
        "a leaf Variable that requires grad has been used in an in-place operation.",
    ),
    "a view of a leaf that requires grad": (
        _dirty_view_of_a_leaf,
        "a view of a leaf Variable that requires grad is being used in an in-place operation.",
    ),
    "an output of unbind": (
        _dirty_unbind_output,
        "This view is the output of a function that returns multiple views.",
    ),
}


@pytest.mark.parametrize("program,phrase", REFUSED.values(), ids=REFUSED.keys())
def test_mark_dirty_refusals_match_torch(program, phrase):
    """Marking dirty what built-in in-place ops may not change raises torch's error."""
    facts = both(program)
    want, got = facts["torch"], facts["tg"]
    assert isinstance(want, Raised) and phrase in want.message, want
    assert isinstance(got, Raised), f"teachgrad did not raise; torch raised {want!r}"
    assert got.type == want.type and phrase in got.message, f"{got!r} vs torch {want!r}"

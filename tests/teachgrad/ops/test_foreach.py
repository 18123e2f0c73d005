"""The ``_foreach_*`` ops (ops/foreach.py) against torch: values, the one shared node of
an out-of-place call (torch's name, its edges: every input list in turn), the per-tensor
nodes of an in-place call, versions, gradients, and torch's errors; then gradcheck and
gradgradcheck in float64.

Each program runs with teachgrad and with torch (``assert_both_same``).
"""

from __future__ import annotations

import pytest

import teachgrad as tg
from teachgrad.autograd import gradcheck, gradgradcheck
from tests.teachgrad.inplace._common import (
    assert_both_same,
    both,
    make,
    name,
    numpy,
    torch_phrase,
    values,
    weighted_sum,
)

pytestmark = pytest.mark.usefixtures("torch")

SHAPES = ((2, 3), (4,), ())


def _inputs(lib, domain="positive", seed=0, requires_grad=True):
    return [make(lib, values(seed + k, s, domain), requires_grad) for k, s in enumerate(SHAPES)]


def _facts(lib, outputs, leaves):
    """What the outputs show, and the leaves' gradients of a weighted sum of them."""
    node = outputs[0].grad_fn
    facts = {
        "type": type(outputs).__name__,
        "values": [numpy(o) for o in outputs],
        "nodes": [name(o) for o in outputs],
        "output_nr": [o.output_nr for o in outputs],
        "shared": all(o.grad_fn is node for o in outputs),
        "edges": None if node is None else [n and n.name() for n, _ in node.next_functions],
        "versions": [o._version for o in outputs],
    }
    wrt = [t for t in leaves if t.requires_grad]
    if wrt and any(o.requires_grad for o in outputs):
        grads = lib.autograd.grad(weighted_sum(lib, outputs), wrt, allow_unused=True)
        facts["grads"] = [None if g is None else numpy(g) for g in grads]
    return facts


UNARY = ("abs", "cos", "exp", "expm1", "log", "log1p", "neg", "reciprocal", "rsqrt", "sigmoid")
UNARY += ("sign", "sin", "sqrt", "tan", "tanh", "round", "floor", "ceil")


@pytest.mark.parametrize("op", UNARY)
def test_unary_out_of_place_shares_one_node(op):
    def program(lib):
        xs = _inputs(lib)
        return _facts(lib, getattr(lib, f"_foreach_{op}")(xs), xs)

    assert_both_same(program)


# name -> the call, given the list and a second list of the same shapes
BINARY = {
    "add list": lambda lib, xs, ys: lib._foreach_add(xs, ys),
    "add list alpha": lambda lib, xs, ys: lib._foreach_add(xs, ys, alpha=2),
    "add number": lambda lib, xs, ys: lib._foreach_add(xs, 2.0),
    "add numbers": lambda lib, xs, ys: lib._foreach_add(xs, [1.0, 2.0, 3.0]),
    "add 0-d tensor": lambda lib, xs, ys: lib._foreach_add(xs, ys[2]),
    "sub list alpha": lambda lib, xs, ys: lib._foreach_sub(xs, ys, alpha=3),
    "sub number": lambda lib, xs, ys: lib._foreach_sub(xs, 2),
    "sub numbers": lambda lib, xs, ys: lib._foreach_sub(xs, [1.0, 2.0, 3.0]),
    "mul list": lambda lib, xs, ys: lib._foreach_mul(xs, ys),
    "mul the same list": lambda lib, xs, ys: lib._foreach_mul(xs, xs),
    "mul number": lambda lib, xs, ys: lib._foreach_mul(xs, 3.0),
    "mul numbers": lambda lib, xs, ys: lib._foreach_mul(xs, [1.0, 2.0, 3.0]),
    "mul 0-d tensor": lambda lib, xs, ys: lib._foreach_mul(xs, ys[2]),
    "div list": lambda lib, xs, ys: lib._foreach_div(xs, ys),
    "div number": lambda lib, xs, ys: lib._foreach_div(xs, 2.0),
    "div numbers": lambda lib, xs, ys: lib._foreach_div(xs, [1.0, 2.0, 4.0]),
    "div 0-d tensor": lambda lib, xs, ys: lib._foreach_div(xs, ys[2]),
    "pow list": lambda lib, xs, ys: lib._foreach_pow(xs, ys),
    "pow number": lambda lib, xs, ys: lib._foreach_pow(xs, 3),
    "pow numbers": lambda lib, xs, ys: lib._foreach_pow(xs, [1.0, 2.0, 0.5]),
    "pow of a number": lambda lib, xs, ys: lib._foreach_pow(2.0, xs),
    "maximum list": lambda lib, xs, ys: lib._foreach_maximum(xs, ys),
    "maximum number": lambda lib, xs, ys: lib._foreach_maximum(xs, 1.0),
    "minimum numbers": lambda lib, xs, ys: lib._foreach_minimum(xs, [1.0, 0.9, 1.1]),
    "clamp_min list": lambda lib, xs, ys: lib._foreach_clamp_min(xs, ys),
    "clamp_min number": lambda lib, xs, ys: lib._foreach_clamp_min(xs, 1.0),
    "clamp_max list": lambda lib, xs, ys: lib._foreach_clamp_max(xs, ys),
    "clamp_max numbers": lambda lib, xs, ys: lib._foreach_clamp_max(xs, [1.0, 0.9, 1.1]),
    "norm": lambda lib, xs, ys: lib._foreach_norm(xs),
    "norm 1": lambda lib, xs, ys: lib._foreach_norm(xs, 1),
    "norm inf": lambda lib, xs, ys: lib._foreach_norm(xs, float("inf")),
}


@pytest.mark.parametrize("case", list(BINARY))
def test_binary_and_norm_out_of_place(case):
    """(torch's backward to a 0-d tensor operand fails: "inconsistent range for TensorList
    output"; teachgrad's gradient for it is checked by gradcheck below.)"""

    def program(lib):
        xs, ys = _inputs(lib), _inputs(lib, seed=10)
        return _facts(lib, BINARY[case](lib, xs, ys), xs if "0-d" in case else xs + ys)

    assert_both_same(program)


def test_an_output_whose_input_needs_no_grad_still_has_the_node():
    def program(lib):
        xs = [make(lib, values(0, (3,), "positive"), True), make(lib, values(1, (2,)))]
        return _facts(lib, lib._foreach_exp(xs), xs)

    assert_both_same(program)


def test_maximum_and_minimum_nodes_show_their_numbers():
    """torch's test_grad_fn_attr_bindings (test_autograd.py): ``_saved_scalars``, and
    ``_saved_scalar`` for one number (a 0-d tensor reads as its number); clamp nodes
    keep none."""

    def program(lib):
        xs = _inputs(lib)
        facts = []
        for op in ("_foreach_maximum", "_foreach_minimum", "_foreach_clamp_min"):
            for other in ([0.0, 1.5, -2.0], 0.5, make(lib, 2.0)):
                node = getattr(lib, op)(xs, other)[0].grad_fn
                saved = [getattr(node, f"_saved_{k}", None) for k in ("scalar", "scalars")]
                facts.append((node.name(), saved))
        return facts

    assert_both_same(program)


def test_nothing_recorded_without_grad_or_under_no_grad():
    def program(lib):
        plain = _facts(lib, lib._foreach_exp(_inputs(lib, requires_grad=False)), [])
        with lib.no_grad():
            quiet = _facts(lib, lib._foreach_mul(_inputs(lib), 2.0), [])
        return plain, quiet

    assert_both_same(program)


IN_PLACE = {
    **{f"{op}_": lambda lib, xs, ys, op=op: getattr(lib, f"_foreach_{op}_")(xs) for op in UNARY},
    "add_ list alpha": lambda lib, xs, ys: lib._foreach_add_(xs, ys, alpha=2),
    "add_ number": lambda lib, xs, ys: lib._foreach_add_(xs, 2.0),
    "sub_ numbers": lambda lib, xs, ys: lib._foreach_sub_(xs, [1.0, 2.0, 3.0]),
    "mul_ number": lambda lib, xs, ys: lib._foreach_mul_(xs, 3.0),
    "mul_ 0-d tensor": lambda lib, xs, ys: lib._foreach_mul_(xs, ys[2]),
    "div_ list": lambda lib, xs, ys: lib._foreach_div_(xs, ys),
    "div_ number": lambda lib, xs, ys: lib._foreach_div_(xs, 2.0),
    "pow_ number": lambda lib, xs, ys: lib._foreach_pow_(xs, 2.0),
    "pow_ list": lambda lib, xs, ys: lib._foreach_pow_(xs, ys),
    "zero_": lambda lib, xs, ys: lib._foreach_zero_(xs),
}  # fmt: skip


@pytest.mark.parametrize("case", list(IN_PLACE))
def test_in_place_gives_each_tensor_its_op_node(case):
    def program(lib):
        leaves, ys = _inputs(lib), _inputs(lib, seed=10)
        xs = [x * 1 for x in leaves]
        returned = IN_PLACE[case](lib, xs, ys)
        facts = {
            "returned the list": returned is xs,
            "values": [numpy(x) for x in xs],
            "nodes": [name(x) for x in xs],
            "versions": [x._version for x in xs],
        }
        grads = lib.autograd.grad(weighted_sum(lib, xs), leaves + ys, allow_unused=True)
        facts["grads"] = [None if g is None else numpy(g) for g in grads]
        return facts

    assert_both_same(program)


def test_in_place_on_a_leaf_changes_nothing():
    """torch checks every tensor before it changes any: the first one keeps its value."""

    def program(lib):
        leaf = make(lib, values(0, (3,)), True)
        first = leaf * 1
        try:
            lib._foreach_mul_([first, leaf], 2.0)
        except RuntimeError as error:
            return str(error).splitlines()[0], first._version, numpy(first)

    assert_both_same(program)


ERRORS = {
    "empty list": lambda lib: lib._foreach_exp([]),
    "not a list": lambda lib: lib._foreach_exp(lib.ones(2)),
    "not a tensor in the list": lambda lib: lib._foreach_exp([lib.ones(2), 1.0]),
    "lists of other lengths": lambda lib: lib._foreach_add([lib.ones(2)] * 2, [lib.ones(2)]),
    "numbers of another length": lambda lib: lib._foreach_mul([lib.ones(2)] * 2, [1.0]),
    "alpha with a number": lambda lib: lib._foreach_add([lib.ones(2)], 2.0, alpha=2),
    "sub of a 0-d tensor": lambda lib: lib._foreach_sub(
        [lib.ones(2)], lib.tensor(1.0, requires_grad=True)
    ),
    "shapes that don't broadcast": lambda lib: lib._foreach_add([lib.ones(3)], [lib.ones(2)]),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_torchs(case):
    facts = both(ERRORS[case])
    ours, theirs = facts["tg"], facts["torch"]
    assert (ours.type, torch_phrase(ours.message.splitlines()[0])) == (
        theirs.type,
        torch_phrase(theirs.message.splitlines()[0]),
    )


PAIR, TWO_PAIRS = ((2, 3), (4,)), ((2, 3), (4,), (2, 3), (4,))
# name -> (the function of the inputs, their shapes)
GRADCHECKED = {
    "exp": (lambda *xs: tg._foreach_exp(list(xs)), PAIR),
    "sqrt": (lambda *xs: tg._foreach_sqrt(list(xs)), PAIR),
    "add list alpha": (lambda a, b, c, d: tg._foreach_add([a, b], [c, d], alpha=2), TWO_PAIRS),
    "mul list": (lambda a, b, c, d: tg._foreach_mul([a, b], [c, d]), TWO_PAIRS),
    "mul 0-d tensor": (lambda a, b, c: tg._foreach_mul([a, b], c), (*PAIR, ())),
    "div list": (lambda a, b, c, d: tg._foreach_div([a, b], [c, d]), TWO_PAIRS),
    "pow list": (lambda a, b, c, d: tg._foreach_pow([a, b], [c, d]), TWO_PAIRS),
    "pow of a number": (lambda *xs: tg._foreach_pow(2.0, list(xs)), PAIR),
    "maximum list": (lambda a, b, c, d: tg._foreach_maximum([a, b], [c, d]), TWO_PAIRS),
    "norm": (lambda *xs: tg._foreach_norm(list(xs)), PAIR),
}


@pytest.mark.parametrize("case", list(GRADCHECKED))
def test_gradcheck_and_gradgradcheck(case):
    fn, shapes = GRADCHECKED[case]
    inputs = tuple(make(tg, values(k, s, "positive"), True) for k, s in enumerate(shapes))
    assert gradcheck(fn, inputs, check_forward_ad=True, check_batched_grad=True)
    assert gradgradcheck(fn, inputs)

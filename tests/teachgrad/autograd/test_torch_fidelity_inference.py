"""Inference mode as PyTorch's own inference-mode tests exercise it (issue 20).

Each test walks through one behaviour those tests check (the mode flag, inference tensors
meeting functional, view and in-place ops inside and outside the mode, normal tensors
changed or viewed inside it, and the mix of the two) and compares what teachgrad does with
what torch does: the same program runs on both, and every fact it records must match. A
step that may raise is recorded with ``outcome`` so that later steps still run.
"""

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch
from tests.teachgrad.inplace._common import torch_phrase

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

REQUIRES_GRAD = pytest.mark.parametrize("requires_grad", [True, False])


def write_first_row(x):
    """``x[0] = 5``, an in-place change through a view (torch's tests also use transpose_,
    which teachgrad does not have)."""
    x[0] = 5.0
    return x


IN_PLACE = {"add_": lambda x: x.add_(2), "x[0] = 5": write_first_row}
EACH_IN_PLACE = pytest.mark.parametrize("change", IN_PLACE.values(), ids=IN_PLACE.keys())


def outcome(step):
    """``step()``'s result, or the class and first line of what it raised (library named
    neutrally), so one program can record an error and go on."""
    try:
        return step()
    except Exception as exc:  # noqa: BLE001 - the error is the fact we compare
        return type(exc).__name__, torch_phrase(str(exc).splitlines()[0])


def facts(lib, t):
    """What the inference-mode tests look at on a tensor."""
    return {
        "inference": t.is_inference(),
        "requires_grad": t.requires_grad,
        "view": t._is_view(),
        "leaf": outcome(lambda: t.is_leaf),
    }


def made_in_inference_mode(lib, requires_grad):
    """A fresh tensor made inside ``inference_mode()``."""
    with lib.inference_mode():
        return lib.ones(1, 2, 3, requires_grad=requires_grad)


def normal_non_leaf(lib, requires_grad):
    """A tensor made outside inference mode, not a leaf when it requires grad."""
    return lib.ones(1, 2, 3, requires_grad=requires_grad).clone()


# --------------------------------------------------------------------------- the mode itself


def test_the_mode_flag_follows_nested_blocks():
    def program(lib):
        seen = [lib.is_inference_mode_enabled()]
        with lib.inference_mode():
            seen.append(lib.is_inference_mode_enabled())
            with lib.inference_mode(False):
                seen.append(lib.is_inference_mode_enabled())
            seen.append(lib.is_inference_mode_enabled())
        return [*seen, lib.is_inference_mode_enabled()]

    assert_like_torch(program)


@REQUIRES_GRAD
def test_a_decorated_function_runs_in_the_mode_and_returns_an_inference_tensor(requires_grad):
    def program(lib):
        @lib.inference_mode()
        def square(x):
            return x * x, lib.is_inference_mode_enabled()

        out, enabled = square(lib.ones(1, 2, 3, requires_grad=requires_grad))
        return enabled, facts(lib, out), lib.is_inference_mode_enabled()

    assert_like_torch(program)


def test_constructors_in_the_mode_make_inference_tensors_that_keep_requires_grad():
    def program(lib):
        with lib.inference_mode():
            made = [
                lib.ones(1, 2, 3),
                lib.ones(1, 2, 3, requires_grad=True),
                lib.ones(1, 2, 3).requires_grad_(False),
                lib.ones(1, 2, 3).requires_grad_(True),
            ]
        return [facts(lib, t) for t in made]

    assert_like_torch(program)


def test_an_inference_tensor_has_no_version_counter():
    def program(lib):
        with lib.inference_mode():
            x = lib.ones(2)
        inside = outcome(lambda: x._version)
        return inside, outcome(lambda: x.view(-1)._version), outcome(lambda: (x * 2)._version)

    assert_like_torch(program)


def test_a_change_in_the_mode_to_a_saved_normal_tensor_breaks_its_backward():
    def program(lib):
        a = normal_non_leaf(lib, True)
        out = a * a  # saves a at version 0
        with lib.inference_mode():
            a.add_(2)
        version = a._version
        out.backward(lib.ones_like(out))
        return a.is_inference(), version

    assert_like_torch(program)


# --------------------------------------------------------------------------- inference tensors


@REQUIRES_GRAD
def test_ops_in_the_mode_on_an_inference_tensor(requires_grad):
    """A functional op and a view both give inference tensors that do not require grad."""

    def program(lib):
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=requires_grad)
            product, view = c * c, c.view(-1)
            view_of_view = view.view(2, 3)
        return [facts(lib, t) for t in (product, view, view_of_view)]

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_an_in_place_change_in_the_mode_keeps_an_inference_tensor_one(change, requires_grad):
    def program(lib):
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=requires_grad)
            change(c)
            change(c)
            return facts(lib, c), tuple(c.shape), as_numpy(c)

    assert_like_torch(program)


@REQUIRES_GRAD
def test_a_functional_op_outside_the_mode_on_an_inference_tensor(requires_grad):
    """The result is a normal tensor, a leaf that does not require grad... unless the
    inference tensor requires grad, when the op is recorded."""

    def program(lib):
        c = made_in_inference_mode(lib, requires_grad)
        out = c * 3
        return facts(lib, out), outcome(lambda: out.grad_fn and out.grad_fn.name())

    assert_like_torch(program)


# Ops outside the mode whose tensor inputs are all inference tensors: torch's inference tensors
# skip autograd's part of an op, so nothing is recorded even when one requires grad, unless
# the op meets a plain tensor on the way (a number it makes a tensor, a mask made outside the
# mode, a copy it makes).
ONLY_INFERENCE_INPUTS = {
    "c * c": lambda lib, c, d: c * c,
    "c.sum()": lambda lib, c, d: c.sum(),
    "c.sum(1)": lambda lib, c, d: c.sum(1),
    "c + d": lambda lib, c, d: c + d,
    "c.exp()": lambda lib, c, d: c.exp(),
    "c ** 2": lambda lib, c, d: c**2,
    "c.pow(d)": lambda lib, c, d: c.pow(d),
    "c.clamp(0, 1)": lambda lib, c, d: c.clamp(0, 1),
    "maximum": lambda lib, c, d: lib.maximum(c, d),
    "softmax": lambda lib, c, d: c.softmax(-1),
    "relu": lambda lib, c, d: lib.nn.functional.relu(c),
    "cat": lambda lib, c, d: lib.cat([c, d]),
    "matmul": lambda lib, c, d: c.reshape(2, 3) @ d.reshape(3, 2),
    "c + 1": lambda lib, c, d: c + 1,
    "c * 2": lambda lib, c, d: c * 2,
    "2 * c": lambda lib, c, d: 2 * c,
    "c / 2": lambda lib, c, d: c / 2,
    "c - 1": lambda lib, c, d: c - 1,
    "c.add(1, alpha=2)": lambda lib, c, d: c.add(1, alpha=2),
    "c + True": lambda lib, c, d: c + True,
    "where(c > 0, c, d)": lambda lib, c, d: lib.where(c > 0, c, d),
    "where(c > 0, c, 0.0)": lambda lib, c, d: lib.where(c > 0, c, 0.0),
    "masked_fill": lambda lib, c, d: c.masked_fill(c > 5, 1.0),
}
# torch records these through the plain tensor it makes, under another node's name
# (CopyBackwards, FmodBackward1, SubBackward0 ...): the same facts, the name aside
ONLY_INFERENCE_INPUTS_OTHER_NAME = {
    "c.clone()": lambda lib, c, d: c.clone(),
    "c.double()": lambda lib, c, d: c.double(),
    "c.fmod(2)": lambda lib, c, d: c.fmod(2),
    "c % 2": lambda lib, c, d: c % 2,
    "1 - c": lambda lib, c, d: 1 - c,
}


@REQUIRES_GRAD
@pytest.mark.parametrize(
    "op, named",
    [(op, True) for op in ONLY_INFERENCE_INPUTS.values()]
    + [(op, False) for op in ONLY_INFERENCE_INPUTS_OTHER_NAME.values()],
    ids=[*ONLY_INFERENCE_INPUTS, *ONLY_INFERENCE_INPUTS_OTHER_NAME],
)
def test_an_op_outside_the_mode_whose_tensor_inputs_are_all_inference_tensors(
    op, named, requires_grad
):
    def program(lib):
        with lib.inference_mode():
            c = lib.tensor(
                [[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]],
                dtype=lib.float64,
                requires_grad=requires_grad,
            )
            d = lib.ones(2, 3, dtype=lib.float64)
        out = op(lib, c, d)
        node = out.grad_fn is not None and (out.grad_fn.name() if named else True)
        return facts(lib, out), node, as_numpy(out)

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_an_in_place_change_outside_the_mode_to_an_inference_tensor(change, requires_grad):
    def program(lib):
        c = made_in_inference_mode(lib, requires_grad)
        return outcome(lambda: facts(lib, change(c)))

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_an_in_place_change_outside_the_mode_under_no_grad(change, requires_grad):
    """no_grad lifts the leaf check but not the inference-tensor one."""

    def program(lib):
        c = made_in_inference_mode(lib, requires_grad)
        with lib.no_grad():
            return outcome(lambda: facts(lib, change(c)))

    assert_like_torch(program)


VIEWS = {
    "view": lambda c: c.view(-1),
    "view_as": lambda c: c.view_as(c),
    "c[0]": lambda c: c[0],
    "t": lambda c: c[0].t(),
    "mT": lambda c: c.mT,
    "unsqueeze": lambda c: c.unsqueeze(0),
    "expand": lambda c: c.expand(2, 2, 3),
    "reshape": lambda c: c.reshape(6),
    "narrow": lambda c: c.narrow(2, 0, 1),
    "diagonal": lambda c: c[0].diagonal(),
    "unbind": lambda c: c.unbind(1)[0],
    "split": lambda c: c.split(1, 2)[1],
    "detach": lambda c: c.detach(),
}


@REQUIRES_GRAD
@pytest.mark.parametrize("inside", [True, False], ids=["inside the mode", "outside it"])
@pytest.mark.parametrize("op", VIEWS.values(), ids=VIEWS.keys())
def test_a_view_of_an_inference_tensor_is_a_new_inference_tensor(op, inside, requires_grad):
    """No view, no base, no history, whatever the mode, yet the same memory."""

    def program(lib):
        c = made_in_inference_mode(lib, requires_grad)
        with lib.inference_mode(inside):
            out = op(c)
        shared = out.data_ptr() >= c.data_ptr()
        with lib.inference_mode():
            out.add_(1)  # reaches c: the memory is shared
        return facts(lib, out), out._base is None, out.grad_fn, shared, as_numpy(c)

    assert_like_torch(program)


# --------------------------------------------------------------------------- normal tensors


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_a_normal_tensor_changed_in_place_in_the_mode_stays_normal(change, requires_grad):
    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        seen = []
        with lib.inference_mode():
            change(a)
            seen.append((facts(lib, a), a._version))
            change(a)
            seen.append((facts(lib, a), a._version))
            view = a.view(-1)
            seen.append(facts(lib, view))
        return seen, as_numpy(a)

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_a_normal_tensor_changed_in_the_mode_then_outside_it(change, requires_grad):
    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        with lib.inference_mode():
            change(a)
        seen = []
        for _ in range(2):
            change(a)
            seen.append((facts(lib, a), a._version, outcome(lambda: a.grad_fn.name())))
        view = a.view(-1)
        return seen, facts(lib, view), as_numpy(a)

    assert_like_torch(program)


@REQUIRES_GRAD
def test_views_of_a_normal_tensor_taken_and_changed_in_the_mode(requires_grad):
    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        with lib.inference_mode():
            out = a.view(-1)
            tmp = out.view(-1)
            seen = [facts(lib, out), facts(lib, tmp)]
            tmp.add_(2)
            seen.append((tmp.is_inference(), tmp.requires_grad, tmp._is_view()))
            seen.append((a._version, tmp._version, out._version))
        return seen, as_numpy(a)

    assert_like_torch(program)


@REQUIRES_GRAD
def test_a_view_taken_in_the_mode_used_outside_it(requires_grad):
    """Reading it works; changing it in place is refused when its base requires grad."""

    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        with lib.inference_mode():
            out = a.view(-1)
        tmp = out * out
        changed = outcome(lambda: out.add_(2) is out)
        later = out.view(2, 3)
        return [facts(lib, out), facts(lib, tmp), changed, facts(lib, later), as_numpy(a)]

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_changing_a_view_taken_in_the_mode(change, requires_grad):
    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        with lib.inference_mode():
            view = a.view_as(a)
        return outcome(lambda: change(view) is view), a._version

    assert_like_torch(program)


@REQUIRES_GRAD
@EACH_IN_PLACE
def test_a_view_taken_in_the_mode_after_its_base_changes_outside_it(change, requires_grad):
    """Its history cannot be rebuilt: asking for its grad_fn raises when the base requires
    grad."""

    def program(lib):
        a = normal_non_leaf(lib, requires_grad)
        with lib.inference_mode():
            view = a.view(-1)
        change(a)
        grad_fn = outcome(lambda: view.grad_fn)
        return grad_fn, outcome(lambda: view.is_leaf), as_numpy(view)

    assert_like_torch(program)


# --------------------------------------------------------------------------- mixing the two


@REQUIRES_GRAD
def test_adding_an_inference_tensor_to_a_normal_one(requires_grad):
    """add saves nothing, so it works and a gradient reaches the inference leaf."""

    def program(lib):
        s = lib.ones(1, 2, 3, requires_grad=requires_grad)
        c = made_in_inference_mode(lib, requires_grad)
        out = c.add(s)
        if requires_grad:
            out.backward(lib.ones_like(out))
        return facts(lib, out), as_numpy(c.grad), as_numpy(s.grad)

    assert_like_torch(program)


OPS_THAT_SAVE = {
    "mul": lambda lib, s, c: c * s,
    "mul reflected": lambda lib, s, c: s * c,
    "stack": lambda lib, s, c: lib.stack([s, c]),
    "matmul": lambda lib, s, c: s.view(2, 3) @ c.view(3, 2),
    "mul_": lambda lib, s, c: s.clone().mul_(c),
}


@REQUIRES_GRAD
@pytest.mark.parametrize("op", OPS_THAT_SAVE.values(), ids=OPS_THAT_SAVE.keys())
def test_an_op_that_would_save_an_inference_tensor(op, requires_grad):
    """Refused when the op is recorded (s requires grad), fine otherwise."""

    def program(lib):
        s = lib.ones(1, 2, 3, requires_grad=requires_grad)
        with lib.inference_mode():
            c = lib.ones(1, 2, 3)
        out = op(lib, s, c)
        return out.requires_grad, out.is_inference(), as_numpy(out)

    assert_like_torch(program)


@REQUIRES_GRAD
def test_view_as_between_an_inference_tensor_and_a_normal_one(requires_grad):
    def program(lib):
        s = lib.ones(1, 2, 3, requires_grad=requires_grad)
        with lib.inference_mode():
            c = lib.ones(1, 2, 3)
        return facts(lib, c.view_as(s)), facts(lib, s.view_as(c))

    assert_like_torch(program)


# --------------------------------------------------------------------------- custom Functions


@pytest.mark.parametrize("inside", [True, False], ids=["inside the mode", "outside it"])
def test_a_custom_function_that_saves_an_inference_tensor(inside):
    def program(lib):
        class Square(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x * x

            @staticmethod
            def backward(ctx, g):
                (x,) = ctx.saved_tensors
                return 2 * x * g

        c = made_in_inference_mode(lib, True)
        if inside:
            with lib.inference_mode():
                out = Square.apply(c)
        else:
            out = Square.apply(c)
        result = facts(lib, out), outcome(lambda: out.sum().backward())
        return result, as_numpy(c.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- views of such views

MODES = {"inference_mode": lambda lib: lib.inference_mode(), "no_grad": lambda lib: lib.no_grad()}
VIEWS_OF_THE_VIEW = {
    "v[0]": lambda v: v[0],
    "v.view(-1)": lambda v: v.view(-1),
    "v.unbind()[0]": lambda v: v.unbind()[0],
}
EACH_MODE = pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
EACH_VIEW_OF_THE_VIEW = pytest.mark.parametrize(
    "view_of", VIEWS_OF_THE_VIEW.values(), ids=VIEWS_OF_THE_VIEW.keys()
)


@EACH_MODE
@EACH_VIEW_OF_THE_VIEW
def test_changing_a_view_taken_outside_the_mode_of_a_view_taken_in_it(view_of, mode):
    """The restriction passes on to the new view, and torch's message names its grad_fn."""

    def program(lib):
        a = normal_non_leaf(lib, True).view(2, 3)
        with mode(lib):
            v = a.view_as(a)
        w = view_of(v)
        return outcome(lambda: w.add_(1) is w), outcome(lambda: write_first_row(v) is v)

    assert_like_torch(program)


@EACH_MODE
@EACH_VIEW_OF_THE_VIEW
def test_a_view_of_a_view_taken_in_the_mode_after_its_base_changes(view_of, mode):
    def program(lib):
        a = normal_non_leaf(lib, True).view(2, 3)
        with mode(lib):
            v = a.view_as(a)
        w = view_of(v)
        a.mul_(2)
        return outcome(lambda: w.grad_fn), outcome(lambda: v.grad_fn)

    assert_like_torch(program)


@REQUIRES_GRAD
@pytest.mark.parametrize("inside", [True, False], ids=["inside the mode", "outside it"])
def test_a_custom_function_that_returns_its_inference_input_as_is(inside, requires_grad):
    """The output is a new inference tensor, no view of the input; recorded when it may be."""

    def program(lib):
        class Same(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, g):
                return 3 * g

        c = made_in_inference_mode(lib, requires_grad)
        with lib.inference_mode(inside):
            out = Same.apply(c)
        backward = outcome(lambda: (out * 2).sum().backward())
        return facts(lib, out), out is c, backward, as_numpy(c.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- reading a stale view

ALL_MODES = {"normal": lambda lib: lib.enable_grad(), **MODES}
RESTRICTED_VIEWS = {
    "inference_mode view": ("inference_mode", lambda a: a.view(-1)),
    "no_grad view": ("no_grad", lambda a: a.view(-1)),
    "unbind output": ("normal", lambda a: a.unbind()[0]),
}


@pytest.mark.parametrize("made", RESTRICTED_VIEWS.values(), ids=RESTRICTED_VIEWS.keys())
@pytest.mark.parametrize("changed_in", ALL_MODES.keys())
@pytest.mark.parametrize("read_in", ALL_MODES.keys())
def test_reading_a_restricted_view_after_its_base_changed(made, changed_in, read_in):
    """Asking for its grad_fn (or is_leaf) refuses in every mode; requires_grad never does."""

    def program(lib):
        a = normal_non_leaf(lib, True).view(2, 3)
        mode, take = made
        with ALL_MODES[mode](lib):
            v = take(a)
        with ALL_MODES[changed_in](lib):
            a.mul_(2)
        with ALL_MODES[read_in](lib):
            grad_fn = outcome(lambda: v.grad_fn and v.grad_fn.name())
            return grad_fn, outcome(lambda: v.is_leaf), v.requires_grad, as_numpy(v)

    assert_like_torch(program)


# --------------------------------------------------------------------------- requires_grad and grad()


@pytest.mark.parametrize("value", [True, False])
@pytest.mark.parametrize("inside", [True, False], ids=["inside the mode", "outside it"])
def test_switching_requires_grad_of_an_inference_tensor(inside, value):
    def program(lib):
        with lib.inference_mode():
            c = lib.ones(2)
        with lib.inference_mode(inside):
            return outcome(lambda: facts(lib, c.requires_grad_(value)))

    assert_like_torch(program)


def test_grad_with_respect_to_an_inference_leaf():
    """A gradient reaches it through ops that save nothing of it."""

    def program(lib):
        c = made_in_inference_mode(lib, True)
        s = lib.full((1, 2, 3), 2.0, requires_grad=True)
        out = (c + s * s).sum()
        return [as_numpy(g) for g in lib.autograd.grad(out, [c, s])]

    assert_like_torch(program)


@REQUIRES_GRAD
@pytest.mark.parametrize("detached_in", ["the mode", "outside"])
def test_an_inference_tensor_detached_outside_the_mode_may_change_in_place(
    requires_grad, detached_in
):
    """torch's quirk (found by the fuzzer): ``c.detach()`` made outside inference mode is
    still an inference tensor, but has a version counter of its own, so ``add_`` on it works
    (and writes c's memory); a view of it, or a detach made inside the mode, may not change."""

    def program(lib):
        c = made_in_inference_mode(lib, requires_grad)
        if detached_in == "the mode":
            with lib.inference_mode():
                d = c.detach()
        else:
            d = c.detach()
        changed = [
            outcome(lambda: d.add_(2) is d),
            c.tolist() if detached_in == "outside" else None,
        ]
        # (c's values only where add_ is allowed: torch writes them before it refuses)
        return [
            facts(lib, d),
            changed,
            outcome(lambda: d._version),
            outcome(lambda: d.view(-1).add_(1) is None),
            outcome(lambda: d.requires_grad_()),
        ]

    assert_like_torch(program)


@pytest.mark.parametrize("change", ["add_", "zero_", "copy_ of itself", "mul_ by a part of it"])
def test_outside_the_mode_the_kernels_checks_come_before_the_inference_refusal(change):
    """torch's kernel refuses an expanded tensor (or an input overlapping it in part) before
    the version bump refuses an inference tensor (found by the fuzzer)."""
    steps = {
        "add_": lambda e: e.add_(1),
        "zero_": lambda e: e.zero_(),
        "copy_ of itself": lambda e: e.copy_(e),
        "mul_ by a part of it": lambda e: e[1:].mul_(e[:-1]),
    }

    def program(lib):
        with lib.inference_mode():
            c = lib.ones(3)
        e = c.expand(2, 3) if change in ("add_", "zero_") else c
        return outcome(lambda: steps[change](e) is None)

    assert_like_torch(program)

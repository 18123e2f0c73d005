"""Torch fidelity of the engine's core (issue 20): saved-tensor hooks and what backward
frees, retain_grad across in-place changes of views, inference-mode views, deepcopy,
Function instances, reentrant backward. Each program runs on teachgrad and on torch and
must end the same way (same values, or the same error class and first line).
"""

import contextlib
import copy
import gc
import math
import subprocess
import sys
import textwrap
import warnings
import weakref

import pytest

import teachgrad as tg
from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")

# --------------------------------------------------------------------------- saved-tensor hooks

PACKS = {
    "2 * t": lambda t: 2 * t,
    "t + 1": lambda t: t + 1,
    "clone": lambda t: t.clone(),
    "detach": lambda t: t.detach(),
}
SAVING_OPS = {
    "x ** 3 (saves its input)": lambda x: x**3,
    "exp (saves its output)": lambda x: x.exp(),
    "x * x": lambda x: x * x,
    "sin of a non-leaf": lambda x: (x * 1.5).sin(),
}


@pytest.mark.parametrize("pack", PACKS.values(), ids=PACKS.keys())
@pytest.mark.parametrize("op", SAVING_OPS.values(), ids=SAVING_OPS.keys())
def test_double_backward_through_unpacked_tensors_uses_the_original_place_in_the_graph(pack, op):
    """What unpack returns takes the saved tensor's place in the graph: its values are
    used, its own history (the pack hook's ``2 * t``) is not differentiated."""

    def program(lib):
        x = lib.tensor([0.5, 2.0], dtype=lib.float64, requires_grad=True)
        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            y = op(x).sum()
        (g,) = lib.autograd.grad(y, x, create_graph=True)
        (gg,) = lib.autograd.grad(g.sum(), x)
        return as_numpy(g), as_numpy(gg)

    assert_like_torch(program)


@pytest.mark.parametrize("change", ["mul_", "add_", "zero_"])
def test_a_pack_hook_must_not_change_its_input_in_place(change):
    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        a = x * 1

        def pack(t):
            getattr(t, change)(*([] if change == "zero_" else [2.0]))
            return t

        with lib.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            return as_numpy(a * a)

    assert_like_torch(program)


@pytest.mark.parametrize("leaf", [False, True], ids=["non-leaf", "leaf"])
def test_detaching_a_saved_input_in_place(leaf):
    """A non-leaf saved for backward and then detach_()'ed is an error at backward; a leaf
    that was detach_()'ed simply gets no gradient."""

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        a = x if leaf else x * 1
        y = a * a
        a.detach_()
        y.sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("order", ["disable inside hooks", "hooks inside disable", "both disable"])
def test_disable_saved_tensors_hooks_raises_its_message_wherever_hooks_meet_it(order):
    def program(lib):
        graph = lib.autograd.graph
        hooks = graph.saved_tensors_hooks(lambda t: t, lambda t: t)
        first, second = {
            "disable inside hooks": (hooks, graph.disable_saved_tensors_hooks("no hooks here")),
            "hooks inside disable": (graph.disable_saved_tensors_hooks("no hooks here"), hooks),
            "both disable": (
                graph.disable_saved_tensors_hooks("outer"),
                graph.disable_saved_tensors_hooks("inner"),
            ),
        }[order]
        with first, second:
            x = lib.ones(2, dtype=lib.float64, requires_grad=True)
            return as_numpy(x * x)

    assert_like_torch(program)


# --------------------------------------------------------------------------- what backward frees

SECOND_BACKWARD = {
    "x * 2 (a saved number)": lambda x: x * 2,
    "x / 2": lambda x: x / 2,
    "x + 2 (nothing saved)": lambda x: x + 2,
    "sum (nothing saved)": lambda x: x.sum(),
    "exp": lambda x: x.exp(),
    "index with a list": lambda x: x[[1, 1, 0]],
    "index with a tensor": lambda x: x[x.detach() > 1.5],
    "index_put": lambda x: (x * 1).index_put((_long(x, [0, 2]),), x[:2] * 1),
    "c[[1, 2]] = b[[1, 1]]": lambda x: _assign(x, [1, 1]),
    "c[[1, 2]] = b[:2]": lambda x: _assign(x, slice(0, 2)),
    "gather": lambda x: x.gather(0, _long(x, [2, 0])),
    # a view of a tensor that does not require grad, written from x: only CopySlices holds
    # anything (its in-place op's node), and torch frees that too
    "c[1:] = x[:2]": lambda x: _into_view(x, lambda c, v: c.__setitem__(slice(1, None), v)),
    "c[1] = x[0]": lambda x: _into_view(x, lambda c, v: c.__setitem__(1, v[0])),
    "c[1:].copy_(x[:2])": lambda x: _into_view(x, lambda c, v: c[1:].copy_(v)),
    "c[1:].add_(x[:2])": lambda x: _into_view(x, lambda c, v: c[1:].add_(v)),
    "c[1:].mul_(x[:2])": lambda x: _into_view(x, lambda c, v: c[1:].mul_(v)),
}


def _into_view(x, write):
    c = x.detach() * 0
    write(c, x[:2])
    return c


def _long(x, values):
    return x.new_tensor(values).long()


def _assign(x, key):
    b = x * 1
    c = x.detach() * 0
    c[[1, 2]] = b[key]
    return c


@pytest.mark.parametrize("second", ["backward", "grad", "after retain_graph"])
@pytest.mark.parametrize("op", SECOND_BACKWARD.values(), ids=SECOND_BACKWARD.keys())
def test_a_second_backward_through_a_freed_graph(op, second):
    """Raises exactly where torch raises: where a node saved something (a tensor, a number
    torch wraps as one, an index) or is a CopySlices, not where nothing was saved."""

    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
        s = op(x).sum()
        if second == "grad":
            lib.autograd.grad(s, x)
            return as_numpy(lib.autograd.grad(s, x)[0])
        s.backward(retain_graph=second == "after retain_graph")
        s.backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


def test_reading_a_freed_saved_number_names_it():
    import teachgrad as tg

    x = tg.tensor([1.0], requires_grad=True)
    y = x * 2
    y.sum().backward()
    with pytest.raises(RuntimeError, match="tried to read its saved 'other'"):
        y.grad_fn._saved_other  # noqa: B018 - reading is the test


# --------------------------------------------------------------------------- retain_grad and views

RETAINS = {
    "the other view": ("v2", "v1"),
    "the modified view": ("v1", "v1"),
    "the base": ("base", "v1"),
    "the base, modified itself": ("base", "base"),
    "a view, its base modified": ("v2", "base"),
}


@pytest.mark.parametrize(("retained", "modified"), RETAINS.values(), ids=RETAINS.keys())
def test_retain_grad_follows_the_tensor_when_an_in_place_change_rewrites_its_history(
    retained, modified
):
    def program(lib):
        x = lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True)
        base = x * 1
        views = {"base": base, "v1": base[:2], "v2": base[2:]}
        views[retained].retain_grad()
        views[modified].mul_(2)
        loss = (views[retained] * lib.arange(1.0, 1 + views[retained].numel())).sum()
        loss.backward()
        return as_numpy(views[retained].grad), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("where", ["outside", "inside inference mode"])
def test_a_view_made_in_inference_mode_whose_base_then_changes(where):
    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        a = x * 1
        with lib.inference_mode():
            v = a[:1]
            if where == "inside inference mode":
                a.add_(1)
        if where == "outside":
            a.mul_(2)
        return str(v.grad_fn is None)

    assert_like_torch(program)


def test_a_view_made_in_inference_mode_of_a_tensor_without_grad_is_fine():
    def program(lib):
        b = lib.ones(2, dtype=lib.float64)
        with lib.inference_mode():
            w = b[:1]
        b.mul_(2)
        return str(w.grad_fn), as_numpy(w)

    assert_like_torch(program)


# ------------------------------------------------------- the outputs given to backward and grad


def _outputs_and_errors(lib):
    """Outputs to differentiate, wrong in one or more ways; torch counts the gradients
    first, then checks output by output (a Tensor, then its gradient), and only then
    whether each output requires grad."""
    x = lib.ones(2, dtype=lib.float64, requires_grad=True)
    n = lib.ones(2, dtype=lib.float64)
    ones, bad = lib.ones(2, dtype=lib.float64), lib.ones(3, dtype=lib.float64)
    backward, grad = lib.autograd.backward, lib.autograd.grad
    return {
        "too few gradients, a number": lambda: backward([x.sum(), 3.0], [lib.ones(())]),
        "too few gradients, no grad": lambda: backward([n.sum(), x.sum()], [lib.ones(())]),
        "second output needs no grad": lambda: backward([x.sum(), n.sum()]),
        "backward of a number": lambda: backward([3.0]),
        "backward, a number second": lambda: backward([x.sum(), 3.0]),
        "grad of a number": lambda: grad([3.0], x),
        "grad of None": lambda: grad([None], x),
        "grad, no grad then a number": lambda: grad([n.sum(), 3.0], x),
        "grad, batched, a number": lambda: grad([x.sum(), 3.0], x, is_grads_batched=True),
        "grad, batched, only a number": lambda: grad([3.0], x, is_grads_batched=True),
        "grad, number after a good pair": lambda: grad([x * 1, 3.0], x, [ones, ones]),
        "grad, number before a bad shape": lambda: grad([3.0, x * 1], x, [ones, bad]),
        "grad, bad shape before a number": lambda: grad([x * 1, 3.0], x, [bad, ones]),
        "grad, number gradient first": lambda: grad([x * 1, 3.0], x, [1.0, ones]),
        "grad, numbers as outputs and inputs": lambda: grad([3.0], [1.0]),
    }


@pytest.mark.parametrize("case", list(_outputs_and_errors(tg)))
def test_wrong_outputs_are_refused_in_torchs_order(case):
    assert_like_torch(lambda lib: _outputs_and_errors(lib)[case]())


# ------------------------------------------------- which changed saved tensor an error names

BOTH_SAVED = {
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "pow": lambda lib, a, b: a**b,
    "maximum": lambda lib, a, b: lib.maximum(a, b),
    "minimum": lambda lib, a, b: lib.minimum(a, b),
    "clamp(min=)": lambda lib, a, b: a.clamp(min=b),
    "clamp(min=, max=)": lambda lib, a, b: a.clamp(min=b - 1, max=b),
    "@": lambda lib, a, b: a.reshape(1, 3) @ b.reshape(3, 1),
    "mm": lambda lib, a, b: lib.mm(a[None], b[:, None]),
    "mv": lambda lib, a, b: lib.mv(a[None], b),
    "dot": lambda lib, a, b: lib.dot(a, b),
    "F.linear": lambda lib, a, b: lib.nn.functional.linear(a[None], b[None]),
}


@pytest.mark.parametrize("view_first", [True, False], ids=["op(view, base)", "op(base, view)"])
@pytest.mark.parametrize("op", BOTH_SAVED.values(), ids=BOTH_SAVED.keys())
def test_the_version_error_names_the_saved_tensor_torch_checks_first(op, view_first):
    """Both saved inputs changed (one is a view of the other): torch's node checks its saved
    values in its own order (``other``, ``exponent``, ``min``, ``mat2`` first; ``mv`` and
    ``dot``: ``self`` first), and its error describes the first changed one it meets."""

    def program(lib):
        b = lib.full((3,), 0.5, dtype=lib.float64, requires_grad=True) * 1
        v = b[:]
        y = op(lib, v, b) if view_first else op(lib, b, v)
        with lib.no_grad():
            b.add_(1)
        y.sum().backward()

    assert_like_torch(program)


# ----------------------------------------------------- a view made before its base required grad


def _names(node):
    """A node's name and the names along its edges (None for an empty edge, or no node)."""
    if node is None:
        return None
    return node.name(), [None if fn is None else fn.name() for fn, _ in node.next_functions]


def _view_then_requires_grad(lib):
    """``v = b[:2]``, then ``b.requires_grad_()``: v has no history, but requires grad."""
    b = lib.ones(3, dtype=lib.float64)
    v = b[:2]
    b.requires_grad_()
    return b, v


VIEW_BEFORE_GRAD_OPS = {
    "v * 2": lambda lib, v: v * 2,
    "v.exp()": lambda lib, v: v.exp(),
    "v + v": lambda lib, v: v + v,
    "stack": lambda lib, v: lib.stack([v, v]),
    "v.clone()": lambda lib, v: v.clone(),
    "v[:1] (a view of it)": lambda lib, v: v[:1],
    "v.sum()": lambda lib, v: v.sum(),
}


@pytest.mark.parametrize("op", VIEW_BEFORE_GRAD_OPS.values(), ids=VIEW_BEFORE_GRAD_OPS.keys())
def test_ops_on_a_view_made_before_its_base_required_grad_are_recorded(op):
    """torch: the view requires grad (its base does), so ops on it are recorded; it has no
    gradient slot of its own, so its edge is empty and backward sends nothing to it or to
    the base."""

    def program(lib):
        b, v = _view_then_requires_grad(lib)
        y = op(lib, v)
        facts = [v.requires_grad, v.is_leaf, y.requires_grad, _names(y.grad_fn)]
        y.sum().backward()
        return str(facts), as_numpy(v.grad), as_numpy(b.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("change", ["mul_", "zero_", "add_"])
def test_such_a_view_may_not_change_in_place(change):
    def program(lib):
        _, v = _view_then_requires_grad(lib)
        getattr(v, change)(*([] if change == "zero_" else [2.0]))

    assert_like_torch(program)


def test_such_a_view_follows_its_base_changed_in_place_under_no_grad():
    def program(lib):
        b, v = _view_then_requires_grad(lib)
        with lib.no_grad():
            b.add_(1)
        y = v * 2
        return v.grad_fn.name(), y.requires_grad

    assert_like_torch(program)


def test_a_view_made_under_no_grad_of_a_base_that_requires_grad_records_an_empty_edge():
    def program(lib):
        b = lib.ones(3, dtype=lib.float64, requires_grad=True)
        with lib.no_grad():
            v = b[:2]
        y = v * 2
        return str([v.requires_grad, v.is_leaf, _names(y.grad_fn)])

    assert_like_torch(program)


@pytest.mark.parametrize("made", ["under no_grad", "before its base required grad"])
@pytest.mark.parametrize("other", ["plain", "inference tensor", "requires grad"])
def test_a_builtin_saves_nothing_for_an_empty_edge(made, other):
    """torch's built-ins save only what the gradients of inputs with an edge need
    (should_compute_output): ``v * w`` with v's edge empty saves no ``other``, so an
    inference tensor ``w`` is fine; with ``w`` requiring grad, ``self`` is saved."""

    def program(lib):
        if made == "under no_grad":
            b = lib.ones(3, dtype=lib.float64, requires_grad=True)
            with lib.no_grad():
                v = b[:2]
        else:
            b, v = _view_then_requires_grad(lib)
        if other == "inference tensor":
            with lib.inference_mode():
                w = lib.full((2,), 3.0, dtype=lib.float64)
        else:
            w = lib.full((2,), 3.0, dtype=lib.float64, requires_grad=other == "requires grad")
        y = v * w
        saved = [
            getattr(y.grad_fn, f"_saved_{name}", None) is not None for name in ("self", "other")
        ]
        y.sum().backward()
        return str([y.requires_grad, _names(y.grad_fn), saved]), as_numpy(w.grad)

    assert_like_torch(program)


def test_such_a_view_stops_requiring_grad_with_its_base():
    def program(lib):
        b = lib.ones(3, dtype=lib.float64)
        v = b.view(3)
        b.requires_grad_()
        b.requires_grad_(False)
        return v.requires_grad, (v * 2).requires_grad

    assert_like_torch(program)


# ----------------------------------------------------------- a view whose base was detach_()ed

DETACHED_BASE_VIEWS = {
    "t()": lambda b: b.t(),
    "b[0]": lambda b: b[0],
    "unbind()[0]": lambda b: b.unbind()[0],
    "split(1)[0]": lambda b: b.split(1)[0],
}
AFTER_DETACH = {
    "nothing": lambda b, v: None,
    "v.mul_(2)": lambda b, v: v.mul_(2),
    "(v * 2).sum().backward()": lambda b, v: (v * 2).sum().backward(),
    "b.mul_(2)": lambda b, v: b.mul_(2),
}


@pytest.mark.parametrize("base_changed", [False, True], ids=["base unchanged", "b.add_(1)"])
@pytest.mark.parametrize("then", AFTER_DETACH.values(), ids=AFTER_DETACH.keys())
@pytest.mark.parametrize("view", DETACHED_BASE_VIEWS.values(), ids=DETACHED_BASE_VIEWS.keys())
@pytest.mark.parametrize("leaf", [True, False], ids=["leaf base", "non-leaf base"])
def test_a_view_whose_base_was_detached_in_place(leaf, view, then, base_changed):
    """torch: the view keeps its node until the memory changes; then its node is rebuilt
    (AsStridedBackward0 with an empty edge, or the refusal of an unbind()/split() output),
    and changing the view in place is refused, as for any view of a leaf."""

    def program(lib):
        b = lib.ones(2, 3, dtype=lib.float64, requires_grad=True)
        b = b if leaf else b * 1
        v = view(b)
        b.detach_()
        if base_changed:
            b.add_(1)
        facts = [_names(v.grad_fn), v.requires_grad, b.requires_grad]
        then(b, v)
        facts += [_names(v.grad_fn), v.requires_grad, _names(b.grad_fn), b.is_leaf, b._version]
        return str(facts)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (.grad of a non-leaf view is not what this is about)
        assert_like_torch(program)


# --------------------------------------------------------------------------- copies and instances


def test_deepcopy_leaves_hooks_behind():
    """torch copies a parameter's values, not its hooks (an optimizer step registered as a
    post-accumulate hook must not run for the copy)."""

    def program(lib):
        calls = []
        m = lib.nn.Linear(2, 1).double()
        m.weight.register_post_accumulate_grad_hook(lambda p: calls.append("post"))
        m.weight.register_hook(lambda g: calls.append("hook"))
        twin = copy.deepcopy(m)
        twin(lib.ones(1, 2, dtype=lib.float64)).sum().backward()
        copied = calls[:]
        m(lib.ones(1, 2, dtype=lib.float64)).sum().backward()
        return copied, calls

    assert_like_torch(program)


def test_a_function_instance_warns_and_calling_it_is_the_legacy_error():
    def program(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with pytest.warns(DeprecationWarning, match="should not be instantiated"):
            double = Double()
        return as_numpy(double(lib.ones(1)))

    assert_like_torch(program)


# --------------------------------------------------------------------------- reentrant backward


def _nested_backwards(lib, depth, fail_at=None):
    """A custom Function whose backward runs a whole backward of its own, ``depth`` deep;
    each level adds its level number into ``acc.grad``."""
    acc = lib.zeros(1, dtype=lib.float64, requires_grad=True)

    class Reenter(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t, level):
            ctx.level = level
            return t.clone()

        @staticmethod
        def backward(ctx, g):
            if ctx.level == fail_at:
                raise ValueError(f"stop at {ctx.level}")
            if ctx.level < depth:
                with lib.enable_grad():
                    Reenter.apply(acc * 1, ctx.level + 1).sum().backward()
            return g * ctx.level, None

    Reenter.apply(acc * 1, 1).sum().backward()
    return as_numpy(acc.grad)


@pytest.mark.parametrize("depth", [10, 100, 2000])
def test_reentrant_backward_goes_thousands_of_levels_deep(depth):
    assert_like_torch(lambda lib: _nested_backwards(lib, depth))


def test_an_error_deep_inside_reentrant_backward_reaches_the_caller():
    assert_like_torch(lambda lib: _nested_backwards(lib, 200, fail_at=150))


# --------------------------------------------------------------------------- float() of a tensor


def _warnings_in_a_fresh_process(lib_name, statements):
    code = textwrap.dedent(
        f"""
        import warnings
        import {lib_name} as lib
        x = lib.tensor(2.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            {statements}
        print([str(w.message).splitlines()[0] for w in caught])
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.mark.parametrize(
    "statements",
    [
        "float(x); float(x); complex(x)",
        "int(x); x.item(); bool(x); x.tolist()",
        "with lib.no_grad(): float(x)",
        "float(x.detach()); float(x * 1)",
    ],
)
def test_float_of_a_tensor_that_requires_grad_warns_once_per_process(statements):
    assert _warnings_in_a_fresh_process("teachgrad", statements) == _warnings_in_a_fresh_process(
        "torch", statements
    )


# --------------------------------------------------------------------------- custom Function views


def _custom(lib, kind):
    """A custom Function returning a view of its input: one view, two views, or the input."""

    class View(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            if kind == "two views":
                return x.view_as(x), x[:1]
            return x if kind == "the input as-is" else x.view_as(x)

        @staticmethod
        def backward(ctx, *grads):
            return grads[0]

    return View


@pytest.mark.parametrize("kind", ["one view", "two views", "the input as-is"])
@pytest.mark.parametrize(
    "when", ["changed", "changed under no_grad", "input needs no grad", "its base changed"]
)
def test_a_view_returned_by_a_custom_function_may_not_change_in_place(kind, when):
    def program(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=when != "input needs no grad").clone()
        out = _custom(lib, kind).apply(x)
        y = out[0] if isinstance(out, tuple) else out
        if when == "its base changed":
            x.mul_(2)
            return str(y.grad_fn is None)
        if when == "changed under no_grad":
            with lib.no_grad():
                y.mul_(2)
        else:
            y.mul_(2)
        return as_numpy(y)

    assert_like_torch(program)


@pytest.mark.parametrize("marked", ["a new tensor", "the input"])
def test_mark_dirty_of_a_tensor_that_is_not_an_input_warns(marked):
    def program(lib):
        class Double(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                t = x if marked == "the input" else x.clone()
                t.mul_(2)
                ctx.mark_dirty(t)
                return t

            @staticmethod
            def backward(ctx, g):
                return g * 2

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = Double.apply(lib.ones(2, dtype=lib.float64, requires_grad=True).clone())
        return as_numpy(out), [str(w.message).split(".")[0] for w in caught]

    assert_like_torch(program)


def test_an_input_marked_dirty_and_saved_is_freed_without_the_cyclic_collector():
    def program(lib):
        gc.disable()
        try:
            a = lib.ones(2, dtype=lib.float64, requires_grad=True).clone()
            alive = weakref.ref(a)
            port.doubling_in_place_and_saving(lib)(a)
            del a
            return alive() is None
        finally:
            gc.enable()

    assert_like_torch(program)


# --------------------------------------------------------------------------- writes into memory

WRITES = {
    "v[None] = v (0-d)": lambda lib, v: v.__setitem__(None, v),
    "v[...] = v (0-d)": lambda lib, v: v.__setitem__(Ellipsis, v),
    "v.copy_(v[None][0])": lambda lib, v: v.copy_(v[None][0]),
    "w[0] = w[0] (1-d)": lambda lib, v: v.reshape(1).__setitem__(0, v.reshape(1)[0]),
    "v[None][:] = v": lambda lib, v: v[None].__setitem__(slice(None), v),
    "v[None].copy_(v)": lambda lib, v: v[None].copy_(v),
    "add_ of a size-1 view": lambda lib, v: v.reshape(1, 1).add_(v.reshape(1)),
    "v[None].add_(v)": lambda lib, v: v[None].add_(v),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
def test_a_single_element_written_from_itself(write):
    """Views of one element laid out differently (0-d, (1,), (1, 1)) overlap partly for torch
    (their strides differ), except that ``x[key] = v`` with a 0-d ``v`` is a fill."""

    def program(lib):
        v = lib.tensor(3.0, dtype=lib.float64)
        write(lib, v)
        return as_numpy(v)

    assert_like_torch(program)


@pytest.mark.parametrize("op", ["add_", "mul_", "index_put_", "masked_fill_"])
def test_in_place_on_an_empty_tensor_or_expanded_empty_tensor(op):
    def program(lib):
        out = []
        for x in (lib.zeros(0, 3, dtype=lib.float64), lib.zeros(0, dtype=lib.float64).expand(3, 0)):
            if op == "index_put_":
                x.index_put_((lib.zeros(0, dtype=lib.long),), lib.tensor(1.0, dtype=lib.float64))
            elif op == "masked_fill_":
                x.masked_fill_(lib.zeros(x.shape, dtype=lib.bool), 1.0)
            else:
                getattr(x, op)(2.0)
            out.append(tuple(x.shape))
        return out

    assert_like_torch(program)


@pytest.mark.parametrize("index", [[0], [], [0, 0]])
def test_index_select_along_an_empty_dim(index):
    def program(lib):
        x = lib.zeros(3, 0, dtype=lib.float64)
        return tuple(x.index_select(1, lib.tensor(index, dtype=lib.long)).shape)

    assert_like_torch(program)


# --------------------------------------------------------------------------- gradient layout

LEAVES = {
    "a transposed column": lambda base: base[:3].reshape(1, 3).t(),
    "a row": lambda base: base[:3].reshape(1, 3),
    "transposed": lambda base: base.reshape(2, 3).t(),
    "permuted with a size-1 dim": lambda base: base.reshape(1, 2, 3).permute(2, 0, 1),
    "every second element": lambda base: base[::2],
    "expanded": lambda base: base[:1].expand(3),
}


@pytest.mark.parametrize("make", LEAVES.values(), ids=LEAVES.keys())
def test_a_leaf_s_grad_follows_torch_s_layout_contract(make):
    """The first ``.grad`` copies the leaf's strides exactly (size-1 dims too); adding more
    keeps them, with no layout warning where only size-1 dims differ."""

    def program(lib):
        x = make(lib.arange(6.0, dtype=lib.float64)).detach().requires_grad_()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            (x * 2).sum().backward()
            first = x.grad.stride()
            x.exp().sum().backward()
        return first, x.grad.stride(), as_numpy(x.grad), [str(w.message)[:30] for w in caught]

    assert_like_torch(program)


# --------------------------------------------------------------------------- arguments


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
@pytest.mark.parametrize("form", ["keepdim only", "dim=None and keepdim", "nothing"])
def test_keepdim_needs_a_dim(op, form):
    def program(lib):
        x = lib.arange(1.0, 7.0, dtype=lib.float64).reshape(2, 3)
        kwargs = {"keepdim only": {"keepdim": True}, "nothing": {}}.get(form)
        if kwargs is None:
            if op == "prod":
                return "prod takes no dim=None"
            kwargs = {"dim": None, "keepdim": True}
        return as_numpy(getattr(x, op)(**kwargs))

    assert_like_torch(program)


@pytest.mark.parametrize("loss", ["nll_loss", "cross_entropy"])
@pytest.mark.parametrize("ndim", [2, 4])
def test_class_weights_that_require_grad_are_refused(loss, ndim):
    def program(lib):
        shape = (2, 3) if ndim == 2 else (2, 3, 2, 2)
        scores = lib.zeros(shape, dtype=lib.float64, requires_grad=True)
        target = lib.zeros((2,) if ndim == 2 else (2, 2, 2), dtype=lib.long)
        weight = lib.ones(3, dtype=lib.float64, requires_grad=True)
        inputs = scores.log_softmax(1) if loss == "nll_loss" else scores
        return as_numpy(getattr(lib.nn.functional, loss)(inputs, target, weight=weight))

    assert_like_torch(program)


def test_the_version_error_ends_its_first_line_with_torch_s_hint():
    def program(lib):
        out = []
        for anomaly in (False, True):
            x = lib.ones(2, dtype=lib.float64, requires_grad=True)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                with lib.autograd.set_detect_anomaly(anomaly):
                    y = x * 1
                    z = y * y
                    y.add_(1)
                    try:
                        z.sum().backward()
                    except RuntimeError as error:
                        out.append(str(error).splitlines()[0].replace("teachgrad.", "torch."))
        return out

    assert_like_torch(program)


# --------------------------------------------------------------------------- views and grad modes

MODES = {
    "no_grad": lambda lib: lib.no_grad(),
    "inference_mode": lambda lib: lib.inference_mode(),
    "grad": lambda lib: contextlib.nullcontext(),
}


@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
@pytest.mark.parametrize("split", ["unbind", "split"])
def test_unbind_and_split_outputs_made_in_a_grad_mode_carry_that_mode_s_limits(mode, split):
    def program(lib):
        x = lib.arange(6.0, dtype=lib.float64).reshape(2, 3).requires_grad_()
        base = x * 1
        with mode(lib):
            part = base.unbind(0)[0] if split == "unbind" else base.split(1, 0)[-1]
        part.mul_(2)
        return as_numpy(part)

    assert_like_torch(program)


@pytest.mark.parametrize("second", ["no_grad", "grad"])
def test_a_view_of_a_view_made_in_inference_mode_keeps_inference_mode_s_limits(second):
    def program(lib):
        x = lib.arange(4.0, dtype=lib.float64).requires_grad_()
        base = x * 1
        with lib.inference_mode():
            first = base[1:]
        with MODES[second](lib):
            view = first[1:]
        base.add_(1)
        return str(view.grad_fn is None)

    assert_like_torch(program)


# ----------------------------------------------------------- a leaf keeps its gradient


def _backward_copies(lib, keep_transposed=False):
    """The copy ops (clone, copy_) torch's profiler shows while a two-layer MLP's loss is
    differentiated; with ``keep_transposed``, a hook holds the weight's transposed gradient."""
    lib.manual_seed(0)
    first, second = lib.nn.Linear(4, 3), lib.nn.Linear(3, 2)
    x = lib.randn(5, 4)
    loss = lib.nn.functional.cross_entropy(second(first(x).relu()), lib.tensor([0, 1, 1, 0, 1]))
    kept = []
    if keep_transposed:
        addmm = loss.grad_fn.next_functions[0][0].next_functions[0][0]  # the 2nd layer's
        addmm.register_hook(lambda grad_inputs, grad_outputs: kept.append(grad_inputs))
    with lib.autograd.profiler.profile() as prof:
        loss.backward()
    copies = [e.name for e in prof.function_events if "clone" in e.name or "copy" in e.name]
    return copies, second.weight.grad, kept


def test_linears_weight_gradient_becomes_grad_without_a_copy():
    """The weight's gradient is the transpose of a transposed matrix product: a view of the
    whole of a fresh buffer. torch's AccumulateGrad keeps it as ``.grad`` (no clone); so does
    teachgrad, as a plain tensor on that buffer, which the next backward adds into."""
    import torch

    copies, grad, _ = _backward_copies(tg)
    assert copies == _backward_copies(torch)[0] == []
    assert grad._base is None and grad.stride() == (3, 1) and grad.is_contiguous()


def test_a_gradient_a_hook_also_holds_is_copied():
    """A hook keeps the layer's gradients (the bias's, the transposed weight's): their memory
    is reachable from there, so each leaf gets a copy (torch shares the weight's memory
    instead; teachgrad never makes .grad alias what a hook holds)."""
    copies, grad, kept = _backward_copies(tg, keep_transposed=True)
    held = [t for t in kept[0] if t is not None]
    assert copies == ["aten::clone", "aten::clone"]
    assert not any(
        tg._backend.array_module(t._data).shares_memory(t._data, grad._data) for t in held
    )


# --------------------------------------------------------------------------- create_graph's .grad

GRAD_PATHS = {
    "through view": lambda lib, a, b: (a * b.view(3)).sum(),
    "through reshape": lambda lib, a, b: (a * b.reshape(1, 3)).sum(),
    "through a whole slice": lambda lib, a, b: (a * b[:]).sum(),
    "through linear": lambda lib, a, b: (
        lib.nn.functional.linear(a.view(1, 3), b.view(1, 3)) ** 2
    ).sum(),
    "through t() twice": lambda lib, a, b: (a * b.view(3, 1).t().t().view(3)).sum(),
    "directly": lambda lib, a, b: (a * b).sum(),
}


@pytest.mark.parametrize("path", GRAD_PATHS.values(), ids=GRAD_PATHS.keys())
def test_a_leaf_s_grad_keeps_its_history_with_create_graph(path):
    """A gradient that reaches a leaf as a view of a buffer only it holds may become .grad
    without a copy, but not when create_graph=True: .grad then carries its history (a fuzzer
    find: double backward through view/reshape/linear lost it)."""

    def program(lib):
        a = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
        b = lib.tensor([4.0, 5.0, 6.0], requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (create_graph's reference-cycle warning)
            path(lib, a, b).backward(create_graph=True)
        facts = [(g.requires_grad, g.grad_fn is not None) for g in (a.grad, b.grad)]
        (b.grad * a.grad).sum().backward()
        return facts, as_numpy(a.grad), as_numpy(b.grad)

    assert_like_torch(program)


MODES = {
    "no_grad": lambda lib: lib.no_grad(),
    "set_grad_enabled(False)": lambda lib: lib.set_grad_enabled(False),
    "inference_mode": lambda lib: lib.inference_mode(),
}
ROOT_USES = {
    "backward()": lambda lib, v, x: v.backward(),
    "backward(ones)": lambda lib, v, x: v.backward(lib.ones_like(v)),
    "grad(v, x)": lambda lib, v, x: lib.autograd.grad(v, x),
    "grad(v.sum(), x)": lambda lib, v, x: lib.autograd.grad(v.sum(), x),
    "backward of v * 2": lambda lib, v, x: (v * 2).sum().backward(),
}


@pytest.mark.parametrize("use", ROOT_USES.values(), ids=ROOT_USES.keys())
@pytest.mark.parametrize("mode", MODES.values(), ids=MODES.keys())
def test_a_view_made_without_grad_is_no_root(mode, use):
    """A view of a tensor that requires grad, made under no_grad, requires grad but has no
    history: as the output of backward it is torch's "element 0 ... does not require grad"
    (it crashed inside the engine)."""

    def program(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        with mode(lib):
            v = x[:1]
        use(lib, v, x)
        return as_numpy(x.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- issue 20's items, compared


def test_a_gradient_kept_by_a_hook_is_not_the_leaf_s_buffer():
    """A tensor hook that keeps the gradient it is handed: a second backward accumulates
    into the leaf's ``.grad``, not into the kept gradient, as torch."""

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        kept, after = [], []
        x.register_hook(kept.append)
        x.register_post_accumulate_grad_hook(lambda t: after.append(t.grad))
        for _ in range(2):
            (x * x).sum().backward()
        return [as_numpy(g) for g in kept + after] + [as_numpy(x.grad)]

    assert_like_torch(program)


def test_a_gradient_a_node_hook_kept_is_copied_when_given_to_another_backward():
    """The gradient reaching a leaf that already has a ``.grad`` is added into it, and an
    AccumulateGrad post hook may keep it. Given later as another leaf's gradient, it is
    the user's tensor: that leaf's ``.grad`` must be a copy of it, as torch's (changing the
    kept tensor afterwards changes nothing else)."""

    def program(lib):
        x = lib.ones(3, dtype=lib.float64, requires_grad=True)
        (x * 2).sum().backward()
        kept, node = [], (x * 1).grad_fn.next_functions[0][0]  # (kept: a leaf's node lives on)
        node.register_hook(lambda gi, go: kept.append(go[0]))
        (x * 3).sum().backward()
        z = lib.zeros(3, dtype=lib.float64, requires_grad=True)
        z.backward(kept[0])
        kept[0].add_(100)
        return [as_numpy(z.grad), as_numpy(x.grad), z.grad is kept[0]]

    assert_like_torch(program)


@pytest.mark.parametrize("how", ["grad", "backward(inputs=)"])
def test_a_replacing_hook_on_a_leaf_input(how):
    """What grad() returns, and backward(inputs=) accumulates, for a leaf whose tensor hook
    replaces its gradient."""

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        x.register_hook(lambda g: g * 100)
        loss = (x * 3).sum()
        if how == "grad":
            return as_numpy(lib.autograd.grad(loss, x)[0])
        loss.backward(inputs=[x])
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "shape, index_shape", [((3, 2), (0, 2)), ((0, 2), (0, 2)), ((3, 0), (3, 0))]
)
@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_with_empty_tensors(op, shape, index_shape):
    """scatter and scatter_add with an empty index (or an empty input): no error, torch's
    shapes and strides, and gradients of the inputs' shapes."""

    def program(lib):
        x = lib.zeros(shape, dtype=lib.float64, requires_grad=True)
        src = lib.ones(index_shape, dtype=lib.float64, requires_grad=True)
        y = getattr(x, op)(0, lib.zeros(index_shape, dtype=lib.int64), src)
        y.sum().backward()
        return [tuple(y.shape), y.stride(), as_numpy(y), as_numpy(x.grad), as_numpy(src.grad)]

    assert_like_torch(program)


SIGNED = {
    "t ** 3": lambda t: t**3,
    "t ** 2": lambda t: t**2,
    "t ** 0.5": lambda t: t**0.5,
    "t ** -1": lambda t: t**-1,
    "rsqrt": lambda t: t.rsqrt(),
    "sqrt": lambda t: t.sqrt(),
    "(-t) ** 3": lambda t: (-t) ** 3,
    "t * -1": lambda t: t * -1,
}


@pytest.mark.parametrize("op", SIGNED.values(), ids=SIGNED.keys())
def test_signed_zeros_come_out_as_torch_s(op):
    """The sign of a zero (and of an inf made from one) as torch gives it: compared by
    ``copysign``, which ``allclose`` cannot see (a NaN's sign means nothing: left out)."""

    def program(lib):
        values = op(lib.tensor([-0.0, 0.0, -1.0, 2.0], dtype=lib.float64)).tolist()
        return [(v, math.copysign(1.0, v)) if v == v else "nan" for v in values]

    assert_like_torch(program)


@pytest.mark.parametrize(
    "kind", ["node post-hook", "node pre-hook", "tensor hook", "post-accumulate"]
)
def test_a_hook_object_is_freed_without_the_cyclic_collector(kind):
    """A hook object (here one with ``__call__``) goes when its graph does, with the cyclic
    collector off: nothing the engine keeps makes a reference cycle through it."""

    def program(lib):
        class Hook:
            def __call__(self, *args):
                return None

        hook = Hook()
        gone = weakref.ref(hook)
        collecting = gc.isenabled()
        gc.disable()
        try:
            x = lib.ones(2, requires_grad=True)
            y = x * 2
            register = {
                "node post-hook": y.grad_fn.register_hook,
                "node pre-hook": y.grad_fn.register_prehook,
                "tensor hook": y.register_hook,
                "post-accumulate": x.register_post_accumulate_grad_hook,
            }[kind]
            register(hook)
            del hook, register
            y.sum().backward()
            del x, y
            return gone() is None
        finally:
            if collecting:
                gc.enable()

    assert assert_like_torch(program) is True


# --------------------------------------------------------------------------- .data replaced

NEW_DATA = {  # what w (3, 4) float32 gets as its .data, from lib
    "another shape": lambda lib: lib.zeros(4, 3),
    "one it broadcasts to": lambda lib: lib.zeros(2, 3, 4),
    "fewer dims": lambda lib: lib.zeros(4),
    "size-1 dims": lambda lib: lib.zeros(1, 4),
    "another dtype": lambda lib: lib.zeros(3, 4, dtype=lib.float64),
    "another dtype, transposed": lambda lib: lib.zeros(4, 3, dtype=lib.float64).t(),
    "half precision, not dense": lambda lib: lib.zeros(3, 8, dtype=lib.float16)[:, ::2],
    "the same kind, transposed": lambda lib: lib.zeros(4, 3).t(),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("new_data", NEW_DATA)
@pytest.mark.parametrize("old_graph_first", [False, True])
def test_a_leaf_whose_data_is_replaced_while_a_graph_holds_it(
    new_data, old_graph_first, create_graph
):
    """``w.data = ...`` while a graph recorded before still holds ``w``'s AccumulateGrad. As
    in torch: a new dtype (or device) gets a new AccumulateGrad, a new shape keeps the old
    one (whose shape then refuses the new graph's gradient); the first gradient becomes
    ``.grad`` in the leaf's layout, copied into its new shape when it has one (broadcast,
    or copy_'s error), never into memory laid out for another shape."""

    def program(lib):
        w = lib.ones(3, 4, requires_grad=True)
        old = (w * lib.arange(12.0).reshape(3, 4)).sum()
        w.data = NEW_DATA[new_data](lib)
        ends = []
        try:
            new = (w * 3).sum()
        except RuntimeError as error:
            new, ends = None, [str(error).splitlines()[0]]
        for loss in (old, new) if old_graph_first else (new, old):
            if loss is None:
                continue
            try:
                loss.backward(create_graph=create_graph)
                grad = w.grad  # (its values now: the next backward may add into it in place)
                ends.append((as_numpy(grad).copy(), str(grad.dtype).split(".")[-1], grad.stride()))
            except RuntimeError as error:
                ends.append(str(error).splitlines()[0])
        return ends

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (create_graph's reference-cycle warning)
        assert_like_torch(program)

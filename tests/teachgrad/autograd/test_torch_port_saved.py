"""Saved tensors and the saved-tensor hooks, as PyTorch's own autograd tests
(test_autograd.py: test_saved_variable_*, test_no_unnecessary_unwrapping,
test_setting_default_saved_variable_hooks_*, test_disabling_saved_tensor_hooks*,
test_saved_tensor_hooks_*, test_unpack_hooks_exec_count, test_pack_hook_*,
test_saving_variable_to_disk, test_default_saved_tensors_hooks_double_backward,
test_wrapped_number_saved_tensors_hooks, test_graph_save_on_cpu) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts. The tests of ``grad_fn._raw_saved_<name>`` are in test_torch_port_raw_saved.py;
left out: those that need ``torch.utils.checkpoint``.
"""

import contextlib
import functools
import gc
import os
import uuid
import warnings
import weakref

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = functools.partial(port.randn, default="float32")


def hooks(lib, pack, unpack):
    """``lib.autograd.graph.saved_tensors_hooks(pack, unpack)``."""
    return lib.autograd.graph.saved_tensors_hooks(pack, unpack)


def identity(x):
    return x


# --------------------------------------------------------------------------- saved values


def test_a_saved_output_shares_the_version_counter_of_the_output(lib):
    a = randn(lib, 2, requires_grad=True)
    b = lib.exp(a)
    unpacked = b.grad_fn._saved_result
    assert same(b, unpacked)
    assert b._version == unpacked._version
    with lib.no_grad():
        b += 1
    assert same(b, unpacked)
    assert b._version == unpacked._version


NUMBER_OPERANDS = {  # a number operand of an op that torch wraps as a 0-d tensor
    "x * 3": lambda x: x * 3,
    "x * -3": lambda x: x * -3,
    "2.5 * x": lambda x: 2.5 * x,
    "x * True": lambda x: x * True,
    "x / 4": lambda x: x / 4,
    "4.5 / x": lambda x: 4.5 / x,
    "x.mul(2)": lambda x: x.mul(2),
    "x.div(0.5)": lambda x: x.div(0.5),
}


@pytest.mark.parametrize("op", NUMBER_OPERANDS.values(), ids=NUMBER_OPERANDS.keys())
def test_a_number_operand_reads_back_as_torchs_wrapped_number(op):
    """``(x * 3).grad_fn._saved_other`` is ``tensor(3)``: the number as a 0-d tensor of its
    kind's widest dtype (int64, float64, bool); the tensor operand was not saved (None);
    after backward, reading it is torch's error."""

    def program(lib):
        x = lib.ones(2, requires_grad=True)
        y = op(x)
        other = y.grad_fn._saved_other
        seen = [type(other).__name__, str(other.dtype).split(".")[-1], other.shape, other.item()]
        seen.append(y.grad_fn._saved_self)
        y.sum().backward()
        try:
            y.grad_fn._saved_other  # noqa: B018 - reading is the test
        except RuntimeError as error:
            seen.append(str(error).splitlines()[0])
        return seen

    assert_like_torch(program)


def test_saved_inputs_come_back_as_the_same_objects_and_outputs_do_not(lib):
    a = randn(lib, 5, requires_grad=True)
    a_before = a.detach().clone()
    b = a * a
    c = a * b
    d = lib.exp(a)
    assert b.grad_fn._saved_self is a
    assert b.grad_fn._saved_other is a
    assert c.grad_fn._saved_self is a
    assert c.grad_fn._saved_other is b  # b is not an output of c's node
    assert same(d.grad_fn._saved_result, d)
    assert d.grad_fn._saved_result is not d  # d is the node's own output
    c.sum().backward()
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        c.grad_fn._saved_self
    assert same(a, a_before)


def test_a_saved_input_detached_in_place_breaks_backward_a_saved_output_does_not(lib):
    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.sin()
    a.detach_()
    with pytest.raises(RuntimeError, match="Trying to use a saved tensor that has been detached"):
        b.backward()

    a = lib.tensor(1.0, requires_grad=True).clone()
    b = a.exp()
    a.detach_()
    b.backward()


# --------------------------------------------------------------------------- default hooks


def test_the_pack_hook_runs_once_per_saved_tensor(lib):
    def pack(x):
        warnings.warn("pack", stacklevel=2)
        return x

    with hooks(lib, pack, identity):
        a = lib.ones(5, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            a * a
        assert len(caught) == 2  # a is saved twice: as self and as other


@pytest.mark.parametrize(
    "pack, unpack, saved_factor, grad_factor",
    [
        (identity, identity, 1, 2),
        (lambda x: 2 * x, lambda x: x / 2, 1, 2),
        (lambda x: 2 * x, identity, 2, 4),
    ],
    ids=["identity", "undone", "doubled"],
)
def test_what_the_hooks_give_back_is_what_backward_uses(
    lib, pack, unpack, saved_factor, grad_factor
):
    with hooks(lib, pack, unpack):
        a = randn(lib, 5, requires_grad=True)
        y = a * a
        assert same(saved_factor * a, y.grad_fn._saved_self)
        assert same(saved_factor * a, y.grad_fn._saved_other)
        y.sum().backward()
        assert same(grad_factor * a, a.grad)


def test_no_hook_after_the_block_is_left(lib):
    with hooks(lib, lambda x: 2 * x, identity):
        pass
    a = randn(lib, 5, requires_grad=True)
    y = a * a
    assert same(a, y.grad_fn._saved_self)
    assert same(a, y.grad_fn._saved_other)
    y.sum().backward()
    assert same(2 * a, a.grad)


def test_a_hooked_saved_output_keeps_its_node(lib):
    with hooks(lib, identity, identity):
        a = randn(lib, 5, requires_grad=True)
        y = lib.exp(a)
        assert same(y, y.grad_fn._saved_result)
        y.sum().backward()
        assert same(a.grad, y)


def test_hooks_blocks_nest_and_the_inner_one_wins(lib):
    with hooks(lib, identity, identity), hooks(lib, identity, identity):
        pass

    with hooks(lib, lambda x: 3 * x, lambda x: 3 * x):
        b = randn(lib, 5, seed=1, requires_grad=True)
        with hooks(lib, lambda x: 5 * x, lambda x: 5 * x):
            a = randn(lib, 5, requires_grad=True)
            y = a * a
        z = b * b
    y.sum().backward()
    z.sum().backward()
    assert same(2 * 5 * 5 * a, a.grad, rtol=1e-5)
    assert same(2 * 3 * 3 * b, b.grad, rtol=1e-5)


def opening_hooks_raises(lib, message):
    """Opening a ``saved_tensors_hooks`` block raises ``RuntimeError(message)``."""
    with pytest.raises(RuntimeError, match=message), hooks(lib, identity, identity):
        pass


def test_disabled_hooks_cannot_be_opened_nor_disabled_inside_open_ones(lib):
    graph = lib.autograd.graph
    with graph.disable_saved_tensors_hooks("error message"):
        opening_hooks_raises(lib, "error message")
    disabling = graph.disable_saved_tensors_hooks("error message")
    with hooks(lib, identity, identity), pytest.raises(RuntimeError, match="error message"):
        disabling.__enter__()
    with hooks(lib, identity, identity):  # (usable again once both blocks are left)
        pass


def test_the_innermost_disable_message_is_the_one_raised(lib):
    graph = lib.autograd.graph
    with graph.disable_saved_tensors_hooks("outer"):
        with graph.disable_saved_tensors_hooks("inner"):
            opening_hooks_raises(lib, "inner")
        opening_hooks_raises(lib, "outer")


def test_errors_raised_by_the_hooks_reach_the_caller_unchanged(lib):
    class CustomError(Exception):
        pass

    def raising(message):
        def hook(x):
            raise CustomError(message)

        return hook

    class ErrorOnPack(lib.autograd.graph.saved_tensors_hooks):
        def __init__(self):
            super().__init__(raising("pack"), identity)

    class ErrorOnUnpack(lib.autograd.graph.saved_tensors_hooks):
        def __init__(self):
            super().__init__(identity, raising("unpack"))

    a = lib.tensor(1.0, requires_grad=True)
    with ErrorOnPack(), pytest.raises(CustomError, match="pack"):
        lib.sin(a)
    with ErrorOnUnpack():
        out = lib.sin(a)
        with pytest.raises(CustomError, match="unpack"):
            out.backward()


def test_a_custom_function_saving_an_intermediate_under_hooks(lib):
    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            intermediate = x.exp()
            ctx.save_for_backward(intermediate.clone().detach_().requires_grad_(True))
            return x.exp()

        @staticmethod
        def backward(ctx, grad_out):
            (intermediate,) = ctx.saved_tensors
            return grad_out * intermediate

    a = lib.tensor(1.0, requires_grad=True)
    with hooks(lib, identity, identity):
        out = Func.apply(a)
    out.backward()
    assert same(a.grad, np.e, rtol=1e-6)


def test_each_hook_runs_once_per_save_and_per_read(lib):
    counts = {"pack": 0, "unpack": 0}

    def counting(kind):
        def hook(x):
            counts[kind] += 1
            return x

        return hook

    x = lib.ones(4, requires_grad=True)
    y = lib.ones(4)
    with hooks(lib, counting("pack"), counting("unpack")):
        out = x * y  # only y is needed (for x's gradient)
        assert counts == {"pack": 1, "unpack": 0}
        out.sum().backward()
        assert counts == {"pack": 1, "unpack": 1}


def test_what_unpack_gives_back_does_not_share_the_original_s_version_counter(lib):
    a = lib.tensor(1.0, requires_grad=True)
    replacement = a.clone()
    versions = []

    class Saving(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.sin()

        @staticmethod
        def backward(ctx, grad_output):
            (x,) = ctx.saved_tensors
            before = a._version
            x.add_(1)
            versions.append((before, a._version))
            return grad_output

    with hooks(lib, lambda x: replacement, identity):
        b = Saving.apply(a)
    b.backward()
    assert versions == [(0, 0)]


def test_a_pack_hook_changing_its_input_in_place_is_an_error(lib):
    a = randn(lib, 5, requires_grad=True)

    def add_one(x):
        x += 1
        return x

    with (
        hooks(lib, add_one, identity),
        pytest.raises(
            RuntimeError, match="A saved tensor pack hook is modifying its input in place."
        ),
    ):
        lib.exp(a)


def test_saved_tensors_kept_on_disk(lib, tmp_path):
    def pack(x):
        name = os.path.join(tmp_path, str(uuid.uuid4()) + ".npy")
        np.save(name, x.detach().numpy())
        return name

    def unpack(name):
        return lib.from_numpy(np.load(name))

    with hooks(lib, pack, unpack):
        a = lib.ones(5, requires_grad=True)
        y = a * a
        assert same(a, y.grad_fn._saved_self)
        y.sum().backward()
        assert same(2 * a, a.grad)


def test_hooks_in_a_double_backward(lib):
    with hooks(lib, identity, identity):
        a = randn(lib, 5, requires_grad=True)
        s = (a**3).sum()
        (g,) = lib.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        assert same(6 * a, a.grad, rtol=1e-5)

    # hooks in the forward only: a is saved once, doubled
    with hooks(lib, lambda x: 2 * x, identity):
        a = randn(lib, 5, requires_grad=True)
        s = (a**3).sum()
    (g,) = lib.autograd.grad(s, (a,), create_graph=True)
    g.sum().backward()
    assert same(6 * 2 * a, a.grad, rtol=1e-5)

    # hooks in the backward only: pow's formula saves the gradient and a, each doubled
    a = randn(lib, 5, requires_grad=True)
    s = (a**3).sum()
    with hooks(lib, lambda x: 2 * x, identity):
        (g,) = lib.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        assert same(6 * 4 * a, a.grad, rtol=1e-5)

    # both: 2 * 4
    with hooks(lib, lambda x: 2 * x, identity):
        a = randn(lib, 5, requires_grad=True)
        s = (a**3).sum()
        (g,) = lib.autograd.grad(s, (a,), create_graph=True)
        g.sum().backward()
        assert same(6 * 8 * a, a.grad, rtol=1e-5)


def test_a_python_number_operand_is_not_packed(lib):
    def must_not_run(x):
        raise RuntimeError("this hook should not be called")

    with hooks(lib, must_not_run, must_not_run):
        a = randn(lib, 5, requires_grad=True)
        out = (a * 3).sum()
        lib.autograd.grad(out, (a,))


@pytest.mark.parametrize("pin_memory", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_save_on_cpu_keeps_values_dtypes_and_gradients(lib, pin_memory, dtype):
    with lib.autograd.graph.save_on_cpu(pin_memory):
        a = randn(lib, 5, dtype=getattr(lib, dtype), requires_grad=True)
        y = a * a
        assert same(a, y.grad_fn._saved_self)
        assert same(a, y.grad_fn._saved_other)
        assert a.dtype == y.grad_fn._saved_self.dtype
        y.sum().backward()
        assert same(2 * a, a.grad)


# --------------------------------------------------------------------------- hook blocks changed inside backward


def test_saved_tensor_hooks_extra_exit_during_bw_no_crash(lib):
    """An unpack hook that leaves a block (one already left) changes only backward's own
    copy of the open blocks: the caller's blocks are as they were when backward ends."""
    hooks = lib.autograd.graph.saved_tensors_hooks

    def unpack(x):
        ctx_1.__exit__()
        return x

    ctx_1 = hooks(lambda x: x, unpack)
    ctx_2 = hooks(lambda x: x, lambda x: x)
    for _ in range(10):
        with ctx_2:
            ctx_1.__enter__()
            x = randn(lib, 3, 3, requires_grad=True)
            a = x.sin().exp()
            ctx_1.__exit__()
            a.sum().backward()
        assert same(x.grad, (x.cos() * x.sin().exp()).detach())


def test_saved_tensor_hooks_extra_enter_during_bw_no_leak(lib):
    """A block an unpack hook enters is forgotten when backward ends: nothing keeps the hook."""

    def scope():
        def unpack(x):
            weak_ctx_1().__enter__()
            return x

        ctx_1 = lib.autograd.graph.saved_tensors_hooks(lambda x: x, unpack)
        weak_ctx_1 = weakref.ref(ctx_1)
        x = randn(lib, 3, 3, requires_grad=True)
        with ctx_1:
            x.sin().sum().backward()
        return weakref.ref(unpack)

    collecting = gc.isenabled()
    gc.disable()  # (freed by reference counting alone, as torch's test checks)
    try:
        unpack_hook_ref = scope()
        assert unpack_hook_ref() is None
        y = randn(lib, 2, requires_grad=True) * 2  # saved with no hook: no block is open
        assert y.grad_fn._raw_saved_self is not None
    finally:
        if collecting:
            gc.enable()


DOUBLE_BACKWARD_OPS = {
    "1 / a": lambda a, b: 1 / a,
    "2 / a": lambda a, b: 2 / a,
    "reciprocal": lambda a, b: a.reciprocal(),
    "a ** 3": lambda a, b: a**3,
    "a ** -1": lambda a, b: a**-1,
    "a ** 0.5": lambda a, b: a**0.5,
    "a ** b": lambda a, b: a**b,
    "2 ** a": lambda a, b: 2**a,
    "sqrt": lambda a, b: a.sqrt(),
    "rsqrt": lambda a, b: a.rsqrt(),
    "exp": lambda a, b: a.exp(),
    "log": lambda a, b: a.log(),
    "sin": lambda a, b: a.sin(),
    "cos": lambda a, b: a.cos(),
    "tan": lambda a, b: a.tan(),
    "tanh": lambda a, b: a.tanh(),
    "sigmoid": lambda a, b: a.sigmoid(),
    "a * b": lambda a, b: a * b,
    "a / b": lambda a, b: a / b,
    "a * a": lambda a, b: a * a,
    "square": lambda a, b: a.square(),
    "log1p": lambda a, b: a.log1p(),
    "expm1": lambda a, b: a.expm1(),
    "(a * b).sum()": lambda a, b: (a * b).sum(),
    "(a * a).mean()": lambda a, b: (a * a).mean(),
    "a @ b": lambda a, b: a @ b,
    "maximum": lambda a, b: a.maximum(b),
    "logsumexp": lambda a, b: a.logsumexp(0),
    "log_softmax": lambda a, b: a.log_softmax(0),
    "prod": lambda a, b: a.prod(),
    "cumsum": lambda a, b: a.cumsum(0),
    "clamp": lambda a, b: a.clamp(0.6, 0.9),
}


@pytest.mark.parametrize("forward_too", [True, False], ids=["hooks throughout", "in backward"])
@pytest.mark.parametrize("op", DOUBLE_BACKWARD_OPS.values(), ids=DOUBLE_BACKWARD_OPS.keys())
def test_a_doubling_pack_hook_in_a_double_backward_counts_as_torch(op, forward_too):
    """A pack hook that doubles each saved tensor shows how often, and where, a backward
    formula saves: each op's formula (and the formula of its gradient) must save what
    torch's saves, or the double backward's numbers differ (reciprocal's did: -g * r * r
    saved r twice where torch's -g * (r * r) saves it once per product)."""

    def program(lib):
        a = lib.tensor([0.5, 0.7, 0.8], dtype=lib.float64, requires_grad=True)
        b = lib.tensor([1.5, 0.25, 2.0], dtype=lib.float64, requires_grad=True)
        doubling = lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x)
        with doubling if forward_too else contextlib.nullcontext():
            y = op(a, b).sum()
        with lib.autograd.graph.saved_tensors_hooks(lambda x: 2 * x, lambda x: x):
            (g,) = lib.autograd.grad(y, a, create_graph=True)
            g.sum().backward()
        return [g.detach().numpy(), a.grad.numpy()]

    assert_like_torch(program)

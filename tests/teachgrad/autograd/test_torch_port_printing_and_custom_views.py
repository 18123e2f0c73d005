"""How tensors with history print, custom Functions that change a view in place, saved
outputs and their version counter, forward AD's non-differentiable outputs and tangents that
are duals themselves, and the profiler's op names, as PyTorch's own autograd tests
(test_autograd.py: test_autograd_print_tensor, test_custom_function_inplace_on_non_default_view,
test_custom_function_inplace_on_view_of_leaf, test_inplace_on_view_saved_output,
test_saved_variable_version_counter, test_custom_function_forward_mode_non_differentiable,
test_set_fw_grad_having_own_fw_grad_at_same_level, test_profiler,
test_custom_function_saving_mutated_view_no_leak) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's test_custom_function_inplace_on_non_default_view takes its
multi-view output from ``split_with_sizes``; ``split`` makes the same kind of view here.
"""

import gc
import weakref

import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _first_line(error):
    return str(error.value).splitlines()[0]


# --------------------------------------------------------------------------- printing


@pytest.mark.no_standin("compares printed text with torch's CPU tensors, which print no device")
def test_tensors_with_history_print_their_node(lib):
    a = lib.ones(1, requires_grad=True)
    assert repr(a) == "tensor([1.], requires_grad=True)"
    assert repr(a.clone()) == "tensor([1.], grad_fn=<CloneBackward0>)"

    with lib.no_grad():
        b = a[:]
        b *= 2
    # a view made and changed under no_grad has a history that cannot be used
    assert repr(b) == "tensor([2.], grad_fn=<Invalid>)"

    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    assert repr(Func.apply(a)) == "tensor([2.], grad_fn=<FuncBackward>)"


# --------------------------------------------------------------------------- custom in-place on views


def _add_one_in_place(lib):
    """A custom Function that adds 1 to its input in place and says so (mark_dirty)."""

    class AddOneInPlace(lib.autograd.Function):
        @staticmethod
        def forward(ctx, t):
            t.add_(1)
            ctx.mark_dirty(t)
            return t

        @staticmethod
        def backward(ctx, grad):
            return grad

    return AddOneInPlace.apply


def test_a_custom_function_changing_an_output_of_a_multi_view_op_is_refused(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    first, _ = a.clone().split(1)
    with pytest.raises(RuntimeError) as caught:
        _add_one_in_place(lib)(first)
    assert "output of a function that returns multiple views" in str(caught.value)


def test_a_custom_function_changing_a_view_of_a_leaf_is_refused(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(RuntimeError) as caught:
        _add_one_in_place(lib)(a.view_as(a))
    assert "a view of a leaf Variable that requires grad" in str(caught.value)


def test_an_in_place_op_on_a_view_that_saves_its_output_frees_the_graph(lib):
    freed = []

    class CountsItsEnd:
        def __call__(self, *args):
            pass

        def __del__(self):
            freed.append(True)

    def scope():
        root = port.randn(lib, 3, 3, requires_grad=True)
        copy = root.clone()
        copy.grad_fn.register_hook(CountsItsEnd())
        view = copy.view(9)
        lib.nn.functional.relu(view, inplace=True)  # relu saves its result

    scope()
    gc.collect()
    assert freed == [True]


# --------------------------------------------------------------------------- saved outputs


def test_a_saved_output_read_back_keeps_the_outputs_version(lib):
    a = lib.rand(2, requires_grad=True)
    b = lib.exp(a)
    read_back = b.grad_fn._saved_result
    assert same(read_back, b) and read_back._version == b._version
    with lib.no_grad():
        b += 1
    assert same(read_back, b) and read_back._version == b._version


# --------------------------------------------------------------------------- forward AD


def test_non_differentiable_outputs_of_a_custom_function_under_forward_ad(lib):
    fwAD = lib.autograd.forward_ad
    x, x_tangent = lib.tensor(2.0), lib.tensor(1.0)

    class MarkedNonDifferentiable(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            out = b.clone()
            ctx.mark_non_differentiable(out)
            return a.clone(), out

        @staticmethod
        def jvp(ctx, a_t, b_t):
            return a_t, None

    class IntegerOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            return a.clone(), b.clone()

        @staticmethod
        def jvp(ctx, a_t, b_t):
            assert b_t is None
            return a_t, None

    class WrongTangent(MarkedNonDifferentiable):  # (its forward, another jvp)
        @staticmethod
        def jvp(ctx, a_t, b_t):
            return a_t, a_t.clone()

    class NonTensorOutput(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a.clone(), object(), a.clone()

        @staticmethod
        def jvp(ctx, a_t):
            return a_t, None, a_t

    with fwAD.dual_level():
        dual = fwAD.make_dual(x, x_tangent)
        _, second = MarkedNonDifferentiable.apply(dual, lib.tensor(3.0))
        assert fwAD.unpack_dual(second).tangent is None

        _, second = IntegerOutput.apply(dual, lib.tensor(3))
        assert fwAD.unpack_dual(second).tangent is None

        with pytest.raises(RuntimeError, match="You should return None at that position instead"):
            WrongTangent.apply(dual, lib.tensor(3.0))

        first, _, third = NonTensorOutput.apply(dual)
        assert same(fwAD.unpack_dual(first).tangent, x_tangent)
        assert same(fwAD.unpack_dual(third).tangent, x_tangent)


def test_a_tangent_with_a_tangent_of_its_own_is_refused(lib):
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        dual = fwAD.make_dual(lib.rand(2), lib.rand(2))
        with pytest.raises(RuntimeError) as caught:
            fwAD.make_dual(lib.rand(2), dual)
    assert _first_line(caught) == (
        "Setting a forward grad that itself has a forward gradient at the same level0 is not "
        "supported."
    )


# --------------------------------------------------------------------------- profiler


def test_the_profiler_records_the_ops_by_their_aten_names(lib):
    x = port.randn(lib, 10, 10)
    with lib.autograd.profiler.profile() as prof:
        x * 2 + 4
    names = {event.name for event in prof.function_events}
    assert {"aten::mul", "aten::add"} <= names


def test_custom_function_saving_mutated_view_no_leak(lib):
    """The saved view is kept as the Function's output (by its memory): once the caller
    drops it, reference counting frees it, with no cycle for the collector to find."""
    apply = port.doubling_in_place_and_saving(lib)

    def scope():
        x = lib.tensor(1.0, requires_grad=True).clone()
        x = x.view_as(x)
        apply(x)
        return weakref.ref(x)

    collecting = gc.isenabled()
    gc.disable()
    try:
        assert scope()() is None
    finally:
        if collecting:
            gc.enable()


def test_a_saved_changed_view_still_reads_back_and_differentiates(lib):
    a = lib.tensor([1.0, 2.0], requires_grad=True)
    y = port.doubling_in_place_and_saving(lib)(a.clone()[:1])
    assert same(y, [2.0])
    (y * 3).sum().backward()  # (backward reads the saved view back)
    assert same(a.grad, [6.0, 0.0])

"""Custom ``autograd.Function`` (API.md section 4): both definition styles, the ctx
API (save_for_backward, saved_tensors, needs_input_grad, mark_non_differentiable,
mark_dirty, set_materialize_grads), once_differentiable, the checks on what
backward returns, double backward, and the deprecated ``Variable`` shim.
"""

import warnings

import pytest

import teachgrad as tg
from teachgrad.autograd import Function, Variable
from teachgrad.autograd.function import FunctionCtx, once_differentiable


def _bump(t):
    """Change ``t`` in place behind autograd's back, the way an in-place op would."""
    t._data[...] = t._data + 1
    t._counter.version += 1


class ScaleNew(Function):
    """The newer style: forward without ctx, plus setup_context."""

    @staticmethod
    def forward(x, k):
        return x * k

    @staticmethod
    def setup_context(ctx, inputs, output):
        x, k = inputs
        ctx.k = k
        ctx.save_for_backward(x, output)

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.k, None


def _square_in(L):
    class Square(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x * grad

    return Square


Square = _square_in(tg)  # the Function most tests use


# =============================================================================== both styles


def test_static_forward_backward_style():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    assert y.tolist() == [1.0, 4.0]
    assert y.grad_fn.name() == "SquareBackward" and not y.is_leaf
    assert y.grad_fn.next_functions[0][0].variable is x
    y.sum().backward()
    assert x.grad.tolist() == [2.0, 4.0]


def test_setup_context_style():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = ScaleNew.apply(x, 3.0)
    assert y.grad_fn.name() == "ScaleNewBackward"
    saved_x, saved_out = y.grad_fn.saved_tensors
    assert saved_x is x and saved_out.tolist() == [3.0, 6.0]
    y.sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_node_name_matches_torch(torch):
    def name(L):
        return _square_in(L).apply(L.ones(1, requires_grad=True)).grad_fn.name()

    assert name(tg) == name(torch) == "SquareBackward"


def test_the_node_is_the_ctx():
    y = Square.apply(tg.ones(2, requires_grad=True))
    assert isinstance(y.grad_fn, FunctionCtx)
    assert isinstance(y.grad_fn, tg.autograd.graph.Node)


def test_forward_runs_with_grad_mode_off():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, x):
            seen.append(tg.is_grad_enabled())
            return x * 2

        @staticmethod
        def backward(ctx, g):
            seen.append(tg.is_grad_enabled())
            return g * 2

    x = tg.ones(2, requires_grad=True)
    Probe.apply(x).sum().backward()
    Probe.apply(x).sum().backward(create_graph=True)
    assert seen == [False, False, False, True], "backward records only with create_graph=True"


def test_no_graph_when_no_input_requires_grad_or_under_no_grad():
    y = Square.apply(tg.ones(2))
    assert (y.requires_grad, y.grad_fn) == (False, None)
    with tg.no_grad():
        y = Square.apply(tg.ones(2, requires_grad=True))
    assert (y.requires_grad, y.grad_fn) == (False, None)


def test_instantiating_a_function_warns_and_calling_the_instance_raises():
    """As torch: making an instance is deprecated (a warning), calling it is the legacy error."""
    with pytest.warns(DeprecationWarning, match="should not be instantiated"):
        square = Square()
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward"):
        square(tg.ones(1))


def test_calling_forward_directly_is_plain_python():
    class Double(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    assert Double.forward(None, tg.ones(1)).tolist() == [2.0]


# =============================================================================== saved tensors


def test_saved_tensors_return_the_saved_inputs():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    (saved,) = y.grad_fn.saved_tensors
    assert saved is x


def test_saved_output_is_rebuilt_with_this_node_as_grad_fn(torch):
    """Saving an output: torch returns an equal tensor (not the same object) whose grad_fn is the node."""

    def facts(L):
        class SaveOut(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                y = a * 2
                ctx.save_for_backward(y)
                return y

            @staticmethod
            def backward(ctx, g):
                (y,) = ctx.saved_tensors
                return g * y

        y = SaveOut.apply(L.tensor([1.0, 2.0], requires_grad=True))
        (s,) = y.grad_fn.saved_tensors
        return s is y, s.grad_fn is y.grad_fn, s.tolist(), s.data_ptr() == y.data_ptr()

    assert facts(tg) == facts(torch)


def test_save_for_backward_accepts_none():
    class SaveNone(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a, None)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            a, nothing = ctx.saved_tensors
            assert nothing is None
            return g * 2

    a = tg.ones(2, requires_grad=True)
    SaveNone.apply(a).sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]


def test_save_for_backward_refuses_non_tensors():
    class SaveInt(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(3)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="save_for_backward can only save variables"):
        SaveInt.apply(tg.ones(2, requires_grad=True))


def test_saved_tensor_modified_in_place_is_caught_on_unpack():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    y = Square.apply(h)
    _bump(h)
    with pytest.raises(RuntimeError, match="has been modified by an inplace operation") as info:
        y.sum().backward()
    assert "is at version 1; expected version 0 instead" in str(info.value)
    assert "SquareBackward" in str(info.value)


def test_saved_tensors_are_freed_after_backward():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    y.sum().backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.grad_fn.saved_tensors
    with pytest.raises(RuntimeError, match="second time"):
        y.sum().backward()


def test_retain_graph_keeps_saved_tensors():
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Square.apply(x)
    y.sum().backward(retain_graph=True)
    y.sum().backward()
    assert x.grad.tolist() == [4.0, 8.0]


# =============================================================================== ctx flags


def test_needs_input_grad_in_forward_and_backward():
    log = []

    class Mixed(Function):
        @staticmethod
        def forward(ctx, a, k, b):
            log.append(ctx.needs_input_grad)
            return a * k + b

        @staticmethod
        def backward(ctx, g):
            log.append(ctx.needs_input_grad)
            return g * 3.0 if ctx.needs_input_grad[0] else None, None, None

    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([2.0])
    y = Mixed.apply(a, 3.0, b)
    y.backward()
    assert log == [(True, False, False)] * 2
    assert a.grad.tolist() == [3.0] and b.grad is None
    assert [n is None for n, _ in y.grad_fn.next_functions] == [False, True]


def test_mark_non_differentiable_outputs_do_not_require_grad():
    got = []

    class WithIndex(Function):
        @staticmethod
        def forward(ctx, a):
            idx = a.argmax()
            ctx.mark_non_differentiable(idx)
            doubled = a * 2
            ctx.mark_non_differentiable(idx, doubled)
            return a * 3, idx, doubled

        @staticmethod
        def backward(ctx, g, g_idx, g_doubled):
            got.append((g_idx, g_doubled.tolist()))
            return g * 3

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    y, idx, doubled = WithIndex.apply(a)
    assert y.requires_grad and not idx.requires_grad and not doubled.requires_grad
    assert doubled.grad_fn is None
    y.sum().backward()
    assert a.grad.tolist() == [3.0, 3.0]
    assert got[0][1] == [0.0, 0.0], "a non-differentiable float output gets a zero gradient"


@pytest.mark.parametrize("materialize", [True, False])
def test_set_materialize_grads(materialize):
    """Outputs that got no gradient arrive as zeros (default) or as None."""
    got = []

    class TwoOut(Function):
        @staticmethod
        def forward(ctx, a):
            ctx.set_materialize_grads(materialize)
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            got.append(g2)
            return g1 * 2 if g2 is None else g1 * 2 + g2 * 3

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    y, _ = TwoOut.apply(a)
    y.sum().backward()
    assert a.grad.tolist() == [2.0, 2.0]
    if materialize:
        assert got[0].tolist() == [0.0, 0.0]
    else:
        assert got[0] is None


def test_mark_dirty_returns_the_modified_input(torch):
    """The input object comes back with this node as grad_fn; torch bumps its version once
    more after forward (2 bumps in all for one ``add_``)."""

    def run(L):
        class AddOneInPlace(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                a.add_(1)
                ctx.mark_dirty(a)
                return a

            @staticmethod
            def backward(ctx, g):
                return g

        x = L.tensor([1.0, 2.0], requires_grad=True)
        h = x * 2
        before = h._version
        y = AddOneInPlace.apply(h)
        facts = (y is h, h._version - before, h.grad_fn.name(), h.tolist())
        y.sum().backward()
        return facts, x.grad.tolist()

    assert run(tg) == run(torch)


# =============================================================================== once_differentiable


class CubeOnce(Function):
    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a**3

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (a,) = ctx.saved_tensors
        return 3 * a * a * g


def test_once_differentiable_first_derivative_works():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    CubeOnce.apply(a).sum().backward()
    assert a.grad.tolist() == [3.0, 12.0]


def test_once_differentiable_runs_backward_with_grad_mode_off():
    seen = []

    class Probe(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        @once_differentiable
        def backward(ctx, g):
            seen.append((tg.is_grad_enabled(), g.requires_grad))
            return g * 2

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    y = Probe.apply(a)
    tg.autograd.grad((y * y).sum(), a, create_graph=True)
    assert seen == [(False, True)], "grad mode off, though the incoming grad itself has history"


def test_once_differentiable_double_backward_raises():
    a = tg.tensor([1.0, 2.0], requires_grad=True)
    y = CubeOnce.apply(a)
    (g,) = tg.autograd.grad((y * y).sum(), a, create_graph=True)
    assert g.requires_grad and g.tolist() == [6.0, 192.0]
    with pytest.raises(
        RuntimeError,
        match="trying to differentiate twice a function that was marked with @once_differentiable",
    ):
        g.sum().backward()


# =============================================================================== checks on backward's result


def _returning(value_fn, n_inputs=1):
    class Bad(Function):
        @staticmethod
        def forward(ctx, *args):
            return args[0] * 2

        @staticmethod
        def backward(ctx, g):
            return value_fn(g)

    inputs = [tg.tensor([1.0, 2.0], requires_grad=True) for _ in range(n_inputs)]
    return Bad, inputs


@pytest.mark.parametrize(
    "value_fn, n_inputs, expected, got",
    [
        (lambda g: (g, g), 1, 1, 2),
        (lambda g: g, 2, 2, 1),
        (lambda g: (g, g, g), 2, 2, 3),
    ],
    ids=["too-many", "too-few", "too-many-of-two"],
)
def test_wrong_number_of_gradients_names_the_function(value_fn, n_inputs, expected, got):
    Bad, inputs = _returning(value_fn, n_inputs)
    with pytest.raises(
        RuntimeError,
        match=rf"function BadBackward returned an incorrect number of gradients "
        rf"\(expected {expected}, got {got}\)",
    ):
        Bad.apply(*inputs).sum().backward()


def test_extra_trailing_none_gradients_are_allowed(torch):
    def run(L):
        class ExtraNone(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2, None, None

        a = L.tensor([1.0, 2.0], requires_grad=True)
        ExtraNone.apply(a).sum().backward()
        return a.grad.tolist()

    assert run(tg) == run(torch) == [2.0, 2.0]


def test_wrong_gradient_shape_names_the_function_and_input_index():
    Bad, (a,) = _returning(lambda g: tg.ones(3))
    with pytest.raises(
        RuntimeError,
        match=r"Function BadBackward returned an invalid gradient at index 0 - got "
        r"\[3\] but expected shape compatible with \[2\]",
    ):
        Bad.apply(a).sum().backward()


def test_wrong_gradient_shape_reports_the_right_index():
    class Second(Function):
        @staticmethod
        def forward(ctx, a, b):
            return a * b

        @staticmethod
        def backward(ctx, g):
            return g, tg.ones(5)

    a = tg.ones(2, requires_grad=True)
    b = tg.ones(2, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="SecondBackward returned an invalid gradient at index 1"
    ):
        Second.apply(a, b).sum().backward()


def test_broadcast_gradient_is_summed_to_the_input_shape(torch):
    def run(L):
        class Broadcast(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a * 2

            @staticmethod
            def backward(ctx, g):
                return L.ones(3, 2)

        a = L.tensor([1.0, 2.0], requires_grad=True)
        Broadcast.apply(a).sum().backward()
        return a.grad.tolist()

    assert run(tg) == run(torch) == [3.0, 3.0]


def test_gradient_of_another_dtype_is_cast_to_the_inputs_dtype():
    Bad, (a,) = _returning(lambda g: tg.ones(2, dtype=tg.float64))
    Bad.apply(a).sum().backward()
    assert a.grad.dtype is tg.float32 and a.grad.tolist() == [1.0, 1.0]


def test_non_tensor_gradient_is_a_runtime_error_like_torch():
    """torch: RuntimeError 'expected Variable or None (got float)'."""
    Bad, (a,) = _returning(lambda g: 3.0)
    with pytest.raises(RuntimeError, match="float"):
        Bad.apply(a).sum().backward()


@pytest.mark.cuda
def test_gradient_on_the_wrong_device_names_the_function_and_index():
    Bad, (a,) = _returning(lambda g: tg.ones(2, device="cuda"))
    with pytest.raises(
        RuntimeError, match="BadBackward returned an invalid gradient at index 0 - expected device"
    ):
        Bad.apply(a).sum().backward()


# =============================================================================== arguments and outputs


def test_non_tensor_arguments_get_none_gradients():
    class Affine(Function):
        @staticmethod
        def forward(ctx, a, k, b):
            ctx.k = k
            return a * k + b

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, g

    a = tg.tensor([1.0], requires_grad=True)
    b = tg.tensor([2.0], requires_grad=True)
    Affine.apply(a, 3.0, b).backward()
    assert a.grad.tolist() == [3.0] and b.grad.tolist() == [1.0]


def test_gradient_for_a_non_tensor_argument_is_an_error():
    """torch: 'returned a gradient different than None at position 2, but the corresponding
    forward input was not a Variable' -- a student's swapped return values are caught."""

    class Scale(Function):
        @staticmethod
        def forward(ctx, a, k):
            return a * k

        @staticmethod
        def backward(ctx, g):
            return g * 2, g

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    with pytest.raises(
        RuntimeError, match="ScaleBackward returned a gradient different than None at position 2"
    ):
        Scale.apply(a, 3.0).sum().backward()


def test_non_tensor_outputs_are_passed_through(torch):
    """A forward may return Python values next to tensors; backward gets None for them."""

    def run(L):
        class WithCount(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return 3, a * 2

            @staticmethod
            def backward(ctx, g_count, g):
                return g * 2

        a = L.tensor([1.0, 2.0], requires_grad=True)
        n, z = WithCount.apply(a)
        z.sum().backward()
        return n, a.grad.tolist()

    assert run(tg) == run(torch)


def test_returning_an_input_unchanged_gives_a_new_tensor_in_the_graph(torch):
    def run(L):
        class Identity(L.autograd.Function):
            @staticmethod
            def forward(ctx, a):
                return a

            @staticmethod
            def backward(ctx, g):
                return g * 2

        a = L.tensor([1.0, 2.0], requires_grad=True)
        y = Identity.apply(a)
        facts = (y is a, y.data_ptr() == a.data_ptr(), y.grad_fn.name(), y.is_leaf)
        y.sum().backward()
        return facts, a.grad.tolist()

    assert run(tg) == run(torch)
    assert run(tg)[0][0] is False


def test_multiple_outputs_share_one_node():
    class Split(Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2, a * 3

        @staticmethod
        def backward(ctx, g1, g2):
            return g1 * 2 + g2 * 3

    a = tg.tensor([1.0, 2.0], requires_grad=True)
    y, z = Split.apply(a)
    assert y.grad_fn is z.grad_fn
    assert (y._output_nr, z._output_nr) == (0, 1)
    (y + z).sum().backward()
    assert a.grad.tolist() == [5.0, 5.0]


def test_integer_outputs_do_not_require_grad():
    class ToLong(Function):
        @staticmethod
        def forward(ctx, a):
            return a.long()

        @staticmethod
        def backward(ctx, g):
            return g

    assert not ToLong.apply(tg.ones(2, requires_grad=True)).requires_grad


# =============================================================================== double backward


def test_double_backward_through_a_custom_function(torch):
    """backward written with teachgrad ops is itself differentiable (create_graph=True)."""

    def run(L):
        Sq = _square_in(L)
        x = L.tensor([1.0, -2.0], dtype=L.float64, requires_grad=True)
        y = Sq.apply(x.sin())
        (g,) = L.autograd.grad(y.sum(), x, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), x)
        return [round(v, 12) for v in g.tolist()], [round(v, 12) for v in gg.tolist()]

    assert run(tg) == run(torch)


def test_double_backward_known_values():
    x = tg.tensor([3.0], requires_grad=True)
    (g,) = tg.autograd.grad(Square.apply(x), x, create_graph=True)
    assert g.tolist() == [6.0] and g.requires_grad
    (gg,) = tg.autograd.grad(g, x)
    assert gg.tolist() == [2.0]


# =============================================================================== Variable


def test_variable_returns_a_plain_tensor_sharing_memory():
    t = tg.ones(2)
    v = Variable(t, requires_grad=True)
    assert type(v) is tg.Tensor
    assert v is not t and v.data_ptr() == t.data_ptr()
    assert v.requires_grad and v.is_leaf and not t.requires_grad


def test_every_tensor_is_a_variable():
    assert isinstance(tg.ones(2), Variable)
    assert isinstance(tg.ones(2, requires_grad=True) * 2, Variable)
    assert not isinstance(3.0, Variable)


def test_variable_volatile_warns_that_it_has_no_effect():
    with pytest.warns(UserWarning, match="volatile was removed"):
        v = Variable(tg.ones(2), volatile=True)
    assert isinstance(v, tg.Tensor)


def test_variable_without_volatile_does_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Variable(tg.ones(2))


def test_variable_of_a_non_tensor_is_a_type_error():
    with pytest.raises(TypeError):
        Variable([1.0, 2.0])


def test_variable_works_in_an_old_style_training_step():
    w = Variable(tg.tensor([1.0, 2.0]), requires_grad=True)
    x = Variable(tg.tensor([3.0, 4.0]))
    (w * x).sum().backward()
    assert w.grad.tolist() == [3.0, 4.0] and x.grad is None

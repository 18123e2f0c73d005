"""One formula, two modes (``Builtin.on_arrays``, ``function._formula_on_arrays``).

Without ``create_graph`` a built-in whose backward uses only what arrays and Tensors both
have runs that formula on the arrays; with it, on Tensors. Both must give the same
gradients, bit for bit, and every op that says ``on_arrays`` is checked here."""

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.autograd import function
from teachgrad.autograd.builtin import Builtin
from tests.teachgrad.autograd._port import times_two

RNG = np.random.default_rng(7)


def _t(*shape, positive=False):
    data = RNG.standard_normal(shape)
    return tg.tensor(np.abs(data) + 0.5 if positive else data, requires_grad=True)


# name -> (inputs, program); each program uses the op(s) named, and every on_arrays op is here
PROGRAMS = {
    "Add": (lambda: (_t(3, 4), _t(4)), lambda a, b: a + b * 2),
    "Add alpha": (lambda: (_t(3), _t(3)), lambda a, b: tg.add(a, b, alpha=3)),
    "Sub": (lambda: (_t(3, 4), _t(3, 1)), lambda a, b: a - b),
    "AddByNumber (foreach's add_ of a number)": (
        lambda: (_t(3),),
        lambda a: tg._foreach_add_([a * 1], 2.0)[0],
    ),
    "SubByNumber (foreach's sub_ of a number)": (
        lambda: (_t(3),),
        lambda a: tg._foreach_sub_([a * 1], 2.0)[0],
    ),
    # a broadcast operand's gradient is summed back on the array (function._summed_back)
    "Sub, leading and size-1 dims summed": (lambda: (_t(2, 3, 4), _t(3, 1)), lambda a, b: b - a),
    "Add, summed to 0-d": (lambda: (_t(3, 4), _t()), lambda a, b: a + b),
    "Rsub": (lambda: (_t(3),), lambda a: 2 - a),
    "Mul": (lambda: (_t(2, 3), _t(3)), lambda a, b: a * b * 0.5),
    "Div": (lambda: (_t(2, 3), _t(2, 3, positive=True)), lambda a, b: a / b),
    "DivByMode (div with rounding_mode=None)": (
        lambda: (_t(2, 3), _t(2, 3, positive=True)),
        lambda a, b: a.div(b, rounding_mode=None),
    ),
    "DivByNumber (mean's gradient)": (
        lambda: (_t(2, 3),),
        lambda a: tg.autograd.grad(a.mean() ** 2, a, create_graph=True)[0],
    ),
    "MulByNumber (cross_entropy's label smoothing)": (
        lambda: (_t(3, 4),),
        lambda a: tg.nn.functional.cross_entropy(a, tg.tensor([0, 2, 1]), label_smoothing=0.2),
    ),
    "Neg": (lambda: (_t(4),), lambda a: -a),
    "RemainderScalar": (lambda: (_t(4),), lambda a: a % 0.7),
    "FmodScalar": (lambda: (_t(4),), lambda a: tg.fmod(a, -0.7)),
    "Remainder": (lambda: (_t(2, 3), _t(3, positive=True)), lambda a, b: a % -b),
    "Fmod": (lambda: (_t(2, 3), _t(2, 3, positive=True)), lambda a, b: a.fmod(b)),
    "Exp": (lambda: (_t(4),), lambda a: a.exp()),
    "Log": (lambda: (_t(4, positive=True),), lambda a: a.log()),
    "Log1p": (lambda: (_t(4, positive=True),), lambda a: a.log1p()),
    "Expm1": (lambda: (_t(4),), lambda a: a.expm1()),
    "Sqrt": (lambda: (_t(4, positive=True),), lambda a: a.sqrt()),
    "Rsqrt": (lambda: (_t(4, positive=True),), lambda a: a.rsqrt()),
    "Reciprocal": (lambda: (_t(4, positive=True),), lambda a: a.reciprocal()),
    "Tan": (lambda: (_t(4),), lambda a: (a * 0.3).tan()),
    "Tanh": (lambda: (_t(4),), lambda a: a.tanh()),
    "Sigmoid": (lambda: (_t(4),), lambda a: a.sigmoid()),
    "Relu": (lambda: (_t(6),), lambda a: a.relu()),
    "in-place squeeze_ and unsqueeze_": (
        lambda: (_t(1, 3, 1),),
        lambda a: (a * 1).squeeze_().unsqueeze_(1).squeeze_(1).unsqueeze_(0).squeeze_((0,)),
    ),
    "Sum": (lambda: (_t(2, 3, 4),), lambda a: a.sum(1) + a.sum((0, 2), keepdim=True).sum()),
    "SumAll": (lambda: (_t(2, 3),), lambda a: a.sum()),
    "Mean": (lambda: (_t(2, 3),), lambda a: a.mean(0)),
    "MeanAll": (lambda: (_t(2, 3),), lambda a: a.mean()),
    "Logsumexp": (lambda: (_t(2, 5),), lambda a: a.logsumexp(1, keepdim=True)),
    "Matmul 2-d": (lambda: (_t(3, 4), _t(4, 2)), lambda a, b: a @ b),
    "Matmul batched": (lambda: (_t(2, 3, 4), _t(4, 5)), lambda a, b: a @ b),
    "Matmul 1-d @ 1-d": (lambda: (_t(4), _t(4)), lambda a, b: a @ b),
    "Matmul 2-d @ 1-d": (lambda: (_t(3, 4), _t(4)), lambda a, b: a @ b),
    "Matmul 1-d @ 2-d": (lambda: (_t(4), _t(4, 3)), lambda a, b: a @ b),
    "Matmul batched @ 1-d": (lambda: (_t(2, 3, 4), _t(4)), lambda a, b: a @ b),
    "Matmul 1-d @ batched": (lambda: (_t(4), _t(2, 4, 3)), lambda a, b: a @ b),
    "Matmul 2-d @ batched": (lambda: (_t(3, 4), _t(2, 4, 5)), lambda a, b: a @ b),
    "Addmm (linear, a bias per output)": (
        lambda: (_t(3, 4), _t(2, 4), _t(2)),
        lambda x, w, b: tg.nn.functional.linear(x, w, b),
    ),
    "Addmm (linear, a bias of shape (n, 1))": (
        lambda: (_t(3, 4), _t(2, 4), _t(3, 1)),
        lambda x, w, b: tg.nn.functional.linear(x, w, b),
    ),
    "Addmm (linear, a 0-d bias)": (
        lambda: (_t(3, 4), _t(2, 4), _t()),
        lambda x, w, b: tg.nn.functional.linear(x, w, b),
    ),
    "Mm": (lambda: (_t(3, 4), _t(4, 2)), lambda a, b: tg.mm(a, b)),
    "Bmm": (lambda: (_t(2, 3, 4), _t(2, 4, 2)), lambda a, b: tg.bmm(a, b)),
    "Mv": (lambda: (_t(3, 4), _t(4)), lambda a, b: tg.mv(a, b)),
    "Dot": (lambda: (_t(4), _t(4)), lambda a, b: tg.dot(a, b)),
    "View": (lambda: (_t(2, 6),), lambda a: a.view(3, 4) * 2),
    "Reshape of a transposed": (lambda: (_t(3, 4),), lambda a: a.t().reshape(12) * 2),
    "Reshape, a view of a slice": (lambda: (_t(4, 6),), lambda a: a[:, :3].reshape(4, 3, 1) * 2),
    "Squeeze": (lambda: (_t(2, 1, 3),), lambda a: a.squeeze(1) * 2 + a.squeeze().sum()),
    "Squeeze dims": (lambda: (_t(2, 1, 3),), lambda a: a.squeeze((1,)) * 2),
    "Unsqueeze": (lambda: (_t(2, 3),), lambda a: a.unsqueeze(1) * 2),
    "Select": (lambda: (_t(3, 4),), lambda a: a[1] * 2 + a.select(1, 2).sum()),
    "Slice": (lambda: (_t(5, 4),), lambda a: a[1:4] * 2 + a[:, ::2].sum()),
    "float32": (
        lambda: (tg.randn(3, 4, requires_grad=True), tg.randn(4, requires_grad=True)),
        lambda a, b: ((a * b).tanh() @ b).sigmoid(),
    ),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_formula_gives_the_same_gradients_on_arrays_and_on_tensors(name, monkeypatch):
    make_inputs, program = PROGRAMS[name]
    inputs = make_inputs()
    out = program(*inputs)
    seed = tg.tensor(np.random.default_rng(3).standard_normal(out.shape), dtype=out.dtype)

    on_arrays = []
    real = function.arrays_formula
    monkeypatch.setattr(
        function, "arrays_formula", lambda n, g: on_arrays.append(n.name()) or real(n, g)
    )
    fast = tg.autograd.grad(out, inputs, seed, retain_graph=True)
    assert on_arrays, "no node ran its formula on arrays"
    on_arrays.clear()
    slow = tg.autograd.grad(out, inputs, seed, create_graph=True)
    assert on_arrays == []  # with create_graph, every formula runs on Tensors
    for f, s in zip(fast, slow, strict=True):
        assert f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_array_equal(f.numpy(), s.detach().numpy())


def _on_arrays_ops():
    found, todo = set(), list(Builtin.__subclasses__())
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.on_arrays:
            found.add(cls._backward_cls.__name__)
    return found


def test_every_op_that_runs_on_arrays_is_checked_above():
    checked = set()
    for make_inputs, program in PROGRAMS.values():
        out = program(*make_inputs())
        stack, seen = [out.grad_fn], set()
        while stack:
            node = stack.pop()
            if node is None or node in seen:
                continue
            seen.add(node)
            checked.add(type(node).__name__)
            stack += [n for n, _ in node.next_functions]
    assert _on_arrays_ops() <= checked, _on_arrays_ops() - checked


def test_mixed_dtypes_run_on_tensors_so_that_torch_promotion_decides(monkeypatch):
    """A node whose inputs are not all of its output's dtype runs its formula on Tensors (so
    decided as it is recorded); with one dtype, on arrays."""
    ran = []
    real = function.arrays_formula
    monkeypatch.setattr(function, "arrays_formula", lambda n, g: ran.append(n.name()) or real(n, g))
    a = tg.randn(3, dtype=tg.float32, requires_grad=True)
    b = tg.tensor(2.0, dtype=tg.float64, requires_grad=True)
    mixed, same = a * b, a * a
    assert not mixed.grad_fn._on_arrays and same.grad_fn._on_arrays
    mixed.sum().backward()
    assert ran == ["SumBackward0"]  # (Mul ran on Tensors)
    assert (a.grad.dtype, b.grad.dtype) == (tg.float32, tg.float64)
    same.sum().backward()
    assert ran[1:] == ["SumBackward0", "MulBackward0"]


def test_a_number_operand_or_a_custom_function_does_not_decide_the_dtype():
    """``x * 2`` keeps its formula on arrays (the number has no dtype of its own); a custom
    Function never runs on arrays."""

    x = tg.randn(3, dtype=tg.float32, requires_grad=True)
    assert (x * 2).grad_fn._on_arrays and (x * 2.5).grad_fn._on_arrays
    assert not times_two(tg, custom=True)(x).grad_fn._on_arrays


def test_a_linear_layers_gradients_become_their_grad_without_a_copy(monkeypatch):
    """The weight's gradient, made on arrays as the transpose of a transposed product, and
    the bias's row sum are held by nobody but the engine: each becomes ``.grad`` itself, as
    torch's AccumulateGrad steals such a gradient (``engine._claim_unshared``), and a
    training step copies no gradient."""
    from teachgrad.autograd import tape

    copies = []
    real = tape._copy_with_layout
    monkeypatch.setattr(tape, "_copy_with_layout", lambda g, var: copies.append(g) or real(g, var))
    model = tg.nn.Sequential(tg.nn.Linear(4, 5), tg.nn.ReLU(), tg.nn.Linear(5, 3))
    x = tg.tensor(RNG.standard_normal((6, 4)), dtype=tg.float32)
    tg.nn.functional.cross_entropy(model(x), tg.tensor([0, 1, 2, 0, 1, 2])).backward()
    assert copies == []
    for p in model.parameters():  # each .grad has its parameter's strides (the layout contract)
        assert p.grad.shape == p.shape and p.grad.stride() == p.stride()


@pytest.mark.parametrize("detached", [False, True])
def test_no_claimed_gradient_outlives_backward(detached):
    """The engine claims a gradient (``tape.claim``) only for the leaf that keeps it next,
    so no claim holds a gradient once backward is over; a leaf that takes no gradient
    (``detach_()`` after the graph was made) gets no claim at all."""
    from teachgrad.autograd import tape

    w = _t(3)
    y = w * 2
    if detached:
        w.detach_()  # (w's AccumulateGrad still gets a gradient, and stores nothing)
    y.sum().backward()
    assert (w.grad is None) == detached and tape.claim.tensor is None


def test_a_bias_added_with_core_ops_gets_its_row_sum_as_grad_without_a_copy(monkeypatch):
    """``h @ w + b``: b's gradient, summed back over the batch on the array, is held by
    nobody but the engine, and becomes ``b.grad`` itself, as in ``linear``."""
    from teachgrad.autograd import tape

    copies = []
    real = tape._copy_with_layout
    monkeypatch.setattr(tape, "_copy_with_layout", lambda g, var: copies.append(g) or real(g, var))
    h, w, b = _t(6, 4), _t(4, 3), _t(3)
    seed = tg.tensor(RNG.standard_normal((6, 3)))
    (h @ w + b).backward(seed)
    assert copies == []
    np.testing.assert_allclose(b.grad.numpy(), seed.numpy().sum(0))


def test_a_gradient_summed_back_past_float32s_range_is_inf_silently():
    """torch's sum overflows to inf without a word; so does the sum back on the array."""
    import warnings

    a = tg.zeros(4, 3, requires_grad=True)
    b = tg.zeros(3, requires_grad=True)
    seed = tg.full((4, 3), 3e38)
    out = a + b
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with tg.no_grad():  # the node called by hand: on arrays, outside a backward pass
            by_hand = out.grad_fn(seed)[1]
        out.backward(seed)
    assert b.grad.tolist() == by_hand.tolist() == [float("inf")] * 3


def _counting_adds(monkeypatch) -> list:
    """The ``Add`` ops that run from now on (one entry each)."""
    from teachgrad.ops.pointwise import Add

    adds, real = [], Add.forward
    monkeypatch.setattr(
        Add, "forward", staticmethod(lambda *a, **k: adds.append(1) or real(*a, **k))
    )
    return adds


def test_two_gradients_for_one_input_are_summed_on_the_arrays_unless_a_graph_is_wanted(monkeypatch):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    adds = _counting_adds(monkeypatch)
    (x * x).sum().backward()  # x gets two gradients, one per operand
    assert adds == [] and x.grad.tolist() == [2.0, 4.0]
    (g,) = tg.autograd.grad((x * x).sum(), x, create_graph=True)
    assert adds == [1] and g.grad_fn.name() == "AddBackward0"  # recorded, as torch's
    import teachgrad.autograd.forward_ad as fwAD

    with fwAD.dual_level():  # (forward-mode AD open: the sum is an op, as every formula is)
        tg.autograd.grad((x * x).sum(), x)
    assert adds == [1, 1]


def test_a_0d_sum_of_two_gradients_stays_an_array():
    x = tg.tensor(3.0, requires_grad=True)
    (x * x).backward()
    assert type(x.grad._data) is np.ndarray and x.grad.shape == () and x.grad.item() == 6.0

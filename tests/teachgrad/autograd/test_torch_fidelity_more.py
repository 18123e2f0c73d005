"""Torch fidelity of the differences once listed as "not fixed yet" in
docs/differences-from-torch.md: node names (``AccumulateGrad.name()``, the node the
version error names), indexing with mixed index kinds, and the strides of empty views and
of elementwise results. Each program runs on teachgrad and on torch and must end the same
way (same facts, or the same error class and first line).
"""

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


# --------------------------------------------------------------------------- AccumulateGrad


def test_accumulate_grad_is_named_with_torchs_namespace_and_printed_without_it():
    """``name()`` is ``torch::autograd::AccumulateGrad``; the repr says ``AccumulateGrad``."""

    def program(lib):
        w = lib.ones(2, requires_grad=True)
        acc = (w * 2).grad_fn.next_functions[0][0]
        edge = lib.autograd.graph.get_gradient_edge(w).node
        return acc.name(), edge.name(), repr(acc).split(" object")[0], type(acc).__name__

    assert_like_torch(program)


# --------------------------------------------------------------------------- the version error

MAKERS = {  # how the saved tensor was made: its node's name, as the error prints it
    "2 - x (Rsub1)": lambda lib, x: 2 - x,
    "x - 1 (Sub)": lambda lib, x: x - 1,
    "x - x.detach() (Sub)": lambda lib, x: x - x.detach(),
    "x + 1 (Add)": lambda lib, x: x + 1,
    "x * 2 (Mul)": lambda lib, x: x * 2,
    "2 / x (Mul)": lambda lib, x: 2 / x,
    "x ** 2 (Pow)": lambda lib, x: x**2,
    "x ** x (Pow1)": lambda lib, x: x**x,
    "2 ** x (Pow2)": lambda lib, x: 2**x,
    "clamp (Clamp1)": lambda lib, x: x.clamp(0, 1),
    "max() (Max1)": lambda lib, x: x.max(),
    "max(0) (Max)": lambda lib, x: x.max(0)[0],
    "sum() (Sum)": lambda lib, x: x.sum(),
    "sum(0) (Sum1)": lambda lib, x: x.sum(0),
    "norm (LinalgVectorNorm)": lambda lib, x: x.norm(),
    "where (Where)": lambda lib, x: lib.where(x > 0, x, x * 2),
    "tanh's gradient (TanhBackward)": lambda lib, x: lib.autograd.grad(
        x.tanh().sum(), x, create_graph=True
    )[0],
}


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_the_version_error_names_the_node_with_its_overload_number(make):
    """torch drops ``Backward0`` but keeps any other overload number (``Rsub1``, ``Pow2``)."""

    def program(lib):
        x = lib.full((2, 2), 0.5, dtype=lib.float64, requires_grad=True)
        a = make(lib, x)
        y = a * a  # saves a
        with lib.no_grad():
            a.add_(1)  # a keeps its grad_fn: the error names it
        y.sum().backward()

    assert_like_torch(program)


VIEWS = {
    "b[0]": lambda b: b[0],
    "b[1:]": lambda b: b[1:],
    "b.t()": lambda b: b.t(),
    "b.view(4)": lambda b: b.view(4),
    "b.diagonal()": lambda b: b.diagonal(),
    "b.t()[1]": lambda b: b.t()[1],
    "b[0].expand(3, 2)": lambda b: b[0].expand(3, 2),
}


@pytest.mark.parametrize("view", VIEWS.values(), ids=VIEWS.keys())
@pytest.mark.parametrize("saved_before_the_rebuild", [True, False])
def test_the_version_error_names_a_rebuilt_views_node_as_torch_does(view, saved_before_the_rebuild):
    """A view whose base changed in place gets a new history (``AsStridedBackward0``)."""

    def program(lib):
        x = lib.full((2, 2), 0.5, dtype=lib.float64, requires_grad=True)
        b = x * 1
        v = view(b)
        if saved_before_the_rebuild:
            y = v * v
            b.mul_(2)
        else:
            b.mul_(2)  # v's history is rebuilt when it is next used
            y = v * v
            b.add_(1)
        y.sum().backward()

    assert_like_torch(program)


# --------------------------------------------------------------------------- views under no_grad

SPLITS = {
    "unbind": lambda b: b.unbind(0),
    "split": lambda b: b.split(2),
    "chunk": lambda b: b.chunk(2),
}


@pytest.mark.parametrize("split", SPLITS.values(), ids=SPLITS.keys())
def test_a_multi_output_view_made_under_no_grad_is_a_no_grad_view(split):
    def program(lib):
        b = lib.ones(4, 2, requires_grad=True) * 1
        with lib.no_grad():
            parts = split(b)
        parts[0].mul_(2)

    assert_like_torch(program)


# --------------------------------------------------------------------------- mixed index kinds

KEYS = {  # entries: i, j index tensors; T/F Python bools; t a 0-d bool tensor; n a 0-d int one
    "0, :, i": "0,:,i",
    "i, :, 0": "i,:,0",
    ":, 0, i": ":,0,i",
    "0, :, :, i": "0,:,:,i",
    "0, ..., i": "0,...,i",
    "i, :, j, :": "i,:,j,:",
    "i, 0, :, j": "i,0,:,j",
    "0, i, :, j": "0,i,:,j",
    "1:, :, i": "1:,:,i",
    "None, 0, :, i": "None,0,:,i",
    "n, :, i": "n,:,i",
    "True": "T",
    "True, i": "T,i",
    "i, True": "i,T",
    "True, 0, :, i": "T,0,:,i",
    "0, True, :, i": "0,T,:,i",
    "True, True": "T,T",
    "..., True": "...,T",
    "t, i": "t,i",
    "t, :, i": "t,:,i",
    "False, :, i": "F,:,i",
}


def _key(lib, spec):
    """The index ``spec`` ("0,:,i") names, built with ``lib``'s tensors."""
    named = {
        "i": lib.tensor([1, 0]),
        "j": lib.tensor([2, 0]),
        "T": True,
        "F": False,
        "t": lib.tensor(True),
        "n": lib.tensor(0),
        ":": slice(None),
        "1:": slice(1, None),
        "...": Ellipsis,
        "None": None,
    }
    return tuple(named[p] if p in named else int(p) for p in spec.split(","))


def _chain(fn):
    """The names along the first edges from ``fn`` back to the leaf."""
    names = []
    while fn is not None:
        names.append(fn.name())
        fn = next((f for f, _ in fn.next_functions if f is not None), None)
    return names


@pytest.mark.parametrize("spec", KEYS.values(), ids=KEYS.keys())
def test_reading_with_mixed_index_kinds_like_torch(spec):
    """Shape, values, graph (torch adds an ``UnsqueezeBackward0`` for a single boolean) and
    the gradient of ``x[key]``."""

    def program(lib):
        x = lib.arange(120.0, dtype=lib.float64).reshape(2, 3, 4, 5).requires_grad_()
        y = (x * 1)[_key(lib, spec)]
        w = lib.linspace(-1.0, 1.0, y.numel(), dtype=lib.float64).reshape(y.shape)
        (y * w).sum().backward()
        return as_numpy(y), _chain(y.grad_fn), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("spec", KEYS.values(), ids=KEYS.keys())
def test_writing_with_mixed_index_kinds_like_torch(spec):
    """``b[key] = v`` puts v's dims where torch does: values and both gradients agree."""

    def program(lib):
        x = lib.arange(120.0, dtype=lib.float64).reshape(2, 3, 4, 5).requires_grad_()
        b = x * 1
        shape = b[_key(lib, spec)].shape
        v = lib.linspace(0.0, 1.0, max(1, shape.numel()), dtype=lib.float64)
        v = v[: shape.numel()].reshape(shape).requires_grad_()
        b[_key(lib, spec)] = v
        w = lib.linspace(-1.0, 2.0, 120, dtype=lib.float64).reshape(2, 3, 4, 5)
        (b * w).sum().backward()
        return as_numpy(b), b.grad_fn.name(), as_numpy(x.grad), as_numpy(v.grad)

    assert_like_torch(program)


# --------------------------------------------------------------------------- empty views

EMPTY_VIEWS = {
    "zeros(0, 3).t()": lambda lib: lib.zeros(0, 3).t(),
    "zeros(3, 0).t()": lambda lib: lib.zeros(3, 0).t(),
    "permute": lambda lib: lib.zeros(2, 0, 3).permute(2, 0, 1),
    "movedim": lambda lib: lib.zeros(2, 0, 3).movedim(0, 2),
    "expand of an empty tensor": lambda lib: lib.zeros(0, 3).expand(2, 0, 3),
    "expand to an empty size": lambda lib: lib.zeros(1, 3).expand(0, 3),
    "select of an empty tensor": lambda lib: lib.zeros(2, 0, 3)[1],
    "column of an empty tensor": lambda lib: lib.zeros(0, 3)[:, 1],
    "diagonal": lambda lib: lib.zeros(0, 3).diagonal(),
    "squeeze": lambda lib: lib.zeros(1, 0, 3).squeeze(0),
    "empty slice": lambda lib: lib.zeros(4, 3)[2:2],
    "empty column slice, transposed": lambda lib: lib.zeros(4, 6)[:, 1:1].t(),
    "empty slice of a strided view": lambda lib: lib.zeros(4, 3)[:, ::2][:, 2:],
    "t().contiguous()": lambda lib: lib.zeros(0, 3).t().contiguous(),
    "view": lambda lib: lib.zeros(0, 3).view(3, 0),
    "tensor([]).unsqueeze(0).t()": lambda lib: lib.tensor([]).unsqueeze(0).t(),
    "an op's empty result, transposed": lambda lib: (lib.zeros(0, 3) + 1).t(),
}


@pytest.mark.parametrize("make", EMPTY_VIEWS.values(), ids=EMPTY_VIEWS.keys())
def test_an_empty_view_has_torchs_strides(make):
    """A fresh empty tensor is laid out row-major (NumPy says stride 0), so its views are too."""

    def program(lib):
        t = make(lib)
        return tuple(t.shape), t.stride(), t.is_contiguous()

    assert_like_torch(program)


# --------------------------------------------------------------------------- elementwise layout


def _grid(lib, *shape):
    """A fresh row-major tensor 1, 2, 3, ... of ``shape`` (then made a view by the cases)."""
    n = 1
    for size in shape:
        n *= size
    return lib.arange(1.0, n + 1).reshape(*shape)


OPERANDS = {  # operands of an elementwise op, laid out in many ways (all broadcast to (2, 3))
    "row-major": lambda lib: _grid(lib, 2, 3),
    "transposed": lambda lib: _grid(lib, 3, 2).t(),
    "transposed slice": lambda lib: _grid(lib, 6, 2)[::2].t(),
    "sliced": lambda lib: _grid(lib, 2, 6)[:, ::2],
    "row (broadcast)": lambda lib: _grid(lib, 3),
    "column (broadcast)": lambda lib: _grid(lib, 2, 1),
    "expanded": lambda lib: _grid(lib, 1, 3).expand(2, 3),
    "0-d": lambda lib: lib.tensor(2.0),
    "number": lambda lib: 2.0,
}
OPERANDS_3D = {  # ... broadcast to (2, 3, 4)
    "row-major": lambda lib: _grid(lib, 2, 3, 4),
    "permute(2, 0, 1)": lambda lib: _grid(lib, 3, 4, 2).permute(2, 0, 1),
    "permute(1, 2, 0)": lambda lib: _grid(lib, 4, 2, 3).permute(1, 2, 0),
    "permute(1, 0, 2)": lambda lib: _grid(lib, 3, 2, 4).permute(1, 0, 2),
    "permute(2, 1, 0)": lambda lib: _grid(lib, 4, 3, 2).permute(2, 1, 0),
    "broadcast (1, 3, 4)": lambda lib: _grid(lib, 1, 3, 4),
    "broadcast (2, 1, 4)": lambda lib: _grid(lib, 2, 1, 4),
    "expanded": lambda lib: _grid(lib, 2, 1, 4).expand(2, 3, 4),
    "0-d": lambda lib: lib.tensor(2.0),
}
EMPTY_OPERANDS = {
    "zeros(0, 3)": lambda lib: lib.zeros(0, 3),
    "zeros(3, 0).t()": lambda lib: lib.zeros(3, 0).t(),
    "zeros(3)": lambda lib: lib.zeros(3),
    "0-d": lambda lib: lib.tensor(2.0),
    "number": lambda lib: 2.0,
}
EMPTY_T = {
    "zeros(0, 3).t()": lambda lib: lib.zeros(0, 3).t(),
    "zeros(3, 0)": lambda lib: lib.zeros(3, 0),
}
BINARY_OPS = {
    "add": lambda lib, a, b: a + b,
    "sub": lambda lib, a, b: a - b,
    "rsub": lambda lib, a, b: 2 - a if isinstance(b, float) else a - b,
    "mul": lambda lib, a, b: a * b,
    "div": lambda lib, a, b: a / b,
    "pow": lambda lib, a, b: a**b,
    "lt": lambda lib, a, b: a < b,
    "maximum": lambda lib, a, b: lib.maximum(a, b * lib.ones(()) if isinstance(b, float) else b),
    "where": lambda lib, a, b: lib.where(a > 3, a, b),
    "floor_divide": lambda lib, a, b: a // b,
    "remainder": lambda lib, a, b: a % b,
}


def _pairs(operands):
    return {
        f"{first} with {second}": (operands[first], operands[second])
        for first in operands
        for second in operands
        if first != "number"
    }


LAYOUT_CASES = {**_pairs(OPERANDS), **{f"3-D {k}": v for k, v in _pairs(OPERANDS_3D).items()}}
LAYOUT_CASES.update({f"empty {k}": v for k, v in _pairs(EMPTY_OPERANDS).items()})
LAYOUT_CASES.update({f"empty {k}": v for k, v in _pairs({**EMPTY_T, **EMPTY_OPERANDS}).items()})


@pytest.mark.parametrize("op", BINARY_OPS.values(), ids=BINARY_OPS.keys())
@pytest.mark.parametrize("case", LAYOUT_CASES.values(), ids=LAYOUT_CASES.keys())
def test_an_elementwise_result_is_laid_out_as_torch_lays_it_out(case, op):
    """torch orders the result's dims by the operands' strides, the first operand deciding
    where they disagree (``x.t() + y`` is laid out like ``x``); the values are NumPy's."""
    make_a, make_b = case

    def program(lib):
        a, b = make_a(lib), make_b(lib)
        try:
            out = op(lib, a, b)
        except RuntimeError as e:  # (shapes that do not broadcast: both libraries refuse)
            return type(e).__name__
        return tuple(out.shape), out.stride(), as_numpy(out)

    assert_like_torch(program)


COPIES = {
    "clone": lambda t: t.clone(),
    "to(float64)": lambda t: t.to(dtype=t.new_zeros(()).double().dtype),
    "neg": lambda t: -t,
    "* 1": lambda t: t * 1,
}
COPIED = {
    "zeros(0, 3).t()": lambda lib: lib.zeros(0, 3).t(),
    "zeros(3, 0).t()": lambda lib: lib.zeros(3, 0).t(),
    "zeros(3, 0, 2).permute(1, 2, 0)": lambda lib: lib.zeros(3, 0, 2).permute(1, 2, 0),
    "transposed slice": lambda lib: _grid(lib, 6, 2)[::2].t(),
    "permuted": lambda lib: _grid(lib, 3, 4, 2).permute(2, 0, 1),
}


@pytest.mark.parametrize("copy", COPIES.values(), ids=COPIES.keys())
@pytest.mark.parametrize("make", COPIED.values(), ids=COPIED.keys())
def test_a_copy_keeps_torchs_layout(make, copy):
    """A copy (or a one-operand op) of an empty or strided tensor: torch's strides."""

    def program(lib):
        out = copy(make(lib))
        return tuple(out.shape), out.stride(), as_numpy(out)

    assert_like_torch(program)


# --------------------------------------------------------------------------- reductions

REDUCTIONS = {
    "sum(1)": lambda t: t.sum(1),
    "sum(0, keepdim)": lambda t: t.sum(0, keepdim=True),
    "sum()": lambda t: t.sum(),
    "mean((0, 2), keepdim)": lambda t: t.mean((0, 2), keepdim=True),
    "prod(2)": lambda t: t.prod(2),
    "amax(0)": lambda t: t.amax(0),
    "amin(-1, keepdim)": lambda t: t.amin(-1, keepdim=True),
    "max(1).values": lambda t: t.max(1).values,
    "max(1).indices": lambda t: t.max(1).indices,
    "min(0, keepdim).values": lambda t: t.min(0, keepdim=True).values,
    "var(1)": lambda t: t.var(1),
    "std(0, keepdim)": lambda t: t.std(0, keepdim=True),
    "logsumexp(0)": lambda t: t.logsumexp(0),
    "norm(dim=0)": lambda t: t.norm(dim=0),
    "norm(p=1, dim=2)": lambda t: t.norm(p=1, dim=2),
}
REDUCED = {
    "row-major": lambda lib: _grid(lib, 2, 3, 4),
    "permuted": lambda lib: _grid(lib, 2, 3, 4).permute(2, 0, 1),
    "transposed": lambda lib: _grid(lib, 2, 3, 4).transpose(1, 2),
    "sliced": lambda lib: _grid(lib, 2, 6, 4)[:, ::2],
    "with a size-1 dim": lambda lib: _grid(lib, 1, 2, 3).transpose(1, 2),
}


@pytest.mark.parametrize("reduce", REDUCTIONS.values(), ids=REDUCTIONS.keys())
@pytest.mark.parametrize("make", REDUCED.values(), ids=REDUCED.keys())
def test_a_reduction_is_laid_out_row_major_as_torchs(make, reduce):
    """NumPy lays a reduction out in the input's memory order; torch, row-major."""

    def program(lib):
        out = reduce(make(lib))
        return tuple(out.shape), out.stride(), as_numpy(out)

    assert_like_torch(program)

"""Known differences from torch that were fixed (misc20), each compared with torch across its
variations: the same program runs on both libraries, and either both raise (same class, same
first line) or both give the same facts (values, dtypes, shapes, containers, requires_grad,
node names, strides).
"""

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import Raised, both, node_name

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def structure(result):
    """A result's facts level by level: each container's type with its entries, each
    tensor's values, shape, requires_grad and node (None stays None)."""
    if isinstance(result, (list, tuple)):
        return (type(result).__name__, [structure(r) for r in result])
    if result is None:
        return None
    values = result.detach().cpu().numpy()
    return values, tuple(result.shape), result.requires_grad, node_name(result.grad_fn)


# --------------------------------------------------------------------------- functional containers

SHAPES = {"vectors": [(2,), (3,)], "a matrix and a 0-d": [(2, 2), ()]}


def _inputs(lib, shapes, as_tuple, requires_grad):
    rng = np.random.default_rng(7)
    xs = tuple(
        lib.tensor(rng.standard_normal(s), dtype=lib.float64, requires_grad=requires_grad)
        for s in shapes
    )
    return xs if as_tuple else xs[0]


def _function(out_tuple):
    """A function of one or two inputs (ops whose tangents are in the graph alike in both
    libraries); with a tuple output, the second output does not depend on the last input."""

    def f(*xs):
        s = (xs[0] * xs[0]).sum() * xs[-1].sin()
        return (s.exp(), xs[0].tanh() * xs[0]) if out_tuple else s.exp()

    return f


@pytest.mark.parametrize("requires_grad", [False, True], ids=["leaves", "inputs requiring grad"])
@pytest.mark.parametrize("create_graph", [False, True], ids=["", "create_graph"])
@pytest.mark.parametrize("vectorize", [False, True], ids=["", "vectorize"])
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("out_tuple", [False, True], ids=["tensor out", "tuple out"])
@pytest.mark.parametrize("in_tuple", [False, True], ids=["tensor in", "tuple in"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
def test_jacobian_containers_and_graph_as_torch(
    shapes, in_tuple, out_tuple, strategy, vectorize, create_graph, requires_grad
):
    """Forward mode returns lists where the inputs are a tuple (both levels when the outputs
    are one too) and leaves its blocks in the graph; reverse mode's vectorized zero blocks
    are in the graph with create_graph, as torch's one batched call leaves them."""

    def program(lib):
        inputs = _inputs(lib, shapes, in_tuple, requires_grad)
        J = lib.autograd.functional.jacobian(
            _function(out_tuple), inputs, create_graph, False, vectorize, strategy
        )
        return structure(J)

    assert_like_torch(program)


@pytest.mark.parametrize("requires_grad", [False, True], ids=["leaves", "inputs requiring grad"])
@pytest.mark.parametrize("create_graph", [False, True], ids=["", "create_graph"])
@pytest.mark.parametrize("vectorize", [False, True], ids=["", "vectorize"])
@pytest.mark.parametrize("strategy", ["reverse-mode", "forward-mode"])
@pytest.mark.parametrize("in_tuple", [False, True], ids=["tensor in", "tuple in"])
@pytest.mark.parametrize("shapes", SHAPES.values(), ids=SHAPES.keys())
def test_hessian_containers_and_graph_as_torch(
    shapes, in_tuple, strategy, vectorize, create_graph, requires_grad
):
    """Forward-over-reverse: lists of lists for a tuple of inputs, blocks in the graph."""

    def program(lib):
        inputs = _inputs(lib, shapes, in_tuple, requires_grad)
        H = lib.autograd.functional.hessian(
            lambda *xs: ((xs[0] ** 3).sum() * xs[-1].sum()).sin(),
            inputs,
            create_graph,
            False,
            vectorize,
            strategy,
        )
        return structure(H)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(strategy="forward-mode", strict=True, vectorize=True),
        dict(strategy="forward-mode", strict=True),
        dict(strategy="forward-mode", create_graph=True),
        dict(strategy="forward-mode"),
    ],
)
def test_forward_mode_jacobian_errors_as_torch(kwargs):
    def program(lib):
        return lib.autograd.functional.jacobian(lambda x: x.exp(), lib.ones(2), **kwargs)

    assert isinstance(assert_like_torch(program), Raised)


# --------------------------------------------------------------------------- batched grad


def _ones(lib, *shape):
    return lib.ones(*shape, dtype=lib.float64)


# name -> (outputs of x, their grad_outputs); x has shape (2,), the batch is 4
BATCHED = {
    "vector": (lambda lib, x: [x * x], lambda lib: [_ones(lib, 4, 2)]),
    "0-d": (lambda lib, x: [(x * x).sum()], lambda lib: [_ones(lib, 4)]),
    "two outputs": (
        lambda lib, x: [x.exp(), x.sum()],
        lambda lib: [_ones(lib, 4, 2), _ones(lib, 4)],
    ),
    "0-d, implicit": (lambda lib, x: [(x * x).sum()], lambda lib: None),
    "0-d, a None": (lambda lib, x: [(x * x).sum()], lambda lib: [None]),
    "(1,), implicit": (lambda lib, x: [(x * x).sum().reshape(1)], lambda lib: None),
    "(1, 1), implicit": (lambda lib, x: [(x * x).sum().reshape(1, 1)], lambda lib: None),
    "vector, implicit": (lambda lib, x: [x * x], lambda lib: None),
    "a None after a batch": (
        lambda lib, x: [x * x, x.sum()],
        lambda lib: [_ones(lib, 4, 2), None],
    ),
    "a None for a constant": (
        lambda lib, x: [x.sum(), _ones(lib)],
        lambda lib: [_ones(lib, 4), None],
    ),
    "batches of two sizes": (
        lambda lib, x: [x * x, x.sum()],
        lambda lib: [_ones(lib, 4, 2), _ones(lib, 3)],
    ),
    "a wrong shape": (lambda lib, x: [x * x], lambda lib: [_ones(lib, 4, 3)]),
    "a wrong shape, 3-d": (lambda lib, x: [x * x], lambda lib: [_ones(lib, 4, 5, 6)]),
    "a 0-d grad_output": (lambda lib, x: [x * x], lambda lib: [_ones(lib)]),
    "a number": (lambda lib, x: [x * x], lambda lib: [2.0]),
}


@pytest.mark.parametrize("create_graph", [False, True], ids=["", "create_graph"])
@pytest.mark.parametrize(
    "unused", [dict(allow_unused=True), dict(materialize_grads=True)], ids=["None", "zeros"]
)
@pytest.mark.parametrize("case", BATCHED, ids=str)
def test_batched_grad_of_an_unused_input_and_its_grad_outputs_as_torch(case, unused, create_graph):
    """An unused input's materialized gradient has the input's shape, without the batch
    dim; grad_outputs torch's vmap cannot batch fail with its errors."""
    outputs, grad_outputs = BATCHED[case]

    def program(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        unused_input = _ones(lib, 2, 3).requires_grad_()
        grads = lib.autograd.grad(
            outputs(lib, x),
            (x, unused_input),
            grad_outputs(lib),
            create_graph=create_graph,
            is_grads_batched=True,
            **unused,
        )
        return structure(grads)

    assert_like_torch(program)


# --------------------------------------------------------------------------- writes into expanded tensors

# name -> (base shape, expanded shape); the expanded dims share memory
EXPANDED = {"rows": ((3,), (2, 3)), "columns": ((3, 1), (3, 4)), "a 0-d": ((), (2, 3))}

# name -> write(lib, x), on the expanded tensor x of shape (2, 3) or (3, 4)
WRITES = {
    "x[ints] = number": lambda lib, x: x.__setitem__(lib.tensor([0]), 7.0),
    "x[ints] = rows, repeated": lambda lib, x: x.__setitem__(
        lib.tensor([1, 0, 1]), lib.arange(3 * x.shape[1], dtype=x.dtype).reshape(3, -1)
    ),
    "x[ints, ints] = values": lambda lib, x: x.__setitem__(
        (lib.tensor([0, 1, 1]), lib.tensor([2, 2, 0])), lib.tensor([1.0, 2.0, 3.0], dtype=x.dtype)
    ),
    "x[0, ints] = number": lambda lib, x: x.__setitem__((0, lib.tensor([1])), 7.0),
    "x[row mask] = number": lambda lib, x: x.__setitem__(lib.arange(x.shape[0]) == 0, 7),
    "x[mask] = number": lambda lib, x: x.__setitem__(
        lib.arange(x.numel()).reshape(x.shape) % 3 == 1, 7.0
    ),
    "x[row mask] = a row": lambda lib, x: x.__setitem__(
        lib.arange(x.shape[0]) == 1, lib.arange(x.shape[1], dtype=x.dtype) + 1
    ),
    "index_put_": lambda lib, x: x.index_put_((lib.tensor([1]),), lib.tensor(5.0, dtype=x.dtype)),
    "index_put_ of a mask and one value": lambda lib, x: x.index_put_(
        (lib.arange(x.shape[0]) == 1,), lib.tensor([5.0], dtype=x.dtype)
    ),
    "index_put_ accumulate": lambda lib, x: x.index_put_(
        (lib.tensor([0, 0, 1]),), lib.tensor(2.0, dtype=x.dtype), accumulate=True
    ),
    "index_put_ accumulate, a mask": lambda lib, x: x.index_put_(
        (lib.arange(x.shape[0]) == 0,), lib.tensor(2.0, dtype=x.dtype), accumulate=True
    ),
    "masked_fill_": lambda lib, x: x.masked_fill_(
        lib.arange(x.numel()).reshape(x.shape) % 4 == 0, 7.0
    ),
    "masked_fill_, a broadcast mask": lambda lib, x: x.masked_fill_(
        (lib.arange(x.shape[0]) == 0).reshape(-1, 1), lib.tensor(7.0)
    ),
    "masked_fill_, nothing chosen": lambda lib, x: x.masked_fill_(lib.tensor(False), 7.0),
}


def _expanded_write(lib, expanded, write, dtype, requires_grad):
    """Write into an expanded tensor: the base afterwards, the warnings, and (when the base
    is in a graph) the gradient that reaches its leaf."""
    import warnings

    base_shape, shape = EXPANDED[expanded]
    leaf = lib.arange(1, 1 + int(np.prod(base_shape)), dtype=getattr(lib, dtype))
    leaf = leaf.reshape(base_shape).requires_grad_(requires_grad)
    base = leaf * 1  # (a leaf that requires grad cannot be written in place)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        WRITES[write](lib, base.expand(shape))
    facts = {
        "base": base.detach().cpu().numpy(),
        "warnings": [str(w.message).split(" (Triggered internally")[0] for w in caught],
        "version": base._version,
    }
    if requires_grad:
        facts["node"] = node_name(base.grad_fn)
        (facts["grad"],) = lib.autograd.grad(base.sum(), leaf)
        facts["grad"] = facts["grad"].cpu().numpy()
    return facts


@pytest.mark.parametrize(
    "dtype, requires_grad",
    [("float32", False), ("int64", False), ("float32", True)],
    ids=["float32", "int64", "float32 in a graph"],
)
@pytest.mark.parametrize("write", WRITES, ids=str)
@pytest.mark.parametrize("expanded", EXPANDED, ids=str)
def test_a_write_into_an_expanded_tensor_writes_the_chosen_elements_as_torch(
    expanded, write, dtype, requires_grad
):
    """torch writes only the chosen elements into the shared memory (in the order of the
    indices: the last write to a cell wins, or adds to it with accumulate), with its
    deprecation warnings (an index_put_ that fills one value warns for masked_fill_ too)."""
    assert_like_torch(lambda lib: _expanded_write(lib, expanded, write, dtype, requires_grad))


# --------------------------------------------------------------------------- einsum layout

# equation -> operand shapes; an operand given as "T" + shape is passed transposed (.mT)
EINSUMS = {
    "bij,bjk->ibk": [(2, 2, 3), (2, 3, 4)],
    "bij,bjk->bik": [(2, 2, 3), (2, 3, 4)],
    "bij,bjk->kib": [(2, 2, 3), (1, 3, 4)],
    "bij,bjk->bki": [(2, 2, 3), (2, 3, 4)],
    "bij,bjk->jbk": [(2, 2, 3), (2, 3, 4)],
    "ij,jk->ki": [(2, 3), (3, 4)],
    "ij,jk->ik": [(2, 3), ("T", 4, 3)],
    "ij,jk": [("T", 3, 2), (3, 4)],
    "ij,kj->ki": [(2, 3), (4, 3)],
    "ji,jk->ki": [(3, 2), (3, 4)],
    "abj,jcd->acbd": [(2, 3, 4), (4, 5, 6)],
    "abj,jcd->cadb": [(2, 3, 4), (4, 5, 6)],
    "abj,jcd->dacb": [(2, 3, 4), (4, 5, 1)],
    "xij,xjk->kix": [(2, 3, 4), (2, 4, 5)],
    "ixj,jxk->kxi": [(3, 2, 4), (4, 2, 5)],
    "bij,bj->ib": [(2, 3, 4), (2, 4)],
    "bij,bj->bi": [(2, 3, 4), (1, 4)],
    "ijk,jk->ki": [(2, 3, 4), (3, 4)],
    "ij,ij->ji": [(2, 3), (2, 3)],
    "ij,ij->j": [(2, 3), (1, 3)],
    "ij,ij->": [(2, 3), (2, 3)],
    "i,j->ji": [(2,), (3,)],
    "ab,cd->dcba": [(2, 3), (4, 5)],
    "ij,k->ki": [(2, 3), (4,)],
    "ii,ij->ji": [(3, 3), (3, 2)],
    "iij,jk->ki": [(3, 3, 2), (2, 4)],
    "...ij,...jk->...ki": [(5, 2, 3), (5, 3, 4)],
    "...ij,...jk->ik...": [(5, 1, 2, 3), (6, 3, 4)],
    "...ij,...jk->ik": [(5, 2, 3), (5, 3, 4)],
    "b...i,b...i->...b": [(2, 3, 4), (2, 3, 4)],
    "ij,jk,kl->li": [(2, 3), (3, 4), (4, 5)],
    "ij,jk,kl->il": [(2, 3), (3, 4), (4, 5)],
    "ab,bc,ca->": [(2, 3), (3, 4), (4, 2)],
    "bi,bj,bk->kjb": [(2, 3), (2, 4), (2, 5)],
    "ij,jk,kl,lm->mi": [(2, 3), (3, 4), (4, 5), (5, 2)],
    "i,i,i->i": [(3,), (3,), (1,)],
    "ij,jk->ki (empty)": [(0, 3), (3, 4)],
    "ij,jk->ki (empty sum)": [(2, 0), (0, 4)],
    "ij,jk->ik (1 rows)": [(1, 3), (3, 1)],
    "bij,bjk->kib (1s)": [(1, 1, 3), (1, 3, 4)],
}


def _einsum_operands(lib, shapes, dtype):
    rng = np.random.default_rng(3)
    tensors = []
    for shape in shapes:
        transposed = shape[0] == "T"
        shape = shape[1:] if transposed else shape
        x = lib.tensor(rng.integers(-3, 4, size=shape), dtype=getattr(lib, dtype))
        tensors.append(x.mT if transposed else x)
    return tensors


@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("equation", EINSUMS, ids=str)
def test_einsum_result_has_torch_s_layout(equation, dtype):
    """torch computes a product of operands as batched matrix products of aligned views and
    returns a view of the last one: its layout is the product's (batch dims, the first
    operand's, the second's), permuted into the output's order."""

    def program(lib):
        operands = _einsum_operands(lib, EINSUMS[equation], dtype)
        y = lib.einsum(equation.split(" ")[0], *operands)
        return y.cpu().numpy(), tuple(y.shape), y.stride(), str(y.dtype).split(".")[-1]

    assert_like_torch(program)


# equation -> the operands, made of one (2, 3) tensor x
REPEATED = {
    "ij,ij->ji": lambda x: (x, x),
    "ij,kj->ki": lambda x: (x, x),
    "ij,jk->ki": lambda x: (x, x.mT),
    "ji,jk->ik": lambda x: (x, x),
    "ij,jk,kl->li": lambda x: (x, x.mT, x),
    "ab,cd->dcba": lambda x: (x, x),
}


@pytest.mark.parametrize("equation", REPEATED, ids=str)
def test_einsum_of_one_tensor_repeated_and_its_gradient_as_torch(equation):
    """One tensor as several operands: the result's layout and node, and the gradient."""

    def program(lib):
        x = lib.arange(1.0, 7.0, dtype=lib.float64).reshape(2, 3).requires_grad_()
        y = lib.einsum(equation, *REPEATED[equation](x))
        (g,) = lib.autograd.grad((y * y).sum(), x)
        return y.detach().cpu().numpy(), y.stride(), node_name(y.grad_fn), g.cpu().numpy()

    assert_like_torch(program)


# name -> (shape, strides, new shape): views of strided tensors
VIEWS = {
    "size-1 dims after a permute": ((4, 1, 1, 1), (1, 1, 1, 4), (4, 1, 1)),
    "a new size-1 dim in a column": ((3, 1), (1, 3), (1, 3, 1)),
    "size-1 dims around a strided one": ((2, 1, 3), (1, 9, 2), (2, 1, 3, 1)),
    "merging a contiguous pair": ((2, 3, 4), (12, 1, 3), (2, 12)),
    "splitting a dim": ((4, 6), (12, 1), (4, 2, 3)),
    "splitting a strided dim": ((4, 6), (12, 2), (2, 2, 2, 3, 1)),
    "a step of 2": ((3,), (2,), (1, 3, 1)),
    "a transposed matrix": ((3, 4), (1, 3), (1, 3, 4, 1)),
    "no view of a transpose": ((2, 3), (1, 2), (3, 2)),
    "no view across chunks": ((2, 3, 4), (1, 8, 2), (2, 12)),
}


@pytest.mark.parametrize("case", VIEWS, ids=str)
def test_view_of_a_strided_tensor_has_torch_s_strides(case):
    """torch gives each new dim (a size-1 one too) the stride of the part of memory it
    falls in; NumPy's reshape chooses other strides for size-1 dims."""
    shape, strides, new = VIEWS[case]

    def program(lib):
        base = lib.arange(120.0)
        x = base.as_strided(shape, strides) if lib is not tg else _strided(base, shape, strides)
        v = x.view(new)
        return v.stride(), v.cpu().numpy()

    assert_like_torch(program)


def _strided(base, shape, strides):
    """teachgrad has no ``as_strided``: the same view made from the array."""
    from teachgrad._backend import strided_view

    data = base._data
    return tg.Tensor._make(strided_view(data, shape, tuple(s * data.itemsize for s in strides)))


# --------------------------------------------------------------------------- mixed dtypes in nn

DTYPES = ["float16", "float32", "float64", None]  # None: the parameter is not given


def _param(lib, shape, dtype, seed):
    if dtype is None:
        return None
    values = np.random.default_rng(seed).standard_normal(shape)
    return lib.tensor(values, dtype=getattr(lib, dtype), requires_grad=True)


def _outcome(lib, y, tensors):
    """y's dtype and values (as float64), and each tensor's gradient dtype and values (of a
    random weighting of y: a plain sum of a normalised y has gradient 0, all rounding)."""
    upstream = lib.tensor(np.random.default_rng(4).standard_normal(tuple(y.shape)))
    loss = (y.double() * upstream).sum()
    grads = lib.autograd.grad(loss, [t for t in tensors if t is not None])
    return [(str(t.dtype).split(".")[-1], t.detach().double().cpu().numpy()) for t in (y, *grads)]


def assert_close_to_torch(program):
    """As ``assert_like_torch``, with the values compared to their dtype's precision."""
    facts = both(program)
    got, want = facts["tg"], facts["torch"]
    if isinstance(want, Raised) or isinstance(got, Raised):
        return assert_like_torch(program)
    dtypes = [dtype for dtype, _ in got]
    assert dtypes == [dtype for dtype, _ in want]
    # to the precision of the least precise dtype in play (a float32 gradient computed
    # from a half input holds half-precision rounding, differently in the two libraries)
    tol = 2e-3 if "float16" in dtypes else 1e-5 if "float32" in dtypes else 1e-10
    for (_, ours), (_, theirs) in zip(got, want):
        np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol)


@pytest.mark.parametrize("bias", DTYPES, ids=lambda d: f"bias {d}")
@pytest.mark.parametrize("weight", DTYPES, ids=lambda d: f"weight {d}")
@pytest.mark.parametrize("dtype", DTYPES[:3])
def test_layer_norm_of_mixed_dtypes_as_torch(dtype, weight, bias):
    """A float16 input with float32 parameters: computed in float32, returned as float16
    (its parameters' gradients float32); the other mixes fail with torch's errors."""

    def program(lib):
        x = _param(lib, (2, 3, 4), dtype, 1)
        w, b = _param(lib, (4,), weight, 2), _param(lib, (4,), bias, 3)
        y = lib.nn.functional.layer_norm(x, (4,), w, b)
        return _outcome(lib, y, (x, w, b))

    assert_close_to_torch(program)


@pytest.mark.parametrize("bias", DTYPES, ids=lambda d: f"bias {d}")
@pytest.mark.parametrize("weight", DTYPES[:3], ids=lambda d: f"weight {d}")
@pytest.mark.parametrize("dtype", DTYPES[:3])
def test_linear_of_mixed_dtypes_as_torch(dtype, weight, bias):
    def program(lib):
        x = _param(lib, (2, 4), dtype, 1)
        w, b = _param(lib, (3, 4), weight, 2), _param(lib, (3,), bias, 3)
        y = lib.nn.functional.linear(x, w, b)
        return _outcome(lib, y, (x, w, b))

    assert_close_to_torch(program)


# --------------------------------------------------------------------------- cross_entropy's node


def _graph(fn, depth=5):
    """A node's name and its inputs' graphs, ``depth`` levels down (None for no node)."""
    if fn is None or not depth:
        return None if fn is None else node_name(fn)
    return (node_name(fn), [_graph(f, depth - 1) for f, _ in fn.next_functions])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("weighted", [False, True], ids=["", "weighted"])
@pytest.mark.parametrize("shape", [(3, 4), (1, 4), (0, 4), (4,), (2, 4, 3), (3, 0)], ids=str)
def test_cross_entropy_with_class_probabilities_records_torch_s_nodes(
    shape, weighted, label_smoothing, reduction
):
    """The mean divides by the number of samples with torch's number overload
    (``DivBackward1``); over no samples it is NaN, filled in before the sign."""

    def program(lib):
        rng = np.random.default_rng(5)
        x = lib.tensor(rng.standard_normal(shape), dtype=lib.float64, requires_grad=True)
        target = lib.tensor(rng.random(shape), dtype=lib.float64)
        n_classes = shape[1] if len(shape) > 1 else shape[0]
        weight = lib.tensor(rng.random(n_classes), dtype=lib.float64) if weighted else None
        loss = lib.nn.functional.cross_entropy(
            x, target, weight, label_smoothing=label_smoothing, reduction=reduction
        )
        (g,) = lib.autograd.grad(loss.sum(), x)
        return _graph(loss.grad_fn), loss.detach().cpu().numpy(), g.cpu().numpy()

    assert_like_torch(program)

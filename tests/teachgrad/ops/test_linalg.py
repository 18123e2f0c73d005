"""Matrix products: matmul (every rank combination, batched and broadcast), mm, bmm, mv,
dot, outer; the QR decomposition (linalg.qr, qr) and linalg.solve_triangular. Gradients are
right (gradcheck, gradgradcheck, forward AD); values, gradients, dtypes and node names match
PyTorch; shape, rank and dtype mistakes raise torch's errors.
"""

import dataclasses
import warnings

import numpy as np
import pytest

import teachgrad as tg

from ._cases import A, assert_same, assert_same_error, case_id, compare_with_torch, run_gradchecks

T = "transposed"

# matmul operands: torch's rules for each rank combination
MATMUL_SHAPES = {
    "1-D @ 1-D (dot)": (A(3), A(3)),
    "2-D @ 1-D (mv)": (A(2, 3), A(3)),
    "1-D @ 2-D": (A(3), A(3, 4)),
    "2-D @ 2-D (mm)": (A(2, 3), A(3, 4)),
    "2-D @ 2-D transposed operands": (A(2, 3, layout=T), A(3, 4, layout=T)),
    "batched 3-D @ 3-D": (A(2, 2, 3), A(2, 3, 4)),
    "broadcast batched 4-D @ 3-D": (A(2, 1, 2, 3), A(3, 3, 2)),
    "broadcast batch of 1": (A(2, 2, 3), A(1, 3, 2)),
    "batched @ 2-D": (A(2, 2, 3), A(3, 2)),
    "batched transposed @ 2-D": (A(2, 2, 3, layout=T), A(3, 2)),
    "2-D @ batched": (A(2, 3), A(2, 3, 2)),
    "1-D @ batched": (A(3), A(2, 3, 2)),
    "batched @ 1-D": (A(2, 2, 3), A(3)),
    "strided 1-D @ 2-D": (A(3, layout="strided"), A(3, 2)),
}

PRODUCTS = {
    "a @ b": lambda lib, a, b: a @ b,
    "matmul(a, b)": lambda lib, a, b: lib.matmul(a, b),
}

MATMUL_CASES = [
    pytest.param(fn, args, id=f"{op}-{name}")
    for op, fn in PRODUCTS.items()
    for name, args in MATMUL_SHAPES.items()
]

# the rank-specific functions
NAMED = {
    "mm": (
        lambda lib, a, b: lib.mm(a, b),
        [(A(2, 3), A(3, 4)), (A(3, 2, layout=T), A(2, 2, layout=T))],
    ),
    "x.mm": (lambda lib, a, b: a.mm(b), [(A(1, 3), A(3, 1))]),
    "bmm": (lambda lib, a, b: lib.bmm(a, b), [(A(2, 2, 3), A(2, 3, 2)), (A(3, 1, 2), A(3, 2, 2))]),
    "mv": (
        lambda lib, a, b: lib.mv(a, b),
        [(A(2, 3), A(3)), (A(3, 2, layout=T), A(2, layout="strided"))],
    ),
    "dot": (lambda lib, a, b: lib.dot(a, b), [(A(4), A(4)), (A(3, layout="strided"), A(3))]),
    "outer": (lambda lib, a, b: lib.outer(a, b), [(A(3), A(4)), (A(1), A(2))]),
    "x.outer": (lambda lib, a, b: a.outer(b), [(A(2, layout="strided"), A(3))]),
    "addbmm(beta=0.5, alpha=2)": (
        lambda lib, x, a, b: lib.addbmm(x, a, b, beta=0.5, alpha=2),
        [(A(2, 4), A(3, 2, 5), A(3, 5, 4)), (A(4), A(2, 2, 3, layout=T), A(2, 3, 4, layout=T))],
    ),
    "x.addbmm": (lambda lib, x, a, b: x.addbmm(a, b), [(A(2, 1), A(1, 2, 3), A(1, 3, 2))]),
    "x.addbmm_(alpha=-1)": (
        lambda lib, x, a, b: (x * 1).addbmm_(a, b, alpha=-1),
        [(A(2, 2), A(2, 2, 3), A(2, 3, 2))],
    ),
}

NAMED_CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, arg_list) in NAMED.items()
    for args in arg_list
]

# only one operand requires grad: the other gradient must be skipped, not crash
ONE_SIDED_CASES = [
    pytest.param(args, id=f"{name}-{which}")
    for name, (a, b) in MATMUL_SHAPES.items()
    for which, args in {
        "a only": (a, A(*b.shape, layout=b.layout, requires_grad=False)),
        "b only": (A(*a.shape, layout=a.layout, requires_grad=False), b),
    }.items()
]


def matmul_fn(lib, a, b):
    return a @ b


# --------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("fn,args", MATMUL_CASES + NAMED_CASES)
def test_product_gradcheck_and_gradgradcheck(fn, args):
    """First and second derivatives of each product w.r.t. both operands agree with finite
    differences, for every rank combination and broadcast batch."""
    run_gradchecks(fn, args)


@pytest.mark.parametrize("args", ONE_SIDED_CASES)
def test_matmul_gradcheck_with_one_operand_constant(args):
    """With only one operand requiring grad, its gradient is still right (both orders)."""
    run_gradchecks(matmul_fn, args)


# --------------------------------------------------------------------------- PyTorch oracle


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", MATMUL_CASES + NAMED_CASES)
def test_product_matches_torch(torch, fn, args, dtype):
    """Value, result shape and dtype, node name (MmBackward0, MvBackward0, DotBackward0,
    SqueezeBackward4, UnsafeViewBackward0 ...) and both gradients equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


@pytest.mark.parametrize("args", ONE_SIDED_CASES)
def test_matmul_with_one_operand_constant_matches_torch(torch, args):
    """The node name and the single gradient equal torch's when one operand is constant."""
    compare_with_torch(torch, matmul_fn, args)


def test_integer_matmul_matches_torch(torch):
    """Integer matrices multiply exactly, to an int64 result that does not require grad."""
    got = tg.arange(6).reshape(2, 3) @ tg.arange(3)
    want = torch.arange(6).reshape(2, 3) @ torch.arange(3)
    assert got.dtype is tg.int64 and got.tolist() == want.tolist()
    got = tg.mm(tg.arange(6).reshape(2, 3), tg.arange(6).reshape(3, 2))
    assert (
        got.tolist()
        == torch.mm(torch.arange(6).reshape(2, 3), torch.arange(6).reshape(3, 2)).tolist()
    )


def test_matmul_gradient_sums_over_broadcast_batch_dims():
    """A (3, 2) matrix used against a batch of 4 gets the sum of the 4 per-batch gradients."""
    w = tg.randn(3, 2, dtype=tg.float64, requires_grad=True)
    x = tg.randn(4, 5, 3, dtype=tg.float64)
    (x @ w).sum().backward()
    expected = sum((x[i].t() @ tg.ones(5, 2, dtype=tg.float64)).cpu().numpy() for i in range(4))
    np.testing.assert_allclose(w.grad.cpu().numpy(), expected, rtol=1e-12)


# --------------------------------------------------------------------------- errors

ERRORS = {
    "mm inner mismatch": (
        lambda lib: lib.mm(lib.ones(2, 3), lib.ones(4, 5)),
        "mat1 and mat2 shapes cannot be multiplied",
    ),
    "@ 2-D inner mismatch": (
        lambda lib: lib.ones(2, 3) @ lib.ones(4, 5),
        "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)",
    ),
    "@ 1-D @ 2-D mismatch": (
        lambda lib: lib.ones(3) @ lib.ones(4, 5),
        "mat1 and mat2 shapes cannot be multiplied (1x3 and 4x5)",
    ),
    "@ batched @ 2-D mismatch": (
        lambda lib: lib.ones(2, 2, 3) @ lib.ones(4, 5),
        "mat1 and mat2 shapes cannot be multiplied (4x3 and 4x5)",
    ),
    "@ 1-D @ 1-D mismatch": (lambda lib: lib.ones(3) @ lib.ones(4), "inconsistent tensor size"),
    "@ 2-D @ 1-D mismatch": (
        lambda lib: lib.ones(2, 3) @ lib.ones(4),
        "size mismatch, got input (2), mat (2x3), vec (4)",
    ),
    "@ batched @ 1-D mismatch": (lambda lib: lib.ones(2, 2, 3) @ lib.ones(4), "size mismatch"),
    "@ batched inner mismatch": (
        lambda lib: lib.ones(2, 2, 3) @ lib.ones(2, 4, 5),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]",
    ),
    "@ 2-D @ batched mismatch": (
        lambda lib: lib.ones(2, 3) @ lib.ones(2, 4, 5),
        "Expected size for first two dimensions",
    ),
    # torch folds the batch of other.mT into rows (mv, mm) when the first operand requires
    # grad, or is a vector and other.mT's batch lies flat in memory: their errors then
    "@ 1-D (grad) @ batched mismatch": (
        lambda lib: lib.ones(2, requires_grad=True) @ lib.ones(3, 1, 2),
        "size mismatch, got input (6), mat (6x1), vec (2)",
    ),
    "@ 1-D @ batched mismatch, flat": (
        lambda lib: lib.ones(2) @ lib.ones(3, 1, 2),
        "size mismatch, got input (6), mat (6x1), vec (2)",
    ),
    "@ 1-D @ batched mismatch, not flat": (
        lambda lib: lib.ones(2) @ lib.ones(3, 2, 1).transpose(0, 2).transpose(1, 2),
        "Expected size for first two dimensions of batch2 tensor to be: [1, 2] but got: [1, 3].",
    ),
    "@ 2-D (grad) @ batched mismatch": (
        lambda lib: lib.ones(4, 4, requires_grad=True) @ lib.ones(1, 2, 1),
        "mat1 and mat2 shapes cannot be multiplied (1x2 and 4x4)",
    ),
    "@ 2-D @ batched mismatch, no grad": (
        lambda lib: lib.ones(4, 4) @ lib.ones(1, 2, 1),
        "Expected size for first two dimensions of batch2 tensor to be: [1, 4] but got: [1, 2].",
    ),
    "@ batch dims don't broadcast": (
        lambda lib: lib.ones(2, 2, 3) @ lib.ones(3, 3, 4),
        "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0",
    ),
    "@ with a 0-d operand": (
        lambda lib: lib.ones(()) @ lib.ones(3),
        "both arguments to matmul need to be at least 1D",
    ),
    "mm of a vector": (lambda lib: lib.mm(lib.ones(3), lib.ones(3, 4)), "self must be a matrix"),
    "mm with a 3-D mat2": (
        lambda lib: lib.mm(lib.ones(3, 3), lib.ones(2, 3, 4)),
        "mat2 must be a matrix",
    ),
    "bmm of matrices": (
        lambda lib: lib.bmm(lib.ones(2, 3), lib.ones(3, 4)),
        "batch1 must be a 3D tensor",
    ),
    "bmm with 2-D batch2": (
        lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(3, 4)),
        "batch2 must be a 3D tensor",
    ),
    "bmm batch mismatch": (
        lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(3, 3, 4)),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3]",
    ),
    "bmm inner mismatch": (
        lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(2, 4, 4)),
        "Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [2, 4]",
    ),
    "mv size mismatch": (
        lambda lib: lib.mv(lib.ones(2, 3), lib.ones(4)),
        "size mismatch, got input (2), mat (2x3), vec (4)",
    ),
    "mv with a matrix": (
        lambda lib: lib.mv(lib.ones(2, 3), lib.ones(3, 1)),
        "vector + matrix @ vector expected, got 1, 2, 2",
    ),
    "dot size mismatch": (
        lambda lib: lib.dot(lib.ones(3), lib.ones(4)),
        "inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements",
    ),
    "dot of matrices": (
        lambda lib: lib.dot(lib.ones(3, 1), lib.ones(3, 1)),
        "1D tensors expected, but got 2D and 2D tensors",
    ),
    "outer of a matrix": (
        lambda lib: lib.outer(lib.ones(3), lib.ones(3, 1)),
        "outer: Expected 1-D argument vec2, but got 2-D",
    ),
    "mm dtype mismatch": (
        lambda lib: lib.mm(lib.ones(2, 3), lib.ones(3, 2, dtype=lib.float64)),
        "expected m1 and m2 to have the same dtype, but got: float != double",
    ),
    "@ int and float": (
        lambda lib: lib.ones(2, 3, dtype=lib.int64) @ lib.ones(3, 2),
        "expected m1 and m2 to have the same dtype, but got: long int != float",
    ),
    "dot dtype mismatch": (
        lambda lib: lib.dot(lib.ones(3), lib.ones(3, dtype=lib.float64)),
        "dot : expected both vectors to have same dtype, but found Float and Double",
    ),
    "bmm dtype mismatch": (
        lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(2, 3, 2, dtype=lib.float64)),
        "expected scalar type Float but found Double",
    ),
    "addbmm of an input that does not broadcast": (
        lambda lib: lib.addbmm(lib.ones(2, 5), lib.ones(4, 3, 2), lib.ones(4, 2, 5)),
        "The expanded size of the tensor (3) must match the existing size (2) at non-singleton "
        "dimension 0.  Target sizes: [3, 5].  Tensor sizes: [2, 5]",
    ),
    "addbmm of different batches": (
        lambda lib: lib.addbmm(lib.ones(3, 5), lib.ones(4, 3, 2), lib.ones(3, 2, 5)),
        "batch1 and batch2 must have same number of batches, got 4 and 3",
    ),
    "addbmm inner mismatch": (
        lambda lib: lib.addbmm(lib.ones(3, 5), lib.ones(4, 3, 2), lib.ones(4, 1, 5)),
        "Incompatible matrix sizes for bmm (3x2 and 1x5)",
    ),
    "addbmm of a matrix": (
        lambda lib: lib.addbmm(lib.ones(3, 5), lib.ones(2, 3), lib.ones(4, 2, 5)),
        "batch1 must be a 3D tensor",
    ),
    "addbmm input dtype mismatch": (
        lambda lib: lib.addbmm(
            lib.ones(3, 5), lib.ones(4, 3, 2).double(), lib.ones(4, 2, 5).double()
        ),
        "self and mat2 must have the same dtype, but got Float and Double",
    ),
    "addbmm batch1 dtype mismatch": (
        lambda lib: lib.addbmm(lib.ones(3, 5), lib.ones(4, 3, 2).double(), lib.ones(4, 2, 5)),
        "mat1 and mat2 must have the same dtype, but got Double and Float",
    ),
}


@pytest.mark.parametrize("fn,phrase", ERRORS.values(), ids=ERRORS.keys())
def test_bad_product_raises_torchs_error(torch, fn, phrase):
    """Shape, rank and dtype mistakes raise RuntimeError with torch's key phrase, at the call."""
    with pytest.raises(RuntimeError) as torch_err:
        fn(torch)
    assert phrase in str(torch_err.value), "the table's phrase must be torch's own"
    with pytest.raises(RuntimeError) as err:
        fn(tg)
    assert phrase in str(err.value)


# --------------------------------------------------------------------------- QR


def F(*shape, layout="contiguous"):
    """A well-conditioned input: full rank, far from a QR whose R has a tiny diagonal."""
    return A(*shape, domain="full_rank", layout=layout)


QR_SHAPES = {
    "square": F(3, 3),
    "tall": F(4, 2),
    "wide": F(2, 4),
    "transposed tall": F(4, 3, layout=T),
    "batched tall": F(2, 3, 2),
    "batched wide": F(2, 2, 3),
    "batched square": F(2, 1, 2, 2),
}
WIDE_OR_SQUARE = ("square", "wide", "batched wide", "batched square")
# what is differentiated: both outputs, or only one (the other's gradient never comes)
QR_OUTPUTS = {
    "(Q, R)": lambda lib, x, mode: tuple(lib.linalg.qr(x, mode)),
    "Q": lambda lib, x, mode: lib.linalg.qr(x, mode=mode).Q,
    "R": lambda lib, x, mode: lib.linalg.qr(x, mode=mode).R,
}
QR_CASES = [
    pytest.param(
        lambda lib, x, out=out, mode=mode: QR_OUTPUTS[out](lib, x, mode),
        [arg],
        id=f"{mode}-{out}-{name}",
    )
    for mode in ("reduced", "complete")
    for out in QR_OUTPUTS
    for name, arg in QR_SHAPES.items()
    if mode == "reduced" or name in WIDE_OR_SQUARE  # (complete and tall: not differentiable)
]


@pytest.mark.parametrize("fn,args", QR_CASES)
def test_qr_gradcheck_and_gradgradcheck(fn, args):
    """Backward (torch's linalg_qr_backward), double backward through its triangular solve,
    and forward AD (linalg_qr_jvp) agree with finite differences."""
    run_gradchecks(fn, args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", QR_CASES)
def test_qr_matches_torch(torch, fn, args, dtype):
    """Q and R (LAPACK's signs: R's diagonal may be negative, as torch's), their shapes and
    dtype, the node (LinalgQrBackward0: _saved_Q, _saved_R, _saved_mode) and the gradient
    for a random upstream gradient equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


@pytest.mark.parametrize("mode", ["r", "complete"])
@pytest.mark.parametrize("arg", QR_SHAPES.values(), ids=QR_SHAPES.keys())
def test_qr_values_where_torch_does_not_differentiate(torch, mode, arg):
    """mode='r' (an empty Q) and complete tall matrices: the values, as torch's (the refused
    gradients: QR_ERRORS)."""
    constant = dataclasses.replace(arg, requires_grad=False)
    compare_with_torch(torch, lambda lib, x: tuple(lib.linalg.qr(x, mode)), [constant])


def test_qr_returns_torchs_namedtuple_and_layout(torch):
    """``linalg_qr(Q=..., R=...)``; Q and R stored column by column, as LAPACK (and torch)."""
    data = [[3.0, 1.0], [4.0, 2.0], [0.0, 1.0]]
    got, want = tg.linalg.qr(tg.tensor(data, device="cpu")), torch.linalg.qr(torch.tensor(data))
    assert type(got).__name__ == type(want).__name__ == "linalg_qr" and got._fields == ("Q", "R")
    assert repr(got).replace("teachgrad", "torch") == repr(want)
    assert [t.stride() for t in got] == [t.stride() for t in want]
    batched = tg.linalg.qr(tg.ones(2, 3, 2)), torch.linalg.qr(torch.ones(2, 3, 2))
    assert [t.stride() for t in batched[0]] == [t.stride() for t in batched[1]]


def test_deprecated_qr_is_linalg_qr(torch):
    """``qr(A, some)`` and ``A.qr()``: torch's deprecation warning, its namedtuple ``qr``, and
    mode ``'reduced'`` (some=True) or ``'complete'`` (some=False) on the same node."""
    x = tg.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 7.0]], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reduced, complete = tg.qr(x), x.qr(some=False)
    assert str(caught[0].message).startswith(
        "teachgrad.qr is deprecated in favor of teachgrad.linalg.qr"
    )
    assert caught[0].category is UserWarning and len(caught) == 2
    assert (
        type(reduced).__name__ == "qr" and reduced.Q.shape == (3, 2) and complete.Q.shape == (3, 3)
    )
    assert (reduced.R.grad_fn._saved_mode, complete.R.grad_fn._saved_mode) == (
        "reduced",
        "complete",
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = torch.qr(torch.tensor(x.tolist()), some=False)
    for a, b in zip(complete, want, strict=True):
        assert_same(a, b, "float32")


def test_qr_out_takes_a_tuple(torch):
    """``out=(Q, R)``: both written, resized, returned in the namedtuple."""
    outs = []
    for lib in (tg, torch):
        Q, R = lib.empty(0, dtype=lib.float64), lib.empty(0, dtype=lib.float64)
        result = lib.linalg.qr(lib.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=lib.float64), out=(Q, R))
        assert result.Q is Q and result.R is R
        outs.append((Q.tolist(), R.tolist()))
    np.testing.assert_allclose(np.array(outs[0]), np.array(outs[1]), rtol=1e-12)


def _dual_qr(lib, mode):
    """Forward AD through linalg.qr."""
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        return lib.linalg.qr(fwAD.make_dual(lib.eye(3, 2), lib.ones(3, 2)), mode)


QR_ERRORS = {
    "a vector": lambda lib: lib.linalg.qr(lib.ones(3)),
    "an unknown mode": lambda lib: lib.linalg.qr(lib.eye(2), mode="raw"),
    "a mode that is no string": lambda lib: lib.linalg.qr(lib.eye(2), mode=1),
    "integers": lambda lib: lib.linalg.qr(lib.ones(2, 2, dtype=lib.int64)),
    "a list": lambda lib: lib.linalg.qr([[1.0]]),
    "out= a tensor": lambda lib: lib.linalg.qr(lib.eye(2), out=lib.empty(0)),
    "out= of another dtype": lambda lib: lib.linalg.qr(
        lib.eye(2), out=(lib.empty(0), lib.empty(0, dtype=lib.float64))
    ),
    "backward of mode='r'": lambda lib: (
        lib.linalg.qr(lib.eye(3, requires_grad=True), mode="r").R.sum().backward()
    ),
    "backward of complete, tall": lambda lib: (
        lib.linalg.qr(lib.eye(3, 2, requires_grad=True), mode="complete").Q.sum().backward()
    ),
    "forward AD of mode='r'": lambda lib: _dual_qr(lib, "r"),
    "forward AD of complete, tall": lambda lib: _dual_qr(lib, "complete"),
    "qr(some=) not a bool": lambda lib: lib.qr(lib.eye(2), some="yes"),
}


@pytest.mark.parametrize("call", QR_ERRORS.values(), ids=QR_ERRORS.keys())
def test_qr_refused_in_torchs_words(torch, call):
    """torch's exception class and first line (teachgrad adds a line that teaches)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (qr's deprecation)
        assert_same_error(torch, call)


# --------------------------------------------------------------------------- solve_triangular

SOLVE_CALLS = {
    "upper": lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=True),
    "lower": lambda lib, a, b: lib.linalg.solve_triangular(a, b, upper=False),
    "upper, right": lambda lib, a, b: lib.linalg.solve_triangular(a, b.mT, upper=True, left=False),
    "lower, unit diagonal": lambda lib, a, b: lib.linalg.solve_triangular(
        a, b, upper=False, unitriangular=True
    ),
    "upper, right, unit diagonal": lambda lib, a, b: lib.linalg.solve_triangular(
        a, b.mT, upper=True, left=False, unitriangular=True
    ),
}
SOLVE_SHAPES = {
    "3x3, 3x2": (F(3, 3), A(3, 2)),
    "transposed A": (F(3, 3, layout=T), A(3, 1)),
    "batched A, one B": (F(2, 3, 3), A(3, 2)),
    "broadcast batches": (F(1, 2, 2), A(3, 1, 2, 2)),
}
SOLVE_CASES = [
    pytest.param(fn, args, id=f"{call}-{shapes}")
    for call, fn in SOLVE_CALLS.items()
    for shapes, args in SOLVE_SHAPES.items()
]


@pytest.mark.parametrize("fn,args", SOLVE_CASES)
def test_solve_triangular_gradcheck_and_gradgradcheck(fn, args):
    """Only A's triangle gets a gradient (the other is never read); B's comes by a solve with
    Aᵀ: both agree with finite differences, twice, and in forward mode."""
    run_gradchecks(fn, args)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", SOLVE_CASES)
def test_solve_triangular_matches_torch(torch, fn, args, dtype):
    """X, the node (LinalgSolveTriangularBackward0: _saved_self, _saved_result, _saved_upper,
    _saved_left, _saved_unitriangular) and both gradients equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


def test_solve_triangular_reads_one_triangle_and_divides_by_zero_as_torch(torch):
    """The other triangle's values do not matter; a zero on the diagonal gives inf and nan,
    without an error; X comes out in A's dtype, column by column."""
    data = [[0.0, 2.0, 1.0], [5.0, 1.0, 1.0], [7.0, 8.0, 4.0]]
    for upper, unit in ((True, False), (False, True), (True, True)):
        got, want = (
            lib.linalg.solve_triangular(
                lib.tensor(data), lib.ones(3, 2, dtype=lib.float64), upper=upper, unitriangular=unit
            )
            for lib in (tg, torch)
        )
        np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
        assert (str(got.dtype), got.stride()) == (
            str(want.dtype).replace("torch", "teachgrad"),
            want.stride(),
        )


def test_solve_triangular_out(torch):
    for lib in (tg, torch):
        out = lib.zeros(1)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert (
                lib.linalg.solve_triangular(lib.eye(2) * 2, lib.ones(2, 2), upper=True, out=out)
                is out
            )
        assert out.tolist() == [[0.5, 0.5], [0.5, 0.5]] and "was resized" in str(caught[0].message)


SOLVE_ERRORS = {
    "no upper": lambda lib: lib.linalg.solve_triangular(lib.eye(2), lib.ones(2, 1)),
    "upper not a bool": lambda lib: lib.linalg.solve_triangular(
        lib.eye(2), lib.ones(2, 1), upper=1
    ),
    "a vector A": lambda lib: lib.linalg.solve_triangular(lib.ones(2), lib.ones(2, 1), upper=True),
    "a non-square A": lambda lib: lib.linalg.solve_triangular(
        lib.ones(3, 2), lib.ones(3), upper=True
    ),
    "a vector B": lambda lib: lib.linalg.solve_triangular(lib.eye(2), lib.ones(2), upper=True),
    "sizes, left": lambda lib: lib.linalg.solve_triangular(lib.eye(3), lib.ones(4, 2), upper=True),
    "sizes, right": lambda lib: lib.linalg.solve_triangular(
        lib.eye(3), lib.ones(3, 2), upper=True, left=False
    ),
    "batches": lambda lib: lib.linalg.solve_triangular(
        lib.ones(2, 3, 3), lib.ones(4, 3, 2), upper=True
    ),
    "integers": lambda lib: lib.linalg.solve_triangular(
        lib.ones(2, 2, dtype=lib.int64), lib.ones(2, 1), upper=True
    ),
    "out of another dtype": lambda lib: lib.linalg.solve_triangular(
        lib.eye(2), lib.ones(2, 1), upper=True, out=lib.empty(0, dtype=lib.float64)
    ),
}


@pytest.mark.parametrize("call", SOLVE_ERRORS.values(), ids=SOLVE_ERRORS.keys())
def test_solve_triangular_refused_in_torchs_words(torch, call):
    assert_same_error(torch, call)

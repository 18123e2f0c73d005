"""Reductions: gradients are right (gradcheck, gradgradcheck) and values, dtypes, node
names, (values, indices) results and gradients match PyTorch; bad dims and dtypes
raise torch's errors.

Each row reduces inputs of several shapes (0-d, 1-d, 2-d, 3-d, non-contiguous) over
no dim, one dim, a tuple of dims, with and without ``keepdim``.
"""

import math

import numpy as np
import pytest

import teachgrad as tg

from ._cases import (
    A,
    assert_raises_like_torch,
    case_id,
    compare_with_torch,
    run_gradchecks,
    to_numpy,
)


def shapes(domain="real", scalar=True):
    """The inputs of a full reduction: every rank, plus transposed and strided leaves."""
    out = [
        A(5, domain=domain),
        A(3, 4, domain=domain),
        A(2, 3, 4, domain=domain),
        A(3, 4, domain=domain, layout="transposed"),
        A(6, domain=domain, layout="strided"),
    ]
    return ([A(domain=domain)] if scalar else []) + out


def rank2(domain="real"):
    return [A(3, 4, domain=domain), A(3, 4, domain=domain, layout="transposed")]


def rank3(domain="real"):
    return [A(2, 3, 4, domain=domain)]


# name -> (fn(lib, x), inputs)
REDUCTIONS = {
    "sum()": (lambda lib, x: x.sum(), shapes()),
    "sum(dim=1)": (lambda lib, x: x.sum(dim=1), rank2() + rank3()),
    "sum(dim=(0,2))": (lambda lib, x: lib.sum(x, dim=(0, 2)), rank3()),
    "sum(-1, keepdim)": (lambda lib, x: x.sum(-1, keepdim=True), rank2() + rank3()),
    "sum(dim=0) of 0-d": (lambda lib, x: x.sum(dim=0), [A()]),
    "mean()": (lambda lib, x: x.mean(), shapes()),
    "mean(dim=0)": (lambda lib, x: x.mean(dim=0), rank2() + rank3()),
    "mean((0,1), keepdim)": (lambda lib, x: lib.mean(x, (0, 1), keepdim=True), rank2() + rank3()),
    "prod()": (lambda lib, x: x.prod(), shapes("nonzero")),
    "prod() one zero": (lambda lib, x: x.prod(), shapes("one_zero")),
    "prod() two zeros": (lambda lib, x: x.prod(), shapes("two_zeros", scalar=False)),
    "prod(dim=1) zeros": (lambda lib, x: x.prod(dim=1), rank2("two_zeros") + rank3("two_zeros")),
    "prod(-1, keepdim) zeros": (lambda lib, x: lib.prod(x, -1, keepdim=True), rank2("two_zeros")),
    "prod(dim=0)": (lambda lib, x: x.prod(0), rank2("nonzero")),
    "var()": (lambda lib, x: x.var(), shapes(scalar=False)),
    "var(dim=1)": (lambda lib, x: x.var(dim=1), rank2() + rank3()),
    "var(correction=0)": (lambda lib, x: x.var(correction=0), shapes()),
    "var(0, unbiased=False, keepdim)": (
        lambda lib, x: x.var(0, unbiased=False, keepdim=True),
        rank2() + rank3(),
    ),
    "var((0,2), correction=2)": (lambda lib, x: lib.var(x, (0, 2), correction=2), rank3()),
    "std()": (lambda lib, x: x.std(), shapes(scalar=False)),
    "std(dim=1)": (lambda lib, x: x.std(dim=1), rank2() + rank3()),
    "std(unbiased=False)": (lambda lib, x: x.std(unbiased=False), shapes(scalar=False)),
    "std(-1, correction=0, keepdim)": (
        lambda lib, x: lib.std(x, -1, correction=0, keepdim=True),
        rank2() + rank3(),
    ),
    "trace()": (lambda lib, x: x.trace(), rank2()),
    "trace() of a wide matrix": (lambda lib, x: lib.trace(x.t()), rank2()),
    # two outputs of one node (VarMeanBackward0 / StdMeanBackward0)
    "var_mean()": (lambda lib, x: lib.var_mean(x), shapes(scalar=False)),
    "var_mean(dim=1)": (lambda lib, x: lib.var_mean(x, 1), rank2() + rank3()),
    "var_mean((0,2), correction=2, keepdim)": (
        lambda lib, x: lib.var_mean(x, (0, 2), correction=2, keepdim=True),
        rank3(),
    ),
    "std_mean()": (lambda lib, x: lib.std_mean(x), shapes(scalar=False)),
    "std_mean(-1, unbiased=False)": (lambda lib, x: lib.std_mean(x, -1, False), rank2() + rank3()),
    # (values, indices): the values' gradient goes back to where each came from
    "sort()": (lambda lib, x: x.sort(), shapes("distinct")),
    "sort(0, descending)": (
        lambda lib, x: lib.sort(x, 0, True),
        rank2("distinct") + rank3("distinct"),
    ),
    "sort(stable=True)": (lambda lib, x: x.sort(stable=True, dim=1), rank3("distinct")),
    "amax()": (lambda lib, x: x.amax(), shapes("distinct")),
    "amax(dim=1)": (lambda lib, x: x.amax(dim=1), rank2("distinct") + rank3("distinct")),
    "amax((0,2), keepdim)": (lambda lib, x: lib.amax(x, (0, 2), keepdim=True), rank3("distinct")),
    "amin()": (lambda lib, x: x.amin(), shapes("distinct")),
    "amin(dim=-1)": (lambda lib, x: x.amin(dim=-1), rank2("distinct") + rank3("distinct")),
    "max()": (lambda lib, x: x.max(), shapes("distinct")),
    "min()": (lambda lib, x: lib.min(x), shapes("distinct")),
    "max(dim=1)": (lambda lib, x: x.max(dim=1), rank2("distinct") + rank3("distinct")),
    "max(0, keepdim)": (
        lambda lib, x: lib.max(x, 0, keepdim=True),
        rank2("distinct") + rank3("distinct"),
    ),
    "max(dim=0) of 0-d": (lambda lib, x: x.max(dim=0), [A(domain="distinct")]),
    "min(dim=-1)": (lambda lib, x: x.min(dim=-1), rank2("distinct") + rank3("distinct")),
    "min(1, keepdim)": (lambda lib, x: x.min(1, True), rank2("distinct")),
    "max(dim=1).values": (lambda lib, x: x.max(dim=1).values * 2, rank2("distinct")),
    # the (lower) median: MedianBackward0 / MedianBackward1, and nanmedian's nodes
    "median()": (lambda lib, x: x.median(), shapes("distinct")),
    "median(dim=1)": (lambda lib, x: x.median(dim=1), rank2("distinct") + rank3("distinct")),
    "median(-1, keepdim)": (lambda lib, x: lib.median(x, -1, keepdim=True), rank2("distinct")),
    "median(dim=0) of 0-d": (lambda lib, x: x.median(0), [A(domain="distinct")]),
    "nanmedian()": (lambda lib, x: lib.nanmedian(x), shapes("distinct")),
    "nanmedian(dim=0)": (lambda lib, x: x.nanmedian(0), rank2("distinct") + rank3("distinct")),
    "logsumexp(dim=1)": (lambda lib, x: x.logsumexp(dim=1), rank2() + rank3()),
    "logsumexp((0,1), keepdim)": (
        lambda lib, x: lib.logsumexp(x, (0, 1), keepdim=True),
        rank2() + rank3(),
    ),
    "logsumexp(0) of 0-d": (lambda lib, x: x.logsumexp(0), [A()]),
    "norm()": (lambda lib, x: x.norm(), shapes("nonzero")),
    "norm(p=2, dim=1)": (lambda lib, x: x.norm(p=2, dim=1), rank2() + rank3()),
    "norm(p=1)": (lambda lib, x: x.norm(p=1), shapes("nonzero")),
    "norm(p=1, dim=0, keepdim)": (lambda lib, x: lib.norm(x, 1, 0, True), rank2("nonzero")),
    "norm(p=inf)": (lambda lib, x: x.norm(p=math.inf), shapes("distinct_abs")),
    "norm(p=inf, dim=1)": (lambda lib, x: x.norm(p=float("inf"), dim=1), rank2("distinct_abs")),
    "norm(p=-inf)": (lambda lib, x: x.norm(p=-math.inf), shapes("distinct_abs", scalar=False)),
    "norm(p='fro')": (lambda lib, x: x.norm(p="fro"), shapes("nonzero")),
    "norm(p='fro', dim=(0,1))": (
        lambda lib, x: lib.norm(x, p="fro", dim=(0, 1)),
        rank2() + rank3(),
    ),
    "norm(p=3, dim=-1)": (lambda lib, x: x.norm(p=3, dim=-1), rank2("nonzero") + rank3("nonzero")),
    "norm(p=0.5)": (lambda lib, x: x.norm(p=0.5), shapes("nonzero", scalar=False)),
}

DIFFERENTIABLE = [
    pytest.param(fn, (x,), id=f"{name}-{case_id((x,))}")
    for name, (fn, inputs) in REDUCTIONS.items()
    for x in inputs
]

# not differentiable: integer results
ARG_REDUCTIONS = {
    "argmax()": (lambda lib, x: x.argmax(), shapes("distinct")),
    "argmax(dim=1)": (lambda lib, x: x.argmax(dim=1), rank2("distinct") + rank3("distinct")),
    "argmax(0, keepdim)": (lambda lib, x: lib.argmax(x, 0, keepdim=True), rank2("distinct")),
    "argmin()": (lambda lib, x: lib.argmin(x), shapes("distinct")),
    "argmin(dim=-1, keepdim)": (
        lambda lib, x: x.argmin(dim=-1, keepdim=True),
        rank2("distinct") + rank3("distinct"),
    ),
    "argmin(keepdim) no dim": (lambda lib, x: x.argmin(keepdim=True), rank2("distinct")),
    "argsort()": (lambda lib, x: x.argsort(), shapes("distinct")),
    "argsort(0, descending)": (lambda lib, x: lib.argsort(x, 0, True), rank2("distinct")),
    "nonzero()": (lambda lib, x: (x > 0).nonzero(), shapes()),
    "nonzero(as_tuple)": (lambda lib, x: lib.nonzero(x > 0, as_tuple=True), rank2() + rank3()),
    "count_nonzero()": (lambda lib, x: (x > 0).count_nonzero(), shapes()),
    "signbit()": (lambda lib, x: (x - x.mean()).signbit(), shapes()),
    "count_nonzero((0, -1))": (lambda lib, x: lib.count_nonzero(x > 0, (0, -1)), rank3()),
}

ARG_CASES = [
    pytest.param(fn, (x,), id=f"{name}-{case_id((x,))}")
    for name, (fn, inputs) in ARG_REDUCTIONS.items()
    for x in inputs
]


# --------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("fn,args", DIFFERENTIABLE)
def test_reduction_gradcheck_and_gradgradcheck(fn, args):
    """First and second derivatives of each reduction agree with finite differences (float64),
    including prod over inputs with one and two zeros."""
    run_gradchecks(fn, args)


# --------------------------------------------------------------------------- PyTorch oracle


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", DIFFERENTIABLE)
def test_reduction_matches_torch(torch, fn, args, dtype):
    """Value (and indices), dtype, node name and input gradient equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


@pytest.mark.parametrize("fn,args", ARG_CASES)
def test_integer_results_match_torch(torch, fn, args):
    """argmax, argmin, argsort, nonzero and count_nonzero give torch's int64 results (one,
    or one per dim), signbit its bools; none is part of the graph."""
    ys, _ = compare_with_torch(torch, fn, args)
    assert all(y.dtype in (tg.int64, tg.bool) and y.grad_fn is None for y in ys)
    assert not any(y.requires_grad for y in ys)


def test_max_with_dim_returns_a_values_indices_namedtuple(torch):
    """max/min(dim) return a namedtuple (values, indices), unpackable and indexable, like torch."""
    for lib in (tg, torch):
        x = lib.tensor([[1.0, 5.0, 2.0], [7.0, 0.0, 3.0]], requires_grad=True)
        r = x.max(dim=1)
        values, indices = r
        assert type(r).__name__ == "max" and len(r) == 2
        assert r[0] is r.values and r[1] is r.indices and values is r.values
        assert values.tolist() == [5.0, 7.0] and indices.tolist() == [1, 0]
        assert indices.dtype == lib.int64 and not indices.requires_grad
        assert type(x.min(0)).__name__ == "min"
        assert lib.max(x, 1, keepdim=True).values.shape == (2, 1)
    assert tg.tensor([1.0, 2.0]).max(0)._fields == ("values", "indices")
    assert repr(tg.tensor([1.0, 2.0]).max(0)).startswith("teachgrad.return_types.max(")


def test_max_with_a_tensor_argument_is_maximum(torch):
    """max(x, other_tensor) is the elementwise maximum, as in torch."""
    for lib in (tg, torch):
        x, y = lib.tensor([1.0, 5.0]), lib.tensor([3.0, 2.0])
        assert lib.max(x, y).tolist() == [3.0, 5.0] and lib.min(x, y).tolist() == [1.0, 2.0]


@pytest.mark.parametrize("name", ["amax", "amin", "max", "min", "norm_inf"])
def test_ties_share_the_gradient_like_torch(torch, name):
    """amax/amin/max()/min()/norm(inf) split the gradient evenly among tied extremes."""
    grads = []
    for lib in (tg, torch):
        x = lib.tensor([[3.0, 1.0, 3.0], [-2.0, 2.0, 2.0]], dtype=lib.float64, requires_grad=True)
        y = x.norm(p=math.inf) if name == "norm_inf" else getattr(x, name)()
        y.backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


def test_max_with_dim_sends_the_gradient_to_the_returned_index(torch):
    """max(dim) with ties: the whole gradient goes to the index it returned (torch's choice)."""
    grads = []
    for lib in (tg, torch):
        x = lib.tensor([[3.0, 1.0, 3.0], [2.0, 2.0, 0.0]], dtype=lib.float64, requires_grad=True)
        values, indices = x.max(dim=1)
        values.sum().backward()
        grads.append((indices.tolist(), x.grad.tolist()))
    assert grads[0] == grads[1]


# (fn(lib, x), values of x): points where a formula would divide by zero
EDGE_POINTS = {
    "norm() of zeros": (lambda lib, x: x.norm(), [0.0, 0.0, 0.0]),
    "norm(p=3) of zeros": (lambda lib, x: x.norm(p=3), [0.0, 0.0, 0.0]),
    "norm(p=0.5) with zero entries": (lambda lib, x: x.norm(p=0.5), [0.0, -2.0, 1.0]),
    "norm(p=1.5) with zero entries": (lambda lib, x: x.norm(p=1.5), [0.0, 3.0, 0.0]),
    "norm(p=1) with zero entries": (lambda lib, x: x.norm(p=1), [0.0, 3.0, -1.0]),
    "norm(dim) with a zero row": (lambda lib, x: x.reshape(3, 1).norm(dim=1), [0.0, 3.0, -1.0]),
    "std of equal values": (lambda lib, x: x.std(), [2.0, 2.0, 2.0]),
    "std(dim) of equal values": (
        lambda lib, x: x.reshape(1, 3).expand(2, 3).std(dim=0),
        [0.5, 0.5, 1.0],
    ),
    "prod of all zeros": (lambda lib, x: x.prod(), [0.0, 0.0, 0.0]),
    "prod(dim) of one zero": (lambda lib, x: x.reshape(3, 1).prod(0), [0.0, 2.0, 3.0]),
    "var of equal values": (lambda lib, x: x.var(), [1.0, 1.0, 1.0]),
}


@pytest.mark.parametrize("fn,x", EDGE_POINTS.values(), ids=EDGE_POINTS.keys())
def test_gradient_at_singular_points_matches_torch(torch, fn, x):
    """Where a formula would divide by zero (norm of zeros, std of equal values, prod with
    zeros) the value and gradient are torch's finite ones, not NaN."""
    got = []
    for lib in (tg, torch):
        t = lib.tensor(x, dtype=lib.float64, requires_grad=True)
        y = fn(lib, t)
        y.sum().backward()
        got.append((y.detach().cpu().numpy(), t.grad.cpu().numpy()))
    for mine, theirs in zip(got[0], got[1]):
        np.testing.assert_allclose(
            mine, theirs, rtol=1e-12, atol=0
        )  # equal, NaN only where torch has NaN
    assert np.isfinite(got[0][1]).all()


def test_logsumexp_is_stable_for_large_inputs(torch):
    """logsumexp of huge values neither overflows nor loses the log(n) term."""
    for lib in (tg, torch):
        x = lib.tensor([1000.0, 1000.0, -1000.0], dtype=lib.float64, requires_grad=True)
        y = x.logsumexp(0)
        y.backward()
        assert abs(y.item() - (1000 + math.log(2))) < 1e-9
        assert np.allclose(x.grad.tolist(), [0.5, 0.5, 0.0])


@pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0")  # (both libraries warn)
@pytest.mark.parametrize("name", ["var", "std"])
@pytest.mark.parametrize("correction", [3, 5, float("nan")], ids=str)
@pytest.mark.parametrize("dim", [None, 0], ids=["all", "0"])
def test_var_and_std_with_no_degrees_of_freedom_are_torchs_inf_or_nan(torch, name, correction, dim):
    """N − correction <= 0 (3 values): the squared deviations' sum over 0, inf, or NaN when
    the sum is 0 too, as torch, on every device (CuPy's own var gives NaN there always)."""
    for values in ([1.0, 2.0, 0.0], [4.0, 4.0, 4.0]):
        ours, theirs = (
            getattr(lib.tensor(values, dtype=lib.float64), name)(dim, correction=correction)
            for lib in (tg, torch)
        )
        np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


# name -> fn(lib) whose result dtype must equal torch's
REDUCTION_DTYPES = {
    "sum of int": lambda lib: lib.tensor([1, 2]).sum(),
    "sum of int32": lambda lib: lib.tensor([1, 2], dtype=lib.int32).sum(dim=0),
    "sum of bool": lambda lib: lib.tensor([True, True]).sum(),
    "sum of float32": lambda lib: lib.ones(3).sum(),
    "sum(dtype=float64)": lambda lib: lib.ones(3).sum(dtype=lib.float64),
    "mean(dtype=float64) of int": lambda lib: lib.tensor([1, 2]).mean(dtype=lib.float64),
    "prod of int": lambda lib: lib.tensor([2, 3]).prod(),
    "prod of bool": lambda lib: lib.tensor([True, False]).prod(),
    "amax of int": lambda lib: lib.tensor([2, 3]).amax(),
    "max of int": lambda lib: lib.tensor([2, 3]).max(),
    "max(dim) of int": lambda lib: lib.tensor([[2, 3]]).max(dim=1).values,
    "logsumexp of int": lambda lib: lib.tensor([1, 2]).logsumexp(0),
    "argmax": lambda lib: lib.ones(3).argmax(),
    "norm of float64": lambda lib: lib.ones(3, dtype=lib.float64).norm(),
    "var of float16": lambda lib: lib.ones(3, dtype=lib.float16).var(),
    # a dtype asked for is the result's, integers and bools too (found by torch's OpInfo samples)
    "prod(dtype=int32)": lambda lib: lib.tensor([[2, 3], [4, 5]]).prod(dtype=lib.int32),
    "prod(dim, dtype=int16)": lambda lib: lib.tensor([[2, 3]]).prod(1, True, dtype=lib.int16),
    "prod(dim, dtype=bool)": lambda lib: lib.tensor([[True, False]]).prod(0, dtype=lib.bool),
    "prod(dtype=bool) of int": lambda lib: lib.tensor([1, 2]).prod(dtype=lib.bool),
    "cumsum(dtype=int32)": lambda lib: lib.tensor([[1, 2], [3, 4]]).cumsum(0, dtype=lib.int32),
    "cumsum(dtype=int16) of bool": lambda lib: lib.tensor([True, True]).cumsum(0, dtype=lib.int16),
    "sum(dim, dtype=bool)": lambda lib: lib.tensor([[1, 0], [0, 0]]).sum(1, dtype=lib.bool),
}


@pytest.mark.parametrize("fn", REDUCTION_DTYPES.values(), ids=REDUCTION_DTYPES.keys())
def test_reduction_result_dtype_matches_torch(torch, fn):
    """Integer sums/products are int64, float reductions keep their dtype, as in torch."""
    got, want = fn(tg), fn(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    np.testing.assert_allclose(
        got.cpu().numpy().astype(float), want.cpu().numpy().astype(float), rtol=1e-3
    )


# --------------------------------------------------------------------------- errors

ERRORS = {
    "mean of an int tensor": (
        lambda lib: lib.tensor([1, 2]).mean(),
        RuntimeError,
        "could not infer output dtype",
    ),
    "mean(dim) of an int tensor": (
        lambda lib: lib.tensor([[1, 2]]).mean(0),
        RuntimeError,
        "could not infer output dtype",
    ),
    "var of an int tensor": (
        lambda lib: lib.tensor([1, 2]).var(),
        RuntimeError,
        "std and var only support floating point",
    ),
    "std of an int tensor": (
        lambda lib: lib.tensor([1, 2]).std(),
        RuntimeError,
        "std and var only support floating point",
    ),
    "norm of an int tensor": (
        lambda lib: lib.tensor([1, 2]).norm(),
        RuntimeError,
        "Expected a floating point or complex tensor as input",
    ),
    "sum dim out of range": (
        lambda lib: lib.ones(2, 3).sum(dim=2),
        IndexError,
        "Dimension out of range",
    ),
    "sum dim out of range on a 0-d tensor": (
        lambda lib: lib.tensor(1.0).sum(dim=5),
        IndexError,
        "Dimension out of range (expected to be in range of [-1, 0], but got 5)",
    ),
    "mean dim out of range": (
        lambda lib: lib.ones(2, 3).mean(dim=-3),
        IndexError,
        "Dimension out of range",
    ),
    "max dim out of range": (
        lambda lib: lib.ones(2, 3).max(dim=5),
        IndexError,
        "Dimension out of range",
    ),
    "argmax dim out of range": (
        lambda lib: lib.ones(2, 3).argmax(dim=2),
        IndexError,
        "Dimension out of range",
    ),
    "logsumexp dim out of range": (
        lambda lib: lib.ones(2).logsumexp(1),
        IndexError,
        "Dimension out of range",
    ),
    "norm dim out of range": (
        lambda lib: lib.ones(2).norm(dim=1),
        IndexError,
        "Dimension out of range",
    ),
    "var dim out of range": (
        lambda lib: lib.ones(2).var(dim=3),
        IndexError,
        "Dimension out of range",
    ),
    "repeated dim": (
        lambda lib: lib.ones(2, 3).sum(dim=(0, 0)),
        RuntimeError,
        "dim 0 appears multiple times in the list of dims",
    ),
    "repeated dim (negative)": (
        lambda lib: lib.ones(2, 3).amax(dim=(1, -1)),
        RuntimeError,
        "appears multiple times in the list of dims",
    ),
    "max() of an empty tensor": (
        lambda lib: lib.ones(0).max(),
        RuntimeError,
        "Expected reduction dim to be specified for input.numel() == 0",
    ),
    "amax() of an empty tensor": (
        lambda lib: lib.ones(0).amax(),
        RuntimeError,
        "Expected reduction dim to be specified for input.numel() == 0",
    ),
    "argmax() of an empty tensor": (
        lambda lib: lib.ones(0).argmax(),
        IndexError,
        "Expected reduction dim to be specified for input.numel() == 0",
    ),
    "prod over a tuple of dims": (lambda lib: lib.ones(2, 3).prod(dim=(0, 1)), TypeError, "prod()"),
}


@pytest.mark.parametrize("fn,exc,phrase", ERRORS.values(), ids=ERRORS.keys())
def test_bad_reduction_raises_torchs_error(torch, fn, exc, phrase):
    """Bad dims and dtypes fail at the call with torch's exception class and key phrase."""
    assert_raises_like_torch(torch, fn, exc, phrase)

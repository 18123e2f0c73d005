"""A differential audit of bad input: each row is one call, written once for both
libraries (``lambda lib: ...``), run on torch and on teachgrad.

When torch refuses the call, teachgrad must raise the same exception class with the same
first line (torch's module name read as teachgrad's; teachgrad may add lines that teach).
When torch accepts it, teachgrad must accept it too and give the same result. So a row
catches both failures a student can meet: an internal NumPy/Python error instead of
torch's, and a silent acceptance of what torch refuses.

The rows cover creation, indexing, shape ops, reductions, arithmetic, autograd calls,
``nn.functional`` and ``optim`` (tests/teachgrad/test_bad_input.py has many more rows
on the factories alone).
"""

import operator
import warnings

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.ops._cases import first_line

INF, NAN = float("inf"), float("nan")


def _m(lib):
    """A 2x3 float matrix: 0 .. 5."""
    return lib.arange(6.0).reshape(2, 3)


def _i(lib):
    """A 2x3 int64 matrix: 0 .. 5."""
    return lib.arange(6).reshape(2, 3)


def _b(lib):
    """A bool vector."""
    return lib.tensor([True, False, True])


def _leaf(lib):
    """A float leaf that requires grad."""
    return lib.ones(2, 3, requires_grad=True)


def _setitem(key, value):
    """``x[key] = value`` on a fresh matrix, as a row."""
    return lambda lib: operator.setitem(_m(lib), key(lib) if callable(key) else key, value)


def _iadd(x, y):
    """``x += y``, as an expression."""
    x += y
    return x


def _imul(x, y):
    """``x *= y``, as an expression."""
    x *= y
    return x


def _itruediv(x, y):
    """``x /= y``, as an expression."""
    x /= y
    return x


def _isub(x, y):
    """``x -= y``, as an expression."""
    x -= y
    return x


def _backward_twice(lib):
    """Backward through a graph that the first backward freed."""
    x = _leaf(lib)
    y = (x * x).sum()
    y.backward()
    y.backward()


def _grad(lib, outputs, inputs, **kw):
    """``autograd.grad`` of rows built from one leaf."""
    return lib.autograd.grad(outputs, inputs, **kw)


def _set_grad(value):
    """``x.grad = value(lib, x)`` on a float leaf."""

    def row(lib):
        x = _leaf(lib)
        x.grad = value(lib, x)
        return x.grad

    return row


def _sgd(params, **kw):
    """An SGD optimizer; the result is its number of parameter groups."""
    return lambda lib: len(lib.optim.SGD(params(lib), **kw).param_groups)


def _adam(params, **kw):
    """An Adam optimizer; the result is its number of parameter groups."""
    return lambda lib: len(lib.optim.Adam(params(lib), **kw).param_groups)


def _params(lib):
    """One parameter."""
    return [lib.nn.Parameter(lib.ones(2))]


def _F(lib):
    return lib.nn.functional


def _logits(lib):
    return lib.arange(15.0).reshape(3, 5) / 10


CREATION = {
    "tensor ragged": lambda lib: lib.tensor([[1, 2], [3]]),
    "tensor ragged floats": lambda lib: lib.tensor([[1.0], [2.0, 3.0]]),
    "tensor(dtype='float32')": lambda lib: lib.tensor([1.0], dtype="float32"),
    "tensor(dtype=float)": lambda lib: lib.tensor([1.0], dtype=float),
    "tensor(dtype=np.float32)": lambda lib: lib.tensor([1.0], dtype=np.float32),
    "tensor(requires_grad='yes')": lambda lib: lib.tensor([1.0], requires_grad="yes"),
    "tensor(int, requires_grad)": lambda lib: lib.tensor([1, 2], requires_grad=True),
    "tensor(bool, requires_grad)": lambda lib: lib.tensor([True], requires_grad=True),
    "ones(int64, requires_grad)": lambda lib: lib.ones(2, dtype=lib.int64, requires_grad=True),
    "arange(10, 0)": lambda lib: lib.arange(10, 0),
    "arange(0, 10, 0)": lambda lib: lib.arange(0, 10, 0),
    "arange(0, 10, inf)": lambda lib: lib.arange(0, 10, INF),
    "arange(0, 10, -1)": lambda lib: lib.arange(0, 10, -1),
    "arange(0, inf)": lambda lib: lib.arange(0, INF),
    "arange(0, 10, 'a')": lambda lib: lib.arange(0, 10, "a"),
    "arange(5, 5) ok": lambda lib: lib.arange(5, 5),
    "arange(10, 0, -3) ok": lambda lib: lib.arange(10, 0, -3),
    "linspace(0, 1, -1)": lambda lib: lib.linspace(0, 1, -1),
    "linspace(0, 1, 0) ok": lambda lib: lib.linspace(0, 1, 0),
    "linspace(0, 1, 1.5)": lambda lib: lib.linspace(0, 1, 1.5),
    "eye(-2)": lambda lib: lib.eye(-2),
    "eye(2, -3)": lambda lib: lib.eye(2, -3),
    "eye(0) ok": lambda lib: lib.eye(0),
    "zeros(-2)": lambda lib: lib.zeros(-2),
    "zeros(2, -1)": lambda lib: lib.zeros(2, -1),
    "zeros('2')": lambda lib: lib.zeros("2"),
    "zeros(0) ok": lambda lib: lib.zeros(0),
    "full((-1,), 0.5)": lambda lib: lib.full((-1,), 0.5),
    "full((2,), 'a')": lambda lib: lib.full((2,), "a"),
    "full(2.0, 1)": lambda lib: lib.full(2.0, 1),
    "randint(0, 5, (-2,))": lambda lib: lib.randint(0, 5, (-2,)),
    "randint(5, 0, (2,))": lambda lib: lib.randint(5, 0, (2,)),
    "randint(0, 5, 2)": lambda lib: lib.randint(0, 5, 2),
    "rand(-1)": lambda lib: lib.rand(-1),
    "rand(2.5)": lambda lib: lib.rand(2.5),
    "rand(2, dtype=int64)": lambda lib: lib.rand(2, dtype=lib.int64),
    "randn(2, 2**40)": lambda lib: lib.randn(2**62, 2**62),
}

INDEXING = {
    "x[1.5]": lambda lib: _m(lib)[1.5],
    "x[None, ...] ok": lambda lib: _m(lib)[None, ...],
    "x[..., None] ok": lambda lib: _m(lib)[..., None],
    "x[None, None, 0] ok": lambda lib: _m(lib)[None, None, 0],
    "x[0, 0, 0]": lambda lib: _m(lib)[0, 0, 0],
    "x[0, ..., 0, 0]": lambda lib: _m(lib)[0, ..., 0, 0],
    "x[2]": lambda lib: _m(lib)[2],
    "x[-3]": lambda lib: _m(lib)[-3],
    "x[0, 3]": lambda lib: _m(lib)[0, 3],
    "x[:, 5]": lambda lib: _m(lib)[:, 5],
    "x[:, -4]": lambda lib: _m(lib)[:, -4],
    "x[1:0] ok": lambda lib: _m(lib)[1:0],
    "x[5:] ok": lambda lib: _m(lib)[5:],
    "x[::-1]": lambda lib: _m(lib)[::-1],
    "x[::0]": lambda lib: _m(lib)[::0],
    "x[::2] ok": lambda lib: _m(lib)[:, ::2],
    "x[1.5:]": lambda lib: _m(lib)[1.5:],
    "x[mask of 3]": lambda lib: _m(lib)[_b(lib)],
    "x[mask 1x1]": lambda lib: _m(lib)[lib.tensor([[True]])],
    "x[mask 2x2]": lambda lib: _m(lib)[lib.tensor([[True, False], [False, True]])],
    "x[mask of 2] ok": lambda lib: _m(lib)[lib.tensor([True, False])],
    "x[:, mask of 2]": lambda lib: _m(lib)[:, lib.tensor([True, False])],
    "x[[True, False, True]]": lambda lib: _m(lib)[[True, False, True]],
    "x[tensor(True)] ok": lambda lib: _m(lib)[lib.tensor(True)],
    "x[float index tensor]": lambda lib: _m(lib)[lib.tensor([0.0, 1.0])],
    "x[:, float index tensor]": lambda lib: _m(lib)[:, lib.tensor([0.0])],
    "x[tensor(1.0)]": lambda lib: _m(lib)[lib.tensor(1.0)],
    "x[tensor(1)] ok": lambda lib: _m(lib)[lib.tensor(1)],
    "x[tensor(1), tensor(2)] ok": lambda lib: _m(lib)[lib.tensor(1), lib.tensor(2)],
    "x[tensor(2)]": lambda lib: _m(lib)[lib.tensor(2)],
    "x[tensor(-3)]": lambda lib: _m(lib)[lib.tensor(-3)],
    "x[tensor([0, 2])]": lambda lib: _m(lib)[lib.tensor([0, 2])],
    "x[:, tensor([3])]": lambda lib: _m(lib)[:, lib.tensor([3])],
    "x[[0, 5]]": lambda lib: _m(lib)[[0, 5]],
    "x[int32 tensor] ok": lambda lib: _m(lib)[lib.tensor([1, 0], dtype=lib.int32)],
    "x[[0, 1], [0, 1, 2]]": lambda lib: _m(lib)[[0, 1], [0, 1, 2]],
    "x[None]": lambda lib: _m(lib)[None].shape,
    "x[()] ok": lambda lib: _m(lib)[()],
    "0-d[None] ok": lambda lib: lib.tensor(2.0)[None],
    "0-d[...] ok": lambda lib: lib.tensor(2.0)[...],
    "0-d[mask] ok": lambda lib: lib.tensor(2.0)[lib.tensor(True)],
    "x[2] = 0": _setitem(2, 0.0),
    "x[mask of 3] = 0": lambda lib: operator.setitem(_m(lib), _b(lib), 0.0),
    "x[float tensor] = 0": lambda lib: operator.setitem(_m(lib), lib.tensor([0.0]), 0.0),
    "x[0, 0, 0] = 0": _setitem((0, 0, 0), 0.0),
    "int[0] = 0.5 ok": lambda lib: (lambda x: (operator.setitem(x, 0, 0.5), x)[1])(_i(lib)),
}

SHAPES = {
    "reshape(4)": lambda lib: _m(lib).reshape(4),
    "reshape(-1, -1)": lambda lib: _m(lib).reshape(-1, -1),
    "reshape(-1, 4)": lambda lib: _m(lib).reshape(-1, 4),
    "reshape(2, -2)": lambda lib: _m(lib).reshape(2, -2),
    "reshape(0, -1)": lambda lib: _m(lib).reshape(0, -1),
    "reshape(3, -1) ok": lambda lib: _m(lib).reshape(3, -1),
    "view(4)": lambda lib: _m(lib).view(4),
    "view(-1, -1)": lambda lib: _m(lib).view(-1, -1),
    "t().view(6)": lambda lib: _m(lib).t().view(6),
    "view(3, 2) ok": lambda lib: _m(lib).view(3, 2),
    "view_as(ones(4))": lambda lib: _m(lib).view_as(lib.ones(4)),
    "permute(0, 0)": lambda lib: _m(lib).permute(0, 0),
    "permute()": lambda lib: _m(lib).permute(),
    "permute(0, 2)": lambda lib: _m(lib).permute(0, 2),
    "permute(1, -1)": lambda lib: _m(lib).permute(1, -1),
    "permute(-1, 0) ok": lambda lib: _m(lib).permute(-1, 0),
    "0-d permute() ok": lambda lib: lib.tensor(1.0).permute(),
    "transpose(0, 2)": lambda lib: _m(lib).transpose(0, 2),
    "transpose(-3, 0)": lambda lib: _m(lib).transpose(-3, 0),
    "transpose(1, 1) ok": lambda lib: _m(lib).transpose(1, 1),
    "0-d transpose(0, 0) ok": lambda lib: lib.tensor(1.0).transpose(0, 0),
    "0-d transpose(0, 1)": lambda lib: lib.tensor(1.0).transpose(0, 1),
    "0-d t() ok": lambda lib: lib.tensor(1.0).t(),
    "3-d t()": lambda lib: lib.ones(1, 2, 3).t(),
    "squeeze(2)": lambda lib: _m(lib).squeeze(2),
    "squeeze(-3)": lambda lib: _m(lib).squeeze(-3),
    "0-d squeeze(0) ok": lambda lib: lib.tensor(1.0).squeeze(0),
    "0-d squeeze(-1) ok": lambda lib: lib.tensor(1.0).squeeze(-1),
    "0-d squeeze(1)": lambda lib: lib.tensor(1.0).squeeze(1),
    "unsqueeze(3)": lambda lib: _m(lib).unsqueeze(3),
    "unsqueeze(-4)": lambda lib: _m(lib).unsqueeze(-4),
    "unsqueeze(-3) ok": lambda lib: _m(lib).unsqueeze(-3),
    "0-d unsqueeze(0) ok": lambda lib: lib.tensor(1.0).unsqueeze(0),
    "0-d unsqueeze(-1) ok": lambda lib: lib.tensor(1.0).unsqueeze(-1),
    "0-d unsqueeze(1) ok": lambda lib: lib.tensor(1.0).unsqueeze(1),
    "0-d unsqueeze(2)": lambda lib: lib.tensor(1.0).unsqueeze(2),
    "0-d unsqueeze(-3)": lambda lib: lib.tensor(1.0).unsqueeze(-3),
    "expand(3, 3)": lambda lib: _m(lib).expand(3, 3),
    "expand(3)": lambda lib: _m(lib).expand(3),
    "expand(-1, -1) ok": lambda lib: _m(lib).expand(-1, -1),
    "expand(4, 2, 3) ok": lambda lib: _m(lib).expand(4, 2, 3),
    "expand(-1, 2, 3)": lambda lib: _m(lib).expand(-1, 2, 3),
    "expand(2, -2)": lambda lib: _m(lib).expand(2, -2),
    "expand_as(ones(3))": lambda lib: _m(lib).expand_as(lib.ones(3)),
    "cat([])": lambda lib: lib.cat([]),
    "cat(x)": lambda lib: lib.cat(_m(lib)),
    "cat([x, ones(3, 3)])": lambda lib: lib.cat([_m(lib), lib.ones(3, 3)]),
    "cat([x, ones(2)])": lambda lib: lib.cat([_m(lib), lib.ones(2)]),
    "cat([x, x], 2)": lambda lib: lib.cat([_m(lib), _m(lib)], 2),
    "cat([x, x], -3)": lambda lib: lib.cat([_m(lib), _m(lib)], -3),
    "cat([x, int]) ok": lambda lib: lib.cat([_m(lib), _i(lib)]),
    "cat([x, 1.0])": lambda lib: lib.cat([_m(lib), 1.0]),
    "cat([0-d, 0-d])": lambda lib: lib.cat([lib.tensor(1.0), lib.tensor(2.0)]),
    "cat([x, empty]) ok": lambda lib: lib.cat([_m(lib), lib.ones(0)]),
    "stack([])": lambda lib: lib.stack([]),
    "stack([x, ones(3, 2)])": lambda lib: lib.stack([_m(lib), lib.ones(3, 2)]),
    "stack([x, x], 3)": lambda lib: lib.stack([_m(lib), _m(lib)], 3),
    "stack([x, x], -4)": lambda lib: lib.stack([_m(lib), _m(lib)], -4),
    "stack([x, x], 2) ok": lambda lib: lib.stack([_m(lib), _m(lib)], 2),
    "stack(x)": lambda lib: lib.stack(_m(lib)),
    "split(0)": lambda lib: _m(lib).split(0),
    "split(-1)": lambda lib: _m(lib).split(-1),
    "split([1, 1])": lambda lib: _m(lib).split([1, 1]),
    "split([1, 2], 1) ok": lambda lib: _m(lib).split([1, 2], 1),
    "split([1, -1])": lambda lib: _m(lib).split([1, 1, -1], 1),
    "split(1, 2)": lambda lib: _m(lib).split(1, 2),
    "split(5) ok": lambda lib: _m(lib).split(5),
    "chunk(0)": lambda lib: _m(lib).chunk(0),
    "chunk(-1)": lambda lib: _m(lib).chunk(-1),
    "chunk(2, 2)": lambda lib: _m(lib).chunk(2, 2),
    "chunk(5) ok": lambda lib: _m(lib).chunk(5),
    "flatten(2)": lambda lib: _m(lib).flatten(2),
    "flatten(1, 0)": lambda lib: _m(lib).flatten(1, 0),
    "unflatten(1, (2, 2))": lambda lib: _m(lib).unflatten(1, (2, 2)),
    "narrow(1, 2, 2)": lambda lib: _m(lib).narrow(1, 2, 2),
    "narrow(1, 4, 0)": lambda lib: _m(lib).narrow(1, 4, 0),
    "narrow(1, 0, -1)": lambda lib: _m(lib).narrow(1, 0, -1),
    "select(1, 3)": lambda lib: _m(lib).select(1, 3),
    "select(2, 0)": lambda lib: _m(lib).select(2, 0),
    "unbind(2)": lambda lib: _m(lib).unbind(2),
    "movedim(0, 2)": lambda lib: _m(lib).movedim(0, 2),
    "movedim((0, 0), (1, 0))": lambda lib: _m(lib).movedim((0, 0), (1, 0)),
    "movedim((0, 1), (0,))": lambda lib: _m(lib).movedim((0, 1), (0,)),
    "repeat(2)": lambda lib: _m(lib).repeat(2),
    "repeat(2, -1)": lambda lib: _m(lib).repeat(2, -1),
    "flip(2)": lambda lib: _m(lib).flip(2),
    "flip(0, 0)": lambda lib: _m(lib).flip(0, 0),
    "roll(1, 2)": lambda lib: _m(lib).roll(1, 2),
    "diagonal(0, 0, 0)": lambda lib: _m(lib).diagonal(0, 0, 0),
    "diagonal(0, 0, 2)": lambda lib: _m(lib).diagonal(0, 0, 2),
    "tril on 1-d": lambda lib: lib.ones(3).tril(),
    "gather int dim 2": lambda lib: _m(lib).gather(2, lib.zeros(2, 3, dtype=lib.int64)),
    "gather float index": lambda lib: _m(lib).gather(1, lib.zeros(2, 3)),
    "gather index out of range": lambda lib: _m(lib).gather(1, lib.full((2, 1), 3)),
    "index_select float index": lambda lib: _m(lib).index_select(1, lib.tensor([0.0])),
    "masked_fill wrong shape": lambda lib: _m(lib).masked_fill(
        lib.ones(3, dtype=lib.bool)[:2], 0.0
    ),
}

REDUCTIONS = {
    "sum(2)": lambda lib: _m(lib).sum(2),
    "sum(-3)": lambda lib: _m(lib).sum(-3),
    "sum((0, 0))": lambda lib: _m(lib).sum((0, 0)),
    "sum((0, -2))": lambda lib: _m(lib).sum((0, -2)),
    "sum(keepdim=True) ok": lambda lib: _m(lib).sum(keepdim=True),
    "sum(dim=()) ok": lambda lib: _m(lib).sum(dim=()),
    "sum(dim=[]) ok": lambda lib: _m(lib).sum(dim=[]),
    "sum(dtype=int64) ok": lambda lib: _m(lib).sum(dtype=lib.int64),
    "sum(bool) ok": lambda lib: _b(lib).sum(),
    "0-d sum(0) ok": lambda lib: lib.tensor(2.0).sum(0),
    "0-d sum(1)": lambda lib: lib.tensor(2.0).sum(1),
    "mean(int)": lambda lib: _i(lib).mean(),
    "mean(int, dtype=float64) ok": lambda lib: _i(lib).mean(dtype=lib.float64),
    "mean(dtype=int64)": lambda lib: _m(lib).mean(dtype=lib.int64),
    "mean(2)": lambda lib: _m(lib).mean(2),
    "mean(dim=()) ok": lambda lib: _m(lib).mean(dim=()),
    "mean(keepdim=True) ok": lambda lib: _m(lib).mean(keepdim=True),
    "mean(bool)": lambda lib: _b(lib).mean(),
    "prod(2)": lambda lib: _m(lib).prod(2),
    "prod(keepdim=True)": lambda lib: _m(lib).prod(keepdim=True),
    "max(2)": lambda lib: _m(lib).max(2),
    "max of empty": lambda lib: lib.ones(0).max(),
    "max(0) of empty": lambda lib: lib.ones(0, 2).max(0),
    "max(1) of empty rows ok": lambda lib: lib.ones(0, 2).max(1),
    "min(2)": lambda lib: _m(lib).min(2),
    "min of empty": lambda lib: lib.ones(0).min(),
    "argmax(2)": lambda lib: _m(lib).argmax(2),
    "argmax of empty": lambda lib: lib.ones(0).argmax(),
    "argmax(keepdim=True) ok": lambda lib: _m(lib).argmax(keepdim=True),
    "amax(2)": lambda lib: _m(lib).amax(2),
    "amax((0, 0))": lambda lib: _m(lib).amax((0, 0)),
    "amax(()) ok": lambda lib: _m(lib).amax(()),
    "amax of empty": lambda lib: lib.ones(0).amax(),
    "amin(-3)": lambda lib: _m(lib).amin(-3),
    "var(2)": lambda lib: _m(lib).var(2),
    "var(int)": lambda lib: _i(lib).var(),
    "std(int)": lambda lib: _i(lib).std(),
    "logsumexp(2)": lambda lib: _m(lib).logsumexp(2),
    "cumsum(2)": lambda lib: _m(lib).cumsum(2),
    "all(2)": lambda lib: _b(lib).all(2),
    "any(1)": lambda lib: _b(lib).any(1),
}

ARITHMETIC = {
    "int // 0": lambda lib: _i(lib) // 0,
    "int // int 0": lambda lib: _i(lib) // lib.zeros(3, dtype=lib.int64),
    "int // 2 ok": lambda lib: _i(lib) // 2,
    "-int // 4 ok": lambda lib: -_i(lib) // 4,
    "int // 0.0 ok": lambda lib: _i(lib) // 0.0,
    "bool - bool": lambda lib: _b(lib) - _b(lib),
    "bool - 1": lambda lib: _b(lib) - 1,
    "1 - bool": lambda lib: 1 - _b(lib),
    "-bool": lambda lib: -_b(lib),
    "bool.neg()": lambda lib: _b(lib).neg(),
    "bool.sub(bool)": lambda lib: lib.sub(_b(lib), _b(lib)),
    "bool + bool ok": lambda lib: _b(lib) + _b(lib),
    "bool * bool ok": lambda lib: _b(lib) * _b(lib),
    "(2,3) + (3,2)": lambda lib: _m(lib) + lib.ones(3, 2),
    "(2,3) + (2,)": lambda lib: _m(lib) + lib.ones(2),
    "(2,3) * (4,)": lambda lib: _m(lib) * lib.ones(4),
    "(2,3) + (2,1) ok": lambda lib: _m(lib) + lib.ones(2, 1),
    "x == None ok": lambda lib: _m(lib) == None,  # noqa: E711 - the call under test
    "x != None ok": lambda lib: _m(lib) != None,  # noqa: E711
    "x == 'a' ok": lambda lib: _m(lib) == "a",
    "x + 'a'": lambda lib: _m(lib) + "a",
    "'a' + x": lambda lib: "a" + _m(lib),
    "x + None": lambda lib: _m(lib) + None,
    "None + x": lambda lib: None + _m(lib),
    "x - 'a'": lambda lib: _m(lib) - "a",
    "x * 'a'": lambda lib: _m(lib) * "a",
    "x / None": lambda lib: _m(lib) / None,
    "None / x": lambda lib: None / _m(lib),
    "x // 'a'": lambda lib: _m(lib) // "a",
    "x + [1]": lambda lib: _m(lib) + [1],
    "x < 'a'": lambda lib: _m(lib) < "a",
    "x >= None": lambda lib: _m(lib) >= None,
    "x @ x": lambda lib: _m(lib) @ _m(lib),
    "x @ ones(2)": lambda lib: _m(lib) @ lib.ones(2),
    "x @ int": lambda lib: _m(lib) @ _i(lib).t(),
    "0-d @ x": lambda lib: lib.tensor(1.0) @ _m(lib),
    "mm 1-d": lambda lib: lib.mm(lib.ones(3), lib.ones(3)),
    "mm shapes": lambda lib: lib.mm(_m(lib), _m(lib)),
    "bmm 2-d": lambda lib: lib.bmm(_m(lib), _m(lib).t()),
    "bmm batch": lambda lib: lib.bmm(lib.ones(2, 2, 3), lib.ones(3, 3, 2)),
    "mv shapes": lambda lib: lib.mv(_m(lib), lib.ones(2)),
    "dot sizes": lambda lib: lib.dot(lib.ones(3), lib.ones(2)),
    "dot 2-d": lambda lib: lib.dot(_m(lib), _m(lib)),
    "dot dtypes": lambda lib: lib.dot(lib.ones(3), lib.ones(3, dtype=lib.int64)),
    "outer 2-d": lambda lib: lib.outer(_m(lib), lib.ones(2)),
    "int += 0.5": lambda lib: _iadd(_i(lib), 0.5),
    "int += float tensor": lambda lib: _iadd(_i(lib), lib.ones(3)),
    "int *= 1.5": lambda lib: _imul(_i(lib), 1.5),
    "int /= 2": lambda lib: _itruediv(_i(lib), 2),
    "int -= 0.5": lambda lib: _isub(_i(lib), 0.5),
    "bool += 1": lambda lib: _iadd(_b(lib), 1),
    "bool += True ok": lambda lib: _iadd(_b(lib), True),
    "int += 1 ok": lambda lib: _iadd(_i(lib), 1),
    "float += int ok": lambda lib: _iadd(_m(lib), _i(lib)),
    "int32 += int64 ok": lambda lib: _iadd(_i(lib).int(), _i(lib)),
    "x += (3,3)": lambda lib: _iadd(_m(lib), lib.ones(3, 3)),
    "x += (2,3,1)": lambda lib: _iadd(_m(lib), lib.ones(2, 2, 3)),
    "int.add_(0.5)": lambda lib: _i(lib).add_(0.5),
    "int.mul_(float)": lambda lib: _i(lib).mul_(lib.ones(3)),
    "int.div_(2)": lambda lib: _i(lib).div_(2),
    "int.sqrt_()": lambda lib: _i(lib).sqrt_(),
    "int.exp_()": lambda lib: _i(lib).exp_(),
    "int.sigmoid_()": lambda lib: _i(lib).sigmoid_(),
    "int.pow_(0.5)": lambda lib: _i(lib).pow_(0.5),
    "int.fill_(0.5) ok": lambda lib: _i(lib).fill_(0.5),
    "int.copy_(float) ok": lambda lib: _i(lib).copy_(_m(lib) + 0.5),
    "int ** -1": lambda lib: _i(lib) ** -1,
    "int.pow(-2)": lambda lib: _i(lib).pow(-2),
    "int ** 2 ok": lambda lib: _i(lib) ** 2,
    "int ** -1.0 ok": lambda lib: _i(lib) ** -1.0,
    "div(rounding_mode='bad')": lambda lib: lib.div(_m(lib), 2, rounding_mode="bad"),
    "where(mask wrong shape)": lambda lib: lib.where(lib.tensor([True, False]), _m(lib), 0.0),
    "clamp()": lambda lib: _m(lib).clamp(),
    "clamp(3, 1) ok": lambda lib: _m(lib).clamp(3, 1),
    "~float": lambda lib: ~_m(lib),
    "float & float": lambda lib: _m(lib) & _m(lib),
    "~bool ok": lambda lib: ~_b(lib),
    "int.sqrt() ok": lambda lib: _i(lib).sqrt(),
    "bool.abs()": lambda lib: _b(lib).abs(),
    "maximum(int, float) ok": lambda lib: lib.maximum(_i(lib), _m(lib)),
    "add(alpha='a')": lambda lib: lib.add(_m(lib), _m(lib), alpha="a"),
    "sub(alpha='a')": lambda lib: lib.sub(_m(lib), _m(lib), alpha="a"),
    "int.add(1, alpha=0.5)": lambda lib: _i(lib).add(1, alpha=0.5),
    "int.sub(int, alpha=0.5)": lambda lib: _i(lib).sub(_i(lib), alpha=0.5),
    "int.add(1, alpha=2) ok": lambda lib: _i(lib).add(1, alpha=2),
    "float.add(x, alpha=0.5) ok": lambda lib: _m(lib).add(_m(lib), alpha=0.5),
    "bool.add(bool, alpha=2) ok": lambda lib: _b(lib).add(_b(lib), alpha=2),
    "bool.add(True, alpha=2) ok": lambda lib: _b(lib).add(True, alpha=2),
    "bool.add(bool, alpha=0) ok": lambda lib: _b(lib).add(_b(lib), alpha=0),
    "bool.add(int, alpha=2) ok": lambda lib: _b(lib).add(lib.tensor([1, 2, 3]), alpha=2),
    "bool.add(bool, alpha=0.5)": lambda lib: _b(lib).add(_b(lib), alpha=0.5),
    "bool.add_(bool, alpha=2) ok": lambda lib: _b(lib).add_(_b(lib), alpha=2),
    "int.add_(1, alpha=0.5)": lambda lib: _i(lib).add_(1, alpha=0.5),
    "int.add_(int, alpha=0.5)": lambda lib: _i(lib).add_(_i(lib), alpha=0.5),
    "int.sub_(int, alpha=0.5)": lambda lib: _i(lib).sub_(_i(lib), alpha=0.5),
    "int.add_(int, alpha=2) ok": lambda lib: _i(lib).add_(_i(lib), alpha=2),
    "float.add_(1, alpha=0.5) ok": lambda lib: _m(lib).add_(1, alpha=0.5),
    # alpha=1.0 equals 1, but a float alpha for integers is refused all the same
    "int.add(int, alpha=1.0)": lambda lib: _i(lib).add(_i(lib), alpha=1.0),
    "int.sub(int, alpha=1.0)": lambda lib: _i(lib).sub(_i(lib), alpha=1.0),
    "int.add_(int, alpha=1.0)": lambda lib: _i(lib).add_(_i(lib), alpha=1.0),
    "int.sub_(int, alpha=1.0)": lambda lib: _i(lib).sub_(_i(lib), alpha=1.0),
    "float.add(x, alpha=1.0) ok": lambda lib: _m(lib).add(_m(lib), alpha=1.0),
    "float.sub_(x, alpha=1.0) ok": lambda lib: _m(lib).sub_(_m(lib), alpha=1.0),
    "float.add(x, alpha=True)": lambda lib: _m(lib).add(_m(lib), alpha=True),
    "bool.add(bool, alpha=-1) ok": lambda lib: _b(lib).add(~_b(lib), alpha=-1),
    # a 0-d tensor is the number it holds; a 1-d one is no number
    "float.add(x, alpha=tensor(2)) ok": lambda lib: _m(lib).add(_m(lib), alpha=lib.tensor(2)),
    "float.sub(x, alpha=tensor(1.5)) ok": lambda lib: _m(lib).sub(_m(lib), alpha=lib.tensor(1.5)),
    "float.add_(x, alpha=tensor(2)) ok": lambda lib: _m(lib).add_(_m(lib), alpha=lib.tensor(2)),
    "float.add(x, alpha=tensor([2]))": lambda lib: _m(lib).add(_m(lib), alpha=lib.tensor([2])),
    "int.add(int, alpha=tensor(1.0))": lambda lib: _i(lib).add(_i(lib), alpha=lib.tensor(1.0)),
    "float.add(x, alpha=tensor(True))": lambda lib: _m(lib).add(_m(lib), alpha=lib.tensor(True)),
    "maximum(x, 1)": lambda lib: lib.maximum(_m(lib), 1),
    "minimum(x, 1.0)": lambda lib: lib.minimum(_m(lib), 1.0),
    "maximum(1, x)": lambda lib: lib.maximum(1, _m(lib)),
    "x.maximum(1)": lambda lib: _m(lib).maximum(1),
    "x.minimum(None)": lambda lib: _m(lib).minimum(None),
    "x.minimum(int) ok": lambda lib: _m(lib).minimum(_i(lib)),
    "sign(bool) ok": lambda lib: _b(lib).sign(),
    "float.item() of 2": lambda lib: _m(lib).item(),
    "len(0-d)": lambda lib: len(lib.tensor(1.0)),
    "iter(0-d)": lambda lib: list(lib.tensor(1.0)),
    "bool(x)": lambda lib: bool(_m(lib)),
    "int(x)": lambda lib: int(_m(lib)),
    "float(x)": lambda lib: float(_m(lib)),
}

AUTOGRAD = {
    "backward on non-scalar": lambda lib: (_leaf(lib) * 2).backward(),
    "backward(gradient wrong shape)": lambda lib: (_leaf(lib) * 2).backward(lib.ones(3)),
    "backward(gradient int)": lambda lib: (_leaf(lib) * 2).backward(
        lib.ones(2, 3, dtype=lib.int64)
    ),
    "backward on no-grad tensor": lambda lib: lib.ones(2).sum().backward(),
    "backward twice": _backward_twice,
    "grad on non-scalar": lambda lib: (lambda x: _grad(lib, x * 2, x))(_leaf(lib)),
    "grad(grad_outputs wrong shape)": lambda lib: (
        lambda x: _grad(lib, x * 2, x, grad_outputs=lib.ones(3))
    )(_leaf(lib)),
    "grad(output not requiring grad)": lambda lib: _grad(lib, lib.ones(2).sum(), _leaf(lib)),
    "grad(unused, allow_unused) ok": lambda lib: _grad(
        lib, _leaf(lib).sum(), _leaf(lib), allow_unused=True
    ),
    "grad(inputs=[])": lambda lib: _grad(lib, _leaf(lib).sum(), []),
    "set_grad_enabled('a')": lambda lib: lib.set_grad_enabled("a"),
    "x.grad = wrong shape": _set_grad(lambda lib, x: lib.ones(3)),
    "x.grad = x": _set_grad(lambda lib, x: x),
    "x.grad = ndarray": _set_grad(lambda lib, x: np.ones((2, 3), dtype=np.float32)),
    "x.grad = 1.0": _set_grad(lambda lib, x: 1.0),
    "x.grad = None ok": _set_grad(lambda lib, x: None),
    "x.grad = ones ok": _set_grad(lambda lib, x: lib.ones(2, 3)),
    "del x.data": lambda lib: delattr(_leaf(lib), "data"),
    "del x.grad ok": lambda lib: delattr(_leaf(lib), "grad"),
    "y._grad_fn = None ok": lambda lib: setattr(_leaf(lib) * 2, "_grad_fn", None),
    "x.data = wrong type": lambda lib: setattr(_leaf(lib), "data", 1.0),
    "x.data = other shape ok": lambda lib: setattr(_leaf(lib), "data", lib.ones(4)),
    "non-leaf int requires_grad_()": lambda lib: (_i(lib) * 2).requires_grad_(),
    "non-leaf requires_grad_(False)": lambda lib: (_leaf(lib) * 2).requires_grad_(False),
    "non-leaf requires_grad_() ok": lambda lib: (_leaf(lib) * 2).requires_grad_().requires_grad,
    "requires_grad_('yes')": lambda lib: lib.ones(2).requires_grad_("yes"),
    "int requires_grad = True": lambda lib: setattr(_i(lib), "requires_grad", True),
    "retain_grad without grad": lambda lib: lib.ones(2).retain_grad(),
    "register_hook without grad": lambda lib: lib.ones(2).register_hook(print),
    "x.numpy() with grad": lambda lib: _leaf(lib).numpy(),
    "leaf in-place": lambda lib: _leaf(lib).add_(1),
    "leaf x[0] = 1": lambda lib: operator.setitem(_leaf(lib), 0, 1.0),
    "inference tensor saved": lambda lib: _inference_saved(lib),
}


def _inference_saved(lib):
    """A tensor made in inference mode, then saved for backward."""
    with lib.inference_mode():
        t = lib.ones(2)
    return (_leaf(lib)[0, :2] * t).sum().backward()


FUNCTIONAL = {
    "cross_entropy(float target 1-d)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0.0, 1.0, 2.0])
    ),
    "cross_entropy(int32 target)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, 1, 2], dtype=lib.int32)
    ),
    "cross_entropy(bool target)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([True, False, True])
    ),
    "cross_entropy(class 5)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, 5, 1])
    ),
    "cross_entropy(class -1)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, -1, 1])
    ),
    "cross_entropy(ignore -100) ok": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, -100, 1])
    ),
    "cross_entropy(target of 4)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, 1, 2, 3])
    ),
    "cross_entropy(target 2-d)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([[0], [1], [2]])
    ),
    "cross_entropy(probs ok)": lambda lib: _F(lib).cross_entropy(_logits(lib), lib.ones(3, 5) / 5),
    "cross_entropy(reduction='x')": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, 1, 2]), reduction="x"
    ),
    "cross_entropy(label_smoothing=2)": lambda lib: _F(lib).cross_entropy(
        _logits(lib), lib.tensor([0, 1, 2]), label_smoothing=2.0
    ),
    "nll_loss(float target)": lambda lib: _F(lib).nll_loss(_logits(lib), lib.ones(3)),
    "nll_loss(class 5)": lambda lib: _F(lib).nll_loss(_logits(lib), lib.tensor([0, 5, 1])),
    "nll_loss(class -2)": lambda lib: _F(lib).nll_loss(_logits(lib), lib.tensor([0, -2, 1])),
    "nll_loss(target of 2)": lambda lib: _F(lib).nll_loss(_logits(lib), lib.tensor([0, 1])),
    "nll_loss(3-d input, 1-d target)": lambda lib: _F(lib).nll_loss(
        lib.ones(2, 3, 4), lib.tensor([0, 1])
    ),
    "nll_loss(0-d input)": lambda lib: _F(lib).nll_loss(lib.tensor(1.0), lib.tensor(0)),
    "linear shape": lambda lib: _F(lib).linear(_m(lib), lib.ones(4, 2)),
    "linear int weight": lambda lib: _F(lib).linear(_m(lib), lib.ones(4, 3, dtype=lib.int64)),
    "linear 1-d weight ok": lambda lib: _F(lib).linear(_m(lib), lib.ones(3)),
    "softmax(dim=2)": lambda lib: _F(lib).softmax(_m(lib), dim=2),
    "softmax(dim=-3)": lambda lib: _F(lib).softmax(_m(lib), dim=-3),
    "softmax(int, dtype) ok": lambda lib: _F(lib).softmax(_i(lib), dim=1, dtype=lib.float64),
    "tg.softmax(dim=2)": lambda lib: lib.softmax(_m(lib), 2),
    "x.softmax(5)": lambda lib: _m(lib).softmax(5),
    "log_softmax(dim=2)": lambda lib: _F(lib).log_softmax(_m(lib), dim=2),
    "one_hot(float)": lambda lib: _F(lib).one_hot(lib.tensor([0.0, 1.0])),
    "one_hot(-1)": lambda lib: _F(lib).one_hot(lib.tensor([0, -1])),
    "one_hot(too few classes)": lambda lib: _F(lib).one_hot(lib.tensor([0, 3]), 2),
    "embedding(out of range)": lambda lib: _F(lib).embedding(lib.tensor([3]), lib.ones(3, 2)),
    "dropout(p=1.5)": lambda lib: _F(lib).dropout(_m(lib), p=1.5),
    "dropout(p=-0.1)": lambda lib: _F(lib).dropout(_m(lib), p=-0.1),
    "mse_loss shapes": lambda lib: _F(lib).mse_loss(_m(lib), lib.ones(3, 2)),
    "mse_loss(int64 target) ok": lambda lib: _F(lib).mse_loss(_m(lib), _i(lib)),
    "mse_loss(int64 target, 'none') ok": lambda lib: _F(lib).mse_loss(
        _m(lib), _i(lib), reduction="none"
    ),
    "mse_loss(int64 input) ok": lambda lib: _F(lib).mse_loss(_i(lib), _m(lib)),
    "mse_loss(float64 target) ok": lambda lib: _F(lib).mse_loss(_m(lib), _m(lib).double()),
    "mse_loss(int64, int64)": lambda lib: _F(lib).mse_loss(_i(lib), _i(lib)),
    "l1_loss(int64 target) ok": lambda lib: _F(lib).l1_loss(_m(lib), _i(lib)),
    "l1_loss(float64 target) ok": lambda lib: _F(lib).l1_loss(_m(lib), _m(lib).double()),
    "bce(int64 target)": lambda lib: _F(lib).binary_cross_entropy(_m(lib) / 5, _i(lib) % 2),
    "bce(float64 target)": lambda lib: _F(lib).binary_cross_entropy(
        _m(lib) / 5, lib.zeros(2, 3, dtype=lib.float64)
    ),
    "bce(bool target)": lambda lib: _F(lib).binary_cross_entropy(_m(lib) / 5, _m(lib) > 2),
    "l1_loss reduction='x'": lambda lib: _F(lib).l1_loss(_m(lib), _m(lib), reduction="x"),
    "bce input > 1": lambda lib: _F(lib).binary_cross_entropy(_m(lib), lib.zeros(2, 3)),
    "bce shapes": lambda lib: _F(lib).binary_cross_entropy(lib.ones(2) / 2, lib.zeros(3)),
    "bce_with_logits shapes": lambda lib: _F(lib).binary_cross_entropy_with_logits(
        _m(lib), lib.zeros(3, 2)
    ),
    "relu('a')": lambda lib: _F(lib).relu("a"),
    "layer_norm wrong shape": lambda lib: _F(lib).layer_norm(_m(lib), (2,)),
    "conv2d channels": lambda lib: _F(lib).conv2d(lib.ones(1, 2, 3, 3), lib.ones(1, 1, 2, 2)),
    "conv2d kernel too big": lambda lib: _F(lib).conv2d(lib.ones(1, 1, 2, 2), lib.ones(1, 1, 3, 3)),
    "max_pool2d kernel too big": lambda lib: _F(lib).max_pool2d(lib.ones(1, 1, 2, 2), 3),
    "pad odd": lambda lib: _F(lib).pad(_m(lib), (1,)),
}

OPTIM = {
    "SGD lr=-1": _sgd(_params, lr=-1.0),
    "SGD momentum=-1": _sgd(_params, lr=0.1, momentum=-1.0),
    "SGD weight_decay=-1": _sgd(_params, lr=0.1, weight_decay=-1.0),
    "SGD nesterov without momentum": _sgd(_params, lr=0.1, nesterov=True),
    "SGD dampening with nesterov": _sgd(
        _params, lr=0.1, momentum=0.9, nesterov=True, dampening=0.5
    ),
    "SGD params []": _sgd(lambda lib: [], lr=0.1),
    "SGD params tensor": _sgd(lambda lib: lib.ones(2, requires_grad=True), lr=0.1),
    "SGD params not requiring grad ok": _sgd(lambda lib: [lib.ones(2)], lr=0.1),
    "SGD params non-leaf": _sgd(lambda lib: [lib.ones(2, requires_grad=True) * 2], lr=0.1),
    "SGD params ints": _sgd(lambda lib: [1, 2], lr=0.1),
    "SGD params duplicated": _sgd(lambda lib: _params(lib) * 2, lr=0.1),
    "SGD lr=0 ok": _sgd(_params, lr=0.0),
    "SGD default lr ok": _sgd(_params),
    "SGD groups empty": _sgd(lambda lib: [{"params": []}], lr=0.1),
    "SGD group without params": _sgd(lambda lib: [{"lr": 0.1}], lr=0.1),
    "Adam lr=-1": _adam(_params, lr=-1.0),
    "Adam betas (1.5, 0.9)": _adam(_params, betas=(1.5, 0.9)),
    "Adam betas (0.9, -0.1)": _adam(_params, betas=(0.9, -0.1)),
    "Adam eps=-1": _adam(_params, eps=-1.0),
    "Adam weight_decay=-1": _adam(_params, weight_decay=-1.0),
    "Adam params []": _adam(lambda lib: [], lr=0.1),
    "Adam params tensor": _adam(lambda lib: lib.ones(2, requires_grad=True)),
    "AdamW betas (1.0, 0.9)": lambda lib: lib.optim.AdamW(_params(lib), betas=(1.0, 0.9)),
    "AdamW lr=-1": lambda lib: lib.optim.AdamW(_params(lib), lr=-1.0),
}

# arguments of the wrong type, refused by torch's argument parser: teachgrad checks them
# only after a call failed (teachgrad/_arguments.py, ``checked``)
ARGUMENT_TYPES = {
    "x.sum(1.5)": lambda lib: _m(lib).sum(1.5),
    "x.sum('a')": lambda lib: _m(lib).sum("a"),
    "x.sum(0, 'a')": lambda lib: _m(lib).sum(0, "a"),
    "x.sum((0, 1.5))": lambda lib: _m(lib).sum((0, 1.5)),
    "x.sum(0, dtype='a')": lambda lib: _m(lib).sum(0, dtype="a"),
    "x.mean(dim=1.5)": lambda lib: _m(lib).mean(dim=1.5),
    "x.mean(dimm=0)": lambda lib: _m(lib).mean(dimm=0),
    "x.mean(0, True, None, 5)": lambda lib: _m(lib).mean(0, True, None, 5),
    "sum(x, dim=1.5)": lambda lib: lib.sum(_m(lib), dim=1.5),
    "sum(x, 1.5)": lambda lib: lib.sum(_m(lib), 1.5),
    "sum([1, 2])": lambda lib: lib.sum([1, 2]),
    "x.sum((0, 1)) ok": lambda lib: _m(lib).sum((0, 1)),
    "x.sum(None) ok": lambda lib: _m(lib).sum(None),
    "x.mean(1.5)": lambda lib: _m(lib).mean(1.5),
    "x.mean(0, 'x')": lambda lib: _m(lib).mean(0, "x"),
    "x.prod(1.5)": lambda lib: _m(lib).prod(1.5),
    "x.prod((0, 1))": lambda lib: _m(lib).prod((0, 1)),
    "x.amax(1.5)": lambda lib: _m(lib).amax(1.5),
    "x.amin('a')": lambda lib: _m(lib).amin("a"),
    "x.max(1.5)": lambda lib: _m(lib).max(1.5),
    "x.max('a')": lambda lib: _m(lib).max("a"),
    "x.argmax(1.5)": lambda lib: _m(lib).argmax(1.5),
    "x.argmin('a')": lambda lib: _m(lib).argmin("a"),
    "x.argmax(None) ok": lambda lib: _m(lib).argmax(None),
    "x.var(1.5)": lambda lib: _m(lib).var(1.5),
    "x.std('a')": lambda lib: _m(lib).std("a"),
    "x.std(0, correction='a')": lambda lib: _m(lib).std(0, correction="a"),
    "x.logsumexp(1.5)": lambda lib: _m(lib).logsumexp(1.5),
    "x.logsumexp()": lambda lib: _m(lib).logsumexp(),
    "x.cumsum(1.5)": lambda lib: _m(lib).cumsum(1.5),
    "x.cumsum()": lambda lib: _m(lib).cumsum(),
    "x.softmax(1.5)": lambda lib: _m(lib).softmax(1.5),
    "x.any(1.5)": lambda lib: _m(lib).any(1.5),
    "x.all('a')": lambda lib: _m(lib).all("a"),
    "x.reshape('a')": lambda lib: _m(lib).reshape("a"),
    "x.reshape(2.0, 3)": lambda lib: _m(lib).reshape(2.0, 3),
    "x.reshape([6.0])": lambda lib: _m(lib).reshape([6.0]),
    "x.reshape()": lambda lib: _m(lib).reshape(),
    "reshape(x, 'a')": lambda lib: lib.reshape(_m(lib), "a"),
    "x.reshape(np.int64(6)) ok": lambda lib: _m(lib).reshape(np.int64(6)),
    "x.view('a')": lambda lib: _m(lib).view("a"),
    "x.view(6.0)": lambda lib: _m(lib).view(6.0),
    "x.permute(1.0, 0)": lambda lib: _m(lib).permute(1.0, 0),
    "x.permute('ab')": lambda lib: _m(lib).permute("ab"),
    "x.transpose(0.0, 1)": lambda lib: _m(lib).transpose(0.0, 1),
    "x.transpose(0)": lambda lib: _m(lib).transpose(0),
    "x.squeeze(0.5)": lambda lib: _m(lib).squeeze(0.5),
    "x.unsqueeze(0.5)": lambda lib: _m(lib).unsqueeze(0.5),
    "x.unsqueeze()": lambda lib: _m(lib).unsqueeze(),
    "x.flatten(0.5)": lambda lib: _m(lib).flatten(0.5),
    "x.unflatten(0.5, (1, 2))": lambda lib: _m(lib).unflatten(0.5, (1, 2)),
    "x.unflatten(1, 'ab')": lambda lib: _m(lib).unflatten(1, "ab"),
    "x.expand('a')": lambda lib: _m(lib).expand("a"),
    "x.expand(2.0, 3)": lambda lib: _m(lib).expand(2.0, 3),
    "x.repeat(2.0, 1)": lambda lib: _m(lib).repeat(2.0, 1),
    "x.repeat('a')": lambda lib: _m(lib).repeat("a"),
    "x.tile(2.0)": lambda lib: _m(lib).tile(2.0),
    "x.flip(0.5)": lambda lib: _m(lib).flip(0.5),
    "x.roll(1.5)": lambda lib: _m(lib).roll(1.5),
    "x.narrow(0, 0.5, 1)": lambda lib: _m(lib).narrow(0, 0.5, 1),
    "x.select(0, 0.5)": lambda lib: _m(lib).select(0, 0.5),
    "x.select(0)": lambda lib: _m(lib).select(0),
    "x.chunk(1.5)": lambda lib: _m(lib).chunk(1.5),
    "x.unbind(0.5)": lambda lib: _m(lib).unbind(0.5),
    "x.movedim(0.5, 1)": lambda lib: _m(lib).movedim(0.5, 1),
    "x.diagonal(0.5)": lambda lib: _m(lib).diagonal(0.5),
    "x.tril(0.5)": lambda lib: _m(lib).tril(0.5),
    "x.triu('a')": lambda lib: _m(lib).triu("a"),
    "x.add()": lambda lib: _m(lib).add(),
    "x.add('a')": lambda lib: _m(lib).add("a"),
    "x.add([1, 2, 3])": lambda lib: _m(lib).add([1, 2, 3]),
    "x.add(None)": lambda lib: _m(lib).add(None),
    "x.add(other='a')": lambda lib: _m(lib).add(other="a"),
    "add(x)": lambda lib: lib.add(_m(lib)),
    "x.mul()": lambda lib: _m(lib).mul(),
    "x.mul('a')": lambda lib: _m(lib).mul("a"),
    "x.sub('a')": lambda lib: _m(lib).sub("a"),
    "x.div('a')": lambda lib: _m(lib).div("a"),
    "x.div()": lambda lib: _m(lib).div(),
    "x.pow('a')": lambda lib: _m(lib).pow("a"),
    "x.pow()": lambda lib: _m(lib).pow(),
    "x.eq('a')": lambda lib: _m(lib).eq("a"),
    "x.lt()": lambda lib: _m(lib).lt(),
    "x.gt(None)": lambda lib: _m(lib).gt(None),
    "x.remainder('a')": lambda lib: _m(lib).remainder("a"),
    "x.fmod()": lambda lib: _m(lib).fmod(),
    "x.floor_divide('a')": lambda lib: _m(lib).floor_divide("a"),
    "x.mul(2) ok": lambda lib: _m(lib).mul(2),
    "x @ 'a'": lambda lib: _m(lib) @ "a",
    "'a' @ x": lambda lib: "a" @ _m(lib),
    "x ** 'a'": lambda lib: _m(lib) ** "a",
    "'a' ** x": lambda lib: "a" ** _m(lib),
    "x ** None": lambda lib: _m(lib) ** None,
    "x ** 2 ok": lambda lib: _m(lib) ** 2,
    "2 ** x ok": lambda lib: 2 ** _m(lib),
    "x.matmul([1, 2, 3])": lambda lib: _m(lib).matmul([1, 2, 3]),
    "x.mm(1.0)": lambda lib: _m(lib).mm(1.0),
    "x.bmm()": lambda lib: _m(lib).bmm(),
    "x.mv(1.0)": lambda lib: _m(lib).mv(1.0),
    "x.dot()": lambda lib: _m(lib).dot(),
    "x.outer('a')": lambda lib: _m(lib).outer("a"),
    "x.clamp('a')": lambda lib: _m(lib).clamp("a"),
    "x.clamp(min='a')": lambda lib: _m(lib).clamp(min="a"),
    "x.where(x > 0, 'a')": lambda lib: _m(lib).where(_m(lib) > 0, "a"),
    "x.masked_fill(x > 0, 'a')": lambda lib: _m(lib).masked_fill(_m(lib) > 0, "a"),
    "x.masked_fill(1.0, 1.0)": lambda lib: _m(lib).masked_fill(1.0, 1.0),
    "x.index_select(0.5, index)": lambda lib: _m(lib).index_select(0.5, lib.tensor([0])),
    "x.index_select(0, [0])": lambda lib: _m(lib).index_select(0, [0]),
    "x.gather(0, [[0]])": lambda lib: _m(lib).gather(0, [[0]]),
    "x.gather(0.5, index)": lambda lib: _m(lib).gather(0.5, lib.tensor([[0]])),
    "x.scatter(0, [[0]], 1.0)": lambda lib: _m(lib).scatter(0, [[0]], 1.0),
    "cat([x], 0.5)": lambda lib: lib.cat([_m(lib)], 0.5),
    "stack([x], 'a')": lambda lib: lib.stack([_m(lib)], "a"),
    "x.expand_as(1.0)": lambda lib: _m(lib).expand_as(1.0),
    "x.view_as(1.0)": lambda lib: _m(lib).view_as(1.0),
    "x.reshape_as('a')": lambda lib: _m(lib).reshape_as("a"),
    "x.type_as(1.0)": lambda lib: _m(lib).type_as(1.0),
    "transpose(x, 0.5, 1)": lambda lib: lib.transpose(_m(lib), 0.5, 1),
    "matmul(x, 'a')": lambda lib: lib.matmul(_m(lib), "a"),
    "pow('a', x)": lambda lib: lib.pow("a", _m(lib)),
    "mean(x, 1.5)": lambda lib: lib.mean(_m(lib), 1.5),
    "squeeze(x, 0.5)": lambda lib: lib.squeeze(_m(lib), 0.5),
    "remainder('a', x)": lambda lib: lib.remainder("a", _m(lib)),
    "x.prod(dim=None)": lambda lib: _m(lib).prod(dim=None),
    "x.div(2, rounding_mode='floor') ok": lambda lib: _m(lib).div(2, rounding_mode="floor"),
    "x.add_('a')": lambda lib: _m(lib).add_("a"),
    "x.mul_()": lambda lib: _m(lib).mul_(),
    "x.fill_('a')": lambda lib: _m(lib).fill_("a"),
    "x.clamp_('a')": lambda lib: _m(lib).clamp_("a"),
    "x.masked_fill_(x > 0, 'a')": lambda lib: _m(lib).masked_fill_(_m(lib) > 0, "a"),
}

CASES = {
    **CREATION,
    **ARGUMENT_TYPES,
    **INDEXING,
    **SHAPES,
    **REDUCTIONS,
    **ARITHMETIC,
    **AUTOGRAD,
    **FUNCTIONAL,
    **OPTIM,
}


def _summary(value):
    """What two results must agree on: a tensor's shape, dtype and values; the items of a
    tuple or list; anything else as it is."""
    if isinstance(value, (tuple, list)):
        return [type(value).__name__, [_summary(v) for v in value]]
    if hasattr(value, "dtype") and hasattr(value, "tolist"):
        return [
            "Tensor",
            tuple(value.shape),
            str(value.dtype).replace("torch", "teachgrad"),
            np.asarray(value.detach().tolist(), dtype=np.float64),
        ]
    return value


def _assert_same_results(theirs, ours):
    """torch's result and teachgrad's agree (NaN equals NaN)."""
    if isinstance(theirs, np.ndarray):
        np.testing.assert_allclose(ours, theirs, rtol=1e-6)
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), (theirs, ours)
        for a, b in zip(theirs, ours):
            _assert_same_results(a, b)
    else:
        assert ours == theirs


def _run(fn, lib):
    """``(result, None)`` or ``(None, exception)``."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a call may warn on the way)
        error = None
        try:
            result = fn(lib)
        except Exception as e:
            result, error = None, e
    return result, error


@pytest.fixture(autouse=True)
def modes_are_restored(torch):
    """A row that changes a process-wide setting must not leak it."""
    yield
    for lib in (tg, torch):
        lib.set_grad_enabled(True)


def test_the_audit_is_large():
    assert len(CASES) >= 200


@pytest.mark.parametrize("name", CASES)
def test_same_error_or_same_result_as_torch(torch, name):
    theirs, their_error = _run(CASES[name], torch)
    ours, our_error = _run(CASES[name], tg)
    if their_error is not None:
        assert our_error is not None, (
            f"teachgrad accepts it; torch: {type(their_error).__name__}: {first_line(their_error)}"
        )
        assert (type(our_error).__name__, first_line(our_error)) == (
            type(their_error).__name__,
            first_line(their_error),
        )
    else:
        assert our_error is None, f"torch accepts it; teachgrad: {our_error!r}"
        _assert_same_results(_summary(theirs), _summary(ours))

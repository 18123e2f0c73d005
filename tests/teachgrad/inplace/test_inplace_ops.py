"""Every in-place op, against torch (issue 3, point 2, and the matrix of its "Tests").

The matrix is (in-place op) x (where the written tensor sits) x (whether the value
written requires grad). For each cell the same program runs in teachgrad and torch:

    x  (leaf, requires grad)  ->  base = x * 1.5  ->  target (base itself, or a view of it)
    target.<op>(value)            # value: a number, or a tensor that may require grad
    loss = <target, W1> + <base, W2>   with random W (float64)

and these facts must be torch's: what the op returns (self), how many times
``_version`` moved (once), ``grad_fn.name()`` of the target and of its base
(``CopySlices`` when a view was written), ``requires_grad``/``is_leaf``, the values of
target and base, and the gradients reaching ``x`` (the target's old history) and the
value. "plain" targets do not require grad themselves: they only start to when the
value written does (torch records the op, and a written view's base gets CopySlices).
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable

import numpy as np
import pytest

from ._common import assert_both_same, grad, make, name, numpy, values, weighted_sum

TARGET = (3, 4)
MASK = np.array(
    [[True, False, False, True], [False, False, True, False], [True, True, False, False]]
)
ROW_MASK = np.array([True, False, True])
COLUMN_MASK = np.array([False, True, True, False])


@dataclasses.dataclass(frozen=True)
class Op:
    """``call(lib, target, value)``; ``domain``: the target's values; ``value``: the shape
    of the tensor written (None: no tensor operand); ``value_domain``, ``value_dtype``."""

    call: Callable
    domain: str = "real"
    value: tuple | None = None
    value_domain: str = "real"
    value_dtype: str = "float64"


def _mask(lib, array=MASK):
    return lib.tensor(array)


def _index(lib, *rows):
    return lib.tensor(list(rows))


def _setitem(key):
    """``target[key(lib, target)] = value`` (the value is the tensor operand, or a number)."""

    def call(lib, t, v, number=None):
        t[key(lib, t)] = v if v is not None else number
        return None

    return call


def _set_number(key, number):
    inner = _setitem(key)
    return lambda lib, t, v: inner(lib, t, None, number)


OPS = {
    # arithmetic, with tensor (same shape, broadcast row/column, 0-d) and number operands
    "add_(v)": Op(lambda lib, t, v: t.add_(v), value=(3, 4)),
    "add_(v row, alpha=-2)": Op(lambda lib, t, v: t.add_(v, alpha=-2.0), value=(4,)),
    "add_(2.5)": Op(lambda lib, t, v: t.add_(2.5)),
    "sub_(v col)": Op(lambda lib, t, v: t.sub_(v), value=(3, 1)),
    "sub_(v 0-d, alpha=0.5)": Op(lambda lib, t, v: t.sub_(v, alpha=0.5), value=()),
    "sub_(1.0)": Op(lambda lib, t, v: t.sub_(1.0)),
    "mul_(v)": Op(lambda lib, t, v: t.mul_(v), value=(3, 4)),
    "mul_(v row)": Op(lambda lib, t, v: t.mul_(v), value=(4,)),
    "mul_(-3.0)": Op(lambda lib, t, v: t.mul_(-3.0)),
    "div_(v)": Op(lambda lib, t, v: t.div_(v), value=(3, 4), value_domain="nonzero"),
    "div_(v col)": Op(lambda lib, t, v: t.div_(v), value=(3, 1), value_domain="nonzero"),
    "div_(4.0)": Op(lambda lib, t, v: t.div_(4.0)),
    "pow_(2.0)": Op(lambda lib, t, v: t.pow_(2.0)),
    "pow_(0.5)": Op(lambda lib, t, v: t.pow_(0.5), domain="positive"),
    "pow_(v)": Op(lambda lib, t, v: t.pow_(v), domain="positive", value=(3, 4)),
    "remainder_(0.7)": Op(lambda lib, t, v: t.remainder_(0.7)),
    "fmod_(v)": Op(lambda lib, t, v: t.fmod_(v), value=(3, 4), value_domain="nonzero"),
    # unary
    "neg_()": Op(lambda lib, t, v: t.neg_()),
    "abs_()": Op(lambda lib, t, v: t.abs_(), domain="nonzero"),
    "exp_()": Op(lambda lib, t, v: t.exp_()),
    "log_()": Op(lambda lib, t, v: t.log_(), domain="positive"),
    "sqrt_()": Op(lambda lib, t, v: t.sqrt_(), domain="positive"),
    "sin_()": Op(lambda lib, t, v: t.sin_()),
    "cos_()": Op(lambda lib, t, v: t.cos_()),
    "tanh_()": Op(lambda lib, t, v: t.tanh_()),
    "sigmoid_()": Op(lambda lib, t, v: t.sigmoid_()),
    "relu_()": Op(lambda lib, t, v: t.relu_(), domain="nonzero"),
    "clamp_(-0.5, 0.5)": Op(lambda lib, t, v: t.clamp_(-0.5, 0.5)),
    "clamp_(min=0.1)": Op(lambda lib, t, v: t.clamp_(min=0.1)),
    "clamp_(max=v)": Op(lambda lib, t, v: t.clamp_(max=v), value=(3, 4)),
    "clip_(-1, 1)": Op(lambda lib, t, v: t.clip_(-1.0, 1.0)),
    # overwriting
    "zero_()": Op(lambda lib, t, v: t.zero_()),
    "fill_(2.0)": Op(lambda lib, t, v: t.fill_(2.0)),
    "fill_(v 0-d)": Op(lambda lib, t, v: t.fill_(v), value=()),
    "copy_(v)": Op(lambda lib, t, v: t.copy_(v), value=(3, 4)),
    "copy_(v row)": Op(lambda lib, t, v: t.copy_(v), value=(4,)),
    "copy_(v float32)": Op(lambda lib, t, v: t.copy_(v), value=(3, 4), value_dtype="float32"),
    "masked_fill_(mask, 3.0)": Op(lambda lib, t, v: t.masked_fill_(_mask(lib), 3.0)),
    "masked_fill_(column mask, 3.0)": Op(
        lambda lib, t, v: t.masked_fill_(_mask(lib, COLUMN_MASK), 3.0)
    ),
    "masked_fill_(mask, v 0-d)": Op(lambda lib, t, v: t.masked_fill_(_mask(lib), v), value=()),
    "index_put_((rows,), v)": Op(
        lambda lib, t, v: t.index_put_((_index(lib, 0, 2),), v), value=(2, 4)
    ),
    "index_put_((rows,), v row)": Op(
        lambda lib, t, v: t.index_put_((_index(lib, 2, 1),), v), value=(4,)
    ),
    "index_put_((rows, cols), v, accumulate=True) with repeats": Op(
        lambda lib, t, v: t.index_put_(
            (_index(lib, 0, 2, 0, 1), _index(lib, 1, 3, 1, 0)), v, accumulate=True
        ),
        value=(4,),
    ),
    "index_put_((rows,), v, accumulate=False)": Op(
        lambda lib, t, v: t.index_put_((_index(lib, 1),), v, accumulate=False), value=(1, 4)
    ),
    "index_put_((mask,), v 0-d)": Op(lambda lib, t, v: t.index_put_((_mask(lib),), v), value=()),
    # augmented assignment
    "+= v": Op(lambda lib, t, v: operator.iadd(t, v), value=(3, 4)),
    "+= 1.0": Op(lambda lib, t, v: operator.iadd(t, 1.0)),
    "-= v row": Op(lambda lib, t, v: operator.isub(t, v), value=(4,)),
    "*= v": Op(lambda lib, t, v: operator.imul(t, v), value=(3, 4)),
    "*= 2.0": Op(lambda lib, t, v: operator.imul(t, 2.0)),
    "/= v": Op(lambda lib, t, v: operator.itruediv(t, v), value=(3, 1), value_domain="nonzero"),
    "/= 2.0": Op(lambda lib, t, v: operator.itruediv(t, 2.0)),
    # __setitem__, basic keys
    "t[0] = v row": Op(_setitem(lambda lib, t: 0), value=(4,)),
    "t[:, 1:3] = v col": Op(_setitem(lambda lib, t: (slice(None), slice(1, 3))), value=(3, 1)),
    "t[..., ::2] = 2.0": Op(_set_number(lambda lib, t: (Ellipsis, slice(None, None, 2)), 2.0)),
    "t[None, 1] = v": Op(_setitem(lambda lib, t: (None, 1)), value=(1, 4)),
    "t[1, 2] = v 0-d": Op(_setitem(lambda lib, t: (1, 2)), value=()),
    "t[-1] = 7.0": Op(_set_number(lambda lib, t: -1, 7.0)),
    "t[:] = v": Op(_setitem(lambda lib, t: slice(None)), value=(3, 4)),
    "t[...] = v row": Op(_setitem(lambda lib, t: Ellipsis), value=(4,)),
    "t[tensor(1)] = v row": Op(_setitem(lambda lib, t: lib.tensor(1)), value=(4,)),
    "t[index.sum()] = 7.0": Op(_set_number(lambda lib, t: _index(lib, 0, 2).sum(), 7.0)),
    "t[tensor(1), 1:3] = v": Op(_setitem(lambda lib, t: (lib.tensor(1), slice(1, 3))), value=(2,)),
    "t[np.int64(2)] = v row": Op(_setitem(lambda lib, t: np.int64(2)), value=(4,)),
    # __setitem__, advanced keys
    "t[[0, 2]] = v": Op(_setitem(lambda lib, t: [0, 2]), value=(2, 4)),
    "t[idx, idx] = v": Op(
        _setitem(lambda lib, t: (_index(lib, 0, 2), _index(lib, 1, 3))), value=(2,)
    ),
    "t[mask] = 0.0": Op(_set_number(lambda lib, t: _mask(lib), 0.0)),
    "t[mask] = v 0-d": Op(_setitem(lambda lib, t: _mask(lib)), value=()),
    "t[row mask] = v row": Op(_setitem(lambda lib, t: _mask(lib, ROW_MASK)), value=(4,)),
    "t[[0, 2], 1:3] = v": Op(_setitem(lambda lib, t: ([0, 2], slice(1, 3))), value=(2, 2)),
    "t[:, [1, 3]] = v col": Op(_setitem(lambda lib, t: (slice(None), [1, 3])), value=(3, 1)),
    "t[t > 0] = -1.0": Op(_set_number(lambda lib, t: t.detach() > 0, -1.0)),
}


@dataclasses.dataclass(frozen=True)
class Place:
    """Where the written tensor sits: ``base_shape``, ``view(base)`` giving the (3, 4)
    target, ``grad``: base = x * 1.5 with x a leaf requiring grad (else a plain tensor),
    ``no_grad``: the op runs under no_grad()."""

    base_shape: tuple
    view: Callable | None = None
    grad: bool = True
    no_grad: bool = False


PLACES = {
    "non-leaf": Place((3, 4)),
    "non-leaf, op under no_grad": Place((3, 4), no_grad=True),
    "view t() of a non-leaf": Place((4, 3), lambda b: b.t()),
    "view [:, ::2] of a non-leaf": Place((3, 8), lambda b: b[:, ::2]),
    "view narrow(0, 1, 3) of a non-leaf": Place((5, 4), lambda b: b.narrow(0, 1, 3)),
    "view select(0, 1) of a non-leaf": Place((2, 3, 4), lambda b: b.select(0, 1)),
    "view diagonal(0, 1, 2) of a non-leaf": Place((3, 4, 4), lambda b: b.diagonal(0, 1, 2)),
    "view of a view t()[1:4] of a non-leaf": Place((4, 5), lambda b: b.t()[1:4]),
    "plain (no grad)": Place((3, 4), grad=False),
    "view t() of a plain tensor": Place((4, 3), lambda b: b.t(), grad=False),
    "view [1] of a plain tensor": Place((2, 3, 4), lambda b: b[1], grad=False),
}


def _target_values(op, place, seed):
    """Base values such that every element of the target lies in the op's domain."""
    return values(seed, place.base_shape, op.domain)


def _cases():
    for op_id, op in OPS.items():
        for place_id, place in PLACES.items():
            grads = (False, True) if op.value is not None else (False,)
            for value_grad in grads:
                suffix = " | value requires grad" if value_grad else ""
                yield pytest.param(op, place, value_grad, id=f"{op_id} | {place_id}{suffix}")


def _program(op, place, value_grad, seed=7):
    def program(lib):
        data = _target_values(op, place, seed)
        x = None
        if place.grad:
            x = make(lib, data / 1.5, requires_grad=True)
            base = x * 1.5
        else:
            base = make(lib, data)
        target = base if place.view is None else place.view(base)
        assert tuple(target.shape) == TARGET
        value = None
        if op.value is not None:
            value = make(
                lib,
                values(seed + 1, op.value, op.value_domain),
                requires_grad=value_grad,
                dtype=op.value_dtype,
            )
        before = (target._version, base._version)
        if place.no_grad:
            with lib.no_grad():
                out = op.call(lib, target, value)
        else:
            out = op.call(lib, target, value)
        facts = dict(
            returns="self" if out is target else repr(out),
            bumps=(target._version - before[0], base._version - before[1]),
            target_grad_fn=name(target),
            base_grad_fn=name(base),
            requires_grad=(target.requires_grad, base.requires_grad),
            is_leaf=(target.is_leaf, base.is_leaf),
            target=numpy(target),
            base=numpy(base),
        )
        loss = weighted_sum(lib, [target, base])
        if loss is not None:
            loss.backward()
        facts.update(x_grad=grad(x), value_grad=grad(value))
        return facts

    return program


@pytest.mark.parametrize("op,place,value_grad", list(_cases()))
def test_in_place_op_matches_torch(op, place, value_grad):
    """Values, one version bump, self returned, torch's grad_fn names (CopySlices on the base
    when a view was written), and the gradients of the old history and of the value."""
    facts = assert_both_same(_program(op, place, value_grad))
    if place.no_grad:
        return
    bumps = facts["tg"]["bumps"]
    assert bumps == (1, 1)


def test_a_loop_over_an_index_tensor_writes_as_in_torch():
    """``for i in idx: g[i] += w[i]``: each ``i`` is a 0-d integer tensor, an index like an
    int; the values, versions, grad_fn and the gradient of ``w`` all match torch's."""

    def program(lib):
        w = make(lib, np.array([1.0, 2.0, 3.0]), requires_grad=True)
        g = w * 1
        for i in lib.tensor([0, 2, 2]):
            g[i] += w[i]
        (g * make(lib, np.array([1.0, 10.0, 100.0]))).sum().backward()
        return dict(g=numpy(g), version=g._version, grad_fn=name(g), w_grad=grad(w))

    facts = assert_both_same(program)
    # each ``g[i] += v`` is an add_ into the view g[i], then ``g[i] = that view``: 2 bumps
    assert facts["tg"]["version"] == 6


KEYWORD_OPERANDS = {  # found by torch's OpInfo samples: fill_(value=...) raised IndexError
    "fill_(value=number)": lambda lib, x: x.fill_(value=2.5),
    "fill_(value=0-d tensor)": lambda lib, x: x.fill_(value=lib.tensor(3.0)),
    "copy_(other=, non_blocking=)": lambda lib, x: x.copy_(other=lib.ones(3), non_blocking=True),
    "add_(other=, alpha=)": lambda lib, x: x.add_(other=lib.ones(3), alpha=2),
    "masked_fill_(mask=, value=)": lambda lib, x: x.masked_fill_(
        mask=lib.tensor([True, False, True]), value=7.0
    ),
}


@pytest.mark.parametrize("program", KEYWORD_OPERANDS.values(), ids=KEYWORD_OPERANDS.keys())
def test_an_operand_given_by_keyword_is_taken_as_torch_takes_it(program):
    def facts(lib):
        x = lib.zeros(3)
        out = program(lib, x)
        return values(out), x._version, out is x

    assert_both_same(facts)

"""Random programs mixing views and in-place ops behave as in torch (issue 3, "Tests").

Hypothesis writes a short program: two float64 leaves requiring grad (3 x 4 and 4)
and one plain tensor (3 x 4, no grad) are cloned, then 1-10 steps each either

* make a new value out of place (``sin``, ``exp``, ``x * y`` ... these save tensors,
  so later in-place changes can trip the version check),
* take a view of a value (slices, select, transpose, diagonal, reshape, expand,
  unbind/split outputs, detach ...), or
* change a value in place (arithmetic with numbers or other values, unary ops,
  ``fill_``/``zero_``/``copy_``, ``masked_fill_``, ``__setitem__`` with basic and
  boolean keys).

The program runs in teachgrad and in torch. Either both raise (same exception class;
at the step itself or at backward), or every value made (in its final state), its
``_version`` and ``requires_grad``, and the gradients of a random weighting of all of
them w.r.t. the leaves are the same.

A torch quirk is sidestepped: torch regenerates a view's grad_fn lazily, and an
in-place op on a view whose base started to require grad *after* the view was made
(``v = b[0]; b.add_(w); v.add_(w)``) raises "a leaf Variable that requires grad ..."
in torch unless ``v.grad_fn`` was read first. The programs read ``t.grad_fn`` before
each in-place op, so they compare the documented behaviour, not that accident.
"""

from __future__ import annotations

import numpy as np
import pytest

from ._common import assert_both_same, grad, make, numpy, torch, values, weighted_sum

pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


def _nd(n):
    return lambda s: len(s) >= n


def _always(s):
    return True


# name -> (fn(lib, x, y), applies(shape_x, shape_y)); y is None for unary ops
OUT_OF_PLACE = {
    "x * 1.5": (lambda lib, x, y: x * 1.5, None),
    "x.sin()": (lambda lib, x, y: x.sin(), None),
    "x.exp()": (lambda lib, x, y: x.tanh().exp(), None),
    "x.sigmoid()": (lambda lib, x, y: x.sigmoid(), None),
    "x.pow(2)": (lambda lib, x, y: x.pow(2), None),
    "x.clone()": (lambda lib, x, y: x.clone(), None),
    "x.sum(0)": (lambda lib, x, y: x.sum(0), _nd(1)),
    "x * y": (lambda lib, x, y: x * y, "broadcast"),
    "x + y": (lambda lib, x, y: x + y, "broadcast"),
}

VIEWS = {
    "x[0]": (lambda lib, x: x[0], lambda s: len(s) >= 1 and s[0] >= 1),
    "x[:, 1:]": (lambda lib, x: x[:, 1:], lambda s: len(s) >= 2 and s[1] >= 2),
    "x[..., ::2]": (lambda lib, x: x[..., ::2], _nd(1)),
    "x[1:]": (lambda lib, x: x[1:], lambda s: len(s) >= 1 and s[0] >= 2),
    "x.t()": (lambda lib, x: x.t(), lambda s: len(s) == 2),
    "x.transpose(0, -1)": (lambda lib, x: x.transpose(0, -1), _nd(2)),
    "x.unsqueeze(0)": (lambda lib, x: x.unsqueeze(0), lambda s: len(s) <= 3),
    "x.squeeze()": (lambda lib, x: x.squeeze(), _always),
    "x.reshape(-1)": (lambda lib, x: x.reshape(-1), _always),
    "x.flatten()": (lambda lib, x: x.flatten(), _always),
    "x.diagonal()": (lambda lib, x: x.diagonal(), _nd(2)),
    "x.narrow(-1, 0, 1)": (lambda lib, x: x.narrow(-1, 0, 1), _nd(1)),
    "x.select(-1, -1)": (lambda lib, x: x.select(-1, -1), lambda s: len(s) >= 1 and s[-1] >= 1),
    "x.expand(2, ...)": (lambda lib, x: x.expand(2, *x.shape), lambda s: len(s) <= 2),
    "x.unbind(0)[0]": (lambda lib, x: x.unbind(0)[0], lambda s: len(s) >= 1 and s[0] >= 1),
    "x.split(2)[-1]": (lambda lib, x: x.split(2)[-1], lambda s: len(s) >= 1 and s[0] >= 1),
    "x.detach()": (lambda lib, x: x.detach(), _always),
    "x[None, ...]": (lambda lib, x: x[None, ...], lambda s: len(s) <= 3),
}


def _setitem(key, value):
    def change(lib, t, y):
        t[key(t)] = value(lib, t, y)

    return change


# name -> (fn(lib, t, y), applies(shape_t, shape_y)); y is None for ops without an operand
IN_PLACE = {
    "t.add_(y)": (lambda lib, t, y: t.add_(y), "into"),
    "t.mul_(y)": (lambda lib, t, y: t.mul_(y), "into"),
    "t.sub_(y, alpha=2)": (lambda lib, t, y: t.sub_(y, alpha=2.0), "into"),
    "t.copy_(y)": (lambda lib, t, y: t.copy_(y), "into"),
    "t += y": (lambda lib, t, y: t.__iadd__(y), "into"),
    "t *= 0.5": (lambda lib, t, y: t.__imul__(0.5), None),
    "t.add_(1)": (lambda lib, t, y: t.add_(1.0), None),
    "t.div_(2)": (lambda lib, t, y: t.div_(2.0), None),
    "t.neg_()": (lambda lib, t, y: t.neg_(), None),
    "t.sin_()": (lambda lib, t, y: t.sin_(), None),
    "t.tanh_()": (lambda lib, t, y: t.tanh_(), None),
    "t.sigmoid_()": (lambda lib, t, y: t.sigmoid_(), None),
    "t.exp_()": (lambda lib, t, y: t.exp_(), None),
    "t.pow_(2)": (lambda lib, t, y: t.pow_(2), None),
    "t.relu_()": (lambda lib, t, y: t.relu_(), None),
    "t.clamp_(-0.5, 0.5)": (lambda lib, t, y: t.clamp_(-0.5, 0.5), None),
    "t.zero_()": (lambda lib, t, y: t.zero_(), None),
    "t.fill_(0.25)": (lambda lib, t, y: t.fill_(0.25), None),
    "t.masked_fill_(t > 0, 1)": (lambda lib, t, y: t.masked_fill_(t.detach() > 0, 1.0), None),
    "t[t < 0] = 0": (_setitem(lambda t: t.detach() < 0, lambda lib, t, y: 0.0), None),
    "t[0] = 3": (_setitem(lambda t: 0, lambda lib, t, y: 3.0), _nd(1)),
    "t[..., -1] = y[..., -1]": (
        _setitem(lambda t: (Ellipsis, -1), lambda lib, t, y: y[..., -1]),
        "into",
    ),
}


def _broadcast(a, b):
    try:
        return np.broadcast_shapes(a, b)
    except ValueError:
        return None


def _fits_into(target, other):
    """``other`` broadcasts to exactly ``target`` (so ``target.op_(other)`` keeps its shape)."""
    return _broadcast(target, other) == tuple(target)


class Program:
    """The state of one program run with ``lib``: the leaves and every value made."""

    def __init__(self, lib):
        self.lib = lib
        self.leaves = [
            make(lib, values(50, (3, 4)), requires_grad=True),
            make(lib, values(51, (4,)), requires_grad=True),
        ]
        plain = make(lib, values(52, (3, 4)))
        self.values = [self.leaves[0].clone(), self.leaves[1].clone(), plain]

    def apply(self, step):
        kind, op, i, j = step
        lib, vals = self.lib, self.values
        x = vals[i]
        y = None if j is None else vals[j]
        if kind == "op":
            vals.append(OUT_OF_PLACE[op][0](lib, x, y))
        elif kind == "view":
            vals.append(VIEWS[op][0](lib, x))
        else:
            x.grad_fn  # noqa: B018 - see "A torch quirk" in the module docstring
            IN_PLACE[op][0](lib, x, y)

    def facts(self):
        lib = self.lib
        out = [(numpy(v), v._version, v.requires_grad) for v in self.values]
        loss = weighted_sum(lib, self.values)
        if loss is not None:
            loss.backward()
        return out, [grad(leaf) for leaf in self.leaves]


def _choices(table, shapes, i):
    """(name, j) pairs of ``table`` that apply to value i (j: the operand, or None)."""
    out = []
    for name, (_, applies) in table.items():
        if applies is None:
            out.append((name, None))
        elif applies == "broadcast":
            out.extend((name, j) for j, s in enumerate(shapes) if _broadcast(shapes[i], s))
        elif applies == "into":
            out.extend((name, j) for j, s in enumerate(shapes) if _fits_into(shapes[i], s))
        elif applies(shapes[i]):
            out.append((name, None))
    return out


def _aliased(t, u) -> bool:
    """``t`` and ``u`` share storage without being the same view of it."""
    same_storage = t.untyped_storage().data_ptr() == u.untyped_storage().data_ptr()
    same_view = (t.data_ptr(), t.shape, t.stride()) == (u.data_ptr(), u.shape, u.stride())
    return same_storage and not same_view


@st.composite
def programs(draw):
    """Steps drawn against a live torch run (so every step fits the shapes at that point);
    generation stops at the first step torch refuses."""
    state = Program(torch)
    steps = []
    for _ in range(draw(st.integers(1, 10))):
        shapes = [tuple(v.shape) for v in state.values]
        kind = draw(st.sampled_from(["op", "view", "view", "inplace", "inplace", "inplace"]))
        i = draw(st.integers(0, len(shapes) - 1))
        table = {"op": OUT_OF_PLACE, "view": VIEWS, "inplace": IN_PLACE}[kind]
        options = _choices(table, shapes, i)
        if not options:
            continue
        op, j = draw(st.sampled_from(options))
        if kind == "inplace" and j is not None and _aliased(state.values[i], state.values[j]):
            # The operand is another view of the memory being written: torch then reads
            # elements it has already overwritten (its result depends on the loop order),
            # while NumPy and teachgrad read the old values. Not a behaviour to compare.
            continue
        step = (kind, op, i, j)
        steps.append(step)
        try:
            state.apply(step)
        except Exception:  # noqa: BLE001 - torch refused: the program ends here
            break
    return steps


@settings(max_examples=100, deadline=None)
@given(programs())
def test_random_view_and_in_place_programs_match_torch(steps):
    """Values, versions, requires_grad and leaf gradients (or the error raised) of a random
    program of views and in-place ops equal torch's."""

    def run(lib):
        program = Program(lib)
        for step in steps:
            program.apply(step)
        return program.facts()

    assert_both_same(run)

"""How in-place changes through views rewrite the graph (issue 3, point 3), torch as the oracle.

When a view is changed in place, its base changed too; torch then

* gives the base a new history, ``CopySlices`` ("the old base with the view's region
  replaced by the op's result"), even when the base did not require grad before and
  only starts to because the value written does;
* gives the written view (and, lazily, every other alias of the same base) a new
  grad_fn, ``AsStridedBackward0``, that reads its region out of the base's new history.

Each scenario below is a short program over two float64 leaves ``x`` and ``w`` (3 x 4,
both requiring grad). It returns the tensors to look at; for each, its values,
``grad_fn.name()``, ``_version``, ``requires_grad`` and ``is_leaf`` must be torch's,
and so must the gradients of ``x`` and ``w`` of a random weighting of all of them
(so gradient flows to the base, the written view, the other aliases and the value).
"""

from __future__ import annotations

import pytest

import teachgrad as tg

from ._common import (
    assert_both_same,
    grad,
    make,
    name,
    node_name,
    numpy,
    torch,
    values,
    weighted_sum,
)

# name -> program(lib, x, w) returning {label: tensor}
SCENARIOS = {}


def scenario(fn):
    SCENARIOS[fn.__name__.replace("_", " ")] = fn
    return fn


@scenario
def view_of_a_non_leaf_written(lib, x, w):
    """The base gets CopySlices, the view AsStridedBackward0."""
    b = x * 2
    v = b[1]
    v.mul_(w[0])
    return dict(b=b, v=v)


@scenario
def plain_base_starts_requiring_grad_through_a_written_view(lib, x, w):
    """zeros() does not require grad; writing w into a view of it makes it (CopySlices)."""
    b = lib.zeros(3, 4, dtype=lib.float64)
    v = b[1]
    v.copy_(w[2])
    return dict(b=b, v=v)


@scenario
def plain_base_starts_requiring_grad_then_old_alias_is_read(lib, x, w):
    """An alias made while the base needed no grad requires grad once the base does."""
    b = lib.zeros(3, 4, dtype=lib.float64)
    old = b[:, 1:3]
    b[0].copy_(w[1] * x[0])
    return dict(b=b, old=old)


@scenario
def plain_base_written_twice_by_two_values(lib, x, w):
    """Two writes into views of a plain tensor: each value gets the gradient of its region."""
    b = lib.zeros(3, 4, dtype=lib.float64)
    b[0] = w[0]
    b[:, 1] = x[:, 1] * 2
    b.mul_(w)
    return dict(b=b)


@scenario
def plain_base_changed_directly_then_an_older_view_is_a_second_operand(lib, x, w):
    """v was made while b needed no grad; b.add_(w) makes b (and so v) require grad; v
    then enters an op as its *second* operand before anything reads v.grad_fn."""
    b = lib.zeros(3, 4, dtype=lib.float64)
    v = b[0]
    b.add_(w)
    y = x[1] * v
    return dict(y=y)


@scenario
def view_of_a_view_written(lib, x, w):
    """Views of views: the base, the middle view and the written view all get new history."""
    b = x * 2
    v = b.t()
    u = v[1:3]
    u.mul_(w.t()[1:3])
    return dict(b=b, v=v, u=u)


@scenario
def view_of_a_view_of_a_view_written_with_a_step(lib, x, w):
    b = x.sin()
    v = b[:, ::2][1:].t()
    v.add_(w[:2, :2])
    return dict(b=b, v=v)


@scenario
def chain_of_in_place_ops_on_a_non_leaf(lib, x, w):
    b = x * 1
    b.mul_(w).add_(1).exp_().sin_()
    return dict(b=b)


@scenario
def chain_of_in_place_ops_through_a_view_then_the_base(lib, x, w):
    b = x * 1
    v = b[:, 1:3]
    v.mul_(w[:, :2]).tanh_()
    v.add_(1)
    b.sigmoid_()
    return dict(b=b, v=v)


@scenario
def in_place_on_the_base_after_a_view_was_taken(lib, x, w):
    """The views' values follow the base, and their grad_fn is regenerated."""
    b = x * 2
    v = b[0]
    u = b.t()
    b.mul_(w)
    return dict(v=v, u=u)


@scenario
def in_place_on_the_base_after_a_view_was_taken_only_the_view_used(lib, x, w):
    b = x * 2
    v = b[:, 2]
    b.pow_(2)
    b.add_(w)
    return dict(v=v)


@scenario
def other_alias_of_the_same_base_is_regenerated(lib, x, w):
    """v2 overlaps v1 in one element: the value written through v1 reaches v2's gradient."""
    b = x * 2
    v1 = b[0]
    v2 = b[:, 1]
    v1.add_(w[0])
    return dict(v2=v2, v1=v1)


@scenario
def overlapping_aliases_both_written(lib, x, w):
    b = x * 1
    v1 = b[0:2]
    v2 = b[:, 1:3]
    v1.mul_(w[0:2])
    v2.add_(w[:, 1:3])
    v1.exp_()
    return dict(v1=v1, v2=v2, b=b)


@scenario
def diagonal_written(lib, x, w):
    b = x * 1
    d = b.diagonal()
    d.mul_(w[0, :3])
    return dict(b=b, d=d)


@scenario
def diagonal_with_offset_written_with_a_number(lib, x, w):
    b = x.exp()
    b.diagonal(1).fill_(0.5)
    return dict(b=b)


@scenario
def expand_of_the_base_read_after_the_base_was_written(lib, x, w):
    b = x * 1
    e = b[:, :1].expand(3, 4)
    b.mul_(w)
    return dict(e=e)


@scenario
def select_of_a_transposed_view_filled(lib, x, w):
    b = x * w
    b.t()[1].fill_(0.0)
    return dict(b=b)


@scenario
def view_written_via_setitem_of_a_view(lib, x, w):
    b = x * 1
    v = b.view(2, 6)
    v[1, ::2] = w[0, :3]
    return dict(b=b, v=v)


@scenario
def reshape_view_written_and_base_read(lib, x, w):
    b = x.tanh()
    r = b.reshape(12)
    r[3:9].mul_(w.reshape(12)[3:9])
    return dict(b=b, r=r)


@scenario
def unsqueezed_and_squeezed_views_written(lib, x, w):
    b = x * 3
    u = b.unsqueeze(0)
    u[0, 1].sub_(w[1])
    s = u.squeeze(0)
    s[2].div_(2.0)
    return dict(b=b, u=u, s=s)


@scenario
def value_is_a_view_of_the_target(lib, x, w):
    """Writing a tensor's own (old) row into another row: the value aliases the target."""
    b = x * w
    b[0].copy_(b[2])
    return dict(b=b)


@scenario
def value_is_the_target_itself(lib, x, w):
    b = x * 1
    b.mul_(b)
    b.add_(b)
    return dict(b=b)


@scenario
def in_place_on_a_leaf_view_under_no_grad_then_used(lib, x, w):
    """The docs' parameter update: a leaf changed under no_grad keeps being a leaf."""
    p = x * 1  # stands for a parameter's history-free copy
    with lib.no_grad():
        x_ = x.detach()
        x_.mul_(1.0)
    p.add_(w)
    return dict(p=p)


@scenario
def retained_grad_follows_the_rewritten_tensor(lib, x, w):
    b = x * 2
    b.retain_grad()
    b.mul_(w)
    return dict(b=b)


@scenario
def split_output_read_without_any_in_place(lib, x, w):
    b = x * w
    p, q = b.split(2)
    return dict(p=p, q=q)


@pytest.mark.parametrize("program", SCENARIOS.values(), ids=SCENARIOS.keys())
def test_view_history_rewrite_matches_torch(program):
    """Values, grad_fn names (CopySlices / AsStridedBackward0), versions, requires_grad,
    is_leaf of every tensor looked at, and the gradients reaching x and w."""

    def run(lib):
        x = make(lib, values(10, (3, 4)), requires_grad=True)
        w = make(lib, values(11, (3, 4), "nonzero"), requires_grad=True)
        looked_at = program(lib, x, w)
        facts = {
            label: dict(
                values=numpy(t),
                grad_fn=name(t),
                version=t._version,
                requires_grad=t.requires_grad,
                is_leaf=t.is_leaf,
            )
            for label, t in looked_at.items()
        }
        retained = (
            looked_at.get("b") if program is retained_grad_follows_the_rewritten_tensor else None
        )
        weighted_sum(lib, list(looked_at.values())).backward()
        facts["grads"] = (grad(x), grad(w))
        if retained is not None:
            facts["retained grad"] = grad(retained)
        return facts

    assert_both_same(run)


def test_requires_grad_of_an_older_view_follows_its_base():
    """A view made while its base needed no grad requires grad as soon as the base does
    (torch), even when ``requires_grad`` is read before anything reads ``grad_fn``."""

    def run(lib):
        w = make(lib, values(21, (4,)), requires_grad=True)
        b = lib.zeros(3, 4, dtype=lib.float64)
        v = b[0]
        before = v.requires_grad
        b.add_(w)
        return before, v.requires_grad, v.is_leaf, name(v)

    facts = assert_both_same(run)
    assert facts["tg"][:2] == (False, True)


def test_base_history_is_copy_slices_over_the_old_history():
    """CopySlices' edges: the base's old history first, then the op's other inputs, as torch;
    the written view reads the base through AsStridedBackward0."""

    def run(lib):
        x = make(lib, values(12, (3, 4)), requires_grad=True)
        w = make(lib, values(13, (4,)), requires_grad=True)
        b = x.exp()
        v = b[1]
        v.mul_(w)
        edges = [node_name(fn) for fn, _ in b.grad_fn.next_functions]
        view_edges = [node_name(fn) for fn, _ in v.grad_fn.next_functions]
        return name(b), edges, name(v), view_edges

    facts = assert_both_same(run)
    assert facts["tg"][0] == "CopySlices" and facts["tg"][2] == "AsStridedBackward0"


# --------------------------------------------------------------------------- second order


def _write_into_views(lib):
    """A function of (x, w) that clones x, writes into views of the clone, returns a value."""

    def f(x, w):
        y = x.clone()
        y[1:, :2].mul_(w[:2, :2])
        y.t()[0].add_(x[0, :3] ** 2)
        d = y.diagonal()
        d.mul_(w[2, :3].sin())
        return (y**2).sum(0) + y.exp().sum(1).sum()

    return f


def test_gradcheck_and_gradgradcheck_through_in_place_ops_on_views():
    """Numerical first and second derivatives through CopySlices/AsStrided agree with the
    analytical ones (teachgrad's gradcheck/gradgradcheck, float64)."""
    x = make(tg, values(16, (3, 4)), requires_grad=True)
    w = make(tg, values(17, (3, 4)), requires_grad=True)
    f = _write_into_views(tg)
    assert tg.autograd.gradcheck(f, (x, w))
    assert tg.autograd.gradgradcheck(f, (x, w))


def test_second_derivatives_through_in_place_ops_on_views_equal_torchs():
    """Hessian-vector products (double backward through CopySlices) equal torch's."""

    def run(lib):
        x = make(lib, values(16, (3, 4)), requires_grad=True)
        w = make(lib, values(17, (3, 4)), requires_grad=True)
        out = _write_into_views(lib)(x, w)
        u = make(lib, values(18, tuple(out.shape)))
        gx, gw = lib.autograd.grad(out, (x, w), u, create_graph=True)
        s = (gx * make(lib, values(19, (3, 4)))).sum() + (gw * make(lib, values(20, (3, 4)))).sum()
        hx, hw = lib.autograd.grad(s, (x, w))
        return numpy(out), numpy(gx), numpy(gw), numpy(hx), numpy(hw)

    assert_both_same(run)
    assert torch.autograd.gradgradcheck(
        _write_into_views(torch),
        (make(torch, values(16, (3, 4)), True), make(torch, values(17, (3, 4)), True)),
    )

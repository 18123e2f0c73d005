"""Inputs that are not differentiable (``where``'s condition, an embedding's indices, an
index, a mask, a target) get no edge in the graph, as in torch; and the profiler still lists
them among the op's inputs, in torch's order (``record_shapes``). torch is the oracle.
"""

import pytest

import teachgrad as tg
from tests.teachgrad.inplace._common import node_name

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _inputs(lib):
    x = lib.arange(9.0, dtype=lib.float64).reshape(3, 3).requires_grad_()
    y = lib.ones(3, 3, dtype=lib.float64, requires_grad=True)
    cond = lib.tensor([[True, False, True]] * 3)
    index = lib.tensor([[0, 2, 1]])
    return x, y, cond, index


def _double_backward_of_embedding(lib):
    w = lib.ones(5, 3, dtype=lib.float64, requires_grad=True)
    out = lib.nn.functional.embedding(lib.tensor([[0, 2], [4, 2]]), w, padding_idx=2)
    g = lib.ones(2, 2, 3, dtype=lib.float64, requires_grad=True)
    (gw,) = lib.autograd.grad(out, w, g, create_graph=True)
    return gw


PROGRAMS = {
    "where(cond, x, y)": lambda lib, x, y, c, i: lib.where(c, x, y),
    "where(cond, x, 2.0)": lambda lib, x, y, c, i: lib.where(c, x, 2.0),
    "where(cond, 2.0, y)": lambda lib, x, y, c, i: lib.where(c, 2.0, y),
    "x.where(cond, y)": lambda lib, x, y, c, i: x.where(c, y),
    "where(a row of cond, x, y[0])": lambda lib, x, y, c, i: lib.where(c[0], x, y[0]),
    "where(cond, x, y) with y not requiring grad": lambda lib, x, y, c, i: lib.where(
        c, x, y.detach()
    ),
    "embedding": lambda lib, x, y, c, i: lib.nn.functional.embedding(i, x),
    "embedding, padding_idx": lambda lib, x, y, c, i: lib.nn.functional.embedding(
        i, x, padding_idx=1
    ),
    "embedding's double backward": lambda lib, x, y, c, i: _double_backward_of_embedding(lib),
    "gather": lambda lib, x, y, c, i: x.gather(0, i),
    "masked_fill": lambda lib, x, y, c, i: x.masked_fill(c, 0.0),
    "scatter (src)": lambda lib, x, y, c, i: x.scatter(0, i, y[:1]),
    "index_select": lambda lib, x, y, c, i: x.index_select(0, i[0]),
    "nll_loss": lambda lib, x, y, c, i: lib.nn.functional.nll_loss(x, i[0]),
}


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_a_non_differentiable_input_gets_no_edge_like_torch(torch, program):
    def edges(lib):
        out = program(lib, *_inputs(lib))
        return node_name(out.grad_fn), [(node_name(f), nr) for f, nr in out.grad_fn.next_functions]

    assert edges(tg) == edges(torch)


def test_where_with_a_number_operand_still_differentiates_like_torch(torch):
    """The number's empty edge stands in its place: the gradient reaches the tensor."""

    def grads(lib):
        x, y, cond, _ = _inputs(lib)
        (lib.where(cond, x, 2.0) * 3).sum().backward()
        (lib.where(cond, 2.0, y) * 5).sum().backward()
        return x.grad.tolist(), y.grad.tolist()

    assert grads(tg) == grads(torch)


PROFILED = {
    "aten::where": lambda lib, x, y, c, i: lib.where(c, x, y),
    "aten::masked_fill": lambda lib, x, y, c, i: x.masked_fill(c, 1.0),
    "aten::gather": lambda lib, x, y, c, i: x.gather(0, i),
    "aten::scatter": lambda lib, x, y, c, i: (x.scatter(0, i, y[:1]), x.scatter(0, i, 2.0)),
    "aten::scatter_add": lambda lib, x, y, c, i: x.scatter_add(0, i, y[:2]),
    "aten::index_select": lambda lib, x, y, c, i: x.index_select(0, i[0]),
    "aten::nll_loss": lambda lib, x, y, c, i: lib.nn.functional.nll_loss(x, i[0]),
    "aten::embedding": lambda lib, x, y, c, i: lib.nn.functional.embedding(i, x),
}


@pytest.mark.parametrize("name", PROFILED)
def test_the_profiler_lists_every_input_in_torchs_order(torch, name):
    """teachgrad may leave out trailing options torch lists (gather's ``sparse_grad``), but
    every input it lists is in torch's place, and no tensor input is missing."""

    def shapes(lib):
        with lib.autograd.profiler.profile(record_shapes=True) as prof:
            PROFILED[name](lib, *_inputs(lib))
        return [e.input_shapes for e in prof.function_events if e.name == name]

    ours, torchs = shapes(tg), shapes(torch)
    assert len(ours) == len(torchs) > 0
    for mine, theirs in zip(ours, torchs, strict=True):
        assert mine == theirs[: len(mine)]
        assert [s for s in theirs if s] == [s for s in mine if s]  # every tensor input listed

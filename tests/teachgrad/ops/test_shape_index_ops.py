"""cumsum, gather/scatter/index_select, the shape ops that copy (tril, triu, flip, roll,
repeat, tile, constant_pad_nd), unflatten, einsum, ``x.softmax``/``tg.softmax``, and edge
cases of movedim, chunk, split, unbind, diagonal, narrow and masked_fill.

* gradients are right (gradcheck and gradgradcheck in float64, reverse and forward mode)
  for contiguous and non-contiguous inputs, 0-d tensors and negative dims;
* values, dtypes, node names and input gradients match PyTorch in float64 and float32,
  empty tensors included;
  repeated indices of gather/index_select/scatter_add add their gradients up;
* unflatten and one-operand einsum without a sum are views (memory and version counter
  shared with the base, like torch); flip, roll, repeat, tril, pad ... are copies;
* bad dims, indices, sizes and equations raise torch's exception class and key phrase.
"""

import pytest

import teachgrad as tg

from ._cases import (
    A,
    assert_raises_like_torch,
    case_id,
    compare_with_torch,
    node_name,
    run_gradchecks,
    what_changes_show,
)

T = "transposed"
S = "strided"

# name -> (fn(lib, *inputs), [inputs, ...]); index tensors are built inside fn with lib.tensor
OPS = {
    # cumsum
    "cumsum(1)": (lambda lib, x: x.cumsum(1), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "cumsum(-1)": (lambda lib, x: lib.cumsum(x, -1), [(A(5, layout=S),), (A(2, 3, 4),), (A(),)]),
    "cumsum(0) of empty": (lambda lib, x: x.cumsum(dim=0) * 2, [(A(0, 3),)]),
    # gather: repeated indices send several gradients to one element
    "gather(1, repeats)": (
        lambda lib, x: x.gather(1, lib.tensor([[0, 0], [3, 1], [2, 2]])),
        [(A(3, 4),), (A(3, 4, layout=T),), (A(3, 4, layout=S),)],
    ),
    "gather(0, smaller index)": (lambda lib, x: x.gather(0, lib.tensor([[2, 0, 2]])), [(A(3, 4),)]),
    "gather(-1)": (lambda lib, x: lib.gather(x, -1, lib.tensor([[1], [1], [0]])), [(A(3, 2),)]),
    "gather of 0-d": (lambda lib, x: x.gather(0, lib.tensor(0)), [(A(),)]),
    "gather of 0-d, 1-d index": (lambda lib, x: x.gather(0, lib.tensor([0, 0])), [(A(),)]),
    "gather, empty index": (
        lambda lib, x: x.gather(1, lib.zeros(3, 0, dtype=lib.int64)) * 2,
        [(A(3, 4),)],
    ),
    # index_select
    "index_select(0, repeats)": (
        lambda lib, x: x.index_select(0, lib.tensor([2, 0, 2])),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "index_select(-1)": (
        lambda lib, x: lib.index_select(x, -1, lib.tensor([3, 1, 3, 3])),
        [(A(2, 3, 4),), (A(4, layout=S),)],
    ),
    "index_select, int32 index": (
        lambda lib, x: x.index_select(1, lib.tensor([1, 0], dtype=lib.int32)),
        [(A(3, 2),)],
    ),
    "index_select, 0-d index": (lambda lib, x: x.index_select(0, lib.tensor(1)), [(A(3, 2),)]),
    "index_select of 0-d": (lambda lib, x: x.index_select(0, lib.tensor([0])), [(A(),)]),
    "index_select, empty index": (
        lambda lib, x: x.index_select(1, lib.tensor([], dtype=lib.int64)) * 2,
        [(A(3, 4),)],
    ),
    # scatter (distinct targets: where indices collide torch leaves the winner undefined)
    "scatter(0, src)": (
        lambda lib, x, src: x.scatter(0, lib.tensor([[2, 0, 1, 1], [0, 2, 0, 2]]), src),
        [(A(3, 4), A(2, 4)), (A(3, 4, layout=T), A(2, 4, layout=T))],
    ),
    "scatter(-1, src)": (
        lambda lib, x, src: lib.scatter(x, -1, lib.tensor([[3], [0], [1]]), src),
        [(A(3, 4), A(3, 1))],
    ),
    "scatter(1, value)": (
        lambda lib, x: x.scatter(1, lib.tensor([[1], [0], [3]]), 2.5),
        [(A(3, 4),), (A(3, 4, layout=S),)],
    ),
    "scatter(value=)": (
        lambda lib, x: lib.scatter(x, 0, lib.tensor([2, 0]), value=-1.0),
        [(A(4),)],
    ),
    "scatter of 0-d": (
        lambda lib, x, src: x.scatter(0, lib.tensor(0), src),
        [(A(), A())],
    ),
    "scatter_add(1, repeats)": (
        lambda lib, x, src: x.scatter_add(1, lib.tensor([[0, 0, 3], [1, 1, 1]]), src),
        [(A(2, 4), A(2, 3)), (A(2, 4, layout=T), A(2, 3, layout=S))],
    ),
    "scatter_add(0)": (
        lambda lib, x, src: lib.scatter_add(x, 0, lib.tensor([[1, 0], [1, 1]]), src),
        [(A(2, 2), A(2, 2))],
    ),
    # triangles
    "tril()": (lambda lib, x: x.tril(), [(A(3, 4),), (A(4, 3, layout=T),), (A(2, 3, 3),)]),
    "tril(-1)": (lambda lib, x: lib.tril(x, -1), [(A(4, 4),)]),
    "tril(diagonal=-5) (all zero)": (lambda lib, x: lib.tril(x, diagonal=-5), [(A(3, 4),)]),
    "triu(1)": (lambda lib, x: x.triu(1), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "triu(-5) (all kept)": (lambda lib, x: lib.triu(x, -5), [(A(3, 4),)]),
    "triu() of empty": (lambda lib, x: x.triu() * 2, [(A(2, 0, 3),)]),
    # flip and roll
    "flip(0)": (lambda lib, x: x.flip(0), [(A(3, 4),), (A(3, 4, layout=T),), (A(5, layout=S),)]),
    "flip(0, -1)": (lambda lib, x: x.flip(0, -1), [(A(2, 3, 4),)]),
    "flip(dims=(1,))": (lambda lib, x: lib.flip(x, dims=(1,)), [(A(2, 3),)]),
    "flip(()) (a copy)": (lambda lib, x: x.flip(()), [(A(3, 4),)]),
    "flip(0) of 0-d": (lambda lib, x: x.flip(0), [(A(),)]),
    "roll(1) (flattened)": (lambda lib, x: x.roll(1), [(A(3, 4),), (A(3, 4, layout=T),), (A(),)]),
    "roll(-1, 0)": (lambda lib, x: lib.roll(x, -1, 0), [(A(3, 4),)]),
    "roll((1, -2), (0, 1))": (
        lambda lib, x: x.roll((1, -2), (0, 1)),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "roll(5, -1) (past the size)": (lambda lib, x: x.roll(5, -1), [(A(2, 3),)]),
    "roll of empty": (lambda lib, x: x.roll(1, 0) * 2, [(A(0, 3),)]),
    # repeat and tile
    "repeat(2, 1)": (lambda lib, x: x.repeat(2, 1), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "repeat(2, 1, 3) (new dim)": (
        lambda lib, x: x.repeat((2, 1, 3)),
        [(A(3, 4),), (A(4, layout=S),)],
    ),
    "repeat(3) of 0-d": (lambda lib, x: x.repeat(3), [(A(),)]),
    "repeat(0, 2) (empty)": (lambda lib, x: x.repeat(0, 2) * 2, [(A(3, 4),)]),
    "tile(2) (fewer dims)": (lambda lib, x: x.tile(2), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "tile((2, 1, 1))": (lambda lib, x: lib.tile(x, (2, 1, 1)), [(A(3, 4),)]),
    "tile(dims=(2,))": (lambda lib, x: lib.tile(x, dims=(2,)), [(A(3),)]),
    "tile(()) of 0-d": (lambda lib, x: x.tile(()), [(A(),)]),
    # constant padding: (left, right) of the last dim first; negative pads crop
    "pad (1, 2)": (
        lambda lib, x: lib.constant_pad_nd(x, (1, 2)),
        [(A(3, 4),), (A(3, 4, layout=T),), (A(4, layout=S),)],
    ),
    "pad (1, 0, 0, 2) with 1.5": (
        lambda lib, x: lib.constant_pad_nd(x, (1, 0, 0, 2), 1.5),
        [(A(3, 4),)],
    ),
    "pad cropping (-1, 1, 2, -1)": (
        lambda lib, x: lib.constant_pad_nd(x, (-1, 1, 2, -1)),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "pad cropping to empty (-2, -2)": (
        lambda lib, x: lib.constant_pad_nd(x, (-2, -2)) * 2,
        [(A(3, 4),)],
    ),
    "pad () of 0-d": (lambda lib, x: lib.constant_pad_nd(x, ()), [(A(),)]),
    "pad of empty (1, 1)": (lambda lib, x: lib.constant_pad_nd(x, (1, 1)), [(A(0, 2),)]),
    # unflatten (a view)
    "unflatten(1, (2, 2))": (
        lambda lib, x: x.unflatten(1, (2, 2)),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "unflatten(-1, (2, -1))": (lambda lib, x: lib.unflatten(x, -1, (2, -1)), [(A(2, 3, 4),)]),
    "unflatten(0, (1, -1, 1))": (lambda lib, x: x.unflatten(0, (1, -1, 1)), [(A(6, layout=S),)]),
    "unflatten of empty": (lambda lib, x: x.unflatten(1, (2, 0)) * 2, [(A(3, 0),)]),
    # existing view ops at their edges
    "movedim((0, 1), (2, 0))": (lambda lib, x: x.movedim((0, 1), (2, 0)), [(A(2, 3, 4),)]),
    "movedim(0, 0) of 0-d": (lambda lib, x: lib.movedim(x, 0, 0), [(A(),)]),
    "chunk(3, -1)": (lambda lib, x: x.chunk(3, -1), [(A(2, 7),), (A(2, 7, layout=T),)]),
    "chunk(2) of empty": (lambda lib, x: tuple(c * 2 for c in x.chunk(2)), [(A(0, 2),)]),
    "split([1, 3], -1)": (lambda lib, x: lib.split(x, [1, 3], -1), [(A(2, 4),)]),
    # split_with_sizes and the unsafe_ ops: split's pieces under torch's other nodes
    "split_with_sizes([1, 3], -1)": (
        lambda lib, x: x.split_with_sizes([1, 3], -1),
        [(A(2, 4),), (A(2, 4, layout=T),)],
    ),
    "unsafe_split(2)": (lambda lib, x: lib.unsafe_split(x, 2), [(A(5, 2),), (A(3, 2, layout=T),)]),
    "unsafe_split_with_sizes((2, 0, 1), 1)": (
        lambda lib, x: x.unsafe_split_with_sizes((2, 0, 1), 1),
        [(A(2, 3),)],
    ),
    "unsafe_chunk(3, -1)": (lambda lib, x: x.unsafe_chunk(3, -1), [(A(2, 7),)]),
    "unsafe_chunk(2) of empty": (
        lambda lib, x: tuple(c * 2 for c in lib.unsafe_chunk(x, 2)),
        [(A(0, 2),)],
    ),
    "unbind(-1)": (lambda lib, x: x.unbind(-1), [(A(2, 3),), (A(2, 3, layout=T),)]),
    "diagonal(-1, 2, 1)": (lambda lib, x: x.diagonal(-1, 2, 1), [(A(2, 3, 4),)]),
    "narrow(-1, -3, 2)": (lambda lib, x: x.narrow(-1, -3, 2), [(A(2, 4, layout=T),)]),
    "narrow(0, tensor(1), 1)": (lambda lib, x: x.narrow(0, lib.tensor(1), 1), [(A(3, 2),)]),
    "masked_fill (broadcast mask)": (
        lambda lib, x: x.masked_fill(lib.tensor([True, False, True, False]), 1.5),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "masked_fill (0-d tensor value)": (
        lambda lib, x, v: x.masked_fill(x.detach() > 0, v),
        [(A(3, 4), A())],
    ),
}

# einsum: name -> (equation, [inputs, ...])
EINSUMS = {
    "matmul": ("ij,jk->ik", [(A(2, 3), A(3, 4)), (A(2, 3, layout=T), A(3, 4, layout=S))]),
    "batch matmul": ("bij,bjk->bik", [(A(2, 2, 3), A(2, 3, 2))]),
    "trace": ("ii", [(A(3, 3),), (A(3, 3, layout=T),)]),
    "diagonal (a view)": ("ii->i", [(A(3, 3),), (A(3, 3, layout=T),)]),
    "batch diagonal": ("bii->bi", [(A(2, 3, 3),)]),
    "outer": ("i,j->ij", [(A(3), A(4))]),
    "implicit matmul": ("ij,jk", [(A(2, 3), A(3, 4))]),
    "implicit transpose": ("ba", [(A(2, 3),)]),
    "ellipsis, broadcast batch": ("...ij,...jk->...ik", [(A(2, 2, 3), A(3, 2))]),
    "ellipsis, implicit": ("...i,...i", [(A(2, 1, 3), A(4, 3))]),
    "ellipsis transpose (a view)": ("...ij->...ji", [(A(2, 3, 4),)]),
    "column sums": ("ij->j", [(A(3, 4),)]),
    "dot": ("i,i->", [(A(4), A(4, layout=S))]),
    "elementwise": ("ij,ij->ij", [(A(3, 4), A(3, 4, layout=T))]),
    "size-1 label broadcasts": ("ij,ij->i", [(A(3, 4), A(1, 4))]),
    "diagonal times vector": ("ii,i->i", [(A(3, 3), A(3))]),
    "three operands": ("ij,jk,kl->il", [(A(2, 3), A(3, 2), A(2, 2))]),
    "scalars": (",->", [(A(), A())]),
    "spaces": (" ij , jk -> ki ", [(A(2, 3), A(3, 2))]),
    "empty contraction": ("ij,jk->ik", [(A(2, 0), A(0, 3))]),
}

# softmax as a Tensor method and a top-level function: they call F.softmax / F.log_softmax,
# whose gradients tests/teachgrad/nn checks; here, that they reach it with torch's signature
SOFTMAX = {
    "x.softmax(-1)": (lambda lib, x: x.softmax(-1), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "softmax(x, 0)": (lambda lib, x: lib.softmax(x, 0), [(A(3, 4),)]),
    "x.log_softmax(1)": (lambda lib, x: x.log_softmax(1), [(A(2, 3),)]),
    "log_softmax(x, -1, dtype=float64)": (
        lambda lib, x: lib.log_softmax(x, -1, dtype=lib.float64),
        [(A(5, layout=S),)],
    ),
}

CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, arg_list) in OPS.items()
    for args in arg_list
] + [
    pytest.param(
        lambda lib, *xs, eq=eq: lib.einsum(eq, *xs),
        args,
        id=f"einsum {name} {eq!r}-{case_id(args)}",
    )
    for name, (eq, arg_list) in EINSUMS.items()
    for args in arg_list
]


# --------------------------------------------------------------------------- gradients


# gradcheck refuses empty inputs (NumPy gives them stride 0, which it reads as expand());
# an empty Jacobian has nothing to compare anyway: those cases are checked against torch only
NONEMPTY_CASES = [c for c in CASES if "empty" not in c.id]


@pytest.mark.parametrize("fn,args", NONEMPTY_CASES)
def test_gradcheck_and_gradgradcheck(fn, args):
    """First and second derivatives (reverse and forward mode) agree with finite differences."""
    run_gradchecks(fn, args)


SOFTMAX_CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, arg_list) in SOFTMAX.items()
    for args in arg_list
]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", CASES + SOFTMAX_CASES)
def test_matches_torch(torch, fn, args, dtype):
    """Value, dtype, node name (CumsumBackward0, GatherBackward0, RepeatBackward0, the
    ViewBackward0/SumBackward1/MulBackward0/PermuteBackward0 torch's einsum ends in ...)
    and the input gradients equal torch's."""
    compare_with_torch(torch, fn, args, dtype)


def test_repeated_indices_accumulate_gradients():
    """gather, index_select and scatter_add read or write x[0] twice: its gradient is 2."""
    for pick in (
        lambda x: x.gather(0, tg.tensor([0, 0, 2])),
        lambda x: x.index_select(0, tg.tensor([0, 2, 0])),
    ):
        x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        pick(x).sum().backward()
        assert x.grad.tolist() == [2.0, 0.0, 1.0]
    src = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = tg.zeros(2).scatter_add(0, tg.tensor([1, 1, 0]), src)
    assert out.tolist() == [3.0, 3.0]
    (out * tg.tensor([10.0, 100.0])).sum().backward()
    assert src.grad.tolist() == [100.0, 100.0, 10.0]


def test_scatter_gradient_is_zero_where_overwritten():
    """x.scatter(0, [1], src): x[1] was replaced, so it gets no gradient; src gets x[1]'s."""
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    src = tg.tensor([5.0], requires_grad=True)
    out = x.scatter(0, tg.tensor([1]), src)
    assert out.tolist() == [1.0, 5.0, 3.0]
    (out * tg.tensor([10.0, 100.0, 1000.0])).sum().backward()
    assert x.grad.tolist() == [10.0, 0.0, 1000.0]
    assert src.grad.tolist() == [100.0]


@pytest.mark.parametrize(
    "pick",
    [
        lambda x, i: x.gather(0, i),
        lambda x, i: x.index_select(0, i),
        lambda x, i: x.scatter(0, i, x[:2] * 2),
        lambda x, i: x.scatter_add(0, i, x[:2] * 2),
    ],
    ids=["gather", "index_select", "scatter", "scatter_add"],
)
def test_index_changed_in_place_after_use_is_caught(torch, pick):
    """The index is saved for backward (grad_fn._saved_index, as in torch): changing it in
    place before backward raises torch's error instead of sending gradients to wrong places."""
    for lib in (tg, torch):
        x = lib.ones(3, requires_grad=True)
        index = lib.tensor([0, 1])
        y = pick(x, index)
        assert y.grad_fn._saved_index.tolist() == [0, 1]
        index.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_cumsum_gradient_is_a_reversed_running_sum():
    """out[i] = x[0] + ... + x[i], so x[j] gets the sum of the output gradients from j on."""
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x.cumsum(0).backward(tg.tensor([1.0, 10.0, 100.0]))
    assert x.grad.tolist() == [111.0, 110.0, 100.0]


# --------------------------------------------------------------------------- dtypes

# name -> fn(lib): no gradients involved, values and dtypes must equal torch's
DTYPES = {
    "cumsum of int32 is int64": lambda lib: lib.tensor([1, 2, 3], dtype=lib.int32).cumsum(0),
    "cumsum of bool is int64": lambda lib: lib.tensor([True, False, True]).cumsum(0),
    "cumsum(dtype=float32) of int": lambda lib: lib.tensor([1, 2]).cumsum(0, dtype=lib.float32),
    "gather of int": lambda lib: lib.tensor([[1, 2], [3, 4]]).gather(1, lib.tensor([[1], [0]])),
    "index_select of bool": lambda lib: lib.tensor([True, False]).index_select(
        0, lib.tensor([1, 1])
    ),
    "scatter of a float value into int": lambda lib: lib.zeros(3, dtype=lib.int64).scatter(
        0, lib.tensor([1]), 2.7
    ),
    "scatter_add of int": lambda lib: lib.zeros(3, dtype=lib.int64).scatter_add(
        0, lib.tensor([2, 2]), lib.tensor([4, 5])
    ),
    "scatter reduce=multiply": lambda lib: lib.full((3,), 2.0).scatter(
        0, lib.tensor([0, 0]), lib.tensor([3.0, 5.0]), reduce="multiply"
    ),
    "tril of bool": lambda lib: lib.ones(2, 3, dtype=lib.bool).tril(),
    "flip of int": lambda lib: lib.arange(4).flip(0),
    "roll of int": lambda lib: lib.arange(6).reshape(2, 3).roll(1, 1),
    "repeat of bool": lambda lib: lib.tensor([True, False]).repeat(2, 2),
    "pad of int with 2.7": lambda lib: lib.constant_pad_nd(lib.tensor([1, 2]), (1, 1), 2.7),
    "einsum of int": lambda lib: lib.einsum(
        "ij,jk", lib.ones(2, 3, dtype=lib.int64), lib.ones(3, 2, dtype=lib.int64)
    ),
    "einsum without a sum promotes": lambda lib: lib.einsum(
        "i,j->ij", lib.ones(2, dtype=lib.float64), lib.ones(3, dtype=lib.int64)
    ),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fn", DTYPES.values(), ids=DTYPES.keys())
def test_dtypes_match_torch(torch, fn):
    """Integer, bool and mixed inputs give torch's result dtype and values."""
    got, want = fn(tg), fn(torch)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert got.tolist() == want.tolist()


def test_cumsum_with_dtype_sends_the_gradient_back_in_the_input_dtype(torch):
    """cumsum(dtype=float32) of a float64 input computes in float32 within one CumsumBackward0
    node; the input's gradient (a reversed running sum) comes back as float64, as in torch."""
    for lib in (tg, torch):
        x = lib.tensor([0.1, 0.2, 0.3], dtype=lib.float64, requires_grad=True)
        y = x.cumsum(0, dtype=lib.float32)
        y.backward(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float32))
        assert y.dtype == lib.float32 and x.grad.dtype == lib.float64
        assert node_name(y) == "CumsumBackward0"
        assert x.grad.tolist() == [6.0, 5.0, 3.0]


# --------------------------------------------------------------------------- views and copies


# name -> (fn(lib, x), is a view of x in torch)
RESULTS = {
    "unflatten(2, (2, 2))": (lambda lib, x: x.unflatten(2, (2, 2)), True),
    "unflatten(-1, (-1, 1))": (lambda lib, x: x.unflatten(-1, (-1, 1)), True),
    "unflatten of a transposed view": (lambda lib, x: x.transpose(0, 2).unflatten(0, (2, 2)), True),
    "einsum('ijk->kji')": (lambda lib, x: lib.einsum("ijk->kji", x), True),
    "einsum('ijj->ji') (diagonal)": (lambda lib, x: lib.einsum("ijj->ji", x[:, :, :3]), True),
    "einsum('ij...->...') (a sum)": (lambda lib, x: lib.einsum("ij...->...", x), False),
    "flip(0)": (lambda lib, x: x.flip(0), False),
    "flip(())": (lambda lib, x: x.flip(()), False),
    "roll(1, 2)": (lambda lib, x: x.roll(1, 2), False),
    "repeat(1, 1, 1)": (lambda lib, x: x.repeat(1, 1, 1), False),
    "tile(())": (lambda lib, x: x.tile(()), False),
    "tril()": (lambda lib, x: x.tril(), False),
    "constant_pad_nd(())": (lambda lib, x: lib.constant_pad_nd(x, ()), False),
    "cumsum(0)": (lambda lib, x: x.cumsum(0), False),
    "gather": (lambda lib, x: x.gather(0, lib.zeros(1, 3, 4, dtype=lib.int64)), False),
    "index_select": (lambda lib, x: x.index_select(1, lib.tensor([0, 1, 2])), False),
    "scatter": (lambda lib, x: x.scatter(0, lib.zeros(1, 1, 1, dtype=lib.int64), 0.5), False),
}


@pytest.mark.parametrize("fn,is_view", RESULTS.values(), ids=RESULTS.keys())
def test_views_share_memory_and_version_counter_copies_do_not(torch, fn, is_view):
    """An in-place change of the base shows in a view and bumps its _version, and writing
    through the view changes the base; a copy sees neither. Same as torch."""
    ours, torchs = (what_changes_show(lib, fn, write_back=is_view) for lib in (tg, torch))
    assert ours == torchs
    assert ours[0] == is_view  # v._base is x


# --------------------------------------------------------------------------- errors

ERRORS = {
    "cumsum dim out of range": (
        lambda lib: lib.ones(2, 3).cumsum(2),
        IndexError,
        "Dimension out of range",
    ),
    "gather with a float index": (
        lambda lib: lib.ones(3, 4).gather(1, lib.tensor([[0.0]])),
        RuntimeError,
        "gather(): Expected dtype int32/int64 for index",
    ),
    "gather with an index of another rank": (
        lambda lib: lib.ones(3, 4).gather(1, lib.tensor([0, 1])),
        RuntimeError,
        "Index tensor must have the same number of dimensions as input tensor",
    ),
    "gather with an index larger than the input": (
        lambda lib: lib.ones(3, 4).gather(0, lib.zeros(2, 5, dtype=lib.int64)),
        RuntimeError,
        "Size does not match at dimension 1 expected index [2, 5] to be no larger than self [3, 4] "
        "apart from dimension 0",
    ),
    "gather index out of bounds": (
        lambda lib: lib.ones(3, 4).gather(1, lib.tensor([[0, 4]])),
        RuntimeError,
        "index 4 is out of bounds for dimension 1 with size 4",
    ),
    "gather with a negative index": (
        lambda lib: lib.ones(3, 4).gather(1, lib.tensor([[-1]])),
        RuntimeError,
        "index -1 is out of bounds for dimension 1 with size 4",
    ),
    "gather dim out of range": (
        lambda lib: lib.ones(3, 4).gather(2, lib.zeros(1, 1, dtype=lib.int64)),
        IndexError,
        "Dimension out of range",
    ),
    "scatter of another dtype": (
        lambda lib: lib.ones(3, 4).scatter(
            0, lib.zeros(1, 1, dtype=lib.int64), lib.ones(1, 1, dtype=lib.float64)
        ),
        RuntimeError,
        "scatter(): Expected self.dtype to be equal to src.dtype",
    ),
    "scatter with an index larger than src": (
        lambda lib: lib.ones(3, 4).scatter(0, lib.zeros(2, 4, dtype=lib.int64), lib.ones(2, 2)),
        RuntimeError,
        "Expected index [2, 4] to be no larger than self [3, 4] apart from dimension 0 and to be no "
        "larger size than src [2, 2]",
    ),
    "scatter with a float index": (
        lambda lib: lib.ones(3).scatter(0, lib.tensor([0.0]), 1.0),
        RuntimeError,
        "scatter(): Expected dtype int32/int64 for index",
    ),
    "scatter with an index of another rank": (
        lambda lib: lib.ones(3, 4).scatter(0, lib.tensor([0]), lib.ones(2, 4)),
        RuntimeError,
        "Index tensor must have the same number of dimensions as self tensor",
    ),
    "scatter index out of bounds": (
        lambda lib: lib.ones(3, 4).scatter(1, lib.tensor([[4]]), 1.0),
        RuntimeError,
        "index 4 is out of bounds for dimension 1 with size 4",
    ),
    "scatter with an unknown reduce": (
        lambda lib: lib.ones(3).scatter(0, lib.tensor([0]), 1.0, reduce="mean"),
        RuntimeError,
        "reduce argument must be either add or multiply.",
    ),
    "backward through scatter with reduce": (
        lambda lib: (
            lib.ones(3, requires_grad=True)
            .scatter(0, lib.tensor([0]), lib.ones(1), reduce="add")
            .sum()
            .backward()
        ),
        RuntimeError,
        "derivative for aten::scatter is not implemented",
    ),
    "scatter_add of a number": (
        lambda lib: lib.ones(3).scatter_add(0, lib.tensor([0]), 1.0),
        TypeError,
        "must be Tensor, not float",
    ),
    "scatter_add index out of bounds": (
        lambda lib: lib.ones(3).scatter_add(0, lib.tensor([3]), lib.ones(1)),
        RuntimeError,
        "index 3 is out of bounds for dimension 0 with size 3",
    ),
    "index_select with a 2-d index": (
        lambda lib: lib.ones(3, 4).index_select(0, lib.tensor([[2, 0]])),
        IndexError,
        "index_select(): Index is supposed to be a vector",
    ),
    "index_select with a float index": (
        lambda lib: lib.ones(3, 4).index_select(0, lib.tensor([1.0])),
        RuntimeError,
        "index_select(): Expected dtype int32 or int64 for index",
    ),
    "index_select out of range": (
        lambda lib: lib.ones(3, 4).index_select(0, lib.tensor([3])),
        IndexError,
        "index out of range in self",
    ),
    "index_select with a negative index": (
        lambda lib: lib.ones(3, 4).index_select(0, lib.tensor([-1])),
        IndexError,
        "index out of range in self",
    ),
    "tril of a vector": (
        lambda lib: lib.ones(3).tril(),
        RuntimeError,
        "tril: input tensor must have at least 2 dimensions",
    ),
    "triu of a 0-d tensor": (
        lambda lib: lib.ones(()).triu(),
        RuntimeError,
        "triu: input tensor must have at least 2 dimensions",
    ),
    "flip of a repeated dim": (
        lambda lib: lib.ones(3, 4).flip((0, -2)),
        RuntimeError,
        "dim 0 appears multiple times in the list of dims",
    ),
    "flip dim out of range": (
        lambda lib: lib.ones(3, 4).flip(2),
        IndexError,
        "Dimension out of range",
    ),
    "roll with more shifts than dims": (
        lambda lib: lib.ones(3, 4).roll((1, 2), 0),
        RuntimeError,
        "shifts and dimensions must align. shifts: 2, dims:1",
    ),
    "roll of several shifts without dims": (
        lambda lib: lib.ones(3, 4).roll((1, 2)),
        RuntimeError,
        "shifts and dimensions must align. shifts: 2, dims:0",
    ),
    "roll without shifts": (
        lambda lib: lib.ones(3, 4).roll((), ()),
        RuntimeError,
        "`shifts` required",
    ),
    "roll of a 0-d tensor along a dim": (
        lambda lib: lib.ones(()).roll(1, 0),
        IndexError,
        "Dimension specified as 0 but tensor has no dimensions",
    ),
    "repeat with too few counts": (
        lambda lib: lib.ones(3, 4).repeat(2),
        RuntimeError,
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor",
    ),
    "repeat with a negative count": (
        lambda lib: lib.ones(3, 4).repeat(-1, 2),
        RuntimeError,
        "Trying to create tensor with negative dimension -3: [-3, 8]",
    ),
    "tile with a negative count": (
        lambda lib: lib.ones(3, 4).tile(-1),
        RuntimeError,
        "Trying to create tensor with negative dimension -4: [3, -4]",
    ),
    "pad of odd length": (
        lambda lib: lib.constant_pad_nd(lib.ones(3, 4), (1, 2, 3)),
        RuntimeError,
        "Length of pad must be even but instead it equals 3",
    ),
    "pad longer than the dims": (
        lambda lib: lib.constant_pad_nd(lib.ones(3, 4), (1, 2, 3, 4, 5, 6)),
        RuntimeError,
        "Length of pad should be no more than twice the number of dimensions of the input.",
    ),
    "pad cropping more than there is": (
        lambda lib: lib.constant_pad_nd(lib.ones(3, 4), (-3, -2)),
        RuntimeError,
        "narrow(): length must be non-negative.",
    ),
    "pad cropping past the far side of dim 0": (
        lambda lib: lib.constant_pad_nd(lib.ones(4, 3), (0, 0, 1, -6)),
        RuntimeError,
        "narrow(): length must be non-negative.",
    ),
    "unflatten to the wrong size": (
        lambda lib: lib.ones(3, 4).unflatten(1, (3, 2)),
        RuntimeError,
        "unflatten: Provided sizes [3, 2] don't multiply up to the size of dim 1 (4) in the input tensor",
    ),
    "unflatten with -1 that does not divide": (
        lambda lib: lib.ones(3, 4).unflatten(1, (3, -1)),
        RuntimeError,
        "unflatten: Provided sizes [3, -1] don't multiply up to the size of dim 1 (4) in the input tensor",
    ),
    "unflatten to no sizes": (
        lambda lib: lib.ones(3, 4).unflatten(1, ()),
        RuntimeError,
        "unflatten: sizes must be non-empty",
    ),
    "unflatten with two -1": (
        lambda lib: lib.ones(3, 4).unflatten(1, (-1, -1)),
        RuntimeError,
        "only one dimension can be inferred",
    ),
    "unflatten of a 0-d tensor": (
        lambda lib: lib.ones(()).unflatten(0, (1,)),
        RuntimeError,
        "Dimension specified as 0 but tensor has no dimensions",
    ),
    "unflatten dim out of range": (
        lambda lib: lib.ones(3, 4).unflatten(2, (2, 2)),
        IndexError,
        "Dimension out of range",
    ),
    "einsum with more operands": (
        lambda lib: lib.einsum("ij", lib.ones(2, 2), lib.ones(2, 2)),
        RuntimeError,
        "einsum(): more operands were provided than specified in the equation",
    ),
    "einsum with fewer operands": (
        lambda lib: lib.einsum("ij,jk", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): fewer operands were provided than specified in the equation",
    ),
    "einsum with too many subscripts": (
        lambda lib: lib.einsum("ijk", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): the number of subscripts in the equation (3) does not match the number of "
        "dimensions (2) for operand 0 and no ellipsis was given",
    ),
    "einsum with too many subscripts and an ellipsis": (
        lambda lib: lib.einsum("ijk...", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): the number of subscripts in the equation (3) is more than the number of dimensions (2) for operand 0",
    ),
    "einsum output letter not in the inputs": (
        lambda lib: lib.einsum("ij->k", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): output subscript k does not appear in the equation for any input operand",
    ),
    "einsum output letter twice": (
        lambda lib: lib.einsum("ij->ii", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): output subscript i appears more than once in the output",
    ),
    "einsum invalid subscript": (
        lambda lib: lib.einsum("i1", lib.ones(2, 2)),
        RuntimeError,
        "einsum(): invalid subscript given at index 1 in the equation string, subscripts must be in [a-zA-Z]",
    ),
    "einsum invalid output subscript": (
        lambda lib: lib.einsum("i->$", lib.ones(2)),
        RuntimeError,
        "einsum(): invalid subscript given at index 3 in the equation string",
    ),
    "einsum repeated letter of two sizes": (
        lambda lib: lib.einsum("ii", lib.ones(3, 4)),
        RuntimeError,
        "einsum(): subscript i is repeated for operand 0 but the sizes don't match, 4 != 3",
    ),
    "einsum letter of two sizes": (
        lambda lib: lib.einsum("ij,jk", lib.ones(3, 4), lib.ones(3, 4)),
        RuntimeError,
        "einsum(): subscript j has size 3 for operand 1 which does not broadcast with previously seen size 4",
    ),
    "einsum ellipsis of two sizes": (
        lambda lib: lib.einsum("...,...", lib.ones(2, 3), lib.ones(4, 3)),
        RuntimeError,
        "dimension 0 covered by ellipsis in operand 1",
    ),
    "einsum stray dot": (
        lambda lib: lib.einsum("i.j", lib.ones(2)),
        RuntimeError,
        "einsum(): found '.' for operand 0 that is not part of any ellipsis",
    ),
    "einsum two ellipses": (
        lambda lib: lib.einsum("......", lib.ones(2)),
        RuntimeError,
        "einsum(): found '.' for operand 0 for which an ellipsis was already found",
    ),
    "einsum stray dot in the output": (
        lambda lib: lib.einsum("i->i.", lib.ones(2)),
        RuntimeError,
        "einsum(): found '.' for output that is not part of any ellipsis (...)",
    ),
    "einsum sum of two dtypes": (
        lambda lib: lib.einsum("i,i", lib.ones(3, dtype=lib.float64), lib.ones(3)),
        RuntimeError,
        "expected scalar type Double but found Float",
    ),
    "einsum without operands": (
        lambda lib: lib.einsum("i"),
        ValueError,
        "einsum(): must specify the equation string and at least one operand",
    ),
    "movedim of a repeated source": (
        lambda lib: lib.ones(2, 3, 4).movedim((0, 0), (1, 2)),
        RuntimeError,
        "movedim: repeated dim in `source` ([0, 0])",
    ),
    "movedim to a repeated destination": (
        lambda lib: lib.ones(2, 3, 4).movedim((0, 1), (1, 1)),
        RuntimeError,
        "movedim: repeated dim in `destination` ([1, 1])",
    ),
    "movedim of mismatched lengths": (
        lambda lib: lib.ones(2, 3, 4).movedim((0, 1), (1,)),
        RuntimeError,
        "movedim: Invalid source or destination dims: source ([0, 1] dims) should contain the same "
        "number of dims as destination ([1] dims)",
    ),
    "chunk of a 0-d tensor": (
        lambda lib: lib.ones(()).chunk(2),
        RuntimeError,
        "chunk expects at least a 1-dimensional tensor",
    ),
    "split of a 0-d tensor": (
        lambda lib: lib.ones(()).split(1),
        RuntimeError,
        "split expects at least a 1-dimensional tensor",
    ),
    "split into size 0": (
        lambda lib: lib.ones(4).split(0),
        RuntimeError,
        "split_size can only be 0 if dimension size is 0, but got dimension size of 4",
    ),
    "split with a negative size": (
        lambda lib: lib.ones(3).split([4, -1]),
        RuntimeError,
        "split_with_sizes expects split_sizes have only non-negative entries, but got split_sizes=[4, -1]",
    ),
    "split with sizes of the wrong sum": (
        lambda lib: lib.ones(2, 4).split([1, 2], -1),
        RuntimeError,
        "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension -1)",
    ),
    "split_with_sizes of sizes of the wrong sum": (
        lambda lib: lib.split_with_sizes(lib.ones(4), [1, 2]),
        RuntimeError,
        "split_with_sizes expects split_sizes to sum exactly to 4 (input tensor's size at dimension 0)",
    ),
    "split_with_sizes of one size": (
        lambda lib: lib.ones(4).split_with_sizes(2),
        TypeError,
        "split_with_sizes(): argument 'split_sizes' (position 1) must be tuple of ints, not int",
    ),
    "unsafe_split with a negative size": (
        lambda lib: lib.ones(4).unsafe_split(-1),
        RuntimeError,
        "split expects split_size be non-negative, but got split_size=-1",
    ),
    "unsafe_split of a list": (
        lambda lib: lib.unsafe_split(lib.ones(4), [1, 3]),
        TypeError,
        "unsafe_split(): argument 'split_size' (position 2) must be int, not list",
    ),
    "unsafe_split_with_sizes with a negative size": (
        lambda lib: lib.ones(3).unsafe_split_with_sizes([4, -1]),
        RuntimeError,
        "split_with_sizes expects split_sizes have only non-negative entries",
    ),
    "unsafe_split_with_sizes of a 0-d tensor": (
        lambda lib: lib.unsafe_split_with_sizes(lib.ones(()), [1]),
        RuntimeError,
        "split expects at least a 1-dimensional tensor",
    ),
    "unsafe_chunk into 0": (
        lambda lib: lib.ones(3).unsafe_chunk(0),
        RuntimeError,
        "chunk expects `chunks` to be greater than 0, got: 0",
    ),
    "unsafe_chunk along a dim out of range": (
        lambda lib: lib.ones(3).unsafe_chunk(2, 1),
        IndexError,
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)",
    ),
    "unbind of a 0-d tensor": (
        lambda lib: lib.ones(()).unbind(),
        IndexError,
        "Dimension specified as 0 but tensor has no dimensions",
    ),
    "narrow of a negative length": (
        lambda lib: lib.ones(4).narrow(0, 1, -1),
        RuntimeError,
        "narrow(): length must be non-negative.",
    ),
    "narrow start out of range": (
        lambda lib: lib.ones(2, 3).narrow(1, 4, 0),
        IndexError,
        "start out of range (expected to be in range of [-3, 3], but got 4)",
    ),
    "narrow of a 0-d tensor": (
        lambda lib: lib.ones(()).narrow(0, 0, 1),
        RuntimeError,
        "narrow() cannot be applied to a 0-dim tensor.",
    ),
    "masked_fill with a mask that does not broadcast": (
        lambda lib: lib.ones(3, 4).masked_fill(lib.tensor([True, False]), 1.0),
        RuntimeError,
        "The size of tensor a (2) must match the size of tensor b (4) at non-singleton dimension 1",
    ),
}


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("fn,exc,phrase", ERRORS.values(), ids=ERRORS.keys())
def test_bad_arguments_raise_torchs_error(torch, fn, exc, phrase):
    """Bad dims, indices, sizes and equations fail with torch's exception class and key phrase."""
    assert_raises_like_torch(torch, fn, exc, phrase)

"""Shape ops, basic and advanced indexing, cat/stack.

* gradients are right (gradcheck, gradgradcheck in float64), for contiguous and
  non-contiguous inputs;
* values, gradients, dtypes and node names match PyTorch;
* views share memory and the version counter with their base: ``_base``,
  ``data_ptr()``, ``storage_offset()``, ``stride()`` and ``is_contiguous()`` equal
  torch's for the same chain of views, and in-place changes show through both ways;
  advanced indexing, cat and stack return copies;
* bad shapes, dims and indices raise torch's exception class and key phrase.
"""

import numpy as np
import pytest

import teachgrad as tg

from ._cases import (
    A,
    assert_raises_like_torch,
    case_id,
    compare_with_torch,
    run_gradchecks,
    view_base,
    what_changes_show,
)

T = "transposed"
S = "strided"

# name -> (fn(lib, x), inputs)
VIEWS = {
    "reshape(4, 3)": (lambda lib, x: x.reshape(4, 3), [A(3, 4), A(3, 4, layout=T)]),
    "reshape(-1)": (lambda lib, x: x.reshape(-1), [A(2, 3, 4), A(), A(6, layout=S)]),
    "reshape((2, -1))": (lambda lib, x: lib.reshape(x, (2, -1)), [A(2, 3, 4), A(3, 4, layout=T)]),
    "view(2, 6)": (lambda lib, x: x.view(2, 6), [A(3, 4), A(2, 3, 2)]),
    "view(-1, 4)": (lambda lib, x: x.view(-1, 4), [A(2, 3, 4)]),
    "view(()) of 1 element": (lambda lib, x: x.view(()), [A(1, 1)]),
    "view_as": (lambda lib, x: x.view_as(lib.ones(4, 3)), [A(3, 4)]),
    "flatten()": (lambda lib, x: x.flatten(), [A(2, 3, 4), A(3, 4, layout=T), A()]),
    "flatten(1)": (lambda lib, x: lib.flatten(x, 1), [A(2, 3, 4)]),
    "flatten(0, 1)": (lambda lib, x: x.flatten(0, 1), [A(2, 3, 4)]),
    "squeeze()": (lambda lib, x: x.squeeze(), [A(1, 3, 1, 2), A(3, 1, layout=T), A()]),
    "squeeze(0)": (lambda lib, x: x.squeeze(0), [A(1, 3, 1), A(2, 3)]),
    "squeeze((0, 2))": (lambda lib, x: lib.squeeze(x, (0, 2)), [A(1, 3, 1)]),
    "unsqueeze(0)": (lambda lib, x: x.unsqueeze(0), [A(3, 4), A(), A(3, 4, layout=T)]),
    "unsqueeze(-1)": (lambda lib, x: lib.unsqueeze(x, -1), [A(3, 4), A(5, layout=S)]),
    "transpose(0, 1)": (lambda lib, x: x.transpose(0, 1), [A(3, 4), A(2, 3, 4)]),
    "transpose(-1, -3)": (lambda lib, x: lib.transpose(x, -1, -3), [A(2, 3, 4)]),
    "t()": (lambda lib, x: x.t(), [A(3, 4), A(3, 4, layout=T), A(5), A()]),
    ".T": (lambda lib, x: x.T, [A(2, 3, 4), A(3, 4)]),
    ".mT": (lambda lib, x: x.mT, [A(2, 3, 4)]),
    "permute(2, 0, 1)": (lambda lib, x: x.permute(2, 0, 1), [A(2, 3, 4)]),
    "permute((1, 0))": (lambda lib, x: lib.permute(x, (1, 0)), [A(3, 4, layout=T)]),
    "movedim(0, -1)": (lambda lib, x: x.movedim(0, -1), [A(2, 3, 4)]),
    "expand(3, 4)": (lambda lib, x: x.expand(3, 4), [A(3, 1), A(4), A()]),
    "expand(2, -1, 4)": (lambda lib, x: x.expand(2, -1, 4), [A(3, 1), A(1, 3, 1)]),
    "expand_as": (lambda lib, x: x.expand_as(lib.ones(2, 3, 4)), [A(3, 1)]),
    "narrow(1, 1, 2)": (lambda lib, x: x.narrow(1, 1, 2), [A(3, 4), A(3, 4, layout=T)]),
    "narrow(0, -2, 2)": (lambda lib, x: lib.narrow(x, 0, -2, 2), [A(5), A(3, 4)]),
    "select(0, 1)": (lambda lib, x: x.select(0, 1), [A(3, 4), A(3, 4, layout=T)]),
    "select(-1, -1)": (lambda lib, x: lib.select(x, -1, -1), [A(2, 3, 4), A(5)]),
    "x[1]": (lambda lib, x: x[1], [A(3, 4), A(5), A(3, 4, layout=T)]),
    "x[-1]": (lambda lib, x: x[-1], [A(3, 4)]),
    "x[1:3]": (lambda lib, x: x[1:3], [A(4, 3), A(5, layout=S)]),
    "x[::2]": (lambda lib, x: x[::2], [A(5), A(4, 3)]),
    "x[:, 1:-1:2]": (lambda lib, x: x[:, 1:-1:2], [A(3, 5), A(3, 5, layout=T)]),
    "x[-3:-1, ::3]": (lambda lib, x: x[-3:-1, ::3], [A(4, 5)]),
    "x[None]": (lambda lib, x: x[None], [A(3, 4), A()]),
    "x[..., None]": (lambda lib, x: x[..., None], [A(3, 4)]),
    "x[..., 0]": (lambda lib, x: x[..., 0], [A(2, 3, 4)]),
    "x[1, ..., None, -2]": (lambda lib, x: x[1, ..., None, -2], [A(2, 3, 4)]),
    "x[:, None, 1]": (lambda lib, x: x[:, None, 1], [A(3, 4)]),
    "x[...]": (lambda lib, x: x[...], [A(3, 4)]),
    "x[2:2] (empty)": (lambda lib, x: x[2:2] * 2, [A(4)]),
    "x[1:][::2][0]": (lambda lib, x: x[1:][::2][0], [A(5, 3)]),
    "x[tensor(1)] (0-d int)": (lambda lib, x: x[lib.tensor(1)], [A(3, 4), A(4)]),
    "x[t.sum()] (0-d int)": (lambda lib, x: x[lib.tensor([0, 2]).sum()], [A(3, 4)]),
    "x[1, tensor(-1)]": (lambda lib, x: x[1, lib.tensor(-1)], [A(3, 4)]),
    "x[np.int64(2)]": (lambda lib, x: x[np.int64(2)], [A(3, 4)]),
    "unbind(1)": (lambda lib, x: x.unbind(1), [A(3, 2)]),
    "split(2, dim=1)": (lambda lib, x: x.split(2, dim=1), [A(2, 5)]),
    "chunk(2)": (lambda lib, x: x.chunk(2), [A(4, 2), A(3)]),
    # advanced indexing: copies; repeated indices accumulate their gradients
    "x[[0, 2]]": (lambda lib, x: x[[0, 2]], [A(3, 4), A(4, layout=S)]),
    "x[[0, 0, 2, 0]] (repeats)": (lambda lib, x: x[[0, 0, 2, 0]], [A(3, 4), A(3)]),
    "x[tensor([2, -1])]": (lambda lib, x: x[lib.tensor([2, -1])], [A(3, 4), A(3, 4, layout=T)]),
    "x[2-d index tensor]": (lambda lib, x: x[lib.tensor([[0, 1], [1, 1]])], [A(3, 2)]),
    "x[[0, 1], [1, 1]]": (lambda lib, x: x[[0, 1], [1, 1]], [A(3, 4)]),
    "x[:, [0, 0, 1]]": (lambda lib, x: x[:, [0, 0, 1]], [A(3, 4), A(2, 3, 4)]),
    "x[1, [0, 2]]": (lambda lib, x: x[1, [0, 2]], [A(3, 4)]),
    "x[..., [1, 1]]": (lambda lib, x: x[..., [1, 1]], [A(2, 3, 4)]),
    "x[x > 0] (mask)": (lambda lib, x: x[x.detach() > 0], [A(3, 4), A(3, 4, layout=T), A(5)]),
    "x[row mask]": (lambda lib, x: x[lib.tensor([True, False, True])], [A(3, 4)]),
    "x[[True, False, True]]": (lambda lib, x: x[[True, False, True]], [A(3, 2)]),
    "x[mask, 1:]": (lambda lib, x: x[lib.tensor([False, True, True]), 1:], [A(3, 4)]),
}

VIEW_CASES = [
    pytest.param(fn, (x,), id=f"{name}-{case_id((x,))}")
    for name, (fn, inputs) in VIEWS.items()
    for x in inputs
]

JOINS = {
    "cat dim 0": (
        lambda lib, x, y: lib.cat([x, y]),
        [(A(2, 3), A(1, 3)), (A(2, 3, layout=T), A(4, 3))],
    ),
    "cat dim 1": (
        lambda lib, x, y: lib.cat((x, y), dim=1),
        [(A(2, 3), A(2, 1)), (A(2, 2, 2), A(2, 3, 2))],
    ),
    "cat dim -1": (
        lambda lib, x, y: lib.cat([x, y, x], -1),
        [(A(2, 3), A(2, 2, layout=T)), (A(3), A(2, layout=S))],
    ),
    "cat with an empty 1-d": (
        lambda lib, x, y: lib.cat([x, lib.ones(0, dtype=x.dtype), y]),
        [(A(2), A(3))],
    ),
    "stack dim 0": (lambda lib, x, y: lib.stack([x, y]), [(A(2, 3), A(2, 3)), (A(), A())]),
    "stack dim -1": (
        lambda lib, x, y: lib.stack((x, y, x), dim=-1),
        [(A(3, 2, layout=T), A(3, 2))],
    ),
    "stack dim 1": (lambda lib, x, y: lib.stack([x, y], 1), [(A(3), A(3, layout=S))]),
}

JOIN_CASES = [
    pytest.param(fn, args, id=f"{name}-{case_id(args)}")
    for name, (fn, arg_list) in JOINS.items()
    for args in arg_list
]


# --------------------------------------------------------------------------- gradcheck


@pytest.mark.parametrize("fn,args", VIEW_CASES + JOIN_CASES)
def test_shape_op_gradcheck_and_gradgradcheck(fn, args):
    """First and second derivatives of each shape/index op agree with finite differences."""
    run_gradchecks(fn, args)


# --------------------------------------------------------------------------- PyTorch oracle


@pytest.mark.filterwarnings(
    "ignore:The use of `x.T` on tensors:UserWarning"
)  # torch's, for .T of 3-d
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args", VIEW_CASES + JOIN_CASES)
def test_shape_op_matches_torch(torch, fn, args, dtype):
    """Value, dtype, node name (ViewBackward0, SelectBackward0, IndexBackward0 ...) and the
    input gradients equal torch's (repeated advanced indices add up)."""
    compare_with_torch(torch, fn, args, dtype)


def test_repeated_indices_accumulate_gradients():
    """x[[0, 0, 2]] sends two gradients to x[0]: they add (2, not 1)."""
    x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    x[[0, 0, 2]].sum().backward()
    assert x.grad.tolist() == [2.0, 0.0, 1.0]


# --------------------------------------------------------------------------- view metadata


# name -> (fn(lib, x), is a view in torch, can be written through in place)
CHAINS = {
    "x.view(6, 4)": (lambda lib, x: x.view(6, 4), True),
    "x.reshape(4, 6)": (lambda lib, x: x.reshape(4, 6), True),
    "x.flatten()": (lambda lib, x: x.flatten(), True),
    "x.flatten(1)": (lambda lib, x: x.flatten(1), True),
    "x.transpose(0, 2)": (lambda lib, x: x.transpose(0, 2), True),
    "x.permute(2, 0, 1)": (lambda lib, x: x.permute(2, 0, 1), True),
    "x.mT": (lambda lib, x: x.mT, True),
    "x[0].t()": (lambda lib, x: x[0].t(), True),
    "x.unsqueeze(1)": (lambda lib, x: x.unsqueeze(1), True),
    "x.unsqueeze(-1)": (lambda lib, x: x.unsqueeze(-1), True),
    "x[:, :1].squeeze(1)": (lambda lib, x: x[:, :1].squeeze(1), True),
    "x.narrow(2, 1, 2)": (lambda lib, x: x.narrow(2, 1, 2), True),
    "x.select(1, 2)": (lambda lib, x: x.select(1, 2), True),
    "x[1]": (lambda lib, x: x[1], True),
    "x[-1, ::2]": (lambda lib, x: x[-1, ::2], True),
    "x[..., 1:3]": (lambda lib, x: x[..., 1:3], True),
    "x[None, 1]": (lambda lib, x: x[None, 1], True),
    "x[:, ::2, ::3]": (lambda lib, x: x[:, ::2, ::3], True),
    "x[...]": (lambda lib, x: x[...], True),
    "x.view(-1)[3:9].view(2, 3)": (lambda lib, x: x.view(-1)[3:9].view(2, 3), True),
    "x.reshape(6, 4).t()[1:, ::2]": (lambda lib, x: x.reshape(6, 4).t()[1:, ::2], True),
    "x.transpose(1, 2)[1:].unsqueeze(0)": (lambda lib, x: x.transpose(1, 2)[1:].unsqueeze(0), True),
    "x.unbind(1)[2]": (lambda lib, x: x.unbind(1)[2], True),
    "x.split(3, dim=2)[1]": (lambda lib, x: x.split(3, dim=2)[1], True),
    "x.chunk(3, 1)[1]": (lambda lib, x: x.chunk(3, 1)[1], True),
    "x[:, :1].expand(2, 3, 4)": (lambda lib, x: x[:, :1].expand(2, 3, 4), "no-write"),
    "x[0].t().contiguous() (copy)": (lambda lib, x: x[0].t().contiguous(), False),
    "x[0].contiguous() (already: a view)": (lambda lib, x: x[0].contiguous(), True),
    "x[0].t().reshape(4, 3) (strided alias)": (lambda lib, x: x[0].t().reshape(4, 3), True),
    "x.transpose(0, 1).reshape(-1) (copy)": (lambda lib, x: x.transpose(0, 1).reshape(-1), False),
    "x[[0, 1]] (advanced: copy)": (lambda lib, x: x[[0, 1]], False),
    "x[x > 5] (mask: copy)": (lambda lib, x: x[x > 5], False),
    "cat (copy)": (lambda lib, x: lib.cat([x, x]), False),
    "stack (copy)": (lambda lib, x: lib.stack([x]), False),
}


def layout(v, x):
    """Everything torch says about how ``v`` sits in memory relative to ``x``.

    The stride of a size-1 dim is left out: it never moves through memory, torch's
    is_contiguous ignores it, and NumPy (teachgrad's storage) does not keep it.
    """
    of_x = v._base is x
    return dict(
        shape=tuple(v.shape),
        is_view=v._is_view(),
        base_is_x=of_x,
        stride=tuple(s for s, n in zip(v.stride(), v.shape) if n != 1),
        contiguous=v.is_contiguous(),
        offset=v.storage_offset() if of_x else None,
        data_ptr_offset=v.data_ptr() - x.data_ptr() if of_x else None,
        values=v.tolist(),
    )


@pytest.mark.parametrize("fn,kind", CHAINS.values(), ids=CHAINS.keys())
def test_view_layout_matches_torch(torch, fn, kind):
    """_base, data_ptr, storage_offset, stride and is_contiguous of each view chain equal
    torch's; copies (advanced indexing, cat, reshape of a transposed tensor) are no views."""
    x, xt = view_base(tg), view_base(torch)
    v, vt = fn(tg, x), fn(torch, xt)
    got, want = layout(v, x), layout(vt, xt)
    assert got == want
    assert got["is_view"] == bool(kind)


@pytest.mark.parametrize("fn,kind", CHAINS.values(), ids=CHAINS.keys())
def test_views_share_memory_and_version_counter(torch, fn, kind):
    """An in-place change of the base shows in the view and bumps its _version (and back:
    writing through a view changes the base); copies see neither. Same as torch."""
    ours, torchs = (what_changes_show(lib, fn, write_back=kind is True) for lib in (tg, torch))
    assert ours == torchs
    assert (ours[1] == 1) == bool(kind)  # the base's change bumped the view's version


def test_flatten_of_a_single_dim_returns_the_tensor_itself(torch):
    """flatten(d, d) (and flatten() of a 1-d tensor) has nothing to merge: torch returns self."""
    for lib in (tg, torch):
        x = lib.zeros(2, 3, requires_grad=True)
        assert x.flatten(1, 1) is x and x.flatten(-2, 0) is x
        v = lib.zeros(4, requires_grad=True)
        assert v.flatten() is v


def test_views_of_a_leaf_that_requires_grad_are_not_leaves(torch):
    """A view of a leaf that requires grad is a non-leaf with a grad_fn whose _base is the leaf."""
    for lib in (tg, torch):
        x = lib.zeros(2, 3, requires_grad=True)
        v = x.t()[1]
        assert v._base is x and not v.is_leaf and v.requires_grad and v.grad_fn is not None
        d = x.detach()
        assert d.data_ptr() == x.data_ptr() and not d.requires_grad


# --------------------------------------------------------------------------- errors

ERRORS = {
    "view of a transposed tensor": (
        lambda lib: lib.ones(3, 4).t().view(-1),
        RuntimeError,
        "view size is not compatible with input tensor's size and stride",
    ),
    "view of a column slice": (
        lambda lib: lib.ones(4, 4)[:, :2].view(8),
        RuntimeError,
        "view size is not compatible with input tensor's size and stride",
    ),
    "view to the wrong size": (
        lambda lib: lib.ones(2, 3).view(4, 2),
        RuntimeError,
        "shape '[4, 2]' is invalid for input of size 6",
    ),
    "reshape with two -1": (
        lambda lib: lib.ones(2, 3).reshape(-1, -1),
        RuntimeError,
        "only one dimension can be inferred",
    ),
    "reshape to the wrong size": (
        lambda lib: lib.ones(2, 3).reshape(5, -1),
        RuntimeError,
        "shape '[5, -1]' is invalid for input of size 6",
    ),
    "transpose dim out of range": (
        lambda lib: lib.ones(2, 3).transpose(0, 2),
        IndexError,
        "Dimension out of range",
    ),
    "permute with too few dims": (
        lambda lib: lib.ones(2, 3, 4).permute(1, 0),
        RuntimeError,
        "number of dimensions in the tensor input does not match the length of the desired ordering",
    ),
    "permute with a repeated dim": (
        lambda lib: lib.ones(2, 3).permute(0, 0),
        RuntimeError,
        "duplicate dims are not allowed",
    ),
    "permute dim out of range": (
        lambda lib: lib.ones(2, 3).permute(0, 2),
        IndexError,
        "Dimension out of range",
    ),
    "squeeze dim out of range": (
        lambda lib: lib.ones(1, 3).squeeze(2),
        IndexError,
        "Dimension out of range",
    ),
    "unsqueeze dim out of range": (
        lambda lib: lib.ones(2, 3).unsqueeze(3),
        IndexError,
        "Dimension out of range (expected to be in range of [-3, 2], but got 3)",
    ),
    "select dim out of range": (
        lambda lib: lib.ones(2, 3).select(2, 0),
        IndexError,
        "Dimension out of range",
    ),
    "flatten start after end": (
        lambda lib: lib.ones(2, 3, 4).flatten(2, 1),
        RuntimeError,
        "flatten() has invalid args: start_dim cannot come after end_dim",
    ),
    "flatten dim out of range": (
        lambda lib: lib.ones(2, 3).flatten(3),
        IndexError,
        "Dimension out of range",
    ),
    "t() of a 3-d tensor": (
        lambda lib: lib.ones(2, 3, 4).t(),
        RuntimeError,
        "t() expects a tensor with <= 2 dimensions, but self is 3D",
    ),
    "expand to a clashing size": (
        lambda lib: lib.ones(3, 1).expand(4, 5),
        RuntimeError,
        "The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 0",
    ),
    "expand to fewer dims": (
        lambda lib: lib.ones(2, 3).expand(3),
        RuntimeError,
        "the number of sizes provided (1) must be greater or equal to the number of dimensions in the tensor (2)",
    ),
    "narrow past the end": (
        lambda lib: lib.ones(4).narrow(0, 2, 3),
        RuntimeError,
        "start (2) + length (3) exceeds dimension size (4).",
    ),
    "select index out of range": (
        lambda lib: lib.ones(3, 2).select(0, 5),
        IndexError,
        "select(): index 5 out of range for tensor of size [3, 2] at dimension 0",
    ),
    "x[5] out of range": (
        lambda lib: lib.ones(3, 2)[5],
        IndexError,
        "index 5 is out of bounds for dimension 0 with size 3",
    ),
    "x[:, -4] out of range": (
        lambda lib: lib.ones(3, 2)[:, -4],
        IndexError,
        "index -4 is out of bounds for dimension 1 with size 2",
    ),
    "too many indices": (
        lambda lib: lib.ones(3, 2)[0, 0, 0],
        IndexError,
        "too many indices for tensor of dimension 2",
    ),
    "negative step": (lambda lib: lib.ones(3)[::-1], ValueError, "step must be greater than zero"),
    "index list out of range": (
        lambda lib: lib.ones(3, 2)[[0, 5]],
        IndexError,
        "index 5 is out of bounds for dimension 0 with size 3",
    ),
    "index tensor out of range": (
        lambda lib: lib.ones(3, 2)[lib.tensor([1, -4])],
        IndexError,
        "index -4 is out of bounds for dimension 0 with size 3",
    ),
    "2nd index tensor out of range": (
        lambda lib: lib.ones(3, 2)[:, lib.tensor([-3])],
        IndexError,
        "index -3 is out of bounds for dimension",
    ),
    "float index tensor": (
        lambda lib: lib.ones(3)[lib.tensor([0.0])],
        IndexError,
        "tensors used as indices must be long, int, byte or bool tensors",
    ),
    "mask of the wrong shape": (
        lambda lib: lib.ones(3, 2)[lib.tensor([True, False])],
        IndexError,
        "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 2] at index 0",
    ),
    "2-d mask of the wrong shape": (
        lambda lib: lib.ones(3, 2)[lib.ones(3, 3, dtype=lib.bool)],
        IndexError,
        "The shape of the mask [3, 3] at index 1 does not match the shape of the indexed tensor [3, 2] at index 1",
    ),
    "cat of mismatched shapes": (
        lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 4)]),
        RuntimeError,
        "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list.",
    ),
    "cat of mismatched shapes, dim 1": (
        lambda lib: lib.cat([lib.ones(2, 3), lib.ones(3, 3)], dim=1),
        RuntimeError,
        "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 1 in the list.",
    ),
    "cat of different ranks": (
        lambda lib: lib.cat([lib.ones(2, 3), lib.ones(3)]),
        RuntimeError,
        "Tensors must have same number of dimensions: got 2 and 1",
    ),
    "cat of 0-d tensors": (
        lambda lib: lib.cat([lib.ones(()), lib.ones(())]),
        RuntimeError,
        "zero-dimensional tensor (at position 0) cannot be concatenated",
    ),
    "cat dim out of range": (
        lambda lib: lib.cat([lib.ones(2), lib.ones(2)], dim=1),
        IndexError,
        "Dimension out of range",
    ),
    "cat of nothing": (lambda lib: lib.cat([]), ValueError, "expected a non-empty list of Tensors"),
    "cat of a tensor": (
        lambda lib: lib.cat(lib.ones(2, 2)),
        TypeError,
        "must be tuple of Tensors, not Tensor",
    ),
    "stack of mismatched shapes": (
        lambda lib: lib.stack([lib.ones(3), lib.ones(4)]),
        RuntimeError,
        "stack expects each tensor to be equal size, but got [3] at entry 0 and [4] at entry 1",
    ),
    "stack dim out of range": (
        lambda lib: lib.stack([lib.ones(3), lib.ones(3)], dim=3),
        IndexError,
        "Dimension out of range",
    ),
    "stack of nothing": (
        lambda lib: lib.stack([]),
        RuntimeError,
        "stack expects a non-empty TensorList",
    ),
}


@pytest.mark.parametrize("fn,exc,phrase", ERRORS.values(), ids=ERRORS.keys())
def test_bad_shape_or_index_raises_torchs_error(torch, fn, exc, phrase):
    """Bad shapes, dims and indices fail at the call with torch's exception class and key phrase."""
    assert_raises_like_torch(torch, fn, exc, phrase)


def test_cat_and_stack_of_hundreds_of_tensors():
    """Ops with many tensor arguments work with and without grad (cat of 300 rows)."""
    rows = [tg.full((1,), float(i)) for i in range(300)]
    assert tg.cat(rows).tolist() == [float(i) for i in range(300)]
    leaf = tg.ones(2, requires_grad=True)
    tg.stack([leaf] * 300).sum().backward()
    assert leaf.grad.tolist() == [300.0, 300.0]


@pytest.mark.parametrize("join", ["cat", "stack"])
@pytest.mark.parametrize(
    "dtypes",
    [
        ("float32",) * 3,
        ("int64", "int64"),
        ("float32", "float64"),
        ("int32", "int64", "int32"),
        ("bool", "float16"),
        ("uint8", "int8"),
        ("bool", "bool", "int16"),
    ],
    ids="-".join,
)
def test_cat_and_stack_result_dtype_matches_torch(torch, join, dtypes):
    """The joined dtype: the one dtype all share, else torch's promotion of them."""
    ours = getattr(tg, join)([tg.ones(2, dtype=getattr(tg, d)) for d in dtypes])
    theirs = getattr(torch, join)([torch.ones(2, dtype=getattr(torch, d)) for d in dtypes])
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert ours.tolist() == theirs.tolist()

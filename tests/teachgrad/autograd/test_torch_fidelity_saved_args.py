"""A node's saved non-tensor arguments, ``grad_fn._saved_<name>``, as torch's node shows them.

Each program runs on both libraries; for every ``_saved_<name>`` of torch's node that holds
no tensor (torch gives such a name no ``_raw_saved_<name>``), teachgrad's node of the same
name must have it, with an equal value of the same Python type (tuples as tuples, ints as
ints), before backward and after backward freed the saved tensors. Then the index tensors
that indexing saves (``_saved_indices``, ``_raw_saved_indices``), as torch's
test_grad_fn_attr_bindings checks them, over many keys.

One thing is compared after undoing it: torch shows a negative dim (an int64) read as an
unsigned number, ``2**64 - 1`` for -1; teachgrad shows the -1 it was given (see
docs/differences-from-torch.md).
"""

import numpy as np
import pytest

from tests.teachgrad.inplace._common import LIBS, Raised, make, node_name, run, torch_phrase

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

_WRAP = 2**64


def _signed(value):
    """torch's value with its negative dims read back as signed ints."""
    if isinstance(value, tuple | list):
        return type(value)(_signed(v) for v in value)
    if type(value) is int and value >= _WRAP // 2:
        return value - _WRAP
    return value


def _typed(value):
    """A value with the Python type of each part, so that 2 and 2.0, (1,) and [1] differ."""
    if isinstance(value, tuple | list):
        return type(value).__name__, [_typed(v) for v in value]
    return type(value).__name__, value


def saved_arguments(node, names=None) -> dict:
    """``{name: value}`` of the node's ``_saved_<name>`` that hold no tensor (the names torch's
    node has, when ``names`` is given)."""
    if names is None:
        names = [n for n in dir(node) if n.startswith("_saved_") and not hasattr(node, "_raw" + n)]
    return {n: _typed(_signed(getattr(node, n))) for n in names}


def _x(lib, shape=(3, 4), seed=0):
    """A float64 leaf that requires grad, with the same values on both libraries."""
    values = np.random.default_rng(seed).standard_normal(shape)
    return make(lib, values, requires_grad=True)


def _ints(lib, values):
    """An int64 tensor (indices, targets)."""
    return lib.tensor(values)


# program(lib, x) -> a tensor whose grad_fn is compared; x: a (3, 4) float64 leaf
REDUCTIONS = {
    "sum()": lambda lib, x: x.sum(),
    "sum(1)": lambda lib, x: x.sum(1),
    "sum(-1)": lambda lib, x: x.sum(-1),
    "sum((1, 0), keepdim)": lambda lib, x: x.sum((1, 0), keepdim=True),
    "sum(dim=None)": lambda lib, x: x.sum(dim=None),
    "sum([0, -1])": lambda lib, x: x.sum([0, -1]),
    "mean()": lambda lib, x: x.mean(),
    "mean(0)": lambda lib, x: x.mean(0),
    "mean((0, 1), keepdim)": lambda lib, x: x.mean((0, 1), keepdim=True),
    "prod()": lambda lib, x: x.prod(),
    "prod(1)": lambda lib, x: x.prod(1),
    "prod(-1, keepdim)": lambda lib, x: x.prod(-1, keepdim=True),
    "amax(1)": lambda lib, x: x.amax(1),
    "amax()": lambda lib, x: x.amax(),
    "amin((0, 1))": lambda lib, x: x.amin((0, 1)),
    "amin(-1, keepdim)": lambda lib, x: x.amin(-1, keepdim=True),
    "max()": lambda lib, x: x.max(),
    "min()": lambda lib, x: x.min(),
    "max(1)": lambda lib, x: x.max(1)[0],
    "max(-1, keepdim)": lambda lib, x: x.max(-1, keepdim=True).values,
    "min(0)": lambda lib, x: x.min(0).values,
    "std(1)": lambda lib, x: x.std(1),
    "std(1, unbiased=False)": lambda lib, x: x.std(1, unbiased=False),
    "std(0, correction=2, keepdim)": lambda lib, x: x.std(0, correction=2, keepdim=True),
    "var(1, correction=0)": lambda lib, x: x.var(1, correction=0),
    "var(dim=None)": lambda lib, x: x.var(dim=None),
    "var(correction=2)": lambda lib, x: x.var(correction=2),
    "var(1, correction=1.5)": lambda lib, x: x.var(1, correction=1.5),
    "var((0, 1))": lambda lib, x: x.var((0, 1)),
    "norm()": lambda lib, x: x.norm(),
    "norm(2.0)": lambda lib, x: x.norm(2.0),
    "norm(1, dim=1)": lambda lib, x: x.norm(1, dim=1),
    "norm(3, dim=(1, 0))": lambda lib, x: x.norm(3, dim=(1, 0)),
    "norm(inf, keepdim)": lambda lib, x: x.norm(float("inf"), dim=0, keepdim=True),
    "logsumexp(1)": lambda lib, x: x.logsumexp(1),
    "logsumexp((0, 1), keepdim)": lambda lib, x: x.logsumexp((0, 1), keepdim=True),
    "cumsum(1)": lambda lib, x: x.cumsum(1),
    "cumsum(0)": lambda lib, x: x.cumsum(0),
    # an empty list of dims reduces every dim, and the node shows it as given: ()
    "sum([])": lambda lib, x: x.sum([]),
    "sum((), keepdim)": lambda lib, x: x.sum((), keepdim=True),
    "mean(())": lambda lib, x: x.mean(()),
    "mean([], keepdim)": lambda lib, x: x.mean([], keepdim=True),
    "var([])": lambda lib, x: x.var([]),
    "std(())": lambda lib, x: x.std(()),
    "amax([])": lambda lib, x: x.amax([]),
    "amin((), keepdim)": lambda lib, x: x.amin((), keepdim=True),
    "norm(dim=[])": lambda lib, x: x.norm(dim=[]),
    "logsumexp((), keepdim)": lambda lib, x: x.logsumexp((), keepdim=True),
    "logsumexp([], keepdim)": lambda lib, x: x.logsumexp([], keepdim=True),
}

VIEWS = {
    "view(12)": lambda lib, x: x.view(12),
    "view(-1, 2)": lambda lib, x: x.view(-1, 2),
    "reshape(4, 3)": lambda lib, x: x.reshape(4, 3),
    "flatten()": lambda lib, x: x.flatten(),
    "t().reshape(12)": lambda lib, x: x.t().reshape(12),
    "expand(2, 3, 4)": lambda lib, x: x.expand(2, 3, 4),
    "[:1].expand(5, 4)": lambda lib, x: x[:1].expand(5, 4),
    "permute(1, 0)": lambda lib, x: x.permute(1, 0),
    "[None].permute(2, 0, 1)": lambda lib, x: x[None].permute(2, 0, 1),
    "movedim(0, 1)": lambda lib, x: x.movedim(0, 1),
    "t()": lambda lib, x: x.t(),
    "transpose(0, 1)": lambda lib, x: x.transpose(0, 1),
    "transpose(1, 0)": lambda lib, x: x.transpose(1, 0),
    "[None].squeeze(0)": lambda lib, x: x[None].squeeze(0),
    "[None].squeeze(1)": lambda lib, x: x[None].squeeze(1),
    "[None].squeeze()": lambda lib, x: x[None].squeeze(),
    "[None].squeeze((0, 1))": lambda lib, x: x[None].squeeze((0, 1)),
    "unsqueeze(0)": lambda lib, x: x.unsqueeze(0),
    "unsqueeze(2)": lambda lib, x: x.unsqueeze(2),
    "[1]": lambda lib, x: x[1],
    "select(1, 2)": lambda lib, x: x.select(1, 2),
    "[:, 1:3]": lambda lib, x: x[:, 1:3],
    "[0:2]": lambda lib, x: x[0:2],
    "[0:3:2]": lambda lib, x: x[0:3:2],
    "narrow(1, 1, 2)": lambda lib, x: x.narrow(1, 1, 2),
    "diagonal()": lambda lib, x: x.diagonal(),
    "diagonal(1)": lambda lib, x: x.diagonal(1),
    "diagonal(0, 1, 0)": lambda lib, x: x.diagonal(0, 1, 0),
}

JOINS = {
    "cat(dim=0)": lambda lib, x: lib.cat([x, x * 2]),
    "cat(dim=1)": lambda lib, x: lib.cat([x, x[:, :1]], 1),
    "stack()": lambda lib, x: lib.stack([x, x]),
    "stack(dim=2)": lambda lib, x: lib.stack([x, x], 2),
    "unbind(1)": lambda lib, x: x.unbind(1)[0],
    "split(2, 1)": lambda lib, x: x.split(2, 1)[0],
    "split(2)": lambda lib, x: x.split(2)[1],
    "split([1, 3], 1)": lambda lib, x: x.split([1, 3], 1)[0],
    "chunk(3, 1)": lambda lib, x: x.chunk(3, 1)[0],
    "chunk(2)": lambda lib, x: x.chunk(2)[0],
}

NUMBERS = {
    "x + y": lambda lib, x: x + x.detach(),
    "x + 2": lambda lib, x: x + 2,
    "add(y, alpha=2)": lambda lib, x: x.add(x.detach(), alpha=2),
    "add(y, alpha=0.5)": lambda lib, x: x.add(x * 1, alpha=0.5),
    "add(2, alpha=3)": lambda lib, x: x.add(2, alpha=3),
    "x - y": lambda lib, x: x - x.detach(),
    "sub(y, alpha=3)": lambda lib, x: x.sub(x.detach(), alpha=3),
    "add(y, alpha=1.0)": lambda lib, x: x.add(x.detach(), alpha=1.0),
    "add(y, alpha=tensor(2))": lambda lib, x: x.add(x.detach(), alpha=lib.tensor(2)),
    "sub(y, alpha=tensor(1))": lambda lib, x: x.sub(x.detach(), alpha=lib.tensor(1)),
    "2 - x": lambda lib, x: 2 - x,
    "x ** 2": lambda lib, x: x**2,
    "x ** 2.5": lambda lib, x: x.abs() ** 2.5,
    "x ** -1": lambda lib, x: x**-1,
    "pow(x, 0.5)": lambda lib, x: lib.pow(x.abs(), 0.5),
    "2 ** x": lambda lib, x: 2**x,
    "1.5 ** x": lambda lib, x: 1.5**x,
    "clamp(-0.5, 0.5)": lambda lib, x: x.clamp(-0.5, 0.5),
    "clamp(min=0)": lambda lib, x: x.clamp(min=0),
    "clamp(max=1)": lambda lib, x: x.clamp(max=1),
    "clamp(x, min=0.1)": lambda lib, x: lib.clamp(x, min=0.1),
    "clamp(None, -1)": lambda lib, x: x.clamp(None, -1),
    "div(2, rounding_mode='floor')": lambda lib, x: x.div(2, rounding_mode="floor"),
    "div(y, rounding_mode='trunc')": lambda lib, x: x.div(x.detach() + 3, rounding_mode="trunc"),
    "div(y, rounding_mode=None)": lambda lib, x: x.div(x.detach() + 3, rounding_mode=None),
    "div(2, rounding_mode=None)": lambda lib, x: x.div(2, rounding_mode=None),
}

NN = {
    "softmax(1)": lambda lib, x: x.softmax(1),
    "softmax(0)": lambda lib, x: lib.softmax(x, 0),
    "log_softmax(1)": lambda lib, x: x.log_softmax(1),
    "gelu": lambda lib, x: lib.nn.functional.gelu(x),
    "gelu(tanh)": lambda lib, x: lib.nn.functional.gelu(x, approximate="tanh"),
    "mse_loss": lambda lib, x: lib.nn.functional.mse_loss(x, x.detach() * 2),
    "mse_loss(sum)": lambda lib, x: lib.nn.functional.mse_loss(x, x.detach(), reduction="sum"),
    "mse_loss(none)": lambda lib, x: lib.nn.functional.mse_loss(x, x.detach(), reduction="none"),
    "nll_loss": lambda lib, x: lib.nn.functional.nll_loss(x, _ints(lib, [0, 1, 3])),
    "nll_loss(ignore_index=1, none)": lambda lib, x: lib.nn.functional.nll_loss(
        x, _ints(lib, [0, 1, 3]), ignore_index=1, reduction="none"
    ),
    "cross_entropy(sum)": lambda lib, x: lib.nn.functional.cross_entropy(
        x, _ints(lib, [2, 1, 0]), reduction="sum"
    ),
    "binary_cross_entropy": lambda lib, x: lib.nn.functional.binary_cross_entropy(
        x.sigmoid(), x.detach().sigmoid()
    ),
    "binary_cross_entropy_with_logits(sum)": lambda lib, x: (
        lib.nn.functional.binary_cross_entropy_with_logits(x, x.detach().sigmoid(), reduction="sum")
    ),
    "layer_norm((4,))": lambda lib, x: lib.nn.functional.layer_norm(x, (4,)),
    "layer_norm((3, 4), eps)": lambda lib, x: lib.nn.functional.layer_norm(x, (3, 4), eps=1e-3),
    "embedding": lambda lib, x: lib.nn.functional.embedding(_ints(lib, [2, 0, 2]), x),
    "embedding(padding_idx=1)": lambda lib, x: lib.nn.functional.embedding(
        _ints(lib, [2, 1]), x, padding_idx=1
    ),
    "embedding(padding_idx=-1)": lambda lib, x: lib.nn.functional.embedding(
        _ints(lib, [2, 1]), x, padding_idx=-1
    ),
    "conv2d": lambda lib, x: lib.nn.functional.conv2d(x.reshape(1, 1, 3, 4), _x(lib, (2, 1, 2, 2))),
    "conv2d(bias, stride, padding)": lambda lib, x: lib.nn.functional.conv2d(
        x.reshape(1, 1, 3, 4), _x(lib, (2, 1, 2, 2)), _x(lib, (2,)), stride=(2, 1), padding=1
    ),
    "conv2d(dilation, groups)": lambda lib, x: lib.nn.functional.conv2d(
        x.reshape(1, 2, 2, 3), _x(lib, (2, 1, 2, 2)), dilation=(1, 2), groups=2, padding=(0, 1)
    ),
}

POOLS = {
    "max_pool2d(2)": lambda lib, x: lib.nn.functional.max_pool2d(_image(x), 2),
    "max_pool2d(2, stride=1)": lambda lib, x: lib.nn.functional.max_pool2d(_image(x), 2, stride=1),
    "max_pool2d((2, 1), (1, 2))": lambda lib, x: lib.nn.functional.max_pool2d(
        _image(x), (2, 1), (1, 2)
    ),
    "max_pool2d(padding, dilation, ceil_mode)": lambda lib, x: lib.nn.functional.max_pool2d(
        _image(x), 2, 1, 1, 2, ceil_mode=True
    ),
    "max_pool2d of one image": lambda lib, x: lib.nn.functional.max_pool2d(x[None], 2, 1),
    "avg_pool2d(2)": lambda lib, x: lib.nn.functional.avg_pool2d(_image(x), 2),
    "avg_pool2d(3, 1, 1, ceil_mode, count_include_pad, divisor)": lambda lib, x: (
        lib.nn.functional.avg_pool2d(_image(x), 3, 1, 1, True, False, 2)
    ),
    "avg_pool2d((1, 2), padding=(0, 1))": lambda lib, x: lib.nn.functional.avg_pool2d(
        _image(x), (1, 2), padding=(0, 1)
    ),
}


def _image(x):
    """``x`` as a batch of one (3, 4) image with one channel."""
    return x.reshape(1, 1, 3, 4)


PRODUCTS = {
    "mm": lambda lib, x: x.mm(_x(lib, (4, 2))),
    "mm (other needs no grad)": lambda lib, x: x.mm(_x(lib, (4, 2)).detach()),
    "mm (self needs no grad)": lambda lib, x: x.detach().mm(x.t()),
    "mm of empty matrices": lambda lib, x: x[:, :0].mm(
        lib.zeros(0, 2, dtype=lib.float64, requires_grad=True)
    ),
    "x.t() @ x": lambda lib, x: x.t() @ x,
    # the layouts whose strides are kept (not plainly row-major): a row, a column, a fresh
    # column-major result, a column cut from one
    "row @ column": lambda lib, x: x[:1].mm(x[:1].t()),
    "column @ row": lambda lib, x: x[:, 1:2].mm(x[:1]),
    "column-major @ x": lambda lib, x: (x.t() * 2).mm(x),
    "column of a column-major result @ row": lambda lib, x: (x.t() * 2)[:, :1].mm(x[:1, :3]),
    "linear of a row": lambda lib, x: lib.nn.functional.linear(x[:1], x * 1, x[:, 0]),
    "matmul 2-d": lambda lib, x: lib.matmul(x, _x(lib, (4, 5))),
    "linear (no bias)": lambda lib, x: lib.nn.functional.linear(x, _x(lib, (2, 4))),
    "linear": lambda lib, x: lib.nn.functional.linear(x, _x(lib, (2, 4)), _x(lib, (2,))),
    "linear (weight needs no grad)": lambda lib, x: lib.nn.functional.linear(
        x, _x(lib, (2, 4)).detach(), _x(lib, (2,))
    ),
    "linear (input needs no grad)": lambda lib, x: lib.nn.functional.linear(
        x.detach(), _x(lib, (2, 4)), _x(lib, (2,))
    ),
}

INDEXING = {
    "index_select(1, [0, 2])": lambda lib, x: x.index_select(1, _ints(lib, [0, 2])),
    "index_select(0, [1])": lambda lib, x: lib.index_select(x, 0, _ints(lib, [1])),
    "gather(1)": lambda lib, x: x.gather(1, _ints(lib, [[0], [1], [3]])),
    "gather(0)": lambda lib, x: lib.gather(x, 0, _ints(lib, [[2, 1, 0, 0]])),
    "scatter(1, src)": lambda lib, x: x.scatter(1, _ints(lib, [[0], [1], [2]]), x[:, :1] * 2),
    "scatter(1, value)": lambda lib, x: x.scatter(1, _ints(lib, [[0], [1], [2]]), 1.0),
    "scatter_add(0)": lambda lib, x: x.scatter_add(0, _ints(lib, [[0, 1, 2, 0]]), x[:1] * 2),
    "index_put": lambda lib, x: x.index_put((_ints(lib, [0, 2]),), x[:1].detach() * 3),
    "index_put(accumulate)": lambda lib, x: x.index_put(
        (_ints(lib, [0]), _ints(lib, [1])), lib.tensor(1.0, dtype=lib.float64), accumulate=True
    ),
    "masked_fill": lambda lib, x: x.masked_fill(x > 0, 1.0),
    "tril(1)": lambda lib, x: x.tril(1),
    "triu()": lambda lib, x: x.triu(),
    "triu(-1)": lambda lib, x: lib.triu(x, -1),
    "flip(0)": lambda lib, x: x.flip(0),
    "flip(0, 1)": lambda lib, x: x.flip(0, 1),
    "roll(2)": lambda lib, x: x.roll(2),
    "roll((1, 2), (0, 1))": lambda lib, x: x.roll((1, 2), (0, 1)),
    "repeat(2, 1)": lambda lib, x: x.repeat(2, 1),
    "repeat(2, 1, 3)": lambda lib, x: x.repeat(2, 1, 3),
    "pad((1, 2))": lambda lib, x: lib.nn.functional.pad(x, (1, 2)),
    "pad((1, 2, 3, 0))": lambda lib, x: lib.nn.functional.pad(x, (1, 2, 3, 0), value=1.0),
}

# dims, indices and slice bounds as the call gave them: -1 stays -1 (after _signed), a
# slice's missing start is 0 and its missing end the largest int64, as torch's node shows them
AS_GIVEN = {
    "unsqueeze(-1)": lambda lib, x: x.unsqueeze(-1),
    "unsqueeze(-3)": lambda lib, x: x.unsqueeze(-3),
    "[None].squeeze(-3)": lambda lib, x: x[None].squeeze(-3),
    "[:, None].squeeze((-2,))": lambda lib, x: x[:, None].squeeze((-2,)),
    "transpose(0, -1)": lambda lib, x: x.transpose(0, -1),
    "transpose(-1, -2)": lambda lib, x: x.transpose(-1, -2),
    "select(-1, -2)": lambda lib, x: x.select(-1, -2),
    "[-1]": lambda lib, x: x[-1],
    "[:, -1]": lambda lib, x: x[:, -1],
    "[1:]": lambda lib, x: x[1:],
    "[:, ::2]": lambda lib, x: x[:, ::2],
    "[:, -3:-1]": lambda lib, x: x[:, -3:-1],
    "[:, 1:100]": lambda lib, x: x[:, 1:100],
    "[:, -100:2]": lambda lib, x: x[:, -100:2],
    "[:, 3:1]": lambda lib, x: x[:, 3:1],
    "[1, 2:]": lambda lib, x: x[1, 2:],
    "narrow(-1, 1, 2)": lambda lib, x: x.narrow(-1, 1, 2),
    "narrow(1, -2, 2)": lambda lib, x: x.narrow(1, -2, 2),
    "diagonal(0, -2, -1)": lambda lib, x: x.diagonal(0, -2, -1),
    "permute(-1, 0)": lambda lib, x: x.permute(-1, 0),
    "[None].permute(2, -3, 1)": lambda lib, x: x[None].permute(2, -3, 1),
    "movedim(-1, 0)": lambda lib, x: x.movedim(-1, 0),
    "mT": lambda lib, x: x.mT,
    "cat(dim=-1)": lambda lib, x: lib.cat([x, x * 2], -1),
    "stack(dim=-1)": lambda lib, x: lib.stack([x, x], -1),
    "stack(dim=-3)": lambda lib, x: lib.stack([x, x], -3),
    "unbind(-1)": lambda lib, x: x.unbind(-1)[0],
    "split(2, -1)": lambda lib, x: x.split(2, -1)[0],
    "split([1, 3], -1)": lambda lib, x: x.split([1, 3], -1)[1],
    "chunk(2, -1)": lambda lib, x: x.chunk(2, -1)[0],
    "flip(-1)": lambda lib, x: x.flip(-1),
    "flip(0, -1)": lambda lib, x: x.flip(0, -1),
    "roll(1, -1)": lambda lib, x: x.roll(1, -1),
    "roll((1, -2), (0, -1))": lambda lib, x: x.roll((1, -2), (0, -1)),
    "softmax(-1)": lambda lib, x: x.softmax(-1),
    "log_softmax(-2)": lambda lib, x: x.log_softmax(-2),
    "cumsum(-1)": lambda lib, x: x.cumsum(-1),
    "index_select(-1)": lambda lib, x: x.index_select(-1, _ints(lib, [0, 2])),
    "gather(-1)": lambda lib, x: x.gather(-1, _ints(lib, [[0], [1], [2]])),
    "scatter(-1, src)": lambda lib, x: x.scatter(-1, _ints(lib, [[0], [1], [2]]), x[:, :1] * 2),
    "scatter(-1, value)": lambda lib, x: x.scatter(-1, _ints(lib, [[0], [1], [2]]), 1.0),
    "scatter_add(-1)": lambda lib, x: x.scatter_add(-1, _ints(lib, [[0], [1], [2]]), x[:, :1] * 2),
}

PROGRAMS = {
    **REDUCTIONS,
    **VIEWS,
    **JOINS,
    **NUMBERS,
    **NN,
    **POOLS,
    **PRODUCTS,
    **INDEXING,
    **AS_GIVEN,
}

# Where teachgrad's node only takes torch's node's name, comparing what they saved means
# nothing: teachgrad computes the whole op in one node named as torch's *last* one, whose
# arguments are those of an inner step of torch's. The program, and why.
NOT_COMPARED = {
    "einsum('ij->j')": (
        lambda lib, x: lib.einsum("ij->j", x),
        "one Einsum node named SumBackward1 (torch's last op is a sum over dims it chose)",
    ),
    "einsum('ij,kj->ik')": (
        lambda lib, x: lib.einsum("ij,kj->ik", x, x),
        "one Einsum node named ViewBackward0 (torch views the result of an inner bmm)",
    ),
    "batched matmul": (
        lambda lib, x: x[None] @ x.t()[None],
        "one Matmul node named UnsafeViewBackward0 (torch's view of an inner folded mm)",
    ),
    "vector @ matrix": (
        lambda lib, x: x[0] @ x.t(),
        "one node named SqueezeBackward4 (torch squeezes an inner mm's result)",
    ),
}


def _outcome(lib, program, names=None):
    """The node's name and its saved arguments (``names``, else every one it has), before
    and after backward."""
    y = program(lib, _x(lib))
    node = y.grad_fn
    before = saved_arguments(node, names)
    y.sum().backward()
    return node_name(node), before, saved_arguments(node, list(before))


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_saved_arguments_as_torch(program):
    """teachgrad's node shows the non-tensor arguments torch's node shows, with the same
    values and types, and keeps them after backward freed the saved tensors."""
    want = _outcome(LIBS["torch"], program)
    assert _outcome(LIBS["tg"], program, list(want[1])) == want


# --------------------------------------------------------------------------- saved index tensors


def _entries(indices):
    """A tuple of saved index tensors (None for a dim taken whole) as plain facts."""
    return type(indices).__name__, [
        None if t is None else (str(t.dtype).split(".")[-1], t.tolist()) for t in indices
    ]


def _first_line(program, lib):
    """The class and the first line of the error ``program(lib)`` raises (torch's name for
    the library made neutral), or the word "nothing"."""
    outcome = run(program, lib)
    if not isinstance(outcome, Raised):
        return "nothing"
    return outcome.type, torch_phrase(outcome.message.splitlines()[0])


# program(lib, x, i) -> an indexed tensor; x: a (3, 4) float64 leaf, i: the int64 tensor [0, 2]
KEYS = {
    "x[:, i]": lambda lib, x, i: x[:, i],
    "x[i]": lambda lib, x, i: x[i],
    "x[i, i]": lambda lib, x, i: x[i, i],
    "x[1:, i]": lambda lib, x, i: x[1:, i],
    "x[[0, 1]]": lambda lib, x, i: x[[0, 1]],
    "x[mask]": lambda lib, x, i: x[x > 0],
    "x[..., i]": lambda lib, x, i: x[..., i],
    "x[0, i]": lambda lib, x, i: x[0, i],
    "x[i, None]": lambda lib, x, i: x[i, None],
    "x[None, :, i]": lambda lib, x, i: x[None, :, i],
    "index_put((i,))": lambda lib, x, i: x.index_put((i,), lib.tensor(1.0, dtype=lib.float64)),
    "y[:, i] = 2": lambda lib, x, i: _set(x * 1, (slice(None), i), 2.0),
    "y[i] = ones": lambda lib, x, i: _set(x * 1, i, lib.ones(2, 4, dtype=lib.float64)),
    "y[..., i] += x[:, :2]": lambda lib, x, i: _set(x * 1, (Ellipsis, i), x[:, :2]),
}


def _set(y, key, value):
    y[key] = value
    return y


@pytest.mark.parametrize("program", KEYS.values(), ids=KEYS.keys())
def test_saved_indices_as_torch(program):
    """``_saved_indices`` holds the index tensors (the one given, itself) with None for each
    dim taken whole, up to the last indexed one; the sizes stay readable after backward,
    the tensors are freed as torch's (the same error)."""

    def facts(lib, names=None):
        x, i = _x(lib), _ints(lib, [0, 2])
        y = program(lib, x, i)
        node = y.grad_fn
        kept = [t is i for t in node._saved_indices]
        arguments = saved_arguments(node, names)
        before = node.name(), _entries(node._saved_indices), kept, arguments
        y.sum().backward()
        after = saved_arguments(node, list(arguments))
        return before, after, _first_line(lambda _: node._saved_indices, lib)

    want = facts(LIBS["torch"])
    assert facts(LIBS["tg"], list(want[1])) == want


@pytest.mark.parametrize("program", KEYS.values(), ids=KEYS.keys())
def test_raw_saved_indices_as_torch(program):
    """``_raw_saved_indices``: one raw saved tensor per entry; hooks registered on an index
    tensor's pack it (and unpack it when read), and on a None entry are refused."""

    def facts(lib):
        x, i = _x(lib), _ints(lib, [0, 2])
        node = program(lib, x, i).grad_fn
        raw, seen = node._raw_saved_indices, []
        hooks = (lambda t: seen.append(t.tolist()) or t * 1, lambda t: t + 0)
        outcomes = [_first_line(lambda _, e=e: e.register_hooks(*hooks), lib) for e in raw]
        return type(raw).__name__, outcomes, seen, _entries(node._saved_indices)

    assert facts(LIBS["tg"]) == facts(LIBS["torch"])


@pytest.mark.parametrize("key", ["x[:, i]", "x[i, i]", "index_put((i,))"])
def test_an_index_changed_in_place_fails_backward_as_torch(key):
    """The index tensors are saved, so changing one in place before backward is torch's
    error (the version check), not a gradient at the new positions."""

    def program(lib):
        x, i = _x(lib), _ints(lib, [0, 2])
        y = KEYS[key](lib, x, i)
        i.zero_()
        y.sum().backward()

    assert _first_line(program, LIBS["tg"]) == _first_line(program, LIBS["torch"])


@pytest.mark.parametrize(
    "program", [p for p, _ in NOT_COMPARED.values()], ids=list(NOT_COMPARED.keys())
)
def test_nodes_that_only_take_torchs_name_are_still_such(program):
    """Each exception above still holds: the node has torch's name but not what torch's
    node saved (once it has, move the program to PROGRAMS)."""
    want = _outcome(LIBS["torch"], program)
    node = program(LIBS["tg"], _x(LIBS["tg"])).grad_fn
    assert node_name(node) == want[0]
    assert not all(hasattr(node, name) for name in want[1])

"""Matrix products: matmul (``@``), mm, bmm, mv, dot, outer.

For ``C = A @ B`` the gradients are ``dA = dC @ Bᵀ`` and ``dB = Aᵀ @ dC``. One
``Matmul`` Function covers every case: 1-d operands are treated as a row or
column matrix, and batch dims that were broadcast are summed back by the engine.
Each case keeps torch's node name (``MmBackward0``, ``MvBackward0`` ...).

    >>> import teachgrad as tg
    >>> A = tg.ones(2, 3, requires_grad=True)
    >>> (A @ tg.ones(3)).sum().backward(); A.grad
    tensor([[1., 1., 1.],
            [1., 1., 1.]])
"""

from __future__ import annotations

import math

from .._backend import array_module
from ..autograd.function import Function
from ..autograd.grad_mode import is_grad_enabled
from .pointwise import broadcast_shape, operands, same_device


class Matmul(Function):
    node_name = "UnsafeViewBackward0"  # torch's name for the general broadcast batched case
    saved_names = ("self", "mat2")
    array_forward = True

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b, broadcast=False)
        need_a, need_b = ctx.needs_input_grad
        ctx.to_save = (a if need_b else None, b if need_a else None)
        ctx.ndims = (x.ndim, y.ndim)
        return array_module(x).matmul(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        a_ndim, b_ndim = ctx.ndims
        if a_ndim == 1 and b_ndim == 1:  # dot product: a scalar result
            return grad * b if need_a else None, grad * a if need_b else None
        grad_a = grad_b = None
        if need_a:
            if b_ndim == 1:  # (..., n) = (..., n, k) @ (k,): dA = dC ⊗ b
                grad_a = grad.unsqueeze(-1) * b
            elif a_ndim == 1:  # a was a row vector
                grad_a = (grad.unsqueeze(-2) @ b.mT).squeeze(-2)
            else:
                grad_a = grad @ b.mT
        if need_b:
            if a_ndim == 1:  # (..., m) = (k,) @ (..., k, m): dB = a ⊗ dC
                grad_b = a.unsqueeze(-1) * grad.unsqueeze(-2)
            elif b_ndim == 1:
                grad_b = (a.mT @ grad.unsqueeze(-1)).squeeze(-1)
            else:
                grad_b = a.mT @ grad
        return grad_a, grad_b


class Mm(Matmul):
    node_name = "MmBackward0"


class Bmm(Matmul):
    node_name = "BmmBackward0"


class Mv(Matmul):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")


class Dot(Matmul):
    node_name = "DotBackward0"
    saved_names = ("self", "tensor")


class VecMat(Matmul):
    node_name = "SqueezeBackward4"  # torch computes 1-d @ 2-d as unsqueeze, mm, squeeze


class MatmulViaClone(Matmul):
    node_name = (
        "CloneBackward0"  # torch computes 2-d @ batched as a transposed product, then a copy
    )


# --------------------------------------------------------------------------- checks (torch's messages)

# torch names dtypes in these messages by their C++ / ScalarType names
_C_NAMES = {
    "float16": "c10::Half",
    "float32": "float",
    "float64": "double",
    "int8": "signed char",
    "uint8": "unsigned char",
    "int16": "short int",
    "int32": "int",
    "int64": "long int",
    "bool": "bool",
}
_SCALAR_NAMES = {
    "float16": "Half",
    "float32": "Float",
    "float64": "Double",
    "int8": "Char",
    "uint8": "Byte",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "bool": "Bool",
}


def _fail(message, hint):
    raise RuntimeError(f"{message}\n  {hint}")


def _check_same_dtype(kind, a, b):
    """Matrix products don't promote: both operands must have one dtype (torch's errors)."""
    if a._data.dtype == b._data.dtype:
        return
    da, db = a._data.dtype.name, b._data.dtype.name
    sa, sb = _SCALAR_NAMES.get(da, da), _SCALAR_NAMES.get(db, db)
    message = {
        "dot": f"dot : expected both vectors to have same dtype, but found {sa} and {sb}",
        "mv": f"addmv input tensors must have the same dtype, but got {sa} and {sb}",
        "mm": f"expected m1 and m2 to have the same dtype, but got: {_C_NAMES.get(da, da)} != "
        f"{_C_NAMES.get(db, db)}",
        "bmm": f"expected scalar type {sa} but found {sb}",
    }[kind]
    _fail(
        message,
        f"Matrix products don't promote dtypes ({a.dtype} and {b.dtype}): convert one "
        "operand first, e.g. b.to(a.dtype).",
    )


# the rank each product wants of its two operands, torch's names for them, and its words
_RANKS = {
    "mm": (
        2,
        2,
        ("self", "mat2"),
        "{name} must be a matrix",
        "two 2-D tensors",
        ". For other ranks use matmul (@)",
    ),
    "bmm": (
        3,
        3,
        ("batch1", "batch2"),
        "{name} must be a 3D tensor",
        "two 3-D tensors (batch, n, m) and (batch, m, p)",
        "",
    ),
    "outer": (
        1,
        1,
        ("self", "vec2"),
        "outer: Expected 1-D argument {name}, but got {ndim}-D",
        "two 1-D tensors",
        "",
    ),
}


def _check_ndim(a, b, kind):
    shapes = f"got shapes {tuple(a.shape)} and {tuple(b.shape)}"
    if kind == "mv":
        if a.ndim != 2 or b.ndim != 1:
            _fail(
                f"vector + matrix @ vector expected, got 1, {a.ndim}, {b.ndim}",
                f"mv takes a 2-D matrix and a 1-D vector; {shapes}.",
            )
    elif kind == "dot":
        if a.ndim != 1 or b.ndim != 1:
            _fail(
                f"1D tensors expected, but got {a.ndim}D and {b.ndim}D tensors",
                f"dot takes two 1-D tensors; {shapes}.",
            )
    else:
        rank_a, rank_b, names, message, takes, advice = _RANKS[kind]
        for t, rank, name in ((a, rank_a, names[0]), (b, rank_b, names[1])):
            if t.ndim != rank:
                _fail(
                    message.format(name=name, ndim=t.ndim),
                    f"{kind} takes {takes}; {shapes}{advice}.",
                )


def _inner_hint(a, b):
    return (
        f"For A @ B the last dim of A must equal the {'first' if b.ndim <= 2 else 'second-to-last'} dim "
        f"of B; got shapes {tuple(a.shape)} and {tuple(b.shape)}."
    )


def _rows(a) -> int:
    """How many rows ``a`` has as the left operand of a matrix product (batch dims folded in)."""
    return math.prod(a.shape[:-1]) if a.ndim > 1 else 1


def _check_dot_sizes(a, b):
    if a.shape[0] != b.shape[0]:
        _fail(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively",
            _inner_hint(a, b),
        )


def _check_mv_sizes(a, b):
    if a.shape[-1] != b.shape[0]:
        n = _rows(a)
        _fail(
            f"size mismatch, got input ({n}), mat ({n}x{a.shape[-1]}), vec ({b.shape[0]})",
            _inner_hint(a, b),
        )


def _check_mm_sizes(a, b):
    if a.shape[-1] != b.shape[0]:
        _fail(
            f"mat1 and mat2 shapes cannot be multiplied ({_rows(a)}x{a.shape[-1]} and {b.shape[0]}x{b.shape[1]})",
            _inner_hint(a, b),
        )


def _check_bmm_sizes(a, b, batch_a, batch_b):
    if batch_a != batch_b or a.shape[-1] != b.shape[-2]:
        _fail(
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch_a}, {a.shape[-1]}] but "
            f"got: [{batch_b}, {b.shape[-2]}].",
            _inner_hint(a, b),
        )


def matmul(input, other):
    """Matrix product with torch's rules for 1-d, 2-d and batched (broadcast) operands.

    >>> import teachgrad as tg
    >>> (tg.ones(4, 2, 3) @ tg.ones(3, 5)).shape, (tg.ones(3) @ tg.ones(3))
    (teachgrad.Size([4, 2, 5]), tensor(3.))
    """
    same_device(input, other)
    a, b = input.ndim, other.ndim
    if a == 0 or b == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D"
        )
    if a == 1 and b == 1:
        return dot(input, other)
    if b == 1:  # matrix (or a batch of them, folded into rows) @ vector
        _check_same_dtype("mv" if a == 2 else "mm", input, other)
        _check_mv_sizes(input, other)
        return Mv.apply(input, other) if a == 2 else Matmul.apply(input, other)
    if b == 2:  # (vector | matrix | folded batch) @ matrix
        _check_same_dtype("mm", input, other)
        _check_mm_sizes(input, other)
        return (
            VecMat.apply(input, other)
            if a == 1
            else Mm.apply(input, other)
            if a == 2
            else Matmul.apply(input, other)
        )
    # batched: the batch dims broadcast, then one bmm over all of them
    batch = broadcast_shape(input.shape[:-2], other.shape[:-2])
    _check_same_dtype("bmm", input, other)
    _check_bmm_sizes(input, other, math.prod(batch), math.prod(batch))
    if a == 2 and input.requires_grad and is_grad_enabled():
        return MatmulViaClone.apply(input, other)
    return Matmul.apply(input, other)


def mm(input, mat2):
    """Product of two matrices (2-d only).

    >>> import teachgrad as tg
    >>> tg.mm(tg.ones(2, 3), tg.ones(3, 4)).shape
    teachgrad.Size([2, 4])
    """
    same_device(input, mat2)
    _check_ndim(input, mat2, "mm")
    _check_same_dtype("mm", input, mat2)
    _check_mm_sizes(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    """Batched product of (b, n, m) and (b, m, p) tensors.

    >>> import teachgrad as tg
    >>> tg.bmm(tg.ones(5, 2, 3), tg.ones(5, 3, 4)).shape
    teachgrad.Size([5, 2, 4])
    """
    same_device(input, mat2)
    _check_ndim(input, mat2, "bmm")
    _check_same_dtype("bmm", input, mat2)
    _check_bmm_sizes(input, mat2, input.shape[0], mat2.shape[0])
    return Bmm.apply(input, mat2)


def mv(input, vec):
    """Matrix-vector product.

    >>> import teachgrad as tg
    >>> tg.mv(tg.ones(2, 3), tg.ones(3))
    tensor([3., 3.])
    """
    same_device(input, vec)
    _check_ndim(input, vec, "mv")
    _check_same_dtype("mv", input, vec)
    _check_mv_sizes(input, vec)
    return Mv.apply(input, vec)


def dot(input, tensor):
    """Inner product of two 1-d tensors.

    >>> import teachgrad as tg
    >>> tg.dot(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
    tensor(11.)
    """
    same_device(input, tensor)
    _check_ndim(input, tensor, "dot")
    _check_same_dtype("dot", input, tensor)
    _check_dot_sizes(input, tensor)
    return Dot.apply(input, tensor)


def outer(input, vec2):
    """Outer product of two 1-d tensors (recorded as a broadcast multiply, like torch).

    >>> import teachgrad as tg
    >>> tg.outer(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 10.0]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    same_device(input, vec2)
    _check_ndim(input, vec2, "outer")
    return input.unsqueeze(1) * vec2

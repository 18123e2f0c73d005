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

from .._backend import array_module
from ..autograd.function import Function
from .pointwise import operands, same_device


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


def _check_dims(name, a, b, need_a, need_b):
    same_device(a, b)
    if a.ndim not in need_a or b.ndim not in need_b:
        raise RuntimeError(f"{name}: expected {'/'.join(map(str, need_a))}-D and {'/'.join(map(str, need_b))}-D "
                           f"tensors, but got {a.ndim}-D and {b.ndim}-D (shapes {tuple(a.shape)} and "
                           f"{tuple(b.shape)})")


def _check_inner(a, b, a_dim, b_dim):
    if a.shape[a_dim] != b.shape[b_dim]:
        left = "x".join(map(str, a.shape)) if a.ndim > 1 else f"1x{a.shape[0]}"
        right = "x".join(map(str, b.shape)) if b.ndim > 1 else f"{b.shape[0]}x1"
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({left} and {right})\n"
            f"  For A @ B the last dim of A ({a.shape[a_dim]}) must equal the "
            f"{'first' if b.ndim <= 2 else 'second-to-last'} dim of B ({b.shape[b_dim]})."
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
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    _check_inner(input, other, -1, 0 if b == 1 else -2)
    if a == 1 and b == 1:
        return Dot.apply(input, other)
    if a == 2 and b == 1:
        return Mv.apply(input, other)
    if a == 1 and b == 2:
        return VecMat.apply(input, other)
    if a == 2 and b == 2:
        return Mm.apply(input, other)
    return Matmul.apply(input, other)


def mm(input, mat2):
    """Product of two matrices (2-d only).

    >>> import teachgrad as tg
    >>> tg.mm(tg.ones(2, 3), tg.ones(3, 4)).shape
    teachgrad.Size([2, 4])
    """
    _check_dims("mm", input, mat2, (2,), (2,))
    _check_inner(input, mat2, 1, 0)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    """Batched product of (b, n, m) and (b, m, p) tensors.

    >>> import teachgrad as tg
    >>> tg.bmm(tg.ones(5, 2, 3), tg.ones(5, 3, 4)).shape
    teachgrad.Size([5, 2, 4])
    """
    _check_dims("bmm", input, mat2, (3,), (3,))
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"Expected size for first two dimensions of batch2 tensor to be: [{input.shape[0]}, "
                           f"{input.shape[2]}] but got: [{mat2.shape[0]}, {mat2.shape[1]}].")
    _check_inner(input, mat2, 2, 1)
    return Bmm.apply(input, mat2)


def mv(input, vec):
    """Matrix-vector product.

    >>> import teachgrad as tg
    >>> tg.mv(tg.ones(2, 3), tg.ones(3))
    tensor([3., 3.])
    """
    _check_dims("mv", input, vec, (2,), (1,))
    _check_inner(input, vec, 1, 0)
    return Mv.apply(input, vec)


def dot(input, tensor):
    """Inner product of two 1-d tensors.

    >>> import teachgrad as tg
    >>> tg.dot(tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]))
    tensor(11.)
    """
    _check_dims("dot", input, tensor, (1,), (1,))
    if input.shape[0] != tensor.shape[0]:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input.shape[0]}] and src "
                           f"[{tensor.shape[0]}] to have the same number of elements, but got "
                           f"{input.shape[0]} and {tensor.shape[0]} elements respectively")
    return Dot.apply(input, tensor)


def outer(input, vec2):
    """Outer product of two 1-d tensors (recorded as a broadcast multiply, like torch).

    >>> import teachgrad as tg
    >>> tg.outer(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 10.0]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    _check_dims("outer", input, vec2, (1,), (1,))
    return input.unsqueeze(1) * vec2

"""``tg.linalg``: the norms of ``torch.linalg`` (``vector_norm``, ``matrix_norm``, ``norm``), and
``qr`` with ``solve_triangular`` (ops, written in ``ops/linalg.py``).

``vector_norm`` is one op, the one ``Tensor.norm`` records (``LinalgVectorNormBackward0``).
The matrix norms are built from it as torch builds them, so their graphs are torch's:
``'fro'`` is the vector 2-norm over the two dims; ``ord=1`` (``-1``) is the largest
(smallest) column sum of absolute values, a vector 1-norm down the columns, then ``amax``
(``amin``) along the rows; ``ord=inf`` (``-inf``) the same with rows and columns swapped.
``norm`` chooses between the two by ``dim`` and the input's dims, as torch's does.

The spectral and nuclear norms (``ord=2``, ``-2``, ``'nuc'``) need singular values, which
teachgrad does not compute: they are refused.

    >>> import teachgrad as tg
    >>> A = tg.tensor([[1.0, -2.0], [3.0, 4.0]], requires_grad=True)
    >>> tg.linalg.matrix_norm(A, ord=1), tg.linalg.norm(A)
    (tensor(6., grad_fn=<AmaxBackward0>), tensor(5.4772, grad_fn=<LinalgVectorNormBackward0>))
"""

from __future__ import annotations

import math

from ._out import accepts_out
from ._printing import scalar_type_name
from ._tensor import _wrap_dim
from .ops.linalg import linalg_qr, solve_triangular
from .ops.reduce import amax, amin
from .ops.reduce import norm as _tensor_norm

__all__ = ["matrix_norm", "norm", "qr", "solve_triangular", "vector_norm"]


def vector_norm(x, ord=2, dim=None, keepdim=False, *, dtype=None):
    """The vector ``ord``-norm of ``x`` over ``dim`` (every element by default): ord a
    number, inf, -inf or 0.

    >>> import teachgrad as tg
    >>> tg.linalg.vector_norm(tg.tensor([3.0, -4.0])), tg.linalg.vector_norm(tg.tensor([3.0, -4.0]), 1)
    (tensor(5.), tensor(7.))
    """
    if not isinstance(ord, int | float):  # (a bool is a number here too, as in torch)
        raise TypeError(
            f"linalg_vector_norm(): argument 'ord' must be Number, not {type(ord).__name__}\n"
            "  A vector norm's order is a number; 'fro' and 'nuc' are matrix norms (matrix_norm)."
        )
    return _tensor_norm(x, ord, dim, keepdim, dtype)


def matrix_norm(A, ord="fro", dim=(-2, -1), keepdim=False, *, dtype=None):
    """The matrix ``ord``-norm of ``A`` over the two dims ``dim`` (the last two by default):
    ord ``'fro'``, ``1``, ``-1``, ``inf`` or ``-inf``.

    >>> import teachgrad as tg
    >>> A = tg.tensor([[1.0, -2.0], [3.0, 4.0]])
    >>> tg.linalg.matrix_norm(A, ord=float("inf")), tg.linalg.matrix_norm(A, ord=-1)
    (tensor(7.), tensor(4.))
    """
    if A.dim() < 2:
        raise RuntimeError(
            "linalg.matrix_norm: The input tensor A must have at least 2 dimensions.\n"
            f"  It has {A.dim()}: a vector's norm is vector_norm."
        )
    if not A.is_floating_point():  # (checked before the order, as torch does)
        raise RuntimeError(
            "linalg.matrix_norm: Expected a floating point or complex tensor as input. Got "
            f"{scalar_type_name(A)}\n  Hint: call .float() first."
        )
    dims = _two_dims(dim, A.dim())
    if ord == "fro":
        return vector_norm(A, 2, dims, keepdim, dtype=dtype)
    if ord in ("nuc", 2, -2):
        raise NotImplementedError(
            f"linalg.matrix_norm: ord={ord!r} needs the singular values of A, which teachgrad "
            "does not compute.\n  teachgrad has ord='fro', 1, -1, inf and -inf."
        )
    if isinstance(ord, str) or ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    down, along = dims if abs(ord) == 1 else dims[::-1]  # ±1: column sums; ±inf: row sums
    sums = vector_norm(A, 1, down, keepdim, dtype=dtype)
    along -= not keepdim and along > down  # (the dim summed down is gone)
    return (amax if ord > 0 else amin)(sums, along, keepdim)


def norm(A, ord=None, dim=None, keepdim=False, *, dtype=None):
    """A vector or a matrix norm, as torch's ``linalg.norm`` chooses: over one dim (an int,
    or one in a sequence) a vector norm, over two a matrix norm; without ``dim``, the
    vector 2-norm of all elements when ``ord`` is None too, else ``A`` must be 1-D (a vector
    norm) or 2-D (a matrix norm).

    >>> import teachgrad as tg
    >>> A = tg.tensor([[3.0, 4.0], [0.0, 0.0]])
    >>> tg.linalg.norm(A), tg.linalg.norm(A, dim=1), tg.linalg.norm(A, ord=1)
    (tensor(5.), tensor([5., 0.]), tensor(4.))
    """
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 1:
            if isinstance(ord, str):  # (a matrix norm's order over one dim)
                raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {dims[0]}")
            return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
        if len(dims) != 2:
            raise RuntimeError(
                f"linalg.norm: If dim is specified, it must be of length 1 or 2. Got {list(dims)}"
            )
        return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.dim() not in (1, 2):
        raise RuntimeError(
            "linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
            f"{A.dim()}D.\n  Give dim: one dim for a vector norm, two for a matrix norm."
        )
    if A.dim() == 1:
        return vector_norm(A, ord, None, keepdim, dtype=dtype)
    return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)


# torch's out= keyword (see _out), named as torch's messages name these functions
vector_norm = accepts_out(vector_norm, "linalg.vector_norm")
matrix_norm = accepts_out(matrix_norm, "linalg.matrix_norm")
norm = accepts_out(norm, "linalg.norm")
qr = accepts_out(linalg_qr, "linalg.qr")
solve_triangular = accepts_out(solve_triangular, "linalg.solve_triangular")


def _two_dims(dim, ndim: int) -> tuple:
    """``dim`` as two distinct dims of a tensor of ``ndim`` dims, wrapped (torch's error
    for anything else)."""
    if isinstance(dim, int) or len(dim) != 2:
        shown = dim if isinstance(dim, int) else " ".join(map(str, dim))
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {shown}")
    first, second = (_wrap_dim(d, ndim) for d in dim)
    if first == second:
        raise RuntimeError(
            f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})\n  The two "
            "dims are the matrix's rows and columns."
        )
    return first, second

"""Matrix products: matmul (``@``), mm, bmm, mv, dot, outer, and einsum; the QR
decomposition (``linalg.qr``, ``qr``) and the triangular solve its gradient needs.

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
import operator
import string
import warnings

from .._backend import array_module, bool_, int64, promote_types, quiet, result_type
from .._layout import contiguous_strides, iterator_strides, with_strides
from .._printing import c_type_name, scalar_name
from .._profiling import recorded_as
from .._tensor import Tensor, type_name, wrap_array
from ..autograd.builtin import Builtin
from ..autograd.forward_ad import tangent_sum, zero_if_none
from ..autograd.grad_mode import is_grad_enabled, no_grad
from .pointwise import broadcast_shape, operands, same_device
from .reduce import return_types, row_major, sum_to
from .views import cat, diagonal, expanded_shape, permute, view_strides


class Matmul(Builtin):
    on_arrays = True  # (indexing, not unsqueeze: arrays have it too)
    node_name = "UnsafeViewBackward0"  # torch's name for the general broadcast batched case
    batchable = True  # the formulas below broadcast over a leading batch dim of grad
    saved_names = ("self", "mat2")
    checked_first = ("mat2",)
    formula = {"self": "grad @ mat2ᵀ", "mat2": "selfᵀ @ grad"}
    # torch's tangent of a matrix product (not of dot) takes a missing tangent as zeros,
    # so an inf in the other operand gives NaN (inf · 0)
    zero_tangents = True

    @staticmethod
    @quiet
    def forward(ctx, a, b):
        x, y = operands(a, b, broadcast=False)
        need_a, need_b = ctx.needs_input_grad
        ctx.to_save = (a if need_b else None, b if need_a else None)
        return array_module(x).matmul(x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        (_, a_spec), (_, b_spec) = ctx._input_meta  # (the ndims are read here, not kept: memory)
        a_ndim, b_ndim = len(a_spec[0]), len(b_spec[0])
        if a_ndim == 1 and b_ndim == 1:  # dot product: a scalar result
            return grad * b if need_a else None, grad * a if need_b else None
        grad_a = grad_b = None
        if need_a:
            if b_ndim == 1:  # (..., n) = (..., n, k) @ (k,): dA = dC ⊗ b
                grad_a = grad[..., None] * b
            elif a_ndim == 1:  # a was a row vector
                grad_a = (grad[..., None, :] @ b.mT).squeeze(-2)
            else:
                grad_a = grad @ b.mT
        if need_b:
            if a_ndim == 1:  # (..., m) = (k,) @ (..., k, m): dB = a ⊗ dC
                grad_b = a[:, None] * grad[..., None, :]
            elif b_ndim == 1 and a_ndim == 2:  # dB = dC @ A: one product, even for a batch of dC
                grad_b = grad @ a
            elif b_ndim == 1:
                grad_b = (a.mT @ grad[..., None]).squeeze(-1)
            else:
                grad_b = a.mT @ grad
        return grad_a, grad_b

    @staticmethod
    def jvp(ctx, ta, tb):  # the product rule: d(AB) = dA B + A dB
        a, b = ctx.inputs
        cls = type(ctx)._forward_cls
        if cls.zero_tangents:
            ta, tb = zero_if_none(ta, a), zero_if_none(tb, b)
        return tangent_sum(
            None if ta is None else cls.apply(ta, b), None if tb is None else cls.apply(a, tb)
        )


def layout_args(name: str, i: int) -> dict:
    """The ``saved_args`` of the ``i``-th matrix that torch's mm and addmm nodes describe:
    its sizes, and its strides when it needs a gradient (else ``()``), as torch's node
    shows them. They are worked out when read: the sizes from the node's input meta (the
    two matrices are its last two inputs), the strides from what ``keep_layouts`` kept."""
    return {
        f"{name}_sym_sizes": lambda node: node._input_meta[i - 2][1][0],
        f"{name}_sym_strides": lambda node: _element_strides(node, i),
    }


def keep_layouts(a, b, need_a, need_b) -> tuple:
    """What ``layout_args`` cannot read from the node: each matrix's strides in bytes, kept
    only for a matrix that needs a gradient and is not plainly row-major (None otherwise).

    Memory: in a deep chain of products, shapes and strides kept per node were 550 bytes
    of Python objects a node (``benchmarks/bench.py`` (c): 110 KiB of its 200 products).
    """
    kept = _strides_kept(a._data, need_a), _strides_kept(b._data, need_b)
    return _NONE_KEPT if kept == _NONE_KEPT else kept  # (one tuple for all: 11 KiB more in (c))


_NONE_KEPT = (None, None)


def _strides_kept(x, need):
    """None where the strides need not be kept: the matrix needs no gradient, or its strides
    are torch's row-major ones. That is so for a row-major matrix with both sizes above 1
    (exactly what NumPy's two flags say then), and for a fresh empty one (whose strides NumPy
    may give as 0: ``Tensor.stride``'s rule)."""
    row_major = x.flags.c_contiguous and not x.flags.f_contiguous or not x.size and x.base is None
    return None if not need or row_major else x.strides


def _element_strides(node, i) -> tuple:
    """The ``i``-th matrix's strides in elements, as torch's node shows them, or ``()``
    when it needs no gradient (torch keeps them only for that matrix's formula)."""
    if not node.needs_input_grad[i - 2]:
        return ()
    shape, dtype, _ = node._input_meta[i - 2][1]
    strides = node.layouts[i]
    if strides is None:
        return contiguous_strides(shape)
    return tuple(s // dtype.itemsize for s in strides)


class Mm(Matmul):
    node_name = "MmBackward0"
    saved_args = {**layout_args("self", 0), **layout_args("mat2", 1)}

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.layouts = keep_layouts(*inputs, *ctx.needs_input_grad)


class Bmm(Matmul):
    node_name = "BmmBackward0"


class Addbmm(Builtin):
    """``beta · self + alpha · Σ_b batch1[b] @ batch2[b]``: bmm's products, summed over the
    batch, added to ``self`` (broadcast to the result's shape)."""

    node_name = "AddbmmBackward0"
    saved_names = ("batch1", "batch2")
    saved_args = {
        "alpha": "alpha",
        "beta": "beta",
        "batch1_sym_argsize_0": ("sizes", operator.itemgetter(0)),
        "batch1_sym_argsize_1": ("sizes", operator.itemgetter(1)),
        "batch2_sym_argsize_2": ("sizes", operator.itemgetter(2)),
    }
    formula = {
        "self": "grad · beta",
        "batch1": "alpha · grad @ batch2ᵀ, for each of the batch",
        "batch2": "alpha · batch1ᵀ @ grad, for each of the batch",
    }

    @staticmethod
    @quiet
    def forward(ctx, input, batch1, batch2, beta, alpha):
        _, need_1, need_2 = ctx.needs_input_grad[:3]
        ctx.to_save = (batch1 if need_2 else None, batch2 if need_1 else None)
        ctx.beta, ctx.alpha = beta, alpha
        b1, b2 = batch1._data, batch2._data
        ctx.sizes = (b1.shape[0], b1.shape[1], b2.shape[2])  # (the batch, n and p)
        x = input._data
        products = array_module(x).matmul(b1, b2).sum(axis=0, dtype=x.dtype)
        if x.dtype.kind in "iu":  # (an integer result takes whole factors, as torch's)
            alpha, beta = int(alpha), int(beta)
        if beta == 0:  # (self is then ignored, as torch's: its NaNs do not show)
            return _times(products, alpha)
        return _times(products, alpha) + _times(x, beta)

    @staticmethod
    def backward(ctx, grad):
        batch1, batch2 = ctx.saved_tensors
        need_self, need_1, need_2 = ctx.needs_input_grad[:3]
        each = grad.unsqueeze(0).expand(ctx.sizes)  # (every product got the whole grad)
        return (
            _times(grad, ctx.beta) if need_self else None,
            _times(each @ batch2.mT, ctx.alpha) if need_1 else None,
            _times(batch1.mT @ each, ctx.alpha) if need_2 else None,
            None,
            None,
        )

    @staticmethod
    def jvp(ctx, t_self, t1, t2, *_):
        input, batch1, batch2 = ctx.inputs[:3]
        t1, t2 = zero_if_none(t1, batch1), zero_if_none(t2, batch2)  # (the result's shape)
        products = (t1 @ batch2).sum(0) + (batch1 @ t2).sum(0)
        return tangent_sum(None if t_self is None else t_self * ctx.beta, products * ctx.alpha)


def _times(x, factor):
    """``x · factor``, or ``x`` itself for a factor of 1 (torch's ``maybe_multiply``)."""
    return x if factor == 1 else x * factor


class Mv(Matmul):
    node_name = "MvBackward0"
    saved_names = ("self", "vec")
    checked_first = ()  # (unlike mm's node, torch's mv and dot check self first)
    formula = {"self": "outer(grad, vec)", "vec": "selfᵀ @ grad"}


class Dot(Matmul):
    node_name = "DotBackward0"
    zero_tangents = False
    batchable = False  # grad is 0-d, so a batch of them does not broadcast against a vector
    saved_names = ("self", "tensor")
    checked_first = ()
    formula = {"self": "grad · tensor", "tensor": "grad · self"}


class VecMat(Matmul):
    node_name = "SqueezeBackward4"  # torch computes 1-d @ 2-d as unsqueeze, mm, squeeze
    formula = {"self": "mat2 @ grad", "mat2": "outer(self, grad)"}


def _vector_matrix(vector, matrix):
    """``vector @ matrix``; torch squeezes its ``mm`` result in place, so the product starts
    at version 1 (which ``_version`` shows)."""
    out = VecMat.apply(vector, matrix)
    out._counter.bump("squeeze_")
    return out


class MatmulViaClone(Matmul):
    node_name = (
        "CloneBackward0"  # torch computes 2-d @ batched as a transposed product, then a copy
    )


# --------------------------------------------------------------------------- checks (torch's messages)


def _fail(message, hint):
    raise RuntimeError(f"{message}\n  {hint}")


def _check_same_dtype(kind, a, b):
    """Matrix products don't promote: both operands must have one dtype (torch's errors)."""
    if a._data.dtype == b._data.dtype:
        return
    da, db = a._data.dtype.name, b._data.dtype.name
    sa, sb = scalar_name(da), scalar_name(db)
    message = {
        "dot": f"dot : expected both vectors to have same dtype, but found {sa} and {sb}",
        "mv": f"addmv input tensors must have the same dtype, but got {sb}, {sa}, and {sb}",
        "mm": f"expected m1 and m2 to have the same dtype, but got: {c_type_name(da)} != "
        f"{c_type_name(db)}",
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
        if a.ndim == 0:  # (torch reads the matrix's dim 0 first)
            raise IndexError(
                "Dimension specified as 0 but tensor has no dimensions\n  mv takes a 2-D matrix "
                f"and a 1-D vector; {shapes}."
            )
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


def _refuse_bools(kernel, a, b=None):
    """torch's products have no kernel for bools (run after the shape checks, as torch's).
    Only dot runs it on empty operands: the others fill the result with zeros instead."""
    if a._data.dtype.kind == "b" and (b is None or a._data.size and b._data.size):
        _no_bool_kernel(kernel)


def _no_bool_kernel(kernel):
    raise NotImplementedError(
        f"\"{kernel}\" not implemented for 'Bool'\n  For a logical product, multiply ints: "
        "(a.long() @ b.long()) > 0."
    )


# each size check ends with the check of the kernel torch then runs: dot, addmv, addmm or bmm


def _check_dot_sizes(a, b):
    if a.shape[0] != b.shape[0]:
        _fail(
            f"inconsistent tensor size, expected tensor [{a.shape[0]}] and src [{b.shape[0]}] to have the same "
            f"number of elements, but got {a.shape[0]} and {b.shape[0]} elements respectively",
            _inner_hint(a, b),
        )
    _refuse_bools("dot", a)


def _check_mv_sizes(a, b, given=None):
    """(``given``: the operands as the user gave them, for the hint, when torch checks
    others made from them: see ``_check_folded``.)"""
    if a.shape[-1] != b.shape[0]:
        n = _rows(a)
        _fail(
            f"size mismatch, got input ({n}), mat ({n}x{a.shape[-1]}), vec ({b.shape[0]})",
            _inner_hint(*(given or (a, b))),
        )


def _check_mm_sizes(a, b, given=None):
    if a.shape[-1] != b.shape[0]:
        _fail(
            f"mat1 and mat2 shapes cannot be multiplied ({_rows(a)}x{a.shape[-1]} and {b.shape[0]}x{b.shape[1]})",
            _inner_hint(*(given or (a, b))),
        )


def _check_bmm_sizes(a, b, batch_a, batch_b):
    if batch_a != batch_b or a.shape[-1] != b.shape[-2]:
        _fail(
            f"Expected size for first two dimensions of batch2 tensor to be: [{batch_a}, {a.shape[-1]}] but "
            f"got: [{batch_b}, {b.shape[-2]}].",
            _inner_hint(a, b),
        )


# torch's order of checks: the sizes, then the dtypes (bmm refuses bools before it compares them)


def _check_mv(a, b):
    _check_mv_sizes(a, b)
    _check_same_dtype("mv", a, b)
    _refuse_bools("addmv_impl_cpu", a, b)


def _check_mm(a, b):
    _check_mm_sizes(a, b)
    _check_same_dtype("mm", a, b)
    _refuse_bools("addmm_impl_cpu_", a, b)


def _check_bmm(a, b, batch_a, batch_b):
    _check_bmm_sizes(a, b, batch_a, batch_b)
    _refuse_bools("bmm", a, b)
    _check_same_dtype("bmm", a, b)


@recorded_as("aten::matmul")
def matmul(input, other):
    """Matrix product with torch's rules for 1-d, 2-d and batched (broadcast) operands.

    >>> import teachgrad as tg
    >>> (tg.ones(4, 2, 3) @ tg.ones(3, 5)).shape, (tg.ones(3) @ tg.ones(3))
    (teachgrad.Size([4, 2, 5]), tensor(3.))
    """
    for t, which in ((input, "'input' (position 1)"), (other, "'other' (position 2)")):
        if not isinstance(t, Tensor):
            raise TypeError(f"matmul(): argument {which} must be Tensor, not {type_name(t)}")
    same_device(input, other)
    a, b = input._data.ndim, other._data.ndim
    if a == 0 or b == 0:
        raise RuntimeError(
            f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D"
        )
    if a == 1 and b == 1:
        return dot(input, other)
    if b == 1:  # matrix (or a batch of them, folded into rows) @ vector
        _check_mv(input, other)
        return Mv.apply(input, other) if a == 2 else Matmul.apply(input, other)
    if b == 2:  # (vector | matrix | folded batch) @ matrix
        _check_mm(input, other)
        if a == 1:
            return _vector_matrix(input, other)
        return Mm.apply(input, other) if a == 2 else Matmul.apply(input, other)
    # batched: the batch dims broadcast, then one bmm over all of them
    if a <= 2:
        _check_folded(input, other)
    batch = broadcast_shape(input.shape[:-2], other.shape[:-2])
    _check_bmm(input, other, math.prod(batch), math.prod(batch))
    if a == 2 and input.requires_grad and is_grad_enabled():
        return MatmulViaClone.apply(input, other)
    return Matmul.apply(input, other)


def _check_folded(input, other) -> None:
    """For a vector or matrix ``input`` times a batch ``other``, torch may fold the batch of
    ``other.mT`` into rows and compute ``(other.mT @ input.mT).mT`` with one mv or mm (its
    ``should_fold``): then its size errors are mv's or mm's, of those operands. It folds
    when ``input`` requires grad; else, for a vector, when ``other.mT``'s batch dims lie
    one after another in memory (or it is empty). With matching inner sizes neither fails,
    so nothing is made then."""
    if input.shape[-1] == other.shape[-2]:
        return
    if not input.requires_grad and (input._data.ndim == 2 or not _batch_lies_flat(other)):
        return
    with no_grad():
        rows = other.mT
        if input._data.ndim == 1:
            _check_mv_sizes(rows, input, given=(input, other))
        else:
            _check_mm_sizes(rows, input.t(), given=(input, other))


def _batch_lies_flat(other) -> bool:
    """Whether ``other.mT`` can be viewed as rows without a copy (torch's test: each batch
    dim's stride is the next dim's stride times its size), or is empty."""
    if not other._data.size:
        return True
    shape, strides = list(other.shape), list(other.stride())
    shape[-2:], strides[-2:] = shape[:-3:-1], strides[:-3:-1]  # (the last two swapped: .mT)
    return all(strides[i] == strides[i + 1] * shape[i + 1] for i in range(len(shape) - 2))


def mm(input, mat2):
    """Product of two matrices (2-d only).

    >>> import teachgrad as tg
    >>> tg.mm(tg.ones(2, 3), tg.ones(3, 4)).shape
    teachgrad.Size([2, 4])
    """
    same_device(input, mat2)
    _check_ndim(input, mat2, "mm")
    _check_mm(input, mat2)
    return Mm.apply(input, mat2)


def bmm(input, mat2):
    """Batched product of (b, n, m) and (b, m, p) tensors.

    >>> import teachgrad as tg
    >>> tg.bmm(tg.ones(5, 2, 3), tg.ones(5, 3, 4)).shape
    teachgrad.Size([5, 2, 4])
    """
    same_device(input, mat2)
    _check_ndim(input, mat2, "bmm")
    _check_bmm(input, mat2, input.shape[0], mat2.shape[0])
    return Bmm.apply(input, mat2)


def addbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """``beta · input + alpha · Σ_b batch1[b] @ batch2[b]``: a batch of matrix products,
    summed, added to ``input`` (which broadcasts to the result's shape).

    >>> import teachgrad as tg
    >>> tg.addbmm(tg.zeros(2, 2), tg.ones(3, 2, 1), tg.ones(3, 1, 2), alpha=2)
    tensor([[6., 6.],
            [6., 6.]])
    """
    same_device(input, batch1, batch2)
    expanded_shape(input, (batch1.size(1), batch2.size(2)))  # (torch expands input first)
    _check_ndim(batch1, batch2, "bmm")
    (batches, n, m), (other_batches, k, p) = batch1.shape, batch2.shape
    hint = f"addbmm adds up batch1[b] @ batch2[b]; got shapes {(batches, n, m)} and {(other_batches, k, p)}."
    if batches != other_batches:
        _fail(
            f"batch1 and batch2 must have same number of batches, got {batches} and {other_batches}",
            hint,
        )
    if m != k:
        _fail(f"Incompatible matrix sizes for bmm ({n}x{m} and {k}x{p})", hint)
    for name, t in (("self", input), ("mat1", batch1)):  # (torch's names, from addmm)
        if t._data.dtype != batch2._data.dtype:
            _fail(
                f"{name} and mat2 must have the same dtype, but got {scalar_name(t._data.dtype.name)} "
                f"and {scalar_name(batch2._data.dtype.name)}",
                "Matrix products don't promote dtypes: convert one operand first, e.g. b.to(a.dtype).",
            )
    return Addbmm.apply(input, batch1, batch2, beta, alpha)


def mv(input, vec):
    """Matrix-vector product.

    >>> import teachgrad as tg
    >>> tg.mv(tg.ones(2, 3), tg.ones(3))
    tensor([3., 3.])
    """
    same_device(input, vec)
    _check_ndim(input, vec, "mv")
    _check_mv(input, vec)
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


@recorded_as("aten::outer")
def outer(input, vec2):
    """Outer product of two 1-d tensors (recorded as a broadcast multiply, like torch).

    >>> import teachgrad as tg
    >>> tg.outer(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 10.0]))
    tensor([[ 1., 10.],
            [ 2., 20.]])
    """
    same_device(input, vec2)
    _check_ndim(input, vec2, "outer")
    return input.reshape(-1, 1) * vec2  # (torch reshapes: ViewBackward0)


# --------------------------------------------------------------------------- einsum
#
# einsum("ij,jk->ik", A, B) names every dim with a letter: a letter shared by operands
# pairs their dims up, a letter missing from the output is summed over. The gradient
# with respect to one operand is again an einsum: the output's gradient times all the
# other operands, keeping exactly that operand's letters ("ik,jk->ij" for A above).

_LETTERS = string.ascii_letters  # the labels torch allows: a-z and A-Z


_DOTS = "'...' (three dots, at most once per operand) stands for the dims the letters don't name."


def _einsum_error(message, hint):
    raise RuntimeError(f"einsum(): {message}\n  {hint}")


def _check_dots(term, where):
    """``.`` only as one ``...`` per term (torch's messages)."""
    if term.count("...") > 1:
        _einsum_error(f"found '.' for {where} for which an ellipsis was already found", _DOTS)
    if term.replace("...", "").count("."):
        suffix = "" if where.startswith("operand") else " (...)"
        _einsum_error(f"found '.' for {where} that is not part of any ellipsis{suffix}", _DOTS)


def _parse_einsum(equation, operands):
    """The equation spelled out: one label string per operand and one for the output,
    ``...`` replaced by letters the equation does not use; and the size of each label
    (a size-1 dim broadcasts). Raises torch's errors for what does not fit."""
    arrow_at = equation.find("->")
    for i, c in enumerate(equation):
        if arrow_at != -1 and arrow_at <= i <= arrow_at + 1:
            continue  # the arrow itself
        allowed = _LETTERS + (". " if arrow_at != -1 and i > arrow_at else ",. ")
        if c not in allowed:
            _einsum_error(
                f"invalid subscript given at index {i} in the equation string, subscripts must be in "
                "[a-zA-Z]",
                "Dims are named by letters; ',' separates the operands and '->' starts the output.",
            )
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        _einsum_error(
            f"{'fewer' if len(terms) > len(operands) else 'more'} operands were provided than "
            "specified in the equation",
            f"{lhs!r} names {len(terms)} operand(s) (separated by ','); {len(operands)} were given.",
        )
    covered = []  # how many dims each operand's ellipsis stands for
    for k, (term, x) in enumerate(zip(terms, operands)):
        _check_dots(term, f"operand {k}")
        n = len(term.replace("...", ""))
        if "..." in term and n > x.ndim or "..." not in term and n != x.ndim:
            _einsum_error(
                f"the number of subscripts in the equation ({n}) "
                + ("is more than" if "..." in term else "does not match")
                + f" the number of dimensions ({x.ndim}) for operand {k}"
                + ("" if "..." in term else " and no ellipsis was given"),
                f"Operand {k} has shape {tuple(x.shape)}: one letter per dim, or '...' for the rest.",
            )
        covered.append(x.ndim - n if "..." in term else 0)
    free = [c for c in _LETTERS if c not in equation]
    ellipsis = "".join(free[: max(covered)])
    if len(ellipsis) < max(covered):
        _einsum_error("too many dimensions covered by ellipsis", "Name some of them with letters.")
    # an ellipsis covers the last dims of the broadcast ellipsis shape (aligned right)
    terms = [t.replace("...", ellipsis[len(ellipsis) - n :]) for t, n in zip(terms, covered)]
    used = "".join(terms)
    if arrow:
        _check_dots(rhs, "output")
        out = rhs.replace("...", ellipsis)
        for i, c in enumerate(out):
            if c not in used:
                _einsum_error(
                    f"output subscript {c} does not appear in the equation for any input operand",
                    "Each output letter must name a dim of some operand.",
                )
            if c in out[:i]:
                _einsum_error(
                    f"output subscript {c} appears more than once in the output",
                    "For a diagonal, repeat the letter in the operand instead: 'ii->i'.",
                )
    else:  # implicit output: the ellipsis dims, then the letters used once, in alphabetical order
        out = ellipsis + "".join(sorted(c for c in set(used) - set(ellipsis) if used.count(c) == 1))
    return terms, out, _label_sizes(terms, operands, ellipsis)


def _label_sizes(terms, operands, ellipsis) -> dict:
    sizes = {}
    for k, (term, x) in enumerate(zip(terms, operands)):
        for d, (c, n) in enumerate(zip(term, x.shape)):
            first = term.index(c)
            if first != d:  # a letter repeated within one operand: its diagonal
                if x.shape[first] != n:
                    _einsum_error(
                        f"subscript {c} is repeated for operand {k} but the sizes don't match, "
                        f"{n} != {x.shape[first]}",
                        "A letter repeated in one operand takes a diagonal: both dims need one size.",
                    )
            elif n == 1:
                sizes.setdefault(c, 1)  # a size-1 dim broadcasts against any size
            else:
                if sizes.get(c, 1) not in (1, n):
                    if c in ellipsis:
                        message = (
                            f"dimension {d} covered by ellipsis in operand {k} has size {n} which does "
                            f"not broadcast with previously seen ellipsis with size {sizes[c]} for "
                            "the respective dimension"
                        )
                    else:
                        message = (
                            f"subscript {c} has size {n} for operand {k} which does not broadcast with "
                            f"previously seen size {sizes[c]}"
                        )
                    _einsum_error(
                        message, "Dims named alike pair up: equal sizes, or 1 (broadcast)."
                    )
                sizes[c] = n
    return sizes


class Einsum(Builtin):
    # einsum has no node of its own in torch: it reports the last op it was computed with,
    # a view of a batched product when letters were summed, else a product
    node_name = "ViewBackward0"
    formula = {"operands": "einsum of grad with the rest of the operands"}

    @staticmethod
    @quiet
    def forward(ctx, spec, *operands):
        terms, out, sizes = spec
        ctx.spec, ctx.shapes = spec, tuple(o._data.shape for o in operands)
        # each operand's gradient is made from the others
        ctx.to_save = operands if len(operands) > 1 else ()
        dt = result_type(*operands).numpy
        arrays = [o._data if o._data.dtype == dt else o._data.astype(dt) for o in operands]
        xp = array_module(arrays[0])
        spread = [  # (NumPy's einsum does not broadcast a size-1 dim)
            xp.broadcast_to(x, shape) if x.shape != shape else x
            for x, shape in zip(arrays, (tuple(sizes[c] for c in t) for t in terms))
        ]
        result = xp.einsum(",".join(terms) + "->" + out, *spread, optimize=len(arrays) > 1)
        if len(arrays) == 1:  # NumPy's layout follows the input's; torch's sum is row-major
            return row_major(result)
        return with_strides(result, _torch_strides(terms, out, arrays))

    @staticmethod
    def backward(ctx, grad):
        operands = ctx.saved_tensors
        return (None,) + tuple(
            _einsum_grad(grad, k, operands, ctx.shapes[k], *ctx.spec) if needed else None
            for k, needed in enumerate(ctx.needs_input_grad[1:])
        )

    zero_tangents = True  # (as matmul's, where torch computes it with a batched product)

    @staticmethod
    def jvp(ctx, _, *tangents):  # the product rule: one operand moves at a time
        cls, operands = type(ctx)._forward_cls, ctx.inputs[1:]
        apply = cls.apply
        terms, out, sizes = ctx.spec
        summed = set("".join(terms)) - set(out)  # (torch multiplies where they have size 1)
        if cls.zero_tangents and any(sizes[c] > 1 for c in summed):
            tangents = [zero_if_none(t, o) for t, o in zip(tangents, operands)]
        terms = []
        for k, t in enumerate(tangents):
            if t is not None:
                terms.append(apply(ctx.spec, *operands[:k], t, *operands[k + 1 :]))
        return tangent_sum(*terms)


class EinsumSum(Einsum):
    node_name = "SumBackward1"  # one operand with letters summed: torch's last op is a sum


class EinsumMul(Einsum):
    node_name = "MulBackward0"  # several operands, nothing summed: torch's last op is a product
    zero_tangents = False


def _torch_strides(terms, out, arrays) -> tuple:
    """The strides of torch's result of an einsum of two or more operands, found by
    following its computation on shapes and strides alone (the values come from NumPy).

    torch aligns every operand on the same dims, the output's letters then the summed
    ones (size 1 where it lacks a letter). Then, left to right, it multiplies each pair and
    sums every letter no later operand has, the result standing in for the pair: as one
    batched product (``bmm``) when the pair sums a letter both have, whose result is a
    permuted view laid out in the product's order (see ``_product_layout``), else as an
    elementwise product. Finally the summed dims (size 1 by then) are viewed away.
    """
    order = out + "".join(sorted(set("".join(terms)) - set(out)))  # (summed letters last)
    ops = [_aligned(x, term, order) for x, term in zip(arrays, terms)]
    counts = {d: sum(shape[d] != 1 for shape, _ in ops) for d in range(len(out), len(order))}
    while len(ops) > 1:
        a, b = ops.pop(0), ops.pop(0)
        summed = []
        for d, n in counts.items():
            if a[0][d] != 1 and b[0][d] != 1:
                counts[d] -= 1
                if counts[d] == 1:  # no later operand has it: summed in the product
                    summed.append(d)
                    counts[d] = 0
            elif n == 1 and (a[0][d] != 1 or b[0][d] != 1):  # only this one: summed first
                a, b = (_summed(a, d), b) if a[0][d] != 1 else (a, _summed(b, d))
                counts[d] = 0
        ops.insert(0, _product_layout(a, b, summed) if summed else _elementwise_layout(a, b))
    shape, strides = ops[0]
    if len(order) == len(out):
        return strides
    if not math.prod(shape):  # (torch views an empty tensor with row-major strides)
        return contiguous_strides(shape[: len(out)])
    return view_strides(shape, strides, shape[: len(out)])


def _aligned(x, term, order) -> tuple:
    """The (shape, strides) of array ``x`` (labelled ``term``) with one dim per letter of
    ``order``, in that order, as torch's views make it: the diagonal for a repeated letter,
    a new size-1 dim (stride 1, appended last) for a missing one, then a permutation."""
    shape, strides = list(x.shape), [s // x.itemsize for s in x.strides]
    dim_of = {}
    for c in term:
        d = len(dim_of)  # the dim of this letter in what is left of x
        if c in dim_of:  # a repeated letter: its diagonal, at the first one's place
            strides[dim_of[c]] += strides.pop(d)
            shape.pop(d)
        else:
            dim_of[c] = d
    for c in order:
        if c not in dim_of:
            dim_of[c] = len(shape)
            shape.append(1)
            strides.append(1)
    return tuple(shape[dim_of[c]] for c in order), tuple(strides[dim_of[c]] for c in order)


def _summed(layout, d) -> tuple:
    """A sum over dim ``d`` with keepdim: a new row-major tensor."""
    shape = layout[0][:d] + (1,) + layout[0][d + 1 :]
    return shape, contiguous_strides(shape)


def _elementwise_layout(a, b) -> tuple:
    """``a * b``: laid out by the operands' strides, as torch's elementwise ops."""
    shape = broadcast_shape(a[0], b[0])
    spread = [tuple(0 if n == 1 and m != 1 else s for n, s, m in zip(*x, shape)) for x in (a, b)]
    return shape, iterator_strides(shape, spread)


def _product_layout(left, right, summed) -> tuple:
    """``(left * right).sum(summed, keepdim=True)`` as torch's einsum makes it: one batched
    product whose batch is the dims both have (``lro``), its rows the dims of ``left`` alone
    (``lo``), its columns those of ``right`` (``ro``, with the dims neither has), the summed
    dims its inner one. The result is a view of the product, laid out lro, lo, summed, ro;
    torch swaps the operands when all of ro comes before lo in the output, so that the
    product is already in the output's order."""
    lro, lo, ro = [], [], []
    for d, (n, m) in enumerate(zip(left[0], right[0])):
        if d not in summed:
            (lro if n != 1 and m != 1 else lo if n != 1 else ro).append(d)
    if lo and ro and ro[-1] < lo[0]:
        lo, ro = ro, lo
    shape = tuple(
        1 if d in summed else max(n, m) for d, (n, m) in enumerate(zip(left[0], right[0]))
    )
    laid = lro + lo + summed + ro
    steps = contiguous_strides([shape[d] for d in laid])
    return shape, tuple(steps[laid.index(d)] for d in range(len(shape)))


def _einsum_grad(grad, k, operands, shape, terms, out, sizes):
    """The gradient of operand ``k`` (of ``shape``): an einsum of the output's gradient and the
    other operands."""
    xp = array_module(grad)
    dt = grad._data.dtype
    inputs = [out] + [t for j, t in enumerate(terms) if j != k]
    tensors = [grad] + [
        o if o.dtype == grad.dtype else o.to(grad.dtype) for j, o in enumerate(operands) if j != k
    ]
    fresh = iter(c for c in _LETTERS if c not in "".join(terms))
    target = ""
    for c in terms[k]:
        if c in target:
            # a repeated letter read only the diagonal: an identity puts the gradient there
            other = next(fresh)
            inputs.append(c + other)
            tensors.append(wrap_array(xp.eye(sizes[c], dtype=dt)))
            c = other
        target += c
    for c in dict.fromkeys(terms[k]):
        if not any(c in t for t in inputs):
            # summed over in this operand alone: each element along it gets the same gradient
            inputs.append(c)
            tensors.append(wrap_array(xp.ones(sizes[c], dtype=dt)))
    g = einsum(",".join(inputs) + "->" + target, *tensors)
    # a dim of size 1 broadcast against the others: the gradient at full size, then summed
    # back (a letter that only size-1 dims of the others have comes out of size 1)
    full = tuple(sizes[c] for c in terms[k])
    return sum_to(g if tuple(g.shape) == full else g.expand(full), shape)


def _relabel(x, term, out):
    """einsum of one operand with nothing summed only takes diagonals and reorders dims:
    a view, as in torch (diagonal for each repeated letter, then permute)."""
    kept = ""
    for c in term:
        if c in kept:
            p = kept.index(c)
            x = diagonal(x, 0, p, len(kept)).movedim(-1, p)
        else:
            kept += c
    return permute(x, tuple(kept.index(c) for c in out))


def _pairwise_dtype(terms, out, operands):
    """The dtype torch's einsum computes in. torch multiplies the operands pair by pair from
    the left: a pair that sums a letter both hold at a size other than 1 is a batched product
    (``bmm``), which takes one dtype and no bools (torch's errors); any other pair is an
    elementwise product, which promotes."""
    dtypes = _after_private_sums(terms, out, operands)
    dtype, sizes = dtypes[0], dict(zip(terms[0], operands[0].shape))
    for k in range(1, len(operands)):
        b, term = operands[k], terms[k]
        later = set(out).union(*terms[k + 1 :])
        b_sizes = dict(zip(term, b.shape))
        if 0 in sizes.values() or not b.numel():  # an empty product: torch makes it of b's dtype
            dtype = dtypes[k]
        elif any(sizes.get(c, 1) != 1 != b_sizes[c] for c in set(term) - later):
            if dtype == bool_:
                _no_bool_kernel("bmm")
            if dtypes[k] != dtype:
                first, other = dtype.numpy.name, dtypes[k].numpy.name
                _fail(
                    f"expected scalar type {scalar_name(first)} but found {scalar_name(other)}",
                    "einsum's operands must have one dtype: convert them first, e.g. b.to(a.dtype).",
                )
        else:
            dtype = promote_types(dtype, dtypes[k])
        for c, n in b_sizes.items():  # (the product's size: a size-1 dim broadcasts)
            sizes[c] = n if sizes.get(c, 1) == 1 else sizes[c]
    return dtype


def _after_private_sums(terms, out, operands) -> list:
    """Each operand's dtype once torch has summed out of it the letters no other operand and
    not the output has (a letter of size 1 is only dropped): a sum makes integers and bools
    int64, so ``einsum("ik,j->ij", bools, bools)`` is int64, as torch's."""
    dtypes = []
    for k, (operand, term) in enumerate(zip(operands, terms, strict=True)):
        others = set(out).union(*(t for j, t in enumerate(terms) if j != k))
        summed = any(c not in others and n != 1 for c, n in zip(term, operand.shape))
        integer = operand._data.dtype.kind in "biu"
        dtypes.append(int64 if summed and integer else operand.dtype)
    return dtypes


@recorded_as("aten::einsum")
def einsum(equation=None, *operands):  # (no equation: torch's ValueError below)
    """Sum of products named by letters: ``"ij,jk->ik"`` is a matrix product, ``"ii"`` a trace,
    ``"ii->i"`` a diagonal, ``"i,j->ij"`` an outer product, ``"...ij->...ji"`` a batched transpose.

    A letter repeated across operands pairs their dims; a letter missing from the output
    (after ``->``) is summed over. Without ``->`` the output has the letters used once,
    in alphabetical order.

    >>> import teachgrad as tg
    >>> A, B = tg.ones(2, 3), tg.ones(3, 4)
    >>> tg.einsum("ij,jk->ik", A, B).shape, tg.einsum("ii", tg.eye(3))
    (teachgrad.Size([2, 4]), tensor(3.))
    """
    if len(operands) == 1 and isinstance(operands[0], list | tuple):
        operands = tuple(operands[0])
    if not operands:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least one "
            "operand and its subscripts list\n  e.g. tg.einsum('ij,jk->ik', A, B)"
        )
    if not isinstance(equation, str):
        raise TypeError(
            f"einsum(): argument 'equation' (position 1) must be str, not {type_name(equation)}"
        )
    for k, operand in enumerate(operands):
        if not isinstance(operand, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument 1, but got {type_name(operand)}"
            )
    same_device(*operands)
    terms, out, sizes = _parse_einsum(equation, operands)
    summed = set("".join(terms)) - set(out)
    if len(operands) == 1 and not summed:
        return _relabel(operands[0], terms[0], out)
    if len(operands) > 1:
        dtype = _pairwise_dtype(terms, out, operands)
        operands = tuple(o if o.dtype == dtype else o.to(dtype) for o in operands)
    if len(operands) == 1 and summed and operands[0]._data.dtype.kind in "biu":
        operands = (operands[0].long(),)  # torch sums ints and bools as int64
    cls = EinsumMul if not summed else EinsumSum if len(operands) == 1 else Einsum
    return cls.apply((terms, out, sizes), *operands)


# --------------------------------------------------------------------------- QR and triangular solves


def _column_major(x):
    """Each matrix of ``x`` stored column by column, as LAPACK writes it (torch's strides)."""
    xp = array_module(x)
    return xp.swapaxes(xp.ascontiguousarray(xp.swapaxes(x, -1, -2)), -1, -2)


def _check_qr_differentiable(mode, rows, n):
    """torch's refusals to differentiate a QR that does not determine Q (``rows``, ``n``: R's
    last two sizes; a complete R has A's m rows)."""
    if mode == "r":
        raise RuntimeError(
            "The derivative of linalg.qr depends on Q, which is not computed when mode='r'. "
            "Please use linalg.qr(A, mode='reduced') if you are going to differentiate through "
            "linalg.qr.\n  mode='r' returns an empty Q: ask for mode='reduced' to train through it."
        )
    if mode == "complete" and rows > n:
        raise RuntimeError(
            "The QR decomposition is not differentiable when mode='complete' and nrows > ncols.\n"
            f"  The last {rows - n} columns of Q are any orthonormal completion: nothing in A fixes "
            "them. Use mode='reduced'."
        )


class LinalgQr(Builtin):
    """``linalg.qr``: ``A = Q R``, Q with orthonormal columns, R upper triangular, by
    Householder reflections (LAPACK's geqrf and orgqr; NumPy and CuPy run the same steps, so
    the signs are torch's: R's diagonal may be negative).

    The gradient (torch's ``linalg_qr_backward``), with the incoming gradients gQ and gR
    (``grad0``, ``grad1``) and ``M = gR Rᵀ − Qᵀ gQ``:

    * A tall or square (m ≥ n): ``gA = (gQ + Q S) R⁻ᵀ`` with ``S = triu(M) + triu(M, 1)ᵀ``,
      the symmetric matrix with M's upper triangle. Differentiating ``QᵀQ = I`` and
      ``A = QR`` ties dQ and dR together through ``Qᵀ dA R⁻¹``: S is what that tie sends
      back. ``R⁻ᵀ`` is never formed: ``X Rᵀ = gQ + Q S`` is a triangular solve
      (substitution, O(n²) per row of X, and more accurate than an inverse), with
      ``solve_triangular``, itself an op, so that double backward works.
    * A wide (m < n), ``A = [A₁ | A₂]``, ``R = [R₁ | R₂]`` with A₁ and R₁ square: Q depends
      on A₁ only, so ``gA = Q gR + [Q tril(Mᵀ − M) R₁⁻ᵀ | 0]``.
    """

    node_name = "LinalgQrBackward0"
    saved_names = ("Q", "R")
    saved_args = {"mode": "mode"}
    formula = {
        "A": "(grad0 + Q · (triu(M) + triu(M, 1)ᵀ)) · R⁻ᵀ, for rows ≥ columns; "
        "M = grad1 · Rᵀ − Qᵀ · grad0"
    }

    @staticmethod
    def forward(ctx, A, mode):
        if not isinstance(A, Tensor):
            raise TypeError(
                f"linalg_qr(): argument 'A' (position 1) must be Tensor, not {type_name(A)}"
            )
        if not isinstance(mode, str):
            raise TypeError(f"linalg_qr(): argument 'mode' must be str, not {type_name(mode)}")
        x = A._data
        if x.ndim < 2:
            _fail(
                "linalg.qr: The input tensor A must have at least 2 dimensions.",
                f"A has {x.ndim}: QR factors a matrix (or a batch of them), e.g. A.unsqueeze(-1).",
            )
        if x.dtype.kind != "f":
            _fail(
                "linalg.qr: Expected a floating point or complex tensor as input. Got "
                f"{scalar_name(x.dtype.name)}",
                "Convert it first, e.g. A.double().",
            )
        if mode not in ("reduced", "complete", "r"):
            _fail(
                f"qr received unrecognized mode '{mode}' but expected one of 'reduced' "
                "(default), 'r', or 'complete'",
                "'reduced': Q is m×k and R k×n (k = min(m, n)); 'complete': Q is m×m; "
                "'r': R alone.",
            )
        if x.dtype.itemsize == 2:
            raise NotImplementedError(
                "\"geqrf_cpu\" not implemented for 'Half'\n  LAPACK factors float32 and "
                "float64: A.float() first."
            )
        ctx.mode = mode
        xp = array_module(x)
        if mode == "r":  # (torch returns an empty Q)
            return xp.empty((0,), x.dtype), _column_major(xp.linalg.qr(x, mode="r"))
        q, r = xp.linalg.qr(x, mode=mode)
        return _column_major(q), _column_major(r)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = output

    @staticmethod
    def backward(ctx, gQ, gR):
        Q, R = ctx.saved_tensors
        _check_qr_differentiable(ctx.mode, *R.shape[-2:])
        m, n = Q.shape[-2], R.shape[-1]
        gQ = Q.new_zeros(Q.shape) if gQ is None else gQ  # (only R's gradient came, or Q's)
        gR = R.new_zeros(R.shape) if gR is None else gR
        M = gR @ R.mT - Q.mT @ gQ
        if m >= n:
            S = M.triu() + M.triu(1).mT
            return solve_triangular(R.mT, gQ + Q @ S, upper=False, left=False), None
        gA1 = solve_triangular(R[..., :m].mT, Q @ (M.mT - M).tril(), upper=False, left=False)
        return cat([gA1, gA1.new_zeros(R.shape[:-1] + (n - m,))], -1) + Q @ gR, None

    @staticmethod
    def jvp(ctx, dA, _):
        """torch's ``linalg_qr_jvp``: from ``dA = dQ R + Q dR``, with ``QᵀdQ`` antisymmetric
        and ``dR R⁻¹`` upper triangular. Tall: ``X = Qᵀ dA R⁻¹`` splits as
        ``dR R⁻¹ = triu(X) + triu(Xᵀ, 1)`` and ``dQ = dA R⁻¹ − Q dR R⁻¹``. Wide: ``X`` from
        the square block (``Qᵀ dA₁ R₁⁻¹``) gives ``QᵀdQ = tril(X, −1) − tril(X, −1)ᵀ``, then
        ``dR = QᵀdA − QᵀdQ R``."""
        Q, R = ctx.outputs
        _check_qr_differentiable(ctx.mode, *R.shape[-2:])
        m, n = dA.shape[-2], dA.shape[-1]
        if m >= n:
            dA_Rinv = solve_triangular(R, dA, upper=True, left=False)
            X = Q.mT @ dA_Rinv
            dR_Rinv = X.triu() + X.mT.triu(1)
            return dA_Rinv - Q @ dR_Rinv, dR_Rinv @ R
        QtdA = Q.mT @ dA
        X = solve_triangular(R[..., :m], QtdA[..., :m], upper=True, left=False).tril(-1)
        QtdQ = X - X.mT
        return Q @ QtdQ, QtdA - QtdQ @ R


class LinalgSolveTriangular(Builtin):
    """``linalg.solve_triangular``: X with ``A X = B`` (``left=False``: ``X A = B``) for a
    triangular A, by substitution; only A's upper (``upper=True``) or lower triangle is read,
    and its diagonal is taken as ones when ``unitriangular``.

    Gradients (left): ``gB = A⁻ᵀ grad``, a solve with Aᵀ, triangular the other way; ``gA =
    −gB Xᵀ``, kept to A's triangle (the other one was never read). Right: ``gB = grad A⁻ᵀ``,
    ``gA = −Xᵀ gB``.
    """

    node_name = "LinalgSolveTriangularBackward0"
    saved_names = ("self", "result")
    saved_args = {"upper": "upper", "left": "left", "unitriangular": "unitriangular"}
    formula = {
        "self": "−triu(gB · resultᵀ), tril when not upper, resultᵀ · gB when not left; "
        "gB = solve_triangular(selfᵀ, grad)",
        "B": "solve_triangular(selfᵀ, grad)",
    }

    @staticmethod
    @quiet  # (a zero on the diagonal gives inf and nan, as torch's, silently)
    def forward(ctx, A, B, upper, left, unitriangular):
        a, b = A._data, B._data
        ctx.upper, ctx.left, ctx.unitriangular = upper, left, unitriangular
        xp = array_module(a)
        b = b.astype(a.dtype, copy=False)  # (torch solves in A's dtype)
        if left:
            x = _substitute(a, b, upper, unitriangular)
        else:  # X A = B is Aᵀ Xᵀ = Bᵀ, and Aᵀ is triangular the other way
            at, bt = xp.swapaxes(a, -1, -2), xp.swapaxes(b, -1, -2)
            x = xp.swapaxes(_substitute(at, bt, not upper, unitriangular), -1, -2)
        return _column_major(x)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        A, X = ctx.saved_tensors
        upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
        need_A, need_B = ctx.needs_input_grad[:2]
        gB = solve_triangular(A.mT, grad, upper=not upper, left=left, unitriangular=unit)
        gA = None
        if need_A:
            gA = -(gB @ X.mT) if left else -(X.mT @ gB)
            gA = gA.triu(int(unit)) if upper else gA.tril(-int(unit))
        return gA, gB if need_B else None, None, None, None

    @staticmethod
    def jvp(ctx, dA, dB, *_):
        """``dX = A⁻¹ (dB − dA X)`` (left), dA kept to A's triangle."""
        A, B = ctx.inputs[:2]
        X = ctx.result
        upper, left, unit = ctx.upper, ctx.left, ctx.unitriangular
        dX = zero_if_none(dB, B)
        if dA is not None:
            dA = dA.triu(int(unit)) if upper else dA.tril(-int(unit))
            dX = dX - (dA @ X if left else X @ dA)
        return solve_triangular(A, dX, upper=upper, left=left, unitriangular=unit)


def _substitute(a, b, upper, unitriangular):
    """X with ``a X = b`` for a triangular ``a`` (batches broadcast): row i of X is
    ``(b_i − Σ_j a_ij x_j) / a_ii``, the sum over the rows j already found: those below i
    for an upper ``a`` (back substitution, from the last row up), above it for a lower one."""
    xp = array_module(a)
    n = a.shape[-1]
    batch = broadcast_shape(b.shape[:-2], a.shape[:-2])  # (torch names B first when they clash)
    x = xp.zeros(batch + b.shape[-2:], a.dtype)
    for i in range(n - 1, -1, -1) if upper else range(n):
        found = slice(i + 1, n) if upper else slice(0, i)
        row = b[..., i, :] - (a[..., i : i + 1, found] @ x[..., found, :])[..., 0, :]
        x[..., i, :] = row if unitriangular else row / a[..., i, i : i + 1]
    return x


def _check_solve_triangular(A, B, flags):
    """torch's checks of ``linalg.solve_triangular``'s arguments, in torch's order."""
    for name, value in flags.items():
        if value is not True and value is not False:
            raise TypeError(
                f"linalg_solve_triangular(): argument '{name}' must be bool, not {type_name(value)}"
            )
    for t, which in ((A, "'A' (position 1)"), (B, "'B' (position 2)")):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"linalg_solve_triangular(): argument {which} must be Tensor, not {type_name(t)}"
            )
    same_device(A, B)
    if A.ndim < 2:
        _fail(
            "linalg.solve_triangular: The input tensor A must have at least 2 dimensions.",
            "A is a triangular matrix (or a batch of them).",
        )
    if A.shape[-1] != A.shape[-2]:
        _fail(
            "linalg.solve_triangular: A must be batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices",
            "A triangular system has as many equations as unknowns.",
        )
    if B.ndim < 2:
        _fail(
            "linalg.solve_triangular: The input tensor B must have at least 2 dimensions.",
            "For a vector b, solve with b.unsqueeze(-1) and squeeze the result.",
        )
    n, left = A.shape[-1], flags["left"]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        equation = "AX = B" if left else "XA = B"
        _fail(
            "linalg.solve_triangular: Incompatible shapes of A and B for the equation "
            f"{equation} ({A.shape[-2]}x{n} and {B.shape[-2]}x{B.shape[-1]})",
            f"For {equation}, B needs {n} {'rows' if left else 'columns'}, as A has.",
        )
    for t in (A, B):
        if t._data.dtype.kind != "f" or t._data.dtype.itemsize == 2:
            raise NotImplementedError(
                f"\"triangular_solve_cpu\" not implemented for '{scalar_name(t.dtype.name)}'\n"
                "  LAPACK solves in float32 and float64: convert first, e.g. A.double()."
            )


def solve_triangular(A, B, *, upper=None, left=True, unitriangular=False):
    """X with ``A X = B`` (``left=False``: ``X A = B``) for an upper (``upper=True``) or lower
    triangular A; a batch of them broadcasts. The other triangle of A is not read.

    >>> import teachgrad as tg
    >>> A = tg.tensor([[2.0, 1.0], [0.0, 4.0]])
    >>> tg.linalg.solve_triangular(A, tg.tensor([[3.0], [4.0]]), upper=True)
    tensor([[1.],
            [1.]])
    """
    if upper is None:
        raise TypeError(
            'linalg_solve_triangular() missing 1 required positional arguments: "upper"\n'
            "  Say which triangle of A to read: upper=True or upper=False."
        )
    flags = {"upper": upper, "left": left, "unitriangular": unitriangular}
    _check_solve_triangular(A, B, flags)
    return LinalgSolveTriangular.apply(A, B, upper, left, unitriangular)


def linalg_qr(A, mode="reduced"):
    """``(Q, R)`` with ``A = Q R``: for an m×n A (or a batch of them) and k = min(m, n),
    mode ``'reduced'`` gives Q m×k with orthonormal columns and R k×n upper triangular;
    ``'complete'`` Q m×m orthogonal and R m×n; ``'r'`` only R (Q is empty), which cannot be
    differentiated.

    >>> import teachgrad as tg
    >>> Q, R = tg.linalg.qr(tg.tensor([[3.0, 1.0], [4.0, 2.0]])); R
    tensor([[-5.0000, -2.2000],
            [ 0.0000,  0.4000]])
    """
    return return_types.linalg_qr(*LinalgQr.apply(A, mode))


def qr(input, some=True):
    """``linalg.qr``'s older name (deprecated, as in torch): ``some=True`` is
    ``mode='reduced'``, ``some=False`` ``mode='complete'``.

    >>> import warnings, teachgrad as tg
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     tg.tensor([[0.0, 2.0], [1.0, 0.0]]).qr().R
    tensor([[-1.,  0.],
            [ 0., -2.]])
    """
    if some is not True and some is not False:
        raise TypeError(f"qr(): argument 'some' must be bool, not {type_name(some)}")
    warnings.warn(
        "teachgrad.qr is deprecated in favor of teachgrad.linalg.qr and will be removed in a "
        "future PyTorch release.\nThe boolean parameter 'some' has been replaced with a string "
        "parameter 'mode'.\nQ, R = teachgrad.qr(A, some)\nshould be replaced with\nQ, R = "
        "teachgrad.linalg.qr(A, 'reduced' if some else 'complete')",
        UserWarning,
        stacklevel=2,
    )
    return return_types.qr(*LinalgQr.apply(input, "reduced" if some else "complete"))

"""Reductions: sum, mean, prod, var/std, max/min (amax, argmax ...), logsumexp, norm, cumsum.

The backward of a reduction sends each output gradient back to every input
element that contributed: reshape the gradient to keep the reduced dimensions
(size 1), then ``expand`` it over them. ``sum_to`` (the reverse: sum a broadcast
gradient back down to a shape) is here too; the engine uses it for every op.

    >>> import teachgrad as tg
    >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    >>> x.mean(dim=0).sum().backward(); x.grad
    tensor([[0.5000, 0.5000],
            [0.5000, 0.5000]])
"""

from __future__ import annotations

import functools
import math
import warnings
from collections import namedtuple

from .._arguments import given, refusal
from .._backend import array_module, as_dtype, expanded, quiet, stable_argsort
from .._backend import dtype as dtype_type
from .._layout import row_major
from .._out import accepts_out
from .._printing import scalar_name, scalar_type_name
from .._profiling import recorded_as
from .._tensor import Tensor, _given_dim, _wrap_dim, type_name, wrap_array
from ..autograd.anomaly_mode import _outside_teachgrad
from ..autograd.builtin import Builtin, int_tuple
from ..autograd.forward_ad import linear_jvp, zero_tangent
from ..autograd.grad_mode import is_grad_enabled
from .pointwise import DivByNumber, constant_zeros, maximum, minimum, operands, where

# --------------------------------------------------------------------------- helpers


def reduction_dims(dim, ndim: int) -> tuple:
    """``dim`` (None, an int or a sequence) as a sorted tuple of non-negative dims."""
    if dim is None:
        return tuple(range(ndim))
    if type(dim) is int:  # the common case, quickly (a bad dim is an error even for 0-d)
        d = _wrap_dim(dim, ndim)
        return (d,) if ndim else ()
    return _sequence_of_dims(dim, ndim)


def _sequence_of_dims(dim, ndim: int) -> tuple:
    if not isinstance(dim, tuple | list):  # one dim (an int tensor, a NumPy int ...)
        dim = (dim,)
    dims = tuple(sorted({_wrap_dim(d, ndim) for d in dim}))
    if len(dims) != len(tuple(dim)):
        raise RuntimeError(
            f"dim {_duplicate(dim, ndim)} appears multiple times in the list of dims"
        )
    return dims if ndim else ()  # a 0-d tensor accepts dim 0 / -1, and there is nothing to reduce


def flag(value) -> bool:
    """``value``, which must be a bool, as torch's flags (``keepdim``, ``unbiased`` ...) are:
    else a TypeError, which ``_arguments.checked`` words as torch's parser does. (Checked by
    the functions, not in the reductions' shared forward: ``sum_to`` runs that in backward.)

    >>> flag(True), flag(1)
    Traceback (most recent call last):
    TypeError: a flag is a bool, not int
    """
    if value is True or value is False:
        return value
    raise TypeError(f"a flag is a bool, not {type_name(value)}")


def _duplicate(dims, ndim):
    seen = set()
    for d in dims:
        d = _wrap_dim(d, ndim)
        if d in seen:
            return d
        seen.add(d)
    return None


def kept_shape(shape, dims) -> tuple:
    """``shape`` with the reduced ``dims`` set to 1 (the ``keepdim=True`` shape)."""
    return tuple(1 if i in dims else s for i, s in enumerate(shape))


def expand_back(grad, in_shape, dims=(), keepdim=False):
    """Spread a reduction's output gradient over the reduced dims of its input (all of
    them, by default: a 0-d gradient expands as it is)."""
    if not keepdim and grad.ndim:
        grad = grad.reshape(kept_shape(in_shape, dims))
    # (an array when the formula runs on arrays: Builtin.on_arrays)
    return grad.expand(in_shape) if isinstance(grad, Tensor) else expanded(grad, in_shape)


def sum_to(x, shape):
    """Sum ``x`` down to ``shape``, undoing broadcasting (differentiable).

    >>> import teachgrad as tg
    >>> sum_to(tg.ones(2, 3), (1, 3))
    tensor([[2., 2., 2.]])
    """
    shape = tuple(shape)
    have = x._data.shape
    if have == shape:
        return x
    if not shape:  # to a 0-d tensor: the sum of all, SumBackward0 (torch's sum_to calls sum())
        return SumAll.apply(x, None)
    lead = len(have) - len(shape)
    inner = tuple(lead + i for i, s in enumerate(shape) if s == 1 and have[lead + i] != 1)
    if not inner:  # only leading dims to remove (a bias, say): one sum gives the shape
        return Sum.apply(x, tuple(range(lead)), False)
    x = Sum.apply(x, tuple(range(lead)) + inner, True)
    return x.reshape(shape) if lead else x


def all_as_empty(dim) -> tuple:
    """A dims argument as torch's node shows it where none means every dim (amax, roll):
    ``()`` (None here).

    >>> all_as_empty(None), all_as_empty(1)
    ((), (1,))
    """
    return () if dim is None else int_tuple(dim)


def _count(shape, dims) -> int:
    return math.prod(shape[d] for d in dims)


class _Reduction(Builtin):
    """Shared forward bookkeeping: remember the input shape, dims and keepdim (and ``dim``
    as it was given: torch's node shows that one)."""

    saved_args = {"dim": ("dim", int_tuple), "keepdim": "keepdim"}

    @staticmethod
    def remember(ctx, a, dim, keepdim):
        ctx.in_shape, ctx.keepdim, ctx.dim = a._data.shape, keepdim, dim  # (dim: as given)
        ctx.dims = reduction_dims(_all_if_empty(dim), a._data.ndim)
        return ctx.dims

    @staticmethod
    def spread(ctx, grad):
        return expand_back(grad, ctx.in_shape, ctx.dims, ctx.keepdim)


class _Weighted(_Reduction):
    """A reduction whose derivative is a *weight* per input element, d out / d a = w(a):
    backward spreads the gradient and multiplies by w; the tangent is sum(w * t)."""

    @classmethod
    def backward(cls, ctx, grad):
        a, result = ctx.saved_tensors
        return (cls.backward_given(ctx, grad, a, result),) + (None,) * (
            len(ctx.needs_input_grad) - 1
        )

    @classmethod
    def backward_given(cls, ctx, grad, a, result=None):
        """The input's gradient, from the saved input (and result)."""
        return _Reduction.spread(ctx, grad) * cls.weights(ctx, a, result)

    @classmethod
    def jvp(cls, ctx, t, *_):
        weighted = t * cls.weights(ctx, ctx.inputs[0], ctx.result)
        return weighted.sum(ctx.dims, keepdim=ctx.keepdim)


# --------------------------------------------------------------------------- sum and mean


def sum_dtype(x, dtype):
    """The dtype of a sum (or product, or running sum) of array ``x``: ``dtype`` if given;
    int64 for integers and bools, as torch's; else None (``x``'s own)."""
    return "int64" if dtype is None and x.dtype.kind in "biu" else dtype


class SumAll(Builtin):
    """``x.sum()``: the sum of all elements (``dim`` and ``keepdim`` are always None and
    False here: ``Sum`` takes dims)."""

    on_arrays = True
    node_name = "SumBackward0"
    formula = {"self": "grad expanded to self's shape"}
    saved_args = {"self_sym_sizes": "in_shape"}

    @staticmethod
    @quiet
    def forward(ctx, a, dim=None, keepdim=False, dtype=None):
        ctx.in_shape = a._data.shape
        return a._data.sum(dtype=sum_dtype(a._data, dtype))

    @staticmethod
    def backward(ctx, grad):
        return expand_back(grad, ctx.in_shape), None, None, None

    jvp = staticmethod(linear_jvp)


class Sum(_Reduction):
    on_arrays = True
    node_name = "SumBackward1"
    formula = SumAll.formula
    saved_args = {**_Reduction.saved_args, **SumAll.saved_args}

    @staticmethod
    @quiet
    def forward(ctx, a, dim, keepdim=False, dtype=None):
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        return row_major(a._data.sum(axis=dims, keepdims=keepdim, dtype=sum_dtype(a._data, dtype)))

    @staticmethod
    def backward(ctx, grad):
        return _Reduction.spread(ctx, grad), None, None, None

    jvp = staticmethod(linear_jvp)


class MeanAll(_Reduction):
    on_arrays = True
    node_name = "MeanBackward0"
    formula = {"self": "grad expanded to self's shape / N"}  # N: how many elements each mean has
    saved_args = {"self_sym_sizes": "in_shape", "self_sym_numel": ("in_shape", math.prod)}

    @staticmethod
    @quiet
    def forward(ctx, a, dim, keepdim=False):
        x = a._data
        if x.dtype.kind != "f":  # (checked before the dims, as torch does)
            raise RuntimeError(
                "mean(): could not infer output dtype. Input dtype must be either a floating point or "
                f"complex dtype. Got: {scalar_type_name(a)}\n  Hint: call .float() first."
            )
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        ctx.count = count = _count(x.shape, dims)
        if count <= 1 << 24 and x.dtype.itemsize > 2:
            # NumPy's mean is this sum and division behind a slow Python wrapper. (It is exactly
            # the same while the count is exact in float32; float16 sums in float32 there.) The
            # mean of nothing is 0 / 0: nan, silently, where NumPy's mean warns.
            return row_major(x.sum(axis=dims, keepdims=keepdim) / count)
        return row_major(x.mean(axis=dims, keepdims=keepdim))

    @staticmethod
    def backward(ctx, grad):
        spread = _Reduction.spread(ctx, grad)
        if isinstance(spread, Tensor):  # (create_graph) the node torch's formula makes
            return DivByNumber.apply(spread, ctx.count), None, None
        return spread / ctx.count, None, None

    jvp = staticmethod(linear_jvp)


class Mean(MeanAll):
    node_name = "MeanBackward1"
    saved_args = {**_Reduction.saved_args, **MeanAll.saved_args}


# --------------------------------------------------------------------------- product


class Prod(_Weighted):
    node_name = "ProdBackward1"
    whole = False
    saved_names = ("self", "result")
    saved_args = {"dim": "dim", "keepdim": "keepdim"}  # (one dim: an int)
    # where self has zeros, backward multiplies the other elements instead (no 0 / 0)
    formula = {"self": "grad · result / self"}

    @staticmethod
    @quiet
    def forward(ctx, a, dim, keepdim=False):
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        x = a._data
        dtype = sum_dtype(x, None)
        return row_major(array_module(x).prod(x, axis=dims, keepdims=keepdim, dtype=dtype))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save, ctx.dim = (inputs[0], output), inputs[1]

    @classmethod
    def backward(cls, ctx, grad):
        if not ctx.in_shape:  # a 0-d input is its own product: torch hands grad on untouched,
            _ = ctx.saved_tensors  # once it has checked them for in-place changes
            return (grad,) + (None,) * (len(ctx.needs_input_grad) - 1)
        return super().backward(ctx, grad)

    @classmethod
    def jvp(cls, ctx, t, *_):
        return t if not ctx.in_shape else super().jvp(ctx, t)  # (0-d: as backward)

    @classmethod
    def weights(cls, ctx, a, result):  # the product of the other elements
        zeros = int((a._data == 0).sum())
        if not zeros:
            return _Reduction.spread(ctx, result) / a
        if _count(a.shape, ctx.dims) == 1:  # no other elements: 1, as torch (without a graph)
            return 1.0
        if zeros > 1 and cls.whole and not is_grad_enabled():
            # every product of the others holds a 0: torch's prod() then gives zeros (even
            # where the others hold inf), when the gradient needs no graph of its own
            return constant_zeros(a)
        return _product_of_others(a, ctx.dims)


class ProdAll(Prod):
    node_name = "ProdBackward0"
    saved_args = {}
    whole = True  # the product of all elements


def _product_of_others(a, dims):
    """For each element, the product of the other elements reduced with it (zeros allowed).

    Built from differentiable ops, so double backward works; it uses n*n memory per
    reduced row, fine for teaching-sized tensors.
    """
    (dim,) = dims if len(dims) == 1 else (None,)
    x = (
        a.reshape(-1) if dim is None else a.movedim(dim, -1)
    )  # (a method: views build on this module)
    n = x.shape[-1]
    xp = array_module(a)
    eye = wrap_array(xp.eye(n, dtype=bool))
    rows = where(eye, 1.0, x.unsqueeze(-2).expand(*x.shape[:-1], n, n))
    others = Prod.apply(rows, -1, False)
    return others.reshape(a.shape) if dim is None else others.movedim(-1, dim)


# --------------------------------------------------------------------------- variance


def _correction(unbiased, correction) -> float:
    if correction is not None:
        if unbiased is not None:
            raise RuntimeError("var/std: pass either unbiased or correction, not both")
        return correction.item() if isinstance(correction, Tensor) else correction  # (a number)
    return 1 if unbiased is None or flag(unbiased) else 0


def _spread(name, a, dims, correction, keepdim, divisor):
    """NumPy's ``var`` or ``std`` (``name``). With no degrees of freedom left (``divisor`` <= 0)
    the result is nan or inf, and it is torch's UserWarning that says so, not NumPy's.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     tg.ones(1).var(), str(caught[0].message)[:38]
    (tensor(nan), 'var(): degrees of freedom is <= 0. Cor')
    """
    if divisor > 0:
        spread = quiet(getattr(array_module(a), name))  # (here, not on forward: the warning's line)
        return row_major(spread(a._data, axis=dims, ddof=correction, keepdims=keepdim))
    if divisor == divisor:  # (a NaN correction: torch divides by max(0, N − NaN), 0, silently)
        warnings.warn(
            f"{name}(): degrees of freedom is <= 0. Correction should be strictly less than the "
            "reduction factor (input numel divided by output numel).",
            UserWarning,
            stacklevel=_outside_teachgrad(),
        )
    return row_major(_spread_no_dof(name, a._data, dims, keepdim))


@quiet  # (x / 0: inf, and 0 / 0: nan, silently, as torch)
def _spread_no_dof(name, x, dims, keepdim):
    """var or std with no degrees of freedom: the squared deviations' sum over
    ``max(0, N − correction)``, that is 0, as NumPy's ``var`` divides. Written out, since
    CuPy's ``var`` gives NaN there whatever the sum."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's "Mean of empty slice")
        deviations = x - x.mean(axis=dims, keepdims=True)
    xp = array_module(x)
    out = (xp.abs(deviations) ** 2).sum(axis=dims, keepdims=keepdim) / 0.0
    return xp.sqrt(out) if name == "std" else out


class Var(_Weighted):
    node_name = "VarBackward0"
    saved_names = ("self",)
    saved_args = {**_Reduction.saved_args, "correction": "correction"}
    formula = {"self": "2 · grad · (self − mean(self)) / (N − correction)"}

    @staticmethod
    def forward(ctx, a, dim, correction, keepdim):
        _float_only(a, "std and var only support floating point and complex dtypes")
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        ctx.to_save = (a, None)  # (the result is not needed)
        ctx.divisor = _count(a._data.shape, dims) - correction
        return _spread("var", a, dims, correction, keepdim, ctx.divisor)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.dim, ctx.correction = inputs[1:3]

    @staticmethod
    def weights(ctx, a, result):
        centred = a - a.mean(ctx.dims, keepdim=True)
        if ctx.divisor <= 0 and (ctx.dim is None or a.dim() == 0):
            # torch's rule over all elements with no degrees of freedom left: 2 / 0 · (x − mean),
            # taken as inf · sign, so inf where x ≠ mean and NaN where x = mean (inf · 0)
            return where(centred == 0, math.nan, math.inf)
        return centred * _over(2, ctx.divisor)


class Std(_Weighted):
    node_name = "StdBackward0"
    saved_names = ("self", "result")
    saved_args = Var.saved_args
    # (0 where result is 0: all values equal)
    formula = {"self": "grad · (self − mean(self)) / ((N − correction) · result)"}

    @staticmethod
    def forward(ctx, a, dim, correction, keepdim):
        _float_only(a, "std and var only support floating point and complex dtypes")
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        ctx.divisor = _count(a._data.shape, dims) - correction
        return _spread("std", a, dims, correction, keepdim, ctx.divisor)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (inputs[0], output)
        Var.setup_context(ctx, inputs, output)

    @staticmethod
    def jvp(ctx, t, *_):  # torch's form: var's tangent / (2 · std), 0 where std is 0
        var_t = (t * Var.weights(ctx, ctx.inputs[0], None)).sum(ctx.dims, keepdim=ctx.keepdim)
        std = ctx.result  # (over no elements NaN, and so is the tangent)
        return where(std == 0, 0.0, var_t / (2 * std))

    @classmethod
    def backward_given(cls, ctx, grad, a, std=None):
        # torch's form: var's gradient of grad / (2 · std), set to 0 where std is 0 (all
        # values equal; even an inf or NaN from above)
        half = where(std == 0, 0.0, grad / (2 * std))
        return _Reduction.spread(ctx, half) * Var.weights(ctx, a, None)


class VarMean(_Reduction):
    """``var_mean``: the variance and the mean in one node with two outputs (torch's
    ``VarMeanBackward0``); its gradient adds var's rule for the first output's gradient to
    mean's for the second's."""

    node_name = "VarMeanBackward0"
    saved_names = ("self",)
    saved_args = Var.saved_args
    formula = {"self": "2 · grad0 · (self − mean(self)) / (N − correction) + grad1 / N"}
    spread_of = Var  # (the first output's rule)

    @classmethod
    def forward(cls, ctx, a, dim, correction, keepdim):
        _float_only(a, f"{cls.op_name} only support floating point and complex dtypes")
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        ctx.divisor = _count(a._data.shape, dims) - correction
        spread = _spread(cls.spread_of.__name__.lower(), a, dims, correction, keepdim, ctx.divisor)
        return spread, row_major(_quiet_mean(a._data, dims, keepdim))

    @classmethod
    def setup_context(cls, ctx, inputs, output):
        ctx.to_save = (inputs[0], output[0]) if cls.spread_of is Std else (inputs[0],)
        Var.setup_context(ctx, inputs, output)

    @classmethod
    def backward(cls, ctx, grad_spread, grad_mean):
        a, *result = ctx.saved_tensors
        grads = []
        if grad_spread is not None:
            grads.append(cls.spread_of.backward_given(ctx, grad_spread, a, *result))
        if grad_mean is not None:
            grads.append(_Reduction.spread(ctx, grad_mean) / _count(ctx.in_shape, ctx.dims))
        return (
            (grads[0] + grads[1] if len(grads) == 2 else grads[0] if grads else None),
            None,
            None,
            None,
        )

    @classmethod
    def jvp(cls, ctx, t, *_):
        spread_t = cls.spread_of.jvp(ctx, t)
        return spread_t, t.mean(ctx.dims, keepdim=ctx.keepdim)

    op_name = "var_mean"


class StdMean(VarMean):
    """``std_mean``: the standard deviation and the mean in one node (``StdMeanBackward0``,
    which also saves the standard deviation, as ``result0``)."""

    node_name = "StdMeanBackward0"
    saved_names = ("self", "result0")
    formula = {"self": "grad0 · (self − mean(self)) / ((N − correction) · result0) + grad1 / N"}
    spread_of = Std
    op_name = "std_mean"


@quiet  # (the mean of nothing: nan, silently, as torch)
def _quiet_mean(x, dims, keepdim):
    return x.mean(axis=dims, keepdims=keepdim)


class Trace(Builtin):
    """``trace``: the sum of a matrix's diagonal; its gradient is grad on the diagonal."""

    node_name = "TraceBackward0"
    saved_args = {"self_sym_sizes": "in_shape"}
    formula = {"self": "grad · eye(self_sym_sizes)"}

    @staticmethod
    def forward(ctx, a):
        x = a._data
        if x.ndim != 2:
            raise RuntimeError(
                f"trace: expected a matrix, but got tensor with dim {x.ndim}\n  trace sums the "
                "diagonal of a 2-d tensor: for a batch, x.diagonal(dim1=-2, dim2=-1).sum(-1)."
            )
        ctx.in_shape = x.shape
        return array_module(x).trace(x, dtype=sum_dtype(x, None))

    @staticmethod
    def backward(ctx, grad):
        return grad * Trace.diagonal_of(ctx, grad)

    @staticmethod
    def jvp(ctx, t):
        return (t * Trace.diagonal_of(ctx, t)).sum()

    @staticmethod
    def diagonal_of(ctx, like) -> Tensor:
        """Ones on the diagonal of the input's shape, zeros elsewhere, in ``like``'s dtype."""
        return wrap_array(array_module(like._data).eye(*ctx.in_shape, dtype=like._data.dtype))


def _over(x, divisor) -> float:
    """``x / divisor``, inf for a divisor of 0 (as torch's float arithmetic gives: var of one
    value has N − correction = 0, and its gradient is then NaN, not an error)."""
    return x / divisor if divisor else math.inf


def _float_only(a, message):
    if a._data.dtype.kind != "f":
        raise RuntimeError(
            f"{message}\n  Got a {a.dtype} tensor; convert it first, e.g. x.float()."
        )


# --------------------------------------------------------------------------- max and min


class _Extreme(_Weighted):
    """amax/amin and max()/min() without dim: ties share the gradient evenly."""

    saved_names = ("self", "result")
    saved_args = {"dim": ("dim", all_as_empty), "keepdim": "keepdim"}
    formula = {"self": "grad · (self == result) / number of ties"}
    pick = "max"
    label = "max"  # the op's name in messages
    nan_ties = False  # max()/min() of all elements: NaNs tie with a NaN result (torch's rule)

    @classmethod
    def forward(cls, ctx, a, dim, keepdim=False):
        if a._data.size == 0:  # (before the dims' other checks: torch reads them one by one)
            _empty_reduction(cls.label, a._data.shape, dim)
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        return row_major(getattr(array_module(a), cls.pick)(a._data, axis=dims, keepdims=keepdim))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save, ctx.dim = (inputs[0], output), inputs[1]

    @classmethod
    def weights(cls, ctx, a, result):  # (amax/amin: torch multiplies by the share)
        hit = cls.ties(ctx, a, result).to(a.dtype)
        return hit / hit.sum(ctx.dims, keepdim=True)  # (0 / 0 = NaN where none ties: a NaN result)

    @classmethod
    def jvp(cls, ctx, t, *_):  # torch's tangent: the mean of the tangents at the ties
        hit = _Extreme.ties(ctx, ctx.inputs[0], ctx.result)  # (a NaN ties with none here)
        picked = where(hit, t, 0.0).sum(ctx.dims, keepdim=ctx.keepdim)
        return picked / hit.sum(ctx.dims, keepdim=ctx.keepdim)

    @classmethod
    def ties(cls, ctx, a, result):
        """Where ``a`` equals its reduced ``result`` (with ``nan_ties``, NaNs a NaN result)."""
        result = _Reduction.spread(ctx, result)
        hit = a == result
        return hit | a.isnan() & result.isnan() if cls.nan_ties else hit


class Amax(_Extreme):
    node_name = "AmaxBackward0"
    pick = "max"
    label = "amax"


class Amin(_Extreme):
    node_name = "AminBackward0"
    pick = "min"
    label = "amin"


class _ExtremeOfAll(_Extreme):
    """max()/min() of all elements: torch puts grad / (number of ties) at the ties and 0
    elsewhere (an inf or NaN from above stays at the ties), and NaNs tie with a NaN result."""

    nan_ties = True

    @classmethod
    def backward(cls, ctx, grad):
        a, result = ctx.saved_tensors
        hit = cls.ties(ctx, a, result)
        return where(hit, grad / hit.sum(), 0.0), None, None

    @classmethod
    def jvp(cls, ctx, t, *_):  # (here torch multiplies: an inf tangent elsewhere gives NaN)
        hit = _Extreme.ties(ctx, ctx.inputs[0], ctx.result)  # (a NaN ties with none here)
        return (t * hit).sum() / hit.sum()


class MaxAll(_ExtremeOfAll):
    node_name = "MaxBackward1"
    saved_args = {}
    pick = label = "max"


class MinAll(_ExtremeOfAll):
    node_name = "MinBackward1"
    saved_args = {}
    pick = label = "min"


def _empty_reduction(name, shape, dim):
    """torch's error for a max/min-like reduction over no elements: IndexError naming the
    first empty dim (as it was given) when dims were given, else RuntimeError asking for one.
    Nothing when the dims given are not empty (the empty ones are kept)."""
    if dim is not None and dim != ():
        given = dim if isinstance(dim, tuple | list) else (dim,)
        for d in given:
            if shape[_wrap_dim(d, len(shape))] == 0:
                raise IndexError(f"{name}(): Expected reduction dim {d} to have non-zero size.")
        return
    raise RuntimeError(
        f"{name}(): Expected reduction dim to be specified for input.numel() == 0. "
        "Specify the reduction dim with the 'dim' argument."
    )


class _ExtremeAlongDim(Builtin):
    """max/min along one dim: ``(values, indices)``; the gradient goes to the chosen index."""

    saved_names = ("indices",)
    saved_args = {"dim": "given_dim", "keepdim": "keepdim", "self_sym_sizes": "in_shape"}
    formula = {"self": "grad put into zeros at indices along dim"}  # grad: the values' gradient
    pick = "max"

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        x = a._data
        xp = array_module(x)
        dim = _wrap_dim(dim, x.ndim)
        if x.ndim and x.shape[dim] == 0:  # (torch names one dim as counted from the front)
            _empty_reduction(cls.pick, x.shape, dim)
        ctx.in_shape, ctx.dim, ctx.keepdim = x.shape, dim, flag(keepdim)
        if x.ndim == 0:
            return x.copy(), xp.zeros((), dtype="int64")
        indices = cls.chosen(x, dim)
        values = xp.take_along_axis(x, indices, axis=dim)
        if not keepdim:
            values, indices = values.squeeze(dim), indices.squeeze(dim)
        return row_major(values), row_major(indices.astype("int64", copy=False))

    @classmethod
    def chosen(cls, x, dim):
        """The index of the chosen element along ``dim`` (kept as a dim of size 1)."""
        return getattr(array_module(x), "arg" + cls.pick)(x, axis=dim, keepdims=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save, ctx.given_dim = (output[1],), inputs[1]  # (ctx.dim: counted from the front)

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        (indices,) = ctx.saved_tensors
        if len(ctx.in_shape) == 0:
            return grad, None, None
        if not ctx.keepdim:
            grad, indices = grad.unsqueeze(ctx.dim), indices.unsqueeze(ctx.dim)
        n = ctx.in_shape[ctx.dim]
        xp = array_module(indices)
        position = [1] * len(ctx.in_shape)
        position[ctx.dim] = n
        chosen = wrap_array(xp.arange(n).reshape(position)) == indices
        return where(chosen, grad, 0.0), None, None

    @staticmethod
    def jvp(ctx, t, *_):  # the tangent at the chosen index
        _, indices = ctx.outputs
        if len(ctx.in_shape) == 0:
            return t, None
        if not ctx.keepdim:
            indices = indices.unsqueeze(ctx.dim)
        n = ctx.in_shape[ctx.dim]
        position = [1] * len(ctx.in_shape)
        position[ctx.dim] = n
        chosen = wrap_array(array_module(indices).arange(n).reshape(position)) == indices
        return where(chosen, t, 0.0).sum(ctx.dim, keepdim=ctx.keepdim), None


class MaxDim(_ExtremeAlongDim):
    node_name = "MaxBackward0"
    pick = "max"


class MinDim(_ExtremeAlongDim):
    node_name = "MinBackward0"
    pick = "min"


# --------------------------------------------------------------------------- median


def median_index(x, dim, skip_nan=False):
    """The index of the (lower) median along ``dim``, kept as a dim of size 1: torch's, which
    ranks the elements by (value, index), NaN last. ``median`` picks the first NaN of a line
    that has one (its median is NaN); ``nanmedian`` ranks only the other values."""
    xp = array_module(x)
    order = stable_argsort(x, dim)  # (equal values in their order, NaNs at the end)
    n = x.shape[dim]
    nans = xp.isnan(x).sum(axis=dim, keepdims=True)
    if skip_nan:  # (a line of NaNs only: its first, as C's (-1) / 2 = 0 gives)
        rank = xp.maximum((n - nans - 1) // 2, 0)
    else:
        rank = xp.where(nans > 0, n - nans, (n - 1) // 2)
    return xp.take_along_axis(order, rank, axis=dim)


def _refuse_bools(x, kernel):
    if x.dtype.kind == "b":
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for 'Bool'\n  A median of bools means little: "
            "convert first, e.g. x.long()."
        )


class MedianAll(_ExtremeOfAll):
    """``median()``: the lower of the two middle values (NaN if there is one); ties share
    the gradient, as max()'s do."""

    node_name = "MedianBackward0"
    saved_args = {}
    skip_nan = False

    @classmethod
    def forward(cls, ctx, a, dim, keepdim):
        _Reduction.remember(ctx, a, dim, keepdim)
        x = a._data.reshape(-1)
        _refuse_bools(x, "median_cpu")
        if not x.size:  # (torch's median of nothing is NaN, not an error)
            return array_module(x).full((), math.nan, x.dtype)
        return x[median_index(x, 0, cls.skip_nan)[0]]


class NanmedianAll(MedianAll):
    node_name = "NanmedianBackward0"
    skip_nan = True


class MedianDim(_ExtremeAlongDim):
    node_name = "MedianBackward1"
    pick = "median"  # (the name in the error for an empty dim, nanmedian's too)
    skip_nan = False

    @classmethod
    def chosen(cls, x, dim):
        _refuse_bools(x, "median_out")
        return median_index(x, dim, cls.skip_nan)


class NanmedianDim(MedianDim):
    node_name = "NanmedianBackward1"
    skip_nan = True


def median(input, dim=None, keepdim=False, *, out=None):
    """The median (for an even count, the lower middle value); with ``dim``, the
    ``(values, indices)`` along it. A NaN makes the median NaN (``nanmedian`` skips them).

    >>> import teachgrad as tg
    >>> x = tg.tensor([[1.0, 4.0, 2.0, 3.0], [5.0, 0.0, 6.0, 6.0]])
    >>> x.median(), x.median(dim=1)
    (tensor(3.), teachgrad.return_types.median(
    values=tensor([2., 5.]),
    indices=tensor([2, 0])))
    """
    if dim is None and keepdim is False and out is None:  # (with keepdim, a dim must be given)
        return MedianAll.apply(input, None, False)
    return _median_along(input, dim, keepdim, out=out)


@functools.partial(accepts_out, name="median")  # (only along a dim: torch's median() has no out=)
def _median_along(input, dim, keepdim):
    return return_types.median(*MedianDim.apply(input, dim, keepdim))


def nanmedian(input, dim=None, keepdim=False, *, out=None):
    """``median`` of the values that are not NaN (NaN only where all are).

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, float("nan"), 3.0, 2.0]).nanmedian()
    tensor(2.)
    """
    if dim is None and keepdim is False and out is None:
        return NanmedianAll.apply(input, None, False)
    return _nanmedian_along(input, dim, keepdim, out=out)


@functools.partial(accepts_out, name="nanmedian")
def _nanmedian_along(input, dim, keepdim):
    return return_types.nanmedian(*NanmedianDim.apply(input, dim, keepdim))


def _return_type(name, fields=("values", "indices")):
    base = namedtuple(name, fields)
    cls = type(
        name,
        (base,),
        {
            "__repr__": lambda self: (
                f"teachgrad.return_types.{name}(\n"
                + ",\n".join(f"{field}={value!r}" for field, value in zip(fields, self))
                + ")"
            ),
            "__slots__": (),
            "__doc__": f"``({', '.join(fields)})`` returned by ``{name}(...)``.",
        },
    )
    return cls


class return_types:  # noqa: N801 - mirrors torch.return_types
    """Named results of ops that return (values, indices), or (Q, R)."""

    max = _return_type("max")
    min = _return_type("min")
    sort = _return_type("sort")  # (ops/sort.py)
    median = _return_type("median")
    nanmedian = _return_type("nanmedian")
    linalg_qr = _return_type("linalg_qr", ("Q", "R"))  # (ops/linalg.py)
    qr = _return_type("qr", ("Q", "R"))


# --------------------------------------------------------------------------- logsumexp and norm


class Logsumexp(_Weighted):
    on_arrays = True
    node_name = "LogsumexpBackward0"
    saved_names = ("self", "result")
    formula = {"self": "grad · exp(self − result)"}

    @staticmethod
    @quiet
    def forward(ctx, a, dim, keepdim=False):
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        x = a._data if a._data.dtype.kind == "f" else a.float()._data
        xp = array_module(x)
        m = (
            x.max(axis=dims, keepdims=True)
            if x.size
            else xp.zeros(kept_shape(x.shape, dims), x.dtype)
        )
        m = xp.where(xp.isfinite(m), m, 0)  # all -inf rows: avoid inf - inf
        out = xp.log(xp.exp(x - m).sum(axis=dims, keepdims=True)) + m
        return row_major(out if keepdim else out.squeeze(dims))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save, ctx.dim = (inputs[0], output), inputs[1]

    @staticmethod
    def weights(ctx, a, result):  # softmax(a)
        shifted = a - _Reduction.spread(ctx, result)
        return shifted.exp() if isinstance(shifted, Tensor) else array_module(shifted).exp(shifted)

    @staticmethod
    def jvp(ctx, t, *_):
        # torch's form: the tangents' mean weighted by exp(a − max a), over those weights'
        # sum (over no elements 0 / 0, NaN; with no finite max, NaN too)
        a = ctx.inputs[0]
        e = (a - Amax.apply(a, ctx.dims, True) if a.numel() else a).exp()
        return (t * e).sum(ctx.dims, keepdim=ctx.keepdim) / e.sum(ctx.dims, keepdim=ctx.keepdim)


class Norm(_Weighted):
    node_name = "LinalgVectorNormBackward0"
    saved_names = ("self", "result")
    saved_args = {**_Reduction.saved_args, "ord": "p"}
    # 0 where result is 0; for p = ±inf: grad · sign(self) at the largest (smallest) |self|,
    # shared by ties; for p = 0: 0
    # (ord: the p of norm(p=...), as torch's node names it: the stepper shows its value)
    formula = {"self": "grad · self · |self|^(ord − 2) / result^(ord − 1)"}

    @staticmethod
    @quiet
    def forward(ctx, a, p, dim, keepdim=False):
        _float_only(
            a,
            "linalg.vector_norm: Expected a floating point or complex tensor as input. "
            f"Got {scalar_type_name(a)}",
        )
        if a._data.size == 0 and (p < 0 or p == math.inf):  # (before the dims' other checks)
            _refuse_norm_of_nothing(a._data.shape, p, dim)
        dims = _Reduction.remember(ctx, a, dim, keepdim)
        ctx.p = p
        xp = array_module(a)
        return row_major(_vector_norm(xp, xp.abs(a._data), p, dims, keepdim))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save, ctx.dim = (inputs[0], output), inputs[2]

    @classmethod
    def backward(cls, ctx, grad):
        if ctx.p == 0:  # a count of nonzeros: torch gives no gradient (None), not zeros
            _ = ctx.saved_tensors  # (still checked for in-place changes)
            return (None,) * len(ctx.needs_input_grad)
        if 1 < ctx.p < math.inf and ctx.p != 2:
            # torch zeroes grad / norm^(p-1) where the norm is 0, the incoming gradient
            # included: a NaN arriving there (a second derivative at 0) stays 0 for p >= 3
            a, result = ctx.saved_tensors
            scaled = where(result == 0, 0.0, grad / result ** (ctx.p - 1))
            return (_Reduction.spread(ctx, scaled) * Norm.power_factor(a, ctx.p),) + (None,) * 3
        return super().backward(ctx, grad)

    @staticmethod
    def weights(ctx, a, result):
        factor, scale = Norm.factors(ctx, a, result)
        return factor if scale is None else factor * _Reduction.spread(ctx, scale)

    @classmethod
    def jvp(cls, ctx, t, *_):  # (summed before the scale, as torch: an inf norm and a tangent)
        if ctx.p == 0:
            return zero_tangent(ctx)
        factor, scale = Norm.factors(ctx, ctx.inputs[0], ctx.result)
        summed = (t * factor).sum(ctx.dims, keepdim=ctx.keepdim)
        return summed if scale is None else summed * scale

    @staticmethod
    def factors(ctx, a, result):
        """d||a||_p / da = sign(a) |a|^(p-1) / ||a||^(p-1) as a factor per element and a scale
        per norm (or None), written as torch writes it for each range of p, so that zeros,
        infs and second derivatives come out as torch's."""
        p = ctx.p
        if p == 1:
            return a.sign(), None
        if p in (math.inf, -math.inf):
            hit = a.abs() == _Reduction.spread(ctx, result)
            return where(hit, a.sign() / hit.sum(ctx.dims, keepdim=True), 0.0), None
        if p < 1:  # |0|^(p-1) is inf: zero elements get 0; a zero norm is not special
            return where(a == 0, 0.0, a.sign() * a.abs() ** (p - 1)), result ** (1 - p)
        # 0 where the norm is 0 (its second derivative there is NaN, as torch's)
        return Norm.power_factor(a, p), where(result == 0, 0.0, 1 / result ** (p - 1))

    @staticmethod
    def power_factor(a, p):
        """``sign(a) |a|^(p-1)`` for 1 < p < inf, written for each range of p as torch writes
        it (so that its own derivative at 0 is torch's)."""
        if p == 2:
            return a
        if p < 2:
            return a.sign() * a.abs() ** (p - 1)
        return a * a.abs() ** (p - 2)


# --------------------------------------------------------------------------- running sum


def _refuse_norm_of_nothing(shape, p, dim):
    """torch's error for a max-like norm (p = inf, or p < 0: 1 / sum of 1 / |x|^p) over a
    dim with no elements, named as it was given."""
    given = () if dim is None else dim if isinstance(dim, tuple | list) else (dim,)
    empty = [d for d in given if shape[_wrap_dim(d, len(shape))] == 0]
    if given and not empty:  # the empty dims are kept, not reduced
        return
    where = (
        f"the dimension {empty[0]}because this dimension is empty and"
        if empty
        else ("an empty tensor because")
    )
    raise RuntimeError(
        f"linalg.vector_norm cannot compute the {p:g} norm on {where} the operation does not "
        "have an identity\n  Over no elements the largest |x| is undefined (sum-like norms give 0)."
    )


def _vector_norm(xp, mag, p, dims, keepdim):
    """The p-norm of the magnitudes ``mag`` over ``dims`` (NumPy's layout; see row_major).
    Over one element each, the norm is that element's magnitude, not a power of it taken
    back (as torch: the norm of 1e300 is 1e300, not inf). float16 is summed in float32, as
    torch's kernel does: the 6-norm of 9s does not overflow on the way."""
    if mag.dtype.itemsize == 2 and mag.dtype.kind == "f":
        return _vector_norm(xp, mag.astype("float32"), p, dims, keepdim).astype(mag.dtype)
    if p == math.inf or (p != 0 and math.prod(mag.shape[d] for d in dims) == 1):
        return xp.max(mag, axis=dims, keepdims=keepdim)
    if p == -math.inf:
        return xp.min(mag, axis=dims, keepdims=keepdim)
    if p == 0:
        return xp.sum(mag != 0, axis=dims, keepdims=keepdim).astype(mag.dtype)
    if p == 1:
        return xp.sum(mag, axis=dims, keepdims=keepdim)
    if p == 2:
        return xp.sqrt(xp.sum(mag * mag, axis=dims, keepdims=keepdim))
    return xp.sum(mag**p, axis=dims, keepdims=keepdim) ** (1.0 / p)


class Cumsum(Builtin):
    node_name = "CumsumBackward0"
    saved_args = {"dim": "dim"}
    formula = {"self": "flip(cumsum(flip(grad, dim), dim), dim)"}
    jvp = staticmethod(linear_jvp)

    @staticmethod
    @quiet
    def forward(ctx, a, dim, dtype):
        x = a._data
        ctx.dim = dim
        dtype = sum_dtype(x, dtype)
        if dtype is not None:
            x = x.astype(dtype)
        # (dtype again: NumPy's running sum of small integers would be int64)
        return row_major(array_module(x).cumsum(x, axis=dim, dtype=dtype)) if x.ndim else x.copy()

    @staticmethod
    def backward(ctx, grad):
        if grad.numel() <= 1 or grad.shape[ctx.dim] == 1:  # torch's trivial case: as it is
            return grad, None, None
        # out[i] = x[0] + ... + x[i], so x[j] reaches every out[i] with i >= j: its gradient
        # is grad[j] + ... + grad[n-1], a running sum taken from the far end
        return (
            grad.flip(ctx.dim).cumsum(ctx.dim).flip(ctx.dim),
            None,
            None,
        )  # (methods: shape imports this module)


# --------------------------------------------------------------------------- functions


# torch has two overloads, sum(*, dtype) and sum(dim, keepdim, *, dtype): only the first makes
# SumBackward0. So dim=None given (x.sum(dim=None)) takes the second: SumBackward1, keepdim kept.
_ALL = object()  # dim not given


def sum(input, dim=_ALL, keepdim=False, *, dtype=None):  # noqa: A001 - torch's name
    """Sum of all elements, or over ``dim`` (an int, a tuple, or None: all of them).

    >>> import teachgrad as tg
    >>> x = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> x.sum(), x.sum(dim=1), x.sum((0, 1), keepdim=True)
    (tensor(10.), tensor([3., 7.]), tensor([[10.]]))
    """
    if dim is _ALL and not keepdim and dtype is None:
        return SumAll.apply(input, None, False, None)
    return _sum_over(input, dim, keepdim, dtype)


def _sum_over(input, dim, keepdim, dtype):
    """``sum`` over ``dim``; when it fails, torch's TypeError if torch refuses the arguments.

    (``Tensor.sum`` runs in every first backward a student follows, so unlike the other
    methods it is not wrapped by ``_arguments.checked``: it checks here, in its slower
    branch, as the method ``x.sum(...)``; ``teachgrad.sum`` rewords it as the function.)
    """
    try:
        np_dtype = None if dtype is None else _np_dtype(dtype)
        if dim is _ALL and not keepdim:  # (the sum of all, in a dtype)
            return SumAll.apply(input, None, False, np_dtype)
        return Sum.apply(input, dim, flag(keepdim), np_dtype)  # (keepdim alone: refused)
    except Exception as error:
        args = () if dim is _ALL else (dim,) if keepdim is False else (dim, keepdim)
        kwargs = given(keepdim=keepdim if dim is _ALL else None, dtype=dtype)
        raise refusal("sum", args, kwargs, error, method=True)  # noqa: B904 - see refusal


def _all_if_empty(dim):
    """``dim``, or None (every dim) for an empty list of dims, which torch's reductions
    (sum, mean, amax, amin, var, std, norm, logsumexp) read as "all of them" (their node
    shows the empty list as it was given: ``_saved_dim`` is ``()``)."""
    return None if isinstance(dim, tuple | list) and len(dim) == 0 else dim


def dtype_argument(dtype):
    """The ``dtype=`` of an op as a teachgrad dtype: one already, or float, int, bool (as torch
    takes them); anything else is a TypeError, which ``_arguments.checked`` words as torch's
    parser does (``to`` would read a tensor as "its dtype", NumPy a string as a type code).

    >>> import teachgrad as tg
    >>> dtype_argument(float), dtype_argument(tg.int32)
    (teachgrad.float64, teachgrad.int32)
    """
    if isinstance(dtype, dtype_type) or dtype is float or dtype is int or dtype is bool:
        return as_dtype(dtype)
    raise TypeError(f"dtype must be a teachgrad.dtype, not {type_name(dtype)}")


def _np_dtype(dtype):
    return dtype_argument(dtype).numpy


def _check_mean_dtype(dtype) -> None:
    """torch's RuntimeError for ``mean(dtype=...)`` of a dtype that can't hold a mean."""
    if not dtype.is_floating_point:
        raise RuntimeError(
            "mean(): could not infer output dtype. Optional dtype must be either a floating "
            f"point or complex dtype. Got: {scalar_name(dtype.name)}\n"
            "  A mean of integers is rarely an integer: ask for dtype=teachgrad.float32."
        )


def mean(input, dim=_ALL, keepdim=False, *, dtype=None):
    """Mean of all elements, or over ``dim`` (None: all of them, as MeanBackward1, like ``sum``).

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 2.0, 6.0]).mean()
    tensor(3.)
    """
    if dtype is not None:
        dtype = dtype_argument(dtype)
        _check_mean_dtype(dtype)
        input = input.to(dtype)
    if dim is _ALL and not keepdim:  # (keepdim without a dim fails below: torch's TypeError)
        return MeanAll.apply(input, None, False)
    return Mean.apply(input, dim, flag(keepdim))


def prod(input, dim=_ALL, keepdim=False, *, dtype=None):
    """Product of all elements, or along one ``dim`` (zeros handled in backward).

    >>> import teachgrad as tg
    >>> tg.tensor([2.0, 3.0, 4.0]).prod()
    tensor(24.)
    """
    if dtype is not None:
        input = input.to(dtype_argument(dtype))
    if dim is _ALL and not keepdim:  # (keepdim without a dim fails below: torch's TypeError)
        out = ProdAll.apply(input, None, False)
    elif dim is None or isinstance(dim, tuple | list):  # (checked() words torch's TypeError)
        raise TypeError(f"prod() reduces one int dim or all of them, not {type(dim).__name__}")
    else:
        out = Prod.apply(input, dim, flag(keepdim))
    # integers multiply in int64, as torch's prod does, unless the call asks for a dtype
    # (bool: the product of 0s and 1s is the logical and); such a result has no gradient
    return out if dtype is None or out.dtype == input.dtype else out.to(input.dtype)


def _var_args(dim, unbiased, keepdim):
    if isinstance(dim, bool) and unbiased is None and keepdim is False:
        return None, dim, keepdim  # legacy x.var(False): the only positional is `unbiased`
    return dim, unbiased, keepdim


def var(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Variance, with Bessel's correction by default (``correction=1``).

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0, 4.0]).var()
    tensor(1.6667)
    """
    dim, unbiased, keepdim = _var_args(dim, unbiased, keepdim)
    return Var.apply(input, dim, _correction(unbiased, correction), flag(keepdim))


def std(input, dim=None, unbiased=None, keepdim=False, *, correction=None):
    """Standard deviation, with Bessel's correction by default.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 3.0]).std()
    tensor(1.4142)
    """
    dim, unbiased, keepdim = _var_args(dim, unbiased, keepdim)
    return Std.apply(input, dim, _correction(unbiased, correction), flag(keepdim))


def trace(input):
    """The sum of the diagonal of a matrix.

    >>> import teachgrad as tg
    >>> tg.tensor([[1.0, 2.0], [3.0, 4.0]]).trace()
    tensor(5.)
    """
    return Trace.apply(input)


def var_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None) -> tuple:
    """``(var, mean)`` over the same dims, from one node (``VarMeanBackward0``).

    >>> import teachgrad as tg
    >>> tg.var_mean(tg.tensor([1.0, 2.0, 3.0, 4.0]))
    (tensor(1.6667), tensor(2.5000))
    """
    dim, unbiased, keepdim = _var_args(dim, unbiased, keepdim)
    return VarMean.apply(input, dim, _correction(unbiased, correction), flag(keepdim))


def std_mean(input, dim=None, unbiased=None, keepdim=False, *, correction=None) -> tuple:
    """``(std, mean)`` over the same dims, from one node (``StdMeanBackward0``).

    >>> import teachgrad as tg
    >>> tg.std_mean(tg.tensor([1.0, 3.0]))
    (tensor(1.4142), tensor(2.))
    """
    dim, unbiased, keepdim = _var_args(dim, unbiased, keepdim)
    return StdMean.apply(input, dim, _correction(unbiased, correction), flag(keepdim))


def amax(input, dim=(), keepdim=False):
    """Largest value over ``dim`` (all dims when ``dim=()``); ties share the gradient.

    >>> import teachgrad as tg
    >>> tg.tensor([[1.0, 5.0], [7.0, 2.0]]).amax(dim=1)
    tensor([5., 7.])
    """
    return Amax.apply(input, dim, flag(keepdim))


def amin(input, dim=(), keepdim=False):
    """Smallest value over ``dim`` (all dims when ``dim=()``).

    >>> import teachgrad as tg
    >>> tg.tensor([[1.0, 5.0], [7.0, 2.0]]).amin(dim=0)
    tensor([1., 2.])
    """
    return Amin.apply(input, dim, flag(keepdim))


def _extreme(all_cls, dim_cls, result_cls, pairwise, input, dim, keepdim, other):
    if isinstance(dim, Tensor) and keepdim is False:  # (with keepdim: a dim, as an int tensor)
        other, dim = dim, None
    if other is not None:
        return pairwise(input, other)
    if dim is None and keepdim is False:  # (with keepdim, a dim must be given)
        return all_cls.apply(input, None, False)
    return result_cls(*dim_cls.apply(input, dim, keepdim))


def max(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 - torch's name
    """Largest value; with ``dim``, the ``(values, indices)`` along it; with a tensor, ``maximum``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([[1.0, 5.0], [7.0, 2.0]])
    >>> x.max(), x.max(dim=1).indices
    (tensor(7.), tensor([1, 0]))
    """

    return _extreme(MaxAll, MaxDim, return_types.max, maximum, input, dim, keepdim, other)


def min(input, dim=None, keepdim=False, *, other=None):  # noqa: A001 - torch's name
    """Smallest value; with ``dim``, the ``(values, indices)`` along it; with a tensor, ``minimum``.

    >>> import teachgrad as tg
    >>> tg.tensor([[1.0, 5.0], [7.0, 2.0]]).min(dim=0).values
    tensor([1., 2.])
    """

    return _extreme(MinAll, MinDim, return_types.min, minimum, input, dim, keepdim, other)


def _arg_extreme(name, input, dim, keepdim):
    flag(keepdim)
    x = input._data
    xp = array_module(x)
    if x.dtype.kind == "b":
        raise RuntimeError(f"{name}(): does not support bool input\n  Use .long() first.")
    if x.size == 0 and (dim is None or x.ndim == 0):
        raise IndexError(
            f"{name}(): Expected reduction dim to be specified for input.numel() == 0."
        )
    if dim is not None and x.ndim and x.shape[_wrap_dim(dim, x.ndim)] == 0:
        _empty_reduction(name, x.shape, _wrap_dim(dim, x.ndim))
    if dim is not None and x.ndim == 0:
        _wrap_dim(dim, 0)  # a 0-d tensor accepts dim 0 / -1: the index is 0
        dim = None
    if dim is None:
        out = getattr(xp, name)(x.reshape(-1))
        return wrap_array(xp.asarray(out, dtype="int64").reshape((1,) * x.ndim if keepdim else ()))
    out = getattr(xp, name)(x, axis=_wrap_dim(dim, x.ndim), keepdims=keepdim)
    return wrap_array(xp.asarray(out, dtype="int64"))  # (a 1-d input gives a NumPy scalar)


@recorded_as("aten::argmax")
def argmax(input, dim=None, keepdim=False):
    """Index of the largest value (flattened if ``dim`` is None); not differentiable.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 9.0, 3.0]).argmax()
    tensor(1)
    """
    return _arg_extreme("argmax", input, dim, keepdim)


@recorded_as("aten::argmin")
def argmin(input, dim=None, keepdim=False):
    """Index of the smallest value (flattened if ``dim`` is None); not differentiable.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 9.0, 3.0]).argmin()
    tensor(0)
    """
    return _arg_extreme("argmin", input, dim, keepdim)


def logsumexp(input, dim, keepdim=False):
    """``log(sum(exp(x)))`` over ``dim``, computed without overflow.

    >>> import teachgrad as tg
    >>> tg.tensor([1000.0, 1000.0]).logsumexp(0)
    tensor(1000.6932)
    """
    if dim is None:  # (checked() words torch's TypeError)
        raise TypeError("logsumexp reduces the dims it is given, not None")
    # no dims: all of them, which torch can only keep (torch's bug spares empty tensors)
    all_unkept = dim is not _all_if_empty(dim) and not keepdim
    if all_unkept and input._data.ndim and input._data.size:
        raise RuntimeError(
            "output with shape [] doesn't match the broadcast shape "
            f"{[1] * input._data.ndim}\n  logsumexp over dim=() reduces every dim: give "
            "keepdim=True, or leave dim out of the tuple (e.g. dim=(0, 1))."
        )
    return Logsumexp.apply(input, dim, flag(keepdim))


def norm(input, p="fro", dim=None, keepdim=False, dtype=None):
    """Vector p-norm over ``dim`` (all elements by default): p = 2, 1, inf, -inf, 0, any float, 'fro'.

    >>> import teachgrad as tg
    >>> tg.tensor([3.0, 4.0]).norm(), tg.tensor([3.0, -4.0]).norm(p=1)
    (tensor(5.), tensor(7.))
    """
    if isinstance(p, str):
        _check_matrix_norm(p, dim)
    try:
        if dtype is not None:
            input = input.to(dtype_argument(dtype))
        order = 2 if p is None or p == "fro" else p if type(p) in (int, float) else float(p)
        return Norm.apply(input, order, dim, flag(keepdim))
    except Exception as error:  # torch's norm is linalg.vector_norm, called with dims in a list
        dims = [dim] if isinstance(dim, int) else dim
        args = (input, 2 if p == "fro" else p, dims, keepdim)
        raise refusal("linalg_vector_norm", args, given(dtype=dtype), error)  # noqa: B904


def _check_matrix_norm(p: str, dim) -> None:
    """torch's errors for a ``p`` given as a name: only "fro" over at most two dims is a vector
    norm (``len(dim)`` of a dim that is no sequence is Python's TypeError, as in torch)."""
    if p == "fro" and (dim is None or isinstance(dim, int) or len(dim) <= 2):
        return
    if p == "fro":
        raise RuntimeError(
            f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}"
        )
    if p == "nuc":
        raise RuntimeError("norm: p='nuc' is not supported (use 'fro' or a number)")
    raise RuntimeError(f"linalg.matrix_norm: Order {p} not supported.")


def cumsum(input, dim, *, dtype=None):
    """Running sum along ``dim``: ``out[i] = x[0] + ... + x[i]``.

    Integer and bool inputs give int64 (as ``sum``); ``dtype`` casts the input first.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 2.0, 3.0]).cumsum(0), tg.tensor([[1, 2], [3, 4]]).cumsum(dim=1)
    (tensor([1., 3., 6.]), tensor([[1, 3],
            [3, 7]]))
    """
    dim = _given_dim(dim, input._data.ndim)  # (as given, -1 too: the node shows it so)
    return Cumsum.apply(input, dim, None if dtype is None else _np_dtype(dtype))


@recorded_as("aten::any")
def any(input, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """True if any element (along ``dim``) is nonzero.

    >>> import teachgrad as tg
    >>> tg.tensor([0, 1]).any()
    tensor(True)
    """
    return _truth(input, dim, keepdim, "any")


@recorded_as("aten::all")
def all(input, dim=None, keepdim=False):  # noqa: A001 - torch's name
    """True if every element (along ``dim``) is nonzero.

    >>> import teachgrad as tg
    >>> tg.tensor([0, 1]).all()
    tensor(False)
    """
    return _truth(input, dim, keepdim, "all")


def _truth(input, dim, keepdim, reduce: str):
    """``any`` or ``all`` (``reduce``): bools, but uint8 (0 or 1) for a uint8 tensor, as torch."""
    x = input._data
    axis = None if dim is None else reduction_dims(dim, x.ndim)  # (dim=(): reduces nothing)
    out = getattr(x, reduce)(axis=axis, keepdims=flag(keepdim))
    out = row_major(array_module(x).asarray(out))
    return wrap_array(out.astype(x.dtype) if x.dtype == "uint8" else out)


@recorded_as("aten::allclose")
def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False) -> bool:
    """True if every ``|input - other| <= atol + rtol * |other|`` (a Python bool).

    >>> import teachgrad as tg
    >>> tg.allclose(tg.tensor([1.0]), tg.tensor([1.0 + 1e-9]))
    True
    """
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError("allclose compares two tensors")  # (worded as torch's by _arguments)
    if input.dtype != other.dtype:
        raise RuntimeError(
            f"{scalar_type_name(input)} did not match {scalar_type_name(other)}\n  allclose "
            "compares tensors of one dtype: convert one first, e.g. other.to(input.dtype)."
        )
    x, y = operands(input, other)
    return bool(array_module(x).allclose(x, y, rtol=rtol, atol=atol, equal_nan=flag(equal_nan)))


@recorded_as("aten::equal")
def equal(input, other) -> bool:
    """True if both tensors have the same shape and elements (a Python bool).

    >>> import teachgrad as tg
    >>> tg.equal(tg.tensor([1, 2]), tg.tensor([1, 2]))
    True
    """
    if input.shape != other.shape:
        return False
    return bool((input._data == other._data).all())

"""Elementwise ops: arithmetic with broadcasting, the math functions, casts and copies.

Every op is a ``Function``: ``forward`` computes on backend arrays, ``backward``
builds the input gradients from teachgrad ops (so they can be differentiated
again). Broadcasting needs no code here: the engine sums a gradient that has the
broadcast shape back to each input's shape (see ``validate_grad``).

Binary ops accept a Python number on either side and promote dtypes like torch.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> y = (x * x + 1).exp().sum(); y.backward(); x.grad
    tensor([ 14.7781, 593.6526])
"""

from __future__ import annotations

import math
import operator

from .._arguments import invalid_combination
from .._backend import (
    array_module,
    as_array,
    contiguous_format,
    empty_strided,
    expanded,
    floor_quotient,
    get_default_dtype,
    memory_format,
    numpy_module,
    preserve_format,
    quiet,
    result_type,
    strides_for,
    tie_keeps_first,
    to_device,
)
from .._creation import scalar_of
from .._layout import contiguous_strides, format_copy, same_layout, torch_layout, with_strides
from .._printing import c_type_name, scalar_name, scalar_type_name
from .._profiling import recorded_as
from .._tensor import Tensor, wrap_array
from ..autograd.builtin import Builtin
from ..autograd.forward_ad import (
    linear_jvp,
    tangent_sum,
    zero_if_none,
    zero_in_graph,
    zero_tangent,
)
from . import fused

# --------------------------------------------------------------------------- helpers


def operands(a, b, broadcast=True):
    """The arrays of a binary op's two operands, promoted to torch's result dtype.

    With ``broadcast`` (elementwise ops) their shapes must broadcast, else torch's error.
    """
    x = a._data if isinstance(a, Tensor) else a
    y = b._data if isinstance(b, Tensor) else b
    if type(x) is type(y) and x.dtype == y.dtype and (not broadcast or x.shape == y.shape):
        return x, y  # two arrays of one kind, dtype and shape: the common case
    if type(y) in _NUMBERS and x.dtype.kind == "f" or type(x) in _NUMBERS and y.dtype.kind == "f":
        return x, y  # a Python number next to a float array keeps the array's dtype, as in torch
    return _promoted(a, b, x, y, broadcast)


def _promoted(a, b, x, y, broadcast):
    """``operands`` beyond the common case: shapes to broadcast, dtypes to promote, devices
    to compare."""
    if broadcast and hasattr(x, "shape") and hasattr(y, "shape") and x.shape != y.shape:
        broadcast_shape(x.shape, y.shape)
    if type(x) is type(y) and x.dtype == y.dtype:
        return x, y
    dt = result_type(a, b).numpy
    if dt.kind in "iu":  # a Python int beside an integer tensor wraps around, as in torch
        x, y = (_wrapped(v, dt) if type(v) is int else v for v in (x, y))
    if hasattr(x, "dtype"):
        if hasattr(y, "dtype") and type(x) is not type(y):
            same_device(a, b)
        if x.dtype != dt:
            x = _cast(x, dt)
    if hasattr(y, "dtype") and y.dtype != dt:
        y = _cast(y, dt)
    return x, y


def _cast(v, dt):
    """``v`` as ``dt``. An expanded operand stays expanded: what it repeats is cast, then
    seen with its shape again, since its zero strides (not the layout of a full copy)
    decide the layout torch gives the result (``torch_layout``).

    >>> import numpy as np
    >>> _cast(np.broadcast_to(np.ones(2, np.float32), (2, 2)), np.float64).strides
    (0, 8)
    """
    if 0 not in v.strides or not v.size:
        return v.astype(dt)
    repeated = tuple(slice(0, 1) if step == 0 else slice(None) for step in v.strides)
    return expanded(v[repeated].astype(dt), v.shape)


def _wrapped(v: int, dt):
    """A Python int as a number of the integer dtype ``dt``, as torch reads it: its 64 bits
    (an int from 2**63 on read as unsigned), cast as C casts, wrapping around (256 in uint8
    is 0, -1 is 255, 200 in int8 is -56), where NumPy refuses a number out of range.

    >>> import numpy as np
    >>> _wrapped(256, np.dtype("uint8")), _wrapped(200, np.dtype("int8"))
    (0, -56)
    """
    if not -(2**63) <= v < 2**64:
        raise OverflowError("int too big to convert")
    return int(numpy_module().array(v % 2**64, dtype="uint64").astype(dt)[()])  # (a Python int)


_NUMBERS = (float, int)
_ndarray = numpy_module().ndarray


def broadcast_shape(*shapes) -> tuple:
    """The shape ``shapes`` broadcast to, or torch's error naming the first clash (from the right).
    Each shape is laid against the result so far in one pass, right-aligned; the padding
    with 1s is left to the error (2026-11-28: (32, 64) with (64,) 6.9 -> 3.1 µs, timeit;
    the small MLP step of ``benchmarks/bench.py`` (b3), whose bias additions check it,
    -1.7%, callgrind).

    >>> broadcast_shape((3, 1), (1, 4))
    (3, 4)
    """
    result = ()
    for shape in shapes:
        shape = tuple(shape)
        short, long = (result, shape) if len(result) <= len(shape) else (shape, result)
        extra = len(long) - len(short)  # the longer shape's leading sizes stay as they are
        sizes = list(long[:extra])
        for p, q in zip(long[extra:], short):
            if p != q and p != 1 and q != 1:
                raise _no_broadcast(result, shape)
            sizes.append(q if p == 1 else p)
        result = tuple(sizes)
    return result


def _no_broadcast(a: tuple, b: tuple) -> RuntimeError:
    """torch's error for shapes ``a`` and ``b`` that do not broadcast: the first clash from
    the right, with both shapes padded with leading 1s to one length."""
    n = max(len(a), len(b))
    a, b = (1,) * (n - len(a)) + a, (1,) * (n - len(b)) + b
    d = next(d for d in reversed(range(n)) if a[d] != b[d] and a[d] != 1 and b[d] != 1)
    return RuntimeError(
        f"The size of tensor a ({a[d]}) must match the size of tensor b ({b[d]}) at non-singleton "
        f"dimension {d}\n  Shapes {a} and {b} do not broadcast: right-aligned, each pair of sizes "
        "must be equal or one of them 1."
    )


def same_device(*tensors) -> None:
    """torch's error when the tensors of one op live on different devices."""
    for t in tensors:  # all NumPy arrays: all on the one CPU (the common case, checked cheaply)
        if isinstance(t, Tensor) and type(t._data) is not _ndarray:
            break
    else:
        return
    devices = {str(t.device) for t in tensors if isinstance(t, Tensor)}
    if len(devices) > 1:
        first, second = sorted(devices)[:2]
        raise RuntimeError(
            f"Expected all tensors to be on the same device, but found at least two devices, {second} and "
            f"{first}!\n  Move them to one device first, e.g. t.to('{second}') or t.cpu()."
        )


def float_data(x):
    """``x``'s array, as the default float dtype if it is an integer or bool array (laid
    out as torch lays out the op's result: NumPy's ``astype`` orders an expanded array's
    dims by its 0 strides, ``(1, 2)`` where torch's result is row-major).

    >>> import teachgrad as tg
    >>> float_data(tg.tensor([[1, 2, 3]]).expand(2, 3)).strides  # (float32: 4 bytes each)
    (12, 4)
    """
    data = x._data
    if data.dtype.kind == "f":
        return data
    return torch_layout(data.astype(get_default_dtype().numpy), data)


class _Binary(Builtin):
    """Binary arithmetic on tensors or numbers: torch's saved names, one edge per operand."""

    batchable = True  # elementwise: a leading batch dim of grad just broadcasts
    saved_names = ("self", "other")
    number_inputs = (0, 1)  # torch wraps a number operand as a tensor: it gets an empty edge


# --------------------------------------------------------------------------- arithmetic


def _check_alpha(alpha, result, op: str):
    """torch's checks of ``alpha`` (run unless it is the int 1): a number (a 0-d tensor is
    the number it holds, as in torch), and a whole one for an integer or bool result
    (``int_tensor.add(1, alpha=0.5)`` would need a float). Returns alpha as a Python number.

    >>> import numpy as np, teachgrad as tg
    >>> _check_alpha(tg.tensor(2), np.zeros(1), "add")
    2
    """
    if isinstance(alpha, Tensor) and alpha._data.ndim == 0:
        alpha = alpha.item()
    if not isinstance(alpha, int | float):
        raise TypeError(
            f"{op}(): argument 'alpha' must be Number, not {type(alpha).__name__}\n  alpha scales "
            f"the other operand: {op}(x, y, alpha=2) is x {'+' if op == 'add' else '-'} 2 * y."
        )
    if isinstance(alpha, bool) and result.dtype.kind != "b":
        raise RuntimeError("Boolean alpha only supported for Boolean results.")
    if isinstance(alpha, float) and result.dtype.kind in "biu":
        raise RuntimeError(
            "For integral input tensors, argument alpha must not be a floating point number.\n  "
            "An integer result cannot hold alpha * other: cast a tensor to float first."
        )
    return alpha


class Add(Builtin):
    on_arrays = True
    batchable = True
    node_name = "AddBackward0"
    saved_args = {"alpha": "alpha"}
    formula = {"self": "grad", "other": "grad · alpha"}
    number_inputs = (0, 1)  # torch wraps a number operand as a tensor: it gets an empty edge

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        x, y = operands(a, b)
        if type(alpha) is not int or alpha != 1:  # (True, 1.0 or a tensor: torch checks them)
            alpha = _check_alpha(alpha, x, "add")
        ctx.alpha = alpha
        out = x + y if alpha == 1 else _scaled_sum(x, alpha, y)
        kept = type(out) is _ndarray and x.flags.c_contiguous and out.size  # (see torch_layout)
        return out if kept else torch_layout(out, x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, (grad if ctx.alpha == 1 else grad * ctx.alpha), None

    jvp = staticmethod(linear_jvp)


@quiet  # (off the hot path: alpha is rarely given)
def _scaled_sum(x, alpha, y):
    """``x + alpha * y``; for bools a bool (x or y, unless alpha is 0), as torch's."""
    if x.dtype.kind == "b":  # (any nonzero alpha reads as True)
        return (x + bool(alpha) * y).astype(x.dtype)
    if x.dtype.kind in "iu":  # alpha * y in the dtype, wrapping around as torch's C arithmetic
        xp = array_module(x)
        return x + xp.asarray(alpha).astype(x.dtype) * xp.asarray(y).astype(x.dtype)
    return x + alpha * y


def _is_bool(x) -> bool:
    """A bool tensor or a Python bool (torch refuses both in a subtraction)."""
    return isinstance(x, bool) or (isinstance(x, Tensor) and x._data.dtype.kind == "b")


def _refuse_bool_subtraction(x, y):
    """torch has no ``-`` for bools: what is meant is xor, or not."""
    if _is_bool(x) and _is_bool(y):
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead."
        )
    raise RuntimeError(
        "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to "
        "invert a mask, use the `~` or `logical_not()` operator instead."
    )


class Sub(Builtin):
    on_arrays = True
    batchable = True
    node_name = "SubBackward0"
    saved_args = {"alpha": "alpha"}
    formula = {"self": "grad", "other": "−grad · alpha"}
    number_inputs = (0, 1)  # torch wraps a number operand as a tensor: it gets an empty edge

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) or _is_bool(b):
            _refuse_bool_subtraction(a, b)
        x, y = operands(a, b)
        if type(alpha) is not int or alpha != 1:  # (True, 1.0 or a tensor: torch checks them)
            alpha = _check_alpha(alpha, x, "sub")
        ctx.alpha = alpha
        out = x - y if alpha == 1 else x - alpha * y
        kept = type(out) is _ndarray and x.flags.c_contiguous and out.size  # (see torch_layout)
        return out if kept else torch_layout(out, x, y)

    @staticmethod
    def backward(ctx, grad):
        if not ctx.needs_input_grad[1]:
            return grad, None, None
        return grad, -grad if ctx.alpha == 1 else grad * -ctx.alpha, None

    jvp = staticmethod(linear_jvp)


class Rsub(Builtin):
    """``number - tensor``."""

    on_arrays = True
    records_inference = True  # (torch makes the number a tensor, then records on it)

    batchable = True
    node_name = "RsubBackward1"
    formula = {"self": "−grad · alpha"}
    saved_args = {"alpha": "alpha"}

    @staticmethod
    def forward(ctx, a, b, alpha=1):
        if _is_bool(a) or _is_bool(b):
            _refuse_bool_subtraction(a, b)
        x, y = operands(a, b)
        ctx.alpha = alpha
        return torch_layout(y - alpha * x, x, y)  # (torch's first operand: the number)

    @staticmethod
    def backward(ctx, grad):
        return grad * -ctx.alpha, None, None

    @staticmethod
    def jvp(ctx, ta, *_):
        return ta * -ctx.alpha


class Mul(_Binary):
    on_arrays = True
    node_name = "MulBackward0"
    checked_first = ("other",)
    formula = {"self": "grad · other", "other": "grad · self"}

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        ctx.to_save = (a if need_b else None, b if need_a else None)  # a number is kept as it is
        out = x * y
        kept = type(out) is _ndarray and x.flags.c_contiguous and out.size  # (see torch_layout)
        return out if kept else torch_layout(out, x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return grad * b if need_a else None, grad * a if need_b else None

    @staticmethod
    def jvp(ctx, ta, tb):  # the product rule (a missing tangent: torch's zero term)
        a, b = ctx.inputs
        return tangent_sum(
            zero_in_graph(b) if ta is None else ta * b, zero_in_graph(a) if tb is None else a * tb
        )


class Div(_Binary):
    on_arrays = True
    node_name = "DivBackward0"
    checked_first = ("other",)
    formula = {"self": "grad / other", "other": "−grad · self / other²"}

    @staticmethod
    @quiet
    def forward(ctx, a, b):
        x, y = operands(a, b)
        need_a, need_b = ctx.needs_input_grad
        ctx.to_save = (a if need_b else None, b if need_a or need_b else None)
        if x.dtype.kind in "biu" if hasattr(x, "dtype") else y.dtype.kind in "biu":
            # integers (or bools) divide in the default float dtype, as in torch: each
            # operand is cast as it was given (a number is not wrapped into the tensor's
            # dtype first, as it is for + and *: uint8 / -3 is -1/3, not 1/253)
            x, y = (_as_default_float(v) for v in (a, b))
        out = x / y
        if hasattr(x, "dtype") and out.dtype != x.dtype and not isinstance(b, Tensor):
            out = out.astype(x.dtype)
        kept = type(out) is _ndarray and x.flags.c_contiguous and out.size  # (see torch_layout)
        return out if kept else torch_layout(out, x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        # (a / b) / b, not a / b²: torch's order, whose second derivative stays finite
        # where b² overflows (b = inf)
        return grad / b if need_a else None, -grad * (a / b / b) if need_b else None

    @staticmethod
    def jvp(ctx, ta, tb):  # d(a / b) = (da - (a / b) db) / b (a missing db: torch's zero term)
        _, b = ctx.inputs
        return tangent_sum(ta, zero_in_graph(ctx.result) if tb is None else -ctx.result * tb) / b


def _as_default_float(v):
    """An operand of an integer division: a tensor's array in the default float dtype (laid
    out as ``float_data`` lays it out), or the number."""
    return float_data(v) if isinstance(v, Tensor) else v


class _ByNumber:
    """torch's ``.Scalar`` overloads of ``*`` and ``/`` (its C++ code calls them: mean's
    backward, cross_entropy): the number is an argument of the node (``_saved_other``, still
    readable after backward), not an input with an edge. ``tensor_op`` computes forward;
    backward is ``by(grad, number)``, the same product or quotient (both are linear in the
    tensor)."""

    number_inputs, saved_names, saved_args = (), (), {"other": "other"}
    tensor_op = by = None

    @classmethod
    def forward(cls, ctx, a, number):
        out = cls.tensor_op.forward(ctx, a, number)
        ctx.to_save, ctx.other = (), number
        return out

    @classmethod
    def backward(cls, ctx, grad):
        return cls.by(grad, ctx.other), None


class DivByNumber(_ByNumber, Div):
    """``tensor / number`` (``div.Scalar``: node ``DivBackward1``)."""

    node_name, tensor_op, by = "DivBackward1", Div, operator.truediv


class MulByNumber(_ByNumber, Mul):
    """``tensor * number`` (``mul.Scalar``: node ``MulBackward1``)."""

    node_name, tensor_op, by = "MulBackward1", Mul, operator.mul


def _rounded_quotient(x, y, rounding_mode):
    """``x / y`` rounded down (``"floor"``, Python's ``//``) or toward zero (``"trunc"``).

    An integer result can't be infinite: on the CPU, torch refuses integer division by zero
    (on a GPU it gives whatever the hardware gives, and checking would make the CPU wait).
    """
    xp = array_module(x if hasattr(x, "dtype") else y)
    kind = xp.result_type(x, y).kind
    if kind == "b":  # (operands promoted: both are bools)
        raise NotImplementedError(f"\"div_{rounding_mode}_cpu\" not implemented for 'Bool'")
    integer = kind in "iu"
    if integer:
        _refuse_integer_zero(x, y, xp)
    if rounding_mode == "floor":  # (a float's: the floor of the exact quotient, as torch)
        return xp.floor_divide(x, y) if integer else floor_quotient(x, y)
    q = xp.trunc(x / y)
    return q.astype(xp.result_type(x, y)) if integer else q


class DivRounding(Builtin):
    """``div`` with ``rounding_mode='trunc'`` or ``'floor'``: piecewise constant, so zero grads."""

    batchable = True
    node_name = "DivBackward2"
    formula = {"self": "0", "other": "0"}
    saved_args = {"rounding_mode": "rounding_mode"}

    @staticmethod
    @quiet
    def forward(ctx, a, b, rounding_mode):
        x, y = operands(a, b)
        return torch_layout(_rounded_quotient(x, y, rounding_mode), x, y)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.rounding_mode = inputs[2]

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad), constant_zeros(grad) if ctx.needs_input_grad[1] else None, None

    jvp = staticmethod(zero_tangent)


class FloorDivide(Builtin):
    """``input // other`` (``floor_divide``): the quotient rounded down. torch gives it no
    derivative (``div(..., rounding_mode="floor")`` has one: zero), so its node is
    ``NotImplemented`` and backward through it raises; ``op`` is the name it says."""

    node_name = "NotImplemented"
    formula = {"self": "no derivative: backward raises", "other": "no derivative: backward raises"}

    @staticmethod
    @quiet
    def forward(ctx, a, b, op):
        ctx.op = op
        x, y = operands(a, b)
        return torch_layout(_rounded_quotient(x, y, "floor"), x, y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            f"derivative for aten::{ctx.op} is not implemented\n  Floor division is a staircase; "
            "for a gradient (zero) use div(..., rounding_mode='floor')."
        )

    @staticmethod
    def jvp(ctx, *_):
        raise NotImplementedError(
            f"Trying to use forward AD with aten::{ctx.op} that does not support it.\n  Floor "
            "division is a staircase; for a tangent (zero) use div(..., rounding_mode='floor')."
        )


# --------------------------------------------------------------------------- remainders
#
# Two remainders, as in torch: ``fmod`` is C's (the sign of the dividend, ``trunc``'s
# partner) and ``remainder``, Python's ``%`` (the sign of the divisor, ``floor``'s partner).
# Both are ``self − q · other`` for their rounded quotient ``q``, which is piecewise
# constant: so d/dself = 1 and d/dother = −q (at the jumps, torch's formula as well).


def _refuse_integer_zero(x, y, xp):
    """torch's CPU refusal of an integer division by zero (a float one gives nan or inf)."""
    np = numpy_module()
    if xp is np and np.size(x) and np.size(y) and not np.all(y):
        raise RuntimeError(
            "ZeroDivisionError\n  Integer division by zero: no integer is the answer. (Float "
            "tensors give inf or nan instead.)"
        )


@quiet  # (a float remainder by zero is nan, said quietly, as torch says it)
def _remainder_arrays(x, y, op):
    """``x fmod y`` (``op="fmod"``) or ``x % y`` (``op="remainder"``) on promoted arrays.

    Both start from C's fmod; a remainder whose sign differs from the divisor's is moved
    by one divisor (what torch does: ``-0.0 % 2`` stays ``-0.``, NumPy would say ``0.``).
    """
    xp = array_module(x if hasattr(x, "dtype") else y)
    kind = xp.result_type(x, y).kind
    if kind == "b":
        raise NotImplementedError(
            f"\"{op}_cpu\" not implemented for 'Bool'\n  A remainder of bools means "
            "nothing: convert first, e.g. x.long()."
        )
    if kind in "iu":
        _refuse_integer_zero(x, y, xp)
    r = xp.fmod(x, y)
    if op == "fmod":
        return r
    moved = (r != 0) & ((r < 0) != (y < 0))
    return xp.where(moved, r + y, r)


def _quotient(a, b, rounding_mode):
    """``a / b`` rounded (the ``−q`` in a remainder's gradient): on Tensors the differentiable
    ``div(..., rounding_mode=...)`` (zero gradients), on arrays its plain arithmetic."""
    if isinstance(a, Tensor):
        return DivRounding.apply(a, b, rounding_mode)
    with numpy_module().errstate(all="ignore"):
        return _rounded_quotient(a, b, rounding_mode)


class _RemainderNumber(Builtin):
    """``tensor % number`` (and fmod): the number shifts the tensor by a piecewise constant,
    so the gradient passes through unchanged; nothing is saved."""

    batchable = True
    records_inference = True  # (torch makes the number a tensor, then records on it)
    op = "remainder"

    @classmethod
    def forward(cls, ctx, a, b):
        x, y = operands(a, b)
        return torch_layout(_remainder_arrays(x, y, cls.op), x, y)

    @staticmethod
    def backward(ctx, grad):
        return grad, None

    @staticmethod
    def jvp(ctx, ta, *_):
        return ta


class RemainderScalar(_RemainderNumber):
    on_arrays = True  # (set on each op: the test of on_arrays finds every class that says so)
    node_name = "RemainderBackward0"
    formula = {"self": "grad"}


class FmodScalar(_RemainderNumber):
    on_arrays = True  # (set on each op: the test of on_arrays finds every class that says so)
    node_name = "FmodBackward0"
    formula = {"self": "grad"}
    op = "fmod"


class _RemainderTensors(_Binary):
    """``tensor % tensor`` (and fmod): d/dself = 1, d/dother = −(the rounded quotient)."""

    op, rounding_mode = "remainder", "floor"

    @classmethod
    def forward(cls, ctx, a, b):
        x, y = operands(a, b)
        if ctx.needs_input_grad[1]:  # only other's gradient reads them (torch saves them only then)
            ctx.to_save = (a, b)
        return torch_layout(_remainder_arrays(x, y, cls.op), x, y)

    @classmethod
    def backward(cls, ctx, grad):
        need_a, need_b = ctx.needs_input_grad
        if not need_b:
            return grad, None
        a, b = ctx.saved_tensors
        return grad if need_a else None, -grad * _quotient(a, b, cls.rounding_mode)

    @classmethod
    def jvp(cls, ctx, ta, tb):
        a, b = ctx.inputs
        return tangent_sum(ta, None if tb is None else -tb * _quotient(a, b, cls.rounding_mode))


class Remainder(_RemainderTensors):
    on_arrays = True  # (set on each op: the test of on_arrays finds every class that says so)
    node_name = "RemainderBackward1"
    formula = {"self": "grad", "other": "−grad · floor(self / other)"}


class Fmod(_RemainderTensors):
    on_arrays = True  # (set on each op: the test of on_arrays finds every class that says so)
    node_name = "FmodBackward1"
    formula = {"self": "grad", "other": "−grad · trunc(self / other)"}
    op, rounding_mode = "fmod", "trunc"


class NumberRemainder(Builtin):
    """``number % tensor``: torch gives it no derivative, so its node is ``NotImplemented``
    and backward through it raises."""

    node_name = "NotImplemented"
    formula = {"other": "no derivative: backward raises"}

    @staticmethod
    def forward(ctx, a, b):
        x, y = operands(a, b)
        return torch_layout(_remainder_arrays(x, y, "remainder"), x, y)

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "derivative for aten::remainder is not implemented\n  torch has no gradient for a "
            "number % tensor; write number - tensor * (number / tensor).floor() to get one."
        )


class PowScalar(Builtin):
    """``tensor ** number``."""

    batchable = True
    node_name = "PowBackward0"
    saved_names = ("self",)
    saved_args = {"exponent": "exponent"}  # (a number: readable after backward, as torch's)
    formula = {"self": "grad · exponent · self^(exponent − 1)"}

    @staticmethod
    @quiet
    def forward(ctx, a, exponent):
        ctx.to_save = (a,)
        ctx.exponent = exponent
        x = a._data
        if x.dtype.kind != "f" and isinstance(exponent, float):
            x = float_data(a)
        if x.dtype.kind in "biu" and exponent < 0:  # (a float exponent made x float above)
            raise RuntimeError("Integers to negative integer powers are not allowed.")
        if x.dtype.kind == "b":  # NumPy makes int8 of it; torch promotes as for any other op
            return same_layout((x**exponent).astype(result_type(a, exponent).numpy), x)
        if exponent == -0.5:  # torch's rsqrt: -0.0 gives -inf, -inf NaN (NumPy's pow: inf, 0)
            return same_layout(1 / array_module(x).sqrt(x), x)
        return same_layout(x**exponent, x)

    @staticmethod
    def backward(ctx, grad):
        (a,), p = ctx.saved_tensors, ctx.exponent
        if p == 0:
            return constant_zeros(grad), None
        return grad * p * a ** (p - 1), None

    @staticmethod
    def jvp(ctx, t, _):
        a, p = ctx.inputs
        return t * 0 if p == 0 else t * p * a ** (p - 1)


def _power(x, y):
    """``x ** y``; for integers a negative exponent gives what torch's kernel gives (1 for a
    base of 1, ±1 for -1, else 0) where NumPy refuses."""
    array = x if hasattr(x, "dtype") else y  # (Rpow's base is a number)
    if array.dtype.kind not in "iu":
        return x**y
    xp = array_module(array)
    negative = y < 0
    whole = x ** xp.where(negative, -y, y)  # (|y|: the sign pattern of (-1) ** y)
    return xp.where(negative & (xp.abs(x) != 1), 0, whole).astype(whole.dtype)


def _refuse_bool_power(promoted):
    """torch has no power of two bools (only ``bool_tensor ** True`` or ``** False``)."""
    if promoted.dtype.kind == "b":
        raise NotImplementedError("\"pow\" not implemented for 'Bool'")


def _power_slope(grad, a, b):
    """grad · d(a ** b)/da = grad · b a^(b-1), 0 where b == 0 (even at a == 0, where a ** -1
    is inf: it is taken and masked, so that a second derivative there is NaN, as torch's)."""
    return where(b == 0, 0.0, grad * (b * a ** (b - 1)))


def _exponent_slope(result, base, exponent):
    """d(base ** exponent)/d exponent = result · log(base), 0 where base == 0 and exponent >= 0,
    as torch's pow backward (the product is taken and masked: a second derivative there is
    NaN, as torch's)."""
    flat = (base == 0) & (exponent >= 0)
    return where(flat, 0.0, result * base.log())


class Pow(Builtin):
    """``tensor ** tensor``."""

    batchable = True
    node_name = "PowBackward1"
    saved_names = ("self", "exponent", "result")
    checked_first = ("exponent",)
    formula = {
        "self": "grad · exponent · self^(exponent − 1)",
        "exponent": "grad · result · log(self)",  # (log taken as 0 where self is 0)
    }

    @staticmethod
    @quiet
    def forward(ctx, a, b):
        x, y = operands(a, b)
        _refuse_bool_power(x)
        return torch_layout(_power(x, y), x, y)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (*inputs, output)

    @staticmethod
    def backward(ctx, grad):
        a, b, result = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        grad_a = _power_slope(grad, a, b) if need_a else None
        grad_b = grad * _exponent_slope(result, a.to(result.dtype), b) if need_b else None
        return grad_a, grad_b

    @staticmethod
    def jvp(ctx, ta, tb):  # d(a ** b) = b a^(b-1) da + a^b log(a) db
        a, b = ctx.inputs
        da = None if ta is None else _power_slope(ta, a, b)
        db = None if tb is None else tb * _exponent_slope(ctx.result, a.to(ctx.result.dtype), b)
        return tangent_sum(da, db)


class Rpow(Builtin):
    """``number ** tensor``."""

    batchable = True
    node_name = "PowBackward2"
    saved_names = ("exponent", "result")
    saved_args = {"self": "base"}  # (a number: readable after backward, as torch's)
    formula = {"exponent": "grad · result · log(self)"}  # self: the number (the base)

    @staticmethod
    @quiet
    def forward(ctx, exponent, base):
        y, x = operands(exponent, base)
        _refuse_bool_power(y)
        ctx.base = base
        # row-major whatever the exponent's layout: torch writes into a fresh result tensor
        return with_strides(_power(x, y), contiguous_strides(y.shape))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        exponent, result = ctx.saved_tensors
        return grad * Rpow.slope(ctx, exponent, result), None

    @staticmethod
    def jvp(ctx, t, _):
        return t * Rpow.slope(ctx, ctx.inputs[0], ctx.result)

    @staticmethod
    def slope(ctx, exponent, result):
        """d(base ** b)/db = result · log(base); for 0 ** b: flat where b >= 0, and (as in
        torch) result · log 0 where b < 0."""
        if ctx.base == 0:
            return where(exponent >= 0, 0.0, result * -math.inf)
        return result * _log_of_number(ctx.base)


def _log_of_number(x: float) -> float:
    return math.log(x) if x > 0 else float("nan")


class Neg(Builtin):
    on_arrays = True
    batchable = True
    node_name = "NegBackward0"
    formula = {"self": "−grad"}

    @staticmethod
    def forward(ctx, a):
        if a._data.dtype.kind == "b":
            raise RuntimeError(
                "Negation, the `-` operator, on a bool tensor is not supported. If you are trying "
                "to invert a mask, use the `~` or `logical_not()` operator instead."
            )
        return same_layout(-a._data, a._data)

    @staticmethod
    def backward(ctx, grad):
        return -grad

    jvp = staticmethod(linear_jvp)


# --------------------------------------------------------------------------- unary math


class _Unary(Builtin):
    """A unary float op ``forward = fn(x)`` with a backward formula in terms of x or the result."""

    batchable = True
    saved_names = ("self",)
    uses_result = False  # save the output instead of the input (exp, tanh, sigmoid, ...)

    @staticmethod
    def compute(xp, x):
        raise NotImplementedError

    @classmethod
    def forward(cls, ctx, a):
        x = float_data(a)
        out = cls.compute(array_module(x), x)
        return out if type(out) is _ndarray else same_layout(out, x)  # (a CuPy result: see there)

    @classmethod
    def setup_context(cls, ctx, inputs, output):
        ctx.to_save = (output,) if cls.uses_result else (inputs[0],)

    @classmethod
    def backward(cls, ctx, grad):
        (saved,) = ctx.saved_tensors
        return cls.derivative(grad, saved)

    @classmethod
    def jvp(cls, ctx, t):  # elementwise: the Jacobian is diagonal, so J t uses backward's formula
        return cls.derivative(t, ctx.result if cls.uses_result else ctx.inputs[0])


def _unary(
    name,
    node_name,
    compute,
    derivative,
    uses_result=False,
    *,
    formula,
    module=__name__,
    arrays=True,
):
    """Make a ``_Unary`` subclass: ``compute(xp, x)`` forward, ``derivative(grad, x_or_y)``
    and its ``formula``, the rule for ∂L/∂self that ``derivative`` computes
    (``module``: where it is defined, when that is not this file; ``arrays``: the
    derivative works on arrays too, see ``Builtin.on_arrays``)."""
    return type(
        name,
        (_Unary,),
        {
            "node_name": node_name,
            "saved_names": ("result",) if uses_result else ("self",),
            "uses_result": uses_result,
            "on_arrays": arrays,
            "formula": {"self": formula},
            "compute": staticmethod(compute),
            "derivative": staticmethod(derivative),
            "__doc__": f"``{name.lower()}`` as a Function (node {node_name}).",
            "__module__": module,
        },
    )


# One line per op: its name, torch's node name, forward (on arrays), backward (from teachgrad
# ops, so it can be differentiated again), and the rule that backward computes for ∂L/∂self.
# fmt: off
Exp = _unary("Exp", "ExpBackward0", lambda xp, x: xp.exp(x), lambda g, y: g * y, True, formula="grad · result")
Log = _unary("Log", "LogBackward0", quiet(lambda xp, x: xp.log(x)), lambda g, x: g / x, formula="grad / self")
Log1p = _unary("Log1p", "Log1PBackward0", quiet(lambda xp, x: xp.log1p(x)), lambda g, x: g / (x + 1), formula="grad / (self + 1)")
Expm1 = _unary("Expm1", "Expm1Backward0", quiet(lambda xp, x: xp.expm1(x)), lambda g, y: g * (y + 1), True, formula="grad · (result + 1)")
Sqrt = _unary("Sqrt", "SqrtBackward0", quiet(lambda xp, x: xp.sqrt(x)), lambda g, y: g / (2 * y), True, formula="grad / (2 · result)")
Rsqrt = _unary("Rsqrt", "RsqrtBackward0", quiet(lambda xp, x: 1 / xp.sqrt(x)), lambda g, y: -0.5 * g * y**3, True, formula="−grad · result³ / 2")
Reciprocal = _unary("Reciprocal", "ReciprocalBackward0", quiet(lambda xp, x: 1 / x), lambda g, y: -g * (y * y), True, formula="−grad · result²")
Sin = _unary("Sin", "SinBackward0", quiet(lambda xp, x: xp.sin(x)), lambda g, x: g * x.cos(), formula="grad · cos(self)", arrays=False)
Cos = _unary("Cos", "CosBackward0", quiet(lambda xp, x: xp.cos(x)), lambda g, x: -g * x.sin(), formula="−grad · sin(self)", arrays=False)
Tan = _unary("Tan", "TanBackward0", quiet(lambda xp, x: xp.tan(x)), lambda g, y: g * (1 + y * y), True, formula="grad · (1 + result²)")
# fmt: on


class _TanhGrad(Builtin):
    """tanh's backward ``g * (1 - y²)`` as one op, like torch's ``tanh_backward``; differentiable."""

    batchable = True
    node_name = "TanhBackwardBackward0"
    formula = {
        "grad_output": "grad · (1 − output²)",
        "output": "−2 · grad · grad_output · output",
    }

    @staticmethod
    def forward(ctx, g, y):
        ctx.to_save = (g, y)
        return _tanh_grad(g._data, y._data)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        return gg * (1 - y * y), -2 * gg * g * y

    @staticmethod
    def jvp(ctx, tg, ty):
        g, y = ctx.inputs
        return tangent_sum(
            None if tg is None else tg * (1 - y * y), None if ty is None else -2 * g * y * ty
        )


class _SigmoidGrad(Builtin):
    """sigmoid's backward ``g * y * (1 - y)`` as one op (torch's ``sigmoid_backward``)."""

    batchable = True
    node_name = "SigmoidBackwardBackward0"
    formula = {
        "grad_output": "grad · output · (1 − output)",
        "output": "grad · grad_output · (1 − 2 · output)",
    }

    @staticmethod
    def forward(ctx, g, y):
        ctx.to_save = (g, y)
        return _sigmoid_grad(g._data, y._data)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        return gg * y * (1 - y), gg * g * (1 - 2 * y)

    @staticmethod
    def jvp(ctx, tg, ty):
        g, y = ctx.inputs
        return tangent_sum(
            None if tg is None else tg * y * (1 - y), None if ty is None else g * (1 - 2 * y) * ty
        )


def _tanh_grad(g, y):
    """``g · (1 − y²)`` on arrays: tanh's backward, and _TanhGrad's forward.

    Big arrays are computed in one new array ``r`` (see ``_in_one_array``), with the
    same arithmetic, so with the same values.

    >>> import numpy as np
    >>> _tanh_grad(np.array([2.0, 2.0]), np.array([0.0, 0.5]))
    array([2. , 1.5])
    """
    if not _in_one_array(g, y):
        return g * (1 - y * y)
    r = y * y
    xp = array_module(r)
    xp.subtract(1, r, out=r)
    return xp.multiply(g, r, out=r)


def _sigmoid_grad(g, y):
    """``g · (1 − y) · y`` on arrays, in torch's order: sigmoid's backward, and
    _SigmoidGrad's forward (big arrays in one new array ``r``, see ``_in_one_array``).

    >>> import numpy as np
    >>> _sigmoid_grad(np.array([4.0]), np.array([0.5]))
    array([1.])
    """
    if not _in_one_array(g, y):
        return g * (1 - y) * y
    r = 1 - y
    r *= g
    r *= y
    return r


_ONE_ARRAY_FROM = 1 << 14  # elements


def _in_one_array(g, y) -> bool:
    """Memory: whether tanh's or sigmoid's backward ``g ∘ f(y)`` writes each step into
    one new array, as torch's single ``tanh_backward``/``sigmoid_backward`` kernels do.
    Written plainly, ``g * (1 - y * y)`` holds two temporaries of y's size at once and
    ``g * (1 - y) * y`` three. Measured on benchmark (c), 200 layers of ``tanh(y @ W)``
    with 0.5 MiB activations: peak growth 203.0 → 202.4 MiB in three runs each (torch:
    202.3; the peak now comes at the last matrix product's backward, not at a tanh's).

    Only for big arrays: on small ones the plain expression is quicker (the chain of
    benchmark (a), 4 elements, was 1.2% slower per op in one array); and only where g
    has y's shape (a batched g has one more dimension) and dtype.
    """
    return y.size >= _ONE_ARRAY_FROM and y.shape == g.shape and y.dtype == g.dtype


def _one_op_or_arrays(grad_op, on_arrays):
    """A derivative that is one differentiable op on Tensors and plain arithmetic on arrays."""
    return lambda g, y: grad_op.apply(g, y) if isinstance(g, Tensor) else on_arrays(g, y)


# fmt: off
Tanh = _unary("Tanh", "TanhBackward0", lambda xp, x: xp.tanh(x), _one_op_or_arrays(_TanhGrad, _tanh_grad), True, formula="grad · (1 − result²)")
Sigmoid = _unary("Sigmoid", "SigmoidBackward0", lambda xp, x: _sigmoid(xp, x), _one_op_or_arrays(_SigmoidGrad, _sigmoid_grad), True, formula="grad · result · (1 − result)")
# fmt: on


def _sigmoid(xp, x):
    # exp of a negative number only, so large |x| neither overflows nor loses precision
    e = xp.exp(-xp.abs(x))
    return xp.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


class SavesResult(Builtin):
    """A Function whose backward needs only its output (saved as ``result``):
    relu, softmax, log_softmax."""

    saved_names = ("result",)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (output,)


class Relu(SavesResult):
    on_arrays = True
    batchable = True
    node_name = "ReluBackward0"
    formula = {"self": "grad · (result > 0)"}

    @staticmethod
    def forward(ctx, a):
        x = a._data
        if x.dtype.kind == "b":
            raise RuntimeError("Boolean inputs not supported for relu")
        # maximum, not x * (x > 0): that gives -0.0 for negatives; NaN stays NaN as in torch,
        # and so does -0.0 (x wins the tie with 0)
        return same_layout(tie_keeps_first("maximum", x, 0), x)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return _ReluGrad.apply(grad, y) if isinstance(grad, Tensor) else _relu_grad(grad, y)

    @staticmethod
    def jvp(ctx, t):
        return _ReluGrad.apply(t, ctx.result)


class Threshold(Builtin):
    """``threshold(x, threshold, value)``: x where x > threshold, else value (relu is
    ``threshold(x, 0, 0)``); the gradient passes where x > threshold."""

    batchable = True
    node_name = "ThresholdBackward0"
    saved_names = ("self",)
    saved_args = {"threshold": "threshold"}
    formula = {"self": "grad · (self > threshold)"}

    @staticmethod
    def forward(ctx, a, threshold, value):
        ctx.to_save, ctx.threshold = (a,), threshold
        x = a._data
        if x.dtype.kind == "b":
            raise RuntimeError("\"threshold_cpu\" not implemented for 'Bool'")
        kept = array_module(x).where(x > threshold, x, scalar_of(value, x.dtype))
        return same_layout(kept.astype(x.dtype, copy=False), x)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return where(a > ctx.threshold, grad, 0.0), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return where(ctx.inputs[0] > ctx.threshold, t, 0.0)


def _relu_grad(g, y):
    """``g where y > 0, else 0``, on arrays: relu's backward, and _ReluGrad's forward.
    A NaN result passes the gradient, as in torch (which zeroes it where ``y <= 0``)."""
    out = fused.threshold_grad(g, y)  # on a GPU: one kernel instead of three
    if out is not None:
        return out
    mask = ~(y <= 0)
    out = _masked(array_module(mask), mask, g, 0)
    return array_module(mask).where(mask, g, 0) if out is None else out


class _ReluGrad(Builtin):
    """relu's backward ``g where y > 0, else 0`` as one op (torch's ``threshold_backward``)."""

    batchable = True
    node_name = "ThresholdBackwardBackward0"
    # output (relu's result) only picks the places: it gets no gradient
    formula = {"grad_output": "grad · (output > 0)"}

    @staticmethod
    def forward(ctx, g, y):
        ctx.to_save = (y,)
        return _relu_grad(g._data, y._data)

    @staticmethod
    def backward(ctx, gg):
        (y,) = ctx.saved_tensors
        # linear in g; y only chooses where, so its gradient is zeros (torch's, not None: a
        # second derivative through relu is 0, not "unused")
        return _ReluGrad.apply(gg, y), constant_zeros(gg) if ctx.needs_input_grad[1] else None

    @staticmethod
    def jvp(ctx, tg, ty):
        if tg is None:  # only y is dual: torch's threshold_backward still gives a (zero) tangent
            return zero_tangent(ctx)
        return _ReluGrad.apply(tg, ctx.inputs[1])


class Abs(Builtin):
    batchable = True
    node_name = "AbsBackward0"
    saved_names = ("self",)
    formula = {"self": "grad · sign(self)"}

    @staticmethod
    def forward(ctx, a):
        ctx.to_save = (a,)
        return same_layout(array_module(a).abs(a._data), a._data)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.sign()

    @staticmethod
    def jvp(ctx, t):
        return t * ctx.inputs[0].sign()


def constant_zeros(grad):
    """The gradient of a piecewise-constant op: zeros, not ``grad * 0`` (an inf or NaN
    arriving from above stays out, as in torch), and no graph even under ``create_graph``."""
    return wrap_array(array_module(grad).zeros_like(grad._data))


class _ZeroGrad(Builtin):
    """Piecewise-constant ops (sign, floor, ceil, round): the gradient is zero."""

    batchable = True
    formula = {"self": "0"}

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad)

    jvp = staticmethod(zero_tangent)


def _zero_grad(name, node_name, compute):
    return type(
        name,
        (_ZeroGrad,),
        {
            "node_name": node_name,
            "forward": staticmethod(
                lambda ctx, a: same_layout(compute(array_module(a), a._data), a._data)
            ),
            "__doc__": f"``{name.lower()}``: gradient zero everywhere (node {node_name}).",
            "__module__": __name__,
        },
    )


Sign = _zero_grad(  # torch: sign(NaN) is 0
    "Sign", "SignBackward0", lambda xp, x: xp.nan_to_num(xp.sign(x), nan=0.0)
)


def _rounded(rounding, kernel):
    """``rounding`` for floats; integers are already whole (an elementwise copy); torch has
    no kernel for bools."""

    def compute(xp, x):
        if x.dtype.kind == "f":
            return rounding(xp, x)
        if x.dtype.kind == "b":
            raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")
        return torch_layout(x.copy(), x)

    return compute


Floor = _zero_grad("Floor", "FloorBackward0", _rounded(lambda xp, x: xp.floor(x), "floor_vml_cpu"))
Ceil = _zero_grad("Ceil", "CeilBackward0", _rounded(lambda xp, x: xp.ceil(x), "ceil_vml_cpu"))


class Round(_ZeroGrad):
    node_name = "RoundBackward0"

    @staticmethod
    def forward(ctx, a, decimals=0):
        x = a._data
        if decimals and x.dtype.kind != "f":  # (torch rounds whole numbers to places in no kernel)
            raise NotImplementedError(f"\"round_cpu\" not implemented for '{scalar_type_name(a)}'")
        rounded = _rounded(lambda xp, x: xp.round(x, decimals), "round_vml_cpu")(array_module(x), x)
        return same_layout(rounded, x)  # (CuPy's round writes row-major, torch keeps x's)

    @staticmethod
    def backward(ctx, grad):
        return constant_zeros(grad), None


class RoundDecimals(Round):
    """``round(x, decimals=...)``: torch's overload with places, a node of another name."""

    node_name = "RoundBackward1"


def _clamped(x, lo, hi):
    """Array ``x`` clamped to [lo, hi] (numbers; None: no bound). Not clip: where x equals a
    bound, torch keeps x (-0.0 stays)."""
    if lo is not None:
        x = tie_keeps_first("maximum", x, lo)
    if hi is not None:
        x = tie_keeps_first("minimum", x, hi)
    return x


class ClampScalar(Builtin):
    """``clamp(x, min, max)`` with number bounds: the gradient passes where min <= x <= max."""

    batchable = True
    node_name = "ClampBackward1"
    saved_names = ("self",)
    saved_args = {"min": "lo", "max": "hi"}
    formula = {"self": "grad · (min ≤ self ≤ max)"}

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.to_save = (a,)
        ctx.lo, ctx.hi = lo, hi
        out = a._data
        dt = result_type(a, *(v for v in (lo, hi) if v is not None)).numpy
        if dt.kind in "iu":  # an int bound converted as torch converts it (-3 wraps in uint8)
            lo, hi = (None if v is None else scalar_of(v, dt) for v in (lo, hi))
        return _clamped(out, lo, hi).astype(dt, copy=False)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return where(ClampScalar.inside(ctx, a), grad, 0.0), None, None

    @staticmethod
    def jvp(ctx, t, *_):
        return where(ClampScalar.inside(ctx, ctx.inputs[0]), t, 0.0)

    @staticmethod
    def inside(ctx, a):
        """Where ``min <= a <= max``: there the output moves with the input."""
        inside = None
        if ctx.lo is not None:
            inside = a >= ctx.lo
        if ctx.hi is not None:
            inside = (a <= ctx.hi) if inside is None else inside & (a <= ctx.hi)
        return inside


class ClampTensor(Builtin):
    """``clamp(x, min, max)`` with tensor bounds; the gradient goes to whichever value was chosen."""

    batchable = True
    node_name = "ClampBackward0"
    number_inputs = (1, 2)  # a bound left out (None) gets an empty edge, as in torch
    saved_names = ("self", "min", "max")
    checked_first = ("max", "min")
    # (where the bounds cross, min > max, the result is max: max gets the gradient)
    formula = {
        "self": "grad · (min ≤ self ≤ max)",
        "min": "grad · (self < min)",
        "max": "grad · (self > max)",
    }

    @staticmethod
    def forward(ctx, a, lo, hi):
        ctx.to_save = (a, lo, hi)
        xp = array_module(a)
        # one promotion over all three (an int32 x with a 0-d float32 bound stays float32)
        dt = result_type(a, *(b for b in (lo, hi) if b is not None)).numpy
        out = a._data.astype(dt, copy=False)
        bounds = []
        if lo is not None:
            low = xp.asarray(operands(a, lo)[1], dtype=dt)  # (operands: torch's shape error)
            out = tie_keeps_first("maximum", out, low)  # (x wins a tie: -0.0 stays)
            bounds.append(low)
        if hi is not None:
            high = xp.asarray(operands(a, hi)[1], dtype=dt)
            out = tie_keeps_first("minimum", out, high)
            bounds.append(high)
        return torch_layout(out, a._data, *bounds)

    @staticmethod
    def backward(ctx, grad):
        from_lo, from_hi, taken = ClampTensor.choices(*ctx.saved_tensors)
        return (
            where(taken, 0.0, grad),
            where(from_lo, grad, 0.0) if from_lo is not None else None,
            where(from_hi, grad, 0.0) if from_hi is not None else None,
        )

    @staticmethod
    def jvp(ctx, ta, tlo, thi):
        from_lo, from_hi, taken = ClampTensor.tangent_choices(*ctx.inputs)
        _, lo, hi = ctx.inputs  # (a bound without a tangent adds zeros of its dtype, as torch's)
        return tangent_sum(
            None if ta is None else where(taken, 0.0, ta),
            None if lo is None else where(from_lo, zero_if_none(tlo, lo), 0.0),
            None if hi is None else where(from_hi, zero_if_none(thi, hi), 0.0),
        )

    @staticmethod
    def choices(a, lo, hi):
        """Masks: where the result is ``lo``, where it is ``hi``, and where it is not ``a``
        (``taken``: outside the bounds, or NaN, which torch's gradient also skips)."""
        from_hi = (a > hi) if hi is not None else None
        if hi is not None and lo is not None:
            from_hi = from_hi | (lo > hi)  # bounds crossed: max wins, as torch's clamp
        from_lo = (a < lo) if lo is not None else None
        if from_lo is not None and from_hi is not None:
            from_lo = from_lo & (lo < hi)  # torch's: equal or NaN bounds give min nothing
        inside = (a >= lo) if lo is not None else None
        if hi is not None:
            inside = (a <= hi) if inside is None else inside & (a <= hi)
        return from_lo, from_hi, ~inside

    @staticmethod
    def tangent_choices(a, lo, hi):
        """``choices`` as torch's tangent rule makes them, which differ from its gradient's
        at ties and NaNs: with one bound, the bound's tangent unless ``a`` is strictly
        inside; with two, ``a``'s unless it is outside (crossed bounds: max's)."""
        if hi is None:
            inside = a > lo
            return ~inside, None, ~inside
        if lo is None:
            inside = a < hi
            return None, ~inside, ~inside
        crossed, below, above = lo > hi, a < lo, a > hi
        from_lo = below & ~crossed
        from_hi = crossed | above & ~below
        return from_lo, from_hi, from_lo | from_hi


class _MaxMin(_Binary):
    """``maximum``/``minimum``: the larger (smaller) input gets the gradient; ties share it."""

    checked_first = ("other",)

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.to_save = (a, b)
        x, y = operands(a, b)
        return torch_layout(cls.pick(x, y), x, y)

    @classmethod
    def backward(cls, ctx, grad):
        a, b = ctx.saved_tensors
        tie = a == b
        half = grad / 2
        # "loses", not "not wins": where one is NaN neither wins nor loses, and torch then
        # gives both the whole gradient
        return (
            where(tie, half, where(cls.wins(b, a), 0.0, grad)),
            where(tie, half, where(cls.wins(a, b), 0.0, grad)),
        )

    @classmethod
    def jvp(cls, ctx, ta, tb):  # the tangent of whichever input was picked (ties: the mean)
        a, b = ctx.inputs
        ta, tb = zero_if_none(ta, a), zero_if_none(tb, b)  # (zeros of its dtype, as torch's)
        return where(a == b, (ta + tb) / 2, where(cls.wins(a, b), ta, tb))


class Maximum(_MaxMin):
    node_name = "MaximumBackward0"
    formula = {
        "self": "grad · ((self > other) + (self == other) / 2)",
        "other": "grad · ((other > self) + (self == other) / 2)",
    }
    pick = staticmethod(lambda x, y: tie_keeps_first("maximum", x, y))  # (torch: x wins a tie)
    wins = staticmethod(lambda a, b: a > b)


class Minimum(_MaxMin):
    node_name = "MinimumBackward0"
    formula = {
        "self": "grad · ((self < other) + (self == other) / 2)",
        "other": "grad · ((other < self) + (self == other) / 2)",
    }
    pick = staticmethod(lambda x, y: tie_keeps_first("minimum", x, y))
    wins = staticmethod(lambda a, b: a < b)


class Where(Builtin):
    """``where(condition, a, b)``. The condition comes by keyword: it is not differentiable,
    so it gets no edge, as in torch (``next_functions``: one edge per operand, an empty one
    for a number operand)."""

    batchable = True
    node_name = "WhereBackward0"
    saved_names = ("condition",)
    number_inputs = (0, 1)  # torch wraps a number operand as a tensor: it gets an empty edge
    keyword_places = {"condition": 0}
    formula = {"self": "where(condition, grad, 0)", "other": "where(condition, 0, grad)"}

    @staticmethod
    def forward(ctx, a, b, *, condition):
        ctx.to_save = (condition,)
        x, y = operands(a, b)
        broadcast_shape(condition._data.shape, *(v.shape for v in (x, y) if hasattr(v, "shape")))
        xp = array_module(condition)
        out = _masked(xp, condition._data, x, y)
        if out is None:
            out = xp.where(condition._data, x, y)
        out = out.astype(result_type(a, b).numpy, copy=False)
        return torch_layout(out, condition._data, x, y)

    @staticmethod
    def backward(ctx, grad):
        (condition,) = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        return (
            where(condition, grad, 0.0) if need_a else None,
            where(condition, 0.0, grad) if need_b else None,
        )

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        return where(ctx.kwargs["condition"], zero_if_none(ta, a), zero_if_none(tb, b))


def _masked(xp, mask, x, y):
    """``where(mask, x, 0)`` (or ``where(mask, 0, y)``) as ``x * mask``, or None for other cases.

    This is the backward of relu, clamp, max ...: with a random mask NumPy's ``where``
    branches on every element and runs ~10x slower than a multiplication. But ``inf * 0``
    and ``nan * 0`` are NaN where ``where`` gives 0, so non-finite values go to ``where``.
    On a GPU ``where`` is as quick as a product, and checking for non-finite values would
    make the CPU wait for the GPU: there it is always ``where`` (None).
    """
    if xp is not numpy_module():
        return None
    if type(y) in _NUMBERS and y == 0 and getattr(x, "dtype", None) is not None:
        kept, mask = x, mask
    elif type(x) in _NUMBERS and x == 0 and getattr(y, "dtype", None) is not None:
        kept, mask = y, ~mask
    else:
        return None
    if kept.dtype.kind != "f":
        return kept * mask
    if not bool(xp.isfinite(kept).all()):
        return None
    out = kept * mask
    out += 0.0  # -2.0 * False is -0.0, which would print as "-0."; where gives 0.0
    return out


# --------------------------------------------------------------------------- casts and copies


class ToCopy(Builtin):
    """``x.to(dtype/device/memory_format)``: the gradient is cast/moved back to the input's
    dtype and device."""

    records_inference = True  # (torch copies into a plain tensor it made, and records that)
    batchable = True
    node_name = "ToCopyBackward0"
    formula = {"self": "grad, back to self's dtype and device"}

    @staticmethod
    def forward(ctx, a, np_dtype, dev, memory_format=preserve_format):
        ctx.in_dtype, ctx.in_device = a.dtype, a.device
        out = a._data if dev is None else to_device(a._data, dev)
        cast = np_dtype is not None and out.dtype != np_dtype
        if cast or out is a._data or memory_format is not preserve_format:
            out = format_copy(out, memory_format, np_dtype if cast else out.dtype)
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad.to(dtype=ctx.in_dtype, device=ctx.in_device), None, None, None

    jvp = staticmethod(linear_jvp)


class Clone(Builtin):
    """A copy. ``layout``: a memory format (``preserve_format`` keeps the strides of a dense
    tensor, see ``_layout.preserved_copy``), or an array whose layout to copy."""

    records_inference = True  # (torch copies into a plain tensor it made, and records that)
    batchable = True
    node_name = "CloneBackward0"
    formula = {"self": "grad"}

    @staticmethod
    def forward(ctx, a, layout=preserve_format):
        x = a._data
        if isinstance(layout, memory_format):
            return format_copy(x, layout, x.dtype)
        # the very layout of `layout` (a dense array), whose dtype may be another
        out = empty_strided(x, strides_for(layout, x.itemsize))
        out[...] = x
        return out

    @staticmethod
    def backward(ctx, grad):
        return grad, None

    jvp = staticmethod(linear_jvp)


# --------------------------------------------------------------------------- functions


def _check_tensor(x, op: str):
    if not isinstance(x, Tensor):
        raise TypeError(
            f"{op}(): argument 'input' (position 1) must be Tensor, not {type(x).__name__}"
        )


def _wrapped_input(input, other, op: str):
    """``input`` of add, sub, mul or div: a Tensor, or a Python number, which torch wraps as
    a 0-d tensor (``torch.add(2, x)`` is AddBackward0, with no edge for the 2). Made in the
    result's dtype, it promotes as the number would."""
    if isinstance(input, Tensor):
        return input
    if not isinstance(input, bool | int | float):
        _check_tensor(input, op)
    # (a bool stays one: it never raises the result's dtype, and sub refuses it)
    dtype = "bool" if isinstance(input, bool) else result_type(input, other).numpy
    array = numpy_module().asarray(input, dtype)
    return wrap_array(to_device(array, other.device) if isinstance(other, Tensor) else array)


def add(input, other, *, alpha=1):
    """``input + alpha * other``, broadcasting.

    >>> import teachgrad as tg
    >>> tg.add(tg.tensor([1.0, 2.0]), tg.tensor([10.0, 20.0]), alpha=2)
    tensor([21., 42.])
    """
    return Add.apply(_wrapped_input(input, other, "add"), other, alpha)


def sub(input, other, *, alpha=1):
    """``input - alpha * other``.

    >>> import teachgrad as tg
    >>> tg.sub(tg.tensor([5.0]), tg.tensor([1.0]), alpha=3)
    tensor([2.])
    """
    return Sub.apply(_wrapped_input(input, other, "sub"), other, alpha)


def mul(input, other):
    """Elementwise product.

    >>> import teachgrad as tg
    >>> tg.mul(tg.tensor([1.0, 2.0]), 3)
    tensor([3., 6.])
    """
    return Mul.apply(_wrapped_input(input, other, "mul"), other)


class DivByMode(Div):
    """``div(x, y, rounding_mode=None)``: true division, but torch's overload that takes a
    rounding mode (even None) names its node ``DivBackward2``."""

    node_name = "DivBackward2"
    saved_args = DivRounding.saved_args

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.rounding_mode = None


_NO_MODE = object()  # rounding_mode not given: torch's plain overload (DivBackward0)


def div(input, other, *, rounding_mode=_NO_MODE):
    """Elementwise true division (``rounding_mode='trunc'``/``'floor'`` round the result).

    >>> import teachgrad as tg
    >>> tg.div(tg.tensor([1, 3]), 2)
    tensor([0.5000, 1.5000])
    """
    input = _wrapped_input(input, other, "div")
    if rounding_mode is _NO_MODE:
        return Div.apply(input, other)
    if rounding_mode is not None:
        if rounding_mode not in ("trunc", "floor"):
            raise RuntimeError(
                f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                f"'{rounding_mode}'"
            )
        return DivRounding.apply(input, other, rounding_mode)
    return DivByMode.apply(input, other)


def floor_divide(input, other):
    """``input // other``: the quotient rounded down, as Python's ``//`` (either may be a
    number). Not differentiable, as in torch: backward through it raises.

    >>> import teachgrad as tg
    >>> tg.floor_divide(tg.tensor([7, -7]), 2), 7 // tg.tensor([2.0, -2.0])
    (tensor([ 3, -4]), tensor([ 3., -4.]))
    """
    return FloorDivide.apply(input, other, "floor_divide")


def _check_remainder_operands(fn, input, other):
    """torch's TypeError for an operand that is neither a Tensor nor a number."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        raise invalid_combination(fn, (input, other), {})
    for operand in (input, other):
        if not isinstance(operand, Tensor | int | float):
            raise invalid_combination(fn, (input, other), {})


def remainder(input, other):
    """``input % other``: Python's modulo, with the sign of the divisor (either may be a
    number). Its gradient: 1 for ``input``, −floor(input / other) for ``other``.

    >>> import teachgrad as tg
    >>> tg.remainder(tg.tensor([7, -7]), 3), 7 % tg.tensor([3.0, -3.0])
    (tensor([1, 2]), tensor([ 1., -2.]))
    """
    if type(other) in _NUMBERS and isinstance(input, Tensor):  # the common case first
        return RemainderScalar.apply(input, other)
    _check_remainder_operands("remainder", input, other)
    if not isinstance(input, Tensor):
        return NumberRemainder.apply(input, other)
    if not isinstance(other, Tensor):
        return RemainderScalar.apply(input, other)  # a bool
    return Remainder.apply(input, other)


def fmod(input, other):
    """C's ``fmod``: the remainder with the sign of the dividend (``input − trunc(input /
    other) · other``). Its gradient: 1 for ``input``, −trunc(input / other) for ``other``.

    >>> import teachgrad as tg
    >>> tg.fmod(tg.tensor([7, -7]), 3)
    tensor([ 1, -1])
    """
    if not isinstance(input, Tensor):  # torch has no fmod(number, tensor)
        raise invalid_combination("fmod", (input, other), {})
    if isinstance(other, Tensor):
        return Fmod.apply(input, other)
    _check_remainder_operands("fmod", input, other)
    return FmodScalar.apply(input, other)


def pow(input, exponent):
    """``input ** exponent``; either may be a number.

    >>> import teachgrad as tg
    >>> tg.pow(tg.tensor([2.0, 3.0]), 2), tg.pow(2, tg.tensor([3.0]))
    (tensor([4., 9.]), tensor([8.]))
    """
    if not isinstance(input, Tensor):
        return Rpow.apply(exponent, input)
    if isinstance(exponent, Tensor):
        return Pow.apply(input, exponent)
    return PowScalar.apply(input, exponent)


def neg(input):
    """``-input``.

    >>> import teachgrad as tg
    >>> tg.neg(tg.tensor([1.0, -2.0]))
    tensor([-1.,  2.])
    """
    return Neg.apply(input)


@recorded_as("aten::square")
def square(input):
    """``input ** 2`` (recorded as PowBackward0, as in torch).

    >>> import teachgrad as tg
    >>> tg.square(tg.tensor([3.0], requires_grad=True))
    tensor([9.], grad_fn=<PowBackward0>)
    """
    return PowScalar.apply(input, 2)


def _unary_function(cls, name):
    def fn(input):
        _check_tensor(input, name)
        return cls.apply(input)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``.\n\n    >>> import teachgrad as tg\n    >>> tg.{name}(tg.tensor([1.0])).shape\n    teachgrad.Size([1])\n"
    return fn


exp = _unary_function(Exp, "exp")
log = _unary_function(Log, "log")
log1p = _unary_function(Log1p, "log1p")
expm1 = _unary_function(Expm1, "expm1")
sqrt = _unary_function(Sqrt, "sqrt")
rsqrt = _unary_function(Rsqrt, "rsqrt")
reciprocal = _unary_function(Reciprocal, "reciprocal")
sin = _unary_function(Sin, "sin")
cos = _unary_function(Cos, "cos")
tan = _unary_function(Tan, "tan")
tanh = _unary_function(Tanh, "tanh")
sigmoid = _unary_function(Sigmoid, "sigmoid")
relu = _unary_function(Relu, "relu")
_abs = _unary_function(Abs, "abs")
_sign = _unary_function(Sign, "sign")


def abs(input):  # noqa: A001 - torch's name
    """Elementwise ``abs``; a bool tensor has none (torch refuses it).

    >>> import teachgrad as tg
    >>> tg.abs(tg.tensor([-1.0, 2.0]))
    tensor([1., 2.])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind == "b":
        raise NotImplementedError(
            "\"abs_cpu\" not implemented for 'Bool'\n  A bool is never negative: abs has nothing to do."
        )
    return _abs(input)


def sign(input):
    """Elementwise ``sign`` (-1, 0 or 1); a bool tensor is its own sign.

    >>> import teachgrad as tg
    >>> tg.sign(tg.tensor([-3.0, 0.0, 2.0]))
    tensor([-1.,  0.,  1.])
    """
    if isinstance(input, Tensor) and input._data.dtype.kind == "b":
        return wrap_array(torch_layout(input._data.copy(), input._data))
    return _sign(input)


floor = _unary_function(Floor, "floor")
ceil = _unary_function(Ceil, "ceil")


class _NoDecimals(int):
    """``round``'s ``decimals`` when it is not given (0 places): torch has two overloads,
    whose nodes differ (``RoundBackward0`` without ``decimals``, ``RoundBackward1`` with)."""

    def __repr__(self):
        return "0"


_NO_DECIMALS = _NoDecimals()


def round(input, *, decimals=_NO_DECIMALS):  # noqa: A001 - torch's name
    """Round to ``decimals`` places (halves to even, like torch); gradient zero.

    >>> import teachgrad as tg
    >>> tg.round(tg.tensor([0.5, 1.5, 2.7]))
    tensor([0., 2., 3.])
    """
    if isinstance(decimals, bool):  # (NumPy reads True as 1: refused, as checked() words it)
        raise TypeError("decimals is an int, not a bool")
    if decimals is _NO_DECIMALS:
        return Round.apply(input, 0)
    return RoundDecimals.apply(input, decimals)


def clamp(input, min=None, max=None):  # noqa: A002 - torch's names
    """Limit values to ``[min, max]`` (numbers or tensors).

    >>> import teachgrad as tg
    >>> tg.clamp(tg.tensor([-1.0, 0.5, 2.0]), 0, 1)
    tensor([0.0000, 0.5000, 1.0000])
    """
    if min is None and max is None:
        raise RuntimeError("torch.clamp: At least one of 'min' or 'max' must not be None")
    if isinstance(input, Tensor) and input._data.dtype.kind == "b":
        _refuse_bool_clamp(input, min, max)
    if min is not None and max is not None and isinstance(min, Tensor) != isinstance(max, Tensor):
        # a tensor beside a number: torch's overload for numbers, which reads the tensor as one
        min, max = (_as_number(bound) for bound in (min, max))
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        return ClampTensor.apply(input, min, max)
    return ClampScalar.apply(input, min, max)


def _as_number(bound):
    """A bound of clamp's overload for numbers: a 0-d tensor without history is its number."""
    if not isinstance(bound, Tensor):
        return bound
    if bound.ndim or bound.requires_grad:  # (the caller's argument check words the refusal)
        raise TypeError("clamp takes number bounds or tensor bounds, not one of each")
    return bound.item()


def _refuse_bool_clamp(input, min, max):  # noqa: A002 - torch's names
    """torch has no clamp kernel for a bool result, but for one tensor bound (which it
    computes as maximum or minimum)."""
    bounds = [b for b in (min, max) if b is not None]
    if result_type(input, *bounds).numpy.kind != "b":
        return
    tensors = sum(isinstance(b, Tensor) for b in bounds)
    if tensors == 1 and len(bounds) == 1:
        return
    which = "" if len(bounds) == 2 else "min_" if min is not None else "max_"
    kernel = "clamp_cpu" if tensors else f"clamp_{which}scalar_cpu"
    raise NotImplementedError(f"\"{kernel}\" not implemented for 'Bool'")


@recorded_as("aten::clip")
def clip(input, min=None, max=None):
    """``clamp`` by its other name (torch records it as ``aten::clip``).

    >>> import teachgrad as tg
    >>> tg.clip(tg.tensor([-2.0, 0.5, 2.0]), -1, 1)
    tensor([-1.0000,  0.5000,  1.0000])
    """
    return clamp(input, min, max)


_FOR_A_NUMBER = "For a number, use clamp: x.clamp(min=1) is maximum(x, 1)."


WRAP_A_NUMBER = "Wrap a number first: tg.tensor(2.0)."  # (the hint of ops with no number form)


def _check_two_tensors(input, other, op: str, first_position: int = 1, hint=_FOR_A_NUMBER):
    """torch's maximum and minimum (and atan2, nextafter, igamma ...) take two tensors, no
    number: for maximum and minimum there is ``clamp`` (``hint``: what the error suggests).

    ``first_position`` is 0 for the method (``x.maximum(other)``: ``other`` is argument 1).
    """
    for name, x, position in (("input", input, 1), ("other", other, first_position + 1)):
        if not isinstance(x, Tensor):
            raise TypeError(
                f"{op}(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type(x).__name__}\n  {hint}"
            )


class Logit(Builtin):
    """``logit(x) = log(x / (1 − x))``, the inverse of sigmoid; with ``eps``, x is first
    clamped to [eps, 1 − eps] (and gets no gradient where it was clamped)."""

    batchable = True
    node_name = "LogitBackward0"
    saved_names = ("self",)
    saved_args = {"eps": "eps"}
    formula = {"self": "grad · (eps ≤ self ≤ 1 − eps) / (self · (1 − self))"}

    @staticmethod
    @quiet
    def forward(ctx, a, eps):
        ctx.to_save, ctx.eps = (a,), eps
        x = float_data(a)
        xp = array_module(x)
        if eps is not None:
            x = _clamped(x, eps, 1 - eps)
        return same_layout(xp.log(x / (1 - x)), a._data)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return Logit.rate(ctx, a, grad), None

    @staticmethod
    def jvp(ctx, t, *_):
        return Logit.rate(ctx, ctx.inputs[0], t)

    @staticmethod
    def rate(ctx, a, g):
        """``g / (a (1 − a))``; outside [eps, 1 − eps] 0, or without eps NaN outside [0, 1]."""
        if ctx.eps is None:
            return where((a < 0) | (a > 1), math.nan, g / (a * (1 - a)))
        return where((a < ctx.eps) | (a > 1 - ctx.eps), 0.0, g / (a * (1 - a)))


def logit(input, eps=None):
    """``log(p / (1 − p))``: the inverse of sigmoid (``eps`` clamps p to [eps, 1 − eps]).

    >>> import teachgrad as tg
    >>> tg.logit(tg.tensor([0.5, 0.75]))
    tensor([0.0000, 1.0986])
    """
    return Logit.apply(input, None if eps is None else float(eps))


class Atan2(_Binary):
    """``atan2(y, x)``: the angle of the point (x, y), in (−π, π]."""

    node_name = "Atan2Backward0"
    formula = {
        "self": "grad · other / (self² + other²)",
        "other": "−grad · self / (self² + other²)",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, b):
        ctx.to_save = (a, b)
        x, y = operands(a, b)
        if x.dtype.kind in "biu":  # (integers: in the default float dtype, as torch)
            x, y = float_data(a), float_data(b)
        return torch_layout(array_module(x).arctan2(x, y), x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        scale = grad / (a * a + b * b)
        return scale * b if need_a else None, -scale * a if need_b else None

    @staticmethod
    def jvp(ctx, ta, tb):
        a, b = ctx.inputs
        scale = 1 / (a * a + b * b)
        return tangent_sum(
            None if ta is None else ta * b * scale, None if tb is None else -tb * a * scale
        )


def atan2(input, other):
    """The angle of the point (other, input), elementwise: ``atan2(y, x)``.

    >>> import teachgrad as tg
    >>> tg.atan2(tg.tensor([1.0, -1.0]), tg.tensor([1.0, 0.0]))
    tensor([ 0.7854, -1.5708])
    """
    _check_two_tensors(input, other, "atan2", hint=WRAP_A_NUMBER)
    return Atan2.apply(input, other)


arctan2 = atan2  # (NumPy's name, which torch takes too)


class Nextafter(_Binary):
    """``nextafter(x, y)``: the next float after x in the direction of y (y itself if equal).
    torch calls its slope 1 in x (it is x plus one tiny step) and 0 in y."""

    node_name = "NextafterBackward0"
    formula = {"self": "grad · (self ≠ other)", "other": "0"}

    @staticmethod
    def forward(ctx, a, b):
        ctx.to_save = (a, b)
        x, y = operands(a, b)
        if x.dtype.kind != "f":
            raise NotImplementedError(
                f"\"nextafter_cpu\" not implemented for '{scalar_name(x.dtype.name)}'\n  The "
                "next number after an integer is the integer + 1: nextafter is for floats."
            )
        return torch_layout(array_module(x).nextafter(x, y), x, y)

    @staticmethod
    def backward(ctx, grad):
        a, b = ctx.saved_tensors
        need_a, need_b = ctx.needs_input_grad
        # (where x equals y the result is y: it no longer moves with x)
        return grad * (a != b) if need_a else None, constant_zeros(grad) if need_b else None

    @staticmethod
    def jvp(ctx, ta, tb):  # (torch's: y's tangent does not count)
        a, b = ctx.inputs
        return None if ta is None else ta * (a != b)


def nextafter(input, other):
    """The next floating-point number after ``input`` towards ``other``, elementwise.

    >>> import teachgrad as tg
    >>> tg.nextafter(tg.tensor([1.0]), tg.tensor([2.0])) - 1
    tensor([1.1921e-07])
    """
    _check_two_tensors(input, other, "nextafter", hint=WRAP_A_NUMBER)
    return Nextafter.apply(input, other)


# --------------------------------------------------------------------------- lerp, addcmul, addcdiv


def _tensor_operands(*operands):
    """The arrays of tensor operands, promoted to torch's result dtype, once their
    shapes are known to broadcast (else torch's error)."""
    same_device(*operands)
    broadcast_shape(*(t._data.shape for t in operands))
    dt = result_type(*operands).numpy
    return [t._data.astype(dt, copy=False) for t in operands]


def _fused_multiply_add(a, b, c):
    """``a * b + c`` rounded once, as torch's CPU kernels compute it (an FMA instruction),
    which NumPy has not. For float32 (and float16) the product is exact in float64: the
    float64 sum, rounded back, gives torch's numbers. float64 is rounded twice here, so it
    can differ from torch's in the last bit; integers are exact either way."""
    dt = c.dtype
    if dt.kind != "f" or dt.itemsize == 8:
        return a * b + c
    return (array_module(c).multiply(a, b, dtype="float64") + c).astype(dt)


def _lerp_arrays(xp, x, y, w):
    """torch's lerp kernel: ``x + w · (y − x)`` for |w| < 0.5, else ``y − (1 − w) · (y − x)``,
    which is exact at both ends (w = 0 gives x, w = 1 gives y); one rounding each."""
    if hasattr(w, "shape"):  # a tensor weight: each element picks its form
        small = xp.abs(w) < 0.5
        return _fused_multiply_add(xp.where(small, w, w - 1), y - x, xp.where(small, x, y))
    return (
        _fused_multiply_add(w, y - x, x) if abs(w) < 0.5 else _fused_multiply_add(w - 1, y - x, y)
    )


def _lerp_operands(kernel, a, b, w=None):
    """The arrays of lerp's operands, with torch's checks: lerp computes in ``input``'s dtype,
    so ``end`` and a tensor weight must have it (a 0-d weight is let through, and promotes,
    as in torch), and that dtype must be a float one."""
    others = {"end": b} if w is None or w._data.ndim == 0 else {"end": b, "weight": w}
    for name, t in others.items():
        if t._data.dtype != a._data.dtype:
            raise RuntimeError(
                f"expected dtype {c_type_name(a._data.dtype.name)} for `{name}` but got dtype "
                f"{c_type_name(t._data.dtype.name)}\n  lerp does not promote: cast with .to()."
            )
    arrays = _tensor_operands(a, b) if w is None else _tensor_operands(a, b, w)
    if arrays[0].dtype.kind != "f":
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{scalar_name(arrays[0].dtype.name)}'\n  "
            "lerp is for floats: cast the tensors with .float()."
        )
    return arrays


class LerpScalar(Builtin):
    """``lerp(x, end, w)`` with a number ``w``: ``x + w · (end − x)``."""

    batchable = True
    node_name = "LerpBackward0"
    saved_args = {"weight": "weight"}
    formula = {"self": "grad · (1 − weight)", "end": "grad · weight"}

    @staticmethod
    @quiet
    def forward(ctx, a, b, weight):
        x, y = _lerp_operands("lerp_kernel_scalar", a, b)
        ctx.weight = weight
        return torch_layout(_lerp_arrays(array_module(x), x, y, x.dtype.type(weight)), x, y)

    @staticmethod
    def backward(ctx, grad):
        need_a, need_b, _ = ctx.needs_input_grad
        w = ctx.weight
        return grad * (1 - w) if need_a else None, grad * w if need_b else None, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        w = ctx.weight
        return tangent_sum(None if ta is None else ta * (1 - w), None if tb is None else tb * w)


class LerpTensor(Builtin):
    """``lerp(x, end, w)`` with a tensor ``w``, which gets a gradient too: ``end − x``."""

    batchable = True
    node_name = "LerpBackward1"
    saved_names = ("self", "end", "weight")
    formula = {
        "self": "grad · (1 − weight)",
        "end": "grad · weight",
        "weight": "grad · (end − self)",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, b, w):
        ctx.to_save = (a, b, w)
        x, y, z = _lerp_operands("lerp_kernel_tensor", a, b, w)
        return torch_layout(_lerp_arrays(array_module(x), x, y, z), x, y, z)

    @staticmethod
    def backward(ctx, grad):
        a, b, w = ctx.saved_tensors
        need_a, need_b, need_w = ctx.needs_input_grad
        return (
            grad * (1 - w) if need_a else None,
            grad * w if need_b else None,
            grad * (b - a) if need_w else None,
        )

    @staticmethod
    def jvp(ctx, ta, tb, tw):
        a, b, w = ctx.inputs
        return tangent_sum(
            None if ta is None else ta * (1 - w),
            None if tb is None else tb * w,
            None if tw is None else tw * (b - a),
        )


def lerp(input, end, weight):
    """``input + weight * (end - input)``, elementwise: the straight line from ``input``
    (weight 0) to ``end`` (weight 1); ``weight`` is a number or a tensor.

    >>> import teachgrad as tg
    >>> tg.lerp(tg.tensor([0.0, 10.0]), tg.tensor([10.0, 20.0]), 0.25)
    tensor([ 2.5000, 12.5000])
    """
    if isinstance(weight, Tensor):
        return LerpTensor.apply(input, end, weight)
    if not isinstance(weight, int | float):
        raise TypeError(f"lerp(): weight must be a number or a Tensor, not {type(weight).__name__}")
    return LerpScalar.apply(input, end, weight)


def _value(value, dt, op: str):
    """addcmul's and addcdiv's ``value`` as a number of the result's dtype ``dt`` (a 0-d tensor
    is the number it holds): torch casts it, so 1.5 is 1 for an integer result."""
    if isinstance(value, Tensor) and value._data.ndim == 0:
        value = value.item()
    if not isinstance(value, int | float):
        raise TypeError(f"{op}(): argument 'value' must be Number, not {type(value).__name__}")
    return dt.type(value)


class _AddcOp(Builtin):
    """``input + value · (tensor1 ∘ tensor2)``, ∘ a product or a quotient; ``combine`` computes
    it on arrays as torch's kernel does; ``through_1``/``through_2`` carry a gradient (or a
    tangent) ``g`` through to tensor1/tensor2."""

    batchable = True
    saved_names = ("tensor1", "tensor2")
    saved_args = {"value": "value"}

    @classmethod
    @quiet
    def forward(cls, ctx, a, t1, t2, value):
        x, y, z = _tensor_operands(a, t1, t2)
        cls.check(x, t1, t2)
        ctx.to_save = (t1, t2)
        ctx.value = value
        v = _value(value, x.dtype, cls.name)
        return torch_layout(cls.combine(x, v * y, z), x, y, z)

    @classmethod
    def backward(cls, ctx, grad):
        t1, t2 = ctx.saved_tensors
        need_a, need_1, need_2, _ = ctx.needs_input_grad
        v = ctx.value
        return (
            grad if need_a else None,
            cls.through_1(grad, t1, t2, v) if need_1 else None,
            cls.through_2(grad, t1, t2, v) if need_2 else None,
            None,
        )

    @classmethod
    def jvp(cls, ctx, ta, t1t, t2t, _):  # (linear in each tangent: the same rules)
        _, t1, t2, v = ctx.inputs
        return tangent_sum(
            ta,
            None if t1t is None else cls.through_1(t1t, t1, t2, v),
            None if t2t is None else cls.through_2(t2t, t1, t2, v),
        )


class Addcmul(_AddcOp):
    """``addcmul(x, t1, t2, value)``: ``x + value · t1 · t2``."""

    node_name = "AddcmulBackward0"
    name = "addcmul"
    combine = staticmethod(lambda x, vy, z: _fused_multiply_add(vy, z, x))
    formula = {
        "self": "grad",
        "tensor1": "grad · tensor2 · value",
        "tensor2": "grad · tensor1 · value",
    }

    @staticmethod
    def check(x, t1, t2):
        if x.dtype.kind == "b":
            raise NotImplementedError(
                "\"addcmul_cpu_out\" not implemented for 'Bool'\n  For bools use logical_or "
                "and logical_and."
            )

    through_1 = staticmethod(lambda g, t1, t2, v: g * (t2 * v))
    through_2 = staticmethod(lambda g, t1, t2, v: g * (t1 * v))


class Addcdiv(_AddcOp):
    """``addcdiv(x, t1, t2, value)``: ``x + value · t1 / t2``."""

    node_name = "AddcdivBackward0"
    name = "addcdiv"
    combine = staticmethod(lambda x, vy, z: x + vy / z)
    formula = {
        "self": "grad",
        "tensor1": "grad · value / tensor2",
        "tensor2": "−grad · value · tensor1 / tensor2²",
    }

    @staticmethod
    def check(x, t1, t2):
        if all(t._data.dtype.kind in "biu" for t in (t1, t2)):
            raise RuntimeError(
                "Integer division with addcdiv is no longer supported, and in a future  release "
                "addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv "
                "behavior can be implemented as (input + value * teachgrad.trunc(tensor1 / tensor2))"
                ".to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) "
                "for float inputs. The future addcdiv behavior is just the latter implementation: "
                "(input + value * tensor1 / tensor2), for all dtypes."
            )

    through_1 = staticmethod(lambda g, t1, t2, v: g * (v / t2))
    through_2 = staticmethod(lambda g, t1, t2, v: -g * (v * t1 / t2) / t2)


def addcmul(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 * tensor2``, elementwise, broadcasting all three.

    >>> import teachgrad as tg
    >>> tg.addcmul(tg.ones(2), tg.tensor([1.0, 2.0]), tg.tensor([3.0, 4.0]), value=0.5)
    tensor([2.5000, 5.0000])
    """
    return Addcmul.apply(input, tensor1, tensor2, value)


def addcdiv(input, tensor1, tensor2, *, value=1):
    """``input + value * tensor1 / tensor2``, elementwise, broadcasting all three (a true
    division: integer tensor1 and tensor2 are refused, as in torch).

    >>> import teachgrad as tg
    >>> tg.addcdiv(tg.ones(2), tg.tensor([1.0, 2.0]), tg.tensor([4.0, 4.0]), value=2)
    tensor([1.5000, 2.0000])
    """
    return Addcdiv.apply(input, tensor1, tensor2, value)


def maximum(input, other):
    """Elementwise maximum of two tensors (ties split the gradient).

    >>> import teachgrad as tg
    >>> tg.maximum(tg.tensor([1.0, 5.0]), tg.tensor([3.0, 2.0]))
    tensor([3., 5.])
    """
    _check_two_tensors(input, other, "maximum")
    return Maximum.apply(input, other)


def minimum(input, other):
    """Elementwise minimum of two tensors (ties split the gradient).

    >>> import teachgrad as tg
    >>> tg.minimum(tg.tensor([1.0, 5.0]), tg.tensor([3.0, 2.0]))
    tensor([1., 2.])
    """
    _check_two_tensors(input, other, "minimum")
    return Minimum.apply(input, other)


def where(condition, input, other):
    """``input`` where ``condition`` is True, else ``other`` (numbers allowed).

    >>> import teachgrad as tg
    >>> x = tg.tensor([-1.0, 2.0]); tg.where(x > 0, x, 0.0)
    tensor([0., 2.])
    """
    if not isinstance(condition, Tensor):
        raise TypeError("where(): argument 'condition' must be a bool Tensor")
    if condition._data.dtype.kind != "b":
        raise RuntimeError(
            f"where expected condition to be a boolean tensor, but got a tensor with dtype "
            f"{scalar_type_name(condition)}"
        )
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        # two numbers: torch's result has their promoted dtype (``1`` and ``0.5`` give float32)
        dt = result_type(input, other).numpy
        input = wrap_array(array_module(condition).asarray(input, dtype=dt))
    for v in (input, other):
        if type(v) is int:  # an int must fit an integer result (torch's error if not)
            dt = result_type(input, other)
            if not dt.is_floating_point:
                scalar_of(v, dt.numpy)
    return Where.apply(input, other, condition=condition)


def clone(input, *, memory_format=None):
    """A copy that is part of the graph (gradient flows through), laid out in
    ``memory_format`` (by default ``preserve_format``: strides kept).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True); x.clone().grad_fn
    <CloneBackward0 object at ...>
    >>> tg.ones(1, 3, 2, 2).clone(memory_format=tg.channels_last).stride()
    (12, 1, 6, 3)
    """
    return Clone.apply(input, preserve_format if memory_format is None else memory_format)


def clone_like(input, layout_of=None):
    """A copy of ``input`` with the strides of the array ``layout_of`` (row-major if None)."""
    return Clone.apply(input, contiguous_format if layout_of is None else layout_of)


def _comparison(name, ufunc_name):
    def fn(input, other):
        if not isinstance(input, Tensor):  # (a number first: torch has no such signature)
            raise invalid_combination(name, (input, other), {})
        x, y = operands(input, other)
        xp = array_module(x if hasattr(x, "dtype") else y)
        out = as_array(getattr(xp, ufunc_name)(x, y))  # 0-d: NumPy gives a scalar
        return wrap_array(torch_layout(out, x, y))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = (
        f"Elementwise ``{ufunc_name}`` comparison: a bool tensor, not differentiable.\n\n"
        f"    >>> import teachgrad as tg\n    >>> tg.{name}(tg.tensor([1, 2]), 2).dtype\n"
        "    teachgrad.bool\n"
    )
    return recorded_as(f"aten::{name}")(fn)


eq = _comparison("eq", "equal")
ne = _comparison("ne", "not_equal")
lt = _comparison("lt", "less")
le = _comparison("le", "less_equal")
gt = _comparison("gt", "greater")
ge = _comparison("ge", "greater_equal")


class _ComparedInPlace(_ZeroGrad):
    """``x.eq_(y)`` and the other in-place comparisons: x becomes 1 where the comparison
    holds, else 0, in x's own dtype. torch records these (not the comparisons that make a
    bool tensor), with a zero gradient for x and for y."""

    formula = {"self": "0", "other": "0"}
    compare = "equal"  # the name of the array module's function

    @classmethod
    def forward(cls, ctx, a, b):
        x, y = operands(a, b)  # (promoted: a bool x is compared with 0.5 as a number)
        return as_array(getattr(array_module(x), cls.compare)(x, y)).astype(a._data.dtype)

    @staticmethod
    def backward(ctx, grad):
        zeros = constant_zeros(grad)
        return zeros, zeros  # (y's is summed back to y's shape, or dropped for a number)


def _compared_in_place(name, compare):
    """``x.<name>_(y)`` out of place, for ``inplace``: recorded as torch's node
    ``<Name>Backward0`` for a number y, ``<Name>Backward1`` for a tensor."""
    nodes = [
        type(f"{name.title()}{n}", (_ComparedInPlace,), {"node_name": f"{name.title()}Backward{n}",
             "compare": compare, "__module__": __name__})
        for n in (0, 1)
    ]  # fmt: skip

    def compared(input, other):
        return nodes[isinstance(other, Tensor)].apply(input, other)

    compared.__name__ = compared.__qualname__ = f"{name}_in_place"
    return compared


COMPARED_IN_PLACE = {
    f"{name}_": _compared_in_place(name, compare)
    for name, compare in (("eq", "equal"), ("ne", "not_equal"), ("lt", "less"))
    + (("le", "less_equal"), ("gt", "greater"), ("ge", "greater_equal"))
}


def _predicate(name):
    def fn(input):
        return wrap_array(as_array(getattr(array_module(input), name)(input._data)))

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}``: a bool tensor.\n\n    >>> import teachgrad as tg\n    >>> tg.{name}(tg.tensor([1.0])).dtype\n    teachgrad.bool\n"
    return recorded_as(f"aten::{name}")(fn)


isnan = _predicate("isnan")
isinf = _predicate("isinf")
isfinite = _predicate("isfinite")
signbit = _predicate("signbit")  # (the sign bit itself: True for -0.0, as torch)


@recorded_as("aten::logical_not")
def logical_not(input):
    """Elementwise not (bool tensor).

    >>> import teachgrad as tg
    >>> tg.logical_not(tg.tensor([True, False]))
    tensor([False,  True])
    """
    return wrap_array(as_array(array_module(input).logical_not(input._data)))


def logical(name, input, other):
    """``name`` (logical_and, _or, _xor) of a tensor and a tensor or a number, as ``&`` ``|``
    ``^`` take them; the functions take two tensors only."""
    x, y = operands(input, other)
    return wrap_array(torch_layout(as_array(getattr(array_module(x), name)(x, y)), x, y))


def _logical(name):
    def fn(input, other):
        if not (isinstance(input, Tensor) and isinstance(other, Tensor)):
            raise TypeError(f"{name} takes two tensors")  # (checked() words torch's error)
        return logical(name, input, other)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"Elementwise ``{name}`` (bool tensor).\n\n    >>> import teachgrad as tg\n    >>> tg.{name}(tg.tensor([True]), tg.tensor([False])).dtype\n    teachgrad.bool\n"
    return recorded_as(f"aten::{name}")(fn)


def bitwise(word, symbol):
    """``x & y`` (``|``, ``^`` for ``word`` "or", "xor"): each bit of two integer tensors, or
    logic on bools; the operands promote as for ``+`` (``int & True`` is int64). Floats have
    no bits, so torch refuses them, after checking that the shapes broadcast.

    >>> import teachgrad as tg
    >>> bitwise("and", "&")(tg.tensor([6, 5]), 3)
    tensor([2, 1])
    """

    def op(input, other):
        x, y = operands(input, other)
        dt = result_type(input, other)
        if dt.is_floating_point:
            raise NotImplementedError(
                f"\"bitwise_{word}_cpu\" not implemented for '{scalar_name(dt.name)}'\n"
                f"  & | ^ work on bool (and integer) tensors: compare first, (x > 0) {symbol} (y > 0)."
            )
        xp = array_module(x if hasattr(x, "dtype") else y)
        out = as_array(getattr(xp, f"bitwise_{word}")(x, y))  # 0-d: NumPy gives a scalar
        return wrap_array(torch_layout(out.astype(dt.numpy, copy=False), x, y))

    op.__name__ = op.__qualname__ = f"__{word}__"
    return op


logical_and = _logical("logical_and")
logical_or = _logical("logical_or")
logical_xor = _logical("logical_xor")

"""The differentiable ops, by family, and the Tensor methods and operators made from them.

Each family module holds its ``Function`` classes and the public functions that
call them. This file attaches those functions to ``Tensor`` as methods and
operators (``x.exp()``, ``x + y``, ``x[0]``) in one table, so there is exactly one
place that says which method is which op.
"""

from __future__ import annotations

import warnings

from .. import _backend, _seam, _tensor
from .._arguments import PYTHON_FUNCTIONS, checked, has_signature, invalid_combination, no_arguments
from .._backend import as_device, as_dtype, check_cuda_index, contiguous_format, preserve_format
from .._backend import device as device_type
from .._layout import channels_last_contiguous, suggested_format
from .._out import accepts_out
from .._profiling import recorded_as
from .._tensor import Tensor
from ..autograd.anomaly_mode import _outside_teachgrad
from ..autograd.grad_mode import no_grad
from . import index, inplace, linalg, nn, pointwise, reduce, shape, special, storage, views  # noqa: F401 - the families
from .index import gather, index_put, index_select, masked_fill, scatter, scatter_add
from .inplace import as_strided, as_strided_
from .linalg import addbmm, bmm, dot, einsum, matmul, mm, mv, outer, qr
from .nn import pdist
from .pointwise import (
    abs,
    add,
    addcdiv,
    addcmul,
    arctan2,
    atan2,
    ceil,
    clamp,
    clip,
    clone,
    cos,
    div,
    eq,
    exp,
    expm1,
    floor,
    floor_divide,
    fmod,
    ge,
    gt,
    isfinite,
    isinf,
    isnan,
    le,
    lerp,
    log,
    log1p,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    logit,
    lt,
    maximum,
    minimum,
    mul,
    ne,
    neg,
    nextafter,
    pow,
    reciprocal,
    relu,
    remainder,
    round,
    rsqrt,
    sigmoid,
    sign,
    signbit,
    sin,
    sqrt,
    square,
    sub,
    tan,
    tanh,
    where,
)
from .reduce import (
    all,
    allclose,
    amax,
    amin,
    any,
    argmax,
    argmin,
    cumsum,
    equal,
    logsumexp,
    max,
    mean,
    median,
    min,
    nanmedian,
    norm,
    prod,
    return_types,
    std,
    std_mean,
    sum,
    sum_to,
    trace,
    var,
    var_mean,
)
from .shape import constant_pad_nd, flip, roll, tile, tril, triu
from .sort import (
    argsort,
    bucketize,
    count_nonzero,
    isin,
    nonzero,
    searchsorted,
    sort,
    unique,
    unique_consecutive,
)
from .special import igamma, igammac
from .views import (
    cat,
    chunk,
    diagonal,
    expand,
    expand_as,
    flatten,
    movedim,
    narrow,
    permute,
    reshape,
    select,
    split,
    split_with_sizes,
    squeeze,
    stack,
    t,
    transpose,
    unbind,
    unflatten,
    unsafe_chunk,
    unsafe_split,
    unsafe_split_with_sizes,
    unsqueeze,
    view,
)

_P = pointwise
_seam.provide(  # the ops the engine and the Tensor need (see teachgrad/_seam.py)
    sum_to=sum_to,
    clone_like=pointwise.clone_like,
    stack=stack,
    check_inplace=inplace.check_inplace,
    refuse_stale_view=inplace.refuse_stale_view,
    regenerate_view_grad_fn=inplace.regenerate_view_grad_fn,
    rebase_view_history=inplace.rebase_view_history,
)


def softmax(input, dim, dtype=None):
    """``exp(x) / exp(x).sum(dim)``: each slice along ``dim`` becomes probabilities
    (``F.softmax``; ``dtype`` casts the input first).

    >>> import teachgrad as tg
    >>> tg.tensor([0.0, 0.0]).softmax(0)
    tensor([0.5000, 0.5000])
    """
    _require_dim(dim)
    return nn.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, dtype=None):
    """``log(softmax(x))``, computed without overflow (``F.log_softmax``).

    >>> import teachgrad as tg
    >>> tg.tensor([0.0, 0.0]).log_softmax(0)
    tensor([-0.6931, -0.6931])
    """
    _require_dim(dim)
    return nn.log_softmax(input, dim, dtype=dtype)


def _require_dim(dim) -> None:
    """``torch.softmax`` needs its dim (``F.softmax`` guesses one, with a warning, for old
    code): a TypeError, which checked() words as torch's."""
    if dim is None:
        raise TypeError("softmax needs a dim")


def _fast(fn, cls):
    """A method that calls ``cls.apply`` directly, documented as ``fn``: for operators
    with nothing to dispatch (one call less per op on the hottest methods). It must be a
    plain function: Python's operator slots do not bind other callables to ``self``.
    It refuses arguments in torch's words (``x.exp(1)``), as ``checked`` would (testing
    ``args`` costs less than handing it on). A keyword is refused by Python before the
    method runs (``Tensor.exp() got an unexpected keyword argument``): taking ``**kwargs``
    to word it as torch would cost every call."""
    apply, name = cls.apply, fn.__name__

    def method(self, *args):
        if args:
            raise no_arguments(name, args, {})
        return apply(self)

    method.__name__, method.__doc__ = name, fn.__doc__
    method.__qualname__ = f"Tensor.{name}"  # (the name in Python's refusal of a keyword)
    method.checks_its_arguments = True
    return method


def _is_operand(other) -> bool:
    """Something a binary operator computes with: a Tensor, a Python number, or an array."""
    return isinstance(other, Tensor | int | float | complex) or hasattr(other, "dtype")


def _operator(fn):
    """A binary operator method: ``fn(self, other)``, unless ``other`` is no operand at all.

    Then it returns ``NotImplemented``, giving Python its turn, as torch does: ``x == None``
    is False (Python compares identities), and ``x + 'a'`` is Python's TypeError
    "unsupported operand type(s)". The check runs only after ``fn`` has raised TypeError, so
    a valid call does no extra work (a ``try`` costs nothing until something is raised).
    It must be a plain function: Python's operator slots do not bind other callables.
    """

    def method(self, other):
        try:
            return fn(self, other)
        except TypeError:
            if _is_operand(other):
                raise
            return NotImplemented

    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


_PLAIN_OPERANDS = frozenset((Tensor, float, int))


def _fast_operator(fn, cls):
    """``_operator`` for the hottest operators, which call ``cls.apply`` directly (see
    ``_fast``): one expression, whose usual case (a Tensor or a number) is one set lookup;
    anything that is no operand at all gives Python its turn (``NotImplemented``)."""
    apply = cls.apply
    method = lambda self, other: (  # noqa: E731
        apply(self, other)
        if type(other) in _PLAIN_OPERANDS or _is_operand(other)
        else NotImplemented
    )
    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _with_a_tensor(fn, cls, hint=pointwise._FOR_A_NUMBER):
    """The method form of ``fn`` (maximum, minimum): an elementwise op whose other operand
    must be a Tensor, as torch's is (``hint``: what its error suggests); documented as ``fn``.

    >>> import teachgrad as tg
    >>> tg.tensor([1.0, 5.0]).maximum(tg.tensor([3.0, 2.0]))
    tensor([3., 5.])
    """

    def method(self, other):
        pointwise._check_two_tensors(self, other, fn.__name__, first_position=0, hint=hint)
        return cls.apply(self, other)

    method.__name__, method.__doc__ = fn.__name__, fn.__doc__
    return method


def _rsub(self, other):
    """``other - self``: the method behind ``number - tensor``.

    >>> import teachgrad as tg
    >>> 1 - tg.tensor([0.25])
    tensor([0.7500])
    """
    return _P.Rsub.apply(self, other)


def _floor_divide_(self, other):
    """In-place ``floor_divide`` (also ``self //= other``): changes this tensor, bumps its version.

    >>> import teachgrad as tg
    >>> x = tg.tensor([7, -7]); x //= 2; x, x._version
    (tensor([ 3, -4]), 1)
    """
    return inplace.inplace(self, "floor_divide_", _P.FloorDivide.apply, other, "floor_divide_")


def _mod(self, other):
    """``self % other``: ``remainder``; a non-number gives Python its turn (then its TypeError).

    >>> import teachgrad as tg
    >>> tg.tensor([7, -7]) % 3
    tensor([1, 2])
    """
    if not isinstance(other, Tensor | int | float):
        return NotImplemented
    return remainder(self, other)


def _rmod(self, other):
    """``other % self``: the method behind ``number % tensor``.

    >>> import teachgrad as tg
    >>> 7 % tg.tensor([3, -3])
    tensor([ 1, -2])
    """
    if not isinstance(other, int | float):
        return NotImplemented
    return remainder(other, self)


def _where(self, condition, other):
    """``where(condition, self, other)``: this tensor where ``condition`` holds, else ``other``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([-1.0, 2.0]); x.where(x > 0, 0.0)
    tensor([0., 2.])
    """
    return where(condition, self, other)


def _addbmm_(self, batch1, batch2, *, beta=1, alpha=1):
    """In-place ``addbmm``: ``self`` becomes ``beta · self + alpha · Σ_b batch1[b] @ batch2[b]``.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, 2); x.addbmm_(tg.ones(3, 2, 1), tg.ones(3, 1, 2)); x._version
    tensor([[4., 4.],
            [4., 4.]])
    1
    """
    return inplace.inplace(self, "addbmm_", addbmm, batch1, batch2, beta=beta, alpha=alpha)


_AND, _OR, _XOR = (pointwise.bitwise(w, s) for w, s in (("and", "&"), ("or", "|"), ("xor", "^")))


def _reflected(op):
    """``number OP tensor`` as ``tensor OP number`` (the bitwise ops commute)."""

    def reflected(self, other):
        if not isinstance(other, int | float):
            return NotImplemented
        return op(self, other)

    return reflected


# name -> function: each becomes a Tensor method taking the tensor as first argument
def _invert(self):
    """``~x``: NOT of a bool tensor, and of each bit of an integer one; floats have no bits."""
    kind = self._data.dtype.kind
    if kind == "b":
        return logical_not(self)
    if kind in "iu":
        return _tensor.wrap_array(~self._data)
    raise TypeError(
        "~ (operator.invert) is only implemented on integer and Boolean-type tensors\n"
        "  For a float tensor of 0s and 1s, 1 - x is its opposite."
    )


_METHODS = {
    "add": add,
    "sub": sub,
    "mul": mul,
    "div": div,
    "floor_divide": floor_divide,
    "floor_divide_": _floor_divide_,
    "pow": pow,
    "neg": _fast(neg, _P.Neg),
    "abs": abs,
    "reciprocal": _fast(reciprocal, _P.Reciprocal),
    "sqrt": _fast(sqrt, _P.Sqrt),
    "rsqrt": _fast(rsqrt, _P.Rsqrt),
    "exp": _fast(exp, _P.Exp),
    "log": _fast(log, _P.Log),
    "log1p": _fast(log1p, _P.Log1p),
    "expm1": _fast(expm1, _P.Expm1),
    "sin": _fast(sin, _P.Sin),
    "cos": _fast(cos, _P.Cos),
    "tan": _fast(tan, _P.Tan),
    "tanh": _fast(tanh, _P.Tanh),
    "sigmoid": _fast(sigmoid, _P.Sigmoid),
    "relu": _fast(relu, _P.Relu),
    "clamp": clamp,
    "clip": clip,
    "maximum": _with_a_tensor(maximum, _P.Maximum),
    "minimum": _with_a_tensor(minimum, _P.Minimum),
    "sign": sign,
    "floor": _fast(floor, _P.Floor),
    "ceil": _fast(ceil, _P.Ceil),
    "round": round,
    "square": square,
    "clone": clone,
    "eq": eq,
    "ne": ne,
    "lt": lt,
    "le": le,
    "gt": gt,
    "ge": ge,
    "isnan": isnan,
    "isinf": isinf,
    "isfinite": isfinite,
    "logical_not": logical_not,
    "logical_and": logical_and,
    "logical_or": logical_or,
    "logical_xor": logical_xor,
    "sum": sum,
    "mean": mean,
    "prod": prod,
    "var": var,
    "std": std,
    "trace": trace,
    "logit": logit,
    "atan2": atan2,
    "arctan2": arctan2,
    "lerp": lerp,
    "addcmul": addcmul,
    "addcdiv": addcdiv,
    "signbit": signbit,
    "sort": sort,
    "argsort": argsort,
    "nonzero": nonzero,
    "count_nonzero": count_nonzero,
    "unique": unique,
    "unique_consecutive": unique_consecutive,
    "amax": amax,
    "amin": amin,
    "max": max,
    "min": min,
    "argmax": argmax,
    "argmin": argmin,
    "logsumexp": logsumexp,
    "cumsum": cumsum,
    "norm": norm,
    "any": any,
    "all": all,
    "allclose": allclose,
    "equal": equal,
    "matmul": matmul,
    "mm": mm,
    "bmm": bmm,
    "mv": mv,
    "dot": dot,
    "outer": outer,
    "qr": qr,
    "softmax": softmax,
    "log_softmax": log_softmax,
    "reshape": reshape,
    "view": view,
    "view_as": views.view_as,
    "reshape_as": views.reshape_as,
    "flatten": flatten,
    "unflatten": unflatten,
    "squeeze": squeeze,
    "unsqueeze": unsqueeze,
    "transpose": transpose,
    "t": t,
    "permute": permute,
    "movedim": movedim,
    "moveaxis": movedim,
    "expand": expand,
    "expand_as": expand_as,
    "narrow": narrow,
    "diagonal": diagonal,
    "unfold": views.unfold,
    "select": select,
    "unbind": unbind,
    "split": split,
    "split_with_sizes": split_with_sizes,
    "unsafe_split": unsafe_split,
    "unsafe_split_with_sizes": unsafe_split_with_sizes,
    "chunk": chunk,
    "unsafe_chunk": unsafe_chunk,
    "median": median,
    "nanmedian": nanmedian,
    "addbmm": addbmm,
    "addbmm_": _addbmm_,
    "nextafter": _with_a_tensor(nextafter, _P.Nextafter, _P.WRAP_A_NUMBER),
    "igamma": _with_a_tensor(igamma, special.Igamma, _P.WRAP_A_NUMBER),
    "igammac": _with_a_tensor(igammac, special.Igammac, _P.WRAP_A_NUMBER),
    "tril": tril,
    "triu": triu,
    "flip": flip,
    "roll": roll,
    "repeat": shape.repeat,  # a method only: torch has no torch.repeat
    "tile": tile,
    "gather": gather,
    "scatter": scatter,
    "scatter_add": scatter_add,
    "index_select": index_select,
    "masked_fill": masked_fill,
    "where": _where,
    "index_put": index_put,
    "masked_fill_": inplace.masked_fill_,
    "index_put_": inplace.index_put_,
    "__getitem__": index.getitem,
    "__add__": _fast_operator(add, _P.Add),
    "__radd__": _fast_operator(add, _P.Add),
    "__sub__": _fast_operator(sub, _P.Sub),
    "__rsub__": _fast_operator(_rsub, _P.Rsub),
    "__mul__": _fast_operator(mul, _P.Mul),
    "__rmul__": _fast_operator(mul, _P.Mul),
    "__truediv__": _fast_operator(div, _P.Div),
    "__rtruediv__": _operator(lambda self, other: reciprocal(self) * other),  # (as torch's)
    "__floordiv__": _operator(floor_divide),
    "__rfloordiv__": _operator(lambda self, other: floor_divide(other, self)),
    "__ifloordiv__": _floor_divide_,
    "remainder": remainder,
    "fmod": fmod,
    "__mod__": _mod,
    "__rmod__": _rmod,
    "__pow__": checked(pow, "pow", method=True, operator=True),
    "__rpow__": checked(lambda self, other: pow(other, self), "pow", method=True, operator=True),
    "__matmul__": checked(matmul, "matmul", method=True, operator=True),
    "__rmatmul__": checked(
        lambda self, other: matmul(other, self), "matmul", method=True, operator=True
    ),
    "__neg__": _fast(neg, _P.Neg),
    "__abs__": abs,
    "__eq__": _operator(eq),
    "__ne__": _operator(ne),
    "__lt__": _operator(lt),
    "__le__": _operator(le),
    "__gt__": _operator(gt),
    "__ge__": _operator(ge),
    "__invert__": _invert,
    "__and__": _AND,
    "__rand__": _reflected(_AND),
    "__or__": _OR,
    "__ror__": _reflected(_OR),
    "__xor__": _XOR,
    "__rxor__": _reflected(_XOR),
}


# the in-place families' own tables (add_, mul_, ...; resize_, set_: ops/storage.py)
_METHODS.update({**inplace.METHODS, **storage.METHODS})

for _name, _fn in _METHODS.items():
    # torch's argument errors (teachgrad/_arguments.py), worded after a call failed; not
    # for the operators (Python gives them their arguments), nor the methods that word their
    # own (sum: reduce._sum_over; the hottest ones: _fast)
    operator = _name.startswith("__")
    if not (operator or _name == "sum" or hasattr(_fn, "checks_its_arguments")):
        _METHODS[_name] = _fn = checked(_fn, _name, method=True)
    setattr(Tensor, _name, _fn)


def _is_contiguous(self, *, memory_format=contiguous_format) -> bool:
    """True if the elements lie in memory without gaps in ``memory_format``'s order
    (row-major by default); the stride of a dim of size 1 does not matter.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).is_contiguous(), tg.zeros(2, 3).t().is_contiguous()
    (True, False)
    >>> tg.zeros(2, 3, 4, 5).is_contiguous(memory_format=tg.channels_last)
    False
    """
    if memory_format is contiguous_format or memory_format is preserve_format:
        return bool(self._data.flags.c_contiguous)
    return channels_last_contiguous(self.shape, self.stride(), memory_format)


def _contiguous(self, *, memory_format=contiguous_format):
    """``self`` if already contiguous in ``memory_format`` (row-major by default), else a
    copy laid out so (in the graph).

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).t().contiguous().stride()
    (2, 1)
    >>> tg.zeros(1, 3, 2, 2).contiguous(memory_format=tg.channels_last).stride()
    (12, 1, 6, 3)
    """
    if _is_contiguous(self, memory_format=memory_format):
        return self
    if memory_format is preserve_format:
        raise RuntimeError(
            "preserve memory format is unsupported by the contiguous operator\n  "
            "contiguous() makes a layout: ask for contiguous_format or channels_last."
        )
    return _contiguous_copy(self, memory_format)


@recorded_as("aten::contiguous")  # (only a copy is an op: torch records nothing otherwise)
def _contiguous_copy(self, memory_format):
    return _P.Clone.apply(self, memory_format)


def _to_arguments(args, kwargs) -> tuple:
    """The ``(device, dtype)`` a ``to(...)`` call asks for, each resolved or None: ``to(dtype)``,
    ``to(device)``, ``to(device, dtype)``, ``to(other)`` (other's device and dtype), or keywords.

    Positional bools (torch's ``non_blocking``, ``copy``) and ``non_blocking=`` are ignored.
    ``kwargs`` is used up: a keyword left over is torch's TypeError. ``Tensor.to`` and
    ``nn.Module.to`` both read their arguments with it.
    """

    device = kwargs.pop("device", None)
    dtype = kwargs.pop("dtype", None)
    kwargs.pop("non_blocking", None)
    if kwargs:
        raise TypeError(f"to() got unexpected keyword arguments {sorted(kwargs)}")
    for a in args:
        if isinstance(a, Tensor):
            device, dtype = a.device, a.dtype
        elif isinstance(a, str | device_type):
            device = a
        elif a is not None and not isinstance(a, bool):
            dtype = a
    return (
        None if device is None else as_device(device),
        None if dtype is None else as_dtype(dtype),
    )


def _to(self, *args, **kwargs):
    """Cast and/or move: ``to(dtype)``, ``to(device)``, ``to(device, dtype)``, ``to(other)``;
    ``memory_format=`` lays the result out in that format.

    Returns ``self`` when nothing changes (unless ``copy=True``), as torch does: for a
    memory format, when torch reads that format from ``self``'s strides already.

    >>> import teachgrad as tg
    >>> x = tg.ones(2); x.to(tg.float64).dtype, x.to("cpu") is x
    (teachgrad.float64, True)
    >>> tg.ones(1, 3, 2, 2).to(memory_format=tg.channels_last).stride()
    (12, 1, 6, 3)
    """
    if not _fits_to(**kwargs):
        raise invalid_combination("to", args, kwargs, method=True)
    copy = kwargs.pop("copy", False)
    memory_format = kwargs.pop("memory_format", None) or preserve_format
    dev, dt = _to_arguments(args, kwargs)
    if dev is not None and dev.type == "cuda":
        check_cuda_index(dev)
    same_dtype = dt is None or dt.numpy == self._data.dtype
    same_device = (
        dev is None
        or dev == self.device
        or (dev.type == "cuda" and dev.index is None and self.device.type == "cuda")
    )
    same_format = memory_format is preserve_format or memory_format is suggested_format(
        self.shape, self.stride()
    )
    if same_dtype and same_device and same_format and not copy:
        return self
    np_dtype, dev = None if dt is None else dt.numpy, None if same_device else dev
    if np_dtype is not None and np_dtype.kind not in "fc":
        # an integer or bool result is not differentiable: torch records no node, so it does
        # not read (nor check) the history of a view whose base changed in place
        with no_grad():
            return _P.ToCopy.apply(self, np_dtype, dev, memory_format)
    return _P.ToCopy.apply(self, np_dtype, dev, memory_format)


def _fits_to(
    dtype=None, device=None, non_blocking=False, copy=False, memory_format=None, **_
) -> bool:
    """Whether ``to``'s keyword arguments have the types torch's signatures take (a dtype given
    by name, ``dtype="float32"``, is not one: torch refuses it)."""
    return (
        (dtype is None or isinstance(dtype, _backend.dtype) or dtype in (float, int, bool))
        and (device is None or isinstance(device, str | int | device_type))
        and isinstance(non_blocking, bool)
        and isinstance(copy, bool)
        and (memory_format is None or isinstance(memory_format, _backend.memory_format))
    )


def _caster(dtype_name):
    def cast(self):
        return _to(self, getattr(_backend, dtype_name))

    cast.__name__ = dtype_name
    cast.__doc__ = (
        f"``self.to(teachgrad.{dtype_name.rstrip('_')})``.\n\n    >>> import teachgrad as tg\n"
        f"    >>> tg.tensor([1, 0]).{'bool' if dtype_name == 'bool_' else _METHOD_NAMES[dtype_name]}().dtype\n"
        f"    teachgrad.{dtype_name.rstrip('_')}\n"
    )
    return cast


_METHOD_NAMES = {
    "float32": "float",
    "float64": "double",
    "float16": "half",
    "int64": "long",
    "int32": "int",
}


Tensor.contiguous = _contiguous
Tensor.is_contiguous = _is_contiguous
Tensor.to = _to


def _cpu(self, *, memory_format=preserve_format):
    """A copy on the CPU (``self`` if it is there already, in that memory format).

    >>> import teachgrad as tg
    >>> tg.ones(2).cpu().device
    device(type='cpu')
    """
    return _to(self, "cpu", memory_format=memory_format)


def _cuda(self, device=None, non_blocking=False):
    """A copy on a CUDA GPU (needs CuPy; a clear error says so when it is missing).

    >>> import teachgrad as tg
    >>> x = tg.ones(2)
    >>> (x.cuda() if tg.cuda.is_available() else x).shape
    teachgrad.Size([2])
    """
    return _to(
        self, "cuda" if device is None else f"cuda:{device}" if isinstance(device, int) else device
    )


def _type_as(self, other):
    """``self.to(other.dtype)``.

    >>> import teachgrad as tg
    >>> tg.tensor([1, 2]).type_as(tg.zeros(1)).dtype
    teachgrad.float32
    """
    return _to(self, other.dtype)


Tensor.cpu = _cpu
Tensor.cuda = _cuda
Tensor.float = _caster("float32")
Tensor.double = _caster("float64")
Tensor.half = _caster("float16")
Tensor.long = _caster("int64")
Tensor.int = _caster("int32")
Tensor.bool = _caster("bool_")
Tensor.type_as = checked(_type_as, "type_as", method=True)

# the Tensor's methods that are not in the op table (its own, in teachgrad/_tensor.py, and
# the casts above) refuse arguments in torch's words too, after a call failed
# fmt: off
for _name in (
    "cpu", "float", "double", "half", "long", "int", "bool", "contiguous", "numpy",
    "pin_memory", "is_pinned", "is_contiguous", "item", "tolist", "dim", "ndimension", "numel",
    "nelement", "element_size", "data_ptr", "storage_offset", "detach", "detach_",
    "retain_grad", "is_complex", "is_floating_point", "is_inference", "size", "stride",
):
    setattr(Tensor, _name, checked(getattr(Tensor, _name), _name, method=True))
# fmt: on


@recorded_as("aten::numpy_T")
def _T(self):
    if self.ndim != 2:
        _warn_T_once(zero_d=self.ndim == 0)
    return permute(self, tuple(range(self.ndim))[::-1])


def _warn_T_once(zero_d: bool) -> None:
    """torch's deprecation of ``x.T`` off matrices: one warning for 0-d tensors, one for the
    others, each said once per process (TORCH_WARN_ONCE)."""
    if zero_d not in _T_WARNED:
        _T_WARNED.add(zero_d)
        warnings.warn(_T_DEPRECATED[zero_d], UserWarning, stacklevel=_outside_teachgrad())


_T_WARNED = set()
_T_DEPRECATED = (
    "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated "
    "and it will throw an error in a future release. Consider `x.mT` to transpose batches of "
    "matrices or `x.permute(*teachgrad.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of "
    "a tensor.",
    "Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.",
)


Tensor.T = property(_T, doc="All dims reversed (the transpose for a matrix).")


@recorded_as("aten::mT")
def _mT(self):
    ndim = self._data.ndim
    if ndim >= 2:
        return transpose(self, -2, -1)
    if ndim == 0:  # torch's too: a 0-d tensor is its own transpose, with a warning
        warnings.warn(
            "Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.",
            UserWarning,
            stacklevel=2,
        )
        return self
    raise RuntimeError(
        f"tensor.mT is only supported on matrices or batches of matrices. Got {ndim}-D tensor."
    )


Tensor.mT = property(_mT, doc="The last two dims swapped (matrices or batches of matrices).")

# The names ``import teachgrad`` gives: torch's top-level functions that teachgrad has.
# Not the family modules, and not helpers torch has only as methods (expand, view) or not
# at all (sum_to: reach it as teachgrad.ops.reduce.sum_to). tests/teachgrad/test_public_api.py
# compares this list with torch.
__all__ = [  # fmt: skip
    "abs",
    "add",
    "addbmm",
    "addcdiv",
    "addcmul",
    "all",
    "allclose",
    "amax",
    "amin",
    "any",
    "argmax",
    "argmin",
    "argsort",
    "as_strided",
    "as_strided_",
    "arctan2",
    "atan2",
    "bmm",
    "bucketize",
    "cat",
    "ceil",
    "chunk",
    "clamp",
    "clip",
    "clone",
    "constant_pad_nd",
    "cos",
    "count_nonzero",
    "cumsum",
    "diagonal",
    "div",
    "dot",
    "einsum",
    "eq",
    "equal",
    "exp",
    "expm1",
    "flatten",
    "flip",
    "floor",
    "floor_divide",
    "fmod",
    "gather",
    "ge",
    "gt",
    "igamma",
    "igammac",
    "index_put",
    "index_select",
    "isfinite",
    "isin",
    "isinf",
    "isnan",
    "le",
    "lerp",
    "log",
    "log1p",
    "logit",
    "log_softmax",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "logsumexp",
    "lt",
    "masked_fill",
    "matmul",
    "max",
    "maximum",
    "mean",
    "median",
    "min",
    "minimum",
    "mm",
    "movedim",
    "mul",
    "mv",
    "nanmedian",
    "narrow",
    "ne",
    "neg",
    "nextafter",
    "nonzero",
    "norm",
    "outer",
    "pdist",
    "permute",
    "pow",
    "prod",
    "qr",
    "reciprocal",
    "remainder",
    "relu",
    "reshape",
    "return_types",
    "roll",
    "round",
    "rsqrt",
    "scatter",
    "scatter_add",
    "searchsorted",
    "select",
    "sigmoid",
    "sign",
    "signbit",
    "sin",
    "softmax",
    "sort",
    "split",
    "split_with_sizes",
    "sqrt",
    "square",
    "squeeze",
    "stack",
    "std",
    "std_mean",
    "sub",
    "sum",
    "t",
    "tan",
    "tanh",
    "tile",
    "trace",
    "transpose",
    "tril",
    "triu",
    "unbind",
    "unflatten",
    "unique",
    "unique_consecutive",
    "unsafe_chunk",
    "unsafe_split",
    "unsafe_split_with_sizes",
    "unsqueeze",
    "var",
    "var_mean",
    "where",
]


# torch's functions that take ``out=`` (teachgrad/_out.py): all of the above but these (views,
# and a few more); their Tensor methods never take it
# fmt: off
WITHOUT_OUT = (
    "allclose", "chunk", "clone", "constant_pad_nd", "diagonal", "einsum", "equal", "flatten",
    "flip", "index_put", "isfinite", "isinf", "isnan", "masked_fill", "movedim", "narrow",
    "permute", "relu", "reshape", "return_types", "roll", "select", "split", "squeeze", "t",
    "tile", "transpose", "unbind", "unflatten", "unsqueeze", "var_mean", "std_mean",
    "sort", "argsort", "nonzero", "count_nonzero", "unique", "unique_consecutive", "searchsorted",
    "bucketize", "trace", "signbit", "isin", "logit", "as_strided", "as_strided_",
    "median", "nanmedian", "split_with_sizes", "unsafe_split", "unsafe_split_with_sizes", "unsafe_chunk", "pdist",
)
# fmt: on
OUT_FUNCTIONS = tuple(name for name in __all__ if name not in WITHOUT_OUT)
for _name in OUT_FUNCTIONS:
    globals()[_name] = accepts_out(globals()[_name], _name)

# torch's argument errors for the functions too (teachgrad/_arguments.py; the Tensor
# methods got theirs above): each function whose torch signatures are written there is
# replaced by one that, only when the call failed, checks the arguments as torch would
for _name in __all__:
    if has_signature(_name) and _name not in PYTHON_FUNCTIONS:
        globals()[_name] = checked(globals()[_name], _name)

# torch's multi-tensor ops (``_foreach_exp`` ...), public at its top level too: they take no
# ``out=`` and have teachgrad's own argument checks (ops/foreach.py)
from . import foreach  # noqa: E402 - after the table above, which they are not part of

globals().update({_name: getattr(foreach, _name) for _name in foreach.__all__})
__all__ += foreach.__all__

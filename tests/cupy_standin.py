"""A strict CuPy stand-in: a test double that lets the CUDA path run on a machine without a GPU.

It computes with NumPy, in host memory, but behaves like CuPy wherever a difference
would hide a bug that only a GPU would show:

* no implicit conversion to NumPy: ``numpy.asarray(a)`` raises CuPy's TypeError;
* no NumPy arrays mixed into its functions or operators (``a + numpy_array`` raises);
  ``asarray``/``array`` and index arrays take host data, as CuPy's do;
* reductions and scalar indexing return 0-d arrays where NumPy returns scalars, so a
  forgotten ``.item()`` stays an array as it would on a GPU;
* only names and keywords real CuPy has (the tables at the end, which
  tests/teachgrad/test_cupy_surface.py checks against the installed CuPy wheel);
  ``flags`` has no ``writeable`` and ``ndarray`` no ``__index__``, as in CuPy;
* integer-array indices out of range wrap around instead of raising, as CuPy's kernels
  do (a scalar index out of range still raises IndexError, as in CuPy);
* every implicit device→host synchronisation (``bool()``, ``int()``, ``float()``,
  ``item()``, ``tolist()``, ``get()``, ``asnumpy``, printing, and indexing with a boolean
  mask, whose count of True values CuPy reads to size the result) is counted per file:line
  of the caller: :func:`count_syncs`;
* its random generators do not repeat NumPy's numbers for the same seed (CuPy's don't);
* elementwise results (ufuncs, operators, and the functions CuPy computes with an
  elementwise kernel: ``where``, ``clip``, ``round``...) are row-major whatever the operands' layout,
  as CuPy's kernels write them (NumPy's follow the operands: the first GPU run found
  torch's strides lost on transposed CUDA tensors);
* CuPy's own float kernels where NumPy computes otherwise (:data:`CUDA_KERNELS`): floor
  division is ``floor(x / y)`` (``1. // 0.1`` is 10, NumPy's and torch's 9), ``%`` is
  ``x - floor(x / y) * y``, and ``maximum``/``minimum`` do not return NumPy's second
  argument at a tie (``-0.0`` against ``0.0``).

It is never importable as ``cupy``: tests/conftest.py hands it to teachgrad's backend
seam (``teachgrad._backend._cupy``) for a run with ``--device-standin``, so the tests run
with every tensor on ``"cuda"`` and nothing else in the process sees it.

    >>> import numpy
    >>> a = module.arange(3.0)
    >>> numpy.asarray(a)
    Traceback (most recent call last):
    TypeError: Implicit conversion to a NumPy array is not allowed. Please use `.get()` to construct a NumPy array explicitly.
    >>> type(a.sum()).__name__, a[module.asarray([1, 5])].get().tolist()  # 5 wraps to 2
    ('ndarray', [1.0, 2.0])
"""

from __future__ import annotations

import collections
import contextlib
import functools
import numbers
import pathlib
import sys
import types
import warnings
import weakref

import numpy

_HERE = __file__
_ROOT = pathlib.Path(__file__).resolve().parents[1]
_IMPLICIT = (
    "Implicit conversion to a NumPy array is not allowed. "
    "Please use `.get()` to construct a NumPy array explicitly."
)

# --------------------------------------------------------------------------- synchronisations

_syncs: collections.Counter = collections.Counter()


def _note_sync() -> None:
    """Count one device→host synchronisation at the caller's file:line."""
    frame = sys._getframe(1)
    while frame.f_code.co_filename == _HERE:
        frame = frame.f_back
    path = pathlib.Path(frame.f_code.co_filename)
    where = path.relative_to(_ROOT).as_posix() if path.is_relative_to(_ROOT) else str(path)
    _syncs[f"{where}:{frame.f_lineno}"] += 1


@contextlib.contextmanager
def count_syncs():
    """``with count_syncs() as syncs:`` -- afterwards ``syncs`` counts the block's
    synchronisations by ``"teachgrad/ops/nn.py:123"``."""
    before = collections.Counter(_syncs)
    counted: collections.Counter = collections.Counter()
    try:
        yield counted
    finally:
        counted.update(_syncs - before)


# --------------------------------------------------------------------------- conversions


def _unwrap(x):
    """The NumPy value behind a stand-in argument; a NumPy array is CuPy's TypeError."""
    if isinstance(x, ndarray):
        return x._a
    if isinstance(x, numpy.ndarray):
        raise TypeError(f"Unsupported type {type(x)}")
    if isinstance(x, list | tuple):
        return type(x)(_unwrap(v) for v in x)
    return x


def _wrap(x):
    """Stand-in arrays for NumPy results; NumPy scalars become 0-d arrays, as in CuPy."""
    if isinstance(x, numpy.ndarray):
        return ndarray(x)
    if isinstance(x, numpy.generic):
        return ndarray(numpy.asarray(x))
    if isinstance(x, tuple):
        return tuple(_wrap(v) for v in x)
    return x


def _index(key, shape):
    """``key`` for NumPy, with integer-array indices wrapped into range, as CuPy does.

    A non-empty boolean mask is a synchronisation: CuPy reads back how many of its values
    are True (the size of what it selects), for reading and for writing alike."""
    parts = [
        numpy.asarray(p) if isinstance(p, list) else p._a if isinstance(p, ndarray) else p
        for p in (key if isinstance(key, tuple) else (key,))
    ]

    def width(p):  # how many of the array's dimensions an index part consumes
        if p is None or p is Ellipsis:
            return 0
        return p.ndim if isinstance(p, numpy.ndarray) and p.dtype == bool else 1

    dim = 0
    for k, p in enumerate(parts):
        if p is Ellipsis:
            dim += len(shape) - sum(width(q) for q in parts)
        elif isinstance(p, numpy.ndarray) and p.dtype.kind in "iu" and shape[dim]:
            parts[k] = p % shape[dim]
        elif isinstance(p, numpy.ndarray) and p.dtype == bool and p.size:
            _note_sync()
        dim += width(p)
    return tuple(parts) if isinstance(key, tuple) else parts[0]


# --------------------------------------------------------------------------- ndarray


class _Flags:
    """CuPy's flags: no ``writeable`` (every CuPy array can be written)."""

    __slots__ = ("c_contiguous", "f_contiguous", "owndata")

    def __init__(self, a):
        self.c_contiguous = a.flags.c_contiguous
        self.f_contiguous = a.flags.f_contiguous
        self.owndata = a.flags.owndata


_OWNERS = weakref.WeakValueDictionary()  # id(a NumPy array owning its memory) -> its ndarray


class ndarray:
    """A device array: a NumPy array that refuses to be taken for one."""

    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100  # CuPy's: lower than teachgrad's Tensor, which then wins

    def __init__(self, a):
        self._a = a
        if a.base is None:  # it owns its memory: views' ``base`` finds this array (see there)
            _OWNERS[id(a)] = self

    # ------------------------------------------------------------------ description
    @property
    def shape(self):
        return self._a.shape

    @shape.setter
    def shape(self, new):  # a reshape without copy, or AttributeError: CuPy's setter does that
        self._a.shape = new

    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    strides = property(lambda self: self._a.strides)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    flags = property(lambda self: _Flags(self._a))
    T = property(lambda self: ndarray(self._a.T))
    mT = property(lambda self: ndarray(numpy.swapaxes(self._a, -1, -2)))
    device = property(lambda self: types.SimpleNamespace(id=0))
    data = property(lambda self: types.SimpleNamespace(ptr=self._a.__array_interface__["data"][0]))

    @property
    def base(self):
        """The array owning the memory, or None: the same stand-in array as long as one that
        owns that memory is alive, as CuPy's views name their base (teachgrad's engine
        compares it with a tensor's array)."""
        owner = self._a.base
        while isinstance(getattr(owner, "base", None), numpy.ndarray):
            owner = owner.base
        if not isinstance(owner, numpy.ndarray):
            return None
        known = _OWNERS.get(id(owner))
        return known if known is not None and known._a is owner else ndarray(owner)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (_wrap(v) for v in self._a)

    # ------------------------------------------------------------------ host transfers
    def __array__(self, *args, **kwargs):
        raise TypeError(_IMPLICIT)

    def get(self, stream=None, order="C", out=None, blocking=True):
        _note_sync()
        return numpy.array(self._a, order=order)

    def set(self, arr, stream=None):
        if not isinstance(arr, numpy.ndarray) or arr.shape != self.shape:
            raise ValueError("Shape mismatch or not a numpy.ndarray")
        self._a[...] = arr

    def item(self):
        _note_sync()
        return self._a.item()

    def tolist(self):
        _note_sync()
        return self._a.tolist()

    def __bool__(self):
        _note_sync()
        return bool(self._a)

    def nonzero(self):
        return nonzero(self)

    def __int__(self):
        _note_sync()
        return int(self._a)

    def __float__(self):
        _note_sync()
        return float(self._a)

    def __complex__(self):
        _note_sync()
        return complex(self._a)

    def __repr__(self):
        _note_sync()
        return repr(self._a)

    def __str__(self):
        _note_sync()
        return str(self._a)

    def __format__(self, spec):
        _note_sync()
        return format(self._a, spec)

    def __reduce__(self):  # pickling copies to the host, as CuPy's does
        return (_from_host, (self.get(),))

    def __deepcopy__(self, memo):
        return ndarray(self._a.copy())

    __hash__ = None

    # ------------------------------------------------------------------ NumPy's protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """``numpy.exp(a)`` runs on the device, as with CuPy; NumPy arrays mixed in are refused."""
        result = getattr(ufunc, method)(
            *_unwrap(inputs), **{k: _unwrap(v) for k, v in kwargs.items()}
        )
        return _wrap(result)

    def __array_function__(self, func, types_, args, kwargs):
        if func.__name__ not in FUNCTIONS:
            return NotImplemented
        return getattr(module, func.__name__)(*args, **kwargs)

    # ------------------------------------------------------------------ indexing
    def __getitem__(self, key):
        return _wrap(self._a[_index(key, self._a.shape)])

    def __setitem__(self, key, value):
        self._a[_index(key, self._a.shape)] = _unwrap(value)

    # ------------------------------------------------------------------ methods
    def __getattr__(self, name):
        if name not in METHODS:
            raise AttributeError(f"'cupy.ndarray' object has no attribute '{name}'")
        method = getattr(self._a, name)
        allowed = METHODS[name]

        def call(*args, **kwargs):
            _check_keywords(f"ndarray.{name}", kwargs, allowed)
            result = method(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
            return _wrap(
                _row_major(result) if name in ELEMENTWISE and "out" not in kwargs else result
            )

        return call


# --------------------------------------------------------------------------- CuPy's kernels


def _cuda_kernel(name, formula):
    """NumPy's ufunc ``name`` computing a float result as CuPy's kernel does: ``formula``
    on the operands cast to the result's dtype (the dtype, shape, ``out`` and ``casting``
    stay NumPy's, which are CuPy's); other dtypes as NumPy computes them."""
    numpy_ufunc = getattr(numpy, name)

    def kernel(a, b, out=None, **kwargs):
        with numpy.errstate(all="ignore"):  # (a GPU does not warn)
            result = numpy_ufunc(a, b, **kwargs)
            if result.dtype.kind != "f":
                return result if out is None else numpy_ufunc(a, b, out=out, **kwargs)
            x, y = (numpy.asarray(v).astype(result.dtype) for v in (a, b))
            result = numpy.asarray(formula(numpy_ufunc, x, y), dtype=result.dtype)
        if out is None:
            return result
        out[...] = result
        return out

    return kernel


CUDA_KERNELS = {
    # CuPy's ``_floor_divide`` for floats rounds the rounded quotient: floor(x / y). NumPy
    # and torch take the exact quotient's floor, from fmod: ``1. // 0.1`` is 9 there, 10 here.
    "floor_divide": _cuda_kernel("floor_divide", lambda _, x, y: numpy.floor(x / y)),
    "remainder": _cuda_kernel("remainder", lambda _, x, y: x - numpy.floor(x / y) * y),
    # CUDA's max/min do not follow NumPy at a tie, which only the sign of a zero shows
    # (the first GPU run: ``maximum(0, -0.0)`` is 0.0 on an H200, NumPy's -0.0): here the
    # first argument wins a tie, where NumPy returns the second, so code leaning on either
    # order shows up.
    "maximum": _cuda_kernel("maximum", lambda pick, x, y: numpy.where(x == y, x, pick(x, y))),
    "minimum": _cuda_kernel("minimum", lambda pick, x, y: numpy.where(x == y, x, pick(x, y))),
}
# (CuPy's ``//`` and ``%`` operators are its floor_divide and remainder kernels)
_OPERATOR_UFUNC = {"floordiv": "floor_divide", "mod": "remainder"}


def _from_host(array):
    return ndarray(array)


def _operator(name, in_place=False):
    numpy_operator = getattr(numpy.ndarray, name)
    form = name.strip("_")  # "floordiv", or "rfloordiv"/"ifloordiv": reflected/in place
    plain = form[1:] if form[0] in "ri" and form[1:] in _OPERATOR_UFUNC else form
    kernel = CUDA_KERNELS.get(_OPERATOR_UFUNC.get(plain))
    if kernel is not None:
        reflected = form == f"r{plain}"

        def numpy_operator(a, b):  # noqa: F811 (the kernel, in the operator's argument order)
            result = kernel(*((b, a) if reflected else (a, b)))
            if in_place:
                a[...] = result
            return result

    def operate(self, *other):
        if other and not isinstance(
            other[0], ndarray | numpy.ndarray | numpy.generic | numbers.Number
        ):
            priority = getattr(other[0], "__array_priority__", 0)  # a type has a descriptor
            if isinstance(priority, numbers.Real) and priority > ndarray.__array_priority__:
                return NotImplemented  # e.g. a teachgrad Tensor: its reflected operator runs
            # CuPy tries anything else as an operand and fails: so `a == numpy.ndarray`
            # (or `a in (numpy.ndarray, ...)`) raises instead of giving False
            raise TypeError(f"Unsupported type {type(other[0])}")
        result = numpy_operator(self._a, *_unwrap(other))
        return self if in_place else _wrap(_row_major(result))

    operate.__name__ = name
    return operate


for _name in [
    "add",
    "sub",
    "mul",
    "truediv",
    "floordiv",
    "mod",
    "pow",
    "matmul",
    "and",
    "or",
    "xor",
    "lshift",
    "rshift",
]:
    for _form in (f"__{_name}__", f"__r{_name}__"):
        setattr(ndarray, _form, _operator(_form))
    setattr(ndarray, f"__i{_name}__", _operator(f"__i{_name}__", in_place=True))
for _form in [
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__neg__",
    "__pos__",
    "__abs__",
    "__invert__",
]:
    setattr(ndarray, _form, _operator(_form))


def _row_major(result):
    """An elementwise kernel's new result as CuPy lays it out: row-major, whatever the
    operands' layout (NumPy follows the operands: ``x.T + 1`` is column-major there)."""
    if isinstance(result, numpy.ndarray) and result.ndim and not result.flags.c_contiguous:
        return result.copy(order="C")
    return result


def _check_keywords(name, kwargs, allowed):
    if allowed is not None and not set(kwargs) <= set(allowed):
        raise TypeError(
            f"{name}() got unexpected keyword arguments {sorted(set(kwargs) - set(allowed))}"
        )


# --------------------------------------------------------------------------- functions


class ufunc:
    """A CuPy ufunc: keywords ``out``, ``dtype``, ``casting`` only, and ``at``."""

    KEYWORDS = ("casting", "dtype", "out")
    # the ufuncs whose ``at`` CuPy implements (those with a scatter kernel); any other
    # raises NotImplementedError there (tests/teachgrad/test_cupy_surface.py checks the list)
    WITH_AT = ("add", "bitwise_and", "bitwise_or", "bitwise_xor", "maximum", "minimum", "subtract")

    def __init__(self, name):
        self.__name__ = name
        self._numpy = CUDA_KERNELS.get(name) or getattr(numpy, name)

    def __call__(self, *args, **kwargs):
        _check_keywords(self.__name__, kwargs, self.KEYWORDS)
        result = self._numpy(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        return _wrap(result if "out" in kwargs else _row_major(result))

    def at(self, a, indices, b=None):
        if self.__name__ not in self.WITH_AT:
            raise NotImplementedError(f"`cupy_{self.__name__}.at` is not supported yet")
        target = _unwrap(a)
        self._numpy.at(target, _index(indices, target.shape), *([] if b is None else [_unwrap(b)]))


def _function(name, allowed):
    numpy_function = numpy
    for part in name.split("."):
        numpy_function = getattr(numpy_function, part)

    def call(*args, **kwargs):
        _check_keywords(name, kwargs, allowed)
        result = numpy_function(*_unwrap(args), **{k: _unwrap(v) for k, v in kwargs.items()})
        return _wrap(_row_major(result) if elementwise and "out" not in kwargs else result)

    elementwise = name in ELEMENTWISE
    call.__name__ = name
    return call


# CuPy functions (and methods) that are elementwise kernels: a new result is row-major
ELEMENTWISE = ("clip", "isclose", "nan_to_num", "round", "where")


def asarray(a, dtype=None, order=None, copy=None, *, blocking=False):
    """Host data in, device array out (an explicit copy, like CuPy's)."""
    if isinstance(a, ndarray):
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    return ndarray(numpy.array(_host_value(a), dtype=dtype))


def array(obj, dtype=None, copy=True, order="K", subok=False, ndmin=0, *, blocking=False):
    if isinstance(obj, ndarray):
        return ndarray(numpy.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    return ndarray(numpy.array(_host_value(obj), dtype=dtype, order=order, ndmin=ndmin))


def _host_value(x):
    """Nested lists may hold device arrays (``cupy.array([a, b])`` stacks them)."""
    if isinstance(x, list | tuple):
        return [_host_value(v) for v in x]
    return x._a if isinstance(x, ndarray) else x


def nonzero(a):
    """CuPy counts the nonzero values on the device, then reads the count back (a
    synchronisation) to size the result."""
    _note_sync()
    return _wrap(numpy.nonzero(_unwrap(a)))


def asnumpy(a, stream=None, order="C", out=None, *, blocking=True):
    if isinstance(a, ndarray):
        return a.get(order=order)
    return numpy.asarray(a, order=order)


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """CuPy answers with a 0-d device array (NumPy: a Python bool)."""
    return ndarray(numpy.asarray(numpy.allclose(*_unwrap((a, b)), rtol, atol, equal_nan)))


def result_type(*arrays_and_dtypes):
    return numpy.result_type(*(getattr(x, "dtype", x) for x in arrays_and_dtypes))


def shape(a):
    return numpy.shape(_unwrap(a))


def may_share_memory(a, b, max_work=None):
    return numpy.may_share_memory(*_unwrap((a, b)))


def _wrapped_along(target, indices, axis):
    indices = _unwrap(indices)
    size = target.size if axis is None else target.shape[axis]
    return indices % size if size else indices


def take_along_axis(a, indices, axis):
    target = _unwrap(a)
    return _wrap(numpy.take_along_axis(target, _wrapped_along(target, indices, axis), axis))


def put_along_axis(arr, indices, values, axis):
    target = _unwrap(arr)
    numpy.put_along_axis(target, _wrapped_along(target, indices, axis), _unwrap(values), axis)


def take(a, indices, axis=None, out=None):
    target = _unwrap(a)
    return _wrap(numpy.take(target, _wrapped_along(target, indices, axis), axis))


def _spread(name):
    """CuPy's ``var`` or ``std``: NaN where no degrees of freedom are left, whatever the
    squared deviations add up to (NumPy divides their sum by 0: inf, or NaN for 0 / 0)."""
    numpy_function = getattr(numpy, name)

    def spread(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False):
        x = _unwrap(a)
        with warnings.catch_warnings(), numpy.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)  # ("Degrees of freedom <= 0")
            result = numpy.asarray(numpy_function(x, axis, dtype, None, ddof, keepdims))
        reduced = x.size // result.size if result.size else 0  # (elements per result)
        return _wrap(numpy.full_like(result, numpy.nan) if reduced - ddof <= 0 else result)

    spread.__name__ = name
    return spread


# --------------------------------------------------------------------------- random numbers


class Generator:
    """``cupy.random.Generator``: only CuPy's methods, and numbers of its own for a seed."""

    def __init__(self, seed=None):
        # CuPy's numbers differ from NumPy's for the same seed; so do ours
        self._numpy = numpy.random.default_rng(None if seed is None else (seed, 0xC0DA))

    def __getattr__(self, name):
        if name not in GENERATOR:
            raise AttributeError(f"'Generator' object has no attribute '{name}'")
        method = getattr(self._numpy, name)

        def call(*args, **kwargs):
            _check_keywords(f"Generator.{name}", kwargs, GENERATOR[name])
            return _wrap(method(*args, **kwargs))

        return call


# --------------------------------------------------------------------------- devices


class Device:
    """``cupy.cuda.Device(0)``: the one stand-in device, usable as a context manager."""

    def __init__(self, device=None):
        if (device or 0) != 0:
            raise RuntimeError(f"CUDA error: invalid device ordinal {device}")
        self.id = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def synchronize(self):
        pass


def _properties(device):
    return {"name": b"teachgrad CuPy stand-in (NumPy on the host)", "totalGlobalMem": 0}


# --------------------------------------------------------------------------- the module

# Names and keywords as in CuPy 14 (None: any keyword); test_cupy_surface.py checks them
# against the installed CuPy.
UFUNCS = [
    "abs",
    "add",
    "arccos",
    "arccosh",
    "arcsin",
    "arcsinh",
    "arctan",
    "arctan2",
    "arctanh",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "ceil",
    "copysign",
    "cos",
    "cosh",
    "divide",
    "equal",
    "exp",
    "exp2",
    "expm1",
    "fabs",
    "float_power",
    "floor",
    "floor_divide",
    "fmax",
    "fmin",
    "fmod",
    "greater",
    "greater_equal",
    "heaviside",
    "hypot",
    "invert",
    "isfinite",
    "isinf",
    "isnan",
    "left_shift",
    "less",
    "less_equal",
    "log",
    "log10",
    "log1p",
    "log2",
    "logaddexp",
    "logical_and",
    "logical_not",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "negative",
    "nextafter",
    "not_equal",
    "power",
    "reciprocal",
    "remainder",
    "right_shift",
    "sign",
    "signbit",
    "sin",
    "sinh",
    "sqrt",
    "square",
    "subtract",
    "tan",
    "tanh",
    "true_divide",
    "trunc",
]
FUNCTIONS = {
    "all": ("a", "axis", "keepdims", "out"),
    "allclose": ("a", "atol", "b", "equal_nan", "rtol"),
    "amax": ("a", "axis", "keepdims", "out"),
    "amin": ("a", "axis", "keepdims", "out"),
    "any": ("a", "axis", "keepdims", "out"),
    "arange": ("dtype", "start", "step", "stop"),
    "argmax": ("a", "axis", "dtype", "keepdims", "out"),
    "argmin": ("a", "axis", "dtype", "keepdims", "out"),
    "argsort": ("a", "axis", "kind"),
    "array": ("blocking", "copy", "dtype", "ndmin", "obj", "order", "subok"),
    "asarray": ("a", "blocking", "copy", "dtype", "order"),
    "ascontiguousarray": ("a", "dtype"),
    "asnumpy": ("a", "blocking", "order", "out", "stream"),
    "bincount": ("minlength", "weights", "x"),
    "broadcast_arrays": (),
    "broadcast_to": ("array", "shape"),
    "clip": ("a", "a_max", "a_min", "out"),
    "concatenate": ("axis", "casting", "dtype", "out", "tup"),
    "count_nonzero": ("a", "axis"),
    "cumprod": ("a", "axis", "dtype", "out"),
    "cumsum": ("a", "axis", "dtype", "out"),
    "diff": ("a", "append", "axis", "n", "prepend"),
    "append": ("arr", "axis", "values"),
    "searchsorted": ("a", "side", "sorter", "v"),
    "unique": ("ar", "axis", "equal_nan", "return_counts", "return_index", "return_inverse"),
    "trace": ("a", "axis1", "axis2", "dtype", "offset", "out"),
    "isin": ("assume_unique", "element", "invert", "test_elements"),
    "diagonal": ("a", "axis1", "axis2", "offset"),
    "dot": ("a", "b", "out"),
    "einsum": None,
    "empty": ("dtype", "order", "shape"),
    "empty_like": ("dtype", "order", "prototype", "shape", "subok"),
    "expand_dims": ("a", "axis"),
    "eye": ("M", "N", "dtype", "k", "order"),
    "flip": ("a", "axis"),
    "full": ("dtype", "fill_value", "order", "shape"),
    "full_like": ("a", "dtype", "fill_value", "order", "shape", "subok"),
    "isclose": ("a", "atol", "b", "equal_nan", "rtol"),
    "lib.stride_tricks.as_strided": ("shape", "strides", "x"),
    "linalg.qr": ("a", "mode"),
    "linspace": ("axis", "dtype", "endpoint", "num", "retstep", "start", "stop"),
    "matmul": ("axes", "axis", "casting", "dtype", "keepdims", "order", "out", "signature"),
    "max": ("a", "axis", "keepdims", "out"),
    "may_share_memory": ("a", "b", "max_work"),
    "mean": ("a", "axis", "dtype", "keepdims", "out"),
    "min": ("a", "axis", "keepdims", "out"),
    "moveaxis": ("a", "destination", "source"),
    "nan_to_num": ("copy", "nan", "neginf", "posinf", "x"),
    "nonzero": ("a",),
    "ones": ("dtype", "order", "shape"),
    "ones_like": ("a", "dtype", "order", "shape", "subok"),
    "outer": ("a", "b", "out"),
    "pad": None,
    "prod": ("a", "axis", "dtype", "keepdims", "out"),
    "put_along_axis": ("arr", "axis", "indices", "values"),
    "ravel": ("a", "order"),
    "repeat": ("a", "axis", "repeats"),
    "reshape": ("a", "copy", "newshape", "order"),
    "result_type": (),
    "roll": ("a", "axis", "shift"),
    "round": ("a", "decimals", "out"),
    "shape": ("a",),
    "sort": ("a", "axis", "kind"),
    "squeeze": ("a", "axis"),
    "stack": ("axis", "casting", "dtype", "out", "tup"),
    "std": ("a", "axis", "ddof", "dtype", "keepdims", "out"),
    "sum": ("a", "axis", "dtype", "keepdims", "out"),
    "swapaxes": ("a", "axis1", "axis2"),
    "take": ("a", "axis", "indices", "out"),
    "take_along_axis": ("a", "axis", "indices"),
    "tile": ("A", "reps"),
    "transpose": ("a", "axes"),
    "tril": ("k", "m"),
    "triu": ("k", "m"),
    "triu_indices": ("k", "m", "n"),
    "var": ("a", "axis", "ddof", "dtype", "keepdims", "out"),
    "where": ("condition", "x", "y"),
    "zeros": ("dtype", "order", "shape"),
    "zeros_like": ("a", "dtype", "order", "shape", "subok"),
}
METHODS = {  # of cupy.ndarray (get, set, item, tolist are the stand-in's own, above)
    "all": ("axis", "keepdims", "out"),
    "any": ("axis", "keepdims", "out"),
    "argmax": ("axis", "dtype", "keepdims", "out"),
    "argmin": ("axis", "dtype", "keepdims", "out"),
    "argsort": ("axis", "kind"),
    "astype": ("casting", "copy", "dtype", "order", "subok"),
    "clip": ("max", "min", "out"),
    "copy": ("order",),
    "cumprod": ("axis", "dtype", "out"),
    "cumsum": ("axis", "dtype", "out"),
    "diagonal": ("axis1", "axis2", "offset"),
    "dot": ("b", "out"),
    "fill": ("value",),
    "flatten": ("order",),
    "max": ("axis", "keepdims", "out"),
    "mean": ("axis", "dtype", "keepdims", "out"),
    "min": ("axis", "keepdims", "out"),
    "nonzero": (),
    "prod": ("axis", "dtype", "keepdims", "out"),
    "ravel": ("order",),
    "repeat": ("axis", "repeats"),
    "reshape": ("copy", "order"),
    "round": ("decimals", "out"),
    "sort": ("axis", "kind"),
    "squeeze": ("axis",),
    "std": ("axis", "ddof", "dtype", "keepdims", "out"),
    "sum": ("axis", "dtype", "keepdims", "out"),
    "swapaxes": ("axis1", "axis2"),
    "take": ("axis", "indices", "out"),
    "transpose": (),
    "var": ("axis", "ddof", "dtype", "keepdims", "out"),
    "view": ("dtype", "type"),
}
GENERATOR = {
    "integers": ("dtype", "endpoint", "high", "low", "size"),
    "random": ("dtype", "out", "size"),
    "standard_normal": ("dtype", "out", "size"),
    "uniform": ("dtype", "high", "low", "size"),
}
_OWN = {  # the stand-in's own versions of CuPy functions NumPy answers differently
    "asarray": asarray,
    "array": array,
    "asnumpy": asnumpy,
    "nonzero": nonzero,
    "allclose": allclose,
    "result_type": result_type,
    "shape": shape,
    "may_share_memory": may_share_memory,
    "take": take,
    "take_along_axis": take_along_axis,
    "put_along_axis": put_along_axis,
    "var": _spread("var"),
    "std": _spread("std"),
}


_NUMPY_NAMES = [
    "bool_",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "float16",
    "float32",
    "float64",
    "inf",
    "nan",
    "pi",
    "e",
    "newaxis",
]


def _build_module() -> types.SimpleNamespace:
    ns = types.SimpleNamespace(
        __name__="cupy_standin",
        **{name: getattr(numpy, name) for name in _NUMPY_NAMES},
        ndarray=ndarray,
        count_syncs=count_syncs,
        lib=types.SimpleNamespace(stride_tricks=types.SimpleNamespace()),
        linalg=types.SimpleNamespace(),
        random=types.SimpleNamespace(default_rng=Generator, Generator=Generator),
        cuda=types.SimpleNamespace(
            Device=Device,
            runtime=types.SimpleNamespace(
                getDeviceCount=lambda: 1, getDevice=lambda: 0, getDeviceProperties=_properties
            ),
        ),
    )
    for name in UFUNCS:
        setattr(ns, name, ufunc(name))
    for name, allowed in FUNCTIONS.items():
        function = _OWN.get(name) or _function(name, allowed)
        *path, last = name.split(".")  # (a dotted name lives in a submodule: linalg.qr)
        setattr(functools.reduce(getattr, path, ns), last, function)
    return ns


module = _build_module()
"""The stand-in for the ``cupy`` module (hand it to ``teachgrad._backend._cupy``)."""

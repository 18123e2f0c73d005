"""The backend seam: dtypes, devices, and which array library does the arithmetic.

Everything numerical in teachgrad happens on a *backend array*: a ``numpy.ndarray``
on the CPU or a ``cupy.ndarray`` on an NVIDIA GPU. This is the only module that
imports NumPy or CuPy; ops ask ``array_module(x)`` for the right one, so the same
op code runs on both.

What lives here: the ``dtype`` objects (``teachgrad.float32`` ...) and torch's type
promotion rules for them, the ``device`` type, lazy CuPy loading, transfers
between devices (and the checks a GPU reports late, at the next copy to the host),
NumPy's floating-point warnings turned off where torch is silent (``quiet``), and the
random generators behind ``manual_seed``.
What does not: anything about autograd.

    >>> import teachgrad as tg
    >>> tg.promote_types(tg.int64, tg.float32)
    teachgrad.float32
"""

from __future__ import annotations

import functools
import re

import numpy

try:  # NumPy 2's error-state internals: see _numpy_warnings_off
    from numpy._core import _ufunc_config
except ImportError:
    _ufunc_config = None

# --------------------------------------------------------------------------- dtypes


class dtype:
    """A tensor element type, like ``torch.dtype``.

    >>> import teachgrad as tg
    >>> tg.float64.is_floating_point, tg.float64.itemsize
    (True, 8)
    """

    __slots__ = (
        "name",
        "numpy",
        "is_floating_point",
        "is_complex",
        "is_signed",
        "itemsize",
        "_kind",
    )

    def __init__(self, name: str, np_dtype, kind: int):
        self.name = name
        self.numpy = numpy.dtype(np_dtype)
        self._kind = kind  # 0 bool, 1 integer, 2 floating: the promotion "category"
        self.is_floating_point = kind == 2
        self.is_complex = False
        self.is_signed = name != "bool"
        self.itemsize = self.numpy.itemsize

    def __repr__(self):
        return f"teachgrad.{self.name}"

    def __reduce__(self):  # dtypes are singletons, also after pickling
        return (_dtype_by_name, (self.name,))

    def to_real(self):
        return self


bool_ = dtype("bool", numpy.bool_, 0)
int32 = dtype("int32", numpy.int32, 1)
int64 = dtype("int64", numpy.int64, 1)
float16 = dtype("float16", numpy.float16, 2)
float32 = dtype("float32", numpy.float32, 2)
float64 = dtype("float64", numpy.float64, 2)
# Less common integer types still appear when users hand us NumPy data.
int8 = dtype("int8", numpy.int8, 1)
int16 = dtype("int16", numpy.int16, 1)
uint8 = dtype("uint8", numpy.uint8, 1)

ALL_DTYPES = (bool_, uint8, int8, int16, int32, int64, float16, float32, float64)
_FROM_NUMPY = {d.numpy: d for d in ALL_DTYPES}


def _dtype_by_name(name: str) -> dtype:
    return next(d for d in ALL_DTYPES if d.name == name)


def from_numpy_dtype(np_dtype) -> dtype:
    """The teachgrad dtype for a NumPy/CuPy dtype (float64 stays float64, as in torch)."""
    try:
        return _FROM_NUMPY[numpy.dtype(np_dtype)]
    except KeyError:
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{numpy.dtype(np_dtype).type.__name__}. The "
            "only supported types are: float64, float32, float16, int64, int32, int16, int8, "
            "uint8, and bool."
        ) from None


def as_dtype(d) -> dtype:
    """Accept a teachgrad dtype, a NumPy dtype or a Python type (float, int, bool)."""
    if isinstance(d, dtype):
        return d
    if d is float:
        return float64
    if d is int:
        return int64
    if d is bool:
        return bool_
    return from_numpy_dtype(d)


class _Defaults:  # process-wide, like torch's default dtype (and device, set below)
    float_dtype = float32


_defaults = _Defaults()


def get_default_dtype() -> dtype:
    """The dtype Python floats become (float32 unless changed), like torch.

    >>> import teachgrad as tg
    >>> tg.get_default_dtype()
    teachgrad.float32
    """
    return _defaults.float_dtype


def set_default_dtype(d) -> None:
    """Set the dtype of Python floats and float factories (float32 or float64).

    >>> import teachgrad as tg
    >>> tg.set_default_dtype(tg.float64); tg.tensor(1.5).dtype
    teachgrad.float64
    >>> tg.set_default_dtype(tg.float32)
    """
    if not isinstance(d, dtype):
        raise TypeError(
            "invalid dtype object: only floating-point types are supported as the default type\n"
            f"  Give a teachgrad dtype such as teachgrad.float64, not {d!r}."
        )
    if not d.is_floating_point:
        raise TypeError(
            f"only floating-point types are supported as the default type\n  {d} is not one."
        )
    _defaults.float_dtype = d


def promote_types(a: dtype, b: dtype) -> dtype:
    """The smallest dtype both ``a`` and ``b`` convert to without losing their category.

    >>> import teachgrad as tg
    >>> tg.promote_types(tg.int32, tg.int64), tg.promote_types(tg.bool, tg.float16)
    (teachgrad.int64, teachgrad.float16)
    """
    if a is b:
        return a
    if a._kind != b._kind:  # a higher category wins outright: int64 + float16 -> float16
        return a if a._kind > b._kind else b
    return from_numpy_dtype(numpy.promote_types(a.numpy, b.numpy))


def result_type(*operands) -> dtype:
    """torch's promotion for an op's operands: Tensors and Python scalars.

    Categories rank bool < integer < floating. Tensors with dimensions decide the
    dtype; a 0-d tensor or a Python number only matters when it is of a higher
    category than every dimensioned tensor (then a Python float gives the default
    dtype, a Python int gives int64). So ``float32_tensor * 2.5`` stays float32, and
    ``int_tensor * 2.5`` becomes float32.
    """
    dim_dt = zero_dt = scalar_dt = None
    for x in operands:
        d = getattr(x, "dtype", None)
        if isinstance(d, dtype):
            if x.ndim:
                dim_dt = d if dim_dt is None else promote_types(dim_dt, d)
            else:
                zero_dt = d if zero_dt is None else promote_types(zero_dt, d)
        else:
            s = scalar_dtype(x)
            if scalar_dt is None or s._kind > scalar_dt._kind:
                scalar_dt = s
    result = dim_dt
    for candidate in (zero_dt, scalar_dt):
        if candidate is not None and (result is None or candidate._kind > result._kind):
            result = candidate
    return result


def scalar_dtype(x) -> dtype:
    """The dtype a Python number becomes in a new tensor."""
    if isinstance(x, bool | numpy.bool_):
        return bool_
    if isinstance(x, int | numpy.integer):
        return int64
    if isinstance(x, float | numpy.floating):
        return _defaults.float_dtype
    raise TypeError(f"expected a Tensor or a Python number, but got {type(x).__name__}")


class _Named:
    """A constant known by its name, printed as ``teachgrad.<name>`` (one instance per name).

    >>> _Named("example")
    teachgrad.example
    """

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return f"teachgrad.{self.name}"

    def __reduce__(self):  # (the one instance, also after a pickle round trip)
        return self.name


class layout(_Named):
    """How a tensor's elements lie in memory, like ``torch.layout``. teachgrad has one:
    ``strided`` (dense, with a stride per dim); torch also has sparse layouts.

    >>> import teachgrad as tg
    >>> tg.zeros(2).layout
    teachgrad.strided
    """

    __slots__ = ()


strided = layout("strided")


class memory_format(_Named):
    """The order of a dense tensor's dims in memory, like ``torch.memory_format``:
    ``contiguous_format`` (row-major), ``channels_last`` (a 4-d (N, C, H, W) tensor with the
    channels fastest: each pixel's C values side by side), ``channels_last_3d`` (its 5-d
    sibling), or ``preserve_format`` (a copy keeps the order of its source).

    >>> import teachgrad as tg
    >>> tg.empty(1, 3, 2, 2, memory_format=tg.channels_last).stride()
    (12, 1, 6, 3)
    """

    __slots__ = ()


contiguous_format = memory_format("contiguous_format")
channels_last = memory_format("channels_last")
channels_last_3d = memory_format("channels_last_3d")
preserve_format = memory_format("preserve_format")


# --------------------------------------------------------------------------- devices


class device:
    """Where a tensor lives: ``device("cpu")``, ``device("cuda")`` or ``device("cuda:1")``.

    >>> import teachgrad as tg
    >>> tg.device("cuda:1").index, str(tg.device("cpu"))
    (1, 'cpu')
    """

    __slots__ = ("type", "index")

    def __init__(self, type, index: int | None = None):
        if isinstance(type, device):
            type, index = type.type, type.index
        elif isinstance(type, int):  # torch accepts a bare GPU ordinal
            type, index = "cuda", type
        elif isinstance(type, str):
            type, index = _parse_device_string(type, index)
        else:
            raise TypeError(
                f"device() received an invalid combination of arguments - got "
                f"({_type_name(type)}), but expected one of:\n * (teachgrad.device device)\n"
                " * (str type, int index = -1)\n"
            )
        if index is not None and index < 0:
            raise RuntimeError("Device index must not be negative")
        if type not in ("cpu", "cuda"):
            raise RuntimeError(
                f"Expected one of cpu, cuda device type at start of device string: {type}"
            )
        if type == "cpu" and index not in (None, 0):
            raise RuntimeError(f"CPU device index must be 0 or None, got {index}")
        self.type = type
        self.index = index

    def __eq__(self, other):
        if isinstance(other, str):
            other = device(other)
        return isinstance(other, device) and (self.type, self.index) == (other.type, other.index)

    def __hash__(self):
        return hash((self.type, self.index))

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __repr__(self):
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"


def _parse_device_string(text: str, index):
    """``"cuda:1"`` -> ``("cuda", 1)``: a name, then maybe ``:`` and an index without
    leading zeros; anything else is torch's "Invalid device string"."""
    match = _DEVICE_STRING.fullmatch(text)
    if match is None:
        raise RuntimeError(f"Invalid device string: '{text}'")
    name, number = match.groups()
    if number is None:
        return name, index
    if index is not None:
        raise RuntimeError(
            f"type (string) must not include an index because index was passed explicitly: {text}"
        )
    return name, int(number)


_DEVICE_STRING = re.compile(r"([a-zA-Z_]+)(?::([1-9][0-9]*|0))?")


def _type_name(value) -> str:
    cls = type(value)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"


CPU = device("cpu")


_defaults.device = CPU


def get_default_device() -> device:
    """The device of new tensors made without ``device=`` (the CPU unless changed), like torch.

    >>> import teachgrad as tg
    >>> tg.get_default_device()
    device(type='cpu')
    """
    return _defaults.device


def set_default_device(d) -> None:
    """Make ``d`` the device of new tensors made without ``device=`` (``tensor``, ``zeros``,
    ``randn`` ...), like ``torch.set_default_device``; ``None`` means the CPU again.
    ``from_numpy`` still shares the NumPy array's memory, on the CPU.

    >>> import teachgrad as tg
    >>> tg.set_default_device("cpu"); tg.zeros(1).device
    device(type='cpu')
    """
    _defaults.device = CPU if d is None else as_device(d)


def as_device(d) -> device:
    """``d`` as a ``device``; ``None`` is the default device."""
    if d is None:
        return _defaults.device
    return d if isinstance(d, device) else device(d)


# --------------------------------------------------------------------------- array modules

_cupy = None


def cupy():
    """Import CuPy on first use, with an error that says how to get it."""
    global _cupy
    if _cupy is None:
        try:
            import cupy as cp  # noqa: PLC0415 - lazy on purpose: CPU users never pay for it
        except ImportError as exc:
            raise RuntimeError(
                "CUDA tensors need CuPy, which is not installed. Install the GPU extra with "
                "`pip install -e .[gpu]` (CUDA 12) or `.[gpu-cuda13]`, on a machine with an NVIDIA GPU. "
                "Check with teachgrad.cuda.is_available()."
            ) from exc
        _cupy = cp
    return _cupy


def cuda_is_available() -> bool:
    try:
        return cupy().cuda.runtime.getDeviceCount() > 0
    except Exception:  # no CuPy, no driver, or no device: all mean "no"
        return False


def array_module(x):
    """``numpy`` or ``cupy``: the module that computes on ``x`` (an array, Tensor or device).

    >>> import teachgrad as tg
    >>> tg._backend.array_module(tg.zeros(2)).__name__
    'numpy'
    """
    data = getattr(x, "_data", x)  # (NumPy's array, the common case, is tested first)
    return numpy if type(data) is numpy.ndarray or data is numpy.ndarray else _module_of(data)


def _module_of(data):
    """``array_module`` of anything else: a device, a NumPy subclass or scalar, CuPy's."""
    if isinstance(data, device):
        return numpy if data.type == "cpu" else cupy()
    # `is`, never `in`/`==`: comparing a CuPy array with a type runs elementwise and raises
    if isinstance(data, numpy.ndarray | numpy.generic) or data is numpy.generic:
        return numpy
    return cupy()


def strided_view(x, shape, strides):
    """A view of ``x``'s memory with any ``shape`` and byte ``strides`` (no copy, no checks:
    the caller keeps it inside ``x``'s memory). Writable when ``x`` is.

    >>> import numpy as np
    >>> strided_view(np.arange(3.0), (2, 3), (0, 8))  # each row: the same three numbers
    array([[0., 1., 2.],
           [0., 1., 2.]])
    """
    if type(x) is numpy.ndarray and x.flags.c_contiguous:
        # on x's buffer directly: ten times quicker than as_strided's generic route
        return numpy.ndarray(shape, x.dtype, x, 0, strides)
    return array_module(x).lib.stride_tricks.as_strided(x, shape, strides)


def expanded(x, shape):
    """``x`` seen with ``shape``, as torch's ``expand``: stride 0 along the dims it repeats
    (its size-1 dims and new leading ones), no copy. Writable when ``x`` is, like torch's
    (in-place ops refuse only the writes that would collide); ``broadcast_to``'s view is
    read-only, and twice as slow to make (it builds an iterator).

    >>> import numpy as np
    >>> expanded(np.array([[1.0], [2.0]]), (2, 3)).strides
    (8, 0)
    """
    lead = len(shape) - x.ndim
    kept = zip(x.strides, x.shape, shape[lead:], strict=True)
    return strided_view(x, shape, (0,) * lead + tuple(0 if n != m else s for s, n, m in kept))


def with_empty_strides(data):
    """``data``, or, when it is a fresh array without elements, the same empty array with the
    strides torch gives a fresh tensor of that shape (row-major, a dim of size 0 counting as
    1: ``(3, 1)`` for shape ``(0, 3)``).

    NumPy gives every dim of an empty array the stride 0, and its views inherit those 0s, so
    ``zeros(0, 3).t().stride()`` would be ``(0, 0)`` where torch says ``(1, 3)``.

    >>> import numpy as np
    >>> with_empty_strides(np.zeros((0, 3))).T.strides
    (8, 24)
    """
    if data.size or data.base is not None:
        return data  # (the usual case: one attribute read)
    strides, step = [], data.itemsize
    for n in reversed(data.shape):
        strides.append(step)
        step *= max(n, 1)
    return strided_view(data, data.shape, tuple(reversed(strides)))


def dense(a) -> bool:
    """Non-overlapping and dense: some permutation of the dims is contiguous (torch's test
    for keeping an array's strides, e.g. in ``zeros_like`` or a leaf's ``.grad``).

    >>> import numpy as np
    >>> dense(np.zeros((2, 3)).T), dense(np.zeros((2, 3))[:, ::2])
    (True, False)
    """
    dims = sorted((s, d) for s, d in zip(a.strides, a.shape, strict=False) if d != 1)
    expected = a.itemsize
    for stride, size in dims:
        if stride != expected:
            return False
        expected *= size
    return True


def empty_strided(like, strides, dtype=None):
    """An uninitialised array of ``like``'s shape and dtype (or ``dtype``) with exactly these
    byte strides (torch's ``empty_strided``; NumPy's ``empty_like`` renumbers the strides of
    size-1 dims). For the strides of a dense array, which never step outside ``like.size``
    elements.

    >>> import numpy as np
    >>> empty_strided(np.zeros((3, 1, 2)), (8, 48, 24)).strides
    (8, 48, 24)
    """
    xp, dtype = array_module(like), like.dtype if dtype is None else dtype
    if min(strides, default=0) < 0:  # (NumPy's reversed views: torch has none to copy)
        return xp.empty_like(like, dtype)
    return strided_view(xp.empty(like.size, dtype), like.shape, strides)


def strides_for(array, itemsize) -> tuple:
    """``array``'s layout as byte strides for elements of ``itemsize`` bytes: the same layout
    in another dtype.

    >>> import numpy as np
    >>> strides_for(np.zeros((2, 3)).T, 4)
    (4, 12)
    """
    return tuple(s // array.itemsize * itemsize for s in array.strides)


def device_of(array) -> device:
    """The device an array lives on."""
    return CPU if isinstance(array, numpy.ndarray) else _cuda_device(array.device.id)


@functools.cache
def _cuda_device(index: int) -> device:
    """``device("cuda", index)``, made once: it is asked for several times per op on a GPU."""
    return device("cuda", index)


def device_type_of(array_type) -> str:
    """ "cpu" for NumPy's array type, "cuda" for CuPy's (when only the type is kept)."""
    return "cpu" if array_type.__module__.startswith("numpy") else "cuda"


def is_writeable(array) -> bool:
    """False for a read-only NumPy array (``broadcast_to``'s, say); CuPy has no read-only
    arrays, and its ``flags`` has no ``writeable``."""
    return getattr(array.flags, "writeable", True)


def address(array) -> int:
    """Where an array's first element is in memory (NumPy or CuPy).

    (``ctypes.data``, not ``__array_interface__``: on NumPy 2.4 each read of the latter
    keeps about 4 bytes, which a training loop reading it per step would pile up.)

    >>> a = numpy.zeros(4); address(a[1:]) - address(a)
    8
    """
    if isinstance(array, numpy.ndarray):
        return array.ctypes.data
    return array.data.ptr


def to_device(array, dev: device):
    """Copy ``array`` to ``dev`` (returns it unchanged when it is already there)."""
    if device_of(array) == dev or (
        dev.type == "cuda" and dev.index is None and not isinstance(array, numpy.ndarray)
    ):
        return array
    if dev.type == "cpu":
        return to_host(array)
    cp = cupy()
    with cp.cuda.Device(dev.index or 0):
        return cp.asarray(array)


def pinned_copy(array):
    """A copy of a host array in page-locked ("pinned") memory, which the GPU copies from
    faster; needs CuPy and a GPU, like torch's pin_memory needs CUDA."""
    if not cuda_is_available():
        raise RuntimeError(
            "Cannot access accelerator device when none is available.\n  Pinned memory only "
            "helps copies to a GPU; this machine has no CUDA GPU (or CuPy is not installed)."
        )
    if not isinstance(array, numpy.ndarray):
        raise RuntimeError(
            "cannot pin 'torch.cuda.FloatTensor' only dense CPU tensors can be pinned"
        )
    import cupyx  # noqa: PLC0415 - part of CuPy, loaded only when pinning

    out = cupyx.empty_pinned(array.shape, array.dtype)
    out[...] = array
    return out


def check_cuda_index(dev: device) -> None:
    if dev.type == "cuda":
        count = cupy().cuda.runtime.getDeviceCount() if cuda_is_available() else 0
        if count == 0:
            raise RuntimeError(
                "Found no NVIDIA driver or GPU on your system: CUDA tensors can't be created here. "
                "teachgrad.cuda.is_available() tells whether a GPU is usable."
            )
        if (dev.index or 0) >= count:
            raise RuntimeError(
                f"CUDA error: invalid device ordinal {dev.index} (this machine has {count} GPU(s))"
            )


def make_array(data, np_dtype, dev: device):
    """A new backend array holding ``data`` on ``dev``."""
    if dev.type == "cpu":
        return numpy.array(data, dtype=np_dtype)
    check_cuda_index(dev)
    cp = cupy()
    with cp.cuda.Device(dev.index or 0):
        return cp.array(data, dtype=np_dtype)


def on_device(dev: device):
    """Array module for ``dev``, with the right CUDA device made current."""
    if dev.type == "cpu":
        return numpy, _NULL_CONTEXT
    check_cuda_index(dev)
    cp = cupy()
    return cp, cp.cuda.Device(dev.index or 0)


class _NullContext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NULL_CONTEXT = _NullContext()


def as_array(x):
    """``x`` itself if it is a backend array, else a 0-d NumPy array (for NumPy scalars)."""
    if type(x) is numpy.ndarray or _cupy is not None and isinstance(x, _cupy.ndarray):
        return x
    return numpy.asarray(x)


def is_array(x) -> bool:
    return isinstance(x, numpy.ndarray) or (_cupy is not None and isinstance(x, _cupy.ndarray))


# --------------------------------------------------------------------------- where devices round otherwise
#
# NumPy's kernels and torch's CPU kernels agree on the two cases below; CuPy's GPU kernels
# do not (found by the first GPU runs). The tests' CuPy stand-in computes them as CuPy does.


def tie_keeps_first(name: str, x, y, out=None):
    """``maximum(x, y)`` or ``minimum(x, y)`` (``name``) as torch picks: ``x`` where the two
    are equal, which only the sign of a zero shows (``relu(-0.0)``, ``max(-0.0, 0)`` in
    torch, is ``-0.0``). NumPy returns its *second* argument at a tie: there it is one call
    with the arguments swapped. CUDA's max/min choose by their own rule (``+0.0`` on an
    H200): there the tie is decided outright (NaN, equal to nothing, still wins).

    >>> tie_keeps_first("maximum", numpy.array([-0.0, -1.0]), 0.0)
    array([-0.,  0.])
    """
    xp = array_module(x if hasattr(x, "dtype") else y)  # (one may be a number)
    if xp is numpy:
        return getattr(numpy, name)(y, x, out=out)
    result = xp.where(x == y, x, getattr(xp, name)(x, y))
    if out is None:
        return result
    out[...] = result
    return out


def floor_quotient(x, y):
    """Float ``x // y`` as torch (and NumPy) round it: the floor of the *exact* quotient,
    found from C's ``fmod``, so ``1. // 0.1`` is 9 (0.1 is a little over a tenth). CuPy's
    floor_divide takes the floor of the rounded ``x / y``, 10. Off the CPU, torch's steps:
    the quotient of what fmod leaves, one less where the remainder's sign is not the
    divisor's, floored (a quotient that rounding left just under a whole number is rounded
    up), a zero keeping the sign of ``x / y``, and a division by zero IEEE's ``x / y``.

    >>> floor_quotient(numpy.array([1.0, -7.5]), 0.1)
    array([  9., -75.])
    """
    xp = array_module(x if hasattr(x, "dtype") else y)  # (one may be a number)
    if xp is numpy:
        return numpy.floor_divide(x, y)
    ratio = x / y
    mod = xp.fmod(x, y)
    q = (x - mod) / y
    q = xp.where((mod != 0) & ((y < 0) != (mod < 0)), q - 1, q)
    floor = xp.floor(q)
    floor = xp.where(q - floor > 0.5, floor + 1, floor)
    floor = xp.where(q == 0, xp.copysign(xp.zeros_like(ratio), ratio), floor)
    return xp.where(y == 0, ratio, floor)


def stable_argsort(x, axis: int):
    """The indices that sort ``x`` along ``axis``, equal values in their order (a stable
    sort, as torch's CPU sort is). NumPy sorts stably when asked; CuPy always does (and
    accepts no ``kind``).

    >>> stable_argsort(numpy.array([2, 1, 2, 1]), 0)
    array([1, 3, 0, 2])
    """
    if array_module(x) is numpy:
        return numpy.argsort(x, axis=axis, kind="stable")
    return array_module(x).argsort(x, axis=axis)


# --------------------------------------------------------------------------- NumPy's warnings


def quiet(fn):
    """Decorator: run ``fn`` with NumPy's floating-point warnings off.

    NumPy warns ("divide by zero encountered in log", "invalid value encountered in divide",
    "overflow encountered in exp") where it makes inf or nan; torch makes the same values
    silently, so teachgrad's ops must not warn either. This is not done in ``Builtin.apply``
    but only around the forward of the ops that can make inf/nan (``log(0)``, ``1 / 0``,
    ``sqrt(-1)``, ``inf @ 0``) and, once, around a whole backward pass (``engine._run``).
    ``add``, ``sub``, ``mul`` and ``exp``, the hot path (bench.py's chain), are left out:
    they warn only where an input is inf or the result overflows.

    How: the speed trick of ``_numpy_warnings_off``.

    >>> import numpy
    >>> quiet(numpy.log)(numpy.zeros(1))
    array([-inf])
    """
    switch = _numpy_warnings_off()
    if switch is None:  # (a NumPy without the context variable: its public, slower way)
        return numpy.errstate(all="ignore")(fn)
    state, ignore = switch

    @functools.wraps(fn)
    def quietly(*args, **kwargs):
        token = state.set(ignore)
        try:
            return fn(*args, **kwargs)
        finally:
            state.reset(token)

    return quietly


@functools.cache
def _numpy_warnings_off():
    """``(NumPy's error-state context variable, the state "ignore all")``, or None.

    ``numpy.errstate(all="ignore")`` sets that context variable too, but builds the state
    object anew at every call: 1.7 µs, which on the ops of a small training step (two
    linear layers, log_softmax, nll_loss, their backward: about 9 quiet calls) cost 4% of
    the step (callgrind). Built once here and only set and reset, a call costs about
    0.3 µs. The names are NumPy's internals (NumPy 2), hence the fallback to errstate.
    """
    try:
        return _ufunc_config._extobj_contextvar, _ufunc_config._make_extobj(all="ignore")
    except (AttributeError, TypeError):
        return None


# --------------------------------------------------------------------------- waiting for the GPU
#
# A GPU runs asynchronously: an op only queues its kernels, and the CPU goes on to the next
# op. The CPU waits for the GPU only when it needs a value from it, when data is copied to
# the host. So a check on GPU data ("is some target out of range?") is no Python ``if``:
# reading its answer would make the CPU wait, on every call. Like an assert in a CUDA kernel,
# ``device_assert`` leaves the answer on the GPU; ``to_host``, where the CPU waits anyway,
# reads every pending answer with one wait and raises torch's CUDA error for a failed one.

_pending_checks: dict = {}  # what a failed check means (a sentence) -> 0-d GPU bool: failed?


def device_assert(failed, cpu_error, meaning: str) -> None:
    """Fail when the 0-d boolean array ``failed`` is true, the way torch's kernels assert.

    On the CPU it raises ``cpu_error()`` at once (the data is at hand, so the error can
    name the bad value). On a GPU it only records ``failed``: the next ``to_host`` raises
    torch's ``CUDA error: device-side assert triggered`` with ``meaning`` if it was true.
    Checks with the same meaning share one flag (``logical_or``), so however many calls
    run before the CPU next waits, what is pending stays as small as the list of checks.

    >>> import numpy as np
    >>> device_assert(np.bool_(True), lambda: IndexError("Target 5 is out of bounds."), "")
    Traceback (most recent call last):
    IndexError: Target 5 is out of bounds.
    """
    if isinstance(failed, numpy.ndarray | numpy.generic):  # NumPy's: no waiting to read it
        if failed:
            raise cpu_error()
        return
    earlier = _pending_checks.get(meaning)
    _pending_checks[meaning] = failed if earlier is None else cupy().logical_or(earlier, failed)


def raise_pending_device_errors() -> None:
    """Read every check ``device_assert`` left on a GPU (one wait for all) and forget them;
    raise torch's CUDA error, with what went wrong, if one failed.

    >>> raise_pending_device_errors()  # nothing pending: no wait, nothing raised
    """
    if not _pending_checks:
        return
    meanings, flags = list(_pending_checks), list(_pending_checks.values())
    _pending_checks.clear()  # reported once: the next correct call starts afresh
    failed = [m for m, hit in zip(meanings, cupy().stack(flags).tolist()) if hit]
    if failed:
        raise RuntimeError(
            "CUDA error: device-side assert triggered\n  "
            + "\n  ".join(failed)
            + "\n  A GPU runs asynchronously, so this is reported late: where the CPU next "
            "waited for the GPU (here), not at the op. For the error at the op, with the bad "
            "value named, run it on the CPU, or call tg.cuda.synchronize() right after it."
        )


def to_host(array):
    """``array`` as a NumPy array: itself on the CPU, a copy from a GPU.

    Copying from a GPU makes the CPU wait until the GPU has computed the array, so reads
    of GPU data go through here (``.cpu()``, ``print``, ``assert_close``), and a failed
    ``device_assert`` is reported here.

    >>> to_host(numpy.arange(3))
    array([0, 1, 2])
    """
    if isinstance(array, numpy.ndarray | numpy.generic):  # NumPy's (an array or a scalar)
        return array
    raise_pending_device_errors()
    return array.get()


# --------------------------------------------------------------------------- random numbers


class _Generators:
    """One NumPy generator (and one per CuPy device), reseeded by ``manual_seed``."""

    def __init__(self):
        self.seed = 0
        self.cpu = numpy.random.default_rng(numpy.random.SeedSequence().entropy)
        self.cuda = {}

    def for_device(self, dev: device):
        if dev.type == "cpu":
            return self.cpu
        index = dev.index or 0
        if index not in self.cuda:
            cp = cupy()
            with cp.cuda.Device(index):
                self.cuda[index] = cp.random.default_rng(self.seed + index)
        return self.cuda[index]


generators = _Generators()


def manual_seed(seed: int) -> None:
    """Seed every generator, so ``randn``/``rand``/``randint``/dropout repeat exactly.

    >>> import teachgrad as tg
    >>> tg.manual_seed(0); a = tg.randn(3); tg.manual_seed(0); bool((a == tg.randn(3)).all())
    True
    """
    seed = int(seed)
    if not -(2**63) <= seed < 2**64:
        raise ValueError(
            "Overflow when unpacking long long\n  A seed is a 64-bit number: from -2**63 to 2**64 - 1."
        )
    seed %= 2**64  # torch reads a negative seed as the unsigned 64-bit number of the same bits
    generators.seed = seed
    generators.cpu = numpy.random.default_rng(seed)
    generators.cuda = {}


def numpy_module():
    """NumPy itself, for code that must produce host data (printing, ``.numpy()``)."""
    return numpy

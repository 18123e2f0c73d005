"""Functions that create tensors: from data, filled, ranges, random.

Every factory takes ``dtype``, ``device`` and ``requires_grad`` like torch's.
Python floats become the default dtype (float32), Python ints int64.

Bad arguments are refused before anything is made, with torch's errors: a wrong type
as torch's argument parser words it (``_arguments.py``), a negative or too large size,
a range that does not end, data that is not a rectangular grid of numbers.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).shape, tg.arange(3), tg.tensor([1, 2]).dtype
    (teachgrad.Size([2, 3]), tensor([0, 1, 2]), teachgrad.int64)
"""

from __future__ import annotations

import math
import warnings

from . import _backend
from ._arguments import checked, given, parse
from ._backend import as_device, as_dtype, get_default_dtype, quiet
from ._grad_state import state as _grad_state
from ._layout import format_strides, preserved_strides, with_strides
from ._out import creation_out
from ._profiling import recorded_as
from ._profiling import state as _profiling
from ._tensor import Size, Tensor, _new, new_counter, type_name

_INT64_MAX = 2**63 - 1


def _finish(data, requires_grad=False, name=None) -> Tensor:
    t = _new(Tensor)
    t._data = data if data.size else _backend.with_empty_strides(data)
    t._counter = new_counter()
    if _grad_state.inference:
        t._inference = True
    if requires_grad:
        if data.dtype.kind != "f":
            raise RuntimeError(
                "Only Tensors of floating point and complex dtype can require gradients\n"
                f"  This tensor would be {_backend.from_numpy_dtype(data.dtype)}; ask for a float "
                "dtype, e.g. dtype=tg.float32."
            )
        t.requires_grad = True
    if name is not None:
        t.name = name
    return t


# --------------------------------------------------------------------------- sizes and memory


def _check_sizes(fn: str, shape: tuple) -> None:
    """torch's refusal of a negative size (``zeros`` words it its own way)."""
    for s in shape:
        if s < 0:
            if fn == "zeros":
                raise RuntimeError("zeros: Dimension size must be non-negative.")
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(shape)}"
            )


def _allocate(make, shape: tuple, dt, dev, kernel=None, like=False):
    """``make()``: the new array of ``shape``, or torch's error when no memory can hold it.

    A size whose bytes do not fit in an int64 is refused before asking for memory; a
    request the machine refuses (NumPy's or CuPy's MemoryError) becomes torch's RuntimeError.
    Inside a ``profile()``, with torch's ``kernel`` that writes the values (``aten::fill_``
    ...), the events of torch's steps too (``_made_in_steps``; ``like``: a ``*_like`` maker).
    """
    numel = math.prod(shape)
    if numel and numel * dt.itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")
    try:
        return _made_in_steps(make, kernel, like) if _profiling.active else make()
    except MemoryError:
        raise RuntimeError(_out_of_memory(numel * dt.itemsize, shape, dt, dev)) from None


def _made_in_steps(make, kernel: str, like: bool):
    """``make()``, with the op events of the steps torch's kernel takes: the memory
    (``aten::empty``; for a ``*_like`` maker ``aten::empty_like`` around
    ``aten::empty_strided``), then ``kernel`` writing the values. NumPy makes memory and
    values in one call, timed as the memory: the kernel's event marks its step (as torch's
    profile shows it: its test_profiler_seq_nr looks for an ``aten::empty`` in every op).

    >>> import teachgrad as tg
    >>> with tg.autograd.profiler.profile() as prof:
    ...     _ = tg.ones(2)
    >>> [(e.name, [c.name for c in e.cpu_children]) for e in prof.function_events][0]
    ('aten::ones', ['aten::empty', 'aten::fill_'])
    """
    record = _profiling.recorder.op
    memory = (lambda: record("aten::empty_strided", make, (), {})) if like else make
    if kernel is None:  # (empty and empty_like: the memory is all there is to make)
        return memory()
    data = record("aten::empty_like" if like else "aten::empty", memory, (), {})
    record(kernel, lambda: data, (), {})
    return data


def _out_of_memory(nbytes: int, shape: tuple, dt, dev) -> str:
    where = "CUDA out of memory" if dev.type == "cuda" else "can't allocate memory"
    return (
        f"{where}: you tried to allocate {nbytes} bytes. Error code 12 (Cannot allocate memory)\n"
        f"  A {dt} tensor of shape {tuple(shape)} needs {nbytes / 2**30:.1f} GiB on {dev}."
    )


def _options(fn: str, args: tuple, dtype, device, requires_grad, **more) -> dict:
    """``fn``'s positional ``args`` by name, after torch's checks of every argument."""
    return parse(fn, args, given(dtype=dtype, device=device, requires_grad=requires_grad, **more))


# --------------------------------------------------------------------------- from data


def _is_sequence(item) -> bool:
    """A list, tuple or range: what torch reads as one more dimension (not a string)."""
    return isinstance(item, list | tuple | range)


def _infer_dtype(data):
    """The dtype torch infers for nested Python data: bool < int64 < default float."""
    if isinstance(data, Tensor):
        return data.dtype
    if _backend.is_array(data) or hasattr(data, "dtype") and hasattr(data, "shape"):
        return _backend.from_numpy_dtype(data.dtype)
    if isinstance(data, str | bytes):
        raise TypeError(f"new(): invalid data type '{type(data).__name__}'")
    _refuse_strings(data)
    found = None  # each number's dtype, promoted together as torch does
    stack = [data]
    while stack:
        item = stack.pop()
        if _is_sequence(item):
            stack.extend(item)
            continue
        if isinstance(item, Tensor):
            d = item.dtype
        elif hasattr(item, "dtype"):  # a NumPy scalar: its own dtype (np.float64 too)
            d = _backend.from_numpy_dtype(item.dtype)
        elif isinstance(item, bool):
            d = _backend.bool_
        elif isinstance(item, int):
            d = _backend.int64
        elif isinstance(item, float):
            d = get_default_dtype()
        elif isinstance(item, str | bytes):
            raise TypeError(f"new(): invalid data type '{type(item).__name__}'")
        else:
            raise RuntimeError(f"Could not infer dtype of {type_name(item)}")
        found = d if found is None else _backend.promote_types(found, d)
    return get_default_dtype() if found is None else found  # (tensor([]) is float, as torch)


def _refuse_strings(data) -> None:
    """torch reads the shape down the first elements: a string there is one dimension too many."""
    while _is_sequence(data) and len(data):
        data = data[0]
        if isinstance(data, str):
            raise ValueError("too many dimensions 'str'")


def _plain(data, kind="f"):
    """Nested data with Tensors replaced by host values. For an integer or bool dtype (its
    NumPy ``kind``), torch's TypeError for a NumPy scalar it can't read as an integer."""
    if isinstance(data, Tensor):
        return _number_of(data)
    if _is_sequence(data):
        return [_plain(d, kind) for d in data]
    if type(data) in _NOT_WHOLE.get(kind, ()):
        raise TypeError(
            f"'numpy.{type(data).__name__}' object cannot be interpreted as an integer\n  "
            "Convert it first: int(x), or build the tensor as float and call .long()."
        )
    return data


def _number_of(t):
    """A tensor inside nested data, read as torch reads it: one number (``[tg.ones(1)]`` is
    ``tensor([1.])``, not ``[[1.]]``), with torch's warning when it requires grad."""
    if t.numel() != 1:
        raise ValueError(
            "only one element tensors can be converted to Python scalars\n  Inside a list a "
            f"tensor stands for one number; this one has shape {tuple(t.shape)}: stack tensors "
            "with tg.stack instead."
        )
    if t.requires_grad:
        warnings.warn(
            "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
            "behavior.\nConsider using tensor.detach() first.",
            UserWarning,
            stacklevel=4,
        )
    return _backend.to_host(t._data).reshape(()).item()


_np = _backend.numpy_module()
# NumPy scalars that are no Python number and have no __index__: torch refuses them for an
# integer dtype (and the floats for bool); a NumPy float64 is a Python float, and its ints
# have __index__
_NOT_WHOLE = {
    "i": {_np.float16, _np.float32, _np.longdouble, _np.bool_},
    "u": {_np.float16, _np.float32, _np.longdouble, _np.bool_},
    "b": {_np.float16, _np.float32, _np.longdouble},
}


def _nested_shape(data) -> list:
    """The shape torch reads from nested data: the lengths down the first elements."""
    shape = []
    while _is_sequence(data):
        shape.append(len(data))
        if not data:
            break
        data = data[0]
    return shape


def _check_grid(data, shape, dim, dt) -> None:
    """torch's error for the first place where nested data is not a grid of ``shape``."""
    if dim == len(shape):
        if _is_sequence(data):
            kind = type(data).__name__
            if dt.is_floating_point:
                raise TypeError(f"must be real number, not {kind}")
            raise TypeError(f"'{kind}' object cannot be interpreted as an integer")
        return
    if not _is_sequence(data):
        raise TypeError("not a sequence")
    if len(data) != shape[dim]:
        raise ValueError(
            f"expected sequence of length {shape[dim]} at dim {dim} (got {len(data)})\n"
            "  Nested lists make a tensor only when they are rectangular: every list at one "
            "depth must be as long as the first."
        )
    for item in data:
        _check_grid(item, shape, dim + 1, dt)


def _from_nested(data, dt, dev):
    """A new array holding nested Python data, or torch's error for data it can't hold."""
    integers = dt.numpy.kind in "iu"
    if integers and isinstance(data, float) and not math.isfinite(data):
        raise _cannot_hold(dt)  # (NumPy makes some number of a lone NaN)
    plain = _plain(data, dt.numpy.kind)
    try:
        return _backend.make_array(plain, dt.numpy, dev)
    except OverflowError:
        beyond_int64 = any(
            isinstance(v, int) and not -_INT64_MAX - 1 <= v <= _INT64_MAX for v in _leaves(data)
        )
        if beyond_int64:  # (torch reads every Python int as an int64 first)
            raise ValueError("Overflow when unpacking long long") from None
        raise _cannot_hold(dt) from None
    except (ValueError, TypeError):  # NumPy refuses ragged data: say where, as torch does
        if integers and any(isinstance(v, float) and math.isnan(v) for v in _leaves(data)):
            raise _cannot_hold(dt) from None  # (NumPy's words: "cannot convert float NaN")
        shape = _nested_shape(data)
        if math.prod(shape):
            _check_grid(data, shape, 0, dt)
        xp, where = _backend.on_device(dev)
        with where:  # (torch accepts ragged data that holds no numbers: [[], [1]])
            return xp.empty(tuple(shape), dt.numpy)


def _cannot_hold(dt) -> RuntimeError:
    return RuntimeError(
        f"value cannot be converted to type {dt.name} without overflow\n  A {dt} holds "
        "whole numbers within its range: not inf, NaN or larger numbers."
    )


def _leaves(data):
    """The numbers in nested lists and tuples (of an error's data: it may be large)."""
    if _is_sequence(data) and not isinstance(data, Tensor):
        for item in data:
            yield from _leaves(item)
    else:
        yield data


@checked  # (a missing argument in torch's words)
def tensor(
    data, *, dtype=None, device=None, requires_grad=False, pin_memory=False, name=None
) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays).

    >>> import teachgrad as tg
    >>> tg.tensor([[1, 2], [3, 4]], dtype=tg.float64, requires_grad=True)
    tensor([[1., 2.],
            [3., 4.]], dtype=teachgrad.float64, requires_grad=True)
    """
    options = dict(dtype=dtype, device=device, pin_memory=pin_memory)
    parse("tensor", (data,), {**given(**options), "requires_grad": requires_grad})
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() "
            "or sourceTensor.detach().clone().requires_grad_(True), rather than "
            "teachgrad.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    dt = as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    dev = (
        as_device(device)
        if device is not None
        else (data.device if isinstance(data, Tensor) else _backend.get_default_device())
    )
    return _finish(_array_from(data, dt, dev), requires_grad, name)


@quiet  # (a number beyond the dtype's range becomes inf, silently as in torch: NumPy warns)
def _array_from(data, dt, dev):
    """A new array of ``dt`` on ``dev`` holding a copy of ``data`` (a Tensor, an array, or
    numbers in nested lists)."""
    if isinstance(data, Tensor):
        data = data._data
    if _backend.is_array(data):
        return _backend.to_device(data, dev).astype(dt.numpy, copy=True)
    return _from_nested(data, dt, dev)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array (or Tensor) when it can.

    >>> import numpy as np, teachgrad as tg
    >>> a = np.zeros(2); t = tg.as_tensor(a); a[0] = 5; t
    tensor([5., 0.], dtype=teachgrad.float64)
    """
    parse("as_tensor", (data,), given(dtype=dtype, device=device))
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if _backend.is_array(data):
        dt = as_dtype(dtype) if dtype is not None else _backend.from_numpy_dtype(data.dtype)
        # (torch: NumPy data goes to the default device, a GPU array stays where it is)
        on_host = isinstance(data, _backend.numpy_module().ndarray)
        dev = as_device(device if device is not None or on_host else _backend.device_of(data))
        array = _backend.to_device(data, dev)
        return _finish(array if array.dtype == dt.numpy else _array_from(array, dt, dev))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array.

    >>> import numpy as np, teachgrad as tg
    >>> tg.from_numpy(np.arange(3))
    tensor([0, 1, 2])
    """
    if not isinstance(array, _backend.numpy_module().ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _backend.from_numpy_dtype(array.dtype)
    return _finish(array)


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with another library's array or tensor (NumPy, CuPy, torch ...)
    through the DLPack protocol: CPU memory becomes a CPU tensor, CUDA memory a CUDA tensor.

    >>> import numpy as np, teachgrad as tg
    >>> a = np.arange(3.0); t = tg.from_dlpack(a); a[0] = 7.0; t
    tensor([7., 1., 2.], dtype=teachgrad.float64)
    """
    device_type, _ = ext.__dlpack_device__()
    if device_type == _DLPACK_CUDA:
        return _finish(_backend.cupy().from_dlpack(ext))
    return _finish(_backend.numpy_module().from_dlpack(ext))


_DLPACK_CUDA = 2  # DLPack's device-type code for CUDA memory (1 is the CPU)


# --------------------------------------------------------------------------- filled


def _filled(fn, fill, shape, dt, dev, requires_grad, like=False):
    """A new tensor of ``shape``: ``fill`` names NumPy's maker (``"zeros"`` ...), or is
    ``(value,)`` for ``full`` (``like``: for a ``*_like`` maker)."""
    _check_sizes(fn, shape)
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            if isinstance(fill, str):
                return getattr(xp, fill)(shape, dt.numpy)
            return xp.full(shape, fill[0], dt.numpy)

    kernel = _FILL_KERNELS.get(fill, "aten::fill_") if type(fill) is str else "aten::fill_"
    return _finish(_allocate(make, shape, dt, dev, kernel, like), requires_grad)


_FILL_KERNELS = {"zeros": "aten::zero_", "ones": "aten::fill_", "empty": None}  # (torch's)


def _sized(fn, fill, size, dtype, device, requires_grad, default=None, **more):
    """``zeros``, ``ones``, ``empty`` (and ``full``): check the arguments, then fill."""
    shape = _options(fn, size, dtype, device, requires_grad, **more)["size"]
    dt = as_dtype(dtype) if dtype is not None else (default or get_default_dtype())
    return _filled(fn, fill, shape, dt, as_device(device), requires_grad)


@creation_out
@recorded_as("aten::zeros")
def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros.

    >>> import teachgrad as tg
    >>> tg.zeros(2)
    tensor([0., 0.])
    """
    return _sized("zeros", "zeros", size, dtype, device, requires_grad)


@creation_out
@recorded_as("aten::ones")
def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones.

    >>> import teachgrad as tg
    >>> tg.ones(2, dtype=tg.int64)
    tensor([1, 1])
    """
    return _sized("ones", "ones", size, dtype, device, requires_grad)


@creation_out
@recorded_as("aten::empty")
def empty(*size, memory_format=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (its values are whatever was in memory), laid out in
    ``memory_format`` (row-major by default).

    >>> import teachgrad as tg
    >>> tg.empty(2, 3).shape
    teachgrad.Size([2, 3])
    """
    out = _sized("empty", "empty", size, dtype, device, requires_grad, memory_format=memory_format)
    return out if memory_format is None else _in_format(out, memory_format)


@recorded_as("aten::empty_strided")
def empty_strided(
    size, stride, *, dtype=None, layout=None, device=None, requires_grad=False, pin_memory=False
) -> Tensor:
    """An uninitialised tensor with the given ``stride`` (in elements, one per dim), on
    memory just large enough for it (``layout`` and ``pin_memory``: torch's, as in ``empty``).

    >>> import teachgrad as tg
    >>> tg.empty_strided((2, 3), (1, 2)).stride()
    (1, 2)
    """
    options = _options("empty_strided", (size, stride), dtype, device, requires_grad)
    shape, strides = options["size"], options["stride"]
    if len(shape) != len(strides):
        raise RuntimeError(
            f"dimensionality of sizes ({len(shape)}) must match dimensionality of strides "
            f"({len(strides)})\n  Give one stride per dim."
        )
    _check_sizes("empty_strided", shape)
    if any(s < 0 for s in strides):
        raise RuntimeError(
            f"Storage size calculation overflowed with sizes={list(shape)} and "
            f"strides={list(strides)}\n  Strides count elements forward: none may be negative."
        )
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    dev = as_device(device)
    # the last element sits at Σ (size − 1) · stride: the memory holds up to it
    span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            return xp.empty(span, dt.numpy)

    memory = _allocate(make, (span,), dt, dev)
    in_bytes = tuple(s * dt.itemsize for s in strides)
    return _finish(_backend.strided_view(memory, shape, in_bytes), requires_grad)


# the C++ type torch names when a number does not fit a dtype (any fits bool and float64)
_C_TYPES = {
    "uint8": "uint8_t",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int",
    "int64": "int64_t",
    "float16": "c10::Half",
    "float32": "float",
}


def _read_number(value):
    """``value``, a Python number, as torch's argument parser reads it: an int must fit in
    64 bits (torch reads it as an int64, or as a uint64 when it is larger).

    >>> _read_number(2**64)
    Traceback (most recent call last):
    OverflowError: int too big to convert
    """
    if isinstance(value, int) and not isinstance(value, bool):
        if value >= 2**64:
            raise OverflowError("int too big to convert")
        if value < -(2**63):
            raise OverflowError("can't convert negative int to unsigned")
    return value


@quiet  # (a float beyond int64 casts to int64 as the CPU makes it, as torch's does: no warning)
def _scalar(value, dt):
    """A number (read by ``_read_number``) as one number of ``dt``, as torch converts a
    ``full`` value or a ``linspace`` end (its ``Scalar::to``): a float is truncated toward
    zero for an integer dtype, a negative int wraps around in uint8 (-1 is 255). A number
    out of the dtype's range is torch's error (inf and NaN are out of an integer dtype's
    range; a float dtype holds them).

    >>> _scalar(-1, _backend.uint8), _scalar(2.7, _backend.int64)
    (np.uint8(255), np.int64(2))
    """
    if not _fits(value, dt):
        raise RuntimeError(
            f"value cannot be converted to type {_C_TYPES[dt.name]} without overflow\n"
            f"  {value} is not a number {dt} can hold."
        )
    return _backend.numpy_module().asarray(value).astype(dt.numpy)[()]


def scalar_of(value, np_dtype):
    """A number written into a tensor of ``np_dtype`` (``fill_``, ``x[i] = value``), converted
    as torch converts it (``_scalar``): out of the dtype's range is torch's error, where NumPy
    would raise its own, or give inf.

    >>> import numpy as np
    >>> scalar_of(-1, np.dtype("uint8")), scalar_of(2.5, np.dtype("float32"))
    (np.uint8(255), np.float32(2.5))
    """
    return _scalar(_read_number(value), _backend.from_numpy_dtype(np_dtype))


def _fits(value, dt) -> bool:
    """Whether torch lets ``value`` (a Python number) become a number of ``dt``."""
    np = _backend.numpy_module()
    if isinstance(value, bool) or dt is _backend.bool_:
        return True
    if dt.is_floating_point:  # (NaN and inf fit; the limit as a Python float, exactly)
        return math.isinf(value) or not abs(value) > float(np.finfo(dt.numpy).max)
    info = np.iinfo(dt.numpy)
    if isinstance(value, float):  # (against the limits as floats: 2.0**63 fits an int64)
        return float(info.min) <= value <= float(info.max)
    lowest = -int(info.max) if info.min == 0 else info.min  # (uint8 wraps a negative int)
    return lowest <= value <= info.max


def _fill_value(fn, size, fill_value, dtype, device, requires_grad):
    """``full``'s checks: the arguments, and a value that fits the dtype; its shape, dtype and
    the value as a number of the dtype."""
    shape = _options(fn, (size, fill_value), dtype, device, requires_grad)["size"]
    fill_value = _read_number(fill_value)
    dt = as_dtype(dtype) if dtype is not None else _backend.scalar_dtype(fill_value)
    return shape, dt, _scalar(fill_value, dt)


@checked  # (a missing argument in torch's words)
@creation_out
@recorded_as("aten::full")
def full(size, fill_value, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype inferred from the value).

    >>> import teachgrad as tg
    >>> tg.full((2,), 7)
    tensor([7, 7])
    """
    return _full(size, fill_value, dtype, device, requires_grad)


def _full(size, fill_value, dtype, device, requires_grad, like=False):
    """``full``, and ``full_like`` (``like``)."""
    if isinstance(fill_value, Tensor) and fill_value.ndim == 0:
        fill_value = fill_value.item()  # (torch reads a 0-d tensor as the number it holds)
    shape, dt, value = _fill_value("full", size, fill_value, dtype, device, requires_grad)
    return _filled("full", (value,), shape, dt, as_device(device), requires_grad, like)


def _like(fn, fill, input, dtype, device, requires_grad, memory_format, *value):
    """``zeros_like`` and its siblings: ``input``'s shape, and its dtype and device by default."""
    _options(fn, (input, *value), dtype, device, requires_grad, memory_format=memory_format)
    dt = dtype if dtype is not None else input.dtype
    dev = device if device is not None else input.device
    if fill == "full":
        out = _full(tuple(input.shape), value[0], dt, dev, requires_grad, like=True)
    else:
        shape = tuple(input.shape)
        out = _filled(fn, fill, shape, as_dtype(dt), as_device(dev), requires_grad, like=True)
    return _in_format(out, memory_format, input)


def _in_format(out: Tensor, memory_format, like: Tensor | None = None) -> Tensor:
    """``out``, just made row-major, laid out in ``memory_format``. ``preserve_format`` (the
    default of the ``*_like`` makers) lays it out as ``like``: a transposed input gives a
    transposed result (see ``_layout.preserved_strides``)."""
    if like is not None and memory_format in (None, _backend.preserve_format):
        strides = preserved_strides(like._data)
    else:
        strides = format_strides(out.shape, memory_format)
    out._data = with_strides(out._data, strides)
    return out


@recorded_as("aten::zeros_like", maker=True)
def zeros_like(
    input, *, memory_format=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """Zeros with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.zeros_like(tg.ones(2, dtype=tg.float64))
    tensor([0., 0.], dtype=teachgrad.float64)
    """
    return _like("zeros_like", "zeros", input, dtype, device, requires_grad, memory_format)


@recorded_as("aten::ones_like", maker=True)
def ones_like(input, *, memory_format=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.ones_like(tg.zeros(2, dtype=tg.int64))
    tensor([1, 1])
    """
    return _like("ones_like", "ones", input, dtype, device, requires_grad, memory_format)


@recorded_as("aten::empty_like", maker=True)
def empty_like(
    input, *, memory_format=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """Uninitialised, with ``input``'s shape, dtype and device, laid out as ``input``
    (``preserve_format``) or in ``memory_format``.

    >>> import teachgrad as tg
    >>> tg.empty_like(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    >>> tg.empty_like(tg.zeros(1, 3, 2, 2), memory_format=tg.channels_last).stride()
    (12, 1, 6, 3)
    """
    return _like("empty_like", "empty", input, dtype, device, requires_grad, memory_format)


@recorded_as("aten::full_like", maker=True)
def full_like(
    input, fill_value, *, memory_format=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.full_like(tg.zeros(2), 7.0)
    tensor([7., 7.])
    """
    return _like(
        "full_like", "full", input, dtype, device, requires_grad, memory_format, fill_value
    )


# --------------------------------------------------------------------------- ranges


def _number(value) -> str:
    """A number as torch prints it in an error: ``0``, ``0.5``, ``inf``."""
    return f"{value:g}" if isinstance(value, float) else str(value)


def _range_length(start, end, step) -> int:
    """How many numbers ``arange`` makes, after torch's checks of the range."""
    if not step > 0 and not step < 0:  # (nan is neither)
        raise RuntimeError("step must be nonzero")
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RuntimeError(f"unsupported range: {_number(start)} -> {_number(end)}")
    if not (step > 0 and end >= start or step < 0 and end <= start):
        raise RuntimeError(
            "upper bound and lower bound inconsistent with step sign\n"
            f"  arange({start}, {end}, {step}) never reaches {end}: with start > end the step "
            "must be negative, with start < end positive."
        )
    length = math.ceil((end - start) / step)
    if length > _INT64_MAX:
        raise RuntimeError("invalid size, possible overflow?")
    return length


def _integer_range(numbers, length, dt) -> tuple:
    """``arange``'s numbers for an integer dtype, as torch's kernels take them: start and step
    truncated to integers; for int64 the end too, with the length counted again from them
    and a step that truncates to 0 refused (the other integer dtypes keep the length the
    given numbers make)."""
    ints = [int(v) for v in numbers]
    if dt is not _backend.int64:
        return ints, length
    if ints[2] == 0:
        raise ValueError(
            "step must be nonzero\n  An int64 range truncates its step to an integer: give a "
            "whole step, or a float dtype."
        )
    return ints, _range_length(*ints)


@creation_out
@recorded_as("aten::arange")
def arange(start, end=None, step=1, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``start, start + step, ...`` up to (not including) ``end``.

    >>> import teachgrad as tg
    >>> tg.arange(5), tg.arange(0, 1, 0.25)
    (tensor([0, 1, 2, 3, 4]), tensor([0.0000, 0.2500, 0.5000, 0.7500]))
    """
    args = (start,) if end is None else (start, end) if step == 1 else (start, end, step)
    _options("arange", args, dtype, device, requires_grad)
    if end is None:
        start, end = 0, start
    numbers = [float(v) if isinstance(v, Tensor) else v for v in (start, end, step)]
    if dtype is None:
        dtype = (
            get_default_dtype() if any(isinstance(v, float) for v in numbers) else _backend.int64
        )
    dt, dev = as_dtype(dtype), as_device(device)
    if dt is _backend.bool_:
        raise NotImplementedError("\"arange_cpu\" not implemented for 'Bool'")
    length = _range_length(*numbers)
    if dt.numpy.kind in "iu" and any(isinstance(v, float) for v in numbers):
        numbers, length = _integer_range(numbers, length, dt)
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            if dt.numpy.kind in "iu":  # (start + i * step: a step truncated to 0 repeats start)
                return (numbers[0] + numbers[2] * xp.arange(length)).astype(dt.numpy)
            return xp.arange(*numbers)[:length].astype(dt.numpy)

    return _finish(_allocate(make, (length,), dt, dev), requires_grad)


@creation_out
@recorded_as("aten::linspace")
def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    >>> import teachgrad as tg
    >>> tg.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    steps = _options("linspace", (start, end, steps), dtype, device, requires_grad)["steps"]
    start, end = _linspace_ends(start, end)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if dt.numpy.kind == "b" and steps > 1:  # (torch has no linspace kernel for bool)
        raise NotImplementedError("\"linspace_cpu\" not implemented for 'Bool'")
    # torch converts start (and end, for two steps or more) to the dtype first: its error
    # for a number the dtype can't hold, a float truncated for an integer dtype
    first = _scalar(start, dt) if steps > 0 else 0
    last = _scalar(end, dt) if steps > 1 else first
    dev = as_device(device)
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            if steps < 2:  # (no step to take: torch fills in start, if one number is asked)
                return xp.full(steps, first, dt.numpy)
            return _linspace_array(xp, first, last, steps, dt)

    return _finish(_allocate(make, (steps,), dt, dev), requires_grad)


def _linspace_ends(start, end) -> tuple:
    """``start`` and ``end`` as numbers (a tensor's ``item()``), or torch's error for a tensor
    that holds more than one number (it names the dims of every tensor it was given)."""
    tensors = {name: v for name, v in (("start", start), ("end", end)) if isinstance(v, Tensor)}
    if any(t.ndim for t in tensors.values()):
        dims = " and ".join(f"{name} with {t.ndim} dimension(s)" for name, t in tensors.items())
        raise RuntimeError(
            f"linspace only supports 0-dimensional start and end tensors, but got {dims}.\n"
            "  Give start and end as numbers, or as tensors of one number: t.reshape(())."
        )
    return tuple(_read_number(v.item() if isinstance(v, Tensor) else v) for v in (start, end))


@quiet  # (an inf or NaN end makes NaNs, silently as in torch)
def _linspace_array(xp, first, last, steps, dt):
    """torch's CPU kernel for two steps or more, from ``first`` and ``last`` (numbers of ``dt``).

    The step is ``(end - start) / (steps - 1)`` in the dtype's own arithmetic (float64 for an
    integer dtype); the first half of the values is ``start + i * step``, the second half
    ``end - (steps - 1 - i) * step``, so both ends come out exact (and an inf or NaN end makes
    every value NaN, as ``inf * 0`` is NaN).

    torch's compiler fuses each multiply-add into one rounding (an FMA), which NumPy does not
    have. For float32 the float64 sum, rounded once, gives the same numbers; float16 rounds
    after each operation in torch too, as NumPy does. float64 values can differ from torch's
    in the last bit, and so, rarely, integer ones by one (truncated from float64 values).

    >>> import numpy
    >>> _linspace_array(numpy, 0.0, float("inf"), 3, _backend.float32)
    array([nan, nan, nan], dtype=float32)
    """
    np = _backend.numpy_module()
    own = dt.numpy.type if dt.is_floating_point else np.float64
    step = (own(last) - own(first)) / own(steps - 1)
    sums = np.float16 if dt is _backend.float16 else np.float64
    i = xp.arange(steps)
    from_start = sums(first) + sums(step) * i.astype(sums)
    from_end = sums(last) - sums(step) * (steps - 1 - i).astype(sums)
    return xp.where(i < steps // 2, from_start, from_end).astype(dt.numpy)


@creation_out
@recorded_as("aten::eye")
def eye(n, m=None, *, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (``n`` x ``m``).

    >>> import teachgrad as tg
    >>> tg.eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    sizes = _options("eye", (n,) if m is None else (n, m), dtype, device, requires_grad)
    n, m = sizes["n"], sizes.get("m", sizes["n"])
    for name, value in (("n", n), ("m", m)):
        if value < 0:
            raise RuntimeError(f"{name} must be greater or equal to 0, got {value}")
    if n * m > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    dev = as_device(device)
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            return xp.eye(n, m, dtype=dt.numpy)

    return _finish(_allocate(make, (n, m), dt, dev), requires_grad)


# --------------------------------------------------------------------------- random

# torch's names for dtypes in "not implemented for" errors
_TORCH_TYPE_NAMES = {
    "bool": "Bool",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
}


def _random(fn, kind, size, dtype, device, requires_grad, generator, like=False):
    """``randn`` (``kind`` "normal") and ``rand``, and their ``*_like`` forms (``like``)."""
    shape = _options(fn, size, dtype, device, requires_grad, generator=generator)["size"]
    dev = as_device(device)
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if not dt.is_floating_point:  # (torch's names for the kernels that refuse)
        kernel = "normal_kernel_cpu" if kind == "normal" else "check_uniform_bounds"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_TORCH_TYPE_NAMES[dt.name]}'\n  {fn} makes "
            "floating point numbers: ask for a float dtype."
        )
    _check_sizes(fn, shape)
    xp, where = _backend.on_device(dev)
    gen = _backend.generators.for_device(dev)
    draw = gen.standard_normal if kind == "normal" else gen.random

    def make():
        with where:
            data = draw(shape, dtype=dt.numpy if dt.itemsize >= 4 else "float32")
            return data.astype(dt.numpy, copy=False)

    kernel = "aten::normal_" if kind == "normal" else "aten::uniform_"
    return _finish(_allocate(make, shape, dt, dev, kernel, like), requires_grad)


@creation_out
@recorded_as("aten::randn")
def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Samples from the standard normal distribution (reproducible after ``manual_seed``).

    >>> import teachgrad as tg
    >>> tg.randn(2, 3).shape
    teachgrad.Size([2, 3])
    """
    return _random("randn", "normal", size, dtype, device, requires_grad, generator)


@creation_out
@recorded_as("aten::rand")
def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Samples uniform on [0, 1).

    >>> import teachgrad as tg
    >>> bool(((tg.rand(100) >= 0) & (tg.rand(100) < 1)).all())
    True
    """
    return _random("rand", "uniform", size, dtype, device, requires_grad, generator)


@creation_out
@recorded_as("aten::randint")
def randint(
    low, high=None, size=None, *, dtype=None, device=None, requires_grad=False, generator=None
) -> Tensor:
    """Random integers in ``[low, high)``.

    >>> import teachgrad as tg
    >>> tg.randint(0, 3, (5,)).dtype
    teachgrad.int64
    """
    args = tuple(a for a in (low, high, size) if a is not None)
    bound = _options("randint", args, dtype, device, requires_grad, generator=generator)
    low, high, shape = bound.get("low", 0), bound["high"], bound["size"]
    if low >= high:
        raise RuntimeError(
            f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}"
        )
    _check_sizes("randint", shape)
    dt = as_dtype(dtype) if dtype is not None else _backend.int64
    dev = as_device(device)
    xp, where = _backend.on_device(dev)

    def make():
        with where:
            data = _backend.generators.for_device(dev).integers(low, high, shape)
            return data.astype(dt.numpy)

    return _finish(_allocate(make, shape, dt, dev), requires_grad)


def _random_like(fn, input, dtype, device, requires_grad, memory_format):
    _options(fn, (input,), dtype, device, requires_grad, memory_format=memory_format)
    out = _random(
        fn[: -len("_like")],
        "normal" if fn == "randn_like" else "uniform",
        (tuple(input.shape),),  # (the size as one argument, as in randn((2, 3)): () is 0-d)
        dtype or input.dtype,
        device or input.device,
        requires_grad,
        None,
        like=True,
    )
    return _in_format(out, memory_format, input)


@recorded_as("aten::randn_like", maker=True)
def randn_like(
    input, *, memory_format=None, dtype=None, device=None, requires_grad=False
) -> Tensor:
    """Standard normal samples with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.randn_like(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    """
    return _random_like("randn_like", input, dtype, device, requires_grad, memory_format)


@recorded_as("aten::rand_like", maker=True)
def rand_like(input, *, memory_format=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform [0, 1) samples with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.rand_like(tg.zeros(4)).shape
    teachgrad.Size([4])
    """
    return _random_like("rand_like", input, dtype, device, requires_grad, memory_format)


# --------------------------------------------------------------------------- Tensor.new_*


def _new_factory(fill):
    name = f"new_{fill}"

    def method(self, *args, dtype=None, device=None, requires_grad=False):
        if fill in ("zeros", "ones", "empty"):
            return _sized(
                name, fill, args, dtype or self.dtype, device or self.device, requires_grad
            )
        parse(name, args, given(dtype=dtype, device=device, requires_grad=requires_grad))
        dtype = dtype or self.dtype
        device = device or self.device
        if fill == "tensor":
            return tensor(args[0], dtype=dtype, device=device, requires_grad=requires_grad)
        return full(args[0], args[1], dtype=dtype, device=device, requires_grad=requires_grad)

    method.__name__ = name
    args = {"zeros": "2", "ones": "2", "empty": "2", "full": "(2,), 5", "tensor": "[5, 5]"}[fill]
    method.__doc__ = (
        f"A new tensor ({fill}) with this tensor's dtype and device by default.\n\n"
        f"    >>> import teachgrad as tg\n    >>> tg.zeros(1, dtype=tg.float64).{name}({args}).dtype\n"
        "    teachgrad.float64\n"
    )
    return method


for _fill in ("zeros", "ones", "empty", "full", "tensor"):
    setattr(Tensor, f"new_{_fill}", _new_factory(_fill))


def _legacy_new(self, *args, device=None):
    """``x.new(...)``, the constructor of torch's Variable days, with ``x``'s dtype and
    device: sizes give an uninitialized tensor (``x.new(2, 3)``, ``x.new(Size)``), a list
    its data, nothing an empty tensor. (Today's spelling: ``new_empty``, ``new_tensor``.)

    >>> import teachgrad as tg
    >>> x = tg.zeros(1, dtype=tg.float64)
    >>> x.new(2, 3).shape, x.new([1, 2]), x.new().shape
    (teachgrad.Size([2, 3]), tensor([1., 2.], dtype=teachgrad.float64), teachgrad.Size([0]))
    """
    device = self.device if device is None else device
    if all(isinstance(a, int) and not isinstance(a, bool) for a in args):  # (no args too)
        return _sized("new_empty", "empty", args or ((0,),), self.dtype, device, False)
    (data,) = args if len(args) == 1 else (None,)
    if isinstance(data, Size):
        return _sized("new_empty", "empty", (data,), self.dtype, device, False)
    if isinstance(data, Tensor):
        if data.dtype != self.dtype or data.device != as_device(device):
            raise TypeError(
                f"expected {_options_text(self.dtype, device)} (got "
                f"{_options_text(data.dtype, data.device)})\n  x.new(tensor) takes a tensor of "
                "x's own dtype and device: it shares its memory."
            )
        return data[...]  # (an alias, as torch's: the same memory, a view in the graph)
    if not _is_sequence(data):
        raise TypeError(f"new(): data must be a sequence (got {type(data).__name__})")
    return tensor(data, dtype=self.dtype, device=device)


_legacy_new.__name__ = _legacy_new.__qualname__ = "new"  # (Python's TypeErrors name it)

# dtype -> the C++ type torch's TensorOptions print names
_CPP_TYPES = {
    "float64": "double",
    "float32": "float",
    "float16": "c10::Half",
    "int64": "long int",
    "int32": "int",
    "int16": "short int",
    "int8": "signed char",
    "uint8": "unsigned char",
    "bool": "bool",
}


def _options_text(dtype, device) -> str:
    """A dtype and device as torch prints its TensorOptions in errors."""
    return (
        f"TensorOptions(dtype={_CPP_TYPES[dtype.name]}, device={as_device(device)}, "
        "layout=Strided, requires_grad=false (default), pinned_memory=false (default), "
        "memory_format=(nullopt))"
    )


Tensor.new = _legacy_new

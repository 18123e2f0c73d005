"""``teachgrad.testing``: torch.testing's two helpers for tests, ``assert_close`` and
``make_tensor``.

``assert_close`` compares tensors like ``torch.testing.assert_close``. Default tolerances
depend on the dtype (float32: rtol 1.3e-6, atol 1e-5; float64: rtol 1e-7, atol 1e-7); the
error says how many elements differ and where the largest difference is.

    >>> import teachgrad as tg
    >>> tg.testing.assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-7]))
"""

from __future__ import annotations

import math
import warnings

from . import _backend, _creation
from ._tensor import Tensor

_TOLERANCES = {"float16": (1e-3, 1e-5), "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def _host(x):
    if isinstance(x, Tensor):
        return _backend.to_host(x._data)
    return _backend.numpy_module().asarray(x)


def assert_close(
    actual,
    expected,
    *,
    rtol=None,
    atol=None,
    equal_nan=False,
    check_dtype=True,
    check_device=True,
    msg=None,
) -> None:
    """Raise ``AssertionError`` unless ``|actual - expected| <= atol + rtol * |expected|`` elementwise.

    >>> import teachgrad as tg
    >>> tg.testing.assert_close(tg.tensor(1.0), tg.tensor(1.1))
    Traceback (most recent call last):
    ...
    AssertionError: Tensor-likes are not close!
    ...
    """
    np = _backend.numpy_module()
    if (rtol is None) != (atol is None):
        raise ValueError(
            "Both 'rtol' and 'atol' must be either specified or omitted, but got no rtol."
            if rtol is None
            else "Both 'rtol' and 'atol' must be either specified or omitted, but got no atol."
        )
    if isinstance(actual, list | tuple):
        if len(actual) != len(expected):
            raise AssertionError(
                f"The length of the sequences mismatch: {len(actual)} != {len(expected)}"
            )
        for a, e in zip(actual, expected, strict=True):
            assert_close(
                a,
                e,
                rtol=rtol,
                atol=atol,
                equal_nan=equal_nan,
                check_dtype=check_dtype,
                check_device=check_device,
                msg=msg,
            )
        return
    if isinstance(actual, Tensor) and isinstance(expected, Tensor):
        if check_device and actual.device != expected.device:
            raise AssertionError(
                f"The values for attribute 'device' do not match: {actual.device} != {expected.device}."
            )
        if check_dtype and actual.dtype is not expected.dtype:
            raise AssertionError(
                f"The values for attribute 'dtype' do not match: {actual.dtype} != {expected.dtype}."
            )
    a, e = np.atleast_1d(_host(actual)), np.atleast_1d(_host(expected))
    if a.shape != e.shape:
        raise AssertionError(
            f"The values for attribute 'shape' do not match: {a.shape} != {e.shape}."
        )
    if rtol is None:
        rtol, atol = _TOLERANCES.get(str(a.dtype), (0.0, 0.0))
    a64, e64 = a.astype("float64"), e.astype("float64")
    close = np.isclose(a64, e64, rtol=rtol, atol=atol, equal_nan=equal_nan) | (a64 == e64)
    if close.all():
        return
    diff = np.abs(a64 - e64)
    diff[close] = 0
    worst = (
        np.unravel_index(np.argmax(np.where(np.isnan(diff), np.inf, diff)), a.shape)
        if a.ndim
        else ()
    )
    rel = diff / np.maximum(np.abs(e64), np.finfo("float64").tiny)
    text = (
        f"Tensor-likes are not close!\n\nMismatched elements: {int((~close).sum())} / {a.size} "
        f"({100.0 * (~close).sum() / max(a.size, 1):.1f}%)\n"
        f"Greatest absolute difference: {float(diff[worst])} at index {tuple(int(i) for i in worst)} "
        f"(up to {atol} allowed)\nGreatest relative difference: {float(rel.max())} (up to {rtol} allowed)"
    )
    raise AssertionError(text if msg is None else f"{msg}\n{text}")


def make_tensor(
    *shape,
    dtype,
    device,
    low=None,
    high=None,
    requires_grad=False,
    noncontiguous=False,
    exclude_zero=False,
    memory_format=None,
) -> Tensor:
    """A tensor of ``shape`` with values drawn uniformly from ``[low, high)``, as torch's
    ``torch.testing.make_tensor`` makes it (other numbers: another generator). By default
    bools come from [0, 2), integers from [-9, 10) (unsigned ones from [0, 10)), floats
    from [-9, 9); bounds beyond what the dtype holds are clamped to it. ``noncontiguous``:
    every other element of a tensor twice as long in its last dim; ``exclude_zero``: zeros
    become 1 (bools and integers) or the dtype's smallest normal number.

    >>> import teachgrad as tg
    >>> x = make_tensor(2, 3, dtype=tg.float64, device="cpu", low=-1, high=1)
    >>> x.shape, bool(((x >= -1) & (x < 1)).all())
    (teachgrad.Size([2, 3]), True)
    """
    shape = tuple(shape[0] if len(shape) == 1 and isinstance(shape[0], list | tuple) else shape)
    dt = _backend.as_dtype(dtype)
    exact = not dt.is_floating_point  # bools and integers
    if noncontiguous and memory_format is not None:
        raise ValueError(
            "The parameters `noncontiguous` and `memory_format` are mutually exclusive, but "
            f"got noncontiguous={noncontiguous} and memory_format={memory_format}"
        )
    if requires_grad and exact:
        raise ValueError(
            "`requires_grad=True` is not supported for boolean and integral dtypes, but got "
            f"dtype={dt}"
        )
    if noncontiguous and math.prod(shape) > 1:  # (values to skip: twice the last dim)
        shape = (*shape[:-1], 2 * shape[-1])
    else:
        noncontiguous = False
    low, high = _interval(dt, low, high)
    if exact:
        result = _creation.randint(low, high, shape, dtype=dt, device=device)
    else:
        result = _creation.rand(shape, dtype=dt, device=device) * (high - low) + low
    if noncontiguous:
        result = result[..., 1::2]
    elif memory_format is not None:
        result = result.clone(memory_format=memory_format)
    if exclude_zero:
        np = _backend.numpy_module()
        result[result == 0] = 1 if exact else float(np.finfo(dt.numpy).tiny)
    return result if exact else result.requires_grad_(requires_grad)


def _interval(dt, low, high) -> tuple:
    """``make_tensor``'s ``[low, high)`` for ``dt``: the defaults, torch's checks, clamped to
    what ``dt`` holds (for bools and integers, both ends rounded up: high is exclusive)."""
    np = _backend.numpy_module()
    if dt is _backend.bool_:
        lowest, highest, default = 0, 2, (0, 2)
    elif not dt.is_floating_point:  # (int64's top is out of randint's reach, as in torch)
        info = np.iinfo(dt.numpy)
        lowest, highest = int(info.min), int(info.max) + (dt is not _backend.int64)
        default = (-9, 10)
    else:
        info = np.finfo(dt.numpy)
        lowest, highest, default = float(info.min), float(info.max), (-9, 9)
    low, high = default[0] if low is None else low, default[1] if high is None else high
    if any(isinstance(v, float) and math.isnan(v) for v in (low, high)):
        raise ValueError(f"`low` and `high` cannot be NaN, but got low={low} and high={high}")
    if low == high and dt.is_floating_point:  # (torch still takes it: every value is low)
        warnings.warn(
            "Passing `low==high` to `torch.testing.make_tensor` for floating or complex types "
            "is deprecated since 2.1 and will be removed in 2.3. Use `torch.full(...)` instead.",
            FutureWarning,
            stacklevel=3,
        )
    elif low >= high:
        raise ValueError(f"`low` must be less than `high`, but got {low} >= {high}")
    if high < lowest or low >= highest:
        raise ValueError(
            f"The value interval specified by `low` and `high` is [{low}, {high}), but {dt} "
            f"only supports [{lowest}, {highest})"
        )
    low, high = min(max(low, lowest), highest), min(max(high, lowest), highest)
    return (math.ceil(low), math.ceil(high)) if not dt.is_floating_point else (low, high)

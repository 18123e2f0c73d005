"""``teachgrad.testing.assert_close``: compare tensors like ``torch.testing.assert_close``.

Default tolerances depend on the dtype (float32: rtol 1.3e-6, atol 1e-5; float64:
rtol 1e-7, atol 1e-7); the error says how many elements differ and where the
largest difference is.

    >>> import teachgrad as tg
    >>> tg.testing.assert_close(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 2.0 + 1e-7]))
"""

from __future__ import annotations

from . import _backend
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

"""How tensors print: the same layout as torch, so notebooks look like PyTorch's.

``tensor([[1., 2.],`` / ``        [3., 4.]], requires_grad=True)``: one number format
for the whole tensor (integers as ``1.``, otherwise 4 decimals, or scientific
notation when magnitudes differ a lot), columns aligned, long tensors summarised
with ``...``, and the autograd facts at the end (``grad_fn=<MulBackward0>``).

    >>> import teachgrad as tg
    >>> tg.tensor([1e-5, 1.0])
    tensor([1.0000e-05, 1.0000e+00])
"""

from __future__ import annotations

import numpy

from . import _backend

LINE_WIDTH = 80
THRESHOLD = 1000  # more elements than this: print only the edges
EDGE_ITEMS = 3


def _formatter(values: numpy.ndarray):
    """One function formatting every element of the tensor the same way."""
    if values.dtype.kind == "b":
        return lambda v: str(bool(v))
    if values.dtype.kind in "iu":
        return lambda v: str(int(v))
    finite = values[numpy.isfinite(values)]
    if finite.size == 0:
        return _nonfinite_or(lambda v: f"{v:.4f}")
    magnitude = numpy.abs(finite)
    nonzero = magnitude[magnitude != 0]
    hi = float(magnitude.max())
    lo = float(nonzero.min()) if nonzero.size else 0.0
    if numpy.all(finite == numpy.round(finite)):
        if hi > 1e8:
            return _nonfinite_or(lambda v: f"{v:.4e}")
        return _nonfinite_or(lambda v: f"{v:.0f}.")
    if nonzero.size and (hi / lo > 1000 or hi > 1e8 or lo < 1e-4):
        return _nonfinite_or(lambda v: f"{v:.4e}")
    return _nonfinite_or(lambda v: f"{v:.4f}")


def _nonfinite_or(fmt):
    def format_value(v):
        v = float(v)
        if numpy.isnan(v):
            return "nan"
        if numpy.isinf(v):
            return "inf" if v > 0 else "-inf"
        return fmt(v)

    return format_value


def _edges(values: numpy.ndarray, summarize: bool) -> numpy.ndarray:
    """The elements that will be printed (all, or the edges of each dim)."""
    if not summarize:
        return values
    for axis in range(values.ndim):
        if values.shape[axis] > 2 * EDGE_ITEMS:
            head = numpy.take(values, range(EDGE_ITEMS), axis=axis)
            tail = numpy.take(
                values, range(values.shape[axis] - EDGE_ITEMS, values.shape[axis]), axis=axis
            )
            values = numpy.concatenate([head, tail], axis=axis)
    return values


def _body(values, fmt, width, indent, summarize) -> str:
    if values.ndim == 0:
        return fmt(values.item()).rjust(width)
    n = values.shape[0]
    cut = summarize and n > 2 * EDGE_ITEMS
    rows = (
        list(range(EDGE_ITEMS)) + [None] + list(range(n - EDGE_ITEMS, n)) if cut else list(range(n))
    )
    if values.ndim == 1:
        items = ["..." if i is None else fmt(values[i]).rjust(width) for i in rows]
        per_line = max(1, (LINE_WIDTH - indent) // (width + 2))
        lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    parts = [
        "..." if i is None else _body(values[i], fmt, width, indent + 1, summarize) for i in rows
    ]
    return "[" + separator.join(parts) + "]"


def tensor_str(t, indent: int) -> str:
    """The values part of a tensor's repr."""
    values = t._data if isinstance(t._data, numpy.ndarray) else t._data.get()
    if values.size == 0:
        return "[]"
    summarize = values.size > THRESHOLD
    fmt = _formatter(_edges(values, summarize))
    shown = _edges(values, summarize)
    width = max(len(fmt(v)) for v in shown.reshape(-1))
    return _body(values, fmt, width, indent, summarize)


def tensor_repr(t) -> str:
    prefix = "tensor("
    parts = [tensor_str(t, len(prefix))]
    if t._data.size == 0 and t._data.shape != (0,):
        parts.append(f"size={tuple(t._data.shape)}")
    dtype = t.dtype
    if dtype is not _backend.get_default_dtype() and dtype not in (_backend.int64, _backend.bool_):
        parts.append(f"dtype={dtype!r}")
    if t.device.type != "cpu":
        parts.append(f"device='{t.device}'")
    if t.grad_fn is not None:
        parts.append(f"grad_fn=<{t.grad_fn.name()}>")
    elif t._requires_grad:
        parts.append("requires_grad=True")
    name = t.__dict__.get("name")
    if name is not None:
        parts.append(f"name='{name}'")
    return prefix + ", ".join(parts) + ")"

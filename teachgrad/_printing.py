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

from . import _backend, _seam


def scalar_type_name(t) -> str:
    """torch's name for a tensor's element type in messages: Float, Double, Long ...

    >>> import teachgrad as tg
    >>> scalar_type_name(tg.ones(1)), scalar_type_name(tg.ones(1, dtype=tg.int64))
    ('Float', 'Long')
    """
    return scalar_name(t.dtype.name)


def legacy_type_name(t) -> str:
    """torch's old name of a tensor's type, which some messages still print: FloatTensor
    (cuda.FloatTensor on a GPU), but CPUBoolType for bools (there is no BoolTensor).

    >>> import teachgrad as tg
    >>> legacy_type_name(tg.ones(1, dtype=tg.float64)), legacy_type_name(tg.ones(1) > 0)
    ('teachgrad.DoubleTensor', 'CPUBoolType')
    """
    cuda = t.device.type == "cuda"
    if t.dtype.name == "bool":
        return f"{'CUDA' if cuda else 'CPU'}BoolType"
    return f"teachgrad.{'cuda.' if cuda else ''}{scalar_type_name(t)}Tensor"


def scalar_name(dtype_name: str) -> str:
    """torch's name for a NumPy dtype name (``'float32'`` -> ``'Float'``).

    >>> scalar_name("int64")
    'Long'
    """
    return _TORCH_NAMES.get(dtype_name, (dtype_name,))[0]


def c_type_name(dtype_name: str) -> str:
    """torch's C++ name for a NumPy dtype name, as some of its errors print dtypes.

    >>> c_type_name("int64")
    'long int'
    """
    return _TORCH_NAMES.get(dtype_name, (dtype_name, dtype_name))[1]


# NumPy's dtype name -> (torch's scalar type name, its C++ type name)
_TORCH_NAMES = {
    "float16": ("Half", "c10::Half"),
    "float32": ("Float", "float"),
    "float64": ("Double", "double"),
    "int8": ("Char", "signed char"),
    "uint8": ("Byte", "unsigned char"),
    "int16": ("Short", "short int"),
    "int32": ("Int", "int"),
    "int64": ("Long", "long int"),
    "bool": ("Bool", "bool"),
}

LINE_WIDTH = 80
THRESHOLD = 1000  # more elements than this: print only the edges
EDGE_ITEMS = 3


class _Format:
    """One number format for a whole tensor, chosen from its nonzero finite values."""

    def __init__(self, values: numpy.ndarray):
        self.floating = values.dtype.kind == "f"
        self.int_mode = True  # every value is a whole number: print "3." not "3.0000"
        self.sci_mode = False
        self.width = 1
        if not self.floating:
            self.width = max([len(_plain(v)) for v in values.reshape(-1)] or [1])
            return
        shown = values[numpy.isfinite(values) & (values != 0)].astype("float64")
        if shown.size == 0:
            return
        magnitude = numpy.abs(shown)
        hi, lo = float(magnitude.max()), float(magnitude.min())
        self.int_mode = bool(numpy.all(shown == numpy.ceil(shown)))
        spread = hi / lo > 1000.0 or hi > 1.0e8
        self.sci_mode = spread if self.int_mode else spread or lo < 1.0e-4
        if self.sci_mode:
            self.width = max(len(f"{v:.4e}") for v in shown)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in shown)
        else:
            self.width = max(len(f"{v:.4f}") for v in shown)

    def __call__(self, value) -> str:
        if not self.floating:
            text = _plain(value)
        elif self.sci_mode:
            text = f"{float(value):.4e}"
        elif self.int_mode:
            text = f"{float(value):.0f}" + ("" if numpy.isnan(value) or numpy.isinf(value) else ".")
        else:
            text = f"{float(value):.4f}"
        return text.rjust(self.width)


def _plain(value) -> str:
    return str(bool(value)) if isinstance(value, numpy.bool_ | bool) else str(value.item())


def _edges(values: numpy.ndarray) -> numpy.ndarray:
    """Only the first and last EDGE_ITEMS along each dim (what a summary shows)."""
    for axis in range(values.ndim):
        n = values.shape[axis]
        if n > 2 * EDGE_ITEMS:
            keep = list(range(EDGE_ITEMS)) + list(range(n - EDGE_ITEMS, n))
            values = numpy.take(values, keep, axis=axis)
    return values


def _body(values, fmt, indent, summarize) -> str:
    if values.ndim == 0:
        return fmt(values[()])
    n = values.shape[0]
    cut = summarize and n > 2 * EDGE_ITEMS
    rows = [*range(EDGE_ITEMS), None, *range(n - EDGE_ITEMS, n)] if cut else list(range(n))
    if values.ndim == 1:
        items = [" ..." if i is None else fmt(values[i]) for i in rows]
        per_line = max(1, (LINE_WIDTH - indent) // (fmt.width + 2))
        lines = [", ".join(items[k : k + per_line]) for k in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    separator = "," + "\n" * (values.ndim - 1) + " " * (indent + 1)
    parts = ["..." if i is None else _body(values[i], fmt, indent + 1, summarize) for i in rows]
    return "[" + separator.join(parts) + "]"


def tensor_str(t, indent: int) -> str:
    """The values part of a tensor's repr."""
    values = _backend.to_host(t._data)
    if values.size == 0:
        return "[]"
    summarize = values.size > THRESHOLD
    return _body(values, _Format(_edges(values) if summarize else values), indent, summarize)


def tensor_repr(t) -> str:
    prefix = "tensor("
    parts = [tensor_str(t, len(prefix))]
    if t._data.size == 0 and t._data.shape != (0,):
        parts.append(f"size={tuple(t._data.shape)}")
    dtype = t.dtype
    implied = (_backend.int64, _backend.bool_) if t._data.size else ()  # (by the values shown)
    if dtype is not _backend.get_default_dtype() and dtype not in implied:
        parts.append(f"dtype={dtype!r}")
    if t.device.type != "cpu":
        parts.append(f"device='{t.device}'")
    grad_fn = _grad_fn_or_invalid(t)
    if grad_fn is not None:
        parts.append(f"grad_fn=<{grad_fn}>")
    elif t._requires_grad:
        parts.append("requires_grad=True")
    name = t.__dict__.get("_name")
    if name is not None:
        parts.append(f"name='{name}'")
    tangent = _seam.tangent_of(t)
    if tangent is not None:  # torch prints a 0-d tangent as a plain number
        parts.append(f"tangent={tangent.item() if tangent.ndim == 0 else repr(tangent)}")
    return _with_suffixes(prefix + parts[0], parts[1:], len(prefix))


def _grad_fn_or_invalid(t):
    """The name of ``t``'s grad_fn, or ``"Invalid"`` where reading it would raise (a view
    made under no_grad whose base was then changed in place), as torch prints it."""
    try:
        fn = t.grad_fn
    except RuntimeError:
        return "Invalid"
    # torch prints a C++-only node without its namespace (CopySlices, not torch::autograd::...)
    return None if fn is None else fn.name().rsplit("::", 1)[-1]


def _with_suffixes(text: str, suffixes: list, indent: int) -> str:
    """Append ``, suffix`` after the values, starting a new line when one would pass
    LINE_WIDTH columns (as torch wraps ``dtype=...``, ``grad_fn=...``)."""
    pieces = [text]
    line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if line + len(suffix) + 2 > LINE_WIDTH:
            pieces.append(",\n" + " " * indent + suffix)
            line = indent + len(suffix)
        else:
            pieces.append(", " + suffix)
            line += len(suffix) + 2
    return "".join(pieces) + ")"

"""Resampling (``F.interpolate``): every mode is one separable linear map.

Along one spatial dim, each output position ``i`` is a weighted sum of a few input
positions, ``out[i] = Σ_k weight[i, k] · x[index[i, k]]``; a 2-d or 3-d mode does that
along each dim in turn. So a mode is nothing but how it fills the (out_size, taps)
tables ``index`` and ``weight`` (``_table``):

* ``nearest`` / ``nearest-exact``: one tap, the input pixel under the output pixel's
  left edge / its centre (a gather, no weight);
* ``linear`` (``bilinear``, ``trilinear``): two taps, the neighbours of the point the
  output pixel's centre lands on, weighted by closeness (1 - λ, λ);
* ``bicubic``: four taps with Keys' cubic weights (A = -0.75), clamped at the edges;
* ``area``: the mean of the input window each output covers (adaptive average pooling);
* ``antialias`` (bilinear, bicubic): the filter widened by the downscale factor, so that
  each output averages every input pixel it covers (as Pillow does).

Where an output pixel lands. Pixels are unit squares: output pixel ``i``'s centre,
``i + 0.5``, lands on ``(i + 0.5) · scale - 0.5`` in input pixels, where ``scale`` is
1 / scale_factor when a scale factor was given (torch keeps it: not in / out), else
in / out. ``align_corners=True`` pins the corner pixels' centres instead:
``i · (in - 1) / (out - 1)``. torch's arithmetic is followed step by step (the float
type it computes in, where it floors), so that every index matches.

The map is linear in ``x``: its backward is the transposed map (each output's gradient
added back to the positions it read, with the same weights), and the backward of that
is the map again. ``Resample`` and ``ResampleTranspose`` are a pair closed under
differentiation, made once per torch op (``_ops``) to carry torch's node names. Forward
mode applies the map to the tangent.

What lives here: the tables, the two Functions, ``interpolate`` with torch's argument
rules and errors. ``nn.Upsample`` is in ``teachgrad/nn/modules/upsampling.py``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([[[1.0, 2.0]]], requires_grad=True)
    >>> y = interpolate(x, scale_factor=2, mode="linear")
    >>> y, y.grad_fn.name()
    (tensor([[[1.0000, 1.2500, 1.7500, 2.0000]]], grad_fn=<UpsampleLinear1DBackward0>), 'UpsampleLinear1DBackward0')
"""

from __future__ import annotations

import math
from operator import attrgetter
from typing import NamedTuple

from .._backend import array_module, numpy_module
from .._printing import scalar_type_name
from .._profiling import recorded_as
from ..autograd.builtin import Builtin
from ..autograd.forward_ad import linear_jvp
from .nn import _zeros_for
from .reduce import mean
from .views import squeeze, unsqueeze

# --------------------------------------------------------------------------- the tables


def _scale(in_size, out_size, scale, align_corners) -> float:
    """Input pixels per output pixel (torch's ``area_pixel_compute_scale``)."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1 / scale if scale is not None and scale > 0 else in_size / out_size


def _rounded(value: float, dtype: str) -> float:
    """``value`` rounded to ``dtype`` (torch keeps the scale in the type it computes in)."""
    return float(numpy_module().dtype(dtype).type(value))


def _nearest(xp, in_size, out_size, scale, exact, planar):
    """The input pixel under each output pixel's left edge (``nearest``: torch's old rule,
    OpenCV's) or under its centre (``nearest-exact``: PIL's, scikit-image's).

    torch's 2-d ``nearest`` (``planar``) copies a dim that keeps its size and doubles one
    that doubles, whatever the scale factor says (its ``nearest_idx``).
    """
    if planar and not exact and out_size in (in_size, 2 * in_size):
        return (xp.arange(out_size) * in_size // out_size)[:, None], None
    s = _rounded(_scale(in_size, out_size, scale, False), "float32")  # (float32 always)
    if exact:  # (i + 0.5) · s in double, then floored in float32, as torch's floorf does
        at = ((xp.arange(out_size, dtype="float64") + 0.5) * s).astype("float32")
    else:
        at = xp.arange(out_size, dtype="float32") * s
    return xp.minimum(xp.floor(at), in_size - 1).astype("int64")[:, None], None


def _landing(xp, in_size, out_size, scale, align_corners, dtype, cubic):
    """Where each output pixel's centre lands, in input pixels (``dtype``), split into the
    pixel at or left of it and how far past that pixel (torch's ``guard_index_and_lambda``;
    linear clamps a landing left of pixel 0 to it, cubic reads past the edge)."""
    s = _rounded(_scale(in_size, out_size, scale, align_corners), dtype)
    i = xp.arange(out_size, dtype=dtype)
    at = i * s if align_corners else s * (i + 0.5) - 0.5
    if not (cubic or align_corners):
        at = xp.maximum(at, 0)
    # torch floors in float32 (floorf) also for float64
    left = xp.minimum(xp.floor(at.astype("float32")), in_size - 1).astype(dtype)
    return left.astype("int64"), xp.clip(at - left, 0, 1)


def _linear(xp, in_size, out_size, scale, align_corners, dtype):
    """Two taps: the pixel at or left of the landing point and the next one (the last pixel
    stands in for a next one past the edge), weighted 1 - λ and λ."""
    left, frac = _landing(xp, in_size, out_size, scale, align_corners, dtype, cubic=False)
    right = left + (left < in_size - 1)
    return xp.stack([left, right], 1), xp.stack([1 - frac, frac], 1)


def _cubic_near(x, a):  # Keys' cubic for |x| <= 1
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic_far(x, a):  # and for 1 < |x| < 2
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


def _cubic(xp, in_size, out_size, scale, align_corners, dtype):
    """Four taps around the landing point, one left of ``left`` to two right of it, weighted
    by Keys' cubic (A = -0.75) of their distances 1 + t, t, 1 - t, 2 - t."""
    left, t = _landing(xp, in_size, out_size, scale, align_corners, dtype, cubic=True)
    index = xp.clip(left[:, None] + xp.arange(-1, 3), 0, in_size - 1)  # the edge repeats
    a, s = -0.75, 1 - t
    weight = [_cubic_far(t + 1, a), _cubic_near(t, a), _cubic_near(s, a), _cubic_far(s + 1, a)]
    return index, xp.stack(weight, 1)


def _window_filter(x, mode):
    """The antialiasing filters: a triangle (bilinear), Keys' cubic with A = -0.5 (bicubic)."""
    xp, x = array_module(x), abs(x)
    if mode == "bilinear":
        return xp.maximum(1 - x, 0)
    return xp.where(x < 1, _cubic_near(x, -0.5), xp.where(x < 2, _cubic_far(x, -0.5), 0))


def _antialiased(xp, in_size, out_size, scale, align_corners, dtype, mode):
    """Every input pixel under the filter, stretched by the downscale factor ``s``, centred
    where the output pixel's centre lands; the weights are normalised to sum to 1 (torch's
    ``_compute_indices_min_size_weights_aa``). Padding taps get weight 0."""
    s = _rounded(_scale(in_size, out_size, scale, align_corners), dtype)
    half = 1 if mode == "bilinear" else 2  # the filter's half width at scale 1
    support = _rounded(half * s if s >= 1 else half, dtype)
    centre = (xp.arange(out_size, dtype="float64") + 0.5) * s  # (double, then the dtype)
    centre = centre.astype(dtype)[:, None]
    first = xp.maximum((centre - support + 0.5).astype("int64"), 0)  # (truncated, as torch)
    stop = xp.minimum((centre + support + 0.5).astype("int64"), in_size)
    index = first + xp.arange(math.ceil(support) * 2 + 1)
    stretch = _rounded(1 / s, dtype) if s >= 1 else 1.0  # (torch multiplies by 1 / s)
    weight = _window_filter((index.astype(dtype) - centre + 0.5) * stretch, mode)
    weight = xp.where(index < stop, weight, 0)
    total = weight.sum(1, keepdims=True)
    weight = weight / xp.where(total == 0, 1, total)  # (torch leaves all-zero weights be)
    return xp.minimum(index, in_size - 1), weight.astype(dtype)


def _area(xp, in_size, out_size, dtype):
    """Output ``i`` averages input pixels ``floor(i·in/out)`` to ``ceil((i+1)·in/out)``."""
    i = xp.arange(out_size)
    start, stop = (i * in_size) // out_size, -((-(i + 1) * in_size) // out_size)
    taps = -(-in_size // max(out_size, 1)) + 1  # the longest window, or one more
    index = start[:, None] + xp.arange(taps)
    weight = xp.where(index < stop[:, None], 1 / (stop - start)[:, None], 0).astype(dtype)
    return xp.minimum(index, in_size - 1), weight


def _table(xp, mode, in_size, out_size, scale, align_corners, antialias, dtype, dims):
    """``(index, weight)`` of one of ``dims`` dims (weight None: a plain gather), or None if
    the dim is copied as it is."""
    if mode in ("nearest", "nearest-exact"):
        return _nearest(xp, in_size, out_size, scale, mode == "nearest-exact", dims == 2)
    if mode == "area":
        return _area(xp, in_size, out_size, dtype)
    if mode == "bicubic" and not antialias:
        return _cubic(xp, in_size, out_size, scale, align_corners, dtype)
    if in_size == out_size:  # torch's linear and antialiased kernels copy such a dim
        return None
    if antialias:
        return _antialiased(xp, in_size, out_size, scale, align_corners, dtype, mode)
    return _linear(xp, in_size, out_size, scale, align_corners, dtype)


# --------------------------------------------------------------------------- applying them


class Plan(NamedTuple):
    """One resampling: the op pair (``ops``: forward, transpose), the input's shape, the
    spatial output size, the scale factors (None: from the sizes) and ``align_corners``
    as torch's nodes show them, and one table per spatial dim."""

    ops: tuple
    in_shape: tuple
    out_size: tuple
    scales: tuple
    align_corners: bool | None
    tables: tuple


def _along(x, axis, index, weight):
    """``out[..., i, ...] = Σ_k weight[i, k] · x[..., index[i, k], ...]`` along ``axis``."""
    xp = array_module(x)
    taps = xp.moveaxis(x, axis, -1)[..., index]  # (..., out, taps)
    out = taps[..., 0] if weight is None else (taps * weight).sum(-1)
    return xp.moveaxis(out, -1, axis)


def _along_transposed(g, axis, index, weight, in_size):
    """The transpose of ``_along``: each ``g[..., i, ...]``, times its weights, added back at
    the positions ``index[i]`` it was read from (a scatter-add, by ``bincount``)."""
    xp = array_module(g)
    moved = xp.moveaxis(g, axis, -1)
    lines = math.prod(moved.shape[:-1])
    spread = moved[..., None] if weight is None else moved[..., None] * weight
    # each line's positions are offset by its start in the flat result
    positions = index + in_size * xp.arange(lines).reshape(-1, 1, 1)
    sums = xp.bincount(positions.reshape(-1), spread.reshape(-1), minlength=lines * in_size)
    return xp.moveaxis(sums.reshape(*moved.shape[:-1], in_size), -1, axis)


def _working_dtype(dtype) -> str:
    """The float type torch computes in: float32 for float16, else the input's own."""
    return "float32" if dtype.kind == "f" and dtype.itemsize < 4 else dtype.name


def _resample(x, plan):
    """``x`` resampled by the plan's tables, the last dim first (as torch's kernels sum)."""
    xp = array_module(x)
    out = x if x.dtype.kind in "iub" else x.astype(_working_dtype(x.dtype))
    for axis in range(x.ndim - 1, 1, -1):
        if plan.tables[axis - 2] is not None:
            out = _along(out, axis, *plan.tables[axis - 2])
    # (row-major, as torch's; and a copy even where no dim changed)
    return xp.ascontiguousarray(out, dtype=x.dtype) if out is not x else out.copy()


def _resample_transposed(g, plan):
    """The transpose of ``_resample`` (its gradient) applied to ``g``."""
    xp = array_module(g)
    out = g
    for axis in range(2, g.ndim):
        if plan.tables[axis - 2] is not None:
            out = _along_transposed(out, axis, *plan.tables[axis - 2], plan.in_shape[axis])
    return xp.ascontiguousarray(out, dtype=g.dtype) if out is not g else out.copy()


class Resample(Builtin):
    """``x`` resampled by ``plan``: the op behind every mode of ``interpolate``. One subclass
    per torch op (``_ops``) carries torch's node name."""

    formula = {"self": "grad spread back to the positions each output read, with the same weights"}
    jvp = staticmethod(linear_jvp)  # linear in x

    @staticmethod
    def forward(ctx, a, plan):
        ctx.plan, ctx.in_shape = plan, a._data.shape
        if plan.ops[0].saved_names:  # (only adaptive pooling's node keeps its input)
            ctx.to_save = (a,)
        return _resample(a._data, plan)

    @staticmethod
    def backward(ctx, grad):
        source = ctx.saved_tensors[0] if ctx.saved_tensors else None
        return ctx.plan.ops[1].apply(grad, ctx.plan, source), None


class ResampleTranspose(Builtin):
    """``Resample``'s backward: ``grad`` added back to the input positions each output read,
    with the same weights. ``source``, the resampled input, is an input only where torch's
    backward takes one (adaptive pooling's: its gradient is zeros)."""

    formula = {"grad_output": "grad read at the same positions with the same weights"}
    jvp = staticmethod(linear_jvp)  # linear in grad

    @staticmethod
    def forward(ctx, grad, plan, source):
        ctx.plan, ctx.in_shape = plan, plan.in_shape
        return _resample_transposed(grad._data, plan)

    @staticmethod
    def backward(ctx, gg):
        return ctx.plan.ops[0].apply(gg, ctx.plan), None, _zeros_for(ctx, 2, gg)


def _ops(node: str, aten: str, dims: int, align_corners=False) -> tuple:
    """``Resample`` and ``ResampleTranspose`` for torch's op ``aten``, named as its nodes
    (``<node>Backward0``, ``<node>BackwardBackward0``) and showing what they show."""
    plan = lambda read: ("plan", read)  # noqa: E731 - a saved argument read from the plan
    if aten.startswith("_adaptive"):
        saved = {}
        back_saved = {
            f"grad_output_sym_argsize_minus_{k}": plan(lambda p, k=k: p.out_size[-k])
            for k in range(1, dims + 1)
        }
    else:
        names = ["scales"] if dims == 1 else [f"scales_{n}" for n in "dhw"[-dims:]]
        back_saved = {"output_size": plan(attrgetter("out_size"))}
        back_saved |= {n: plan(lambda p, d=d: p.scales[d]) for d, n in enumerate(names)}
        if align_corners:
            back_saved["align_corners"] = plan(attrgetter("align_corners"))
        saved = {**back_saved, "self_sym_sizes": "in_shape"}
    forward = type(node, (Resample,), {
        "node_name": f"{node}Backward0", "aten_name": f"aten::{aten}", "saved_args": saved,
        "saved_names": ("self",) if aten.startswith("_adaptive") else (), "__module__": __name__,
    })  # fmt: skip
    transpose = type(f"{node}Backward", (ResampleTranspose,), {
        "node_name": f"{node}BackwardBackward0", "aten_name": f"aten::{aten}_backward",
        "saved_args": back_saved, "__module__": __name__,
    })  # fmt: skip
    return forward, transpose


# torch's op per (mode, number of spatial dims): its node's name, its aten name
_OPS = {
    **{("nearest", d): _ops(f"UpsampleNearest{d}D", f"upsample_nearest{d}d", d) for d in (1, 2, 3)},
    **{
        ("nearest-exact", d): _ops(f"UpsampleNearestExact{d}D", f"_upsample_nearest_exact{d}d", d)
        for d in (1, 2, 3)
    },
    ("linear", 1): _ops("UpsampleLinear1D", "upsample_linear1d", 1, True),
    ("bilinear", 2): _ops("UpsampleBilinear2D", "upsample_bilinear2d", 2, True),
    ("bicubic", 2): _ops("UpsampleBicubic2D", "upsample_bicubic2d", 2, True),
    ("trilinear", 3): _ops("UpsampleTrilinear3D", "upsample_trilinear3d", 3, True),
    ("bilinear-aa", 2): _ops("UpsampleBilinear2DAa", "_upsample_bilinear2d_aa", 2, True),
    ("bicubic-aa", 2): _ops("UpsampleBicubic2DAa", "_upsample_bicubic2d_aa", 2, True),
    ("area", 2): _ops("AdaptiveAvgPool2D", "_adaptive_avg_pool2d", 2),
    ("area", 3): _ops("AdaptiveAvgPool3D", "_adaptive_avg_pool3d", 3),
}


def _resampled(input, mode, out_size, scales, align_corners, antialias):
    """``input`` resampled by torch's op for ``mode`` (its checks were done)."""
    dims = input.ndim - 2
    ops = _OPS[(f"{mode}-aa" if antialias else mode, dims)]
    xp, dtype = array_module(input._data), _working_dtype(input._data.dtype)
    in_size = input.shape[2:]
    tables = tuple(
        _table(xp, mode, in_size[d], out_size[d], scales[d], align_corners, antialias, dtype, dims)
        for d in range(dims)
    )
    plan = Plan(ops, tuple(input.shape), tuple(out_size), scales, align_corners, tables)
    return ops[0].apply(input, plan)


# --------------------------------------------------------------------------- interpolate

_RANK = {"linear": 3, "bilinear": 4, "trilinear": 5}  # (torch names these modes' rank)
_INTERPOLATING = ("linear", "bilinear", "bicubic", "trilinear")
_MODES = "nearest | linear | bilinear | bicubic | trilinear | lanczos | area | nearest-exact"


def interpolate(
    input,
    size=None,
    scale_factor=None,
    mode="nearest",
    align_corners=None,
    recompute_scale_factor=None,
    antialias=False,
):
    """Resize the spatial dims of ``input`` (N, C, W), (N, C, H, W) or (N, C, D, H, W) to
    ``size``, or by ``scale_factor`` (one for all dims, or one per dim).

    ``mode``: ``"nearest"``, ``"nearest-exact"``, ``"linear"`` (3-d), ``"bilinear"``,
    ``"bicubic"`` (4-d), ``"trilinear"`` (5-d), ``"area"``. ``align_corners=True`` maps the
    corner pixels' centres onto each other (interpolating modes only).
    ``recompute_scale_factor=True`` places pixels by the output size computed from the
    scale factor instead of by the factor itself. ``antialias=True`` (bilinear, bicubic)
    averages all the input pixels an output covers when shrinking.

    >>> import teachgrad as tg
    >>> x = tg.tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
    >>> interpolate(x, scale_factor=2)
    tensor([[[[1., 1., 2., 2.],
              [1., 1., 2., 2.],
              [3., 3., 4., 4.],
              [3., 3., 4., 4.]]]])
    >>> interpolate(x, size=3, mode="bilinear", align_corners=True)
    tensor([[[[1.0000, 1.5000, 2.0000],
              [2.0000, 2.5000, 3.0000],
              [3.0000, 3.5000, 4.0000]]]])
    """
    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: linear | "
                f"bilinear | bicubic | trilinear\n  {mode} copies or averages pixels: nothing "
                "is placed between them. Leave align_corners=None."
            )
    elif align_corners is None:
        align_corners = False
    dims = input.dim() - 2
    out_size, scales = _size_or_scales(input, size, scale_factor, dims)
    if recompute_scale_factor and size is not None:
        raise ValueError(
            "recompute_scale_factor is not meaningful with an explicit size.\n  It recomputes "
            "the scale from the output size that scale_factor gives; pass scale_factor instead."
        )
    if mode == "area" and out_size is None:
        recompute_scale_factor = True  # (area averages windows: it needs only the size)
    if recompute_scale_factor:
        out_size = [int(n * s) for n, s in zip(input.shape[2:], scales)]
        scales = None
    if antialias and not (mode in ("bilinear", "bicubic", "lanczos") and input.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear, bicubic, and lanczos modes and requires "
            "a 4-D tensor as input\n  Only the 2-d filters can be widened to average what they "
            "shrink; for the others, blur first (e.g. avg_pool2d) or use mode='area'."
        )
    _check_mode(input, mode, align_corners, antialias)
    if mode == "area":
        return _adaptive_avg_pool(input, out_size)
    scales = scales or [None] * dims
    if out_size is None:  # the size the scale factors give, as torch's C++ floors it
        out_size = [_floor(n * s) for n, s in zip(input.shape[2:], scales)]
    _check_upsample(input, mode, out_size, antialias)
    scales = tuple(None if s is None else float(s) for s in scales)
    return _resampled(input, mode, out_size, scales, align_corners, antialias)


def _size_or_scales(input, size, scale_factor, dims):
    """``(output size, None)`` or ``(None, scale factors)``, one per spatial dim."""
    spatial = list(input.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError(
            "only one of size or scale_factor should be defined\n  Either the output size or "
            "the factor that gives it, not both."
        )
    if size is not None:
        if not isinstance(size, list | tuple):
            return [size] * dims, None
        if len(size) != dims:
            raise ValueError(
                "Input and output must have the same number of spatial dimensions, but got input "
                f"with spatial dimensions of {spatial} and output size of {size}. Please provide "
                "input tensor in (N, C, d1, d2, ...,dK) format and output size in (o1, o2, ...,oK) "
                "format.\n  One output size per spatial dim (the dims after N and C)."
            )
        if not all(isinstance(n, int) for n in size):
            raise TypeError(
                "expected size to be one of int or Tuple[int] or Tuple[int, int] or Tuple[int, "
                f"int, int], but got size with types {[type(n) for n in size]}\n  Sizes count "
                "pixels: pass ints (a fractional size is scale_factor's job)."
            )
        return list(size), None
    if scale_factor is None:
        raise ValueError(
            "either size or scale_factor should be defined\n  Pass the output size, or the "
            "factor to multiply the input size by."
        )
    if not isinstance(scale_factor, list | tuple):
        return None, [scale_factor] * dims
    if len(scale_factor) != dims:
        raise ValueError(
            "Input and scale_factor must have the same number of spatial dimensions, but got "
            f"input with spatial dimensions of {spatial} and scale_factor of shape "
            f"{scale_factor}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
            "scale_factor in (s1, s2, ...,sK) format.\n  One factor per spatial dim (the dims "
            "after N and C)."
        )
    return None, list(scale_factor)


def _floor(x: float) -> int:
    if not math.isfinite(x):
        raise RuntimeError(
            "value cannot be converted to type int64_t without overflow\n  The scale factor "
            f"gives an output size of {x}."
        )
    return math.floor(x)


def _check_mode(input, mode, align_corners, antialias) -> None:
    """torch's errors for a mode that does not fit the input's rank (or that teachgrad lacks)."""
    ndim = input.ndim
    if mode in ("nearest", "nearest-exact", "area") and ndim in (3, 4, 5):
        return
    if mode in _INTERPOLATING and ndim == _RANK.get(mode, 4):
        return
    if mode == "lanczos" and ndim == 4:
        if align_corners:
            raise ValueError(
                "Lanczos mode does not support align_corners=True\n  Its window is placed by "
                "pixel centres only."
            )
        if not antialias:
            raise ValueError(
                "Lanczos mode requires antialias=True\n  The Lanczos filter is only "
                "implemented as an antialiasing filter."
            )
        raise NotImplementedError(
            "teachgrad has no lanczos mode\n  torch's lanczos is a 6-tap windowed sinc (CPU "
            "only); mode='bicubic', antialias=True is the closest here."
        )
    if mode in _RANK and ndim in (3, 4, 5):
        raise NotImplementedError(
            f"Got {ndim}D input, but {mode} mode needs {_RANK[mode]}D input\n  linear, bilinear "
            "and trilinear resize 1, 2 and 3 spatial dims, after the (N, C) dims."
        )
    raise NotImplementedError(
        f"Input Error: Only 3D, 4D and 5D input Tensors supported (got {ndim}D) for the modes: "
        f"{_MODES} (got {mode})\n  The input is (N, C, W), (N, C, H, W) or (N, C, D, H, W); "
        "unsqueeze a batch or channel dim if yours lacks one."
    )


def _op_name(mode, dims, antialias) -> str:
    return _OPS[(f"{mode}-aa" if antialias else mode, dims)][0].aten_name.removeprefix("aten::")


def _check_upsample(input, mode, out_size, antialias) -> None:
    """torch's checks of an upsampling op: the sizes, an empty channel dim, the dtype."""
    dims = input.ndim - 2
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in out_size):
        flag = "bool, " if mode in _INTERPOLATING else ""
        raise TypeError(
            f"{_op_name(mode, dims, antialias)}() received an invalid combination of arguments"
            f" - got (Tensor, list, {flag}NoneType), but expected one of:\n  size is a number "
            "of pixels: an int, or one int per spatial dim."
        )
    in_size = input.shape[2:]
    if min(*in_size, *out_size) <= 0:
        named = lambda sizes: ", ".join(f"{n}: {s}" for n, s in zip("DHW"[-dims:], sizes))  # noqa: E731
        joint = " and output" if dims == 1 else " output"
        raise RuntimeError(
            f"Input and output sizes should be greater than 0, but got input ({named(in_size)})"
            f"{joint} ({named(out_size)})\n  Every spatial dim needs at least one pixel, in and out."
        )
    if input.shape[1] == 0:
        raise RuntimeError(
            f"Non-empty {input.ndim}D data tensor expected but got a tensor with sizes "
            f"{list(input.shape)}\n  The channel dim is empty: there is nothing to resample."
        )
    kind = input.dtype.name
    if kind == "uint8" and mode in ("nearest", "nearest-exact"):
        return  # (a gather: exact for images of bytes too)
    if kind == "uint8" and mode in ("bilinear", "bicubic"):
        raise NotImplementedError(
            f"teachgrad does not {mode}-interpolate uint8 images\n  torch rounds them with "
            "fixed-point weights of its own; convert first (x.float()) and round back."
        )
    if not input.is_floating_point():
        raise NotImplementedError(
            f'"{_kernel(mode, dims, antialias)}" not implemented for '
            f"'{scalar_type_name(input)}'\n  Interpolation weighs pixels with fractions: "
            "convert the input first, e.g. input.float()."
        )


def _kernel(mode, dims, antialias) -> str:
    """The name of torch's CPU kernel that refuses a dtype (what its error says)."""
    if antialias:
        return "compute_index_ranges_weights"
    if dims == 2 and mode in ("nearest", "nearest-exact", "bilinear"):
        return f"upsample_{mode.split('-')[0]}2d_channels_last"
    kind = {"bicubic": "cubic", "nearest-exact": "nearest"}.get(mode, mode)
    return f"compute_indices_weights_{'linear' if kind in _RANK else kind}"


def _adaptive_avg_pool(input, out_size):
    """torch's ``adaptive_avg_pool1d/2d/3d``, what ``mode="area"`` runs."""
    dims = input.ndim - 2
    if not all(isinstance(n, int) for n in out_size):
        raise TypeError(
            f"adaptive_avg_pool{dims}d(): argument 'output_size' (position 2) must be tuple of "
            f"ints, but found element of type {type(out_size[0]).__name__} at pos 0\n  size is a "
            "number of pixels: an int, or one int per spatial dim."
        )
    pool = {1: adaptive_avg_pool1d, 2: adaptive_avg_pool2d, 3: adaptive_avg_pool3d}[dims]
    return pool(input, out_size)


@recorded_as("aten::adaptive_avg_pool1d")
def adaptive_avg_pool1d(input, out_size):
    """The 2-d pooling of ``input`` with an added dim of 1 (as torch does it)."""
    return squeeze(adaptive_avg_pool2d(unsqueeze(input, -2), [1, *out_size]), -2)


def _adaptive_avg_pool_nd(input, out_size):
    """The mean of each window of ``input`` (``_area``'s), one output pixel: the mean of all."""
    dims = len(out_size)
    name = f"adaptive_avg_pool{dims}d"
    if all(n == 1 for n in out_size):  # (torch takes the mean, with its node)
        return mean(input, tuple(range(-1, -dims - 1, -1)), keepdim=True)
    if min(out_size) < 0:
        shown = ", ".join(map(str, out_size)) if dims == 2 else "{}, {},{}".format(*out_size)
        raise RuntimeError(
            f"{name}: elements of output_size must be greater than or equal to 0 but received "
            f"{{{shown}}}\n  An output size counts pixels."
        )
    checked = range(2, 4) if dims == 2 else range(1, 5)  # (torch's 2-d pooling allows C = 0)
    for d in checked:
        if input.shape[d] == 0:
            raise RuntimeError(
                f"{name}(): Expected input to have non-zero size for non-batch dimensions, but "
                f"input has sizes {list(input.shape)} with dimension {d} being empty\n  An empty "
                "window has no mean."
            )
    if not input.is_floating_point():
        kernel = name if dims == 2 else f"{name}_cpu"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{scalar_type_name(input)}'\n  A mean of pixels "
            "is a fraction: convert the input first, e.g. input.float()."
        )
    return _resampled(input, "area", out_size, (None,) * dims, None, False)


adaptive_avg_pool2d = recorded_as("aten::adaptive_avg_pool2d")(_adaptive_avg_pool_nd)
adaptive_avg_pool3d = recorded_as("aten::adaptive_avg_pool3d")(_adaptive_avg_pool_nd)

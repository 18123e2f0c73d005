"""The Functions behind ``teachgrad.nn.functional``: activations, losses, convolution, pooling.

Each op is a ``Function`` like those in ``pointwise.py``: ``forward`` computes on
backend arrays, ``backward`` builds the input gradients from teachgrad ops, so
every op here can be differentiated twice (gradgradcheck). Where a backward is
itself a new linear map (the transposed convolution, the scatter of max-pooling,
the sum of embedding rows, the spreading of nll_loss's gradient), it is a Function
too, and *its* backward is the original map again: the pairs are closed under
differentiation. A few backwards that are not linear are Functions too, because one
op is much cheaper than the five that spell it out (softmax's, log_softmax's); their
own backwards are written with teachgrad ops. Each Function
also has a ``jvp`` (forward mode): the linear ones apply themselves to the
tangent, the others reuse their backward's partial derivatives.

What lives here: the Functions and the array helpers they share (im2col windows,
an ``erf``). What does not: argument checking and torch's defaults, which are in
``teachgrad/nn/functional.py``, the public surface; ``F.pad``'s Function and the
padding of arrays (``pad_array``, used here too), which are in ``shape.py``.

Convolution in one paragraph: a (kh, kw) filter slid over an image with some
stride and dilation sees, at each output pixel, a (C, kh, kw) window. ``as_strided``
makes all windows one array *view* (no copy); reshaping it into a matrix with one
column per output pixel ("im2col") turns the convolution into matrix products, one
per image (done a few images at a time, so that the matrix fits in the CPU's cache).
The gradient for the input is a correlation too: spread the output
gradient back onto the input grid (``stride`` apart) and correlate with the
flipped filters.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, 1, 3, 3, requires_grad=True)
    >>> y = Convolution.apply(x, tg.ones(1, 1, 2, 2), None, (1, 1), ((0, 0), (0, 0)), (1, 1), 1)
    >>> y, y.grad_fn.name()
    (tensor([[[[4., 4.],
              [4., 4.]]]], grad_fn=<ConvolutionBackward0>), 'ConvolutionBackward0')
"""

from __future__ import annotations

import math
import warnings
from operator import itemgetter

from .._backend import (
    array_module,
    bool_,
    device_assert,
    device_of,
    numpy_module,
    quiet,
    strided_view,
    tie_keeps_first,
)
from .._printing import scalar_type_name
from .._tensor import Tensor, _given_and_wrapped, wrap_array
from ..autograd.builtin import Builtin, int_tuple, remember_dim
from ..autograd.forward_ad import linear_jvp, tangent_sum, zero_if_none
from . import fused
from .index import _IndexAdd
from .linalg import keep_layouts, layout_args
from .pointwise import SavesResult, _sigmoid, _unary, operands, where
from .reduce import dtype_argument, row_major
from .shape import pad_array

# --------------------------------------------------------------------------- array helpers


def _erf(xp, x):
    """The error function to double precision, from backend arrays only.

    NumPy has no ``erf`` (CuPy's lives in cupyx), so one recipe serves both:
    for |x| < 2.5 the series ``erf(x) = 2/√π · e^(-x²) · Σ (2x²)ⁿ x / (1·3·5···(2n+1))``,
    whose terms are all positive (no cancellation; 40 terms reach 1e-16); beyond,
    ``erfc(x) = e^(-x²) / (√π · (x + ½/(x + 1/(x + (3/2)/(x + ...)))))``, Laplace's
    continued fraction, evaluated from its tail inwards.

    On the CPU each formula computes only its own elements (boolean indexing). On a GPU,
    indexing with a mask makes the CPU wait while the GPU counts the mask's True values:
    there both formulas compute every element (each given values in its range) and
    ``where`` picks.
    """
    z = xp.abs(x.astype("float64"))
    near = z < 2.5
    if xp is numpy_module():
        out = xp.empty_like(z)
        out[near] = _erf_series(xp, z[near])
        out[~near] = _erf_tail(xp, z[~near])
    else:
        series = _erf_series(xp, xp.where(near, z, 0.0))
        out = xp.where(near, series, _erf_tail(xp, xp.where(near, 2.5, z)))
    return (xp.sign(x) * out).astype(x.dtype)


def _erf_series(xp, a):
    """erf(a) for 0 <= a < 2.5, from the series (``_erf``)."""
    two_a2 = 2 * a * a
    term, total = a.copy(), a.copy()
    for n in range(1, 40):
        term *= two_a2 / (2 * n + 1)
        total += term
    return 2 / math.sqrt(math.pi) * xp.exp(-a * a) * total


def _erf_tail(xp, b):
    """erf(b) for b >= 2.5, from the continued fraction of erfc (``_erf``)."""
    fraction = b.copy()  # the continued fraction, cut off after 40 levels
    for k in range(40, 0, -1):
        fraction = b + (k / 2) / fraction
    return 1 - xp.exp(-b * b) / (math.sqrt(math.pi) * fraction)


def _windows(x, kernel, stride, dilation, out_hw):
    """Every (kh, kw) window of a padded batch ``x`` (N, C, H, W) as one *view* of shape
    (N, C, OH, OW, kh, kw): moving one output pixel steps ``stride`` input pixels, moving
    one kernel tap steps ``dilation`` pixels. Nothing is copied; only strides change."""
    s_n, s_c, s_h, s_w = x.strides
    shape = (*x.shape[:2], *out_hw, *kernel)
    strides = (s_n, s_c, s_h * stride[0], s_w * stride[1], s_h * dilation[0], s_w * dilation[1])
    return strided_view(x, shape, strides)


def _out_size(size, kernel, stride, dilation):
    """How many windows of ``kernel`` taps, ``dilation`` apart, fit in ``size``, ``stride`` apart."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _pad(x, pairs, value=0):
    """``pad_array(x, pairs, value)``, or ``x`` itself when there is nothing to pad (no copy)."""
    if any(before or after for before, after in pairs):
        return pad_array(x, pairs, value)
    return x


# The convolutions below run a few images at a time: on the CPU one chunk's im2col columns
# (see ``_im2col``) then fit in the cache while the matrix product reads them. One product
# over the whole batch would first write a matrix far larger than the cache (58 MB for 64
# images of 32x28x28 and 3x3 filters), then read it back from memory: about 3x slower.
# A GPU has no such cache to fit, and each chunk costs a dozen kernel launches: there the
# chunks are as large as memory comfortably allows (bench_gpu.py's conv step on an H200:
# 32.6 ms a step with CPU-sized chunks of one image, 4.8 ms with one chunk).
_CHUNK_BYTES = {"cpu": 1 << 20, "cuda": 1 << 28}  # one core's L2 cache; 256 MB of GPU memory


def _image_chunks(x, bytes_per_image):
    """``(start, stop)`` ranges over the images of ``x``, each as many as fit in a chunk."""
    n = x.shape[0]
    budget = _CHUNK_BYTES[device_of(x).type]
    step = max(1, budget // max(bytes_per_image, 1))
    return [(start, min(start + step, n)) for start in range(0, n, step)]


def _im2col(x, kernel, stride, dilation, out_hw, groups):
    """The windows of images ``x`` as one matrix per image and group:
    (N, groups, C/groups*kh*kw, OH*OW).

    One row per (input channel, kernel tap), one column per output pixel: a
    correlation is then a matrix product with the flattened filters. (Columns
    run along output pixels because those are contiguous in memory: the copy is fast.)
    """
    n, c = x.shape[:2]
    (oh, ow), (kh, kw) = out_hw, kernel
    win = _windows(x, kernel, stride, dilation, out_hw)
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)  # split channels into groups (a view)
    return win.transpose(0, 1, 2, 5, 6, 3, 4).reshape(n, groups, c // groups * kh * kw, oh * ow)


def _correlate(x, w, padding, stride, dilation, groups):
    """What deep learning calls convolution: filters ``w`` (O, C/groups, kh, kw) slid over a
    batch ``x`` (N, C, H, W) padded by ``padding`` ((top, bottom), (left, right); negative
    amounts crop). Returns (N, O, OH, OW).

    Chunk by chunk of images: pad the chunk, copy its windows into columns (``_im2col``),
    and multiply by the filters straight into the chunk's rows of the output.
    """
    xp = array_module(x)
    n, c = x.shape[:2]
    o, c_group, kh, kw = w.shape
    out_hw = tuple(
        _out_size(x.shape[2 + i] + sum(padding[i]), w.shape[2 + i], stride[i], dilation[i])
        for i in range(2)
    )
    pixels = out_hw[0] * out_hw[1]
    filters = w.reshape(groups, o // groups, c_group * kh * kw)
    out = xp.empty((n, o, *out_hw), xp.result_type(x, w))
    for start, stop in _image_chunks(x, c * kh * kw * pixels * x.itemsize):
        cols = _im2col(_pad(x[start:stop], padding), (kh, kw), stride, dilation, out_hw, groups)
        # (groups, O/groups, rows) @ (images, groups, rows, pixels): one product per image
        # and group, written into out[start:stop] seen as (images, groups, O/groups, pixels)
        rows_out = out[start:stop].reshape(stop - start, groups, o // groups, pixels)
        xp.matmul(filters, cols, out=rows_out)
    return out


def _correlate_weight_grad(x, grad, kernel, padding, stride, dilation, groups):
    """∂L/∂w of ``y = _correlate(x, w, padding, ...)`` given ``grad`` = ∂L/∂y: each filter tap
    collects the input pixels it saw, weighted by the gradient of the output they made (the
    same im2col columns, chunk by chunk of images; the chunks' sums add up)."""
    xp = array_module(x)
    n, o, oh, ow = grad.shape
    c = x.shape[1]
    rows = c // groups * kernel[0] * kernel[1]
    grad_t = grad.reshape(n, groups, o // groups, oh * ow).transpose(0, 1, 3, 2)
    # the transposed gradient (groups, rows, O/groups): ``cols @ gradᵀ`` runs about twice as
    # fast as ``grad @ colsᵀ`` (the long pixel dim is contracted along rows of both operands)
    grad_w_t = xp.zeros((groups, rows, o // groups), grad.dtype)
    for start, stop in _image_chunks(x, c * kernel[0] * kernel[1] * oh * ow * x.itemsize):
        cols = _im2col(_pad(x[start:stop], padding), kernel, stride, dilation, (oh, ow), groups)
        # (images, groups, rows, pixels) @ (images, groups, pixels, O/groups), summed over images
        grad_w_t += (cols @ grad_t[start:stop]).sum(axis=0)
    return grad_w_t.transpose(0, 2, 1).reshape(o, c // groups, *kernel)


def _spread_back(grad, kernel, in_hw, stride, pad_before, dilation):
    """The grid of a transposed correlation, and how to pad it: ``grad``'s pixels put back
    ``stride`` apart (zeros between; ``grad`` itself for stride 1), and the padding
    ``((top, bottom), (left, right))`` after which a stride-1 correlation with a (kh, kw)
    kernel of this ``dilation`` gives exactly the ``in_hw`` input pixels (padding dropped)."""
    n, c, oh, ow = grad.shape
    spread = grad
    if stride != (1, 1):
        spread = array_module(grad).zeros(
            (n, c, (oh - 1) * stride[0] + 1, (ow - 1) * stride[1] + 1), grad.dtype
        )
        spread[:, :, :: stride[0], :: stride[1]] = grad
    pairs = []
    for i in range(2):
        reach = dilation[i] * (kernel[i] - 1)  # how far a window extends past its first tap
        before = reach - pad_before[i]
        pairs.append((before, in_hw[i] + reach - spread.shape[2 + i] - before))
    return spread, tuple(pairs)


def _correlate_input_grad(grad, w, in_hw, stride, pad_before, dilation, groups):
    """∂L/∂x of ``y = _correlate(x, w, padding, ...)``: the transposed correlation, computed as
    a correlation of the spread-back gradient with the flipped, channel-swapped filters."""
    o, c_group, kh, kw = w.shape
    grid, pairs = _spread_back(grad, (kh, kw), in_hw, stride, pad_before, dilation)
    swapped = w.reshape(groups, o // groups, c_group, kh, kw).transpose(0, 2, 1, 3, 4)
    flipped = swapped.reshape(groups * c_group, o // groups, kh, kw)[:, :, ::-1, ::-1]
    return _correlate(grid, flipped, pairs, (1, 1), dilation, groups)


def _scatter_add(positions, values, size):
    """A flat array of ``size`` zeros with ``values`` added at ``positions`` (repeats add up).

    ``bincount`` with weights is exactly this scatter-add, vectorised; it sums in
    float64, so the caller casts back to its dtype.
    """
    xp = array_module(values)
    return xp.bincount(positions.reshape(-1), values.reshape(-1), minlength=size)


def _spread_loss_grad(grad, reduction, count):
    """The share of the reduced loss's gradient that each element's loss gets."""
    return grad / count if reduction == "mean" and count else grad


def _reduce_loss(loss, reduction):
    """Per-element losses (an array or a Tensor) reduced as ``reduction`` says."""
    if reduction == "mean":  # (an array's mean of nothing warns: 0 / 0 makes the nan quietly)
        return loss.mean() if isinstance(loss, Tensor) else loss.sum() / loss.size
    return loss.sum() if reduction == "sum" else loss


# --------------------------------------------------------------------------- activations


# erf and silu are elementwise ops like exp: made by pointwise's ``_unary`` from their forward
# on arrays and their derivative (from teachgrad ops, so it can be differentiated again)


def _erf_slope(x):
    """``d/dx erf(x) = 2/√π · e^(-x²)`` (also used by exact GELU's backward)."""
    return (2 / math.sqrt(math.pi)) * (-x * x).exp()


def _silu_slope(x):
    """``d/dx x·σ(x) = σ(x) · (1 + x · (1 - σ(x)))``."""
    s = x.sigmoid()
    return s * (1 + x * (1 - s))


# fmt: off
Erf = _unary("Erf", "ErfBackward0", quiet(_erf), lambda g, x: g * _erf_slope(x), formula="grad · 2/√π · exp(−self²)", module=__name__, arrays=False)
Silu = _unary("Silu", "SiluBackward0", quiet(lambda xp, x: x * _sigmoid(xp, x)), lambda g, x: g * _silu_slope(x), formula="grad · σ(self) · (1 + self · (1 − σ(self)))", module=__name__, arrays=False)
# fmt: on


_TANH_SCALE = math.sqrt(2 / math.pi)  # GELU's tanh approximation: tanh(√(2/π) (x + 0.044715 x³))
_TANH_CUBIC = 0.044715


def reduction_number(reduction: str) -> int:
    """A loss's ``reduction`` as torch's node keeps it: the number of its enum.

    >>> reduction_number("none"), reduction_number("mean"), reduction_number("sum")
    (0, 1, 2)
    """
    return ("none", "mean", "sum").index(reduction)


class Gelu(Builtin):
    """``x · Φ(x)`` (Φ the standard normal CDF), or its tanh approximation."""

    node_name = "GeluBackward0"
    saved_names = ("self",)
    saved_args = {"approximate": "approximate"}
    # (φ the normal density; approximate="tanh" differentiates the tanh approximation instead)
    formula = {"self": "grad · (Φ(self) + self · φ(self))"}

    @staticmethod
    @quiet
    def forward(ctx, a, approximate):
        ctx.to_save = (a,)
        ctx.approximate = approximate
        x = a._data
        xp = array_module(x)
        if approximate == "tanh":
            return 0.5 * x * (1 + xp.tanh(_TANH_SCALE * (x + _TANH_CUBIC * x * x * x)))
        return 0.5 * x * (1 + _erf(xp, x * math.sqrt(0.5)))

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * _gelu_slope(x, ctx.approximate), None

    @staticmethod
    def jvp(ctx, t, _):
        return t * _gelu_slope(ctx.inputs[0], ctx.approximate)


def _gelu_slope(x, approximate):
    """GELU's derivative, from teachgrad ops (so that it can be differentiated again)."""
    if approximate == "tanh":
        t = (_TANH_SCALE * (x + _TANH_CUBIC * x * x * x)).tanh()
        inner_slope = _TANH_SCALE * (1 + 3 * _TANH_CUBIC * x * x)
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * inner_slope
    cdf = 0.5 * (1 + Erf.apply(x * math.sqrt(0.5)))  # d/dx x·Φ(x) = Φ(x) + x·φ(x)
    pdf = (-0.5 * x * x).exp() / math.sqrt(2 * math.pi)
    return cdf + x * pdf


class Softmax(SavesResult):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed as ``exp(x - max)``: same value, no overflow.

    Backward (y the output, g its gradient): ``y · (g - sum(g · y))`` along ``dim``.
    """

    node_name = "SoftmaxBackward0"
    formula = {"self": "result · (grad − sum(grad · result, dim))"}
    saved_args = {"dim": "given_dim"}

    @staticmethod
    @quiet
    def forward(ctx, a, dim):
        dim = remember_dim(ctx, dim, a._data.ndim)
        x = a._data
        xp = array_module(x)
        if x.size == 0:  # nothing to compute: an empty result of x's dtype, as torch
            return xp.empty_like(x)
        if x.ndim == 0:  # one element: its share is all of it (NaN for inf or NaN)
            return xp.exp(x - x)
        e = xp.exp(x - x.max(axis=dim, keepdims=True))
        return row_major(e / e.sum(axis=dim, keepdims=True))  # (torch's result is row-major)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return SoftmaxBackwardData.apply(grad, y, ctx.dim), None

    @staticmethod
    def jvp(ctx, t, _):  # the Jacobian diag(y) - y yᵀ is symmetric: same formula
        y = ctx.result
        return y * (t - (t * y).sum(ctx.dim, keepdim=True))


class SoftmaxBackwardData(Builtin):
    """Softmax's backward, ``y · (g - sum(g · y))`` along ``dim``, as one op (not five).

    As a function of both ``g`` and ``y`` (which depends on the input) it has its own
    backward, written with teachgrad ops, for double backward. With ``s = sum(g · y)``:
    ``∂/∂g`` is the same formula applied to the incoming gradient ``gg``, and
    ``∂/∂y = gg · (g - s) - g · sum(gg · y)``.
    """

    node_name = "SoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")
    formula = {
        "grad_output": "output · (grad − sum(grad · output, dim))",
        "output": "grad · (grad_output − s) − grad_output · sum(grad · output, dim); "
        "s = sum(grad_output · output, dim)",
    }

    @staticmethod
    def forward(ctx, grad, y, dim):
        ctx.to_save, ctx.dim = (grad, y), dim
        g, out = grad._data, y._data
        axis = dim if g.ndim else ()  # (a 0-d tensor has nothing to sum over)
        return out * (g - (g * out).sum(axis=axis, keepdims=True))

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        need_g, need_y = ctx.needs_input_grad[:2]
        dim = ctx.dim
        grad_g = SoftmaxBackwardData.apply(gg, y, dim) if need_g else None
        grad_y = None
        if need_y:
            s = (g * y).sum(dim, keepdim=True)
            grad_y = gg * (g - s) - g * (gg * y).sum(dim, keepdim=True)
        return grad_g, grad_y, None

    @staticmethod
    def jvp(ctx, t_g, t_y, _):  # the product rule on y · (g - sum(g · y))
        g, y, dim = ctx.inputs
        return tangent_sum(
            None if t_g is None else SoftmaxBackwardData.apply(t_g, y, dim),
            None
            if t_y is None
            else t_y * (g - (g * y).sum(dim, keepdim=True)) - y * (g * t_y).sum(dim, keepdim=True),
        )


class LogSoftmax(SavesResult):
    """``x - logsumexp(x)`` along ``dim`` (max-subtracted, so large inputs are fine).

    Backward (y the output, g its gradient): ``g - exp(y) · sum(g)`` along ``dim``.
    """

    node_name = "LogSoftmaxBackward0"
    formula = {"self": "grad − exp(result) · sum(grad, dim)"}
    saved_args = {"dim": "given_dim"}

    @staticmethod
    @quiet
    def forward(ctx, a, dim):
        dim = remember_dim(ctx, dim, a._data.ndim)
        x = a._data
        xp = array_module(x)
        if x.size == 0:  # nothing to compute: an empty result of x's dtype, as torch
            return xp.empty_like(x)
        if x.ndim == 0:  # log(its share of all of it) = 0 (NaN for inf or NaN)
            return x - x
        out = fused.log_softmax_rows(x, dim)  # on a GPU: one kernel instead of six
        if out is not None:
            return out
        shifted = x - x.max(axis=dim, keepdims=True)
        return row_major(shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True)))

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return LogSoftmaxBackwardData.apply(grad, y, ctx.dim), None

    @staticmethod
    def jvp(ctx, t, _):  # the Jacobian I - 1 softmaxᵀ, applied to t
        return t - (ctx.result.exp() * t).sum(ctx.dim, keepdim=True)


class LogSoftmaxBackwardData(Builtin):
    """LogSoftmax's backward, ``g - exp(y) · sum(g)`` along ``dim``, as one op (not four).

    As a function of both ``g`` and ``y`` (which depends on the input) it has its own
    backward, written with teachgrad ops, for double backward:
    ``∂/∂g = gg - sum(gg · exp(y))`` and ``∂/∂y = -gg · exp(y) · sum(g)``.
    """

    node_name = "LogSoftmaxBackwardDataBackward0"
    saved_names = ("grad_output", "output")
    formula = {
        "grad_output": "grad − sum(grad · exp(output), dim)",
        "output": "−grad · exp(output) · sum(grad_output, dim)",
    }

    @staticmethod
    def forward(ctx, grad, y, dim):
        ctx.to_save, ctx.dim = (grad, y), dim
        g = grad._data
        out = fused.log_softmax_rows_grad(g, y._data, dim)  # on a GPU: one kernel, not four
        if out is not None:
            return out
        axis = dim if g.ndim else ()  # (a 0-d tensor has nothing to sum over)
        return g - array_module(g).exp(y._data) * g.sum(axis=axis, keepdims=True)

    @staticmethod
    def backward(ctx, gg):
        g, y = ctx.saved_tensors
        need_g, need_y = ctx.needs_input_grad[:2]
        softmax = y.exp()
        grad_g = gg - (gg * softmax).sum(ctx.dim, keepdim=True) if need_g else None
        grad_y = -gg * softmax * g.sum(ctx.dim, keepdim=True) if need_y else None
        return grad_g, grad_y, None

    @staticmethod
    def jvp(ctx, t_g, t_y, _):  # the product rule on g - exp(y) · sum(g)
        g, y, dim = ctx.inputs
        softmax = y.exp()
        return tangent_sum(
            None if t_g is None else t_g - softmax * t_g.sum(dim, keepdim=True),
            None if t_y is None else -t_y * softmax * g.sum(dim, keepdim=True),
        )


# --------------------------------------------------------------------------- linear


class Addmm(Builtin):
    """``bias + mat1 @ mat2`` (what ``linear`` computes for a batch of rows)."""

    on_arrays = True
    node_name = "AddmmBackward0"
    saved_names = ("mat1", "mat2")
    formula = {"self": "grad summed over the rows", "mat1": "grad @ mat2ᵀ", "mat2": "mat1ᵀ @ grad"}
    saved_args = {
        "alpha": "alpha",
        "beta": "beta",
        **layout_args("mat1", 0),
        **layout_args("mat2", 1),
    }

    @staticmethod
    @quiet
    def forward(ctx, bias, mat1, mat2):
        _, need_1, need_2 = ctx.needs_input_grad
        ctx.to_save = (mat1 if need_2 else None, mat2 if need_1 else None)  # what backward uses
        ctx.bias_ndim = bias._data.ndim
        ctx.mat2_transposed = not mat2._data.flags.c_contiguous  # (see backward)
        out = mat1._data @ mat2._data
        out += bias._data  # in place: one (rows, out) array instead of two
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.alpha = ctx.beta = 1  # (linear's: bias + mat1 @ mat2)
        ctx.layouts = keep_layouts(*inputs[1:], *ctx.needs_input_grad[1:])

    @staticmethod
    def backward(ctx, grad):
        mat1, mat2 = ctx.saved_tensors
        need_bias, need_1, need_2 = ctx.needs_input_grad
        grad_2 = None
        if need_2:
            # Give mat2's gradient mat2's memory layout, as torch does. ``linear`` passes
            # ``weight.t()``, a transposed view: ``(gradᵀ @ mat1)ᵀ`` is then a transposed
            # view too, so after TBackward the weight's gradient is row-major like the
            # weight itself and the optimizer's ``.grad`` needs no reordering copy.
            grad_2 = (grad.mT @ mat1).mT if ctx.mat2_transposed else mat1.mT @ grad
        # the bias was broadcast over the rows: its gradient sums them (a bias of another
        # shape, (1, m) or (n, 1), gets the whole grad, which the engine sums back to it)
        grad_bias = (grad.sum(0) if ctx.bias_ndim == 1 else grad) if need_bias else None
        return grad_bias, grad @ mat2.mT if need_1 else None, grad_2

    @staticmethod
    def jvp(ctx, t_bias, t1, t2):  # (a missing tangent as zeros, as matmul's)
        _, mat1, mat2 = ctx.inputs
        return tangent_sum(t_bias, zero_if_none(t1, mat1) @ mat2, mat1 @ zero_if_none(t2, mat2))


# --------------------------------------------------------------------------- pdist


def _row_pairs(x):
    """The rows ``i < j`` of a matrix, pair by pair in torch's order (the upper triangle,
    row by row), and their differences ``x[i] − x[j]``."""
    i, j = array_module(x).triu_indices(x.shape[0], 1)
    return i, j, x[i] - x[j]


@quiet
def _p_norms(diff, p):
    """The p-norm of each row of ``diff`` (p = 0 counts the nonzero entries)."""
    xp, size = array_module(diff), abs(diff)
    if p == 0:
        return (size != 0).sum(-1).astype(diff.dtype)
    if p == math.inf:  # (rows of no entries: 0, as torch's)
        return size.max(-1) if diff.shape[-1] else xp.zeros(diff.shape[:-1], diff.dtype)
    if p == 1:
        return size.sum(-1)
    if p == 2:
        return xp.sqrt((diff * diff).sum(-1))
    return (size**p).sum(-1) ** (1 / p)


@quiet
def _p_norm_slopes(diff, dist, p):
    """∂ dist / ∂ diff for each entry, with torch's values where the norm has no slope: 0 at
    equal rows (dist 0), and for p < 1 where an entry is 0; for p = inf each entry as large
    as the norm gets the whole slope (ties are not shared)."""
    xp, size, dist = array_module(diff), abs(diff), dist[:, None]
    if p == 0:  # (a count: flat almost everywhere)
        return xp.zeros_like(diff)
    if p == math.inf:
        return xp.sign(diff) * (size == dist)
    slopes = xp.sign(diff) * size ** (p - 1) / dist ** (p - 1)  # (p = 2: diff / dist)
    flat = (dist == 0) | ((diff == 0) & (p < 1))
    return xp.where(flat, 0, slopes).astype(diff.dtype)


class Pdist(Builtin):
    """``pdist``: the p-norm distance between every two rows of a matrix."""

    node_name = "PdistBackward0"
    saved_names = ("self", "result")
    saved_args = {"p": "p"}
    formula = {"self": "grad · ∂‖selfᵢ − selfⱼ‖ₚ of each pair, added to rows i and j (with − at j)"}

    @staticmethod
    def forward(ctx, a, p):
        ctx.p = p
        return _p_norms(_row_pairs(a._data)[2], p)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (inputs[0], output)

    @staticmethod
    def backward(ctx, grad):
        x, result = ctx.saved_tensors
        return _PdistBackward.apply(grad, x, ctx.p, result), None

    @staticmethod
    def jvp(ctx, *_):
        raise NotImplementedError(
            "Trying to use forward AD with _pdist_forward that does not support it because it "
            "has not been implemented yet.\n  torch has no tangent rule for pdist: use "
            "reverse mode (backward) for its gradient."
        )


class _PdistBackward(Builtin):
    """pdist's gradient: each pair's slope times its grad, added to row i, taken from row j.
    torch has no derivative of it (no double backward through pdist)."""

    node_name = "PdistBackwardBackward0"
    formula = {"grad": "no derivative: backward raises (as in torch)"}

    @staticmethod
    def forward(ctx, grad, x, p, result):
        x = x._data
        i, j, diff = _row_pairs(x)
        each = _p_norm_slopes(diff, result._data, p) * grad._data[:, None]
        n, m = x.shape
        columns = array_module(x).arange(m)
        added = _scatter_add(i[:, None] * m + columns, each, n * m)
        taken = _scatter_add(j[:, None] * m + columns, each, n * m)
        return (added - taken).reshape(n, m).astype(x.dtype)

    @staticmethod
    def backward(ctx, *_):
        raise NotImplementedError(
            "the derivative for '_pdist_backward' is not implemented.\n  torch has no second "
            "derivative of pdist: for one, write the distances with ops, e.g. "
            "(x[i] - x[j]).norm(p, dim=-1)."
        )


def pdist(input, p=2):
    """The p-norm distances between every two rows of a matrix: for rows i < j, in the order
    of the upper triangle, row by row.

    >>> import teachgrad as tg
    >>> tg.pdist(tg.tensor([[0.0, 0.0], [3.0, 4.0], [0.0, 1.0]]))
    tensor([5.0000, 1.0000, 4.2426])
    """
    if input.ndim != 2:
        raise RuntimeError(
            f"pdist only supports 2D tensors, got: {input.ndim}D\n  pdist compares the rows "
            "of one (n, m) matrix."
        )
    if not input.is_floating_point():
        raise RuntimeError(
            "pdist only supports floating-point dtypes\n  Convert first, e.g. x.float()."
        )
    if p < 0:
        raise RuntimeError(
            "pdist only supports non-negative p values\n  p is the norm's order: 0, 1, 2 "
            "... or inf."
        )
    return Pdist.apply(input, float(p))


# --------------------------------------------------------------------------- losses


def _refuse_integer_mse(x):
    """torch's mse_loss has no integer kernel: a squared error of class ids means little."""
    raise NotImplementedError(
        f"\"mse_cpu\" not implemented for '{scalar_type_name(x)}'\n  mse_loss compares floats: "
        "cast the input and the target first, e.g. input.float()."
    )


class MseLoss(Builtin):
    """``(input - target)²``, reduced; both arguments get gradients."""

    node_name = "MseLossBackward0"
    saved_names = ("self", "target")
    saved_args = {"reduction": ("reduction", reduction_number)}
    # N: the number of elements for reduction="mean", else 1
    formula = {
        "self": "2 · grad / N · (self − target)",
        "target": "−2 · grad / N · (self − target)",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, target, reduction):
        ctx.to_save = (a, target)
        ctx.reduction = reduction
        x, t = operands(
            a, target, broadcast=False
        )  # torch's promotion: float32 and int64 give float32
        if x.dtype.kind != "f":
            _refuse_integer_mse(x)
        diff = x - t
        return _reduce_loss(diff * diff, reduction)

    @staticmethod
    def backward(ctx, grad):
        a, target = ctx.saved_tensors
        # (torch's kernel subtracts a bool input or target; the `-` operator refuses them)
        if a.dtype is bool_:
            a = a.to(target.dtype)
        if target.dtype is bool_:
            target = target.to(a.dtype)
        grad_a = 2 * (a - target) * _spread_loss_grad(grad, ctx.reduction, a.numel())
        return grad_a, -grad_a if ctx.needs_input_grad[1] else None, None

    @staticmethod
    def jvp(ctx, t_a, t_target, _):
        a, target, _ = ctx.inputs
        slope = 2 * (a - target)
        # one term per argument, a missing tangent as 0 (as torch's: an inf slope gives NaN)
        t_a, t_target = (0.0 if t is None else t for t in (t_a, t_target))
        return _reduce_loss(slope * t_a - slope * t_target, ctx.reduction)


class NllLoss(Builtin):
    """Negative log-likelihood of class indices: ``-weight[t] · input[n, t]`` per sample.

    ``input`` is (C,) or (N, C, ...), the class dim is 1 (0 for 1-d input). Targets
    equal to ``ignore_index`` contribute nothing; ``'mean'`` divides by the summed
    weight of the targets that count. The gradient is ``-weight[t]`` (over that sum)
    at each sample's target class and zero elsewhere (``NllLossGrad``).

    ``target`` and ``weight`` come by keyword: torch gives them no edge in the graph.
    """

    node_name = "NllLossBackward0"
    saved_names = ("self", "target", "weight")
    saved_args = {
        "ignore_index": ("options", itemgetter(0)),
        "reduction": ("options", lambda options: reduction_number(options[1])),
    }
    # (each node shows the rule it applies: without class weights or the mean, those
    # factors go, see _nll_rule; total_weight: torch's _saved_total_weight)
    formula = {"self": "zeros, −grad · weight[target] / total_weight at target"}

    @staticmethod
    def torch_inputs(args, kwargs) -> tuple:
        """torch's order: self, target, weight, reduction, ignore_index."""
        return (args[0], kwargs["target"], kwargs["weight"], args[2], args[1])

    @staticmethod
    @quiet
    def forward(ctx, a, ignore_index, reduction, *, target, weight):
        x, t = a._data, target._data
        xp = array_module(x)
        class_dim = 0 if x.ndim == 1 else 1
        n_classes = x.shape[class_dim]
        ctx.to_save, ctx.options = (a, target, weight), (ignore_index, reduction)
        ctx.weighted = weight is not None
        ctx.in_shape, ctx.class_dim = x.shape, class_dim
        # The common case first, on the CPU: no class weights, every target a valid class and
        # none ignored (three quick reductions tell). The loss is then just -input[n, t[n]],
        # reduced, and each sample's gradient coefficient is the same number. Anything else
        # (or an empty batch) takes the general path below, which also reports bad targets.
        # On a GPU, reading the answer would make the CPU wait for it: there one kernel
        # computes the loss, or the general path runs, and neither needs an answer.
        if (
            xp is numpy_module()
            and weight is None
            and t.size
            and bool((t.min() >= 0) & (t.max() < n_classes) & ~(t == ignore_index).any())
        ):
            ctx.targets = t
            ctx.coefficient = -1 / t.size if reduction == "mean" else -1
            loss = -_pick_targets(x, t, class_dim)
            # (sum / count is NumPy's mean, without the Python wrapper around it)
            return loss.sum() / t.size if reduction == "mean" else _reduce_loss(loss, reduction)

        fast = fused.nll_loss_rows(x, t, ignore_index, reduction) if weight is None else None
        if fast is not None:  # on a GPU: one kernel instead of about 25 (its gradient too)
            loss, ctx.total, bad = fast
            device_assert(bad, None, _BAD_TARGET)  # (a GPU's array: only recorded)
            ctx.targets, ctx.coefficient = t, None
            return loss
        out_of_range, valid, w, ignored = _counted_targets(
            xp, t, ignore_index, n_classes, weight, x.dtype
        )
        device_assert(
            out_of_range.any(),
            lambda: IndexError(
                f"Target {int(t[out_of_range].reshape(-1)[0])} is out of bounds.\n  Class indices "
                f"must be in [0, {n_classes}) for input of shape {tuple(x.shape)} ({n_classes} "
                f"classes along dim {class_dim})."
            ),
            _BAD_TARGET,
        )
        picked = _pick_targets(x, valid, class_dim)  # input[n, t[n], ...]
        ctx.targets = valid
        ctx.coefficient, total = _coefficients(xp, w, ignored, reduction)
        loss = -w * picked
        if reduction == "mean":  # a total weight of 0 (all targets ignored): 0/0, nan, as torch
            return loss.sum() / total
        return _reduce_loss(loss, reduction)

    @classmethod
    def backward(cls, ctx, grad):
        a, target, weight = ctx.saved_tensors
        gradient = NllLoss2dGrad if cls is NllLoss2d else NllLossGrad  # torch's node names
        return gradient.apply(grad, *ctx.options, ctx, a, target=target, weight=weight), None, None

    @staticmethod
    def jvp(ctx, t, *_):  # linear in the input (the weights are constants)
        return type(ctx)._forward_cls.apply(t, *ctx.inputs[1:], **ctx.kwargs)


class NllLoss2d(NllLoss):
    """``NllLoss`` of (N, C, H, W) scores (torch's node name for images)."""

    node_name = "NllLoss2DBackward0"


def _saved_total_weight(node):
    """``grad_fn._saved_total_weight``, as torch's node shows it: the summed class weight of
    the targets that count (their number, without class weights), 0 for ``reduction="none"``;
    worked out from what the node saved, so that it is gone after backward, as torch's.

    >>> import teachgrad as tg, teachgrad.nn.functional as F
    >>> y = F.nll_loss(tg.zeros(3, 2, requires_grad=True), tg.tensor([0, 1, 1]), ignore_index=0)
    >>> y.grad_fn._saved_total_weight
    tensor(2.)
    """
    x, target, weight = node.saved_tensors
    ignore_index, reduction = node.options
    t = target._data
    xp = array_module(t)
    counted = t != ignore_index
    if reduction == "none":
        total = 0
    elif weight is None:
        total = counted.sum()
    else:  # (an ignored target may be no class: read row 0 for it, and count it 0 times)
        total = (weight._data[xp.where(counted, t, 0)] * counted).sum()
    return wrap_array(xp.asarray(total, dtype=x._data.dtype))


def _nll_rule(node) -> dict:
    """The rule this node applies, as the stepper shows it: ``weight[target]`` only with
    class weights, ``/ total_weight`` only for the mean.

    >>> import teachgrad as tg, teachgrad.nn.functional as F
    >>> F.nll_loss(tg.zeros(3, 2, requires_grad=True), tg.tensor([0, 1, 1])).grad_fn.formula
    {'self': 'zeros, −grad / total_weight at target'}
    """
    weighted = " · weight[target]" if node.weighted else ""
    mean = " / total_weight" if node.options[1] == "mean" else ""
    return {"self": f"zeros, −grad{weighted}{mean} at target"}


for _loss in (NllLoss, NllLoss2d):  # (a tensor torch keeps: not a saved argument, see Builtin)
    _loss._backward_cls._saved_total_weight = property(_saved_total_weight)
    _loss._backward_cls.formula = property(_nll_rule)


_BAD_TARGET = (
    "nll_loss (cross_entropy calls it) got a target class index out of range: each "
    "target must be in [0, number of classes) or be ignore_index."
)


def _counted_targets(xp, t, ignore_index, n_classes, weight, dtype):
    """Which targets are out of range, the targets made valid (any valid class, so that
    lookups stay in range: on a GPU also for a bad target whose check is still pending),
    each target's weight in ``dtype`` (0 where ignored), and which are ignored."""
    ignored = t == ignore_index
    out_of_range = ~ignored & ((t < 0) | (t >= n_classes))
    valid = xp.where(ignored | out_of_range, 0, t)
    w = xp.ones(t.shape, dtype) if weight is None else weight._data[valid]
    return out_of_range, valid, xp.where(ignored, 0, w).astype(dtype), ignored


@quiet  # (a total weight of 0: the coefficients are 0/0, nan like torch's, without a warning)
def _coefficients(xp, w, ignored, reduction):
    """Each sample's gradient coefficient ``-w`` (over the total weight for 'mean'; nan or
    inf when that is 0, as in torch), 0 for an ignored sample (torch writes nothing there),
    and the total weight."""
    total = w.sum()
    coefficient = xp.where(ignored, 0, -w / total if reduction == "mean" else -w)
    return coefficient.astype(w.dtype, copy=False), total


def _pick_targets(x, t, class_dim):
    """``x[n, t[n], ...]``: each sample's entry at its target class (the class dim dropped)."""
    xp = array_module(x)
    if x.ndim == 2:  # (N, C) rows: one fancy index, the quickest way
        return x[xp.arange(x.shape[0]), t]
    return xp.take_along_axis(x, xp.expand_dims(t, class_dim), class_dim).squeeze(class_dim)


class NllLossGrad(Builtin):
    """``NllLoss``'s backward: zeros of the input's shape, with ``grad`` times each sample's
    coefficient (``-weight[t]``, over the total weight for ``'mean'``) at its target class.

    It is linear in ``grad``, and its transpose (read each sample's target entry, weigh it,
    reduce) is the loss itself: so its backward is ``NllLoss`` again (as in torch).
    """

    node_name = "NllLossBackwardBackward0"
    saved_names = ("target", "weight")
    formula = {"grad_output": "nll_loss(grad, target, weight)"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, ignore_index, reduction, loss, source, *, target, weight):
        # ``loss`` is the node of the NllLoss being differentiated: its forward left there the
        # input's shape, the class dim, the targets (ignored ones made valid) and coefficients;
        # ``source`` is its input, whose gradient here is zeros (see _zeros_for)
        ctx.to_save, ctx.options = (target, weight), (ignore_index, reduction)
        ctx.in_shape = loss.in_shape
        ctx.loss_cls = type(loss)._forward_cls
        g = grad._data
        xp = array_module(g)
        t, class_dim, coefficient = loss.targets, loss.class_dim, loss.coefficient
        if coefficient is None:  # the loss ran as one kernel on a GPU (fused.nll_loss_rows)
            out = fused.nll_loss_rows_grad(g, loss.total, t, loss.in_shape, *ctx.options)
            if out is not None:
                return out
            n_classes, dtype = loss.in_shape[class_dim], loss.total.dtype
            _, t, w, ignored = _counted_targets(xp, t, ctx.options[0], n_classes, None, dtype)
            coefficient = _coefficients(xp, w, ignored, ctx.options[1])[0]
        values = g * coefficient  # one per sample (or one for all, if both are numbers)
        out = xp.zeros(loss.in_shape, g.dtype)
        if out.ndim == 2:  # (N, C) rows: put each sample's value at its target class
            out[xp.arange(out.shape[0]), t] = values
        else:
            values = xp.broadcast_to(values, t.shape)
            xp.put_along_axis(
                out, xp.expand_dims(t, class_dim), xp.expand_dims(values, class_dim), class_dim
            )
        return out

    @staticmethod
    def backward(ctx, gg):
        target, weight = ctx.saved_tensors
        loss = ctx.loss_cls.apply(gg, *ctx.options, target=target, weight=weight)
        return loss, None, None, None, _zeros_for(ctx, 4, gg)


class NllLoss2dGrad(NllLossGrad):
    """``NllLossGrad`` of (N, C, H, W) scores (torch's node name for images)."""

    node_name = "NllLoss2DBackwardBackward0"


def _bce_range_error(x, outside_x, outside_t):
    """torch's error for the first element whose input or target is outside [0, 1], in the
    order its kernel reads them: the order of ``x``'s elements in memory."""
    axes = sorted(range(x.ndim), key=lambda d: -abs(x.strides[d]))
    outside_x, outside_t = (m.transpose(axes).reshape(-1) for m in (outside_x, outside_t))
    first = (outside_x | outside_t).argmax()
    if outside_x[first]:
        return RuntimeError(
            "all elements of input should be between 0 and 1\n  binary_cross_entropy takes "
            "probabilities; for raw scores (logits) use binary_cross_entropy_with_logits."
        )
    return RuntimeError(
        "all elements of target should be between 0 and 1\n  The target of "
        "binary_cross_entropy is a probability (a 0/1 label, or in between)."
    )


_BCE_EPSILON = 9.999999960041972e-13  # torch's 1e-12 for BCE's denominator, a float32 number


def _clamped_log(xp, x):
    """``max(log(x), -100)`` without evaluating log(0) (torch clamps BCE's logs at -100)."""
    positive = x > 0
    return xp.where(positive, xp.maximum(xp.log(xp.where(positive, x, 1)), -100), -100)


class BinaryCrossEntropy(Builtin):
    """``-w · (t · log(x) + (1 - t) · log(1 - x))`` for probabilities x, logs clamped at -100.

    Gradients: ``w · (x - t) / (x · (1 - x))`` for x (denominator at least 1e-12)
    and ``w · (log(1 - x) - log(x))`` for t. The weight comes by keyword: torch does not
    differentiate it, so it gets no edge.
    """

    node_name = "BinaryCrossEntropyBackward0"
    keyword_places = {"weight": 2}  # (torch's order: self, target, weight, reduction)
    saved_names = ("self", "target", "weight")
    saved_args = {"reduction": ("reduction", reduction_number)}
    # N: the number of elements for reduction="mean", else 1 (weight: 1 when not given)
    formula = {
        "self": "grad · weight / N · (self − target) / (self · (1 − self))",
        "target": "grad · weight / N · (log(1 − self) − log(self))",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, target, reduction, *, weight):
        x, t = a._data, target._data
        xp = array_module(x)
        # "not inside", so that NaN fails too, as in torch
        outside_x, outside_t = ~((x >= 0) & (x <= 1)), ~((t >= 0) & (t <= 1))
        device_assert(
            (outside_x | outside_t).any(),
            lambda: _bce_range_error(x, outside_x, outside_t),
            "binary_cross_entropy got an input outside [0, 1] (or a target): both are "
            "probabilities; for raw scores (logits) use binary_cross_entropy_with_logits.",
        )
        ctx.to_save = (a, target, weight)
        ctx.reduction = reduction
        loss = -(t * _clamped_log(xp, x) + (1 - t) * _clamped_log(xp, 1 - x))
        if weight is not None:  # (torch's kernel writes into a loss of the input's dtype)
            loss = (loss * weight._data).astype(x.dtype, copy=False)
        return _reduce_loss(loss, reduction)

    # ∂loss/∂x and ∂loss/∂t of each element before weighting, from teachgrad ops (``p`` is
    # the pos_weight of the logits version). Backward and jvp both use them.
    @staticmethod
    def d_input(x, t, p=None):
        return (x - t) / (x * (1 - x)).clamp(min=_BCE_EPSILON)

    @staticmethod
    def d_target(x, t, p=None):
        return (1 - x).log().clamp(min=-100) - x.log().clamp(min=-100)

    @classmethod
    def backward(cls, ctx, grad):
        x, t, w, *p = ctx.saved_tensors
        g = _spread_loss_grad(grad, ctx.reduction, x.numel())
        if w is not None:
            g = g * w
        grad_t = g * cls.d_target(x, t, *p) if ctx.needs_input_grad[1] else None
        return g * cls.d_input(x, t, *p), grad_t, *(None,) * (len(ctx.needs_input_grad) - 2)

    @classmethod
    def jvp(cls, ctx, t_x, t_t, *_):
        x, t, _ = ctx.inputs
        w, p = ctx.kwargs["weight"], ctx.kwargs.get("pos_weight")
        p = () if p is None else (p,)
        change = tangent_sum(
            None if t_x is None else t_x * cls.d_input(x, t, *p),
            None if t_t is None else t_t * cls.d_target(x, t, *p),
        )
        return _reduce_loss(change if w is None else change * w, ctx.reduction)


class BinaryCrossEntropyWithLogits(BinaryCrossEntropy):
    """BCE of ``σ(x)`` computed from x: ``(1 - t) · x + (1 + (p - 1) · t) · softplus(-x)``.

    ``softplus(-x) = log(1 + e^(-x)) = max(-x, 0) + log(1 + e^(-|x|))`` never overflows,
    so large |x| is exact where ``log(sigmoid(x))`` would give -inf. ``p`` is ``pos_weight``.
    """

    node_name = "BinaryCrossEntropyWithLogitsBackward0"
    keyword_places = {"weight": 2, "pos_weight": 3}  # (self, target, weight, pos_weight, ...)
    saved_names = ("self", "target", "weight", "pos_weight")
    # without pos_weight (with it: see d_input and d_target)
    formula = {
        "self": "grad · weight / N · (σ(self) − target)",
        "target": "−grad · weight / N · self",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, target, reduction, *, weight, pos_weight):
        x, t = a._data, target._data
        xp = array_module(x)
        ctx.to_save = (a, target, weight, pos_weight)
        ctx.reduction = reduction
        softplus_neg = xp.maximum(-x, 0) + xp.log1p(xp.exp(-xp.abs(x)))
        if pos_weight is None:
            loss = (1 - t) * x + softplus_neg
        else:
            loss = (1 - t) * x + (1 + (pos_weight._data - 1) * t) * softplus_neg
        if weight is not None:
            loss = loss * weight._data
        if t.dtype.kind == "f":  # torch's loss is built in place from (1 - target): its dtype
            loss = loss.astype(t.dtype, copy=False)
        return _reduce_loss(loss, reduction)

    @staticmethod
    def d_input(x, t, p=None):  # σ(x) - t without pos_weight
        return x.sigmoid() - t if p is None else (1 + (p - 1) * t) * x.sigmoid() - p * t

    @staticmethod
    def d_target(x, t, p=None):  # -x without pos_weight
        if p is None:
            return -x
        # softplus(-x) as (|x| - x) / 2 + log(1 + e^(-|x|)): the same numbers as max(-x, 0) + ...,
        # but its derivative at 0 is -σ(0) = -1/2, as torch's, where max's kink gave -1
        softplus_neg = (x.abs() - x) / 2 + (-x.abs()).exp().log1p()
        return (p - 1) * softplus_neg - x


# --------------------------------------------------------------------------- convolution

# Three Functions whose backwards are each other: for y = conv(x, w),
#   ∂/∂x is ConvolutionInputGrad(g, w)   (a transposed convolution),
#   ∂/∂w is ConvolutionWeightGrad(x, g)  (a correlation of the input with the gradient),
# and both are bilinear, so their own gradients are again these three ops.
# ``geometry`` is (stride, padding, dilation, groups) with padding ((top, bottom), (left, right)).


class Convolution(Builtin):
    """2-d convolution (cross-correlation) of (N, C, H, W) input with (O, C/groups, kh, kw) filters."""

    node_name = "ConvolutionBackward0"
    number_inputs = (2,)  # no bias (None): an empty edge, as in torch
    saved_names = ("input", "weight")
    saved_args = {
        "stride": ("geometry", itemgetter(0)),
        "padding": ("geometry", lambda geometry: tuple(before for before, _ in geometry[1])),
        "dilation": ("geometry", itemgetter(2)),
        "groups": ("geometry", itemgetter(3)),
        "transposed": "transposed",
        "output_padding": "output_padding",
        "bias_sym_sizes_opt": "bias_sym_sizes_opt",
    }
    # conv2d_input / conv2d_weight: the two maps below (torch.nn.grad's names for them)
    formula = {
        "input": "conv2d_input(grad, weight)",
        "weight": "conv2d_weight(input, grad)",
        "bias": "sum(grad, (0, 2, 3))",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, w, bias, stride, padding, dilation, groups):
        need_a, need_w = ctx.needs_input_grad[:2]
        ctx.to_save = (a if need_w else None, w if need_a else None)
        ctx.geometry = (stride, padding, dilation, groups)
        ctx.in_hw, ctx.kernel = a._data.shape[2:], w._data.shape[2:]
        if a._data.shape[1] == 0:  # no input channels: torch's result has no channels either
            ctx.shapes = (a._data.shape, w._data.shape, None if bias is None else bias._data.shape)
            return _correlate(a._data, w._data[:0], padding, stride, dilation, groups)
        out = _correlate(a._data, w._data, padding, stride, dilation, groups)
        if bias is not None:
            out += bias._data.reshape(-1, 1, 1)
        return out

    @staticmethod
    def setup_context(ctx, inputs, output):
        bias = inputs[2]
        ctx.transposed, ctx.output_padding = False, (0, 0)  # (conv2d: not a transposed one)
        ctx.bias_sym_sizes_opt = (0,) if bias is None else bias._data.shape

    @staticmethod
    def backward(ctx, grad):
        if hasattr(ctx, "shapes"):  # (no input channels: see forward) zeros for each input
            return *(None if s is None else grad.new_zeros(s) for s in ctx.shapes), *(None,) * 4
        a, w = ctx.saved_tensors
        need_a, need_w, need_bias = ctx.needs_input_grad[:3]
        grad_a = ConvolutionInputGrad.apply(grad, w, ctx.in_hw, *ctx.geometry) if need_a else None
        grad_w = ConvolutionWeightGrad.apply(a, grad, ctx.kernel, *ctx.geometry) if need_w else None
        grad_bias = grad.sum((0, 2, 3)) if need_bias else None
        return grad_a, grad_w, grad_bias, None, None, None, None

    @staticmethod
    def jvp(ctx, t_a, t_w, t_bias, *_):  # bilinear: one factor moves at a time
        a, w, _, *geometry = ctx.inputs
        return tangent_sum(
            None if t_a is None else Convolution.apply(t_a, w, None, *geometry),
            None if t_w is None else Convolution.apply(a, t_w, None, *geometry),
            None if t_bias is None else t_bias.reshape(-1, 1, 1),
        )


class _ConvolutionGrad(Builtin):
    """What the two gradient maps below share. Each is bilinear in its two tensor inputs
    (``first``, ``second``), so its jvp moves one factor at a time, and its backward is two
    maps of the trio: ``grad_first``/``grad_second`` (each class's own) say which."""

    @classmethod
    def backward(cls, ctx, gg):
        first, second = ctx.saved_tensors
        need_first, need_second = ctx.needs_input_grad[:2]
        return (
            cls.grad_first(ctx, gg, second) if need_first else None,
            cls.grad_second(ctx, gg, first) if need_second else None,
            *(None,) * 5,
        )

    @classmethod
    def jvp(cls, ctx, t_first, t_second, *_):
        first, second, *rest = ctx.inputs
        return tangent_sum(
            None if t_first is None else cls.apply(t_first, second, *rest),
            None if t_second is None else cls.apply(first, t_second, *rest),
        )


class ConvolutionInputGrad(_ConvolutionGrad):
    """``∂L/∂input`` of a convolution, from the output's gradient and the filters."""

    node_name = "ConvolutionBackwardBackward0"
    formula = {"grad_output": "conv2d(grad, weight)", "weight": "conv2d_weight(grad, grad_output)"}

    @staticmethod
    def forward(ctx, grad, w, in_hw, stride, padding, dilation, groups):
        ctx.to_save = (grad, w)
        ctx.kernel, ctx.geometry = w._data.shape[2:], (stride, padding, dilation, groups)
        pad_before = (padding[0][0], padding[1][0])
        return _correlate_input_grad(
            grad._data, w._data, in_hw, stride, pad_before, dilation, groups
        )

    # <gg, InputGrad(g, w)> = <g, conv(gg, w)>: so ∂/∂g = conv(gg, w), ∂/∂w = WeightGrad(gg, g)
    @staticmethod
    def grad_first(ctx, gg, w):
        return Convolution.apply(gg, w, None, *ctx.geometry)

    @staticmethod
    def grad_second(ctx, gg, grad):
        return ConvolutionWeightGrad.apply(gg, grad, ctx.kernel, *ctx.geometry)


class ConvolutionWeightGrad(_ConvolutionGrad):
    """``∂L/∂weight`` of a convolution, from the input and the output's gradient."""

    node_name = "ConvolutionBackwardBackward0"
    formula = {"input": "conv2d_input(grad_output, grad)", "grad_output": "conv2d(input, grad)"}

    @staticmethod
    def forward(ctx, a, grad, kernel, stride, padding, dilation, groups):
        ctx.to_save = (a, grad)
        ctx.in_hw, ctx.geometry = a._data.shape[2:], (stride, padding, dilation, groups)
        return _correlate_weight_grad(
            a._data, grad._data, kernel, padding, stride, dilation, groups
        )

    # <gg, WeightGrad(x, g)> = <g, conv(x, gg)>: so ∂/∂x = InputGrad(g, gg), ∂/∂g = conv(x, gg)
    @staticmethod
    def grad_first(ctx, gg, grad):
        return ConvolutionInputGrad.apply(grad, gg, ctx.in_hw, *ctx.geometry)

    @staticmethod
    def grad_second(ctx, gg, a):
        return Convolution.apply(a, gg, None, *ctx.geometry)


# --------------------------------------------------------------------------- pooling

# ``geometry`` of a pooling: (kernel, stride, padding, dilation, out_hw), each a pair
# except padding ((top, bottom), (left, right)); bottom/right include the extra room
# ceil_mode's last windows may need.


def _batched(x):
    """A (C, H, W) array as a batch of one; a (N, C, H, W) array as it is."""
    return x[None] if x.ndim == 3 else x


_POOL_ARGS = {n: n for n in ("kernel_size", "stride", "padding", "ceil_mode")}


def keep_pool_args(ctx, kernel, stride, padding, stride_given, ceil_mode) -> None:
    """Keep what torch's pooling nodes show (``_POOL_ARGS``): the window as given (a stride
    left out is ``()``, a padding one number per dim) and ``ceil_mode``."""
    ctx.kernel_size, ctx.ceil_mode = kernel, ceil_mode
    ctx.stride = stride if stride_given else ()
    ctx.padding = tuple(before for before, _ in padding)


class MaxPool2d(Builtin):
    """The largest value of each window, and where it was (``indices`` into each H*W plane).
    ``options``: ``(stride_given, ceil_mode)``, which only the node shows."""

    node_name = "MaxPool2DWithIndicesBackward0"
    saved_names = ("self", "result1")
    saved_args = {**_POOL_ARGS, "dilation": "dilation"}
    formula = {"self": "zeros with grad added at result1"}  # result1: the indices output

    @staticmethod
    def forward(ctx, a, kernel, stride, padding, dilation, out_hw, options):
        x = _batched(a._data)
        found = None
        # the common pooling (2x2 windows, stride 2, no padding) tiles the image; a CPU
        # shortcut: it asks whether a NaN is among the maxima, which would make the CPU wait
        # for a GPU (there the windows' argmax, which needs no answer, is one kernel anyway)
        tiles = kernel == stride and dilation == (1, 1) and padding == ((0, 0), (0, 0))
        if tiles and array_module(x) is numpy_module():
            found = _max_of_tiles(x, kernel, out_hw)
        if found is None:  # any other windows, and tiles holding a NaN
            found = _max_of_windows(x, kernel, stride, padding, dilation, out_hw)
        values, indices = found
        ctx.in_shape = a._data.shape
        # windows that don't overlap never pick the same pixel: backward can put, not add
        ctx.distinct = all(stride[i] > dilation[i] * (kernel[i] - 1) for i in range(2))
        if a._data.ndim == 3:
            values, indices = values[0], indices[0]
        return values, indices

    @staticmethod
    def setup_context(ctx, inputs, output):
        a, kernel, stride, padding, ctx.dilation, _, options = inputs
        ctx.to_save = (a, output[1])
        keep_pool_args(ctx, kernel, stride, padding, *options)

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        a, indices = ctx.saved_tensors
        return PlaneScatter.apply(grad, indices, ctx.in_shape, ctx.distinct, a), *(None,) * 6

    @staticmethod
    def jvp(ctx, t, *_):  # each output moves as the input element it came from
        return PlaneGather.apply(t, ctx.outputs[1], ctx.distinct), None


def _max_of_windows(x, kernel, stride, padding, dilation, out_hw):
    """Max-pooling of a batch ``x`` (N, C, H, W) with any windows: ``(values, indices)``.

    All windows as one (N, C, OH, OW, kh*kw) array (a copy), then ``argmax`` over the taps.
    """
    xp = array_module(x)
    n, c, h, w = x.shape
    (kh, kw), (oh, ow) = kernel, out_hw
    padded = _pad(x, padding, -xp.inf)  # padding never wins a max
    win = _windows(padded, kernel, stride, dilation, out_hw).reshape(n, c, oh, ow, kh * kw)
    tap = win.argmax(axis=-1)  # the first largest, like torch
    values = xp.take_along_axis(win, tap[..., None], axis=-1)[..., 0]
    on_gpu = xp is not numpy_module()  # (there no question is asked: it would wait)
    nan = xp.isnan(values)
    if on_gpu or nan.any():  # torch picks the *last* NaN of a window
        last_nan = kh * kw - 1 - xp.isnan(win[..., ::-1]).argmax(axis=-1)
        tap = xp.where(nan, last_nan, tap)
    lowest = values == -xp.inf
    if padded is not x and (on_gpu or lowest.any()):  # all -inf: torch's is the first pixel
        inside = _windows(
            _pad(xp.ones((1, 1, h, w), bool), padding, False), kernel, stride, dilation, out_hw
        )
        tap = xp.where(lowest, inside.reshape(1, 1, oh, ow, kh * kw).argmax(axis=-1), tap)
    # the winning tap's pixel in the unpadded input, as a row-major index into its plane
    row = xp.arange(oh).reshape(-1, 1) * stride[0] + (tap // kw) * dilation[0] - padding[0][0]
    col = xp.arange(ow) * stride[1] + (tap % kw) * dilation[1] - padding[1][0]
    return values, (row * w + col).astype("int64")


def _max_of_tiles(x, kernel, out_hw):
    """``_max_of_windows`` for windows that tile the image (stride = kernel, no padding or
    dilation), without copying the windows: ``(values, indices)``, or None if a NaN is among
    the maxima (then ``_max_of_windows`` finds the first NaN, as argmax does).

    Tap (i, j) of every window is one strided slice of ``x`` (a view). The values are the
    elementwise maximum of the kh*kw slices; the index is that of the first tap holding
    the maximum (argmax's choice), found by comparing each slice with the maximum.
    """
    xp = array_module(x)
    w = x.shape[-1]
    (kh, kw), (oh, ow) = kernel, out_hw
    taps = [x[:, :, i : oh * kh : kh, j : ow * kw : kw] for i in range(kh) for j in range(kw)]
    values = taps[0].copy()
    for tap in taps[1:]:
        tie_keeps_first("maximum", values, tap, out=values)  # (the first maximum, as torch)
    if bool(xp.isnan(values).any()):
        return None
    # ``first``: how many taps come before the first one holding the maximum. ``missed`` stays
    # true for a window while every tap so far was below its maximum.
    first = xp.zeros(values.shape, xp.int32)
    missed = True
    for tap in taps[:-1]:
        missed = missed & (tap != values)
        first += missed
    # that tap's pixel, as a row-major index into the plane: its offset within the window
    # (looked up by tap number) plus where the window's top-left pixel is
    tap_offset = xp.asarray([i * w + j for i in range(kh) for j in range(kw)], "int64")[first]
    corner = (xp.arange(oh) * (kh * w)).reshape(-1, 1) + xp.arange(ow) * kw
    return values, tap_offset + corner


class PlaneScatter(Builtin):
    """``grad`` added into zeros of ``in_shape`` at ``indices`` of each H*W plane (max-pool's
    backward; windows that share a maximum add up). Its backward gathers: ``PlaneGather``.

    ``distinct`` says that no index repeats within a plane (windows that don't overlap):
    then each gradient can simply be put in its place.
    """

    node_name = "MaxPool2DWithIndicesBackwardBackward0"
    formula = {"grad_output": "grad read at indices of each plane"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, indices, in_shape, distinct, source=None):
        ctx.to_save, ctx.distinct, ctx.in_shape = (indices,), distinct, in_shape
        g, idx = grad._data, indices._data
        xp = array_module(g)
        plane = in_shape[-1] * in_shape[-2]
        planes = math.prod(in_shape[:-2])
        offsets = xp.arange(planes).reshape(-1, 1) * plane  # where each plane starts
        # (sizes, not -1: an empty batch has 0 planes)
        positions = (idx.reshape(planes, math.prod(idx.shape[-2:])) + offsets).reshape(-1)
        if distinct:
            out = xp.zeros(planes * plane, g.dtype)
            out[positions] = g.reshape(-1)
        else:
            out = _scatter_add(positions, g, planes * plane).astype(g.dtype, copy=False)
        return out.reshape(in_shape)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        return (
            PlaneGather.apply(gg, indices, ctx.distinct),
            None,
            None,
            None,
            _zeros_for(ctx, 4, gg),
        )


class PlaneGather(Builtin):
    """``x`` read at ``indices`` of each H*W plane (the transpose of ``PlaneScatter``; ``distinct``
    is passed on to it)."""

    node_name = "GatherBackward0"
    formula = {"self": "zeros with grad added at indices of each plane"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, a, indices, distinct):
        ctx.to_save = (indices,)
        ctx.in_shape, ctx.distinct = a._data.shape, distinct
        x, idx = a._data, indices._data
        planes = math.prod(x.shape[:-2])
        flat = x.reshape(planes, math.prod(x.shape[-2:]))
        windows = idx.reshape(planes, math.prod(idx.shape[-2:]))
        return array_module(x).take_along_axis(flat, windows, 1).reshape(idx.shape)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return PlaneScatter.apply(grad, indices, ctx.in_shape, ctx.distinct), None, None


def avg_pool_divisors(input, kernel, stride, padding, out_hw, count_include_pad, divisor_override):
    """How many elements each window of an average pooling divides by, an (OH, OW) array.

    A window is clipped to the padded input (ceil_mode's last windows may reach
    past it); without ``count_include_pad`` also to the real input, so padding
    zeros don't dilute the mean. ``divisor_override`` replaces all of that.
    """
    xp = array_module(input)
    dtype = input._data.dtype
    if divisor_override is not None:
        return xp.full(out_hw, divisor_override, dtype=dtype)
    counts = []
    for i in range(2):
        size, pad = input._data.shape[-2 + i], padding[i][0]
        start = xp.arange(out_hw[i]) * stride[i] - pad
        stop = xp.minimum(start + kernel[i], size + pad)
        if not count_include_pad:
            start, stop = xp.maximum(start, 0), xp.minimum(stop, size)
        counts.append(stop - start)
    return (counts[0].reshape(-1, 1) * counts[1]).astype(dtype)


def _zeros_for(ctx, index, like):
    """The gradient of the pooled input (argument ``index``) of a pooling's gradient: zeros
    of ``ctx.in_shape``, as torch's (its gradient reads the input), so that a second
    derivative through the pooling alone is zeros, not "unused"."""
    if not ctx.needs_input_grad[index]:
        return None
    return wrap_array(array_module(like._data).zeros(ctx.in_shape, like._data.dtype))


class AvgPool2d(Builtin):
    """The mean of each window (the divisor per window is in ``divisors``). ``options``:
    ``(stride_given, ceil_mode, count_include_pad, divisor_override)``, which only the
    node shows."""

    node_name = "AvgPool2DBackward0"
    saved_names = ("self",)
    formula = {"self": "grad / divisor, spread over each window"}
    saved_args = {
        **_POOL_ARGS,
        "count_include_pad": "count_include_pad",
        "divisor_override": "divisor_override",
    }
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    @quiet
    def forward(ctx, a, kernel, stride, padding, out_hw, divisors, options):
        x = _batched(a._data)
        ctx.to_save, ctx.pool = (a,), (kernel, stride, padding, out_hw, divisors)
        padded = _pad(x, padding)
        sums = _windows(padded, kernel, stride, (1, 1), out_hw).sum(axis=(-2, -1))
        out = (sums / divisors).astype(x.dtype, copy=False)
        return out[0] if a._data.ndim == 3 else out

    @staticmethod
    def setup_context(ctx, inputs, output):
        _, kernel, stride, padding, _, _, ctx.options = inputs
        *window, ctx.count_include_pad, ctx.divisor_override = ctx.options
        keep_pool_args(ctx, kernel, stride, padding, *window)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return AvgPool2dTranspose.apply(grad, a, *ctx.pool, ctx.options), *(None,) * 6


class AvgPool2dTranspose(Builtin):
    """Average pooling's backward: each window's gradient, divided by its divisor, spread evenly
    over the window's pixels (overlaps add up) of ``source``, the pooled input. Linear, so its
    backward is ``AvgPool2d``."""

    node_name = "AvgPool2DBackwardBackward0"
    formula = {"grad_output": "avg_pool2d(grad)"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, source, kernel, stride, padding, out_hw, divisors, options):
        ctx.pool = (kernel, stride, padding, out_hw, divisors, options)
        ctx.in_shape = in_shape = source._data.shape
        g = _batched(grad._data)
        pad_before = (padding[0][0], padding[1][0])
        grid = _pad(*_spread_back(g / divisors, kernel, in_shape[-2:], stride, pad_before, (1, 1)))
        out = _windows(grid, kernel, (1, 1), (1, 1), in_shape[-2:]).sum(axis=(-2, -1))
        return out.astype(g.dtype, copy=False).reshape(in_shape)

    @staticmethod
    def backward(ctx, gg):
        return AvgPool2d.apply(gg, *ctx.pool), _zeros_for(ctx, 1, gg), *(None,) * 6


# --------------------------------------------------------------------------- layer norm, embedding


class NativeLayerNorm(Builtin):
    """Normalise over the last ``k`` dims: ``(x - mean) / sqrt(var + eps) · weight + bias``.

    With x̂ the normalised input and ĝ = grad · weight, the input gradient is
    ``rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))``; backward recomputes x̂ from x with
    teachgrad ops so that the formula can be differentiated again.
    """

    node_name = "NativeLayerNormBackward0"
    number_inputs = (1, 2)  # a weight or bias left out (None) gets an empty edge, as in torch
    # (result1, result2: the mean and 1/std, kept as torch's node keeps them; backward
    # recomputes both from the input with teachgrad ops, so that it can be differentiated)
    saved_names = ("input", "weight", "bias", "result1", "result2")
    saved_args = {"normalized_shape": "normalized_shape"}
    formula = {
        "input": "rstd · (gw − mean(gw) − x_hat · mean(gw · x_hat)); gw = grad · weight",
        "weight": "grad · x_hat",
        "bias": "grad",
    }

    @staticmethod
    @quiet
    def forward(ctx, a, weight, bias, k, eps):
        x = a._data
        xp = array_module(x)
        dims = tuple(range(x.ndim - k, x.ndim))
        ctx.dims, ctx.eps = dims, eps
        if x.dtype.name == "float16":  # torch computes a half input in float32 (its parameters
            x = x.astype("float32")  # may be float32 too), and returns float16
        mean = x.mean(axis=dims, keepdims=True)
        centered = x - mean
        rstd = 1 / xp.sqrt((centered * centered).mean(axis=dims, keepdims=True) + eps)
        ctx.to_save = (a, weight, bias, wrap_array(mean), wrap_array(rstd))
        out = centered * rstd
        if weight is not None:
            out = out * weight._data
        if bias is not None:
            out = out + bias._data
        return out.astype(a._data.dtype, copy=False)

    @staticmethod
    def setup_context(ctx, inputs, output):
        shape = inputs[0]._data.shape
        ctx.normalized_shape = shape[len(shape) - inputs[3] :]  # (the last k dims)

    @staticmethod
    def normalised(x, dims, eps):
        """``(x̂, rstd)`` recomputed from x with teachgrad ops."""
        centered = x - x.mean(dims, keepdim=True)
        rstd = ((centered * centered).mean(dims, keepdim=True) + eps).rsqrt()
        return centered * rstd, rstd

    @staticmethod
    def project(v, x_hat, rstd, dims):
        """``rstd · (v - mean(v) - x̂ · mean(v · x̂))``: the Jacobian of x ↦ x̂ (symmetric)
        applied to v, for the gradient and for the tangent alike."""
        mean_v = v.mean(dims, keepdim=True)
        return rstd * (v - mean_v - x_hat * (v * x_hat).mean(dims, keepdim=True))

    @staticmethod
    def backward(ctx, grad):
        x, weight, bias, *_ = ctx.saved_tensors
        if x._data.dtype.name == "float16":  # in float32, as the forward (the engine casts back)
            if weight is None and bias is not None and bias._data.dtype.name == "float32":
                raise RuntimeError(
                    "expected scalar type Half but found Float\n  (torch's backward of a half "
                    "layer_norm takes a float32 bias only beside a float32 weight.)"
                )
            x, grad = x.float(), grad.float()
        x_hat, rstd = NativeLayerNorm.normalised(x, ctx.dims, ctx.eps)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        grad_x = None
        if need_x:
            g_hat = grad * weight if weight is not None else grad
            grad_x = NativeLayerNorm.project(g_hat, x_hat, rstd, ctx.dims)
        # weight and bias gradients have the input's shape: the engine sums them to theirs
        return grad_x, grad * x_hat if need_w else None, grad if need_b else None, None, None

    @staticmethod
    def jvp(ctx, t_x, t_w, t_b, *_):
        x, weight, *_ = ctx.inputs
        x_hat, rstd = NativeLayerNorm.normalised(x, ctx.dims, ctx.eps)
        t_hat = None if t_x is None else NativeLayerNorm.project(t_x, x_hat, rstd, ctx.dims)
        if t_hat is not None and weight is not None:
            t_hat = t_hat * weight
        return tangent_sum(t_hat, None if t_w is None else x_hat * t_w, t_b)


class Embedding(Builtin):
    """Rows of ``weight`` picked by integer ``indices`` (by keyword: not differentiable, they
    get no edge, as in torch); the padding row gets no gradient."""

    node_name = "EmbeddingBackward0"
    keyword_places = {"indices": 1}  # (torch's order: weight, indices, padding_idx)
    saved_names = ("indices",)
    saved_args = {
        "weight_sym_argsize_0": "num_weights",
        "padding_idx": ("padding_idx", lambda row: -1 if row is None else row),  # (-1: none)
        "scale_grad_by_freq": "scale_grad_by_freq",
        "sparse": "sparse",
    }
    formula = {"weight": "grad rows added at indices (not padding_idx)"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, weight, padding_idx, *, indices):
        ctx.to_save = (indices,)
        ctx.num_weights, ctx.padding_idx = weight._data.shape[0], padding_idx
        return weight._data[indices._data]

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.scale_grad_by_freq = ctx.sparse = False  # (options teachgrad's embedding has not)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return EmbeddingRowSum.apply(grad, ctx.num_weights, ctx.padding_idx, indices=indices), None


class EmbeddingRowSum(Builtin):
    """Embedding's backward: row ``i`` of the result sums the gradients of every position
    that looked up row ``i`` (repeats add up), except the padding row."""

    node_name = "EmbeddingDenseBackwardBackward0"
    keyword_places = {"indices": 1}  # (torch's order: grad, indices, num_weights ...)
    formula = {"grad_output": "grad[indices], 0 at padding_idx"}
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, num_weights, padding_idx, *, indices):
        g, idx = grad._data, indices._data
        xp = array_module(g)
        dim = g.shape[-1]
        keep = idx != padding_idx if padding_idx is not None else xp.ones(idx.shape, bool)
        ctx.to_save, ctx.keep = (indices,), keep
        rows = (g * keep[..., None]).reshape(idx.size, dim)  # (not -1: dim may be 0)
        positions = idx.reshape(-1, 1) * dim + xp.arange(dim)  # flat index of each (row, column)
        out = _scatter_add(positions, rows, num_weights * dim)
        return out.astype(g.dtype, copy=False).reshape(num_weights, dim)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        looked_up = Embedding.apply(gg, None, indices=indices)
        return where(wrap_array(ctx.keep[..., None]), looked_up, 0.0), None, None


# --------------------------------------------------------------------------- softmax (F.softmax, Tensor.softmax)


def _softmax_input(input, dim, dtype, name):
    if dtype is not None:
        input = input.to(dtype_argument(dtype))
    if dim is None:  # torch's old rule, kept for old code: warn and guess
        warnings.warn(
            f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
            "dim=X as an argument.",
            UserWarning,
            stacklevel=3,
        )
        dim = 0 if input.ndim in (0, 1, 3) else 1
    given, dim = _given_and_wrapped(dim, input.ndim)
    # (torch has no kernel for integers, but an empty input runs none; the last dim has its own)
    if not input.is_floating_point() and input.numel():
        kernel = f"{name}_lastdim_kernel_impl" if dim >= input.ndim - 1 else f"{name}_kernel_impl"
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{scalar_type_name(input)}'\n  {name} needs floating "
            "point input: pass dtype=teachgrad.float32, or call .float() first."
        )
    return input, given  # (the node shows dim as given; its forward wraps it)


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``exp(x) / sum(exp(x))`` along ``dim``: non-negative, summing to 1 (no overflow for large x).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.softmax(tg.tensor([[1.0, 1.0], [0.0, 1000.0]]), dim=1)
    tensor([[0.5000, 0.5000],
            [0.0000, 1.0000]])
    """
    input, dim = _softmax_input(input, dim, dtype, "softmax")
    return Softmax.apply(input, dim)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """``log(softmax(x))`` along ``dim``, computed directly (exact where softmax underflows to 0).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.log_softmax(tg.tensor([0.0, 1000.0]), dim=0)
    tensor([-1000.,     0.])
    """
    input, dim = _softmax_input(input, dim, dtype, "log_softmax")
    return LogSoftmax.apply(input, dim)


# --------------------------------------------------------------------------- reflect / replicate padding


class _EdgePad(Builtin):
    """``F.pad`` with ``mode="reflect"`` or ``"replicate"``: each padded dim reads the input at
    computed positions (``edge_positions``), the same for every row, so the output is the
    input taken at those positions, dim by dim. Backward adds each gradient back where it was
    read from (``_IndexAdd``, one padded dim at a time: a border element collects several)."""

    saved_names = ("self",)
    saved_args = {"padding": ("padding", int_tuple)}
    formula = {"self": "zeros with grad added at indices"}  # (indices: the positions read)
    jvp = staticmethod(linear_jvp)

    @staticmethod
    def forward(ctx, a, padding, mode):
        x = a._data
        xp = array_module(x)
        ctx.padding, ctx.to_save = padding, (a,)
        ctx.reads = edge_positions(x.shape, padding, mode)
        for dim, positions in ctx.reads:  # (int64: an empty list would be a float array)
            x = xp.take(x, xp.asarray(positions, dtype="int64"), axis=dim)
        return row_major(x)

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors  # (checked for in-place changes, as torch's node does)
        for dim, positions in reversed(ctx.reads):
            shape = list(grad.shape)
            shape[dim] = a.shape[dim]
            index = wrap_array(array_module(a._data).asarray(positions, dtype="int64"))
            grad = _IndexAdd.apply(grad, tuple(shape), dim, index=index)
        return grad, None, None


def _edge_pad_class(kind: str, dims: int):
    name = f"{kind}Pad{dims}D"
    return type(name, (_EdgePad,), {"node_name": f"{name}Backward0", "__module__": __name__})


EDGE_PADS = {
    (mode, dims): _edge_pad_class(kind, dims)
    for mode, kind in (("reflect", "Reflection"), ("replicate", "Replication"))
    for dims in (1, 2, 3)
}


def edge_positions(shape, padding, mode) -> list:
    """``[(dim, positions)]``: for each padded dim (the last first, as ``padding`` lists them),
    the input position each output position reads. Replicate repeats the edge element;
    reflect mirrors around it (without repeating it). A negative amount crops.

    >>> edge_positions((4,), (2, 1), "reflect"), edge_positions((4,), (2, -1), "replicate")
    ([(0, [2, 1, 0, 1, 2, 3, 2])], [(0, [0, 0, 0, 1, 2])])
    """
    reads = []
    for k in range(len(padding) // 2):
        dim = len(shape) - 1 - k
        before, after, n = padding[2 * k], padding[2 * k + 1], shape[dim]
        wanted = range(-before, n + after)
        if mode == "replicate":
            reads.append((dim, [min(max(p, 0), n - 1) for p in wanted]))
        else:
            reads.append((dim, [-p if p < 0 else 2 * (n - 1) - p if p >= n else p for p in wanted]))
    return reads

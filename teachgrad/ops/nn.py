"""The Functions behind ``teachgrad.nn.functional``: activations, losses, convolution, pooling.

Each op is a ``Function`` like those in ``pointwise.py``: ``forward`` computes on
backend arrays, ``backward`` builds the input gradients from teachgrad ops, so
every op here can be differentiated twice (gradgradcheck). Where a backward is
itself a new linear map (the transposed convolution, the scatter of max-pooling,
the sum of embedding rows), it is a Function too, and *its* backward is the
original map again: the pairs are closed under differentiation. Each Function
also has a ``jvp`` (forward mode): the linear ones apply themselves to the
tangent, the others reuse their backward's partial derivatives.

What lives here: the Functions and the array helpers they share (im2col windows,
an ``erf``). What does not: argument checking and torch's defaults, which are in
``teachgrad/nn/functional.py``, the public surface; ``F.pad``'s Function and the
padding of arrays (``pad_array``, used here too), which are in ``shape.py``.

Convolution in one paragraph: a (kh, kw) filter slid over an image with some
stride and dilation sees, at each output pixel, a (C, kh, kw) window. ``as_strided``
makes all windows one array *view* (no copy); reshaping it into a matrix with one
column per output pixel ("im2col") turns the whole convolution into one matrix
product. The gradient for the input is a correlation too: spread the output
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

from .._backend import array_module, as_array
from .._tensor import wrap_array
from ..autograd.forward_ad import linear_jvp, tangent_sum
from ..autograd.function import Function
from .pointwise import _sigmoid, _unary, where
from .shape import pad_array

# --------------------------------------------------------------------------- array helpers


def _erf(xp, x):
    """The error function to double precision, from backend arrays only.

    NumPy has no ``erf`` (CuPy's lives in cupyx), so one recipe serves both:
    for |x| < 2.5 the series ``erf(x) = 2/√π · e^(-x²) · Σ (2x²)ⁿ x / (1·3·5···(2n+1))``,
    whose terms are all positive (no cancellation; 40 terms reach 1e-16); beyond,
    ``erfc(x) = e^(-x²) / (√π · (x + ½/(x + 1/(x + (3/2)/(x + ...)))))``, Laplace's
    continued fraction, evaluated from its tail inwards.
    """
    z = xp.abs(x.astype("float64"))
    out = xp.empty_like(z)
    near = z < 2.5
    a = z[near]
    two_a2 = 2 * a * a
    term, total = a.copy(), a.copy()
    for n in range(1, 40):
        term *= two_a2 / (2 * n + 1)
        total += term
    out[near] = 2 / math.sqrt(math.pi) * xp.exp(-a * a) * total
    b = z[~near]
    fraction = b.copy()  # the continued fraction, cut off after 40 levels
    for k in range(40, 0, -1):
        fraction = b + (k / 2) / fraction
    out[~near] = 1 - xp.exp(-b * b) / (math.sqrt(math.pi) * fraction)
    return (xp.sign(x) * out).astype(x.dtype)


def _windows(x, kernel, stride, dilation, out_hw):
    """Every (kh, kw) window of a padded batch ``x`` (N, C, H, W) as one *view* of shape
    (N, C, OH, OW, kh, kw): moving one output pixel steps ``stride`` input pixels, moving
    one kernel tap steps ``dilation`` pixels. Nothing is copied; only strides change."""
    s_n, s_c, s_h, s_w = x.strides
    shape = (*x.shape[:2], *out_hw, *kernel)
    strides = (s_n, s_c, s_h * stride[0], s_w * stride[1], s_h * dilation[0], s_w * dilation[1])
    return array_module(x).lib.stride_tricks.as_strided(x, shape, strides)


def _out_size(size, kernel, stride, dilation):
    """How many windows of ``kernel`` taps, ``dilation`` apart, fit in ``size``, ``stride`` apart."""
    return (size - dilation * (kernel - 1) - 1) // stride + 1


def _im2col(x, kernel, stride, dilation, out_hw, groups):
    """The windows of ``x`` as one matrix per group: (groups, C/groups*kh*kw, N*OH*OW).

    One row per (input channel, kernel tap), one column per output pixel: a
    correlation is then a single matrix product with the flattened filters. (Columns
    run along output pixels because those are contiguous in memory: the copy is fast.)
    """
    n, c = x.shape[:2]
    (oh, ow), (kh, kw) = out_hw, kernel
    win = _windows(x, kernel, stride, dilation, out_hw)
    win = win.reshape(n, groups, c // groups, oh, ow, kh, kw)  # split channels into groups (a view)
    return win.transpose(1, 2, 5, 6, 0, 3, 4).reshape(groups, c // groups * kh * kw, n * oh * ow)


def _correlate(x, w, stride, dilation, groups):
    """What deep learning calls convolution: filters ``w`` (O, C/groups, kh, kw) slid over a
    padded batch ``x`` (N, C, H, W). Returns (N, O, OH, OW)."""
    n = x.shape[0]
    o, c_group, kh, kw = w.shape
    out_hw = tuple(
        _out_size(x.shape[2 + i], w.shape[2 + i], stride[i], dilation[i]) for i in range(2)
    )
    cols = _im2col(x, (kh, kw), stride, dilation, out_hw, groups)
    filters = w.reshape(groups, o // groups, c_group * kh * kw)
    out = filters @ cols  # (groups, O/groups, N*OH*OW)
    out = out.reshape(groups, o // groups, n, *out_hw).transpose(2, 0, 1, 3, 4)
    return array_module(x).ascontiguousarray(out).reshape(n, o, *out_hw)


def _correlate_weight_grad(x, grad, kernel, stride, dilation, groups):
    """∂L/∂w of ``y = _correlate(x, w)`` given ``grad`` = ∂L/∂y: each filter tap collects the
    input pixels it saw, weighted by the gradient of the output they made (same im2col)."""
    n, o, oh, ow = grad.shape
    cols = _im2col(x, kernel, stride, dilation, (oh, ow), groups)
    grad_rows = grad.reshape(n, groups, o // groups, oh, ow).transpose(1, 2, 0, 3, 4)
    grad_rows = grad_rows.reshape(groups, o // groups, n * oh * ow)
    grad_w = grad_rows @ cols.transpose(0, 2, 1)  # (groups, O/groups, C/groups*kh*kw)
    return grad_w.reshape(o, x.shape[1] // groups, *kernel)


def _spread_back(grad, kernel, in_hw, stride, pad_before, dilation):
    """The grid of a transposed correlation: ``grad``'s pixels put back ``stride`` apart (zeros
    between), padded so that a stride-1 correlation with a (kh, kw) kernel of this
    ``dilation`` gives exactly the ``in_hw`` input pixels (padding dropped)."""
    n, c, oh, ow = grad.shape
    spread = array_module(grad).zeros(
        (n, c, (oh - 1) * stride[0] + 1, (ow - 1) * stride[1] + 1), grad.dtype
    )
    spread[:, :, :: stride[0], :: stride[1]] = grad
    pairs = []
    for i in range(2):
        reach = dilation[i] * (kernel[i] - 1)  # how far a window extends past its first tap
        before = reach - pad_before[i]
        pairs.append((before, in_hw[i] + reach - spread.shape[2 + i] - before))
    return pad_array(spread, pairs)


def _correlate_input_grad(grad, w, in_hw, stride, pad_before, dilation, groups):
    """∂L/∂x of ``y = _correlate(pad(x), w)``: the transposed correlation, computed as a
    correlation of the spread-back gradient with the flipped, channel-swapped filters."""
    o, c_group, kh, kw = w.shape
    grid = _spread_back(grad, (kh, kw), in_hw, stride, pad_before, dilation)
    swapped = w.reshape(groups, o // groups, c_group, kh, kw).transpose(0, 2, 1, 3, 4)
    flipped = swapped.reshape(groups * c_group, o // groups, kh, kw)[:, :, ::-1, ::-1]
    return _correlate(grid, flipped, (1, 1), dilation, groups)


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
    if reduction == "mean":
        return loss.mean()
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


Erf = _unary("Erf", "ErfBackward0", _erf, lambda g, x: g * _erf_slope(x), module=__name__)
Silu = _unary(
    "Silu",
    "SiluBackward0",
    lambda xp, x: x * _sigmoid(xp, x),
    lambda g, x: g * _silu_slope(x),
    module=__name__,
)


_TANH_SCALE = math.sqrt(2 / math.pi)  # GELU's tanh approximation: tanh(√(2/π) (x + 0.044715 x³))
_TANH_CUBIC = 0.044715


class Gelu(Function):
    """``x · Φ(x)`` (Φ the standard normal CDF), or its tanh approximation."""

    node_name = "GeluBackward0"
    saved_names = ("self",)
    array_forward = True

    @staticmethod
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


class Softmax(Function):
    """``exp(x) / sum(exp(x))`` along ``dim``, computed as ``exp(x - max)``: same value, no overflow.

    Backward (y the output, g its gradient): ``y · (g - sum(g · y))`` along ``dim``.
    """

    node_name = "SoftmaxBackward0"
    saved_names = ("result",)
    array_forward = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        x = a._data
        xp = array_module(x)
        if x.ndim == 0:  # one element: its share is all of it
            return xp.ones_like(x)
        e = xp.exp(x - x.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (output,)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return y * (grad - (grad * y).sum(ctx.dim, keepdim=True)), None

    @staticmethod
    def jvp(ctx, t, _):  # the Jacobian diag(y) - y yᵀ is symmetric: same formula
        y = ctx.result
        return y * (t - (t * y).sum(ctx.dim, keepdim=True))


class LogSoftmax(Function):
    """``x - logsumexp(x)`` along ``dim`` (max-subtracted, so large inputs are fine).

    Backward (y the output, g its gradient): ``g - exp(y) · sum(g)`` along ``dim``.
    """

    node_name = "LogSoftmaxBackward0"
    saved_names = ("result",)
    array_forward = True

    @staticmethod
    def forward(ctx, a, dim):
        ctx.dim = dim
        x = a._data
        xp = array_module(x)
        if x.ndim == 0:
            return xp.zeros_like(x)
        shifted = x - x.max(axis=dim, keepdims=True)
        return shifted - xp.log(xp.exp(shifted).sum(axis=dim, keepdims=True))

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (output,)

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        return grad - y.exp() * grad.sum(ctx.dim, keepdim=True), None

    @staticmethod
    def jvp(ctx, t, _):  # the Jacobian I - 1 softmaxᵀ, applied to t
        return t - (ctx.result.exp() * t).sum(ctx.dim, keepdim=True)


# --------------------------------------------------------------------------- linear


class Addmm(Function):
    """``bias + mat1 @ mat2`` (what ``linear`` computes for a batch of rows)."""

    node_name = "AddmmBackward0"
    saved_names = ("mat1", "mat2")
    array_forward = True

    @staticmethod
    def forward(ctx, bias, mat1, mat2):
        ctx.to_save = (mat1, mat2)
        return bias._data + mat1._data @ mat2._data

    @staticmethod
    def backward(ctx, grad):
        mat1, mat2 = ctx.saved_tensors
        _, need_1, need_2 = ctx.needs_input_grad
        # the bias gradient has grad's (rows, out) shape: the engine sums it back to (out,)
        return grad, grad @ mat2.mT if need_1 else None, mat1.mT @ grad if need_2 else None

    @staticmethod
    def jvp(ctx, t_bias, t1, t2):
        _, mat1, mat2 = ctx.inputs
        return tangent_sum(
            t_bias, None if t1 is None else t1 @ mat2, None if t2 is None else mat1 @ t2
        )


# --------------------------------------------------------------------------- losses


class MseLoss(Function):
    """``(input - target)²``, reduced; both arguments get gradients."""

    node_name = "MseLossBackward0"
    saved_names = ("self", "target")
    array_forward = True

    @staticmethod
    def forward(ctx, a, target, reduction):
        ctx.to_save = (a, target)
        ctx.reduction = reduction
        diff = a._data - target._data
        return _reduce_loss(diff * diff, reduction)

    @staticmethod
    def backward(ctx, grad):
        a, target = ctx.saved_tensors
        grad_a = 2 * (a - target) * _spread_loss_grad(grad, ctx.reduction, a.numel())
        return grad_a, -grad_a if ctx.needs_input_grad[1] else None, None

    @staticmethod
    def jvp(ctx, t_a, t_target, _):
        a, target, _ = ctx.inputs
        t_diff = tangent_sum(t_a, None if t_target is None else -t_target)
        return _reduce_loss(2 * (a - target) * t_diff, ctx.reduction)


class NllLoss(Function):
    """Negative log-likelihood of class indices: ``-weight[t] · input[n, t]`` per sample.

    ``input`` is (C,) or (N, C, ...), the class dim is 1 (0 for 1-d input). Targets
    equal to ``ignore_index`` contribute nothing; ``'mean'`` divides by the summed
    weight of the targets that count. The gradient is ``-weight[t]`` (over that sum)
    at each sample's target class and zero elsewhere.
    """

    node_name = "NllLossBackward0"
    array_forward = True

    @staticmethod
    def forward(ctx, a, target, weight, ignore_index, reduction):
        x, t = a._data, target._data
        xp = array_module(x)
        class_dim = 0 if x.ndim == 1 else 1
        n_classes = x.shape[class_dim]
        ignored = t == ignore_index
        out_of_range = ~ignored & ((t < 0) | (t >= n_classes))
        if bool(out_of_range.any()):
            bad = int(t[out_of_range].reshape(-1)[0])
            raise IndexError(
                f"Target {bad} is out of bounds.\n  Class indices must be in [0, {n_classes}) for "
                f"input of shape {tuple(x.shape)} ({n_classes} classes along dim {class_dim})."
            )
        t = xp.where(ignored, 0, t)  # any valid class, so the lookups below stay in range
        picked = xp.take_along_axis(x, xp.expand_dims(t, class_dim), class_dim)
        picked = picked.squeeze(class_dim)  # input[n, t[n], ...]
        w = xp.ones(t.shape, x.dtype) if weight is None else weight._data[t]
        w = xp.where(ignored, 0, w).astype(x.dtype)
        ctx.class_dim, ctx.reduction, ctx.target = class_dim, reduction, t
        ctx.n_classes, ctx.weights = n_classes, w
        ctx.total_weight = w.sum()
        loss = -w * picked
        if reduction == "mean":  # all targets ignored: 0/0, nan like torch (without a warning)
            total = ctx.total_weight
            return xp.where(total == 0, xp.nan, loss.sum() / xp.where(total == 0, 1, total))
        return _reduce_loss(loss, reduction)

    @staticmethod
    def backward(ctx, grad):
        xp = array_module(ctx.weights)
        coefficient = -ctx.weights
        if ctx.reduction == "mean":
            coefficient = coefficient / (ctx.total_weight if ctx.total_weight else 1)
        shape = [1] * (ctx.target.ndim + 1)
        shape[ctx.class_dim] = ctx.n_classes
        chosen = xp.arange(ctx.n_classes).reshape(shape) == xp.expand_dims(
            ctx.target, ctx.class_dim
        )
        per_sample = (grad * wrap_array(as_array(coefficient))).unsqueeze(ctx.class_dim)
        return where(wrap_array(as_array(chosen)), per_sample, 0.0), None, None, None, None

    @staticmethod
    def jvp(ctx, t, *_):  # linear in the input (the weights are constants)
        return type(ctx)._forward_cls.apply(t, *ctx.inputs[1:])


class NllLoss2d(NllLoss):
    """``NllLoss`` of (N, C, H, W) scores (torch's node name for images)."""

    node_name = "NllLoss2DBackward0"


def _clamped_log(xp, x):
    """``max(log(x), -100)`` without evaluating log(0) (torch clamps BCE's logs at -100)."""
    positive = x > 0
    return xp.where(positive, xp.maximum(xp.log(xp.where(positive, x, 1)), -100), -100)


class BinaryCrossEntropy(Function):
    """``-w · (t · log(x) + (1 - t) · log(1 - x))`` for probabilities x, logs clamped at -100.

    Gradients: ``w · (x - t) / (x · (1 - x))`` for x (denominator at least 1e-12)
    and ``w · (log(1 - x) - log(x))`` for t.
    """

    node_name = "BinaryCrossEntropyBackward0"
    saved_names = ("self", "target", "weight")
    array_forward = True

    @staticmethod
    def forward(ctx, a, target, weight, reduction):
        x, t = a._data, target._data
        xp = array_module(x)
        if bool(((x < 0) | (x > 1)).any()):
            raise RuntimeError(
                "all elements of input should be between 0 and 1\n  binary_cross_entropy takes "
                "probabilities; for raw scores (logits) use binary_cross_entropy_with_logits."
            )
        ctx.to_save = (a, target, weight)
        ctx.reduction = reduction
        loss = -(t * _clamped_log(xp, x) + (1 - t) * _clamped_log(xp, 1 - x))
        if weight is not None:
            loss = loss * weight._data
        return _reduce_loss(loss, reduction)

    # ∂loss/∂x and ∂loss/∂t of each element before weighting, from teachgrad ops (``p`` is
    # the pos_weight of the logits version). Backward and jvp both use them.
    @staticmethod
    def d_input(x, t, p=None):
        return (x - t) / (x * (1 - x)).clamp(min=1e-12)

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
        x, t, w, *rest = ctx.inputs  # rest: (pos_weight,) with logits, then the reduction
        p = rest[:-1]
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
    saved_names = ("self", "target", "weight", "pos_weight")
    array_forward = True

    @staticmethod
    def forward(ctx, a, target, weight, pos_weight, reduction):
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
        return _reduce_loss(loss, reduction)

    @staticmethod
    def d_input(x, t, p=None):  # σ(x) - t without pos_weight
        return x.sigmoid() - t if p is None else (1 + (p - 1) * t) * x.sigmoid() - p * t

    @staticmethod
    def d_target(x, t, p=None):  # -x without pos_weight
        if p is None:
            return -x
        softplus_neg = (-x).clamp(min=0) + (-x.abs()).exp().log1p()
        return (p - 1) * softplus_neg - x


# --------------------------------------------------------------------------- convolution

# Three Functions whose backwards are each other: for y = conv(x, w),
#   ∂/∂x is ConvolutionInputGrad(g, w)   (a transposed convolution),
#   ∂/∂w is ConvolutionWeightGrad(x, g)  (a correlation of the input with the gradient),
# and both are bilinear, so their own gradients are again these three ops.
# ``geometry`` is (stride, padding, dilation, groups) with padding ((top, bottom), (left, right)).


class Convolution(Function):
    """2-d convolution (cross-correlation) of (N, C, H, W) input with (O, C/groups, kh, kw) filters."""

    node_name = "ConvolutionBackward0"
    saved_names = ("input", "weight")
    array_forward = True

    @staticmethod
    def forward(ctx, a, w, bias, stride, padding, dilation, groups):
        need_a, need_w = ctx.needs_input_grad[:2]
        ctx.to_save = (a if need_w else None, w if need_a else None)
        ctx.geometry = (stride, padding, dilation, groups)
        ctx.in_hw, ctx.kernel = a._data.shape[2:], w._data.shape[2:]
        out = _correlate(pad_array(a._data, padding), w._data, stride, dilation, groups)
        if bias is not None:
            out += bias._data.reshape(-1, 1, 1)
        return out

    @staticmethod
    def backward(ctx, grad):
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


class _ConvolutionGrad(Function):
    """What the two gradient maps below share. Each is bilinear in its two tensor inputs
    (``first``, ``second``), so its jvp moves one factor at a time, and its backward is two
    maps of the trio: ``grad_first``/``grad_second`` (each class's own) say which."""

    array_forward = True

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

    @staticmethod
    def forward(ctx, a, grad, kernel, stride, padding, dilation, groups):
        ctx.to_save = (a, grad)
        ctx.in_hw, ctx.geometry = a._data.shape[2:], (stride, padding, dilation, groups)
        x = pad_array(a._data, padding)
        return _correlate_weight_grad(x, grad._data, kernel, stride, dilation, groups)

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


class MaxPool2d(Function):
    """The largest value of each window, and where it was (``indices`` into each H*W plane)."""

    node_name = "MaxPool2DWithIndicesBackward0"
    saved_names = ("self", "result1")
    array_forward = True

    @staticmethod
    def forward(ctx, a, kernel, stride, padding, dilation, out_hw):
        x = _batched(a._data)
        xp = array_module(x)
        n, c, h, w = x.shape
        (kh, kw), (oh, ow) = kernel, out_hw
        padded = pad_array(x, padding, -xp.inf)  # padding never wins a max
        win = _windows(padded, kernel, stride, dilation, out_hw).reshape(n, c, oh, ow, kh * kw)
        tap = win.argmax(axis=-1)  # the first largest, like torch
        values = xp.take_along_axis(win, tap[..., None], axis=-1)[..., 0]
        # the winning tap's pixel in the unpadded input, as a row-major index into its plane
        row = xp.arange(oh).reshape(-1, 1) * stride[0] + (tap // kw) * dilation[0] - padding[0][0]
        col = xp.arange(ow) * stride[1] + (tap % kw) * dilation[1] - padding[1][0]
        indices = (row * w + col).astype("int64")
        ctx.in_shape = a._data.shape
        if a._data.ndim == 3:
            values, indices = values[0], indices[0]
        return values, indices

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.to_save = (inputs[0], output[1])

    @staticmethod
    def backward(ctx, grad, _grad_indices):
        _, indices = ctx.saved_tensors
        return PlaneScatter.apply(grad, indices, ctx.in_shape), *(None,) * 5

    @staticmethod
    def jvp(ctx, t, *_):  # each output moves as the input element it came from
        return PlaneGather.apply(t, ctx.outputs[1]), None


class PlaneScatter(Function):
    """``grad`` added into zeros of ``in_shape`` at ``indices`` of each H*W plane (max-pool's
    backward; windows that share a maximum add up). Its backward gathers: ``PlaneGather``."""

    node_name = "MaxPool2DWithIndicesBackwardBackward0"
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, indices, in_shape):
        ctx.to_save = (indices,)
        g, idx = grad._data, indices._data
        xp = array_module(g)
        plane = in_shape[-1] * in_shape[-2]
        planes = math.prod(in_shape[:-2])
        offsets = xp.arange(planes).reshape(-1, 1) * plane  # where each plane starts
        positions = idx.reshape(planes, -1) + offsets
        out = _scatter_add(positions, g, planes * plane)
        return out.astype(g.dtype, copy=False).reshape(in_shape)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        return PlaneGather.apply(gg, indices), None, None


class PlaneGather(Function):
    """``x`` read at ``indices`` of each H*W plane (the transpose of ``PlaneScatter``)."""

    node_name = "GatherBackward0"
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, a, indices):
        ctx.to_save = (indices,)
        ctx.in_shape = a._data.shape
        x, idx = a._data, indices._data
        planes = math.prod(x.shape[:-2])
        flat = x.reshape(planes, -1)
        return array_module(x).take_along_axis(flat, idx.reshape(planes, -1), 1).reshape(idx.shape)

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return PlaneScatter.apply(grad, indices, ctx.in_shape), None


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


class AvgPool2d(Function):
    """The mean of each window (the divisor per window is in ``divisors``)."""

    node_name = "AvgPool2DBackward0"
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, a, kernel, stride, padding, out_hw, divisors):
        x = _batched(a._data)
        ctx.in_shape, ctx.pool = a._data.shape, (kernel, stride, padding, out_hw, divisors)
        padded = pad_array(x, padding)
        sums = _windows(padded, kernel, stride, (1, 1), out_hw).sum(axis=(-2, -1))
        out = (sums / divisors).astype(x.dtype, copy=False)
        return out[0] if a._data.ndim == 3 else out

    @staticmethod
    def backward(ctx, grad):
        return AvgPool2dTranspose.apply(grad, ctx.in_shape, *ctx.pool), *(None,) * 5


class AvgPool2dTranspose(Function):
    """Average pooling's backward: each window's gradient, divided by its divisor, spread evenly
    over the window's pixels (overlaps add up). Linear, so its backward is ``AvgPool2d``."""

    node_name = "AvgPool2DBackwardBackward0"
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, in_shape, kernel, stride, padding, out_hw, divisors):
        ctx.pool = (kernel, stride, padding, out_hw, divisors)
        g = _batched(grad._data)
        pad_before = (padding[0][0], padding[1][0])
        grid = _spread_back(g / divisors, kernel, in_shape[-2:], stride, pad_before, (1, 1))
        out = _windows(grid, kernel, (1, 1), (1, 1), in_shape[-2:]).sum(axis=(-2, -1))
        return out.astype(g.dtype, copy=False).reshape(in_shape)

    @staticmethod
    def backward(ctx, gg):
        return AvgPool2d.apply(gg, *ctx.pool), *(None,) * 6


# --------------------------------------------------------------------------- layer norm, embedding


class NativeLayerNorm(Function):
    """Normalise over the last ``k`` dims: ``(x - mean) / sqrt(var + eps) · weight + bias``.

    With x̂ the normalised input and ĝ = grad · weight, the input gradient is
    ``rstd · (ĝ - mean(ĝ) - x̂ · mean(ĝ · x̂))``; backward recomputes x̂ from x with
    teachgrad ops so that the formula can be differentiated again.
    """

    node_name = "NativeLayerNormBackward0"
    saved_names = ("input", "weight", "bias")
    array_forward = True

    @staticmethod
    def forward(ctx, a, weight, bias, k, eps):
        x = a._data
        xp = array_module(x)
        dims = tuple(range(x.ndim - k, x.ndim))
        ctx.to_save = (a, weight, bias)
        ctx.dims, ctx.eps = dims, eps
        centered = x - x.mean(axis=dims, keepdims=True)
        rstd = 1 / xp.sqrt((centered * centered).mean(axis=dims, keepdims=True) + eps)
        out = centered * rstd
        if weight is not None:
            out = out * weight._data
        if bias is not None:
            out = out + bias._data
        return out

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
        x, weight, _ = ctx.saved_tensors
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


class Embedding(Function):
    """Rows of ``weight`` picked by integer ``indices``; the padding row gets no gradient."""

    node_name = "EmbeddingBackward0"
    saved_names = ("indices",)
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, weight, indices, padding_idx):
        ctx.to_save = (indices,)
        ctx.num_weights, ctx.padding_idx = weight._data.shape[0], padding_idx
        return weight._data[indices._data]

    @staticmethod
    def backward(ctx, grad):
        (indices,) = ctx.saved_tensors
        return EmbeddingRowSum.apply(grad, indices, ctx.num_weights, ctx.padding_idx), None, None


class EmbeddingRowSum(Function):
    """Embedding's backward: row ``i`` of the result sums the gradients of every position
    that looked up row ``i`` (repeats add up), except the padding row."""

    node_name = "EmbeddingDenseBackwardBackward0"
    array_forward = True
    jvp = staticmethod(linear_jvp)  # linear in its Tensor input

    @staticmethod
    def forward(ctx, grad, indices, num_weights, padding_idx):
        g, idx = grad._data, indices._data
        xp = array_module(g)
        dim = g.shape[-1]
        keep = idx != padding_idx if padding_idx is not None else xp.ones(idx.shape, bool)
        ctx.to_save, ctx.keep = (indices,), keep
        rows = (g * keep[..., None]).reshape(-1, dim)
        positions = idx.reshape(-1, 1) * dim + xp.arange(dim)  # flat index of each (row, column)
        out = _scatter_add(positions, rows, num_weights * dim)
        return out.astype(g.dtype, copy=False).reshape(num_weights, dim)

    @staticmethod
    def backward(ctx, gg):
        (indices,) = ctx.saved_tensors
        looked_up = Embedding.apply(gg, indices, None)
        return where(wrap_array(ctx.keep[..., None]), looked_up, 0.0), None, None, None

"""teachgrad.nn.functional (``F``): activations, losses, convolution and pooling as functions.

The differentiable pieces are Functions in ``teachgrad/ops/nn.py``; this module is
the public, torch-shaped surface over them: torch's signatures and defaults, the
argument checks (with torch's errors plus a hint), and the cases torch builds from
other ops (``cross_entropy`` is ``log_softmax`` then ``nll_loss``).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.relu(tg.tensor([-1.0, 2.0]))
    tensor([0., 2.])
"""

from __future__ import annotations

import math
import warnings

from .._arguments import checked, parse
from .._backend import array_module, float16, float32
from .._creation import arange, rand
from .._printing import legacy_type_name
from .._printing import scalar_type_name as _type_name
from .._profiling import recorded_as
from .._tensor import Tensor, check_bool, type_name
from ..autograd.grad_mode import is_grad_enabled
from ..ops import nn as _nn
from ..ops.fold import fold, unfold  # (they live with their ops, as interpolate does)
from ..ops.inplace import inplace as _inplace
from ..ops.linalg import matmul
from ..ops.nn import (  # (F's: they live with the ops, as Tensor.softmax needs them)
    log_softmax,
    pdist,
    softmax,
)
from ..ops.pointwise import (
    DivByNumber,  # (torch's div.Scalar: cross_entropy's mean)
    MulByNumber,  # (torch's mul.Scalar: cross_entropy's label smoothing)
    Threshold,
    broadcast_shape,
    same_device,
)
from ..ops.pointwise import relu as _relu
from ..ops.shape import constant_pad_nd
from ..ops.upsample import interpolate  # (it lives with its ops: torch's rules, its tables)
from ..ops.views import expand_error

# --------------------------------------------------------------------------- helpers


def _legacy_reduction(size_average, reduce, stacklevel) -> str:
    """The ``reduction`` meant by torch's deprecated ``size_average``/``reduce`` flags (both
    default to True), with torch's warning; ``stacklevel`` points it at the user's call.
    The loss modules' ``__init__`` use it too."""
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    reduction = "mean" if size_average and reduce else "sum" if reduce else "none"
    warnings.warn(
        "size_average and reduce args will be deprecated, please use "
        f"reduction='{reduction}' instead.",
        UserWarning,
        stacklevel=stacklevel,
    )
    return reduction


def _reduction(size_average, reduce, reduction) -> str:
    """``reduction`` checked, or derived from the deprecated ``size_average``/``reduce`` flags."""
    if size_average is not None or reduce is not None:
        return _legacy_reduction(size_average, reduce, stacklevel=4)
    if reduction not in ("none", "mean", "sum"):
        raise ValueError(
            f"{reduction} is not a valid value for reduction\n  Use 'mean' (the default), 'sum' or "
            "'none' (one loss per element)."
        )
    return reduction


def _not_differentiable(fn_name, argument, t) -> None:
    """torch refuses a gradient for loss weights: say so at the call, not in backward."""
    if t is not None and t.requires_grad and is_grad_enabled():
        raise RuntimeError(
            f"The function '{fn_name}' is not differentiable with respect to argument '{argument}'. "
            f"This input cannot have requires_grad True.\n  Pass {argument}.detach() (a fixed "
            "weighting), or build the loss from tensor ops if you need its gradient."
        )


def _check_tensors(fn_name: str, tensors: dict, optional: dict | None = None, first: int = 1):
    """torch's TypeError for the first argument that is not a tensor: ``tensors`` must be,
    ``optional`` ones may also be None (not given). Both map names to values in the order of
    the parameters of torch's C++ function ``fn_name``, the first at position ``first``: torch's
    Python functional (``F.cross_entropy`` ...) hands them on to it by position, so its
    argument parser names the position even of an argument given by keyword.

    >>> import teachgrad as tg
    >>> _check_tensors("nll_loss_nd", {"input": tg.ones(2), "target": "a"})
    Traceback (most recent call last):
    TypeError: nll_loss_nd(): argument 'target' (position 2) must be Tensor, not str
      Make it a tensor first, e.g. with tg.tensor(...).
    """
    optional = optional or {}
    for position, (name, value) in enumerate({**tensors, **optional}.items(), start=first):
        if not isinstance(value, Tensor) and not (value is None and name in optional):
            raise TypeError(
                f"{fn_name}(): argument '{name}' (position {position}) must be Tensor, not "
                f"{type_name(value)}\n  Make it a tensor first, e.g. with tg.tensor(...)."
            )


def _pair(value, name, fn_name) -> tuple:
    """An int or a sequence of two ints as a pair (one value per spatial dim)."""
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) == 1:
        return (value[0], value[0])
    if len(value) != 2:
        raise RuntimeError(
            f"expected {name} to be a single integer value or a list of 2 values to match the "
            f"convolution dimensions, but got {name}={list(value)}\n  {fn_name} works on 2 spatial "
            "dims (H, W): pass one int for both or a pair (for H, for W)."
        )
    return value


# --------------------------------------------------------------------------- activations


_INTS = ("uint8", "int8", "int16", "int32", "int64")


def _refuse_non_float(input, kernel, int_kernels=()) -> None:
    """torch's error for an op with no kernel for bools and integers, but for the integer
    dtypes named in ``int_kernels`` (torch pools and convolves some integers)."""
    if not input.is_floating_point() and input.dtype.name not in int_kernels:
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{_type_name(input)}'\n  It is defined on real "
            "numbers: convert the input first, e.g. input.float()."
        )


def threshold(input, threshold, value, inplace=False):
    """``input`` where it is greater than ``threshold``, else ``value``.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.threshold(tg.tensor([-1.0, 0.5, 2.0]), 0.5, -9.0)
    tensor([-9., -9.,  2.])
    """
    if inplace:
        return _inplace(input, "threshold_", Threshold.apply, threshold, value)
    return Threshold.apply(input, threshold, value)


def relu(input, inplace=False):
    """``max(x, 0)`` elementwise; ``inplace=True`` overwrites ``input``.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.relu(tg.tensor([-1.0, 0.5]))
    tensor([0.0000, 0.5000])
    """
    if not inplace:
        return _relu(input)
    _check_tensors("relu_", {"input": input})
    return input.relu_()


def gelu(input, approximate="none"):
    """``x · Φ(x)``, Φ the standard normal CDF; ``approximate='tanh'`` uses the tanh formula.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.gelu(tg.tensor([-1.0, 0.0, 1.0]))
    tensor([-0.1587,  0.0000,  0.8413])
    """
    _check_tensors("gelu", {"input": input})
    if not isinstance(approximate, str):  # (torch hands it on by keyword: no position)
        raise TypeError(f"gelu(): argument 'approximate' must be str, not {type_name(approximate)}")
    if approximate not in ("none", "tanh"):
        raise RuntimeError(
            f"approximate argument must be either none or tanh.\n  Got approximate={approximate!r}."
        )
    _refuse_non_float(input, "GeluKernelImpl")
    return _nn.Gelu.apply(input, approximate)


def silu(input, inplace=False):
    """``x · sigmoid(x)`` (also called swish).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.silu(tg.tensor([0.0, 1.0]))
    tensor([0.0000, 0.7311])
    """
    _check_tensors("silu_" if inplace else "silu", {"input": input})
    _refuse_non_float(input, "silu_cpu")
    if inplace:
        return _inplace(input, "silu_", _nn.Silu.apply)
    return _nn.Silu.apply(input)


def sigmoid(input):
    """``1 / (1 + exp(-x))``, squashing to (0, 1). As torch's, it calls ``input.sigmoid()``:
    a non-tensor fails there, with Python's AttributeError (torch's words).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.sigmoid(tg.tensor([0.0]))
    tensor([0.5000])
    """
    return input.sigmoid()


def tanh(input):
    """``tanh(x)``, squashing to (-1, 1). As torch's, it calls ``input.tanh()``: a non-tensor
    fails there, with Python's AttributeError (torch's words).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.tanh(tg.tensor([0.0]))
    tensor([0.])
    """
    return input.tanh()


# --------------------------------------------------------------------------- linear, dropout, pad


@checked  # (torch's F.linear is its parser's: a wrong argument is refused in its words)
@recorded_as("aten::linear")
def linear(input, weight, bias=None):
    """``input @ weight.T + bias``: ``weight`` is (out_features, in_features).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.linear(tg.ones(2, 3), tg.ones(4, 3), tg.zeros(4)).shape
    teachgrad.Size([2, 4])
    """
    if input._data.ndim == 0 or weight._data.ndim == 0:
        raise RuntimeError(
            "both arguments to linear need to be at least 1D, but they are "
            f"{input._data.ndim}D and {weight._data.ndim}D\n  input is (..., in_features), weight "
            "(out_features, in_features)."
        )
    if bias is None:  # torch records these as MmBackward0 (2-d), UnsafeViewBackward0 (batched) ...
        return matmul(input, weight.t())
    same_device(input, weight, bias)
    # (the checks read the arrays' own shapes and dtypes: this runs once per layer and step)
    ndim = input._data.ndim
    if ndim != 2 and not _rows_fuse(input, weight, bias):
        return matmul(input, weight.t()).add_(bias)  # torch's: in place, so it cannot grow
    rows = input if ndim == 2 else input.view(-1, input.shape[-1])
    mat2 = weight.t()
    if mat2._data.ndim != 2:
        raise RuntimeError(
            f"mat2 must be a matrix, got {mat2._data.ndim}-D tensor\n  linear with a bias wants "
            f"weight (out_features, in_features); got weight of shape {tuple(weight.shape)}."
        )
    (n, k), (k2, m) = rows._data.shape, mat2._data.shape
    if k != k2:
        raise RuntimeError(
            f"mat1 and mat2 shapes cannot be multiplied ({n}x{k} and {k2}x{m})\n  linear wants "
            "input (..., in_features) and weight (out_features, in_features); got input "
            f"{tuple(input.shape)} and weight {tuple(weight.shape)}."
        )
    for name, a in (("self", bias), ("mat1", rows)):  # (torch's addmm's names and order)
        if a._data.dtype != mat2._data.dtype:
            raise RuntimeError(
                f"{name} and mat2 must have the same dtype, but got {_type_name(a)} and {_type_name(mat2)}\n"
                "  linear doesn't promote: give input, weight and bias one dtype, e.g. x.to(weight.dtype)."
            )
    if bias._data.shape != (m,):  # (the usual bias, one per output feature, needs no check)
        _check_bias_expands(bias, (n, m))
    out = _nn.Addmm.apply(bias, rows, mat2)
    return out if ndim == 2 else out.view(*input.shape[:-1], weight.shape[0])


def _rows_fuse(input, weight, bias) -> bool:
    """torch's choice for an input that is not a matrix: its rows go through addmm when the
    input is contiguous and the bias has one dim, or one dim that is not 1 (``(1, out)``,
    but also ``(out, 1)``, which addmm then refuses); else ``matmul`` and an in-place add."""
    shape = bias._data.shape
    return (len(shape) == 1 or sum(n != 1 for n in shape) == 1) and input.is_contiguous()


def _check_bias_expands(bias, target):
    """torch's error where ``expand`` can't grow linear's bias to the (rows, out_features) result."""
    shape = bias._data.shape
    lead = len(target) - len(shape)
    bad = [
        lead + i for i, size in enumerate(shape) if lead >= 0 and size not in (1, target[lead + i])
    ]
    if lead < 0 or bad:  # (lead < 0: more dims than the result, which expand refuses)
        error = expand_error(bias, target, bad[0] if bad else None)
        raise RuntimeError(f"{error}\n  bias must have out_features={target[1]} elements.")


@recorded_as("aten::dropout")
def dropout(input, p=0.5, training=True, inplace=False):
    """Zero each element with probability ``p`` and scale the rest by ``1/(1-p)`` (training only).

    The mask comes from teachgrad's generator, so ``teachgrad.manual_seed`` repeats it.
    With ``training=False`` the input is returned unchanged.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.dropout(tg.ones(4), p=0.5, training=False)
    tensor([1., 1., 1., 1.])
    >>> sorted(set(F.dropout(tg.ones(100), p=0.5).tolist()))
    [0.0, 2.0]
    """
    if p < 0.0 or p > 1.0:
        raise ValueError(_bad_dropout_probability(p))
    # torch's Python check above lets NaN through; its C++ dropout then checks the arguments
    # (input and train by type, p by value), in training or not
    name = "dropout_" if inplace else "dropout"
    _check_tensors(name, {"input": input})
    check_bool(name, "train", training, 3)
    if not 0.0 <= p <= 1.0:
        raise RuntimeError(_bad_dropout_probability(p))
    if not training or p == 0 or input.numel() == 0:
        return input
    if p == 1:  # everything dropped (and no division by zero)
        noise = input.new_zeros(())
    elif not input.is_floating_point():  # the scale 1/(1-p) is a float (torch's words)
        raise RuntimeError(
            f"result type Float can't be cast to the desired output type {_type_name(input)}\n  "
            "dropout scales the kept elements by 1/(1-p): give it a floating-point input."
        )
    else:  # keep with probability 1 - p; the kept are scaled so the expected value is unchanged
        keep = rand(tuple(input.shape), dtype=input.dtype, device=input.device) < 1 - p
        noise = keep.to(input.dtype) / (1 - p)
    return input.mul_(noise) if inplace else input * noise


def _bad_dropout_probability(p) -> str:
    return (
        f"dropout probability has to be between 0 and 1, but got {p}\n  p is the probability "
        "of *dropping* an element: 0 keeps everything, 1 drops everything (a number, not NaN)."
    )


@recorded_as("aten::pad")
def pad(input, pad, mode="constant", value=None):
    """Pad the last dims: ``pad = (left, right)`` for the last dim, then ``(top, bottom)`` for the
    one before, ...; negative amounts crop. ``mode='constant'`` fills with ``value`` (0);
    ``'replicate'`` repeats the edge element, ``'reflect'`` mirrors around it, ``'circular'``
    wraps around (these three: 1 to 3 dims of a batch or of one input).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.pad(tg.ones(1, 2), (1, 2), value=0.0)
    tensor([[0., 1., 1., 0., 0.]])
    >>> F.pad(tg.arange(4.0), (-1, -1))
    tensor([1., 2.])
    >>> F.pad(tg.arange(3.0)[None], (2, 1), mode="reflect"), F.pad(tg.arange(3.0)[None], (1, 1), mode="replicate")
    (tensor([[2., 1., 0., 1., 2., 1.]]), tensor([[0., 0., 1., 2., 2.]]))
    >>> F.pad(tg.arange(3.0)[None], (2, 1), mode="circular")
    tensor([[1., 2., 0., 1., 2., 0.]])
    """
    # torch's F.pad hands its arguments on, by position, to its parser: a pad of floats is
    # refused, not rounded
    parse("pad", (input, pad, mode, value), {})
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(
            f"Unrecognised padding mode {mode}\n  The modes are 'constant', 'reflect', "
            "'replicate' and 'circular'."
        )
    pad = tuple(int(p) for p in pad)
    if len(pad) % 2:
        raise RuntimeError(
            f"Padding length must be divisible by 2\n  pad lists (before, after) pairs, last dim "
            f"first; got {len(pad)} values: {pad}."
        )
    if len(pad) // 2 > input.ndim:
        raise RuntimeError(
            "Padding length should be less than or equal to two times the input dimension but got "
            f"padding length {len(pad)} and input of dimension {input.ndim}\n  {len(pad) // 2} pairs "
            f"would pad {len(pad) // 2} dims; the input of shape {tuple(input.shape)} has {input.ndim}."
        )
    if mode != "constant":
        return _edge_pad(input, pad, mode, value)
    return constant_pad_nd(input, pad, 0.0 if value is None else value)


def _edge_pad(input, pad, mode, value):
    """``pad`` with mode 'reflect' or 'replicate' (torch's ReflectionPad/ReplicationPad nodes)
    or 'circular' (``_circular_pad``), after torch's checks, in torch's order."""
    if value is not None and value != 0:
        raise RuntimeError(
            f'Padding mode "{mode}" doesn\'t take in value argument\n  Only mode="constant" '
            "fills with a value; this mode copies the input's own elements."
        )
    dims = len(pad) // 2
    if not 0 < dims <= 3 or input.ndim not in (dims + 1, dims + 2):
        raise NotImplementedError(
            f"Padding size {len(pad)} is not supported for {input.ndim}D input tensor.\n  "
            f"{mode} pads the last 1, 2 or 3 dims of a (batch of) {dims + 1}-D input."
        )
    if mode == "circular":
        return _circular_pad(input, pad)
    if 0 in input.shape[input.ndim - dims - 1 :]:  # (a batch of none is fine, no other dim)
        raise RuntimeError(
            f"Expected {dims + 1}D or {dims + 2}D (batch mode) tensor with possibly 0 batch size "
            f"and other non-zero dimensions for input, but got: {list(input.shape)}"
        )
    # (before, after, size) of each padded dim, the last dim first, as pad lists them
    padded = [(pad[2 * k], pad[2 * k + 1], input.shape[-1 - k]) for k in range(dims)]
    for k, (before, after, size) in enumerate(padded if mode == "reflect" else ()):
        if before >= size or after >= size:  # (torch's arguments #4, #6, #8)
            raise RuntimeError(
                f"Argument #{4 + 2 * k}: Padding size should be less than the corresponding "
                f"input dimension, but got: padding ({before}, {after}) at dimension "
                f"{input.ndim - 1 - k} of input {list(input.shape)}\n  reflect mirrors the input "
                "around its edge: it can't reach further than the input is long."
            )
    sizes = [(size, before + size + after) for before, after, size in reversed(padded)]
    if all(out < 1 for _, out in sizes):  # (torch's words: "D: d H: h, W: w", D and H if padded)
        names = "DHW"[3 - dims :]
        given = [f"{c}: {n}" for c, (n, _) in zip(names, sizes)]
        given = " ".join([*given[:-2], ", ".join(given[-2:])])
        given += " " if (mode, dims) == ("replicate", 2) else ""  # (torch's own spacing)
        got = " ".join(f"{c}: {out}" for c, (_, out) in zip(names, sizes))
        raise RuntimeError(f"input ({given}) is too small. Calculated output {got}")
    return _nn.EDGE_PADS[(mode, dims)].apply(input, pad, mode)


def _circular_pad(input, pad):
    """``pad`` with mode 'circular': the input wraps around, so what is padded on the left
    comes from its right end and the other way round. Built as torch builds it, from views
    and in-place copies, so the graph is torch's (``CopySlices`` nodes) and so is backward:

    1. an empty output of the padded shape;
    2. the input (cropped where a pad is negative) copied into its middle;
    3. dim by dim, the last first: the left pad copied from the output's right end, then
       the right pad from its left end (corners get written once per dim).
    """
    # (dim, before, after, size) of each padded dim, the last dim first, as pad lists them
    padded = [
        (input.ndim - 1 - k, pad[2 * k], pad[2 * k + 1], input.shape[-1 - k])
        for k in range(len(pad) // 2)
    ]
    shape = list(input.shape)
    for dim, before, after, size in reversed(padded):  # (torch checks the first dim first)
        if before > size or after > size:
            raise RuntimeError(
                "Padding value causes wrapping around more than once.\n  circular pads a dim "
                f"of size {size} with ({before}, {after}): each pad can take at most the whole dim."
            )
        shape[dim] = before + size + after
        if shape[dim] < 0:
            raise RuntimeError(
                "Negative padding value is resulting in an empty dimension\n  cropping "
                f"({before}, {after}) from dim {dim} of size {size} leaves less than nothing."
            )

    def part(t, dim, start, stop):  # t[..., start:stop, ...] along dim (a Slice node always)
        return t.narrow(dim, start, stop - start)

    out = input.new_empty(shape)  # 1.
    middle, inner = out, input  # 2.
    for dim, before, after, size in padded:
        middle = part(middle, dim, max(before, 0), shape[dim] - max(after, 0))
        inner = part(inner, dim, max(-before, 0), size - max(-after, 0))
    middle.copy_(inner)
    for dim, before, after, _ in padded:  # 3.
        end = shape[dim] - max(after, 0)  # where the right pad starts
        if before > 0:
            part(out, dim, 0, before).copy_(part(out, dim, end - before, end))
        if after > 0:
            start = max(before, 0)
            part(out, dim, shape[dim] - after, shape[dim]).copy_(
                part(out, dim, start, start + after)
            )
    return out


# --------------------------------------------------------------------------- regression losses


def _weighted(loss, weight, reduction):
    """A per-element loss times ``weight``, reduced; 'mean' divides by the total weight."""
    loss = loss * weight
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.sum() / weight.sum()


def _regression_pair(input, target, weight):
    """What mse_loss and l1_loss check and prepare alike: one device, input and target
    broadcast together (with torch's warning: that is seldom what was meant), the weight's
    shape. The sizes are read as torch's Python reads them, ``target.size()`` first: a
    non-tensor fails there, with Python's AttributeError (torch's words)."""
    same_device(input, target)
    pair = input, target
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.shape}) that is different to the input size ({input.shape}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have "
            "the same size.",
            UserWarning,
            stacklevel=3,
        )
        shape = broadcast_shape(tuple(input.shape), tuple(target.shape))
        # (as torch's broadcast_tensors: only a tensor whose shape differs is expanded)
        pair = tuple(t if tuple(t.shape) == shape else t.expand(shape) for t in pair)
    if weight is not None and weight.size() != input.size():
        raise ValueError(
            f"Weights and input must have the same size.\n  Got weight of shape {tuple(weight.shape)} "
            f"for input of shape {tuple(input.shape)}."
        )
    return pair


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error ``(input - target)²`` (reduced by ``reduction``).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.mse_loss(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 4.0]))
    tensor(2.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _regression_pair(input, target, weight)
    if weight is not None:
        return _weighted((input - target) ** 2, weight, reduction)
    return _nn.MseLoss.apply(input, target, reduction)


@recorded_as("aten::l1_loss")
def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error ``|input - target|`` (built from ``abs`` and a reduction, like torch).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.l1_loss(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 4.0]))
    tensor(1.)
    """
    reduction = _reduction(size_average, reduce, reduction)
    input, target = _regression_pair(input, target, weight)
    loss = (input - target).abs()
    if weight is not None:
        return _weighted(loss, weight, reduction)
    return _nn._reduce_loss(loss, reduction)


# --------------------------------------------------------------------------- classification losses


def _check_class_target(input, target, weight):
    """torch's checks of nll_loss's arguments: dims, target dtype, batch size, weight size,
    a kernel for the input's dtype, the weight's dtype."""
    # (on the arrays' own shapes and dtypes: this runs at every training step)
    shape, target_shape = input._data.shape, target._data.shape
    if weight is not None and weight._requires_grad and is_grad_enabled():
        raise RuntimeError(
            f"The function '{'nll_loss2d' if len(shape) > 2 else 'nll_loss'}_forward' is not "
            "differentiable with respect to argument 'weight'. This input cannot have requires_grad "
            "True.\n  Class weights are constants of the loss: pass weight.detach()."
        )
    ndim, target_ndim = len(shape), len(target_shape)
    if ndim < 1:
        raise ValueError(
            f"Expected 1 or more dimensions (got {ndim})\n  Class scores are (C,) or (N, C, ...)."
        )
    if ndim >= 2 and target_ndim == 0 and shape[0] == 0:  # (torch reads its batch size)
        raise IndexError(
            "Dimension specified as 0 but tensor has no dimensions\n  For input "
            f"{tuple(shape)} the target holds one class index per sample: shape (0,)."
        )
    target_batch = target_shape[0] if target_ndim else 0  # (a 0-d target: torch says 0)
    if ndim >= 2 and shape[0] != target_batch:
        raise ValueError(
            f"Expected input batch_size ({shape[0]}) to match target batch_size "
            f"({target_batch}).\n  input {tuple(shape)} holds scores for {shape[0]} "
            f"samples, target {tuple(target_shape)} one class index per sample."
        )
    if ndim == 1 and target_ndim == 1 and target_shape[0] != 1:
        raise ValueError(
            f"For 1D input, 1D target must have size 1, but got target size: {target_shape[0]}\n  "
            "A 1-d input holds the scores of one sample: its target is one class index."
        )
    if ndim <= 2 and target_ndim != ndim - 1 and (ndim, target_ndim) != (1, 1):
        raise RuntimeError(
            "0D or 1D target tensor expected, multi-target not supported\n  For input "
            f"{tuple(shape)} the target holds one class index per sample: shape "
            f"{tuple(shape[:1]) if ndim == 2 else ()}, got {tuple(target_shape)}."
        )
    expected = [shape[0], *shape[2:]]
    if ndim > 2 and list(target_shape) != expected:
        raise RuntimeError(
            f"Expected target size {expected}, got {list(target_shape)}\n  For input (N, C, d1, ...) "
            "the target is (N, d1, ...): one class index per position."
        )
    # (torch checks the shapes first, then the target dtype, then the weight)
    if target._data.dtype.name not in ("int64", "uint8"):
        raise RuntimeError(
            f"expected target dtype to be Long or Byte, but got {_type_name(target)}\n  Class targets "
            "are indices: use target.long(). (For probabilities, cross_entropy takes a float target "
            "of the input's shape.)"
        )
    if ndim > 2 and weight is not None and weight.numel() != shape[1]:
        # (torch's nd kernel checks the count only: a (C, 1) weight is taken as (C,))
        raise RuntimeError(
            "weight tensor should be defined either for all or no classes\n  weight holds one "
            f"number per class: {shape[1]} for input {tuple(shape)}, got {list(weight.shape)}."
        )
    if ndim <= 2:
        _check_class_weight(weight, shape[0 if ndim == 1 else 1])
    _refuse_non_float(input, "nll_loss_out_frame" if ndim <= 2 else "nll_loss2d_forward_out_frame")
    if weight is not None and weight._data.dtype != input._data.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found {_type_name(weight)}\n  The class "
            "weights must have the input's dtype: weight.to(input.dtype)."
        )
    _not_differentiable("nll_loss_forward", "weight", weight)


def _check_class_weight(weight, n_classes, prefix=""):
    """One weight per class, or none (``prefix``: the function torch names in the message)."""
    if weight is not None and (weight.ndim != 1 or weight.shape[0] != n_classes):
        raise RuntimeError(
            f"{prefix}weight tensor should be defined either for all {n_classes} classes or no classes "
            f"but got weight tensor of shape: {list(weight.shape)}\n  weight holds one number per class."
        )


@recorded_as("aten::nll_loss_nd")
def nll_loss(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
):
    """Negative log-likelihood: ``-input[n, target[n]]`` (times ``weight[target[n]]``), reduced.

    ``input`` holds log-probabilities, (N, C), (N, C, d1, ...) or (C,). Targets equal
    to ``ignore_index`` count for nothing; ``'mean'`` divides by the summed weights of
    the targets that count.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> logp = tg.tensor([[-0.1, -2.0], [-3.0, -0.5]])
    >>> F.nll_loss(logp, tg.tensor([0, 1])), F.nll_loss(logp, tg.tensor([0, -100]))
    (tensor(0.3000), tensor(0.1000))
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_tensors("nll_loss_nd", {"input": input, "target": target}, {"weight": weight})
    same_device(input, target, weight)
    _check_class_target(input, target, weight)
    ndim = input._data.ndim
    if ndim == 1 and target.ndim == 1:  # torch reads a (1,) target of one sample as a number
        target = target.reshape(())
    if ndim <= 2:
        return _nn.NllLoss.apply(input, ignore_index, reduction, target=target, weight=weight)
    if weight is not None:
        weight = weight.reshape(-1)
    if ndim == 4:
        return _nn.NllLoss2d.apply(input, ignore_index, reduction, target=target, weight=weight)
    # other ranks go through the 4-d case with the positions flattened, as torch does
    n, c, positions = *input.shape[:2], math.prod(input.shape[2:])  # (not -1: n may be 0)
    flat = _nn.NllLoss2d.apply(
        input.reshape(n, c, 1, positions),
        ignore_index,
        reduction,
        target=target.reshape(n, 1, positions),
        weight=weight,
    )
    return flat.view(target.shape) if reduction == "none" else flat


def _along_class_dim(weight, ndim, class_dim):
    """The class weights (or None) shaped to broadcast along the class dim of an ndim input."""
    if weight is None:
        return None
    return weight.reshape([-1 if d == class_dim else 1 for d in range(ndim)])


@recorded_as("aten::cross_entropy_loss")
def cross_entropy(
    input,
    target,
    weight=None,
    size_average=None,
    ignore_index=-100,
    reduce=None,
    reduction="mean",
    label_smoothing=0.0,
):
    """``nll_loss(log_softmax(input, class dim), target)`` for raw scores (logits).

    ``target`` holds class indices, or class probabilities (a float tensor of the
    input's shape). ``label_smoothing = ε`` mixes the target with the uniform
    distribution: ``(1 - ε) · loss + ε · (mean over classes of -log p)``.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> logits = tg.tensor([[2.0, 0.0], [0.0, 2.0]])
    >>> F.cross_entropy(logits, tg.tensor([0, 1]))
    tensor(0.1269)
    >>> F.cross_entropy(logits, tg.tensor([[1.0, 0.0], [0.0, 1.0]]))
    tensor(0.1269)
    """
    reduction = _reduction(size_average, reduce, reduction)
    _check_tensors("cross_entropy_loss", {"input": input, "target": target}, {"weight": weight})
    if label_smoothing > 1.0:  # (torch reads a negative value as no smoothing)
        raise RuntimeError(
            f"label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing:g}\n  It is the share "
            "of each target's probability spread evenly over all classes."
        )
    ndim = input._data.ndim
    class_dim = 0 if ndim == 1 else 1
    n_classes = input._data.shape[class_dim] if ndim else 1
    if target.shape == input.shape and not target.is_floating_point():  # (torch's first check)
        raise RuntimeError(
            "Expected floating point type for target with class probabilities, got "
            f"{_type_name(target)}\n  A target of the input's shape holds class probabilities; "
            "class indices have one dim less (N,)."
        )
    logp = log_softmax(input, class_dim)

    if target.is_floating_point() and target.shape == input.shape:  # class probabilities
        same_device(input, target, weight)
        if ignore_index >= 0:  # (the default, -100, and other negative values are let through)
            raise RuntimeError(
                "ignore_index is not supported for floating point target\n  With class "
                "probabilities, give a sample you want ignored all-zero probabilities."
            )
        _check_class_weight(weight, n_classes, "cross_entropy: ")
        if label_smoothing > 0 and n_classes:  # (no classes: an empty target, left as it is)
            target = target * (1 - label_smoothing) + label_smoothing / n_classes
        weight_view = _along_class_dim(weight, ndim, class_dim)
        weighted = logp * target if weight is None else logp * weight_view * target
        if reduction == "none":
            return -weighted.sum(class_dim)
        if reduction == "sum":
            return -weighted.sum()
        if not input.numel():  # torch: the mean over no samples is NaN, filled in before the sign
            return -weighted.sum().fill_(float("nan"))
        # the mean over the samples: torch divides with its number overload (DivBackward1)
        return DivByNumber.apply(-weighted.sum(), input.numel() // n_classes)

    loss = nll_loss(logp, target, weight, ignore_index=ignore_index, reduction=reduction)
    if label_smoothing <= 0:
        return loss
    weight_view = _along_class_dim(weight, ndim, class_dim)  # (nll_loss checked its size)
    # the smoothing part: -log p averaged over classes, for the targets that count
    smooth = -(logp if weight_view is None else logp * weight_view).sum(class_dim)
    ignored = target == ignore_index
    smooth = smooth.masked_fill(ignored, 0.0)
    if reduction == "sum":
        smooth = smooth.sum()
    elif reduction == "mean":  # over the summed weight of the targets that count, as nll_loss
        counted = ~ignored
        if weight is not None:  # each target's class weight, found without indexing by the
            # targets (a bounds check that would make the CPU wait for a GPU)
            classes = arange(n_classes, device=input.device).reshape(weight_view.shape)
            is_class = target.unsqueeze(class_dim) == classes
            counted = (weight_view * is_class).sum(class_dim) * counted
        smooth = smooth.sum() / counted.sum()
    # (torch's C++ multiplies by numbers: the mul.Scalar overload, MulBackward1)
    return MulByNumber.apply(loss, 1 - label_smoothing) + MulByNumber.apply(
        smooth, label_smoothing / n_classes
    )


def _refuse_target_dtype(input, target):
    """binary_cross_entropy takes a target of the input's own dtype: torch does not promote."""
    raise RuntimeError(
        f"Found dtype {_type_name(target)} but expected {_type_name(input)}\n  binary_cross_entropy "
        "needs the target in the input's dtype: pass target.to(input.dtype) (0/1 labels as floats)."
    )


def binary_cross_entropy(
    input, target, weight=None, size_average=None, reduce=None, reduction="mean"
):
    """``-(t · log(x) + (1 - t) · log(1 - x))`` for probabilities ``x`` in [0, 1] (logs clamped at -100).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.binary_cross_entropy(tg.tensor([0.5, 1.0]), tg.tensor([1.0, 1.0]))
    tensor(0.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    same_device(input, target, weight)
    # (the sizes read as torch's Python reads them: a non-tensor fails there, in its words)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.shape}) that is different to the input size "
            f"({input.shape}) is deprecated. Please ensure they have the same size.\n  Each "
            "probability needs its own target: e.g. target.view_as(input)."
        )
    if weight is not None and weight.size() != input.size():  # (torch's Python expands it)
        _check_weight_broadcasts(weight, input)
        weight = weight.expand(_within_the_input(weight, input, "weight"))
    if target.dtype != input.dtype:
        _refuse_target_dtype(input, target)
    _refuse_non_float(input, "binary_cross_entropy")
    _not_differentiable("binary_cross_entropy", "weight", weight)
    return _nn.BinaryCrossEntropy.apply(input, target, reduction, weight=weight)


def _check_weight_broadcasts(weight, input):
    """torch's error for a binary_cross_entropy weight that doesn't broadcast to the input
    (torch names the shape broadcast so far: the input's, with the dims after the clash
    already widened by the weight's)."""
    expected = list(input.shape)
    for i, (size, want) in enumerate(zip(reversed(weight.shape), reversed(input.shape))):
        if size != want and 1 not in (size, want):  # (broadcasts, bigger than the input or not)
            raise RuntimeError(
                f"Attempting to broadcast a dimension of length {size} at {-1 - i}! Mismatching "
                f"argument at index 1 had {weight.shape!r}; but expected shape should be "
                f"broadcastable to {expected}\n  weight holds one factor per element "
                "of the input (or broadcasts to it)."
            )
        expected[-1 - i] = max(size, want)


def _within_the_input(factor, input, name):
    """The input's shape, which ``factor`` (a weight) broadcasts to; else torch's error: the
    loss is computed in the input's shape, and a factor may not make it bigger."""
    shape = broadcast_shape(tuple(input.shape), tuple(factor.shape))
    if shape != tuple(input.shape):
        raise RuntimeError(
            f"output with shape {list(input.shape)} doesn't match the broadcast shape "
            f"{list(shape)}\n  {name} {list(factor.shape)} broadcasts to more than the input's "
            f"{list(input.shape)}: it may only repeat along the input's dims."
        )
    return shape


def binary_cross_entropy_with_logits(
    input,
    target,
    weight=None,
    size_average=None,
    reduce=None,
    reduction="mean",
    pos_weight=None,
):
    """``binary_cross_entropy(sigmoid(x), t)`` computed from the logits ``x``, exact for large |x|.

    ``pos_weight`` multiplies the loss of the positive targets (per class).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.binary_cross_entropy_with_logits(tg.tensor([0.0, 200.0]), tg.tensor([1.0, 0.0]))
    tensor(100.3466)
    """
    reduction = _reduction(size_average, reduce, reduction)
    same_device(input, target, weight, pos_weight)
    # (the sizes read as torch's Python reads them: a non-tensor fails there, in its words)
    if target.size() != input.size():
        raise ValueError(
            f"Target size ({target.shape}) must be the same as input size ({input.shape})\n  Each "
            "logit needs its own target: e.g. target.view_as(input)."
        )
    _check_tensors(
        "binary_cross_entropy_with_logits",
        {"input": input, "target": target},
        {"weight": weight, "pos_weight": pos_weight},
    )
    # torch's errors in the order its steps meet them: log_sigmoid(input), then
    # (pos_weight - 1) * target, then (1 - target) * input in place, then loss * weight
    _refuse_non_float(input, "log_sigmoid_cpu")
    if pos_weight is not None:
        broadcast_shape(tuple(pos_weight.shape), tuple(target.shape))
    if target.dtype.name == "bool":
        raise RuntimeError(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
            "`logical_xor()` operator instead.\n  The loss computes 1 - target: give 0/1 labels "
            "as floats, target.float()."
        )
    if not target.is_floating_point():  # (1 - target) * input, in place: an integer can't hold it
        raise RuntimeError(
            f"result type {_type_name(input)} can't be cast to the desired output type "
            f"{_type_name(target)}\n  Give 0/1 labels as floats: target.float()."
        )
    _not_differentiable("binary_cross_entropy_with_logits", "weight", weight)
    _not_differentiable("binary_cross_entropy_with_logits", "pos_weight", pos_weight)
    for name, factor in (("pos_weight", pos_weight), ("weight", weight)):
        if factor is not None:
            _within_the_input(factor, input, name)
    return _nn.BinaryCrossEntropyWithLogits.apply(
        input, target, reduction, weight=weight, pos_weight=pos_weight
    )


# --------------------------------------------------------------------------- convolution


def _conv_padding(padding, kernel, stride, dilation):
    """``padding`` (int, pair, 'valid' or 'same') as ((top, bottom), (left, right))."""
    if isinstance(padding, str):
        if padding == "valid":
            return ((0, 0), (0, 0))
        if padding != "same":
            raise RuntimeError(
                f"Invalid padding string: '{padding}'\n  Use 'valid' (no padding), 'same' (output "
                "size = input size) or numbers."
            )
        if stride != (1, 1):
            raise RuntimeError(
                "padding='same' is not supported for strided convolutions\n  With stride "
                f"{stride} the output can't keep the input's size; give the padding as numbers."
            )
        pairs = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)  # an odd total puts the extra row/column at the bottom/right
            pairs.append((total // 2, total - total // 2))
        return tuple(pairs)
    ph, pw = _pair(padding, "padding", "conv2d")
    if ph < 0 or pw < 0:
        raise RuntimeError(
            f"negative padding is not supported\n  Got padding={padding}; to crop, use F.pad with "
            "negative amounts first."
        )
    return ((ph, ph), (pw, pw))


@checked  # (torch's F.conv2d is its parser's: a wrong argument is refused in its words)
@recorded_as("aten::conv2d")
def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution (cross-correlation): filters ``weight`` (out, in/groups, kH, kW) slid over
    ``input`` (N, in, H, W) or unbatched (in, H, W).

    ``padding`` is an int, a pair, ``'valid'`` (none) or ``'same'`` (output size = input size).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.conv2d(tg.ones(1, 1, 3, 3), tg.ones(1, 1, 2, 2))
    tensor([[[[4., 4.],
              [4., 4.]]]])
    >>> F.conv2d(tg.ones(8, 3, 28, 28), tg.ones(16, 3, 3, 3), stride=2, padding=1).shape
    teachgrad.Size([8, 16, 14, 14])
    """
    if input.ndim not in (3, 4):
        raise RuntimeError(
            f"Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: "
            f"{list(input.shape)}\n  conv2d wants images (N, C, H, W) or one image (C, H, W)."
        )
    if weight.ndim != 4:  # (torch's words: it reads the kernel's dims off the weight)
        hint = (
            "\n  conv2d wants a 4-D weight (out_channels, in_channels/groups, kH, kW), but got "
            f"weight of size {list(weight.shape)}."
        )
        if weight.ndim < 3:
            raise RuntimeError("weight should have at least three dimensions" + hint)
        if padding == "same":  # (torch's 'same' path compares the two ranks first)
            raise RuntimeError(
                f"Expected {weight.ndim}-dimensional input for {weight.ndim}-dimensional weight"
                f"{list(weight.shape)}, but got {input.ndim}-dimensional input of size "
                f"{list(input.shape)} instead" + hint
            )
        raise RuntimeError(
            "expected stride to be a single integer value or a list of "
            f"{weight.ndim - 2} values to match the convolution dimensions, but got "
            f"stride={list(stride) if isinstance(stride, tuple | list) else [stride] * 2}" + hint
        )
    if input.ndim == 3:  # one image: a batch of one, as torch does
        return conv2d(input.unsqueeze(0), weight, bias, stride, padding, dilation, groups).squeeze(
            0
        )
    same_device(input, weight, bias)
    stride = _pair(stride, "stride", "conv2d")
    dilation = _pair(dilation, "dilation", "conv2d")
    if min(stride) <= 0:
        raise RuntimeError(f"non-positive stride is not supported\n  Got stride={stride}.")
    if min(dilation) <= 0:
        raise RuntimeError(
            f"dilation should be greater than zero, but got {list(dilation)}\n  dilation 1 is an "
            "ordinary (dense) kernel."
        )
    kernel = tuple(weight.shape[2:])
    pairs = _conv_padding(padding, kernel, stride, dilation)
    extra = [after - before for before, after in pairs]  # ('same' with an even reach)
    if any(extra):  # as torch: the far sides padded first (ConstantPadNdBackward0), then even
        input = constant_pad_nd(input, (0, extra[1], 0, extra[0]))
        pairs = tuple((before, before) for before, _ in pairs)
    out_channels, in_per_group = weight.shape[:2]
    shape_w = list(weight.shape)
    if groups <= 0:
        raise RuntimeError(f"non-positive groups is not supported\n  Got groups={groups}.")
    if out_channels < groups:
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be at least {groups} at dimension 0, but "
            f"got weight of size {shape_w} instead\n  Each of the {groups} groups needs at least "
            f"one filter; weight has {out_channels}."
        )
    if out_channels % groups:  # (torch's message has the double brackets)
        raise RuntimeError(
            f"Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but got "
            f"weight of size [{shape_w}] instead\n  Each of the {groups} groups needs the same number "
            f"of filters; {out_channels} filters don't split evenly."
        )
    if input.shape[1] != in_per_group * groups:
        raise RuntimeError(
            f"Given groups={groups}, weight of size {shape_w}, expected input{list(input.shape)} to have "
            f"{in_per_group * groups} channels, but got {input.shape[1]} channels instead\n  weight is "
            "(out_channels, in_channels/groups, kH, kW): its dim 1 times groups must equal the "
            "input's channel count."
        )
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise RuntimeError(
            f"Given weight of size {shape_w}, expected bias to be 1-dimensional with {out_channels} "
            f"elements, but got bias of size {list(bias.shape)} instead\n  One bias per filter."
        )
    _check_conv_sizes(input, kernel, pairs, dilation)
    if input.shape[0]:  # (an empty batch runs no kernel: torch checks no dtype)
        _check_conv_dtypes(input, weight, bias)
    return _nn.Convolution.apply(input, weight, bias, stride, pairs, dilation, groups)


def _check_conv_sizes(input, kernel, pairs, dilation) -> None:
    """torch's errors for images the kernel does not fit (padding included), and for images
    of no pixels in a batch that is not empty."""
    padded = [input.shape[2 + i] + sum(pairs[i]) for i in range(2)]
    reach = [dilation[i] * (kernel[i] - 1) + 1 for i in range(2)]
    if padded[0] < reach[0] or padded[1] < reach[1]:
        raise RuntimeError(
            f"Calculated padded input size per channel: ({padded[0]} x {padded[1]}). Kernel size: "
            f"({reach[0]} x {reach[1]}). Kernel size can't be greater than actual input size\n  "
            f"Input {tuple(input.shape)}, kernel {kernel} with dilation {dilation}: pad the input "
            "or use a smaller kernel."
        )
    if input.shape[0] and input.shape[1] and not input.numel():
        raise RuntimeError(
            "Only zero batch or zero channel inputs are supported, but got input shape: "
            f"{list(input.shape)}\n  An image needs at least one pixel: its height and width "
            "must not be 0."
        )


def _check_conv_dtypes(input, weight, bias) -> None:
    """conv2d doesn't promote: torch's errors for a bias, then a weight, of another dtype
    (a float32 batch of two or more goes through torch's oneDNN kernel, which words it so),
    and for dtypes with no kernel."""
    advice = "conv2d doesn't promote: convert one, e.g. weight.to(input.dtype)."
    if bias is not None and bias.dtype != input.dtype:  # (torch checks the bias first)
        raise RuntimeError(
            f"Input type ({_type_name(input).lower()}) and bias type ({_type_name(bias).lower()}) "
            f"should be the same\n  {advice}"
        )
    if weight.dtype != input.dtype and input.dtype.name == "float32" and input.shape[0] > 1:
        raise RuntimeError(
            f"Input type ({legacy_type_name(input)}) and weight type ({legacy_type_name(weight)}) "
            "should be the same or input should be a MKLDNN tensor and weight is a dense tensor\n"
            f"  {advice}"
        )
    if weight.dtype != input.dtype:
        raise RuntimeError(
            f"expected scalar type {_type_name(input)} but found {_type_name(weight)}\n  {advice}"
        )
    if input.numel():
        _refuse_non_float(input, "slow_conv2d_cpu", int_kernels=_INTS)


# --------------------------------------------------------------------------- pooling


def _pool_pair(value, name, fn_name, default=None):
    if default is not None and (value is None or value == [] or value == ()):
        return default
    if isinstance(value, int):
        return (value, value)
    value = tuple(value)
    if len(value) not in (1, 2):
        omitted = "be omitted, " if name == "stride" else ""
        raise RuntimeError(
            f"{fn_name}: {name} must either {omitted}a single int, or a tuple of two ints\n  "
            f"Got {name}={value}."
        )
    return (value[0], value[-1])


def _pool_out_size(size, kernel, stride, pad, dilation, ceil_mode):
    """torch's pooling output size: floor (or ceil) division, and with ceil_mode no window may
    start in the right padding."""
    span = size + 2 * pad - dilation * (kernel - 1) - 1
    out = (span + (stride - 1 if ceil_mode else 0)) // stride + 1
    if ceil_mode and (out - 1) * stride >= size + pad:
        out -= 1
    return out


def _pool_geometry(input, fn_name, kernel_size, stride, padding, dilation, ceil_mode):
    """Checked (kernel, stride, padding pairs, dilation, out_hw) of a 2-d pooling."""
    kernel = _pool_pair(kernel_size, "kernel_size", fn_name)
    stride = _pool_pair(stride, "stride", fn_name, default=kernel)
    pad = _pool_pair(padding, "padding", fn_name)
    dilation = _pool_pair(dilation, "dilation", fn_name)
    if min(stride) == 0:
        raise RuntimeError(f"stride should not be zero\n  Got stride={stride}.")
    if min(pad) < 0:
        first = next(p for p in pad if p < 0)
        raise RuntimeError(
            f"pad must be non-negative, but got pad: {first}\n  Padding adds rows and columns "
            "around the image; there is none to take away."
        )
    for k, p, d in zip(kernel, pad, dilation):
        if p > (d * (k - 1) + 1) // 2:
            raise RuntimeError(
                f"pad should be at most half of effective kernel size, but got pad={p}, kernel_size={k} "
                f"and dilation={d}\n  A window must never lie entirely in the padding."
            )
    # torch's max_pool2d then checks again without the dilation (a no-op for avg_pool2d's)
    if pad[0] > kernel[0] // 2 or pad[1] > kernel[1] // 2:
        raise RuntimeError(
            "pad should be smaller than or equal to half of kernel size, but got padW = "
            f"{pad[1]}, padH = {pad[0]}, kW = {kernel[1]}, kH = {kernel[0]}\n  With dilation, a "
            "padding of at most half the (undilated) kernel size."
        )
    if 0 in input.shape[-3:]:  # (an empty batch is fine: it gives an empty result)
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but "
            f"got:{list(input.shape)}\n  Only the batch dim may be 0: a plane of no pixels has "
            "no windows."
        )
    in_hw = tuple(input.shape[-2:])
    out_hw = tuple(
        _pool_out_size(in_hw[i], kernel[i], stride[i], pad[i], dilation[i], ceil_mode)
        for i in range(2)
    )
    if min(out_hw) < 1:
        channels = input.shape[-3]
        raise RuntimeError(
            f"Given input size: ({channels}x{in_hw[0]}x{in_hw[1]}). Calculated output size: "
            f"({channels}x{out_hw[0]}x{out_hw[1]}). Output size is too small\n  A {kernel} window "
            f"(dilation {dilation}, padding {pad}) doesn't fit in {in_hw}."
        )
    pairs = []
    for i in range(2):  # ceil_mode's last window may reach past the padding: room for it
        needed = (out_hw[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1
        extra = max(0, needed - (in_hw[i] + 2 * pad[i]))
        pairs.append((pad[i], pad[i] + extra))
    return kernel, stride, tuple(pairs), dilation, out_hw


@recorded_as("aten::max_pool2d")
def max_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    dilation=1,
    ceil_mode=False,
    return_indices=False,
):
    """The largest value of each window; ``return_indices=True`` also gives where it was
    (an index into each input plane of H*W elements). ``stride`` defaults to the kernel size.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> x = tg.arange(16.0).reshape(1, 1, 4, 4)
    >>> F.max_pool2d(x, 2)
    tensor([[[[ 5.,  7.],
              [13., 15.]]]])
    >>> F.max_pool2d(x, 2, return_indices=True)[1]
    tensor([[[[ 5,  7],
              [13, 15]]]])
    """
    _check_tensors("max_pool2d_with_indices" if return_indices else "max_pool2d", {"input": input})
    if input.ndim not in (3, 4):
        raise RuntimeError(
            "non-empty 3D or 4D (batch mode) tensor expected for input\n  max_pool2d wants "
            f"images (N, C, H, W) or (C, H, W); got shape {tuple(input.shape)}."
        )
    geometry = _pool_geometry(
        input, "max_pool2d", kernel_size, stride, padding, dilation, ceil_mode
    )
    _refuse_non_float(input, "max_pool2d", int_kernels=_INTS)
    values, indices = _nn.MaxPool2d.apply(input, *geometry, (stride is not None, ceil_mode))
    return (values, indices) if return_indices else values


def avg_pool2d(
    input,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
):
    """The mean of each window. ``count_include_pad`` counts padded zeros in the divisor;
    ``divisor_override`` replaces the divisor. ``stride`` defaults to the kernel size.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.avg_pool2d(tg.arange(16.0).reshape(1, 1, 4, 4), 2)
    tensor([[[[ 2.5000,  4.5000],
              [10.5000, 12.5000]]]])
    """
    # (torch's F.avg_pool2d is its parser's: input= by keyword would be named with no position)
    _check_tensors("avg_pool2d", {"input": input})
    if input.ndim not in (3, 4):
        n = max(input.ndim, 1)
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got -3)\n  "
            f"avg_pool2d wants images (N, C, H, W) or (C, H, W); got shape {tuple(input.shape)}."
        )
    if divisor_override is not None and divisor_override == 0:
        raise RuntimeError(
            "divisor must be not zero\n  divisor_override=None uses the window size."
        )
    options = (stride is not None, ceil_mode, count_include_pad, divisor_override)  # (the node's)
    kernel, stride, pairs, _, out_hw = _pool_geometry(
        input, "avg_pool2d", kernel_size, stride, padding, 1, ceil_mode
    )
    _refuse_non_float(input, "avg_pool2d", int_kernels=("int64",))
    divisors = _nn.avg_pool_divisors(
        input, kernel, stride, pairs, out_hw, count_include_pad, divisor_override
    )
    return _nn.AvgPool2d.apply(input, kernel, stride, pairs, out_hw, divisors, options)


# --------------------------------------------------------------------------- normalisation, lookup


@recorded_as("aten::layer_norm")
def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Normalise over the last dims (``normalized_shape``) to mean 0, variance 1, then scale by
    ``weight`` and shift by ``bias`` (both of shape ``normalized_shape``).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.layer_norm(tg.tensor([[1.0, 3.0], [0.0, 10.0]]), (2,))
    tensor([[-1.0000,  1.0000],
            [-1.0000,  1.0000]])
    """
    # (torch's parser checks the arguments in order: input, normalized_shape, weight, bias)
    _check_tensors("layer_norm", {"input": input})
    shape = _int_tuple(normalized_shape, "layer_norm", "normalized_shape", 2)
    _check_tensors("layer_norm", {}, {"weight": weight, "bias": bias}, first=3)
    k = len(shape)
    params = [t for t in (weight, bias) if t is not None]
    if params and params[0].dtype != input.dtype:  # torch's CPU kernel checks this first
        _check_mixed_dtypes(input, params)
    if k == 0:
        raise RuntimeError(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least "
            "one element, but got normalized_shape = []\n  It names the last dims to normalise."
        )
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and tuple(t.shape) != shape:
            raise RuntimeError(
                f"Expected {name} to be of same shape as normalized_shape, but got {name} of shape "
                f"{list(t.shape)} and normalized_shape = {list(shape)}"
            )
    if input.ndim < k or tuple(input.shape[input.ndim - k :]) != shape:
        raise RuntimeError(
            f"Given normalized_shape={list(shape)}, expected input with shape [*, "
            f"{', '.join(str(s) for s in shape)}], but got input of size{list(input.shape)}\n  "
            "normalized_shape names the *last* dims of the input, which are normalised together."
        )
    same_device(input, weight, bias)
    if not input.is_floating_point():
        raise NotImplementedError(
            f"\"LayerNormKernelImpl\" not implemented for '{_type_name(input)}'\n  Convert the "
            "input to a floating-point dtype: input.float()."
        )
    for t in params[1:] if params and params[0].dtype == input.dtype else ():
        if t.dtype != input.dtype:
            raise RuntimeError(
                f"expected scalar type {_type_name(input)} but found {_type_name(t)}\n  "
                "layer_norm wants weight and bias of the input's dtype."
            )
    return _nn.NativeLayerNorm.apply(input, weight, bias, k, eps)


def _int_tuple(value, fn_name, name, position) -> tuple:
    """A shape argument given as a list, tuple or Size of ints, with torch's error otherwise
    (a lone int is refused: nn.LayerNorm(4) makes it (4,) itself)."""
    problem = f"not {type(value).__name__}"
    if isinstance(value, (list, tuple)):
        bad = [i for i, v in enumerate(value) if not isinstance(v, int)]
        if not bad:
            return tuple(value)
        problem = f"but found element of type {type(value[bad[0]]).__name__} at pos {bad[0]}"
    raise TypeError(
        f"{fn_name}(): argument '{name}' (position {position}) must be tuple of ints, {problem}\n  "
        f"e.g. {name}=(4,) for the last dim of size 4."
    )


def _check_mixed_dtypes(input, params):
    """torch's CPU rule when the first parameter given is not of the input's dtype ("mixed"):
    only a half-precision input with float32 parameters is allowed."""
    if any(t.dtype != float32 for t in params):
        raise RuntimeError(
            "mixed dtype (CPU): expect parameter to have scalar type of Float\n  layer_norm "
            f"wants weight and bias of the input's dtype ({input.dtype})."
        )
    if input.dtype != float16:
        raise RuntimeError(
            "mixed dtype (CPU): all inputs must share same datatype.\n  layer_norm wants weight "
            f"and bias of the input's dtype ({input.dtype})."
        )


def embedding(
    input,
    weight,
    padding_idx=None,
    max_norm=None,
    norm_type=2.0,
    scale_grad_by_freq=False,
    sparse=False,
):
    """Rows of ``weight`` (num_embeddings, dim) picked by the integer tensor ``input``.

    Repeated indices add their gradients; the ``padding_idx`` row gets none.

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.embedding(tg.tensor([2, 0]), tg.arange(6.0).reshape(3, 2))
    tensor([[4., 5.],
            [0., 1.]])
    """
    _check_tensors("embedding", {"weight": weight, "indices": input})  # (torch's order)
    if max_norm is not None or scale_grad_by_freq or sparse:
        raise NotImplementedError(
            "embedding: max_norm, scale_grad_by_freq and sparse are not implemented in teachgrad"
        )
    if weight.ndim != 2:
        raise RuntimeError(
            f"'weight' must be 2-D\n  weight is (num_embeddings, embedding_dim); got shape "
            f"{tuple(weight.shape)}."
        )
    num = weight.shape[0]
    if padding_idx is not None:
        if not -num <= padding_idx < num:
            raise AssertionError(
                f"Padding_idx must be within num_embeddings\n  Got padding_idx={padding_idx} for "
                f"{num} embeddings (valid: {-num} .. {num - 1})."
            )
        padding_idx %= num
    if input.dtype.name not in ("int64", "int32"):
        raise RuntimeError(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
            f"Long, Int; but got {legacy_type_name(input)} instead (while checking arguments for "
            "embedding)\n  "
            "The input holds row numbers: use input.long()."
        )
    same_device(input, weight)
    if not num and input.numel():  # (torch's embedding is index_select, which says so first)
        raise RuntimeError(
            "index_select(): self indexing axis dim should be positive\n  weight has no rows "
            "(num_embeddings is 0): there is no embedding to look up."
        )
    low, high = _min_and_max(input)
    if low < 0 or high >= num:
        raise IndexError(
            f"index out of range in self\n  weight has {num} rows (indices 0 .. {num - 1}), but "
            f"the input holds {low if low < 0 else high}."
        )
    return _nn.Embedding.apply(weight, padding_idx, indices=input)


def _min_and_max(indices) -> tuple:
    """The smallest and largest of integer ``indices`` as Python ints, read together (on a
    GPU each read makes the CPU wait); ``(0, -1)`` when there are none. (On the arrays: an
    argument check, not an op of the program, so a profile shows none of it, as torch's.)

    >>> import teachgrad as tg
    >>> _min_and_max(tg.tensor([3, -1, 2]))
    (-1, 3)
    """
    if not indices.numel():
        return 0, -1
    data = indices._data
    low, high = array_module(data).stack([data.min(), data.max()]).tolist()
    return low, high


def one_hot(tensor, num_classes=-1):
    """Class indices as one-hot rows: an int64 tensor with a new last dim of ``num_classes``
    (by default the largest index + 1).

    >>> import teachgrad as tg
    >>> import teachgrad.nn.functional as F
    >>> F.one_hot(tg.tensor([0, 2]), 3)
    tensor([[1, 0, 0],
            [0, 0, 1]])
    """
    _check_tensors("one_hot", {"input": tensor})
    if tensor.dtype.name != "int64":
        raise RuntimeError(
            "one_hot is only applicable to index tensor of type LongTensor.\n  Convert the class "
            "indices first: tensor.long()."
        )
    if num_classes == -1 and tensor.numel() == 0:
        raise RuntimeError(
            "Can not infer total number of classes from empty tensor.\n  Pass num_classes."
        )
    low, high = _min_and_max(tensor)
    if num_classes == -1:
        num_classes = high + 1
    if low < 0:
        raise RuntimeError(
            f"Class values must be non-negative.\n  Got {low}; classes are 0 .. num_classes - 1."
        )
    if high >= num_classes:
        raise RuntimeError(
            f"Class values must be smaller than num_classes.\n  Got {high} with "
            f"num_classes={num_classes}."
        )
    classes = arange(num_classes, device=tensor.device)
    # row-major whatever the input's layout: torch scatters into fresh zeros
    return (tensor.unsqueeze(-1) == classes).long().contiguous()


__all__ = [
    "relu",
    "gelu",
    "silu",
    "sigmoid",
    "tanh",
    "softmax",
    "log_softmax",
    "linear",
    "dropout",
    "pad",
    "mse_loss",
    "l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "conv2d",
    "max_pool2d",
    "avg_pool2d",
    "layer_norm",
    "embedding",
    "one_hot",
    "pdist",
    "interpolate",
    "unfold",
    "fold",
]

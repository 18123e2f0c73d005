"""tg.nn.functional: activations, losses, convolution, pooling, normalisation, lookup.

* gradients are right: gradcheck and gradgradcheck in float64 for every case of
  the table (so every backward is itself differentiable), including non-contiguous
  inputs, broadcasting, every reduction, ignore_index, class weights, label
  smoothing, and stride/padding/dilation/groups/ceil_mode combinations;
* values, input gradients, dtypes and node names equal torch's, in float64 and float32;
* bad arguments raise torch's exception class with torch's key phrase (checked
  against torch raising the same phrase);
* dropout is reproducible with manual_seed, unbiased, the identity in eval mode,
  and its gradient is the mask times the scale; conv2d is vectorised (fast).
"""

import math
import time

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.ops import nn as ops_nn
from tests import cupy_standin
from tests.teachgrad.inplace._common import torch_phrase
from tests.teachgrad.ops._cases import (
    A,
    assert_raises_like_torch,
    case_id,
    compare_with_torch,
    run_gradchecks,
)

T = "transposed"
S = "strided"


def F(lib):
    """``lib.nn.functional`` (teachgrad's or torch's)."""
    return lib.nn.functional


def _long(lib, values):
    return lib.tensor(values, dtype=lib.int64)


def _like(lib, x, values):
    """A constant tensor with ``x``'s dtype (weights, pos_weight)."""
    return lib.tensor(values, dtype=x.dtype)


def _constant_row(lib, w, i):
    """``w`` with row ``i`` replaced by zeros (a constant: nothing depends on ``w[i]``)."""
    return lib.cat([w[:i], lib.zeros_like(w[i : i + 1]), w[i + 1 :]])


# name -> (fn(lib, *inputs), [inputs, ...]) or (fn, [inputs, ...], {"check_name": False})
ACTIVATIONS = {
    "relu": (lambda lib, x: F(lib).relu(x), [(A(3, 4, domain="nonzero"),)]),
    "threshold": (lambda lib, x: F(lib).threshold(x, 0.25, -2.0), [(A(3, 4, domain="nonzero"),)]),
    "gelu": (lambda lib, x: F(lib).gelu(x), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "gelu, |x| past the series (erfc branch)": (lambda lib, x: F(lib).gelu(x * 6), [(A(12),)]),
    "gelu tanh": (lambda lib, x: F(lib).gelu(x, approximate="tanh"), [(A(3, 4),)]),
    "silu": (lambda lib, x: F(lib).silu(x), [(A(3, 4),), (A(5, layout=S),)]),
    "sigmoid": (lambda lib, x: F(lib).sigmoid(x), [(A(3, 4),)]),
    "tanh": (lambda lib, x: F(lib).tanh(x), [(A(3, 4),)]),
    "softmax dim 1": (lambda lib, x: F(lib).softmax(x, dim=1), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "softmax dim 0": (lambda lib, x: F(lib).softmax(x, 0), [(A(3, 4),), (A(5),)]),
    "softmax dim -1 of 3-d": (lambda lib, x: F(lib).softmax(x, -1), [(A(2, 3, 4),)]),
    "softmax of huge values": (lambda lib, x: F(lib).softmax(x * 1000, 1), [(A(2, 3),)]),
    "softmax of 0-d": (lambda lib, x: F(lib).softmax(x, 0), [(A(),)]),
    "softmax dtype=float64": (
        lambda lib, x: F(lib).softmax(x, 1, dtype=lib.float64),
        [(A(2, 3),)],
    ),
    "log_softmax dim 1": (
        lambda lib, x: F(lib).log_softmax(x, dim=1),
        [(A(3, 4),), (A(3, 4, layout=T),)],
    ),
    "log_softmax dim 0 of 3-d": (lambda lib, x: F(lib).log_softmax(x, 0), [(A(2, 3, 4),)]),
    "log_softmax of huge values": (lambda lib, x: F(lib).log_softmax(x * 1000, 1), [(A(2, 3),)]),
}

LINEAR_AND_PAD = {
    "linear 2-d + bias (addmm)": (
        lambda lib, x, w, b: F(lib).linear(x, w, b),
        [(A(4, 3), A(5, 3), A(5)), (A(4, 3, layout=T), A(5, 3, layout=T), A(5))],
    ),
    "linear 2-d": (lambda lib, x, w: F(lib).linear(x, w), [(A(4, 3), A(5, 3))]),
    "linear 3-d + bias": (
        lambda lib, x, w, b: F(lib).linear(x, w, b),
        [(A(2, 4, 3), A(5, 3), A(5)), (A(2, 3, 4, layout=T), A(5, 4), A(5))],
    ),
    "linear 3-d": (lambda lib, x, w: F(lib).linear(x, w), [(A(2, 4, 3), A(5, 3))]),
    "linear 1-d + bias": (lambda lib, x, w, b: F(lib).linear(x, w, b), [(A(3), A(5, 3), A(5))]),
    "linear 1-d": (lambda lib, x, w: F(lib).linear(x, w), [(A(3), A(5, 3))]),
    "pad last dim": (lambda lib, x: F(lib).pad(x, (1, 2)), [(A(3, 4),), (A(3, 4, layout=T),)]),
    "pad two dims, value": (lambda lib, x: F(lib).pad(x, (1, 1, 2, 0), value=1.5), [(A(2, 3, 4),)]),
    "pad crops with negatives": (
        lambda lib, x: F(lib).pad(x, (-1, 2, 0, -2)),
        [(A(3, 4, 5),), (A(3, 4, 5, layout=S),)],
    ),
    "pad every dim": (lambda lib, x: F(lib).pad(x, (1, 0, 0, 1)), [(A(2, 3),)]),
    "pad to an empty dim": (
        lambda lib, x: F(lib).pad(x, (-2, -1)) * 2,
        [(A(2, 3),)],
        {"second_order": False},  # gradgradcheck refuses an empty grad_output (its stride is 0)
    ),
    # reflect and replicate: ReflectionPad{1,2,3}D / ReplicationPad{1,2,3}D, a border element
    # read several times collects several gradients
    "pad reflect 1-d": (
        lambda lib, x: F(lib).pad(x, (2, 1), mode="reflect"),
        [(A(2, 4),), (A(2, 3, 4, layout=T),)],
    ),
    "pad reflect 2-d, crops": (
        lambda lib, x: F(lib).pad(x, (1, -1, 2, 2), mode="reflect"),
        [(A(2, 3, 4),)],
    ),
    "pad reflect 3-d": (
        lambda lib, x: F(lib).pad(x, (1, 1, 0, 2, 1, 0), mode="reflect"),
        [(A(1, 2, 3, 3, 3),)],
    ),
    "pad replicate 1-d": (
        lambda lib, x: F(lib).pad(x, (3, 2), mode="replicate"),
        [(A(3, 2),), (A(2, 3, 2, layout=S),)],
    ),
    "pad replicate 2-d, crops": (
        lambda lib, x: F(lib).pad(x, (-1, 3, 2, 0), mode="replicate"),
        [(A(1, 2, 3, 4),)],
    ),
    "pad replicate 3-d": (
        lambda lib, x: F(lib).pad(x, (1, 0, 2, 1, 0, 1), mode="replicate"),
        [(A(2, 2, 3, 2),)],
    ),
    # circular: torch's graph of in-place copies into an empty output (CopySlices nodes);
    # an element padded on both sides, or at a corner, collects several gradients
    "pad circular 1-d": (
        lambda lib, x: F(lib).pad(x, (2, 3), mode="circular"),
        [(A(2, 3),), (A(2, 3, 4, layout=T),)],
    ),
    "pad circular 2-d, crops": (
        lambda lib, x: F(lib).pad(x, (1, 2, -1, -1), mode="circular"),
        [(A(2, 3, 4),), (A(1, 2, 3, 4, layout=S),)],
    ),
    "pad circular 3-d": (
        lambda lib, x: F(lib).pad(x, (1, 1, 0, 2, 2, 0), mode="circular"),
        [(A(1, 2, 2, 3, 2),)],
    ),
}

LOSSES = {
    "mse_loss": (
        lambda lib, x, t: F(lib).mse_loss(x, t),
        [(A(3, 4), A(3, 4)), (A(3, 4, layout=T), A(3, 4, requires_grad=False))],
    ),
    "mse_loss sum / none": (
        lambda lib, x, t: (
            F(lib).mse_loss(x, t, reduction="sum"),
            F(lib).mse_loss(x, t, reduction="none"),
        ),
        [(A(2, 3), A(2, 3))],
    ),
    "mse_loss broadcast target": (lambda lib, x, t: F(lib).mse_loss(x, t), [(A(3, 4), A(4))]),
    "mse_loss weight": (
        lambda lib, x, t, w: F(lib).mse_loss(x, t, weight=w.abs()),
        [(A(3, 4), A(3, 4), A(3, 4, requires_grad=False))],
        {"check_name": False},  # torch divides by a tensor here (DivBackward0), teachgrad too
    ),
    "l1_loss": (
        lambda lib, x, t: F(lib).l1_loss(x, t),
        [(A(3, 4), A(3, 4)), (A(3, 4, layout=T), A(4, requires_grad=False))],
    ),
    "l1_loss sum / none": (
        lambda lib, x, t: (
            F(lib).l1_loss(x, t, reduction="sum"),
            F(lib).l1_loss(x, t, reduction="none"),
        ),
        [(A(2, 3), A(2, 3))],
    ),
    "nll_loss": (
        lambda lib, x: F(lib).nll_loss(x, _long(lib, [0, 2, 1, 2])),
        [(A(4, 3),), (A(4, 3, layout=T),)],
    ),
    "nll_loss sum / none": (
        lambda lib, x: (
            F(lib).nll_loss(x, _long(lib, [0, 2, 1, 2]), reduction="sum"),
            F(lib).nll_loss(x, _long(lib, [0, 2, 1, 2]), reduction="none"),
        ),
        [(A(4, 3),)],
    ),
    "nll_loss weight (mean divides by the weights)": (
        lambda lib, x: F(lib).nll_loss(x, _long(lib, [0, 2, 2, 1]), _like(lib, x, [0.2, 1, 3])),
        [(A(4, 3),)],
    ),
    "nll_loss ignore_index": (
        lambda lib, x: F(lib).nll_loss(x, _long(lib, [0, -100, 1, -100])),
        [(A(4, 3),)],
    ),
    "nll_loss ignore_index=1, weight, none": (
        lambda lib, x: F(lib).nll_loss(
            x, _long(lib, [0, 1, 2, 1]), _like(lib, x, [2, 1, 3]), ignore_index=1, reduction="none"
        ),
        [(A(4, 3),)],
    ),
    # the fast path (no weight, no target equal to ignore_index) and the general one
    "nll_loss ignore_index in range but absent, strided target (fast path)": (
        lambda lib, x: F(lib).nll_loss(
            x, _long(lib, [0, 7, 2, 7, 2, 7, 0, 7])[::2], ignore_index=1
        ),
        [(A(4, 3),), (A(4, 3, layout=T),)],
    ),
    "nll_loss ignore_index present, no weight, sum (general path)": (
        lambda lib, x: F(lib).nll_loss(
            x, _long(lib, [0, 1, 2, 1]), ignore_index=1, reduction="sum"
        ),
        [(A(4, 3),), (A(4, 3, layout=T),)],
    ),
    "nll_loss uint8 target": (
        lambda lib, x: F(lib).nll_loss(x, lib.tensor([2, 0, 1], dtype=lib.uint8), reduction="none"),
        [(A(3, 3),)],
    ),
    "nll_loss 1-d input": (
        lambda lib, x: (
            F(lib).nll_loss(x, _long(lib, 2)),
            F(lib).nll_loss(x, _long(lib, 1), reduction="none"),
        ),
        [(A(3),)],
    ),
    "nll_loss 4-d (NllLoss2D)": (
        lambda lib, x: F(lib).nll_loss(x, _long(lib, [[[0, 2], [1, 1]], [[2, -100], [0, 0]]])),
        [(A(2, 3, 2, 2),)],
    ),
    "nll_loss 4-d, none, nothing ignored (fast path)": (
        lambda lib, x: F(lib).nll_loss(
            x, _long(lib, [[[0, 2], [1, 1]], [[2, 1], [0, 0]]]), reduction="none"
        ),
        [(A(2, 3, 2, 2),)],  # (torch's backward refuses a transposed input here)
    ),
    "nll_loss 3-d, none (a view of the 4-d case)": (
        lambda lib, x: F(lib).nll_loss(x, _long(lib, [[0, 2, 1], [1, 1, 0]]), reduction="none"),
        [(A(2, 3, 3),)],
    ),
    "nll_loss 3-d, weighted sum": (
        lambda lib, x: F(lib).nll_loss(
            x, _long(lib, [[0, 2, 1], [1, 1, 0]]), _like(lib, x, [1, 2, 3]), reduction="sum"
        ),
        [(A(2, 3, 3),)],
    ),
    "cross_entropy": (
        lambda lib, x: F(lib).cross_entropy(x, _long(lib, [0, 2, 1, 2])),
        [(A(4, 3),), (A(4, 3, layout=T),)],
    ),
    "cross_entropy weight, ignore_index, sum": (
        lambda lib, x: F(lib).cross_entropy(
            x,
            _long(lib, [0, 2, -1, 1]),
            _like(lib, x, [1, 2, 0.5]),
            ignore_index=-1,
            reduction="sum",
        ),
        [(A(4, 3),)],
    ),
    "cross_entropy label_smoothing": (
        lambda lib, x: F(lib).cross_entropy(x, _long(lib, [0, 2, 1, 2]), label_smoothing=0.2),
        [(A(4, 3),)],
    ),
    "cross_entropy label_smoothing, weight, ignored": (
        lambda lib, x: F(lib).cross_entropy(
            x,
            _long(lib, [0, -100, 1, 2]),
            _like(lib, x, [1, 2, 0.5]),
            label_smoothing=0.3,
        ),
        [(A(4, 3),)],
    ),
    "cross_entropy label_smoothing, none": (
        lambda lib, x: F(lib).cross_entropy(
            x, _long(lib, [0, -100, 1]), label_smoothing=0.1, reduction="none"
        ),
        [(A(3, 4),)],
    ),
    "cross_entropy 1-d": (lambda lib, x: F(lib).cross_entropy(x, _long(lib, 1)), [(A(4),)]),
    "cross_entropy 4-d": (
        lambda lib, x: F(lib).cross_entropy(x, _long(lib, [[[0, 1], [2, 1]]]), label_smoothing=0.1),
        [(A(1, 3, 2, 2),)],
    ),
    "cross_entropy probabilities, none": (
        lambda lib, x, t: F(lib).cross_entropy(x, t.softmax(1), reduction="none"),
        [(A(4, 3), A(4, 3))],
    ),
    "cross_entropy probabilities, mean": (
        lambda lib, x, t: F(lib).cross_entropy(
            x, t.softmax(1), _like(lib, x, [1, 2, 3]), label_smoothing=0.2
        ),
        [(A(4, 3), A(4, 3))],
        {"check_name": False},  # torch's mean divides by a number (DivBackward1)
    ),
    "binary_cross_entropy": (
        lambda lib, x, t: F(lib).binary_cross_entropy(x.sigmoid(), t.sigmoid()),
        [(A(3, 4), A(3, 4)), (A(3, 4, layout=T), A(3, 4, requires_grad=False))],
    ),
    "binary_cross_entropy weight, sum / none": (
        lambda lib, x, t: (
            F(lib).binary_cross_entropy(
                x.sigmoid(), t.sigmoid(), _like(lib, x, [1, 2, 0.5]), reduction="sum"
            ),
            F(lib).binary_cross_entropy(x.sigmoid(), t.sigmoid(), reduction="none"),
        ),
        [(A(2, 3), A(2, 3))],
    ),
    "binary_cross_entropy_with_logits": (
        lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(x, t.sigmoid()),
        [(A(3, 4), A(3, 4)), (A(3, 4, layout=T), A(3, 4, requires_grad=False))],
    ),
    "binary_cross_entropy_with_logits pos_weight, weight": (
        lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(
            x,
            t.sigmoid(),
            _like(lib, x, [[1.0], [0.5], [2.0]]),
            pos_weight=_like(lib, x, [3, 1, 0.5, 2]),
        ),
        [(A(3, 4), A(3, 4))],
    ),
    "binary_cross_entropy_with_logits large |x|, none": (
        lambda lib, x, t: F(lib).binary_cross_entropy_with_logits(
            x * 40, t.sigmoid(), reduction="none", pos_weight=_like(lib, x, [2, 1, 0.5])
        ),
        [(A(2, 3), A(2, 3))],
    ),
}

CONVOLUTION = {
    "conv2d": (
        lambda lib, x, w, b: F(lib).conv2d(x, w, b),
        [(A(2, 3, 5, 5), A(4, 3, 3, 3), A(4)), (A(1, 2, 4, 5, layout=T), A(3, 2, 2, 3), A(3))],
    ),
    "conv2d stride 2, padding 1": (
        lambda lib, x, w: F(lib).conv2d(x, w, stride=2, padding=1),
        [(A(2, 2, 5, 6), A(3, 2, 3, 3))],
    ),
    "conv2d stride (2, 3) with leftover rows": (
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=(2, 3)),
        [(A(1, 2, 7, 8), A(2, 2, 3, 2), A(2))],
    ),
    "conv2d dilation 2, padding (1, 2)": (
        lambda lib, x, w: F(lib).conv2d(x, w, dilation=2, padding=(1, 2)),
        [(A(1, 2, 6, 5), A(2, 2, 2, 2))],
    ),
    "conv2d stride, dilation, padding": (
        lambda lib, x, w: F(lib).conv2d(x, w, stride=(2, 1), padding=(2, 1), dilation=(1, 2)),
        [(A(1, 2, 6, 6), A(2, 2, 3, 2))],
    ),
    "conv2d padding larger than the reach": (
        lambda lib, x, w: F(lib).conv2d(x, w, padding=2),
        [(A(1, 1, 3, 3), A(2, 1, 1, 2))],
    ),
    "conv2d groups 2": (
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, groups=2, padding=1),
        [(A(2, 4, 4, 4), A(6, 2, 3, 3), A(6))],
    ),
    "conv2d depthwise (groups = channels)": (
        lambda lib, x, w: F(lib).conv2d(x, w, groups=3, stride=2),
        [(A(1, 3, 5, 4), A(3, 1, 2, 2))],
    ),
    "conv2d padding='same' (even kernel)": (
        lambda lib, x, w: F(lib).conv2d(x, w, padding="same", dilation=(1, 2)),
        [(A(1, 2, 5, 5), A(2, 2, 2, 3))],
    ),
    "conv2d padding='valid'": (
        lambda lib, x, w: F(lib).conv2d(x, w, padding="valid"),
        [(A(1, 2, 4, 4), A(2, 2, 3, 3))],
    ),
    "conv2d unbatched": (
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, padding=1),
        [(A(2, 4, 4), A(3, 2, 3, 3), A(3))],
    ),
    "conv2d 1x1": (lambda lib, x, w: F(lib).conv2d(x, w), [(A(2, 3, 3, 2), A(4, 3, 1, 1))]),
    "conv2d batch of 3, groups 2, stride 2": (
        lambda lib, x, w, b: F(lib).conv2d(x, w, b, stride=2, padding=(1, 0), groups=2),
        [(A(3, 4, 5, 4), A(4, 2, 2, 3), A(4))],
    ),
}

POOLING = {
    "max_pool2d": (
        lambda lib, x: F(lib).max_pool2d(x, 2),
        [(A(2, 2, 4, 5, domain="distinct"),), (A(1, 2, 4, 4, domain="distinct", layout=T),)],
    ),
    "max_pool2d (2, 3) tiles, leftover rows and columns": (
        lambda lib, x: F(lib).max_pool2d(x, (2, 3), return_indices=True),
        [(A(2, 2, 5, 7, domain="distinct"),), (A(1, 2, 5, 7, domain="distinct", layout=S),)],
    ),
    # x.clamp(min=0) gives windows of equal zeros: like torch, the first of them is picked
    "max_pool2d tiles with ties": (
        lambda lib, x: F(lib).max_pool2d(x.clamp(min=0.0), 2, return_indices=True),
        [(A(2, 3, 4, 4, domain="nonzero"),)],
    ),
    "max_pool2d windows apart, padding (no tiles, distinct indices)": (
        lambda lib, x: F(lib).max_pool2d(x, 2, stride=3, padding=1, return_indices=True),
        [(A(1, 2, 6, 7, domain="distinct"),)],
    ),
    "max_pool2d overlapping windows": (
        lambda lib, x: F(lib).max_pool2d(x, 3, stride=1, padding=1),
        [(A(1, 2, 4, 5, domain="distinct"),)],
    ),
    "max_pool2d (3, 2), stride (2, 1), dilation": (
        lambda lib, x: F(lib).max_pool2d(x, (3, 2), stride=(2, 1), dilation=(1, 2)),
        [(A(1, 2, 7, 6, domain="distinct"),)],
    ),
    "max_pool2d ceil_mode": (
        lambda lib, x: F(lib).max_pool2d(x, 2, ceil_mode=True),
        [(A(1, 2, 5, 5, domain="distinct"),)],
    ),
    "max_pool2d ceil_mode, padding, stride 2": (
        lambda lib, x: F(lib).max_pool2d(x, 3, 2, 1, ceil_mode=True),
        [(A(1, 1, 6, 7, domain="distinct"),)],
    ),
    "max_pool2d return_indices": (
        lambda lib, x: F(lib).max_pool2d(x, 2, stride=1, return_indices=True),
        [(A(2, 1, 3, 4, domain="distinct"),)],
    ),
    "max_pool2d unbatched": (
        lambda lib, x: F(lib).max_pool2d(x, 2, return_indices=True),
        [(A(2, 4, 4, domain="distinct"),)],
    ),
    "avg_pool2d": (
        lambda lib, x: F(lib).avg_pool2d(x, 2),
        [(A(2, 2, 4, 5),), (A(1, 2, 4, 4, layout=T),)],
    ),
    "avg_pool2d padding, count_include_pad": (
        lambda lib, x: F(lib).avg_pool2d(x, 3, stride=2, padding=1),
        [(A(1, 2, 5, 6),)],
    ),
    "avg_pool2d padding, count_include_pad=False": (
        lambda lib, x: F(lib).avg_pool2d(x, 3, stride=2, padding=1, count_include_pad=False),
        [(A(1, 2, 5, 6),)],
    ),
    "avg_pool2d ceil_mode": (
        lambda lib, x: F(lib).avg_pool2d(x, 2, ceil_mode=True),
        [(A(1, 1, 5, 5),)],
    ),
    "avg_pool2d ceil_mode, padding, count_include_pad=False": (
        lambda lib, x: F(lib).avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
        [(A(1, 1, 6, 5),)],
    ),
    "avg_pool2d divisor_override": (
        lambda lib, x: F(lib).avg_pool2d(x, (2, 3), stride=(1, 2), divisor_override=4),
        [(A(1, 2, 4, 5),)],
    ),
    "avg_pool2d unbatched": (lambda lib, x: F(lib).avg_pool2d(x, 2, stride=1), [(A(2, 3, 3),)]),
}

NORM_AND_LOOKUP = {
    "layer_norm": (
        lambda lib, x: F(lib).layer_norm(x, (5,)),
        [(A(4, 5),), (A(4, 5, layout=T),)],
    ),
    "layer_norm weight, bias": (
        lambda lib, x, w, b: F(lib).layer_norm(x, [5], w, b),
        [(A(3, 5), A(5), A(5))],
    ),
    "layer_norm over two dims, eps": (
        lambda lib, x, w: F(lib).layer_norm(x, (3, 4), w, eps=0.1),
        [(A(2, 3, 4), A(3, 4))],
    ),
    "embedding (repeated rows add up)": (
        lambda lib, w: F(lib).embedding(_long(lib, [[0, 2], [4, 2]]), w),
        [(A(5, 3),), (A(5, 3, layout=T),)],
    ),
    # padding_idx withholds the gradient of a row the output does depend on: by design not
    # a derivative, so gradcheck runs where that row is a constant (and has none)
    "embedding padding_idx": (
        lambda lib, w: F(lib).embedding(_long(lib, [1, 2, 1, 0]), w, padding_idx=1),
        [(A(4, 3),)],
        {"gradcheck": False},
    ),
    "embedding padding_idx, padding row constant": (
        lambda lib, w: F(lib).embedding(_long(lib, [1, 2, 1, 0]), _constant_row(lib, w, 1), 1),
        [(A(4, 3),)],
    ),
    "embedding negative padding_idx, int32 indices": (
        lambda lib, w: F(lib).embedding(
            lib.tensor([3, 0, 3], dtype=lib.int32), _constant_row(lib, w, 3), padding_idx=-1
        ),
        [(A(4, 2),)],
    ),
    "embedding 0-d index": (lambda lib, w: F(lib).embedding(_long(lib, 2), w), [(A(4, 2),)]),
}

TABLE = {**ACTIVATIONS, **LINEAR_AND_PAD, **LOSSES, **CONVOLUTION, **POOLING, **NORM_AND_LOOKUP}


def _params(table):
    params = []
    for name, (fn, inputs, *options) in table.items():
        opts = options[0] if options else {}
        for args in inputs:
            params.append(pytest.param(fn, args, opts, id=f"{name}-{case_id(args)}"))
    return params


CASES = _params(TABLE)
GRAD_CASES = [case for case in CASES if case.values[2].get("gradcheck", True)]

pytestmark = [
    # torch warns about a broadcast target in mse_loss/l1_loss; so does teachgrad
    pytest.mark.filterwarnings("ignore:Using a target size:UserWarning"),
    # torch's note that its 'same' padding of an even kernel may copy the input
    pytest.mark.filterwarnings("ignore:Using padding='same':UserWarning"),
]


# --------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("fn,args,opts", GRAD_CASES)
def test_gradcheck_and_gradgradcheck(fn, args, opts):
    """First and second derivatives of each function agree with finite differences, in
    reverse mode, batched, forward mode (jvp) and forward-over-reverse."""
    run_gradchecks(fn, args, second_order=opts.get("second_order", True))


# --------------------------------------------------------------------------- PyTorch oracle


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn,args,opts", CASES)
def test_matches_torch(torch, fn, args, opts, dtype):
    """Values, dtypes, node names (GeluBackward0, ConvolutionBackward0, NllLoss2DBackward0 ...)
    and the gradients of a random upstream gradient equal torch's."""
    compare_with_torch(torch, fn, args, dtype, check_name=opts.get("check_name", True))


CONVOLUTION_CASES = _params(CONVOLUTION)


@pytest.mark.parametrize("fn,args,opts", CONVOLUTION_CASES)
def test_convolution_one_image_at_a_time_is_the_same(monkeypatch, torch, fn, args, opts):
    """The convolutions run chunk by chunk of images (as many as fit in _CHUNK_BYTES). With
    chunks of a single image, as large batches of large images get, values and gradients
    still equal torch's, and first and second derivatives pass the gradchecks."""
    monkeypatch.setattr(ops_nn, "_CHUNK_BYTES", {"cpu": 1, "cuda": 1})
    compare_with_torch(torch, fn, args, "float64")
    run_gradchecks(fn, args)


def test_image_chunks_cover_the_batch_in_order(monkeypatch):
    """Chunks hold as many images as fit in the device's _CHUNK_BYTES (at least one); the
    last one may be smaller."""
    monkeypatch.setattr(ops_nn, "_CHUNK_BYTES", {"cpu": 1000, "cuda": 10**6})
    images = lambda n: np.empty((n, 1))  # noqa: E731
    assert ops_nn._image_chunks(images(5), 400) == [(0, 2), (2, 4), (4, 5)]
    assert ops_nn._image_chunks(images(3), 5000) == [(0, 1), (1, 2), (2, 3)]
    assert ops_nn._image_chunks(images(4), 100) == [(0, 4)]
    assert ops_nn._image_chunks(images(0), 100) == []
    on_gpu = cupy_standin.module.empty((5, 1))  # a GPU has no cache to fit: one chunk
    assert ops_nn._image_chunks(on_gpu, 5000) == [(0, 5)]


def test_max_pool2d_tiles_agree_with_general_windows_on_ties_and_nan(torch):
    """The tiling fast path (kernel = stride, no padding) gives the same values and indices as
    the general path: the first tap of tied windows, and a NaN window's last NaN (torch's
    choice; a NaN sends the fast path to the general one)."""
    rng = np.random.default_rng(0)
    x = rng.integers(-1, 2, (2, 3, 6, 9)).astype(np.float64)  # many ties
    geometry = ((2, 3), (2, 3), ((0, 0), (0, 0)), (1, 1), (3, 3))
    tiles = ops_nn._max_of_tiles(x, (2, 3), (3, 3))
    windows = ops_nn._max_of_windows(x, *geometry)
    np.testing.assert_array_equal(tiles[0], windows[0])
    np.testing.assert_array_equal(tiles[1], windows[1])
    x[0, 0, 0, 2] = x[0, 0, 1, 0] = np.nan  # the window's 3rd and 4th taps
    assert ops_nn._max_of_tiles(x, (2, 3), (3, 3)) is None
    values, indices = F(tg).max_pool2d(tg.tensor(x), (2, 3), return_indices=True)
    _, torch_indices = F(torch).max_pool2d(torch.tensor(x), (2, 3), return_indices=True)
    assert math.isnan(values[0, 0, 0, 0].item())
    np.testing.assert_array_equal(indices.cpu().numpy(), torch_indices.numpy())
    np.testing.assert_array_equal(indices.cpu().numpy(), ops_nn._max_of_windows(x, *geometry)[1])


def test_linear_weight_gradient_has_the_weight_layout(torch):
    """AddmmBackward0 gives mat2 (``weight.t()`` in linear) a gradient with mat2's strides, as
    torch does, so the weight's gradient is row-major like the weight: no reordering copy."""
    strides = []
    for lib in (tg, torch):
        x = lib.ones(4, 3, requires_grad=True)
        for w in (lib.ones(5, 3), lib.ones(3, 5).t()):  # row-major, then a transposed view
            w.requires_grad_()
            y = F(lib).linear(x, w, lib.ones(5, requires_grad=True))
            _, _, grad_mat2 = y.grad_fn(lib.ones(4, 5))
            strides.append(tuple(grad_mat2.stride()))
    assert strides[:2] == strides[2:] == [(1, 3), (5, 1)]


def test_nll_loss_with_every_target_ignored_is_nan_like_torch(torch):
    """'mean' over no counted targets is 0/0: nan, with a zero gradient (as torch)."""
    results = []
    for lib in (tg, torch):
        x = lib.zeros(3, 2, dtype=lib.float64, requires_grad=True)
        loss = F(lib).nll_loss(x, _long(lib, [-100, -100, -100]))
        loss.backward()
        results.append((math.isnan(loss.item()), x.grad.tolist()))
    assert results[0] == results[1] == (True, [[0.0, 0.0]] * 3)


def test_erf_is_accurate_on_both_branches():
    """The erf behind exact GELU agrees with math.erf to 1e-14, on the series (|x| < 2.5)
    and the continued-fraction side, and its derivative is 2/√π·e^(-x²)."""
    points = np.linspace(-7, 7, 1401)
    x = tg.tensor(points, dtype=tg.float64, requires_grad=True)
    y = ops_nn.Erf.apply(x)
    np.testing.assert_allclose(y.detach().cpu().numpy(), [math.erf(v) for v in points], atol=1e-14)
    y.sum().backward()
    slope = 2 / math.sqrt(math.pi) * np.exp(-(points**2))
    np.testing.assert_allclose(x.grad.cpu().numpy(), slope, rtol=1e-12, atol=1e-300)


def test_softmax_and_log_softmax_are_stable_for_huge_inputs():
    """exp(1000) overflows; max-subtraction keeps softmax finite and log_softmax exact."""
    x = tg.tensor([[1000.0, 0.0, -1000.0]], dtype=tg.float64)
    assert F(tg).softmax(x, 1).tolist() == [[1.0, 0.0, 0.0]]
    assert F(tg).log_softmax(x, 1).tolist() == [[0.0, -1000.0, -2000.0]]


def test_binary_cross_entropy_with_logits_is_exact_for_huge_logits():
    """For x = ±500, log(sigmoid(x)) would be log(0) = -inf; the loss stays |x| exactly."""
    x = tg.tensor([500.0, -500.0], dtype=tg.float64, requires_grad=True)
    loss = F(tg).binary_cross_entropy_with_logits(x, tg.tensor([0.0, 1.0], dtype=tg.float64))
    assert loss.item() == 500.0
    loss.backward()
    assert x.grad.tolist() == [0.5, -0.5]


def test_embedding_padding_row_gets_no_gradient_and_repeats_add_up():
    """Row 1 (padding) gets 0; row 2, looked up three times, gets three gradients."""
    w = tg.ones(4, 2, requires_grad=True)
    F(tg).embedding(tg.tensor([2, 1, 2, 2, 0]), w, padding_idx=1).sum().backward()
    assert w.grad.tolist() == [[1.0, 1.0], [0.0, 0.0], [3.0, 3.0], [0.0, 0.0]]


def test_one_hot_matches_torch(torch):
    """int64 one-hot rows, with the class count given or inferred (also for 2-d and empty)."""
    for fn in (
        lambda lib: F(lib).one_hot(_long(lib, [0, 3, 1])),
        lambda lib: F(lib).one_hot(_long(lib, [[0, 1], [2, 0]]), 4),
        lambda lib: F(lib).one_hot(lib.zeros(0, dtype=lib.int64), 3),
    ):
        a, b = fn(tg), fn(torch)
        assert str(a.dtype).split(".")[-1] == str(b.dtype).split(".")[-1] == "int64"
        assert tuple(a.shape) == tuple(b.shape) and a.tolist() == b.tolist()


def test_relu_inplace_overwrites_its_input(torch):
    """F.relu(x, inplace=True) returns x itself, changed, with a bumped version (like torch)."""
    for lib in (tg, torch):
        x = lib.tensor([-1.0, 2.0])
        y = F(lib).relu(x, inplace=True)
        assert y is x and x.tolist() == [0.0, 2.0] and x._version == 1


def test_silu_inplace_records_the_op(torch):
    """F.silu(inplace=True) on a non-leaf changes it and records SiluBackward0 (like torch)."""
    names = []
    for lib in (tg, torch):
        x = lib.tensor([-1.0, 2.0], requires_grad=True)
        y = x * 1
        z = F(lib).silu(y, inplace=True)
        assert z is y
        z.sum().backward()
        names.append((y.grad_fn.name(), [round(v, 6) for v in x.grad.tolist()]))
    assert names[0] == names[1]


# --------------------------------------------------------------------------- dropout


def test_dropout_is_reproducible_with_manual_seed():
    """Same seed, same mask; another seed, another mask."""
    x = tg.ones(1000)
    tg.manual_seed(3)
    a = F(tg).dropout(x, 0.4)
    tg.manual_seed(3)
    b = F(tg).dropout(x, 0.4)
    tg.manual_seed(4)
    c = F(tg).dropout(x, 0.4)
    assert a.tolist() == b.tolist()
    assert a.tolist() != c.tolist()


def test_dropout_keeps_the_mean_and_drops_a_share_p():
    """E[dropout(x)] = x: kept values are scaled by 1/(1-p); about a share p is zeroed."""
    tg.manual_seed(0)
    p, n = 0.3, 200_000
    y = F(tg).dropout(tg.ones(n, dtype=tg.float64), p).cpu().numpy()
    assert set(np.unique(y)) == {0.0, 1 / (1 - p)}
    sd_mean = math.sqrt(p / (1 - p) / n)  # standard deviation of the mean of n outputs
    assert abs(y.mean() - 1) < 5 * sd_mean
    assert abs((y == 0).mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_dropout_in_eval_mode_and_with_p_zero_returns_the_input(torch):
    """training=False or p=0: the input itself, as torch (no copy, no node)."""
    for lib in (tg, torch):
        x = lib.ones(3, requires_grad=True)
        assert F(lib).dropout(x, 0.5, training=False) is x
        assert F(lib).dropout(x, 0.0) is x


def test_dropout_gradient_is_the_mask_times_the_scale():
    """d dropout(x)/dx = mask / (1 - p): the upstream gradient passes where kept, scaled."""
    tg.manual_seed(1)
    p = 0.25
    x = tg.rand(50, dtype=tg.float64) + 1  # no zeros: kept <=> output != 0
    x.requires_grad_()
    y = F(tg).dropout(x, p)
    assert y.grad_fn.name() == "MulBackward0"
    g = tg.randn(50, dtype=tg.float64)
    y.backward(g)
    kept = (y.detach() != 0).cpu().numpy()
    assert 0 < kept.sum() < 50
    np.testing.assert_allclose(x.grad.cpu().numpy(), g.cpu().numpy() * kept / (1 - p), rtol=1e-15)
    np.testing.assert_allclose(y.detach().cpu().numpy(), x.detach().cpu().numpy() * kept / (1 - p))


def test_dropout_p_one_zeroes_everything(torch):
    """p=1 drops all: zeros and a zero gradient, recorded as MulBackward0 (like torch)."""
    for lib in (tg, torch):
        x = lib.ones(4, requires_grad=True)
        y = F(lib).dropout(x, 1.0)
        y.sum().backward()
        assert y.tolist() == [0.0] * 4 and x.grad.tolist() == [0.0] * 4
        assert y.grad_fn.name() == "MulBackward0"


def test_dropout_inplace_changes_the_input():
    """inplace=True writes the masked, scaled values into the input and returns it."""
    tg.manual_seed(2)
    x = tg.ones(100)
    y = F(tg).dropout(x, 0.5, inplace=True)
    assert y is x and x._version == 1
    assert set(x.tolist()) == {0.0, 2.0}


# --------------------------------------------------------------------------- vectorisation


def test_conv2d_on_a_mnist_sized_batch_is_fast():
    """(64, 1, 28, 28) through 32 3x3 filters, forward and backward, well under a second:
    im2col and matrix products chunk by chunk of images, no Python loop over pixels."""
    x = tg.randn(64, 1, 28, 28, requires_grad=True)
    w = tg.randn(32, 1, 3, 3, requires_grad=True)
    F(tg).conv2d(x, w, padding=1).sum().backward()  # warm up
    start = time.perf_counter()
    y = F(tg).conv2d(x, w, padding=1)
    y.sum().backward()
    assert time.perf_counter() - start < 1.0
    assert y.shape == (64, 32, 28, 28) and x.grad.shape == x.shape


# --------------------------------------------------------------------------- errors

ERRORS = {
    "gelu approximate": (
        lambda lib: F(lib).gelu(lib.ones(2), approximate="fast"),
        RuntimeError,
        "approximate argument must be either none or tanh",
    ),
    "softmax of integers": (
        lambda lib: F(lib).softmax(lib.tensor([1, 2]), 0),
        NotImplementedError,
        "not implemented for 'Long'",
    ),
    "softmax dim out of range": (
        lambda lib: F(lib).softmax(lib.ones(2, 3), 2),
        IndexError,
        "Dimension out of range",
    ),
    "linear shapes": (
        lambda lib: F(lib).linear(lib.ones(4, 3), lib.ones(5, 2), lib.ones(5)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (4x3 and 2x5)",
    ),
    "linear shapes, no bias": (
        lambda lib: F(lib).linear(lib.ones(4, 3), lib.ones(5, 2)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (4x3 and 2x5)",
    ),
    "linear 3-d shapes": (
        lambda lib: F(lib).linear(lib.ones(2, 4, 3), lib.ones(5, 2), lib.ones(5)),
        RuntimeError,
        "mat1 and mat2 shapes cannot be multiplied (8x3 and 2x5)",
    ),
    "linear 1-d weight with a bias": (
        lambda lib: F(lib).linear(lib.ones(2, 3), lib.ones(3), lib.ones(())),
        RuntimeError,
        "mat2 must be a matrix, got 1-D tensor",
    ),
    "linear dtypes": (
        lambda lib: F(lib).linear(lib.ones(2, 3), lib.ones(4, 3, dtype=lib.float64), lib.ones(4)),
        RuntimeError,
        "self and mat2 must have the same dtype, but got Float and Double",
    ),
    "dropout p > 1": (
        lambda lib: F(lib).dropout(lib.ones(2), 1.5),
        ValueError,
        "dropout probability has to be between 0 and 1, but got 1.5",
    ),
    "dropout p < 0": (
        lambda lib: F(lib).dropout(lib.ones(2), -0.1),
        ValueError,
        "dropout probability has to be between 0 and 1, but got -0.1",
    ),
    "pad odd length": (
        lambda lib: F(lib).pad(lib.ones(2, 3), (1,)),
        RuntimeError,
        "Padding length must be divisible by 2",
    ),
    "pad too long": (
        lambda lib: F(lib).pad(lib.ones(2, 3), (1, 1, 1, 1, 1, 1)),
        RuntimeError,
        "Padding length should be less than or equal to two times the input dimension but got "
        "padding length 6 and input of dimension 2",
    ),
    "pad crops past nothing": (
        lambda lib: F(lib).pad(lib.ones(2, 3), (-2, -2)),
        RuntimeError,
        "narrow(): length must be non-negative.",
    ),
    "pad crops past the far side": (  # (-5 + 1 leaves a size of 0: still refused)
        lambda lib: F(lib).pad(lib.ones(4), (-5, 1)),
        RuntimeError,
        "narrow(): length must be non-negative.",
    ),
    "pad reflect further than the input": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3), (1, 1, 2, 0), mode="reflect"),
        RuntimeError,
        "Argument #6: Padding size should be less than the corresponding input dimension, but "
        "got: padding (2, 0) at dimension 1 of input [1, 2, 3]",
    ),
    "pad replicate of a 1-d input": (
        lambda lib: F(lib).pad(lib.ones(5), (1, 1), mode="replicate"),
        NotImplementedError,
        "Padding size 2 is not supported for 1D input tensor.",
    ),
    "pad reflect with a value": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3), (1, 1), mode="reflect", value=2.0),
        RuntimeError,
        'Padding mode "reflect" doesn\'t take in value argument',
    ),
    "pad replicate of an empty channel": (
        lambda lib: F(lib).pad(lib.ones(2, 0, 3), (1, 1), mode="replicate"),
        RuntimeError,
        "Expected 2D or 3D (batch mode) tensor with possibly 0 batch size and other non-zero "
        "dimensions for input, but got: [2, 0, 3]",
    ),
    "pad replicate crops to nothing": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3, 4), (-4, 0, -3, 0), mode="replicate"),
        RuntimeError,
        "input (H: 3, W: 4 ) is too small. Calculated output H: 0 W: 0",  # (torch's spacing)
    ),
    "pad circular further than the input": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3), (1, 4), mode="circular"),
        RuntimeError,
        "Padding value causes wrapping around more than once.",
    ),
    "pad circular checks the first padded dim first": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3), (1, 4, -2, -1), mode="circular"),
        RuntimeError,
        "Negative padding value is resulting in an empty dimension",
    ),
    "pad circular of a 1-d input": (
        lambda lib: F(lib).pad(lib.ones(5), (1, 1), mode="circular"),
        NotImplementedError,
        "Padding size 2 is not supported for 1D input tensor.",
    ),
    "pad circular with a value": (
        lambda lib: F(lib).pad(lib.ones(1, 2, 3), (1, 1), mode="circular", value=2.0),
        RuntimeError,
        'Padding mode "circular" doesn\'t take in value argument',
    ),
    "pad unknown mode": (
        lambda lib: F(lib).pad(lib.ones(2, 3), (1, 1), mode="mirror"),
        NotImplementedError,
        "Unrecognised padding mode mirror",
    ),
    "loss reduction": (
        lambda lib: F(lib).mse_loss(lib.ones(3), lib.ones(3), reduction="avg"),
        ValueError,
        "avg is not a valid value for reduction",
    ),
    "mse_loss shapes": (
        lambda lib: F(lib).mse_loss(lib.ones(3), lib.ones(2)),
        RuntimeError,
        "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0",
    ),
    "nll_loss target out of range": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), _long(lib, [0, 5])),
        IndexError,
        "Target 5 is out of bounds.",
    ),
    "nll_loss negative target": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), _long(lib, [-1, 0])),
        IndexError,
        "Target -1 is out of bounds.",
    ),
    "nll_loss batch sizes": (
        lambda lib: F(lib).nll_loss(lib.zeros(4, 3), _long(lib, [0, 2, 1])),
        ValueError,
        "Expected input batch_size (4) to match target batch_size (3).",
    ),
    "nll_loss int32 target": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), lib.tensor([0, 1], dtype=lib.int32)),
        RuntimeError,
        "expected target dtype to be Long or Byte, but got Int",
    ),
    "nll_loss float target": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), lib.tensor([0.0, 1.0])),
        RuntimeError,
        "expected target dtype to be Long or Byte, but got Float",
    ),
    "nll_loss weight size": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), _long(lib, [0, 1]), weight=lib.ones(2)),
        RuntimeError,
        "weight tensor should be defined either for all 3 classes or no classes",
    ),
    "nll_loss 2-d target for 2-d input": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3), lib.zeros(2, 5, dtype=lib.int64)),
        RuntimeError,
        "0D or 1D target tensor expected, multi-target not supported",
    ),
    "nll_loss spatial target": (
        lambda lib: F(lib).nll_loss(lib.zeros(2, 3, 4), lib.zeros(2, 5, dtype=lib.int64)),
        RuntimeError,
        "Expected target size [2, 4], got [2, 5]",
    ),
    "nll_loss 0-d input": (
        lambda lib: F(lib).nll_loss(lib.zeros(()), lib.zeros((), dtype=lib.int64)),
        ValueError,
        "Expected 1 or more dimensions (got 0)",
    ),
    "nll_loss weight requires grad": (
        lambda lib: F(lib).nll_loss(
            lib.zeros(2, 3), _long(lib, [0, 1]), weight=lib.ones(3, requires_grad=True)
        ),
        RuntimeError,
        "is not differentiable with respect to argument 'weight'",
    ),
    "cross_entropy target out of range": (
        lambda lib: F(lib).cross_entropy(lib.zeros(2, 3), _long(lib, [3, 0])),
        IndexError,
        "Target 3 is out of bounds.",
    ),
    "cross_entropy label_smoothing": (
        lambda lib: F(lib).cross_entropy(lib.zeros(2, 3), _long(lib, [0, 1]), label_smoothing=1.5),
        RuntimeError,
        "label_smoothing must be between 0.0 and 1.0. Got: 1.5",
    ),
    "binary_cross_entropy input range": (
        lambda lib: F(lib).binary_cross_entropy(lib.tensor([1.5, 0.5]), lib.tensor([1.0, 0.0])),
        RuntimeError,
        "all elements of input should be between 0 and 1",
    ),
    "binary_cross_entropy sizes": (
        lambda lib: F(lib).binary_cross_entropy(lib.full((3,), 0.5), lib.ones(3, 1)),
        ValueError,
        "that is different to the input size",
    ),
    "binary_cross_entropy weight requires grad": (
        lambda lib: F(lib).binary_cross_entropy(
            lib.full((3,), 0.5), lib.ones(3), weight=lib.ones(3, requires_grad=True)
        ),
        RuntimeError,
        "The function 'binary_cross_entropy' is not differentiable with respect to argument 'weight'",
    ),
    "binary_cross_entropy_with_logits sizes": (
        lambda lib: F(lib).binary_cross_entropy_with_logits(lib.ones(3), lib.ones(3, 1)),
        ValueError,
        "must be the same as input size",
    ),
    "binary_cross_entropy_with_logits pos_weight requires grad": (
        lambda lib: F(lib).binary_cross_entropy_with_logits(
            lib.ones(3), lib.ones(3), pos_weight=lib.ones(3, requires_grad=True)
        ),
        RuntimeError,
        "is not differentiable with respect to argument 'pos_weight'",
    ),
    "conv2d input dims": (
        lambda lib: F(lib).conv2d(lib.ones(4, 3), lib.ones(2, 3, 3, 3)),
        RuntimeError,
        "Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: [4, 3]",
    ),
    "conv2d channels": (
        lambda lib: F(lib).conv2d(lib.ones(1, 2, 5, 5), lib.ones(4, 3, 3, 3)),
        RuntimeError,
        "Given groups=1, weight of size [4, 3, 3, 3], expected input[1, 2, 5, 5] to have 3 "
        "channels, but got 2 channels instead",
    ),
    "conv2d kernel larger than input": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 2, 2), lib.ones(4, 3, 3, 3)),
        RuntimeError,
        "Calculated padded input size per channel: (2 x 2). Kernel size: (3 x 3). Kernel size "
        "can't be greater than actual input size",
    ),
    "conv2d groups don't divide the filters": (
        lambda lib: F(lib).conv2d(lib.ones(1, 4, 5, 5), lib.ones(3, 2, 3, 3), groups=2),
        RuntimeError,
        "Given groups=2, expected weight to be divisible by 2 at dimension 0",
    ),
    "conv2d groups and channels": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 1, 3, 3), groups=2),
        RuntimeError,
        "expected input[1, 3, 5, 5] to have 2 channels, but got 3 channels instead",
    ),
    "conv2d same with stride": (
        lambda lib: F(lib).conv2d(
            lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding="same", stride=2
        ),
        RuntimeError,
        "padding='same' is not supported for strided convolutions",
    ),
    "conv2d padding string": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding="full"),
        RuntimeError,
        "Invalid padding string: 'full'",
    ),
    "conv2d negative padding": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), padding=-1),
        RuntimeError,
        "negative padding is not supported",
    ),
    "conv2d zero stride": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), stride=0),
        RuntimeError,
        "non-positive stride is not supported",
    ),
    "conv2d zero dilation": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), dilation=0),
        RuntimeError,
        "dilation should be greater than zero, but got [0, 0]",
    ),
    "conv2d three strides": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), stride=(1, 1, 1)),
        RuntimeError,
        "expected stride to be a single integer value or a list of 2 values to match the "
        "convolution dimensions, but got stride=[1, 1, 1]",
    ),
    "conv2d bias size": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3), lib.ones(3)),
        RuntimeError,
        "expected bias to be 1-dimensional with 4 elements, but got bias of size [3] instead",
    ),
    "conv2d dtypes": (
        lambda lib: F(lib).conv2d(lib.ones(1, 3, 5, 5), lib.ones(4, 3, 3, 3, dtype=lib.float64)),
        RuntimeError,
        "expected scalar type Float but found Double",
    ),
    "max_pool2d padding over half the kernel": (
        lambda lib: F(lib).max_pool2d(lib.ones(1, 2, 5, 5), 3, padding=2),
        RuntimeError,
        "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and "
        "dilation=1",
    ),
    "max_pool2d output too small": (
        lambda lib: F(lib).max_pool2d(lib.ones(1, 2, 2, 2), 3),
        RuntimeError,
        "Given input size: (2x2x2). Calculated output size: (2x0x0). Output size is too small",
    ),
    "max_pool2d 2-d input": (
        lambda lib: F(lib).max_pool2d(lib.ones(4, 4), 2),
        RuntimeError,
        "non-empty 3D or 4D (batch mode) tensor expected for input",
    ),
    "max_pool2d zero stride": (
        lambda lib: F(lib).max_pool2d(lib.ones(1, 2, 5, 5), 2, stride=0),
        RuntimeError,
        "stride should not be zero",
    ),
    "avg_pool2d padding over half the kernel": (
        lambda lib: F(lib).avg_pool2d(lib.ones(1, 2, 5, 5), 3, padding=2),
        RuntimeError,
        "pad should be at most half of effective kernel size",
    ),
    "avg_pool2d zero divisor": (
        lambda lib: F(lib).avg_pool2d(lib.ones(1, 2, 5, 5), 2, divisor_override=0),
        RuntimeError,
        "divisor must be not zero",
    ),
    "layer_norm shape": (
        lambda lib: F(lib).layer_norm(lib.ones(4, 3), (4,)),
        RuntimeError,
        "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[4, 3]",
    ),
    "layer_norm weight shape": (
        lambda lib: F(lib).layer_norm(lib.ones(4, 3), (3,), lib.ones(4)),
        RuntimeError,
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and "
        "normalized_shape = [3]",
    ),
    "layer_norm bias shape": (
        lambda lib: F(lib).layer_norm(lib.ones(4, 3), (3,), None, lib.ones(4)),
        RuntimeError,
        "Expected bias to be of same shape as normalized_shape",
    ),
    "embedding index out of range": (
        lambda lib: F(lib).embedding(_long(lib, [0, 5]), lib.ones(4, 3)),
        IndexError,
        "index out of range in self",
    ),
    "embedding negative index": (
        lambda lib: F(lib).embedding(_long(lib, [0, -1]), lib.ones(4, 3)),
        IndexError,
        "index out of range in self",
    ),
    "embedding float indices": (
        lambda lib: F(lib).embedding(lib.tensor([0.0, 1.0]), lib.ones(4, 3)),
        RuntimeError,
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: "
        "Long, Int",
    ),
    "embedding padding_idx": (
        lambda lib: F(lib).embedding(_long(lib, [0, 1]), lib.ones(4, 3), padding_idx=4),
        AssertionError,
        "Padding_idx must be within num_embeddings",
    ),
    "embedding 1-d weight": (
        lambda lib: F(lib).embedding(_long(lib, [0, 1]), lib.ones(4)),
        RuntimeError,
        "'weight' must be 2-D",
    ),
    "one_hot of floats": (
        lambda lib: F(lib).one_hot(lib.tensor([0.0, 1.0])),
        RuntimeError,
        "one_hot is only applicable to index tensor of type LongTensor.",
    ),
    "one_hot of int32": (
        lambda lib: F(lib).one_hot(lib.tensor([0, 1], dtype=lib.int32)),
        RuntimeError,
        "one_hot is only applicable to index tensor of type LongTensor.",
    ),
    "one_hot negative class": (
        lambda lib: F(lib).one_hot(_long(lib, [0, -1])),
        RuntimeError,
        "Class values must be non-negative.",
    ),
    "one_hot class too large": (
        lambda lib: F(lib).one_hot(_long(lib, [0, 3]), 3),
        RuntimeError,
        "Class values must be smaller than num_classes.",
    ),
    "one_hot of nothing": (
        lambda lib: F(lib).one_hot(lib.zeros(0, dtype=lib.int64)),
        RuntimeError,
        "Can not infer total number of classes from empty tensor.",
    ),
}


# On a GPU these are checked on the device and reported late, with torch's CUDA error, at the
# next wait for the GPU (tests/teachgrad/test_sync_budget.py); the table has torch's CPU errors.
CHECKED_ON_THE_DEVICE = {
    "nll_loss target out of range",
    "nll_loss negative target",
    "cross_entropy target out of range",
    "binary_cross_entropy input range",
}
ERROR_CASES = [
    pytest.param(
        *row,
        id=name,
        marks=pytest.mark.no_standin("on a GPU this error is reported late, as a CUDA error")
        if name in CHECKED_ON_THE_DEVICE
        else (),
    )
    for name, row in ERRORS.items()
]


@pytest.mark.parametrize("fn,exc,phrase", ERROR_CASES)
def test_error_matches_torch(torch, fn, exc, phrase):
    """Bad arguments raise torch's exception class with torch's phrase."""
    assert_raises_like_torch(torch, fn, exc, phrase)


def test_errors_name_the_shapes():
    """Beyond torch's phrase, the message says what was wrong in terms of the shapes given."""
    with pytest.raises(RuntimeError) as err:
        F(tg).conv2d(tg.ones(1, 2, 5, 5), tg.ones(4, 3, 3, 3))
    assert "(out_channels, in_channels/groups, kH, kW)" in str(err.value)
    with pytest.raises(ValueError) as err:
        F(tg).nll_loss(tg.zeros(4, 3), tg.tensor([0, 2, 1]))
    assert "(4, 3)" in str(err.value) and "(3,)" in str(err.value)


@pytest.mark.parametrize("kind", ["bce weight", "logits weight", "logits pos_weight"])
@pytest.mark.parametrize("input_shape", [(2,), (1, 2), (2, 2), (3, 1)])
@pytest.mark.parametrize("factor_shape", [(2,), (1, 2), (2, 2), (2, 1), (3, 1, 2), (1,), (3,), ()])
def test_a_weight_that_broadcasts_past_the_input_is_torch_s_error(
    torch, kind, input_shape, factor_shape
):
    """A binary cross-entropy's weight (or pos_weight) may repeat along the input's dims,
    not make the loss bigger than the input (a silent loss of another size before): the
    loss, or torch's error (class and first line), for each pair of shapes."""

    def run(lib):
        functional = F(lib)
        x, t = lib.full(input_shape, 0.4, requires_grad=True), lib.full(input_shape, 0.7)
        w = lib.full(factor_shape, 1.5)
        try:
            if kind == "bce weight":
                loss = functional.binary_cross_entropy(x, t, weight=w)
            else:
                name = "weight" if kind == "logits weight" else "pos_weight"
                loss = functional.binary_cross_entropy_with_logits(x, t, **{name: w})
        except RuntimeError as error:
            return torch_phrase(str(error).splitlines()[0])
        return round(loss.item(), 6)

    assert run(tg) == run(torch)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("ignore_index", [-100, 1])
def test_nll_loss_node_shows_torchs_total_weight(torch, reduction, weighted, ignore_index):
    """grad_fn._saved_total_weight: the summed class weight of the targets that count (0 for
    reduction="none"), in the input's dtype, freed by backward, as torch's."""

    def run(lib):
        x = lib.tensor(np.linspace(-1, 1, 12).reshape(4, 3), requires_grad=True)
        w = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64) if weighted else None
        y = F(lib).nll_loss(
            x, lib.tensor([0, 1, 2, 1]), weight=w, reduction=reduction, ignore_index=ignore_index
        )
        total = y.grad_fn._saved_total_weight
        y.sum().backward()
        try:
            y.grad_fn._saved_total_weight
        except RuntimeError as error:
            after = torch_phrase(str(error).splitlines()[0])
        else:
            after = "still readable"
        return total.item(), tuple(total.shape), str(total.dtype).split(".")[-1], after

    assert run(tg) == run(torch)


@pytest.mark.parametrize("target", ["classes, label smoothing", "probabilities"])
def test_number_overload_nodes_keep_the_number_like_torch(torch, target):
    """torch's ``.Scalar`` overloads inside cross_entropy (MulBackward1 of the label
    smoothing, DivBackward1 of the mean over probability targets) keep the number as an
    argument: ``_saved_other`` only, still readable after backward."""

    def run(lib):
        x = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
        if target == "probabilities":
            y = F(lib).cross_entropy(x, lib.full((3, 4), 0.25, dtype=lib.float64))
            node = y.grad_fn
        else:
            y = F(lib).cross_entropy(x, lib.tensor([0, 1, 2]), label_smoothing=0.1)
            node = y.grad_fn.next_functions[0][0]
        saved = sorted(a for a in dir(node) if a.startswith("_saved_"))
        before = node._saved_other
        y.backward()
        return (
            node.name(),
            saved,
            before,
            node._saved_other,
            np.round(x.grad.cpu().numpy(), 12).tolist(),
        )

    assert run(tg) == run(torch)

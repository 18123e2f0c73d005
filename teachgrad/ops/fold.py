"""``F.unfold`` and ``F.fold``: im2col and col2im, convolution's two halves as ops of their own.

``unfold`` (torch's op ``im2col``) copies every sliding block of an image, a (C, kh, kw)
window, into one column: (N, C, H, W) becomes (N, C·kh·kw, L), L the number of blocks.
A convolution is then one matrix product with the flattened filters: conv2d computes so
(``ops/nn.py``), with the same windows (``_im2col``). ``fold`` (torch's ``col2im``) goes
back: it *adds* each column into the place of its block. Where blocks overlap their values
add up, so ``fold`` is not ``unfold``'s inverse but its transpose: ``<unfold(x), c> =
<x, fold(c)>`` for every x and c. That makes each op the other's backward (a pair closed
under differentiation, as torch's); both are linear, so forward mode applies the op to
the tangent.

What lives here: the two array helpers, the two Functions, ``unfold`` and ``fold`` with
torch's argument checks. ``nn.Unfold`` and ``nn.Fold`` are in ``teachgrad/nn/modules/fold.py``.

    >>> import teachgrad as tg
    >>> x = tg.arange(9.0).reshape(1, 1, 3, 3).requires_grad_()
    >>> unfold(x, 2)  # one column per 2x2 block
    tensor([[[0., 1., 3., 4.],
             [1., 2., 4., 5.],
             [3., 4., 6., 7.],
             [4., 5., 7., 8.]]], grad_fn=<Im2ColBackward0>)
    >>> fold(tg.ones(1, 4, 4), 3, 2)  # how many blocks hold each pixel
    tensor([[[[1., 2., 1.],
              [2., 4., 2.],
              [1., 2., 1.]]]])
"""

from __future__ import annotations

from collections.abc import Iterable
from operator import itemgetter

from .._arguments import parse
from .._backend import array_module
from .._printing import scalar_type_name
from ..autograd.builtin import Builtin
from ..autograd.forward_ad import linear_jvp
from .nn import _batched, _im2col, _out_size, _pad, _windows  # (conv2d's)

# --------------------------------------------------------------------------- the arrays


def _blocks(size, kernel, dilation, padding, stride) -> tuple:
    """How many blocks fit along H and W in an image of ``size``, padding included."""
    return tuple(
        _out_size(size[i] + 2 * padding[i], kernel[i], stride[i], dilation[i]) for i in range(2)
    )


def _unfold(x, kernel, dilation, padding, stride):
    """Every block of the padded images ``x`` (N, C, H, W) as a column: (N, C·kh·kw, L)."""
    blocks = _blocks(x.shape[2:], kernel, dilation, padding, stride)
    padded = _pad(x, tuple((p, p) for p in padding))
    cols = _im2col(padded, kernel, stride, dilation, blocks, 1)[:, 0]  # (one group)
    # a 1x1 kernel's columns are x itself, reshaped: torch's result has memory of its own
    return cols.copy() if array_module(x).may_share_memory(cols, x) else cols


def _fold(cols, size, kernel, dilation, padding, stride):
    """The transpose of ``_unfold``: columns (N, C·kh·kw, L) added into images (N, C, H, W)
    of ``size``, each where its block lies (overlapping blocks add up)."""
    xp = array_module(cols)
    n, rows = cols.shape[:2]
    channels = rows // (kernel[0] * kernel[1])
    blocks = _blocks(size, kernel, dilation, padding, stride)
    padded_hw = (size[0] + 2 * padding[0], size[1] + 2 * padding[1])
    padded = xp.zeros((n, channels, *padded_hw), cols.dtype)
    windows = _windows(padded, kernel, stride, dilation, blocks)  # a view: writes land in padded
    taps = cols.reshape(n, channels, *kernel, *blocks)
    # one kernel tap at a time (as torch adds, so the sums round alike): one tap's blocks
    # are distinct pixels, while all taps at once would add a pixel blocks share only once
    for i in range(kernel[0]):
        for j in range(kernel[1]):
            windows[..., i, j] += taps[:, :, i, j]
    inside = padded[:, :, padding[0] : padding[0] + size[0], padding[1] : padding[1] + size[1]]
    return xp.ascontiguousarray(inside)


# --------------------------------------------------------------------------- the ops

_GEOMETRY = ("kernel_size", "dilation", "padding", "stride")  # (torch's order)
# what both nodes show (torch's _saved_kernel_size ...): the pairs the op was given
_SHOWN = {name: ("blocks", itemgetter(k)) for k, name in enumerate(_GEOMETRY)}


class Im2Col(Builtin):
    """``unfold``: images (N, C, H, W), or one (C, H, W), to columns of blocks; its backward
    is ``Col2Im`` of the gradient."""

    node_name = "Im2ColBackward0"
    saved_args = {
        **_SHOWN,
        "self_sym_argsize_minus_2": ("size", itemgetter(0)),
        "self_sym_argsize_minus_1": ("size", itemgetter(1)),
    }
    formula = {
        "self": "col2im(grad, (self_sym_argsize_minus_2, self_sym_argsize_minus_1), "
        "kernel_size, dilation, padding, stride)"
    }
    jvp = staticmethod(linear_jvp)  # linear in self

    @staticmethod
    def forward(ctx, a, kernel_size, dilation, padding, stride):
        x = a._data
        ctx.blocks, ctx.size = (kernel_size, dilation, padding, stride), x.shape[-2:]
        cols = _unfold(_batched(x), *ctx.blocks)
        return cols if x.ndim == 4 else cols[0]

    @staticmethod
    def backward(ctx, grad):
        return Col2Im.apply(grad, ctx.size, *ctx.blocks), *(None,) * 4


class Col2Im(Builtin):
    """``fold``: columns (N, C·kh·kw, L), or one image's (C·kh·kw, L), added into images of
    ``output_size``; its backward is ``Im2Col`` of the gradient."""

    node_name = "Col2ImBackward0"
    saved_args = _SHOWN  # (not output_size: the gradient's own size says it)
    formula = {"self": "im2col(grad, kernel_size, dilation, padding, stride)"}
    jvp = staticmethod(linear_jvp)  # linear in self

    @staticmethod
    def forward(ctx, a, output_size, kernel_size, dilation, padding, stride):
        cols = a._data
        ctx.blocks = (kernel_size, dilation, padding, stride)
        images = _fold(cols if cols.ndim == 3 else cols[None], output_size, *ctx.blocks)
        return images if cols.ndim == 3 else images[0]

    @staticmethod
    def backward(ctx, grad):
        return Im2Col.apply(grad, *ctx.blocks), *(None,) * 5


# --------------------------------------------------------------------------- unfold, fold


def unfold(input, kernel_size, dilation=1, padding=0, stride=1):
    """Every sliding block of images ``input`` (N, C, H, W), or of one (C, H, W), as a
    column: (N, C·kh·kw, L), L the number of blocks. ``kernel_size`` (the block's size),
    ``dilation`` (the spacing of its pixels), ``padding`` (zeros around the image) and
    ``stride`` (the step between blocks): each an int or an (H, W) pair.

    >>> import teachgrad as tg
    >>> unfold(tg.ones(2, 3, 5, 6), (2, 3), padding=1, stride=2).shape  # 3·2·3 values, 3x3 blocks
    teachgrad.Size([2, 18, 9])
    """
    pairs = dict(kernel_size=kernel_size, dilation=dilation, padding=padding, stride=stride)
    blocks = _read("im2col", input, pairs, order=_GEOMETRY)
    # (torch reads dims 1 and 2 before it looks at the rank: fewer dims are an IndexError)
    images = input.ndim in (3, 4) and 0 not in input.shape[-3:]  # (only the batch may be empty)
    if input.size(1) == 0 or input.size(2) == 0 or not images:
        raise RuntimeError(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero "
            f"dimensions for input, but got: {list(input.shape)}\n  unfold takes images (N, C, "
            "H, W) or one image (C, H, W), with at least one channel, row and column."
        )
    size = tuple(input.shape[-2:])
    counts = _blocks(size, *blocks)
    if min(counts) < 1:
        kernel, dilation, padding, _ = blocks
        raise RuntimeError(
            f"Given input with spatial size {size}, kernel_size={kernel}, dilation={dilation}, "
            f"padding={padding}, calculated shape of the array of sliding blocks as {counts}, "
            "but its components must be at least one.\n  The block, dilated, must fit in the "
            "padded image: pad it, or take a smaller kernel or dilation."
        )
    _refuse_integers(input, "im2col_out_cpu")
    return Im2Col.apply(input, *blocks)


def fold(input, output_size, kernel_size, dilation=1, padding=0, stride=1):
    """The transpose of ``unfold``: columns ``input`` (N, C·kh·kw, L), or one image's
    (C·kh·kw, L), added into images (N, C, *output_size), each column where its block lies
    (the values of overlapping blocks add up). The other arguments are ``unfold``'s.

    >>> import teachgrad as tg
    >>> x = tg.arange(6.0).reshape(1, 1, 2, 3)
    >>> fold(unfold(x, (1, 2)), (2, 3), (1, 2))  # the middle column is in two blocks
    tensor([[[[0., 2., 2.],
              [3., 8., 5.]]]])
    """
    pairs = dict(output_size=output_size, kernel_size=kernel_size, dilation=dilation)
    pairs |= dict(padding=padding, stride=stride)
    output_size, *blocks = _read("col2im", input, pairs, order=_FOLD_ORDER)
    shape = list(input.shape)
    if input.ndim not in (2, 3) or 0 in shape[-2:]:  # (only the batch may be empty)
        raise RuntimeError(
            "Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and "
            f"non-zero dimensions for input, but got: {shape}\n  fold takes columns (N, "
            "C·kh·kw, L) or one image's (C·kh·kw, L), with at least one row and column."
        )
    kernel, dilation, padding, stride = blocks
    rows, length = shape[-2:]
    if rows % (kernel[0] * kernel[1]):
        raise RuntimeError(
            "Expected size of input's dimension 1 to be divisible by the product of "
            f"kernel_size, but got input.size(1)={rows} and kernel_size={kernel}.\n  A column "
            "holds one block of each channel: C·kh·kw values."
        )
    counts = _blocks(output_size, *blocks)
    given = (
        f"Given output_size={output_size}, kernel_size={kernel}, dilation={dilation}, "
        f"padding={padding}, stride={stride}"
    )
    if length != counts[0] * counts[1]:
        raise RuntimeError(
            f"{given}, expected size of input's dimension 2 to match the calculated number of "
            f"sliding blocks {counts[0]} * {counts[1]} = {counts[0] * counts[1]}, but got "
            f"input.size(2)={length}.\n  There is one column per block: as many as unfold "
            "makes of an image of output_size."
        )
    if min(counts) < 1:
        raise RuntimeError(
            f"{given}, calculated shape of the array of sliding blocks as {counts}, which is "
            "too small (non-positive)\n  The block, dilated, must fit in the padded image."
        )
    if min(output_size) < 1:
        raise RuntimeError(
            f"Expected output spatial size to be positive, but got: output_size={output_size}."
            "\n  An image has at least one row and one column."
        )
    _refuse_integers(input, "col2im_out_cpu")
    return Col2Im.apply(input, output_size, *blocks)


_FOLD_ORDER = ("kernel_size", "stride", "dilation", "padding")  # (col2im checks in this order)

# each argument's least value, torch's error when a value is below it, and a hint
_RULES = {
    "kernel_size": (
        1,
        "kernel size should be greater than zero, but got kernel_height: {} kernel_width: {}",
        "A block is at least one pixel high and wide.",
    ),
    "dilation": (
        1,
        "dilation should be greater than zero, but got dilation_height: {} dilation_width: {}",
        "dilation 1 takes neighbouring pixels, 2 every other one.",
    ),
    "padding": (
        0,
        "padding should be non-negative, but got pad_height: {} pad_width: {}",
        "padding adds zeros around the image: it can't take pixels away.",
    ),
    "stride": (
        1,
        "stride should be greater than zero, but got stride_height: {} stride_width: {}",
        "stride 1 moves each block one pixel on from the last.",
    ),
}


def _pair(value) -> tuple:
    """torch's ``_pair``: an iterable as a tuple, anything else twice."""
    return tuple(value) if isinstance(value, Iterable) else (value, value)


def _read(fn, input, pairs: dict, order) -> tuple:
    """The values of ``pairs`` (name: value) as torch's ``fn`` reads them: made pairs, parsed
    (a TypeError for what is not a tensor or ints), each of length 2, then checked by
    ``_RULES`` in ``order`` (im2col and col2im check in different orders)."""
    given = parse(fn, (input, *map(_pair, pairs.values())), {})
    for name in pairs:
        if len(given[name]) != 2:
            raise RuntimeError(
                f"It is expected {name} equals to 2, but got size {len(given[name])}\n  One "
                "value for each of the two spatial dims (H, W), or one int for both."
            )
    for name in order:
        least, message, hint = _RULES[name]
        if min(given[name]) < least:
            raise RuntimeError(message.format(*given[name]) + "\n  " + hint)
    return tuple(given[name] for name in pairs)


def _refuse_integers(input, kernel) -> None:
    """torch's error for integers: its kernels copy and add floats, complex numbers and bools."""
    if input.dtype.name.startswith(("int", "uint")):
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{scalar_type_name(input)}'\n  Convert the input "
            "first, e.g. input.float()."
        )

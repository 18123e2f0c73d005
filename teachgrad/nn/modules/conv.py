"""``Conv2d``: 2-D convolution over ``(N, C, H, W)`` images, and how its input is padded.

The arithmetic is ``F.conv2d``; this layer owns the weight
``(out_channels, in_channels // groups, kh, kw)``, the bias, torch's default
initialisation, and the padding modes. ``padding_mode="zeros"`` pads inside
``F.conv2d``; ``"reflect"``, ``"replicate"`` and ``"circular"`` are index maps
(each padded position copies some input position), applied here before the
convolution.

    >>> import teachgrad as tg
    >>> conv = tg.nn.Conv2d(3, 8, kernel_size=3, padding=1)
    >>> conv.weight.shape
    teachgrad.Size([8, 3, 3, 3])
"""

from __future__ import annotations

import math

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _pair(x) -> tuple:
    """``3`` -> ``(3, 3)``; a pair stays a pair (as a tuple)."""
    return tuple(x) if isinstance(x, tuple | list) else (x, x)


def _source_positions(size: int, before: int, after: int, mode: str) -> list[int]:
    """For each position of a dim padded by ``before``/``after``, the input position it copies.

    >>> _source_positions(4, 2, 2, "reflect"), _source_positions(4, 2, 2, "replicate")
    ([2, 1, 0, 1, 2, 3, 2, 1], [0, 0, 0, 1, 2, 3, 3, 3])
    >>> _source_positions(4, 2, 2, "circular")
    [2, 3, 0, 1, 2, 3, 0, 1]
    """
    positions = range(-before, size + after)
    if mode == "circular":
        return [i % size for i in positions]
    if mode == "replicate":
        return [min(max(i, 0), size - 1) for i in positions]
    # reflect: mirror around the edge element, which is not repeated
    return [-i if i < 0 else 2 * (size - 1) - i if i >= size else i for i in positions]


def _pad_by_copying(input, pads, mode: str):
    """Pad the last two dims of ``input``; ``pads`` = ``[left, right, top, bottom]`` as in F.pad.

    Advanced indexing with the position lists copies the right rows and columns,
    and its backward adds each output gradient back to the position it came from.
    """
    left, right, top, bottom = pads
    height, width = input.shape[-2], input.shape[-1]
    for size, before, after, dim in ((height, top, bottom, -2), (width, left, right, -1)):
        if mode == "reflect" and max(before, after) >= size:
            raise RuntimeError(
                f"Argument #4: Padding size should be less than the corresponding input dimension, "
                f"but got: padding ({before}, {after}) at dimension {input.dim() + dim} of input "
                f"{list(input.shape)}"
            )
        if mode == "circular" and max(before, after) > size:
            raise RuntimeError("Padding value causes wrapping around more than once.")
    rows = _source_positions(height, top, bottom, mode)
    cols = _source_positions(width, left, right, mode)
    return input[..., rows, :][..., cols]


class Conv2d(Module):
    """2-D convolution: each output channel is a learned ``kh x kw`` filter slid over the input.

    ``padding`` is an int, a pair, ``"valid"`` (none) or ``"same"`` (output as large
    as the input; stride 1 only). ``groups`` splits the channels into independent
    convolutions.

    >>> import teachgrad as tg
    >>> conv = tg.nn.Conv2d(2, 4, 3, stride=2, padding=1, bias=False)
    >>> conv
    Conv2d(2, 4, kernel_size=(3, 3), stride=(2, 2), padding=(1, 1), bias=False)
    """

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device=None,
        dtype=None,
    ):
        super().__init__()
        if groups <= 0:
            raise ValueError("groups must be a positive integer")
        if in_channels % groups != 0:
            raise ValueError("in_channels must be divisible by groups")
        if out_channels % groups != 0:
            raise ValueError("out_channels must be divisible by groups")
        kernel_size, stride, dilation = _pair(kernel_size), _pair(stride), _pair(dilation)
        if isinstance(padding, str):
            if padding not in ("valid", "same"):
                raise ValueError(
                    f"Invalid padding string {padding!r}, should be one of {{'valid', 'same'}}"
                )
            if padding == "same" and any(s != 1 for s in stride):
                raise ValueError("padding='same' is not supported for strided convolutions")
        else:
            padding = _pair(padding)
        if padding_mode not in _PADDING_MODES:
            raise ValueError(
                f"padding_mode must be one of {list(_PADDING_MODES)}, but got "
                f"padding_mode='{padding_mode}'"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.groups = groups
        self.padding_mode = padding_mode
        self._reversed_padding_repeated_twice = self._explicit_padding()
        self.weight = Parameter(
            empty((out_channels, in_channels // groups, *kernel_size), device=device, dtype=dtype)
        )
        if bias:
            self.bias = Parameter(empty(out_channels, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def _explicit_padding(self) -> list[int]:
        """``[left, right, top, bottom]``: the padding in F.pad's order (last dim first)."""
        if self.padding == "valid":
            return [0, 0, 0, 0]
        if self.padding == "same":  # total d*(k-1); an odd total puts the extra on the right
            pads = []
            for d, k in zip(reversed(self.dilation), reversed(self.kernel_size)):
                total = d * (k - 1)
                pads += [total // 2, total - total // 2]
            return pads
        top, left = self.padding
        return [left, left, top, top]

    def reset_parameters(self) -> None:
        """torch's default: Kaiming-uniform with ``a=sqrt(5)`` (``U(±1/sqrt(fan_in))``) for the
        weight, ``U(±1/sqrt(fan_in))`` for the bias; ``fan_in = in_channels/groups * kh * kw``.

        >>> import teachgrad as tg
        >>> conv = tg.nn.Conv2d(4, 2, 5)   # fan_in = 4 * 5 * 5 = 100
        >>> bool(conv.weight.abs().max() <= 0.1 and conv.bias.abs().max() <= 0.1)
        True
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def _conv_forward(self, input, weight, bias):
        pads = self._reversed_padding_repeated_twice
        left, right, top, bottom = pads
        if self.padding_mode != "zeros":
            if any(pads):
                input = _pad_by_copying(input, pads, self.padding_mode)
            padding = (0, 0)
        elif left == right and top == bottom:
            padding = (top, left)  # symmetric zero padding: F.conv2d does it
        else:  # padding="same" with an even kernel: one more zero on the right/bottom
            input = F.pad(input, pads)
            padding = (0, 0)
        return F.conv2d(input, weight, bias, self.stride, padding, self.dilation, self.groups)

    def forward(self, input):
        return self._conv_forward(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        text = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if self.padding != (0, 0):
            text += f", padding={self.padding}"
        if self.dilation != (1, 1):
            text += f", dilation={self.dilation}"
        if self.groups != 1:
            text += f", groups={self.groups}"
        if self.bias is None:
            text += ", bias=False"
        if self.padding_mode != "zeros":
            text += f", padding_mode={self.padding_mode}"
        return text

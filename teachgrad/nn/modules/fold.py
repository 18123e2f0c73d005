"""``Unfold`` and ``Fold``: ``F.unfold`` and ``F.fold`` with their settings kept (the ops
are in ``teachgrad/ops/fold.py``).

    >>> import teachgrad as tg
    >>> tg.nn.Unfold(2)(tg.ones(1, 3, 4, 4)).shape  # 3·2·2 values in each of 3·3 blocks
    teachgrad.Size([1, 12, 9])
"""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Unfold(Module):
    """Every sliding block of images (N, C, H, W), or of one (C, H, W), as a column:
    (N, C·kh·kw, L). The arguments are ``F.unfold``'s, each an int or an (H, W) pair.

    >>> import teachgrad as tg
    >>> unfold = tg.nn.Unfold(kernel_size=(2, 3), padding=1)
    >>> unfold
    Unfold(kernel_size=(2, 3), dilation=1, padding=1, stride=1)
    >>> unfold(tg.ones(2, 5, 3, 4)).shape
    teachgrad.Size([2, 30, 16])
    """

    def __init__(self, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        return (
            f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, "
            f"stride={self.stride}"
        )


class Fold(Module):
    """Columns (N, C·kh·kw, L), or one image's (C·kh·kw, L), added into images of
    ``output_size``, each where its block lies: ``Unfold``'s transpose. The arguments are
    ``F.fold``'s.

    >>> import teachgrad as tg
    >>> fold = tg.nn.Fold(output_size=(3, 4), kernel_size=2)
    >>> fold
    Fold(output_size=(3, 4), kernel_size=2, dilation=1, padding=0, stride=1)
    >>> fold(tg.ones(1, 4, 6))
    tensor([[[[1., 2., 2., 1.],
              [2., 4., 4., 2.],
              [1., 2., 2., 1.]]]])
    """

    def __init__(self, output_size, kernel_size, dilation=1, padding=0, stride=1):
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input):
        return F.fold(
            input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride
        )

    def extra_repr(self) -> str:
        return f"output_size={self.output_size}, " + Unfold.extra_repr(self)

"""Resizing layers: ``Upsample`` and its two fixed-mode forms. Each is ``F.interpolate``
with its settings kept (the arithmetic is in ``teachgrad/ops/upsample.py``).

    >>> import teachgrad as tg
    >>> tg.nn.Upsample(scale_factor=2)(tg.tensor([[[1.0, 2.0]]]))
    tensor([[[1., 1., 2., 2.]]])
"""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Upsample(Module):
    """Resize (N, C, W), (N, C, H, W) or (N, C, D, H, W) inputs to ``size`` or by
    ``scale_factor``, with ``F.interpolate``'s ``mode``, ``align_corners`` and
    ``recompute_scale_factor``.

    >>> import teachgrad as tg
    >>> up = tg.nn.Upsample(scale_factor=2, mode="bilinear")
    >>> up
    Upsample(scale_factor=2.0, mode='bilinear')
    >>> up(tg.ones(1, 1, 2, 2)).shape
    teachgrad.Size([1, 1, 4, 4])
    """

    def __init__(
        self,
        size=None,
        scale_factor=None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ):
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:  # (as torch: a factor of 0 counts as none given)
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        if self.scale_factor is not None:
            info = f"scale_factor={self.scale_factor!r}"
        else:
            info = f"size={self.size!r}"
        return f"{info}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """``Upsample`` of (N, C, H, W) images with ``mode="nearest"``.

    >>> import teachgrad as tg
    >>> tg.nn.UpsamplingNearest2d(scale_factor=2)(tg.ones(1, 1, 2, 3)).shape
    teachgrad.Size([1, 1, 4, 6])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """``Upsample`` of (N, C, H, W) images with ``mode="bilinear"`` and ``align_corners=True``
    (the corner pixels keep their values).

    >>> import teachgrad as tg
    >>> tg.nn.UpsamplingBilinear2d(size=3)(tg.tensor([[[[0.0, 2.0]]]]))
    tensor([[[[0., 1., 2.],
              [0., 1., 2.],
              [0., 1., 2.]]]])
    """

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)

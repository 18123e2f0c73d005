"""``Dropout``: zero random elements while training, to keep units from co-adapting.

>>> import teachgrad as tg
>>> tg.nn.Dropout(0.2)
Dropout(p=0.2, inplace=False)
"""

from __future__ import annotations

from .. import functional as F
from .module import Module


class Dropout(Module):
    """While training, zero each element with probability ``p`` and scale the rest by
    ``1 / (1 - p)`` (so the expected value is unchanged); in eval mode, do nothing.

    >>> import teachgrad as tg
    >>> drop = tg.nn.Dropout(0.5).eval()
    >>> drop(tg.ones(3))
    tensor([1., 1., 1.])
    """

    def __init__(self, p: float = 0.5, inplace: bool = False):
        super().__init__()
        if p < 0 or p > 1:
            raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
        self.p = p
        self.inplace = inplace

    def forward(self, input):
        return F.dropout(input, self.p, self.training, self.inplace)

    def extra_repr(self) -> str:
        return f"p={self.p}, inplace={self.inplace}"

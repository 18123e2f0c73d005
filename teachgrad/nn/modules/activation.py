"""Activation layers: elementwise nonlinearities (ReLU, Tanh, Sigmoid, GELU, SiLU) and the
normalisers Softmax and LogSoftmax. Each is a thin Module over ``teachgrad.nn.functional``.

    >>> import teachgrad as tg
    >>> tg.nn.ReLU()(tg.tensor([-1.0, 0.5]))
    tensor([0.0000, 0.5000])
"""

from __future__ import annotations

from .. import functional as F
from .module import Module


class ReLU(Module):
    """``max(x, 0)``; ``inplace=True`` overwrites the input instead of allocating.

    >>> import teachgrad as tg
    >>> tg.nn.ReLU()(tg.tensor([-2.0, 3.0]))
    tensor([0., 3.])
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Tanh(Module):
    """``tanh(x)``, squashing to (-1, 1).

    >>> import teachgrad as tg
    >>> tg.nn.Tanh()(tg.tensor([0.0]))
    tensor([0.])
    """

    def forward(self, input):
        return F.tanh(input)


class Sigmoid(Module):
    """``1 / (1 + exp(-x))``, squashing to (0, 1).

    >>> import teachgrad as tg
    >>> tg.nn.Sigmoid()(tg.tensor([0.0]))
    tensor([0.5000])
    """

    def forward(self, input):
        return F.sigmoid(input)


class GELU(Module):
    """``x * Φ(x)`` (Φ: the standard normal CDF); ``approximate="tanh"`` uses the tanh formula.

    >>> import teachgrad as tg
    >>> tg.nn.GELU(approximate="tanh")
    GELU(approximate='tanh')
    """

    def __init__(self, approximate: str = "none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """``x * sigmoid(x)`` (also called swish).

    >>> import teachgrad as tg
    >>> tg.nn.SiLU()
    SiLU()
    """

    def __init__(self, inplace: bool = False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self) -> str:
        return "inplace=True" if self.inplace else ""


class Softmax(Module):
    """``exp(x) / exp(x).sum(dim)``: turns scores along ``dim`` into probabilities.

    >>> import teachgrad as tg
    >>> tg.nn.Softmax(dim=1)
    Softmax(dim=1)
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.softmax(input, self.dim)  # (dim None: F warns and guesses, as torch does)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """``log(softmax(x))`` along ``dim``, computed stably (input of ``NLLLoss``).

    >>> import teachgrad as tg
    >>> tg.nn.LogSoftmax(dim=-1)
    LogSoftmax(dim=-1)
    """

    def __init__(self, dim: int | None = None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.log_softmax(input, self.dim)

    def extra_repr(self) -> str:
        return f"dim={self.dim}"

"""``LayerNorm``: normalise each sample over its last dims, then scale and shift.

>>> import teachgrad as tg
>>> tg.nn.LayerNorm(4)
LayerNorm((4,), eps=1e-05, elementwise_affine=True, bias=True)
"""

from __future__ import annotations

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class LayerNorm(Module):
    """``(x - mean) / sqrt(var + eps) * weight + bias`` over the last ``len(normalized_shape)`` dims.

    Mean and (biased) variance are taken per sample, so unlike batch norm it behaves
    the same in training and evaluation. ``weight`` starts at ones and ``bias`` at zeros.

    >>> import teachgrad as tg
    >>> ln = tg.nn.LayerNorm(3)
    >>> [(name, tuple(p.shape)) for name, p in ln.named_parameters()]
    [('weight', (3,)), ('bias', (3,))]
    """

    def __init__(
        self,
        normalized_shape,
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            self.weight = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            if bias:
                self.bias = Parameter(empty(self.normalized_shape, device=device, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Start as the identity transform after normalising: weight ones, bias zeros.

        >>> import teachgrad as tg
        >>> ln = tg.nn.LayerNorm(2); ln.reset_parameters(); ln.weight.tolist(), ln.bias.tolist()
        ([1.0, 1.0], [0.0, 0.0])
        """
        if self.weight is not None:
            init.ones_(self.weight)
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, input):
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, bias={self.bias is not None}"
        )

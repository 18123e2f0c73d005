"""``Linear`` (the affine layer ``x @ W.T + b``) and the shape helpers ``Identity``,
``Flatten`` and ``Unflatten``.

    >>> import teachgrad as tg
    >>> tg.nn.Linear(3, 2)(tg.ones(5, 3)).shape
    teachgrad.Size([5, 2])
"""

from __future__ import annotations

import math

from ..._creation import empty
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Identity(Module):
    """Returns its input unchanged (a placeholder, e.g. to remove a layer); ignores its arguments.

    >>> import teachgrad as tg
    >>> tg.nn.Identity(54, unused="ok")(tg.tensor([1.0]))
    tensor([1.])
    """

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


class Linear(Module):
    """``y = x @ weight.T + bias``, with ``weight`` of shape ``(out_features, in_features)``.

    Initialised like torch: ``weight`` and ``bias`` uniform in
    ``[-1/sqrt(in_features), 1/sqrt(in_features)]`` (see ``reset_parameters``).

    >>> import teachgrad as tg
    >>> lin = tg.nn.Linear(3, 2)
    >>> lin.weight.shape, lin.bias.shape
    (teachgrad.Size([2, 3]), teachgrad.Size([2]))
    >>> lin(tg.ones(4, 3)).shape
    teachgrad.Size([4, 2])
    """

    def __init__(
        self, in_features: int, out_features: int, bias: bool = True, device=None, dtype=None
    ):
        super().__init__()
        self.in_features = in_features
        self.out_features = out_features
        # (the shape as one tuple, as torch gives it: a wrong type is refused in its words)
        self.weight = Parameter(empty((out_features, in_features), device=device, dtype=dtype))
        if bias:
            self.bias = Parameter(empty(out_features, device=device, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """torch's default: Kaiming-uniform with ``a=sqrt(5)``, i.e. ``U(±1/sqrt(fan_in))``.

        The bias gets the same bound, so every output starts at a comparable scale.

        >>> import teachgrad as tg
        >>> lin = tg.nn.Linear(100, 10)
        >>> bool(lin.weight.abs().max() <= 0.1 and lin.bias.abs().max() <= 0.1)
        True
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0
            init.uniform_(self.bias, -bound, bound)

    def forward(self, input):
        return F.linear(input, self.weight, self.bias)

    def extra_repr(self) -> str:
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class Flatten(Module):
    """Merge dims ``start_dim`` .. ``end_dim`` into one (by default all but the batch dim).

    >>> import teachgrad as tg
    >>> tg.nn.Flatten()(tg.zeros(8, 3, 4, 4)).shape
    teachgrad.Size([8, 48])
    """

    def __init__(self, start_dim: int = 1, end_dim: int = -1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self) -> str:
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Split dim ``dim`` into the shape ``unflattened_size`` (the inverse of ``Flatten``).

    >>> import teachgrad as tg
    >>> tg.nn.Unflatten(1, (3, 4, 4))(tg.zeros(8, 48)).shape
    teachgrad.Size([8, 3, 4, 4])
    """

    def __init__(self, dim: int, unflattened_size):
        super().__init__()
        if not isinstance(unflattened_size, tuple | list):
            raise TypeError(
                f"unflattened_size must be tuple of ints, but found type {type(unflattened_size).__name__}"
            )
        for i, size in enumerate(unflattened_size):
            if not isinstance(size, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type "
                    f"{type(size).__name__} at pos {i}"
                )
        self.dim = dim
        self.unflattened_size = unflattened_size

    def forward(self, input):
        return input.unflatten(self.dim, self.unflattened_size)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"

"""``teachgrad.nn.init``: fill a weight tensor in place with a starting value.

Where training starts matters: too large and activations explode layer after
layer, too small and they vanish. The Xavier (Glorot) and Kaiming (He) rules pick
the spread of the random values from the layer's *fan*, the number of inputs
(fan_in) or outputs (fan_out) each unit sees, so that the variance of the signal
stays about the same through the network.

Every function here changes its argument in place, returns it, runs under
``no_grad`` (so it works on Parameters), and draws its random numbers from
teachgrad's generator: after ``tg.manual_seed(s)`` the values repeat exactly.

    >>> import teachgrad as tg
    >>> w = tg.empty(3, 4)
    >>> tg.nn.init.constant_(w, 0.5).sum()
    tensor(6.)
"""

from __future__ import annotations

import math
import warnings

from .._creation import eye, rand, randn
from ..autograd.grad_mode import no_grad

_GAINS = {  # the gain that keeps the output variance of each nonlinearity at 1
    "linear": 1.0,
    "conv1d": 1.0,
    "conv2d": 1.0,
    "conv3d": 1.0,
    "conv_transpose1d": 1.0,
    "conv_transpose2d": 1.0,
    "conv_transpose3d": 1.0,
    "sigmoid": 1.0,
    "tanh": 5.0 / 3,
    "relu": math.sqrt(2.0),
    "selu": 3.0 / 4,
}


def calculate_gain(nonlinearity: str, param=None) -> float:
    """The recommended scale of the weights in front of ``nonlinearity``.

    ReLU zeroes half of its inputs, so it needs ``sqrt(2)`` to keep the variance;
    ``leaky_relu`` with negative slope ``param`` (default 0.01) needs
    ``sqrt(2 / (1 + param**2))``.

    >>> import teachgrad as tg
    >>> tg.nn.init.calculate_gain("tanh"), round(tg.nn.init.calculate_gain("relu"), 4)
    (1.6666666666666667, 1.4142)
    """
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, int | float) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity not in _GAINS:
        raise ValueError(f"Unsupported nonlinearity {nonlinearity}")
    return _GAINS[nonlinearity]


def _calculate_fan_in_and_fan_out(tensor) -> tuple[int, int]:
    """``(fan_in, fan_out)`` of a weight laid out as torch's layers do.

    A Linear weight is ``(out_features, in_features)``; a Conv2d weight is
    ``(out_channels, in_channels, kh, kw)``, where each output sees
    ``in_channels * kh * kw`` inputs (the receptive field).

    >>> import teachgrad as tg
    >>> tg.nn.init._calculate_fan_in_and_fan_out(tg.empty(8, 3, 5, 5))
    (75, 200)
    """
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive_field = 1
    for size in tensor.shape[2:]:
        receptive_field *= size
    fan_in = tensor.shape[1] * receptive_field
    fan_out = tensor.shape[0] * receptive_field
    return fan_in, fan_out


def _fan(tensor, mode: str) -> int:
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _no_generator(generator) -> None:
    if generator is not None:
        raise NotImplementedError(
            "teachgrad has one random generator per device, seeded by tg.manual_seed(); "
            "generator= objects are not supported"
        )


def uniform_(tensor, a: float = 0.0, b: float = 1.0, generator=None):
    """Fill ``tensor`` with samples from the uniform distribution on ``[a, b)``.

    >>> import teachgrad as tg
    >>> w = tg.nn.init.uniform_(tg.empty(100), -0.1, 0.1)
    >>> bool((w >= -0.1).all() and (w < 0.1).all())
    True
    """
    _no_generator(generator)
    with no_grad():
        u = rand(tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
        return tensor.copy_(u * (b - a) + a)


def normal_(tensor, mean: float = 0.0, std: float = 1.0, generator=None):
    """Fill ``tensor`` with samples from the normal distribution N(mean, std²).

    >>> import teachgrad as tg
    >>> tg.manual_seed(0); w = tg.nn.init.normal_(tg.empty(10000), mean=3.0, std=0.5)
    >>> round(w.mean().item(), 1), round(w.std().item(), 1)
    (3.0, 0.5)
    """
    _no_generator(generator)
    with no_grad():
        z = randn(tuple(tensor.shape), dtype=tensor.dtype, device=tensor.device)
        return tensor.copy_(z * std + mean)


def constant_(tensor, val: float):
    """Fill ``tensor`` with the value ``val``.

    >>> import teachgrad as tg
    >>> tg.nn.init.constant_(tg.empty(3), 0.3)
    tensor([0.3000, 0.3000, 0.3000])
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor):
    """Fill ``tensor`` with ones.

    >>> import teachgrad as tg
    >>> tg.nn.init.ones_(tg.empty(2))
    tensor([1., 1.])
    """
    return constant_(tensor, 1.0)


def zeros_(tensor):
    """Fill ``tensor`` with zeros.

    >>> import teachgrad as tg
    >>> tg.nn.init.zeros_(tg.empty(2))
    tensor([0., 0.])
    """
    with no_grad():
        return tensor.zero_()


def eye_(tensor):
    """Fill a 2-D ``tensor`` with the identity matrix (ones on the diagonal).

    A linear layer initialised this way passes its input through unchanged.

    >>> import teachgrad as tg
    >>> tg.nn.init.eye_(tg.empty(2, 3))
    tensor([[1., 0., 0.],
            [0., 1., 0.]])
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    with no_grad():
        identity = eye(*tensor.shape, dtype=tensor.dtype, device=tensor.device)
        return tensor.copy_(identity)


def xavier_uniform_(tensor, gain: float = 1.0, generator=None):
    """Glorot's rule, uniform: ``U(-a, a)`` with ``a = gain * sqrt(6 / (fan_in + fan_out))``.

    It keeps the variance of the signal on the way forward (fan_in) and of the
    gradient on the way back (fan_out) by averaging the two.

    >>> import teachgrad as tg
    >>> w = tg.nn.init.xavier_uniform_(tg.empty(30, 20))
    >>> bool(w.abs().max() <= (6 / (20 + 30)) ** 0.5)
    True
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    bound = math.sqrt(3.0) * std  # a uniform on [-a, a] has std a / sqrt(3)
    return uniform_(tensor, -bound, bound, generator)


def xavier_normal_(tensor, gain: float = 1.0, generator=None):
    """Glorot's rule, normal: ``N(0, std²)`` with ``std = gain * sqrt(2 / (fan_in + fan_out))``.

    >>> import teachgrad as tg
    >>> tg.manual_seed(0); w = tg.nn.init.xavier_normal_(tg.empty(500, 300))
    >>> round(w.std().item() / (2 / 800) ** 0.5, 1)
    1.0
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    return normal_(tensor, 0.0, std, generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    """He's rule: ``gain / sqrt(fan)``, or None (and a warning) for an empty tensor."""
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op", stacklevel=3)
        return None
    return calculate_gain(nonlinearity, a) / math.sqrt(_fan(tensor, mode))


def kaiming_uniform_(
    tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
):
    """He's rule, uniform: ``U(-bound, bound)`` with ``bound = gain * sqrt(3 / fan)``.

    ``a`` is the negative slope of the leaky ReLU that follows (0: plain ReLU);
    ``mode="fan_in"`` keeps the forward variance, ``"fan_out"`` the backward one.
    ``Linear`` and ``Conv2d`` use ``a=sqrt(5)``, which gives ``bound = 1 / sqrt(fan_in)``.

    >>> import teachgrad as tg
    >>> w = tg.nn.init.kaiming_uniform_(tg.empty(64, 50), nonlinearity="relu")
    >>> bool(w.abs().max() <= (6 / 50) ** 0.5)
    True
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    bound = math.sqrt(3.0) * std
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor, a: float = 0, mode: str = "fan_in", nonlinearity: str = "leaky_relu", generator=None
):
    """He's rule, normal: ``N(0, std²)`` with ``std = gain / sqrt(fan)``.

    >>> import teachgrad as tg
    >>> tg.manual_seed(0); w = tg.nn.init.kaiming_normal_(tg.empty(400, 200), nonlinearity="relu")
    >>> round(w.std().item() / (2 / 200) ** 0.5, 1)
    1.0
    """
    std = _kaiming_std(tensor, a, mode, nonlinearity)
    if std is None:
        return tensor
    return normal_(tensor, 0.0, std, generator)

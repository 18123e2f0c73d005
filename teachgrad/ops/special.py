"""The regularized incomplete gamma functions: ``igamma`` and ``igammac``.

``igamma(a, x)`` is P(a, x) = γ(a, x) / Γ(a), the share of a Gamma(a) distribution that
lies below x; ``igammac(a, x)`` is Q(a, x) = 1 − P(a, x), the share above it. They are
computed on the arrays, in float64, as the textbooks do:

1. where ``x < a + 1``, P by its power series, e^(−x) x^a / Γ(a) · Σ x^n / (a (a+1) … (a+n));
2. elsewhere Q by its continued fraction, evaluated from the front (Lentz's method);
3. each from the other as 1 minus it, and torch's values at the edges (a or x zero,
   infinite, negative or NaN).

Their slope in x is the Gamma(a) density e^(−x) x^(a−1) / Γ(a) (minus it for Q), which
backward computes with teachgrad ops, so that it can be differentiated again. torch has no
derivative in a: backward raises where one is asked for, as torch's does, and forward-mode
AD raises, as torch has no tangent rule for either function.

    >>> import teachgrad as tg
    >>> tg.igamma(tg.tensor([1.0, 2.0]), tg.tensor([1.0, 1.0]))  # P(1, 1) = 1 − 1/e
    tensor([0.6321, 0.2642])
"""

from __future__ import annotations

import math

from .._backend import array_module, float64, quiet
from .._layout import torch_layout
from .._printing import scalar_name
from .._tensor import wrap_array
from ..autograd.builtin import Builtin
from .pointwise import WRAP_A_NUMBER, _check_two_tensors, operands

# Lanczos' approximation of Γ (g = 7, nine terms): log Γ to about 1e-15 for a ≥ 1/2
_LANCZOS_G = 7
_LANCZOS = (
    0.99999999999980993,
    676.5203681218851,
    -1259.1392167224028,
    771.32342877765313,
    -176.61502916214059,
    12.507343278686905,
    -0.13857109526572012,
    9.9843695780195716e-6,
    1.5056327351493116e-7,
)
_EPS = 1e-15  # a few float64 roundings: the sum and the fraction stop changing below it
_TINY = 1e-300  # Lentz's guard against a division by zero
_STEPS = 32  # terms of the series (or of the fraction) between two looks at convergence
_MOST = 4096  # looks at most (131,072 terms: a of about 10⁸ next to x)


@quiet  # (log Γ is infinite at 0, -1, -2 ...)
def log_gamma(a):
    """log |Γ(a)| for an array ``a`` (reflected below 1/2; infinite at 0, −1, −2 ...).

    >>> import numpy as np
    >>> np.round(np.exp(log_gamma(np.array([0.5, 1.0, 5.0]))), 6)  # √π, 0!, 4!
    array([ 1.772454,  1.      , 24.      ])
    """
    xp = array_module(a)
    small = a < 0.5
    z = xp.where(small, 1 - a, a) - 1  # (Γ(a) Γ(1 − a) = π / sin(π a) for the small ones)
    series = xp.full_like(z, _LANCZOS[0])
    for k, c in enumerate(_LANCZOS[1:], start=1):
        series = series + c / (z + k)
    t = z + _LANCZOS_G + 0.5
    log_g = 0.5 * math.log(2 * math.pi) + (z + 0.5) * xp.log(t) - t + xp.log(series)
    log_g = xp.where(small, math.log(math.pi) - xp.log(xp.abs(xp.sin(math.pi * a))) - log_g, log_g)
    return xp.where((a <= 0) & (a == xp.floor(a)), xp.inf, log_g)  # (its poles, exactly)


def _prefactor(a, x):
    """e^(−x) x^a / Γ(a), in logs (it under- or overflows long before the result does)."""
    xp = array_module(a)
    return xp.exp(a * xp.log(x) - x - log_gamma(a))


def _lower_series(a, x):
    """P(a, x) by its power series (converges fast where x < a + 1)."""
    xp = array_module(a)
    term = 1 / a
    total, n = term, a
    for _ in range(_MOST):
        for _ in range(_STEPS):
            n = n + 1
            term = term * x / n
            total = total + term
        if not xp.any(term > total * _EPS):  # (one look at the values per 32 terms)
            break
    return total * _prefactor(a, x)


def _upper_fraction(a, x):
    """Q(a, x) by its continued fraction 1 / (x + 1 − a − 1 (1 − a) / (x + 3 − a − …)),
    evaluated from the front by Lentz's method (converges fast where x ≥ a + 1)."""
    xp = array_module(a)
    b = x + 1 - a
    c = xp.full_like(b, 1 / _TINY)
    d = 1 / b
    h, i = d, 0
    for _ in range(_MOST):
        for _ in range(_STEPS):
            i += 1
            an = -i * (i - a)
            b = b + 2
            d = an * d + b
            d = 1 / xp.where(xp.abs(d) < _TINY, _TINY, d)
            c = b + an / c
            c = xp.where(xp.abs(c) < _TINY, _TINY, c)
            delta = d * c
            h = h * delta
        if not xp.any(xp.abs(delta - 1) > _EPS):
            break
    return h * _prefactor(a, x)


@quiet  # (the edges make NaN and infinities on purpose, as torch's)
def incomplete_gamma(a, x, upper: bool):
    """P(a, x) (``upper=False``) or Q(a, x), elementwise, for float64 arrays of one shape.

    >>> import numpy as np
    >>> incomplete_gamma(np.array([1.0, 0.0, -1.0]), np.array([1.0, 2.0, 1.0]), False)
    array([0.63212056, 1.        ,        nan])
    """
    xp = array_module(a)
    inner = (a > 0) & (x > 0) & xp.isfinite(a) & xp.isfinite(x)
    by_series = inner & (x < a + 1)
    by_fraction = inner & ~by_series
    # each method on its own elements only: the others get values that converge at once
    p = _lower_series(xp.where(by_series, a, 1.0), xp.where(by_series, x, 0.5))
    q = _upper_fraction(xp.where(by_fraction, a, 1.0), xp.where(by_fraction, x, 3.0))
    lower = xp.where(by_series, p, 1 - q)
    # torch's edges: P(0, x > 0) = 1, P(a, 0) = 0, P(∞, x) = 0, P(a, ∞) = 1; NaN where a or x
    # is negative or NaN, for P(0, 0) and for P(∞, ∞)
    lower = xp.where((a == 0) & (x > 0), 1.0, lower)
    lower = xp.where((x == 0) & (a > 0), 0.0, lower)
    lower = xp.where(xp.isinf(a) & xp.isfinite(x), 0.0, lower)
    lower = xp.where(xp.isinf(x) & (a > 0) & xp.isfinite(a), 1.0, lower)
    unknown = (a < 0) | (x < 0) | xp.isnan(a) | xp.isnan(x)
    unknown = unknown | ((a == 0) & (x == 0)) | (xp.isinf(a) & xp.isinf(x))
    lower = xp.where(unknown, xp.nan, lower)
    return xp.where(by_fraction, q, 1 - lower) if upper else lower


class Igamma(Builtin):
    """``igamma(a, x)``, P(a, x); ``Igammac`` below is Q(a, x) = 1 − P(a, x)."""

    batchable = True  # elementwise: a leading batch dim of grad just broadcasts
    node_name = "IgammaBackward0"
    saved_names = ("self", "other")
    op, upper, sign = "igamma", False, 1
    formula = {
        "self": "no derivative: backward raises (as in torch)",
        "other": "grad · exp(−other) · other^(self − 1) / Γ(self)",
    }

    @classmethod
    def forward(cls, ctx, a, b):
        ctx.to_save = (a, b)
        x, y = operands(a, b)
        if x.dtype.kind != "f":  # (torch's CPU kernel's name, as teachgrad's other ops give)
            raise NotImplementedError(
                f"\"{cls.op}_cpu\" not implemented for '{scalar_name(x.dtype.name)}'\n  "
                f"{cls.op} is for floating-point tensors: make one of them a float first."
            )
        wide = [v.astype(float64.numpy, copy=False) for v in array_module(x).broadcast_arrays(x, y)]
        out = incomplete_gamma(*wide, cls.upper).astype(x.dtype)
        return torch_layout(out, x, y)

    @classmethod
    def backward(cls, ctx, grad):
        a, x = ctx.saved_tensors
        need_a, need_x = ctx.needs_input_grad
        if need_a:
            raise NotImplementedError(
                f"the derivative for '{cls.op}: input' is not implemented.\n  torch has no "
                f"derivative of {cls.op} in its first argument (a): only in x, the second; "
                "give a a tensor that does not require grad."
            )
        # (a needs no gradient: its log Γ is a constant, made on the arrays)
        log_gamma_a = wrap_array(log_gamma(a._data.astype(float64.numpy)).astype(grad._data.dtype))
        density = ((a - 1) * x.log() - x - log_gamma_a).exp()
        return None, grad * density if cls.sign > 0 else -grad * density

    @classmethod
    def jvp(cls, ctx, *tangents):
        raise NotImplementedError(
            f"Trying to use forward AD with {cls.op} that does not support it because it has "
            f"not been implemented yet.\n  torch has no tangent rule for {cls.op}: use reverse "
            "mode (backward) for its gradient in x."
        )


class Igammac(Igamma):
    """``igammac(a, x)``, Q(a, x) = 1 − P(a, x): its slope in x is P's, negated."""

    node_name = "IgammacBackward0"
    op, upper, sign = "igammac", True, -1
    formula = {
        "self": "no derivative: backward raises (as in torch)",
        "other": "−grad · exp(−other) · other^(self − 1) / Γ(self)",
    }


def igamma(input, other):
    """The regularized lower incomplete gamma function P(input, other), elementwise: the
    share of a Gamma(input) distribution below ``other`` (torch.special.gammainc).

    >>> import teachgrad as tg
    >>> tg.igamma(tg.tensor([0.5, 3.0]), tg.tensor([0.5, 3.0]))
    tensor([0.6827, 0.5768])
    """
    _check_two_tensors(input, other, "igamma", hint=WRAP_A_NUMBER)
    return Igamma.apply(input, other)


def igammac(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 − P, elementwise
    (torch.special.gammaincc).

    >>> import teachgrad as tg
    >>> tg.igammac(tg.tensor([0.5, 3.0]), tg.tensor([0.5, 3.0]))
    tensor([0.3173, 0.4232])
    """
    _check_two_tensors(input, other, "igammac", hint=WRAP_A_NUMBER)
    return Igammac.apply(input, other)

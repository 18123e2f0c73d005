"""``teachgrad.optim``: optimizers that update parameters from their ``.grad`` (like ``torch.optim``).

``Optimizer`` (optimizer.py) holds the parameter groups, the per-parameter state and
the state dicts; ``SGD`` (sgd.py), ``Adam`` and ``AdamW`` (adam.py) each add one
update rule. Nothing is defined here; it only re-exports.

    >>> import teachgrad as tg
    >>> w = tg.tensor([4.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.25)
    >>> for _ in range(3):
    ...     opt.zero_grad(); (w**2).sum().backward(); opt.step()
    >>> w             # each step halves w
    tensor([0.5000], requires_grad=True)
"""

from .adam import Adam, AdamW
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Adam", "AdamW", "Optimizer", "SGD"]

"""``Variable``: the pre-0.4 wrapper, kept so old tutorials still run.

Since PyTorch 0.4 a Variable *is* a Tensor. ``Variable(t)`` returns a tensor
sharing ``t``'s memory (cut from any graph), ``requires_grad=`` still works, and
``volatile=`` only warns that it has no effect (use ``no_grad()``).

    >>> import teachgrad as tg
    >>> from teachgrad.autograd import Variable
    >>> v = Variable(tg.ones(2), requires_grad=True)
    >>> v.requires_grad, isinstance(v, Variable), type(v).__name__
    (True, True, 'Tensor')
"""

from __future__ import annotations

import warnings

from .._creation import tensor
from .._tensor import Tensor
from .engine import is_checkpoint_valid, queue_callback


class _VariableMeta(type):
    def __instancecheck__(cls, other):
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: returns a plain Tensor. Every Tensor is an instance of Variable."""

    def __new__(cls, data=None, requires_grad=False, volatile=None):
        if volatile is not None:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with teachgrad.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = tensor([])
        if not isinstance(data, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(data).__name__}")
        result = data.detach()
        if requires_grad:
            result.requires_grad_(True)
        return result


class _ExecutionEngine:
    """``Variable._execution_engine``: torch's handle on its engine, for the calls code
    written against it makes (see ``engine.queue_callback``).

    >>> Variable._execution_engine.is_checkpoint_valid()
    True
    """

    queue_callback = staticmethod(queue_callback)
    is_checkpoint_valid = staticmethod(is_checkpoint_valid)


Variable._execution_engine = _ExecutionEngine()

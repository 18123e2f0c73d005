"""``Parameter``: a tensor that a Module learns.

A Parameter is an ordinary leaf tensor with ``requires_grad=True`` whose *type*
says "this belongs to the model": assigning one to a Module attribute registers
it, so it shows up in ``module.parameters()``, ``state_dict()`` and in an
optimiser. That is the whole difference from a Tensor.

    >>> import teachgrad as tg
    >>> w = tg.nn.Parameter(tg.zeros(2))
    >>> w.requires_grad, w.is_leaf, isinstance(w, tg.Tensor)
    (True, True, True)
"""

from __future__ import annotations

from .._creation import empty
from .._tensor import Tensor


class Parameter(Tensor):
    """A leaf tensor that requires grad (by default) and is registered by Modules.

    It shares memory and the version counter with ``data``, like torch's: change
    one in place and the other sees it. Results of ops on a Parameter are plain
    Tensors; only the Parameter itself is a model weight.

    >>> import teachgrad as tg
    >>> t = tg.ones(2)
    >>> p = tg.nn.Parameter(t)
    >>> _ = t.mul_(3.0)        # same memory: the parameter changed too
    >>> p
    Parameter containing:
    tensor([3., 3.], requires_grad=True)
    >>> type(p * 2).__name__
    'Tensor'
    """

    def __new__(cls, data: Tensor | None = None, requires_grad: bool = True):
        if data is None:
            data = empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(
                f"Parameter(): argument 'data' must be a Tensor, not {type(data).__name__}"
            )
        # A new leaf on the same memory and version counter (as data.detach() would be);
        # it is never part of a graph, even if ``data`` was computed by one.
        param = object.__new__(cls)
        param._data = data._data
        param._counter = data._counter
        param._inference = data._inference
        param.requires_grad = requires_grad  # the setter refuses integer dtypes, as torch
        return param

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True):
        pass  # everything happened in __new__; Tensor.__init__ would allocate new memory

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

"""``teachgrad._C._functions``: two nodes of torch's ``torch._C._functions`` that torch's
tests build graphs with, called as torch's are: ``DelayedError(message, n)(*tensors)`` and
``UndefinedGrad()(*tensors)``. Each is one of teachgrad's own Functions
(``autograd.function``)."""

from .._tensor import Tensor
from ..autograd.function import _DelayedError, _UndefinedGrad
from ..autograd.grad_mode import enable_grad


class _Node:
    """Called with ``size`` tensors (torch counts them, and wants Tensors), it applies
    ``function`` to them: one result for one tensor, else a tuple."""

    size = 1

    def __call__(self, *tensors):
        if len(tensors) != self.size:
            raise TypeError(f"expected {self.size} arguments, got {len(tensors)} instead")
        for i, t in enumerate(tensors):
            if not isinstance(t, Tensor):
                raise TypeError(
                    f"argument {i} is not a Variable\n  {type(self).__name__} takes tensors."
                )
        out = self._apply(*tensors)
        return out[0] if len(out) == 1 else out


class DelayedError(_Node):
    """Passes ``size`` tensors through (in their own memory); backward through them raises
    ``RuntimeError(message)``. In no_grad too, as torch's, the node is recorded.

    >>> import teachgrad as tg
    >>> y = DelayedError("Boom!", 1)(tg.ones(2, requires_grad=True))
    >>> y.grad_fn.name()
    'Error'
    """

    def __init__(self, message: str, size: int):
        self.message, self.size = message, size

    def _apply(self, *tensors):
        with enable_grad():
            return _DelayedError.apply(self.message, *tensors)


class UndefinedGrad(_Node):
    """A copy of one tensor whose backward sends back no gradient (None).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> UndefinedGrad()(x * 3).sum().backward(); print(x.grad)
    None
    """

    def _apply(self, *tensors):
        return _UndefinedGrad.apply(*tensors)

"""``teachgrad.autograd._functions``: torch's two legacy Functions ``Resize`` and ``Type``
(still used by torch's own tests), and its helpers in ``utils``.

>>> import teachgrad as tg
>>> x = tg.ones(2, 3, requires_grad=True)
>>> Resize.apply(x, (3, 2)).grad_fn.name()
'ResizeBackward'
"""

from . import utils
from .tensor import Resize, Type

__all__ = ["Resize", "Type", "utils"]

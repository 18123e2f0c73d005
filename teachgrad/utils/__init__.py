"""torch.utils's parts that autograd users meet: ``checkpoint`` (activation checkpointing).

>>> import teachgrad as tg
>>> tg.utils.checkpoint.checkpoint_sequential.__name__
'checkpoint_sequential'
"""

from . import checkpoint

__all__ = ["checkpoint"]

"""The seam: the few ops the layers below ``ops`` need, reached without importing upward.

teachgrad's layers import downward: ``_backend``, then ``_tensor`` (Tensor), then
``autograd`` (the tape and the engine), then ``ops``, then ``nn``. The engine needs a
handful of ops itself: to sum a broadcast gradient back to its input's shape
(``sum_to``), to copy a gradient into a leaf's memory layout (``clone_like``), to stack
the rows of a batched gradient (``stack``), and to check an input a custom Function
marked dirty (``check_inplace``). They are names in this module, filled in once by
``teachgrad/ops/__init__.py`` (``provide``), which ``import teachgrad`` runs before any
gradient can exist. This is the one place where a lower layer reaches up.

    >>> import teachgrad
    >>> from teachgrad import _seam
    >>> _seam.sum_to.__module__
    'teachgrad.ops.reduce'
"""

from __future__ import annotations

NAMES = ("sum_to", "clone_like", "stack", "check_inplace")


def _not_yet(*args, **kwargs):
    raise RuntimeError("teachgrad.ops is not imported yet: import teachgrad first")


sum_to = clone_like = stack = check_inplace = _not_yet


def provide(**ops) -> None:
    """Fill in the seam's names (teachgrad/ops/__init__.py calls this once)."""
    for name, fn in ops.items():
        if name not in NAMES:
            raise ValueError(f"the seam has no {name!r}; it holds {', '.join(NAMES)}")
        globals()[name] = fn

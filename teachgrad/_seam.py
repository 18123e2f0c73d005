"""The seam: the few things the lower layers need from the layers above them.

teachgrad's layers import downward: ``_backend``, then ``_tensor`` (Tensor), then
``autograd`` (the tape and the engine), then ``ops``, then ``nn``. A few calls must go
up, and they go through the names in this module, each filled in once (``provide``) by
the module that defines it, which ``import teachgrad`` imports before any tensor can
need it. This is the one place where a lower layer reaches up.

* The engine needs a handful of ops: to sum a broadcast gradient back to its input's
  shape (``sum_to``), to copy a gradient into a leaf's memory layout (``clone_like``),
  to stack the rows of a batched gradient (``stack``), and to check an input a custom
  Function marked dirty, or a tensor given as ``out=`` (``check_inplace``). ``ops`` provides
  them.
* A Tensor runs the engine (``x.backward()``: ``backward``, from ``autograd/engine.py``),
  makes its leaf's node (``AccumulateGrad``, from ``autograd/tape.py``) and, when it is a
  view, asks the in-place machinery to check or rewrite its history
  (``refuse_stale_view``, ``regenerate_view_grad_fn``, ``rebase_view_history``, from
  ``ops/inplace.py``). Its ``repr`` shows a dual tensor's tangent (``tangent_of``, from
  ``autograd/forward_ad.py``).

    >>> import teachgrad
    >>> from teachgrad import _seam
    >>> _seam.sum_to.__module__
    'teachgrad.ops.reduce'
"""

from __future__ import annotations

NAMES = (
    "sum_to",
    "clone_like",
    "stack",
    "check_inplace",
    "backward",
    "AccumulateGrad",
    "refuse_stale_view",
    "regenerate_view_grad_fn",
    "rebase_view_history",
    "tangent_of",
)


def _not_yet(*args, **kwargs):
    raise RuntimeError("teachgrad.ops is not imported yet: import teachgrad first")


sum_to = clone_like = stack = check_inplace = _not_yet
backward = AccumulateGrad = _not_yet
refuse_stale_view = regenerate_view_grad_fn = rebase_view_history = tangent_of = _not_yet


def provide(**ops) -> None:
    """Fill in the seam's names (each providing module calls this once, when imported)."""
    for name, fn in ops.items():
        if name not in NAMES:
            raise ValueError(f"the seam has no {name!r}; it holds {', '.join(NAMES)}")
        globals()[name] = fn

"""``tg.autograd.graph``: the public window on the graph, as ``torch.autograd.graph``.

The graph's machinery lives in ``tape.py`` (nodes, saved tensors, accumulation); this
module names what users reach for: ``Node``, ``GradientEdge`` and
``get_gradient_edge``, the saved-tensor hooks (``saved_tensors_hooks``,
``save_on_cpu``, ``disable_saved_tensors_hooks``), ``increment_version``, and teachgrad's own windows on the
graph: its events (``add_listener``, ``record``) and snapshots (``snapshot``).

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> tg.autograd.graph.get_gradient_edge(w).node.name()
    'torch::autograd::AccumulateGrad'
"""

from __future__ import annotations

from .._events import (  # noqa: F401 - re-exported: the event API is part of this namespace
    Event,
    GradAccumulated,
    HookFired,
    NodeFinished,
    NodeStarted,
    OpRecorded,
    Recording,
    SavedTensorPacked,
    SavedTensorReleased,
    SavedTensorUnpacked,
    VersionBumped,
    add_listener,
    record,
)
from .._tensor import Tensor
from .snapshot import (  # noqa: F401 - re-exported
    EdgeInfo,
    GraphSnapshot,
    NodeInfo,
    SavedInfo,
    advance,
    snapshot,
)
from .tape import (  # noqa: F401 - re-exported: torch.autograd.graph's names
    GradientEdge,
    Node,
    disable_saved_tensors_hooks,
    save_on_cpu,
    saved_tensors_hooks,
)


def get_gradient_edge(tensor) -> GradientEdge:
    """The edge through which gradients reach ``tensor``: its grad_fn or AccumulateGrad.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> tg.autograd.graph.get_gradient_edge(w).node.name()
    'torch::autograd::AccumulateGrad'
    """
    if not tensor.requires_grad:
        raise RuntimeError(
            "It is not possible to get the gradient edge for a Tensor that does not require gradients"
        )
    return GradientEdge(*tensor._edge())


def increment_version(tensor) -> None:
    """Count one more in-place change of ``tensor`` (or of each tensor in a list): for a change
    made behind autograd's back (through ``.data`` or NumPy) that saved copies must notice.
    Inference tensors have no version counter: they are left alone.

    >>> import teachgrad as tg
    >>> x = tg.zeros(2)
    >>> tg.autograd.graph.increment_version(x); x._version
    1
    """
    for t in (tensor,) if isinstance(tensor, Tensor) else tensor:
        if not t._inference:
            t._counter.bump("increment_version")

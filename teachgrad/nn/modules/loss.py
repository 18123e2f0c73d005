"""Loss layers: a Module per loss of ``teachgrad.nn.functional``, holding its settings.

``reduction`` says how the per-element losses become the result: ``"mean"``
(default), ``"sum"``, or ``"none"`` (keep them all). Class weights are buffers,
so they follow the module in ``to()`` and ``state_dict()``.

    >>> import teachgrad as tg
    >>> tg.nn.CrossEntropyLoss(label_smoothing=0.1).label_smoothing
    0.1
"""

from __future__ import annotations

from .. import functional as F
from .module import Module


class _Loss(Module):
    def __init__(self, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__()
        if size_average is not None or reduce is not None:
            reduction = F._legacy_reduction(size_average, reduce, stacklevel=4)
        self.reduction = reduction


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=None, reduce=None, reduction: str = "mean"):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)


class MSELoss(_Loss):
    """Mean squared error ``(input - target)²``, reduced.

    >>> import teachgrad as tg
    >>> tg.nn.MSELoss()(tg.tensor([1.0, 3.0]), tg.tensor([0.0, 0.0]))
    tensor(5.)
    """

    def forward(self, input, target):
        return F.mse_loss(input, target, reduction=self.reduction)


class L1Loss(_Loss):
    """Mean absolute error ``|input - target|``, reduced.

    >>> import teachgrad as tg
    >>> tg.nn.L1Loss(reduction="sum")(tg.tensor([1.0, -3.0]), tg.tensor([0.0, 0.0]))
    tensor(4.)
    """

    def forward(self, input, target):
        return F.l1_loss(input, target, reduction=self.reduction)


class _ClassIndexLoss(_WeightedLoss):
    """A loss of class scores against class indices: ``weight`` rescales each class, and
    targets equal to ``ignore_index`` contribute nothing."""

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction="mean",
    ):
        super().__init__(weight, size_average, reduce, reduction)
        self.ignore_index = ignore_index


class NLLLoss(_ClassIndexLoss):
    """Negative log likelihood: ``-input[n, target[n]]`` for log-probabilities ``input``.

    Targets equal to ``ignore_index`` contribute nothing; ``weight`` rescales each class.

    >>> import teachgrad as tg
    >>> logp = tg.tensor([[-0.5, -1.0], [-2.0, -0.1]])
    >>> tg.nn.NLLLoss()(logp, tg.tensor([0, 1]))
    tensor(0.3000)
    """

    def forward(self, input, target):
        return F.nll_loss(
            input, target, self.weight, ignore_index=self.ignore_index, reduction=self.reduction
        )


class CrossEntropyLoss(_ClassIndexLoss):
    """``NLLLoss(log_softmax(input))``: the classification loss on raw scores (logits).

    ``label_smoothing`` mixes the one-hot target with the uniform distribution.

    >>> import teachgrad as tg
    >>> loss = tg.nn.CrossEntropyLoss()(tg.zeros(1, 4), tg.tensor([2]))
    >>> round(loss.item(), 4)   # uniform scores over 4 classes: log(4)
    1.3863
    """

    def __init__(
        self,
        weight=None,
        size_average=None,
        ignore_index: int = -100,
        reduce=None,
        reduction: str = "mean",
        label_smoothing: float = 0.0,
    ):
        super().__init__(weight, size_average, ignore_index, reduce, reduction)
        self.label_smoothing = label_smoothing

    def forward(self, input, target):
        return F.cross_entropy(
            input,
            target,
            self.weight,
            ignore_index=self.ignore_index,
            reduction=self.reduction,
            label_smoothing=self.label_smoothing,
        )


class BCELoss(_WeightedLoss):
    """Binary cross entropy ``-(t log p + (1 - t) log(1 - p))`` for probabilities ``p``.

    >>> import teachgrad as tg
    >>> loss = tg.nn.BCELoss()(tg.tensor([0.5]), tg.tensor([1.0]))
    >>> round(loss.item(), 4)   # -log(0.5)
    0.6931
    """

    def forward(self, input, target):
        return F.binary_cross_entropy(input, target, weight=self.weight, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """``BCELoss(sigmoid(input))`` computed stably from raw scores; ``pos_weight`` weights
    the positive term (per class) to balance rare positives.

    >>> import teachgrad as tg
    >>> loss = tg.nn.BCEWithLogitsLoss()(tg.tensor([0.0]), tg.tensor([1.0]))
    >>> round(loss.item(), 4)   # sigmoid(0) = 0.5
    0.6931
    """

    def __init__(
        self, weight=None, size_average=None, reduce=None, reduction: str = "mean", pos_weight=None
    ):
        super().__init__(size_average, reduce, reduction)
        self.register_buffer("weight", weight)
        self.register_buffer("pos_weight", pos_weight)

    def forward(self, input, target):
        return F.binary_cross_entropy_with_logits(
            input, target, self.weight, reduction=self.reduction, pos_weight=self.pos_weight
        )

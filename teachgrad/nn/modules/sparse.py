"""``Embedding``: a lookup table from integer ids to learned vectors.

>>> import teachgrad as tg
>>> tg.nn.Embedding(10, 3)(tg.tensor([[1, 2], [4, 9]])).shape
teachgrad.Size([2, 2, 3])
"""

from __future__ import annotations

from ..._creation import empty
from ...autograd.grad_mode import no_grad
from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module


class Embedding(Module):
    """Row ``i`` of ``weight`` (shape ``(num_embeddings, embedding_dim)``) is the vector of id ``i``.

    ``weight`` starts as N(0, 1) samples. The row ``padding_idx`` (if given) starts
    at zero and gets no gradient: it stands for "no token".

    >>> import teachgrad as tg
    >>> emb = tg.nn.Embedding(5, 2, padding_idx=0)
    >>> emb
    Embedding(5, 2, padding_idx=0)
    >>> emb.weight[0].tolist()
    [0.0, 0.0]
    """

    def __init__(
        self,
        num_embeddings: int,
        embedding_dim: int,
        padding_idx: int | None = None,
        max_norm: float | None = None,
        norm_type: float = 2.0,
        scale_grad_by_freq: bool = False,
        sparse: bool = False,
        _weight=None,
        _freeze: bool = False,
        device=None,
        dtype=None,
    ):
        super().__init__()
        # (torch's options; F.embedding implements only their defaults, and says so)
        self.max_norm, self.norm_type = max_norm, norm_type
        self.scale_grad_by_freq, self.sparse = scale_grad_by_freq, sparse
        if padding_idx is not None:
            if not -num_embeddings <= padding_idx < num_embeddings:
                raise AssertionError("Padding_idx must be within num_embeddings")
            padding_idx %= num_embeddings  # store it non-negative, as torch does
        self.num_embeddings = num_embeddings
        self.embedding_dim = embedding_dim
        self.padding_idx = padding_idx
        if _weight is None:
            weight = empty((num_embeddings, embedding_dim), device=device, dtype=dtype)
            self.weight = Parameter(weight, requires_grad=not _freeze)
            self.reset_parameters()
        else:
            if list(_weight.shape) != [num_embeddings, embedding_dim]:
                raise AssertionError(
                    "Shape of weight does not match num_embeddings and embedding_dim"
                )
            self.weight = Parameter(_weight, requires_grad=not _freeze)

    def reset_parameters(self) -> None:
        """torch's default: every entry N(0, 1), then the padding row zero.

        >>> import teachgrad as tg
        >>> tg.manual_seed(0); emb = tg.nn.Embedding(1000, 10)
        >>> round(emb.weight.std().item(), 1)
        1.0
        """
        init.normal_(self.weight)
        if self.padding_idx is not None:
            with no_grad():
                self.weight[self.padding_idx].fill_(0)

    @classmethod
    def from_pretrained(cls, embeddings, freeze: bool = True, padding_idx: int | None = None):
        """An Embedding using the 2-D tensor ``embeddings`` as its weight (frozen by default).

        >>> import teachgrad as tg
        >>> emb = tg.nn.Embedding.from_pretrained(tg.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> emb(tg.tensor([1])), emb.weight.requires_grad
        (tensor([[3., 4.]]), False)
        """
        if embeddings.dim() != 2:
            raise AssertionError("Embeddings parameter is expected to be 2-dimensional")
        rows, cols = embeddings.shape
        return cls(rows, cols, padding_idx=padding_idx, _weight=embeddings, _freeze=freeze)

    def forward(self, input):
        return F.embedding(
            input,
            self.weight,
            self.padding_idx,
            self.max_norm,
            self.norm_type,
            self.scale_grad_by_freq,
            self.sparse,
        )

    def extra_repr(self) -> str:
        text = f"{self.num_embeddings}, {self.embedding_dim}"
        defaults = {
            "padding_idx": None,
            "max_norm": None,
            "norm_type": 2,
            "scale_grad_by_freq": False,
        }
        for name, default in defaults.items():  # the options not at their defaults, as torch
            if getattr(self, name) != default:
                text += f", {name}={getattr(self, name)}"
        return text + (", sparse=True" if self.sparse else "")

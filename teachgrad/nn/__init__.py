"""teachgrad.nn: layers (Modules), their parameters and initialisations, and ``functional``.

* ``Module`` and the layers (``Linear``, ``Conv2d``, ``ReLU``, ``Sequential`` ...): ``modules/``
* ``Parameter``, a tensor a Module learns: ``parameter.py``
* ``init``, the starting values of weights: ``init.py``
* ``functional`` (``F``), the same computations as plain functions: ``functional.py``

    >>> import teachgrad as tg
    >>> tg.nn.functional.relu(tg.tensor([-1.0, 2.0]))
    tensor([0., 2.])
    >>> tg.nn.Sequential(tg.nn.Linear(2, 1), tg.nn.Sigmoid())(tg.ones(3, 2)).shape
    teachgrad.Size([3, 1])
"""

from . import functional, init
from .modules import (
    GELU,
    BCELoss,
    BCEWithLogitsLoss,
    Conv2d,
    CrossEntropyLoss,
    Dropout,
    Embedding,
    Flatten,
    Fold,
    Identity,
    L1Loss,
    LayerNorm,
    Linear,
    LogSoftmax,
    Module,
    ModuleDict,
    ModuleList,
    MSELoss,
    NLLLoss,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Softmax,
    Tanh,
    Unflatten,
    Unfold,
    Upsample,
    UpsamplingBilinear2d,
    UpsamplingNearest2d,
)
from .parameter import Parameter

"""The layers of ``teachgrad.nn``, one family per file; ``module.py`` holds their base class.

>>> from teachgrad.nn.modules import Linear, Module
>>> issubclass(Linear, Module)
True
"""

from .activation import GELU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from .container import ModuleDict, ModuleList, Sequential
from .conv import Conv2d
from .dropout import Dropout
from .fold import Fold, Unfold
from .linear import Flatten, Identity, Linear, Unflatten
from .loss import BCELoss, BCEWithLogitsLoss, CrossEntropyLoss, L1Loss, MSELoss, NLLLoss
from .module import Module
from .normalization import LayerNorm
from .sparse import Embedding
from .upsampling import Upsample, UpsamplingBilinear2d, UpsamplingNearest2d

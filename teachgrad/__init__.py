"""teachgrad: automatic differentiation you can read, watch and be graded on.

The public surface mirrors ``torch``: ``import teachgrad as tg`` and use
``tg.tensor``, ``tg.autograd.grad``, ``tg.no_grad`` ... as you would torch's.
Nothing is defined here; it only re-exports.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> (x ** 2).sum().backward(); x.grad
    tensor([2., 4.])
"""

from math import inf, nan  # noqa: E402 - torch's constants (Python floats, as torch's are)

from . import (  # noqa: E402
    _C,  # noqa: E402 - torch._C's private helpers that torch's tests call
    _backend,
    _vmap_internals,  # torch's first vmap, deprecated
    autograd,  # noqa: E402,I001 - after Tensor: autograd builds on it
    cuda,
    linalg,
    nn,
    ops,  # noqa: E402
    optim,
    random,
    testing,
    utils,
)
from ._backend import bool_ as bool  # noqa: A004 - torch's name
from ._backend import (
    channels_last,
    channels_last_3d,
    contiguous_format,
    device,
    dtype,
    float16,
    float32,
    float64,
    get_default_device,
    get_default_dtype,
    int8,
    int16,
    int32,
    int64,
    layout,
    manual_seed,
    memory_format,
    preserve_format,
    promote_types,
    set_default_device,
    set_default_dtype,
    strided,
    uint8,
)
from ._creation import (
    arange,
    as_tensor,
    empty,
    empty_like,
    empty_strided,
    eye,
    from_dlpack,
    from_numpy,
    full,
    full_like,
    linspace,
    ones,
    ones_like,
    rand,
    rand_like,
    randint,
    randn,
    randn_like,
    tensor,
    zeros,
    zeros_like,
)
from ._tensor import Size, Tensor
from .autograd.anomaly_mode import is_anomaly_check_nan_enabled, is_anomaly_enabled
from .autograd.grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from .ops import *  # noqa: F403 - every op function is part of the public surface
from .ops import return_types
from .random import get_rng_state, set_rng_state
from .serialization import load, save
from .tensortypes import (
    BoolTensor,
    ByteTensor,
    CharTensor,
    DoubleTensor,
    FloatTensor,
    HalfTensor,
    IntTensor,
    LongTensor,
    ShortTensor,
    tensortype,
)

float = float32  # noqa: A001 - torch's aliases
double = float64
half = float16
long = int64
int = int32  # noqa: A001


def is_tensor(obj) -> bool:
    """True if ``obj`` is a teachgrad Tensor.

    >>> import teachgrad as tg
    >>> tg.is_tensor(tg.zeros(1)), tg.is_tensor([1.0])
    (True, False)
    """
    return isinstance(obj, Tensor)


__version__ = "0.1.0"

"""``teachgrad.autograd``: the engine, Functions, grad modes and gradient checking.

>>> import teachgrad as tg
>>> x = tg.tensor(2.0, requires_grad=True)
>>> tg.autograd.grad(x * x, x)
(tensor(4.),)
"""

from . import (
    _functions,  # (torch's legacy Resize and Type)
    anomaly_mode,
    engine,
    forward_ad,
    function,
    functional,
    grad_mode,
    graph,
    profiler,
)
from .anomaly_mode import (
    detect_anomaly,
    is_anomaly_check_nan_enabled,
    is_anomaly_enabled,
    set_detect_anomaly,
)
from .engine import BackwardStep, backward, backward_steps, grad
from .engine import calculate_shape as _calculate_shape  # (torch's private names)
from .engine import is_checkpoint_valid as _is_checkpoint_valid
from .explain import explain_grad
from .function import Function, FunctionCtx, NestedIOFunction, once_differentiable
from .grad_mode import (
    _force_original_view_tracking,
    enable_grad,
    inference_mode,
    is_multithreading_enabled,
    is_view_replay_enabled,
    no_grad,
    set_grad_enabled,
    set_multithreading_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck
from .profiler import _profiler_enabled, kineto_available
from .tape import RawSavedTensor as SavedTensor
from .variable import Variable

__all__ = [
    "anomaly_mode",
    "detect_anomaly",
    "is_anomaly_check_nan_enabled",
    "is_anomaly_enabled",
    "set_detect_anomaly",
    "BackwardStep",
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "NestedIOFunction",
    "SavedTensor",
    "Variable",
    "backward",
    "backward_steps",
    "enable_grad",
    "engine",
    "explain_grad",
    "forward_ad",
    "function",
    "functional",
    "grad",
    "grad_mode",
    "gradcheck",
    "gradgradcheck",
    "graph",
    "inference_mode",
    "is_multithreading_enabled",
    "no_grad",
    "once_differentiable",
    "profiler",
    "set_grad_enabled",
    "set_multithreading_enabled",
    "variable",
]

"""Two Functions from torch's ``Variable`` days: ``Resize`` (a new shape, the same number of
elements) and ``Type`` (a new dtype, deprecated since torch 2.1). Each is a plain custom
Function, the way a student would write it."""

import math
import warnings

from ..._tensor import wrap_array
from ..function import Function


class Resize(Function):
    """``Resize.apply(x, sizes)``: x's values in the shape ``sizes`` (as ``x.reshape``), in
    x's own memory when x is contiguous, as torch's does; backward gives the gradient x's shape.

    >>> import teachgrad as tg
    >>> x = tg.arange(6.0).reshape(2, 3).requires_grad_()
    >>> Resize.apply(x, (3, 2)).sum().backward(); x.grad
    tensor([[1., 1., 1.],
            [1., 1., 1.]])
    """

    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.sizes, ctx.numel, ctx.input_sizes = sizes, math.prod(sizes), tensor.size()
        if tensor.numel() != ctx.numel:
            shown = "x".join(map(str, tensor.shape))
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in total), "
                f"but the given tensor has a size of {shown} ({tensor.numel()} elements). "
                "autograd's resize can only change the shape of a given tensor, while preserving "
                "the number of elements. \n  Use reshape for a new shape of the same size, or "
                "resize_ (no gradient) to change the number of elements."
            )
        # (not a view in autograd's eyes: torch makes it with tensor.new(tensor))
        return wrap_array(tensor.contiguous()._data.reshape(tuple(sizes)))

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None


class Type(Function):
    """``Type.apply(x, dtype)``: x converted to ``dtype`` (or a type name such as
    ``"teachgrad.DoubleTensor"``); backward converts the gradient back. Deprecated, as in
    torch: use ``x.to(dtype)``.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     Type.apply(tg.ones(2), tg.float64).dtype
    teachgrad.float64
    """

    @staticmethod
    def forward(ctx, i, dest_type):
        warnings.warn(
            "`torch.autograd._functions.Type` is deprecated as of PyTorch 2.1, please use "
            "`torch.tensor.to(dtype=dtype)` instead.",
            FutureWarning,
            stacklevel=3,
        )
        ctx.input_dtype = i.dtype
        return i.type(dest_type)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.to(ctx.input_dtype), None

"""The tensor types of torch's Variable days: ``FloatTensor``, ``LongTensor`` ... and
``x.type()``.

Before dtypes, a tensor's element type was its class: ``torch.FloatTensor(2, 3)`` made one,
``isinstance(x, torch.FloatTensor)`` asked for one, ``x.type(torch.LongTensor)`` converted.
torch keeps them as classes whose ``isinstance`` looks at a tensor's dtype (and device);
so does teachgrad, for the CPU.

    >>> import teachgrad as tg
    >>> x = tg.zeros(2)
    >>> isinstance(x, tg.FloatTensor), x.type(), x.type(tg.LongTensor).dtype
    (True, 'teachgrad.FloatTensor', teachgrad.int64)
"""

from __future__ import annotations

from . import _backend
from ._creation import empty, tensor
from ._tensor import Tensor


class tensortype(type):  # noqa: N801 - torch's name
    """The class of the tensor types: ``isinstance(x, FloatTensor)`` is a dtype (and device)
    question; calling one makes a tensor of its dtype.

    >>> import teachgrad as tg
    >>> type(tg.FloatTensor) is tg.tensortype, tg.FloatTensor(2).dtype
    (True, teachgrad.float32)
    """

    def __instancecheck__(cls, obj) -> bool:
        return isinstance(obj, Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __call__(cls, *args):
        """``FloatTensor(2, 3)``: uninitialized, of those sizes; ``FloatTensor([1, 2])``: that
        data; ``FloatTensor()``: empty."""
        if all(isinstance(a, int) and not isinstance(a, bool) for a in args):
            return empty(*args or (0,), dtype=cls.dtype)
        if len(args) == 1 and isinstance(args[0], _backend.numpy_module().ndarray | list | tuple):
            return tensor(args[0], dtype=cls.dtype)
        raise TypeError(
            f"new(): invalid arguments for {cls.__name__}: {args!r}\n  Give sizes "
            f"({cls.__name__}(2, 3)) or data ({cls.__name__}([1, 2])); today: tg.tensor(..., "
            f"dtype={cls.dtype})."
        )

    def __repr__(cls) -> str:
        return f"<class 'teachgrad.{cls.__name__}'>"


def _tensortype(name: str, dtype) -> tensortype:
    doc = (
        f"The CPU tensors of dtype {dtype.name} (``isinstance``), and a maker of them.\n\n"
        f"    >>> import teachgrad as tg\n"
        f"    >>> isinstance(tg.zeros(1, dtype=tg.{dtype.name}), tg.{name}), tg.{name}(2).shape\n"
        f"    (True, teachgrad.Size([2]))\n"
    )
    attributes = {"dtype": dtype, "is_cuda": False, "__module__": "teachgrad", "__doc__": doc}
    return tensortype(name, (), attributes)


TYPES = {
    "FloatTensor": _backend.float32,
    "DoubleTensor": _backend.float64,
    "HalfTensor": _backend.float16,
    "LongTensor": _backend.int64,
    "IntTensor": _backend.int32,
    "ShortTensor": _backend.int16,
    "CharTensor": _backend.int8,
    "ByteTensor": _backend.uint8,
    "BoolTensor": _backend.bool_,
}
globals().update({name: _tensortype(name, dtype) for name, dtype in TYPES.items()})
_BY_DTYPE = {dtype: name for name, dtype in TYPES.items()}

__all__ = ["tensortype", *TYPES]


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """With no argument, this tensor's type name (``'teachgrad.FloatTensor'``; on a GPU
    ``'teachgrad.cuda.FloatTensor'``); with a tensor type, a dtype or a type name, this tensor
    converted to it (itself when it already is one).

    >>> import teachgrad as tg
    >>> tg.ones(2).type(tg.float64).dtype, tg.ones(2).type("teachgrad.IntTensor").dtype
    (teachgrad.float64, teachgrad.int32)
    """
    if dtype is None:
        where = "cuda." if self.device.type == "cuda" else ""
        return f"teachgrad.{where}{_BY_DTYPE[self.dtype]}"
    if isinstance(dtype, str):
        name = dtype.rpartition(".")[2]
        if name not in TYPES or dtype.partition(".")[0] not in ("torch", "teachgrad"):
            raise ValueError(f"invalid type: '{dtype}'")
        dtype = TYPES[name]
    elif isinstance(dtype, tensortype):
        dtype = dtype.dtype
    return self if self.dtype == dtype else self.to(dtype, non_blocking=non_blocking)


_type.__name__ = _type.__qualname__ = "type"
Tensor.type = _type

"""Functions that create tensors: from data, filled, ranges, random.

Every factory takes ``dtype``, ``device`` and ``requires_grad`` like torch's.
Python floats become the default dtype (float32), Python ints int64.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).shape, tg.arange(3), tg.tensor([1, 2]).dtype
    (teachgrad.Size([2, 3]), tensor([0, 1, 2]), teachgrad.int64)
"""

from __future__ import annotations

import warnings

from . import _backend
from ._backend import as_device, as_dtype, get_default_dtype
from ._grad_state import state as _grad_state
from ._tensor import Tensor, _new, new_counter


def _finish(data, requires_grad=False, name=None) -> Tensor:
    t = _new(Tensor)
    t._data = data
    t._counter = new_counter()
    if _grad_state.inference:
        t._inference = True
    if requires_grad:
        t.requires_grad = True  # the setter checks the dtype
    if name is not None:
        t.name = name
    return t


def _infer_dtype(data):
    """The dtype torch infers for nested Python data: bool < int64 < default float."""
    if isinstance(data, Tensor):
        return data.dtype
    if _backend.is_array(data) or hasattr(data, "dtype") and hasattr(data, "shape"):
        return _backend.from_numpy_dtype(data.dtype)
    kind = 0
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, Tensor):
            kind = max(kind, item.dtype._kind if item.dtype.is_floating_point else 1)
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            kind = max(kind, 1)
        elif isinstance(item, float):
            kind = 2
        elif hasattr(item, "dtype"):
            kind = max(kind, _backend.from_numpy_dtype(item.dtype)._kind)
        else:
            raise TypeError(f"Could not infer dtype of {type(item).__name__}")
    if kind == 0 and not _contains_only_bools(data) and _is_empty(data):
        return get_default_dtype()  # tensor([]) is float, as in torch
    if kind == 0 and _contains_only_bools(data):
        return _backend.bool_
    return get_default_dtype() if kind == 2 else _backend.int64


def _is_empty(data) -> bool:
    return isinstance(data, list | tuple) and all(_is_empty(d) for d in data)


def _contains_only_bools(data) -> bool:
    if isinstance(data, list | tuple):
        return len(data) > 0 and all(_contains_only_bools(d) for d in data)
    return isinstance(data, bool)


def _plain(data):
    """Nested data with Tensors replaced by host values."""
    if isinstance(data, Tensor):
        return data.tolist()
    if isinstance(data, list | tuple):
        return [_plain(d) for d in data]
    return data


def tensor(
    data, dtype=None, device=None, requires_grad=False, pin_memory=False, name=None
) -> Tensor:
    """A new tensor holding a copy of ``data`` (numbers, nested lists, arrays).

    >>> import teachgrad as tg
    >>> tg.tensor([[1, 2], [3, 4]], dtype=tg.float64, requires_grad=True)
    tensor([[1., 2.],
            [3., 4.]], dtype=teachgrad.float64, requires_grad=True)
    """
    if isinstance(data, Tensor):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.clone().detach() "
            "or sourceTensor.clone().detach().requires_grad_(True), rather than "
            "teachgrad.tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
    dt = as_dtype(dtype) if dtype is not None else _infer_dtype(data)
    dev = (
        as_device(device)
        if device is not None
        else (data.device if isinstance(data, Tensor) else _backend.get_default_device())
    )
    if isinstance(data, Tensor):
        array = _backend.to_device(data._data, dev).astype(dt.numpy, copy=True)
    elif _backend.is_array(data):
        array = _backend.to_device(data, dev).astype(dt.numpy, copy=True)
    else:
        array = _backend.make_array(_plain(data), dt.numpy, dev)
    return _finish(array, requires_grad, name)


def as_tensor(data, dtype=None, device=None) -> Tensor:
    """Like ``tensor`` but shares memory with a NumPy array (or Tensor) when it can.

    >>> import numpy as np, teachgrad as tg
    >>> a = np.zeros(2); t = tg.as_tensor(a); a[0] = 5; t
    tensor([5., 0.], dtype=teachgrad.float64)
    """
    if isinstance(data, Tensor):
        return data.to(dtype=dtype, device=device)
    if _backend.is_array(data):
        dt = as_dtype(dtype) if dtype is not None else _backend.from_numpy_dtype(data.dtype)
        # (torch: NumPy data goes to the default device, a GPU array stays where it is)
        on_host = isinstance(data, _backend.numpy_module().ndarray)
        dev = as_device(device if device is not None or on_host else _backend.device_of(data))
        array = _backend.to_device(data, dev)
        return _finish(array if array.dtype == dt.numpy else array.astype(dt.numpy))
    return tensor(data, dtype=dtype, device=device)


def from_numpy(array) -> Tensor:
    """A CPU tensor sharing memory with a NumPy array.

    >>> import numpy as np, teachgrad as tg
    >>> tg.from_numpy(np.arange(3))
    tensor([0, 1, 2])
    """
    if not isinstance(array, _backend.numpy_module().ndarray):
        raise TypeError(f"expected np.ndarray (got {type(array).__name__})")
    _backend.from_numpy_dtype(array.dtype)
    return _finish(array)


def from_dlpack(ext) -> Tensor:
    """A tensor sharing memory with another library's array or tensor (NumPy, CuPy, torch ...)
    through the DLPack protocol: CPU memory becomes a CPU tensor, CUDA memory a CUDA tensor.

    >>> import numpy as np, teachgrad as tg
    >>> a = np.arange(3.0); t = tg.from_dlpack(a); a[0] = 7.0; t
    tensor([7., 1., 2.], dtype=teachgrad.float64)
    """
    device_type, _ = ext.__dlpack_device__()
    if device_type == _DLPACK_CUDA:
        return _finish(_backend.cupy().from_dlpack(ext))
    return _finish(_backend.numpy_module().from_dlpack(ext))


_DLPACK_CUDA = 2  # DLPack's device-type code for CUDA memory (1 is the CPU)


def _size(size) -> tuple:
    if len(size) == 1 and isinstance(size[0], list | tuple):
        size = tuple(size[0])
    for s in size:
        if not isinstance(s, int) or s < 0:
            raise RuntimeError(
                f"Trying to create tensor with negative dimension {s}: {list(size)}"
                if isinstance(s, int)
                else f"size must be ints, got {type(s).__name__}"
            )
    return tuple(size)


def _filled(fill, size, dtype, device, requires_grad, default=None):
    dt = as_dtype(dtype) if dtype is not None else (default or get_default_dtype())
    xp, where = _backend.on_device(as_device(device))
    with where:
        data = (
            getattr(xp, fill)(_size(size), dt.numpy)
            if isinstance(fill, str)
            else xp.full(_size(size), fill[0], dt.numpy)
        )
    return _finish(data, requires_grad)


def zeros(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of zeros.

    >>> import teachgrad as tg
    >>> tg.zeros(2)
    tensor([0., 0.])
    """
    return _filled("zeros", size, dtype, device, requires_grad)


def ones(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor of ones.

    >>> import teachgrad as tg
    >>> tg.ones(2, dtype=tg.int64)
    tensor([1, 1])
    """
    return _filled("ones", size, dtype, device, requires_grad)


def empty(*size, dtype=None, device=None, requires_grad=False) -> Tensor:
    """An uninitialised tensor (its values are whatever was in memory).

    >>> import teachgrad as tg
    >>> tg.empty(2, 3).shape
    teachgrad.Size([2, 3])
    """
    return _filled("empty", size, dtype, device, requires_grad)


def full(size, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """A tensor filled with ``fill_value`` (its dtype inferred from the value).

    >>> import teachgrad as tg
    >>> tg.full((2,), 7)
    tensor([7, 7])
    """
    default = _backend.scalar_dtype(fill_value)
    return _filled(
        (fill_value,),
        tuple(size) if not isinstance(size, int) else (size,),
        dtype,
        device,
        requires_grad,
        default,
    )


def _like(fill, input, dtype, device, requires_grad, value=None):
    dt = dtype if dtype is not None else input.dtype
    dev = device if device is not None else input.device
    if fill == "full":
        return full(tuple(input.shape), value, dtype=dt, device=dev, requires_grad=requires_grad)
    return _filled(fill, tuple(input.shape), dt, dev, requires_grad)


def zeros_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Zeros with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.zeros_like(tg.ones(2, dtype=tg.float64))
    tensor([0., 0.], dtype=teachgrad.float64)
    """
    return _like("zeros", input, dtype, device, requires_grad)


def ones_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Ones with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.ones_like(tg.zeros(2, dtype=tg.int64))
    tensor([1, 1])
    """
    return _like("ones", input, dtype, device, requires_grad)


def empty_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uninitialised, with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.empty_like(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    """
    return _like("empty", input, dtype, device, requires_grad)


def full_like(input, fill_value, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``fill_value`` everywhere, with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.full_like(tg.zeros(2), 7.0)
    tensor([7., 7.])
    """
    return _like("full", input, dtype, device, requires_grad, fill_value)


def arange(start, end=None, step=1, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``start, start + step, ...`` up to (not including) ``end``.

    >>> import teachgrad as tg
    >>> tg.arange(5), tg.arange(0, 1, 0.25)
    (tensor([0, 1, 2, 3, 4]), tensor([0.0000, 0.2500, 0.5000, 0.7500]))
    """
    if end is None:
        start, end = 0, start
    numbers = (start, end, step)
    if dtype is None:
        dtype = (
            get_default_dtype() if any(isinstance(v, float) for v in numbers) else _backend.int64
        )
    if step == 0:
        raise RuntimeError("step must be nonzero")
    xp, where = _backend.on_device(as_device(device))
    with where:
        data = xp.arange(start, end, step).astype(as_dtype(dtype).numpy)
    return _finish(data, requires_grad)


def linspace(start, end, steps, dtype=None, device=None, requires_grad=False) -> Tensor:
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive.

    >>> import teachgrad as tg
    >>> tg.linspace(0, 1, 5)
    tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000])
    """
    xp, where = _backend.on_device(as_device(device))
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    with where:
        data = xp.linspace(start, end, steps).astype(dt.numpy)
    return _finish(data, requires_grad)


def eye(n, m=None, dtype=None, device=None, requires_grad=False) -> Tensor:
    """The identity matrix (``n`` x ``m``).

    >>> import teachgrad as tg
    >>> tg.eye(2)
    tensor([[1., 0.],
            [0., 1.]])
    """
    xp, where = _backend.on_device(as_device(device))
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    with where:
        data = xp.eye(n, m, dtype=dt.numpy)
    return _finish(data, requires_grad)


def _random(kind, size, dtype, device, requires_grad, **kw):
    dev = as_device(device)
    dt = as_dtype(dtype) if dtype is not None else get_default_dtype()
    if not dt.is_floating_point:
        raise RuntimeError(f"\"{kind}\" not implemented for '{dt.name}'")
    xp, where = _backend.on_device(dev)
    gen = _backend.generators.for_device(dev)
    with where:
        if kind == "normal":
            data = gen.standard_normal(
                _size(size), dtype=dt.numpy if dt.itemsize >= 4 else "float32"
            )
        else:
            data = gen.random(_size(size), dtype=dt.numpy if dt.itemsize >= 4 else "float32")
        data = data.astype(dt.numpy, copy=False)
    return _finish(data, requires_grad)


def randn(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Samples from the standard normal distribution (reproducible after ``manual_seed``).

    >>> import teachgrad as tg
    >>> tg.randn(2, 3).shape
    teachgrad.Size([2, 3])
    """
    return _random("normal", size, dtype, device, requires_grad)


def rand(*size, dtype=None, device=None, requires_grad=False, generator=None) -> Tensor:
    """Samples uniform on [0, 1).

    >>> import teachgrad as tg
    >>> bool(((tg.rand(100) >= 0) & (tg.rand(100) < 1)).all())
    True
    """
    return _random("uniform", size, dtype, device, requires_grad)


def randint(
    low, high=None, size=None, dtype=None, device=None, requires_grad=False, generator=None
) -> Tensor:
    """Random integers in ``[low, high)``.

    >>> import teachgrad as tg
    >>> tg.randint(0, 3, (5,)).dtype
    teachgrad.int64
    """
    if size is None:  # randint(high, size)
        low, high, size = 0, low, high
    if high is None:
        low, high = 0, low
    dev = as_device(device)
    xp, where = _backend.on_device(dev)
    with where:
        data = _backend.generators.for_device(dev).integers(low, high, tuple(size))
        data = data.astype((as_dtype(dtype) if dtype is not None else _backend.int64).numpy)
    return _finish(data, requires_grad)


def randn_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Standard normal samples with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.randn_like(tg.zeros(2, 3)).shape
    teachgrad.Size([2, 3])
    """
    return randn(
        *input.shape,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


def rand_like(input, dtype=None, device=None, requires_grad=False) -> Tensor:
    """Uniform [0, 1) samples with ``input``'s shape, dtype and device.

    >>> import teachgrad as tg
    >>> tg.rand_like(tg.zeros(4)).shape
    teachgrad.Size([4])
    """
    return rand(
        *input.shape,
        dtype=dtype or input.dtype,
        device=device or input.device,
        requires_grad=requires_grad,
    )


def _new_factory(fill):
    def method(self, *args, dtype=None, device=None, requires_grad=False):
        dtype = dtype or self.dtype
        device = device or self.device
        if fill == "tensor":
            return tensor(args[0], dtype=dtype, device=device, requires_grad=requires_grad)
        if fill == "full":
            return full(args[0], args[1], dtype=dtype, device=device, requires_grad=requires_grad)
        return _filled(fill, args, dtype, device, requires_grad)

    method.__name__ = f"new_{fill}"
    args = {"zeros": "2", "ones": "2", "empty": "2", "full": "(2,), 5", "tensor": "[5, 5]"}[fill]
    method.__doc__ = (
        f"A new tensor ({fill}) with this tensor's dtype and device by default.\n\n"
        f"    >>> import teachgrad as tg\n    >>> tg.zeros(1, dtype=tg.float64).new_{fill}({args}).dtype\n"
        "    teachgrad.float64\n"
    )
    return method


for _fill in ("zeros", "ones", "empty", "full", "tensor"):
    setattr(Tensor, f"new_{_fill}", _new_factory(_fill))

"""Ops that change which memory a tensor uses: ``resize_``, ``resize_as_``, ``set_`` (and
the deprecated out-of-place ``resize``); and that memory itself, as torch shows it:
``x.untyped_storage()`` (bytes), ``x.storage()`` (elements of x's dtype, deprecated).

A tensor reads a *storage* (its base's memory, see ``Tensor._storage_array``) through
its shape, strides and offset. ``resize_`` gives it a new shape, laid out row-major from
its offset: in the same storage when that is big enough, else in new memory that starts
with the old storage's values (the rest is uninitialised, as in torch). ``set_(source)``
makes it read ``source``'s memory, with ``source``'s shape and strides. Both keep the
tensor's own version counter and bump it, as any in-place change.

Autograd, as torch: a tensor that requires grad can't be resized (its gradient would not
match its shape); ``set_`` is recorded, but with a node that has no derivative
(``NotImplemented``: backward through it raises).

    >>> import teachgrad as tg
    >>> x = tg.arange(6.0)
    >>> x.resize_(2, 2)  # the same storage, fewer elements
    tensor([[0., 1.],
            [2., 3.]])
    >>> y = tg.zeros(3); y.set_(x), y._version
    (tensor([[0., 1.],
            [2., 3.]]), 1)
"""

from __future__ import annotations

import math
import warnings

from .._backend import address, array_module, device_of, strided_view
from .._printing import c_type_name
from .._profiling import recorded_as
from .._tensor import Size, Tensor, _as_ints, type_name, wrap_array
from ..autograd.anomaly_mode import _outside_teachgrad
from ..autograd.builtin import Builtin
from ..autograd.function import Function
from ..autograd.grad_mode import state as _grad_state
from ..autograd.tape import torch_cpp_node
from .inplace import _storage_memory, check_inplace

# --------------------------------------------------------------------------- resize_


def _sizes(sizes) -> tuple:
    """``resize_(2, 3)`` and ``resize_((2, 3))`` alike, as ints."""
    if len(sizes) == 1 and isinstance(sizes[0], tuple | list | Size):
        sizes = sizes[0]
    return _as_ints(sizes)


@recorded_as("aten::resize_")
def resize_(self, *sizes, memory_format=None):
    """Give this tensor the shape ``sizes``, laid out row-major from its storage offset: in
    its storage if that is big enough, else in new memory holding the old storage's values
    first (the rest uninitialised). The same shape changes nothing; another bumps the
    version. Refused for a tensor that requires grad, except in inference mode (where
    torch skips autograd's checks).

    >>> import teachgrad as tg
    >>> x = tg.arange(4.0); x.resize_(3), x._version
    (tensor([0., 1., 2.]), 1)
    """
    sizes = _sizes(sizes)
    if self.requires_grad and not _grad_state.inference:
        raise RuntimeError(
            "cannot resize variables that require grad\n  Its gradient would no longer match "
            "its shape: resize x.detach() (which shares the memory), or use reshape()."
        )
    if any(n < 0 for n in sizes):
        raise RuntimeError(
            f"numel: integer multiplication overflow\n  A size can't be negative: {list(sizes)}."
        )
    if sizes == self.shape:  # (torch keeps the strides too, and the version)
        return self
    offset, n = self.storage_offset(), math.prod(sizes)
    memory = _storage_memory(self)
    if offset + n > memory.size:
        memory = _grown_storage(self, memory, offset + n)
    self._data = memory[offset : offset + n].reshape(sizes)
    self._counter.bump("resize_")
    return self


def _grown_storage(t, memory, size):
    """New memory of ``size`` elements for ``t``'s storage, starting with its old values.
    torch grows the storage itself, so every tensor on it moves along; here ``t`` and its
    base do (other views of the base keep reading the old memory)."""
    new = array_module(memory).empty(size, dtype=memory.dtype)
    new[: memory.size] = memory
    base = t._base
    if base is not None:  # the base reads the new memory, laid out as before
        strides = tuple(s * new.itemsize for s in base.stride())
        base._data = strided_view(new[base.storage_offset() :], base._data.shape, strides)
    return new


@recorded_as("aten::resize_as_")
def resize_as_(self, the_template, *, memory_format=None):
    """``resize_`` to ``the_template``'s shape.

    >>> import teachgrad as tg
    >>> tg.zeros(4).resize_as_(tg.ones(2, 2)).shape
    teachgrad.Size([2, 2])
    """
    if not isinstance(the_template, Tensor):
        raise TypeError(
            "resize_as_(): argument 'the_template' (position 1) must be Tensor, not "
            f"{type_name(the_template)}"
        )
    return resize_(self, the_template.shape)


class Resize(Function):
    """The deprecated out-of-place ``resize`` (torch's ``autograd._functions.Resize``): a
    reshape that keeps the number of elements, with a custom backward."""

    @staticmethod
    def forward(ctx, tensor, sizes):
        ctx.numel, ctx.input_sizes = math.prod(sizes), tensor.shape
        if tensor.numel() != ctx.numel:
            raise RuntimeError(
                f"requested resize to {'x'.join(map(str, sizes))} ({ctx.numel} elements in "
                f"total), but the given tensor has a size of {'x'.join(map(str, tensor.shape))} "
                f"({tensor.numel()} elements). autograd's resize can only change the shape of a "
                "given tensor, while preserving the number of elements. \n  Use reshape(), or "
                "resize_() on a tensor that does not require grad."
            )
        return tensor.contiguous().view(*sizes)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.contiguous().view(ctx.input_sizes), None


def resize(self, *sizes):
    """Deprecated: a tensor of shape ``sizes`` with this one's elements (their number must
    not change); it warns, as torch's. Use ``reshape``.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings(record=True):
    ...     tg.arange(4.0).resize(2, 2).shape
    teachgrad.Size([2, 2])
    """
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=_outside_teachgrad())
    return Resize.apply(self, _sizes(sizes))


# --------------------------------------------------------------------------- set_


class _Set(Builtin):
    """The node of a recorded ``set_``: torch gives it no derivative."""

    node_name, aten_name = "NotImplemented", "aten::set_"
    formula = {"self": "no derivative: backward raises", "source": "no derivative: backward raises"}

    @staticmethod
    def forward(ctx, old, source):
        return source._data

    @staticmethod
    def backward(ctx, grad):
        raise RuntimeError(
            "derivative for set_ is not implemented\n  set_ swaps a tensor's memory for "
            "another's: no gradient flows through it. Use the source tensor itself instead."
        )


torch_cpp_node(_Set._backward_cls)  # (torch's name: torch::autograd::NotImplemented)


def set_(self, source=None):
    """Make this tensor read ``source``'s memory with ``source``'s shape, strides and offset
    (no argument: empty new memory). The two then share memory but not their versions: this
    tensor's is bumped. Recorded when either requires grad, with a node without derivative.
    A leaf gets a new AccumulateGrad node, as in torch: graphs made before send gradients
    to the old one, which ``autograd.grad(out, x)`` no longer finds.

    >>> import teachgrad as tg
    >>> x, y = tg.zeros(2), tg.arange(3.0)
    >>> x.set_(y); x.data_ptr() == y.data_ptr(), x._version, y._version
    tensor([0., 1., 2.])
    (True, 1, 0)
    """
    if source is None:
        source = wrap_array(array_module(self._data).empty(0, dtype=self._data.dtype))
    if not isinstance(source, Tensor):
        raise TypeError(
            f"set_() received an invalid combination of arguments - got ({type_name(source)}), "
            "but expected one of:\n  set_() takes a tensor (or nothing, for empty memory)."
        )
    if source._data.dtype != self._data.dtype:
        raise RuntimeError(
            f"Could not set tensor of type {c_type_name(source._data.dtype.name)} to a tensor "
            f"of type {c_type_name(self._data.dtype.name)}\n  Both must have one dtype: "
            "convert the source first, e.g. source.to(x.dtype)."
        )
    record = _grad_state.enabled and (self.requires_grad or source.requires_grad)
    check_inplace(self, "set_", record)
    if record:  # the node's input is the old value, with the old history
        old = Tensor._make(self._data)
        old._grad_fn, old._output_nr = self._grad_fn, self._output_nr
        old._requires_grad = self.requires_grad
        self._rebase_history(_Set.apply(old, source)._grad_fn, 0)
    self._data = source._data
    self._counter.bump("set_")
    self._acc_ref = None  # (torch's reset_grad_accumulator: the old node is not this tensor's)
    return self


# --------------------------------------------------------------------------- storages


class UntypedStorage:
    """A tensor's storage as torch's ``UntypedStorage``: the bytes of the memory it and its
    views read (``Tensor._storage_array``), whatever their dtype.

    >>> import teachgrad as tg
    >>> x = tg.zeros(2, 3)
    >>> x[1].untyped_storage().nbytes(), x[1].untyped_storage().data_ptr() == x.data_ptr()
    (24, True)
    """

    def __init__(self, memory):
        self._memory = memory  # (the owning array: views of one storage find the same one)

    def nbytes(self) -> int:
        """The storage's size in bytes."""
        return self._memory.nbytes

    def size(self) -> int:
        """Its length: bytes, for an untyped storage."""
        return len(self)

    def __len__(self) -> int:
        return self.nbytes() // self.element_size()

    def element_size(self) -> int:
        """Bytes per element: 1 here (an untyped storage holds bytes)."""
        return 1

    def data_ptr(self) -> int:
        """Where the storage starts in memory (a view's ``data_ptr()`` adds its offset)."""
        return address(self._memory)

    @property
    def device(self):
        """The device the memory is on."""
        return device_of(self._memory)


class TypedStorage(UntypedStorage):
    """A tensor's storage counted in elements of its dtype: ``x.storage()``, which torch
    deprecates in favour of ``x.untyped_storage()``.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     len(tg.zeros(5)[:4].storage())
    5
    """

    def __init__(self, memory, dtype):
        super().__init__(memory)
        self.dtype = dtype

    def element_size(self) -> int:
        """Bytes per element of the storage's dtype."""
        return self.dtype.itemsize

    def untyped(self) -> UntypedStorage:
        """The same memory, in bytes."""
        return UntypedStorage(self._memory)


def untyped_storage(self) -> UntypedStorage:
    """The memory this tensor reads, in bytes (shared by all its views).

    >>> import teachgrad as tg
    >>> tg.zeros(3).untyped_storage().nbytes()
    12
    """
    return UntypedStorage(self._storage_array())


def storage(self) -> TypedStorage:
    """The memory this tensor reads, counted in its dtype's elements. Deprecated, as in torch
    (the first call warns): use ``untyped_storage()``.

    >>> import teachgrad as tg, warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     len(tg.zeros(2, 3).t().storage())
    6
    """
    if not _TYPED_STORAGE_WARNED:  # (torch warns once per process)
        _TYPED_STORAGE_WARNED.append(True)
        warnings.warn(_TYPED_STORAGE_DEPRECATED, UserWarning, stacklevel=_outside_teachgrad())
    return TypedStorage(self._storage_array(), self.dtype)


_TYPED_STORAGE_WARNED = []
_TYPED_STORAGE_DEPRECATED = (
    "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the "
    "only storage class. This should only matter to you if you are using storages directly.  "
    "To access UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()"
)


METHODS = {
    "resize_": resize_,
    "resize_as_": resize_as_,
    "resize": resize,
    "set_": set_,
    "storage": storage,
    "untyped_storage": untyped_storage,
}

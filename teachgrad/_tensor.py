"""``Tensor``: a backend array plus the autograd facts about it.

A Tensor holds ``_data`` (a NumPy or CuPy array) and, for autograd:

* ``grad_fn`` and ``_output_nr``: which node made it, and which of that node's
  outputs it is (None for leaves);
* ``requires_grad`` and ``grad``;
* ``_counter``: the version counter of its storage, shared with every view of
  the same memory and bumped by each in-place change;
* ``_base``: the tensor it is a view of (None if it owns its memory).

The arithmetic methods (``+``, ``.sum()``, ``.reshape()`` ...) are the ops of
``teachgrad/ops``, attached in ``teachgrad/ops/__init__.py``; this module holds
only what is about the tensor itself.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    >>> x.shape, x.dtype, x.is_leaf
    (teachgrad.Size([3]), teachgrad.float32, True)
"""

from __future__ import annotations

import copy as _copy
import operator
import warnings
import weakref
from collections import deque

from . import _backend, _events, _seam
from ._grad_state import state as _grad_state
from ._hooks import HookDict, add_hook, hooks_of
from ._printing import c_type_name, scalar_name, tensor_repr


class Size(tuple):
    """A tensor's shape: a tuple that prints like torch's ``torch.Size``.

    >>> import teachgrad as tg
    >>> tg.zeros(2, 3).shape
    teachgrad.Size([2, 3])
    """

    __slots__ = ()

    def __repr__(self):
        return f"teachgrad.Size({list(self)})"

    # a slice, a sum or a repetition of a Size is a Size, as torch's (an element is an int)
    def __getitem__(self, index):
        part = tuple.__getitem__(self, index)
        return Size(part) if type(index) is slice else part

    def __add__(self, other):
        return Size(tuple.__add__(self, other))

    def __radd__(self, other):
        return Size(tuple.__add__(other, self)) if isinstance(other, tuple) else NotImplemented

    def __mul__(self, n):
        return Size(tuple.__mul__(self, n))

    __rmul__ = __mul__

    def numel(self) -> int:
        n = 1
        for s in self:
            n *= s
        return n


class VersionCounter:
    """How many times a storage (and so every view of it) has been changed in place.

    ``recent`` holds ``(version, op name)`` for the last few bumps, for error messages
    (only the last few: an optimizer bumps its parameters every step, forever).

    >>> c = VersionCounter(); c.bump("add_"); c.bump("mul_"); c.version, list(c.recent)
    (2, [(1, 'add_'), (2, 'mul_')])
    """

    # Class defaults instead of __init__: a counter is made for every new tensor, so it
    # must be cheap; ``new_counter()`` and ``VersionCounter()`` give the same thing.
    version = 0
    recent = None
    KEPT = 8  # bumps remembered

    def bump(self, op_name: str) -> None:
        self.version += 1
        if self.recent is None:
            self.recent = deque(maxlen=self.KEPT)
        self.recent.append((self.version, op_name))
        if _events.VersionBumped.on:
            _events.emit(_events.VersionBumped, counter=self, version=self.version, op=op_name)


class _EmptyEdge:
    """``needs_input_grad``'s entry for an input that requires grad through its base but has
    an empty edge (a view made under no_grad, or before its base required grad): false, so
    the op computes no gradient for it, yet the op records (see ``needs_grad``)."""

    __slots__ = ()

    def __bool__(self):
        return False

    def __repr__(self):
        return "False"


EMPTY_EDGE = _EmptyEdge()

_NON_LEAF_GRAD = (
    "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
    "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
    "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
    "by mistake, make sure you access the leaf Tensor instead. See "
    "github.com/pytorch/pytorch/pull/30531 for more information."
)


class Tensor:
    """A multi-dimensional array that can record the ops applied to it.

    Create tensors with ``teachgrad.tensor``, ``zeros``, ``randn``, ...; the legacy
    constructor ``Tensor(2, 3)`` (uninitialised) and ``Tensor([1, 2])`` (float)
    also work, as in torch.

    >>> import teachgrad as tg
    >>> tg.Tensor([1, 2])
    tensor([1., 2.])
    """

    # Class-level defaults: a new tensor stores only what differs from these,
    # which keeps creating one (done for every op) cheap.
    _grad_fn = None
    _grad = None
    _requires_grad = False
    _output_nr = 0
    _base = None
    _inference = False
    _counted = False  # (an inference tensor with a version counter: see detach)
    _acc_ref = None
    _view_base_fn = None  # for views: the base's grad_fn when this view's grad_fn was made
    _own_requires_grad = False  # requires_grad was set on this tensor itself (not inherited)
    # for views: "no_grad", "inference" or "multi_output" when torch restricts in-place changes,
    # and the storage's version when its grad_fn was made (None: not followed, e.g. the engine's)
    _creation_meta = None
    _view_version = None
    _pinned = False  # made by pin_memory()
    _fw_grad = None  # forward-mode AD: the tangent, valid while _fw_level is the open level
    _fw_level = None
    __array_priority__ = 1000  # so numpy_array * tensor calls Tensor.__rmul__

    def __init__(self, *args, dtype=None, device=None):
        dev = _backend.as_device(device)
        dt = _backend.as_dtype(dtype) if dtype is not None else _backend.get_default_dtype()
        if len(args) == 1 and not isinstance(args[0], int):
            data = args[0]
            data = data._data if isinstance(data, Tensor) else data
            self._data = _backend.make_array(
                _backend.to_device(data, _backend.CPU)
                if _backend.is_array(data) and dev.type == "cpu"
                else data,
                dt.numpy,
                dev,
            )
        else:
            xp, where = _backend.on_device(dev)
            with where:
                self._data = xp.empty(tuple(args), dt.numpy)
        self._data = _backend.with_empty_strides(self._data)
        self._counter = new_counter()
        self._inference = _grad_state.inference

    @staticmethod
    def _make(data, counter=None, base=None) -> Tensor:
        """Wrap a backend array (internal: no copy, no checks)."""
        t = _new(Tensor)
        t._data = data if data.size else _backend.with_empty_strides(data)
        t._counter = new_counter() if counter is None else counter
        if base is not None:
            t._base = base
        return t

    # ------------------------------------------------------------------ autograd facts
    @property
    def name(self):
        """A name for pictures of the graph (``t.name = "W1"``); None by default.

        >>> import teachgrad as tg
        >>> w = tg.ones(2, requires_grad=True); w.name = "w"; (w * 2).sum().grad_fn.name()
        'SumBackward0'
        """
        return self.__dict__.get("_name")

    @name.setter
    def name(self, value) -> None:
        self.__dict__["_name"] = value
        fn = self._grad_fn
        if fn is not None:  # the graph remembers what the user called this output of fn
            if fn._output_names is None:
                fn._output_names = {}
            fn._output_names[self._output_nr] = value

    @property
    def requires_grad(self) -> bool:
        """Whether gradients will be computed for this tensor (for a view: also when its base
        requires grad; reading this never rebuilds a view's history, as in torch)."""
        base = self._base
        return self._requires_grad or (base is not None and base._requires_grad)

    @requires_grad.setter
    def requires_grad(self, value: bool) -> None:
        if not isinstance(value, bool):  # 1, "yes", None and NumPy's bools too, as torch
            raise RuntimeError(
                "requires_grad must be a bool\n"
                f"  It was {type_name(value)} {value!r}; write True or False."
            )
        if self._grad_fn is not None and value:
            return  # a non-leaf already requires grad: asking again changes nothing (as torch)
        if self._grad_fn is not None:
            hint = (
                ""
                if value
                else (
                    " If you want to use a computed variable in a subgraph that doesn't require "
                    "differentiation use var_no_grad = var.detach()."
                )
            )
            raise RuntimeError(
                "you can only change requires_grad flags of leaf variables." + hint + "\n  This "
                f"tensor was made by {self._grad_fn.name()}; its requires_grad follows from its inputs."
            )
        if value and self._data.dtype.kind != "f":
            self._refuse_grad(
                "only Tensors of floating point and complex dtype can require gradients"
            )
        if value and self._inference and not _grad_state.inference:
            raise RuntimeError(
                "Setting requires_grad=True on inference tensor outside InferenceMode is not allowed."
            )
        self._requires_grad = value
        self._own_requires_grad = value

    @requires_grad.deleter
    def requires_grad(self) -> None:
        raise RuntimeError(  # (torch's setter, given nothing)
            "requires_grad must be a bool\n  requires_grad is always True or False: set it to "
            "False, or use t.detach(), instead of deleting it."
        )

    def requires_grad_(self, *args, requires_grad: bool = True) -> Tensor:
        """``requires_grad_(requires_grad=True)``: set ``requires_grad`` in place, return self.

        Like the setter, but refused in the words of a method: a non-bool is a TypeError
        naming the argument, and its position when it was given by position (``*args`` tell
        which it was), and an integer tensor is told torch's shorter line.

        >>> import teachgrad as tg
        >>> tg.zeros(2).requires_grad_().requires_grad
        True
        """
        if len(args) > 1:
            raise TypeError(
                f"requires_grad_() takes from 0 to 1 positional arguments but {len(args)} were given"
            )
        if args:
            (requires_grad,) = args
        check_bool("requires_grad_", "requires_grad", requires_grad, 1 if args else None)
        if requires_grad and self._data.dtype.kind != "f":
            self._refuse_grad("only Tensors of floating point dtype can require gradients")
        self.requires_grad = requires_grad
        return self

    def _refuse_grad(self, line: str) -> None:
        """torch's ``line`` refusing grad to an integer tensor, then how to fix it."""
        raise RuntimeError(
            f"{line}\n  This tensor is {self.dtype}; make it float first, e.g. "
            "tg.tensor([1, 2], dtype=tg.float32) or x.float()."
        )

    @property
    def grad_fn(self):
        """The node that created this tensor (None for leaves), e.g. ``<MulBackward0>``."""
        if self._base is not None:
            self._refresh_view(asked=True)
        return self._grad_fn

    @property
    def output_nr(self) -> int:
        """Which output of its ``grad_fn`` this tensor is (0 for a leaf), as in torch."""
        return self._output_nr

    def _refresh_view(self, asked=False) -> None:
        """After an in-place change through another alias rewrote the base's history,
        give this view a new grad_fn reading from the base's new history (as torch does).
        A restricted view refuses when its history is ``asked`` for, or needed (grad mode)."""
        base = self._base
        changed = base._grad_fn is not self._view_base_fn
        # torch also regenerates after an unrecorded change (under no_grad): the version moved
        stale = self._view_version is not None and self._counter.version != self._view_version
        # it follows a base that requires grad; or, with a history of its own, one that was
        # detach_()ed and has changed since (its new node then has an empty edge, as torch's)
        follows = base._requires_grad or stale and self._grad_fn is not None
        restricted = self._creation_meta is not None and follows
        if restricted and (_grad_state.enabled or asked) and (changed or stale):
            _seam.refuse_stale_view(self)  # unbind()/split() outputs and no_grad views can't follow
        if not changed and (restricted or not stale):
            return
        if follows:
            _seam.regenerate_view_grad_fn(self)  # may refuse, as torch does for some kinds of views
        self._view_base_fn = base._grad_fn
        self._view_version = self._counter.version

    def _view_requires_grad(self, builtin=None):
        """For an op on this view: bring its history up to date (an in-place change through
        another alias may have rewritten it), then say whether the op records. A view requires
        grad when its base does, even a view made before the base started to (or under
        no_grad): its edge is then empty, and for a built-in op (``builtin``) the answer is
        ``EMPTY_EDGE``: the op records, but computes and saves nothing for this input's
        gradient (torch's ``should_compute_output``).

        >>> import teachgrad as tg
        >>> b = tg.ones(3); v = b[:2]; _ = b.requires_grad_()
        >>> v._view_requires_grad(), (v * 2).requires_grad
        (True, True)
        """
        self._refresh_view()
        if not (self._requires_grad or self._base._requires_grad):
            return False
        empty = self._grad_fn is None and not self._own_requires_grad
        return EMPTY_EDGE if empty and builtin is not None else True

    @property
    def is_leaf(self) -> bool:
        """True for tensors not made by a recorded op (all tensors that don't require grad)."""
        return self.grad_fn is None

    @property
    def grad(self):
        """The gradient accumulated by backward (leaves, and non-leaves after ``retain_grad()``).
        (It reads the history the tensor has, as torch's does: a view whose base changed in
        place is not brought up to date here, so reading ``.grad`` never raises.)"""
        if self._grad is None and self._grad_fn is not None and not self.retains_grad:
            warnings.warn(_NON_LEAF_GRAD, UserWarning, stacklevel=2)
        return self._grad

    @grad.setter
    def grad(self, value) -> None:
        if value is not None:
            if not isinstance(value, Tensor):
                raise TypeError(
                    f"assigned grad expected to be a Tensor or None but got grad of type "
                    f"{type_name(value)}"
                )
            if value is self:  # its grad would be accumulated into itself
                raise RuntimeError("can't assign Variable as its own grad")
            if value.dtype is not self.dtype:
                got, want = str(value._data.dtype), str(self._data.dtype)
                raise RuntimeError(
                    f"attempting to assign a gradient with dtype '{c_type_name(got)}' to a tensor "
                    f"with grad_dtype '{scalar_name(want)}'. The gradient must match the tensor's "
                    "grad_dtype (defaults to the tensor's dtype). You can set the tensor's "
                    "grad_dtype attribute with a specific dtype, or None to allow any dtype. Set "
                    "grad_dtype with caution. Diverging the dtypes of a tensor and its gradient may "
                    "break downstream systems that assume they match.\n  A gradient of "
                    f"{value.dtype} for a tensor of {self.dtype}: convert it first, with "
                    f"`.to({self.dtype})`."
                )
            if value.device != self.device:
                raise RuntimeError(
                    f"assigned grad has data located on a different device "
                    f"({value.device} vs {self.device})"
                )
            if value.shape != self.shape:
                raise RuntimeError(
                    f"attempting to assign a gradient of size '{list(value.shape)}' to a tensor "
                    f"of size '{list(self.shape)}'. Please ensure that the gradient and the "
                    "tensor are the same size"
                )
        self._grad = value

    @grad.deleter
    def grad(self) -> None:
        self._grad = None

    @property
    def data(self) -> Tensor:
        """The same memory as a tensor outside autograd (own version counter, no grad)."""
        return Tensor._make(self._data)

    @data.setter
    def data(self, value: Tensor) -> None:
        if not isinstance(value, Tensor):
            raise TypeError(f"Variable data has to be a tensor, but got {type(value).__name__}")
        if self._requires_grad and value._data.dtype.kind != "f":
            raise RuntimeError(
                "data set to a tensor that requires gradients must be floating point or complex dtype"
            )
        old, new = self._data, value._data
        if old.dtype != new.dtype or _backend.device_of(old) != _backend.device_of(new):
            self._acc_ref = None  # (torch's: a new dtype or device, a new AccumulateGrad)
        self._data = new

    @data.deleter
    def data(self) -> None:
        raise RuntimeError(
            "Deleting tensor data is not allowed. Delete tensor instead!\n"
            "  A tensor always has its memory; `del x` drops the tensor itself."
        )

    @property
    def volatile(self) -> bool:
        """Always False: volatile was removed in torch 0.4 (use ``no_grad()``); reading it warns.

        >>> import teachgrad as tg, warnings
        >>> with warnings.catch_warnings(record=True):  # (it warns)
        ...     tg.ones(1).volatile
        False
        """
        warnings.warn(
            "volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2
        )
        return False

    @property
    def _version(self) -> int:
        """How many in-place changes this tensor's storage has seen."""
        if self._inference and not self._counted:
            raise RuntimeError(
                "Inference tensors do not track version counter.\n  This tensor was made in "
                "inference_mode(), which skips the bookkeeping autograd needs."
            )
        return self._counter.version

    @property
    def retains_grad(self) -> bool:
        """True for a non-leaf on which ``retain_grad()`` was called (a view's history is
        read as it is, not brought up to date, as in torch: asking never raises)."""
        node = self._grad_fn
        return bool(node is not None and node._retain_grad and self._output_nr in node._retain_grad)

    def retain_grad(self) -> None:
        """Keep ``.grad`` for this non-leaf tensor during backward (no-op on leaves).

        >>> import teachgrad as tg
        >>> x = tg.ones(2, requires_grad=True); h = x * 2; h.retain_grad()
        >>> h.sum().backward(); h.grad
        tensor([1., 1.])
        """
        if not self._requires_grad:
            raise RuntimeError("can't retain_grad on Tensor that has requires_grad=False")
        if self.grad_fn is None:
            return
        node = self.grad_fn
        if node._retain_grad is None:
            node._retain_grad = {}
        node._retain_grad[self._output_nr] = weakref.ref(self)

    def register_hook(self, hook):
        """Call ``hook(grad)`` when this tensor's gradient is computed; a returned tensor replaces it.

        >>> import teachgrad as tg
        >>> x = tg.ones(2, requires_grad=True)
        >>> h = x.register_hook(lambda g: g * 10)
        >>> (x * 1).sum().backward(); x.grad
        tensor([10., 10.])
        >>> h.remove()
        """
        if not self._requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        node = self.grad_fn
        if node is None:  # a leaf: its AccumulateGrad node runs the hooks
            return add_hook(hooks_of(self, "_backward_hooks"), hook)
        # a non-leaf: the hook lives on the node, which outlives this Tensor object
        if node._tensor_hooks is None:
            node._tensor_hooks = {}
        return add_hook(node._tensor_hooks.setdefault(self._output_nr, HookDict()), hook)

    def register_post_accumulate_grad_hook(self, hook):
        """Call ``hook(tensor)`` after the gradient was accumulated into this leaf's ``.grad``.

        >>> import teachgrad as tg
        >>> w = tg.ones(2, requires_grad=True)
        >>> _ = w.register_post_accumulate_grad_hook(lambda p: print(p.grad))
        >>> (w * 3).sum().backward()
        tensor([3., 3.])
        """
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        if self.grad_fn is not None:
            raise RuntimeError(
                "post accumulate grad hooks cannot be registered on non-leaf tensors"
            )
        return add_hook(hooks_of(self, "_post_acc_hooks"), hook)

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None) -> None:
        """Compute the gradient of this tensor w.r.t. the graph leaves (see ``autograd.backward``).

        >>> import teachgrad as tg
        >>> x = tg.tensor(3.0, requires_grad=True); (x * x).backward(); x.grad
        tensor(6.)
        """
        _seam.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def _edge(self):
        """The graph edge gradients for this tensor flow into: ``(node, input_nr)``."""
        if self._base is not None:
            self._refresh_view()
        if self._grad_fn is not None:
            return (self._grad_fn, self._output_nr)
        # a view without a grad_fn (made under no_grad or inference_mode) requires grad because
        # its base does, but has no gradient slot of its own unless requires_grad_() was set on
        # it: gradients sent to it go nowhere (as torch's, with no grad accumulator)
        if self._requires_grad and (self._base is None or self._own_requires_grad):
            return (self._grad_accumulator(), 0)
        return (None, 0)

    def _grad_accumulator(self):
        acc = self._acc_ref and self._acc_ref()  # (a weak reference: its node may be gone)
        if acc is None:
            acc = _seam.AccumulateGrad(self)
            self._acc_ref = weakref.ref(acc)  # weak: the graph, not the tensor, keeps it alive
        return acc

    def _alias(self) -> Tensor:
        """A new tensor object on the same memory and version counter (a view of self)."""
        if self._inference:  # as torch's: no view, for there is no version counter to share
            t = Tensor._make(self._data)
            t._inference = True
            return t
        base = self._base if self._base is not None else self
        t = Tensor._make(self._data, self._counter, base)
        t._view_base_fn = base._grad_fn
        t._view_version = self._counter.version
        return t

    def _rebase_history(self, node, output_nr, input_index=0) -> None:
        """Make ``node`` (which changed this tensor in place; it was its input ``input_index``)
        the new history of this tensor, and of its base if it is a view."""
        if self._grad_fn is None and self._requires_grad and self._base is None:
            raise RuntimeError(
                "a leaf Variable that requires grad has been used in an in-place operation.\n  A Function "
                "marked it dirty (changed it in place); a leaf that requires grad must not change."
            )
        retained = self.retains_grad
        if retained:  # retain_grad() follows the tensor to its new history
            del self._grad_fn._retain_grad[self._output_nr]
        if self._base is None:
            self._grad_fn = node
            self._output_nr = output_nr
            self._requires_grad = True
        else:
            _seam.rebase_view_history(self, node, input_index)
        if retained:
            self.retain_grad()

    def detach(self) -> Tensor:
        """The same memory and version counter, cut from the graph (requires_grad=False).

        >>> import teachgrad as tg
        >>> y = (tg.ones(2, requires_grad=True) * 2).detach(); y.requires_grad, y.is_leaf
        (False, True)
        """
        if self._inference and not _grad_state.inference:
            # torch's quirk: an inference tensor detached outside inference_mode is still one,
            # but has a version counter of its own, so it may change in place
            t = Tensor._make(self._data)
            t._inference = t._counted = True
            return t
        t = Tensor._make(self._data, self._counter)
        t._inference = self._inference
        return t

    def detach_(self) -> Tensor:
        """Detach this tensor from the graph in place (not allowed on views).

        >>> import teachgrad as tg
        >>> y = tg.ones(2, requires_grad=True) * 2; y.detach_().requires_grad
        False
        """
        if self._base is not None:
            raise RuntimeError(
                "Can't detach views in-place. Use detach() instead. If you are using "
                "DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as "
                "True, gradients are views of DDP buckets, and hence detach_() cannot be called on "
                "these gradients. To fix this error, please refer to the Optimizer.zero_grad() "
                "function in torch/optim/optimizer.py as the solution.\n  detach_() on a view "
                "is not allowed: the view shares its base's history; use v = v.detach()."
            )
        self._grad_fn = None
        self._requires_grad = False
        self._fw_grad = None  # forward AD: the tangent goes too, as with detach()
        return self

    def is_inference(self) -> bool:
        """True for tensors created inside ``inference_mode()``.

        >>> import teachgrad as tg
        >>> tg.ones(1).is_inference()
        False
        """
        return self._inference

    # ------------------------------------------------------------------ shape and memory
    @property
    def shape(self) -> Size:
        return Size(self._data.shape)

    def size(self, dim: int | None = None):
        """The shape, or the length of one dimension.

        >>> import teachgrad as tg
        >>> tg.zeros(2, 3).size(), tg.zeros(2, 3).size(-1)
        (teachgrad.Size([2, 3]), 3)
        """
        if dim is None:
            return Size(self._data.shape)
        return self._data.shape[_wrap_size_dim(dim, self._data.ndim)]

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def dim(self) -> int:
        """The number of dimensions (also ``ndim``, ``ndimension()``).

        >>> import teachgrad as tg
        >>> tg.zeros(2, 3).dim()
        2
        """
        return self._data.ndim

    ndimension = dim

    def numel(self) -> int:
        """The number of elements (also ``nelement()``).

        >>> import teachgrad as tg
        >>> tg.zeros(2, 3).numel()
        6
        """
        return int(self._data.size)

    nelement = numel

    def element_size(self) -> int:
        """Bytes per element.

        >>> import teachgrad as tg
        >>> tg.zeros(1, dtype=tg.float64).element_size()
        8
        """
        return self._data.itemsize

    @property
    def dtype(self):
        return _backend.from_numpy_dtype(self._data.dtype)

    @property
    def device(self):
        return _backend.device_of(self._data)

    @property
    def is_cuda(self) -> bool:
        return self.device.type == "cuda"

    @property
    def is_cpu(self) -> bool:
        return self.device.type == "cpu"

    def is_floating_point(self) -> bool:
        """True for float16/32/64 tensors (the only ones that can require grad).

        >>> import teachgrad as tg
        >>> tg.tensor([1.0]).is_floating_point(), tg.tensor([1]).is_floating_point()
        (True, False)
        """
        return self._data.dtype.kind == "f"

    def is_complex(self) -> bool:
        """Always False: teachgrad has no complex dtypes.

        >>> import teachgrad as tg
        >>> tg.zeros(1).is_complex()
        False
        """
        return False

    @property
    def real(self) -> Tensor:
        """The real part: the tensor itself, as torch's ``real`` of a real tensor.

        >>> import teachgrad as tg
        >>> x = tg.zeros(2); x.real is x
        True
        """
        return self

    @property
    def imag(self):
        """torch's error: only a complex tensor has an imaginary part (teachgrad has none)."""
        raise RuntimeError(
            "imag is not implemented for tensors with non-complex dtypes.\n  teachgrad has no "
            "complex dtypes: a real tensor's imaginary part would be all zeros."
        )

    @property
    def layout(self):
        """How the elements lie in memory: always ``teachgrad.strided`` (dense, with strides;
        torch also has sparse layouts).

        >>> import teachgrad as tg
        >>> tg.zeros(2).layout
        teachgrad.strided
        """
        return _backend.strided

    def stride(self, dim: int | None = None):
        """Steps in elements between neighbours along each dimension (torch's strides).

        >>> import teachgrad as tg
        >>> tg.zeros(2, 3).stride(), tg.zeros(2, 3).t().stride()
        ((3, 1), (1, 3))
        """
        data = self._data
        if data.size == 0 and data.base is None:
            strides = _row_major_strides(data.shape)  # NumPy says 0 for every dim: torch doesn't
        else:
            strides = tuple(s // data.itemsize for s in data.strides)
        return strides if dim is None else strides[_wrap_size_dim(dim, data.ndim)]

    def data_ptr(self) -> int:
        """Address of this tensor's first element (views of one storage differ by their offset).

        >>> import teachgrad as tg
        >>> x = tg.zeros(4); x[1:].data_ptr() - x.data_ptr() == x.element_size()
        True
        """
        return _backend.address(self._data)

    def storage_offset(self) -> int:
        """Elements between the start of the storage and this tensor's first element.

        >>> import teachgrad as tg
        >>> tg.zeros(5)[2:].storage_offset()
        2
        """
        return (
            _backend.address(self._data) - _backend.address(self._storage_array())
        ) // self._data.itemsize

    def _storage_array(self):
        """The array owning this tensor's memory (through its base, then NumPy's ``.base``)."""
        owner = (self._base if self._base is not None else self)._data
        while _backend.is_array(getattr(owner, "base", None)):
            owner = owner.base
        return owner

    def _is_view(self) -> bool:
        """True when this tensor is a view of another (``_base``)."""
        return self._base is not None

    def _view_func(self, new_base, symint_visitor_fn=None, tensor_visitor_fn=None):
        """This view made again on ``new_base`` in place of its base, as torch replays a view:
        the same sizes, strides and offset, into ``new_base``'s memory (``as_strided``, so
        the chain of view ops that made it is replayed at once). None when ``new_base`` is
        not laid out as the base is (sizes, strides, offset, storage size), or for no view.
        torch's visitors of the sizes and tensors of a chain of view ops are taken and not
        called, as on torch's ``as_strided`` path: there is no view op to visit.

        >>> import teachgrad as tg
        >>> v = tg.arange(6.0).view(2, 3)[:, 1:].t()
        >>> v._view_func(tg.arange(10.0, 16.0))
        tensor([[11., 14.],
                [12., 15.]])
        >>> v._view_func(tg.arange(8.0)) is None  # (another storage size)
        True
        """
        return self._replay_view(new_base, "_view_func", check_layout=True)

    def _view_func_unsafe(self, new_base, symint_visitor_fn=None, tensor_visitor_fn=None):
        """``_view_func`` without the check of ``new_base``'s layout: the caller vouches for it.

        >>> import teachgrad as tg
        >>> tg.arange(6.0)[4:]._view_func_unsafe(tg.arange(10.0, 18.0))
        tensor([14., 15.])
        """
        return self._replay_view(new_base, "_view_func_unsafe", check_layout=False)

    def _replay_view(self, new_base, name: str, check_layout: bool):
        if not isinstance(new_base, Tensor):
            raise TypeError(
                f"{name}(): argument 'new_base' (position 1) must be Tensor, not "
                f"{type(new_base).__name__}\n  Pass the tensor to make this view of again."
            )
        base = self._base
        if base is None:
            return None
        if check_layout and not (  # (torch's has_same_meta; a dim of size 1 has no real stride)
            new_base.shape == base.shape
            and new_base.storage_offset() == base.storage_offset()
            and new_base._storage_array().size == base._storage_array().size
            and (
                base.numel() == 0
                or all(
                    n == 1 or a == b
                    for n, a, b in zip(base.shape, new_base.stride(), base.stride())
                )
            )
        ):
            return None
        return new_base.as_strided(self.shape, self.stride(), self.storage_offset())

    # ------------------------------------------------------------------ conversions
    def item(self):
        """The value of a one-element tensor as a Python number.

        >>> import teachgrad as tg
        >>> tg.tensor([2.5]).item()
        2.5
        """
        if self._data.size != 1:
            raise RuntimeError(
                f"a Tensor with {self._data.size} elements cannot be converted to Scalar"
            )
        return _backend.to_host(self._data.reshape(())).item()

    def tolist(self):
        """Nested Python lists (a number for a 0-d tensor).

        >>> import teachgrad as tg
        >>> tg.tensor([[1, 2], [3, 4]]).tolist()
        [[1, 2], [3, 4]]
        """
        return _backend.to_host(self._data).tolist()

    def pin_memory(self) -> Tensor:
        """A copy in page-locked host memory, which copies to a GPU faster (needs a GPU).

        >>> import teachgrad as tg
        >>> x = tg.ones(2)
        >>> (x.pin_memory().is_pinned() if tg.cuda.is_available() else True)
        True
        """
        t = Tensor._make(_backend.pinned_copy(self._data))
        t._pinned = True
        return t

    def is_pinned(self) -> bool:
        """Whether this tensor lives in page-locked host memory (made by ``pin_memory()``).

        >>> import teachgrad as tg
        >>> tg.ones(2).is_pinned()
        False
        """
        return self._pinned

    def numpy(self, *, force: bool = False):
        """The NumPy array sharing this tensor's memory (CPU tensors that don't require grad).

        >>> import teachgrad as tg
        >>> tg.ones(2).numpy()
        array([1., 1.], dtype=float32)
        """
        if self._requires_grad and _grad_state.enabled and not force:  # (torch allows no_grad)
            raise RuntimeError(
                "Can't call numpy() on Tensor that requires grad. Use tensor.detach().numpy() instead."
            )
        if self.device.type != "cpu":
            if force:
                return _backend.to_host(self._data)
            raise TypeError(
                f"can't convert {self.device} device type tensor to numpy. Use Tensor.cpu() to "
                "copy the tensor to host memory first."
            )
        return self._data

    def __array__(self, dtype=None, copy=None):
        array = self.numpy()
        return array if dtype is None else array.astype(dtype, copy=False)

    def __dlpack__(self, *args, **kwargs):
        if self._requires_grad:
            raise BufferError("Can't export tensors that require gradient, use tensor.detach()")
        return self._data.__dlpack__(*args, **kwargs)

    def __dlpack_device__(self):
        return self._data.__dlpack_device__()

    def __len__(self) -> int:
        if self._data.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self._data.shape[0]

    def __iter__(self):
        if self._data.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __bool__(self) -> bool:
        if self._data.size != 1:
            raise RuntimeError(
                "Boolean value of Tensor with more than one value is ambiguous\n"
                f"  It has {self._data.size} values: say which truth you mean, .any() or .all()."
            )
        return bool(_backend.to_host(self._data.reshape(())))

    def __float__(self) -> float:
        if self._requires_grad and _grad_state.enabled:
            _warn_scalar_of_requires_grad()
        return float(self.item() if self._data.size == 1 else _not_one_element(self))

    def __int__(self) -> int:
        return int(self.item() if self._data.size == 1 else _not_one_element(self))

    def __index__(self) -> int:
        if self._data.dtype.kind not in "iub" or self._data.size != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __complex__(self) -> complex:
        if self._requires_grad and _grad_state.enabled:
            _warn_scalar_of_requires_grad()
        return complex(self.item())

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return tensor_repr(self)

    def __format__(self, spec: str) -> str:
        if self._data.ndim == 0 and type(self) is Tensor:  # torch's rule: f"{x}" is x.item()'s
            return self.item().__format__(spec)
        return object.__format__(self, spec)  # str(self); a format spec is a TypeError

    def __deepcopy__(self, memo):
        if self.grad_fn is not None:
            raise RuntimeError(
                "Only Tensors created explicitly by the user (graph leaves) support the "
                "deepcopy protocol at the moment.  If you were attempting to deepcopy a "
                "module, this may be because of a torch.nn.utils.weight_norm usage."
            )
        if id(self) in memo:
            return memo[id(self)]
        new = _new(type(self))
        new.__dict__.update({k: v for k, v in self.__dict__.items() if k not in _NOT_DEEPCOPIED})
        new._data = self._data.copy()
        new._counter = new_counter()
        new._base = None
        memo[id(self)] = new
        if self._grad is not None:
            new._grad = _copy.deepcopy(self._grad, memo)
        return new

    def __reduce_ex__(self, protocol):
        """Pickled as its values, device, ``requires_grad`` and name: not its history (a
        tensor from an op comes back a leaf, as in torch) nor ``.grad``."""
        return (
            _rebuild,
            (
                type(self),
                _backend.to_host(self._data),
                str(self.device),
                self.requires_grad,
                self.__dict__.get("_name"),
            ),
        )


def _rebuild(cls, array, device, requires_grad, name):
    t = _new(cls)
    t._data = _backend.with_empty_strides(_backend.to_device(array, _backend.as_device(device)))
    t._counter = new_counter()
    t._requires_grad = requires_grad
    if name is not None:
        t.name = name
    return t


_new = object.__new__


def new_counter() -> VersionCounter:
    return _new(VersionCounter)


_NOT_DEEPCOPIED = ("_acc_ref", "_backward_hooks", "_post_acc_hooks")  # (torch drops hooks too)

_warned_scalar = False


def _row_major_strides(shape) -> tuple:
    """torch's strides of a fresh contiguous tensor (a dim of size 0 counts as 1).

    >>> _row_major_strides((2, 0, 3))
    (3, 3, 1)
    """
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def _warn_scalar_of_requires_grad() -> None:
    """torch's warning (once per process, as torch gives it) for ``float(t)`` of a tensor
    that requires grad: the number has left the graph."""
    global _warned_scalar
    if not _warned_scalar:
        _warned_scalar = True
        warnings.warn(
            "Converting a tensor with requires_grad=True to a scalar may lead to unexpected "
            "behavior.\nConsider using tensor.detach() first.",
            UserWarning,
            stacklevel=3,
        )


def wrap_array(data) -> Tensor:
    """A new Tensor owning ``data`` (internal fast path used by every op)."""
    t = _new(Tensor)
    t._data = data if data.size else _backend.with_empty_strides(data)
    t._counter = _new(VersionCounter)
    return t


def _not_one_element(t: Tensor):
    """torch's ValueError when ``int(t)`` or ``float(t)`` is asked of many elements."""
    raise ValueError(
        "only one element tensors can be converted to Python scalars\n"
        f"  This one has {t._data.size} elements: index one first, or reduce (.sum(), .mean())."
    )


def _wrap_dim(dim: int, ndim: int) -> int:
    """A dimension index made non-negative, with torch's error for a bad one."""
    n = max(ndim, 1)
    if type(dim) is not int or not -n <= dim < n:
        if type(dim) is not int:  # (what reads as an int, or a TypeError: _as_int)
            return _wrap_dim(_as_int(dim), ndim)
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
        )
    return dim % n


def _given_and_wrapped(dim, ndim: int) -> tuple:
    """``(dim as it was given, as an int; dim wrapped)``, with ``_wrap_dim``'s error for a bad
    one. The given dim (-1 stays -1) is what a node shows (``grad_fn._saved_dim``), as
    torch's does; the wrapped one is what the op works with.

    >>> _given_and_wrapped(-1, 3), _given_and_wrapped(1, 3)
    ((-1, 2), (1, 1))
    """
    dim = dim if type(dim) is int else _as_int(dim)
    return dim, _wrap_dim(dim, ndim)


def _given_dim(dim, ndim: int) -> int:
    """``dim`` checked, kept as it was given (see ``_given_and_wrapped``).

    >>> _given_dim(-1, 3)
    -1
    """
    return _given_and_wrapped(dim, ndim)[0]


def _as_int(value) -> int:
    """An int argument (a dim, a start ...) given as another type than int: what reads as an
    int as torch reads one (a NumPy int, an integer tensor of one element), else a TypeError
    (a bool too: torch's flags are no ints), which ``_arguments.checked`` words as torch does
    for the op that was called.

    >>> import numpy as np, teachgrad as tg
    >>> _as_int(np.int64(1)), _as_int(tg.tensor(1))
    (1, 1)
    """
    if isinstance(value, bool):
        raise TypeError("an int, not a bool")
    return operator.index(value)


def _as_ints(values) -> tuple:
    """Int arguments given together (sizes, dims) as torch reads them: each as ``_as_int``
    does, but a bool after the first reads as 0 or 1 (torch checks the first one's type only).

    >>> _as_ints((2, True))
    (2, 1)
    """
    return tuple(_as_int(v) if k == 0 else operator.index(v) for k, v in enumerate(values))


def _wrap_size_dim(dim: int, ndim: int) -> int:
    """``dim`` of ``size(dim)`` / ``stride(dim)``: a 0-d tensor has none (reductions, unlike
    these, accept dim 0 or -1 of a 0-d tensor)."""
    if ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return _wrap_dim(dim, ndim)


def type_name(value) -> str:
    """How torch names the type of ``value`` in its errors.

    >>> import numpy as np, teachgrad as tg
    >>> [type_name(v) for v in (2.5, None, tg.ones(1), tg.float32, np.zeros(1))]
    ['float', 'NoneType', 'Tensor', 'teachgrad.dtype', 'numpy.ndarray']
    """
    cls = type(value)
    if isinstance(value, Tensor):
        return "Tensor"
    if cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__.split('.')[0]}.{cls.__name__}"


def check_bool(fn: str, name: str, value, position: int | None = None) -> None:
    """torch's TypeError unless ``value`` is a bool (1, "yes" and None are not).

    >>> check_bool("set_grad_enabled", "enabled", "a", 1)
    Traceback (most recent call last):
    TypeError: set_grad_enabled(): argument 'enabled' (position 1) must be bool, not str
    """
    if not isinstance(value, bool):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{fn}(): argument '{name}'{where} must be bool, not {type_name(value)}")

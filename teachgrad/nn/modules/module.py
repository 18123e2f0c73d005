"""``Module``: the base class of every layer and model.

A Module is a Python object with three registries filled by plain attribute
assignment (``self.weight = Parameter(...)``, ``self.fc = Linear(...)``):

* ``_parameters``: the tensors an optimiser updates;
* ``_buffers``: tensors that are state but not learned (``register_buffer``);
* ``_modules``: child Modules, which makes models trees.

Everything else is a walk over that tree: ``parameters()``, ``state_dict()``,
``train()``, ``to()``, ``zero_grad()``, ``__repr__``. Calling a module runs its
``forward`` between the forward pre-hooks and forward hooks.

What does not live here: the layers themselves (``linear.py``, ``conv.py`` ...)
and the containers (``container.py``).

    >>> import teachgrad as tg
    >>> class Affine(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.scale = tg.nn.Parameter(tg.ones(1))
    ...     def forward(self, x):
    ...         return self.scale * x
    >>> m = Affine()
    >>> [name for name, _ in m.named_parameters()], m(tg.tensor([2.0]))
    (['scale'], tensor([2.], grad_fn=<MulBackward0>))
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Mapping

from ..._hooks import HookDict, RemovableHandle, add_hook
from ..._tensor import Tensor
from ...autograd.grad_mode import no_grad
from ...ops import _to_arguments
from ..parameter import Parameter
from .backward_hooks import BackwardHook, hook_output_node


def _typename(obj) -> str:
    return type(obj).__name__


def _cannot_assign(value, kind: str, name: str, expected: str) -> TypeError:
    """torch's error for ``module.name = value`` when ``name`` is a registered ``kind`` (a
    parameter, child module or buffer) and ``value`` is neither an ``expected`` nor None."""
    return TypeError(
        f"cannot assign '{_typename(value)}' as {kind} '{name}' ({expected} or None expected)"
    )


def _addindent(text: str, spaces: int) -> str:
    """Indent every line of ``text`` but the first (a child's repr inside its parent's)."""
    first, *rest = text.split("\n")
    return "\n".join([first] + [" " * spaces + line for line in rest])


class Module:
    """Base class for all layers and models: subclass it, set attributes, write ``forward``.

    >>> import teachgrad as tg
    >>> class MLP(tg.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.hidden = tg.nn.Linear(2, 3)
    ...         self.out = tg.nn.Linear(3, 1)
    ...     def forward(self, x):
    ...         return self.out(self.hidden(x).relu())
    >>> model = MLP()
    >>> model
    MLP(
      (hidden): Linear(in_features=2, out_features=3, bias=True)
      (out): Linear(in_features=3, out_features=1, bias=True)
    )
    >>> [(name, tuple(p.shape)) for name, p in model.named_parameters()]
    [('hidden.weight', (3, 2)), ('hidden.bias', (3,)), ('out.weight', (1, 3)), ('out.bias', (1,))]
    >>> model(tg.ones(4, 2)).shape
    teachgrad.Size([4, 1])
    """

    training: bool

    def __init__(self) -> None:
        # object.__setattr__: our own __setattr__ needs these dicts to exist already
        set_ = object.__setattr__
        set_(self, "training", True)
        set_(self, "_parameters", {})
        set_(self, "_buffers", {})
        set_(self, "_non_persistent_buffers_set", set())
        set_(self, "_modules", {})
        set_(self, "_forward_pre_hooks", HookDict())
        set_(self, "_forward_pre_hooks_with_kwargs", set())
        set_(self, "_forward_hooks", HookDict())
        set_(self, "_forward_hooks_with_kwargs", set())
        set_(self, "_backward_hooks", HookDict())  # full or legacy ones (backward_hooks.py):
        set_(self, "_is_full_backward_hook", None)  # which (None: neither yet), as torch
        set_(self, "_backward_pre_hooks", HookDict())

    def forward(self, *args, **kwargs):
        """What the module computes; every subclass defines it. Call the module, not this.

        >>> import teachgrad as tg
        >>> tg.nn.ReLU().forward(tg.tensor([-1.0, 1.0]))
        tensor([0., 1.])
        """
        raise NotImplementedError(
            f'Module [{type(self).__name__}] is missing the required "forward" function'
        )

    # ------------------------------------------------------------------ registering
    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Add a parameter (or a ``None`` placeholder, e.g. for ``bias=False``).

        >>> import teachgrad as tg
        >>> m = tg.nn.Module(); m.register_parameter("w", tg.nn.Parameter(tg.ones(2)))
        >>> list(m.state_dict())
        ['w']
        """
        self._check_new_entry("parameter", name, param, Parameter, "teachgrad.nn.Parameter")
        if param is not None and param.grad_fn is not None:
            raise ValueError(
                f"Cannot assign non-leaf Tensor to parameter '{name}'. Model parameters must be "
                f"created explicitly. To express '{name}' as a function of another Tensor, compute "
                "the value in the forward() method."
            )
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Tensor | None, persistent: bool = True) -> None:
        """Add a tensor that is state but not learned (saved in ``state_dict`` if persistent).

        >>> import teachgrad as tg
        >>> m = tg.nn.Module(); m.register_buffer("running_mean", tg.zeros(3))
        >>> list(m.state_dict()), list(m.parameters())
        (['running_mean'], [])
        """
        self._check_new_entry("buffer", name, tensor, Tensor, "teachgrad Tensor")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a child module (what ``self.name = module`` does).

        >>> import teachgrad as tg
        >>> m = tg.nn.Module(); m.add_module("act", tg.nn.ReLU()); m
        Module(
          (act): ReLU()
        )
        """
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{_typename(module)} is not a Module subclass")
        self._check_name(name, "module", self._modules)
        self._modules[name] = module

    register_module = add_module

    def _check_new_entry(self, kind: str, name, value, expected: type, expected_name: str) -> None:
        """torch's checks before a ``kind`` ("parameter" or "buffer") is registered: __init__
        has made its dict (``_parameters``, ``_buffers``), ``name`` is usable, and ``value`` is
        an ``expected`` (its name in the message: ``expected_name``) or None."""
        registry = self.__dict__.get(f"_{kind}s")
        if registry is None:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        self._check_name(name, kind, registry)
        if value is not None and not isinstance(value, expected):
            raise TypeError(
                f"cannot assign '{_typename(value)}' object to {kind} '{name}' "
                f"({expected_name} or None required)"
            )

    def _check_name(self, name, kind: str, registry: dict) -> None:
        """torch's rules for a name: a string, no dots (they separate path levels), not taken."""
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string. Got {_typename(name)}")
        if "." in name:
            raise KeyError(
                f'{kind} name can\'t contain "."' + (f", got: {name}" if kind == "module" else "")
            )
        if name == "":
            raise KeyError(f'{kind} name can\'t be empty string ""')
        if hasattr(self, name) and name not in registry:
            raise KeyError(f"attribute '{name}' already exists")

    # ------------------------------------------------------------------ attributes
    def __setattr__(self, name: str, value) -> None:
        d = self.__dict__
        params, modules, buffers = d.get("_parameters"), d.get("_modules"), d.get("_buffers")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._forget(name, d, buffers, modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise _cannot_assign(value, "parameter", name, "teachgrad.nn.Parameter")
            params[name] = None
        elif isinstance(value, Module):
            if modules is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._forget(name, d, params, buffers)
            modules[name] = value
        elif modules is not None and name in modules:
            if value is not None:
                raise _cannot_assign(value, "child module", name, "teachgrad.nn.Module")
            modules[name] = None
        elif buffers is not None and name in buffers:
            if value is not None and not isinstance(value, Tensor):
                raise _cannot_assign(value, "buffer", name, "teachgrad.Tensor")
            buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    def _forget(self, name: str, *registries) -> None:
        """Remove ``name`` from the other places an attribute can live, before re-registering."""
        for registry in registries:
            if registry is not None and name in registry:
                del registry[name]
        self.__dict__.get("_non_persistent_buffers_set", set()).discard(name)

    def __getattr__(self, name: str):
        # Python calls this only when normal lookup failed: look in the registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self):
        registered = list(self._parameters) + list(self._buffers) + list(self._modules)
        return sorted(set(super().__dir__()) | {k for k in registered if not k.isdigit()})

    # ------------------------------------------------------------------ calling
    def __call__(self, *args, **kwargs):
        # torch's order: pre-hooks (each may replace the arguments), forward, then forward
        # hooks (each may replace the output). Without hooks this is just self.forward(...).
        for hook_id, hook in list(self._forward_pre_hooks.items()):
            if hook_id in self._forward_pre_hooks_with_kwargs:
                result = hook(self, args, kwargs)
                if result is not None:
                    if not (isinstance(result, tuple) and len(result) == 2):
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple of (new_args, new_kwargs), "
                            f"but got {result}."
                        )
                    args, kwargs = result
            else:
                result = hook(self, args)
                if result is not None:
                    args = result if isinstance(result, tuple) else (result,)
        full, legacy = self._get_backward_hooks()
        watch = full or self._backward_pre_hooks  # (see backward_hooks.py)
        if watch:
            watch = BackwardHook(self, full, [*self._backward_pre_hooks.values()])
            args = watch.setup_input_hook(args)
        output = self.forward(*args, **kwargs)
        for hook_id, hook in list(self._forward_hooks.items()):
            if hook_id in self._forward_hooks_with_kwargs:
                result = hook(self, args, kwargs, output)
            else:
                result = hook(self, args, output)
            if result is not None:
                output = result
        if watch:
            output = watch.setup_output_hook(output)
        if legacy:
            hook_output_node(self, legacy, args, output)
        return output

    def register_forward_pre_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """Call ``hook(module, args)`` before each forward; a returned value replaces the args.

        >>> import teachgrad as tg
        >>> m = tg.nn.Identity()
        >>> h = m.register_forward_pre_hook(lambda mod, args: args[0] * 10)
        >>> m(tg.tensor([1.0]))
        tensor([10.])
        >>> h.remove(); m(tg.tensor([1.0]))
        tensor([1.])
        """
        return self._add_hook(
            self._forward_pre_hooks, self._forward_pre_hooks_with_kwargs, hook, prepend, with_kwargs
        )

    def register_forward_hook(self, hook, *, prepend: bool = False, with_kwargs: bool = False):
        """Call ``hook(module, args, output)`` after each forward; a returned value replaces the output.

        >>> import teachgrad as tg
        >>> m = tg.nn.ReLU()
        >>> h = m.register_forward_hook(lambda mod, args, out: print("ReLU gave", out))
        >>> _ = m(tg.tensor([-1.0, 2.0]))
        ReLU gave tensor([0., 2.])
        """
        return self._add_hook(
            self._forward_hooks, self._forward_hooks_with_kwargs, hook, prepend, with_kwargs
        )

    def register_full_backward_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_input, grad_output)`` when backward has computed the
        gradients with respect to the module's inputs (``grad_input``, one per positional
        argument, None for one that is no tensor or needs none) from those with respect to its
        outputs (``grad_output``); a returned tuple replaces ``grad_input``.

        >>> import teachgrad as tg
        >>> m = tg.nn.Identity()
        >>> h = m.register_full_backward_hook(lambda mod, gin, gout: (gin[0] * 10,))
        >>> x = tg.ones(2, requires_grad=True); m(x).sum().backward(); x.grad
        tensor([10., 10.])
        """
        self._set_backward_hook_kind(full=True)
        return self._add_hook(self._backward_hooks, set(), hook, prepend, False)

    def register_backward_hook(self, hook):
        """Deprecated (use ``register_full_backward_hook``): call ``hook(module, grad_input,
        grad_output)`` with the gradients of the one node that made the module's output (its
        grad_inputs and grad_outputs), which are the module's only when its forward is a
        single op; a returned tuple replaces that node's grad_inputs.

        >>> import teachgrad as tg, warnings
        >>> m = tg.nn.Linear(2, 1, bias=False)
        >>> h = m.register_backward_hook(lambda mod, gin, gout: print(len(gin), gout[0].shape))
        >>> with warnings.catch_warnings():  # (torch's FutureWarning: MmBackward0 is not all of m)
        ...     warnings.simplefilter("ignore", FutureWarning)
        ...     y = m(tg.ones(3, 2))
        >>> y.sum().backward()
        2 teachgrad.Size([3, 1])
        """
        self._set_backward_hook_kind(full=False)
        return self._add_hook(self._backward_hooks, set(), hook, False, False)

    def _set_backward_hook_kind(self, full: bool) -> None:
        """``_backward_hooks`` holds full hooks or legacy ones, never both: torch's rule."""
        if self._is_full_backward_hook is (not full):
            raise RuntimeError(
                "Cannot use both regular backward hooks and full backward hooks on a single "
                "Module. Please use only one of them.\n  (register_backward_hook is the "
                "deprecated one: use register_full_backward_hook alone)"
            )
        self._is_full_backward_hook = full

    def _get_backward_hooks(self) -> tuple[list, list]:
        """The module's full backward hooks and its legacy ones (one of the two is empty)."""
        hooks = [*self._backward_hooks.values()]
        return (hooks, []) if self._is_full_backward_hook else ([], hooks)

    def register_full_backward_pre_hook(self, hook, prepend: bool = False):
        """Call ``hook(module, grad_output)`` when backward reaches the module's outputs; a
        returned tuple replaces ``grad_output`` (before the module's own backward).

        >>> import teachgrad as tg
        >>> m = tg.nn.Identity()
        >>> h = m.register_full_backward_pre_hook(lambda mod, gout: (gout[0] * 2,))
        >>> x = tg.ones(2, requires_grad=True); m(x).sum().backward(); x.grad
        tensor([2., 2.])
        """
        return self._add_hook(self._backward_pre_hooks, set(), hook, prepend, False)

    @staticmethod
    def _add_hook(hooks: HookDict, with_kwargs_ids: set, hook, prepend, with_kwargs):
        handle: RemovableHandle = add_hook(hooks, hook)
        if with_kwargs:
            with_kwargs_ids.add(handle.id)
        if prepend:  # dicts keep insertion order: rebuild with the new hook first
            reordered = {handle.id: hooks.pop(handle.id), **hooks}
            hooks.clear()
            hooks.update(reordered)
        return handle

    # ------------------------------------------------------------------ walking the tree
    def named_modules(self, memo: set | None = None, prefix: str = "", remove_duplicate=True):
        """``(dotted_name, module)`` for this module and every descendant, depth first.

        >>> import teachgrad as tg
        >>> net = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Sequential(tg.nn.ReLU()))
        >>> [name for name, _ in net.named_modules()]
        ['', '0', '1', '1.0']
        """
        if memo is None:
            memo = set()
        if id(self) in memo:
            return  # a module used twice is listed once
        if remove_duplicate:
            memo.add(id(self))
        yield prefix, self
        for name, child in self._modules.items():
            if child is not None:
                child_prefix = f"{prefix}.{name}" if prefix else name
                yield from child.named_modules(memo, child_prefix, remove_duplicate)

    def modules(self):
        """This module and every descendant.

        >>> import teachgrad as tg
        >>> len(list(tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh()).modules()))
        3
        """
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """``(name, module)`` for the direct children.

        >>> import teachgrad as tg
        >>> [name for name, _ in tg.nn.Sequential(tg.nn.ReLU(), tg.nn.Tanh()).named_children()]
        ['0', '1']
        """
        seen = set()
        for name, child in self._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                yield name, child

    def children(self):
        """The direct child modules.

        >>> import teachgrad as tg
        >>> list(tg.nn.Sequential(tg.nn.ReLU()).children())
        [ReLU()]
        """
        for _, child in self.named_children():
            yield child

    def _named_members(self, registry: str, prefix: str, recurse: bool, remove_duplicate: bool):
        """``(dotted_name, tensor)`` from one registry of every module; a shared tensor once."""
        seen = set()
        owners = self.named_modules(prefix=prefix) if recurse else [(prefix, self)]
        for owner_prefix, owner in owners:
            for name, value in getattr(owner, registry).items():
                if value is None or id(value) in seen:
                    continue
                if remove_duplicate:
                    seen.add(id(value))
                yield (f"{owner_prefix}.{name}" if owner_prefix else name), value

    def named_parameters(self, prefix: str = "", recurse: bool = True, remove_duplicate=True):
        """``(dotted_name, parameter)`` pairs; a parameter shared by two layers comes once.

        >>> import teachgrad as tg
        >>> [name for name, _ in tg.nn.Sequential(tg.nn.Linear(2, 2)).named_parameters()]
        ['0.weight', '0.bias']
        """
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True):
        """Every parameter (what you hand to an optimiser).

        >>> import teachgrad as tg
        >>> sum(p.numel() for p in tg.nn.Linear(3, 2).parameters())
        8
        """
        for _, param in self.named_parameters(recurse=recurse):
            yield param

    def named_buffers(self, prefix: str = "", recurse: bool = True, remove_duplicate=True):
        """``(dotted_name, buffer)`` pairs.

        >>> import teachgrad as tg
        >>> loss = tg.nn.CrossEntropyLoss(weight=tg.ones(3))
        >>> [name for name, _ in loss.named_buffers()]
        ['weight']
        """
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True):
        """Every buffer.

        >>> import teachgrad as tg
        >>> list(tg.nn.Linear(2, 2).buffers())
        []
        """
        for _, buf in self.named_buffers(recurse=recurse):
            yield buf

    def apply(self, fn):
        """Call ``fn(module)`` on every descendant (children first), then on self; returns self.

        >>> import teachgrad as tg
        >>> net = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.ReLU())
        >>> def zero_linear(m):
        ...     if isinstance(m, tg.nn.Linear):
        ...         tg.nn.init.zeros_(m.weight)
        >>> net.apply(zero_linear)[0].weight.abs().sum().item()
        0.0
        """
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    # ------------------------------------------------------------------ modes and gradients
    def train(self, mode: bool = True):
        """Set training mode (``training=True``) here and in every descendant; returns self.

        Only some layers care (``Dropout`` drops only while training).

        >>> import teachgrad as tg
        >>> net = tg.nn.Sequential(tg.nn.Dropout())
        >>> net.eval()[0].training, net.train()[0].training
        (False, True)
        """
        if not isinstance(mode, bool):
            raise ValueError("training mode is expected to be boolean")
        self.training = mode
        for child in self.children():
            child.train(mode)
        return self

    def eval(self):
        """Evaluation mode: ``train(False)``.

        >>> import teachgrad as tg
        >>> tg.nn.Dropout().eval().training
        False
        """
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True):
        """Switch gradient tracking of every parameter on or off (freezing a model); returns self.

        >>> import teachgrad as tg
        >>> [p.requires_grad for p in tg.nn.Linear(2, 2).requires_grad_(False).parameters()]
        [False, False]
        """
        for param in self.parameters():
            param.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients of every parameter: set them to None, or fill them with zeros.

        >>> import teachgrad as tg
        >>> lin = tg.nn.Linear(2, 1); lin(tg.ones(1, 2)).sum().backward()
        >>> lin.zero_grad(); lin.weight.grad is None
        True
        """
        for param in self.parameters():
            if param.grad is None:
                continue
            if set_to_none:
                param.grad = None
            else:
                grad = param.grad
                if grad.grad_fn is not None:
                    grad.detach_()  # a grad made with create_graph=True: keep the memory only
                else:
                    grad.requires_grad_(False)
                grad.zero_()

    # ------------------------------------------------------------------ saving and loading
    def state_dict(self, *, destination=None, prefix: str = "", keep_vars: bool = False):
        """An OrderedDict of every parameter and persistent buffer by dotted name (detached).

        >>> import teachgrad as tg
        >>> sd = tg.nn.Sequential(tg.nn.Linear(2, 3)).state_dict()
        >>> [(k, tuple(v.shape), v.requires_grad) for k, v in sd.items()]
        [('0.weight', (3, 2), False), ('0.bias', (3,), False)]
        """
        if destination is None:
            destination = OrderedDict()
        for name, param in self._parameters.items():
            if param is not None:
                destination[prefix + name] = param if keep_vars else param.detach()
        for name, buf in self._buffers.items():
            if buf is not None and name not in self._non_persistent_buffers_set:
                destination[prefix + name] = buf if keep_vars else buf.detach()
        for name, child in self._modules.items():
            if child is not None:
                child.state_dict(
                    destination=destination, prefix=f"{prefix}{name}.", keep_vars=keep_vars
                )
        return destination

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Copy the tensors of ``state_dict`` into this model's parameters and buffers.

        With ``strict=True`` every key must match; either way the result lists the
        ``missing_keys`` and ``unexpected_keys``.

        >>> import teachgrad as tg
        >>> a, b = tg.nn.Linear(2, 2), tg.nn.Linear(2, 2)
        >>> b.load_state_dict(a.state_dict())
        <All keys matched successfully>
        >>> bool((a.weight == b.weight).all())
        True
        """
        if not isinstance(state_dict, Mapping):
            raise TypeError(f"Expected state_dict to be dict-like, got {type(state_dict)}.")
        missing, unexpected, errors = [], [], []

        def load(module, prefix):
            module._load_own_tensors(state_dict, prefix, assign, missing, unexpected, errors)
            for name, child in module._modules.items():
                if child is not None:
                    load(child, f"{prefix}{name}.")

        load(self, "")
        if strict:
            if unexpected:
                keys = ", ".join(f'"{k}"' for k in unexpected)
                errors.insert(0, f"Unexpected key(s) in state_dict: {keys}. ")
            if missing:
                keys = ", ".join(f'"{k}"' for k in missing)
                errors.insert(0, f"Missing key(s) in state_dict: {keys}. ")
        if errors:
            details = "\n\t".join(errors)
            raise RuntimeError(
                f"Error(s) in loading state_dict for {type(self).__name__}:\n\t{details}"
            )
        return _IncompatibleKeys(missing, unexpected)

    def _load_own_tensors(self, state_dict, prefix, assign, missing, unexpected, errors):
        """Load this module's own parameters and buffers (not its children's)."""
        own = {k: v for k, v in self._parameters.items() if v is not None}
        own.update(
            (k, v)
            for k, v in self._buffers.items()
            if v is not None and k not in self._non_persistent_buffers_set
        )
        for name, current in own.items():
            key = prefix + name
            if key not in state_dict:
                missing.append(key)
                continue
            value = state_dict[key]
            if not isinstance(value, Tensor):
                errors.append(
                    f'While copying the parameter named "{key}", expected teachgrad.Tensor or '
                    f"Tensor-like object from checkpoint but received {type(value)}"
                )
            elif value.shape != current.shape:
                errors.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {current.shape}."
                )
            elif assign:
                self._assign(name, value)
            else:
                try:
                    with no_grad():  # a parameter is a leaf: copying into it must not be recorded
                        current.copy_(value)
                except Exception as ex:  # e.g. another device: report it with the others
                    errors.append(
                        f'While copying the parameter named "{key}", whose dimensions in the model '
                        f"are {current.size()} and whose dimensions in the checkpoint are "
                        f"{value.size()}, an exception occurred : {ex.args}."
                    )
        # A key under our prefix is ours if it names one of our tensors, or one of our children
        # (whose own loading then judges the rest of the path).
        for key in state_dict:
            if key.startswith(prefix):
                first, *rest = key[len(prefix) :].split(".", 1)
                known = self._modules if rest else own
                if first not in known:
                    unexpected.append(key)

    def _assign(self, name: str, value: Tensor) -> None:
        """``load_state_dict(assign=True)``: take the checkpoint tensor itself, not a copy."""
        if name in self._parameters:
            old = self._parameters[name]
            value = Parameter(value, requires_grad=old.requires_grad)
            self._parameters[name] = value
        else:
            self._buffers[name] = value

    # ------------------------------------------------------------------ dtype and device
    def _apply_to_tensors(self, convert):
        """Replace every parameter's (and its grad's) data with ``convert(data)``, and every
        buffer with ``convert(buffer)``. Parameters stay the same objects, as in torch, so an
        optimiser made before ``model.double()`` still holds the model's parameters."""
        for module in self.modules():
            for param in module._parameters.values():
                if param is None:
                    continue
                with no_grad():
                    param.data = convert(param.data)
                    if param.grad is not None:
                        param.grad.data = convert(param.grad.data)
            for name, buf in module._buffers.items():
                if buf is not None:
                    module._buffers[name] = convert(buf)
        return self

    def to(self, *args, **kwargs):
        """Move/cast parameters and buffers in place: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``.

        Only floating-point tensors change dtype; returns self.

        >>> import teachgrad as tg
        >>> lin = tg.nn.Linear(2, 2); w = lin.weight
        >>> lin.to(tg.float64).weight.dtype, lin.weight is w
        (teachgrad.float64, True)
        """
        device, dtype = _to_arguments(args, kwargs)
        if dtype is not None and not dtype.is_floating_point:
            raise TypeError(
                "nn.Module.to only accepts floating point or complex dtypes, but got desired "
                f"dtype={dtype}"
            )

        def convert(t):
            return t.to(device=device, dtype=dtype if t.is_floating_point() else None)

        return self._apply_to_tensors(convert)

    def float(self):
        """Cast floating-point parameters and buffers to float32; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Linear(2, 2).double().float().weight.dtype
        teachgrad.float32
        """
        return self._apply_to_tensors(lambda t: t.float() if t.is_floating_point() else t)

    def double(self):
        """Cast floating-point parameters and buffers to float64; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Linear(2, 2).double().bias.dtype
        teachgrad.float64
        """
        return self._apply_to_tensors(lambda t: t.double() if t.is_floating_point() else t)

    def half(self):
        """Cast floating-point parameters and buffers to float16; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Linear(2, 2).half().weight.dtype
        teachgrad.float16
        """
        return self._apply_to_tensors(lambda t: t.half() if t.is_floating_point() else t)

    def cpu(self):
        """Move parameters and buffers to the CPU; returns self.

        >>> import teachgrad as tg
        >>> tg.nn.Linear(2, 2).cpu().weight.device
        device(type='cpu')
        """
        return self._apply_to_tensors(lambda t: t.cpu())

    def cuda(self, device=None):
        """Move parameters and buffers to a CUDA GPU (needs CuPy); returns self.

        >>> import teachgrad as tg
        >>> lin = tg.nn.Linear(2, 2)
        >>> (lin.cuda() if tg.cuda.is_available() else lin).weight.shape
        teachgrad.Size([2, 2])
        """
        return self._apply_to_tensors(lambda t: t.cuda(device))

    # ------------------------------------------------------------------ printing
    def extra_repr(self) -> str:
        """The text inside this module's parentheses in its repr (its settings); override it.

        >>> import teachgrad as tg
        >>> tg.nn.Linear(2, 3).extra_repr()
        'in_features=2, out_features=3, bias=True'
        """
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        extra_lines = extra.split("\n") if extra else []
        child_lines = [
            f"({name}): " + _addindent(repr(child), 2) for name, child in self._modules.items()
        ]
        if len(extra_lines) == 1 and not child_lines:
            return f"{self._get_name()}({extra_lines[0]})"
        lines = extra_lines + child_lines
        if not lines:
            return f"{self._get_name()}()"
        return self._get_name() + "(\n  " + "\n  ".join(lines) + "\n)"


class _IncompatibleKeys(namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])):
    """What ``load_state_dict`` returns: ``(missing_keys, unexpected_keys)``, printed like torch."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()

    __str__ = __repr__

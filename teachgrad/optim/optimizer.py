"""``Optimizer``: what every optimizer shares (the update rules live in ``sgd.py`` and ``adam.py``).

An optimizer holds

* ``param_groups``: a list of dicts, each with ``"params"`` (a list of leaf tensors)
  and that group's settings (``lr``, ``momentum`` ...), missing settings filled in
  from the optimizer's ``defaults``;
* ``state``: a dict from each parameter to what the rule remembers about it
  (``momentum_buffer``, ``exp_avg`` ...), filled on the first step.

``step()`` runs the closure (if any) with grad enabled, then, under ``no_grad``, calls
the optimizer's ``update(p, grad, group)`` for every parameter that has a gradient.
Updates use in-place ops, so a parameter stays the same tensor (its ``_version``
goes up) and nothing is recorded on the tape. ``state_dict()`` replaces parameters
by their position, so a saved state can be loaded into a new optimizer.

Learning-rate schedulers and optimizer hooks are not part of teachgrad.

    >>> import teachgrad as tg
    >>> w = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = tg.optim.SGD([w], lr=0.1)
    >>> (w**2).sum().backward()      # grad = 2w
    >>> opt.step(); w                # w - 0.1 * 2w
    tensor([0.8000, 1.6000], requires_grad=True)
"""

from __future__ import annotations

import copy
import warnings
from collections import defaultdict
from itertools import chain

from .._printing import scalar_type_name
from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad


class Optimizer:
    """Base class of all optimizers: param groups, state, ``zero_grad``, ``step``, state dicts.

    ``params`` is an iterable of Tensors, or of dicts (param groups) each with a
    ``"params"`` entry and optional settings that override ``defaults``. A subclass
    passes its ``defaults`` and defines ``update(p, grad, group)``, the rule for one
    parameter (or overrides ``step`` itself, as torch's optimizers do).

    >>> import teachgrad as tg
    >>> class SignSGD(tg.optim.Optimizer):
    ...     def __init__(self, params, lr=0.1):
    ...         super().__init__(params, {"lr": lr})
    ...
    ...     def update(self, p, grad, group):
    ...         p.sub_(grad.sign(), alpha=group["lr"])
    >>> w = tg.tensor([3.0, -2.0], requires_grad=True)
    >>> opt = SignSGD([w])
    >>> (w**2).sum().backward(); opt.step(); w
    tensor([ 2.9000, -1.9000], requires_grad=True)
    """

    def __init__(self, params, defaults: dict):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or dicts, "
                f"but got {_typename(params)}\n  Wrap a single tensor in a list: SGD([w], ...)."
            )
        self.state = defaultdict(dict)
        self.param_groups = []
        groups = list(params)
        if not groups:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(groups[0], dict):
            groups = [{"params": groups}]
        for group in groups:
            self.add_param_group(group)

    def add_param_group(self, param_group: dict) -> None:
        """Add a group of parameters with its own settings (the others come from ``defaults``).

        >>> import teachgrad as tg
        >>> a, b = tg.zeros(2, requires_grad=True), tg.zeros(3, requires_grad=True)
        >>> opt = tg.optim.SGD([a], lr=0.1, momentum=0.9)
        >>> opt.add_param_group({"params": b, "lr": 0.01})
        >>> [(g["lr"], g["momentum"]) for g in opt.param_groups]
        [(0.1, 0.9), (0.01, 0.9)]
        """
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")
        params = param_group["params"]
        if isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but the ordering of "
                "tensors in sets will change between runs. Please use a list instead."
            )
        params = [params] if isinstance(params, Tensor) else list(params)
        for p in params:
            if not isinstance(p, Tensor):
                raise TypeError(
                    f"optimizer can only optimize Tensors, but one of the params is {_typename(p)}"
                )
            if not (p.is_leaf or p.retains_grad):
                raise ValueError(
                    "can't optimize a non-leaf Tensor\n  A parameter must be a leaf (made by you, "
                    f"not by an op); this one was made by {p.grad_fn.name()}."
                )
        param_group["params"] = params
        for name, default in self.defaults.items():
            param_group.setdefault(name, default)
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; in future, this will "
                "cause an error; see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )
        seen = set(chain.from_iterable(g["params"] for g in self.param_groups))
        if not seen.isdisjoint(params):
            raise ValueError("some parameters appear in more than one parameter group")
        self.param_groups.append(param_group)

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Forget the gradients: set each ``p.grad`` to None, or (``set_to_none=False``)
        fill it with zeros in place, detached from any graph.

        >>> import teachgrad as tg
        >>> w = tg.ones(2, requires_grad=True); opt = tg.optim.SGD([w])
        >>> w.sum().backward(); opt.zero_grad(set_to_none=False); w.grad
        tensor([0., 0.])
        >>> opt.zero_grad(); w.grad is None
        True
        """
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:  # made by backward(create_graph=True)
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def step(self, closure=None):
        """One update of every parameter that has a gradient; returns ``closure()``'s loss.

        ``closure`` (optional) re-computes the loss and its gradients; it runs with
        grad enabled even when ``step`` is called under ``no_grad``.

        >>> import teachgrad as tg
        >>> w = tg.tensor([1.0], requires_grad=True); opt = tg.optim.SGD([w], lr=0.5)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = (w**2).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure), w
        (tensor(1., grad_fn=<SumBackward0>), tensor([0.], requires_grad=True))
        """
        loss = None
        if closure is not None:
            with enable_grad():
                loss = closure()
        with no_grad():
            for group in self.param_groups:
                for p in group["params"]:
                    if p.grad is not None:
                        self.update(p, p.grad, group)
        return loss

    def update(self, p, grad, group) -> None:
        """The optimizer's rule for one parameter ``p`` with gradient ``grad`` and settings
        ``group``: change ``p`` in place (``step`` calls it under ``no_grad``). Subclasses
        define it; ``self.state[p]`` is where to keep what it remembers.

        >>> import teachgrad as tg
        >>> w = tg.ones(1, requires_grad=True); w.grad = tg.ones(1)
        >>> opt = tg.optim.SGD([w], lr=0.5)
        >>> with tg.no_grad():
        ...     opt.update(w, w.grad, opt.param_groups[0])
        >>> w
        tensor([0.5000], requires_grad=True)
        """
        raise NotImplementedError(f"{type(self).__name__} does not define update() or step()")

    def state_dict(self) -> dict:
        """The optimizer's settings and state, with each parameter replaced by its
        position: ``{"state": {index: {...}}, "param_groups": [{..., "params": [indices]}]}``.

        The state's tensors are the optimizer's own (not copies), as in torch.

        >>> import teachgrad as tg
        >>> w = tg.ones(2, requires_grad=True); opt = tg.optim.SGD([w], momentum=0.9)
        >>> w.sum().backward(); opt.step()
        >>> sd = opt.state_dict(); sd["param_groups"][0]["params"], list(sd["state"][0])
        ([0], ['momentum_buffer'])
        """
        index, groups, start = {}, [], 0
        for group in self.param_groups:
            for i, p in enumerate(group["params"], start):
                index.setdefault(id(p), i)
            start += len(group["params"])
            packed = {k: v for k, v in group.items() if k != "params"}
            packed["params"] = [index[id(p)] for p in group["params"]]
            groups.append(packed)
        state = {index[id(p)] if isinstance(p, Tensor) else p: s for p, s in self.state.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Take settings and state from ``state_dict()`` of an optimizer with groups of the
        same sizes; the state's tensors are cast to each parameter's dtype and device.

        >>> import teachgrad as tg
        >>> w = tg.ones(2, requires_grad=True); opt = tg.optim.Adam([w], lr=0.1)
        >>> w.sum().backward(); opt.step()
        >>> new = tg.optim.Adam([w]); new.load_state_dict(opt.state_dict())
        >>> new.param_groups[0]["lr"], new.state[w]["step"]
        (0.1, tensor(1.))
        """
        groups = self.param_groups
        saved_groups = copy.deepcopy(state_dict["param_groups"])
        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group that doesn't match the size of "
                "optimizer's group\n  group sizes: loaded "
                f"{[len(s['params']) for s in saved_groups]}, this optimizer's "
                f"{[len(g['params']) for g in groups]}"
            )
        param_of = dict(
            zip(
                chain.from_iterable(s["params"] for s in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )
        state = defaultdict(dict)
        for key, value in state_dict["state"].items():
            if key in param_of:
                p = param_of[key]
                state[p] = {name: _cast_like(p, name, v) for name, v in value.items()}
            else:
                state[key] = value
        for group, saved in zip(groups, saved_groups):
            saved["params"] = group["params"]
        self.state = state
        self.param_groups = saved_groups

    def __repr__(self) -> str:
        text = f"{type(self).__name__} ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            text += "".join(f"    {k}: {group[k]}\n" for k in sorted(group) if k != "params")
        return text + ")"


def check_setting(valid: bool, description: str, value) -> None:
    """torch's error for a bad setting of an optimizer: ``ValueError: Invalid <description>:
    <value>``, unless ``valid``. Each optimizer states its own conditions (as torch's do).

    >>> from teachgrad.optim.optimizer import check_setting
    >>> lr = -0.1
    >>> check_setting(lr >= 0.0, "learning rate", lr)
    Traceback (most recent call last):
    ...
    ValueError: Invalid learning rate: -0.1
    """
    if not valid:
        raise ValueError(f"Invalid {description}: {value}")


def check_one_element(value, name: str) -> None:
    """torch takes a setting such as ``lr`` as a tensor too (to change it in place while
    training), if it has one element.

    >>> import teachgrad as tg
    >>> from teachgrad.optim.optimizer import check_one_element
    >>> check_one_element(tg.tensor([0.1, 0.2]), "lr")
    Traceback (most recent call last):
    ...
    ValueError: Tensor lr must be 1-element
    """
    if isinstance(value, Tensor) and value.numel() != 1:
        raise ValueError(f"Tensor {name} must be 1-element")


def implementation_options(**options) -> dict:
    """torch's choices of how an optimizer runs (``foreach``, ``fused``: one kernel per list of
    parameters, or one in all), kept in the param groups as torch keeps them. teachgrad has
    one implementation, which gives the same steps. ``differentiable`` and ``capturable``
    change what a step does (a step autograd records; CUDA graphs): not in teachgrad.
    """
    for name in ("differentiable", "capturable"):
        if options.get(name):
            raise NotImplementedError(f"{name}=True is not supported by teachgrad's optimizers")
    return options


def as_number(value):
    """A setting's value as a Python number, also when it is given as a one-element tensor."""
    return value.item() if isinstance(value, Tensor) else value


def _cast_like(p, name, value):
    """A loaded state value, as torch loads it: tensors go to ``p``'s device (and to
    its dtype if ``p`` is floating point), except the ``step`` count, kept as is."""
    if not isinstance(value, Tensor) or name == "step":
        return value
    if p.is_floating_point():
        return value.to(dtype=p.dtype, device=p.device)
    return value.to(device=p.device)


def _typename(obj) -> str:
    if isinstance(obj, Tensor):  # torch's legacy name of a tensor's type: FloatTensor ...
        return f"teachgrad.{scalar_type_name(obj)}Tensor"
    cls = type(obj)
    return (
        cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
    )

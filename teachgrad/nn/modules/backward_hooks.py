"""A Module's backward hooks: ``register_full_backward_hook`` and
``register_full_backward_pre_hook``, as torch runs them; and the deprecated
``register_backward_hook`` (torch's "non-full" hook, at the end of this file).

A module is no node of the graph: its forward records many. To hand a hook the gradients
with respect to the module's inputs and outputs, the call passes its tensor inputs, and
then its tensor outputs, through an identity Function (``BackwardHookFunction``) and
watches the two nodes that records (node hooks, ``Node.register_hook``):

1. backward reaches the outputs' identity node first: its gradients are the module's
   ``grad_output``; the pre-hooks see them first (and may replace them);
2. then the inputs' identity node: its results are the module's ``grad_input``; the full
   hooks get ``(module, grad_input, grad_output)`` and may replace ``grad_input``.

A module none of whose inputs requires grad runs its full hooks at step 1, with a
``grad_input`` of Nones.

The legacy hook watches no module boundary: it is a hook on the one node that made the
module's (first) output, so its gradients are that node's, which are the module's only
when the forward is one op on its inputs (torch warns when it sees otherwise).

    >>> import teachgrad as tg
    >>> m = tg.nn.Linear(2, 1)
    >>> h = m.register_full_backward_hook(lambda mod, gin, gout: print(gout[0].shape))
    >>> m(tg.ones(3, 2, requires_grad=True)).sum().backward()
    teachgrad.Size([3, 1])
"""

from __future__ import annotations

import functools
import warnings

from ..._tensor import Tensor
from ...autograd.function import Function
from ...autograd.grad_mode import is_grad_enabled


class BackwardHookFunction(Function):
    """The identity on some tensors: a node in the graph where a module begins or ends."""

    @staticmethod
    def forward(ctx, *args):
        ctx.mark_non_differentiable(*[a for a in args if not a.requires_grad])
        return args

    @staticmethod
    def backward(ctx, *grads):
        return grads


class BackwardHook:
    """One call of a module with backward hooks: wraps its inputs, then its outputs."""

    def __init__(self, module, hooks, pre_hooks):
        self.module, self.hooks, self.pre_hooks = module, hooks, pre_hooks
        self.grad_outputs = None
        self.inputs_at = self.outputs_at = None  # places of the tensors among args / outputs
        self.n_inputs = self.n_outputs = 0

    def setup_input_hook(self, args):
        """Step 2's node: the module's tensor inputs through the identity."""
        self.n_inputs = len(args)
        args, self.inputs_at = _through_identity(args, self._input_hook)
        return args

    def setup_output_hook(self, output):
        """Step 1's node: the module's tensor outputs through the identity."""
        if not isinstance(output, Tensor | tuple):
            warnings.warn(
                "For backward hooks to be called, module output should be a Tensor or a tuple of "
                f"Tensors but received {type(output)}",
                stacklevel=3,
            )
        one = not isinstance(output, tuple)
        outputs = (output,) if one else output
        self.n_outputs = len(outputs)
        outputs, self.outputs_at = _through_identity(outputs, self._output_hook)
        return outputs[0] if one else outputs

    def _output_hook(self, _grad_inputs, grad_outputs):
        self.grad_outputs = _placed(self.outputs_at, grad_outputs, self.n_outputs)
        for hook in self.pre_hooks:
            new = hook(self.module, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(self.grad_outputs):
                raise RuntimeError(
                    "Backward pre hook returned an invalid number of grad_output, got "
                    f"{len(new)}, but expected {len(self.grad_outputs)}"
                )
            self.grad_outputs = new
        grad_outputs = self.grad_outputs
        if self.inputs_at is None:  # no input requires grad: step 2 will not come
            warnings.warn(
                "Full backward hook is firing when gradients are computed with respect to module "
                "outputs since no inputs require gradients. See https://docs.pytorch.org/docs/main/"
                "generated/torch.nn.Module.html#torch.nn.Module.register_full_backward_hook for "
                "more details.",
                stacklevel=5,
            )
            none = (None,) * self.n_inputs
            for hook in self.hooks:
                new = hook(self.module, none, self.grad_outputs)
                if new is not None and not (isinstance(new, tuple) and all(g is None for g in new)):
                    raise RuntimeError(
                        "Backward hook for Modules where no input requires gradient should always "
                        "return None or None for all gradients."
                    )
            self.grad_outputs = None
        return tuple(grad_outputs[i] for i in self.outputs_at)

    def _input_hook(self, grad_inputs, _grad_outputs):
        if self.grad_outputs is None:  # (the outputs' gradients were never computed)
            return None
        grads = _placed(self.inputs_at, grad_inputs, self.n_inputs)
        for hook in self.hooks:
            new = hook(self.module, grads, self.grad_outputs)
            if new is None:
                continue
            if len(new) != len(grads):
                raise RuntimeError(
                    "Backward hook returned an invalid number of grad_input, got "
                    f"{len(new)}, but expected {len(grads)}"
                )
            grads = new
        self.grad_outputs = None
        return tuple(grads[i] for i in self.inputs_at)


def _through_identity(values, hook):
    """``values`` with their tensors passed through one ``BackwardHookFunction`` whose node
    runs ``hook``; and the tensors' places (None, and ``values`` unchanged, when none of
    them requires grad or grad mode is off: there is no backward to watch)."""
    at = [i for i, v in enumerate(values) if isinstance(v, Tensor)]
    if not (is_grad_enabled() and any(values[i].requires_grad for i in at)):
        return values, None
    passed = BackwardHookFunction.apply(*(values[i] for i in at))
    passed = passed if isinstance(passed, tuple) else (passed,)
    node = next(t.grad_fn for t in passed if t.grad_fn is not None)
    node.register_hook(hook)
    values = list(values)
    for i, t in zip(at, passed, strict=True):
        values[i] = t
    return tuple(values), at


def _placed(at, grads, n) -> tuple:
    """``grads`` (one per tensor) put at their places ``at`` among ``n`` values; None elsewhere."""
    placed = [None] * n
    for i, g in zip(at, grads, strict=False):
        placed[i] = g
    return tuple(placed)


_LEGACY_PLEASE = "Please use register_full_backward_hook to get the documented behavior."


def hook_output_node(module, hooks, args, output) -> None:
    """``register_backward_hook``'s hooks: ``hook(module, grad_input, grad_output)`` runs as a
    node hook (``Node.register_hook``) of the node that made the module's first output
    tensor, so both tuples are that node's, and a returned tuple replaces its grad_inputs.
    Warns, as torch, where that node cannot be the whole module."""
    first = output
    while not isinstance(first, Tensor):  # (torch's walk: a dict's first tensor, else item 0)
        if isinstance(first, dict):
            first = next(v for v in first.values() if isinstance(v, Tensor))
        else:
            first = first[0]
    node = first.grad_fn
    if node is None:  # (no graph was recorded: nothing to watch, nothing to warn about)
        return
    for hook in hooks:
        node.register_hook(functools.partial(hook, module))
    message = _why_not_the_whole_module(args, output, node)
    if message:
        warnings.warn(message, FutureWarning, stacklevel=3)


def _why_not_the_whole_module(args, output, node) -> str | None:
    """torch's ``_maybe_warn_non_full_backward_hook``: why ``node``'s gradients may not be
    the module's (None when they are). (torch's fifth text, for outputs "nested in python
    data structure", needs a first output tensor without a node, which never gets here.)"""
    outputs = (output,) if isinstance(output, Tensor) else output
    for values, side, grads in ((outputs, "return", "output"), (args, "take as input", "input")):
        if not (isinstance(values, tuple) and all(isinstance(v, Tensor) for v in values)):
            return (
                f"Using non-full backward hooks on a Module that does not {side} a single Tensor "
                "or a tuple of Tensors is deprecated and will be removed in future versions. "
                f"This hook will be missing some of the grad_{grads}. {_LEGACY_PLEASE}"
            )
    if len({t.grad_fn for t in outputs if t.grad_fn is not None}) > 1:
        return (
            "Using a non-full backward hook when outputs are generated by different autograd "
            "Nodes is deprecated and will be removed in future versions. This hook will be "
            f"missing some grad_output. {_LEGACY_PLEASE}"
        )
    # the node's edges must lead exactly to the inputs' nodes (a leaf's is its AccumulateGrad,
    # not its grad_fn None: so with leaf inputs torch warns too)
    if {t.grad_fn for t in args if t.grad_fn is not None} != {f for f, _ in node.next_functions}:
        return (
            "Using a non-full backward hook when the forward contains multiple autograd Nodes is "
            "deprecated and will be removed in future versions. This hook will be missing some "
            f"grad_input. {_LEGACY_PLEASE}"
        )
    return None

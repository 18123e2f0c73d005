"""A Module's backward hooks: ``register_full_backward_hook`` and
``register_full_backward_pre_hook``, as torch runs them.

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

    >>> import teachgrad as tg
    >>> m = tg.nn.Linear(2, 1)
    >>> h = m.register_full_backward_hook(lambda mod, gin, gout: print(gout[0].shape))
    >>> m(tg.ones(3, 2, requires_grad=True)).sum().backward()
    teachgrad.Size([3, 1])
"""

from __future__ import annotations

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

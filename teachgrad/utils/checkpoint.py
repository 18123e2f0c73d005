"""Activation checkpointing, as torch's ``torch.utils.checkpoint``: trade compute for memory.

A function run under ``checkpoint`` keeps none of the tensors its ops save for backward;
backward runs the function again to make them. Two ways, as in torch:

* ``use_reentrant=False`` (recommended): the function runs under saved-tensor hooks whose
  pack keeps only a place number. The first unpack of a backward pass runs the function
  again, under hooks that catch what its ops save, in the same order; each unpack then
  hands out the tensor of its place. (torch checks that the second run saved as many
  tensors, of the same shapes and dtypes.)
* ``use_reentrant=True``: the function runs as the forward of a custom Function, with grad
  mode off (nothing recorded); its backward runs the function again with grad mode on and
  calls ``backward`` on that graph: a backward pass inside a backward pass.

Both put the random generator back as it was, so dropout masks repeat
(``preserve_rng_state``).

    >>> import teachgrad as tg
    >>> from teachgrad.utils.checkpoint import checkpoint
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> checkpoint(lambda v: (v * v).sin(), x, use_reentrant=False).sum().backward()
    >>> x.grad
    tensor([ 1.0806, -2.6146])
"""

from __future__ import annotations

import contextlib
import warnings

from .. import random as _random
from .._tensor import Tensor
from ..autograd import engine
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.tape import saved_tensors_hooks

__all__ = [
    "CheckpointError",
    "checkpoint",
    "checkpoint_sequential",
    "noop_context_fn",
    "set_checkpoint_early_stop",
]


class CheckpointError(RuntimeError):
    """What the non-reentrant checkpoint raises when the second run differs from the first."""


def noop_context_fn():
    """The default ``context_fn``: no context around either run."""
    return contextlib.nullcontext(), contextlib.nullcontext()


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    context_fn=noop_context_fn,
    determinism_check="default",
    debug=False,
    early_stop=True,
    preserve_rng_state=True,
    **kwargs,
):
    """``function(*args, **kwargs)``, keeping nothing for backward: backward runs it again.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> y = checkpoint(lambda v: v.exp(), x, use_reentrant=True); y.sum().backward(); x.grad
    tensor([2.7183, 2.7183])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly. "
            "Starting in PyTorch 2.9, calling checkpoint without use_reentrant will raise an "
            "exception. use_reentrant=False is recommended, but if you need to preserve the "
            "current default behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    if determinism_check not in ("default", "none"):
        raise ValueError(
            f"determinism_check should be one of ['default', 'none'], but got {determinism_check}"
        )
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError(
                "Passing `context_fn` or `debug` is only supported when use_reentrant=False."
            )
        if kwargs:
            raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
        return CheckpointFunction.apply(function, preserve_rng_state, *args)
    early_stop = early_stop if _early_stop.forced is None else _early_stop.forced
    run = _Recomputed(
        function, args, kwargs, preserve_rng_state, determinism_check, context_fn, early_stop
    )
    return run.first()


class _EarlyStop:
    forced = None  # set_checkpoint_early_stop's choice inside its block, for every checkpoint


_early_stop = _EarlyStop()


@contextlib.contextmanager
def set_checkpoint_early_stop(enable: bool):
    """Inside the block, every non-reentrant checkpoint stops (or, with False, does not
    stop) its second run once it has what backward needs, whatever its ``early_stop``.
    Only the forward needs to be inside.

    >>> import teachgrad as tg
    >>> with set_checkpoint_early_stop(False):
    ...     y = checkpoint(lambda v: v.exp(), tg.ones(2, requires_grad=True), use_reentrant=False)
    """
    before, _early_stop.forced = _early_stop.forced, enable
    try:
        yield
    finally:
        _early_stop.forced = before


# --------------------------------------------------------------------------- use_reentrant=True


class CheckpointFunction(Function):
    """The reentrant checkpoint: forward runs the function without recording; backward runs
    it again, recording, and backpropagates through that (``CheckpointFunctionBackward``)."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        if not any(isinstance(a, Tensor) and a.requires_grad for a in args):
            warnings.warn(
                "None of the inputs have requires_grad=True. Gradients will be None", stacklevel=5
            )
        ctx.run_function, ctx.preserve_rng_state = run_function, preserve_rng_state
        ctx.rng_state = _random.get_rng_state() if preserve_rng_state else None
        ctx.places = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
        ctx.others = [None if isinstance(a, Tensor) else a for a in args]
        ctx.save_for_backward(*(args[i] for i in ctx.places))
        with no_grad():
            return run_function(*args)

    @staticmethod
    def backward(ctx, *grads):
        if not engine.is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
                "passing an `inputs` parameter to .backward(). To resolve this error, you can "
                "either set use_reentrant=False, or call .backward() without passing the `inputs` "
                "argument."
            )
        inputs = list(ctx.others)
        for i, t in zip(ctx.places, ctx.saved_tensors, strict=True):
            inputs[i] = t.detach().requires_grad_(t.requires_grad)
        with _random.fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                _random.set_rng_state(ctx.rng_state)
            with enable_grad():
                outputs = ctx.run_function(*inputs)
        outputs = outputs if isinstance(outputs, tuple) else (outputs,)
        pairs = [
            (o, g)
            for o, g in zip(outputs, grads, strict=False)
            if isinstance(o, Tensor) and o.requires_grad
        ]
        if not pairs:
            raise RuntimeError(
                "none of output has requires_grad=True, this checkpoint() is not necessary"
            )
        engine.backward([o for o, _ in pairs], [g for _, g in pairs])
        return (None, None, *(i.grad if isinstance(i, Tensor) else None for i in inputs))


# --------------------------------------------------------------------------- use_reentrant=False


class _Recomputed:
    """One call of the non-reentrant checkpoint: the function, its inputs, what its first
    run's ops saved (as shapes and dtypes), and per backward pass what the second run saved."""

    def __init__(
        self,
        function,
        args,
        kwargs,
        preserve_rng_state,
        determinism_check,
        context_fn,
        early_stop=True,
    ):
        self.function, self.args, self.kwargs = function, args, kwargs
        self.rng_state = _random.get_rng_state() if preserve_rng_state else None
        self.check = determinism_check == "default"
        self.context_fn = context_fn
        self.metadata = []  # (shape, dtype, device) of each tensor the first run saved
        self.early_stop = early_stop  # stop the second run once it has saved as many
        self.runs = {}  # backward pass -> the tensors the second run saved, by place

    def first(self):
        """1. The function's first run: each saved tensor is packed as its place number."""
        forward_context, _ = self.context_fn()
        with saved_tensors_hooks(self.pack, self.unpack), forward_context:
            return self.function(*self.args, **self.kwargs)

    def pack(self, t):
        self.metadata.append(_metadata_of(t))
        return len(self.metadata) - 1

    def unpack(self, place):
        """2. The first unpack of a backward pass runs the function again; each place is
        handed out once per pass."""
        run = engine.current_pass() or object()  # (outside backward: a run of its own)
        if run not in self.runs:
            self.runs[run] = self.second()
        saved = self.runs[run]
        if saved[place] is None:
            raise CheckpointError(
                "torch.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                "unpacked once. If you are calling ctx.saved_tensors in backward, make sure to do "
                "so only once. Otherwise please open an issue with details on your use case."
            )
        t, saved[place] = saved[place], None
        return t

    def second(self) -> list:
        """The function's second run, recording, catching what its ops save (detached: its
        graph is not kept), with the first run's random state; it stops once it has saved
        as many tensors as the first (torch's early stop), and is checked against the first."""
        caught = []

        def catch(t):
            caught.append(t.detach() if t.requires_grad else t)
            if len(caught) > len(self.metadata):  # (without early stop)
                raise CheckpointError(
                    "torch.utils.checkpoint: trying to save more tensors during recomputation "
                    "than during the original forward pass.\n  The function must run the same "
                    "ops both times."
                )
            if self.early_stop and len(caught) == len(self.metadata):
                raise _Enough  # (the rest of the run would make nothing backward needs)
            return len(caught) - 1

        _, recompute_context = self.context_fn()
        with _random.fork_rng(enabled=self.rng_state is not None):
            if self.rng_state is not None:
                _random.set_rng_state(self.rng_state)
            hooks = saved_tensors_hooks(catch, caught.__getitem__)
            with hooks, enable_grad(), recompute_context, contextlib.suppress(_Enough):
                self.function(*self.args, **self.kwargs)
        if self.check:
            self._check(caught)
        return caught + [None] * (len(self.metadata) - len(caught))

    def _check(self, caught) -> None:
        if len(caught) < len(self.metadata):
            raise CheckpointError(
                "torch.utils.checkpoint: A different number of tensors was saved during the "
                "original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.metadata)}\n"
                f"Number of tensors saved during recomputation: {len(caught)}.\n\n"
                "The function must run the same ops both times: no branch on random numbers "
                "drawn without preserve_rng_state, or on state it changes itself."
            )
        differ = [
            f"tensor at position {k}:\nsaved metadata: {_shown(before)}\n"
            f"recomputed metadata: {_shown(_metadata_of(t))}\n"
            for k, (before, t) in enumerate(zip(self.metadata, caught, strict=True))
            if _metadata_of(t) != before
        ]
        if differ:
            raise CheckpointError(
                "torch.utils.checkpoint: Recomputed values for the following tensors have "
                "different metadata than during the forward pass.\n" + "".join(differ) + "\n"
                "The function must run the same ops, on tensors of the same shapes, both times."
            )


class _Enough(BaseException):
    """The second run has saved all backward needs: stop it. (No Exception, so that no
    ``except Exception`` in the function stops the stopping.)"""


def _metadata_of(t) -> tuple:
    return tuple(t.shape), t.dtype, t.device


def _shown(metadata) -> str:
    shape, dtype, device = metadata
    return f"{{'shape': teachgrad.Size({list(shape)}), 'dtype': {dtype}, 'device': {device!r}}}"


# --------------------------------------------------------------------------- sequential


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Run ``functions`` (a list, or an ``nn.Sequential``) one after another on ``input``, in
    ``segments`` checkpointed runs; the last segment runs plainly.

    >>> import teachgrad as tg
    >>> net = tg.nn.Sequential(tg.nn.Linear(2, 2), tg.nn.Tanh(), tg.nn.Linear(2, 1))
    >>> checkpoint_sequential(net, 2, tg.ones(1, 2), use_reentrant=False).shape
    teachgrad.Size([1, 1])
    """
    if use_reentrant is None:
        warnings.warn(
            "torch.utils.checkpoint.checkpoint_sequential: the use_reentrant parameter should be "
            "passed explicitly. In version 2.9 we will raise an exception if use_reentrant is not "
            "passed. use_reentrant=False is recommended, but if you need to preserve the current "
            "default behavior, you can pass use_reentrant=True. Refer to docs for more details on "
            "the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(kwargs))
    functions = list(functions.children()) if hasattr(functions, "children") else functions
    size = len(functions) // segments
    end = -1
    for start in range(0, size * (segments - 1), size):
        end = start + size - 1
        run = _segment(functions, start, end)
        input = checkpoint(run, input, use_reentrant=use_reentrant, preserve_rng_state=preserve)
    return _segment(functions, end + 1, len(functions) - 1)(input)


def _segment(functions, start, end):
    def run(x):
        for f in functions[start : end + 1]:
            x = f(x)
        return x

    return run

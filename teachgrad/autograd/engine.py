"""The engine: one generator that runs the graph backwards, node by node.

``backward_steps`` does all the work and yields a ``BackwardStep`` after each node
runs; ``backward()``, ``grad()`` and the visual stepper all drive it, so there is
exactly one engine. How it works:

1. Count, for every node reachable from the roots, how many edges lead into it
   (its *dependencies*): a node may only run once all its gradients have arrived.
2. Put the root gradients in the roots' input buffers. A node whose dependencies
   are all satisfied is *ready*; among ready nodes the latest created runs first
   (leaves' AccumulateGrad nodes first of all), as in torch.
3. Running a node: apply tensor hooks and pre-hooks to its incoming gradients,
   call its backward formula, apply post-hooks, free its saved tensors (unless
   ``retain_graph``), and add each result into the buffer of the next node.

With ``inputs`` (``grad()``, or ``backward(inputs=...)``) only nodes on a path to
an input run, and ``grad()`` reads the gradients arriving at the inputs instead of
touching any ``.grad``.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> loss = (x * x).sum()
    >>> [step.node.name() for step in tg.autograd.backward_steps(loss)]
    ['SumBackward0', 'MulBackward0', 'torch::autograd::AccumulateGrad']
    >>> x.grad
    tensor([2., 4.])
"""

from __future__ import annotations

import functools
import gc
import itertools
import sys
import threading
import warnings
from collections import deque
from collections.abc import Mapping
from heapq import heappop, heappush
from typing import NamedTuple

from .. import _events, _seam
from .._backend import address, array_module, as_array, device_of, numpy_module, quiet
from .._events import HookFired, NodeFinished, NodeStarted
from .._profiling import state as _profiling
from .._tensor import Size, Tensor, wrap_array
from . import anomaly_mode, function, tape
from .forward_ad import state as _fw_state
from .grad_mode import state as _grad_state
from .tape import AccumulateGrad, GradientEdge, Node, check_hook_result

_ndarray = numpy_module().ndarray


class BackwardStep(NamedTuple):
    """What one step of backward did: ``node`` ran on ``grad_outputs`` (one per
    output of the node) and produced ``grad_inputs`` (one per ``next_functions``
    edge); ``ready`` lists the nodes now waiting to run, next first."""

    node: Node
    grad_outputs: tuple
    grad_inputs: tuple
    queue: list  # the engine's ready heap at that moment (a copy); read it through .ready

    @property
    def ready(self) -> tuple:
        return tuple(entry[2] for entry in sorted(self.queue, key=lambda e: e[:2]))


def backward_steps(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Run backward one node at a time: a generator of ``BackwardStep``.

    Takes the arguments of ``backward``; exhausting it is exactly ``backward(...)``.

    >>> import teachgrad as tg
    >>> w = tg.tensor(2.0, requires_grad=True)
    >>> steps = tg.autograd.backward_steps(w * 3)
    >>> first = next(steps); first.node.name(), first.grad_outputs
    ('MulBackward0', (tensor(1.),))
    >>> rest = list(steps); w.grad
    tensor(3.)
    """
    return _steps(
        tensors, grad_tensors, retain_graph, create_graph, inputs, keep_grads_private=False
    )


def _steps(tensors, grad_tensors, retain_graph, create_graph, inputs, keep_grads_private):
    """``backward_steps``; ``keep_grads_private``: nobody outside the engine sees the steps
    (``backward()``), so none are made and leaves may keep gradient buffers without a copy."""
    inputs = None if inputs is None else _backward_inputs(inputs)
    tensors = _as_tuple(tensors)
    grads = _make_root_grads(tensors, _as_tuple(grad_tensors, len(tensors)), create_graph)
    roots = _root_edges(tensors)
    keep = create_graph if retain_graph is None else retain_graph
    quiet = keep_grads_private and not inputs and _nobody_watches(create_graph)  # (see _Quiet)
    kind = _Quiet if quiet else _Pass
    run = _PassTo(roots, keep, create_graph, inputs) if inputs else kind(keep, create_graph, roots)
    run.steal = keep_grads_private and not create_graph  # (a recorded .grad is always new)
    yield from _execute(run, roots, _arrays(grads) if quiet else grads, not keep_grads_private)


def backward(
    tensors,
    grad_tensors=None,
    retain_graph=None,
    create_graph=False,
    grad_variables=None,
    inputs=None,
) -> None:
    """Accumulate into ``.grad`` of the leaves the gradient of ``tensors`` (torch's signature).

    ``grad_tensors`` holds one gradient per tensor ("the vector" of the
    vector-Jacobian product); it may be left out for a one-element tensor.
    The graph is freed unless ``retain_graph=True``; with ``create_graph=True``
    the backward pass is itself recorded, so you can differentiate again.

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> tg.autograd.backward(x * 3, grad_tensors=tg.tensor([1.0, 0.5])); x.grad
    tensor([3.0000, 1.5000])
    """
    if grad_variables is not None:
        grad_tensors = _old_name_for_grad_tensors(grad_variables, grad_tensors)
    if create_graph:
        _warn_reference_cycle()
    _run(_steps(tensors, grad_tensors, retain_graph, create_graph, inputs, keep_grads_private=True))


def _old_name_for_grad_tensors(grad_variables, grad_tensors):
    """``backward(grad_variables=...)``, torch's old name for ``grad_tensors``: a warning."""
    warnings.warn(
        "'grad_variables' is deprecated. Use 'grad_tensors' instead.",
        DeprecationWarning,
        stacklevel=3,
    )
    if grad_tensors is not None:
        raise RuntimeError(
            "'grad_tensors' and 'grad_variables' (deprecated) arguments both passed to "
            "backward(). Please only use 'grad_tensors'."
        )
    return grad_variables


_warned_reference_cycle = False


def _warn_reference_cycle() -> None:
    """torch's warning (once per process, as torch gives it) that ``.grad`` made with
    ``create_graph=True`` keeps the graph that made it alive."""
    global _warned_reference_cycle
    if not _warned_reference_cycle:
        _warned_reference_cycle = True
        warnings.warn(
            "Using backward() with create_graph=True will create a reference cycle between the "
            "parameter and its gradient which can cause a memory leak. We recommend using "
            "autograd.grad when creating the graph to avoid this. If you have to use this "
            "function, make sure to reset the .grad fields of your parameters to None after use "
            "to break the cycle and avoid the leak.",
            UserWarning,
            stacklevel=3,
        )


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    only_inputs=True,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
) -> tuple:
    """Return the gradients of ``outputs`` w.r.t. ``inputs``, without touching any ``.grad``.

    Only the part of the graph between them runs. An input the outputs don't
    depend on is an error unless ``allow_unused=True`` (then its gradient is None,
    or zeros with ``materialize_grads=True``). ``is_grads_batched=True`` treats the
    first dimension of each grad_output as a batch of vectors. ``inputs`` may be a dict of
    tensors (``dict(model.named_parameters())``): the answer is then a dict of the same keys.

    >>> import teachgrad as tg
    >>> x = tg.tensor(3.0, requires_grad=True)
    >>> (dx,) = tg.autograd.grad(x ** 3, x, create_graph=True); dx
    tensor(27., grad_fn=<MulBackward0>)
    >>> tg.autograd.grad(dx, x)
    (tensor(18.),)
    """
    if not only_inputs:
        warnings.warn(
            "only_inputs argument is deprecated and is ignored now (defaults to True). To accumulate "
            "gradient for other parts of the graph, please use torch.autograd.backward.",
            DeprecationWarning,
            stacklevel=2,
        )
    if materialize_grads and allow_unused is False:
        raise ValueError(
            "Expected allow_unused to be True or not passed when materialize_grads=True, "
            "but got: allow_unused=False."
        )
    allow_unused = materialize_grads if allow_unused is None else allow_unused
    keys = inputs.keys() if type(inputs) is dict else None  # (then the answer is a dict too)
    outputs, inputs = _as_tuple(outputs), _input_tuple(inputs, "grad")
    if not inputs:
        raise RuntimeError("`inputs` argument to `grad()` cannot be empty.")
    grad_outputs = _as_tuple(grad_outputs, len(outputs))
    batch = _batch_size(outputs, grad_outputs) if is_grads_batched else None
    grads = _make_root_grads(outputs, grad_outputs, create_graph, batch)
    roots = _root_edges(outputs)
    _check_inputs(inputs, "grad")  # (after the outputs' checks: torch's order)
    keep = create_graph if retain_graph is None else retain_graph
    run = _PassTo(roots, keep, create_graph, inputs, accumulate=False)
    run.batch = batch
    _run(_execute(run, roots, grads, observed=False))
    captured, targets = run.captured, run.targets
    result = []
    for i, (t, edge) in enumerate(zip(inputs, targets, strict=True)):
        g = captured.get(edge)
        if g is None:
            if not allow_unused:
                what = "a GradientEdge" if type(t) is GradientEdge else f"shape {tuple(t.shape)}"
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior.\n  Input "
                    f"{i} ({what}) is not on any path from the outputs back to the leaves, so no "
                    "gradient reaches it."
                )
            if materialize_grads and type(t) is GradientEdge:  # (no tensor to take zeros like)
                raise RuntimeError(
                    "materialize_grads cannot be used when the given input is a GradientEdge"
                )
            if materialize_grads:
                # (without the batch dim when batched, as torch's zeros_like of the input)
                g = wrap_array(array_module(t._data).zeros_like(t._data))
                g._requires_grad = create_graph  # (as torch's zeros_like(..., requires_grad=))
        result.append(g)
    return tuple(result) if keys is None else dict(zip(keys, result, strict=True))


def _batch_size(outputs, grad_outputs) -> int:
    """``is_grads_batched``: the batch size, dim 0 of every grad_output.

    torch first makes the missing grad_outputs (``ones_like`` of a one-element output that
    requires grad, None for one that does not) and checks the given ones' shapes, then maps
    over dim 0 of all of them with vmap. Its errors come here in that order; a grad_output
    torch made itself is never right, as its dim 0 is the output's own.
    """
    shapes = []  # the shape of each grad_output vmap maps over (None: torch's placeholder)
    for i, (y, g) in enumerate(zip(outputs, grad_outputs, strict=True)):
        if not isinstance(y, _ONE):
            raise _not_an_output(y)
        if g is None:
            if y._requires_grad and y._data.size != 1:
                raise _not_scalar(i, y)
            shapes.append(y._data.shape if y._requires_grad else None)
        elif not isinstance(g, Tensor):
            raise _not_a_gradient(i, g)
        elif tuple(g.shape[1:]) != tuple(y._data.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as "
                "the batch dimension. The sizes of the remaining dimensions are expected to match the "
                f"shape of corresponding output, but a mismatch was detected: grad_output[{i}] has "
                f"a shape of {Size(g.shape[2:])} and output[{i}] has a shape of "
                f"{Size(y._data.shape)}. If you only want some "
                "tensors in `grad_output` to be considered batched, consider using vmap.\n  "
                f"(torch's words, which drop one dim too many: grad_output[{i}] has shape "
                f"{tuple(g.shape)}, and its dim 0 is the batch.)"
            )
        else:
            shapes.append(g.shape)
    sizes = [_mapped_size(shape) for shape in shapes]
    if len(set(sizes)) != 1:
        raise ValueError(
            "vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
            f"{sizes} for the mapped dimension\n  (is_grads_batched=True: dim 0 of every "
            "grad_output is the batch.)"
        )
    for i, (y, g) in enumerate(zip(outputs, grad_outputs)):
        if g is None:  # ones_like(y), mapped over its dim 0: a slice short of y's shape
            raise RuntimeError(
                f"invalid gradient at index {i} - got {list(y._data.shape[1:])} but expected shape "
                f"compatible with {list(y._data.shape)}\n  With is_grads_batched=True, pass every "
                "grad_output, with the batch as its dim 0."
            )
    return sizes[0]


def _mapped_size(shape) -> int:
    """The size of dim 0 of a grad_output torch's vmap maps over, or vmap's error."""
    where = "vmap(vjp, in_dims=0, ...)(<inputs>): Got in_dim=0 for "
    if shape is None:
        raise ValueError(
            where + "an input but the input is of type <class 'NoneType'>. We cannot vmap over "
            "non-Tensor arguments, please use None as the respective in_dim\n  (is_grads_batched="
            "True: an output that does not require grad has no grad_output to batch.)"
        )
    if len(shape) == 0:
        raise ValueError(
            where + "some input, but that input is a Tensor of dimensionality 0 so expected in_dim "
            "to satisfy 0 <= in_dim < 0.\n  (is_grads_batched=True: every grad_output needs a "
            "batch dim 0; None stands for a 0-d ones.)"
        )
    return shape[0]


def _collector_paused(run):
    """Decorator: Python's cyclic garbage collector off while ``run`` runs a pass (unless it
    is off already), back on after.

    Speed trick. A pass makes no reference cycles (it frees saved tensors and makes
    gradients that die young), yet a collection that falls inside it visits every object
    of the graph it runs, as big as the one recorded (``gc_pacing``'s docstring). Measured
    (``benchmarks/bench.py`` (e), 2026-11-29): a node's time at 100,000 nodes over its time
    at 1,000, 1.19 to 1.41 in three runs without, 1.16 to 1.20 in eight with. Cycles a
    hook makes during the pass are collected after it; the switch is process-wide, as
    ``gc.disable()`` is (a hook that turns the collector off for good must do it after the
    pass).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> _ = x.register_hook(lambda g: print("collecting:", gc.isenabled()))
    >>> (x * 2).sum().backward(); gc.isenabled()
    collecting: False
    True
    """

    @functools.wraps(run)
    def paused(steps):
        collecting = gc.isenabled()
        gc.disable()
        try:
            return run(steps)
        finally:
            if collecting:
                gc.enable()

    return paused


@quiet  # a backward pass makes inf/nan silently, as torch (one errstate for all its nodes)
@_collector_paused  # (speed: the graph has no cycles to find)
def _run(steps) -> None:
    """Run the engine's generator to the end, keeping no step.

    A backward started inside a node's backward (reentrant: a pass is running) runs deeper
    in the call stack; once the stack is deep, it runs on a fresh thread (a fresh stack), as
    torch's engine does, so that thousands of levels do not end in a RecursionError.
    """
    if _running.passes and _deep_in_the_stack():
        return _on_fresh_thread(steps)
    try:
        deque(steps, maxlen=0)
    except RuntimeError as error:
        raise _as_raised(error)  # noqa: B904 - the error itself, or the StopIteration it hid


def _as_raised(error) -> BaseException:
    """The error as the hook or backward that failed raised it: a StopIteration raised there
    became a RuntimeError on its way out of the engine's generators (PEP 479); torch lets it
    through unchanged (its own tools stop a pass that way). Any other error is itself."""
    stop = error.__cause__
    if isinstance(stop, StopIteration) and error.args == ("generator raised StopIteration",):
        stop.__suppress_context__ = True  # (the RuntimeError was Python's doing, not an error)
        return stop
    return error


def _deep_in_the_stack(frames: int = 400) -> bool:
    """Whether this thread's call stack is more than ``frames`` deep (a quarter of Python's
    default recursion limit; a reentrant backward adds about 15 frames per level)."""
    try:
        sys._getframe(frames)  # (walks the frames in C; raises when there are fewer)
    except ValueError:
        return False
    return True


def _on_fresh_thread(steps) -> None:
    """``_run(steps)`` on a new thread with this thread's grad mode and saved-tensor hook
    blocks (both per thread); its error is raised here."""
    modes = (
        _grad_state.enabled,
        _grad_state.inference,
        _grad_state.grad_in_inference,
        _grad_state.layer,
    )
    hooks = vars(tape.hooks_in_force)
    failed = []

    def work():
        (
            _grad_state.enabled,
            _grad_state.inference,
            _grad_state.grad_in_inference,
            _grad_state.layer,
        ) = modes
        vars(tape.hooks_in_force).update({name: blocks[:] for name, blocks in hooks.items()})
        try:
            _run(steps)
        except BaseException as error:  # noqa: BLE001 - handed to the waiting thread
            failed.append(error)

    worker = threading.Thread(target=work, name="teachgrad-reentrant-backward")
    worker.start()
    worker.join()
    if failed:
        raise failed[0]


def _execute(run, roots, root_grads, observed=True):
    """The engine loop (a generator), in the three steps of the module docstring.

    ``run`` is the pass (``_Pass``: its options and state); ``observed``: yield a
    ``BackwardStep`` after each node (``backward_steps``), else the loop just runs.
    """
    # 1. dependencies: how many gradients each node waits for (unless the pass has them)
    run.deps = run.deps or _dependencies(roots)
    # 2. the roots' gradients; nodes waiting for nothing else are ready
    for (node, nr), g in zip(roots, root_grads, strict=True):
        run.add(node, nr, g)
    for node in list(run.buffers):
        if node not in run.deps:
            run.ready(node)
    # 3. run the latest-created ready node, send its gradients on, until none is ready
    _grad_state.layer += run.create_graph  # (a bool) nodes made now: the graph of the gradient
    _running.passes.append(run)  # (the pass queue_callback adds to)
    hook_blocks = tape.hooks_in_force.pairs[:]  # the saved-tensor hook blocks each node starts with
    try:
        while run.heap:
            node = heappop(run.heap)[2]
            previous_mode, _grad_state.enabled = _grad_state.enabled, run.create_graph
            try:
                ran = run.node(node, run.buffers.pop(node))
                if ran is not None:  # (it ran: free what it saved, send its gradients on)
                    if not run.keep_graph and node._saved:
                        node._release_saved()
                    run.send(node, *ran)
            finally:  # (what a hook opened or closed is forgotten, as in torch)
                _grad_state.enabled, tape.hooks_in_force.pairs[:] = previous_mode, hook_blocks
            if ran is not None and observed:
                yield from _handed_out(run, _new_step(BackwardStep, (node, *ran, run.heap[:])))
            ran = None  # (holding its gradients would stop the next AccumulateGrad keeping one)
        if run.callbacks:
            _final_callbacks(run)
    finally:
        _grad_state.layer -= run.create_graph
        _running.passes.remove(run)


class _Running(threading.local):
    """This thread's backward passes now running, the innermost last."""

    def __init__(self):
        self.passes = []


_running = _Running()


def _nobody_watches(create_graph) -> bool:
    """Whether nothing outside the nodes can watch a pass: it makes no graph of the gradient
    (``create_graph``), and no profiler, forward-mode level or listener of a pass's events
    is on."""
    watched = NodeStarted.on or NodeFinished.on or _events.SavedTensorUnpacked.on
    return not (create_graph or _profiling.active or watched or _fw_state.level is not None)


def _hooked(node) -> bool:
    """Whether the user's code runs with ``node``: hooks on it or on its outputs, or an
    output's ``retain_grad``."""
    return bool(node._tensor_hooks or node._retain_grad or node._pre_hooks or node._post_hooks)


def _tensors(arrays) -> list:
    """Gradient arrays (None: no gradient) wrapped as Tensors, for a node of a quiet pass
    that runs as in any pass (``_Quiet``)."""
    return [None if g is None else wrap_array(g) for g in arrays]


def _arrays(tensors) -> list:
    """The arrays of gradients (None stays None): what a quiet pass carries (``_Quiet``)."""
    return [None if g is None else g._data for g in tensors]


def queue_callback(callback) -> None:
    """Run ``callback()`` once the backward pass now running has run its last node, before
    ``backward()``/``grad()`` returns (torch's ``Variable._execution_engine.queue_callback``).
    Callbacks run in the order queued, with the grad mode of the pass's nodes; one may queue
    another. In a backward started inside a node's backward, they belong to that inner pass.

    >>> import teachgrad as tg
    >>> said = []
    >>> class Shout(tg.autograd.Function):
    ...     @staticmethod
    ...     def forward(ctx, x):
    ...         return x.clone()
    ...     @staticmethod
    ...     def backward(ctx, g):
    ...         queue_callback(lambda: said.append("backward is done"))
    ...         return g
    >>> Shout.apply(tg.ones(2, requires_grad=True)).sum().backward(); said
    ['backward is done']
    """
    if not _running.passes:
        raise RuntimeError(
            "Final callbacks can only be installed during backward pass.\n  Call it from inside "
            "a node's backward (a custom Function's backward, or a hook), while backward() runs."
        )
    run = _running.passes[-1]
    run.callbacks = [*run.callbacks, callback]


def current_pass():
    """The backward pass now running on this thread (the innermost), or None outside one: what a
    hook that must tell passes apart keeps its state by (torch's graph task id).

    >>> current_pass() is None
    True
    """
    return _running.passes[-1] if _running.passes else None


def current_node():
    """The node the backward pass now running on this thread is at (running its formula or
    its hooks, or catching a gradient for an input of ``grad()``); None outside a pass and
    in the callbacks it runs after its last node: torch's ``_current_autograd_node``.

    The loop keeps no record of it, so that no backward pays for a question asked while
    debugging: it is the ``node`` of the innermost engine frame on this thread's stack.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, requires_grad=True); y = x * 2; seen = []
    >>> _ = y.register_hook(lambda g: seen.append(current_node().name()))
    >>> y.backward(); seen, current_node()
    (['MulBackward0'], None)
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _AT_A_NODE:
            return frame.f_locals.get("node")
        if frame.f_code is _final_callbacks.__code__:
            return None
        frame = frame.f_back
    return None


def will_run(node) -> bool:
    """Whether the backward pass now running runs ``node``, or catches the gradients that reach
    it (an input of ``grad()``): torch's ``_will_engine_execute_node``. A pass towards inputs
    runs only the nodes on a path to them; a plain pass, every node its roots reach.

    >>> import teachgrad as tg
    >>> x, y = tg.ones(1, requires_grad=True), tg.ones(1, requires_grad=True)
    >>> z = x * 2
    >>> ran = []
    >>> _ = z.register_hook(lambda g: ran.append((will_run(z.grad_fn), will_run((y * 2).grad_fn))))
    >>> z.sum().backward(); ran
    [(True, False)]
    """
    if not _running.passes:
        raise RuntimeError(
            "_get_should_execute_nodes should only be called during the backward pass\n  Call "
            "it (tg._C._will_engine_execute_node, autograd.engine.will_run) from a hook "
            "or a node's backward, while backward() or grad() runs."
        )
    run = _running.passes[-1]
    if run.reached is None:
        return node in run.deps or any(node is root for root, _ in run.roots)
    if node not in run.reached:
        return False
    caught = not run.accumulate and node in run.capture_at
    if caught and not any(fn is not None for fn, _ in node.next_functions):  # (a leaf's node)
        raise RuntimeError(
            "A leaf node was passed to _will_engine_execute_node but we are currently running "
            "autograd.grad(). This is currently not supported.\n  grad() catches the gradients "
            "of its inputs without running their nodes, and can't tell of a leaf's."
        )
    return True


def execution_order(run) -> list:
    """The nodes pass ``run`` runs, in the order it runs them (torch's
    ``_current_graph_task_execution_order``): the loop's own rule, the latest-made ready node
    first and a node ready once every gradient it waits for has come, played out on a fresh
    count of dependencies without running anything. A pass towards inputs lists the nodes
    it runs and those whose gradients it catches.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> y = x.exp().sum()
    >>> [node.name() for node in execution_order(_Pass(False, False, [(y.grad_fn, 0)]))]
    ['SumBackward0', 'ExpBackward0', 'torch::autograd::AccumulateGrad']
    """
    replay, order = _Pass(False, False), []  # (its heap: the loop's order of ready nodes)
    deps = _dependencies(run.roots)
    for node in {node: None for node, _ in run.roots if node is not None}:
        if node not in deps:
            _Pass.ready(replay, node)
    while replay.heap:
        node = heappop(replay.heap)[2]
        order.append(node)
        for nxt, _ in node.next_functions:
            if nxt is None or run.reached is not None and nxt not in run.reached:
                continue
            deps[nxt] -= 1
            if deps[nxt] == 0:
                _Pass.ready(replay, nxt)
    return order


def is_checkpoint_valid() -> bool:
    """False inside a pass towards chosen inputs (``grad()``, ``backward(inputs=...)``), where
    only part of the graph runs, so a checkpoint's recomputation can't be trusted; else True
    (torch's ``Variable._execution_engine.is_checkpoint_valid``).

    >>> is_checkpoint_valid()
    True
    """
    return not _running.passes or _running.passes[-1].reached is None


def _handed_out(run, step):
    """Yield ``step`` to whoever drives ``backward_steps``. Until they ask for the next one,
    the code that runs is theirs, not the pass's: ``queue_callback`` does not add to it."""
    _running.passes.remove(run)
    try:
        yield step
    finally:
        _running.passes.append(run)


def _final_callbacks(run) -> None:
    """After the last node: the queued callbacks, in the grad mode the nodes ran in (one a
    callback queues runs too: the loop reads ``run.callbacks`` afresh each time)."""
    previous_mode, _grad_state.enabled = _grad_state.enabled, run.create_graph
    try:
        done = 0
        while done < len(run.callbacks):
            run.callbacks[done]()
            done += 1
    finally:
        _grad_state.enabled = previous_mode


_ties = itertools.count()  # (nodes made at once: the first pushed runs first; see _Pass.ready)


class _Pass:
    """One backward pass: its options, and the state the loop reads and writes (each
    node's dependency count and gradient buffer, the heap of ready nodes).

    ``keep_graph``: do not free saved tensors; ``create_graph``: record the backward pass;
    ``roots``: the edges it starts from (for ``will_run``);
    ``steal``: see ``_claim_unshared``; ``batch``: every gradient has an extra first dim of this
    size (``is_grads_batched``). ``reached``: None, every node runs (see ``_PassTo``).
    ``deps`` (node -> how many gradients it still waits for) is set by the loop's step 1
    (``grad_rows`` gives its passes a copy of one count);
    ``buffers``: node -> one gradient (or None) per output of the node; ``heap``: the ready
    nodes as (-sequence number, tiebreak, node), the latest created first; ``callbacks``:
    what ``queue_callback`` queued, run after the last node; ``task_id``: the pass's number,
    given when first asked (``_C._current_graph_task_id``).
    """

    steal, batch, reached, callbacks, deps, task_id = False, None, None, (), None, None

    def __init__(self, keep_graph, create_graph, roots=()):
        self.keep_graph, self.create_graph, self.roots = keep_graph, bool(create_graph), roots
        self.buffers, self.heap = {}, []  # (both described in the class docstring)

    def add(self, node, nr, g) -> None:
        """Add gradient ``g`` (None: no gradient) into slot ``nr`` of ``node``'s buffer: one
        slot per output of the node; two gradients for one slot are summed."""
        buf = self.buffers.setdefault(node, [None] * len(node._output_meta))
        if g is not None:
            buf[nr] = g if buf[nr] is None else _summed(buf[nr], g)

    def ready(self, node) -> None:
        heappush(self.heap, (-node._seq, next(_ties), node))

    def node(self, node, grads):
        """Run one node: its backward formula, then free its saved tensors. Returns
        ``(grad_outputs, grad_inputs)``. A node with hooks, or one run while someone watches
        (events, the profiler), goes round by ``with_extras``; so does, in a pass towards
        inputs, a node that catches a gradient or does not run (``_PassTo.node``)."""
        if _hooked(node) or _profiling.active or NodeStarted.on or NodeFinished.on:
            return self.with_extras(node, grads)
        if self.steal and type(node) is AccumulateGrad:
            _claim_unshared(node, grads)  # (a gradient sent to two leaves: the last may keep it)
        return tuple(grads), node._apply(grads)  # the backward formula

    def with_extras(self, node, grads, timed=False):
        """``node`` with torch's extras around the formula: tensor hooks, pre-hooks, the
        ``NodeStarted`` event, the formula (timed by ``profile()``, or on a batch), post-hooks,
        ``NodeFinished``; and, with anomaly detection on (which listens to those events), the
        node's forward line when one of them fails. Returns None for a node a pass towards
        inputs does not need. Inside ``profile()`` all of it is timed as torch's engine event
        for the node (``timed``: that event is already open)."""
        if _profiling.active and not timed:
            run = lambda node, grads: self.with_extras(node, grads, timed=True)  # noqa: E731
            return _profiling.recorder.evaluate(node, run, grads)
        try:
            if self.reached is not None:  # a pass towards inputs: see _PassTo.takes
                grads = self.takes(node, grads)
                if grads is None:
                    return None  # (this node leads to none of the inputs)
            elif node._tensor_hooks or node._retain_grad:
                grads = node._run_tensor_hooks(grads)
            if node._pre_hooks:
                grads = _run_pre_hooks(node, grads, self.steal)
            elif self.steal and type(node) is AccumulateGrad:
                _claim_unshared(node, grads)
            grad_outputs = tuple(grads)
            if NodeStarted.on:
                _events.emit(NodeStarted, node=node, grad_outputs=grad_outputs)
            if _profiling.active or self.batch is not None:
                grad_inputs = _formula(node, grads, self.batch)
            else:
                grad_inputs = node._apply(grads)
            if node._post_hooks:
                grad_inputs = _run_post_hooks(node, grad_inputs, grad_outputs)
            if NodeFinished.on:
                _finished(node, grad_outputs, grad_inputs)
        except Exception as error:
            anomaly_mode.report(node, error)
            raise
        return grad_outputs, grad_inputs

    def send(self, node, grad_outputs, grad_inputs) -> None:
        """Send each gradient along its edge: add it into the next node's buffer, count
        one dependency down, and push the next node once it waits for nothing else."""
        deps, reached = self.deps, self.reached
        for (nxt, nr), g in zip(node.next_functions, grad_inputs):
            if nxt is None or reached is not None and nxt not in reached:
                continue
            self.add(nxt, nr, g)
            deps[nxt] -= 1
            if deps[nxt] == 0:
                self.ready(nxt)


def _summed(a, b):
    """Two gradients for one slot, added up: two Tensors with ``+`` (recorded when a graph of
    the gradient is wanted), two arrays (``_Quiet``) with NumPy's ``+``.

    >>> import numpy as np, teachgrad as tg
    >>> _summed(tg.ones(2), tg.ones(2)), _summed(np.ones(()), np.ones(()))
    (tensor([2., 2.]), array(2.))
    """
    return a + b if isinstance(a, Tensor) else as_array(a + b)  # (NumPy makes a 0-d sum a scalar)


class _PassTo(_Pass):
    """A pass towards ``inputs`` (``grad()``, ``backward(inputs=...)``): the gradients
    arriving at the inputs' edges go into ``captured``, and only nodes on a path to an
    input run (the inputs' own nodes too when ``accumulate``, as in torch)."""

    def __init__(self, roots, keep_graph, create_graph, inputs, accumulate=True):
        super().__init__(keep_graph, create_graph, roots)
        self.inputs = inputs
        self.targets = [tuple(t) if type(t) is GradientEdge else t._edge() for t in inputs]
        self.captured = {}
        self.capture_at = {}
        for node, nr in self.targets:
            if node is not None:
                self.capture_at.setdefault(node, []).append(nr)
        order = _post_order(roots)
        self.runs, self.accumulate = _nodes_to_run(order, self.capture_at, accumulate), accumulate
        # (an input the roots do not lead to is not reached: no gradient comes, nothing runs)
        self.reached = self.runs | (self.capture_at.keys() & set(order))

    def node(self, node, grads):
        """Run one node. Most go round by ``with_extras``, where ``takes`` catches the
        gradients reaching the inputs; a node that runs, catches none and gets no batch runs
        as in a plain pass. Speed: that saves ``with_extras`` and ``takes`` for most nodes of
        a ``grad()``, which ``jacobian`` makes once per row (callgrind, 2026-11-28: ``benchmarks/
        bench.py`` (d) -1.7%)."""
        if self.batch is None and node in self.runs and node not in self.capture_at:
            return _Pass.node(self, node, grads)
        return self.with_extras(node, grads)

    def ready(self, node) -> None:
        """Queue ``node``; or, when it only catches gradients (it does not run and has no
        tensor hooks), catch them now. Speed: such a node would come off the heap only to be
        caught, with nothing to observe in between (no hook, event or step); a leaf's
        ``AccumulateGrad``, which ``jacobian`` catches once per row, is one (callgrind,
        2026-11-28: ``benchmarks/bench.py`` (d) -2.2% to -3.0% over two runs)."""
        if node in self.runs or node._tensor_hooks or node._retain_grad:
            _Pass.ready(self, node)
        else:
            self.takes(node, self.buffers.pop(node))

    def again(self):
        """A new pass with this one's options and plan (``runs``, ``deps``), its own state."""
        run = object.__new__(type(self))
        run.__dict__.update(self.__dict__)
        run.buffers, run.heap, run.captured, run.deps = {}, [], {}, dict(self.deps)
        return run

    def takes(self, node, grads):
        """Capture what arrives at an input's edge, run the node's tensor hooks, and return
        the gradients ``node`` runs on, or None: it leads to no input, so it does not run.
        torch's order: a node that runs captures its gradients as they arrived (its hooks
        run with it), one that does not captures them after its hooks."""
        runs = node in self.runs
        hooked = node._tensor_hooks or node._retain_grad
        if hooked and not runs:
            grads = node._run_tensor_hooks(grads)
        for nr in self.capture_at.get(node, ()):
            self.captured[(node, nr)] = grads[nr]
        if not runs:
            return None
        return node._run_tensor_hooks(grads) if hooked else grads


class _Quiet(_Pass):
    """A ``backward()`` that nothing outside its nodes can watch (``_nobody_watches``): the
    gradients travel between the nodes as arrays. A built-in node without hooks whose
    formula runs on arrays (``on_arrays``) gets them as they are; any other node (a leaf's
    AccumulateGrad, a custom Function, a node with hooks) gets them wrapped, and runs as in
    a plain pass.

    Speed trick. Nobody sees the gradients of such a pass between two nodes, so they need
    no Tensor around them: a formula on arrays (``function.arrays_formula``) gets and gives
    arrays, and ``_summed`` adds arrays. The loop, its order and its sums are the same, so
    the gradients are the same bit for bit (``tests/.../test_quiet_pass.py``). Measured
    (2026-11-29, interleaved against the tree before, medians of 7 runs): ``benchmarks/
    bench.py`` (a), a chain op 8.22 -> 7.60 µs (-7.5%); the small MLP step (b3) 0.277 ->
    0.271 ms (-2.2%).

    >>> import teachgrad as tg
    >>> y = tg.ones(2, requires_grad=True) * 3
    >>> _ = y.register_hook(lambda g: print(type(current_pass()).__name__, type(g).__name__))
    >>> y.sum().backward()  # (a hook sees a Tensor)
    _Quiet Tensor
    """

    def node(self, node, grads):
        if node._on_arrays and len(grads) == 1 and grads[0] is not None and not _hooked(node):
            return (), function.arrays_formula(node, grads)  # (no step shows grad_outputs)
        grads[:] = _tensors(grads)  # (in place: a leaf may keep a gradient only this list holds)
        grad_outputs, grad_inputs = _Pass.node(self, node, grads)
        return grad_outputs, _arrays(grad_inputs)


_AT_A_NODE = (_execute.__code__, _PassTo.takes.__code__)  # (frames whose node is current_node)


def grad_rows(output, inputs, seeds, create_graph=False, seeds_checked=False) -> list:
    """``[grad(output, inputs, seed, retain_graph=True, allow_unused=True, create_graph=...)
    for seed in seeds]``: the rows of a Jacobian, one backward pass per seed, as
    ``jacobian(vectorize=False)`` makes them (hooks run once per row, as in torch).
    ``seeds_checked``: the caller made the seeds as ``grad`` would take them (tensors of the
    output's shape and device that do not require grad), so they are not checked again.

    Speed trick: every row's pass goes through the same graph to the same inputs, so which
    nodes run (``_PassTo``) and how many gradients each waits for (``_dependencies``) are
    worked out once, not once per row. Measured (callgrind, 2026-11-27): ``jacobian`` of
    ``tanh(W @ x)``, 64x64 (``benchmarks/bench.py`` (d)), 17.6 M -> 14.5 M instructions
    per call (-17%) against the tree before, which called ``grad`` once per row; seeds
    the caller checked, 2026-11-28: -3.2%. When nothing can watch the passes, so is the
    order the nodes run in (``_replayed``).

    >>> import teachgrad as tg
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> grad_rows(x * x, (x,), tg.eye(2).unbind())
    [(tensor([2., 0.]),), (tensor([0., 4.]),)]
    """
    outputs, inputs = (output,), _check_inputs(inputs, "grad")
    roots = _root_edges(outputs)
    plan = _PassTo(roots, True, create_graph, inputs, accumulate=False)
    order = execution_order(plan) if _unwatched(plan) else None
    plan.deps = _dependencies(roots) if order is None else {}  # (a replayed row counts none)
    rows = []

    def each_row():  # (one _run for all the rows: one errstate, one look at the stack)
        for seed in seeds:
            run = plan.again()
            grads = [seed] if seeds_checked else _make_root_grads(outputs, (seed,), create_graph)
            if order is None:
                yield from _execute(run, roots, grads, False)
            else:
                _replayed(run, order, roots, grads)
            rows.append(tuple(map(run.captured.get, run.targets)))

    _run(each_row())
    return rows


def _unwatched(plan) -> bool:
    """Whether nothing could tell ``plan``'s passes run by ``_replayed`` from passes run by
    the loop: no graph of the gradient is made, no profiler or listener of a pass's events,
    and the nodes have no hooks and run built-in formulas only (a custom backward, a hook
    or a listener is the user's code: it may switch grad mode, queue a callback or ask
    which node is running)."""
    if not _nobody_watches(plan.create_graph):
        return False
    for node in plan.reached:
        if _hooked(node):
            return False
        forward = getattr(node, "_forward_cls", None)  # (None: CopySlices, foreach's node ...)
        if node in plan.runs and not (forward and forward._builtin):
            return False
    return True


def _replayed(run, order, roots, grads) -> None:
    """One of ``grad_rows``'s passes that nothing watches (``_unwatched``): the nodes run down
    ``order``, the loop's own (``execution_order``, worked out once for all the rows), with
    grad mode off, as the loop runs them; gradients are added up as the loop adds them
    (``_Pass.add``), and those that reach the inputs are caught (``_PassTo.takes``).

    Speed trick: a row skips what the loop does for what could watch a pass or change it
    between two nodes (a generator, the grad mode and the saved-tensor hook blocks set back
    after each node, the heap of ready nodes, the count of gradients each waits for).
    Measured (2026-11-29, two interleaved runs against the tree before): ``benchmarks/
    bench.py`` (d), ``jacobian`` of ``tanh(W @ x)`` 64x64, 0.96 -> 0.76 and 0.95 -> 0.72 ms
    per call (-21%, -24%).
    """
    for (node, nr), g in zip(roots, grads, strict=True):
        run.add(node, nr, g)
    previous, _grad_state.enabled = _grad_state.enabled, False
    try:
        for node in order:
            grads = run.takes(node, run.buffers.pop(node))  # (None: it only catches them)
            if grads is not None:
                for (nxt, nr), g in zip(node.next_functions, node._apply(grads)):
                    if nxt in run.reached:
                        run.add(nxt, nr, g)
    finally:
        _grad_state.enabled = previous


def _formula(node, grads, batch) -> tuple:
    """One node's backward formula when someone watches (``profile()`` times it) or the
    gradients come in a batch (``is_grads_batched``)."""
    if _profiling.active:
        return _profiling.recorder.backward(node, _batched, grads, batch)
    return _batched(node, grads, batch)


def _batched(node, grads, batch) -> tuple:
    return node._apply(grads) if batch is None else _apply_batched(node, grads, batch)


def _finished(node, grad_outputs, grad_inputs) -> None:
    _events.emit(NodeFinished, node=node, grad_outputs=grad_outputs, grad_inputs=tuple(grad_inputs))


def _run_pre_hooks(node, grads, steal=False) -> list:
    for hook in list(node._pre_hooks.values()):
        new = hook(tuple(grads))
        if HookFired.on:
            _events.emit(HookFired, kind="pre", owner=node, hook=hook)
        if new is not None:
            grads = _checked_hook_values(hook, new, grads, node)
    new = None  # (the last result holds a reference that _claim_unshared would count)
    if steal and type(node) is AccumulateGrad:
        _claim_unshared(node, grads)
    return grads


def _run_post_hooks(node, grad_inputs, grad_outputs) -> tuple:
    for hook in list(node._post_hooks.values()):
        new = hook(grad_inputs, grad_outputs)
        if HookFired.on:
            _events.emit(HookFired, kind="post", owner=node, hook=hook)
        if new is not None:
            grad_inputs = tuple(_checked_hook_values(hook, new, grad_inputs, node))
    return grad_inputs


def _apply_batched(node, grads, batch) -> tuple:
    """Run ``node`` on a batch of gradients: all rows at once when its backward formula
    allows an extra leading dim (``batchable`` Functions), else row by row, stacked."""
    if getattr(node, "batchable", False):
        return node._apply(grads, batch)
    rows = [node._apply([None if g is None else g[b] for g in grads]) for b in range(batch)]
    result = []
    for column in zip(*rows, strict=True):
        present = [g for g in column if g is not None]
        if not present:
            result.append(None)
            continue
        zero = present[0] * 0  # a row that got no gradient contributes zeros
        result.append(_seam.stack([zero if g is None else g for g in column]))
    return tuple(result)


def _checked_hook_values(hook, new, old, node) -> list:
    """A node hook's replacement gradients, checked like torch checks them."""
    new = list(new)
    if len(new) != len(old):
        raise RuntimeError(
            f"hook '{getattr(hook, '__name__', 'hook')}' has returned an incorrect number of values (got "
            f"{len(new)}, but expected {len(old)})\n  A hook on {node.name()} must return one gradient per "
            "position of the tuple it received (or None to keep them)."
        )
    return [
        g if g is None or o is None else check_hook_result(g, o, node, i, hook)
        for i, (g, o) in enumerate(zip(new, old))
    ]


_new_step = tuple.__new__  # BackwardStep(...) without the namedtuple's Python-level __new__


def _claim_unshared(node, grads) -> None:
    """Speed: a leaf's gradient that nobody but the engine holds becomes its ``.grad``
    itself, not a copy, as torch's AccumulateGrad steals a gradient whose use count says
    only the engine holds it: a gradient a node made for the leaf, a sum in a buffer, a
    hook's fresh result (after the leaf's hooks ran, which may keep a reference). The claim
    (``tape.claim``, else None: no claim) is for the AccumulateGrad ``node`` that runs next,
    and made only when its leaf takes a gradient, so that ``accumulate_grad`` always spends
    it. Then the node's post hooks see ``.grad`` itself in their ``grad_outputs``, as in
    torch. Only ``backward()`` steals (``steal``): ``backward_steps`` shows every gradient
    to its caller. It saves one copy of every leaf's gradient per backward (the MLP step's
    weight and bias gradients, 2.7 MB a step in ``benchmarks/bench.py`` (b))."""
    g = grads[0]  # its array must be its own too: a pass-through formula wraps it anew
    if g is not None and g._data.base is not None:  # (a view: maybe of a buffer only it reaches)
        g = grads[0] = _unaliased(g)
    owns = g is not None and g._data.base is None and sys.getrefcount(g._data) <= 2  # g's, call's
    takes = owns and node.variable._requires_grad and sys.getrefcount(g) <= 3  # + the list's
    tape.claim.tensor = g if takes else None


def _unaliased(g):
    """``g``; or, when g is a view of the whole of its base array (same memory, shape and
    strides) and nothing but g reaches either, a plain tensor on that base array, which the
    leaf may then keep without a copy, as torch's AccumulateGrad keeps it (``linear``'s
    weight gradient: the transpose of a transposed matrix product). g's base tensor, if it
    has one, may hold that array or a view of it (when the product was made on arrays);
    in a quiet pass (``_Quiet``), where gradients travel as arrays, g has none."""
    view, owner = g._data, g._base
    base = view.base
    if type(base) is not type(view):  # (as_strided's view has an object of NumPy's as base)
        return g
    if owner is not None and owner._data is not base and owner._data.base is not base:
        return g  # (its base tensor is some other memory: leave it)
    same = view.shape == base.shape and view.strides == base.strides and view.dtype == base.dtype
    # who holds each: g (the list, the caller, this call, getrefcount); its base tensor (g,
    # this frame, getrefcount); the view (g, this frame, getrefcount); the array (the view,
    # the base tensor if any, this frame, getrefcount)
    alone = sys.getrefcount(g) <= 4 and sys.getrefcount(view) <= 3
    alone = alone and (owner is None or sys.getrefcount(owner) <= 3)
    alone = alone and sys.getrefcount(base) <= (3 if owner is None else 4)
    return wrap_array(base) if same and alone and address(view) == address(base) else g


def _dependencies(roots) -> dict:
    """For each node reachable from the roots: how many edges lead into it. (A node is
    visited once: the roots first, every other node when the first edge reaches it.)"""
    deps = {}
    stack = list({node: None for node, _ in roots if node is not None})  # each root once
    starts = set(stack)
    while stack:
        for child, _ in stack.pop().next_functions:
            if child is not None:
                deps[child] = deps.get(child, 0) + 1
                if deps[child] == 1 and child not in starts:
                    stack.append(child)
    return deps


def _post_order(roots) -> list:
    """Reachable nodes, each after all the nodes it leads to (children first)."""
    order, seen = [], set()
    for root, _ in roots:
        if root is None or root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in seen:
                    seen.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                order.append(node)
                stack.pop()
    return order


def _nodes_to_run(order, capture_at, accumulate) -> set:
    """Nodes on a path to a target edge: the only ones that need to run (``order``: the
    reachable nodes, children first). With ``backward(inputs=...)`` (``accumulate``) the
    targets' own nodes run too, as in torch: their hooks fire, and what they send on reaches
    only nodes that run."""
    runs = set()
    for node in order:  # children come before their parents
        target = accumulate and node in capture_at
        if target or not isinstance(node, AccumulateGrad) and _leads_to(node, runs, capture_at):
            runs.add(node)
    return runs


def _leads_to(node, runs, capture_at) -> bool:
    """Whether one of ``node``'s edges leads to a node that runs or to a target."""
    return any(c is not None and (c in runs or c in capture_at) for c, _ in node.next_functions)


_ONE = (Tensor, GradientEdge)  # what stands alone as tensors=, inputs= (not a sequence of them)


def _as_tuple(x, n=None) -> tuple:
    """``tensors=``/``inputs=`` as a tuple; with ``n``, the gradients for ``n`` outputs.
    As in torch, only a Tensor stands alone among gradients (a GradientEdge is a named
    tuple: read as a sequence, its node is then no gradient), and gradients beyond the
    ``n``-th are left out (torch zips them with the outputs)."""
    if n is None:
        return (x,) if isinstance(x, _ONE) or x is None else tuple(x)
    x = (None,) * n if x is None else (x,) if isinstance(x, Tensor) else tuple(x)
    if len(x) < n:
        raise _too_few_gradients(n, len(x))
    return x[:n]


def _too_few_gradients(n, got) -> RuntimeError:
    return RuntimeError(
        f"got {n} tensors and {got} gradients\n  Give one gradient per output (None for a "
        "one-element output)."
    )


def _root_edges(tensors) -> list:
    """The edge each output's gradient enters the graph by (a GradientEdge: itself); an
    output with no node to enter by (one that does not require grad, or a view made under
    no_grad, which requires grad but has no history) is torch's error."""
    edges = []
    for i, t in enumerate(tensors):
        edges.append(t._edge() if _differentiable(t) else (None, 0))
        if edges[i][0] is None:
            raise _not_differentiable(i)
    return edges


def _differentiable(t) -> bool:
    """Whether an output or input (a tensor or an edge) requires grad; a view also when its
    base does (an in-place change of the base gave it a history it has not read yet)."""
    return t._requires_grad or t.requires_grad


def _make_root_grads(tensors, grads, create_graph, batch=None) -> list:
    """The gradient each output starts with: ones for a one-element output when none is
    given ("dy/dy = 1"), else the given one (``_given_root_grad``). Checked output by
    output, before ``_root_edges`` asks whether they require grad (torch's order)."""
    result = []
    for i, (t, g) in enumerate(zip(tensors, grads, strict=True)):
        if g is not None or not isinstance(t, _ONE) or not _differentiable(t):
            result.append(_given_root_grad(i, t, g, create_graph, batch))
        elif t._data.size != 1:
            raise _not_scalar(i, t)
        else:
            result.append(wrap_array(array_module(t._data).ones_like(t._data)))
    return result


def _given_root_grad(i, t, g, create_graph, batch):
    """A gradient given for output ``i``: a Tensor of its shape and device (checked by
    ``_batch_size`` when batched). Also an output that is no Tensor (refused), or one that
    does not require grad (given no gradient: ``_root_edges`` refuses it)."""
    if not isinstance(t, _ONE):
        raise _not_an_output(t)
    if g is None:
        return None
    if not isinstance(g, Tensor):
        raise _not_a_gradient(i, g)
    if batch is None:
        _check_grad_output(i, g, t)
    return g if create_graph or not g._requires_grad else g.detach()


def _not_a_gradient(i, g) -> Exception:
    return TypeError(
        f"gradients can be either Tensors or None, but got {type(g).__name__}\n  The "
        f"gradient for output {i} must be a tensor of its shape (None: ones, for a "
        "one-element output)."
    )


def _not_an_output(t) -> Exception:
    return AssertionError(
        f"Expected output to be a teachgrad.Tensor\n  Got {type(t).__name__} {t!r}: backward and "
        "grad differentiate Tensors (a Python number has no graph)."
    )


def _not_differentiable(i) -> Exception:
    return RuntimeError(
        f"element {i} of tensors does not require grad and does not have a grad_fn\n"
        "  This tensor is not connected to anything that requires grad, so there is nothing to "
        "differentiate. Did you forget requires_grad=True on an input, compute it under no_grad(), "
        "or .detach() it?"
    )


def _not_scalar(i, t) -> Exception:
    return RuntimeError(
        "grad can be implicitly created only for scalar outputs\n"
        f"  Output {i} has shape {tuple(t._data.shape)}. backward() needs the vector v of the "
        "vector-Jacobian product: pass gradient=tg.ones_like(out) (or reduce it first, e.g. "
        "out.sum().backward())."
    )


def _check_grad_output(i, g, t) -> None:
    """A given gradient must have its output's shape and device."""
    if g._data.shape != t._data.shape:  # (t: a Tensor or a GradientEdge)
        raise RuntimeError(
            f"Mismatch in shape: grad_output[{i}] has a shape of {g.shape} and "
            f"output[{i}] has a shape of {type(g.shape)(t._data.shape)}.\n  The gradient you pass for an output "
            "is dLoss/dOutput: it must have exactly that output's shape."
        )
    on_the_cpu = type(g._data) is _ndarray and type(t._data) is _ndarray  # (there is one)
    if not on_the_cpu and g.device != device_of(t._data):
        raise RuntimeError(
            f"Expected all tensors to be on the same device: grad_output[{i}] is on "
            f"{g.device} but output[{i}] is on {device_of(t._data)}"
        )


def calculate_shape(output, grad, is_grads_batched: bool) -> tuple:
    """``(output's shape, grad's shape)`` as backward compares them (torch's private
    ``autograd._calculate_shape``): a batched grad's shape without its batch dim, and for
    a ``GradientEdge`` the shape its node records for that output.

    >>> import teachgrad as tg
    >>> calculate_shape(tg.ones(2, 3), tg.ones(4, 2, 3), True)
    (teachgrad.Size([2, 3]), teachgrad.Size([2, 3]))
    """
    if isinstance(output, GradientEdge):
        if is_grads_batched:
            raise RuntimeError("Batched grads are not supported with GradientEdge")
        return Size(output.node._input_metadata[output.output_nr].shape), grad.shape
    return output.shape, Size(grad.shape[1:]) if is_grads_batched else grad.shape


def _input_tuple(inputs, where: str) -> tuple:
    """``inputs=`` as a tuple: one tensor or edge, a sequence of them, or a dict of them (its
    values, e.g. ``dict(model.named_parameters())``; ``grad()`` then answers with a dict)."""
    if type(inputs) is dict:
        return tuple(inputs.values())
    if isinstance(inputs, Mapping):
        raise TypeError(
            f"`inputs` argument to `{where}()` must be a dict, not {type(inputs).__name__}. Other "
            "Mapping types are not supported.\n  Pass dict(inputs)."
        )
    return _as_tuple(inputs)


def _backward_inputs(inputs) -> tuple:
    """``backward(inputs=...)`` checked; as in torch, a non-leaf among them keeps its
    ``.grad`` from now on (``retain_grad``)."""
    inputs = _check_inputs(inputs, "backward")
    for t in inputs:
        if type(t) is not GradientEdge and t.grad_fn is not None:
            t.retain_grad()
    return inputs


def _check_inputs(inputs, where: str) -> tuple:
    inputs = _input_tuple(inputs, where)
    if not inputs and where == "backward":  # (grad() says it in its own words)
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    for i, t in enumerate(inputs):
        if type(t) is GradientEdge:  # the gradient flowing into that edge
            continue
        if not isinstance(t, Tensor):
            raise RuntimeError(
                "all inputs have to be Tensors or GradientEdges, but got "
                f"{type(t).__name__}\n  {where}()'s input {i} is no tensor."
            )
        if not _differentiable(t):  # (backward's words are those of the retain_grad it calls)
            first = (
                "can't retain_grad on Tensor that has requires_grad=False"
                if where == "backward"
                else "One of the differentiated Tensors does not require grad"
            )
            raise RuntimeError(
                f"{first}\n  It is input {i}, of shape {tuple(t.shape)}: set requires_grad=True "
                "on it before the forward pass."
            )
    return inputs


_seam.provide(backward=backward)  # Tensor.backward runs it (see teachgrad/_seam.py)

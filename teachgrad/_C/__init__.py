"""``teachgrad._C``: the private helpers of ``torch._C`` that torch's own autograd tests and
tools call, for what teachgrad has: the backward pass now running (torch's "graph task"),
and in ``_functions`` two nodes that tests build graphs with. Each is a thin name over
teachgrad's own engine (``autograd.engine``: ``current_pass``, ``current_node``,
``will_run``, ``execution_order``), with torch's errors.

>>> import teachgrad as tg
>>> tg._C._current_graph_task_id()  # no backward is running
-1
"""

import itertools

from ..autograd import engine
from ..autograd.grad_mode import is_multithreading_enabled
from ..autograd.tape import Node
from . import _functions

_task_ids = itertools.count()


def _current_graph_task_id() -> int:
    """A number for the backward pass now running, new for each pass; -1 outside one.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, requires_grad=True); seen = []
    >>> _ = x.register_hook(lambda g: seen.append(_current_graph_task_id()))
    >>> (x * 2).backward(); (x * 2).backward()
    >>> seen[1] > seen[0] >= 0
    True
    """
    run = engine.current_pass()
    if run is None:
        return -1
    if run.task_id is None:  # (numbered when first asked: the order passes are asked in)
        run.task_id = next(_task_ids)
    return run.task_id


def _current_autograd_node():
    """The node the backward pass now running is at, or None; see
    ``autograd.engine.current_node``.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, requires_grad=True); seen = []
    >>> _ = x.register_hook(lambda g: seen.append(_current_autograd_node().name()))
    >>> (x * 2).backward(); seen, _current_autograd_node()
    (['torch::autograd::AccumulateGrad'], None)
    """
    return engine.current_node()


def _will_engine_execute_node(node) -> bool:
    """Whether the backward pass now running runs ``node`` (a grad_fn), or catches the
    gradients that reach it; see ``autograd.engine.will_run``.

    >>> import teachgrad as tg
    >>> x = tg.ones(1, requires_grad=True); y = x * 2; seen = []
    >>> _ = y.register_hook(lambda g: seen.append(_will_engine_execute_node(y.grad_fn)))
    >>> y.backward(); seen
    [True]
    """
    if not isinstance(node, Node):
        raise RuntimeError(
            f"_will_engine_execute_node expects an grad_fn, but got {type(node).__name__}\n  "
            "Pass a node (t.grad_fn, or a leaf's AccumulateGrad from "
            "autograd.graph.get_gradient_edge(t).node), not a tensor."
        )
    return engine.will_run(node)  # (outside a pass: its error, torch's)


def _current_graph_task_execution_order() -> list:
    """The nodes of the backward pass now running, in the order it runs them; see
    ``autograd.engine.execution_order``. As in torch, only with multithreading disabled.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True); y = x.exp().sum(); seen = []
    >>> _ = y.register_hook(lambda g: seen.extend(_current_graph_task_execution_order()))
    >>> with tg.autograd.set_multithreading_enabled(False):
    ...     y.backward()
    >>> [node.name() for node in seen]
    ['SumBackward0', 'ExpBackward0', 'torch::autograd::AccumulateGrad']
    """
    run = engine.current_pass()
    if run is None:
        raise RuntimeError(
            "_current_graph_task_execution_order should only be called during the backward "
            "pass\n  Call it from a hook or a node's backward, while backward() or grad() runs."
        )
    if is_multithreading_enabled():
        raise RuntimeError(
            "get_current_graph_task_execution_order expects the current backward to be executed "
            "with multithreading disabled, e.g. by running:\n\n>>> with "
            "torch.autograd.set_multithreading_enabled(False):\n...     torch.autograd.grad(...)\n"
            "\n  (in teachgrad: tg.autograd.set_multithreading_enabled(False))"
        )
    return engine.execution_order(run)

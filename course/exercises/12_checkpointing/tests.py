"""Graded tests for 12_checkpointing: a Checkpoint Function, graded on its gradients and on
the memory the blocks hold.

The blocks are the tests' own functions (the autograder serves them from the grader, so
every measurement below happens here). A ``saved_tensors_hooks`` pair tracks each tensor a
block saves for backward while a graph still references it: after a checkpointed forward,
the blocks must hold nothing, and each block must run exactly twice.
"""

import contextlib
import gc
import weakref

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, get, points

rng = np.random.default_rng(12)
MESSAGE = "does not require grad"


class Saved:
    """One tensor a block saved for backward (a weakly referenceable box)."""

    def __init__(self, tensor):
        self.tensor = tensor


class Blocks:
    """``depth`` blocks x -> tanh(x @ W_k) + x that count their runs and what they hold."""

    def __init__(self, depth, width):
        self.weights = [tg.tensor(rng.standard_normal((width, width)) / 4) for _ in range(depth)]
        self.runs = [0] * depth
        self.held = weakref.WeakSet()  # what the blocks saved, while a graph still has it
        self.inside = False
        self.functions = [self.block(k) for k in range(depth)]

    def block(self, k):
        def block(x):
            self.runs[k] += 1
            self.inside = True
            try:
                return (x @ self.weights[k]).tanh() + x
            finally:
                self.inside = False

        block.__name__ = block.__qualname__ = f"block{k}"
        return block

    def pack(self, tensor):
        box = Saved(tensor)
        if self.inside:
            self.held.add(box)
        return box

    @staticmethod
    def unpack(box):
        return box.tensor

    def numbers_held(self):
        gc.collect()
        return sum(box.tensor.numel() for box in self.held)

    @contextlib.contextmanager
    def watched(self):
        with tg.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
            yield


def chain(ns, blocks, x, *, checkpointed=True):
    """The blocks applied to x, each through the student's Checkpoint (or directly)."""
    checkpoint = get(ns, "Checkpoint") if checkpointed else None
    out = x
    for f in blocks.functions:
        out = checkpoint.apply(f, out) if checkpointed else f(out)
    if not isinstance(out, tg.Tensor):
        raise Failure("forward", f"Checkpoint.apply(fn, x) should return a Tensor, got {out!r}.")
    return out


def run(ns, depth=5, width=16, batch=8, *, backward=True):
    """(blocks, x, g, output, numbers the blocks hold after forward) of one watched chain,
    and its backward with upstream gradient g unless ``backward=False``."""
    blocks = Blocks(depth, width)
    x = tg.tensor(rng.standard_normal((batch, width)), requires_grad=True)
    g = tg.tensor(rng.standard_normal((batch, width)))
    with blocks.watched():
        out = chain(ns, blocks, x)
        held = blocks.numbers_held()
        try:
            if backward:
                (out * g).sum().backward()
        except RuntimeError as err:
            if MESSAGE in str(err):
                raise Failure("no_graph", f"backward raised: {err}") from None
            raise
    return blocks, x, g, out, held


def plain(blocks, x, g):
    """(output, gradient of <output, g>) of the same blocks, not checkpointed, on a copy of x."""
    x = x.detach().requires_grad_()
    out = x
    for w in blocks.weights:
        out = (out @ w).tanh() + out
    (out * g).sum().backward()
    return out.detach().numpy(), x.grad.numpy()


def check_gradients(ns, depth=5, width=16, batch=8):
    blocks, x, g, *_ = run(ns, depth, width, batch)
    _, expected = plain(blocks, x, g)
    got = np.zeros(expected.shape) if x.grad is None else x.grad.numpy()
    if not agree(got, expected):
        details = f"x.grad after backward:\n  expected:\n{_indent(expected[:2])}\n  got:\n{_indent(got[:2])}"
        raise Failure("zeros" if not got.any() else "wrong_values", f"(first 2 rows) {details}")


def check_memory(ns, depth=5, width=16, batch=8):
    *_, held = run(ns, depth, width, batch, backward=False)
    if held:
        blocks = Blocks(depth, width)  # the same chain, not checkpointed, for comparison
        with blocks.watched():
            x = tg.tensor(rng.standard_normal((batch, width)), requires_grad=True)
            out = chain(ns, blocks, x, checkpointed=False)
            plain_held = blocks.numbers_held()
        del out
        raise Failure(
            "memory",
            f"after the checkpointed forward, the blocks still hold {held} numbers saved for "
            f"backward (a plain chain holds {plain_held}); a checkpointed chain holds none "
            "until backward recomputes each block.",
        )


@points(1, uses=("Checkpoint",))
def test_forward(ns):
    """Five checkpointed blocks give the plain chain's output."""
    blocks, x, g, out, _ = run(ns, backward=False)
    expected, _ = plain(blocks, x, g)
    if not agree(out.detach().numpy(), expected):
        raise Failure("forward", "the checkpointed chain's output differs from the plain chain's.")


@points(3, uses=("Checkpoint",))
def test_gradients(ns):
    """x.grad through five checkpointed blocks equals the plain chain's gradient."""
    check_gradients(ns)


@points(3, uses=("Checkpoint",))
def test_memory(ns):
    """After forward, the blocks hold nothing for backward: only the inputs are kept."""
    check_memory(ns)


@points(1, uses=("Checkpoint",))
def test_runs_twice(ns):
    """Each block runs exactly twice: once in forward, once recomputed in backward."""
    blocks, *_ = run(ns)
    if blocks.runs != [2] * len(blocks.runs):
        raise Failure("recompute", f"the blocks ran {blocks.runs} times, in chain order.")


@points(1, uses=("Checkpoint",), hidden=True)
def test_deeper_chain(ns):
    """Hidden: eight blocks of width 12 on a batch of 3: gradients and memory."""
    check_gradients(ns, depth=8, width=12, batch=3)
    check_memory(ns, depth=8, width=12, batch=3)

"""Graded tests for 12_checkpointing: a Checkpoint Function, graded on its gradients (the
input's and the blocks' weights') and on the activations the blocks hold.

The blocks are the tests' own functions (the autograder serves them from the grader, so
every measurement below happens here). A ``saved_tensors_hooks`` pair tracks each tensor a
block saves for backward while a graph still references it, each piece of memory once and
the weights left out (they stay in memory anyway): after a checkpointed forward, the blocks
must hold nothing, and each block must run exactly twice. A hook on each block's output
notes when a gradient flows through it: a checkpoint's forward runs each block once and
differentiates nothing (the gradients are backward's work; computed ahead, they would be
memory the saved-tensor hooks do not see).
"""

import contextlib
import gc
import weakref

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, get, points

rng = np.random.default_rng(12)
MESSAGE = "does not require grad"
# Checkpoint's backward records its block again and asks teachgrad's autograd for its gradients
RECOMPUTE = ("enable_grad", "grad", "backward", "vjp")


class Saved:
    """One tensor a block saved for backward (a weakly referenceable box)."""

    def __init__(self, tensor):
        self.tensor = tensor


class Blocks:
    """``depth`` blocks (x, a, b) -> tanh(x @ a) @ b + x, with weights a_k, b_k that
    require grad, that count their runs and what they hold."""

    def __init__(self, depth, width, hidden=None):
        hidden = hidden or 2 * width
        self.weights = [
            tg.tensor(rng.standard_normal(shape) / 4, requires_grad=True)
            for _ in range(depth)
            for shape in ((width, hidden), (hidden, width))
        ]
        self.runs = [0] * depth
        self.held = weakref.WeakSet()  # what the blocks saved, while a graph still has it
        self.inside = False
        self.phase = "forward"  # (the test sets "backward" before it calls backward)
        self.early = []  # the blocks a gradient flowed through while the phase was "forward"
        self.functions = [self.block(k) for k in range(depth)]

    def block(self, k):
        def block(x, a, b):
            self.runs[k] += 1
            self.inside = True
            try:
                out = (x @ a).tanh() @ b + x
            finally:
                self.inside = False
            if out.requires_grad:  # (recorded: note when a gradient flows through the block)
                out.register_hook(lambda grad: self.flowed(k))
            return out

        block.__name__ = block.__qualname__ = f"block{k}"
        return block

    def flowed(self, k) -> None:
        if self.phase == "forward":
            self.early.append(k)

    def pack(self, tensor):
        box = Saved(tensor)
        if self.inside:
            self.held.add(box)
        return box

    @staticmethod
    def unpack(box):
        return box.tensor

    def numbers_held(self):
        """Activations the blocks hold: each piece of memory once, the weights left out."""
        gc.collect()
        weights = {w.data_ptr() for w in self.weights}
        held = {box.tensor.data_ptr(): box.tensor.numel() for box in self.held}
        return sum(n for ptr, n in held.items() if ptr not in weights)

    @contextlib.contextmanager
    def watched(self):
        with tg.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
            yield


def chain(ns, blocks, x, *, checkpointed=True):
    """The blocks applied to x, each through the student's Checkpoint (or directly)."""
    checkpoint = get(ns, "Checkpoint") if checkpointed else None
    out = x
    for f, a, b in zip(blocks.functions, blocks.weights[::2], blocks.weights[1::2]):
        out = checkpoint.apply(f, out, a, b) if checkpointed else f(out, a, b)
    if not isinstance(out, tg.Tensor):
        raise Failure("forward", f"Checkpoint.apply(fn, x, ...) should return a Tensor: {out!r}.")
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
            blocks.phase = "backward"
            if backward:
                (out * g).sum().backward()
        except RuntimeError as err:
            if MESSAGE in str(err):
                raise Failure("no_graph", f"backward raised: {err}") from None
            raise
    return blocks, x, g, out, held


def plain(blocks, x, g):
    """(output, gradients of <output, g> for x and each weight) of the same blocks, not
    checkpointed, on copies of x and of the weights."""
    x = x.detach().requires_grad_()
    weights = [w.detach().requires_grad_() for w in blocks.weights]
    out = x
    for a, b in zip(weights[::2], weights[1::2]):
        out = (out @ a).tanh() @ b + out
    (out * g).sum().backward()
    return out.detach().numpy(), [x.grad.numpy()] + [w.grad.numpy() for w in weights]


def check_gradients(ns, depth=5, width=16, batch=8):
    blocks, x, g, *_ = run(ns, depth, width, batch)
    _, expected = plain(blocks, x, g)
    if all(w.grad is None for w in blocks.weights):
        raise Failure("parameters", f"none of the {len(blocks.weights)} weights got a .grad.")
    leaves = {"x": x} | {f"weight {k}": w for k, w in enumerate(blocks.weights)}
    for (what, leaf), want in zip(leaves.items(), expected):
        got = np.zeros(want.shape) if leaf.grad is None else leaf.grad.numpy()
        if not agree(got, want):
            shown = f"expected:\n{_indent(want[:2])}\n  got:\n{_indent(got[:2])}"
            cause = "zeros" if not got.any() else "wrong_values"
            raise Failure(cause, f"{what}.grad after backward (first 2 rows):\n  {shown}")


def check_memory(ns, depth=5, width=16, batch=8):
    blocks, *_, held = run(ns, depth, width, batch, backward=False)
    if blocks.early:
        raise Failure(
            "memory",
            f"during the checkpointed forward a gradient already flowed through block "
            f"{blocks.early[0]}: forward differentiated the block and kept the result, which "
            "is memory too. A checkpoint's forward only runs each block (without a graph); "
            "backward runs it again and differentiates it then.",
        )
    if blocks.runs != [1] * depth:
        raise Failure(
            "memory",
            f"during the checkpointed forward the blocks ran {blocks.runs} times, in chain "
            "order; a checkpoint's forward runs each block once (and backward once more).",
        )
    if held:
        blocks = Blocks(depth, width)  # the same chain, not checkpointed, for comparison
        with blocks.watched():
            x = tg.tensor(rng.standard_normal((batch, width)), requires_grad=True)
            out = chain(ns, blocks, x, checkpointed=False)
            plain_held = blocks.numbers_held()
        del out
        raise Failure(
            "memory",
            f"after the checkpointed forward, the blocks still hold {held} numbers of "
            f"activations for backward (a plain chain holds {plain_held}); a checkpointed chain "
            "holds none "
            "until backward recomputes each block.",
        )


@points(1, uses=("Checkpoint",), autograd=RECOMPUTE)
def test_forward(ns):
    """Five checkpointed blocks give the plain chain's output."""
    blocks, x, g, out, _ = run(ns, backward=False)
    expected, _ = plain(blocks, x, g)
    if not agree(out.detach().numpy(), expected):
        raise Failure("forward", "the checkpointed chain's output differs from the plain chain's.")


@points(3, uses=("Checkpoint",), autograd=RECOMPUTE)
def test_gradients(ns):
    """x and every weight get the plain chain's gradients through five checkpointed blocks."""
    check_gradients(ns)


@points(3, uses=("Checkpoint",), autograd=RECOMPUTE)
def test_memory(ns):
    """After forward, the blocks hold no activation for backward: only their inputs are kept."""
    check_memory(ns)


@points(1, uses=("Checkpoint",), autograd=RECOMPUTE)
def test_runs_twice(ns):
    """Each block runs exactly twice: once in forward, once recomputed in backward."""
    blocks, *_ = run(ns)
    if blocks.runs != [2] * len(blocks.runs):
        raise Failure("recompute", f"the blocks ran {blocks.runs} times, in chain order.")


@points(1, uses=("Checkpoint",), hidden=True, autograd=RECOMPUTE)
def test_deeper_chain(ns):
    """Hidden: eight blocks of width 12 on a batch of 3: gradients and memory."""
    check_gradients(ns, depth=8, width=12, batch=3)
    check_memory(ns, depth=8, width=12, batch=3)

"""A long training loop keeps its memory flat: nothing the engine, the optimizers or the
version counters keep grows with the number of steps (issue 20, "Memory").

Measured with tracemalloc, which slows each step about fivefold: 10,000 steps after a
warm-up, the issue's number (before the fix, 104 bytes a step with SGD and momentum, 194
with Adam: 1 and 2 MB here); they take about ten seconds."""

import gc
import tracemalloc

import pytest

import teachgrad as tg

F = tg.nn.functional
STEPS = 10_000


@pytest.mark.no_standin("measures host memory: the stand-in's own bookkeeping would count")
@pytest.mark.parametrize(
    "make",
    [
        lambda p: tg.optim.SGD(p, lr=0.01, momentum=0.9),
        lambda p: tg.optim.Adam(p, lr=0.001),
    ],
    ids=["SGD momentum", "Adam"],
)
def test_a_long_training_loop_leaves_memory_flat(make):
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.ReLU(), tg.nn.Linear(4, 2))
    optimizer = make(model.parameters())
    x, target = tg.randn(5, 3), tg.tensor([0, 1, 1, 0, 1])

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), target).backward()
        optimizer.step()

    for _ in range(100):  # buffers made at the first steps (momentum, Adam's moments)
        step()
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(STEPS):
            step()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # (what grew before the fix: each version counter kept every bump's op name. What grows
    # now is a few kilobytes that level off, about 1 byte a step over the first 2,000 steps
    # and less after: Python's and NumPy's own caches, which ran before in the process decides)
    assert grown < 4 * STEPS, f"{grown / STEPS:.1f} bytes more per step"

"""A long training loop keeps its memory flat: nothing the engine, the optimizers or the
version counters keep grows with the number of steps (issue 20, "Memory").

The loop runs the issue's 10,000 steps under tracemalloc (which slows each step about
fivefold; about a minute each). The growth is measured from step 2,000 on: over the first
steps an object made before tracing started and replaced while it runs (a version number, a
step count) counts as new once, which is not growth. A leak grows with every step (before
the fix, 104 bytes a step with SGD and momentum, 194 with Adam: 0.8 and 1.6 MB here)."""

import gc
import tracemalloc

import pytest

import teachgrad as tg

F = tg.nn.functional
STEPS = 10_000
SETTLED = 2_000  # the step the growth is measured from


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
        for _ in range(SETTLED):
            step()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(STEPS - SETTLED):
            step()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # (what grew before the fix: each version counter kept every bump's op name. What grows
    # now is 1 to 2 bytes a step, less and less: NumPy's and Python's own caches)
    measured = STEPS - SETTLED
    assert grown < 4 * measured, f"{grown / measured:.1f} bytes more per step"

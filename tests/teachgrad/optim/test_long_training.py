"""A long training loop keeps its memory flat: nothing the engine, the optimizers or the
version counters keep grows with the number of steps (issue 20, "Memory").

The loop runs the issue's 10,000 steps; tracemalloc, which slows each step about fivefold,
traces the last 1,500 and measures the last 1,000 of them: in the first traced steps an
object made before tracing started and replaced while it runs (a version number, a step
count) counts as new once, which is not growth, while a leak grows with every step, so it
shows in the last steps as plainly as anywhere (before the fix, 104 bytes a step with SGD
and momentum, 194 with Adam: 0.1 and 0.2 MB over those steps, against a limit of 16 kB;
the allocators' own noise is 1 to 4 bytes a step)."""

import gc
import tracemalloc

import pytest

import teachgrad as tg

F = tg.nn.functional
STEPS = 10_000
TRACED = 1_500  # the last steps, traced ...
MEASURED = 1_000  # ... and the last of those, measured


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
    model = tg.nn.Linear(3, 2)  # (small: the steps are many)
    optimizer = make(model.parameters())
    x, target = tg.randn(5, 3), tg.tensor([0, 1, 1, 0, 1])

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), target).backward()
        optimizer.step()

    for _ in range(STEPS - TRACED):  # (the first steps make momentum, Adam's moments ...)
        step()
    tracemalloc.start()
    try:
        for _ in range(TRACED - MEASURED):
            step()
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(MEASURED):
            step()
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    # (what grew before the fix: each version counter kept every bump's op name. What the
    # measure shows now is 1 to 4 bytes a step, from run to run: the allocators' own noise)
    assert grown < 16 * MEASURED, f"{grown / MEASURED:.1f} bytes more per step"

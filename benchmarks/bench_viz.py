"""How the visual tools scale: the stepper, the DOT and text writers, folding, GraphView.

    python benchmarks/bench_viz.py [--rounds 5]

Four measurements, on chains of ``tanh(0.9 * y)`` (two recorded ops per link) and on a
small MLP's training loop:

1. one ``BackwardStepper.step()`` on a 1,000-op graph, including the redraw (the
   picture is drawn with the Graphviz program found, folded as ``draw`` folds it), and
   ``run()`` to the end on 10 to 1,000 ops (linear: the snapshot is updated per step);
2. ``viz.render.to_dot`` and ``viz.text`` on 1,000 and 3,000 ops: linear means the
   3k/1k ratio is near 3;
3. a 2,000-node graph drawn with folding, DOT to SVG included;
4. a training loop (1,000 steps of a small MLP, about half a second) with a live
   ``GraphView`` watching it (default throttle, drawing beside the loop as in a
   notebook) against the same loop without one.

Times are medians over ``--rounds`` rounds; targets from the pictures issue are
printed beside them.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import teachgrad as tg  # noqa: E402 - after the path is set
import viz  # noqa: E402
from viz import _clusters, render  # noqa: E402
from viz.live import GraphView  # noqa: E402
from viz.stepper import BackwardStepper  # noqa: E402


def chain(ops: int):
    """A loss at the end of ``ops`` recorded ops."""
    x = tg.ones(4, requires_grad=True)
    y = x
    for _ in range(ops // 2):
        y = (y * 0.9).tanh()
    return y.sum()


def median_time(fn, rounds: int, setup=None) -> float:
    """The median time of ``fn()`` over ``rounds``; ``setup()`` runs before each, untimed.
    As in bench.py, the objects that exist before timing (the graph being drawn) are
    frozen (``gc.collect(); gc.freeze()``): the collector's passes over the graph are
    issue 19's subject, not the writers'."""
    times = []
    for _ in range(rounds):
        if setup is not None:
            setup()
        gc.collect()
        gc.freeze()
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        gc.unfreeze()
    return statistics.median(times)


def stepper_run(ops: int) -> float:
    """Seconds for ``BackwardStepper(loss).run()`` through ``ops`` ops (one redraw, at the end)."""
    stepper = BackwardStepper(chain(ops))
    start = time.perf_counter()
    stepper.run()
    return time.perf_counter() - start


def stepper_step(rounds: int) -> float:
    """Seconds per Step in the middle of backward through 1,000 ops, redraw included."""
    stepper = BackwardStepper(chain(1000))
    for _ in range(10):
        stepper.step()
    return median_time(stepper.step, rounds)


def writers(rounds: int) -> dict:
    found = {}
    for ops in (1000, 3000):
        snap = tg.autograd.graph.snapshot(chain(ops))
        found[("to_dot", ops)] = median_time(
            lambda s=snap: render.to_dot(s), rounds, forget_structures
        )
        found[("text", ops)] = median_time(lambda s=snap: viz.text(s), rounds)
    return found


def folded_drawing(rounds: int) -> float:
    snap = tg.autograd.graph.snapshot(chain(2000))
    return median_time(lambda: render.to_svg(snap), rounds, forget_structures)


def forget_structures() -> None:
    """Make the next drawing a first one: without the structure that a stepper's later
    drawings reuse (viz._clusters._structure). Untimed: freeing the previous graph's
    structure is not part of drawing the next one."""
    _clusters._STRUCTURES.clear()


def training(view: bool, steps: int = 1000) -> float:
    model = tg.nn.Sequential(tg.nn.Linear(16, 32), tg.nn.Tanh(), tg.nn.Linear(32, 4))
    optimizer = tg.optim.SGD(model.parameters(), lr=0.1)
    x, labels = tg.randn(64, 16), tg.randint(0, 4, (64,))
    watcher = GraphView(background=True) if view else None  # as in a notebook
    start = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad()
        loss = tg.nn.functional.cross_entropy(model(x), labels)
        loss.backward()
        optimizer.step()
    elapsed = time.perf_counter() - start  # the loop's time: what the learner waits for
    if watcher is not None:
        watcher.close()
    return elapsed


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    found = render.find_renderer()
    print(f"renderer: {found.name if found else 'none (text)'}")

    step = stepper_step(args.rounds)
    print(f"(1) stepper step, 1,000 ops, redraw included: {step * 1e3:.1f} ms (target <= 50 ms)")
    runs = ", ".join(f"{ops} ops {stepper_run(ops):.2f} s" for ops in (10, 100, 300, 1000))
    print(f"(1) stepper run() to the end: {runs}")
    times = writers(args.rounds)
    for name in ("to_dot", "text"):
        small, big = times[(name, 1000)], times[(name, 3000)]
        print(
            f"(2) {name}: 1k ops {small * 1e3:.1f} ms, 3k ops {big * 1e3:.1f} ms, "
            f"ratio {big / small:.2f} (target <= 3.3)"
        )
    if found is not None:
        print(
            f"(3) 2,000-node graph drawn, folded: {folded_drawing(args.rounds):.2f} s (target < 2 s)"
        )
    plain, watched = [], []
    for _ in range(args.rounds):  # interleaved: the machine's noise hits both alike
        plain.append(training(view=False))
        watched.append(training(view=True))
    ratio = statistics.median(watched) / statistics.median(plain)
    print(
        f"(4) training loop with a live GraphView: {ratio:.2f}x the loop without (target <= 1.10x)"
    )


if __name__ == "__main__":
    main()

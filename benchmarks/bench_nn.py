#!/usr/bin/env python
"""teachgrad vs PyTorch (CPU), and hand-written NumPy where practical: nn, optim, functional.

bench.py measures the engine with core ops; this script measures the op set built on
it, as a user meets it. Five benchmarks:

(1) MLP step: ``nn.Linear`` + ``nn.ReLU``, 784-512-512-10, batch 256, float32,
    ``F.cross_entropy``, ``optim.SGD(lr=0.01)``: zero_grad, forward, loss, backward,
    step; ms per step.
(2) small MLP step: the same with 64-64-10 and batch 32, where the time goes into
    per-op overhead rather than into BLAS.
(3) conv net step: a batch of 64 images 1x28x28; two 3x3 convolutions with 32
    channels (padding 1, ReLU), a 2x2 max-pool, a linear head to 10 classes,
    cross_entropy, SGD. teachgrad vs torch only.
(4) jacobian of ``f(x) = tanh(A @ x)``, x of size 256 in float64:
    ``autograd.functional.jacobian`` with ``vectorize=False``, ``vectorize=True`` and
    ``strategy="forward-mode"`` in both libraries, and ``torch.func.jacrev``. NumPy
    computes the answer in closed form, ``(1 - y²)[:, None] * A``.
(5) ``gradcheck`` of ``(a * b).sin().sum()`` with two float64 (5,) inputs.
    teachgrad vs torch only.

The method is bench.py's, and so is the code: this script imports bench.py for the
thread setup, the interleaved timing, the aligned copies of the data, the machine
facts and the report's pieces. teachgrad and torch run the same Python function;
NumPy's are hand-written. Before timing, the script checks that all implementations
compute the same numbers (losses, gradients, parameters after a step, Jacobians) and
stops with a message naming the first disagreement.

    python benchmarks/bench_nn.py                   # all five, under a minute
    python benchmarks/bench_nn.py --rounds 15 --json results.json
    python benchmarks/bench_nn.py --only conv       # one benchmark (repeatable)
    python benchmarks/bench_nn.py --profile mlp     # cProfile of teachgrad's step
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path

# First: importing bench puts the --threads count into the BLAS/OpenMP environment
# variables, then loads NumPy (those libraries read the variables once, when loaded).
import bench

BENCHMARKS = ("mlp", "small", "conv", "jacobian", "gradcheck")


def parse_args(argv=None):
    p = bench.common_parser(__doc__, BENCHMARKS)
    p.add_argument(
        "--profile",
        choices=BENCHMARKS,
        help="instead of benchmarking, cProfile teachgrad on one benchmark and print the top functions",
    )
    return p.parse_args(argv)


# bench's helpers (load, machine_facts) read --threads and --no-torch from bench.ARGS.
ARGS = bench.ARGS = parse_args()

import numpy as np  # noqa: E402 - after bench (see above)
from bench import aligned_copy, load, to_lib, to_numpy  # noqa: E402

LR = 0.01
N_CLASSES = 10


# ---------------------------------------------------------------------------------- models
def mlp(lib, sizes):
    """``Linear, ReLU, ..., Linear`` as an ``nn.Sequential``: the same code for both libraries.

    Returns the module (which holds the parameters) and the forward function (itself)."""
    nn = lib.nn
    layers = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])  # no ReLU after the last layer: it gives the logits
    return model, model


def conv_net(lib):
    """Two 3x3 convolutions (32 channels, padding 1, ReLU), a 2x2 max-pool, a linear head.

    Returns the module holding the parameters and the forward function. teachgrad has
    no ``nn.MaxPool2d``, so both libraries pool with ``F.max_pool2d`` between two
    ``Sequential``s."""
    nn, F = lib.nn, lib.nn.functional
    features = nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 32, 3, padding=1),
        nn.ReLU(),
    )
    head = nn.Sequential(nn.Flatten(), nn.Linear(32 * 14 * 14, N_CLASSES))
    return nn.ModuleList([features, head]), lambda x: head(F.max_pool2d(features(x), 2))


@dataclass(frozen=True)
class Task:
    """A training-step benchmark: the network, the shape of one example, the batch size."""

    label: str
    build: Callable  # lib -> (module, forward function)
    example_shape: tuple
    batch: int
    seed: int
    numpy: bool  # whether there is a hand-written NumPy version (the MLPs)


TASKS = {
    "mlp": Task(
        label="(1) MLP step, 784-512-512-10, batch 256",
        build=lambda lib: mlp(lib, (784, 512, 512, N_CLASSES)),
        example_shape=(784,),
        batch=256,
        seed=1,
        numpy=True,
    ),
    "small": Task(
        label="(2) small MLP step, 64-64-10, batch 32",
        build=lambda lib: mlp(lib, (64, 64, N_CLASSES)),
        example_shape=(64,),
        batch=32,
        seed=2,
        numpy=True,
    ),
    "conv": Task(
        label="(3) conv net step, batch 64 of 1x28x28",
        build=conv_net,
        example_shape=(1, 28, 28),
        batch=64,
        seed=3,
        numpy=False,
    ),
}


def task_data(task):
    """Inputs (float32) and class labels (int64) of one batch."""
    rng = np.random.default_rng(task.seed)
    x = rng.standard_normal((task.batch, *task.example_shape), dtype=np.float32)
    return x, rng.integers(0, N_CLASSES, task.batch)


def initial_params(task):
    """The starting parameters as NumPy arrays: teachgrad's initialisation (torch's rule), seeded."""
    tg = load("teachgrad")
    tg.manual_seed(task.seed)
    module, _ = task.build(tg)
    return [p.detach().numpy().copy() for p in module.parameters()]


# ---------------------------------------------------------------------------------- (1)-(3) steps
def autograd_step(task, impl):
    """teachgrad and torch: the same code. Returns one training step and the parameters."""
    lib = load(impl)
    module, forward = task.build(lib)
    params = list(module.parameters())
    for p, start in zip(params, initial_params(task), strict=True):
        p.data = to_lib(lib, start)  # the same starting point, in aligned memory
    optimizer = lib.optim.SGD(params, lr=LR)
    x, labels = (to_lib(lib, a) for a in task_data(task))
    cross_entropy = lib.nn.functional.cross_entropy

    def step():
        optimizer.zero_grad()
        loss = cross_entropy(forward(x), labels)
        loss.backward()
        optimizer.step()
        return loss

    return step, params


def mlp_numpy_loss_grads(params, x, labels):
    """Hand-written forward and backward of the ReLU MLP with log-softmax cross-entropy.

    ``params`` is ``[w1, b1, w2, b2, ...]`` with torch's layout: ``w`` is (out, in)."""
    weights, biases = params[0::2], params[1::2]
    inputs = []  # each layer's input, kept for backward
    h = x
    for i, (w, b) in enumerate(zip(weights, biases)):
        inputs.append(h)
        h = h @ w.T + b
        if i < len(weights) - 1:
            h = np.maximum(h, 0)
    n, rows = len(labels), np.arange(len(labels))
    shifted = h - h.max(axis=1, keepdims=True)
    e = np.exp(shifted)
    se = e.sum(axis=1, keepdims=True)
    loss = -(shifted[rows, labels] - np.log(se[:, 0])).mean()
    # backward: d loss / d logits = (softmax - onehot) / n
    g = e / se
    g[rows, labels] -= 1
    g /= n
    grads = [None] * len(params)
    for i in range(len(weights) - 1, -1, -1):
        grads[2 * i] = g.T @ inputs[i]
        grads[2 * i + 1] = g.sum(axis=0)
        if i:
            g = (g @ weights[i]) * (inputs[i] > 0)  # ReLU passes g where its output was > 0
    return loss, grads


def numpy_step(task):
    """Hand-written: the same step as ``autograd_step`` (an MLP task only)."""
    params = [aligned_copy(p) for p in initial_params(task)]
    x, labels = (aligned_copy(a) for a in task_data(task))

    def step():
        loss, grads = mlp_numpy_loss_grads(params, x, labels)
        for p, g in zip(params, grads, strict=True):
            p -= LR * g
        return loss

    return step


def step_setup(task, impl):
    """A zero-argument callable running one training step of ``task`` for ``impl``."""
    return numpy_step(task) if impl == "numpy" else autograd_step(task, impl)[0]


def step_outcome(task, impl):
    """What one step computes, as NumPy arrays: [loss], gradients, parameters after the step."""
    if impl == "numpy":
        params = initial_params(task)
        loss, grads = mlp_numpy_loss_grads(params, *task_data(task))
        return [loss], grads, [p - LR * g for p, g in zip(params, grads, strict=True)]
    step, params = autograd_step(task, impl)
    loss = step()  # zero_grad comes first in a step, so the gradients are still there
    return [to_numpy(loss)], [to_numpy(p.grad) for p in params], [to_numpy(p) for p in params]


# ---------------------------------------------------------------------------------- (4) jacobian
JAC_SIZE = 256

# name -> keyword arguments of autograd.functional.jacobian (in both libraries)
JACOBIAN_VARIANTS = {
    "vectorize=False": {},
    "vectorize=True": {"vectorize": True},
    "forward-mode": {"vectorize": True, "strategy": "forward-mode"},
}


jacobian_data = partial(bench.jacobian_data, JAC_SIZE, seed=4)  # A and x, as bench.py's (d)
jacobian_numpy = bench.jacobian_numpy  # the closed form


def jacobian_setup(impl, variant=None):
    """A zero-argument callable returning the Jacobian of ``tanh(A @ x)`` at x.

    ``variant`` is a key of JACOBIAN_VARIANTS, or "jacrev" (torch.func.jacrev); NumPy has none."""
    a, x = (aligned_copy(v) for v in jacobian_data())
    if impl == "numpy":
        return lambda: jacobian_numpy(a, x)
    lib = load(impl)
    a, x = to_lib(lib, a), to_lib(lib, x)

    def f(v):
        return (a @ v).tanh()

    if variant == "jacrev":
        jac = lib.func.jacrev(f)
        return lambda: jac(x)
    options = JACOBIAN_VARIANTS[variant]
    return lambda: lib.autograd.functional.jacobian(f, x, **options)


def jacobian_setups(impls):
    """The timed callables' setups, by name: "numpy", "<impl> <variant>", "torch jacrev"."""
    setups = {}
    for impl in impls:
        if impl == "numpy":
            setups["numpy"] = partial(jacobian_setup, "numpy")
            continue
        for variant in JACOBIAN_VARIANTS:
            setups[f"{impl} {variant}"] = partial(jacobian_setup, impl, variant)
    if "torch" in impls:
        setups["torch jacrev"] = partial(jacobian_setup, "torch", "jacrev")
    return setups


# ---------------------------------------------------------------------------------- (5) gradcheck
def small_function(a, b):
    return (a * b).sin().sum()


def wrong_gradient(a, b):
    """``small_function`` with b's gradient cut off: gradcheck must report b."""
    return (a * b.detach()).sin().sum()


def gradcheck_inputs(lib):
    rng = np.random.default_rng(5)
    return tuple(to_lib(lib, rng.standard_normal(5), requires_grad=True) for _ in range(2))


def gradcheck_setup(impl):
    lib = load(impl)
    inputs = gradcheck_inputs(lib)
    return lambda: lib.autograd.gradcheck(small_function, inputs)


# ---------------------------------------------------------------------------------- checks
# The first implementation present in this order is the reference the others are compared to.
# (An entry "torch jacrev" counts as torch.)
REFERENCE_ORDER = ("numpy", "torch", "teachgrad")


def check_same(what, arrays, rtol, atol_scale=1e-6):
    """``arrays`` maps entry -> list of arrays; each must match the reference entry's."""
    entries = sorted(arrays, key=lambda entry: REFERENCE_ORDER.index(entry.split()[0]))
    reference = entries[0]
    if len(entries) == 1:
        print(f"check: {what}: only {reference} ran, nothing to compare with", file=sys.stderr)
    for entry in entries[1:]:
        for i, (got, want) in enumerate(zip(arrays[entry], arrays[reference], strict=True)):
            message = f"{what} [{i}] ({entry} vs {reference})"
            bench.assert_close(message, got, want, rtol, atol_scale)


def check_step(name, impls):
    task = TASKS[name]
    outcomes = {i: step_outcome(task, i) for i in impls if i != "numpy" or task.numpy}
    check_same(f"{name}: loss", {i: o[0] for i, o in outcomes.items()}, 1e-4)
    # float32 sums over a batch (and, for conv, over 28x28 positions): torch's round-off
    # reaches about 5e-6 of the largest gradient entry (teachgrad's is smaller)
    gradients = {i: o[1] for i, o in outcomes.items()}
    check_same(f"{name}: gradient of parameter", gradients, 1e-3, atol_scale=2e-5)
    check_same(f"{name}: parameter after SGD", {i: o[2] for i, o in outcomes.items()}, 1e-4)


def check_jacobian(impls):
    jacobians = {name: [to_numpy(setup()())] for name, setup in jacobian_setups(impls).items()}
    jacobians["numpy"] = [jacobian_numpy(*jacobian_data())]  # unaligned: the same numbers
    check_same("jacobian", jacobians, 1e-10)


def check_gradcheck(impls):
    outcomes = {}
    for impl in impls:
        if impl == "numpy":
            continue
        lib = load(impl)
        a, b = gradcheck_inputs(lib)
        value = small_function(a, b)
        value.backward()
        outcomes[impl] = [to_numpy(value), to_numpy(a.grad), to_numpy(b.grad)]
        passes = lib.autograd.gradcheck(small_function, (a, b))
        catches = not lib.autograd.gradcheck(wrong_gradient, (a, b), raise_exception=False)
        if not (passes and catches):
            raise AssertionError(
                f"gradcheck ({impl}): passes the correct function: {passes}; "
                f"catches a wrong gradient: {catches} (both should be True)"
            )
    check_same("gradcheck: value, then gradients of a and b,", outcomes, 1e-12)


CHECKS = {
    "mlp": partial(check_step, "mlp"),
    "small": partial(check_step, "small"),
    "conv": partial(check_step, "conv"),
    "jacobian": check_jacobian,
    "gradcheck": check_gradcheck,
}


# ---------------------------------------------------------------------------------- benchmarks
def timed_setups(name, impls):
    """The setups that ``bench.bench_interleaved`` times for benchmark ``name``, by entry name."""
    if name in TASKS:
        task = TASKS[name]
        return {i: partial(step_setup, task, i) for i in impls if i != "numpy" or task.numpy}
    if name == "jacobian":
        return jacobian_setups(impls)
    return {i: partial(gradcheck_setup, i) for i in impls if i != "numpy"}


# Calls per timed sample, so that one sample lasts long enough to time (tens of ms).
INNER = {"mlp": 2, "small": 20, "conv": 1, "jacobian": 2, "gradcheck": 10}


def table_rows(name):
    """The report's rows for benchmark ``name``: (label, {column: timed entry name})."""
    if name in TASKS:
        return [(TASKS[name].label, {i: i for i in bench.IMPLS})]
    if name == "jacobian":
        rows = [
            (f"(4) jacobian, {v}", {"teachgrad": f"teachgrad {v}", "torch": f"torch {v}"})
            for v in JACOBIAN_VARIANTS
        ]
        jacrev = {"teachgrad": "teachgrad vectorize=True", "torch": "torch jacrev"}
        rows.append(("(4) jacobian: teachgrad vectorize=True vs torch.func.jacrev", jacrev))
        for _, columns in rows:
            columns["numpy"] = "numpy"
        return rows
    return [
        ("(5) gradcheck of (a * b).sin().sum(), a, b: (5,) float64", {i: i for i in bench.IMPLS})
    ]


# name, benchmark, teachgrad's entry, torch's entry, target ratio, strict (< rather than <=)
TARGETS = (
    ("MLP step, teachgrad / torch", "mlp", "teachgrad", "torch", 1.0, False),
    ("small MLP step, teachgrad / torch", "small", "teachgrad", "torch", 1.2, False),
    ("conv net step, teachgrad / torch", "conv", "teachgrad", "torch", 2.0, False),
    (
        "vectorized jacobian, teachgrad vectorize=True / torch.func.jacrev",
        "jacobian",
        "teachgrad vectorize=True",
        "torch jacrev",
        1.0,
        False,
    ),
    (
        "gradcheck of a small function, teachgrad / torch",
        "gradcheck",
        "teachgrad",
        "torch",
        1.0,
        True,
    ),
)


def timing_ratio(timings, ours, theirs, field):
    """``timings[ours][field] / timings[theirs][field]``, None if one was not measured."""
    if ours not in timings or theirs not in timings:
        return None
    return timings[ours][field] / timings[theirs][field]


def targets(timings):
    """The targets in the form of ``bench.target_lines``, from ``{benchmark: timings}``."""
    out = []
    for label, name, ours, theirs, target, strict in TARGETS:
        t = timings.get(name, {})
        out.append(
            {
                "name": label,
                "target": target,
                "strict": strict,
                "ratio": timing_ratio(t, ours, theirs, "median_s"),
                "ratio_min": timing_ratio(t, ours, theirs, "min_s"),
            }
        )
    return out


def report(facts, results):
    lines = bench.machine_lines(facts, ARGS.rounds)
    lines += ["## Results (ms per call, median of the rounds)", "", *bench.TABLE_HEADER]
    spread = []
    for name, timings in results["timings"].items():
        for label, columns in table_rows(name):
            vals = {
                column: timings[entry]["median_s"] * 1e3 if entry in timings else None
                for column, entry in columns.items()
            }
            lines.append(bench.table_row(label, {i: vals.get(i) for i in bench.IMPLS}, 2))
        spread.append(bench.spread_line(name, timings, 1e3))
    lines += [
        "",
        "— : not measured (no hand-written NumPy for conv and gradcheck; NumPy's jacobian is "
        "the closed form).",
        "",
        "Spread over the rounds, ms (min / median / max):",
        "",
        *spread,
        "",
        *bench.target_lines(results["targets"]),
    ]
    return "\n".join(lines)


def profile(name):
    """cProfile teachgrad's timed callables of benchmark ``name`` (each in turn)."""
    for entry, setup in timed_setups(name, ["teachgrad"]).items():
        variant = entry.removeprefix("teachgrad").strip()  # the jacobian's settings
        title = f"{name}, {variant}" if variant else name
        bench.profile_calls(setup(), 5 * INNER[name], title)


def main():
    if ARGS.profile:
        profile(ARGS.profile)
        return
    torch_mod = load("torch")
    impls = [i for i in bench.IMPLS if i != "torch" or torch_mod is not None]
    facts = bench.machine_facts(torch_mod)
    only = [name for name in BENCHMARKS if name in (ARGS.only or BENCHMARKS)]
    for name in only:
        CHECKS[name](impls)
    print(f"check: {', '.join(impls)} compute the same numbers", file=sys.stderr)

    results = {"machine": facts, "config": {"rounds": ARGS.rounds, "threads": ARGS.threads}}
    results["timings"] = {}
    for name in only:
        print(f"{name} ...", file=sys.stderr)
        results["timings"][name] = bench.bench_interleaved(
            timed_setups(name, impls), ARGS.rounds, inner=INNER[name]
        )
    facts["load_average_end"] = bench.load_average()
    results["targets"] = targets(results["timings"])
    print(report(facts, results))
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

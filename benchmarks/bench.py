#!/usr/bin/env python
"""teachgrad vs hand-written NumPy vs PyTorch (CPU): overhead, speed and memory.

Four benchmarks, each run for three implementations that compute the same numbers
(checked once at startup, at the full MLP size, see ``check_equal_work``):

(a) per-op overhead: a chain of 1,000 elementwise ops on a (4,) float32 tensor,
    cycling ``* 0.9``, ``+ c``, ``tanh``, ``exp`` (bounded: the chain sits near a
    fixed point), then ``sum().backward()``; reported in microseconds per op.
(b) MLP step: a 784-512-512-10 tanh MLP, batch 256, float32, softmax
    cross-entropy written with core ops, forward + backward + SGD; ms per step.
(b2) the same step with tiny arrays (8-8-8-2, batch 4): NumPy's work is then
    negligible, so teachgrad's extra time over NumPy is its bookkeeping alone; set
    against (b)'s extra time, it shows how much dearer that bookkeeping gets between
    large operations (which push the interpreter's own data out of the caches).
(c) peak memory: forward + backward through 200 layers of ``y = tanh(y @ W_i)``
    (512x512 weights requiring grad, batch 256); the peak RSS growth over a
    baseline taken after the weights and input exist, in MiB, each
    implementation in a fresh subprocess.

Timings are interleaved (teachgrad, numpy, torch, teachgrad, ...) and the median
of the rounds is reported. All implementations use the same BLAS/OpenMP thread
count (``--threads``, default 1). Python's garbage collector stays on, but the
objects that exist before timing are frozen (``gc.collect(); gc.freeze()``).

    python benchmarks/bench.py                 # quick run, about a minute
    python benchmarks/bench.py --rounds 15 --json results.json
    python benchmarks/bench.py --profile perop # where teachgrad's time goes
"""

from __future__ import annotations

import argparse
import os
import sys


def common_parser(doc, benchmarks):
    """The command line that bench.py, bench_nn.py and bench_gpu.py share: the first
    paragraph of ``doc`` as description; ``benchmarks`` are the --only choices."""
    parser = argparse.ArgumentParser(
        description=doc.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="BLAS/OpenMP threads for every implementation (default 1)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=31,
        help="interleaved rounds per benchmark; the median is reported",
    )
    parser.add_argument(
        "--only",
        choices=benchmarks,
        action="append",
        help="run only these benchmarks (repeatable)",
    )
    parser.add_argument(
        "--no-torch", action="store_true", help="leave PyTorch out even if it is installed"
    )
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    return parser


BENCHMARKS = ("perop", "mlp", "mlp-tiny", "memory")


def parse_args(argv=None):
    p = common_parser(__doc__, BENCHMARKS)
    p.add_argument(
        "--profile",
        choices=("perop", "mlp"),
        help="instead of benchmarking, cProfile teachgrad on one benchmark and print the top functions",
    )
    p.add_argument("--memory-child", metavar="IMPL", help=argparse.SUPPRESS)
    return p.parse_args(argv)


def threads_from_command_line(argv=None):
    """Only the ``--threads`` option of the command line (default 1), ignoring the others."""
    p = argparse.ArgumentParser(add_help=False)
    p.add_argument("--threads", type=int, default=1)
    return p.parse_known_args(argv)[0].threads


# bench.py's options. A script that imports this module (bench_nn.py) sets ARGS to its own
# options, which include --threads and --no-torch.
ARGS = parse_args() if __name__ == "__main__" else None

# The thread count must be in the environment before NumPy (OpenBLAS/MKL) or torch
# (OpenMP) is loaded: those libraries read it once, at load time. Only --threads is read
# here, so that a script which imports this module first thing gets the same setup.
for _var in (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
):
    os.environ[_var] = str(threads_from_command_line())

import contextlib  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # run from a checkout without installing

IMPLS = ("teachgrad", "numpy", "torch")


def load(impl):
    """The module for ``impl`` ("teachgrad" or "torch"), None for torch when absent."""
    if impl == "teachgrad":
        import teachgrad  # noqa: PLC0415

        return teachgrad
    if impl == "torch":
        if ARGS.no_torch:
            return None
        try:
            import torch  # noqa: PLC0415
        except ImportError:
            return None
        torch.set_num_threads(ARGS.threads)
        with contextlib.suppress(RuntimeError):  # allowed once, before any parallel work
            torch.set_num_interop_threads(ARGS.threads)
        return torch
    return np


def aligned_copy(array, alignment=64):
    """A copy of ``array`` starting on a 64-byte boundary.

    BLAS speed depends on where an operand happens to lie in memory (we saw 7% on the
    784x512 matmul); every implementation gets its data the same way, so that luck of
    malloc does not decide the comparison."""
    buffer = np.empty(array.nbytes + alignment, np.uint8)
    start = (-buffer.ctypes.data) % alignment
    copy = buffer[start : start + array.nbytes].view(array.dtype).reshape(array.shape)
    copy[...] = array
    return copy


def to_lib(lib, array, requires_grad=False):
    """A tensor of ``lib`` (teachgrad or torch) holding an aligned copy of a NumPy array."""
    t = lib.from_numpy(aligned_copy(array))
    return t.requires_grad_() if requires_grad else t


# ---------------------------------------------------------------------------------- (a) per-op
N_OPS = 1000


def perop_data():
    rng = np.random.default_rng(0)
    x = (0.1 * rng.standard_normal(4)).astype(np.float32)
    c = (-0.9 + 0.05 * rng.standard_normal(4)).astype(np.float32)  # fixed point near 0: bounded
    return x, c


def chain_autograd(x, c):
    """teachgrad and torch: the same code. Returns the gradient of the chain's sum w.r.t. x."""
    x.grad = None
    y = x
    for _ in range(N_OPS // 4):
        y = y * 0.9
        y = y + c
        y = y.tanh()
        y = y.exp()
    y.sum().backward()
    return x.grad


def chain_numpy(x, c):
    """Hand-written: the same forward, intermediates kept, backward in a reverse loop."""
    saved = []
    y = x
    for _ in range(N_OPS // 4):
        y = y * 0.9
        y = y + c
        y = np.tanh(y)
        saved.append(y)
        y = np.exp(y)
        saved.append(y)
    y.sum()
    g = np.ones_like(y)
    for i in range(len(saved) - 1, 0, -2):
        g = g * saved[i]  # exp: d e^t = e^t
        t = saved[i - 1]
        g = g * (1 - t * t)  # tanh: 1 - tanh^2
        g = g * 0.9  # mul by 0.9 (the add passes g through unchanged)
    return g


def perop_setup(impl):
    """A zero-argument callable running the chain once for ``impl``."""
    x, c = perop_data()
    if impl == "numpy":
        return lambda: chain_numpy(x, c)
    lib = load(impl)
    xt, ct = to_lib(lib, x, requires_grad=True), to_lib(lib, c)
    return lambda: chain_autograd(xt, ct)


# ---------------------------------------------------------------------------------- (b) MLP step
MLP_SIZES = (784, 512, 512, 10)
BATCH = 256
TINY_SIZES = (8, 8, 8, 2)  # (b2): the same step, with arrays too small to cost anything
TINY_BATCH = 4
LR = 0.01


def mlp_data(sizes=MLP_SIZES, batch=BATCH):
    rng = np.random.default_rng(1)
    params = []
    for fan_in, fan_out in zip(sizes[:-1], sizes[1:], strict=True):
        params.append((rng.standard_normal((fan_in, fan_out)) / np.sqrt(fan_in)).astype(np.float32))
        params.append((0.1 * rng.standard_normal(fan_out)).astype(np.float32))
    x = rng.standard_normal((batch, sizes[0])).astype(np.float32)
    labels = rng.integers(0, sizes[-1], batch)
    onehot = np.zeros((batch, sizes[-1]), np.float32)
    onehot[np.arange(batch), labels] = 1
    return params, x, onehot


def mlp_loss_backward(params, x, onehot):
    """teachgrad and torch: the same code. Softmax cross-entropy from core ops, then backward."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = (x @ w1 + b1).tanh()
    h2 = (h1 @ w2 + b2).tanh()
    z = h2 @ w3 + b3
    logp = z - z.logsumexp(dim=1, keepdim=True)  # log-softmax, computed without overflow
    loss = -(onehot * logp).sum(dim=1).mean()
    loss.backward()
    return loss


def sgd_autograd(lib, params):
    """``p -= lr * p.grad`` in place (``sub_`` with ``alpha``, as torch.optim.SGD does), like
    NumPy's step; ``p.data = ...`` where the library has no in-place subtraction."""
    in_place = hasattr(lib.Tensor, "sub_")
    with lib.no_grad():
        for p in params:
            if in_place:
                p.sub_(p.grad, alpha=LR)  # p -= lr * grad, as torch.optim.SGD writes it
            else:
                p.data = p - LR * p.grad
            p.grad = None


def mlp_numpy_loss_grads(params, x, onehot):
    """Hand-written forward and backward, the same math as ``mlp_loss_backward``."""
    w1, b1, w2, b2, w3, b3 = params
    h1 = np.tanh(x @ w1 + b1)
    h2 = np.tanh(h1 @ w2 + b2)
    z = h2 @ w3 + b3
    s = z - z.max(axis=1, keepdims=True)
    e = np.exp(s)
    se = e.sum(axis=1, keepdims=True)
    logp = s - np.log(se)
    loss = -(onehot * logp).sum(axis=1).mean()
    # backward
    dlogp = onehot * np.float32(-1.0 / len(x))
    dz = dlogp - (e / se) * dlogp.sum(axis=1, keepdims=True)
    dw3 = h2.T @ dz
    db3 = dz.sum(axis=0)
    da2 = (dz @ w3.T) * (1 - h2 * h2)
    dw2 = h1.T @ da2
    db2 = da2.sum(axis=0)
    da1 = (da2 @ w2.T) * (1 - h1 * h1)
    dw1 = x.T @ da1
    db1 = da1.sum(axis=0)
    return loss, [dw1, db1, dw2, db2, dw3, db3]


def mlp_numpy_step(params, x, onehot):
    loss, grads = mlp_numpy_loss_grads(params, x, onehot)
    for p, g in zip(params, grads, strict=True):
        p -= LR * g
    return loss


def mlp_setup(impl, sizes=MLP_SIZES, batch=BATCH):
    """A zero-argument callable running one training step for ``impl``."""
    params, x, onehot = mlp_data(sizes, batch)
    if impl == "numpy":
        params, x, onehot = [aligned_copy(p) for p in params], aligned_copy(x), aligned_copy(onehot)
        return lambda: mlp_numpy_step(params, x, onehot)
    lib = load(impl)
    ps = [to_lib(lib, p, requires_grad=True) for p in params]
    xt, ot = to_lib(lib, x), to_lib(lib, onehot)

    def step():
        loss = mlp_loss_backward(ps, xt, ot)
        sgd_autograd(lib, ps)
        return loss

    return step


# ---------------------------------------------------------------------------------- (c) memory
MEM_LAYERS = 200
MEM_WIDTH = 512


def _vm_kib(field):
    """A ``Vm*`` line of /proc/self/status in KiB (None where /proc is missing)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _reset_peak():
    """Reset the kernel's peak-RSS mark to the current RSS (Linux >= 4.0); False if not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def memory_child(impl):
    """Runs in a fresh process: peak RSS growth of one forward+backward, printed as JSON."""
    rng = np.random.default_rng(2)
    scale = np.float32(1 / np.sqrt(MEM_WIDTH))
    weights = [
        rng.standard_normal((MEM_WIDTH, MEM_WIDTH), dtype=np.float32) * scale
        for _ in range(MEM_LAYERS)
    ]
    x = rng.standard_normal((BATCH, MEM_WIDTH), dtype=np.float32)

    if impl == "numpy":
        grads = [None] * MEM_LAYERS

        def run(n_layers):
            saved = [x]  # what backward needs: each layer's input and output
            y = x
            for w in weights[:n_layers]:
                y = np.tanh(y @ w)
                saved.append(y)
            y.sum()
            g = np.ones_like(y)
            for i in range(n_layers - 1, -1, -1):
                y = saved.pop()
                g = g * (1 - y * y)
                inp = saved[-1]
                grads[i] = inp.T @ g
                if i:
                    g = g @ weights[i].T
            saved.clear()

        def clear():
            grads[:] = [None] * MEM_LAYERS
    else:
        lib = load(impl)
        ws = [lib.from_numpy(w).requires_grad_() for w in weights]  # shares the NumPy memory
        xt = lib.from_numpy(x)

        def run(n_layers):
            y = xt
            for w in ws[:n_layers]:
                y = (y @ w).tanh()
            y.sum().backward()

        def clear():
            for w in ws:
                w.grad = None

    # Warm up with one layer (loads BLAS buffers, lazy imports, allocator pools), then
    # take the baseline: everything that exists before the measured forward pass.
    run(1)
    clear()
    gc.collect()
    reset_ok = _reset_peak()
    base_rss = _vm_kib("VmRSS")
    base_hwm = _vm_kib("VmHWM")
    base_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    run(MEM_LAYERS)
    peak_hwm = _vm_kib("VmHWM")
    peak_maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    grad_bytes = MEM_LAYERS * MEM_WIDTH * MEM_WIDTH * 4
    result = {
        "impl": impl,
        "peak_growth_mib": (peak_hwm - base_rss) / 1024 if reset_ok and peak_hwm else None,
        "maxrss_growth_mib": (peak_maxrss - base_maxrss) / 1024,
        "baseline_rss_mib": base_rss / 1024 if base_rss else None,
        "baseline_hwm_mib": base_hwm / 1024 if base_hwm else None,
        "peak_reset": reset_ok,
        "weight_grads_mib": grad_bytes / 2**20,
        "activations_mib": MEM_LAYERS * BATCH * MEM_WIDTH * 4 / 2**20,
    }
    print(json.dumps(result))


# glibc's malloc raises its mmap threshold (up to 32 MiB) the first time a large
# mmapped block is freed; after that, freed arrays can stay in the heap and count
# in RSS although nothing uses them, depending on the order of allocations. Fixing
# the threshold at glibc's default (128 KiB) makes every array of our sizes its own
# mapping, returned to the OS when freed, so RSS tracks the arrays alive. Both are
# reported: "live" (fixed threshold, the headline figure) and "glibc default".
MALLOC_MODES = {"live": {"MALLOC_MMAP_THRESHOLD_": "131072"}, "glibc default": {}}


def measure_memory(impl, malloc_env):
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--memory-child",
        impl,
        "--threads",
        str(ARGS.threads),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    env.update(malloc_env)
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child for {impl} failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------------------------- checks
def assert_close(name, got, want, rtol, atol_scale=1e-6):
    """Raise an AssertionError naming ``name`` unless ``got`` matches ``want`` within ``rtol``.

    Entries below ``atol_scale`` times the largest ``|want|`` are compared in absolute terms
    (round-off in a long float32 sum is relative to its largest terms, not to the result)."""
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    atol = atol_scale * float(np.max(np.abs(want))) + 1e-30
    if not np.allclose(got, want, rtol=rtol, atol=atol):
        err = np.max(np.abs(got - want) / (np.abs(want) + atol))
        raise AssertionError(f"{name}: implementations disagree (max relative error {err:.3g})")


def to_numpy(t):
    """A NumPy array of a teachgrad/torch tensor (or of anything array-like)."""
    return t.detach().numpy() if hasattr(t, "detach") else np.asarray(t)


def check_equal_work(impls):
    """Assert that the implementations compute the same values and gradients."""
    x, c = perop_data()
    ref = chain_numpy(x, c)
    assert np.all(np.isfinite(ref)) and np.all(ref != 0), "chain gradient under/overflowed"
    for impl in impls:
        if impl != "numpy":
            lib = load(impl)
            xt = to_lib(lib, x, requires_grad=True)
            assert_close(
                f"per-op chain gradient ({impl} vs numpy)",
                to_numpy(chain_autograd(xt, to_lib(lib, c))),
                ref,
                1e-3,
            )

    params, xb, onehot = mlp_data()
    ref_loss, ref_grads = mlp_numpy_loss_grads(params, xb, onehot)
    for impl in impls:
        if impl == "numpy":
            continue
        lib = load(impl)
        ps = [to_lib(lib, p, requires_grad=True) for p in params]
        loss = mlp_loss_backward(ps, to_lib(lib, xb), to_lib(lib, onehot))
        assert_close(f"MLP loss ({impl} vs numpy)", to_numpy(loss), ref_loss, 1e-4)
        for i, (p, g) in enumerate(zip(ps, ref_grads, strict=True)):
            assert_close(
                f"MLP gradient of parameter {i} ({impl} vs numpy)", to_numpy(p.grad), g, 1e-3
            )
        # one SGD step gives the same parameters too
        sgd_autograd(lib, ps)
        after = [p - LR * g for p, g in zip(params, ref_grads, strict=True)]
        for i, (p, want) in enumerate(zip(ps, after, strict=True)):
            assert_close(f"MLP parameter {i} after SGD ({impl} vs numpy)", to_numpy(p), want, 1e-4)
            assert p.grad is None and p.requires_grad and p.is_leaf


# ---------------------------------------------------------------------------------- timing
def bench_interleaved(setups, rounds, inner):
    """Median seconds per call of each callable; one round times each impl in turn."""
    fns = {impl: setup() for impl, setup in setups.items()}
    for fn in fns.values():  # warm-up: caches, lazy imports, allocator
        fn()
    gc.collect()
    gc.freeze()
    samples = {impl: [] for impl in fns}
    order = list(fns.items())
    try:
        for r in range(rounds):
            # rotate the order each round, so each implementation follows each other one (and
            # finds the caches the way that one left them) equally often
            for impl, fn in order[r % len(order) :] + order[: r % len(order)]:
                t0 = time.perf_counter()
                for _ in range(inner):
                    fn()
                samples[impl].append((time.perf_counter() - t0) / inner)
    finally:
        gc.unfreeze()
    return {
        impl: {"median_s": statistics.median(s), "min_s": min(s), "max_s": max(s), "samples_s": s}
        for impl, s in samples.items()
    }


def machine_facts(torch_mod):
    cpu = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    blas = "unknown"
    try:
        cfg = np.show_config(mode="dicts")
        blas = (
            cfg["Build Dependencies"]["blas"]["name"]
            + " "
            + cfg["Build Dependencies"]["blas"]["version"]
        )
    except Exception:  # noqa: BLE001 - old NumPy: the facts are nice to have
        pass
    return {
        "cpu": cpu,
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "numpy": np.__version__,
        "numpy_blas": blas,
        "torch": torch_mod.__version__ if torch_mod is not None else None,
        "torch_threads": torch_mod.get_num_threads() if torch_mod is not None else None,
        "threads": ARGS.threads,
        "teachgrad": load("teachgrad").__version__,
        "load_average_start": load_average(),
    }


def load_average():
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _fmt(v, digits=1):
    return "—" if v is None else f"{v:.{digits}f}"


def _fmt_ratio(r):
    return "—" if r is None else f"{r:.2f}x"


def _ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def machine_lines(facts, rounds):
    """The report's "## Machine" section: hardware, versions, threads, rounds and load."""
    lines = ["## Machine", ""]
    lines += [
        f"- CPU: {facts['cpu']} ({facts['usable_cpus']} usable of {facts['logical_cpus']} logical CPUs)",
        f"- Python {facts['python']}, NumPy {facts['numpy']} ({facts['numpy_blas']}), "
        f"torch {facts['torch'] or 'absent'}, teachgrad {facts['teachgrad']}",
        f"- threads: {facts['threads']} (BLAS/OpenMP env vars"
        + (f", torch.get_num_threads() = {facts['torch_threads']})" if facts["torch"] else ")"),
        f"- rounds: {rounds} interleaved, median reported",
        f"- load average (1 min) at start / end: {facts['load_average_start']} / {facts['load_average_end']}",
    ]
    # The load counts this benchmark's own threads too: only more runnable work than there
    # are CPUs means that something had to wait for one.
    load = max(facts["load_average_start"] or 0, facts["load_average_end"] or 0)
    if load > facts["usable_cpus"]:
        lines.append(
            "- WARNING: other processes were using the CPUs; timings are noisy (see the spread "
            "below). Compare ratios within one run and prefer more --rounds on a quiet machine."
        )
    lines.append("")
    return lines


TABLE_HEADER = [
    "| benchmark | teachgrad | NumPy (hand-written) | torch | teachgrad / NumPy | teachgrad / torch |",
    "|---|---:|---:|---:|---:|---:|",
]


def table_row(label, vals, digits):
    """One row of the results table; ``vals`` maps each of IMPLS to a number or None."""
    return (
        f"| {label} | {_fmt(vals['teachgrad'], digits)} | {_fmt(vals['numpy'], digits)} | "
        f"{_fmt(vals['torch'], digits)} | {_fmt_ratio(_ratio(vals['teachgrad'], vals['numpy']))} | "
        f"{_fmt_ratio(_ratio(vals['teachgrad'], vals['torch']))} |"
    )


def spread_line(label, timings, scale):
    """``- label: impl min / median / max; ...`` for the timings of ``bench_interleaved``."""
    return f"- {label}: " + "; ".join(
        f"{i} {t['min_s'] * scale:.2f} / {t['median_s'] * scale:.2f} / {t['max_s'] * scale:.2f}"
        for i, t in timings.items()
    )


def target_lines(targets):
    """The report's "## Targets" section: each ratio against its target, met or MISSED.

    A target is ``{"name", "target", "ratio", "ratio_min"}``; ``"strict": True`` asks for
    ratio < target ("faster than") instead of ratio <= target."""
    lines = ["## Targets", ""]
    for t in targets:
        strict = t.get("strict", False)
        if t["ratio"] is None:
            status = "n/a"
        else:
            met = t["ratio"] < t["target"] if strict else t["ratio"] <= t["target"]
            status = "met" if met else "MISSED"
        fastest = "" if t.get("ratio_min") is None else f"; fastest rounds: {t['ratio_min']:.2f}x"
        lines.append(
            f"- {t['name']}: {_fmt_ratio(t['ratio'])} (target {'<' if strict else '≤'} "
            f"{t['target']}x) — {status}{fastest}"
        )
    return lines


def report(facts, results):
    lines = machine_lines(facts, results["config"]["rounds"])
    lines += ["## Results", "", *TABLE_HEADER]
    rows = (
        ("perop", "value", "(a) per-op overhead, µs/op (median)", 1e6 / N_OPS, 2),
        ("perop", "min_s", "(a) same, fastest round", 1e6 / N_OPS, 2),
        ("mlp", "value", "(b) MLP step, ms/step (median)", 1e3, 2),
        ("mlp", "min_s", "(b) same, fastest round", 1e3, 2),
        ("mlp_tiny", "value", "(b2) same step, 8-8-8-2, batch 4, ms/step (median)", 1e3, 3),
        ("memory", "value", "(c) peak memory growth, MiB (live arrays)", 1, 1),
        ("memory_glibc_default", "value", "(c') same, glibc's default malloc", 1, 1),
    )
    for key, field, label, scale, digits in rows:
        r = results.get(key)
        if r is None:
            continue
        vals = {i: (None if r.get(i) is None else r[i][field]) for i in IMPLS}
        vals = {i: (None if v is None else v * scale) for i, v in vals.items()}
        lines.append(table_row(label, vals, digits))
    spread = []
    for key, label, scale in (
        ("perop", "per-op µs/op", 1e6 / N_OPS),
        ("mlp", "MLP ms/step", 1e3),
        ("mlp_tiny", "tiny MLP ms/step", 1e3),
    ):
        r = results.get(key)
        if r is not None:
            spread.append(spread_line(label, {i: r[i] for i in IMPLS if i in r}, scale))
    if spread:
        lines += ["", "Spread over the rounds (min / median / max):", ""] + spread
    if "memory" in results:
        lines += [
            "",
            f"Memory floor: the {MEM_LAYERS} weight gradients alone are "
            f"{MEM_LAYERS * MEM_WIDTH * MEM_WIDTH * 4 / 2**20:.0f} MiB; the activations kept for "
            f"backward are {MEM_LAYERS * BATCH * MEM_WIDTH * 4 / 2**20:.0f} MiB.",
        ]
    lines += bookkeeping_lines(results)
    lines += ["", *target_lines(results["targets"])]
    return "\n".join(lines)


def bookkeeping_lines(results):
    """(b) against (b2): teachgrad's extra time over NumPy with large and with tiny arrays."""
    full, tiny = results.get("mlp"), results.get("mlp_tiny")
    if full is None or tiny is None or "numpy" not in full:
        return []
    extra_full = full["teachgrad"]["value"] - full["numpy"]["value"]
    extra_tiny = tiny["teachgrad"]["value"] - tiny["numpy"]["value"]
    return [
        "",
        "Where (b)'s extra time goes: teachgrad takes "
        f"{extra_full * 1e3:.2f} ms per step more than NumPy at full size and "
        f"{extra_tiny * 1e3:.2f} ms more with tiny arrays (b2), where that is its Python "
        "bookkeeping alone. The large NumPy calls are the same in both, so between large "
        f"operations the same bookkeeping costs {_fmt_ratio(_ratio(extra_full, extra_tiny))} "
        "as much.",
    ]


def profile_calls(fn, n, title):
    """Print cProfile's top functions over ``n`` calls of ``fn`` (after one warm-up call)."""
    import cProfile  # noqa: PLC0415
    import pstats  # noqa: PLC0415

    fn()
    gc.collect()
    gc.freeze()
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        fn()
    prof.disable()
    gc.unfreeze()
    print(f"cProfile of teachgrad, {title}, {n} calls (times are totals over the {n} calls)\n")
    stats = pstats.Stats(prof)
    stats.sort_stats("tottime").print_stats(25)
    stats.sort_stats("cumulative").print_stats(15)


def profile(which):
    fn = perop_setup("teachgrad") if which == "perop" else mlp_setup("teachgrad")
    profile_calls(fn, 20 if which == "perop" else 10, which)


def main():
    if ARGS.memory_child:
        memory_child(ARGS.memory_child)
        return
    if ARGS.profile:
        profile(ARGS.profile)
        return
    torch_mod = load("torch")
    impls = [i for i in IMPLS if i != "torch" or torch_mod is not None]
    facts = machine_facts(torch_mod)
    only = set(ARGS.only or BENCHMARKS)
    check_equal_work(impls)
    print(
        "check: teachgrad, NumPy"
        + (" and torch" if torch_mod else "")
        + " compute the same values and gradients",
        file=sys.stderr,
    )

    results = {
        "machine": facts,
        "config": {
            "rounds": ARGS.rounds,
            "threads": ARGS.threads,
            "n_ops": N_OPS,
            "mlp_sizes": MLP_SIZES,
            "batch": BATCH,
            "tiny_mlp_sizes": TINY_SIZES,
            "tiny_batch": TINY_BATCH,
            "memory_layers": MEM_LAYERS,
            "memory_width": MEM_WIDTH,
        },
    }
    if "perop" in only:
        print("(a) per-op overhead ...", file=sys.stderr)
        r = bench_interleaved(
            {i: (lambda i=i: perop_setup(i)) for i in impls}, ARGS.rounds, inner=2
        )
        results["perop"] = {i: {**v, "value": v["median_s"]} for i, v in r.items()}
    if "mlp" in only:
        print("(b) MLP step ...", file=sys.stderr)
        r = bench_interleaved({i: (lambda i=i: mlp_setup(i)) for i in impls}, ARGS.rounds, inner=2)
        results["mlp"] = {i: {**v, "value": v["median_s"]} for i, v in r.items()}
    if "mlp-tiny" in only:
        print("(b2) MLP step with tiny arrays ...", file=sys.stderr)
        r = bench_interleaved(
            {i: (lambda i=i: mlp_setup(i, TINY_SIZES, TINY_BATCH)) for i in impls},
            ARGS.rounds,
            inner=20,
        )
        results["mlp_tiny"] = {i: {**v, "value": v["median_s"]} for i, v in r.items()}
    if "memory" in only:
        print("(c) peak memory ...", file=sys.stderr)
        for mode, malloc_env in MALLOC_MODES.items():
            mem = {}
            for impl in impls:
                m = measure_memory(impl, malloc_env)
                m["value"] = (
                    m["peak_growth_mib"]
                    if m["peak_growth_mib"] is not None
                    else m["maxrss_growth_mib"]
                )
                m["malloc_env"] = malloc_env
                mem[impl] = m
            results["memory" if mode == "live" else "memory_glibc_default"] = mem

    def ratio(key, a, b, field="value"):
        r = results.get(key)
        if r is None or a not in r or b not in r or field not in r[a]:
            return None
        return _ratio(r[a][field], r[b][field])

    facts["load_average_end"] = load_average()
    results["targets"] = [
        {
            "name": name,
            "target": target,
            "ratio": ratio(key, a, b),
            "ratio_min": ratio(key, a, b, "min_s"),
        }
        for name, key, a, b, target in (
            ("per-op overhead, teachgrad / torch", "perop", "teachgrad", "torch", 2.0),
            ("MLP step, teachgrad / NumPy", "mlp", "teachgrad", "numpy", 1.1),
            ("peak memory, teachgrad / torch", "memory", "teachgrad", "torch", 1.1),
        )
    ]
    print(report(facts, results))
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

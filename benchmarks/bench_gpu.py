#!/usr/bin/env python
"""teachgrad on a CUDA GPU vs PyTorch on the same GPU vs the same teachgrad code on the CPU.

Three benchmarks, each run by three entries: "teachgrad cuda", "torch cuda" and
"teachgrad cpu" (teachgrad's CPU column shows what the GPU buys):

(1) MLP step: ``nn.Linear`` + ``nn.ReLU``, 784-2048-2048-10, batch 1024, float32,
    ``F.cross_entropy``, ``optim.SGD(lr=0.01)``: zero_grad, forward, loss, backward,
    step; ms per step. Target: teachgrad on CUDA <= 1.5x PyTorch on CUDA.
(2) conv net step: bench_nn.py's (3), a batch of 64 images 1x28x28, two 3x3
    convolutions, a max-pool, a linear head; ms per step.
(3) per-op launch overhead: bench.py's chain of 1,000 small elementwise ops on a (4,)
    float32 tensor that requires grad, then ``sum().backward()``; µs per op. On a GPU
    every op is a kernel launch, so this is the cost of one op that does nothing.

The code is bench_nn.py's and bench.py's: their models, data, starting parameters,
training step and chain run unchanged; only the tensors they make are moved to the
device (see ``made_on``). A GPU runs asynchronously: every timed call ends with
``tg.cuda.synchronize()`` / ``torch.cuda.synchronize()``, so the clock is read after
the GPU has finished. The two CUDA entries are interleaved as in bench.py; teachgrad
on the CPU, hundreds of times slower on (1), is timed after them, on its own, with
``--cpu-rounds`` rounds of one call. TF32 is switched off in torch, so both libraries
do full float32 arithmetic (CuPy's default). Before timing, the script checks that the
entries compute the same losses, gradients, parameters after one SGD step and chain
gradient, and stops with a message naming the first disagreement.

Without CuPy or without a CUDA GPU, the script says what it needs and exits with
status 0 (1 with ``--require-gpu``), having measured nothing.

    python benchmarks/bench_gpu.py                     # all three, about a minute
    python benchmarks/bench_gpu.py --only mlp --rounds 51 --json gpu.json
    python benchmarks/bench_gpu.py --require-gpu       # no GPU is an error (CI on a GPU runner)
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import sys
from functools import partial
from pathlib import Path

# First: importing bench puts the --threads count into the BLAS/OpenMP environment
# variables, then loads NumPy (those libraries read the variables once, when loaded).
import bench
import numpy as np

BENCHMARKS = ("mlp", "conv", "perop")


def parse_args(argv=None):
    p = bench.common_parser(__doc__, BENCHMARKS)
    p.add_argument(
        "--cpu-rounds",
        type=int,
        default=5,
        help="rounds for teachgrad on the CPU, one call each, after the GPU (0 leaves it out)",
    )
    p.add_argument(
        "--require-gpu",
        action="store_true",
        help="exit with status 1 instead of 0 when there is no CUDA GPU or no CuPy",
    )
    return p.parse_args(argv)


ARGS = parse_args()


@contextlib.contextmanager
def command_line(*args):
    """``sys.argv`` is ``[this script, *args]`` inside the block."""
    saved = sys.argv
    sys.argv = [saved[0], *args]
    try:
        yield
    finally:
        sys.argv = saved


# bench_nn reads its own options from the command line when it is imported: it gets the
# ones it shares with this script. Then bench's helpers (load, machine_facts) read ours.
with command_line("--threads", str(ARGS.threads)):
    import bench_nn  # noqa: E402
bench.ARGS = ARGS

from bench import load  # noqa: E402

# entry -> (library, device). The CUDA entries are the comparison; teachgrad on the CPU
# runs the same code for scale.
ENTRIES = {
    "teachgrad cuda": ("teachgrad", "cuda"),
    "torch cuda": ("torch", "cuda"),
    "teachgrad cpu": ("teachgrad", "cpu"),
}
CPU_ENTRY = "teachgrad cpu"

# (1): bench_nn's MLP, wider and with a bigger batch, so that the GPU has work to do
TASKS = {
    "mlp": bench_nn.Task(
        label="(1) MLP step, 784-2048-2048-10, batch 1024, ms",
        build=lambda lib: bench_nn.mlp(lib, (784, 2048, 2048, bench_nn.N_CLASSES)),
        example_shape=(784,),
        batch=1024,
        seed=6,
        numpy=False,
    ),
    "conv": bench_nn.TASKS["conv"],
}
LABELS = {
    "mlp": TASKS["mlp"].label,
    "conv": "(2) conv net step, batch 64 of 1x28x28, ms",
    "perop": f"(3) per-op launch overhead, chain of {bench.N_OPS} ops, µs/op",
}
# report unit per second of a timed call: ms per step, µs per op of the chain
SCALE = {"mlp": 1e3, "conv": 1e3, "perop": 1e6 / bench.N_OPS}
# calls per timed sample on the GPU (tens of ms); the CPU's samples are one call
INNER = {"mlp": 10, "conv": 10, "perop": 2}
TARGET = ("MLP step on CUDA, teachgrad / torch", "mlp", 1.5)


# ---------------------------------------------------------------------------------- the GPU
def gpu_problem():
    """None when CuPy and a CUDA GPU are usable; else what is missing, in words."""
    if importlib.util.find_spec("cupy") is None:
        return "CuPy is not installed"
    if not load("teachgrad").cuda.is_available():
        return "CuPy is installed, but finds no usable CUDA GPU (no NVIDIA driver or no device)"
    return None


def torch_cuda():
    """``(torch, None)``, torch set up for full-float32 CUDA work; or ``(None, why not)``."""
    torch = load("torch")
    if torch is None:
        return None, "left out (--no-torch)" if ARGS.no_torch else "not installed"
    if not torch.cuda.is_available():
        return None, f"torch {torch.__version__} has no CUDA (a CPU-only build?) or sees no GPU"
    # TF32 would round float32 matmul/convolution inputs to 10-bit mantissas; CuPy does not
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch, None


def _cuda_version(v):
    """CUDA's version integer (12040) as text ("12.4")."""
    return f"{v // 1000}.{v % 1000 // 10}"


def gpu_facts(torch_mod):
    import cupy  # noqa: PLC0415 - present: gpu_problem() said so

    props = cupy.cuda.runtime.getDeviceProperties(0)  # teachgrad's and torch's "cuda"
    name = props["name"]
    return {
        "gpu": name.decode() if isinstance(name, bytes) else name,
        "gpu_memory_gib": round(props["totalGlobalMem"] / 2**30, 1),
        "gpu_count": cupy.cuda.runtime.getDeviceCount(),
        "cupy": cupy.__version__,
        "cuda_runtime": _cuda_version(cupy.cuda.runtime.runtimeGetVersion()),
        "cuda_driver": _cuda_version(cupy.cuda.runtime.driverGetVersion()),
        "torch_cuda": None if torch_mod is None else torch_mod.version.cuda,
    }


# ---------------------------------------------------------------------------------- entries
@contextlib.contextmanager
def made_on(device, float64=False):
    """bench's and bench_nn's setups, unchanged, with their tensors on ``device``.

    Every tensor those setups make (parameters' starting values, the batch, the labels,
    the chain's input) comes from ``to_lib``, and every result they hand back as NumPy
    goes through ``to_numpy``. Inside the block, ``to_lib`` moves the new tensor to
    ``device`` (made float64 first with ``float64=True``) and ``to_numpy`` copies a
    result to the host first."""
    to_lib, to_numpy = bench.to_lib, bench.to_numpy

    def to_lib_on_device(lib, array, requires_grad=False):
        if float64 and array.dtype == np.float32:
            array = array.astype(np.float64)
        t = to_lib(lib, array).to(device)
        return t.requires_grad_() if requires_grad else t

    def to_numpy_from_device(t):
        return to_numpy(t.cpu() if hasattr(t, "cpu") else t)

    for module in (bench, bench_nn):
        module.to_lib, module.to_numpy = to_lib_on_device, to_numpy_from_device
    try:
        yield
    finally:
        for module in (bench, bench_nn):
            module.to_lib, module.to_numpy = to_lib, to_numpy


def waiter(entry):
    """What waits for ``entry``'s device to finish its queued work (nothing on the CPU)."""
    impl, device = ENTRIES[entry]
    return load(impl).cuda.synchronize if device == "cuda" else lambda: None


def timed_setup(name, entry):
    """A zero-argument callable: one step (or chain) of benchmark ``name``, then the wait."""
    impl, device = ENTRIES[entry]
    with made_on(device):
        run = bench.perop_setup(impl) if name == "perop" else bench_nn.step_setup(TASKS[name], impl)
    wait = waiter(entry)

    def call():
        run()
        wait()

    return call


# ---------------------------------------------------------------------------------- checks
def check(name, entries):
    """Stop with an AssertionError unless every entry computes the same numbers."""
    if name == "perop":
        want = bench.chain_numpy(*bench.perop_data())
        for entry in entries:
            impl, device = ENTRIES[entry]
            with made_on(device):
                grad = bench.to_numpy(bench.perop_setup(impl)())
            bench.assert_close(f"per-op chain gradient ({entry} vs numpy)", grad, want, 1e-3)
        return
    # The loss in float32, as timed. Gradients and the step in float64: in float32 the
    # libraries' different summation orders flip the sign of a few of the first layer's
    # two million pre-activations that lie within round-off of 0, and each flip moves a
    # ReLU's gradient by a whole example's share (measured: 0.05% of the entries, by up to 7%).
    as_timed = step_outcomes(name, entries, float64=False)
    bench_nn.check_same(f"{name}: loss", {e: o[0] for e, o in as_timed.items()}, 1e-4)
    exact = step_outcomes(name, entries, float64=True)
    bench_nn.check_same(f"{name}: gradient of parameter", {e: o[1] for e, o in exact.items()}, 1e-6)
    bench_nn.check_same(f"{name}: parameter after SGD", {e: o[2] for e, o in exact.items()}, 1e-6)


def step_outcomes(name, entries, float64):
    """entry -> bench_nn.step_outcome of one step of benchmark ``name``."""
    outcomes = {}
    for entry in entries:
        impl, device = ENTRIES[entry]
        with made_on(device, float64):
            outcomes[entry] = bench_nn.step_outcome(TASKS[name], impl)
    return outcomes


# ---------------------------------------------------------------------------------- report
TABLE_HEADER = [
    "| benchmark | teachgrad CUDA | torch CUDA | teachgrad CPU | "
    "teachgrad CUDA / torch CUDA | teachgrad CPU / teachgrad CUDA |",
    "|---|---:|---:|---:|---:|---:|",
]


def table_row(label, timings, field, scale):
    vals = {e: timings[e][field] * scale if e in timings else None for e in ENTRIES}
    ours, theirs, cpu = vals["teachgrad cuda"], vals["torch cuda"], vals[CPU_ENTRY]
    return (
        f"| {label} | {bench._fmt(ours, 2)} | {bench._fmt(theirs, 2)} | {bench._fmt(cpu, 2)} | "
        f"{bench._fmt_ratio(bench._ratio(ours, theirs))} | "
        f"{bench._fmt_ratio(bench._ratio(cpu, ours))} |"
    )


def targets(timings):
    label, name, target = TARGET
    t = timings.get(name, {})
    return [
        {
            "name": label,
            "target": target,
            "ratio": bench_nn.timing_ratio(t, "teachgrad cuda", "torch cuda", "median_s"),
            "ratio_min": bench_nn.timing_ratio(t, "teachgrad cuda", "torch cuda", "min_s"),
        }
    ]


def report(facts, gpu, torch_note, results):
    lines = bench.machine_lines(facts, ARGS.rounds)
    lines[-1:-1] = [
        f"- GPU: {gpu['gpu']} ({gpu['gpu_memory_gib']} GiB; device 0 of {gpu['gpu_count']}), "
        f"CUDA runtime {gpu['cuda_runtime']}, driver {gpu['cuda_driver']}",
        f"- CuPy {gpu['cupy']}; torch CUDA: "
        + (torch_note or f"CUDA {gpu['torch_cuda']}, TF32 off (matmul and cuDNN)"),
        f"- teachgrad on the CPU: {ARGS.cpu_rounds} rounds of one call, after the GPU entries",
    ]
    lines += ["## Results (median of the rounds)", "", *TABLE_HEADER]
    spread = []
    for name, timings in results["timings"].items():
        lines.append(table_row(LABELS[name], timings, "median_s", SCALE[name]))
        lines.append(table_row("same, fastest round", timings, "min_s", SCALE[name]))
        spread.append(bench.spread_line(name, timings, SCALE[name]))
    lines += [
        "",
        "Spread over the rounds (min / median / max; ms per step, µs per op):",
        "",
        *spread,
        "",
        *bench.target_lines(results["targets"]),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- main
def main():
    problem = gpu_problem()
    if problem is not None:
        print(
            "bench_gpu.py: skipped, nothing was measured. It needs\n"
            "  - an NVIDIA GPU with its CUDA driver,\n"
            "  - CuPy: pip install -e '.[gpu]' (CUDA 12) or -e '.[gpu-cuda13]' (CUDA 13),\n"
            "  - for the comparison column, PyTorch built with CUDA (optional).\n"
            f"Here: {problem}.\n"
            + (
                "Exit status 1 (--require-gpu)."
                if ARGS.require_gpu
                else "Exit status 0; pass --require-gpu to make this an error."
            )
        )
        return 1 if ARGS.require_gpu else 0
    torch_mod, torch_note = torch_cuda()
    entries = [e for e in ENTRIES if ENTRIES[e][0] != "torch" or torch_mod is not None]
    if ARGS.cpu_rounds <= 0:
        entries.remove(CPU_ENTRY)
    facts = bench.machine_facts(torch_mod)
    gpu = gpu_facts(torch_mod)
    print(f"GPU: {gpu['gpu']}", file=sys.stderr)
    only = [name for name in BENCHMARKS if name in (ARGS.only or BENCHMARKS)]
    for name in only:
        check(name, entries)
    print(f"check: {', '.join(entries)} compute the same numbers", file=sys.stderr)

    results = {
        "machine": facts,
        "gpu": gpu,
        "config": {"rounds": ARGS.rounds, "cpu_rounds": ARGS.cpu_rounds, "threads": ARGS.threads},
        "timings": {},
    }
    for name in only:
        print(f"{name} ...", file=sys.stderr)
        setups = {e: partial(timed_setup, name, e) for e in entries if e != CPU_ENTRY}
        timings = bench.bench_interleaved(setups, ARGS.rounds, inner=INNER[name])
        if CPU_ENTRY in entries:
            cpu = {CPU_ENTRY: partial(timed_setup, name, CPU_ENTRY)}
            timings.update(bench.bench_interleaved(cpu, ARGS.cpu_rounds, inner=1))
        results["timings"][name] = timings
    facts["load_average_end"] = bench.load_average()
    results["targets"] = targets(results["timings"])
    print(report(facts, gpu, torch_note, results))
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

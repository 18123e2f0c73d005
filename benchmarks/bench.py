#!/usr/bin/env python
"""teachgrad vs hand-written NumPy, PyTorch, HIPS autograd and MyGrad (CPU): overhead, speed, memory.

teachgrad, hand-written NumPy and PyTorch are the main implementations; HIPS autograd
and MyGrad (with its defaults: memory guarding on) are optional peers, used when they
can be imported. All compute the same numbers (checked once at startup, at the full
MLP size, see ``check_equal_work``). Nine benchmarks, each for every implementation
that can do it:

(a) per-op overhead: a chain of 1,000 elementwise ops on a (4,) float32 tensor,
    cycling ``* 0.9``, ``+ c``, ``tanh``, ``exp`` (bounded: the chain sits near a
    fixed point), then ``sum().backward()``; reported in microseconds per op. HIPS
    autograd differentiates a function of x with ``autograd.grad``. (a') times the
    forward alone (the chain recorded, no backward), and (a'') is the rest: backward.
(b) MLP step: a 784-512-512-10 tanh MLP, batch 256, float32, softmax
    cross-entropy written with core ops, forward + backward + SGD; ms per step.
(b2) the same step with tiny arrays (8-8-8-2, batch 4): NumPy's work is then
    negligible, so teachgrad's extra time over NumPy is its bookkeeping alone; set
    against (b)'s extra time, it shows how much dearer that bookkeeping gets between
    large operations (which push the interpreter's own data out of the caches).
(b3) small MLP step: the same step at 64-64-10, batch 32.
(c) peak memory: forward + backward through 200 layers of ``y = tanh(y @ W_i)``
    (512x512 weights requiring grad, batch 256); the peak RSS growth over a
    baseline taken after the weights and input exist, in MiB, each
    implementation in a fresh subprocess; the median of up to 5 interleaved runs
    (a process's RSS varies by about 0.1 MiB from one run to the next).
(d) jacobian of ``f(x) = tanh(W @ x)``, W 64x64, float64: each library's own
    jacobian function (teachgrad's and torch's ``autograd.functional.jacobian``
    with its defaults, HIPS ``autograd.jacobian``); NumPy computes the closed form
    (a floor); MyGrad has no jacobian (n/a). ms per call.
(e) scale: (a)'s chain at 1,000 and at 100,000 nodes, forward + backward, in
    microseconds per node, and how much dearer a node gets in the long chain.
(f) bytes per node: the RSS growth per recorded node while a 200,000-op chain is
    alive before backward, each implementation in a fresh subprocess (RSS, not
    tracemalloc, which does not see torch's allocations).

Timings are interleaved (teachgrad, numpy, torch, autograd, mygrad, teachgrad, ...)
and the median of the rounds is reported. All implementations use the same
BLAS/OpenMP thread count (``--threads``, default 1). Python's garbage collector stays
on, but the objects that exist before timing are frozen (``gc.collect(); gc.freeze()``);
what the timed code creates is not.

    python benchmarks/bench.py                 # quick run, a few minutes
    python benchmarks/bench.py --rounds 15 --json results.json
    python benchmarks/bench.py --no-autograd --no-mygrad  # the three main ones only
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


BENCHMARKS = ("perop", "mlp", "mlp-tiny", "mlp-small", "memory", "jacobian", "scale", "bytes")


def parse_args(argv=None):
    p = common_parser(__doc__, BENCHMARKS)
    p.add_argument(
        "--profile",
        choices=("perop", "mlp"),
        help="instead of benchmarking, cProfile teachgrad on one benchmark and print the top functions",
    )
    p.add_argument(
        "--no-autograd", action="store_true", help="leave HIPS autograd out even if it is installed"
    )
    p.add_argument(
        "--no-mygrad", action="store_true", help="leave MyGrad out even if it is installed"
    )
    p.add_argument("--memory-child", metavar="IMPL", help=argparse.SUPPRESS)
    p.add_argument("--bytes-child", metavar="IMPL", help=argparse.SUPPRESS)
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

IMPLS = ("teachgrad", "numpy", "torch")  # bench_nn.py and bench_gpu.py use these three
# Optional peers, bench.py only: other autograd libraries, each differentiating the same
# functions its own way (HIPS autograd: functions of arrays; MyGrad: tensors, backward()).
PEERS = ("autograd", "mygrad")
ALL_IMPLS = IMPLS + PEERS
NAMES = {"teachgrad": "teachgrad", "numpy": "NumPy", "torch": "torch"}
NAMES |= {"autograd": "autograd", "mygrad": "MyGrad"}


def load(impl):
    """The module for ``impl``; None for torch, autograd or MyGrad when absent or left out.

    For HIPS autograd that is the ``autograd`` package, with ``autograd.numpy`` and
    ``autograd.scipy.special`` imported; MyGrad's memory guarding stays on (its default)."""
    if impl in PEERS:
        # bench_nn.py's and bench_gpu.py's ARGS have no --no-autograd/--no-mygrad
        if getattr(ARGS, "no_" + impl, False):
            return None
        try:
            if impl == "autograd":
                import autograd  # noqa: PLC0415
                import autograd.numpy  # noqa: PLC0415, F401
                import autograd.scipy.special  # noqa: PLC0415, F401

                return autograd
            import mygrad  # noqa: PLC0415
            import mygrad.nnet  # noqa: PLC0415, F401
        except ImportError:
            return None
        return mygrad
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


def chain_recorded(x, c, n_ops=N_OPS):
    """teachgrad and torch: the same code. The chain recorded, up to its sum (forward only)."""
    y = x
    for _ in range(n_ops // 4):
        y = y * 0.9
        y = y + c
        y = y.tanh()
        y = y.exp()
    return y.sum()


def chain_autograd(x, c, n_ops=N_OPS):
    """teachgrad and torch: the gradient of the chain's sum w.r.t. x."""
    x.grad = None
    chain_recorded(x, c, n_ops).backward()
    return x.grad


def chain_forward(y, c, n_ops, tanh, exp):
    """The same chain with functions for tanh and exp: HIPS autograd and MyGrad have no
    tensor methods for them."""
    for _ in range(n_ops // 4):
        y = y * 0.9
        y = y + c
        y = tanh(y)
        y = exp(y)
    return y


def chain_hips(ag, c, n_ops=N_OPS):
    """HIPS autograd: the gradient function of the chain's sum, built once (a user writes
    ``grad(f)`` once and calls it); each call traces the chain anew."""
    anp = ag.numpy
    return ag.grad(lambda x: anp.sum(chain_forward(x, c, n_ops, anp.tanh, anp.exp)))


def chain_mygrad(mg, x, c, n_ops=N_OPS):
    """MyGrad: tensors and ``backward()``; ``x.grad`` is a NumPy array."""
    x.null_grad()
    chain_forward(x, c, n_ops, mg.tanh, mg.exp).sum().backward()
    return x.grad


def chain_numpy_forward(x, c, n_ops=N_OPS):
    """Hand-written forward: the outputs backward needs (tanh's and exp's), and the result."""
    saved = []
    y = x
    for _ in range(n_ops // 4):
        y = y * 0.9
        y = y + c
        y = np.tanh(y)
        saved.append(y)
        y = np.exp(y)
        saved.append(y)
    return saved, y


def chain_numpy(x, c, n_ops=N_OPS):
    """Hand-written: the same forward, intermediates kept, backward in a reverse loop."""
    saved, y = chain_numpy_forward(x, c, n_ops)
    y.sum()
    g = np.ones_like(y)
    for i in range(len(saved) - 1, 0, -2):
        g = g * saved[i]  # exp: d e^t = e^t
        t = saved[i - 1]
        g = g * (1 - t * t)  # tanh: 1 - tanh^2
        g = g * 0.9  # mul by 0.9 (the add passes g through unchanged)
    return g


def to_mygrad(mg, array, requires_grad=False):
    """A MyGrad tensor on an aligned copy of ``array`` (``copy=False`` keeps the alignment);
    a tensor that does not require grad is a constant in MyGrad's terms."""
    return mg.tensor(aligned_copy(array), constant=not requires_grad, copy=False)


def perop_setup(impl, n_ops=N_OPS):
    """A zero-argument callable running the chain of ``n_ops`` ops once for ``impl``."""
    x, c = perop_data()
    if impl == "numpy":
        return lambda: chain_numpy(x, c, n_ops)
    lib = load(impl)
    if impl == "autograd":
        xa, grad_fn = aligned_copy(x), chain_hips(lib, aligned_copy(c), n_ops)
        return lambda: grad_fn(xa)
    if impl == "mygrad":
        xm, cm = to_mygrad(lib, x, requires_grad=True), to_mygrad(lib, c)
        return lambda: chain_mygrad(lib, xm, cm, n_ops)
    xt, ct = to_lib(lib, x, requires_grad=True), to_lib(lib, c)
    return lambda: chain_autograd(xt, ct, n_ops)


def perop_forward_setup(impl, n_ops=N_OPS):
    """(a'): a zero-argument callable recording (a)'s chain once for ``impl``, without its
    backward (the graph is dropped on return; NumPy keeps what its backward would read).
    HIPS autograd traces it with ``make_vjp``, the first half of its ``grad``."""
    x, c = perop_data()
    if impl == "numpy":
        return lambda: chain_numpy_forward(x, c, n_ops)
    lib = load(impl)
    if impl == "autograd":
        anp, ca, xa = lib.numpy, aligned_copy(c), aligned_copy(x)
        trace = lib.make_vjp(lambda v: anp.sum(chain_forward(v, ca, n_ops, anp.tanh, anp.exp)))
        return lambda: trace(xa)
    if impl == "mygrad":
        xm, cm = to_mygrad(lib, x, requires_grad=True), to_mygrad(lib, c)
        return lambda: chain_forward(xm, cm, n_ops, lib.tanh, lib.exp).sum()
    xt, ct = to_lib(lib, x, requires_grad=True), to_lib(lib, c)
    return lambda: chain_recorded(xt, ct, n_ops)


def perop_split(total, forward):
    """(a) split in two: the forward (a') and the backward, what (a) takes beyond it (a
    difference of medians; for HIPS autograd its trace and its vjp)."""
    return {i: {"value": total[i]["value"] - forward[i]["value"]} for i in total}


# ---------------------------------------------------------------------------------- (b) MLP step
MLP_SIZES = (784, 512, 512, 10)
BATCH = 256
TINY_SIZES = (8, 8, 8, 2)  # (b2): the same step, with arrays too small to cost anything
TINY_BATCH = 4
SMALL_SIZES = (64, 64, 10)  # (b3): the issue's "small MLP step"
SMALL_BATCH = 32
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
    """teachgrad and torch: the same code. Softmax cross-entropy from core ops, then backward.

    ``params`` are (weight, bias) pairs, flattened; every layer but the last has tanh."""
    h = x
    for w, b in zip(params[:-2:2], params[1:-2:2], strict=True):
        h = (h @ w + b).tanh()
    z = h @ params[-2] + params[-1]
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


def mlp_loss_hips(ag, params, x, onehot):
    """HIPS autograd: the same loss as a function of the list of parameters (not differentiated
    here: ``mlp_setup`` takes its ``value_and_grad``); logsumexp is autograd's own."""
    anp = ag.numpy
    h = x
    for w, b in zip(params[:-2:2], params[1:-2:2], strict=True):
        h = anp.tanh(h @ w + b)
    z = h @ params[-2] + params[-1]
    logp = z - ag.scipy.special.logsumexp(z, axis=1, keepdims=True)
    return -anp.mean(anp.sum(onehot * logp, axis=1))


def sgd_hips(params, grads):
    """HIPS autograd: the parameters are plain NumPy arrays, updated in place as NumPy's are."""
    for p, g in zip(params, grads, strict=True):
        p -= LR * g


def mlp_loss_backward_mygrad(mg, params, x, onehot):
    """MyGrad: the same loss with tensors, then backward. MyGrad has no logsumexp, so the
    log-softmax is its ``nnet.logsoftmax`` (computed without overflow too)."""
    h = x
    for w, b in zip(params[:-2:2], params[1:-2:2], strict=True):
        h = mg.tanh(h @ w + b)
    logp = mg.nnet.logsoftmax(h @ params[-2] + params[-1], axis=1)
    loss = -(onehot * logp).sum(axis=1).mean()
    loss.backward()
    return loss


def sgd_mygrad(params):
    """MyGrad, with memory guarding on: backward has cleared the graph, which unlocks the
    parameters' arrays, so ``p.data`` can be updated in place; then the gradient is nulled."""
    for p in params:
        p.data -= LR * p.grad
        p.null_grad()


def mlp_numpy_loss_grads(params, x, onehot):
    """Hand-written forward and backward, the same math as ``mlp_loss_backward``."""
    hs = [x]  # each layer's input: the MLP's input, then the hidden layers' outputs
    for w, b in zip(params[:-2:2], params[1:-2:2], strict=True):
        hs.append(np.tanh(hs[-1] @ w + b))
    z = hs[-1] @ params[-2] + params[-1]
    s = z - z.max(axis=1, keepdims=True)
    e = np.exp(s)
    se = e.sum(axis=1, keepdims=True)
    logp = s - np.log(se)
    loss = -(onehot * logp).sum(axis=1).mean()
    # backward
    dlogp = onehot * np.float32(-1.0 / len(x))
    da = dlogp - (e / se) * dlogp.sum(axis=1, keepdims=True)  # d loss / d z
    grads = [None] * len(params)
    for i in range(len(params) // 2 - 1, -1, -1):  # layer i: h_{i+1} = tanh(h_i @ w_i + b_i)
        grads[2 * i] = hs[i].T @ da
        grads[2 * i + 1] = da.sum(axis=0)
        if i:
            da = (da @ params[2 * i].T) * (1 - hs[i] * hs[i])  # through tanh: 1 - tanh^2
    return loss, grads


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
    if impl == "autograd":
        params, x, onehot = [aligned_copy(p) for p in params], aligned_copy(x), aligned_copy(onehot)
        loss_and_grads = lib.value_and_grad(lambda ps: mlp_loss_hips(lib, ps, x, onehot))

        def step_hips():
            loss, grads = loss_and_grads(params)
            sgd_hips(params, grads)
            return loss

        return step_hips
    if impl == "mygrad":
        ps = [to_mygrad(lib, p, requires_grad=True) for p in params]
        xm, om = to_mygrad(lib, x), to_mygrad(lib, onehot)

        def step_mygrad():
            loss = mlp_loss_backward_mygrad(lib, ps, xm, om)
            sgd_mygrad(ps)
            return loss

        return step_mygrad
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
    elif impl == "autograd":
        ag = load(impl)
        grads = []  # the gradients stay alive until clear(), as a tensor's .grad does

        def loss(ws):
            y = x
            for w in ws:
                y = ag.numpy.tanh(y @ w)
            return ag.numpy.sum(y)

        def run(n_layers):
            grads[:] = ag.grad(loss)(weights[:n_layers])

        def clear():
            grads.clear()
    elif impl == "mygrad":
        mg = load(impl)
        ws = [mg.tensor(w, copy=False) for w in weights]  # shares the NumPy memory
        xm = mg.tensor(x, constant=True, copy=False)

        def run(n_layers):
            y = xm
            for w in ws[:n_layers]:
                y = mg.tanh(y @ w)
            y.sum().backward()

        def clear():
            for w in ws:
                w.null_grad()
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


MEM_RUNS = 5  # at most: each run is a fresh process of a few seconds


def memory_medians(impls, malloc_env, runs):
    """(c) for each implementation: ``measure_memory``'s result of median growth, in ``runs``
    interleaved runs (teachgrad, numpy, torch, ..., teachgrad, ...); ``runs_mib`` keeps them all."""
    measured = {impl: [] for impl in impls}
    for _ in range(runs):
        for impl in impls:
            m = measure_memory(impl, malloc_env)
            growth = m["peak_growth_mib"]
            m["value"] = growth if growth is not None else m["maxrss_growth_mib"]
            measured[impl].append(m)
    mem = {}
    for impl, ms in measured.items():
        values = [m["value"] for m in ms]
        median = statistics.median(values)
        mem[impl] = {
            **min(ms, key=lambda m: abs(m["value"] - median)),
            "value": median,
            "runs_mib": values,
            "malloc_env": malloc_env,
        }
    return mem


def measure_memory(impl, malloc_env, child="--memory-child"):
    """Run ``child`` (``--memory-child`` or ``--bytes-child``) for ``impl`` in a fresh process."""
    cmd = [
        sys.executable,
        str(Path(__file__).resolve()),
        child,
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


# ---------------------------------------------------------------------------------- (d) jacobian
JAC_SIZE = 64


def jacobian_data(size=JAC_SIZE, seed=3):
    """W and x. W is scaled so that W @ x is of order 1: tanh does not saturate."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((size, size)) / np.sqrt(size)
    return w, rng.standard_normal(size)


def jacobian_numpy(w, x):
    """The closed form, no differentiation: d tanh(W x) / dx = (1 - tanh(W x)^2)[:, None] * W."""
    y = np.tanh(w @ x)
    return (1 - y * y)[:, None] * w


def jacobian_setup(impl):
    """A zero-argument callable computing the Jacobian with ``impl``'s own jacobian function,
    with its defaults (teachgrad and torch: vectorize=False, one backward pass per row).
    None for MyGrad, which has no jacobian function."""
    w, x = (aligned_copy(v) for v in jacobian_data())
    if impl == "numpy":
        return lambda: jacobian_numpy(w, x)
    if impl == "mygrad":
        return None
    lib = load(impl)
    if impl == "autograd":
        jac = lib.jacobian(lambda v: lib.numpy.tanh(w @ v))
        return lambda: jac(x)
    wt, xt = to_lib(lib, w), to_lib(lib, x)
    return lambda: lib.autograd.functional.jacobian(lambda v: (wt @ v).tanh(), xt)


# ---------------------------------------------------------------------------------- (e) scale
SCALE_NODES = (1_000, 100_000)  # (a)'s chain, short and long
SCALE_LONG_ROUNDS = 3  # at most: one round of the long chain takes seconds per implementation


# ---------------------------------------------------------------------------------- (f) bytes
BYTES_NODES = 200_000


def chain_alive(impl, n_ops):
    """(a)'s chain of ``n_ops`` ops, recorded and kept alive before backward: what holds the
    graph (for NumPy, the outputs the hand-written backward needs)."""
    x, c = perop_data()
    if impl == "numpy":
        return chain_numpy_forward(x, c, n_ops)
    lib = load(impl)
    if impl == "autograd":
        # make_vjp runs the forward pass and returns the backward function, which holds the
        # whole trace: the graph that grad() would walk next
        anp = lib.numpy
        return lib.make_vjp(lambda v: chain_forward(v, c, n_ops, anp.tanh, anp.exp))(x)
    if impl == "mygrad":
        xm, cm = to_mygrad(lib, x, requires_grad=True), to_mygrad(lib, c)
        return chain_forward(xm, cm, n_ops, lib.tanh, lib.exp)
    xt, ct = to_lib(lib, x, requires_grad=True), to_lib(lib, c)
    return chain_forward(xt, ct, n_ops, lambda t: t.tanh(), lambda t: t.exp())


def bytes_child(impl):
    """Runs in a fresh process: RSS growth per node of a long chain kept alive, as JSON.

    RSS, not tracemalloc: torch allocates in C++, where tracemalloc does not look, and the
    same measure for every implementation keeps them comparable. The GC stays on."""
    chain_alive(impl, 1_000)  # warm-up: lazy imports, caches, allocator pools
    gc.collect()
    base = _vm_kib("VmRSS")
    alive = chain_alive(impl, BYTES_NODES)
    grown = _vm_kib("VmRSS") - base
    del alive
    print(
        json.dumps(
            {
                "impl": impl,
                "nodes": BYTES_NODES,
                "rss_growth_mib": grown / 1024,
                "bytes_per_node": grown * 1024 / BYTES_NODES,
            }
        )
    )


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
    """Assert that the implementations compute the same values and gradients: (a)'s chain
    (which (e) and (f) repeat), (b)'s loss, gradients and SGD step, and (d)'s Jacobian."""
    x, c = perop_data()
    ref = chain_numpy(x, c)
    assert np.all(np.isfinite(ref)) and np.all(ref != 0), "chain gradient under/overflowed"
    for impl in impls:
        if impl != "numpy":
            assert_close(
                f"per-op chain gradient ({impl} vs numpy)",
                to_numpy(perop_setup(impl)()),
                ref,
                1e-3,
            )

    params, xb, onehot = mlp_data()
    ref_loss, ref_grads = mlp_numpy_loss_grads(params, xb, onehot)
    after = [p - LR * g for p, g in zip(params, ref_grads, strict=True)]
    for impl in impls:
        if impl == "numpy":
            continue
        lib = load(impl)
        if impl == "autograd":
            ps = [p.copy() for p in params]
            loss, grads = lib.value_and_grad(mlp_loss_hips, argnum=1)(lib, ps, xb, onehot)
        elif impl == "mygrad":
            ps = [to_mygrad(lib, p, requires_grad=True) for p in params]
            loss = mlp_loss_backward_mygrad(lib, ps, to_mygrad(lib, xb), to_mygrad(lib, onehot))
            grads = [p.grad for p in ps]
        else:
            ps = [to_lib(lib, p, requires_grad=True) for p in params]
            loss = mlp_loss_backward(ps, to_lib(lib, xb), to_lib(lib, onehot))
            grads = [p.grad for p in ps]
        assert_close(f"MLP loss ({impl} vs numpy)", to_numpy(loss), ref_loss, 1e-4)
        for i, (g, want) in enumerate(zip(grads, ref_grads, strict=True)):
            assert_close(
                f"MLP gradient of parameter {i} ({impl} vs numpy)", to_numpy(g), want, 1e-3
            )
        # one SGD step gives the same parameters too
        if impl == "autograd":
            sgd_hips(ps, grads)
        elif impl == "mygrad":
            sgd_mygrad(ps)
            assert all(p.grad is None and not p.constant for p in ps)
        else:
            sgd_autograd(lib, ps)
            assert all(p.grad is None and p.requires_grad and p.is_leaf for p in ps)
        for i, (p, want) in enumerate(zip(ps, after, strict=True)):
            got = p.data if impl == "mygrad" else to_numpy(p)
            assert_close(f"MLP parameter {i} after SGD ({impl} vs numpy)", got, want, 1e-4)

    ref_jac = jacobian_numpy(*jacobian_data())
    for impl in impls:
        run = jacobian_setup(impl)
        if run is not None:
            assert_close(f"Jacobian ({impl} vs closed form)", to_numpy(run()), ref_jac, 1e-10)


# ---------------------------------------------------------------------------------- timing
def bench_interleaved(setups, rounds, inner, warmup=True):
    """Median seconds per call of each callable; one round times each impl in turn.

    ``warmup=False`` skips the untimed first call, for calls that take seconds and follow
    a warm-up of the same code (scale's long chain, after its short one)."""
    fns = {impl: setup() for impl, setup in setups.items()}
    for fn in fns.values() if warmup else ():  # warm-up: caches, lazy imports, allocator
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
    if isinstance(v, str):  # a note such as "n/a"
        return v
    return "—" if v is None else f"{v:.{digits}f}"


def _fmt_ratio(r):
    return "—" if r is None else f"{r:.2f}x"


def _ratio(a, b):
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or b == 0:
        return None  # missing, or a note
    return a / b


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


def table_header(impls=IMPLS):
    """The results table's header: a column per implementation, then teachgrad / each other."""
    names = [NAMES[i] + (" (hand-written)" if i == "numpy" else "") for i in impls]
    ratios = [f"teachgrad / {NAMES[i]}" for i in impls if i != "teachgrad"]
    return [
        "| benchmark | " + " | ".join(names + ratios) + " |",
        "|---|" + "---:|" * (len(names) + len(ratios)),
    ]


TABLE_HEADER = table_header()  # bench_nn.py's table: teachgrad, NumPy, torch


def table_row(label, vals, digits, impls=IMPLS, ratios=True):
    """One row of the results table; ``vals`` maps each of ``impls`` to a number, None
    (not measured) or a note ("n/a"). ``ratios=False`` leaves the ratio columns empty."""
    cells = [_fmt(vals[i], digits) for i in impls]
    cells += [
        _fmt_ratio(_ratio(vals["teachgrad"], vals[i]) if ratios else None)
        for i in impls
        if i != "teachgrad"
    ]
    return f"| {label} | " + " | ".join(cells) + " |"


def spread_line(label, timings, scale):
    """``- label: impl min / median / max; ...`` for the timings of ``bench_interleaved``."""
    return f"- {label}: " + "; ".join(
        f"{i} {t['min_s'] * scale:.2f} / {t['median_s'] * scale:.2f} / {t['max_s'] * scale:.2f}"
        for i, t in timings.items()
    )


def memory_spread_line(mem):
    """``(c) over N runs, MiB (min / median / max): impl ...; ...`` for ``memory_medians``."""
    runs = "; ".join(
        f"{i} {min(m['runs_mib']):.2f} / {m['value']:.2f} / {max(m['runs_mib']):.2f}"
        for i, m in mem.items()
    )
    n = max(len(m["runs_mib"]) for m in mem.values())
    return f"(c) over {n} runs, MiB (min / median / max): {runs}."


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
    impls = results["config"]["impls"]
    lines = machine_lines(facts, results["config"]["rounds"])
    lines[-1:-1] = [f"- {NAMES[peer]}: {note}" for peer, note in facts["peers"].items()]
    lines += ["## Results", "", *table_header(impls)]
    n_short, n_long = SCALE_NODES
    rows = (
        # key, field, label, scale, digits, implementations that cannot run it
        ("perop", "value", "(a) per-op overhead, µs/op (median)", 1e6 / N_OPS, 2, ()),
        ("perop", "min_s", "(a) same, fastest round", 1e6 / N_OPS, 2, ()),
        ("perop_forward", "value", "(a') forward only (recording), µs/op (median)", 1e6 / N_OPS, 2, ()),
        ("perop_backward", "value", "(a'') backward: (a) − (a'), µs/op", 1e6 / N_OPS, 2, ()),
        ("mlp", "value", "(b) MLP step, ms/step (median)", 1e3, 2, ()),
        ("mlp", "min_s", "(b) same, fastest round", 1e3, 2, ()),
        ("mlp_tiny", "value", "(b2) same step, 8-8-8-2, batch 4, ms/step (median)", 1e3, 3, ()),
        ("mlp_small", "value", "(b3) small MLP step, 64-64-10, batch 32, ms/step (median)", 1e3, 3, ()),
        ("memory", "value", "(c) peak memory growth, MiB (live arrays)", 1, 1, ()),
        ("memory_glibc_default", "value", "(c') same, glibc's default malloc", 1, 1, ()),
        ("jacobian", "value", "(d) jacobian, tanh(W @ x), 64x64 float64, ms/call (median)", 1e3, 3, ("mygrad",)),
        ("scale_short", "value", f"(e) scale: chain of {n_short:,} ops, µs/node (median)", 1e6 / n_short, 2, ()),
        ("scale_long", "value", f"(e) scale: chain of {n_long:,} ops, µs/node (median)", 1e6 / n_long, 2, ()),
        ("scale_growth", "value", f"(e) µs/node at {n_long:,} / at {n_short:,}", 1, 2, ()),
        ("bytes", "value", f"(f) RSS bytes per node, {BYTES_NODES:,}-op chain alive", 1, 0, ()),
    )  # fmt: skip
    for key, field, label, scale, digits, unable in rows:
        r = results.get(key)
        if r is None:
            continue
        vals = {i: (None if r.get(i) is None else r[i][field] * scale) for i in impls}
        vals |= {i: "n/a" for i in unable}
        # teachgrad's growth over a peer's is no cost to compare: its column says it
        lines.append(table_row(label, vals, digits, impls, ratios=key != "scale_growth"))
    spread = []
    for key, label, scale in (
        ("perop", "per-op µs/op", 1e6 / N_OPS),
        ("mlp", "MLP ms/step", 1e3),
        ("mlp_tiny", "tiny MLP ms/step", 1e3),
        ("mlp_small", "small MLP ms/step", 1e3),
        ("jacobian", "jacobian ms/call", 1e3),
        ("scale_short", f"scale µs/node, {n_short:,} ops", 1e6 / n_short),
        ("scale_long", f"scale µs/node, {n_long:,} ops", 1e6 / n_long),
    ):
        r = results.get(key)
        if r is not None:
            spread.append(spread_line(label, {i: r[i] for i in impls if i in r}, scale))
    if spread:
        lines += ["", "Spread over the rounds (min / median / max):", ""] + spread
    if "memory" in results:
        lines += [
            "",
            memory_spread_line(results["memory"]),
            "",
            f"Memory floor: the {MEM_LAYERS} weight gradients alone are "
            f"{MEM_LAYERS * MEM_WIDTH * MEM_WIDTH * 4 / 2**20:.0f} MiB; the activations kept for "
            f"backward are {MEM_LAYERS * BATCH * MEM_WIDTH * 4 / 2**20:.0f} MiB.",
        ]
    if "jacobian" in results:
        lines += [
            "",
            "(d): NumPy is the closed form (1 - y²)[:, None] * W, no differentiation: a floor. "
            "MyGrad has no jacobian function (n/a).",
        ]
    if "scale_long" in results:
        lines += [
            "",
            f"(e): the {n_long:,}-op chain is timed in {results['config']['scale_long_rounds']} "
            "rounds of one call, without a warm-up call (the short chain ran the same code first).",
        ]
    lines += bookkeeping_lines(results)
    lines += ["", *target_lines(results["targets"])]
    return "\n".join(lines)


# issue 19's targets: (name, result key, the other implementation or None for teachgrad's own
# figure, target, strict: "faster than", a ratio below the target, not at it)
TARGETS = (
    ("per-op overhead, teachgrad / torch", "perop", "torch", 1.5, False),
    ("per-op overhead, teachgrad / autograd", "perop", "autograd", 1.0, True),
    ("per-op overhead, teachgrad / MyGrad", "perop", "mygrad", 1.0, True),
    ("MLP step, teachgrad / NumPy", "mlp", "numpy", 1.05, False),
    ("MLP step, teachgrad / autograd", "mlp", "autograd", 1.0, True),
    ("MLP step, teachgrad / MyGrad", "mlp", "mygrad", 1.0, True),
    ("small MLP step, teachgrad / torch", "mlp_small", "torch", 1.0, False),
    ("small MLP step, teachgrad / autograd", "mlp_small", "autograd", 1.0, True),
    ("small MLP step, teachgrad / MyGrad", "mlp_small", "mygrad", 1.0, True),
    ("jacobian, teachgrad / autograd", "jacobian", "autograd", 1.0, True),
    ("peak memory, teachgrad / torch", "memory", "torch", 1.0, False),
    ("bytes per node, teachgrad / torch", "bytes", "torch", 1.0, False),
    ("scale, teachgrad's µs/node at 100,000 / at 1,000", "scale_growth", None, 1.2, False),
)


def issue_targets(results) -> list:
    """``TARGETS`` with this run's ratios (``target_lines``' form), for the benchmarks and
    the peers that ran."""

    def ratio(key, other, field="value"):
        r = results.get(key)
        if r is None or "teachgrad" not in r or field not in r["teachgrad"]:
            return None
        if other is None:
            return r["teachgrad"][field]
        return _ratio(r["teachgrad"][field], r[other][field]) if other in r else None

    return [
        {
            "name": name,
            "target": target,
            "strict": strict,
            "ratio": ratio(key, other),
            "ratio_min": None if other is None else ratio(key, other, "min_s"),
        }
        for name, key, other, target, strict in TARGETS
        if key in results
    ]


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


def peer_notes():
    """``{peer: one line}``: each optional peer's version, or why it is left out."""
    from importlib import metadata  # noqa: PLC0415

    notes = {}
    for peer in PEERS:
        if getattr(ARGS, "no_" + peer):
            notes[peer] = f"left out (--no-{peer})"
        elif load(peer) is None:
            notes[peer] = "not importable, left out"
        else:
            notes[peer] = f"{metadata.version(peer)}" + (
                " (memory guarding on)" if peer == "mygrad" else ""
            )
    return notes


def timed(impls, setup, inner, rounds=None, warmup=True):
    """``bench_interleaved`` over ``impls`` with ``setup(impl)``; each entry gets its "value"."""
    r = bench_interleaved(
        {i: (lambda i=i: setup(i)) for i in impls}, rounds or ARGS.rounds, inner, warmup
    )
    return {i: {**v, "value": v["median_s"]} for i, v in r.items()}


def main():
    if ARGS.memory_child:
        memory_child(ARGS.memory_child)
        return
    if ARGS.bytes_child:
        bytes_child(ARGS.bytes_child)
        return
    if ARGS.profile:
        profile(ARGS.profile)
        return
    torch_mod = load("torch")
    impls = [i for i in ALL_IMPLS if i == "numpy" or load(i) is not None]
    facts = machine_facts(torch_mod)
    facts["peers"] = peer_notes()
    for peer in PEERS:
        if peer not in impls:
            print(f"note: {NAMES[peer]} {facts['peers'][peer]}", file=sys.stderr)
    only = set(ARGS.only or BENCHMARKS)
    check_equal_work(impls)
    print(
        "check: " + ", ".join(NAMES[i] for i in impls) + " compute the same values and gradients",
        file=sys.stderr,
    )

    long_rounds = min(ARGS.rounds, SCALE_LONG_ROUNDS)
    results = {
        "machine": facts,
        "config": {
            "rounds": ARGS.rounds,
            "threads": ARGS.threads,
            "impls": impls,
            "n_ops": N_OPS,
            "mlp_sizes": MLP_SIZES,
            "batch": BATCH,
            "tiny_mlp_sizes": TINY_SIZES,
            "tiny_batch": TINY_BATCH,
            "small_mlp_sizes": SMALL_SIZES,
            "small_batch": SMALL_BATCH,
            "memory_layers": MEM_LAYERS,
            "memory_width": MEM_WIDTH,
            "jacobian_size": JAC_SIZE,
            "scale_nodes": SCALE_NODES,
            "scale_long_rounds": long_rounds,
            "bytes_nodes": BYTES_NODES,
        },
    }
    if "perop" in only:
        print("(a) per-op overhead ...", file=sys.stderr)
        results["perop"] = timed(impls, perop_setup, inner=2)
        results["perop_forward"] = timed(impls, perop_forward_setup, inner=2)
        results["perop_backward"] = perop_split(results["perop"], results["perop_forward"])
    if "mlp" in only:
        print("(b) MLP step ...", file=sys.stderr)
        results["mlp"] = timed(impls, mlp_setup, inner=2)
    if "mlp-tiny" in only:
        print("(b2) MLP step with tiny arrays ...", file=sys.stderr)
        results["mlp_tiny"] = timed(impls, lambda i: mlp_setup(i, TINY_SIZES, TINY_BATCH), inner=20)
    if "mlp-small" in only:
        print("(b3) small MLP step ...", file=sys.stderr)
        results["mlp_small"] = timed(
            impls, lambda i: mlp_setup(i, SMALL_SIZES, SMALL_BATCH), inner=10
        )
    if "memory" in only:
        print("(c) peak memory ...", file=sys.stderr)
        for mode, malloc_env in MALLOC_MODES.items():
            key = "memory" if mode == "live" else "memory_glibc_default"
            results[key] = memory_medians(impls, malloc_env, min(ARGS.rounds, MEM_RUNS))
    if "jacobian" in only:
        print("(d) jacobian ...", file=sys.stderr)
        able = [i for i in impls if i != "mygrad"]  # MyGrad has no jacobian function
        results["jacobian"] = timed(able, jacobian_setup, inner=5)
    if "scale" in only:
        n_short, n_long = SCALE_NODES
        print(f"(e) scale: {n_short:,} and {n_long:,} nodes ...", file=sys.stderr)
        short = timed(impls, lambda i: perop_setup(i, n_short), inner=2)
        long = timed(
            impls, lambda i: perop_setup(i, n_long), inner=1, rounds=long_rounds, warmup=False
        )
        results["scale_short"], results["scale_long"] = short, long
        results["scale_growth"] = {
            i: {"value": (long[i]["value"] / n_long) / (short[i]["value"] / n_short)} for i in impls
        }
    if "bytes" in only:
        print(f"(f) bytes per node, {BYTES_NODES:,}-op chain ...", file=sys.stderr)
        results["bytes"] = {}
        for impl in impls:
            m = measure_memory(impl, {}, child="--bytes-child")
            results["bytes"][impl] = {**m, "value": m["bytes_per_node"]}

    facts["load_average_end"] = load_average()
    results["targets"] = issue_targets(results)
    print(report(facts, results))
    if ARGS.json:
        Path(ARGS.json).write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()

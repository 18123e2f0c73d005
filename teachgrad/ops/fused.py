"""Fused GPU kernels: one CUDA kernel where a formula on a training step's path would be
many CuPy launches. The GPU's speed trick, kept out of the ops' formulas.

On a GPU every array operation is a kernel launch, and CuPy needs about 10 µs of CPU time
to queue one however little it computes. A training step of a model that is not huge is
then all launches: the GPU waits for Python. (benchmarks/bench_gpu.py's MLP step on an
H200 made 89 launches and kept the CPU busy 2.8 ms for 1.0 ms of GPU work.) So the
formulas on that path also exist here as one hand-written CUDA kernel each. Measured gain
on that step: 89 -> 37 launches, 3.81 -> 2.94 ms (torch: 27 launches, 1.37 ms).

==========================  ===========================================  ==============
function                    computes                                     launches
==========================  ===========================================  ==============
``threshold_grad``          relu's backward: ``g`` where ``y > 0``, else 0     3 -> 1
``add_scaled_``             ``x += alpha * y`` in place (SGD's update)         2 -> 1
``log_softmax_rows``        log_softmax along the last dim of a matrix         6 -> 1
``log_softmax_rows_grad``   its backward, ``g - exp(y) · sum(g)``              4 -> 1
``nll_loss_rows``           nll_loss of (N, C) scores, 'mean' or 'sum'       ~25 -> 1
``nll_loss_rows_grad``      its gradient                                      ~7 -> 1
==========================  ===========================================  ==============

Each function returns None (or False) where its kernel does not apply: NumPy arrays,
dtypes other than float32/float64, layouts other than row-major, an array module without
CUDA kernels (the tests' CuPy stand-in). The op then runs its usual formula, which stays
the definition: a kernel computes the same numbers (up to the order of a sum), as
tests/teachgrad/ops/test_fused_kernels.py checks on a GPU.

>>> import numpy as np
>>> threshold_grad(np.ones(2), np.array([1.0, -1.0])) is None  # the CPU: the op's formula
True
"""

from __future__ import annotations

import functools

import numpy

from .._backend import array_module

_SCALAR = {numpy.dtype("float32"): "float", numpy.dtype("float64"): "double"}
_BLOCK = 256  # threads per block (the reductions below assume this number)

# The kernels, written once with ``scalar_t`` for float or double.
_SOURCE = r"""
#define INDEX (blockIdx.x * (long long)blockDim.x + threadIdx.x)

extern "C" __global__ void threshold_grad_scalar_t(
    const scalar_t* g, const scalar_t* y, scalar_t* out, long long n) {
  const long long i = INDEX;
  if (i < n) out[i] = y[i] <= 0 ? (scalar_t)0 : g[i];  // NaN in y passes g, as torch
}

__device__ float product(float a, float b) { return __fmul_rn(a, b); }
__device__ double product(double a, double b) { return __dmul_rn(a, b); }

extern "C" __global__ void add_scaled_scalar_t(
    scalar_t* x, const scalar_t* y, const scalar_t alpha, long long n) {
  const long long i = INDEX;  // rounded as y * alpha, then + x: no fused multiply-add
  if (i < n) x[i] = x[i] + product(y[i], alpha);
}

extern "C" __global__ void log_softmax_rows_scalar_t(
    const scalar_t* x, scalar_t* y, long long rows, long long C) {
  const long long r = INDEX;  // one thread per row
  if (r >= rows) return;
  const scalar_t* in = x + r * C;
  scalar_t* out = y + r * C;
  scalar_t m = in[0];  // the row's max; NaN if any is NaN (as NumPy's max)
  for (long long c = 1; c < C; ++c)
    if (m == m && !(in[c] <= m)) m = in[c];
  scalar_t s = 0;
  for (long long c = 0; c < C; ++c) s += exp(in[c] - m);
  const scalar_t log_s = log(s);
  for (long long c = 0; c < C; ++c) out[c] = (in[c] - m) - log_s;
}

extern "C" __global__ void log_softmax_rows_grad_scalar_t(
    const scalar_t* g, const scalar_t* y, scalar_t* out, long long rows, long long C) {
  const long long r = INDEX;  // one thread per row
  if (r >= rows) return;
  scalar_t s = 0;
  for (long long c = 0; c < C; ++c) s += g[r * C + c];
  for (long long c = 0; c < C; ++c) out[r * C + c] = g[r * C + c] - exp(y[r * C + c]) * s;
}

extern "C" __global__ void nll_loss_rows_scalar_t(
    const scalar_t* x, const long long* t, long long N, long long C, long long ignore_index,
    int mean, scalar_t* loss, scalar_t* total, bool* bad) {
  // one block of 256 threads: each sums its samples, then the block adds up the sums
  // (in a fixed order, so the result is the same every run)
  __shared__ scalar_t loss_sums[256];
  __shared__ scalar_t counts[256];
  __shared__ int bads[256];
  const int k = threadIdx.x;
  scalar_t l = 0, w = 0;
  int b = 0;
  for (long long n = k; n < N; n += blockDim.x) {
    const long long target = t[n];
    if (target == ignore_index) continue;
    if (target < 0 || target >= C) { b = 1; continue; }
    l -= x[n * C + target];
    w += 1;
  }
  loss_sums[k] = l; counts[k] = w; bads[k] = b;
  __syncthreads();
  for (int half = blockDim.x / 2; half > 0; half /= 2) {
    if (k < half) {
      loss_sums[k] += loss_sums[k + half];
      counts[k] += counts[k + half];
      bads[k] |= bads[k + half];
    }
    __syncthreads();
  }
  if (k == 0) {  // 'mean' with every target ignored: 0 / 0 = NaN, as torch
    loss[0] = mean ? loss_sums[0] / counts[0] : loss_sums[0];
    total[0] = counts[0];
    bad[0] = bads[0] != 0;
  }
}

extern "C" __global__ void nll_loss_rows_grad_scalar_t(
    const scalar_t* g, const scalar_t* total, const long long* t, scalar_t* out,
    long long N, long long C, long long ignore_index, int mean) {
  const long long i = INDEX;
  if (i >= N * C) return;
  const long long n = i / C, target = t[n];
  scalar_t v = 0;
  if (target == i - n * C && target != ignore_index)
    v = mean ? g[0] * ((scalar_t)-1 / total[0]) : -g[0];
  out[i] = v;
}
"""


@functools.cache
def _kernel(xp, name: str, scalar: str):
    """The compiled kernel ``name`` for ``scalar`` (CuPy compiles on first use, then caches)."""
    return xp.RawKernel(_SOURCE.replace("scalar_t", scalar), f"{name}_{scalar}")


def _launcher(*arrays):
    """``(launch, scalar)`` when every array is a row-major CuPy array of one float dtype
    (float32 or float64) that the kernels take; else None."""
    first = arrays[0]
    if type(first) is numpy.ndarray:  # the CPU: nothing to fuse (the common case, first)
        return None
    scalar = _SCALAR.get(first.dtype)
    xp = array_module(first)
    if scalar is None or getattr(xp, "RawKernel", None) is None:  # NumPy, the stand-in
        return None
    for a in arrays:
        if a.dtype != first.dtype or not a.flags.c_contiguous:
            return None

    def launch(name, n_threads, *args):
        blocks = (n_threads + _BLOCK - 1) // _BLOCK
        _kernel(xp, name, scalar)((max(blocks, 1),), (_BLOCK,), args)

    return launch, xp


def threshold_grad(g, y):
    """``where(y > 0, g, 0)`` (relu's backward) in one kernel, or None (see the module).

    >>> import numpy as np
    >>> threshold_grad(np.ones(2), np.ones(2)) is None
    True
    """
    found = _launcher(g, y) if g.shape == y.shape else None
    if found is None:
        return None
    launch, xp = found
    out = xp.empty_like(g)
    launch("threshold_grad", g.size, g, y, out, numpy.int64(g.size))
    return out


def add_scaled_(x, y, alpha) -> bool:
    """``x += alpha * y`` in place in one kernel (SGD's ``p.add_(g, alpha=-lr)``); False
    where the kernel does not apply (nothing is written then). Rounded as the two steps
    ``y * alpha`` and ``x + that``.

    >>> import numpy as np
    >>> add_scaled_(np.ones(2), np.ones(2), 0.5)
    False
    """
    found = _launcher(x, y) if getattr(y, "shape", None) == x.shape else None  # (y: maybe a number)
    if found is None:
        return False
    launch, _ = found
    launch("add_scaled", x.size, x, y, x.dtype.type(alpha), numpy.int64(x.size))
    return True


def _rows(x, dim, max_columns=1024):
    """Whether ``x`` is a non-empty matrix worked on along its last dim, with rows short
    enough for one thread each (longer rows: the op's formula, which spreads them)."""
    return x.ndim == 2 and dim in (1, -1) and 0 < x.shape[1] <= max_columns and x.shape[0] > 0


def log_softmax_rows(x, dim):
    """``log_softmax(x, dim)`` for a matrix along its last dim, one kernel; or None.

    >>> import numpy as np
    >>> log_softmax_rows(np.zeros((2, 3)), 1) is None
    True
    """
    found = _launcher(x) if _rows(x, dim) else None
    if found is None:
        return None
    launch, xp = found
    rows, columns = x.shape
    out = xp.empty_like(x)
    launch("log_softmax_rows", rows, x, out, numpy.int64(rows), numpy.int64(columns))
    return out


def log_softmax_rows_grad(g, y, dim):
    """log_softmax's backward ``g - exp(y) · sum(g, dim)`` for matrices, one kernel; or None.

    >>> import numpy as np
    >>> log_softmax_rows_grad(np.zeros((2, 3)), np.zeros((2, 3)), 1) is None
    True
    """
    found = _launcher(g, y) if _rows(g, dim) and g.shape == y.shape else None
    if found is None:
        return None
    launch, xp = found
    rows, columns = g.shape
    out = xp.empty_like(g)
    launch("log_softmax_rows_grad", rows, g, y, out, numpy.int64(rows), numpy.int64(columns))
    return out


def nll_loss_rows(x, t, ignore_index, reduction):
    """nll_loss of (N, C) scores ``x`` and class indices ``t`` without class weights,
    reduced by 'mean' or 'sum', in one kernel: ``(loss, total, bad)``, all 0-d arrays on
    the GPU (``total``: how many targets counted; ``bad``: whether one was out of range,
    for the op's device-side check). None where it does not apply.

    >>> import numpy as np
    >>> nll_loss_rows(np.zeros((2, 3)), np.zeros(2, dtype=np.int64), -100, "mean") is None
    True
    """
    fits = x.ndim == 2 and t.shape == x.shape[:1] and reduction in ("mean", "sum")
    fits = fits and t.dtype == numpy.int64 and t.flags.c_contiguous
    found = _launcher(x) if fits else None
    if found is None:
        return None
    launch, xp = found
    loss, total, bad = xp.empty((), x.dtype), xp.empty((), x.dtype), xp.empty((), bool)
    n, c = x.shape
    # one block: its 256 threads share the samples (so n_threads is the block's size)
    launch(
        "nll_loss_rows",
        1,
        x,
        t,
        numpy.int64(n),
        numpy.int64(c),
        numpy.int64(ignore_index),
        numpy.int32(reduction == "mean"),
        loss,
        total,
        bad,
    )
    return loss, total, bad


def nll_loss_rows_grad(g, total, t, shape, ignore_index, reduction):
    """``nll_loss_rows``'s gradient for the 0-d upstream gradient ``g``: zeros of ``shape``
    (N, C) with ``-g`` (over ``total`` for 'mean') at each counted target. One kernel, or
    None where it does not apply (then the op's formula runs).

    >>> import numpy as np
    >>> nll_loss_rows_grad(np.ones(()), np.ones(()), np.zeros(2, dtype=np.int64), (2, 3),
    ...                    -100, "mean") is None
    True
    """
    found = _launcher(g, total) if g.ndim == 0 else None
    if found is None:
        return None
    launch, xp = found
    out = xp.empty(shape, g.dtype)
    n, c = shape
    launch(
        "nll_loss_rows_grad",
        n * c,
        g,
        total,
        t,
        out,
        numpy.int64(n),
        numpy.int64(c),
        numpy.int64(ignore_index),
        numpy.int32(reduction == "mean"),
    )
    return out

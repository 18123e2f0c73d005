"""Shared machinery of the in-place / views / versions tests (issue 3).

Every test here runs one small program twice, once with ``lib = teachgrad`` and once
with ``lib = torch`` (their APIs match), records *facts* about what happened (values,
``_version``, ``grad_fn.name()``, gradients, or the error raised) and asserts that
the two records are equal. PyTorch (CPU) is the oracle.

    facts = both(program)          # {"tg": ..., "torch": ...}, or the errors each raised
    assert_same(facts["tg"], facts["torch"])
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import teachgrad as tg

try:
    import torch
except ImportError:  # every test here then skips (fails in CI): see conftest.py
    torch = None

LIBS = {"tg": tg, "torch": torch}
RTOL, ATOL = 1e-9, 1e-11
# A float32 (or float16) result may differ from torch's in its last bits: NumPy and torch each
# pick a vectorized exp/log/pow by what the CPU can do (AVX2, AVX-512 or neither), and those
# round differently (pow and BCE on a CPU without AVX2: 1 to 3 ulps). Allow 8 ulps there.
ULPS = 8

# --------------------------------------------------------------------------- making inputs


def _rng(seed):
    return np.random.default_rng(seed)


DOMAINS = {
    "real": lambda rng, shape: rng.standard_normal(shape),
    "positive": lambda rng, shape: rng.uniform(0.5, 2.0, shape),
    "nonzero": lambda rng, shape: rng.uniform(0.3, 1.5, shape) * rng.choice([-1.0, 1.0], shape),
}


def values(seed, shape, domain="real"):
    """A float64 NumPy array of ``shape`` drawn from ``domain`` (same seed, same numbers)."""
    return DOMAINS[domain](_rng(seed), shape)


def make(lib, array, requires_grad=False, dtype="float64"):
    """The NumPy ``array`` as a ``lib`` tensor (a leaf)."""
    return lib.tensor(np.array(array), dtype=getattr(lib, dtype), requires_grad=requires_grad)


def numpy(t):
    """A tensor's values as a fresh NumPy array (works for both libraries, grad or not)."""
    return np.array(t.detach().cpu().numpy(), copy=True)


def name(t, exact=False):
    """``t.grad_fn.name()``, or None for a tensor without history.

    torch names its C++-only nodes with their namespace (``torch::autograd::CopySlices``,
    ``torch::autograd::CopyBackwards``, ``torch::autograd::AccumulateGrad``); unless
    ``exact``, that prefix is dropped so the tables compare the node *kind* (the exact
    spelling has its own test).
    """
    return node_name(t.grad_fn, exact)


def node_name(fn, exact=False):
    """A graph node's ``name()`` (None for no node), namespace dropped unless ``exact``."""
    if fn is None:
        return None
    return fn.name() if exact else fn.name().removeprefix("torch::autograd::")


def grad(t):
    """``t.grad`` as NumPy (None when no gradient arrived)."""
    return None if t is None or t.grad is None else numpy(t.grad)


def weighted_sum(lib, tensors, seed=1234):
    """sum_i <t_i, W_i> with fixed random weights W_i: a scalar whose gradient w.r.t. each
    ``t_i`` is the random upstream gradient W_i (so every element's gradient is checked)."""
    rng = _rng(seed)
    total = None
    for t in tensors:
        w = rng.standard_normal(tuple(t.shape))
        if not t.requires_grad:
            continue
        term = (t * make(lib, w)).sum()
        total = term if total is None else total + term
    return total


# --------------------------------------------------------------------------- running both


class Raised:
    """The outcome of a program that raised: exception class name and message."""

    def __init__(self, exc: BaseException):
        self.type = type(exc).__name__
        self.message = str(exc)

    def __repr__(self):
        return f"Raised({self.type}: {self.message[:300]!r})"


def run(program, lib):
    """``program(lib)``, or the ``Raised`` record of what it raised."""
    try:
        return program(lib)
    except Exception as exc:  # noqa: BLE001 - the error *is* the fact we compare
        return Raised(exc)


def both(program):
    """Run ``program`` with teachgrad and with torch: ``{"tg": ..., "torch": ...}``."""
    return {key: run(program, lib) for key, lib in LIBS.items()}


def differences(got, want, path="result") -> list[str]:
    """Every place where two fact records differ (arrays and floats within a tolerance)."""
    if isinstance(want, Raised) or isinstance(got, Raised):
        if not (isinstance(got, Raised) and isinstance(want, Raised)):
            return [f"{path}: teachgrad gave {got!r}, torch gave {want!r}"]
        if got.type != want.type:
            return [f"{path}: teachgrad raised {got!r}, torch raised {want!r}"]
        return []
    if isinstance(want, dict):
        if not isinstance(got, dict) or got.keys() != want.keys():
            return [f"{path}: teachgrad {got!r} != torch {want!r}"]
        return [d for k in want for d in differences(got[k], want[k], f"{path}[{k!r}]")]
    if isinstance(want, list | tuple):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            return [f"{path}: teachgrad {got!r} != torch {want!r}"]
        return [
            d for i, (g, w) in enumerate(zip(got, want)) for d in differences(g, w, f"{path}[{i}]")
        ]
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray) or got.shape != want.shape:
            return [f"{path}: teachgrad {got!r} != torch {want!r}"]
        rtol = ULPS * np.finfo(want.dtype).eps if want.dtype.kind in "fc" else RTOL
        if not np.allclose(got, want, rtol=max(rtol, RTOL), atol=ATOL, equal_nan=True):
            return [
                f"{path}: values differ\n  teachgrad {got.tolist()}\n  torch     {want.tolist()}"
            ]
        return []
    if isinstance(want, float) and not isinstance(want, bool):
        if not isinstance(got, int | float) or got != pytest.approx(want, rel=RTOL, abs=ATOL):
            return [f"{path}: teachgrad {got!r} != torch {want!r}"]
        return []
    if got != want:
        return [f"{path}: teachgrad {got!r} != torch {want!r}"]
    return []


def assert_same(got, want):
    """Assert two fact records are equal, listing every difference when they are not."""
    diffs = differences(got, want)
    assert not diffs, "teachgrad differs from torch:\n" + "\n".join(diffs)


def assert_both_same(program):
    """Run ``program`` on both libraries and assert the records match; return them."""
    facts = both(program)
    assert_same(facts["tg"], facts["torch"])
    return facts


def torch_phrase(message: str) -> str:
    """torch's message with the library name made neutral (``torch.`` -> ``LIB.``), and the
    device in legacy type names too (``torch.cuda.FloatTensor``, ``CUDABoolType``): with
    ``--device-standin`` teachgrad's tensors are on "cuda", torch's on the CPU."""
    message = re.sub(r"\b(torch|teachgrad)\.(cuda\.)?", "LIB.", message)
    return message.replace("CUDABoolType", "CPUBoolType")

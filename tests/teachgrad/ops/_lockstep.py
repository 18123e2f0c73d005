"""Run one random program on teachgrad and on torch side by side, and compare every outcome.

The random-program tests (test_random_programs_more.py) build a program one step at a
time. Each step is a function ``step(lib, *tensors)`` run once with ``lib = teachgrad`` on
teachgrad's tensors and once with ``lib = torch`` on torch's, inside the same grad mode.
:func:`run_step` runs both and says whether both raised (same class, same first line of
the message) or both answered; :func:`facts` reads what a tensor looks like (values, dtype,
shape, requires_grad, is_leaf, strides) so two tensors can be compared with :func:`same`.
"""

from __future__ import annotations

import contextlib
import warnings

import numpy as np

from tests.teachgrad.inplace._common import torch_phrase


class Raised:
    """What a step raised: exception class name and the first line of its message."""

    def __init__(self, exc: BaseException):
        self.type = type(exc).__name__
        lines = str(exc).strip().splitlines() or [""]
        # teachgrad may add its own " Hint: ..." where torch's line goes on with another one
        first = torch_phrase(lines[0].split(" Hint: ")[0])
        self.first_line = _known_differences(first.replace("torch::autograd::", ""))

    def __eq__(self, other):
        return isinstance(other, Raised) and (self.type, self.first_line) == (
            other.type,
            other.first_line,
        )

    def __repr__(self):
        return f"Raised({self.type}: {self.first_line!r})"


def _known_differences(line: str) -> str:
    """``line`` with the parts teachgrad is known to word differently made neutral.

    - "Inference tensors cannot be saved for backward.": torch's advice after it is newer.
    """
    saved = "Inference tensors cannot be saved for backward."
    return saved if line.startswith(saved) else line


MODES = {
    "grad": lambda lib: contextlib.nullcontext(),
    "no_grad": lambda lib: lib.no_grad(),
    "inference_mode": lambda lib: lib.inference_mode(),
    "set_grad_enabled(False)": lambda lib: lib.set_grad_enabled(False),
    "enable_grad in no_grad": lambda lib: _nested(lib.no_grad(), lib.enable_grad()),
    "no_grad in inference_mode": lambda lib: _nested(lib.inference_mode(), lib.no_grad()),
}


@contextlib.contextmanager
def _nested(outer, inner):
    with outer, inner:
        yield


def call(lib, mode, step, *args):
    """``step(lib, *args)`` inside grad mode ``mode``, or the :class:`Raised` it raised.

    Warnings are silenced: both libraries warn alike (e.g. reading ``.T`` of a 3-d tensor),
    and the tests compare values and errors, not warnings.
    """
    try:
        with warnings.catch_warnings(), MODES[mode](lib):
            warnings.simplefilter("ignore")
            return step(lib, *args)
    except Exception as exc:  # noqa: BLE001 - the error *is* the outcome compared
        return Raised(exc)


def numpy(t):
    """A tensor's values as a fresh NumPy array (either library, grad or not)."""
    return np.array(t.detach().cpu().numpy(), copy=True)


def strides_on_real_dims(t):
    """``t.stride()`` where torch's contract fixes it: dims longer than one of a non-empty
    tensor (a stride along a dim of size 1 or 0 never moves between elements, and torch
    itself reports different ones for the same layout depending on the op)."""
    if t.numel() == 0:
        return None
    return tuple(s if n > 1 else None for s, n in zip(t.stride(), t.shape))


STRIDES = {
    "all": lambda t: tuple(t.stride()),
    "real dims": strides_on_real_dims,
    "none": lambda t: None,
}


def facts(t, strides="real dims"):
    """What a tensor looks like: dtype, shape, values, requires_grad, is_leaf, the
    strides chosen by ``strides`` (a key of :data:`STRIDES`) and its place in the graph (its
    node's name and edges: ``matmul`` beyond 2-d and ``einsum`` are one node in teachgrad,
    several in torch, see docs/differences-from-torch.md; the programs here use neither)."""
    return {
        "dtype": str(t.dtype).split(".")[-1],
        "shape": tuple(t.shape),
        "values": numpy(t),
        "requires_grad": t.requires_grad,
        "is_leaf": t.is_leaf,
        "stride": STRIDES[strides](t),
        "node": _node(t.grad_fn),
    }


def _node(fn):
    """A node's name and, for each edge, the next node's name and input number (torch's
    namespace on its C++ nodes' names dropped)."""
    if fn is None:
        return None
    edges = [(_name(n), nr) for n, nr in fn.next_functions]
    return _name(fn), edges


def _name(fn):
    return None if fn is None else fn.name().removeprefix("torch::autograd::")


def _tolerance(want: np.ndarray, loose: bool):
    """Rounding allowance: float32 steps round at ~1e-7 and errors add up over a program
    (``loose``: some float32 step came before, so even a float64 value carries its error)."""
    rtol = 1e-4 if loose or want.dtype == np.float32 else 1e-8
    finite = want[np.isfinite(want)] if want.dtype.kind == "f" else want
    return rtol, rtol * (1 + np.abs(finite).max(initial=0))


def differences(got, want, path="", loose=False) -> list[str]:
    """Every place two outcomes differ (values within :func:`_tolerance`)."""
    if isinstance(want, Raised) or isinstance(got, Raised):
        return [] if got == want else [f"{path}: teachgrad {got!r}, torch {want!r}"]
    if isinstance(want, dict):
        if not isinstance(got, dict) or got.keys() != want.keys():
            return [f"{path}: teachgrad {got!r}, torch {want!r}"]
        return [d for k in want for d in differences(got[k], want[k], f"{path}.{k}", loose)]
    if isinstance(want, list | tuple) and not isinstance(want, np.ndarray):
        if not isinstance(got, list | tuple) or len(got) != len(want):
            return [f"{path}: teachgrad {got!r}, torch {want!r}"]
        return [d for g, w in zip(got, want) for d in differences(g, w, path, loose)]
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray) or got.shape != want.shape:
            return [f"{path}: teachgrad {got!r}, torch {want!r}"]
        if want.dtype.kind == "f":
            rtol, atol = _tolerance(want, loose)
            ok = np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)
        else:
            ok = np.array_equal(got, want)
        return [] if ok else [f"{path}: teachgrad {got.tolist()}, torch {want.tolist()}"]
    return [] if got == want else [f"{path}: teachgrad {got!r}, torch {want!r}"]

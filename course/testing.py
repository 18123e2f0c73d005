"""What graded tests are made of: points, failures that explain themselves, gradient checks.

An exercise's ``tests.py`` is a list of functions decorated with :func:`points`. Each
takes ``ns`` (the student's names: a notebook's globals, or a module's ``vars``) and
either returns (full marks) or raises :class:`Failure` (no marks) with a diagnosis.

:func:`check_function` is the workhorse. It calls the student's ``backward`` *directly*
(``Fn.backward(ctx, grad)``), not through ``.backward()``: the engine, like torch's,
quietly sums a gradient that has the broadcast shape back to the input's shape, and we
want to see what the student's code really returned. It then builds both Jacobians,

- numerically: column c is ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``;
- analytically: row r is what backward returns for ``grad_output = e_r``,

and, when they differ, names the likely cause (:data:`CAUSES`): a sign, a factor, a
transpose, a forgotten ``grad``, or a slip in what backward reads from ``ctx`` (found by
undoing the slip and checking again, see :func:`_slips`).

Two precisions. Finite differences are good to about 1e-6, so ``check_function`` allows
``atol=1e-5, rtol=1e-3``. A value compared with an exact float64 reference (a forward
against NumPy, a second derivative against its formula) may differ by rounding only:
:func:`agree` allows ``rtol=1e-10`` (:data:`EXACT`).

A test whose own code raises (a bug in ``tests.py`` or here, not in the student's code)
fails with cause "checker", so that the student is not blamed for it (:func:`points`).

What does not live here: running tests and collecting scores (``course.exercises``) and
showing the result to a student (``course.check``).
"""

from __future__ import annotations

import contextlib
import functools
import sysconfig
import traceback
from pathlib import Path

import numpy as np

import teachgrad as tg

__all__ = [
    "CAUSES",
    "EXACT",
    "Failure",
    "agree",
    "check_close",
    "check_function",
    "get",
    "grading_seed",
    "points",
    "submitted_cells",
]

EXACT = {"rtol": 1e-10, "atol": 1e-12}  # float64 rounding, and nothing more

# Each diagnosis a failure can carry, with the advice a TA would give for it.
CAUSES = {
    "not_written": "This part is not written yet (it still raises NotImplementedError).",
    "missing": "The name is not defined: run the cell that defines it first.",
    "no_return": "The function returned None: is a `return` missing?",
    "error": "Your code raised an exception; the message below says where and why.",
    "engine": "Your code asked teachgrad itself (its autograd, or its own op) for what the "
    "exercise asks you to compute.",
    "checker": "The checker itself failed, in its own code (the line below is the checker's): "
    "a bug in this exercise's tests, unless a value of yours surprised it (a None from a "
    "missing return?). Please tell your instructor.",
    "forward": "forward computes the wrong values.",
    "factor_of_2": "The gradient is off by a factor of 2.",
    "sign": "The gradient has the wrong sign.",
    "transposed": "The gradient is transposed (rows and columns swapped).",
    "unbroadcast": "Forgot to un-broadcast: sum the gradient over the broadcast dims.",
    "shape": "The gradient does not have the input's shape.",
    "zeros": "The gradient is all zeros (or None).",
    "forgot_grad": "backward ignores grad: it returns the local derivative only. The chain "
    "rule multiplies it by grad, the gradient of the loss with respect to the output.",
    "saved_tensor": "backward's formula is right, but for the other tensor: it needs "
    "forward's output and gets the input (or the reverse). Save what the formula uses.",
    "transpose_missing": "backward multiplies by a saved matrix where its transpose is "
    "needed (grad @ B instead of grad @ B.T): the shapes say which one fits.",
    "swapped": "The gradients of two inputs are swapped.",
    "wrong_count": "backward must return one gradient per input of forward.",
    "wrong_values": "The gradient has the wrong values.",
    "scaled": "The gradient is off by a constant factor: a missing (or extra) 1/N of a mean?",
    "overflow": "exp overflowed to inf or nan: subtract the row's max before exponentiating.",
    "first_order": "You returned the gradient itself: differentiate it once more "
    "(create_graph=True on the first grad).",
    "accumulate": "A node used more than once kept only its last gradient contribution: "
    "accumulate with +=, never overwrite with =.",
    "zero_grad": "The parameters' gradients were not reset between steps, so each step "
    "followed the sum of all past gradients: set every p.grad = 0 before backward.",
    "constant": "The first derivative is right, the second is not: backward uses an "
    "intermediate that forward computed (neither an input nor the output), a constant for the "
    "second derivative. Save inputs and outputs, or recompute from them in backward.",
    "topological_order": "A node passed its gradient on before all its contributions had "
    "arrived: process the nodes in reverse topological order (every user before what it uses).",
    "inplace": "A tensor that a node saved for backward was changed in place: compute out "
    "of place (y = y * 2, not y *= 2), or change a .clone().",
    "prediction": "Some predictions disagree with what teachgrad does: an in-place op fails "
    "only when a node saved the tensor it changes.",
    "computed": "The answers must be written out, not computed: the exercise is to predict, "
    "so the function returns a dict of True and False written in its code, which the grader "
    "reads there (it does not run the function).",
    "detached": "backward leaves teachgrad (.numpy(), .detach(), a new tg.tensor or no_grad), "
    "so the engine has no graph of it to differentiate: the second derivative is zero, or "
    "cannot be taken at all. Write backward with teachgrad ops on the saved tensors.",
    "scalar_loss": "The loss must be one number: reduce it with .sum(), as the original "
    "program does, before calling backward.",
    "accuracy": "The model does not learn enough: check the loop (opt.zero_grad() every step, "
    "F.cross_entropy on the logits and class indices), then the learning rate and the epochs.",
    "slow": "Training takes too long: use minibatches, fewer epochs or a smaller model.",
    "overlap": "A pixel that lies in several patches must get the sum of their gradients: "
    "col2im adds each patch back (+=), it does not overwrite (=).",
    "memory": "The forward pass kept the blocks' activations for backward: run each block "
    "without recording (forward of a Function already does) and recompute it in backward.",
    "recompute": "Each block must run exactly twice: once in forward (not recorded) and once "
    "when its backward recomputes it (recorded).",
    "parameters": "The block's weights got no gradient: they are inputs of Checkpoint like x, "
    "so recompute from fresh leaves of all of them and return the gradient of each.",
    "no_graph": "Backward runs with grad mode off, so recomputing the block recorded no "
    "graph: recompute inside `with tg.enable_grad():` from `x.detach().requires_grad_()`.",
}


class Failure(AssertionError):
    """A test failed; ``cause`` is a key of :data:`CAUSES`, ``message`` says the details.

    For a wrong gradient it also carries what the report shows: ``pair`` (a sentence
    naming the input/output pair) and the two Jacobians ``numerical``/``analytical``.
    """

    def __init__(self, cause, message, *, pair=None, numerical=None, analytical=None):
        super().__init__(message)
        self.cause, self.message, self.pair = cause, message, pair
        self.numerical, self.analytical = numerical, analytical


def points(n, *, uses=(), hidden=False, seconds=None, autograd=(), refuses=()):
    """Mark a test function as graded: worth ``n`` points, testing the student's names
    ``uses``; hidden tests run only when grading, not in ``course.check``. ``seconds``
    is the time the test needs when the autograder runs it, if more than its default.
    ``autograd`` names what of teachgrad's own autograd the student's code may call
    during the test (``"grad"``, ``"backward"``, ``"enable_grad"``, ``"hessian"`` ...):
    by default nothing, so that a derivative the exercise asks for is not delegated.
    ``refuses`` names teachgrad's built-in ops (by their node, ``"ConvolutionBackward0"``)
    that the student's code may not call during the test: the op the exercise writes.

    An exception raised by the test's own code (its file, or this one) is a bug in the
    checker, not in the student's code: it becomes a Failure with cause "checker".

    >>> @points(2, uses=("Square",))
    ... def test_nothing(ns):
    ...     pass
    >>> test_nothing.points, test_nothing.uses, test_nothing.hidden, test_nothing.seconds
    (2, ('Square',), False, None)
    >>> test_nothing.autograd, test_nothing.refuses
    ((), ())
    """

    def mark(test):
        @functools.wraps(test)
        def graded(ns):
            try:
                return test(ns)
            except (Failure, NotImplementedError):
                raise
            except Exception as exc:
                frame = _raised_in(exc, {test.__code__.co_filename, __file__})
                if frame is None:
                    raise
                where = f"{Path(frame.filename).parent.name}/{Path(frame.filename).name}"
                raise Failure(
                    "checker",
                    f"The checker raised {type(exc).__name__}: {exc}\n"
                    f"  in {where}, line {frame.lineno}: {frame.line}",
                ) from exc

        graded.points, graded.uses, graded.hidden, graded.seconds = n, tuple(uses), hidden, seconds
        graded.autograd, graded.refuses = tuple(autograd), tuple(refuses)
        return graded

    return mark


LIBRARIES = [Path(sysconfig.get_path(k)) for k in ("stdlib", "platstdlib", "purelib", "platlib")]
TEACHGRAD = Path(tg.__file__).parent


def _raised_in(exc, files):
    """The frame of ``files`` that raised ``exc``, or None if it came from elsewhere.

    The innermost frame that is not a library's (Python's, NumPy's) decides; teachgrad's
    frames count as the student's code, whose calls they run.
    """
    for frame in reversed(traceback.extract_tb(exc.__traceback__)):
        if frame.filename in files:
            return frame
        path = Path(frame.filename)
        if path.is_relative_to(TEACHGRAD) or not any(path.is_relative_to(lib) for lib in LIBRARIES):
            return None
    return None


_grading = {"seed": None, "cells": None}  # set by the grader while it grades (see grading)


def grading_seed():
    """The grader's seed for the submission it is grading (random per run, or ``--seed``);
    None in ``check()``. A test may use it to choose what a submission cannot know in
    advance (10's relabelled classes), and stay reproducible with ``--seed``.

    >>> grading_seed() is None
    True
    """
    return _grading["seed"]


def submitted_cells():
    """The code cells of the submission being graded, as the grader read them (its own
    copy: what the student's code does at run time cannot change it); None in ``check()``.
    A test may read what the student *wrote* there (09's predictions, written out).

    >>> submitted_cells() is None
    True
    """
    return _grading["cells"]


@contextlib.contextmanager
def grading(seed, cells=None):
    """``grading_seed()`` is ``seed`` inside (the grader's, for one submission), and
    ``submitted_cells()`` the submission's code cells.

    >>> with grading(7, ["x = 1"]):
    ...     grading_seed(), submitted_cells()
    (7, ['x = 1'])
    """
    before = dict(_grading)
    _grading.update(seed=seed, cells=cells)
    try:
        yield
    finally:
        _grading.update(before)


def get(ns, name):
    """The student's object called ``name``, or a Failure saying to define it."""
    if name not in ns:
        raise Failure("missing", f"`{name}` is not defined. Run the cell that defines it.")
    return ns[name]


def agree(got, expected):
    """Whether two float64 arrays have the same shape and values, up to rounding (EXACT)."""
    return np.shape(got) == np.shape(expected) and np.allclose(got, expected, **EXACT)


def check_close(actual, expected, what):
    """Fail with cause "forward" unless the tensor ``actual`` equals ``expected`` (NumPy)."""
    if not isinstance(actual, tg.Tensor):
        raise Failure("forward", f"{what} should be a Tensor, got {type(actual).__name__}.")
    got = actual.detach().numpy()
    if not agree(got, expected):
        raise Failure(
            "forward",
            f"{what} is wrong.\n  expected (shape {expected.shape}):\n{_indent(expected)}\n"
            f"  got (shape {got.shape}):\n{_indent(got)}",
        )


def check_function(fn, inputs, *, name=None, extra=(), eps=1e-6, atol=1e-5, rtol=1e-3):
    """Check ``fn.backward`` against finite differences of ``fn.forward``.

    ``inputs`` are NumPy arrays (made float64 tensors that require grad); ``extra``
    are further arguments for forward that are not tensors (e.g. ``dim``). ``atol`` and
    ``rtol`` are loose: the finite differences are the reference here.
    Raises :class:`Failure` with a diagnosis; returns None when everything agrees.
    """
    name = name or getattr(fn, "__name__", "the Function")
    xs = [tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in inputs]
    y = fn.apply(*xs, *extra)
    if not isinstance(y, tg.Tensor) or y.grad_fn is None:
        raise Failure("forward", f"{name}.apply returned no tensor with a grad_fn: {y!r}")
    out_shape = tuple(y.shape)
    shapes = [tuple(x.shape) for x in xs]

    def backward(grad_output, ctx=y.grad_fn):  # the student's backward, as the engine calls it
        with tg.no_grad():
            grads = fn.backward(ctx, tg.tensor(grad_output))
        return list(grads) if isinstance(grads, tuple | list) else [grads]

    def analytical(ctx=y.grad_fn):  # row r of J_j: what backward returns for grad_output = e_r
        jacobians = [np.zeros((y.numel(), x.numel())) for x in xs]
        for r, e_r in enumerate(np.eye(y.numel())):
            for J, g in zip(jacobians, backward(e_r.reshape(out_shape), ctx)):
                J[r] = 0.0 if g is None else g.detach().numpy().reshape(-1)
        return jacobians

    def slip():  # (cause, why) of a slip in what backward reads from ctx, undone, or None
        return _slip(analytical, y.grad_fn, xs, y, numerical, atol, rtol)

    numerical = _numerical_jacobians(fn, xs, extra, eps)
    try:
        # 1. one gradient per input, each with that input's shape
        grads = backward(np.random.default_rng(0).standard_normal(out_shape))
        if len(grads) != len(xs) + len(extra):  # the engine needs one per argument of forward
            others = " (None for each argument that is not a tensor)" if extra else ""
            raise Failure(
                "wrong_count",
                f"{name}.backward returned {len(grads)} gradient(s) for "
                f"{len(xs) + len(extra)} argument(s) of forward{others}.",
            )
        grads = grads[: len(xs)]
        for j, (g, shape) in enumerate(zip(grads, shapes)):
            got = tuple(g.shape) if isinstance(g, tg.Tensor) else None
            if g is not None and got != shape:
                raise _shape_failure(name, j, got, shape, out_shape)
        # 2. the Jacobians, one per input, compared entry by entry
        jacobians = analytical()
    except (Failure, NotImplementedError):
        raise
    except Exception:  # it may run once the slip is undone: grad @ B where B.T fits
        if (found := slip()) is None:
            raise
        raise Failure(*found) from None
    for j, (n, a) in enumerate(zip(numerical, jacobians)):
        if not _close(a, n, atol, rtol):
            cause, why = _diagnose(j, n, a, numerical, shapes, atol, rtol)
            if cause == "wrong_values":
                cause, why = slip() or (cause, why)
            pair = (
                f"output of {name} (shape {out_shape}) w.r.t. input {j} (shape {shapes[j]}); "
                f"J[r, c] = d output[r] / d input[c]"
            )
            raise Failure(cause, why, pair=pair, numerical=n, analytical=a)


# --------------------------------------------------------------------------- diagnoses


def _shape_failure(name, j, got, shape, out_shape):
    where = f"{name}.backward returned a gradient of shape {got} for input {j} of shape {shape}"
    if got is None:
        return Failure("shape", f"{where}; gradients must be Tensors (or None).")
    if len(shape) >= 2 and got == shape[::-1]:
        return Failure("transposed", f"{where}: the input's shape transposed. Check the order.")
    padded = (1,) * (len(got) - len(shape)) + shape
    if len(got) >= len(shape) and all(p in (1, g) for p, g in zip(padded, got)):
        dims = ", ".join(str(d) for d, (p, g) in enumerate(zip(padded, got)) if p != g)
        return Failure(
            "unbroadcast",
            f"{where}, the broadcast shape {out_shape}: sum it over dim {dims}. The engine, like "
            "PyTorch's, would sum it for you (so gradcheck passes), but this exercise asks "
            "backward to do it: a gradient has its input's shape.",
        )
    return Failure("shape", f"{where}. A gradient always has its input's shape.")


def _diagnose(j, n, a, numerical, shapes, atol, rtol):
    """(cause, explanation) for input j's numerical vs analytical Jacobian."""
    if not a.any():
        return "zeros", "backward returned zeros (or None) for this input: is it used at all?"
    if len(a) > 1 and _close(a, np.broadcast_to(n.sum(axis=0), a.shape), atol, rtol):
        # every row r (grad = e_r) is what the right backward gives for grad = ones
        return "forgot_grad", "backward returns the same gradient whatever grad is."
    if _close(a, -n, atol, rtol):
        return "sign", "analytical = -numerical: a minus sign is missing or one too many."
    if _close(a, 2 * n, atol, rtol):
        return "factor_of_2", "analytical = 2 x numerical: off by a factor of 2 (too large)."
    if _close(a, 0.5 * n, atol, rtol):
        return "factor_of_2", "analytical = numerical / 2: off by a factor of 2 (too small)."
    k = float((a * n).sum() / (n * n).sum()) if n.any() else 0.0
    if abs(k) > 1e-8 and not np.isclose(k, 1.0) and _close(a, k * n, atol, rtol):
        return "scaled", f"analytical = {k:.4g} x numerical: off by a constant factor."
    shape = shapes[j]
    if len(shape) == 2 and shape[0] == shape[1]:  # each row of J is a gradient of that shape
        a_t = a.reshape(-1, *shape).transpose(0, 2, 1).reshape(a.shape)
        if _close(a_t, n, atol, rtol):
            return "transposed", "each gradient is the transpose of the right one."
    for k, (other, other_shape) in enumerate(zip(numerical, shapes)):
        if k != j and other_shape == shape and _close(a, other, atol, rtol):
            return "swapped", f"the gradient for input {j} is the right one for input {k}."
    return (
        "wrong_values",
        "your backward's Jacobian (analytical) differs from finite differences (numerical).",
    )


def _slip(analytical, ctx, xs, y, numerical, atol, rtol):
    """(cause, explanation) of the first slip of :func:`_slips` that, undone, makes every
    Jacobian right; None when there is none."""
    for cause, why, saved in _slips(ctx, xs, y):
        try:
            fixed = analytical(_Resaved(ctx, saved))
        except Exception:  # this variant does not run either
            continue
        if all(_close(a, n, atol, rtol) for a, n in zip(fixed, numerical)):
            return cause, why
    return None


def _slips(ctx, xs, y):
    """Slips in what backward reads from ctx, each as (cause, explanation, the saved
    tensors with the slip undone), one saved tensor at a time (:func:`_meant`)."""
    saved = tuple(ctx.saved_tensors)
    for i, s in enumerate(saved):
        if isinstance(s, tg.Tensor):
            for cause, why, meant in _meant(i, s, xs, y):
                yield cause, why, (*saved[:i], meant, *saved[i + 1 :])


SAVED_INPUT = (
    "forward saves the input x, but backward's formula is written with the output y: "
    "given y, it is right. Save the output: ctx.save_for_backward(y)."
)
SAVED_OUTPUT = (
    "forward saves the output y, but backward's formula is written with the input x: "
    "given x, it is right. Save the input: ctx.save_for_backward(x)."
)
NOT_TRANSPOSED = (
    "backward uses saved tensor {i} (shape {shape}) where it needs its transpose: given "
    "the transpose, it is right. Check each product's shapes: grad has the output's "
    "shape, each gradient its input's."
)


def _meant(i, s, xs, y):
    """What saved tensor ``i``, ``s``, may have been meant to be: the output where the
    input was saved, the input where the output was saved, the transpose of a matrix."""
    if s.shape == y.shape and any(_same(s, x) for x in xs):
        yield "saved_tensor", SAVED_INPUT, y
    for x in xs if _same(s, y) else ():
        if x.shape == y.shape:
            yield "saved_tensor", SAVED_OUTPUT, x
    if s.dim() == 2:
        yield "transpose_missing", NOT_TRANSPOSED.format(i=i, shape=tuple(s.shape)), s.T


class _Resaved:
    """``ctx`` as backward sees it, with other saved tensors."""

    def __init__(self, ctx, saved):
        self._ctx, self.saved_tensors = ctx, saved

    def __getattr__(self, name):  # anything else forward left on ctx
        return getattr(self._ctx, name)


def _same(a, b):
    return a.shape == b.shape and np.array_equal(a.detach().numpy(), b.detach().numpy())


def _numerical_jacobians(fn, xs, extra, eps):
    """J[j][r, c] = d output[r] / d input_j[c] by central differences."""
    values = [x.detach().numpy().copy() for x in xs]

    def f(arrays):
        with tg.no_grad():
            return fn.apply(*(tg.tensor(v) for v in arrays), *extra).numpy().reshape(-1)

    out_size = f(values).size
    jacobians = []
    for j, v in enumerate(values):
        J = np.zeros((out_size, v.size))
        for c in range(v.size):
            plus, minus = [w.copy() for w in values], [w.copy() for w in values]
            plus[j].reshape(-1)[c] += eps
            minus[j].reshape(-1)[c] -= eps
            J[:, c] = (f(plus) - f(minus)) / (2 * eps)
        jacobians.append(J)
    return jacobians


def _close(a, n, atol, rtol):
    return a.shape == n.shape and bool((np.abs(a - n) <= atol + rtol * np.abs(n)).all())


def _indent(array):
    return "\n".join("    " + line for line in str(np.round(array, 4)).splitlines())

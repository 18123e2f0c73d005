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

and, when they differ, names the likely cause (:data:`CAUSES`).

What does not live here: running tests and collecting scores (``course.exercises``) and
showing the result to a student (``course.check``).
"""

from __future__ import annotations

import numpy as np

import teachgrad as tg

__all__ = ["CAUSES", "Failure", "check_close", "check_function", "get", "points"]

# Each diagnosis a failure can carry, with the advice a TA would give for it.
CAUSES = {
    "not_written": "This part is not written yet (it still raises NotImplementedError).",
    "missing": "The name is not defined: run the cell that defines it first.",
    "error": "Your code raised an exception; the message below says where and why.",
    "forward": "forward computes the wrong values.",
    "factor_of_2": "The gradient is off by a factor of 2.",
    "sign": "The gradient has the wrong sign.",
    "transposed": "The gradient is transposed (rows and columns swapped).",
    "unbroadcast": "Forgot to un-broadcast: sum the gradient over the broadcast dims.",
    "shape": "The gradient does not have the input's shape.",
    "zeros": "The gradient is all zeros (or None).",
    "swapped": "The gradients of two inputs are swapped.",
    "wrong_count": "backward must return one gradient per input of forward.",
    "wrong_values": "The gradient has the wrong values.",
    "scaled": "The gradient is off by a constant factor: a missing (or extra) 1/N of a mean?",
    "overflow": "exp overflowed to inf or nan: subtract the row's max before exponentiating.",
    "first_order": "You returned the gradient itself: differentiate it once more "
    "(create_graph=True on the first grad).",
    "accumulate": "A node used more than once kept only its last gradient contribution: "
    "accumulate with +=, never overwrite with =.",
    "topological_order": "A node passed its gradient on before all its contributions had "
    "arrived: process the nodes in reverse topological order (every user before what it uses).",
    "inplace": "A tensor that a node saved for backward was changed in place: compute out "
    "of place (y = y * 2, not y *= 2), or change a .clone().",
    "prediction": "Some predictions disagree with what teachgrad does: an in-place op fails "
    "only when a node saved the tensor it changes.",
    "detached": "backward is not differentiable: it goes through .detach(), .numpy() or "
    "no_grad, so the second derivative comes out as zero. Use teachgrad ops on the saved tensors.",
    "accuracy": "The model does not learn enough: check the loop (opt.zero_grad() every step, "
    "F.cross_entropy on the logits and class indices), then the learning rate and the epochs.",
    "slow": "Training takes too long: use minibatches, fewer epochs or a smaller model.",
    "overlap": "A pixel that lies in several patches must get the sum of their gradients: "
    "col2im adds each patch back (+=), it does not overwrite (=).",
    "memory": "The forward pass kept the blocks' activations for backward: run each block "
    "without recording (forward of a Function already does) and recompute it in backward.",
    "recompute": "Each block must run exactly twice: once in forward (not recorded) and once "
    "when its backward recomputes it (recorded).",
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


def points(n, *, uses=(), hidden=False, seconds=None):
    """Mark a test function as graded: worth ``n`` points, testing the student's names
    ``uses``; hidden tests run only when grading, not in ``course.check``. ``seconds``
    is the time the test needs when the autograder runs it, if more than its default.

    >>> @points(2, uses=("Square",))
    ... def test_nothing(ns):
    ...     pass
    >>> test_nothing.points, test_nothing.uses, test_nothing.hidden, test_nothing.seconds
    (2, ('Square',), False, None)
    """

    def mark(test):
        test.points, test.uses, test.hidden, test.seconds = n, tuple(uses), hidden, seconds
        return test

    return mark


def get(ns, name):
    """The student's object called ``name``, or a Failure saying to define it."""
    if name not in ns:
        raise Failure("missing", f"`{name}` is not defined. Run the cell that defines it.")
    return ns[name]


def check_close(actual, expected, what, *, atol=1e-6):
    """Fail with cause "forward" unless the tensor ``actual`` equals ``expected`` (NumPy)."""
    if not isinstance(actual, tg.Tensor):
        raise Failure("forward", f"{what} should be a Tensor, got {type(actual).__name__}.")
    got = actual.detach().numpy()
    if got.shape != expected.shape or not np.allclose(got, expected, atol=atol):
        raise Failure(
            "forward",
            f"{what} is wrong.\n  expected (shape {expected.shape}):\n{_indent(expected)}\n"
            f"  got (shape {got.shape}):\n{_indent(got)}",
        )


def check_function(fn, inputs, *, name=None, extra=(), eps=1e-6, atol=1e-5, rtol=1e-3):
    """Check ``fn.backward`` against finite differences of ``fn.forward``.

    ``inputs`` are NumPy arrays (made float64 tensors that require grad); ``extra``
    are further arguments for forward that are not tensors (e.g. ``dim``).
    Raises :class:`Failure` with a diagnosis; returns None when everything agrees.
    """
    name = name or getattr(fn, "__name__", "the Function")
    xs = [tg.tensor(np.asarray(a, dtype=np.float64), requires_grad=True) for a in inputs]
    y = fn.apply(*xs, *extra)
    if not isinstance(y, tg.Tensor) or y.grad_fn is None:
        raise Failure("forward", f"{name}.apply returned no tensor with a grad_fn: {y!r}")
    out_shape = tuple(y.shape)
    shapes = [tuple(x.shape) for x in xs]

    def backward(grad_output):  # the student's backward, called like the engine would
        with tg.no_grad():
            grads = fn.backward(y.grad_fn, tg.tensor(grad_output))
        return list(grads) if isinstance(grads, tuple | list) else [grads]

    # 1. one gradient per input, each with that input's shape
    rng = np.random.default_rng(0)
    grads = backward(rng.standard_normal(out_shape))
    grads = grads[: len(xs)] if len(grads) == len(xs) + len(extra) else grads
    if len(grads) != len(xs):
        raise Failure(
            "wrong_count",
            f"{name}.backward returned {len(grads)} gradient(s) for {len(xs)} tensor input(s).",
        )
    for j, (g, shape) in enumerate(zip(grads, shapes)):
        got = tuple(g.shape) if isinstance(g, tg.Tensor) else None
        if g is not None and got != shape:
            raise _shape_failure(name, j, got, shape, out_shape)

    # 2. the Jacobians, one per input, compared entry by entry
    numerical = _numerical_jacobians(fn, xs, extra, eps)
    analytical = [np.zeros_like(n) for n in numerical]
    for r in range(int(np.prod(out_shape, dtype=int))):
        e_r = np.zeros(int(np.prod(out_shape, dtype=int)))
        e_r[r] = 1.0
        for j, g in enumerate(backward(e_r.reshape(out_shape))):
            if g is not None:
                analytical[j][r] = g.detach().numpy().reshape(-1)
    for j, (n, a) in enumerate(zip(numerical, analytical)):
        if not _close(a, n, atol, rtol):
            cause, why = _diagnose(j, n, a, numerical, shapes, atol, rtol)
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
            f"{where}, the broadcast shape {out_shape}. Forgot to un-broadcast over dim {dims}: "
            "sum the gradient over the dims that broadcasting added or stretched from size 1.",
        )
    return Failure("shape", f"{where}. A gradient always has its input's shape.")


def _diagnose(j, n, a, numerical, shapes, atol, rtol):
    """(cause, explanation) for input j's numerical vs analytical Jacobian."""
    if not a.any():
        return "zeros", "backward returned zeros (or None) for this input: is it used at all?"
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
        "the analytical Jacobian differs from finite differences; compare them below.",
    )


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

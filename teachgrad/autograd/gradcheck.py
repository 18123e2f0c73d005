"""Gradient checking: do the gradients autograd computes match finite differences?

What lives here:

- ``gradcheck(func, inputs)``: checks first derivatives of ``func``.
- ``gradgradcheck(func, inputs)``: checks second derivatives, by gradchecking the
  function that computes ``func``'s gradients with ``create_graph=True``.
- ``GradcheckError``: what they raise on a mismatch (a ``RuntimeError``, like torch's).
- ``get_numerical_jacobian``/``get_analytical_jacobian``: torch's deprecated helpers that
  hand back the two Jacobians themselves, computed by the same code as gradcheck's.

The idea fits in three lines. For one output ``y = f(x)`` (both flattened), the
Jacobian is ``J[r, c] = d y[r] / d x[c]``, a (y.numel() x x.numel()) matrix. Then

- numerically, column c is ``(f(x + eps e_c) - f(x - eps e_c)) / (2 eps)``
  (central differences: nudge one input element up and down);
- analytically, row r is ``e_r^T J``: one backward pass with ``grad_output = e_r``
  (reverse mode computes vector-Jacobian products, one row at a time);
- the check passes when ``|J_analytical - J_numerical| <= atol + rtol * |J_numerical|``
  holds for every entry.

``fast_mode=True`` compares one number per (output, input) pair instead of whole
matrices: ``v^T J u`` for random unit vectors ``u`` (input side) and ``v`` (output
side). Numerically that is ``v . (f(x + eps u) - f(x - eps u)) / (2 eps)``;
analytically it is ``(v^T J) . u`` from a single backward pass with ``grad_output = v``.

(torch stores its Jacobians transposed, rows indexed by input elements; here they
are stored the way they are written in maths, rows indexed by output elements.)

What does not live here: forward-mode AD itself (``forward_ad.py``, used when
``check_forward_ad=True``) and the ``jacobian``/``hessian`` helpers (``functional.py``).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import warnings

import teachgrad as tg
from teachgrad import _backend

from . import forward_ad as fwAD
from .function import _UndefinedGrad

np = _backend.numpy_module()  # host-side only: formatting failure messages

__all__ = [
    "GradcheckError",
    "get_analytical_jacobian",
    "get_numerical_jacobian",
    "gradcheck",
    "gradgradcheck",
]


class GradcheckError(RuntimeError):
    """Raised by ``gradcheck``/``gradgradcheck`` when a gradient is wrong.

    For a Jacobian mismatch it carries ``output_index`` and ``input_index`` (the same
    numbers as in the message) next to the message itself.

    >>> import teachgrad as tg
    >>> issubclass(tg.autograd.GradcheckError, RuntimeError)
    True
    """

    output_index: int | None = None
    input_index: int | None = None


# --------------------------------------------------------------------------- public API


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_batched_forward_grad=False,
    check_forward_ad=False,
    check_backward_ad=True,
    fast_mode=False,
    masked=None,
):
    """Check ``func``'s gradients w.r.t. every input that requires grad against finite differences.

    ``inputs`` is a Tensor or a tuple (non-tensors are passed through to ``func``);
    ``func`` returns a Tensor or a tuple of Tensors. Use float64 inputs: in float32,
    finite differences with ``eps=1e-6`` are too noisy to agree with anything.
    Returns True; on failure raises :class:`GradcheckError` (or returns False when
    ``raise_exception=False``).

    Besides comparing Jacobians it checks, like torch, that backward is reentrant
    (two runs give results within ``nondet_tol``), that a zero ``grad_output`` gives
    zero gradients of the right dtype, device and size, and (``check_undefined_grad``)
    that backward copes with outputs whose gradient is undefined.

    >>> import teachgrad as tg
    >>> x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    >>> tg.autograd.gradcheck(lambda x: (x * x).sum(), (x,))
    True
    """
    if not (check_forward_ad or check_backward_ad):
        raise AssertionError(
            "Expected at least one of check_forward_ad or check_backward_ad to be True"
        )
    if check_batched_grad and not check_backward_ad:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_backward_ad to be True"
        )
    if check_batched_forward_grad and not check_forward_ad:
        raise AssertionError(
            "Setting check_batched_forward_grad=True requires check_forward_ad to be True"
        )
    if masked:
        raise NotImplementedError(
            "gradcheck(masked=True) is for sparse tensors, which teachgrad does not have"
        )
    if check_batched_forward_grad:
        raise NotImplementedError("check_batched_forward_grad=True is not supported by teachgrad")
    try:
        _gradcheck(
            func, _as_tuple(inputs), eps=eps, atol=atol, rtol=rtol, nondet_tol=nondet_tol,
            check_grad_dtypes=check_grad_dtypes, check_undefined_grad=check_undefined_grad,
            check_batched_grad=check_batched_grad, check_forward_ad=check_forward_ad,
            check_backward_ad=check_backward_ad, fast_mode=fast_mode,
        )  # fmt: skip
    except GradcheckError:
        if raise_exception:
            raise
        return False
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    gen_non_contig_grad_outputs=False,
    raise_exception=True,
    nondet_tol=0.0,
    check_undefined_grad=True,
    check_grad_dtypes=False,
    check_batched_grad=False,
    check_fwd_over_rev=False,
    check_rev_over_rev=True,
    fast_mode=False,
    masked=None,
):
    """Check second derivatives: gradcheck the map ``(inputs, grad_outputs) -> gradients``.

    That map runs ``func`` and then ``tg.autograd.grad(outputs, inputs, grad_outputs,
    create_graph=True)``, so it is differentiable exactly when every backward involved
    is built from differentiable teachgrad ops. ``grad_outputs`` default to random
    values in [-1, 1) with the outputs' shapes, dtypes and devices, drawn from the
    default generator (``tg.manual_seed`` makes them repeat).

    >>> import teachgrad as tg
    >>> x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    >>> tg.autograd.gradgradcheck(lambda x: x * x * x, (x,))
    True
    """
    if not (check_fwd_over_rev or check_rev_over_rev):
        raise AssertionError(
            "Expected at least one of check_fwd_over_rev or check_rev_over_rev to be True"
        )
    if check_undefined_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_undefined_grad=True requires check_rev_over_rev to be True"
        )
    if check_batched_grad and not check_rev_over_rev:
        raise AssertionError(
            "Setting check_batched_grad=True requires check_rev_over_rev to be True"
        )
    inputs = _as_tuple(inputs)
    if grad_outputs is None:
        outputs = _differentiable_outputs(func(*inputs))
        grad_outputs = tuple(_random_grad_output(y, gen_non_contig_grad_outputs) for y in outputs)
    grad_outputs = _as_tuple(grad_outputs)
    n_inputs = len(inputs)
    differentiable = [_requires_grad(a) for a in inputs + grad_outputs]

    def first_order_grads(*args):
        # gradcheck's forward-mode pass hands in duals that do not require grad: restore it
        args = [a.requires_grad_() if d else a for a, d in zip(args, differentiable)]
        xs = [x for x, d in zip(args[:n_inputs], differentiable) if d]
        outputs = _differentiable_outputs(func(*args[:n_inputs]))
        grads = tg.autograd.grad(outputs, xs, args[n_inputs:], create_graph=True, allow_unused=True)
        return tuple(g for g in grads if g is not None)

    try:
        gradcheck(
            first_order_grads, inputs + grad_outputs, eps=eps, atol=atol, rtol=rtol,
            nondet_tol=nondet_tol, check_undefined_grad=check_undefined_grad,
            check_grad_dtypes=check_grad_dtypes, check_batched_grad=check_batched_grad,
            check_forward_ad=check_fwd_over_rev, check_backward_ad=check_rev_over_rev,
            fast_mode=fast_mode, masked=masked,
        )  # fmt: skip
    except GradcheckError as err:
        if not raise_exception:
            return False
        raise _explain_second_order(err, inputs, grad_outputs) from err
    return True


def get_numerical_jacobian(fn, inputs, target=None, eps=1e-3, grad_out=1.0):
    """Deprecated (torch's private helper): the Jacobians of ``fn(inputs)``'s first output
    by central differences, one per tensor of ``target`` (default: ``inputs``) that requires
    grad, in torch's layout: (that tensor's numel, the output's numel). ``fn`` takes the
    inputs as one tuple; a target may be a tensor ``fn`` only reads (a weight it closes over).

    >>> import teachgrad as tg, warnings
    >>> from teachgrad.autograd.gradcheck import get_numerical_jacobian
    >>> x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     (J,) = get_numerical_jacobian(lambda inputs: inputs[0] ** 2, (x,))
    >>> J.round(decimals=6)  # (differences are exact to rounding only)
    tensor([[2., 0.],
            [0., 4.]], dtype=teachgrad.float64)
    """
    _warn_private("get_numerical_jacobian")
    _check_grad_out(grad_out, "get_numerical_jacobian")
    inputs = _as_tuple(inputs)

    def func(*args):  # (gradcheck's func takes the inputs as arguments; torch's fn as a tuple)
        return fn(args)

    outputs = _as_tuple(func(*inputs))
    targets = [t for t in _as_tuple(inputs if target is None else target) if _requires_grad(t)]
    return tuple(
        _torch_layout(_numerical_jacobians(func, inputs, outputs, t, [0], eps)[0]) for t in targets
    )


def get_analytical_jacobian(inputs, output, nondet_tol=0.0, grad_out=1.0):
    """Deprecated (torch's private helper): the Jacobians of ``output`` with respect to each
    of ``inputs`` that requires grad, by backward passes, in torch's layout (input numel,
    output numel); then, as torch returns them, whether two runs agreed within
    ``nondet_tol`` (reentrant), whether every gradient had its input's dtype, and whether it
    had its input's shape. (No error: gradcheck raises one for each of these.)

    >>> import teachgrad as tg, warnings
    >>> from teachgrad.autograd.gradcheck import get_analytical_jacobian
    >>> x = tg.tensor([1.0, 2.0], dtype=tg.float64, requires_grad=True)
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", FutureWarning)
    ...     (J,), reentrant, dtypes_ok, sizes_ok = get_analytical_jacobian((x,), x**2)
    >>> J, reentrant, dtypes_ok, sizes_ok
    (tensor([[2., 0.],
            [0., 4.]], dtype=teachgrad.float64), True, True, True)
    """
    _warn_private("get_analytical_jacobian")
    _check_grad_out(grad_out, "get_analytical_jacobian")
    ok = {"dtypes": True, "sizes": True}

    def note(g, x, _j):  # (torch looks at the dtype only when the shape is right)
        if tuple(g.shape) != tuple(x.shape):
            ok["sizes"] = False
        elif g.dtype != x.dtype:
            ok["dtypes"] = False

    xs = [x for x in _as_tuple(inputs) if _requires_grad(x)]
    J, J_again = (_backward_jacobians(output, xs, note) for _ in range(2))
    reentrant = _first_difference(J, J_again, nondet_tol) is None
    return tuple(_torch_layout(J_j) for J_j in J), reentrant, ok["dtypes"], ok["sizes"]


# --------------------------------------------------------------------------- the checks


@dataclasses.dataclass
class _Setup:
    """One gradcheck run: func, its inputs and outputs, tolerances and settings.

    "input j" means ``inputs[x_pos[j]]``, the j-th input that requires grad, and
    "output i" means ``outputs[y_pos[i]]``, the i-th output that requires grad (torch's
    numbering in its messages).
    """

    func: object
    inputs: tuple
    outputs: tuple
    x_pos: list
    y_pos: list
    eps: float
    atol: float
    rtol: float
    nondet_tol: float
    check_grad_dtypes: bool

    @property
    def xs(self):
        return [self.inputs[k] for k in self.x_pos]

    @property
    def ys(self):
        return [self.outputs[p] for p in self.y_pos]


def _gradcheck(func, inputs, *, check_undefined_grad, check_batched_grad, check_forward_ad,
               check_backward_ad, fast_mode, **settings):  # fmt: skip
    _check_inputs(inputs)
    outputs = _as_tuple(func(*inputs))
    S = _Setup(
        func,
        inputs,
        outputs,
        x_pos=[k for k, x in enumerate(inputs) if _requires_grad(x)],
        y_pos=[p for p, y in enumerate(outputs) if _requires_grad(y)],
        **settings,
    )
    if not S.y_pos:  # autograd says "gradient 0": then func must really be constant
        _check_no_differentiable_outputs(S, fast_mode)
        return
    if fast_mode:
        _fast_check(S, check_backward_ad, check_forward_ad)
    else:
        _slow_check(S, check_backward_ad, check_forward_ad)
    if check_forward_ad and check_undefined_grad:
        _check_undefined_tangent(S)
    if check_backward_ad:
        if check_batched_grad:
            for i, y in enumerate(S.ys):
                _check_batched_grad(y, S.xs, i)
        _check_zero_grad_output(S.ys, S.xs)
        if check_undefined_grad:
            _check_undefined_grad(func, inputs, S.xs)


def _slow_check(S, backward, forward):
    """Compare full Jacobians, for every (output i, input j) pair."""
    J_numerical = {}  # (i, j) -> J, shape (y_i.numel(), x_j.numel())
    for j, x in enumerate(S.xs):
        for i, J in enumerate(_numerical_jacobians(S.func, S.inputs, S.outputs, x, S.y_pos, S.eps)):
            J_numerical[i, j] = J
    if backward:
        J_analytical = {}
        for i in range(len(S.y_pos)):
            for j, J in enumerate(_reverse_jacobians(S, i)):
                J_analytical[i, j] = J
        _raise_on_mismatch(S, J_numerical, J_analytical)
    if forward:
        J_forward = {}
        for j in range(len(S.x_pos)):
            for i, J in enumerate(_forward_jacobians(S, j)):
                J_forward[i, j] = J
        _raise_on_mismatch(S, J_numerical, J_forward, mode="computed with forward mode ")


def _fast_check(S, backward, forward):
    """Compare random projections v^T J u instead of full Jacobians (torch's fast mode)."""
    seeds = itertools.count()
    u = [_random_unit_vector(x, next(seeds)) for x in S.xs]  # one per input
    v = [_random_unit_vector(y, next(seeds)) for y in S.ys]  # one per output
    Ju = {}  # (i, j) -> J_ij u_j, by central differences along u_j
    for j, k in enumerate(S.x_pos):
        for i, J_u in enumerate(_numerical_jvps(S.func, S.inputs, k, S.y_pos, u[j], S.eps)):
            Ju[i, j] = J_u

    failures = []  # (i, j, numerical, analytical, allowed difference)
    if backward:
        for i in range(len(S.y_pos)):
            vJ = _reverse_vjps(S, i, v[i])
            for j in range(len(S.x_pos)):
                if Ju[i, j].shape != v[i].shape:
                    raise _changed_shape(
                        f"The size of tensor a ({v[i].size}) must match the size of tensor b "
                        f"({Ju[i, j].size}) at non-singleton dimension 0"
                    )
                numerical = float((v[i] * Ju[i, j]).sum())
                analytical = float((vJ[j] * u[j]).sum())
                atol = S.atol * float(u[j].sum()) * float(v[i].sum())  # atol for a sum of entries
                allowed = atol + S.rtol * abs(numerical)
                if not abs(analytical - numerical) <= allowed:
                    failures.append((i, j, numerical, analytical, allowed))
        _raise_fast_failure(S, failures)
    if forward:  # forward mode gives J u itself: compare it entry by entry
        for j in range(len(S.x_pos)):
            for i, J_u in enumerate(_forward_jvps(S, j, [u[j]])[0]):
                allowed = S.atol * float(u[j].sum()) + S.rtol * abs(Ju[i, j])
                err = abs(J_u - Ju[i, j])
                if err.size and not bool((err <= allowed).all()):
                    r = int(err.argmax())
                    failures.append((i, j, float(Ju[i, j][r]), float(J_u[r]), float(allowed[r])))
        _raise_fast_failure(S, failures, mode="computed with forward mode ")


# --------------------------------------------------------------------------- Jacobians


def _numerical_jacobians(func, inputs, outputs, x, y_pos, eps):
    """J_numerical of each output ``outputs[y_pos[i]]`` of ``func(*inputs)`` w.r.t. the
    tensor ``x`` (one of the inputs, or one func reads otherwise), column by column.

    Column c is (f(x + eps e_c) - f(x - eps e_c)) / (2 eps). We perturb x's array in
    place and put the original value back, so func sees the very tensor it was given.
    """
    xp = _backend.array_module(x)
    J = [xp.zeros((outputs[p].numel(), x.numel()), dtype=outputs[p]._data.dtype) for p in y_pos]
    for c, index in enumerate(_indices(x.shape)):
        original = x._data[index].copy()
        try:
            x._data[index] = original - eps
            f_minus = _evaluate(func, inputs)
            x._data[index] = original + eps
            f_plus = _evaluate(func, inputs)
        finally:
            x._data[index] = original  # put it back, also when func raises
        for J_i, column in zip(J, _central_differences(f_minus, f_plus, y_pos, eps, index)):
            if column.size != J_i.shape[0]:
                raise _changed_shape(
                    f"The expanded size of the tensor ({J_i.shape[0]}) must match the existing "
                    f"size ({column.size}) at non-singleton dimension 0.  Target sizes: "
                    f"[{J_i.shape[0]}].  Tensor sizes: [{column.size}]"
                )
            J_i[:, c] = column
    return J


def _changed_shape(first_line: str) -> RuntimeError:
    """torch's error (its first line: where its own check fails) when func's output has
    another number of elements once an input is nudged, and what that means."""
    return RuntimeError(
        f"{first_line}\n  gradcheck: an output of func has another number of elements when an "
        "input is nudged by eps, so it has no derivative there: func's output shapes must not "
        "depend on its inputs' values."
    )


def _numerical_jvps(func, inputs, k, y_pos, u, eps):
    """J u for each output, by central differences along the direction u (fast mode)."""
    x = inputs[k]
    original = x._data.copy()
    step = eps * u.reshape(original.shape)
    try:
        x._data[...] = original - step
        f_minus = _evaluate(func, inputs)
        x._data[...] = original + step
        f_plus = _evaluate(func, inputs)
    finally:
        x._data[...] = original
    return _central_differences(f_minus, f_plus, y_pos, eps)


def _evaluate(func, inputs):
    """func's outputs, the tensors copied (an output may share memory with an input)."""
    return [
        tg.Tensor._make(y._data.copy()) if _is_tensor(y) else y for y in _as_tuple(func(*inputs))
    ]


def _central_differences(f_minus, f_plus, y_pos, eps, index=None):
    """(f_plus - f_minus) / (2 eps), flat, for the outputs at y_pos, once every output has
    kept its shape and dtype across the perturbation (torch's check, and its words)."""
    where = "" if index is None else f"on index {index} "
    for p, (a, b) in enumerate(zip(f_minus, f_plus)):
        if not _is_tensor(a):
            continue
        for what, one, other in (("shape", a.shape, b.shape), ("dtype", a.dtype, b.dtype)):
            if one != other:
                raise AssertionError(
                    f"Expected `func` to return outputs with the same {what} when inputs are "
                    f"perturbed {where}by {eps}, but got: {what}s {one} and {other}.\n  (output "
                    f"#{p}, with the input nudged down, then up) gradcheck needs func to be a "
                    "fixed smooth map near the input: no branching on values that changes it."
                )
    return [(f_plus[p]._data - f_minus[p]._data).reshape(-1) / (2 * eps) for p in y_pos]


def _reverse_jacobians(S, i):
    """J_analytical of output i w.r.t. each input, computed twice, to check that backward is
    reentrant (and each gradient on the way, with ``_check_grad``)."""
    check = functools.partial(_check_grad, check_grad_dtypes=S.check_grad_dtypes)
    J, J_again = (_backward_jacobians(S.ys[i], S.xs, check) for _ in range(2))
    _check_reentrant(J, J_again, i, S.nondet_tol)
    return J


def _backward_jacobians(y, xs, check):
    """J of y w.r.t. each x, one backward pass per row: row r = e_r^T J. ``check(g, x, j)``
    sees each gradient before it is written in (a None gradient leaves its row zero)."""
    xp = _backend.array_module(y)
    J = [xp.zeros((y.numel(), x.numel()), dtype=x._data.dtype) for x in xs]
    for r, index in enumerate(_indices(y.shape)):
        e_r = tg.zeros_like(y)  # a fresh one each time: a gradient may alias grad_output
        e_r._data[index] = 1
        grads = tg.autograd.grad(y, xs, e_r, retain_graph=True, allow_unused=True)
        for j, (g, x) in enumerate(zip(grads, xs)):
            if g is not None:
                check(g, x, j)
                J[j][r] = g._data.reshape(-1)
    return J


def _reverse_vjps(S, i, v):
    """v^T J for output i and each input (flattened): one backward pass with grad_output = v.

    Computed twice, to check that backward is reentrant.
    """
    y, xs = S.ys[i], S.xs
    runs = []
    for _ in range(2):
        grad_output = tg.zeros_like(y)
        grad_output._data[...] = v.reshape(y._data.shape)
        grads = tg.autograd.grad(y, xs, grad_output, retain_graph=True, allow_unused=True)
        for j, (g, x) in enumerate(zip(grads, xs)):
            if g is not None:
                _check_grad(g, x, j, S.check_grad_dtypes)
        runs.append([_array_or_zeros(g, x).reshape(-1).copy() for g, x in zip(grads, xs)])
    _check_reentrant(runs[0], runs[1], i, S.nondet_tol)
    return runs[0]


def _forward_jacobians(S, j):
    """J of each output w.r.t. input j by forward mode: column c = J e_c (tangent e_c)."""
    x = S.xs[j]
    xp = _backend.array_module(x)
    tangents = []
    for index in _indices(x.shape):
        e_c = xp.zeros(x._data.shape, dtype=x._data.dtype)
        e_c[index] = 1
        tangents.append(e_c)
    if not tangents:  # an empty input: every Jacobian has zero columns
        return [xp.zeros((y.numel(), 0), dtype=y._data.dtype) for y in S.ys]
    columns = _forward_jvps(S, j, tangents)
    return [xp.stack([column[i] for column in columns], axis=1) for i in range(len(S.y_pos))]


def _forward_jvps(S, j, tangents):
    """For each tangent t of input j: the tangents J t of the outputs, flattened.

    As in torch, every input that requires grad becomes a dual of a detached copy (so
    none requires grad here), with a zero tangent; input j's tangent is set to each t
    in turn and back to zero.
    """
    results = []
    with fwAD.dual_level():
        args = list(S.inputs)
        for k in S.x_pos:
            args[k] = fwAD.make_dual(args[k].detach(), tg.zeros_like(args[k]))
        tangent = fwAD.unpack_dual(args[S.x_pos[j]]).tangent  # (make_dual may copy it)
        for t in tangents:
            tangent._data[...] = t.reshape(tangent._data.shape)
            outputs = _as_tuple(S.func(*args))
            J_t = [fwAD.unpack_dual(outputs[p]).tangent for p in S.y_pos]
            results.append([_array_or_zeros(g, y).reshape(-1).copy() for g, y in zip(J_t, S.ys)])
            tangent._data[...] = 0
    return results


# --------------------------------------------------------------------------- other checks


def _check_inputs(inputs):
    """At least one input requires grad; those are floating point, without overlapping memory."""
    if not any(_requires_grad(x) for x in inputs):
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, but none of them "
            "have requires_grad=True.\n  Create the inputs with requires_grad=True (or call "
            ".requires_grad_() on them) for every input you want checked."
        )
    for k, x in enumerate(inputs):
        if not _requires_grad(x):
            continue
        if not x.is_floating_point():
            raise ValueError(
                "gradcheck expects all tensor inputs that require gradient to be floating point, "
                f"but input #{k} is {x.dtype}."
            )
        if x.dtype != tg.float64:
            warnings.warn(
                f"Input #{k} requires gradient and is not a double precision floating point or "
                f"complex tensor (it is {x.dtype}). Finite differences are too inexact in lower "
                "precision, so this check will likely fail: pass inputs made with "
                "dtype=teachgrad.float64 (or call .double() on them).",
                UserWarning,
                stacklevel=4,
            )
        if x.numel() and any(s == 0 and n > 1 for s, n in zip(x._data.strides, x.shape)):
            raise RuntimeError(
                f"The {k}th input has a dimension with stride 0. gradcheck only supports inputs "
                "that are non-overlapping to be able to compute the numerical gradients correctly. "
                "You should call .contiguous on the input before passing it to gradcheck.\n  "
                "Several of its elements share one memory location (it was made by expand() or "
                "broadcasting), and gradcheck perturbs elements one at a time."
            )


def _check_grad(g, x, j, check_grad_dtypes):
    """A gradient must have its input's shape and device (and, if asked, dtype)."""
    if tuple(g.shape) != tuple(x.shape):
        raise GradcheckError(
            f"Analytical gradient has incorrect size: the gradient for input {j} has shape "
            f"{tuple(g.shape)} but the input has shape {tuple(x.shape)}."
        )
    if g.device != x.device:
        raise GradcheckError(
            f"grad is incorrect device: the gradient for input {j} is on {g.device} but the "
            f"input is on {x.device}."
        )
    if check_grad_dtypes and g.dtype != x.dtype:
        raise GradcheckError(
            f"Gradient has dtype mismatch: the gradient for input {j} is {g.dtype} but the "
            f"input is {x.dtype}."
        )


def _check_reentrant(J, J_again, i, nondet_tol):
    """Running backward twice on the same grad_output must give (nearly) the same result."""
    differs = _first_difference(J, J_again, nondet_tol)
    if differs is not None:
        j, difference = differs
        raise GradcheckError(
            "Backward is not reentrant, i.e., running backward with same input and grad_output "
            "multiple times gives different values, although analytical gradient matches "
            f"numerical gradient.The tolerance for nondeterminism was {nondet_tol}.\n  "
            f"For output {i} and input {j} the two runs differ by up to {difference:.3g}.\n"
            "hint: backward must not depend on random numbers or on state that changes "
            "between calls (a counter, a buffer updated in place). If the difference is "
            "expected (e.g. atomic additions on a GPU), pass nondet_tol=<tolerance>."
        )


def _first_difference(J, J_again, nondet_tol):
    """``(j, difference)`` for the first input whose two runs differ by more than
    ``nondet_tol``; None when every pair agrees."""
    for j, (a, b) in enumerate(zip(J, J_again)):
        if a.size and float(abs(a - b).max()) > nondet_tol:
            return j, float(abs(a - b).max())
    return None


def _check_no_differentiable_outputs(S, fast_mode):
    """No output requires grad, so autograd says "gradient 0": f must really be constant."""
    y_pos = [p for p, y in enumerate(S.outputs) if _is_tensor(y) and y.is_floating_point()]
    for k, x in zip(S.x_pos, S.xs):
        if fast_mode:
            u = _random_unit_vector(x, seed=0)
            Js = _numerical_jvps(S.func, S.inputs, k, y_pos, u, S.eps)
        else:
            Js = _numerical_jacobians(S.func, S.inputs, S.outputs, x, y_pos, S.eps)
        if any(bool((J != 0).any()) for J in Js):
            raise GradcheckError(
                "Numerical gradient for function expected to be zero\n  No output of func requires "
                "grad, yet the outputs change when the inputs do.\n"
                "hint: something inside func cut the graph: .detach(), tg.no_grad(), .numpy(), "
                ".item() or building a new tensor with tg.tensor(...)."
            )


def _check_zero_grad_output(ys, xs):
    """A zero grad_output must give zero gradients of the input's dtype, device and size."""
    zeros = [tg.zeros_like(y) for y in ys]
    grads = tg.autograd.grad(ys, xs, zeros, allow_unused=True)
    for j, (g, x) in enumerate(zip(grads, xs)):
        if g is None:
            continue
        if bool((g._data != 0).any()):
            raise GradcheckError(
                f"backward not multiplied by grad_output\n  With grad_output = 0 the gradient "
                f"for input {j} should be 0, but it is not.\n"
                "hint: by the chain rule backward returns grad_output * (local derivative); "
                "it looks like the local derivative is returned on its own."
            )
        for what, got, want in (
            ("type", g.dtype, x.dtype),
            ("device", g.device, x.device),
            ("size", tuple(g.shape), tuple(x.shape)),
        ):
            if got != want:
                raise GradcheckError(
                    f"grad is incorrect {what}\n  The gradient for input {j} has {what} {got} "
                    f"but the input has {want}."
                )


def _check_undefined_grad(func, inputs, xs):
    """Backward must accept undefined (None) output gradients and treat them as zeros.

    The output of ``_undefined_grad`` sends no gradient back (its backward returns None),
    so the Function that made ``y`` sees an undefined gradient for that output, just as
    it does when only some of its outputs are used. First all outputs at once, then
    (for several outputs) one at a time.
    """

    def check(ys):
        try:
            grads = tg.autograd.grad(ys, xs, [tg.zeros_like(y) for y in ys], allow_unused=True)
        except RuntimeError as exc:  # (other errors propagate as they are, as in torch)
            _warn_undefined_grad_check()
            raise GradcheckError(
                "Expected backward function to handle undefined output grads. Please look at "
                '"Notes about undefined output gradients" in "tools/autograd/derivatives.yaml"\n'
                f"  backward raised {type(exc).__name__}: {exc}\n"
                "hint: when an output is not used, its grad_output is undefined. A custom "
                "Function receives zeros for it, or None after ctx.set_materialize_grads(False): "
                "treat None as zeros."
            ) from exc
        for j, g in enumerate(grads):
            if g is not None and bool((g._data != 0).any()):
                _warn_undefined_grad_check()
                raise GradcheckError(
                    "Expected all input grads to be undefined or zero when all output grads are "
                    'undefined or zero. Please look at "Notes about undefined output gradients" in '
                    '"tools/autograd/derivatives.yaml"\n'
                    f"  The gradient for input {j} is not: backward must give None or zeros for "
                    "it when every grad_output is None (or zero)."
                )

    ys = _differentiable_outputs(func(*inputs))
    check([_undefined_grad(y) for y in ys])
    for which in range(len(ys) if len(ys) > 1 else 0):
        ys = _differentiable_outputs(func(*inputs))
        check([_undefined_grad(y) if p == which else y for p, y in enumerate(ys)])


def _warn_undefined_grad_check():
    """torch warns before failing this check: it was added late and may break old callers."""
    warnings.warn(
        "Backwards compatibility: New undefined gradient support checking feature is enabled "
        "by default, but it may break existing callers of this function. If this is true for "
        'you, you can call this function with "check_undefined_grad=False" to disable the '
        "feature",
        stacklevel=5,
    )


def _check_undefined_tangent(S):
    """Forward mode: an input without a tangent must count as one with a zero tangent.

    For each input that requires grad, func runs twice with all those inputs as duals
    (detached, so none requires grad) with random tangents: once with this input a dual
    whose tangent is zero, once with it a plain tensor; output tangents present in both
    must agree (random, as torch's: a jvp that mishandles a missing tangent shows only
    when the others are not zero too).
    """
    with fwAD.dual_level():
        duals = list(S.inputs)
        for k in S.x_pos:
            duals[k] = fwAD.make_dual(duals[k].detach(), tg.randn_like(duals[k]))
        for k in S.x_pos:
            args = list(duals)
            args[k] = fwAD.make_dual(S.inputs[k].detach(), tg.zeros_like(S.inputs[k]))
            with_zeros = _float_outputs(S.func(*args))
            args[k] = S.inputs[k].detach()
            without = _float_outputs(S.func(*args))
            for o, (a, b) in enumerate(zip(with_zeros, without)):
                t_zero, t_none = fwAD.unpack_dual(a).tangent, fwAD.unpack_dual(b).tangent
                if t_zero is None or t_none is None or tg.allclose(t_zero, t_none):
                    continue
                raise GradcheckError(
                    f"Mismatch in tangent values for output with index: {o} when input: "
                    f"#{k} has an undefined tangent value.\n  Got: {t_zero} but expected: "
                    f"{t_none}.\nhint: jvp must treat a None tangent (set_materialize_grads"
                    "(False)) exactly as a zero tangent."
                )


def _float_outputs(outputs):
    return [y for y in _as_tuple(outputs) if _is_tensor(y) and y.is_floating_point()]


def _check_batched_grad(y, xs, i):
    """grad(..., is_grads_batched=True) must equal one grad call per grad_output."""
    vs = [tg.randn_like(y) for _ in range(2)]
    expected = []
    for v in vs:
        grads = tg.autograd.grad(y, xs, v, retain_graph=True, allow_unused=True)
        expected.append([_array_or_zeros(g, x) for g, x in zip(grads, xs)])
    try:
        batched = tg.autograd.grad(
            y, xs, tg.stack(vs), retain_graph=True, allow_unused=True, is_grads_batched=True
        )
    except Exception as exc:
        raise GradcheckError(
            f"While computing batched gradients, got: {type(exc).__name__}: {exc}\n"
            "(gradcheck with check_batched_grad=True calls grad(..., is_grads_batched=True); "
            "pass check_batched_grad=False to skip this check.)"
        ) from exc
    for j, (g, x) in enumerate(zip(batched, xs)):
        xp = _backend.array_module(x)
        got = xp.zeros((len(vs), *x.shape), dtype=x._data.dtype) if g is None else g._data
        want = xp.stack([e[j] for e in expected])
        if got.shape != want.shape or not bool(xp.allclose(got, want, rtol=1e-5, atol=1e-8)):
            raise GradcheckError(
                f"For output {i} and input {j}: batched gradients (is_grads_batched=True) differ "
                "from computing the same vector-Jacobian products one at a time.\n"
                f"Got:\n{_backend.to_host(got)}\nExpected:\n{_backend.to_host(want)}"
            )


# --------------------------------------------------------------------------- failure messages


def _raise_on_mismatch(S, J_numerical, J_analytical, mode=""):
    """Raise one GradcheckError explaining the first mismatching pair (and naming the rest)."""
    bad = [
        (i, j)
        for (i, j), J_a in J_analytical.items()
        if not _close_all(J_a, J_numerical[i, j], S.atol, S.rtol)
    ]
    if not bad:
        return
    i, j = bad[0]
    lines = [
        f"Jacobian {mode}mismatch for output {i} with respect to input {j},",
        *_describe_pair(S, i, j),
        *_jacobian_report(S, i, j, J_numerical[i, j], J_analytical[i, j]),
    ]
    if len(bad) > 1:
        others = ", ".join(f"(output {a}, input {b})" for a, b in bad[1:])
        lines.append(f"Other mismatching pairs: {others}.")
    raise _mismatch_error("\n".join(lines), i, j)


def _raise_fast_failure(S, failures, mode=""):
    """Fast mode found a bad projection: say which, then show the full Jacobians if we can."""
    if not failures:
        return
    i, j, numerical, analytical, allowed = failures[0]
    if mode:  # forward mode
        what, how, atol = "J u (worst entry)", "forward-mode AD, tangent u", "atol * sum(u)"
    else:
        what, how, atol = "v^T J u", "one backward pass, grad_output = v", "atol * sum(u) * sum(v)"
    lines = [
        f"Jacobian {mode}mismatch for output {i} with respect to input {j},",
        *_describe_pair(S, i, j),
        f"fast_mode=True compared the random projection {what} for each (output, input) pair",
        "instead of whole Jacobians (u, v: random unit vectors over the input, output elements).",
        f"  numerical  {what} = {numerical:.10g}   (central differences along u, eps={S.eps})",
        f"  analytical {what} = {analytical:.10g}   ({how})",
        f"  |difference| = {abs(analytical - numerical):.3g} > allowed {allowed:.3g} "
        f"({atol} + rtol * |numerical|, atol={S.atol}, rtol={S.rtol})",
        "Mismatching projections: "
        + ", ".join(f"(output {a}, input {b})" for a, b, *_ in failures)
        + ".",
    ]
    hint = _scalar_hint(numerical, analytical)
    if hint:
        lines.append(f"hint: {hint}")
    if mode or S.xs[j].numel() + S.ys[i].numel() > 2000:
        lines.append("Re-run with fast_mode=False to compare the full Jacobians entry by entry.")
        raise _mismatch_error("\n".join(lines), i, j)

    J_numerical = _numerical_jacobians(S.func, S.inputs, S.outputs, S.xs[j], [S.y_pos[i]], S.eps)[0]
    J_analytical = _reverse_jacobians(S, i)[j]
    lines += ["", "The full Jacobians for this pair, recomputed without fast mode:"]
    if _close_all(J_analytical, J_numerical, S.atol, S.rtol):
        lines.append(
            "they agree entry by entry, so fast_mode=False would pass: small differences per "
            "entry added up in the projection. Re-run with fast_mode=False."
        )
    else:
        lines += _jacobian_report(S, i, j, J_numerical, J_analytical)
        lines.append("(re-run with fast_mode=False to check every pair this way)")
    raise _mismatch_error("\n".join(lines), i, j)


def _mismatch_error(message, i, j):
    err = GradcheckError(message)
    err.output_index, err.input_index = i, j
    return err


def _describe_pair(S, i, j):
    y, x = S.ys[i], S.xs[j]
    return [
        f"  output {i}: func's output #{S.y_pos[i]}, shape {tuple(y.shape)}, {y.dtype.name}",
        f"  input {j}:  func's input #{S.x_pos[j]}, shape {tuple(x.shape)}, {x.dtype.name}",
    ]


def _jacobian_report(S, i, j, J_numerical, J_analytical):
    """The two Jacobians side by side (or their worst entries), the errors, and a hint."""
    n = _backend.to_host(J_numerical).astype(np.float64)
    a = _backend.to_host(J_analytical).astype(np.float64)
    bad = ~_close(a, n, S.atol, S.rtol)
    with np.errstate(divide="ignore", invalid="ignore"):
        abs_err = np.abs(a - n)
        rel_err = np.where(n != 0, abs_err / np.abs(n), np.where(abs_err > 0, np.inf, 0.0))
    rows, cols = n.shape
    lines = [
        f"J[r, c] = d output[r] / d input[c], a {rows} x {cols} matrix: one row per output "
        "element,",
        "one column per input element (both flattened in row-major order).",
        "",
    ]
    if rows <= 6 and cols <= 6:
        lines += _side_by_side(
            [f"numerical (eps={S.eps}):", *_matrix_lines(n, np.zeros_like(bad))],
            ["analytical (* = outside tolerance):", *_matrix_lines(a, bad)],
        )
    else:
        lines += _worst_entries(n, a, abs_err, bad, S.ys[i].shape, S.xs[j].shape)
    lines += [
        "",
        f"max abs error {_max(abs_err):.3g}, max rel error {_max(rel_err):.3g}; "
        f"{int(bad.sum())} of {bad.size} entries break the tolerance",
        f"|analytical - numerical| <= atol + rtol * |numerical| with atol={S.atol}, rtol={S.rtol}.",
    ]
    hint = _jacobian_hint(n, a, bad, S.atol, S.rtol)
    if hint:
        lines.append(f"hint: {hint}")
    return lines


def _matrix_lines(M, marks):
    cells = [[f"{value + 0.0:.6g}" for value in row] for row in M]  # + 0.0: no "-0"
    width = max((len(s) for row in cells for s in row), default=0)
    return [
        "[" + " ".join(s.rjust(width) + ("*" if mark else " ") for s, mark in zip(row, mrow)) + "]"
        for row, mrow in zip(cells, marks)
    ]


def _side_by_side(left, right, gap=4):
    width = max(len(s) for s in left) + gap
    return ["  " + l.ljust(width) + r for l, r in itertools.zip_longest(left, right, fillvalue="")]


def _worst_entries(n, a, abs_err, bad, y_shape, x_shape, k=10):
    order = np.argsort(-np.nan_to_num(np.where(bad, abs_err, -1.0), nan=np.inf), axis=None)
    worst = [flat for flat in order[:k] if bad.flat[flat]]
    lines = [
        f"The Jacobians are too large to print; the {len(worst)} worst of "
        f"{int(bad.sum())} mismatching entries:",
        f"  {'row':>5} {'col':>5}  {'output[...]':>14} {'input[...]':>14}"
        f"  {'numerical':>13} {'analytical':>13} {'abs error':>11}",
    ]
    for flat in worst:
        r, c = divmod(int(flat), n.shape[1])
        lines.append(
            f"  {r:>5} {c:>5}  {_index_text(r, y_shape):>14} {_index_text(c, x_shape):>14}"
            f"  {n[r, c]:>13.6g} {a[r, c]:>13.6g} {abs_err[r, c]:>11.3g}"
        )
    return lines


def _index_text(flat, shape):
    """Flat (row-major) position -> "[i, j, ...]" in a tensor of this shape."""
    return "[" + ", ".join(str(int(i)) for i in np.unravel_index(flat, tuple(shape))) + "]"


def _jacobian_hint(n, a, bad, atol, rtol):
    """A one-line guess at what went wrong, when the pattern is recognisable."""
    close = functools.partial(_close_all, atol=atol, rtol=rtol)
    if not np.isfinite(a).all():
        return (
            "the analytical Jacobian contains nan/inf: backward divides by zero or takes "
            "log/sqrt of 0 somewhere."
        )
    if not np.isfinite(n).all():
        return (
            "the numerical Jacobian contains nan/inf: func itself is not finite within eps of "
            "this input (e.g. log or sqrt near 0); choose inputs away from such points."
        )
    if not a.any():
        return (
            "the analytical Jacobian is all zeros: backward returned zeros (or None) for this "
            "input. Was the input not used, or did the gradient not reach it (a .detach() or "
            "tg.no_grad() on the way, or backward returning None in its place)?"
        )
    if close(n, 0 * n):
        return (
            "the numerical Jacobian is zero: the output does not depend on this input, yet "
            "backward returns a nonzero gradient for it. Are the gradients returned in the "
            "order of forward's inputs?"
        )
    if close(a, -n):
        return "analytical = -numerical: a sign error in backward."
    if close(a, 2 * n):
        return "analytical = 2 x numerical: backward is off by a factor of 2 (too large)."
    if close(a, 0.5 * n):
        return "analytical = numerical / 2: backward is off by a factor of 2 (too small)."
    scale = float((a * n).sum() / (n * n).sum())
    if close(a, scale * n):
        return f"analytical = {scale:.4g} x numerical: backward is off by a constant factor."
    if n.shape[0] == n.shape[1] and close(a, n.T):
        return (
            "analytical = numerical transposed: the gradient is transposed "
            "(e.g. grad @ W where grad @ W.T was needed)."
        )
    if close(np.sort(a, axis=None), np.sort(n, axis=None)):
        return (
            "the analytical Jacobian has the right values in the wrong places: the gradient "
            "is transposed, permuted or reshaped in the wrong order."
        )
    if bad.sum() <= max(1, bad.size // 10):
        return (
            "only a few entries differ. If func has a kink near those input elements (relu "
            "or abs at 0, a tie in max), finite differences are unreliable there: move the "
            "inputs away from it."
        )
    return None


def _scalar_hint(numerical, analytical):
    """The hint fast mode can give from one projected number."""
    if analytical == 0 and numerical != 0:
        return "the analytical projection is 0: backward returned zeros (or None) for this input."
    if numerical == 0:
        return None
    ratio = analytical / numerical
    for target, text in (
        (-1, "a sign error"),
        (2, "off by a factor of 2 (too large)"),
        (0.5, "off by a factor of 2 (too small)"),
    ):
        if abs(ratio - target) < 1e-3 * abs(target):
            return f"analytical / numerical = {ratio:.4g}: looks like {text}."
    return None


def _explain_second_order(err, inputs, grad_outputs):
    """Add what 'output i' and 'input j' mean inside gradgradcheck to a GradcheckError."""
    names = [f"inputs[{k}]" for k in range(len(inputs))]
    names += [f"grad_outputs[{k}]" for k in range(len(grad_outputs))]
    checked = [name for name, t in zip(names, inputs + grad_outputs) if _requires_grad(t)]
    note = (
        "\n\ngradgradcheck checked the function (inputs, grad_outputs) -> gradients of func, which "
        "runs backward with create_graph=True. Here 'output i' is the gradient w.r.t. func's i-th "
        "input that requires grad, and the inputs are, in order: " + ", ".join(checked) + ".\n"
        "A mismatch means the derivative of a backward is wrong: backward must compute its result "
        "with differentiable teachgrad ops from saved tensors, without .detach(), .numpy(), "
        ".item() or tg.no_grad()."
    )
    new = GradcheckError(str(err) + note)
    new.output_index, new.input_index = err.output_index, err.input_index
    return new


# --------------------------------------------------------------------------- small helpers


def _warn_private(name):
    """torch's deprecation of its two Jacobian helpers."""
    warnings.warn(
        f"`{name}` was part of PyTorch's private API and not meant to be exposed. We are "
        "deprecating it and it will be removed in a future version of PyTorch. If you have a "
        "specific use for this or feature request for this to be a stable API, please file us "
        "an issue at https://github.com/pytorch/pytorch/issues/new\n  (for a Jacobian, use "
        "teachgrad.autograd.functional.jacobian)",
        FutureWarning,
        stacklevel=3,
    )


def _check_grad_out(grad_out, name):
    if grad_out != 1.0:
        raise ValueError(
            f"Expected grad_out to be 1.0. {name} no longer supports values of grad_out != 1.0.\n"
            "  A Jacobian does not depend on grad_out: scale the result instead."
        )


def _torch_layout(J):
    """A Jacobian as torch's helpers return it: a tensor with rows by input elements."""
    return tg.Tensor._make(J.T.copy())


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _is_tensor(x):
    return isinstance(x, tg.Tensor)


def _requires_grad(x):
    return _is_tensor(x) and x.requires_grad


def _differentiable_outputs(outputs):
    return tuple(y for y in _as_tuple(outputs) if _requires_grad(y))


def _indices(shape):
    """Every index tuple of an array of this shape, in row-major (flattening) order."""
    return itertools.product(*(range(n) for n in shape))


def _close(a, n, atol, rtol):
    """Entry-wise |a - n| <= atol + rtol * |n| (equal infinities count as close)."""
    xp = _backend.array_module(a)
    return (xp.abs(a - n) <= atol + rtol * xp.abs(n)) | (a == n)


def _close_all(a, n, atol, rtol):
    return a.shape == n.shape and bool(_close(a, n, atol, rtol).all())


def _max(values):
    return float(values.max()) if values.size else 0.0


def _array_or_zeros(g, x):
    if g is None:
        return _backend.array_module(x).zeros(x._data.shape, dtype=x._data.dtype)
    return g._data


def _random_unit_vector(t, seed):
    """A random vector with t.numel() non-negative entries and length 1, on t's device."""
    xp = _backend.array_module(t)
    vec = xp.random.default_rng(seed).random(t.numel()).astype(t._data.dtype)
    return vec / xp.sqrt((vec * vec).sum()) if vec.size else vec


def _random_grad_output(y, non_contiguous):
    """Uniform in [-1, 1) with y's shape, dtype and device, requiring grad (for gradgradcheck)."""
    dtype = y.dtype if y.is_floating_point() else tg.float64
    shape = tuple(y.shape)
    if non_contiguous and y.numel() > 1:  # every other column of a twice-as-wide tensor
        wide = tg.rand((*shape[:-1], 2 * shape[-1]), dtype=dtype, device=y.device) * 2 - 1
        return wide[..., ::2].requires_grad_()
    return (tg.rand(shape, dtype=dtype, device=y.device) * 2 - 1).requires_grad_()


def _undefined_grad(y):
    """``y``'s values, whose backward sends back no gradient."""
    return _UndefinedGrad.apply(y)[0]

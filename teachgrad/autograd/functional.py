"""The functional API: derivatives of a *function* at a point, like ``torch.autograd.functional``.

``backward()`` and ``grad()`` differentiate a graph you have already built. The
functions here take a Python function ``func`` and a point ``inputs``, run ``func``
themselves and hand back derivatives. For ``y = func(x)`` with Jacobian ``J``
(``J[r, c] = d y[r] / d x[c]``, both flattened):

- ``vjp(func, x, v)``  ->  ``v^T J``   one backward pass (what reverse mode does natively);
- ``jvp(func, x, v)``  ->  ``J v``     by the double-backward trick (see ``jvp``);
- ``jacobian(func, x)`` -> ``J``       one backward pass per row (reverse mode), or one
  forward-mode pass per column (``strategy="forward-mode"``);
- ``hessian(func, x)`` -> ``H``        the Jacobian of the gradient, for a scalar ``func``;
- ``vhp(func, x, v)``  ->  ``v^T H``   and ``hvp(func, x, v)`` -> ``H v``, without forming ``H``.

Structure follows torch exactly. ``inputs`` is a Tensor or a *tuple* of Tensors
(a list is an error); ``func`` returns a Tensor or a tuple of Tensors. A result
indexed by inputs is a tuple only if ``inputs`` was one, and likewise for outputs;
so ``jacobian`` of a tuple-to-tuple function is ``J[output][input]``, and of a
Tensor-to-Tensor one a single Tensor of shape ``out.shape + in.shape``.

Everything returned is detached unless ``create_graph=True``; then it stays in the
graph, so you can differentiate it again. (Forward-mode Jacobians, as torch's, are
never detached, and their levels are lists instead of tuples.) Where an output does
not depend on an input the derivative is zeros, unless ``strict=True``, which makes
that an error.

What does not live here: the engine (``engine.py``), forward-mode AD itself
(``forward_ad.py``) and the numerical checks (``gradcheck.py``).

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import jacobian
    >>> jacobian(lambda x: x**2, tg.tensor([1.0, 3.0]))
    tensor([[2., 0.],
            [0., 6.]])
"""

from __future__ import annotations

import teachgrad as tg

from .._backend import array_module
from .._tensor import wrap_array
from . import forward_ad as fwAD
from .engine import grad as _engine_grad
from .engine import grad_rows
from .grad_mode import enable_grad

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]

_STRATEGIES = ("forward-mode", "reverse-mode")


# --------------------------------------------------------------------------- the six functions


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(inputs), v^T J)``: the vector-Jacobian product, one backward pass.

    ``v`` has the structure and shapes of ``func``'s output (it may be left out when
    that output is one Tensor of one element); the product has those of ``inputs``.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import vjp
    >>> vjp(lambda x: 3 * x, tg.tensor([1.0, 2.0]), v=tg.tensor([1.0, 10.0]))
    (tensor([3., 6.]), tensor([ 3., 30.]))
    """
    with enable_grad():  # func must record its graph even if the caller is in no_grad()
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _fresh(inputs, create_graph, requires_grad=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), _USER_OUTPUTS, "vjp")
        _check_strict(outputs, "outputs", strict)
        v = _checked_v(v, outputs, outputs_tuple, create_graph, "vjp")
    # (no grad mode is needed from here on: grad() records a graph exactly when create_graph)
    vJ = _grad(outputs, inputs, v, create_graph=create_graph)
    vJ = _zeros_for_none(vJ, inputs, strict, create_graph, "back")
    return (
        _untuple(_detached(outputs, create_graph), outputs_tuple),
        _untuple(_detached(vJ, create_graph), inputs_tuple),
    )


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(inputs), J v)``: the Jacobian-vector product.

    ``v`` has the structure and shapes of ``inputs`` (it may be left out when that
    is one Tensor of one element); the product has those of ``func``'s output.

    Computed like torch, with the *double-backward trick* (not with forward AD, so
    that ``create_graph`` and ``strict`` mean exactly what they mean in torch):
    backward maps ``u -> J^T u``, which is linear in ``u``; differentiating that map
    with respect to ``u``, in the direction ``v``, gives ``(J^T)^T v = J v``.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import jvp
    >>> jvp(lambda x: x**2, tg.tensor([1.0, 2.0]), v=tg.tensor([1.0, 0.0]))
    (tensor([1., 4.]), tensor([2., 0.]))
    """
    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _fresh(inputs, create_graph, requires_grad=True)
        v = _checked_v(v, inputs, inputs_tuple, create_graph, "jvp")
        outputs_tuple, outputs = _as_tuple(func(*inputs), _USER_OUTPUTS, "jvp")
        _check_strict(outputs, "outputs", strict)
        # u's value never matters (J^T u is linear in u); zeros just keep it finite.
        u = tuple(tg.zeros_like(out, requires_grad=True) for out in outputs)
        JTu = _grad(outputs, inputs, u, create_graph=True)  # a graph that is a function of u
        _check_strict(JTu, "grad_inputs", strict)
    Jv = _grad(JTu, u, v, create_graph=create_graph)
    Jv = _zeros_for_none(Jv, outputs, strict, create_graph, "back_trick")
    return (
        _untuple(_detached(outputs, create_graph), outputs_tuple),
        _untuple(_detached(Jv, create_graph), outputs_tuple),
    )


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """Return the Jacobian of ``func`` at ``inputs``.

    ``J[i][j]`` (output i, input j) has shape ``outputs[i].shape + inputs[j].shape``;
    the tuple levels are there only where ``func``'s output / ``inputs`` are tuples
    (forward mode, as torch's, makes the levels lists where ``inputs`` is a tuple).

    - ``strategy="reverse-mode"``: row ``r`` of ``J`` is ``e_r^T J``, a vjp with a
      one-hot ``e_r``. ``vectorize=False`` runs one backward per row; ``vectorize=True``
      hands all rows of an output to ``grad(..., is_grads_batched=True)`` at once.
    - ``strategy="forward-mode"`` (needs ``vectorize=True``, not with ``create_graph``
      or ``strict``): column ``c`` is ``J e_c``, one forward-AD pass per input element.
      Cheaper when ``func`` has more output elements than input elements.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import jacobian
    >>> x, y = tg.tensor([1.0, 2.0]), tg.tensor(3.0)
    >>> jacobian(lambda x, y: x * y, (x, y))  # one output, two inputs: a tuple by input
    (tensor([[3., 0.],
            [0., 3.]]), tensor([1., 2.]))
    """
    if strategy not in _STRATEGIES:
        raise AssertionError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".\n  Reverse mode costs one pass per output '
            "element, forward mode one per input element: pick the smaller side."
        )
    if strategy == "forward-mode":
        if create_graph:
            raise NotImplementedError(
                "teachgrad.autograd.functional.jacobian: `create_graph=True` and "
                '`strategy="forward-mode"` are not supported together (yet). Please either set '
                '`create_graph=False` or `strategy="reverse-mode"`.\n  Use '
                'strategy="reverse-mode" to get a differentiable Jacobian.'
            )
        return _jacobian_forward(func, inputs, strict, vectorize)

    with enable_grad():
        inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _fresh(inputs, create_graph, requires_grad=True)
        outputs_tuple, outputs = _as_tuple(func(*inputs), _USER_OUTPUTS, "jacobian")
        _check_strict(outputs, "outputs", strict)
        if vectorize and strict:
            raise RuntimeError(
                "teachgrad.autograd.functional.jacobian: `strict=True` and `vectorized=True` are "
                "not supported together. Please either set `strict=False` or `vectorize=False`.\n"
                "  strict checks each row's gradient on its own; vectorize makes them all at once."
            )
        if vectorize:
            J = _jacobian_batched(outputs, inputs, create_graph)
        else:
            J = tuple(
                _rows_one_by_one(i, out, inputs, create_graph, strict)
                for i, out in enumerate(outputs)
            )
    return _untuple2(_detached(J, create_graph), outputs_tuple, inputs_tuple)


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """Return the Hessian of a scalar ``func`` at ``inputs``: the Jacobian of its gradient.

    ``H[i][j]`` has shape ``inputs[i].shape + inputs[j].shape`` (a single Tensor when
    ``inputs`` is one). The inner Jacobian (the gradient) is always reverse mode;
    ``outer_jacobian_strategy="forward-mode"`` (with ``vectorize=True``) differentiates
    the gradient in forward mode: forward-over-reverse.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import hessian
    >>> hessian(lambda x: (x**3).sum(), tg.tensor([1.0, 2.0]))
    tensor([[ 6.,  0.],
            [ 0., 12.]])
    """
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in _STRATEGIES:
        raise AssertionError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_func(*xs):
        return _scalar_output(func, xs, "hessian", strict).squeeze()

    def gradient(*xs):
        if outer_jacobian_strategy == "forward-mode":
            # xs are dual tensors. The inner jacobian keeps an input that requires grad
            # as a view, which carries its tangent; any other it detaches, which drops
            # the tangent. So make them all require grad.
            xs = tuple(x.requires_grad_(True) for x in xs)
        g = jacobian(scalar_func, xs, create_graph=True)  # a tuple: one gradient per input
        _check_strict(g, "jacobian", strict)
        return g

    H = jacobian(gradient, inputs, create_graph, strict, vectorize, outer_jacobian_strategy)
    return _untuple2(H, inputs_tuple, inputs_tuple)


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(inputs), v^T H)`` for a scalar ``func``: a vjp of the gradient.

    ``v`` and the product have the structure and shapes of ``inputs``.

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import vhp
    >>> vhp(lambda x: (x**3).sum(), tg.tensor([1.0, 2.0]), v=tg.tensor([1.0, 1.0]))
    (tensor(9.), tensor([ 6., 12.]))
    """
    with enable_grad():
        inputs_tuple, inputs, v, out, g = _gradient_graph(
            func, inputs, v, create_graph, strict, "vhp"
        )
    vH = _grad(g, inputs, v, create_graph=create_graph)
    vH = _zeros_for_none(vH, inputs, strict, create_graph, "double_back")
    return _detached((out,), create_graph)[0], _untuple(_detached(vH, create_graph), inputs_tuple)


def _gradient_graph(func, inputs, v, create_graph, strict, name):
    """What vhp and hvp start from: ``(inputs_tuple, fresh inputs, checked v, func's
    scalar output, its gradient as a graph)``; called with grad mode on."""
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", name)
    inputs = _fresh(inputs, create_graph, requires_grad=True)
    v = _checked_v(v, inputs, inputs_tuple, create_graph, name)
    out = _scalar_output(func, inputs, name, strict)
    g = _grad((out,), inputs, create_graph=True)  # the gradient, itself a graph
    _check_strict(g, "jacobian", strict)
    return inputs_tuple, inputs, v, out, g


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """Return ``(func(inputs), H v)`` for a scalar ``func``.

    Reverse mode gives ``u^T H`` directly (a vjp of the gradient); ``H v`` is got
    from it with the double-backward trick of ``jvp``, so it costs one more backward
    than ``vhp``. (For a twice continuously differentiable ``func``, ``H`` is
    symmetric and ``vhp`` gives the same numbers.)

    >>> import teachgrad as tg
    >>> from teachgrad.autograd.functional import hvp
    >>> hvp(lambda x: (x[0] * x[1]), tg.tensor([1.0, 2.0]), v=tg.tensor([1.0, 0.0]))
    (tensor(2.), tensor([0., 1.]))
    """
    with enable_grad():
        inputs_tuple, inputs, v, out, g = _gradient_graph(
            func, inputs, v, create_graph, strict, "hvp"
        )
        u = tuple(tg.zeros_like(x, requires_grad=True) for x in inputs)
        HTu = _grad(g, inputs, u, create_graph=True)  # u^T H, linear in u
    Hv = _grad(HTu, u, v, create_graph=create_graph)
    Hv = _zeros_for_none(Hv, inputs, strict, create_graph, "double_back_trick")
    return _detached((out,), create_graph)[0], _untuple(_detached(Hv, create_graph), inputs_tuple)


# --------------------------------------------------------------------------- Jacobians, row by row / column by column


def _rows_one_by_one(i, out, inputs, create_graph, strict) -> tuple:
    """``J[i][j]`` for every input j, one backward pass per element of output ``i``, each
    from a one-hot gradient of ``out`` (torch differentiates ``out.reshape(-1)[r]``: the
    same numbers, with a select node more to record and run per row)."""
    rows = [[] for _ in inputs]  # rows[j][r] = d out.flat[r] / d inputs[j]
    (one_hots,) = _standard_basis((out,))  # shape (out.numel(), *out.shape)
    # one seed per row, each a plain tensor on the basis' memory (no op, no view bookkeeping);
    # made here with out's shape, dtype and device, so grad_rows need not check them
    n = out.numel()
    flat = one_hots._data.reshape(n, n)  # (rows of arrays, for a 0-d output too)
    seeds = [wrap_array(row.reshape(out.shape)) for row in flat]
    if out.requires_grad:
        each_row = grad_rows(out, inputs, seeds, create_graph=create_graph, seeds_checked=True)
    else:  # (not in any graph: no row depends on the inputs)
        each_row = [(None,) * len(inputs) for _ in seeds]
    for grads in each_row:
        for j, g in enumerate(grads):
            if g is None:
                if strict:
                    raise RuntimeError(
                        f"Output {i} of the user-provided function is independent of input {j}. "
                        "This is not allowed in strict mode.\n  With strict=False this block of "
                        "the Jacobian is zeros."
                    )
                g = tg.zeros_like(inputs[j])
            elif strict and create_graph and not g.requires_grad:
                raise RuntimeError(
                    f"The jacobian of the user-provided function is independent of input {j}. "
                    "This is not allowed in strict mode when create_graph=True.\n  (The function "
                    "is linear in it, so the Jacobian is a constant, with no graph to differentiate.)"
                )
            rows[j].append(g)
    return tuple(
        _stacked(rows_j, out.shape + x.shape, create_graph) for rows_j, x in zip(rows, inputs)
    )


def _stacked(rows, shape, create_graph):
    """The Jacobian block of ``shape`` from its ``rows`` (tensors of one dtype and device):
    ``tg.stack(rows).reshape(shape)``, the graph of the rows kept with ``create_graph``.

    Speed trick: without ``create_graph`` no row is in a graph (nothing to record), so their
    arrays are stacked directly: the same numbers without ``stack``'s checks of each row.
    Measured on ``benchmarks/bench.py`` (d) (64 rows of 64): 35 -> 16 µs per block; with the
    seeds made from the basis' rows as NumPy iterates them, the ``jacobian`` call 0.97-1.01
    -> 0.93-0.95 ms (-3% to -7%, alternating runs, 2026-11-29)."""
    if create_graph or not rows:  # (no rows: stack's own error, as torch's)
        return tg.stack(rows).reshape(shape)
    arrays = [r._data for r in rows]
    return wrap_array(array_module(arrays[0]).stack(arrays).reshape(shape))


def _jacobian_batched(outputs, inputs, create_graph) -> tuple:
    """``J[i][j]`` for every output i and input j from one batched call: the batch of
    grad_outputs is every one-hot vector of all the outputs together, so the batch of
    results is every row of J, which is then cut by output. (One call, as torch makes:
    an input some output reaches gets one gradient tensor, rows of zeros included, so
    with ``create_graph`` all its blocks are in the graph.)"""
    one_hots = _standard_basis(outputs)  # entry i: (N, *outputs[i].shape), N = all elements
    grads = _grad(outputs, inputs, one_hots, create_graph=create_graph, is_grads_batched=True)
    N = one_hots[0].shape[0]
    grads = [
        tg.zeros((N, *x.shape), dtype=x.dtype, device=x.device) if g is None else g
        for g, x in zip(grads, inputs)
    ]
    rows_by_output = [g.split([out.numel() for out in outputs]) for g in grads]
    return tuple(
        tuple(rows[i].reshape(out.shape + x.shape) for rows, x in zip(rows_by_output, inputs))
        for i, out in enumerate(outputs)
    )


def _jacobian_forward(func, inputs, strict, vectorize):
    """``jacobian(strategy="forward-mode")``: column c of J is the tangent of the
    outputs when the inputs move along the one-hot direction ``e_c``."""
    if strict:
        raise RuntimeError(
            'teachgrad.autograd.functional.jacobian: `strict=True` and `strategy="forward-mode"` '
            "are not supported together (yet). Please either set `strict=False` or "
            '`strategy="reverse-mode"`.'
        )
    inputs_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
    if not vectorize:
        raise NotImplementedError(  # (torch's words, "isonly" included)
            "Computing Jacobian using forward-AD or forward-over-reverse Hessian isonly "
            "implemented for `vectorize=True`.\n  Pass vectorize=True."
        )
    directions = _standard_basis(inputs)  # one per input: (N, *x.shape), N = all input elements
    outputs_tuple, outputs, tangents = _pushforward_batch(func, inputs, directions)
    # tangents[i][c] = J[i] e_c: the batch runs over columns, so move it last. As in
    # torch, the blocks are not detached (a tangent computed from inputs that require
    # grad is in the graph) and both levels are lists, where reverse mode has tuples.
    J = []
    for out, tangent in zip(outputs, tangents):
        columns = tangent.split([x.numel() for x in inputs])  # each (x.numel(), *out.shape)
        J.append([c.movedim(0, -1).reshape(out.shape + x.shape) for c, x in zip(columns, inputs)])
    return _untuple2(J, outputs_tuple, inputs_tuple)


def _pushforward_batch(func, inputs, directions):
    """Run ``func`` in forward mode once per direction (row c of every ``directions[j]``).

    Returns (outputs were a tuple?, the outputs, for each output the stacked tangents
    ``(N, *out.shape)``). One pass per direction: a batched tangent could replace
    this loop without changing anything around it.
    """
    columns = None
    for c in range(directions[0].shape[0]):
        with fwAD.dual_level():
            duals = tuple(fwAD.make_dual(x, d[c]) for x, d in zip(inputs, directions))
            outputs_tuple, outs = _as_tuple(func(*duals), _USER_OUTPUTS, "jacobian")
            outputs, tangents = zip(*(fwAD.unpack_dual(o) for o in outs))
        if columns is None:
            columns = [[] for _ in outs]
        for col, primal, t in zip(columns, outputs, tangents):
            col.append(tg.zeros_like(primal) if t is None else t)  # no tangent: independent
    return outputs_tuple, outputs, tuple(tg.stack(col) for col in columns)


def _standard_basis(tensors) -> tuple:
    """The N one-hot vectors of all the tensors' elements together (N = total numel),
    split by tensor: entry j has shape ``(N, *tensors[j].shape)`` and row c is
    tensor j's part of ``e_c``. (The N x N identity matrix, cut into column blocks.)"""
    N = sum(t.numel() for t in tensors)
    blocks, start = [], 0
    for t in tensors:
        eye = tg.eye(N, dtype=t.dtype, device=t.device)
        blocks.append(eye[:, start : start + t.numel()].reshape(N, *t.shape))
        start += t.numel()
    return tuple(blocks)


# --------------------------------------------------------------------------- structure and checks

_USER_OUTPUTS = "outputs of the user-provided function"


def _as_tuple(x, name, fn) -> tuple[bool, tuple]:
    """``(was x a tuple?, x as a tuple of Tensors)``. Only a tuple means "several"; a
    list is not accepted (as in torch), so the result's structure is never ambiguous."""
    is_tuple = isinstance(x, tuple)
    xs = x if is_tuple else (x,)
    for k, el in enumerate(xs):
        if not isinstance(el, tg.Tensor):
            where = f"the value at index {k}" if is_tuple else f"the given {name}"
            raise TypeError(
                f"The {name} given to {fn} must be either a Tensor or a tuple of Tensors but "
                f"{where} has type {type(el)}.\n  Wrap several tensors in a tuple, not a list."
            )
    return is_tuple, xs


def _untuple(xs, was_tuple):
    """Undo ``_as_tuple``: a single Tensor again unless the caller gave a tuple."""
    return xs if was_tuple else xs[0]


def _untuple2(J, outputs_tuple, inputs_tuple):
    """Undo ``_as_tuple`` on both levels of a ``J[output][input]`` nest."""
    if not inputs_tuple:
        J = tuple(row[0] for row in J)
    return J if outputs_tuple else J[0]


def _fresh(tensors, create_graph, requires_grad) -> tuple:
    """New Tensor objects for the given ones, so that ``func`` differentiates with
    respect to its *arguments* only, not to the same tensors captured from outside.

    With ``create_graph`` a tensor already in a graph is taken as a view, so results
    stay connected to it; otherwise it is detached (and made to require grad)."""
    return tuple(
        t.view_as(t)
        if create_graph and t.requires_grad
        else t.detach().requires_grad_(requires_grad)
        for t in tensors
    )


def _detached(results, create_graph) -> tuple:
    """The results (a tuple, maybe of tuples) cut from the graph, unless ``create_graph``."""
    if create_graph:
        return results
    return tuple(r.detach() if isinstance(r, tg.Tensor) else _detached(r, False) for r in results)


def _checked_v(v, like, like_tuple, create_graph, fn):
    """``v`` as a tuple with the structure and shapes of ``like`` (the outputs for
    ``vjp``, the inputs otherwise). None means implicit ones: allowed only when
    ``like`` is one Tensor with one element."""
    if v is None:
        if len(like) != 1 or like[0].numel() != 1:
            which = (
                "the user-provided function returns"
                if fn == "vjp"
                else "the input to the user-provided function is"
            )
            raise RuntimeError(
                f"The vector v can only be None if {which} a single Tensor with a single "
                "element.\n  Otherwise pass v, shaped like it: v is the vector of the product."
            )
        return None
    _, v = _as_tuple(v, "v", fn)
    v = _fresh(v, create_graph, requires_grad=False)
    if len(v) != len(like):
        if like_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(like)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for k, (v_k, like_k) in enumerate(zip(v, like)):
        if v_k.shape != like_k.shape:
            entry = f"Entry {k} in " if like_tuple else ""
            raise RuntimeError(
                f"{entry}v has invalid size: should be {like_k.shape} but got {v_k.shape}."
            )
    return v


def _scalar_output(func, inputs, fn, strict):
    """``func(*inputs)``, checked to be one Tensor with one element (hessian, vhp, hvp)."""
    outputs_tuple, outputs = _as_tuple(func(*inputs), _USER_OUTPUTS, fn)
    _check_strict(outputs, "outputs", strict)
    if outputs_tuple:
        raise RuntimeError(
            f"The function given to {fn} should return a single Tensor\n  {fn} is about a "
            "scalar function; return the one value (e.g. a sum), not a tuple."
        )
    if outputs[0].numel() != 1:
        raise RuntimeError(
            f"The Tensor returned by the function given to {fn} should contain a single element\n"
            f"  It has shape {tuple(outputs[0].shape)}; reduce it (e.g. .sum()) first."
        )
    return outputs[0]


_STRICT_NO_GRAD = {  # kind -> what strict mode says of a tensor that does not require grad
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in strict "
    "mode.\n  Not from detached tensors or constants.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for example)."
    "\n  A function linear in that input has a constant gradient there (its "
    "Hessian is zeros); use strict=False to get those zeros.",
}


def _check_strict(tensors, kind, strict) -> None:
    """With ``strict``, every tensor must exist and require grad (be connected to the inputs)."""
    if not strict:
        return
    for i, t in enumerate(tensors):
        if t is None:  # a gradient grad() could not reach
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This "
                "is not allowed in strict mode.\n  With strict=False its derivative is zeros."
            )
        if not t.requires_grad:
            raise RuntimeError(_STRICT_NO_GRAD[kind].format(i=i))


_STRICT_NONE = {  # stage -> what strict mode says when grad() found no path to entry {i}
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick\n  (jvp differentiates the backward "
    "pass with respect to its grad_output u; output {i}'s u does not reach it).",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. This "
    "is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian.\n  (hvp differentiates u^T H with respect to u; entry {i} of u does "
    "not reach it.)",
}


def _zeros_for_none(grads, like, strict, create_graph, stage) -> tuple:
    """Replace the None gradients (no path from output to input) with zeros shaped like
    ``like`` -- the right value mathematically -- or, with ``strict``, raise."""
    result = []
    for i, (g, ref) in enumerate(zip(grads, like)):
        if g is None:
            if strict:
                raise RuntimeError(_STRICT_NONE[stage].format(i=i))
            g = tg.zeros_like(ref)
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if stage.startswith("double") else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        result.append(g)
    return tuple(result)


def _grad(outputs, inputs, grad_outputs=None, **kwargs) -> tuple:
    """``grad(outputs, inputs, grad_outputs, allow_unused=True, ...)`` that skips the
    outputs which are None or not in any graph (they contribute nothing), and returns
    None for every input when none is left."""
    grad_outputs = (None,) * len(outputs) if grad_outputs is None else grad_outputs
    kept = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not kept:
        return (None,) * len(inputs)
    outputs, grad_outputs = zip(*kept)
    return _engine_grad(outputs, inputs, grad_outputs, allow_unused=True, **kwargs)

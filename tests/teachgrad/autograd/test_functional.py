"""tg.autograd.functional: vjp, jvp, jacobian, hessian, vhp, hvp give torch's answers, in torch's shape.

Every function below is written once against a library module ``lib`` (teachgrad or
torch), called on the same float64 numbers through both, and the results compared:

* values, and structure: Tensor vs tuple, nesting ``J[output][input]``, shapes, and
  whether each result requires grad -- for single Tensor and tuple inputs and outputs,
  1-tuples, 0-d tensors and outputs that do not depend on some input (zeros);
* ``vectorize=True`` (one batched ``grad`` call per output), ``strategy="forward-mode"``
  (no backward at all) and forward-over-reverse Hessians equal the plain reverse mode;
* ``create_graph=True``: results stay in the graph and their derivatives (second
  derivatives of the function) equal torch's;
* strict mode and bad arguments raise torch's exception class with torch's key phrase.
"""

import re

import numpy as np
import pytest

import teachgrad as tg
import teachgrad.autograd.functional as F

RNG = np.random.default_rng(0)

# --------------------------------------------------------------------------- helpers


def make(lib, arrays, requires_grad=False):
    """The arrays as float64 tensors of ``lib``."""
    return tuple(lib.tensor(a, dtype=lib.float64, requires_grad=requires_grad) for a in arrays)


def arrays_like(shapes):
    return [RNG.standard_normal(s) for s in shapes]


def pack(xs, as_tuple):
    """What the user passes: a tuple of tensors, or the one tensor."""
    return tuple(xs) if as_tuple else xs[0]


def assert_same(ours, theirs, check_requires_grad=True):
    """``ours`` (teachgrad) has ``theirs``'s (torch) structure (tuples and lists alike),
    shapes, values and flags, and the same node where a result is in a graph."""
    if isinstance(theirs, (tuple, list)):
        kind = type(theirs).__name__
        assert type(ours) is type(theirs), f"expected a {kind}, got {type(ours).__name__}"
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b, check_requires_grad)
        return
    assert isinstance(ours, tg.Tensor), f"expected a Tensor, got {type(ours).__name__}"
    assert tuple(ours.shape) == tuple(theirs.shape)
    np.testing.assert_allclose(
        ours.detach().cpu().numpy(), theirs.detach().cpu().numpy(), rtol=1e-10, atol=1e-12
    )
    if check_requires_grad:
        assert ours.requires_grad == theirs.requires_grad
        assert type(ours.grad_fn).__name__ == type(theirs.grad_fn).__name__


def lists_to_tuples(result):
    """Forward mode returns lists where reverse mode returns tuples (in torch and so in
    teachgrad): to compare the two modes' values, read the lists as tuples."""
    if isinstance(result, (list, tuple)):
        return tuple(lists_to_tuples(r) for r in result)
    return result


def flat_tensors(result):
    if isinstance(result, (tuple, list)):
        return [t for r in result for t in flat_tensors(r)]
    return [result]


def both(call, torch):
    """``call(lib)`` for teachgrad and torch: (ours, theirs)."""
    return call(tg), call(torch)


# --------------------------------------------------------------------------- the functions

# name -> (func(lib, *inputs), input shapes, pass inputs as a tuple?)
FUNCS = {
    "tensor -> tensor": (lambda lib, x: x.exp() * x.sum(), [(3,)], False),
    "matrix -> vector": (lambda lib, x: (x**2).sum(1) * x[:, 0].sin(), [(2, 3)], False),
    "1-tuple -> tensor": (lambda lib, x: x.sin() * x, [(3,)], True),
    "tuple -> tensor": (lambda lib, W, x: (W @ x).tanh(), [(2, 3), (3,)], True),
    "tensor -> tuple": (lambda lib, x: (x.exp(), (x**2).sum(), x[:2] * 3), [(3,)], False),
    "tuple -> tuple": (lambda lib, x, y: (x * y.sin().sum(), x.sum() * y), [(3,), (2,)], True),
    "0-d": (lambda lib, x: x.sin() * x**2, [()], False),
    "0-d tuple -> tuple": (lambda lib, x, y: (x * y, y.exp()), [(), ()], True),
    "an unused input": (lambda lib, x, y: (x**2, x.sum()), [(3,), (2,)], True),
    "an output independent of an input": (lambda lib, x, y: (x.exp(), y * 2), [(2,), (2,)], True),
    "an output cut from the graph": (lambda lib, x: (x * 2, x.detach() ** 2), [(3,)], False),
    "an output from another leaf": (
        lambda lib, x: (x * 2, lib.ones(2, dtype=lib.float64, requires_grad=True) * 3),
        [(3,)],
        False,
    ),
}

# scalar functions, for hessian, vhp and hvp
SCALAR_FUNCS = {
    "tensor": (lambda lib, x: (x**3).sum() * x.exp().sum(), [(3,)], False),
    "matrix": (lambda lib, x: (x.sin() ** 2 * x[0]).sum(), [(2, 2)], False),
    "1-tuple": (lambda lib, x: (x.cos() * x).sum(), [(2,)], True),
    "tuple": (lambda lib, x, y: (x * y.sin()).sum() * (x**2).sum(), [(2,), (2,)], True),
    "0-d": (lambda lib, x: x.exp() * x**3, [()], False),
    "0-d tuple": (lambda lib, x, y: (x * y) ** 2 + y.sin(), [(), ()], True),
    "a (1, 1) output": (lambda lib, x: (x**3).sum().reshape(1, 1), [(2,)], False),
    "an unused input": (lambda lib, x, y: (x**3).sum(), [(2,), (3,)], True),
    "linear in an input": (lambda lib, x, y: (x**2).sum() + y.sum(), [(2,), (2,)], True),
}


def call_with(lib, case, fn, arrays, requires_grad=False, **kwargs):
    func, _, as_tuple = case
    xs = pack(make(lib, arrays, requires_grad), as_tuple)
    return fn(lib)(lambda *a: func(lib, *a), xs, **kwargs)


def functional(name):
    return lambda lib: getattr(lib.autograd.functional, name)


# --------------------------------------------------------------------------- values and structure


def output_shapes(case, arrays):
    """The shapes of ``case``'s outputs at ``arrays`` (computed with teachgrad)."""
    outs = case[0](tg, *make(tg, arrays))
    return [tuple(o.shape) for o in (outs if isinstance(outs, tuple) else (outs,))]


@pytest.mark.parametrize("case", FUNCS.values(), ids=FUNCS.keys())
def test_vjp_matches_torch(case, torch):
    arrays = arrays_like(case[1])
    v_arrays = arrays_like(output_shapes(case, arrays))
    outputs_tuple = isinstance(case[0](tg, *make(tg, arrays)), tuple)
    ours, theirs = both(
        lambda lib: lib.autograd.functional.vjp(
            lambda *a: case[0](lib, *a),
            pack(make(lib, arrays), case[2]),
            v=pack(make(lib, v_arrays), outputs_tuple),
        ),
        torch,
    )
    assert_same(ours, theirs)


@pytest.mark.parametrize("case", FUNCS.values(), ids=FUNCS.keys())
def test_jvp_matches_torch(case, torch):
    arrays, v_arrays = arrays_like(case[1]), arrays_like(case[1])
    ours, theirs = both(
        lambda lib: lib.autograd.functional.jvp(
            lambda *a: case[0](lib, *a),
            pack(make(lib, arrays), case[2]),
            v=pack(make(lib, v_arrays), case[2]),
        ),
        torch,
    )
    assert_same(ours, theirs)


JACOBIAN_MODES = {
    "reverse": {},
    "reverse, vectorized": {"vectorize": True},
    "forward": {"vectorize": True, "strategy": "forward-mode"},
}


@pytest.mark.parametrize("mode", JACOBIAN_MODES.values(), ids=JACOBIAN_MODES.keys())
@pytest.mark.parametrize("case", FUNCS.values(), ids=FUNCS.keys())
def test_jacobian_matches_torch(case, mode, torch):
    """Also the containers: forward mode's are lists, as in torch."""
    arrays = arrays_like(case[1])
    ours, theirs = both(
        lambda lib: call_with(lib, case, functional("jacobian"), arrays, **mode), torch
    )
    assert_same(ours, theirs)


@pytest.mark.parametrize("mode", JACOBIAN_MODES.values(), ids=JACOBIAN_MODES.keys())
@pytest.mark.parametrize("case", FUNCS.values(), ids=FUNCS.keys())
def test_jacobian_modes_agree_with_each_other(case, mode):
    """vectorize=True and forward mode give the plain reverse-mode Jacobian, also for
    inputs that are already in a graph (the torch comparisons use fresh leaves)."""
    arrays = arrays_like(case[1])
    plain = call_with(tg, case, functional("jacobian"), arrays)
    other = call_with(tg, case, functional("jacobian"), arrays, requires_grad=True, **mode)
    assert_same(lists_to_tuples(other), plain, check_requires_grad=False)


def test_jacobian_of_an_output_without_elements_is_torch_s_error(torch):
    """One backward per output element: none to stack, and torch's ``stack`` says so."""
    for lib in (tg, torch):
        with pytest.raises(RuntimeError, match="^stack expects a non-empty TensorList"):
            lib.autograd.functional.jacobian(lambda v: v[:0] * 2, lib.ones(3))


def test_jacobian_is_indexed_output_then_input():
    """J[i][j] = d outputs[i] / d inputs[j], of shape outputs[i].shape + inputs[j].shape."""
    x, y = make(tg, arrays_like([(3,), (2,)]))
    J = F.jacobian(lambda x, y: (x * y.sum(), y.exp()), (x, y))
    assert [[tuple(b.shape) for b in row] for row in J] == [[(3, 3), (3, 2)], [(2, 3), (2, 2)]]
    np.testing.assert_allclose(J[0][1].cpu().numpy(), np.outer(x.cpu().numpy(), np.ones(2)))
    np.testing.assert_allclose(J[1][0].cpu().numpy(), np.zeros((2, 3)))
    np.testing.assert_allclose(J[1][1].cpu().numpy(), np.diag(np.exp(y.cpu().numpy())))


HESSIAN_MODES = {
    "reverse": {},
    "reverse, vectorized": {"vectorize": True},
    "forward-over-reverse": {"vectorize": True, "outer_jacobian_strategy": "forward-mode"},
}


@pytest.mark.parametrize("mode", HESSIAN_MODES.values(), ids=HESSIAN_MODES.keys())
@pytest.mark.parametrize("case", SCALAR_FUNCS.values(), ids=SCALAR_FUNCS.keys())
def test_hessian_matches_torch(case, mode, torch):
    arrays = arrays_like(case[1])
    ours, theirs = both(
        lambda lib: call_with(lib, case, functional("hessian"), arrays, **mode), torch
    )
    assert_same(ours, theirs)  # forward-over-reverse: lists, in the graph, as in torch


@pytest.mark.parametrize("mode", HESSIAN_MODES.values(), ids=HESSIAN_MODES.keys())
@pytest.mark.parametrize("case", SCALAR_FUNCS.values(), ids=SCALAR_FUNCS.keys())
def test_hessian_modes_agree_with_each_other(case, mode):
    """As for jacobian: every mode gives the plain Hessian, also for inputs in a graph."""
    arrays = arrays_like(case[1])
    plain = call_with(tg, case, functional("hessian"), arrays)
    other = call_with(tg, case, functional("hessian"), arrays, requires_grad=True, **mode)
    assert_same(lists_to_tuples(other), plain, check_requires_grad=False)


def test_hessian_of_a_tuple_input_is_a_tuple_of_tuples():
    """H[i][j] = d^2 f / d inputs[i] d inputs[j], of shape inputs[i].shape + inputs[j].shape."""
    x, y = make(tg, arrays_like([(2,), (3,)]))
    H = F.hessian(lambda x, y: (x**2).sum() * y.sum(), (x, y))
    assert [[tuple(b.shape) for b in row] for row in H] == [[(2, 2), (2, 3)], [(3, 2), (3, 3)]]
    np.testing.assert_allclose(H[0][0].cpu().numpy(), 2 * y.cpu().numpy().sum() * np.eye(2))
    np.testing.assert_allclose(H[0][1].cpu().numpy(), np.outer(2 * x.cpu().numpy(), np.ones(3)))
    np.testing.assert_allclose(H[1][1].cpu().numpy(), np.zeros((3, 3)))


@pytest.mark.parametrize("name", ["vhp", "hvp"])
@pytest.mark.parametrize("case", SCALAR_FUNCS.values(), ids=SCALAR_FUNCS.keys())
def test_vhp_and_hvp_match_torch(case, name, torch):
    arrays, v_arrays = arrays_like(case[1]), arrays_like(case[1])
    ours, theirs = both(
        lambda lib: getattr(lib.autograd.functional, name)(
            lambda *a: case[0](lib, *a),
            pack(make(lib, arrays), case[2]),
            v=pack(make(lib, v_arrays), case[2]),
        ),
        torch,
    )
    assert_same(ours, theirs)


def test_hvp_and_vhp_agree_with_the_hessian():
    """hvp gives H v and vhp gives v^T H; both agree with the Hessian itself."""
    x, v = make(tg, arrays_like([(3,), (3,)]))
    f = lambda x: (x[0] * x[1] * x[2]).exp() + (x**3).sum()
    H = F.hessian(f, x).cpu().numpy()
    np.testing.assert_allclose(F.hvp(f, x, v)[1].cpu().numpy(), H @ v.cpu().numpy())
    np.testing.assert_allclose(F.vhp(f, x, v)[1].cpu().numpy(), v.cpu().numpy() @ H)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_v_may_be_left_out_for_one_element(name, torch):
    """With a one-element output (vjp) or input (the others) v defaults to ones."""
    (a,) = arrays_like([()])
    ours, theirs = both(
        lambda lib: getattr(lib.autograd.functional, name)(
            lambda x: x.exp() * x, make(lib, [a])[0]
        ),
        torch,
    )
    assert_same(ours, theirs)


def test_inputs_captured_from_outside_are_constants(torch):
    """func is differentiated with respect to its arguments: the same tensor captured
    from outside is a constant (d(t * x)/dt = diag(x), not diag(2x))."""
    (a,) = arrays_like([(3,)])
    ours, theirs = both(
        lambda lib: (lambda x: lib.autograd.functional.jacobian(lambda t: t * x, x))(
            make(lib, [a], requires_grad=True)[0]
        ),
        torch,
    )
    assert_same(ours, theirs)
    np.testing.assert_allclose(ours.cpu().numpy(), np.diag(a))


@pytest.mark.parametrize("name", ["vjp", "jacobian", "hessian"])
def test_works_under_no_grad(name, torch):
    """func is always run with grad enabled, whatever the caller's grad mode."""
    (a,) = arrays_like([(3,)])
    f = lambda x: (x.exp() * x).sum()

    def call(lib):
        with lib.no_grad():
            return getattr(lib.autograd.functional, name)(f, make(lib, [a])[0])

    ours, theirs = both(call, torch)
    assert_same(ours, theirs)


@pytest.mark.parametrize("name", ["vjp", "jvp", "vhp", "hvp"])
def test_create_graph_records_even_under_no_grad(name, torch):
    (a,) = arrays_like([(3,)])
    f = (lambda x: x**3) if name == "jvp" else (lambda x: (x**3).sum())

    def call(lib):
        x = make(lib, [a], requires_grad=True)[0]
        v = lib.ones(()) if name == "vjp" else lib.ones_like(x)
        with lib.no_grad():
            return getattr(lib.autograd.functional, name)(f, x, v, create_graph=True)

    ours, theirs = both(call, torch)
    assert_same(ours, theirs)  # requires_grad included
    assert ours[1].requires_grad


# --------------------------------------------------------------------------- how the modes compute


def test_vectorized_jacobian_makes_one_batched_grad_call(monkeypatch):
    """One call for the rows of all the outputs together, as torch makes (so an input some
    output reaches has its blocks in the graph with create_graph, zero blocks included)."""
    calls = []
    real = F._engine_grad

    def counting(*args, **kwargs):
        calls.append(kwargs.get("is_grads_batched", False))
        return real(*args, **kwargs)

    monkeypatch.setattr(F, "_engine_grad", counting)
    x = tg.tensor(arrays_like([(5,)])[0], requires_grad=True)
    J = F.jacobian(lambda x: (x.exp(), x[:4] * 2, x.sum()), x, vectorize=True)
    assert calls == [True]  # not one call per row (5 + 4 + 1 rows), nor per output
    assert [tuple(j.shape) for j in J] == [(5, 5), (4, 5), (5,)]


def test_forward_mode_jacobian_runs_no_backward(monkeypatch):
    def no_backward(*args, **kwargs):
        raise AssertionError("forward mode must not call grad()")

    monkeypatch.setattr(F, "_engine_grad", no_backward)
    x = tg.tensor(arrays_like([(3,)])[0])
    J = F.jacobian(lambda x: x.sin(), x, vectorize=True, strategy="forward-mode")
    np.testing.assert_allclose(J.cpu().numpy(), np.diag(np.cos(x.cpu().numpy())))


def test_forward_over_reverse_hessian_pushes_tangents(monkeypatch):
    made = []
    real = F.fwAD.make_dual
    monkeypatch.setattr(F.fwAD, "make_dual", lambda *a, **k: made.append(1) or real(*a, **k))
    x = tg.tensor(arrays_like([(3,)])[0])
    H = F.hessian(lambda x: (x**3).sum(), x, vectorize=True, outer_jacobian_strategy="forward-mode")
    # (H stays in the graph of the inner gradient, as in torch)
    np.testing.assert_allclose(H.detach().cpu().numpy(), np.diag(6 * x.cpu().numpy()))
    assert made  # the outer Jacobian went through dual tensors


# --------------------------------------------------------------------------- create_graph


def _second_derivative(lib, result, xs, weights):
    """d/dxs of sum_k <weights_k, result_k>: differentiates the results once more."""
    tensors = flat_tensors(result)
    total = sum((t * w).sum() for t, w in zip(tensors, make(lib, weights)))
    return lib.autograd.grad(total, xs)


CREATE_GRAPH_CALLS = {  # name -> (function, case); v (if any) is drawn at random
    "vjp": ("vjp", FUNCS["tuple -> tuple"]),
    "jvp": ("jvp", FUNCS["tuple -> tuple"]),
    "jacobian": ("jacobian", FUNCS["tuple -> tuple"]),
    "jacobian, vectorized": ("jacobian-vectorized", FUNCS["tuple -> tuple"]),
    "hessian": ("hessian", SCALAR_FUNCS["tuple"]),
    "hessian, vectorized": ("hessian-vectorized", SCALAR_FUNCS["tuple"]),
    "vhp": ("vhp", SCALAR_FUNCS["tuple"]),
    "hvp": ("hvp", SCALAR_FUNCS["tuple"]),
}


def _run_create_graph(lib, name, case, arrays, v_arrays, out_arrays):
    func, _, as_tuple = case
    xs = make(lib, arrays, requires_grad=True)
    f = lambda *a: func(lib, *a)
    fn = lib.autograd.functional
    if name in ("vjp",):
        result = fn.vjp(f, xs, make(lib, out_arrays), create_graph=True)
    elif name in ("jvp", "vhp", "hvp"):
        result = getattr(fn, name)(f, xs, make(lib, v_arrays), create_graph=True)
    elif name.startswith("jacobian"):
        result = fn.jacobian(f, xs, create_graph=True, vectorize=name.endswith("vectorized"))
    else:
        result = fn.hessian(f, xs, create_graph=True, vectorize=name.endswith("vectorized"))
    return result, xs


@pytest.mark.parametrize("name, case", CREATE_GRAPH_CALLS.values(), ids=CREATE_GRAPH_CALLS.keys())
def test_create_graph_results_can_be_differentiated_again(name, case, torch):
    arrays, v_arrays = arrays_like(case[1]), arrays_like(case[1])
    outs = case[0](torch, *make(torch, arrays))
    out_arrays = arrays_like(
        [tuple(o.shape) for o in (outs if isinstance(outs, tuple) else (outs,))]
    )
    theirs, t_xs = _run_create_graph(torch, name, case, arrays, v_arrays, out_arrays)
    ours, o_xs = _run_create_graph(tg, name, case, arrays, v_arrays, out_arrays)
    assert_same(ours, theirs)
    assert all(t.requires_grad for t in flat_tensors(ours))
    weights = arrays_like([tuple(t.shape) for t in flat_tensors(theirs)])
    assert_same(
        _second_derivative(tg, ours, o_xs, weights),
        _second_derivative(torch, theirs, t_xs, weights),
        check_requires_grad=False,
    )


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"])
def test_without_create_graph_results_are_detached(name):
    x = tg.tensor(arrays_like([(2,)])[0], requires_grad=True)
    f = lambda x: (x**3).sum()
    fn = getattr(F, name)
    result = (
        fn(f, x)
        if name in ("jacobian", "hessian")
        else fn(f, x, tg.ones_like(f(x) if name == "vjp" else x))
    )
    assert not any(t.requires_grad for t in flat_tensors(result))


# --------------------------------------------------------------------------- strict mode and errors


def expect_same_error(call, torch, cls, phrase):
    """``call(lib)`` raises ``cls`` with ``phrase`` in its message, for torch and teachgrad."""
    for lib in (torch, tg):
        with pytest.raises(cls, match=re.escape(phrase)):
            call(lib)


def _strict(name, case_name, scalar=False, **kwargs):
    """``name(func, inputs, [v,] strict=True)`` for a case of FUNCS (or SCALAR_FUNCS);
    v is ones shaped like the outputs (vjp) or the inputs (jvp, vhp, hvp)."""
    func, shapes, as_tuple = (SCALAR_FUNCS if scalar else FUNCS)[case_name]
    arrays = arrays_like(shapes)

    def call(lib):
        xs = make(lib, arrays)
        v = ()
        if name == "vjp":
            outs = func(lib, *xs)
            ones = [lib.ones_like(o) for o in (outs if isinstance(outs, tuple) else (outs,))]
            v = (pack(ones, isinstance(outs, tuple)),)
        elif name in ("jvp", "vhp", "hvp"):
            v = (pack(xs, as_tuple),)
        fn = getattr(lib.autograd.functional, name)
        return fn(lambda *a: func(lib, *a), pack(xs, as_tuple), *v, strict=True, **kwargs)

    return call


def _strict_with_output_cut(name):
    """``name`` with strict=True on a function whose output is cut from the graph."""

    def call(lib):
        x = make(lib, [[1.0, 2.0]])[0]
        v = {"vjp": (lib.ones(()),), "jvp": (x,), "vhp": (x,), "hvp": (x,)}.get(name, ())
        fn = getattr(lib.autograd.functional, name)
        return fn(lambda x: (x.detach() ** 2).sum(), x, *v, strict=True)

    return call


STRICT_ERRORS = {  # name -> (call, the key phrase torch and teachgrad share)
    "vjp, unused input": (
        _strict("vjp", "an unused input"),
        "The output of the user-provided function is independent of input 1. This is not allowed in strict mode.",
    ),
    "jvp, unused input": (
        _strict("jvp", "an unused input"),
        "The output of the user-provided function is independent of input 1",
    ),
    "jvp, an output from another leaf": (
        _strict("jvp", "an output from another leaf"),
        "The gradient with respect to the input is independent of entry 1 in the grad_outputs when using the double backward trick",
    ),
    "jacobian, an output from another leaf": (
        _strict("jacobian", "an output from another leaf"),
        "Output 1 of the user-provided function is independent of input 0",
    ),
    "jacobian, unused input": (
        _strict("jacobian", "an unused input"),
        "of the user-provided function is independent of input 1. This is not allowed in strict mode.",
    ),
    "jacobian, output independent of an input": (
        _strict("jacobian", "an output independent of an input"),
        "Output 0 of the user-provided function is independent of input 1",
    ),
    "hessian, unused input": (  # the (non-strict) inner gradient has zeros for y: constant
        _strict("hessian", "an unused input", scalar=True),
        "found that the jacobian of the user-provided function with respect to input 1 is independent of the input",
    ),
    "hessian, linear in an input": (
        _strict("hessian", "linear in an input", scalar=True),
        "found that the jacobian of the user-provided function with respect to input 1 is independent of the input",
    ),
    "vhp, unused input": (
        _strict("vhp", "an unused input", scalar=True),
        "The output of the user-provided function is independent of input 1",
    ),
    "vhp, linear in an input": (
        _strict("vhp", "linear in an input", scalar=True),
        "found that the jacobian of the user-provided function with respect to input 1 is independent of the input",
    ),
    "hvp, linear in an input": (
        _strict("hvp", "linear in an input", scalar=True),
        "found that the jacobian of the user-provided function with respect to input 1 is independent of the input",
    ),
    "jacobian, linear, create_graph": (
        lambda lib: lib.autograd.functional.jacobian(
            lambda x: 2 * x, make(lib, [[1.0, 2.0]])[0], strict=True, create_graph=True
        ),
        "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.",
    ),
    "jvp, linear, create_graph": (
        lambda lib: lib.autograd.functional.jvp(
            lambda x: 2 * x, *make(lib, [[1.0, 2.0], [1.0, 1.0]]), strict=True, create_graph=True
        ),
        "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.",
    ),
    "vhp, constant Hessian, create_graph": (
        lambda lib: lib.autograd.functional.vhp(
            lambda x: (x * x).sum(),  # the Hessian 2 I is a constant
            *make(lib, [[1.0, 2.0], [1.0, 1.0]]),
            strict=True,
            create_graph=True,
        ),
        "The hessian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.",
    ),
    "hvp, constant Hessian, create_graph": (
        lambda lib: lib.autograd.functional.hvp(
            lambda x: (x * x).sum(),  # the Hessian 2 I is a constant
            *make(lib, [[1.0, 2.0], [1.0, 1.0]]),
            strict=True,
            create_graph=True,
        ),
        "The hessian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.",
    ),
    "vjp, linear, create_graph": (
        lambda lib: lib.autograd.functional.vjp(
            lambda x: 2 * x, *make(lib, [[1.0, 2.0], [1.0, 1.0]]), strict=True, create_graph=True
        ),
        "The jacobian of the user-provided function is independent of input 0. This is not allowed in strict mode when create_graph=True.",
    ),
}

for _name in ["vjp", "jvp", "jacobian", "hessian", "vhp", "hvp"]:
    STRICT_ERRORS[f"{_name}, output cut from the graph"] = (
        _strict_with_output_cut(_name),
        "Output 0 of the user-provided function does not require gradients",
    )


@pytest.mark.parametrize("call, phrase", STRICT_ERRORS.values(), ids=STRICT_ERRORS.keys())
def test_strict_mode_errors_match_torch(call, phrase, torch):
    expect_same_error(call, torch, RuntimeError, phrase)


@pytest.mark.parametrize("name", ["vjp", "jvp", "jacobian"])
def test_non_strict_gives_zeros_where_strict_raises(name, torch):
    """The calls that raise in strict mode give zeros for the unused input without it."""
    case = FUNCS["an unused input"]  # (x**2, x.sum()) of (x, y)
    arrays = arrays_like(case[1])

    def call(lib):
        xs = make(lib, arrays)
        v = {"vjp": tuple(lib.ones_like(o) for o in case[0](lib, *xs)), "jvp": xs}
        args = (v[name],) if name in v else ()
        return getattr(lib.autograd.functional, name)(lambda *a: case[0](lib, *a), xs, *args)

    ours, theirs = both(call, torch)
    assert_same(ours, theirs)
    if name == "vjp":  # d/dy of anything: zeros shaped like y
        np.testing.assert_array_equal(ours[1][1].cpu().numpy(), np.zeros(2))
    if name == "jacobian":  # J[output 1][input 1] = d x.sum() / dy
        np.testing.assert_array_equal(ours[1][1].cpu().numpy(), np.zeros(2))


def _x(lib, shape=(2,)):
    return make(lib, [np.ones(shape)])[0]


ERRORS = {  # name -> (call, exception class, the key phrase torch and teachgrad share)
    "inputs as a list": (
        lambda lib: functional("jacobian")(lib)(lambda x: x, [_x(lib)]),
        TypeError,
        "The inputs given to jacobian must be either a Tensor or a tuple of Tensors",
    ),
    "a number in the inputs": (
        lambda lib: functional("vjp")(lib)(lambda x, y: x * y, (_x(lib), 2.0), _x(lib)),
        TypeError,
        "The inputs given to vjp must be either a Tensor or a tuple of Tensors but the value at index 1",
    ),
    "func returns a list": (
        lambda lib: functional("jacobian")(lib)(lambda x: [x, x], _x(lib)),
        TypeError,
        "The outputs of the user-provided function given to jacobian must be either a Tensor or a tuple of Tensors",
    ),
    "v is a list": (
        lambda lib: functional("jvp")(lib)(lambda x: x, _x(lib), [_x(lib)]),
        TypeError,
        "The v given to jvp must be either a Tensor or a tuple of Tensors",
    ),
    "vjp without v": (
        lambda lib: functional("vjp")(lib)(lambda x: x * 2, _x(lib)),
        RuntimeError,
        "The vector v can only be None if the user-provided function returns a single Tensor with a single element.",
    ),
    "jvp without v": (
        lambda lib: functional("jvp")(lib)(lambda x: x.sum(), _x(lib)),
        RuntimeError,
        "The vector v can only be None if the input to the user-provided function is a single Tensor with a single element.",
    ),
    "vhp without v": (
        lambda lib: functional("vhp")(lib)(lambda x: x.sum(), (_x(lib, ()), _x(lib, ()))),
        RuntimeError,
        "The vector v can only be None if the input to the user-provided function is a single Tensor",
    ),
    "hvp without v": (
        lambda lib: functional("hvp")(lib)(lambda x: x.sum(), _x(lib)),
        RuntimeError,
        "The vector v can only be None if the input to the user-provided function is a single Tensor",
    ),
    "v of the wrong size": (
        lambda lib: functional("vjp")(lib)(lambda x: x * 2, _x(lib), _x(lib, (3,))),
        RuntimeError,
        "v has invalid size: should be ",
    ),
    "an entry of v of the wrong size": (
        lambda lib: functional("hvp")(lib)(
            lambda x, y: (x * y).sum(), (_x(lib), _x(lib)), (_x(lib), _x(lib, (2, 1)))
        ),
        RuntimeError,
        "Entry 1 in v has invalid size: should be ",
    ),
    "a tuple v of the wrong length": (
        lambda lib: functional("jvp")(lib)(lambda x, y: x * y, (_x(lib), _x(lib)), (_x(lib),)),
        RuntimeError,
        "v is a tuple of invalid length: should be 2 but got 1.",
    ),
    "a tuple v for one tensor": (
        lambda lib: functional("vhp")(lib)(lambda x: x.sum(), _x(lib), (_x(lib), _x(lib))),
        RuntimeError,
        "The given v should contain a single Tensor.",
    ),
    "hessian of a tuple-valued function": (
        lambda lib: functional("hessian")(lib)(lambda x: (x.sum(), x.sum()), _x(lib)),
        RuntimeError,
        "The function given to hessian should return a single Tensor",
    ),
    "vhp of a vector-valued function": (
        lambda lib: functional("vhp")(lib)(lambda x: x * 2, _x(lib), _x(lib)),
        RuntimeError,
        "The Tensor returned by the function given to vhp should contain a single element",
    ),
    "hvp of a tuple-valued function": (
        lambda lib: functional("hvp")(lib)(lambda x: (x.sum(),), _x(lib), _x(lib)),
        RuntimeError,
        "The function given to hvp should return a single Tensor",
    ),
    "hessian of a vector-valued function": (
        lambda lib: functional("hessian")(lib)(lambda x: x * 2, _x(lib)),
        RuntimeError,
        "The Tensor returned by the function given to hessian should contain a single element",
    ),
    "an unknown strategy": (
        lambda lib: functional("jacobian")(lib)(lambda x: x, _x(lib), strategy="sideways"),
        AssertionError,
        'Expected strategy to be either "forward-mode" or "reverse-mode".',
    ),
    "an unknown outer strategy": (
        lambda lib: functional("hessian")(lib)(
            lambda x: x.sum(), _x(lib), outer_jacobian_strategy="up"
        ),
        AssertionError,
        'Expected strategy to be either "forward-mode" or "reverse-mode".',
    ),
    "forward mode with create_graph": (
        lambda lib: functional("jacobian")(lib)(
            lambda x: x, _x(lib), create_graph=True, vectorize=True, strategy="forward-mode"
        ),
        NotImplementedError,
        '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet).',
    ),
    "forward mode without vectorize": (
        lambda lib: functional("jacobian")(lib)(lambda x: x, _x(lib), strategy="forward-mode"),
        NotImplementedError,
        "only implemented for `vectorize=True`.",
    ),
    "forward mode with strict": (
        lambda lib: functional("jacobian")(lib)(
            lambda x: x, _x(lib), strict=True, vectorize=True, strategy="forward-mode"
        ),
        RuntimeError,
        '`strict=True` and `strategy="forward-mode"` are not supported together (yet).',
    ),
    "vectorize with strict": (
        lambda lib: functional("jacobian")(lib)(
            lambda x: x * 2, _x(lib), strict=True, vectorize=True
        ),
        RuntimeError,
        "`strict=True` and `vectorized=True` are not supported together.",
    ),
    "forward-over-reverse hessian without vectorize": (
        lambda lib: functional("hessian")(lib)(
            lambda x: (x**3).sum(), _x(lib), outer_jacobian_strategy="forward-mode"
        ),
        NotImplementedError,
        "only implemented for `vectorize=True`.",
    ),
    "forward-over-reverse hessian with create_graph": (
        lambda lib: functional("hessian")(lib)(
            lambda x: (x**3).sum(),
            _x(lib),
            create_graph=True,
            vectorize=True,
            outer_jacobian_strategy="forward-mode",
        ),
        NotImplementedError,
        '`create_graph=True` and `strategy="forward-mode"` are not supported together (yet).',
    ),
}


@pytest.mark.parametrize("call, cls, phrase", ERRORS.values(), ids=ERRORS.keys())
def test_errors_match_torch(call, cls, phrase, torch):
    expect_same_error(call, torch, cls, phrase)


@pytest.mark.parametrize("call, cls, phrase", ERRORS.values(), ids=ERRORS.keys())
def test_errors_start_with_torchs_first_line(call, cls, phrase, torch):
    """The first line is torch's word for word (``teachgrad.`` for ``torch.``); teachgrad's
    explanation follows on the next lines."""
    first_lines = []
    for lib in (torch, tg):
        with pytest.raises(cls) as raised:
            call(lib)
        first_lines.append(str(raised.value).split("\n")[0].replace("torch.", "teachgrad."))
    assert first_lines[1] == first_lines[0]

"""Forward-mode AD: dual tensors, tangents pushed through every op, custom jvp, errors.

* the API (dual_level, make_dual, unpack_dual) behaves like torch's: one level,
  tangents dropped on exit, make_dual returns a view, the tangent's layout follows
  the primal, torch's errors;
* tangents equal torch's for programs mixing pointwise ops, reductions, matmul,
  views, joins, indexing and in-place changes (of tensors and of views);
* custom Functions: ``jvp`` with ``save_for_forward``, zeros for inputs without a
  tangent, torch's errors for a missing jvp or a wrong number of tangents;
* forward-over-reverse (a tangent pushed through backward) and reverse-over-forward
  (backward through a tangent) give second derivatives that match torch.

(Each op's jvp is also checked against numerical derivatives by the op tables,
which run ``gradcheck(check_forward_ad=True)`` for every op.)
"""

import re

import numpy as np
import pytest

import teachgrad as tg
import teachgrad.autograd.forward_ad as fwAD


def fw_of(lib):
    return lib.autograd.forward_ad


def tangent_of_program(lib, program, primals, tangents):
    """``program(lib, *duals)`` run in a dual level; its outputs' tangents as NumPy arrays."""
    fw = fw_of(lib)
    with fw.dual_level():
        duals = [
            fw.make_dual(lib.tensor(p), lib.tensor(t)) if t is not None else lib.tensor(p)
            for p, t in zip(primals, tangents)
        ]
        out = program(lib, *duals)
        outs = out if isinstance(out, tuple) else (out,)
        result = []
        for o in outs:
            primal, tangent = fw.unpack_dual(o)
            result.append(
                (
                    primal.detach().cpu().numpy(),
                    None if tangent is None else tangent.detach().cpu().numpy(),
                )
            )
    return result


def _inplace_on_view(lib, x, y):
    z = x * 1
    z[1:].mul_(y[1:])
    z[0] = y[0] * 3
    return z


def _setitem_into_plain(lib, x, y):
    q = lib.zeros(3, dtype=lib.float64)
    q[1:] = x[1:] * y[1:]
    return q


def _chain_of_in_place(lib, x, y):
    z = x.exp()
    z.add_(y, alpha=2).mul_(x).sub_(1).div_(y.abs() + 1)
    return z


def _view_of_updated_base(lib, x, y):
    z = x.clone()
    v = z[:2]
    z.mul_(y)  # v sees the new values, and so must its tangent
    return v * 1


PROGRAMS = {  # name -> (program(lib, x, y) with x, y of shape (3,), which inputs carry tangents)
    "pointwise": lambda lib, x, y: (x * y).sin() + x.exp() / y.abs().sqrt() - x**3 + 2**y,
    "activations": lambda lib, x, y: x.tanh() * y.sigmoid() + (x - y).relu() + x.clamp(-0.5, 0.5),
    "maximum and where": lambda lib, x, y: lib.maximum(x, y) + lib.where(x > y, x * y, 3.0),
    "reductions": lambda lib, x, y: (
        x.sum()
        + (x * y).mean()
        + x.prod()
        + x.var()
        + y.std()
        + x.amax()
        + x.logsumexp(0)
        + x.norm()
        + x.norm(p=1)
        + x.max(0).values
    ),
    "matmul": lambda lib, x, y: (lib.outer(x, y) @ x.unsqueeze(1)).squeeze() + x.dot(y),
    "views": lambda lib, x, y: (
        x.reshape(3, 1).expand(3, 2).t()[1] + y.unsqueeze(0).permute(1, 0).flatten()
    ),
    "cat, stack and indexing": lambda lib, x, y: (
        lib.cat([x, y])[[0, 5, 5]] + lib.stack([x, y], 1)[:, 1] + x[x > 0.5].sum()
    ),
    "in-place on a view": _inplace_on_view,
    "setitem into a tensor without a tangent": _setitem_into_plain,
    "a chain of in-place ops": _chain_of_in_place,
    "a view of a base changed in place": _view_of_updated_base,
    "unbind and split": lambda lib, x, y: x.unbind()[1] * y.split(2)[1].sum(),
    "several outputs": lambda lib, x, y: (x * y, (x - y).exp()),
}


@pytest.mark.parametrize("which", ["x", "y", "both"])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_tangents_match_torch(torch, name, which):
    rng = np.random.default_rng(3)
    x, y = rng.uniform(0.2, 1.5, 3), rng.uniform(0.3, 1.2, 3) * np.array([1, -1, 1])
    tx, ty = rng.standard_normal(3), rng.standard_normal(3)
    tangents = {"x": (tx, None), "y": (None, ty), "both": (tx, ty)}[which]
    ours = tangent_of_program(tg, PROGRAMS[name], (x, y), tangents)
    theirs = tangent_of_program(torch, PROGRAMS[name], (x, y), tangents)
    for (p, t), (p_ref, t_ref) in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(p, p_ref, rtol=1e-12)
        if t_ref is None or not np.any(t_ref):
            assert t is None or not np.any(t)  # torch may leave a zero tangent undefined
        else:
            np.testing.assert_allclose(t, t_ref, rtol=1e-10, atol=1e-12)


# --------------------------------------------------------------------------- the API


def test_tangents_live_only_inside_the_dual_level(torch):
    for lib in (tg, torch):
        fw = fw_of(lib)
        with fw.dual_level():
            y = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 0.0])).exp()
            assert fw.unpack_dual(y).tangent is not None
        assert fw.unpack_dual(y).tangent is None
        assert fw.unpack_dual(y).primal is y
        with fw.dual_level():  # a new level does not see the old tangents either
            assert fw.unpack_dual(y).tangent is None


def test_make_dual_returns_a_view_and_keeps_a_tangent_with_the_same_layout(torch):
    for lib in (tg, torch):
        fw = fw_of(lib)
        x, t = lib.ones(2, 3), lib.ones(2, 3)
        with fw.dual_level():
            d = fw.make_dual(x, t)
            assert d._base is x
            assert fw.unpack_dual(d).tangent is t
            t_transposed = lib.ones(3, 2).t()
            d2 = fw.make_dual(x, t_transposed)
            assert fw.unpack_dual(d2).tangent is not t_transposed
            assert fw.unpack_dual(d2).tangent.stride() == x.stride()
            primal = fw.unpack_dual(d).primal
            assert primal._base is x and fw.unpack_dual(primal).tangent is None


def test_unpacked_dual_is_a_namedtuple_like_torchs(torch):
    with fwAD.dual_level():
        out = fwAD.unpack_dual(fwAD.make_dual(tg.tensor(2.0), tg.tensor(1.0)) ** 2)
    assert out._fields == torch.autograd.forward_ad.UnpackedDualTensor._fields
    primal, tangent = out
    assert primal.item() == 4.0 and tangent.item() == 4.0


def test_dual_level_works_as_a_decorator():
    @fwAD.dual_level()
    def derivative_of_cube(x):
        return fwAD.unpack_dual(fwAD.make_dual(x, tg.ones_like(x)) ** 3).tangent

    assert derivative_of_cube(tg.tensor([2.0])).tolist() == [12.0]
    assert fwAD.state.level is None


ERRORS = {  # name -> (fn(lib), exception, torch's phrase)
    "make_dual outside a level": (
        lambda lib: fw_of(lib).make_dual(lib.ones(2), lib.ones(2)),
        RuntimeError,
        "no level exists, make sure to enter_dual_level() first",
    ),
    "nested levels": (
        lambda lib: _nested(lib),
        RuntimeError,
        "Nested forward mode AD is not supported at the moment",
    ),
    "tangent of another size": (
        lambda lib: _in_level(lib, lambda fw: fw.make_dual(lib.ones(3), lib.ones(4))),
        RuntimeError,
        "Tensor is of size [3] while the given forward gradient is of size [4]",
    ),
    "integer primal": (
        lambda lib: _in_level(lib, lambda fw: fw.make_dual(lib.arange(3), lib.arange(3))),
        ValueError,
        "Expected primal to be floating point or complex",
    ),
}


def _in_level(lib, fn):
    fw = fw_of(lib)
    with fw.dual_level():
        return fn(fw)


def _nested(lib):
    fw = fw_of(lib)
    with fw.dual_level(), fw.dual_level():
        pass


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors_like_torch(torch, name):
    fn, exc, phrase = ERRORS[name]
    for lib in (torch, tg):
        with pytest.raises(exc, match=re.escape(phrase)):
            fn(lib)
    assert fwAD.state.level is None  # a failed enter leaves the open level alone on exit


@pytest.mark.no_standin("compares printed text with torch's CPU tensors, which print no device")
def test_a_dual_tensor_prints_its_tangent(torch):
    for lib in (tg, torch):
        fw = fw_of(lib)
        with fw.dual_level():
            text = repr(fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([0.5, 0.5])))
        assert text == "tensor([1., 2.], tangent=tensor([0.5000, 0.5000]))"


def test_no_level_means_no_tangent_work():
    """Without a level, ops never look at tangents: a stale one is simply ignored."""
    x = tg.ones(2)
    x._fw_grad, x._fw_level = tg.ones(2), object()  # left over from some closed level
    assert fwAD.unpack_dual(x * 2).tangent is None


# --------------------------------------------------------------------------- custom Functions


def cube_with_jvp(lib):
    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            ctx.save_for_forward(x)
            ctx.k = k
            return k * x**3

        @staticmethod
        def backward(ctx, grad):
            raise AssertionError("forward mode never calls backward")

        @staticmethod
        def jvp(ctx, t, t_k):
            (x,) = ctx.saved_tensors
            assert t_k is None  # a number argument has no tangent
            return 3 * ctx.k * x**2 * t

    return Cube


def test_custom_function_jvp(torch):
    for lib in (tg, torch):
        fw = fw_of(lib)
        with fw.dual_level():
            x = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 0.5]))
            y = cube_with_jvp(lib).apply(x, 2.0)
            assert fw.unpack_dual(y).tangent.tolist() == [6.0, 12.0]


def test_custom_jvp_gets_zeros_for_a_tensor_input_without_tangent(torch):
    seen = {}
    for lib in (tg, torch):

        class Mul(lib.autograd.Function):
            @staticmethod
            def forward(ctx, a, b):
                ctx.save_for_forward(a, b)
                return a * b

            @staticmethod
            def jvp(ctx, ta, tb, name=lib.__name__):
                seen[name] = tb.tolist()
                a, b = ctx.saved_tensors
                return ta * b + a * tb

        fw = fw_of(lib)
        with fw.dual_level():
            a = fw.make_dual(lib.tensor([1.0, 2.0]), lib.tensor([1.0, 1.0]))
            out = Mul.apply(a, lib.tensor([3.0, 4.0]))
            assert fw.unpack_dual(out).tangent.tolist() == [3.0, 4.0]
    assert seen["teachgrad"] == seen["torch"] == [0.0, 0.0]


def test_custom_function_without_jvp_raises_torchs_error(torch):
    for lib in (tg, torch):

        class NoJvp(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x * 2

            @staticmethod
            def backward(ctx, g):
                return g * 2

        fw = fw_of(lib)
        with fw.dual_level(), pytest.raises(NotImplementedError, match="must implement the jvp"):
            NoJvp.apply(fw.make_dual(lib.ones(2), lib.ones(2)))


def test_jvp_returning_the_wrong_number_of_tangents_is_an_error():
    class Two(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def jvp(ctx, t):
            return t * 2

    with (
        fwAD.dual_level(),
        pytest.raises(RuntimeError, match="invalid number of forward gradients"),
    ):
        Two.apply(fwAD.make_dual(tg.ones(2), tg.ones(2)))


# --------------------------------------------------------------------------- mixed modes


def test_forward_over_reverse_gives_a_hessian_vector_product(torch):
    """The tangent of the gradient is H v."""
    x0, v = np.array([0.3, -1.2, 0.8]), np.array([1.0, 0.5, -2.0])
    results = []
    for lib in (tg, torch):
        fw = fw_of(lib)
        with fw.dual_level():
            x = fw.make_dual(lib.tensor(x0, requires_grad=True), lib.tensor(v))
            f = (x.sin() * x.exp()).sum() + (x * x).prod() + x.tanh().logsumexp(0)
            (g,) = lib.autograd.grad(f, x, create_graph=True)
            results.append(fw.unpack_dual(g).tangent.detach().cpu().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-10)


def test_reverse_over_forward_differentiates_a_tangent(torch):
    """The tangent is an ordinary differentiable function of the primal."""
    results = []
    for lib in (tg, torch):
        fw = fw_of(lib)
        p = lib.tensor([0.5, 1.5], dtype=lib.float64, requires_grad=True)
        with fw.dual_level():
            tangent = fw.unpack_dual(fw.make_dual(p, lib.ones(2, dtype=lib.float64)).sin()).tangent
            assert tangent.requires_grad
            (g,) = lib.autograd.grad(tangent.sum(), p)
        results.append(g.cpu().numpy())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)


@pytest.mark.parametrize(
    "op",
    ["mul_", "div_", "exp_", "sigmoid_", "tanh_", "sin_", "pow_"],
)
def test_forward_over_reverse_through_an_in_place_op_that_saved_the_old_value(op):
    """An in-place op's node saves the old value of x (a copy); in forward over reverse its
    tangent is the old tangent, which the op then overwrites in x: the copy keeps its own
    (mul_ gave a wrong second derivative before, where torch's gradgradcheck passes)."""
    x = tg.randn(3, dtype=tg.float64, requires_grad=True)
    y = tg.rand(3, dtype=tg.float64, requires_grad=True)
    call = {"pow_": lambda t, u: t.pow_(2) * u, "mul_": lambda t, u: t.mul_(u)}.get(
        op, lambda t, u: getattr(t, op)(*((u + 1,) if op == "div_" else ())) * u
    )
    assert tg.autograd.gradgradcheck(lambda a, b: call(a * 1, b), (x, y), check_fwd_over_rev=True)

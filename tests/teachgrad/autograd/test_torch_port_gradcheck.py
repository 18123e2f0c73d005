"""``gradcheck`` and ``gradgradcheck``, as PyTorch's own autograd tests (test_autograd.py:
test_gradcheck_single_input, test_gradcheck_nondeterministic, test_gradcheck_validates_inputs,
test_gradcheck_check_no_differentiable_outputs, test_gradcheck_backward_mul_by_grad_output,
test_gradcheck_undefined_grad, test_gradcheck_jacobian_mismatch,
test_gradcheck_output_shape_or_dtype_depend_on_values, test_gradcheck_custom_error,
test_gradcheck_forward_ad, test_gradcheck_forward_ad_runs_with_no_requires_grad,
test_gradcheck_forward_ad_respects_requires_grad, test_gradcheck_check_forward_or_backward_only,
test_gradcheck_forward_ad_batched_grad) check them, each in the fast and the slow mode.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts: whether the check passes, returns False or raises, and the error's
class and message. Left out: the sparse, MKL-DNN and complex cases, and the private
``get_numerical_jacobian`` / ``get_analytical_jacobian``.
"""

import importlib
import itertools

import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

FAST_MODE = pytest.mark.parametrize("fast_mode", [True, False], ids=["fast", "slow"])


def rand(lib, *shape, requires_grad=True):
    """Reproducible uniform numbers in float64, the same on both libraries."""
    return (port.randn(lib, *shape) * 0.3 + 0.5).detach().requires_grad_(requires_grad)


def grad_plus_a_bit(x):
    """``x.clone()`` whose backward adds 0.01 to the gradient: not multiplied by grad_output."""
    y = x.clone()
    y.register_hook(lambda g: g + 1e-2)
    return y


def non_deterministic(lib):
    """torch's NonDetFunc: the identity, whose backward multiplies by ``1 + jitter * rand``."""

    class NonDetFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, jitter=0.0):
            ctx._jitter = jitter
            return x

        @staticmethod
        def backward(ctx, grad_out):
            noise = 1 + lib.rand_like(grad_out) * ctx._jitter
            return NonDetFunc.apply(grad_out, ctx._jitter) * noise, None

    return NonDetFunc.apply


@FAST_MODE
def test_gradcheck_single_input(lib, fast_mode):
    def f(inp):
        return inp.mul(5)

    assert lib.autograd.gradcheck(f, rand(lib, 10), fast_mode=fast_mode)
    assert lib.autograd.gradgradcheck(f, rand(lib, 10), fast_mode=fast_mode)


@FAST_MODE
def test_gradcheck_nondeterministic(lib, fast_mode):
    gradcheck, gradgradcheck = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    f = non_deterministic(lib)
    inp = port.randn(lib, 5, 5, requires_grad=True)
    opts = dict(check_batched_grad=False, fast_mode=fast_mode)
    assert gradcheck(lambda x: f(x, 0.0), inp, **opts)
    with pytest.raises(RuntimeError, match="^Backward is not reentrant"):
        gradcheck(lambda x: f(x, 1e-6), inp, **opts)
    with pytest.raises(RuntimeError, match="^Backward is not reentrant"):
        gradgradcheck(lambda x: f(x, 1e-12), inp, **opts)
    assert gradcheck(lambda x: f(x, 0.0), inp, nondet_tol=1e-5, **opts)
    assert gradcheck(lambda x: f(x, 1e-6), inp, nondet_tol=1e-5, **opts)
    assert gradgradcheck(lambda x: f(x, 1e-12), inp, nondet_tol=1e-5, **opts)


@FAST_MODE
def test_gradcheck_validates_inputs(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    x = rand(lib, 10, requires_grad=False)  # none requires grad: raises even so
    with pytest.raises(
        ValueError, match="^gradcheck expects at least one input tensor to require gradient"
    ):
        gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)
    x = lib.ones(1, dtype=lib.float32, requires_grad=True)
    with pytest.warns(
        UserWarning, match="Input #0 requires gradient and is not a double precision"
    ):
        assert gradcheck(lambda x: x, (x,), atol=1e-1, fast_mode=fast_mode)
    x = lib.ones(1, dtype=lib.float64, requires_grad=True).expand((2, 2))
    with pytest.raises(RuntimeError, match="^The 0th input has a dimension with stride 0"):
        gradcheck(lambda x: x, (x,), raise_exception=False, fast_mode=fast_mode)


@FAST_MODE
def test_gradcheck_check_no_differentiable_outputs(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    x = lib.ones((1,), dtype=lib.float64, requires_grad=True)

    def not_differentiable(x):  # the same values, but no history
        return lib.tensor([x.item()], dtype=lib.float64)

    with pytest.raises(RuntimeError, match="^Numerical gradient for function expected to be zero"):
        gradcheck(not_differentiable, x, fast_mode=fast_mode)
    assert not gradcheck(not_differentiable, x, raise_exception=False, fast_mode=fast_mode)
    assert gradcheck(lambda x: (), (x,), fast_mode=fast_mode)  # no outputs at all: fine


@FAST_MODE
def test_gradcheck_backward_mul_by_grad_output(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    x = lib.ones(1, dtype=lib.float64, requires_grad=True)
    with pytest.raises(RuntimeError, match="^backward not multiplied by grad_output"):
        gradcheck(grad_plus_a_bit, (x,), atol=1e-1, fast_mode=fast_mode)
    assert not gradcheck(
        grad_plus_a_bit, (x,), atol=1e-1, raise_exception=False, fast_mode=fast_mode
    )


@FAST_MODE
def test_gradcheck_undefined_grad(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck

    def fn(x):
        def hook(g):
            if g is None:
                raise RuntimeError("x is undefined")

        y = x.clone()
        y.register_hook(hook)
        return y

    x = lib.ones(1, dtype=lib.float64, requires_grad=True)
    warning = "Backwards compatibility: New undefined gradient support checking feature"
    with (
        pytest.warns(UserWarning, match=warning),
        pytest.raises(
            RuntimeError, match="^Expected backward function to handle undefined output grads"
        ),
    ):
        gradcheck(fn, (x,), fast_mode=fast_mode)
    with pytest.warns(UserWarning, match=warning):
        assert not gradcheck(fn, (x,), raise_exception=False, fast_mode=fast_mode)


@FAST_MODE
def test_gradcheck_jacobian_mismatch(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    x = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
    with pytest.raises(
        RuntimeError, match="^Jacobian mismatch for output 0 with respect to input 0"
    ):
        gradcheck(grad_plus_a_bit, (x,), fast_mode=fast_mode)
    assert not gradcheck(grad_plus_a_bit, (x,), raise_exception=False, fast_mode=fast_mode)


@FAST_MODE
def test_gradcheck_output_shape_or_dtype_depend_on_values(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    a = lib.ones(1, dtype=lib.float64, requires_grad=True)

    def longer_at_one(x):
        return lib.cat([x, x]) if lib.all(x >= 1) else x

    def float32_at_one(x):
        return x.to(lib.float32) if lib.all(x >= 1) else x

    with pytest.raises(
        AssertionError,
        match="^Expected `func` to return outputs with the same shape when inputs are perturbed",
    ):
        gradcheck(longer_at_one, (a,), fast_mode=fast_mode)
    with pytest.raises(
        AssertionError,
        match="^Expected `func` to return outputs with the same dtype when inputs are perturbed",
    ):
        gradcheck(float32_at_one, (a,), fast_mode=fast_mode)


@FAST_MODE
def test_gradcheck_custom_error(lib, fast_mode):
    gradcheck = lib.autograd.gradcheck
    GradcheckError = importlib.import_module(f"{lib.__name__}.autograd.gradcheck").GradcheckError
    assert issubclass(GradcheckError, RuntimeError)
    x = lib.ones(2, 2, dtype=lib.float64, requires_grad=True)
    with pytest.raises(
        GradcheckError, match="^Jacobian mismatch for output 0 with respect to input 0"
    ):
        gradcheck(grad_plus_a_bit, (x,), fast_mode=fast_mode)
    assert not gradcheck(grad_plus_a_bit, (x,), raise_exception=False, fast_mode=fast_mode)

    def not_a_gradcheck_error(x):
        raise RuntimeError("Not a GradcheckError!")

    # raise_exception=False catches only gradcheck's own failures
    with pytest.raises(RuntimeError, match="^Not a GradcheckError!"):
        gradcheck(not_a_gradcheck_error, (x,), fast_mode=fast_mode, raise_exception=False)


# --------------------------------------------------------------------------- forward mode


@FAST_MODE
def test_gradcheck_forward_ad(lib, fast_mode):
    fwAD = lib.autograd.forward_ad

    def fn(x, y):
        return x + y, y

    def bad_fn(x, y):  # inside gradcheck's dual level: a tangent 10% too large
        y_p, y_d = fwAD.unpack_dual(y)
        if y_d is not None:
            y = fwAD.make_dual(y_p, y_d * 1.1)
        return x + y, y

    x, y = rand(lib, 2), rand(lib, 2)
    assert lib.autograd.gradcheck(fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)
    with pytest.raises(
        RuntimeError,
        match="^Jacobian computed with forward mode mismatch for output 0 with respect to input 1",
    ):
        lib.autograd.gradcheck(bad_fn, (x, y), check_forward_ad=True, fast_mode=fast_mode)


def clones_with_jvp(lib, seen=None, count=None):
    """torch's UserFn: ``(x.clone(), y.clone())`` with only a ``jvp``; ``seen`` collects
    whether forward's inputs require grad, ``count`` counts jvp calls."""

    class UserFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            if seen is not None:
                seen.append((x.requires_grad, y.requires_grad))
            return x.clone(), y.clone()

        @staticmethod
        def jvp(ctx, x_t, y_t):
            if count is not None:
                count.append(1)
            return x_t, y_t

    return UserFn.apply


FORWARD_ONLY = dict(check_forward_ad=True, check_backward_ad=False, check_batched_grad=False)


@pytest.mark.parametrize("check_undefined_grad", [False, True])
def test_gradcheck_forward_ad_runs_with_no_requires_grad(lib, check_undefined_grad):
    seen = []
    f = clones_with_jvp(lib, seen)
    x, y = rand(lib, 2), rand(lib, 2)
    assert lib.autograd.gradcheck(
        f, (x, y), check_undefined_grad=check_undefined_grad, **FORWARD_ONLY
    )
    # the numerical pass gives the inputs as they are; the forward-mode pass gives duals that
    # do not require grad (requires_grad only tells gradcheck which inputs to differentiate)
    assert set(seen) == {(True, True), (False, False)}


def test_gradcheck_forward_ad_respects_requires_grad(lib):
    count = []
    f = clones_with_jvp(lib, count=count)
    x, y = rand(lib, 1), rand(lib, 1)  # one element: fast and slow mode count the same
    lib.autograd.gradcheck(f, (x, y), check_undefined_grad=False, **FORWARD_ONLY)
    assert len(count) == 2  # once per input
    count.clear()
    lib.autograd.gradcheck(f, (x, y), check_undefined_grad=True, **FORWARD_ONLY)
    assert len(count) == 6  # + once with zero tangents, once with undefined ones, per input


@pytest.mark.parametrize(
    "fast_mode, check_forward_ad, check_backward_ad, fwd_bad, bwd_bad",
    list(itertools.product([True, False], repeat=5)),
)
def test_gradcheck_check_forward_or_backward_only(
    lib, fast_mode, check_forward_ad, check_backward_ad, fwd_bad, bwd_bad
):
    class UserFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, foo, fwd_bad, bwd_bad):
            ctx.fwd_bad = fwd_bad
            ctx.bwd_bad = bwd_bad
            return foo * 2

        @staticmethod
        def vjp(ctx, gO):
            if ctx.bwd_bad:
                raise RuntimeError("FAIL BWD")
            return 2 * gO, None, None

        @staticmethod
        def jvp(ctx, gI, _1, _2):
            if ctx.fwd_bad:
                raise RuntimeError("FAIL FWD")
            return 2 * gI

    def run():
        return lib.autograd.gradcheck(
            UserFn.apply,
            (rand(lib, 2), fwd_bad, bwd_bad),
            check_forward_ad=check_forward_ad,
            check_backward_ad=check_backward_ad,
            check_undefined_grad=check_backward_ad,
            check_batched_grad=False,
            fast_mode=fast_mode,
        )

    if not check_forward_ad and not check_backward_ad:
        with pytest.raises(AssertionError, match="^Expected at least one of"):
            run()
    elif bwd_bad and check_backward_ad:  # a failing backward hides a failing forward
        with pytest.raises(RuntimeError, match="^FAIL BWD"):
            run()
    elif fwd_bad and check_forward_ad:
        with pytest.raises(RuntimeError, match="^FAIL FWD"):
            run()
    else:
        assert run()


@pytest.mark.parametrize("fast_mode", [False, True])
def test_an_output_whose_shape_depends_on_the_input_s_values(fast_mode):
    """func's output has fewer elements once an input is nudged: torch's error where its own
    check meets the mismatch (its first line), with what it means."""

    def program(lib):
        x = lib.tensor([0.2, 0.4, 0.6], dtype=lib.float64, requires_grad=True)
        original = x.detach().clone()

        def func(x):
            return x * 2 if lib.equal(x.detach(), original) else x[:2] * 2

        return lib.autograd.gradcheck(func, (x,), fast_mode=fast_mode)

    assert_like_torch(program)

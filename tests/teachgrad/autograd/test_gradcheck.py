"""gradcheck and gradgradcheck: they pass right gradients, catch wrong ones, and explain why.

The custom Functions below are written once against a library module ``lib`` (teachgrad
or torch, whose APIs match), so the same wrong backward can be fed to both and the
verdicts compared: torch is the oracle where it is installed.
"""

import importlib
import re
import sys
import warnings

import pytest

import teachgrad as tg
from teachgrad.autograd import GradcheckError, gradcheck, gradgradcheck
from tests import needs

# --------------------------------------------------------------------------- test Functions


def square_function(lib, backward):
    """y = x * x, with the given ``backward(x, grad)``; the right one is 2 * x * grad."""

    class Square(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return backward(lib, x, grad)

    return Square


RIGHT = lambda lib, x, g: 2 * x * g
WRONG_BACKWARDS = {  # name -> (backward, the hint the failure message must contain)
    "factor 2": (lambda lib, x, g: 4 * x * g, "off by a factor of 2 (too large)"),
    "half": (lambda lib, x, g: x * g, "off by a factor of 2 (too small)"),
    "sign": (lambda lib, x, g: -2 * x * g, "sign error"),
    "zero": (lambda lib, x, g: lib.zeros_like(x), "all zeros"),
    "constant factor": (lambda lib, x, g: 3 * x * g, "constant factor"),
}


def matvec_function(lib, transpose_in_backward):
    """y = W @ x for a fixed non-symmetric W; the right backward is W.T @ grad."""
    W = lib.tensor([[1.0, 2.0, 0.0], [0.0, 3.0, 1.0], [4.0, 0.0, 5.0]], dtype=lib.float64)

    class MatVec(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return W @ x

        @staticmethod
        def backward(ctx, grad):
            return (W.T if transpose_in_backward else W) @ grad

    return MatVec


def cube_function(lib, detach_in_backward):
    """y = x ** 3 with a correct first derivative; detaching x breaks the second one."""

    class Cube(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x * x

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            if detach_in_backward:
                x = x.detach()
            return 3 * x * x * grad

    return Cube


def drifting_function(lib):
    """y = 2 x, but backward drifts a little on every call: it is not reentrant."""
    calls = []

    class Drifting(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            calls.append(None)
            return grad * (2 + 1e-9 * len(calls))

    return Drifting


def ignores_grad_output_function(lib):
    """y = sum(x * x), but backward forgets "* grad" (invisible while grad is 1)."""

    class SumOfSquares(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return (x * x).sum()

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return 2 * x

    return SumOfSquares


def x64(lib, values, requires_grad=True):
    return lib.tensor(values, dtype=lib.float64, requires_grad=requires_grad)


X = [0.5, -1.25, 2.0]


# --------------------------------------------------------------------------- right gradients pass


def test_correct_custom_function_passes():
    Square = square_function(tg, RIGHT)
    assert gradcheck(Square.apply, (x64(tg, X),)) is True
    assert gradcheck(Square.apply, x64(tg, X)) is True  # a bare tensor is one input


def test_builtin_ops_pass_with_several_inputs_outputs_and_non_tensor_arguments():
    tg.manual_seed(0)
    a = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    b = tg.randn(4, 2, dtype=tg.float64, requires_grad=True)
    c = tg.randn(2, dtype=tg.float64)  # does not require grad: not checked, still used

    def f(a, b, c, k):
        y = (a @ b).tanh() * k + c
        return y, (a.exp() * 2).sum(), a.argmax()  # an integer output is ignored

    assert gradcheck(f, (a, b, c, 3.0))
    assert gradcheck(f, (a, b, c, 3.0), fast_mode=True)


def test_only_inputs_that_require_grad_are_checked():
    x = x64(tg, X)
    y = x64(tg, X, requires_grad=False)
    assert gradcheck(lambda x, y: x * y, (x, y))


def test_inputs_are_restored_exactly_and_left_without_grad():
    x = x64(tg, X)
    before, version = x.detach().clone(), x._version
    gradcheck(lambda x: (x * x).sin(), (x,))
    gradcheck(lambda x: (x * x).sin(), (x,), fast_mode=True)
    gradgradcheck(lambda x: (x * x).sin(), (x,))
    assert x.tolist() == before.tolist()
    assert x._version == version  # perturbing through the array does not count as a write
    assert x.grad is None  # gradcheck uses autograd.grad, never .backward()


def test_non_contiguous_input_is_perturbed_correctly():
    x = tg.randn(4, 3, dtype=tg.float64).T.requires_grad_()
    assert not x.is_contiguous()
    assert gradcheck(lambda x: x * x.sum(0, keepdim=True), (x,))


def test_output_that_is_the_input_itself():
    assert gradcheck(lambda x: x, (x64(tg, X),))


def test_constant_function_without_differentiable_outputs_passes():
    assert gradcheck(lambda x: tg.zeros(3, dtype=tg.float64), (x64(tg, X),))


def test_fast_mode_does_not_touch_the_global_random_generator():
    tg.manual_seed(0)
    expected = tg.randn(3).tolist()
    tg.manual_seed(0)
    gradcheck(lambda x: x.sin(), (x64(tg, X),), fast_mode=True)
    assert tg.randn(3).tolist() == expected


# --------------------------------------------------------------------------- wrong gradients fail


@pytest.mark.parametrize("name", WRONG_BACKWARDS)
def test_wrong_backward_fails_with_torch_phrase_both_jacobians_and_the_right_hint(name):
    backward, hint = WRONG_BACKWARDS[name]
    Square = square_function(tg, backward)
    with pytest.raises(GradcheckError) as info:
        gradcheck(Square.apply, (x64(tg, X),))
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0," in message
    assert "numerical (eps=1e-06):" in message and "analytical (* = outside tolerance):" in message
    assert "max abs error" in message and "atol=1e-05, rtol=0.001" in message
    assert "hint: " in message and hint in message, message
    assert (info.value.output_index, info.value.input_index) == (0, 0)


def test_small_jacobians_are_printed_in_full_side_by_side():
    Square = square_function(tg, WRONG_BACKWARDS["factor 2"][0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(Square.apply, (x64(tg, X),))
    lines = str(info.value).splitlines()
    header = next(i for i, line in enumerate(lines) if "numerical (eps" in line)
    rows = lines[header + 1 : header + 4]
    # numerical diag(2x) on the left, analytical diag(4x) on the right; bad entries starred
    assert [re.findall(r"-?\d+(?:\.\d+)?\*?", row) for row in rows] == [
        ["1", "0", "0", "2*", "0", "0"],
        ["0", "-2.5", "0", "0", "-5*", "0"],
        ["0", "0", "4", "0", "0", "8*"],
    ]
    assert "3 of 9 entries break the tolerance" in str(info.value)


def test_large_jacobians_are_summarised_by_their_worst_entries():
    Square = square_function(tg, WRONG_BACKWARDS["factor 2"][0])
    x = x64(tg, [float(i + 1) for i in range(10)])
    with pytest.raises(GradcheckError) as info:
        gradcheck(Square.apply, (x,))
    message = str(info.value)
    assert "too large to print; the 10 worst of 10 mismatching entries" in message
    worst = next(line for line in message.splitlines() if line.strip().startswith("9     9"))
    # row 9 = output[9], col 9 = input[9]: numerical 2 * 10, analytical 4 * 10
    assert worst.split() == ["9", "9", "[9]", "[9]", "20", "40", "20"]
    assert "off by a factor of 2" in message


def test_transposed_gradient_is_recognised():
    MatVec = matvec_function(tg, transpose_in_backward=False)
    with pytest.raises(GradcheckError, match="gradient is transposed"):
        gradcheck(MatVec.apply, (x64(tg, X),))
    assert gradcheck(matvec_function(tg, transpose_in_backward=True).apply, (x64(tg, X),))


def test_values_in_the_wrong_places_are_recognised():
    class Transpose(tg.autograd.Function):  # y = x.T, but backward forgets to transpose back
        @staticmethod
        def forward(ctx, x):
            return x.T.contiguous()

        @staticmethod
        def backward(ctx, grad):
            return grad

    x = tg.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=tg.float64, requires_grad=True)
    with pytest.raises(GradcheckError, match="right values in the wrong places"):
        gradcheck(Transpose.apply, (x,))


def test_kink_hint_when_only_one_entry_differs():
    x = x64(tg, [0.0, 1.0, -1.0])  # relu is not differentiable at 0
    with pytest.raises(GradcheckError, match="only a few entries differ") as info:
        gradcheck(tg.relu, (x,))
    assert "1 of 9 entries break the tolerance" in str(info.value)


def test_mismatch_names_the_right_input_and_lists_other_bad_pairs():
    class MulWrongForB(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a, b):
            ctx.save_for_backward(a, b)
            return a * b, a + b

        @staticmethod
        def backward(ctx, g1, g2):
            a, b = ctx.saved_tensors
            return g1 * b + g2, -g1 * a + g2  # the gradient for b has the wrong sign

    a, b = x64(tg, X), x64(tg, [1.0, 2.0, 3.0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(MulWrongForB.apply, (a, b))
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 1," in message
    assert "input 1:  func's input #1, shape (3,)" in message
    assert "sign error" in message
    assert (info.value.output_index, info.value.input_index) == (0, 1)


def test_raise_exception_false_returns_false():
    Square = square_function(tg, WRONG_BACKWARDS["sign"][0])
    assert gradcheck(Square.apply, (x64(tg, X),), raise_exception=False) is False
    assert gradcheck(Square.apply, (x64(tg, X),), raise_exception=False, fast_mode=True) is False


# --------------------------------------------------------------------------- fast mode


def test_fast_mode_passes_a_right_backward():
    assert gradcheck(square_function(tg, RIGHT).apply, (x64(tg, X),), fast_mode=True)
    assert gradcheck(matvec_function(tg, True).apply, (x64(tg, X),), fast_mode=True)


@pytest.mark.parametrize("name", WRONG_BACKWARDS)
def test_fast_mode_catches_a_wrong_backward(name):
    Square = square_function(tg, WRONG_BACKWARDS[name][0])
    with pytest.raises(GradcheckError) as info:
        gradcheck(Square.apply, (x64(tg, X),), fast_mode=True)
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0," in message
    assert "v^T J u" in message and "Mismatching projections: (output 0, input 0)." in message
    assert "fast_mode=False" in message
    # the full Jacobians for the failing pair are recomputed and explained too
    assert "recomputed without fast mode" in message and WRONG_BACKWARDS[name][1] in message


def test_fast_mode_catches_a_transposed_gradient():
    MatVec = matvec_function(tg, transpose_in_backward=False)
    with pytest.raises(GradcheckError, match="gradient is transposed"):
        gradcheck(MatVec.apply, (x64(tg, X),), fast_mode=True)


# --------------------------------------------------------------------------- other checks


def test_non_double_input_warns():
    x = tg.tensor(X, dtype=tg.float32, requires_grad=True)
    with pytest.warns(
        UserWarning, match="Input #0 requires gradient and is not a double precision"
    ):
        gradcheck(lambda x: x * 2, (x,), eps=1e-2, atol=1e-2, raise_exception=False)


def test_double_inputs_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcheck(lambda x: x * 2, (x64(tg, X),))


def test_no_input_requiring_grad_is_a_value_error():
    with pytest.raises(ValueError, match="gradcheck expects at least one input tensor to require"):
        gradcheck(lambda x: x * 2, (x64(tg, X, requires_grad=False),))


def test_non_reentrant_backward_is_reported():
    Drifting = drifting_function(tg)
    with pytest.raises(GradcheckError, match="Backward is not reentrant"):
        gradcheck(Drifting.apply, (x64(tg, X),))
    assert gradcheck(Drifting.apply, (x64(tg, X),), nondet_tol=1e-3)


def test_backward_that_ignores_grad_output_is_reported():
    SumOfSquares = ignores_grad_output_function(tg)
    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        gradcheck(SumOfSquares.apply, (x64(tg, X),))


def test_backward_that_cannot_take_an_undefined_grad_is_reported():
    Square = square_function(tg, RIGHT)

    class NoneUnsafe(Square):  # its backward, 2 * x * grad, fails when grad is None
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return Square.forward(ctx, x)

    class NoneRefused(Square):  # its backward raises a RuntimeError when grad is None
        @staticmethod
        def forward(ctx, x):
            ctx.set_materialize_grads(False)
            return Square.forward(ctx, x)

        @staticmethod
        def backward(ctx, grad):
            if grad is None:
                raise RuntimeError("no gradient")
            return Square.backward(ctx, grad)

    x = x64(tg, X)
    # as in torch, a RuntimeError from backward becomes a GradcheckError (raise_exception=False
    # gives False), after a warning; any other error (here a TypeError) escapes as it is
    with pytest.warns(UserWarning, match="New undefined gradient support checking"):
        with pytest.raises(GradcheckError, match="Expected backward function to handle undefined"):
            gradcheck(NoneRefused.apply, (x,))
        assert gradcheck(NoneRefused.apply, (x,), raise_exception=False) is False
    with pytest.raises(TypeError):
        gradcheck(NoneUnsafe.apply, (x,))
    assert gradcheck(NoneUnsafe.apply, (x,), check_undefined_grad=False)


def test_outputs_detached_inside_func_are_reported():
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        gradcheck(lambda x: x.detach() * 2, (x64(tg, X),))
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        gradcheck(lambda x: x.detach() * 2, (x64(tg, X),), fast_mode=True)


def test_input_with_stride_zero_is_refused():
    x = tg.randn(1, dtype=tg.float64).expand(3).requires_grad_()
    with pytest.raises(RuntimeError, match="has a dimension with stride 0"):
        gradcheck(lambda x: x * 2, (x,))


def test_batched_grad_and_grad_dtype_checks_pass_for_builtin_ops():
    x = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    f = lambda x: (x @ x.T).sin()
    assert gradcheck(f, (x,), check_batched_grad=True, check_grad_dtypes=True)
    assert gradgradcheck(f, (x,), check_batched_grad=True, check_grad_dtypes=True)


def test_masked_must_be_none_or_false():
    assert gradcheck(lambda x: x * 2, (x64(tg, X),), masked=False)
    with pytest.raises(NotImplementedError, match="sparse"):
        gradcheck(lambda x: x * 2, (x64(tg, X),), masked=True)


def square_with_jvp(lib, jvp):
    """y = x * x with the right backward and the given ``jvp(x, tangent)`` (right: 2 * x * t)."""

    Base = square_function(lib, RIGHT)

    class Square(Base):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            return Base.forward(ctx, x)

        @staticmethod
        def jvp(ctx, t):
            (x,) = ctx.saved_tensors
            return jvp(x, t)

    return Square


@pytest.mark.parametrize("fast_mode", [False, True])
def test_forward_mode_check_passes_right_tangents_and_catches_wrong_ones(torch, fast_mode):
    a, b = x64(tg, X), x64(tg, [[1.0, 2.0, 3.0]])
    f = lambda a, b: (a * b).sin() + a.exp()
    kwargs = dict(check_forward_ad=True, check_backward_ad=False, fast_mode=fast_mode)
    assert gradcheck(f, (a, b), **kwargs)
    assert gradgradcheck(f, (a, b), check_fwd_over_rev=True, fast_mode=fast_mode)
    assert gradcheck(square_with_jvp(tg, lambda x, t: 2 * x * t).apply, (x64(tg, X),), **kwargs)
    # a wrong jvp fails in both libraries, with the same words, while backward is right
    for lib, error in (
        (tg, GradcheckError),
        (torch, importlib.import_module("torch.autograd.gradcheck").GradcheckError),
    ):
        Square = square_with_jvp(lib, lambda x, t: -2 * x * t)
        with pytest.raises(error, match="with forward mode mismatch"):
            lib.autograd.gradcheck(Square.apply, (x64(lib, X),), **kwargs)
        assert lib.autograd.gradcheck(Square.apply, (x64(lib, X),))  # reverse mode alone passes


def test_invalid_option_combinations_are_assertion_errors_like_torch():
    with pytest.raises(AssertionError):
        gradcheck(lambda x: x, (x64(tg, X),), check_backward_ad=False)
    with pytest.raises(AssertionError):
        gradgradcheck(lambda x: x, (x64(tg, X),), check_rev_over_rev=False)


# --------------------------------------------------------------------------- gradgradcheck


def test_gradgradcheck_passes_for_builtin_ops_and_a_right_double_backward():
    tg.manual_seed(0)
    a = tg.randn(2, 3, dtype=tg.float64, requires_grad=True)
    b = tg.randn(3, dtype=tg.float64, requires_grad=True)
    assert gradgradcheck(lambda a, b: ((a * b).sin(), (a @ b).exp()), (a, b))
    assert gradgradcheck(cube_function(tg, detach_in_backward=False).apply, (x64(tg, X),))
    assert gradgradcheck(lambda a: a * a * a, (a,), fast_mode=True)
    assert gradgradcheck(lambda a: a * a * a, (a,), gen_non_contig_grad_outputs=True)


def test_gradgradcheck_fails_when_backward_detaches():
    Cube = cube_function(tg, detach_in_backward=True)
    x = x64(tg, X)
    assert gradcheck(Cube.apply, (x,))  # first derivatives are right ...
    with pytest.raises(GradcheckError) as info:  # ... second derivatives are not
        gradgradcheck(Cube.apply, (x,))
    message = str(info.value)
    assert "Jacobian mismatch for output 0 with respect to input 0," in message
    assert "all zeros" in message  # d(grad)/dx is 0 once x is detached
    assert "inputs are, in order: inputs[0], grad_outputs[0]" in message
    assert gradgradcheck(Cube.apply, (x,), raise_exception=False) is False
    assert gradgradcheck(Cube.apply, (x,), fast_mode=True, raise_exception=False) is False


def test_gradgradcheck_with_given_grad_outputs():
    x = x64(tg, X)
    v = x64(tg, [1.0, -2.0, 0.5])
    assert gradgradcheck(lambda x: x.exp() * x, (x,), (v,))


def test_gradgradcheck_draws_grad_outputs_from_the_default_generator():
    def run():
        tg.manual_seed(123)
        gradgradcheck(lambda x: x * x, (x64(tg, X),))
        return tg.rand(3).tolist()  # the next draw after gradgradcheck

    tg.manual_seed(123)
    untouched = tg.rand(3).tolist()
    assert run() != untouched  # gradgradcheck drew its grad_outputs from the default generator
    assert run() == run()  # ... so manual_seed makes it repeat


# --------------------------------------------------------------------------- torch as the oracle


def _cases(lib):
    """(name, func, inputs) triples built the same way for teachgrad and torch."""
    cases = [("right", square_function(lib, RIGHT).apply, (x64(lib, X),))]
    cases += [
        (name, square_function(lib, backward).apply, (x64(lib, X),))
        for name, (backward, _) in WRONG_BACKWARDS.items()
    ]
    cases += [
        ("matvec transposed", matvec_function(lib, False).apply, (x64(lib, X),)),
        ("matvec right", matvec_function(lib, True).apply, (x64(lib, X),)),
        ("relu kink", lib.relu, (x64(lib, [0.0, 1.0, -1.0]),)),
        (
            "tanh matmul",
            lambda a, b: (a @ b).tanh(),
            (x64(lib, [[1.0, 2.0]]), x64(lib, [[0.5], [-1.0]])),
        ),
    ]
    return cases


@pytest.mark.parametrize("fast_mode", [False, True])
@pytest.mark.parametrize("index", range(len(_cases(tg))))
def test_gradcheck_verdict_matches_torch(index, fast_mode):
    torch = needs.oracle()
    name, f, inputs = _cases(tg)[index]
    t_name, t_f, t_inputs = _cases(torch)[index]
    expected = torch.autograd.gradcheck(t_f, t_inputs, fast_mode=fast_mode, raise_exception=False)
    assert gradcheck(f, inputs, fast_mode=fast_mode, raise_exception=False) == expected, name


@pytest.mark.parametrize("detach", [False, True])
def test_gradgradcheck_verdict_matches_torch(detach):
    torch = needs.oracle()
    expected = torch.autograd.gradgradcheck(
        cube_function(torch, detach).apply, (x64(torch, X),), raise_exception=False
    )
    got = gradgradcheck(cube_function(tg, detach).apply, (x64(tg, X),), raise_exception=False)
    assert got == expected


def test_error_phrases_match_torch():
    torch = needs.oracle()
    torch_error = sys.modules["torch.autograd.gradcheck"].GradcheckError
    for lib, check, error in (
        (torch, torch.autograd.gradcheck, torch_error),
        (tg, gradcheck, GradcheckError),
    ):
        Square = square_function(lib, WRONG_BACKWARDS["sign"][0])
        with pytest.raises(error, match="Jacobian mismatch for output 0 with respect to input 0,"):
            check(Square.apply, (x64(lib, X),))
        with pytest.raises(
            ValueError, match="gradcheck expects at least one input tensor to require"
        ):
            check(lambda x: x, (x64(lib, X, requires_grad=False),))
        with pytest.warns(
            UserWarning, match="Input #0 requires gradient and is not a double precision"
        ):
            check(lambda x: x * 2, (lib.tensor(X, requires_grad=True),), eps=1e-2, atol=1e-2)


def test_numerical_jacobian_matches_torch():
    torch = needs.oracle()
    from teachgrad.autograd.gradcheck import _numerical_jacobians

    W = [[1.0, -2.0, 0.5], [0.0, 1.5, 2.0]]
    f_tg = lambda x: (x64(tg, W, requires_grad=False) @ x).sin()
    f_torch = lambda x: (x64(torch, W, requires_grad=False) @ x).sin()
    x = x64(tg, X)
    (J,) = _numerical_jacobians(f_tg, (x,), (f_tg(x),), x, [0], 1e-6)  # (x nudged by eps 1e-6)
    expected = torch.autograd.functional.jacobian(f_torch, x64(torch, X))
    assert J.shape == (2, 3)  # rows: output elements, columns: input elements
    J = tg.as_tensor(J).cpu().numpy()  # (an array on the tensors' device)
    assert torch.allclose(torch.from_numpy(J), expected, atol=1e-8)


FAILURE_KINDS = {  # name -> (build(lib) -> (func, inputs), error class name, torch's phrase)
    "not reentrant": (
        lambda lib: (drifting_function(lib).apply, (x64(lib, X),)),
        "GradcheckError",
        "Backward is not reentrant",
    ),
    "ignores grad_output": (
        lambda lib: (ignores_grad_output_function(lib).apply, (x64(lib, X),)),
        "GradcheckError",
        "backward not multiplied by grad_output",
    ),
    "detached output": (
        lambda lib: (lambda x: x.detach() * 2, (x64(lib, X),)),
        "GradcheckError",
        "Numerical gradient for function expected to be zero",
    ),
    "stride 0": (
        lambda lib: (lambda x: x * 2, (x64(lib, [1.0], False).expand(3).requires_grad_(),)),
        "RuntimeError",
        "The 0th input has a dimension with stride 0",
    ),
    "nothing requires grad": (
        lambda lib: (lambda x: x * 2, (x64(lib, X, False),)),
        "ValueError",
        "gradcheck expects at least one input tensor to require gradient",
    ),
}


@pytest.mark.parametrize("kind", FAILURE_KINDS)
def test_failure_kinds_match_torch(kind):
    torch = needs.oracle()
    build, error_name, phrase = FAILURE_KINDS[kind]
    for lib, check in ((torch, torch.autograd.gradcheck), (tg, gradcheck)):
        func, inputs = build(lib)
        with pytest.raises(Exception) as info:
            check(func, inputs)
        assert type(info.value).__name__ == error_name, (lib.__name__, info.value)
        assert phrase in str(info.value), (lib.__name__, info.value)


# ------------------------------------------- torch's deprecated get_numerical/analytical_jacobian
_PRIVATE = "^`get_{}_jacobian` was part of PyTorch's private API and not meant to be exposed"


def _jacobian_helpers(lib):
    module = importlib.import_module(f"{lib.__name__}.autograd.gradcheck")  # (not the function)
    return module.get_numerical_jacobian, module.get_analytical_jacobian


def test_the_jacobian_helpers_return_torchs_layout_and_agree(lib):
    """Both in torch's layout (rows: input elements), for every input requiring grad; the
    numerical one for fn's first output only, and for a ``target`` fn only closes over."""
    numerical, analytical = _jacobian_helpers(lib)
    x = x64(lib, X)
    W = x64(lib, [[1.0, -2.0, 0.5], [0.0, 1.5, 2.0]])
    fn = lambda inputs: ((W @ inputs[0]).sin(), inputs[0])  # (the second output is ignored)
    with pytest.warns(FutureWarning, match=_PRIVATE.format("numerical")):
        J_x = numerical(fn, (x, 3, x64(lib, X, requires_grad=False)), eps=1e-6)
    with pytest.warns(FutureWarning):
        (J_W,) = numerical(fn, (x,), target=(W,), eps=1e-6)
    y = fn((x,))[0]
    with pytest.warns(FutureWarning, match=_PRIVATE.format("analytical")):
        (A_x, A_W), reentrant, dtypes_ok, sizes_ok = analytical((x, 3, W), y)
    assert type(J_x) is tuple and len(J_x) == 1 and reentrant and dtypes_ok and sizes_ok
    assert [tuple(J.shape) for J in (J_x[0], J_W, A_x, A_W)] == [(3, 2), (6, 2), (3, 2), (6, 2)]
    assert all(J.dtype == lib.float64 and J.is_contiguous() for J in (J_x[0], J_W, A_x, A_W))
    assert lib.allclose(J_x[0], A_x, atol=1e-8) and lib.allclose(J_W, A_W, atol=1e-8)
    expected = lib.autograd.functional.jacobian(lambda x: (W.detach() @ x).sin(), x.detach())
    assert lib.allclose(A_x, expected.T)


def test_the_jacobian_helpers_numbers_match_torch(torch):
    fn = lambda lib: lambda inputs: (inputs[0] * inputs[1]).exp()
    x, y = ([[0.5, -1.0], [2.0, 0.25]], [1.5, -0.5])
    J = {}
    for lib in (tg, torch):
        numerical, analytical = _jacobian_helpers(lib)
        inputs = (x64(lib, x), x64(lib, y))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            J[lib] = (
                *numerical(fn(lib), inputs),  # (eps 1e-3: the same differences as torch's)
                *analytical(inputs, fn(lib)(inputs))[0],
            )
    for mine, theirs in zip(J[tg], J[torch], strict=True):
        assert torch.allclose(torch.from_numpy(mine.cpu().numpy()), theirs, rtol=1e-12, atol=1e-12)


def test_the_analytical_helper_reports_a_non_reentrant_backward(lib):
    """A flag where gradcheck raises: ``(J, reentrant, dtypes_ok, sizes_ok)``, as torch orders
    them (the last two hold whenever autograd.grad returns: the engine already casts and
    checks each gradient); an unused input's Jacobian is zeros."""
    _, analytical = _jacobian_helpers(lib)
    x, unused = x64(lib, X), x64(lib, [1.0])
    for nondet_tol, reentrant in ((1e-12, False), (1e-3, True)):  # (it drifts by 1e-9 a call)
        with pytest.warns(FutureWarning):
            (J, J_unused), *flags = analytical(
                (x, unused), drifting_function(lib).apply(x), nondet_tol=nondet_tol
            )
        assert flags == [reentrant, True, True]
        assert J.dtype == lib.float64 and J_unused.tolist() == [[0.0, 0.0, 0.0]]


@pytest.mark.parametrize("which", ["numerical", "analytical"])
def test_the_jacobian_helpers_refuse_a_grad_out_other_than_1(lib, which):
    numerical, analytical = _jacobian_helpers(lib)
    x = x64(lib, X)
    with pytest.warns(FutureWarning), pytest.raises(ValueError) as info:
        if which == "numerical":
            numerical(lambda inputs: inputs[0], (x,), grad_out=2.0)
        else:
            analytical((x,), x * 2, grad_out=2.0)
    assert str(info.value).startswith(
        f"Expected grad_out to be 1.0. get_{which}_jacobian no longer supports values of "
        "grad_out != 1.0."
    )

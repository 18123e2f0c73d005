"""``jacobian`` and ``hessian`` computed three ways (one gradient at a time, vectorized, and
vectorized in forward mode) give the same result, as PyTorch's own tests
(test/autograd/test_functional.py: test_jacobian_vectorize_correctness_simple,
_multi_input, _multi_input_multi_output, _unrelated_outputs, _zero_dim, _different_dtype,
and test_hessian_vectorize_correctness_simple, _multi_input, _unrelated_outputs) check it.
The comparison of the first two ways alone is in test_torch_port_functional.py; here the
forward-mode strategies (``strategy="forward-mode"``, ``outer_jacobian_strategy=``) too.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts: the same structure and values all three ways.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def assert_same_results(lib, expected, got):
    """Two results of jacobian/hessian: the same nesting, shapes, dtypes and values. (The
    vectorized forward mode nests lists where the others nest tuples, in both libraries;
    torch's test compares them as sequences.)"""
    if isinstance(expected, tuple):
        assert isinstance(got, (tuple, list)) and len(got) == len(expected)
        for e, g in zip(expected, got):
            assert_same_results(lib, e, g)
        return
    assert isinstance(got, lib.Tensor)
    assert got.shape == expected.shape and got.dtype == expected.dtype
    assert np.allclose(port.values(got), port.values(expected), rtol=1e-6, atol=1e-9)


def check_jacobian_three_ways(lib, f, inputs, forward_mode=True):
    jacobian = lib.autograd.functional.jacobian
    expected = jacobian(f, inputs, vectorize=False)
    assert_same_results(lib, expected, jacobian(f, inputs, vectorize=True))
    if forward_mode:
        got = jacobian(f, inputs, strategy="forward-mode", vectorize=True)
        assert_same_results(lib, expected, got)


def check_hessian_three_ways(lib, f, inputs):
    hessian = lib.autograd.functional.hessian
    expected = hessian(f, inputs, vectorize=False)
    assert_same_results(lib, expected, hessian(f, inputs, vectorize=True))
    got = hessian(f, inputs, outer_jacobian_strategy="forward-mode", vectorize=True)
    assert_same_results(lib, expected, got)


# --------------------------------------------------------------------------------- jacobian


def test_jacobian_vectorize_correctness_simple(lib):
    check_jacobian_three_ways(lib, lambda x: 3 * x**2, randn(lib, 2, 3, 5))


def test_jacobian_vectorize_correctness_multi_input(lib):
    def f(x, y):
        return (x.cos() * x) @ y.sin()

    check_jacobian_three_ways(lib, f, (randn(lib, 2, 3), randn(lib, 3, 5, seed=1)))


def test_jacobian_vectorize_correctness_multi_input_multi_output(lib):
    def f(x, y):
        return (x * x) @ y, x @ (x.sum(1) * y), y.sum()

    check_jacobian_three_ways(lib, f, (randn(lib, 5, 3), randn(lib, 3, 5, seed=1)))


def test_jacobian_vectorize_correctness_unrelated_outputs(lib):
    def f(x, y):
        return x, y, x, y

    check_jacobian_three_ways(lib, f, (randn(lib, 2), randn(lib, 3, seed=1)))


def test_jacobian_vectorize_correctness_zero_dim(lib):
    def zero_dim_outputs(x, y):
        return x.sum(), y.sum(), x * y

    def zero_dim_input(x):
        return lib.stack([x, x, x])

    def mixed(x, y):
        return y.sum(), x * y

    check_jacobian_three_ways(lib, zero_dim_outputs, (randn(lib, 3), randn(lib, 3, seed=1)))
    check_jacobian_three_ways(lib, zero_dim_input, randn(lib))
    check_jacobian_three_ways(lib, mixed, (randn(lib), randn(lib, 1, seed=1)))


def test_jacobian_vectorize_correctness_different_dtype(lib):
    """Reverse mode gives each block the input's dtype (forward mode would give the
    output's, so torch's test leaves it out)."""

    def f(x, y):
        return (x * y).float(), (x * y).double()

    inputs = (randn(lib, 3, dtype=lib.float32), randn(lib, 3, seed=1, dtype=lib.float32))
    check_jacobian_three_ways(lib, f, inputs, forward_mode=False)


# ---------------------------------------------------------------------------------- hessian


def test_hessian_vectorize_correctness_simple(lib):
    check_hessian_three_ways(lib, lambda x: (3 * x**2).sum(), randn(lib, 2, 3, 5))


def test_hessian_vectorize_correctness_multi_input(lib):
    def f(x, y, z):
        return ((x.relu() * x) @ y.sin() @ z).sum()

    inputs = (randn(lib, 2, 3), randn(lib, 3, 5, seed=1), randn(lib, 5, 5, seed=2))
    check_hessian_three_ways(lib, f, inputs)


def test_hessian_vectorize_correctness_unrelated_outputs(lib):
    inputs = (randn(lib, 2), randn(lib, 3, seed=1))
    check_hessian_three_ways(lib, lambda x, y: (x**2).sum(), inputs)
    check_hessian_three_ways(lib, lambda x, y: lib.ones([]), inputs)

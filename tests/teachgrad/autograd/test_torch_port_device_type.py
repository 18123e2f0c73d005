"""Tests of PyTorch's TestAutogradDeviceType (test_autograd.py), on the CPU: test_grad_assignment,
test_requires_grad_factory, test_where, test_where_scalar, test_copy_forward_ad_broadcasting,
test_copy_forward_ad_same_layout_copies_grad.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. Left out: those that need CUDA or several devices.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def test_grad_assignment(lib):
    x = randn(lib, 5, 5, dtype=lib.float32)
    with pytest.raises(TypeError, match="expected to be a Tensor or None"):
        x.grad = 0
    with pytest.raises(RuntimeError, match="^attempting to assign a gradient of size"):
        x.grad = randn(lib, 2, 2, dtype=lib.float32)
    with pytest.raises(
        RuntimeError, match="^attempting to assign a gradient with dtype 'long int' to a tensor"
    ):
        x.grad = lib.zeros(5, 5, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="^can't assign Variable as its own grad"):
        x.grad = x
    x.grad = lib.zeros_like(x)  # the right one is taken
    assert same(x.grad, np.zeros((5, 5)))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("requires_grad", [True, False])
@pytest.mark.parametrize("factory", ["ones_like", "randn_like"])
def test_requires_grad_factory(lib, dtype, requires_grad, factory):
    dtype = getattr(lib, dtype)
    x = randn(lib, 2, 3, dtype=dtype)
    output = getattr(lib, factory)(x, dtype=dtype, device="cpu", requires_grad=requires_grad)
    assert output.requires_grad == requires_grad
    assert output.dtype is dtype
    assert str(x.device) == "cpu"


def where(lib):
    return lambda cond, x, y: lib.where(cond, x, y)


def a_mask(lib, *shape):
    """torch's mask_not_all_zeros: a fixed boolean mask with some True."""
    return lib.tensor(np.random.default_rng(7).uniform(size=shape) > 0.5)


def test_where(lib):
    gradcheck, gradgradcheck = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    cond = a_mask(lib, 5, 5)
    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    assert gradcheck(where(lib), [cond, x, y], raise_exception=True)
    assert gradgradcheck(where(lib), [cond, x, y], [randn(lib, 5, 5, seed=2)])
    x = randn(lib, 5, 1, 5, requires_grad=True)  # broadcast against each other and cond
    y = randn(lib, 5, 5, 1, seed=1, requires_grad=True)
    assert gradcheck(where(lib), [cond, x, y], raise_exception=True)
    assert gradgradcheck(where(lib), [cond, x, y], [randn(lib, 5, 5, 5, seed=2)])


def test_where_scalar(lib):
    gradcheck, gradgradcheck = lib.autograd.gradcheck, lib.autograd.gradgradcheck
    x = randn(lib, 5, 5, requires_grad=True)
    cond = a_mask(lib, 5, 5)

    def where_scalar_first(cond, x):
        return lib.where(cond, 4.0, x)

    def where_scalar_second(cond, x):
        return lib.where(cond, x, 4.0)

    for f in (where_scalar_first, where_scalar_second):
        assert gradcheck(f, (cond, x))
        assert gradgradcheck(f, (cond, x))


def test_copy_forward_ad_broadcasting(lib):
    fwAD = lib.autograd.forward_ad
    primal, tangent = randn(lib, 3, 3), randn(lib, 3, 3, seed=1)
    non_dual = randn(lib, 1, 3, 3, seed=2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal, tangent)
        non_dual.copy_(dual)  # src broadcasts to self: so does its tangent
        assert same(fwAD.unpack_dual(non_dual).tangent, port.values(tangent)[None])


def test_copy_forward_ad_same_layout_copies_grad(lib):
    fwAD = lib.autograd.forward_ad
    primal = lib.tensor([[3.0], [4.0]])
    tangent = lib.tensor([[5.0], [6.0]])
    with fwAD.dual_level():
        x_dual = fwAD.make_dual(primal, tangent)
        non_dual = lib.tensor([[1.0], [2.0]])
        non_dual.copy_(x_dual)
        assert fwAD.unpack_dual(non_dual).tangent is not tangent  # a copy of it
        assert same(fwAD.unpack_dual(non_dual).tangent, [[5.0], [6.0]])

"""Tests of PyTorch's TestAutogradDeviceType (test_autograd.py), on the CPU: test_grad_assignment,
test_requires_grad_factory, test_where, test_where_scalar, test_copy_forward_ad_broadcasting,
test_copy_forward_ad_same_layout_copies_grad, test_min_max_median_backprops_to_all_values (min and
max), test_set_requires_grad_only_for_floats, test_pyscalar_conversions.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. Left out: those that need CUDA or several devices.
"""

import math
import sys

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def test_grad_assignment(lib):
    x = randn(lib, 5, 5, dtype=lib.float32)
    with pytest.raises(TypeError, match="^assigned grad expected to be a Tensor or None"):
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


@pytest.mark.parametrize("f", ["min", "max"])
def test_min_max_backprops_to_all_values(lib, f):
    x1 = lib.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0], requires_grad=True)
    x2 = lib.tensor([float("nan")] * 3, requires_grad=True)
    for x in (x1, x2):
        getattr(lib, f)(x).backward()  # three ties (or three NaNs) share the gradient
        assert same(x.grad.sum(), 1.0)
        assert (x.grad == 1 / 3).sum().item() == 3


@pytest.mark.parametrize("dtype", ["float32", "float64", "int8", "int16", "int32", "int64"])
def test_set_requires_grad_only_for_floats(lib, dtype):
    dtype = getattr(lib, dtype)

    def f1():
        lib.ones(1, dtype=dtype).requires_grad_()

    def f2():
        lib.ones(1, dtype=dtype).requires_grad = True

    def f3():
        lib.ones(1, dtype=dtype, requires_grad=True)

    a = lib.ones(1, dtype=dtype)
    a.requires_grad = False  # always allowed
    a.requires_grad_(False)
    for f in (f1, f2, f3):
        if dtype.is_floating_point:
            f()
        else:
            with pytest.raises(RuntimeError, match="floating point"):
                f()


def test_pyscalar_conversions(lib):
    n = lib.zeros(1, 1, 1, dtype=lib.long)  # integral -> integral
    n[0] = -12345
    assert int(n) == -12345
    f = lib.autograd.Variable(randn(lib, 1, 1))  # floating point -> floating point
    f[0] = -12345.1
    assert float(f) == -12345.1
    f[0] = math.nan
    assert math.isnan(float(f))
    for v in (math.inf, -math.inf):
        f[0] = v
        assert float(f) == v
    pyscalar = 1234567890123456789  # integral -> floating point, losing precision
    assert pyscalar != int(float(pyscalar))
    n[0] = pyscalar
    assert float(n) == float(pyscalar)
    for v, error in ((math.nan, ValueError), (math.inf, OverflowError), (-math.inf, OverflowError)):
        f[0] = v  # floating point -> integral
        with pytest.raises(error):
            int(f[0])
    f[0] = sys.float_info.max
    assert int(f) == sys.float_info.max
    for t, value, expected in (
        (n, 0, False),
        (n, -2, True),
        (f, 0.0, False),
        (f, sys.float_info.min, True),
        (f, math.nan, True),
        (f, math.inf, True),
        (f, -math.inf, True),
    ):
        t[0] = value
        assert bool(t) is expected

"""``autograd.functional`` with ``create_graph=True``, as PyTorch's own tests
(test/autograd/test_functional.py: test_vjp_create_graph, test_jvp_create_graph,
test_jacobian_create_graph, test_hessian_create_graph, test_vhp_create_graph,
test_hvp_create_graph) check it: the results have history, and gradcheck and gradgradcheck
pass through them, also when they are part of a larger function; and that ``vectorize=True``
warns about nothing (test_jacobian_vectorize_raises_no_warnings,
test_hessian_vectorize_raises_no_warnings).

Each test runs once with teachgrad and once with torch (the ``lib`` fixture).
"""

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

VECTORIZE = pytest.mark.parametrize("vectorize", [False, True], ids=["loop", "vectorized"])


def rand(lib, *shape, seed=0):
    """Reproducible uniform float64 numbers that require grad, the same on both libraries."""
    data = np.random.default_rng(seed).uniform(size=shape)
    return lib.tensor(data, dtype=lib.float64, requires_grad=True)


def ones(lib, *shape):
    return lib.ones(*shape, dtype=lib.float64, requires_grad=True)


def first_unit(lib, n):
    """``[1, 0, ..., 0]`` that requires grad (torch's ``v``)."""
    return lib.tensor([1.0] + [0.0] * (n - 1), dtype=lib.float64, requires_grad=True)


def check_twice(lib, fn, inputs):
    """gradcheck and gradgradcheck of ``fn`` at ``inputs``, both must pass."""
    assert lib.autograd.gradcheck(fn, inputs)
    assert lib.autograd.gradgradcheck(fn, inputs)


def shape_of(res):
    """A result's structure: a Tensor's shape, or a tuple of the structures of its items."""
    return tuple(shape_of(r) for r in res) if isinstance(res, tuple) else tuple(res.shape)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_and_jvp_create_graph(lib, api):
    fn = getattr(lib.autograd.functional, api)
    inputs = rand(lib, 2, 2)
    v = ones(lib, 2) if api == "vjp" else ones(lib, 2, 2)

    def reducer(x):
        return x.sum(dim=1)

    res = fn(reducer, inputs, v, create_graph=True)
    assert shape_of(res[1]) == ((2, 2) if api == "vjp" else (2,))
    assert res[0].grad_fn is not None
    assert res[1].grad_fn is not None
    check_twice(lib, lambda inp, v: fn(reducer, inp, v, create_graph=True), (inputs, v))

    def adder(x, y):
        return 2 * x + 3 * y, x * y

    inputs = (rand(lib, 2, seed=1), rand(lib, 2, seed=2))
    v = (first_unit(lib, 2), first_unit(lib, 2))
    check_twice(lib, lambda *args: fn(adder, args[:2], args[2:], create_graph=True)[1], inputs + v)

    def foo(*args):  # the products inside a larger function
        x, y = args[:2]
        x = x.cos()
        val, grad = fn(adder, (x, y), args[2:], create_graph=True)
        return val[0].exp() + val[1].exp() + grad[0].exp() + grad[1].exp() + x.exp() + y.exp()

    check_twice(lib, foo, inputs + v)


@VECTORIZE
def test_jacobian_create_graph(lib, vectorize):
    jacobian = lib.autograd.functional.jacobian

    def exp_reducer(x):
        return x.exp().sum(dim=1)

    inputs = rand(lib, 4, 4)
    res = jacobian(exp_reducer, inputs, create_graph=True, vectorize=vectorize)
    assert shape_of(res) == (4, 4, 4)
    assert res.grad_fn is not None
    check_twice(
        lib, lambda inp: jacobian(exp_reducer, inp, create_graph=True, vectorize=vectorize), inputs
    )

    def add_exp_reducer(x, y):
        return (x + y).exp().sum(dim=1)

    inputs = (rand(lib, 4, 4, seed=1), rand(lib, 4, 4, seed=2))
    res = jacobian(add_exp_reducer, inputs, create_graph=True, vectorize=vectorize)
    assert shape_of(res) == ((4, 4, 4), (4, 4, 4))
    assert res[0].grad_fn is not None
    assert res[1].grad_fn is not None
    check_twice(
        lib,
        lambda *inp: jacobian(add_exp_reducer, inp, create_graph=True, vectorize=vectorize),
        inputs,
    )

    def foo(x, y):
        x = x.cos()
        val, jac = jacobian(add_exp_reducer, (x, y), create_graph=True, vectorize=vectorize)
        res = val[0].exp().sum() + val[1].exp().sum() + jac[0].exp().sum()
        return res + jac[1].exp().sum() + x.exp().sum() + y.exp().sum()

    check_twice(lib, foo, inputs)


@VECTORIZE
def test_hessian_create_graph(lib, vectorize):
    hessian = lib.autograd.functional.hessian

    def pow_reducer(x):
        return x.pow(3).sum()

    inputs = rand(lib, 2, 2)
    res = hessian(pow_reducer, inputs, create_graph=True, vectorize=vectorize)
    assert shape_of(res) == (2, 2, 2, 2)
    assert res.grad_fn is not None
    check_twice(
        lib, lambda inp: hessian(pow_reducer, inp, create_graph=True, vectorize=vectorize), inputs
    )

    def add_pow_reducer(x, y):
        return (x + y).pow(3).sum()

    inputs = (rand(lib, 2, 2, seed=1), rand(lib, 2, 2, seed=2))
    res = hessian(add_pow_reducer, inputs, create_graph=True, vectorize=vectorize)
    assert shape_of(res) == (((2, 2, 2, 2),) * 2,) * 2
    assert all(r.grad_fn is not None for row in res for r in row)

    def flat_hessian(*inp):
        return tuple(
            h
            for row in hessian(add_pow_reducer, inp, create_graph=True, vectorize=vectorize)
            for h in row
        )

    check_twice(lib, flat_hessian, inputs)

    def foo(x, y):
        x = x.cos()
        val, hess = hessian(add_pow_reducer, (x, y), create_graph=True, vectorize=vectorize)
        res = val[0].cos().sum() + val[1].cos().sum() + hess[0].cos().sum()
        return res + hess[1].cos().sum() + x.cos().sum() + y.cos().sum()

    check_twice(lib, foo, inputs)


@pytest.mark.parametrize("api", ["vhp", "hvp"])
def test_vhp_and_hvp_create_graph(lib, api):
    fn = getattr(lib.autograd.functional, api)

    def foo(a):
        return 3 * a.narrow(0, 0, 3).exp().sum()

    inputs, v = rand(lib, 4), ones(lib, 4)
    res = fn(foo, inputs, v, create_graph=True)
    assert shape_of(res[1]) == (4,)
    assert res[0].grad_fn is not None
    assert res[1].grad_fn is not None
    check_twice(lib, lambda inp, v: fn(foo, inp, v, create_graph=True), (inputs, v))

    def bar(a, b):
        return (a + 3 * b.narrow(0, 0, 3)).exp().sum()

    inputs = (rand(lib, 3, seed=1), rand(lib, 4, seed=2))
    v = (ones(lib, 3), ones(lib, 4))
    out, product = fn(bar, inputs, v, create_graph=True)
    assert shape_of(product) == ((3,), (4,))
    assert out.grad_fn is not None
    assert product[0].grad_fn is not None
    assert product[1].grad_fn is not None
    check_twice(lib, lambda *args: fn(bar, args[:2], args[2:], create_graph=True)[1], inputs + v)

    def baz(*args):
        x, y = args[:2]
        x = x.cos()
        val, grad = fn(bar, (x, y), args[2:], create_graph=True)
        return val.cos() + grad[0].cos().sum() + grad[1].cos() + x.cos().sum() + y.cos()

    check_twice(lib, baz, inputs + v)


@pytest.mark.parametrize("api", ["jacobian", "hessian"])
def test_vectorize_raises_no_warnings(lib, api):
    fn = getattr(lib.autograd.functional, api)
    x = lib.tensor(np.random.default_rng(0).standard_normal(3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fn(lambda a: (a**2).sum(), x, vectorize=True)
    assert tuple(result.shape) == ((3,) if api == "jacobian" else (3, 3))

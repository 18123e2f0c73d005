"""``autograd.functional`` (vjp, jvp, jacobian, hessian, vhp), as PyTorch's own tests
(test/autograd/test_functional.py: test_*_err_check, test_*_err_check_strict,
test_*_no_grad, test_*_output, test_*_scalar, test_*_vectorize_correctness_*) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts: the error classes and messages, the structure of the
results (a Tensor or nested tuples of them, and their shapes), and their history.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def rand(lib, *shape, seed=0, dtype=None):
    """Reproducible uniform numbers as a ``lib`` tensor (the same on both libraries)."""
    data = np.random.default_rng(seed).uniform(size=shape)
    return lib.tensor(data, dtype=dtype or lib.float32)


def structure(lib, res):
    """A result's structure: a Tensor's shape, or a tuple of the structures of its items."""
    if isinstance(res, lib.Tensor):
        return tuple(res.shape)
    assert isinstance(res, tuple), type(res)
    return tuple(structure(lib, r) for r in res)


def interleaved(a, b):
    """The structure torch promises for a Jacobian of outputs ``a`` by inputs ``b``."""
    if isinstance(a, tuple) and a and isinstance(a[0], tuple):
        return tuple(interleaved(x, b) for x in a)
    if isinstance(b, tuple) and b and isinstance(b[0], tuple):
        return tuple(a + y for y in b)
    return a + b


def narrow3(a):
    return 3 * a.narrow(0, 0, 3)


def narrow3_and_text(a):
    return 3 * a.narrow(0, 0, 3), "bar"


def detached(a):
    return a.detach()


def disconnected(a):
    """A non-leaf that requires grad but is not connected to the input."""
    return a.long().float().requires_grad_().clone()


# --------------------------------------------------------------------------- vjp / jvp


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_and_jvp_check_their_arguments(lib, api):
    fn = getattr(lib.autograd.functional, api)
    inp = rand(lib, 4)
    v = lib.ones(3) if api == "vjp" else rand(lib, 4, seed=1)
    with pytest.raises(TypeError, match=f"The inputs given to {api} must be either a Tensor"):
        fn(narrow3, (inp, 2), v)
    with pytest.raises(
        TypeError, match=f"The outputs of the user-provided function given to {api} must"
    ):
        fn(narrow3_and_text, inp, v)
    with pytest.raises(RuntimeError, match="The vector v can only be None if the"):
        fn(narrow3, inp)
    with pytest.raises(RuntimeError, match="The given v should contain a single Tensor."):
        fn(narrow3, inp, (v, v))
    size_error = f"v has invalid size: should be {lib.__name__}.Size"  # (each names its Size)
    with pytest.raises(RuntimeError, match=size_error):
        fn(narrow3, inp, v[:2])
    res = fn(narrow3, inp, v)[1]
    assert structure(lib, res) == ((4,) if api == "vjp" else (3,))


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_and_jvp_in_strict_mode(lib, api):
    fn = getattr(lib.autograd.functional, api)
    inp = rand(lib, 4)
    v = rand(lib, 4, seed=1)
    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function does not require gradients."
    ):
        fn(detached, inp, v, strict=True)
    res = fn(detached, inp, v, strict=False)
    assert structure(lib, res[1]) == (4,) and res[1].abs().sum().item() == 0.0

    with pytest.raises(
        RuntimeError, match="The output of the user-provided function is independent of input 0"
    ):
        fn(disconnected, inp, v, strict=True)
    res = fn(disconnected, inp, v, strict=False)
    assert structure(lib, res[1]) == (4,) and res[1].abs().sum().item() == 0.0

    inp.requires_grad_()
    with pytest.raises(
        RuntimeError, match="jacobian of the user-provided function is independent of input 0."
    ):
        fn(lambda a: a.clone(), inp, v, create_graph=True, strict=True)
    res = fn(lambda a: a.clone(), inp, v, create_graph=True, strict=False)
    assert same(res[1], v)


@pytest.mark.parametrize("api", ["vjp", "jvp"])
def test_vjp_and_jvp_under_no_grad(lib, api):
    fn = getattr(lib.autograd.functional, api)
    inputs = rand(lib, 4, 4)
    v = lib.ones(4) if api == "vjp" else lib.ones(4, 4)
    with lib.no_grad():
        res = fn(lambda x: x.sum(dim=1), inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert res[1].abs().sum().item() != 0

    inputs.requires_grad_()
    v.requires_grad_()
    with lib.no_grad():
        res = fn(lambda x: x.sum(dim=1), inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None


def test_vjp_output_structure(lib):
    vjp = lib.autograd.functional.vjp
    out, val = vjp(lambda x: x.sum(dim=1), rand(lib, 4, 4), lib.ones(4))
    assert structure(lib, val) == (4, 4)
    assert out.grad_fn is None and val.grad_fn is None

    inputs = (rand(lib, 2), rand(lib, 2, seed=1))
    out, val = vjp(lambda x, y: 2 * x + 3 * y, inputs, lib.ones(2))
    assert structure(lib, val) == ((2,), (2,))
    assert out.grad_fn is None and all(g.grad_fn is None for g in val)
    assert same(val[0], [2, 2]) and same(val[1], [3, 3])

    v = (lib.tensor([1.0, 0.0]), lib.tensor([1.0, 0.0]))
    out, val = vjp(lambda x, y: (2 * x + 3 * y, x + y), inputs, v)
    assert structure(lib, out) == ((2,), (2,))
    assert structure(lib, val) == ((2,), (2,))
    assert same(val[0], [3, 0]) and same(val[1], [4, 0])


def test_jvp_output_structure(lib):
    jvp = lib.autograd.functional.jvp
    out, val = jvp(lambda x: x.sum(dim=1), rand(lib, 4, 4), lib.ones(4, 4))
    assert structure(lib, val) == structure(lib, out) == (4,)
    assert out.grad_fn is None and val.grad_fn is None

    inputs = (rand(lib, 2), rand(lib, 2, seed=1))
    out, val = jvp(lambda x, y: 2 * x + 3 * y, inputs, (lib.ones(2), lib.ones(2)))
    assert structure(lib, val) == structure(lib, out) == (2,)
    assert same(val, [5, 5])

    v = (lib.tensor([1.0, 0.0]), lib.tensor([1.0, 0.0]))
    out, val = jvp(lambda x, y: (2 * x + 3 * y, x + y), inputs, v)
    assert structure(lib, val) == structure(lib, out) == ((2,), (2,))
    assert same(val[0], [5, 0]) and same(val[1], [2, 0])


def test_vjp_and_jvp_of_scalars(lib):
    functional = lib.autograd.functional
    inputs = rand(lib, 4, 4)
    for res in (
        functional.vjp(lambda x: x.sum(), inputs, lib.ones([])),
        functional.vjp(lambda x: x.sum(), inputs),
    ):
        assert structure(lib, res) == ((), (4, 4))
    res = functional.vjp(lambda x: x.unsqueeze(0).repeat(4), rand(lib), lib.ones(4))
    assert structure(lib, res) == ((4,), ())

    res = functional.jvp(lambda x: x.sum(), inputs, lib.ones(4, 4))
    assert structure(lib, res) == ((), ())
    for res in (
        functional.jvp(lambda x: x.unsqueeze(0).repeat(4), rand(lib), lib.ones([])),
        functional.jvp(lambda x: x.unsqueeze(0).repeat(4), rand(lib)),
    ):
        assert structure(lib, res) == ((4,), (4,))


# --------------------------------------------------------------------------- jacobian


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_checks_its_arguments(lib, vectorize):
    jacobian = lib.autograd.functional.jacobian
    inp = rand(lib, 4)
    with pytest.raises(TypeError, match="The inputs given to jacobian must be either a Tensor"):
        jacobian(narrow3, (inp, 2), vectorize=vectorize)
    with pytest.raises(
        TypeError, match="The outputs of the user-provided function given to jacobian must"
    ):
        jacobian(narrow3_and_text, inp, vectorize=vectorize)
    assert structure(lib, jacobian(narrow3, inp, vectorize=vectorize)) == (3, 4)

    def two_outputs(a, b):
        return b, 3 * a.narrow(0, 0, 3)

    res = jacobian(two_outputs, (rand(lib, 4), rand(lib, 5, seed=1)), vectorize=vectorize)
    assert structure(lib, res) == interleaved(((5,), (3,)), ((4,), (5,)))


def test_jacobian_in_strict_mode(lib):
    jacobian = lib.autograd.functional.jacobian
    inp = rand(lib, 4)
    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function does not require gradients."
    ):
        jacobian(detached, inp, strict=True)
    res = jacobian(detached, inp, strict=False)
    assert structure(lib, res) == (4, 4) and res.abs().sum().item() == 0.0

    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function is independent of input 0."
    ):
        jacobian(disconnected, inp, strict=True)
    res = jacobian(disconnected, inp, strict=False)
    assert structure(lib, res) == (4, 4) and res.abs().sum().item() == 0.0

    inp.requires_grad_()
    with pytest.raises(
        RuntimeError, match="jacobian of the user-provided function is independent of input 0."
    ):
        jacobian(lambda a: a.clone(), inp, create_graph=True, strict=True)
    res = jacobian(lambda a: a.clone(), inp, create_graph=True, strict=False)
    assert same(res, np.eye(4))

    with pytest.raises(RuntimeError, match="not supported together"):
        jacobian(lambda x: x, inp, strict=True, vectorize=True)


def test_jacobian_under_no_grad(lib):
    jacobian = lib.autograd.functional.jacobian
    inputs = rand(lib, 4, 4)
    with lib.no_grad():
        res = jacobian(lambda x: x.exp().sum(dim=1), inputs)
    assert res.grad_fn is None and res.abs().sum().item() != 0
    with lib.no_grad():
        res = jacobian(lambda x: x.exp().sum(dim=1), inputs, create_graph=True)
    assert res.grad_fn is not None


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_output_structure(lib, vectorize):
    jacobian = lib.autograd.functional.jacobian
    res = jacobian(lambda x: x.exp().sum(dim=1), rand(lib, 4, 4), vectorize=vectorize)
    assert structure(lib, res) == (4, 4, 4) and res.grad_fn is None

    res = jacobian(lambda x: x.clone(), rand(lib, 4), vectorize=vectorize)
    assert res.grad_fn is None and same(res, np.eye(4))

    inputs = (rand(lib, 4, 4), rand(lib, 4, 4, seed=1))
    res = jacobian(lambda x, y: (x + y.exp()).sum(dim=1), inputs, vectorize=vectorize)
    assert structure(lib, res) == ((4, 4, 4), (4, 4, 4))
    assert res[0].grad_fn is None and res[1].grad_fn is None

    assert structure(lib, jacobian(lambda x: x.sum(), rand(lib, 4, 4), vectorize=vectorize)) == (
        4,
        4,
    )
    res = jacobian(lambda x: x.unsqueeze(0).repeat(4), rand(lib), vectorize=vectorize)
    assert structure(lib, res) == (4,)


@pytest.mark.parametrize(
    "case",
    ["simple", "multi_input", "multi_output", "unrelated_outputs", "zero_dim"],
)
def test_jacobian_is_the_same_vectorized_or_not(lib, case):
    jacobian = lib.autograd.functional.jacobian
    x = rand(lib, 5, 3)
    y = rand(lib, 3, 5, seed=1)
    f, inputs = {
        "simple": (lambda x: 3 * x**2, rand(lib, 2, 3, 5)),
        "multi_input": (lambda x, y: (x.cos() * x) @ y.sin(), (x, y)),
        "multi_output": (lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()), (x, y)),
        "unrelated_outputs": (lambda x, y: (x, y, x, y), (rand(lib, 2), rand(lib, 3))),
        "zero_dim": (lambda x, y: (x.sum(), y.sum(), x * y), (rand(lib, 3), rand(lib, 3, seed=1))),
    }[case]
    expected = jacobian(f, inputs, vectorize=False)
    got = jacobian(f, inputs, vectorize=True)
    assert structure(lib, got) == structure(lib, expected)
    flat_expected = np.concatenate([np.ravel(a) for a in _leaves(expected)])
    flat_got = np.concatenate([np.ravel(a) for a in _leaves(got)])
    assert np.allclose(flat_got, flat_expected, rtol=1e-5, atol=1e-6)


def _leaves(res):
    """The tensors of a nested result, in order, as NumPy arrays."""
    if isinstance(res, tuple):
        return [leaf for r in res for leaf in _leaves(r)]
    return [res.detach().numpy()]


# --------------------------------------------------------------------------- hessian / vhp


def exp_sum3(a):
    return 3 * a.narrow(0, 0, 3).exp().sum()


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_checks_its_arguments(lib, vectorize):
    hessian = lib.autograd.functional.hessian
    inp = rand(lib, 4)
    with pytest.raises(TypeError, match="The inputs given to hessian must be either a Tensor"):
        hessian(exp_sum3, (inp, 2), vectorize=vectorize)
    with pytest.raises(
        TypeError, match="The outputs of the user-provided function given to hessian must"
    ):
        hessian(narrow3_and_text, inp, vectorize=vectorize)
    with pytest.raises(
        RuntimeError,
        match="The Tensor returned by the function given to hessian should contain a single element",
    ):
        hessian(narrow3, inp, vectorize=vectorize)
    with pytest.raises(
        RuntimeError, match="The function given to hessian should return a single Tensor"
    ):
        hessian(lambda a: (narrow3(a), narrow3(a)), inp, vectorize=vectorize)
    assert structure(lib, hessian(exp_sum3, inp, vectorize=vectorize)) == (4, 4)

    def two_inputs(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    res = hessian(two_inputs, (rand(lib, 4), rand(lib, 5, seed=1)), vectorize=vectorize)
    assert structure(lib, res) == (((4, 4), (4, 5)), ((5, 4), (5, 5)))


@pytest.mark.parametrize("api", ["hessian", "vhp"])
def test_hessian_and_vhp_in_strict_mode(lib, api):
    fn = getattr(lib.autograd.functional, api)
    inp = rand(lib, 4)
    args = () if api == "hessian" else (rand(lib, 4, seed=1),)

    def result(res):
        return res if api == "hessian" else res[1]

    expected_shape = (4, 4) if api == "hessian" else (4,)
    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function does not require gradients."
    ):
        fn(lambda a: a.detach().sum(), inp, *args, strict=True)
    res = result(fn(lambda a: a.detach().sum(), inp, *args, strict=False))
    assert structure(lib, res) == expected_shape and res.abs().sum().item() == 0.0

    disconnected_match = (
        "jacobian of the user-provided function with respect to input 0"
        if api == "hessian"
        else "The output of the user-provided function is independent of input 0"
    )
    with pytest.raises(RuntimeError, match=disconnected_match):
        fn(lambda a: disconnected(a).sum(), inp, *args, strict=True)
    res = result(fn(lambda a: disconnected(a).sum(), inp, *args, strict=False))
    assert structure(lib, res) == expected_shape and res.abs().sum().item() == 0.0

    with pytest.raises(
        RuntimeError, match="jacobian of the user-provided function with respect to input 0 is"
    ):
        fn(lambda a: (3 * a).sum(), inp, *args, strict=True)
    res = result(fn(lambda a: (3 * a).sum(), inp, *args, strict=False))
    assert structure(lib, res) == expected_shape and res.abs().sum().item() == 0.0


def test_hessian_refuses_strict_with_vectorize(lib):
    with pytest.raises(RuntimeError, match="not supported together"):
        lib.autograd.functional.hessian(
            lambda x: (x**3).sum(), rand(lib, 4), strict=True, vectorize=True
        )


def test_hessian_under_no_grad(lib):
    hessian = lib.autograd.functional.hessian
    inputs = rand(lib, 2, 2)
    with lib.no_grad():
        res = hessian(lambda x: x.pow(3).sum(), inputs)
    assert res.grad_fn is None and res.abs().sum().item() != 0
    with lib.no_grad():
        res = hessian(lambda x: x.pow(3).sum(), inputs, create_graph=True)
    assert res.grad_fn is not None


@pytest.mark.parametrize("vectorize", [False, True])
def test_hessian_output_structure(lib, vectorize):
    hessian = lib.autograd.functional.hessian
    inputs = rand(lib, 2, 2)
    res = hessian(lambda x: x.pow(3).sum(), inputs, vectorize=vectorize)
    assert structure(lib, res) == (2, 2, 2, 2) and res.grad_fn is None
    assert same(res.reshape(4, 4), np.diag(6 * inputs.numpy().ravel()), rtol=1e-5)

    pair = (rand(lib, 2, 2), rand(lib, 2, 2, seed=1))
    res = hessian(lambda x, y: (x + y).pow(3).sum(), pair, vectorize=vectorize)
    assert structure(lib, res) == (((2, 2, 2, 2),) * 2,) * 2
    assert all(h.grad_fn is None for row in res for h in row)

    assert structure(lib, hessian(lambda x: x.sum(), rand(lib), vectorize=vectorize)) == ()
    res = hessian(lambda x: x.sum().view(1, 1, 1), rand(lib, 4, 4), vectorize=vectorize)
    assert structure(lib, res) == (4, 4, 4, 4)


def test_vhp_checks_its_arguments(lib):
    vhp = lib.autograd.functional.vhp
    inp = rand(lib, 4)
    v = rand(lib, 4, seed=1)
    with pytest.raises(TypeError, match="The inputs given to vhp must be either a Tensor"):
        vhp(exp_sum3, (inp, 2), v)
    with pytest.raises(
        TypeError, match="The outputs of the user-provided function given to vhp must"
    ):
        vhp(narrow3_and_text, inp, v)
    with pytest.raises(
        RuntimeError,
        match="The Tensor returned by the function given to vhp should contain a single element",
    ):
        vhp(narrow3, inp, v)
    with pytest.raises(RuntimeError, match="v has invalid size:"):
        vhp(exp_sum3, inp, rand(lib, 5))
    with pytest.raises(
        TypeError, match="The v given to vhp must be either a Tensor or a tuple of Tensors"
    ):
        vhp(exp_sum3, inp, (v, 2))
    assert structure(lib, vhp(exp_sum3, inp, v)[1]) == (4,)

    def two_inputs(a, b):
        return (3 * b.narrow(0, 0, 3) * a.narrow(0, 0, 3)).sum()

    pair = (rand(lib, 4), rand(lib, 5, seed=1))
    res = vhp(two_inputs, pair, (rand(lib, 4, seed=2), rand(lib, 5, seed=3)))
    assert structure(lib, res[1]) == ((4,), (5,))


def test_vhp_under_no_grad(lib):
    vhp = lib.autograd.functional.vhp
    inputs = rand(lib, 4, 4)
    v = lib.ones(4, 4)
    with lib.no_grad():
        res = vhp(lambda x: x.exp().sum(), inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    assert res[1].abs().sum().item() != 0
    with lib.no_grad():
        res = vhp(lambda x: x.exp().sum(), inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None


def narrow_exp_sum(a, b):
    return (a + 3 * b.narrow(0, 0, 3)).exp().sum()


@pytest.mark.parametrize("api", ["vhp", "hvp"])
def test_vhp_and_hvp_output_structure_and_scalars(lib, api):
    fn = getattr(lib.autograd.functional, api)
    out, val = fn(exp_sum3, rand(lib, 4, 4), lib.ones(4, 4))
    assert structure(lib, val) == (4, 4)
    assert out.grad_fn is None and val.grad_fn is None

    pair = (rand(lib, 3), rand(lib, 4, seed=1))
    out, val = fn(narrow_exp_sum, pair, (lib.ones(3), lib.ones(4)))
    assert structure(lib, val) == ((3,), (4,))
    assert out.grad_fn is None and all(v.grad_fn is None for v in val)

    assert structure(lib, fn(lambda x: x.sum(), rand(lib, 4, 4), lib.ones(4, 4))[1]) == (4, 4)
    assert structure(lib, fn(lambda x: x.sum(), rand(lib), rand(lib, seed=1))[1]) == ()
    assert structure(lib, fn(lambda x: x.sum(), rand(lib))[1]) == ()
    res = fn(lambda x: x.exp().sum().view(1, 1, 1), rand(lib, 4, 4), rand(lib, 4, 4, seed=1))
    assert structure(lib, res[1]) == (4, 4)


def test_hvp_checks_its_arguments_and_strict_mode(lib):
    hvp = lib.autograd.functional.hvp
    inp = rand(lib, 4)
    v = rand(lib, 4, seed=1)
    with pytest.raises(TypeError, match="The inputs given to hvp must be either a Tensor"):
        hvp(exp_sum3, (inp, 2), v)
    with pytest.raises(
        TypeError, match="The outputs of the user-provided function given to hvp must"
    ):
        hvp(narrow3_and_text, inp, v)
    with pytest.raises(
        RuntimeError,
        match="The Tensor returned by the function given to hvp should contain a single element",
    ):
        hvp(narrow3, inp, v)
    with pytest.raises(RuntimeError, match="v has invalid size:"):
        hvp(exp_sum3, inp, rand(lib, 5))
    with pytest.raises(
        TypeError, match="The v given to hvp must be either a Tensor or a tuple of Tensors"
    ):
        hvp(exp_sum3, inp, (v, 2))

    with pytest.raises(
        RuntimeError, match="Output 0 of the user-provided function does not require gradients."
    ):
        hvp(lambda a: a.detach().sum(), inp, v, strict=True)
    with pytest.raises(
        RuntimeError, match="The output of the user-provided function is independent of input 0"
    ):
        hvp(lambda a: disconnected(a).sum(), inp, v, strict=True)
    with pytest.raises(
        RuntimeError, match="jacobian of the user-provided function with respect to input 0 is"
    ):
        hvp(lambda a: (3 * a).sum(), inp, v, strict=True)
    res = hvp(lambda a: (3 * a).sum(), inp, v, strict=False)
    assert structure(lib, res[1]) == (4,) and res[1].abs().sum().item() == 0.0


def test_hvp_under_no_grad(lib):
    hvp = lib.autograd.functional.hvp
    inputs = rand(lib, 4, 4)
    v = lib.ones(4, 4)
    with lib.no_grad():
        res = hvp(lambda x: x.exp().sum(), inputs, v)
    assert res[0].grad_fn is None and res[1].grad_fn is None
    with lib.no_grad():
        res = hvp(lambda x: x.exp().sum(), inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None


@pytest.mark.parametrize("api", ["vjp", "jvp", "vhp", "hvp"])
def test_products_with_create_graph_pass_gradcheck(lib, api):
    fn = getattr(lib.autograd.functional, api)
    f = exp_sum3 if api in ("vhp", "hvp") else (lambda x: x.sum(dim=1))
    size = 4 if api in ("vhp", "hvp") else 2
    inputs = rand(lib, size, size, dtype=lib.float64).requires_grad_()
    shape = (size,) if api == "vjp" else (size, size)
    v = lib.ones(*shape, dtype=lib.float64, requires_grad=True)
    res = fn(f, inputs, v, create_graph=True)
    assert res[0].grad_fn is not None and res[1].grad_fn is not None

    def product(inp, v):
        return fn(f, inp, v, create_graph=True)

    assert lib.autograd.gradcheck(product, (inputs, v))
    assert lib.autograd.gradgradcheck(product, (inputs, v))


def test_jacobian_matches_vjp_and_jvp_and_hessian_matches_vhp_and_hvp(lib):
    functional = lib.autograd.functional
    inputs = rand(lib, 4)
    v = rand(lib, 4, seed=1)

    def cube_plus_sum(x):
        return x**3 + x.sum()

    jac = functional.jacobian(cube_plus_sum, inputs)
    assert same(functional.jvp(cube_plus_sum, inputs, v)[1], jac @ v, rtol=1e-5)
    assert same(functional.vjp(cube_plus_sum, inputs, v)[1], v @ jac, rtol=1e-5)

    hes = functional.hessian(exp_sum3, inputs)
    assert same(functional.hvp(exp_sum3, inputs, v)[1], hes @ v, rtol=1e-5)
    assert same(functional.vhp(exp_sum3, inputs, v)[1], v @ hes, rtol=1e-5)

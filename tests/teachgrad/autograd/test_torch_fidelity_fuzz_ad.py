"""Differences found by a differential fuzzer of random autograd programs (double backward,
forward-over-reverse), each compared with torch: the same program runs on both libraries,
and either both raise (same class, same first line) or both give the same facts.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _node(t):
    return None if t.grad_fn is None else type(t.grad_fn).__name__


def _first_gradient(lib, op, shape):
    """The gradient of ``op(x)``'s sum made with ``create_graph=True``: its values, whether it
    requires grad, the name of its node, and the gradient of its sum of squares."""
    x = lib.tensor(np.linspace(-0.9, 0.8, int(np.prod(shape))).reshape(shape), requires_grad=True)
    (g,) = lib.autograd.grad(op(x).sum(), x, create_graph=True)
    facts = {"g": as_numpy(g), "requires_grad": g.requires_grad, "node": _node(g)}
    if g.requires_grad:
        facts["gg"] = as_numpy(lib.autograd.grad((g * g).sum(), x, allow_unused=True)[0])
    return facts


# --------------------------------------------------------------------------- double backward

FIRST_GRADIENTS = {
    # torch's prod_backward hands grad on untouched for a 0-d input
    "0-d prod()": (lambda x: (x * x).prod(), ()),
    "0-d prod(0)": (lambda x: (x * x).prod(0), ()),
    "1-d prod()": (lambda x: (x * x).prod(), (3,)),
    # torch's squeeze backward unsqueezes each squeezed dim (none: grad as it is)
    "squeeze()": (lambda x: (x * x).squeeze(), (1, 3, 1)),
    "squeeze() of 0-d": (lambda x: (x * x).squeeze(), ()),
    "squeeze() of (3,)": (lambda x: (x * x).squeeze(), (3,)),
    "squeeze(0)": (lambda x: (x * x).squeeze(0), (1, 3)),
    "squeeze(0) of (3, 1)": (lambda x: (x * x).squeeze(0), (3, 1)),
    "squeeze((2, 0))": (lambda x: (x * x).squeeze((2, 0)), (1, 3, 1)),
    "squeeze(-1) of 0-d": (lambda x: (x * x).squeeze(-1), ()),
    # mean's backward divides by the count, a number (torch's div.Scalar)
    "mean()": (lambda x: (x * x).mean(), (2, 3)),
    "mean() of 0-d": (lambda x: (x * x).mean(), ()),
    "mean(0)": (lambda x: (x * x).mean(0), (2, 3)),
    "mean(-1, keepdim=True)": (lambda x: (x * x).mean(-1, keepdim=True), (2, 3)),
    # masked_fill's backward is a masked_fill of grad
    "masked_fill": (lambda x: (x * x).masked_fill(x > 0, 0.0), (2, 3)),
    "masked_fill, mask broadcast": (lambda x: (x * x).masked_fill(x[0] > 0, 2.0), (2, 3)),
    # a running sum along a dim of size 1 is the input: torch's backward hands grad on
    "cumsum(0) of (1, 3)": (lambda x: (x * x).cumsum(0), (1, 3)),
    "cumsum(1) of (1, 3)": (lambda x: (x * x).cumsum(1), (1, 3)),
    "cumsum(0) of 0-d": (lambda x: (x * x).cumsum(0), ()),
    "cumsum(0) of (0, 2)": (lambda x: (x * x).cumsum(0), (0, 2)),
    "cumsum(0) of (2, 0)": (lambda x: (x * x).cumsum(0), (2, 0)),
    "cumsum(0) of (3, 2)": (lambda x: (x * x).cumsum(0), (3, 2)),
}


@pytest.mark.parametrize("op, shape", FIRST_GRADIENTS.values(), ids=FIRST_GRADIENTS.keys())
def test_a_gradient_made_with_create_graph_has_torchs_node(op, shape):
    assert_like_torch(lambda lib: _first_gradient(lib, op, shape))


@pytest.mark.parametrize("dim", [(), (0,)])
def test_a_0d_prod_changed_in_place_fails_in_backward(dim):
    """The short cut still unpacks what prod saved, so torch's version check runs."""

    def program(lib):
        x = lib.tensor(0.5, dtype=lib.float64, requires_grad=True)
        y = (x * 1).prod(*dim)
        y.add_(1)
        return as_numpy(lib.autograd.grad(y, x)[0])

    assert_like_torch(program)


# --------------------------------------------------------------------------- forward over reverse

TANGENT_OF_GRADIENT = {
    "0-d prod": lambda x: x.sum().prod(),
    "1-d prod": lambda x: x.prod(),
    # relu's backward reads its dual result: torch's gradient gets a zero tangent from it
    "relu": lambda x: x.relu().sum(),
    "0-d relu": lambda x: x.sum().relu(),
    "relu, tanh": lambda x: x.relu().tanh().sum(),
    "tanh": lambda x: x.tanh().sum(),
    "sigmoid": lambda x: x.sigmoid().sum(),
}


@pytest.mark.parametrize("op", TANGENT_OF_GRADIENT.values(), ids=TANGENT_OF_GRADIENT.keys())
def test_the_tangent_of_a_gradient_under_forward_ad(op):
    """Backward inside a dual level: the gradient has a tangent where torch's has one."""

    def program(lib):
        fw = lib.autograd.forward_ad
        x = lib.tensor([0.7, -0.4], dtype=lib.float64, requires_grad=True)
        with fw.dual_level():
            dual = fw.make_dual(x, lib.tensor([0.3, 0.5], dtype=lib.float64))
            (g,) = lib.autograd.grad(op(dual), x, create_graph=True)
            tangent = fw.unpack_dual(g).tangent
            return as_numpy(g), _node(g), None if tangent is None else as_numpy(tangent)

    assert_like_torch(program)


# --------------------------------------------------------------------------- errors


def _leaf(lib, requires_grad=True):
    return lib.tensor([1.0, 2.0], requires_grad=requires_grad)


GRAD_ERRORS = {
    # torch checks the outputs before the inputs
    "neither requires grad": lambda lib: lib.autograd.grad(
        _leaf(lib, False).sum(), _leaf(lib, False)
    ),
    "output needs no grad": lambda lib: lib.autograd.grad(_leaf(lib, False).sum(), _leaf(lib)),
    "input needs no grad": lambda lib: lib.autograd.grad(_leaf(lib).sum(), _leaf(lib, False)),
    "not scalar, input needs no grad": lambda lib: lib.autograd.grad(
        _leaf(lib) * 2, _leaf(lib, False)
    ),
    "shape mismatch, input needs no grad": lambda lib: lib.autograd.grad(
        _leaf(lib).sum(), _leaf(lib, False), lib.ones(3)
    ),
    # torch names the unused input by its index
    "unused input 1": lambda lib: lib.autograd.grad(_leaf(lib).sum(), [_leaf(lib), _leaf(lib)]),
    "unused input 0": lambda lib: lib.autograd.grad(_leaf(lib).sum(), [_leaf(lib)]),
}


@pytest.mark.parametrize("call", GRAD_ERRORS.values(), ids=GRAD_ERRORS.keys())
def test_grad_fails_with_torchs_first_line(call):
    assert_like_torch(lambda lib: call(lib))


STRICT_ERRORS = {
    "jacobian of a detached output": lambda F, x: F.jacobian(
        lambda a: a.detach() * 2, x, strict=True
    ),
    "vjp of a constant": lambda F, x: F.vjp(lambda a: a.detach().sum(), x, strict=True),
    "hessian of a linear function": lambda F, x: F.hessian(lambda a: (a * 2).sum(), x, strict=True),
    "hvp of a linear function": lambda F, x: F.hvp(lambda a: (a * 2).sum(), x, x, strict=True),
}


@pytest.mark.parametrize("call", STRICT_ERRORS.values(), ids=STRICT_ERRORS.keys())
def test_strict_mode_fails_with_torchs_first_line(call):
    assert_like_torch(lambda lib: call(lib.autograd.functional, lib.tensor([1.0, 2.0])))


def _summed_grad(g):
    return g.sum()


BAD_HOOKS = {
    # torch names the hook by its function's name, whichever kind of hook it is
    "tensor hook (a def)": lambda a, b: a.register_hook(_summed_grad),
    "tensor hook (a lambda)": lambda a, b: a.register_hook(lambda g: g.sum()),
    "leaf hook": lambda a, b: a.grad_fn.next_functions[0][0].variable.register_hook(
        lambda g: g.sum()
    ),
    "prehook": lambda a, b: b.grad_fn.register_prehook(lambda go: (go[0].sum(),)),
    "tensor hook changes the dtype": lambda a, b: a.register_hook(lambda g: g.double()),
}


@pytest.mark.parametrize("register", BAD_HOOKS.values(), ids=BAD_HOOKS.keys())
def test_a_hook_that_changes_the_gradient_fails_with_torchs_first_line(register):
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        a = x * 2
        b = a * a
        register(a, b)
        b.sum().backward()

    assert_like_torch(program)


@pytest.mark.parametrize("shape", [(2,), (4,)])
def test_a_batched_grad_output_of_the_wrong_shape_fails_with_torchs_first_line(shape):
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        lib.autograd.grad(x * x, x, lib.ones(shape), is_grads_batched=True)

    assert_like_torch(program)


# --------------------------------------------------------------------------- backward(inputs=...)

NON_LEAVES = {
    "row-major": lambda a: a,
    "transposed": lambda a: a.t(),
    "a column": lambda a: a[:, :1],
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("view", NON_LEAVES.values(), ids=NON_LEAVES.keys())
def test_a_non_leaf_input_of_backward_gets_its_grad_as_retain_grad_gives_it(view, create_graph):
    """torch stores a row-major clone first (CloneBackward0), then ``old + g``: a new tensor."""

    def program(lib):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        a = view(x * 2)
        b = (a**3).sum()
        b.backward(inputs=[a], create_graph=create_graph, retain_graph=True)
        first = a.grad
        facts = [as_numpy(first), first.stride(), _node(first)]
        b.backward(inputs=[a], create_graph=create_graph)
        return facts + [as_numpy(a.grad), a.grad.stride(), _node(a.grad), a.grad is first]

    assert_like_torch(program)

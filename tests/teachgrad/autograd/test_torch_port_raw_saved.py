"""``grad_fn._raw_saved_<name>`` and a custom Function's ``grad_fn._raw_saved_tensors``
(torch's SavedTensor objects and their ``register_hooks``) and GradientEdge as an output of
``grad``/``backward`` and as a ``backward`` input, as torch's own tests (test_autograd.py:
test_saved_variable_packing_unpacking_*_with_hooks, test_custom_function_saved_tensors,
test_pack_hook_with_inplace_modification_should_fail,
test_get_data_and_hooks_from_raw_saved_variable, the get_gradient_edge tests) check them,
rewritten. Each test runs on teachgrad and on torch (the ``lib`` fixture).
"""

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port

pytestmark = pytest.mark.usefixtures("torch")


randn = port.randn


def close(a, b):
    return np.allclose(np.asarray(a.detach()), np.asarray(b.detach()))


@pytest.mark.parametrize("leaf", [True, False])
def test_hooks_on_a_saved_input(lib, leaf):
    def make():
        a = randn(lib, 5, requires_grad=True)
        return a if leaf else a * 1

    a = make()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x / 2)
    assert close(y.grad_fn._saved_self, a)
    if not leaf:
        assert y.grad_fn._saved_self.grad_fn is a.grad_fn
    else:
        y.sum().backward()
        assert close(a.grad, 2 * a)

    a = make()
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: 2 * x, lambda x: x)
    assert close(y.grad_fn._saved_self, 2 * a)
    if leaf:
        y.sum().backward()
        assert close(a.grad, 3 * a)

    a = make()
    y = a**3
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)
    (g,) = lib.autograd.grad(y.sum(), a, create_graph=True)
    if leaf:
        g.sum().backward()
        assert close(a.grad, 6 * a)


def test_hooks_on_a_saved_output(lib):
    a = randn(lib, 5, requires_grad=True)
    y = lib.exp(a)
    y.grad_fn._raw_saved_result.register_hooks(lambda x: x, lambda x: x)
    assert close(y, y.grad_fn._saved_result)
    assert y.grad_fn._saved_result.grad_fn is y.grad_fn
    y.sum().backward()
    assert close(a.grad, y)


def test_register_hooks_errors(lib):
    a = randn(lib, 5, requires_grad=True)
    y = a * a
    raw = y.grad_fn._raw_saved_self
    assert raw is y.grad_fn._raw_saved_self
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        raw.register_hooks(1, 1)
    raw.register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(RuntimeError, match="hooks have already been set"):
        raw.register_hooks(lambda x: x, lambda x: x)
    y.sum().backward()
    raw = y.grad_fn._raw_saved_other
    assert raw.data is None
    with pytest.raises(
        RuntimeError, match="register_hooks on a saved tensor after it has been freed"
    ):
        raw.register_hooks(lambda x: x, lambda x: x)


def test_unpack_hook_must_return_a_tensor(lib):
    a = randn(lib, 5, requires_grad=True)
    y = a * a
    y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: 1)
    with pytest.raises(
        TypeError,
        match="^Output of saved tensor unpack_hook expected to be a Tensor but got result of type int",
    ):
        y.grad_fn._saved_self


def test_pack_hook_that_fails_leaves_the_hooks_set(lib):
    a = randn(lib, 5, requires_grad=True)
    y = a * a
    with pytest.raises(TypeError, match="missing 1 required positional argument"):
        y.grad_fn._raw_saved_self.register_hooks(lambda x, b: x, lambda x: x)
    with pytest.raises(RuntimeError, match="already been set"):
        y.grad_fn._raw_saved_self.register_hooks(lambda x: x, lambda x: x)


@pytest.mark.parametrize("leaf", [True, False])
def test_pack_hook_modifying_its_input_in_place_fails(lib, leaf):
    def double(x):
        x *= 2
        return x

    a = randn(lib, 5, requires_grad=True)
    a = a if leaf else a * 1
    y = a * a
    with pytest.raises(
        RuntimeError, match="^A saved tensor pack hook is modifying its input in place"
    ):
        y.grad_fn._raw_saved_self.register_hooks(double, lambda x: x / 2)


def test_data_and_unpack_hook(lib):
    def unpack(t):
        return t

    a = randn(lib, 3, requires_grad=True)
    with lib.autograd.graph.saved_tensors_hooks(lambda t: t, unpack):
        b = a * a
    c = b.exp()
    assert b.grad_fn._raw_saved_self.unpack_hook is unpack
    assert b.grad_fn._raw_saved_self.data is a
    raw = c.grad_fn._raw_saved_result
    assert raw.unpack_hook is None and close(raw.data, c) and raw.data.grad_fn is None
    raw.register_hooks(lambda t: t * 10, unpack)
    assert raw.unpack_hook is unpack and close(raw.data, c * 10)
    assert not raw.data.requires_grad


def test_a_left_out_optional_tensor(lib):
    x = randn(lib, 2, 3, requires_grad=True)
    out = lib.nn.functional.layer_norm(x, (3,))
    assert out.grad_fn._saved_weight is None
    raw = out.grad_fn._raw_saved_weight
    assert raw.data is None and raw.unpack_hook is None
    with pytest.raises(
        RuntimeError, match="^Calling register_hooks on a saved tensor with value None is forbidden"
    ):
        raw.register_hooks(lambda t: t, lambda t: t)


def saving(lib, *which):
    """A custom identity Function whose forward saves ``which`` ("x": its input, "out": its
    output, None) and whose backward is ``g * x``, or ``g`` when it saved no input."""

    class Saving(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            out = x * 1
            ctx.save_for_backward(*({"x": x, "out": out, None: None}[w] for w in which))
            return out

        @staticmethod
        def backward(ctx, g):
            saved = ctx.saved_tensors
            return g * saved[which.index("x")] if "x" in which else g

    return Saving


def test_custom_function_raw_saved_tensors(lib):
    a = randn(lib, 5, requires_grad=True)
    y = saving(lib, "x", None).apply(a)
    assert y.grad_fn.saved_tensors[0] is a and y.grad_fn.saved_tensors[1] is None
    saved = y.grad_fn._raw_saved_tensors
    assert type(saved) is tuple and len(saved) == 2
    assert type(saved[0]).__name__ in ("SavedTensor", "RawSavedTensor")
    assert type(saved[1]) is type(saved[0])  # (None too: it can't tell without unpacking)
    assert saved[0] is y.grad_fn._raw_saved_tensors[0]  # one object per saved value
    assert saved[0].data is a and saved[0].unpack_hook is None
    with pytest.raises(RuntimeError, match="None is forbidden"):
        saved[1].register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        saved[0].register_hooks(lambda x: x)
    with pytest.raises(TypeError, match="incompatible function arguments"):
        saved[0].register_hooks(1, 1)
    saved[0].register_hooks(lambda x: x, lambda x: x)
    with pytest.raises(RuntimeError, match="already been set"):
        saved[0].register_hooks(lambda x: x, lambda x: x)
    y.sum().backward()
    del saved
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn._raw_saved_tensors
    with pytest.raises(RuntimeError, match="after they have already been freed"):
        y.grad_fn.saved_tensors
    y = saving(lib).apply(a)
    assert y.grad_fn.saved_tensors == () and y.grad_fn._raw_saved_tensors == ()


def test_custom_function_raw_saved_tensors_hooks_change_what_backward_reads(lib):
    a = randn(lib, 5, requires_grad=True)
    y = saving(lib, "x").apply(a)
    (raw,) = y.grad_fn._raw_saved_tensors
    raw.register_hooks(lambda t: t * 10, lambda packed: packed / 5)  # reads back 2 * a
    assert close(raw.data, a * 10) and close(y.grad_fn.saved_tensors[0], 2 * a)
    y.sum().backward()
    assert close(a.grad, 2 * a)


def test_custom_function_raw_saved_output(lib):
    a = randn(lib, 5, requires_grad=True)
    y = saving(lib, "out").apply(a)
    (raw,) = y.grad_fn._raw_saved_tensors
    raw.register_hooks(lambda t: t, lambda t: t * 3)
    (out,) = y.grad_fn.saved_tensors
    assert close(out, 3 * y) and out.grad_fn is y.grad_fn


def test_built_in_nodes_have_no_raw_saved_tensors(lib):
    y = randn(lib, 5, requires_grad=True) * 2
    with pytest.raises(AttributeError, match="'MulBackward0' object has no attribute"):
        y.grad_fn._raw_saved_tensors


# --------------------------------------------------------------------- GradientEdge


def graph(lib):
    x = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64, requires_grad=True)
    h = x * 2
    return x, h, h.exp()


def test_grad_of_a_gradient_edge(lib):
    edge = lib.autograd.graph.get_gradient_edge
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(y), x, lib.ones(3, dtype=lib.float64))
    assert close(g, 2 * y)
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad([edge(y), y], [x], [lib.ones(3, dtype=lib.float64)] * 2)
    assert close(g, 4 * y)
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(y), edge(h), lib.ones(3, dtype=lib.float64))
    assert close(g, y)
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(y.sum()), x)  # (a one-element output: implicit grad)
    assert close(g, 2 * y)
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(x), x, lib.ones(3, dtype=lib.float64))
    assert close(g, lib.ones(3, dtype=lib.float64))
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(y), x, lib.ones(3, dtype=lib.float64), create_graph=True)
    assert g.grad_fn is not None


def test_grad_of_a_gradient_edge_errors(lib):
    edge = lib.autograd.graph.get_gradient_edge
    x, h, y = graph(lib)
    with pytest.raises(
        RuntimeError, match="^grad can be implicitly created only for scalar outputs"
    ):
        lib.autograd.grad(edge(y), x)
    with pytest.raises(RuntimeError, match=r"^Mismatch in shape: grad_output\[0\] has a shape of"):
        lib.autograd.grad(edge(y), x, lib.ones(2, dtype=lib.float64))
    z = randn(lib, 3, requires_grad=True)
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        lib.autograd.grad(edge(y), z, lib.ones(3, dtype=lib.float64))


def test_a_gradient_edge_is_no_grad_output(lib):
    edge = lib.autograd.graph.get_gradient_edge
    for outputs in (lambda y: y, edge):  # (outputs given as tensors or as edges alike)
        x, h, y = graph(lib)
        # a GradientEdge is a named tuple: alone, it is read as the sequence (node, output_nr)
        with pytest.raises(
            TypeError, match="^gradients can be either Tensors or None, but got Mul"
        ):
            lib.autograd.grad(outputs(y), x, grad_outputs=edge(h))
        with pytest.raises(
            TypeError, match="^gradients can be either Tensors or None, but got GradientEdge"
        ):
            lib.autograd.grad([outputs(y)], x, grad_outputs=[edge(h)])
        with pytest.raises(
            TypeError, match="^gradients can be either Tensors or None, but got Mul"
        ):
            lib.autograd.backward(outputs(y), grad_tensors=edge(h))


def test_grad_outputs_of_an_edge_are_tensors_or_none(lib):
    edge = lib.autograd.graph.get_gradient_edge
    ones = lib.ones(3, dtype=lib.float64)
    x, h, y = graph(lib)
    with pytest.raises(TypeError, match="^gradients can be either Tensors or None, but got float"):
        lib.autograd.grad([edge(y)], x, grad_outputs=[3.0])
    with pytest.raises(TypeError, match="^gradients can be either Tensors or None, but got list"):
        lib.autograd.grad([edge(y)], x, grad_outputs=[[1.0, 1.0, 1.0]])
    with pytest.raises(
        RuntimeError, match="^grad can be implicitly created only for scalar outputs"
    ):
        lib.autograd.grad([edge(y)], x, grad_outputs=[None])
    with pytest.raises(RuntimeError, match="^got 2 tensors and 1 gradients"):
        lib.autograd.grad([edge(y), y], x, grad_outputs=[ones])
    (g,) = lib.autograd.grad([edge(y.sum())], x, grad_outputs=[None], retain_graph=True)
    assert close(g, 2 * y)
    (g,) = lib.autograd.grad([edge(y)], x, grad_outputs=[ones, ones])  # (the extra one: unused)
    assert close(g, 2 * y)
    x, h, y = graph(lib)
    (g,) = lib.autograd.grad(edge(y), x, grad_outputs=lib.ones(3))  # (any float dtype)
    assert close(g, 2 * y) and g.dtype == lib.float64


def test_backward_with_gradient_edges(lib):
    edge = lib.autograd.graph.get_gradient_edge
    x, h, y = graph(lib)
    lib.autograd.backward(edge(y), lib.ones(3, dtype=lib.float64))
    assert close(x.grad, 2 * y)
    x, h, y = graph(lib)
    y.sum().backward(inputs=[edge(x)])
    assert close(x.grad, 2 * y)
    x, h, y = graph(lib)
    y.sum().backward(inputs=edge(x))
    assert close(x.grad, 2 * y)
    x, h, y = graph(lib)
    seen = []
    h.register_hook(seen.append)
    y.sum().backward(inputs=[edge(h)])  # (the gradient reaches h's edge, and stops there)
    assert x.grad is None and close(seen[0], y)
    x, h, y = graph(lib)
    lib.autograd.backward(edge(y), lib.ones(3, dtype=lib.float64), inputs=[edge(x)])
    assert close(x.grad, 2 * y)

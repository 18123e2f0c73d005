"""Grad mode, detach, graph edges, retained graphs and in-place changes, as PyTorch's own
autograd tests (test_autograd.py: test_no_grad, test_set_grad_generator_functions*,
test_detach*, test_next_functions, test_backward_twice_*, test_inplace, ...) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import math
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.autograd import engine
from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn

# --------------------------------------------------------------------------- grad mode


def test_no_grad_as_a_block_and_as_decorators(lib):
    x = lib.ones(5, 5, requires_grad=True)
    y = lib.ones(5, 5) * 4
    with lib.no_grad():
        w = x + y

    def adder(a, b):
        return a + b

    for decorated in (lib.no_grad()(adder), lib.no_grad(adder)):
        z = decorated(x, y)
        assert not w.requires_grad
        with pytest.raises(RuntimeError):
            w.backward(lib.ones(5, 5))
        assert w.grad_fn is None
        assert not z.requires_grad
        with pytest.raises(RuntimeError):
            z.backward(lib.ones(5, 5))
        assert z.grad_fn is None

    with lib.no_grad():
        assert not lib.is_grad_enabled()
        decorated(x, y)
        assert not lib.is_grad_enabled()


def test_enable_grad_as_a_decorator_without_parentheses(lib):
    @lib.enable_grad
    def doubler(x):
        return x * 2

    with lib.no_grad():
        z = doubler(lib.ones(1, requires_grad=True))
    assert z.requires_grad


def test_grad_mode_decorators_on_generators(lib):
    @lib.no_grad()
    def without_grad():
        for i in range(10):
            assert not lib.is_grad_enabled()
            yield i

    with lib.enable_grad():
        for _ in without_grad():
            assert lib.is_grad_enabled()

    @lib.enable_grad()
    def with_grad():
        for i in range(10):
            assert lib.is_grad_enabled()
            yield i

    with lib.no_grad():
        for _ in with_grad():
            assert not lib.is_grad_enabled()


def test_grad_mode_decorators_and_blocks_calling_each_other(lib):
    @lib.enable_grad()
    def enabling(depth):
        assert lib.is_grad_enabled()
        if depth > 0:
            disabling(depth - 1)
            assert lib.is_grad_enabled()

    @lib.no_grad()
    def disabling(depth):
        assert not lib.is_grad_enabled()
        if depth > 0:
            enabling(depth - 1)
            assert not lib.is_grad_enabled()

    def enabling_block(depth):
        with lib.enable_grad():
            assert lib.is_grad_enabled()
            if depth > 0:
                disabling_block(depth - 1)
                assert lib.is_grad_enabled()

    def disabling_block(depth):
        with lib.no_grad():
            assert not lib.is_grad_enabled()
            if depth > 0:
                enabling_block(depth - 1)
                assert not lib.is_grad_enabled()

    for mode in (lib.enable_grad, lib.no_grad):
        with mode():
            before = lib.is_grad_enabled()
            enabling(10)
            assert lib.is_grad_enabled() == before
            enabling_block(10)
            assert lib.is_grad_enabled() == before


# --------------------------------------------------------------------------- detach


def test_detach_and_detach_in_place(lib):
    x = randn(lib, 10, 10, requires_grad=True)
    y = (x + 2).detach()
    z = y * 4 + 2
    assert not y.requires_grad
    assert not z.requires_grad

    x = randn(lib, 10, 10, requires_grad=True)
    y = (x * 2).detach()
    assert not y.requires_grad
    assert y.grad_fn is None
    (x + y).sum().backward()
    assert same(x.grad, lib.ones(10, 10))

    x = randn(lib, 10, 10, seed=1, requires_grad=True)
    y = randn(lib, 10, 10, seed=2, requires_grad=True)
    a = x * 2
    (y + a).sum().backward(retain_graph=True)
    a.detach_()
    assert not a.requires_grad
    (y + a).sum().backward()  # no longer reaches x
    assert same(x.grad, lib.ones(10, 10) * 2)
    assert same(y.grad, lib.ones(10, 10) * 2)

    view = x.narrow(0, 1, 4)
    with pytest.raises(RuntimeError, match="view"):
        view.detach_()


def test_detaching_a_base_in_place_leaves_its_view_alone(lib):
    x = randn(lib, 10, 10, requires_grad=True)
    view = x.narrow(0, 1, 4)
    x.detach_()
    assert not x.requires_grad
    assert view.requires_grad
    assert view.grad_fn is not None


# --------------------------------------------------------------------------- the graph


def test_next_functions_of_an_add(lib):
    x = randn(lib, 5, 5, seed=1, requires_grad=True)
    y = randn(lib, 5, 5, seed=2, requires_grad=True)
    a = x + y
    assert a.grad_fn is not None
    edges = a.grad_fn.next_functions
    assert len(edges) == 2
    for node, input_nr in edges:
        assert type(node).__name__ == "AccumulateGrad"
        assert input_nr == 0

    edges = (a + 5).grad_fn.next_functions
    assert len(edges) == 2
    assert edges[0][0] is a.grad_fn
    assert edges[1][0] is None


def test_the_same_root_twice_counts_twice(lib):
    a = randn(lib, 5, 5, seed=1, requires_grad=True)
    b = randn(lib, 5, 5, seed=2, requires_grad=True)
    x = a * b
    grad_output = randn(lib, 5, 5, seed=3)
    lib.autograd.backward([x, x], [grad_output, grad_output])
    assert same(a.grad, b * grad_output * 2)
    assert same(b.grad, a * grad_output * 2)


def test_backward_with_a_none_gradient_for_a_non_scalar_raises(lib):
    b = randn(lib, 5, 5, requires_grad=True) + 2
    with pytest.raises(RuntimeError):
        lib.autograd.backward([b], [None])


def written_by_index(lib):
    """torch's graph with saved values: ``c[[1, 2]] = b[[1, 1]]``."""
    b = randn(lib, 3, requires_grad=True)
    c = lib.zeros(3, dtype=lib.float64)
    c[[1, 2]] = b[[1, 1]]
    return c


def test_a_second_backward_through_saved_values_needs_retain_graph(lib):
    c = written_by_index(lib)
    c.backward(lib.ones(3, dtype=lib.float64))
    with pytest.raises(RuntimeError, match="Specify retain_graph=True"):
        c.backward(lib.ones(3, dtype=lib.float64))

    c = written_by_index(lib)
    c.backward(lib.ones(3, dtype=lib.float64), retain_graph=True)
    c.backward(lib.ones(3, dtype=lib.float64))


def test_a_second_backward_without_saved_values_is_fine(lib):
    b = randn(lib, 3, requires_grad=True)
    c = b + 1
    c.backward(lib.ones(3, dtype=lib.float64))
    c.backward(lib.ones(3, dtype=lib.float64))
    assert same(b.grad, [2.0, 2.0, 2.0])


@pytest.fixture
def warn_always(lib, monkeypatch):
    """A warning given once per process is given again (torch's test sets
    ``set_warn_always``; teachgrad keeps its once-flag in the engine)."""
    if lib is tg:
        monkeypatch.setattr(engine, "_warned_reference_cycle", False)
        yield
        return
    before = lib.is_warn_always_enabled()
    lib.set_warn_always(True)
    yield
    lib.set_warn_always(before)


@pytest.mark.usefixtures("warn_always")
def test_backward_with_create_graph_warns_and_grad_does_not(lib):
    b = randn(lib, 3, requires_grad=True)
    c = b * b
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        c.backward(lib.ones_like(c), create_graph=True)
    b.grad = None
    assert any("Using backward() with create_graph=True" in str(w.message) for w in caught)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        lib.autograd.grad(c, b, lib.ones_like(c), create_graph=True)
    assert not any("Using backward() with create_graph=True" in str(w.message) for w in caught)


def test_an_unused_chunk_gets_a_zero_gradient(lib):
    x = randn(lib, 10, 10, requires_grad=True)
    o = x.chunk(5)[2] * 4 + 2
    o.sum().backward()
    expected = np.zeros((10, 10))
    expected[4:6] = 4
    assert same(x.grad, expected)

    with lib.no_grad():
        x.grad.zero_()
    grad_output = randn(lib, 2, 10, seed=1)
    x.chunk(5)[0].backward(grad_output)
    expected = np.zeros((10, 10))
    expected[:2] = grad_output.numpy()
    assert same(x.grad, expected)


# --------------------------------------------------------------------------- in-place


def test_in_place_changes_and_the_values_backward_needs(lib):
    x = lib.ones(5, 5, dtype=lib.float64, requires_grad=True)
    y = (lib.ones(5, 5, dtype=lib.float64) * 4).requires_grad_(True)
    ones = lib.ones(5, 5, dtype=lib.float64)

    z = x * y
    q = z + y
    w = z * y
    z.add_(2)
    q.backward(ones, retain_graph=True)  # add saves nothing: fine
    with pytest.raises(RuntimeError):
        w.backward(ones)  # mul saved z

    z = x * y
    q = z * y
    r = z + y
    w = z.add_(y)
    w.backward(ones, retain_graph=True)
    r.backward(ones, retain_graph=True)
    with pytest.raises(RuntimeError):
        q.backward(ones)

    with lib.no_grad():
        x.grad.zero_()
    m = x / 2
    z = m + y / 8
    q = z * y
    r = z + y
    before = z._version
    w = z.exp_()
    assert z._version != before
    r.backward(ones, retain_graph=True)
    assert same(x.grad, ones / 2)
    w.backward(ones, retain_graph=True)
    assert same(x.grad, np.full((5, 5), (1 + math.e) / 2))
    with pytest.raises(RuntimeError):
        q.backward(ones)

    leaf = lib.ones(5, 5, dtype=lib.float64, requires_grad=True)
    x = leaf.clone()
    x.add_(10)
    assert same(x, ones * 11)
    y = x + 2
    y.backward(ones)
    assert same(leaf.grad, ones)
    z = x * y
    x.add_(2)
    with pytest.raises(RuntimeError):
        z.backward(ones)


@pytest.mark.parametrize(
    "shape, index",
    [
        ((5, 5), 1),
        ((5,), 1),
        ((1,), 0),
        ((10,), [0, 4, 2]),
        ((5, 5), ([0, 4], [2, 2])),
        ((5, 5, 5), (slice(None), slice(None), [1, 3])),
        ((5, 5, 5), ([1, 3], slice(None), slice(None))),
        ((5, 5, 5), (slice(None), [2, 4], [1, 3])),
    ],
)
def test_setitem_zeroes_the_gradient_of_what_it_overwrote(lib, shape, index):
    x = lib.ones(*shape, requires_grad=True)
    y = x + 2
    before = y._version
    y[index] = 2
    assert y._version != before
    y.backward(lib.ones(*shape))
    expected = np.ones(shape)
    expected[index] = 0
    assert same(x.grad, expected)


@pytest.mark.parametrize(
    "shape, index",
    [((5, 5), 3), ((5, 5), ([0, 1], [1, 0])), ((5,), 3), ((5,), [[0, 1, 2, 3]])],
)
def test_setitem_with_a_tensor_value_sends_it_the_gradient(lib, shape, index):
    port.setitem_tensor(lib, shape, index)

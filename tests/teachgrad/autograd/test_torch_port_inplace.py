"""In-place changes to views, as PyTorch's own autograd tests (test_autograd.py,
TestAutogradDeviceType: test_inplace_on_view_*, test_inplace_multiple_output_view_of_view)
check them on the CPU.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts
the facts torch's test asserts. Left out: torch's unsafe_split / unsafe_chunk (not in
teachgrad).
"""

import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn


def add_in_place(lib):
    """A custom Function that adds ``y`` to ``x`` in place (``mark_dirty``)."""

    class PyAdd(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.mark_dirty(x)
            x.add_(y)
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad, grad

    return PyAdd.apply


def test_a_changed_view_then_backward_through_its_base(lib):
    root = randn(lib, 2, 2, requires_grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[2, 2], [1, 1]]


def test_a_changed_view_then_backward_through_another_view(lib):
    root = randn(lib, 2, 2, requires_grad=True)
    x = root.clone()
    v1 = x.narrow(0, 0, 1)
    v2 = x.narrow(0, 0, 1)
    v1.mul_(2)
    v2.sum().backward()
    assert root.grad.tolist() == [[2, 2], [0, 0]]


def test_a_changed_view_of_a_view_then_backward_through_the_base(lib):
    root = randn(lib, 2, 2, requires_grad=True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1]]


def test_reading_grad_fn_under_no_grad_after_a_view_changed(lib):
    a = lib.ones(3, 1, dtype=lib.float64, requires_grad=True)
    b = a * 2
    c = b.view_as(b)
    c[0][0] = 3
    with lib.no_grad():
        c.grad_fn  # (torch regenerates the view's graph here: it must stay usable)
    c.sum().backward()
    assert a.grad.tolist() == [[0.0], [2.0], [2.0]]


def test_gradcheck_of_changes_to_views_of_views(lib):
    a = randn(lib, 4, 4, requires_grad=True)
    b = randn(lib, 2, 2, seed=1, requires_grad=True)

    def func(root, b):
        x = root.clone()
        x.narrow(1, 2, 2).narrow(0, 1, 2).mul_(b)
        x.narrow(1, 0, 2).narrow(0, 1, 2).mul_(b)
        return x

    assert lib.autograd.gradcheck(func, [a, b], raise_exception=True)
    go = randn(lib, 4, 4, seed=2, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_changing_an_output_of_unbind_is_an_error(lib):
    root = lib.arange(9.0, dtype=lib.float64).reshape(3, 3).requires_grad_()
    views = root.clone().unbind()
    with pytest.raises(RuntimeError):
        views[0].mul_(2)


def test_changing_a_view_of_an_unbind_output_is_an_error(lib):
    a = randn(lib, 10, requires_grad=True).clone()
    c = a.unbind(0)[0].view_as(a.unbind(0)[0])
    with pytest.raises(RuntimeError):
        c.mul_(2)


def test_changing_an_unbind_output_of_a_view_is_an_error(lib):
    a = randn(lib, 10, requires_grad=True).clone()
    c = a.view_as(a).unbind(0)
    with pytest.raises(RuntimeError):
        c[0].mul_(2)


def test_a_changed_view_makes_its_base_require_grad(lib):
    a = randn(lib, 4, 4)
    b = randn(lib, 4, 2, seed=1, requires_grad=True)
    seen = []

    def func(root, b):
        x = root.clone()
        seen.append(x.requires_grad)
        x.narrow(1, 2, 2).mul_(b)
        seen.append(x.requires_grad)
        return x

    assert lib.autograd.gradcheck(func, [a, b], raise_exception=True)
    assert seen[:2] == [False, True]
    go = randn(lib, 4, 4, seed=2, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_backward_through_the_changed_view_itself(lib):
    a = lib.tensor([2.0, 5.0], requires_grad=False)
    b = lib.tensor([3.0], requires_grad=True)
    res = a.narrow(0, 1, 1).mul_(b)
    res.sum().backward()
    assert b.grad.tolist() == [5]
    with pytest.warns(UserWarning, match="that is not a leaf Tensor is being accessed"):
        assert a.grad is None  # (a now has a history: the in-place mul_ of its view)


def test_changing_a_base_makes_its_earlier_views_require_grad(lib):
    r = lib.ones(1, dtype=lib.float64, requires_grad=True)
    seen = []

    def fn(r):
        x = lib.ones(5, dtype=lib.float64)
        v = x.select(0, 1)
        seen.append((v.requires_grad, v.grad_fn is None))
        x.add_(r)  # v now depends on r, through the in-place op on x
        seen.append((v.requires_grad, v.grad_fn is None))
        return v

    assert lib.autograd.gradcheck(fn, [r])
    assert lib.autograd.gradgradcheck(fn, [r])
    assert seen[:2] == [(False, True), (True, False)]


def test_gradcheck_of_a_custom_in_place_function_on_views(lib):
    a = randn(lib, 4, 4, requires_grad=True)
    b = randn(lib, 2, 2, seed=1, requires_grad=True)
    py_add = add_in_place(lib)

    def func(root, b):
        x = root.clone()
        py_add(x.narrow(1, 2, 2).narrow(0, 1, 2), b)
        py_add(x.narrow(1, 0, 2).narrow(0, 1, 2), b)
        return x

    assert lib.autograd.gradcheck(func, [a, b], raise_exception=True)
    go = randn(lib, 4, 4, seed=2, requires_grad=True)
    assert lib.autograd.gradgradcheck(func, (a, b), (go,))


def test_a_changed_view_of_a_non_contiguous_leaf(lib):
    root = lib.ones(2, 3, 2).select(2, 1).t().requires_grad_(True)
    x = root.clone()
    x.narrow(0, 0, 1).narrow(1, 1, 1).mul_(2)
    x.sum().backward()
    assert root.grad.tolist() == [[1, 2], [1, 1], [1, 1]]


@pytest.mark.parametrize("split", ["split", "split_sizes", "chunk"])
def test_changing_an_output_of_a_multi_view_op_is_an_error(lib, split):
    a = randn(lib, 3, 3, requires_grad=True)
    b = a + a
    if split == "split":
        s1, s2, _ = b.split(1)
    elif split == "split_sizes":
        s1, s2, _ = b.split((1, 1, 1))
    else:
        s1, s2, _ = b.chunk(3)
    with pytest.raises(
        RuntimeError, match="This view is the output of a function that returns multiple views."
    ):
        s1.mul_(s2)


def test_a_custom_in_place_function_on_a_view_with_an_unused_input(lib):
    a = lib.tensor([1.0], requires_grad=True)
    v = a.clone()[:]
    b = lib.tensor(1.0, requires_grad=True)

    class InplaceFunc(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, other):
            ctx.mark_dirty(x)
            return x.mul_(2)

        @staticmethod
        def backward(ctx, grad):
            return grad * 2, None

    out = InplaceFunc.apply(v, b)
    out.backward()
    assert b.grad is None
    assert a.grad.item() == 2


def test_gradient_of_a_matrix_times_an_expanded_vector(lib):
    mat = randn(lib, 2, 2)
    vec = randn(lib, 1, seed=1).requires_grad_(True)

    def fn(vec):
        return (mat @ vec.expand(2)).sum()

    assert lib.autograd.gradcheck(fn, (vec,))
    assert lib.autograd.gradgradcheck(fn, (vec,))
    assert same(lib.autograd.grad(fn(vec), vec)[0], mat.sum().reshape(1))

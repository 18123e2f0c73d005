"""Grad mode on classes and coroutines, the legacy Variable API, indexing, expanded gradients,
undefined gradients reaching hooks, and anomaly mode's bookkeeping, as PyTorch's own autograd
tests (test_autograd.py: test_grad_mode_class_decoration, test_set_grad_coroutines*,
test_grad_mode_restored_reentrant, test_volatile_deprecated, test_saved_variables_deprecated,
test_version_counter, test_increment_version, test_type_conversions, test_set_data_self_requires_grad,
test_set_data_preserve_pyobj, test_indexing, test_select_sum, test_diagonal_expanded_v,
test_select_expanded_v, test_slice_expanded_v, test_anomaly_assign_parent_cleanup,
test_nested_anomaly_printstack_cleanup, test_no_unnecessary_save, test_backward_with_scalar_input,
and the undefined-gradient cases of test_gradcheck_undefined_grad) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. (test_attribute_deletion is in test_torch_port_leaves.py.)
"""

import gc
import warnings
import weakref

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


randn = port.randn

# --------------------------------------------------------------------------- grad mode


def test_grad_mode_class_decoration(lib):
    with pytest.warns(FutureWarning, match="Decorating classes is deprecated"):

        @lib.no_grad()
        class Foo:
            def __init__(self):
                assert not lib.is_grad_enabled()  # the class's construction runs without grad

            def foo(self):
                assert lib.is_grad_enabled()  # ... its methods are not decorated

    Foo().foo()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # decorating functions and methods is fine

        @lib.no_grad()
        def foo():
            assert not lib.is_grad_enabled()

        class Foo2:
            @lib.no_grad()
            def __init__(self):
                assert not lib.is_grad_enabled()

            @lib.no_grad()
            def foo(self):
                assert not lib.is_grad_enabled()

        foo()
        Foo2().foo()


MODES = pytest.mark.parametrize("inside", ["no_grad", "enable_grad"])


def in_mode(lib, inside):
    """``(decorator for the coroutine, the block around the caller, the coroutine's mode)``:
    the caller runs in the opposite mode."""
    outside = "enable_grad" if inside == "no_grad" else "no_grad"
    return getattr(lib, inside)(), getattr(lib, outside)(), inside == "enable_grad"


@MODES
def test_set_grad_coroutines(lib, inside):
    decorate, block, enabled = in_mode(lib, inside)

    @decorate
    def coro(n=10):
        assert lib.is_grad_enabled() == enabled
        for i in range(n):
            assert lib.is_grad_enabled() == enabled
            r = yield i
            assert lib.is_grad_enabled() == enabled
            assert i == r

    with block:
        c, r = coro(), None
        with pytest.raises(StopIteration):
            while True:
                assert lib.is_grad_enabled() != enabled
                r = c.send(r)
                assert lib.is_grad_enabled() != enabled


@MODES
def test_set_grad_coroutines_benign_exceptions(lib, inside):
    decorate, block, enabled = in_mode(lib, inside)

    class RecoverableException(Exception):
        pass

    @decorate
    def coro(n=10):
        has_raised = False
        for i in range(n):
            try:
                assert lib.is_grad_enabled() == enabled
                yield (-i if has_raised else i)
            except RecoverableException:
                assert lib.is_grad_enabled() == enabled
                has_raised = True

    with block:
        c = coro()
        assert next(c) == 0
        with pytest.raises(StopIteration):
            while True:
                assert c.throw(RecoverableException) < 0


@MODES
def test_set_grad_coroutines_critical_exceptions(lib, inside):
    decorate, block, enabled = in_mode(lib, inside)

    class UnrecoverableException(Exception):
        pass

    class SecondaryException(Exception):
        pass

    @decorate
    def coro(n=10):
        for i in range(n):
            try:
                assert lib.is_grad_enabled() == enabled
                yield i
            except UnrecoverableException:
                assert lib.is_grad_enabled() == enabled
                raise SecondaryException from None

    with block:
        c = coro()
        assert next(c) == 0
        with pytest.raises(SecondaryException):
            c.throw(UnrecoverableException)
        assert lib.is_grad_enabled() != enabled


@MODES
def test_set_grad_coroutines_exit(lib, inside):
    decorate, block, enabled = in_mode(lib, inside)
    state = set()

    @decorate
    def coro():
        for i in range(10):
            try:
                assert lib.is_grad_enabled() == enabled
                yield i
            except GeneratorExit:
                assert lib.is_grad_enabled() == enabled
                state.add("GeneratorExit")
                raise

    with block:
        c = coro()
        for _ in range(5):
            next(c)
        c.close()
    assert "GeneratorExit" in state


@pytest.mark.parametrize("create_graph", [False, True])
def test_grad_mode_restored_reentrant(lib, create_graph):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.clone()

        @staticmethod
        def backward(ctx, go):
            original = lib.is_grad_enabled()  # (False, or True with create_graph)
            with lib.enable_grad():
                assert lib.is_grad_enabled()
                foo = randn(lib, *go.shape, seed=1, requires_grad=True)
                (grad,) = lib.autograd.grad(foo**3, foo, grad_outputs=go)
                assert lib.is_grad_enabled()
            assert lib.is_grad_enabled() == original
            return grad

    inp = randn(lib, 3, requires_grad=True)
    with warnings.catch_warnings():  # (create_graph=True warns once per process, in both)
        warnings.simplefilter("ignore")
        MyFunction.apply(inp).sum().backward(create_graph=create_graph)
    assert inp.grad is not None


# --------------------------------------------------------------------------- legacy Variable API


def test_volatile_deprecated(lib):
    v = randn(lib, 3, 3)
    with pytest.warns(UserWarning, match="volatile"):
        assert v.volatile is False


def test_saved_variables_deprecated(lib):
    class MyFunction(lib.autograd.Function):
        @staticmethod
        def forward(ctx, tensor1, tensor2):
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_variables
            return grad_output, grad_output

    x = randn(lib, 3, 3, requires_grad=True)
    y = randn(lib, 3, 3, seed=1, requires_grad=True)
    with pytest.warns(
        DeprecationWarning, match="'saved_variables' is deprecated; use 'saved_tensors'"
    ):
        MyFunction.apply(x, y).sum().backward()
    assert same(x.grad, np.ones((3, 3)))


def test_version_counter(lib):
    x = randn(lib, 1, 2)
    x_saved_version = x._version
    x.add_(1).add_(1)  # an in-place op bumps the version
    assert x._version > x_saved_version
    xz = x[:]  # a view shares the version counter
    assert x._version == xz._version
    xz.add_(1)
    assert x._version == xz._version
    x_saved_version = x._version
    x.data = randn(lib, 2, 3)  # `x.data = y` keeps x's version counter
    assert x._version == x_saved_version
    x.add_(1)
    assert x._version > x_saved_version
    assert x._version == xz._version  # ... which it still shares with xz
    xz.add_(1)
    assert x._version == xz._version


def test_increment_version(lib):
    a = randn(lib, 5, requires_grad=True)
    v = a._version
    lib.autograd.graph.increment_version(a)
    assert a._version == v + 1
    a = lib.zeros(5, dtype=lib.int32)
    v = a._version
    lib.autograd.graph.increment_version(a)
    assert a._version == v + 1
    with lib.inference_mode():
        a = lib.ones(5, requires_grad=True)
        lib.autograd.graph.increment_version(a)  # an inference tensor: no error
    lib.autograd.graph.increment_version(a)  # ... outside the mode neither


def test_type_conversions(lib):
    x = randn(lib, 5, 5, dtype=lib.float32)
    assert x.float().dtype is lib.float32
    assert x.double().dtype is lib.float64
    assert x.long().dtype is lib.int64
    for dtype in (lib.float64, lib.float32, lib.int32, lib.uint8):
        y = lib.randint(5, (5, 5), dtype=dtype)
        for other in (y, lib.autograd.Variable(y)):
            assert x.type_as(other).dtype is dtype
    fvar = lib.autograd.Variable(randn(lib, 5, 5, dtype=lib.float32), requires_grad=True)
    fvar.double().sum().backward()  # the gradient comes back in the tensor's own dtype
    assert same(fvar.grad, np.ones((5, 5)))
    assert fvar.grad.dtype is lib.float32
    dvar = lib.autograd.Variable(randn(lib, 5, 5), requires_grad=True)
    dvar.float().sum().backward()
    assert same(dvar.grad, np.ones((5, 5)))
    assert dvar.grad.dtype is lib.float64


def test_set_data_self_requires_grad(lib):
    a = lib.tensor(1.0, requires_grad=True)
    a.data = lib.tensor(2.0)
    assert a.item() == 2.0
    with pytest.raises(
        RuntimeError,
        match="^data set to a tensor that requires gradients must be floating point or complex dtype",
    ):
        a.data = lib.tensor(3, dtype=lib.int64)


def test_set_data_preserve_pyobj(lib):
    a, b = randn(lib, 1, 2), randn(lib, 1, 2, seed=1)
    b_id_saved = id(b)
    b.data = a
    assert id(b) == b_id_saved


# --------------------------------------------------------------------------- indexing


INDICES_2D = [
    1,
    (1, 1),
    slice(1, None),
    slice(None, 2),
    (slice(None, 2), 2),
    (slice(1, 2), 2),
    (1, slice(2, None)),
    (slice(None, None), slice(2, None)),
    "long [0, 2]",
    "mask",
    (Ellipsis, slice(2, None)),
    ([0], [0]),
    ([1, 2, 3], [0]),
    ([1, 2], [2, 1]),
    ([[1, 2], [3, 0]], [[0, 1], [2, 3]]),
    (slice(None), [2, 3]),
    ([2, 3], slice(None)),
    [0],
    ([0],),
]
INDICES_3D = [
    (slice(None), [0], [0]),
    ([0], [0], slice(None)),
    (slice(None), [0, 1, 2], [0]),
    ([0, 1, 2], [0], slice(None)),
    (slice(None), [1, 2], [2, 1]),
    ([1, 2], [2, 1], slice(None)),
    (slice(None), [[1, 2], [2, 0]], [[0, 1], [2, 3]]),
    ([[1, 2], [3, 0]], [[0, 1], [2, 2]], slice(None)),
    (slice(None), slice(None), [2, 1]),
    (slice(None), [2, 1], slice(None)),
    ([2, 1], slice(None), slice(None)),
    ([0],),
    ([0], slice(None)),
    ([0], Ellipsis),
    ([1, 2], [0, 1]),
    ([1, 2], [0, 1], Ellipsis),
    (Ellipsis, [1, 2], [0, 1]),
    "long [0, 1], ...",
]


def as_index(lib, idx, shape):
    """torch's index, with its tensors made on ``lib`` (named by a string here)."""
    if idx == "long [0, 2]":
        return lib.tensor([0, 2])
    if idx == "long [0, 1], ...":
        return lib.tensor([0, 1]), Ellipsis
    if idx == "mask":
        return lib.tensor(np.random.default_rng(0).uniform(size=shape) > 0.5)
    return idx


@pytest.mark.parametrize(
    "shape, idx",
    [((4, 4), i) for i in INDICES_2D] + [((4, 3, 4), i) for i in INDICES_3D],
    ids=str,
)
def test_indexing(lib, shape, idx):
    x = lib.arange(1.0, 1 + np.prod(shape), dtype=lib.float64).view(*shape)
    y = lib.autograd.Variable(x, requires_grad=True)
    idx = as_index(lib, idx, shape)
    indexed_tensor, indexed_var = x[idx], y[idx]
    assert same(indexed_var.data, indexed_tensor)
    indexed_var.sum().backward()
    expected_grad = lib.zeros(*shape, dtype=lib.float64)
    expected_grad[idx] = 1
    assert same(y.grad, expected_grad)


# --------------------------------------------------------------------------- expanded gradients


def test_select_sum(lib):
    x = randn(lib, 10, requires_grad=True)

    def func(x):
        return x.select(0, 1).sum()

    assert lib.autograd.gradcheck(func, [x])
    assert lib.autograd.gradgradcheck(func, [x])


def test_diagonal_expanded_v(lib):
    v_expanded = lib.tensor(0.5, dtype=lib.float64).expand(10)
    a = randn(lib, 10, 10, requires_grad=True)
    (result,) = lib.autograd.grad(a.diagonal(), a, v_expanded)
    assert same(result, np.eye(10) * 0.5)


def test_select_expanded_v(lib):
    v_expanded = randn(lib, 10).expand(10, 10)
    a = randn(lib, 10, 10, 10, seed=1, requires_grad=True)
    (result,) = lib.autograd.grad(a[0], a, v_expanded)
    expected = np.zeros((10, 10, 10))
    expected[0] = port.values(v_expanded)
    assert same(result, expected)


def test_slice_expanded_v(lib):
    v_expanded = randn(lib, 10, 1).expand(2, 10, 10)
    a = randn(lib, 10, 10, 10, seed=1, requires_grad=True)
    (result,) = lib.autograd.grad(a[3:5], a, v_expanded)
    expected = np.zeros((10, 10, 10))
    expected[3:5] = port.values(v_expanded)
    assert same(result, expected)


def test_no_unnecessary_save(lib):
    mu = lib.ones(1, requires_grad=True)
    x = lib.empty(1)
    loss = 0
    for i in range(3):
        x.detach_()
        x.copy_(mu + i)  # x changes in place each time round ...
        multiplied = x * lib.tensor([float(i)])  # ... which is fine: x * ft saves only ft
        loss += multiplied.sum()
    loss.backward()
    assert same(mu.grad, [3.0])


def test_backward_with_scalar_input(lib):
    x = randn(lib, requires_grad=True)
    out = x**2
    out.backward(inputs=x)  # one tensor, not a list
    assert same(x.grad, 2 * x)


# --------------------------------------------------------------------------- undefined gradients


def sends_no_gradient(lib):
    """torch's test node ``UndefinedGrad``: the identity, whose backward gives None (an
    undefined gradient)."""
    return lib._C._functions.UndefinedGrad()


def test_tensor_hooks_see_an_undefined_gradient_as_none(lib):
    seen = []
    x = lib.ones(2, requires_grad=True)
    x.register_hook(lambda g: seen.append(("leaf", g)))
    y = x * 1
    y.register_hook(lambda g: seen.append(("non-leaf", g)))
    y.retain_grad()
    sends_no_gradient(lib)(y).sum().backward()
    assert seen == [("non-leaf", None), ("leaf", None)]
    assert y.grad is None
    assert x.grad is None


@pytest.mark.parametrize("leaf", [True, False])
def test_a_hook_cannot_replace_an_undefined_gradient(lib, leaf):
    x = lib.ones(2, requires_grad=True)
    y = x if leaf else x * 1
    y.register_hook(lambda g: lib.ones(2))
    with pytest.raises(RuntimeError, match="^can't replace a None gradient with a non-None value"):
        sends_no_gradient(lib)(y).sum().backward()


# --------------------------------------------------------------------------- anomaly mode


def test_anomaly_assign_parent_cleanup(lib):
    def get_ref():
        x = randn(lib, 2, 2, requires_grad=True)
        t = x.exp()
        with lib.autograd.detect_anomaly():  # (exp's backward makes new nodes here)
            lib.autograd.grad(t, x, lib.ones_like(t), create_graph=True)

        class Foo:
            pass

        my_obj = Foo()
        t.grad_fn.metadata[0] = my_obj
        return t, weakref.ref(my_obj)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ("Anomaly Detection has been enabled")
        t, ref = get_ref()
    assert ref() is not None
    del t
    gc.collect()
    assert ref() is None  # nothing anomaly mode made keeps the node alive


def test_nested_anomaly_printstack_cleanup(lib):
    def get_ref():
        class MyFunc(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                ctx.save_for_backward(x)
                return x

            @staticmethod
            def backward(ctx, gO):
                (x,) = ctx.saved_tensors
                return MyFunc2.apply(x)

        class MyFunc2(lib.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x

            @staticmethod
            def backward(ctx, gO):
                return gO + float("NaN")

        inp = randn(lib, 1, requires_grad=True)
        out = MyFunc.apply(inp)
        (ginp,) = lib.autograd.grad(out, (inp,), create_graph=True)
        with (
            pytest.raises(
                RuntimeError,
                match="Function 'MyFunc2Backward' returned nan values in its 0th output.",
            ),
            lib.autograd.detect_anomaly(),
        ):
            ginp.backward()

        class Foo:
            pass

        my_obj = Foo()
        out.grad_fn.metadata[0] = my_obj
        return out, weakref.ref(my_obj)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (anomaly mode's warnings)
        t, ref = get_ref()
    assert ref() is not None
    del t
    gc.collect()
    assert ref() is None

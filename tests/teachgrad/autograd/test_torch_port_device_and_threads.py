"""More of PyTorch's TestAutogradDeviceType (on the CPU) and the parts of its
TestMultithreadAutograd where threads do not race (test_autograd.py): test_where_functional,
test_copy_, test_strided_leaf_grad_layout,
test_movedim, test_mv_grad_stride_0, test_advanced_indexing_backwards_memory_format (row-major
indices), test_simple_backward, test_simple_backward_same_input (its ``grad()`` half: the
``backward()`` half has ten threads racing to add into one ``.grad``), test_preserve_backtrace,
test_dataparallel_saved_tensors_hooks (saved-tensor hook blocks are per thread).

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. Left out: ``set_``, ``empty_strided``,
``atleast_*``, cdist, ctc_loss, the RNNs and everything that needs CUDA or several devices.
"""

import sys
import threading
import traceback

import numpy as np
import pytest

from tests.teachgrad.autograd._port import randn, same

pytestmark = pytest.mark.usefixtures("torch")


def run_in_threads(fn, args=(), num_threads=10):
    """torch's _run_py_multithread_fn: ``fn(*args)`` on ``num_threads`` threads; the first
    error a thread raised is raised here."""
    errors = []

    def target():
        try:
            fn(*args)
        except BaseException as e:  # (a thread's error would otherwise only be printed)
            errors.append(e)

    threads = [threading.Thread(target=target) for _ in range(num_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def mask_not_all_zeros(lib, shape):
    """A boolean mask with at least one True (torch's mask_not_all_zeros)."""
    data = np.random.default_rng(0).random(shape) > 0.5
    data.flat[0] = True
    return lib.tensor(data)


def test_where_functional(lib):
    cond = mask_not_all_zeros(lib, (5, 5))

    def where(cond, x, y):
        return lib.where(cond, x, y)

    x = randn(lib, 5, 5, requires_grad=True)
    y = randn(lib, 5, 5, seed=1, requires_grad=True)
    assert lib.autograd.gradcheck(where, [cond, x, y], raise_exception=True)
    assert lib.autograd.gradgradcheck(where, [cond, x, y], [randn(lib, 5, 5, seed=2)])

    x = randn(lib, 5, 1, 5, requires_grad=True)
    y = randn(lib, 5, 5, 1, seed=1, requires_grad=True)
    assert lib.autograd.gradcheck(where, [cond, x, y], raise_exception=True)
    assert lib.autograd.gradgradcheck(where, [cond, x, y], [randn(lib, 5, 5, 5, seed=2)])


def test_copy_(lib):
    x = randn(lib, 10, requires_grad=True)
    for dt in (lib.float16, lib.float32, lib.float64):
        y = lib.empty(10, dtype=dt)
        y.copy_(x)
        assert y.requires_grad
        assert x.to(dt).requires_grad


def test_strided_leaf_grad_layout(lib):
    # (1) a dense leaf's gradient has the leaf's strides (row-major or channels_last)
    for fmt_a in (lib.contiguous_format, lib.channels_last):
        for fmt_b in (lib.contiguous_format, lib.channels_last):
            a = lib.rand((2, 3, 4, 5)).to(memory_format=fmt_a)
            b = lib.rand((2, 3, 4, 5)).to(memory_format=fmt_b)
            a.requires_grad_()
            b.requires_grad_()
            # broadcast gradients
            a.sum().backward()
            assert a.grad.stride() == a.stride()
            b.sum().backward()
            assert b.grad.stride() == b.stride()
            # gradients that are not broadcast
            a.grad = None
            b.grad = None
            (a * b).sum().backward()
            assert a.grad.stride() == a.stride()
            assert b.grad.stride() == b.stride()

    # (2) a leaf that is not dense gets a row-major gradient
    c = lib.zeros(2, 4)[:, ::2]
    c.copy_(lib.rand(2, 2))
    c.requires_grad_()
    assert c.stride() == (4, 2)
    d = lib.rand(2, 2)
    c.sum().backward()
    assert c.grad.stride() == (2, 1)
    c.grad = None
    (c * d).sum().backward()
    assert c.grad.stride() == (2, 1)


def test_movedim(lib):
    x = randn(lib, 4, 3, 2, 1, requires_grad=True)
    for source, destination in [((0, 1, 2, 3), (3, 2, 1, 0)), ((0, -1, -2, -3), (-3, -2, -1, -0))]:

        def fn(x, source=source, destination=destination):
            return lib.movedim(x, source, destination)

        assert lib.autograd.gradcheck(fn, x)
        assert lib.autograd.gradgradcheck(fn, x)


def test_mv_grad_stride_0(lib):
    mat = randn(lib, 2, 2)
    vec = randn(lib, 1, seed=1).requires_grad_(True)

    def fn(vec):
        # expanded inside the function: gradcheck's input itself does not overlap
        vec = vec.expand(2)
        return (mat @ vec).sum()

    assert lib.autograd.gradcheck(fn, (vec,))
    assert lib.autograd.gradgradcheck(fn, (vec,))


def test_advanced_indexing_backwards_memory_format(lib):
    shape = (2, 8, 1, 2)
    i = lib.randint(1, shape)
    x = lib.randn(shape, requires_grad=True)
    x[i].sum().backward()
    assert x.grad.shape == shape


def test_simple_backward(lib):
    # each thread has its own inputs and graph
    def train_fn():
        x = lib.ones(5, 5, requires_grad=True)
        y = (x + 3) * (x + 4) * 0.5
        y.sum().backward()
        assert same(x.grad, x + 3.5)

    run_in_threads(train_fn)


def test_simple_backward_same_input(lib):
    # grad() accumulates nowhere, so threads sharing the input each get the whole gradient
    def train_fn_grad(x):
        y = (x + 3) * (x + 4) * 0.5
        grads = lib.autograd.grad(y.sum(), x)
        assert len(grads) == 1
        assert same(grads[0], x + 3.5)

    x = lib.ones(5, 5, requires_grad=True)
    run_in_threads(train_fn_grad, (x,))
    assert x.grad is None


def test_preserve_backtrace(lib):
    class Foo(lib.autograd.Function):
        @staticmethod
        def forward(ctx, input):
            return input

        @staticmethod
        def backward(ctx, *grad):
            raise ValueError("something")

    t = lib.rand(10, requires_grad=True)
    with pytest.raises(ValueError, match="^something$"):
        try:
            Foo.apply(t).sum().backward()
        except ValueError:
            tb_str = "\n".join(traceback.format_tb(sys.exc_info()[2]))
            assert 'raise ValueError("something")' in tb_str
            raise


def test_saved_tensor_hook_blocks_are_per_thread(lib):
    """A saved_tensors_hooks block opened in one thread packs only what that thread saves;
    a disable_saved_tensors_hooks block doesn't stop another thread opening one; and an
    allow_mutation_on_saved_tensors block copies nothing another thread changes (its copies
    are made in the thread that opened it)."""
    graph = lib.autograd.graph
    x = randn(lib, 2, requires_grad=True)
    packed = []

    def pack(t):
        packed.append(threading.current_thread().name)
        return t

    def in_thread(fn):
        failed = []
        worker = threading.Thread(target=lambda: _noting(failed, fn), name="child")
        worker.start()
        worker.join()
        return failed

    with graph.saved_tensors_hooks(pack, lambda t: t):
        assert in_thread(lambda: x * x) == [] and packed == []
        x * x
    assert packed == ["MainThread", "MainThread"]
    with graph.disable_saved_tensors_hooks("not in this thread"):

        def open_a_block():
            with graph.saved_tensors_hooks(pack, lambda t: t):
                x * x

        assert in_thread(open_a_block) == []
    with graph.allow_mutation_on_saved_tensors() as ctx:
        b = x.clone()
        out = (b * b).sum()
        assert in_thread(lambda: b.mul_(10)) == [] and len(ctx.cloned) == 0
        out.backward()  # (so backward reads b as the other thread left it)
    assert same(x.grad, 20 * x.detach())


def _noting(failed, fn):
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - handed to the test
        failed.append(error)

"""Graph nodes, custom Functions kept alive by cycles, in-place changes to views that may not
be changed, and the memory the profiler counts, as PyTorch's own autograd tests
(test_autograd.py: test_autograd_node_isinstance, test_custom_function_cycle,
test_inplace_not_requires_grad, test_autograd_inplace_view_of_view, test_memory_profiler (the
CPU allocations), test_hook_closure_cycle, test_setup_context_when_forward_has_default_args)
check them; and a view replayed on another base (``Tensor._view_func``, as test_ops'
view-replay check and torch's fake tensors use it).

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's ``_WeakTensorRef`` is a ``weakref.ref`` here; left out:
that torch's Node is a "virtual" base class (not in a node class's mro), the private
``torch._C._functions`` classes, the memory a ``del`` frees (teachgrad's profiler does not count
frees: docs/differences-from-torch.md).
"""

import contextlib
import gc
import weakref

import pytest

from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")


@contextlib.contextmanager
def disable_gc():
    """The cyclic garbage collector off inside the block (torch's disable_gc)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def test_autograd_node_isinstance(lib):
    Node = lib.autograd.graph.Node
    a = lib.rand(3, 3, requires_grad=True)
    b = a.exp()
    assert isinstance(b.grad_fn, Node)
    assert issubclass(type(b.grad_fn), Node)
    assert isinstance(b.grad_fn.next_functions[0][0], Node)  # AccumulateGrad
    assert not isinstance(None, Node)
    assert not isinstance(1, Node)
    assert not isinstance(Node, Node)
    assert issubclass(Node, Node)

    class Func(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, gO):
            return gO * 2

    out = Func.apply(a)
    assert isinstance(out.grad_fn, Node)
    assert issubclass(type(out.grad_fn), Node)
    assert isinstance(out.grad_fn, lib.autograd.function.BackwardCFunction)
    out.sum().backward()


def test_custom_function_cycle(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x, metadata):
            x = x.clone()
            ctx.meta = metadata
            ctx.save_for_backward(x)
            return x

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            assert same(x, 3.14)
            assert same(ctx.meta["foo"], 3.14)
            return gO * x, None

    def get_refs(with_backward):
        a = lib.tensor(3.14, requires_grad=True)
        metadata = {}
        out = MyFn.apply(a, metadata)
        metadata["foo"] = out  # out -> its node -> ctx.meta -> out: a cycle
        if with_backward:
            out.sum().backward()
            assert same(a.grad, a)
        return weakref.ref(out)

    with disable_gc():
        ref = get_refs(False)
        assert ref() is not None
    gc.collect()
    assert ref() is None

    # backward frees the saved tensors but not the ctx's attributes: still a cycle
    with disable_gc():
        ref = get_refs(True)
        assert ref() is not None
    gc.collect()
    assert ref() is None


def test_inplace_not_requires_grad(lib):
    class MyFn(lib.autograd.Function):
        @staticmethod
        def forward(ctx, inp):
            return inp.view_as(inp)

        @staticmethod
        def backward(ctx, grad):
            return grad

    # the tensor changed does not require grad; the one written into it does
    a = lib.rand(1, 2)
    b = lib.rand(1, requires_grad=True)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a += b

    a = lib.rand(1, 2)
    b = lib.rand(1, requires_grad=True)
    view_a = MyFn.apply(a)
    with pytest.raises(RuntimeError, match="This view was created inside a custom Function"):
        view_a.copy_(b)

    a = lib.rand(1, 2)
    b = lib.rand(1, requires_grad=True)
    view_a = a.unbind()[0]
    with pytest.raises(
        RuntimeError, match="This view is the output of a function that returns multiple views."
    ):
        view_a.copy_(b)

    # a view that may be changed still may
    a = lib.rand(1, 2)
    b = lib.rand(1, requires_grad=True)
    a.select(1, 0).copy_(b)
    assert a.requires_grad


@pytest.mark.parametrize("mode", ["no_grad", "inference_mode"])
def test_autograd_inplace_view_of_view(lib, mode):
    x = lib.zeros(2)
    with getattr(lib, mode)():
        y = x.view(2)
    y.requires_grad_(True)
    z = y.view(2)
    block = "no_grad block" if mode == "no_grad" else "inference_mode"
    with pytest.raises(RuntimeError, match=f"a view of a view .* is being .* inside the {block}"):
        z /= 2


def test_memory_profiler(lib):
    profiler = lib.autograd.profiler
    with profiler.profile(profile_memory=True, record_shapes=True) as prof:
        x = None
        with profiler.record_function("test_user_scope_alloc"):
            x = lib.rand(10, 10)
        with profiler.record_function("test_user_scope_dealloc"):
            del x
    stats = {
        stat.key: stat.cpu_memory_usage for stat in prof.key_averages(group_by_input_shape=True)
    }
    assert stats["aten::rand"] > 0
    assert stats["test_user_scope_alloc"] > 0


@pytest.mark.parametrize("use_custom_function", [True, False])
@pytest.mark.parametrize("use_tensor_hook", [True, False])
def test_hook_closure_cycle(lib, use_custom_function, use_tensor_hook):
    # a cycle: the hook's closure -> grad_fn_b -> its hooks -> the hook
    class Function(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad

    class Test:
        pass

    count = [0]

    def scope():
        a = lib.tensor(1.0, requires_grad=True)
        b = Function.apply(a) if use_custom_function else a.clone()
        grad_fn_b = b.grad_fn
        obj = Test()

        def hook(*args):
            grad_fn_b, obj  # (the closure holds both: obj tells whether the cycle lives)
            count[0] += 1

        if use_tensor_hook:
            b.register_hook(hook)
        else:
            b.grad_fn.register_prehook(hook)
        c = b.clone()
        return c, weakref.ref(obj)

    with disable_gc():
        out, ref = scope()
        out.backward(retain_graph=True)
        gc.collect()
        # the collector leaves the cycle alone while the graph holds the node
        out.backward(retain_graph=True)
        assert count[0] == 2
        assert ref() is not None
        del out
        gc.collect()
        assert ref() is None


def test_setup_context_when_forward_has_default_args(lib):
    class PowFunction(lib.autograd.Function):
        @staticmethod
        def forward(x, y=3):
            return lib.pow(x, y)

        @staticmethod
        def setup_context(ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @staticmethod
        def backward(ctx, gO):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return gO * y * lib.pow(x, y - 1), None

    class PowFunctionWithClassmethod(lib.autograd.Function):
        @classmethod
        def forward(cls, x, y=3):
            return lib.pow(x, y)

        @classmethod
        def setup_context(cls, ctx, inputs, output):
            x, y = inputs
            ctx.save_for_backward(x)
            ctx.y = y

        @classmethod
        def backward(cls, ctx, gO):
            (x,) = ctx.saved_tensors
            y = ctx.y
            return gO * y * lib.pow(x, y - 1), None

    x = lib.tensor(2.0, requires_grad=True)
    for fn in [PowFunction, PowFunctionWithClassmethod]:
        (grad,) = lib.autograd.grad(fn.apply(x), x)
        assert grad.item() == 12.0  # 3 * 2**2


def test_grad_fn_input_metadata(lib):
    """torch's test_grad_fn_input_metadata: one entry per gradient the node takes in (per
    output of its forward), two for var_mean's node."""
    x = lib.rand(2, requires_grad=True, dtype=lib.float32)
    y = lib.rand(2, requires_grad=True, dtype=lib.float32)
    z_metadata = (x * y).grad_fn._input_metadata[0]
    assert tuple(z_metadata.shape) == (2,) and z_metadata.dtype == lib.float32
    assert str(z_metadata.device) == "cpu" and not z_metadata.is_nested_tensor
    var, mean = lib.var_mean(lib.rand(3, 3, requires_grad=True), dim=0)
    assert var.grad_fn is mean.grad_fn and (var.output_nr, mean.output_nr) == (0, 1)
    assert [tuple(m.shape) for m in var.grad_fn._input_metadata] == [(3,), (3,)]


def test_small_private_api_of_torch_s_tests(lib):
    """Names torch's own autograd tests reach for: forward_ad._current_level (-1 with no level
    open), autograd._profiler_enabled(), autograd.SavedTensor (the class of _raw_saved_*,
    which Python may not make). (function.BackwardCFunction: test_autograd_node_isinstance.)"""
    fw = lib.autograd.forward_ad
    assert fw._current_level == -1
    with fw.dual_level():
        assert fw._current_level == 0
    assert not lib.autograd._profiler_enabled()
    with lib.autograd.profiler.profile():
        assert lib.autograd._profiler_enabled()
    with pytest.raises(RuntimeError, match="^Trying to create a SavedTensor object from Python"):
        lib.autograd.SavedTensor()
    x = lib.ones(2, requires_grad=True)
    assert isinstance(x.exp().grad_fn._raw_saved_result, lib.autograd.SavedTensor)


def test_set_sequence_nr(lib):
    """test_set_sequence_nr: backward runs the nodes by their sequence numbers, latest first,
    and a node's number can be set."""
    x, y, z = (lib.randn(10, requires_grad=True) for _ in range(3))
    a, b = x + y, y + z
    c = a + b
    for node, number in ((a.grad_fn, 100), (b.grad_fn, 99), (c.grad_fn, 98)):
        node._set_sequence_nr(number)
        assert node._sequence_nr() == number
    order = []
    for t, name in ((a, "a"), (b, "b"), (c, "c")):
        t.register_hook(lambda g, name=name: order.append(name))
    c.sum().backward()
    assert order == ["c", "a", "b"]


# ---- Tensor._view_func / _view_func_unsafe: a view made again on another base
def _a_view(lib):
    """A view through three view ops: its base is the 12 elements of the arange."""
    return lib.arange(12.0).reshape(3, 4)[1:, ::2].t()


@pytest.mark.parametrize("unsafe", [False, True])
def test_view_func_replays_a_view_on_a_new_base(lib, unsafe):
    v = _a_view(lib)
    new_base = lib.arange(100.0, 112.0, requires_grad=True)
    replay = v._view_func_unsafe if unsafe else v._view_func
    w = replay(new_base)
    assert w.tolist() == [[104.0, 108.0], [106.0, 110.0]]
    assert w._base is new_base and w.shape == v.shape
    assert (w.stride(), w.storage_offset()) == (v.stride(), v.storage_offset())
    assert w.grad_fn.name() == "AsStridedBackward0"  # (one as_strided replays the whole chain)
    w.sum().backward()
    assert new_base.grad.tolist() == [0.0] * 4 + [1.0, 0, 1, 0, 1, 0, 1, 0]


def test_view_func_wants_a_base_laid_out_as_the_old_one(lib):
    """None, no error, when the new base differs in size, offset, strides or storage (the
    unsafe form replays anyway); the dtype may differ; a size-1 dim's stride does not count."""
    v = _a_view(lib)
    for other in (
        lib.arange(12.0).reshape(3, 4).clone(),  # (another shape)
        lib.arange(20.0)[:12],  # (a bigger storage)
        lib.arange(20.0)[2:14],  # (another offset)
        lib.arange(24.0)[::2],  # (other strides)
    ):
        assert v._view_func(other) is None
    assert v._view_func_unsafe(lib.arange(20.0)).tolist() == [[4.0, 8.0], [6.0, 10.0]]
    assert v._view_func(lib.arange(12, dtype=lib.float64)).dtype == lib.float64
    row = lib.zeros(1, 4)[0]
    lying = lib.arange(4.0).as_strided((1, 4), (1, 1))  # (strides (1, 1), not (4, 1))
    assert row._view_func(lying).tolist() == [0.0, 1.0, 2.0, 3.0]


@pytest.mark.parametrize("unsafe", [False, True])
def test_view_func_takes_torch_s_visitors_and_an_as_strided_replay_calls_neither(lib, unsafe):
    """``symint_visitor_fn`` and ``tensor_visitor_fn`` change the sizes and tensors of a chain
    of view ops torch replays; a view torch replays with one as_strided (the default) calls
    neither, and nor does teachgrad, which always does."""
    called = []
    v = _a_view(lib)
    replay = v._view_func_unsafe if unsafe else v._view_func
    w = replay(
        lib.arange(100.0, 112.0),
        symint_visitor_fn=lambda s: called.append(s) or s * 2,
        tensor_visitor_fn=lambda t: called.append(t) or t,
    )
    assert w.tolist() == [[104.0, 108.0], [106.0, 110.0]] and called == []
    assert replay(lib.arange(100.0, 112.0), lambda s: s + 1).shape == v.shape


def test_view_func_of_a_tensor_that_is_no_view_is_none(lib):
    x = lib.ones(3)
    detached = lib.ones(4, requires_grad=True).detach()[1:3]  # (still a view, of the detached)
    assert x._view_func(lib.ones(3)) is None and x._view_func_unsafe(lib.ones(3)) is None
    assert detached._view_func(lib.arange(4.0)).tolist() == [1.0, 2.0]
    with pytest.raises(TypeError) as info:
        _a_view(lib)._view_func(3)
    first_line = str(info.value).splitlines()[0]
    assert first_line == "_view_func(): argument 'new_base' (position 1) must be Tensor, not int"

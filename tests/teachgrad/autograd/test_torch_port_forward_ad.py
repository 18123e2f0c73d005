"""Forward-mode AD (``autograd.forward_ad``: dual_level, make_dual, unpack_dual), as PyTorch's
own tests (test/autograd/test_forward_mode.py, run with test_autograd.py:
TestAutogradForwardMode: test_forward_level_cleanup, test_size_check, test_default_level,
test_nested_level, test_print, test_basic_packing_unpacking, test_advanced_packing_unpacking,
test_view_inplace_non_differentiable_views, test_view_inplace_differentiable_views,
test_grad_cleanup, test_detach_view_tracking; and from test_autograd.py's TestAutogradForwardMode:
test_make_dual_forbid_integral_dtype, test_make_dual_inference_tensor_in_inference_mode,
test_view_inplace_always_creates_a_view, test_non_differentiable, test_backward_graph_destruction,
test_out_variant, test_metadata_check_checks_storage_numel)
check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. torch's ``_WeakTensorRef`` is a ``weakref.ref`` here, and
``storage().data_ptr()`` is ``data_ptr()`` (the tensors start at their storage's start).
"""

import contextlib
import gc
import warnings
import weakref

import numpy as np
import pytest

from tests.teachgrad.autograd import _port as port
from tests.teachgrad.autograd._port import same

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def rand(lib, *shape, seed=0):
    """Reproducible uniform numbers, the same on both libraries."""
    return lib.tensor(np.random.default_rng(seed).uniform(size=shape), dtype=lib.float64)


@pytest.fixture(autouse=True)
def _no_level_left_open(lib):
    """As torch's tearDown: a failing test must not leave a dual level open for the next."""
    yield
    with contextlib.suppress(RuntimeError):  # (none was open: the usual case)
        lib.autograd.forward_ad.exit_dual_level()


def test_forward_level_cleanup(lib):
    fwAD = lib.autograd.forward_ad
    foo = rand(lib, 2)
    with fwAD.dual_level():
        tangent = rand(lib, 2, seed=1)
        tangent_ref = weakref.ref(tangent)
        dual = fwAD.make_dual(foo, tangent)
        assert fwAD.unpack_dual(dual)[1] is tangent  # the tangent given is kept as is
        del tangent
        gc.collect()
        assert tangent_ref() is not None  # the dual keeps its tangent alive
        del dual
        gc.collect()
        assert tangent_ref() is None  # ... but the level does not


def test_size_check(lib):
    fwAD = lib.autograd.forward_ad
    foo, tangent = rand(lib, 2), rand(lib, 3)
    with fwAD.dual_level():
        with pytest.raises(
            RuntimeError, match="^Trying to set a forward gradient that has a different size"
        ):
            fwAD.make_dual(foo, tangent)
        dual = fwAD.make_dual(foo, tangent[1:])
        assert same(fwAD.unpack_dual(dual).tangent, tangent[1:])


def test_default_level(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar = rand(lib, 2), rand(lib, 2, seed=1)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
    assert same(baz_primal, foo)
    assert baz_tangent is bar
    baz_primal, baz_tangent = fwAD.unpack_dual(baz)  # the level is gone: so is the tangent
    assert same(baz_primal, foo)
    assert baz_tangent is None


def test_nested_level(lib):
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level() as level:
        assert level == 0  # only level 0 exists
    with (
        fwAD.dual_level(),
        pytest.raises(RuntimeError, match="^Nested forward mode AD is not supported at the moment"),
    ):
        fwAD.enter_dual_level()


def test_print(lib):
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        a = rand(lib, 3)
        assert "tangent=" not in str(a)
        b = fwAD.make_dual(a, rand(lib, 3, seed=1))
        assert "tangent=" not in str(a)
        assert "tangent=" in str(b)
        b_primal, b_tangent = fwAD.unpack_dual(b)
        assert "tangent=" not in str(b_primal)
        assert "tangent=" not in str(b_tangent)


def test_basic_packing_unpacking(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar = rand(lib, 2), rand(lib, 2, seed=1)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
        assert same(baz_primal, foo)
        assert baz_tangent is bar
        foo_primal, foo_tangent = fwAD.unpack_dual(foo)  # foo itself got no tangent
        assert same(foo_primal, foo)
        assert foo_tangent is None


def test_packing_and_unpacking_share_memory_and_version_counters(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar = rand(lib, 2), lib.ones(2, dtype=lib.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        assert dual.data_ptr() == foo.data_ptr()
        assert foo._version == dual._version
        foo.add_(1)
        assert foo._version == dual._version
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)  # aliases too
        assert dual_primal.data_ptr() == foo.data_ptr()
        assert dual_tangent.data_ptr() == bar.data_ptr()
        assert dual_tangent is bar
        assert foo._version == dual_primal._version
        foo.add_(1)
        assert foo._version == dual_primal._version
        assert bar._version == dual_tangent._version
        bar.add_(1)
        assert bar._version == dual_tangent._version


def test_backward_through_packing_and_unpacking(lib):
    fwAD = lib.autograd.forward_ad
    foo = rand(lib, 2).requires_grad_()
    bar = lib.ones(2, dtype=lib.float64, requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        p, t = fwAD.unpack_dual(dual)
        gfoo, gbar = lib.autograd.grad(p.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        assert same(gfoo, np.ones(2))
        assert gbar is None
        gfoo, gbar = lib.autograd.grad(t.sum(), (foo, bar), retain_graph=True, allow_unused=True)
        assert gfoo is None
        assert same(gbar, np.ones(2))


def test_detach_drops_the_tangent_and_no_grad_does_not(lib):
    fwAD = lib.autograd.forward_ad
    foo = rand(lib, 2).requires_grad_()
    bar = lib.ones(2, dtype=lib.float64, requires_grad=True)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        p, t = fwAD.unpack_dual(dual.detach() * 2)
        assert not p.requires_grad
        assert same(p, foo * 2)
        assert t is None
        with lib.no_grad():
            out = dual * 3
        p, t = fwAD.unpack_dual(out)
        assert not p.requires_grad
        assert not t.requires_grad
        assert same(p, foo * 3)
        assert same(t, bar * 3)
        dual = dual.clone()
        dual.detach_()
        p, t = fwAD.unpack_dual(dual * 2)
        assert not p.requires_grad
        assert same(p, foo * 2)
        assert t is None


def test_view_inplace_non_differentiable_views(lib):
    fwAD = lib.autograd.forward_ad
    original_foo, original_bar = rand(lib, 2), lib.ones(2, dtype=lib.float64)
    foo, bar = original_foo.clone(), original_bar.clone()
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        dual *= 2  # foo is a view of dual that forward AD does not follow
        assert fwAD.unpack_dual(foo)[1] is None
        assert same(bar, original_bar * 2)
        assert same(fwAD.unpack_dual(dual)[1], original_bar * 2)
        assert same(foo, original_foo * 2)
        assert same(fwAD.unpack_dual(dual)[0], original_foo * 2)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)  # two more such views
        assert fwAD.unpack_dual(dual_primal)[1] is None
        assert fwAD.unpack_dual(dual_tangent)[1] is None
        dual_primal *= 2
        assert same(fwAD.unpack_dual(dual)[0], original_foo * 4)
        assert same(fwAD.unpack_dual(dual)[1], original_bar * 2)  # the tangent did not change
        dual_tangent *= 2
        assert same(fwAD.unpack_dual(dual)[0], original_foo * 4)  # the primal did not change
        assert same(fwAD.unpack_dual(dual)[1], original_bar * 4)


def test_view_inplace_differentiable_views(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar = rand(lib, 2), lib.ones(2, dtype=lib.float64)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        view = dual.narrow(0, 0, 1)  # a view forward AD follows
        view *= 2
        assert fwAD.unpack_dual(foo)[1] is None
        assert same(fwAD.unpack_dual(dual)[1], [2.0, 1.0])
        assert same(fwAD.unpack_dual(view)[1], [2.0])
        baz = rand(lib, 2, seed=1)  # a tensor without a tangent takes one in place
        baz += dual
        assert same(fwAD.unpack_dual(baz)[1], fwAD.unpack_dual(dual)[1])
        baz = rand(lib, 2, seed=2)  # ... also through a view
        baz[0] = dual[0]
        assert same(fwAD.unpack_dual(baz)[1][0], fwAD.unpack_dual(dual)[1][0])
        assert same(fwAD.unpack_dual(baz)[1][1], 0.0)  # the rest of it gets zeros
        baz = rand(lib, 2, seed=3)
        view = baz.detach()  # a view that forward AD does not follow
        view += dual
        assert fwAD.unpack_dual(baz)[1] is None


def test_grad_cleanup(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar, baz = rand(lib, 2), rand(lib, 2, seed=1), rand(lib, 2, seed=2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(foo, bar)
        assert fwAD.unpack_dual(foo)[1] is None
        assert fwAD.unpack_dual(dual)[1] is bar
    assert fwAD.unpack_dual(dual)[1] is None
    with fwAD.dual_level():  # a new level: the old tangent does not come back
        assert fwAD.unpack_dual(foo)[1] is None
        new_dual = fwAD.make_dual(foo, baz)
        dual_primal, dual_tangent = fwAD.unpack_dual(dual)
        new_dual_primal, new_dual_tangent = fwAD.unpack_dual(new_dual)
        assert same(dual_primal, new_dual_primal)
        assert dual_tangent is None
        assert same(new_dual_tangent, baz)


def test_detach_view_tracking(lib):
    foo = rand(lib, 2)
    foo_ref = weakref.ref(foo)
    out = foo.detach()  # the detached view keeps foo's memory, not foo itself
    del foo
    gc.collect()
    assert foo_ref() is None
    assert out.shape == (2,)


# ------------------------------------------- further forward-mode tests of test_autograd.py


def test_make_dual_forbid_integral_dtype(lib):
    fwAD = lib.autograd.forward_ad
    primal_f, tangent_f = lib.ones(2, 2), lib.ones(2, 2)
    primal_l, tangent_l = lib.ones(2, 2, dtype=lib.long), lib.ones(2, 2, dtype=lib.long)
    with fwAD.dual_level():
        with pytest.raises(ValueError, match="^Expected tangent to be floating point or complex"):
            fwAD.make_dual(primal_f, tangent_l)
        with pytest.raises(ValueError, match="^Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_l)
        with pytest.raises(ValueError, match="^Expected primal to be floating point or complex"):
            fwAD.make_dual(primal_l, tangent_f)


def test_make_dual_inference_tensor_in_inference_mode(lib):
    fwAD = lib.autograd.forward_ad
    with lib.inference_mode():
        foo, bar = rand(lib, 2), rand(lib, 2, seed=1)
        foo_copy = foo.clone()
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, bar)
            assert not dual._is_view()  # (an inference tensor's alias is no view)
            dual += 1
            assert not lib.allclose(foo, foo_copy)  # ... but shares foo's memory


def test_unpack_dual_gives_a_new_primal_view_each_time(lib):
    fwAD = lib.autograd.forward_ad
    foo, bar = rand(lib, 2), rand(lib, 2, seed=1)
    with fwAD.dual_level():
        baz = fwAD.make_dual(foo, bar)
        baz_primal, baz_tangent = fwAD.unpack_dual(baz)
        assert baz_primal is not fwAD.unpack_dual(baz).primal
        assert same(baz_primal, fwAD.unpack_dual(baz).primal)
        assert baz_tangent is fwAD.unpack_dual(baz).tangent


IN_PLACE_BINARY = {
    "add_": lambda x, y: x.add_(y),
    "mul_": lambda x, y: x.mul_(y),
    "copy_": lambda x, y: x.copy_(y),
}


@pytest.mark.parametrize("op", IN_PLACE_BINARY.values(), ids=IN_PLACE_BINARY.keys())
def test_view_inplace_always_creates_a_view(lib, op):
    fwAD = lib.autograd.forward_ad
    base = port.randn(lib, 2, 2)
    view = base.transpose(0, 1)
    primal, tangent = port.randn(lib, 2, 2, seed=1), port.randn(lib, 2, 2, seed=2)
    with fwAD.dual_level():
        dual = fwAD.make_dual(primal, tangent)
        op(view, dual)  # the view, and so its base, take a tangent
        p, t = fwAD.unpack_dual(base)
        p_clone, t_clone = p.clone(), t.clone()
        view *= 2  # the base's tangent is a view too: it changes with the view's
        p, t = fwAD.unpack_dual(base)
        assert lib.allclose(p_clone * 2, p)
        assert lib.allclose(t_clone * 2, t)


def test_non_differentiable(lib):
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        foo = fwAD.make_dual(rand(lib, 2), rand(lib, 2, seed=1))
        eq = foo == rand(lib, 2, seed=2)  # no differentiable output: no tangent, no error
        assert eq.dtype == lib.bool
        assert fwAD.unpack_dual(eq).tangent is None


def test_backward_graph_destruction(lib):
    fwAD = lib.autograd.forward_ad

    def fn():
        a = rand(lib, 10).requires_grad_()
        da = fwAD.make_dual(lib.rand_like(a), a)  # a tangent with history
        return da.exp()

    with fwAD.dual_level():
        db = fn()
        assert fwAD.unpack_dual(db).tangent.grad_fn is not None
    assert fwAD.unpack_dual(db).tangent is None  # the level closes without trouble


def test_make_dual_outside_a_level(lib):
    fwAD = lib.autograd.forward_ad
    with pytest.raises(
        RuntimeError, match="^Trying to create a dual Tensor for forward AD but no level exists"
    ):
        fwAD.make_dual(rand(lib, 2), rand(lib, 2, seed=1))


def test_exit_dual_level_without_a_level(lib):
    fwAD = lib.autograd.forward_ad
    with pytest.raises(RuntimeError, match="^Dual level must be a positive number"):
        fwAD.exit_dual_level()
    with (
        fwAD.dual_level() as level,
        pytest.raises(
            RuntimeError, match="^Trying to exit a forward AD level that was not the last one"
        ),
    ):
        fwAD.exit_dual_level(level=level + 3)
    with pytest.raises(
        RuntimeError, match="^Trying to exit a forward AD level that was not the last one"
    ):
        fwAD.exit_dual_level(level=level)  # (already closed)


def test_tangents_of_a_chain_of_ops(lib):
    fwAD = lib.autograd.forward_ad
    x = port.randn(lib, 3, 4)
    t = port.randn(lib, 3, 4, seed=1)
    with fwAD.dual_level():
        out = (fwAD.make_dual(x, t).exp() * 2).sum(dim=1)
        assert same(fwAD.unpack_dual(out).tangent, (x.exp() * 2 * t).sum(dim=1))


def test_out_variant(lib):
    fwAD = lib.autograd.forward_ad
    with fwAD.dual_level():
        foo = fwAD.make_dual(rand(lib, 2), rand(lib, 2, seed=1))
        bar = rand(lib, 2, seed=2)
        message = "^Trying to use forward AD with add_out that does not support it because it is an out= function"
        with pytest.raises(NotImplementedError, match=message):
            lib.add(bar, bar, out=foo)
        with pytest.raises(NotImplementedError, match=message):
            lib.add(foo, bar, out=bar)


def test_set_fwd_grad_enabled(lib):
    """test_fwd_grad_enabled / test_set_fwd_grad_enabled: the private forward grad mode, and
    while it is off, ops on dual tensors give no tangent."""
    fw = lib.autograd.forward_ad
    assert fw._is_fwd_grad_enabled()
    with fw._set_fwd_grad_enabled(False):
        assert not fw._is_fwd_grad_enabled()
        with fw._set_fwd_grad_enabled(True):
            assert fw._is_fwd_grad_enabled()
        assert not fw._is_fwd_grad_enabled()
        with fw.dual_level():
            dual = fw.make_dual(lib.ones(2), lib.ones(2))
            assert fw.unpack_dual(dual * 2).tangent is None
    assert fw._is_fwd_grad_enabled()
    with fw.dual_level():
        dual = fw.make_dual(lib.ones(2), lib.ones(2))
        assert fw.unpack_dual(dual * 2).tangent.tolist() == [2.0, 2.0]


def test_metadata_check_checks_storage_numel(lib):
    """torch's test: a primal that does not span its storage gets a copy of its tangent,
    laid out as it is in zeros as big as its storage, so an ``as_strided`` of the dual that
    reaches past the primal reads a zero tangent there."""
    full = rand(lib, 5)
    primal = full[:4].detach()
    with warnings.catch_warnings():  # (storage() is deprecated: the first call warns)
        warnings.simplefilter("ignore")
        assert len(primal.storage()) == 5
    tangent = rand(lib, 4, seed=1)
    with lib.autograd.forward_ad.dual_level():
        dual = lib.autograd.forward_ad.make_dual(primal, tangent)
        _, unpacked_tangent = lib.autograd.forward_ad.unpack_dual(dual)
        tangent_clone = tangent.clone()
        unpacked_tangent *= 2
        assert same(tangent_clone, tangent)
        whole = lib.autograd.forward_ad.unpack_dual(dual.as_strided((5,), (1,), 0)).tangent
        assert same(whole, np.concatenate([port.values(tangent) * 2, [0.0]]))

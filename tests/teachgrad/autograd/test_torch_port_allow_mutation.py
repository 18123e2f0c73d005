"""``tg.autograd.graph.allow_mutation_on_saved_tensors``, as PyTorch's own autograd tests
(test_autograd.py, TestAllowMutationOnSaved: test_basic, test_views, test_backward_out_of_context,
test_disallow_nesting, test_saved_but_not_anymore) and its documentation check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.autograd import _port as port

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

OUTSIDE = "^Trying to backward outside of the 'allow_mutation_on_saved_tensors' context"
NESTED = "^allow_mutation_on_saved_tensors contexts cannot be nested"


def allow(lib):
    return lib.autograd.graph.allow_mutation_on_saved_tensors()


def test_a_saved_tensor_changed_in_place_is_copied_first(lib):
    with allow(lib) as ctx:
        a = port.randn(lib, 2, 3, requires_grad=True)
        b = a.clone()
        out = (b**2).sum()  # PowBackward0 saves b
        b.sin_()  # (sin_'s node saves b's value before the change: a new original)
        assert len(ctx.cloned) == 1 and len(ctx.original) == 1
        b.cos_()  # (b's copy is made once)
        assert len(ctx.cloned) == 1 and len(ctx.original) == 2
        out.backward()
        assert port.same(a.grad, 2 * port.values(a))
    assert len(ctx.cloned) == 0 and len(ctx.original) == 0  # (the block's state is cleared)


def test_without_the_block_the_change_is_refused(lib):
    a = port.randn(lib, 2, 3, requires_grad=True)
    b = a.clone()
    out = (b**2).sum()
    b.sin_()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.backward()


@pytest.mark.parametrize("changed", ["a view of it", "its base"])
def test_a_change_through_a_view_or_the_base_copies_too(lib, changed):
    with allow(lib) as ctx:
        a = port.randn(lib, 4, requires_grad=True)
        b = a.clone()
        view = b.view_as(b)
        saved = view if changed == "its base" else b
        out = (saved * saved).sum()  # (saved twice by one node: kept once)
        assert len(ctx.original) == 1
        (b if changed == "its base" else view).mul_(10)
        assert len(ctx.cloned) == 1 and len(ctx.original) == 0
        out.backward()
        assert port.same(a.grad, 2 * port.values(a))


def test_a_view_elsewhere_in_the_memory_is_copied_too(torch):
    """teachgrad copies what was saved of any memory a change writes to; torch's block looks
    for the changed view's first address only, and misses a saved base changed through a
    view that starts further in (docs/differences-from-torch.md)."""
    seen = {}
    for lib in (tg, torch):
        with allow(lib) as ctx:
            a = port.randn(lib, 4, requires_grad=True)
            b = a.clone()
            out = (b * b).sum()
            b[1:3].mul_(10)
            copies = len(ctx.cloned)
            out.backward()
            seen[lib.__name__] = (copies, port.values(a.grad) / port.values(a))
    assert seen["teachgrad"][0] == 1 and np.allclose(seen["teachgrad"][1], 2)
    assert seen["torch"][0] == 0 and np.allclose(seen["torch"][1], [2, 20, 20, 2])


def test_a_copy_is_not_made_of_what_backward_already_freed(lib):
    with allow(lib) as ctx:
        a = port.randn(lib, 3, requires_grad=True)
        b = a.clone()
        out = (b**2).sum()
        assert (len(ctx.tid_to_weakhandle), len(ctx.original), len(ctx.cloned)) == (1, 1, 0)
        out.backward()  # (frees what out's graph saved)
        assert (len(ctx.tid_to_weakhandle), len(ctx.original), len(ctx.cloned)) == (0, 0, 0)
        b.sin_()  # (nothing saved to copy; sin_'s own node saves b's old value)
        assert (len(ctx.tid_to_weakhandle), len(ctx.original), len(ctx.cloned)) == (1, 1, 0)
        assert port.same(a.grad, 2 * port.values(a))


def test_a_plain_tensor_saved_and_changed_under_no_grad(lib):
    with allow(lib):
        a = port.randn(lib, 3, requires_grad=True)
        w = port.randn(lib, 3, seed=5)
        out = (a * w).sum()  # MulBackward0 saves w for a's gradient
        with lib.no_grad():
            w.add_(1)
        out.backward()
    assert port.same(a.grad, port.values(port.randn(lib, 3, seed=5)))


def test_backward_outside_the_block_is_refused(lib):
    with allow(lib):
        a = port.randn(lib, 2, 3, requires_grad=True)
        out = (a**2).sum()
    with pytest.raises(AssertionError, match=OUTSIDE):
        out.backward()
    with allow(lib):
        a = port.randn(lib, 2, 3, requires_grad=True)
        out = (a**2).sum()
    with allow(lib), pytest.raises(AssertionError, match=OUTSIDE):
        out.backward()  # (another block: not the one the graph was recorded in)


def test_blocks_cannot_be_nested(lib):
    with allow(lib), pytest.raises(RuntimeError, match=NESTED), allow(lib):
        pass


def test_the_outer_block_still_works_after_a_refused_nesting():
    """(torch's refusal closes the outer block too, so its backward is then refused as
    outside any block; teachgrad leaves the outer block open.)"""
    with allow(tg):
        with pytest.raises(RuntimeError, match=NESTED), allow(tg):
            pass
        a = tg.ones(3, requires_grad=True)
        b = a.clone()
        out = (b * b).sum()
        b.zero_()
        out.backward()
        assert a.grad.tolist() == [2.0, 2.0, 2.0]

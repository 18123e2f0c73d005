"""Storage and version counters (issue 3, point 1), torch as the oracle.

What these tests prove:

* every kind of view (basic indexing, view/reshape-as-view, flatten, transpose, t,
  permute, expand, narrow, select, squeeze/unsqueeze, diagonal, the outputs of
  split/chunk/unbind) sits in memory exactly where torch puts it: ``_base``,
  ``_is_view()``, ``data_ptr()``, ``storage_offset()``, ``stride()``,
  ``is_contiguous()`` and the values are torch's;
* a view and its base (and ``detach()``) share ONE version counter: an in-place
  change through any alias moves ``_version`` of all of them together;
* ``.data`` shares the memory but NOT the version counter; a reshape that has to
  copy (non-contiguous input) owns a new counter;
* the examples of torch's "Tensor Views" documentation give torch's answers.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import pytest

from ._common import assert_both_same, make, name, numpy, values

SHAPE = (2, 3, 4)


def base(lib, requires_grad=False):
    """A fresh contiguous (2, 3, 4) float64 leaf owning its memory."""
    return make(lib, values(0, SHAPE), requires_grad=requires_grad)


# name -> fn(lib, x) returning a view of x (x has shape (2, 3, 4))
VIEWS = {
    "x[1] (int)": lambda lib, x: x[1],
    "x[-1, 2] (two ints)": lambda lib, x: x[-1, 2],
    "x[:, 1:] (slice)": lambda lib, x: x[:, 1:],
    "x[..., ::2] (step)": lambda lib, x: x[..., ::2],
    "x[:, ::2, 1:3] (step + slice)": lambda lib, x: x[:, ::2, 1:3],
    "x[None] (None)": lambda lib, x: x[None],
    "x[..., None, 1] (Ellipsis + None + int)": lambda lib, x: x[..., None, 1],
    "x[...] (Ellipsis alone)": lambda lib, x: x[...],
    # torch records a lone slice key as SliceBackward0 even when it covers the whole dim,
    # but skips full slices (``:``, ``0:size``, ``::1``) inside a tuple key (AliasBackward0)
    "x[:] (lone full slice)": lambda lib, x: x[:],
    "x[0:2] (lone full slice, explicit bounds)": lambda lib, x: x[0:2],
    "x[:, :] (full slices in a tuple)": lambda lib, x: x[:, :],
    "x[:, 0:3] (explicit full slice in a tuple)": lambda lib, x: x[:, 0:3],
    "x[:, ::1] (step-1 full slice in a tuple)": lambda lib, x: x[:, ::1],
    "view(6, 4)": lambda lib, x: x.view(6, 4),
    "view(-1)": lambda lib, x: x.view(-1),
    "view_as": lambda lib, x: x.view_as(lib.zeros(4, 6)),
    "reshape(4, 6) (contiguous: a view)": lambda lib, x: x.reshape(4, 6),
    "reshape of a step slice that still fits": lambda lib, x: x[:, :, ::2].reshape(6, 2),
    "flatten()": lambda lib, x: x.flatten(),
    "flatten(1)": lambda lib, x: x.flatten(1),
    "transpose(0, 2)": lambda lib, x: x.transpose(0, 2),
    "x[0].t()": lambda lib, x: x[0].t(),
    "x.mT": lambda lib, x: x.mT,
    "permute(2, 0, 1)": lambda lib, x: x.permute(2, 0, 1),
    "movedim(0, -1)": lambda lib, x: x.movedim(0, -1),
    "expand": lambda lib, x: x[:, :1].expand(2, 5, 4),
    "expand_as (new leading dim)": lambda lib, x: x.expand_as(lib.zeros(3, 2, 3, 4)),
    "narrow(1, 1, 2)": lambda lib, x: x.narrow(1, 1, 2),
    "narrow(-1, -2, 2)": lambda lib, x: x.narrow(-1, -2, 2),
    "select(2, 1)": lambda lib, x: x.select(2, 1),
    "select(0, -1)": lambda lib, x: x.select(0, -1),
    "squeeze(0) of x[:1]": lambda lib, x: x[:1].squeeze(0),
    "squeeze() of x[None, :, 1:2]": lambda lib, x: x[None, :, 1:2].squeeze(),
    "unsqueeze(1)": lambda lib, x: x.unsqueeze(1),
    "unsqueeze(-1)": lambda lib, x: x.unsqueeze(-1),
    "diagonal(0, 1, 2)": lambda lib, x: x.diagonal(0, 1, 2),
    "diagonal(1, 0, 2)": lambda lib, x: x.diagonal(1, 0, 2),
    "diagonal(-1, 1, 2)": lambda lib, x: x.diagonal(-1, 1, 2),
    "x[0].diagonal()": lambda lib, x: x[0].diagonal(),
    "split(2, 2)[1]": lambda lib, x: x.split(2, 2)[1],
    "split([1, 2], 1)[1]": lambda lib, x: x.split([1, 2], 1)[1],
    "chunk(2, 1)[1]": lambda lib, x: x.chunk(2, 1)[1],
    "unbind(1)[2]": lambda lib, x: x.unbind(1)[2],
    "unbind(0)[0]": lambda lib, x: x.unbind(0)[0],
    "view of a view: t()[1:].unsqueeze(0)": lambda lib, x: x[0].t()[1:].unsqueeze(0),
    "view of a view: permute then select": lambda lib, x: x.permute(2, 1, 0)[1][:, 1:],
    "view of a view: split output then transpose": lambda lib, x: x.split(1)[1].transpose(1, 2),
}

# copies: operations that look like views but must own their memory
COPIES = {
    "reshape of a transposed tensor": lambda lib, x: x.transpose(0, 2).reshape(-1),
    "flatten of a permuted tensor": lambda lib, x: x.permute(2, 0, 1).flatten(),
    "reshape of a column slice": lambda lib, x: x[:, :, 1:3].reshape(-1),
    "contiguous() of a transposed tensor": lambda lib, x: x.transpose(0, 1).contiguous(),
    "clone()": lambda lib, x: x.clone(),
    "advanced index x[[0, 1]]": lambda lib, x: x[[0, 1]],
    "bool mask x[x > 0]": lambda lib, x: x[x > 0],
}


def layout(v, root):
    """Where ``v`` sits in memory relative to ``root`` (the storage owner), as torch reports it."""
    of_root = v._base is root
    return dict(
        shape=tuple(v.shape),
        is_view=v._is_view(),
        base_is_root=of_root,
        stride=v.stride(),
        contiguous=v.is_contiguous(),
        storage_offset=v.storage_offset(),
        data_ptr_offset=v.data_ptr() - root.data_ptr(),
        values=numpy(v),
    )


@pytest.mark.parametrize("fn", VIEWS.values(), ids=VIEWS.keys())
def test_view_sits_in_memory_where_torch_puts_it(fn):
    """_base (always the storage owner, also for views of views), _is_view, stride,
    storage_offset, data_ptr, is_contiguous and the values equal torch's."""

    def program(lib):
        x = base(lib)
        facts = layout(fn(lib, x), x)
        assert facts["is_view"] and facts["base_is_root"]
        return facts

    assert_both_same(program)


@pytest.mark.parametrize("fn", VIEWS.values(), ids=VIEWS.keys())
def test_view_shares_the_version_counter_with_its_base(fn):
    """An in-place change through the base, through the view, and through a second alias
    (detach()) moves _version of all three together, and each change shows in the others'
    values -- the same numbers as torch."""

    def program(lib):
        x = base(lib)
        v = fn(lib, x)
        d = x.detach()
        trace = [(x._version, v._version, d._version)]
        x.mul_(2)  # through the base
        trace.append((x._version, v._version, d._version, numpy(v)))
        if v.stride().count(0) == 0:  # an expanded view cannot be written (tested elsewhere)
            v.add_(1)  # through the view
            trace.append((x._version, v._version, d._version, numpy(x)))
        d.sub_(0.5)  # through a third alias
        trace.append((x._version, v._version, d._version, numpy(v)))
        return trace

    facts = assert_both_same(program)
    versions = [step[:3] for step in facts["tg"]]
    assert all(len(set(vs)) == 1 for vs in versions)  # always equal ...
    assert versions[-1][0] == len(versions) - 1  # ... and bumped once per change


@pytest.mark.parametrize("fn", VIEWS.values(), ids=VIEWS.keys())
def test_view_of_a_leaf_that_requires_grad_records_torchs_node(fn):
    """A view of a leaf requiring grad is a non-leaf with torch's grad_fn name, requires
    grad, and its _base is the leaf; its version is the leaf's."""

    def program(lib):
        x = base(lib, requires_grad=True)
        v = fn(lib, x)
        return dict(
            name=name(v),
            requires_grad=v.requires_grad,
            is_leaf=v.is_leaf,
            base_is_x=v._base is x,
            version=v._version,
        )

    assert_both_same(program)


@pytest.mark.parametrize("fn", COPIES.values(), ids=COPIES.keys())
def test_copies_own_their_memory_and_version_counter(fn):
    """A reshape that must copy (and clone, contiguous of a strided tensor, advanced
    indexing) is not a view: _base None, its own counter, changes do not reach x."""

    def program(lib):
        x = base(lib)
        c = fn(lib, x)
        facts = dict(is_view=c._is_view(), base_none=c._base is None, version=c._version)
        c.add_(1)
        facts.update(after_c=(x._version, c._version), x=numpy(x))
        x.mul_(3)
        facts.update(after_x=(x._version, c._version), c=numpy(c))
        assert not facts["is_view"]
        return facts

    assert_both_same(program)


def test_data_shares_memory_but_not_the_version_counter():
    """``x.data`` sees the same memory (changes show both ways) but its own _version:
    neither changes the other's counter; it is no view, has no grad and is a leaf."""

    def program(lib):
        x = make(lib, values(1, (3,)), requires_grad=True)
        h = x * 2
        d = h.data
        facts = dict(
            same_memory=d.data_ptr() == h.data_ptr(),
            is_view=d._is_view(),
            requires_grad=d.requires_grad,
            is_leaf=d.is_leaf,
            start=(h._version, d._version),
        )
        d.add_(1)  # no grad recorded, no bump of h
        facts.update(after_d=(h._version, d._version), h=numpy(h))
        h.mul_(2)
        facts.update(after_h=(h._version, d._version), d=numpy(d))
        return facts

    facts = assert_both_same(program)
    assert facts["tg"]["after_d"] == (0, 1) and facts["tg"]["after_h"] == (1, 1)


def test_detach_shares_memory_and_the_version_counter():
    """``detach()`` is an alias of the same storage with the SAME counter (torch), yet
    not a view (_base None, _is_view False) and cut from the graph."""

    def program(lib):
        x = make(lib, values(2, (2, 3)), requires_grad=True)
        h = x * 2
        d = h.detach()
        facts = dict(
            is_view=d._is_view(),
            base_none=d._base is None,
            requires_grad=d.requires_grad,
            same_memory=d.data_ptr() == h.data_ptr(),
        )
        d.zero_()
        facts.update(after_d=(h._version, d._version), h=numpy(h))
        h[0].add_(5)
        facts.update(after_h=(h._version, d._version), d=numpy(d))
        return facts

    facts = assert_both_same(program)
    assert facts["tg"]["after_h"] == (2, 2)


def test_views_of_split_chunk_unbind_outputs_share_one_counter():
    """All outputs of split/chunk/unbind are views of the same base: one in-place change
    (made on the base) bumps every one of them."""

    def program(lib):
        x = base(lib)
        pieces = [*x.split(1), *x.chunk(3, 1), *x.unbind(2)]
        x[0, 0, 0] = 7.0
        return [(p._version, p._base is x) for p in pieces]

    facts = assert_both_same(program)
    assert {v for v, _ in facts["tg"]} == {1}


def test_versions_count_each_in_place_op_once_across_many_aliases():
    """A sequence of in-place ops through different aliases: _version counts all of them,
    whatever alias is asked, as in torch (and out-of-place ops count nothing)."""

    def program(lib):
        x = base(lib)
        a, b, c = x[0], x.transpose(0, 2), x.view(-1)
        trace = []
        for step in (
            lambda: a.add_(1),
            lambda: b.mul_(2),
            lambda: c.zero_(),
            lambda: x.add(1),  # out of place: no bump
            lambda: a.__setitem__(0, 3.0),
            lambda: b.clamp_(min=0.0),
            lambda: c.fill_(1.5),
        ):
            step()
            trace.append((x._version, a._version, b._version, c._version))
        return trace, numpy(x)

    facts = assert_both_same(program)
    assert facts["tg"][0][-1] == (6, 6, 6, 6)


def test_in_place_under_no_grad_still_bumps_the_version():
    """no_grad() stops recording, not counting: torch bumps _version there too."""

    def program(lib):
        x = make(lib, values(3, (3,)), requires_grad=True)
        with lib.no_grad():
            x.mul_(2)
            x[0] = 1.0
            x.add_(x)
        return x._version, x.is_leaf, x.requires_grad, numpy(x)

    assert_both_same(program)


# --------------------------------------------------------------------------- torch's "Tensor Views" docs


def test_docs_view_shares_storage_and_sees_writes():
    """Docs: ``b = t.view(2, 8); b[0][0] = 3.14`` changes ``t[0][0]``."""

    def program(lib):
        t = make(lib, values(4, (4, 4)))
        b = t.view(2, 8)
        same = t.data_ptr() == b.data_ptr()
        b[0][0] = 3.14
        return same, t[0][0].item(), t._version, b._version

    facts = assert_both_same(program)
    assert facts["tg"][:2] == (True, 3.14)


def test_docs_transpose_is_a_non_contiguous_view_and_contiguous_copies():
    """Docs: a transposed view is not contiguous; ``.contiguous()`` makes a copy."""

    def program(lib):
        base_ = make(lib, [[0.0, 1.0], [2.0, 3.0]])
        t = base_.transpose(0, 1)
        c = t.contiguous()
        return (
            base_.is_contiguous(),
            t._base is base_,
            t.is_contiguous(),
            c._base is base_,
            c.is_contiguous(),
            c.data_ptr() == base_.data_ptr(),
            c.stride(),
            t.stride(),
        )

    facts = assert_both_same(program)
    assert facts["tg"][:5] == (True, True, False, False, True)


# --------------------------------------------------------------------------- storage objects

STORAGE_OF = {  # fn(lib, x): a tensor whose storage is x's (2, 3, 4) float64 memory, or another
    "x": lambda lib, x: x,
    "x[1] (a view)": lambda lib, x: x[1],
    "x.transpose(0, 2) (strided)": lambda lib, x: x.transpose(0, 2),
    "x[:, ::2] (with gaps)": lambda lib, x: x[:, ::2],
    "x[:1].expand(3, 3, 4) (expanded)": lambda lib, x: x[:1].expand(3, 3, 4),
    "x[0, 0, 1:3] (a slice)": lambda lib, x: x[0, 0, 1:3],
    "x.float() (a copy)": lambda lib, x: x.float(),
    "x.transpose(0, 2).contiguous() (a copy)": lambda lib, x: x.transpose(0, 2).contiguous(),
}


@pytest.mark.parametrize("fn", STORAGE_OF.values(), ids=STORAGE_OF.keys())
def test_storage_and_untyped_storage_measure_the_memory_as_torchs(fn):
    """``len(t.storage())`` counts t's dtype's elements of the whole storage (not t's own);
    ``untyped_storage()`` counts bytes; both start where the storage starts, which views share."""

    def program(lib):
        x = base(lib)
        t = fn(lib, x)
        with warnings.catch_warnings():  # (the first storage() warns: tested below)
            warnings.simplefilter("ignore")
            typed = t.storage()
        untyped = t.untyped_storage()
        start = t.data_ptr() - t.storage_offset() * t.element_size()
        return (
            (len(typed), typed.size(), typed.nbytes(), typed.element_size()),
            (len(untyped), untyped.size(), untyped.nbytes(), untyped.element_size()),
            typed.untyped().nbytes(),
            str(typed.dtype).partition(".")[2],
            typed.data_ptr() == untyped.data_ptr() == start,
            untyped.data_ptr() == x.untyped_storage().data_ptr(),
            typed.device == untyped.device == t.device,
        )

    assert_both_same(program)


def test_typed_storage_is_deprecated_with_torchs_warning():
    """torch's first ``storage()`` in a process warns (a UserWarning), later ones do not; so
    the message is compared with a fresh process of each library."""
    script = (
        "import warnings, sys; lib = __import__(sys.argv[1])\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always'); x = lib.zeros(2); x.storage(); x[1:].storage()\n"
        "print([(m.category.__name__, str(m.message)) for m in w])\n"
    )
    said = {
        lib: subprocess.run(
            [sys.executable, "-c", script, lib], capture_output=True, text=True, check=True
        ).stdout
        for lib in ("teachgrad", "torch")
    }
    assert said["teachgrad"] == said["torch"]
    assert "TypedStorage is deprecated" in said["torch"]

"""torch's refusals around in-place ops (issue 3, points 3 and 4), torch as the oracle.

* ``REFUSED``: programs torch refuses when the in-place op runs (or when an alias
  is used afterwards). teachgrad must raise the same class with torch's key phrase.
* ``ALLOWED``: look-alikes torch accepts; teachgrad must accept them too and give the
  same values and versions.
* ``VERSION_ERRORS``: a tensor saved for backward, then changed in place. At backward
  torch raises "one of the variables needed for gradient computation has been
  modified by an inplace operation: [torch.DoubleTensor [3]], which is output 0 of
  Exp, is at version 1; expected version 0 instead." teachgrad's first sentence must
  be the same (same N and M, same "output 0 of X"), and the rest of its message must
  teach: which node saved the tensor, under which name, its shape, and which op(s)
  bumped the version.
"""

from __future__ import annotations

import re
import warnings

import pytest

import teachgrad as tg

from ._common import Raised, assert_both_same, both, make, name, numpy, values

F64 = "float64"


def leaf(lib, shape=(3, 4), seed=30):
    return make(lib, values(seed, shape), requires_grad=True)


def non_leaf(lib, shape=(3, 4)):
    return leaf(lib, shape) * 1.5


def plain(lib, shape=(3, 4), seed=31):
    return make(lib, values(seed, shape))


# --------------------------------------------------------------------------- refused at once


def _stale_unbind_output_into_its_base(lib, write):
    """``v = x.unbind()[0]``, x changed in place, then ``v`` written into x (which v overlaps)."""
    x = non_leaf(lib, (2,))
    v = x.unbind(0)[0]
    x.add_(1)
    return write(x, v)


def _in_no_grad(lib, fn):
    with lib.no_grad():
        return fn()


def _nograd_view_then(lib, make_base, write):
    b = make_base(lib)
    with lib.no_grad():
        v = b[0]
    return write(lib, b, v)


def _inference(lib, shape=(3,)):
    with lib.inference_mode():
        return lib.ones(*shape)


def _view_made_in_inference_mode(lib, b):
    with lib.inference_mode():
        return b[0:2]


def _unbind_then_under_no_grad(lib):
    r = non_leaf(lib).unbind()[1]
    with lib.no_grad():
        r.mul_(2)
    return r.grad_fn


def _no_grad_view_changed_in_no_grad_then_its_grad_fn(lib):
    b = non_leaf(lib)
    with lib.no_grad():
        v = b[0]
        v.mul_(2)
    return v.grad_fn


def _leaf_mask_setitem(lib):
    t = leaf(lib)
    t[t > 0] = 1.0


def _split_output_used_after_the_base_changed(lib):
    b = non_leaf(lib)
    pieces = b.split(2)
    b.add_(1)
    return pieces[0] * 2


def _unbind_output_read_after_another_region_changed(lib):
    b = non_leaf(lib)
    rows = b.unbind()
    b[1].mul_(2)
    return rows[0].grad_fn


def _self_overlap(t, write):
    """``write(t)`` where the operand is another view of ``t``'s memory."""
    return write(t)


LEAF = "a leaf Variable that requires grad is being used in an in-place operation."
VIEW_OF_LEAF = (
    "a view of a leaf Variable that requires grad is being used in an in-place operation."
)
NO_GRAD_VIEW = (
    "A view was created in no_grad mode and is being modified inplace with grad mode enabled."
)
NO_GRAD_VIEW_BASE = (
    "A view was created in no_grad mode and its base or another view of its base has been modified "
    "inplace with grad mode enabled."
)
MULTI = "This view is the output of a function that returns multiple views."
MULTI_BASE = "is a view and its base or another view of its base has been modified inplace."
INFERENCE = "Inplace update to inference tensor outside InferenceMode is not allowed."
INFERENCE_VIEW = (
    "A view was created in inference mode and is being modified inplace in normal mode."
)
PARTIAL_OVERLAP = (
    "unsupported operation: some elements of the input tensor and the written-to tensor refer to a "
    "single memory location."
)
OVERLAP = "unsupported operation: more than one element of the written-to tensor refers to a single memory location."

# name -> (program(lib), exception class, torch's key phrase)
REFUSED = {
    # in-place on a leaf that requires grad, or on a view of one
    "leaf.add_(1)": (lambda lib: leaf(lib).add_(1), RuntimeError, LEAF),
    "leaf += 1": (lambda lib: leaf(lib).__iadd__(1), RuntimeError, LEAF),
    "leaf.zero_()": (lambda lib: leaf(lib).zero_(), RuntimeError, LEAF),
    "leaf.copy_(t)": (lambda lib: leaf(lib).copy_(plain(lib)), RuntimeError, LEAF),
    "leaf.masked_fill_": (
        lambda lib: leaf(lib).masked_fill_(plain(lib) > 0, 0.0),
        RuntimeError,
        LEAF,
    ),
    "leaf.index_put_": (
        lambda lib: leaf(lib).index_put_((lib.tensor([0]),), lib.tensor(1.0, dtype=lib.float64)),
        RuntimeError,
        LEAF,
    ),
    "leaf[[0]] = 1 (advanced key)": (
        lambda lib: leaf(lib).__setitem__([0], 1.0),
        RuntimeError,
        LEAF,
    ),
    "leaf[leaf > 0] = 1 (mask)": (
        _leaf_mask_setitem,
        RuntimeError,
        LEAF,
    ),
    "leaf[0] = 1 (basic key: a view)": (
        lambda lib: leaf(lib).__setitem__(0, 1.0),
        RuntimeError,
        VIEW_OF_LEAF,
    ),
    "leaf.t().add_(1)": (lambda lib: leaf(lib).t().add_(1), RuntimeError, VIEW_OF_LEAF),
    "leaf[0][1:].mul_(2) (view of a view)": (
        lambda lib: leaf(lib)[0][1:].mul_(2),
        RuntimeError,
        VIEW_OF_LEAF,
    ),
    "leaf.diagonal().fill_(0)": (
        lambda lib: leaf(lib).diagonal().fill_(0.0),
        RuntimeError,
        VIEW_OF_LEAF,
    ),
    "leaf.view(-1).exp_()": (lambda lib: leaf(lib).view(-1).exp_(), RuntimeError, VIEW_OF_LEAF),
    "leaf[:, 1].copy_(value requiring grad)": (
        lambda lib: leaf(lib)[:, 1].copy_(leaf(lib, (3,), 32)),
        RuntimeError,
        VIEW_OF_LEAF,
    ),
    # views created in no_grad mode, changed with grad mode on
    "no_grad view of a non-leaf, changed": (
        lambda lib: _nograd_view_then(lib, non_leaf, lambda lib, b, v: v.mul_(2)),
        RuntimeError,
        NO_GRAD_VIEW,
    ),
    "no_grad view of a leaf, changed": (
        lambda lib: _nograd_view_then(lib, leaf, lambda lib, b, v: v.mul_(2)),
        RuntimeError,
        NO_GRAD_VIEW,
    ),
    "no_grad view of a plain tensor, value requiring grad written": (
        lambda lib: _nograd_view_then(lib, plain, lambda lib, b, v: v.mul_(leaf(lib, (4,)))),
        RuntimeError,
        NO_GRAD_VIEW,
    ),
    "no_grad view, base changed with grad on, then the view is used": (
        lambda lib: _nograd_view_then(lib, non_leaf, lambda lib, b, v: (b.mul_(2), v * 2)),
        RuntimeError,
        NO_GRAD_VIEW_BASE,
    ),
    "no_grad view, base changed with grad on, then view.grad_fn": (
        lambda lib: _nograd_view_then(lib, non_leaf, lambda lib, b, v: (b.mul_(2), v.grad_fn)),
        RuntimeError,
        NO_GRAD_VIEW_BASE,
    ),
    # outputs of functions returning several views
    "unbind output changed": (lambda lib: non_leaf(lib).unbind()[1].mul_(2), RuntimeError, MULTI),
    "split output changed": (lambda lib: non_leaf(lib).split(2)[1].add_(1), RuntimeError, MULTI),
    "split(sizes) output changed": (
        lambda lib: non_leaf(lib).split([1, 2])[0].zero_(),
        RuntimeError,
        MULTI,
    ),
    "chunk output changed": (lambda lib: non_leaf(lib).chunk(2, 1)[1].exp_(), RuntimeError, MULTI),
    "unbind output written by setitem": (
        lambda lib: non_leaf(lib).unbind(1)[0].__setitem__(1, 0.0),
        RuntimeError,
        MULTI,
    ),
    "unbind output of a leaf changed": (
        lambda lib: leaf(lib).unbind()[1].mul_(2),
        RuntimeError,
        MULTI,
    ),
    "view of an unbind output changed": (
        lambda lib: non_leaf(lib).unbind()[1][0:2].mul_(2),
        RuntimeError,
        MULTI,
    ),
    "unbind output of a plain tensor, value requiring grad written": (
        lambda lib: plain(lib).unbind()[1].mul_(leaf(lib, (4,))),
        RuntimeError,
        MULTI,
    ),
    "split output used after the base was changed": (
        _split_output_used_after_the_base_changed,
        RuntimeError,
        MULTI_BASE,
    ),
    "unbind output used after another output's region was changed": (
        _unbind_output_read_after_another_region_changed,
        RuntimeError,
        MULTI_BASE,
    ),
    "no_grad view changed inside no_grad, then view.grad_fn with grad on": (
        _no_grad_view_changed_in_no_grad_then_its_grad_fn,
        RuntimeError,
        NO_GRAD_VIEW_BASE,
    ),
    "unbind output changed under no_grad, then used": (
        _unbind_then_under_no_grad,
        RuntimeError,
        MULTI_BASE,
    ),
    # inference tensors
    "inference tensor.add_ outside inference_mode": (
        lambda lib: _inference(lib).add_(1),
        RuntimeError,
        INFERENCE,
    ),
    "inference tensor[0] = 2 outside inference_mode": (
        lambda lib: _inference(lib).__setitem__(0, 2.0),
        RuntimeError,
        INFERENCE,
    ),
    "view of an inference tensor changed outside inference_mode": (
        lambda lib: _inference(lib)[0:2].mul_(2),
        RuntimeError,
        INFERENCE,
    ),
    "view made in inference_mode of a non-leaf, changed outside": (
        lambda lib: _view_made_in_inference_mode(lib, non_leaf(lib)).mul_(2),
        RuntimeError,
        INFERENCE_VIEW,
    ),
    # writing into memory several elements share
    "expand(...).add_": (
        lambda lib: plain(lib, (3, 1)).expand(3, 4).add_(1),
        RuntimeError,
        OVERLAP,
    ),
    "expand of a non-leaf .mul_": (
        lambda lib: non_leaf(lib, (3, 1)).expand(3, 4).mul_(2),
        RuntimeError,
        OVERLAP,
    ),
    "expanded[0] = 1.0": (
        lambda lib: plain(lib, (3, 1)).expand(3, 4).__setitem__(0, 1.0),
        RuntimeError,
        OVERLAP,
    ),
    "expanded.copy_(t)": (
        lambda lib: plain(lib, (1, 4)).expand(3, 4).copy_(plain(lib)),
        RuntimeError,
        OVERLAP,
    ),
    # the operand shares part of the written memory (torch checks partial overlap)
    "t.add_(t[0])": (
        lambda lib: _self_overlap(plain(lib), lambda t: t.add_(t[0])),
        RuntimeError,
        PARTIAL_OVERLAP,
    ),
    "square t.copy_(t.t())": (
        lambda lib: _self_overlap(plain(lib, (3, 3)), lambda t: t.copy_(t.t())),
        RuntimeError,
        PARTIAL_OVERLAP,
    ),
    "t[1:].copy_(t[:-1])": (
        lambda lib: _self_overlap(plain(lib), lambda t: t[1:].copy_(t[:-1])),
        RuntimeError,
        PARTIAL_OVERLAP,
    ),
    # the result's dtype cannot be stored in the tensor
    "int tensor *= 2.5": (
        lambda lib: lib.tensor([1, 2, 3]).__imul__(2.5),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    "int tensor += float tensor": (
        lambda lib: lib.tensor([1, 2, 3]).__iadd__(lib.tensor([0.5, 1.0, 2.0])),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    "int16 tensor *= 0.5": (
        lambda lib: lib.tensor([1, 2], dtype=lib.int16).__imul__(0.5),
        RuntimeError,
        "result type Float can't be cast to the desired output type Short",
    ),
    "int8 tensor.add_(1.5)": (
        lambda lib: lib.tensor([1, 2], dtype=lib.int8).add_(1.5),
        RuntimeError,
        "result type Float can't be cast to the desired output type Char",
    ),
    "uint8 tensor.div_(2)": (
        lambda lib: lib.tensor([1, 2], dtype=lib.uint8).div_(2),
        RuntimeError,
        "result type Float can't be cast to the desired output type Byte",
    ),
    "int tensor.div_(2)": (
        lambda lib: lib.tensor([1, 2, 3]).div_(2),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    "int tensor.sqrt_()": (
        lambda lib: lib.tensor([1, 2, 3]).sqrt_(),
        RuntimeError,
        "result type Float can't be cast to the desired output type Long",
    ),
    "bool tensor.add_(1)": (
        lambda lib: lib.tensor([True, False]).add_(1),
        RuntimeError,
        "result type Long can't be cast to the desired output type Bool",
    ),
    # the result's shape is not the tensor's
    "zeros(3).add_(ones(2, 3))": (
        lambda lib: lib.zeros(3).add_(lib.ones(2, 3)),
        RuntimeError,
        "output with shape [3] doesn't match the broadcast shape [2, 3]",
    ),
    "zeros(1, 3).mul_(ones(2, 3))": (
        lambda lib: lib.zeros(1, 3).mul_(lib.ones(2, 3)),
        RuntimeError,
        "output with shape [1, 3] doesn't match the broadcast shape [2, 3]",
    ),
    "zeros(3) += ones(2, 3)": (
        lambda lib: lib.zeros(3).__iadd__(lib.ones(2, 3)),
        RuntimeError,
        "output with shape [3] doesn't match the broadcast shape [2, 3]",
    ),
    "non-leaf.add_(bigger) with grad": (
        lambda lib: non_leaf(lib, (3,)).add_(lib.ones(2, 3, dtype=lib.float64)),
        RuntimeError,
        "output with shape [3] doesn't match the broadcast shape [2, 3]",
    ),
    "zeros(3).copy_(ones(2, 3))": (
        lambda lib: lib.zeros(3).copy_(lib.ones(2, 3)),
        RuntimeError,
        "output with shape [3] doesn't match the broadcast shape [2, 3]",
    ),
    "t[0] = value of a bigger shape": (
        lambda lib: lib.zeros(3, 4).__setitem__(0, lib.ones(2, 4)),
        RuntimeError,
        "the number of sizes provided (1) must be greater or equal to the number of dimensions",
    ),
    # torch's autograd layer reads an operand's history (a view's is made again) before its
    # kernel looks for overlaps: a stale unbind() output of x is that error, not the overlap's
    "x.copy_(stale unbind output of x)": (
        lambda lib: _stale_unbind_output_into_its_base(lib, lambda x, v: x.copy_(v)),
        RuntimeError,
        "Output 0 of Unbind is a view and its base or another view of its base has been modified inplace",
    ),
    "x.add_(stale unbind output of x)": (
        lambda lib: _stale_unbind_output_into_its_base(lib, lambda x, v: x.add_(v)),
        RuntimeError,
        "Output 0 of Unbind is a view and its base or another view of its base has been modified inplace",
    ),
    "x[1] = stale unbind output of x": (
        lambda lib: _stale_unbind_output_into_its_base(lib, lambda x, v: x.__setitem__(1, v)),
        RuntimeError,
        "Output 0 of Unbind is a view and its base or another view of its base has been modified inplace",
    ),
    "index_put_ with a value of the wrong shape": (
        lambda lib: lib.zeros(3, 4).index_put_((lib.tensor([0, 1]),), lib.ones(3, 4)),
        RuntimeError,
        "shape mismatch: value tensor of shape [3, 4] cannot be broadcast to indexing result of shape [2, 4]",
    ),
}


@pytest.mark.parametrize("program,exc,phrase", REFUSED.values(), ids=REFUSED.keys())
def test_refused_like_torch(program, exc, phrase):
    """torch raises ``exc`` with ``phrase``; teachgrad raises the same class with the phrase."""
    facts = both(program)
    want, got = facts["torch"], facts["tg"]
    assert isinstance(want, Raised) and want.type == exc.__name__ and phrase in want.message, (
        f"the oracle changed: torch gave {want!r}"
    )
    assert isinstance(got, Raised), f"teachgrad did not raise; torch raised {want!r}"
    assert got.type == want.type and phrase in got.message, (
        f"teachgrad raised {got!r}\ntorch raised    {want!r}"
    )


def test_refusals_explain_what_to_do():
    """teachgrad adds a line naming the op and the way out to torch's leaf/view/overlap errors."""
    for program, hint in (
        (lambda lib: leaf(lib).mul_(2), "no_grad"),
        (lambda lib: leaf(lib)[0].mul_(2), "clone"),
        (lambda lib: plain(lib, (3, 1)).expand(3, 4).add_(1), "expand"),
    ):
        got = both(program)["tg"]
        assert isinstance(got, Raised) and hint in got.message and "\n" in got.message


# --------------------------------------------------------------------------- allowed look-alikes


def _plain_split_no_grad(lib):
    b = plain(lib)
    p, q = b.split(2)
    p.mul_(2)
    return numpy(b), b._version


def _view_of_normal_made_in_inference_mode(lib):
    b = plain(lib, (3,))
    v = _view_made_in_inference_mode(lib, b)
    v.mul_(2)
    return numpy(b), b._version, v.is_inference()


def _no_grad_view_changed_in_no_grad(lib):
    b = non_leaf(lib)
    with lib.no_grad():
        v = b[0]
        v.mul_(2)
    c = b * 2  # the base's history is untouched: the change was not recorded
    return numpy(b), b._version, name(b), name(c)


def _unsaved_input_changed(lib):
    """Add saves nothing, so changing its input before backward is fine (torch checks only
    what a node saved)."""
    x = leaf(lib)
    h = x * 2
    y = h + 1
    h.mul_(3)
    y.sum().backward()
    return numpy(x.grad), h._version


def _leaf_changed_under_no_grad(lib):
    x = leaf(lib)
    with lib.no_grad():
        x.mul_(2)
        x[0] = 1.0
    (x * x).sum().backward()
    return numpy(x.grad), x._version, x.is_leaf


def _expand_without_repeats(lib):
    """expand(3, 1) of a (3, 1) tensor repeats nothing: writing is fine."""
    return numpy(plain(lib, (3, 1)).expand(3, 1).add_(1))


def _fill_one_element_of_an_expanded_tensor(lib):
    e = plain(lib, (3, 1)).expand(3, 4)
    e[0, 1].fill_(1.0)
    return numpy(e)


def _fill_a_row_of_an_expanded_tensor(lib):
    """fill_ writes one value, so torch does not check for elements sharing memory."""
    e = plain(lib, (3, 1)).expand(3, 4)
    e[0].fill_(1.0)
    return numpy(e)


def _int_setitem_float(lib):
    a = lib.tensor([1, 2, 3])
    a[0] = 2.7  # truncated to 2
    return a.tolist(), a._version


def _int_copy_float(lib):
    return lib.tensor([1, 2, 3]).copy_(lib.tensor([1.5, -2.5, 3.9])).tolist()


def _int_fill_float(lib):
    return lib.tensor([1, 2, 3]).fill_(2.5).tolist()


def _float_add_int(lib):
    return lib.tensor([1.0, 2.0]).add_(lib.tensor([1, 2])).tolist()


def _float32_mul_float64(lib):
    a = lib.ones(2)
    a.mul_(lib.tensor([0.1, 0.2], dtype=lib.float64))
    return str(a.dtype).split(".")[-1], a.tolist()


def _detach_of_a_leaf_changed(lib):
    x = leaf(lib)
    x.detach().add_(1)
    return numpy(x), x._version


ALLOWED = {
    "expand(3, 1) of a (3, 1) tensor .add_": _expand_without_repeats,
    "an element of an expanded tensor .fill_": _fill_one_element_of_an_expanded_tensor,
    "a row of an expanded tensor .fill_": _fill_a_row_of_an_expanded_tensor,
    "int tensor[0] = 2.7 (truncates)": _int_setitem_float,
    "int tensor.copy_(float tensor) (truncates)": _int_copy_float,
    "int tensor.fill_(2.5) (truncates)": _int_fill_float,
    "float tensor.add_(int tensor)": _float_add_int,
    "float32 tensor.mul_(float64 tensor) stays float32": _float32_mul_float64,
    "split outputs of a plain tensor changed (nothing requires grad)": _plain_split_no_grad,
    "view made in inference_mode of a normal plain tensor, changed outside": _view_of_normal_made_in_inference_mode,
    "no_grad view changed inside no_grad": _no_grad_view_changed_in_no_grad,
    "detach() of a leaf changed": _detach_of_a_leaf_changed,
    "leaf changed under no_grad, then used": _leaf_changed_under_no_grad,
    "an input no node saved, changed before backward": _unsaved_input_changed,
}


@pytest.mark.parametrize("program", ALLOWED.values(), ids=ALLOWED.keys())
def test_allowed_like_torch(program):
    """torch accepts these; teachgrad must too, with the same values and versions."""
    facts = assert_both_same(program)
    assert not isinstance(facts["torch"], Raised)


def test_inference_mode_in_place_inside_is_allowed():
    """Inside inference_mode an inference tensor may be changed in place (torch)."""

    def program(lib):
        with lib.inference_mode():
            a = lib.ones(2)
            a.add_(1)
            a[0] = 5.0
        return a.tolist(), a.is_inference()

    assert_both_same(program)


def test_view_of_a_leaf_made_in_no_grad_requires_grad_like_torch():
    """torch: a view of a leaf requiring grad made under no_grad still reports
    requires_grad=True (it has no grad_fn and is a leaf)."""

    def program(lib):
        x = leaf(lib)
        with lib.no_grad():
            v = x[0:2]
        return v.requires_grad, v.grad_fn is None, v.is_leaf, v._is_view()

    assert_both_same(program)


def _stale_views(lib):
    """Views whose base then changed in place: a ``no_grad`` view, an ``unbind`` output
    (both restricted: using them with grad mode on raises) and a plain view."""
    b = lib.ones(2, 2, requires_grad=True).clone()
    with lib.no_grad():
        made_in_no_grad = b[0]
    first, _ = b.unbind(0)
    plain = b[1]
    b.mul_(2)
    return {"no_grad view": made_in_no_grad, "unbind output": first, "plain view": plain}


@pytest.mark.parametrize("kind", ["no_grad view", "unbind output", "plain view"])
@pytest.mark.parametrize("asked", ["grad", "retains_grad"])
def test_asking_a_stale_view_for_grad_never_raises_like_torch(kind, asked):
    """torch's ``.grad`` and ``.retains_grad`` read the history a tensor has: a view whose
    base changed in place is not brought up to date by them, so they never raise (teachgrad's
    did, for the views that may not follow their base); ``.grad`` warns for a non-leaf."""

    def program(lib):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            answer = getattr(_stale_views(lib)[kind], asked)
        return answer, [str(w.message).split(".")[0] for w in caught]

    facts = assert_both_same(program)
    assert not isinstance(facts["torch"], Raised)


# --------------------------------------------------------------------------- the version check at backward


def _saved_output(lib):
    """y = x.exp() saves its result y; y.add_(1) changes it."""
    x = leaf(lib, (3,))
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _saved_input_changed_twice(lib):
    x = leaf(lib, (3,))
    h = x * 2
    y = h * h
    h.mul_(3)
    h.add_(1)
    y.sum().backward()


def _saved_plain_input(lib):
    """A tensor that does not require grad, saved by mul (as 'other'), then changed."""
    x = leaf(lib, (3,))
    w = plain(lib, (3,))
    y = x * w
    w.add_(1)
    y.sum().backward()


def _saved_at_version_one(lib):
    x = leaf(lib, (3,))
    h = x * 2
    h.add_(1)
    y = h.sin()
    h.mul_(2)
    y.sum().backward()


def _saved_view_base_changed(lib):
    """v = h[0] is saved by sin; changing the base h changes v (torch then names v's
    regenerated grad_fn: AsStrided)."""
    x = leaf(lib)
    h = x * 1
    v = h[0]
    y = v.sin()
    h.mul_(2)
    y.sum().backward()


def _saved_view_changed_through_another_alias(lib):
    x = leaf(lib)
    h = x * 1
    v = h[0]
    y = v.sin()
    h[:, 1].zero_()
    y.sum().backward()


def _saved_output_changed_through_a_view(lib):
    x = leaf(lib)
    y = x.exp()
    y[0].add_(1)
    y.sum().backward()


def _saved_output_changed_through_detach(lib):
    x = leaf(lib, (3,))
    y = x.exp()
    y.detach().zero_()
    y.sum().backward()


def _sigmoid_result_changed(lib):
    x = leaf(lib, (3,))
    y = x * 1
    y.sigmoid_()
    y.mul_(2)
    y.sum().backward()


def _relu_result_changed(lib):
    x = leaf(lib, (3,))
    y = x * 1
    y.relu_()
    z = y * 1
    y.add_(2)
    z.sum().backward()


def _tanh_of_a_view_then_base_changed(lib):
    x = leaf(lib)
    h = x * 1
    h[0].tanh_()
    h.mul_(2)
    h.sum().backward()


def _pow_input_zeroed(lib):
    x = leaf(lib, (3,))
    h = x * 1
    y = h.pow(3)
    h.zero_()
    y.sum().backward()


def _second_backward_after_a_change(lib):
    x = leaf(lib, (3,))
    h = x * 1
    y = (h * h).sum()
    y.backward(retain_graph=True)
    h.add_(1)
    y.backward()


def _float32_saved_output(lib):
    x = make(lib, values(33, (3,)), requires_grad=True, dtype="float32")
    y = x.exp()
    y.add_(1)
    y.sum().backward()


def _custom_function_saved_input(lib):
    class Twice(lib.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * 2

        @staticmethod
        def backward(ctx, g):
            (a,) = ctx.saved_tensors
            return g * a

    x = leaf(lib, (3,))
    h = x * 1
    y = Twice.apply(h)
    h.add_(1)
    y.sum().backward()


def _saved_result_attribute(lib):
    """The docs' ``grad_fn._saved_result``: reading it after the change raises too."""
    x = leaf(lib, (3,))
    y = x.exp()
    node = y.grad_fn
    y.add_(1)
    return node._saved_result


# name -> (program, node that saved it, saved name (regex), shape, ops that bumped it)
VERSION_ERRORS = {
    "saved output: y = x.exp(); y.add_(1)": (
        _saved_output,
        "ExpBackward0",
        "result",
        (3,),
        ["add_"],
    ),
    "saved input changed twice (version 2, expected 0)": (
        _saved_input_changed_twice,
        "MulBackward0",
        "self|other",
        (3,),
        ["mul_", "add_"],
    ),
    "saved input that requires no grad": (
        _saved_plain_input,
        "MulBackward0",
        "other",
        (3,),
        ["add_"],
    ),
    "saved at version 1, now 2": (_saved_at_version_one, "SinBackward0", "self", (3,), ["mul_"]),
    "saved view, base changed": (_saved_view_base_changed, "SinBackward0", "self", (4,), ["mul_"]),
    "saved view, another alias changed": (
        _saved_view_changed_through_another_alias,
        "SinBackward0",
        "self",
        (4,),
        ["zero_"],
    ),
    "saved output changed through a view": (
        _saved_output_changed_through_a_view,
        "ExpBackward0",
        "result",
        (3, 4),
        ["add_"],
    ),
    "saved output changed through detach()": (
        _saved_output_changed_through_detach,
        "ExpBackward0",
        "result",
        (3,),
        ["zero_"],
    ),
    "sigmoid_ result changed (version 2, expected 1)": (
        _sigmoid_result_changed,
        "SigmoidBackward0",
        "result",
        (3,),
        ["mul_"],
    ),
    "relu_ result changed": (_relu_result_changed, "ReluBackward0", "result", (3,), ["add_"]),
    "tanh_ on a view, base changed": (
        _tanh_of_a_view_then_base_changed,
        "TanhBackward0",
        "result",
        (4,),
        ["mul_"],
    ),
    "pow input zeroed": (_pow_input_zeroed, "PowBackward0", "self", (3,), ["zero_"]),
    "second backward after a change (retain_graph)": (
        _second_backward_after_a_change,
        "MulBackward0",
        "self|other",
        (3,),
        ["add_"],
    ),
    "float32 saved output": (_float32_saved_output, "ExpBackward0", "result", (3,), ["add_"]),
    "custom Function, save_for_backward input": (
        _custom_function_saved_input,
        "TwiceBackward",
        r"saved_tensors\[0\]",
        (3,),
        ["add_"],
    ),
    "grad_fn._saved_result after the change": (
        _saved_result_attribute,
        "ExpBackward0",
        "result",
        (3,),
        ["add_"],
    ),
}

_FIRST_SENTENCE = re.compile(r"^.*? instead\.", re.S)


def _first_sentence(message: str) -> str:
    found = _FIRST_SENTENCE.match(message)
    assert found, f"no '... instead.' sentence in {message!r}"
    return re.sub(r"\b(torch|teachgrad)\.", "LIB.", found.group(0))


@pytest.mark.parametrize(
    "program", [v[0] for v in VERSION_ERRORS.values()], ids=list(VERSION_ERRORS.keys())
)
def test_version_error_sentence_is_torchs(program):
    """Same class, and the same first sentence as torch: the tensor's type and shape,
    'which is output 0 of X', 'is at version N; expected version M instead.'"""
    facts = both(program)
    want, got = facts["torch"], facts["tg"]
    assert isinstance(want, Raised) and "modified by an inplace operation" in want.message
    assert isinstance(got, Raised), f"teachgrad did not raise; torch raised {want!r}"
    assert got.type == want.type
    assert _first_sentence(got.message) == _first_sentence(want.message)


@pytest.mark.parametrize(
    "program,node,saved_name,shape,ops", VERSION_ERRORS.values(), ids=VERSION_ERRORS.keys()
)
def test_version_error_teaches_who_saved_what_and_who_changed_it(
    program, node, saved_name, shape, ops
):
    """teachgrad's message goes on to say which node saved the tensor, under which name,
    its shape, and the op(s) that bumped its version since, in order."""
    got = both(program)["tg"]
    assert isinstance(got, Raised)
    message = got.message
    assert re.search(rf"{node} saved this tensor as '({saved_name})'", message), message
    assert f"(shape {shape})" in message, message
    changed = re.search(r"Then (.*?) changed it in place", message)
    assert changed and changed.group(1) == ", ".join(ops), message


@pytest.mark.parametrize(
    "op, phrase",
    [
        (lambda lib, e: e.masked_fill_(e > 0, 1.0), "Use of masked_fill_ on expanded tensors"),
        (lambda lib, e: e.index_put_((lib.tensor([0]),), lib.tensor(2.0)), "Use of index_put_ on"),
        (lambda lib, e: e.__setitem__(e > 0, 1.0), "on expanded tensors is deprecated"),
    ],
    ids=["masked_fill_", "index_put_", "x[mask] = v"],
)
def test_masked_writes_to_an_expanded_tensor_warn_like_torch(torch, op, phrase):
    """torch still allows these on expand()ed tensors (deprecated, with a warning): so do we."""
    results = []
    for lib in (tg, torch):
        base = lib.tensor([[-1.0], [2.0], [3.0]])
        expanded = base.expand(3, 4)
        with pytest.warns(UserWarning, match=phrase):
            op(lib, expanded)
        results.append(base.cpu().numpy().tolist())
    assert results[0] == results[1]

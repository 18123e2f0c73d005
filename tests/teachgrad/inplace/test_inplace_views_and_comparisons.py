"""The in-place view ops (``t_``, ``transpose_``, ``swapaxes_``, ``swapdims_``, ``squeeze_``,
``unsqueeze_``, ``as_strided_``), ``as_strided`` and the in-place comparisons (``eq_`` ...),
against torch.

An in-place view op gives the tensor itself a new shape and strides over the same memory;
its history becomes the view op's node under torch's in-place name (``TBackward1``), and
its version moves. ``as_strided`` reads any layout of a tensor's storage; its gradient adds
up per memory cell. An in-place comparison writes 1 or 0 in the tensor's own dtype and is
recorded with a zero gradient. Each program runs in both libraries, and what it shows
(values, shapes, strides, node names, versions, gradients, the error's class and first
line) must be torch's.
"""

from __future__ import annotations

import numpy as np
import pytest

import teachgrad as tg

from ._common import assert_both_same, make, name, numpy, torch_phrase, values, weighted_sum


def _facts(lib, t, leaves):
    """What a program shows of ``t``, and the gradients of a weighted sum of it."""
    facts = {
        "values": numpy(t),
        "shape": tuple(t.shape),
        "stride": t.stride(),
        "node": name(t),
        "inputs": [None if n is None else n.name() for n, _ in t.grad_fn.next_functions]
        if t.grad_fn is not None
        else None,
        "version": t._version,
        "requires_grad": t.requires_grad,
    }
    if t.requires_grad:
        loss = weighted_sum(lib, [t])
        facts["grads"] = [numpy(g) for g in lib.autograd.grad(loss, leaves)]
    return facts


# name -> (shape of the tensor changed, the in-place call)
VIEW_OPS = {
    "t_ 2-d": ((2, 3), lambda x: x.t_()),
    "t_ 1-d": ((4,), lambda x: x.t_()),
    "t_ 0-d": ((), lambda x: x.t_()),
    "transpose_": ((2, 3, 4), lambda x: x.transpose_(0, 2)),
    "transpose_ negative dims": ((2, 3, 4), lambda x: x.transpose_(-1, 1)),
    "swapaxes_": ((2, 3, 4), lambda x: x.swapaxes_(0, 1)),
    "swapdims_": ((2, 3, 4), lambda x: x.swapdims_(2, 0)),
    "squeeze_ all": ((1, 3, 1), lambda x: x.squeeze_()),
    "squeeze_ one dim": ((1, 3, 1), lambda x: x.squeeze_(-1)),
    "squeeze_ a dim not of size 1": ((1, 3, 1), lambda x: x.squeeze_(1)),
    "squeeze_ dims": ((1, 3, 1), lambda x: x.squeeze_((0, 2))),
    "unsqueeze_": ((2, 3), lambda x: x.unsqueeze_(1)),
    "unsqueeze_ at the end": ((2, 3), lambda x: x.unsqueeze_(-1)),
    "as_strided_": ((2, 3), lambda x: x.as_strided_((2, 2), (1, 2))),
    "as_strided_ with an offset": ((2, 3), lambda x: x.as_strided_((3,), (2,), 1)),
}


@pytest.mark.parametrize("where", ["a tensor", "a view of a tensor"])
@pytest.mark.parametrize("op", VIEW_OPS)
def test_an_in_place_view_op_is_torchs(op, where):
    shape, call = VIEW_OPS[op]

    def program(lib):
        x = make(lib, values(1, shape), requires_grad=True)
        target = x * 1.5
        if where == "a view of a tensor":  # (a view of all of it: the shape stays)
            target = (target.unsqueeze(0) * 1)[0]
        returned = call(target)
        return {"self": returned is target, **_facts(lib, target, [x])}

    assert_both_same(program)


@pytest.mark.parametrize("op", VIEW_OPS)
def test_an_in_place_view_op_on_a_plain_tensor_and_under_no_grad(op):
    """Nothing is recorded, but the layout and the version change, as in torch; under
    no_grad even a leaf that requires grad may be changed."""
    shape, call = VIEW_OPS[op]

    def program(lib):
        plain = make(lib, values(2, shape))
        call(plain)
        leaf = make(lib, values(2, shape), requires_grad=True)
        with lib.no_grad():
            call(leaf)
        return {"plain": _facts(lib, plain, []), "leaf": _facts(lib, leaf.detach(), [])}

    assert_both_same(program)


BAD_CALLS = {
    "t_ of a 3-d tensor": lambda lib: lib.zeros(2, 3, 4).t_(),
    "transpose_ out of range": lambda lib: lib.zeros(2, 3).transpose_(0, 2),
    "squeeze_ out of range": lambda lib: lib.zeros(2, 3).squeeze_(5),
    "squeeze_ a dim twice": lambda lib: lib.zeros(1, 3).squeeze_((0, 0)),
    "unsqueeze_ out of range": lambda lib: lib.zeros(2, 3).unsqueeze_(4),
    "a leaf that requires grad": lambda lib: lib.zeros(2, 3, requires_grad=True).t_(),
    "a view of a leaf": lambda lib: lib.zeros(2, 3, requires_grad=True)[0].unsqueeze_(0),
    "as_strided_ out of bounds": lambda lib: lib.zeros(2).as_strided_((3,), (1,)),
    "as_strided out of bounds": lambda lib: lib.zeros(4).as_strided((4, 4), (1, 1), 4),
    "as_strided, a negative stride": lambda lib: lib.zeros(4).as_strided((2, 2), (-1, 1)),
    "as_strided, a negative offset": lambda lib: lib.zeros(4).as_strided((2,), (1,), -1),
    "as_strided, a negative size": lambda lib: lib.zeros(4).as_strided((-1,), (1,)),
    "as_strided, one stride short": lambda lib: lib.zeros(4).as_strided((2, 2), (1,)),
    "an in-place comparison of a leaf": lambda lib: lib.ones(2, requires_grad=True).eq_(1.0),
    "an in-place comparison that broadcasts": lambda lib: lib.ones(2).lt_(lib.ones(3)),
    "an in-place comparison to a bigger shape": lambda lib: lib.ones(2).ge_(lib.ones(2, 2)),
}


@pytest.mark.parametrize("call", BAD_CALLS)
def test_bad_calls_raise_torchs_error(call):
    import torch

    errors = {}
    for key, lib in (("tg", tg), ("torch", torch)):
        with pytest.raises((RuntimeError, IndexError)) as caught:
            BAD_CALLS[call](lib)
        errors[key] = (caught.type, torch_phrase(str(caught.value).splitlines()[0]))
    assert errors["tg"] == errors["torch"]


def test_a_node_that_saved_the_tensor_sees_its_version_moved():
    def program(lib):
        y = make(lib, values(3, (2, 2)), requires_grad=True) * 1
        z = y * y  # saves y
        y.t_()
        z.sum().backward()

    facts = assert_both_same(program)
    assert "modified by an inplace operation" in facts["tg"].message


def test_retain_grad_stays_with_the_node_before_the_view_op():
    """torch does not move ``retain_grad()`` to an in-place view op's node (it does for the
    other in-place ops): ``.grad`` keeps the old layout."""

    def program(lib):
        r = make(lib, values(4, (2, 3)), requires_grad=True) * 1
        r.retain_grad()
        r.t_()
        weighted_sum(lib, [r]).backward()
        return numpy(r.grad)

    facts = assert_both_same(program)
    assert facts["tg"].shape == (2, 3)


def test_forward_ad_tangents_follow_the_new_layout():
    def program(lib):
        fa = lib.autograd.forward_ad
        with fa.dual_level():
            x = fa.make_dual(make(lib, values(5, (2, 3))), make(lib, values(6, (2, 3))))
            y = x * 1
            y.t_().unsqueeze_(0)
            windows = fa.make_dual(make(lib, values(7, (6,))), make(lib, values(8, (6,))))
            w = windows.as_strided((3, 2), (2, 1))
            return numpy(fa.unpack_dual(y).tangent), numpy(fa.unpack_dual(w).tangent)

    assert_both_same(program)


# ------------------------------------------------------------------------------ as_strided

# name -> (the input, made from a float64 leaf x of 12 elements; the as_strided call)
AS_STRIDED = {
    "sliding windows": (lambda x: x, lambda t: t.as_strided((5, 3), (2, 1))),
    "a repeated element": (lambda x: x, lambda t: t.as_strided((2, 2), (1, 1), 3)),
    "a stride of 0": (lambda x: x, lambda t: t.as_strided((3, 2), (0, 3))),
    "of a slice (storage offset)": (lambda x: x[2:10], lambda t: t.as_strided((2, 2), (3, 1))),
    "past the slice, in its storage": (lambda x: x[2:6], lambda t: t.as_strided((3,), (3,), 1)),
    "of a transposed matrix": (
        lambda x: x.reshape(3, 4).t(),
        lambda t: t.as_strided((2, 3), (1, 4)),
    ),
    "of an expanded tensor": (
        lambda x: x[:3].expand(4, 3),
        lambda t: t.as_strided((2, 2), (1, 1)),
    ),
    "empty": (lambda x: x, lambda t: t.as_strided((0, 3), (3, 1))),
    "the function": (lambda x: x * 1, lambda t: tg_or_torch(t).as_strided(t, (2, 3), (3, 1), 2)),
}


def tg_or_torch(t):
    """The library of tensor ``t``."""
    return tg if isinstance(t, tg.Tensor) else __import__("torch")


@pytest.mark.parametrize("case", AS_STRIDED)
def test_as_strided_values_node_and_gradients_are_torchs(case):
    make_input, call = AS_STRIDED[case]

    def program(lib):
        x = make(lib, values(9, (12,)), requires_grad=True)
        out = call(make_input(x))
        node = out.grad_fn
        saved = (node._saved_size, node._saved_stride, node._saved_storage_offset)
        return {"storage_offset": out.storage_offset(), "saved": saved, **_facts(lib, out, [x])}

    assert_both_same(program)


@pytest.mark.parametrize(
    "case", ["sliding windows", "a repeated element", "of a slice (storage offset)"]
)
def test_as_strided_passes_gradcheck_and_gradgradcheck(case):
    make_input, call = AS_STRIDED[case]
    x = tg.tensor(values(10, (12,)), requires_grad=True)
    f = lambda x: call(make_input(x)) ** 2  # noqa: E731 - (squared: a second derivative to check)
    assert tg.autograd.gradcheck(f, (x,), check_forward_ad=True)
    assert tg.autograd.gradgradcheck(f, (x,))


def test_as_strided_is_a_view_of_the_storage_and_shares_its_version():
    def program(lib):
        base = make(lib, values(11, (6,)))
        view = base[1:].as_strided((2, 2), (1, 1))
        base.mul_(2)
        return {"base is the storage's": view._base is base, "version": view._version,
                "values": numpy(view)}  # fmt: skip

    assert_both_same(program)


# ------------------------------------------------------------------- in-place comparisons

COMPARISONS = ("eq_", "ne_", "lt_", "le_", "gt_", "ge_")


@pytest.mark.parametrize("other", ["a tensor", "a number", "a row that broadcasts"])
@pytest.mark.parametrize("op", COMPARISONS)
def test_an_in_place_comparison_writes_ones_and_zeros_with_a_zero_gradient(op, other):
    def program(lib):
        x = make(lib, np.array([[1.0, 2.0, 3.0], [3.0, 2.0, 1.0]]), requires_grad=True)
        y = make(lib, np.array([[1.0, 0.0, 3.0], [2.0, 2.0, 5.0]]), requires_grad=True)
        row = make(lib, np.array([2.0, 2.0, 2.0]), requires_grad=True)
        target = x * 1
        operand = {"a tensor": y, "a number": 2.0, "a row that broadcasts": row}[other]
        returned = getattr(target, op)(operand)
        leaves = [x] if other == "a number" else [x, operand]
        return {"self": returned is target, **_facts(lib, target, leaves)}

    assert_both_same(program)


@pytest.mark.parametrize("dtype", ["bool", "int64", "float32"])
@pytest.mark.parametrize("op", COMPARISONS)
def test_an_in_place_comparison_keeps_the_tensors_dtype(op, dtype):
    def program(lib):
        x = make(lib, np.array([0, 1, 2]), dtype=dtype)
        getattr(x, op)(make(lib, np.array([0, 0, 2]), dtype=dtype))
        getattr(x, op)(0.5)
        return str(x.dtype).split(".")[-1], numpy(x), x._version

    assert_both_same(program)

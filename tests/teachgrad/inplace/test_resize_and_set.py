"""``resize_``, ``resize_as_``, the deprecated ``resize`` and ``set_`` (ops/storage.py),
against torch: shapes, strides, storage offsets, shared memory, versions, nodes,
gradients, and torch's errors (class and first line).

``resize_`` lays the tensor out row-major from its offset, in its storage when that is big
enough (else in new memory that starts with the old values); ``set_`` makes a tensor read
another's memory. Each program runs in both libraries and must show the same facts.
"""

from __future__ import annotations

import warnings

import pytest

from ._common import assert_both_same, both, make, name, numpy, torch_phrase


def _layout(t):
    return {
        "shape": tuple(t.shape),
        "stride": t.stride(),
        "offset": t.storage_offset(),
        "version": t._version,
    }


RESIZES = {
    "shrink": (lambda lib: lib.arange(6.0), (2, 2)),
    "the same number of elements": (lambda lib: lib.arange(6.0), (3, 2)),
    "the same shape keeps the strides": (lambda lib: lib.arange(6.0).view(2, 3).t(), (3, 2)),
    "a transposed tensor laid out again": (lambda lib: lib.arange(6.0).view(2, 3).t(), (2, 3)),
    "a view, inside its storage": (lambda lib: lib.arange(6.0)[2:], (2,)),
    "a view, to the end of its storage": (lambda lib: lib.arange(6.0)[1:], (5,)),
    "to a 0-d tensor": (lambda lib: lib.arange(6.0), ()),
    "to empty": (lambda lib: lib.arange(6.0), (0,)),
    "integers": (lambda lib: lib.arange(6), (2, 3)),
}


@pytest.mark.parametrize("case", list(RESIZES))
def test_resize_inside_the_storage(case):
    make_tensor, sizes = RESIZES[case]

    def program(lib):
        x = make_tensor(lib)
        start = x.data_ptr()
        returned = x.resize_(sizes)
        return {
            **_layout(x),
            "returned itself": returned is x,
            # (torch's data_ptr() of an empty tensor is no address in its storage)
            "same memory": x.data_ptr() == start if x.numel() else None,
            "values": numpy(x),
        }

    assert_both_same(program)


def test_resize_beyond_the_storage_keeps_the_old_values_first():
    def program(lib):
        x = lib.arange(6.0)
        x.resize_(3, 3)
        first = numpy(x).ravel()[:6]
        y = lib.arange(6.0)
        v = y[2:]
        v.resize_(8)
        return _layout(x), first, _layout(v), numpy(v)[:4], v._base is y, y._version

    assert_both_same(program)


def test_resize_as_and_sizes_given_as_a_tuple():
    def program(lib):
        x, y = lib.zeros(6), lib.zeros(2)
        return _layout(x.resize_as_(lib.ones(2, 3))), _layout(y.resize_((1, 2)))

    assert_both_same(program)


ERRORS = {
    "a leaf that requires grad": lambda lib: lib.ones(2, requires_grad=True).resize_(3),
    "a non-leaf": lambda lib: (lib.ones(2, requires_grad=True) * 2).resize_(3),
    "resize_as_ of a tensor that requires grad": lambda lib: lib.ones(
        2, requires_grad=True
    ).resize_as_(lib.ones(3)),
    "a negative size": lambda lib: lib.ones(2).resize_(-1),
    "set_ of a leaf that requires grad": lambda lib: lib.ones(2, requires_grad=True).set_(
        lib.ones(3)
    ),
    "set_ of another dtype": lambda lib: lib.ones(2).set_(lib.ones(2, dtype=lib.float64)),
    "set_ of a number": lambda lib: lib.ones(2).set_(3),
    "resize keeps the number of elements": lambda lib: lib.arange(6.0, requires_grad=True).resize(
        3, 3
    ),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_are_torchs(case):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        facts = both(ERRORS[case])
    ours, theirs = facts["tg"], facts["torch"]
    assert (ours.type, torch_phrase(ours.message.splitlines()[0])) == (
        theirs.type,
        torch_phrase(theirs.message.splitlines()[0]),
    )


def test_resize_under_no_grad_is_still_refused_for_requires_grad():
    def program(lib):
        with lib.no_grad():
            lib.ones(2, requires_grad=True).resize_(3)

    facts = both(program)
    assert facts["tg"].type == facts["torch"].type == "RuntimeError"
    assert facts["tg"].message.splitlines()[0] == facts["torch"].message.splitlines()[0]


def test_resize_in_inference_mode_skips_the_requires_grad_check():
    """torch's test_inference_mode_inf_tensor_in_inf_mode_inplace_op (test_autograd.py):
    inference mode skips autograd's checks, for an inference tensor and a normal one."""

    def program(lib):
        facts = []
        with lib.inference_mode():
            c = lib.ones(1, 2, 3, requires_grad=True)
            c.resize_(1, 2)
            facts += [tuple(c.shape), c.requires_grad, lib.is_inference(c)]
            c.resize_as_(lib.ones(3))
            facts += [tuple(c.shape), c.requires_grad]
            x = lib.ones(2, requires_grad=True)
            x.resize_(1)
        return facts + [tuple(x.shape), x._version, x.requires_grad, lib.is_inference(x)]

    assert_both_same(program)


def test_deprecated_resize_warns_and_has_a_custom_node():
    def program(lib):
        x = lib.arange(6.0, requires_grad=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            y = x.resize(3, 2)
        y.backward(make(lib, [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]))
        return [str(w.message) for w in caught], tuple(y.shape), name(y), numpy(x.grad)

    assert_both_same(program)


def test_set_shares_memory_not_the_version():
    def program(lib):
        x = lib.ones(2)
        y = lib.arange(6.0).view(2, 3)[:, 1:]
        returned = x.set_(y)
        facts = {**_layout(x), "same memory": x.data_ptr() == y.data_ptr(), "is x": returned is x}
        x.mul_(2)
        return facts, numpy(y), y._version, x._version, x._base is None

    assert_both_same(program)


def test_set_without_a_source_and_with_itself():
    def program(lib):
        x, y = lib.ones(3), lib.ones(2)
        x.set_()
        y.set_(y)
        return _layout(x), _layout(y), numpy(y)

    assert_both_same(program)


def test_set_is_recorded_without_a_derivative():
    def program(lib):
        leaf = lib.ones(2, requires_grad=True)
        x = leaf * 2
        x.set_(lib.ones(3))
        facts = [name(x, exact=True), [n and n.name() for n, _ in x.grad_fn.next_functions]]
        facts.append(x._version)
        try:
            x.sum().backward()
        except RuntimeError as error:
            facts.append(str(error).splitlines()[0])
        plain = lib.ones(2)
        plain.set_(lib.ones(3, requires_grad=True))
        facts += [plain.requires_grad, plain.is_leaf, name(plain, exact=True)]
        with lib.no_grad():
            p = lib.ones(2, requires_grad=True)
            p.set_(lib.zeros(3))
        facts += [p.requires_grad, p.grad_fn, p._version, numpy(p.detach())]
        return facts

    assert_both_same(program)


def test_set_after_saving_is_caught_at_backward():
    def program(lib):
        a, b = lib.ones(3, requires_grad=True), lib.ones(3)
        out = a * b
        b.set_(lib.zeros(3))
        out.sum().backward()

    facts = both(program)
    assert facts["tg"].type == facts["torch"].type == "RuntimeError"
    assert "modified by an inplace operation" in facts["tg"].message


def test_set_gives_a_leaf_a_new_accumulate_grad_node():
    """torch's test_grad_to_node_set and test_parameter_resize (test_autograd.py): after
    ``set_``, a graph made before sends its gradient to the old AccumulateGrad node (still
    reachable as a GradientEdge), and ``autograd.grad(out, x)`` finds x unused; a new graph
    gets a node of the new shape."""

    def program(lib):
        x = lib.ones(2, requires_grad=True)
        edge = lib.autograd.graph.get_gradient_edge(x)
        out = x.clone()
        with lib.no_grad():
            x.set_(lib.zeros(2))
        facts = [numpy(lib.autograd.grad(out.sum(), edge, retain_graph=True)[0])]
        try:
            lib.autograd.grad(out.sum(), x)
        except RuntimeError as error:
            facts.append(torch_phrase(str(error).splitlines()[0]))
        p = lib.nn.Parameter(lib.ones(4, dtype=lib.float64))
        for _ in range(2):
            with lib.no_grad():
                p.set_(p[1:])
                p.grad = None
            m = lib.cat((p, p))
            m.sum().backward()
            facts.append(numpy(p.grad))
        return facts

    assert_both_same(program)

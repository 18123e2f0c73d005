"""torch's first, deprecated vmap (``torch._vmap_internals.vmap`` and ``_vmap``): the same
values, gradients, warning and errors as torch's, compared case by case.

teachgrad runs the mapped function once per slice and stacks the results (see the module's
docstring); torch runs it once on batched tensors. The tests compare what both give back.
"""

import importlib
import warnings
from collections import namedtuple

import numpy as np
import pytest

import teachgrad as tg

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

Pair = namedtuple("Pair", "a b")


def internals(lib):
    return importlib.import_module(f"{lib.__name__}._vmap_internals")


def values(result):
    """A result (a tensor, a tuple of them, None) as nested lists, to compare libraries."""
    if isinstance(result, tuple):
        return tuple(values(r) for r in result)
    return None if result is None else np.asarray(result.detach().numpy()).tolist()


# (name, function, in_dims, out_dims, inputs(lib), allow_none_pass_through)
CASES = [
    ("elementwise", lambda a, b: a * b, (0, None), 0, lambda lib: (lib.arange(6.0).reshape(2, 3), lib.arange(3.0)), False),
    ("reduction over dim 1", lambda a: a.sum(), 1, 0, lambda lib: (lib.arange(6.0).reshape(2, 3),), False),
    ("two results, two out_dims", lambda a: (a, a * 2), 0, (0, 1), lambda lib: (lib.arange(6.0).reshape(2, 3),), False),
    ("a result that ignores the input", lambda a: a.new_ones(3), 0, 0, lambda lib: (lib.arange(6.0).reshape(2, 3),), False),
    ("out_dims=-1", lambda a: a * 1, 0, -1, lambda lib: (lib.arange(6.0).reshape(2, 3),), False),
    ("a matrix product per slice", lambda a, w: a @ w, (0, None), 0, lambda lib: (lib.arange(12.0).reshape(2, 2, 3), lib.arange(6.0).reshape(3, 2)), False),
    ("nested in_dims", lambda t: t[0] + t[1], ((0, None),), 0, lambda lib: ((lib.arange(6.0).reshape(2, 3), lib.arange(3.0)),), False),
    ("a dict argument", lambda d: d["a"] * 2, ({"a": 1},), 0, lambda lib: ({"a": lib.ones(2, 3)},), False),
    ("a list argument", lambda items: items[0] * 2, ([1],), 0, lambda lib: ([lib.ones(2, 3)],), False),
    ("a namedtuple argument", lambda p: p.a + p.b, 0, 0, lambda lib: (Pair(lib.ones(2, 3), lib.ones(2, 3)),), False),
    ("a number argument", lambda a, k: a + k, (0, None), 0, lambda lib: (lib.ones(2, 3), 5), False),
    ("None passed through", lambda a: (a, None), 0, 0, lambda lib: (lib.arange(6.0).reshape(2, 3),), True),
    ("an empty mapped dim", lambda a: a * 2, 0, 0, lambda lib: (lib.zeros(0, 3),), False),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_values_are_torch_s(torch, case):
    _, fn, in_dims, out_dims, inputs, allow_none = case
    got = [
        values(internals(lib)._vmap(fn, in_dims, out_dims, allow_none)(*inputs(lib)))
        for lib in (tg, torch)
    ]
    assert got[0] == got[1]


def test_vmap_warns_as_torch_and_maps(lib):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        summed = internals(lib).vmap(lambda a: a.sum())
    assert [w.category for w in caught] == [FutureWarning]
    assert (
        str(caught[0].message) == "Please use `torch.vmap` instead of `torch._vmap_internals.vmap`."
    )
    assert summed(lib.ones(2, 3)).tolist() == [3.0, 3.0]


def test_gradients_flow_through_as_torch_s(torch):
    grads = []
    for lib in (tg, torch):
        x = lib.arange(6.0).reshape(2, 3).requires_grad_()
        out = internals(lib)._vmap(lambda a: (a * a).sum(), in_dims=1)(x)
        (out * lib.tensor([1.0, 2.0, 3.0])).sum().backward()
        grads.append(x.grad.tolist())
    assert grads[0] == grads[1]


ERRORS = [
    ("in_dims of a wrong type", lambda a: a, "x", 0, (2, 3), r"^vmap\(<lambda>, in_dims=x, \.\.\.\)\(<inputs>\): expected `in_dims` to be int or a \(potentially nested\) tuple"),
    ("in_dims=None", lambda a: a, None, 0, (2, 3), r"expected `in_dims` to be int or a \(potentially nested\) tuple matching the structure of inputs, got: <class 'NoneType'>"),
    ("too few in_dims", lambda a, b: a, (0,), 0, "number", r"^vmap\(<lambda>, in_dims=\(0,\), \.\.\.\)\(<inputs>\): in_dims is not compatible with the structure of `inputs`"),
    ("a float in_dim", lambda a: a, (1.5,), 0, (2, 3), r"Got in_dim=1.5 for an input but in_dim must be either an integer dimension or None\.$"),
    ("a mapped number", lambda a, b: a, (0, 0), 0, "number", r"Got in_dim=0 for an input but the input is of type <class 'int'>\. We cannot vmap over non-Tensor arguments"),
    ("in_dim out of range", lambda a: a, 2, 0, (2, 3), r"Got in_dim=2 for some input, but that input is a Tensor of dimensionality 2 so expected in_dim to satisfy 0 <= in_dim < 2\.$"),
    ("a negative in_dim", lambda a: a, -1, 0, (2, 3), r"Got in_dim=-1 for some input"),
    ("sizes that differ", lambda a, b: a, (0, 0), 0, "two sizes", r"^vmap: Expected all tensors to have the same size in the mapped dimension, got sizes \[2, 3\]"),
    ("a number returned", lambda a: 3, 0, 0, (2, 3), r"^vmap\(<lambda>, \.\.\.\): `<lambda>` must only return Tensors, got type <class 'int'> as the return\.$"),
    ("a number among the results", lambda a: (a, 3), 0, 0, (2, 3), r"must only return Tensors, got type <class 'int'> for return 1\.$"),
    ("out_dims of a wrong type", lambda a: a, 0, "s", (2, 3), r"^vmap\(<lambda>, \.\.\., out_dims=s\): `out_dims` must be an int or a tuple of int"),
    ("one out_dim too many", lambda a: (a, a), 0, (0, 1, 2), (2, 3), r"`out_dims` must have one dim per output \(got 2 outputs\) of <lambda>\.$"),
]  # fmt: skip


def _inputs(lib, kind):
    if kind == "number":
        return lib.ones(2, 3), 3
    if kind == "two sizes":
        return lib.ones(2, 3), lib.ones(3, 3)
    return (lib.ones(*kind),)


@pytest.mark.parametrize("case", ERRORS, ids=[c[0] for c in ERRORS])
def test_errors_are_torch_s(lib, case):
    _, fn, in_dims, out_dims, kind, message = case
    with pytest.raises(ValueError, match=message):
        internals(lib)._vmap(fn, in_dims, out_dims)(*_inputs(lib, kind))


def test_errors_without_inputs_and_out_of_range_out_dims(lib):
    with pytest.raises(ValueError, match=r"^vmap\(<lambda>\)\(<inputs>\): got no inputs\."):
        internals(lib)._vmap(lambda: lib.ones(1))()
    with pytest.raises(
        IndexError,
        match=r"^Dimension out of range \(expected to be in range of \[-2, 1\], but got 2\)",
    ):
        internals(lib)._vmap(lambda a: a, out_dims=2)(lib.ones(2, 3))


def test_with_no_input_mapped_teachgrad_says_so():
    """torch's legacy vmap fails there with an IndexError of its own ("list index out of
    range"); teachgrad says what is missing."""
    with pytest.raises(ValueError, match=r"no input is mapped\n  Give at least one Tensor input"):
        tg._vmap_internals._vmap(lambda a: a, in_dims=(None,))(tg.ones(2, 3))


def test_the_function_runs_once_per_slice():
    """The one difference to see: func's Python code runs for each slice."""
    calls = []
    tg._vmap_internals._vmap(lambda a: calls.append(a.shape) or a)(tg.ones(4, 2))
    assert calls == [(2,)] * 4

"""Assignment into tensors, as PyTorch's own autograd tests (test_autograd.py: test_setitem_mask,
and the cases of test_setitem not in test_torch_port_misc.py: a tensor value at 3-d indices, at
a 0-d index tensor, at an index tensor, and broadcast into a row) check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd._port import randn, same, setitem_tensor
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")

MASK = np.random.default_rng(0).random((5, 5)) > 0.5


def setitem(lib, size, index):
    """torch's _test_setitem: a number written at ``index`` sends no gradient back there."""
    x = lib.ones(*size, requires_grad=True)
    y = x + 2
    y_version = y._version
    y[index] = 2
    assert y._version != y_version
    y.backward(lib.ones(*size))
    expected = np.ones(size)
    expected[index.numpy() if hasattr(index, "numpy") else index] = 0
    assert same(x.grad, expected)


@pytest.mark.parametrize(
    "size, mask",
    [((5, 5), MASK), ((5,), MASK[0]), ((1,), MASK[0, 0:1])],
)
def test_setitem_mask(lib, size, mask):
    setitem(lib, size, lib.tensor(mask))
    if size != (1,):
        setitem_tensor(lib, size, lib.tensor(mask))


@pytest.mark.parametrize(
    "size, index",
    [
        ((5, 5, 5), (slice(None), slice(None), [1, 3])),
        ((5, 5, 5), (slice(None), [1, 3], slice(None))),
        ((5, 5, 5), ([1, 3], slice(None), slice(None))),
        ((5, 5, 5), (slice(None), [2, 4], [1, 3])),
        ((5, 5, 5), ([1, 3], [2, 4], slice(None))),
    ],
)
def test_setitem_tensor_at_3d_indices(lib, size, index):
    setitem_tensor(lib, size, index)


def test_setitem_tensor_at_index_tensors(lib):
    setitem_tensor(lib, (5,), lib.tensor([3]).sum())  # a 0-d index tensor
    setitem_tensor(lib, (5, 5, 5), (lib.tensor([1, 3]), [2, 4], slice(None)))


def test_setitem_tensor_broadcast_into_a_row(lib):
    x = randn(lib, 4, requires_grad=True)
    y = lib.zeros(2, 3, 4)
    y[1] = x
    y.backward(randn(lib, 2, 3, 4, seed=1))
    assert x.size() == x.grad.size()


def _uint8(lib, values):
    return lib.tensor(values, dtype=lib.uint8)


UINT8_KEYS = {  # torch's old masks, still read as masks (with its deprecation warning)
    "x[mask]": lambda lib, x: x[_uint8(lib, [1, 0, 1, 0])],
    "x[0-d 0]": lambda lib, x: x[_uint8(lib, 0)],
    "x[0-d 1]": lambda lib, x: x[_uint8(lib, 1)],
    "m[mask, 1]": lambda lib, x: x.reshape(2, 2)[_uint8(lib, [1, 0]), 1],
    "m[2-d mask]": lambda lib, x: x.reshape(2, 2)[_uint8(lib, [[1, 0], [2, 0]])],
    "x[mask] = 7": lambda lib, x: x.__setitem__(_uint8(lib, [0, 1, 1, 0]), 7),
    "x[mask] = 0-d": lambda lib, x: x.__setitem__(_uint8(lib, [0, 1, 1, 0]), lib.tensor(7.0)),
    "x[mask] = values": lambda lib, x: x.__setitem__(
        _uint8(lib, [0, 1, 1, 0]), lib.tensor([7.0, 8.0])
    ),
    "m[mask, 0] = 7": lambda lib, x: x.reshape(2, 2).__setitem__((_uint8(lib, [0, 1]), 0), 7),
    "x[0-d 1] = 5": lambda lib, x: x.__setitem__(_uint8(lib, 1), 5),
    "x[0-d 0] = 5": lambda lib, x: x.__setitem__(_uint8(lib, 0), 5),
}


@pytest.mark.parametrize("use", UINT8_KEYS.values(), ids=UINT8_KEYS.keys())
def test_a_uint8_index_is_a_mask_as_in_torch(use):
    """A uint8 tensor as an index is a mask (torch's deprecation warning says so; a 0-d one
    is one bool, silently); writing a number through one is torch's masked_fill error.
    The values, the warnings and the gradient as torch."""

    def program(lib):
        x = lib.arange(4.0, dtype=lib.float64, requires_grad=True)
        y = x * 1
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = use(lib, y)
        said = sorted({str(w.message).split(" (Triggered")[0].splitlines()[0] for w in caught})
        y.sum().backward()
        result = y if out is None else out
        return [result.detach().numpy(), x.grad.numpy(), [torch_words(s) for s in said]]

    assert_like_torch(program)


def torch_words(text: str) -> str:
    return text.replace("teachgrad.", "torch.")

"""Assignment into tensors, as PyTorch's own autograd tests (test_autograd.py: test_setitem_mask,
and the cases of test_setitem not in test_torch_port_misc.py: a tensor value at 3-d indices, at
a 0-d index tensor, at an index tensor, and broadcast into a row) check it.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd._port import randn, same, setitem_tensor

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

"""unique, unique_consecutive, searchsorted, bucketize and isin (``ops/sort.py``) against torch:
values, dtypes, shapes, which results are in the graph, and the refused derivative
(test_autograd.py's test_integer_outputs checks the last two)."""

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _facts(result):
    results = result if isinstance(result, tuple) else (result,)
    return [
        (str(t.dtype).split(".")[1], numpy(t).tolist(), tuple(t.shape), t.requires_grad)
        for t in results
    ]


X = [3.0, 1.0, 3.0, 2.0, 1.0]
ROWS = [[3.0, 1.0], [3.0, 1.0], [2.0, 0.0]]
PROGRAMS = {
    "unique": lambda lib, x: lib.unique(x),
    "unique(inverse, counts)": lambda lib, x: lib.unique(
        x, return_inverse=True, return_counts=True
    ),
    "x.unique(sorted=False, counts)": lambda lib, x: x.unique(sorted=False, return_counts=True),
    "unique(dim=0, inverse)": lambda lib, x: lib.unique(
        lib.tensor(ROWS), dim=0, return_inverse=True
    ),
    "unique of a 0-d tensor": lambda lib, x: lib.unique(lib.tensor(5.0), return_inverse=True),
    "unique of ints": lambda lib, x: lib.unique(lib.tensor([2, 2, 0]), return_counts=True),
    "unique_consecutive": lambda lib, x: lib.unique_consecutive(lib.tensor([1, 1, 2, 2, 3, 1, 1])),
    "unique_consecutive(inverse, counts)": lambda lib, x: lib.unique_consecutive(
        x, return_inverse=True, return_counts=True
    ),
    "unique_consecutive(dim=0)": lambda lib, x: lib.unique_consecutive(
        lib.tensor(ROWS, requires_grad=True), dim=0, return_counts=True
    ),
    "searchsorted": lambda lib, x: lib.searchsorted(
        lib.tensor([1.0, 3, 5, 7]), lib.tensor([[3.0, 6], [9, 0]])
    ),
    "searchsorted(right)": lambda lib, x: lib.searchsorted(
        lib.tensor([1.0, 3, 5]), lib.tensor([3.0]), right=True
    ),
    "searchsorted(side='right')": lambda lib, x: lib.searchsorted(
        lib.tensor([1.0, 3, 5]), lib.tensor([3.0]), side="right"
    ),
    "searchsorted by rows": lambda lib, x: lib.searchsorted(
        lib.tensor([[1.0, 3, 5], [2, 4, 6]]), lib.tensor([[4.0], [4.0]])
    ),
    "searchsorted of a number": lambda lib, x: lib.searchsorted(lib.tensor([1.0, 2]), 1.5),
    "searchsorted of a 0-d tensor, out_int32": lambda lib, x: lib.searchsorted(
        lib.tensor([1.0, 2.0]), lib.tensor(1.5), out_int32=True
    ),
    "searchsorted with sorter": lambda lib, x: lib.searchsorted(
        lib.tensor([3.0, 1.0, 2.0]), lib.tensor([2.5]), sorter=lib.tensor([1, 2, 0])
    ),
    "bucketize": lambda lib, x: lib.bucketize(
        lib.tensor([[1.0, 3.5], [7, 0]]), lib.tensor([1.0, 3, 5])
    ),
    "bucketize(right, out_int32)": lambda lib, x: lib.bucketize(
        lib.tensor([3.0]), lib.tensor([1.0, 3, 5]), right=True, out_int32=True
    ),
    "backward through unique": lambda lib, x: lib.unique(x).sum().backward(),
    "backward through unique(dim=0)": lambda lib, x: (
        lib.unique(lib.tensor(ROWS, requires_grad=True), dim=0).sum().backward()
    ),
    "backward through unique_consecutive": lambda lib, x: (
        lib.unique_consecutive(x).sum().backward()
    ),
    "searchsorted(side='middle')": lambda lib, x: lib.searchsorted(x, x, side="middle"),
    "isin": lambda lib, x: lib.isin(lib.tensor([1, 2, 3]), lib.tensor([2, 5])),
    "isin(invert)": lambda lib, x: lib.isin(x, lib.tensor([1.0, 2.0]), invert=True),
    "isin of a number": lambda lib, x: lib.isin(2, lib.tensor([1, 2])),
    "isin a number": lambda lib, x: lib.isin(x, 3.0),
}


@pytest.mark.parametrize("program", PROGRAMS.values(), ids=PROGRAMS.keys())
def test_finding_values_matches_torch(program):
    def run(lib):
        result = program(lib, lib.tensor(X, requires_grad=True))
        return None if result is None else _facts(result)

    assert_like_torch(run)

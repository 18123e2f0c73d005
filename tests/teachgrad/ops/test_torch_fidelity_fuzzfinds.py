"""Differences from torch found by a differential fuzzer (mixed dtypes, 0-d and empty
tensors, strided inputs, error messages), each compared with torch across its variations:
the same program runs on both libraries, and either both raise (same class, same first
line) or both give the same dtype, shape, strides, values and node names.
"""

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import name, numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def facts(t):
    """What a result looks like, strides included."""
    return {
        "dtype": str(t.dtype).split(".")[-1],
        "shape": tuple(t.shape),
        "stride": t.stride(),
        "values": numpy(t),
        "grad_fn": name(t),
    }


def bools(lib, transposed=False):
    x = lib.tensor([[True, False, True], [False, False, True]])
    return x.t() if transposed else x


# --------------------------------------------------------------------------- powers of bools

BOOL_POWERS = {
    "bools ** True": lambda lib, x: x**True,
    "bools ** False": lambda lib, x: x**False,
    "bools ** 2": lambda lib, x: x**2,
    "bools ** 0": lambda lib, x: x.pow(0),
    "bools ** 2.0": lambda lib, x: x**2.0,
    "bools ** bools": lambda lib, x: x**x,
    "True ** bools": lambda lib, x: True**x,
    "2 ** bools": lambda lib, x: 2**x,
    "bools ** int tensor": lambda lib, x: x ** lib.tensor(2),
    "square(bools)": lambda lib, x: x.square(),
}


@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize("power", BOOL_POWERS.values(), ids=BOOL_POWERS.keys())
def test_powers_of_bools_promote_as_torch_does(power, transposed):
    """A power of bools by a bool stays bool, by an int is int64; two bool tensors raise."""
    assert_like_torch(lambda lib: facts(power(lib, bools(lib, transposed))))


LAYOUTS = {  # (3, 2)-shaped views of a leaf, each laid out differently
    "row-major": lambda x: x,
    "transposed": lambda x: x.t(),
    "stepped": lambda x: x.repeat(2, 1)[::2],
    "expanded": lambda x: x[:1].expand(3, 2),
    "empty": lambda x: x[:0].t(),
}


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
def test_a_number_to_a_tensor_power_is_row_major(layout, dtype):
    """torch writes ``number ** tensor`` into a fresh row-major result."""

    def program(lib):
        x = lib.tensor([[1, 0], [2, 1], [0, 3]], dtype=getattr(lib, dtype))
        return facts(2 ** layout(x)), facts(lib.pow(1.5, layout(x)))

    assert_like_torch(program)

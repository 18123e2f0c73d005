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


# --------------------------------------------------------------------------- whole numbers

ROUNDINGS = {
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(),
    "round(decimals=1)": lambda x: x.round(decimals=1),
    "sign": lambda x: x.sign(),
    "relu": lambda x: x.relu(),
}


@pytest.mark.parametrize("dtype", ["float64", "int64", "bool"])
@pytest.mark.parametrize("layout", LAYOUTS.values(), ids=LAYOUTS.keys())
@pytest.mark.parametrize("op", ROUNDINGS.values(), ids=ROUNDINGS.keys())
def test_rounding_whole_numbers_copies_them_and_bools_have_no_kernel(op, layout, dtype):
    """An integer tensor is its own floor (a copy laid out like it); a bool one raises."""

    def program(lib):
        x = lib.tensor([[1, 0], [-2, 1], [0, 3]], dtype=getattr(lib, dtype))
        return facts(op(layout(x)))

    assert_like_torch(program)


# --------------------------------------------------------------------------- fresh layouts

FRESH = {  # ops whose result torch allocates row-major whatever the input's layout
    "softmax(1)": lambda lib, x: x.softmax(1),
    "log_softmax(0)": lambda lib, x: lib.log_softmax(x, 0),
    "cumsum(1)": lambda lib, x: x.cumsum(1),
    "cumsum(0) of ints": lambda lib, x: x.long().cumsum(0),
    "roll(1, 0)": lambda lib, x: x.roll(1, 0),
    "roll(1)": lambda lib, x: x.roll(1),
    "any(1)": lambda lib, x: x.any(1),
    "all(0, keepdim)": lambda lib, x: (x > 0).all(0, keepdim=True),
    "flip(0) (laid out as the input)": lambda lib, x: x.flip(0),
    "flip(0, 1) (laid out as the input)": lambda lib, x: x.flip(0, 1),
}


@pytest.mark.parametrize(
    "layout", [*LAYOUTS.values(), lambda x: x.t()[:, ::2]], ids=[*LAYOUTS, "t-step"]
)
@pytest.mark.parametrize("op", FRESH.values(), ids=FRESH.keys())
def test_the_layout_of_softmax_cumsum_roll_flip_any_all(op, layout):
    def program(lib):
        x = lib.tensor([[1.0, -0.5], [2.0, 0.0], [-1.0, 3.0]], dtype=lib.float64)
        x.requires_grad_()
        out = op(lib, layout(x))
        if out.requires_grad:
            (out * lib.arange(float(out.numel())).reshape(out.shape)).sum().backward()
        return facts(out), numpy(x.grad) if x.grad is not None else None

    assert_like_torch(program)

"""Tensor makers compared with torch (issue 20, found by a differential fuzzer): the layout
of the ``*_like`` makers (torch's ``preserve_format``) and ``arange`` with an integer dtype
and fractional arguments. Each program runs on teachgrad and on torch and must give the
same dtype, shape, strides and values, or the same error.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import numpy

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

INPUTS = {
    "row-major": lambda lib: lib.ones(2, 3),
    "transposed": lambda lib: lib.ones(3, 2).t(),
    "permuted 3-d": lambda lib: lib.ones(2, 3, 4).permute(2, 0, 1),
    "a size-1 dim, transposed": lambda lib: lib.ones(1, 3).t(),
    "permuted, a size-1 dim": lambda lib: lib.ones(2, 1, 3).permute(1, 2, 0),
    "rows with steps": lambda lib: lib.ones(4, 3)[::2],
    "transposed, with steps": lambda lib: lib.ones(4, 3).t()[::2],
    "expanded": lambda lib: lib.ones(3, 1).expand(3, 4),
    "empty, transposed": lambda lib: lib.ones(0, 3).t(),
    "0-d": lambda lib: lib.tensor(2.0),
}
MAKERS = {  # (the random ones' values differ from torch's: their layout is compared)
    "zeros_like": lambda lib, x, dt: lib.zeros_like(x, dtype=dt),
    "ones_like": lambda lib, x, dt: lib.ones_like(x, dtype=dt),
    "full_like": lambda lib, x, dt: lib.full_like(x, 2, dtype=dt),
    "empty_like": lambda lib, x, dt: lib.empty_like(x, dtype=dt),
    "rand_like": lambda lib, x, dt: lib.rand_like(x, dtype=dt),
    "randn_like": lambda lib, x, dt: lib.randn_like(x, dtype=dt),
}
CASES = [
    (maker, dtype)
    for maker in MAKERS
    for dtype in (None, "float64", "int64")
    if not (maker.startswith("rand") and dtype == "int64")  # (random floats only, in both)
]


@pytest.mark.parametrize("maker, dtype", CASES, ids=[f"{m}-{d}" for m, d in CASES])
@pytest.mark.parametrize("input", INPUTS.values(), ids=INPUTS.keys())
def test_the_like_makers_keep_the_input_s_layout(input, maker, dtype):
    def program(lib):
        out = MAKERS[maker](lib, input(lib), None if dtype is None else getattr(lib, dtype))
        values = None if maker in ("empty_like", "rand_like", "randn_like") else numpy(out)
        return str(out.dtype).split(".")[-1], tuple(out.shape), out.stride(), values

    assert_like_torch(program)


ARANGES = [
    (0, 5, 1.5), (0, 5, 2.5), (0.5, 5, 1), (0, 5.5, 1), (0, 1, 0.25), (-0.5, 3, 1),
    (5, 0, -1.5), (0, 1, -0.3), (0.9, 0.2, 1), (0, 0.9, 1), (2.7,), (1.5, 7.9, 2.2),
    (-3.7, 3.7, 1.9), (0, 3, 1.0), (-2, 2.0, 0.5),
]  # fmt: skip


@pytest.mark.parametrize("dtype", ["int64", "int32", "int16", "uint8"])
@pytest.mark.parametrize("args", ARANGES, ids=str)
def test_arange_of_integers_truncates_as_torch(args, dtype):
    """Start and step are truncated to integers; int64 truncates the end too (so the length
    may change) and refuses a step that truncates to 0; the others keep the length the
    given numbers make."""
    assert_like_torch(lambda lib: numpy(lib.arange(*args, dtype=getattr(lib, dtype))))


@pytest.mark.parametrize("args", [(0, 1, 0.1), (-1, 1, 0.3), (100, 0, -7.1), (2.5,)], ids=str)
def test_arange_of_floats_is_unchanged(args):
    def program(lib):
        return np.round(numpy(lib.arange(*args, dtype=lib.float64)), 12)

    assert_like_torch(program)


VALUES = [
    (10**20, "int32"), (10**20, "int64"), (10**20, "float32"), ([1e300, 1], "int64"),
    ([1e300, 1], "int32"), (1e300, "int64"), (2**40, "int32"), ([2**40], "int32"),
    (2**63, None), ([-(2**63) - 1], None), (float("inf"), "int64"), (float("nan"), "int64"),
    ([float("nan")], "int64"), ([[1.0, float("nan")]], "int32"), (300, "uint8"),
    (1e10, "int32"), ([1, 2**70], "float64"), (float("nan"), "bool"),
]  # fmt: skip


@pytest.mark.parametrize("data, dtype", VALUES, ids=str)
def test_numbers_a_dtype_cannot_hold(data, dtype):
    """A Python int beyond int64 is torch's ValueError wherever it goes; a value an integer
    dtype can't hold (too large, inf, NaN) its RuntimeError (NaN used to become a number)."""
    assert_like_torch(
        lambda lib: numpy(lib.tensor(data, dtype=None if dtype is None else getattr(lib, dtype)))
    )


NUMPY_SCALARS = [
    np.float32(2.5), np.float64(2.5), np.float16(-1.0), np.int32(3), np.int64(3), np.uint8(3),
    np.int8(-2), np.bool_(True), np.float32("nan"),
]  # fmt: skip
MIXED = [
    [np.float64(1), 1.0], [np.int32(3), 2.5], [np.float16(1), np.int64(2)], [[np.float32(1.5)], [2]],
    [True, np.int8(1)], [np.bool_(False), True],
]  # fmt: skip


@pytest.mark.parametrize("wrap", ["scalar", "list", "nested"])
@pytest.mark.parametrize("dtype", [None, "int64", "int32", "uint8", "bool", "float32", "float64"])
@pytest.mark.parametrize("value", NUMPY_SCALARS, ids=lambda v: f"{type(v).__name__}({v})")
def test_numpy_scalars_in_tensor_data(value, dtype, wrap):
    """torch reads a NumPy scalar as its own dtype (a list of int32s is int32), and refuses
    the NumPy floats and bools that are no Python number for an integer dtype (a float32
    NaN used to become some integer), and the floats for bool."""

    def program(lib):
        data = value if wrap == "scalar" else [value, value] if wrap == "list" else [[value]]
        kwargs = {} if dtype is None else {"dtype": getattr(lib, dtype)}
        t = lib.tensor(data, **kwargs)
        return [str(t.dtype).split(".")[1], numpy(t)]

    assert_like_torch(program)


@pytest.mark.parametrize("data", MIXED, ids=str)
def test_mixed_numbers_promote_as_torch(data):
    """Each number's dtype (Python float: the default dtype), promoted together."""
    assert_like_torch(lambda lib: str(lib.tensor(data).dtype).split(".")[1])


TENSORS_IN_DATA = {
    "[1-element tensor]": lambda lib: [lib.ones(1)],
    "[0-d, 0-d int]": lambda lib: [lib.tensor(1.0), lib.tensor(2)],
    "[[1.0], [0-d]]": lambda lib: [[1.0], [lib.tensor(2.0)]],
    "[(1, 1) tensor]": lambda lib: [lib.ones(1, 1)],
    "[1, 0-d float]": lambda lib: [1, lib.tensor(2.5)],
    "[0-d bool, 2]": lambda lib: [lib.tensor(True), 2],
    "[0-d float64]": lambda lib: [lib.tensor(1.0, dtype=lib.float64)],
    "[2-element tensor]": lambda lib: [lib.ones(2)],
    "[empty tensor]": lambda lib: [lib.ones(0)],
}


@pytest.mark.parametrize("data", TENSORS_IN_DATA.values(), ids=TENSORS_IN_DATA.keys())
def test_a_tensor_inside_data_is_one_number(data):
    """torch reads a tensor in a list as a number (``item()``): ``[ones(1)]`` is shape (1,),
    of the tensor's dtype; a tensor of more (or fewer) elements is its ValueError."""

    def program(lib):
        t = lib.tensor(data(lib))
        return [str(t.dtype).split(".")[1], numpy(t)]

    assert_like_torch(program)


def test_a_tensor_that_requires_grad_inside_data_warns_as_torch(torch):
    import teachgrad as tg

    for lib in (tg, torch):
        with pytest.warns(UserWarning, match="^Converting a tensor with requires_grad=True to a"):
            t = lib.tensor([lib.ones(1, requires_grad=True)])
        assert not t.requires_grad and tuple(t.shape) == (1,)
        with pytest.warns(UserWarning, match=r"sourceTensor\.detach\(\)\.clone\(\) or "):
            lib.tensor(lib.ones(2))


LEGACY_NEW = {
    "x.new()": lambda lib, x: x.new(),
    "x.new(2, 3)": lambda lib, x: x.new(2, 3),
    "x.new(Size)": lambda lib, x: x.new(lib.Size([2])),
    "x.new(list)": lambda lib, x: x.new([1, 2]),
    "x.new(tuple)": lambda lib, x: x.new((1, 2)),
    "x.new(x)": lambda lib, x: x.new(x),
    "x.new(-1)": lambda lib, x: x.new(-1),
    "x.new(2.5)": lambda lib, x: x.new(2.5),
    "x.new(int tensor)": lambda lib, x: x.new(lib.tensor([1, 2])),
}


@pytest.mark.parametrize("make", LEGACY_NEW.values(), ids=LEGACY_NEW.keys())
def test_the_legacy_constructor_new(make):
    """``x.new(...)``, the Variable-era constructor: sizes, a Size, data, or a tensor of x's
    own type, with x's dtype; torch's errors otherwise (shape and dtype compared, not the
    uninitialized values)."""

    def program(lib):
        t = make(lib, lib.ones(2, dtype=lib.float64))
        return [str(t.dtype).split(".")[1], tuple(t.shape), t.requires_grad]

    assert_like_torch(program)


def test_x_new_of_x_is_an_alias(torch):
    """The same memory and version counter, and a view in the graph (AliasBackward0): a
    change through it is a change of x (whose node becomes CopySlices)."""
    import teachgrad as tg

    for lib in (tg, torch):
        x = lib.ones(2, requires_grad=True) * 2
        y = x.new(x)
        assert y is not x and type(y.grad_fn).__name__ == "AliasBackward0"
        y.add_(1)
        assert x.tolist() == [3.0, 3.0] and x._version == y._version == 1
        assert type(x.grad_fn).__name__ == "CopySlices"


def test_real_imag_and_layout_of_a_real_tensor(torch):
    """``real`` is the tensor itself, ``imag`` torch's RuntimeError (so ``hasattr`` raises,
    as torch's test_dir expects), ``layout`` the one dense layout."""
    import teachgrad as tg

    for lib in (tg, torch):
        x = lib.ones(2, 2)
        assert x.real is x and "imag" in dir(x)
        with pytest.raises(
            RuntimeError, match="^imag is not implemented for tensors with non-comp"
        ):
            hasattr(x, "imag")
        assert x.layout is lib.strided and isinstance(lib.strided, lib.layout)
        assert repr(lib.strided) == f"{lib.__name__}.strided"

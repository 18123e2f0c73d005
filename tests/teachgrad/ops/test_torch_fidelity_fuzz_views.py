"""Differences from torch found by a differential fuzzer of views, in-place ops, indexing and
dtypes (random chains of views and in-place changes, then backward), each minimised to a few
lines and compared with torch across its variations: the same program runs on both libraries,
and either both raise (same class, same first line) or both give the same facts.
"""

import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch
from tests.teachgrad.inplace._common import name

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def facts(t):
    """What a result looks like: dtype, shape, values, and its place in the graph."""
    return {
        "dtype": str(t.dtype).split(".")[-1],
        "shape": tuple(t.shape),
        "values": as_numpy(t),
        "requires_grad": t.requires_grad,
        "grad_fn": name(t),
    }


# --------------------------------------------------------------------------- where of two numbers

NUMBER_PAIRS = [(1.5, 0), (1, 0.5), (True, 0.5), (1, 0), (True, False), (True, 2), (2, True)]


@pytest.mark.parametrize(("a", "b"), NUMBER_PAIRS, ids=[f"{a!r},{b!r}" for a, b in NUMBER_PAIRS])
def test_where_of_two_numbers_has_their_promoted_dtype(a, b):
    """``where(c, 1.5, 0)`` is float32 (the default dtype), ``where(c, 1, 0)`` int64."""
    assert_like_torch(lambda lib: facts(lib.where(lib.tensor([[True, False]]), a, b)))


# --------------------------------------------------------------------------- & | ^ are bitwise

BITWISE = {
    "ints & True": lambda lib: lib.tensor([[1, 2, 3]]) & True,
    "True & ints": lambda lib: True & lib.tensor([[1, 2, 3]]),
    "ints | False": lambda lib: lib.tensor([1, 2, 3]) | False,
    "ints ^ True": lambda lib: lib.tensor([1, 2, 3]) ^ True,
    "3 ^ bools": lambda lib: 3 ^ lib.tensor([True, False, True]),
    "bools & 3": lambda lib: lib.tensor([True]) & 3,
    "0-d bool & int32": lambda lib: lib.tensor(True) & lib.tensor([[1, 2]], dtype=lib.int32),
    "0-d bool | int32": lambda lib: lib.tensor(True) | lib.tensor([[1, 2]], dtype=lib.int32),
    "ints & ints.t()": lambda lib: lib.tensor([[1, 2, 3]] * 3).t() & lib.tensor([[1, 2, 3]] * 3),
    "bools ^ bools": lambda lib: lib.tensor([True, False]) ^ lib.tensor([True, True]),
    "ints & 1.5": lambda lib: lib.tensor([1, 2]) & 1.5,
    "1.5 & bools": lambda lib: 1.5 & lib.tensor([True]),
    "floats & floats": lambda lib: lib.tensor([1.5]) & lib.tensor([[1.0], [2.0]]),
    "floats of unequal sizes": lambda lib: lib.tensor([1.5, 2]) & lib.tensor([1.0, 2, 3]),
}


@pytest.mark.parametrize("program", BITWISE.values(), ids=BITWISE.keys())
def test_and_or_xor_work_on_the_bits_of_the_promoted_operands(program):
    """``ints & True`` is int64 (each bit), not a bool ``logical_and``; floats are refused
    only after the shapes are found to broadcast."""
    assert_like_torch(lambda lib: {**facts(t := program(lib)), "stride": t.stride()})


# --------------------------------------------------------------------------- div's overloads

DIVISIONS = {
    "x.div(2)": lambda lib, x: x.div(2),
    "x.div(2, rounding_mode=None)": lambda lib, x: x.div(2, rounding_mode=None),
    "div(x, x, rounding_mode=None)": lambda lib, x: lib.div(x, x, rounding_mode=None),
    "div(2, x, rounding_mode=None)": lambda lib, x: lib.div(lib.tensor(2.0), x, rounding_mode=None),
    "x.div(2, rounding_mode='floor')": lambda lib, x: x.div(2, rounding_mode="floor"),
    "x.clone().div_(x, rounding_mode=None)": lambda lib, x: x.clone().div_(x, rounding_mode=None),
}


@pytest.mark.parametrize("program", DIVISIONS.values(), ids=DIVISIONS.keys())
def test_div_names_its_node_after_the_overload_called(program):
    """Any ``rounding_mode``, None included, is torch's ``DivBackward2``; none, ``DivBackward0``."""

    def run(lib):
        x = lib.tensor([1.0, -3.0], dtype=lib.float64, requires_grad=True)
        y = program(lib, x)
        (g,) = lib.autograd.grad(y.sum(), x, create_graph=True)
        return facts(y), as_numpy(g)

    assert_like_torch(run)


# --------------------------------------------------------------------------- clamp's two overloads

CLAMPS = {
    "int32.clamp(max=0-d float32)": lambda lib, x: lib.tensor([1, 5], dtype=lib.int32).clamp(
        max=lib.tensor(2.0)
    ),
    "int32.clamp(max=1-d float64)": lambda lib, x: lib.tensor([1, 5], dtype=lib.int32).clamp(
        max=lib.tensor([2.0], dtype=lib.float64)
    ),
    "x.clamp(0-d, number)": lambda lib, x: x.clamp(lib.tensor(0.5), 2),
    "x.clamp(number, 0-d)": lambda lib, x: x.clamp(0, lib.tensor(2.0)),
    "x.clamp(0-d, 0-d)": lambda lib, x: x.clamp(lib.tensor(0.5), lib.tensor(2.0)),
    "ints.clamp(0-d float64, number)": lambda lib, x: lib.tensor([1, 5]).clamp(
        lib.tensor(0.5, dtype=lib.float64), 2
    ),
    "ints.clamp(0-d int, 3.5)": lambda lib, x: lib.tensor([1, 5]).clamp(lib.tensor(2), 3.5),
    "x.clamp(0-d requiring grad, number)": lambda lib, x: x.clamp(
        lib.tensor(0.5, requires_grad=True), 2
    ),
    "x.clamp(1-d, number)": lambda lib, x: x.clamp(lib.tensor([0.5]), 2),
    "clamp(x, 2-d, number)": lambda lib, x: lib.clamp(x, lib.tensor([[0.5]]), 2),
    "x.clamp_(1-d, number)": lambda lib, x: x.detach().clamp_(lib.tensor([0.5]), 2),
    "ints.clamp_(number)": lambda lib, x: lib.tensor([1]).clamp_(0.5),
    "ints.clamp_(0-d)": lambda lib, x: lib.tensor([1]).clamp_(lib.tensor(0.5)),
    "bools.clamp_(max=0-d)": lambda lib, x: lib.tensor([True]).clamp_(max=lib.tensor(0.5)),
    "int32.clamp_(max=0-d)": lambda lib, x: lib.tensor([1], dtype=lib.int32).clamp_(
        max=lib.tensor(0.0)
    ),
    "ints.clip_(0-d, number)": lambda lib, x: lib.tensor([1]).clip_(lib.tensor(0.5), 2),
}


@pytest.mark.parametrize("program", CLAMPS.values(), ids=CLAMPS.keys())
def test_clamp_promotes_all_bounds_at_once_and_reads_a_tensor_beside_a_number_as_one(program):
    """With tensor bounds the result type is that of all three operands; a 0-d tensor beside
    a number picks the overload for numbers (``ClampBackward1``), unless it requires grad."""
    assert_like_torch(
        lambda lib: facts(program(lib, lib.tensor([1.0, -2.0, 3.0], requires_grad=True)))
    )


# --------------------------------------------------------------------------- indexing with empty lists

EMPTY_LIST_KEYS = {
    "x[[]]": lambda lib, x: x[[]],
    "x[[], 0]": lambda lib, x: x[[], 0],
    "x[:, []]": lambda lib, x: x[:, []],
    "x[[]] = 7": lambda lib, x: x.__setitem__([], 7) or x,
    "bools[[]] = 0.5": lambda lib, x: (b := x > 0).__setitem__([], 0.5) or b,
}


@pytest.mark.parametrize("program", EMPTY_LIST_KEYS.values(), ids=EMPTY_LIST_KEYS.keys())
def test_an_empty_list_indexes_no_positions(program):
    """``[]`` is an empty int64 index in torch (NumPy would make it float, no index)."""

    def run(lib):
        x = lib.tensor([[1.0, -2.0], [3.0, 4.0], [5.0, 6.0]], dtype=lib.float64)
        return facts(program(lib, x))

    assert_like_torch(run)


@pytest.mark.parametrize("positions", [[0, 0], [], [0], [1]])
def test_index_select_of_a_0d_tensor_takes_exactly_one_index(positions):
    assert_like_torch(
        lambda lib: facts(lib.tensor(1.5).index_select(-1, lib.tensor(positions, dtype=lib.long)))
    )


# --------------------------------------------------------------------------- multi-output views, base changed

MULTI_OUTPUT = {"split": lambda v: v.split(1, 0)[0], "unbind": lambda v: v.unbind(0)[0]}
USES = {
    "grad_fn": lambda v: name(v),
    "is_leaf": lambda v: v.is_leaf,
    "backward": lambda v: (v * 2).sum().backward(),
}


@pytest.mark.parametrize("use", USES.values(), ids=USES.keys())
@pytest.mark.parametrize("view", MULTI_OUTPUT.values(), ids=MULTI_OUTPUT.keys())
def test_a_multi_output_view_whose_base_gained_history_in_place_is_refused_in_torchs_words(
    view, use
):
    """A view of a base without grad, which an in-place op then gives history: torch says its
    *base* was modified (not that the view is being modified)."""

    def run(lib):
        base = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        v = view(base)
        base.mul_(lib.tensor([2.0], dtype=lib.float64, requires_grad=True))
        return use(v)

    assert_like_torch(run)


# --------------------------------------------------------------------------- x[True] = v, x[False] = v

LONE_BOOL_VALUES = {
    "0-d float into ints": lambda lib: (lib.tensor([3, 4]), lib.tensor(2.5)),
    "0-d bool into a 0-d int": lambda lib: (lib.tensor(3), lib.tensor(True)),
    "1-d float into ints": lambda lib: (lib.tensor([3, 4]), lib.tensor([2.5, 1.0])),
    "0-d requiring grad": lambda lib: (
        lib.tensor([3.0, 4.0]),
        lib.tensor(2.5, requires_grad=True),
    ),
    "2-d requiring grad": lambda lib: (
        lib.tensor([3.0, 4.0]),
        lib.tensor([[2.5, 1.0]], requires_grad=True),
    ),
    "a number": lambda lib: (lib.tensor([3.0, 4.0]), 7),
    "a value that does not fit": lambda lib: (lib.tensor([3.0, 4.0]), lib.tensor([1.0, 2, 3])),
}


@pytest.mark.parametrize("key", [True, False])
@pytest.mark.parametrize("make", LONE_BOOL_VALUES.values(), ids=LONE_BOOL_VALUES.keys())
def test_a_lone_bool_key_copies_into_all_of_x_or_into_nothing(make, key):
    """``x[True] = v`` copies ``v`` (cast, broadcast) into ``x[None]``; ``x[False] = v``
    writes nothing and leaves the version alone. With ``(True, 0)`` it is index_put_ again."""

    def run(lib):
        x, value = make(lib)
        x = x.clone()
        x[key] = value
        return {**facts(x), "version": x._version}

    assert_like_torch(run)


def test_a_bool_in_a_longer_key_still_takes_index_puts_dtype_check():
    def run(lib):
        x = lib.tensor([3, 4])
        x[True, 0] = lib.tensor(2.5)
        return facts(x)

    assert_like_torch(run)


# --------------------------------------------------------------------------- torch's order of checks

CHECK_ORDER = {
    "copy_ of a larger src": lambda lib: lib.zeros(2, 3).copy_(lib.zeros(2, 4, 4)),
    "copy_ of a clashing src": lambda lib: lib.zeros(3, 3, 3).copy_(lib.zeros(2, 1, 3)),
    "mm sizes, then dtypes": lambda lib: lib.mm(
        lib.zeros(2, 3), lib.zeros(1, 3, dtype=lib.float64)
    ),
    "mv sizes, then dtypes": lambda lib: lib.mv(lib.zeros(2, 3), lib.zeros(2, dtype=lib.float64)),
    "bmm sizes, then dtypes": lambda lib: lib.bmm(
        lib.zeros(2, 2, 3), lib.zeros(2, 2, 3, dtype=lib.float64)
    ),
    "matrix @ vector, sizes": lambda lib: lib.zeros(2, 3) @ lib.zeros(2, dtype=lib.float64),
    "batch @ vector, sizes": lambda lib: lib.zeros(2, 2, 3) @ lib.zeros(2, dtype=lib.float64),
    "batch @ matrix, sizes": lambda lib: lib.zeros(2, 2, 3) @ lib.zeros(2, 2, dtype=lib.float64),
    "vector @ matrix, sizes": lambda lib: lib.zeros(3) @ lib.zeros(2, 3, dtype=lib.float64),
    "matrix @ batch, sizes": lambda lib: lib.zeros(2, 3) @ lib.zeros(2, 2, 3, dtype=lib.float64),
    "matrix @ vector, dtypes": lambda lib: lib.zeros(2, 3) @ lib.zeros(3, dtype=lib.float64),
    "double matrix @ vector, dtypes": lambda lib: lib.zeros(2, 3, dtype=lib.float64) @ lib.zeros(3),
    "batch @ vector, dtypes": lambda lib: lib.zeros(2, 2, 3) @ lib.zeros(3, dtype=lib.float64),
    "bools @ floats": lambda lib: lib.zeros(2, 3, dtype=lib.bool) @ lib.zeros(3, 2),
    "bool batch @ floats": lambda lib: lib.zeros(2, 2, 3, dtype=lib.bool) @ lib.zeros(2, 3, 2),
    "float batch @ bools": lambda lib: lib.zeros(2, 2, 3) @ lib.zeros(2, 3, 2, dtype=lib.bool),
    "bools @ bool vector": lambda lib: (
        lib.zeros(2, 3, dtype=lib.bool) @ lib.zeros(3, dtype=lib.bool)
    ),
}


@pytest.mark.parametrize("program", CHECK_ORDER.values(), ids=CHECK_ORDER.keys())
def test_shape_errors_come_before_dtype_errors_as_in_torch(program):
    """copy_ names its destination tensor a; the matrix products check sizes before dtypes
    (and bmm refuses bools before comparing dtypes)."""
    assert_like_torch(lambda lib: facts(program(lib)))


# --------------------------------------------------------------------------- slices torch skips

SLICE_KEYS = {
    "x[0:2, ...]": (slice(0, 2), ...),
    "x[0:10, ...]": (slice(0, 10), ...),
    "x[:2, ...]": (slice(None, 2), ...),
    "x[-2:, ...]": (slice(-2, None), ...),
    "x[-3:, ...]": (slice(-3, None), ...),
    "x[::1, ...]": (slice(None, None, 1), ...),
    "x[:, -3:]": (slice(None), slice(-3, None)),
    "x[:, :10]": (slice(None), slice(None, 10)),
    "x[-2:2, ...]": (slice(-2, 2), ...),
    "x[0:-1, ...]": (slice(0, -1), ...),
    "x[None, -1, -2:3]": (None, -1, slice(-2, 3)),
    "x[None, ..., -2:]": (None, ..., slice(-2, None)),
    "x[..., None, :]": (..., None, slice(None)),
}


@pytest.mark.parametrize("key", SLICE_KEYS.values(), ids=SLICE_KEYS.keys())
def test_a_slice_is_skipped_only_when_its_numbers_as_written_take_the_whole_dim(key):
    """torch skips ``0:10`` of 2 rows (an alias) but records ``-2:`` (SliceBackward0)."""
    assert_like_torch(lambda lib: facts(lib.zeros(2, 3, requires_grad=True)[key]))


SET_KEYS = [(slice(0, 2),), (slice(0, 10), Ellipsis), (slice(-2, None),), (Ellipsis, slice(0, 3))]
SET_VALUES = {
    "a row requiring grad": lambda lib: lib.ones(3, requires_grad=True),
    "0-d requiring grad": lambda lib: lib.tensor(2.0, requires_grad=True),
    "a number": lambda lib: 2.0,
}


@pytest.mark.parametrize("make", SET_VALUES.values(), ids=SET_VALUES.keys())
@pytest.mark.parametrize("key", SET_KEYS, ids=str)
def test_writing_through_a_skipped_slice_writes_the_tensor_itself(key, make):
    """``x[0:2] = v`` of 2 rows is ``x.copy_(v)`` (CopyBackwards, FillBackward3), not a write
    through a view (CopySlices)."""

    def run(lib):
        x = lib.zeros(2, 3, requires_grad=True).clone()
        x[key] = make(lib)
        return {**facts(x), "version": x._version}

    assert_like_torch(run)


LEADING_ONES = ["(1, 1)", "(1, 1, 1)", "(1, 3)", "(1, 1, 3)", "(1,)", "(())"]  # (()): 0-d


@pytest.mark.parametrize("value", LEADING_ONES)
@pytest.mark.parametrize("key", ["...", ":", "0"])
@pytest.mark.parametrize("shape", [(1,), (3,), (2, 3), ()], ids=str)
def test_a_value_with_leading_ones_is_copied_unless_it_is_0_d(shape, key, value):
    """torch drops a value's leading dims of size 1 to fit ``x[key]``, but fills only from a
    value that was 0-d as given: ``y[...] = ones(1, 1)`` into 1 element is CopyBackwards,
    not FillBackward3."""

    def run(lib):
        y = lib.zeros(shape, requires_grad=True) * 1
        exec(f"y[{key}] = lib.ones{value}", {"lib": lib, "y": y})  # noqa: S102 - the key as written
        return {**facts(y), "version": y._version}

    assert_like_torch(run)


# --------------------------------------------------------------------------- outer, softmax of nothing

OUTER_INPUTS = {"leaf": lambda x: x, "stepped": lambda x: x[::2], "sliced": lambda x: x[:2]}


@pytest.mark.parametrize("view", OUTER_INPUTS.values(), ids=OUTER_INPUTS.keys())
def test_outer_reshapes_its_first_vector_as_torch_does(view):
    """torch's outer is ``x.reshape(-1, 1) * y``: its first input reaches the product through
    ViewBackward0 (ReshapeAliasBackward0 when strided), not an unsqueeze."""

    def run(lib):
        x = view(lib.tensor([1.0, 2.0, 3.0, 4.0], dtype=lib.float64, requires_grad=True))
        y = x.outer(x)
        return facts(y), [name(fn) for fn, _ in y.grad_fn.next_functions]

    assert_like_torch(run)


SOFTMAX_OF_INTEGERS = {
    "empty int64": lambda lib: lib.tensor([], dtype=lib.int64).softmax(0),
    "empty int32, not the last dim": lambda lib: lib.zeros(4, 0, dtype=lib.int32).softmax(-2),
    "empty int64, log_softmax": lambda lib: lib.tensor([], dtype=lib.int64).log_softmax(0),
    "one int64": lambda lib: lib.tensor([1]).softmax(0),
    "int32 rows": lambda lib: lib.zeros(4, 2, dtype=lib.int32).softmax(0),
    "empty bools": lambda lib: lib.zeros(2, 3, 0, dtype=lib.bool).softmax(-3),
    "empty bools, log_softmax": lambda lib: lib.zeros(2, 0, dtype=lib.bool).log_softmax(1),
    "empty floats": lambda lib: lib.zeros(2, 0).softmax(0),
}


@pytest.mark.parametrize("program", SOFTMAX_OF_INTEGERS.values(), ids=SOFTMAX_OF_INTEGERS.keys())
def test_softmax_refuses_integers_only_when_there_is_something_to_compute(program):
    assert_like_torch(lambda lib: facts(program(lib)))


# --------------------------------------------------------------------------- values that do not fit an index

VALUE_SHAPES = {
    "(2, 1, 3) into x[[0, 0]]": (lambda lib: (lib.tensor([0, 0]),), (2, 1, 3)),
    "(3, 3) into x[[0]]": (lambda lib: (lib.tensor([0]),), (3, 3)),
    "(2, 3) into x[mask]": (lambda lib: (lib.tensor([True, False]),), (2, 3)),
    "(1, 1, 3) into x[[0, 1]]": (lambda lib: (lib.tensor([0, 1]),), (1, 1, 3)),
}
WRITES = {
    "x[key] = v": lambda x, key, v: x.__setitem__(key, v),
    "index_put_": lambda x, key, v: x.index_put_(key, v),
    "index_put_(accumulate=True)": lambda x, key, v: x.index_put_(key, v, accumulate=True),
}


@pytest.mark.parametrize("write", WRITES.values(), ids=WRITES.keys())
@pytest.mark.parametrize("dtype", ["float32", "int64"])
@pytest.mark.parametrize(("key", "shape"), VALUE_SHAPES.values(), ids=VALUE_SHAPES.keys())
def test_values_must_broadcast_to_the_indexed_shape_before_their_dtype_is_checked(
    key, shape, dtype, write
):
    """Values broadcast *to* the indexing result (a size-1 dim there takes one value), and
    only ``x[key] = v`` drops the values' leading 1s; the shape is checked before the dtype."""

    def run(lib):
        x = lib.zeros(2, 3, dtype=getattr(lib, dtype))
        write(x, key(lib), lib.ones(shape))
        return facts(x)

    assert_like_torch(run)


@pytest.mark.parametrize("dtype", ["float32", "int64"])
def test_a_value_that_fits_only_without_the_size_1_dim_of_none_is_refused(dtype):
    def run(lib):
        x = lib.zeros(1, 3, dtype=getattr(lib, dtype))
        x[lib.tensor([[0], [0]]), None] = lib.ones(2, 1, 3)
        return facts(x)

    assert_like_torch(run)


# --------------------------------------------------------------------------- the sign of zero

ZERO_KEEPERS = {
    "relu": lambda lib, x: x.relu(),
    "relu_": lambda lib, x: x.clone().relu_(),
    "clamp(min=0)": lambda lib, x: x.clamp(min=0),
    "clamp(-1, 1)": lambda lib, x: x.clamp(-1, 1),
    "clamp_(max=0)": lambda lib, x: x.clone().clamp_(max=0),
    "maximum(x, 0)": lambda lib, x: lib.maximum(x, lib.zeros(5, dtype=lib.float64)),
    "maximum(0, x)": lambda lib, x: lib.maximum(lib.zeros(5, dtype=lib.float64), x),
    "minimum(x, 0)": lambda lib, x: lib.minimum(x, lib.zeros(5, dtype=lib.float64)),
    "minimum(0, x)": lambda lib, x: lib.minimum(lib.zeros(5, dtype=lib.float64), x),
    "relu, then rsqrt": lambda lib, x: x.relu().rsqrt(),
    "clamp(min=tensor)": lambda lib, x: x.clamp(min=lib.zeros(5, dtype=lib.float64)),
    "clamp(max=-tensor)": lambda lib, x: x.clamp(max=-lib.zeros(5, dtype=lib.float64)),
    "clamp_(min=tensor)": lambda lib, x: x.clone().clamp_(min=lib.zeros(5, dtype=lib.float64)),
    "maximum(x, -x)": lambda lib, x: lib.maximum(x, -x),
    "minimum(-x, x)": lambda lib, x: lib.minimum(-x, x),
    # windows of 2 along rows with ±0 (no NaN: that takes another path), side by side and
    # overlapping: the first maximum of each window is kept
    "max_pool2d": lambda lib, x: lib.nn.functional.max_pool2d(
        lib.stack([x[:4], -x[:4], x[:4].flip(0)])[None], (1, 2)
    ),
    "max_pool2d(stride=1)": lambda lib, x: lib.nn.functional.max_pool2d(
        lib.stack([x[:4], -x[:4], x[:4].flip(0)])[None], (1, 2), stride=1
    ),
}


@pytest.mark.parametrize("program", ZERO_KEEPERS.values(), ids=ZERO_KEEPERS.keys())
def test_a_negative_zero_keeps_its_sign_where_torch_keeps_it(program):
    """torch's relu, clamp, maximum and minimum return their (first) input where it ties
    with the other value, and max pooling a window's first maximum: -0.0 stays -0.0, which
    1/x or rsqrt then tell apart from 0.0 (on every device: CUDA's max/min decide a tie
    by their own rule)."""

    def run(lib):
        x = lib.tensor([-0.0, 0.0, -1.0, 2.0, float("nan")], dtype=lib.float64)
        y = program(lib, x)
        return facts(y), as_numpy(1 / y)

    assert_like_torch(run)


# --------------------------------------------------------------------------- expand, integer views

EXPAND_SIZES = [(1, 2), (2, 2), (1, 1), (-2, 1), (-3, 2, 4), (-1, 3, 5), (2, 3, 4, 5), (-2, 3, 3)]


@pytest.mark.parametrize("sizes", EXPAND_SIZES, ids=str)
def test_expand_names_the_last_size_it_cannot_give(sizes):
    """torch checks the sizes from the last dim: ``zeros(3, 4).expand(1, 2)`` names dim 1."""
    assert_like_torch(lambda lib: facts(lib.zeros(3, 4).expand(*sizes)))


def test_writing_a_larger_tensor_through_an_expanded_view_names_the_last_dim():
    def run(lib):
        x = lib.arange(12.0).reshape(3, 4)
        x.expand_as(x)[:-2, ::2] = x
        return facts(x)

    assert_like_torch(run)


INTEGER_VIEWS = {
    "split(3)[0] of int32": lambda lib: lib.tensor([1, 2, 3, 4], dtype=lib.int32).split(3, 0)[0],
    "unbind(0)[0] of int64": lambda lib: lib.tensor([[1, 2]]).unbind(0)[0],
    "split(1)[0] of bools": lambda lib: lib.tensor([True, False]).split(1)[0],
    "an int64 leaf": lambda lib: lib.tensor([1, 2]),
}


@pytest.mark.parametrize("make", INTEGER_VIEWS.values(), ids=INTEGER_VIEWS.keys())
@pytest.mark.parametrize("op", ["copy_", "div_"])
def test_copy_into_an_integer_tensor_ignores_that_its_source_requires_grad(make, op):
    """torch's copy_ records nothing into an integer or bool tensor, so copy_ into a
    multi-output view of one is a plain copy; other in-place ops (div_) still check the view
    first, as if they would record."""

    def run(lib):
        x = make(lib)
        getattr(x, op)(lib.tensor([1.5], requires_grad=True))
        return facts(x)

    assert_like_torch(run)


# --------------------------------------------------------------------------- versions and saved inputs

PRODUCTS = [((2,), (2, 2)), ((2, 2), (2,)), ((2,), (2,)), ((2, 2), (2, 2)), ((2, 2, 2), (2,))]


@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize(("a", "b"), PRODUCTS, ids=str)
def test_a_vector_times_a_matrix_starts_at_version_1(a, b, requires_grad):
    """torch computes ``v @ M`` as ``unsqueeze``, ``mm``, then an in-place ``squeeze_``."""

    def run(lib):
        y = lib.ones(*a, requires_grad=requires_grad) @ lib.ones(*b)
        return {**facts(y), "version": y._version, "is_view": y._is_view()}

    assert_like_torch(run)


def test_gather_saves_its_input_so_changing_it_in_place_is_refused_at_backward():
    def run(lib):
        x = lib.tensor([[1.0, 2, 3], [4, 5, 6]], dtype=lib.float64, requires_grad=True)
        y = x.reshape(6) * 1
        z = y.gather(0, lib.zeros(6, dtype=lib.long))
        with lib.no_grad():
            y.zero_()
        z.sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(run)


# --------------------------------------------------------------------------- dims: tuples, 0-d, empty

DIM_PROGRAMS = {
    "0-d any((0,))": lambda lib: lib.tensor(1.5).any((0,)),
    "0-d all((-1,))": lambda lib: lib.tensor(1.5).all((-1,)),
    "any((0, 1))": lambda lib: lib.tensor([[0, 1, 0], [0, 0, 0]]).any((0, 1)),
    "all((1,), keepdim=True)": lambda lib: lib.tensor([[0, 1, 0], [1, 1, 1]]).all(
        (1,), keepdim=True
    ),
    "any(()) reduces nothing": lambda lib: lib.tensor([[0, 1, 0], [0, 0, 0]]).any(()),
    "any((0, -2)) repeats a dim": lambda lib: lib.tensor([[0, 1, 0], [0, 0, 0]]).any((0, -2)),
    "squeeze((-1, 0)) of (1,)": lambda lib: lib.ones(1).squeeze((-1, 0)),
    "squeeze((1, -1)) of (2, 3)": lambda lib: lib.ones(2, 3).squeeze((1, -1)),
    "0-d squeeze((-1, 0))": lambda lib: lib.tensor(1.5).squeeze((-1, 0)),
    "squeeze((0, 2)) of (1, 2, 1)": lambda lib: lib.ones(1, 2, 1).squeeze((0, 2)),
    "0-d flatten(1)": lambda lib: lib.tensor(1.5).flatten(1),
    "0-d flatten(-2)": lambda lib: lib.tensor(1.5).flatten(-2),
    "0-d flatten(0, 1)": lambda lib: lib.tensor(1.5).flatten(0, 1),
    "0-d flatten(0, -1)": lambda lib: lib.tensor(1.5).flatten(0, -1),
    "cat of empty 1-d tensors, dim 1": lambda lib: lib.cat([lib.zeros(0), lib.zeros(0)], 1),
    "cat of empty 1-d tensors, dim 5": lambda lib: lib.cat([lib.zeros(0), lib.zeros(0)], 5),
    "cat of an empty 1-d and a matrix, dim 1": lambda lib: lib.cat(
        [lib.zeros(0), lib.ones(2, 3)], 1
    ),
    "cat of an empty 1-d and a matrix, dim 5": lambda lib: lib.cat(
        [lib.zeros(0), lib.ones(2, 3)], 5
    ),
    "empty roll(1, 1)": lambda lib: lib.zeros(0).roll(1, 1),
    "(2, 0) roll(1, 5)": lambda lib: lib.zeros(2, 0).roll(1, 5),
    "(2, 3) roll(1, 7)": lambda lib: lib.ones(2, 3).roll(1, 7),
    "empty index_select([0])": lambda lib: lib.zeros(0).index_select(0, lib.tensor([0])),
    "(2, 0) index_select(1, [0])": lambda lib: lib.zeros(2, 0).index_select(1, lib.tensor([0])),
    "empty index_select([])": lambda lib: lib.zeros(0).index_select(
        0, lib.tensor([], dtype=lib.long)
    ),
    "empty amax((0, 1))": lambda lib: lib.zeros(0).amax((0, 1)),
    "empty amin((-1, 0))": lambda lib: lib.zeros(0).amin((-1, 0)),
    "(2, 0) amax((1, -1))": lambda lib: lib.zeros(2, 0).amax((1, -1)),
    "(2, 0) amax((0,))": lambda lib: lib.zeros(2, 0).amax((0,)),
    "(2, 0) amin()": lambda lib: lib.zeros(2, 0).amin(),
    "(2, 0) inf-norm over (1, -1)": lambda lib: lib.zeros(2, 0).norm(float("inf"), (1, -1)),
}


@pytest.mark.parametrize("program", DIM_PROGRAMS.values(), ids=DIM_PROGRAMS.keys())
def test_dims_given_as_tuples_or_to_0d_and_empty_tensors_are_read_as_torch_reads_them(program):
    assert_like_torch(lambda lib: facts(program(lib)))


@pytest.mark.parametrize("dims", [1, 5, None])
def test_rolling_an_empty_tensor_is_still_recorded(dims):
    def run(lib):
        x = lib.zeros(2, 0, requires_grad=True)
        y = x.roll(1) if dims is None else x.roll(1, dims)
        y.sum().backward()
        return facts(y), as_numpy(x.grad)

    assert_like_torch(run)


# --------------------------------------------------------------------------- keys: places, masks, ellipses

OUT_OF_BOUNDS_KEYS = {
    "x[..., 5]": (..., 5),
    "x[..., 5, :]": (..., 5, slice(None)),
    "x[None, 5]": (None, 5),
    "x[None, None, 0, 7]": (None, None, 0, 7),
    "x[:, None, 7]": (slice(None), None, 7),
    "x[True, 0, 7]": (True, 0, 7),
    "x[[0], 7]": ([0], 7),
    "x[mask, 7]": ("mask", 7),
    "x[None, ..., 7]": (None, ..., 7),
    "x[0, ..., 9]": (0, ..., 9),
    "x[2-d mask, 7]": ("mask2", 7),
    "x[None, 2-d mask, 9]": (None, "mask2", 9),
    "x[0-d True, 0, 7]": ("true", 0, 7),
}


def _key(lib, key):
    named = {
        "mask": lib.tensor([True, False]),
        "mask2": lib.tensor([[True, False, True], [False, True, False]]),
        "true": lib.tensor(True),
    }
    return tuple(named.get(k, k) if isinstance(k, str) else k for k in key)


@pytest.mark.parametrize("key", OUT_OF_BOUNDS_KEYS.values(), ids=OUT_OF_BOUNDS_KEYS.keys())
def test_an_int_out_of_bounds_is_named_by_its_place_in_the_key(key):
    """torch's error counts the key's entries (``...`` and None each count one), not dims."""
    assert_like_torch(lambda lib: facts(lib.arange(24.0).reshape(2, 3, 4)[_key(lib, key)]))


MASK_THEN_INT = {
    "x[mask2, 1]": ("mask2", 1),
    "x[mask2, 0]": ("mask2", 0),
    "x[..., mask2[0], 1]": (..., "row", 1),
    "x[0, i[:, None], 2]": (0, "column", 2),
}


@pytest.mark.parametrize("key", MASK_THEN_INT.values(), ids=MASK_THEN_INT.keys())
def test_writing_through_a_2d_mask_then_an_int_indexes_the_dims_after_the_mask(key):
    def run(lib):
        named = {
            "mask2": lib.tensor([[True, False, True], [False, True, False]]),
            "row": lib.tensor([True, False, True]),
            "column": lib.tensor([[0], [1]]),
        }
        x = lib.arange(24.0).reshape(2, 3, 4).requires_grad_().clone()
        x[tuple(named.get(k, k) if isinstance(k, str) else k for k in key)] = -1.0
        return facts(x)

    assert_like_torch(run)


ELLIPSES = {
    "x[..., 0:, ...]": (..., slice(0, None), ...),
    "x[..., i, ...]": (..., "column", ...),
    "x[..., ...]": (..., ...),
    "x[0, ..., ...]": (0, ..., ...),
}


@pytest.mark.parametrize("write", [False, True])
@pytest.mark.parametrize("key", ELLIPSES.values(), ids=ELLIPSES.keys())
def test_a_key_may_hold_several_ellipses(key, write):
    """torch (2.x) lets each ``...`` stand for the dims no other entry takes, in turn."""

    def run(lib):
        x = lib.arange(12.0).reshape(3, 4).requires_grad_().clone()
        k = tuple(lib.tensor([[3], [-2]]) if e == "column" else e for e in key)
        if write:
            x[k] = -1.0
            return facts(x)
        return facts(x[k])

    assert_like_torch(run)


SELECTING_NOTHING = {
    "x[:, None, i out of bounds, empty slice]": lambda lib: lib.zeros(2, 1, 3)[
        :, None, lib.tensor([[-3], [0]]), -2:1
    ],
    "(0, 3)[i, False]": lambda lib: lib.zeros(0, 3)[lib.tensor([[0]]), False],
    "(0, 3)[[5]]": lambda lib: lib.zeros(0, 3)[lib.tensor([5])],
    "(2, 0)[[5]]": lambda lib: lib.zeros(2, 0)[lib.tensor([5])],
    "(2, 0)[:, [5]]": lambda lib: lib.zeros(2, 0)[:, lib.tensor([5])],
    "(0, 3)[:, [5]]": lambda lib: lib.zeros(0, 3)[:, lib.tensor([5])],
    "(0, 3).index_put_([5])": lambda lib: lib.zeros(0, 3).index_put_(
        (lib.tensor([5]),), lib.tensor(1.0)
    ),
    "(2, 0).index_put_([5])": lambda lib: lib.zeros(2, 0).index_put_(
        (lib.tensor([5]),), lib.tensor(1.0)
    ),
    "(0, 3)[[], 7]": lambda lib: lib.zeros(0, 3)[lib.tensor([], dtype=lib.long), 7],
    "x[no True, [9]]": lambda lib: lib.zeros(3, 2)[
        lib.tensor([False, False, False]), lib.tensor([9])
    ],
    "(0, 3)[i, empty slice]": lambda lib: lib.zeros(0, 3)[lib.tensor([[0]]), 1:0:2],
    "(0, 3)[i, []]": lambda lib: lib.zeros(0, 3)[lib.tensor([[0]]), lib.tensor([], dtype=lib.long)],
    "(0, 3)[[0], 1:0]": lambda lib: lib.zeros(0, 3)[lib.tensor([0]), 1:0],
}


@pytest.mark.parametrize("program", SELECTING_NOTHING.values(), ids=SELECTING_NOTHING.keys())
def test_an_index_that_selects_nothing_is_not_checked_for_bounds(program):
    """torch's index kernel reads no index array when the result has no element (but an
    array into an empty dim is refused when the arrays together hold positions)."""
    assert_like_torch(lambda lib: facts(program(lib)))


VIEWS_AS_DTYPE = {  # x: float64 [1.0, 2.0] requiring grad; x32: float32 ones(3)
    "float64 as float32": "x.view(lib.float32)",
    "as int64": "x.view(lib.int64)",
    "as its own dtype": "x.view(lib.float64)",
    "as uint8": "x.view(lib.uint8)",
    "as bool": "x.view(lib.bool)",
    "a non-leaf as int64": "(x * 1).view(lib.int64)",
    "a transposed matrix as int32": "lib.ones(4, 2).t().view(lib.int32)",
    "columns as float64": "lib.ones(3, 4)[:, :2].view(lib.float64)",
    "0-d as int32": "lib.tensor(1.0).view(lib.int32)",
    "empty as float64": "lib.ones(2, 0).view(lib.float64)",
    "3 floats as float64": "x32.view(lib.float64)",
    "every other float as float16": "x32[::2].view(lib.float16)",
    "0-d as float16": "lib.tensor(1.0).view(lib.float16)",
    "an odd offset as float64": "lib.ones(2, 4)[:, 1:3].view(lib.float64)",
    "rows of 3 as float64": "lib.ones(3, 3)[:, :2].view(lib.float64)",
}


@pytest.mark.parametrize("code", VIEWS_AS_DTYPE.values(), ids=VIEWS_AS_DTYPE.keys())
def test_a_view_as_another_dtype_reads_the_same_bits(code):
    """``x.view(dtype)`` reinterprets the memory (the last dim scaled by the ratio of the
    element sizes, with torch's checks in its order), shares the version counter, and is no
    part of the graph (torch's is not differentiable). It converted the values before."""

    def run(lib):
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = eval(code, {"lib": lib, "x": x, "x32": lib.ones(3)})  # noqa: S307
        with lib.no_grad():
            x.add_(1)
        return {**facts(y), "stride": y.stride(), "version": y._version}

    assert_like_torch(run)


EMPTY = "lib.zeros(0, dtype=lib.int64)"
EMPTY_GATHER_SCATTER = {  # x (2, 3) and src (2, 3) require grad
    "gather": f"x.gather(0, {EMPTY})",
    "gather, a (0, 5) index": "x.gather(0, lib.zeros(0, 5, dtype=lib.int64))",
    "gather, a float index": "x.gather(0, lib.tensor([]))",
    "gather, a bool index": "x.gather(1, lib.zeros(0, dtype=lib.bool))",
    "gather, dim 5": f"x.gather(5, {EMPTY})",
    "gather of a 0-d x": f"x[0, 0].gather(0, {EMPTY})",
    "scatter_add": f"x.scatter_add(0, {EMPTY}, src)",
    "scatter": "x.scatter(0, lib.zeros(0, 3, dtype=lib.int64), src)",
    "scatter of a value": "x.scatter(0, lib.tensor([]), 1.0)",
    "scatter_add of a float64 src": f"x.scatter_add(0, {EMPTY}, src.double())",
}


@pytest.mark.parametrize("code", EMPTY_GATHER_SCATTER.values(), ids=EMPTY_GATHER_SCATTER.keys())
def test_an_empty_gather_or_scatter_index_is_not_checked(code):
    """torch checks nothing of an index with no element (its rank, sizes, even its dtype):
    gather gives an empty result, scatter a copy; self's dtype must still be src's, and
    src's gradient (empty) is refused by the engine for its shape."""

    def run(lib):
        x = lib.zeros(2, 3, requires_grad=True)
        src = lib.ones(2, 3, requires_grad=True)
        y = eval(code, {"lib": lib, "x": x, "src": src})  # noqa: S307 - the program as written
        grads = lib.autograd.grad(y.sum(), [x, src], allow_unused=True)
        return facts(y), [None if g is None else as_numpy(g) for g in grads]

    assert_like_torch(run)


@pytest.mark.parametrize("key", [0, -1, 5, (0,), (-1,)], ids=str)
def test_an_int_into_a_0d_tensor_is_refused_in_torchs_words(key):
    """Only ``x[0]`` gets the hint about ``.item()``; another int is out of bounds."""
    assert_like_torch(lambda lib: facts(lib.tensor(1.5, requires_grad=True)[key]))


BOUNDS = {
    "min and max tensors": lambda lib, lo, hi: {"min": lo, "max": hi},
    "min tensor": lambda lib, lo, hi: {"min": lo},
    "max tensor": lambda lib, lo, hi: {"max": hi},
}


@pytest.mark.parametrize("bounds", BOUNDS.values(), ids=BOUNDS.keys())
def test_clamp_with_tensor_bounds_gives_a_nan_input_no_gradient(bounds):
    """torch passes the gradient to ``x`` only where ``min <= x <= max`` holds: not at NaN
    (nor where the bounds cross)."""

    def run(lib):
        x = lib.tensor([float("nan"), -2.0, 0.5, 3.0, 1.0], dtype=lib.float64, requires_grad=True)
        lo = lib.tensor([0.0, 0.0, 0.0, 0.0, 2.0], dtype=lib.float64, requires_grad=True)
        hi = lib.tensor([1.0, 1.0, 1.0, 1.0, 0.5], dtype=lib.float64, requires_grad=True)
        y = x.clamp(**bounds(lib, lo, hi))
        y.backward(lib.ones(5, dtype=lib.float64))
        return facts(y), [as_numpy(t.grad) for t in (x, lo, hi)]

    assert_like_torch(run)

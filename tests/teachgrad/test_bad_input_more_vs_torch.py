"""Bad input, and the edge values beside it, compared with torch: more rows in the manner of
test_bad_input_vs_torch.py.

The rows: ``linspace`` with inf or NaN ends, numbers its dtype can't hold and integer
dtypes (torch's kernel, step by step); ``full``'s value in each dtype; ``tensor`` of a
float too large for its dtype (inf, and no NumPy warning); ``inference_mode`` given a
non-bool; ``nn.functional`` given a non-tensor where a tensor goes; ``F.pad``'s amounts
and ``F.dropout``'s ``p``; the words for wrong types in ``round``, the layers' sizes,
``requires_grad_`` by keyword and ``manual_seed``.

Each row is one program for both libraries (``lambda lib: ...``), run by
``assert_like_torch``: both raise the same class with the same first line, or give the same
values. A NumPy warning counts as an error (``_strictly``). Each row also says what torch
does (raises which error, with which words, or gives values) and the test checks it, so that
a row that raises for an unmeant reason (a typo) fails instead of passing unseen.
"""

import random
import warnings

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch
from tests.teachgrad.inplace._common import Raised, numpy

pytestmark = pytest.mark.usefixtures("torch")

INF, NAN = float("inf"), float("nan")
VALUES = None  # a row's expectation: torch gives values (else: its error's class and words)


def _strictly(program):
    """``program`` with RuntimeWarnings (NumPy's "overflow encountered in cast" ...) as errors:
    torch makes inf and NaN silently."""

    def run(lib):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            return program(lib)

    return run


def _check(program, expected):
    """``program`` behaves alike in both libraries, and torch does what the row expects:
    ``VALUES``, or ``(error class name, words in its message)``."""
    want = assert_like_torch(_strictly(program))
    if expected is VALUES:
        assert not isinstance(want, Raised), want
    else:
        error, words = expected
        assert isinstance(want, Raised) and want.type == error and words in want.message, want


def _bits(t):
    """A tensor's dtype and values, compared bit for bit (a NaN as a NaN, whatever its bits)."""
    a = numpy(t)
    nan = np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, bool)
    return str(t.dtype).rpartition(".")[2], nan.tolist(), np.where(nan, 0, a).tobytes()


def _dtype(lib, name):
    return None if name is None else getattr(lib, name)


OVERFLOW = ("RuntimeError", "without overflow")

# --------------------------------------------------------------------------- linspace

# (start, end, steps): every value exact in binary, so torch's last bit (which depends on
# its build fusing multiply-adds, see the test of ordinary ranges below) is not at stake
EXACT_RANGES = [
    (0, 1, 0),
    (0, 1, 1),
    (2.5, -1, 1),
    (0, 1, 2),
    (-1, 1, 3),
    (0, 1, 5),
    (-2, 2, 9),
    (0.5, 3.5, 7),
    (0, -8, 9),
    (0, 100, 101),
    (1, 2, 1025),
    (-3, 300, 4),
]
INF_NAN_RANGES = [
    (0, INF, 3),
    (NAN, 1, 3),
    (0, INF, 1),
    (INF, 0, 1),
    (NAN, 0, 1),
    (-INF, INF, 4),
    (0, INF, 2),
    (INF, INF, 3),
    (1, NAN, 5),
    (-INF, 0, 7),
    (0, NAN, 0),
    (5, -INF, 100),
]
FLOATS = [None, "float16", "float32", "float64"]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("start, end, steps", EXACT_RANGES + INF_NAN_RANGES)
def test_linspace_of_floats_is_torchs_to_the_bit(start, end, steps, dtype):
    """An inf or NaN end makes every value NaN (torch's ``inf * 0``), but one step: start."""
    _check(lambda lib: _bits(lib.linspace(start, end, steps, dtype=_dtype(lib, dtype))), VALUES)


INTS = ["uint8", "int8", "int16", "int32", "int64"]


@pytest.mark.parametrize("dtype", INTS)
@pytest.mark.parametrize(
    "start, end, steps",
    [(0.5, 3.7, 3), (-1.5, 7.9, 5), (-5, 5, 7), (3.9, -3.9, 4), (0, 90, 7), (7, 7, 3), (2, 9, 1)],
)
def test_linspace_of_integers_converts_the_ends_first(start, end, steps, dtype):
    """torch truncates a float end to the dtype before it steps, and reads a negative int in
    uint8 as it wraps around (-5 is 251); a negative float does not fit uint8."""
    refused = dtype == "uint8" and isinstance(min(start, end), float) and min(start, end) < 0
    _check(
        lambda lib: _bits(lib.linspace(start, end, steps, dtype=getattr(lib, dtype))),
        OVERFLOW if refused else VALUES,
    )


LINSPACE_REFUSED = {
    "inf end, int64": (lambda lib: lib.linspace(0, INF, 3, dtype=lib.int64), OVERFLOW),
    "NaN start, int32": (lambda lib: lib.linspace(NAN, 1, 3, dtype=lib.int32), OVERFLOW),
    "NaN start, one step, int16": (
        lambda lib: lib.linspace(NAN, 1, 1, dtype=lib.int16),
        ("RuntimeError", "int16_t without overflow"),
    ),
    "inf end, one step, int64 (end unread)": (
        lambda lib: numpy(lib.linspace(0, INF, 1, dtype=lib.int64)),
        VALUES,
    ),
    "1e300, float32": (
        lambda lib: lib.linspace(0, 1e300, 3),
        ("RuntimeError", "type float without overflow"),
    ),
    "1e300 start, one step, float32": (
        lambda lib: lib.linspace(1e300, 0, 1, dtype=lib.float32),
        ("RuntimeError", "type float without overflow"),
    ),
    "70000, float16": (
        lambda lib: lib.linspace(70000, 0, 3, dtype=lib.float16),
        ("RuntimeError", "c10::Half without overflow"),
    ),
    "65519.0, float16": (
        lambda lib: lib.linspace(0, 65519.0, 3, dtype=lib.float16),
        ("RuntimeError", "c10::Half without overflow"),
    ),
    "1e300, float64 ok": (lambda lib: _bits(lib.linspace(0, 1e300, 3, dtype=lib.float64)), VALUES),
    "300, int8": (lambda lib: lib.linspace(-3, 300, 4, dtype=lib.int8), OVERFLOW),
    "-256, uint8": (
        lambda lib: lib.linspace(-256, 0, 4, dtype=lib.uint8),
        ("RuntimeError", "uint8_t without overflow"),
    ),
    "1e30, int64": (lambda lib: lib.linspace(0, 1e30, 3, dtype=lib.int64), OVERFLOW),
    "2**63, int64": (
        lambda lib: lib.linspace(0, 2**63, 3, dtype=lib.int64),
        ("RuntimeError", "int64_t without overflow"),
    ),
    "2**63, float ok": (lambda lib: _bits(lib.linspace(0, 2**63, 3)), VALUES),
    "2**64": (lambda lib: lib.linspace(0, 2**64, 3), ("OverflowError", "int too big")),
    "-2**63 - 1": (
        lambda lib: lib.linspace(-(2**63) - 1, 0, 3),
        ("OverflowError", "can't convert negative int"),
    ),
    "bool, 3 steps": (
        lambda lib: lib.linspace(0, 1, 3, dtype=lib.bool),
        ("NotImplementedError", "linspace_cpu"),
    ),
    "bool, one step ok": (lambda lib: _bits(lib.linspace(2, 1, 1, dtype=lib.bool)), VALUES),
    "bool, no step ok": (lambda lib: _bits(lib.linspace(2, 1, 0, dtype=lib.bool)), VALUES),
    "negative steps": (
        lambda lib: lib.linspace(0, 1, -1),
        ("RuntimeError", "number of steps must be non-negative"),
    ),
    "1-d start": (
        lambda lib: lib.linspace(lib.tensor([0.0]), 1, 3),
        ("RuntimeError", "but got start with 1 dimension(s)."),
    ),
    "1-d end": (
        lambda lib: lib.linspace(0, lib.tensor([1.0]), 3),
        ("RuntimeError", "but got end with 1 dimension(s)."),
    ),
    "0-d start, 1-d end": (
        lambda lib: lib.linspace(lib.tensor(0.0), lib.ones(1, 1), 3),
        ("RuntimeError", "start with 0 dimension(s) and end with 2 dimension(s)."),
    ),
    "1-d start, negative steps": (
        lambda lib: lib.linspace(lib.tensor([0.0]), 1, -1),
        ("RuntimeError", "only supports 0-dimensional"),
    ),
    "0-d int tensors, uint8 ok": (
        lambda lib: _bits(lib.linspace(lib.tensor(-5), lib.tensor(5), 7, dtype=lib.uint8)),
        VALUES,
    ),
    "0-d tensor with grad ok": (
        lambda lib: _bits(lib.linspace(lib.tensor(0.5, requires_grad=True), 2, 4)),
        VALUES,
    ),
}


@pytest.mark.parametrize("name", LINSPACE_REFUSED)
def test_linspace_refuses_what_its_dtype_cannot_hold_as_torch_does(name):
    _check(*LINSPACE_REFUSED[name])


def _ordinary_ranges(seed, count=60):
    rng = random.Random(seed)
    for _ in range(count):
        digits = rng.randint(0, 3)
        start, end = (round(rng.uniform(-1000, 1000), digits) for _ in range(2))
        yield start, end, rng.choice([2, 3, 5, 7, 10, 11, 50, 100, 101, 1000])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_linspace_of_ordinary_ranges_is_torchs_to_within_the_last_bit(torch, dtype):
    """torch's x86 kernels are compiled with each multiply-add fused (one rounding: an FMA),
    which NumPy has not: teachgrad gives float32 the same numbers (a float64 sum, rounded
    once), float64 those of a torch built without fused multiply-adds (its "default" CPU
    capability). So: both ends exact, the values within a rounding of the ends' size, and
    float32 equal where torch runs its AVX2 or AVX512 kernels."""
    fused = torch.backends.cpu.get_cpu_capability() in ("AVX2", "AVX512")
    for start, end, steps in _ordinary_ranges(seed=len(dtype)):
        theirs = numpy(torch.linspace(start, end, steps, dtype=getattr(torch, dtype)))
        ours = numpy(tg.linspace(start, end, steps, dtype=getattr(tg, dtype)))
        assert ours.dtype == theirs.dtype
        assert ours[0] == np.asarray(start, ours.dtype) and ours[-1] == np.asarray(end, ours.dtype)
        rounding = 2 * np.finfo(ours.dtype).eps * max(abs(start), abs(end))
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=rounding)
        if dtype == "float32" and fused:
            np.testing.assert_array_equal(ours, theirs)


# --------------------------------------------------------------------------- full and tensor

FULL = [
    (-5, "uint8", VALUES),
    (255, "uint8", VALUES),
    (300, "uint8", ("RuntimeError", "uint8_t without overflow")),
    (-256, "uint8", ("RuntimeError", "uint8_t without overflow")),
    (-1.5, "uint8", ("RuntimeError", "uint8_t without overflow")),
    (2.7, "uint8", VALUES),
    (40000, "int16", ("RuntimeError", "int16_t without overflow")),
    (NAN, "int16", ("RuntimeError", "int16_t without overflow")),
    (-129, "int8", ("RuntimeError", "int8_t without overflow")),
    (2**40, "int32", ("RuntimeError", "type int without overflow")),
    (INF, "int64", ("RuntimeError", "int64_t without overflow")),
    (1e300, "float32", ("RuntimeError", "type float without overflow")),
    (-1e300, "float16", ("RuntimeError", "c10::Half without overflow")),
    (65519.0, "float16", ("RuntimeError", "c10::Half without overflow")),
    (65504, "float16", VALUES),
    (INF, "float32", VALUES),
    (NAN, "float16", VALUES),
    (1e300, "float64", VALUES),
    (2**63, "float32", VALUES),
    (2**63, None, ("RuntimeError", "int64_t without overflow")),
    (2**64 - 1, "float64", VALUES),
    (2**64, "float64", ("OverflowError", "int too big to convert")),
    (-(2**63) - 1, "float64", ("OverflowError", "can't convert negative int to unsigned")),
    (2.5, "bool", VALUES),
    (True, "int64", VALUES),
]


@pytest.mark.parametrize("value, dtype, expected", FULL)
def test_full_converts_its_value_as_torch_does(value, dtype, expected):
    """The value becomes a number of the dtype, or torch's error names the C++ type."""
    _check(lambda lib: _bits(lib.full((2,), value, dtype=_dtype(lib, dtype))), expected)


TENSOR_BEYOND_ITS_DTYPE = {
    "1e40 as float32": lambda lib: lib.tensor(1e40, dtype=lib.float32),
    "[1e40, -1e40] as float16": lambda lib: lib.tensor([1e40, -1e40], dtype=lib.float16),
    "[[1.0], [1e300]] as float32": lambda lib: lib.tensor([[1.0], [1e300]], dtype=lib.float32),
    "NumPy 1e40 as float32": lambda lib: lib.tensor(np.array([1e40]), dtype=lib.float32),
    "tensor 1e300 as float32": lambda lib: lib.tensor(
        lib.tensor([1e300], dtype=lib.float64), dtype=lib.float32
    ),
    "as_tensor(NumPy 1e300, float16)": lambda lib: lib.as_tensor(
        np.array([1e300, -3.0]), dtype=lib.float16
    ),
    "new_tensor 1e40 as float32": lambda lib: lib.ones(1).new_tensor([1e40]),
}


@pytest.mark.parametrize("name", TENSOR_BEYOND_ITS_DTYPE)
def test_a_float_too_large_for_its_dtype_becomes_inf_without_a_warning(name):
    _check(lambda lib: _bits(TENSOR_BEYOND_ITS_DTYPE[name](lib)), VALUES)


# --------------------------------------------------------------------------- inference_mode


def _with_inference_mode(mode):
    def program(lib):
        with lib.inference_mode(mode):
            return lib.is_inference_mode_enabled()

    return program


NOT_A_CONTEXT = ("TypeError", "does not support the context manager protocol")


@pytest.mark.parametrize(
    "mode, expected",
    [
        ("a", NOT_A_CONTEXT),
        (1, NOT_A_CONTEXT),
        (0, NOT_A_CONTEXT),
        (None, NOT_A_CONTEXT),
        (1.5, NOT_A_CONTEXT),
        (np.True_, NOT_A_CONTEXT),
        (True, VALUES),
        (False, VALUES),
    ],
)
def test_inference_mode_reads_a_non_bool_as_a_function_to_decorate(mode, expected):
    """torch's ``inference_mode(x)`` decorates ``x`` unless it is a bool: a ``with`` of the
    wrapper it gives back is Python's TypeError; calling the wrapper calls ``x``."""
    _check(_with_inference_mode(mode), expected)

    def decorated(lib):
        return lib.inference_mode(mode)(lib.is_inference_mode_enabled)()

    _check(decorated, VALUES if isinstance(mode, bool) else ("TypeError", "object is not callable"))


def test_inference_mode_by_keyword_reads_its_mode_alike():
    def program(lib, mode):
        with lib.inference_mode(mode=mode):
            return lib.is_inference_mode_enabled()

    _check(lambda lib: program(lib, False), VALUES)
    _check(lambda lib: program(lib, "a"), NOT_A_CONTEXT)


# --------------------------------------------------------------------------- nn.functional


def _F(lib):
    return lib.nn.functional


def _x(lib):
    return lib.ones(2, 3)


def _t(lib):
    return lib.tensor([0, 1])


def _img(lib):
    return lib.ones(1, 1, 4, 4)


def _w(lib):
    return lib.ones(1, 1, 2, 2)


def _refused(fn, argument, position=None):
    """torch's parser's refusal of a non-tensor ``argument`` of ``fn`` (its first line)."""
    where = f" (position {position})" if position else ""
    return "TypeError", f"{fn}(): argument '{argument}'{where} must be Tensor, not "


def _no_size(bad):
    """torch's Python losses read ``.size()`` first: Python's AttributeError."""
    return "AttributeError", f"'{type(bad).__name__}' object has no attribute 'size'"


def _combination(fn):
    return "TypeError", f"{fn}() received an invalid combination of arguments - got ("


# row: (program of the non-tensor ``bad``, torch's error for it[, what torch does for None,
# where None is the tensor's default: not given])
FUNCTIONAL = {
    "linear weight": (
        lambda lib, bad: _F(lib).linear(_x(lib), bad),
        _refused("linear", "weight", 2),
    ),
    "linear input": (
        lambda lib, bad: _F(lib).linear(bad, lib.ones(4, 3)),
        _refused("linear", "input", 1),
    ),
    "linear bias": (
        lambda lib, bad: _F(lib).linear(_x(lib), lib.ones(4, 3), bad),
        _refused("linear", "bias", 3),
        VALUES,
    ),
    "linear bias by keyword": (
        lambda lib, bad: _F(lib).linear(_x(lib), lib.ones(4, 3), bias=bad),
        _refused("linear", "bias"),
        VALUES,
    ),
    "linear 3-d input, bias": (
        lambda lib, bad: _F(lib).linear(lib.ones(2, 2, 3), lib.ones(4, 3), bad),
        _refused("linear", "bias", 3),
        VALUES,
    ),
    "linear 0-d weight, bias": (
        lambda lib, bad: _F(lib).linear(lib.ones(3), lib.tensor(1.0), bad),
        _refused("linear", "bias", 3),
        ("RuntimeError", "both arguments to linear need to be at least 1D"),
    ),
    "linear input by keyword": (
        lambda lib, bad: _F(lib).linear(input=bad, weight=lib.ones(4, 3)),
        _refused("linear", "input"),
    ),
    "cross_entropy target": (
        lambda lib, bad: _F(lib).cross_entropy(_x(lib), bad),
        _refused("cross_entropy_loss", "target", 2),
    ),
    "cross_entropy input": (
        lambda lib, bad: _F(lib).cross_entropy(bad, _t(lib)),
        _refused("cross_entropy_loss", "input", 1),
    ),
    "cross_entropy weight by keyword": (
        lambda lib, bad: _F(lib).cross_entropy(_x(lib), _t(lib), weight=bad),
        _refused("cross_entropy_loss", "weight", 3),
        VALUES,
    ),
    "nll_loss target": (
        lambda lib, bad: _F(lib).nll_loss(_x(lib), bad),
        _refused("nll_loss_nd", "target", 2),
    ),
    "nll_loss input": (
        lambda lib, bad: _F(lib).nll_loss(bad, _t(lib)),
        _refused("nll_loss_nd", "input", 1),
    ),
    "nll_loss weight": (
        lambda lib, bad: _F(lib).nll_loss(_x(lib), _t(lib), weight=bad),
        _refused("nll_loss_nd", "weight", 3),
        VALUES,
    ),
    "mse_loss target": (lambda lib, bad: _F(lib).mse_loss(_x(lib), bad), _no_size),
    "mse_loss input": (lambda lib, bad: _F(lib).mse_loss(bad, _x(lib)), _no_size),
    "mse_loss weight": (
        lambda lib, bad: _F(lib).mse_loss(_x(lib), _x(lib), weight=bad),
        _no_size,
        VALUES,
    ),
    "l1_loss target": (lambda lib, bad: _F(lib).l1_loss(_x(lib), bad), _no_size),
    "l1_loss weight": (
        lambda lib, bad: _F(lib).l1_loss(_x(lib), _x(lib), weight=bad),
        _no_size,
        VALUES,
    ),
    "binary_cross_entropy target": (
        lambda lib, bad: _F(lib).binary_cross_entropy(_x(lib) / 2, bad),
        _no_size,
    ),
    "binary_cross_entropy input": (
        lambda lib, bad: _F(lib).binary_cross_entropy(bad, _x(lib)),
        _no_size,
    ),
    "binary_cross_entropy weight": (
        lambda lib, bad: _F(lib).binary_cross_entropy(_x(lib) / 2, _x(lib), weight=bad),
        _no_size,
        VALUES,
    ),
    "binary_cross_entropy_with_logits target": (
        lambda lib, bad: _F(lib).binary_cross_entropy_with_logits(_x(lib), bad),
        _no_size,
    ),
    "binary_cross_entropy_with_logits weight": (
        lambda lib, bad: _F(lib).binary_cross_entropy_with_logits(_x(lib), _x(lib), weight=bad),
        _refused("binary_cross_entropy_with_logits", "weight", 3),
        VALUES,
    ),
    "binary_cross_entropy_with_logits pos_weight": (
        lambda lib, bad: _F(lib).binary_cross_entropy_with_logits(_x(lib), _x(lib), pos_weight=bad),
        _refused("binary_cross_entropy_with_logits", "pos_weight", 4),
        VALUES,
    ),
    "conv2d weight": (lambda lib, bad: _F(lib).conv2d(_img(lib), bad), _combination("conv2d")),
    "conv2d input": (lambda lib, bad: _F(lib).conv2d(bad, _w(lib)), _combination("conv2d")),
    "conv2d bias": (
        lambda lib, bad: _F(lib).conv2d(_img(lib), _w(lib), bad),
        _combination("conv2d"),
        VALUES,
    ),
    "conv2d weight by keyword": (
        lambda lib, bad: _F(lib).conv2d(_img(lib), weight=bad),
        _combination("conv2d"),
    ),
    "conv2d unbatched, bias by keyword": (
        lambda lib, bad: _F(lib).conv2d(lib.ones(1, 4, 4), _w(lib), bias=bad),
        _combination("conv2d"),
        VALUES,
    ),
    "max_pool2d input": (
        lambda lib, bad: _F(lib).max_pool2d(bad, 2),
        _refused("max_pool2d", "input", 1),
    ),
    "max_pool2d input, with indices": (
        lambda lib, bad: _F(lib).max_pool2d(bad, 2, return_indices=True),
        _refused("max_pool2d_with_indices", "input", 1),
    ),
    "avg_pool2d input": (
        lambda lib, bad: _F(lib).avg_pool2d(bad, 2),
        _refused("avg_pool2d", "input", 1),
    ),
    "embedding input": (
        lambda lib, bad: _F(lib).embedding(bad, lib.ones(3, 2)),
        _refused("embedding", "indices", 2),
    ),
    "embedding weight": (
        lambda lib, bad: _F(lib).embedding(_t(lib), bad),
        _refused("embedding", "weight", 1),
    ),
    "layer_norm input": (
        lambda lib, bad: _F(lib).layer_norm(bad, (3,)),
        _refused("layer_norm", "input", 1),
    ),
    "layer_norm input, bad normalized_shape too": (
        lambda lib, bad: _F(lib).layer_norm(bad, "b"),
        _refused("layer_norm", "input", 1),
    ),
    "layer_norm weight": (
        lambda lib, bad: _F(lib).layer_norm(_x(lib), (3,), bad),
        _refused("layer_norm", "weight", 3),
        VALUES,
    ),
    "layer_norm bias": (
        lambda lib, bad: _F(lib).layer_norm(_x(lib), (3,), bias=bad),
        _refused("layer_norm", "bias", 4),
        VALUES,
    ),
    "dropout input": (lambda lib, bad: _F(lib).dropout(bad), _refused("dropout", "input", 1)),
    "dropout input, not training": (
        lambda lib, bad: _F(lib).dropout(bad, training=False),
        _refused("dropout", "input", 1),
    ),
    "dropout input, p=0": (
        lambda lib, bad: _F(lib).dropout(bad, p=0.0),
        _refused("dropout", "input", 1),
    ),
    "dropout input, in place": (
        lambda lib, bad: _F(lib).dropout(bad, inplace=True),
        _refused("dropout_", "input", 1),
    ),
    "relu input": (lambda lib, bad: _F(lib).relu(bad), _refused("relu", "input", 1)),
    "relu input, in place": (
        lambda lib, bad: _F(lib).relu(bad, inplace=True),
        _refused("relu_", "input", 1),
    ),
    "gelu input": (lambda lib, bad: _F(lib).gelu(bad), _refused("gelu", "input", 1)),
    "silu input": (lambda lib, bad: _F(lib).silu(bad), _refused("silu", "input", 1)),
    "silu input, in place": (
        lambda lib, bad: _F(lib).silu(bad, inplace=True),
        _refused("silu_", "input", 1),
    ),
    "pad input": (lambda lib, bad: _F(lib).pad(bad, (1, 1)), _refused("pad", "input", 1)),
    "one_hot input": (lambda lib, bad: _F(lib).one_hot(bad), _refused("one_hot", "input", 1)),
    "sigmoid input": (
        lambda lib, bad: _F(lib).sigmoid(bad),
        lambda bad: ("AttributeError", f"'{type(bad).__name__}' object has no attribute 'sigmoid'"),
    ),
    "tanh input": (
        lambda lib, bad: _F(lib).tanh(bad),
        lambda bad: ("AttributeError", f"'{type(bad).__name__}' object has no attribute 'tanh'"),
    ),
}
NOT_TENSORS = {"str": "a", "float": 1.5, "list": [1.0, 2.0], "None": None}


@pytest.mark.parametrize("bad", NOT_TENSORS.values(), ids=NOT_TENSORS.keys())
@pytest.mark.parametrize("name", FUNCTIONAL)
def test_functional_refuses_a_non_tensor_as_torch_does(name, bad):
    program, error, *when_none = FUNCTIONAL[name]
    if bad is None and when_none:
        expected = when_none[0]
    else:
        expected = error(bad) if callable(error) else error
    _check(lambda lib: _values(program(lib, bad)), expected)


def _values(result):
    return numpy(result) if hasattr(result, "detach") else result


PAD_AND_DROPOUT = {
    "pad (1.5, 1)": (
        lambda lib: _F(lib).pad(_x(lib), (1.5, 1)),
        ("TypeError", "pad(): argument 'pad' (position 2) must be tuple of ints, but found"),
    ),
    "pad (1, 1.5)": (
        lambda lib: _F(lib).pad(_x(lib), (1, 1.5)),
        ("TypeError", "failed to unpack the object at pos 2"),
    ),
    "pad [1.5, 1] by keyword": (
        lambda lib: _F(lib).pad(_x(lib), pad=[1.5, 1]),
        ("TypeError", "pad(): argument 'pad' (position 2) must be tuple of ints"),
    ),
    "pad 1": (
        lambda lib: _F(lib).pad(_x(lib), 1),
        ("TypeError", "must be tuple of ints, not int"),
    ),
    "pad 'ab'": (
        lambda lib: _F(lib).pad(_x(lib), "ab"),
        ("TypeError", "must be tuple of ints, not str"),
    ),
    "pad None": (
        lambda lib: _F(lib).pad(_x(lib), None),
        ("TypeError", "must be tuple of ints, not NoneType"),
    ),
    "pad (True, 1)": (
        lambda lib: _F(lib).pad(_x(lib), (True, 1)),
        ("TypeError", "found element of type bool at pos 0"),
    ),
    "pad (1, True) ok": (lambda lib: numpy(_F(lib).pad(_x(lib), (1, True))), VALUES),
    "pad (2**63, 1)": (
        lambda lib: _F(lib).pad(_x(lib), (2**63, 1)),
        ("TypeError", "Overflow when unpacking long long"),
    ),
    "pad value='a'": (
        lambda lib: _F(lib).pad(_x(lib), (1, 1), value="a"),
        ("TypeError", "pad(): argument 'value' (position 4) must be float, not str"),
    ),
    "pad mode=1": (
        lambda lib: _F(lib).pad(_x(lib), (1, 1), mode=1),
        ("TypeError", "pad(): argument 'mode' (position 3) must be str, not int"),
    ),
    "pad (1, 2) ok": (lambda lib: numpy(_F(lib).pad(_x(lib), (1, 2), value=3.0)), VALUES),
    "pad (np.int64, tensor) ok": (
        lambda lib: numpy(_F(lib).pad(_x(lib), (np.int64(1), lib.tensor(2)))),
        VALUES,
    ),
    "pad (-1, 0) ok": (lambda lib: numpy(_F(lib).pad(_x(lib), (-1, 0))), VALUES),
    "dropout p=NaN": (
        lambda lib: _F(lib).dropout(_x(lib), p=NAN),
        ("RuntimeError", "dropout probability has to be between 0 and 1, but got nan"),
    ),
    "dropout p=NaN, not training": (
        lambda lib: _F(lib).dropout(_x(lib), p=NAN, training=False),
        ("RuntimeError", "but got nan"),
    ),
    "dropout p=NaN, in place": (
        lambda lib: _F(lib).dropout(_x(lib), p=NAN, inplace=True),
        ("RuntimeError", "but got nan"),
    ),
    "dropout p=NaN, empty": (
        lambda lib: _F(lib).dropout(lib.ones(0), p=NAN),
        ("RuntimeError", "but got nan"),
    ),
    "dropout p=NaN, integers": (
        lambda lib: _F(lib).dropout(lib.ones(2, dtype=lib.int64), p=NAN),
        ("RuntimeError", "but got nan"),
    ),
    "Dropout(NaN) module": (
        lambda lib: lib.nn.Dropout(NAN)(_x(lib)),
        ("RuntimeError", "but got nan"),
    ),
    "Dropout(NaN) module, eval": (
        lambda lib: lib.nn.Dropout(NAN).eval()(_x(lib)),
        ("RuntimeError", "but got nan"),
    ),
    "dropout p=inf": (
        lambda lib: _F(lib).dropout(_x(lib), p=INF),
        ("ValueError", "but got inf"),
    ),
    "dropout p=-0.5": (
        lambda lib: _F(lib).dropout(_x(lib), p=-0.5),
        ("ValueError", "but got -0.5"),
    ),
    "dropout p='a'": (
        lambda lib: _F(lib).dropout(_x(lib), p="a"),
        ("TypeError", "'<' not supported"),
    ),
    "dropout training='a'": (
        lambda lib: _F(lib).dropout(_x(lib), training="a"),
        ("TypeError", "dropout(): argument 'train' (position 3) must be bool, not str"),
    ),
    "dropout training=1, in place": (
        lambda lib: _F(lib).dropout(_x(lib), training=1, inplace=True),
        ("TypeError", "dropout_(): argument 'train' (position 3) must be bool, not int"),
    ),
    "dropout p=0 ok": (lambda lib: numpy(_F(lib).dropout(_x(lib), p=0.0)), VALUES),
    "dropout p=1 ok": (lambda lib: numpy(_F(lib).dropout(_x(lib), p=1.0)), VALUES),
    "dropout p=0.5, not training ok": (
        lambda lib: numpy(_F(lib).dropout(_x(lib), p=0.5, training=False)),
        VALUES,
    ),
}


@pytest.mark.parametrize("name", PAD_AND_DROPOUT)
def test_pad_and_dropout_refuse_what_torch_refuses(name):
    _check(*PAD_AND_DROPOUT[name])


# --------------------------------------------------------------------------- the words for wrong types


def _seed_then_draw(seed):
    """The first numbers after ``manual_seed(seed)``, drawn again after the same seed read as
    an unsigned 64-bit number: equal (the result), as in torch."""

    def program(lib):
        lib.manual_seed(seed)
        first = lib.rand(4)
        lib.manual_seed(seed % 2**64)
        return bool((first == lib.rand(4)).all())

    return program


WORDING = {
    "x.round(decimals=1.5)": (
        lambda lib: _x(lib).round(decimals=1.5),
        ("TypeError", "round(): argument 'decimals' must be int, not float"),
    ),
    "x.round(decimals=True)": (
        lambda lib: _x(lib).round(decimals=True),
        ("TypeError", "round(): argument 'decimals' must be int, not bool"),
    ),
    "x.round(decimals=None)": (
        lambda lib: _x(lib).round(decimals=None),
        ("TypeError", "round(): argument 'decimals' must be int, not NoneType"),
    ),
    "x.round(decimals='a')": (
        lambda lib: _x(lib).round(decimals="a"),
        ("TypeError", "round(): argument 'decimals' must be int, not str"),
    ),
    "x.round(1)": (
        lambda lib: _x(lib).round(1),
        ("TypeError", "round() takes from 1 to 0 positional arguments but 1 were given"),
    ),
    "x.round(foo=1)": (
        lambda lib: _x(lib).round(foo=1),
        ("TypeError", 'round() missing 1 required positional arguments: "decimals"'),
    ),
    "int x.round(decimals=1.5)": (
        lambda lib: _t(lib).round(decimals=1.5),
        ("TypeError", "round(): argument 'decimals' must be int, not float"),
    ),
    "round(x, decimals=1.5)": (
        lambda lib: lib.round(_x(lib), decimals=1.5),
        _combination("round"),
    ),
    "round(x, decimals=True)": (
        lambda lib: lib.round(_x(lib), decimals=True),
        _combination("round"),
    ),
    "round(x, 1)": (lambda lib: lib.round(_x(lib), 1), _combination("round")),
    "round('a')": (
        lambda lib: lib.round("a"),
        ("TypeError", "round(): argument 'input' (position 1) must be Tensor, not str"),
    ),
    "x.round(decimals=1) ok": (
        lambda lib: numpy(lib.tensor([1.25, -2.75, 0.05]).round(decimals=1)),
        VALUES,
    ),
    "x.round(decimals=np.int64(-1)) ok": (
        lambda lib: numpy(lib.tensor([15.0, -250.0]).round(decimals=np.int64(-1))),
        VALUES,
    ),
    "round(x, decimals=2) ok": (
        lambda lib: numpy(lib.round(lib.tensor([1.125, 2.5]), decimals=2)),
        VALUES,
    ),
    "Linear(2, 'a')": (
        lambda lib: lib.nn.Linear(2, "a"),
        ("TypeError", "empty(): argument 'size' (position 1) must be tuple of ints, but found"),
    ),
    "Linear(2, 2.0)": (
        lambda lib: lib.nn.Linear(2, 2.0),
        ("TypeError", "but found element of type float at pos 0"),
    ),
    "Linear('a', 2)": (
        lambda lib: lib.nn.Linear("a", 2),
        ("TypeError", "failed to unpack the object at pos 2"),
    ),
    "Linear(2, 3, bias=False) ok": (
        lambda lib: tuple(lib.nn.Linear(2, 3, bias=False).weight.shape),
        VALUES,
    ),
    "Conv2d(1, 2.0, 3)": (
        lambda lib: lib.nn.Conv2d(1, 2.0, 3),
        ("TypeError", "but found element of type float at pos 0"),
    ),
    "Conv2d(1, 2, 1.5)": (
        lambda lib: lib.nn.Conv2d(1, 2, 1.5),
        ("TypeError", "failed to unpack the object at pos 3"),
    ),
    "LayerNorm('a')": (
        lambda lib: lib.nn.LayerNorm("a"),
        ("TypeError", "but found element of type str at pos 0"),
    ),
    "LayerNorm([2, 3]) ok": (lambda lib: tuple(lib.nn.LayerNorm([2, 3]).weight.shape), VALUES),
    "Embedding('a', 2)": (
        lambda lib: lib.nn.Embedding("a", 2),
        ("TypeError", "but found element of type str at pos 0"),
    ),
    "requires_grad_(requires_grad='a')": (
        lambda lib: _x(lib).requires_grad_(requires_grad="a"),
        ("TypeError", "requires_grad_(): argument 'requires_grad' must be bool, not str"),
    ),
    "requires_grad_(requires_grad=1)": (
        lambda lib: _x(lib).requires_grad_(requires_grad=1),
        ("TypeError", "requires_grad_(): argument 'requires_grad' must be bool, not int"),
    ),
    "requires_grad_(requires_grad=None)": (
        lambda lib: _x(lib).requires_grad_(requires_grad=None),
        ("TypeError", "argument 'requires_grad' must be bool, not NoneType"),
    ),
    "int requires_grad_(requires_grad='a')": (
        lambda lib: _t(lib).requires_grad_(requires_grad="a"),
        ("TypeError", "argument 'requires_grad' must be bool, not str"),
    ),
    "requires_grad_('a')": (
        lambda lib: _x(lib).requires_grad_("a"),
        ("TypeError", "argument 'requires_grad' (position 1) must be bool, not str"),
    ),
    "requires_grad_(True, 1)": (
        lambda lib: _x(lib).requires_grad_(True, 1),
        ("TypeError", "requires_grad_() takes from 0 to 1 positional arguments but 2 were given"),
    ),
    "requires_grad_(requires_grad=False) ok": (
        lambda lib: _x(lib).requires_grad_(requires_grad=False).requires_grad,
        VALUES,
    ),
    "requires_grad_(True) ok": (lambda lib: _x(lib).requires_grad_(True).requires_grad, VALUES),
    "manual_seed(-2**64)": (
        lambda lib: lib.manual_seed(-(2**64)),
        ("ValueError", "Overflow when unpacking long long"),
    ),
    "manual_seed(2**64)": (
        lambda lib: lib.manual_seed(2**64),
        ("ValueError", "Overflow when unpacking long long"),
    ),
    "manual_seed(-2**63 - 1)": (
        lambda lib: lib.manual_seed(-(2**63) - 1),
        ("ValueError", "Overflow when unpacking long long"),
    ),
    "manual_seed('a')": (
        lambda lib: lib.manual_seed("a"),
        ("ValueError", "invalid literal for int()"),
    ),
    "manual_seed(-2**63) ok": (_seed_then_draw(-(2**63)), VALUES),
    "manual_seed(-1) ok": (_seed_then_draw(-1), VALUES),
    "manual_seed(2**64 - 1) ok": (_seed_then_draw(2**64 - 1), VALUES),
    "manual_seed(1.5) ok": (_seed_then_draw(1.5), VALUES),
    # (found by a differential fuzzer)
    "0-d x.expand()": (
        lambda lib: lib.tensor(1.0).expand(),
        ("TypeError", 'expand() missing 1 required positional arguments: "size"'),
    ),
    "0-d x.expand(()) ok": (lambda lib: _bits(lib.tensor(1.0).expand(())), VALUES),
    "expanded x.fill_(tensor)": (
        lambda lib: lib.ones(3).expand(2, 3).fill_(lib.tensor(2.0)),
        ("RuntimeError", "more than one element of the written-to tensor refers to a single"),
    ),
    "expanded x.fill_(2.0) ok": (lambda lib: _bits(lib.ones(3).expand(2, 3).fill_(2.0)), VALUES),
    "expanded x.zero_() ok": (lambda lib: _bits(lib.ones(3).expand(2, 3).zero_()), VALUES),
    "0-d x.scatter(0, [0, 0], 0-d src)": (
        lambda lib: lib.tensor(0.5).scatter(0, lib.tensor([0, 0]), lib.tensor(1.0)),
        (
            "RuntimeError",
            "no larger than self [] apart from dimension 0 and to be no larger size than src []",
        ),
    ),
    # checked in torch's order: the first bad argument is the error
    "split(-1, 2): the size before the dim": (
        lambda lib: lib.ones(4).split(-1, 2),
        ("RuntimeError", "split expects split_size be non-negative, but got split_size=-1"),
    ),
    "split([1, 5], 2): the dim before the sizes": (
        lambda lib: lib.ones(4).split([1, 5], 2),
        ("IndexError", "Dimension out of range (expected to be in range of [-1, 0], but got 2)"),
    ),
    "permute(-1, 2, 5): a repeat before a later bad dim": (
        lambda lib: lib.ones(2, 3, 4).permute(-1, 2, 5),
        ("RuntimeError", "permute(): duplicate dims are not allowed."),
    ),
    "permute(0, 5, 0)": (
        lambda lib: lib.ones(2, 3, 4).permute(0, 5, 0),
        ("IndexError", "Dimension out of range (expected to be in range of [-3, 2], but got 5)"),
    ),
    "view(-1, -2, -1)": (
        lambda lib: lib.ones(4).view(-1, -2, -1),
        ("RuntimeError", "invalid shape dimension -2 at index 1 of shape [-1, -2, -1]"),
    ),
    "view(-1, -1, -2)": (
        lambda lib: lib.ones(4).view(-1, -1, -2),
        ("RuntimeError", "only one dimension can be inferred"),
    ),
    "backward(inputs=[a tensor without grad])": (
        lambda lib: lib.ones(2, requires_grad=True).sum().backward(inputs=[lib.ones(2)]),
        ("RuntimeError", "can't retain_grad on Tensor that has requires_grad=False"),
    ),
    "conv2d of a 1-d weight": (
        lambda lib: lib.nn.functional.conv2d(lib.ones(1, 1, 4, 4), lib.ones(3)),
        ("RuntimeError", "weight should have at least three dimensions"),
    ),
    "conv2d of a 3-d weight, stride=(2, 1)": (
        lambda lib: lib.nn.functional.conv2d(
            lib.ones(1, 1, 4, 4), lib.ones(1, 1, 3), stride=(2, 1)
        ),
        (
            "RuntimeError",
            "a list of 1 values to match the convolution dimensions, but got stride=[2, 1]",
        ),
    ),
    "conv2d of a 5-d weight": (
        lambda lib: lib.nn.functional.conv2d(lib.ones(1, 1, 4, 4), lib.ones(1, 1, 1, 3, 3)),
        (
            "RuntimeError",
            "a list of 3 values to match the convolution dimensions, but got stride=[1, 1]",
        ),
    ),
    "conv2d of one image, a 3-d weight, stride=(1, 2, 3)": (
        lambda lib: lib.nn.functional.conv2d(
            lib.ones(1, 4, 4), lib.ones(1, 1, 3), stride=(1, 2, 3)
        ),
        (
            "RuntimeError",
            "a list of 1 values to match the convolution dimensions, but got stride=[1, 2, 3]",
        ),
    ),
    "embedding of a weight with no rows": (
        lambda lib: lib.nn.functional.embedding(lib.tensor([[0]]), lib.ones(0, 4)),
        ("RuntimeError", "index_select(): self indexing axis dim should be positive"),
    ),
    "embedding of nothing from no rows ok": (
        lambda lib: _bits(
            lib.nn.functional.embedding(lib.tensor([], dtype=lib.int64), lib.ones(0, 4))
        ),
        VALUES,
    ),
    "x.scatter_add(0, [0, 0], 0-d src)": (
        lambda lib: lib.zeros(3).scatter_add(0, lib.tensor([0, 0]), lib.tensor(1.0)),
        (
            "RuntimeError",
            "no larger than self [3] apart from dimension 0 and to be no larger size than src []",
        ),
    ),
}


@pytest.mark.parametrize("name", WORDING)
def test_wrong_types_are_worded_as_torch_words_them(name):
    _check(*WORDING[name])


TO_KEYWORDS = [
    ({"dtype": "float32"}, ("TypeError", "to() received an invalid combination of arguments")),
    ({"dtype": 3}, ("TypeError", "got (dtype=int, )")),
    ({"device": 1.5}, ("TypeError", "got (device=float, )")),
    ({"copy": "a"}, ("TypeError", "got (copy=str, )")),
    ({"non_blocking": "a"}, ("TypeError", "got (non_blocking=str, )")),
    ({"dtype": float}, VALUES),
    ({"dtype": None, "device": None}, VALUES),
    ({"device": "cpu", "copy": True}, VALUES),
]


@pytest.mark.parametrize("kwargs, expected", TO_KEYWORDS, ids=str)
def test_to_refuses_keywords_of_the_wrong_type(kwargs, expected):
    """``x.to(dtype="float32")`` names the dtype as a string, which torch's ``to`` refuses
    (as it refuses a number as the dtype, a float as the device, a non-bool flag)."""
    _check(lambda lib: _bits(lib.ones(2).to(**kwargs)), expected)


def _small(lib, dtype, value=0):
    return lib.full((2,), value, dtype=getattr(lib, dtype))


INTS_OUT_OF_RANGE = {  # (program, what torch does)
    "uint8 + 256 wraps": (lambda lib: _small(lib, "uint8") + 256, VALUES),
    "uint8 - 1 wraps": (lambda lib: _small(lib, "uint8") - 1, VALUES),
    "uint8 + (-1) wraps": (lambda lib: _small(lib, "uint8") + (-1), VALUES),
    "300 - uint8 wraps": (lambda lib: 300 - _small(lib, "uint8"), VALUES),
    "int8 * 200 wraps": (lambda lib: _small(lib, "int8", 1) * 200, VALUES),
    "uint8 == 256": (lambda lib: _small(lib, "uint8") == 256, VALUES),
    "uint8 // 300": (lambda lib: _small(lib, "uint8", 7) // 300, VALUES),
    "uint8 // 256 (0)": (lambda lib: _small(lib, "uint8", 7) // 256, ("RuntimeError", "ZeroDivisionError")),
    "uint8.add_(300)": (lambda lib: _small(lib, "uint8").add_(300), VALUES),
    "int16 + 40000": (lambda lib: _small(lib, "int16") + 40000, VALUES),
    "int64 + 2**63": (lambda lib: _small(lib, "int64") + 2**63, VALUES),
    "int64 + 2**64": (lambda lib: _small(lib, "int64") + 2**64, ("OverflowError", "int too big")),
    "int16.fill_(70000)": (lambda lib: _small(lib, "int16").fill_(70000), ("RuntimeError", "int16_t")),
    "uint8.fill_(-1) wraps": (lambda lib: _small(lib, "uint8").fill_(-1), VALUES),
    "float32.fill_(1e300)": (lambda lib: _small(lib, "float32").fill_(1e300), ("RuntimeError", "type float")),
    "int64.fill_(nan)": (lambda lib: _small(lib, "int64").fill_(NAN), ("RuntimeError", "int64_t")),
    "float32.fill_(2**70)": (lambda lib: _small(lib, "float32").fill_(2**70), ("OverflowError", "int too big")),
    "uint8[0] = 300": (lambda lib: _small(lib, "uint8").__setitem__(0, 300), ("RuntimeError", "uint8_t")),
    "uint8[0] = -1 wraps": (lambda lib: _setitem(_small(lib, "uint8"), 0, -1), VALUES),
    "int8[:] = 300": (lambda lib: _small(lib, "int8").__setitem__(slice(None), 300), ("RuntimeError", "int8_t")),
    # (found by a differential fuzzer)
    "add(uint8, -3, alpha=2) wraps": (lambda lib: lib.add(_small(lib, "uint8"), -3, alpha=2), VALUES),
    "add(uint8, 3, alpha=-2) wraps": (lambda lib: lib.add(_small(lib, "uint8"), 3, alpha=-2), VALUES),
    "uint8.clamp(-3) wraps": (lambda lib: _small(lib, "uint8").clamp(-3), VALUES),
    "uint8.clamp(max=300)": (lambda lib: _small(lib, "uint8").clamp(max=300), ("RuntimeError", "uint8_t")),
    "int8.clamp(-129)": (lambda lib: _small(lib, "int8").clamp(-129), ("RuntimeError", "int8_t")),
    "uint8.masked_fill(m, -1) wraps": (lambda lib: _small(lib, "uint8").masked_fill(_mask(lib), -1), VALUES),
    "uint8.masked_fill(m, 300)": (lambda lib: _small(lib, "uint8").masked_fill(_mask(lib), 300), ("RuntimeError", "uint8_t")),
    "uint8.masked_fill(m, -0.5)": (lambda lib: _small(lib, "uint8").masked_fill(_mask(lib), -0.5), ("RuntimeError", "uint8_t")),
    "int64.masked_fill(m, inf)": (lambda lib: _small(lib, "int64").masked_fill(_mask(lib), INF), ("RuntimeError", "int64_t")),
    "int64.masked_fill(m, nan)": (lambda lib: _small(lib, "int64").masked_fill(_mask(lib), NAN), ("RuntimeError", "int64_t")),
    "where(m, uint8, -1) wraps": (lambda lib: lib.where(_mask(lib), _small(lib, "uint8"), -1), VALUES),
    "where(m, uint8, 300)": (lambda lib: lib.where(_mask(lib), _small(lib, "uint8"), 300), ("RuntimeError", "uint8_t")),
}  # fmt: skip


def _mask(lib):
    return lib.tensor([True, False])


def _setitem(t, key, value):
    t[key] = value
    return t


@pytest.mark.parametrize(
    "program, expected", INTS_OUT_OF_RANGE.values(), ids=INTS_OUT_OF_RANGE.keys()
)
def test_python_ints_beyond_a_small_dtype_as_torch(program, expected):
    """A Python int beside an integer tensor in arithmetic wraps around as C casts it (256 in
    uint8 is 0: NumPy refuses it), while a number written into a tensor (``fill_``,
    ``x[i] = v``) must fit its dtype, as torch converts it (a negative one wraps in uint8)."""
    _check(lambda lib: _bits(program(lib)), expected)

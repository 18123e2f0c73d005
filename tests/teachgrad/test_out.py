"""``out=`` (teachgrad/_out.py), compared with torch: every function that takes it, with
``out`` of each dtype and of the right shape, of none, and of another one with elements.

Each call runs on both libraries and must give the same outcome: the same exception class
and first line, or the same values, dtype, shape, warnings (first lines), and ``out``
itself returned with its version moved on.
"""

import functools
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad import ops
from tests.teachgrad.ops._cases import first_line

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _a(lib):
    return lib.tensor([[1.0, -2.0], [3.0, 0.5]])


def _b(lib):
    return lib.tensor([[True, False], [True, True]])


def _i(lib):
    return lib.tensor([[0, 1], [1, 0]])


def _v(lib):
    return lib.tensor([1.0, 2.0])


# name -> the arguments, for a library (``out=`` comes on top)
CALLS = {
    "abs": lambda L: (_a(L),),
    "add": lambda L: (_a(L), _a(L)),
    "addbmm": lambda L: (_a(L), L.ones(3, 2, 2), L.ones(3, 2, 2)),
    "addcdiv": lambda L: (_a(L), _a(L), _a(L) + 1),
    "addcmul": lambda L: (_a(L), _a(L), _a(L)),
    "all": lambda L: (_b(L),),
    "amax": lambda L: (_a(L), 0),
    "amin": lambda L: (_a(L), 0),
    "any": lambda L: (_b(L),),
    "argmax": lambda L: (_a(L), 0),
    "argmin": lambda L: (_a(L), 0),
    "arctan2": lambda L: (_a(L), _a(L)),
    "atan2": lambda L: (_a(L), _a(L)),
    "bmm": lambda L: (L.ones(2, 2, 2), L.ones(2, 2, 2)),
    "cat": lambda L: ([_a(L), _a(L)],),
    "ceil": lambda L: (_a(L),),
    "clamp": lambda L: (_a(L), 0.0, 1.0),
    "clip": lambda L: (_a(L), 0.0, 1.0),
    "cos": lambda L: (_a(L),),
    "cumsum": lambda L: (_a(L), 0),
    "div": lambda L: (_a(L), _a(L)),
    "dot": lambda L: (_v(L), _v(L)),
    "eq": lambda L: (_a(L), _a(L)),
    "exp": lambda L: (_a(L),),
    "expm1": lambda L: (_a(L),),
    "floor": lambda L: (_a(L),),
    "floor_divide": lambda L: (_a(L), _a(L)),
    "fmod": lambda L: (_a(L), 2.0),
    "gather": lambda L: (_a(L), 1, _i(L)),
    "ge": lambda L: (_a(L), _a(L)),
    "gt": lambda L: (_a(L), _a(L)),
    "index_select": lambda L: (_a(L), 0, L.tensor([1, 0])),
    "le": lambda L: (_a(L), _a(L)),
    "lerp": lambda L: (_a(L), _a(L), 0.25),
    "log": lambda L: (_a(L).abs(),),
    "log1p": lambda L: (_a(L).abs(),),
    "log_softmax": lambda L: (_a(L), 0),
    "logical_and": lambda L: (_b(L), _b(L)),
    "logical_not": lambda L: (_b(L),),
    "logical_or": lambda L: (_b(L), _b(L)),
    "logical_xor": lambda L: (_b(L), _b(L)),
    "logsumexp": lambda L: (_a(L), 0),
    "lt": lambda L: (_a(L), _a(L)),
    "matmul": lambda L: (_a(L), _a(L)),
    "max": lambda L: (_a(L),),
    "maximum": lambda L: (_a(L), _a(L)),
    "mean": lambda L: (_a(L), 0),
    "median": lambda L: (_a(L), 0),  # (torch's median() of all elements has no out=)
    "min": lambda L: (_a(L),),
    "minimum": lambda L: (_a(L), _a(L)),
    "mm": lambda L: (_a(L), _a(L)),
    "mul": lambda L: (_a(L), _a(L)),
    "mv": lambda L: (_a(L), _v(L)),
    "nanmedian": lambda L: (_a(L), 0),
    "ne": lambda L: (_a(L), _a(L)),
    "neg": lambda L: (_a(L),),
    "nextafter": lambda L: (_a(L), _v(L)),
    "igamma": lambda L: (_a(L).abs(), _a(L).abs()),
    "igammac": lambda L: (_a(L).abs(), _a(L).abs()),
    "norm": lambda L: (_a(L),),
    "outer": lambda L: (_v(L), _v(L)),
    "pow": lambda L: (_a(L), 2),
    "prod": lambda L: (_a(L), 0),
    "qr": lambda L: (_a(L),),  # (two results: out must be a tuple of two tensors)
    "reciprocal": lambda L: (_a(L),),
    "remainder": lambda L: (_a(L), 2.0),
    "round": lambda L: (_a(L),),
    "rsqrt": lambda L: (_a(L).abs(),),
    "scatter": lambda L: (_a(L), 1, _i(L), _a(L)),
    "scatter_add": lambda L: (_a(L), 1, _i(L), _a(L)),
    "sigmoid": lambda L: (_a(L),),
    "sign": lambda L: (_a(L),),
    "sin": lambda L: (_a(L),),
    "softmax": lambda L: (_a(L), 0),
    "sqrt": lambda L: (_a(L).abs(),),
    "square": lambda L: (_a(L),),
    "stack": lambda L: ([_a(L), _a(L)],),
    "std": lambda L: (_a(L), 0),
    "sub": lambda L: (_a(L), _a(L)),
    "sum": lambda L: (_a(L), 0),
    "tan": lambda L: (_a(L),),
    "tanh": lambda L: (_a(L),),
    "tril": lambda L: (_a(L),),
    "triu": lambda L: (_a(L),),
    "var": lambda L: (_a(L), 0),
    "where": lambda L: (_b(L), _a(L), _a(L)),
    # functions that make a tensor: it gets out's dtype
    "zeros": lambda L: (2, 2),
    "ones": lambda L: (3,),
    "full": lambda L: ((2,), 3.0),
    "arange": lambda L: (3,),
    "linspace": lambda L: (0.0, 1.0, 3),
    "eye": lambda L: (2,),
    # tg.linalg's norms
    "linalg.vector_norm": lambda L: (_a(L),),
    "linalg.matrix_norm": lambda L: (_a(L), 1),
    "linalg.norm": lambda L: (_v(L), 3),
    "linalg.qr": lambda L: (_a(L),),
}
RANDOM = {"randn": (2, 2), "rand": (3,), "randint": (0, 5, (4,)), "empty": (2, 3)}
OUTS = {  # name -> out, for a library
    "float32, empty": lambda L: L.empty(0),
    "float64, empty": lambda L: L.empty(0, dtype=L.float64),
    "int64, empty": lambda L: L.empty(0, dtype=L.int64),
    "bool, empty": lambda L: L.empty(0, dtype=L.bool),
    "float32, 3 elements": lambda L: L.zeros(3),
    "int64, 3 elements": lambda L: L.zeros(3, dtype=L.int64),
}


def _outcome(lib, name, out_name, calls=CALLS):
    """What ``lib.<name>(*args, out=out)`` does: the error, or the facts of ``out``."""
    out = OUTS[out_name](lib)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = _function(lib, name)(*calls[name](lib), out=out)
        except Exception as error:  # noqa: BLE001 - the outcome compared
            return ("raises", type(error).__name__, first_line(error))
    said = sorted({str(w.message).split("(Triggered internally")[0].strip() for w in caught})
    values = out.detach().cpu().numpy()
    return ("writes", result is out, out._version > 0, str(out.dtype).split(".")[-1],
            tuple(out.shape), values.tolist(), said)  # fmt: skip


def _function(lib, name: str):
    """``lib.<name>``, for a dotted name too (``linalg.norm``)."""
    return functools.reduce(getattr, name.split("."), lib)


def test_the_functions_that_take_out_are_torchs(torch):
    """The table of functions that take ``out=`` is torch's: each of them takes it, and
    the other public functions refuse it as torch does (TypeError)."""
    for name in ops.__all__:
        takes = name in ops.OUT_FUNCTIONS
        if name in CALLS:
            assert takes == _takes_out(torch, name), name
        elif not takes and callable(getattr(torch, name, None)) and name != "return_types":
            with pytest.raises(TypeError):
                getattr(tg, name)(tg.ones(2), out=tg.empty(0))
    assert set(ops.OUT_FUNCTIONS) <= set(CALLS)


def _takes_out(torch, name) -> bool:
    """Whether torch's ``name`` takes ``out=`` (a RuntimeError about out's dtype says yes;
    so does qr's TypeError asking for a tuple: its out is ``(Q, R)``)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            getattr(torch, name)(*CALLS[name](torch), out=OUTS["float32, empty"](torch))
        except TypeError as error:
            return name == "qr" and "must be tuple of Tensors" in str(error)
        except RuntimeError:
            pass
    return True


@pytest.mark.parametrize("out_name", list(OUTS))
@pytest.mark.parametrize("name", list(CALLS))
def test_out_as_torch(torch, name, out_name):
    theirs = _outcome(torch, name, out_name)
    ours = _outcome(tg, name, out_name)
    if theirs[0] == "writes" and ours[0] == "writes":
        np.testing.assert_allclose(np.array(ours[5], float), np.array(theirs[5], float), rtol=1e-6)
        theirs, ours = theirs[:5] + theirs[6:], ours[:5] + ours[6:]
    assert ours == theirs


# calls whose rule for out's dtype is another than their function's usual one
OTHER_KERNELS = {"lerp": lambda L: (_a(L), _a(L), L.full((2, 2), 0.25))}  # (a tensor weight)


@pytest.mark.parametrize("out_name", list(OUTS))
@pytest.mark.parametrize("name", list(OTHER_KERNELS))
def test_out_as_torch_where_the_arguments_choose_the_kernel(torch, name, out_name):
    theirs = _outcome(torch, name, out_name, OTHER_KERNELS)
    assert _outcome(tg, name, out_name, OTHER_KERNELS) == theirs


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_functions_fill_out_with_its_dtype(torch, name):
    for lib in (tg, torch):
        for dtype in (lib.float64, lib.int64) if name in ("randint", "empty") else (lib.float64,):
            out = lib.empty(0, dtype=dtype)
            assert getattr(lib, name)(*RANDOM[name], out=out) is out
            assert out.dtype == dtype and tuple(out.shape) == (
                RANDOM[name][-1] if name == "randint" else RANDOM[name]
            )


def _refused(lib, fn):
    try:
        fn(lib)
    except RuntimeError as error:
        return first_line(error)
    return None


@pytest.mark.parametrize(
    "call",
    [
        lambda L: L.mul(L.ones(2, requires_grad=True), L.ones(2), out=L.zeros(2)),
        lambda L: L.mul(L.ones(2), L.ones(2), out=L.zeros(2, requires_grad=True)),
        lambda L: L.cat([L.ones(2, requires_grad=True), L.ones(2)], out=L.zeros(4)),
        lambda L: L.exp(L.ones(2, requires_grad=True) * 2, out=L.zeros(2)),
    ],
)
def test_no_graph_goes_through_out(torch, call):
    """torch's test_out_variant_raises_when_inputs_require_grad, and its variations."""
    theirs = _refused(torch, call)
    assert theirs is not None and "out=... arguments don't support automatic" in theirs
    assert _refused(tg, call) == theirs


def test_under_no_grad_out_takes_inputs_that_require_grad(torch):
    for lib in (tg, torch):
        a = lib.ones(2, requires_grad=True)
        out = lib.zeros(2, requires_grad=True)
        with lib.no_grad():
            assert lib.mul(a, 3.0, out=out) is out
        assert out.requires_grad and out.is_leaf and out.grad_fn is None
        assert out.tolist() == [3.0, 3.0]


def test_out_keeps_its_strides_and_may_be_an_input(torch):
    for lib in (tg, torch):
        out = lib.zeros(2, 3).t()
        lib.add(lib.ones(3, 2), 1.0, out=out)
        assert out.stride() == (1, 3) and out.tolist() == [[2.0, 2.0]] * 3
        x = lib.zeros(2)
        assert lib.exp(x, out=x) is x and x.tolist() == [1.0, 1.0] and x._version == 1


def test_a_view_given_as_out_writes_into_its_base(torch):
    for lib in (tg, torch):
        base = lib.zeros(4, 2)
        lib.mul(lib.ones(2, 2), 2.0, out=base[1:3])
        assert base.tolist() == [[0.0, 0.0], [2.0, 2.0], [2.0, 2.0], [0.0, 0.0]]


def test_writing_out_is_a_change_a_saved_tensor_sees(torch):
    for lib in (tg, torch):
        x = lib.ones(2, requires_grad=True)
        h = x * 1.0
        y = h * h
        with lib.no_grad():
            lib.add(lib.ones(2), 1.0, out=h)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            y.sum().backward()


def test_the_results_of_max_and_min_along_a_dim_go_into_a_tuple(torch):
    for lib in (tg, torch):
        values, indices = lib.empty(0), lib.empty(0, dtype=lib.int64)
        got = lib.max(_a(lib), 1, out=(values, indices))
        assert got[0] is values and got[1] is indices
        assert values.tolist() == [1.0, 3.0] and indices.tolist() == [0, 0]
    with pytest.raises(TypeError, match="received an invalid combination of arguments"):
        torch.max(_a(torch), 1, out=torch.empty(0))
    with pytest.raises(TypeError, match="received an invalid combination of arguments"):
        tg.max(_a(tg), 1, out=tg.empty(0))


def test_out_must_be_a_tensor(torch):
    for lib in (tg, torch):
        with pytest.raises(TypeError, match="exp\\(\\): argument 'out' must be Tensor, not int"):
            lib.exp(lib.ones(2), out=5)


def test_an_inference_tensor_as_out_outside_inference_mode(torch):
    lines = []
    for lib in (tg, torch):
        with lib.inference_mode():
            out = lib.zeros(2)
        with pytest.raises(RuntimeError) as raised:
            lib.exp(lib.ones(2), out=out)
        lines.append(first_line(raised.value))
    assert lines[0] == lines[1] and "inference tensor" in lines[0]


@pytest.mark.parametrize("requires_grad", [False, True])
def test_only_inference_tensors_in_and_out_skip_autograd(torch, requires_grad):
    """torch's inference tensors skip autograd: with nothing else, ``out=`` meets only the
    in-place check on ``out`` (which requires grad or not)."""
    lines = []
    for lib in (tg, torch):
        with lib.inference_mode():
            c = lib.ones(2, requires_grad=requires_grad)
        with pytest.raises(RuntimeError) as raised:
            lib.mul(c, c, out=c)
        lines.append(first_line(raised.value))
    assert lines[0] == lines[1] and "Inplace update to inference tensor" in lines[0]


@pytest.mark.parametrize("dual_is", ["out", "input"])
def test_no_tangent_goes_through_out(torch, dual_is):
    """torch's test_out_variant (forward AD), also under no_grad and for cat."""
    lines = []
    for lib in (tg, torch):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level(), lib.no_grad():
            dual = fwAD.make_dual(lib.ones(2), lib.ones(2))
            plain = lib.ones(2)
            with pytest.raises(NotImplementedError) as raised:
                if dual_is == "out":
                    lib.cat([plain, plain], out=fwAD.make_dual(lib.ones(4), lib.ones(4)))
                else:
                    lib.add(dual, plain, out=plain)
        lines.append(first_line(raised.value))
    assert lines[0] == lines[1] and "Trying to use forward AD with" in lines[0]

"""Bad input to the factories, grad modes, devices, tensor attributes and indexing fails
exactly as in torch.

Each row is one call, written once for both libraries (``lambda lib: lib.zeros(-1)``).
torch must refuse it (else the row tests nothing), and teachgrad must raise the same
exception class with the same first line, torch's module name read as teachgrad's;
teachgrad may add lines that teach. The rows cover each factory with arguments of the
wrong type, negative and too large sizes, dtypes and devices given as bad strings,
ragged nested lists, ranges that never end, the grad-mode switches, a tensor's
attributes set to what they can't hold, and keys that are no index (floats, strings).

``DIFFERS`` lists the few rows where teachgrad can't say torch's words, and why; there
the rest of the line must still be torch's.
"""

import operator
import warnings

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.ops._cases import assert_same_error

INF, NAN = float("inf"), float("nan")
HUGE = 10**12  # elements: terabytes, more memory than any machine here has

SIZED = ("zeros", "ones", "empty", "rand", "randn")
LIKE = ("zeros_like", "ones_like", "empty_like", "rand_like", "randn_like")


def _sized(name):
    """The size arguments every ``zeros``-like factory must refuse."""
    f = lambda lib: getattr(lib, name)
    return {
        f"{name}(-1)": lambda lib: f(lib)(-1),
        f"{name}((2, -3))": lambda lib: f(lib)((2, -3)),
        f"{name}(2.5)": lambda lib: f(lib)(2.5),
        f"{name}('3')": lambda lib: f(lib)("3"),
        f"{name}(None)": lambda lib: f(lib)(None),
        f"{name}(True)": lambda lib: f(lib)(True),
        f"{name}([2.0, 3.0])": lambda lib: f(lib)([2.0, 3.0]),
        f"{name}([2, 3.0])": lambda lib: f(lib)([2, 3.0]),
        f"{name}(2, 3.0)": lambda lib: f(lib)(2, 3.0),
        f"{name}(2, None)": lambda lib: f(lib)(2, None),
        f"{name}((2,), 3)": lambda lib: f(lib)((2,), 3),
        f"{name}(2.5, 3)": lambda lib: f(lib)(2.5, 3),
        f"{name}(huge)": lambda lib: f(lib)(HUGE),
        f"{name}(2**62, 2**62)": lambda lib: f(lib)(2**62, 2**62),
        f"{name}(2**62)": lambda lib: f(lib)(2**62),
        f"{name}(2**64)": lambda lib: f(lib)(2**64),
        f"{name}(2, 2**64)": lambda lib: f(lib)(2, 2**64),
        f"{name}(dtype='float32')": lambda lib: f(lib)(2, dtype="float32"),
        f"{name}(dtype=np.float32)": lambda lib: f(lib)(2, dtype=np.float32),
        f"{name}(device='gpu')": lambda lib: f(lib)(2, device="gpu"),
        f"{name}(device='cuda:x')": lambda lib: f(lib)(2, device="cuda:x"),
        f"{name}(device=1.5)": lambda lib: f(lib)(2, device=1.5),
        f"{name}(device=-1)": lambda lib: f(lib)(2, device=-1),
        f"{name}(requires_grad='yes')": lambda lib: f(lib)(2, requires_grad="yes"),
    }


def _like(name):
    """What every ``zeros_like``-like factory must refuse."""
    f = lambda lib: getattr(lib, name)
    return {
        f"{name}([1.0])": lambda lib: f(lib)([1.0, 2.0]),
        f"{name}(None)": lambda lib: f(lib)(None),
        f"{name}(ndarray)": lambda lib: f(lib)(np.ones(2)),
        f"{name}(dtype='float32')": lambda lib: f(lib)(lib.ones(2), dtype="float32"),
        f"{name}(device='gpu')": lambda lib: f(lib)(lib.ones(2), device="gpu"),
        f"{name}(requires_grad='yes')": lambda lib: f(lib)(lib.ones(2), requires_grad="yes"),
    }


TENSOR = {
    "tensor ragged": lambda lib: lib.tensor([[1, 2], [3]]),
    "tensor ragged, longer": lambda lib: lib.tensor([[1], [2, 3]]),
    "tensor ragged, last row": lambda lib: lib.tensor([[1, 2], [3, 4], [5]]),
    "tensor ragged, deeper": lambda lib: lib.tensor([[[1, 2]], [[3]]]),
    "tensor ragged, empty row": lambda lib: lib.tensor([[1], []]),
    "tensor ragged tuples": lambda lib: lib.tensor(((1, 2), (3,))),
    "tensor number then list": lambda lib: lib.tensor([1, [2]]),
    "tensor number then list, float": lambda lib: lib.tensor([1, [2]], dtype=lib.float32),
    "tensor bool then list": lambda lib: lib.tensor([True, [1]]),
    "tensor list then number": lambda lib: lib.tensor([[1], 2]),
    "tensor list then number, deeper": lambda lib: lib.tensor([[[1]], [2]]),
    "tensor('abc')": lambda lib: lib.tensor("abc"),
    "tensor(b'ab')": lambda lib: lib.tensor(b"ab"),
    "tensor(['a'])": lambda lib: lib.tensor(["a"]),
    "tensor(['a', 1])": lambda lib: lib.tensor(["a", 1]),
    "tensor([1, 'a'])": lambda lib: lib.tensor([1, "a"]),
    "tensor([[1, 2], 'ab'])": lambda lib: lib.tensor([[1, 2], "ab"]),
    "tensor(None)": lambda lib: lib.tensor(None),
    "tensor([1.0, None])": lambda lib: lib.tensor([1.0, None]),
    "tensor([[1], None])": lambda lib: lib.tensor([[1], None]),
    "tensor({1: 2})": lambda lib: lib.tensor({1: 2}),
    "tensor(set)": lambda lib: lib.tensor({1}),
    "tensor(iterator)": lambda lib: lib.tensor(iter([1])),
    "tensor(object())": lambda lib: lib.tensor(object()),
    "tensor(2**63)": lambda lib: lib.tensor(2**63),
    "tensor(-2**63 - 1)": lambda lib: lib.tensor(-(2**63) - 1),
    "tensor([1, 2**64])": lambda lib: lib.tensor([1, 2**64]),
    "tensor(dtype='float32')": lambda lib: lib.tensor([1.0], dtype="float32"),
    "tensor(dtype=3)": lambda lib: lib.tensor([1.0], dtype=3),
    "tensor(dtype=np.float32)": lambda lib: lib.tensor([1.0], dtype=np.float32),
    "tensor(requires_grad='yes')": lambda lib: lib.tensor([1.0], requires_grad="yes"),
    "tensor(requires_grad=1)": lambda lib: lib.tensor([1.0], requires_grad=1),
    "tensor(requires_grad=None)": lambda lib: lib.tensor([1.0], requires_grad=None),
    "tensor(requires_grad=np.bool_)": lambda lib: lib.tensor([1.0], requires_grad=np.True_),
    "tensor(int, requires_grad)": lambda lib: lib.tensor([1], requires_grad=True),
    "tensor(pin_memory='x')": lambda lib: lib.tensor([1.0], pin_memory="x"),
    "tensor(device='gpu')": lambda lib: lib.tensor([1.0], device="gpu"),
    "tensor(device='cuda:x')": lambda lib: lib.tensor([1.0], device="cuda:x"),
    "tensor(device=1.5)": lambda lib: lib.tensor([1.0], device=1.5),
    "tensor(device=-1)": lambda lib: lib.tensor([1.0], device=-1),
    "tensor(foo=1)": lambda lib: lib.tensor([1.0], foo=1),
    "tensor()": lambda lib: lib.tensor(),
    "as_tensor ragged": lambda lib: lib.as_tensor([[1, 2], [3]]),
    "as_tensor('abc')": lambda lib: lib.as_tensor("abc"),
    "as_tensor(None)": lambda lib: lib.as_tensor(None),
    "as_tensor(dtype='float32')": lambda lib: lib.as_tensor([1.0], dtype="float32"),
    "as_tensor(device=1.5)": lambda lib: lib.as_tensor([1.0], device=1.5),
    "from_numpy(list)": lambda lib: lib.from_numpy([1, 2]),
    "from_numpy(strings)": lambda lib: lib.from_numpy(np.array(["a"])),
    "from_numpy(objects)": lambda lib: lib.from_numpy(np.array([object()])),
}

FULL = {
    "full((-1,), 1.0)": lambda lib: lib.full((-1,), 1.0),
    "full(2, 1.0)": lambda lib: lib.full(2, 1.0),
    "full(2.5, 1.0)": lambda lib: lib.full(2.5, 1.0),
    "full([2.0], 1.0)": lambda lib: lib.full([2.0], 1.0),
    "full((2, 2.0), 1.0)": lambda lib: lib.full((2, 2.0), 1.0),
    "full((2,), 'a')": lambda lib: lib.full((2,), "a"),
    "full((2,), None)": lambda lib: lib.full((2,), None),
    "full((2,), tensor of 2)": lambda lib: lib.full((2,), lib.ones(2)),
    "full((2,), 1.0, 5)": lambda lib: lib.full((2,), 1.0, 5),
    "full((2,))": lambda lib: lib.full((2,)),
    "full(huge)": lambda lib: lib.full((HUGE,), 1.0),
    "full((2**62, 4))": lambda lib: lib.full((2**62, 4), 1.0),
    "full(dtype='float32')": lambda lib: lib.full((2,), 1.0, dtype="float32"),
    "full(inf, int64)": lambda lib: lib.full((2,), INF, dtype=lib.int64),
    "full(nan, int64)": lambda lib: lib.full((2,), NAN, dtype=lib.int64),
    "full(inf, int32)": lambda lib: lib.full((2,), INF, dtype=lib.int32),
    "full(2**40, int32)": lambda lib: lib.full((2,), 2**40, dtype=lib.int32),
    "full(2**70)": lambda lib: lib.full((2,), 2**70),
    "full_like([1.0], 2.0)": lambda lib: lib.full_like([1.0], 2.0),
    "full_like(x, 'a')": lambda lib: lib.full_like(lib.ones(2), "a"),
    "full_like(x, None)": lambda lib: lib.full_like(lib.ones(2), None),
    "full_like(x, 2, 3)": lambda lib: lib.full_like(lib.ones(2), 2, 3),
    "rand_like(int)": lambda lib: lib.rand_like(lib.ones(2, dtype=lib.int64)),
    "randn_like(int)": lambda lib: lib.randn_like(lib.ones(2, dtype=lib.int64)),
    "rand(int64)": lambda lib: lib.rand(2, dtype=lib.int64),
    "rand(int32)": lambda lib: lib.rand(2, dtype=lib.int32),
    "rand(bool)": lambda lib: lib.rand(2, dtype=lib.bool),
    "randn(int64)": lambda lib: lib.randn(2, dtype=lib.int64),
    "randn(bool)": lambda lib: lib.randn(2, dtype=lib.bool),
    "randn(generator='x')": lambda lib: lib.randn(2, generator="x"),
    "rand()": lambda lib: lib.rand(),
    "randn()": lambda lib: lib.randn(),
    "zeros()": lambda lib: lib.zeros(),
    "ones()": lambda lib: lib.ones(),
    "zeros(foo=1)": lambda lib: lib.zeros(2, foo=1),
    "new_zeros(-1)": lambda lib: lib.ones(2).new_zeros(-1),
    "new_ones(dtype='float32')": lambda lib: lib.ones(2).new_ones(2, dtype="float32"),
    "new_empty(2.5)": lambda lib: lib.ones(2).new_empty(2.5),
    "new_full((2,), 'a')": lambda lib: lib.ones(2).new_full((2,), "a"),
    "new_tensor ragged": lambda lib: lib.ones(2).new_tensor([[1], []]),
}

RANGES = {
    "arange(10, 0)": lambda lib: lib.arange(10, 0),
    "arange(0, 10, -1)": lambda lib: lib.arange(0, 10, -1),
    "arange(1.5, 0.5)": lambda lib: lib.arange(1.5, 0.5),
    "arange(0.0, 1.0, -0.1)": lambda lib: lib.arange(0.0, 1.0, -0.1),
    "arange(10, 0, 1.5)": lambda lib: lib.arange(10, 0, 1.5),
    "arange(0, 10, -inf)": lambda lib: lib.arange(0, 10, -INF),
    "arange(0, 10, 0)": lambda lib: lib.arange(0, 10, 0),
    "arange(0, 10, 0.0)": lambda lib: lib.arange(0, 10, 0.0),
    "arange(0, 10, nan)": lambda lib: lib.arange(0, 10, NAN),
    "arange(0, inf, 0)": lambda lib: lib.arange(0, INF, 0),
    "arange(0, inf)": lambda lib: lib.arange(0, INF),
    "arange(0.5, inf)": lambda lib: lib.arange(0.5, INF),
    "arange(-inf, 0)": lambda lib: lib.arange(-INF, 0),
    "arange(inf, 0, -1)": lambda lib: lib.arange(INF, 0, -1),
    "arange(0, nan)": lambda lib: lib.arange(0, NAN),
    "arange(0, 1e20, 1e-20)": lambda lib: lib.arange(0, 1e20, 1e-20),
    "arange(huge)": lambda lib: lib.arange(10 * HUGE),
    "arange(huge, float32)": lambda lib: lib.arange(0, 10 * HUGE, 1, dtype=lib.float32),
    "arange('5')": lambda lib: lib.arange("5"),
    "arange(None)": lambda lib: lib.arange(None),
    "arange(0, '5')": lambda lib: lib.arange(0, "5"),
    "arange('0', 5)": lambda lib: lib.arange("0", 5),
    "arange(0, 5, '1')": lambda lib: lib.arange(0, 5, "1"),
    "arange(dtype='int64')": lambda lib: lib.arange(5, dtype="int64"),
    "arange(bool)": lambda lib: lib.arange(5, dtype=lib.bool),
    "arange(device='gpu')": lambda lib: lib.arange(5, device="gpu"),
    "arange(requires_grad='x')": lambda lib: lib.arange(5, requires_grad="x"),
    "arange(int, requires_grad)": lambda lib: lib.arange(5, requires_grad=True),
    "linspace(0, 1, -1)": lambda lib: lib.linspace(0, 1, -1),
    "linspace(0, 1, 2.5)": lambda lib: lib.linspace(0, 1, 2.5),
    "linspace(0, 1, '3')": lambda lib: lib.linspace(0, 1, "3"),
    "linspace(0, 1, None)": lambda lib: lib.linspace(0, 1, None),
    "linspace(0, 1, True)": lambda lib: lib.linspace(0, 1, True),
    "linspace('0', 1, 3)": lambda lib: lib.linspace("0", 1, 3),
    "linspace(None, 1, 3)": lambda lib: lib.linspace(None, 1, 3),
    "linspace(huge)": lambda lib: lib.linspace(0, 1, HUGE),
    "linspace(2**62)": lambda lib: lib.linspace(0, 1, 2**62),
    "linspace(dtype='float32')": lambda lib: lib.linspace(0, 1, 3, dtype="float32"),
    "linspace(device='gpu')": lambda lib: lib.linspace(0, 1, 3, device="gpu"),
    "linspace(requires_grad='x')": lambda lib: lib.linspace(0, 1, 3, requires_grad="x"),
    "eye(-1)": lambda lib: lib.eye(-1),
    "eye(2, -1)": lambda lib: lib.eye(2, -1),
    "eye(2.5)": lambda lib: lib.eye(2.5),
    "eye('2')": lambda lib: lib.eye("2"),
    "eye(None)": lambda lib: lib.eye(None),
    "eye(True)": lambda lib: lib.eye(True),
    "eye(2, 2.5)": lambda lib: lib.eye(2, 2.5),
    "eye(huge)": lambda lib: lib.eye(10**7),
    "eye(2**31)": lambda lib: lib.eye(2**31),
    "eye(2**40)": lambda lib: lib.eye(2**40),
    "eye(3, 2**62)": lambda lib: lib.eye(3, 2**62),
    "eye(dtype='float32')": lambda lib: lib.eye(2, dtype="float32"),
    "eye(device='gpu')": lambda lib: lib.eye(2, device="gpu"),
    "randint(5, 3, (2,))": lambda lib: lib.randint(5, 3, (2,)),
    "randint(3, 3, (2,))": lambda lib: lib.randint(3, 3, (2,)),
    "randint(0, (2,))": lambda lib: lib.randint(0, (2,)),
    "randint(-1, (2,))": lambda lib: lib.randint(-1, (2,)),
    "randint(5)": lambda lib: lib.randint(5),
    "randint(0, 5)": lambda lib: lib.randint(0, 5),
    "randint((2,))": lambda lib: lib.randint((2,)),
    "randint(0, 5, 3)": lambda lib: lib.randint(0, 5, 3),
    "randint(0, 5, (-1,))": lambda lib: lib.randint(0, 5, (-1,)),
    "randint(0, 5, (2.5,))": lambda lib: lib.randint(0, 5, (2.5,)),
    "randint(0, 5, [2.0])": lambda lib: lib.randint(0, 5, [2.0]),
    "randint(0, 5, (2, 2.0))": lambda lib: lib.randint(0, 5, (2, 2.0)),
    "randint(2.5, (2,))": lambda lib: lib.randint(2.5, (2,)),
    "randint(0, 5.5, (2,))": lambda lib: lib.randint(0, 5.5, (2,)),
    "randint(0, '5', (2,))": lambda lib: lib.randint(0, "5", (2,)),
    "randint(0, 2**64, (2,))": lambda lib: lib.randint(0, 2**64, (2,)),
    "randint(huge)": lambda lib: lib.randint(0, 5, (HUGE,)),
    "randint(dtype='int64')": lambda lib: lib.randint(0, 5, (2,), dtype="int64"),
    "randint(device='gpu')": lambda lib: lib.randint(0, 5, (2,), device="gpu"),
    "randint(requires_grad)": lambda lib: lib.randint(0, 5, (2,), requires_grad=True),
}

SWITCHES = {
    "set_grad_enabled('a')": lambda lib: lib.set_grad_enabled("a"),
    "set_grad_enabled(None)": lambda lib: lib.set_grad_enabled(None),
    "set_grad_enabled(1)": lambda lib: lib.set_grad_enabled(1),
    "set_grad_enabled()": lambda lib: lib.set_grad_enabled(),
    "set_grad_enabled(True, False)": lambda lib: lib.set_grad_enabled(True, False),
    "@set_grad_enabled('a')": lambda lib: lib.set_grad_enabled("a")(print),
    "set_default_dtype(int64)": lambda lib: lib.set_default_dtype(lib.int64),
    "set_default_dtype('float64')": lambda lib: lib.set_default_dtype("float64"),
    "set_default_dtype(float)": lambda lib: lib.set_default_dtype(float),
    "device('gpu')": lambda lib: lib.device("gpu"),
    "device('CPU')": lambda lib: lib.device("CPU"),
    "device('cuda:x')": lambda lib: lib.device("cuda:x"),
    "device('cuda:01')": lambda lib: lib.device("cuda:01"),
    "device('cuda:')": lambda lib: lib.device("cuda:"),
    "device(' cpu')": lambda lib: lib.device(" cpu"),
    "device('cuda', -1)": lambda lib: lib.device("cuda", -1),
    "device(-1)": lambda lib: lib.device(-1),
    "device('cuda:0', 1)": lambda lib: lib.device("cuda:0", 1),
    "device(1.5)": lambda lib: lib.device(1.5),
    "device(None)": lambda lib: lib.device(None),
    "to('gpu')": lambda lib: lib.ones(2).to("gpu"),
    "to('float64')": lambda lib: lib.ones(2).to("float64"),
}


def _leaf(lib):
    return lib.zeros(2, requires_grad=True)


def _matrix(lib):
    return lib.arange(6.0).reshape(2, 3)


ATTRIBUTES = {
    "requires_grad = 'yes'": lambda lib: setattr(lib.zeros(2), "requires_grad", "yes"),
    "requires_grad = 1": lambda lib: setattr(lib.zeros(2), "requires_grad", 1),
    "requires_grad = None": lambda lib: setattr(lib.zeros(2), "requires_grad", None),
    "requires_grad = np.bool_": lambda lib: setattr(lib.zeros(2), "requires_grad", np.True_),
    "requires_grad = 'yes' on int": lambda lib: setattr(lib.arange(2), "requires_grad", "yes"),
    "requires_grad = True on int": lambda lib: setattr(lib.arange(2), "requires_grad", True),
    "requires_grad_('yes')": lambda lib: lib.zeros(2).requires_grad_("yes"),
    "requires_grad_(1)": lambda lib: lib.zeros(2).requires_grad_(1),
    "requires_grad_(None)": lambda lib: lib.zeros(2).requires_grad_(None),
    "requires_grad_(np.bool_)": lambda lib: lib.zeros(2).requires_grad_(np.True_),
    "requires_grad_() on int": lambda lib: lib.arange(2).requires_grad_(),
    "requires_grad_('yes') on int": lambda lib: lib.arange(2).requires_grad_("yes"),
    "del x.data": lambda lib: delattr(lib.zeros(2), "data"),
    "x.grad = x": lambda lib: (lambda x: setattr(x, "grad", x))(_leaf(lib)),
    "x.grad = 3": lambda lib: setattr(_leaf(lib), "grad", 3),
    "x.grad = wrong size": lambda lib: setattr(_leaf(lib), "grad", lib.zeros(3)),
    "x.grad = wrong rank": lambda lib: setattr(_leaf(lib), "grad", lib.zeros(2, 1)),
}

INDEXING = {
    "x[1.5]": lambda lib: _matrix(lib)[1.5],
    "x[1.0]": lambda lib: _matrix(lib)[1.0],
    "x[np.float64]": lambda lib: _matrix(lib)[np.float64(1.5)],
    "x[np.float32]": lambda lib: _matrix(lib)[np.float32(1.5)],
    "x[0, 1.5]": lambda lib: _matrix(lib)[0, 1.5],
    "x[None, 1.5]": lambda lib: _matrix(lib)[None, 1.5],
    "x[..., 1.5]": lambda lib: _matrix(lib)[..., 1.5],
    "x[tensor(1.5)]": lambda lib: _matrix(lib)[lib.tensor(1.5)],
    "x['a']": lambda lib: _matrix(lib)["a"],
    "x[0, 'a']": lambda lib: _matrix(lib)[0, "a"],
    "x[1.5] = 0": lambda lib: operator.setitem(_matrix(lib), 1.5, 0.0),
    "x[np.float64] = 0": lambda lib: operator.setitem(_matrix(lib), np.float64(1.5), 0.0),
    "x[0, 1.5] = 0": lambda lib: operator.setitem(_matrix(lib), (0, 1.5), 0.0),
    "x[tensor(1.5)] = 0": lambda lib: operator.setitem(_matrix(lib), lib.tensor(1.5), 0.0),
    "x['a'] = 0": lambda lib: operator.setitem(_matrix(lib), "a", 0.0),
    "0-d[0]": lambda lib: lib.tensor(3.0)[0],
    "0-d[0] = 1": lambda lib: operator.setitem(lib.tensor(3.0), 0, 1.0),
    "0-d[0, 0]": lambda lib: lib.tensor(3.0)[0, 0],
    "0-d[..., 0]": lambda lib: lib.tensor(3.0)[..., 0],
    "0-d[1.5]": lambda lib: lib.tensor(3.0)[1.5],
    "0-d[tensor(0)]": lambda lib: lib.tensor(3.0)[lib.tensor(0)],
    "0-d[tensor([0])]": lambda lib: lib.tensor(3.0)[lib.tensor([0])],
    "0-d[[0]]": lambda lib: lib.tensor(3.0)[[0]],
    "0-d[tensor(0)] = 1": lambda lib: operator.setitem(lib.tensor(3.0), lib.tensor(0), 1.0),
    "0-d[tensor([0])] = 1": lambda lib: operator.setitem(lib.tensor(3.0), lib.tensor([0]), 1.0),
}

CASES = {
    **TENSOR,
    **{k: v for name in SIZED for k, v in _sized(name).items()},
    **{k: v for name in LIKE for k, v in _like(name).items()},
    **FULL,
    **RANGES,
    **SWITCHES,
    **ATTRIBUTES,
    **INDEXING,
}

# torch's words -> teachgrad's, where teachgrad can't say torch's (the rest must match)
_ALLOCATOR = ("[enforce fail at alloc_cpu.cpp:127] err == 0. DefaultCPUAllocator: ", "")
_DEVICE_TYPES = (  # torch lists every device type it knows; teachgrad has two
    "cpu, cuda, ipu, xpu, mkldnn, opengl, opencl, ideep, hip, ve, fpga, maia, xla, lazy, "
    "vulkan, mps, meta, hpu, mtia, privateuseone",
    "cpu, cuda",
)
_NUMPY_TYPES = (  # torch also converts NumPy's complex and wide unsigned types
    "float64, float32, float16, complex64, complex128, int64, int32, int16, int8, uint64, "
    "uint32, uint16, uint8, and bool",
    "float64, float32, float16, int64, int32, int16, int8, uint8, and bool",
)


DIFFERS = {
    **{name: _ALLOCATOR for name in CASES if "huge" in name},
    **{name: _DEVICE_TYPES for name in CASES if "'gpu'" in name or "'CPU'" in name},
    "from_numpy(strings)": _NUMPY_TYPES,
    "from_numpy(objects)": _NUMPY_TYPES,
}


@pytest.fixture(autouse=True)
def modes_are_restored(torch):
    """A row that changes a process-wide setting before refusing must not leak it."""
    yield
    for lib in (tg, torch):
        lib.set_grad_enabled(True)
        lib.set_default_dtype(lib.float32)


def test_the_table_is_large_and_its_exceptions_are_rows():
    assert len(CASES) > 300
    assert set(DIFFERS) <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_bad_input_fails_with_torchs_error(torch, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (a failed call may warn on the way)
        assert_same_error(torch, CASES[name], DIFFERS.get(name))

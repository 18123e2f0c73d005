"""The Variable-era tensor types (``teachgrad/tensortypes.py``), as torch's test_autograd.py
(test_type_conversions) and torch's own behaviour have them: each test runs with teachgrad
and with torch (the ``lib`` fixture)."""

import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

NAMES = {
    "float32": "FloatTensor",
    "float64": "DoubleTensor",
    "float16": "HalfTensor",
    "int64": "LongTensor",
    "int32": "IntTensor",
    "int16": "ShortTensor",
    "int8": "CharTensor",
    "uint8": "ByteTensor",
    "bool": "BoolTensor",
}


@pytest.mark.parametrize("dtype", NAMES)
def test_a_tensor_is_an_instance_of_its_dtype_s_type_only(lib, dtype):
    x = lib.ones(2, 3, dtype=getattr(lib, dtype))
    assert x.type() == f"{lib.__name__}.{NAMES[dtype]}"
    kinds = [name for name in NAMES.values() if isinstance(x, getattr(lib, name))]
    assert kinds == [NAMES[dtype]]
    assert getattr(lib, NAMES[dtype]).dtype == getattr(lib, dtype)


def test_type_conversions(lib):
    """test_type_conversions: x.float(), x.int() ... are instances of their type; x.type(T)
    converts (and records ToCopyBackward0); the same type gives x itself."""
    x = lib.randn(5, 5)
    assert isinstance(x.float(), lib.FloatTensor) and isinstance(x.int(), lib.IntTensor)
    assert isinstance(x.double(), lib.DoubleTensor) and isinstance(x.long(), lib.LongTensor)
    assert isinstance(x.type(lib.IntTensor), lib.IntTensor)
    assert x.type(lib.FloatTensor) is x
    assert x.type(lib.float64).dtype == lib.float64
    assert x.type(f"{lib.__name__}.LongTensor").dtype == lib.int64
    y = lib.randn(3, requires_grad=True).type(lib.DoubleTensor)
    assert type(y.grad_fn).__name__ == "ToCopyBackward0"
    with pytest.raises(ValueError, match="^invalid type: 'float'"):
        x.type("float")


def test_calling_a_type_makes_a_tensor(lib):
    assert tuple(lib.FloatTensor(2, 3).shape) == (2, 3)
    assert tuple(lib.DoubleTensor().shape) == (0,)
    assert lib.LongTensor([1.7, 2]).tolist() == [1, 2]
    assert lib.FloatTensor([1, 2]).dtype == lib.float32
    assert not lib.FloatTensor.is_cuda and not issubclass(lib.FloatTensor, lib.Tensor)
    assert repr(lib.FloatTensor) == f"<class '{lib.__name__}.FloatTensor'>"

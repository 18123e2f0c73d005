"""tg.save / tg.load, as torch.save / torch.load (test_autograd.py's
test_saving_variable_to_disk; torch's weights-only default): each test runs with teachgrad and
with torch (the ``lib`` fixture)."""

import io
import os
import pickle

import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _round_trip(lib, obj, **load_args):
    f = io.BytesIO()
    lib.save(obj, f)
    f.seek(0)
    return lib.load(f, **load_args)


def test_saving_a_tensor_to_disk(lib, tmp_path):
    """test_saving_variable_to_disk: values and requires_grad come back."""
    a = lib.randn(5, requires_grad=True)
    path = tmp_path / "a.pt"
    lib.save(a, path)
    b = lib.load(path)
    assert b.tolist() == a.tolist() and b.requires_grad and b.is_leaf
    lib.save(a, str(path))
    assert lib.load(str(path)).tolist() == a.tolist()


def test_a_state_dict_and_containers_come_back(lib):
    lib.manual_seed(0)
    model = lib.nn.Linear(3, 2)
    obj = {
        "model": model.state_dict(),
        "step": 7,
        "rate": 0.5,
        "name": "run",
        "ints": lib.arange(3),
        "list": [lib.ones(2, dtype=lib.float64), None, (1, True)],
        "param": lib.nn.Parameter(lib.zeros(2)),
        "dtype": lib.float16,
        "size": lib.Size([2, 3]),
        "device": lib.device("cpu"),
    }
    back = _round_trip(lib, obj)
    assert list(back["model"]) == ["weight", "bias"]
    assert back["model"]["weight"].tolist() == model.weight.tolist()
    assert back["ints"].dtype == lib.int64 and back["list"][0].dtype == lib.float64
    assert back["list"][1:] == [None, (1, True)] and back["step"] == 7 and back["name"] == "run"
    assert type(back["param"]).__name__ == "Parameter" and back["param"].requires_grad
    assert back["dtype"] == lib.float16 and back["size"] == lib.Size([2, 3])
    assert str(back["device"]) == "cpu"
    model.load_state_dict(back["model"])


def test_loading_code_needs_weights_only_false(lib):
    f = io.BytesIO()
    lib.save({"call": os.getcwd}, f)
    f.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="^Weights only load failed"):
        lib.load(f)
    f.seek(0)
    assert lib.load(f, weights_only=False)["call"] is os.getcwd


def test_map_location(lib):
    back = _round_trip(lib, {"x": lib.ones(2)}, map_location="cpu")
    assert str(back["x"].device) == "cpu"

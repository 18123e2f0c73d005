"""``teachgrad.testing.make_tensor`` against ``torch.testing.make_tensor``: the same shapes,
dtypes, layouts, flags, ranges and refusals (the numbers themselves come from another
generator)."""

import warnings

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

DTYPES = ["float32", "float64", "float16", "int64", "int32", "int8", "uint8", "bool"]


def _make(lib):
    return lib.testing.make_tensor


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"noncontiguous": True},
        {"low": 0, "high": 3},
        {"low": -2.5, "high": 1e300},  # (clamped to what the dtype holds)
        {"exclude_zero": True, "low": 0, "high": 2},
        {"memory_format": "channels_last"},
    ],
    ids=str,
)
def test_make_tensor_s_shape_layout_flags_and_range_are_torch_s(dtype, options):
    def program(lib):
        kwargs = dict(options)
        if "memory_format" in kwargs:
            kwargs["memory_format"] = lib.channels_last
        shape = (2, 3, 4, 5) if "memory_format" in kwargs else ((4, 6),)
        t = _make(lib)(*shape, dtype=getattr(lib, dtype), device="cpu", **kwargs)
        values = t.detach().cpu().numpy().astype("float64")
        low, high = options.get("low", 0 if dtype in ("bool", "uint8") else -9), options.get("high")
        inside = bool((values >= max(low, -1e4)).all())
        if high is not None and high < 1e300:
            inside = inside and bool((values < high).all())
        no_zero = bool((values != 0).all()) if options.get("exclude_zero") else None
        return (
            tuple(t.shape),
            str(t.dtype).split(".")[-1],
            t.stride(),
            t.is_contiguous(),
            t.requires_grad,
            t.is_leaf,
            inside,
            no_zero,
        )

    assert_like_torch(program)


@pytest.mark.parametrize(
    "call",
    [
        "make((3,), dtype=lib.float32, device='cpu', requires_grad=True).requires_grad",
        "make(3, dtype=lib.int64, device='cpu', requires_grad=True)",
        "make(3, dtype=lib.float32, device='cpu', low=2, high=1)",
        "make(3, dtype=lib.int64, device='cpu', low=2, high=2)",
        "make(3, dtype=lib.float32, device='cpu', low=float('nan'))",
        "make(3, dtype=lib.uint8, device='cpu', low=-5, high=-1)",
        "make(3, dtype=lib.float32, device='cpu', noncontiguous=True, memory_format=lib.contiguous_format)",
        "make(1, dtype=lib.float32, device='cpu', noncontiguous=True).is_contiguous()",
        "make([2, 2], dtype=lib.float64, device='cpu').shape",
    ],
)
def test_make_tensor_s_refusals_and_edge_cases_are_torch_s(call):
    def program(lib):
        out = eval(call, {"lib": lib, "make": _make(lib)})  # noqa: S307 - the table's own text
        return tuple(out) if isinstance(out, tuple) else out

    assert_like_torch(program)


def test_an_empty_float_interval_warns_and_gives_low_everywhere(torch):
    import teachgrad as tg

    for lib in (tg, torch):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t = _make(lib)(3, dtype=lib.float32, device="cpu", low=1.5, high=1.5)
        assert [w.category for w in caught] == [FutureWarning]
        assert np.all(t.numpy() == 1.5)

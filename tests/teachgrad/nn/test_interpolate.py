"""``F.interpolate`` and ``nn.Upsample`` against torch: values, shapes, dtypes, nodes,
gradients, errors; gradcheck and gradgradcheck (with forward mode) of every mode.

The grid: every mode on the rank it needs, by size and by scale factor (integer and
fractional, up and down), align_corners where it applies, recompute_scale_factor, float32
and float64, contiguous and not. Three places where torch's own gradient is not the
derivative of its forward (its gradcheck fails) are tested apart, as is one torch bug in
antialiased resizing to a width of 1: there teachgrad is checked against the derivative.
"""

import itertools
import warnings

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.ops._cases import (
    A,
    assert_same_error,
    compare_with_torch,
    edges,
    make_inputs,
    run_gradchecks,
    to_numpy,
)

# (mode, rank, antialias): every mode on the rank it needs
MODES = [
    *[(m, r, False) for m in ("nearest", "nearest-exact", "area") for r in (3, 4, 5)],
    ("linear", 3, False),
    ("bilinear", 4, False),
    ("bicubic", 4, False),
    ("trilinear", 5, False),
    ("bilinear", 4, True),
    ("bicubic", 4, True),
]
SHAPES = {3: (2, 3, 7), 4: (2, 2, 7, 5), 5: (1, 2, 4, 7, 5)}
SIZES = [
    dict(size=1),
    dict(size=3),
    dict(size=11),
    dict(scale_factor=2),
    dict(scale_factor=3),
    dict(scale_factor=0.5),
    dict(scale_factor=1.7),
    dict(scale_factor=0.37),
    dict(scale_factor=1.0),
]


def _align_options(mode):
    return [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]


def _interpolate(mode, antialias, **kw):
    return lambda lib, x: lib.nn.functional.interpolate(x, mode=mode, antialias=antialias, **kw)


def _torch_output_width_1_bug(rank, antialias, kw):
    """torch's antialiased CPU kernel copies the first row everywhere when the output is
    one pixel wide and more than one high (``test_antialias_to_width_1``)."""
    out = [int(n * kw["scale_factor"]) for n in SHAPES[rank][2:]] if "scale_factor" in kw else None
    return antialias and out is not None and out[-1] == 1 and out[-2] > 1


GRID = [
    pytest.param(mode, rank, aa, kw, ac, rec, dtype, id=f"{mode}{'-aa' if aa else ''}-{rank}d-"
                 f"{kw}-ac={ac}-rec={rec}-{dtype}")
    for (mode, rank, aa), kw, rec, dtype in itertools.product(
        MODES, SIZES, [None, True], ["float64", "float32"]
    )
    for ac in _align_options(mode)
    if not (rec and "size" in kw) and not _torch_output_width_1_bug(rank, aa, kw)
]  # fmt: skip


@pytest.mark.parametrize("mode, rank, aa, kw, ac, rec, dtype", GRID)
def test_values_nodes_and_gradients_match_torch(torch, mode, rank, aa, kw, ac, rec, dtype):
    """The output (values, shape, dtype), its node (name, edges, saved attributes) and the
    gradient for a random upstream gradient are torch's."""
    fn = _interpolate(mode, aa, align_corners=ac, recompute_scale_factor=rec, **kw)
    compare_with_torch(torch, fn, [A(*SHAPES[rank])], dtype=dtype)


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("mode, rank, aa", MODES)
def test_non_contiguous_inputs(torch, mode, rank, aa, layout):
    kw = dict(align_corners=False) if mode not in ("nearest", "nearest-exact", "area") else {}
    fn = _interpolate(mode, aa, scale_factor=1.5, **kw)
    compare_with_torch(torch, fn, [A(*SHAPES[rank], layout=layout)])


# (mode, rank, antialias, how) for gradcheck/gradgradcheck: small inputs, up and down
CHECKED = [
    (mode, rank, aa, kw)
    for mode, rank, aa in MODES
    for kw in (dict(size=5), dict(scale_factor=0.6), dict(scale_factor=1.5, align_corners=True))
    if "align_corners" not in kw or mode not in ("nearest", "nearest-exact", "area")
]


@pytest.mark.parametrize("mode, rank, aa, kw", CHECKED)
def test_gradcheck_and_gradgradcheck(mode, rank, aa, kw):
    """The backward is the derivative, so is the backward's backward, and forward mode."""
    shape = {3: (1, 2, 4), 4: (1, 1, 4, 3), 5: (1, 1, 3, 2, 3)}[rank]
    run_gradchecks(_interpolate(mode, aa, **kw), [A(*shape)])


@pytest.mark.parametrize(
    "mode, rank, aa, kw",
    [
        ("nearest", 3, False, dict(scale_factor=2.1)),  # (output = 2 · input)
        ("nearest", 5, False, dict(scale_factor=1.1)),  # (output = input)
        ("bicubic", 4, False, dict(scale_factor=1.1)),
        ("bilinear", 4, True, dict(scale_factor=1.1)),
    ],
)
def test_where_torchs_gradient_is_not_its_derivative(torch, mode, rank, aa, kw):
    """At these sizes torch's forward places pixels by the scale factor, its backward as if the
    factor were exactly 1 or 2 (its gradcheck fails). teachgrad's values are torch's and its
    gradient is the derivative of them."""
    fn = _interpolate(mode, aa, **kw)
    (t,) = make_inputs(torch, [A(*SHAPES[rank])], 0)
    assert not torch.autograd.gradcheck(lambda x: fn(torch, x), (t,), raise_exception=False)
    (x,) = make_inputs(tg, [A(*SHAPES[rank])], 0)
    np.testing.assert_allclose(to_numpy(fn(tg, x)), to_numpy(fn(torch, t)), rtol=1e-12)
    run_gradchecks(fn, [A(*SHAPES[rank])], second_order=False)


def test_antialias_to_width_1(torch):
    """torch's antialiased kernel gives every row of a 1-pixel-wide output the first row's
    value; teachgrad resizes the width, then the height, as for any other size. The reference
    is torch's, resizing one dim at a time where its bug does not show (the height on the
    transposed image: one pixel high, two wide)."""
    F, TF = tg.nn.functional, torch.nn.functional
    t = torch.arange(35.0, dtype=torch.float64).reshape(1, 1, 7, 5)
    wrong = TF.interpolate(t, size=(2, 1), mode="bilinear", antialias=True)
    assert wrong[0, 0, 0, 0] == wrong[0, 0, 1, 0]  # (the bug, still there)
    column = TF.interpolate(t, size=(7, 1), mode="bilinear", antialias=True)
    expected = TF.interpolate(column.mT, size=(1, 2), mode="bilinear", antialias=True).mT
    x = tg.arange(35.0, dtype=tg.float64).reshape(1, 1, 7, 5)
    ours = F.interpolate(x, size=(2, 1), mode="bilinear", antialias=True)
    np.testing.assert_allclose(to_numpy(ours), to_numpy(expected), rtol=1e-12)


@pytest.mark.parametrize(
    "mode, rank, aa",
    [("nearest", 4, False), ("bilinear", 4, False), ("area", 4, False), ("area", 5, False),
     ("bicubic", 4, True), ("linear", 3, False), ("nearest-exact", 5, False)],
)  # fmt: skip
def test_double_backward_nodes_match_torch(torch, mode, rank, aa):
    """With create_graph, the gradient's node is torch's (``...BackwardBackward0``), with the
    same edges and saved attributes; its gradient is torch's too."""
    fn = _interpolate(mode, aa, size=3)

    def grad_of(lib, x, v):
        (g,) = lib.autograd.grad(fn(lib, x), x, v, create_graph=True)
        return g

    out_shape = SHAPES[rank][:2] + (3,) * (rank - 2)
    compare_with_torch(torch, grad_of, [A(*SHAPES[rank]), A(*out_shape)])


def test_float16_is_computed_in_float32(torch):
    """Half precision resamples in float32 and rounds once, as torch does."""
    for mode in ("nearest", "bilinear", "bicubic", "area"):
        x = np.random.default_rng(0).standard_normal((1, 2, 5, 4))
        y, yt = [
            lib.nn.functional.interpolate(lib.tensor(x, dtype=lib.float16), (7, 3), mode=mode)
            for lib in (tg, torch)
        ]
        assert y.dtype == tg.float16
        np.testing.assert_allclose(to_numpy(y).astype("f4"), to_numpy(yt).astype("f4"), atol=1e-3)


def test_uint8_images_nearest(torch):
    x = np.arange(40, dtype=np.uint8).reshape(1, 2, 5, 4)
    for mode in ("nearest", "nearest-exact"):
        y = tg.nn.functional.interpolate(tg.tensor(x), scale_factor=1.5, mode=mode)
        yt = torch.nn.functional.interpolate(torch.tensor(x), scale_factor=1.5, mode=mode)
        assert y.dtype == tg.uint8 and y.tolist() == yt.tolist()


def test_only_adaptive_pooling_keeps_its_input(torch):
    """Interpolation needs only the input's shape for backward, so changing the input in place
    afterwards is fine; adaptive pooling keeps it (torch's node does), so it is not."""
    for lib in (tg, torch):
        x = lib.ones(1, 1, 4, 4, requires_grad=True) * 1
        y = lib.nn.functional.interpolate(x, size=3, mode="bilinear")
        x.mul_(2)
        y.sum().backward()
        z = lib.nn.functional.interpolate(x, size=3, mode="area")
        x.mul_(2)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()


def _call(**kw):
    shape = kw.pop("shape", (1, 2, 5, 4))
    dtype = kw.pop("dtype", "float32")
    return lambda lib: lib.nn.functional.interpolate(
        lib.zeros(shape, dtype=getattr(lib, dtype)), **kw
    )


ERRORS = {
    "both size and scale": _call(size=3, scale_factor=2),
    "neither": _call(),
    "align_corners with nearest": _call(size=3, align_corners=True),
    "align_corners with area": _call(size=3, mode="area", align_corners=False),
    "recompute with a size": _call(size=3, recompute_scale_factor=True),
    "antialias with nearest": _call(size=3, antialias=True),
    "antialias on 3-d": _call(shape=(1, 2, 5), size=3, mode="linear", antialias=True),
    "lanczos without antialias": _call(size=3, mode="lanczos"),
    "lanczos with align_corners": _call(size=3, mode="lanczos", antialias=True, align_corners=True),
    "linear on 4-d": _call(size=3, mode="linear"),
    "trilinear on 4-d": _call(size=3, mode="trilinear"),
    "bilinear on 3-d": _call(shape=(1, 2, 5), size=3, mode="bilinear"),
    "bilinear on 5-d": _call(shape=(1, 2, 3, 5, 4), size=3, mode="bilinear"),
    "bicubic on 5-d": _call(shape=(1, 2, 3, 5, 4), size=3, mode="bicubic"),
    "unknown mode": _call(size=3, mode="bogus"),
    "2-d input": _call(shape=(5, 4), size=3),
    "6-d input": _call(shape=(1, 1, 2, 2, 2, 2), size=3),
    "size of the wrong length": _call(size=(3, 4, 5)),
    "scale of the wrong length": _call(scale_factor=(3, 4, 5)),
    "fractional size in a list": _call(size=(3.0, 4)),
    "fractional size": _call(size=3.0),
    "fractional size, bilinear": _call(size=3.0, mode="bilinear"),
    "fractional size, area": _call(size=3.0, mode="area"),
    "fractional size, area 1-d": _call(shape=(1, 2, 5), size=3.0, mode="area"),
    "size 0": _call(size=0),
    "negative size, 1-d": _call(shape=(1, 2, 5), size=-1, mode="linear"),
    "scale to nothing": _call(scale_factor=0.1, mode="bilinear"),
    "negative scale": _call(scale_factor=-1.0),
    "infinite scale": _call(scale_factor=float("inf")),
    "empty height": _call(shape=(1, 2, 0, 4), size=3, mode="bicubic"),
    "empty depth": _call(shape=(1, 2, 0, 4, 5), size=3, mode="trilinear"),
    "empty channels": _call(shape=(1, 0, 5, 4), size=3, mode="bilinear"),
    "int64 nearest 1-d": _call(shape=(1, 2, 5), size=3, dtype="int64"),
    "int64 nearest 2-d": _call(size=3, dtype="int64"),
    "int32 nearest-exact 3-d": _call(shape=(1, 2, 3, 5, 4), size=3, mode="nearest-exact", dtype="int32"),
    "bool linear": _call(shape=(1, 2, 5), size=3, mode="linear", dtype="bool"),
    "int64 bilinear": _call(size=3, mode="bilinear", dtype="int64"),
    "int16 bicubic": _call(size=3, mode="bicubic", dtype="int16"),
    "int64 trilinear": _call(shape=(1, 2, 3, 5, 4), size=3, mode="trilinear", dtype="int64"),
    "int64 antialias": _call(size=3, mode="bilinear", antialias=True, dtype="int64"),
    "int64 area": _call(size=3, mode="area", dtype="int64"),
    "int8 area 3-d": _call(shape=(1, 2, 3, 5, 4), size=3, mode="area", dtype="int8"),
    "int64 area of one pixel": _call(size=1, mode="area", dtype="int64"),
    "negative area size": _call(size=(2, -1), mode="area"),
    "negative area size 3-d": _call(shape=(1, 2, 3, 5, 4), size=-1, mode="area"),
    "negative area scale": _call(scale_factor=-1.0, mode="area"),
    "area of an empty width": _call(shape=(1, 2, 5, 0), size=3, mode="area"),
    "area of an empty width, 1-d": _call(shape=(1, 2, 0), size=3, mode="area"),
    "area of no channels, 3-d": _call(shape=(1, 0, 3, 5, 4), size=3, mode="area"),
}  # fmt: skip


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torchs(torch, name):
    """Each bad call raises torch's exception class with torch's first line."""
    assert_same_error(torch, ERRORS[name])


ACCEPTED = {
    "an empty batch": _call(shape=(0, 2, 5, 4), size=3, mode="bicubic"),
    "area to nothing": _call(size=0, mode="area"),
    "area of no channels": _call(shape=(1, 0, 5, 4), size=3, mode="area"),
    "area of one pixel from nothing": _call(shape=(1, 2, 0, 4), size=1, mode="area"),
    "a 3-d input to nearest is (N, C, W)": _call(shape=(2, 5, 4), size=3),
    "scale factors per dim": _call(scale_factor=(2, 0.5), mode="bilinear"),
    "recompute_scale_factor=False": _call(scale_factor=1.5, recompute_scale_factor=False),
}


@pytest.mark.parametrize("name", ACCEPTED)
def test_edge_cases_torch_accepts(torch, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (the mean of nothing)
        y, yt = ACCEPTED[name](tg), ACCEPTED[name](torch)
    assert tuple(y.shape) == tuple(yt.shape) and y.dtype.is_floating_point
    np.testing.assert_array_equal(to_numpy(y), to_numpy(yt))


def test_area_nodes_are_torchs(torch):
    """``area`` is adaptive average pooling: 1-d pools an added dim of 1 (SqueezeBackward1
    on top), and one output pixel is the mean (MeanBackward1)."""
    for shape, size in [((1, 2, 5), 3), ((1, 2, 5), 1), ((1, 2, 5, 4), 1), ((1, 2, 3, 5, 4), 1)]:
        ours, theirs = [
            edges(_interpolate("area", False, size=size)(lib, x))
            for lib, x in ((tg, tg.ones(shape, requires_grad=True)),
                           (torch, torch.ones(shape, requires_grad=True)))
        ]  # fmt: skip
        assert ours == theirs


def test_upsample_modules_match_torch(torch):
    x = np.random.default_rng(1).standard_normal((1, 2, 3, 4))
    made = [
        lambda nn: nn.Upsample(scale_factor=2),
        lambda nn: nn.Upsample(size=(5, 7), mode="bilinear", align_corners=True),
        lambda nn: nn.Upsample(scale_factor=(1.5, 2), mode="bicubic"),
        lambda nn: nn.Upsample(scale_factor=1.5, mode="nearest", recompute_scale_factor=True),
        lambda nn: nn.UpsamplingNearest2d(size=5),
        lambda nn: nn.UpsamplingBilinear2d(scale_factor=2),
    ]
    for make in made:
        ours, theirs = make(tg.nn), make(torch.nn)
        assert repr(ours) == repr(theirs)
        assert ours.__dict__.keys() >= {"name", "size", "scale_factor", "mode", "align_corners"}
        y, yt = ours(tg.tensor(x)), theirs(torch.tensor(x))
        np.testing.assert_allclose(to_numpy(y), to_numpy(yt), rtol=1e-12)


@pytest.mark.parametrize(
    "mode, shape, aa",
    [("nearest", (1, 2, 5, 4), False), ("nearest-exact", (1, 2, 5), False),
     ("trilinear", (1, 1, 3, 5, 4), False), ("bicubic", (1, 2, 5, 4), True),
     ("area", (1, 2, 5, 4), False), ("area", (1, 2, 5), False), ("area", (1, 2, 3, 5, 4), False)],
)  # fmt: skip
def test_profiled_as_torchs_ops(torch, mode, shape, aa):
    """A call is one event named after torch's op (``aten::_upsample_nearest_exact1d``,
    ``aten::adaptive_avg_pool1d`` ...), as in torch's profile."""

    def first_event(lib):
        x = lib.ones(shape)
        with lib.autograd.profiler.profile() as prof:
            lib.nn.functional.interpolate(x, size=3, mode=mode, antialias=aa)
        return prof.function_events[0].name

    assert first_event(tg) == first_event(torch)

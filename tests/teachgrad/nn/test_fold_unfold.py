"""``F.unfold`` / ``F.fold`` (im2col / col2im) and ``nn.Unfold`` / ``nn.Fold`` against torch:
values, shapes, dtypes, nodes and their saved attributes, gradients, errors; gradcheck and
gradgradcheck (with forward mode) of both ops, which are each other's backward.

The grid: kernel sizes, dilations, paddings and strides (ints and (H, W) pairs), batched
and unbatched, float32 and float64, contiguous and not.
"""

import itertools

import numpy as np
import pytest

import teachgrad as tg
from tests.teachgrad.ops._cases import (
    A,
    assert_same_error,
    compare_with_torch,
    make_inputs,
    run_gradchecks,
    to_numpy,
)

IMAGES = (2, 3, 5, 6)  # (N, C, H, W); unbatched: the last three
GEOMETRIES = [
    dict(kernel_size=k, dilation=d, padding=p, stride=s)
    for k, d, p, s in itertools.product(
        [1, 2, (2, 3), (3, 1)], [1, (1, 2), 2], [0, 1, (2, 0)], [1, 2, (1, 3)]
    )
]


def _id(geometry) -> str:
    return "-".join(f"{name[0]}{value}" for name, value in geometry.items()).replace(" ", "")


def _pair(v):
    return v if isinstance(v, tuple) else (v, v)


def _columns_shape(geometry, batched=True) -> tuple:
    """The shape ``unfold`` gives images of IMAGES' size: (N, C·kh·kw, L)."""
    k, d, p, s = (_pair(geometry[n]) for n in ("kernel_size", "dilation", "padding", "stride"))
    blocks = [(IMAGES[2 + i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    shape = (IMAGES[0], IMAGES[1] * k[0] * k[1], blocks[0] * blocks[1])
    return shape if batched else shape[1:]


def _unfold(**geometry):
    return lambda lib, x: lib.nn.functional.unfold(x, **geometry)


def _fold(**geometry):
    return lambda lib, c: lib.nn.functional.fold(c, IMAGES[2:], **geometry)


# --------------------------------------------------------------------------- against torch


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=_id)
def test_unfold_matches_torch(torch, geometry, batched, dtype):
    """Values, shape, dtype, node (name, edges, saved attribute names) and the gradient."""
    shape = IMAGES if batched else IMAGES[1:]
    compare_with_torch(torch, _unfold(**geometry), [A(*shape)], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=_id)
def test_fold_matches_torch(torch, geometry, batched, dtype):
    compare_with_torch(
        torch, _fold(**geometry), [A(*_columns_shape(geometry, batched))], dtype=dtype
    )


@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("geometry", GEOMETRIES[::7], ids=_id)
def test_non_contiguous_inputs(torch, geometry, layout):
    compare_with_torch(torch, _unfold(**geometry), [A(*IMAGES, layout=layout)])
    compare_with_torch(torch, _fold(**geometry), [A(*_columns_shape(geometry), layout=layout)])


def _saved(node) -> dict:
    return {a: getattr(node, a) for a in dir(node) if a.startswith("_saved_")}


@pytest.mark.parametrize("geometry", GEOMETRIES[::5], ids=_id)
def test_nodes_show_torchs_saved_arguments(torch, geometry):
    """``_saved_kernel_size`` ... as torch shows them (pairs of ints), and unfold's
    ``_saved_self_sym_argsize_minus_2/1`` (the image's H and W); fold shows no output_size."""

    def shown(lib):
        x = lib.ones(IMAGES, requires_grad=True)
        cols = lib.nn.functional.unfold(x, **geometry)
        images = lib.nn.functional.fold(cols, IMAGES[2:], **geometry)
        return _saved(cols.grad_fn), _saved(images.grad_fn)

    ours, theirs = shown(tg), shown(torch)
    assert ours == theirs
    assert ours[0]["_saved_kernel_size"] == _pair(geometry["kernel_size"])
    assert "_saved_output_size" not in theirs[1]


@pytest.mark.parametrize("batched", [True, False], ids=["batched", "unbatched"])
def test_double_backward_nodes_match_torch(torch, batched):
    """Each op's backward is the other op: unfold's gradient is a Col2ImBackward0 node, fold's
    an Im2ColBackward0 one, with torch's edges, saved attributes and gradients."""
    geometry = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))
    images = IMAGES if batched else IMAGES[1:]
    columns = _columns_shape(geometry, batched)

    def through(op):
        def grad_of(lib, x, v):
            (g,) = lib.autograd.grad(op(**geometry)(lib, x), x, v, create_graph=True)
            return g

        return grad_of

    ys, _ = compare_with_torch(torch, through(_unfold), [A(*images), A(*columns)])
    assert ys[0].grad_fn.name() == "Col2ImBackward0"
    ys, _ = compare_with_torch(torch, through(_fold), [A(*columns), A(*images)])
    assert ys[0].grad_fn.name() == "Im2ColBackward0"


# (geometry, batched) for gradcheck/gradgradcheck: small inputs, overlapping blocks
CHECKED = [
    (dict(kernel_size=2), True),
    (dict(kernel_size=(2, 1), dilation=(1, 2), padding=1, stride=(1, 2)), True),
    (dict(kernel_size=(1, 2), padding=(0, 1), stride=2), False),
]


@pytest.mark.parametrize("geometry, batched", CHECKED)
def test_gradcheck_and_gradgradcheck(geometry, batched):
    """Both backwards are derivatives, so are their backwards, and forward mode (both ops
    are linear: their jvp is the op applied to the tangent)."""
    images = (1, 2, 3, 4) if batched else (2, 3, 4)
    run_gradchecks(lambda lib, x: lib.nn.functional.unfold(x, **geometry), [A(*images)])
    cols = tg.nn.functional.unfold(tg.zeros(images), **geometry).shape
    run_gradchecks(lambda lib, c: lib.nn.functional.fold(c, images[-2:], **geometry), [A(*cols)])


def test_fold_is_the_transpose_of_unfold():
    """``<unfold(x), c> = <x, fold(c)>``: the reason each is the other's backward."""
    geometry = dict(kernel_size=(2, 3), dilation=(2, 1), padding=(1, 2), stride=(1, 2))
    x, c = make_inputs(tg, [A(*IMAGES), A(*_columns_shape(geometry))], 0)
    left = (tg.nn.functional.unfold(x, **geometry) * c).sum()
    right = (x * tg.nn.functional.fold(c, IMAGES[2:], **geometry)).sum()
    np.testing.assert_allclose(left.item(), right.item(), rtol=1e-12)


# --------------------------------------------------------------------------- dtypes, memory


@pytest.mark.parametrize("dtype", ["float16", "bool"])
def test_other_dtypes_match_torch(torch, dtype):
    """float16 (whose sums round as torch's: tap by tap) and bool (fold's sum is an or)."""
    geometry = dict(kernel_size=(2, 3), dilation=(1, 2), padding=1)
    x = np.random.default_rng(0).standard_normal(IMAGES) * 10
    x = x > 3 if dtype == "bool" else x
    results = {}
    for lib in (tg, torch):
        cols = lib.nn.functional.unfold(lib.tensor(x, dtype=getattr(lib, dtype)), **geometry)
        results[lib] = cols, lib.nn.functional.fold(cols, IMAGES[2:], **geometry)
    for ours, theirs in zip(results[tg], results[torch]):
        assert str(ours.dtype).split(".")[-1] == dtype
        np.testing.assert_array_equal(to_numpy(ours), to_numpy(theirs))


def test_an_empty_batch(torch):
    for lib in (tg, torch):
        x = lib.zeros(0, 3, 5, 6)
        cols = lib.nn.functional.unfold(x, 2)
        assert tuple(cols.shape) == (0, 12, 20)
        assert tuple(lib.nn.functional.fold(cols, (5, 6), 2).shape) == (0, 3, 5, 6)


def test_results_have_memory_of_their_own():
    """A 1x1 kernel's columns are the image reshaped; still, changing them leaves it be."""
    x = tg.arange(6.0).reshape(1, 1, 2, 3)
    cols = tg.nn.functional.unfold(x, 1)
    cols.add_(1)
    assert x.tolist() == [[[[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]]]
    assert cols.is_contiguous() and tg.nn.functional.fold(cols, (2, 3), 1).is_contiguous()


def test_profiled_as_torchs_ops(torch):
    """The events are torch's: ``aten::im2col``, ``aten::col2im``."""
    names = []
    for lib in (tg, torch):
        x = lib.ones(1, 2, 4, 4, requires_grad=True)
        with lib.autograd.profiler.profile() as prof:
            lib.nn.functional.fold(lib.nn.functional.unfold(x, 2), (4, 4), 2)
        names.append(
            [e.name for e in prof.function_events if e.name in ("aten::im2col", "aten::col2im")]
        )
    assert names[0] == names[1] == ["aten::im2col", "aten::col2im"]


# --------------------------------------------------------------------------- errors


def _unfold_call(shape=IMAGES, dtype="float32", **kw):
    kw.setdefault("kernel_size", 2)
    return lambda lib: lib.nn.functional.unfold(lib.zeros(shape, dtype=getattr(lib, dtype)), **kw)


def _fold_call(shape=(2, 12, 20), output_size=(5, 6), dtype="float32", **kw):
    kw.setdefault("kernel_size", 2)
    cols = lambda lib: lib.zeros(shape, dtype=getattr(lib, dtype))  # noqa: E731
    return lambda lib: lib.nn.functional.fold(cols(lib), output_size, **kw)


ERRORS = {
    "unfold of a list": lambda lib: lib.nn.functional.unfold([1.0], 2),
    "unfold, 0-d": _unfold_call(shape=()),
    "unfold, 1-d": _unfold_call(shape=(6,)),
    "unfold, 2-d": _unfold_call(shape=(5, 6)),
    "unfold, 2-d without columns": _unfold_call(shape=(5, 0)),
    "unfold, 5-d": _unfold_call(shape=(1, 2, 3, 5, 6)),
    "unfold, no channels": _unfold_call(shape=(2, 0, 5, 6)),
    "unfold, no rows": _unfold_call(shape=(2, 3, 0, 6)),
    "unfold, unbatched, no channels": _unfold_call(shape=(0, 5, 6)),
    "unfold, kernel 0": _unfold_call(kernel_size=0),
    "unfold, kernel (0, 2)": _unfold_call(kernel_size=(0, 2)),
    "unfold, dilation 0": _unfold_call(dilation=0),
    "unfold, padding -1": _unfold_call(padding=-1),
    "unfold, stride 0": _unfold_call(stride=0),
    "unfold, dilation before stride": _unfold_call(dilation=0, stride=0),
    "unfold, padding before stride": _unfold_call(padding=-1, stride=0),
    "unfold, kernel before the rank": _unfold_call(shape=(1, 2, 3, 5, 6), kernel_size=0),
    "unfold, kernel too large": _unfold_call(kernel_size=7),
    "unfold, kernel too wide": _unfold_call(kernel_size=(2, 7)),
    "unfold, dilated too far": _unfold_call(kernel_size=3, dilation=3),
    "unfold, three kernel sizes": _unfold_call(kernel_size=(2, 2, 2)),
    "unfold, one kernel size in a list": _unfold_call(kernel_size=[2]),
    "unfold, three dilations": _unfold_call(dilation=(1, 2, 3)),
    "unfold, three paddings": _unfold_call(padding=(1, 2, 3)),
    "unfold, one stride in a list": _unfold_call(stride=[2]),
    "unfold, float kernel": _unfold_call(kernel_size=2.0),
    "unfold, float in the kernel": _unfold_call(kernel_size=(2, 2.0)),
    "unfold, bool kernel": _unfold_call(kernel_size=True),
    "unfold, str kernel": _unfold_call(kernel_size="ab"),
    "unfold, float stride": _unfold_call(stride=1.5),
    "unfold, bool padding": _unfold_call(padding=True),
    "unfold, int64": _unfold_call(dtype="int64"),
    "unfold, uint8": _unfold_call(dtype="uint8"),
    "fold of a list": lambda lib: lib.nn.functional.fold([1.0], 2, 2),
    "fold, 1-d": _fold_call(shape=(12,)),
    "fold, 4-d": _fold_call(shape=(1, 2, 12, 20)),
    "fold, no rows": _fold_call(shape=(2, 0, 20)),
    "fold, no columns": _fold_call(shape=(2, 12, 0)),
    "fold, unbatched, no rows": _fold_call(shape=(0, 20)),
    "fold, rows not whole blocks": _fold_call(shape=(2, 13, 20)),
    "fold, too many columns": _fold_call(shape=(2, 12, 21)),
    "fold, output of no rows": _fold_call(output_size=(0, 6)),
    "fold, output smaller than the block": _fold_call(output_size=(1, 6)),
    "fold, negative blocks": _fold_call(shape=(1, 1, 4), output_size=(-1, -4), kernel_size=1),
    "fold, output of no rows, padded": _fold_call(
        shape=(1, 1, 16), output_size=(0, 6), kernel_size=1, padding=1
    ),
    "fold, kernel 0": _fold_call(kernel_size=0),
    "fold, stride before dilation": _fold_call(stride=0, dilation=0),
    "fold, dilation before padding": _fold_call(dilation=0, padding=-1),
    "fold, stride before padding": _fold_call(stride=0, padding=-1),
    "fold, three output sizes": _fold_call(output_size=(3, 3, 3), dilation=(1, 1, 1)),
    "fold, three kernel sizes": _fold_call(kernel_size=(2, 2, 2), dilation=(1, 1, 1)),
    "fold, float output size": _fold_call(output_size=5.0),
    "fold, str in the output size": _fold_call(output_size=(3, "a")),
    "fold, float kernel": _fold_call(kernel_size=2.0),
    "fold, float stride": _fold_call(stride=1.5),
    "fold, int64": _fold_call(dtype="int64"),
    "fold, int32": _fold_call(dtype="int32"),
}


@pytest.mark.parametrize("name", ERRORS)
def test_errors_are_torchs(torch, name):
    """Each bad call raises torch's exception class with torch's first line."""
    assert_same_error(torch, ERRORS[name])


def test_errors_teach():
    """Under torch's line, a hint."""
    with pytest.raises(RuntimeError, match="kernel_height: 0") as error:
        tg.nn.functional.unfold(tg.zeros(IMAGES), 0)
    assert len(str(error.value).splitlines()) == 2


# --------------------------------------------------------------------------- the modules


MODULES = [
    ("Unfold", dict(kernel_size=2)),
    ("Unfold", dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ("Fold", dict(output_size=(5, 6), kernel_size=2, stride=1)),
    ("Fold", dict(output_size=5, kernel_size=(2, 1), dilation=2, padding=(1, 0), stride=2)),
]


@pytest.mark.parametrize("name, kw", MODULES)
def test_modules_match_torch(torch, name, kw):
    """torch's repr, and the functional op's result."""
    ours, theirs = getattr(tg.nn, name)(**kw), getattr(torch.nn, name)(**kw)
    assert repr(ours) == repr(theirs)
    if name == "Unfold":
        compare_with_torch(torch, lambda lib, x: getattr(lib.nn, name)(**kw)(x), [A(*IMAGES)])
    else:
        geometry = {k: v for k, v in kw.items() if k != "output_size"}
        images = torch.zeros(2, 3, *_pair(kw["output_size"]))
        cols = tuple(torch.nn.functional.unfold(images, **geometry).shape)
        compare_with_torch(torch, lambda lib, c: getattr(lib.nn, name)(**kw)(c), [A(*cols)])

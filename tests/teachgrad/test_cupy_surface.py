"""Real CuPy's surface, checked without a GPU: every ``xp.<name>(...)`` teachgrad calls exists
in CuPy and takes the keywords used, and the CuPy stand-in offers nothing CuPy lacks.

CuPy's CUDA 12 wheel imports on a machine without a GPU (only making an array needs one),
so its names and signatures can be read anywhere; ``make test`` installs it (``make cupy``).
The calls are found by reading teachgrad's source (tests/backend_calls.py).
"""

import pathlib

import pytest

import teachgrad as tg
from tests import cupy_standin, needs
from tests.backend_calls import backend_calls
from tests.cupy_surface import keywords, resolve

PACKAGE = pathlib.Path(tg.__file__).parent


@pytest.fixture(scope="module")
def cupy():
    return needs.cupy()


def test_every_array_module_call_exists_in_cupy_with_its_keywords(cupy):
    problems = []
    for call in backend_calls(PACKAGE):
        target = resolve(cupy, call.name)
        if target is None:
            problems.append(f"{call.where}: cupy has no {call.name}")
            continue
        accepted = keywords(target) if call.keywords else None
        if accepted is not None and not set(call.keywords) <= accepted:
            unknown = sorted(set(call.keywords) - accepted)
            problems.append(f"{call.where}: cupy.{call.name} takes no keyword {unknown}")
    assert not problems, "\n".join(problems)


def test_the_standin_has_cupys_names_and_keywords(cupy):
    """The stand-in's tables are CuPy's own: the same keywords, name by name."""
    tables = [(name, allowed) for name, allowed in cupy_standin.FUNCTIONS.items()]
    tables += [(f"ndarray.{name}", allowed) for name, allowed in cupy_standin.METHODS.items()]
    tables += [(f"random.Generator.{n}", allowed) for n, allowed in cupy_standin.GENERATOR.items()]
    tables += [(name, tuple(cupy_standin.ufunc.KEYWORDS)) for name in cupy_standin.UFUNCS]
    differ = []
    for name, allowed in tables:
        target = resolve(cupy, name)
        theirs = None if target is None else keywords(target)
        ours = None if allowed is None else frozenset(allowed)
        if target is None or theirs != ours:
            differ.append(
                f"{name}: stand-in {ours and sorted(ours)}, cupy {theirs and sorted(theirs)}"
            )
    assert not differ, "\n".join(differ)


def test_the_standin_offers_ufunc_at_where_cupy_does(cupy):
    """CuPy implements ``ufunc.at`` only for ufuncs with a scatter kernel."""
    ufuncs = [n for n in dir(cupy) if isinstance(getattr(cupy, n), cupy.ufunc)]
    with_at = sorted(n for n in ufuncs if getattr(getattr(cupy, n), "_scatter_op", None))
    assert with_at == sorted(cupy_standin.ufunc.WITH_AT)


def test_the_scan_finds_each_kind_of_call(tmp_path):
    """(So the checks above are not vacuous.)"""
    (tmp_path / "sample.py").write_text(
        "def f(x, dev):\n"
        "    xp = array_module(x)\n"
        "    y = xp.sum(x, axis=0) + xp.inf\n"
        "    z = array_module(x).lib.stride_tricks.as_strided(x)\n"
        "    w = getattr(xp, 'zeros')(3)\n"
        "    return generators.for_device(dev).integers(0, 3, size=2)\n"
        "g = lambda xp, x: xp.exp(x)\n"
    )
    found = {(c.name, c.keywords, c.where) for c in backend_calls(tmp_path)}
    assert {
        ("sum", ("axis",), "sample.py:3"),
        ("inf", None, "sample.py:3"),
        ("lib.stride_tricks.as_strided", (), "sample.py:4"),
        ("zeros", (), "sample.py:5"),
        ("random.Generator.integers", ("size",), "sample.py:6"),
        ("exp", (), "sample.py:7"),
    } <= found


def _float64_kernel(cupy, name) -> str:
    """The CUDA source line of CuPy's ufunc ``name`` for float64 operands."""
    (routine,) = {op.routine for op in getattr(cupy, name)._ops.ops if op.in_types[0].char == "d"}
    return routine


def test_the_standins_own_kernels_are_cupys(cupy):
    """The float kernels the stand-in computes as CuPy does (``CUDA_KERNELS``) are still
    CuPy's: their CUDA source comes with the wheel. If CuPy changes one, the stand-in's
    copy is stale and this fails."""
    assert _float64_kernel(cupy, "floor_divide") == "out0 = _floor_divide(in0, in1)"
    assert _float64_kernel(cupy, "remainder") == "out0 = in0 - _floor_divide(in0, in1) * in1"
    header = pathlib.Path(cupy.__file__).parent / "_core/include/cupy/carray.cuh"
    body = header.read_text().split("double _floor_divide(double x, double y) {")[1]
    assert body.split("}")[0].split() == ["return", "floor(x", "/", "y);"]
    for name in ("maximum", "minimum"):  # CUDA's max/min: a tie is the hardware's to decide
        assert f"{name[:3]}(in0, in1)" in _float64_kernel(cupy, name)
    assert set(cupy_standin.CUDA_KERNELS) == {"floor_divide", "remainder", "maximum", "minimum"}


def test_the_standin_computes_those_kernels_as_cupy():
    """floor(x / y) for ``//`` (function and operator), ``x - floor(x / y) * y`` for ``%``,
    and a tie of max/min that is not NumPy's (the first argument; NumPy's is the second)."""
    cp = cupy_standin.module
    x, y = cp.asarray([1.0, -7.5, 5.0]), cp.asarray([0.1, 2.0, 0.0])
    assert (
        cp.floor_divide(x, y).get().tolist()
        == (x // y).get().tolist()
        == [10.0, -4.0, float("inf")]
    )
    assert (1.0 // cp.asarray([0.1])).get().tolist() == [10.0]
    assert (x % y).get()[:2].tolist() == [0.0, 0.5]
    zeros = cp.asarray([-0.0, 0.0])
    signs = [cp.maximum(zeros, zeros[::-1]), cp.minimum(zeros, zeros[::-1])]
    assert [cp.signbit(s).get().tolist() for s in signs] == [[True, False], [True, False]]
    assert (cp.asarray([7, -7]) // 2).get().tolist() == [3, -4]  # integers: NumPy's floor

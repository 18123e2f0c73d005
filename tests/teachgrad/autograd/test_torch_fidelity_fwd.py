"""Forward-mode AD, custom Functions with ``jvp`` and gradcheck's own checks, compared with
torch across their variations (issue 20): the same program runs on both libraries, and
either both raise (same class, same first line) or both give the same values.
"""

import numpy as np
import pytest

from tests.teachgrad.autograd.test_torch_fidelity import as_numpy, assert_like_torch

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def _pair(lib, n=3):
    """A primal and a tangent, both plain float64 tensors."""
    primal = lib.tensor(np.arange(1.0, n + 1), dtype=lib.float64)
    return primal, lib.ones(n, dtype=lib.float64)


def _tangents(lib, *tensors):
    return [as_numpy(lib.autograd.forward_ad.unpack_dual(t).tangent) for t in tensors]


# --------------------------------------------------------------------------- make_dual's view

IN_PLACE_ON_THE_DUAL = {
    "dual *= 2": lambda dual, lib: dual.__imul__(2),
    "dual.mul_(other dual)": lambda dual, lib: dual.mul_(_other_dual(lib)),
    "dual[:2] *= 2": lambda dual, lib: dual[:2].mul_(2),
    "dual[:2][1:].add_(1)": lambda dual, lib: dual[:2][1:].add_(1),
    "dual.copy_(ones)": lambda dual, lib: dual.copy_(lib.ones(3, dtype=lib.float64)),
}


def _other_dual(lib):
    primal, tangent = _pair(lib)
    return lib.autograd.forward_ad.make_dual(primal * 2, tangent * 3)


@pytest.mark.parametrize("change", IN_PLACE_ON_THE_DUAL.values(), ids=IN_PLACE_ON_THE_DUAL.keys())
@pytest.mark.parametrize("layout", ["base, base", "view, base", "view, view", "base, view"])
def test_in_place_on_a_dual_leaves_its_primal_without_a_tangent(change, layout):
    """make_dual's result is a view for backward only: its tangent is its own, and the tensor
    it was made from gets none. torch keeps the tangent given when its layout (strides,
    storage offset and size) is the primal's, so in-place changes then write into it."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib, 4)
        foo = foo[1:] if layout.startswith("view") else foo[1:].clone()
        t = t[1:] if layout.endswith("view") else t[1:].clone()
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            change(dual, lib)
            return _tangents(lib, foo, dual, dual[1:]), as_numpy(t), dual._is_view()

    assert_like_torch(program)


def test_writing_a_dual_into_the_primal_s_base_does_not_reach_the_dual():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            other = fwAD.make_dual(lib.zeros(1, dtype=lib.float64), lib.full((1,), 7.0))
            foo[:1].copy_(other.double())
            return _tangents(lib, foo, dual), as_numpy(foo)

    assert_like_torch(program)


def test_the_unpacked_primal_takes_a_tangent_of_its_own():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            dual = fwAD.make_dual(foo, t)
            primal = fwAD.unpack_dual(dual).primal
            primal.copy_(fwAD.make_dual(lib.zeros(3, dtype=lib.float64), 7 * t))
            return _tangents(lib, foo, dual, primal, primal[:1]), primal._is_view()

    assert_like_torch(program)


@pytest.mark.parametrize("detach", ["detach", "detach_"])
def test_detaching_drops_the_tangent(detach):
    """Also for views taken later; a view taken before keeps the tangent it had."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            y = fwAD.make_dual(foo, t) * 3
            before = y[:2]
            fwAD.unpack_dual(before)
            out = getattr(y, detach)()
            return _tangents(lib, out, y, before, y[:2]), out is y

    assert_like_torch(program)


DUAL_PAIRS = {
    "tangent is a dual": lambda fwAD, foo, t, d: (foo.clone(), d),
    "tangent is a view of a result": lambda fwAD, foo, t, d: (foo[:2], (d * 2)[:2]),
    "primal is a dual": lambda fwAD, foo, t, d: (d, t * 3),
    "primal is a view of a dual": lambda fwAD, foo, t, d: (d[:2], t[:2]),
    "both are duals": lambda fwAD, foo, t, d: (d, d),
    "dual tangent of the wrong size": lambda fwAD, foo, t, d: (foo[:2], d),
    "primal of a dual": lambda fwAD, foo, t, d: (fwAD.unpack_dual(d).primal, t * 2),
    "tangent of a dual": lambda fwAD, foo, t, d: (foo, fwAD.unpack_dual(d).tangent),
}


@pytest.mark.parametrize("pair", DUAL_PAIRS.values(), ids=DUAL_PAIRS.keys())
def test_make_dual_refuses_a_primal_or_tangent_that_has_a_tangent(pair):
    def program(lib):
        fwAD = lib.autograd.forward_ad
        foo, t = _pair(lib)
        with fwAD.dual_level():
            d = fwAD.make_dual(foo.clone(), t.clone())
            primal, tangent = pair(fwAD, foo, t, d)
            dual = fwAD.make_dual(primal, tangent)
            return _tangents(lib, dual, d)

    assert_like_torch(program)


@pytest.mark.parametrize("made_in", ["inference", "normal"])
@pytest.mark.parametrize("dual_in", ["inference", "normal"])
@pytest.mark.parametrize("tangent_size", [3, 2])
def test_make_dual_and_inference_mode(made_in, dual_in, tangent_size):
    """torch: inference mode turns forward AD off (no tangent, no checks); an inference
    tensor's dual is not a view and carries no tangent, though its size is checked."""

    def program(lib):
        fwAD = lib.autograd.forward_ad
        with lib.inference_mode(made_in == "inference"):
            foo = lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64)
        t = lib.ones(tangent_size, dtype=lib.float64)
        with fwAD.dual_level():
            with lib.inference_mode(dual_in == "inference"):
                dual = fwAD.make_dual(foo, t)
                inside = _tangents(lib, dual, dual * 2, dual[:1])
            facts = dual._is_view(), dual is foo, dual.is_inference(), dual.requires_grad
            return facts, inside, _tangents(lib, dual, dual * 2)

    assert_like_torch(program)


def test_inference_mode_gives_no_tangents_but_views_still_read_their_base_s():
    def program(lib):
        fwAD = lib.autograd.forward_ad
        with fwAD.dual_level():
            dual = fwAD.make_dual(*_pair(lib))
            with lib.inference_mode():
                return _tangents(lib, dual * 2, dual[:1], fwAD.unpack_dual(dual).primal, dual)

    assert_like_torch(program)

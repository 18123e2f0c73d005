"""Differences from torch that a differential fuzzer found in nn.functional, nn and optim.

Each case runs the same call on both libraries and compares the value and the gradient,
or the error's class and first line.
"""

import numpy as np
import pytest

import teachgrad as tg

from ._common import assert_close, torch_text


def _run(lib, call, arrays, backward=True):
    """``call(F, *tensors)`` with ``lib``'s tensors (floats require grad): the result and the
    float inputs' gradients (if ``backward``), or the error's class and first line."""
    tensors = [lib.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    try:
        out = call(lib.nn.functional, *tensors)
    except Exception as error:  # noqa: BLE001 (any class: it is what is compared)
        return type(error), torch_text(str(error).split("\n")[0])
    if backward:
        out.sum().backward()
    return out, [t.grad for t in tensors if t.dtype.is_floating_point]


def _compare(torch, call, *arrays, backward=True):
    ours, theirs = _run(tg, call, arrays, backward), _run(torch, call, arrays, backward)
    if isinstance(theirs[0], type):
        assert ours == theirs
        return
    assert tuple(ours[0].shape) == tuple(theirs[0].shape)
    assert_close(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    for mine, reference in zip(ours[1], theirs[1], strict=True):
        assert (mine is None) == (reference is None)  # (detached inputs get none)
        if reference is not None:
            assert_close(mine, reference, rtol=1e-10, atol=1e-12)


rng = np.random.default_rng(0)
SCORES = {n: rng.standard_normal(shape) for n, shape in [(1, (4,)), (2, (2, 3)), (3, (2, 3, 2))]}
TARGETS = {1: np.array([2]), 2: np.array([0, 2]), 3: np.array([[0, 2], [1, 1]])}


@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_a_1d_input_takes_a_target_of_one_element(torch, fn, reduction):
    """torch's backward then fails ("size mismatch"): teachgrad's is that of a 0-d target."""
    call = lambda F, x, t: getattr(F, fn)(x, t, reduction=reduction)  # noqa: E731
    _compare(torch, call, SCORES[1], TARGETS[1], backward=False)
    one, number = (_run(tg, call, [SCORES[1], t]) for t in (TARGETS[1], TARGETS[1][0]))
    assert one[0].shape == () and one[0].item() == number[0].item()
    assert_close(one[1][0], number[1][0], rtol=0, atol=0)


@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_a_1d_input_refuses_a_target_of_two_elements(torch, fn):
    _compare(torch, lambda F, x, t: getattr(F, fn)(x, t), SCORES[1], np.array([0, 1]))


@pytest.mark.parametrize("weight_shape", [(5,), (3, 1), (), (2, 2)])
@pytest.mark.parametrize("ndim", [1, 2, 3])
@pytest.mark.parametrize("fn", ["nll_loss", "cross_entropy"])
def test_class_weights_of_the_wrong_size(torch, fn, ndim, weight_shape):
    """A 3-d input takes any weight of C elements; others want shape (C,). The message
    differs: cross_entropy's reshape must not fail first."""
    weight = rng.random(weight_shape)
    call = lambda F, x, t, w: getattr(F, fn)(x, t, weight=w.detach())  # noqa: E731
    _compare(torch, call, SCORES[ndim], TARGETS[ndim], weight)


@pytest.mark.parametrize("weight_shape", [(4,), (3, 1)])
def test_cross_entropy_with_probabilities_and_class_weights_of_the_wrong_size(torch, weight_shape):
    probabilities = rng.random((2, 3, 2))
    call = lambda F, x, p, w: F.cross_entropy(x, p.detach(), weight=w.detach())  # noqa: E731
    _compare(torch, call, SCORES[3], probabilities, rng.random(weight_shape))


@pytest.mark.parametrize("label_smoothing", [-0.5, -0.1, 1.0, 1.5])
@pytest.mark.parametrize("probabilities", [False, True])
def test_label_smoothing_below_zero_is_none_and_above_one_an_error(
    torch, label_smoothing, probabilities
):
    target = rng.random((2, 3)) if probabilities else TARGETS[2]
    call = lambda F, x, t: F.cross_entropy(x, t.detach(), label_smoothing=label_smoothing)  # noqa: E731
    _compare(torch, call, SCORES[2], target)

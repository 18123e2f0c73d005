"""tg.nn.init: torch's gain table and fan rules, the bounds and spreads of each rule,
reproducibility under tg.manual_seed, and in-place filling under no_grad."""

import math
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.nn import init

from ._common import to_numpy

NONLINEARITIES = [
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "sigmoid",
    "tanh",
    "relu",
    "selu",
    "leaky_relu",
]


@pytest.mark.parametrize("name", NONLINEARITIES)
def test_gain_table_matches_torch(torch, name):
    assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))


@pytest.mark.parametrize("slope", [0, 0.2, 1, math.sqrt(5)])
def test_leaky_relu_gain_uses_the_slope_like_torch(torch, slope):
    expected = torch.nn.init.calculate_gain("leaky_relu", slope)
    assert init.calculate_gain("leaky_relu", slope) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("name", "param"), [("softplus", None), ("leaky_relu", "0.1"), ("leaky_relu", True)]
)
def test_bad_gain_requests_raise_value_error_like_torch(torch, name, param):
    with pytest.raises(ValueError):
        torch.nn.init.calculate_gain(name, param)
    with pytest.raises(ValueError):
        init.calculate_gain(name, param)


@pytest.mark.parametrize("shape", [(3, 5), (8, 3, 5, 5), (4, 2, 3), (6, 4, 1, 2, 3)])
def test_fan_in_and_fan_out_match_torch(torch, shape):
    expected = torch.nn.init._calculate_fan_in_and_fan_out(torch.empty(shape))
    assert init._calculate_fan_in_and_fan_out(tg.empty(*shape)) == expected


def test_fans_of_a_vector_are_undefined(torch):
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        torch.nn.init.xavier_uniform_(torch.empty(5))
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(tg.empty(5))


def test_bad_mode_raises_value_error_like_torch(torch):
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        torch.nn.init.kaiming_uniform_(torch.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(tg.empty(3, 3), mode="fan_avg")


# ----------------------------------------------------------------------------- uniform rules
# Each rule: the bound of its uniform distribution, from the formulas in torch's documentation.
UNIFORM_RULES = {
    "xavier_uniform": (
        lambda lib_init, w: lib_init.xavier_uniform_(w),
        lambda fan_in, fan_out: math.sqrt(6 / (fan_in + fan_out)),
    ),
    "xavier_uniform_gain": (
        lambda lib_init, w: lib_init.xavier_uniform_(w, gain=5 / 3),
        lambda fan_in, fan_out: 5 / 3 * math.sqrt(6 / (fan_in + fan_out)),
    ),
    "kaiming_uniform_default": (  # a=0: the leaky ReLU is a ReLU, gain sqrt(2)
        lambda lib_init, w: lib_init.kaiming_uniform_(w),
        lambda fan_in, fan_out: math.sqrt(2) * math.sqrt(3 / fan_in),
    ),
    "kaiming_uniform_relu_fan_out": (
        lambda lib_init, w: lib_init.kaiming_uniform_(w, mode="fan_out", nonlinearity="relu"),
        lambda fan_in, fan_out: math.sqrt(2) * math.sqrt(3 / fan_out),
    ),
    "kaiming_uniform_sqrt5": (  # what Linear and Conv2d use: bound 1/sqrt(fan_in)
        lambda lib_init, w: lib_init.kaiming_uniform_(w, a=math.sqrt(5)),
        lambda fan_in, fan_out: 1 / math.sqrt(fan_in),
    ),
}
SHAPE = (300, 200, 3)  # 180000 samples
FAN_IN, FAN_OUT = SHAPE[1] * SHAPE[2], SHAPE[0] * SHAPE[2]  # 600, 900


def filled_by_both(torch, fill, seed):
    """The values ``fill(lib_init, w)`` puts into an empty SHAPE tensor of each library
    (teachgrad's, then torch's), each library seeded with ``seed``."""
    tg.manual_seed(seed)
    torch.manual_seed(seed)
    return to_numpy(fill(init, tg.empty(*SHAPE))), fill(
        torch.nn.init, torch.empty(SHAPE)
    ).cpu().numpy()


@pytest.mark.parametrize("rule", sorted(UNIFORM_RULES))
def test_uniform_rules_use_torchs_bound(torch, rule):
    """Both libraries fill [-bound, bound] (reaching near both ends) with the uniform's std."""
    fill, bound_of = UNIFORM_RULES[rule]
    bound = bound_of(FAN_IN, FAN_OUT)
    for values in filled_by_both(torch, fill, seed=0):
        assert np.abs(values).max() <= bound * (1 + 1e-6)
        assert values.max() > 0.99 * bound and values.min() < -0.99 * bound
        assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.01)
        assert abs(values.mean()) < 0.01 * bound


NORMAL_RULES = {
    "xavier_normal": (
        lambda lib_init, w: lib_init.xavier_normal_(w),
        lambda fan_in, fan_out: math.sqrt(2 / (fan_in + fan_out)),
    ),
    "kaiming_normal_relu": (
        lambda lib_init, w: lib_init.kaiming_normal_(w, nonlinearity="relu"),
        lambda fan_in, fan_out: math.sqrt(2 / fan_in),
    ),
    "kaiming_normal_tanh_fan_out": (
        lambda lib_init, w: lib_init.kaiming_normal_(w, mode="fan_out", nonlinearity="tanh"),
        lambda fan_in, fan_out: 5 / 3 / math.sqrt(fan_out),
    ),
    "normal": (
        lambda lib_init, w: lib_init.normal_(w, mean=0.0, std=0.02),
        lambda fan_in, fan_out: 0.02,
    ),
}


@pytest.mark.parametrize("rule", sorted(NORMAL_RULES))
def test_normal_rules_have_torchs_std(torch, rule):
    fill, std_of = NORMAL_RULES[rule]
    std = std_of(FAN_IN, FAN_OUT)
    for values in filled_by_both(torch, fill, seed=1):
        assert values.std() == pytest.approx(std, rel=0.01)
        assert abs(values.mean()) < 0.01 * std


def test_uniform_and_normal_use_their_arguments():
    tg.manual_seed(2)
    u = to_numpy(init.uniform_(tg.empty(20000), a=2.0, b=5.0))
    assert u.min() >= 2.0 and u.max() <= 5.0 and u.mean() == pytest.approx(3.5, abs=0.05)
    n = to_numpy(init.normal_(tg.empty(20000, dtype=tg.float64), mean=-1.0, std=3.0))
    assert n.mean() == pytest.approx(-1.0, abs=0.1) and n.std() == pytest.approx(3.0, rel=0.02)


@pytest.mark.parametrize(
    "fill",
    [
        lambda w: init.uniform_(w),
        lambda w: init.normal_(w),
        lambda w: init.xavier_uniform_(w),
        lambda w: init.xavier_normal_(w),
        lambda w: init.kaiming_uniform_(w),
        lambda w: init.kaiming_normal_(w),
    ],
)
def test_manual_seed_makes_random_inits_repeat(fill):
    tg.manual_seed(123)
    first = to_numpy(fill(tg.empty(4, 5)))
    tg.manual_seed(123)
    again = to_numpy(fill(tg.empty(4, 5)))
    different = to_numpy(fill(tg.empty(4, 5)))
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, different)


@pytest.mark.parametrize(
    ("name", "args"), [("constant_", (0.25,)), ("ones_", ()), ("zeros_", ()), ("eye_", ())]
)
@pytest.mark.parametrize("shape", [(3, 4), (4, 2)])
def test_deterministic_fills_match_torch(torch, name, args, shape):
    ours = getattr(init, name)(tg.empty(*shape), *args)
    theirs = getattr(torch.nn.init, name)(torch.empty(shape), *args)
    np.testing.assert_array_equal(to_numpy(ours), theirs.cpu().numpy())


def test_eye_needs_a_matrix(torch):
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        torch.nn.init.eye_(torch.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(tg.empty(2, 2, 2))


@pytest.mark.parametrize(
    "fill",
    [
        lambda w: init.uniform_(w, -1, 1),
        lambda w: init.normal_(w),
        lambda w: init.constant_(w, 3.0),
        lambda w: init.zeros_(w),
        lambda w: init.ones_(w),
        lambda w: init.eye_(w),
        lambda w: init.xavier_uniform_(w),
        lambda w: init.kaiming_normal_(w),
    ],
)
def test_inits_change_a_parameter_in_place_without_recording(fill):
    """A Parameter is a leaf that requires grad: only under no_grad may it change in place."""
    p = tg.nn.Parameter(tg.full((3, 3), 7.0))
    result = fill(p)
    assert result is p
    assert p.is_leaf and p.grad_fn is None and p.requires_grad
    assert p._version == 1 and not bool((p == 7.0).all())


def test_inits_keep_dtype_and_shape():
    w = tg.empty(3, 4, dtype=tg.float64)
    init.kaiming_uniform_(w)
    assert w.dtype is tg.float64 and w.shape == (3, 4)


def test_kaiming_on_an_empty_tensor_warns_like_torch(torch):
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        torch.nn.init.kaiming_uniform_(torch.empty(0, 3))
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        w = tg.empty(0, 3)
        assert init.kaiming_uniform_(w) is w
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.kaiming_uniform_(tg.empty(2, 3))  # nonempty: no warning

"""The layers of tg.nn: torch's default initialisation, torch's argument checks, and the
same outputs and gradients as torch's layers when both hold the same weights.

The forward/backward comparisons run in float64, with weights drawn at random
(not the default ones and zeros of LayerNorm, which would hide mistakes).
"""

import math
import warnings

import numpy as np
import pytest

import teachgrad as tg

from ._common import assert_close, from_torch, state_dict_from_torch, to_numpy

# ----------------------------------------------------------------------------- default initialisation


def _assert_uniform_fill(values, bound):
    """Samples of U(-bound, bound): inside it, reaching near both ends, with its std."""
    values = to_numpy(values).ravel()
    assert np.abs(values).max() <= bound * (1 + 1e-6)
    if values.size >= 10000:
        assert values.max() > 0.98 * bound and values.min() < -0.98 * bound
        assert values.std() == pytest.approx(bound / math.sqrt(3), rel=0.02)


@pytest.mark.parametrize(
    ("build", "fan_in"),
    [
        (lambda nn: nn.Linear(400, 300), 400),
        (lambda nn: nn.Linear(25, 1000), 25),
        (lambda nn: nn.Conv2d(16, 64, 5), 16 * 25),
        (lambda nn: nn.Conv2d(16, 64, (3, 5), groups=4), 4 * 15),
    ],
    ids=["linear", "linear-narrow", "conv", "conv-groups"],
)
def test_linear_and_conv_start_uniform_within_one_over_sqrt_fan_in(torch, build, fan_in):
    """torch's rule (kaiming_uniform_ with a=sqrt(5)) gives weight and bias U(±1/sqrt(fan_in))."""
    bound = 1 / math.sqrt(fan_in)
    tg.manual_seed(0)
    torch.manual_seed(0)
    for layer in (build(tg.nn), build(torch.nn)):
        _assert_uniform_fill(layer.weight.detach(), bound)
        _assert_uniform_fill(layer.bias.detach(), bound)


def test_embedding_starts_standard_normal_with_a_zero_padding_row(torch):
    tg.manual_seed(0)
    for lib in (tg, torch):
        emb = lib.nn.Embedding(1000, 64, padding_idx=-1)
        assert emb.padding_idx == 999
        values = to_numpy(emb.weight.detach())
        assert not values[-1].any()
        assert values[:-1].std() == pytest.approx(1.0, rel=0.02)
        assert abs(values[:-1].mean()) < 0.02


def test_layer_norm_starts_as_ones_and_zeros():
    ln = tg.nn.LayerNorm((2, 3))
    assert ln.weight.tolist() == [[1.0] * 3] * 2 and ln.bias.tolist() == [[0.0] * 3] * 2
    assert tg.nn.LayerNorm(3, elementwise_affine=False).weight is None
    assert tg.nn.LayerNorm(3, bias=False).bias is None


@pytest.mark.parametrize(
    "build",
    [
        lambda: tg.nn.Linear(3, 4),
        lambda: tg.nn.Conv2d(2, 3, 3),
        lambda: tg.nn.Embedding(6, 2, padding_idx=1),
    ],
    ids=["linear", "conv", "embedding"],
)
def test_manual_seed_makes_layers_repeat_and_reset_parameters_redraws(build):
    tg.manual_seed(5)
    first = build()
    tg.manual_seed(5)
    again = build()
    for p, q in zip(first.parameters(), again.parameters()):
        assert p.tolist() == q.tolist()
    weight = first.weight
    before = weight.tolist()
    first.reset_parameters()
    assert first.weight is weight and weight.tolist() != before


def test_dtype_and_bias_arguments():
    lin = tg.nn.Linear(2, 3, bias=False, dtype=tg.float64)
    assert lin.weight.dtype is tg.float64 and lin.bias is None
    assert [n for n, _ in lin.named_parameters()] == ["weight"]
    conv = tg.nn.Conv2d(4, 6, 3, groups=2, device="cpu", dtype=tg.float64)
    assert conv.weight.shape == (6, 2, 3, 3) and conv.bias.dtype is tg.float64
    emb = tg.nn.Embedding(4, 2, dtype=tg.float64)
    assert emb.weight.dtype is tg.float64


def test_embedding_from_pretrained_is_frozen_by_default():
    table = tg.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = tg.nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad and emb.weight.tolist() == table.tolist()
    assert tg.nn.Embedding.from_pretrained(table, freeze=False).weight.requires_grad


# ----------------------------------------------------------------------------- argument checks

BAD_ARGUMENTS = {
    "conv-groups-zero": (
        lambda nn: nn.Conv2d(2, 2, 3, groups=0),
        ValueError,
        "groups must be a positive",
    ),
    "conv-in-groups": (
        lambda nn: nn.Conv2d(3, 4, 3, groups=2),
        ValueError,
        "in_channels must be divisible",
    ),
    "conv-out-groups": (
        lambda nn: nn.Conv2d(4, 3, 3, groups=2),
        ValueError,
        "out_channels must be divisible",
    ),
    "conv-padding-word": (
        lambda nn: nn.Conv2d(2, 2, 3, padding="full"),
        ValueError,
        "Invalid padding string 'full'",
    ),
    "conv-same-strided": (
        lambda nn: nn.Conv2d(2, 2, 3, stride=2, padding="same"),
        ValueError,
        "padding='same' is not supported for strided convolutions",
    ),
    "conv-padding-mode": (
        lambda nn: nn.Conv2d(2, 2, 3, padding_mode="mirror"),
        ValueError,
        "padding_mode must be one of .*, but got padding_mode='mirror'",
    ),
    "dropout-p": (
        lambda nn: nn.Dropout(1.5),
        ValueError,
        "dropout probability has to be between 0 and 1, but got 1.5",
    ),
    "embedding-padding": (
        lambda nn: nn.Embedding(3, 2, padding_idx=3),
        AssertionError,
        "Padding_idx must be within",
    ),
    "unflatten-size": (
        lambda nn: nn.Unflatten(1, (2, 2.5)),
        TypeError,
        "unflattened_size must be tuple of ints",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_ARGUMENTS))
def test_bad_layer_arguments_raise_like_torch(torch, case):
    build, error, message = BAD_ARGUMENTS[case]
    for nn in (tg.nn, torch.nn):
        with pytest.raises(error, match=message):
            build(nn)


# ----------------------------------------------------------------------------- forward and backward vs torch


def _randomised_twin(build, torch, seed=0):
    """The layer in both libraries in float64, holding the same random weights."""
    reference = build(torch.nn).double()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(torch.rand(p.shape, generator=generator, dtype=p.dtype) * 2 - 1)
    model = build(tg.nn).double()
    model.load_state_dict(state_dict_from_torch(reference))
    return model, reference


def _compare_forward_backward(model, reference, torch, x, rtol=1e-7, atol=1e-9):
    """Same output; same gradients for the input and every parameter."""
    ours_in = tg.tensor(x, requires_grad=True)
    theirs_in = torch.tensor(x, requires_grad=True)
    ours, theirs = model(ours_in), reference(theirs_in)
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert_close(ours, theirs, rtol, atol)
    upstream = np.random.default_rng(1).normal(size=tuple(theirs.shape))
    ours.backward(tg.tensor(upstream))
    theirs.backward(torch.tensor(upstream))
    assert_close(ours_in.grad, theirs_in.grad, rtol, atol)
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None, name
        assert_close(p.grad, q.grad, rtol, atol)


LAYERS = {
    "linear": (lambda nn: nn.Linear(5, 3), (4, 5)),
    "linear-no-bias-batched": (lambda nn: nn.Linear(5, 3, bias=False), (2, 4, 5)),
    "conv": (lambda nn: nn.Conv2d(3, 4, 3), (2, 3, 7, 6)),
    "conv-stride-padding": (
        lambda nn: nn.Conv2d(3, 4, (3, 2), stride=2, padding=(1, 2)),
        (2, 3, 7, 6),
    ),
    "conv-dilation-groups": (
        lambda nn: nn.Conv2d(4, 6, 3, dilation=2, groups=2, bias=False),
        (1, 4, 9, 9),
    ),
    "conv-valid": (lambda nn: nn.Conv2d(2, 3, 3, padding="valid"), (1, 2, 5, 5)),
    "conv-same-odd": (lambda nn: nn.Conv2d(2, 3, 3, padding="same"), (2, 2, 5, 6)),
    "conv-same-dilated": (lambda nn: nn.Conv2d(2, 3, 3, padding="same", dilation=2), (1, 2, 6, 6)),
    "conv-same-even": (lambda nn: nn.Conv2d(2, 3, (4, 3), padding="same"), (1, 2, 6, 5)),
    "conv-reflect": (
        lambda nn: nn.Conv2d(2, 3, 3, padding=2, padding_mode="reflect"),
        (2, 2, 5, 4),
    ),
    "conv-replicate": (
        lambda nn: nn.Conv2d(2, 3, 3, padding=(1, 2), padding_mode="replicate"),
        (1, 2, 4, 5),
    ),
    "conv-circular": (
        lambda nn: nn.Conv2d(2, 3, 3, padding=(2, 1), padding_mode="circular"),
        (1, 2, 4, 5),
    ),
    "conv-reflect-same-even": (
        lambda nn: nn.Conv2d(2, 2, 4, padding="same", padding_mode="reflect"),
        (1, 2, 6, 6),
    ),
    "layer-norm": (lambda nn: nn.LayerNorm(5), (3, 5)),
    "layer-norm-2d": (lambda nn: nn.LayerNorm((3, 4), eps=1e-3), (2, 3, 4)),
    "layer-norm-plain": (lambda nn: nn.LayerNorm(4, elementwise_affine=False), (2, 3, 4)),
    "layer-norm-no-bias": (lambda nn: nn.LayerNorm(4, bias=False), (3, 4)),
    "relu": (lambda nn: nn.ReLU(), (3, 4)),
    "tanh": (lambda nn: nn.Tanh(), (3, 4)),
    "sigmoid": (lambda nn: nn.Sigmoid(), (3, 4)),
    "gelu": (lambda nn: nn.GELU(), (3, 4)),
    "gelu-tanh": (lambda nn: nn.GELU(approximate="tanh"), (3, 4)),
    "silu": (lambda nn: nn.SiLU(), (3, 4)),
    "softmax": (lambda nn: nn.Softmax(dim=1), (3, 4, 2)),
    "log-softmax": (lambda nn: nn.LogSoftmax(dim=-1), (3, 4)),
    "identity": (lambda nn: nn.Identity(), (3, 4)),
    "flatten": (lambda nn: nn.Flatten(), (2, 3, 4, 5)),
    "flatten-middle": (lambda nn: nn.Flatten(0, 1), (2, 3, 4)),
    "unflatten": (lambda nn: nn.Unflatten(1, (2, -1)), (3, 8)),
    "unflatten-last": (lambda nn: nn.Unflatten(-1, (2, 2)), (3, 4)),
    "dropout-eval": (lambda nn: nn.Dropout(0.5).eval(), (3, 4)),
    "sequential-cnn": (
        lambda nn: nn.Sequential(
            nn.Conv2d(2, 4, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(4, 4, 3, stride=2, padding_mode="circular", padding=1),
            nn.Flatten(),
            nn.Linear(36, 8),
            nn.LayerNorm(8),
            nn.GELU(),
            nn.Dropout(0.3).eval(),
            nn.Linear(8, 3),
            nn.LogSoftmax(dim=1),
        ),
        (2, 2, 6, 6),
    ),
}


@pytest.mark.filterwarnings("ignore:Using padding='same' with even kernel")  # torch's own note
@pytest.mark.parametrize("case", sorted(LAYERS))
def test_layer_matches_torch_forward_and_backward(torch, case):
    build, shape = LAYERS[case]
    model, reference = _randomised_twin(build, torch)
    x = np.random.default_rng(0).normal(size=shape)
    _compare_forward_backward(model, reference, torch, x)


@pytest.mark.parametrize("name", ["ReLU", "SiLU"])
def test_inplace_activations_overwrite_their_input_like_torch(torch, name):
    values = [-1.0, 0.5, 2.0]
    results = []
    for lib in (tg, torch):
        x = lib.tensor(values, dtype=lib.float64)
        out = getattr(lib.nn, name)(inplace=True)(x)
        assert out is x and x._version == 1
        results.append(x.tolist())
    np.testing.assert_allclose(results[0], results[1], rtol=1e-12)
    assert results[0] != values


def test_inplace_dropout_overwrites_its_input():
    tg.manual_seed(0)
    x = tg.ones(1000)
    out = tg.nn.Dropout(0.5, inplace=True)(x)
    assert out is x and 0.4 < (x == 0).float().mean().item() < 0.6


def test_softmax_without_dim_warns_and_picks_torchs_dim(torch):
    x = np.random.default_rng(2).normal(size=(2, 3, 4))
    for dims in (x, x[0], x[0, 0]):
        with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
            ours = tg.nn.Softmax()(tg.tensor(dims))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            theirs = torch.nn.Softmax()(torch.tensor(dims))
        assert_close(ours, theirs)


@pytest.mark.parametrize("padding_idx", [None, 0, -2])
def test_embedding_matches_torch_and_padding_gets_no_gradient(torch, padding_idx):
    model, reference = _randomised_twin(
        lambda nn: nn.Embedding(7, 3, padding_idx=padding_idx), torch
    )
    ids = [[0, 5, 2, 5], [1, 0, 6, 3]]
    ours, theirs = model(tg.tensor(ids)), reference(torch.tensor(ids))
    assert_close(ours, theirs)
    upstream = np.random.default_rng(3).normal(size=(2, 4, 3))
    ours.backward(tg.tensor(upstream))
    theirs.backward(torch.tensor(upstream))
    assert_close(model.weight.grad, reference.weight.grad)
    if padding_idx is not None:
        assert not bool(model.weight.grad[padding_idx].any())


# ----------------------------------------------------------------------------- dropout


def test_dropout_in_training_zeroes_about_p_and_scales_the_rest():
    tg.manual_seed(0)
    x = tg.ones(200, 100, requires_grad=True)
    out = tg.nn.Dropout(0.3)(x)
    values = to_numpy(out)
    kept = values != 0
    assert kept.mean() == pytest.approx(0.7, abs=0.02)
    np.testing.assert_allclose(values[kept], 1 / 0.7, rtol=1e-6)
    out.sum().backward()
    np.testing.assert_allclose(to_numpy(x.grad), values, rtol=1e-6)  # the same mask, the same scale


def test_dropout_repeats_after_manual_seed_and_follows_train_eval():
    drop = tg.nn.Dropout(0.5)
    tg.manual_seed(4)
    first = drop(tg.ones(50))
    tg.manual_seed(4)
    assert drop(tg.ones(50)).tolist() == first.tolist()
    drop.eval()
    x = tg.randn(50)
    assert drop(x).tolist() == x.tolist()


def test_dropout_extremes():
    x = tg.randn(20)
    assert tg.nn.Dropout(0.0)(x).tolist() == x.tolist()
    assert not bool(tg.nn.Dropout(1.0)(x).any())


# ----------------------------------------------------------------------------- losses


def _loss_inputs(kind, torch, rng):
    """(input, target) for a loss of ``kind``, as NumPy arrays."""
    if kind == "regression":
        return rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    if kind == "log-probabilities":
        scores = torch.tensor(rng.normal(size=(5, 4)))
        return torch.log_softmax(scores, 1).cpu().numpy(), np.array([0, 3, 1, 1, 2])
    if kind == "logits":
        return rng.normal(size=(5, 4)), np.array([0, 3, 1, 1, 2])
    if kind == "logits-spatial":
        return rng.normal(size=(2, 4, 3)), np.array([[0, 3, 1], [2, 2, 0]])
    if kind == "probabilities":
        return rng.uniform(0.05, 0.95, size=(4, 3)), rng.uniform(0, 1, size=(4, 3))
    return rng.normal(size=(4, 3)), rng.uniform(0, 1, size=(4, 3))  # binary logits


WEIGHT4 = [0.5, 2.0, 1.0, 0.25]
LOSSES = {
    "mse": (lambda nn, lib: nn.MSELoss(), "regression"),
    "mse-sum": (lambda nn, lib: nn.MSELoss(reduction="sum"), "regression"),
    "mse-none": (lambda nn, lib: nn.MSELoss(reduction="none"), "regression"),
    "l1": (lambda nn, lib: nn.L1Loss(), "regression"),
    "l1-none": (lambda nn, lib: nn.L1Loss(reduction="none"), "regression"),
    "nll": (lambda nn, lib: nn.NLLLoss(), "log-probabilities"),
    "nll-weighted-ignore": (
        lambda nn, lib: nn.NLLLoss(weight=lib.tensor(WEIGHT4, dtype=lib.float64), ignore_index=1),
        "log-probabilities",
    ),
    "nll-sum": (lambda nn, lib: nn.NLLLoss(reduction="sum"), "log-probabilities"),
    "cross-entropy": (lambda nn, lib: nn.CrossEntropyLoss(), "logits"),
    "cross-entropy-none": (lambda nn, lib: nn.CrossEntropyLoss(reduction="none"), "logits"),
    "cross-entropy-weighted": (
        lambda nn, lib: nn.CrossEntropyLoss(weight=lib.tensor(WEIGHT4, dtype=lib.float64)),
        "logits",
    ),
    "cross-entropy-ignore": (lambda nn, lib: nn.CrossEntropyLoss(ignore_index=3), "logits"),
    "cross-entropy-smoothing": (lambda nn, lib: nn.CrossEntropyLoss(label_smoothing=0.2), "logits"),
    "cross-entropy-spatial": (lambda nn, lib: nn.CrossEntropyLoss(), "logits-spatial"),
    "bce": (lambda nn, lib: nn.BCELoss(), "probabilities"),
    "bce-weighted-sum": (
        lambda nn, lib: nn.BCELoss(
            weight=lib.tensor([1.0, 2.0, 0.5], dtype=lib.float64), reduction="sum"
        ),
        "probabilities",
    ),
    "bce-logits": (lambda nn, lib: nn.BCEWithLogitsLoss(), "binary-logits"),
    "bce-logits-pos-weight": (
        lambda nn, lib: nn.BCEWithLogitsLoss(
            pos_weight=lib.tensor([3.0, 1.0, 0.5], dtype=lib.float64)
        ),
        "binary-logits",
    ),
}


@pytest.mark.parametrize("case", sorted(LOSSES))
def test_loss_matches_torch_value_and_input_gradient(torch, case):
    build, kind = LOSSES[case]
    x, target = _loss_inputs(kind, torch, np.random.default_rng(7))
    ours_in, theirs_in = tg.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ours = build(tg.nn, tg)(ours_in, tg.tensor(target))
    theirs = build(torch.nn, torch)(theirs_in, torch.tensor(target))
    assert_close(ours, theirs, rtol=1e-7, atol=1e-9)
    ours.sum().backward()
    theirs.sum().backward()
    assert_close(ours_in.grad, theirs_in.grad, rtol=1e-7, atol=1e-9)


def test_loss_settings_are_attributes_and_weights_are_buffers(torch):
    for lib in (tg, torch):
        loss = lib.nn.CrossEntropyLoss(weight=lib.ones(3), ignore_index=2, label_smoothing=0.1)
        assert (loss.reduction, loss.ignore_index, loss.label_smoothing) == ("mean", 2, 0.1)
        assert [n for n, _ in loss.named_buffers()] == ["weight"]
        assert list(lib.nn.BCEWithLogitsLoss(pos_weight=lib.ones(2)).state_dict()) == ["pos_weight"]


def test_legacy_reduction_flags_map_like_torch(torch):
    for size_average, reduce in ((False, None), (None, False), (True, True)):
        with pytest.warns(UserWarning, match="size_average and reduce args will be deprecated"):
            ours = tg.nn.MSELoss(size_average, reduce).reduction
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert ours == torch.nn.MSELoss(size_average, reduce).reduction


# ----------------------------------------------------------------------------- a whole model


def test_torch_trained_weights_give_torch_predictions(torch):
    """The use case of load_state_dict: a model's weights from torch, converted through NumPy."""

    def build(nn):
        return nn.Sequential(
            nn.Embedding(11, 6, padding_idx=0),
            nn.LayerNorm(6),
            nn.Flatten(),
            nn.Linear(24, 5),
            nn.SiLU(),
            nn.Linear(5, 3),
        )

    torch.manual_seed(3)
    reference = build(torch.nn)
    model = build(tg.nn)
    model.load_state_dict({k: from_torch(v) for k, v in reference.state_dict().items()})
    ids = [[1, 4, 0, 10], [3, 3, 7, 2]]
    assert_close(model(tg.tensor(ids)), reference(torch.tensor(ids)), rtol=1e-5, atol=1e-6)
    labels = [2, 0]
    loss = tg.nn.CrossEntropyLoss()(model(tg.tensor(ids)), tg.tensor(labels))
    torch_loss = torch.nn.CrossEntropyLoss()(reference(torch.tensor(ids)), torch.tensor(labels))
    loss.backward()
    torch_loss.backward()
    for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
        assert p.grad is not None, name
        assert_close(p.grad, q.grad, rtol=1e-4, atol=1e-6)

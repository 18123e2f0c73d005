"""Activation checkpointing (``teachgrad.utils.checkpoint``), as PyTorch's own tests
(test_autograd.py: test_checkpointing*, test_checkpoint_valid_reset,
test_checkpointing_without_reentrant_*, test_checkpoint_sequential ...) check it: each test
runs once with teachgrad and once with torch (the ``lib`` fixture)."""

import warnings

import numpy as np
import pytest

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)

REENTRANT = pytest.mark.parametrize("reentrant", [True, False], ids=["reentrant", "non-reentrant"])


def _ck(lib):
    import importlib

    return importlib.import_module(f"{lib.__name__}.utils.checkpoint")


def _data(lib, *shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape)
    return lib.tensor(values, requires_grad=True)


@REENTRANT
def test_checkpointing_gives_the_plain_gradients(lib, reentrant):
    w1, w2 = _data(lib, 4, 4, seed=1), _data(lib, 4, 4, seed=2)

    def block(x):
        return (x @ w1).tanh() @ w2

    grads = []
    for ckpt in (False, True):
        x = _data(lib, 3, 4)
        y = _ck(lib).checkpoint(block, x, use_reentrant=reentrant) if ckpt else block(x)
        (y.sin().sum()).backward()
        grads.append([np.array(t.grad.tolist()) for t in (x, w1, w2)])
        w1.grad = w2.grad = None
    for plain, checkpointed in zip(*grads, strict=True):
        np.testing.assert_allclose(checkpointed, plain, rtol=1e-12)


@REENTRANT
def test_the_checkpointed_ops_keep_nothing_and_run_again_in_backward(lib, reentrant):
    calls = []

    def block(x):
        calls.append("run")
        return x.exp().sin()

    x = _data(lib, 5)
    y = _ck(lib).checkpoint(block, x, use_reentrant=reentrant)
    assert calls == ["run"]
    if reentrant:
        assert type(y.grad_fn).__name__ == "CheckpointFunctionBackward"
    y.sum().backward()
    assert calls == ["run", "run"]
    np.testing.assert_allclose(x.grad.tolist(), (np.cos(np.exp(x.tolist())) * np.exp(x.tolist())))


def test_the_reentrant_checkpoint_refuses_grad_and_inputs(lib):
    """test_checkpoint_valid_reset / test_checkpointing: .grad() and backward(inputs=) miss
    the leaves the inner backward reaches."""
    x = _data(lib, 3)
    y = _ck(lib).checkpoint(lambda v: v * v, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="^When use_reentrant=True, torch.utils.checkpoint is"):
        lib.autograd.grad(y.sum(), x)
    y = _ck(lib).checkpoint(lambda v: v * v, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="^When use_reentrant=True, torch.utils.checkpoint is"):
        y.sum().backward(inputs=[x])
    assert lib.autograd._is_checkpoint_valid()


def test_the_non_reentrant_checkpoint_works_with_grad_and_double_backward(lib):
    x = _data(lib, 3)
    y = _ck(lib).checkpoint(lambda v: (v * v * v).sum(), x, use_reentrant=False)
    (g,) = lib.autograd.grad(y, x, create_graph=True)
    np.testing.assert_allclose(g.tolist(), 3 * np.array(x.tolist()) ** 2)
    (gg,) = lib.autograd.grad(g.sum(), x)
    np.testing.assert_allclose(gg.tolist(), 6 * np.array(x.tolist()))


@REENTRANT
def test_dropout_masks_repeat_in_the_second_run(lib, reentrant):
    """preserve_rng_state: the second run draws the same random numbers."""
    lib.manual_seed(0)
    x = lib.ones(200, requires_grad=True)
    y = _ck(lib).checkpoint(
        lambda v: lib.nn.functional.dropout(v, 0.5) * 3, x, use_reentrant=reentrant
    )
    y.sum().backward()
    kept = np.array(y.tolist()) != 0
    assert np.array_equal(np.array(x.grad.tolist()) != 0, kept) and 40 < kept.sum() < 160


SECOND_RUNS = {  # the first run saves x.exp()'s output (and the second exp's): then...
    "more tensors: it stops when it has enough": (lambda x: x.exp().exp(), lambda x: x.exp(), None),
    "fewer tensors": (
        lambda x: x.exp(),
        lambda x: x.exp().exp(),
        "^torch.utils.checkpoint: A different number of tensors was saved during the original",
    ),
    "other shapes": (
        lambda x: x[:2].exp(),
        lambda x: x.exp(),
        "^torch.utils.checkpoint: Recomputed values for the following tensors have different",
    ),
}


@pytest.mark.parametrize("case", SECOND_RUNS.values(), ids=SECOND_RUNS.keys())
def test_a_second_run_unlike_the_first(lib, case):
    second, first, error = case
    runs = []

    def block(x):
        runs.append(1)
        return first(x) if len(runs) == 1 else second(x)

    x = _data(lib, 3)
    y = _ck(lib).checkpoint(block, x, use_reentrant=False)
    if error is None:
        y.sum().backward()
        np.testing.assert_allclose(x.grad.tolist(), np.exp(x.tolist()))
    else:
        with pytest.raises(RuntimeError, match=error):
            y.sum().backward()


def test_use_reentrant_not_given_warns(lib):
    with pytest.warns(UserWarning, match="the use_reentrant parameter should be passed explicitly"):
        _ck(lib).checkpoint(lambda v: v * 2, _data(lib, 2))
    with pytest.raises(ValueError, match="^Passing `context_fn` or `debug` is only supported when"):
        _ck(lib).checkpoint(lambda v: v * 2, _data(lib, 2), use_reentrant=True, debug=True)


def test_the_reentrant_checkpoint_of_inputs_needing_no_grad_warns(lib):
    with pytest.warns(UserWarning, match="^None of the inputs have requires_grad=True"):
        _ck(lib).checkpoint(lambda v: v * 2, lib.ones(2), use_reentrant=True)


@REENTRANT
def test_checkpoint_sequential(lib, reentrant):
    lib.manual_seed(0)
    net = lib.nn.Sequential(*[lib.nn.Linear(4, 4) for _ in range(4)])
    x = lib.tensor(np.ones((2, 4)), dtype=lib.float32, requires_grad=True)
    plain = net(x).sum()
    plain.backward()
    expected = [p.grad.tolist() for p in net.parameters()] + [x.grad.tolist()]
    net.zero_grad()
    x.grad = None
    out = _ck(lib).checkpoint_sequential(net, 2, x, use_reentrant=reentrant)
    assert out.sum().item() == pytest.approx(plain.item())
    out.sum().backward()
    got = [p.grad.tolist() for p in net.parameters()] + [x.grad.tolist()]
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_get_and_set_rng_state(lib):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        state = lib.get_rng_state()
        a = lib.rand(4)
        lib.set_rng_state(state)
        assert lib.rand(4).tolist() == a.tolist()
        assert state.dtype == lib.uint8


def test_early_stop_off_runs_the_whole_function_again(lib):
    """early_stop=False (or set_checkpoint_early_stop(False) around the forward): the second
    run goes to the end, and one that saves more than the first is then an error."""
    ck, runs = _ck(lib), []

    def block(x):
        runs.append(1)
        return x.exp() if len(runs) == 1 else x.exp().exp()

    x = _data(lib, 3)
    y = ck.checkpoint(block, x, use_reentrant=False, early_stop=False)
    with pytest.raises(RuntimeError, match="^torch.utils.checkpoint: trying to save more tensors"):
        y.sum().backward()
    runs.clear()
    with ck.set_checkpoint_early_stop(False):
        y = ck.checkpoint(block, x, use_reentrant=False)
    with pytest.raises(RuntimeError, match="^torch.utils.checkpoint: trying to save more tensors"):
        y.sum().backward()
    runs.clear()
    x.grad = None
    ck.checkpoint(block, x, use_reentrant=False).sum().backward()  # (early stop: no error)
    np.testing.assert_allclose(x.grad.tolist(), np.exp(x.tolist()))

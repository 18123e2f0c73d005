"""Real training: teachgrad's nn + optim learn scikit-learn's bundled digits (8x8 images).

* an MLP (Linear + ReLU + cross_entropy, Adam) reaches >= 95% test accuracy;
* a small CNN (Conv2d + max_pool2d) trains too (>= 93% after five epochs);
* the same model, data and optimiser give torch's parameters step after step
  (float64), so what a student trains here is what PyTorch would train.

The digits ship with scikit-learn (no download); the tests skip without it.
"""

import numpy as np
import pytest

import teachgrad as tg
import teachgrad.nn.functional as F


@pytest.fixture(scope="module")
def digits():
    datasets = pytest.importorskip("sklearn.datasets")
    X, y = datasets.load_digits(return_X_y=True)
    X = (X / 16.0).astype(np.float32)
    order = np.random.default_rng(0).permutation(len(X))
    X, y = X[order], y[order]
    split = int(0.8 * len(X))
    return X[:split], y[:split], X[split:], y[split:]


def batches(n, size, rng):
    order = rng.permutation(n)
    return [order[i : i + size] for i in range(0, n, size)]


def accuracy(model, X, y):
    model.eval()
    with tg.no_grad():
        predicted = model(tg.tensor(X)).argmax(1).cpu().numpy()
    model.train()
    return float((predicted == y).mean())


def train(model, X, y, epochs, lr, seed=0):
    optimizer = tg.optim.Adam(model.parameters(), lr=lr)
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        for idx in batches(len(X), 64, rng):
            optimizer.zero_grad()
            loss = F.cross_entropy(model(tg.tensor(X[idx])), tg.tensor(y[idx]))
            loss.backward()
            optimizer.step()
    return loss.item()


def test_an_mlp_learns_the_digits(digits):
    X_train, y_train, X_test, y_test = digits
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(64, 64), tg.nn.ReLU(), tg.nn.Linear(64, 10))
    before = accuracy(model, X_test, y_test)
    train(model, X_train, y_train, epochs=15, lr=3e-3)
    after = accuracy(model, X_test, y_test)
    assert before < 0.5  # an untrained model guesses
    assert after >= 0.95, f"test accuracy {after:.3f}"


def test_a_small_cnn_learns_the_digits(digits):
    X_train, y_train, X_test, y_test = digits

    class SmallCNN(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = tg.nn.Conv2d(1, 8, 3, padding=1)
            self.conv2 = tg.nn.Conv2d(8, 16, 3, padding=1)
            self.head = tg.nn.Linear(16 * 2 * 2, 10)

        def forward(self, x):
            x = x.reshape(-1, 1, 8, 8)
            x = F.max_pool2d(F.relu(self.conv1(x)), 2)  # 8x8 -> 4x4
            x = F.max_pool2d(F.relu(self.conv2(x)), 2)  # 4x4 -> 2x2
            return self.head(x.flatten(1))

    tg.manual_seed(0)
    model = SmallCNN()
    train(model, X_train, y_train, epochs=5, lr=1e-2)
    after = accuracy(model, X_test, y_test)
    assert after >= 0.93, f"test accuracy {after:.3f}"


@pytest.mark.parametrize(
    "make_optimizer",
    [
        lambda optim, ps: optim.SGD(ps, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-3),
        lambda optim, ps: optim.Adam(ps, lr=1e-2, amsgrad=True),
        lambda optim, ps: optim.AdamW(ps, lr=1e-2),
    ],
    ids=["SGD", "Adam", "AdamW"],
)
def test_training_steps_equal_torchs(torch, digits, make_optimizer):
    """The same MLP from the same weights, on the same batches: the same parameters, step by step."""
    X_train, y_train, _, _ = digits

    def build(lib):
        lib.manual_seed(0)
        return lib.nn.Sequential(
            lib.nn.Linear(64, 32), lib.nn.Tanh(), lib.nn.Linear(32, 10)
        ).double()

    model, reference = build(tg), build(torch)
    with torch.no_grad():  # start from teachgrad's initial weights
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            q.copy_(torch.tensor(p.detach().cpu().numpy()))
    opt, opt_ref = (
        make_optimizer(tg.optim, model.parameters()),
        make_optimizer(torch.optim, reference.parameters()),
    )
    rng = np.random.default_rng(1)
    for idx in batches(len(X_train), 32, rng)[:8]:
        x, y = X_train[idx].astype(np.float64), y_train[idx]
        for lib, m, o in ((tg, model, opt), (torch, reference, opt_ref)):
            o.zero_grad()
            lib.nn.functional.cross_entropy(m(lib.tensor(x)), lib.tensor(y)).backward()
            o.step()
        for p, q in zip(model.parameters(), reference.parameters(), strict=True):
            np.testing.assert_allclose(
                p.detach().cpu().numpy(), q.detach().cpu().numpy(), rtol=1e-9, atol=1e-12
            )

"""Graded tests for 10_train_digits: an MLP trained on scikit-learn's digits.

The tests choose the data themselves: a seeded shuffle of the 1797 bundled 8x8 images
(pixels scaled to [0, 1]), 1400 to train on and the rest held out. They build a fresh
model with the student's ``make_model()``, time the student's ``train(model, X, y)``, and
measure the loss on the training set and the accuracy on the held-out images.
"""

import time

import numpy as np

import teachgrad as tg
import teachgrad.nn.functional as F
from course.testing import Failure, get, grading_seed, points

N_TRAIN = 1400
TARGET = 0.95  # held-out accuracy
BUDGET = 10.0  # seconds of training
GRADING = 3 * BUDGET  # a test's time limit in the autograder: training plus evaluation
TRAINING = ("grad", "backward", "enable_grad")  # what of teachgrad's autograd train() may call


def split(seed):
    """(X_train, y_train, X_test, y_test) as tensors: float32 pixels, int64 labels.

    When the grader grades, its own seed for the submission (``grading_seed``) relabels
    the ten classes and shuffles the order of the 64 pixels, the same way for every
    image. Training learns from the data it is given, whatever the labels and the pixel
    order (an MLP's first layer has no order to notice), but a model trained beforehand
    (the held-out images are public) answers with the old labels, and reading the new
    ones off the training labels does not help it read the shuffled pixels."""
    # imported here, not at the top: check() of any exercise loads every exercise's tests,
    # and only this one needs scikit-learn
    from sklearn.datasets import load_digits

    digits = load_digits()
    order = np.random.default_rng(seed).permutation(len(digits.target))
    pixels, labels = digits.data[order], digits.target[order]
    if grading_seed() is not None:
        rng = np.random.default_rng([grading_seed(), seed])
        labels = rng.permutation(10)[labels]
        pixels = pixels[:, rng.permutation(pixels.shape[1])]
    X = tg.tensor((pixels / 16.0).astype(np.float32))
    y = tg.tensor(labels.astype(np.int64))
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


def evaluate(model, X, y):
    """(cross-entropy loss, accuracy) of ``model`` on (X, y), without recording a graph."""
    with tg.no_grad():
        logits = model(X)
        loss = F.cross_entropy(logits, y).item()
        accuracy = (logits.argmax(dim=1) == y).float().mean().item()
    return loss, accuracy


def fit(ns, seed):
    """Train a fresh model on split ``seed``; (loss before, loss after, accuracy, seconds)."""
    make_model, train = get(ns, "make_model"), get(ns, "train")
    X_train, y_train, X_test, y_test = split(seed)
    tg.manual_seed(seed)
    model = make_model()
    before, _ = evaluate(model, X_train, y_train)
    start = time.perf_counter()
    train(model, X_train, y_train)
    seconds = time.perf_counter() - start
    after, _ = evaluate(model, X_train, y_train)
    _, accuracy = evaluate(model, X_test, y_test)
    if seconds > BUDGET:
        raise Failure(
            "slow",
            f"train took {seconds:.1f} s; the budget is {BUDGET:g} s. Use minibatches and fewer epochs.",
        )
    return before, after, accuracy, seconds


def check_accuracy(ns, seed):
    before, after, accuracy, seconds = fit(ns, seed)
    if not accuracy >= TARGET:
        raise Failure(
            "accuracy",
            f"held-out accuracy {accuracy:.1%} (needs {TARGET:.0%}); training loss went from "
            f"{before:.3f} to {after:.3f} in {seconds:.1f} s.",
        )


@points(1, uses=("make_model",))
def test_model_shape(ns):
    """make_model() maps a batch of 64-pixel images to 10 scores per image."""
    model = get(ns, "make_model")()
    if not isinstance(model, tg.nn.Module):
        raise Failure("shape", f"make_model() should return a tg.nn.Module, got {model!r}.")
    out = model(split(0)[0][:5])
    shape = tuple(out.shape) if isinstance(out, tg.Tensor) else None
    if shape != (5, 10):
        raise Failure("shape", f"model(X) for X of shape (5, 64) has shape {shape}, not (5, 10).")
    if not list(model.parameters()):
        raise Failure("shape", "the model has no parameters to learn.")


@points(1, uses=("train",), seconds=GRADING, autograd=TRAINING)
def test_loss_decreases(ns):
    """Training at least halves the cross-entropy on the training set (it starts near 2.3)."""
    before, after, _, seconds = fit(ns, 0)
    if not after < before / 2:
        raise Failure(
            "accuracy",
            f"the training loss went from {before:.3f} to {after:.3f} in {seconds:.1f} s: "
            "it should fall well below half.",
        )


@points(3, uses=("train",), seconds=GRADING, autograd=TRAINING)
def test_learns(ns):
    """At least 95% accuracy on 397 held-out images, after under 10 s of training."""
    check_accuracy(ns, 0)


@points(1, uses=("train",), hidden=True, seconds=GRADING, autograd=TRAINING)
def test_other_split(ns):
    """Hidden: the same on another shuffle of the data (no tuning to one split)."""
    check_accuracy(ns, 3)

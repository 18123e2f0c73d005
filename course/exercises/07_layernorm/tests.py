"""Graded tests for 07_layernorm: LayerNorm over the last dim, y = x_hat * w + b."""

import numpy as np

import teachgrad as tg
from course.testing import check_close, check_function, get, points

rng = np.random.default_rng(6)
X, W, B = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal(4)
OWN_OPS = ("NativeLayerNormBackward0",)  # teachgrad's own layer_norm: what this exercise writes


def reference(x, w, b):
    out = tg.nn.functional.layer_norm(tg.tensor(x), (x.shape[-1],), tg.tensor(w), tg.tensor(b))
    return out.numpy()


@points(2, uses=("LayerNorm",), refuses=OWN_OPS)
def test_forward(ns):
    """Values against tg.nn.functional.layer_norm (eps = 1e-5, biased variance)."""
    out = get(ns, "LayerNorm").apply(tg.tensor(X), tg.tensor(W), tg.tensor(B))
    check_close(out, reference(X, W, B), "LayerNorm.apply(x, w, b)")


@points(4, uses=("LayerNorm",), refuses=OWN_OPS)
def test_backward(ns):
    """The three gradients against finite differences, for a (3, 4) batch."""
    check_function(get(ns, "LayerNorm"), [X, W, B])


@points(1, uses=("LayerNorm",), hidden=True, refuses=OWN_OPS)
def test_one_sample_many_features(ns):
    """Hidden: a batch of one, 6 features, inputs far from 0."""
    x = 10 + 3 * rng.standard_normal((1, 6))
    check_function(get(ns, "LayerNorm"), [x, W[:2].repeat(3), B[:3].repeat(2)])

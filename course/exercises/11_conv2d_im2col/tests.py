"""Graded tests for 11_conv2d_im2col: im2col, its adjoint col2im, and Conv2d's backward."""

import numpy as np

import teachgrad as tg
from course.testing import Failure, _indent, agree, check_close, check_function, get, points

rng = np.random.default_rng(11)
X, W = rng.standard_normal((2, 3, 5, 6)), rng.standard_normal((4, 3, 3, 2))
# teachgrad's own conv2d, F.unfold (im2col) and F.fold (col2im): what this exercise writes
OWN_OPS = ("ConvolutionBackward0", "Im2ColBackward0", "Col2ImBackward0")


def reference_im2col(x, kh, kw):
    """Patches by NumPy's sliding windows: (N, C, OH, OW, kh, kw) -> (N, C kh kw, OH OW)."""
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kw), axis=(2, 3))
    n, c, oh, ow = windows.shape[:4]
    return windows.transpose(0, 1, 4, 5, 2, 3).reshape(n, c * kh * kw, oh * ow)


def col2im_overwriting(cols, x_shape, kh, kw):
    """The classic bug, to name it: each patch overwrites the pixels instead of adding."""
    n, c, h, w = x_shape
    oh, ow = h - kh + 1, w - kw + 1
    cols, x = cols.reshape(n, c, kh, kw, oh, ow), np.zeros(x_shape)
    for i in range(kh):
        for j in range(kw):
            x[:, :, i : i + oh, j : j + ow] = cols[:, :, i, j]
    return x


def compare(got, expected, what):
    if not isinstance(got, np.ndarray):
        raise Failure("forward", f"{what} should return a NumPy array, got {type(got).__name__}.")
    if got.shape != expected.shape:
        raise Failure("forward", f"{what} has shape {got.shape}, expected {expected.shape}.")
    if not agree(got, expected):
        worst = np.unravel_index(np.argmax(np.abs(got - expected)), got.shape)
        raise Failure(
            "forward",
            f"{what} is wrong, first at index {[int(i) for i in worst]}: got {got[worst]:.4g}, "
            f"expected {expected[worst]:.4g}.\n  expected [0]:\n{_indent(expected[0])}\n"
            f"  got [0]:\n{_indent(got[0])}",
        )


@points(2, uses=("im2col",), refuses=OWN_OPS)
def test_im2col(ns):
    """Patches of a (2, 3, 4, 5) input for a 2x3 kernel, and of a 1x1 kernel (a copy)."""
    im2col = get(ns, "im2col")
    x = rng.standard_normal((2, 3, 4, 5))
    compare(im2col(x, 2, 3), reference_im2col(x, 2, 3), "im2col(x, 2, 3)")
    compare(im2col(x, 1, 1), x.reshape(2, 3, 20), "im2col(x, 1, 1)")


@points(2, uses=("col2im",), refuses=OWN_OPS)
def test_col2im(ns):
    """The dot-product test <im2col(x), c> = <x, col2im(c)>, then the values themselves."""
    col2im = get(ns, "col2im")
    x, c = rng.standard_normal((2, 3, 4, 5)), rng.standard_normal((2, 18, 9))
    got = col2im(c, x.shape, 2, 3)
    if isinstance(got, np.ndarray) and got.shape == x.shape:
        left, right = (reference_im2col(x, 2, 3) * c).sum(), (x * got).sum()
        if not agree(left, right):
            overwrites = agree(got, col2im_overwriting(c, x.shape, 2, 3))
            raise Failure(
                "overlap" if overwrites else "forward",
                f"col2im is not the adjoint of im2col: <im2col(x), c> = {left:.6g} but "
                f"<x, col2im(c)> = {right:.6g}.",
            )
    expected = np.zeros(x.shape)
    for k in range(x.size):  # col2im(c) = the gradient of <im2col(x), c>, one pixel at a time
        e = np.zeros(x.size)
        e[k] = 1
        expected.flat[k] = (reference_im2col(e.reshape(x.shape), 2, 3) * c).sum()
    compare(got, expected, "col2im(c, x.shape, 2, 3)")


@points(1, uses=("Conv2d",), refuses=OWN_OPS)
def test_conv_forward(ns):
    """Conv2d.apply(x, w) against tg.nn.functional.conv2d."""
    out = get(ns, "Conv2d").apply(tg.tensor(X), tg.tensor(W))
    expected = tg.nn.functional.conv2d(tg.tensor(X), tg.tensor(W)).numpy()
    check_close(out, expected, "Conv2d.apply(x, w)")


def weights_from_first_image_only(conv):
    """Whether ``conv``'s dw is the gradient of the batch's first image alone."""
    x, w = tg.tensor(X, requires_grad=True), tg.tensor(W, requires_grad=True)
    y = conv.apply(x, w)
    g = rng.standard_normal(tuple(y.shape))
    dw = conv.backward(y.grad_fn, tg.tensor(g))[1]
    w0 = tg.tensor(W, requires_grad=True)
    (tg.nn.functional.conv2d(tg.tensor(X[:1]), w0) * tg.tensor(g[:1])).sum().backward()
    return isinstance(dw, tg.Tensor) and agree(dw.detach().numpy(), w0.grad.numpy())


@points(3, uses=("Conv2d",), refuses=OWN_OPS)
def test_conv_backward(ns):
    """Both gradients against finite differences: 2 images, 3 channels, 4 filters of 3x2."""
    conv = get(ns, "Conv2d")
    try:
        check_function(conv, [X, W])
    except Failure as failure:
        if failure.cause == "wrong_values" and weights_from_first_image_only(conv):
            raise Failure(
                "unbroadcast",
                "dw is the gradient of the first image only: every image used the same "
                "weights, so sum their contributions over the batch (dim 0).",
            ) from None
        raise


@points(1, uses=("Conv2d",), hidden=True, refuses=OWN_OPS)
def test_conv_other_shapes(ns):
    """Hidden: one image of one channel, a 4x1 kernel (tall and thin), two filters."""
    check_function(
        get(ns, "Conv2d"), [rng.standard_normal((1, 1, 4, 4)), rng.standard_normal((2, 1, 4, 1))]
    )

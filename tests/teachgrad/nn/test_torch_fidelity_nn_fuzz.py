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


@pytest.mark.parametrize("ignore_index", [-100, -1, 0])
def test_cross_entropy_with_probabilities_takes_a_negative_ignore_index(torch, ignore_index):
    call = lambda F, x, p: F.cross_entropy(x, p.detach(), ignore_index=ignore_index)  # noqa: E731
    _compare(torch, call, SCORES[2], rng.random((2, 3)))


@pytest.mark.parametrize("label_smoothing", [-0.5, -0.1, 1.0, 1.5])
@pytest.mark.parametrize("probabilities", [False, True])
def test_label_smoothing_below_zero_is_none_and_above_one_an_error(
    torch, label_smoothing, probabilities
):
    target = rng.random((2, 3)) if probabilities else TARGETS[2]
    call = lambda F, x, t: F.cross_entropy(x, t.detach(), label_smoothing=label_smoothing)  # noqa: E731
    _compare(torch, call, SCORES[2], target)


# --------------------------------------------------------------------------- optim

OPTIMIZERS = ["SGD", "Adam", "AdamW"]


def _steps(lib, name, settings, steps=5):
    """The parameters after each of ``steps`` steps from the same start and gradients."""
    start, grads = rng.standard_normal(3), rng.standard_normal((steps, 3))
    p = lib.tensor(start, requires_grad=True)
    opt = getattr(lib.optim, name)([p], **settings(lib))
    after = []
    for g in grads:
        p.grad = lib.tensor(g)
        opt.step()
        after.append(p.detach().cpu().numpy().copy())
    return after, repr(opt)


def _errors_alike(torch, make):
    """``make(lib)`` fails in both libraries with the same class and first line."""
    errors = []
    for lib in (tg, torch):
        with pytest.raises(Exception) as caught:  # noqa: PT011 (the classes are compared)
            make(lib)
        errors.append((caught.type, torch_text(str(caught.value).split("\n")[0])))
    assert errors[0] == errors[1]


@pytest.mark.no_standin(
    "compares the optimizer's repr, which prints the tensor lr, with torch's CPU one"
)
@pytest.mark.parametrize(
    "lr",
    [
        lambda lib: lib.tensor(0.1, dtype=lib.float64),
        lambda lib: lib.tensor([[0.1]], dtype=lib.float64),
    ],
)
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_a_one_element_tensor_lr_steps_as_a_number(torch, name, lr):
    """(float64: torch's Adam computes in the dtype of a tensor lr, teachgrad with its number.)"""
    seed = rng.bit_generator.state
    ours = _steps(tg, name, lambda lib: {"lr": lr(lib)})
    rng.bit_generator.state = seed
    theirs = _steps(torch, name, lambda lib: {"lr": lr(lib)})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    assert torch_text(ours[1]) == theirs[1]


@pytest.mark.no_standin(
    "compares the optimizer's repr, which prints the tensor betas, with torch's CPU one"
)
def test_adam_takes_betas_as_tensors(torch):
    seed = rng.bit_generator.state

    def settings(lib):
        return {
            "lr": 0.1,
            "betas": (lib.tensor([0.8], dtype=lib.float64), lib.tensor(0.9, dtype=lib.float64)),
        }

    ours = _steps(tg, "Adam", settings)
    rng.bit_generator.state = seed
    theirs = _steps(torch, "Adam", settings)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    assert torch_text(ours[1]) == theirs[1]


BAD_TENSOR_SETTINGS = {
    "lr of two elements": lambda t: {"lr": t([0.1, 0.2])},
    "negative lr tensor": lambda t: {"lr": t(-1.0)},
    "betas[0] of two elements": lambda t: {"betas": (t([0.8, 0.1]), t([0.9]))},
    "betas[1] of two elements": lambda t: {"betas": (t([0.8]), t([0.9, 0.1]))},
    "a float and a tensor beta": lambda t: {"betas": (0.8, t([0.9]))},
    "int betas": lambda t: {"betas": (0, 0)},
}


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@pytest.mark.parametrize("settings", BAD_TENSOR_SETTINGS.values(), ids=BAD_TENSOR_SETTINGS)
def test_bad_tensor_settings_fail_as_in_torch(torch, name, settings):
    def make(lib):
        return getattr(lib.optim, name)([lib.zeros(2, requires_grad=True)], **settings(lib.tensor))

    _errors_alike(torch, make)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_tensor_lr_with_foreach_fails_as_in_torch_for_adam(torch, name):
    def make(lib):
        return getattr(lib.optim, name)(
            [lib.zeros(2, requires_grad=True)], lr=lib.tensor(0.1), foreach=True
        )

    if name == "SGD":  # (SGD takes it)
        make(tg)
        make(torch)
    else:
        _errors_alike(torch, make)


@pytest.mark.parametrize("switches", [{"foreach": True}, {"foreach": False}, {"fused": False}])
@pytest.mark.parametrize("name", OPTIMIZERS)
def test_implementation_switches_are_kept_and_step_alike(torch, name, switches):
    seed = rng.bit_generator.state
    ours = _steps(tg, name, lambda lib: {"lr": 0.1, **switches})
    rng.bit_generator.state = seed
    theirs = _steps(torch, name, lambda lib: {"lr": 0.1, **switches})
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-10, atol=1e-12)
    assert torch_text(ours[1]) == theirs[1]


@pytest.mark.parametrize("switch", ["differentiable", "capturable"])
def test_switches_that_change_a_step_are_refused(switch):
    with pytest.raises(NotImplementedError, match=f"{switch}=True is not supported"):
        tg.optim.Adam([tg.zeros(2, requires_grad=True)], **{switch: True})


# --------------------------------------------------------------------------- format


@pytest.mark.no_standin("compares printed text with torch's CPU tensors, which print no device")
@pytest.mark.parametrize(
    "make", [lambda lib: lib.tensor(-1.0), lambda lib: lib.tensor(2), lambda lib: lib.tensor([1.0])]
)
@pytest.mark.parametrize("spec", ["", ".2f"])
def test_f_string_of_a_tensor_as_in_torch(torch, make, spec):
    """A 0-d tensor formats as its number (with or without a spec), others as their repr
    (a spec is a TypeError)."""

    def formatted(lib):
        try:
            return format(make(lib), spec)
        except TypeError as error:
            return str(error)

    assert torch_text(formatted(tg)) == formatted(torch)


# --------------------------------------------------------------------------- dtypes


def _f64(lib, *shape):
    return lib.ones(*shape, dtype=lib.float64)


DTYPE_ERRORS = {
    "linear: input of another dtype": lambda F, lib: F.linear(
        _f64(lib, 4, 3), lib.ones(2, 3), lib.ones(2)
    ),
    "linear: weight of another dtype": lambda F, lib: F.linear(
        lib.ones(4, 3), _f64(lib, 2, 3), lib.ones(2)
    ),
    "linear: bias of another dtype": lambda F, lib: F.linear(
        lib.ones(4, 3), lib.ones(2, 3), _f64(lib, 2)
    ),
    "linear 1-d: input of another dtype": lambda F, lib: F.linear(
        _f64(lib, 3), lib.ones(2, 3), lib.ones(2)
    ),
    "linear 3-d: input of another dtype": lambda F, lib: F.linear(
        _f64(lib, 2, 4, 3), lib.ones(2, 3), lib.ones(2)
    ),
    "conv2d: input of another dtype": lambda F, lib: F.conv2d(
        _f64(lib, 1, 2, 5, 5), lib.ones(3, 2, 3, 3), lib.ones(3)
    ),
    "conv2d: bias of another dtype": lambda F, lib: F.conv2d(
        lib.ones(1, 2, 5, 5), lib.ones(3, 2, 3, 3), _f64(lib, 3)
    ),
    "conv2d: weight of another dtype": lambda F, lib: F.conv2d(
        lib.ones(1, 2, 5, 5), _f64(lib, 3, 2, 3, 3), lib.ones(3)
    ),
    **{
        f"{fn}: {dtype} input": lambda F, lib, fn=fn, dtype=dtype: getattr(F, fn)(
            lib.ones(2, dtype=getattr(lib, dtype))
        )
        for fn in ("gelu", "silu")
        for dtype in ("int64", "int32", "bool")
    },
    "nll_loss: float64 weight": lambda F, lib: F.nll_loss(
        lib.ones(2, 3), lib.zeros(2, dtype=lib.int64), _f64(lib, 3)
    ),
    "nll_loss: float32 weight": lambda F, lib: F.nll_loss(
        _f64(lib, 2, 3), lib.zeros(2, dtype=lib.int64), lib.ones(3)
    ),
    "nll_loss 3-d: float64 weight": lambda F, lib: F.nll_loss(
        lib.ones(2, 3, 2), lib.zeros(2, 2, dtype=lib.int64), _f64(lib, 3)
    ),
    "cross_entropy: float64 weight": lambda F, lib: F.cross_entropy(
        lib.ones(2, 3), lib.zeros(2, dtype=lib.int64), _f64(lib, 3)
    ),
    **{
        f"embedding: {dtype} indices": lambda F, lib, dtype=dtype: F.embedding(
            lib.ones(2, dtype=getattr(lib, dtype)), lib.ones(3, 2)
        )
        for dtype in ("float32", "float64", "bool", "int16", "uint8")
    },
    **{
        f"dropout: {dtype} input": lambda F, lib, dtype=dtype: F.dropout(
            lib.ones(2, dtype=getattr(lib, dtype))
        )
        for dtype in ("int64", "int32", "bool")
    },
    **{
        f"layer_norm: normalized_shape={shape!r}": lambda F, lib, shape=shape: F.layer_norm(
            lib.ones(2, 4), shape
        )
        for shape in (4, (4.0,), "4")
    },
    **{
        f"max_pool2d: kernel {k}, padding {p}, dilation {d}": lambda F, lib, k=k, p=p, d=d: (
            F.max_pool2d(lib.ones(1, 1, 6, 5), k, padding=p, dilation=d)
        )
        for k, p, d in [(3, 2, 2), (5, 3, 2), (2, 2, 3), ((3, 2), (1, 2), (2, 1)), (3, 2, 1)]
    },
    **{
        f"binary_cross_entropy_with_logits: {dtype} target": lambda F, lib, dtype=dtype: (
            F.binary_cross_entropy_with_logits(lib.ones(3), lib.ones(3, dtype=getattr(lib, dtype)))
        )
        for dtype in ("int64", "int32")
    },
    "cross_entropy: probabilities with ignore_index 1": lambda F, lib: F.cross_entropy(
        lib.ones(2, 3), lib.ones(2, 3) / 3, ignore_index=1
    ),
    "nll_loss: float target, other batch size": lambda F, lib: F.nll_loss(
        lib.ones(2, 4), lib.ones(3)
    ),
    "nll_loss: float target of 2 dims": lambda F, lib: F.nll_loss(lib.ones(2, 4), lib.ones(2, 2)),
    "nll_loss 3-d: float target of another size": lambda F, lib: F.nll_loss(
        lib.ones(2, 4, 2), lib.ones(2, 3)
    ),
    "nll_loss: float target, weight of 5": lambda F, lib: F.nll_loss(
        lib.ones(2, 4), lib.ones(2), lib.ones(5)
    ),
    "cross_entropy: probabilities of another shape": lambda F, lib: F.cross_entropy(
        lib.ones(3, 4), lib.ones(3, 5)
    ),
    "binary_cross_entropy_with_logits: pos_weight of 3": lambda F, lib: (
        F.binary_cross_entropy_with_logits(lib.ones(3, 4), lib.ones(3, 4), pos_weight=lib.ones(3))
    ),
    "binary_cross_entropy_with_logits: weight of 3": lambda F, lib: (
        F.binary_cross_entropy_with_logits(lib.ones(3, 4), lib.ones(3, 4), weight=lib.ones(3))
    ),
    **{
        f"binary_cross_entropy: weight {shape}": lambda F, lib, shape=shape: F.binary_cross_entropy(
            lib.ones(3, 4) / 2, lib.ones(3, 4) / 2, weight=lib.ones(shape)
        )
        for shape in [(3,), (2, 4), (1, 3)]
    },
    "layer_norm: integer input": lambda F, lib: F.layer_norm(lib.ones(2, 4, dtype=lib.int64), (4,)),
    **{
        f"layer_norm: {dtypes}": lambda F, lib, dtypes=dtypes: F.layer_norm(
            *(
                lib.ones(*shape, dtype=getattr(lib, d))
                for shape, d in zip([(2, 4), (4,), (4,)], dtypes)
            ),
            normalized_shape=(4,),
        )
        for dtypes in [
            ("float32", "float64"),
            ("float64", "float32"),
            ("float32", "float32", "float64"),
            ("float64", "float64", "float32"),
            ("float64", "float32", "float64"),
            ("int64", "float32"),
        ]
    },
}


@pytest.mark.no_standin("compares messages naming torch's CPU tensor types (teachgrad.FloatTensor)")
@pytest.mark.parametrize("call", DTYPE_ERRORS.values(), ids=DTYPE_ERRORS)
def test_mixed_dtypes_fail_as_in_torch(torch, call):
    _errors_alike(torch, lambda lib: call(lib.nn.functional, lib))


BCE_DTYPES = {  # (input, target, weight, pos_weight): torch's result has the target's dtype
    "logits: float64 input, float32 target": ("with_logits", "float64", "float32", None, None),
    "logits: float32 input, float64 target": ("with_logits", "float32", "float64", None, None),
    "logits: float64 weight": ("with_logits", "float32", "float32", "float64", None),
    "logits: float64 pos_weight": ("with_logits", "float32", "float32", None, "float64"),
    "logits: float64 input and weights": (
        "with_logits",
        "float64",
        "float32",
        "float64",
        "float64",
    ),
    "probabilities: float64 weight": ("", "float32", "float32", "float64", None),
}


@pytest.mark.parametrize("reduction", ["none", "mean"])
@pytest.mark.parametrize("dtypes", BCE_DTYPES.values(), ids=BCE_DTYPES)
def test_binary_cross_entropy_result_dtype_as_in_torch(torch, dtypes, reduction):
    kind, *dtypes = dtypes
    results = []
    for lib in (tg, torch):
        x, t, w, p = (
            None if d is None else lib.tensor([0.2, 0.5, 0.9], dtype=getattr(lib, d))
            for d in dtypes
        )
        x.requires_grad_()
        fn = getattr(lib.nn.functional, f"binary_cross_entropy{'_' + kind if kind else ''}")
        out = fn(x, t, weight=w, reduction=reduction, **({"pos_weight": p} if kind else {}))
        out.sum().backward()
        results.append((out, x.grad))
    (out, grad), (torch_out, torch_grad) = results
    assert torch_text(str(out.dtype)) == str(torch_out.dtype)
    assert torch_text(str(grad.dtype)) == str(torch_grad.dtype)
    assert_close(out, torch_out)
    assert_close(grad, torch_grad)


@pytest.mark.parametrize("p, training", [(0.0, True), (1.0, True), (0.5, False)])
@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_dropout_of_integers_where_torch_allows_it(torch, dtype, p, training):
    ours, theirs = (
        lib.nn.functional.dropout(lib.ones(3, dtype=getattr(lib, dtype)), p, training)
        for lib in (tg, torch)
    )
    assert torch_text(str(ours.dtype)) == str(theirs.dtype)
    assert ours.tolist() == theirs.tolist()


# --------------------------------------------------------------------------- modules

EMBEDDINGS = [
    {},
    {
        "padding_idx": -1,
        "max_norm": None,
        "norm_type": 2.0,
        "scale_grad_by_freq": False,
        "sparse": False,
    },
    {"max_norm": 2.0},
    {"norm_type": 1.0, "scale_grad_by_freq": True, "sparse": True},
]


@pytest.mark.parametrize("options", EMBEDDINGS)
def test_embedding_takes_torchs_options(torch, options):
    """The options are kept and shown as torch shows them; F.embedding implements only their
    defaults, and says so when the module is called with others."""
    ours, theirs = tg.nn.Embedding(5, 3, **options), torch.nn.Embedding(5, 3, **options)
    assert repr(ours) == repr(theirs)
    ours.load_state_dict({"weight": tg.tensor(theirs.weight.detach().numpy())})
    indices = [[0, 4], [4, 2]]
    defaults = all(options.get(k, v) == v for k, v in EMBEDDINGS[1].items() if k != "padding_idx")
    if defaults:
        assert_close(ours(tg.tensor(indices)), theirs(torch.tensor(indices)))
    else:
        with pytest.raises(NotImplementedError, match="not implemented in teachgrad"):
            ours(tg.tensor(indices))


LINEAR_SHAPES = [  # (input, weight, bias)
    ((2, 3), (4, 3), (3,)),
    ((2, 3), (4, 3), (2, 3)),
    ((2, 3), (4, 3), (3, 4)),
    ((2, 3), (4, 3), (2, 1)),
    ((5, 2, 3), (4, 3), (2, 4)),
    ((5, 2, 3), (4, 3), (3,)),
    ((5, 2, 3), (4, 3), ()),
    ((3,), (4, 3), (3,)),
    ((), (4, 3), (4,)),
    ((3,), (), (4,)),
    ((3,), (4, 3), (1, 4)),  # one row: fused, then viewed back to (4,)
    ((5, 2, 3), (4, 3), (1, 4)),
    ((5, 2, 3), (4, 3), (1,)),
    ((5, 2, 3), (4, 3), (1, 1)),  # not a row of out_features: a plain add
    ((3,), (4, 3), (2, 4)),  # the add is in place: it cannot grow the result
    ((2, 3), (4, 3), (1, 1, 4)),  # more dims than the (rows, out_features) it expands to
    ((2, 3), (4, 3), (1, 1, 1, 1, 4)),
    # one out_feature: a (1, 1) bias has no dim that is not 1, so torch adds it in place
    ((3,), (1, 3), (1, 1)),  # ... which cannot grow the (1,) product: torch's error
    ((1, 2, 1), (1, 1), (1, 1)),
    ((5, 2, 3), (1, 3), (1, 1)),
    ((5, 2, 3), (1, 3), (1,)),  # (one dim: fused)
    ((5, 2, 3), (4, 3), (1, 1, 4)),  # one dim that is not 1: fused, where expand refuses it
    ((5, 2, 3), (4, 3), (4, 1)),
    ((5, 2, 3), (1, 3), (2, 1)),
]


@pytest.mark.parametrize("shapes", LINEAR_SHAPES, ids=str)
def test_linear_bias_shapes_as_in_torch(torch, shapes):
    """Value, gradients and node, or torch's error (a bias of another shape than
    (out_features,) broadcasts: fused for a 2-d input, and for a contiguous one when the
    bias has one dim, or one dim that is not 1; else added in place to the product)."""
    arrays = [rng.standard_normal(shape) for shape in shapes]
    _compare(torch, lambda F, x, w, b: F.linear(x, w, b), *arrays)
    if isinstance(
        _run(tg, lambda F, *t: F.linear(*t), arrays)[0], tg.Tensor
    ):  # no error: same node
        ours, theirs = (
            lib.nn.functional.linear(*(lib.tensor(a, requires_grad=True) for a in arrays))
            for lib in (tg, torch)
        )
        assert ours.grad_fn.name() == theirs.grad_fn.name()


def _bce_logits_derivatives(lib, logits, target, pos_weight):
    """The loss, its gradients, and the gradients of each gradient's sum (second order)."""
    x, t = (lib.tensor(v, dtype=lib.float64, requires_grad=True) for v in (logits, target))
    loss = lib.nn.functional.binary_cross_entropy_with_logits(
        x, t, pos_weight=lib.tensor(pos_weight, dtype=lib.float64)
    )
    grads = lib.autograd.grad(loss, (x, t), create_graph=True)
    second = [lib.autograd.grad(g.sum(), (x, t), allow_unused=True) for g in grads]
    return [loss, *grads, *(g for pair in second for g in pair if g is not None)]


@pytest.mark.parametrize("logits", [[0.0], [-0.0, 1.5, -2.0], [40.0, -40.0, 1e-300]], ids=str)
@pytest.mark.parametrize("pos_weight", [0.5, 3.0])
def test_bce_with_logits_and_pos_weight_second_derivatives_as_torchs(torch, logits, pos_weight):
    """d/dx of dL/dt holds the derivative of softplus(-x), -σ(-x): -1/2 at 0, as torch's
    (max(-x, 0)'s kink gave -1 there)."""
    args = (logits, [0.5] * len(logits), [pos_weight] * len(logits))
    ours, theirs = _bce_logits_derivatives(tg, *args), _bce_logits_derivatives(torch, *args)
    assert len(ours) == len(theirs)
    for mine, reference in zip(ours, theirs, strict=True):
        assert_close(mine, reference, rtol=1e-12, atol=1e-15)

"""Behaviours found by running PyTorch's own autograd tests and random programs against
teachgrad (issue 20), each compared with torch across its variations: the same program runs
on both libraries, and either both raise (same class, same first line) or both give the
same values.
"""

import subprocess
import sys
import warnings

import numpy as np
import pytest

import teachgrad as tg
from teachgrad.autograd import engine
from tests.teachgrad.inplace._common import Raised, assert_same, both, torch_phrase

pytestmark = pytest.mark.usefixtures("torch")  # (skips, or fails in CI, without the oracle)


def assert_like_torch(program):
    """``program(lib)`` gives the same outcome with teachgrad and with torch."""
    facts = both(program)
    got, want = facts["tg"], facts["torch"]
    if isinstance(got, Raised) and isinstance(want, Raised):
        assert got.type == want.type, (got, want)
        first = lambda r: torch_phrase(r.message.splitlines()[0])  # noqa: E731
        assert first(got) == first(want)
    else:
        assert_same(got, want)
    return want


def as_numpy(t):
    return None if t is None else t.detach().cpu().numpy()


# --------------------------------------------------------------------------- zero gradients

PIECEWISE_CONSTANT = {
    "sign": lambda x: x.sign(),
    "floor": lambda x: x.floor(),
    "ceil": lambda x: x.ceil(),
    "round": lambda x: x.round(),
    "round(decimals=1)": lambda x: x.round(decimals=1),
    "div floor": lambda x: x.div(2.0, rounding_mode="floor"),
    "div trunc": lambda x: x.div(2.0, rounding_mode="trunc"),
    "fill_": lambda x: x.clone().fill_(2.0),
    "zero_": lambda x: x.clone().zero_(),
    "x ** 0": lambda x: x**0,
}


@pytest.mark.parametrize("op", PIECEWISE_CONSTANT.values(), ids=PIECEWISE_CONSTANT.keys())
@pytest.mark.parametrize("upstream", [float("inf"), float("nan"), -2.0])
def test_a_flat_op_gives_zeros_even_when_inf_or_nan_comes_down(op, upstream):
    """torch returns zeros, not ``grad * 0``: an inf or NaN from above does not leak through."""

    def program(lib):
        x = lib.tensor([1.5, -2.25, 0.0], dtype=lib.float64, requires_grad=True)
        (op(x) * upstream).sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("op", PIECEWISE_CONSTANT.values(), ids=PIECEWISE_CONSTANT.keys())
def test_a_flat_op_gradient_made_with_create_graph_needs_no_graph(op):
    def program(lib):
        x = lib.tensor([1.5, -2.25], dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(op(x).sum(), x, create_graph=True)
        return as_numpy(g), g.requires_grad

    assert_like_torch(program)


@pytest.mark.parametrize("base", [0.0, 2.0, 0.5])
def test_a_number_to_a_tensor_power_differentiates_like_torch_at_zero_base(base):
    """``0 ** b``: flat where b > 0 and at b = 0, ``result · log 0`` = -inf where b < 0."""

    def program(lib):
        b = lib.tensor([-1.0, 0.0, 2.0, 3.5], dtype=lib.float64, requires_grad=True)
        (base**b).sum().backward()
        return as_numpy(b.grad)

    with np.errstate(divide="ignore", invalid="ignore"):
        assert_like_torch(program)


# --------------------------------------------------------------------------- custom Functions


def _function(lib, backward=True, vjp=False):
    body = {"forward": staticmethod(lambda ctx, x: x * 2)}
    if backward:
        body["backward"] = staticmethod(lambda ctx, g: g * 2)
    if vjp:
        body["vjp"] = staticmethod(lambda ctx, g: g * 3)
    return type("Doubled", (lib.autograd.Function,), body)


@pytest.mark.parametrize(
    "backward,vjp", [(True, False), (False, True), (True, True), (False, False)]
)
def test_vjp_is_backward_s_other_name_and_defining_both_is_refused(backward, vjp):
    def program(lib):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        y = _function(lib, backward, vjp).apply(x)
        y.sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize(
    "call",
    [lambda F, x: F.apply(x), lambda F, x: F.apply(x, 5.0), lambda F, x: F.apply(x, y=5.0)],
    ids=["defaults", "positional", "keyword"],
)
def test_setup_context_sees_forward_s_defaults(call):
    def program(lib):
        seen = []

        class Scaled(lib.autograd.Function):
            @staticmethod
            def forward(x, y=3.0):
                return x * y

            @staticmethod
            def setup_context(ctx, inputs, output):
                seen.append(tuple(v if isinstance(v, float) else "x" for v in inputs))
                ctx.y = inputs[1]

            @staticmethod
            def backward(ctx, g):
                return g * ctx.y, None

        x = lib.tensor([1.0], requires_grad=True)
        out = call(Scaled, x)
        out.sum().backward()
        return seen, as_numpy(out), as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("n_grads", [0, 1, 2, 3])
@pytest.mark.parametrize(
    "node",
    [
        lambda lib, x: (x * 2).grad_fn,
        lambda lib, x: x.unbind(0)[0].grad_fn,
        lambda lib, x: (x * 2).grad_fn.next_functions[0][0],  # AccumulateGrad
    ],
    ids=["MulBackward0", "UnbindBackward0", "AccumulateGrad"],
)
def test_calling_a_node_with_the_wrong_number_of_gradients(n_grads, node):
    def program(lib):
        x = lib.ones(2, requires_grad=True)
        fn = node(lib, x)
        n_out = 2 if "Unbind" in fn.name() else 1
        if n_grads == n_out:
            return "right count"  # (what such a call returns is checked elsewhere)
        fn(*[lib.ones(()) if n_out == 2 else lib.ones(2) for _ in range(n_grads)])

    assert_like_torch(program)


@pytest.mark.parametrize("n_grads", [0, 1, 2])
@pytest.mark.parametrize("setup_context", [False, True], ids=["ctx in forward", "setup_context"])
def test_a_custom_function_s_node_is_not_callable(setup_context, n_grads):
    """torch's node of a custom Function has no ``__call__`` (its ``apply`` runs backward),
    whatever the number of gradients given."""

    def program(lib):
        def forward(*args):
            return args[-1] * 2

        body = {"forward": staticmethod(forward), "backward": staticmethod(lambda ctx, g: g * 2)}
        if setup_context:
            body["setup_context"] = staticmethod(lambda ctx, inputs, output: None)
        Twice = type("Twice", (lib.autograd.Function,), body)
        node = Twice.apply(lib.ones(2, requires_grad=True)).grad_fn
        applied = as_numpy(node.apply(lib.ones(2)))
        node(*[lib.ones(2)] * n_grads)
        return applied

    assert_like_torch(program)


# --------------------------------------------------------------------------- grad() and backward()


@pytest.mark.parametrize("create_graph", [False, True])
def test_materialized_zeros_require_grad_with_create_graph(create_graph):
    def program(lib):
        x = lib.tensor([1.0], requires_grad=True)
        unused = lib.tensor([2.0, 3.0], requires_grad=True)
        grads = lib.autograd.grad(
            (x * x).sum(), [x, unused], create_graph=create_graph, materialize_grads=True
        )
        return [(as_numpy(g), g.requires_grad) for g in grads]

    assert_like_torch(program)


@pytest.mark.parametrize(
    "result",
    [None, 5, "text", "tensor"],
    ids=["None", "int", "str", "tensor"],
)
def test_a_post_accumulate_grad_hook_must_return_none(result):
    def program(lib):
        x = lib.tensor([1.0], requires_grad=True)
        x.register_post_accumulate_grad_hook(lambda t: t.grad * 2 if result == "tensor" else result)
        (x * 2).sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("inputs", ["b", "b, a", "c", "b, c"])
@pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")
def test_backward_to_a_non_leaf_runs_its_node_and_its_hooks(inputs):
    """``backward(inputs=(b,))`` with b not a leaf: b's node runs (its pre- and post-hooks
    fire), b gets a .grad, and nothing below b that was not asked for gets one."""

    def program(lib):
        a = lib.tensor([1.0, 2.0], requires_grad=True)
        b = a * 2
        c = b.sin()
        log = []
        b.register_hook(lambda g: log.append("b tensor hook"))
        b.grad_fn.register_prehook(lambda g: log.append("b pre-hook"))
        b.grad_fn.register_hook(lambda gi, go: log.append("b post-hook"))
        c.grad_fn.register_prehook(lambda g: log.append("c pre-hook"))
        chosen = [{"a": a, "b": b, "c": c}[name] for name in inputs.split(", ")]
        (c * 3).sum().backward(inputs=chosen)
        return log, [as_numpy(t.grad) for t in (a, b, c)]

    assert_like_torch(program)


def test_backward_with_create_graph_warns_about_the_reference_cycle(monkeypatch):
    """torch warns once per process: its text is read from a fresh torch process."""
    torch_says = subprocess.run(
        [
            sys.executable,
            "-W",
            "always",
            "-c",
            "import torch, warnings\n"
            "x = torch.ones(1, requires_grad=True)\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    (x * x).sum().backward(create_graph=True)\n"
            "print(str(w[0].message).split(' (Triggered internally')[0])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    monkeypatch.setattr(engine, "_warned_reference_cycle", False)
    x = tg.ones(1, requires_grad=True)
    with pytest.warns(UserWarning) as caught:
        (x * x).sum().backward(create_graph=True)
    assert [str(w.message) for w in caught] == [torch_says]
    monkeypatch.setattr(engine, "_warned_reference_cycle", False)
    with warnings.catch_warnings(record=True) as later:
        warnings.simplefilter("always")
        tg.autograd.grad((x * x).sum(), x, create_graph=True)  # grad() does not warn
        tg.autograd.backward((x * x).sum(), create_graph=True)  # backward() does, once
        (x * x).sum().backward(create_graph=True)
    assert [str(w.message) for w in later] == [torch_says]


# --------------------------------------------------------------------------- views


@pytest.mark.parametrize("op", ["zero_()", "fill_(2.0)"])
@pytest.mark.parametrize("requires_grad", [True, False])
def test_backward_through_an_in_place_change_of_an_expanded_view(op, requires_grad):
    """torch allows zero_/fill_ on an expanded view, but its backward would write the view's
    gradient into repeated memory cells: it refuses there."""

    def program(lib):
        x = lib.ones(4, dtype=lib.float64, requires_grad=requires_grad).clone()
        e = x.expand(2, 4)
        eval(f"e.{op}")
        if requires_grad:
            e.sum().backward()
        return as_numpy(e), e._version

    assert_like_torch(program)


# --------------------------------------------------------------------------- reductions


REDUCTIONS_OF_EMPTY = {
    "max()": lambda x: x.max(),
    "min()": lambda x: x.min(),
    "amax()": lambda x: x.amax(),
    "amax(1)": lambda x: x.amax(1),
    "amin(-1)": lambda x: x.amin(-1),
    "max(1)": lambda x: x.max(1),
    "min(0)": lambda x: x.min(0),
    "argmax()": lambda x: x.argmax(),
    "argmax(1)": lambda x: x.argmax(1),
    "argmin(0)": lambda x: x.argmin(0),
}


@pytest.mark.parametrize("op", REDUCTIONS_OF_EMPTY.values(), ids=REDUCTIONS_OF_EMPTY.keys())
@pytest.mark.parametrize("shape", [(2, 0), (0, 3), (0,)])
def test_max_and_min_over_no_elements(op, shape):
    def program(lib):
        out = op(lib.zeros(*shape))
        outs = out if isinstance(out, tuple) else (out,)
        return [(tuple(o.shape), repr(o).replace("teachgrad", "torch")) for o in outs]

    assert_like_torch(program)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argmax_along_the_only_dim_is_a_0d_tensor(name, keepdim):
    def program(lib):
        out = getattr(lib.tensor([1.0, 3.0, 2.0]), name)(0, keepdim=keepdim)
        return repr(out).replace("teachgrad", "torch"), out.detach().tolist(), out.dtype.is_signed

    assert_like_torch(program)


@pytest.mark.parametrize(
    "op",
    [lambda x: x.max(), lambda x: x.min(), lambda x: x.amax(), lambda x: x.amax(0)],
    ids=["max()", "min()", "amax()", "amax(0)"],
)
@pytest.mark.parametrize(
    "values",
    [[float("nan"), float("nan")], [1.0, float("nan"), float("nan")], [2.0, 2.0, 1.0]],
    ids=["all NaN", "NaN ties", "ties"],
)
def test_tied_extremes_share_the_gradient_as_in_torch(op, values):
    """max()/min() count NaNs as tied with a NaN result; amax/amin compare with ==."""

    def program(lib):
        x = lib.tensor(values, dtype=lib.float64, requires_grad=True)
        op(x).sum().backward()
        return as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("op", [lambda x: x.var(), lambda x: x.std()], ids=["var", "std"])
@pytest.mark.parametrize("shape", [(), (1,)])
def test_the_spread_of_one_value_has_a_nan_gradient(op, shape):
    def program(lib):
        x = lib.ones(shape, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(op(x), x, materialize_grads=True)
        return as_numpy(g)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (NumPy's, on the degrees of freedom)
        assert_like_torch(program)


# --------------------------------------------------------------------------- tensors


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor([], dtype=lib.int64),
        lambda lib: lib.zeros(0, dtype=lib.bool),
        lambda lib: lib.zeros(2, 0, dtype=lib.int32),
        lambda lib: lib.zeros(0, dtype=lib.float64),
        lambda lib: lib.tensor([1, 2]),
    ],
    ids=["int64", "bool", "int32 2x0", "float64", "int64 values"],
)
def test_an_empty_tensor_shows_its_dtype(make):
    assert_like_torch(lambda lib: repr(make(lib)).replace("teachgrad", "torch"))


@pytest.mark.parametrize("mode", ["no_grad", "enabled"])
def test_numpy_of_a_tensor_that_requires_grad_is_allowed_under_no_grad(mode):
    def program(lib):
        x = lib.ones(2, requires_grad=True)
        context = lib.no_grad() if mode == "no_grad" else lib.enable_grad()
        with context:
            return x.numpy().tolist()

    assert_like_torch(program)


def test_an_inference_tensor_has_no_version():
    def program(lib):
        with lib.inference_mode():
            x = lib.ones(2)
        return x._version

    assert_like_torch(program)


@pytest.mark.parametrize("requires_grad", [True, False])
def test_views_taken_in_inference_mode(requires_grad):
    def program(lib):
        x = lib.ones(2, requires_grad=requires_grad)
        with lib.inference_mode():
            view, fresh = x[:1], lib.ones(2)[:1]
        return [(t.requires_grad, t.is_inference()) for t in (view, fresh)]

    assert_like_torch(program)


def test_the_repr_of_a_view_whose_history_cannot_be_rebuilt():
    def program(lib):
        x = lib.ones(2, requires_grad=True).clone()
        with lib.no_grad():
            view = x[:1]
            view.add_(1)
        return repr(view).replace("teachgrad", "torch")

    assert_like_torch(program)


# --------------------------------------------------------------------------- 0-d and empty


ZERO_D = {
    "squeeze(0)": lambda x: x.squeeze(0),
    "squeeze(-1)": lambda x: x.squeeze(-1),
    "squeeze((0,))": lambda x: x.squeeze((0,)),
    "squeeze(1)": lambda x: x.squeeze(1),
    "transpose(-1, 0)": lambda x: x.transpose(-1, 0),
    "transpose(0, 1)": lambda x: x.transpose(0, 1),
    "mT": lambda x: x.mT,
    "t()": lambda x: x.t(),
    "softmax(0)": lambda x: x.softmax(0),
    "log_softmax(0)": lambda x: x.log_softmax(0),
}


@pytest.mark.parametrize("op", ZERO_D.values(), ids=ZERO_D.keys())
@pytest.mark.parametrize("value", [3.0, float("inf"), float("nan")])
def test_ops_on_a_0d_tensor(op, value):
    def program(lib):
        x = lib.tensor(value, dtype=lib.float64, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (torch: mT of 0-d is deprecated)
            y = op(x)
        y.backward()
        return as_numpy(y), y.shape == x.shape, as_numpy(x.grad)

    assert_like_torch(program)


@pytest.mark.parametrize("op", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,dim", [((0,), 0), ((2, 0), 1), ((0, 3), 1), ((0, 3), 0)])
def test_softmax_of_no_elements(op, shape, dim):
    def program(lib):
        x = lib.zeros(shape, requires_grad=True)
        getattr(x, op)(dim).sum().backward()
        return tuple(x.grad.shape)

    assert_like_torch(program)


# --------------------------------------------------------------------------- bad input


BAD_CALLS = {
    "bool - bool": lambda lib: lib.tensor([True]) - lib.tensor([False]),
    "bool - number": lambda lib: lib.tensor([True]) - 1,
    "number - bool": lambda lib: 1 - lib.tensor([True]),
    "int - bool": lambda lib: lib.tensor([1, 2]) - lib.tensor([True, False]),
    "bool.sub_(bool)": lambda lib: lib.tensor([True]).sub_(lib.tensor([True])),
    "-bool": lambda lib: -lib.tensor([True]),
    "bool + bool": lambda lib: (lib.tensor([True]) + lib.tensor([True])).tolist(),
    "prod(dim=None)": lambda lib: lib.ones(2).prod(dim=None),
    "prod()": lambda lib: lib.ones(2, 3).prod().item(),
    "permute()": lambda lib: lib.ones(2, 3).permute(),
    "sign(nan)": lambda lib: lib.tensor([float("nan"), -2.0, 0.0]).sign().tolist(),
}


@pytest.mark.parametrize("call", BAD_CALLS.values(), ids=BAD_CALLS.keys())
def test_calls_torch_refuses_or_answers_differently(call):
    assert_like_torch(call)


@pytest.mark.parametrize(
    "parts",
    [["empty", "2x3"], ["2x3", "empty", "2x3"], ["empty", "empty"], ["empty64", "2x3"]],
    ids=str,
)
def test_cat_keeps_legacy_empty_tensors_in_the_graph_and_the_dtype(parts):
    """torch skips 1-d empty tensors when joining, but they still promote the dtype, get an
    edge in the graph and an (empty) gradient."""

    def program(lib):
        made = {
            "empty": lambda: lib.zeros(0, requires_grad=True),
            "empty64": lambda: lib.zeros(0, dtype=lib.float64, requires_grad=True),
            "2x3": lambda: lib.ones(2, 3, requires_grad=True),
        }
        tensors = [made[p]() for p in parts]
        y = lib.cat(tensors)
        y.sum().backward()
        return (
            tuple(y.shape),
            repr(y.dtype).replace("teachgrad", "torch"),
            len(y.grad_fn.next_functions),
            [tuple(t.grad.shape) for t in tensors],
        )

    assert_like_torch(program)


INDEX_WRITES = {
    "index_put_ long": lambda lib, x: x.index_put_((lib.tensor([0]),), lib.tensor([1])),
    "index_put_ double": lambda lib, x: x.index_put_(
        (lib.tensor([0]),), lib.tensor([1.0], dtype=lib.float64)
    ),
    "x[idx] = long": lambda lib, x: x.__setitem__(lib.tensor([0]), lib.tensor([1])),
    "x[idx] = number": lambda lib, x: x.__setitem__(lib.tensor([0]), 1),
    "x[0] = long 0-d": lambda lib, x: x.__setitem__(0, lib.tensor(1)),
    "x[:2] = long": lambda lib, x: x.__setitem__(slice(0, 2), lib.tensor([1, 2])),
}


@pytest.mark.parametrize("write", INDEX_WRITES.values(), ids=INDEX_WRITES.keys())
def test_writing_through_an_index_needs_the_same_dtype(write):
    def program(lib):
        x = lib.zeros(3)
        write(lib, x)
        return x.tolist()

    assert_like_torch(program)

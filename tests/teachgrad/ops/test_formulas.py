"""Every built-in node carries its derivative rule as data: ``formula``, like torch's
derivatives.yaml, for the backward stepper to show next to the node it runs.

``formula`` maps each forward input that can get a gradient (torch's argument name, in
forward order) to the right-hand side of ∂L/∂<input> = ..., written with ``grad`` (the
incoming gradient; ``grad0``, ``grad1`` ... for the outputs of unbind/split), the op's
saved names, ``result`` (the forward output) and the short vocabulary below; a rule may
name a part of itself after a semicolon (``...; gw = grad · weight``). For the elementwise
ops whose rules are plain products, the last test evaluates the rule with NumPy and
compares it with the gradient backward computes.

Which classes must have one (and which are skipped, and why):

* every ``Function`` subclass defined in teachgrad that sets its own ``node_name`` (torch's
  name for its node): these are the built-in ops and the backward helpers that show up as
  nodes under ``create_graph=True``. A subclass without one of its own (``_Binary``,
  ``_Unary``, ``_View``, ``_Weighted`` ...) is only a base of such ops, or a base for users
  (``InplaceFunction``, ``NestedIOFunction``), or gradcheck's own helper; none is ever a
  built-in node. A base may still hold the rule its subclasses share (``_ZeroGrad``).
* every other ``Node`` subclass the engine builds: ``AccumulateGrad`` (a leaf has no
  inputs: its rule says where the gradient goes, keyed by its ``variable``) and
  ``CopySlices`` (its inputs are those of the in-place node ``fn`` it wraps).
* ``SKIPPED`` lists the exceptions by name, each with its reason.
"""

import inspect
import re

import numpy as np
import pytest

import teachgrad as tg
import teachgrad.nn.functional  # noqa: F401 - imported so that all Functions are defined
from teachgrad.autograd import Function
from teachgrad.autograd.function import BackwardFunction
from teachgrad.autograd.tape import AccumulateGrad, Node
from teachgrad.ops import (  # noqa: F401 - imported so that all Functions are defined
    index,
    inplace,
    linalg,
    nn,
    pointwise,
    reduce,
    shape,
    views,
)
from teachgrad.ops.inplace import CopySlices

SKIPPED = {
    "_DelayedError": "once_differentiable's guard, in autograd/function.py (outside teachgrad/ops): "
    "its backward only raises",
    "_UndefinedGrad": "torch's test node UndefinedGrad, in autograd/function.py (outside "
    "teachgrad/ops): its backward sends back no gradient",
}

# --------------------------------------------------------------------------- the vocabulary

# Functions and operators a rule may call (with teachgrad's/torch's meaning).
MATH_WORDS = {
    "avg_pool2d", "cat", "col2im", "conv2d", "conv2d_input", "conv2d_weight", "cos", "cumsum",
    "einsum", "im2col",
    "exp", "flip", "gather", "index_add", "index_select", "log", "mean", "nll_loss", "outer",
    "permute", "roll", "scatter", "scatter_add", "select", "sign", "sin", "squeeze", "stack",
    "sum", "transpose", "tril", "triu", "where", "floor", "trunc", "eye", "solve_triangular",
}  # fmt: skip
# Names of arguments that are not Tensors or get no gradient (dims, indices, masks, number
# bounds), and quantities a rule names: N the number of elements a mean divides by, rstd
# and x_hat layer norm's 1/std and normalised input, fn the in-place node CopySlices wraps.
ARGUMENT_WORDS = {
    "N", "accumulate", "alpha", "correction", "diagonal", "dim", "dim0", "dim1", "dim2",
    "dims", "divisor", "fn", "i", "j", "index", "indices", "mask", "max", "min", "offset", "output",
    "padding_idx", "rstd", "shifts", "view", "x_hat",
}  # fmt: skip
# Plain words, for the rules best said in words ("grad summed over the expanded dims").
PLAIN_WORDS = {
    "added", "along", "and", "applied", "as", "at", "back", "backward", "batch", "columns", "copies",
    "cropped", "when",
    "derivative", "device", "dtype", "each", "expanded", "for", "gradient", "in", "inside",
    "into", "inverse", "no", "not", "number", "of", "off", "on", "outside", "over", "padding", "pair",
    "plane", "positions", "put", "raises", "read", "reshaped", "rest", "rows", "rule", "rules",
    "same", "shape", "sizes", "slice", "split", "spread", "summed", "the", "ties", "to",
    "torch", "unless", "weights", "window", "with", "zeroed", "zeros",
}  # fmt: skip
ALLOWED_WORDS = MATH_WORDS | ARGUMENT_WORDS | PLAIN_WORDS


def _function_classes():
    found, todo = [], [Function]
    while todo:
        for sub in todo.pop().__subclasses__():
            if sub not in found:
                found.append(sub)
                todo.append(sub)
    return [c for c in found if c.__module__.startswith("teachgrad")]


def _node_classes():
    """Function subclasses with their own node_name, and the Node classes the engine builds."""
    functions = [c for c in _function_classes() if "node_name" in c.__dict__]
    found, todo = [], [Node]
    while todo:
        for sub in todo.pop().__subclasses__():
            if not issubclass(sub, BackwardFunction) and sub not in found:
                found.append(sub)
                todo.append(sub)
    others = [c for c in found if c.__module__.startswith("teachgrad")]
    return [c for c in functions + others if c.__name__ not in SKIPPED]


NODE_CLASSES = _node_classes()
SAVED_ANYWHERE = {n for c in NODE_CLASSES for n in getattr(c, "saved_names", ())}


def _identifiers(rule: str) -> list:
    """The names a rule uses (``self's shape`` uses ``self`` and ``shape``)."""
    return re.findall(r"[A-Za-z_][A-Za-z0-9_]*", re.sub(r"'s\b", "", rule))


def _local_names(rule: str) -> set:
    """Names a rule defines for itself after a semicolon: ``...; gw = grad · weight``."""
    return set(re.findall(r";\s*([A-Za-z_]\w*)\s*=", rule))


def _name(cls) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


# --------------------------------------------------------------------------- every node has one


def test_the_classes_found_are_the_built_in_nodes():
    names = {c.__name__ for c in NODE_CLASSES}
    assert {"Mul", "Exp", "_TanhGrad", "ConvolutionWeightGrad", "AccumulateGrad"} <= names
    assert {"CopySlices", "AsStrided", "Copy", "SumAll", "T"} <= names
    assert not names & {"_Binary", "_Unary", "_View", "_Weighted", "InplaceFunction"}
    found = {c.__name__ for c in _function_classes()}
    assert set(SKIPPED) <= found, "a skipped class no longer exists: drop it from SKIPPED"
    assert len(NODE_CLASSES) > 130


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=_name)
def test_each_node_class_has_a_formula(cls):
    formula = getattr(cls, "formula", None)
    assert isinstance(formula, dict) and formula, f"{_name(cls)} has no formula"
    for key, rule in formula.items():
        assert isinstance(key, str) and key.strip()
        assert isinstance(rule, str) and rule.strip(), f"{_name(cls)}: empty rule for {key!r}"


def test_the_public_function_base_has_no_formula():
    assert "formula" not in Function.__dict__
    assert "formula" not in Node.__dict__


# --------------------------------------------------------------------------- what a rule may say


@pytest.mark.parametrize("cls", NODE_CLASSES, ids=_name)
def test_rules_use_only_known_names(cls):
    """A rule names the op's inputs, what its node saved or shows as ``_saved_<name>`` (the
    stepper shows those values: nll_loss's total_weight), or words of ALLOWED_WORDS."""
    saved = set(getattr(cls, "saved_names", ())) | set(getattr(cls, "saved_args", {}))
    own = saved | set(cls.formula) | {"result"}
    node = getattr(cls, "_backward_cls", None)
    for key, rule in cls.formula.items():
        shown = {w for w in _identifiers(rule) if hasattr(node, f"_saved_{w}")}
        unknown = {
            w
            for w in _identifiers(rule)
            if w not in own | shown | ALLOWED_WORDS | _local_names(rule)
            and not re.fullmatch(r"grad\d*", w)
        }
        assert not unknown, f"{_name(cls)}, rule for {key!r} ({rule!r}) uses {sorted(unknown)}"


@pytest.mark.parametrize(
    "cls", [c for c in NODE_CLASSES if getattr(c, "saved_names", ())], ids=_name
)
def test_saved_tensors_a_rule_uses_are_saved_by_that_op(cls):
    """A rule may read only what its backward has: ``grad · result`` for exp, not ``exp(self)``.

    (Names in ARGUMENT_WORDS that some other op saves, like clamp's ``min``, are numbers here.)
    """
    tensor_names = SAVED_ANYWHERE - ARGUMENT_WORDS
    kept = set(cls.saved_names) | set(cls.saved_args)  # (saved_args: the numbers it keeps)
    for key, rule in cls.formula.items():
        used = set(_identifiers(rule)) & tensor_names
        assert used <= kept, (
            f"{_name(cls)}, rule for {key!r} ({rule!r}) uses {sorted(used - kept)}, "
            f"which it does not save (it saves {cls.saved_names})"
        )


def test_the_vocabulary_does_not_hide_input_names():
    """A word in ALLOWED_WORDS would let any rule use it: none may be a gradient's key, but
    for the three that are also number arguments (clamp's min and max) or an input that gets
    no gradient (the relu output that _ReluGrad reads)."""
    keys = {k for c in NODE_CLASSES for k in c.formula}
    assert keys & ALLOWED_WORDS == {"min", "max", "output"}


@pytest.mark.parametrize("cls", [c for c in NODE_CLASSES if issubclass(c, Function)], ids=_name)
def test_keys_fit_the_forward_arguments(cls):
    """No more keys than forward arguments; a variadic forward (cat's ``*tensors``) keys
    its tensors by that parameter's name."""
    params = list(inspect.signature(cls.forward).parameters.values())[1:]  # (without ctx)
    assert len(cls.formula) <= len(params)
    variadic = [p.name for p in params if p.kind is inspect.Parameter.VAR_POSITIONAL]
    if variadic:
        assert list(cls.formula) == variadic


# the exact rules of a sample of ops, so that an edit that breaks one is noticed
EXPECTED = {
    pointwise.Mul: {"self": "grad · other", "other": "grad · self"},
    pointwise.Div: {"self": "grad / other", "other": "−grad · self / other²"},
    pointwise.Exp: {"self": "grad · result"},
    pointwise.Sin: {"self": "grad · cos(self)"},
    pointwise.Tanh: {"self": "grad · (1 − result²)"},
    pointwise.Relu: {"self": "grad · (result > 0)"},
    pointwise.PowScalar: {"self": "grad · exponent · self^(exponent − 1)"},
    pointwise.Pow: {
        "self": "grad · exponent · self^(exponent − 1)",
        "exponent": "grad · result · log(self)",
    },
    pointwise.Floor: {"self": "0"},
    linalg.Matmul: {"self": "grad @ mat2ᵀ", "mat2": "selfᵀ @ grad"},
    linalg.Mm: {"self": "grad @ mat2ᵀ", "mat2": "selfᵀ @ grad"},
    linalg.Mv: {"self": "outer(grad, vec)", "vec": "selfᵀ @ grad"},
    linalg.Dot: {"self": "grad · tensor", "tensor": "grad · self"},
    reduce.Sum: {"self": "grad expanded to self's shape"},
    reduce.SumAll: {"self": "grad expanded to self's shape"},
    reduce.Mean: {"self": "grad expanded to self's shape / N"},
    views.T: {"self": "gradᵀ"},
    views.Cat: {"tensors": "grad split along dim at the tensors' sizes"},
    views.Unbind: {"self": "stack([grad0, grad1, …], dim)"},
    shape.Triu: {"self": "triu(grad, diagonal)"},
    index.ScatterValue: {"self": "scatter(grad, dim, index, 0)"},
    nn.Addmm: {"self": "grad summed over the rows", "mat1": "grad @ mat2ᵀ", "mat2": "mat1ᵀ @ grad"},
    AccumulateGrad: {"variable": "grad, added into variable's gradient"},
    CopySlices: {
        "self": "grad outside the view; fn's rule inside",
        "fn's other inputs": "fn's rules, applied to grad[view]",
    },
}


@pytest.mark.parametrize("cls", list(EXPECTED), ids=_name)
def test_sample_rules(cls):
    assert cls.formula == EXPECTED[cls]


def test_every_node_of_a_real_graph_has_a_rule():
    """Including the backward helpers met under create_graph=True, CopySlices and views."""

    def rule_of(node):
        cls = type(node)
        return getattr(getattr(cls, "_forward_cls", None) or cls, "formula", None)

    x = tg.randn(3, 4, dtype=tg.float64, requires_grad=True)
    w = tg.randn(4, 2, dtype=tg.float64, requires_grad=True)
    b = (x @ w).tanh() * 2
    b[0] = x[0, :2].sigmoid()  # a view of b changed in place: CopySlices
    loss = b.relu().softmax(-1).log().sum() + b.t().sum(0).max()
    grads = tg.autograd.grad(loss, (x, w), create_graph=True)
    seen, todo = set(), [loss.grad_fn] + [g.grad_fn for g in grads]
    while todo:
        node = todo.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        assert rule_of(node), f"{node.name()} has no formula"
        todo += [n for n, _ in node.next_functions]
    names = {n.name() for n in seen}
    assert {
        "torch::autograd::CopySlices",
        "torch::autograd::AccumulateGrad",
        "TanhBackwardBackward0",
    } <= names
    assert {"SigmoidBackwardBackward0", "ThresholdBackwardBackward0"} <= names


# --------------------------------------------------------------------------- the rules by numbers

# A rule of an elementwise op (or a reduction whose rule is a product) as NumPy code.
_NUMPY = {
    "cos": np.cos,
    "sin": np.sin,
    "exp": np.exp,
    "log": np.log,
    "sign": np.sign,
    "sqrt": np.sqrt,
    "pi": np.pi,
    "sigmoid": lambda v: 1 / (1 + np.exp(-v)),
    "sum": lambda v, dim: v.sum(axis=dim, keepdims=True),
}
_SYMBOLS = {"·": "*", "−": "-", "²": "**2", "³": "**3", "^": "**", "√π": "sqrt(pi)", "σ": "sigmoid"}


def evaluate(rule, **values):
    """Evaluate ``rule`` with NumPy: ``grad · cos(self)`` is ``grad * np.cos(self)``."""
    for symbol, python in _SYMBOLS.items():
        rule = rule.replace(symbol, python)
    return eval(rule, {"__builtins__": {}, **_NUMPY}, values)  # noqa: S307 - our own strings


# (class, the inputs' domain, how many tensor inputs, the other forward arguments)
NUMERIC = [
    (pointwise.Mul, "real", 2, ()),
    (pointwise.Div, "nonzero", 2, ()),
    (pointwise.Pow, "positive", 2, ()),
    (pointwise.Maximum, "real", 2, ()),
    (pointwise.Minimum, "real", 2, ()),
    (pointwise.Exp, "real", 1, ()),
    (pointwise.Log, "positive", 1, ()),
    (pointwise.Log1p, "positive", 1, ()),
    (pointwise.Expm1, "real", 1, ()),
    (pointwise.Sqrt, "positive", 1, ()),
    (pointwise.Rsqrt, "positive", 1, ()),
    (pointwise.Reciprocal, "nonzero", 1, ()),
    (pointwise.Sin, "real", 1, ()),
    (pointwise.Cos, "real", 1, ()),
    (pointwise.Tan, "real", 1, ()),
    (pointwise.Tanh, "real", 1, ()),
    (pointwise.Sigmoid, "real", 1, ()),
    (pointwise.Relu, "nonzero", 1, ()),
    (pointwise.Abs, "nonzero", 1, ()),
    (pointwise.Neg, "real", 1, ()),
    (nn.Erf, "real", 1, ()),
    (nn.Silu, "real", 1, ()),
    (nn.Softmax, "real", 1, (-1,)),
    (nn.LogSoftmax, "real", 1, (-1,)),
    (reduce.ProdAll, "nonzero", 1, (None, False)),
    (reduce.Logsumexp, "real", 1, (None, False)),
]
_DOMAINS = {
    "real": lambda rng, n: rng.uniform(-2, 2, n),
    "positive": lambda rng, n: rng.uniform(0.5, 2, n),
    "nonzero": lambda rng, n: rng.uniform(0.5, 2, n) * rng.choice([-1.0, 1.0], n),
}
_KEYS = {1: ("self",), 2: ("self", "other")}


@pytest.mark.parametrize("cls, domain, n, extra", NUMERIC, ids=[c.__name__ for c, *_ in NUMERIC])
def test_rule_matches_backward_by_numbers(cls, domain, n, extra):
    rng = np.random.default_rng(0)
    arrays = [_DOMAINS[domain](rng, (3, 4)) for _ in range(n)]
    if n == 2:
        arrays[1][0, 0] = arrays[0][0, 0]  # a tie, for maximum and minimum
    inputs = [tg.tensor(a, requires_grad=True) for a in arrays]
    out = cls.apply(*inputs, *extra)
    grad = rng.standard_normal(out.shape)
    out.backward(gradient=tg.tensor(grad))

    names = dict(zip(_KEYS[n], arrays, strict=True))
    if cls is pointwise.Pow:
        names["exponent"] = names.pop("other")
    values = {**names, "result": out.detach().cpu().numpy(), "grad": grad, "dim": -1}
    assert list(cls.formula) == list(names)
    for rule, x in zip(cls.formula.values(), inputs, strict=True):
        expected = np.broadcast_to(evaluate(rule, **values), x.shape)
        np.testing.assert_allclose(
            x.grad.cpu().numpy(), expected, rtol=1e-12, atol=1e-12, err_msg=rule
        )

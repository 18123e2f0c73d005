"""The ``_foreach_*`` ops: one op applied to every tensor of a list (torch's multi-tensor
ops, with which optimizers update all their parameters in a few calls).

torch runs one fused kernel for the whole list; teachgrad runs the op once per tensor,
with the op's own Function, so the values and each tensor's gradient are the op's.
What foreach adds is the graph:

* out of place (``_foreach_exp(xs)``), the outputs share **one** node, torch's
  ``ForeachExpBackward0``: output ``i`` is its output ``i``, and its edges are every input
  list in turn (``_foreach_add(xs, ys)``: ``xs[0], xs[1], ..., ys[0], ...``). Backward
  runs, for each output, the node the op recorded for it (``ExpBackward0``), and sends
  its gradients on through the foreach node's edges;
* in place (``_foreach_exp_(xs)``), each tensor is changed by the op's in-place form and
  gets that op's node, as in torch (``ExpBackward0``; ``MulBackward1`` for a number
  factor). Every tensor is checked before any is changed.

    >>> import teachgrad as tg
    >>> xs = [tg.ones(2, requires_grad=True), tg.zeros(3, requires_grad=True)]
    >>> ys = tg._foreach_exp(xs)
    >>> ys[1].grad_fn.name(), ys[0].grad_fn is ys[1].grad_fn
    ('ForeachExpBackward0', True)
    >>> (ys[0].sum() + ys[1].sum()).backward(); xs[1].grad
    tensor([1., 1., 1.])

Not here: torch's ``_foreach_lerp``, ``_foreach_addcmul``/``addcdiv``, ``_foreach_copy_``
and the ops teachgrad has no Tensor op for (``_foreach_erf``, ``_foreach_log2`` ...).
"""

from __future__ import annotations

from .._tensor import Tensor, type_name
from ..autograd.grad_mode import state as _grad_state
from ..autograd.tape import Node, spec_of, stamp
from . import pointwise, reduce
from .inplace import Zero, _leaf_in_place, inplace
from .pointwise import Add, DivByNumber, MulByNumber, Sub

# --------------------------------------------------------------------------- the shared node


class ForeachBackward(Node):
    """The one node of an out-of-place foreach op's outputs (its name is torch's, e.g.
    ``ForeachAddBackward0List``). ``steps[i]`` is ``(node, routes)``: the node the op
    recorded for output ``i`` (None if nothing of it requires grad) and, for each edge of
    that node, which of this node's edges it is."""

    formula = {"each input": "each rule, applied to each grad"}  # (the per-tensor nodes')
    _saved = ("steps",)  # (so the engine frees what the per-tensor nodes saved)

    def __init__(self, name, steps, n_inputs, outputs):
        self._name = name
        self.steps = steps
        edges = [(None, 0)] * n_inputs
        for node, routes in steps:
            for j, k in (routes or {}).items():
                edges[k] = node.next_functions[j]
        self.next_functions = tuple(edges)
        self._output_meta = tuple(spec_of(o._data) for o in outputs)
        stamp(self)

    def name(self) -> str:
        return self._name

    def _apply(self, grads):
        result = [None] * len(self.next_functions)
        for g, (node, routes) in zip(grads, self.steps):
            if g is None or node is None:
                continue  # (no gradient for this output, or nothing of it requires grad)
            for j, gi in enumerate(node._apply([g])):
                k = routes.get(j)  # (None: a number operand, which has no edge)
                if k is not None and gi is not None:  # a shared 0-d tensor gets every output's
                    result[k] = gi if result[k] is None else result[k] + gi
        return tuple(result)

    def _release_saved(self):
        for node, _ in self.steps:
            if node is not None and node._saved:
                node._release_saved()


def _routes(node, inputs) -> dict:
    """{edge of ``node``: input number} for the ``inputs`` (``{input number: tensor}``) of
    the call that recorded ``node``: each edge goes to the input whose own edge it is (an
    op that converts its input first, as ``norm(x, dtype=...)``, has an edge to that
    conversion: it goes to the input left over)."""
    left = [(k, t._edge()) for k, t in inputs.items() if t.requires_grad]
    routes, unmatched = {}, []
    for j, edge in enumerate(node.next_functions):
        match = next((m for m in left if m[1][0] is edge[0] and m[1][1] == edge[1]), None)
        if match is None:
            unmatched.append(j)
        else:
            routes[j] = match[0]
            left.remove(match)
    for j, (k, _) in zip([j for j in unmatched if node.next_functions[j][0]], left):
        routes[j] = k
    return routes


def _foreach(name, op, calls, n_inputs, kwargs=None, saved=None):
    """``op(*args, **kwargs)`` for each ``(args, places)`` of ``calls``; ``places`` maps an
    argument position to the input (edge) number it is. The outputs, as a tuple, share one
    node named ``name`` when any of them was recorded; it shows the numbers of ``saved``
    (``{"scalars": (0.0, 1.0)}``) as torch's does (``grad_fn._saved_scalars``)."""
    outputs = [op(*args, **(kwargs or {})) for args, _ in calls]
    if all(o._grad_fn is None for o in outputs):
        return tuple(outputs)
    steps = []
    for o, (args, places) in zip(outputs, calls):
        inputs = {k: args[pos] for pos, k in places.items()}
        steps.append((o._grad_fn, o._grad_fn and _routes(o._grad_fn, inputs)))
    node = ForeachBackward(name, tuple(steps), n_inputs, outputs)
    for key, value in (saved or {}).items():
        setattr(node, f"_saved_{key}", value)
    for nr, o in enumerate(outputs):
        o._grad_fn, o._output_nr, o._requires_grad = node, nr, True
    return tuple(outputs)


# --------------------------------------------------------------------------- torch's argument checks


def _tensor_list(fn: str, tensors, position: int = 1, arg: str = "self") -> list:
    """``tensors`` checked as torch checks a list of tensors: a non-empty list or tuple."""
    if not isinstance(tensors, list | tuple):
        raise TypeError(
            f"{fn}(): argument '{arg}' (position {position}) must be tuple of Tensors, not "
            f"{type_name(tensors)}\n  Pass a list of tensors, e.g. [x] for one."
        )
    for k, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(
                f"expected Tensor as element {k} in argument {position - 1}, but got "
                f"{type_name(t)}\n  Every entry of the list must be a tensor."
            )
    if not tensors:
        raise RuntimeError(
            "Tensor list must have at least one tensor.\n  A foreach op needs a tensor to work on."
        )
    return list(tensors)


def _same_length(xs, others, scalars: bool) -> None:
    if len(xs) != len(others):
        if scalars:
            raise RuntimeError(
                "Tensor list must have same number of elements as scalar list.\n  Give one "
                f"number per tensor: {len(xs)} tensors, {len(others)} numbers."
            )
        raise RuntimeError(
            f"Tensor lists must have the same number of tensors, got {len(xs)} and {len(others)}"
            "\n  The lists are paired tensor by tensor."
        )


def _form(fn: str, xs, other) -> str:
    """Which of torch's overloads ``other`` picks: "List" (of tensors), "ScalarList",
    "Tensor" (a 0-d tensor that requires grad) or "Scalar" (a number; a 0-d tensor that
    does not require grad reads as its number, as torch's argument parser reads it)."""
    if isinstance(other, list | tuple):
        scalars = not any(isinstance(o, Tensor) for o in other)
        if not scalars:
            _tensor_list(fn, other, 2, "other")
        _same_length(xs, other, scalars)
        return "ScalarList" if scalars else "List"
    if isinstance(other, Tensor) and other.requires_grad:
        return "Tensor"
    return "Scalar"


def _refuse(fn: str, xs, other, **kwargs):
    """torch's TypeError for arguments no overload of ``fn`` takes."""
    got = ", ".join(
        [type_name(xs), type_name(other), *(f"{k}={type_name(v)}" for k, v in kwargs.items())]
    )
    return TypeError(
        f"_foreach_{fn}() received an invalid combination of arguments - got ({got}), but "
        f"expected one of:\n  See torch._foreach_{fn}'s overloads."
    )


def _pairs(xs, other, form) -> list:
    """``(args, places)`` per tensor of ``xs`` with its operand from ``other``: a tensor
    of a list is input ``len(xs) + i``, a 0-d tensor input ``len(xs)``."""
    n = len(xs)
    if form == "List":
        return [((x, y), {0: i, 1: n + i}) for i, (x, y) in enumerate(zip(xs, other))]
    if form == "ScalarList":
        return [((x, s), {0: i}) for i, (x, s) in enumerate(zip(xs, other))]
    return [((x, other), {0: i, 1: n} if form == "Tensor" else {0: i}) for i, x in enumerate(xs)]


def _n_inputs(xs, form) -> int:
    return {"List": 2 * len(xs), "Tensor": len(xs) + 1}.get(form, len(xs))


# --------------------------------------------------------------------------- unary ops

_UNARY = (
    "abs", "ceil", "cos", "exp", "expm1", "floor", "log", "log1p", "neg", "reciprocal",
    "round", "rsqrt", "sigmoid", "sign", "sin", "sqrt", "tan", "tanh",
)  # fmt: skip


def _camel(op: str) -> str:
    """torch's spelling of an op in a node name: ``clamp_min`` is ``ClampMin``, ``log1p``
    ``Log1P``."""
    return "".join(part[:1].upper() + part[1:] for part in op.replace("1p", "1_p").split("_"))


def _unary(op: str):
    fn = getattr(pointwise, op)

    def out_of_place(self):
        xs = _tensor_list(f"_foreach_{op}", self)
        calls = [((x,), {0: i}) for i, x in enumerate(xs)]
        return _foreach(f"Foreach{_camel(op)}Backward0", fn, calls, len(xs))

    def in_place(self):
        _each_in_place(f"_foreach_{op}_", self, f"{op}_", fn)
        return self

    out_of_place.__doc__ = (
        f"``{op}`` of each tensor of a list, as a tuple (one node for all: torch's).\n\n"
        f"    >>> import teachgrad as tg\n    >>> len(tg._foreach_{op}([tg.ones(2), tg.ones(3)]))\n"
        "    2\n"
    )
    in_place.__doc__ = (
        f"``{op}_`` of each tensor of a list, in place; returns the list.\n\n"
        f"    >>> import teachgrad as tg\n    >>> xs = [tg.ones(2)]\n"
        f"    >>> tg._foreach_{op}_(xs) is xs, xs[0]._version\n    (True, 1)\n"
    )
    return out_of_place, in_place


def _each_in_place(fn: str, xs, op: str, f, operands=None, kwargs=None) -> None:
    """``inplace(x, op, f)`` (with ``operands[i]``, if given) for each tensor ``x`` of
    ``xs``, after torch's first check on every tensor: no leaf that requires grad is changed
    (so a refusal leaves all of them as they were)."""
    xs = _tensor_list(fn, xs)
    if _grad_state.enabled:
        for x in xs:
            if x._base is None and x._grad_fn is None and x._requires_grad:
                raise _leaf_in_place(fn)
    for i, x in enumerate(xs):
        inplace(x, op, f, *(() if operands is None else (operands[i],)), **(kwargs or {}))


# --------------------------------------------------------------------------- binary ops


class _AddByNumber(Add):
    """``tensor + number`` (torch's ``add.Scalar``, which in-place foreach calls: node
    ``AddBackward1``): the number is an argument of the node, without an edge."""

    node_name, number_inputs = "AddBackward1", ()


class _SubByNumber(Sub):
    """``tensor - number`` (``sub.Scalar``: node ``SubBackward1``)."""

    node_name, number_inputs = "SubBackward1", ()


# op: (the per-tensor function, {form: torch's node-name suffix}, the in-place function
# for a number operand (None: the tensor function's))
_BINARY = {
    "add": (pointwise.add, {"List": "0List", "Scalar": "1Scalar", "ScalarList": "1ScalarList", "Tensor": "0Tensor"}, _AddByNumber.apply),  # noqa: E501
    "sub": (pointwise.sub, {"List": "0List", "Scalar": "1Scalar", "ScalarList": "1ScalarList"}, _SubByNumber.apply),  # noqa: E501
    "mul": (pointwise.mul, {"List": "0List", "Scalar": "1Scalar", "ScalarList": "1ScalarList", "Tensor": "0Tensor"}, MulByNumber.apply),  # noqa: E501
    "div": (pointwise.div, {"List": "0", "Scalar": "1Scalar", "ScalarList": "1ScalarList", "Tensor": "0Tensor"}, DivByNumber.apply),  # noqa: E501
    "pow": (pointwise.pow, {"List": "0", "Scalar": "0Scalar", "ScalarList": "1"}, None),
}  # fmt: skip


def _binary(op: str):
    fn, suffixes, by_number = _BINARY[op]
    alpha_kw = op in ("add", "sub")

    def checked_form(xs, other, kwargs):
        form = _form(f"_foreach_{op}", xs, other)
        # (only add and sub take a keyword, alpha, and only with a list of tensors)
        takes = not kwargs or alpha_kw and list(kwargs) == ["alpha"] and form == "List"
        if form not in suffixes or not takes:
            raise _refuse(op, xs, other, **kwargs)
        return form

    def out_of_place(self, other, **kwargs):
        xs = _tensor_list(f"_foreach_{op}", self)
        form = checked_form(xs, other, kwargs)
        name = f"Foreach{_camel(op)}Backward{suffixes[form]}"
        return _foreach(name, fn, _pairs(xs, other, form), _n_inputs(xs, form), kwargs)

    def in_place(self, other, **kwargs):
        xs = _tensor_list(f"_foreach_{op}_", self)
        form = checked_form(xs, other, kwargs)
        f = by_number if by_number and form in ("Scalar", "ScalarList") else fn
        operands = [args[1] for args, _ in _pairs(xs, other, form)]
        _each_in_place(f"_foreach_{op}_", xs, f"{op}_", f, operands, kwargs)
        return self

    out_of_place.__doc__ = (
        f"``{op}`` of each tensor of a list with a list of tensors, a number, a list of "
        "numbers or a 0-d tensor, as a tuple (one node for all: torch's).\n\n"
        f"    >>> import teachgrad as tg\n    >>> tg._foreach_{op}([tg.ones(2)], 2.0)[0].shape\n"
        "    teachgrad.Size([2])\n"
    )
    in_place.__doc__ = (
        f"``{op}_`` of each tensor of a list, in place; returns the list.\n\n"
        f"    >>> import teachgrad as tg\n    >>> xs = [tg.ones(2)]\n"
        f"    >>> tg._foreach_{op}_(xs, 2.0) is xs, xs[0]._version\n    (True, 1)\n"
    )
    return out_of_place, in_place


def _clamp_min(x, bound):
    return pointwise.clamp(x, bound)


def _clamp_max(x, bound):
    return pointwise.clamp(x, None, bound)


# op: (its function for a tensor operand, for a number, {form: torch's node-name suffix})
_BOUNDS = {
    "maximum": (pointwise.maximum, _clamp_min, {"List": "0List", "Scalar": "0", "ScalarList": "1"}),
    "minimum": (pointwise.minimum, _clamp_max, {"List": "0List", "Scalar": "0", "ScalarList": "1"}),
    "clamp_min": (_clamp_min, _clamp_min, {"List": "1List", "Scalar": "0Scalar", "ScalarList": "0ScalarList"}),  # noqa: E501
    "clamp_max": (_clamp_max, _clamp_max, {"List": "1List", "Scalar": "0Scalar", "ScalarList": "0ScalarList"}),  # noqa: E501
}  # fmt: skip


def _saved_numbers(op: str, form: str, other) -> dict:
    """The numbers torch's node of ``_foreach_maximum``/``minimum`` keeps: ``scalar`` or
    ``scalars`` (its ``clamp_min``/``clamp_max`` nodes keep none)."""
    if op not in ("maximum", "minimum") or form not in ("Scalar", "ScalarList"):
        return {}
    if form == "ScalarList":
        return {"scalars": tuple(other)}
    return {"scalar": other.item() if isinstance(other, Tensor) else other}


def _bound(op: str):
    """``_foreach_maximum`` ... out of place (their in-place forms are not here)."""
    by_tensor, by_number, suffixes = _BOUNDS[op]

    def out_of_place(self, other):
        xs = _tensor_list(f"_foreach_{op}", self)
        form = _form(f"_foreach_{op}", xs, other)
        if form not in suffixes:
            raise _refuse(op, xs, other)
        fn = by_tensor if form == "List" else by_number
        name = f"Foreach{_camel(op)}Backward{suffixes[form]}"
        pairs, n_inputs = _pairs(xs, other, form), _n_inputs(xs, form)
        return _foreach(name, fn, pairs, n_inputs, saved=_saved_numbers(op, form, other))

    out_of_place.__doc__ = (
        f"``{op}`` of each tensor of a list with a list of tensors, a number or a list of "
        "numbers, as a tuple (one node for all: torch's).\n\n"
        f"    >>> import teachgrad as tg\n    >>> tg._foreach_{op}([tg.zeros(2)], 1.0)[0].shape\n"
        "    teachgrad.Size([2])\n"
    )
    return out_of_place


# --------------------------------------------------------------------------- the rest


def _foreach_norm(self, ord=2, dtype=None):  # noqa: A002 - torch's name
    """The vector ``ord``-norm of each tensor of a list (``linalg.vector_norm``), as a tuple.

    >>> import teachgrad as tg
    >>> tg._foreach_norm([tg.tensor([3.0, 4.0]), tg.ones(4)])
    (tensor(5.), tensor(2.))
    """
    xs = _tensor_list("_foreach_norm", self)
    calls = [((x, ord), {0: i}) for i, x in enumerate(xs)]
    return _foreach("ForeachNormBackward0", reduce.norm, calls, len(xs), {"dtype": dtype})


def _foreach_pow_scalar(base, exponents):
    """``base ** x`` for each tensor ``x`` of a list (``_foreach_pow(2.0, xs)``)."""
    xs = _tensor_list("_foreach_pow", exponents, 2, "exponent")
    calls = [((base, x), {1: i}) for i, x in enumerate(xs)]
    return _foreach("ForeachPowBackward2", pointwise.pow, calls, len(xs))


def _foreach_zero_(self):
    """Fill each tensor of a list with zeros, in place (node ``ZeroBackward0`` each).

    >>> import teachgrad as tg
    >>> xs = [tg.ones(2)]; tg._foreach_zero_(xs)[0]
    tensor([0., 0.])
    """
    _each_in_place("_foreach_zero_", self, "zero_", Zero.apply)
    return self


_pow, _foreach_pow_ = _binary("pow")


def _foreach_pow(self, exponent):
    """``x ** exponent`` for each tensor of a list (the exponent a list of tensors, a number
    or a list of numbers), or ``self ** x`` for each ``x`` of a list ``exponent`` when
    ``self`` is a number; a tuple (one node for all: torch's).

    >>> import teachgrad as tg
    >>> tg._foreach_pow([tg.tensor([3.0])], 2), tg._foreach_pow(2.0, [tg.tensor([3.0])])
    ((tensor([9.]),), (tensor([8.]),))
    """
    if isinstance(self, int | float) and not isinstance(self, bool):
        return _foreach_pow_scalar(self, exponent)
    return _pow(self, exponent)


_foreach_add, _foreach_add_ = _binary("add")
_foreach_sub, _foreach_sub_ = _binary("sub")
_foreach_mul, _foreach_mul_ = _binary("mul")
_foreach_div, _foreach_div_ = _binary("div")
_foreach_maximum = _bound("maximum")
_foreach_minimum = _bound("minimum")
_foreach_clamp_min = _bound("clamp_min")
_foreach_clamp_max = _bound("clamp_max")

_UNARY_FUNCTIONS = {}
for _op in _UNARY:
    _UNARY_FUNCTIONS[f"_foreach_{_op}"], _UNARY_FUNCTIONS[f"_foreach_{_op}_"] = _unary(_op)
globals().update(_UNARY_FUNCTIONS)

__all__ = sorted(
    [
        *_UNARY_FUNCTIONS,
        *(
            f"_foreach_{op}{tail}"
            for op in ("add", "sub", "mul", "div", "pow")
            for tail in ("", "_")
        ),
        *(f"_foreach_{op}" for op in _BOUNDS),
        "_foreach_norm",
        "_foreach_zero_",
    ]
)
for _name in __all__:
    globals()[_name].__name__ = globals()[_name].__qualname__ = _name

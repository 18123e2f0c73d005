"""``out=``: write a function's result into a tensor you already have.

torch's functions (``tg.add(a, b, out=c)``; not the Tensor methods) can write their
result into a given tensor instead of a new one. ``accepts_out`` gives a function that
keyword, in four steps:

1. autograd does not go through ``out=``: with grad mode on, an input or ``out`` that
   requires grad is an error (compute ``c = tg.add(a, b)`` instead, or use ``no_grad``),
   and so is a dual tensor of forward AD;
2. the function computes its result as usual;
3. the result must fit ``out``'s dtype: most functions cast it when torch's casting rules
   allow (a float result into float64, not into an integer or bool tensor); a few want
   exactly their own result's dtype (``mm``, ``gather`` ...), each with torch's message;
4. ``out`` takes the result's shape (resized, with torch's warning when it had elements
   and another shape), the values are written into its memory (its strides stay), its
   version goes up, and ``out`` itself is returned.

    >>> import teachgrad as tg
    >>> c = tg.zeros(2)
    >>> tg.add(tg.ones(2), tg.ones(2), out=c) is c, c, c._version
    (True, tensor([2., 2.]), 1)
"""

from __future__ import annotations

import functools
import warnings

from . import _backend, _seam
from ._arguments import has_signature, invalid_combination
from ._grad_state import state as _grad_state
from ._printing import c_type_name, scalar_name
from ._tensor import Tensor, type_name


def can_cast(res, out) -> bool:
    """torch's ``can_cast`` between NumPy dtypes: any cast but float to an integer, complex to
    real, and anything but bool to bool.

    >>> import numpy as np
    >>> can_cast(np.dtype("float32"), np.dtype("float64")), can_cast(np.dtype("float32"), np.dtype("int64"))
    (True, False)
    """
    if out.kind == "b":
        return res.kind == "b"
    if res.kind == "c":
        return out.kind == "c"
    return not (res.kind == "f" and out.kind in "iu")


def _same(res, out) -> bool:
    return res == out


def _any(res, out) -> bool:
    return True


# Step 3, per function: (does out's dtype fit the result's, the error if not). Most functions
# follow torch's casting rules; some want exactly their result's dtype; each says so in
# torch's words ({res}/{out}: torch's names of the two dtypes, Float; {res_c}/{out_c}: C's,
# float; {name}: the function's).
_CAST = (can_cast, RuntimeError,
         "result type {res} can't be cast to the desired output type {out}")  # fmt: skip
_EXACT = (_same, RuntimeError, "Expected out tensor to have dtype {res_c}, but got {out_c} instead")
_FOUND = (_same, RuntimeError, "Found dtype {out} but expected {res}")
_MATCH = (_same, RuntimeError, "Expected the dtype for input and out to match, but got {res} for "
          "input's dtype and {out} for out's dtype.")  # fmt: skip
_BOOL = (lambda res, out: out.kind == "b", RuntimeError,
         "{name} only supports bool tensor for result, got: {out}")  # fmt: skip
_CAT = (can_cast, TypeError,
        "teachgrad.cat(): input types can't be cast to the desired output type {out}")  # fmt: skip
_CAN_CAST = (can_cast, RuntimeError,
             "Expected canCast( typeMetaToScalarType(self.dtype()), typeMetaToScalarType(out.dtype())) "
             "to be true, but got false.  (Could this error message be improved?  If so, please "
             "report an enhancement request to PyTorch.)")  # fmt: skip
DTYPE_RULES = {
    **dict.fromkeys(("argmax", "argmin", "bmm", "gather", "log_softmax", "matmul", "mm", "mv",
                     "norm", "scatter", "scatter_add", "softmax", "tril", "triu"), _EXACT),
    **dict.fromkeys(("abs", "ceil", "clamp", "clip", "floor", "neg", "round", "sign"), _FOUND),
    **dict.fromkeys(("amax", "amin"), _MATCH),
    **dict.fromkeys(("all", "any"), _BOOL),
    **dict.fromkeys(("cat", "stack"), _CAT),  # (stack is cat in torch, and says so)
    **dict.fromkeys(("max", "min"), _CAN_CAST),
    **dict.fromkeys(("sum", "prod"), (_any, None, "")),  # computed in out's dtype (see below)
    "cumsum": (lambda res, out: out.kind != "b", NotImplementedError,
               "\"cumsum_out_cpu\" not implemented for 'Bool'"),
    "dot": (_same, RuntimeError, "result dtype {out} does not match input dtype {res}"),
    "where": (_same, RuntimeError, "Expected out type to be {res} but got {out}"),
    "index_select": (_same, RuntimeError,
                     "index_select(): self and result must have the same scalar type"),
    "logsumexp": (lambda res, out: out.kind == "f", RuntimeError,
                  "logsumexp(): Expected floating point type for result tensor, but got: {out}"),
    **dict.fromkeys(("linalg.vector_norm", "linalg.qr", "qr"), _EXACT),
    "linalg.solve_triangular": (_same, RuntimeError, "expected scalar type {res} but found {out}"),
    "addbmm": (_same, RuntimeError, "self and mat2 must have the same dtype, but got {out} and {res}"),
    **dict.fromkeys(("linalg.matrix_norm", "linalg.norm"),
                    (_same, RuntimeError, "{name} expected out tensor dtype {res} but got: {out}")),
}  # fmt: skip
# where torch's rule depends on the call: lerp with a tensor weight is another kernel than
# lerp with a number, and wants out of exactly the result's dtype
RULES_OF_CALLS = {
    "lerp": lambda args, kwargs: (
        _FOUND if isinstance(args[2] if len(args) > 2 else kwargs.get("weight"), Tensor) else None
    ),
}
# the reductions that compute in out's dtype, as if given dtype=out.dtype (its inputs cast first)
IN_OUTS_DTYPE = ("sum", "prod", "cumsum")
# the functions whose kernel resizes out itself, without torch's warning
QUIET_RESIZE = ("addbmm",)

_RESIZED = (
    "An output with one or more elements was resized since it had shape {had}, which does not "
    "match the required output shape {need}. This behavior is deprecated, and in a future "
    "PyTorch release outputs will not be resized unless they have zero elements. You can "
    "explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
)


def accepts_out(fn, name: str | None = None, *, makes: bool = False):
    """``fn`` with torch's ``out=`` keyword (see the module docstring); ``name``: the name
    torch's messages give it (default: ``fn``'s); ``makes``: ``fn`` makes a tensor (``zeros``,
    ``arange`` ...), which then gets out's dtype and device unless they are asked for, and
    resizes ``out`` without a warning.

    >>> import teachgrad as tg
    >>> exp = accepts_out(lambda x: x.exp(), "exp")
    >>> y = tg.empty(0); exp(tg.zeros(2), out=y) is y, y
    (True, tensor([1., 1.]))
    """
    name = name or fn.__name__

    @functools.wraps(fn)
    def with_out(*args, out=None, **kwargs):
        if out is None:
            return fn(*args, **kwargs)
        if _refuse_autograd(name, args, kwargs, out):  # 1.
            return _without_grad(into_out, args, kwargs, out)  # (see _refuse_autograd)
        return into_out(args, kwargs, out)

    def into_out(args, kwargs, out):
        """Steps 2 to 4."""
        if isinstance(out, Tensor) and (makes or name in IN_OUTS_DTYPE):
            kwargs.setdefault("dtype", out.dtype)
            if makes:
                kwargs.setdefault("device", out.device)
            _check_dtype(name, out._data.dtype, out._data.dtype)  # (before: it is out's own)
        result = fn(*args, **kwargs)  # 2.
        if isinstance(result, tuple):  # (max(x, dim) ...: out is a tuple of tensors too)
            outs = _tuple_out(name, args, kwargs, out, len(result))
            return type(result)(*(_write(name, r, o) for r, o in zip(result, outs, strict=True)))
        rule = RULES_OF_CALLS[name](args, kwargs) if name in RULES_OF_CALLS else None
        return _write(name, result, out, not (makes or name in QUIET_RESIZE), rule)  # 3. and 4.

    return with_out


def creation_out(fn):
    """``accepts_out(fn, makes=True)``, as a decorator for the functions that make a tensor.

    >>> import teachgrad as tg
    >>> n = tg.empty(0, dtype=tg.int64); tg.zeros(2, out=n) is n, n
    (True, tensor([0, 0]))
    """
    return accepts_out(fn, makes=True)


def _refuse_autograd(name, args, kwargs, out) -> bool:
    """Step 1: no graph goes through ``out=``, neither backward's (torch's RuntimeError)
    nor forward AD's (its NotImplementedError); ``out`` itself must be a tensor (or a tuple
    of them). True when every tensor is an inference tensor and one requires grad: torch's
    inference tensors skip autograd, so the op must record (and check) nothing of it."""
    if not isinstance(out, Tensor | list | tuple):
        raise _not_a_tensor(name, out)
    tensors = [out] if isinstance(out, Tensor) else list(out)
    for a in (*args, *kwargs.values()):
        tensors += a if isinstance(a, list | tuple) else [a]
    tensors = [t for t in tensors if isinstance(t, Tensor)]
    tracked = _grad_state.enabled and any(t._requires_grad for t in tensors)
    untracked = tracked and all(t._inference for t in tensors)
    if tracked and not untracked:
        raise RuntimeError(
            f"{name}(): functions with out=... arguments don't support automatic "
            "differentiation, but one of the arguments requires grad.\n  No graph can go "
            f"through a tensor written in place: write y = teachgrad.{name}(...) instead, or "
            "call it under teachgrad.no_grad()."
        )
    if any(_seam.tangent_of(t) is not None for t in tensors):
        raise NotImplementedError(
            f"Trying to use forward AD with {name}_out that does not support it because it is "
            f"an out= function\n  No tangent can go through a tensor written in place: write "
            f"y = teachgrad.{name}(...) instead."
        )
    return untracked


def _not_a_tensor(name, out) -> TypeError:
    return TypeError(f"{name}(): argument 'out' must be Tensor, not {type_name(out)}")


def _without_grad(fn, *args):
    """``fn(*args)`` with grad mode off (as under ``no_grad``, which this layer, below
    autograd, cannot import)."""
    previous, _grad_state.enabled = _grad_state.enabled, False
    try:
        return fn(*args)
    finally:
        _grad_state.enabled = previous


def _tuple_out(name, args, kwargs, out, n) -> tuple:
    """The tensors of an ``out=`` given for a function with ``n`` results (torch's parser
    error when it is not a tuple of ``n`` tensors)."""
    if isinstance(out, list | tuple) and len(out) == n and all(isinstance(o, Tensor) for o in out):
        return tuple(out)
    if not has_signature(name):  # (a function of one signature: torch names the argument)
        raise TypeError(
            f"{name.replace('.', '_')}(): argument 'out' must be tuple of Tensors, not "
            f"{type_name(out)}\n  It returns {n} tensors: give out=(one, another)."
        )
    raise invalid_combination(name, args, {**kwargs, "out": out})


def _write(name, result, out, warn=True, rule=None):
    """Steps 3 and 4: check the dtype (by ``rule``, else ``name``'s), resize (``warn``: with
    torch's warning when out had elements), write, count the change; return ``out``."""
    if not isinstance(out, Tensor):
        raise _not_a_tensor(name, out)
    _check_dtype(name, result._data.dtype, out._data.dtype, rule)
    _seam.check_inplace(out, f"{name}_out", False)  # (inference tensors, overlapping memory)
    data = result._data
    if out._data.shape != data.shape:
        if out._data.size and warn:
            need, had = list(data.shape), list(out._data.shape)
            warnings.warn(_RESIZED.format(had=had, need=need), UserWarning, stacklevel=3)
        out._data = _backend.array_module(data).empty(data.shape, out._data.dtype)
        out._base = None  # (new memory: no longer a view; torch may keep the base's memory)
    out._data[...] = data
    out._counter.bump(f"{name} (out=)")
    return out


def _check_dtype(name, res, out, rule=None) -> None:
    """Step 3: the result's dtype ``res`` fits ``out``'s, by ``rule`` or ``name``'s rule."""
    fits, error, message = rule or DTYPE_RULES.get(name, _CAST)
    if not fits(res, out):
        raise error(
            message.format(
                name=name,
                res=scalar_name(res.name),
                out=scalar_name(out.name),
                res_c=c_type_name(res.name),
                out_c=c_type_name(out.name),
            )
        )

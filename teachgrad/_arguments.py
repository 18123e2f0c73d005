"""torch's argument errors, for teachgrad's functions written in Python.

torch's functions are C++ behind an *argument parser*: before a function runs, the parser
matches the arguments against the function's *signatures* (one per overload) and refuses
a wrong one with a TypeError that names the function, the argument and what it should be:

    zeros(): argument 'dtype' must be teachgrad.dtype, not str

teachgrad's functions are plain Python. Without a check, a wrong argument goes on to
NumPy and fails there with an error about NumPy's insides, or does not fail at all
(``dtype="float32"`` would just work). So the factories ask ``parse`` first, which reads
their signatures, written here as torch writes its own, and refuses as torch's parser does.
The ops (``x.sum(1.5)``, ``x.reshape('a')``) are called far more often, so they are not
checked up front: ``checked`` wraps them and asks ``parse`` only after a call has failed
(``refusal``). An argument that would make nothing fail (``keepdim=1``, a bool dim, a
tensor as a dtype) is refused where the op uses it, cheaply, so that the call fails and
``checked`` words it. A method whose signatures are not written here gets Python's words
for a wrong count of arguments as torch's are (``uncallable``: torch's methods that take
nothing are C methods, ``TensorBase.exp() takes no arguments (1 given)``). Either way the
parser:

* an argument of the wrong type: its name, its position (if it was positional), the
  type the signature wants and the type it got;
* when several signatures are *plausible* (they take as many arguments as were given),
  the parser cannot know which one you meant, so it says ``received an invalid
  combination of arguments`` and lists them all, with a note under each that takes as
  many as were given (``didn't match because ...``, the wrong ones between "!");
* a size given as a list of numbers is read number by number: the first is checked with
  the list (``found element of type float at pos 0``); a later one that is not an int
  fails while being read (``failed to unpack the object at pos 2``).

    >>> parse("eye", (3,), {})
    {'n': 3}
    >>> parse("eye", (2.5,), {})
    Traceback (most recent call last):
    TypeError: eye(): argument 'n' (position 1) must be int, not float
"""

from __future__ import annotations

import functools
import inspect
import operator

from ._backend import device, dtype, memory_format
from ._tensor import Tensor, type_name  # (the Tensor's own setters need it too)

_OPTIONS = (
    "teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False"
)
_MEMORY_FORMAT = "teachgrad.memory_format memory_format = None"
_LIKE = f"Tensor input, *, {_MEMORY_FORMAT}, {_OPTIONS}"

# torch's signatures of each function, in its own notation: "type name", "= default" for
# an optional parameter, and "*" before the parameters that are keywords only
SIGNATURES = {
    "tensor": [
        "object data, *, teachgrad.dtype dtype = None, teachgrad.device device = None, "
        "bool pin_memory = False, bool requires_grad = False"
    ],
    "as_tensor": ["object data, teachgrad.dtype dtype = None, teachgrad.device device = None"],
    "zeros": [f"tuple of ints size, *, {_OPTIONS}"],
    "ones": [f"tuple of ints size, *, {_OPTIONS}"],
    "empty": [f"tuple of ints size, *, {_MEMORY_FORMAT}, {_OPTIONS}"],
    "empty_strided": [f"tuple of ints size, tuple of ints stride, *, {_OPTIONS}"],
    "rand": [
        f"tuple of ints size, *, Generator generator, {_OPTIONS}",
        f"tuple of ints size, *, {_OPTIONS}",
    ],
    "randn": [
        f"tuple of ints size, *, Generator generator, {_OPTIONS}",
        f"tuple of ints size, *, {_OPTIONS}",
    ],
    "full": [f"tuple of ints size, Number fill_value, *, {_OPTIONS}"],
    "zeros_like": [_LIKE],
    "ones_like": [_LIKE],
    "empty_like": [_LIKE],
    "full_like": [f"Tensor input, Number fill_value, *, {_MEMORY_FORMAT}, {_OPTIONS}"],
    "rand_like": [f"Tensor input, *, Generator generator, {_MEMORY_FORMAT}, {_OPTIONS}", _LIKE],
    "randn_like": [f"Tensor input, *, Generator generator, {_MEMORY_FORMAT}, {_OPTIONS}", _LIKE],
    "new_zeros": [f"tuple of ints size, *, {_OPTIONS}"],
    "new_ones": [f"tuple of ints size, *, {_OPTIONS}"],
    "new_empty": [f"tuple of ints size, *, {_OPTIONS}"],
    "new_full": [f"tuple of ints size, Number fill_value, *, {_OPTIONS}"],
    "new_tensor": [f"object data, *, {_OPTIONS}"],
    "arange": [
        f"Number end, *, {_OPTIONS}",
        f"Number start, Number end, *, {_OPTIONS}",
        f"Number start, Number end, Number step = 1, *, {_OPTIONS}",
    ],
    "linspace": [
        f"{start} start, {end} end, int steps, *, {_OPTIONS}"
        for start, end in (("Tensor", "Tensor"), ("Number", "Tensor"), ("Tensor", "Number"))
    ]
    + [f"Number start, Number end, int steps, *, {_OPTIONS}"],
    "eye": [f"int n, *, {_OPTIONS}", f"int n, int m, *, {_OPTIONS}"],
    "remainder": [
        "Tensor input, Tensor other, *, Tensor out = None",
        "Number self, Tensor other",
        "Tensor input, Number other, *, Tensor out = None",
    ],
    "fmod": [
        "Tensor input, Tensor other, *, Tensor out = None",
        "Tensor input, Number other, *, Tensor out = None",
    ],
    "randint": [
        f"int high, tuple of ints size, *, Generator generator, {_OPTIONS}",
        f"int high, tuple of ints size, *, {_OPTIONS}",
        f"int low, int high, tuple of ints size, *, Generator generator, {_OPTIONS}",
        f"int low, int high, tuple of ints size, *, {_OPTIONS}",
    ],
}

# The ops' signatures, as torch's functions have them; a Tensor method drops ``input`` and
# ``out`` (``Tensor.<name>`` where the method's differ; an in-place ``add_`` reads ``add``'s).
# "hidden": an old overload torch still accepts but does not list.
_OUT = "*, Tensor out = None"
_FORMAT = "teachgrad.memory_format? memory_format = preserve_format"
_DTYPE = "teachgrad.dtype dtype = None"
_OPS = {
    "sum": [
        f"Tensor input, *, {_DTYPE}",
        f"Tensor input, tuple of ints? dim, bool keepdim = False, *, {_DTYPE}, Tensor out = None",
    ],
    "mean": [
        f"Tensor input, *, {_DTYPE}, Tensor out = None",
        f"Tensor input, tuple of ints? dim, bool keepdim = False, *, {_DTYPE}, Tensor out = None",
    ],
    "prod": [
        f"Tensor input, *, {_DTYPE}",
        f"Tensor input, int dim, bool keepdim = False, *, {_DTYPE}, Tensor out = None",
    ],
    "amax": [f"Tensor input, tuple of ints? dim = [], bool keepdim = False, {_OUT}"],  # (None: all)
    "amin": [f"Tensor input, tuple of ints? dim = [], bool keepdim = False, {_OUT}"],
    "max": [
        f"Tensor input, {_OUT}",
        f"Tensor input, Tensor other, {_OUT}",
        "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None",
    ],
    "min": [
        f"Tensor input, {_OUT}",
        f"Tensor input, Tensor other, {_OUT}",
        "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None",
    ],
    "argmax": [f"Tensor input, int dim = None, bool keepdim = False, {_OUT}"],
    "argmin": [f"Tensor input, int dim = None, bool keepdim = False, {_OUT}"],
    "var": [
        f"Tensor input, tuple of ints? dim, bool unbiased = True, bool keepdim = False, {_OUT}",
        "Tensor input, tuple of ints dim = None, *, Number correction = None, "
        "bool keepdim = False, Tensor out = None",
        "Tensor input, bool unbiased = True",
    ],
    "var_mean": [
        "Tensor input, tuple of ints? dim, bool unbiased = True, bool keepdim = False",
        "Tensor input, tuple of ints dim = None, *, Number correction = None, bool keepdim = False",
        "Tensor input, bool unbiased = True",
    ],
    "logsumexp": [f"Tensor input, tuple of ints dim, bool keepdim = False, {_OUT}"],
    "cumsum": [f"Tensor input, int dim, *, {_DTYPE}, Tensor out = None"],
    "allclose": [
        "Tensor input, Tensor other, float rtol = 1e-05, float atol = 1e-08, bool equal_nan = False"
    ],
    "linalg_vector_norm": [
        "Tensor input, Number ord = 2, tuple of ints dim = None, bool keepdim = False, *, "
        f"{_DTYPE}, Tensor out = None"
    ],
    # (torch's split is Python: it calls one of these two, with its arguments by position)
    "split": [
        "Tensor input, int split_size, int dim = 0",
        "Tensor input, tuple of ints split_size, int dim = 0",
    ],
    "split_with_sizes": ["Tensor input, tuple of ints split_sizes, int dim = 0"],
    "unsafe_split": ["Tensor input, int split_size, int dim = 0"],
    "unsafe_split_with_sizes": ["Tensor input, tuple of ints split_sizes, int dim = 0"],
    "unsafe_chunk": ["Tensor input, int chunks, int dim = 0"],
    "median": [
        "Tensor input",
        "Tensor input, int dim, bool keepdim = False, *, tuple of Tensors out = None",
    ],
    "addbmm": [
        "Tensor input, Tensor batch1, Tensor batch2, *, Number beta = 1, Number alpha = 1, "
        "Tensor out = None"
    ],
    "pdist": ["Tensor input, float p = 2"],
    "Tensor.split": [],  # (Python's words: a wrong count of arguments, as torch's)
    "softmax": [f"Tensor input, int dim, {_DTYPE}, {_OUT}"],
    "any": [
        f"Tensor input, {_OUT}",
        f"Tensor input, tuple of ints dim = None, bool keepdim = False, {_OUT}",
        f"Tensor input, int dim, bool keepdim = False, {_OUT}",
    ],
    "reshape": ["Tensor input, tuple of ints shape"],
    "Tensor.view": ["teachgrad.dtype dtype", "tuple of ints size"],
    "permute": ["Tensor input, tuple of ints dims"],
    "transpose": ["Tensor input, int dim0, int dim1"],
    "squeeze": ["Tensor input", "Tensor input, int dim", "Tensor input, tuple of ints dim"],
    "unsqueeze": ["Tensor input, int dim"],
    "flatten": ["Tensor input, int start_dim = 0, int end_dim = -1"],
    "unflatten": ["Tensor input, int dim, tuple of ints sizes"],
    "Tensor.expand": ["tuple of ints size, *, bool implicit = False"],
    "Tensor.repeat": ["tuple of ints repeats"],
    "tile": ["Tensor input, tuple of ints dims"],
    "flip": ["Tensor input, tuple of ints dims"],
    "roll": ["Tensor input, tuple of ints shifts, tuple of ints dims = []"],
    "narrow": [
        "Tensor input, int dim, Tensor start, int length",
        "Tensor input, int dim, int start, int length",
    ],
    "select": ["Tensor input, int dim, int index"],
    "chunk": ["Tensor input, int chunks, int dim = 0"],
    "unbind": ["Tensor input, int dim = 0"],
    "movedim": [
        "Tensor input, int source, int destination",
        "Tensor input, tuple of ints source, tuple of ints destination",
    ],
    "diagonal": ["Tensor input, int offset = 0, int dim1 = 0, int dim2 = 1"],
    "unfold": ["Tensor input, int dimension, int size, int step"],
    "tril": [f"Tensor input, int diagonal = 0, {_OUT}"],
    "round": [f"Tensor input, {_OUT}", "Tensor input, *, int decimals, Tensor out = None"],
    "add": [
        "Tensor input, Tensor other, *, Number alpha = 1, Tensor out = None",
        f"hidden Tensor input, Number alpha, Tensor other, {_OUT}",
    ],
    "mul": [f"Tensor input, Tensor other, {_OUT}"],
    "div": [
        f"Tensor input, Tensor other, {_OUT}",
        "Tensor input, Tensor other, *, str rounding_mode, Tensor out = None",
        "Tensor input, Number other, *, str rounding_mode",
    ],
    "pow": [
        f"Tensor input, Tensor exponent, {_OUT}",
        f"Number self, Tensor exponent, {_OUT}",
        f"Tensor input, Number exponent, {_OUT}",
    ],
    "eq": [f"Tensor input, Tensor other, {_OUT}", f"Tensor input, Number other, {_OUT}"],
    "floor_divide": [f"Tensor input, Tensor other, {_OUT}", "Tensor input, Number other"],
    "logical_and": [f"Tensor input, Tensor other, {_OUT}"],
    "matmul": [f"Tensor input, Tensor other, {_OUT}"],
    "mm": [
        f"Tensor input, Tensor mat2, {_OUT}",
        f"Tensor input, Tensor mat2, teachgrad.dtype out_dtype, {_OUT}",
    ],
    "Tensor.mm": ["Tensor mat2"],
    "mv": [f"Tensor input, Tensor vec, {_OUT}"],
    "dot": [f"Tensor input, Tensor tensor, {_OUT}"],
    "outer": [f"Tensor input, Tensor vec2, {_OUT}"],
    "Tensor.where": ["Tensor condition, Tensor other", "Tensor condition, Number other"],
    "where": [
        "Tensor condition",
        "Tensor condition, Tensor input, Tensor other, *, Tensor out = None",
        "Tensor condition, Number self, Tensor other",
        "Tensor condition, Tensor input, Number other",
        "Tensor condition, Number self, Number other",
    ],
    "masked_fill": [
        "Tensor input, Tensor mask, Tensor value",
        "Tensor input, Tensor mask, Number value",
    ],
    "lerp": [
        f"Tensor input, Tensor end, Tensor weight, {_OUT}",
        f"Tensor input, Tensor end, Number weight, {_OUT}",
    ],
    "addcmul": [
        "Tensor input, Tensor tensor1, Tensor tensor2, *, Number value = 1, Tensor out = None"
    ],
    "clamp": [
        f"Tensor input, Tensor min = None, Tensor max = None, {_OUT}",
        f"Tensor input, Number min = None, Number max = None, {_OUT}",
    ],
    "index_select": [f"Tensor input, int dim, Tensor index, {_OUT}"],
    "gather": [
        "Tensor input, int dim, Tensor index, *, bool sparse_grad = False, Tensor out = None"
    ],
    "scatter": [
        f"Tensor input, int dim, Tensor index, Tensor src, {_OUT}",
        "Tensor input, int dim, Tensor index, Tensor src, *, str reduce, Tensor out = None",
        f"Tensor input, int dim, Tensor index, Number value, {_OUT}",
        "Tensor input, int dim, Tensor index, Number value, *, str reduce, Tensor out = None",
    ],
    "cat": ["tuple of Tensors tensors, int dim = 0, *, Tensor out = None"],
    "index_put": ["Tensor input, tuple of Tensors indices, Tensor values, bool accumulate = False"],
    "Tensor.view_as": ["Tensor other"],
    # (the methods with options only, whose count of arguments torch's parser checks)
    "Tensor.cpu": [f"*, {_FORMAT}"],
    "clone": [f"Tensor input, *, {_FORMAT}"],
    "Tensor.contiguous": ["*, teachgrad.memory_format memory_format = contiguous_format"],
    "Tensor.numpy": ["*, bool force = False"],
    "Tensor.pin_memory": ["teachgrad.device device = None"],
    "Tensor.size": ["int dim = None"],
    "Tensor.stride": ["int dim = None"],
    "Tensor.fill_": ["Tensor value", "Number value"],
    "Tensor.to": [
        f"{first}, bool non_blocking = False, bool copy = False, *, "
        "teachgrad.memory_format memory_format = None"
        for first in (
            "teachgrad.device device = None, teachgrad.dtype dtype = None",
            "teachgrad.dtype dtype",
            "Tensor tensor",
        )
    ],
    # nn.functional's (teachgrad/nn/functional.py): torch's F.linear and F.conv2d are its
    # parser's functions themselves; F.pad hands its arguments on to one, by position
    "linear": ["Tensor input, Tensor weight, Tensor bias = None"],
    "conv2d": [
        f"Tensor input, Tensor weight, Tensor bias = None, tuple of ints stride = 1, {padding}, "
        "tuple of ints dilation = 1, int groups = 1"
        for padding in ("tuple of ints padding = 0", 'str padding = "valid"')
    ],
    "pad": ['Tensor input, tuple of ints pad, str mode = "constant", float? value = None'],
    # F.unfold and F.fold hand their arguments on to these, as pairs, by position
    "im2col": [
        "Tensor input, tuple of ints kernel_size, tuple of ints dilation, "
        "tuple of ints padding, tuple of ints stride"
    ],
    "col2im": [
        "Tensor input, tuple of ints output_size, tuple of ints kernel_size, "
        "tuple of ints dilation, tuple of ints padding, tuple of ints stride"
    ],
}
for _same, _names in {
    "Tensor.cpu": ("Tensor.float", "Tensor.double", "Tensor.half", "Tensor.long", "Tensor.int")
    + ("Tensor.bool", "Tensor.clone"),
    "Tensor.contiguous": ("Tensor.is_contiguous",),
    "Tensor.pin_memory": ("Tensor.is_pinned",),
    "var": ("std",),
    "var_mean": ("std_mean",),
    "softmax": ("log_softmax",),
    "any": ("all",),
    "tril": ("triu",),
    "add": ("sub",),
    "addcmul": ("addcdiv",),
    "eq": ("ne", "lt", "le", "gt", "ge"),  # (remainder and fmod: written above)
    "logical_and": (
        "logical_or",
        "logical_xor",
        "maximum",
        "minimum",
        "nextafter",
        "igamma",
        "igammac",
    ),
    "median": ("nanmedian",),
    "mm": ("bmm",),
    "Tensor.mm": ("Tensor.bmm",),
    "cat": ("stack",),
    "Tensor.view_as": ("Tensor.expand_as", "Tensor.reshape_as", "Tensor.type_as"),
}.items():
    for _name in _names:
        _OPS.setdefault(_name, _OPS[_same])
SIGNATURES.update(_OPS)

# the ops whose Tensor parameters take a Python number too (torch wraps it as a tensor)
_NUMBERS_AS_TENSORS = frozenset(
    [
        "add",
        "sub",
        "mul",
        "div",
        "floor_divide",
        "remainder",
        "fmod",
        "eq",
        "ne",
        "lt",
        "le",
        "gt",
        "ge",
    ]
)

_INT64_MAX = 2**63 - 1


class _Param:
    """One parameter of a signature: ``int n``, ``teachgrad.dtype dtype = None`` ..."""

    def __init__(self, text: str, keyword_only: bool):
        declaration, _, default = text.partition(" = ")
        kind, _, self.name = declaration.rpartition(" ")
        self.kind = kind.removesuffix("?")  # ("?": None is a value too, as torch's "int[1]?")
        self.required = not default
        self.keyword_only = keyword_only
        # dims (not sizes): one int may stand for a tuple of one (x.sum(0)); a convolution's
        # stride, padding and dilation too (torch's int[2]: stride=2 for both dims)
        self.dims = self.kind == "tuple of ints" and self.name in _DIMS
        # None stands for "not given" where torch's parameter is optional
        nullable = kind.endswith("?") or self.kind in ("teachgrad.dtype", "str")
        self.takes_none = default == "None" or nullable


_DIMS = frozenset(("dim", "dims", "shifts", "stride", "padding", "dilation"))


class Signature:
    """One of a function's signatures, read from torch's notation.

    >>> s = Signature("eye", "int n, int m, *, bool requires_grad = False")
    >>> [p.name for p in s.params], s.min_args, s.max_args
    (['n', 'm', 'requires_grad'], 2, 3)
    """

    def __init__(self, fn: str, text: str):
        self.hidden = text.startswith("hidden ")  # (torch accepts it, but does not list it)
        written = text.removeprefix("hidden ")
        self.fn, self.text = fn, written.replace("?", "")  # (torch shows no "?")
        self.params, keyword_only = [], False
        for part in filter(None, written.split(", ")):
            if part == "*":
                keyword_only = True
            else:
                self.params.append(_Param(part, keyword_only))
        self.positional = [p for p in self.params if not p.keyword_only]
        self.names = {p.name: p for p in self.params}
        self.min_args = sum(p.required for p in self.params)
        self.max_args = len(self.params)

    def bind(self, args: tuple, kwargs: dict):
        """``{name: value}`` when the arguments fit this signature, else why not (a string).
        A number of a size that cannot be read raises at once, as in torch."""
        first = self.positional[0] if len(self.positional) == 1 else None
        sizes_only = first and first.kind == "tuple of ints" and first.required  # (not var's dim)
        if sizes_only and args and _is_int(args[0]):  # zeros(2, 3) means zeros((2, 3))
            args = (args,)
        if len(args) > len(self.positional):
            return _too_many(self.fn, self.min_args, len(self.positional), len(args))
        given = [
            (p, v, f" (position {k})") for k, (p, v) in enumerate(zip(self.positional, args), 1)
        ]
        unknown = [name for name in kwargs if name not in self.names]
        given += [(self.names[name], kwargs[name], "") for name in kwargs if name not in unknown]
        given.sort(key=lambda g: self.params.index(g[0]))  # checked in the signature's order
        values = {}
        for param, value, where in given:
            if value is None and param.takes_none:
                values[param.name] = None
                continue
            problem = self._mismatch(param, value)
            if problem:
                return f"{self.fn}(): argument '{param.name}'{where} must be {problem}"
            if param.kind == "tuple of Tensors":  # (its items are checked one by one)
                problem = _not_tensors(value, self.params.index(param))
                if problem:
                    return problem
            values[param.name] = _read(self.fn, param, value)
        if unknown:  # (torch looks at the keywords it does not know last)
            return self._missing(values) or (
                f"{self.fn}() got an unexpected keyword argument '{unknown[0]}'"
            )
        return self._missing(values) or values

    def _mismatch(self, param: _Param, value) -> str:
        """What is wrong with ``value`` for ``param`` ("" if nothing)."""
        if param.dims and _is_int(value):
            return ""
        numbers_too = param.kind == "Tensor" and self.fn.rstrip("_") in _NUMBERS_AS_TENSORS
        if numbers_too and _is_number(value):
            return ""  # x.add(2): torch wraps the number as a tensor
        return _mismatch(param.kind, value)

    def _missing(self, values: dict) -> str:
        """torch's complaint about required parameters without a value ("" if none): it
        names, from the first one missing on, every required one (given or not)."""
        first = next(
            (k for k, p in enumerate(self.params) if p.required and p.name not in values), None
        )
        if first is None:
            return ""
        missing = [p.name for p in self.params[first:] if p.required]
        plural = (
            "s" if len(missing) == 1 else ""
        )  # (torch's words: the plural is the wrong way round)
        names = ", ".join(f'"{name}"' for name in missing)
        return f"{self.fn}() missing {len(missing)} required positional argument{plural}: {names}"


def parse(fn: str, args: tuple, kwargs: dict, method: bool = False) -> dict:
    """The arguments of ``fn`` by name, checked against its signatures as torch checks them.

    ``args`` are the positional arguments, ``kwargs`` the keywords that were given (leave
    out those at their defaults); ``method``: the call was ``tensor.fn(*args)``. The first
    signature that fits wins. Sizes come back as tuples of ints, ints as ints.

    >>> parse("randint", (3, (2,)), {})
    {'high': 3, 'size': (2,)}
    >>> parse("randint", (0, 5.5, (2,)), {})
    Traceback (most recent call last):
    TypeError: randint() received an invalid combination of arguments - got (int, float, tuple), but expected one of:
     * (int high, tuple of ints size, *, Generator generator, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
     * (int high, tuple of ints size, *, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
     * (int low, int high, tuple of ints size, *, Generator generator, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
     * (int low, int high, tuple of ints size, *, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
    <BLANKLINE>
    """
    signatures = _signatures(fn, method)
    problems = []
    for signature in signatures:
        bound = signature.bind(args, kwargs)
        if isinstance(bound, dict):
            return bound
        problems.append(bound)
    count = len(args) + len(kwargs)
    plausible = [
        k for k, s in enumerate(signatures) if not s.hidden and s.min_args <= count <= s.max_args
    ]
    if len(signatures) == 1 or len(plausible) == 1:  # it knows which was meant: say what's wrong
        raise TypeError(problems[plausible[0] if plausible else 0])
    raise invalid_combination(fn, args, kwargs, method)


@functools.cache
def _signatures(fn: str, method: bool = False) -> tuple:
    """``fn``'s signatures, read once; a method's lack the function's ``input`` and ``out``
    (``Tensor.fn`` where torch's method has others), an in-place ``add_`` has ``add``'s."""
    texts = SIGNATURES.get(f"Tensor.{fn}") if method else None
    if texts is None:
        texts = SIGNATURES[fn if fn in SIGNATURES or not fn.endswith("_") else fn[:-1]]
        if method:
            texts = [_method_form(t) for t in texts if "Tensor input" in t.split(", ")[0]]
    return tuple(Signature(fn, text) for text in texts)


def has_signature(fn: str, method: bool = False) -> bool:
    """Whether torch's signatures of ``fn`` (or of the method ``Tensor.fn``) are written here."""
    try:
        return bool(_signatures(fn, method))
    except KeyError:
        return False


def _method_form(text: str) -> str:
    """A function's signature as its Tensor method has it: no ``input``, no ``out``.

    >>> _method_form("Tensor input, int dim, *, Tensor out = None")
    'int dim'
    """
    params = [p for p in text.split(", ")[1:] if not p.endswith(" out = None")]
    if params and params[-1] == "*":
        params.pop()
    return ("hidden " if text.startswith("hidden ") else "") + ", ".join(params)


def refusal(fn: str, args: tuple, kwargs: dict, error: Exception, method: bool = False):
    """What a call of ``fn`` that failed with ``error`` should raise: torch's TypeError when
    its argument parser refuses these arguments, else ``error`` itself (the arguments were
    fine: something else went wrong).

    >>> refusal("transpose", (0.5, 1), {}, ValueError("inside NumPy"), method=True)
    TypeError("transpose(): argument 'dim0' (position 1) must be int, not float")
    >>> refusal("transpose", (0, 5), {}, IndexError("dim 5 is out of range"), method=True)
    IndexError('dim 5 is out of range')
    """
    try:
        parse(fn, args, kwargs, method)
    except TypeError as refused:
        refused.__suppress_context__ = True  # (what NumPy said about them would only confuse)
        return refused
    except Exception:  # the parser cannot read them either (an int beyond int64 ...)
        return error
    return error


def checked(fn, name: str | None = None, method: bool = False, operator: bool = False):
    """``fn`` (torch's op ``name``; a Tensor method if ``method``), refusing bad arguments
    in torch's words. Only a call that failed has its arguments checked (``refusal``): a
    call that works runs ``fn`` and nothing else (a ``try`` costs nothing until an error).
    An ``operator`` (``x @ y``) refused returns ``NotImplemented`` instead, as torch's do:
    Python then tries the other operand, then says "unsupported operand type(s)".

    >>> import teachgrad as tg
    >>> checked(tg.ops.reduce.cumsum)(tg.ones(2), 0.5)
    Traceback (most recent call last):
    TypeError: cumsum(): argument 'dim' (position 2) must be int, not float
    """
    name = name or fn.__name__
    signed = has_signature(name, method)  # (else only a wrong count of arguments is worded)

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            given = args[1:] if method else args
            if signed:
                refused = refusal(name, given, kwargs, error, method)
            else:
                refused = uncallable(name, fn, given, kwargs, error) if method else error
            if operator and refused is not error:
                return NotImplemented
            # (no "from": refusal returns the error itself, or torch's with no NumPy context)
            raise refused  # noqa: B904

    return call


# torch's Tensor methods written in Python, not behind its parser: Python words their
# errors, and names the class ("Tensor.norm() takes from 1 to 5 positional arguments ...")
_PYTHON_METHODS = frozenset(("norm", "split", "unflatten"))
# torch's functions written in Python: Python words their count of arguments, and the ops
# they call the types (teachgrad's functions of these names do the same themselves)
PYTHON_FUNCTIONS = frozenset(("norm", "split", "einsum"))


def no_arguments(name: str, args: tuple, kwargs: dict) -> TypeError:
    """torch's refusal of arguments to a method that takes none (``x.exp(1)``): Python's
    words for a method written in C, which torch's are (on its base class, ``TensorBase``).

    >>> no_arguments("exp", (1,), {})
    TypeError('TensorBase.exp() takes no arguments (1 given)')
    """
    if kwargs:  # (Python looks at the keywords first)
        refused = TypeError(f"TensorBase.{name}() takes no keyword arguments")
    else:
        refused = TypeError(f"TensorBase.{name}() takes no arguments ({len(args)} given)")
    refused.__suppress_context__ = True  # (teachgrad's own wording would only confuse)
    return refused


def uncallable(name: str, method, args: tuple, kwargs: dict, error: Exception) -> Exception:
    """What the call ``tensor.name(*args, **kwargs)`` of ``method`` that failed with ``error``
    should raise, for a method whose signatures are not written here: torch's TypeError when
    Python could not even call it (too many arguments, an unknown keyword), else ``error``.
    A method that takes only ``self`` is one of torch's C methods (``no_arguments``).

    >>> import teachgrad as tg
    >>> uncallable("t", tg.Tensor.t, (0,), {}, TypeError("t() takes 1 positional argument"))
    TypeError('TensorBase.t() takes no arguments (1 given)')
    """
    signature = inspect.signature(method)  # (follows __wrapped__ to the op it calls)
    try:
        signature.bind(None, *args, **kwargs)
    except TypeError:
        if len(signature.parameters) == 1:
            return no_arguments(name, args, kwargs)
        if name in _PYTHON_METHODS:
            return TypeError(f"Tensor.{name}(){str(error).partition('()')[2]}")
    return error


def invalid_combination(fn: str, args: tuple, kwargs: dict, method: bool = False) -> TypeError:
    """torch's refusal when no signature of ``fn`` fits and it can't tell which was meant:
    the types it got, and every signature it has.

    >>> print(invalid_combination("eye", (2, 2.5), {}))
    eye() received an invalid combination of arguments - got (int, float), but expected one of:
     * (int n, *, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
     * (int n, int m, *, teachgrad.dtype dtype = None, teachgrad.device device = None, bool requires_grad = False)
    <BLANKLINE>
    """
    got = ", ".join(
        [type_name(a) for a in args] + [f"{k}={type_name(v)}" for k, v in kwargs.items()]
    )
    if kwargs and not args:
        got += ", "  # (torch's own spacing)
    listed = [s.text for s in _signatures(fn, method) if not s.hidden]
    start = f"{fn}() received an invalid combination of arguments - got"
    if len(listed) == 1:
        why = _why_not(listed[0], args, kwargs)
        if why.startswith("some of the keywords"):
            return TypeError(f"{start} unrecognized keyword arguments: {why.partition(': ')[2]}")
        got = why.partition(": ")[2][1:-1] if why else got  # (the wrong ones marked, then)
        return TypeError(f"{start} ({got}), but expected ({listed[0]})")
    expected = "one of:\n"
    for text in listed:
        why = _why_not(text, args, kwargs)
        expected += f" * ({text})\n" + (f"      didn't match because {why}\n" if why else "")
    return TypeError(f"{start} ({got}), but expected {expected}")


def _why_not(text: str, args: tuple, kwargs: dict) -> str:
    """torch's note under a listed signature (``text``) that has as many parameters as
    arguments were given: the keywords it does not know, or every argument, the ones of the
    wrong type between "!". "" for the others.

    torch's note reads the signature's words simply: a parameter's name is its last word, and
    its type the words before, so one with a default ("bool keepdim = False", named "False")
    is matched by no argument and no keyword, and "*" counts as a parameter.

    >>> _why_not("int dim, bool keepdim = False", (0, True), {})
    'some of the arguments have invalid types: (int, !bool!)'
    """
    params = [part.rpartition(" ") for part in text.split(", ")]  # (type, " ", name)
    if len(params) != len(args) + len(kwargs):
        return ""
    known = {name for _, _, name in params[len(params) - len(kwargs) :]}
    unknown = [k for k in kwargs if k not in known]
    if unknown:
        return "some of the keywords were incorrect: " + ", ".join(unknown)
    described = []
    for k, value in enumerate(args + tuple(kwargs[name] for _, _, name in params[len(args) :])):
        kind, _, name = params[k]
        fits = type_name(value) in {"int": ("int",), "float": ("float", "int")}.get(kind, (kind,))
        mark = "" if fits else "!"
        keyword = f"{name}=" if k >= len(args) else ""
        described.append(f"{mark}{keyword}{_described(value)}{mark}")
    return f"some of the arguments have invalid types: ({', '.join(described)})"


def _described(value) -> str:
    """An argument as torch's note names it: its type; a tuple's or a list's with its items'."""
    if isinstance(value, tuple):
        items = ", ".join(type_name(v) for v in value)
        return f"tuple of ({items}{',' if len(value) == 1 else ''})"
    if isinstance(value, list):
        return f"list of [{', '.join(type_name(v) for v in value)}]"
    return type_name(value)


def given(**options) -> dict:
    """The keyword arguments that are not at their defaults (None, False): the ones given.

    >>> given(dtype=None, device="cpu", requires_grad=False)
    {'device': 'cpu'}
    """
    return {k: v for k, v in options.items() if v is not None and v is not False}


# --------------------------------------------------------------------------- the types


def _is_int(value) -> bool:
    """An int as torch reads one: Python's and NumPy's ints, a one-element integer tensor;
    not a bool, not a float."""
    if isinstance(value, bool | float):
        return False
    try:
        operator.index(value)
    except TypeError:
        return False
    return True


def _is_number(value) -> bool:
    if isinstance(value, Tensor):  # torch reads a 0-d tensor as its number, unless it has history
        return value.ndim == 0 and not value.requires_grad
    return (
        isinstance(value, int | float)
        or type(value).__module__ == "numpy"
        and not (hasattr(value, "shape") and value.shape)
    )


_FITS = {
    "int": _is_int,
    "Number": _is_number,
    "float": _is_number,
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "object": lambda v: True,
    "Tensor": lambda v: isinstance(v, Tensor),
    "tuple of Tensors": lambda v: isinstance(v, tuple | list),  # (its items: the op says)
    "Generator": lambda v: v is None,  # teachgrad has no generator objects: only the default
    "teachgrad.dtype": lambda v: v is None or isinstance(v, dtype) or v in (float, int, bool),
    "teachgrad.device": lambda v: v is None or isinstance(v, device | str) or _is_int(v),
    "teachgrad.memory_format": lambda v: isinstance(v, memory_format),
}


def _not_tensors(values, argument: int) -> str:
    """torch's complaint about the first item of ``values`` that is not a tensor ("" if none);
    ``argument`` counts from 0, without the tensor of a method.

    >>> _not_tensors((Tensor.__new__(Tensor), 1), 0)
    'expected Tensor as element 1 in argument 0, but got int'
    """
    for k, value in enumerate(values):
        if not isinstance(value, Tensor):
            return (
                f"expected Tensor as element {k} in argument {argument}, but got {type_name(value)}"
            )
    return ""


def _mismatch(kind: str, value) -> str:
    """What is wrong with ``value`` as a ``kind`` ("" when nothing): "int, not float"."""
    if kind == "tuple of ints":
        if not isinstance(value, tuple | list):
            return f"{kind}, not {type_name(value)}"
        if value and not _is_int(value[0]):  # torch looks at the first number only, here
            return f"{kind}, but found element of type {type_name(value[0])} at pos 0"
        return ""
    return "" if _FITS[kind](value) else f"{kind}, not {type_name(value)}"


def _read(fn: str, param: _Param, value):
    """``value`` as the parameter wants it: a size as a tuple of ints, an int as an int."""
    if param.kind == "tuple of ints":
        if _is_int(value):  # one dim alone: x.sum(0) as x.sum((0,))
            return (operator.index(value),)
        return tuple(_size_number(fn, param.name, v, pos) for pos, v in enumerate(value, start=1))
    if param.kind == "int":
        return _int64(operator.index(value))
    return value


def _size_number(fn: str, name: str, value, pos: int) -> int:
    """One number of a size, read as torch reads it (a failure raises at once; after the
    first number, which must be an int, a bool reads as 0 or 1)."""
    if not (_is_int(value) or isinstance(value, bool)):
        problem = f'type must be tuple of ints,but got {type_name(value)}"'
    elif not -_INT64_MAX - 1 <= operator.index(value) <= _INT64_MAX:
        problem = "Overflow when unpacking long long"
    else:
        return operator.index(value)
    raise TypeError(
        f"{fn}(): argument '{name}' failed to unpack the object at pos {pos} with error "
        f'"{problem}\n  (a size is a tuple of ints, each within int64)'
    )


def _int64(value: int) -> int:
    """``value`` if it fits in an int64 (torch keeps its ints there), else torch's error."""
    if not -_INT64_MAX - 1 <= value <= _INT64_MAX:
        raise ValueError("Overflow when unpacking long long")
    return value


def _too_many(fn: str, least: int, allowed: int, given: int) -> str:
    """torch's words for more positional arguments than a signature has (``least``: how
    many it requires, keywords included, which torch counts as the lower end)."""
    if least != allowed:
        return f"{fn}() takes from {least} to {allowed} positional arguments but {given} were given"
    plural = "" if allowed == 1 else "s"
    verb = "was" if given == 1 else "were"
    return f"{fn}() takes {allowed} positional argument{plural} but {given} {verb} given"

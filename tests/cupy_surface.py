"""What real CuPy offers: does a dotted name exist, and which keywords does it take.

Used by tests/teachgrad/test_cupy_surface.py with the installed ``cupy`` (the CUDA 12 wheel
imports without a GPU). CuPy's functions are partly Python (``inspect.signature`` reads
them), partly Cython (the signature is the first line of the docstring) and partly
ufuncs (which take only ``out``, ``dtype`` and ``casting``).
"""

from __future__ import annotations

import inspect

UFUNC_KEYWORDS = frozenset({"out", "dtype", "casting"})


def resolve(cupy, dotted: str):
    """``cupy.<dotted>``, or None when CuPy has no such name."""
    obj = cupy
    for part in dotted.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def keywords(obj) -> frozenset | None:
    """The keyword names ``obj`` accepts; None when it accepts any (``**kwargs``)."""
    if type(obj).__name__ == "ufunc":
        return UFUNC_KEYWORDS
    try:
        params = inspect.signature(obj).parameters.values()
    except (TypeError, ValueError):
        return _docstring_keywords(obj)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.VAR_POSITIONAL)
    return frozenset(p.name for p in params if p.kind not in positional) - {"self"}


def _docstring_keywords(obj) -> frozenset | None:
    """The parameters in a Cython docstring's first line, ``astype(self, dtype, order='K')``
    or ``getDeviceProperties(int device)`` (C types before the names)."""
    first = (obj.__doc__ or "").strip().splitlines()[0]
    names, depth, current = [], 0, ""
    for char in first[first.index("(") :]:
        depth += (char in "([{") - (char in ")]}")
        if depth == 0 or (depth == 1 and char == ","):  # an argument ends
            names.append(current.split("=")[0].split())
            current = ""
            if depth == 0:
                break
        elif depth >= 1 and not (depth == 1 and char == "("):
            current += char
    if any(n and n[-1].startswith("**") for n in names):
        return None
    return frozenset(n[-1] for n in names if n and not n[-1].startswith("*")) - {"self"}

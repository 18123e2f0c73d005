"""Names from the learner's code: a tensor without ``name=`` is drawn under the name of
the variable that holds it.

A picture that says ``leaf``, ``output`` and ``AccumulateGrad into leaf.grad`` makes the
learner match boxes to code by shape. So ``draw()``, ``text()``, ``GraphView`` and the
stepper look in the namespace of the code that called them (a notebook's globals, or
the locals and globals of the calling function; locals win) and name each tensor after
a variable that holds it, and each parameter of a module held in a variable by its
path (``0.weight``, as ``named_parameters()`` says). Explicit names still win
(``t.name``, then ``params=``); a tensor no variable holds stays anonymous. Names that
start with ``_`` are skipped (IPython's ``_``, ``_3``, private helpers).

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> h = x.exp()
    >>> sorted(names_in({"x": x, "h": h, "_": h, "n": 3}))
    ['h', 'x']
"""

from __future__ import annotations

import sys

from teachgrad import Tensor
from teachgrad.nn import Module


def names_in(*namespaces: dict) -> dict:
    """``name -> tensor`` for the tensors (and modules' parameters) in ``namespaces``; a
    tensor held under several names keeps the first found, earlier namespaces first."""
    found, seen = {}, set()

    def add(name: str, t: Tensor) -> None:
        if id(t) not in seen:
            seen.add(id(t))
            found[name] = t

    for namespace in namespaces:
        for name, value in list(namespace.items()):
            if name.startswith("_"):
                continue
            if isinstance(value, Tensor):
                add(name, value)
            elif isinstance(value, Module):
                for path, parameter in value.named_parameters():
                    add(path, parameter)
    return found


def caller_namespaces() -> tuple:
    """(locals, globals) of the nearest caller outside viz: the learner's code."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").split(".")[0] == "viz":
        frame = frame.f_back
    if frame is None:
        return ({},)
    if frame.f_locals is frame.f_globals:  # a notebook cell or a module's top level
        return (frame.f_globals,)
    return (dict(frame.f_locals), frame.f_globals)


def learner_names(params=None, namespaces=None) -> dict:
    """``params`` (a Module or a dict name -> tensor) completed with the names of the
    caller's variables: the ``params=`` a snapshot takes. ``params`` wins over variables.

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> names = learner_names({"weight": w})
    >>> names["weight"] is w, "w" in names
    (True, False)
    """
    named = names_in(*(caller_namespaces() if namespaces is None else namespaces))
    if params is not None:
        explicit = (
            dict(params.named_parameters()) if hasattr(params, "named_parameters") else params
        )
        taken = {id(t) for t in explicit.values()}
        named = {name: t for name, t in named.items() if id(t) not in taken}
        named.update(explicit)
    return named

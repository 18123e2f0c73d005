"""Anomaly detection: from a failing backward back to the forward line that caused it.

When backward fails (or produces NaN), the error is raised deep in the engine, in
a node like ``MulBackward0`` — but the bug is in *your* forward code. With anomaly
detection on, every node remembers the stack of the forward call that created it,
and when its backward fails a warning shows that stack ("Traceback of forward call
that caused the error"), pointing at your line (in a notebook: the cell and line).
With ``check_nan`` a node whose backward returns NaN raises at once.

It is built on the event stream (``graph.add_listener``): off, it costs nothing.

    >>> import teachgrad as tg
    >>> x = tg.tensor([0.0, 1.0], requires_grad=True)
    >>> with tg.autograd.detect_anomaly():  # doctest: +SKIP
    ...     (x.sqrt() * 0).sum().backward()      # 0 * inf = nan in SqrtBackward0
    RuntimeError: Function 'SqrtBackward0' returned nan values in its 0th output.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback
import warnings

from .. import _events
from .._backend import array_module
from .grad_mode import _DecoratorContextManager

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # teachgrad/
_NOT_YOURS = tuple(
    {_PACKAGE, *(sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib"))}
)


class _State:
    enabled = False
    check_nan = True
    listening = None
    first_bad_op = None  # the first forward op whose output had nan/inf (reported once)
    running = []  # the nodes whose backward runs now, the innermost last (see _on_event)


state = _State()


def is_anomaly_enabled() -> bool:
    """Whether anomaly detection is on.

    >>> import teachgrad as tg
    >>> tg.autograd.is_anomaly_enabled()
    False
    """
    return state.enabled


def is_anomaly_check_nan_enabled() -> bool:
    """Whether anomaly detection also checks backward results for NaN.

    >>> import teachgrad as tg
    >>> tg.autograd.is_anomaly_check_nan_enabled()
    True
    """
    return state.check_nan


def _set(mode: bool, check_nan: bool) -> None:
    state.enabled, state.check_nan = bool(mode), bool(check_nan)
    if mode and state.listening is None:
        state.listening = _events.add_listener(_on_event)
    elif not mode and state.listening is not None:
        state.listening.remove()
        state.listening = None
        state.running.clear()  # (a backward left running has no node to follow any more)


class detect_anomaly(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Context manager (and decorator) turning anomaly detection on for a block.

    >>> import teachgrad as tg, warnings
    >>> warnings.simplefilter("ignore")  # (it warns that it slows things down)
    >>> with tg.autograd.detect_anomaly():
    ...     tg.autograd.is_anomaly_enabled()
    True
    """

    def __init__(self, check_nan: bool = True):
        self.check_nan = check_nan
        warnings.warn(
            "Anomaly Detection has been enabled. This mode will increase the runtime and should "
            "only be enabled for debugging.",
            UserWarning,
            stacklevel=2,
        )

    def __enter__(self) -> None:
        self.previous = (state.enabled, state.check_nan)
        state.first_bad_op = None
        _set(True, self.check_nan)

    def __exit__(self, *exc) -> None:
        _set(*self.previous)

    def clone(self):
        with warnings.catch_warnings():  # (the decorator makes one per call: warn once)
            warnings.simplefilter("ignore")
            return self.__class__(self.check_nan)


class set_detect_anomaly(_DecoratorContextManager):  # noqa: N801 - torch's name
    """Turn anomaly detection on or off: right away as a function, or for a block.

    >>> import teachgrad as tg
    >>> _ = tg.autograd.set_detect_anomaly(True); tg.autograd.is_anomaly_enabled()
    True
    >>> _ = tg.autograd.set_detect_anomaly(False); tg.autograd.is_anomaly_enabled()
    False
    """

    def __init__(self, mode: bool, check_nan: bool = True):
        self.mode, self.check_nan = mode, check_nan
        self.previous = (state.enabled, state.check_nan)
        _set(mode, check_nan)

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc) -> None:
        _set(*self.previous)

    def clone(self):
        return self.__class__(self.mode, self.check_nan)


# --------------------------------------------------------------------------- what it does


def _on_event(event) -> None:
    """Record each op's forward stack, and the node whose backward recorded it (its parent:
    an op recorded by a backward, for double backward); check results for NaN."""
    if isinstance(event, _events.OpRecorded):
        event.node.__dict__["_forward_stack"] = _user_stack()
        if state.running:
            event.node.__dict__["_anomaly_parent"] = state.running[-1]
        if state.check_nan and state.first_bad_op is None:
            _check_forward(event.node, event.outputs)
    elif isinstance(event, _events.NodeStarted):
        state.running.append(event.node)
    elif isinstance(event, _events.NodeFinished):
        _done(event.node)
    if isinstance(event, _events.NodeFinished) and state.check_nan:
        for i, g in enumerate(event.grad_inputs):
            if (
                g is not None
                and g._data.dtype.kind == "f"
                and bool(array_module(g._data).isnan(g._data).any())
            ):
                node = event.node
                message = f"Function '{node.name()}' returned nan values in its {i}th output."
                node.__dict__["_anomaly"] = message  # a snapshot marks the node
                raise RuntimeError(message)


def _check_forward(node, outputs) -> None:
    """Beyond torch: name the first forward op whose result holds nan or inf, at your line
    (torch only notices in backward, far from where the values went bad)."""
    for i, out in enumerate(outputs):
        data = getattr(out, "_data", None)
        if data is None or data.dtype.kind != "f" or bool(array_module(data).isfinite(data).all()):
            continue
        state.first_bad_op = node
        message = f"forward: its output {i} has nan/inf values"
        node.__dict__["_anomaly"] = message
        where = "".join(_format(frame) for frame in node.__dict__["_forward_stack"])
        warnings.warn(
            f"Anomaly detection: {node.name()}'s forward op is the first to produce nan or inf "
            f"values (output {i}). It was called here:\n{where}",
            RuntimeWarning,
            stacklevel=_outside_teachgrad(),
        )
        return


def _done(node) -> None:
    """``node``'s backward has ended (or failed): it is no longer the one running."""
    if state.running and state.running[-1] is node:
        state.running.pop()


def report(node, error: BaseException) -> None:
    """Called by the engine when ``node``'s backward failed: warn with its forward stack, then
    with that of each node whose backward recorded the one before (torch's "parents")."""
    _done(node)
    if not state.enabled:
        return
    node.__dict__.setdefault("_anomaly", f"{type(error).__name__}: {error}")
    _warn(_stack_message(node, node.__dict__.get("_forward_stack"), parent=False))
    parent = node.__dict__.get("_anomaly_parent")
    while parent is not None:
        _warn(_stack_message(parent, parent.__dict__.get("_forward_stack"), parent=True))
        parent = parent.__dict__.get("_anomaly_parent")


def _stack_message(node, stack, parent: bool) -> str:
    if stack is None:  # torch's words, then why
        return (
            f"Error detected in {node.name()}. No forward pass information available. Enable "
            "detect anomaly during forward pass for more information.\n  (The node was created "
            "before anomaly detection was on, so its forward traceback was not recorded.)"
        )
    where = "".join(_format(frame) for frame in stack)
    if parent:
        return (
            f"\n\nPrevious calculation was induced by {node.name()}. Traceback of forward call "
            f"that induced the previous calculation:\n{where}"
        )
    return f"Error detected in {node.name()}. Traceback of forward call that caused the error:\n{where}"


def _warn(message: str) -> None:
    try:
        warnings.warn(message, UserWarning, stacklevel=_outside_teachgrad())
    except UserWarning:  # warnings are errors: print it and let the engine raise the real one
        print(f"UserWarning: {message}", file=sys.stderr)


def _outside_teachgrad() -> int:
    """The warnings stacklevel of the first caller outside teachgrad (your backward() line)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level, frame = level + 1, frame.f_back
    return level


def _user_stack() -> list:
    """The current stack without teachgrad's frames and those of Python and the installed
    packages (Jupyter's kernel, asyncio ...): they are not where the bug is."""
    return [f for f in traceback.extract_stack()[:-1] if not f.filename.startswith(_NOT_YOURS)]


def _format(frame) -> str:
    """One frame as Python prints it; a notebook cell as IPython names it ("Cell In[3]")."""
    cell = _notebook_cell(frame.filename)
    where = (
        f"{cell}, line {frame.lineno}" if cell else f'File "{frame.filename}", line {frame.lineno}'
    )
    code = f"\n    {frame.line}" if frame.line else ""
    return f"  {where}, in {frame.name}{code}\n"


def _notebook_cell(filename: str) -> str | None:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    numbers = getattr(getattr(shell, "compile", None), "_filename_map", {}) if shell else {}
    number = numbers.get(filename)
    return None if number is None else f"Cell In[{number}]"

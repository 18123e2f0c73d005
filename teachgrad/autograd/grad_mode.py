"""Grad mode: whether ops record themselves on the tape.

``no_grad``, ``enable_grad``, ``set_grad_enabled`` and ``inference_mode`` switch a
thread-local flag that ``Function.apply`` reads once per op. Each works as a
context manager and as a decorator, like torch's.

    >>> import teachgrad as tg
    >>> x = tg.ones(2, requires_grad=True)
    >>> with tg.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
"""

from __future__ import annotations

import functools
import inspect
import warnings

from .._grad_state import state  # noqa: E402 - the flags live below Tensor
from .._tensor import check_bool


def is_grad_enabled() -> bool:
    """True when grad mode is on: new ops are recorded for backward (but not inside
    ``inference_mode``, where ``enable_grad`` turns grad mode on and nothing is recorded,
    as in torch).

    >>> import teachgrad as tg
    >>> tg.is_grad_enabled()
    True
    """
    return state.enabled or state.grad_in_inference


def _set_grad_mode(mode: bool) -> tuple:
    """Switch grad mode on or off; returns the flags that switch it back (``_restore``).

    torch's inference mode turns autograd off below grad mode: ``enable_grad`` inside it
    says grad mode is on, yet records nothing, and what ops make are inference tensors.
    """
    previous = (state.enabled, state.grad_in_inference)
    state.enabled = mode and not state.inference
    state.grad_in_inference = mode and state.inference
    return previous


def _restore(previous) -> None:
    state.enabled, state.grad_in_inference = previous


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``.

    >>> import teachgrad as tg
    >>> with tg.inference_mode():
    ...     tg.is_inference_mode_enabled()
    True
    """
    return state.inference


def is_inference(tensor) -> bool:
    """True for a tensor made inside ``inference_mode()`` (``tensor.is_inference()``).

    >>> import teachgrad as tg
    >>> with tg.inference_mode():
    ...     x = tg.ones(2)
    >>> tg.is_inference(x), tg.is_inference(tg.ones(2))
    (True, False)
    """
    return tensor.is_inference()


_CLASS_DECORATED = (
    "Decorating classes is deprecated and will be disabled in future versions. You should only "
    "decorate functions or methods. To preserve the current behavior of class decoration, you "
    "can directly decorate the `__init__` method and nothing else."
)


class _DecoratorContextManager:
    """Lets a context manager also decorate functions and generator functions.

    A decorated function runs inside a fresh copy of the manager (``clone()``). A decorated
    generator function is wrapped by ``_wrap_generator``. A decorated class still works, as
    in torch, but warns: it is the class's construction that runs inside the mode.
    """

    def __call__(self, func):
        if inspect.isclass(func):
            warnings.warn(_CLASS_DECORATED, FutureWarning, stacklevel=2)
            cls = func
            func = lambda *args, **kwargs: cls(*args, **kwargs)  # the construction, in the mode
        if inspect.isgeneratorfunction(func):
            return _wrap_generator(self.clone, func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


def _wrap_generator(make_context, func):
    """``func``'s generators, each step run inside a fresh ``make_context()``.

    A generator is paused at each ``yield``, and its caller's code runs in between, so the
    mode is switched on only while the generator itself runs. What the caller does to the
    wrapper reaches the wrapped generator, inside the mode: ``send(value)`` resumes it with
    ``value``, ``throw(error)`` raises ``error`` at its ``yield``, ``close()`` closes it.

    >>> import teachgrad as tg
    >>> @tg.no_grad()
    ... def echo():
    ...     received = yield tg.is_grad_enabled()
    ...     yield received
    >>> steps = echo(); next(steps), steps.send("hi"), tg.is_grad_enabled()
    (False, 'hi', True)
    """

    @functools.wraps(func)
    def generator(*args, **kwargs):
        inner = func(*args, **kwargs)
        step, value = inner.send, None  # the first step: send(None) starts it
        while True:
            try:
                with make_context():
                    out = step(value)
            except StopIteration as done:
                return done.value
            try:
                value = yield out
                step = inner.send
            except GeneratorExit:  # our caller closed us: close the wrapped one too
                with make_context():
                    inner.close()
                raise
            except BaseException as error:  # thrown in by our caller: pass it on
                step, value = inner.throw, error

    return generator


class _NoArgs(_DecoratorContextManager):
    """Also usable as a bare decorator: ``@no_grad`` as well as ``@no_grad()``."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        return cls()(orig_func)


class no_grad(_NoArgs):
    """Turn recording off: results of ops do not require grad.

    >>> import teachgrad as tg
    >>> @tg.no_grad()
    ... def double(x):
    ...     return x * 2
    >>> double(tg.ones(1, requires_grad=True)).requires_grad
    False
    """

    def __enter__(self):
        self.prev = _set_grad_mode(False)

    def __exit__(self, *exc):
        _restore(self.prev)
        return False


class enable_grad(_NoArgs):
    """Turn recording back on, e.g. inside ``no_grad``.

    >>> import teachgrad as tg
    >>> with tg.no_grad(), tg.enable_grad():
    ...     (tg.ones(1, requires_grad=True) * 2).requires_grad
    True
    """

    def __enter__(self):
        self.prev = _set_grad_mode(True)

    def __exit__(self, *exc):
        _restore(self.prev)
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set recording on or off; works as a plain call, a context manager, a decorator.

    >>> import teachgrad as tg
    >>> with tg.set_grad_enabled(False):
    ...     tg.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        check_bool("set_grad_enabled", "enabled", mode, 1)
        self.mode = mode
        self.prev = _set_grad_mode(mode)  # takes effect at the call, as torch's does

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _restore(self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        _restore(self.prev)  # used as a decorator: only switch while func runs
        return super().__call__(func)


class _SetAtTheCall(_DecoratorContextManager):
    """A flag of this thread (``state.<flag>``) set the moment the call is made, as torch's
    ``set_multithreading_enabled`` and ``_force_original_view_tracking`` set theirs: a plain
    call sets it for good, a ``with`` block gives the old value back at its end, a decorated
    function runs with it. ``checked_as``: the name torch's TypeError gives the setter."""

    flag = checked_as = ""

    def __init__(self, mode: bool):
        check_bool(self.checked_as, "enabled", mode, 1)
        self.mode, self.prev = mode, getattr(state, self.flag)
        setattr(state, self.flag, mode)  # takes effect at the call, as torch's does

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        setattr(state, self.flag, self.prev)
        return False

    def clone(self):
        return self.__class__(self.mode)


class set_multithreading_enabled(_SetAtTheCall):  # noqa: N801 - torch's name
    """Let backward run on per-device worker threads (True, the default) or only on the
    calling thread (False); a plain call, a context manager or a decorator, for this thread.
    teachgrad's backward always runs on the calling thread, so the setting is kept (for
    ``is_multithreading_enabled``) and changes nothing.

    >>> import teachgrad as tg
    >>> with tg.autograd.set_multithreading_enabled(False):
    ...     tg.autograd.is_multithreading_enabled()
    False
    """

    flag, checked_as = "multithreading", "set_multithreading_enabled"


def is_multithreading_enabled() -> bool:
    """Whether ``set_multithreading_enabled`` allows worker threads in backward (True by
    default).

    >>> import teachgrad as tg
    >>> tg.autograd.is_multithreading_enabled()
    True
    """
    return state.multithreading


class _force_original_view_tracking(_SetAtTheCall):  # noqa: N801 - torch's name
    """Whether a view changed in place through its base (or another view) gets its new
    history by replaying the chain of view ops that made it (True) or by one ``as_strided``
    of the base's new history (False, the default); a plain call, a context manager or a
    decorator, for this thread. teachgrad keeps no chain of view ops, so it always does the
    second: the setting is kept (for ``is_view_replay_enabled``), and with True a view's new
    node is ``AsStridedBackward0`` where torch's is the replayed op's (``ViewBackward0``),
    with the same gradients (docs/differences-from-torch.md). torch's own autograd tests
    switch it off after each test.

    >>> import teachgrad as tg
    >>> with tg.autograd._force_original_view_tracking(True):
    ...     tg.autograd.is_view_replay_enabled()
    True
    >>> tg.autograd.is_view_replay_enabled()
    False
    """

    flag, checked_as = "view_replay", "set_view_replay_enabled"

    def __call__(self, func):
        state.view_replay = self.prev  # (a decorator: the mode is for the calls, not from now)
        return super().__call__(func)

    def __enter__(self):
        state.view_replay = self.mode


def is_view_replay_enabled() -> bool:
    """Whether ``_force_original_view_tracking`` asks for view replay (False by default).

    >>> import teachgrad as tg
    >>> tg.autograd.is_view_replay_enabled()
    False
    """
    return state.view_replay


class inference_mode(_DecoratorContextManager):
    """Like ``no_grad``, and tensors made inside are *inference tensors* that can never
    be saved for backward later.

    >>> import teachgrad as tg
    >>> with tg.inference_mode():
    ...     y = tg.ones(2) * 2
    >>> y.is_inference()
    True
    """

    def __new__(cls, mode=True):
        # torch reads anything but a bool as the function to decorate (bare @inference_mode):
        # so inference_mode("a") is a wrapper of "a", and ``with`` refuses it (a TypeError)
        if not isinstance(mode, bool):
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (state.enabled, state.inference, state.grad_in_inference)
        # inference_mode(False) leaves inference mode and turns grad back on, as torch's does
        state.enabled, state.inference, state.grad_in_inference = not self.mode, self.mode, False

    def __exit__(self, *exc):
        state.enabled, state.inference, state.grad_in_inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)

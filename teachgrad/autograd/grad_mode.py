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

from .._grad_state import state  # noqa: E402 - the flags live below Tensor


def is_grad_enabled() -> bool:
    """True when new ops are recorded for backward.

    >>> import teachgrad as tg
    >>> tg.is_grad_enabled()
    True
    """
    return state.enabled


def is_inference_mode_enabled() -> bool:
    """True inside ``inference_mode()``.

    >>> import teachgrad as tg
    >>> with tg.inference_mode():
    ...     tg.is_inference_mode_enabled()
    True
    """
    return state.inference


class _DecoratorContextManager:
    """Lets a context manager also decorate functions (and generators)."""

    def __call__(self, func):
        if inspect.isclass(func):
            raise TypeError("decorate functions, not classes, with a grad mode")
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def generator(*args, **kwargs):
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        response = gen.send(None)
                except StopIteration as done:
                    return done.value
                while True:
                    try:
                        request = yield response
                    except GeneratorExit:
                        gen.close()
                        raise
                    try:
                        with self.clone():
                            response = gen.send(request)
                    except StopIteration as done:
                        return done.value

            return generator

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


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
        self.prev = state.enabled
        state.enabled = False

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class enable_grad(_NoArgs):
    """Turn recording back on, e.g. inside ``no_grad``.

    >>> import teachgrad as tg
    >>> with tg.no_grad(), tg.enable_grad():
    ...     (tg.ones(1, requires_grad=True) * 2).requires_grad
    True
    """

    def __enter__(self):
        self.prev = state.enabled
        state.enabled = True

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False


class set_grad_enabled(_DecoratorContextManager):
    """Set recording on or off; works as a plain call, a context manager, a decorator.

    >>> import teachgrad as tg
    >>> with tg.set_grad_enabled(False):
    ...     tg.is_grad_enabled()
    False
    """

    def __init__(self, mode: bool):
        self.prev = state.enabled
        self.mode = bool(mode)
        state.enabled = self.mode  # takes effect at the call, as torch's does

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        state.enabled = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        state.enabled = self.prev  # used as a decorator: only switch while func runs
        return super().__call__(func)


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
        if callable(mode):  # bare @inference_mode
            return cls(True)(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True):
        self.mode = bool(mode)

    def __enter__(self):
        self.prev = (state.enabled, state.inference)
        # inference_mode(False) leaves inference mode and turns grad back on, as torch's does
        state.enabled, state.inference = not self.mode, self.mode

    def __exit__(self, *exc):
        state.enabled, state.inference = self.prev
        return False

    def clone(self):
        return self.__class__(self.mode)

    def __call__(self, func):
        if isinstance(func, bool):  # @inference_mode(False) after @inference_mode
            return self.__class__(func)
        return super().__call__(func)

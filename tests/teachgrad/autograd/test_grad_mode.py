"""Grad modes (API.md section 3): no_grad, enable_grad, set_grad_enabled and
inference_mode as context managers, decorators (also of generators) and, for
set_grad_enabled, a plain call; inference tensors; thread-locality.
"""

import contextlib
import threading
import warnings

import pytest

import teachgrad as tg


@pytest.fixture(autouse=True)
def grad_mode_is_restored():
    """Every test starts and ends with grad mode on and inference mode off."""
    assert tg.is_grad_enabled() and not tg.is_inference_mode_enabled()
    yield
    enabled, inference = tg.is_grad_enabled(), tg.is_inference_mode_enabled()
    tg.set_grad_enabled(True)
    assert enabled and not inference, "the test left a grad mode switched"


def _records(x):
    return (x * 2).requires_grad


# =============================================================================== context managers


def test_no_grad_stops_recording():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2
    assert (y.requires_grad, y.grad_fn, y.is_leaf) == (False, None, True)
    assert tg.is_grad_enabled()


def test_enable_grad_inside_no_grad():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        with tg.enable_grad():
            assert tg.is_grad_enabled() and _records(x)
        assert not tg.is_grad_enabled() and not _records(x)


@pytest.mark.parametrize("mode", [True, False])
def test_set_grad_enabled_as_context_manager(mode):
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad(), tg.set_grad_enabled(mode):
        assert tg.is_grad_enabled() is mode
        assert _records(x) is mode
    assert tg.is_grad_enabled()


def test_nested_set_grad_enabled_restores_each_level():
    with tg.set_grad_enabled(False):
        with tg.set_grad_enabled(True):
            assert tg.is_grad_enabled()
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_as_a_plain_call():
    tg.set_grad_enabled(False)
    assert not tg.is_grad_enabled()
    assert not _records(tg.ones(1, requires_grad=True))
    tg.set_grad_enabled(True)
    assert tg.is_grad_enabled()


def test_set_grad_enabled_takes_effect_at_the_call_and_its_with_restores():
    switch = tg.set_grad_enabled(False)
    assert not tg.is_grad_enabled()
    with switch:
        assert not tg.is_grad_enabled()
    assert tg.is_grad_enabled()


@pytest.mark.parametrize(
    "manager",
    [tg.no_grad, lambda: tg.set_grad_enabled(False), tg.inference_mode],
    ids=["no_grad", "set_grad_enabled", "inference_mode"],
)
def test_modes_are_restored_after_an_exception(manager):
    with pytest.raises(ValueError), manager():
        raise ValueError
    assert tg.is_grad_enabled() and not tg.is_inference_mode_enabled()


def test_grad_mode_state_matches_torch_through_a_sequence(torch):
    def states(L):
        r = []
        with L.no_grad():
            r.append(L.is_grad_enabled())
            with L.enable_grad():
                r.append(L.is_grad_enabled())
            r.append(L.is_grad_enabled())
        r.append(L.is_grad_enabled())
        with L.inference_mode():
            r.append((L.is_grad_enabled(), L.is_inference_mode_enabled()))
            with L.inference_mode(False):
                r.append((L.is_grad_enabled(), L.is_inference_mode_enabled()))
        with L.no_grad(), L.inference_mode(False):
            r.append(L.is_grad_enabled())
        with L.no_grad():
            with L.inference_mode():
                pass
            r.append(L.is_grad_enabled())
        return r

    assert states(tg) == states(torch)


# =============================================================================== decorators


def test_no_grad_decorator():
    @tg.no_grad()
    def double(x):
        return x * 2

    assert not double(tg.ones(1, requires_grad=True)).requires_grad
    assert tg.is_grad_enabled()
    assert double.__name__ == "double", "functools.wraps keeps the name"


@pytest.mark.parametrize(
    "decorator, inside",
    [
        (tg.no_grad, (False, False)),
        (tg.enable_grad, (True, False)),
        (tg.inference_mode, (False, True)),
    ],
    ids=["no_grad", "enable_grad", "inference_mode"],
)
def test_decorators_without_parentheses(decorator, inside):
    """torch accepts ``@torch.no_grad`` as well as ``@torch.no_grad()``."""

    @decorator
    def state():
        return tg.is_grad_enabled(), tg.is_inference_mode_enabled()

    with tg.no_grad():
        assert state() == inside


def test_enable_grad_decorator_inside_no_grad():
    @tg.enable_grad()
    def records(x):
        return _records(x)

    with tg.no_grad():
        assert records(tg.ones(1, requires_grad=True))


def test_set_grad_enabled_decorator_only_switches_while_the_function_runs():
    @tg.set_grad_enabled(False)
    def double(x):
        return x * 2

    assert tg.is_grad_enabled(), "decorating must not switch grad mode off at definition time"
    assert not double(tg.ones(1, requires_grad=True)).requires_grad
    assert tg.is_grad_enabled()


def test_inference_mode_decorator():
    @tg.inference_mode()
    def state():
        return tg.is_inference_mode_enabled(), tg.is_grad_enabled()

    assert state() == (True, False)

    @tg.inference_mode(False)
    def outside():
        return tg.is_inference_mode_enabled(), tg.is_grad_enabled()

    with tg.inference_mode():
        assert outside() == (False, True)


def test_decorated_generator_switches_only_while_it_runs():
    @tg.no_grad()
    def gen():
        received = yield tg.is_grad_enabled()
        yield received, tg.is_grad_enabled()

    it = gen()
    assert next(it) is False
    assert tg.is_grad_enabled(), "the caller's mode is back between steps"
    assert it.send("hello") == ("hello", False)
    assert tg.is_grad_enabled()
    it.close()


def test_decorated_generator_records_nothing():
    x = tg.ones(2, requires_grad=True)

    @tg.no_grad()
    def doubles(n):
        for _ in range(n):
            yield x * 2

    assert [y.requires_grad for y in doubles(3)] == [False, False, False]


# the decorators, written once for both libraries
DECORATORS = {
    "no_grad()": lambda lib: lib.no_grad(),
    "no_grad": lambda lib: lib.no_grad,
    "enable_grad()": lambda lib: lib.enable_grad(),
    "set_grad_enabled(False)": lambda lib: lib.set_grad_enabled(False),
    "set_grad_enabled(True)": lambda lib: lib.set_grad_enabled(True),
    "inference_mode()": lambda lib: lib.inference_mode(),
    "inference_mode(False)": lambda lib: lib.inference_mode(False),
}
OUTSIDE = {
    "grad on": lambda lib: lib.enable_grad(),
    "no_grad": lambda lib: lib.no_grad(),
    "inference_mode": lambda lib: lib.inference_mode(),
}


def _modes(lib):
    return lib.is_grad_enabled(), lib.is_inference_mode_enabled()


def _conversation(lib, decorator, ending):
    """Drive a decorated generator with next, send, throw (caught, and not) and close, and
    write down what each side saw, and in which modes."""
    seen = []

    @DECORATORS[decorator](lib)
    def talker():
        seen.append(("started in", _modes(lib)))
        received = yield "first"
        seen.append(("received", received, _modes(lib)))
        try:
            received = yield "second"
        except KeyError as error:
            seen.append(("caught", str(error), _modes(lib)))
            received = yield "after the catch"
        try:
            seen.append(("received", received, _modes(lib)))
            yield "last"
        finally:
            seen.append(("finally", _modes(lib)))
        return "done"

    steps = talker()
    seen.append(("got", next(steps), _modes(lib)))
    seen.append(("got", steps.send("hello"), _modes(lib)))
    seen.append(("got", steps.throw(KeyError("boom")), _modes(lib)))
    seen.append(("got", steps.send("again"), _modes(lib)))
    if ending == "close":
        steps.close()
    elif ending == "throw":
        with pytest.raises(ValueError) as error:
            steps.throw(ValueError("uncaught"))
        seen.append(("raised", str(error.value)))
    else:
        with pytest.raises(StopIteration) as stop:
            next(steps)
        seen.append(("returned", stop.value.value))
    seen.append(("after", _modes(lib)))
    return seen


@pytest.mark.parametrize("ending", ["close", "throw", "return"])
@pytest.mark.parametrize("outside", OUTSIDE)
@pytest.mark.parametrize("decorator", DECORATORS)
def test_decorated_generators_pass_send_throw_and_close_through_like_torch(
    torch, decorator, outside, ending
):
    """send, throw and close reach the generator, which runs in the decorator's mode and
    only while it runs; the caller is back in its own mode between steps."""

    def run(lib):
        with OUTSIDE[outside](lib):
            return _conversation(lib, decorator, ending)

    assert run(tg) == run(torch)


def test_a_generator_ignoring_close_fails_like_torch(torch):
    def run(lib):
        @lib.no_grad()
        def stubborn():
            while True:
                with contextlib.suppress(GeneratorExit):  # refuses to close
                    yield 1

        steps = stubborn()
        next(steps)
        with pytest.raises(RuntimeError) as error:
            steps.close()
        return str(error.value), _modes(lib)

    assert run(tg) == run(torch)


@pytest.mark.parametrize("decorator", DECORATORS)
def test_decorating_a_class_warns_like_torch(torch, decorator):
    """torch still decorates a class (its construction runs in the mode) but warns that it
    will stop: the same FutureWarning, pointing at the line that decorates where torch's does."""

    def run(lib):
        class Box:
            def __init__(self, value):
                self.value, self.modes = value, _modes(lib)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            made = DECORATORS[decorator](lib)(Box)
        box = made(7)
        said = [(w.category, str(w.message), w.filename == __file__) for w in caught]
        return said, type(box) is Box, box.value, box.modes, _modes(lib), made.__name__

    ours = run(tg)
    assert ours == run(torch)
    assert ours[0][0][0] is FutureWarning


# =============================================================================== inference mode


def test_tensors_made_in_inference_mode_are_inference_tensors():
    x = tg.ones(2, requires_grad=True)
    with tg.inference_mode():
        a = tg.ones(2)
        b = x * 2
        assert not tg.is_grad_enabled()
    c = tg.ones(2)
    assert a.is_inference() and b.is_inference()
    assert not b.requires_grad
    assert not c.is_inference() and not x.is_inference()


def test_no_grad_tensors_are_not_inference_tensors():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        y = x * 2
    assert not y.is_inference()


def test_inference_mode_false_is_a_normal_mode():
    with tg.inference_mode(), tg.inference_mode(False):
        assert not tg.is_inference_mode_enabled() and tg.is_grad_enabled()
        assert not tg.ones(1).is_inference()


@pytest.mark.parametrize(
    "use",
    [lambda t, x: x * t, lambda t, x: t * x, lambda t, x: (x * t).exp()],
    ids=["x*t", "t*x", "chain"],
)
def test_inference_tensors_cannot_be_saved_for_backward(use):
    with tg.inference_mode():
        t = tg.ones(2)
    x = tg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        use(t, x)


def test_inference_tensor_in_an_op_that_saves_nothing_is_fine():
    with tg.inference_mode():
        t = tg.ones(2)
    x = tg.ones(2, requires_grad=True)
    (x + t).sum().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_a_clone_of_an_inference_tensor_can_be_saved():
    with tg.inference_mode():
        t = tg.full((2,), 3.0)
    x = tg.ones(2, requires_grad=True)
    (x * t.clone()).sum().backward()
    assert x.grad.tolist() == [3.0, 3.0]


def test_inference_tensor_cannot_require_grad_outside_inference_mode():
    with tg.inference_mode():
        t = tg.ones(2)
    with pytest.raises(RuntimeError, match="inference tensor"):
        t.requires_grad_()


def test_enable_grad_inside_inference_mode_is_allowed_like_torch():
    """torch lets enable_grad switch grad mode on inside inference_mode (tensors stay inference tensors)."""
    with tg.inference_mode(), tg.enable_grad():
        assert tg.is_grad_enabled()
        assert tg.is_inference_mode_enabled()


# =============================================================================== threads


def _in_thread(fn):
    result = {}
    worker = threading.Thread(target=lambda: result.setdefault("value", fn()))
    worker.start()
    worker.join()
    return result["value"]


def test_no_grad_in_one_thread_does_not_leak_into_another():
    with tg.no_grad():
        assert _in_thread(tg.is_grad_enabled) is True
        assert not tg.is_grad_enabled()


def test_set_grad_enabled_in_a_worker_does_not_change_the_main_thread():
    def worker():
        tg.set_grad_enabled(False)
        return tg.is_grad_enabled()

    assert _in_thread(worker) is False
    assert tg.is_grad_enabled()


def test_inference_mode_is_thread_local():
    with tg.inference_mode():
        assert _in_thread(tg.is_inference_mode_enabled) is False
    assert _in_thread(lambda: tg.ones(1).is_inference()) is False


def test_a_worker_thread_records_while_the_main_thread_is_in_no_grad():
    x = tg.ones(2, requires_grad=True)
    with tg.no_grad():
        assert _in_thread(lambda: _records(x)) is True
        assert not _records(x)


def test_concurrent_modes_do_not_interfere():
    ready, go = threading.Event(), threading.Event()
    seen = {}

    def worker():
        tg.set_grad_enabled(False)
        ready.set()
        go.wait()
        seen["worker"] = tg.is_grad_enabled()

    t = threading.Thread(target=worker)
    t.start()
    ready.wait()
    seen["main"] = tg.is_grad_enabled()
    go.set()
    t.join()
    assert seen == {"main": True, "worker": False}

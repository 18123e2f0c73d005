"""Grading one submission: its code in a sandbox, every verdict in the grader.

:func:`grade_submission` reads the submission's *source* (a notebook's code cells,
via nbformat, or a .py file; a regular file, never a link to one), starts a
:class:`~course.grader.sandbox.Sandbox`, and runs the exercise's graded tests
(``tests.py``, loaded here, never in the sandbox) on proxies of the student's objects
(:mod:`.remote`). The tests' comparisons, finite differences and diagnoses
(``course.testing``) therefore run in this process.

A passing test then gets a *fresh-input probe*: each distinct call it made with
floating-point inputs (tensors, whether they require grad or not, and NumPy arrays; by
their shapes and dtypes), but none that holds one of the student's own objects (a
model), is repeated on inputs scaled by random factors (a new seed per run) and
compared with the reference solution (extracted here from the instructor notebook) --
and so is the student's backward, when the test called it or the engine ran it for the
test: the output must then have a ``grad_fn`` wherever the reference's has one, and in
float64 the gradients must agree to ``STRICT`` (relative), which an exact derivative
does and a finite-difference estimate cannot. Each backward the test called, or the
engine ran for it, also runs once with grad mode on, as ``create_graph=True`` runs it:
what it then calls of teachgrad's autograd counts as in the test (a backward that asks
the engine only in that mode is refused too). A submission that hard-codes the answers for the
tests' fixed inputs, returns degenerate outputs a test does not look at, or estimates
its derivatives, loses that test's points; a test is never failed for what it does not
check.

A test during which the student's code called teachgrad's own autograd (the sandbox says
so, see :class:`~course.grader.child.EngineWatch`) scores nothing either, unless the
test allows that part of it (``@points(..., autograd=("grad", ...))``: 08's Hessians use
``grad``, 12's checkpointing recomputes its block); the engine's inner workings (its
loop, a node's rule) are then allowed too, never otherwise. So does a test during which
it called one of teachgrad's ops the test refuses (``refuses=``: the op the exercise
writes, as 11's conv2d), or during which it reached student code that computes with complex
numbers (a derivative by the complex step, exact to rounding: ``complex_step.py``).
"""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import re
import secrets
import stat
import time
from pathlib import Path
from typing import NamedTuple

import numpy as np

import teachgrad as tg
from course import exercises, testing
from course.exercises import Result
from course.testing import CAUSES, Failure

from .remote import Session
from .sandbox import SOLUTIONS, Sandbox, SandboxError, Timeout, namespaces
from .wire import COMPLEX_ENTRY, Proxy, RemoteError, WireError

__all__ = [
    "Graded",
    "SubmissionError",
    "grade_submission",
    "instructor_notebook",
    "load_submission",
    "reference_namespace",
]

STRICT = 1e-13  # float64 gradients: exact ones agree to ~1e-15, finite differences to ~1e-11


class Graded(NamedTuple):
    """One submission's grade: the tests' Results plus what results.json needs."""

    submission: str
    exercise: str
    results: list
    execution_time: float
    messages: list  # errors while running the student's cells (not graded)
    seed: int

    @property
    def score(self):
        return sum(r.score for r in self.results)

    @property
    def max_score(self):
        return sum(r.max_score for r in self.results)


class SubmissionError(ValueError):
    """What was handed in is not a submission: a link, a FIFO, a device, a folder."""


LINK = "the submission is a symbolic link (or in a linked folder); submit the file itself"


def load_submission(path, within=None):
    """The code of a submission as ``{"kind": ..., "cells": [source, ...], "labels":
    [label, ...]}``; a label names its cell in what the student is told.

    Notebooks give their code cells (IPython magics and shell lines commented out),
    labelled ``cell N``: the N-th cell of the notebook from the top, counting every
    cell, text cells too (Jupyter shows no cell numbers of its own: ``In [n]`` counts
    executions). A .py file gives one source, labelled with its name, split into
    top-level statements in the sandbox. The file must be a regular file reached from
    the folder ``within`` through no symbolic link (see :func:`read_regular`).

    >>> import tempfile, pathlib
    >>> file = pathlib.Path(tempfile.mkdtemp(), "answer.py")
    >>> _ = file.write_text("x = 1\\n")
    >>> load_submission(file)
    {'kind': 'statement', 'cells': ['x = 1\\n'], 'labels': ['answer.py']}
    """
    path = Path(path)
    text = read_regular(path, within).decode("utf-8", errors="replace")
    if path.suffix == ".ipynb":
        import nbformat

        nb = nbformat.reads(text, as_version=4)
        code = [(i, c) for i, c in enumerate(nb.cells, 1) if c.cell_type == "code"]
        cells = [_strip_magics(c.source) for _, c in code]
        return {"kind": "cell", "cells": cells, "labels": [f"cell {i}" for i, _ in code]}
    return {"kind": "statement", "cells": [text], "labels": [path.name]}


def read_regular(path, within=None):
    """The bytes of ``path``, a regular file below the folder ``within`` (by default its
    own folder) with no symbolic link on the way; :class:`SubmissionError` otherwise.

    A student chooses what they upload: a link to the instructor notebook would be
    read by the grader, with the grader's rights, and a FIFO would block it forever.
    So each step down from ``within`` is looked at with ``lstat`` first (a FIFO or a
    device is never opened), then opened relative to the last with ``O_NOFOLLOW``, and
    ``fstat`` checks that what was opened is what was looked at: swapping in a link
    meanwhile does not work either.
    """
    path = os.path.abspath(path)
    within = os.path.abspath(within) if within else os.path.dirname(path)
    steps = Path(os.path.relpath(path, within)).parts
    if ".." in steps:
        raise SubmissionError(f"the submission {path} is not in the folder {within}")
    fd = os.open(within, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, step in enumerate(steps):
            inner = _step_down(fd, step, last=i == len(steps) - 1)
            os.close(fd)
            fd = inner
        with os.fdopen(fd, "rb", closefd=False) as file:
            return file.read()
    finally:
        os.close(fd)


def _step_down(folder, name, last):
    """Open ``name`` in the open ``folder``: the file when ``last``, else a folder. A link,
    a special file, or a file swapped since it was looked at, is refused."""
    seen = os.stat(name, dir_fd=folder, follow_symlinks=False)
    if stat.S_ISLNK(seen.st_mode):
        raise SubmissionError(LINK)
    if last and not stat.S_ISREG(seen.st_mode):
        kinds = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket"}
        kind = kinds.get(stat.S_IFMT(seen.st_mode), "a device")
        raise SubmissionError(f"the submission is not a regular file: {name} is {kind}")
    flags = os.O_RDONLY | os.O_NOFOLLOW | (os.O_NONBLOCK if last else os.O_DIRECTORY)
    try:
        fd = os.open(name, flags, dir_fd=folder)
    except OSError as exc:
        raise SubmissionError(LINK if exc.errno == errno.ELOOP else str(exc)) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (seen.st_dev, seen.st_ino):
        os.close(fd)
        raise SubmissionError("the submission changed while it was being read; submit it again")
    return fd


def _strip_magics(source):
    lines = source.splitlines()
    return "\n".join("# " + ln if ln.lstrip().startswith(("%", "!")) else ln for ln in lines)


def instructor_notebook(exercise):
    """The instructor notebook (the reference solution) of ``exercise``: beside its tests in
    the source tree, else in ``$COURSE_SOLUTIONS/NN_topic/`` (an installed ``course`` has
    none: the wheel leaves them out; the Gradescope bundle points there at its source)."""
    name = exercises.path(exercise).name
    places = [exercises.path(name)]
    if os.environ.get(SOLUTIONS):
        places.append(Path(os.environ[SOLUTIONS], name))
    for folder in places:
        if (folder / "instructor.ipynb").is_file():
            return folder / "instructor.ipynb"
    raise FileNotFoundError(
        f"no reference solution for {name}: grade from the source tree (the repository), "
        f"or set {SOLUTIONS} to a folder holding {name}/instructor.ipynb"
    )


@functools.lru_cache(maxsize=8)
def reference_namespace(exercise):
    """The instructor notebook's definitions (imports, classes, functions), run here.

    Cached per process: a grading worker pays for it once per exercise."""
    nb = json.loads(instructor_notebook(exercise).read_text(encoding="utf-8"))
    ns = {}
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and source.lstrip().startswith(("import", "class", "def")):
            exec(compile(source, f"<{exercise} reference>", "exec"), ns)
    return ns


def grade_submission(
    path,
    exercise,
    *,
    timeout=60.0,
    test_timeout=10.0,
    startup_timeout=30.0,
    memory_mb=2048,
    seed=None,
    within=None,
):
    """Grade the submission at ``path`` on ``exercise``'s tests (hidden ones included).

    Running the submission's cells may take ``startup_timeout`` seconds, each cell at
    most ``test_timeout`` (a cell that runs longer is stopped, the next one runs); each
    test then ``test_timeout`` (or the ``seconds`` its ``@points`` asks for, when more);
    all of it together at most ``timeout``, counted from when this submission's own work
    starts (what a worker loads once is loaded before). ``within`` is the folder the
    students' files are in: no link below it is followed (see :func:`read_regular`)."""
    exercise = exercises.path(exercise).name
    tests = exercises.load_tests(exercise)
    names = sorted({n for t in tests for n in t.uses})
    reference = reference_namespace(exercise)
    _warm_up()
    start = time.monotonic()
    seed = secrets.randbits(32) if seed is None else seed
    rng = np.random.default_rng(seed)
    try:
        cells = load_submission(path, within)
    except Exception as exc:  # not a submission, or unreadable: every test fails
        why = (
            str(exc)
            if isinstance(exc, SubmissionError)
            else f"the submission could not be read: {type(exc).__name__}: {exc}"
        )
        results = [Result(t.__name__, 0, t.points, why, "error") for t in tests]
        return Graded(str(path), exercise, results, time.monotonic() - start, [why], seed)
    results = []
    limits = dict(memory_mb=memory_mb, cpu_s=int(timeout) + 5, cell_s=test_timeout)
    ops = sorted({op for t in tests for op in t.refuses})
    with (
        Sandbox(cells, names, seed=seed, ops=ops, **limits) as box,
        testing.grading(seed, list(cells["cells"])),
    ):
        session = Session(box)
        box.deadline = min(time.monotonic() + startup_timeout, start + timeout)
        with contextlib.suppress(SandboxError):  # a broken start fails every test, below
            box.ensure_started()
        for test in tests:
            seconds = max(test_timeout, test.seconds or 0)
            box.deadline = min(time.monotonic() + seconds, start + timeout)
            result = _run_test(test, session, reference, rng, cells)
            # Failure objects stay here: Graded crosses process boundaries (pickle)
            results.append(result._replace(failure=None))
        messages = list(box.errors)
        if box.broken:
            messages.insert(0, box.broken)
    return Graded(str(path), exercise, results, time.monotonic() - start, messages, seed)


def _warm_up():
    """What a grading process loads once, before the first submission's clock starts:
    nbformat (a second or more to import) and whether this machine has namespaces."""
    import nbformat  # noqa: F401 - for load_submission

    namespaces()


def _run_test(test, session, reference, rng, cells):
    name, points = test.__name__, test.points
    try:
        ns = session.namespace()
        with np.errstate(all="ignore"):
            test(ns)
            _refuse_delegating(session, test)
            _probe(session, reference, rng, test.uses)
            _refuse_delegating(session, test)  # (a backward that asks only when probed)
    except Failure as failure:
        if failure.cause == "missing":  # say why, when the cell meant to define it failed
            failure = _why_missing(test.uses, session.sandbox, cells) or failure
        return Result(name, 0, points, _describe(failure), failure.cause, failure)
    except NotImplementedError:
        return Result(name, 0, points, CAUSES["not_written"], "not_written")
    except Timeout as exc:
        return Result(name, 0, points, f"Timeout: {exc}", "error")
    except (SandboxError, RemoteError) as exc:  # RemoteError: what the student's code raised
        return Result(name, 0, points, str(exc), "error")
    except WireError as exc:  # the submission's process broke the protocol: start afresh
        session.sandbox.kill()
        return Result(name, 0, points, f"your code's process broke the protocol: {exc}", "error")
    except Exception as exc:  # the tests tripped over a strange value the student returned
        return Result(name, 0, points, f"{type(exc).__name__}: {exc}", "error")
    return Result(name, points, points, "passed", None)


def _why_missing(uses, box, cells):
    """A Failure naming the error of the cell that defines one of ``uses`` the sandbox
    lacks (a SyntaxError, an exception), or None when no such cell failed."""
    for name in (n for n in uses if n not in box.defined):
        word = re.escape(name)
        defines = re.compile(rf"^(?:class|def)\s+{word}\b|^{word}\s*=", re.MULTILINE)
        for label, source in zip(cells["labels"], cells["cells"]):
            error = next((e for e in box.errors if e.startswith(f"{label}: ")), None)
            if error and defines.search(source):
                return Failure(
                    "error",
                    f"`{name}` is not defined: {label}, which defines it, failed: "
                    f"{error.removeprefix(f'{label}: ')}",
                )
    return None


def _refuse_ops(session, refused):
    """Fail when the student's code called one of teachgrad's ops the test ``refused``."""
    called = {entry[3:] for _, entry in session.engine if entry.startswith("op ")}
    if called & set(refused):
        raise Failure(
            "engine",
            f"your code called teachgrad's own op (its node: {min(called & set(refused))}), "
            "which is what this exercise asks you to write: compute it yourself.",
        )


def _refuse_delegating(session, test):
    """Fail when the watch was disarmed, or the student's code called teachgrad's autograd
    or an op the test does not allow."""
    _refuse_disarmed(session)
    _refuse_engine(session, test.autograd)
    _refuse_ops(session, test.refuses)
    _refuse_complex_step(session)


def _refuse_disarmed(session):
    """Fail when a message of the test lacked the sandbox's canary (``child._canary``): the
    record of what the student's code called of teachgrad's autograd was tampered with."""
    if session.disarmed:
        raise Failure(
            "engine",
            "the sandbox's record of what your code called of teachgrad's autograd stopped "
            "working (a backward the grader ran itself went unrecorded): leave teachgrad and "
            "the grader's own objects as they are.",
        )


def _refuse_engine(session, allowed):
    """Fail when the student's code called a part of teachgrad's autograd (the sandbox
    noted it) that the test does not allow: a public entry point (``tg.autograd.grad``)
    not named in ``allowed``, or the engine's inner workings when ``allowed`` is empty."""
    noted = [(whose, entry) for whose, entry in session.engine if _is_autograd(entry)]
    refused = [(whose, entry) for whose, entry in noted if not _allows(allowed, entry)]
    if not refused:
        return
    whose, entry = min(refused, key=lambda c: (_rank(c[1]), c))
    if whose == "*":
        parts = ", ".join(allowed) or "none of it"
        raise Failure(
            "engine",
            f"your code called {entry}: compute it yourself, not with teachgrad's own "
            f"autograd (what this test allows of it: {parts}).",
        )
    raise Failure(
        "engine",
        f"your backward called {entry}: write the derivative yourself "
        f"({whose}.backward must compute the gradient from the saved tensors, not ask "
        "teachgrad's autograd for it).",
    )


def _refuse_complex_step(session):
    """Fail when the code a test called computes with complex numbers (the sandbox noted
    it: ``complex_step.py``): the complex step, ``Im f(x + ih) / h``, estimates a
    derivative to the last digits, which the strict check on fresh inputs cannot tell."""
    if any(entry == COMPLEX_ENTRY for _, entry in session.engine):
        raise Failure(
            "engine",
            "your code computes with complex numbers: a derivative by the complex step, "
            "Im f(x + ih) / h, is an estimate made by running f, like a finite difference. "
            "Write the derivative itself (no exercise needs complex numbers).",
        )


def _is_autograd(entry):
    """Whether a noted entry is a part of teachgrad's autograd (not an op, not complex)."""
    return not entry.startswith("op ") and entry != COMPLEX_ENTRY


def _is_public(entry):
    return entry.startswith(("tg.", "Tensor."))


# noted whatever the way in: the engine's loop, then a node run by hand (a built-in op's
# own rule comes last)
_INNER = ("engine._execute", "Node.__call__", "BackwardFunction._apply")


def _rank(entry):
    """Which noted entry to name: the one the student wrote, as far as can be told."""
    if _is_public(entry):
        return 0
    return _INNER.index(entry) + 1 if entry in _INNER else len(_INNER) + 1


def _allows(allowed, entry):
    """Whether a test that allows ``allowed`` allows the noted ``entry`` point."""
    return entry.rpartition(".")[2] in allowed if _is_public(entry) else bool(allowed)


def _describe(failure):
    text = f"{CAUSES.get(failure.cause, '')}\n{failure.message}".strip()
    if failure.pair:
        with np.printoptions(precision=4, suppress=True, linewidth=100):
            text += (
                f"\n{failure.pair}\nnumerical Jacobian:\n{failure.numerical}"
                f"\nanalytical Jacobian (your backward):\n{failure.analytical}"
            )
    return text


# --------------------------------------------------------------------- the probe


def _probe(session, reference, rng, uses):
    """Repeat each distinct call the test made on fresh inputs; compare with the reference."""
    seen = set()
    checked = {path for path, _, _ in session.calls}  # what the test itself called
    for path, args, kwargs in list(session.calls):
        if path[0] not in uses or path[0] not in reference or path[-1] == "backward":
            continue  # a backward is probed with its forward, below
        key = (path, tuple(_signature(a) for a in args))
        if key in seen or not any(map(_is_float, args)) or _holds_proxy(args, kwargs):
            continue  # nothing to perturb, or the student's own objects (a model) as inputs
        seen.add(key)
        fresh = [_perturb(a, rng) for a in args]
        owner = reference[path[0]]
        for attr in path[1:-1]:
            owner = getattr(owner, attr)
        ref = getattr(owner, path[-1]) if len(path) > 1 else owner
        expected = ref(*_copies(fresh), **kwargs)
        got = session.lookup(path)(*_copies(fresh), **kwargs)
        what = f"{'.'.join(path)} on fresh random inputs (shapes {[_shape(a) for a in fresh]})"
        _compare(got, expected, what, "forward")
        backward = (*path[:-1], "backward")
        if not _has_grad_fn(expected) or backward not in checked | session.backwards_run:
            continue
        if backward in checked and not _has_grad_fn(got):  # no graph, no backward to check
            raise Failure(
                "forward", f"{what} gave an output without a grad_fn; the reference's has one."
            )
        g = tg.tensor(rng.standard_normal(tuple(expected.shape)))
        theirs = session.lookup(backward)
        if _has_grad_fn(got):
            _run_under_grad_mode(theirs, got.grad_fn, g)
        if backward in checked:
            with tg.no_grad():
                want = owner.backward(expected.grad_fn, g)
                have = theirs(got.grad_fn, g)
            exact = all(
                a.dtype == tg.float64 for a in args if isinstance(a, tg.Tensor) and _is_float(a)
            )
            size = float(np.abs(g.numpy()).max(initial=0.0)) if exact else None
            what = f"the backward of {what}"
            _compare(_as_list(have), _as_list(want), what, "wrong_values", grad_size=size)


def _run_under_grad_mode(backward, node, g):
    """Run the student's ``backward`` as ``create_graph=True`` runs it, with grad mode on,
    for what it calls of teachgrad's autograd (the watch notes it; the test is then
    refused as for any call): a backward that asked the engine only in that mode, and
    answered exactly without it where the tests and the probe ran it, scored. What it
    returns, or raises, is not judged here (``.numpy()`` of a saved tensor, fine with grad
    mode off, raises in this mode: that costs the second-order tests, not this one)."""
    with contextlib.suppress(RemoteError):
        backward(node, g)


def _is_float(a):
    """A floating-point tensor or NumPy array: what the probe perturbs. (Not only those
    that require grad: an answer keyed on the test's fixed inputs, 08's hvp at the
    visible test's x, or 11's im2col of its array, is caught too.)"""
    if isinstance(a, tg.Tensor):
        return a.dtype.is_floating_point
    return isinstance(a, np.ndarray) and a.dtype.kind == "f"


def _holds_proxy(args, kwargs):
    return any(isinstance(a, Proxy) for a in (*args, *kwargs.values()))


def _perturb(a, rng):
    if not _is_float(a):
        return a
    values = a.detach().numpy() if isinstance(a, tg.Tensor) else a
    factors = rng.uniform(0.8, 1.25, values.shape) * rng.choice([1.0, 1.0, 1.0, -1.0])
    fresh = (values * factors).astype(values.dtype)
    return tg.tensor(fresh, requires_grad=a.requires_grad) if isinstance(a, tg.Tensor) else fresh


def _copies(args):
    return [
        tg.tensor(a.detach().numpy().copy(), requires_grad=a.requires_grad)
        if isinstance(a, tg.Tensor)
        else a.copy()
        if isinstance(a, np.ndarray)
        else a
        for a in args
    ]


def _signature(a):
    """What makes two calls' arguments different to the probe: a tensor's shape, dtype and
    requires_grad (a call that records a graph has a backward to probe), an array's shape
    and dtype, any other value's repr."""
    if isinstance(a, tg.Tensor):
        return (tuple(a.shape), str(a.dtype), a.requires_grad)
    if isinstance(a, np.ndarray):
        return (tuple(a.shape), str(a.dtype))
    return repr(a)


def _shape(a):
    return tuple(a.shape) if isinstance(a, tg.Tensor | np.ndarray) else type(a).__name__


def _has_grad_fn(value):
    return isinstance(value, tg.Tensor) and value.grad_fn is not None


def _as_list(value):
    return list(value) if isinstance(value, tuple | list) else [value]


def _compare(got, expected, what, cause, grad_size=None):
    """Fail with ``cause`` unless ``got`` (from the sandbox) matches the reference; with
    a ``grad_size``, float64 gradients must also agree exactly (:func:`_check_exact`)."""
    if isinstance(expected, tuple | list):
        got = _as_list(got)
        if len(got) != len(expected):
            raise Failure(cause, f"{what}: {len(got)} results, expected {len(expected)}.")
        for g, e in zip(got, expected):
            _compare(g, e, what, cause, grad_size)
        return
    if expected is None or isinstance(got, Proxy):
        if got is None or expected is None and _is_zero(got):
            return
        raise Failure(cause, f"{what}: got {got!r}, expected {expected!r}.")
    e = expected.detach().numpy() if isinstance(expected, tg.Tensor) else np.asarray(expected)
    if got is None and not e.any():
        return
    g = got.detach().numpy() if isinstance(got, tg.Tensor) else np.asarray(got, dtype=object)
    try:
        g = g.astype(float)
        close = g.shape == e.shape and np.allclose(g, e, rtol=1e-4, atol=1e-6)
    except (TypeError, ValueError):
        close = False
    if not close:
        raise Failure(cause, f"{what} differ from the reference solution's.")
    if grad_size is not None and e.dtype == np.float64 and e.size:
        _check_exact(g, e, grad_size, what, cause)


def _check_exact(got, expected, grad_size, what, cause):
    """Fail unless the float64 gradient ``got`` agrees with ``expected`` to ``STRICT``,
    relative to each entry's size or, where all are small, to the largest of them and
    ``grad_size`` (the largest entry of the gradient the backward was handed): rounding
    in a different but exact formula stays below that, even where a nearly saturated
    softmax's gradient is all rounding; a finite difference does not."""
    scale = np.abs(expected) + max(np.abs(expected).max(), grad_size)
    error = float((np.abs(got - expected) / np.where(scale > 0, scale, 1.0)).max())
    if not error <= STRICT:  # (nan too)
        raise Failure(
            cause,
            f"{what} differ from the reference solution's by {error:.1e} (relative): an "
            f"exact derivative agrees to {STRICT:g} in float64. Compute the derivative "
            "itself, not an estimate (a finite difference is one).",
        )


def _is_zero(value):
    return isinstance(value, tg.Tensor) and not value.detach().numpy().any()

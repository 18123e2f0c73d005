"""The program that runs inside the sandbox: a student's code, then the wire's peer.

The grader starts it as ``python -I child.py REQUEST_FD REPLY_FD`` in an empty
temporary directory holding ``cells.json`` (the submission's code cells). It

1. reads a hello line (the run's nonce and the names the grader wants),
2. mounts a tmpfs on its folder when the grader asks (the disk quota, in the mount
   namespace the grader started it in); loads :mod:`wire` (next to this file, by path:
   ``-I`` puts no folder of ours on ``sys.path``), numpy and teachgrad; restricts itself
   with Landlock and forbids itself new processes (seccomp, see confine.py); puts stubs
   in place of ``course`` and ``viz`` (the student's notebook imports them, but grading
   must never load the real ``course``, which holds the instructor's solutions); and
   installs an audit hook that refuses to read outside the sandbox's allowed roots, to
   write outside the working directory, to start processes, to use ctypes, to open
   sockets or to signal other processes,
3. runs the student's cells one by one, each under ``cell_s`` seconds of its own (an
   alarm): an error in one cell, or a cell stopped for running too long, does not stop
   the next one; a cell stopped before is skipped when the grader starts this child again,
4. answers the grader's requests with a :class:`wire.Peer` on the student's namespace:
   calls, attribute reads and operators on the student's objects, vjps of their outputs.

It only ever sends raw values back; every verdict is computed by the grader. A student
can rewrite anything in this process, including this file's functions: that only changes
which numbers come back, which the grader checks against its own reference solution and
its own finite differences. Every line it sends carries the run's nonce.

One report is not a number: :class:`EngineWatch` notes when the student's code, run for a
test, calls teachgrad's own autograd (``tg.autograd.grad``, ``.backward()``,
``tg.autograd.functional``, a built-in op's own derivative rule ...), an op a test
refuses, or student code that computes with complex numbers (the complex step:
``complex_step.py``), and each message says so; the grader decides what that costs. Each message
also carries a canary (:func:`_canary`: a backward run here by the grader's code, noted
under this run's name), so a watch a submission disarmed for good (its ``take``
replaced, its noting turned off) costs every test. A submission that unwraps the watch
more cleverly (off only while its own code runs) can still hide such a call, as it can
rewrite anything here: the watch catches delegating and plain tampering, not every one.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


class _Stub:
    """Stands in for ``course``/``viz`` and anything reached from them: does nothing."""

    def __init__(self, name):
        self.__name__ = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return _Stub(f"{self.__name__}.{attr}")

    def __call__(self, *args, **kwargs):
        return None

    def __repr__(self):
        return f"<{self.__name__}: not available while grading>"


def _install_stubs():
    import importlib.abc
    import importlib.machinery
    import types

    stubbed = ("course", "viz")

    class StubLoader(importlib.abc.Loader):
        def create_module(self, spec):
            module = types.ModuleType(spec.name)
            module.__path__ = []
            module.__getattr__ = lambda attr: _Stub(f"{spec.name}.{attr}")
            return module

        def exec_module(self, module):
            pass

    class StubFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, fullname, path=None, target=None):
            if fullname.split(".")[0] in stubbed:
                return importlib.machinery.ModuleSpec(fullname, StubLoader(), is_package=True)
            return None

    for name in list(sys.modules):
        if name.split(".")[0] in stubbed:
            del sys.modules[name]
    sys.meta_path.insert(0, StubFinder())


def _real(path):
    return os.path.realpath(os.fsdecode(path))


def _inside(path, roots):
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _readable(workdir):
    """The roots a sandbox may read: the installation, the system's libraries, its folder."""
    import numpy

    import teachgrad

    roots = {workdir, sys.prefix, sys.base_prefix, sys.exec_prefix, *sys.path}
    roots |= {os.path.dirname(numpy.__file__), os.path.dirname(teachgrad.__file__)}
    roots |= {"/usr", "/lib", "/lib64", "/etc", "/dev/null", "/dev/urandom", "/proc/self", "/sys"}
    return {_real(p) for p in roots if p}


def _refuse_process_start():
    """Put a stand-in for ``_posixsubprocess`` in place, whose ``fork_exec`` refuses.

    The real one starts a process without an audit event, so the hook refuses to import
    it; with the stand-in, ``import subprocess`` works (``numpy.testing`` imports it)
    and starting a process still fails (the hook refuses ``subprocess.Popen`` too)."""
    import types

    def fork_exec(*args, **kwargs):
        raise PermissionError("not allowed while grading: starting a process")

    stand_in = types.ModuleType("_posixsubprocess")
    stand_in.fork_exec = fork_exec
    sys.modules["_posixsubprocess"] = stand_in


def _install_guard(workdir, readable, denied):
    """The audit hook: the sandbox's file, process, ctypes, socket and signal policy.

    Python code can rewrite a Python hook; on a kernel with Landlock the file rules are
    enforced beneath it as well (see landlock.py)."""
    readable = frozenset(readable)
    denied = frozenset(_real(p) for p in denied)
    writable = frozenset({_real(workdir), "/dev/null"})
    me = os.getpid()
    forbidden = ("subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork", "os.forkpty")
    forbidden += ("os.system", "pty.", "ctypes.", "socket.", "_posixsubprocess")
    changes = ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.truncate", "os.link")
    changes += ("os.symlink", "os.chmod", "os.chown", "os.utime", "shutil.")

    def deny(what):
        raise PermissionError(f"not allowed while grading: {what}")

    def hook(event, args):
        if event == "open":
            path, mode, flags = args
            if path is None or isinstance(path, int):
                return
            real = _real(path)
            writing = any(c in (mode or "") for c in "wax+") or (flags or 0) & (
                os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC
            )
            if _inside(real, denied) or not _inside(real, writable if writing else readable):
                deny(f"open({path!r})")
        elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], str | bytes):
            if _inside(_real(args[0]), denied) or not _inside(_real(args[0]), readable):
                deny(f"{event}({args[0]!r})")
        elif event.startswith(changes):
            for arg in args:
                if isinstance(arg, str | bytes) and not _inside(_real(arg), writable):
                    deny(f"{event}({arg!r})")
        elif event in ("os.kill", "os.killpg", "signal.pthread_kill"):
            if args and args[0] not in (me, 0):
                deny(event)
        elif event.startswith(forbidden):
            deny(event)
        elif event == "import" and args[0] == "_posixsubprocess":
            deny(f"import {args[0]} (starting processes)")

    sys.addaudithook(hook)


class CellTimeout(BaseException):
    """A cell ran past its time limit. Not an Exception: ``except Exception`` in the
    student's code does not swallow it."""


@contextlib.contextmanager
def _time_limit(seconds):
    """Raise :class:`CellTimeout` in the code run inside, ``seconds`` from now."""

    def stop(signum, frame):
        raise CellTimeout

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _pieces(cells):
    """(label, file name, source or AST) of each piece of code to run in turn: a notebook
    cell, or a top-level statement of a .py file, so that one error loses one statement."""
    import ast

    for label, cell in zip(cells["labels"], cells["cells"]):
        try:
            body = ast.parse(cell, label).body if cells["kind"] == "statement" else None
        except SyntaxError:
            body = None  # compiled whole: its SyntaxError says where
        if body is None:
            yield label, label, cell
            continue
        for node in body:
            yield f"{label}, line {node.lineno}", label, ast.Module(body=[node], type_ignores=[])


def _run_cells(cells, ns, seconds, skip):
    """Run each piece of code, ``seconds`` at most, but those numbered in ``skip`` (they
    ran too long in an earlier start). Returns (errors, numbers of the pieces stopped)."""
    errors, stopped = [], []
    for number, (label, filename, piece) in enumerate(_pieces(cells)):
        if number in skip:
            errors.append(f"{label}: skipped: it ran past its {seconds:g} s limit before")
            continue
        try:
            code = compile(piece, filename, "exec")
            with _time_limit(seconds):
                exec(code, ns)
        except CellTimeout:
            stopped.append(number)
            errors.append(
                f"{label}: stopped after {seconds:g} s (an infinite loop, or far too slow?); "
                "the code after it still ran"
            )
        except BaseException as exc:  # noqa: BLE001 - SystemExit included: keep going
            errors.append(f"{label}: {type(exc).__name__}: {str(exc)[:300]}")
    return errors, stopped


class EngineWatch:
    """Notes each call of teachgrad's own autograd made while the student's code runs for
    the grader: a set of (whose code, entry point) pairs, where "whose code" is the name
    of a student's Function whose ``backward`` runs, else ``"*"`` (any code a test called:
    a forward, a function, a method of a Value).

    :meth:`watch_engine` wraps the entry points before the student's cells run (so that
    ``from teachgrad.autograd import grad`` gets the wrapper too), and the derivative rules
    of every built-in op, so that running a node's rule by hand (``y.grad_fn._apply``,
    ``Sin.backward``, ``Sin.derivative``, an op that is one's backward, a private helper
    that computes a derivative: ``_sigmoid_grad``) is noted as well; :meth:`watch_ops`
    wraps the ops the grader names (and the private helpers that compute them);
    :meth:`watch_backwards` wraps the backward of each Function the student made.
    ``enable_grad`` counts too: inside a backward it only serves to record the forward
    again for the engine. Which of these a test allows is the grader's to say
    (``@points(..., autograd=..., refuses=...)``)."""

    ENTRIES = {
        "tg": ("enable_grad",),  # the same object as tg.autograd.enable_grad
        # the engine's own loop, which every way of running backward goes through (a
        # submission that unwraps a public name still meets this one), and a node run by hand
        "engine": ("_execute",),
        "Node": ("__call__",),
        "BackwardFunction": ("_apply",),
        "tg.autograd": ("grad", "backward", "backward_steps"),
        "tg.autograd.functional": ("hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"),
        "tg.autograd.forward_ad": ("make_dual",),
        "Tensor": ("backward",),
        "tg.utils.checkpoint": ("checkpoint", "checkpoint_sequential"),  # (12's exercise itself)
    }
    RULES = ("backward", "derivative", "jvp", "vjp")  # what a built-in op's class computes with
    # the private functions of teachgrad.ops that compute a derivative (``_sigmoid_grad``),
    # noted as a rule; not ``_zero_grad``, which makes an op class
    HELPER_RULES = re.compile(r"_\w+_grad$")
    NOT_RULES = ("_zero_grad",)
    # the private functions that compute an op, noted as the op when a test refuses it
    OP_HELPERS = {
        "ConvolutionBackward0": ("teachgrad.ops.nn", ("_im2col", "_correlate")),
        "Im2ColBackward0": ("teachgrad.ops.fold", ("_unfold", "_im2col")),  # (conv2d's, imported)
        "Col2ImBackward0": ("teachgrad.ops.fold", ("_fold",)),
    }

    def __init__(self):
        self.running = []  # whose code runs now, innermost last; None: the grader's vjp
        self.calls = set()
        self.complex_scan = self.complex_entry = None  # (watch_complex, once the cells ran)

    def watch_ops(self, node_names):
        """Note each call of the built-in ops whose node is named in ``node_names`` (a
        test may refuse teachgrad's own op for what the exercise asks: 11's conv2d)."""
        from teachgrad.autograd.builtin import Builtin

        for op in _subclasses(Builtin):
            if vars(op).get("node_name") in node_names:
                self._watch_rule(op, "forward", label=f"op {op.node_name}")
        for node_name, (module, helpers) in self.OP_HELPERS.items():
            if node_name in node_names:
                for name in helpers:
                    self._watch_rule(sys.modules[module], name, label=f"op {node_name}")

    def watch_engine(self):
        import teachgrad as tg
        from teachgrad.autograd import engine, function
        from teachgrad.autograd.builtin import Builtin

        owners = {"tg": tg, "tg.autograd": tg.autograd, "Tensor": tg.Tensor}
        owners["engine"], owners["Node"] = engine, tg.autograd.graph.Node
        owners["BackwardFunction"] = function.BackwardFunction
        owners["tg.autograd.functional"] = tg.autograd.functional
        owners["tg.autograd.forward_ad"] = tg.autograd.forward_ad
        owners["tg.utils.checkpoint"] = checkpointing = tg.utils.checkpoint
        for where, names in self.ENTRIES.items():
            for name in names:
                entry = getattr(owners[where], name)
                setattr(owners[where], name, self._noting(entry, f"{where}.{name}"))
        # and the two ways checkpoint works, for a submission that reaches past it
        for owner, name in ((checkpointing.CheckpointFunction, "forward"),
                            (checkpointing._Recomputed, "first")):  # fmt: skip
            self._watch_rule(owner, name, label=f"tg.utils.checkpoint.{owner.__name__}")
        tg.autograd.enable_grad = tg.enable_grad  # one wrapper under both names
        self.teachgrads = frozenset(_subclasses(tg.autograd.Function))  # before any cell ran
        for op in _subclasses(Builtin):
            for name in self.RULES + (("forward",) if _computes_a_derivative(op) else ()):
                self._watch_rule(op, name)
            self._watch_rule(op._backward_cls, "_backward")
        for module in [m for n, m in sys.modules.items() if n.startswith("teachgrad.ops.")]:
            for name, value in list(vars(module).items()):
                mine = getattr(value, "__module__", None) == module.__name__  # (not imported)
                if mine and self.HELPER_RULES.match(name) and name not in self.NOT_RULES:
                    self._watch_rule(module, name, label=f"{module.__name__}.{name}")

    def _watch_rule(self, owner, name, label=None):
        """Wrap ``owner``'s own ``name`` (a function, a static or class method), if any."""
        rule = vars(owner).get(name)
        label = label or f"{owner.__module__}.{owner.__qualname__}.{name}"
        if isinstance(rule, staticmethod | classmethod):
            setattr(owner, name, type(rule)(self._noting(rule.__func__, label)))
        elif callable(rule):
            setattr(owner, name, self._noting(rule, label))

    def watch_backwards(self, ns):
        """Wrap the backward of every Function the student made: each subclass of Function
        teachgrad did not define (``teachgrads``, taken before the cells ran), whatever its
        ``__module__`` says, named as the cells named it (else by its own name); and, from
        now on, each one made later (a class made inside a function, at call time)."""
        import teachgrad as tg

        Function = tg.autograd.Function
        names = {id(value): name for name, value in ns.items() if isinstance(value, type)}
        for cls in _subclasses(Function) - self.teachgrads:
            self._watch_backward(cls, names.get(id(cls), cls.__qualname__))
        made = vars(Function)["__init_subclass__"].__func__

        def init_subclass(cls, **kwargs):
            made(cls, **kwargs)
            self._watch_backward(cls, cls.__qualname__)

        Function.__init_subclass__ = classmethod(init_subclass)

    def _watch_backward(self, cls, name):
        if "backward" in vars(cls):  # what a test calls by hand
            cls.backward = staticmethod(self._running(cls.backward, name))
        node = cls._backward_cls  # what the engine calls: its own copy of backward
        node._backward = staticmethod(self._running(node._backward, name))

    @contextlib.contextmanager
    def running_as(self, whose):
        """Run the code inside as ``whose``: a Function's name (its backward), ``"*"`` (the
        code a test called), or None (the engine at work for the grader: a vjp it asked
        for, which is not the student's doing)."""
        self.running.append(whose)
        try:
            yield
        finally:
            self.running.pop()

    def watch_complex(self, scan, entry):
        """From now on, note each call that reaches complex numbers (``note_complex``)."""
        self.complex_scan, self.complex_entry = scan, entry

    def note_complex(self, peer, message):
        """Note a call whose function or arguments reach student code that computes with
        complex numbers (``complex_step``: a derivative by the complex step), under the
        entry ``wire.COMPLEX_ENTRY``. Arrays are not decoded: they hold no code."""
        if self.complex_scan is None:
            return
        values = [message.get("fn"), *message.get("args", [])]
        values = [v for v in values if not (isinstance(v, dict) and "A" in v)]
        try:
            reaches = self.complex_scan.reaches_complex(*map(peer.decode, values))
        except Exception:  # noqa: BLE001 - a malformed request: serve_call answers it
            return
        if reaches:
            self.calls.add((self.running[-1], self.complex_entry))

    def take(self):
        """The calls noted since the last take, as sorted [whose code, entry point] lists."""
        calls, self.calls = sorted(map(list, self.calls)), set()
        return calls

    def _noting(self, entry, label):
        def noting(*args, **kwargs):
            if self.running and self.running[-1] is not None:
                self.calls.add((self.running[-1], label))
            return entry(*args, **kwargs)

        # its name and doc, but not functools.wraps's __wrapped__: no one-step way back
        noting.__name__, noting.__qualname__ = entry.__name__, entry.__qualname__
        noting.__doc__ = entry.__doc__
        return noting

    def _running(self, backward, name):
        @functools.wraps(backward)
        def running(*args, **kwargs):
            with self.running_as(name):
                return backward(*args, **kwargs)

        return running


def _computes_a_derivative(op):
    """Whether a built-in op is another op's backward made an op (its forward computes a
    derivative: ``SigmoidBackwardBackward0``'s is sigmoid's backward), as its node says.
    Not those that put a gradient into zeros at an index: teachgrad writes in place with
    them too."""
    node = getattr(op, "node_name", "")
    return node.count("Backward") > 1 and not node.startswith(_PUT_INTO_ZEROS)


_PUT_INTO_ZEROS = ("Index", "Select", "Slice", "Diagonal")


def _subclasses(cls):
    """Every subclass of ``cls``, however deep."""
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub, *_subclasses(sub)}
    return found


def _seed(seed):
    """Seed every generator a submission may use: grading it again with the same
    ``--seed`` gives the same numbers (a model's initial weights, a shuffle)."""
    import random

    import numpy

    import teachgrad

    random.seed(seed)
    numpy.random.seed(seed % 2**32)
    teachgrad.manual_seed(seed)


def _load(name):
    """A module next to this file, loaded by its path (wire.py, landlock.py, confine.py)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"teachgrad_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _peer(wire, ns, requests, replies, nonce, watch):
    """The sandbox's end of the wire: serves the student's names and the builtins, and
    tells the grader, with each message, what ``watch`` noted since the last one, its
    canary first (see :func:`_canary`)."""
    label = wire.canary_label(nonce)
    canary = _canary(watch, label)

    class StudentPeer(wire.Peer):
        namespace = ns
        builtins = wire.BUILTINS
        shielded = BaseException  # SystemExit from the student's code is an answer too
        fatal = ()  # and so is a malformed request: the grader decides what it means

        def send(self, message):
            message = dict(message, nonce=nonce)
            canary()
            engine = watch.take()  # (the canary's first: the grader reads the first 100)
            engine.sort(key=lambda call: call[0] != label)
            if engine:
                message["engine"] = engine
            replies.write(json.dumps(message).encode() + b"\n")
            replies.flush()

        def receive(self):
            line = requests.readline()
            if not line:
                raise SystemExit(0)  # the grader hung up
            return json.loads(line)

        def serve_call(self, message):
            with watch.running_as("*"):
                watch.note_complex(self, message)
                return super().serve_call(message)

        def serve_vjp(self, message):
            with watch.running_as(None):
                return super().serve_vjp(message)

    return StudentPeer()


def _canary(watch, label):
    """A backward the grader runs itself before each message, noted by ``watch`` as
    ``label`` (``wire.canary_label``: this run's). The grader expects it in every message:
    a watch a submission disarmed (found with ``gc``, its ``take`` replaced, its record
    cleared, the engine's wrapper undone) leaves it out, and the grader then gives that
    test nothing. It is made to work whatever state the submission left teachgrad in
    (grad mode off, inference mode on); if it fails all the same, it is simply not noted."""
    import teachgrad as tg

    def canary():
        try:
            with watch.running_as(label), tg.enable_grad(), tg.inference_mode(False):
                x = tg.ones(1, requires_grad=True)
                tg.autograd.grad((x + 1).sum(), x)
        except Exception:  # noqa: S110 - unnoted, so the grader sees the watch failed
            pass

    return canary


def main(argv):
    requests = os.fdopen(int(argv[1]), "rb")
    replies = os.fdopen(int(argv[2]), "wb")
    hello = json.loads(requests.readline())
    with open("cells.json", encoding="utf-8") as file:
        cells = json.load(file)
    os.remove("cells.json")
    sys.dont_write_bytecode = True
    confine = _load("confine")
    if hello.get("tmpfs"):
        confine.mount_quota(os.getcwd(), **hello["tmpfs"])
    wire = _load("wire")  # with numpy and teachgrad: loaded before any rule is in force
    complex_step = _load("complex_step")
    workdir = os.getcwd()
    readable = _readable(workdir)
    landlock = _load("landlock")
    landlock.restrict(landlock.beneath(readable, hello["denied"]), [workdir, "/dev/null"])
    confine.no_new_processes()
    _install_stubs()
    _refuse_process_start()
    _install_guard(workdir, readable, hello["denied"])

    _seed(int(hello.get("seed", 0)))
    watch = EngineWatch()
    watch.watch_engine()
    watch.watch_ops(set(hello.get("ops", [])))
    ns = {"__name__": "__main__"}
    errors, stopped = _run_cells(cells, ns, hello["cell_s"], set(hello["skip"]))
    watch.watch_complex(complex_step.ComplexScan(ns, cells["labels"]), wire.COMPLEX_ENTRY)
    watch.watch_backwards(ns)
    peer = _peer(wire, ns, requests, replies, hello["nonce"], watch)
    defined = [name for name in hello["names"] if name in ns]
    peer.post({"ready": True, "defined": defined, "errors": errors[:50], "stopped": stopped})
    peer.serve_forever()


if __name__ == "__main__":
    main(sys.argv)

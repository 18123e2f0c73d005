"""One submission's sandbox: a fresh ``python -I`` process, limits, and a message pipe.

:class:`Sandbox` starts ``child.py`` (see there for what runs inside) in an empty
temporary directory, with a scrubbed environment, its own process group, and
``resource`` limits (address space, CPU seconds, file size, no core dumps). It talks
over two pipes that are not stdin/stdout (the student's prints go to a log file):
one JSON line per message (the :mod:`.wire` protocol). Every message from the child
must carry this run's random nonce, or it is rejected.

Where the machine allows (see :func:`namespaces`), the child starts in new user, PID
and mount namespaces: it is the first process of its PID namespace, so when it dies
the kernel kills everything it started, and its folder is a tmpfs of ``QUOTA_MB``.
The child itself refuses to start processes (see confine.py). Everywhere, the grader
measures the folder while it waits and stops a child that fills it past the quota:
without the tmpfs that bound is the quota plus what a child writes in ``POLL`` seconds.

Each read waits at most until :attr:`Sandbox.deadline` (the grader sets one per
test). A child that overruns it, dies, or sends nonsense is killed; the next
message starts a fresh one (the student's cells run again), at most
``max_restarts`` times. Each cell runs under ``cell_s`` seconds of its own: the child
stops a cell that runs longer (an infinite loop in a test cell of the notebook) and
goes on with the next, and a fresh child skips the cells an earlier one had to stop.
A child that cannot even get through the student's cells before the deadline (a cell
that will not be stopped, a crash) is not restarted: every later request fails with
the same reason.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import importlib.util
import json
import os
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import course

from .wire import WireError

CHILD = Path(__file__).with_name("child.py")
MAX_REPLY = 64 * 1024 * 1024
QUOTA_MB = 64  # what a submission may write into its folder, in all
BLOCK = 4096  # each file or folder counts at least one block: many empty files fill it too
POLL = 0.05  # seconds between two looks at the folder while the grader waits


@functools.cache
def namespaces():
    """The command that runs a program in new user, PID and mount namespaces (``unshare``
    from util-linux), or ``[]`` where this machine allows none (a Docker container)."""
    unshare = shutil.which("unshare")
    if unshare is None:
        return []
    # --kill-child: should unshare itself die, its child (and so the namespace) dies too
    command = [unshare, "--user", "--map-root-user", "--pid", "--mount", "--fork", "--kill-child"]
    try:
        tried = subprocess.run([*command, "true"], capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return command if tried.returncode == 0 else []


def _disk_usage(folder, limit):
    """The bytes the files and folders under ``folder`` take (at least a ``BLOCK``
    each), counted until the total passes ``limit``: a million files cost no more."""
    total, folders = 0, [folder]
    while folders and total <= limit:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    total += max(entry.stat(follow_symlinks=False).st_blocks * 512, BLOCK)
                    if total > limit:
                        break
        except OSError:
            pass  # removed meanwhile, or the child is gone
    return total


def _children(pid):
    """The pids of the processes ``pid`` started (Linux's /proc; empty elsewhere)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as file:
            return [int(child) for child in file.read().split()]
    except OSError:
        return []


# where the grader finds the instructor notebooks when its ``course`` is an installed one
SOLUTIONS = "COURSE_SOLUTIONS"


# Libraries that would differentiate for the student (symbolically, by their own automatic
# differentiation, or numerically to the last digits), with the folder of each to hide
# ("" for the whole package): the exercises ask for derivatives, not for a library's.
DIFFERENTIATORS = {
    **dict.fromkeys(("sympy", "symengine", "mpmath", "autograd", "mygrad", "jax", "jaxlib"), ""),
    **dict.fromkeys(("torch", "functorch", "tensorflow", "keras", "tinygrad", "micrograd"), ""),
    **dict.fromkeys(("theano", "aesara", "pytensor", "casadi", "chainer", "dezero"), ""),
    **dict.fromkeys(("numdifftools", "findiff", "mxnet", "paddle"), ""),
    "scipy": "differentiate",  # (scipy.differentiate.derivative; the rest of scipy may be used)
}


def _hidden():
    """What a submission may not read: every copy of ``course`` on the path (the
    instructor notebooks hold the solutions), the folder of instructor notebooks the
    grader was pointed at (``$COURSE_SOLUTIONS``), scikit-learn's bundled datasets
    (the labels of the held-out images the grader evaluates on), and the libraries that
    differentiate (``DIFFERENTIATORS``, where installed: a sandbox can't even load them).
    Nothing is imported."""
    yield Path(course.__file__).resolve().parent
    if os.environ.get(SOLUTIONS):
        yield Path(os.environ[SOLUTIONS]).resolve()
    for entry in sys.path:
        if Path(entry or ".", "course", "exercises").is_dir():
            yield Path(entry or ".", "course").resolve()
    spec = importlib.util.find_spec("sklearn")
    for root in (spec.submodule_search_locations or []) if spec else []:
        yield Path(root, "datasets", "data").resolve()
    for name, part in DIFFERENTIATORS.items():
        spec = importlib.util.find_spec(name)
        if spec is None:
            continue
        for root in spec.submodule_search_locations or [spec.origin]:
            yield Path(root, part).resolve()


class SandboxError(WireError):
    """The sandbox could not answer: timeout, crash, memory, or a malformed reply."""


class Timeout(SandboxError):
    """The submission ran past its time limit."""


class Sandbox:
    """Runs ``cells`` (``{"kind": "cell" | "statement", "cells": [source, ...], "labels":
    [label, ...]}``, see :func:`~course.grader.core.load_submission`) in a child process,
    each cell ``cell_s`` seconds at most; :meth:`send` and :meth:`receive` carry messages.
    ``ops`` are teachgrad's built-in ops (by node name) whose calls the child notes.
    Use as a context manager."""

    def __init__(
        self,
        cells,
        names,
        *,
        memory_mb=2048,
        cpu_s=120,
        cell_s=10.0,
        max_restarts=2,
        seed=0,
        ops=(),
    ):
        self.cells, self.names, self.seed, self.ops = cells, list(names), seed, list(ops)
        self.memory_mb, self.cpu_s, self.cell_s = memory_mb, cpu_s, cell_s
        self.max_restarts = max_restarts
        self.deadline = time.monotonic() + 60
        self.proc = None
        self.starts = 0
        self.broken = None  # why the student's cells cannot run at all, once known
        self.defined, self.errors = [], []
        self.stopped = set()  # the pieces of code a child stopped: the next child skips them
        self.generation = 0  # bumped on each start: outputs of an older child are stale

    # ------------------------------------------------------------------ lifecycle

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def ensure_started(self):
        """Start the child if none is running; raise SandboxError when that is impossible."""
        if self.proc is not None:
            return
        if self.broken:
            raise SandboxError(self.broken)
        if self.starts > self.max_restarts:
            raise SandboxError("the submission crashed or timed out too many times")
        self.starts += 1
        self.generation += 1
        try:
            self._start()
            ready = self._read_message()
        except SandboxError as exc:
            self.close()
            self.broken = f"running your code failed before grading could start: {exc}"
            raise SandboxError(self.broken) from None
        if not ready.get("ready") or not isinstance(ready.get("defined"), list):
            self.close()
            self.broken = "the submission's process sent a malformed first reply"
            raise SandboxError(self.broken)
        self.defined = [n for n in ready["defined"] if n in self.names]
        self.errors = [str(e)[:400] for e in ready.get("errors", [])][:50]
        stopped = ready.get("stopped")
        if isinstance(stopped, list):  # numbers of pieces of code, from an untrusted child
            self.stopped |= {n for n in stopped[:1000] if type(n) is int}

    def _start(self):
        self.workdir = tempfile.mkdtemp(prefix="teachgrad-sandbox-")
        Path(self.workdir, "cells.json").write_text(json.dumps(self.cells), encoding="utf-8")
        prefix = namespaces()
        self.namespaced = bool(prefix)
        request_r, request_w = os.pipe()
        reply_r, reply_w = os.pipe()
        env = {
            "PATH": os.defpath,
            "HOME": self.workdir,
            "TMPDIR": self.workdir,
            "LANG": "C.UTF-8",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
            "MPLBACKEND": "Agg",
        }
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - outside the folder's quota
        try:
            self.proc = subprocess.Popen(
                [*prefix, sys.executable, "-I", str(CHILD), str(request_r), str(reply_w)],
                cwd=self.workdir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self.log,
                stderr=subprocess.STDOUT,
                pass_fds=(request_r, reply_w),
                start_new_session=True,
                preexec_fn=self._limits,
            )
        finally:
            os.close(request_r)
            os.close(reply_w)
        self.request_fd, self.reply_fd = request_w, reply_r
        os.set_blocking(self.request_fd, False)
        self.buffer = b""
        self.nonce = secrets.token_hex(16)
        denied = [str(p) for p in _hidden()]
        hello = {"nonce": self.nonce, "names": self.names, "denied": denied, "seed": self.seed}
        hello.update(cell_s=self.cell_s, skip=sorted(self.stopped), ops=self.ops)
        if self.namespaced:  # the folder the child sees is a tmpfs in its mount namespace
            hello["tmpfs"] = {"size": QUOTA_MB << 20, "files": (QUOTA_MB << 20) // BLOCK}
            self.folder = f"/proc/{self.proc.pid}/root{self.workdir}"
        else:
            self.folder = self.workdir
        self._write(json.dumps(hello).encode() + b"\n")

    def _limits(self):  # runs in the child between fork and exec
        import resource

        memory = self.memory_mb * 1024 * 1024
        for limit, value in (
            (resource.RLIMIT_AS, memory),
            (resource.RLIMIT_CPU, self.cpu_s),
            (resource.RLIMIT_FSIZE, 16 * 1024 * 1024),
            (resource.RLIMIT_CORE, 0),
        ):
            with contextlib.suppress(ValueError, OSError):
                resource.setrlimit(limit, (value, value))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writing too much fails, not kills

    def kill(self):
        """Stop the child, and every process it started, and forget it: its whole PID
        namespace if it has one, else its whole process group."""
        if self.proc is None:
            return
        if not self._end_namespace():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for fd in (self.request_fd, self.reply_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self.proc = None

    close = kill

    def _end_namespace(self):
        """Kill the first process of the child's PID namespace, so that the kernel kills
        the rest; ``unshare`` exits once they are all gone. Returns whether it did."""
        children = _children(self.proc.pid) if self.namespaced else []
        for child in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)
        if not children:
            return False
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return False
        return True

    # ------------------------------------------------------------------ talking

    def send(self, message):
        """Send one message (a dict) to the child, starting it first if need be."""
        self.ensure_started()
        try:
            self._write(json.dumps(message).encode() + b"\n")
        except SandboxError:
            self.kill()
            raise

    def receive(self):
        """The child's next message (a dict carrying this run's nonce), before the deadline."""
        try:
            return self._read_message()
        except SandboxError:
            self.kill()
            raise

    def _remaining(self):
        """How long to wait now: until the deadline, or until the next look at the folder."""
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise Timeout("timed out (an infinite loop, or far too slow?)")
        self._check_quota()
        return min(left, POLL)

    def _check_quota(self):
        """Stop here when the child's folder holds more than its quota."""
        used = _disk_usage(self.folder, QUOTA_MB << 20) / 2**20
        if used > QUOTA_MB:
            raise SandboxError(
                f"the submission wrote {used:.1f} MB into its folder, over its {QUOTA_MB} MB quota"
            )

    def _write(self, data):
        while data:
            _, ready, _ = select.select([], [self.request_fd], [], self._remaining())
            if not ready:
                continue
            try:
                data = data[os.write(self.request_fd, data) :]
            except OSError as exc:
                if exc.errno != errno.EAGAIN:
                    raise SandboxError(self._death()) from None

    def _read_message(self):
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.reply_fd], [], [], self._remaining())
            if not ready:
                continue
            chunk = os.read(self.reply_fd, 1 << 20)
            if not chunk:
                raise SandboxError(self._death())
            self.buffer += chunk
            if len(self.buffer) > MAX_REPLY:
                raise SandboxError("the submission sent a reply that is far too large")
        self._check_quota()  # what the child wrote before it answered
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):
            raise SandboxError("the submission's process sent a malformed message") from None
        if not isinstance(message, dict) or message.get("nonce") != self.nonce:
            raise SandboxError("the submission's process sent a message without this run's nonce")
        return message

    def _death(self):
        try:
            code = self.proc.wait(timeout=min(2.0, max(0.1, self.deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            return "the submission's process closed its channel to the grader"
        if code < 0:
            name = signal.Signals(-code).name
            hint = " (time or memory limit?)" if name in ("SIGKILL", "SIGXCPU") else ""
            return f"the submission's process was killed by {name}{hint}"
        return f"the submission's process exited (status {code}) before grading finished"

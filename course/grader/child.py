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
3. runs the student's cells one by one (an error in one cell does not stop the next),
4. answers the grader's requests with a :class:`wire.Peer` on the student's namespace:
   calls, attribute reads and operators on the student's objects, vjps of their outputs.

It only ever sends raw values back; every verdict is computed by the grader. A student
can rewrite anything in this process, including this file's functions: that only changes
which numbers come back, which the grader checks against its own reference solution and
its own finite differences. Every line it sends carries the run's nonce.
"""

from __future__ import annotations

import json
import os
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


def _split_statements(source, filename):
    """A .py file's top-level statements as separate chunks, so one error loses one."""
    import ast

    tree = ast.parse(source, filename)
    return [ast.Module(body=[node], type_ignores=[]) for node in tree.body]


def _run_cells(cells, ns):
    """Run each cell (a notebook cell, or a .py file split into statements); collect errors."""
    errors = []
    for i, cell in enumerate(cells["cells"]):
        filename = f"<{cells['kind']} {i + 1}>"
        try:
            if cells["kind"] == "statement":
                chunks = _split_statements(cell, filename)
            else:
                chunks = [compile(cell, filename, "exec")]
        except SyntaxError as exc:
            errors.append(f"{filename}: SyntaxError: {exc}")
            continue
        for chunk in chunks:
            try:
                code = chunk if not hasattr(chunk, "body") else compile(chunk, filename, "exec")
                exec(code, ns)
            except BaseException as exc:  # noqa: BLE001 - SystemExit included: keep going
                errors.append(f"{filename}: {type(exc).__name__}: {str(exc)[:300]}")
    return errors


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


def _peer(wire, ns, requests, replies, nonce):
    """The sandbox's end of the wire: serves the student's names and the builtins."""

    class StudentPeer(wire.Peer):
        namespace = ns
        builtins = wire.BUILTINS
        shielded = BaseException  # SystemExit from the student's code is an answer too
        fatal = ()  # and so is a malformed request: the grader decides what it means

        def send(self, message):
            replies.write(json.dumps(dict(message, nonce=nonce)).encode() + b"\n")
            replies.flush()

        def receive(self):
            line = requests.readline()
            if not line:
                raise SystemExit(0)  # the grader hung up
            return json.loads(line)

    return StudentPeer()


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
    workdir = os.getcwd()
    readable = _readable(workdir)
    landlock = _load("landlock")
    landlock.restrict(landlock.beneath(readable, hello["denied"]), [workdir, "/dev/null"])
    confine.no_new_processes()
    _install_stubs()
    _install_guard(workdir, readable, hello["denied"])

    _seed(int(hello.get("seed", 0)))
    ns = {"__name__": "__main__"}
    errors = _run_cells(cells, ns)
    peer = _peer(wire, ns, requests, replies, hello["nonce"])
    defined = [name for name in hello["names"] if name in ns]
    peer.post({"ready": True, "defined": defined, "errors": errors[:50]})
    peer.serve_forever()


if __name__ == "__main__":
    main(sys.argv)

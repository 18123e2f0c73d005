"""The program that runs inside the sandbox: a student's code, then a tiny RPC server.

The grader starts it as ``python -I child.py REQUEST_FD REPLY_FD`` in an empty
temporary directory holding ``cells.json`` (the submission's code cells). It

1. reads a hello line (the run's nonce and the names the grader wants),
2. imports numpy and teachgrad, puts stubs in place of ``course`` and ``viz`` (the
   student's notebook imports them, but grading must never load the real ``course``,
   which holds the instructor's solutions), and installs an audit hook that refuses
   to read outside the sandbox's allowed roots, to write outside the working
   directory, to start processes, to use ctypes, to open sockets or to signal
   other processes,
3. runs the student's cells one by one (an error in one cell does not stop the next),
4. answers requests: call a student object (``["Square", "apply"]``) on the tensors
   the grader sent, or backpropagate through a returned output (``vjp``).

It only ever sends raw numbers back; every verdict is computed by the grader. A
student can rewrite anything in this process, including this file's functions: that
only changes which numbers come back, which the grader checks against its own
reference solution and its own finite differences.

This module deliberately imports nothing from ``course`` so that it runs standalone.
The grader imports the codec (:func:`pack_array`, :func:`unpack_array`) from it.

>>> import numpy as np
>>> a = np.arange(6.0).reshape(2, 3)
>>> bool((unpack_array(pack_array(a)) == a).all())
True
"""

from __future__ import annotations

import base64
import json
import os
import sys

DTYPES = ("float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool")
MAX_ELEMENTS = 10_000_000


def pack_array(array):
    """A NumPy array as a JSON-ready dict: ``{"A": base64 bytes, "dtype", "shape"}``."""
    import numpy as np

    array = np.asarray(array).copy(order="C")  # keeps 0-d arrays 0-d
    if array.dtype.name not in DTYPES:
        array = array.astype(np.float64)
    data = base64.b64encode(array.tobytes()).decode("ascii")
    return {"A": data, "dtype": array.dtype.name, "shape": list(array.shape)}


def unpack_array(packed):
    """The array :func:`pack_array` packed; checks dtype, shape and size (untrusted input)."""
    import numpy as np

    dtype, shape = packed["dtype"], packed["shape"]
    if dtype not in DTYPES or not isinstance(shape, list) or len(shape) > 32:
        raise ValueError(f"bad array header: dtype={dtype!r} shape={shape!r}")
    if not all(isinstance(n, int) and 0 <= n <= MAX_ELEMENTS for n in shape):
        raise ValueError(f"bad array shape {shape!r}")
    data = base64.b64decode(packed["A"], validate=True)
    count = 1
    for n in shape:
        count *= n
    if count > MAX_ELEMENTS or len(data) != count * np.dtype(dtype).itemsize:
        raise ValueError(f"array data does not match shape {shape} and dtype {dtype}")
    return np.frombuffer(data, dtype=dtype).reshape(shape).copy()


# ------------------------------------------------------------------ inside the sandbox


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


def _install_guard(workdir, denied):
    """The audit hook: the sandbox's file, process, ctypes, socket and signal policy."""
    import numpy

    import teachgrad

    readable = {
        workdir,
        sys.prefix,
        sys.base_prefix,
        sys.exec_prefix,
        os.path.dirname(numpy.__file__),
        os.path.dirname(teachgrad.__file__),
        "/usr",
        "/lib",
        "/lib64",
        "/etc",
        "/dev/null",
        "/dev/urandom",
        "/proc/self",
        "/sys",
    }
    readable = {_real(p) for p in readable}
    denied = {_real(p) for p in denied}
    writable = {_real(workdir), "/dev/null"}
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
        elif event.startswith(forbidden) or event == "import" and args[0] in ("_posixsubprocess",):
            deny(event)

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


class _Server:
    """Answers the grader's requests on the student's namespace."""

    def __init__(self, ns):
        import teachgrad as tg

        self.tg, self.ns, self.outputs = tg, ns, {}

    def decode(self, value):
        tg = self.tg
        if isinstance(value, dict):
            if "A" in value:
                array = unpack_array(value)
                return (
                    tg.tensor(array, requires_grad=value.get("rg", False))
                    if "T" in value
                    else array
                )
            if "C" in value:
                return self.outputs[value["C"]][0].grad_fn
            if "L" in value:
                return tuple(self.decode(v) for v in value["L"])
            if "S" in value:
                return value["S"]
            raise ValueError(f"unknown value {sorted(value)}")
        return value

    def encode(self, value, inputs):
        tg = self.tg
        if isinstance(value, tg.Tensor):
            packed = pack_array(value.detach().numpy())
            packed["T"] = True
            if value.grad_fn is not None:
                handle = len(self.outputs)
                self.outputs[handle] = (value, inputs)
                packed["h"] = handle
            return packed
        if value is None or isinstance(value, bool | int | float):
            return value
        if isinstance(value, str):
            return {"S": value[:1000]}
        if isinstance(value, tuple | list):
            return {"L": [self.encode(v, inputs) for v in value]}
        return {"O": type(value).__name__}

    def handle(self, request):
        tg = self.tg
        if request["op"] == "call":
            target = self.ns[request["path"][0]]
            for attr in request["path"][1:]:
                target = getattr(target, attr)
            args = [self.decode(a) for a in request["args"]]
            kwargs = {k: self.decode(v) for k, v in request["kwargs"].items()}
            inputs = [a for a in args if isinstance(a, tg.Tensor) and a.requires_grad]
            with tg.set_grad_enabled(bool(request["grad"])):
                return self.encode(target(*args, **kwargs), inputs)
        if request["op"] == "vjp":
            output, inputs = self.outputs[request["h"]]
            grad = self.decode(request["grad"])
            grads = tg.autograd.grad(output, inputs, grad, retain_graph=True, allow_unused=True)
            return self.encode(list(grads), [])
        raise ValueError(f"unknown op {request['op']!r}")


def main(argv):
    requests = os.fdopen(int(argv[1]), "rb")
    replies = os.fdopen(int(argv[2]), "wb")
    hello = json.loads(requests.readline())
    nonce = hello["nonce"]
    with open("cells.json", encoding="utf-8") as file:
        cells = json.load(file)
    os.remove("cells.json")
    sys.dont_write_bytecode = True
    import numpy  # noqa: F401 - loaded before the guard is installed

    import teachgrad  # noqa: F401

    _install_stubs()
    _install_guard(os.getcwd(), hello["denied"])

    def send(seq, message):
        message.update(nonce=nonce, seq=seq)
        replies.write(json.dumps(message).encode() + b"\n")
        replies.flush()

    ns = {"__name__": "__main__"}
    errors = _run_cells(cells, ns)
    defined = [name for name in hello["names"] if name in ns]
    send(0, {"ready": True, "defined": defined, "errors": errors[:50]})
    server = _Server(ns)
    for line in requests:
        request = json.loads(line)
        try:
            send(request["seq"], {"value": server.handle(request)})
        except BaseException as exc:  # noqa: BLE001 - report everything, keep serving
            send(request["seq"], {"error": type(exc).__name__, "message": str(exc)[:2000]})


if __name__ == "__main__":
    main(sys.argv)

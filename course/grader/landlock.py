"""Kernel-enforced file access for the sandbox: Linux's Landlock, through ctypes.

The audit hook in :mod:`.child` is Python, and Python code can rewrite it (a closure's
cells, a function's ``__code__``). Landlock rules live in the kernel: once a process has
restricted itself, neither it nor any process it starts can lift them. The sandbox
restricts itself after loading numpy and teachgrad and before the student's first line:

- files may be read only beneath the allowed roots, with the hidden paths (every copy
  of ``course``, bundled datasets) carved out of them -- see :func:`beneath`;
- files may be written only in the sandbox's working directory;
- nothing may be executed (no ``execve``: no subprocess can run);
- no TCP connection may be made (ABI 4+), no signal sent outside the sandbox (ABI 6+).

Landlock needs Linux 5.13+ with the LSM enabled (most distributions). Without it,
:func:`restrict` returns 0 and only the audit hook remains; the grader warns.

This module uses only the standard library: the sandbox loads it by its file path.
"""

from __future__ import annotations

import ctypes
import os
import sys

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # one numbering on every arch
_GET_VERSION = 1  # landlock_create_ruleset flag: return the ABI version
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# filesystem rights; ABI 1 has the first 13, later ABIs add one each
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
FILE_RIGHTS = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # what a file rule may hold
BIND_TCP, CONNECT_TCP = 1 << 0, 1 << 1  # network rights (ABI 4)
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1  # scopes (ABI 6)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _syscall(libc, number, *args):
    result = libc.syscall(ctypes.c_long(number), *args)
    if result < 0:
        error = ctypes.get_errno()
        raise OSError(error, f"Landlock system call {number}: {os.strerror(error)}")
    return result


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi():
    """The kernel's Landlock ABI version; 0 when there is no Landlock here."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        return _syscall(_libc(), _CREATE_RULESET, None, ctypes.c_size_t(0), _GET_VERSION)
    except OSError:
        return 0


def available():
    """Whether the sandbox's file rules are enforced by the kernel on this machine."""
    return abi() >= 1


def beneath(roots, hidden):
    """``roots`` (real paths) with every ``hidden`` path carved out: a root that holds a
    hidden path is replaced by its entries, recursively, leaving the hidden ones out.

    >>> import tempfile, pathlib
    >>> top = pathlib.Path(tempfile.mkdtemp())
    >>> for name in ("a/secret", "a/public", "b"):
    ...     (top / name).mkdir(parents=True)
    >>> sorted(pathlib.Path(p).relative_to(top).as_posix() for p in beneath([top], [top / "a/secret"]))
    ['a/public', 'b']
    """
    hidden = [os.path.realpath(h) for h in hidden]
    kept = []
    for root in map(os.path.realpath, roots):
        if any(_inside(root, h) for h in hidden):
            continue
        inner = [h for h in hidden if _inside(h, root)]
        if not inner:
            kept.append(root)
        elif os.path.isdir(root):
            kept += beneath([os.path.join(root, e) for e in sorted(os.listdir(root))], inner)
    return kept


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def restrict(readable, writable):
    """Allow this process (and its children) to read only beneath ``readable`` and to
    write only beneath ``writable``, for good. Returns the ABI version now enforced, or
    0 when the kernel has no Landlock (then nothing changed)."""
    version = abi()
    if version < 1:
        return 0
    libc = _libc()
    fs = (1 << 13) - 1
    fs |= (REFER if version >= 2 else 0) | (TRUNCATE if version >= 3 else 0)
    fs |= IOCTL_DEV if version >= 5 else 0
    attr = _RulesetAttr(
        handled_access_fs=fs,
        handled_access_net=(BIND_TCP | CONNECT_TCP) if version >= 4 else 0,
        scoped=(SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if version >= 6 else 0,
    )
    size = ctypes.c_size_t(ctypes.sizeof(attr))  # an older kernel accepts zeroed extra fields
    ruleset = _syscall(libc, _CREATE_RULESET, ctypes.byref(attr), size, 0)
    try:
        for path in readable:
            _allow(libc, ruleset, path, (READ_FILE | READ_DIR) & fs)
        for path in writable:
            _allow(libc, ruleset, path, fs & ~EXECUTE)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        _syscall(libc, _RESTRICT_SELF, ruleset, 0)
    finally:
        os.close(ruleset)
    return version


def _allow(libc, ruleset, path, access):
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a root this machine does not have
    try:
        if not os.path.isdir(path):
            access &= FILE_RIGHTS
        rule = _PathBeneathAttr(allowed_access=access, parent_fd=fd)
        _syscall(libc, _ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(rule), 0)
    finally:
        os.close(fd)

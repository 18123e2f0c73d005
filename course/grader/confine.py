"""The sandbox's other kernel limits, besides Landlock's: no new process, a folder quota.

- :func:`no_new_processes` installs a seccomp filter that refuses every system call
  that starts a process (``fork``, ``vfork``, a ``clone`` that is not a thread), and
  sets ``RLIMIT_NPROC``. Landlock already forbids running a program; this forbids a
  copy of the sandbox itself, so no process can outlive it and no fork bomb can start,
  whatever the student's code does to the audit hook. ``RLIMIT_NPROC`` alone would not
  do: the kernel does not enforce it for root, and a grader in a container is root.
- :func:`mount_quota` puts a size-limited tmpfs on the sandbox's folder: writing past
  it fails with ``ENOSPC``. It needs a mount namespace of the sandbox's own (the
  grader starts it in one where the machine allows, see sandbox.py).

Once installed, neither can be lifted by the process or by anything it starts. Like
landlock.py, this module uses only the standard library: the sandbox loads it by path.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import struct

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_ALLOW, _ERRNO = 0x7FFF0000, 0x00050000  # seccomp's verdicts; an errno is or-ed in
_CLONE_THREAD = 0x00010000
_X32 = 0x40000000  # x86-64's other system call numbering
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8  # mount flags

# per architecture: the AUDIT_ARCH a system call must come from, and the calls that
# start a process (clone3 passes its flags in memory, out of the filter's sight)
SYSCALLS = {
    "x86_64": (0xC000003E, {"clone": 56, "fork": 57, "vfork": 58, "clone3": 435}),
    "aarch64": (0xC00000B7, {"clone": 220, "clone3": 435}),
}

# classic BPF opcodes: load a word of seccomp_data, jump if equal / >= / any bit set, return
_LOAD, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ARCH, _NR, _ARG0 = 4, 0, 16  # offsets in seccomp_data (arg0's low half on little-endian)


def _filter(arch, calls):
    """The seccomp program, as bytes. It is written as (opcode, label if true, label if
    false, operand); a label names one of the verdicts at the end (None: go on)."""
    program = [
        (_LOAD, None, None, _ARCH),
        (_JEQ, None, "deny", arch),  # another ABI's system call (32-bit): refused
        (_LOAD, None, None, _NR),
        (_JGE, "deny", None, _X32),  # x32's: refused
        (_JEQ, "nosys", None, calls["clone3"]),  # "no clone3": the C library uses clone
        *[(_JEQ, "deny", None, calls[name]) for name in ("fork", "vfork") if name in calls],
        (_JEQ, None, "allow", calls["clone"]),
        (_LOAD, None, None, _ARG0),  # clone's flags
        (_JSET, "allow", "deny", _CLONE_THREAD),  # a thread is fine, a process is not
    ]
    verdicts = {"allow": _ALLOW, "deny": _ERRNO | errno.EPERM, "nosys": _ERRNO | errno.ENOSYS}
    where = {label: len(program) + i for i, label in enumerate(verdicts)}

    def jump(label, at):
        return 0 if label is None else where[label] - at - 1

    code = [(op, jump(t, i), jump(f, i), k) for i, (op, t, f, k) in enumerate(program)]
    code += [(_RET, 0, 0, verdict) for verdict in verdicts.values()]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in code)


def no_new_processes(max_processes=32):
    """Refuse, for good, every new process (threads stay allowed); returns whether the
    filter is in place (False on a kernel or an architecture without it)."""
    hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
    if hard != resource.RLIM_INFINITY:
        max_processes = min(max_processes, hard)
    resource.setrlimit(resource.RLIMIT_NPROC, (max_processes, max_processes))
    if platform.system() != "Linux" or platform.machine() not in SYSCALLS:
        return False
    code = _filter(*SYSCALLS[platform.machine()])
    buffer = ctypes.create_string_buffer(code, len(code))
    program = struct.pack("HP", len(code) // 8, ctypes.addressof(buffer))  # sock_fprog
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    return libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, program, 0, 0) == 0


def mount_quota(folder, size, files):
    """Mount a tmpfs of ``size`` bytes and at most ``files`` files and folders on
    ``folder`` (the current directory) and move into it; returns whether it could."""
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={size},nr_inodes={files},mode=700".encode()
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    if libc.mount(b"tmpfs", os.fsencode(folder), b"tmpfs", flags, options) != 0:
        return False
    os.chdir(folder)
    return True

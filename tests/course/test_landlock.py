"""course.grader.landlock: what a restricted process can no longer do (in a subprocess:
the rules cannot be lifted, so they must not land on the test runner)."""

import sys
import textwrap

import pytest

from course.grader import landlock
from tests.run import run

PROBE = """
import socket, subprocess, sys
sys.path.insert(0, {grader!r})
import landlock

allowed = [sys.base_prefix, sys.prefix, "/usr", "/lib", "/lib64", "/etc", {tree!r}]
assert landlock.restrict(landlock.beneath(allowed, [{hidden!r}]), [{work!r}]) >= 1
attempts = {{
    "read public": lambda: open({tree!r} + "/public.txt").read(),
    "read outside": lambda: open({outside!r}).read(),
    "read hidden": lambda: open({hidden!r} + "/secret").read(),
    "write outside": lambda: open({outside!r}, "a"),
    "run a program": lambda: subprocess.run(["/bin/true"]),
    "connect": lambda: socket.create_connection(("127.0.0.1", 9), timeout=1),
}}
for name, attempt in attempts.items():
    try:
        attempt()
        print(name, "allowed")
    except (PermissionError, ConnectionRefusedError) as err:
        print(name, "refused" if isinstance(err, PermissionError) else "reached")
open({work!r} + "/ok", "w").write("written")
print("stdlib", __import__("json").dumps([1]))
"""


@pytest.mark.skipif(not landlock.available(), reason="the kernel has no Landlock")
def test_a_restricted_process_reads_writes_and_runs_only_what_it_may(tmp_path):
    work, tree, outside = tmp_path / "work", tmp_path / "tree", tmp_path / "outside"
    hidden = tree / "hidden"  # inside an allowed root, carved out of it
    work.mkdir()
    hidden.mkdir(parents=True)
    (hidden / "secret").write_text("solution")
    (tree / "public.txt").write_text("notes")
    outside.write_text("private")
    code = PROBE.format(
        grader=str(landlock.__file__).rsplit("/", 1)[0],
        tree=str(tree),
        hidden=str(hidden),
        work=str(work),
        outside=str(outside),
    )
    lines = run([sys.executable, "-c", textwrap.dedent(code)]).stdout.splitlines()
    assert lines[:5] == [
        "read public allowed",
        "read outside refused",
        "read hidden refused",
        "write outside refused",
        "run a program refused",
    ]
    if landlock.abi() >= 4:
        assert lines[5] == "connect refused"
    assert (work / "ok").read_text() == "written" and lines[-1] == "stdlib [1]"

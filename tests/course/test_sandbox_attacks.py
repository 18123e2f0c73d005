"""Attacks on the grader beyond wrong answers: what it reads as a submission (links,
FIFOs), processes left running, a disk filled, text that breaks the reports."""

import csv
import io
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import textwrap
import threading
import time
import xml.etree.ElementTree as ET
import zipfile

import pytest

from course.grade import main
from course.grader import sandbox
from tests.run import run

from .conftest import EXERCISES
from .test_grader import grade, source

INSTRUCTOR = EXERCISES / "02_pointwise" / "instructor.ipynb"
linux_only = pytest.mark.skipif(not os.path.isdir("/proc"), reason="needs Linux's /proc")


@pytest.fixture(params=["namespaces", "no namespaces"])
def isolation(request, monkeypatch):
    """Each sandbox test runs twice: with the user, PID and mount namespaces where this
    machine allows them, and as on a machine that allows none (a Docker container)."""
    if request.param == "namespaces" and not sandbox.namespaces():
        pytest.skip("this machine allows no namespaces (unshare)")
    if request.param == "no namespaces":
        monkeypatch.setattr(sandbox, "namespaces", lambda: [])
    return request.param


# ------------------------------------------------------------ 1. links and special files


def test_a_link_to_the_solution_or_a_fifo_is_not_a_submission(tmp_path):
    """Only a regular file, reached through no link, is read: a link to the instructor
    notebook (or one in a linked folder) and a FIFO score 0 and say why; a copy of
    the solution keeps its full score."""
    shutil.copy(INSTRUCTOR, tmp_path / "honest.ipynb")
    (tmp_path / "link.ipynb").symlink_to(INSTRUCTOR)
    (tmp_path / "linked").symlink_to(INSTRUCTOR.parent)
    os.mkfifo(tmp_path / "fifo.ipynb")
    files = ["honest.ipynb", "link.ipynb", "linked/instructor.ipynb", "fifo.ipynb"]
    out = tmp_path / "out"
    args = [*(str(tmp_path / f) for f in files), "--exercise", "02", "--out", str(out)]
    assert _finishes(lambda: main(args), tmp_path / "fifo.ipynb") == 0

    def graded(ident):
        return json.loads((out / ident / "results.json").read_text())

    assert graded("honest")["score"] == 10
    for ident in ("link", "instructor"):
        assert graded(ident)["score"] == 0
        assert "symbolic link" in graded(ident)["tests"][0]["output"]
    assert graded("fifo")["score"] == 0
    assert "not a regular file" in graded("fifo")["tests"][0]["output"]


def _finishes(call, fifo, seconds=30):
    """``call()``'s value; fails (instead of hanging) when it waits on ``fifo``'s writer."""
    answer = []
    worker = threading.Thread(target=lambda: answer.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # let the reader go
        worker.join()
        pytest.fail("grading waited for a writer on the FIFO")
    return answer[0]


def test_the_gradescope_bundle_refuses_a_link_to_the_solution(tmp_path):
    """run_autograder grades what the student uploaded: a link is refused, not followed."""
    from course.gradescope import build

    root = tmp_path / "autograder"
    build("02", tmp_path / "autograder.zip")
    with zipfile.ZipFile(tmp_path / "autograder.zip") as bundle:
        bundle.extract("run_autograder", root / "source")
    (root / "submission").mkdir()
    (root / "submission" / "answer.ipynb").symlink_to(INSTRUCTOR)
    env = {"PATH": "/usr/bin:/bin", "AUTOGRADER": str(root), "PYTHON": sys.executable}
    run(["bash", root / "source" / "run_autograder"], env=env)
    results = json.loads((root / "results" / "results.json").read_text())
    assert results["score"] == 0
    assert "symbolic link" in results["tests"][0]["output"]


# ------------------------------------------------------------ 2. processes

FORKS = """
    import gc, os, time

    for hook in [f for f in gc.get_objects() if getattr(f, "__name__", "") == "hook"]:
        for cell in hook.__closure__ or ():
            if isinstance(cell.cell_contents, tuple):
                cell.cell_contents = ()  # the audit hook forbids nothing any more
    os.mkdir({mark!r})
    os.chdir({mark!r})  # every process started from here on is marked by its folder
    leader = os.getpid()
    for _ in range(3):  # processes that leave the sandbox's session and linger
        try:
            if os.fork() == 0:
                os.setsid()
                time.sleep(60)
                os._exit(0)
        except OSError:
            pass
    for _ in range(5):  # a small fork bomb: at most 2**5 processes
        try:
            os.fork()
        except OSError:
            break
    if os.getpid() != leader:
        time.sleep(60)
        os._exit(0)
"""


def _marked(mark):
    """The pids of living processes whose working folder's name is ``mark``."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                dead = stat.read().rsplit(")", 1)[1].split()[0] in "ZX"
            if mark in os.readlink(f"/proc/{pid}/cwd") and not dead:
                found.append(int(pid))
        except OSError:
            pass  # gone meanwhile, or not ours to look at
    return found


@linux_only
def test_no_process_a_submission_starts_outlives_its_grading(tmp_path, isolation):
    """A submission that disarms the audit hook and forks (processes in a session of
    their own, a small fork bomb) leaves nothing running, and the next one is graded
    as usual."""
    mark = f"teachgrad-forks-{os.getpid()}-{time.monotonic_ns()}"
    code = source("02_pointwise") + textwrap.dedent(FORKS.format(mark=mark))
    try:
        start = time.monotonic()
        grade(tmp_path, code)
        assert time.monotonic() - start < 30
        assert _marked(mark) == []
        start = time.monotonic()
        assert grade(tmp_path, source("02_pointwise"))[0] == 10
        assert time.monotonic() - start < 15
    finally:
        for pid in _marked(mark):  # what an unfixed grader leaves behind
            os.kill(pid, signal.SIGKILL)


# ------------------------------------------------------------ 3. disk

FILL = """
        for i in range(40):  # 40 files of 50 MB: 2 GB
            try:
                with open(f"fill{i}", "wb") as file:
                    for _ in range(50):
                        file.write(bytes(2**20))
            except OSError:
                pass  # too large a file, or a full folder: try the next one
        return s * (1 - s) * grad"""


@linux_only
def test_filling_the_disk_stops_at_the_quota(tmp_path, isolation, monkeypatch):
    """A backward that writes 2 GB is stopped at the folder's quota: that test (and the
    hidden one, which calls it again) scores 0 and says why; the folder is removed."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    code = source("02_pointwise", replace=[("\n        return s * (1 - s) * grad", FILL)])
    start = time.monotonic()
    score, _, results = grade(tmp_path, code)
    assert time.monotonic() - start < 30
    assert score == 10 - 3 - 1
    output = results["test_sigmoid"].output
    stopped = re.search(r"wrote ([\d.]+) MB into its folder, over its (\d+) MB quota", output)
    assert stopped, output
    assert float(stopped[1]) < 4 * int(stopped[2])
    assert list((tmp_path / "tmp").iterdir()) == []
    assert grade(tmp_path, source("02_pointwise"))[0] == 10


# ------------------------------------------------------------ 4. text from a submission

FORGERY = "\x1b[2K\rgraded 1/1: honest.py 10/10\x00\x0c\ud800\x85"

RAISE = """
        raise RuntimeError({forgery!r})"""


def test_text_from_a_submission_cannot_break_reports_or_the_terminal(tmp_path, capsys):
    """Control characters and lone surrogates in an exception's message and in a file
    name reach results.json, junit.xml, summary.csv and the progress lines as visible
    escapes: every file parses, and no escape code reaches the terminal."""
    name = "evil\x1b[2K\rgraded 1-1 ok 10-10\x0c.py"
    code = source("02_pointwise", replace=[("return 2 * x * grad", RAISE.format(forgery=FORGERY))])
    (tmp_path / name).write_text(code, encoding="utf-8")
    out = tmp_path / "out"
    assert main([str(tmp_path / name), "--exercise", "02", "--out", str(out), "--seed", "0"]) == 0
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\r" not in err
    (folder,) = [f for f in out.iterdir() if f.is_dir()]
    results = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    assert results["score"] == 10 - 2 - 1
    square = next(t for t in results["tests"] if t["name"] == "test_square")["output"]
    assert "\\x1b[2K\\rgraded" in square and "\\ud800\\x85" in square
    suite = ET.parse(folder / "junit.xml").getroot()
    assert "\\x1b" in suite.get("name") and "\\x00" in suite.find(".//failure").text
    text = (out / "summary.csv").read_text(encoding="utf-8")
    assert not any(ord(c) < 32 and c not in "\r\n" for c in text)
    rows = list(csv.reader(io.StringIO(text)))
    assert len(rows) == 2 and "\\x1b" in rows[1][1]

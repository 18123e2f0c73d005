"""``python -m course.grade SUBMISSIONS... --exercise NAME --out DIR [--jobs N]``.

Grades each submission (a notebook or a .py file) in its own sandbox, ``--jobs`` at a
time (worker processes), with a progress bar on stderr (one line per submission when
stderr is not a terminal). The files are written once every sandbox has finished,
so no submission's process is still running while results are written.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from course import exercises
from course.exercises import Result

from . import landlock
from .core import Graded, grade_submission
from .report import printable, write_all


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.grade", description=__doc__)
    parser.add_argument("submissions", nargs="+", help="notebooks (.ipynb) or .py files")
    parser.add_argument("--exercise", required=True, help="e.g. 06_softmax (or 04, softmax)")
    parser.add_argument("--out", required=True, help="folder for the results")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per submission")
    parser.add_argument(
        "--test-timeout", type=float, default=10.0, help="seconds per test, and per cell"
    )
    parser.add_argument(
        "--startup-timeout", type=float, default=30.0, help="seconds to run the cells"
    )
    parser.add_argument("--memory-mb", type=int, default=2048, help="address space limit")
    parser.add_argument("--seed", type=int, default=None, help="fix the probe's inputs")
    parser.add_argument(
        "--within",
        help="the folder the students' files are in: no symbolic link below it is followed "
        "(default: the folder that holds all the submissions)",
    )
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    exercise = exercises.path(args.exercise).name
    options = dict(
        timeout=args.timeout,
        test_timeout=args.test_timeout,
        startup_timeout=args.startup_timeout,
        memory_mb=args.memory_mb,
        seed=args.seed,
        within=args.within or _common_folder(args.submissions),
    )
    if not landlock.available():
        print(
            "warning: this kernel has no Landlock, so the sandbox's file rules are only a "
            "Python audit hook, which a determined submission can disable. Grade on Linux "
            "5.13+ (Landlock enabled) to keep the solutions out of reach.",
            file=sys.stderr,
        )
    progress = Progress(len(args.submissions))
    graded = [None] * len(args.submissions)
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = {
            pool.submit(grade_submission, path, exercise, **options): i
            for i, path in enumerate(args.submissions)
        }
        for future in as_completed(futures):
            i = futures[future]
            try:
                graded[i] = future.result()
            except Exception as exc:  # a grader bug or a dead worker: say so, keep going
                graded[i] = _crashed(args.submissions[i], exercise, exc)
            progress.step(graded[i])
    progress.done()
    hidden = {t.__name__ for t in exercises.load_tests(exercise) if t.hidden}
    write_all(graded, args.out, hidden)
    return 0


def _common_folder(paths):
    """The folder that holds all ``paths`` (as written: links are not resolved)."""
    return os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])


def _crashed(path, exercise, exc):
    """A zero grade that says the grader itself failed on this submission."""
    why = f"the grader failed on this submission ({type(exc).__name__}: {exc}); ask staff"
    results = [
        Result(t.__name__, 0, t.points, why, "error") for t in exercises.load_tests(exercise)
    ]
    return Graded(str(path), exercise, results, 0.0, [why], -1)


class Progress:
    """A progress bar over submissions on stderr; plain lines when not a terminal."""

    def __init__(self, total, stream=None):
        self.total, self.count, self.start = total, 0, time.monotonic()
        self.stream = stream or sys.stderr
        self.tty = self.stream.isatty()

    def step(self, graded):
        self.count += 1
        # a file name may hold escape codes that would rewrite this line
        name = printable(graded.submission.rsplit("/", 1)[-1], keep="")
        score = f"{graded.score:g}/{graded.max_score:g}"
        if self.tty:
            filled = int(30 * self.count / self.total)
            bar = "#" * filled + "." * (30 - filled)
            self.stream.write(f"\r[{bar}] {self.count}/{self.total} {name[:30]:30} {score}")
        else:
            self.stream.write(f"graded {self.count}/{self.total}: {name} {score}\n")
        self.stream.flush()

    def done(self):
        elapsed = time.monotonic() - self.start
        end = "\n" if self.tty else ""
        self.stream.write(f"{end}graded {self.total} submission(s) in {elapsed:.1f} s\n")

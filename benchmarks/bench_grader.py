"""How long the autograder takes for a class: 50 notebooks, ``--jobs 2``.

    python benchmarks/bench_grader.py [--exercise 04_softmax] [--count 50] [--jobs 2]

The class is made of the exercise's own notebooks: 70% copies of the instructor notebook
(everything right, every cell runs in the sandbox as the student ran it) and 30% copies of
the released student notebook (nothing written). Prints the wall time of
``python -m course.grade`` and checks that every score is what it should be.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from course import exercises  # noqa: E402 - after the path is set


def grade_class(exercise, count, jobs):
    """(seconds, scores by file stem, max_score) for a class of ``count`` notebooks."""
    folder = exercises.path(exercise)
    work = Path(tempfile.mkdtemp(prefix="bench-grader-"))
    try:
        files = []
        for i in range(count):
            kind = "instructor" if i % 10 < 7 else "student"
            files.append(work / f"{kind}{i:03d}.ipynb")
            shutil.copy(folder / f"{kind}.ipynb", files[-1])
        command = [sys.executable, "-m", "course.grade", *map(str, files)]
        command += ["--exercise", folder.name, "--out", str(work / "out"), "--jobs", str(jobs)]
        start = time.perf_counter()
        subprocess.run(command, cwd=ROOT, check=True, capture_output=True)
        seconds = time.perf_counter() - start
        scores, max_score = {}, None
        for file in files:
            results = json.loads((work / "out" / file.stem / "results.json").read_text())
            scores[file.stem], max_score = results["score"], results["max_score"]
        return seconds, scores, max_score
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--exercise", action="append", help="repeatable; default: 04_softmax, 10_train_digits"
    )
    parser.add_argument("--count", type=int, default=50)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    print("| exercise | submissions | --jobs | wall time | per submission |")
    print("|---|---|---|---|---|")
    for exercise in args.exercise or ["04_softmax", "10_train_digits"]:
        seconds, scores, max_score = grade_class(exercise, args.count, args.jobs)
        wrong = [s for s, v in scores.items() if v != (max_score if "instructor" in s else 0)]
        assert not wrong, f"unexpected scores for {wrong}"
        print(
            f"| {exercise} | {args.count} | {args.jobs} | {seconds:.0f} s "
            f"| {seconds / args.count:.1f} s |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

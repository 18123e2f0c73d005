"""``python -m course.gradescope build --exercise NAME --out autograder.zip``.

Builds Gradescope's standard autograder bundle. Gradescope extracts the zip into
``/autograder/source``, runs ``setup.sh`` once when it builds the image, and
``run_autograder`` (copied to ``/autograder/``) for each submission. So the zip's root
holds ``setup.sh`` (a virtual environment in ``/autograder/venv`` with this project
installed from ``/autograder/source``, extra ``grader``), ``run_autograder`` (grades the
one notebook or .py file in ``/autograder/submission``, refusing a symbolic link, and writes
``/autograder/results/results.json``) and the project (``pyproject.toml``, ``README.md``,
``teachgrad/``, ``viz/``, ``course/``).

Both scripts take the root from ``$AUTOGRADER`` (default ``/autograder``) and
run_autograder the interpreter from ``$PYTHON``, so the bundle can be tried locally.
Grading runs from ``/autograder``, not from the source folder: the installed ``course``
is the one the sandbox hides from submissions. The installed package holds no instructor
notebook (the wheel leaves them out), so the bundle carries the graded exercise's in
``source/course/exercises/NN_topic/`` (and no other exercise's), and run_autograder
points the grader there (``COURSE_SOLUTIONS``); the sandbox hides that folder too.
"""

from __future__ import annotations

import argparse
import zipfile
from pathlib import Path

from course import exercises

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("teachgrad", "viz", "course")

SETUP = """#!/usr/bin/env bash
set -euo pipefail
root=${AUTOGRADER:-/autograder}
apt-get update && apt-get install -y python3 python3-venv python3-pip
python3 -m venv "$root/venv"
"$root/venv/bin/pip" install "$root/source[grader]"
"""

RUN = """#!/usr/bin/env bash
set -uo pipefail
root=${AUTOGRADER:-/autograder}
python=${PYTHON:-$root/venv/bin/python}
cd "$root"
results="$root/results"
mkdir -p "$results"
submission=$(find "$root/submission" \\( -name '*.ipynb' -o -name '*.py' \\) | sort | head -n 1)
if [ -z "$submission" ]; then
  echo '{"score": 0, "output": "No .ipynb or .py file was submitted."}' > "$results/results.json"
  exit 0
fi
graded=$(mktemp -d)
export COURSE_SOLUTIONS="$root/source/course/exercises"  # the installed course has none
"$python" -m course.grade "$submission" --exercise {exercise} --out "$graded" \\
  --within "$root/submission"
cp "$graded"/*/results.json "$results/results.json"
"""


def build(exercise, out):
    """Write the bundle for ``exercise`` to ``out``; returns the zip's member names."""
    exercise = exercises.path(exercise).name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (
            ("setup.sh", SETUP),
            ("run_autograder", RUN.replace("{exercise}", exercise)),
        ):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable
            bundle.writestr(info, text)
        for name in ("pyproject.toml", "README.md"):
            bundle.write(ROOT / name, name)
        for package in PACKAGES:
            for file in sorted((ROOT / package).rglob("*")):
                if not file.is_file() or "__pycache__" in file.parts:
                    continue
                if file.name == "instructor.ipynb" and file.parent.name != exercise:
                    continue  # only the graded exercise's reference solution
                bundle.write(file, str(file.relative_to(ROOT)))
        return bundle.namelist()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.gradescope")
    parser.add_argument("command", choices=["build"])
    parser.add_argument("--exercise", required=True)
    parser.add_argument("--out", default="autograder.zip")
    args = parser.parse_args(argv)
    names = build(args.exercise, args.out)
    print(f"wrote {args.out} ({len(names)} files)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

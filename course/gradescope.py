"""``python -m course.gradescope build --exercise NAME --out autograder.zip``.

Builds Gradescope's standard autograder bundle: ``setup.sh`` (installs this project
from ``source/``), ``run_autograder`` (grades the one notebook or .py file in
``/autograder/submission`` and copies its results.json to ``/autograder/results/``),
and the project's source (``pyproject.toml``, ``teachgrad/``, ``viz/``, ``course/``).
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
apt-get update && apt-get install -y python3 python3-pip
pip3 install /autograder/source
"""

RUN = """#!/usr/bin/env bash
set -uo pipefail
cd /autograder/source
submission=$(find /autograder/submission -name '*.ipynb' -o -name '*.py' | sort | head -n 1)
mkdir -p /autograder/results
if [ -z "$submission" ]; then
  echo '{{"score": 0, "output": "No .ipynb or .py file was submitted."}}' \\
    > /autograder/results/results.json
  exit 0
fi
python3 -m course.grade "$submission" --exercise {exercise} --out /tmp/graded
cp /tmp/graded/*/results.json /autograder/results/results.json
"""


def build(exercise, out):
    """Write the bundle for ``exercise`` to ``out``; returns the zip's member names."""
    exercise = exercises.path(exercise).name
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as bundle:
        for name, text in (("setup.sh", SETUP), ("run_autograder", RUN.format(exercise=exercise))):
            info = zipfile.ZipInfo(name)
            info.external_attr = 0o755 << 16  # executable
            bundle.writestr(info, text)
        bundle.write(ROOT / "pyproject.toml", "source/pyproject.toml")
        for package in PACKAGES:
            for file in sorted((ROOT / package).rglob("*")):
                if file.is_file() and "__pycache__" not in file.parts:
                    bundle.write(file, f"source/{file.relative_to(ROOT)}")
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

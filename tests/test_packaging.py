"""The project builds the way a user's pip builds it: in pip's own isolated build
environment (build tools fetched fresh, nothing borrowed from this venv), into a wheel
that holds every package and the course's files, but no reference solution: the wheel is
what `pip install teachgrad` gives a student, so no instructor notebook is in it."""

import shutil
import sys
import zipfile
from pathlib import Path

from tests.run import run

REPO = Path(__file__).resolve().parents[1]
LOCAL = (".git", ".venv", "build", "*.egg-info", "__pycache__", ".hypothesis", "artifacts")


def test_the_wheel_builds_with_build_isolation_and_holds_the_packages(tmp_path):
    # from a copy: the build writes build/ and *.egg-info beside the sources
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(*LOCAL))
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", tmp_path, source])
    (wheel,) = tmp_path.glob("teachgrad-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for package in ("teachgrad", "teachgrad/autograd", "teachgrad/ops", "viz", "course/grader"):
        assert f"{package}/__init__.py" in names, f"{package} is missing from {wheel.name}"
    assert "viz/_fit.py" in names and "course/grader/confine.py" in names
    # the picture box's script and its vendored library, with the library's license
    for asset in ("graph_view.js", "panzoom-4.6.2.min.js", "panzoom-LICENSE.txt"):
        assert f"viz/_static/{asset}" in names, f"viz/_static/{asset} is missing from {wheel.name}"
    for folder in sorted((REPO / "course" / "exercises").glob("[0-9]*")):
        assert f"course/exercises/{folder.name}/student.ipynb" in names
        assert f"course/exercises/{folder.name}/tests.py" in names
    instructor = sorted(n for n in names if Path(n).name.startswith("instructor"))
    assert not instructor, f"{wheel.name} holds reference solutions: {instructor}"

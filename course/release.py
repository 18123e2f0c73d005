"""Make each exercise's student notebook from its instructor notebook.

    python -m course.release           # (re)write every exercises/NN_topic/student.ipynb
    python -m course.release --check   # exit 1 if a committed student notebook is stale

The instructor notebook marks its answers the way nbgrader does:

- lines between ``### BEGIN SOLUTION`` and ``### END SOLUTION`` become
  ``raise NotImplementedError()`` (at the indentation of the marker), so the student's
  notebook runs up to the first part they have to write, and stops there clearly;
- lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS`` are dropped;
- every output and execution count is cleared.

The output depends only on the instructor notebook (same input, same bytes), so CI can
compare the committed student notebooks with freshly made ones. Plain ``json`` is enough
here: a notebook is a JSON file, written as Jupyter writes it (indent 1, sorted keys).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

EXERCISES = Path(__file__).resolve().parent / "exercises"
MARKERS = {
    "### BEGIN SOLUTION": "### END SOLUTION",
    "### BEGIN HIDDEN TESTS": "### END HIDDEN TESTS",
}

__all__ = ["release_notebook", "release_source", "main"]


def release_source(source):
    """One cell's source with solutions replaced and hidden tests removed.

    >>> print(release_source("def f(x):\\n    ### BEGIN SOLUTION\\n    return 2 * x\\n    ### END SOLUTION"))
    def f(x):
        raise NotImplementedError()
    """
    out, end = [], None
    for line in source.splitlines():
        marker = line.strip()
        if end is None and marker in MARKERS:
            end = MARKERS[marker]
            if marker == "### BEGIN SOLUTION":
                out.append(line[: len(line) - len(line.lstrip())] + "raise NotImplementedError()")
        elif end is not None and marker == end:
            end = None
        elif end is None:
            out.append(line)
    if end is not None:
        raise ValueError(f"a cell opens a marker block but never writes {end!r}")
    return "\n".join(out).rstrip("\n")


def release_notebook(instructor_text):
    """The student notebook (as text) for the instructor notebook ``instructor_text``."""
    nb = json.loads(instructor_text)
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "code":
            source = release_source(source)
            cell["outputs"], cell["execution_count"] = [], None
        cell["source"] = source.splitlines(keepends=True)
    return json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    check_only = "--check" in argv
    stale = []
    for folder in sorted(p for p in EXERCISES.iterdir() if (p / "instructor.ipynb").is_file()):
        student = folder / "student.ipynb"
        text = release_notebook((folder / "instructor.ipynb").read_text(encoding="utf-8"))
        current = student.read_text(encoding="utf-8") if student.exists() else None
        if current == text:
            continue
        stale.append(student.relative_to(EXERCISES.parent.parent))
        if not check_only:
            student.write_text(text, encoding="utf-8")
    verb = "out of date" if check_only else "written"
    for path in stale:
        print(f"{verb}: {path}")
    if check_only and stale:
        print("run `make release` (python -m course.release) and commit the student notebooks")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

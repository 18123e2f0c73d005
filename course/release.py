"""Make each exercise's student notebook from its instructor notebook, and the folder
an instructor hands out.

    python -m course.release           # (re)write every exercises/NN_topic/student.ipynb,
                                       # then build release/student/ and release/student.zip
    python -m course.release --out DIR # the same, the distribution in DIR/student(.zip)
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

The student distribution (:func:`build_student`) holds what a student needs and nothing
else: the student notebooks, each exercise's ``tests.py`` with its hidden tests removed
(:func:`visible_tests`), the code ``course.check`` runs (:data:`STUDENT_CODE`), a README
and a Makefile whose ``make lab`` opens only that folder. No instructor notebook, no
hidden test, no grader: the instructor keeps those in the repository.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import sys
import zipfile
from pathlib import Path

EXERCISES = Path(__file__).resolve().parent / "exercises"
ROOT = EXERCISES.parent.parent
OUT = ROOT / "release"
# what course.check() imports: course/__init__ -> check -> exercises, testing (and teachgrad)
STUDENT_CODE = (
    "course/__init__.py",
    "course/check.py",
    "course/testing.py",
    "course/exercises/__init__.py",
)
MARKERS = {
    "### BEGIN SOLUTION": "### END SOLUTION",
    "### BEGIN HIDDEN TESTS": "### END HIDDEN TESTS",
}

__all__ = ["build_student", "main", "release_notebook", "release_source", "visible_tests"]


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


def _is_hidden(node):
    """Whether a top-level statement is a test decorated ``@points(..., hidden=True)``."""
    return isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and any(
        isinstance(d, ast.Call)
        and any(
            k.arg == "hidden" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in d.keywords
        )
        for d in node.decorator_list
    )


def _defines(node):
    """The name a top-level def, class or ``NAME = ...`` defines, or None."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return node.name
    if isinstance(node, ast.Assign | ast.AnnAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            return targets[0].id
    return None


def _uses(node):
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def visible_tests(source):
    """An exercise's ``tests.py`` without its hidden tests, and without the top-level
    helpers (functions, classes, constants) that only hidden tests used.

    >>> print(visible_tests(
    ...     "def _helper(ns):\\n    pass\\n\\n\\n@points(1)\\ndef test_a(ns):\\n    pass\\n\\n\\n"
    ...     "# hidden: other shapes\\n@points(1, hidden=True)\\ndef test_b(ns):\\n    _helper(ns)\\n"
    ... ))
    @points(1)
    def test_a(ns):
        pass
    <BLANKLINE>
    """
    tree = ast.parse(source)
    drop = {node for node in tree.body if _is_hidden(node)}
    state = {_defines(node) for node in tree.body if isinstance(node, ast.Assign | ast.AnnAssign)}
    changed = True
    while changed:  # a helper only dropped code used goes too, and then what only it used
        changed = False
        for node in tree.body:
            name = _defines(node)
            if node in drop or name is None or getattr(node, "decorator_list", None):
                continue
            value = getattr(node, "value", None)
            if isinstance(node, ast.Assign | ast.AnnAssign) and value and _uses(value) & state:
                continue  # it draws from shared state (rng): dropping it would change the rest
            used_by_dropped = any(name in _uses(other) for other in drop)
            kept = (other for other in tree.body if other not in drop and other is not node)
            if used_by_dropped and not any(name in _uses(other) for other in kept):
                drop.add(node)
                changed = True
    lines = source.splitlines()
    gone = set()
    for node in drop:
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        while start > 1 and lines[start - 2].lstrip().startswith("#"):
            start -= 1  # the comment right above it belongs to it
        gone.update(range(start, node.end_lineno + 1))
    text = "\n".join(line for i, line in enumerate(lines, 1) if i not in gone)
    text = re.sub(r"\n{4,}", "\n\n\n", text).strip("\n") + "\n"
    ast.parse(text)  # still a module
    return text


STUDENT_README = """# {title}: the exercises

Install teachgrad with what the notebooks need (JupyterLab, scikit-learn, the pictures):

    pip install "teachgrad[notebook]"

(or `pip install "teachgrad[notebook] @ git+<the course repository's URL>"`). Then, in
this folder:

    make lab

opens JupyterLab on this folder, at the first exercise. Without `make`, run the same
from this folder:

    PYTHONPATH="$PWD" jupyter lab

(`PYTHONPATH` makes the notebooks use this folder's `course` package.)

Each exercise is a folder `course/exercises/NN_topic/` holding `student.ipynb`: read it,
write the parts that raise `NotImplementedError()`, and run `check("NN_topic")` (or
`check(TheFunction)`) for instant feedback: which parts pass, and for the first one that
does not, the likely cause. `tests.py` beside each notebook holds the tests `check` runs;
the graded version has a few more, so submit what passes here *and* is right in general.

The exercises:

{exercises}
"""

STUDENT_MAKEFILE = """# make lab: open this folder's exercises in JupyterLab (see README.md).
# Needs teachgrad with its notebook extra: pip install "teachgrad[notebook]".
JUPYTER  ?= jupyter
LAB_ARGS ?=
LAB_FIRST := course/exercises/{first}/student.ipynb

.PHONY: lab

# PYTHONPATH: the notebooks' kernels import this folder's `course` (check and its tests).
# (Jupyter refuses to run as root unless told --allow-root, e.g. in a container.)
lab:
\tPYTHONPATH="$(CURDIR)$${{PYTHONPATH:+:$$PYTHONPATH}}" $(JUPYTER) lab \\
\t  --ServerApp.root_dir="$(CURDIR)" --LabApp.default_url=/lab/tree/$(LAB_FIRST) \\
\t  $(if $(filter 0,$(shell id -u)),--allow-root) $(LAB_ARGS)
"""


def _student_files():
    """``{path in the distribution: bytes}``: everything a student gets."""
    folders = sorted(p for p in EXERCISES.iterdir() if (p / "tests.py").is_file())
    files = {name: (ROOT / name).read_bytes() for name in STUDENT_CODE}
    for folder in folders:
        where = f"course/exercises/{folder.name}"
        files[f"{where}/student.ipynb"] = (folder / "student.ipynb").read_bytes()
        tests = visible_tests((folder / "tests.py").read_text(encoding="utf-8"))
        files[f"{where}/tests.py"] = tests.encode()
    listing = "\n".join(f"- `course/exercises/{f.name}/student.ipynb`" for f in folders)
    files["README.md"] = STUDENT_README.format(title="teachgrad", exercises=listing).encode()
    files["Makefile"] = STUDENT_MAKEFILE.format(first=folders[0].name).encode()
    return dict(sorted(files.items()))


def build_student(out=OUT):
    """Write the student distribution: ``out/student/`` and ``out/student.zip`` (whose
    members sit in a ``student/`` folder). Returns the distribution's file names."""
    out = Path(out)
    folder, archive = out / "student", out / "student.zip"
    files = _student_files()
    shutil.rmtree(folder, ignore_errors=True)
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():  # fixed timestamps: the same files, the same zip
            info = zipfile.ZipInfo(f"student/{name}", date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return list(files)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.release")
    parser.add_argument("--check", action="store_true", help="only check the student notebooks")
    parser.add_argument("--out", type=Path, default=OUT, help="where student/ and student.zip go")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    check_only = args.check
    stale = []
    for folder in sorted(p for p in EXERCISES.iterdir() if (p / "instructor.ipynb").is_file()):
        student = folder / "student.ipynb"
        text = release_notebook((folder / "instructor.ipynb").read_text(encoding="utf-8"))
        current = student.read_text(encoding="utf-8") if student.exists() else None
        if current == text:
            continue
        stale.append(student.relative_to(ROOT))
        if not check_only:
            student.write_text(text, encoding="utf-8")
    verb = "out of date" if check_only else "written"
    for path in stale:
        print(f"{verb}: {path}")
    if check_only and stale:
        print("run `make release` (python -m course.release) and commit the student notebooks")
        return 1
    if not check_only:
        names = build_student(args.out)
        print(f"student distribution: {args.out / 'student'}/ and {args.out / 'student.zip'}")
        print(f"  ({len(names)} files; hand out either, keep the repository)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

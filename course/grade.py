"""``python -m course.grade SUBMISSIONS... --exercise NAME --out DIR [--jobs N]``.

Grades notebooks or .py files in sandboxes and writes Gradescope ``results.json``
and JUnit XML per submission plus ``summary.csv``; see :mod:`course.grader`.
"""

from course.grader.cli import main

if __name__ == "__main__":
    raise SystemExit(main())

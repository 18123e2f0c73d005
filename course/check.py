"""``course.check(...)``: instant feedback on an exercise, inside the notebook.

``check("02_pointwise")`` runs that exercise's visible tests on the names defined in
your notebook; ``check(Square)`` runs only the tests of ``Square``. The report says
which parts pass (with points) and what a TA would say: for the first failure the
likely cause and the details, with its input/output pair and the numerical and
analytical Jacobians side by side (heatmaps in Jupyter); for each later one, a line. In
Jupyter it is HTML; in a terminal, plain text. Exceptions from your code are caught and
explained, never shown as a bare traceback; an error in the checker itself says so.

What does not live here: the tests themselves (``exercises/NN_topic/tests.py``), the
gradient checks and diagnoses (``course.testing``), running and scoring (``course.exercises``).
"""

from __future__ import annotations

import html
import inspect

import numpy as np

from course import exercises
from course.testing import CAUSES

__all__ = ["Report", "check", "heatmap"]


def check(exercise_or_object, namespace=None, *, hidden=False, quiet=False):
    """Run the visible tests of an exercise (or of one object) and show a report.

    ``namespace`` defaults to the caller's globals (your notebook). Returns the
    :class:`Report`. It is shown once: when ``check(...)`` is a cell's last expression,
    the notebook does not show the returned report a second time (a later cell that
    evaluates it does). ``quiet=True`` returns it without showing it.
    """
    ns = dict(inspect.currentframe().f_back.f_globals if namespace is None else namespace)
    uses = None
    if isinstance(exercise_or_object, str):
        name = exercises.path(exercise_or_object).name
    else:
        uses = getattr(exercise_or_object, "__name__", None)
        ns[uses] = exercise_or_object
        name = next(
            (n for n in exercises.names() if any(uses in t.uses for t in exercises.load_tests(n))),
            None,
        )
        if name is None:
            raise ValueError(f"no exercise tests an object called {uses!r}")
    report = Report(name, exercises.grade(name, ns, hidden=hidden, uses=uses))
    if not quiet:
        report.show()
    return report


class Report:
    """The results of one ``check``: ``.results``, ``.score``, ``.max_score``, text and HTML.

    The first failure gets the details (likely cause, message, Jacobians), each later one
    a line: a short report, and the first problem is the one to fix first.
    """

    def __init__(self, exercise, results):
        self.exercise, self.results = exercise, results
        self.score = sum(r.score for r in results)
        self.max_score = sum(r.max_score for r in results)
        self.first_failure = next((r for r in results if r.score < r.max_score), None)
        self._shown_in = None  # the notebook cell (execution count) that showed it

    def __repr__(self):
        return f"<check {self.exercise}: {self.score:g}/{self.max_score:g} points>"

    def show(self):
        """Show the report: HTML in a Jupyter kernel, plain text everywhere else."""
        shell = _ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            from IPython.display import display

            display(_HTML(self._repr_html_()))
        else:
            print(self.text())
        self._shown_in = _cell(shell)

    def _ipython_display_(self):
        """How IPython shows a value: skip the report that check() showed in this cell."""
        if self._shown_in != _cell(_ipython()):
            self.show()

    def text(self):
        lines = [f"{self.exercise}: {self.score:g} / {self.max_score:g} points"]
        for r in self.results:
            mark = "PASS" if r.score == r.max_score else "FAIL"
            lines.append(f"  {mark} {r.name} ({r.score:g}/{r.max_score:g})")
            if r is self.first_failure:
                lines.append(f"    likely cause: {CAUSES[r.cause]}")
                if r.output != CAUSES[r.cause]:
                    lines += ["    " + line for line in r.output.splitlines()]
                failure = r.failure
                if failure is not None and failure.numerical is not None:
                    lines.append(f"    pair: {failure.pair}")
                    lines += _side_by_side(failure.numerical, failure.analytical)
            elif r.cause:
                lines[-1] += f": {_headline(r)}"
        return "\n".join(lines)

    def _repr_html_(self):
        parts = [
            f"<h4>{html.escape(self.exercise)}: {self.score:g} / {self.max_score:g} points</h4>"
        ]
        for r in self.results:
            ok = r.score == r.max_score
            colour = "#1a7f37" if ok else "#cf222e"
            parts.append(
                f"<div style='margin:4px 0'><b style='color:{colour}'>{'✔' if ok else '✘'} "
                f"{html.escape(r.name)}</b> ({r.score:g}/{r.max_score:g})"
            )
            if r is self.first_failure:
                parts.append(f"<div><b>Likely cause:</b> {html.escape(CAUSES[r.cause])}</div>")
                if r.output != CAUSES[r.cause]:
                    parts.append(f"<pre>{html.escape(r.output)}</pre>")
                failure = r.failure
                if failure is not None and failure.numerical is not None:
                    n, a = failure.numerical, failure.analytical
                    parts.append(
                        f"<div>{html.escape(failure.pair)}</div><div style='display:flex;gap:16px'>"
                        + heatmap(n, "numerical").html
                        + heatmap(a, "analytical (yours)").html
                        + heatmap(a - n, "analytical − numerical", diverging=True).html
                        + "</div>"
                    )
            elif r.cause:
                parts.append(f": {html.escape(_headline(r))}")
            parts.append("</div>")
        return "\n".join(parts)


class _HTML:
    def __init__(self, html):
        self.html = html

    def _repr_html_(self):
        return self.html


def heatmap(matrix, title="", *, diverging=False, max_cells=12):
    """A small matrix as an HTML table, each cell coloured by its value (no matplotlib).

    Blue for negative, red for positive (``diverging``: white at 0); otherwise white
    to red by absolute value. Shows itself in Jupyter; ``.html`` is the markup.
    """
    m = np.atleast_2d(np.asarray(matrix, dtype=float))[:max_cells, :max_cells]
    scale = float(np.abs(m).max()) or 1.0
    rows = []
    for row in m:
        cells = []
        for value in row:
            t = min(abs(value) / scale, 1.0)
            fade = int(255 * (1 - 0.75 * t))
            colour = (
                f"rgb({fade},{fade},255)" if diverging and value < 0 else f"rgb(255,{fade},{fade})"
            )
            cells.append(
                f"<td style='background:{colour};padding:2px 4px;text-align:right;"
                f"font:11px monospace'>{value + 0.0:.3g}</td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    caption = f"<caption style='font-size:12px'>{html.escape(title)}</caption>" if title else ""
    return _HTML(f"<table style='border-collapse:collapse'>{caption}{''.join(rows)}</table>")


def _side_by_side(n, a, limit=6):
    if n.shape[0] > limit or n.shape[1] > limit:
        worst = np.unravel_index(np.argmax(np.abs(a - n)), n.shape)
        return [
            f"    Jacobians are {n.shape[0]} x {n.shape[1]}; the worst entry J{[int(i) for i in worst]}: "
            f"numerical {n[worst]:.6g}, analytical {a[worst]:.6g}"
        ]
    left = ["numerical:"] + [" ".join(f"{v + 0.0:9.4g}" for v in row) for row in n]
    right = ["analytical (yours):"] + [" ".join(f"{v + 0.0:9.4g}" for v in row) for row in a]
    width = max(len(s) for s in left) + 4
    return ["    " + l.ljust(width) + r for l, r in zip(left, right)]


def _headline(result):
    """A failure in one line: the first line of its message."""
    return (result.output or CAUSES[result.cause]).splitlines()[0]


def _ipython():
    """The running IPython shell, or None (plain Python, or IPython not installed)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _cell(shell):
    """The execution count of the notebook cell that runs now (None outside IPython)."""
    return getattr(shell, "execution_count", None)

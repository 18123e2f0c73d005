"""What the grader writes: Gradescope's results.json, JUnit XML, the class summary CSV.

Hidden tests are shown to students only after grades are published
(``"visibility": "after_published"``); visible ones right away.

Every text that comes from a submission (its file name, what its code raised) passes
through :func:`printable` before it is written: a control character could break the
XML, rewrite the instructor's terminal, or forge a line of output.

>>> from course.exercises import Result
>>> from course.grader.core import Graded
>>> g = Graded("alice.ipynb", "02_pointwise", [Result("test_square", 2, 2, "passed")], 1.5, [], 7)
>>> gradescope_json(g, hidden=set())["tests"][0]["visibility"]
'visible'
"""

from __future__ import annotations

import csv
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["gradescope_json", "junit_xml", "printable", "write_all"]

# C0 and C1 controls, DEL, lone surrogates, and the two code points XML 1.0 refuses
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def printable(text, keep="\n\t"):
    r"""``text`` with each control character (except those in ``keep``) and each lone
    surrogate written as a visible escape: safe in XML, JSON, CSV and on a terminal.

    >>> printable("ok\n\x1b[2K\rgraded 10/10\ud800")
    'ok\n\\x1b[2K\\rgraded 10/10\\ud800'
    >>> printable("two\nlines", keep="")
    'two\\nlines'
    """
    return _UNPRINTABLE.sub(lambda m: m[0] if m[0] in keep else ascii(m[0])[1:-1], str(text))


def _printable(graded):
    """``graded`` with its submission's texts made printable (the file name on one line)."""
    return graded._replace(
        submission=printable(graded.submission, keep=""),
        results=[r._replace(output=printable(r.output)) for r in graded.results],
        messages=[printable(m) for m in graded.messages],
    )


def gradescope_json(graded, hidden):
    """The results.json dict for one :class:`~course.grader.core.Graded`."""
    graded = _printable(graded)
    tests = [
        {
            "name": r.name,
            "score": r.score,
            "max_score": r.max_score,
            "output": r.output,
            "visibility": "after_published" if r.name in hidden else "visible",
            "status": "passed" if r.score >= r.max_score else "failed",
        }
        for r in graded.results
    ]
    output = ""
    if graded.messages:
        output = "Messages from running your code (not graded):\n" + "\n".join(graded.messages)
    return {
        "score": graded.score,
        "max_score": graded.max_score,
        "execution_time": round(graded.execution_time, 3),
        "output": output,
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {"exercise": graded.exercise, "seed": graded.seed},
    }


def junit_xml(graded):
    """One JUnit ``<testsuite>`` for a submission, as bytes."""
    graded = _printable(graded)
    failures = sum(r.score < r.max_score for r in graded.results)
    suite = ET.Element(
        "testsuite",
        name=f"{graded.exercise}:{Path(graded.submission).name}",
        tests=str(len(graded.results)),
        failures=str(failures),
        time=f"{graded.execution_time:.3f}",
    )
    for r in graded.results:
        case = ET.SubElement(suite, "testcase", classname=graded.exercise, name=r.name)
        if r.score < r.max_score:
            failure = ET.SubElement(case, "failure", message=str(r.cause or "failed"))
            failure.text = r.output
    return ET.tostring(suite, encoding="utf-8", xml_declaration=True)


def write_all(graded_list, out, hidden):
    """Write ``out/<id>/results.json`` and ``junit.xml`` per submission and
    ``out/summary.csv``; returns the submission ids (folder names), in order."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ids = _ids([g.submission for g in graded_list])
    for graded, ident in zip(graded_list, ids):
        folder = out / ident
        folder.mkdir(parents=True, exist_ok=True)
        results = json.dumps(gradescope_json(graded, hidden), indent=2)
        (folder / "results.json").write_text(results, encoding="utf-8")
        (folder / "junit.xml").write_bytes(junit_xml(graded))
    test_names = [r.name for r in graded_list[0].results] if graded_list else []
    with open(out / "summary.csv", "w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["submission", "file", "score", "max_score", "execution_time", *test_names])
        for graded, ident in zip(graded_list, ids):
            scores = {r.name: r.score for r in graded.results}
            writer.writerow(
                [ident, printable(graded.submission, keep=""), graded.score, graded.max_score,
                 f"{graded.execution_time:.2f}", *(scores.get(n, 0) for n in test_names)]
            )  # fmt: skip
    return ids


def _ids(paths):
    """A unique, filesystem-safe folder name per submission (its file stem, made unique).
    A name never starts with a dot: the stem of ``...ipynb`` is ``..``, the folder above.

    >>> _ids(["a/alice.ipynb", "b/alice.ipynb", "bob.py", "...ipynb", ".ipynb"])
    ['alice', 'alice-2', 'bob', '_.', '_ipynb']
    """
    ids, used = [], set()
    for path in paths:
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(path).stem) or "x"
        stem = "_" + stem[1:] if stem.startswith(".") else stem
        ident, n = stem, 1
        while ident in used:
            n += 1
            ident = f"{stem}-{n}"
        used.add(ident)
        ids.append(ident)
    return ids

"""What the grader writes: Gradescope's results.json, JUnit XML, the class summary CSV.

Hidden tests are shown to students only after grades are published
(``"visibility": "after_published"``); visible ones right away.

>>> from course.exercises import Result
>>> from course.grader.core import Graded
>>> g = Graded("alice.ipynb", "01_pointwise", [Result("test_square", 2, 2, "passed")], 1.5, [], 7)
>>> gradescope_json(g, hidden=set())["tests"][0]["visibility"]
'visible'
"""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["gradescope_json", "junit_xml", "write_all"]


def gradescope_json(graded, hidden):
    """The results.json dict for one :class:`~course.grader.core.Graded`."""
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
                [ident, graded.submission, graded.score, graded.max_score,
                 f"{graded.execution_time:.2f}", *(scores.get(n, 0) for n in test_names)]
            )  # fmt: skip
    return ids


def _ids(paths):
    """A unique, filesystem-safe folder name per submission (its file stem, made unique).

    >>> _ids(["a/alice.ipynb", "b/alice.ipynb", "bob.py"])
    ['alice', 'alice-2', 'bob']
    """
    ids, used = [], set()
    for path in paths:
        stem = "".join(c if c.isalnum() or c in "-_." else "_" for c in Path(path).stem) or "x"
        ident, n = stem, 1
        while ident in used:
            n += 1
            ident = f"{stem}-{n}"
        used.add(ident)
        ids.append(ident)
    return ids

"""`make lab` serves the whole learning path: the tour first, every tutorial, every
exercise's student notebook, and every notebook the README names.

The test reads the folder and the first notebook from the Makefile (``LAB_ROOT``,
``LAB_FIRST``), starts JupyterLab the way ``make lab`` does, and opens each notebook
through JupyterLab's contents API, as the browser does when a learner clicks it.
"""

import re
import urllib.parse
from pathlib import Path

import pytest

from tests.jupyterlab import JupyterLab

REPO = Path(__file__).resolve().parents[1]
MAKEFILE = (REPO / "Makefile").read_text(encoding="utf-8")
README = (REPO / "README.md").read_text(encoding="utf-8")


def make_variable(name: str) -> str:
    match = re.search(rf"^{name}\s*:=\s*(\S+)\s*$", MAKEFILE, flags=re.M)
    assert match, f"the Makefile sets no {name}"
    return match.group(1)


LAB_ROOT = (REPO / make_variable("LAB_ROOT")).resolve()
LAB_FIRST = make_variable("LAB_FIRST")


def learning_path() -> list[str]:
    """Every notebook a learner is sent to, relative to the lab's root."""
    tutorials = sorted((REPO / "notebooks").glob("*.ipynb"))
    exercises = sorted((REPO / "course" / "exercises").glob("*/student.ipynb"))
    named = {path for path in re.findall(r"[\w./-]+/[\w.-]+\.ipynb", README)}
    paths = {str(p.relative_to(LAB_ROOT)) for p in [*tutorials, *exercises]}
    return sorted(paths | named | {LAB_FIRST})


def test_the_lab_recipe_uses_the_root_and_first_notebook():
    recipe = MAKEFILE[MAKEFILE.index("\nlab:") :].split("\n\n")[0]
    assert "--ServerApp.root_dir=$(LAB_ROOT)" in recipe
    assert "--LabApp.default_url=/lab/tree/$(LAB_FIRST)" in recipe
    assert LAB_FIRST.endswith("00_tour.ipynb")


def test_the_readme_names_the_tutorials_and_an_exercise():
    named = re.findall(r"[\w./-]+/[\w.-]+\.ipynb", README)
    assert "notebooks/00_tour.ipynb" in named
    assert any(path.startswith("course/exercises/") for path in named), named


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    server = JupyterLab(tmp_path_factory.mktemp("lab"), LAB_ROOT)
    try:
        server.wait_until_ready()
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("path", learning_path())
def test_the_lab_opens(lab, path):
    assert (LAB_ROOT / path).is_file(), f"{path} is named but does not exist"
    model = lab.api(f"/api/contents/{urllib.parse.quote(path)}?content=0")
    assert model["type"] == "notebook" and model["path"] == path

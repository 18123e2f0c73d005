"""The step-through notebook works in a real browser: JupyterLab in headless Chromium.

What it proves, as a student would see it: JupyterLab opens
``notebooks/02_step_through_backward.ipynb``, *Run All Cells* runs it, the
``BackwardStepper`` widget renders (buttons, an SVG picture of the graph, the
current-node panel), and clicking **Step** makes the kernel run one node of backward
and redraw: the SVG in the page changes and the panel names the node that ran.

How: JupyterLab runs headless (tests/jupyterlab.py) in a temporary copy of
``notebooks/``, so nothing leaks into the repository or the home folder. Playwright drives
Debian's Chromium at ``/usr/bin/chromium`` (never a downloaded browser). Screenshots
before and after the click, the browser console and the server log are saved under
``$TEACHGRAD_ARTIFACTS`` (default ``tests/artifacts/browser/``).

The test is marked ``browser``. ``make test`` installs Chromium (as root); where Chromium,
playwright or jupyterlab is missing the test skips, counted in the run's closing line,
and in CI it fails (tests/needs.py).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path

import pytest

from tests import needs
from tests.jupyterlab import JupyterLab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "02_step_through_backward.ipynb"
CHROMIUM = Path("/usr/bin/chromium")  # Debian's chromium package
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PAGE_LOAD_MS = 60_000  # the notebook open in the page
RUN_ALL_MS = 90_000  # all cells run and the widgets drawn
STEP_MS = 30_000  # one click on Step answered by the kernel
VIEWPORT = {"width": 1600, "height": 1000}

# The texts of the tracebacks in the page (a JavaScript expression): JupyterLab shows an
# exception raised in a cell as stderr output.
CELL_ERRORS = """[...document.querySelectorAll(
    ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")]
    .map(output => output.textContent).filter(text => text.includes('Traceback'))"""
# A stepper whose Step button can still be pressed (earlier steppers in the notebook
# have been run to the end by later cells).
STEPPER = ".tg-stepper:has(button.tg-step-button:not([disabled]))"


def missing_requirement() -> str | None:
    """Why this test cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    for module in ("playwright", "jupyterlab"):
        try:
            __import__(module)
        except ImportError:
            return f"the {module} package is not installed (pip install -e '.[test]')"
    return None


def artifacts_dir() -> Path:
    folder = Path(os.environ.get("TEACHGRAD_ARTIFACTS") or REPO / "tests" / "artifacts") / "browser"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def run_all_cells(page) -> None:
    """Run > Run All Cells, as a student would (the command palette if the menu differs)."""
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    item = page.locator('.lm-Menu-item[data-command="notebook:run-all-cells"]')
    if item.count():
        item.first.click()
        return
    page.keyboard.press("Escape")
    page.keyboard.press("Control+Shift+C")
    page.keyboard.type("Run All Cells")
    page.keyboard.press("Enter")


def test_stepper_step_button_redraws_the_graph_in_jupyterlab(tmp_path):
    """Run the step-through notebook in JupyterLab, click Step, see the SVG and panel change."""
    reason = missing_requirement()
    if reason:
        needs.missing("browser", reason)
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    artifacts = artifacts_dir()
    for old in artifacts.glob("*.*"):  # the files of the previous run
        old.unlink()
    notebooks = tmp_path / "notebooks"
    shutil.copytree(
        REPO / "notebooks", notebooks, ignore=shutil.ignore_patterns(".ipynb_checkpoints")
    )
    console: list[str] = []
    lab = JupyterLab(tmp_path, notebooks)
    try:
        lab.wait_until_ready()
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
            )
            try:
                page = browser.new_page(viewport=VIEWPORT)
                page.on("console", lambda m: console.append(f"[{m.type}] {m.text}"))
                page.on("pageerror", lambda e: console.append(f"[pageerror] {e}"))
                try:
                    check_stepper(page, lab, artifacts)
                except (PlaywrightError, AssertionError) as exc:
                    with contextlib.suppress(PlaywrightError):
                        page.screenshot(path=str(artifacts / "failure.png"), full_page=True)
                    pytest.fail(
                        f"{type(exc).__name__}: {exc}\n\n--- browser console (last 40) ---\n"
                        + "\n".join(console[-40:])
                        + f"\n\n--- JupyterLab log (last 40) ---\n{lab.log_tail()}"
                        + f"\n\nscreenshots and logs: {artifacts}",
                        pytrace=False,
                    )
            finally:
                browser.close()
    finally:
        lab.stop()
        (artifacts / "console.log").write_text("\n".join(console) + "\n")
        shutil.copy(lab.log_path, artifacts / "jupyterlab.log")


def check_stepper(page, lab: JupyterLab, artifacts: Path) -> None:
    page.goto(f"{lab.base}/lab/tree/{NOTEBOOK}?token={lab.token}", timeout=PAGE_LOAD_MS)
    page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=PAGE_LOAD_MS)
    # The status bar says "No Kernel | Initializing" until the kernel is connected.
    page.wait_for_function(
        """() => [...document.querySelectorAll('.jp-StatusBar-TextItem')]
                 .some(item => /^(?!No Kernel).*\\| Idle$/.test(item.textContent.trim()))""",
        timeout=PAGE_LOAD_MS,
    )
    run_all_cells(page)

    # Wait until every code cell has run (its prompt shows a number), or one has failed
    # (Run All stops at an exception; JupyterLab shows its traceback as stderr).
    page.wait_for_function(
        f"""() => ({CELL_ERRORS}).length > 0
                  || [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')]
                     .every(p => /\\[\\d+\\]/.test(p.textContent))""",
        timeout=RUN_ALL_MS,
    )
    errors = page.evaluate(f"() => {CELL_ERRORS}")
    assert not errors, f"a cell failed in JupyterLab:\n{errors[0]}"

    # The last cell draws a stepper that has not run yet; wait for its picture.
    stepper = page.locator(STEPPER).last
    stepper.locator(".tg-graph svg").wait_for(timeout=RUN_ALL_MS)
    box = stepper.element_handle()  # the widget's element: it stays, its contents are redrawn
    svg_before, node_before = read_stepper(box)
    assert "<svg" in svg_before, f"the stepper shows no SVG picture:\n{svg_before[:500]}"
    assert "nothing has run yet" in node_before, f"unexpected panel before Step: {node_before!r}"
    # Make the window tall enough for the whole widget, so its screenshots show all of it
    # (JupyterLab's menu and status bars stay on top of whatever does not fit).
    height = box.bounding_box()["height"]
    page.set_viewport_size(
        {"width": VIEWPORT["width"], "height": max(VIEWPORT["height"], int(height) + 300)}
    )
    box.scroll_into_view_if_needed()
    box.screenshot(path=str(artifacts / "stepper_before_step.png"))

    box.query_selector("button.tg-step-button").click()
    page.wait_for_function(
        """([box, svg, node]) => {
               const graph = box.querySelector('.tg-graph');
               const current = box.querySelector('.tg-current-node');
               return graph !== null && current !== null
                   && graph.innerHTML !== svg && current.textContent !== node;
           }""",
        arg=[box, svg_before, node_before],
        timeout=STEP_MS,
    )
    svg_after, node_after = read_stepper(box)
    box.screenshot(path=str(artifacts / "stepper_after_step.png"))
    page.screenshot(path=str(artifacts / "page_after_step.png"))

    assert svg_after != svg_before, "the graph SVG did not change after Step"
    assert "<svg" in svg_after, "after Step the stepper shows no SVG picture"
    assert "current" in svg_after, "no node is marked as running in the redrawn SVG"
    assert node_after != node_before and node_after.strip().endswith("ran"), (
        f"the current-node panel did not name the node that ran: {node_after!r}"
    )


def read_stepper(box) -> tuple[str, str]:
    """The stepper's graph (its SVG markup) and current-node panel (its text)."""
    return box.evaluate(
        """box => [box.querySelector('.tg-graph').innerHTML,
                   box.querySelector('.tg-current-node').textContent]"""
    )

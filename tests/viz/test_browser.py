"""The step-through notebook works in a real browser: JupyterLab in headless Chromium.

What it proves, as a student would see it: JupyterLab opens
``notebooks/03_step_through_backward.ipynb``, *Run All Cells* runs it, the
``BackwardStepper`` widget renders (buttons, an SVG picture of the graph, the
current-node panel), and clicking **Step** makes the kernel run one node of backward
and redraw: the SVG in the page changes and the panel names the node that ran. The
pictures fit: the model stepper's SVG lies inside its output area, the node that just
ran is inside the visible window, the panel shows a chain-rule line with numbers, and
no text in the picture runs out of its node's shape. Then ``01_computation_graphs``
runs: every picture, the wide ``rankdir="LR"`` one included, lies inside its output
area, and the zoom switch shows the wide one at its natural size in a scrolling box.

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
import re
import shutil
from pathlib import Path

import pytest

from tests import needs
from tests.jupyterlab import JupyterLab

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "03_step_through_backward.ipynb"
WIDE = "01_computation_graphs.ipynb"  # its rankdir="LR" picture is far wider than the page
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
STARTED_MS = 20_000  # Run All taken by the kernel: a cell's prompt changes ([*], [1])
VIEWPORT = {"width": 1600, "height": 1000}

# The texts of the tracebacks in the page (a JavaScript expression): JupyterLab shows an
# exception raised in a cell as stderr output.
CELL_ERRORS = """[...document.querySelectorAll(
    ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")]
    .map(output => output.textContent).filter(text => text.includes('Traceback'))"""
# The notebook in front (JupyterLab keeps the other open notebooks hidden in the page).
ACTIVE = ".jp-NotebookPanel:not(.lm-mod-hidden)"
# A stepper whose Step button can still be pressed (earlier steppers in the notebook
# have been run to the end by later cells).
STEPPER = ".tg-stepper:has(button.tg-step-button:not([disabled]))"


def missing_requirement() -> str | None:
    """Why this test cannot run here, or None."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    for module in ("playwright", "jupyterlab", "notebook"):
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
                    check_pictures_fit(page, lab, artifacts)
                    check_exported_page(browser, tmp_path, artifacts, console)
                    check_notebook_7(page, lab, artifacts)
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


def open_and_run_all(page, lab: JupyterLab, notebook: str) -> None:
    """Open ``notebook`` in the lab, wait for its kernel, Run All, wait for every cell."""
    page.goto(f"{lab.base}/lab/tree/{notebook}?token={lab.token}", timeout=PAGE_LOAD_MS)
    # the notebook's own tab in front (a lab may restore others behind it), focused
    page.wait_for_selector(
        f".lm-TabBar-tab.lm-mod-current[title*='{notebook}']", timeout=PAGE_LOAD_MS
    )
    page.wait_for_selector(f"{ACTIVE} .jp-Cell", timeout=PAGE_LOAD_MS)
    page.locator(f"{ACTIVE} .jp-Cell").first.click()
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
                  || [...document.querySelectorAll('{ACTIVE} .jp-CodeCell .jp-InputPrompt')]
                     .every(p => /\\[\\d+\\]/.test(p.textContent))""",
        timeout=RUN_ALL_MS,
    )
    errors = page.evaluate(f"() => {CELL_ERRORS}")
    assert not errors, f"a cell failed in JupyterLab:\n{errors[0]}"


def check_stepper(page, lab: JupyterLab, artifacts: Path) -> None:
    open_and_run_all(page, lab, NOTEBOOK)

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
    assert node_after != node_before and node_after.strip().endswith("ran in this step"), (
        f"the current-node panel did not name the node that ran: {node_after!r}"
    )
    check_fit(page, box, "the model stepper")
    running = box.evaluate(f"box => {BOX}(box.querySelector('.tg-graph svg g.node.current'))")
    window = page.evaluate("() => [window.innerWidth, window.innerHeight]")
    assert running is not None, "no node is marked as running"
    assert running["left"] >= 0 and running["right"] <= window[0], (
        f"the node that ran is out of view: {running} in a window of {window}"
    )
    rules = box.evaluate("box => [...box.querySelectorAll('.tg-rule')].map(rule => rule.innerText)")
    assert any("∂L/∂" in r and re.search(r"^= .*\d", r, flags=re.M) for r in rules), (
        f"the panel shows no chain-rule line with numbers: {rules}"
    )
    panel = box.evaluate(
        "box => [box.querySelector('.tg-panel').scrollWidth, box.querySelector('.tg-panel').clientWidth]"
    )
    assert panel[0] <= panel[1] + 1, f"the panel's text is wider than the panel: {panel}"
    overflowing = box.evaluate(TEXT_OUTSIDE_ITS_SHAPE)
    assert not overflowing, f"text runs out of its node's shape: {overflowing[:5]}"
    check_zoom_follows_and_folds(page, box, artifacts)


def step_and_wait(page, box) -> None:
    """Click Step and wait until the picture shows another running node."""
    before = box.evaluate("box => box.querySelector('.tg-graph').innerHTML")
    box.query_selector("button.tg-step-button").click()
    page.wait_for_function(
        "([box, svg]) => box.querySelector('.tg-graph').innerHTML !== svg",
        arg=[box, before],
        timeout=STEP_MS,
    )


def check_zoom_follows_and_folds(page, box, artifacts: Path) -> None:
    """The picture box: + zooms in, the running node stays in view while stepping,
    and a click on a module frame folds it into one box, a click on that box opens it."""
    svg_width = f"box => {BOX}(box.querySelector('.tg-graph svg'))"
    fitted = box.evaluate(svg_width)
    for _ in range(4):
        box.query_selector(".tg-box-button[title^='zoom in']").click()
    page.wait_for_timeout(600)  # Panzoom animates each zoom
    zoomed = box.evaluate(svg_width)
    assert zoomed["right"] - zoomed["left"] > 2 * (fitted["right"] - fitted["left"]), (
        f"+ did not zoom the picture in: {fitted} -> {zoomed}"
    )
    for k in range(3):
        step_and_wait(page, box)
        page.wait_for_timeout(300)  # the box follows on the next animation frame
        running, view = box.evaluate(
            f"""box => [{BOX}(box.querySelector('.tg-graph svg g.node.current')),
                       {BOX}(box.querySelector('.tg-box-view'))]"""
        )
        assert running is not None, "no node is marked as running"
        inside = (
            running["left"] >= view["left"] - 1
            and running["right"] <= view["right"] + 1
            and running["top"] >= view["top"] - 1
            and running["bottom"] <= view["bottom"] + 1
        )
        assert inside, f"zoomed in, step {k + 2}: the running node {running} is outside {view}"
    box.screenshot(path=str(artifacts / "stepper_zoomed_following.png"))
    box.query_selector(".tg-box-button[title^='fit']").click()

    frames = "box => box.querySelectorAll('.tg-graph svg g.cluster.module').length"
    folds = "box => box.querySelectorAll('.tg-graph svg g.node.fold').length"
    before = box.evaluate(frames), box.evaluate(folds)
    assert before[0] > 0, "the model stepper shows no module frame to fold"
    # a frame around nodes other than the running one (that one is never folded)
    pick = box.evaluate(
        """box => {
            const inside = (a, b) => a.left >= b.left && a.right <= b.right
                                     && a.top >= b.top && a.bottom <= b.bottom;
            const running = box.querySelector('.tg-graph svg g.node.current').getBoundingClientRect();
            return [...box.querySelectorAll('.tg-graph svg g.cluster.module')]
                .findIndex(f => !inside(running, f.getBoundingClientRect()));
        }"""
    )
    assert pick >= 0, "every module frame holds the running node"
    box.query_selector_all(".tg-graph svg g.cluster.module > text")[pick].click()
    page.wait_for_function(f"box => ({folds})(box) > {before[1]}", arg=box, timeout=STEP_MS)
    box.screenshot(path=str(artifacts / "stepper_module_folded.png"))
    assert box.evaluate(frames) < before[0], "the clicked frame is still drawn"
    box.query_selector(".tg-graph svg g.node.fold").click()
    page.wait_for_function(f"box => ({folds})(box) == {before[1]}", arg=box, timeout=STEP_MS)
    assert box.evaluate(frames) == before[0], "opening the folded box did not bring the frame back"


# The page box of an element (a JavaScript function), or null.
BOX = """(el => { if (!el) return null; const r = el.getBoundingClientRect();
                   return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })"""

# The texts of the stepper's picture that stick out of their node's shape by more than
# a pixel (the shape: the node's ellipse, polygon or path, the first one drawn).
TEXT_OUTSIDE_ITS_SHAPE = """box => {
    const out = [];
    for (const node of box.querySelectorAll('.tg-graph svg g.node')) {
        const shape = node.querySelector('ellipse, polygon, path');
        if (!shape) continue;
        const s = shape.getBoundingClientRect();
        for (const text of node.querySelectorAll('text')) {
            const t = text.getBoundingClientRect();
            if (t.left < s.left - 1 || t.right > s.right + 1 || t.top < s.top - 1 || t.bottom > s.bottom + 1)
                out.push(text.textContent);
        }
    }
    return out;
}"""


def check_fit(page, element, what: str, require: bool = True) -> None:
    """Every SVG picture inside ``element`` lies inside its notebook output area."""
    found = element.evaluate(
        f"""el => [...el.querySelectorAll('svg')].filter(svg => svg.closest('.tg-fit'))
              .map(svg => [{BOX}(svg), {BOX}(svg.closest('.jp-OutputArea-output'))])"""
    )
    assert found or not require, f"{what}: no picture found"
    for picture, area in found:
        assert picture["left"] >= area["left"] - 1 and picture["right"] <= area["right"] + 1, (
            f"{what}: a picture {picture} runs out of its output area {area}"
        )


def check_pictures_fit(page, lab: JupyterLab, artifacts: Path) -> None:
    """Every other tutorial, run in the lab: every picture fits its output area; in
    01_computation_graphs zoom shows the wide LR graph at its natural size."""
    for path in sorted((REPO / "notebooks").glob("*.ipynb")):
        if path.name not in (NOTEBOOK, WIDE):
            open_and_run_all(page, lab, path.name)
            notebook = page.locator(f"{ACTIVE} .jp-Notebook").last
            check_fit(page, notebook.element_handle(), path.stem, require=False)
    open_and_run_all(page, lab, WIDE)
    notebook = page.locator(f"{ACTIVE} .jp-Notebook").last
    check_fit(page, notebook.element_handle(), WIDE)
    widths = notebook.evaluate(
        "nb => [...nb.querySelectorAll('.tg-fit > svg')].map(svg => parseFloat(svg.style.maxWidth))"
    )
    wide = notebook.locator(".tg-fit").nth(widths.index(max(widths)))
    wide.scroll_into_view_if_needed()
    wide.screenshot(path=str(artifacts / "wide_graph_fitted.png"))
    fitted = wide.evaluate(f"el => {BOX}(el.querySelector('svg'))")
    wide.locator("input.tg-zoom").check()
    zoomed = wide.evaluate(
        f"el => [{BOX}(el.querySelector('svg')), el.scrollWidth, el.clientWidth]"
    )
    assert zoomed[0]["right"] - zoomed[0]["left"] > 1.5 * (fitted["right"] - fitted["left"]), (
        f"zoom did not enlarge the wide graph: {fitted} -> {zoomed[0]}"
    )
    assert zoomed[1] > zoomed[2], "the zoomed graph's box does not scroll"
    wide.screenshot(path=str(artifacts / "wide_graph_zoomed.png"))


def check_exported_page(browser, tmp_path: Path, artifacts: Path, console: list) -> None:
    """``viz.export_html`` opened from disk, offline: its picture box zooms, Next steps."""
    import teachgrad as tg
    import viz

    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    stepper = viz.BackwardStepper(model(tg.ones(2, 3)).sum(), params=model)
    stepper.run()
    path = viz.export_html(stepper, str(tmp_path / "backward.html"))
    context = browser.new_context(viewport=VIEWPORT, offline=True)
    page = context.new_page()
    page.on("pageerror", lambda e: console.append(f"[export pageerror] {e}"))
    try:
        page.goto(Path(path).as_uri())
        frame = page.locator(".tg-frame:not([hidden])")
        frame.locator(".tg-box-bar button").first.wait_for(timeout=PAGE_LOAD_MS)
        fitted = frame.evaluate(f"f => {BOX}(f.querySelector('.tg-graph svg'))")
        frame.locator(".tg-box-button[title^='zoom in']").click()
        frame.locator(".tg-box-button[title^='zoom in']").click()
        page.wait_for_timeout(600)  # Panzoom animates each zoom
        zoomed = frame.evaluate(f"f => {BOX}(f.querySelector('.tg-graph svg'))")
        assert zoomed["right"] - zoomed["left"] > 1.3 * (fitted["right"] - fitted["left"]), (
            f"the exported page's + did not zoom: {fitted} -> {zoomed}"
        )
        page.screenshot(path=str(artifacts / "exported_page_zoomed.png"))
        page.click("#tg-next")
        assert page.text_content("#tg-label").startswith("step 1 of")
        errors = [line for line in console if line.startswith("[export pageerror]")]
        assert not errors, f"the exported page raised: {errors}"
    finally:
        context.close()


def check_notebook_7(page, lab: JupyterLab, artifacts: Path) -> None:
    """The same server as Notebook 7 (its /notebooks/ pages): Run All draws the stepper in
    its picture box (anywidget's extension serves both front ends), and Step redraws it."""
    # JupyterLab's session of the notebook ends first: Notebook 7 would otherwise swap its
    # kernel for a new one while it opens, and a Run All sent during the swap is lost.
    page.goto("about:blank")
    for session in lab.api("/api/sessions"):
        lab.api(f"/api/sessions/{session['id']}", method="DELETE")
    page.goto(f"{lab.base}/notebooks/{NOTEBOOK}?token={lab.token}", timeout=PAGE_LOAD_MS)
    page.wait_for_selector(".jp-Cell", timeout=PAGE_LOAD_MS)
    # the toolbar's execution indicator says "idle" once the new kernel is connected
    page.wait_for_selector(
        '.jp-Notebook-ExecutionIndicator[data-status="idle"]', timeout=PAGE_LOAD_MS
    )
    page.keyboard.press("Escape")
    run_all_until_the_kernel_takes_it(page)
    stepper = page.locator(STEPPER).last
    stepper.locator(".tg-box-bar button").first.wait_for(timeout=RUN_ALL_MS)
    box = stepper.element_handle()
    step_and_wait(page, box)
    box.scroll_into_view_if_needed()
    box.screenshot(path=str(artifacts / "notebook7_stepper_after_step.png"))
    ran = box.evaluate("box => box.querySelector('.tg-current-node').textContent")
    assert ran.strip().endswith("ran in this step"), (
        f"Notebook 7: the stepper did not step: {ran!r}"
    )


def run_all_until_the_kernel_takes_it(page, tries: int = 3) -> None:
    """Notebook 7's Run > Run All Cells, again if no cell started: under load, a Run All
    sent while the new kernel was still connecting was lost (no prompt changed), as a
    student would see and click again."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

    prompts = (
        "() => [...document.querySelectorAll('.jp-InputPrompt')].map(p => p.textContent).join()"
    )
    for attempt in range(1, tries + 1):
        before = page.evaluate(prompts)
        page.get_by_text("Run", exact=True).first.click()
        page.get_by_text("Run All Cells", exact=True).first.click()
        try:
            page.wait_for_function(
                f"before => ({prompts})() !== before", arg=before, timeout=STARTED_MS
            )
            return
        except PlaywrightTimeoutError:
            if attempt == tries:
                raise


def read_stepper(box) -> tuple[str, str]:
    """The stepper's graph (its SVG markup) and current-node panel (its text)."""
    return box.evaluate(
        """box => [box.querySelector('.tg-graph').innerHTML,
                   box.querySelector('.tg-current-node').textContent]"""
    )

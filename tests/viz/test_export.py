"""export_html: a step-through as one self-contained page a lecturer can put online.

The page is parsed with the standard library's ``html.parser`` (balanced tags,
unique ids, no resource fetched from anywhere), and its little script is run
under Node with a stand-in DOM where Node is installed.
"""

import collections
import html
import json
import re
import shutil
from html.parser import HTMLParser

import numpy as np
import pytest

import teachgrad as tg
import viz
import viz._box
import viz.render
from tests.run import run
from viz.render import short_name
from viz.stepper import BackwardStepper, panel_html

VOID = {"meta", "input", "br", "hr", "img", "link", "source", "area", "base", "col", "wbr"}


class Page(HTMLParser):
    """Reads a page and remembers what a validity check needs."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.doctype = None
        self.open = []  # the elements not closed yet
        self.mismatches = []
        self.tags = collections.Counter()
        self.elements = []  # (tag, attrs dict, the tag of its parent)
        self.scripts = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_decl(self, decl):
        self.doctype = decl

    def handle_starttag(self, tag, attrs):
        self._record(tag, attrs)
        if tag not in VOID:
            self.open.append(tag)
        self._in_script = tag == "script"

    def handle_startendtag(self, tag, attrs):  # <path ... /> inside an SVG
        self._record(tag, attrs)

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.mismatches.append((tag, list(self.open[-3:])))
        else:
            self.open.pop()
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts.append(data)

    def _record(self, tag, attrs):
        self.tags[tag] += 1
        self.elements.append((tag, dict(attrs), self.open[-1] if self.open else None))

    def with_class(self, css):
        return [a for _, a, _ in self.elements if css in (a.get("class") or "").split()]

    def by_id(self, element_id):
        (found,) = [(t, a) for t, a, _ in self.elements if a.get("id") == element_id]
        return found


def leaf(seed, *shape, name=None):
    t = tg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)
    t.name = name
    return t


def finished_stepper():
    x, w = leaf(1, 3, name="x"), leaf(2, 3, name="w")
    stepper = BackwardStepper((x * w + x.exp()).sum())
    stepper.run()
    return stepper


@pytest.fixture
def no_renderer(monkeypatch):
    """As on a machine with neither `dot` nor graphviz-pure: viz falls back to text."""
    monkeypatch.setattr(viz.render, "to_svg", lambda snapshot, **options: None)


def export(tmp_path, source, **options):
    path = tmp_path / "backward.html"
    assert viz.export_html(source, str(path), **options) == str(path)
    assert [p.name for p in tmp_path.iterdir()] == ["backward.html"]  # one file, nothing beside it
    text = path.read_text(encoding="utf-8")
    return text, Page(text)


def sections(text):
    """The HTML of each frame's <section>, in order."""
    return re.findall(r'<section class="tg-frame".*?</section>', text, re.DOTALL)


def assert_valid_and_self_contained(text, page):
    assert page.doctype.lower() == "doctype html"
    assert page.mismatches == [] and page.open == []  # every tag closed, in order
    assert page.tags["html"] == page.tags["head"] == page.tags["body"] == 1
    # one <title> in <head> (the SVGs have their own, inside their <g> groups)
    assert [p for t, _, p in page.elements if t == "title" and p != "g"] == ["head"]
    assert page.by_id("tg-slider")[1]["type"] == "range"
    assert page.by_id("tg-prev")[0] == page.by_id("tg-next")[0] == "button"
    ids = [a["id"] for _, a, _ in page.elements if "id" in a]
    assert len(ids) == len(set(ids))  # the SVGs' node1, edge1 ... were made unique per frame
    # nothing is fetched: no links, images, frames or external scripts; no URL outside the
    # vendored Panzoom (whose license comment names its home page), no call that loads
    assert not page.tags["link"] and not page.tags["img"] and not page.tags["iframe"]
    assert all("src" not in attrs for _, attrs, _ in page.elements)
    assert page.tags["script"] == 2 and page.scripts[0] == viz._box.script()
    ours = text.replace(page.scripts[0], "")
    assert "http://" not in ours and "https://" not in ours and "@import" not in text
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(|\bsrc\s*=", page.scripts[0])
    # frames are flex boxes: without this rule a hidden frame would still be displayed
    assert ".tg-frame[hidden] { display: none; }" in text


# ----------------------------------------------------------------------------- the page


def test_one_file_with_one_svg_per_step_and_a_slider(tmp_path):
    stepper = finished_stepper()
    if stepper.picture(0).startswith("<pre"):
        pytest.skip("no Graphviz renderer here: the text fallback test covers this machine")
    text, page = export(tmp_path, stepper)
    n = len(stepper.history)
    assert n == stepper.total + 1 == 7
    assert page.tags["svg"] == n
    assert len(page.with_class("tg-frame")) == n
    slider = page.by_id("tg-slider")[1]
    assert (slider["min"], slider["max"], slider["value"]) == ("0", str(n - 1), "0")
    assert_valid_and_self_contained(text, page)


def test_every_frame_shows_its_node_and_gradients(tmp_path):
    stepper = finished_stepper()
    text, _ = export(tmp_path, stepper)
    found = sections(text)
    assert len(found) == len(stepper.history)
    for i, (section, frame) in enumerate(zip(found, stepper.history)):
        assert panel_html(frame) in section  # the same panel the widget showed
        assert f'data-title="{html.escape(frame.title)}"' in section
        if i:
            assert f"<b>{frame.node}</b> ran" in section
            assert frame.node == short_name(stepper.steps[i - 1].node.name())
    # the last frame shows the leaves' final grads
    assert "AccumulateGrad of x" in text and "AccumulateGrad of w" in text


def test_the_text_fallback_gives_the_same_page_without_svg(tmp_path, no_renderer):
    stepper = finished_stepper()
    text, page = export(tmp_path, stepper)
    n = len(stepper.history)
    assert page.tags["svg"] == 0
    assert len(page.with_class("tg-text")) == n
    for section, frame in zip(sections(text), stepper.history[1:]):
        assert frame.node in section
    assert_valid_and_self_contained(text, page)


def test_a_partial_history_exports_what_has_run(tmp_path, no_renderer):
    x = leaf(3, 2, name="x")
    stepper = BackwardStepper((x * x).sum())
    stepper.step()
    stepper.step()
    text, page = export(tmp_path, stepper)
    assert len(sections(text)) == 3
    assert page.by_id("tg-slider")[1]["max"] == "2"


def test_a_list_of_snapshots_can_be_exported(tmp_path):
    x = leaf(4, 3, name="x")
    loss = (x.exp() * 2).sum()
    snaps, steps = [tg.autograd.graph.snapshot(loss)], []
    for step in tg.autograd.backward_steps(loss):
        steps.append(step)
        snaps.append(tg.autograd.graph.snapshot(loss, steps=steps))
    text, page = export(tmp_path, snaps)
    found = sections(text)
    assert len(found) == len(snaps) == 5
    for section, step in zip(found[1:], steps):
        assert f"<b>{short_name(step.node.name())}</b> ran" in section
    assert_valid_and_self_contained(text, page)


def test_names_are_escaped_so_the_page_stays_valid(tmp_path, no_renderer):
    x = leaf(5, 2, name='<b>x & "y"')
    stepper = BackwardStepper((x * 3).sum())
    stepper.run()
    text, page = export(tmp_path, stepper, title="<i>lecture 3</i>")
    assert page.tags["b"] == len(stepper.history) - 1  # only the panels' own <b>node</b>
    assert page.tags["i"] == 0
    assert "&lt;b&gt;x &amp; &quot;y&quot;" in text
    assert_valid_and_self_contained(text, page)


# ----------------------------------------------------------------------------- the script

STAND_IN_DOM = """
const frames = Array.from({length: N}, (_, i) => ({
  hidden: false, getAttribute: (name) => "title " + i,
  querySelector: (selector) => ({innerHTML: "<svg/>"}),
}));
// the picture box (viz._box) needs a real browser: tests/viz/test_browser.py opens the page
const followed = [];
function graphBox(el) { return {show() {}, follow() { followed.push(1); }}; }
globalThis.requestAnimationFrame = (fn) => fn();
const handlers = {};
function element(id) {
  return {id, value: "0", disabled: false, textContent: "",
          addEventListener(type, fn) { handlers[id + ":" + type] = fn; }};
}
const byId = {};
for (const id of ["tg-slider", "tg-prev", "tg-next", "tg-label"]) byId[id] = element(id);
globalThis.document = {
  querySelectorAll: () => frames,
  getElementById: (id) => byId[id],
  addEventListener(type, fn) { handlers["document:" + type] = fn; },
};
const seen = [];
function look() {
  seen.push({shown: frames.filter((f) => !f.hidden).length === 1 ? frames.findIndex((f) => !f.hidden) : -1,
             label: byId["tg-label"].textContent, slider: byId["tg-slider"].value,
             prev: byId["tg-prev"].disabled, next: byId["tg-next"].disabled});
}
"""

ACTIONS = """
look();                                                   // as loaded
handlers["tg-next:click"](); look();                      // Next
byId["tg-slider"].value = String(N - 1); handlers["tg-slider:input"](); look();  // slider to the end
handlers["tg-next:click"](); look();                      // Next at the end: stays
handlers["document:keydown"]({key: "ArrowLeft"}); look(); // left arrow
handlers["tg-prev:click"](); look();                      // Prev
console.log(JSON.stringify(seen));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js to run the page's script")
def test_the_slider_and_buttons_show_one_frame_at_a_time(tmp_path, no_renderer):
    stepper = finished_stepper()
    _, page = export(tmp_path, stepper)
    n = len(stepper.history)
    program = f"const N = {n};\n{STAND_IN_DOM}\n{page.scripts[-1]}\n{ACTIONS}"
    seen = json.loads(run(["node", "-e", program]).stdout)
    assert [s["shown"] for s in seen] == [0, 1, n - 1, n - 1, n - 2, n - 3]
    assert [s["slider"] for s in seen] == [str(i) for i in (0, 1, n - 1, n - 1, n - 2, n - 3)]
    assert seen[0]["prev"] and not seen[0]["next"]  # at the start only Next makes sense
    assert seen[2]["next"] and not seen[2]["prev"]
    assert seen[1]["label"] == "title 1"

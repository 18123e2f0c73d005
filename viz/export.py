"""export_html: a backward step-through as one self-contained web page.

``export_html(stepper, "backward.html")`` writes a single HTML file: every frame
of the stepper's history as an inline SVG (or as text when no Graphviz renderer
is installed) next to its panel (the node that ran, its gradients, the leaves'
``.grad``), a slider and Prev / Next buttons driven by a few lines of plain
JavaScript, and the widgets' picture box (``viz._box``: zoom buttons, Ctrl+wheel,
dragging, the running node kept in view). No kernel, no network: every script and
style is inline and nothing is loaded from anywhere, so the file works from a course
page, an e-mail or a USB stick.

What does not live here: the frames (``viz.stepper``) and the drawing
(``viz.render`` / ``viz.text``, through ``viz.live.picture_html``).

    >>> import os, tempfile
    >>> import teachgrad as tg
    >>> from viz.stepper import BackwardStepper
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> stepper = BackwardStepper((x * x).sum()); stepper.run()
    >>> path = os.path.join(tempfile.mkdtemp(), "backward.html")
    >>> export_html(stepper, path) == path
    True
    >>> open(path, encoding="utf-8").read().count('class="tg-frame"')
    4
"""

from __future__ import annotations

import html
import re

from ._box import STYLE as BOX_STYLE
from ._box import script
from ._graph import short_name
from .live import picture_html
from .stepper import Frame, panel_html

# Inline SVG needs no namespace declarations inside HTML, and dropping them leaves
# no URL at all in the page.
_XMLNS = re.compile(r'\s+xmlns(:\w+)?="[^"]*"')
_ID = re.compile(r'\bid="([^"]*)"')
_REF = re.compile(r'(url\(#|href="#)')

STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em; }
.tg-controls { display: flex; gap: .5em; align-items: center; margin-bottom: 1em; }
.tg-controls input[type=range] { flex: 1; max-width: 40em; }
.tg-frame { display: flex; flex-wrap: wrap; gap: 2em; align-items: flex-start; }
.tg-frame[hidden] { display: none; }
.tg-graph { flex: 1 1 30em; min-width: 0; }
.tg-panel { flex: 0 1 26em; }
.tg-panel table { border-collapse: collapse; margin: .5em 0; }
.tg-panel caption { text-align: left; font-weight: bold; }
.tg-panel td { border-top: 1px solid #ddd; padding: .15em .6em; }
.tg-current-node { font-size: 1.2em; margin: .4em 0; }
"""

# Plain JavaScript, after the picture box's script (viz._box.script()): every frame's
# drawing goes into a box; show one frame, move with the slider, the buttons or the arrow keys.
SCRIPT = """
(function () {
  var frames = document.querySelectorAll(".tg-frame");
  var boxes = [...frames].map(function (frame) {
    var graph = frame.querySelector(".tg-graph");
    var picture = graph.innerHTML;  // the inline drawing (shown as it is without scripts)
    var box = graphBox(graph);  // no send: folding needs Python
    box.show(picture);
    return box;
  });
  var slider = document.getElementById("tg-slider");
  var prev = document.getElementById("tg-prev");
  var next = document.getElementById("tg-next");
  var label = document.getElementById("tg-label");
  function show(i) {
    i = Math.max(0, Math.min(frames.length - 1, i));
    for (var k = 0; k < frames.length; k++) { frames[k].hidden = k !== i; }
    requestAnimationFrame(boxes[i].follow);  // a hidden frame had no layout to follow in
    slider.value = String(i);
    label.textContent = frames[i].getAttribute("data-title");
    prev.disabled = i === 0;
    next.disabled = i === frames.length - 1;
  }
  function current() { return Number(slider.value); }
  slider.addEventListener("input", function () { show(current()); });
  prev.addEventListener("click", function () { show(current() - 1); });
  next.addEventListener("click", function () { show(current() + 1); });
  document.addEventListener("keydown", function (event) {
    if (event.key === "ArrowLeft") { show(current() - 1); }
    if (event.key === "ArrowRight") { show(current() + 1); }
  });
  show(0);
})();
"""


def export_html(history_or_stepper, path, *, title="Backward, step by step", **draw_options) -> str:
    """Write the frames of a ``BackwardStepper`` (or a list of ``Frame``s, or of
    ``GraphSnapshot``s) to ``path`` as one self-contained HTML file; returns ``path``.

    It exports the history as it stands: call ``stepper.run()`` first for the whole
    backward pass. Keyword arguments go to the renderer (a stepper's own drawing
    options are used when there are none).
    """
    frames, pictures = _frames_and_pictures(history_or_stepper, draw_options)
    sections = [_section(i, f, p) for i, (f, p) in enumerate(zip(frames, pictures))]
    page = _page(title, len(frames), "\n".join(sections))
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path


def _frames_and_pictures(source, draw_options) -> tuple:
    """The frames to export and their drawings (a stepper's cached ones where possible)."""
    if hasattr(source, "history"):  # a BackwardStepper
        frames = list(source.history)
        if not draw_options:
            return frames, [source.picture(i) for i in range(len(frames))]
        draw_options = {**source.draw_options, **draw_options}
    else:
        frames = [f if isinstance(f, Frame) else _bare_frame(f) for f in source]
    return frames, [picture_html(f.snapshot, **draw_options) for f in frames]


def _bare_frame(snapshot) -> Frame:
    """A frame for a plain snapshot, filled from what the snapshot itself records."""
    runnable = [n for n in snapshot.nodes if n.kind in ("function", "accumulate")]
    frame = Frame(sum(n.ran for n in runnable), len(runnable), snapshot)
    frame.leaf_grads = [(n.name, n.grad) for n in snapshot.nodes if n.kind == "leaf"]
    current = [n for n in runnable if n.current]
    if current:
        frame.node = short_name(current[0].name)
        into = sorted((e for e in snapshot.edges if e.target == current[0].id), key=_input_nr)
        frame.grad_inputs = [(short_name(snapshot.node(e.source).name), e.grad) for e in into]
        frame.ready = [short_name(snapshot.node(i).name) for i in snapshot.ready]
    return frame


def _input_nr(edge) -> int:
    return edge.input_nr


def _section(i: int, frame: Frame, picture: str) -> str:
    title = frame.title if frame.total else f"snapshot {i}"
    return (
        f'<section class="tg-frame" id="tg-frame-{i}" data-title="{html.escape(title)}">\n'
        f'<div class="tg-graph">{_inline(picture, f"f{i}-")}</div>\n'
        f'<div class="tg-panel">{panel_html(frame)}</div>\n</section>'
    )


def _inline(picture: str, prefix: str) -> str:
    """An SVG ready to sit in a page beside others: no xmlns URLs, and ids made unique
    per frame (Graphviz names every drawing's parts node1, edge1, ...)."""
    picture = _XMLNS.sub("", picture)
    picture = _ID.sub(lambda m: f'id="{prefix}{m.group(1)}"', picture)
    return _REF.sub(lambda m: m.group(1) + prefix, picture)


def _page(title: str, count: int, sections: str) -> str:
    e = html.escape(title)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{e}</title>
<style>{STYLE}{BOX_STYLE}</style>
</head>
<body>
<div class="tg-export">
<h1>{e}</h1>
<div class="tg-controls">
<button id="tg-prev" type="button">&larr; Prev</button>
<input id="tg-slider" type="range" min="0" max="{count - 1}" value="0" step="1" aria-label="step">
<button id="tg-next" type="button">Next &rarr;</button>
<span id="tg-label"></span>
</div>
{sections}
</div>
<script>{script()}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""

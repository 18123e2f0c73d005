"""The picture box of the widgets: a drawing you can zoom, pan and fold with a click.

``GraphView`` and ``BackwardStepper`` show their drawing in a ``PictureBox``: an
anywidget (the ecosystem's way to ship a widget's own JavaScript to JupyterLab,
Notebook 7, VS Code and exported notebooks, with nothing loaded from the network)
whose script is ``_static/graph_view.js``. What it does in the browser is described
there: buttons and Ctrl+wheel zoom, dragging pans, the running node is kept in view,
and a click on a module frame (or on a folded box) sends ``{"fold": [ident]}`` (or
``{"open": [idents]}``) back here. ``PictureBox`` keeps those choices in ``folded``
(``{ident: True or False}``, what ``viz.draw(folded=...)`` takes) and calls its
``on_fold`` so the owner redraws.

The pan/zoom maths is Panzoom 4.6.2 (MIT, ``_static/panzoom-LICENSE.txt``), vendored
as a static file: a well-kept library rather than hand-written transforms.

    >>> box = PictureBox(value="<b>a picture</b>")
    >>> box.choose({"fold": ["module-0"]}); box.folded
    {'module-0': True}
    >>> box.choose({"open": ["module-0"]}); box.folded
    {'module-0': False}
"""

from __future__ import annotations

import pathlib

import anywidget
import traitlets

from ._clusters import opened

STATIC = pathlib.Path(__file__).with_name("_static")
PANZOOM = STATIC / "panzoom-4.6.2.min.js"

STYLE = """
.tg-box{width:100%;min-width:0}
.tg-box-bar{display:flex;gap:.3em;align-items:center;margin:0 0 .25em;font:12px sans-serif}
.tg-box-bar[hidden]{display:none}
.tg-box-button{min-width:2.2em;padding:.1em .5em;border:1px solid #bdbdbd;border-radius:4px;
  background:#fafafa;color:#424242;cursor:pointer}
.tg-box-button:hover{background:#eeeeee}
.tg-box-hint{color:#757575;margin-left:.4em}
.tg-box-view{overflow:hidden;max-height:80vh;touch-action:none;cursor:grab}
.tg-box-stage{transform-origin:0 0}
.tg-foldable g.cluster.module>path,.tg-foldable g.cluster.module>polygon,
.tg-foldable g.cluster.repeat>path,.tg-foldable g.cluster.repeat>polygon,
.tg-foldable g.node.fold{cursor:pointer}
.tg-foldable g.cluster.module:hover>path,.tg-foldable g.cluster.module:hover>polygon{stroke-width:2.5}
"""


def script() -> str:
    """The box's JavaScript: Panzoom, kept as a local name (its UMD wrapper sees
    ``module.exports`` and fills it instead of setting a global), then
    ``graph_view.js``. The exported web page includes it as it is; the widget adds
    anywidget's ``export default``.

    >>> code = script(); "function graphBox" in code, "export default" in code
    (True, False)
    """
    library = PANZOOM.read_text(encoding="utf-8")
    panzoom = (
        "const Panzoom = (() => { const module = { exports: {} }; const exports = module.exports;\n"
        f"{library}\nreturn module.exports; }})();\n"
    )
    return panzoom + (STATIC / "graph_view.js").read_text(encoding="utf-8")


class PictureBox(anywidget.AnyWidget):
    """A widget showing ``value`` (HTML holding a Graphviz SVG, or text) in a box that
    zooms, pans, follows the running node and folds module frames on a click."""

    _esm = script() + "export default { render };\n"
    _css = STYLE
    value = traitlets.Unicode("").tag(sync=True)

    def __init__(self, on_fold=None, **kwargs):
        super().__init__(**kwargs)
        self.folded = {}  # cluster ident -> True (folded by a click) or False (opened)
        self.on_fold = on_fold
        self.on_msg(self._message)

    def choose(self, message: dict) -> None:
        """Apply a click from the browser: ``{"fold": [...]}`` or ``{"open": [...]}``."""
        for ident in message.get("fold", []):
            self.folded[str(ident)] = True
        for name in message.get("open", []):
            for ident in opened(str(name)):  # a run of repeats opens as a whole
                self.folded[ident] = False
        if self.on_fold is not None:
            self.on_fold()

    def _message(self, _widget, content, _buffers) -> None:
        if isinstance(content, dict):
            self.choose(content)

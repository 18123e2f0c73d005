"""viz: pictures of teachgrad's autograd graph.

``viz.draw(loss)`` shows the graph behind ``loss`` in a notebook (as SVG) and saves
it as .svg, .png or .pdf; ``viz.text(loss)`` writes the same facts as text. viz reads
only teachgrad's public graph data (``teachgrad.autograd.graph.snapshot`` and the
recorded events) and never reaches into the engine; teachgrad never imports viz.

Modules:

- ``render.py``  -- snapshot -> DOT -> SVG/PNG/PDF; the visual language; the renderer
  chain (system ``dot``, else ``graphviz-pure``, else text)
- ``text.py``    -- a plain-text rendering for terminals and machines without Graphviz
- ``live.py``    -- ``GraphView``, a widget that redraws as the graph grows
- ``stepper.py`` -- ``BackwardStepper``, step through backward() node by node
- ``export.py``  -- a stepper's history as one self-contained HTML file
- ``_graph.py``, ``_clusters.py`` -- reading snapshots; grouping big graphs into clusters
- ``_names.py``  -- tensors named after the learner's variables (``x``, ``h``, ``0.weight``)
- ``_fit.py``    -- a drawing as HTML that fits the width it is given, with a zoom switch
"""

from __future__ import annotations

import importlib
from pathlib import Path

from . import render
from ._fit import fit
from ._graph import as_snapshot
from ._names import learner_names
from .text import text

__all__ = [
    "BackwardStepper",
    "Drawing",
    "GraphView",
    "draw",
    "export_html",
    "render",
    "text",
]

SUFFIXES = {".svg": "svg", ".png": "png", ".pdf": "pdf"}


class Drawing:
    """A picture of a graph: shows itself in Jupyter and can be saved.

    ``.snapshot`` is the ``GraphSnapshot`` drawn, ``.source`` the DOT source, ``.svg``
    the picture (None when no Graphviz program is installed: then Jupyter shows
    ``.text()`` and a line saying what to install).

    >>> import teachgrad as tg
    >>> d = draw(tg.ones(2, requires_grad=True).exp())
    >>> d.source.startswith("digraph"), "ExpBackward0" in d.text()
    (True, True)
    """

    def __init__(self, snapshot, **options):
        self.snapshot = snapshot
        self.options = options
        self.source = render.to_dot(snapshot, **options)
        self._svg = None

    @property
    def svg(self) -> str | None:
        """The SVG picture (made once, when first needed), or None without a renderer."""
        if self._svg is None:
            picture = render.render(self.source, "svg")
            self._svg = None if picture is None else picture.decode()
        return self._svg

    def text(self) -> str:
        """The text rendering of the same snapshot (``viz.text``)."""
        keys = ("show_saved", "show_versions", "show_grads")
        return text(self.snapshot, **{k: v for k, v in self.options.items() if k in keys})

    def _repr_svg_(self):
        return self.svg

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Jupyter's display: the SVG picture, or the text and what to install."""
        svg = self.svg
        if svg is None:
            return {"text/plain": f"{self.text()}\n\n{render.no_renderer_message()}"}
        # HTML first: it fits the output area (viz._fit); the plain SVG for other viewers
        html = fit(svg[svg.index("<svg") :])
        return {"text/html": html, "image/svg+xml": svg, "text/plain": self.text()}

    def save(self, path) -> Path:
        """Write the picture; the suffix says the format: .svg, .png, .pdf (.dot: the source).

        >>> import teachgrad as tg, tempfile, os
        >>> d = draw(tg.ones(2, requires_grad=True).exp())
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = d.save(os.path.join(folder, "graph.dot"))
        ...     path.read_text().startswith("digraph")
        True
        """
        path = Path(path)
        suffix = path.suffix.lower()
        if suffix in (".dot", ".gv"):
            path.write_text(self.source)
            return path
        if suffix not in SUFFIXES:
            raise ValueError(
                f"cannot save a drawing as {suffix or 'a file without suffix'!r}: "
                "use .svg, .png, .pdf (or .dot for the DOT source)"
            )
        picture = render.render(self.source, SUFFIXES[suffix])
        if picture is None:
            raise RuntimeError(
                f"cannot save {path.name}: no Graphviz program to draw with. "
                f"{render.no_renderer_message()} (Drawing.text() and .source need no Graphviz.)"
            )
        path.write_bytes(picture)
        return path

    def __repr__(self) -> str:
        found = render.find_renderer()
        how = found.name if found else "none, showing text"
        return f"<viz.Drawing of {len(self.snapshot.nodes)} nodes (renderer: {how})>"


def draw(
    graph,
    show_saved=True,
    show_versions=True,
    show_grads=None,
    params=None,
    rankdir="TB",
    *,
    steps=None,
    fold=None,
    folded=None,
    legend=False,
    formulas=False,
    values=render.VALUES,
    digits=4,
) -> Drawing:
    """A picture of the graph behind ``graph``: a tensor (a module's output, say), a
    list/tuple of tensors, or a ``GraphSnapshot``.

    ``show_saved`` / ``show_versions``: saved tensors and their version badges;
    ``show_grads``: gradients on edges (None: when drawn during backward) and on leaves
    (None: once they have one); ``params``: a Module (its scopes become clusters) or a
    dict naming tensors (tensors are otherwise named after your variables);
    ``rankdir``: "TB" or "LR"; ``steps``: the ``backward_steps`` run so far;
    ``fold``: fold clusters of big graphs into boxes (None: above 120 nodes);
    ``folded``: frames to fold (True) or keep open (False), by ident
    (``{"module-layers.0": True}``; in the widgets a click on a frame does this);
    ``legend``: add a key; ``formulas``: each Function node shows its local derivative
    rules (``∂self = ∂out · other``); ``values``, ``digits``: tensors with at most
    ``values`` elements show them, with ``digits`` significant digits.
    Display it in Jupyter, or ``.save("graph.svg")``.

    >>> import teachgrad as tg
    >>> model = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.Tanh())
    >>> d = draw(model(tg.ones(4, 3)).sum(), params=model)
    >>> "0.weight" in d.source, 'label="0 (Linear)"' in d.source
    (True, True)
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> "∂self = ∂out · result" in draw(x.exp(), formulas=True).source
    True
    """
    options = dict(
        show_saved=show_saved,
        show_versions=show_versions,
        show_grads=show_grads,
        rankdir=rankdir,
        fold=fold,
        folded=folded,
        legend=legend,
        formulas=formulas,
        values=values,
    )
    snapshot = as_snapshot(
        graph, params=learner_names(params), steps=steps, values=values, digits=digits
    )
    return Drawing(snapshot, params=params, **options)


_LATER = {"GraphView": "live", "BackwardStepper": "stepper", "export_html": "export"}


def __getattr__(name):
    """``viz.GraphView`` and friends load their module (and ipywidgets) on first use."""
    if name in _LATER:
        return getattr(importlib.import_module(f".{_LATER[name]}", __name__), name)
    raise AttributeError(f"module 'viz' has no attribute {name!r}")

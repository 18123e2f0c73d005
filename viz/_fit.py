"""Pictures that fit their place: an SVG drawing as HTML that scales to the width it is
given, with a zoom switch for graphs too big to read that way.

Graphviz writes ``<svg width="3236pt" height="781pt" viewBox="...">``: a fixed size, so a
real model's graph runs far past a notebook's output area (or a stepper's pane) and its
right half is hidden. ``fit(svg)`` keeps the ``viewBox`` and drops the fixed size: the
picture takes the width of its container, never more than its natural width (small
graphs are not blown up), and its height follows. A big graph shrinks to fit; the
*zoom* switch above it shows it at its natural size in a scrolling box (pan with the
scroll bars or the wheel), and switching it off fits it again.

The switch is a checkbox and one CSS rule (``:has``), with no JavaScript and nothing
loaded from the network, so it works wherever HTML is shown: JupyterLab, Notebook 7,
VS Code, an ipywidgets ``HTML`` (which never runs scripts) and the exported page.

    >>> html = fit('<svg width="300pt" height="60pt" viewBox="0 0 300 60"><g/></svg>')
    >>> 'width="100%"' in html, "max-width:400px" in html, 'height="60pt"' in html
    (True, True, False)
"""

from __future__ import annotations

import re

ZOOM_ABOVE_PX = 600  # narrower drawings fit anywhere: no zoom switch
_SIZE = re.compile(r'<svg\b([^>]*?)\swidth="([\d.]+)pt"\s+height="([\d.]+)pt"')

# One rule set, repeated in every picture (a picture may be shown on its own): the
# drawing fits by default; with the switch on it has its natural width and the box scrolls.
STYLE = (
    "<style>"
    ".tg-fit{max-width:100%;overflow:auto}"
    ".tg-fit>svg{display:block;height:auto}"
    ".tg-fit:has(.tg-zoom:checked)>svg{width:var(--tg-natural);max-width:none}"
    ".tg-zoom-label{font:12px sans-serif;color:#555;cursor:pointer;user-select:none}"
    "</style>"
)


def natural_width(svg: str) -> float | None:
    """The drawing's own width in CSS pixels (Graphviz writes points: 1pt = 4/3 px).

    >>> natural_width('<svg width="75pt" height="10pt">'), natural_width("<svg>")
    (100.0, None)
    """
    match = _SIZE.search(svg)
    return None if match is None else float(match.group(2)) * 4 / 3


def fit(svg: str, switch: bool = True) -> str:
    """``svg`` (Graphviz's, without the XML prolog) as HTML that fits its container;
    ``switch=False`` leaves out the zoom switch (the widgets' picture box zooms itself)."""
    width = natural_width(svg)
    if width is None:  # not a Graphviz drawing: leave it as it is
        return svg
    px = f"{width:.0f}px"
    svg = _SIZE.sub(rf'<svg\1 width="100%" style="--tg-natural:{px};max-width:{px}"', svg, count=1)
    label = ""
    if switch and width > ZOOM_ABOVE_PX:
        label = (
            '<label class="tg-zoom-label" title="show the graph at its natural size; '
            'scroll to move around"><input type="checkbox" class="tg-zoom"> zoom</label>'
        )
    return f'<div class="tg-fit">{STYLE}{label}{svg}</div>'

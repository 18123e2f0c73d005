"""viz: pictures of teachgrad's autograd graph.

This package will hold the visualizer. It reads only teachgrad's public graph
data (``teachgrad.autograd.graph.snapshot`` and the recorded events) and never
reaches into the engine; teachgrad never imports viz.

Planned modules:

- ``render.py``  -- graph snapshot -> graphviz SVG (``viz.draw``)
- ``live.py``    -- ``GraphView``, a widget that redraws as the graph grows
- ``stepper.py`` -- ``BackwardStepper``, step through backward() node by node
- ``export.py``  -- a stepper's history as one self-contained HTML file
- ``text.py``    -- a plain-text rendering for when graphviz is unavailable
"""

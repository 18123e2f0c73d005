"""GraphView: a notebook widget that redraws the autograd graph while your cells run.

What lives here:

* ``GraphView`` -- listens to teachgrad's events (an op recorded, a version
  bumped by an in-place op) and redraws the graph behind the tensors it watches, at
  most ``max_fps`` times a second, and once more when a cell (or its ``with``
  block) ends, which shows what backward did (gradients, released saved tensors);
* ``picture_html(snapshot)`` -- one snapshot as an inline ``<svg>`` that fits the
  width it is given (``viz._fit``), or as ``<pre>`` text when no Graphviz renderer
  exists; the stepper and the HTML export draw with it too. The widgets show it in a
  ``viz._box.PictureBox``, which zooms, pans and folds module frames with a click.

How the throttle works: every interesting event marks the view *pending*. If
the last redraw is older than ``1 / max_fps`` seconds, it redraws at once;
otherwise it asks for a call when that time is up (on the notebook's event loop,
which runs as soon as the cell finishes), so the last state is always drawn.
Outside a notebook nothing calls back: ``flush()`` (or leaving the ``with``
block) draws what is pending.

What does not live here: the drawing itself (``viz.render``, ``viz.text``) and
the graph data (``tg.autograd.graph.snapshot``); this module only decides
*when* to draw *which* tensors.

    >>> import teachgrad as tg
    >>> from viz.live import GraphView
    >>> x = tg.tensor([1.0, 2.0], requires_grad=True)
    >>> with GraphView() as view:          # watches the latest op's result
    ...     y = (x * x).sum()
    >>> view.snapshot.node_named("MulBackward0").kind
    'function'
    >>> view.listening
    False
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import importlib
import inspect
import math
import re
import time

import ipywidgets as widgets

import teachgrad as tg
from teachgrad.autograd import graph as tg_graph

from ._box import PictureBox
from ._fit import fit
from ._names import caller_namespaces, learner_names

# The events that change what the picture shows: its nodes and versions. Backward's
# events (a gradient accumulated, saved tensors released: a dozen per training step) are
# not listened to; the redraw at the end of a cell shows what backward did. (Events cost a
# watched training loop 7% more instructions with them, 4% without: callgrind, 200 steps.)
WATCHED = (tg_graph.OpRecorded, tg_graph.VersionBumped)

BUDGET = 0.05  # the share of the time redraws may take (see GraphView.gap)
COLLECT_S = 0.05  # how often a view looks for a picture Graphviz is laying out
NOTHING_YET = "(no graph yet: run an op on a tensor that requires grad)"
_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)  # <?xml ...?> and <!DOCTYPE ...> before <svg


def to_svg(snapshot, **draw_options) -> str | None:
    """``viz.render.to_svg`` with the XML prolog removed, so the SVG can sit inside HTML;
    None when no Graphviz renderer is installed."""
    # looked up at each call, so tests (and users) can swap the renderer
    render = importlib.import_module(".render", __package__)
    svg = render.to_svg(snapshot, **draw_options)
    return None if svg is None else inline(svg)


def inline(svg: str) -> str:
    """Graphviz's SVG without the XML prolog, so it can sit inside HTML."""
    return _PROLOG.sub("", svg, count=1)


TEXT_OPTIONS = ("show_saved", "show_versions", "show_grads")  # what viz.text understands


def text_of(snapshot, **draw_options) -> str:
    """The plain-text picture of ``snapshot`` (``viz.text``), with the options it knows."""
    options = {k: v for k, v in draw_options.items() if k in TEXT_OPTIONS}
    return importlib.import_module(".text", __package__).text(snapshot, **options)


def picture_html(snapshot, **draw_options) -> str:
    """``snapshot`` as an HTML fragment for a picture box (which has its own zoom): an
    inline ``<svg>``, else ``<pre>`` text.

    >>> import teachgrad as tg
    >>> snap = tg.autograd.graph.snapshot(tg.ones(2, requires_grad=True).exp())
    >>> picture_html(snap).startswith(('<div class="tg-fit">', '<pre class="tg-text">'))
    True
    """
    svg = to_svg(snapshot, **draw_options)
    return text_html(snapshot, **draw_options) if svg is None else fit(svg, switch=False)


def text_html(snapshot, **draw_options) -> str:
    """The text picture of ``snapshot`` in a ``<pre>`` block."""
    return f'<pre class="tg-text">{html.escape(text_of(snapshot, **draw_options))}</pre>'


def describe(event) -> str:
    """One event, as the status line says it.

    >>> import teachgrad as tg
    >>> with tg.autograd.graph.record() as events:
    ...     _ = tg.ones(2, requires_grad=True).exp()
    >>> describe(events[0])
    'recorded ExpBackward0'
    """
    if isinstance(event, tg_graph.OpRecorded):
        return f"recorded {event.node.name()}"
    if isinstance(event, tg_graph.VersionBumped):
        return f"in-place {event.op} (version now {event.version})"
    return type(event).__name__


class _NoTimer:
    """The timer of a view with no event loop to call it back: cancelling does nothing."""

    def cancel(self) -> None:
        pass


NO_TIMER = _NoTimer()


_WRAPPERS = frozenset(("teachgrad._profiling", "teachgrad._arguments", "teachgrad._out"))


def failed_call(error: BaseException):
    """``(name, Tensor inputs)`` of the teachgrad call that raised ``error``: the outermost
    frame of its traceback inside teachgrad, which is the call the learner wrote (``x @ w``,
    ``layer(x)``), read from the traceback; None when teachgrad was not involved.

    >>> import teachgrad as tg
    >>> try:
    ...     tg.ones(2, 3) @ tg.ones(4, 5)
    ... except RuntimeError as error:
    ...     name, inputs = failed_call(error)
    >>> name, [tuple(t.shape) for t in inputs]
    ('matmul', [(2, 3), (4, 5)])
    """
    tb = error.__traceback__
    while tb is not None:
        module = tb.tb_frame.f_globals.get("__name__", "")
        # (the wrappers around some functions are not the call itself: the profiler's,
        # recorded_as, the one that words bad arguments as torch does, checked, and the one
        # that gives torch's functions out=, accepts_out)
        if module.split(".")[0] == "teachgrad" and module not in _WRAPPERS:
            return _called(tb.tb_frame)
        tb = tb.tb_next
    return None


def _called(frame) -> tuple:
    """The name and the Tensor arguments of the call running in ``frame``."""
    code, local = frame.f_code, frame.f_locals
    count = code.co_argcount + code.co_kwonlyargcount
    values = [local[n] for n in code.co_varnames[:count] if n in local]
    if code.co_flags & inspect.CO_VARARGS:  # ``*args``: its items are arguments too
        values += list(local.get(code.co_varnames[count], ()))
    if values and isinstance(values[0], tg.nn.Module):  # a layer called on its input
        return type(values[0]).__name__, [v for v in values[1:] if isinstance(v, tg.Tensor)]
    return code.co_name.strip("_"), [v for v in values if isinstance(v, tg.Tensor)]


def _ipython():
    """The running IPython shell, or None (plain Python)."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


class Drawer:
    """Graphviz beside the user's code, for the redraws that events cause in a notebook.

    Why: of a redraw of a small model, the snapshot and the DOT text take about 2 ms and
    the ``dot`` program about 50 ms; waiting for ``dot`` made a watched training loop
    1.3x-1.6x slower. ``submit`` starts the program (a ``viz.render.Job``) and returns:
    the loop goes on while it lays the picture out, and the picture is shown at the
    next ``poll`` (the next redraw) or ``wait``. Only the newest source waits its turn:
    one that a newer source replaced before the program was free is never drawn.

    >>> shown = []
    >>> drawer = Drawer(lambda svg, error: shown.append((svg is None, error)))
    >>> drawer.submit("digraph { a -> b }"); drawer.wait(); shown
    [(False, None)]
    """

    def __init__(self, show):
        self.show = show  # show(svg or None, error or None)
        self.job = None  # the Graphviz run in progress
        self._next = None  # the newest DOT source not started yet
        self.layout_s = 0.0  # the CPU seconds the last finished run took

    def submit(self, source: str) -> None:
        self._next = source
        self.poll()

    def poll(self) -> None:
        """Show a finished picture; start the newest waiting source if Graphviz is free."""
        if self.job is not None:
            if not self.job.done():
                return
            self._finish()
        if self._next is not None:
            source, self._next = self._next, None
            self._start(source)

    @property
    def busy(self) -> bool:
        """Something submitted is not shown yet."""
        return self.job is not None or self._next is not None

    def wait(self) -> None:
        """Return once everything submitted is drawn."""
        while self.job is not None or self._next is not None:
            if self.job is not None:
                self._finish()
            self.poll()

    def _start(self, source: str) -> None:
        render = importlib.import_module(".render", __package__)
        try:
            renderer = render.find_renderer()
            if renderer is None:
                self.show(None, None)
            else:
                self.job = render.Job(renderer, source)
        except Exception as exc:  # a drawing bug must never break the user's code
            self.show(None, exc)

    def _finish(self) -> None:
        job, self.job = self.job, None
        try:
            picture = job.result()
        except Exception as exc:
            self.show(None, exc)
            return
        self.layout_s = job.cpu_s or 0.0
        self.show(picture.decode(), None)


def call_later(delay: float, fn):
    """Run ``fn`` after ``delay`` seconds on the running event loop (a notebook kernel
    has one); returns a handle with ``cancel()``, or None when there is no loop."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, fn)


class GraphView(widgets.VBox):
    """A widget that shows the autograd graph growing as your code runs ops.

    ``GraphView(*roots)`` draws the graph behind ``roots``; with no roots it follows
    the result of the latest recorded op (which, after a forward pass, is the loss
    and so shows the whole graph). It listens from the start (``listen=False`` to
    wait for ``start()``) until ``stop()`` or ``close()``; as a context manager it
    listens inside the block and draws the final state on the way out.

    State you can read (tests do): ``svg`` (the last SVG, None if drawn as text),
    ``snapshot`` (the last GraphSnapshot drawn), ``renders`` (how many redraws),
    ``pending`` (a change is waiting to be drawn), ``listening``, ``ops`` and
    ``bumps`` (events seen).

    ``max_fps`` bounds the redraws per second; ``clock`` (seconds, like
    ``time.monotonic``) and ``schedule(delay, fn) -> handle | None`` can be replaced,
    e.g. by a fake clock in a test. ``background`` (default: in IPython) lays out the
    redraws that events cause on a ``Drawer`` thread, so the watched code runs on
    meanwhile; ``render()`` and ``flush()`` always draw before they return. Other
    keyword arguments go to the renderer (``show_saved``, ``show_versions``, ``show_grads``).

    >>> import teachgrad as tg
    >>> w = tg.ones(2, requires_grad=True)
    >>> view = GraphView((w * 2).sum(), listen=False)
    >>> view.renders, view.snapshot.node_named("SumBackward0").kind
    (1, 'function')
    """

    def __init__(
        self,
        *roots,
        params=None,
        max_fps: float = 10,
        clock=time.monotonic,
        schedule=call_later,
        listen: bool = True,
        background: bool | None = None,
        **draw_options,
    ):
        super().__init__()
        self.background = _ipython() is not None if background is None else background
        self._drawer = Drawer(self._show_svg)
        self.roots = list(roots)
        self.follow = not roots  # no roots given: follow the latest op's result
        self.params = params
        # where names come from: the caller's namespace (a notebook's globals stay live,
        # so variables assigned after this call are named too)
        self.namespaces = caller_namespaces()
        self.interval = 1.0 / max_fps
        self.clock = clock
        self.schedule = schedule
        self.draw_options = {"params": params, **draw_options}
        self.svg = None
        self.snapshot = None
        self.renders = 0
        self.ops = 0
        self.bumps = 0
        self.pending = False
        self._last_event = None
        self._latest = None  # the outputs of the latest recorded op, until drawn
        self._last_render = self._due = -math.inf
        self._spent = 0.0  # how long the last redraw took in this thread
        self.failure = None  # (op, message) of an op that raised, while it is drawn
        self._shell = None  # IPython, while listening there
        self._timer = None  # the handle of a scheduled redraw, if any
        self._collecting = None  # the handle of a scheduled _collect, if any
        self._listening = None
        self.graph = PictureBox(on_fold=self.render)  # a click on a frame folds it
        self.graph.add_class("tg-graph")
        self.status = widgets.HTML()
        self.status.add_class("tg-status")
        self.children = [self.graph, self.status]
        self.add_class("tg-graphview")
        self.render()
        self._last_render = self._due = -math.inf  # the first change is drawn at once
        if listen:
            self.start()

    # ---------------------------------------------------------------- listening
    @property
    def listening(self) -> bool:
        return self._listening is not None

    def start(self) -> GraphView:
        """Listen to autograd events (does nothing if already listening); in IPython, also
        to cells that raise (see ``show_error``)."""
        if self._listening is None:
            self._listening = tg.autograd.graph.add_listener(self._on_event, kinds=WATCHED)
            self._shell = _ipython()
            if self._shell is not None:
                self._shell.events.register("post_run_cell", self._after_cell)
        return self

    def stop(self) -> None:
        """Stop listening and draw the graph as it is now, so nothing is lost."""
        self._unlisten()
        self.render()

    def close(self) -> None:
        """Stop listening and close the widget (it disappears from the notebook)."""
        self._unlisten()
        if getattr(self, "_drawer", None) is not None:
            self._drawer.wait()
        super().close()

    def _unlisten(self) -> None:
        # getattr: ipywidgets may close a widget whose __init__ did not get this far
        listening = getattr(self, "_listening", None)
        if listening is not None:
            listening.remove()
            self._listening = None
        shell = getattr(self, "_shell", None)
        if shell is not None:
            with contextlib.suppress(ValueError):  # (not registered)
                shell.events.unregister("post_run_cell", self._after_cell)
            self._shell = None
        for handle in ("_timer", "_collecting"):
            if getattr(self, handle, None) is not None:
                getattr(self, handle).cancel()
                setattr(self, handle, None)

    def __enter__(self) -> GraphView:
        return self.start()

    def __exit__(self, kind, error, traceback) -> None:
        self.namespaces = caller_namespaces()  # the block's variables, as they are now
        self.stop()
        if error is not None:
            self.show_error(error)

    # ---------------------------------------------------------------- a failed op
    def show_error(self, error: BaseException) -> None:
        """Keep the picture of what was recorded and mark the op that raised ``error``
        (a shape mismatch, say): a red box fed by that op's inputs, with the message.
        Called when the ``with`` block raises, and in IPython after a cell that raised."""
        call = failed_call(error)
        if call is None:
            return
        name, inputs = call
        self.failure = (name, str(error).splitlines()[0] if str(error) else type(error).__name__)
        roots = [t for t in inputs if t.grad_fn is not None or t.requires_grad]
        self.roots = roots or self.roots
        self.render()
        self.failure = None  # the next change draws the graph as it is again

    def _after_cell(self, result) -> None:
        """IPython's post_run_cell event: a cell that raised shows where the graph stopped;
        any other cell is drawn as it left the graph (backward's gradients included)."""
        if result.error_in_exec is not None:
            self.show_error(result.error_in_exec)
        else:
            self.render(wait=not self.background)

    def watch(self, *roots) -> None:
        """Draw the graph behind these tensors from now on (no roots: follow the latest op)."""
        self.roots = list(roots)
        self.follow = not roots
        self.render()

    # ---------------------------------------------------------------- events
    def _on_event(self, event) -> None:
        """Called by teachgrad, in the middle of an op (for the WATCHED kinds only): note
        it, redraw if due. It runs for every op of a watched loop, so it only notes: the
        latest op's outputs are looked at when drawing (``_follow``)."""
        kind = type(event)
        if kind is tg_graph.OpRecorded:
            self.ops += 1
            self._latest = event.outputs
        elif kind is tg_graph.VersionBumped:
            self.bumps += 1
        self._last_event = event  # described when drawn: most events are never shown
        self.pending = True
        if self.clock() >= self._due:
            self.render(wait=not self.background)
        elif self._timer is None:
            # without an event loop (plain Python) nothing calls back: stop asking at each
            # event; the next redraw, flush() or stop() draws what is pending
            self._timer = self.schedule(self._due - self.clock(), self._on_timer) or NO_TIMER

    def _follow(self) -> None:
        """With no roots given, draw from the latest recorded op's outputs."""
        if self.follow and self._latest is not None:
            outputs = [t for t in self._latest if getattr(t, "grad_fn", None) is not None]
            self.roots = outputs or self.roots
            self._latest = None

    def gap(self) -> float:
        """Seconds to leave between two redraws: ``1 / max_fps``, or more when a redraw
        is slow, so that drawing takes at most ``BUDGET`` of the time.

        Why: a redraw is a snapshot plus a Graphviz run (tens of ms for a small model),
        so at 10 redraws a second a training loop watched by a GraphView ran 2.8x slower
        (benchmarks/bench_viz.py, (4)). Waiting ``(spent + layout) / BUDGET`` after a
        redraw bounds the cost whatever the graph's size: ``spent`` is the redraw's time
        in the user's thread (Graphviz's run included when it waited for it) and, in the
        background, ``layout`` is the CPU time of Graphviz's last run, which takes a CPU
        too while it runs beside the user's code.
        """
        layout = self._drawer.layout_s if self.background else 0.0
        return max(self.interval, (self._spent + layout) / BUDGET)

    def _on_timer(self) -> None:
        self._timer = None
        if self.pending:
            self.render(wait=not self.background)

    def flush(self) -> None:
        """Draw now if a change is waiting to be drawn (and show a picture still being laid out)."""
        if self.pending:
            self.render()
        else:
            self._drawer.wait()

    def _collect(self) -> None:
        """Called back on the event loop (after the cell): show what Graphviz laid out."""
        self._collecting = None
        self._drawer.poll()
        if self._drawer.busy:
            self._collecting = self.schedule(COLLECT_S, self._collect) or NO_TIMER

    # ---------------------------------------------------------------- drawing
    def render(self, wait: bool = True) -> None:
        """Take a snapshot of the watched tensors and draw it (ignores the throttle);
        ``wait=False`` hands the layout to the background ``Drawer``."""
        self.pending = False
        self._last_render = start = self.clock()
        self.renders += 1
        self._follow()
        self.snapshot = None
        if wait:
            self._drawer.wait()  # an older picture never lands after this one
        if not self.roots:
            self._show_picture(f'<pre class="tg-text">{NOTHING_YET}</pre>', svg=None)
        else:
            try:
                names = learner_names(self.params, self.namespaces)
                self.snapshot = tg.autograd.graph.snapshot(*self.roots, params=names)
                render = importlib.import_module(".render", __package__)
                if render.find_renderer() is None:
                    self._show_picture(text_html(self.snapshot, **self.draw_options), svg=None)
                else:
                    options = {"failure": self.failure, "folded": self.graph.folded}
                    source = render.to_dot(self.snapshot, **options, **self.draw_options)
                    self._drawer.submit(source)
                    if wait:
                        self._drawer.wait()
                    elif self._collecting is None:  # no event may come to show it: ask for a call
                        self._collecting = self.schedule(COLLECT_S, self._collect) or NO_TIMER
            except Exception as exc:  # a drawing bug must never break the user's op
                self._show_svg(None, exc)
        self._spent = self.clock() - start
        self._due = self._last_render + self.gap()  # the next redraw, at the earliest
        self.status.value = html.escape(
            f"{self.ops} ops recorded, {self.bumps} in-place changes"
            + (f" | last: {describe(self._last_event)}" if self._last_event else "")
        )

    def _show_svg(self, svg, error) -> None:
        """Show what the drawer made of the last source: a picture, or why there is none."""
        if error is not None:
            message = html.escape(repr(error))
            self._show_picture(f'<pre class="tg-error">cannot draw: {message}</pre>', svg=None)
        elif svg is None:  # the renderer went away since render() looked for it
            self._show_picture(text_html(self.snapshot, **self.draw_options), svg=None)
        else:
            svg = inline(svg)
            self._show_picture(fit(svg, switch=False), svg=svg)

    def _show_picture(self, picture: str, svg) -> None:
        self.svg = svg
        self.graph.value = picture

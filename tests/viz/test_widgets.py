"""The interactive half of viz: BackwardStepper and GraphView, driven without a browser.

Each widget exposes its state (index, history, panel HTML, renders ...) and the
methods its buttons call, so these tests click through them as a student would
and check what the widgets show against what the engine really does.
"""

import html

import numpy as np
import pytest

import teachgrad as tg
import viz
import viz.render
from viz._fit import fit
from viz.render import short_name
from viz.stepper import BackwardStepper, panel_html, preview

# ----------------------------------------------------------------------------- models
# Each builder makes a fresh graph from fixed numbers: called twice it gives two
# identical graphs, one to step through and one for a plain loss.backward().


def _leaf(seed, *shape, name=None):
    t = tg.tensor(np.random.default_rng(seed).standard_normal(shape), requires_grad=True)
    t.name = name
    return t


def mlp():
    x = tg.tensor(np.random.default_rng(0).standard_normal((4, 3)))
    w1, b1, w2 = _leaf(1, 3, 5, name="W1"), _leaf(2, 5, name="b1"), _leaf(3, 5, 1, name="W2")
    loss = ((x @ w1 + b1).tanh() @ w2).pow(2).mean()
    return loss, [w1, b1, w2]


def shared_leaves():
    """x reaches the loss along four paths, w along two: their grads are sums."""
    x, w = _leaf(4, 3, name="x"), _leaf(5, 3, name="w")
    loss = (x * x + x.exp() * w + (x * w).sin()).sum()
    return loss, [x, w]


def in_place_and_views():
    """An in-place op on a non-leaf and a view: the graph torch's rules rewrite."""
    a, b = _leaf(6, 3, 2, name="a"), _leaf(7, 2, 2, name="b")
    h = a * 2
    h.mul_(3)
    loss = (h[1:] * b.t()).sum()
    return loss, [a, b]


def sequential():
    tg.manual_seed(0)
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    x = tg.tensor(np.random.default_rng(8).standard_normal((5, 3)), dtype=tg.float32)
    loss = model(x).pow(2).sum()
    return loss, list(model.parameters())


MODELS = [mlp, shared_leaves, in_place_and_views, sequential]


def grads(leaves):
    return [None if t.grad is None else t.grad.numpy().copy() for t in leaves]


def assert_same_grads(got, expected):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g is not None and e is not None
        assert np.array_equal(g, e)  # exactly: the same engine ran the same nodes in order


def backward_grads(build):
    loss, leaves = build()
    loss.backward()
    return grads(leaves)


def text_of(widget_html):
    """What a reader sees in a panel: HTML with the escapes undone."""
    return html.unescape(widget_html)


# ----------------------------------------------------------------------------- stepper: the end result


@pytest.mark.parametrize("build", MODELS)
def test_run_to_end_gives_exactly_the_grads_of_backward(build):
    loss, leaves = build()
    stepper = BackwardStepper(loss)
    stepper.run()
    assert stepper.done and stepper.at_end
    assert_same_grads(grads(leaves), backward_grads(build))


@pytest.mark.parametrize("build", MODELS)
def test_stepping_one_node_at_a_time_gives_the_grads_of_backward(build):
    loss, leaves = build()
    stepper = BackwardStepper(loss)
    while not stepper.at_end:
        stepper.step()
    assert len(stepper.steps) == stepper.total  # every node reachable from loss ran once
    assert_same_grads(grads(leaves), backward_grads(build))


@pytest.mark.parametrize("build", MODELS)
def test_the_stepper_runs_the_nodes_in_the_engines_order(build):
    loss, _ = build()
    stepper = BackwardStepper(loss)
    stepper.run()
    fresh, _ = build()
    expected = [short_name(step.node.name()) for step in tg.autograd.backward_steps(fresh)]
    assert [frame.node for frame in stepper.history] == [None, *expected]


def test_run_after_some_steps_finishes_the_same_backward():
    loss, leaves = shared_leaves()
    stepper = BackwardStepper(loss)
    for _ in range(3):
        stepper.step()
    assert stepper.index == 3 and not stepper.done
    stepper.run()
    assert stepper.index == len(stepper.history) - 1 == stepper.total
    assert_same_grads(grads(leaves), backward_grads(shared_leaves))


def test_non_scalar_loss_takes_a_gradient_like_backward():
    x = _leaf(9, 3)
    stepper = BackwardStepper(x * x, gradient=tg.tensor([1.0, 0.5, 2.0]))
    stepper.run()
    assert np.allclose(x.grad.numpy(), 2 * x.detach().numpy() * [1.0, 0.5, 2.0])


# ----------------------------------------------------------------------------- stepper: what each step shows


def test_each_step_shows_the_node_that_ran_and_its_gradients():
    loss, _ = mlp()
    stepper = BackwardStepper(loss)
    assert stepper.current_node is None
    assert "nothing has run yet" in stepper.panel.value
    while not stepper.at_end:
        stepper.step()
        step = stepper.steps[-1]
        assert stepper.current_node is step.node
        panel = text_of(stepper.panel.value)
        assert (
            f'<span class="tg-swatch current"></span><b>{short_name(step.node.name())}</b> ran in this step'
            in panel
        )
        for g in step.grad_outputs:
            assert preview(g) in panel
        for g in step.grad_inputs:
            if g is not None:
                assert preview(g) in panel
        # the drawing is this step's snapshot: exactly the nodes run so far are marked
        snap = stepper.history[stepper.index].snapshot
        assert sum(n.ran for n in snap.nodes) == len(stepper.steps)
        assert [n.name for n in snap.nodes if n.current] == [step.node.name()]
        assert snap.finished == (not step.ready)  # the last step ends backward
        assert stepper.graph.value == stepper.picture(stepper.index)


def test_the_panel_shows_each_leafs_grad_once_its_accumulate_grad_ran():
    loss, (x, w) = shared_leaves()
    stepper = BackwardStepper(loss)
    no_grad_yet = "<td>x</td><td><code>None</code>"
    assert no_grad_yet in stepper.panel.value
    seen_x = False
    while not stepper.at_end:
        stepper.step()
        step = stepper.steps[-1]
        if step.node.name() == "torch::autograd::AccumulateGrad" and step.node.variable is x:
            seen_x = True
        if seen_x:
            row = f"<td>x</td><td><code>{html.escape(preview(x.grad))}</code>"
            assert row in stepper.panel.value
        else:
            assert x.grad is None and no_grad_yet in stepper.panel.value
    assert seen_x


def test_grad_inputs_say_where_each_gradient_goes():
    w = _leaf(10, 2, name="w")
    stepper = BackwardStepper((w * 3).sum())
    stepper.step()  # SumBackward0
    stepper.step()  # MulBackward0: w gets a gradient, the constant 3 gets none
    panel = text_of(stepper.panel.value)
    assert "AccumulateGrad of w" in panel
    assert "nowhere (that input needs no gradient)" in panel


def test_params_name_the_leaves_in_the_modules_order():
    loss, parameters = sequential()
    model_names = ["0.weight", "0.bias", "2.weight", "2.bias"]
    stepper = BackwardStepper(loss, params=dict(zip(model_names, parameters)))
    assert [name for name, _ in stepper.leaves] == model_names
    stepper.run()
    panel = stepper.panel.value
    positions = [panel.index(f"<td>{name}</td>") for name in model_names]
    assert positions == sorted(positions)
    panels = [text_of(panel_html(frame)) for frame in stepper.history]
    assert any("AccumulateGrad of 2.bias" in p for p in panels)


def test_the_widget_has_stable_css_hooks_for_a_browser_test():
    loss, _ = mlp()
    stepper = BackwardStepper(loss)
    assert "tg-stepper" in stepper._dom_classes
    assert "tg-graph" in stepper.graph._dom_classes
    assert "tg-panel" in stepper.panel._dom_classes
    assert "tg-step-button" in stepper.buttons["step"]._dom_classes
    for key in ("step", "run", "back", "reset"):
        assert "tg-stepper-button" in stepper.buttons[key]._dom_classes
    assert 'class="tg-current-node"' in stepper.panel.value


# ----------------------------------------------------------------------------- stepper: Back and Reset


def test_back_shows_the_previous_snapshot_and_step_replays_it():
    loss, leaves = mlp()
    stepper = BackwardStepper(loss)
    shown = [(stepper.graph.value, stepper.panel.value)]
    for _ in range(3):
        stepper.step()
        shown.append((stepper.graph.value, stepper.panel.value))
    grads_now = grads(leaves)
    stepper.back()
    assert stepper.index == 2
    assert (stepper.graph.value, stepper.panel.value) == shown[2]
    assert stepper.current_node is stepper.steps[1].node
    stepper.back()
    stepper.back()
    stepper.back()  # already at the start: stays there
    assert stepper.index == 0 and stepper.current_node is None
    assert (stepper.graph.value, stepper.panel.value) == shown[0]
    assert stepper.buttons["back"].disabled
    # Step after Back replays the history: no node runs again, no grad changes
    stepper.step()
    stepper.step()
    assert stepper.index == 2 and len(stepper.steps) == 3
    assert (stepper.graph.value, stepper.panel.value) == shown[2]
    for g, before in zip(grads(leaves), grads_now):
        assert (g is None and before is None) or np.array_equal(g, before)


def test_run_after_back_finishes_backward_once():
    loss, leaves = shared_leaves()
    stepper = BackwardStepper(loss)
    stepper.run()
    stepper.back()
    stepper.back()
    stepper.run()
    assert stepper.at_end
    assert_same_grads(grads(leaves), backward_grads(shared_leaves))


@pytest.mark.parametrize("build", MODELS)
def test_reset_then_run_gives_the_grads_of_one_backward(build):
    loss, leaves = build()
    stepper = BackwardStepper(loss, retain_graph=True)
    for _ in range(4):
        stepper.step()
    stepper.reset()
    assert stepper.index == 0 and len(stepper.history) == 1 and stepper.steps == []
    assert all(t.grad is None for t in leaves)  # as before the first step
    stepper.run()
    assert_same_grads(grads(leaves), backward_grads(build))


def test_reset_puts_back_grads_that_existed_before_stepping():
    loss, leaves = shared_leaves()
    for k, t in enumerate(leaves):
        t.grad = tg.full(tuple(t.shape), float(k + 1), dtype=t.dtype)
    before = grads(leaves)
    stepper = BackwardStepper(loss, retain_graph=True)
    first_view = (stepper.graph.value, stepper.panel.value)
    stepper.run()
    stepper.reset()
    assert_same_grads(grads(leaves), before)
    assert (stepper.graph.value, stepper.panel.value) == first_view
    stepper.run()  # accumulates on top, exactly as loss.backward() would
    fresh, fresh_leaves = shared_leaves()
    for k, t in enumerate(fresh_leaves):
        t.grad = tg.full(tuple(t.shape), float(k + 1), dtype=t.dtype)
    fresh.backward()
    assert_same_grads(grads(leaves), grads(fresh_leaves))


def test_reset_in_the_middle_of_backward_starts_over():
    loss, leaves = mlp()
    stepper = BackwardStepper(loss, retain_graph=True)
    stepper.run()
    stepper.back()
    stepper.reset()
    stepper.step()
    assert stepper.index == 1 and short_name(stepper.current_node.name()) == stepper.history[1].node
    stepper.run()
    assert_same_grads(grads(leaves), backward_grads(mlp))


# ----------------------------------------------------------------------------- stepper: retain_graph


def test_without_retain_graph_the_graph_is_freed_like_backward_frees_it():
    loss, _ = mlp()
    stepper = BackwardStepper(loss)
    stepper.run()
    assert stepper.buttons["reset"].disabled
    with pytest.raises(RuntimeError, match="second time"):
        loss.backward()
    with pytest.raises(RuntimeError, match="retain_graph=True"):
        stepper.reset()
    # the last snapshot shows what backward freed
    saved = [s for n in stepper.history[-1].snapshot.nodes for s in n.saved]
    assert saved and all(s.released for s in saved)
    assert not any(s.released for n in stepper.history[0].snapshot.nodes for s in n.saved)


def test_with_retain_graph_backward_can_run_again():
    loss, leaves = mlp()
    stepper = BackwardStepper(loss, retain_graph=True)
    stepper.run()
    once = grads(leaves)
    loss.backward()  # the graph is still there: grads add up to twice
    assert_same_grads(grads(leaves), [2 * g for g in once])


def test_stepping_a_freed_graph_tells_the_user_in_the_status_line():
    loss, _ = mlp()
    loss.backward()
    stepper = BackwardStepper(loss)
    with pytest.raises(RuntimeError, match="second time"):
        stepper.run()  # the first nodes save nothing; PowBackward0 needs what was freed
    assert stepper.done and stepper.error is not None
    stepper.buttons["reset"].disabled = False  # a click, even where the button is greyed out
    stepper.buttons["reset"].click()
    assert "retain_graph=True" in stepper.status.value


def test_buttons_call_the_methods():
    loss, leaves = shared_leaves()
    stepper = BackwardStepper(loss, retain_graph=True)
    stepper.buttons["step"].click()
    stepper.buttons["step"].click()
    assert stepper.index == 2
    stepper.buttons["back"].click()
    assert stepper.index == 1
    stepper.buttons["run"].click()
    assert stepper.at_end and stepper.buttons["step"].disabled
    assert "backward finished" in stepper.status.value
    stepper.buttons["reset"].click()
    assert stepper.index == 0 and all(t.grad is None for t in leaves)


# ----------------------------------------------------------------------------- GraphView


class FakeClock:
    """Time that moves only when the test says so."""

    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class FakeLoop:
    """Stands in for the notebook's event loop: remembers what was scheduled, runs it on demand."""

    def __init__(self, clock):
        self.clock = clock
        self.calls = []  # [due time, fn, cancelled]

    def __call__(self, delay, fn):
        call = [self.clock.now + delay, fn, False]
        self.calls.append(call)
        return Handle(call)

    def run_due(self):
        for call in list(self.calls):
            if call[0] <= self.clock.now and not call[2]:
                self.calls.remove(call)
                call[1]()


class Handle:
    def __init__(self, call):
        self.call = call

    def cancel(self):
        self.call[2] = True


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def view_of(clock):
    """Make GraphViews on a fake clock and loop; close them all at the end."""
    views = []

    def make(*roots, **kwargs):
        loop = FakeLoop(clock)
        view = viz.GraphView(*roots, clock=clock, schedule=loop, **kwargs)
        view.loop = loop
        views.append(view)
        return view

    yield make
    for view in views:
        view.close()


def names(view):
    return [n.name for n in view.snapshot.nodes]


def test_graph_view_redraws_as_ops_are_recorded(view_of, clock):
    view = view_of()
    assert view.renders == 1 and view.snapshot is None  # nothing recorded yet
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    y = x * x
    assert view.renders == 2 and "MulBackward0" in names(view)
    clock.now += 1
    z = y.exp().sum()
    assert view.renders >= 3 and view.pending  # exp drawn at once, sum waits for the throttle
    clock.now += 1
    view.loop.run_due()
    assert not view.pending
    assert names(view)[:3] == ["output", "SumBackward0", "ExpBackward0"]
    assert view.snapshot.roots == [view.snapshot.nodes[0].id]
    assert "tg-error" not in view.graph.value
    if view.svg is not None:
        assert view.graph.value == fit(view.svg) and "SumBackward0" in view.svg
    del z


def test_graph_view_throttles_but_always_draws_the_last_state(view_of, clock):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    view = view_of()
    y = x
    for _ in range(20):  # twenty ops in the same instant: one redraw now, one later
        y = y * 1.5
    assert view.renders == 2 and view.pending
    assert len(view.loop.calls) == 1  # a single redraw is scheduled, not twenty
    assert view.loop.calls[0][0] == pytest.approx(clock.now + 0.1)
    assert names(view).count("MulBackward0") == 1  # drawn after the first op
    clock.now += 0.1
    view.loop.run_due()
    assert view.renders == 3 and not view.pending
    assert names(view).count("MulBackward0") == 20


def test_graph_view_redraws_at_most_max_fps_times_a_second(view_of, clock):
    x = tg.tensor([1.0], requires_grad=True)
    view = view_of(max_fps=10)
    start = view.renders
    for _ in range(100):  # one simulated second, an op every 10 ms
        x = x + 1
        clock.now += 0.01
        view.loop.run_due()
    clock.now += 1
    view.loop.run_due()
    redraws = view.renders - start
    assert 8 <= redraws <= 12  # about 10 a second, never one per op
    assert names(view).count("AddBackward0") == 100  # and the last state is drawn


def test_graph_view_shows_in_place_version_bumps(view_of, clock):
    w = tg.tensor([1.0, 2.0], requires_grad=True)
    y = w * w
    view = view_of(y)
    assert [s.stale for s in view.snapshot.node_named("MulBackward0").saved] == [False, False]
    clock.now += 1
    with tg.no_grad():
        w.add_(1.0)  # changes what MulBackward0 saved: backward would now fail
    assert view.bumps == 1 and view.renders == 2
    saved = view.snapshot.node_named("MulBackward0").saved
    assert [s.stale for s in saved] == [True, True]
    assert [s.version for s in saved] == [1, 1]
    assert "version now 1" in view.status.value


def test_graph_view_follows_an_in_place_op_on_a_non_leaf(view_of, clock):
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    view = view_of()
    h = x * 2
    clock.now += 1
    h.mul_(3)  # rewrites h's history: h's grad_fn is the new MulBackward0
    clock.now += 1
    view.loop.run_due()
    assert view.bumps == 1
    assert names(view).count("MulBackward0") == 2
    assert view.roots[0].grad_fn is h.grad_fn  # (the op's result, h's new history)


def test_graph_view_of_given_roots_keeps_drawing_them(view_of, clock):
    a = tg.tensor([1.0], requires_grad=True)
    loss = (a * 2).sum()
    view = view_of(loss)
    clock.now += 1
    other = a.exp()  # an unrelated op: redraws, but the picture is still of loss
    assert "ExpBackward0" not in names(view)
    assert view.roots == [loss]
    view.watch(other)
    assert "ExpBackward0" in names(view)


def test_graph_view_stops_listening_when_closed(view_of, clock):
    x = tg.tensor([1.0], requires_grad=True)
    view = view_of()
    view.close()
    assert not view.listening
    drawn = view.renders
    clock.now += 1
    _ = x * 3
    assert view.renders == drawn and not view.pending


def test_stop_draws_what_is_pending_and_cancels_the_timer(view_of, clock):
    x = tg.tensor([1.0], requires_grad=True)
    view = view_of()
    y = x * 2
    z = y * 3  # within the same instant: pending
    assert view.pending and view.loop.calls
    view.stop()
    assert not view.pending and names(view).count("MulBackward0") == 2
    assert view.loop.calls[0][2]  # the scheduled redraw was cancelled
    del z


def test_graph_view_as_a_context_manager(clock):
    loop = FakeLoop(clock)
    x = tg.tensor([1.0], requires_grad=True)
    with viz.GraphView(clock=clock, schedule=loop, listen=False) as view:
        assert view.listening
        y = x * 2
        z = y.exp()  # throttled: pending when the block ends
        assert view.pending
    assert not view.listening and not view.pending
    assert "ExpBackward0" in names(view)
    drawn = view.renders
    _ = z * 2
    assert view.renders == drawn
    view.close()


def test_graph_view_falls_back_to_text_without_a_renderer(monkeypatch, view_of, clock):
    monkeypatch.setattr(viz.render, "find_renderer", lambda: None)
    x = tg.tensor([1.0], requires_grad=True)
    view = view_of()
    _ = x.exp()
    assert view.svg is None
    assert view.graph.value.startswith('<pre class="tg-text">')
    assert "ExpBackward0" in view.graph.value
    assert "tg-graph" in view.graph._dom_classes


def test_a_drawing_error_never_breaks_the_users_op(monkeypatch, view_of, clock):
    class Broken:
        def __init__(self, *args):
            raise ValueError("renderer bug")

    monkeypatch.setattr(viz.render, "Job", Broken)
    x = tg.tensor([1.0], requires_grad=True)
    view = view_of()
    y = x * 2  # the op itself must succeed
    assert y.grad_fn is not None
    assert "renderer bug" in view.graph.value


def test_a_failing_op_keeps_the_picture_and_marks_the_call():
    """A shape mismatch inside a live view: what was recorded stays on screen, with a red
    box for the call that raised, fed by its inputs, and torch's message."""
    x = tg.ones(2, 3, requires_grad=True)
    w = tg.ones(4, 5, requires_grad=True)
    with (
        pytest.raises(RuntimeError, match="shapes cannot be multiplied"),
        viz.GraphView(listen=True) as view,
    ):
        h = x.exp()
        h @ w
    assert view.failure is None and view.renders >= 2  # drawn, then ready for what comes next
    shown = html.unescape(view.graph.value)
    if view.svg is not None:
        assert 'id="node-failed"' in shown and "✗ matmul raised" in shown
        assert "mat1 and mat2 shapes cannot be multiplied" in shown  # torch's message
    assert {n.name for n in view.snapshot.nodes} >= {"h", "w", "ExpBackward0"}
    assert view.snapshot.roots == [n.id for n in view.snapshot.nodes if n.name in ("h", "w")]


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda a, b: a @ b, "matmul"),
        (lambda a, b: a.matmul(b), "matmul"),
        (lambda a, b: tg.matmul(a, b), "matmul"),
        (lambda a, b: tg.add(a, b), "add"),
        (lambda a, b: tg.mul(a, b, out=tg.empty(0)), "mul"),
    ],
)
def test_the_failed_call_is_the_op_the_learner_wrote_not_a_wrapper(call, name):
    """Methods, operators and functions (with or without ``out=``) name their op: the
    wrappers around them (the profiler's, torch's argument errors, ``out=``) are skipped."""
    a, b = tg.ones(2, 3), tg.ones(4, 5)
    with pytest.raises(RuntimeError) as raised:
        call(a, b)
    got, inputs = viz.live.failed_call(raised.value)
    assert got == name and inputs[0] is a and inputs[1] is b


def test_in_a_notebook_a_cell_that_raises_leaves_its_picture_in_the_live_view():
    """In IPython the view hears of a cell that raised (post_run_cell) and marks the call."""
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    cells = [
        "import teachgrad as tg, viz\nview = viz.GraphView()\nx = tg.ones(2, 3, requires_grad=True)",
        "h = x.exp()\nh @ tg.ones(4, 5)",
        "import html\nshown = html.unescape(view.graph.value)\n"
        "print(view.svg is None or 'matmul raised' in shown, [n.name for n in view.snapshot.nodes][:1])",
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    NotebookClient(nb, timeout=60, kernel_name="python3", allow_errors=True).execute()
    assert nb.cells[1].outputs[-1]["ename"] == "RuntimeError"
    assert nb.cells[2].outputs[0]["text"].strip() == "True ['h']"


# ------------------------------------------------------------------ the picture box


def shown(stepper):
    """The stepper's picture as the browser reads it (Graphviz writes '-' as &#45;)."""
    return html.unescape(stepper.graph.value)


def test_a_click_on_a_frame_folds_it_in_the_stepper_and_survives_stepping():
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    stepper = BackwardStepper(model(tg.ones(2, 3)).sum(), params=model)
    stepper.step()
    assert 'id="cluster-module-0"' in shown(stepper)
    stepper.graph.choose({"fold": ["module-0"]})  # what the browser sends on a click
    assert stepper.graph.folded == {"module-0": True}
    assert 'id="cluster-module-0"' not in shown(stepper)
    assert "opens-module-0" in shown(stepper)
    stepper.step()  # the next pictures are folded too
    assert "opens-module-0" in shown(stepper)
    stepper.graph.choose({"open": ["module-0"]})
    assert 'id="cluster-module-0"' in shown(stepper)
    assert "opens-module-0" not in shown(stepper)


def test_a_click_on_a_frame_folds_it_in_a_graph_view(view_of):
    model = tg.nn.Sequential(tg.nn.Linear(3, 4), tg.nn.Tanh(), tg.nn.Linear(4, 2))
    view = view_of(model(tg.ones(2, 3)).sum(), params=model, listen=False)
    renders = view.renders
    view.graph.choose({"fold": ["module-2"]})
    assert view.renders == renders + 1
    svg = html.unescape(view.svg)
    assert 'id="cluster-module-2"' not in svg and "opens-module-2" in svg
    # messages from the browser arrive through the widget's comm
    view.graph._message(view.graph, {"open": ["module-2"]}, [])
    assert 'id="cluster-module-2"' in html.unescape(view.svg)


def test_in_the_background_graphviz_runs_beside_the_users_code(view_of, clock):
    """background=True (the default in a notebook): an event's redraw takes the snapshot,
    starts Graphviz and returns; the picture is shown at the next redraw, or when the
    event loop calls back (after the cell), or at flush()."""
    if viz.render.find_renderer() is None:
        pytest.skip("needs a Graphviz program")
    x = tg.tensor([1.0, 2.0], requires_grad=True)
    view = view_of(background=True)
    first = view.svg
    y = x.exp()  # an event: redrawn at once, laid out beside the user's code
    assert view.renders == 2 and view._drawer.busy and view.svg == first
    view._drawer.job.process.wait()  # (the test waits for Graphviz; the user's code does not)
    clock.now += 1.0
    view.loop.run_due()  # the event loop's call back, after the cell
    assert not view._drawer.busy and "ExpBackward0" in html.unescape(view.svg)
    assert y.grad_fn is not None
    view.render()  # render() itself always waits for its picture
    assert view.graph.value == fit(view.svg, switch=False)


def test_the_drawer_skips_sources_replaced_before_they_started(monkeypatch):
    from viz.live import Drawer

    started = []

    class Job:  # a Graphviz run that finishes when the test says so
        cpu_s = 0.0

        def __init__(self, renderer, source):
            started.append(source)
            self.finished = False

        def done(self):
            return self.finished

        def result(self):
            return f"<svg>{started[-1]}</svg>".encode()

    monkeypatch.setattr(viz.render, "Job", Job)
    drawn = []
    drawer = Drawer(lambda svg, error: drawn.append(svg))
    drawer.submit("digraph { first }")  # Graphviz starts on it
    for k in range(5):  # while it runs, newer sources replace each other
        drawer.submit(f"digraph {{ n{k} }}")
    assert started == ["digraph { first }"] and drawn == []
    drawer.job.finished = True
    drawer.poll()  # the first picture is shown, and only the newest source starts
    assert started == ["digraph { first }", "digraph { n4 }"]
    drawer.wait()
    assert len(drawn) == 2 and drawn[-1] == "<svg>digraph { n4 }</svg>"


def test_in_the_background_graphvizs_cpu_time_counts_in_the_redraw_budget(view_of, clock):
    """Graphviz running beside the loop takes a CPU too: a background view waits
    (spent + layout) / BUDGET between redraws; a view that waits for Graphviz counts it
    in ``spent`` already."""
    from viz.live import BUDGET

    x = tg.tensor([1.0], requires_grad=True)
    view = view_of(x.exp(), background=True, max_fps=10)
    view._drawer.layout_s = 0.05  # what the last run of Graphviz cost
    assert view.gap() == pytest.approx(0.05 / BUDGET)
    view.background = False
    assert view.gap() == pytest.approx(0.1)  # 1 / max_fps: the fake clock spent nothing

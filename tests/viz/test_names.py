"""Pictures name tensors after the learner's variables (issue: "names from the learner's
code"): globals of a notebook, locals of a function, modules' parameters by path;
explicit names win; a tensor no variable holds stays anonymous."""

import textwrap

import teachgrad as tg
import viz
from viz.live import GraphView
from viz.stepper import BackwardStepper


def run_as_notebook(code: str) -> dict:
    """Run ``code`` the way a notebook cell runs: at the top level of a namespace."""
    namespace = {"__name__": "__main__", "tg": tg, "viz": viz}
    exec(compile(textwrap.dedent(code), "<cell>", "exec"), namespace)
    return namespace


def names(snapshot) -> dict:
    """kind -> the names of the snapshot's nodes of that kind."""
    found = {}
    for node in snapshot.nodes:
        found.setdefault(node.kind, []).append(node.name)
    return found


def test_a_notebook_s_variables_name_leaves_results_and_the_output():
    ns = run_as_notebook(
        """
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        w = tg.tensor([3.0, 4.0], requires_grad=True)
        h = x * w
        loss = h.exp().sum()
        drawing = viz.draw(loss)
        """
    )
    snap = ns["drawing"].snapshot
    assert sorted(names(snap)["leaf"]) == ["w", "x"]
    assert names(snap)["output"] == ["loss"]
    assert snap.node_named("MulBackward0").tensor_names == ["h"]
    assert "into x.grad" in ns["drawing"].source and "= h" in ns["drawing"].source
    assert "leaf" not in names(snap)["leaf"]


def test_a_function_s_locals_name_its_tensors_and_win_over_globals():
    ns = run_as_notebook(
        """
        a = tg.ones(2, requires_grad=True)

        def picture():
            b = a  # the same tensor, under a local name
            return viz.text(b.exp().sum())

        text = picture()
        """
    )
    assert "(leaf b  [2] float32)" in ns["text"]


def test_a_module_held_in_a_variable_names_its_parameters_by_path():
    ns = run_as_notebook(
        """
        model = tg.nn.Sequential(tg.nn.Linear(3, 2), tg.nn.Tanh(), tg.nn.Linear(2, 1))
        snap = viz.draw(model(tg.ones(4, 3)).sum()).snapshot
        """
    )
    assert sorted(names(ns["snap"])["leaf"]) == ["0.bias", "0.weight", "2.bias", "2.weight"]


def test_explicit_names_win_and_unheld_tensors_stay_anonymous():
    ns = run_as_notebook(
        """
        x = tg.ones(2, requires_grad=True)
        x.name = "input"
        w = tg.ones(2, requires_grad=True)
        _ = tg.ones(2, requires_grad=True)  # underscore names are not the learner's
        loss = (x * w * _ * tg.ones(2, requires_grad=True)).sum()
        snap = viz.draw(loss, params={"weight": w}).snapshot
        """
    )
    leaves = names(ns["snap"])["leaf"]
    assert sorted(leaves) == ["input", "leaf", "leaf", "weight"]


def test_the_stepper_and_the_live_view_use_the_same_names():
    ns = run_as_notebook(
        """
        x = tg.tensor([1.0, 2.0], requires_grad=True)
        h = x.exp()
        loss = h.sum()
        stepper = viz.BackwardStepper(loss)
        stepper.run()
        view = viz.GraphView(loss, listen=False)
        later = (loss * 2)  # assigned after the view was made: a notebook's globals are live
        view.roots = [later]
        view.render()
        """
    )
    stepper, view = ns["stepper"], ns["view"]
    assert isinstance(stepper, BackwardStepper) and isinstance(view, GraphView)
    assert [name for name, _ in stepper.leaves] == ["x"]
    assert "<td>x</td>" in stepper.panel.value  # the leaves table
    assert names(stepper.history[-1].snapshot)["output"] == ["loss"]
    assert names(view.snapshot)["output"] == ["later"]
    assert view.snapshot.node_named("ExpBackward0").tensor_names == ["h"]

"""The chain rule on the screen (viz._rules and the stepper's panel): every step shows,
for each input, the local rule, the rule with the numbers in it, and the gradient sent;
and a stepper's snapshots, updated step by step, are the snapshots of the whole graph."""

import numpy as np
import pytest

import teachgrad as tg
import viz
from teachgrad.autograd.graph import advance, snapshot
from viz._rules import rules_of, values
from viz.stepper import BackwardStepper


def programs():
    """Small graphs with every kind of node: products, unary ops, reductions, matmul."""
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return tg.tensor(rng.standard_normal(shape), requires_grad=True)

    a, b = leaf(3), leaf(3)
    yield "mul-exp-sum", (a * b).exp().sum()
    w, x = leaf(2, 3), tg.tensor(rng.standard_normal((4, 3)))  # x needs no grad
    yield "linear-tanh-mean", (x @ w.t()).tanh().mean()
    c = leaf(2, 2)
    yield "shared-node", (c.sin() * c.cos() + c / (c * c + 1)).sum()
    big = leaf(5, 4)
    yield "big", (big * big).sum()


@pytest.mark.parametrize(
    "name,loss", list(programs()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_stepped_snapshots_are_the_whole_graph_s_snapshots(name, loss):
    steps = list(tg.autograd.backward_steps(loss, retain_graph=True))
    snap = snapshot(loss)
    for k, step in enumerate(steps, 1):
        snap = advance(snap, step)
        assert snap == snapshot(loss, steps=steps[:k]), f"after step {k}"


@pytest.mark.parametrize(
    "name,loss", list(programs()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_the_panel_shows_each_rule_and_the_gradient_backward_sent(name, loss):
    stepper = BackwardStepper(loss)
    with_rules = 0
    while not stepper.at_end:
        stepper.step()
        frame, step = stepper.history[stepper.index], stepper.steps[-1]
        if len(frame.rules) == len(step.grad_inputs):
            for rule, sent in zip(frame.rules, step.grad_inputs):
                assert rule.rule.startswith(f"∂L/∂{rule.input} = ")
                assert rule.result == (None if sent is None else values(sent))
                if rule.result is not None:
                    assert f"= {rule.result}" in stepper.panel.value
            with_rules += bool(frame.rules)
    assert with_rules >= 2  # built-in nodes carry their rule


def test_a_product_shows_its_numbers_and_a_big_one_its_shapes():
    a = tg.tensor([2.0], requires_grad=True)
    b = tg.tensor([3.0], requires_grad=True)
    loss = a * b
    before = snapshot(loss).node_named("MulBackward0")
    step = next(tg.autograd.backward_steps(loss))
    (first, second) = rules_of(step, before)
    assert (first.rule, first.numbers, first.result) == (
        "∂L/∂self = ∂L/∂out · other",
        "[1] · [3]",
        "[3]",
    )
    assert (second.rule, second.numbers, second.result) == (
        "∂L/∂other = ∂L/∂out · self",
        "[1] · [2]",
        "[2]",
    )
    big = tg.ones(5, 4, requires_grad=True)
    loss = big * big
    before = snapshot(loss).node_named("MulBackward0")
    step = next(tg.autograd.backward_steps(loss, tg.ones(5, 4)))
    assert rules_of(step, before)[0].numbers == "[5, 4] · [5, 4]"


def test_a_saved_number_shows_its_value():
    x = tg.tensor([-0.5], requires_grad=True)
    loss = x**2
    before = snapshot(loss).node_named("PowBackward0")
    step = next(tg.autograd.backward_steps(loss, tg.ones(1)))
    (rule,) = rules_of(step, before)
    assert rule.numbers == "[1] · 2 · [-0.5]^(2 − 1)"
    assert rule.result == "[-1]"


@pytest.mark.parametrize(
    "options, rule, numbers",
    [
        ({}, "−∂L/∂out / total_weight at target", "zeros, −1 / 3 at [0, 1, 1]"),
        ({"reduction": "sum"}, "−∂L/∂out at target", "zeros, −1 at [0, 1, 1]"),
        (
            {"weight": [1.0, 0.5]},
            "−∂L/∂out · weight[target] / total_weight at target",
            "zeros, −1 · [1, 0.5][[0, 1, 1]] / 2 at [0, 1, 1]",
        ),
    ],
    ids=["mean", "sum", "class weights"],
)
def test_a_loss_shows_the_rule_it_applies_with_its_total_weight(options, rule, numbers):
    """nll_loss's rule names only what this call used (class weights, the mean's division),
    and the total weight, which backward frees, shows its value from before the step."""
    if "weight" in options:
        options = {**options, "weight": tg.tensor(options["weight"])}
    scores = tg.zeros(3, 2, requires_grad=True)
    loss = tg.nn.functional.nll_loss(scores, tg.tensor([0, 1, 1]), **options)
    before = snapshot(loss).node_named("NllLossBackward0")
    (found,) = rules_of(next(tg.autograd.backward_steps(loss)), before)
    assert (found.rule, found.numbers) == (f"∂L/∂self = zeros, {rule}", numbers)


def test_a_custom_function_shows_its_backward_source():
    class Cube(tg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x**3

        @staticmethod
        def backward(ctx, grad):
            (x,) = ctx.saved_tensors
            return grad * 3 * x**2

    x = tg.tensor([1.0, 2.0], requires_grad=True)
    stepper = BackwardStepper(Cube.apply(x).sum())
    stepper.step()  # SumBackward0: a built-in, with its rule
    assert stepper.history[-1].rules and stepper.history[-1].source is None
    stepper.step()  # the custom node
    frame = stepper.history[-1]
    assert frame.rules == [] and "return grad * 3 * x**2" in frame.source
    assert "Its backward (your Function)" in stepper.panel.value


def test_draw_can_put_the_rules_on_the_nodes():
    a = tg.tensor([2.0], requires_grad=True)
    b = tg.tensor([3.0], requires_grad=True)
    loss = (a * b).exp().sum()
    source = viz.draw(loss, formulas=True).source
    assert "∂self = ∂out · other" in source and "∂other = ∂out · self" in source
    assert "∂self = ∂out · result" in source  # exp's rule reads its saved result
    assert "∂self" not in viz.draw(loss).source  # off unless asked for
    snap = snapshot(loss)
    assert snap.node_named("MulBackward0").formula == {
        "self": "grad · other",
        "other": "grad · self",
    }


def test_draw_shows_as_many_values_and_digits_as_asked():
    w = tg.tensor([1.0 / 3, 2.0, 3.0], requires_grad=True)
    loss = (w * 2).sum()
    assert "[0.3333, 2, 3]" in viz.draw(loss).source
    assert "[0.33, 2, 3]" in viz.draw(loss, digits=2).source
    assert "[0.3333, 2, 3]" not in viz.draw(loss, values=2).source  # too big to show

"""Graded tests for 01_mini_engine: a scalar Value engine, against teachgrad.

An expression is a *program*: a list of steps ``(op, i, j)`` applied to a list of nodes
that starts with the inputs. The same program runs on the student's Values and on
teachgrad tensors (both understand ``+``, ``-``, ``*``, ``**``, ``.tanh()`` and
``.exp()``), and the inputs' gradients are compared. When they differ, the program is also
replayed on a plain list of numbers with the two classic engine bugs, to name the cause.

The operations and the neuron are checked from the graph they build (``parents`` and
``local_grads``, see :func:`derivative`), so that they get their points before backward
is written. Training is compared step by step with the same network in teachgrad.
"""

import math
import zlib

import numpy as np

import teachgrad as tg
from course.testing import Failure, agree, get, grading_seed, points

STEPS = ("add", "mul", "add_const", "mul_const", "tanh", "exp")  # of random programs
XOR_X = [(-1.0, -1.0), (-1.0, 1.0), (1.0, -1.0), (1.0, 1.0)]
XOR_Y = [-1.0, 1.0, 1.0, -1.0]


def run(program, inputs):
    """The output node of ``program`` applied to ``inputs`` (Values or tensors)."""
    nodes = list(inputs)
    for op, i, j in program:
        a = nodes[i]
        if op == "add":
            nodes.append(a + nodes[j])
        elif op == "mul":
            nodes.append(a * nodes[j])
        elif op == "add_const":
            nodes.append(j + a)  # a number on the left: __radd__
        elif op == "mul_const":
            nodes.append(j * a)  # __rmul__
        elif op == "sub":
            nodes.append(a - nodes[j])
        elif op == "rsub_const":
            nodes.append(j - a)  # __rsub__
        elif op == "pow":
            nodes.append(a**j)  # j is a number
        else:
            nodes.append(getattr(a, op)())
    return nodes[-1]


def teachgrad_grads(program, xs):
    leaves = [tg.tensor(x, dtype=tg.float64, requires_grad=True) for x in xs]
    out = run(program, leaves)
    out.backward()
    grads = [0.0 if x.grad is None else x.grad.item() for x in leaves]
    return out.item(), np.array(grads)


def float_step(op, data, i, j):
    """(value, ((parent, local gradient), ...)) of one step on plain numbers."""
    a = data[i]
    if op == "add":
        return a + data[j], ((i, 1.0), (j, 1.0))
    if op == "mul":
        return a * data[j], ((i, data[j]), (j, a))
    if op == "add_const":
        return a + j, ((i, 1.0),)
    if op == "mul_const":
        return a * j, ((i, float(j)),)
    if op == "sub":
        return a - data[j], ((i, 1.0), (j, -1.0))
    if op == "rsub_const":
        return j - a, ((i, -1.0),)
    if op == "pow":
        return a**j, ((i, j * a ** (j - 1)),)
    if op == "tanh":
        return math.tanh(a), ((i, 1.0 - math.tanh(a) ** 2),)
    return math.exp(a), ((i, math.exp(a)),)


def buggy_grads(program, xs, bug):
    """The inputs' gradients from an engine with ``bug``: "push" (no topological order:
    each node passes its gradient on as soon as it receives a contribution) or
    "overwrite" (``=`` instead of ``+=``)."""
    data, parents = list(xs), [() for _ in xs]
    for op, i, j in program:
        value, local = float_step(op, data, i, j)
        data.append(value)
        parents.append(local)
    grad = [0.0] * len(data)
    grad[-1] = 1.0
    if bug == "push":

        def push(v):
            for p, local in parents[v]:
                grad[p] += local * grad[v]
                push(p)

        push(len(data) - 1)
    else:  # reverse post-order, like the reference, but overwriting
        order, seen = [], set()

        def visit(v):
            if v not in seen:
                seen.add(v)
                for p, _ in parents[v]:
                    visit(p)
                order.append(v)

        visit(len(data) - 1)
        for v in reversed(order):
            for p, local in parents[v]:
                grad[p] = local * grad[v]
    return np.array(grad[: len(xs)])


def check_program(ns, program, xs, what):
    """Fail with a diagnosis unless the student's Values give teachgrad's gradients."""
    value = get(ns, "Value")
    xs = graded_inputs(xs, what)
    leaves = [value(x) for x in xs]
    out = run(program, leaves)
    expected_out, expected = teachgrad_grads(program, xs)
    if not isinstance(out, value) or not math.isclose(out.data, expected_out, rel_tol=1e-9):
        got = getattr(out, "data", out)
        raise Failure("forward", f"{what}: the output is {got!r}, teachgrad says {expected_out}.")
    out.backward()
    got = np.array([float(leaf.grad) for leaf in leaves])
    if agree(got, expected):
        return
    details = f"{what}:\n  expected input grads {np.round(expected, 6)}\n  got {np.round(got, 6)}"
    for bug, cause in (("overwrite", "accumulate"), ("push", "topological_order")):
        if agree(got, buggy_grads(program, xs, bug)):
            raise Failure(cause, details)
    if not got.any():
        raise Failure("zeros", details)
    raise Failure("wrong_values", details)


def graded_inputs(xs, what):
    """``xs`` as the visible tests give them; when the grader grades, each moved by its own
    random factor between 0.8 and 1.25 (from the grader's seed, so ``--seed`` repeats it):
    this file is published, so an answer looked up for its inputs must not score.

    >>> graded_inputs([0.5, -1.5], "a * b")
    [0.5, -1.5]
    """
    seed = grading_seed()
    if seed is None:
        return xs
    rng = np.random.default_rng([seed, zlib.crc32(what.encode())])
    return [x * f for x, f in zip(xs, rng.uniform(0.8, 1.25, len(xs)), strict=True)]


def check_op(value, out, data, parents, local_grads, what):
    if not isinstance(out, value):
        raise Failure("forward", f"{what} should return a Value, got {type(out).__name__}.")
    if not math.isclose(out.data, data, rel_tol=1e-12, abs_tol=1e-12):
        raise Failure("forward", f"{what}.data is {out.data}, expected {data}.")
    got = tuple(out.parents)
    if len(got) != len(parents) or any(g is not p for g, p in zip(got, parents)):
        raise Failure("wrong_count", f"{what}.parents should be exactly {parents}, got {got}.")
    if not np.allclose(out.local_grads, local_grads, rtol=1e-12):
        raise Failure(
            "wrong_values", f"{what}.local_grads is {out.local_grads}, expected {local_grads}."
        )


def derivative(out, leaf):
    """d out / d leaf, summed over every path of the student's graph: from ``parents`` and
    ``local_grads`` alone, without the student's backward (fine for the small graphs here)."""
    if out is leaf:
        return 1.0
    return sum(local * derivative(p, leaf) for p, local in zip(out.parents, out.local_grads))


def check_derivatives(out, leaves, expected, what):
    got = np.array([derivative(out, leaf) for leaf in leaves])
    if agree(got, np.array(expected)):
        return
    details = f"{what}: d/d inputs should be {np.round(expected, 6)}, the graph gives {got}"
    raise Failure("sign" if agree(got, -np.array(expected)) else "wrong_values", details)


def reference_training(n_inputs, sizes, start, steps, lr, *, zero_grad=True):
    """The losses and final parameters of ``train_mlp`` on XOR, with teachgrad tensors.

    ``start`` lists the parameters in ``MLP.parameters()`` order (neuron by neuron: its
    weights, then its bias); ``zero_grad=False`` lets the gradients add up over the steps.
    """
    flat = tg.tensor(start, dtype=tg.float64, requires_grad=True)
    x, y = tg.tensor(XOR_X, dtype=tg.float64), tg.tensor(XOR_Y, dtype=tg.float64)
    summed, losses = 0, []
    for _ in range(steps):
        h, k = x, 0
        for n_in, n_out in zip([n_inputs, *sizes], sizes):
            block = flat[k : k + n_out * (n_in + 1)].reshape(n_out, n_in + 1)
            h = (h @ block[:, :-1].T + block[:, -1]).tanh()
            k += n_out * (n_in + 1)
        loss = ((h[:, 0] - y) ** 2).mean()
        (g,) = tg.autograd.grad(loss, flat)
        summed = g if zero_grad else summed + g
        flat = (flat - lr * summed).detach().requires_grad_()
        losses.append(loss.item())
    return np.array(losses), flat.detach().numpy()


def check_training(ns, n_inputs, sizes, steps):
    """Train the student's MLP(n_inputs, sizes) on XOR; compare with teachgrad's run."""
    model = get(ns, "MLP")(n_inputs, sizes)
    start = [p.data for p in model.parameters()]
    lr = 0.1
    losses = get(ns, "train_mlp")(model, XOR_X, XOR_Y, steps, lr)
    if losses is None:
        raise Failure("no_return", "train_mlp(...) returned None, not the list of losses.")
    got = np.array([float(loss) for loss in losses])
    params = np.array([p.data for p in model.parameters()])
    expected, expected_params = reference_training(n_inputs, sizes, start, steps, lr)
    if got.shape == expected.shape and agree(got, expected) and agree(params, expected_params):
        return
    details = (
        f"MLP({n_inputs}, {sizes}) trained for {steps} steps with lr={lr}:\n"
        f"  expected losses {np.round(expected, 6)}\n  got {np.round(got, 6)}"
    )
    if got.shape != expected.shape:
        raise Failure("wrong_count", f"{details}\n  (one loss per step)")
    if not math.isclose(got[0], expected[0], rel_tol=1e-9):
        raise Failure("forward", f"{details}\n  (the first loss: the mean of (output - y)**2)")
    kept, kept_params = reference_training(n_inputs, sizes, start, steps, lr, zero_grad=False)
    if agree(got, kept) and agree(params, kept_params):
        raise Failure("zero_grad", details)
    raise Failure("wrong_values", details)


def random_program(rng, n_inputs=3, n_steps=9):
    """A random program whose values stay moderate and which shares inner nodes."""
    while True:
        data, program = list(rng.uniform(-1, 1, n_inputs)), []
        while len(program) < n_steps:
            op = STEPS[rng.integers(len(STEPS))]
            i = int(rng.integers(max(0, len(data) - 4), len(data)))
            j = int(rng.integers(0, len(data)))
            if op in ("add_const", "mul_const"):
                j = float(np.round(rng.uniform(-2, 2), 2))
            value, _ = float_step(op, data, i, j)
            if abs(value) < 4:
                program.append((op, i, j))
                data.append(value)
        xs = data[:n_inputs]
        _, expected = teachgrad_grads(program, xs)
        if not np.allclose(buggy_grads(program, xs, "push"), expected):
            return program, xs


@points(2, uses=("Value",))
def test_ops(ns):
    """+, * (also with a number on either side), tanh, exp: data, parents, local_grads."""
    value = get(ns, "Value")
    a, b = value(0.5), value(-1.5)
    check_op(value, a + b, -1.0, (a, b), (1.0, 1.0), "a + b")
    check_op(value, a * b, -0.75, (a, b), (-1.5, 0.5), "a * b")
    out = 2 + a
    check_op(value, out, 2.5, (a, out.parents[-1]), (1.0, 1.0), "2 + a")
    out = a * 3
    check_op(value, out, 1.5, (a, out.parents[-1]), (3.0, 0.5), "a * 3")
    t = math.tanh(0.5)
    check_op(value, a.tanh(), t, (a,), (1 - t * t,), "a.tanh()")
    check_op(value, b.exp(), math.exp(-1.5), (b,), (math.exp(-1.5),), "b.exp()")


@points(2, uses=("Value",))
def test_sub_pow(ns):
    """a ** k for a number k (data, parents, local_grads); a - b, 1 - a and a - 2."""
    value = get(ns, "Value")
    a, b = value(1.5), value(-0.5)
    check_op(value, a**3, 3.375, (a,), (3 * 1.5**2,), "a ** 3")
    check_op(value, a**-1, 1 / 1.5, (a,), (-1 / 1.5**2,), "a ** -1")
    for out, data, leaves, grads, what in (
        (a - b, 2.0, (a, b), (1.0, -1.0), "a - b"),
        (1 - a, -0.5, (a,), (-1.0,), "1 - a"),
        (a - 2, -0.5, (a,), (1.0,), "a - 2"),
    ):
        if not isinstance(out, value) or not math.isclose(out.data, data):
            raise Failure("forward", f"{what} should be a Value with data {data}, got {out!r}.")
        check_derivatives(out, leaves, grads, what)


@points(1, uses=("topological_order",))
def test_topological_order(ns):
    """A diamond a -> (b, c) -> d, built with Value's constructor: each once, parents first."""
    value, order_of = get(ns, "Value"), get(ns, "topological_order")
    a = value(1.0)
    b, c = value(2.0, (a,), (2.0,)), value(3.0, (a,), (3.0,))
    d = value(5.0, (b, c, a), (1.0, 1.0, 1.0))
    order = order_of(d)
    if order is None:
        raise Failure("no_return", "topological_order(d) returned None, not a list.")
    names = {id(a): "a", id(b): "b", id(c): "c", id(d): "d"}
    got = [names.get(id(v), repr(v)) for v in order]
    if sorted(got) != ["a", "b", "c", "d"]:
        raise Failure(
            "topological_order", f"topological_order(d) should list a, b, c, d once each: {got}"
        )
    if got[0] != "a" or got[-1] != "d":
        raise Failure(
            "topological_order", f"a must come first and d last (parents first), got {got}"
        )


@points(2, uses=("topological_order",))
def test_backward_tree(ns):
    """Expressions where every node is used once: tanh(a * b + c), exp(2 a) * b + 1."""
    program = [("mul", 0, 1), ("add", 3, 2), ("tanh", 4, 0)]
    check_program(ns, program, [0.5, -1.5, 0.3], "tanh(a * b + c)")
    program = [("mul_const", 0, 2.0), ("exp", 2, 0), ("mul", 3, 1), ("add_const", 4, 1.0)]
    check_program(ns, program, [0.4, -0.7], "exp(2 a) * b + 1")


@points(2, uses=("topological_order",))
def test_shared_inputs(ns):
    """Inputs used more than once: a * a + 3 a, and a * b + a."""
    program = [("mul", 0, 0), ("mul_const", 0, 3.0), ("add", 1, 2)]
    check_program(ns, program, [0.7], "a * a + 3 a")
    check_program(ns, [("mul", 0, 1), ("add", 2, 0)], [0.5, -1.5], "a * b + a")


@points(3, uses=("topological_order",))
def test_random_graphs(ns):
    """u * u + u with u = tanh(a * b), then six random expressions sharing inner nodes."""
    program = [("mul", 0, 1), ("tanh", 2, 0), ("mul", 3, 3), ("add", 4, 3)]
    check_program(ns, program, [0.5, -1.5], "u * u + u with u = tanh(a * b)")
    rng = np.random.default_rng(8)
    for k in range(6):
        program, xs = random_program(rng)
        check_program(ns, program, xs, f"random expression {k}: {program}")


@points(1, uses=("topological_order",), hidden=True)
def test_deep_diamonds(ns):
    """Hidden: eight diamonds in a row, h -> u * u + u with u = tanh(h)."""
    program = []
    for k in range(8):
        h = 3 * k
        program += [("tanh", h, 0), ("mul", h + 1, h + 1), ("add", h + 2, h + 1)]
    check_program(ns, program, [0.8], "eight diamonds")


@points(1, uses=("topological_order",), hidden=True)
def test_sub_pow_backward(ns):
    """Hidden: backward through -, ** and shared nodes: (a - b) ** 3 + a ** -1 * (1 - a)."""
    program = [
        ("sub", 0, 1),
        ("pow", 2, 3.0),
        ("pow", 0, -1.0),
        ("rsub_const", 0, 1.0),
        ("mul", 4, 5),
        ("add", 3, 6),
    ]
    check_program(ns, program, [0.5, -1.5], "(a - b) ** 3 + a ** -1 * (1 - a)")


@points(2, uses=("Neuron",))
def test_neuron(ns):
    """Neuron(3) on numbers and on Values: tanh(w . x + b), and its graph's derivatives."""
    value, neuron = get(ns, "Value"), get(ns, "Neuron")(3)
    params = list(neuron.parameters())
    *w, b = [p.data for p in params]
    xs = [0.5, -1.0, 2.0]
    z = sum(wi * xi for wi, xi in zip(w, xs)) + b
    t = math.tanh(z)
    out = neuron(xs)
    if not isinstance(out, value) or not math.isclose(out.data, t, rel_tol=1e-9):
        got = getattr(out, "data", out)
        hint = "  (tanh is missing)" if math.isclose(float(got), z, rel_tol=1e-9) else ""
        raise Failure("forward", f"Neuron on x = {xs}: got {got!r}, expected {t}.{hint}")
    slope = 1 - t * t
    check_derivatives(out, params, [slope * x for x in xs] + [slope], "d neuron / d (w, b)")
    inputs = [value(x) for x in xs]
    check_derivatives(neuron(inputs), inputs, [slope * wi for wi in w], "d neuron / d x")


@points(3, uses=("train_mlp", "MLP"))
def test_train(ns):
    """Three steps of train_mlp on XOR with MLP(2, [4, 1]): losses and parameters, exactly."""
    check_training(ns, 2, [4, 1], steps=3)


@points(1, uses=("train_mlp", "MLP"), hidden=True)
def test_train_deeper(ns):
    """Hidden: two hidden layers, MLP(2, [3, 3, 1]), five steps."""
    check_training(ns, 2, [3, 3, 1], steps=5)

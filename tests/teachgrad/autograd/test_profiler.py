"""The profiler (API.md section 4, ``tg.autograd.profiler``).

* every forward op and every backward node of a small program is one event, forward
  and backward told apart by kind and name, each counted once;
* events nest: record_function ranges contain the ops (and the backward nodes) run
  inside them, children lie inside their parents, self time <= total time, and the
  self times add up to the time profiled;
* key_averages groups by name (and by input shape / stack), total_average sums all;
* table(): torch's column names, aligned columns, sort_by, row_limit, the footer;
* profile_memory counts the bytes of the new arrays an op returns (views: none);
* with_stack names the user's file; the Chrome trace has the documented schema;
* record_function as decorator, nested profile error, state restored on errors;
* emit_nvtx is a no-op on the CPU and pushes balanced, named NVTX ranges when a
  NVTX module is there; load_nvprof reads nvprof's SQLite layout;
* GPU parts (use_cuda with CUDA events, real NVTX) are ``cuda`` tests.
"""

import json
import os
import re
import sqlite3
import warnings

import pytest

import teachgrad as tg
from teachgrad._profiling import state
from teachgrad.autograd import profiler, profiler_report
from teachgrad.autograd.builtin import Builtin
from teachgrad.autograd.profiler import (
    _ATEN_NAMES,
    EventList,
    FunctionEvent,
    emit_nvtx,
    load_nvprof,
    profile,
    record_function,
)


@pytest.fixture(autouse=True)
def profiling_is_off_after_each_test():
    """No test may leave a recorder installed (it would slow down every later op)."""
    assert not state.active
    yield
    assert (state.active, state.recorder, state.bypass) == (False, None, False)


def _program():
    """A small forward + backward inside a record_function range."""
    x = tg.ones(2, 3, requires_grad=True, dtype=tg.float64)
    w = tg.full((2, 3), 2.0, requires_grad=True, dtype=tg.float64)
    with profile(record_shapes=True, profile_memory=True) as prof, record_function("step"):
        y = (x * w).sum()
        y.backward()
    return prof, x, w, y


def _names(events, kind):
    return [e.name for e in events if e.kind == kind]


def _nodes(root):
    """Names of the backward nodes reachable from ``root`` (each node once)."""
    seen, stack, names = set(), [root], []
    while stack:
        node = stack.pop()
        if node is None or node in seen:
            continue
        seen.add(node)
        names.append(node.name())
        stack.extend(n for n, _ in node.next_functions)
    return names


# =============================================================================== events


_ENGINE = "autograd::engine::evaluate_function: "  # torch's event around each node it runs


def test_every_op_is_one_event_and_every_backward_node_two():
    """A node is an engine event with the node's own event inside it, as in torch (this test
    said "one event" per node before teachgrad recorded the engine's event too)."""
    x = tg.ones(2, 3, requires_grad=True)
    w = tg.full((2, 3), 2.0, requires_grad=True)
    y = (x * w).sum()
    nodes = _nodes(y.grad_fn)  # SumBackward0, MulBackward0, AccumulateGrad x2
    with profile() as prof:
        y.backward()
    engine = [_ENGINE + n for n in nodes]
    assert sorted(_names(prof.function_events, "backward")) == sorted(nodes + engine)

    prof, *_ = _program()
    events = prof.function_events
    top = [e for e in events if e.cpu_parent is not None and e.cpu_parent.name == "step"]
    # the program's two ops, then the engine's four nodes, in the order they ran
    assert [(e.name, e.kind) for e in top] == [
        ("aten::mul", "forward"),
        ("aten::sum", "forward"),
        (_ENGINE + "SumBackward0", "backward"),
        (_ENGINE + "MulBackward0", "backward"),
        (_ENGINE + "torch::autograd::AccumulateGrad", "backward"),
        (_ENGINE + "torch::autograd::AccumulateGrad", "backward"),
    ]
    # inside each engine event, only the node's own event
    assert [[c.name for c in e.cpu_children] for e in top[2:]] == [
        [e.name.removeprefix(_ENGINE)] for e in top[2:]
    ]
    # the ops a backward formula runs are forward events inside its node
    (mul_backward,) = events[0].cpu_children[3].cpu_children
    assert [c.name for c in mul_backward.cpu_children] == ["aten::mul", "aten::mul"]
    assert events[0].kind == "user" and events[0].is_user_annotation
    assert [e.id for e in events] == list(range(len(events)))


def test_backward_names_match_torchs_nodes(torch):
    """The backward nodes are named as torch names them (``torch::autograd::AccumulateGrad``)."""
    tx = torch.ones(2, 3, requires_grad=True)
    with torch.autograd.profiler.profile() as tprof:
        (tx * 2).sum().backward()
    # torch's node events are "SumBackward0", "MulBackward0", "torch::autograd::AccumulateGrad",
    # each inside an "autograd::engine::evaluate_function: <node>" event (the aten:: ops and
    # detach inside them are left out here)
    theirs = {e.name for e in tprof.function_events if not e.name.startswith(("aten::", "detach"))}
    x = tg.ones(2, 3, requires_grad=True)
    with profile() as prof:
        (x * 2).sum().backward()
    assert set(_names(prof.function_events, "backward")) == theirs


def _inputs(lib):
    """The tensors the calls below use, made before the profile (torch records factories)."""
    grad = dict(requires_grad=True)
    return {
        "x": lib.ones(3, 4, **grad),
        "y": lib.full((3, 4), 2.0, **grad),
        "w": lib.ones(5, 4, **grad),
        "b": lib.ones(5, **grad),
        "v": lib.ones(4),
        "batch": lib.ones(2, 3, 4, **grad),
        "image": lib.ones(1, 2, 5, 5, **grad),
        "kernel": lib.ones(3, 2, 3, 3, **grad),
        "index": lib.tensor([0, 2]),
        "classes": lib.tensor([0, 1, 2]),
        "mask": lib.tensor([[True, False, True, False]] * 3),
        "ints": lib.tensor([7, -7, 3]),
    }


def _fn(lib):
    return lib.nn.functional


# name -> fn(lib, t): one call of a public function (t: the inputs); the profiles of torch
# and teachgrad must have the same top-level events, by name and in order
CALLS = {
    "x * y": lambda lib, t: t["x"] * t["y"],
    "x * 2": lambda lib, t: t["x"] * 2,
    "2 * x": lambda lib, t: 2 * t["x"],
    "x + y": lambda lib, t: t["x"] + t["y"],
    "1 + x": lambda lib, t: 1 + t["x"],
    "x - y": lambda lib, t: t["x"] - t["y"],
    "1 - x": lambda lib, t: 1 - t["x"],
    "x / y": lambda lib, t: t["x"] / t["y"],
    "2 / x": lambda lib, t: 2 / t["x"],
    "x ** 2": lambda lib, t: t["x"] ** 2,
    "x ** y": lambda lib, t: t["x"] ** t["y"],
    "2 ** x": lambda lib, t: 2 ** t["x"],
    "-x": lambda lib, t: -t["x"],
    "abs(x)": lambda lib, t: abs(t["x"]),
    "x // 2": lambda lib, t: t["ints"] // 2,
    "div(floor)": lambda lib, t: lib.div(t["x"], 2, rounding_mode="floor"),
    "exp, log, sqrt, rsqrt": lambda lib, t: [
        t["x"].exp(),
        t["x"].log(),
        t["x"].sqrt(),
        t["x"].rsqrt(),
    ],
    "sin, cos, tan, tanh": lambda lib, t: [t["x"].sin(), t["x"].cos(), t["x"].tan(), t["x"].tanh()],
    "sigmoid, relu, sign": lambda lib, t: [t["x"].sigmoid(), t["x"].relu(), t["x"].sign()],
    "log1p, expm1": lambda lib, t: [t["x"].log1p(), t["x"].expm1()],
    "floor, ceil, round": lambda lib, t: [t["x"].floor(), t["x"].ceil(), t["x"].round()],
    "reciprocal, square": lambda lib, t: [t["x"].reciprocal(), t["x"].square()],
    "clamp, clip": lambda lib, t: [t["x"].clamp(0, 1), t["x"].clip(0, 1), t["x"].clamp(t["y"])],
    "maximum, minimum": lambda lib, t: [lib.maximum(t["x"], t["y"]), lib.minimum(t["x"], t["y"])],
    "where": lambda lib, t: [lib.where(t["mask"], t["x"], t["y"]), t["x"].where(t["mask"], 0.0)],
    "comparisons": lambda lib, t: [t["x"] == t["y"], t["x"] < 1, t["x"] >= t["y"], t["x"] != 1],
    "logical ops": lambda lib, t: [
        lib.logical_not(t["mask"]),
        lib.logical_and(t["mask"], t["mask"]),
        lib.logical_xor(t["mask"], t["mask"]),
    ],
    "isnan, isinf, isfinite": lambda lib, t: [t["x"].isnan(), t["x"].isinf(), t["x"].isfinite()],
    "sum, mean": lambda lib, t: [t["x"].sum(), t["x"].sum(0), t["x"].mean(), t["x"].mean(1)],
    "prod, var, std": lambda lib, t: [t["x"].prod(), t["x"].prod(1), t["x"].var(), t["x"].std(1)],
    "max, min": lambda lib, t: [t["x"].max(), t["x"].max(0), t["x"].min(), t["x"].min(1)],
    "amax, amin": lambda lib, t: [t["x"].amax(0), t["x"].amin(1)],
    "argmax, argmin": lambda lib, t: [t["x"].argmax(), t["x"].argmin(1)],
    "any, all": lambda lib, t: [t["mask"].any(), t["mask"].all(1)],
    "logsumexp, norm, cumsum": lambda lib, t: [
        t["x"].logsumexp(0),
        t["x"].norm(),
        t["x"].cumsum(1),
    ],
    "x @ w.t()": lambda lib, t: t["x"] @ t["w"].t(),
    "batch @ v": lambda lib, t: t["batch"] @ t["v"],
    "mm, mv, dot": lambda lib, t: [
        lib.mm(t["x"], t["w"].t()),
        lib.mv(t["x"], t["v"]),
        lib.dot(t["v"], t["v"]),
    ],
    "bmm": lambda lib, t: lib.bmm(t["batch"], t["batch"].transpose(1, 2)),
    "outer": lambda lib, t: lib.outer(t["b"], t["b"]),
    "einsum": lambda lib, t: lib.einsum("ij,kj->ik", t["x"], t["w"]),
    "view, t, transpose, permute": lambda lib, t: [
        t["x"].view(12),
        t["x"].t(),
        t["x"].transpose(0, 1),
        t["x"].permute(1, 0),
    ],
    "squeeze, unsqueeze, expand": lambda lib, t: [
        t["x"].unsqueeze(0),
        t["x"].unsqueeze(0).squeeze(),
        t["b"].expand(2, 5),
    ],
    "indexing": lambda lib, t: [t["x"][0], t["x"][1:], t["x"][t["index"]], t["x"][t["mask"]]],
    "cat, stack": lambda lib, t: [lib.cat([t["x"], t["y"]]), lib.stack([t["x"], t["y"]])],
    "split, unbind, select": lambda lib, t: [t["x"].split(2), t["x"].unbind(), t["x"].select(0, 1)],
    "diagonal, flip, roll": lambda lib, t: [t["x"].diagonal(), t["x"].flip(0), t["x"].roll(1)],
    "repeat, tile, tril": lambda lib, t: [t["x"].repeat(2, 1), t["x"].tile(2), t["x"].tril()],
    "gather, index_select": lambda lib, t: [
        t["x"].gather(1, t["index"].view(1, 2).expand(3, 2)),
        t["x"].index_select(0, t["index"]),
    ],
    "masked_fill, clone": lambda lib, t: [t["x"].masked_fill(t["mask"], 0.0), t["x"].clone()],
    "to, double": lambda lib, t: [t["x"].to(lib.float64), t["x"].double()],
    "F.linear": lambda lib, t: _fn(lib).linear(t["x"], t["w"], t["b"]),
    "F.linear, no bias": lambda lib, t: _fn(lib).linear(t["x"], t["w"]),
    "F.linear, batched": lambda lib, t: _fn(lib).linear(t["batch"], t["w"], t["b"]),
    "F.softmax, log_softmax": lambda lib, t: [
        _fn(lib).softmax(t["x"], 1),
        _fn(lib).log_softmax(t["x"], 1),
    ],
    "F.gelu, silu, relu": lambda lib, t: [
        _fn(lib).gelu(t["x"]),
        _fn(lib).silu(t["x"]),
        _fn(lib).relu(t["x"]),
    ],
    "F.cross_entropy": lambda lib, t: _fn(lib).cross_entropy(t["x"], t["classes"]),
    "F.nll_loss": lambda lib, t: _fn(lib).nll_loss(t["x"], t["classes"]),
    "F.binary_cross_entropy": lambda lib, t: _fn(lib).binary_cross_entropy(t["x"] / 2, t["y"] / 4),
    "F.binary_cross_entropy_with_logits": lambda lib, t: _fn(lib).binary_cross_entropy_with_logits(
        t["x"], t["y"] / 4
    ),
    "F.layer_norm": lambda lib, t: _fn(lib).layer_norm(t["x"], (4,)),
    "F.conv2d": lambda lib, t: _fn(lib).conv2d(t["image"], t["kernel"]),
    "F.max_pool2d, avg_pool2d": lambda lib, t: [
        _fn(lib).max_pool2d(t["image"], 2),
        _fn(lib).avg_pool2d(t["image"], 2),
    ],
    "F.embedding": lambda lib, t: _fn(lib).embedding(t["index"], t["x"]),
    "F.dropout": lambda lib, t: _fn(lib).dropout(t["x"], 0.5),
    "F.pad": lambda lib, t: _fn(lib).pad(t["x"], (1, 1)),
    "factories": lambda lib, t: [
        lib.zeros(2),
        lib.ones(2, 3),
        lib.empty(2),
        lib.full((2,), 1.0),
        lib.arange(3),
        lib.linspace(0, 1, 3),
        lib.eye(2),
    ],
    "random factories": lambda lib, t: [lib.rand(2), lib.randn(2), lib.randint(0, 5, (2,))],
    "factories like x": lambda lib, t: [
        lib.zeros_like(t["x"]),
        lib.ones_like(t["x"]),
        lib.empty_like(t["x"]),
        lib.full_like(t["x"], 2.0),
        lib.rand_like(t["x"]),
        lib.randn_like(t["x"]),
    ],
    "equal, allclose": lambda lib, t: [lib.equal(t["x"], t["y"]), lib.allclose(t["x"], t["y"])],
    "add_, sub_, mul_, div_": lambda lib, t: [
        t["v"].add_(1),
        t["v"].sub_(1),
        t["v"].mul_(2),
        t["v"].div_(2),
    ],
    "+=, -=, *=, /=": lambda lib, t: _augmented(t["v"]),
    "pow_, neg_, abs_, exp_, log_": lambda lib, t: [
        t["v"].pow_(2),
        t["v"].neg_(),
        t["v"].abs_(),
        t["v"].exp_(),
        t["v"].log_(),
    ],
    "sqrt_, sin_, cos_, tanh_, sigmoid_, relu_": lambda lib, t: [
        t["v"].sqrt_(),
        t["v"].sin_(),
        t["v"].cos_(),
        t["v"].tanh_(),
        t["v"].sigmoid_(),
        t["v"].relu_(),
    ],
    "clamp_, clip_, zero_, fill_, copy_": lambda lib, t: [
        t["v"].clamp_(0, 1),
        t["v"].clip_(0, 1),
        t["v"].zero_(),
        t["v"].fill_(2.0),
        t["v"].copy_(t["v"]),
    ],
    "reshape, flatten, narrow": lambda lib, t: [
        t["x"].reshape(12),
        t["x"].reshape(4, 3),
        t["x"].flatten(),
        t["x"].narrow(1, 1, 2),
    ],
    "chunk, movedim, unflatten": lambda lib, t: [
        t["x"].chunk(2),
        t["x"].movedim(0, 1),
        t["x"].unflatten(1, (2, 2)),
    ],
    "expand_as, view_as, reshape_as": lambda lib, t: [
        t["v"].expand_as(t["x"]),
        t["x"].view_as(t["y"]),
        t["x"].reshape_as(t["y"]),
    ],
    "T, mT, contiguous": lambda lib, t: [t["x"].T, t["batch"].mT, t["x"].t().contiguous()],
}


def _augmented(v):
    """``v += 1`` and the other augmented assignments (statements, so not in a lambda)."""
    v += 1
    v -= 1
    v *= 2
    v /= 2
    return v


def _top_level_names(lib, call):
    t = _inputs(lib)
    with lib.autograd.profiler.profile() as prof:
        call(lib, t)
    return [e.name for e in prof.function_events if e.cpu_parent is None]


@pytest.mark.parametrize("name", CALLS)
def test_op_events_have_torchs_names(torch, name):
    """Each call is recorded as torch records it: the same top-level events, named by torch's
    op names (``aten::mul``), in the same order."""
    assert _top_level_names(tg, CALLS[name]) == _top_level_names(torch, CALLS[name])


def test_every_op_is_named_after_one_of_torchs(torch):
    """The name of every op teachgrad can record is one of torch's ops (``torch.ops.aten``)."""

    def ops(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from ops(sub)

    named = {op for op in ops(Builtin) if "node_name" in vars(op) or op.__name__ in _ATEN_NAMES}
    names = {profiler.op_name(op) for op in named}
    assert len(named) > 100
    assert not [n for n in names if not hasattr(torch.ops.aten, n.removeprefix("aten::"))]


def test_a_composite_op_holds_the_ops_it_runs(torch):
    """``F.linear`` is one op, ``aten::linear``, with ``aten::t`` and ``aten::addmm`` inside."""

    def linear_children(lib):
        t = _inputs(lib)
        with lib.autograd.profiler.profile() as prof:
            _fn(lib).linear(t["x"], t["w"], t["b"])
        (linear,) = [e for e in prof.function_events if e.name == "aten::linear"]
        return [c.name for c in linear.cpu_children]

    assert linear_children(tg) == linear_children(torch) == ["aten::t", "aten::addmm"]


def test_children_lie_inside_their_parents_and_self_time_is_the_rest():
    prof, *_ = _program()
    events = prof.function_events
    for e in events:
        assert e.start_us <= e.end_us
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total
        total_children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - total_children)
        for c in e.cpu_children:
            assert c.cpu_parent is e
            assert e.start_us <= c.start_us <= c.end_us <= e.end_us
        if e.cpu_parent is not None:
            assert e in e.cpu_parent.cpu_children
    step = events[0]
    assert all(e.cpu_parent is not None for e in events[1:])  # all inside the range
    # self times add up to the time profiled: the range's total
    assert prof.self_cpu_time_total == pytest.approx(step.cpu_time_total)
    assert events == sorted(events, key=lambda e: e.start_us)


def test_backward_outside_the_range_is_not_nested_in_it():
    x = tg.ones(3, requires_grad=True)
    with profile() as prof:
        with record_function("forward pass"):
            y = (x * 3).sum()
        with record_function("backward pass"):
            y.backward()
    by_name = {e.name: e for e in prof.function_events if e.kind == "user"}
    forward, backward = by_name["forward pass"], by_name["backward pass"]
    assert {c.kind for c in forward.cpu_children} == {"forward"}
    assert {c.kind for c in backward.cpu_children} == {"backward"}
    assert forward.end_us <= backward.start_us


def test_ranges_nest_and_threads_are_recorded_apart():
    import threading

    with profile() as prof, record_function("outer"):
        with record_function("inner"):
            tg.ones(2) + 1
        worker = threading.Thread(target=lambda: tg.ones(3) * 2)
        worker.start()
        worker.join()
    events = prof.function_events
    outer, inner = events[0], events[1]
    children = ["aten::ones", "aten::add"]  # (factories are ops too, as in torch)
    assert (inner.cpu_parent, [c.name for c in inner.cpu_children]) == (outer, children)
    other_thread = [e for e in events if e.thread != outer.thread]
    assert [(e.name, e.cpu_parent and e.cpu_parent.name) for e in other_thread] == [
        ("aten::ones", None),
        ("aten::empty", "aten::ones"),  # (the steps of torch's kernel, inside the op)
        ("aten::fill_", "aten::ones"),
        ("aten::mul", None),
    ]


def test_nothing_is_recorded_outside_or_when_disabled():
    x = tg.ones(2)
    with profile() as prof:
        x * 2
    x * 3  # after the block: not recorded
    assert len(prof.function_events) == 1
    with profile(enabled=False) as off:
        assert not state.active
        x * 2
    assert len(off.function_events) == 0
    with record_function("alone"):  # outside any profile: a no-op
        x * 2


def test_results_are_read_after_the_block():
    with profile() as prof, pytest.raises(RuntimeError, match="Profiler didn't finish running"):
        prof.function_events


def test_an_error_inside_the_block_restores_state_and_closes_the_failing_op():
    class Broken(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            raise ValueError("broken forward")

    a = tg.ones(2)
    with pytest.raises(ValueError, match="broken forward"), profile() as prof:
        Broken.apply(a)
    assert not state.active
    (failed,) = prof.function_events
    assert (failed.name, failed.kind) == ("Broken", "forward")
    assert failed.end_us >= failed.start_us
    assert (a * 2).tolist() == [2.0, 2.0]  # ops run normally again


def test_profiles_do_not_nest():
    """torch (older versions) raised "Profiler is already enabled on this thread"; torch 2.x
    warns and loses the outer profile's events. We raise, and the outer one goes on."""
    x = tg.ones(2)
    with profile() as outer:
        inner = profile()
        with pytest.raises(RuntimeError, match="Profiler is already enabled on this thread"):
            inner.__enter__()
        x * 2
    assert _names(outer.function_events, "forward") == ["aten::mul"]


# =============================================================================== summaries


def test_key_averages_group_by_name_and_by_input_shape():
    x, w = tg.ones(2, 3), tg.ones(4)
    with profile(record_shapes=True) as prof:
        x * 2
        x * 3
        w * 2
    (mul,) = prof.key_averages()
    events = prof.function_events
    assert (mul.key, mul.kind, mul.count) == ("aten::mul", "forward", 3)
    assert mul.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in events))
    assert mul.self_cpu_time_total == pytest.approx(sum(e.self_cpu_time_total for e in events))
    assert mul.cpu_time == pytest.approx(mul.cpu_time_total / 3)
    by_shape = prof.key_averages(group_by_input_shape=True)
    assert [(r.key, r.input_shapes, r.count) for r in by_shape] == [
        ("aten::mul", [[2, 3], []], 2),
        ("aten::mul", [[4], []], 1),
    ]


def test_key_averages_rows_have_torchs_field_names(torch):
    x = tg.ones(2, requires_grad=True)
    with profile() as prof:
        (x * 2).sum().backward()
    with torch.autograd.profiler.profile() as tprof:
        (torch.ones(2, requires_grad=True) * 2).sum().backward()
    fields = [
        "key",
        "count",
        "cpu_time_total",
        "self_cpu_time_total",
        "cpu_time",
        "cpu_memory_usage",
        "self_cpu_memory_usage",
        "input_shapes",
        "stack",
        "cpu_parent",
        "is_user_annotation",
    ]
    for ours, theirs in [
        (prof.key_averages()[0], tprof.key_averages()[0]),
        (prof.function_events[0], tprof.function_events[0]),
        (prof.total_average(), tprof.key_averages().total_average()),
    ]:
        for field in fields:
            assert hasattr(theirs, field), field  # the name is torch's ...
            getattr(ours, field)  # ... and ours has it
    for method in ["key_averages", "table", "total_average", "export_chrome_trace"]:
        assert callable(getattr(tprof.function_events, method))
        assert callable(getattr(prof.function_events, method))
    assert isinstance(prof.self_cpu_time_total, float)


def test_total_average_sums_every_event():
    prof, *_ = _program()
    events = prof.function_events
    total = prof.total_average()
    assert (total.key, total.count) == ("Total", len(events))
    assert total.cpu_time_total == pytest.approx(sum(e.cpu_time_total for e in events))
    assert total.self_cpu_time_total == pytest.approx(prof.self_cpu_time_total)
    assert total.cpu_memory_usage == sum(e.cpu_memory_usage for e in events)
    assert prof.key_averages().total_average().count == len(events)


def test_function_event_and_averages_by_hand():
    parent = FunctionEvent(0, "outer", thread=1, start_us=0.0, end_us=10.0, kind="user")
    child = FunctionEvent(1, "Mul", thread=1, start_us=2.0, end_us=6.0)
    parent.cpu_children.append(child)
    child.cpu_parent = parent
    assert (parent.self_cpu_time_total, child.self_cpu_time_total) == (6.0, 4.0)
    events = EventList([parent, child])
    assert events.self_cpu_time_total == 10.0
    assert [(r.key, r.count) for r in events.key_averages()] == [("outer", 1), ("Mul", 1)]
    assert "Mul" in repr(child) and "count=1" in repr(events.key_averages()[1])


# =============================================================================== table


def _header(table):
    """The column names of a table (the line under the first rule)."""
    lines = table.splitlines()
    first_rule = next(i for i, line in enumerate(lines) if line.startswith("--"))
    return re.split(r"\s{2,}", lines[first_rule + 1].strip())


def _rows(table):
    """(rule line, data lines) of a table."""
    lines = table.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("--")]
    return lines[rules[0]], lines[rules[1] + 1 : rules[2]]


def test_table_columns_are_torchs(torch):
    tx = torch.ones(2, 3, requires_grad=True)
    x = tg.ones(2, 3, requires_grad=True)
    for options in [{}, {"profile_memory": True}]:
        with torch.autograd.profiler.profile(**options) as tprof:
            (tx * 2).sum().backward()
        with profile(**options) as prof:
            (x * 2).sum().backward()
        assert _header(prof.key_averages().table()) == _header(tprof.key_averages().table())
    with torch.autograd.profiler.profile(record_shapes=True) as tprof:
        tx * 2
    with profile(record_shapes=True) as prof:
        x * 2
    ours = prof.key_averages(group_by_input_shape=True).table()
    theirs = tprof.key_averages(group_by_input_shape=True).table()
    assert _header(ours) == _header(theirs)
    assert _header(ours)[-1] == "Input Shapes"


def test_table_columns_are_aligned():
    prof, *_ = _program()
    table = prof.key_averages(group_by_input_shape=True).table()
    rule, rows = _rows(table)
    spans = [m.span() for m in re.finditer(r"-+", rule)]
    assert len(rows) == len(prof.key_averages(group_by_input_shape=True))
    for line in rows:
        for j, (start, end) in enumerate(spans):
            cell = line[start:end]
            if j > 0:  # the gap before a column is blank
                assert line[spans[j - 1][1] : start].strip() == "", line
            if 0 < j < len(spans) - 1:  # numbers: right-aligned in their column
                assert cell.strip() and not cell.endswith(" "), (line, j)
        assert not line[0].isspace()  # the name: left-aligned
    calls = spans[_header(table).index("# of Calls")]
    assert rows[1].split()[0] == "aten::mul" and rows[1][slice(*calls)].strip() == "3"  # three Muls


def test_table_sort_by_row_limit_footer_header_and_top_level():
    prof, *_ = _program()
    averages = prof.key_averages()
    table = averages.table(sort_by="self_cpu_time_total", row_limit=3)
    _, rows = _rows(table)
    expected = sorted(averages, key=lambda r: r.self_cpu_time_total, reverse=True)[:3]
    assert [r.split()[0] for r in rows] == [r.key for r in expected]
    assert table.splitlines()[-1] == (
        f"Self CPU time total: {profiler_report._format_time(prof.self_cpu_time_total)}"
    )
    _, by_count = _rows(averages.table(sort_by="count"))
    counts = [int(r.split()[-1]) for r in by_count]
    assert counts == sorted(counts, reverse=True)
    assert averages.table(header="My run").splitlines()[1] == "My run"
    _, top = _rows(averages.table(top_level_events_only=True))
    assert [r.split()[0] for r in top] == ["step"]
    assert "100.00%" in top[0]  # the range is all the time there is
    with pytest.raises(AttributeError, match="self_cpu_time_total"):
        averages.table(sort_by="speed")
    assert str(prof) == prof.function_events.table()


def test_table_shortens_long_names():
    long_name = "a range with a really long name that does not fit in its column at all"
    with profile() as prof, record_function(long_name):
        pass
    _, (row,) = _rows(prof.key_averages().table())
    assert row.startswith(long_name[:52] + "...")


def test_time_and_memory_formats():
    assert profiler_report._format_time(12.3456) == "12.346us"
    assert profiler_report._format_time(2500.0) == "2.500ms"
    assert profiler_report._format_time(3_000_000.0) == "3.000s"
    assert profiler_report._format_memory(100) == "100 B"
    assert profiler_report._format_memory(2048) == "2.00 Kb"
    assert profiler_report._format_memory(-3 * 1024**2) == "-3.00 Mb"


# =============================================================================== memory, stack


def test_profile_memory_counts_the_bytes_of_new_outputs():
    class AddOneInPlace(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            a._data += 1  # writes into a's memory: nothing new
            ctx.mark_dirty(a)
            return a

        @staticmethod
        def backward(ctx, g):
            return g

    x = tg.ones(3, 4, dtype=tg.float64, requires_grad=True)
    with profile(profile_memory=True) as prof, record_function("work"):
        y = x * 2  # new: 96 bytes
        s = y.sum()  # new: 8 bytes
        v = y.t()  # a view of y: no new memory
        AddOneInPlace.apply(x * 1)  # in place: only the Mul inside makes memory
        s.backward()
    events = prof.function_events
    forward = [(e.name, e.cpu_memory_usage) for e in events if e.cpu_parent is events[0]]
    assert forward[:5] == [
        ("aten::mul", 96),
        ("aten::sum", 8),
        ("aten::t", 0),
        ("aten::mul", 96),
        ("AddOneInPlace", 0),
    ]
    assert y.numel() * y.element_size() == 96 and s.element_size() == 8
    assert v.data_ptr() == y.data_ptr()
    for e in events:  # totals include the children's allocations
        children = sum(c.cpu_memory_usage for c in e.cpu_children)
        assert e.cpu_memory_usage == e.self_cpu_memory_usage + children
    assert events[0].self_cpu_memory_usage == 0  # a range allocates nothing itself
    assert events[0].cpu_memory_usage == sum(c.cpu_memory_usage for c in events[0].cpu_children)
    mul_backward = next(e for e in events if e.name == "MulBackward0")
    # its gradient is made by the Mul it runs: counted there, not twice
    assert mul_backward.self_cpu_memory_usage == 0
    assert mul_backward.cpu_memory_usage == 96
    header = _header(prof.key_averages().table())
    assert header[6:8] == ["CPU Mem", "Self CPU Mem"]


def test_custom_function_returning_its_childs_output_counts_it_once():
    class Twice(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    class TwiceAsColumn(tg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return (a * 2).reshape(-1, 1)  # a view of the Mul's output: still the Mul's memory

        @staticmethod
        def backward(ctx, g):
            return g.reshape(-1) * 2

    x = tg.ones(5, dtype=tg.float32)
    with profile(profile_memory=True) as prof:
        Twice.apply(x)
        TwiceAsColumn.apply(x)
    twice, mul, column, mul2, reshape, view = prof.function_events
    assert (twice.name, mul.name, mul.cpu_parent) == ("Twice", "aten::mul", twice)
    assert (mul.self_cpu_memory_usage, twice.self_cpu_memory_usage) == (20, 0)
    assert twice.cpu_memory_usage == 20
    assert [c.name for c in column.cpu_children] == ["aten::mul", "aten::reshape"]
    assert [c.name for c in reshape.cpu_children] == ["aten::view"]
    assert (mul2.cpu_memory_usage, reshape.cpu_memory_usage, view.cpu_memory_usage) == (20, 0, 0)
    assert (column.self_cpu_memory_usage, column.cpu_memory_usage) == (0, 20)


def test_with_stack_names_the_users_file_and_line():
    x = tg.ones(2)
    with profile(with_stack=True) as prof:
        x * 2
        x * 3
    first, second = prof.function_events
    assert os.path.basename(__file__) in first.stack[0]
    assert first.stack[0].endswith("test_with_stack_names_the_users_file_and_line")
    package = os.path.dirname(tg.__file__)
    assert not any(package in frame for e in (first, second) for frame in e.stack)
    assert first.stack[0] != second.stack[0]  # different lines
    by_line = prof.key_averages(group_by_stack_n=1)
    assert [r.count for r in by_line] == [1, 1]
    assert _header(by_line.table())[-1] == "Source Location"
    assert len(prof.key_averages()) == 1


# =============================================================================== chrome trace


def test_chrome_trace_schema(tmp_path, torch):
    prof, *_ = _program()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    assert isinstance(trace["traceEvents"], list)
    complete = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert {e["ph"] for e in trace["traceEvents"]} <= {"X", "M"}
    events = prof.function_events
    assert [e["name"] for e in complete] == [e.name for e in events]
    for item, event in zip(complete, events):
        assert isinstance(item["name"], str)
        for key in ("ts", "dur"):
            assert isinstance(item[key], int | float) and item[key] >= 0
        assert isinstance(item["pid"], int) and isinstance(item["tid"], int)
        assert item["ts"] == pytest.approx(event.start_us)
        assert item["dur"] == pytest.approx(event.cpu_time_total)
        assert item["args"]["kind"] == event.kind
    by_id = {e.id: item for e, item in zip(events, complete)}
    for event in events:  # nested events lie inside their parents on the timeline
        if event.cpu_parent is not None:
            child, parent = by_id[event.id], by_id[event.cpu_parent.id]
            assert (child["pid"], child["tid"]) == (parent["pid"], parent["tid"])
            assert child["ts"] >= parent["ts"] - 1e-6
            assert child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + 1e-6
    # the same keys as torch's complete events
    with torch.autograd.profiler.profile() as tprof:
        torch.ones(2) * 2
    tpath = tmp_path / "torch.json"
    tprof.export_chrome_trace(str(tpath))
    theirs = [e for e in json.loads(tpath.read_text())["traceEvents"] if e.get("ph") == "X"]
    assert set(complete[0]) == set(theirs[0])


# =============================================================================== record_function


def test_record_function_as_a_decorator():
    @record_function("layer")
    def layer(t, k):
        """Scale t."""
        return t * k

    def recurse(n):
        with record_function(f"level {n}"):
            return tg.ones(1) if n == 0 else recurse(n - 1) + 1

    with profile() as prof:
        a = layer(tg.ones(2), 3)
        layer(a, 2)
        recurse(2)
    assert (layer.__name__, layer.__doc__) == ("layer", "Scale t.")
    assert a.tolist() == [3.0, 3.0]
    calls = [e for e in prof.function_events if e.name == "layer"]
    assert [[c.name for c in e.cpu_children] for e in calls] == [["aten::mul"], ["aten::mul"]]
    levels = [e for e in prof.function_events if e.name.startswith("level")]
    assert [e.cpu_parent.name if e.cpu_parent else None for e in levels] == [
        None,
        "level 2",
        "level 1",
    ]
    assert layer(tg.ones(1), 2).tolist() == [2.0]  # outside a profile it just runs


def test_a_range_left_open_is_closed_at_the_end_of_the_profile():
    rf = record_function("dangling")
    x = tg.ones(1)
    with profile() as prof:
        rf.__enter__()
        x * 2
    rf.__exit__(None, None, None)  # after the profile: harmless
    dangling, mul = prof.function_events
    assert mul.cpu_parent is dangling and dangling.end_us >= mul.end_us


# =============================================================================== CUDA on the CPU


def test_use_cuda_without_a_gpu_warns_and_profiles_the_cpu():
    if tg.cuda.is_available():
        pytest.skip("this machine has a GPU")
    warning = "CUDA is not available, disabling CUDA profiling"
    x = tg.ones(2)
    with pytest.warns(UserWarning, match=warning), profile(use_cuda=True) as prof:
        x * 2
    assert _names(prof.function_events, "forward") == ["aten::mul"]
    assert "Self CUDA" not in _header(prof.key_averages().table())


def test_emit_nvtx_is_a_no_op_on_the_cpu():
    if tg.cuda.is_available():
        pytest.skip("this machine has a GPU")
    x = tg.ones(2, requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with emit_nvtx(record_shapes=True) as nvtx:
            assert not state.active
            with record_function("step"):
                (x * 2).sum().backward()
    assert isinstance(nvtx, emit_nvtx)
    assert x.grad.tolist() == [2.0, 2.0]


class _FakeNvtx:
    """Stands in for ``cupy.cuda.nvtx``: keeps the pushes and pops it receives."""

    def __init__(self):
        self.calls = []

    def RangePush(self, name):
        self.calls.append(("push", name))

    def RangePop(self):
        self.calls.append(("pop", None))


def test_emit_nvtx_pushes_one_balanced_range_per_op_and_node(monkeypatch):
    fake = _FakeNvtx()
    monkeypatch.setattr(profiler, "_nvtx_module", lambda: fake)
    x = tg.ones(2, 3, requires_grad=True)
    with emit_nvtx(record_shapes=True):
        with pytest.raises(RuntimeError, match="already enabled"), profile():
            pass
        with record_function("step"):
            (x * 2).sum().backward()
    pushes = [name for what, name in fake.calls if what == "push"]
    assert pushes[:3] == [
        "step",
        "aten::mul, sizes = [[2, 3], []]",
        "aten::sum, sizes = [[2, 3], [], [], []]",
    ]
    assert "MulBackward0, sizes = [[2, 3]]" in pushes
    depth = 0
    for what, _ in fake.calls:  # every push has its pop, in stack order
        depth += 1 if what == "push" else -1
        assert depth >= 0
    assert depth == 0 and fake.calls[-1] == ("pop", None)
    assert not state.active
    with emit_nvtx(enabled=False):
        assert not state.active


# =============================================================================== nvprof


def _thread_object(pid, tid):
    """nvprof's objectId for a thread: processId, threadId, 0 as little-endian uint32s."""
    return pid.to_bytes(4, "little") + tid.to_bytes(4, "little") + bytes(4)


# how the marker rows say start and end: flags (2 start, 4 end, 1 instantaneous) and a
# name only on the start row; no flags (NULL), only the names; no flags column at all
MARKER_LAYOUTS = ["flags", "no flags", "no flags column"]


def _nvprof_file(path, layout="flags"):
    """A small trace in nvprof's SQLite layout (timestamps in ns)."""
    db = sqlite3.connect(path)
    flags = "" if layout == "no flags column" else "flags INT,"
    db.executescript(
        f"""
        CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT NOT NULL);
        CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, {flags}
            timestamp INT, id INT, objectKind INT, objectId BLOB, name INT, domain INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY, cbid INT,
            start INT, end INT, processId INT, threadId INT, correlationId INT, returnValue INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY,
            start INT, end INT, deviceId INT, contextId INT, streamId INT,
            correlationId INT, name INT);
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(_id_ INTEGER PRIMARY KEY, start INT, end INT,
            deviceId INT, contextId INT, streamId INT, correlationId INT, name INT);
        """
    )
    db.executemany(
        "INSERT INTO StringTable VALUES (?, ?)",
        [
            (1, "step"),
            (2, "Mul"),
            (3, "MulBackward0"),
            (4, "other"),
            (5, "mul_kernel"),
            (6, "tick"),
        ],
    )
    main, side = _thread_object(42, 101), _thread_object(42, 202)
    markers = [  # (flags, timestamp, id, objectKind, objectId, name): start 2, end 4, instant 1
        (2, 1000, 1, 2, main, 1),
        (2, 2000, 2, 2, main, 2),
        (4, 5000, 2, 2, main, 0),
        (2, 6000, 3, 2, main, 3),
        (4, 8000, 3, 2, main, 0),
        (4, 9000, 1, 2, main, 0),
        (2, 1500, 4, 2, side, 4),
        (4, 2500, 4, 2, side, 0),
        (1, 3000, 5, 2, main, 6),  # instantaneous: not a range
        (2, 9500, 6, 2, main, 4),  # never closed: skipped
    ]
    if layout == "flags":
        columns = "flags, timestamp, id, objectKind, objectId, name"
    else:
        columns = "timestamp, id, objectKind, objectId, name"
        markers = [row[1:] for row in markers]
    db.executemany(
        f"INSERT INTO CUPTI_ACTIVITY_KIND_MARKER({columns}, domain) VALUES "
        f"({', '.join('?' * len(markers[0]))}, 0)",
        markers,
    )
    runtime = [  # (cbid, start, end, threadId, correlationId)
        (211, 2500, 3000, 101, 7),  # cudaLaunchKernel inside Mul
        (211, 6500, 7000, 101, 8),  # cudaLaunchKernel inside MulBackward0
        (165, 9200, 9400, 101, 9),  # cudaDeviceSynchronize after the step
        (999, 9600, 9700, 101, 10),  # an id without a known name
    ]
    db.executemany(
        "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId,"
        " correlationId, returnValue) VALUES (?, ?, ?, 42, ?, ?, 0)",
        runtime,
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(start, end, deviceId, contextId,"
        " streamId, correlationId, name) VALUES (3500, 4500, 0, 1, 7, 7, 5)"
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId,"
        " correlationId, name) VALUES (7200, 7800, 0, 1, 7, 8, 5)"
    )
    db.commit()
    db.close()


@pytest.mark.parametrize("layout", MARKER_LAYOUTS)
def test_load_nvprof_reads_ranges_calls_and_kernels(tmp_path, layout):
    path = str(tmp_path / "trace.sqlite")
    _nvprof_file(path, layout)
    events = load_nvprof(path)
    assert isinstance(events, EventList)
    assert [(e.name, e.kind, e.thread) for e in events] == [
        ("step", "nvtx", 101),
        ("other", "nvtx", 202),
        ("Mul", "nvtx", 101),
        ("cudaLaunchKernel", "runtime", 101),
        ("MulBackward0", "nvtx", 101),
        ("cudaLaunchKernel", "runtime", 101),
        ("cudaDeviceSynchronize", "runtime", 101),
        ("cudaRuntime (cbid 999)", "runtime", 101),
    ]
    step, other, mul, launch, backward, launch2, sync, unknown = events
    assert (step.start_us, step.end_us) == (0.0, 8.0)  # µs since the first record
    assert (mul.start_us, mul.end_us) == (1.0, 4.0)
    assert [c.name for c in step.cpu_children] == ["Mul", "MulBackward0"]
    assert (launch.cpu_parent, launch2.cpu_parent) == (mul, backward)
    assert (other.cpu_parent, sync.cpu_parent) == (None, None)
    (kernel,) = launch.kernels
    assert (kernel.name, kernel.device, kernel.stream) == ("mul_kernel", 0, 7)
    assert (kernel.start_us, kernel.duration_us) == (2.5, 1.0)
    assert [k.duration_us for k in launch2.kernels] == [pytest.approx(0.6)]
    # GPU time adds up: launches own their kernels, ranges sum their children
    assert launch.cuda_time_total == mul.cuda_time_total == pytest.approx(1.0)
    assert step.cuda_time_total == pytest.approx(1.6)
    assert step.self_cuda_time_total == pytest.approx(0.0)
    assert launch.self_cuda_time_total == pytest.approx(1.0)
    assert (sync.cuda_time_total, unknown.kernels) == (0.0, [])
    # the summaries work on a loaded trace too, with the CUDA columns
    table = events.key_averages().table(sort_by="cuda_time_total")
    assert _header(table)[6:10] == ["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]
    assert table.splitlines()[-1].startswith("Self CUDA time total: 1.600us")
    launches = next(r for r in events.key_averages() if r.key == "cudaLaunchKernel")
    assert (launches.count, launches.cuda_time_total) == (2, pytest.approx(1.6))


@pytest.mark.parametrize("layout", MARKER_LAYOUTS)
def test_load_nvprof_pairs_ranges_like_torch(tmp_path, torch, layout):
    """The same ranges as torch's load_nvprof, in the same order, as long (torch keeps the
    trace's ns where teachgrad has µs)."""
    path = str(tmp_path / "trace.sqlite")
    _nvprof_file(path, layout)
    ours = [(e.name, round(e.cpu_time_total * 1000)) for e in load_nvprof(path) if e.kind == "nvtx"]
    theirs = [(e.name, e.cpu_time_total) for e in torch.autograd.profiler.load_nvprof(path)]
    assert ours == theirs


def test_load_nvprof_kernels_go_to_a_gpu_row_in_the_chrome_trace(tmp_path):
    path = str(tmp_path / "trace.sqlite")
    _nvprof_file(path)
    out = tmp_path / "trace.json"
    load_nvprof(path).export_chrome_trace(str(out))
    trace = json.loads(out.read_text())["traceEvents"]
    kernels = [e for e in trace if e["ph"] == "X" and e["cat"] == "kernel"]
    assert [(k["name"], k["pid"], k["tid"], k["ts"]) for k in kernels] == [
        ("mul_kernel", 0, 7, 2.5),
        ("mul_kernel", 0, 7, 6.2),
    ]
    assert {
        "ph": "M",
        "name": "process_name",
        "pid": 0,
        "tid": 0,
        "args": {"name": "GPU 0"},
    } in trace


def test_load_nvprof_without_optional_tables(tmp_path):
    path = str(tmp_path / "markers_only.sqlite")
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY, value TEXT)")
    db.execute("INSERT INTO StringTable VALUES (1, 'only')")
    db.execute(  # an older layout without objectKind
        "CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY, flags INT,"
        " timestamp INT, id INT, objectId BLOB, name INT, domain INT)"
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (1, 2, 10, 1, ?, 1, 0)",
        (_thread_object(1, 5),),
    )
    db.execute(
        "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER VALUES (2, 4, 2010, 1, ?, 0, 0)",
        (_thread_object(1, 5),),
    )
    db.commit()
    db.close()
    (only,) = load_nvprof(path)
    assert (only.name, only.thread, only.cpu_time_total, only.kernels) == ("only", 5, 2.0, [])


def test_load_nvprof_says_what_is_wrong_with_other_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_nvprof(str(tmp_path / "missing.sqlite"))
    path = tmp_path / "other odd#name.sqlite"
    sqlite3.connect(path).close()
    with pytest.raises(RuntimeError, match="is not an nvprof trace: it has no StringTable"):
        load_nvprof(str(path))


# =============================================================================== on a GPU


@pytest.mark.cuda
def test_use_cuda_times_each_op_with_cuda_events(tmp_path):
    x = tg.ones(256, 256, device="cuda", requires_grad=True)
    with profile(use_cuda=True, profile_memory=True) as prof, record_function("step"):
        y = (x @ x).sum()
        y.backward()
    events = prof.function_events
    step = events[0]
    assert step.cuda_time_total > 0
    for e in events:
        assert e.cuda_time_total >= 0
        assert e.self_cuda_time_total <= e.cuda_time_total + 1e-3
        assert e.device_range is not None and e.device_range[0] == tg.cuda.current_device()
    matmul = next(e for e in events if e.kind == "forward")  # a new 256 x 256 float32
    assert matmul.name == "aten::matmul"  # torch's name for @
    assert matmul.cuda_memory_usage == 256 * 256 * 4 and matmul.cpu_memory_usage == 0
    table = prof.key_averages().table(sort_by="cuda_time_total")
    assert "Self CUDA" in _header(table) and "CUDA Mem" in _header(table)
    assert "Self CUDA time total:" in table
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    gpu = [e for e in json.loads(path.read_text())["traceEvents"] if e.get("cat") == "cuda"]
    assert len(gpu) == len(events)


@pytest.mark.cuda
def test_emit_nvtx_pushes_ranges_through_cupy(monkeypatch):
    import cupy

    if not getattr(cupy.cuda.nvtx, "available", True):
        pytest.skip("this CuPy was built without NVTX")
    pushed = []
    real_push = cupy.cuda.nvtx.RangePush
    monkeypatch.setattr(
        cupy.cuda.nvtx, "RangePush", lambda name, *a: (pushed.append(name), real_push(name))[1]
    )
    x = tg.ones(4, device="cuda", requires_grad=True)
    with emit_nvtx():
        (x * 2).sum().backward()
    assert "aten::mul" in pushed and "MulBackward0" in pushed
    assert x.grad.tolist() == [2.0] * 4


# ---- sequence_nr and fwd_thread: torch's test_profiler_seq_nr (test_autograd.py)
def _seq_program(lib):
    """torch's test_profiler_seq_nr program, plus an op in no_grad and a record_function."""
    x = lib.randn(10, 10, requires_grad=True)
    y = lib.randn(10, 10, requires_grad=True)
    with lib.autograd.profiler.profile() as p, lib.autograd.profiler.record_function("step"):
        z = x + y
        s = z.sum(dim=None)
        with lib.no_grad():
            x * 2
        s.backward()
    return p.function_events


@pytest.mark.parametrize("lib", ["teachgrad", "torch"], indirect=True)
def test_an_op_and_its_backward_node_share_a_sequence_number(lib):
    events = _seq_program(lib)
    numbers = []
    for op_name, node_name in (("aten::add", "AddBackward"), ("aten::sum", "SumBackward")):
        (op,) = [e for e in events if e.name == op_name]
        (node,) = [e for e in events if e.name.startswith(node_name)]  # (SumBackward1 here)
        assert op.sequence_nr >= 0 and node.sequence_nr == op.sequence_nr
        assert op.fwd_thread == 0 and node.fwd_thread == op.thread
        numbers.append(op.sequence_nr)
    assert numbers[1] > numbers[0]  # (in creation order)
    unnumbered = [
        e.name
        for e in events
        if e.sequence_nr == -1 and not e.name.startswith(("autograd::engine", "detach"))
    ]
    # the range, the op in no_grad, ops inside backward nodes (grad mode is off there) and
    # AccumulateGrad; torch also lists the kernels it runs inside ops (aten::empty ...)
    assert {"step", "aten::mul", "torch::autograd::AccumulateGrad"} <= set(unnumbered)
    assert all(e.fwd_thread == 0 for e in events if e.sequence_nr == -1)


@pytest.mark.parametrize("lib", ["teachgrad", "torch"], indirect=True)
def test_profiler_seq_nr(lib):
    """torch's test_profiler_seq_nr (test_autograd.py): an op, the engine's event for its node
    and the node's own event share one sequence number; both backward events name the
    op's thread; ``aten::empty``, the step of ``randn`` that makes its memory, has none."""
    with lib.autograd.profiler.profile() as p:
        x = lib.randn(10, 10, requires_grad=True)
        y = lib.randn(10, 10, requires_grad=True)
        z = x + y
        s = z.sum(dim=None)
        s.backward()
    autograd_ops = {("aten::add", "Add"): [], ("aten::sum", "Sum"): []}
    accumulate_ops = []
    found_empty = False
    for e in p.function_events:
        for (fwd_name, bwd_name), ops in autograd_ops.items():
            if e.name == fwd_name or (bwd_name in e.name and "Backward" in e.name):
                ops.append(e)
        if "AccumulateGrad" in e.name:
            accumulate_ops.append(e)
        if e.name == "aten::empty":
            assert e.sequence_nr == -1
            found_empty = True
    assert found_empty
    for idx, ((fwd_name, bwd_name), ops) in enumerate(autograd_ops.items()):
        node = f"{bwd_name}Backward{idx}"
        assert [e.name for e in ops] == [fwd_name, _ENGINE + node, node]
        assert ops[0].sequence_nr >= 0
        assert ops[1].sequence_nr == ops[2].sequence_nr == ops[0].sequence_nr
        assert ops[0].fwd_thread == 0
        assert ops[1].fwd_thread == ops[2].fwd_thread == ops[0].thread
    # (beyond torch's test) AccumulateGrad: engine event, node event, twice; no number
    assert [e.name for e in accumulate_ops] == [_ENGINE + _ACCUMULATE, _ACCUMULATE] * 2
    assert {(e.sequence_nr, e.fwd_thread) for e in accumulate_ops} == {(-1, 0)}


_ACCUMULATE = "torch::autograd::AccumulateGrad"


def _engine_events(lib, **options):
    """Each engine event of ``(x * 2).sum().backward()``: (name, its children's names, its
    input shapes), and the names ``key_averages()`` and ``table()`` show."""
    x = lib.ones(3, requires_grad=True)
    with lib.autograd.profiler.profile(**options) as p:
        (x * 2).sum().backward()
    events = [e for e in p.function_events if e.name.startswith(_ENGINE)]
    for e in events:  # the engine's own time is what its node's event leaves
        assert e.self_cpu_time_total == pytest.approx(
            e.cpu_time_total - e.cpu_children[0].cpu_time_total
        )
    averaged = [a.key for a in p.key_averages() if a.key.startswith(_ENGINE)]
    shown = p.table(max_name_column_width=80).count(_ENGINE)
    rows = [(e.name, [c.name for c in e.cpu_children], e.input_shapes) for e in events]
    return rows, averaged, shown


def test_the_engine_events_are_torchs(torch):
    """Names, nesting, shapes (none: torch records no inputs for them) and the rows of
    ``key_averages()`` (one per node kind) and ``table()`` (one per event) are torch's."""
    ours = _engine_events(tg, record_shapes=True)
    assert ours == _engine_events(torch, record_shapes=True)
    rows, averaged, shown = ours
    nodes = ("SumBackward0", "MulBackward0", _ACCUMULATE)
    assert rows == [(_ENGINE + n, [n], []) for n in nodes]
    assert (len(averaged), shown) == (3, 3)


@pytest.mark.parametrize("lib", ["teachgrad", "torch"], indirect=True)
def test_profile_takes_use_kineto(lib):
    """torch's tests pass ``use_kineto`` (its C++ backend; teachgrad has one profiler);
    test_profiler_unboxed_only (test_autograd.py) profiles a resize_."""
    x = lib.rand(3, 4)
    with lib.autograd.profiler.profile(use_kineto=False) as prof:
        x.resize_([3, 2])
    assert tuple(x.shape) == (3, 2)
    assert "aten::resize_" in [e.name for e in prof.function_events]


def test_an_op_without_a_node_takes_the_next_nodes_number_and_factories_none(torch):
    """torch numbers each op on tensors in grad mode with the number the next node will get
    (it peeks), even when the op records none; creating a tensor is no such op."""
    seqs = {}
    for lib in (tg, torch):
        a, b = lib.ones(2), lib.ones(2, requires_grad=True)
        with lib.autograd.profiler.profile() as p:
            lib.zeros(2)  # (a factory: -1)
            a * 2  # (no input requires grad: no node, but a number)
            c = b * 2
            d = c * 3
        first = c.grad_fn._sequence_nr()
        seqs[lib] = [
            (e.name, e.sequence_nr - first if e.sequence_nr >= 0 else -1)
            for e in p.function_events
            if e.cpu_parent is None
        ]
        assert d.grad_fn._sequence_nr() == first + 1
    assert (
        seqs[tg]
        == seqs[torch]
        == [
            ("aten::zeros", -1),
            ("aten::mul", 0),
            ("aten::mul", 0),
            ("aten::mul", 1),
        ]
    )


def test_a_backward_node_of_an_op_run_on_another_thread_names_that_thread():
    import threading

    x = tg.ones(2, requires_grad=True)
    made = []
    with profile() as prof:
        worker = threading.Thread(target=lambda: made.append((x * 2).sum()))
        worker.start()
        worker.join()
        made[0].backward()
    forward = {e.sequence_nr: e.thread for e in prof.function_events if e.kind == "forward"}
    backward = [e for e in prof.function_events if e.name in ("MulBackward0", "SumBackward0")]
    assert len(backward) == 2
    for e in backward:
        assert e.fwd_thread == forward[e.sequence_nr] != e.thread


_MAKERS = {
    "tg.ones(2)": lambda lib, x: lib.ones(2),
    "zeros": lambda lib, x: lib.zeros(2, 3, dtype=lib.float64),
    "full": lambda lib, x: lib.full((2,), 3.0),
    "empty": lambda lib, x: lib.empty(2),
    "rand": lambda lib, x: lib.rand(2),
    "randn, requiring grad": lambda lib, x: lib.randn(2, requires_grad=True),
    "ones_like": lambda lib, x: lib.ones_like(x),
    "zeros_like": lambda lib, x: lib.zeros_like(x),
    "empty_like": lambda lib, x: lib.empty_like(x),
    "full_like": lambda lib, x: lib.full_like(x, 2.0),
    "rand_like": lambda lib, x: lib.rand_like(x),
    "randn_like": lambda lib, x: lib.randn_like(x),
}


@pytest.mark.parametrize("make", _MAKERS.values(), ids=_MAKERS.keys())
@pytest.mark.parametrize("lib", ["teachgrad", "torch"], indirect=True)
def test_a_maker_shows_torch_s_steps_and_no_sequence_number(lib, make):
    """A maker's event has torch's children (its memory, ``aten::empty`` or ``aten::empty_like``
    around ``aten::empty_strided``, then what writes the values: ``aten::fill_``,
    ``aten::zero_``, ``aten::normal_`` ...), and none of them has a sequence number, even
    given a tensor that requires grad."""
    x = lib.ones(2, 3, requires_grad=True)
    with lib.autograd.profiler.profile() as p:
        make(lib, x)
    tree = [(e.name, [c.name for c in e.cpu_children], e.sequence_nr) for e in p.function_events]
    want = {
        "tg.ones(2)": [("aten::ones", ["aten::empty", "aten::fill_"], -1)],
        "zeros": [("aten::zeros", ["aten::empty", "aten::zero_"], -1)],
        "full": [("aten::full", ["aten::empty", "aten::fill_"], -1)],
        "empty": [("aten::empty", [], -1)],
        "rand": [("aten::rand", ["aten::empty", "aten::uniform_"], -1)],
        "randn, requiring grad": [("aten::randn", ["aten::empty", "aten::normal_"], -1)],
        "ones_like": [("aten::ones_like", ["aten::empty_like", "aten::fill_"], -1)],
        "zeros_like": [("aten::zeros_like", ["aten::empty_like", "aten::zero_"], -1)],
        "empty_like": [("aten::empty_like", ["aten::empty_strided"], -1)],
        "full_like": [("aten::full_like", ["aten::empty_like", "aten::fill_"], -1)],
        "rand_like": [("aten::rand_like", ["aten::empty_like", "aten::uniform_"], -1)],
        "randn_like": [("aten::randn_like", ["aten::empty_like", "aten::normal_"], -1)],
    }
    key = next(k for k, v in _MAKERS.items() if v is make)
    assert tree[:1] == want[key]
    assert all(number == -1 for _, _, number in tree)

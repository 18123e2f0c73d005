"""The profiler's public API and a few gradients at special values, as PyTorch's own autograd
tests (test_autograd.py: test_profiler_tracing, test_record_function,
test_record_function_callbacks, test_record_function_multithreaded,
test_profiler_aggregation_table, test_profiler_shapes, test_profiler_no_cuda,
test_power_function, test_nansum_dtype (with ``sum``), test_reduce_dtype (``sum``, ``prod``,
``cumsum``), test_integer_outputs (``argmax``, ``argmin``), test_profiler_aggregation_fake,
test_profiler_function_event_avg) check them.

Each test runs once with teachgrad and once with torch (the ``lib`` fixture) and asserts the
facts torch's test asserts. Left out: torch's private ``autograd._profiler_enabled``, and ops
teachgrad lacks (nansum, cumprod, logcumsumexp, argsort, searchsorted).
"""

import json
import math

import pytest

from tests.teachgrad.autograd._port import randn, same

pytestmark = pytest.mark.usefixtures("torch")


def test_profiler_tracing(lib, tmp_path):
    t1, t2 = lib.ones(1), lib.ones(1)
    with lib.autograd.profiler.profile() as prof:
        lib.add(t1, t2)
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    json.loads(path.read_text())  # valid JSON


def test_record_function(lib):
    profiler = lib.autograd.profiler
    x = randn(lib, 10, 10)

    def forward(x):
        with profiler.record_function("outer"):
            y = x * 2 + 4
            with profiler.record_function("inner"):
                y = y - 1
        y = y / 1

    forward(x)
    with profiler.profile() as p:
        forward(x)
    # the ranges and the ops, in this order (other events may come between them)
    important = ["outer", "aten::mul", "aten::add", "inner", "aten::sub", "aten::div"]
    idx = 0
    for info in p.function_events:
        if idx < len(important) and info.name == important[idx]:
            idx += 1
    assert idx == len(important)

    # record_function as a decorator
    @profiler.record_function("my_func")
    def f(x, y):
        return x + y

    with profiler.profile() as p:
        f(1, 2)
    assert "my_func" in str(p)


def test_record_function_callbacks(lib):
    profiler = lib.autograd.profiler
    x = randn(lib, 10, 10)
    with profiler.profile() as p, profiler.record_function("foo"):
        x * 2 + 4
    foo_event = [event for event in p.function_events if "foo" in event.name][0]
    assert foo_event.count == 1


def test_record_function_multithreaded(lib):
    record_function = lib.autograd.profiler.record_function
    rf = record_function("outer")
    rf.__enter__()
    with record_function("inner"):
        rf.__exit__(None, None, None)  # leaving a range after entering another: no error
    with record_function("inner"):
        rf.__enter__()
    rf.__exit__(None, None, None)  # leaving a range after another ended: no error


def test_profiler_aggregation_table(lib):
    x = randn(lib, 1024)
    with lib.autograd.profiler.profile() as prof:
        lib.einsum("i->", x)
    assert prof.table() == str(prof)


def test_profiler_shapes(lib):
    layer1 = lib.nn.Linear(20, 30)
    layer2 = lib.nn.Linear(30, 40)
    x = lib.randn(128, 20)
    with lib.autograd.profiler.profile(record_shapes=True) as prof:
        layer2(layer1(x))
    top_level = [e.input_shapes for e in prof.function_events if e.name == "aten::linear"]
    assert top_level == [[[128, 20], [30, 20], [30]], [[128, 30], [40, 30], [40]]]


def test_profiler_no_cuda(lib):
    layer = lib.nn.Linear(20, 30)
    x = lib.randn(128, 20)
    with lib.autograd.profiler.profile(use_cuda=False) as prof:
        layer(x)
    text = str(prof).lower()
    assert "cpu" in text
    assert "cuda" not in text


def test_power_function(lib):
    a = lib.tensor([0.0, 0.0, 0.0])
    b = lib.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    lib.sum(a**b).backward()
    assert same(b.grad, [-math.inf, 0.0, 0.0])

    b = lib.tensor([-1.0, 0.0, 1.0], requires_grad=True)
    lib.sum(0**b).backward()
    assert same(b.grad, [-math.inf, 0.0, 0.0])


@pytest.mark.parametrize("inp_dtype, out_dtype", [("float", "double"), ("double", "float")])
def test_nansum_dtype(lib, inp_dtype, out_dtype):
    a = randn(lib, 2, 2, 2, 2, dtype=getattr(lib, inp_dtype), requires_grad=True)
    b = lib.sum(a, dtype=getattr(lib, out_dtype))
    b.backward()
    assert a.grad.dtype == a.dtype


@pytest.mark.parametrize("op, has_no_dim", [("sum", True), ("prod", True), ("cumsum", False)])
def test_reduce_dtype(lib, op, has_no_dim):
    op = getattr(lib, op)
    x = randn(lib, 3, 3, dtype=lib.float, requires_grad=True)
    if has_no_dim:
        (grad1,) = lib.autograd.grad([op(x)], [x])
        (grad2,) = lib.autograd.grad([op(x, dtype=lib.double)], [x])
        assert same(grad1, grad2, rtol=1e-5)
        assert grad2.dtype == lib.float
    gi = randn(lib, *op(x, dim=0).shape, seed=1, dtype=lib.float)
    (grad1,) = lib.autograd.grad([op(x, dim=0)], [x], gi)
    (grad2,) = lib.autograd.grad([op(x, dim=0, dtype=lib.double)], [x], gi.double())
    assert same(grad1, grad2, rtol=1e-5)
    assert grad2.dtype == lib.float


def test_integer_outputs(lib):
    inp = lib.rand(4, requires_grad=True)
    for out in (inp.argmax(), inp.argmin()):
        assert not out.dtype.is_floating_point
        assert not out.requires_grad


# --------------------------------------------------------------------------- events made by hand


def test_profiler_aggregation_fake(lib):
    """Parents and children worked out from the times alone, thread by thread: of two events
    that start together the longer is the outer, and one that ends later is no child."""
    profiler = lib.autograd.profiler
    events = profiler.EventList()
    ranges = {1: [(0, 1), (1, 2)], 0: [(0, 2), (1, 2), (1, 3)]}  # thread -> (start, end)
    for thread, spans in ranges.items():
        for start, end in spans:
            events.append(
                profiler.FunctionEvent(
                    id=len(events) + 1,
                    node_id=0,
                    name="",
                    thread=thread,
                    start_us=start,
                    end_us=end,
                )
            )
    events._populate_cpu_children()
    assert [[c.id for c in e.cpu_children] for e in events] == [[], [], [], [], [4]]
    assert [None if e.cpu_parent is None else e.cpu_parent.id for e in events] == [
        None,
        None,
        None,
        5,
        None,
    ]


def test_profiler_function_event_avg(lib):
    profiler = lib.autograd.profiler_util  # (torch's profiler does not export the average)
    avg = profiler.FunctionEventAvg()
    avg.add(profiler.FunctionEvent(id=0, node_id=0, name="foo", thread=0, start_us=10, end_us=15))
    avg.add(profiler.FunctionEvent(id=1, node_id=0, name="foo", thread=0, start_us=20, end_us=30))
    avg.add(avg)  # (itself: every sum doubles)
    assert avg.key == "foo"
    assert (avg.count, avg.cpu_time_total, avg.self_cpu_time_total) == (4, 30, 30)
    assert (avg.device_time_total, avg.cpu_time) == (0, 7.5)


@pytest.mark.parametrize("unit, shown", [("s", "0.000s"), ("ms", "0.005ms"), ("us", "5.000us")])
def test_a_table_in_one_time_unit(lib, unit, shown):
    profiler = lib.autograd.profiler
    events = profiler.EventList(
        [profiler.FunctionEvent(id=0, name="foo", thread=0, start_us=10, end_us=15)]
    )
    table = events.table(time_unit=unit)
    assert shown in table.splitlines()[3]  # (the row: self, total and average times)
    assert table.splitlines()[-1].endswith(shown)  # (the footer's total)

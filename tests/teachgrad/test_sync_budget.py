"""The CPU waits for the GPU only where a check needs a value: at most one device→host
synchronisation per op call (an index-bounds check: CuPy would silently wrap a bad index
where NumPy raises; a boolean mask's count of True values), and none on the hot path of
elementwise ops, the losses or the optimizers.

A check a loss makes on the GPU (a class index out of range) does not wait: like torch's
CUDA kernels, it fails late, with torch's CUDA error, at the next point where the CPU waits
for the GPU anyway (``teachgrad._backend.device_assert``).

Counted by the CuPy stand-in (tests/cupy_standin.py), which notes each ``bool()``, ``int()``,
``float()``, ``item()`` or ``get()`` of device data, and each boolean-mask index, at the
file:line that asked for it.
"""

import functools
import pathlib

import pytest

import teachgrad as tg
from tests import cupy_standin
from tests.teachgrad.nn import test_functional
from tests.teachgrad.ops import (
    test_linalg,
    test_pointwise,
    test_reduce,
    test_shape_index_ops,
    test_views,
)
from tests.teachgrad.ops._cases import make_inputs

F = tg.nn.functional


@pytest.fixture
def cuda(monkeypatch):
    """The stand-in behind teachgrad's "cuda" device, for this test only (with its own list
    of pending device checks: a test that fails may leave one behind)."""
    monkeypatch.setattr(tg._backend, "_cupy", cupy_standin.module)
    monkeypatch.setattr(tg._backend.generators, "cuda", {})
    monkeypatch.setattr(tg._backend, "_pending_checks", {})
    return "cuda"


def syncs(fn) -> dict:
    """The synchronisations of one call of ``fn``, after a first call (lazy state made)."""
    fn()
    with cupy_standin.count_syncs() as counted:
        fn()
    return dict(counted)


def test_elementwise_ops_forward_and_backward_never_wait(cuda):
    x = tg.randn(4, 5, device=cuda, requires_grad=True)
    y = tg.randn(4, 5, device=cuda, requires_grad=True)
    step = lambda: ((x * y + x.exp() - y.tanh()).relu().clamp(0, 1).maximum(y).sum()).backward()
    assert syncs(step) == {}


LOSSES = {
    "cross_entropy": F.cross_entropy,
    "nll_loss": lambda x, t: F.nll_loss(F.log_softmax(x, 1), t),
    "cross_entropy weight, ignore_index, label_smoothing": lambda x, t: F.cross_entropy(
        x, t, weight=tg.ones(5, device=x.device), ignore_index=1, label_smoothing=0.1
    ),
    "nll_loss 4-d": lambda x, t: F.nll_loss(x.reshape(1, 5, 2, 2), t.reshape(1, 2, 2)),
}


@pytest.mark.parametrize("loss", LOSSES.values(), ids=LOSSES.keys())
def test_a_classification_loss_never_waits(cuda, loss):
    """Its target check stays on the GPU (the next tests: where it is reported)."""
    x = tg.randn(4, 5, device=cuda, requires_grad=True)
    t = tg.tensor([0, 1, 4, 1], device=cuda)
    assert syncs(lambda: loss(x, t).backward()) == {}


# The places where the CPU waits for the GPU anyway, where a failed device check surfaces.
HOST_WAITS = {
    "print": repr,
    ".cpu()": lambda t: t.cpu(),
    '.to("cpu")': lambda t: t.to("cpu"),
    "tg.cuda.synchronize()": lambda t: tg.cuda.synchronize(),
    ".item()": lambda t: t.item(),
    ".tolist()": lambda t: t.tolist(),
    "float()": float,
    "bool()": bool,
    ".numpy(force=True)": lambda t: t.numpy(force=True),
}


@pytest.mark.parametrize("wait", HOST_WAITS.values(), ids=HOST_WAITS.keys())
def test_a_bad_target_on_a_gpu_fails_at_the_next_wait_with_torchs_cuda_error(cuda, wait):
    """The stand-in wraps class 7 of 5 around to class 2, as CuPy would: without the check
    on the device, the loss would be a plausible number and nothing would fail."""
    x = tg.randn(3, 5, device=cuda, requires_grad=True)
    with cupy_standin.count_syncs() as counted:
        loss = F.cross_entropy(x, tg.tensor([0, 7, 1], device=cuda))  # no wait, no error yet
        loss.backward()
    assert counted == {}
    with pytest.raises(RuntimeError) as err:
        wait(loss)
    first, teaching, *_ = str(err.value).splitlines()
    assert first == "CUDA error: device-side assert triggered"  # torch's, word for word
    assert "nll_loss" in teaching and "target class index out of range" in teaching
    assert "reported late" in str(err.value) and "tg.cuda.synchronize()" in str(err.value)


def test_a_reported_device_error_is_forgotten_and_the_next_call_works(cuda):
    x = tg.randn(3, 5, device=cuda)
    F.cross_entropy(x, tg.tensor([0, 7, 1], device=cuda))
    with pytest.raises(RuntimeError, match="device-side assert triggered"):
        tg.cuda.synchronize()
    good = F.cross_entropy(x, tg.tensor([0, 4, 1], device=cuda))
    expected = F.cross_entropy(x.cpu(), tg.tensor([0, 4, 1]))
    tg.testing.assert_close(good.cpu(), expected)  # no error left over from the bad call


def test_checks_pending_from_many_calls_take_one_flag_and_one_wait(cuda):
    """However many calls run before the CPU waits, one flag per kind of check is kept
    (combined on the GPU), and reading them is one wait; a bad target in the first call
    still fails."""
    x = tg.randn(3, 5, device=cuda)
    F.nll_loss(x, tg.tensor([0, -3, 1], device=cuda))
    for _ in range(50):
        F.nll_loss(x, tg.tensor([0, 4, 1], device=cuda))
    assert len(tg._backend._pending_checks) == 1
    with cupy_standin.count_syncs() as counted, pytest.raises(RuntimeError, match="nll_loss"):
        tg.cuda.synchronize()
    assert sum(counted.values()) == 1, counted


def test_binary_cross_entropy_checks_its_input_on_the_gpu_too(cuda):
    p = tg.tensor([0.5, 1.5], device=cuda)
    loss = F.binary_cross_entropy(p, tg.tensor([1.0, 0.0], device=cuda))
    with pytest.raises(RuntimeError, match="binary_cross_entropy got an input outside"):
        repr(loss)


def test_on_the_cpu_a_bad_target_fails_at_once_with_torchs_cpu_error():
    with pytest.raises(IndexError, match=r"^Target 7 is out of bounds\.\n"):
        F.cross_entropy(tg.randn(3, 5), tg.tensor([0, 7, 1]))
    assert tg._backend._pending_checks == {}  # nothing left for a later wait


@pytest.mark.parametrize(
    "index",
    [
        lambda x, i: x[i],
        lambda x, i: x[tg.arange(3, device=x.device), i],
        lambda x, i: x.gather(1, i.unsqueeze(1)),
        lambda x, i: x.index_select(0, i),
    ],
    ids=["getitem", "getitem rows, cols", "gather", "index_select"],
)
def test_an_index_op_waits_once_for_its_bounds_check(cuda, index):
    x = tg.randn(4, 5, device=cuda, requires_grad=True)
    i = tg.tensor([0, 2, 3], device=cuda)
    counted = syncs(lambda: index(x, i).sum().backward())
    assert sum(counted.values()) == 1, counted


@pytest.mark.parametrize(
    "make",
    [
        lambda p: tg.optim.SGD(p, lr=0.1, momentum=0.9, weight_decay=1e-4),
        lambda p: tg.optim.Adam(p, lr=0.01),
        lambda p: tg.optim.AdamW(p, lr=0.01, amsgrad=True),
    ],
    ids=["SGD", "Adam", "AdamW-amsgrad"],
)
def test_an_optimizer_step_never_waits(cuda, make):
    model = tg.nn.Sequential(tg.nn.Linear(5, 8), tg.nn.ReLU(), tg.nn.Linear(8, 3)).to(cuda)
    optimizer = make(model.parameters())
    x = tg.randn(4, 5, device=cuda)
    target = tg.tensor([0, 2, 1, 1], device=cuda)

    def step():
        optimizer.zero_grad()
        F.cross_entropy(model(x), target).backward()
        optimizer.step()

    assert syncs(step) == {}


def test_the_counter_names_the_line_that_waited(cuda):
    """(So the checks above are not vacuous.)"""
    x = tg.ones(2, device=cuda)
    with cupy_standin.count_syncs() as counted:
        bool(x._data.all())
    assert list(counted) == [f"tests/teachgrad/test_sync_budget.py:{_line_of('bool(x._data')}"]


def _line_of(text: str) -> int:
    source = pathlib.Path(__file__).read_text().splitlines()
    return next(n for n, line in enumerate(source, 1) if text in line and "_line_of" not in line)


def test_the_bounds_check_catches_what_cupy_would_wrap(cuda):
    """What the one synchronisation buys: CuPy reads index 7 of 4 rows as row 3; teachgrad raises."""
    x = tg.randn(4, 5, device=cuda)
    assert x._data[cupy_standin.module.asarray([7])].shape == (1, 5)  # the stand-in wraps, as CuPy
    with pytest.raises(IndexError, match="out of bounds"):
        x[tg.tensor([7], device=cuda)]
    with pytest.raises(IndexError, match="out of bounds"):  # a write, too
        x[tg.tensor([7], device=cuda)] = 1.0
    with pytest.raises(RuntimeError, match="out of bounds"):  # torch's class for gather
        x.gather(1, tg.tensor([[7]] * 4, device=cuda))


# --------------------------------------------------------------------------- every op

# Every row of the op tables, forward and backward on the stand-in's "cuda". The rows that
# wait, once per call, and why; every other row never waits.
WAITS_ONCE = {
    # CuPy wraps an index that is out of range where NumPy and torch raise: checked, once
    "an index checked for bounds": (
        "gather",
        "scatter",
        "index_select",
        "embedding",
        "x[[0, 2]]",
        "x[[0, 0, 2, 0]] (repeats)",
        "x[tensor([2, -1])]",
        "x[2-d index tensor]",
        "x[[0, 1], [1, 1]]",
        "x[:, [0, 0, 1]]",
        "x[1, [0, 2]]",
        "x[..., [1, 1]]",
    ),
    # the result has as many elements as the mask has True values: CuPy counts them and
    # reads the count back (once: the backward reuses the positions found)
    "a boolean mask": ("x[x > 0] (mask)", "x[row mask]", "x[[True, False, True]]", "x[mask, 1:]"),
    # the result's shape depends on the value of a tensor argument (as in torch)
    "a size given as a tensor": ("narrow(0, tensor(1), 1)",),
    # as many rows as there are non-zero elements: CuPy counts them and reads the count back
    "nonzero": ("nonzero(",),
    # a 0-d integer tensor as an index is read as a number, then selects as an int does
    "a 0-d tensor as an index": (
        "x[tensor(1)] (0-d int)",
        "x[t.sum()] (0-d int)",
        "x[1, tensor(-1)]",
    ),
    # the backward divides the result by each element, unless the input holds a zero; the
    # zero-safe formula, products of the other elements, needs n² memory per row
    "prod's backward asks whether there is a zero": ("prod(",),
}
TABLES = {
    "pointwise": test_pointwise.UNARY_CASES + test_pointwise.BINARY_CASES,
    "reductions": test_reduce.DIFFERENTIABLE + test_reduce.ARG_CASES,
    "matmul": test_linalg.MATMUL_CASES + test_linalg.NAMED_CASES,
    "views and joins": test_views.VIEW_CASES + test_views.JOIN_CASES,
    "shape and index": test_shape_index_ops.CASES + test_shape_index_ops.SOFTMAX_CASES,
    "nn.functional": test_functional.CASES,
}


@pytest.fixture
def cuda_by_default(cuda):
    """The stand-in's "cuda" as the default device, for tables that make their own tensors."""
    tg.set_default_device(cuda)
    yield cuda
    tg.set_default_device(None)


def forward_and_backward(fn, args):
    """``fn(tg, *inputs)``, and backward through each output that requires grad."""
    tg.manual_seed(0)
    out = fn(tg, *make_inputs(tg, args, seed=0))
    outputs = [out] if isinstance(out, tg.Tensor) else [o for o in out if isinstance(o, tg.Tensor)]
    grads = [o.sum() for o in outputs if o.requires_grad]
    if grads:
        sum(grads).backward()


def expected_waits(case_id: str) -> int:
    row, shapes = case_id.rsplit("-", 1)  # the table row's name, and the inputs' shapes
    if row.startswith("prod(") and shapes == "()":
        return 0  # a 0-d input is its own product: the backward hands grad on, asking nothing
    if row.startswith(("gather", "scatter")) and row.endswith("empty index"):
        return 0  # an index with no element is not checked at all, as torch's: nothing to read
    return int(any(row.startswith(names) for names in WAITS_ONCE.values()))


@pytest.mark.filterwarnings("ignore:Using a target size:UserWarning")  # (mse_loss's rows)
@pytest.mark.parametrize("cases", TABLES.values(), ids=TABLES.keys())
def test_each_op_of_the_tables_waits_only_where_listed(cuda_by_default, cases):
    wrong = []
    for case in cases:
        fn, args = case.values[:2]
        counted = syncs(functools.partial(forward_and_backward, fn, args))
        if sum(counted.values()) != expected_waits(case.id):
            wrong.append(f"{case.id}: {counted}")
    assert not wrong, "\n".join(wrong)


# Ops the tables hold no row for: random ones, writes, integer results.
OTHER_OPS = {
    "dropout": (lambda x: F.dropout(x, 0.3), 0),
    "masked_fill_ through a view": (lambda x: (x * 1)[1:].masked_fill_(x[1:] > 0, 0.0), 0),
    "x[int_tensor] = value": (lambda x: (x * 1).index_put_((tg.tensor([0, 2]),), x[0]), 1),
    "x[mask] = value": (lambda x: (x * 1).index_put_((x > 0,), tg.tensor(0.0)), 1),
    "index_put accumulate": (lambda x: x.index_put((tg.tensor([1, 1]),), x[0], True), 1),
    "one_hot (reads the largest class)": (lambda x: F.one_hot(tg.tensor([0, 3]), 4) * x[0, :4], 1),
    "max_pool2d 2x2 tiles": (lambda x: F.max_pool2d(x.reshape(1, 1, 4, 5), 2), 0),
}


@pytest.mark.parametrize("op, waits", OTHER_OPS.values(), ids=OTHER_OPS.keys())
def test_other_ops_wait_only_where_listed(cuda_by_default, op, waits):
    x = tg.randn(4, 5, requires_grad=True)
    counted = syncs(lambda: op(x).sum().backward())
    assert sum(counted.values()) == waits, counted

"""The CPU waits for the GPU only where a check needs a value: at most one device→host
synchronisation per op call (an index-bounds check: CuPy would silently wrap a bad index
where NumPy raises), and none on the hot path of elementwise ops or the optimizers.

Counted by the CuPy stand-in (tests/cupy_standin.py), which notes each ``bool()``, ``int()``,
``float()``, ``item()`` or ``get()`` of device data at the file:line that asked for it.
"""

import pathlib

import pytest

import teachgrad as tg
from tests import cupy_standin

F = tg.nn.functional


@pytest.fixture
def cuda(monkeypatch):
    """The stand-in behind teachgrad's "cuda" device, for this test only."""
    monkeypatch.setattr(tg._backend, "_cupy", cupy_standin.module)
    monkeypatch.setattr(tg._backend.generators, "cuda", {})
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


@pytest.mark.parametrize(
    "loss",
    [F.cross_entropy, lambda x, t: F.nll_loss(F.log_softmax(x, 1), t)],
    ids=["cross_entropy", "nll_loss"],
)
def test_a_classification_loss_waits_once_for_its_target_check(cuda, loss):
    x = tg.randn(4, 5, device=cuda, requires_grad=True)
    t = tg.tensor([0, 1, 4, 1], device=cuda)
    counted = syncs(lambda: loss(x, t).backward())
    assert sum(counted.values()) == 1, counted


@pytest.mark.parametrize(
    "index",
    [
        lambda x, i: x[i],
        lambda x, i: x.gather(1, i.unsqueeze(1)),
        lambda x, i: x.index_select(0, i),
    ],
    ids=["getitem", "gather", "index_select"],
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
    target = tg.randn(4, 3, device=cuda)

    def step():
        optimizer.zero_grad()
        F.mse_loss(model(x), target).backward()
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
    with pytest.raises(RuntimeError, match="out of bounds"):  # torch's class for gather
        x.gather(1, tg.tensor([[7]] * 4, device=cuda))

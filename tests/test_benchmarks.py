"""The engine benchmark's bookkeeping (``benchmarks/bench.py``), on made-up timings: how it
splits (a) into its forward and backward, and how it checks issue 19's targets. (The
timings themselves live in the README, not in tests.)"""

import os
import sys
from pathlib import Path

import pytest

_environment = dict(os.environ)  # (bench sets the BLAS thread counts as it is imported)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench  # noqa: E402 - the benchmarks are scripts, not a package

os.environ.clear()
os.environ.update(_environment)


def _timed(**medians):
    return {impl: {"value": s, "median_s": s, "min_s": s * 0.9} for impl, s in medians.items()}


def test_the_backward_half_of_a_is_what_a_takes_beyond_its_forward():
    total = _timed(teachgrad=8e-3, autograd=6e-3)
    forward = _timed(teachgrad=4e-3, autograd=4.5e-3)
    split = bench.perop_split(total, forward)
    assert split == {
        "teachgrad": {"value": pytest.approx(4e-3)},
        "autograd": {"value": pytest.approx(1.5e-3)},
    }


def test_each_target_is_checked_unrounded_and_faster_than_means_below():
    results = {
        "perop": _timed(teachgrad=2.0, torch=1.0, autograd=2.0, mygrad=2.5),
        "memory": {"teachgrad": {"value": 203.1}, "torch": {"value": 202.3}},
        "scale_growth": {"teachgrad": {"value": 1.2}},
    }
    targets = {t["name"]: t for t in bench.issue_targets(results)}
    lines = "\n".join(bench.target_lines(bench.issue_targets(results)))
    assert targets["per-op overhead, teachgrad / torch"]["ratio"] == 2.0
    assert "teachgrad / torch: 2.00x (target ≤ 1.5x) — MISSED" in lines
    # at the target: "≤" is met, "faster than" is not
    assert "teachgrad / autograd: 1.00x (target < 1.0x) — MISSED" in lines
    assert "teachgrad / MyGrad: 0.80x (target < 1.0x) — met" in lines
    assert "at 1,000: 1.20x (target ≤ 1.2x) — met" in lines
    # 1.004 shows as 1.00x but is over 1.0: missed
    assert "peak memory, teachgrad / torch: 1.00x (target ≤ 1.0x) — MISSED" in lines
    assert targets["per-op overhead, teachgrad / torch"]["ratio_min"] == pytest.approx(2.0)


def test_targets_of_benchmarks_or_peers_that_did_not_run_are_left_out_or_n_a():
    results = {"mlp": _timed(teachgrad=1.0, numpy=1.0, torch=1.0)}  # no autograd, no MyGrad
    targets = {t["name"]: t["ratio"] for t in bench.issue_targets(results)}
    assert set(targets) == {
        "MLP step, teachgrad / NumPy",
        "MLP step, teachgrad / autograd",
        "MLP step, teachgrad / MyGrad",
    }
    assert targets["MLP step, teachgrad / autograd"] is None
    assert "— n/a" in "\n".join(bench.target_lines(bench.issue_targets(results)))


def test_the_forward_alone_records_the_chain_that_a_differentiates():
    """(a') runs (a)'s forward: the same sum as NumPy's chain, with a graph to differentiate."""
    saved, y = bench.perop_forward_setup("numpy", n_ops=8)()
    loss = bench.perop_forward_setup("teachgrad", n_ops=8)()
    assert len(saved) == 4 and loss.grad_fn is not None and loss.shape == ()
    assert loss.item() == pytest.approx(float(y.sum()), rel=1e-6)


def test_c_reports_the_median_of_its_interleaved_runs(monkeypatch):
    """(c) runs each implementation's child several times, in turn, and keeps the median
    growth with every run's figure; the report shows their spread."""
    growths = {"teachgrad": iter([202.4, 202.1, 202.3]), "torch": iter([202.2, 202.3, 202.25])}
    order = []

    def child(impl, malloc_env):
        order.append(impl)
        return {"peak_growth_mib": next(growths[impl]), "maxrss_growth_mib": 0.0}

    monkeypatch.setattr(bench, "measure_memory", child)
    mem = bench.memory_medians(["teachgrad", "torch"], {}, 3)
    assert order == ["teachgrad", "torch"] * 3
    assert mem["teachgrad"]["value"] == 202.3 and mem["torch"]["value"] == 202.25
    assert mem["teachgrad"]["runs_mib"] == [202.4, 202.1, 202.3]
    assert bench.memory_spread_line(mem) == (
        "(c) over 3 runs, MiB (min / median / max): teachgrad 202.10 / 202.30 / 202.40; "
        "torch 202.20 / 202.25 / 202.30."
    )

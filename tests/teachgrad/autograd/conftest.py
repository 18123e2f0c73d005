"""The ``lib`` fixture of the ports of torch's autograd tests (test_torch_port_*.py)."""

import pytest

import teachgrad as tg


@pytest.fixture(params=["teachgrad", "torch"])
def lib(request):
    """The library under test: teachgrad, or torch, the oracle (skips, or fails in CI,
    without it). A ported test that fails with torch is a wrong port, not a teachgrad bug."""
    if request.param == "torch":
        return request.getfixturevalue("torch")
    return tg

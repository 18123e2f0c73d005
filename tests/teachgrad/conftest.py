"""Fixtures of the teachgrad tests: ``torch``, the oracle, skipped where PyTorch is not installed."""

import pytest


@pytest.fixture(scope="session")
def torch():
    """PyTorch (CPU), the reference teachgrad is compared with; skips the test without it."""
    return pytest.importorskip("torch")

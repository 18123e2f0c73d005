"""Fixtures of the op tests: ``torch``, the oracle, skipped where PyTorch is not installed."""

import pytest


@pytest.fixture(scope="session")
def torch():
    """PyTorch (CPU), the reference the ops are compared with; skips the test without it."""
    return pytest.importorskip("torch")

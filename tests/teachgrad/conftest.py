"""Fixtures of the teachgrad tests: ``torch``, the oracle (tests/needs.py)."""

import pytest

from tests import needs


@pytest.fixture(scope="session")
def torch():
    """PyTorch (CPU), the reference teachgrad is compared with; skips the test without it
    (fails it in CI)."""
    return needs.oracle()

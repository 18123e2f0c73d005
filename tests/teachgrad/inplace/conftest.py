"""Every in-place test runs its program in torch too: each needs the oracle."""

import pytest

from tests import needs


@pytest.fixture(autouse=True)
def _oracle():
    needs.oracle()

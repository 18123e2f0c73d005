"""Fixtures of the teachgrad tests: ``torch``, the oracle (tests/needs.py), and a check that
no test leaves a failed GPU check behind."""

import pytest

import teachgrad as tg
from tests import needs


@pytest.fixture(autouse=True)
def _device_errors_surface_in_their_own_test():
    """A check an op left on the GPU (``_backend.device_assert``) that failed is raised at the
    next wait for the GPU: at the latest when the test ends, so never in a later test."""
    yield
    tg._backend.raise_pending_device_errors()


@pytest.fixture(scope="session")
def torch():
    """PyTorch (CPU), the reference teachgrad is compared with; skips the test without it
    (fails it in CI)."""
    return needs.oracle()


@pytest.fixture(params=["teachgrad", "torch"])
def lib(request):
    """The library a port of torch's autograd tests runs on (autograd/test_torch_port_*.py):
    teachgrad, then torch, the oracle (a ported test that fails with torch is a wrong port,
    not a teachgrad bug)."""
    if request.param == "torch":
        return request.getfixturevalue("torch")
    return tg

"""Suite-wide test settings: the ``cuda`` and ``no_standin`` markers, the ``--device-standin``
run, hypothesis profiles, and the closing line that counts tests skipped for a missing
requirement (tests/needs.py).

``--device-standin`` runs the tests with ``"cuda"`` as teachgrad's default device, on the
strict CuPy stand-in (tests/cupy_standin.py) instead of CuPy: the CUDA path, exercised on
a machine without a GPU. ``--device-cuda`` runs them the same way on real CuPy and a GPU.
Tests that are CPU-specific by nature (printed text compared with torch's CPU tensors,
host-memory sharing) or need real CuPy carry ``@pytest.mark.no_standin("why")`` and are
skipped in those runs, with the reason.

Nothing here knows about teachgrad's internals; package-specific fixtures live in
the conftest.py of tests/teachgrad, tests/viz and tests/course.
"""

import functools
import gc
import os

import pytest

from tests import needs


def pytest_addoption(parser):
    parser.addoption(
        "--device-standin",
        action="store_true",
        help="run with 'cuda' as the default device, on the CuPy stand-in (tests/cupy_standin.py)",
    )
    parser.addoption(
        "--device-cuda",
        action="store_true",
        help="run with 'cuda' as the default device, on real CuPy and a GPU (make test-gpu)",
    )


def pytest_configure(config):
    if on_standin(config):
        import teachgrad
        from tests import cupy_standin

        if config.getoption("--device-standin"):
            teachgrad._backend._cupy = cupy_standin.module  # the seam CuPy is loaded through
        teachgrad.set_default_device("cuda")


def on_standin(config) -> bool:
    """True when "cuda" is the default device: on the stand-in, or on real CuPy."""
    return config.getoption("--device-standin", default=False) or config.getoption(
        "--device-cuda", default=False
    )


@functools.cache
def cuda_unavailable_reason() -> str | None:
    """Why CUDA tests cannot run here, or None when CuPy sees a GPU."""
    try:
        import cupy
    except ImportError:
        return "CuPy is not installed (pip install -e '.[gpu]')"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # no driver, no device, broken CUDA install ...
        return f"CuPy cannot reach a CUDA device: {exc}"
    return None if count > 0 else "no CUDA device found"


def pytest_collection_modifyitems(config, items):
    """Run the browser test first; skip tests marked ``@pytest.mark.cuda`` when there is no
    usable GPU (the stand-in is one), and, on the stand-in, tests marked ``no_standin``."""
    # The browser test drives JupyterLab for minutes (160 s of the 620 s the suite takes on
    # two workers). Collected last, it started last and ran alone while the other worker
    # sat idle; first, the other worker runs the rest meanwhile. (pytest-xdist hands out
    # tests in this order; the sort is stable, so all else keeps its order.)
    items.sort(key=lambda item: item.get_closest_marker("browser") is None)
    if on_standin(config):
        for item in items:
            marker = item.get_closest_marker("no_standin")
            if marker is not None:
                item.add_marker(
                    pytest.mark.skip(
                        reason=f"not with cuda as the default device: {marker.args[0]}"
                    )
                )
        return
    cuda_items = [item for item in items if item.get_closest_marker("cuda") is not None]
    if not cuda_items:
        return
    reason = cuda_unavailable_reason()
    if reason is not None:
        for item in cuda_items:
            item.add_marker(pytest.mark.skip(reason=f"cuda test: {reason}"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last test of each module (its fixtures torn down): collect, then freeze
    what is left, so a later test's ``gc.collect()`` walks only what was made since.

    A worker's heap grows with the run (collected items, torch, the caches of earlier
    modules: millions of objects), and a full collection visits all of it: in a whole run,
    the course tests that count what a block holds with ``gc.collect()`` took 6 s each
    instead of 0.5 s. Freezing keeps the objects alive as they were anyway; what a module
    left as cyclic garbage is collected first."""
    yield
    if nextitem is None or nextitem.path != item.path:
        gc.collect()
        gc.freeze()


try:
    from hypothesis import HealthCheck, settings
except ImportError:  # hypothesis is a test extra; property tests import it themselves
    pass
else:
    # CI machines are slower and noisier: no per-example deadline, and print the
    # blob needed to reproduce a failure. CI runs a fixed set of examples (derandomize),
    # so a submission's result does not depend on luck; local runs explore new ones.
    # Choose with HYPOTHESIS_PROFILE=dev|ci.
    settings.register_profile("dev", deadline=None)
    settings.register_profile(
        "ci",
        deadline=None,
        print_blob=True,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.load_profile(
        os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev")
    )


def _skip_reasons(config) -> list[str]:
    """The reasons of every skipped test, collected on the main process (pytest-xdist
    sends each worker's reports there)."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    reasons = []
    for report in reporter.stats.get("skipped", []) if reporter else []:
        longrepr = report.longrepr
        if isinstance(longrepr, tuple) and len(longrepr) == 3:
            reasons.append(longrepr[2].removeprefix("Skipped: "))
    return reasons


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    """In CI a test skipped for a missing requirement fails the run (``needs.missing``
    already fails it there; this also catches a skip that bypassed it)."""
    if needs.in_ci() and needs.summary_lines(_skip_reasons(session.config)):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """End the run with one loud line per missing requirement, and how to install it."""
    for line in needs.summary_lines(_skip_reasons(config)):
        terminalreporter.write_sep("!", line, red=True, bold=True)

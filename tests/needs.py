"""What the tests need beyond the project itself, and what happens when it is missing.

``make test`` installs three things only the tests use: PyTorch, the *oracle* whose values,
gradients and errors teachgrad is compared with, Chromium, which the browser test
drives, and CuPy's CUDA 12 wheel, whose names and signatures the CuPy surface check reads
(it imports without a GPU). When one could not be installed, each test that needs it skips
with a reason that starts with its tag (``[oracle]``, ``[browser]``, ``[cupy]``), and ``tests/conftest.py`` ends the
run with one loud line per tag counting those skips and naming the command that
installs it. With ``CI`` set such a skip is a failure: CI must run everything.

    torch = needs.oracle()          # inside a test or fixture: torch, or skip
    needs.missing("browser", "...") # skip (or fail in CI) with the tag and the fix
"""

from __future__ import annotations

import os

import pytest

# tag -> (what it is, the command that installs it)
NEEDS = {
    "oracle": ("the PyTorch oracle", "make oracle"),
    "browser": ("Chromium for the browser test", "sudo make browser"),
    "cupy": ("CuPy (for the CuPy surface check)", "make cupy"),
}


def in_ci() -> bool:
    """True where a skipped requirement must fail the run (CI sets ``CI``)."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def tag(need: str) -> str:
    return f"[{need}]"


def missing(need: str, reason: str) -> None:
    """Skip the calling test because ``need`` is missing (``reason`` says what exactly),
    or fail it in CI. The skip reason reads ``[oracle] ...; install it with: make oracle``."""
    what, command = NEEDS[need]
    message = f"{tag(need)} {reason}; install it with: {command}"
    if in_ci():
        pytest.fail(f"CI must run every test, but {what} is missing: {message}", pytrace=False)
    pytest.skip(message)


def oracle():
    """``torch``, imported; skips the calling test (fails it in CI) where it is not installed."""
    try:
        import torch
    except ImportError as error:
        missing("oracle", f"PyTorch is not installed ({error})")
    return torch


def cupy():
    """``cupy``, imported (no GPU needed); skips the calling test (fails it in CI) without it."""
    try:
        import cupy
    except ImportError as error:
        missing("cupy", f"CuPy is not installed ({error})")
    return cupy


def summary_lines(skip_reasons: list[str]) -> list[str]:
    """One line per requirement that made tests skip, for the end of the run.

    >>> summary_lines(["[oracle] no torch; install it with: make oracle"] * 2 + ["other"])
    ['2 tests skipped because the PyTorch oracle is missing: install it with `make oracle`']
    """
    lines = []
    for need, (what, command) in NEEDS.items():
        count = sum(reason.startswith(tag(need)) for reason in skip_reasons)
        if count:
            lines.append(
                f"{count} tests skipped because {what} is missing: install it with `{command}`"
            )
    return lines

"""The style check is a test, so `make test` (and CI, which runs exactly that) runs it.

ruff is pinned in the ``test`` extra (each release formats code a little differently);
``make lint`` runs the same two commands by hand.
"""

import sys
from pathlib import Path

import pytest

from tests.run import run

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("command", [["check"], ["format", "--check"]], ids=" ".join)
def test_ruff_finds_nothing(command):
    run([sys.executable, "-m", "ruff", *command, "."], cwd=REPO)

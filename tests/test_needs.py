"""What a run says when `make test` could not install a requirement (tests/needs.py):
outside CI the tests that need it skip and one loud closing line counts them; in CI
they fail, so CI cannot pass without running everything."""

import os
import sys
from pathlib import Path

from tests.run import run

REPO = Path(__file__).resolve().parents[1]

# A small suite whose torch cannot be imported, with the suite's own hooks.
SUITE = {
    "conftest.py": "from tests.conftest import *  # noqa: F403  (the hooks under test)\n",
    "test_small.py": """
import sys

sys.modules["torch"] = None  # as if PyTorch were not installed

from tests import needs


def test_compares_with_torch():
    needs.oracle()


def test_compares_with_torch_too():
    needs.oracle()


def test_needs_nothing():
    assert True
""",
}


def run_suite(tmp_path, ci: bool):
    for name, text in SUITE.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = str(REPO)
    if ci:
        env["CI"] = "true"
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist"]
    return run([*command, "-q", str(tmp_path)], check=False, cwd=tmp_path, env=env)


def test_outside_ci_the_run_passes_and_counts_the_skipped_oracle_tests(tmp_path):
    result = run_suite(tmp_path, ci=False)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed, 2 skipped" in result.stdout
    line = "2 tests skipped because the PyTorch oracle is missing: install it with `make oracle`"
    assert line in result.stdout
    assert result.stdout.rstrip().splitlines()[-2].strip("! ") == line


def test_in_ci_a_missing_oracle_fails_the_run(tmp_path):
    result = run_suite(tmp_path, ci=True)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 failed, 1 passed" in result.stdout
    assert "CI must run every test, but the PyTorch oracle is missing" in result.stdout

"""Running a program from a test: when it fails, the assertion says why.

``subprocess.run(..., check=True, capture_output=True)`` fails with only the exit code,
and the program's own explanation (pip's, bash's, node's) is lost. ``run`` keeps it:

    result = run(["bash", "-n", "setup.sh"])      # AssertionError with stderr on failure
    result = run(command, check=False)           # just the CompletedProcess
"""

from __future__ import annotations

import subprocess

TAIL = 60  # lines of stdout and stderr shown in a failure


def _tail(text: str) -> str:
    lines = text.rstrip().splitlines()
    shown = "\n".join(f"    {line}" for line in lines[-TAIL:])
    return f"    [... {len(lines) - TAIL} earlier lines]\n{shown}" if len(lines) > TAIL else shown


def explain(result: subprocess.CompletedProcess) -> str:
    """The command, its exit code and the end of what it printed, for an assertion message.

    >>> explain(subprocess.CompletedProcess(["false"], 1, "", "no luck\\n"))
    "['false'] exited with 1\\n  stderr:\\n    no luck"
    """
    parts = [f"{[str(arg) for arg in result.args]} exited with {result.returncode}"]
    for name in ("stdout", "stderr"):
        text = getattr(result, name)
        if text and text.strip():
            parts.append(f"  {name}:\n{_tail(text)}")
    return "\n".join(parts)


def run(command, *, check: bool = True, **kwargs) -> subprocess.CompletedProcess:
    """``subprocess.run`` with text output captured; with ``check``, a non-zero exit is an
    AssertionError that shows the command's stdout and stderr."""
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if check:
        assert result.returncode == 0, explain(result)
    return result

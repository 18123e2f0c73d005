"""The README's Python blocks run when pasted in order into one fresh interpreter.

A block whose first line is ``# needs a CUDA GPU`` runs only where CuPy sees a GPU.
"""

import re
import sys
from pathlib import Path

from tests.conftest import cuda_unavailable_reason
from tests.run import run

README = Path(__file__).resolve().parents[1] / "README.md"
GPU_MARK = "# needs a CUDA GPU"

# Each block runs in the same namespace, as if typed into one interpreter; a failure
# names the block (its first line in the README) before the traceback.
RUNNER = """
import sys, traceback
namespace = {"__name__": "__main__"}
for line, code in BLOCKS:
    try:
        exec(compile(code, f"README.md, the block at line {line}", "exec"), namespace)
    except BaseException:
        traceback.print_exc()
        sys.exit(f"the README's block at line {line} failed")
"""


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line of the block's first code line, code)`` of each ```python block.

    >>> python_blocks("intro\\n```python\\nx = 1\\n```\\n```bash\\nls\\n```\\n")
    [(3, 'x = 1\\n')]
    """
    blocks = []
    for match in re.finditer(r"^```python\n(.*?)^```", text, flags=re.M | re.S):
        blocks.append((text.count("\n", 0, match.start(1)) + 1, match.group(1)))
    return blocks


def test_the_readme_has_python_blocks():
    assert len(python_blocks(README.read_text(encoding="utf-8"))) >= 5


def test_the_readme_blocks_run_in_order_in_one_interpreter(tmp_path):
    blocks = python_blocks(README.read_text(encoding="utf-8"))
    if cuda_unavailable_reason() is not None:
        blocks = [(line, code) for line, code in blocks if not code.startswith(GPU_MARK)]
    script = tmp_path / "readme.py"
    script.write_text(f"BLOCKS = {blocks!r}\n{RUNNER}", encoding="utf-8")
    # in a folder of its own, so nothing the blocks write lands in the repository
    run([sys.executable, str(script)], cwd=tmp_path)

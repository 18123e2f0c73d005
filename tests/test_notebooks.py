"""Every tutorial notebook in notebooks/ runs top to bottom without an error.

One test per notebook. The notebook is executed in a fresh ``python3`` kernel with
notebooks/ as the working directory, just as a student would run it in JupyterLab
("Restart Kernel and Run All Cells"). On failure the report names the failing cell,
shows its source and the traceback.
"""

import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300
ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")  # IPython colours tracebacks; logs want plain text


def failing_cell_index(nb) -> int | None:
    """Index of the first code cell whose outputs contain an error."""
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code" and any(
            output.get("output_type") == "error" for output in cell.get("outputs", [])
        ):
            return index
    return None


def test_there_are_notebooks():
    """The tutorial path exists (a missing folder would silently test nothing)."""
    assert NOTEBOOKS, f"no notebooks found in {NOTEBOOK_DIR.name}/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[path.name for path in NOTEBOOKS])
def test_notebook_runs_top_to_bottom(path: Path):
    """Execute all cells in order, in a fresh kernel, from notebooks/."""
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    try:
        client.execute()
    except CellExecutionError as exc:
        error = ANSI_COLOUR.sub("", str(exc))
    else:
        return
    index = failing_cell_index(nb)
    where = f"cell {index + 1} of {len(nb.cells)}" if index is not None else "a cell"
    pytest.fail(f"{path.name}: {where} failed (counting markdown cells)\n{error}", pytrace=False)

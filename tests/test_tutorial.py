"""The tutorial, docs/tutorial.ipynb: stored without outputs, linking only inside the repository, and
run end to end in a real Jupyter kernel (ipykernel, driven by nbclient), as a reader runs it.

The notebook checks its own formulas as it goes (the divergence three ways, the tilted mean, the
circle's two-piece neighbourhood, the kind the marks teach), so a change that makes its prose wrong
fails here as an error in the cell that says it.
"""
from __future__ import annotations

import copy
import re
from pathlib import Path

import pytest

from helpers import needs_builtin

ROOT = Path(__file__).resolve().parents[1]
TUTORIAL = ROOT / "docs" / "tutorial.ipynb"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.fixture(scope="module")
def notebook():
    nbformat = pytest.importorskip("nbformat")
    return nbformat.read(TUTORIAL, as_version=4)


def test_the_tutorial_is_stored_without_outputs(notebook):
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and all(cell.outputs == [] and cell.execution_count is None for cell in code)


def test_the_tutorial_links_only_to_files_of_the_repository(notebook):
    text = "\n".join(cell.source for cell in notebook.cells)
    assert not re.search(r"https?://|www\.", text)
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    assert targets and all((TUTORIAL.parent / target).is_file() for target in targets), targets


@needs_builtin
def test_the_tutorial_runs_end_to_end_and_shows_the_widgets(notebook, tmp_path, monkeypatch):
    """Every cell runs without error in a fresh kernel of this Python (its own empty anchordiv cache;
    no user's kernel spec in the way), and the toy world's and the player's cells' outputs are the
    widgets' views, the toy world's traits read and set."""
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("ANCHORDIV_CACHE", str(tmp_path / "cache"))
    # Kernel specs are looked up in the user's data folder first: an empty one leaves this Python's.
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter"))
    run = copy.deepcopy(notebook)
    nbclient.NotebookClient(run, timeout=300, kernel_name="python3",
                            resources={"metadata": {"path": str(TUTORIAL.parent)}}).execute()
    outputs = [output for cell in run.cells if cell.cell_type == "code" for output in cell.outputs]
    assert not [output for output in outputs if output.output_type == "error"]
    views = [output for output in outputs if WIDGET_VIEW in output.get("data", {})]
    assert [next(name for name in ("ToyWorld", "PPlayer") if name in view["data"]["text/plain"]) for view in views] == [
        "ToyWorld", "PPlayer"]
    printed = "".join(output.get("text", "") for output in outputs)
    assert "kind: object, decided: True" in printed
    assert "query: 60.0 A: [80.0, 90.0, 100.0] s: 5.0" in printed

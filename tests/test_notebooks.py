"""The lessons in examples/ run clean and show their figures."""
import os
import pathlib

import numba
import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "examples").glob("*.ipynb"))


def test_all_ten_lessons_are_there():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08", "09", "10"]


@pytest.mark.slow
# The lessons are the JIT's work (lesson 08 sums dot products of 65536 terms through every tensor-core model);
# with the JIT off, the unit tests run the kernels' Python, and CI's first run executes the notebooks.
@pytest.mark.skipif(numba.config.DISABLE_JIT, reason="lessons run with the JIT (CI's first run)")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_shows_figures(path, monkeypatch):
    # The kernel runs in examples/: put this checkout first on its path, so it imports the minifp under test.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    book = nbformat.read(path, as_version=4)
    nbclient.NotebookClient(book, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
                            ).execute()
    images = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if "image/png" in o.get("data", {})]
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors and images

"""The produced notebook outside bcc: papermill with other data, nbconvert to HTML with images."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest


@pytest.fixture(scope="module")
def penguins_copy(penguins_run: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the session's completed penguins run (``tests/conftest.py``): papermill and
    nbconvert write beside its notebook."""
    copy = tmp_path_factory.mktemp("repro") / "run"
    shutil.copytree(penguins_run, copy)
    return copy


def test_verification_is_recorded_in_the_notebook(penguins_copy: Path):
    nb = nbformat.read(penguins_copy / "notebook.ipynb", as_version=4)
    assert nb.metadata["bcc"]["verification"]["status"] == "passed"


def test_papermill_runs_the_notebook_on_a_resampled_copy(penguins_copy: Path, tmp_path: Path):
    import pandas as pd

    frame = pd.read_csv(penguins_copy / "assets" / "penguins.csv")
    resampled = frame.sample(n=len(frame), replace=True, random_state=7)
    other = penguins_copy / "outputs" / "resampled.csv"
    resampled.to_csv(other, index=False)
    out = tmp_path / "out.ipynb"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "papermill",
            str(penguins_copy / "notebook.ipynb"),
            str(out),
            "-p",
            "user_submit_files",
            json.dumps(["outputs/resampled.csv"]),
            "--cwd",
            str(penguins_copy),
            "-k",
            "python3",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    executed = nbformat.read(out, as_version=4)
    injected = [c for c in executed.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert injected and "resampled.csv" in injected[0].source
    texts = "".join(
        o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs
    )
    assert "outputs/resampled.csv" in texts  # the analysis really read the other file


def test_the_notebook_reads_like_an_analyst_wrote_it(penguins_copy: Path):
    from benchmarks.notebook_readability import measure

    r = measure("penguins", penguins_copy / "notebook.ipynb")
    assert r.median <= 25, r
    assert r.to_data is not None and r.to_data <= 30, r
    assert r.contract == 0, r
    assert r.helpers >= 1 and r.helpers_collapsed == r.helpers, r
    nb = nbformat.read(penguins_copy / "notebook.ipynb", as_version=4)
    title = nb.cells[0].source
    assert title.startswith("# ") and "Which species is this penguin?" in title


def test_nbconvert_html_embeds_the_plots_and_hides_the_helper_cells_when_asked(
    penguins_copy: Path, tmp_path: Path
):
    def export(*flags: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", *flags,
             str(penguins_copy / "notebook.ipynb"), "--output-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        return (tmp_path / "notebook.html").read_text(encoding="utf-8")

    definition = 'class="nf">_bcc_clean_headers<'  # the highlighted name after "def"
    html = export()
    assert definition in html
    assert html.count("data:image/png;base64,") >= 3  # the plots, embedded
    first = html.split("data:image/png;base64,", 1)[1].split('"', 1)[0]
    assert base64.b64decode(first)[:8] == b"\x89PNG\r\n\x1a\n"
    hidden = export("--TagRemovePreprocessor.remove_input_tags", "bcc-helpers")
    assert definition not in hidden
    assert "raw_dataset" in hidden and hidden.count("data:image/png;base64,") >= 3

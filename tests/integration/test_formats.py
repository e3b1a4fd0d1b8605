"""Common formats load (issue: "common formats must load"): one table built here, saved as
CSV, TSV, gzipped CSV, JSON, JSON Lines, Excel, Parquet and Feather, each run through the real
CLI and the offline analyst, ends with the same data profile and final metrics as the CSV.

The CSV reference run is made once per session (shared by the xdist workers: ``made_once``).
``.xls`` is not among the files: pandas cannot write it (reading it needs xlrd).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbclient import NotebookClient

from notebook_bcc.agents.offline.recipes import RECIPES, RecipeContext
from tests.conftest import WHOLE_OUTPUT, made_once, output_text
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(300)

PROBLEM = """---
title: Wine grade
target: grade
task: classification
{extra}---

Predict the `grade` of a wine from its measurements.
"""


def wine_table() -> pd.DataFrame:
    """150 wines: three measurements and a grade that depends on them, with noise."""
    rng = np.random.default_rng(11)
    n = 150
    alcohol = rng.normal(11.5, 1.2, n).round(2)
    acidity = rng.normal(3.2, 0.3, n).round(3)
    sugar = rng.integers(1, 30, n)
    score = alcohol - 4 * (acidity - 3.2) + rng.normal(0, 1.0, n)
    grade = np.where(score > 12.2, "high", np.where(score > 10.8, "mid", "low"))
    return pd.DataFrame({"alcohol": alcohol, "acidity": acidity, "sugar": sugar, "grade": grade})


def _excel(frame: pd.DataFrame, path: Path, first: pd.DataFrame) -> None:
    with pd.ExcelWriter(path, engine="openpyxl") as writer:
        first.to_excel(writer, sheet_name="notes", index=False)
        frame.to_excel(writer, sheet_name="data", index=False)


#: file name -> how the table is written to it; the problem's extra front matter
WRITERS: dict[str, tuple[Callable[[pd.DataFrame, Path], None], str]] = {
    "wine.tsv": (lambda f, p: f.to_csv(p, sep="\t", index=False), ""),
    "wine.csv.gz": (lambda f, p: f.to_csv(p, index=False), ""),
    "wine.json": (lambda f, p: f.to_json(p, orient="records"), ""),
    "wine.jsonl": (lambda f, p: f.to_json(p, orient="records", lines=True), ""),
    # an empty first sheet: the first sheet with data rows is read
    "wine.xlsx": (lambda f, p: _excel(f, p, pd.DataFrame()), ""),
    # a first sheet with other data: the sheet named in the front matter is read
    "named.xlsx": (
        lambda f, p: _excel(f, p, pd.DataFrame({"note": ["made up", "by hand"]})),
        "sheet: data\n",
    ),
    "wine.parquet": (lambda f, p: f.to_parquet(p, index=False), ""),
    "wine.feather": (lambda f, p: f.to_feather(p), ""),
}


def run(folder: Path, name: str, extra: str = "") -> dict:
    """Write the table as ``name``, run ``bcc`` on it, return the run's summary.json."""
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / name
    if name == "wine.csv":
        wine_table().to_csv(data, index=False)
    else:
        WRITERS[name][0](wine_table(), data)
    problem = folder / "problem.md"
    problem.write_text(PROBLEM.format(extra=extra))
    out = folder / "run"
    proc = bcc_in_process(
        "run", str(problem), str(data), "--out", str(out), "--no-verify", "--quiet"
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((out / "summary.json").read_text())


@pytest.fixture(scope="session")
def csv_reference(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> dict:
    """The CSV run's summary, made once per session (the workers share it: ``made_once``)."""
    made = made_once(tmp_path_factory, worker_id, "formats-csv", lambda f: run(f, "wine.csv"))
    return json.loads((made / "run" / "summary.json").read_text())


def _loading_line(summary_dir: Path) -> str:
    cells = json.loads((summary_dir / "notebook.ipynb").read_text())["cells"]
    text = "".join(output_text(c.get("outputs", ())) for c in cells)
    return next(line for line in text.splitlines() if "Result: read " in line)


@pytest.mark.parametrize("name", list(WRITERS))
def test_a_format_loads_like_the_csv(name: str, tmp_path: Path, csv_reference: dict) -> None:
    summary = run(tmp_path, name, WRITERS[name][1])
    artifacts, expected = summary["artifacts"], csv_reference["artifacts"]
    assert summary["outcome"] == csv_reference["outcome"]
    assert artifacts["data_profile"] == expected["data_profile"]
    assert artifacts["final_metrics"] == expected["final_metrics"]
    line = _loading_line(tmp_path / "run")
    if name == "wine.xlsx":
        assert "(Excel, sheet 'data'; other sheets: notes (empty))" in line
    if name == "named.xlsx":
        assert "(Excel, sheet 'data'; other sheets: notes)" in line


def test_a_sheet_the_workbook_lacks_exits_3_naming_its_sheets(tmp_path: Path) -> None:
    data = tmp_path / "wine.xlsx"
    _excel(wine_table(), data, pd.DataFrame())
    problem = tmp_path / "problem.md"
    problem.write_text(PROBLEM.format(extra="sheet: wines\n"))
    proc = bcc_in_process("run", str(problem), str(data), "--out", str(tmp_path / "run"))
    assert proc.returncode == 3
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "has no sheet 'wines'" in lines[0] and "sheets in the front matter" in lines[0]
    assert lines[0].endswith(": notes, data)")
    assert not (tmp_path / "run").exists()


def test_the_defensive_load_reads_every_format(tmp_path: Path) -> None:
    """The retry variant of the loading step (its own copy of the reader, since a failed first
    attempt's cells are not in the notebook) reads each file: one kernel, one file after
    another."""
    (tmp_path / "assets").mkdir()
    names = [n for n in WRITERS if n != "named.xlsx"]
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for name in names:
        WRITERS[name][0](wine_table(), tmp_path / "assets" / name)
        nb.cells.append(nbformat.v4.new_code_cell(f"user_submit_files = ['assets/{name}']"))
        cells = RECIPES["load_data"](
            RecipeContext(target="grade", task="classification", variant=1)
        )
        nb.cells.extend(nbformat.v4.new_code_cell(c.content) for c in cells if c.kind == "code")
        nb.cells.append(nbformat.v4.new_code_cell("print('BCC_PROBE', json.dumps(data_profile))"))
    NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
        **WHOLE_OUTPUT,
    ).execute()
    # A cell's stream may arrive in several messages (print writes its words one by one and
    # ipykernel flushes on a timer), so a line is read from the cell's joined text.
    lines = [
        line
        for c in nb.cells
        for line in output_text(c.get("outputs", [])).splitlines()
        if line.startswith("BCC_PROBE ")
    ]
    assert len(lines) == len(names), lines
    probes = [json.loads(line.removeprefix("BCC_PROBE ")) for line in lines]
    assert all(p == {"n_rows": 150, "n_cols": 4, "columns": probes[0]["columns"]} for p in probes)
    assert set(probes[0]["columns"]) == {"alcohol", "acidity", "sugar", "grade"}

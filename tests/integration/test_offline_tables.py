"""The offline analyst on tables built here (issue 13): duplicate respondents are kept, and a
record number that restarts in each group is treated as ID-like."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(300)


def _run(tmp: Path, text: str, lines: list[str]) -> dict:
    data = tmp / "table.csv"
    data.write_text("\n".join(lines) + "\n")
    problem = tmp / "problem.md"
    problem.write_text(text)
    proc = bcc_in_process("run", str(problem), str(data), "--out", str(tmp / "run"), "--quiet")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads((tmp / "run" / "summary.json").read_text())["artifacts"]


def test_duplicate_respondents_are_kept(tmp_path: Path) -> None:
    answers = ["yes", "no", "maybe", "never", "often"]
    rows = [f"{answers[i % 5]},{answers[(i // 5) % 5]},{i % 8}" for i in range(200)]
    rows += rows[:40]  # 40 respondents who gave the same answers as earlier ones, no ID column
    artifacts = _run(tmp_path, "Describe the survey answers.\n", ["q1,q2,rating", *rows])
    assert artifacts["integrity_report"]["duplicate_rows"] >= 40
    kept = [x for x in artifacts["cleaning_log"] if x.startswith("kept ")]
    dropped = [x for x in artifacts["cleaning_log"] if "duplicate" in x and "dropped" in x]
    assert kept and not dropped


def test_duplicates_with_an_id_column_are_dropped(tmp_path: Path) -> None:
    rows = [f"{i},{i % 7},{i % 5}" for i in range(100)]
    artifacts = _run(tmp_path, "Describe the table.\n", ["record_id,a,b", *rows, *rows[:10]])
    assert any("dropped 10 exact duplicate rows" in x for x in artifacts["cleaning_log"])


def test_a_record_number_within_groups_is_id_like(tmp_path: Path) -> None:
    rng = np.random.default_rng(2)
    rows = []
    for species, n in (("Adelie", 40), ("Gentoo", 35), ("Chinstrap", 30)):
        rows += [f"{species},{k},{rng.normal(40, 5):.2f}" for k in range(1, n + 1)]
    artifacts = _run(
        tmp_path, "Describe the penguins.\n", ["species,Sample Number,bill_length", *rows]
    )
    assert "Sample Number" in artifacts["integrity_report"]["id_like_columns"]


def test_a_depend_on_phrasing_yields_a_model_of_the_named_target(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    rows = []
    for _ in range(200):
        mileage, age = rng.uniform(0, 200), rng.uniform(0, 20)
        rows.append(f"{mileage:.1f},{age:.1f},{30 - 0.05 * mileage - 0.8 * age:.2f}")
    text = "How does price depend on mileage and age?\n"
    artifacts = _run(tmp_path, text, ["mileage,age,price", *rows])
    assert artifacts["final_metrics"]["task"] == "regression"
    nb = (tmp_path / "run" / "notebook.ipynb").read_text()
    assert "The target is `price`" in nb

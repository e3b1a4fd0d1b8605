"""Several data files: each is read and described, shared columns are checked as join keys, a
lookup is joined (the matched rows are counted) and the answer comes from the joined table; an
unrelated file is left aside, and the notebook says why. The real CLI in process, its kernels scripted (tests/inprocess.py)."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest

from tests.conftest import output_text
from tests.inprocess import bcc_in_process

pytestmark = pytest.mark.timeout(300)


def orders_and_customers(folder: Path) -> tuple[Path, Path, pd.DataFrame]:
    rng = np.random.default_rng(7)
    customers = pd.DataFrame(
        {
            "customer_id": range(1, 41),
            "segment": rng.choice(["Consumer", "Corporate", "Home Office"], 40, p=[0.5, 0.3, 0.2]),
            "region": rng.choice(["North", "South"], 40),
        }
    )
    orders = pd.DataFrame(
        {
            "order_id": range(1000, 1300),
            "customer_id": np.r_[rng.integers(1, 41, 290), np.full(10, 999)],
            "amount": rng.gamma(2.0, 60.0, 300).round(2),
        }
    )
    orders.to_csv(folder / "orders.csv", index=False)
    customers.to_csv(folder / "customers.csv", index=False)
    return folder / "orders.csv", folder / "customers.csv", orders.merge(customers)


def code_outputs(run: Path) -> str:
    nb = nbformat.read(run / "notebook.ipynb", as_version=4)
    return "\n".join(output_text(c.outputs) for c in nb.cells if c.cell_type == "code")


@pytest.mark.parametrize(
    "problem",
    [
        "# Orders\n\nJoin them on `customer_id` and tell me which segment spends most.\n",
        "# Orders\n\nWhich segment spends the most in total?\n",  # a clear lookup: joined
    ],
    ids=["asked", "lookup"],
)
def test_the_lookup_is_joined_and_the_answer_comes_from_the_joined_table(
    tmp_path: Path, problem: str
) -> None:
    orders, customers, joined = orders_and_customers(tmp_path)
    (tmp_path / "problem.md").write_text(problem)
    run = tmp_path / "run"
    proc = bcc_in_process(
        "run", str(tmp_path / "problem.md"), str(customers), str(orders), "--out", str(run),
        "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = code_outputs(run)
    assert "Joined customers.csv on `customer_id`: 290 of 300 rows matched (96.7%)" in printed
    assert "customers.csv: 40 rows x 3 columns (CSV)" in printed
    assert "orders.csv: 300 rows x 3 columns (CSV)" in printed
    summary = json.loads((run / "summary.json").read_text())
    [answer] = summary["answers"]
    expected = joined.groupby("segment")["amount"].sum().idxmax()
    assert answer["answered"] and answer["value"] == expected, answer
    assert "total `amount`" in answer["text"]
    assert summary["verification"]["status"] == "passed"


def test_an_unrelated_file_is_left_aside_and_the_notebook_says_why(tmp_path: Path) -> None:
    orders, _, _ = orders_and_customers(tmp_path)
    weather = tmp_path / "weather.csv"
    pd.DataFrame({"day": range(30), "temp": np.linspace(5, 20, 30)}).to_csv(weather, index=False)
    (tmp_path / "problem.md").write_text("# Orders\n\nDescribe the order amounts.\n")
    run = tmp_path / "run"
    proc = bcc_in_process(
        "run", str(tmp_path / "problem.md"), str(orders), str(weather), "--out", str(run),
        "--quiet", "--no-verify",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    printed = code_outputs(run)
    assert "Left aside weather.csv: it shares no column with orders.csv." in printed
    assert "Result: read 2 of 2 files; analysed orders.csv; left aside weather.csv" in printed
    assert "raw_dataset has 300 rows x 3 columns" in printed

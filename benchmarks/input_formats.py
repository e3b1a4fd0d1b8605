"""Issue 14's table: one table (scikit-learn's wine data, BSD-3) saved the ways analysts
receive data, plus two files to join, each run through `bcc run` with the offline analyst.

Prints: input | exit | final state | what happened (the cross-validated score, the join).
Usage: .venv/bin/python benchmarks/input_formats.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import load_wine

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.conftest import run_bcc  # noqa: E402

WINE_PROBLEM = (
    "---\ntarget: cultivar\ntask: classification\n---\nPredict the `cultivar` of a wine.\n"
)
JOIN_PROBLEM = "# Orders\n\nJoin them on `customer_id` and tell me which segment spends most.\n"


def wine_files(folder: Path) -> list[Path]:
    frame = load_wine(as_frame=True).frame.rename(columns={"target": "cultivar"})
    writers = {
        "wine.csv": lambda p: frame.to_csv(p, index=False),
        "wine.tsv": lambda p: frame.to_csv(p, sep="\t", index=False),
        "wine.csv.gz": lambda p: frame.to_csv(p, index=False),
        "wine.json": lambda p: frame.to_json(p, orient="records"),
        "wine.jsonl": lambda p: frame.to_json(p, orient="records", lines=True),
        "wine.xlsx": lambda p: frame.to_excel(p, index=False, sheet_name="wine"),
        "wine.parquet": lambda p: frame.to_parquet(p, index=False),
        "wine.feather": lambda p: frame.to_feather(p),
    }
    for name, write in writers.items():
        write(folder / name)
    return [folder / name for name in writers]


def join_files(folder: Path) -> list[Path]:
    rng = np.random.default_rng(7)
    customers = pd.DataFrame(
        {"customer_id": range(1, 41), "segment": rng.choice(["Consumer", "Corporate"], 40)}
    )
    orders = pd.DataFrame(
        {
            "order_id": range(300),
            "customer_id": np.r_[rng.integers(1, 41, 290), np.full(10, 999)],
            "amount": rng.gamma(2.0, 60.0, 300).round(2),
        }
    )
    orders.to_csv(folder / "orders.csv", index=False)
    customers.to_csv(folder / "customers.csv", index=False)
    return [folder / "orders.csv", folder / "customers.csv"]


def run(problem: str, files: list[Path], out: Path) -> str:
    (out.parent / "problem.md").write_text(problem)
    proc = run_bcc("run", str(out.parent / "problem.md"), *map(str, files), "--out", str(out))
    summary = (
        json.loads((out / "summary.json").read_text()) if (out / "summary.json").exists() else {}
    )
    metrics = (summary.get("artifacts") or {}).get("final_metrics") or {}
    what = f"cv {metrics['cv_mean']}" if "cv_mean" in metrics else ""
    answers = [f"{a['value']!r}" for a in summary.get("answers", []) if a["answered"]]
    what += f"answer {', '.join(answers)}" if answers else ""
    what = what or (summary.get("outcome") or proc.stderr.strip().splitlines()[-1])[:120]
    names = " ".join(f"`{f.name}`" for f in files)
    return f"| {names} | {proc.returncode} | {summary.get('final_state', '-')} | {what} |"


def main() -> None:
    rows = ["| input | exit | final state | what happened |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory() as tmp:
        for i, path in enumerate(wine_files(Path(tmp))):
            folder = Path(tmp) / f"r{i}"
            folder.mkdir()
            rows.append(run(WINE_PROBLEM, [path], folder / "run"))
        folder = Path(tmp) / "join"
        folder.mkdir()
        rows.append(run(JOIN_PROBLEM, join_files(folder), folder / "run"))
    print("\n".join(rows))


if __name__ == "__main__":
    main()
